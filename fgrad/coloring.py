"""Colourings of a sparsity pattern: which columns (or rows) one pass can compute together.

A Jacobian J whose pattern is known is found with fewer passes than columns: columns that
share no row can be pushed forward together (their seed is the sum of their unit vectors),
and each entry of the compressed result belongs to one column. Such a partition is a *column
colouring* (distance-2 colouring of the column intersection graph); a *row colouring* does the
same for pulls (VJPs). A symmetric Hessian needs fewer: a *star colouring* (a distance-1
colouring in which every path on four vertices uses at least three colours) lets each
off-diagonal entry be read either at (i, colour of j) or, by symmetry, at (j, colour of i)
(`star_recovery`).

All colourings are greedy, in one of two vertex orders: "largest_first" (by degree, largest
first) or "smallest_last" (repeatedly set aside a vertex of smallest degree in what remains;
colour in the reverse order), which usually needs fewer colours. Column and row colourings
may also be "recursive_largest_first" (Leighton's RLF, `recursive_largest_first`), which
builds one colour at a time and needs the fewest colours of the three on the problems of
`benchmarks/bench_sparse.py` (the 2-D Brusselator: 8, against 12), at ten times the cost.

Patterns are `scipy.sparse` arrays (imported by the caller; this module uses only their CSR
fields). Colours are numbered from 0.

Imports: none of fgrad's.
"""

from __future__ import annotations

import numpy as _np

__all__ = [
    "banded_coloring",
    "column_coloring",
    "conflict_graph",
    "greedy_coloring",
    "recursive_largest_first",
    "row_coloring",
    "star_coloring",
    "star_recovery",
    "vertex_order",
]

ORDERS = ("largest_first", "smallest_last")
# What a column or row colouring may use: a greedy order, or RLF.
COLUMN_METHODS = (*ORDERS, "recursive_largest_first")


def conflict_graph(pattern):
    """The column intersection graph of `pattern` (m x n): columns i != j are adjacent when
    some row has both. Returned as CSR arrays (indptr, indices) of an n x n boolean matrix."""
    p = pattern.tocsr().astype(_np.int8)
    g = (p.T @ p).tocsr()
    g.setdiag(0)
    g.eliminate_zeros()
    g.sort_indices()
    return g.indptr, g.indices


def vertex_order(indptr, indices, order: str = "smallest_last") -> _np.ndarray:
    """The vertices of a graph (CSR adjacency) in the order a greedy colouring visits them."""
    n = len(indptr) - 1
    degree = _np.diff(indptr)
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
    candidates, then the lowest number. A vertex at a time in NumPy: about ten times the cost
    of the greedy colourings; fewer colours on most patterns.

    >>> import numpy as np
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


def column_coloring(pattern, order: str = "smallest_last") -> _np.ndarray:
    """A colour per column of `pattern` such that no two columns of one colour share a row:
    the columns of a colour are pushed forward by one JVP. A banded pattern whose band is as
    wide as its fullest row takes j % width (optimal; `banded_coloring`).

    >>> import numpy as np, scipy.sparse as sp
    >>> tridiagonal = sp.csr_array(np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1))
    >>> column_coloring(tridiagonal).max() + 1
    np.int64(3)
    """
    if order not in COLUMN_METHODS:
        raise ValueError(f"order must be one of {COLUMN_METHODS}, not {order!r}")
    banded = banded_coloring(pattern)
    if banded is not None:
        return banded
    indptr, indices = conflict_graph(pattern)
    if order == "recursive_largest_first":
        return recursive_largest_first(indptr, indices)
    return greedy_coloring(indptr, indices, order)


def row_coloring(pattern, order: str = "smallest_last") -> _np.ndarray:
    """A colour per row such that no two rows of one colour share a column: the rows of a
    colour are pulled back by one VJP."""
    return column_coloring(pattern.T, order)


def _adjacency(pattern):
    """The symmetric pattern's graph without its diagonal, as CSR arrays."""
    g = pattern.tocsr().astype(_np.int8)
    g = (g + g.T).tocsr()
    g.setdiag(0)
    g.eliminate_zeros()
    g.sort_indices()
    return g.indptr, g.indices


def star_coloring(pattern, order: str = "smallest_last") -> _np.ndarray:
    """A star colouring of a symmetric pattern's graph (vertex i ~ j when entry (i, j) is
    nonzero, i != j): adjacent vertices differ, and no path on four vertices is coloured with
    two colours. Greedy: a vertex takes the smallest colour not used by its neighbours, nor by
    vertices two steps away through a neighbour still uncoloured, nor by the vertex x of a path
    v - w - x - y where y has w's colour (v taking x's colour would make it two-coloured)."""
    indptr, indices = _adjacency(pattern)
    n = len(indptr) - 1
    ptr, idx = indptr.tolist(), indices.tolist()
    colors = [-1] * n
    mark = [-1] * (n + 1)
    for v in vertex_order(indptr, indices, order).tolist():
        for w in idx[ptr[v] : ptr[v + 1]]:
            cw = colors[w]
            if cw >= 0:
                mark[cw] = v
            for x in idx[ptr[w] : ptr[w + 1]]:
                if x == v:
                    continue
                cx = colors[x]
                if cx < 0:
                    continue
                if cw < 0:
                    mark[cx] = v
                else:
                    for y in idx[ptr[x] : ptr[x + 1]]:
                        if y != w and colors[y] == cw:
                            mark[cx] = v
                            break
        c = 0
        while mark[c] == v:
            c += 1
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
