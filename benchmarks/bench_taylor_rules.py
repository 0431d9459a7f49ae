"""The Taylor recurrences written by hand against the general Taylor rule.

    python benchmarks/bench_taylor_rules.py                  # every case, order 8, 5 rounds
    python benchmarks/bench_taylor_rules.py --only numpy.elementwise.tanh --order 20
    python benchmarks/bench_taylor_rules.py --check          # values only, a few seconds

A primitive without a Taylor rule of its own gets one in `jet` from its forward rule
(`fgrad.taylor.general_rule`: the forward rule applied to nested series, a cost cubic in the
order). A linear primitive's rule and one made from the derivative are declared "linear" or
"derived"; a recurrence written by hand, from an ODE the function satisfies (tanh: y' = (1 -
y^2) x'), is declared "speed" (`fgrad.primitive.register_rules`'s `taylor_kind`, or the mark
`fgrad.taylor` puts on its makers' rules). This script shows each of those pays: for every
one (`CASES`, keyed by module and name; `tests/test_taylor_rules.py` checks that the lists
agree), `fgrad.jet` of a small function of it to order K, with the recurrence and with it
taken away (the general rule), interleaved in the same rounds. It also checks that both give
the same coefficients (to 1e-9, relative to the largest).

Imports: NumPy, SciPy, fgrad, the shared `timing.py` and `rule_cases.py`.
"""

import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import argparse
import contextlib
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
    banded,
    time_against,
    tridiagonal,
)

import fgrad
import fgrad.numpy as fnp
import fgrad.numpy.linalg as fla
from fgrad import taylor

UNIT = np.linspace(-0.8, 0.8, 10)  # inside (-1, 1): erfinv, and 1 - UNIT for erfcinv
PROBABILITY = np.linspace(0.05, 0.95, 10)


def _cases():
    """key -> (function of one array, the array): each key's primitive applied once, at a
    point where it is smooth."""
    import fgrad.scipy.linalg as fsl
    import fgrad.scipy.sparse.linalg as fsla
    import fgrad.scipy.special as fss
    from fgrad.scipy.linalg import _trisylv_p

    elementwise = {
        "numpy.elementwise." + name: (getattr(fnp, name), V)
        for name in ("cos", "exp", "expm1", "log", "log1p", "sin", "sqrt", "tan", "tanh")
    }
    elementwise.update(
        {
            "numpy.ufuncs." + name: (getattr(fnp, name), V)
            for name in ("cosh", "exp2", "log10", "log2", "reciprocal", "sinh", "square")
        }
    )
    special = {
        "scipy.special." + name: (getattr(fss, name), V)
        for name in ("erfcx", "expit", "gamma", "rgamma", "i0", "i0e", "i1", "i1e")
    }
    special.update(
        {
            "scipy.special." + name: (getattr(fss, name), V + 0.5)
            for name in ("j0", "j1", "y0", "y1")
        }
    )
    return {
        **elementwise,
        "numpy.elementwise.divide": (lambda x: x[:5] / x[5:], V),
        "numpy.elementwise.power": (lambda x: x[:5] ** x[5:], V),
        "numpy.linalg.cholesky": (fla.cholesky, SPD),
        "numpy.linalg.inv": (fla.inv, A),
        "numpy.linalg.solve": (lambda a: fla.solve(a, B), A),
        "scipy.linalg.expm": (lambda a: fsl.expm(0.2 * a), A),
        "scipy.linalg.solve_banded": (lambda d: fsl.solve_banded((1, 1), banded(d), B), DIAGONAL),
        "scipy.linalg.solve_sylvester": (lambda a: fsl.solve_sylvester(a, SPD, A), A),
        "scipy.linalg.solve_triangular": (lambda u: fsl.solve_triangular(u, B), UPPER),
        "scipy.linalg.sqrtm": (fsl.sqrtm, SPD),
        "scipy.linalg.triangular_sylvester": (
            lambda t: _trisylv_p(t, A, transpose=False),
            UPPER + np.diag(np.arange(len(UPPER), dtype=float)),
        ),
        "scipy.sparse.linalg.sparse_iterative_solve": (
            lambda d: fsla.cg(tridiagonal(d), B, rtol=1e-13)[0],
            DIAGONAL,
        ),
        "scipy.sparse.linalg.sparse_lu_solve": (
            lambda d: fsla.spsolve(tridiagonal(d), B),
            DIAGONAL,
        ),
        **special,
        "scipy.special.bessel": (lambda x: fss.jv(1.5, x), V),
        "scipy.special.yn": (lambda x: fss.yn(2, x), V + 0.5),
        "scipy.special.erfinv": (fss.erfinv, UNIT),
        "scipy.special.erfcinv": (fss.erfcinv, 1.0 - UNIT),
        "scipy.special.ndtri": (fss.ndtri, PROBABILITY),
        "scipy.special.ndtr_mills_ratio": (fss._mills_p, UNIT),
        "scipy.special.ndtr_mills_excess": (fss._mills_excess_p, UNIT),
        "scipy.special.log_softmax": (fss.log_softmax, V),
        "scipy.special.logsumexp": (fss.logsumexp, V),
        "scipy.special.softmax": (fss.softmax, V),
    }


# The keys: every primitive whose Taylor rule is declared for speed.
CASES = tuple(_cases())


@contextlib.contextmanager
def general(prims):
    """`jet` of `prims` by the general rule: their Taylor rules taken away for the duration."""
    saved = {p: taylor.rules.pop(p) for p in prims if p in taylor.rules}
    try:
        yield
    finally:
        taylor.rules.update(saved)


def _jet_call(key, order):
    f, x = _cases()[key]
    rng = np.random.default_rng(1)
    series = [rng.normal(size=np.shape(x)) for _ in range(order)]
    return lambda: fgrad.jet(f, (x,), (series,))[1]


def both_ways(key, order=6):
    """The output's series with the hand-written recurrence, and by the general rule."""
    return rule_cases.both_ways(key, _jet_call(key, order), general)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated keys of CASES")
    parser.add_argument("--order", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="values only, no timing")
    args = parser.parse_args()
    keys = args.only.split(",") if args.only else list(CASES)
    print(f"fgrad {fgrad.__version__}, NumPy {np.__version__}; one thread: {PINNED}")
    for key in keys:
        hand, other = both_ways(key)
        assert_close(hand, other, key, "the hand-written recurrence", rtol=1e-9)
    print(f"{len(keys)} hand-written Taylor recurrences agree with the general rule (order 6)")
    if args.check:
        return 0
    print(f"\norder {args.order}")
    time_against(keys, lambda key: _jet_call(key, args.order), general, "general", args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
