"""Per-example gradients of the seed MLP (784-100-10, batch 128) when one example is written
with a unit row, `x.reshape(1, 784) @ W1`, against the same loss written on `x @ W1`, and
against the hand-vectorised gradient (issue 31).

    python benchmarks/bench_vmap_unit_rows.py                 # 31 interleaved rounds
    python benchmarks/bench_vmap_unit_rows.py --rounds 11

Both fgrad contenders are `vmap(grad(loss), in_axes=(None, 0, 0))`; every result is checked
against the hand-written one first. The table gives each contender's median time and the
medians (with quartiles) of the same-round ratios to the hand-vectorised gradient, and of the
unit-row form to the plain one (the target is about 1.1x).

Imports: NumPy, fgrad, the shared `timing.py` and `bench_peers.py` (the seed MLP).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import numpy as np
from bench_peers import mlp_data, mlp_example_loss, mlp_per_example_by_hand

import fgrad
import fgrad.numpy as fnp


def unit_row_loss(ws, x, i_y):
    """The seed MLP loss of one example, its features made a (1, 784) matrix first."""
    z = fnp.reshape(x, (1, -1))
    for W in ws[:-1]:
        z = fnp.maximum(z @ W, 0.0)
    z = z @ ws[-1]
    return fnp.log(fnp.sum(fnp.exp(z))) - fnp.sum(i_y * z)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--sample-time", type=float, default=0.1)
    opts = parser.parse_args()
    ws, X, I_y = mlp_data((784, 100, 10), 128, seed=3)
    want = mlp_per_example_by_hand(ws, X, I_y)
    plain = fgrad.vmap(fgrad.grad(mlp_example_loss(fnp)), in_axes=(None, 0, 0))
    unit = fgrad.vmap(fgrad.grad(unit_row_loss), in_axes=(None, 0, 0))
    contenders = {
        "by hand": lambda: mlp_per_example_by_hand(ws, X, I_y),
        "fgrad x @ W1": lambda: plain(ws, X, I_y),
        "fgrad x.reshape(1, 784) @ W1": lambda: unit(ws, X, I_y),
    }
    for name, fn in contenders.items():
        for got, expected in zip(fn(), want):
            err = np.linalg.norm(got - expected) / np.linalg.norm(expected)
            if not err <= 1e-10:
                sys.exit(f"{name}: relative error {err:.2e} against the hand-written gradient")
    times = timing.interleaved_times(contenders, opts.rounds, opts.sample_time)
    where = os.path.dirname(fgrad.__file__)
    print(f"fgrad from {where}; threads pinned to 1: {PINNED}; {opts.rounds} rounds")
    for name in contenders:
        ms = 1e3 * timing.quartiles(times[name])[1]
        ratio = timing.ratio_cell(timing.paired_ratios(times, name, "by hand"))
        print(f"{name:30s} {ms:8.2f} ms   vs by hand {ratio}")
    unit_vs_plain = timing.paired_ratios(times, "fgrad x.reshape(1, 784) @ W1", "fgrad x @ W1")
    print(f"{'unit row / plain':30s} {'':11s}   {timing.ratio_cell(unit_vs_plain)}")


if __name__ == "__main__":
    main()
