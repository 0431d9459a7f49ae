"""Sparsity detection, a level: each box carries which inputs each element of its value depends on.

A `SparsityLevel` box is `Box(value, level, pattern)`: `value` is what the traced code computes
(at the given input), and `pattern`, of shape (value.size, n_inputs), says in row i which input
elements element i of the value (C order) depends on. It is a boolean `scipy.sparse.csr_array`,
or, for the values computed from an input of at most `_NARROW_ROWS` elements by elementwise
operations and moves, a `_Narrow`: the columns of each row as an integer array (a move is one
NumPy indexing of it, a union one concatenation, where CSR needs a merge and a SciPy object
per operation). The rules of the other kinds get CSR arrays (`SparsityLevel.process`
converts), and `SparsityLevel.pattern_of` returns one. A primitive applied to such boxes is
applied to the values under them, and its
output's pattern is computed by the primitive's *sparsity rule*, one of a few kinds derived from
what the primitive's other rules already say, declared where the primitive is defined
(`fgrad.primitive.register_rules(prim, sparsity=...)`, or the elementwise batching rule):

- elementwise (the primitives whose batching rule is `fgrad.batching`'s elementwise one): an
  output element depends on the elements of the broadcast inputs at its place;
- moves (reshape, transpose, indexing, concatenate, ...: `moves`): the primitive applied to the
  element numbers of its inputs (`np.arange`) says which input element each output element came
  from;
- adds (`scatter_add`, `index_add`): x plus elements of v moved to the indexed places, several
  of which may land on one place;
- reduces and scans (`sum`, `max`, `prod`, `softmax`, the FFTs, `cumsum`, ...): the union
  along the axes reduced or transformed (or the running union along the axis scanned);
- contracts (`matmul`, `einsum`, `matvec`, `vecdot`, `convolve` of sequences): out[i, l]
  depends on a[i, j] and b[j, l] for the j where the other factor may be nonzero (its zeros
  count where they are constants of every input: `_may_be_nonzero`);
- blocks (`inv`, `solve`, `eigh`, ... of stacks of matrices): each output element depends on
  the whole matrix at its place in the stack;
- dense (`("dense", why)`, `dense_reasons()` lists them): every output element depends on every
  element of every traced input. Correct, and coarse: linear algebra, products, FFTs,
  custom rules (whose derivative need not follow the function's structure);
- traced (`checkpoint`): its function runs on this level's boxes;
- constant: the operations without a derivative (comparisons, `floor`, `argmax`, ...) give
  constants, which depend on nothing.

The pattern is global: valid at every input, not only at the one given. `where`, `maximum`,
`abs` keep the dependencies of both sides, whichever is taken here. A constant the function
computes before it reads any value (a `where` mask that `pad` makes, a sparse matrix it
multiplies by) is the same at every input, so its zeros count. Python control flow that
reads a value (`if x > 0`, an index computed by `argmax` or `argsort`) follows the path taken at
the given input, as under `vmap` and `jit`: the pattern is then the pattern of that path. The
level counts such reads (`SparsityLevel.reads`, which a comparison's makes too: the mask it
gives might become an index), so that `fgrad.sparse` knows to find the pattern again at an
input that may take another path.

SciPy is imported by the first detection, not by `import fgrad`.

Imports: `fgrad.core`, `fgrad.batching`, `fgrad.primitive` (the declarations: each primitive
says which rule is its own, `register_rules(prim, sparsity=...)`, where it is defined) and
`fgrad.numpy.shaping` (its index templates).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from . import batching
from .core import Box, Level, NondiffPrimitive, Primitive, bind, primal, shape_of
from .numpy import shaping as _shaping
from .primitive import sparsity_declarations

__all__ = [
    "SparsityLevel",
    "dense_reasons",
    "empty_pattern",
    "identity_pattern",
    "move_numbers",
    "rule_kind",
    "rules",
    "sparse_module",
]


def sparse_module():
    """`scipy.sparse`, imported on first use (SciPy is an optional dependency of fgrad)."""
    try:
        import scipy.sparse
    except ImportError as e:  # pragma: no cover - SciPy is installed with the extras
        raise ImportError(
            "sparsity detection and sparse derivatives need SciPy (scipy.sparse); install it "
            "with `pip install scipy`"
        ) from e
    return scipy.sparse


def _size(shape: tuple) -> int:
    return math.prod(shape)


def empty_pattern(size: int, n: int):
    """The pattern of a constant of `size` elements: no dependency."""
    sp = sparse_module()
    return sp.csr_array((size, n), dtype=bool)


def identity_pattern(size: int, n: int, offset: int):
    """The pattern of an input of `size` elements numbered from `offset` among n."""
    sp = sparse_module()
    return sp.csr_array(
        (
            _np.ones(size, dtype=bool),
            _np.arange(offset, offset + size, dtype=_np.int64),
            _np.arange(size + 1, dtype=_np.int64),
        ),
        shape=(size, n),
    )


class _Narrow:
    """A pattern as lists of columns: row i depends on the inputs `cols[i, k]` that are >= 0
    (-1 fills a short row; a column may repeat). `cols` has shape (rows, width) and is never
    changed once made. Elementwise operations and moves, most of a residual's operations,
    need one NumPy indexing (a move) or concatenation (a union) on it, where a CSR array
    needs a merge and a SciPy object per operation; the other rules receive CSR arrays
    (`SparsityLevel.process` converts, `_csr`)."""

    __slots__ = ("cols", "shape")

    def __init__(self, cols: _np.ndarray, n: int) -> None:
        self.cols = cols
        self.shape = (cols.shape[0], n)


# Inputs of at most this many elements start narrow; larger ones CSR, whose unions are merges
# in C: their cost per element, not per operation, is what counts there.
_NARROW_ROWS = 8192

# Past this many columns per row (repeats included), a union sorts out the repeats; a pattern
# still half as wide after that is made CSR, which stores each row's length as it is.
_WIDE = 32


def _csr(p):
    """The CSR array of a pattern (itself when it is one), each row sorted, without repeats."""
    if type(p) is not _Narrow:
        return p
    sp = sparse_module()
    size, width = p.cols.shape
    flat = _np.sort(p.cols, axis=1).ravel()  # (flat: NumPy's reductions along short rows are slow)
    keep = flat >= 0
    if width > 1:
        repeat = flat[1:] == flat[:-1]
        repeat[width - 1 :: width] = False  # a row's first column repeats nothing
        keep[1:] &= ~repeat
    at = _np.flatnonzero(keep)
    indptr = _np.zeros(size + 1, dtype=_np.int64)
    _np.cumsum(_np.bincount(at // max(width, 1), minlength=size), out=indptr[1:])
    return sp.csr_array((_np.ones(len(at), dtype=bool), flat[at], indptr), shape=p.shape)


def _narrow_union(patterns):
    """The union of narrow patterns of one shape: their columns side by side."""
    distinct: list = []
    for p in patterns:
        if not any(p is q for q in distinct):  # x * x: one pattern, not two
            distinct.append(p)
    if len(distinct) == 1:
        return distinct[0]
    n = distinct[0].shape[1]
    cols = _np.concatenate([p.cols for p in distinct], axis=1)
    if cols.shape[1] <= _WIDE:
        return _Narrow(cols, n)
    cols = _np.sort(cols, axis=1)
    cols[:, 1:][cols[:, 1:] == cols[:, :-1]] = -1
    cols.sort(axis=1)  # the -1s first
    width = int((cols >= 0).sum(axis=1).max(initial=0))
    compact = _Narrow(cols[:, cols.shape[1] - width :], n)
    return compact if width <= _WIDE // 2 else _csr(compact)


def _narrow_rows(blocks, rows):
    """`_take_rows` of narrow patterns."""
    n = blocks[0].shape[1]
    if len(blocks) == 1:
        cols = blocks[0].cols
        if len(rows) == len(cols) and _np.array_equal(rows, _np.arange(len(rows))):
            return blocks[0]
    else:
        width = max(b.cols.shape[1] for b in blocks)
        cols = _np.concatenate(
            [
                b.cols
                if b.cols.shape[1] == width
                else _np.pad(b.cols, ((0, 0), (0, width - b.cols.shape[1])), constant_values=-1)
                for b in blocks
            ]
        )
    if len(cols) == 0:  # no rows to take from: every row asked for is an empty one
        return _Narrow(_np.full((len(rows), cols.shape[1]), -1, dtype=_np.int64), n)
    taken = cols[rows]  # a copy: -1 took the last row, emptied here
    if len(rows) and rows.min() < 0:
        taken[rows < 0] = -1
    return _Narrow(taken, n)


def _rows(pattern, rows):
    """pattern[rows] (rows: the source row of each output element)."""
    return _take_rows([pattern], _np.asarray(rows, dtype=_np.int64))


def _take_rows(blocks, rows):
    """Row rows[i] of the patterns in `blocks` stacked (-1: an empty row), as one pattern.
    NumPy on the CSR arrays (SciPy's indexing and stacking cost ten times more for the small
    patterns of most operations)."""
    if type(blocks[0]) is _Narrow:
        return _narrow_rows(blocks, rows)
    sp = sparse_module()
    n = blocks[0].shape[1]
    if len(blocks) == 1:
        indptr, indices = blocks[0].indptr, blocks[0].indices
    else:
        shifts = _np.cumsum([0] + [b.nnz for b in blocks[:-1]])
        indptr = _np.concatenate(
            [blocks[0].indptr[:1]] + [b.indptr[1:] + s for b, s in zip(blocks, shifts)]
        )
        indices = _np.concatenate([b.indices for b in blocks])
    indptr = indptr.astype(_np.int64, copy=False)
    if len(indptr) == 1:  # no rows to take from: every row asked for is an empty one
        return empty_pattern(len(rows), n)
    if (
        len(rows)
        and rows[0] >= 0
        and _np.array_equal(rows, _np.arange(rows[0], rows[0] + len(rows)))
    ):
        # Consecutive rows (a reshape, a slice, a concatenation): a slice of the CSR arrays,
        # without the gather below, which most of a detection's time went to.
        if len(blocks) == 1 and len(rows) == blocks[0].shape[0]:
            return blocks[0]
        lo, hi = int(indptr[rows[0]]), int(indptr[rows[0] + len(rows)])
        return sp.csr_array(
            (
                _np.ones(hi - lo, dtype=bool),
                indices[lo:hi],
                indptr[rows[0] : rows[0] + len(rows) + 1] - lo,
            ),
            shape=(len(rows), n),
        )
    valid = rows >= 0
    r = _np.where(valid, rows, 0)
    lengths = _np.where(valid, indptr[r + 1] - indptr[r], 0)
    out_indptr = _np.zeros(len(rows) + 1, dtype=_np.int64)
    _np.cumsum(lengths, out=out_indptr[1:])
    total = int(out_indptr[-1])
    where = _np.repeat(indptr[r] - out_indptr[:-1], lengths) + _np.arange(total, dtype=_np.int64)
    return sp.csr_array(
        (_np.ones(total, dtype=bool), indices[where], out_indptr), shape=(len(rows), n)
    )


def _union(patterns):
    if type(patterns[0]) is _Narrow:
        return _narrow_union(patterns)
    out = patterns[0]
    for p in patterns[1:]:
        out = out + p  # on booleans: or
    return out


def _count_dtype(inner: int):
    """An integer type that holds a count of up to `inner` paths exactly: the entries of a
    product of 0/1 matrices with inner dimension `inner` (int8, the narrowest, wrapped: 256
    paths from an input to an output summed to 0, and the entry was lost). SciPy multiplies
    integers faster than booleans, whose `or` it calls per term."""
    return _np.int32 if inner < 2**31 else _np.int64


def _indicator(rows, cols, shape):
    """The 0/1 matrix with 1 at (rows[k], cols[k]) (repeats allowed), in `_count_dtype`."""
    sp = sparse_module()
    dtype = _count_dtype(shape[1])
    m = sp.csr_array((_np.ones(len(rows), dtype=dtype), (rows, cols)), shape=shape, dtype=dtype)
    m.sum_duplicates()
    m.data[:] = 1
    return m


def _through(indicator, pattern):
    """The pattern of outputs that depend on input elements by `indicator` (out x in, 0/1):
    the product counts the paths from each input to each output, exactly (`_count_dtype`)."""
    dtype = _count_dtype(indicator.shape[1])
    out = (indicator.astype(dtype, copy=False) @ pattern.astype(dtype)).astype(bool)
    out.eliminate_zeros()
    return out


# --- the rules ------------------------------------------------------------------------------------
# rule(vals, pats, ans, params) -> the output's pattern (a tuple of them for a primitive with
# several outputs): `vals` are the values under this level's boxes (and the other arguments as
# they are), `pats[i]` the pattern of argument i (None for an argument that is not this level's).


def _elementwise_rule(vals, pats, ans, params):
    out_shape = tuple(shape_of(ans))
    return _union(
        [_broadcast_pattern(v, p, out_shape) for v, p in zip(vals, pats) if p is not None]
    )


# The rules that take narrow patterns (`_Narrow`) as well as CSR ones (all of one form: see
# `SparsityLevel.process`); the others are given CSR arrays.
_elementwise_rule.narrow = True  # type: ignore[attr-defined]


def _where_rule(vals, pats, ans, params, fixed):
    """`where(c, x, y)` with a condition that is a constant of every input (`fixed`: the level
    read no value before it, so nothing computed so far depends on the input's values): each
    output element depends on the side it takes (`pad` masks its edges so). Otherwise, or for
    a traced condition, both sides' (the elementwise rule)."""
    if not fixed or pats[0] is not None:
        return _elementwise_rule(vals, pats, ans, params)
    out_shape = tuple(shape_of(ans))
    take_x = _np.broadcast_to(_np.asarray(vals[0], dtype=bool), out_shape).ravel()
    parts = []
    for v, p, keep in ((vals[1], pats[1], take_x), (vals[2], pats[2], ~take_x)):
        if p is None:
            continue
        s = tuple(shape_of(v))
        rows = _np.broadcast_to(_np.arange(_size(s), dtype=_np.int64).reshape(s), out_shape)
        moved = _rows(p, rows.ravel())
        if type(moved) is _Narrow:
            cols = moved.cols.copy()  # `_rows` may return p itself
            cols[~keep] = -1
            parts.append(_Narrow(cols, moved.shape[1]))
            continue
        sp = sparse_module()
        moved = sp.csr_array(sp.diags_array(keep, dtype=bool) @ moved)
        moved.eliminate_zeros()
        parts.append(moved)
    return _union(parts)


_where_rule.reads_constants = True  # type: ignore[attr-defined]
_where_rule.narrow = True  # type: ignore[attr-defined]


def _may_be_nonzero(v, pattern, fixed):
    """Which elements of a factor may be nonzero at some input (flat): all, unless `fixed`
    (no value was read yet); then a constant's zeros, and a traced value's zeros where it
    depends on no input (such an element is a constant too), are zeros everywhere. A value
    an outer transform traces (a `Box` under this level's: a parameter being differentiated
    that the function closes over, a `jit` record's input) is no constant: its zeros here
    need not be zeros at the next point, and their derivative is not zero."""
    size = _size(tuple(shape_of(v)))
    if not fixed or type(v) is Box:
        return _np.ones(size, dtype=bool)
    nonzero = _np.asarray(primal(v)).ravel() != 0
    if pattern is not None:
        nonzero = nonzero | (_np.diff(pattern.indptr) > 0)
    return nonzero


def _matmul_rule(vals, pats, ans, params, fixed):
    """`matmul` of 1-D and 2-D operands: out[i, l] depends on a[i, j] and b[j, l] for each j
    with the other factor nonzero. A factor's zeros count where they are constants of every
    input (`_may_be_nonzero`).
    Stacks of matrices are the gufunc whose core is that product, with broadcast leading
    axes (`_gufunc_product`, exact as einsum's rule): a (B, T, d) @ (d, k) layer's pattern
    in the weights is then one entry per product, not a dense block per matrix."""
    a, b = vals
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    if len(sa) > 2 or len(sb) > 2:
        core = _MATMUL_CORES[len(sa) == 1, len(sb) == 1]
        return _gufunc_product(*core)(vals, pats, ans, params, fixed)
    m, k = (1, sa[0]) if len(sa) == 1 else sa
    p = 1 if len(sb) == 1 else sb[1]
    sp = sparse_module()

    def mask(v, shape, pattern):
        return _may_be_nonzero(v, pattern, fixed).reshape(shape).astype(_np.int32)

    parts = []
    if pats[0] is not None:  # row (i, l), column (i, j): b[j, l] != 0
        b_mask = mask(b, (k, p), pats[1])
        moved = sp.kron(sp.eye_array(m, dtype=_np.int32), sp.csr_array(b_mask.T), format="csr")
        parts.append(_through(moved, pats[0]))
    if pats[1] is not None:  # row (i, l), column (j, l): a[i, j] != 0
        a_mask = mask(a, (m, k), pats[0])
        moved = sp.kron(sp.csr_array(a_mask), sp.eye_array(p, dtype=_np.int32), format="csr")
        parts.append(_through(moved, pats[1]))
    return _union(parts)


_matmul_rule.reads_constants = True  # type: ignore[attr-defined]

# matmul's core axes and einsum, by (a is 1-D, b is 1-D), for stacks (never both 1-D there)
_MATMUL_CORES = {
    (False, False): ((2, 2), "ij,jk->ik"),
    (True, False): ((1, 2), "j,jk->k"),
    (False, True): ((2, 1), "ij,j->i"),
}


def _convolve_rule(vals, pats, ans, params, fixed):
    """The full convolution of two 1-D sequences: out[i + j] depends on a[i] where v[j] is
    possibly nonzero and on v[j] where a[i] is (`_may_be_nonzero`). Stacks, and pairs with
    more than 10^7 products, are a dense block (issue 35)."""
    a, v = vals
    sa, sv = tuple(shape_of(a)), tuple(shape_of(v))
    if len(sa) != 1 or len(sv) != 1 or sa[0] * sv[0] > 10**7:
        return _dense(vals, pats, ans, params)
    n, m = sa[0], sv[0]
    i, j = _np.divmod(_np.arange(n * m, dtype=_np.int64), m)

    def nonzero(x, p):
        return _may_be_nonzero(x, p, fixed)

    parts = []
    if pats[0] is not None:
        keep = nonzero(v, pats[1])[j]
        parts.append(_through(_indicator((i + j)[keep], i[keep], (n + m - 1, n)), pats[0]))
    if pats[1] is not None:
        keep = nonzero(a, pats[0])[i]
        parts.append(_through(_indicator((i + j)[keep], j[keep], (n + m - 1, m)), pats[1]))
    return _union(parts)


_convolve_rule.reads_constants = True  # type: ignore[attr-defined]


def _einsum_rule(vals, pats, ans, params, fixed):
    """`einsum` with explicit subscripts: an output element depends on an element of a traced
    operand when some assignment of the letters matching both makes every other operand
    possibly nonzero (`_may_be_nonzero`). Worked out on a boolean tensor over the letters of
    the output and of that operand; past 10^7 entries, a dense block."""
    subscripts = params["subscripts"]
    if "..." in subscripts or "->" not in subscripts:
        return _dense(vals, pats, ans, params)
    ins, out = subscripts.split("->")
    terms = ins.split(",")
    shapes = [tuple(shape_of(v)) for v in vals]
    sizes: dict[str, int] = {}  # a letter's length: an axis of length 1 broadcasts to it
    for term, shape in zip(terms, shapes):
        for c, n in zip(term, shape):
            # (not the largest: a length 0 is the letter's, a contraction over nothing that
            # leaves every output element 0 and constant)
            sizes[c] = n if n != 1 else sizes.get(c, 1)
    masks = [  # at each letter's full length (an axis of length 1 broadcasts)
        _np.broadcast_to(_may_be_nonzero(v, p, fixed).reshape(shape), tuple(sizes[c] for c in term))
        for v, p, term, shape in zip(vals, pats, terms, shapes)
    ]
    out_shape = tuple(sizes[c] for c in out)
    parts = []
    for k, p in enumerate(pats):
        if p is None:
            continue
        letters = "".join(dict.fromkeys(out + terms[k]))
        if math.prod(sizes[c] for c in letters) > 10**7:
            return _dense(vals, pats, ans, params)
        # together[assignment of `letters`]: the other operands are all nonzero there
        operands, subs = [], []
        for j, (term, mask) in enumerate(zip(terms, masks)):
            if j != k:
                operands.append(mask.astype(_np.float64))
                subs.append(term)
        for c in letters:  # a letter no other operand has: any value (all ones)
            if not any(c in t for t in subs):
                operands.append(_np.ones(sizes[c]))
                subs.append(c)
        if not letters:  # all 0-d: the one output element, unless another operand is zero
            o = e = _np.zeros(int(all(bool(m) for j, m in enumerate(masks) if j != k)), int)
            parts.append(_through(_indicator(o, e, (1, 1)), p))
            continue
        together = _np.einsum(",".join(subs) + "->" + letters, *operands) != 0
        coords = dict(zip(letters, _np.nonzero(together)))
        o = _np.ravel_multi_index([coords[c] for c in out], out_shape) if out else None
        own = [
            coords[c] if n == sizes[c] else _np.zeros_like(coords[c])  # a broadcast axis
            for c, n in zip(terms[k], shapes[k])
        ]
        e = _np.ravel_multi_index(own, shapes[k]) if own else _np.zeros_like(coords[letters[0]])
        if o is None:
            o = _np.zeros_like(e)
        size_k = _size(shapes[k])
        parts.append(_through(_indicator(o, e, (_size(out_shape), size_k)), p))
    return _union(parts)


_einsum_rule.reads_constants = True  # type: ignore[attr-defined]


def _gufunc_product(cores: tuple[int, int], subscripts: str):
    """`matvec`, `vecmat`, `vecdot`: NumPy gufuncs over leading axes that broadcast, whose
    core is the einsum `subscripts` (letters from "ijk"); the leading axes get letters of
    their own and the einsum rule does the rest."""

    def rule(vals, pats, ans, params, fixed):
        shapes = [tuple(shape_of(v)) for v in vals]
        leads = [s[: len(s) - c] for s, c in zip(shapes, cores)]
        rank = max(len(lead) for lead in leads)
        if rank > 20:
            return _dense(vals, pats, ans, params)
        letters = "abcdefghlmnopqrstuvw"[:rank]
        ins, out = subscripts.split("->")
        terms = [letters + t for t in ins.split(",")]
        padded = [  # leading axes of length 1 in front: the same elements in the same order
            # (a value an outer transform traces may be nonzero anywhere: `_may_be_nonzero`)
            _np.ones((1,) * (rank - len(lead)) + s)
            if type(v) is Box
            else _np.reshape(primal(v), (1,) * (rank - len(lead)) + s)
            for v, s, lead in zip(vals, shapes, leads)
        ]
        einsum_params = {"subscripts": ",".join(terms) + "->" + letters + out}
        return _einsum_rule(padded, pats, ans, einsum_params, fixed)

    rule.reads_constants = True  # type: ignore[attr-defined]
    return rule


def _broadcast_pattern(v, p, shape):
    s = tuple(shape_of(v))
    if s == shape:
        return p
    return _rows(
        p, _np.broadcast_to(_np.arange(_size(s), dtype=_np.int64).reshape(s), shape).ravel()
    )


def _lanes(vals, pats, ans, params):
    """softmax and log_softmax along `axis`: each output element depends on its whole lane."""
    s = tuple(shape_of(vals[0]))
    axes = _axes(params.get("axis"), len(s))
    kept = tuple(1 if d in axes else n for d, n in enumerate(s))
    lane = _reduces(vals, pats, ans, {"axis": axes})
    out_of = _np.broadcast_to(_np.arange(_size(kept), dtype=_np.int64).reshape(kept), s).ravel()
    return _rows(lane, out_of)


def _logsumexp_rule(vals, pats, ans, params):
    """logsumexp(a, b, signs): a and b broadcast together, reduced along `axis`."""
    shapes = [tuple(shape_of(v)) for v, p in zip(vals[:2], pats[:2]) if v is not None]
    shape = tuple(_np.broadcast_shapes(*shapes))
    parts = [_broadcast_pattern(v, p, shape) for v, p in zip(vals[:2], pats[:2]) if p is not None]
    joined = _np.zeros(shape)
    return _reduces([joined], [_union(parts)], ans, {"axis": params["axis"]})


def _each_unchanged(vals, pats, ans, params):
    """Several outputs, each its input as it is (`tap_cotangent`)."""
    return tuple(
        p if p is not None else empty_pattern(_size(tuple(shape_of(v))), _n_of(pats))
        for v, p in zip(vals, pats)
    )


def _n_of(pats):
    return next(p for p in pats if p is not None).shape[1]


def move_numbers(prim, vals, traced, params, data=None, numbers_dtype=False) -> _np.ndarray:
    """For a primitive that only moves elements of its data arguments (positions `data`, all
    when None): the primitive applied to their element numbers, counted from 1 across the
    `traced` ones (0 for a constant's elements, which depend on nothing). For each output
    element, flat: the number from 0 across the traced arguments of the element it took, -1
    for none. `numbers_dtype`: the primitive casts to its `dtype` parameter, which the
    numbers replace (so they stay exact integers). (`fgrad.accumulation` moves its rows so.)"""
    args, start = [], 1
    for i, (v, t) in enumerate(zip(vals, traced)):
        if data is not None and i not in data:
            args.append(v)
            continue
        s = tuple(shape_of(v))
        if not t:
            args.append(_np.zeros(s, dtype=_np.int64))
            continue
        args.append(_np.arange(start, start + _size(s), dtype=_np.int64).reshape(s))
        start += _size(s)
    if numbers_dtype:
        params = dict(params, dtype=_np.dtype(_np.int64))
    return _np.asarray(prim.impl(*args, **params)).ravel() - 1


def _moves(prim, data: Sequence[int] | None = None, numbers_dtype: bool = False):
    """The rule of a primitive that only moves elements (`move_numbers`): each output element
    takes the pattern row of the element it got."""

    def rule(vals, pats, ans, params):
        traced = [p is not None for p in pats]
        moved = move_numbers(prim, vals, traced, params, data, numbers_dtype)
        blocks = [p for i, p in enumerate(pats) if p is not None and (data is None or i in data)]
        return _take_rows(blocks, moved)

    rule.narrow = True  # type: ignore[attr-defined]
    return rule


def _filled_index(template, arrays):
    return tuple(arrays[p.i] if type(p) is _shaping._Slot else p for p in template)


def _adds(index_of: Callable):
    """The rule of `out = x; out[index] += v` (`np.add.at`): out's elements depend on x's at
    their place and on every element of v added there. `index_of(vals, params)` is the index."""

    def rule(vals, pats, ans, params):
        x, v = vals[0], vals[1]
        px, pv = pats[0], pats[1]
        out_shape = tuple(shape_of(x))
        if pv is None:
            return px
        places = _np.arange(_size(out_shape), dtype=_np.int64).reshape(out_shape)
        places = places[index_of(vals, params)]
        v_shape = tuple(shape_of(v))
        v_numbers = _np.arange(_size(v_shape), dtype=_np.int64).reshape(v_shape)
        v_numbers = _np.broadcast_to(v_numbers, places.shape)
        moved = _indicator(places.ravel(), v_numbers.ravel(), (_size(out_shape), _size(v_shape)))
        added = _through(moved, pv)
        return added if px is None else px + added

    return rule


def _axes(axis, nd):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (int, _np.integer)):
        return (int(axis) % nd,)
    return tuple(int(a) % nd for a in axis)


def _reduces(vals, pats, ans, params):
    """An output element depends on the elements reduced into it (the union along `axis`);
    those a `where` mask leaves out are not reduced."""
    x, p = vals[0], pats[0]
    s = tuple(shape_of(x))
    axes = _axes(params.get("axis"), len(s))
    kept = tuple(1 if d in axes else n for d, n in enumerate(s))
    out_of = _np.broadcast_to(_np.arange(_size(kept), dtype=_np.int64).reshape(kept), s).ravel()
    cols = _np.arange(_size(s), dtype=_np.int64)
    where = params.get("where", True)
    if where is not True:
        keep = _np.broadcast_to(_np.asarray(where, dtype=bool), s).ravel()
        out_of, cols = out_of[keep], cols[keep]
    return _through(_indicator(out_of, cols, (_size(kept), _size(s))), p)


def _scans(vals, pats, ans, params):
    """A running reduction along `axis`: element k of a lane depends on elements 0..k of it
    (k..end for a `reverse` one)."""
    x, p = vals[0], pats[0]
    s = tuple(shape_of(x))
    axis = params["axis"] % len(s)
    lanes = _np.moveaxis(_np.arange(_size(s), dtype=_np.int64).reshape(s), axis, -1)
    lanes = lanes.reshape(-1, s[axis])
    k, j = _np.tril_indices(s[axis])
    if params.get("reverse", False):
        k, j = j, k
    rows, cols = lanes[:, k].ravel(), lanes[:, j].ravel()
    return _through(_indicator(rows, cols, (_size(s), _size(s))), p)


def _leading_axes(core_ndims: tuple[int, ...]):
    """The rule of a matrix function over stacks (`inv`, `solve`, `eigh`, ... on arrays of
    shape (..., n, n)): argument i has `core_ndims[i]` core axes, the leading ones broadcast
    together, and each output element depends on the whole core block of each traced
    argument at its place in the stack, and on nothing else (a dense block per matrix)."""

    def rule(vals, pats, ans, params):
        shapes = [tuple(shape_of(v)) for v in vals]
        leads = [s[: len(s) - c] for s, c in zip(shapes, core_ndims)]
        loop = tuple(_np.broadcast_shapes(*leads))
        parts = []
        for s, lead, p in zip(shapes, leads, pats):
            if p is None:
                continue
            size, core = _size(s), _size(s[len(lead) :])
            # the inputs each block of this argument depends on, one row per block
            blocks = _through(
                _indicator(
                    _np.arange(size, dtype=_np.int64) // max(core, 1),
                    _np.arange(size, dtype=_np.int64),
                    (_size(lead), size),
                ),
                p,
            )
            own = _np.arange(_size(lead), dtype=_np.int64).reshape(lead)
            parts.append(_rows(blocks, _np.broadcast_to(own, loop).ravel()))
        per_block = _union(parts)
        outs = ans if type(ans) is tuple else (ans,)
        made = []
        for o in outs:
            per = _size(tuple(shape_of(o))[len(loop) :])
            made.append(_rows(per_block, _np.repeat(_np.arange(_size(loop)), per)))
        return tuple(made) if type(ans) is tuple else made[0]

    return rule


def _along_axis(vals, pats, ans, params):
    """A transform along `axis` (the FFTs): each output element depends on the whole lane of
    the input along that axis at its place (the lane's length may change)."""
    s = tuple(shape_of(vals[0]))
    axis = params["axis"] % len(s)
    lane = _reduces(vals, pats, ans, {"axis": (axis,)})  # one row per lane
    out_shape = list(tuple(shape_of(ans)))
    out_shape[axis] = 1
    kept = tuple(out_shape)
    out_of = _np.arange(_size(kept), dtype=_np.int64).reshape(kept)
    return _rows(lane, _np.broadcast_to(out_of, tuple(shape_of(ans))).ravel())


def _norm_rule(vals, pats, ans, params):
    """A norm over `axis` (all axes when `flat`): a reduction."""
    axis = None if params.get("flat") else params.get("axis")
    return _reduces(vals, pats, ans, {"axis": axis})


def _dense(vals, pats, ans, params):
    """Every output element depends on every element of every traced argument."""
    sp = sparse_module()
    every = None
    for p in pats:
        if p is not None:  # the inputs this argument depends on, anywhere in it
            used = _np.asarray(p.sum(axis=0)).ravel() > 0
            every = used if every is None else every | used
    row = sp.csr_array(every.reshape(1, -1))
    outs = ans if type(ans) is tuple else (ans,)
    made = tuple(_rows(row, _np.zeros(_size(tuple(shape_of(o))), dtype=_np.int64)) for o in outs)
    return made if type(ans) is tuple else made[0]


def _astype_rule(vals, pats, ans, params):
    return pats[0]  # each element keeps its place (a cast of the numbers could round them)


_astype_rule.narrow = True  # type: ignore[attr-defined]


def _index_of(where: str) -> Callable:
    """Where `_adds`'s values land: the primitive's `idx` parameter (`index_add`), or the
    index filled from its template and its index arrays (`scatter_add`)."""
    if where == "idx":
        return lambda vals, params: params["idx"]
    return lambda vals, params: _filled_index(params["template"], vals[2:])


# The rules a primitive's `sparsity=` declaration names (`fgrad.primitive.register_rules`):
# name -> (the kind, for the coverage test and the docs; the rule's maker, given the primitive
# and the declaration's further arguments). Elementwise primitives (their batching rule is the
# elementwise one) and those without a derivative need no declaration.
DECLARED: dict[str, tuple[str, Callable[..., Callable] | None]] = {
    "moves": (
        "moves",
        lambda prim, data=None, numbers_dtype=False: _moves(prim, data, numbers_dtype),
    ),
    "astype": ("moves", lambda prim: _astype_rule),
    "keeps": ("elementwise", lambda prim: _astype_rule),  # each element on its own input's
    "unchanged": ("moves", lambda prim: _each_unchanged),
    "adds": ("adds", lambda prim, where: _adds(_index_of(where))),
    "elementwise": ("elementwise", lambda prim: _elementwise_rule),
    "where": ("elementwise", lambda prim: _where_rule),
    "reduces": ("reduces", lambda prim: _reduces),
    "lanes": ("reduces", lambda prim: _lanes),
    "logsumexp": ("reduces", lambda prim: _logsumexp_rule),
    "norm": ("reduces", lambda prim: _norm_rule),
    "along_axis": ("reduces", lambda prim: _along_axis),
    "scans": ("scans", lambda prim: _scans),
    "matmul": ("contracts", lambda prim: _matmul_rule),
    "einsum": ("contracts", lambda prim: _einsum_rule),
    "gufunc": ("contracts", lambda prim, cores, subscripts: _gufunc_product(cores, subscripts)),
    "convolve": ("contracts", lambda prim: _convolve_rule),
    "blocks": ("blocks", lambda prim, cores: _leading_axes(cores)),
    "dense": ("dense", lambda prim, reason: _dense),
    "traced": ("traced", None),
    # a rule of a module that imports this one (fgrad.scipy.sparse): ("rule", kind, rule)
    "rule": ("", lambda prim, kind, rule: rule),
}

# Primitive -> its rule, made from its declaration at its first use (a test may set one).
rules: dict[Any, Callable] = {}


def _declaration(prim) -> tuple[str, tuple] | None:
    """The name and arguments of `prim`'s `sparsity=` declaration, or None."""
    found = sparsity_declarations.get(prim)
    if found is None:
        return None
    return (found, ()) if isinstance(found, str) else (found[0], tuple(found[1:]))


def dense_reasons() -> dict[str, str]:
    """Primitive name -> why its rule is a dense block, for every primitive declared so."""
    return {
        prim.name: args[0]
        for prim, decl in list(sparsity_declarations.items())
        if (named := _declaration(prim)) is not None and named[0] == "dense"
        for args in (named[1],)
    }


def rule_kind(prim) -> str | None:
    """The kind of `prim`'s sparsity rule ("elementwise", "moves", "adds", "reduces",
    "scans", "contracts", "blocks", "traced", "dense" or "constant"), or None when it has
    none."""
    if type(prim) is NondiffPrimitive:
        return "constant"
    named = _declaration(prim)
    if named is not None:
        name, args = named
        if name not in DECLARED:
            raise ValueError(
                f"the primitive {prim.name!r} declares sparsity={name!r}, which is not one of "
                f"fgrad.sparsity.DECLARED's rules: {', '.join(DECLARED)}"
            )
        return args[0] if name == "rule" else DECLARED[name][0]
    if getattr(batching.rules.get(prim), "elementwise", False) and not prim.multiple_results:
        return "elementwise"
    return None


def _rule_of(prim) -> Callable:
    rule = rules.get(prim)
    if rule is not None:
        return rule
    kind = rule_kind(prim)
    if kind == "traced":
        raise AssertionError("a traced primitive runs its function in SparsityLevel.process")
    named = _declaration(prim)
    if named is not None:
        name, args = named
        rule = rules[prim] = DECLARED[name][1](prim, *args)  # type: ignore[misc]
        return rule
    if kind == "elementwise":
        return _elementwise_rule
    raise NotImplementedError(
        f"sparsity detection has no rule for the primitive {prim.name!r}; declare one where "
        "the primitive is defined, fgrad.primitive.register_rules(prim, sparsity=...) (a "
        'dense block is always correct: sparsity=("dense", "why"))'
    )


class SparsityLevel(Level):
    """A sparsity detection in progress over `n` input elements (see the module docstring)."""

    __slots__ = ("n", "reads")

    # Comparisons and other operations without a derivative read the value here (their
    # results are constants: they depend on no input); Python branches read it too.
    reads_values = True

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.reads = 0  # how many times the traced code read a value (see `read`)

    def new_input(self, x, offset: int) -> Box:
        """x as input elements offset .. offset + x.size - 1."""
        size = _size(tuple(shape_of(x)))
        if size > _NARROW_ROWS:
            return Box(x, self, identity_pattern(size, self.n, offset))
        cols = _np.arange(offset, offset + size, dtype=_np.int64).reshape(size, 1)
        return Box(x, self, _Narrow(cols, self.n))

    def new_variable(self, x) -> Box:
        """x as a value that may change between calls: each element depends on the last
        input, which `fgrad.sparse` adds for it (see `fgrad.sparse._detect`)."""
        size = _size(tuple(shape_of(x)))
        return Box(x, self, _Narrow(_np.full((size, 1), self.n - 1, dtype=_np.int64), self.n))

    def pattern_of(self, x) -> Any:
        """The pattern of a value the traced code returned, a `scipy.sparse.csr_array` (empty
        for a constant)."""
        if type(x) is Box and x.level is self:
            return _csr(x.aux)
        return empty_pattern(_size(tuple(shape_of(x))), self.n)

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        vals, pats = [], []
        for a in args:
            if type(a) is Box and a.level is self:
                vals.append(a.value)
                pats.append(a.aux)
            else:
                vals.append(a)
                pats.append(None)
        if type(prim) is NondiffPrimitive:  # a constant (NondiffPrimitive reads values first)
            return prim.impl(*[primal(v) for v in vals], **params)
        if prim.name == "checkpoint" and "call" in params:
            # Its derivative is its function's: the function runs here on this level's boxes
            # (as `vmap` runs it on its own), and its outputs carry their patterns.
            return tuple(params["call"].run(list(args), ()))
        ans = bind(prim, tuple(vals), params)
        rule = _rule_of(prim)
        if not (
            getattr(rule, "narrow", False) and all(p is None or type(p) is _Narrow for p in pats)
        ):
            pats = [None if p is None else _csr(p) for p in pats]
        if getattr(rule, "reads_constants", False):
            out = rule(vals, pats, ans, params, fixed=self.reads == 0)
        else:
            out = rule(vals, pats, ans, params)
        if prim.multiple_results:
            if type(out) is not tuple:
                out = tuple(out for _ in ans)
            return tuple(Box(a, self, p) for a, p in zip(ans, out))
        return Box(ans, self, out)

    def read(self, box: Box) -> Any:
        # The code took a path, or computed a constant (a mask, an index), from this value:
        # the pattern found may hold on this path only (`fgrad.sparse` checks it again).
        self.reads += 1
        return primal(box.value)
