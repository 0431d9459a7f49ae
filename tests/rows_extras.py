"""Gradient-table rows for the extras: linspace/logspace/geomspace, copy, diagflat,
NumPy 2's permute_dims/concat/matrix_transpose/cumulative_sum/cumulative_prod/vecdot (and
matvec/vecmat from NumPy 2.2), bincount's weights, polynomial arithmetic (polyadd, polysub,
polymul, polyder, polyint, polydiv), polyfit, unwrap and gradient, NumPy's index tricks r_
and c_; and the predicates and counts declared non-differentiable. See tests/gradtable.py."""

import numpy as np
from gradtable import Nondiff, Row

import fgrad.numpy as fnp

ROWS = []

# Names whose rows cannot run on Dask arrays (tests/test_dask_table.py), and why.
DASK_CANNOT = {
    "gradient[coordinates]-5-5": "whether the coordinates are evenly spaced is read (NumPy's "
    "choice of formula), which a lazy Dask array does not give without computing",
    "gradient[coordinates,axis=1,edge_order=2]-2x4-4": "as gradient[coordinates]",
    "polyfit": "the value is NumPy's own polyfit, which Dask does not implement",
    "unwrap": "the value is NumPy's own unwrap, which Dask does not implement",
    "polydiv": "the remainder's length depends on its values (leading zeros are trimmed), "
    "which a lazy Dask array does not give without computing",
    "polymul": "the product's length depends on the factors' values (NumPy drops their "
    "leading zeros), which a lazy Dask array does not give without computing",
    # a single row, by id: the length of r_[a:b] depends on the value of a
    "r_[traced start]-2": "the length of r_[a:4.0] depends on a's value, which it must read",
}


def _parts(z):
    """A complex result as a real array: its real and imaginary parts, stacked."""
    return fnp.stack([fnp.real(z), fnp.imag(z)])


# --- linspace, logspace, geomspace: scalar and array end points, every keyword --------------------

for num in (0, 1, 2, 5):
    for endpoint in (True, False):
        ROWS.append(
            Row(
                "linspace",
                lambda a, b, n=num, e=endpoint: fnp.linspace(a, b, n, e),
                ((), ()),
                variant=f"num={num},endpoint={endpoint}",
            )
        )
for axis in (0, 1, -1, 2):
    ROWS.append(
        Row(
            "linspace",
            lambda a, b, ax=axis: fnp.linspace(a, b, 4, axis=ax),
            ((3, 1), (2,)),
            variant=f"arrays,axis={axis}",
        )
    )
ROWS += [
    Row("linspace", lambda a: fnp.linspace(a, 3.0, 4), ((3,),), variant="traced start"),
    Row(
        "linspace", lambda b: fnp.linspace(-1.0, b, 4, endpoint=False), ((),), variant="traced stop"
    ),
    Row(
        "linspace", lambda a, b: fnp.linspace(a, b, 5, retstep=True), ((3,), ()), variant="retstep"
    ),
    Row(
        "linspace",
        lambda a, b: fnp.linspace(a, b, 3, dtype=np.float64),
        ((), (2,)),
        variant="dtype=float64",
        promotes=True,
    ),
    Row("logspace", lambda a, b: fnp.logspace(a, b, 4), ((), ())),
    Row(
        "logspace",
        lambda a, b: fnp.logspace(a, b, 3, endpoint=False, axis=-1),
        ((3,), (3,)),
        variant="endpoint=False,axis=-1",
    ),
    Row(
        "logspace",
        lambda a, b, c: fnp.logspace(a, b, 4, base=c),
        ((), (), ()),
        ("real", "real", "positive"),
        variant="traced base",
    ),
    Row(
        "logspace",
        lambda a, b, c: fnp.logspace(a, b, 3, base=c, axis=1),
        ((2,), (), (2,)),
        ("real", "real", "positive"),
        variant="array base,axis=1",
    ),
    Row(
        "logspace",
        lambda a, b: fnp.logspace(a, b, 4, base=2.0, dtype=np.float64),
        ((), ()),
        variant="base=2,dtype",
        promotes=True,
    ),
    Row("geomspace", lambda a, b: fnp.geomspace(a, b, 5), ((), ()), ("positive",)),
    Row(
        "geomspace",
        lambda a, b: fnp.geomspace(-a, -b, 4, endpoint=False),
        ((3,), ()),
        ("positive",),
        variant="negative,endpoint=False",
    ),
    Row(
        "geomspace",
        lambda a, b: fnp.geomspace(a, b, 3, axis=-1),
        ((2, 1), (3,)),
        ("positive",),
        variant="arrays,axis=-1",
    ),
    Row("geomspace", lambda a, b: fnp.geomspace(a, b, 1), ((), ()), ("positive",), variant="num=1"),
    # complex end points: holomorphic in both, through the parts of the samples
    Row(
        "geomspace",
        lambda a, b, c, d: _parts(fnp.geomspace(a + 1j * b, c + 1j * d, 4)),
        ((), (), (), ()),
        ("positive", "small", "positive", "small"),
        variant="complex",
    ),
    Row(
        "geomspace",
        lambda a, b, c, d: _parts(
            fnp.geomspace(-a + 1j * b, -c + 1j * d, 3, endpoint=False, axis=-1)
        ),
        ((2,), (2,), (2, 1), (2, 1)),
        ("positive", "small", "positive", "small"),
        variant="complex,arrays,endpoint=False",
    ),
    Row(
        "geomspace",
        lambda a: fnp.geomspace(a, np.float32(5.0), 4),
        ((),),
        ("positive",),
        variant="float32 stop",
    ),
]

# --- copies, diagonals and NumPy 2's spellings ----------------------------------------------------

ROWS += [Row("copy", fnp.copy, (s,)) for s in [(), (3,), (3, 2)]]
ROWS += [
    Row("diagflat", fnp.diagflat, ((3,),)),
    Row("diagflat", lambda v: fnp.diagflat(v, 1), ((3, 2),), variant="k=1"),
    Row("diagflat", lambda v: fnp.diagflat(v, k=-2), ((2,),), variant="k=-2"),
    Row("permute_dims", fnp.permute_dims, ((3, 2),)),
    Row("permute_dims", lambda x: fnp.permute_dims(x, (1, 2, 0)), ((3, 2, 2),), variant="axes"),
    Row("concat", lambda x, y: fnp.concat([x, y]), ((3,), (2,))),
    Row("concat", lambda x, y: fnp.concat((x, y), axis=1), ((3, 2), (3, 1)), variant="axis=1"),
    Row("concat", lambda x, y: fnp.concat([x, y], axis=None), ((3, 2), (2,)), variant="axis=None"),
    Row("matrix_transpose", fnp.matrix_transpose, ((3, 2),)),
    Row("matrix_transpose", fnp.matrix_transpose, ((2, 3, 2),), variant="batch"),
]

# --- cumulative_sum, cumulative_prod --------------------------------------------------------------

for name in ("cumulative_sum", "cumulative_prod"):
    fn = getattr(fnp, name)
    ROWS += [
        Row(name, fn, ((3,),)),
        Row(name, fn, ((),), variant="0-d"),
        Row(name, lambda x, fn=fn: fn(x, include_initial=True), ((3,),), variant="include_initial"),
        Row(name, lambda x, fn=fn: fn(x, axis=0), ((3, 2),), variant="axis=0"),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=-1, include_initial=True),
            ((3, 2),),
            variant="axis=-1,include_initial",
        ),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=1, dtype=np.float64),
            ((2, 3),),
            variant="dtype",
            promotes=True,
        ),
    ]

# --- vector products ------------------------------------------------------------------------------

ROWS += [
    Row("vecdot", fnp.vecdot, ((3,), (3,))),
    Row("vecdot", fnp.vecdot, ((3, 2), (2,)), variant="broadcast"),
    Row("vecdot", fnp.vecdot, ((2, 1, 3), (4, 3)), variant="batch"),
    Row("vecdot", lambda x, y: fnp.vecdot(x, y, axis=0), ((3, 2), (3, 2)), variant="axis=0"),
    Row(
        "vecdot",
        lambda x, y: fnp.vecdot(x, y, axis=0),
        ((3,), (3, 2)),
        variant="axis=0,ranks differ",
    ),
    Row("vecdot", lambda x, y: np.vecdot(x, y), ((3,), (2, 3)), variant="numpy ufunc"),
    Row(
        "vecdot", lambda x, y: fnp.vecdot(x, y, axes=[(0,), (1,)]), ((3, 2), (2, 3)), variant="axes"
    ),
    Row(
        "vecdot",
        lambda x, y: fnp.vecdot(x, y, axis=0, keepdims=True),
        ((3, 2), (3, 2)),
        variant="axis,keepdims",
    ),
    Row(
        "vecdot",
        lambda x, y: fnp.vecdot(x, y, axes=[(1,), (1,), (0,)], keepdims=True),
        ((2, 3, 2), (2, 3, 2)),
        variant="axes,keepdims",
    ),
    Row(
        "vecdot",
        lambda x, y: fnp.vecdot(x, y, dtype=np.float64),
        ((3,), (3,)),
        variant="dtype",
        promotes=True,
    ),
    # complex operands (x1 conjugated): the real and imaginary parts, each a real function
    Row(
        "vecdot",
        lambda x, y, u, v: (
            fnp.real(fnp.vecdot(x + 1j * y, u + 1j * v))
            + 2.0 * fnp.imag(fnp.vecdot(x + 1j * y, u + 1j * v))
        ),
        ((2, 3), (2, 3), (3,), (3,)),
        variant="complex",
    ),
]
if hasattr(np, "matvec"):  # NumPy >= 2.2
    ROWS += [
        Row("matvec", fnp.matvec, ((2, 3), (3,))),
        Row("matvec", fnp.matvec, ((4, 2, 3), (3,)), variant="batch"),
        Row("matvec", fnp.matvec, ((2, 3), (4, 3)), variant="batch of vectors"),
        Row("vecmat", fnp.vecmat, ((3,), (3, 2))),
        Row("vecmat", fnp.vecmat, ((4, 3), (3, 2)), variant="batch of vectors"),
        Row("vecmat", fnp.vecmat, ((3,), (2, 3, 2)), variant="batch"),
        Row(
            "matvec",
            lambda a, v: fnp.matvec(a, v, axes=[(0, 2), (0,), (0,)]),
            ((2, 4, 3), (3, 4)),
            variant="axes",
        ),
        Row(
            "vecmat",
            lambda v, a: fnp.vecmat(v, a, axes=[(-1,), (0, 1), (-1,)]),
            ((4, 3), (3, 2, 4)),
            variant="axes",
        ),
        Row(
            "vecmat",
            lambda x, y, a, b: (
                fnp.real(fnp.vecmat(x + 1j * y, a + 1j * b))
                - fnp.imag(fnp.vecmat(x + 1j * y, a + 1j * b))
            ),
            ((3,), (3,), (3, 2), (3, 2)),
            variant="complex",
        ),
        Row(
            "matvec",
            lambda a, b, x, y: (
                fnp.real(fnp.matvec(a + 1j * b, x + 1j * y))
                + fnp.imag(fnp.matvec(a + 1j * b, x + 1j * y))
            ),
            ((2, 3), (2, 3), (3,), (3,)),
            variant="complex",
        ),
    ]

# --- bincount: differentiable in its weights ------------------------------------------------------

ROWS += [
    Row("bincount", lambda w: fnp.bincount(np.array([0, 2, 2, 1, 0]), w), ((5,),)),
    Row(
        "bincount",
        lambda w: fnp.bincount(np.array([3, 3, 1]), weights=w, minlength=6),
        ((3,),),
        variant="minlength",
    ),
]

# --- polynomials ----------------------------------------------------------------------------------

for name in ("polyadd", "polysub", "polymul"):
    fn = getattr(fnp, name)
    ROWS += [Row(name, fn, pair) for pair in [((3,), (3,)), ((4,), (2,)), ((1,), (3,)), ((), (2,))]]
ROWS += [
    Row("polydiv", fnp.polydiv, ((4,), (2,)), ("real", "nonzero")),
    Row("polydiv", fnp.polydiv, ((5,), (3,)), ("real", "nonzero"), variant="quadratic"),
    Row("polydiv", fnp.polydiv, ((2,), (3,)), ("real", "nonzero"), variant="deg u < deg v"),
    Row("polydiv", fnp.polydiv, ((3,), ()), ("real", "nonzero"), variant="by a constant"),
]
for m in (0, 1, 2, 4):
    ROWS.append(Row("polyder", lambda p, m=m: fnp.polyder(p, m), ((4,),), variant=f"m={m}"))
ROWS += [
    Row("polyint", fnp.polyint, ((3,),)),
    Row("polyint", lambda p: fnp.polyint(p, 2), ((3,),), variant="m=2"),
    Row("polyint", lambda p: fnp.polyint(p, 0), ((3,),), variant="m=0"),
    Row("polyint", lambda p, k: fnp.polyint(p, 1, k), ((3,), ()), variant="traced k"),
    Row("polyint", lambda p, k: fnp.polyint(p, 2, k), ((2,), (2,)), variant="m=2,k per step"),
    Row("polyint", lambda p, k: fnp.polyint(p, 3, k), ((2,), ()), variant="m=3,scalar k"),
]

# --- unwrap and gradient --------------------------------------------------------------------------


def _wrapped_phase(shape, axis):
    # A random walk of phase with steps of about 2 rad, wrapped into (-pi, pi]: it jumps.
    return lambda rng: (np.angle(np.exp(1j * np.cumsum(rng.normal(size=shape) * 2, axis))),)


ROWS += [
    Row("unwrap", fnp.unwrap, make=_wrapped_phase((8,), 0)),
    Row(
        "unwrap", lambda p: fnp.unwrap(p, axis=0), variant="axis=0", make=_wrapped_phase((8, 3), 0)
    ),
    Row(
        "unwrap",
        lambda p: fnp.unwrap(p, discont=4.0),
        variant="discont",
        make=_wrapped_phase((3, 8), 1),
    ),
    Row(
        "unwrap",
        lambda p: fnp.unwrap(p, period=5.0),
        variant="period",
        make=_wrapped_phase((3, 8), 1),
    ),
    # a traced period: the slope is the number of periods added (it was refused)
    Row(
        "unwrap",
        lambda p, period: fnp.unwrap(p, period=period),
        variant="traced period",
        make=lambda rng: (*_wrapped_phase((8,), 0)(rng), np.array(rng.uniform(4.8, 5.2))),
    ),
]
ROWS += [
    Row("gradient", fnp.gradient, ((5,),)),
    Row("gradient", lambda f: fnp.gradient(f, 0.5), ((2,),), variant="n=2,dx"),
    Row("gradient", lambda f: fnp.gradient(f, edge_order=2), ((5,),), variant="edge_order=2"),
    Row("gradient", lambda f: fnp.gradient(f, 0.5, 2.0), ((4, 3),), variant="2-D,dx per axis"),
    Row(
        "gradient",
        lambda f: fnp.gradient(f, axis=-1, edge_order=2),
        ((3, 4),),
        variant="axis=-1,edge_order=2",
    ),
    Row("gradient", lambda f: fnp.gradient(f, 0.3, axis=(1, 0)), ((3, 4),), variant="axis=(1,0)"),
    Row(
        "gradient",
        lambda f, d: fnp.gradient(f, d, edge_order=2),
        ((4,), ()),
        ("real", "positive"),
        variant="traced dx",
    ),
    # coordinates (they were refused): uneven, and along one axis of two
    Row(
        "gradient",
        lambda f, x: fnp.gradient(f, fnp.cumsum(x)),
        ((5,), (5,)),
        ("real", "positive"),
        variant="coordinates",
    ),
    Row(
        "gradient",
        lambda f, x: fnp.gradient(f, fnp.cumsum(x), axis=1, edge_order=2),
        ((2, 4), (4,)),
        ("real", "positive"),
        variant="coordinates,axis=1,edge_order=2",
    ),
]

# --- index tricks: r_ and c_ ----------------------------------------------------------------------

ROWS += [
    Row("r_", lambda x, y: fnp.r_[x, 0.5, y], ((3,), (2,))),
    Row("r_", lambda x: fnp.r_[x, 0:3], ((2,),), variant="arange slice", promotes=True),
    Row("r_", lambda x: fnp.r_[x[0] : x[1] : 4j, x], ((2,),), variant="linspace slice"),
    Row(
        "r_",
        lambda x: fnp.r_[x[0] + 0.5 : 4.0],
        ((2,),),
        ("small",),
        variant="traced start",
        promotes=True,
    ),  # NumPy's arange gives float64
    Row("r_", lambda x, y: fnp.r_["0,2", x, y], ((3,), (3,)), variant="'0,2'"),
    Row("r_", lambda x, y: fnp.r_["1,2,0", x, y], ((3,), (3, 2)), variant="'1,2,0'"),
    Row("r_", lambda x, y: fnp.r_["-1", x, y], ((2, 3), (2, 1)), variant="'-1'"),
    Row("r_", lambda x: fnp.r_[x[0], x[1], 2.0], ((3,),), variant="scalars"),
    Row("c_", lambda x, y: fnp.c_[x, y], ((3,), (3,))),
    Row("c_", lambda x, y: fnp.c_[x, 0.0, y], ((1, 3), (1, 2)), variant="2-d,scalar"),
    Row("c_", lambda x: fnp.c_[x, 1:4], ((3,),), variant="slice", promotes=True),
]

# --- polyfit: differentiable in x, y and w --------------------------------------------------------


def _fit_data(n, columns=None):
    def make(rng):
        x = np.sort(rng.uniform(-1.0, 1.0, n)) + np.arange(n) * 0.3  # well apart
        y = rng.normal(size=(n,) if columns is None else (n, columns))
        return x, y, rng.uniform(0.5, 2.0, n)

    return make


# NumPy's polyfit gives float64 coefficients for float32 data (so does fgrad's)
ROWS += [
    Row("polyfit", lambda x, y, w: fnp.polyfit(x, y, 2), make=_fit_data(6), promotes=True),
    Row(
        "polyfit",
        lambda x, y, w: fnp.polyfit(x, y, 1, w=w),
        make=_fit_data(5),
        variant="w",
        promotes=True,
    ),
    Row(
        "polyfit",
        lambda x, y, w: fnp.polyfit(x, y, 2, w=w),
        make=_fit_data(5, 2),
        variant="2-d y,w",
        promotes=True,
    ),
    Row(
        "polyfit",
        lambda x, y, w: fnp.polyfit(x, y, 2, full=True)[1],
        make=_fit_data(6),
        variant="full: residuals",
        promotes=True,
    ),
    Row(
        "polyfit",
        lambda x, y, w: fnp.polyfit(x, y, 2, full=True)[3],
        make=_fit_data(6),
        variant="full: singular values",
        promotes=True,
    ),
    Row(
        "polyfit",
        lambda x, y, w: fnp.polyfit(x, y, 1, cov=True)[1],
        make=_fit_data(6),
        variant="cov",
        promotes=True,
    ),
    Row(
        "polyfit",
        lambda x, y, w: fnp.polyfit(x, y, 1, w=w, cov="unscaled")[1],
        make=_fit_data(6, 2),
        variant="cov=unscaled,2-d y",
        promotes=True,
    ),
]

# a traced fill value is differentiated (it was a constant, with a gradient of 0)
ROWS += [
    Row("full_like", lambda x, v: fnp.full_like(x, v) * x, ((3,), ()), variant="traced fill"),
    Row(
        "full_like",
        lambda x, v: fnp.full_like(x, v, shape=(2, 3)) * x,
        ((3,), (3,)),
        variant="traced fill,shape",
    ),
    Row("full", lambda v: fnp.full((2, 3), v), ((),), variant="traced fill"),
    Row(
        "full",
        lambda v: fnp.full(2, v * v, dtype=np.float64),
        ((),),
        variant="traced fill,dtype",
        promotes=True,  # (to the dtype asked for)
    ),
]

NONDIFF = [
    Nondiff("full_like", lambda x: fnp.full_like(x, 2.5)),
    Nondiff("empty_like", lambda x: np.shape(fnp.empty_like(x))),
    Nondiff("iscomplexobj", fnp.iscomplexobj),
    Nondiff("isrealobj", fnp.isrealobj),
    Nondiff("isscalar", lambda x: fnp.isscalar(x[0])),
    Nondiff("array_equal", lambda x: fnp.array_equal(x, x)),
    Nondiff("array_equiv", lambda x: fnp.array_equiv(x, x[:1])),
    Nondiff("digitize", lambda x: fnp.digitize(x, np.array([-1.0, 0.0, 1.0]))),
    Nondiff("histogram", lambda x: fnp.histogram(x, bins=3)[0]),
]
