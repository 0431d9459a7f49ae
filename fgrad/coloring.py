"""Colourings of a sparsity pattern: which columns (or rows) one pass can compute together.

A Jacobian J whose pattern is known is found with fewer passes than columns: columns that
share no row can be pushed forward together (their seed is the sum of their unit vectors),
and each entry of the compressed result belongs to one column. Such a partition is a *column
colouring* (distance-2 colouring of the column intersection graph); a *row colouring* does the
same for pulls (VJPs). A symmetric Hessian needs fewer: a *star colouring* (a distance-1
colouring in which every path on four vertices uses at least three colours) lets each
off-diagonal entry be read either at (i, colour of j) or, by symmetry, at (j, colour of i)
(`star_recovery`).

A column colouring is greedy (each column takes the smallest colour no column sharing a row
with it has taken yet) in one of three orders: "natural" (the columns' numbering, the
default: cheapest, and good on the local numberings of discretised equations), "largest_first"
(by degree in the column intersection graph, largest first) or "smallest_last" (repeatedly set
aside a vertex of smallest degree in what remains; colour in the reverse order: fewer colours
on unstructured patterns, at the cost of the graph and a pass over it in Python). It may also
be "recursive_largest_first" (Leighton's RLF, `recursive_largest_first`), which builds one
colour at a time and needs the fewest colours on the problems of `benchmarks/bench_sparse.py`
(the 2-D Brusselator: 8, against 10), at ten times the cost. Every column colouring is then
*refined* (`refine_column_coloring`): greedy again with the columns visited colour by colour,
the last colour first, which never adds a colour and often removes some (Culberson's iterated
greedy); a colour's columns share no row, so each of those passes is a few NumPy operations
per colour.

The greedy pass needs no graph: a row keeps the set of colours its columns have taken (the
bits of an integer), and a column's forbidden colours are the union over its rows. Two
shortcuts come first and last: j % K, for the smallest K such that no row holds two columns
equal modulo K, is taken when K is the most nonzeros in a row (the fewest colours possible:
a banded pattern, a stencil on a grid numbered in order), or when K is fewer colours than the
greedy colouring found.

Patterns are `scipy.sparse` arrays (imported by the caller; this module uses only their CSR
and CSC fields: a stored entry is a nonzero, whatever its value). Colours are numbered from 0.

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
    p = _structure(pattern).astype(_np.int8)
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


def _structure(pattern):
    """`pattern` as a CSR array whose stored entries are True (a stored value in (0, 1) must
    not become a zero on the way to the integer product of `conflict_graph`)."""
    p = pattern.tocsr()
    return type(p)((_np.ones(len(p.indices), dtype=bool), p.indices, p.indptr), shape=p.shape)


def _columns(pattern):
    """The rows of each column: the CSC arrays (indptr, row indices) of `pattern`, int64."""
    c = pattern.tocsc()
    return c.indptr.astype(_np.int64), c.indices.astype(_np.int64)


def _greedy_columns(pattern, visit, columns=None) -> _np.ndarray:
    """The greedy column colouring in the order `visit` (None: the columns' own). Each row
    keeps the colours its columns have taken as the bits of an int, so that a column's
    forbidden colours are the union over its rows, and no column intersection graph is built.
    Equal to `greedy_coloring` of `conflict_graph(pattern)` in that order."""
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


def _bit_number(bits: _np.ndarray) -> _np.ndarray:
    """k for each 2**k in `bits` (k < 62: exact as a float)."""
    return _np.frexp(bits.astype(_np.float64))[1].astype(_np.int64) - 1


# A refinement's colours are bits of an int64: a colouring with more colours is kept as it is.
_REFINABLE = 62
# Refinement passes after a greedy colouring: on 13 patterns tried (docs/sparse.md's table among
# them: Brusselators, Laplacians, random ones), a fourth pass never removed a colour (the
# Brusselator's counts pass by pass: 12, 11, 11, 10).
PASSES = 3


def refine_column_coloring(pattern, colors, passes: int = PASSES) -> _np.ndarray:
    """Fewer colours, or as many, for a column colouring of `pattern`: up to `passes` greedy
    passes that visit the columns colour by colour, the last colour first (Culberson's
    iterated greedy: a column takes the smallest colour not taken by a column sharing a row
    with it and visited before). A colour's columns share no row, so they are coloured
    together, in a few NumPy operations; each pass keeps the colours of the one before as a
    block, so it never needs more colours. Stops early at the lower bound (the most nonzeros
    in a row).

    >>> import numpy as np, scipy.sparse as sp
    >>> path = sp.csr_array(np.eye(6) + np.eye(6, k=1))  # columns j, j+1 share row j
    >>> refine_column_coloring(path, np.array([0, 1, 2, 0, 1, 2]))
    array([1, 0, 1, 0, 1, 0])
    """
    return _refine(pattern, colors, passes, None)


def _refine(pattern, colors, passes: int, columns) -> _np.ndarray:
    """`refine_column_coloring`, given the CSC arrays of `pattern` (`_columns`) if known."""
    colors = _np.array(colors, dtype=_np.int64)  # a copy: the caller's is not changed
    m, n = pattern.shape
    if n == 0 or m == 0 or pattern.nnz == 0:
        return colors
    bound = int(_np.diff(pattern.tocsr().indptr).max())
    indptr, rows = _columns(pattern) if columns is None else columns
    lengths = _np.diff(indptr)
    # A column in no row conflicts with none: colour 0, and left out of the passes (so that
    # each column reduced below has a row).
    colors[lengths == 0] = 0
    used = _np.flatnonzero(lengths)
    for _ in range(passes):
        k = int(colors.max()) + 1
        if k <= bound or k > _REFINABLE:
            break
        # the columns in visiting order (the last colour's first) and their rows, joined
        last_first = k - 1 - colors[used]
        visit = used[_np.argsort(last_first, kind="stable")]
        ends = _np.cumsum(_np.bincount(last_first, minlength=k)).tolist()
        its_lengths = lengths[visit]
        starts = _np.zeros(len(visit) + 1, dtype=_np.int64)
        _np.cumsum(its_lengths, out=starts[1:])
        joined = rows[_np.repeat(indptr[visit] - starts[:-1], its_lengths) + _np.arange(starts[-1])]
        taken = _np.zeros(m, dtype=_np.int64)  # the bits of the colours each row has
        bits = _np.ones(n, dtype=_np.int64)  # 2**colour of each column (colour 0: no row)
        begin = 0
        for end in ends:
            if end == begin:
                continue
            lo, hi = starts[begin], starts[end]
            its = joined[lo:hi]  # no row twice: these columns share none, so |= is exact
            forbidden = _np.bitwise_or.reduceat(taken[its], starts[begin:end] - lo)
            bit = ~forbidden & (forbidden + 1)  # the lowest colour not taken
            bits[visit[begin:end]] = bit
            taken[its] |= _np.repeat(bit, its_lengths[begin:end])
            begin = end
        colors = _bit_number(bits)
    return colors


def _modular(pattern, low: int, high: int):
    """j % K for the smallest K in low .. high - 1 such that no row has two columns equal
    modulo K (then columns of one colour share no row); None if there is none. A stencil on a
    grid numbered in order often has one as small as its fullest row (a 3-D 7-point
    Laplacian: 7, where the greedy orders need 11)."""
    m, n = pattern.shape
    rows = _np.repeat(_np.arange(m, dtype=_np.int64), _np.diff(pattern.indptr))
    cols = pattern.indices.astype(_np.int64)
    for k in range(max(low, 1), high):
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


def column_coloring(pattern, order: str = "natural") -> _np.ndarray:
    """A colour per column of `pattern` such that no two columns of one colour share a row:
    the columns of a colour are pushed forward by one JVP. Greedy in `order` (or RLF), then
    refined (`refine_column_coloring`). A pattern that no row holds two columns equal modulo
    its fullest row's count takes j % that count (optimal: a banded pattern as wide as its
    fullest row, `banded_coloring`, is one).

    >>> import numpy as np, scipy.sparse as sp
    >>> tridiagonal = sp.csr_array(np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1))
    >>> column_coloring(tridiagonal).max() + 1
    np.int64(3)
    """
    if order not in COLUMN_METHODS:
        raise ValueError(f"order must be one of {COLUMN_METHODS}, not {order!r}")
    pattern = _structure(pattern)
    n = pattern.shape[1]
    fullest = int(_np.diff(pattern.indptr).max(initial=0))
    # j % fullest, when it is one, is optimal: no colouring has fewer colours than a row has
    # nonzeros (`banded_coloring`'s j % width is one). Only a shortcut: the general path below
    # finds as many colours or more.
    optimal = _modular(pattern, fullest, fullest + 1) if n else None
    if optimal is not None:
        return optimal
    columns = _columns(pattern)
    if order == "natural":
        colors = _greedy_columns(pattern, None, columns)
    else:
        indptr, indices = conflict_graph(pattern)
        if order == "recursive_largest_first":
            colors = recursive_largest_first(indptr, indices)
        else:
            colors = _greedy_columns(pattern, vertex_order(indptr, indices, order), columns)
    colors = _refine(pattern, colors, PASSES, columns)
    found = int(colors.max(initial=-1)) + 1
    fewer = _modular(pattern, fullest + 1, min(found, fullest + 1 + _MODULI_TRIED)) if n else None
    return colors if fewer is None else fewer


def row_coloring(pattern, order: str = "natural") -> _np.ndarray:
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
