"""Gradient-table rows for the first fgrad.numpy: arithmetic and operators, the basic unary
functions, `where`/`clip`, `matmul`/`dot`, sum/mean/prod/max/min (with NumPy's where=,
initial= and dtype=), shape operations (reshape's order=), indexing and index updates, and a
few compositions. See tests/gradtable.py."""

import numpy as np
from gradtable import Nondiff, Row, binary_rows, unary_rows

import fgrad.numpy as fnp

ROWS = []

# Rows (by id) that cannot run on Dask arrays, and why (tests/test_dask_table.py).
DASK_CANNOT = {
    "reshape[order=A]-3x2": "order='A' reads a transposed array in its memory order (Fortran); "
    "a lazy Dask array has no memory layout, so fgrad reads it in C order",
    "ravel[order=K]-2x3x2": "order='K' reads the elements as they lie in memory; a lazy Dask "
    "array has no memory layout, so fgrad reads it in C order",
}

# --- elementwise ----------------------------------------------------------------------------------

for name, fn, domain in [
    ("sin", fnp.sin, "real"),
    ("cos", fnp.cos, "real"),
    ("tan", fnp.tan, "small"),
    ("tanh", fnp.tanh, "real"),
    ("exp", fnp.exp, "real"),
    ("log", fnp.log, "positive"),
    ("log1p", fnp.log1p, "positive"),
    ("expm1", fnp.expm1, "real"),
    ("sqrt", fnp.sqrt, "positive"),
    ("abs", fnp.abs, "nonzero"),
    ("absolute", fnp.absolute, "nonzero"),
    ("negative", fnp.negative, "real"),
]:
    ROWS += unary_rows(name, fn, domain)
ROWS += unary_rows("negative", lambda x: -x, variant="operator")
ROWS += unary_rows("abs", lambda x: abs(x), "nonzero", variant="operator")

for name, fn, domains in [
    ("add", fnp.add, ("real", "real")),
    ("subtract", fnp.subtract, ("real", "real")),
    ("multiply", fnp.multiply, ("real", "real")),
    ("divide", fnp.divide, ("real", "nonzero")),
    ("true_divide", fnp.true_divide, ("real", "nonzero")),
    ("power", fnp.power, ("positive", "real")),
    ("maximum", fnp.maximum, ("apart_a", "apart_b")),
    ("minimum", fnp.minimum, ("apart_a", "apart_b")),
    ("add", lambda x, y: x + y, ("real", "real")),
    ("subtract", lambda x, y: x - y, ("real", "real")),
    ("multiply", lambda x, y: x * y, ("real", "real")),
    ("divide", lambda x, y: x / y, ("real", "nonzero")),
    ("power", lambda x, y: x**y, ("positive", "real")),
]:
    is_operator = getattr(fn, "__name__", "") == "<lambda>"
    ROWS += binary_rows(name, fn, domains, variant="operator" if is_operator else "")

ROWS += [
    # constants on either side, including a NumPy array on the left (NumPy's __array_ufunc__)
    Row("subtract", lambda x: 2.0 - x, ((3,),), variant="constant-traced"),
    Row("divide", lambda x: 2.0 / x, ((3,),), ("nonzero",), variant="constant/traced"),
    Row("power", lambda x: 2.0**x, ((3,),), variant="constant**traced"),
    Row("power", lambda x: x**3.0, ((3, 2),), variant="traced**3.0"),
    Row("power", lambda x: x**2, ((3,),), variant="traced**int"),
    Row(
        "multiply",
        lambda x: np.array([1.0, -2.0, 3.0]) * x,
        ((3,),),
        variant="ndarray*traced",
        promotes=True,
    ),
    Row(
        "subtract", lambda x: np.ones((2, 3)) - x, ((3,),), variant="ndarray-traced", promotes=True
    ),
    Row(
        "multiply",
        lambda x: x * [1.0, 2.0, 3.0] + [0.5, 0.5, 0.5],
        ((3,),),
        variant="list",
        promotes=True,
    ),
    Row(
        "power",
        lambda x: x ** [1.0, 2.0, 0.0],
        ((3,),),
        ("positive",),
        variant="list",
        promotes=True,
    ),
    # where: the condition is a constant; both branches are differentiable, with broadcasting
    Row("where", lambda x, y: fnp.where(np.array([True, False]), x, y), ((3, 2), (2,))),
    Row(
        "where",
        lambda x: fnp.where(np.array([True, False, True]), x, 0.0),
        ((3,),),
        variant="scalar-branch",
    ),
    Row("clip", lambda x: fnp.clip(x, -0.3, 0.6), ((3, 2),), ("apart_a",)),
    Row("clip", lambda x: fnp.clip(x, None, 0.6), ((3,),), ("apart_a",), variant="one-sided"),
    # lo and hi are drawn equal (-0.95); the bounds used are -1.45 and -0.45, away from every x
    Row(
        "clip",
        lambda x, lo, hi: fnp.clip(x, lo - 0.5, hi + 0.5),
        ((3,), (), ()),
        ("apart_a", "apart_b", "apart_b"),
        variant="traced-bounds",
    ),
]

# --- products: NumPy's rules for 1-D operands, batches, and dot's N-D contraction -----------------

ROWS += [
    Row("matmul", fnp.matmul, s)
    for s in [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 2)),
        ((2, 3), (3, 4)),
        ((2, 2, 3), (3, 4)),
        ((2, 2, 3), (1, 3, 4)),
        ((3,), (2, 3, 4)),
    ]
]
ROWS += [Row("matmul", lambda x, y: x @ y, ((2, 3), (3, 2)), variant="operator")]
ROWS += [
    Row("dot", fnp.dot, s)
    for s in [
        ((), (3,)),
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((2, 3), (3, 2)),
        ((2, 3), (2, 3, 4)),
        ((2, 2, 3), (3,)),
    ]
]
ROWS += [Row("dot", lambda x, y: x.dot(y), ((2, 3), (3,)), variant="method")]

# --- reductions, with every axis form and keepdims ------------------------------------------------

for name, fn, domain in [
    ("sum", fnp.sum, "real"),
    ("mean", fnp.mean, "real"),
    ("prod", fnp.prod, "real"),
    ("max", fnp.max, "apart_a"),
    ("min", fnp.min, "apart_a"),
    ("amax", fnp.amax, "apart_a"),
    ("amin", fnp.amin, "apart_a"),
]:
    ROWS.append(Row(name, fn, ((3,),), (domain,)))
    ROWS.append(Row(name, fn, ((),), (domain,)))
    for axis in [None, 0, -1, (0, 1)]:
        for keepdims in (False, True):
            ROWS.append(
                Row(
                    name,
                    lambda x, fn=fn, axis=axis, k=keepdims: fn(x, axis=axis, keepdims=k),
                    ((3, 2),),
                    (domain,),
                    variant=f"axis={axis},keepdims={keepdims}",
                )
            )
ROWS += [
    Row("sum", lambda x: x.sum(axis=0), ((3, 2),), variant="method"),
    Row("mean", lambda x: x.mean(), ((3, 2),), variant="method"),
    Row("max", lambda x: x.max(axis=1), ((3, 2),), ("apart_a",), variant="method"),
    Row("min", lambda x: x.min(keepdims=True), ((3, 2),), ("apart_a",), variant="method"),
    Row("prod", lambda x: x.prod(axis=-1), ((3, 2),), variant="method"),
    Row(
        "prod",
        lambda x: fnp.prod(x * np.array([1.0, 0.0, 1.0])),
        ((3,),),
        variant="a-zero",
        promotes=True,
    ),
    Row(
        "prod",
        lambda x: fnp.prod(x * np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), axis=0),
        ((3, 2),),
        variant="two-zeros",
        promotes=True,
    ),
]

# NumPy's keywords of the reductions: a constant `where` mask (only its True elements count),
# `initial` (a constant, or traced), `dtype` (the accumulation's).
_MASK = np.array([[True, False], [True, True], [False, True]])
for name, fn in [("sum", fnp.sum), ("mean", fnp.mean), ("prod", fnp.prod)]:
    ROWS += [
        Row(name, lambda x, fn=fn: fn(x, where=_MASK), ((3, 2),), variant="where"),
        Row(name, lambda x, fn=fn: fn(x, axis=0, where=_MASK), ((3, 2),), variant="where,axis=0"),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=1, keepdims=True, where=_MASK[:1]),
            ((3, 2),),
            variant="where broadcast,keepdims",
        ),
        Row(
            name,
            lambda x, n=name: getattr(x, n)(axis=-1, where=_MASK),
            ((3, 2),),
            variant="where,method",
        ),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=0, dtype=np.float64),
            ((3, 2),),
            variant="dtype=float64",
            promotes=True,
        ),
    ]
for name, fn in [("sum", fnp.sum), ("prod", fnp.prod)]:
    ROWS += [
        Row(name, lambda x, fn=fn: fn(x, initial=1.5), ((3,),), variant="initial"),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=1, initial=-0.5, where=_MASK),
            ((3, 2),),
            variant="initial,where",
        ),
        Row(
            name,
            lambda x, c, fn=fn: fn(x, axis=0, initial=c),
            ((3, 2), ()),
            variant="traced initial",
        ),
    ]
for name, fn in [("max", fnp.max), ("min", fnp.min), ("amax", fnp.amax), ("amin", fnp.amin)]:
    # the apart_a values lie on a grid x.1 + 0.7 k; 0.45 and -0.55 are never among them
    ROWS += [
        Row(name, lambda x, fn=fn: fn(x, initial=0.45), ((3, 2),), ("apart_a",), variant="initial"),
        Row(
            name,
            lambda x, fn=fn: fn(x, axis=0, initial=-0.55, where=_MASK),
            ((3, 2),),
            ("apart_a",),
            variant="initial,where",
        ),
        Row(
            name,
            lambda x, c, fn=fn: fn(x, axis=1, initial=c),
            ((3, 2), ()),
            ("apart_a", "apart_b"),
            variant="traced initial",
        ),
    ]
ROWS += [
    Row(
        "max",
        lambda x: x.max(axis=1, initial=0.45, where=_MASK),
        ((3, 2),),
        ("apart_a",),
        variant="initial,where,method",
    ),
]

# --- shape operations -----------------------------------------------------------------------------

ROWS += [
    Row("reshape", lambda x: fnp.reshape(x, (2, 3)), ((3, 2),)),
    Row("reshape", lambda x: fnp.reshape(x, -1), ((3, 2),), variant="-1"),
    Row("reshape", lambda x: x.reshape(2, 3), ((3, 2),), variant="method"),
    Row("reshape", lambda x: fnp.reshape(x, (2, 3), order="F"), ((3, 2),), variant="order=F"),
    Row(
        "reshape", lambda x: fnp.reshape(x, (4, -1), order="F"), ((2, 3, 4),), variant="order=F,-1"
    ),
    Row(
        "reshape",
        lambda x: fnp.reshape(fnp.transpose(x), (6,), order="A"),
        ((3, 2),),
        variant="order=A",
    ),
    Row("reshape", lambda x: x.reshape((3, 2), order="F"), ((2, 3),), variant="order=F,method"),
    Row("transpose", fnp.transpose, ((3, 2),)),
    Row("transpose", lambda x: fnp.transpose(x, (1, 2, 0)), ((2, 3, 2),), variant="axes"),
    Row("transpose", lambda x: x.transpose(0, 2, 1), ((2, 3, 2),), variant="method"),
    Row("transpose", lambda x: x.T, ((3, 2),), variant=".T"),
    Row("swapaxes", lambda x: fnp.swapaxes(x, 0, -1), ((2, 3, 2),)),
    Row("moveaxis", lambda x: fnp.moveaxis(x, 0, -1), ((2, 3, 2),)),
    Row("squeeze", fnp.squeeze, ((3, 1),)),
    Row("squeeze", lambda x: fnp.squeeze(x, axis=0), ((1, 3),), variant="axis"),
    Row("expand_dims", lambda x: fnp.expand_dims(x, 1), ((3, 2),)),
    Row("expand_dims", lambda x: fnp.expand_dims(x, (0, -1)), ((3,),), variant="tuple"),
    Row("broadcast_to", lambda x: fnp.broadcast_to(x, (4, 3, 2)), ((3, 1),)),
    Row("broadcast_to", lambda x: fnp.broadcast_to(x, (3,)), ((),), variant="scalar"),
    Row("stack", lambda x, y: fnp.stack([x, y]), ((3,), (3,))),
    Row("stack", lambda x, y: fnp.stack([x, y, x], axis=-1), ((3, 2), (3, 2)), variant="axis=-1"),
    Row(
        "stack",
        lambda x: fnp.stack([x, np.ones(3)], axis=1),
        ((3,),),
        variant="constant",
        promotes=True,
    ),
    Row("concatenate", lambda x, y: fnp.concatenate([x, y]), ((3,), (2,))),
    Row(
        "concatenate",
        lambda x, y: fnp.concatenate([x, y, x], axis=1),
        ((3, 2), (3, 1)),
        variant="axis=1",
    ),
    Row(
        "concatenate",
        lambda x, y: fnp.concatenate([x, y], axis=None),
        ((3, 2), (2,)),
        variant="axis=None",
    ),
    Row("array", lambda x, y: fnp.array([x, 2.0 * y, x * y]), ((), ()), variant="of-traced"),
    Row("asarray", lambda x, y: fnp.asarray([x, y]), ((), ()), variant="of-traced"),
    Row("ravel", fnp.ravel, ((3, 2),)),
    Row("ravel", lambda x: fnp.ravel(x, order="F"), ((3, 2),), variant="order=F"),
    Row(
        "ravel",
        lambda x: fnp.ravel(fnp.transpose(x, (1, 0, 2)), order="K"),
        ((2, 3, 2),),
        variant="order=K",
    ),
    Row(
        "stack",
        lambda x, y: fnp.stack([x, y], dtype=np.float64),
        ((3,), (3,)),
        variant="dtype",
        promotes=True,
    ),
    Row(
        "concatenate",
        lambda x, y: fnp.concatenate((x, y), dtype=np.float64),
        ((3,), (2,)),
        variant="dtype",
        promotes=True,
    ),
    Row("concatenate", lambda x: fnp.concatenate(x), ((3, 2),), variant="one array"),
    Row("astype", lambda x: fnp.astype(x, x.dtype) * x, ((3,),), variant="same-dtype"),
]

# --- indexing: ints, slices, None, Ellipsis, integer arrays (with repeats), boolean masks ---------

INDICES = {
    "int": 1,
    "negative-int": -1,
    "slice": slice(1, None),
    "reverse": slice(None, None, -1),
    "None": None,
    "ellipsis-int": (Ellipsis, 0),
    "int-array-repeats": [0, 0, 2],
    "int-array-2d": np.array([[0, 1], [2, 2]]),
    "mixed": ([0, 2], slice(None)),
    "two-arrays": ([0, 2, 2], [1, 0, 1]),
    "bool-mask": np.array([True, False, True]),
    "newaxis-slice": (slice(None), None, 0),
}
ROWS += [
    Row("x[idx]", lambda x, idx=idx: x[idx], ((3, 2),), variant=k) for k, idx in INDICES.items()
]
ROWS += [
    Row("x[idx]", lambda x: x[2], ((3,),), variant="scalar-of-vector"),
    # fnp.at(x) is x.at for plain NumPy arrays too, which check_grads evaluates f on
    Row("at", lambda x, v: fnp.at(x)[1].set(v), ((3, 2), (2,)), variant="set"),
    Row("at", lambda x, v: fnp.at(x)[[0, 2]].set(v), ((3,), ()), variant="set-array-index"),
    Row("at", lambda x, v: fnp.at(x)[[0, 0, 2]].add(v), ((3,), (3,)), variant="add-repeats"),
    Row(
        "at",
        lambda x, v: fnp.at(x)[np.array([True, False, True])].add(v),
        ((3, 2), (2,)),
        variant="add-mask",
    ),
]

# --- compositions that exercise residuals of residuals at order 2 ---------------------------------

ROWS += [
    Row(
        "composition",
        lambda z: fnp.log(fnp.sum(fnp.exp(z), axis=1)).sum() - z[:, 0].sum(),
        ((3, 2),),
        variant="softmax-loss",
    ),
    Row("composition", lambda x, w: fnp.tanh(x @ w).mean(axis=0), ((3, 2), (2, 4)), variant="mlp"),
    Row(
        "composition",
        lambda x: x / fnp.sqrt(fnp.sum(x * x)),
        ((3,),),
        ("nonzero",),
        variant="normalize",
    ),
]

# --- declared without a derivative ----------------------------------------------------------------

NONDIFF = (
    [
        Nondiff(name, lambda x, f=getattr(fnp, name): f(x))
        for name in [
            "sign",
            "floor",
            "ceil",
            "round",
            "around",
            "trunc",
            "zeros_like",
            "ones_like",
            "isnan",
            "isfinite",
            "isinf",
            "logical_not",
            "shape",
            "ndim",
            "size",
        ]
    ]
    + [
        Nondiff(name, lambda x, f=getattr(fnp, name): f(x, 0.3))
        for name in [
            "greater",
            "greater_equal",
            "less",
            "less_equal",
            "equal",
            "not_equal",
            "logical_and",
            "logical_or",
        ]
    ]
    + [
        Nondiff("invert", lambda x: fnp.invert(x > 0)),
        Nondiff("bitwise_not", lambda x: fnp.bitwise_not(x > 0)),
        Nondiff("arange", lambda x: fnp.arange(3.0)),
        Nondiff("empty", lambda x: fnp.empty(0)),
        Nondiff("eye", lambda x: fnp.eye(3)),
        Nondiff("full", lambda x: fnp.full(3, 2.0)),
        Nondiff("identity", lambda x: fnp.identity(3)),
        Nondiff("linspace", lambda x: fnp.linspace(0, 1, 3)),
        Nondiff("ones", lambda x: fnp.ones(3)),
        Nondiff("zeros", lambda x: fnp.zeros(3)),
        Nondiff("astype", lambda x: fnp.astype(x, int)),
    ]
)

# --- complex numbers: real inputs, complex intermediates, real outputs ----------------------------
# (complex inputs are checked in tests/test_complex.py: check_grads draws complex directions)

ROWS += [
    Row("real", lambda x, y: fnp.real(fnp.exp(1j * x) * y), ((3,), (3,))),
    Row("imag", lambda x, y: fnp.imag(fnp.exp(1j * x) * y), ((3,), (3,))),
    Row("conj", lambda x: fnp.real(fnp.conj(x + 2j * x * x) * (1 + 1j)), ((3, 2),)),
    Row("conjugate", lambda x: fnp.imag(fnp.conjugate(x * (0.5 - 1j))), ((3,),)),
    Row("angle", lambda x, y: fnp.angle(x + 1j * y), ((3,), (3,)), ("nonzero",)),
    Row(
        "angle",
        lambda x, y: fnp.angle(x + 1j * y, deg=True),
        ((3,), (3,)),
        ("nonzero",),
        variant="deg",
    ),
    Row("abs", lambda x, y: fnp.abs(x + 1j * y), ((3,), (3,)), ("nonzero",), variant="complex"),
    Row(
        "sign",
        lambda x, y: fnp.real(fnp.sign(x + 1j * y) * (0.5 - 2j)),
        ((3,), (3,)),
        ("nonzero",),
        variant="complex",
    ),
    Row("real", lambda x: (x * (1 + 2j)).real + (x * 1j).imag, ((3,),), variant="property"),
]
