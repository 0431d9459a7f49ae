"""Gradient-table rows for fgrad.scipy.special: the softmax family with axis/keepdims grids and
weights, the logistic and error functions, gamma and its relatives, x log y and the
entropies, the incomplete gamma functions and their inverses (in both arguments), the normal
distribution, Bessel functions of every kind (in x, for constant orders) and exponential
integrals.
Each domain keeps central differences away from poles, branch cuts and kinks. See
tests/gradtable.py."""

from dataclasses import dataclass

import numpy as np
from gradtable import Nondiff, Row, binary_rows, counterpart, unary_rows

import fgrad.numpy as fnp
import fgrad.scipy.special as sp

P = "scipy.special."
ROWS = []


def uniform(lo, hi):
    """A make= for unary rows: one array (or scalar) drawn from (lo, hi)."""

    def make_for(shape):
        return lambda rng: (rng.uniform(lo, hi, shape),)

    return make_for


def unary_rows_in(name, fn, lo, hi, **kw):
    make_for = uniform(lo, hi)
    return [Row(name, fn, (s,), make=make_for(s), **kw) for s in [(), (3,), (3, 2)]]


# --- logsumexp, softmax, log_softmax: every axis form and keepdims --------------------------------

AXES = [None, 0, -1, (0, 1)]
for axis in AXES:
    for keepdims in (False, True):
        ROWS.append(
            Row(
                P + "logsumexp",
                lambda x, a=axis, k=keepdims: sp.logsumexp(x, axis=a, keepdims=k),
                ((3, 2),),
                variant=f"axis={axis},keepdims={keepdims}",
            )
        )
    ROWS.append(
        Row(
            P + "softmax",
            lambda x, a=axis: sp.softmax(x, axis=a),
            ((3, 2),),
            variant=f"axis={axis}",
        )
    )
    ROWS.append(
        Row(
            P + "log_softmax",
            lambda x, a=axis: sp.log_softmax(x, axis=a),
            ((3, 2),),
            variant=f"axis={axis}",
        )
    )
for name, fn in [
    ("logsumexp", sp.logsumexp),
    ("softmax", sp.softmax),
    ("log_softmax", sp.log_softmax),
]:
    ROWS += [Row(P + name, fn, ((),)), Row(P + name, fn, ((3,),))]
ROWS += [
    # weights b, differentiable too, broadcasting against a in both directions
    Row(
        P + "logsumexp",
        lambda x, b: sp.logsumexp(x, b=b),
        ((3,), (3,)),
        ("real", "positive"),
        variant="b",
    ),
    Row(
        P + "logsumexp",
        lambda x, b: sp.logsumexp(x, axis=0, b=b),
        ((3, 2), (2,)),
        ("real", "positive"),
        variant="b-broadcast,axis=0",
    ),
    Row(
        P + "logsumexp",
        lambda x, b: sp.logsumexp(x, axis=-1, b=b, keepdims=True),
        ((3, 1), (3, 2)),
        ("real", "positive"),
        variant="b-wider,axis=-1,keepdims",
    ),
    # negative weights: log|s| with return_sign (the sign is a constant)
    Row(
        P + "logsumexp",
        lambda x, b: sp.logsumexp(
            x, b=b * np.array([[1.0], [-1.0], [1.0]]), axis=0, return_sign=True
        )[0],
        ((3, 2), (3, 1)),
        ("real", "positive"),
        variant="negative-b,return_sign",
        promotes=True,
    ),
    Row(P + "logsumexp", lambda x: sp.logsumexp(x * 400.0), ((3,),), variant="large"),
    # an entry of -inf gets no gradient (and makes no nan)
    Row(
        P + "logsumexp",
        lambda x: sp.logsumexp(fnp.concatenate([x, np.array([-np.inf])])),
        ((3,),),
        variant="-inf-entry",
        promotes=True,
    ),
    Row(P + "softmax", lambda x: sp.softmax(x * 400.0, axis=0), ((3, 2),), variant="large"),
    Row(
        P + "log_softmax", lambda x: sp.log_softmax(x * 400.0, axis=-1), ((3, 2),), variant="large"
    ),
]

# --- elementwise unary functions ------------------------------------------------------------------

ROWS += unary_rows(P + "expit", sp.expit)
ROWS += unary_rows(P + "expit", lambda x: sp.expit(x * 20.0), variant="wide")
ROWS += unary_rows(P + "log_expit", sp.log_expit)
ROWS += unary_rows(P + "log_expit", lambda x: sp.log_expit(x * 20.0), variant="wide")
ROWS += unary_rows(P + "logit", sp.logit, "probability")
ROWS += unary_rows(P + "erf", sp.erf)
ROWS += unary_rows(P + "erfc", sp.erfc)
ROWS += unary_rows_in(P + "erfinv", sp.erfinv, -0.9, 0.9)
ROWS += unary_rows_in(P + "erfcinv", sp.erfcinv, 0.1, 1.9)
ROWS += unary_rows(P + "erfcx", sp.erfcx)
ROWS += unary_rows_in(P + "gammaln", sp.gammaln, 0.2, 5.0)
ROWS += [
    Row(
        P + "gammaln",
        sp.gammaln,
        ((3,),),
        make=lambda rng: (rng.uniform(-2.9, -2.1, 3),),
        variant="negative",
    )
]
ROWS += unary_rows_in(P + "digamma", sp.digamma, 0.2, 5.0)
ROWS += [
    Row(
        P + "digamma",
        sp.digamma,
        ((3,),),
        make=lambda rng: (rng.uniform(-1.8, -1.2, 3),),
        variant="negative",
    )
]
ROWS += unary_rows_in(P + "psi", sp.psi, 0.5, 5.0)
for n in (0, 1, 3):
    ROWS += unary_rows_in(
        P + "polygamma", lambda x, n=n: sp.polygamma(n, x), 0.5, 4.0, variant=f"n={n}"
    )
ROWS += [
    Row(
        P + "polygamma",
        lambda x: sp.polygamma(np.array([[0], [1], [2]]), x),
        ((2,),),
        make=lambda rng: (rng.uniform(0.5, 3.0, 2),),
        variant="n-array-broadcast",
    )
]
# zeta: differentiable in q only (its derivative in x is refused); x constant, scalar and array
ROWS += unary_rows_in(
    P + "zeta",
    lambda q: sp.zeta(2.5, q),
    0.5,
    3.0,
    variant="in q",
    reference=lambda q: counterpart(P + "zeta")(2.5, q),
)
ROWS += [
    Row(
        P + "zeta",
        lambda q: sp.zeta(np.array([[1.5], [4.0]]), q),
        ((3,),),
        make=lambda rng: (rng.uniform(0.5, 3.0, 3),),
        variant="x-array-broadcast",
        promotes=True,
        reference=lambda q: counterpart(P + "zeta")(np.array([[1.5], [4.0]]), q),
    )
]
ROWS += unary_rows_in(P + "gamma", sp.gamma, 0.3, 4.0)
ROWS += [
    Row(
        P + "gamma",
        sp.gamma,
        ((3,),),
        make=lambda rng: (rng.uniform(-1.8, -1.2, 3),),
        variant="negative",
    )
]
ROWS += unary_rows_in(P + "rgamma", sp.rgamma, 0.3, 4.0)
ROWS += [
    Row(
        P + "rgamma",
        sp.rgamma,
        ((3,),),
        make=lambda rng: (rng.uniform(-2.8, -2.2, 3),),
        variant="negative",
    )
]
for d in (1, 3):
    ROWS += unary_rows_in(
        P + "multigammaln", lambda x, d=d: sp.multigammaln(x, d), 1.5, 4.0, variant=f"d={d}"
    )
ROWS += unary_rows_in(P + "entr", sp.entr, 0.1, 3.0)
ROWS += unary_rows(P + "ndtr", sp.ndtr)
ROWS += unary_rows(P + "ndtri", sp.ndtri, "probability")
ROWS += unary_rows(P + "log_ndtr", sp.log_ndtr)
ROWS += unary_rows_in(P + "log_ndtr", sp.log_ndtr, -40.0, -5.0, variant="left-tail")
ROWS += unary_rows_in(P + "log_ndtr", sp.log_ndtr, 3.0, 8.0, variant="right-tail")
for name, fn in [("i0", sp.i0), ("i1", sp.i1)]:
    ROWS += unary_rows(P + name, fn)
    ROWS += unary_rows_in(P + name, fn, 5.0, 30.0, variant="large")
for name, fn in [("i0e", sp.i0e), ("i1e", sp.i1e)]:
    ROWS += unary_rows(P + name, fn, "nonzero")  # i0e and i1e have a kink at 0 (|x|)
    ROWS += unary_rows_in(P + name, fn, 50.0, 900.0, variant="large")
for n in (0, 1, 2):
    ROWS += unary_rows(P + "expn", lambda x, n=n: sp.expn(n, x), "positive", variant=f"n={n}")
ROWS += [
    Row(
        P + "expn",
        lambda x: sp.expn(np.array([0, 1, 3]), x),
        ((3,),),
        ("positive",),
        variant="n-array",
    )
]
ROWS += unary_rows(P + "exp1", sp.exp1, "positive")
ROWS += unary_rows(P + "expi", sp.expi, "nonzero")

# Bessel functions: the order is a constant (integer or real, scalar or an array that
# broadcasts against x); x > 0 for the second kind and for non-integer orders of I.
for name, fn in [("j0", sp.j0), ("j1", sp.j1)]:
    ROWS += unary_rows(P + name, fn)
    ROWS += unary_rows_in(P + name, fn, 5.0, 30.0, variant="large")
for name, fn in [("y0", sp.y0), ("y1", sp.y1)]:
    ROWS += unary_rows(P + name, fn, "positive")
    ROWS += unary_rows_in(P + name, fn, 5.0, 30.0, variant="large")
for n in (0, 1, 3):
    ROWS += unary_rows(P + "jn", lambda x, n=n: sp.jn(n, x), variant=f"n={n}")
    ROWS += unary_rows(P + "yn", lambda x, n=n: sp.yn(n, x), "positive", variant=f"n={n}")
ROWS += unary_rows(P + "yn", lambda x: sp.yn(-2, x), "positive", variant="n=-2")
ORDERS = np.array([[0], [1], [4]])  # broadcasts against x of shape (2,): result (3, 2)
for name, fn in [
    ("jn", sp.jn),
    ("yn", sp.yn),
    ("jv", sp.jv),
    ("yv", sp.yv),
    ("iv", sp.iv),
    ("ive", sp.ive),
    ("kv", sp.kv),
    ("kve", sp.kve),
]:
    ROWS += [
        Row(
            P + name,
            lambda x, fn=fn: fn(ORDERS, x),
            ((2,),),
            ("positive",),
            variant="order-array-broadcast",
        )
    ]
for v in (0, 2):  # integer orders: any real x
    ROWS += unary_rows(P + "jv", lambda x, v=v: sp.jv(v, x), variant=f"v={v}")
    ROWS += unary_rows(P + "iv", lambda x, v=v: sp.iv(v, x), variant=f"v={v}")
ROWS += unary_rows(P + "ive", lambda x: sp.ive(0, x), "nonzero", variant="v=0")  # kink at 0
ROWS += unary_rows(P + "ive", lambda x: sp.ive(3, x), variant="v=3")
for v in (-0.5, 1.5, 2.7):
    for name, fn in [
        ("jv", sp.jv),
        ("yv", sp.yv),
        ("iv", sp.iv),
        ("ive", sp.ive),
        ("kv", sp.kv),
        ("kve", sp.kve),
    ]:
        ROWS += unary_rows(P + name, lambda x, v=v, fn=fn: fn(v, x), "positive", variant=f"v={v}")
ROWS += unary_rows_in(P + "jv", lambda x: sp.jv(2.5, x), 5.0, 30.0, variant="v=2.5,large")
ROWS += unary_rows_in(P + "ive", lambda x: sp.ive(1.5, x), 50.0, 900.0, variant="v=1.5,large")
ROWS += unary_rows_in(P + "kve", lambda x: sp.kve(1.5, x), 50.0, 900.0, variant="v=1.5,large")


# Complex arguments: check_grads draws complex directions and checks both modes to order 2.
# The Bessel functions are holomorphic in z (for a non-integer order, and for kv, kve, yv, away
# from the cut along z <= 0); ive(v, z) = iv(v, z) exp(-|Re z|) is not (its factor reads Re z):
# its rows keep away from Re z == 0.


@dataclass
class ComplexRow(Row):
    """A row whose `make(rng)` gives complex128 arguments, run in the complex dtype of the
    requested precision."""

    float32: object = (
        "complex arguments give complex64 results and cotangents: "
        "tests/test_special.py::test_complex_arguments_keep_complex64 checks them"
    )

    def args(self, dtype=np.float64):
        cdtype = np.result_type(dtype, np.complex64)
        return tuple(
            np.asarray(v, dtype=cdtype) for v in self.make(np.random.default_rng(self.seed))
        )


def complex_in(re, im=(-1.0, 1.0), shape=(3,)):
    """A make= of one complex array with real parts in `re` and imaginary parts in `im`."""
    return lambda rng: (rng.uniform(*re, shape) + 1j * rng.uniform(*im, shape),)


ANYWHERE, RIGHT, LEFT = (-2.0, 2.0), (0.5, 2.0), (-2.0, -0.5)
for name, fn, v, re in [
    ("jv", sp.jv, 2, ANYWHERE),
    ("jn", sp.jn, 3, ANYWHERE),
    ("iv", sp.iv, 1, ANYWHERE),
    ("ive", sp.ive, 2, RIGHT),
    ("ive", sp.ive, 2, LEFT),
    ("jv", sp.jv, 2.7, RIGHT),
    ("iv", sp.iv, -0.5, RIGHT),
    ("ive", sp.ive, 1.5, RIGHT),
    ("kv", sp.kv, 1.5, RIGHT),
    ("kve", sp.kve, 0, RIGHT),
    ("yv", sp.yv, 1.5, RIGHT),
    ("yv", sp.yv, 0, RIGHT),
]:
    ROWS.append(
        ComplexRow(
            P + name,
            lambda z, fn=fn, v=v: fn(v, z),
            make=complex_in(re),
            variant=f"complex,v={v},re={re}",
        )
    )
# digamma of complex z: SciPy's value; its derivatives (polygamma(n, z), which SciPy computes
# for real z only) are fgrad's own; gamma and rgamma's second derivatives need them too
for name, fn in [
    ("digamma", sp.digamma),
    ("psi", sp.psi),
    ("gamma", sp.gamma),
    ("rgamma", sp.rgamma),
]:
    for re in (RIGHT, (-2.8, -2.2)):
        ROWS.append(
            ComplexRow(P + name, fn, make=complex_in(re, (0.3, 1.5)), variant=f"complex,re={re}")
        )
ROWS.append(
    ComplexRow(
        P + "digamma",
        sp.digamma,
        make=complex_in((5.0, 40.0), (-30.0, 30.0)),
        variant="complex,large",
    )
)

# logsumexp of complex a (and b): SciPy's complex log, holomorphic weights; with return_sign,
# log|s| and the phase s/|s|, both differentiable (a real a with complex weights b too)
ROWS += [
    ComplexRow(P + "logsumexp", sp.logsumexp, make=complex_in(ANYWHERE), variant="complex"),
    ComplexRow(
        P + "logsumexp",
        lambda z: sp.logsumexp(z, axis=0, keepdims=True),
        make=complex_in(ANYWHERE, shape=(3, 2)),
        variant="complex,axis=0,keepdims",
    ),
    ComplexRow(
        P + "logsumexp",
        lambda z, w: sp.logsumexp(z, axis=-1, b=w),
        make=lambda rng: (
            complex_in(ANYWHERE, shape=(2, 3))(rng) + complex_in(RIGHT, shape=(3,))(rng)
        ),
        variant="complex,b",
    ),
    ComplexRow(
        P + "logsumexp",
        lambda z, w: sp.logsumexp(z, b=w, return_sign=True),
        make=lambda rng: complex_in(ANYWHERE)(rng) + complex_in(RIGHT)(rng),
        variant="complex,b,return_sign",
    ),
    ComplexRow(
        P + "logsumexp",
        lambda z: sp.logsumexp(z * 300.0),
        make=complex_in(ANYWHERE),
        variant="complex,large",
    ),
    Row(
        P + "logsumexp",
        lambda x, wr, wi: (lambda out, sign: (out, fnp.real(sign), fnp.imag(sign)))(
            *sp.logsumexp(x, b=wr + 1j * wi, return_sign=True)
        ),
        ((3,), (3,), (3,)),
        ("real", "positive", "real"),
        variant="complex-b-of-parts,return_sign",
    ),
]

# SciPy computes complex64 with an integer order array in double precision; fgrad keeps
# complex64 (README: "Float32 in, float32 out"), so the reference is SciPy's value rounded to z's
# precision
for name, fn in [
    ("jn", sp.jn),
    ("jv", sp.jv),
    ("yv", sp.yv),
    ("iv", sp.iv),
    ("ive", sp.ive),
    ("kv", sp.kv),
    ("kve", sp.kve),
]:
    ROWS.append(
        ComplexRow(
            P + name,
            lambda z, fn=fn: fn(ORDERS, z),
            make=complex_in(RIGHT, shape=(2,)),
            variant="complex,order-array-broadcast",
            reference=lambda z, name=name: counterpart(P + name)(ORDERS, z).astype(z.dtype),
        )
    )

# --- elementwise binary functions, with broadcasting ----------------------------------------------

ROWS += binary_rows(P + "xlogy", sp.xlogy, ("real", "positive"))
ROWS += binary_rows(P + "xlog1py", sp.xlog1py, ("real", "positive"))
ROWS += binary_rows(P + "rel_entr", sp.rel_entr, ("positive", "positive"))
ROWS += binary_rows(P + "kl_div", sp.kl_div, ("positive", "positive"))
ROWS += binary_rows(P + "beta", sp.beta, ("positive", "positive"))
ROWS += binary_rows(P + "betaln", sp.betaln, ("positive", "positive"))

# The incomplete gamma functions in both arguments: a and x in (0.5, 2) have x < a + 1 (the
# series for d/da); the "fraction" rows have x >= a + 1 (the continued fraction), and "large"
# rows straddle the switch between the two at a = 30.
for name in ("gammainc", "gammaincc"):
    fn = getattr(sp, name)
    ROWS += binary_rows(P + name, fn, ("positive", "positive"))
    ROWS += [
        Row(
            P + name,
            fn,
            make=lambda rng: (rng.uniform(0.3, 2.0, 3), rng.uniform(3.5, 12.0, 3)),
            variant="fraction",
        ),
        Row(
            P + name,
            fn,
            make=lambda rng: (rng.uniform(0.3, 2.0, (3, 1)), rng.uniform(3.5, 12.0, 2)),
            variant="fraction-broadcast",
        ),
        Row(
            P + name,
            fn,
            make=lambda rng: (rng.uniform(25.0, 35.0, 4), np.array([20.0, 28.0, 36.0, 45.0])),
            variant="large",
        ),
    ]
for name in ("gammaincinv", "gammainccinv"):
    fn = getattr(sp, name)
    ROWS += binary_rows(P + name, fn, ("positive", "probability"))
    ROWS += [
        Row(
            P + name,
            fn,
            make=lambda rng: (rng.uniform(20.0, 40.0, 3), rng.uniform(0.1, 0.9, 3)),
            variant="large-a",
        )
    ]

# betainc in all three arguments: both branches of the series for d/da, d/db (x below and
# above (a + 1) / (a + b + 2)), broadcasting, small and large a and b
ROWS += [
    Row(
        P + "betainc",
        sp.betainc,
        make=lambda rng: (
            rng.uniform(0.5, 3.0, 3),
            rng.uniform(0.5, 3.0, 3),
            rng.uniform(0.1, 0.9, 3),
        ),
    ),
    Row(
        P + "betainc",
        sp.betainc,
        make=lambda rng: (
            rng.uniform(0.5, 3.0, (3, 1)),
            rng.uniform(0.5, 3.0, 2),
            rng.uniform(0.1, 0.9, (3, 2)),
        ),
        variant="broadcast",
    ),
    Row(
        P + "betainc",
        sp.betainc,
        make=lambda rng: (
            np.array([0.2, 30.0, 4.0]),
            np.array([0.3, 12.0, 40.0]),
            np.array([0.02, 0.75, 0.05]),
        ),
        variant="wide-range",
    ),
    Row(
        P + "betainc",
        lambda x: sp.betainc(2.0, 3.5, x),
        make=lambda rng: (rng.uniform(0.1, 0.9, 3),),
        variant="python-floats",
    ),
    Row(
        P + "betainc",
        lambda a: sp.betainc(a, 1.5, 0.4),
        make=lambda rng: (rng.uniform(0.5, 3.0, (2, 2)),),
        variant="in-a",
    ),
]

NONDIFF = [Nondiff(P + "gammasgn", sp.gammasgn)]

# --- a Python float next to an array: the float takes the array's dtype (NumPy 2's rule), so
# the float32 run of these rows checks that value and cotangents stay float32 (SciPy's own
# ufuncs would promote to float64) --------------------------------------------------------
PYTHON_SCALAR = [  # (name, (lo, hi) of the array argument, the Python float)
    ("xlogy", (0.5, 2.0), 0.7),
    ("xlog1py", (0.5, 2.0), 0.7),
    ("rel_entr", (0.5, 2.0), 0.7),
    ("kl_div", (0.5, 2.0), 0.7),
    ("beta", (0.5, 2.0), 1.5),
    ("betaln", (0.5, 2.0), 1.5),
    ("gammainc", (0.5, 2.0), 1.3),
    ("gammaincc", (0.5, 2.0), 1.3),
]
for name, (lo, hi), c in PYTHON_SCALAR:
    fn = getattr(sp, name)
    ROWS += [
        Row(
            P + name,
            lambda y, fn=fn, c=c: fn(c, y),
            make=lambda rng, lo=lo, hi=hi: (rng.uniform(lo, hi, 3),),
            variant="python-float-first",
        ),
        Row(
            P + name,
            lambda x, fn=fn, c=c: fn(x, c),
            make=lambda rng, lo=lo, hi=hi: (rng.uniform(lo, hi, (3, 2)),),
            variant="python-float-second",
        ),
    ]
for name in ("gammaincinv", "gammainccinv"):
    fn = getattr(sp, name)
    ROWS += [
        Row(
            P + name,
            lambda p, fn=fn: fn(1.7, p),
            make=lambda rng: (rng.uniform(0.1, 0.9, 3),),
            variant="python-float-first",
        ),
        Row(
            P + name,
            lambda a, fn=fn: fn(a, 0.4),
            make=lambda rng: (rng.uniform(0.5, 2.0, 3),),
            variant="python-float-second",
        ),
    ]
ROWS += [
    Row(P + "logsumexp", lambda x: sp.logsumexp(x, b=2.0), ((3,),), variant="python-float-b"),
    Row(
        P + "logsumexp",
        lambda b: sp.logsumexp(0.5, b=b),
        ((3,),),
        ("positive",),
        variant="python-float-a",
    ),
]

_TERMS_FROM_DATA = (
    "its derivative in a sums a series or a continued fraction whose number of terms is chosen "
    "from the largest {} in the data (a Python loop bound), which a lazy Dask array cannot give "
    "without computing"
)
DASK_CANNOT = {
    "scipy.special.gammainc": _TERMS_FROM_DATA.format("a and x"),
    "scipy.special.gammaincc": _TERMS_FROM_DATA.format("a and x"),
    "scipy.special.gammaincinv": _TERMS_FROM_DATA.format("a and result"),
    "scipy.special.gammainccinv": _TERMS_FROM_DATA.format("a and result"),
    "scipy.special.betainc": _TERMS_FROM_DATA.format("a, b and x").replace(
        "derivative in a", "derivatives in a and b"
    ),
}
