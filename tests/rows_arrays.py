"""Gradient-table rows for the arrays family (fgrad/numpy/arrays.py): flipping, rolling, tiling,
padding, joining (one array too), splitting, gathering, diagonals and triangles, sort,
partition, rollaxis, unique, meshgrid, insert/delete, apply_along_axis, vectorize, the scatter
updates of `x.at[idx]`, and every NumPy indexing form of `x[idx]` not already in rows_core.py.
See tests/gradtable.py."""

import warnings

import numpy as np
from gradtable import Nondiff, Row

import fgrad.numpy as fnp

ROWS = []

# Names whose rows cannot run on Dask arrays (tests/test_dask_table.py), and why.
DASK_CANNOT = {
    "sort": "sort's rule routes the gradient through np.argsort, which Dask does not implement",
    "partition": "Dask implements neither np.partition nor np.argsort (partition's rule needs "
    "the permutation)",
    "unique": "the number of unique values is known only once they are computed (Dask's "
    "unique has an unknown length and no axis, equal_nan or sorted)",
    # single rows, by id: the row's own Python code reads a value, which computes it
    "vectorize-3x2": "the row's function branches on its element (`if a > 0`), which reads it",
    "at[set-equal-values-repeats]-3-scalar": "set at an index that repeats an element compares "
    "the values written there, which reads them",
    "pad[median]-4": "a median gathers its order statistics through np.argsort, which Dask does "
    "not implement",
}


def _quietly(fn, *args):
    """fn(*args) without its DeprecationWarning (row_stack is deprecated, as in NumPy 2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return fn(*args)


def rows(name, fn, shapes_list, domains=("real",), variant="", **kw):
    return [Row(name, fn, shapes, domains, variant=variant, **kw) for shapes in shapes_list]


# --- flipping, rolling, rotating ------------------------------------------------------------------

ROWS += rows("flip", fnp.flip, [((3,),), ((3, 2),)])
ROWS += [
    Row("flip", lambda x, a=a: fnp.flip(x, a), ((2, 3, 2),), variant=f"axis={a}")
    for a in (0, -1, (0, 2))
]
ROWS += [
    Row("fliplr", fnp.fliplr, ((3, 2),)),
    Row("flipud", fnp.flipud, ((3,),)),
    Row("flipud", fnp.flipud, ((3, 2),)),
]
ROWS += [
    Row("roll", lambda x: fnp.roll(x, 2), ((3, 2),), variant="axis=None"),
    Row("roll", lambda x: fnp.roll(x, -1), ((3,),), variant="negative"),
    Row("roll", lambda x: fnp.roll(x, 1, axis=-1), ((3, 2),), variant="axis=-1"),
    Row("roll", lambda x: fnp.roll(x, (1, 2), axis=(0, 2)), ((2, 3, 4),), variant="tuples"),
]
ROWS += [
    Row("rot90", lambda x, k=k: fnp.rot90(x, k), ((3, 2),), variant=f"k={k}") for k in (1, 2, 3, -1)
] + [Row("rot90", lambda x: fnp.rot90(x, 1, axes=(2, 0)), ((2, 3, 2),), variant="axes")]

# --- repeating and padding ------------------------------------------------------------------------

ROWS += [
    Row("tile", lambda x: fnp.tile(x, 2), ((3,),)),
    Row("tile", lambda x: fnp.tile(x, 3), ((),), variant="scalar"),
    Row("tile", lambda x: fnp.tile(x, (2, 1, 2)), ((3, 2),), variant="more-reps"),
    Row("repeat", lambda x: fnp.repeat(x, 2), ((3, 2),), variant="axis=None"),
    Row("repeat", lambda x: fnp.repeat(x, 3), ((),), variant="scalar"),
    Row("repeat", lambda x: fnp.repeat(x, 2, axis=-1), ((3, 2),), variant="axis=-1"),
    Row("repeat", lambda x: fnp.repeat(x, [2, 0, 1], axis=0), ((3, 2),), variant="counts"),
]
for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    ROWS += [
        Row("pad", lambda x, m=mode: fnp.pad(x, 2, mode=m), ((3,),), variant=mode),
        Row("pad", lambda x, m=mode: fnp.pad(x, ((1, 2), (0, 1)), mode=m), ((3, 2),), variant=mode),
    ]
ROWS += [
    Row("pad", lambda x: fnp.pad(x, 5, mode="reflect"), ((3,),), variant="wider-than-array"),
    Row(
        "pad",
        lambda x: fnp.pad(x, ((1, 2), (3, 0)), mode="reflect", reflect_type="odd"),
        ((3, 4),),
        variant="reflect-odd",
    ),
    Row(
        "pad",
        lambda x: fnp.pad(x, 5, mode="symmetric", reflect_type="odd"),
        ((3,),),
        variant="symmetric-odd-wider",
    ),
    Row(
        "pad",
        lambda x: fnp.pad(x, ((1,), (2,)), constant_values=((1.5, -1.0), (2.0, 3.0))),
        ((3, 2),),
        variant="constant_values-pairs",
    ),
    Row(
        "pad",
        lambda x, c: fnp.pad(x, 1, constant_values=c),
        ((3, 2), ()),
        variant="traced-constant",
    ),
    # the statistics and ramps, NumPy's steps axis after axis (they were refused)
    Row("pad", lambda x: fnp.pad(x, (2, 1), mode="mean"), ((3,),), variant="mean"),
    Row("pad", lambda x: fnp.pad(x, ((1, 2), (0, 1)), mode="mean"), ((3, 2),), variant="mean"),
    Row("pad", lambda x: fnp.pad(x, 2, mode="maximum", stat_length=2), ((4,),), variant="maximum"),
    Row(
        "pad", lambda x: fnp.pad(x, ((1, 0), (2, 1)), mode="minimum"), ((3, 2),), variant="minimum"
    ),
    Row("pad", lambda x: fnp.pad(x, 2, mode="median", stat_length=3), ((4,),), variant="median"),
    Row(
        "pad", lambda x: fnp.pad(x, ((2, 1), (1, 1)), mode="linear_ramp"), ((3, 2),), variant="ramp"
    ),
    Row(
        "pad",
        lambda x, v: fnp.pad(x, (3, 2), mode="linear_ramp", end_values=v),
        ((3,), ()),
        variant="ramp,traced end",
    ),
]

# --- joining --------------------------------------------------------------------------------------

ROWS += [
    Row("hstack", lambda x, y: fnp.hstack([x, y]), ((3,), (2,))),
    Row("hstack", lambda x, y: fnp.hstack((x, y, x)), ((3, 2), (3, 1)), variant="2-d"),
    Row("hstack", lambda x, y: fnp.hstack([x, y]), ((), ()), variant="scalars"),
    Row("vstack", lambda x, y: fnp.vstack([x, y]), ((3, 2), (2,))),
    Row("vstack", lambda x, y: fnp.vstack([x, y]), ((3,), (3,)), variant="1-d"),
    Row("row_stack", lambda x, y: _quietly(fnp.row_stack, [x, y]), ((3,), (3,))),
    Row("dstack", lambda x, y: fnp.dstack([x, y]), ((3, 2), (3, 2))),
    Row("dstack", lambda x, y: fnp.dstack([x, y]), ((3,), (3,)), variant="1-d"),
    Row("column_stack", lambda x, y: fnp.column_stack([x, y]), ((3,), (3, 2))),
    Row("append", lambda x, y: fnp.append(x, y), ((3, 2), (3,))),
    Row("append", lambda x, y: fnp.append(x, y, axis=1), ((3, 2), (3, 1)), variant="axis=1"),
    Row("append", lambda x: fnp.append(x, 2.0), ((3,),), variant="constant", promotes=True),
    Row("insert", lambda x, y: fnp.insert(x, 1, y), ((3,), ())),
    Row("insert", lambda x, y: fnp.insert(x, [0, 2, 2], y), ((3,), (3,)), variant="sequence"),
    Row("insert", lambda x, y: fnp.insert(x, 1, y, axis=1), ((3, 2), (3,)), variant="axis=1"),
    Row(
        "insert",
        lambda x: fnp.insert(x, slice(0, 2), 4.0, axis=0),
        ((3, 2),),
        variant="slice-constant",
    ),
    Row("delete", lambda x: fnp.delete(x, 1), ((3,),)),
    Row("delete", lambda x: fnp.delete(x, [0, 3]), ((3, 2),), variant="flat"),
    Row(
        "delete",
        lambda x: fnp.delete(x, slice(0, None, 2), axis=0),
        ((3, 2),),
        variant="slice-axis=0",
    ),
    Row("broadcast_arrays", lambda x, y: fnp.broadcast_arrays(x, y), ((3, 1), (2,))),
    Row(
        "broadcast_arrays", lambda x, y: fnp.broadcast_arrays(x, y)[0], ((), (3,)), variant="scalar"
    ),
    Row("meshgrid", lambda x, y: fnp.meshgrid(x, y), ((3,), (2,))),
    Row("meshgrid", lambda x, y: fnp.meshgrid(x, y, indexing="ij"), ((3,), (2,)), variant="ij"),
    Row(
        "meshgrid",
        lambda x, y, z: fnp.meshgrid(x, y, z, sparse=True),
        ((3,), (2,), (2,)),
        variant="sparse",
    ),
    Row("meshgrid", lambda x, y: fnp.meshgrid(x, y, x), ((3,), (2,)), variant="3-d"),
    Row("atleast_1d", fnp.atleast_1d, ((),)),
    Row("atleast_1d", lambda x, y: fnp.atleast_1d(x, y), ((), (3, 2)), variant="several"),
    Row("atleast_2d", fnp.atleast_2d, ((3,),)),
    Row("atleast_2d", fnp.atleast_2d, ((),), variant="scalar"),
    Row("atleast_3d", fnp.atleast_3d, ((3,),)),
    Row("atleast_3d", fnp.atleast_3d, ((3, 2),), variant="2-d"),
]

# --- splitting ------------------------------------------------------------------------------------

ROWS += [
    Row("split", lambda x: fnp.split(x, 3), ((3, 2),)),
    Row("split", lambda x: fnp.split(x, [1, 3], axis=1), ((2, 4),), variant="indices"),
    Row("array_split", lambda x: fnp.array_split(x, 2), ((3,),)),
    Row("array_split", lambda x: fnp.array_split(x, [1], axis=-1), ((3, 2),), variant="indices"),
    Row("hsplit", lambda x: fnp.hsplit(x, 2), ((3, 2),)),
    Row("hsplit", lambda x: fnp.hsplit(x, [1]), ((3,),), variant="1-d"),
    Row("vsplit", lambda x: fnp.vsplit(x, [2]), ((3, 2),)),
    Row("dsplit", lambda x: fnp.dsplit(x, 2), ((2, 1, 2),)),
]

# --- gathering and sorting ------------------------------------------------------------------------

ROWS += [
    Row("take", lambda x: fnp.take(x, [0, -1, 0]), ((3, 2),)),
    Row(
        "take",
        lambda x: fnp.take(x, np.array([[2, 0], [1, 1]]), axis=0),
        ((3, 2),),
        variant="axis=0",
    ),
    Row("take", lambda x: fnp.take(x, [4, -1], axis=1, mode="wrap"), ((3, 2),), variant="wrap"),
    Row("take", lambda x: fnp.take(x, [5, -2], mode="clip"), ((3,),), variant="clip"),
    Row("take", lambda x: fnp.take(x, 1), ((3,),), variant="scalar-index"),
    Row(
        "take_along_axis",
        lambda x: fnp.take_along_axis(x, np.array([[1, 1], [0, 2], [2, 0]]), 0),
        ((3, 2),),
    ),
    Row(
        "take_along_axis",
        lambda x: fnp.take_along_axis(x, np.array([[1], [0], [1]]), -1),
        ((3, 2),),
        variant="broadcast",
    ),
    Row(
        "take_along_axis",
        lambda x: fnp.take_along_axis(x, np.array([5, 0, 0]), None),
        ((3, 2),),
        variant="axis=None",
    ),
    Row("sort", fnp.sort, ((3,),), ("apart_a",)),
    Row("sort", fnp.sort, ((3, 2),), ("apart_a",), variant="axis=-1"),
    Row("sort", lambda x: fnp.sort(x, axis=0), ((3, 2),), ("apart_a",), variant="axis=0"),
    Row("sort", lambda x: fnp.sort(x, axis=None), ((3, 2),), ("apart_a",), variant="axis=None"),
    Row(
        "select",
        lambda x, y: fnp.select(
            [np.array([True, False, False]), np.array([True, True, False])], [x, y], 0.5
        ),
        ((3,), (3,)),
    ),
    Row(
        "select",
        lambda x, y, d: fnp.select([np.array([[True, False]] * 3)], [x], d),
        ((3, 2), (), (2,)),
        variant="traced-default",
    ),
]

# --- diagonals and triangles ----------------------------------------------------------------------

ROWS += [
    Row("diag", fnp.diag, ((3,),)),
    Row("diag", lambda x: fnp.diag(x, -1), ((3,),), variant="k=-1"),
    Row("diag", fnp.diag, ((3, 2),), variant="2-d"),
    Row("diag", lambda x: fnp.diag(x, 1), ((2, 3),), variant="2-d,k=1"),
    Row("diagonal", fnp.diagonal, ((3, 2),)),
    Row("diagonal", lambda x: fnp.diagonal(x, 1, 2, 0), ((2, 3, 3),), variant="offset,axes"),
    Row("diagonal", lambda x: fnp.diagonal(x, -1, -1, -2), ((2, 3, 3),), variant="negative"),
    Row("trace", fnp.trace, ((3, 2),)),
    Row("trace", lambda x: fnp.trace(x, 1, 1, 2), ((2, 3, 3),), variant="offset,axes"),
    Row("tril", fnp.tril, ((3, 2),)),
    Row("tril", lambda x: fnp.tril(x, -1), ((2, 3, 3),), variant="k=-1,batch"),
    Row("tril", fnp.tril, ((3,),), variant="1-d"),
    Row("triu", fnp.triu, ((3, 2),)),
    Row("triu", lambda x: fnp.triu(x, 1), ((2, 3, 3),), variant="k=1,batch"),
]

# --- x.at[idx] scatter updates --------------------------------------------------------------------
# fnp.at(x) is x.at for plain NumPy arrays too, which check_grads evaluates f on.

for op, domains in [
    ("subtract", ("real", "real")),
    ("multiply", ("real", "real")),
    ("divide", ("real", "nonzero")),
    ("power", ("positive", "real")),
]:
    ROWS += [
        Row(
            "at",
            lambda x, v, op=op: getattr(fnp.at(x)[1], op)(v),
            ((3, 2), (2,)),
            domains,
            variant=f"{op}-row",
        ),
        Row(
            "at",
            lambda x, v, op=op: getattr(fnp.at(x)[[0, 2, 0, 0]], op)(v),
            ((3,), (4,)),
            domains,
            variant=f"{op}-repeats",
        ),
        Row(
            "at",
            lambda x, v, op=op: getattr(fnp.at(x)[[1, 1]], op)(v),
            ((3,), ()),
            domains,
            variant=f"{op}-repeats-broadcast",
        ),
    ]
for op in ("min", "max"):
    ROWS += [
        Row(
            "at",
            lambda x, v, op=op: getattr(fnp.at(x)[:, 0], op)(v),
            ((3, 2), (3,)),
            ("apart_a", "apart_b"),
            variant=f"{op}-slice",
        ),
        Row(
            "at",
            lambda x, v, op=op: getattr(fnp.at(x)[[0, 2, 0, 0]], op)(v),
            ((3,), (4,)),
            ("apart_a", "apart_b"),
            variant=f"{op}-repeats",
        ),
        Row(
            "at",
            lambda x, v, op=op: getattr(fnp.at(x)[np.array([[0, 0], [1, 1]]), 1], op)(v),
            ((3, 2), (2, 2)),
            ("apart_a", "apart_b"),
            variant=f"{op}-repeats-2d",
        ),
    ]
ROWS += [
    Row("at", lambda x: fnp.at(x)[[0, 0]].multiply(x[2]), ((3,),), variant="multiply-self"),
    Row("at", lambda x, v: fnp.at(x)[[0, 2, 0]].mul(v), ((3,), (3,)), variant="mul-repeats"),
    Row(
        "at",
        lambda x, v: fnp.at(x)[[-1, 0], :, [1, 0]].subtract(v),
        ((2, 3, 2), (3,)),
        variant="subtract-advanced-moved",
    ),
    # equal values at a repeated index (two writes of v): the derivative goes to the last
    Row(
        "at",
        lambda x, v: fnp.at(x)[[0, 2, 0]].set(fnp.stack([v, 2.0 * v, v])),
        ((3,), ()),
        variant="set-equal-values-repeats",
    ),
    Row(
        "at",
        lambda x, v: fnp.at(x)[np.array([True, False, True])].multiply(v),
        ((3, 2), (2,)),
        variant="multiply-mask",
    ),
]

# --- x[idx]: the NumPy indexing forms rows_core.py does not cover ---------------------------------

INDICES = {
    "slice-step": np.s_[::2],
    "slice-negative-step": np.s_[2:0:-1, ::-1],
    "negative-int-array": np.s_[[-1, 0, -1]],
    "int-and-slice": np.s_[1, :],
    "ellipsis-none": np.s_[..., None, 1],
    "none-front": np.s_[None, :, ::2],
    "bool-0d-true": np.bool_(True),
    "bool-0d-false": np.array(False),
    "bool-2d": np.array([[True, False], [False, True], [True, True]]),
    "bool-and-int-array": np.s_[np.array([True, False, True]), [1, 0]],
    "list-of-lists": [[0, 1], [2, 0]],
    "empty-list": [],
}
ROWS += [
    Row("x[idx]", lambda x, idx=idx: x[idx], ((3, 2),), variant=k) for k, idx in INDICES.items()
]
INDICES_3D = {
    # advanced indices separated by a slice: NumPy moves the broadcast axes to the front
    "advanced-split-by-slice": np.s_[[0, 1, 1], :, [1, 0, 1]],
    "advanced-adjacent": np.s_[:, [0, 2], [1, 1]],
    "int-slice-array": np.s_[1, :, [0, 0]],  # an int is an advanced index too here
    "ellipsis-array": np.s_[..., [1, 0]],
    "broadcast-arrays": np.s_[np.array([[0], [1]]), np.array([0, 2, 2])],
    "bool-3d-full": np.arange(12).reshape(2, 3, 2) % 3 == 0,
}
ROWS += [
    Row("x[idx]", lambda x, idx=idx: x[idx], ((2, 3, 2),), variant=k)
    for k, idx in INDICES_3D.items()
]
ROWS += [
    Row("x[idx]", lambda x: x[()], ((),), variant="scalar-empty-tuple"),
    Row("x[idx]", lambda x: x[None], ((),), variant="scalar-None"),
    Row("x[idx]", lambda x: x[...], ((3,),), variant="ellipsis-alone"),
    Row("at", lambda x, v: fnp.at(x)[1:, ::-1].set(v), ((3, 2), (2,)), variant="set-slice-step"),
    Row(
        "at",
        lambda x, v: fnp.at(x)[[0, 2], 1].set(v),
        ((3, 2), (1, 2)),
        variant="set-extra-leading-axis",
    ),
    Row(
        "at",
        lambda x, v: fnp.at(x)[[-1, 0], :, [1, 0]].add(v),
        ((2, 3, 2), (3,)),
        variant="add-advanced-moved",
    ),
]

# --- declared without a derivative ----------------------------------------------------------------

# one array: NumPy's stacks iterate its first axis
ROWS += [
    Row(name, lambda x, name=name: _quietly(getattr(fnp, name), x), (s,), variant="one array")
    for name in ("vstack", "hstack", "column_stack", "dstack", "row_stack")
    for s in ((3, 2), (2, 3, 2))
]

# --- partition, rollaxis, unique ------------------------------------------------------------------

ROWS += [
    Row("partition", lambda x: fnp.partition(x, 2), ((5,),), ("apart_a",)),
    Row(
        "partition",
        lambda x: fnp.partition(x, (0, 2), axis=0),
        ((4, 3),),
        ("apart_a",),
        variant="kths,axis=0",
    ),
    Row(
        "partition",
        lambda x: fnp.partition(x, -1, axis=None),
        ((3, 2),),
        ("apart_a",),
        variant="axis=None",
    ),
    Row("rollaxis", lambda x: fnp.rollaxis(x, 2), ((2, 3, 4),)),
    Row("rollaxis", lambda x: fnp.rollaxis(x, 0, 3), ((2, 3, 4),), variant="start=3"),
    Row("rollaxis", lambda x: fnp.rollaxis(x, -1, -2), ((2, 3, 4),), variant="negative"),
    # distinct values (repeats would part under the finite-difference step): unique sorts them
    Row("unique", fnp.unique, ((3, 2),), ("apart_a",)),
    Row(
        "unique",
        lambda x: fnp.unique(x, return_index=True, return_counts=True)[0],
        ((4,),),
        ("apart_a",),
        variant="return_index,return_counts",
    ),
    Row("unique", lambda x: fnp.unique(x, axis=0), ((3, 2),), ("apart_a",), variant="axis=0"),
    Row(
        "unique",
        lambda x: fnp.unique(x, sorted=False),
        ((4,),),
        ("apart_a",),
        variant="sorted=False",
    ),
]

# --- apply_along_axis and vectorize ---------------------------------------------------------------

ROWS += [
    Row(
        "apply_along_axis",
        lambda x: fnp.apply_along_axis(lambda r: fnp.sum(r * r), 0, x),
        ((3, 2),),
    ),
    Row(
        "apply_along_axis",
        lambda x: fnp.apply_along_axis(fnp.cumsum, -1, x),
        ((2, 3),),
        variant="vector results",
    ),
    Row(
        "apply_along_axis",
        lambda x, w: fnp.apply_along_axis(lambda r, w: fnp.outer(r, w), 1, x, w),
        ((2, 3, 2), (2,)),
        variant="matrix results,args",
    ),
    Row("vectorize", lambda x: fnp.vectorize(lambda a: a * a if a > 0 else -a)(x), ((3, 2),)),
    Row(
        "vectorize",
        lambda x, y: fnp.vectorize(lambda a, b: fnp.sin(a) * b)(x, y),
        ((3, 1), (2,)),
        variant="broadcast",
    ),
    Row(
        "vectorize",
        lambda x: fnp.vectorize(lambda a, n: a**n, excluded={1})(x, 3),
        ((3,),),
        variant="excluded",
    ),
    Row(
        "vectorize",
        lambda x: fnp.vectorize(lambda a: (a, a * a))(x)[1],
        ((2, 2),),
        variant="two outputs",
    ),
    Row(
        "vectorize",
        lambda x, y: fnp.vectorize(lambda a, b: fnp.dot(a, b), signature="(n),(n)->()")(x, y),
        ((2, 3), (3,)),
        variant="signature",
    ),
    Row(
        "vectorize",
        lambda x: fnp.vectorize(lambda a: a * 2.0, otypes=[np.float64])(x),
        ((3,),),
        variant="otypes",
        promotes=True,
    ),
]

NONDIFF = [
    Nondiff(name, lambda x, f=getattr(fnp, name): f(x))
    for name in ["argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero"]
] + [
    Nondiff("searchsorted", lambda x: fnp.searchsorted(fnp.sort(x), 0.3)),
    Nondiff("nanargmax", fnp.nanargmax),
    Nondiff("nanargmin", lambda x: fnp.nanargmin(fnp.where(x > 2, np.nan, x))),
    Nondiff("argpartition", lambda x: fnp.argpartition(x, 1)),
    Nondiff("lexsort", lambda x: fnp.lexsort((x, -x))),
    Nondiff("tril_indices", lambda x: fnp.tril_indices(3)),
    Nondiff("triu_indices", lambda x: fnp.triu_indices(3, 1)),
    Nondiff("diag_indices", lambda x: fnp.diag_indices(3)),
    Nondiff("indices", lambda x: fnp.indices((2, 3))),
]
