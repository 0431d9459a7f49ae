"""`fgrad.scipy.sparse`: sparse arrays whose data may be traced, and SciPy's sparse matrices
meeting traced values.

Two things live here:

- A constant `scipy.sparse` array or matrix times a traced vector or matrix: `A @ x`,
  `A.T @ y`, `A.dot(x)`, `x @ A`. The product is the primitive `sparse_matmul`, whose
  parameter is SciPy's matrix itself (never copied to dense): its value is SciPy's product,
  its transpose is `A.T @ ct`, so each derivative costs one sparse product. `Box` sends SciPy's
  matrices here (`fgrad.numpy._box`), so this works without importing this module.
- `SparseArray`, built by `csr_array`, `coo_array` and `diags` from data that may be traced:
  one entry per stored element (`data[k]` at `(row[k], col[k])`, repeats add up, as SciPy's
  COO format has it). Its products with dense arrays, `.T`, `.sum` and `.toarray()` are
  gathers, products and index additions of fgrad.numpy, so they are differentiable to every
  order, under `vmap`, `jet` and `jit`, and their cost scales with the number of stored
  elements. `fgrad.scipy.sparse.linalg` solves with them.

>>> import numpy as np, fgrad, fgrad.scipy.sparse as fsp
>>> A = fsp.csr_array((np.array([2.0, 1.0, 3.0]), np.array([0, 1, 1]), np.array([0, 2, 3])),
...                   shape=(2, 2))
>>> fgrad.grad(lambda d: (fsp.csr_array((d, A.col, np.array([0, 2, 3])), shape=(2, 2))
...                       @ np.ones(2)).sum())(A.data)
array([1., 1., 1.])

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.sparsity` (the rules of
`sparse_matmul`), `fgrad.tree_util`, `fgrad.numpy`, and `scipy.sparse` for values.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as _np
import scipy.sparse as _sp

from ... import numpy as fnp, sparsity as _sparsity
from ...core import Box, dtype_of, holds_box, innermost, primal, refuse_lazy, shape_of
from ...numpy._mirror import missing_names
from ...numpy.shaping import describe
from ...primitive import deflinear
from ...tree_util import register_pytree_node

__all__ = [
    "SparseArray",
    "coo_array",
    "csr_array",
    "diags",
    "diags_array",
    "issparse",
    "linalg",
]


_missing_name = missing_names(__name__, "scipy.sparse")


def __getattr__(name):
    if name == "linalg":  # as SciPy's: fgrad.scipy.sparse.linalg after import fgrad.scipy.sparse
        return importlib.import_module(f"{__name__}.linalg")
    return _missing_name(name)  # a name of scipy.sparse not mirrored yet says so


# --- a constant SciPy matrix times a traced value ----------------------------------------------


def _sparse_matmul_impl(x, A):
    return A @ x


def _sparse_matmul_transpose(ans, x, A):
    return lambda ct: _like(_sparse_matmul_p(ct, A=A.T), x)


def _like(ct, x):
    """A cotangent in x's dtype: a float32 x times a float64 matrix has a float64 value, and
    its cotangent is float32 again; a real x's is the real part."""
    want = dtype_of(x)
    if dtype_of(ct) == want:
        return ct
    if not _np.issubdtype(want, _np.complexfloating):
        ct = fnp.real(ct)
    return fnp.astype(ct, want)


def _sparse_matmul_batch(args, dims, A):
    # SciPy multiplies a matrix by one vector or by the columns of one matrix: the rows of the
    # batch become more columns, one product for all of them.
    (x,), (d,) = args, dims
    x = fnp.moveaxis(x, d, -1)
    n = shape_of(x)
    out = _sparse_matmul_p(fnp.reshape(x, (n[0], -1)), A=A)
    return fnp.reshape(out, (A.shape[0],) + tuple(n[1:])), len(n) - 1


def _sparse_matmul_sparsity(vals, pats, ans, params):
    # out[i, l] depends on x[j, l] where A[i, j] is stored (a stored zero counts: the pattern
    # holds at every value of a matrix with this structure)
    A = _sp.coo_array(params["A"])
    x_shape = tuple(shape_of(vals[0]))
    k = int(_np.prod(x_shape[1:], dtype=int))
    rows = (A.row[:, None] * k + _np.arange(k)).ravel()
    cols = (A.col[:, None] * k + _np.arange(k)).ravel()
    indicator = _sparsity._indicator(rows, cols, (A.shape[0] * k, A.shape[1] * k))
    return _sparsity._through(indicator, pats[0])


_sparse_matmul_p = deflinear(
    _sparse_matmul_impl,
    _sparse_matmul_transpose,
    name="sparse_matmul",
    batch=_sparse_matmul_batch,
    sparsity=("rule", "contracts", _sparse_matmul_sparsity),
)


def _check_operand(A, x, who, transposed=False):
    refuse_lazy(who, "SciPy's sparse product computes with the values in memory", innermost(x))
    shape = tuple(shape_of(x))
    n = A.shape[0] if transposed else A.shape[1]
    if len(A.shape) != 2:
        raise ValueError(
            f"{who}: fgrad multiplies 2-d sparse matrices only; the sparse operand has shape "
            f"{A.shape}. Reshape it to a matrix."
        )
    if len(shape) not in (1, 2) or shape[-1 if transposed else 0] != n:
        side = "last" if transposed else "first"
        raise ValueError(
            f"{who}: the sparse matrix of shape {A.shape} and dtype {A.dtype} cannot multiply "
            f"the dense operand ({describe(x)}): its {side} axis must have length {n} and it "
            "must have 1 or 2 dimensions"
        )


def matmul_constant(A: Any, x: Any, reverse: bool = False) -> Any:
    """`A @ x` (or `x @ A` with `reverse`) for a constant `scipy.sparse` array or matrix `A`
    and a dense, maybe traced `x`: SciPy's product, differentiable in x. `Box` calls this for
    `A @ x`, `A.dot(x)` and `x @ A`.

    >>> import numpy as np, scipy.sparse as sp, fgrad
    >>> A = sp.csr_array(np.array([[2.0, 0.0], [1.0, 3.0]]))
    >>> fgrad.grad(lambda x: (A @ x).sum())(np.ones(2))
    array([3., 3.])
    """
    if reverse:  # x @ A = (A^T @ x^T)^T
        _check_operand(A, x, "x @ A", transposed=True)
        return fnp.transpose(_sparse_matmul_p(fnp.transpose(x), A=A.T))
    _check_operand(A, x, "A @ x")
    return _sparse_matmul_p(x, A=A)


# --- sparse arrays with traced data ------------------------------------------------------------


class _Structure:
    """Where the stored elements of a `SparseArray` sit: `row`, `col` (int64 arrays, one entry
    per stored element) and the shape. Compared by identity, as a pytree's static part."""

    __slots__ = ("col", "row", "shape")

    def __init__(self, row, col, shape):
        self.row = _np.asarray(row, dtype=_np.int64)
        self.col = _np.asarray(col, dtype=_np.int64)
        self.shape = (int(shape[0]), int(shape[1]))

    @property
    def T(self) -> _Structure:
        return _Structure(self.col, self.row, self.shape[::-1])


class SparseArray:
    """A 2-d sparse array whose stored values `data` may be traced: `data[k]` sits at
    `(row[k], col[k])`, and repeated positions add up (SciPy's COO format). Made by `csr_array`,
    `coo_array` and `diags`; a pytree whose leaf is `data`, so `vmap` maps over it and `grad`
    returns the gradient with respect to the data as a `SparseArray` of the same structure.

    Supported: `A @ x`, `x @ A` and `A.dot(x)` with dense `x`, `A.T`, `A.transpose()`,
    `A.sum(axis)`, `A.toarray()`, `A.todense()`, `A * c` and `-A` for a scalar c, `A + B` and
    `A - B` of two sparse arrays of the same shape (their stored elements side by side), and
    `A.to_scipy()` (SciPy's CSR array of the value, without derivative).
    """

    __slots__ = ("data", "structure")

    format = "coo"
    ndim = 2
    # NumPy's arrays and traced values leave `x @ A` to `A.__rmatmul__` (NEP 13)
    __array_ufunc__ = None

    def __init__(self, data: Any, structure: _Structure) -> None:
        self.data = data
        self.structure = structure

    @property
    def shape(self) -> tuple[int, int]:
        return self.structure.shape

    @property
    def row(self) -> _np.ndarray:
        return self.structure.row

    @property
    def col(self) -> _np.ndarray:
        return self.structure.col

    @property
    def nnz(self) -> int:
        return len(self.structure.row)

    @property
    def dtype(self) -> _np.dtype:
        return dtype_of(self.data)

    def __repr__(self) -> str:
        return (
            f"<fgrad SparseArray of shape {self.shape}, {self.nnz} stored elements: {self.data!r}>"
        )

    @property
    def T(self) -> SparseArray:
        return SparseArray(self.data, self.structure.T)

    def transpose(self, axes: Any = None, copy: bool = False) -> SparseArray:
        if axes is not None:
            raise ValueError("SparseArray.transpose: only the default axes (None) are supported")
        return self.T

    def __matmul__(self, x: Any) -> Any:
        if isinstance(x, SparseArray) or _sp.issparse(x):
            raise TypeError(
                "fgrad.scipy.sparse: sparse @ sparse is not supported; multiply by a dense "
                "array, or call .toarray() on one factor"
            )
        return _matvec(self.data, self.structure, x, "A @ x")

    def __rmatmul__(self, x: Any) -> Any:
        return fnp.transpose(_matvec(self.data, self.structure.T, fnp.transpose(x), "x @ A"))

    def dot(self, x: Any) -> Any:
        return self @ x

    def __mul__(self, c: Any) -> SparseArray:
        if _np.ndim(primal(c)) != 0:
            raise ValueError(
                f"SparseArray * c: c must be a scalar (it has shape {_np.shape(primal(c))}); "
                "for a product of matrices write A @ x"
            )
        return SparseArray(self.data * c, self.structure)

    __rmul__ = __mul__

    def __neg__(self) -> SparseArray:
        return SparseArray(-self.data, self.structure)

    def __add__(self, other: Any) -> SparseArray:
        # the stored elements of both, side by side: repeated positions add up
        if not isinstance(other, SparseArray) or other.shape != self.shape:
            raise TypeError(
                f"SparseArray + other: other must be a SparseArray of shape {self.shape}; got "
                f"{type(other).__name__}"
                + (f" of shape {other.shape}" if hasattr(other, "shape") else "")
                + " (for a dense sum write A.toarray() + x)"
            )
        s, o = self.structure, other.structure
        structure = _Structure(
            _np.concatenate([s.row, o.row]), _np.concatenate([s.col, o.col]), s.shape
        )
        return SparseArray(fnp.concatenate([self.data, other.data]), structure)

    def __sub__(self, other: Any) -> SparseArray:
        if not isinstance(other, SparseArray):
            return self + other  # the same refusal
        return self + (-other)

    def sum(self, axis: int | None = None) -> Any:
        if axis is None:
            return fnp.sum(self.data)
        if axis not in (0, 1, -1, -2):
            raise ValueError(f"SparseArray.sum: axis {axis} is out of range for a 2-d array")
        axis %= 2
        index = self.col if axis == 0 else self.row
        # in the dtype of NumPy's (and SciPy's) sums: bool and small integers in the default
        # integer, so that a column of int8 values does not wrap around
        zeros = _np.zeros(self.shape[1 - axis], dtype=_np.zeros(0, self.dtype).sum().dtype)
        return fnp.at(zeros)[index].add(self.data)

    def toarray(self) -> Any:
        zeros = _np.zeros(self.shape, dtype=self.dtype)
        return fnp.at(zeros)[self.row, self.col].add(self.data)

    todense = toarray

    def to_scipy(self) -> Any:
        """SciPy's CSR array of the value (a constant: no derivative flows through it)."""
        return _sp.csr_array((_np.asarray(primal(self.data)), (self.row, self.col)), self.shape)


register_pytree_node(
    SparseArray,
    lambda a: ((a.data,), a.structure),
    lambda structure, children: SparseArray(children[0], structure),
)


def _matvec(data, structure, x, who):
    """(data at structure) @ x for a dense x of 1 or 2 dimensions: a gather of x's rows, a
    product with the data and an index addition, each differentiable and linear in both."""
    m, n = structure.shape
    shape = tuple(shape_of(x))
    if len(shape) not in (1, 2) or shape[0] != n:
        raise ValueError(
            f"{who}: the sparse array of shape {structure.shape} cannot multiply the dense "
            f"operand ({describe(x)}): its first axis must have length {n} and it must have 1 "
            "or 2 dimensions"
        )
    d = data if len(shape) == 1 else fnp.reshape(data, (-1, 1))
    products = d * x[structure.col]
    zeros = _np.zeros((m,) + shape[1:], dtype=_np.result_type(dtype_of(data), dtype_of(x)))
    return fnp.at(zeros)[structure.row].add(products)


def _data_vector(data, who, nnz=None):
    """The stored values as an array, checked: one per index, in their own dtype (SciPy's: an
    integer or bool array stays one, and has no derivative, as any integer input in fgrad).
    A list is an array, as SciPy reads it (kept as a list, `A * 2` repeated it)."""
    data = fnp.asarray(data)
    shape = tuple(shape_of(data))
    if len(shape) != 1 or (nnz is not None and shape[0] != nnz):
        want = "1 dimension" if nnz is None else f"shape ({nnz},), one value per index"
        raise ValueError(f"{who}: data must have {want}; it is {describe(data)}")
    return data


def _index_vector(v, who, what):
    v = _np.asarray(v)
    if v.ndim != 1 or not _np.issubdtype(v.dtype, _np.integer):
        raise ValueError(
            f"{who}: {what} must be a 1-d array of integers; it has shape {v.shape} and "
            f"dtype {v.dtype}"
        )
    return v


def _from_scipy(A, who):
    if isinstance(A, SparseArray):
        return A
    if _sp.issparse(A):
        coo = _sp.coo_array(A)
        return SparseArray(_np.asarray(coo.data), _Structure(coo.row, coo.col, coo.shape))
    raise TypeError(
        f"{who}: expected a tuple of arrays, a scipy.sparse array or an fgrad SparseArray; "
        f"got {type(A).__name__}"
    )


def _check_bounds(row, col, shape, who):
    if shape is None or len(shape) != 2:
        raise ValueError(f"{who}: give shape=(m, n), the shape of the 2-d array (got {shape})")
    m, n = shape
    if len(row) and (row.min() < 0 or row.max() >= m or col.min() < 0 or col.max() >= n):
        raise ValueError(f"{who}: an index lies outside the shape {tuple(shape)}")


def csr_array(arg1: Any, shape: tuple[int, int] | None = None, dtype: Any = None) -> SparseArray:
    """SciPy's `csr_array`, with data that may be traced. Its forms:

    - `(data, indices, indptr)`: row r holds the elements `indptr[r]:indptr[r + 1]`, values
      `data[...]` in columns `indices[...]`;
    - `(data, (row, col))`: COO triplets, as SciPy converts them to CSR: one stored element per
      position in row-major order, the values at a repeated position added up;
    - a dense 2-d array: its nonzeros are the stored elements, in row-major order; a traced
      one stores every entry (its zeros as explicit zeros, whose derivatives are not zero);
    - `(M, N)`: an empty M x N array;
    - a SciPy sparse array (a constant) or an fgrad `SparseArray`.

    The data keep their dtype, as SciPy's: integer or bool data, like any integer input of
    fgrad, have no derivative (`csr_array(M, dtype=float)` is an array `grad` differentiates
    with respect to).

    >>> import numpy as np, fgrad.scipy.sparse as fsp
    >>> A = fsp.csr_array((np.array([1.0, 2.0]), np.array([1, 0]), np.array([0, 1, 2])),
    ...                   shape=(2, 2))
    >>> A.toarray()
    array([[0., 1.],
           [2., 0.]])
    >>> fsp.csr_array((np.array([1.0, 2.0]), ([0, 0], [1, 1])), shape=(1, 2)).toarray()
    array([[0., 3.]])
    """
    who = "fgrad.scipy.sparse.csr_array"
    if not isinstance(arg1, tuple):
        if issparse(arg1):
            return _from_scipy(arg1, who)
        A = _from_dense(arg1, shape, who)
        return SparseArray(_cast(A.data, dtype), A.structure)
    if _is_shape(arg1):
        return _empty(arg1, shape, dtype, who)
    if len(arg1) == 2:
        data, row, col, shape = _triplets(arg1, shape, who)
        return SparseArray(
            _cast(_summed_duplicates(data, row, col, shape), dtype), _csr_structure(row, col, shape)
        )
    if len(arg1) != 3:
        raise ValueError(
            f"{who}: give (data, indices, indptr), (data, (row, col)), (M, N), a dense array "
            f"or a sparse array; got a tuple of {len(arg1)}"
        )
    data, indices, indptr = arg1
    indices = _index_vector(indices, who, "indices")
    indptr = _index_vector(indptr, who, "indptr")
    if shape is None:
        raise ValueError(f"{who}: give shape=(m, n) with (data, indices, indptr)")
    if len(indptr) != shape[0] + 1 or indptr[-1] != len(indices):
        raise ValueError(
            f"{who}: indptr must have shape[0] + 1 = {shape[0] + 1} entries ending at "
            f"len(indices) = {len(indices)}; it has {len(indptr)} ending at "
            f"{indptr[-1] if len(indptr) else None}"
        )
    data = _data_vector(data, who, len(indices))
    row = _np.repeat(_np.arange(shape[0]), _np.diff(indptr))
    _check_bounds(row, indices, shape, who)
    return SparseArray(_cast(data, dtype), _Structure(row, indices, shape))


def coo_array(arg1: Any, shape: tuple[int, int] | None = None, dtype: Any = None) -> SparseArray:
    """SciPy's `coo_array((data, (row, col)), shape)`, with data that may be traced. Repeated
    positions add up.

    >>> import numpy as np, fgrad.scipy.sparse as fsp
    >>> fsp.coo_array((np.array([1.0, 2.0]), (np.array([0, 0]), np.array([1, 1]))),
    ...               shape=(1, 2)).toarray()
    array([[0., 3.]])
    """
    who = "fgrad.scipy.sparse.coo_array"
    if not isinstance(arg1, tuple):
        return _from_scipy(arg1, who)
    data, row, col, shape = _triplets(arg1, shape, who)
    return SparseArray(_cast(data, dtype), _Structure(row, col, shape))


def _triplets(arg1, shape, who):
    """(data, row, col, shape) from SciPy's `(data, (row, col))`, checked; the shape, if not
    given, is the smallest that holds every index (SciPy's)."""
    if len(arg1) != 2 or not isinstance(arg1[1], tuple) or len(arg1[1]) != 2:
        raise ValueError(f"{who}: give (data, (row, col))")
    data, (row, col) = arg1
    row = _index_vector(row, who, "row")
    col = _index_vector(col, who, "col")
    if len(row) != len(col):
        raise ValueError(f"{who}: row and col have lengths {len(row)} and {len(col)}")
    data = _data_vector(data, who, len(row))
    if shape is None:
        shape = (int(row.max()) + 1, int(col.max()) + 1) if len(row) else None
    _check_bounds(row, col, shape, who)
    return data, row, col, shape


def _summed_duplicates(data, row, col, shape):
    """The values of SciPy's CSR form of COO triplets: one per position, in row-major order
    (`_csr_structure`), those of a repeated position added up (an index addition, linear in
    data, so derivatives flow back to every triplet)."""
    keys = _np.ravel_multi_index((row, col), shape) if len(row) else row
    positions, slot = _np.unique(keys, return_inverse=True)
    if len(positions) == len(keys):  # no repeat: a permutation of the values at most
        order = _np.argsort(keys, kind="stable")
        return data if _np.array_equal(order, _np.arange(len(keys))) else data[order]
    zeros = _np.zeros(len(positions), dtype=dtype_of(data))
    return fnp.at(zeros)[slot].add(data)


def _csr_structure(row, col, shape):
    """The positions of `_summed_duplicates`'s values: the distinct (row, col), row-major."""
    keys = _np.unique(_np.ravel_multi_index((row, col), shape)) if len(row) else row
    return _Structure(*_np.unravel_index(keys, shape), shape)


def _is_shape(arg1):
    return len(arg1) == 2 and all(isinstance(k, (int, _np.integer)) for k in arg1)


def _empty(arg1, shape, dtype, who):
    """SciPy's `csr_array((M, N))`: no stored element (float64 unless dtype says otherwise)."""
    if shape is not None and tuple(shape) != tuple(arg1):
        raise ValueError(f"{who}: the shape {tuple(arg1)} and shape={tuple(shape)} differ")
    if min(arg1) < 0:
        raise ValueError(f"{who}: the shape {tuple(arg1)} has a negative length")
    data = _np.zeros(0, dtype=_np.float64 if dtype is None else dtype)
    return SparseArray(data, _Structure(_np.zeros(0), _np.zeros(0), arg1))


def _from_dense(x, shape, who):
    """A `SparseArray` of a dense 2-d array `x`, as SciPy's `csr_array(x)`: the nonzeros of a
    plain array, in row-major order. A traced `x` stores every entry, its zeros as explicit
    zeros: the derivative at an entry that is zero now is not zero (csr_array(x).toarray() is
    x, whose derivative is the identity), and a pattern read from the value would drop it."""
    refuse_lazy(who, "the stored positions are where its values are nonzero", innermost(x))
    traced = type(x) is Box or ((type(x) is list or type(x) is tuple) and holds_box(x))
    x = fnp.asarray(x) if traced else _np.asarray(x)
    dims = tuple(shape_of(x))
    if len(dims) != 2:
        raise ValueError(
            f"{who}: a dense argument must have 2 dimensions; it is {describe(x)}. Reshape it, "
            "or give (data, (row, col)) with shape=(m, n)"
        )
    if shape is not None and tuple(shape) != dims:
        raise ValueError(f"{who}: the dense argument has shape {dims} but shape={tuple(shape)}")
    if traced:
        row, col = (index.ravel() for index in _np.indices(dims))
        return SparseArray(_data_vector(fnp.reshape(x, (-1,)), who), _Structure(row, col, dims))
    row, col = _np.nonzero(x)
    return SparseArray(_data_vector(x[row, col], who), _Structure(row, col, dims))


def _cast(data, dtype):
    return data if dtype is None else fnp.asarray(data).astype(dtype)


def diags_array(
    diagonals: Any,
    /,
    *,
    offsets: Any = 0,
    shape: tuple[int, int] | None = None,
    format: Any = None,
    dtype: Any = None,
) -> SparseArray:
    """SciPy's `diags_array`: a sparse array from its diagonals, which may be traced: a
    sequence of diagonals, or one 1-d diagonal (with one offset), as SciPy's. Each diagonal
    is a 1-d array (its length: the diagonal's, or longer, as SciPy takes it: the first
    elements are used) or a scalar (or one element), broadcast along the diagonal. Without
    `shape` the array is square, sized by the first diagonal and its offset, as SciPy's;
    offsets must differ and lie inside the shape, as SciPy's. Integer diagonals give float64,
    SciPy's default dtype.

    >>> import numpy as np, fgrad.scipy.sparse as fsp
    >>> fsp.diags_array([np.array([2.0, 2.0, 2.0]), -1.0], offsets=[0, 1]).toarray()
    array([[ 2., -1.,  0.],
           [ 0.,  2., -1.],
           [ 0.,  0.,  2.]])
    """
    who = "fgrad.scipy.sparse.diags"
    if not isinstance(diagonals, (list, tuple)) and len(shape_of(diagonals)) == 0:
        raise TypeError(
            f"{who}: diagonals is a single number ({describe(diagonals)}); as in SciPy, give "
            "one 1-d diagonal or a sequence of diagonals ([value] repeats a value along its "
            "diagonal)"
        )
    single = _np.ndim(offsets) == 0
    offsets = [int(offsets)] if single else [int(k) for k in offsets]
    if single:
        diagonals = [diagonals]
    diagonals = list(diagonals)
    if len(diagonals) != len(offsets):
        raise ValueError(
            f"{who}: {len(diagonals)} diagonals but {len(offsets)} offsets; give one offset each"
        )
    if len(set(offsets)) != len(offsets):
        raise ValueError(f"{who}: offsets {offsets} repeat one; give each diagonal once")
    if shape is None:  # square, sized by the first diagonal and its offset (SciPy's rule)
        first = shape_of(diagonals[0]) if diagonals else ()
        size = (first[0] if len(first) == 1 else 1) + abs(offsets[0]) if diagonals else 0
        shape = (size, size)
    m, n = shape
    rows, cols, values = [], [], []
    for d, k in zip(diagonals, offsets):
        if not -m <= k <= n:  # (SciPy's bounds: k = -m or n is an empty diagonal)
            raise ValueError(f"{who}: offset {k} is outside the shape {(m, n)}")
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        d_shape = tuple(shape_of(d))
        if len(d_shape) == 0 or d_shape == (1,):
            d = fnp.broadcast_to(fnp.reshape(d, ()), (length,))
        elif len(d_shape) != 1 or d_shape[0] < length:
            raise ValueError(
                f"{who}: the diagonal at offset {k} ({describe(d)}) must be a scalar or a 1-d "
                f"array of at least {length} elements"
            )
        else:
            d = d[:length]
        start = _np.arange(length)
        rows.append(start - min(k, 0))
        cols.append(start + max(k, 0))
        d = _data_vector(d, who)
        if dtype_of(d).kind not in "fc":  # SciPy's default dtype (np.common_type): float64
            d = fnp.astype(d, _np.float64)
        values.append(d)
    data = fnp.concatenate(values) if values else _np.zeros(0)
    structure = _Structure(_np.concatenate(rows), _np.concatenate(cols), (m, n))
    return SparseArray(_cast(data, dtype), structure)


def diags(
    diagonals: Any,
    offsets: Any = 0,
    shape: tuple[int, int] | None = None,
    format: Any = None,
    dtype: Any = None,
) -> SparseArray:
    """SciPy's `diags` (its arguments, positional or by keyword): see `diags_array`.

    >>> import numpy as np, fgrad.scipy.sparse as fsp
    >>> fsp.diags([1.0, np.array([2.0, 3.0])], [1, 0]).toarray()
    array([[2., 1.],
           [0., 3.]])
    """
    return diags_array(diagonals, offsets=offsets, shape=shape, format=format, dtype=dtype)


def issparse(x: Any) -> bool:
    """Whether x is a sparse array: fgrad's `SparseArray` or SciPy's."""
    return isinstance(x, SparseArray) or _sp.issparse(x)


def as_sparse(A: Any, who: str) -> SparseArray:
    """A `SparseArray` from an fgrad or SciPy sparse array (for `fgrad.scipy.sparse.linalg`)."""
    if isinstance(A, Box) or not issparse(A):
        raise TypeError(
            f"{who}: A must be a sparse array (fgrad.scipy.sparse.csr_array(...) or a "
            f"scipy.sparse array); got {type(A).__name__}"
            + (f" ({describe(A)})" if hasattr(A, "shape") else "")
            + ". For a dense matrix use fgrad.numpy.linalg.solve."
        )
    return _from_scipy(A, who)
