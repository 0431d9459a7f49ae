"""Time fgrad's core against autograd and hand-written NumPy, in one process.

    python benchmarks/bench_core.py               # the tables, about 10 s
    python benchmarks/bench_core.py --repeats 101 # more rounds, tighter medians
    python benchmarks/bench_core.py --check       # only check the gradients, no timing
    python benchmarks/bench_core.py --profile a   # also: where fgrad spends its time on (a)

Workloads:

(a) `grad` of a 200-op scalar chain (sin, cos, tanh, `* 1.5`, `+ x`, repeated) on a float:
    the cost of tracing and of the backward pass per primitive, with nothing to hide it.
(b) `grad` of a 2-layer MLP softmax loss w.r.t. (W1, W2), with X (100, 784), W1 (784, 100),
    W2 (100, 10): Z = relu(X @ W1) @ W2, loss = (log(sum(exp(Z), 1)).sum() - (I_y * Z).sum()) / B.

Every contender's gradient is checked against the hand-written NumPy one (same shapes, relative
error in norm at most 1e-6) before anything is timed; the script exits with status 1 if any
disagree.

Timing is interleaved: each round times every contender once, in an order rotated from round
to round, so drift in machine speed hits all of them alike. A sample is as many calls as fit
in `--sample-time` seconds. The tables show each contender's median over rounds, and the
median (with quartiles) of the same-round ratios fgrad / autograd and fgrad / hand-written
NumPy. BLAS is pinned to one thread when this file runs as a script (before NumPy loads).
The garbage collector stays on: collecting what a library allocates is part of its cost.
Imports: NumPy and fgrad; autograd if it is installed (it is never a dependency of fgrad).
"""

import argparse
import cProfile
import gc
import importlib.metadata
import os
import platform
import pstats
import statistics
import sys
import time
from dataclasses import dataclass

# BLAS reads its thread count once, when NumPy loads it. Pin it only when this file is the
# script being run: importing it (the smoke test does) must not touch the caller's environment.
PINNED = __name__ == "__main__" and "numpy" not in sys.modules
if PINNED:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ[_var] = "1"

import numpy as np  # noqa: E402  (after the pin above, on purpose)

import fgrad  # noqa: E402
import fgrad.numpy as fnp  # noqa: E402

try:
    import autograd
    import autograd.numpy as anp
except ImportError as _error:
    autograd = anp = None
    AUTOGRAD_MISSING = str(_error)

CHAIN_OPS = 200
BLOCK_OPS = 5  # sin, cos, tanh, mul, add
RTOL = 1e-6
BY_HAND = "numpy (by hand)"
INSTALL_AUTOGRAD = (
    "to compare against autograd, run this script from a scratch venv that has it\n"
    "(commands from the repository root):\n"
    "    python -m venv /tmp/peers && /tmp/peers/bin/pip install autograd -e .\n"
    "    /tmp/peers/bin/python benchmarks/bench_core.py"
)


@dataclass
class Workload:
    """Contenders computing the same gradient; the reference is the one named BY_HAND."""

    title: str
    contenders: dict  # name -> zero-argument callable returning the gradient (a tuple)
    per_call: int  # the table divides a call's time by this (ops per call, or 1)
    unit: str  # the table's unit, "us" or "ms"
    bar: float  # fgrad must take at most this times autograd's time


# --- (a) the scalar chain ------------------------------------------------------------------


def chain(np_like):
    """The chain written against a NumPy-like namespace (fgrad.numpy or autograd.numpy)."""

    def f(x):
        y = x
        for _ in range(CHAIN_OPS // BLOCK_OPS):
            y = np_like.tanh(np_like.cos(np_like.sin(y))) * 1.5 + x
        return y

    return f


def chain_grad_by_hand(x):
    """The chain's derivative with the same NumPy calls on scalars the libraries make: forward
    keeps the residuals, backward multiplies them in reverse; `+ x` sends the running cotangent
    to x at every block."""
    residuals = []
    y = x
    for _ in range(CHAIN_OPS // BLOCK_OPS):
        s = np.sin(y)
        t = np.tanh(np.cos(s))
        residuals.append((y, s, t))
        y = t * 1.5 + x
    ct, dx = 1.0, 0.0
    for y, s, t in reversed(residuals):
        dx += ct
        ct = ct * 1.5 * (1.0 - t * t) * -np.sin(s) * np.cos(y)
    return (dx + ct,)


def scalar_chain_workload():
    x = 0.3
    contenders = {BY_HAND: lambda: chain_grad_by_hand(x)}
    grad_fgrad = fgrad.grad(chain(fnp))
    contenders["fgrad"] = lambda: (grad_fgrad(x),)
    if autograd is not None:
        grad_autograd = autograd.grad(chain(anp))
        contenders["autograd"] = lambda: (grad_autograd(x),)
    return Workload(f"(a) grad, {CHAIN_OPS}-op scalar chain", contenders,
                    per_call=CHAIN_OPS, unit="us", bar=0.5)


# --- (b) the MLP softmax loss --------------------------------------------------------------


def mlp_data(rng):
    """MNIST-sized inputs: a batch of 100 rows of 784 features, 10 classes, one-hot labels."""
    X = rng.standard_normal((100, 784))
    W1 = rng.standard_normal((784, 100)) / np.sqrt(784)
    W2 = rng.standard_normal((100, 10)) / np.sqrt(100)
    I_y = np.eye(10)[rng.integers(0, 10, size=100)]
    return W1, W2, X, I_y


def mlp_loss(np_like):
    """The loss written against a NumPy-like namespace; relu is maximum(x, 0.0) in both."""

    def loss(W1, W2, X, I_y):
        Z = np_like.maximum(X @ W1, 0.0) @ W2
        log_partition = np_like.log(np_like.sum(np_like.exp(Z), axis=1)).sum()
        return (log_partition - (I_y * Z).sum()) / X.shape[0]

    return loss


def mlp_grad_by_hand(W1, W2, X, I_y):
    """The gradient of the same loss in NumPy, the floor any AD library can reach: only the
    forward quantities the backward needs (not the loss value itself), then the backward."""
    A = X @ W1
    H = np.maximum(A, 0.0)
    E = np.exp(H @ W2)
    dZ = (E / E.sum(axis=1, keepdims=True) - I_y) / X.shape[0]
    dA = (dZ @ W2.T) * (A > 0)
    return X.T @ dA, H.T @ dZ


def mlp_workload():
    args = mlp_data(np.random.default_rng(4))
    contenders = {BY_HAND: lambda: mlp_grad_by_hand(*args)}
    grad_fgrad = fgrad.grad(mlp_loss(fnp), argnums=(0, 1))
    contenders["fgrad"] = lambda: grad_fgrad(*args)
    if autograd is not None:
        grad_autograd = autograd.grad(mlp_loss(anp), argnum=(0, 1))
        contenders["autograd"] = lambda: grad_autograd(*args)
    return Workload("(b) grad, MLP softmax loss", contenders, per_call=1, unit="ms", bar=1.0)


def workloads():
    return {"a": scalar_chain_workload(), "b": mlp_workload()}


# --- validation ----------------------------------------------------------------------------


def mismatch(got, want):
    """Why the gradients `got` differ from `want` (tuples of arrays), or None if they agree."""
    if len(got) != len(want):
        return f"returned {len(got)} gradients, not {len(want)}"
    for i, (g, w) in enumerate(zip(map(np.asarray, got), map(np.asarray, want))):
        if g.shape != w.shape:  # broadcasting in the error below would hide this
            return f"gradient {i} has shape {g.shape}, not {w.shape}"
        err = float(np.linalg.norm(g - w) / np.linalg.norm(w))
        if not err <= RTOL:  # `not <=` also catches nan
            return f"gradient {i} differs by {err:.2e} (relative, in norm)"
    return None


def disagreements(workload):
    """One message per contender whose gradient differs from the hand-written one."""
    want = workload.contenders[BY_HAND]()
    messages = []
    for name, fn in workload.contenders.items():
        why = mismatch(fn(), want)
        if why is not None:
            messages.append(f"{workload.title}: {name} {why}")
    return messages


def validate(chosen=None):
    """Run every contender once and compare with the hand-written gradient; no timing.

    Returns the list of disagreements (empty when all agree)."""
    chosen = workloads().values() if chosen is None else chosen
    return [message for workload in chosen for message in disagreements(workload)]


# --- timing --------------------------------------------------------------------------------


def calls_per_sample(fn, sample_time):
    """How many calls of fn fill about `sample_time` seconds (after one warm-up call)."""
    fn()
    start = time.perf_counter()
    fn()
    one = time.perf_counter() - start
    return max(1, round(sample_time / max(one, 1e-9)))


def seconds_per_call(fn, number):
    """One sample: the mean time of `number` back-to-back calls."""
    gc.collect()  # do not bill one contender for the garbage of the one before
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def interleaved_times(contenders, rounds, sample_time):
    """Per contender, its `rounds` samples; each round visits all contenders in a rotated order."""
    numbers = {name: calls_per_sample(fn, sample_time) for name, fn in contenders.items()}
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(seconds_per_call(contenders[name], numbers[name]))
    return times


def paired_ratios(times, num, den):
    """The same-round ratios num / den: drift between rounds cancels out of each one."""
    return [a / b for a, b in zip(times[num], times[den])]


# --- reporting -----------------------------------------------------------------------------


def header(rounds):
    peer = "autograd (not installed)"
    if autograd is not None:
        peer = f"autograd {importlib.metadata.version('autograd')}"
    threads = "BLAS threads 1" if PINNED else "BLAS threads NOT pinned (NumPy loaded first)"
    return (
        f"fgrad {fgrad.__version__} vs {peer} | NumPy {np.__version__} | "
        f"Python {platform.python_version()} | {os.cpu_count()} CPUs | {threads} | "
        f"{rounds} interleaved rounds"
    )


def format_time(seconds, workload):
    scale = 1e6 if workload.unit == "us" else 1e3
    return f"{seconds / workload.per_call * scale:9.3f} {workload.unit}"


def ratio_cell(ratios):
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return f"{statistics.median(ratios):9.2f}x    (IQR {q1:.2f}-{q3:.2f})"


def table(workload, times):
    """One workload's table: median times, then the same-round ratios of fgrad to the others."""
    per = "per op" if workload.per_call > 1 else "per call"
    lines = [f"{workload.title}: median time {per}"]
    for name in ["fgrad", "autograd", BY_HAND]:
        if name in times:
            lines.append(f"  {name:24}{format_time(statistics.median(times[name]), workload)}")
    if "autograd" in times:
        ratios = paired_ratios(times, "fgrad", "autograd")
        verdict = "PASS" if statistics.median(ratios) <= workload.bar else "FAIL"
        bar = f"bar <= {workload.bar:.1f}x  {verdict}"
        lines.append(f"  {'fgrad / autograd':24}{ratio_cell(ratios)}   {bar}")
    else:
        lines.append(f"  {'fgrad / autograd':24}      n/a    (autograd not installed)")
    lines.append(f"  {'fgrad / ' + BY_HAND:24}{ratio_cell(paired_ratios(times, 'fgrad', BY_HAND))}")
    return "\n".join(lines)


# --- profiling -----------------------------------------------------------------------------


def profile(workload, seconds=1.0, top=25):
    """cProfile of fgrad on one workload: the functions with the most time of their own."""
    fn = workload.contenders["fgrad"]
    calls = calls_per_sample(fn, seconds)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    print(f"\nProfile of fgrad on {workload.title}, {calls} calls; tottime is a function's own "
          f"time, cumtime includes its callees (cProfile inflates small calls)")
    pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(top)


# --- main ----------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=31,
                        help="interleaved rounds per workload (default 31)")
    parser.add_argument("--sample-time", type=float, default=0.05,
                        help="seconds per timing sample of one contender (default 0.05)")
    parser.add_argument("--check", action="store_true",
                        help="only check every contender's gradient against the hand-written one")
    parser.add_argument("--profile", choices=["a", "b"], action="append", default=[],
                        help="after the tables, print a cProfile of fgrad on workload a or b")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (the tables report quartiles)")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not args.check:
        print(header(args.repeats))
    chosen = workloads()
    problems = validate(chosen.values())
    if problems:
        print("Gradients disagree; nothing was timed:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    if autograd is None:
        print(f"autograd skipped ({AUTOGRAD_MISSING}); {INSTALL_AUTOGRAD}")
    names = ", ".join(n for n in chosen["a"].contenders if n != BY_HAND)
    print(f"{names}: gradients agree with {BY_HAND} to {RTOL:g} (relative) on both workloads")
    if args.check:
        return 0
    for workload in chosen.values():
        times = interleaved_times(workload.contenders, args.repeats, args.sample_time)
        print("\n" + table(workload, times))
    for letter in args.profile:
        profile(chosen[letter])
    return 0


if __name__ == "__main__":
    sys.exit(main())
