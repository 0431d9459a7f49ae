"""The forward rules written by hand against forward mode by transposing the reverse rule.

    python benchmarks/bench_forward_rules.py                 # every case, 7 rounds
    python benchmarks/bench_forward_rules.py --only numpy.linalg.inv,scipy.special.softmax
    python benchmarks/bench_forward_rules.py --check         # values only, a few seconds

A primitive without a forward rule of its own gets one in forward mode by transposing its
reverse rule (`fgrad.forward.transpose_bprop`): correct, but it traces the bprop and pulls the
tangent back through it. Each derivative is written once, except where that costs too much:
the primitives declared with `forward="speed"` (`fgrad.primitive.register_rules`) keep a
forward rule written by hand beside the reverse one. This script is the benchmark that shows
each one pays: for every such primitive (`CASES`, keyed by module and name; the test
`tests/test_rule_kinds.py` checks that the two lists are the same), `fgrad.jvp` of a
small function of it, with the hand-written rule and with the rule taken away (transposed),
interleaved in the same rounds; the same-round ratio is how much slower forward mode would
be without it. It also checks that both ways give the same tangent (to 1e-10, relative).

Imports: NumPy, SciPy, fgrad, the shared `timing.py` and `rule_cases.py`.
"""

import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import argparse
import sys

import numpy as np
import rule_cases
from rule_cases import (
    DIAGONAL,
    SPD,
    UPPER,
    A,
    B,
    V,
    assert_close,
    attributes_cleared,
    banded,
    time_against,
    tridiagonal,
)

import fgrad
import fgrad.numpy as fnp
import fgrad.numpy.linalg as fla


def _scipy():
    import fgrad.scipy.linalg as fsl
    import fgrad.scipy.sparse.linalg as fsla
    import fgrad.scipy.special as fss

    return fsl, fsla, fss


def _cases():
    """key -> (function of one array, the array): each key's primitive applied once (with
    what it needs around it), at a point where it is smooth."""
    fsl, fsla, fss = _scipy()
    from fgrad.scipy.linalg import _trisylv_p

    b = B

    def newton(f, x):
        for _ in range(30):
            x = x - f(x) / (3 * x**2 + 1)
        return x

    return {
        "numpy.elementwise.divide": (lambda x: x[:5] / x[5:], V),
        "numpy.linalg.cholesky": (fla.cholesky, SPD),
        "numpy.linalg.det": (fla.det, A),
        "numpy.linalg.eig": (lambda a: fla.eig(a)[0], A),
        "numpy.linalg.eigh": (lambda a: fla.eigh(a)[1], SPD),
        "numpy.linalg.eigvals": (fla.eigvals, A),
        "numpy.linalg.eigvalsh": (fla.eigvalsh, SPD),
        "numpy.linalg.inv": (fla.inv, A),
        "numpy.linalg.norm": (fla.norm, V),
        "numpy.linalg.pinv": (fla.pinv, A[:, :4]),
        "numpy.linalg.qr": (lambda a: fla.qr(a)[1], A),
        "numpy.linalg.slogdet": (lambda a: fla.slogdet(a)[1], A),
        "numpy.linalg.solve": (lambda a: fla.solve(a, b), A),
        "numpy.linalg.svd": (lambda a: fla.svd(a, full_matrices=False)[0], A),
        "numpy.linalg.svdvals": (lambda a: fla.svd(a, compute_uv=False), A),
        "numpy.reductions.prod": (fnp.prod, V),
        "numpy.statistics.cumprod": (fnp.cumprod, V),
        "scipy.linalg.expm": (lambda a: fsl.expm(0.2 * a), A),
        "scipy.linalg.lu": (lambda a: fsl.lu(a)[2], A),
        "scipy.linalg.lu_factor": (lambda a: fsl.lu_factor(a)[0], A),
        "scipy.linalg.qr": (lambda a: fsl.qr(a)[1], A),
        "scipy.linalg.schur": (lambda a: fsl.schur(a)[0], SPD),
        "scipy.linalg.solve_banded": (lambda d: fsl.solve_banded((1, 1), banded(d), b), DIAGONAL),
        "scipy.linalg.solve_sylvester": (lambda a: fsl.solve_sylvester(a, SPD, A), A),
        "scipy.linalg.solve_triangular": (lambda u: fsl.solve_triangular(u, b), UPPER),
        "scipy.linalg.sqrtm": (fsl.sqrtm, SPD),
        "scipy.linalg.svd": (lambda a: fsl.svd(a)[1], A),
        "scipy.linalg.triangular_sylvester": (
            lambda t: _trisylv_p(t, A, transpose=False),
            UPPER + np.diag(np.arange(len(UPPER), dtype=float)),
        ),
        "scipy.sparse.linalg.sparse_expm_multiply": (
            lambda d: fsla.expm_multiply(0.2 * tridiagonal(d), b),
            DIAGONAL,
        ),
        "scipy.sparse.linalg.sparse_iterative_solve": (
            lambda d: fsla.cg(tridiagonal(d), b, rtol=1e-13)[0],
            DIAGONAL,
        ),
        "scipy.sparse.linalg.sparse_lu_solve": (
            lambda d: fsla.spsolve(tridiagonal(d), b),
            DIAGONAL,
        ),
        "scipy.special.log_softmax": (fss.log_softmax, V),
        "scipy.special.logsumexp": (fss.logsumexp, V),
        "scipy.special.softmax": (fss.softmax, V),
        "solve.custom_linear_solve": (
            lambda rhs: fgrad.custom_linear_solve(
                lambda x: SPD @ x, rhs, lambda mv, r: fla.solve(SPD, r), symmetric=True
            ),
            b,
        ),
        "solve.custom_root": (
            lambda theta: fgrad.custom_root(
                lambda x: x**3 + x - theta,
                fnp.zeros_like(theta),
                newton,
                lambda g, y: y / g(fnp.ones_like(y)),
            ),
            V,
        ),
    }


# The keys: every primitive declared with forward="speed".
CASES = tuple(_cases())


def transposed(prims):
    """Forward mode of `prims` by transposing their reverse rules: their forward rules taken
    away for the duration."""
    return attributes_cleared(prims, ("jvps", "jvp"))


def _jvp_call(key):
    f, x = _cases()[key]
    t = np.random.default_rng(1).normal(size=np.shape(x))
    return lambda: fgrad.jvp(f, (x,), (t,))[1]


def both_ways(key):
    """The tangent of the key's function with the hand-written forward rule, and by
    transposing the reverse rule."""
    return rule_cases.both_ways(key, _jvp_call(key), transposed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated keys of CASES")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="values only, no timing")
    args = parser.parse_args()
    keys = args.only.split(",") if args.only else list(CASES)
    print(f"fgrad {fgrad.__version__}, NumPy {np.__version__}; one thread: {PINNED}")
    for key in keys:
        hand, other = both_ways(key)
        assert_close(hand, other, key, "the hand-written forward rule")
    print(f"{len(keys)} hand-written forward rules agree with the transposed reverse rules")
    if args.check:
        return 0
    print()
    time_against(keys, _jvp_call, transposed, "transposed", args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
