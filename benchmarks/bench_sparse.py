"""Sparse Jacobians and Hessians (`fgrad.sparse_jacobian`, `fgrad.sparse_hessian`) against the
dense ones, and the cost of finding a pattern.

    python benchmarks/bench_sparse.py            # the figures, about a minute
    python benchmarks/bench_sparse.py --check    # only check the values, small sizes

Workloads (issue 35's bars in brackets):

- tridiagonal residual, n = 2000: `sparse_jacobian` with its pattern cached against `jacfwd`
  (>= 200x); the first call (one run accumulating the Jacobian, `fgrad.accumulation`) in
  residual evaluations (<= 20).
- 2-D Brusselator, N = 32 (2048 unknowns, 6 nonzeros per row): the first call and a cached
  call in residual evaluations (<= 20 and <= 10); the second call, which colours the pattern
  and records the batched pass by `jit` (first and second call together, less the first),
  with what detection and colouring cost on their own (a function that cannot be
  accumulated finds its pattern on the first call: detection, colouring, recording); the
  colours of each order (also with the unknowns numbered point by point: the colouring
  depends on the numbering); the same with `order="recursive_largest_first"`.
- chained Rosenbrock, n = 2000: `sparse_hessian` cached against `hessian` (>= 100x).
- a 1-D stencil of 10^5 unknowns: `jacobian_sparsity`'s time (<= 1 s) and the peak of the
  memory NumPy reports to tracemalloc during it (<= 200 MB).

Before timing, every sparse result is checked against the dense one (relative 1e-14 of the
largest entry); the script exits with status 1 if one disagrees. Timing is interleaved
(`timing.py`), one BLAS thread; ratios are medians of same-round ratios with quartiles, costs
"in residuals" too (each sample of a first call makes a new `sparse_jacobian`, so nothing is
cached).

Imports: NumPy, SciPy and fgrad.
"""

import argparse
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import numpy as np

import fgrad
import fgrad.numpy as fnp


def tridiagonal_residual(x):
    inner = x[:-2] - 2.0 * x[1:-1] + x[2:] + 0.1 * x[1:-1] ** 3
    return fnp.concatenate([x[:1] - 1.0, inner, x[-1:] + 1.0])


def brusselator(y, n=32):
    """The 2-D Brusselator's right-hand side on a periodic n x n grid (u and v stacked)."""
    u, v = y[: n * n].reshape(n, n), y[n * n :].reshape(n, n)
    alpha, a, b = 10.0, 3.4, 1.0

    def laplacian(w):
        return (
            fnp.roll(w, 1, axis=0)
            + fnp.roll(w, -1, axis=0)
            + fnp.roll(w, 1, axis=1)
            + fnp.roll(w, -1, axis=1)
            - 4.0 * w
        ) * (n - 1) ** 2

    du = alpha * laplacian(u) + b + u * u * v - (a + 1.0) * u
    dv = alpha * laplacian(v) + a * u - u * u * v
    return fnp.concatenate([du.reshape(-1), dv.reshape(-1)])


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def stencil(x):
    return x[:-2] - 2.0 * x[1:-1] + x[2:] + fnp.sin(x[1:-1])


def _close(sparse, dense):
    dense = np.asarray(dense).reshape(sparse.shape)
    scale = np.abs(dense).max()
    return np.allclose(sparse.toarray(), dense, rtol=1e-14, atol=1e-14 * scale)


def _per_call(fn, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _in_residuals(residual, contenders, rounds):
    """Samples of `residual` and of each contender, interleaved (`timing.interleaved_times`),
    so that each contender's cost in residual evaluations is a same-round ratio."""
    return timing.interleaved_times({"residual": residual, **contenders}, rounds, 0.05)


def _twice(jac, x):
    jac(x)
    return jac(x)


def _ratio(times, name):
    return timing.ratio_cell(timing.paired_ratios(times, name, "residual"))


def check(n_tri, n_bru, n_ros):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, n_tri)
    ok = True
    y = rng.uniform(0.0, 1.0, 2 * n_bru * n_bru)
    bru = lambda y: brusselator(y, n_bru)
    for fun, v in ((tridiagonal_residual, x), (bru, y)):
        jac, dense = fgrad.sparse_jacobian(fun), fgrad.jacfwd(fun)(v)
        for _ in range(3):  # accumulated, then the plan's recorded pass, then its replay
            ok &= _close(jac(v), dense)
    z = rng.uniform(-1.0, 1.0, n_ros)
    ok &= _close(fgrad.sparse_hessian(rosenbrock)(z), fgrad.hessian(rosenbrock)(z))
    return bool(ok)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="check the values only")
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    if options.check:
        ok = check(50, 8, 50)
        print("values agree" if ok else "VALUES DISAGREE")
        return 0 if ok else 1
    if not check(2000, 32, 2000):
        print("VALUES DISAGREE")
        return 1
    where = os.path.dirname(fgrad.__file__)  # (PYTHONPATH=. to measure a worktree)
    print(f"fgrad from {where}; one BLAS thread: {PINNED}; values agree with jacfwd/hessian")
    rng = np.random.default_rng(1)

    # tridiagonal residual
    x = rng.uniform(-1.0, 1.0, 2000)
    cached_fn = fgrad.sparse_jacobian(tridiagonal_residual)
    cached_fn(x)
    times = timing.interleaved_times(
        {"jacfwd": lambda: fgrad.jacfwd(tridiagonal_residual)(x), "sparse": lambda: cached_fn(x)},
        rounds=options.rounds,
        sample_time=0.2,
    )
    in_residuals = _in_residuals(
        lambda: tridiagonal_residual(x),
        {"first": lambda: fgrad.sparse_jacobian(tridiagonal_residual)(x)},
        options.rounds,
    )
    print("\ntridiagonal residual, n = 2000")
    print(f"  residual               {timing.quartiles(in_residuals['residual'])[1] * 1e3:8.3f} ms")
    print(f"  jacfwd                 {timing.quartiles(times['jacfwd'])[1] * 1e3:8.2f} ms")
    print(f"  sparse_jacobian cached {timing.quartiles(times['sparse'])[1] * 1e3:8.3f} ms")
    ratios = timing.paired_ratios(times, "jacfwd", "sparse")
    print(f"  jacfwd / sparse        {timing.ratio_cell(ratios)}")
    print(f"  first call, residuals  {_ratio(in_residuals, 'first')}")

    # Brusselator
    from fgrad import coloring

    y = rng.uniform(0.0, 1.0, 2 * 32 * 32)
    bru = fgrad.sparse_jacobian(brusselator)
    bru(y)
    pattern = fgrad.jacobian_sparsity(brusselator)(y)
    methods = coloring.COLUMN_METHODS
    colours = {o: int(coloring.column_coloring(pattern, o).max()) + 1 for o in methods}
    # the same matrix with u and v of each grid point next to each other (columns permuted)
    point_by_point = pattern[:, np.arange(pattern.shape[1]).reshape(2, -1).T.ravel()]
    interleaved = {o: int(coloring.column_coloring(point_by_point, o).max()) + 1 for o in methods}
    rlf = fgrad.sparse_jacobian(brusselator, order="recursive_largest_first")
    rlf(y)
    in_residuals = _in_residuals(
        lambda: brusselator(y),
        {
            "first": lambda: fgrad.sparse_jacobian(brusselator)(y),
            "first and second": lambda: _twice(fgrad.sparse_jacobian(brusselator), y),
            "detection": lambda: fgrad.jacobian_sparsity(brusselator)(y),
            "colouring": lambda: coloring.column_coloring(pattern),
            "cached": lambda: bru(y),
            "first, RLF": lambda: fgrad.sparse_jacobian(
                brusselator, order="recursive_largest_first"
            )(y),
            "first and second, RLF": lambda: _twice(
                fgrad.sparse_jacobian(brusselator, order="recursive_largest_first"), y
            ),
            "cached, RLF": lambda: rlf(y),
        },
        options.rounds,
    )
    dense = _per_call(lambda: fgrad.jacfwd(brusselator)(y), 3)
    cached = timing.quartiles(in_residuals["cached"])[1]
    print("\n2-D Brusselator, N = 32 (2048 unknowns)")
    print(
        f"  nonzeros per row       {pattern.nnz / pattern.shape[0]:.1f}; column colours {colours}"
        f", numbered point by point {interleaved}"
    )
    print(f"  residual               {timing.quartiles(in_residuals['residual'])[1] * 1e3:8.3f} ms")
    print(f"  first call, residuals  {_ratio(in_residuals, 'first')}")
    second = sum(
        sign * timing.quartiles(in_residuals[name])[1]
        for sign, name in ((1, "first and second"), (-1, "first"))
    )
    residual = timing.quartiles(in_residuals["residual"])[1]
    print(f"  second call (colouring, jit's record of the pass) {second / residual:.1f} (medians)")
    print(f"    detection alone      {_ratio(in_residuals, 'detection')}")
    print(f"    colouring alone      {_ratio(in_residuals, 'colouring')}")
    print(f"  cached call, residuals {_ratio(in_residuals, 'cached')}")
    print("  order='recursive_largest_first':")
    print(f"    first call           {_ratio(in_residuals, 'first, RLF')}")
    second_rlf = sum(
        sign * timing.quartiles(in_residuals[name])[1]
        for sign, name in ((1, "first and second, RLF"), (-1, "first, RLF"))
    )
    print(f"    second call (its colouring) {second_rlf / residual:.1f} (medians)")
    print(f"    cached call          {_ratio(in_residuals, 'cached, RLF')}")
    print(f"  jacfwd                 {dense * 1e3:8.2f} ms = {dense / cached:.0f}x the cached call")

    # chained Rosenbrock Hessian
    z = rng.uniform(-1.0, 1.0, 2000)
    hes = fgrad.sparse_hessian(rosenbrock)
    hes(z)
    first = _per_call(lambda: fgrad.sparse_hessian(rosenbrock)(z), 3)
    times = timing.interleaved_times(
        {"hessian": lambda: fgrad.hessian(rosenbrock)(z), "sparse": lambda: hes(z)},
        rounds=options.rounds,
        sample_time=0.2,
    )
    print("\nchained Rosenbrock Hessian, n = 2000")
    print(f"  hessian                {timing.quartiles(times['hessian'])[1] * 1e3:8.2f} ms")
    print(f"  sparse_hessian cached  {timing.quartiles(times['sparse'])[1] * 1e3:8.3f} ms")
    ratios = timing.paired_ratios(times, "hessian", "sparse")
    print(f"  hessian / sparse       {timing.ratio_cell(ratios)}")
    print(f"  first call             {first * 1e3:8.2f} ms")

    # detection at 10^5 unknowns
    w = rng.uniform(-1.0, 1.0, 100_000)
    detect = fgrad.jacobian_sparsity(stencil)
    detect(w)  # SciPy's import and first calls are not the detection's
    seconds = _per_call(lambda: detect(w), 3)
    tracemalloc.start()
    pattern = detect(w)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print("\n1-D stencil, 10^5 unknowns: jacobian_sparsity")
    print(f"  time {seconds:.3f} s, traced peak {peak / 2**20:.1f} MiB, {pattern.nnz} nonzeros")
    return 0


if __name__ == "__main__":
    sys.exit(main())
