"""Tensor products: `matmul` (a primitive) and `dot`, with NumPy's rules for 1-D operands and
batch broadcasting; `einsum` (a primitive whose rules are einsums) and the products built on it,
`tensordot`, `inner`, `outer`, `vdot`, `kron`, and `cross`; NumPy 2's `vecdot` (and, from NumPy
2.2, `matvec` and `vecmat`) as compositions of `matmul` and `sum`, with NumPy's gufunc keywords
(`axes`, `axis`, `keepdims`, `dtype`). The public `einsum`'s value is NumPy's own for the
`optimize` given (False, NumPy's default, or a path); its rules plan their own contractions.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.taylor` (rules), `fgrad.numpy.shaping`,
`fgrad.numpy.elementwise`.
"""

from __future__ import annotations

import functools as _functools
import inspect
import math as _math
import string as _string
from typing import TYPE_CHECKING

import numpy as _np

from .. import batching as _batching, core as _core, taylor as _taylor
from ..core import Primitive, bind, dtype_of
from ..primitive import defbilinear, defprimitive, register_rules
from ._mirror import exported, mirror
from .elementwise import conj, loop_dtypes, multiply
from .shaping import (
    NO_VALUE,
    asarray,
    astype,
    batch_size,
    batch_to_front,
    broadcast_like,
    describe,
    expand_dims,
    is_plain_array,
    is_traced,
    meta,
    moveaxis,
    ndim,
    normalize_axis,
    numpy_applies,
    read_int,
    refuse_layout,
    refuse_out,
    reshape,
    shape,
    stack,
    strongly_typed,
    swapaxes,
    unbroadcast,
    with_example_ndim,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..typing import Array, ArrayLike


def whole_along(x, axes):
    """x with each of `axes` in one chunk when x is a chunked array of another library (Dask's
    FFT, its linear algebra and its gufuncs need a transformed or core axis whole); x itself
    otherwise. The result stays lazy; a gradient gets its input's chunks back at the API
    (`fgrad.protocols.like_input`)."""
    if type(x) is _np.ndarray or not _core.is_foreign_array(x):
        return x
    chunks = getattr(x, "chunks", None)
    if chunks is None:
        return x
    nd = len(chunks)
    axes = [ax % nd for ax in axes]
    if all(len(chunks[ax]) == 1 for ax in axes):
        return x
    return x.rechunk({ax: -1 for ax in axes})


def _matmul_vjp_x(ans, x, y):
    like = meta(x)
    # ndim(y): a NumPy array's own, else len(shape(y)) (a third of ndim's time)
    x_nd, y_nd = len(like[0]), y.ndim if type(y) is _np.ndarray else len(shape(y))
    # y's transpose for the matrix case, made once with the rule (not at each bprop call) where
    # y is a NumPy array, a residual
    y_t = y.swapaxes(-1, -2) if type(y) is _np.ndarray and x_nd > 1 and y_nd > 1 else None
    # two NumPy matrices: ct @ y.T has x's shape, so only its dtype can need unbroadcast
    matrices = y_t is not None and x_nd == 2 and y_nd == 2

    def bprop(ct):
        if matrices and type(ct) is _np.ndarray and _core.watch is None:
            g = _np.matmul(ct, y_t)  # NumPy's own product: all that binding it would do
            return g if g.dtype == like[1] else unbroadcast(g, like)
        if y_nd == 1:  # (..., n) @ (n,) -> (...): the gradient is the outer product
            g = expand_dims(ct, -1) * y
        elif x_nd == 1:  # (n,) @ (..., n, m) -> (..., m)
            g = matmul(y, expand_dims(ct, -1))[..., 0]
        else:
            g = _matmul_of(ct, swapaxes(y, -1, -2) if y_t is None else y_t)
        return unbroadcast(g, like)

    return bprop


def _matmul_vjp_y(ans, x, y):
    like = meta(y)
    x_nd, y_nd = x.ndim if type(x) is _np.ndarray else len(shape(x)), len(like[0])
    # x's transpose for the matrix case, made once with the rule (see `_matmul_vjp_x`)
    x_t = x.swapaxes(-1, -2) if type(x) is _np.ndarray and x_nd > 1 and y_nd > 1 else None
    matrices = x_t is not None and x_nd == 2 and y_nd == 2  # x.T @ ct has y's shape

    def bprop(ct):
        if matrices and type(ct) is _np.ndarray and _core.watch is None:
            g = _np.matmul(x_t, ct)
            return g if g.dtype == like[1] else unbroadcast(g, like)
        if x_nd == 1 and y_nd == 1:
            g = multiply(ct, x)  # not `ct * x`: x may be a list, and ct a NumPy scalar
        elif y_nd == 1 and x_nd == 2:
            # (k, n) @ (n,) -> (k,): ct @ x, one operation where the general case below takes
            # three (jacrev of a matrix-vector product records and replays each of them);
            # NumPy computes both the same way (a vector times a matrix), to the last bit.
            g = matmul(ct, x)
        elif y_nd == 1:  # (..., k, n) @ (n,) -> (..., k)
            g = matmul(expand_dims(ct, -2), x)[..., 0, :]
        elif x_nd == 1:  # (n,) @ (..., n, m) -> (..., m)
            g = expand_dims(x, -1) * expand_dims(ct, -2)
        else:
            g = _matmul_of(swapaxes(x, -1, -2) if x_t is None else x_t, ct)
        return unbroadcast(g, like)

    return bprop


def _matmul_of(a, b):
    """matmul(a, b) in a bprop: of two plain arrays (a first derivative's), NumPy's own, which
    is all that binding them would do (see `is_plain_array`)."""
    if _core.watch is None and is_plain_array(a) and is_plain_array(b):
        return _np.matmul(a, b)
    return matmul(a, b)


def _matmul_batch(args, dims):
    """The rows' products as few and as large matrix products as NumPy can take. Rows times an
    unbatched matrix fold every row's matrix rows into one matrix (`(B, 1, k) @ (k, n)` is
    one `(B, k) @ (k, n)`: NumPy multiplies a stack one matrix at a time, three times slower).
    A unit contraction (`(m, 1) @ (1, n)`, the outer products of a transpose) is a product
    with broadcasting. Otherwise vectors become matrices (a row on the left, a column on the
    right), the batch axes go first and every batched operand gets as many axes per row as
    the longest, so that matmul's own broadcasting over leading axes pairs the rows; the added
    axes are squeezed out after."""
    (x, y), (dx, dy) = args, dims
    x_nd = ndim(x) - (dx is not None)
    y_nd = ndim(y) - (dy is not None)
    if dx is not None:
        x = batch_to_front(x, dx)
    if dy is not None:
        y = batch_to_front(y, dy)
    if dy is None and y_nd <= 2:  # rows @ y: one product for all rows
        x_shape = shape(x)
        if len(x_shape) <= 2:
            return matmul(x, y), 0
        # (the row count spelled out: -1 cannot stand for it when k is 0)
        rows = matmul(reshape(x, (_math.prod(x_shape[:-1]), x_shape[-1])), y)
        return reshape(rows, x_shape[:-1] + shape(y)[1:]), 0
    if dx is None and dy is not None and x_nd == 2 and y_nd <= 2:
        y_shape = shape(y)
        if y_nd == 1 or y_shape[-1] == 1:
            # x @ (column rows): the rows times x transposed, one matrix product (matmul of
            # x with a stack of columns would be one matrix-vector product per row). (A
            # wider stack would first have to be copied into one matrix: that costs more
            # than NumPy's product of one matrix at a time.)
            cols = y if y_nd == 1 else reshape(y, y_shape[:-1])
            out = matmul(cols, swapaxes(x, -1, -2))
            return (out if y_nd == 1 else expand_dims(out, -1)), 0
    if x_nd == 1:
        x = expand_dims(x, -2)
    if y_nd == 1:
        y = expand_dims(y, -1)
    nd = max(x_nd, y_nd, 2)
    if dx is not None:
        x = with_example_ndim(x, 0, nd)
    if dy is not None:
        y = with_example_ndim(y, 0, nd)
    real = dtype_of(x).kind != "c" and dtype_of(y).kind != "c"
    if shape(x)[-1] == 1 and shape(y)[-2] == 1 and real:
        # a sum of one product is that product: (m, 1) * (1, n) broadcasts to (m, n) as the
        # leading axes do in matmul, and NumPy's elementwise loop is 1.5x faster than its
        # stack of rank-one matrix products. (Not for complex operands: NumPy's complex
        # multiply rounds otherwise than its BLAS products, in 4 of 10 products' last bits.)
        out = multiply(x, y)
    else:
        out = matmul(x, y)
    if x_nd == 1 or y_nd == 1:
        s = shape(out)
        drop = {len(s) - 2} if x_nd == 1 else set()
        drop |= {len(s) - 1} if y_nd == 1 else set()
        out = reshape(out, tuple(n for i, n in enumerate(s) if i not in drop))
    return out, 0


def refuse_unfit(x1, x2):
    """Raise fgrad's error for the operands of `matmul` (`x1 @ x2`) if their shapes do not fit,
    in place of NumPy's gufunc text, which names neither shape; return if they fit (the error
    being handled was another). Called on the failure path only, with the operands as the
    caller sees them (under `vmap`, one row's). An operand whose shape or dtype cannot be read
    (its own `__array__` raised) returns: the error being handled is that one."""
    try:
        s1, s2 = shape(x1), shape(x2)
        operands = f"x1 (the left operand: {describe(x1)}) and x2 (the right: {describe(x2)})"
    except Exception:
        return
    if not s1 or not s2:
        raise ValueError(
            f"matmul: {operands}: a matrix product takes operands of at least one axis; "
            "for a product with a scalar use * (fgrad.numpy.multiply)"
        ) from None
    k1 = s1[-1]
    k2, which = (s2[-2], "second-to-last") if len(s2) > 1 else (s2[0], "only")
    if k1 != k2:
        raise ValueError(
            f"matmul: {operands} do not fit: x1's last axis has length {k1} and x2's {which} "
            f"axis {k2}; these axes are summed, so their lengths must be equal: transpose or "
            "reshape an operand first (x1.T, x2.T), or name the summed axes with "
            "fgrad.numpy.tensordot or einsum"
        ) from None
    try:
        _np.broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: {operands} do not fit: their leading (stacked) axes {s1[:-2]} and "
            f"{s2[:-2]} do not broadcast; each length must be equal or 1 (add an axis of "
            "length 1 with x[None] or fgrad.numpy.expand_dims)"
        ) from None


class _Product(Primitive):
    """matmul's primitive: a call on operands that do not fit raises fgrad's error
    (`refuse_unfit`). The call is `Primitive.__call__`'s, inside a `try` (free until it
    raises); `x @ y` on a traced value catches the same way (`fgrad.numpy._box`)."""

    __slots__ = ()

    def __call__(self, *args: Any, **params: Any) -> Any:
        try:
            if params:
                return Primitive.__call__(self, *args, **params)
            return bind(self, args, params)
        except ValueError:
            if len(args) == 2:
                refuse_unfit(*args)
            raise


# Sparsity detection (`fgrad.sparsity`): products contract, each output element depending on
# the factors' elements it multiplies that may be nonzero ("matmul", "einsum", "gufunc").
matmul: Primitive = mirror("gufunc")(
    _Product(
        "matmul",
        _np.matmul,
        vjps=(_matmul_vjp_x, _matmul_vjp_y),
        jvps=(lambda t, ans, x, y: matmul(t, y), lambda t, ans, x, y: matmul(x, t)),
    )
)
register_rules(
    matmul,
    batch=_matmul_batch,
    taylor=_taylor.bilinear_rule(matmul),
    forward="linear",
    sparsity="matmul",
)


@mirror("function")
def dot(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    """NumPy's `dot`: a product with a scalar, `matmul` up to 2-D, and for N-D the sum over
    the last axis of `a` and the second-to-last of `b`. `out=` is NumPy's on plain arrays
    (written into, and returned), and refused where a value is traced."""
    if out is not None:
        if numpy_applies(a, b, out):
            return _np.dot(a, b, out=out)
        refuse_out(out, "dot")
    a_nd, b_nd = ndim(a), ndim(b)
    if a_nd == 0 or b_nd == 0:
        return _scalar_dot(strongly_typed(a), strongly_typed(b))
    if b_nd <= 2:
        try:
            return matmul(a, b)
        except ValueError:
            _aligned(a, b, "dot")  # a mismatch named for dot, not matmul; else matmul's error
            raise
    # N-D: move b's contracted axis to the front, flatten both sides, one matmul, then restore.
    _aligned(a, b, "dot")
    a_shape, b_shape = shape(a), shape(b)
    n = a_shape[-1]
    moved_b_rest = b_shape[:-2] + b_shape[-1:]
    # (the lengths spelled out: -1 cannot stand for one when n, summed over, is 0)
    a2 = reshape(a, (_math.prod(a_shape[:-1]), n))
    b2 = reshape(moveaxis(b, -2, 0), (n, _math.prod(moved_b_rest)))
    return reshape(matmul(a2, b2), a_shape[:-1] + moved_b_rest)


def _scalar_dot_vjp(other_first):
    def make(ans, x, y):
        like, other = (meta(x), y) if other_first else (meta(y), x)
        return lambda ct: unbroadcast(multiply(ct, other), like)

    return make


# `dot` (and `inner`) with a 0-d operand: NumPy's own product, whose bits are not the multiply
# ufunc's: BLAS's axpy onto zeros (complex products round otherwise, and -0.0 becomes 0.0), or
# for two single values its own complex product, as NumPy's scalar `*`. Its rules are those of
# an elementwise product; under `vmap` each row is NumPy's dot of that row, as the loop's.
def _dot_with_0d(a, b):
    if _core.is_foreign_array(a) or _core.is_foreign_array(b):
        return _np.multiply(a, b)  # another library's (Dask's) lazy product: it has no such dot
    return _np.dot(a, b)


def _scalar_dot_batch(args, dims):
    """The rows' `dot` with a 0-d operand. For real floats of 32 and 64 bits, integers and
    bools, NumPy's is the elementwise product (one rounding), with -0.0 made 0.0 where the
    row has axes (BLAS's axpy adds the products to zeros): the product plus 0, vectorized,
    bit for bit the rows' (checked on 2,000 random pairs with zeros of both signs). Complex
    and float16 products round otherwise: one row at a time."""
    (a, b), (da, db) = args, dims
    rows = [ndim(v) - (d is not None) for v, d in zip(args, dims)]
    dtype = _np.result_type(dtype_of(a), dtype_of(b))
    if dtype.kind == "c" or dtype == _np.float16 or dtype.kind not in "fiub":
        return _batching.rows_one_by_one(
            _scalar_dot, args, dims, {}, batch_size(args, dims), _DOT_ROWS_ONE_BY_ONE
        )
    # the batch axis first, and the 0-d row's operand given the other row's axes (length 1)
    a = a if da is None else expand_dims(batch_to_front(a, da), tuple(range(1, 1 + rows[1])))
    b = b if db is None else expand_dims(batch_to_front(b, db), tuple(range(1, 1 + rows[0])))
    product = multiply(a, b)
    if max(rows) > 0 and dtype.kind == "f":
        product = product + _np.zeros((), dtype)
    return product, 0


_DOT_ROWS_ONE_BY_ONE = (
    "dot with a 0-d operand, complex or float16: NumPy's own product (BLAS's axpy, or its "
    "scalar product) rounds otherwise than a batched elementwise product"
)


_scalar_dot = defbilinear(
    _dot_with_0d,
    (_scalar_dot_vjp(True), _scalar_dot_vjp(False)),
    name="dot",
    batch=_scalar_dot_batch,
    sparsity="elementwise",
)


def _aligned(a, b, who):
    """NumPy's check of dot (its mismatch named for `who`): the last axis of a is summed with
    the last of b (1-D) or its second-to-last."""
    a_shape, b_shape = shape(a), shape(b)
    k = len(b_shape) - 2 if len(b_shape) > 1 else 0
    if a_shape[-1] != b_shape[k]:
        raise ValueError(
            f"{who}: shapes {a_shape} and {b_shape} not aligned: {a_shape[-1]} (dim "
            f"{len(a_shape) - 1}) != {b_shape[k]} (dim {k}); a ({describe(a)}) and b "
            f"({describe(b)}) must have equal lengths on these axes, which are summed: "
            "transpose or reshape an operand first"
        )


def conj_if_complex(x):
    """conj(x) for complex x; a real x as it is (no extra operation to differentiate)."""
    return conj(x) if dtype_of(x).kind == "c" else x


# --- einsum: one primitive whose every rule is another einsum -------------------------------------
#
# The public `einsum` rewrites its subscripts into an explicit form with one letter per axis
# ('...' spelled out, the implicit output made explicit), so the primitive and its rules only
# ever see "ab,bc->ac". The cotangent of operand i is the einsum of the output's cotangent
# with the other operands, into operand i's letters; two things need constants there:
# a letter repeated in operand i (a trace or a diagonal, "ii->") gets a fresh letter tied to
# the first by an identity matrix, and a letter summed away in operand i alone ("ij->i") is
# broadcast back by a vector of ones. Axes of length 1 that broadcast are summed back by
# `unbroadcast`.

_EINSUM_LETTERS = _string.ascii_uppercase + _string.ascii_lowercase  # NumPy's sublist order

# NumPy's einsum takes at most 64 operands: one vjp/jvp maker per position.
_EINSUM_MAX_OPERANDS = 64

# Below this many multiply-adds (the product of every letter's length) the plain C loop is
# faster than planning a contraction order and calling BLAS; above it, planning pays.
_EINSUM_PLAN_ABOVE = 4096


@_functools.lru_cache(maxsize=1024)
def _einsum_plan(subscripts, shapes):
    """Contraction order (a NumPy einsum_path) or False for the plain loop, per call site."""
    terms, _ = subscripts.split("->")
    sizes = {}
    for term, s in zip(terms.split(","), shapes):
        for c, n in zip(term, s):
            sizes[c] = max(sizes.get(c, 1), n)
    cost = int(_np.prod(list(sizes.values()), dtype=_np.float64))
    if len(shapes) < 2 or cost <= _EINSUM_PLAN_ABOVE:
        return False
    operands = [_np.empty(s) for s in shapes]  # einsum_path reads only shapes
    return _np.einsum_path(subscripts, *operands, optimize="greedy")[0]


def _einsum_impl(*operands, subscripts, optimize=None):
    """NumPy's einsum with the user's `optimize` (the public `einsum`), or with fgrad's own
    plan (None: the rules and the products built on einsum)."""
    if optimize is None:
        optimize = _einsum_plan(subscripts, tuple(_np.shape(x) for x in operands))
    return _np.einsum(subscripts, *operands, optimize=optimize)


def _einsum_vjp(i):
    def maker(ans, *operands, subscripts, optimize=None):
        terms, out = subscripts.split("->")
        terms = terms.split(",")
        like = meta(operands[i])
        term, x_shape = terms[i], like[0]
        others = operands[:i] + operands[i + 1 :]
        other_terms = terms[:i] + terms[i + 1 :]
        fresh = iter(c for c in _EINSUM_LETTERS if c not in subscripts)
        target, eyes, eye_terms = [], [], []
        for ax, c in enumerate(term):
            if c in target:  # a repeated letter: a fresh one, tied to it by an identity
                f = next(fresh)
                target.append(f)
                eyes.append(x_shape[ax])
                eye_terms.append(c + f)
            else:
                target.append(c)
        # each letter's length where the cotangent's einsum reads it: in the output, the other
        # operands and the identities (a letter absent from them all has none)
        sizes: dict[str, int] = {}
        for t, t_shape in zip(
            [out, *other_terms, *eye_terms],
            [shape(ans), *map(shape, others), *((n, n) for n in eyes)],
        ):
            for c, n in zip(t, t_shape):
                sizes[c] = max(sizes.get(c, 1), n)
        # a letter absent there, or only of length 1 (x's axis broadcast against them, x's
        # of any length, 0 included), is broadcast back to x's length by a vector of ones
        ones = [
            (c, x_shape[term.index(c)])
            for c in dict.fromkeys(term)
            if c not in sizes or (sizes[c] == 1 and x_shape[term.index(c)] != 1)
        ]
        g_subscripts = (
            ",".join([out, *other_terms, *eye_terms, *(c for c, _ in ones)])
            + "->"
            + "".join(target)
        )

        def bprop(ct):
            dtype = dtype_of(ct)
            consts = [_np.eye(n, dtype=dtype) for n in eyes]
            consts += [_np.ones(n, dtype=dtype) for _, n in ones]
            g = _einsum_p(ct, *others, *consts, subscripts=g_subscripts)
            return unbroadcast(g, like)

        return bprop

    return maker


def _einsum_jvp(i):
    def rule(t, ans, *operands, subscripts, optimize=None):
        args = operands[:i] + (t,) + operands[i + 1 :]
        return broadcast_like(_einsum_p(*args, subscripts=subscripts), ans)

    return rule


def _einsum_batch(args, dims, subscripts, optimize=None):
    """The batch axis gets a letter of its own, kept in the output's first place. NumPy's
    plain einsum loop (`optimize=False`, the public einsum's default, kept for its value) is
    planned here like the rules' einsums: a batch is where planning pays, where "bi,ij->bj"
    becomes one BLAS product, as `x @ W` would (5x faster at 128 x 784 x 100); the rows'
    values then agree with a loop to round-off, as every batched product does."""
    terms, out = subscripts.split("->")
    terms = terms.split(",")
    letter = next(c for c in _EINSUM_LETTERS if c not in subscripts)
    terms = [t if d is None else t[:d] + letter + t[d:] for t, d in zip(terms, dims)]
    batched = ",".join(terms) + "->" + letter + out
    if optimize is False:
        optimize = None
    return _einsum_p(*args, subscripts=batched, optimize=optimize), 0


@_taylor.declared("linear")
def _einsum_taylor(primals, series, **params):
    """einsum is linear in each operand: coefficient k of the output is the sum, over the ways
    of splitting k among the operands with a series, of the einsum of their coefficients of
    those orders (the other operands as they are). With one or two such operands (a linear map,
    a product) that is quadratic in the order."""
    ans = bind(_einsum_p, primals, params)
    moving = [i for i, s in enumerate(series) if s is not None]
    order = len(series[moving[0]])
    paths = {i: _taylor.full(primals[i], series[i], order) for i in moving}
    out = []
    for k in range(1, order + 1):
        total = None
        for split in _compositions(k, len(moving)):
            args = list(primals)
            for i, j in zip(moving, split):
                args[i] = paths[i][j]
            if all(a is not None for a in args):
                total = _taylor.add(total, bind(_einsum_p, args, params))
        out.append(total)
    return ans, tuple(out)


def _compositions(k, n):
    """The n-tuples of non-negative integers that sum to k."""
    if n == 1:
        yield (k,)
        return
    for first in range(k + 1):
        for rest in _compositions(k - first, n - 1):
            yield (first, *rest)


_einsum_p = defprimitive(
    _einsum_impl,
    vjp=tuple(_einsum_vjp(i) for i in range(_EINSUM_MAX_OPERANDS)),
    jvp=tuple(_einsum_jvp(i) for i in range(_EINSUM_MAX_OPERANDS)),
    name="einsum",
    batch=_einsum_batch,
    taylor=_einsum_taylor,
    forward="linear",
    sparsity="einsum",
)


def _sublist_term(sublist):
    out = []
    for s in map(read_int, sublist):  # (a traced int, a `jit` argument: its value, guarded)
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, (int, _np.integer)) and 0 <= s < len(_EINSUM_LETTERS):
            out.append(_EINSUM_LETTERS[int(s)])
        else:
            raise ValueError(
                f"einsum: a subscript in a sublist must be an int in [0, 52) or Ellipsis, got {s!r}"
            )
    return "".join(out)


def _einsum_explicit(subscripts, ndims, sum_ellipsis):
    """`subscripts` with '...' spelled out in letters and the output made explicit. An output
    without '...' sums the axes '...' covers if `sum_ellipsis` (NumPy's Python parser, which
    its einsum takes for any `optimize` but False), and is refused otherwise (its C parser)."""
    s = subscripts.replace(" ", "")
    bad = set(s) - set(_EINSUM_LETTERS) - set(".,->")
    if bad:
        raise ValueError(
            f"einsum: subscripts {subscripts!r} contain {sorted(bad)}; use letters a-z, A-Z"
        )
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    ins, out = s.split("->") if "->" in s else (s, None)
    terms = ins.split(",")
    if len(terms) != len(ndims):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(terms)} operands but {len(ndims)} "
            "were given"
        )
    n_ell = []
    for k, (term, nd) in enumerate(zip(terms, ndims)):
        if (
            term.count("...") > 1
            or term.replace("...", "").count(".")
            or ("..." not in term and "." in term)
        ):
            raise ValueError(f"einsum: operand {k}'s subscripts {term!r} have a misplaced '.'")
        named = len(term.replace("...", ""))
        extra = nd - named
        if extra < 0 or (extra > 0 and "..." not in term):
            raise ValueError(
                f"einsum: operand {k} has {nd} dimensions but its subscripts {term!r} name {named}"
            )
        n_ell.append(extra if "..." in term else 0)
    n = max(n_ell, default=0)
    used = set(s)
    free = [c for c in _EINSUM_LETTERS if c not in used]
    if n > len(free):
        raise ValueError(
            f"einsum: too many axes for the 52 letters of the subscripts {subscripts!r}"
        )
    ell = "".join(free[:n])
    letters = [t.replace("...", "") for t in terms]
    terms = [t.replace("...", ell[n - k :] if k else "") for t, k in zip(terms, n_ell)]
    if out is None:
        counts = {}
        for c in "".join(letters):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, m in counts.items() if m == 1))
    elif "..." in out:
        out = out.replace("...", ell)
    elif n > 0 and not sum_ellipsis:
        raise ValueError(
            f"einsum: the operands' '...' covers {n} axes but the output {out!r} has no '...'; "
            "write '...' in the output to keep them, or pass optimize=True to sum them "
            "(NumPy's einsum sums them with optimize, and refuses without, its default)"
        )
    return ",".join(terms) + "->" + out


@mirror("function")
def einsum(
    *operands: Any, out: None = None, optimize: bool | str | list[Any] = False, **kwargs: Any
) -> Array:
    """NumPy's `einsum`: explicit or implicit output, '...', repeated letters (traces and
    diagonals), any number of operands, and the sublist form `einsum(a, [0, 1], b, [1, 2])`.
    `optimize` is NumPy's (False by default, so the value is NumPy's own; pass True for large
    contractions, which then run through BLAS), as are the keywords `dtype` and `casting`
    ('safe' by default, as in NumPy). The gradient of each operand is another einsum.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> float(fnp.einsum("ii->", np.eye(3)))
    3.0
    """
    unknown = set(kwargs) - {"dtype", "order", "casting"}
    if unknown:
        raise TypeError(
            f"einsum() got unexpected keyword arguments {sorted(unknown)}; NumPy's "
            "einsum takes out, optimize, dtype, order and casting"
        )
    if out is not None:  # NumPy's on plain arrays (written into, and returned)
        if numpy_applies(*operands, out):
            return _np.einsum(*operands, out=out, optimize=optimize, **kwargs)
        refuse_out(out, "einsum")
    if not operands:
        raise ValueError("einsum: no subscripts and no operands given")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:  # the sublist form: op0, sublist0, op1, sublist1, ..., [sublist_out]
        ops = list(operands[0::2][: len(operands) // 2])
        subs = [_sublist_term(sl) for sl in operands[1::2][: len(operands) // 2]]
        subscripts = ",".join(subs)
        if len(operands) % 2:
            subscripts += "->" + _sublist_term(operands[-1])
    if any(is_traced(x) for x in ops):
        refuse_layout("einsum", order=(kwargs.get("order", "K"), "K"))
    elif kwargs:
        return _np.einsum(subscripts, *ops, optimize=optimize, **kwargs)
    explicit = _einsum_explicit(subscripts, [ndim(x) for x in ops], optimize is not False)
    dtype = kwargs.get("dtype")
    terms, kept = explicit.split("->")
    if dtype is not None and not (len(ops) == 1 and set(terms) <= set(kept)):
        # (NumPy returns one operand whose every axis is kept, "ii->i" or "ij->ji", as a
        # view of it, ignoring dtype and casting: so does fgrad, to keep NumPy's value.)
        dtype, casting = _np.dtype(dtype), kwargs.get("casting", "safe")
        for x in ops:
            x_dtype = dtype_of(x)
            if not _np.can_cast(x_dtype, dtype, casting):
                raise TypeError(
                    f"einsum: cannot cast an operand from {x_dtype!r} to "
                    f"{dtype!r} according to the rule {casting!r}"
                )
        ops = [astype(asarray(x), dtype) for x in ops]
    return _einsum_p(*ops, subscripts=explicit, optimize=optimize)


# --- products built on einsum ---------------------------------------------------------------------


@mirror("function")
def tensordot(a: ArrayLike, b: ArrayLike, axes: int | Sequence[int | Sequence[int]] = 2) -> Array:
    """NumPy's `tensordot`: `axes` is an int N (the last N axes of `a` with the first N of `b`)
    or a pair of axis sequences. Paired axes must have equal lengths (they do not broadcast)."""
    a_nd, b_nd = ndim(a), ndim(b)
    axes = read_int(axes)  # (a traced int, a `jit` argument: its value, guarded)
    if isinstance(axes, (int, _np.integer)):
        n = int(axes)
        if n < 0 or n > min(a_nd, b_nd):
            raise ValueError(
                f"tensordot: axes={n} needs both operands to have at least {n} dimensions; "
                f"they have {a_nd} and {b_nd}"
            )
        a_axes, b_axes = list(range(a_nd - n, a_nd)), list(range(n))
    else:
        try:
            first, second = axes
        except (TypeError, ValueError):
            raise ValueError(
                f"tensordot: axes must be an int or a pair of sequences, got {axes!r}"
            ) from None
        first, second = read_int(first), read_int(second)
        a_axes = [first] if isinstance(first, (int, _np.integer)) else list(first)
        b_axes = [second] if isinstance(second, (int, _np.integer)) else list(second)
        if len(a_axes) != len(b_axes):
            raise ValueError(f"tensordot: axes {axes!r} pair {len(a_axes)} axes with {len(b_axes)}")
        a_axes = [normalize_axis(int(x), a_nd, "tensordot", "axes[0]") for x in a_axes]
        b_axes = [normalize_axis(int(x), b_nd, "tensordot", "axes[1]") for x in b_axes]
        _distinct_axes(a_axes, a, "axes[0]", "a", axes)
        _distinct_axes(b_axes, b, "axes[1]", "b", axes)
    return _contract(a, b, a_axes, b_axes, "tensordot")


def _distinct_axes(axes, x, keyword, name, given):
    """NumPy's (and JAX's) refusal of an axis summed twice: einsum would read the repeated
    letter as a diagonal, a plausible number for an invalid call."""
    seen = set()
    for ax in axes:
        if ax in seen:
            raise ValueError(
                f"tensordot: axes={given!r} repeats axis {ax} of {name} ({describe(x)}) in "
                f"{keyword}; each axis can be summed once (duplicate axes are not allowed in "
                "tensordot). To pair a diagonal, use einsum with a repeated letter, e.g. "
                "einsum('aa,ab->b', a, b)"
            )
        seen.add(ax)


def _contract(a, b, a_axes, b_axes, who):
    """The sum over a's `a_axes` paired with b's `b_axes` (non-negative), the remaining axes of
    a then those of b, as one einsum. The paired lengths must be equal, as in NumPy (einsum
    alone would broadcast a length 1 against any other, silently)."""
    a_shape, b_shape = shape(a), shape(b)
    for i, j in zip(a_axes, b_axes):
        if a_shape[i] != b_shape[j]:
            raise ValueError(
                f"{who}: shape-mismatch for sum: axis {i} of a ({describe(a)}) has length "
                f"{a_shape[i]} but axis {j} of b ({describe(b)}), which it is summed with, has "
                f"length {b_shape[j]}; the contracted axes must have equal lengths (they do not "
                "broadcast): transpose, slice or broadcast an operand first"
            )
    letters = iter(_EINSUM_LETTERS)
    a_term = [next(letters) for _ in range(len(a_shape))]
    b_term = [next(letters) for _ in range(len(b_shape))]
    for i, j in zip(a_axes, b_axes):
        b_term[j] = a_term[i]
    out = [c for k, c in enumerate(a_term) if k not in a_axes]
    out += [c for k, c in enumerate(b_term) if k not in b_axes]
    return _einsum_p(a, b, subscripts="".join(a_term) + "," + "".join(b_term) + "->" + "".join(out))


@mirror("function")
def inner(a: ArrayLike, b: ArrayLike, /) -> Array:
    """NumPy's `inner`: the sum over the last axes; a scalar operand multiplies."""
    a_nd, b_nd = ndim(a), ndim(b)
    if a_nd == 0 or b_nd == 0:
        return _scalar_dot(strongly_typed(a), strongly_typed(b))  # NumPy's inner is its dot here
    if a_nd == 1 and b_nd == 1 and shape(a) == shape(b):
        return matmul(a, b)  # NumPy's dot of two vectors, summed in BLAS's order as `dot`'s
    return _contract(a, b, [a_nd - 1], [b_nd - 1], "inner")


@mirror("function")
def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    """NumPy's `outer`: both operands are flattened; out[i, j] = a[i] * b[j]. `out=` is
    NumPy's on plain arrays, and refused where a value is traced."""
    if out is not None:
        if numpy_applies(a, b, out):
            return _np.outer(a, b, out=out)
        refuse_out(out, "outer")
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


@mirror("function")
def vdot(a: ArrayLike, b: ArrayLike, /) -> Array:
    """NumPy's `vdot`: the dot product of the flattened operands, conjugating `a` if complex."""
    a, b = reshape(conj_if_complex(a), (-1,)), reshape(b, (-1,))
    if shape(a) != shape(b):
        raise ValueError(
            f"vdot: the operands have {shape(a)[0]} and {shape(b)[0]} elements; "
            "they need the same number"
        )
    # NumPy's dot of the two vectors (BLAS's, summed in its order, as `dot`'s): einsum's sum
    # has other last bits; conjugating a first is exact, as BLAS's conjugated dot
    return matmul(a, b)


@mirror("function")
def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """NumPy's `kron`: the Kronecker product, as one broadcast product and a reshape."""
    a_shape, b_shape = shape(a), shape(b)
    nd = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (nd - len(a_shape)) + tuple(a_shape)
    b_shape = (1,) * (nd - len(b_shape)) + tuple(b_shape)
    # out[(i0, k0), (i1, k1), ...] = a[i0, i1, ...] * b[k0, k1, ...], interleaved then merged
    a_spread = reshape(a, tuple(n for m in a_shape for n in (m, 1)))
    b_spread = reshape(b, tuple(n for m in b_shape for n in (1, m)))
    return reshape(multiply(a_spread, b_spread), tuple(m * n for m, n in zip(a_shape, b_shape)))


@mirror("function")
def cross(
    a: ArrayLike,
    b: ArrayLike,
    axisa: int = -1,
    axisb: int = -1,
    axisc: int = -1,
    axis: int | None = None,
) -> Array:
    """NumPy's `cross` of 3-vectors (and of 2-vectors, taken with a zero third component; two
    2-vectors give the scalar z component), with NumPy's axis arguments and broadcasting."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = asarray(a), asarray(b)
    a = moveaxis(a, normalize_axis(axisa, ndim(a), "cross", "axisa"), -1)
    b = moveaxis(b, normalize_axis(axisb, ndim(b), "cross", "axisb"), -1)
    na, nb = shape(a)[-1], shape(b)[-1]
    for name, n, x in (("a", na, a), ("b", nb, b)):
        if n not in (2, 3):
            raise ValueError(
                f"cross: the vectors of {name} (shape {shape(x)} after moving the vector axis "
                f"last) have {n} components; they need 2 or 3"
            )
    a0, a1, a2 = a[..., 0], a[..., 1], (a[..., 2] if na == 3 else None)
    b0, b1, b2 = b[..., 0], b[..., 1], (b[..., 2] if nb == 3 else None)
    z = multiply(a0, b1) - multiply(a1, b0)
    if na == 2 and nb == 2:
        return z
    # A missing third component is a structural zero: its products are left out, not computed.
    if a2 is None:
        x, y = multiply(a1, b2), -multiply(a0, b2)
    elif b2 is None:
        x, y = -multiply(a2, b1), multiply(a2, b0)
    else:
        x, y = multiply(a1, b2) - multiply(a2, b1), multiply(a2, b0) - multiply(a0, b2)
    out = stack([x, y, z], axis=-1)
    return moveaxis(out, -1, normalize_axis(axisc, ndim(out), "cross", "axisc"))


# --- NumPy 2's vector products (ufuncs there; compositions of matmul and sum here) ----------------


def _same_length(n1, n2, name):
    if n1 != n2:
        raise ValueError(
            f"{name}: the contracted axes have lengths {n1} and {n2}; they must "
            "be equal (they do not broadcast)"
        )


# --- NumPy 2's generalized ufuncs: core axes chosen by `axes`, `axis`, `keepdims` -----------------


def _gufunc(theirs, compute, cores, out_core, args, out, keywords):
    """`compute` (which takes each operand's core axes last, and gives the output's last) with
    NumPy's gufunc keywords (`keywords`: each of `_GUFUNC_SIGNATURE`'s, by name). Plain
    operands get NumPy's own gufunc with every keyword."""
    name = theirs.__name__
    # (another library's operands take fgrad's path: Dask's gufuncs need whole core axes)
    if numpy_applies(*args, out):  # (`out=` too: NumPy's writes into it, and returns it)
        defaults = dict(keepdims=False, casting="same_kind", order="K", subok=True)
        return theirs(
            *args,
            **({} if out is None else {"out": out}),
            **{
                k: v
                for k, v in keywords.items()
                if v is not NO_VALUE and v is not None and not (k in defaults and v is defaults[k])
            },
        )
    refuse_out(out, name)
    axes, axis, keepdims = keywords["axes"], keywords["axis"], keywords["keepdims"]
    casting, order, dtype = keywords["casting"], keywords["order"], keywords["dtype"]
    subok, signature = keywords["subok"], keywords["signature"]
    refuse_layout(name, order=(order, "K"), subok=(subok, True))
    if dtype is not None or signature is not None or casting != "same_kind":
        loop = loop_dtypes(theirs, [dtype_of(x) for x in args], dtype, signature, casting)
        args = [astype(asarray(x), dt) for x, dt in zip(args, loop)]
    args = [asarray(x) for x in args]
    if axis is not NO_VALUE:
        if axes is not NO_VALUE:
            raise TypeError(f"{name}: cannot specify both 'axis' and 'axes'")
        if any(c != 1 for c in cores) or out_core:
            raise TypeError(
                f"{name}: 'axis' can be used only with a single shared core dimension; use 'axes'"
            )
        axes = [(axis,)] * len(args) + ([(axis,)] if keepdims else [])
    if keepdims and (len(set(cores)) != 1 or out_core):
        raise TypeError(
            f"{name}: 'keepdims' can be used only when every input has the same "
            "number of core dimensions and the output has none"
        )
    k_out = cores[0] if keepdims else out_core
    last = [tuple(range(-k, 0)) for k in (*cores, k_out)]
    if axes is NO_VALUE:
        axes = last
    else:
        axes = [(a,) if isinstance(a, (int, _np.integer)) else tuple(a) for a in axes]
        if len(axes) == len(args):
            axes.append(last[-1])
        if [len(a) for a in axes] != [len(a) for a in last]:
            raise ValueError(
                f"{name}: axes={axes!r} must give {list(cores) + [k_out]} core "
                "axes for the operands and the output"
            )
    for i, (x, core) in enumerate(zip(args, cores)):
        if ndim(x) < core:
            raise ValueError(
                f"{name}: operand {i} needs at least {core} dimensions, got shape {shape(x)}"
            )
    keyword = "axes" if axis is NO_VALUE else "axis"
    args = [
        moveaxis(x, _axes_of(x, a, name, keyword), t) if a != t else x
        for x, a, t in zip(args, axes, last)
    ]
    res = compute(*args)
    if keepdims:
        res = reshape(res, shape(res) + (1,) * k_out)
    if axes[-1] == last[-1]:
        return res
    return moveaxis(res, last[-1], _axes_of(res, axes[-1], name, keyword))


def _axes_of(x, axes, who, keyword):
    """`axes` of x, each in [0, ndim(x)): NumPy's AxisError for one out of bounds (a gufunc of
    NumPy's raises it for a plain array; the traced one must too)."""
    nd = ndim(x)
    return tuple(normalize_axis(int(ax), nd, who, keyword) for ax in axes)


def _whole_cores(x1, k1, x2, k2):
    """The operands of a gufunc with k1 and k2 core axes (the last ones), each core axis in
    one chunk for an array of another library (Dask's gufuncs refuse a chunked core axis)."""
    if type(x1) is _np.ndarray and type(x2) is _np.ndarray:
        return x1, x2
    return whole_along(x1, range(-k1, 0)), whole_along(x2, range(-k2, 0))


# `vmap`'s rule of a generalized ufunc, made for each of vecdot, matvec and vecmat below (and
# signal's full convolution), each registered beside its primitive.
def gufunc_batch_rule(prim, core_ndims):
    """The batching rule of a generalized ufunc whose operands have `core_ndims` core axes: the
    batch axes go first, and every batched operand gets length-1 loop axes up to the longest
    loop shape, so that the gufunc's broadcasting over loop axes pairs the rows."""

    def rule(args, dims, **params):
        loops = max(ndim(a) - (d is not None) - c for a, d, c in zip(args, dims, core_ndims))
        aligned = [
            a if d is None else with_example_ndim(a, d, loops + c)
            for a, d, c in zip(args, dims, core_ndims)
        ]
        return bind(prim, aligned, params), 0

    return rule


# The three as primitives whose value is NumPy's own gufunc (core axes last; `_gufunc` moves
# them there), so a traced value is the untraced one bit for bit (a product and a sum would
# round differently). Each is linear in each input (vecdot and vecmat conjugate x1, so they
# are real-linear in it): the forward rules are the primitive with an input replaced by its
# tangent, and the reverse rules are written here in fgrad operations.


def _sesquilinear_vjp_x1(product):
    """The cotangent of x1 of `product(x1, x2)` = sum(conj(x1) * x2) over the core: the
    conjugate of what the product pairs x1 with (JAX's convention for conj)."""

    def maker(ans, x1, x2):
        like = meta(x1)
        return lambda ct: unbroadcast(conj_if_complex(product(ct, x2)), like)

    return maker


_vecdot_p = defbilinear(
    lambda x1, x2: _np.vecdot(*_whole_cores(x1, 1, x2, 1)),
    (
        _sesquilinear_vjp_x1(lambda ct, x2: expand_dims(ct, -1) * x2),
        lambda ans, x1, x2: _unbroadcast_to(
            x2, lambda ct: expand_dims(ct, -1) * conj_if_complex(x1)
        ),
    ),
    name="vecdot",
    sparsity=("gufunc", (1, 1), "j,j->"),
)
register_rules(_vecdot_p, batch=gufunc_batch_rule(_vecdot_p, (1, 1)))

if hasattr(_np, "matvec"):  # NumPy >= 2.2
    _matvec_p = defbilinear(
        lambda a, v: _np.matvec(*_whole_cores(a, 2, v, 1)),
        (
            lambda ans, a, v: _unbroadcast_to(
                a, lambda ct: expand_dims(ct, -1) * expand_dims(v, -2)
            ),
            lambda ans, a, v: _unbroadcast_to(
                v, lambda ct: matmul(expand_dims(ct, -2), a)[..., 0, :]
            ),
        ),
        name="matvec",
        sparsity=("gufunc", (2, 1), "ij,j->i"),
    )
    register_rules(_matvec_p, batch=gufunc_batch_rule(_matvec_p, (2, 1)))
    _vecmat_p = defbilinear(
        lambda v, a: _np.vecmat(*_whole_cores(v, 1, a, 2)),
        (
            _sesquilinear_vjp_x1(lambda ct, a: matmul(a, expand_dims(ct, -1))[..., 0]),
            lambda ans, v, a: _unbroadcast_to(
                a, lambda ct: expand_dims(conj_if_complex(v), -1) * expand_dims(ct, -2)
            ),
        ),
        name="vecmat",
        sparsity=("gufunc", (1, 2), "j,jk->k"),
    )
    register_rules(_vecmat_p, batch=gufunc_batch_rule(_vecmat_p, (1, 2)))


def _unbroadcast_to(x, rule):
    like = meta(x)
    return lambda ct: unbroadcast(rule(ct), like)


# NumPy's signature of its generalized ufuncs of two operands (vecdot, matvec, vecmat),
# declared once: the operands, `out`, then the keywords and their defaults
_GUFUNC_SIGNATURE = inspect.Signature(
    [
        inspect.Parameter("x1", inspect.Parameter.POSITIONAL_ONLY, annotation="ArrayLike"),
        inspect.Parameter("x2", inspect.Parameter.POSITIONAL_ONLY, annotation="ArrayLike"),
        inspect.Parameter(
            "out", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation="None"
        ),
    ]
    + [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=d)
        for k, d in (
            ("axes", NO_VALUE),
            ("axis", NO_VALUE),
            ("keepdims", False),
            ("casting", "same_kind"),
            ("order", "K"),
            ("dtype", None),
            ("subok", True),
            ("signature", None),
        )
    ],
    return_annotation="Array",
)


def _gufunc_mirror(
    name: str, compute: Callable, cores: tuple[int, int], out_core: int, doc: str
) -> Callable[..., Array]:
    """NumPy's gufunc `name` of two operands with `_GUFUNC_SIGNATURE`: `compute(x1, x2)` on
    operands whose core axes are last (`_gufunc`)."""

    def gufunc(*args: ArrayLike, **kwargs: Any) -> Array:
        given = _GUFUNC_SIGNATURE.bind(*args, **kwargs)
        given.apply_defaults()
        keywords = dict(given.arguments)  # every parameter, the defaults applied
        operands, out = (keywords.pop("x1"), keywords.pop("x2")), keywords.pop("out")
        return _gufunc(getattr(_np, name), compute, cores, out_core, operands, out, keywords)

    gufunc.__name__ = gufunc.__qualname__ = name
    gufunc.__doc__ = doc
    gufunc.__signature__ = _GUFUNC_SIGNATURE  # type: ignore[attr-defined]
    return mirror("gufunc")(gufunc)


def _vecdot(x1, x2):
    _same_length(shape(x1)[-1], shape(x2)[-1], "vecdot")
    return _vecdot_p(x1, x2)


def _matvec(x1, x2):
    _same_length(shape(x1)[-1], shape(x2)[-1], "matvec")
    return _matvec_p(x1, x2)


def _vecmat(x1, x2):
    _same_length(shape(x1)[-1], shape(x2)[-2], "vecmat")
    return _vecmat_p(x1, x2)


vecdot = _gufunc_mirror(
    "vecdot",
    _vecdot,
    (1, 1),
    0,
    """NumPy 2's `vecdot`: sum(conj(x1) * x2) over the core axis of each operand (the last,
    or `axis`, or `axes`), broadcasting the other axes; `keepdims` keeps it with length 1.

    >>> import fgrad.numpy as fnp
    >>> float(fnp.vecdot(fnp.array([1.0, 2.0]), fnp.array([3.0, 4.0])))
    11.0
    """,
)
matvec = _gufunc_mirror(
    "matvec",
    _matvec,
    (2, 1),
    1,
    """NumPy's `matvec` (NumPy >= 2.2): the matrices x1 (..., m, n) times the vectors
    x2 (..., n), giving (..., m), with the batch axes broadcast (`axes` as NumPy's).""",
)
vecmat = _gufunc_mirror(
    "vecmat",
    _vecmat,
    (1, 2),
    1,
    """NumPy's `vecmat` (NumPy >= 2.2): the conjugated vectors x1 (..., n) times the matrices
    x2 (..., n, m), giving (..., m), with the batch axes broadcast (`axes` as NumPy's).""",
)


__all__ = exported(globals())
