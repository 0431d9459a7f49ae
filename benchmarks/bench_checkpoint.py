"""Peak memory and time of a deep gradient with and without `fgrad.checkpoint`.

    python benchmarks/bench_checkpoint.py              # memory and time, about 30 s
    python benchmarks/bench_checkpoint.py --repeats 21 # more timing rounds
    python benchmarks/bench_checkpoint.py --check      # only check the gradients, tiny sizes

Workload: a 100-layer tanh MLP, h <- tanh(h @ W_i), width 512, batch 64, float64, with the loss
0.5 * sum(h_100 ** 2). The gradient is taken with respect to the 100 weight matrices AND the
input. Contenders:

- `fgrad, no checkpoint`: `fgrad.grad` of the loss.
- `fgrad, checkpoint every 10`: the same, with each block of 10 layers wrapped in
  `fgrad.checkpoint`. The backward pass keeps only the 10 block inputs and recomputes each block.
- `numpy (by hand)`: backprop written in NumPy. It keeps the 101 layer outputs, frees each one
  once it has been used, and never recomputes. This is the floor.

Before anything is measured, the gradients are checked: checkpointed == unchecked to 1e-12 and
both == hand-written to 1e-6 (relative error in norm, per array). The script exits with status 1
if any disagree.

Memory is measured with `tracemalloc` (NumPy reports its array buffers to it), one contender per
FRESH process, so that no contender inherits another's allocator state. Each child builds the
inputs, makes one warm-up call, then traces one call. It reports:
  peak  the traced peak of the call, including the gradient it returns;
  net   peak minus the bytes of the returned gradient (here 200 MiB of weight gradients);
  kept  the traced memory when the backward pass starts: what the forward pass keeps for it
        (read by `fgrad.tap_cotangent` on the network's output, or between the two loops of the
        hand-written code).
The same three figures are also given for the gradient with respect to the input only, where
the result is small and does not hide the residuals.

Timing is interleaved in this one process. Each round times every contender once, in an order
rotated from round to round, with `gc.collect()` before each call. The table shows medians and
the median (with quartiles) of the same-round ratios. BLAS is pinned to one thread when this
file runs as a script, before NumPy loads.
Imports: NumPy and fgrad.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tracemalloc
from dataclasses import asdict, dataclass

# BLAS reads its thread count once, when NumPy loads it. Pin it only when this file is the
# script being run: importing it (the smoke test does) must not touch the caller's environment.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import numpy as np

import fgrad
import fgrad.numpy as fnp

BY_HAND = "numpy (by hand)"
PLAIN = "fgrad, no checkpoint"
RTOL_CHECKPOINT = 1e-12  # checkpointed vs unchecked: the same operations, recomputed
RTOL_BY_HAND = 1e-6
MEMORY_BAR = 0.3  # the bars: checkpointed / unchecked
TIME_BAR = 1.5
MIB = 2.0**20


@dataclass(frozen=True)
class Sizes:
    layers: int = 100
    width: int = 512
    batch: int = 64
    every: int = 10  # layers per checkpointed block

    @property
    def checkpointed(self):
        return f"fgrad, checkpoint every {self.every}"


FULL = Sizes()
TINY = Sizes(layers=6, width=8, batch=3, every=2)


def data(sizes, seed=0):
    """The weights (a list, scaled so that activations neither vanish nor saturate) and input."""
    rng = np.random.default_rng(seed)
    ws = [
        rng.standard_normal((sizes.width, sizes.width)) / np.sqrt(sizes.width)
        for _ in range(sizes.layers)
    ]
    return ws, rng.standard_normal((sizes.batch, sizes.width))


# --- the contenders: (ws, x, wrt, probe) -> gradient -----------------------------------------
# `wrt` is "both" (a pair: the list of weight gradients, the input gradient) or "input" (the
# input gradient). `probe`, if given, is called once when the backward pass starts.


def layers(ws, h):
    for w in ws:
        h = fnp.tanh(h @ w)
    return h


def fgrad_gradient(sizes, checkpointed):
    block = fgrad.checkpoint(layers) if checkpointed else layers

    def loss(ws, x, probe):
        h = x
        for i in range(0, len(ws), sizes.every if checkpointed else len(ws)):
            h = block(ws[i : i + sizes.every] if checkpointed else ws, h)
        if probe is not None:  # the first bprop to run: every residual is still held
            h = fgrad.tap_cotangent(h, lambda ct: probe())
        return 0.5 * fnp.sum(h**2)

    by_wrt = {"both": fgrad.grad(loss, argnums=(0, 1)), "input": fgrad.grad(loss, argnums=1)}

    def gradient(ws, x, wrt="both", probe=None):
        return by_wrt[wrt](ws, x, probe)

    return gradient


def by_hand_gradient(ws, x, wrt="both", probe=None):
    """Backprop in NumPy: keep the layer outputs, drop each one as soon as the backward pass
    is done with it, never recompute."""
    hs = [x]
    for w in ws:
        hs.append(np.tanh(hs[-1] @ w))
    if probe is not None:
        probe()
    out = hs.pop()
    ct = out  # d loss / d h_L
    g_ws = []
    for w in reversed(ws):
        da = ct * (1.0 - out * out)
        out = hs.pop()  # this layer's input, the next one's output
        if wrt == "both":
            g_ws.append(out.T @ da)
        ct = da @ w.T
    return (g_ws[::-1], ct) if wrt == "both" else ct


def contenders(sizes):
    """name -> gradient function, in the order of the tables."""
    return {
        PLAIN: fgrad_gradient(sizes, checkpointed=False),
        sizes.checkpointed: fgrad_gradient(sizes, checkpointed=True),
        BY_HAND: by_hand_gradient,
    }


def arrays(gradient):
    """The gradient's arrays, in order, whatever `wrt` it was taken for."""
    if isinstance(gradient, tuple):
        return [np.asarray(g) for g in gradient[0]] + [np.asarray(gradient[1])]
    return [np.asarray(gradient)]


# --- validation ----------------------------------------------------------------------------


def difference(got, want):
    """The largest relative error in norm over the arrays, or a message if shapes differ."""
    got, want = arrays(got), arrays(want)
    if len(got) != len(want):
        return f"returned {len(got)} arrays, not {len(want)}"
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"array {i} has shape {g.shape}, not {w.shape}"
        worst = max(worst, float(np.linalg.norm(g - w) / np.linalg.norm(w)))
    return worst


def validate(sizes):
    """(problems, the largest differences) of the gradients, for both `wrt`: checkpointed vs
    unchecked to 1e-12, each fgrad gradient vs the hand-written one to 1e-6."""
    ws, x = data(sizes)
    fns = contenders(sizes)
    problems, worst = [], {"checkpoint": 0.0, "by hand": 0.0}
    for wrt in ("both", "input"):
        got = {name: fn(ws, x, wrt) for name, fn in fns.items()}
        checks = [
            (sizes.checkpointed, PLAIN, RTOL_CHECKPOINT, "checkpoint"),
            (PLAIN, BY_HAND, RTOL_BY_HAND, "by hand"),
            (sizes.checkpointed, BY_HAND, RTOL_BY_HAND, "by hand"),
        ]
        for name, ref, rtol, key in checks:
            d = difference(got[name], got[ref])
            if isinstance(d, str) or not d <= rtol:  # `not <=` also catches nan
                why = d if isinstance(d, str) else f"differs by {d:.2e} (relative, in norm)"
                problems.append(
                    f"gradient w.r.t. {wrt}: {name} vs {ref}: {why}, more than {rtol:g}"
                )
            else:
                worst[key] = max(worst[key], d)
    return problems, worst


# --- memory, one contender per fresh process -----------------------------------------------


def memory_here(name, sizes, wrt):
    """In this process: tracemalloc's figures for one call of contender `name`."""
    ws, x = data(sizes)
    fn = contenders(sizes)[name]
    fn(ws, x, wrt)  # warm-up: first-call allocations (caches, lazy imports) are not the cost
    gc.collect()
    kept = {}

    def probe():
        kept["kept"] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        gradient = fn(ws, x, wrt, probe)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    result = sum(a.nbytes for a in arrays(gradient))
    return {"peak": peak, "result": result, "net": peak - result, "kept": kept["kept"]}


def memory_in_fresh_process(name, sizes, wrt):
    """Run `memory_here` in a new Python process (with BLAS pinned, as here)."""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        name,
        "--wrt",
        wrt,
        "--sizes",
        json.dumps(asdict(sizes)),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"the memory child for {name!r} failed:\n{run.stdout}{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


# --- timing --------------------------------------------------------------------------------


def interleaved_times(fns, rounds, ws, x):
    """Per contender, `rounds` single-call times, interleaved (see timing.py)."""
    calls = {name: (lambda fn=fn: fn(ws, x)) for name, fn in fns.items()}
    return timing.interleaved_times(calls, rounds, sample_time=0.0)  # one call per sample


paired_ratios = timing.paired_ratios
ratio_cell = timing.ratio_cell


# --- reporting -----------------------------------------------------------------------------


def header(sizes, rounds):
    threads = "BLAS threads 1" if PINNED else "BLAS threads NOT pinned (NumPy loaded first)"
    return (
        f"fgrad {fgrad.__version__} | NumPy {np.__version__} | Python "
        f"{platform.python_version()} | {os.cpu_count()} CPUs | {threads} | {rounds} "
        f"interleaved rounds\n{sizes.layers}-layer tanh MLP, width {sizes.width}, batch "
        f"{sizes.batch}, float64; checkpoint every {sizes.every} layers"
    )


def verdict(ratio, bar):
    return f"bar <= {bar:.1f}x  {'PASS' if ratio <= bar else 'FAIL'}"


def memory_table(sizes, wrt, figures):
    title = {
        "both": "gradient w.r.t. the weights and the input",
        "input": "gradient w.r.t. the input only",
    }[wrt]
    result = figures[PLAIN]["result"] / MIB
    lines = [
        f"Memory, {title} (tracemalloc, one fresh process each; the gradient itself is "
        f"{result:.1f} MiB)",
        f"  {'':30}{'peak':>12}{'net':>12}{'kept':>12}",
    ]
    for name, fig in figures.items():
        lines.append(
            f"  {name:30}" + "".join(f"{fig[k] / MIB:8.1f} MiB" for k in ("peak", "net", "kept"))
        )
    ck, plain = figures[sizes.checkpointed], figures[PLAIN]
    ratios = {k: ck[k] / plain[k] for k in ("peak", "net", "kept")}
    lines.append(
        f"  {'checkpoint / no checkpoint':30}"
        + "".join(f"{ratios[k]:11.2f}x" for k in ("peak", "net", "kept"))
    )
    lines.append(
        f"  peak: {verdict(ratios['peak'], MEMORY_BAR)} | net: "
        f"{verdict(ratios['net'], MEMORY_BAR)} | kept: "
        f"{verdict(ratios['kept'], MEMORY_BAR)}"
    )
    return "\n".join(lines)


def time_table(sizes, times):
    lines = ["Time, gradient w.r.t. the weights and the input: median per call"]
    for name in times:
        lines.append(f"  {name:38}{statistics.median(times[name]) * 1e3:9.1f} ms")
    ck = sizes.checkpointed
    ratios = paired_ratios(times, ck, PLAIN)
    lines.append(
        f"  {'checkpoint / no checkpoint':38}{ratio_cell(ratios)}   "
        f"{verdict(statistics.median(ratios), TIME_BAR)}"
    )
    for name in (PLAIN, ck):
        lines.append(f"  {name + ' / by hand':38}{ratio_cell(paired_ratios(times, name, BY_HAND))}")
    return "\n".join(lines)


# --- main ----------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=11, help="interleaved timing rounds (default 11)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check the gradients, at tiny sizes; no memory, no timing",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # memory of one contender, as JSON
    parser.add_argument("--wrt", choices=["both", "input"], default="both", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (the tables report quartiles)")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        print(json.dumps(memory_here(args.child, Sizes(**json.loads(args.sizes)), args.wrt)))
        return 0
    sizes = TINY if args.check else FULL
    if not args.check:
        print(header(sizes, args.repeats))
    problems, worst = validate(sizes)
    if problems:
        print("Gradients disagree; nothing was measured:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    print(
        f"gradients agree: checkpointed == unchecked to {RTOL_CHECKPOINT:g} (largest "
        f"difference {worst['checkpoint']:.1e}); both == {BY_HAND} to {RTOL_BY_HAND:g} "
        f"(largest {worst['by hand']:.1e}); relative, in norm"
    )
    if args.check:
        return 0
    for wrt in ("both", "input"):
        figures = {name: memory_in_fresh_process(name, sizes, wrt) for name in contenders(sizes)}
        print("\n" + memory_table(sizes, wrt, figures))
    ws, x = data(sizes)
    times = interleaved_times(contenders(sizes), args.repeats, ws, x)
    print("\n" + time_table(sizes, times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
