"""Gradient-table rows for fgrad/numpy/ufuncs.py: inverse trigonometric and hyperbolic
functions, other bases, roots, arctan2/hypot/logaddexp, float_power, copysign, the remainders,
fmax/fmin (with nans), ldexp, sinc (at 0 too, and complex), complex arcsinh, nan_to_num,
real_if_close, NumPy 2's aliases, NumPy's ufunc keywords (dtype, casting, signature), and
NumPy's own ufuncs applied to traced values. See tests/gradtable.py."""

import numpy as np
from gradtable import SHAPES_2, Nondiff, Row, binary_rows, draw, unary_rows

import fgrad.numpy as fnp

ROWS = []

# --- unary ----------------------------------------------------------------------------------------

for name, domain in [
    ("arcsin", "unit"),
    ("arccos", "unit"),
    ("arctan", "real"),
    ("sinh", "real"),
    ("cosh", "real"),
    ("arcsinh", "real"),
    ("arccosh", "above_one"),
    ("arctanh", "unit"),
    ("asin", "unit"),
    ("acos", "unit"),
    ("atan", "real"),
    ("asinh", "real"),
    ("acosh", "above_one"),
    ("atanh", "unit"),
    ("exp2", "real"),
    ("log2", "positive"),
    ("log10", "positive"),
    ("cbrt", "nonzero"),
    ("square", "real"),
    ("reciprocal", "nonzero"),
    ("fabs", "nonzero"),
    ("positive", "real"),
    ("deg2rad", "real"),
    ("rad2deg", "real"),
    ("degrees", "real"),
    ("radians", "real"),
    ("sinc", "real"),
]:
    ROWS += unary_rows(name, getattr(fnp, name), domain)

ROWS += [
    # sinc at 0 exactly, next to other points: the Maclaurin branch, in both modes to order 2
    Row("sinc", fnp.sinc, make=lambda rng: (np.array([0.0, 0.4, -1.3]),), variant="at-zero"),
    Row("sinc", fnp.sinc, make=lambda rng: (np.array(0.0),), variant="at-zero"),
    Row("sinc", fnp.sinc, make=lambda rng: (np.array([1e-3, -2e-3, 1.0]),), variant="near-zero"),
    Row("cbrt", fnp.cbrt, ((3,),), ("positive",), variant="positive"),
]


def _parts(z):
    """A complex result as a real array: its real and imaginary parts, stacked."""
    return fnp.stack([fnp.real(z), fnp.imag(z)])


# Complex arguments: the holomorphic derivative, checked through the real and imaginary parts
# of f(a + ib) in both directions. arcsinh's arguments keep off its branch cuts (the imaginary
# axis beyond +-i).
ROWS += [
    Row("sinc", lambda a, b: _parts(fnp.sinc(a + 1j * b)), ((3,), (3,)), variant="complex"),
    Row(
        "sinc",
        lambda a, b: _parts(fnp.sinc(a + 1j * b)),
        make=lambda rng: (np.array([0.0, 1e-3, 0.4]), np.array([0.0, -2e-3, 1.1])),
        variant="complex,near-zero",
    ),
    *[
        Row(
            name,
            lambda a, b, f=getattr(fnp, name): _parts(f(a + 1j * b)),
            ((3,), (3,)),
            ("positive", "real"),
            variant="complex",
        )
        for name in ("arcsinh", "asinh")
    ],
]

# NumPy's own ufuncs (and NumPy 2's aliases) on traced values dispatch to fgrad's
for name, domain in [
    ("arcsin", "unit"),
    ("cosh", "real"),
    ("cbrt", "nonzero"),
    ("square", "real"),
    ("exp2", "real"),
    ("log10", "positive"),
    ("arccosh", "above_one"),
    ("positive", "real"),
    ("degrees", "real"),
]:
    ROWS.append(
        Row(name, lambda x, f=getattr(np, name): f(x), ((3, 2),), (domain,), variant="numpy-ufunc")
    )
ROWS.append(Row("asin", lambda x: np.asin(x), ((3,),), ("unit",), variant="numpy-ufunc"))

# --- binary, with broadcasting --------------------------------------------------------------------

for name, domains, kw in [
    ("arctan2", ("real", "nonzero"), {}),  # y away from 0: the branch cut is at y = 0, x < 0
    ("atan2", ("nonzero", "real"), {}),
    ("hypot", ("real", "real"), {}),
    ("logaddexp", ("real", "real"), {}),
    ("logaddexp2", ("real", "real"), {}),
    ("float_power", ("positive", "real"), {"promotes": True}),
    ("pow", ("positive", "real"), {}),
    ("copysign", ("nonzero", "nonzero"), {}),
    ("fmax", ("apart_a", "apart_b"), {}),
    ("fmin", ("apart_a", "apart_b"), {}),
]:
    ROWS += binary_rows(name, getattr(fnp, name), domains, **kw)


def _away_from_jumps(x_shape, y_shape):
    """(x, y) with x/y at least 0.05 from an integer, so no difference step crosses a jump of
    fmod or remainder."""

    def make(rng):
        while True:
            x = 2.0 * draw("real", x_shape, rng)
            y = draw("nonzero", y_shape, rng)
            r = np.asarray(x) / np.asarray(y)
            f = r - np.floor(r)
            if np.all((f > 0.05) & (f < 0.95)):
                return x, y

    return make


for name in ["fmod", "remainder", "mod"]:
    ROWS += [Row(name, getattr(fnp, name), make=_away_from_jumps(sx, sy)) for sx, sy in SHAPES_2]
ROWS += [
    Row(
        "fmod", lambda x, y: np.fmod(x, y), make=_away_from_jumps((3,), (3,)), variant="numpy-ufunc"
    ),
    Row(
        "remainder",
        lambda x, y: np.remainder(x, y),
        make=_away_from_jumps((3, 2), (2,)),
        variant="numpy-ufunc",
    ),
    Row(
        "fmod",
        lambda x: fnp.fmod(x, 0.7),
        make=lambda rng: (np.array([1.0, -1.0, 2.5]),),
        variant="constant-y",
    ),
    Row(
        "remainder",
        lambda y: fnp.remainder(np.array([1.0, -1.0, 2.5]), y),
        make=lambda rng: (np.array(0.7),),
        variant="constant-x",
        promotes=True,
    ),
]

ROWS += [
    # NumPy's ufuncs on traced values
    Row(
        "arctan2",
        lambda y, x: np.arctan2(y, x),
        ((3,), ()),
        ("nonzero", "real"),
        variant="numpy-ufunc",
    ),
    Row("hypot", lambda x, y: np.hypot(x, y), ((3, 2), (2,)), variant="numpy-ufunc"),
    Row("logaddexp", lambda x, y: np.logaddexp(x, y), ((3,), (3,)), variant="numpy-ufunc"),
    Row(
        "copysign",
        lambda x, y: np.copysign(x, y),
        ((3,), (3,)),
        ("nonzero",),
        variant="numpy-ufunc",
    ),
    Row(
        "fmax",
        lambda x, y: np.fmax(x, y),
        ((3,), ()),
        ("apart_a", "apart_b"),
        variant="numpy-ufunc",
    ),
    Row(
        "float_power",
        lambda x, y: np.float_power(x, y),
        ((3,), (3,)),
        ("positive", "real"),
        variant="numpy-ufunc",
        promotes=True,
    ),
    Row("ldexp", lambda x: np.ldexp(x, np.array([1, -2, 3])), ((3,),), variant="numpy-ufunc"),
    # constants on one side
    Row("arctan2", lambda x: fnp.arctan2(1.5, x), ((3,),), variant="constant-y"),
    Row("hypot", lambda x: fnp.hypot(x, [0.5, -1.0, 2.0]), ((3,),), variant="list", promotes=True),
    Row("logaddexp", lambda x: fnp.logaddexp(x, -np.inf), ((3,),), variant="minus-inf"),
    Row(
        "logaddexp",
        fnp.logaddexp,
        variant="large",
        make=lambda rng: (rng.uniform(700.0, 702.0, 3), rng.uniform(700.0, 702.0, 3)),
    ),
    Row(
        "logaddexp2",
        fnp.logaddexp2,
        variant="large",
        make=lambda rng: (rng.uniform(1000.0, 1002.0, 3), rng.uniform(1000.0, 1002.0, (2, 3))),
    ),
    Row(
        "float_power",
        lambda x: fnp.float_power(x, 3),
        ((3, 2),),
        variant="int-exponent",
        promotes=True,
    ),
    Row(
        "float_power",
        lambda x: fnp.float_power(2.0, x),
        ((3,),),
        variant="constant-base",
        promotes=True,
    ),
    Row(
        "copysign",
        lambda x: fnp.copysign(x, np.array([-0.0, 0.0, -1.0])),
        ((3,),),
        ("nonzero",),
        variant="signed-zeros",
        promotes=True,
    ),
    Row("copysign", lambda x: fnp.copysign(2.0, x) * x, ((3,),), ("nonzero",), variant="traced-y"),
    # fmax/fmin: a nan on one side gives the gradient to the other
    Row(
        "fmax",
        lambda x, y: fnp.fmax(x, fnp.where(np.array([True, False, True]), np.nan, y)),
        ((3,), (3,)),
        ("apart_a", "apart_b"),
        variant="nan-y",
    ),
    Row(
        "fmin",
        lambda x, y: fnp.fmin(fnp.where(np.array([True, False]), np.nan, x), y),
        ((3, 2), (2,)),
        ("apart_a", "apart_b"),
        variant="nan-x",
    ),
    # ldexp: linear in x, with integer exponents that broadcast
    Row("ldexp", lambda x: fnp.ldexp(x, np.array([1, -2, 3])), ((3,),)),
    Row("ldexp", lambda x: fnp.ldexp(x, 2), ((3, 2),), variant="int"),
    Row("ldexp", lambda x: fnp.ldexp(x, np.array([0, -1])), ((3, 2),), variant="broadcast"),
    Row("ldexp", lambda x: fnp.ldexp(x, np.array([1, 4, -3])), ((),), variant="scalar-x"),
]


# --- real_if_close, and NumPy's ufunc keywords on traced values -----------------------------------

ROWS += [
    Row("real_if_close", lambda x: fnp.real_if_close(x + 0j), ((3, 2),), variant="close"),
    Row(
        "real_if_close",
        lambda x: fnp.real_if_close(x * (1 + 1e-3j)),
        ((3,),),
        variant="not close",
        float32="the result stays complex (complex64)",
    ),
    Row(
        "real_if_close",
        lambda x: fnp.real_if_close(x * (1 + 1e-9j), tol=1e-6),
        ((3,),),
        variant="tol<1",
    ),
    Row("real_if_close", fnp.real_if_close, ((3,),), variant="real"),
    Row(
        "arcsinh",
        lambda x: fnp.arcsinh(x, dtype=np.float64),
        ((3,),),
        variant="dtype",
        promotes=True,
    ),
    Row("hypot", lambda x, y: fnp.hypot(x, y, casting="no"), ((3,), (3,)), variant="casting"),
    Row(
        "arctan2",
        lambda y, x: np.arctan2(y, x, dtype=np.float64),
        ((3,), (3,)),
        variant="numpy-ufunc,dtype",
        promotes=True,
    ),
    Row(
        "maximum",
        lambda x, y: fnp.maximum(x, y, signature=(np.float64, np.float64, None)),
        ((3,), (3,)),
        ("apart_a", "apart_b"),
        variant="signature",
        promotes=True,
    ),
]

# --- nan_to_num -----------------------------------------------------------------------------------


def _with_nonfinite(x):
    """x of shape (4,) with its last three entries replaced by inf, -inf and nan (constants)."""
    x = fnp.where(np.array([False, True, False, False]), np.inf, x)
    x = fnp.where(np.array([False, False, True, False]), -np.inf, x)
    return fnp.where(np.array([False, False, False, True]), np.nan, x)


ROWS += unary_rows("nan_to_num", fnp.nan_to_num, variant="finite")
ROWS += [
    Row(
        "nan_to_num",
        lambda x, kw=kw: fnp.tanh(fnp.nan_to_num(_with_nonfinite(x * x), **kw)) * x,
        ((4,),),
        variant=",".join(f"{k}={v}" for k, v in kw.items()) or "defaults",
    )
    for kw in [{}, {"nan": 1.5}, {"posinf": 10.0, "neginf": -10.0}, {"copy": False, "nan": -2.0}]
]

# a traced replacement value gets the derivative where it replaced (it was a constant, with a
# gradient of 0); so does heaviside's value at 0
ROWS += [
    Row(
        "nan_to_num",
        lambda x, v: fnp.nan_to_num(_with_nonfinite(x), nan=v, posinf=v * v, neginf=-v),
        ((4,), ()),
        variant="traced replacements",
    ),
    Row(
        "heaviside",
        lambda h: fnp.heaviside(np.array([-1.0, 0.0, 2.0, 0.0]), h),
        ((),),
        variant="traced h0",
        promotes=True,  # (x is a float64 constant)
    ),
    Row(
        "heaviside",
        lambda h: fnp.heaviside(np.array([[0.0], [1.5]]), h * h),
        ((3,),),
        variant="traced h0,broadcast",
        promotes=True,
    ),
]

# --- declared without a derivative ----------------------------------------------------------------

NONDIFF = [
    Nondiff(name, lambda x, f=getattr(fnp, name): f(x))
    for name in ["signbit", "rint", "fix", "isposinf", "isneginf"]
] + [
    Nondiff("heaviside", lambda x: fnp.heaviside(x, 0.5)),
    Nondiff("floor_divide", lambda x: fnp.floor_divide(x, 0.3)),
    Nondiff("isclose", lambda x: fnp.isclose(x, 0.4)),
    Nondiff("allclose", lambda x: fnp.allclose(x, x)),
]

DASK_CANNOT = {
    "real_if_close": "its result's dtype (real or complex) depends on the values, which a lazy "
    "Dask array cannot tell without computing (Dask has no np.real_if_close)",
}
