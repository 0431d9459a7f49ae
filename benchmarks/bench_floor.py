"""Where any Python closure tape stands on the seed MLP: fgrad against a minimal one.

The `mlp` bar of `bench_peers.py` compares fgrad's gradient with the hand-written one, which
makes no Python call between its NumPy operations and does not compute the loss. A library
that differentiates plain Python functions by a tape of closures pays for some Python per
operation whatever it does. This script times, in the same interleaved rounds (`timing.py`),
fgrad's `grad`, the hand-written gradient, and `minimal_grad`: the smallest closure tape that
differentiates this loss as a function of its operations (one Python function per operation,
a box per value, one closure per input, the backward loop over the tape), making the same
NumPy calls fgrad makes (the loss's value and `maximum`'s check for ties included). It does
nothing else: no levels, no broadcasting, dtype or batching checks, no API.

    python benchmarks/bench_floor.py            # 21 rounds, about 30 s
    python benchmarks/bench_floor.py --rounds 41
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

if __name__ == "__main__":
    timing.pin_threads()  # before NumPy: one BLAS thread, as bench_peers times it

import bench_peers  # after the threads are pinned
import numpy as np

import fgrad


class _Value:
    """A value on the minimal tape: its array and the tape position that made it."""

    __slots__ = ("array", "position")

    def __init__(self, array, position):
        self.array = array
        self.position = position


class MinimalTape:
    """One entry per operation: (input positions, one closure per input)."""

    def __init__(self):
        self.entries = []

    def record(self, array, positions, closures):
        self.entries.append((positions, closures))
        return _Value(array, len(self.entries) - 1)

    def input(self, array):
        return self.record(array, (), ())

    def matmul(self, x, y):
        if isinstance(x, _Value) and isinstance(y, _Value):
            a, b = x.array, y.array
            return self.record(
                a @ b, (x.position, y.position), (lambda ct: ct @ b.T, lambda ct: a.T @ ct)
            )
        if isinstance(x, _Value):
            a = x.array
            return self.record(a @ y, (x.position,), (lambda ct: ct @ y.T,))
        b = y.array
        return self.record(x @ b, (y.position,), (lambda ct: x.T @ ct,))

    def relu(self, x):
        a = x.array
        wins = a > 0.0
        np.count_nonzero(a == 0.0)  # fgrad's maximum checks for ties (weights 1/2) like this
        return self.record(np.maximum(a, 0.0), (x.position,), (lambda ct: ct * wins,))

    def exp(self, x):
        ans = np.exp(x.array)
        return self.record(ans, (x.position,), (lambda ct: ct * ans,))

    def log(self, x):
        a = x.array
        return self.record(np.log(a), (x.position,), (lambda ct: ct / a,))

    def sum(self, x, axis=None):
        a = x.array
        shape = a.shape
        if axis is None:
            spread = (lambda ct: np.broadcast_to(ct, shape),)
        else:
            spread = (lambda ct: np.broadcast_to(np.expand_dims(ct, axis), shape),)
        return self.record(np.add.reduce(a, axis), (x.position,), spread)

    def times_constant(self, c, x):
        return self.record(c * x.array, (x.position,), (lambda ct: ct * c,))

    def subtract(self, x, y):
        return self.record(
            x.array - y.array, (x.position, y.position), (lambda ct: ct, lambda ct: -ct)
        )

    def divide_by_constant(self, x, c):
        return self.record(x.array / c, (x.position,), (lambda ct: ct / c,))

    def backward(self, out):
        cts = [None] * len(self.entries)
        cts[out.position] = np.float64(1.0)
        for k in range(len(self.entries) - 1, -1, -1):
            positions, closures = self.entries.pop()
            ct = cts[k]
            if ct is None or not closures:
                continue
            cts[k] = None
            for p, f in zip(positions, closures):
                c = f(ct)
                cts[p] = c if cts[p] is None else cts[p] + c
        return cts


def minimal_grad(ws, X, I_y):
    """The gradient of `bench_peers.mlp_loss` w.r.t. the weights, on a `MinimalTape`."""
    tape = MinimalTape()
    params = [tape.input(W) for W in ws]
    Z = X
    for W in params[:-1]:
        Z = tape.relu(tape.matmul(Z, W))
    Z = tape.matmul(Z, params[-1])
    log_partition = tape.sum(tape.log(tape.sum(tape.exp(Z), axis=1)))
    loss = tape.subtract(log_partition, tape.sum(tape.times_constant(I_y, Z)))
    cts = tape.backward(tape.divide_by_constant(loss, X.shape[0]))
    return tuple(cts[: len(ws)])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--sample-time", type=float, default=0.05)
    args = parser.parse_args(argv)
    ws, X, I_y = bench_peers.mlp_data((784, 100, 10), 100, 4)  # the mlp workload's data
    want = bench_peers.mlp_grad_by_hand(ws, X, I_y)
    grad = fgrad.grad(bench_peers.mlp_loss(fgrad.numpy))
    contenders = {
        "fgrad": lambda: grad(ws, X, I_y),
        "minimal closure tape": lambda: minimal_grad(ws, X, I_y),
        "numpy (by hand)": lambda: bench_peers.mlp_grad_by_hand(ws, X, I_y),
    }
    for name, fn in contenders.items():
        why = bench_peers.mismatch(fn(), want)
        if why is not None:
            print(f"{name}: {why}")
            return 1
    times = timing.interleaved_times(contenders, args.rounds, args.sample_time)
    print(f"seed MLP 784-100-10, batch 100; {args.rounds} interleaved rounds, one thread")
    for name in contenders:
        ratios = timing.paired_ratios(times, name, "numpy (by hand)")
        median_us = np.median(times[name]) * 1e6
        print(f"{name:22s} {median_us:8.0f} us  x by hand {timing.ratio_cell(ratios)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
