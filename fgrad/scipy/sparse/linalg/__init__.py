"""`fgrad.scipy.sparse.linalg`: sparse solves differentiable with respect to the matrix's data
and the right-hand side, in both modes and to every order.

`A` is an fgrad `SparseArray` (whose data may be traced) or a constant `scipy.sparse` array.
SciPy does the solving; the derivatives are implicit, from the solution alone:

- x = A^-1 b gives dx = A^-1 (db - dA x) (forward), and for a cotangent g = A^-T ct the
  cotangents ct_b = g and ct_data[k] = -g[row[k]] x[col[k]] (reverse): one more solve, with
  the transposed matrix, per derivative.
- `spsolve` and `splu` factorise once (SuperLU): the factorisation is kept with the solution,
  and the adjoint solve reuses it (`trans='T'`), so a gradient costs one triangular solve pair
  and a product over the stored elements more than the forward solve. A factorisation is
  redone only for other data (under `vmap` over matrices, or a `jit` record replayed).
- `cg` and `gmres` solve the adjoint system with the same method: iterations are never
  differentiated. The derivative's solves have the relative tolerance `rtol` (SciPy's default
  1e-5 where `rtol` is 0) of their own right-hand side, and no absolute tolerance: that side
  is a cotangent or a tangent, in other units than b, so neither `atol` nor b's size says
  anything about it (an `atol` meant for b made a small cotangent's derivative exactly zero).
  The derivative is then as accurate as the solves, whatever b and the cotangent's scale,
  and the same eagerly, in a `jit` replay and in each row of a `vmap`. A
  solve that does not converge raises (SciPy would return `info > 0` and the iterate). The
  adjoint solve of `gmres` is preconditioned by M^T, or by nothing when M is a
  `LinearOperator` without `rmatvec` (its error then says so); that of `cg` by M itself,
  symmetric as A is.
- `expm_multiply(A, B)` (exp(A) B) is linear in B (its transpose is exp(A^T) ct); its forward
  rule in the data is exact, from exp([[A, dA], [0, A]]) [0; B] (one product with a matrix of
  twice the size). Its reverse rule in the data reads the adjoint of that derivative at the
  stored elements, int_0^1 exp(x A^T) ct (exp((1 - x) A) B)^T dx, by Gauss-Legendre
  quadrature on panels short enough for the rule's error bound to be below round-off: about
  2 (||A||_1 / 8 + 15) products, so 10-35 times the forward product (forward mode is cheaper
  when the data are few).

>>> import numpy as np, fgrad, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
>>> A = fsp.diags([np.array([2.0, 2.0, 2.0]), -1.0, -1.0], [0, 1, -1])
>>> b = np.array([1.0, 0.0, 1.0])
>>> fgrad.grad(lambda b: fsla.spsolve(A, b).sum())(b)
array([1.5, 2. , 1.5])

Imports: `fgrad.core`, `fgrad.primitive` (its rules, the solves' sparsity among them),
`fgrad.batching`, `fgrad.taylor`, `fgrad.numpy`, `fgrad.scipy.sparse`, and `scipy.sparse.linalg` for
values.
"""

from __future__ import annotations

import math as _math
from typing import TYPE_CHECKING, Any

import numpy as _np
import scipy.sparse as _sp
import scipy.sparse.linalg as _spla

from .... import batching as _batching, numpy as fnp, taylor as _taylor
from ....core import (
    Box,
    Primitive,
    dtype_of,
    innermost,
    primal,
    refuse_lazy,
    shape_of,
    whole_value,
)
from ....numpy._mirror import missing_names
from ....numpy.elementwise import mask_values, read_any
from ....numpy.linalg import linear_solve_taylor_rule
from ....numpy.shaping import describe, meta, unbroadcast
from ....primitive import register_rules
from .. import SparseArray, _matvec, as_sparse

__all__ = ["SuperLU", "cg", "expm_multiply", "gmres", "splu", "spsolve"]

if not TYPE_CHECKING:  # a name of scipy.sparse.linalg not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.sparse.linalg")

_FLIP = {"N": "T", "T": "N"}
# the relative tolerance of a derivative's solve when the user's rtol is 0 (SciPy's default)
_DEFAULT_RTOL = 1e-5


def _product(data, structure, x, trans):
    """(data at structure) @ x, or its transpose's with trans 'T'."""
    return _matvec(data, structure if trans == "N" else structure.T, x, "a derivative")


def _data_cotangent(g, x, structure, trans):
    """The cotangent of the data of A in -g^T op(A) x: -g[i] x[j] at each stored (i, j) of
    op(A), summed over the columns of a matrix right-hand side."""
    rows, cols = (structure.row, structure.col) if trans == "N" else (structure.col, structure.row)
    terms = g[rows] * x[cols]
    if len(shape_of(terms)) == 2:
        terms = fnp.sum(terms, axis=1)
    return -terms


def _check_square(A, who):
    m, n = A.shape
    if m != n:
        raise ValueError(
            f"{who}: A must be square; it has shape {A.shape} and dtype {A.dtype}. For a "
            "least-squares solution use scipy.sparse.linalg.lsqr (not differentiable here)."
        )


def _check_rhs(A, b, who, matrix_ok=True, least=_np.float64):
    refuse_lazy(
        who, "SciPy's solvers compute with the values in memory", innermost(A.data), innermost(b)
    )
    shape = tuple(shape_of(b))
    ok = len(shape) == 1 or (matrix_ok and len(shape) == 2)
    if not ok or shape[0] != A.shape[0]:
        dims = "1 or 2 dimensions" if matrix_ok else "1 dimension"
        raise ValueError(
            f"{who}: b ({describe(b)}) must have {dims} and {A.shape[0]} rows to match A of "
            f"shape {A.shape} and dtype {A.dtype}"
        )
    if not _np.issubdtype(dtype_of(b), _np.inexact):  # integers and bools: promoted with `least`
        b = fnp.asarray(b, dtype=_np.result_type(dtype_of(b), least))
    return b


def _not_finite(values, name) -> str:
    """What to say of `values` when a solve fails: that `name` holds a nan or an inf (how many,
    and where the first is), or "" when all are finite. (A solver reports such values as a
    singular matrix or a solve that does not converge, which no other setting would fix.)"""
    bad = _np.flatnonzero(~_np.isfinite(_np.asarray(values)))
    if not len(bad):
        return ""
    first = _np.asarray(values).ravel()[bad[0]]
    return (
        f"there is a nan or inf in {name} ({len(bad)} value(s), the first, {first}, at flat "
        f"index {bad[0]}): find where it was computed (fgrad.debug_nans) and pass finite values"
    )


# --- direct solves: one factorisation, reused by the adjoint ------------------------------------


class _Factor:
    """SuperLU factorisations of the matrices of one structure, kept for the data last seen:
    the solve's primitive carries this object, and asks it for the factors of its data (the
    same data as the forward solve's in every derivative of it)."""

    __slots__ = ("data", "lu", "options", "structure")

    def __init__(self, structure, options):
        self.structure = structure
        self.options = options  # splu's keyword arguments, as given
        self.data = None  # a copy of the data factorised (the caller's array may change)
        self.lu = None

    def for_derivatives(self):
        return self  # an exact factorisation: the same for every right-hand side

    def of(self, data):
        data = _np.asarray(data)
        if not (
            self.data is not None
            and self.data.shape == data.shape
            and self.data.dtype == data.dtype
            and _np.array_equal(self.data, data)
        ):
            s = self.structure
            matrix = _sp.csc_array((data, (s.row, s.col)), shape=s.shape)
            try:
                self.lu = _spla.splu(matrix, **self.options)
            except RuntimeError as error:  # SuperLU: "Factor is exactly singular"
                what = _not_finite(data, "A's data") or "it is singular"
                raise ValueError(
                    f"fgrad.scipy.sparse.linalg: the sparse matrix of shape {s.shape} and dtype "
                    f"{data.dtype} could not be factorised ({error}); {what}"
                ) from error
            self.data = data.copy()
        return self.lu


def _lu_solve_impl(data, b, factor, trans):
    data, b = _np.asarray(data), _np.asarray(b)
    dtype = _np.result_type(data.dtype, b.dtype)
    if b.size == 0:
        return _np.zeros(b.shape, dtype=dtype)
    if _np.iscomplexobj(b) and not _np.iscomplexobj(data):
        # a real matrix keeps its real factorisation: the real and imaginary parts of b are
        # solved apart (SuperLU solves in the factorisation's dtype)
        real = _np.result_type(data.dtype, b.real.dtype)
        lu = factor.of(data.astype(real, copy=False))
        return lu.solve(b.real.astype(real), trans=trans) + 1j * lu.solve(
            b.imag.astype(real), trans=trans
        )
    lu = factor.of(data.astype(dtype, copy=False))
    return lu.solve(b.astype(dtype, copy=False), trans=trans)


def _solve_primitive(name, impl, solver):
    """The primitive x = A^-1 b (`trans` "N"; A^-T b for "T", A^-H b for "H") of a matrix
    given by its data, solved by the object in the parameter named `solver` (a factorisation,
    an iterative method): its derivatives are solves by the same object, transposed for
    reverse mode, so every order works and a factorisation serves them all. Returns the
    primitive and the map of its Taylor rule (`linear_solve_taylor_rule`)."""
    prim = None

    def solve(data, rhs, params, trans):
        # a derivative's solve: its right-hand side is a cotangent or a tangent, in other
        # units than b (an iterative method's tolerances for it: `_Iterative.for_derivatives`)
        return prim(data, rhs, **{solver: params[solver].for_derivatives(), "trans": trans})

    # (each cotangent in its input's dtype: a float32 b of a float64 matrix gets a float32
    # gradient, as everywhere in fgrad, though the solve is in float64)
    def vjp_data(ans, data, b, *, trans, **params):
        structure, like = params[solver].structure, meta(data)
        return lambda ct: unbroadcast(
            _data_cotangent(solve(data, ct, params, _FLIP[trans]), ans, structure, trans), like
        )

    def vjp_b(ans, data, b, *, trans, **params):
        like = meta(b)
        return lambda ct: unbroadcast(solve(data, ct, params, _FLIP[trans]), like)

    def jvp_data(t, ans, data, b, *, trans, **params):
        return -solve(data, _product(t, params[solver].structure, ans, trans), params, trans)

    def jvp_b(t, ans, data, b, *, trans, **params):
        return solve(data, t, params, trans)

    def tangent_map(cs, x, *, trans, **params):
        return _product(cs[0], params[solver].structure, x, trans)

    prim = Primitive(name, impl, vjps=(vjp_data, vjp_b), jvps=(jvp_data, jvp_b))
    register_rules(prim, forward="speed")
    return prim, tangent_map


_lu_solve_p, _lu_tangent_map = _solve_primitive("sparse_lu_solve", _lu_solve_impl, "factor")

# The sparsity of the solves' outputs (and of expm_multiply's), declared by each below
_DENSE_SOLVE = (
    "dense",
    "each element of a sparse solve (or of exp(A) B) depends on every element of b and of A's "
    "data, in general",
)


def _columns_batch(prim, rows_reason, columns_interact=False):
    """The batching rule of a solve (data, b): right-hand sides of every row side by side
    (one solve) when the matrix is the same for every row; one solve a row otherwise. With
    `columns_interact` (SciPy's `expm_multiply`, whose steps and stopping test read the norms
    of all columns together), rows with an inf or a nan go one by one too: side by side, one
    row's inf changed the other rows' values (by 5% on the gradient table's matrix)."""

    def rule(args, dims, **params):
        data, b = args
        d_data, d_b = dims
        if d_data is None and not (
            columns_interact and read_any(_np.logical_not(_np.isfinite(mask_values(b))))
        ):
            b = fnp.moveaxis(b, d_b, -1)
            n = shape_of(b)
            out = prim(data, fnp.reshape(b, (n[0], -1)), **params)
            return fnp.reshape(out, tuple(n)), len(n) - 1
        return _batching.rows_one_by_one(prim, args, dims, params, _size(args, dims), rows_reason)

    return rule


def _size(args, dims):
    """The batch size (the length of a batched argument's batch axis)."""
    return next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)


register_rules(
    _lu_solve_p,
    batch=_columns_batch(
        _lu_solve_p,
        "each row has a matrix of its own, which SuperLU factorises on its own",
    ),
    taylor=linear_solve_taylor_rule(_lu_solve_p, _lu_tangent_map),
    sparsity=_DENSE_SOLVE,
)


class SuperLU:
    """SciPy's `SuperLU` (what `splu` returns), whose `solve` is differentiable with respect to
    the right-hand side and to the data of the matrix factorised. `L`, `U`, `perm_r`,
    `perm_c`, `shape` and `nnz` are SciPy's (constants: the factors' values)."""

    def __init__(self, A: SparseArray, factor: _Factor) -> None:
        self._A = A
        self._factor = factor
        # The factorisation is computed by the first solve (under `vmap` the data may differ
        # from row to row) and kept for the solves after it and for their derivatives.

    @property
    def _lu(self):
        return self._factor.of(primal(self._A.data))

    shape = property(lambda self: self._A.shape)
    nnz = property(lambda self: self._lu.nnz)
    L = property(lambda self: self._lu.L)
    U = property(lambda self: self._lu.U)
    perm_r = property(lambda self: self._lu.perm_r)
    perm_c = property(lambda self: self._lu.perm_c)

    def solve(self, rhs: Any, trans: str = "N") -> Any:
        """x with A x = rhs (trans 'N') or A^T x = rhs ('T'; 'H' for A^H on complex data).

        >>> import numpy as np, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
        >>> lu = fsla.splu(fsp.diags([np.array([2.0, 4.0])], [0]))
        >>> lu.solve(np.array([1.0, 1.0]))
        array([0.5 , 0.25])
        """
        if trans not in ("N", "T", "H"):
            raise ValueError(f"SuperLU.solve: trans must be 'N', 'T' or 'H'; got {trans!r}")
        data, factor = self._A.data, self._factor
        if trans == "H":
            if _np.issubdtype(dtype_of(data), _np.complexfloating):
                # A^H x = b is A^T x = b with the conjugate data: another factorisation
                data = fnp.conj(data)
                factor = _Factor(factor.structure, factor.options)
            trans = "T"
        rhs = _check_rhs(self._A, rhs, "SuperLU.solve", least=_np.float32)
        return _lu_solve_p(data, rhs, factor=factor, trans=trans)


def splu(
    A: Any,
    permc_spec: str | None = None,
    diag_pivot_thresh: float | None = None,
    relax: int | None = None,
    panel_size: int | None = None,
    options: dict | None = None,
) -> SuperLU:
    """SciPy's `splu`: the LU factorisation of a square sparse matrix, whose `solve` is
    differentiable with respect to the right-hand side and to the matrix's data. The
    factorisation is computed here, once; derivatives of its solves reuse it.

    >>> import numpy as np, fgrad, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
    >>> def f(d):
    ...     return fsla.splu(fsp.diags([d], [0])).solve(np.ones(2)).sum()
    >>> fgrad.grad(f)(np.array([2.0, 4.0]))
    array([-0.25  , -0.0625])
    """
    who = "fgrad.scipy.sparse.linalg.splu"
    A = as_sparse(A, who)
    _check_square(A, who)
    kwargs = {
        k: v
        for k, v in dict(
            permc_spec=permc_spec,
            diag_pivot_thresh=diag_pivot_thresh,
            relax=relax,
            panel_size=panel_size,
            options=options,
        ).items()
        if v is not None
    }
    if not _np.issubdtype(dtype_of(A.data), _np.inexact):
        # SuperLU's dtype, as SciPy's splu: bool and integers up to int16 in float32, wider ones
        # in float64 (spsolve's right-hand side too, `_check_rhs`'s `least`)
        A = SparseArray(
            fnp.asarray(A.data, dtype=_np.result_type(A.dtype, _np.float32)), A.structure
        )
    return SuperLU(A, _Factor(A.structure, kwargs))


def spsolve(A: Any, b: Any, permc_spec: str | None = None, use_umfpack: bool = True) -> Any:
    """SciPy's `spsolve`: x with A x = b, for a square sparse A and a dense b of 1 or 2
    dimensions, differentiable with respect to b and to A's data (the adjoint solve reuses the
    factorisation). As SciPy's, x is a vector for b of shape (n,) or (n, 1). `use_umfpack` is
    accepted and ignored (SuperLU solves).

    >>> import numpy as np, fgrad, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
    >>> A = fsp.diags([np.array([2.0, 4.0])], [0])
    >>> fsla.spsolve(A, np.array([1.0, 1.0]))
    array([0.5 , 0.25])
    """
    who = "fgrad.scipy.sparse.linalg.spsolve"
    A = as_sparse(A, who)
    _check_square(A, who)
    if _sp.issparse(b) or isinstance(b, SparseArray):
        raise TypeError(f"{who}: b must be a dense array; call b.toarray() first")
    b = _check_rhs(A, b, who, least=_np.float32)
    x = splu(A, permc_spec=permc_spec).solve(b)
    if len(shape_of(b)) == 2 and shape_of(b)[1] == 1:
        x = fnp.reshape(x, (-1,))  # SciPy's spsolve: a single column gives a vector
    return x


# --- iterative solves: the adjoint system solved by the same method ------------------------------


class _Iterative:
    """An iterative method and its settings, carried by the solve's primitive."""

    __slots__ = ("M", "derived", "method", "options", "structure")

    def __init__(self, method, structure, M, options):
        self.method = method
        self.structure = structure
        self.M = M
        self.options = options
        self.derived = None

    def for_derivatives(self):
        """The settings of the solves of a derivative (adjoint, tangent, Taylor coefficient).
        Their right-hand side is a cotangent or a tangent, whose size has nothing to do with
        b's: SciPy's test ||r|| <= max(rtol ||rhs||, atol) with the atol given for b passed
        at the start iterate 0 for a small one (a loss weighted by 1e-8 got gradient exactly
        0). So they have no absolute tolerance and the relative one `rtol`, of their own
        right-hand side (SciPy's default 1e-5 where rtol is 0, which only atol would stop).
        Nothing is read from b: the settings are the same for every b, eagerly, in a jit
        replay and in every row of a vmap. They start at 0 (x0 is a guess for x)."""
        if self.derived is None:
            options = {k: v for k, v in self.options.items() if k != "x0"}
            options.update(rtol=self.options["rtol"] or _DEFAULT_RTOL, atol=0.0)
            self.derived = _Iterative(self.method, self.structure, self.M, options)
            self.derived.derived = self.derived
        return self.derived

    def solve(self, data, b, trans):
        s = self.structure
        rows, cols = (s.row, s.col) if trans == "N" else (s.col, s.row)
        matrix = _sp.csr_array((_np.asarray(data), (rows, cols)), shape=s.shape)
        b = _np.asarray(b)
        dtype = _np.result_type(matrix.dtype, b.dtype)
        matrix, b = matrix.astype(dtype), b.astype(dtype, copy=False)
        solver = _spla.cg if self.method == "cg" else _spla.gmres
        M, unpreconditioned = self._preconditioner(trans), ""
        try:
            x, info = solver(matrix, b, M=M, **self.options)
        except NotImplementedError:  # M.T of a LinearOperator given without rmatvec
            M, unpreconditioned = None, self._without_rmatvec()
            x, info = solver(matrix, b, **self.options)
        if info != 0:
            what = "did not converge" if info > 0 else "broke down (illegal input)"
            adjoint = trans == "T"
            # (the adjoint solve's right-hand side is a cotangent, not the b given)
            bad = _not_finite(data, "A's data") or _not_finite(
                b, "the cotangent pulled back" if adjoint else "b"
            )
            advice = (
                bad
                or unpreconditioned
                or "raise maxiter, loosen rtol, give a preconditioner M, or use spsolve"
            )
            raise RuntimeError(
                f"fgrad.scipy.sparse.linalg.{self.method} {what} (info={info}) for A of shape "
                f"{s.shape} and dtype {matrix.dtype} with {self.options}"
                + (" (the adjoint solve, with A^T)" if adjoint else "")
                + f"; {advice}. fgrad does not return an unconverged solution: its derivative "
                "would be wrong."
            )
        return x

    def _preconditioner(self, trans):
        """M for A x = b; for the adjoint system A^T y = c, M^T, except for cg, whose M is
        symmetric (as A is): M itself, which a LinearOperator given only a `matvec` (the usual
        wrapper of `spilu(A).solve`) can apply."""
        if self.M is None or trans == "N" or self.method == "cg":
            return self.M
        return _spla.aslinearoperator(self.M).T

    def _without_rmatvec(self):
        M = _spla.aslinearoperator(self.M)
        kind = "LinearOperator" if isinstance(self.M, _spla.LinearOperator) else type(self.M)
        return (
            f"it ran without the preconditioner M ({kind} of shape {M.shape} "
            f"and dtype {M.dtype}), which has no rmatvec for the transposed system: give M "
            "its transpose too, LinearOperator(shape, matvec=ilu.solve, rmatvec=lambda v: "
            "ilu.solve(v, 'T')), or raise maxiter"
        )


def _it_solve_impl(data, b, method, trans):
    if _np.ndim(b) == 2:  # SciPy's iterative solvers take one right-hand side at a time
        return _np.stack(
            [method.solve(data, b[:, j], trans) for j in range(_np.shape(b)[1])], axis=1
        )
    return method.solve(data, b, trans)


_it_solve_p, _it_tangent_map = _solve_primitive("sparse_iterative_solve", _it_solve_impl, "method")


def _it_batch(args, dims, **params):
    return _batching.rows_one_by_one(
        _it_solve_p,
        args,
        dims,
        params,
        _size(args, dims),
        "SciPy's cg and gmres solve one right-hand side at a time",
    )


_it_series = linear_solve_taylor_rule(_it_solve_p, _it_tangent_map)


@_taylor.declared(_it_series.kind)
def _it_taylor(primals, series, *, method, trans):
    """The Taylor rule with the coefficients' solves as a derivative's
    (`_Iterative.for_derivatives`), and the value as the plain solve's."""
    _, coefficients = _it_series(primals, series, method=method.for_derivatives(), trans=trans)
    return _it_solve_p(*primals, method=method, trans=trans), coefficients


register_rules(_it_solve_p, batch=_it_batch, taylor=_it_taylor, sparsity=_DENSE_SOLVE)


def _iterative(method, A, b, x0, rtol, atol, maxiter, M, callback, restart=None):
    who = f"fgrad.scipy.sparse.linalg.{method}"
    A = as_sparse(A, who)
    _check_square(A, who)
    if len(shape_of(b)) == 2 and shape_of(b)[1] == 1:
        b = fnp.reshape(b, (-1,))  # as SciPy's: one column is the vector, and x is one
    b = _check_rhs(A, b, who, matrix_ok=False)
    if callback is not None:
        raise TypeError(
            f"{who}: callback is not supported (the adjoint solve would call it too); leave it out"
        )
    if isinstance(M, (Box, SparseArray)):
        raise TypeError(f"{who}: the preconditioner M must be a constant (a SciPy operator)")
    options = {"rtol": rtol, "atol": atol, "maxiter": maxiter}
    if x0 is not None:
        # where the iterations start changes no solution: a constant, never differentiated
        options["x0"] = _np.asarray(primal(x0))
    if restart is not None:
        options["restart"] = restart
    data = A.data
    if not _np.issubdtype(dtype_of(data), _np.inexact):
        data = fnp.asarray(data, dtype=float)
    x = _it_solve_p(data, b, method=_Iterative(method, A.structure, M, options), trans="N")
    return x, 0


def cg(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    maxiter: int | None = None,
    M: Any = None,
    callback: Any = None,
) -> tuple[Any, int]:
    """SciPy's `cg` for a symmetric positive definite sparse A: `(x, 0)`, differentiable with
    respect to b and A's data by solving the adjoint system with cg. Raises RuntimeError if a
    solve does not converge (SciPy would return info > 0).

    The solves of a derivative (adjoint, tangent) have the relative tolerance `rtol` (1e-5
    where rtol is 0) of their own right-hand side and no absolute one: that side is a
    cotangent or a tangent, and `atol` (meant for b) would stop them at 0 for a small one.

    >>> import numpy as np, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
    >>> A = fsp.diags([np.array([2.0, 2.0]), -1.0, -1.0], [0, 1, -1])
    >>> x, info = fsla.cg(A, np.array([1.0, 1.0]), rtol=1e-12)
    >>> np.round(x, 12), info
    (array([1., 1.]), 0)
    """
    return _iterative("cg", A, b, x0, rtol, atol, maxiter, M, callback)


def gmres(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    rtol: float = 1e-5,
    atol: float = 0.0,
    restart: int | None = None,
    maxiter: int | None = None,
    M: Any = None,
    callback: Any = None,
) -> tuple[Any, int]:
    """SciPy's `gmres` for a square sparse A: `(x, 0)`, differentiable with respect to b and
    A's data by solving the adjoint system (A^T) with gmres. Raises RuntimeError if a solve
    does not converge. The solves of a derivative have relative tolerance `rtol` (1e-5 where
    rtol is 0) of their own right-hand side and no absolute one, as for `cg`.

    >>> import numpy as np, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
    >>> A = fsp.diags([np.array([2.0, 2.0]), 1.0], [0, 1])
    >>> x, info = fsla.gmres(A, np.array([3.0, 2.0]), rtol=1e-12)
    >>> np.round(x, 12), info
    (array([1., 1.]), 0)
    """
    return _iterative("gmres", A, b, x0, rtol, atol, maxiter, M, callback, restart=restart)


# --- expm_multiply -------------------------------------------------------------------------------


class _Expm:
    """The structure of A, and of the matrix [[A, E], [0, A]] of twice its size whose
    exponential gives the derivative in direction E (same structure as A)."""

    __slots__ = ("doubled", "flipped", "structure")

    def __init__(self, structure):
        self.structure = structure
        self.doubled = None
        self.flipped = None

    def block(self):
        if self.doubled is None:
            from .. import _Structure

            s, n = self.structure, self.structure.shape[0]
            rows = _np.concatenate([s.row, s.row, s.row + n])
            cols = _np.concatenate([s.col, s.col + n, s.col + n])
            self.doubled = _Expm(_Structure(rows, cols, (2 * n, 2 * n)))
        return self.doubled

    def transposed(self):
        """The same data read as A^T (data[k] at (col[k], row[k]))."""
        if self.flipped is None:
            self.flipped = _Expm(self.structure.T)
        return self.flipped


def _expm_impl(data, b, how, trans):
    s = how.structure
    rows, cols = (s.row, s.col) if trans == "N" else (s.col, s.row)
    matrix = _sp.csr_array((_np.asarray(data), (rows, cols)), shape=s.shape)
    return _spla.expm_multiply(matrix, _np.asarray(b))


# The reverse rule in the data integrates over [0, 1] in panels on which ||h M|| <= this
_PANEL_NORM = 8.0


def _gauss_legendre(theta):
    """Nodes in [0, 1] and weights of the fewest-point Gauss-Legendre rule whose error bound,
    h^(2p+1) (p!)^4 / ((2p+1) ((2p)!)^3) max |f^(2p)|, is below 1e-17 of the integrand's size
    for a product u_i(x) v_j(x) of two exponentials on a panel where ||h M|| <= theta (each
    derivative of the product is at most 2 ||M|| times the last)."""
    p = 1
    if theta > 0:
        log_factor = _np.log(2.0 * theta)
        while 2 * p * log_factor + 4 * _math.lgamma(p + 1) - _np.log(2 * p + 1) - 3 * _math.lgamma(
            2 * p + 1
        ) > _np.log(1e-17):
            p += 1
    nodes, weights = _np.polynomial.legendre.leggauss(p)
    return (nodes + 1.0) / 2.0, weights / 2.0


def _norm_bound(data, structure):
    """A power of 2^(1/4) at least max(||A||_1, ||A||_inf), the same for every row of a batch.
    It decides the quadrature, so `jit` records it as a guard (this power, not the data)."""
    size = fnp.abs(data)
    ones = _np.ones(structure.shape[0])
    sums = fnp.concatenate(
        [_product(size, structure, ones, "N"), _product(size, structure, ones, "T")]
    )
    largest = fnp.max(sums)
    # the power, computed before it is read: a replay then checks the power, not the norm
    power = fnp.where(largest > 0, fnp.ceil(4 * fnp.log2(fnp.maximum(largest, 1e-300))), -_np.inf)
    return float(2.0 ** (_np.max(whole_value(power)) / 4))


def _expm_data_cotangent(data, b, ct, how, trans):
    """The cotangent of A's data in exp(M) b, M = op(A), for the output cotangent ct.

    The Frechet derivative's adjoint: <ct, L(M, E) b> = <E, G> with
    G = int_0^1 u(x) v(x)^T dx, u(x) = exp(x M^T) ct and v(x) = exp((1 - x) M) b, needed only
    at the stored elements. Composite Gauss-Legendre quadrature: on panels where ||h M|| <= 8
    the rule's error bound is below 1e-17 of the integrand (`_gauss_legendre`), so G is exact
    to round-off. u at the panel starts and v at the panel ends come from one product per
    panel; u and v at every node of every panel from one product per node, with the panels'
    vectors side by side as columns: 2 (panels + nodes) calls of SciPy's `expm_multiply`, each
    differentiable (so this rule is too, to every order)."""
    s = how.structure
    rows, cols = (s.row, s.col) if trans == "N" else (s.col, s.row)
    n = s.shape[0]
    bound = _norm_bound(data, s)
    panels = max(1, int(_np.ceil(bound / _PANEL_NORM)))
    h = 1.0 / panels
    nodes, weights = _gauss_legendre(bound * h)
    vector = len(shape_of(b)) == 1
    if vector:
        b, ct = fnp.reshape(b, (n, 1)), fnp.reshape(ct, (n, 1))
    starts, ends = [ct], [b]  # u(j h) for j < panels; v((j + 1) h), last first
    for _ in range(panels - 1):
        starts.append(_expm_p(h * data, starts[-1], how=how, trans=_FLIP[trans]))
        ends.append(_expm_p(h * data, ends[-1], how=how, trans=trans))
    u0 = fnp.concatenate(starts, axis=1)
    v1 = fnp.concatenate(ends[::-1], axis=1)
    total = None
    for x, w in zip(nodes.tolist(), weights.tolist()):  # Python floats keep float32 data
        u = _expm_p((h * x) * data, u0, how=how, trans=_FLIP[trans])
        v = _expm_p((h * (1.0 - x)) * data, v1, how=how, trans=trans)
        term = (w * h) * fnp.sum(u[rows] * v[cols], axis=1)
        total = term if total is None else total + term
    return total


def _expm_vjp_data(ans, data, b, how, trans):
    like = meta(data)  # (in data's dtype, as `_solve_primitive`'s cotangents)
    return lambda ct: unbroadcast(_expm_data_cotangent(data, b, ct, how, trans), like)


def _expm_vjp_b(ans, data, b, how, trans):
    like = meta(b)
    return lambda ct: unbroadcast(_expm_p(data, ct, how=how, trans=_FLIP[trans]), like)


def _expm_jvp_data(t, ans, data, b, how, trans):
    # exp([[M, E], [0, M]]) [0; B] = [L(M, E) B; exp(M) B], L the Frechet derivative
    if trans == "T":
        how = how.transposed()
    zeros = fnp.zeros_like(b)
    big = _expm_p(
        fnp.concatenate([data, t, data]),
        fnp.concatenate([zeros, b]),
        how=how.block(),
        trans="N",
    )
    return big[: shape_of(b)[0]]


def _expm_jvp_b(t, ans, data, b, how, trans):
    return _expm_p(data, t, how=how, trans=trans)


_expm_p = Primitive(
    "sparse_expm_multiply",
    _expm_impl,
    vjps=(_expm_vjp_data, _expm_vjp_b),
    jvps=(_expm_jvp_data, _expm_jvp_b),
)


register_rules(
    _expm_p,
    batch=_columns_batch(_expm_p, "each row has a matrix of its own", columns_interact=True),
    taylor=_taylor.linear_rule(_expm_p, linear_in=(1,)),
    forward="speed",
    sparsity=_DENSE_SOLVE,
)


def expm_multiply(
    A: Any,
    B: Any,
    start: Any = None,
    stop: Any = None,
    num: Any = None,
    endpoint: Any = None,
    traceA: Any = None,
) -> Any:
    """SciPy's `expm_multiply`: exp(A) @ B for a square sparse A and a dense B of 1 or 2
    dimensions, differentiable with respect to B and to A's data, in both modes and to every
    order (reverse mode in the data is a quadrature exact to round-off that costs 10-35
    forward products; see the module's docstring). The time grid (`start`, `stop`, `num`,
    `endpoint`) is not supported: multiply A by the time instead.

    >>> import numpy as np, fgrad.scipy.sparse as fsp, fgrad.scipy.sparse.linalg as fsla
    >>> A = fsp.diags([np.array([0.0, np.log(2.0)])], [0])
    >>> fsla.expm_multiply(A, np.array([1.0, 1.0]))
    array([1., 2.])
    """
    who = "fgrad.scipy.sparse.linalg.expm_multiply"
    if any(v is not None for v in (start, stop, num, endpoint)):
        raise TypeError(f"{who}: start, stop, num and endpoint are not supported; scale A instead")
    A = as_sparse(A, who)
    _check_square(A, who)
    B = _check_rhs(A, B, who)
    data = A.data
    if not _np.issubdtype(dtype_of(data), _np.inexact):
        data = fnp.asarray(data, dtype=float)
    return _expm_p(data, B, how=_Expm(A.structure), trans="N")
