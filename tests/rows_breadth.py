"""Gradient-table rows for the NumPy names of issue 34's breadth (the differentiable half):
fgrad/numpy/mathematical.py, windows.py, polynomials.py, histograms.py, selection.py and
manipulation.py. See tests/gradtable.py.

Inputs are drawn away from the points where these functions jump: mantissas and fractions away
from powers of 2 and integers, quotients away from integers, histogram samples away from the
bin edges, values apart where an order is read.
"""

import numpy as np
from gradtable import SHAPES_1, Nondiff, Row, binary_rows, unary_rows

import fgrad.numpy as fnp

ROWS = []

DASK_CANNOT = {
    "roots": "its companion matrix's eigenvalues: NumPy's eigvals of a real matrix is real or "
    "complex by the eigenvalues, which a lazy array does not know before it is computed",
    "poly[matrix]-3x3": "the eigenvalues of a matrix, as roots",
    "histogram_bin_edges": "whether the sample's min equals its max (then NumPy widens the "
    "range) is read from the values",
    # (rows with a NumPy sample and Dask weights run: the weights are summed lazily)
    "histogram2d[density]-5-5": "the bin of each point is read from the values (NumPy's "
    "counts are a bincount of those bins)",
    "histogram2d[edges]-5-5": "as histogram2d[density]",
    "histogramdd[density]-5x2": "as histogram2d[density]",
    "histogramdd[edges]-5x2": "as histogram2d[density]",
    "trim_zeros": "which elements are zero is read from the values (it sets the length)",
    "sort_complex": "the order is read from the values (as sort, whose rule uses np.argsort)",
}


def _signed(rng, shape, low, high):
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(low, high, shape)


# --- mathematical: i0, frexp, modf, divmod, nextafter ---------------------------------------------

ROWS += unary_rows("i0", fnp.i0)
ROWS += [
    Row("i0", fnp.i0, make=lambda rng: (_signed(rng, (4,), 8.5, 14.0),), variant="beyond-8"),
    Row(
        "i0",
        lambda x: fnp.i0(x) * fnp.exp(-fnp.abs(x)),
        make=lambda rng: (np.array([-9.0, -7.5, 0.3, 8.2]),),
        variant="both-branches",
    ),
]


def _mantissas(shape):
    # |x| = m 2**k with m in [0.55, 0.95]: away from the powers of 2 where the mantissa jumps
    def make(rng):
        k = rng.integers(-3, 4, shape)
        return (_signed(rng, shape, 0.55, 0.95) * 2.0**k,)

    return make


ROWS += [Row("frexp", lambda x: fnp.frexp(x)[0], make=_mantissas(s)) for s in SHAPES_1]
ROWS += [
    Row(
        "frexp",
        lambda x: fnp.frexp(x)[0] * fnp.frexp(x)[1],
        make=_mantissas((3, 2)),
        variant="exponent",
        promotes=True,  # float32 times NumPy's int32 exponent is float64, as in NumPy
    )
]


def _fractions(shape):
    # k + f with f in [0.1, 0.9]: away from the integers where the fraction jumps
    def make(rng):
        return (rng.integers(-3, 3, shape) + rng.uniform(0.1, 0.9, shape),)

    return make


ROWS += [Row("modf", lambda x: fnp.modf(x)[0], make=_fractions(s)) for s in SHAPES_1]
ROWS += [
    Row("modf", lambda x: fnp.modf(x)[0] * fnp.modf(x)[1], make=_fractions((3,)), variant="both")
]


def _quotients(s1, s2):
    # x1 = x2 (q + f), f in [0.1, 0.9]: x1 / x2 away from the integers where floor jumps
    def make(rng):
        x2 = _signed(rng, s2, 0.5, 2.0)
        shape = np.broadcast_shapes(s1, s2)
        x1 = x2 * (rng.integers(-3, 3, shape) + rng.uniform(0.1, 0.9, shape))
        return (x1 if x1.shape == s1 else x1.reshape(-1)[: int(np.prod(s1))].reshape(s1), x2)

    return make


ROWS += [
    Row("divmod", lambda a, b: fnp.divmod(a, b)[1], make=_quotients(s, s), variant="remainder")
    for s in SHAPES_1
] + [
    Row(
        "divmod",
        lambda a, b: fnp.divmod(a, b)[1] * fnp.divmod(a, b)[0],
        make=_quotients((3,), ()),
        variant="both",
    ),
]
ROWS += binary_rows("nextafter", fnp.nextafter, domains=("apart_a", "apart_b"))
ROWS += [Row("nextafter", lambda x: fnp.nextafter(x, np.inf), ((3, 2),), variant="to-inf")]

# --- windows --------------------------------------------------------------------------------------

ROWS += [
    Row(
        "kaiser",
        lambda b, m=m: fnp.kaiser(m, b),
        ((),),
        ("positive",),
        variant=f"M={m}",
        promotes=True,
    )
    for m in (1, 4, 7)
] + [
    Row(
        "kaiser",
        lambda b: fnp.kaiser(5, 3.0 * b),
        ((),),
        ("positive",),
        variant="beyond-8",
        promotes=True,
    )
]

# --- polynomials ----------------------------------------------------------------------------------


def _real_roots(rng):
    return (np.poly(np.array([-1.5, 0.3, 1.7]) + rng.uniform(-0.1, 0.1, 3)) * 1.3,)


def _square(rng):
    return (rng.uniform(-1.0, 1.0, (3, 3)) + np.diag([-2.0, 0.5, 2.5]),)


ROWS += [
    Row("roots", lambda p: fnp.sort(fnp.roots(p)), make=_real_roots),
    Row(
        "roots",
        lambda p: fnp.sort(fnp.roots(fnp.concatenate([0 * p[:1], p, 0 * p[:2]]))),
        make=_real_roots,
        variant="zeros",
    ),
    # x^2 + b x + c with complex roots: their sum and product are symmetric in the pair
    Row(
        "roots",
        lambda p: fnp.real(fnp.stack([fnp.sum(fnp.roots(p)), fnp.prod(fnp.roots(p))])),
        make=lambda rng: (np.array([1.0, rng.uniform(-0.5, 0.5), rng.uniform(1.0, 2.0)]),),
        variant="complex",
    ),
    Row("poly", fnp.poly, ((3,),)),
    Row("poly", fnp.poly, make=_square, variant="matrix"),
]

# --- histograms -----------------------------------------------------------------------------------
# Samples on a grid 0.3 apart with 3 equal bins over their min and max: no point is within
# 0.05 of an interior edge, so a step of 1e-4 moves no point to another bin.
_SAMPLE = np.array([[-1.0, 0.2], [0.5, -0.7], [-0.1, 1.1], [1.1, 0.8], [0.2, -1.0]])
_X, _Y = _SAMPLE.T


def _sample(rng):
    return (_SAMPLE + rng.uniform(-0.01, 0.01, _SAMPLE.shape),)


def _weights(rng):
    return (rng.uniform(0.5, 2.0, 5),)


ROWS += [
    Row("histogram_bin_edges", lambda a: fnp.histogram_bin_edges(a, bins=4), ((5,),), ("apart_a",)),
    Row(
        "histogram_bin_edges",
        lambda a: fnp.histogram_bin_edges(a, bins=3, range=(-2.0, 2.0)),
        ((5,),),
        ("apart_a",),
        variant="range",
    ),
    Row(
        "histogram_bin_edges",
        lambda lo: fnp.histogram_bin_edges(_X, bins=3, range=(lo, 4.0)),
        make=lambda rng: (np.array(rng.uniform(-2.0, -1.95)),),
        variant="traced range",
        promotes=True,  # (the sample is float64; a float32 range rounds as NumPy's does)
    ),
    Row(
        "histogram_bin_edges",
        lambda e: fnp.histogram_bin_edges(_X, bins=e),
        make=lambda rng: (np.sort(rng.uniform(-2.0, 2.0, 4)),),
        variant="given",
    ),
    Row(
        "histogram2d",
        lambda w: fnp.histogram2d(_X, _Y, bins=3, weights=w)[0],
        make=_weights,
        variant="weights",
        promotes=True,
    ),
    Row(
        "histogram2d",
        lambda x, y: fnp.histogram2d(x, y, bins=3, density=True)[0],
        make=lambda rng: tuple(_sample(rng)[0].T),
        variant="density",
        promotes=True,
    ),
    Row(
        "histogram2d",
        lambda w: fnp.histogram2d(_X, _Y, bins=[2, 3], weights=w, density=True)[0],
        make=_weights,
        variant="density-weights",
        promotes=True,
    ),
    Row(
        "histogramdd",
        lambda w: fnp.histogramdd(_SAMPLE, bins=(2, 3), weights=w)[0],
        make=_weights,
        variant="weights",
        promotes=True,
    ),
    Row(
        "histogramdd",
        lambda s: fnp.histogramdd(s, bins=3, density=True)[0],
        make=_sample,
        variant="density",
        promotes=True,
    ),
    Row(
        "histogramdd",
        lambda s: fnp.histogramdd(s, bins=[np.array([-2.0, 0.05, 2.0]), 3])[1][1],
        make=_sample,
        variant="edges",
    ),
    Row(
        "histogram2d",
        lambda x, y: fnp.histogram2d(x, y, bins=3)[1:],
        make=lambda rng: tuple(_sample(rng)[0].T),
        variant="edges",
    ),
]

# --- selection ------------------------------------------------------------------------------------

_CHOICE = np.array([[0, 1], [1, 1], [0, 0]])
# piecewise's conditions are constants of the rows: conditions computed from a batched x make
# vmap run the rows whose masks differ apart (by design: NumPy calls each function on each
# row's selection), which tests/test_breadth.py checks against a loop
_LOW = np.array([[True, False], [False, False], [True, True]])
_HIGH = np.array([[False, True], [False, False], [False, False]])
ROWS += [
    Row("choose", lambda a, b: fnp.choose(_CHOICE, [a, b]), ((3, 2), (3, 2))),
    Row("choose", lambda a, b: fnp.choose(_CHOICE, [a, b]), ((3, 2), (2,)), variant="broadcast"),
    Row(
        "choose",
        lambda a, b: fnp.choose(_CHOICE + 1, [a, b], mode="wrap"),
        ((3, 2), ()),
        variant="wrap",
    ),
    Row(
        "choose",
        lambda a: fnp.choose(_CHOICE * 3, a, mode="clip"),
        ((2, 3, 2),),
        variant="clip-array",
    ),
    Row("compress", lambda a: fnp.compress([True, False, True], a, axis=0), ((3, 2),)),
    Row("compress", lambda a: fnp.compress([False, True], a, axis=1), ((3, 2),), variant="axis=1"),
    Row(
        "compress",
        lambda a: fnp.compress([True, False, True, True], a),
        ((3, 2),),
        variant="axis=None",
    ),
    Row("extract", lambda a: fnp.extract(_CHOICE, a), ((3, 2),)),
    Row(
        "piecewise",
        lambda x: fnp.piecewise(x, [_LOW, _HIGH], [lambda v: v**2, lambda v: fnp.sin(v), 0.5]),
        ((3, 2),),
    ),
    Row(
        "piecewise",
        lambda x: fnp.piecewise(x, [True], [lambda v: -(v**3), lambda v: v**2]),
        ((),),
        variant="scalar",
    ),
    Row(
        "piecewise",
        lambda x, s: fnp.piecewise(x, [_LOW[:, 0]], [lambda v: s * v]),
        ((3,), ()),
        variant="closure",
    ),
]


def _updated(update, a, *args):
    """a after `update(a, *args)` (fill_diagonal, put_along_axis): the new array, as
    `inplace=False` (JAX's form) returns it for plain and traced values alike; NumPy's own
    function (the reference run) writes into a copy of a."""
    if getattr(update, "__module__", "").startswith("fgrad"):
        return update(a, *args, inplace=False)
    a = np.array(a)
    update(a, *args)
    return a


_ALONG = np.array([[1], [0], [1]])
ROWS += [
    Row(
        "put_along_axis",
        lambda a, v: _updated(fnp.put_along_axis, a, _ALONG, v, 1),
        ((3, 2), (3, 1)),
    ),
    Row(
        "put_along_axis",
        lambda a, v: _updated(fnp.put_along_axis, a, _ALONG, v, 1),
        ((3, 2), ()),
        variant="scalar",
    ),
    Row(
        "put_along_axis",
        lambda a, v: _updated(fnp.put_along_axis, a, np.array([0, 2, 2]), v, None),
        ((3,), (3,)),
        variant="axis=None-repeats",
    ),
    Row(
        "put_along_axis",
        lambda v: _updated(fnp.put_along_axis, fnp.zeros_like(v, shape=(3, 2)), _ALONG, v, 1),
        ((3, 1),),
        variant="plain-array",
    ),
    Row("fill_diagonal", lambda a, v: _updated(fnp.fill_diagonal, a, v), ((3, 3), (3,))),
    Row(
        "fill_diagonal",
        lambda a, v: _updated(fnp.fill_diagonal, a, v),
        ((3, 3), ()),
        variant="scalar",
    ),
    Row(
        "fill_diagonal",
        lambda a, v: _updated(fnp.fill_diagonal, a, v, True),
        ((5, 2), (2,)),
        variant="wrap",
    ),
]


def _put_into_new(x):
    a = np.zeros(4)
    fnp.put(a, [0, 2, 2], [5.0, 6.0, 7.0])
    return a


def _place_into_new(x):
    a = np.arange(4.0)
    fnp.place(a, np.array([1, 0, 1, 1]), [9.0, 8.0])
    return a


# --- manipulation ---------------------------------------------------------------------------------

ROWS += [
    Row("block", lambda a, b: fnp.block([[a, b], [b, a]]), ((2, 2), (2, 2))),
    Row("block", lambda a, b: fnp.block([a, 1.0, b]), ((3,), (2,)), variant="1-D", promotes=True),
    Row("block", lambda a, b: fnp.block([[a], [b]]), ((2,), (2,)), variant="rows"),
    Row("block", lambda a, b: fnp.block([[[a, b]]]), ((2, 1), (2, 2)), variant="3-D"),
    Row("resize", lambda a: fnp.resize(a, (4, 3)), ((3, 2),)),
    Row("resize", lambda a: fnp.resize(a, 2), ((3,),), variant="shrink"),
    Row("unstack", fnp.unstack, ((3, 2),)),
    Row("unstack", lambda a: fnp.unstack(a, axis=-1), ((3, 2),), variant="axis=-1"),
    Row(
        "trim_zeros",
        lambda a: fnp.trim_zeros(fnp.concatenate([0 * a[:2], a, 0 * a[:1]])),
        ((3,),),
        ("nonzero",),
    ),
    Row(
        "trim_zeros",
        lambda a: fnp.trim_zeros(fnp.pad(a, 1), "f"),
        ((3, 2),),
        ("nonzero",),
        variant="f-2-D",
    ),
    Row(
        "trim_zeros",
        lambda a: fnp.trim_zeros(fnp.pad(a, 1), axis=0),
        ((3, 2),),
        ("nonzero",),
        variant="axis=0",
    ),
    Row(
        "sort_complex",
        lambda x, y: fnp.sort_complex(x + 1j * y),
        ((4,), (4,)),
        ("apart_a", "real"),
        float32="the output is complex (complex64 for float32 inputs, as NumPy's)",
    ),
    Row(
        "sort_complex",
        lambda x: fnp.real(fnp.sort_complex(x)),
        ((3, 2),),
        ("apart_a",),
        variant="real",
        promotes=True,  # NumPy's sort_complex of float32 is complex128
    ),
    Row("apply_over_axes", lambda a: fnp.apply_over_axes(fnp.sum, a, [0, 1]), ((3, 2),)),
    Row(
        "apply_over_axes",
        lambda a: fnp.apply_over_axes(lambda v, ax: fnp.max(v, axis=ax), a, -1),
        ((3, 2),),
        ("apart_a",),
        variant="drops-axis",
    ),
    Row(
        "fromfunction",
        lambda s: fnp.fromfunction(lambda i, j: s * i + fnp.sin(s) * j, (3, 2)),
        ((),),
        promotes=True,  # the indices are float64
    ),
]

NONDIFF = [
    Nondiff("logical_xor", lambda x: fnp.logical_xor(x > 0, x > 1)),
    Nondiff("spacing", fnp.spacing),
    Nondiff("tri", lambda x: fnp.tri(3, 4, 1)),
    Nondiff("mask_indices", lambda x: fnp.mask_indices(3, fnp.triu, 1)),
    # it reads shapes only: a constant (traced operands: tests/test_signal.py)
    Nondiff(
        "einsum_path",
        lambda x: len(fnp.einsum_path("ij,jk->", np.ones((2, 3)), np.ones((3, 4)))[0]),
    ),
    # NumPy's in-place functions on plain arrays (a traced one is refused: tests/test_breadth.py)
    Nondiff("put", _put_into_new),
    Nondiff("place", _place_into_new),
] + [
    Nondiff(name, lambda x, f=getattr(fnp, name): f(5))
    for name in ("bartlett", "blackman", "hamming", "hanning")
]
