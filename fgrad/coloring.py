"""Colourings of a sparsity pattern: which columns (or rows) one pass can compute together.

A Jacobian J whose pattern is known is found with fewer passes than columns: columns that
share no row can be pushed forward together (their seed is the sum of their unit vectors),
and each entry of the compressed result belongs to one column. Such a partition is a *column
colouring* (distance-2 colouring of the column intersection graph); a *row colouring* does the
same for pulls (VJPs). A symmetric Hessian needs fewer: a *star colouring* (a distance-1
colouring in which every path on four vertices uses at least three colours) lets each
off-diagonal entry be read either at (i, colour of j) or, by symmetry, at (j, colour of i)
(`star_recovery`). The star colouring is greedy, in two passes (`star_coloring`): the one with
fewer colours is kept.

A column colouring is greedy (each column takes the smallest colour no column sharing a row
with it has taken yet) in one of three orders: "natural" (the columns' numbering, the
default: cheapest, and good on the local numberings of discretised equations), "largest_first"
(by degree in the column intersection graph, largest first) or "smallest_last" (repeatedly set
aside a vertex of smallest degree in what remains; colour in the reverse order: fewer colours
on unstructured patterns, at the cost of the graph and a pass over it in Python). When the
columns look like B = 2, 3 or 4 fields stacked and coupled at each point (all of u, then all
of v, and every row sampled holding u and v of one point: `_interleavings`), "natural" also
visits them point by point and refines whichever greedy pass needs fewer colours (the 2-D
Brusselator: 8, against 10; never more than the natural order's own, on the fields and the
random patterns of `tests/test_coloring.py`). The order may also be
"recursive_largest_first" (Leighton's RLF, `recursive_largest_first`), which builds one
colour at a time and often needs the fewest colours, at tens of times the cost. Every column
colouring is then *refined* (`refine_column_coloring`): greedy again with the columns visited
colour by colour, the last colour first, which never adds a colour and often removes some
(Culberson's iterated greedy).

The greedy pass needs no graph: it is SciPy's compiled grouping of columns for sparse finite
differences (Curtis, Powell and Reid: one group at a time, the columns in order that share no
row with the group so far, which is the greedy colouring), with a pass in Python as the
general path (`_greedy_columns_python`: a row keeps the colours its columns have taken as
the bits of an integer, and a column's forbidden colours are the union over its rows). Two
shortcuts come first and last: j % K, for the smallest K such that no row holds two columns
equal modulo K, is taken when K is the most nonzeros in a row (the fewest colours possible:
a banded pattern, a stencil on a grid numbered in order), or when K is fewer colours than the
greedy colouring found; a few rows' column differences refuse most K at a glance.

Patterns are `scipy.sparse` arrays (imported by the caller; this module uses only their CSR
and CSC fields: a stored entry is a nonzero, whatever its value). Colours are numbered from 0.

Imports: none of fgrad's (SciPy's `scipy.optimize._group_columns` on the first colouring).
"""

from __future__ import annotations

from typing import Any

import numpy as _np

__all__ = [
    "banded_coloring",
    "column_coloring",
    "conflict_graph",
    "greedy_coloring",
    "recursive_largest_first",
    "refine_column_coloring",
    "row_coloring",
    "star_coloring",
    "star_recovery",
    "vertex_order",
]

ORDERS = ("natural", "largest_first", "smallest_last")
# What a column or row colouring may use: a greedy order, or RLF.
COLUMN_METHODS = (*ORDERS, "recursive_largest_first")


def conflict_graph(pattern):
    """The column intersection graph of `pattern` (m x n): columns i != j are adjacent when
    some row has both. Returned as CSR arrays (indptr, indices) of an n x n boolean matrix."""
    # (g[i, j] counts the rows columns i and j share: in a type that holds every count, as
    # int8 did not: 256 shared rows summed to 0, and the two columns took one colour)
    p = _structure(pattern).astype(_np.int32 if pattern.shape[0] < 2**31 else _np.int64)
    g = (p.T @ p).tocsr()
    g.setdiag(0)
    g.eliminate_zeros()
    g.sort_indices()
    return g.indptr, g.indices


def vertex_order(indptr, indices, order: str = "smallest_last") -> _np.ndarray:
    """The vertices of a graph (CSR adjacency) in the order a greedy colouring visits them."""
    n = len(indptr) - 1
    degree = _np.diff(indptr)
    if order == "natural":
        return _np.arange(n, dtype=_np.int64)
    if order == "largest_first":
        return _np.argsort(-degree, kind="stable")
    if order != "smallest_last":
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    # Buckets of vertices by their degree among those not yet removed (a removed vertex's
    # degree is -1); a vertex's entry in a bucket may be stale (its degree has dropped since):
    # skipped when met.
    deg = degree.astype(_np.int64).tolist()
    buckets: list[list[int]] = [[] for _ in range(max(deg, default=0) + 1)]
    for v in range(n):
        buckets[deg[v]].append(v)
    ptr, idx = indptr.tolist(), indices.tolist()
    out: list[int] = []
    low = 0
    while len(out) < n:
        low = low - 1 if low else 0  # removing a vertex lowers its neighbours' degrees by one
        while not buckets[low]:
            low += 1
        v = buckets[low].pop()
        if deg[v] != low:
            continue
        deg[v] = -1
        out.append(v)
        for w in idx[ptr[v] : ptr[v + 1]]:
            d = deg[w]
            if d > 0:
                deg[w] = d - 1
                buckets[d - 1].append(w)
    return _np.array(out[::-1], dtype=_np.int64)


def greedy_coloring(indptr, indices, order: str = "smallest_last") -> _np.ndarray:
    """A distance-1 colouring of a graph (CSR adjacency): adjacent vertices differ."""
    n = len(indptr) - 1
    colors = [-1] * n
    ptr, idx = indptr.tolist(), indices.tolist()
    mark = [-1] * (n + 1)  # mark[c] == v: colour c is taken by a neighbour of v
    for v in vertex_order(indptr, indices, order).tolist():
        for w in idx[ptr[v] : ptr[v + 1]]:
            c = colors[w]
            if c >= 0:
                mark[c] = v
        c = 0
        while mark[c] == v:
            c += 1
        colors[v] = c
    return _np.array(colors, dtype=_np.int64)


def banded_coloring(pattern):
    """Colour j % (lower + upper + 1) for a banded pattern, when that many colours is the
    fewest possible (a row has that many nonzeros); otherwise None. Columns further apart
    than the band's width share no row, so this is a column colouring; when it is optimal
    no greedy order can do better, and it costs no graph."""
    p = pattern.tocsr()
    m, n = p.shape
    if p.nnz == 0 or m == 0 or n == 0:
        return None
    rows = _np.repeat(_np.arange(m, dtype=_np.int64), _np.diff(p.indptr))
    offsets = p.indices.astype(_np.int64) - rows
    width = int(offsets.max() - offsets.min()) + 1
    if width > int(_np.diff(p.indptr).max()):
        return None
    return _np.arange(n, dtype=_np.int64) % width


def recursive_largest_first(indptr, indices) -> _np.ndarray:
    """A distance-1 colouring of a graph (CSR adjacency) by Leighton's recursive largest first:
    colour c is built alone, a vertex at a time, from the uncoloured vertices adjacent to none
    of it (the candidates). The next is the candidate with the most neighbours among the
    vertices colour c has excluded (which must take later colours: putting their neighbours
    with them in one colour here keeps later colours few), then the fewest neighbours among the
    candidates, then the lowest number. A vertex at a time in NumPy: tens of times the cost of
    the greedy colourings (the 2-D Brusselator's 2048 columns: about 25 ms); fewer colours on
    most patterns.

    >>> import numpy as np
    >>> from fgrad.coloring import recursive_largest_first
    >>> ring = np.array([0, 2, 4, 6, 8]), np.array([1, 3, 0, 2, 1, 3, 0, 2])  # a 4-cycle
    >>> recursive_largest_first(*ring)
    array([0, 1, 0, 1])
    """
    indptr = _np.asarray(indptr, dtype=_np.int64)
    indices = _np.asarray(indices, dtype=_np.int64)
    n = len(indptr) - 1
    colors = _np.full(n, -1, dtype=_np.int64)
    if n == 0:
        return colors
    degree = _np.diff(indptr)
    top = int(degree.max()) + 1
    source = _np.repeat(_np.arange(n, dtype=_np.int64), degree)
    last_first = _np.arange(n - 1, -1, -1, dtype=_np.int64)  # the lowest number wins ties
    uncoloured = _np.ones(n, dtype=bool)
    # key[v] of a candidate v: (excluded neighbours * top + top - candidate neighbours) * n +
    # last_first[v], the three criteria in one int64; -1 for a vertex that is no candidate.
    # A pick's candidate neighbours all leave (they are excluded now): only the neighbours of
    # those change key, each by one more excluded and one fewer candidate neighbour.
    step = (top + 1) * n
    c = 0
    while True:
        among = _np.bincount(source[uncoloured[indices]], minlength=n)
        key = _np.where(uncoloured, (top - among) * n + last_first, -1)
        left = int(_np.count_nonzero(uncoloured))
        if not left:
            return colors
        while left:
            v = int(_np.argmax(key))
            colors[v] = c
            uncoloured[v] = False
            key[v] = -1
            left -= 1
            near = indices[indptr[v] : indptr[v + 1]]
            leaving = near[key[near] >= 0]
            if leaving.size:
                key[leaving] = -1
                left -= leaving.size
                lengths = indptr[leaving + 1] - indptr[leaving]
                starts = _np.repeat(indptr[leaving] - _np.cumsum(lengths) + lengths, lengths)
                their = indices[starts + _np.arange(int(lengths.sum()), dtype=_np.int64)]
                _np.add.at(key, their[key[their] >= 0], step)
        c += 1


def _structure(pattern):
    """`pattern` as a CSR array whose stored entries are True (a stored value in (0, 1) must
    not become a zero on the way to the integer product of `conflict_graph`)."""
    p = pattern.tocsr()
    return type(p)((_np.ones(len(p.indices), dtype=bool), p.indices, p.indptr), shape=p.shape)


def _columns(pattern):
    """The rows of each column: the CSC arrays (indptr, row indices) of `pattern`, int64."""
    c = pattern.tocsc()
    return c.indptr.astype(_np.int64), c.indices.astype(_np.int64)


def _compiled_greedy():
    """SciPy's greedy column grouping for sparse finite differences (Curtis, Powell and Reid;
    compiled by Pythran), or None if this SciPy has none. It builds one group at a time: the
    columns, in order, that share no row with the group so far. That is the greedy colouring
    in the same order (a column takes colour c when colours 0 .. c-1 each have a column
    sharing a row with it and visited before it: exactly when the groups 0 .. c-1 refused it
    and group c took it), about 35 times faster than `_greedy_columns_python`. Only a fast
    path: a private module of SciPy's, imported on first use (with `scipy.optimize`, once per
    process); `_greedy_columns_python` is the general path, and a test checks they agree."""
    global _GROUP_SPARSE
    if _GROUP_SPARSE is None:
        try:
            from scipy.optimize._group_columns import group_sparse
        except ImportError:  # pragma: no cover - present from SciPy 0.17 to 1.17 at least
            group_sparse = False
        _GROUP_SPARSE = group_sparse
    return _GROUP_SPARSE or None


_GROUP_SPARSE: Any = None  # SciPy's group_sparse once looked for (False: there is none)


def _permuted(columns, visit):
    """The CSC arrays (indptr, rows) of the columns taken in the order `visit`."""
    indptr, rows = columns
    n = len(indptr) - 1
    if n and len(rows) % n == 0 and indptr[1] * n == len(rows):
        # Only a fast path (every column as long: a stencil on a periodic grid): a gather of
        # whole rows of the (columns, length) table, where the general path below gathers
        # element by element. Checked against it when every column is as long.
        length = len(rows) // n
        if _np.array_equal(indptr, _np.arange(0, len(rows) + 1, max(length, 1))):
            return indptr, rows.reshape(n, length)[visit].ravel()
    lengths = _np.diff(indptr)[visit]
    out = _np.zeros(len(visit) + 1, dtype=_np.int64)
    _np.cumsum(lengths, out=out[1:])
    return out, rows[_np.repeat(indptr[visit] - out[:-1], lengths) + _np.arange(out[-1])]


def _greedy_columns(pattern, visit, columns=None) -> _np.ndarray:
    """The greedy column colouring in the order `visit` (None: the columns' own): each column
    takes the smallest colour no column sharing a row with it and visited before it has.
    Equal to `greedy_coloring` of `conflict_graph(pattern)` in that order, without the graph.
    SciPy's compiled grouping (`_compiled_greedy`) when there is one, else
    `_greedy_columns_python`."""
    m, n = pattern.shape
    columns = _columns(pattern) if columns is None else columns
    group_sparse = _compiled_greedy()
    if group_sparse is None or n == 0:
        return _greedy_columns_python(pattern, visit, columns)
    indptr, rows = columns if visit is None else _permuted(columns, visit)
    groups = _np.asarray(group_sparse(m, n, rows, indptr), dtype=_np.int64)
    if visit is None:
        return groups
    colors = _np.empty(n, dtype=_np.int64)
    colors[visit] = groups
    return colors


def _greedy_columns_python(pattern, visit, columns=None) -> _np.ndarray:
    """`_greedy_columns` in Python. Each row keeps the colours its columns have taken as the
    bits of an int, so that a column's forbidden colours are the union over its rows, and no
    column intersection graph is built."""
    m, n = pattern.shape
    indptr, rows = _columns(pattern) if columns is None else columns
    ptr, idx = indptr.tolist(), rows.tolist()
    taken = [0] * m  # taken[r]: bit c set when a column of row r has colour c
    colors = [0] * n
    for j in range(n) if visit is None else visit.tolist():
        its = idx[ptr[j] : ptr[j + 1]]
        forbidden = 0
        for r in its:
            forbidden |= taken[r]
        bit = ~forbidden & (forbidden + 1)  # the lowest bit not set: the colour's
        colors[j] = bit
        for r in its:
            taken[r] |= bit
    return _np.array([bit.bit_length() - 1 for bit in colors], dtype=_np.int64)


# Refinement passes after a greedy colouring: on 13 patterns tried (docs/sparse.md's table among
# them: Brusselators, Laplacians, random ones), a fourth pass never removed a colour (the
# Brusselator's counts pass by pass: 12, 11, 11, 10).
PASSES = 3


def refine_column_coloring(pattern, colors, passes: int = PASSES) -> _np.ndarray:
    """Fewer colours, or as many, for a column colouring of `pattern`: up to `passes` greedy
    passes that visit the columns colour by colour, the last colour first (Culberson's
    iterated greedy: a column takes the smallest colour not taken by a column sharing a row
    with it and visited before). Each pass keeps the colours of the one before as a block (a
    colour's columns share no row, so none of them forbids another a colour), so it never
    needs more colours. Stops early at the lower bound (the most nonzeros in a row).

    >>> import numpy as np, scipy.sparse as sp
    >>> from fgrad.coloring import refine_column_coloring
    >>> path = sp.csr_array(np.eye(6) + np.eye(6, k=1))  # columns j, j+1 share row j
    >>> refine_column_coloring(path, np.array([0, 1, 2, 0, 1, 2]))
    array([1, 0, 1, 0, 1, 0])
    """
    return _refine(_structure(pattern), colors, passes, None)


def _refine(pattern, colors, passes: int, columns, greedy: bool = False) -> _np.ndarray:
    """`refine_column_coloring` of a CSR `pattern`, given its CSC arrays (`_columns`) if
    known; `greedy`: `colors` is a greedy colouring (`_greedy_columns`, in any order)."""
    colors = _np.array(colors, dtype=_np.int64)  # a copy: the caller's is not changed
    m, n = pattern.shape
    if n == 0 or m == 0 or pattern.nnz == 0:
        return colors
    bound = int(_np.diff(pattern.indptr).max())
    columns = _columns(pattern) if columns is None else columns
    earlier = None  # the colouring of two passes before
    for _ in range(passes):
        k = int(colors.max()) + 1
        if k <= bound:
            break
        # the last colour's columns first, each colour's in the columns' order (a stable sort
        # of small integers: a radix sort)
        key = (k - 1 - colors).astype(_np.uint8 if k <= 256 else _np.int64)
        new = _greedy_columns(pattern, _np.argsort(key, kind="stable"), columns)
        # Exact stops. A pass depends only on the colouring before it: from one seen again
        # the passes repeat (or alternate), and none would remove a colour. And a greedy
        # colouring comes back from the greedy pass that visits its colours in increasing
        # order (a column of colour c has a column of each colour below c sharing a row with
        # it, visited before it); so when a pass from a greedy colouring gives its colours
        # reversed, the next pass, which visits them in increasing order, gives it back.
        if (
            _np.array_equal(new, colors)
            or (earlier is not None and _np.array_equal(new, earlier))
            or (greedy and _np.array_equal(new, k - 1 - colors))
        ):
            return new
        earlier, colors, greedy = colors, new, True  # (a pass's colouring is a greedy one)
    return colors


# How many rows `_sampled_differences` looks at.
_ROWS_SAMPLED = 128


def _sampled_differences(pattern, rows_sampled: int = _ROWS_SAMPLED, widest: int = 64):
    """(differences, rows, count): the differences b - a of two columns a < b of one row
    (repeats included) and the row of each (0 .. count - 1), over `count` consecutive rows in
    the middle of the CSR `pattern` (up to `rows_sampled`: a stencil's rows are alike, so a
    few show its differences); None when such a row holds more than `widest` columns (its
    pairs would be too many to list). They refuse cheaply a j % K that a sampled row proves
    wrong, and suggest the interleavings to try: nothing is taken from them unchecked."""
    m = pattern.shape[0]
    lo = max(0, (m - rows_sampled) // 2)
    hi = min(m, lo + rows_sampled)
    start, end = int(pattern.indptr[lo]), int(pattern.indptr[hi])
    lengths = _np.diff(pattern.indptr[lo : hi + 1])
    if hi == lo or lengths.max() > widest:
        return None
    cols = pattern.indices[start:end].astype(_np.int64)
    row = _np.repeat(_np.arange(hi - lo), lengths)
    # each row's columns are sorted: every difference is positive
    same = [row[s:] == row[:-s] for s in range(1, int(lengths.max()))]
    if not same:
        return cols[:0], row[:0], hi - lo
    differences = _np.concatenate([(cols[s:] - cols[:-s])[t] for s, t in enumerate(same, 1)])
    return differences, _np.concatenate([row[s:][t] for s, t in enumerate(same, 1)]), hi - lo


def _modular(pattern, low: int, high: int, differences=None):
    """j % K for the smallest K in low .. high - 1 such that no row has two columns equal
    modulo K (then columns of one colour share no row); None if there is none. A stencil on a
    grid numbered in order often has one as small as its fullest row (a 3-D 7-point
    Laplacian: 7, where the greedy orders need 11). `differences` (`_sampled_differences`),
    when given, refuse the K that divide one of them without a look at every row."""
    m, n = pattern.shape
    ks = _np.arange(max(low, 1), max(high, 1), dtype=_np.int64)
    if differences is not None and len(ks):
        ks = ks[~(differences[0][:, None] % ks == 0).any(axis=0)]
    rows = cols = _np.zeros(0, dtype=_np.int64)
    for k in ks.tolist():
        if not len(cols):
            rows = _np.repeat(_np.arange(m, dtype=_np.int64), _np.diff(pattern.indptr))
            cols = pattern.indices.astype(_np.int64)
        key = rows * k + cols % k
        if m * k <= 8 * len(key) + (1 << 16):  # a count per (row, colour): small enough
            distinct = _np.bincount(key, minlength=m * k).max(initial=0) <= 1
        else:  # (a row as full as the arrowhead's: sorting costs less than m * k counts)
            key.sort()
            distinct = not (key[1:] == key[:-1]).any()
        if distinct:
            return _np.arange(n, dtype=_np.int64) % k
    return None


# How many K above the fullest row's count `column_coloring` tries after the greedy pass:
# j % K is good on stencils, whose K is at most a few more than their rows' count.
_MODULI_TRIED = 8

# The numbers of fields stacked that `column_coloring` looks for (u, v, w of a reaction-diffusion
# system stored field by field).
_FIELDS = (2, 3, 4)


def _interleavings(pattern, differences) -> list:
    """Orders that visit the columns point by point, for the ways the n columns may be B
    fields stacked (all of u, then all of v, ...) coupled at each point: B in `_FIELDS`
    divides n, and every row sampled (`_sampled_differences`) holds a pair of columns j,
    j + n / B (an unstructured pattern seldom does in all of them). On such a numbering the
    natural order colours one field's whole grid before the next, and the fields' colourings
    clash where they couple (the 2-D Brusselator: 12 colours, 10 refined); point by point it
    finds 8."""
    n = pattern.shape[1]
    if differences is None:
        return []
    found, rows, count = differences
    return [
        _np.arange(n, dtype=_np.int64).reshape(b, n // b).T.ravel()
        for b in _FIELDS
        if n % b == 0 and n >= 2 * b and _np.bincount(rows[found == n // b], minlength=count).all()
    ]


def column_coloring(pattern, order: str = "natural") -> _np.ndarray:
    """A colour per column of `pattern` such that no two columns of one colour share a row:
    the columns of a colour are pushed forward by one JVP. Greedy in `order` (or RLF), then
    refined (`refine_column_coloring`). The natural order also tries the columns point by
    point when they look like fields stacked (`_interleavings`), and refines the greedy pass
    with fewer colours. A pattern that no row holds two columns equal modulo its fullest
    row's count takes j % that count (optimal: a banded pattern as wide as its fullest row,
    `banded_coloring`, is one).

    >>> import numpy as np, scipy.sparse as sp
    >>> from fgrad.coloring import column_coloring
    >>> tridiagonal = sp.csr_array(np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1))
    >>> column_coloring(tridiagonal).max() + 1
    np.int64(3)
    """
    if order not in COLUMN_METHODS:
        raise ValueError(f"order must be one of {COLUMN_METHODS}, not {order!r}")
    return _column_coloring(_structure(pattern), order, None)


def _column_coloring(pattern, order: str, columns) -> _np.ndarray:
    """`column_coloring` of a CSR `pattern` whose stored entries are its nonzeros, given its
    CSC arrays (`_columns`) if the caller has them."""
    n = pattern.shape[1]
    if n == 0 or pattern.nnz == 0:
        return _np.zeros(n, dtype=_np.int64)  # no two columns share a row
    fullest = int(_np.diff(pattern.indptr).max())
    differences = _sampled_differences(pattern)
    # j % fullest, when it is one, is optimal: no colouring has fewer colours than a row has
    # nonzeros (`banded_coloring`'s j % width is one). Only a shortcut: the general path below
    # finds as many colours or more.
    optimal = _modular(pattern, fullest, fullest + 1, differences)
    if optimal is not None:
        return optimal
    columns = _columns(pattern) if columns is None else columns
    if order == "natural":
        colors = _greedy_columns(pattern, None, columns)
        # the fields interleaved: the greedy pass with the fewest colours (ties: the natural
        # order's) is refined
        for visit in _interleavings(pattern, differences):
            other = _greedy_columns(pattern, visit, columns)
            if other.max() < colors.max():
                colors = other
    else:
        indptr, indices = conflict_graph(pattern)
        if order == "recursive_largest_first":
            colors = recursive_largest_first(indptr, indices)
        else:
            colors = _greedy_columns(pattern, vertex_order(indptr, indices, order), columns)
    colors = _refine(pattern, colors, PASSES, columns, greedy=order != "recursive_largest_first")
    found = int(colors.max()) + 1
    fewer = _modular(pattern, fullest + 1, min(found, fullest + 1 + _MODULI_TRIED), differences)
    return colors if fewer is None else fewer


def row_coloring(pattern, order: str = "natural") -> _np.ndarray:
    """A colour per row such that no two rows of one colour share a column: the rows of a
    colour are pulled back by one VJP."""
    return column_coloring(pattern.T, order)


def _adjacency(pattern):
    """The symmetric pattern's graph without its diagonal, as CSR arrays."""
    g = _structure(pattern)
    g = (g + g.T).tocsr()
    g.setdiag(0)
    g.eliminate_zeros()
    g.sort_indices()
    return g.indptr, g.indices


def star_coloring(pattern, order: str = "smallest_last") -> _np.ndarray:
    """A star colouring of a symmetric pattern's graph (vertex i ~ j when entry (i, j) is
    nonzero, i != j): adjacent vertices differ, and no path on four vertices is coloured with
    two colours. Greedy in `order` (`_star_greedy`), twice: cautious (the usual pass, which
    keeps vertices two steps apart through a vertex not yet coloured in different colours:
    often fewer colours on unstructured patterns) and not; the one with fewer colours is kept
    (ties: the cautious one). The cautious pass degenerates where a vertex adjacent to many is
    coloured after them (in the natural order, a dense row numbered last: every vertex takes
    its own colour, n colours for a pattern that takes 3); the other never does so, since it
    forbids only what the vertices coloured so far rule out."""
    indptr, indices = _adjacency(pattern)
    visit = vertex_order(indptr, indices, order).tolist()
    colors = _star_greedy(indptr, indices, visit, cautious=True)
    if colors.max(initial=0) < 2:
        return colors  # two colours, the fewest a graph with an edge takes
    # (stopped as soon as it needs as many colours: it can no longer be kept, and on patterns
    # where it only ties, dense rows among thousands, it doubled the colouring's time)
    other = _star_greedy(indptr, indices, visit, cautious=False, limit=int(colors.max()))
    return colors if other is None else other


def _star_greedy(indptr, indices, visit, cautious: bool, limit: int | None = None):
    """A greedy star colouring visiting the vertices in the order `visit`: a vertex v takes
    the smallest colour that makes no two-coloured path of four among the vertices coloured
    so far. As v is at an end of such a path or inside it, these are the colours of

    - x on a path v - w - x - y with y of w's colour (and w's: v's neighbours');
    - u on a path u - w - v - x with x of w's colour (v would be the hub of a two-coloured
      star: two of its neighbours have one colour).

    A path with a vertex still uncoloured is checked when that vertex is coloured, so that
    the result is a star colouring in every order. `cautious`: also the colour of x on a path
    v - w - x with w uncoloured (Gebremedhin, Manne and Pothen's greedy pass: then no two
    neighbours of a vertex share a colour, and the second rule never applies). With `limit`,
    None as soon as a vertex needs colour `limit` (a colouring with more than `limit`)."""
    n = len(indptr) - 1
    ptr, idx = indptr.tolist(), indices.tolist()
    colors = [-1] * n
    mark = [-1] * (n + 1)  # mark[c] == v: colour c is forbidden to v
    seen = [-1] * (n + 1)  # seen[c] == v: a neighbour of v has colour c
    first = [-1] * (n + 1)  # first[c]: v's first neighbour met of colour c (-1: listed)
    for v in visit:
        hubs: list[int] = []  # v's neighbours whose colour another neighbour of v has too
        for w in idx[ptr[v] : ptr[v + 1]]:
            cw = colors[w]
            if cw < 0:
                if cautious:
                    for x in idx[ptr[w] : ptr[w + 1]]:
                        if colors[x] >= 0:
                            mark[colors[x]] = v
                continue
            mark[cw] = v
            if seen[cw] != v:
                seen[cw] = v
                first[cw] = w
            elif first[cw] >= 0:
                hubs += (first[cw], w)
                first[cw] = -1
            else:
                hubs.append(w)
        for w in hubs:  # u - w - v - x, x of w's colour: u's colour is forbidden
            for u in idx[ptr[w] : ptr[w + 1]]:
                if colors[u] >= 0:
                    mark[colors[u]] = v
        for w in idx[ptr[v] : ptr[v + 1]]:  # v - w - x - y, y of w's colour: x's is forbidden
            cw = colors[w]
            if cw < 0:
                continue
            for x in idx[ptr[w] : ptr[w + 1]]:
                cx = colors[x]
                if cx < 0 or mark[cx] == v:
                    continue
                for y in idx[ptr[x] : ptr[x + 1]]:
                    if y != w and colors[y] == cw:
                        mark[cx] = v
                        break
        c = 0
        while mark[c] == v:
            c += 1
        if limit is not None and c >= limit:
            return None  # (as many colours as the colouring it would replace: not kept)
        colors[v] = c
    return _np.array(colors, dtype=_np.int64)


def star_recovery(
    pattern, colors
) -> tuple[_np.ndarray, _np.ndarray, tuple[_np.ndarray, _np.ndarray]]:
    """Where each nonzero (i, j) of a symmetric pattern is read in the compressed Hessian
    B = H @ seeds (B[k, c]: row k, colour c): (rows, cols, (read_row, read_col)) per entry,
    in the CSR order of the pattern. Entry (i, j) is B[i, colors[j]] when j is the only
    neighbour of i with that colour, else B[j, colors[i]]; a colouring for which neither
    holds for some entry is not a star colouring (ValueError)."""
    p = pattern.tocsr()
    p.sort_indices()
    n = p.shape[0]
    rows = _np.repeat(_np.arange(n, dtype=_np.int64), _np.diff(p.indptr))
    cols = p.indices.astype(_np.int64)
    colors = _np.asarray(colors, dtype=_np.int64)
    k = int(colors.max()) + 1 if n else 0
    # count[i, c]: how many of i's nonzero columns (itself included) have colour c
    count = _np.zeros((n, max(k, 1)), dtype=_np.int64)
    _np.add.at(count, (rows, colors[cols]), 1)
    direct = count[rows, colors[cols]] == 1
    mirrored = count[cols, colors[rows]] == 1
    if not _np.all(direct | mirrored):
        raise ValueError("the colouring is not a star colouring of this pattern")
    read_row = _np.where(direct, rows, cols)
    read_col = _np.where(direct, colors[cols], colors[rows])
    return rows, cols, (read_row, read_col)
