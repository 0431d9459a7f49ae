"""The gradient of a sparse solve (`fgrad.scipy.sparse.linalg.spsolve`) against the solve.

    python benchmarks/bench_sparse_linalg.py            # the figures, about half a minute
    python benchmarks/bench_sparse_linalg.py --check    # only check the values, small sizes

Workload (issue 36's bar in brackets): a 2-D Poisson problem, -div(grad u) = b on a 100 x 100
grid of unknowns (10^4 unknowns, the 5-point stencil, u = 0 on the boundary), solved by
SuperLU. A loss sum(w * u) is differentiated with respect to b, to the matrix's stored values
(`data`), and to both, by reverse mode; each gradient's time is divided by the forward solve's
(`spsolve` on untraced data: factorisation and solve) [<= 1.5x]. The gradient costs one more
solve with the same factorisation (kept with the forward solve's result, `trans='T'`) and a
product over the stored elements. SciPy's own `spsolve` of the same matrix is timed beside.

A second workload, without a bar: heat flow u = exp(t L) b (`expm_multiply`) on a 30 x 30
grid with ||t L||_1 = 40, and the gradient of sum(w * u) in L's stored values, whose reverse
rule integrates the adjoint Frechet derivative by quadrature (about 2 (||tL||_1 / 8 + 12)
calls of SciPy's `expm_multiply`), against the forward product.

Before timing, the gradients are checked against a dense solve's (`fnp.linalg.solve`) on a
12 x 12 grid, relative 1e-10; the script exits with status 1 if they disagree. Timing is
interleaved (`timing.py`), one BLAS thread; ratios are medians of same-round ratios with
quartiles.

Imports: NumPy, SciPy and fgrad.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.sparse as fsp
import fgrad.scipy.sparse.linalg as fsla

BAR = 1.5


def poisson_structure(m):
    """The 5-point Laplacian on an m x m grid (Dirichlet boundary) as COO: rows, cols, data."""
    one = sp.diags_array([-np.ones(m - 1), 2.0 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1])
    laplacian = sp.coo_array(sp.kronsum(one, one) * (m + 1) ** 2)
    return laplacian.row, laplacian.col, laplacian.data


def problem(m, seed=0):
    rng = np.random.default_rng(seed)
    row, col, data = poisson_structure(m)
    b = rng.standard_normal(m * m)
    w = rng.standard_normal(m * m)

    def solve(data, b):
        return fsla.spsolve(fsp.coo_array((data, (row, col)), shape=(m * m, m * m)), b)

    def loss(data, b):
        return fnp.sum(w * solve(data, b))

    def dense_loss(data, b):
        A = fnp.at(np.zeros((m * m, m * m)))[row, col].add(data)
        return fnp.sum(w * fnp.linalg.solve(A, b))

    return data, b, solve, loss, dense_loss, sp.csc_array((data, (row, col)))


def check():
    data, b, _, loss, dense_loss, _ = problem(12)
    got = fgrad.grad(loss, argnums=(0, 1))(data, b)
    want = fgrad.grad(dense_loss, argnums=(0, 1))(data, b)
    ok = True
    for name, g, w in zip(("data", "b"), got, want):
        err = np.max(np.abs(g - w)) / np.max(np.abs(w))
        print(f"  gradient w.r.t. {name:4s}: relative error {err:.1e} against the dense solve")
        ok &= err < 1e-10
    data, b, _, loss = heat_problem(6, 0.02)
    dense = np.zeros((36, 36))
    row, col, _ = poisson_structure(6)
    np.add.at(dense, (row, col), data)
    want = scipy.linalg.expm_frechet(dense.T, np.outer(HEAT_W[:36], b), compute_expm=False)
    err = np.max(np.abs(fgrad.grad(loss)(data) - want[row, col])) / np.max(np.abs(want))
    print(f"  expm_multiply, gradient w.r.t. data: relative error {err:.1e} against expm_frechet")
    return ok and err < 1e-12


HEAT_W = np.random.default_rng(1).standard_normal(900)


def heat_problem(m, t):
    """exp(-t L) b for the 5-point Laplacian L on an m x m grid, as a function of L's data."""
    row, col, data = poisson_structure(m)
    data = -t * data
    b = np.random.default_rng(2).standard_normal(m * m)
    w = HEAT_W[: m * m]

    def heat(data):
        return fsla.expm_multiply(fsp.coo_array((data, (row, col)), shape=(m * m, m * m)), b)

    def loss(data):
        return fnp.sum(w * heat(data))

    return data, b, heat, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="check the values only")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    ok = check()
    print("values agree" if ok else "VALUES DISAGREE")
    if not ok or args.check:
        sys.exit(0 if ok else 1)

    m = 100
    data, b, solve, loss, _, A = problem(m)
    contenders = {
        "forward": lambda: solve(data, b),
        "scipy": lambda: spla.spsolve(A, b),
        "grad_b": lambda: fgrad.grad(loss, argnums=1)(data, b),
        "grad_data": lambda: fgrad.grad(loss, argnums=0)(data, b),
        "grad_both": lambda: fgrad.grad(loss, argnums=(0, 1))(data, b),
    }
    times = timing.interleaved_times(contenders, rounds=args.rounds, sample_time=0.2)
    print(f"\n2-D Poisson, {m} x {m} grid ({m * m} unknowns, {len(data)} stored elements)")
    print(f"one BLAS thread: {PINNED}; {args.rounds} interleaved rounds")
    for name in contenders:
        print(f"  {name:22s} {timing.quartiles(times[name])[1] * 1e3:8.2f} ms")
    scipy_ratio = timing.ratio_cell(timing.paired_ratios(times, "scipy", "forward"))
    print(f"  scipy / forward        {scipy_ratio}")
    for name in ("grad_b", "grad_data", "grad_both"):
        ratios = timing.paired_ratios(times, name, "forward")
        median = timing.quartiles(ratios)[1]
        verdict = "met" if median <= BAR else "NOT met"
        print(
            f"  {name} / forward".ljust(25) + f"{timing.ratio_cell(ratios)}  [<= {BAR}x: {verdict}]"
        )

    m = 30
    data, _, heat, loss = heat_problem(m, 40.0 / (8 * (m + 1) ** 2))
    contenders = {
        "expm_forward": lambda: heat(data),
        "expm_grad_data": lambda: fgrad.grad(loss)(data),
    }
    times = timing.interleaved_times(contenders, rounds=args.rounds, sample_time=0.2)
    print(f"\nheat flow exp(tL) b, {m} x {m} grid, ||tL||_1 = 40, {len(data)} stored elements")
    for name in contenders:
        print(f"  {name:22s} {timing.quartiles(times[name])[1] * 1e3:8.2f} ms")
    ratios = timing.paired_ratios(times, "expm_grad_data", "expm_forward")
    print(f"  expm_grad_data / forward {timing.ratio_cell(ratios)}  (no bar)")


if __name__ == "__main__":
    main()
