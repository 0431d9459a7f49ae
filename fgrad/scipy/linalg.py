"""`fgrad.scipy.linalg`: SciPy's linear algebra with forward and reverse rules, to every order.

Where a SciPy name is NumPy's function (`inv`, `det`, `solve`, `cholesky`, `eigh`) it is
`fgrad.numpy.linalg`'s, with SciPy's signature and defaults (`cholesky` returns the upper
factor unless `lower=True`). The new primitives compute their values with `scipy.linalg`
and write their rules in fgrad operations, often with themselves, so every rule is
differentiable again:

- `solve_triangular`: dx = -op(A)^-1 op(dA) x, and its transpose is a solve with op(A)^T;
- `solve_sylvester` (AX + XB = Q): dX = sylvester(A, B, dQ - dA X - X dB), its transpose is
  a Sylvester solve with A^T, B^T;
- `sqrtm`: X dX + dX X = dA, a Sylvester equation in dX;
- `expm`: its Frechet derivative L(A, E), the upper-right block of expm([[A, E], [0, A]])
  (the reverse rule is L(A^T, ct));
- `lu_factor`: with P A = L U and F = L^-1 P dA U^-1, dLU = L tril(F, -1) + triu(F) U;
- `solve_banded`: rules on the band storage, gathers with constant index arrays.

`cho_factor`/`cho_solve`, `lu_solve`, `lu` and the generalized `eigh` (a Cholesky reduction)
are compositions of these.

Conventions: as JAX, `cholesky`, `cho_factor` and `eigh` use the symmetric part (a + a.T)/2
of their input (SciPy reads one triangle: the same for a symmetric input), and `cho_factor`
returns its factor with zeros in the other triangle (SciPy leaves whatever was in `a`
there). Pivots of `lu_factor` are integers with no derivative. Float32 inputs give float32
results, `det` included (SciPy's `det` gives float64).

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy` (and its `linalg`), and
`scipy.linalg` for values.
"""

import numpy as _np
import scipy.linalg as _sl

from .. import numpy as fnp
from ..core import Box, primal
from ..numpy import linalg as _la
from ..numpy.shaping import broadcast_to, describe, meta, shape, unbroadcast
from ..primitive import defprimitive

__all__ = [
    "inv", "det", "solve", "cholesky", "cho_factor", "cho_solve", "lu_factor", "lu_solve",
    "lu", "solve_triangular", "solve_banded", "solve_sylvester", "sqrtm", "expm", "eigh",
]

LinAlgError = _np.linalg.LinAlgError


# --- helpers -------------------------------------------------------------------------------


def _mT(x):
    return fnp.swapaxes(x, -1, -2)


def _dtype(x):
    dt = _np.result_type(primal(x))
    return dt if _np.issubdtype(dt, _np.inexact) else _np.dtype(_np.float64)


def _const(values, like):
    """A constant (no derivative) in the float dtype of `like`, so float32 stays float32."""
    return _np.asarray(values, dtype=_dtype(like))


def _square(a, who, arg="a"):
    s = _np.shape(primal(a))
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(
            f"scipy.linalg.{who}: argument {arg!r} has {describe(a)}; it must be a square "
            "matrix (..., n, n)"
        )
    return s[-1]


def _triangle(a, lower, k=0):
    """The lower (upper) triangle of a from diagonal k (-k), a product with a constant mask."""
    n = shape(a)[-1]
    ones = _np.ones((n, n))
    return a * _const(_np.tril(ones, k) if lower else _np.triu(ones, -k), a)


def _symmetric_from(a, lower):
    """The symmetric matrix SciPy reads when it uses one triangle of a only."""
    t = _triangle(a, lower)
    return t + _mT(_triangle(a, lower, -1))


def _as_matrix_rhs(b, n, who):
    """b as (..., n, k), and whether it was a vector (SciPy's 1-D right-hand side)."""
    bs = _np.shape(primal(b))
    if len(bs) == 1:
        if bs[0] != n:
            raise ValueError(f"scipy.linalg.{who}: 'b' has {describe(b)}; its length must be {n}")
        return fnp.expand_dims(b, -1), True
    if len(bs) < 1 or bs[-2] != n:
        raise ValueError(
            f"scipy.linalg.{who}: 'b' has {describe(b)}; it must be (n,) or (..., n, k) with "
            f"n = {n}"
        )
    return b, False


# --- solve_triangular ----------------------------------------------------------------------


_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 1, "C": 1}  # real matrices: 'C' is 'T'


def _op(m, trans):
    return _mT(m) if trans else m


def _referenced(a, lower, unit):
    """The part of a that solve_triangular reads: its triangle, without the diagonal if unit."""
    return _triangle(a, lower, -1 if unit else 0)


def _trsolve_impl(a, b, lower, trans, unit):
    return _sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)


def _trsolve_vjp_a(ans, a, b, lower, trans, unit):
    like = meta(a)

    def bprop(ct):  # d op(A) = -(op(A)^-T ct) x^T, read back through op and the triangle
        g = _trsolve_p(a, ct, lower=lower, trans=1 - trans, unit=unit)
        return unbroadcast(_referenced(_op(-fnp.matmul(g, _mT(ans)), trans), lower, unit), like)

    return bprop


def _trsolve_vjp_b(ans, a, b, lower, trans, unit):
    like = meta(b)
    return lambda ct: unbroadcast(_trsolve_p(a, ct, lower=lower, trans=1 - trans, unit=unit),
                                  like)


def _trsolve_jvp_a(t, ans, a, b, lower, trans, unit):
    dop = _op(_referenced(t, lower, unit), trans)
    return -_trsolve_p(a, fnp.matmul(dop, ans), lower=lower, trans=trans, unit=unit)


def _trsolve_jvp_b(t, ans, a, b, lower, trans, unit):
    return broadcast_to(_trsolve_p(a, t, lower=lower, trans=trans, unit=unit), shape(ans))


# b is a (stack of) matrices here; the public function adds and removes an axis for a vector.
_trsolve_p = defprimitive(
    _trsolve_impl,
    vjp=(_trsolve_vjp_a, _trsolve_vjp_b),
    jvp=(_trsolve_jvp_a, _trsolve_jvp_b),
    name="solve_triangular",
)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """SciPy's `linalg.solve_triangular`: x with op(a) @ x = b, op = identity (trans=0, 'N')
    or transpose (1, 'T', 2, 'C'), reading only a's `lower` (default upper) triangle, and not
    its diagonal with `unit_diagonal`; the gradient with respect to a lives on that part.

    >>> import fgrad, fgrad.scipy.linalg as sla, numpy as np
    >>> a = np.array([[2.0, 1.0], [0.0, 4.0]])
    >>> fgrad.grad(lambda b: sla.solve_triangular(a, b).sum())(np.ones(2))
    array([0.5  , 0.125])
    """
    if trans not in _TRANS:
        raise ValueError(f"scipy.linalg.solve_triangular: trans must be 0, 1, 2, 'N', 'T' or "
                         f"'C', got {trans!r}")
    n = _square(a, "solve_triangular")
    b2, vector = _as_matrix_rhs(b, n, "solve_triangular")
    x = _trsolve_p(a, b2, lower=bool(lower), trans=_TRANS[trans], unit=bool(unit_diagonal))
    return x[..., 0] if vector else x


# --- inv, det, solve, cholesky, cho_factor, cho_solve -------------------------------------


_SYMMETRIC = ("sym", "her", "pos", "symmetric", "hermitian", "positive definite", "pos def")


def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """SciPy's `linalg.inv` (`fgrad.numpy.linalg.inv`), batched. With `assume_a` 'sym',
    'her' or 'pos' only the `lower` (default upper) triangle is read; with 'upper triangular'
    or 'lower triangular' only that triangle; with 'diagonal' only the diagonal, and the result
    is the inverse of the diagonal part (SciPy 1.17 puts 1/diag on the diagonal but keeps a's
    off-diagonal entries, which is not an inverse)."""
    n = _square(a, "inv")
    eye = _const(_np.eye(n), a)
    if assume_a in (None, "general", "gen"):
        return _la.inv(a)
    if assume_a in _SYMMETRIC:
        return _la.inv(_symmetric_from(a, lower))
    if assume_a in ("upper triangular", "lower triangular"):
        return solve_triangular(a, _np.broadcast_to(eye, _np.shape(primal(a))),
                                lower=assume_a == "lower triangular")
    if assume_a == "diagonal":  # SciPy 1.17 leaves the off-diagonal entries of a in place
        return fnp.expand_dims(1.0 / _la.diagonal(a), -1) * eye
    raise ValueError(f"scipy.linalg.inv: unknown assume_a {assume_a!r}")


def det(a, overwrite_a=False, check_finite=True):
    """SciPy's `linalg.det` (`fgrad.numpy.linalg.det`: its gradient is the transposed
    adjugate, exact at singular matrices too). Float32 in, float32 out (SciPy: float64)."""
    _square(a, "det")
    return _la.det(a)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """SciPy's `linalg.solve`: x with a @ x = b (a.T @ x = b with `transposed`), batched; a
    1-D b is a vector. `assume_a` reads what SciPy reads: one triangle for 'sym'/'her'/'pos'
    (the `lower` one) and for 'upper triangular'/'lower triangular', the diagonal for
    'diagonal', the three central diagonals for 'tridiagonal'."""
    n = _square(a, "solve")
    if assume_a in ("upper triangular", "lower triangular"):  # the triangle of a, not of a.T
        return solve_triangular(a, b, trans=int(bool(transposed)),
                                lower=assume_a == "lower triangular")
    if transposed:
        a = _mT(a)
    if assume_a in _SYMMETRIC:
        a = _symmetric_from(a, lower)
    elif assume_a == "diagonal":
        a = a * _const(_np.eye(n), a)
    elif assume_a == "tridiagonal":
        a = a * _const(_np.tri(n, n, 1) * _np.tri(n, n, 1).T, a)
    elif assume_a not in (None, "general", "gen", "banded"):
        raise ValueError(f"scipy.linalg.solve: unknown assume_a {assume_a!r}")
    return _la.solve(a, b)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """SciPy's `linalg.cholesky`: the UPPER factor U with a = U.T @ U by default (NumPy's
    default is the lower one), the lower L with a = L @ L.T if `lower`. As JAX, it is the
    factor of the symmetric part (a + a.T) / 2, so the gradient is symmetric."""
    _square(a, "cholesky")
    low = _la.cholesky(a)
    return low if lower else _mT(low)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """SciPy's `linalg.cho_factor`: (c, lower) for `cho_solve`. As JAX, c is `cholesky(a,
    lower)` with zeros in its other triangle (SciPy leaves arbitrary entries there)."""
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """SciPy's `linalg.cho_solve((c, lower), b)`: x with a @ x = b from a's Cholesky factor c,
    reading only c's `lower` (or upper) triangle; differentiable in c and b."""
    c, lower = c_and_lower
    lower = bool(lower)
    b2, vector = _as_matrix_rhs(b, _square(c, "cho_solve", "c"), "cho_solve")
    # L L^T x = b: x = L^-T L^-1 b; U^T U x = b: x = U^-1 U^-T b
    y = _trsolve_p(c, b2, lower=lower, trans=int(not lower), unit=False)
    x = _trsolve_p(c, y, lower=lower, trans=int(lower), unit=False)
    return x[..., 0] if vector else x


# --- lu_factor, lu_solve, lu ---------------------------------------------------------------


def _permutation(piv):
    """The rows `perm` with a[perm] = L @ U, from LAPACK's pivots (row i swapped with piv[i])."""
    piv = _np.asarray(piv)
    perm = _np.broadcast_to(_np.arange(piv.shape[-1]), piv.shape).copy()
    for idx in _np.ndindex(piv.shape[:-1]):
        p = perm[idx]
        for i, j in enumerate(piv[idx]):
            p[i], p[j] = p[j], p[i]
    return perm


def _take_rows(x, perm):
    """x[..., perm, :] with a (constant) permutation for every matrix of the batch."""
    if perm.ndim == 1:
        return x[..., perm, :]
    x = broadcast_to(x, perm.shape[:-1] + shape(x)[-2:])
    grids = _np.indices(perm.shape[:-1], sparse=True)
    return x[tuple(g[..., None] for g in grids) + (perm,)]


def _lu_jvp(t, ans, a, perm):
    # P A = L U; with F = L^-1 P dA U^-1 (strictly lower part from dL, upper from dU):
    # dL = L tril(F, -1), dU = triu(F) U, and lu holds both.
    low = _trsolve_p(ans, _take_rows(t, perm), lower=True, trans=0, unit=True)
    f = _mT(_trsolve_p(ans, _mT(low), lower=False, trans=1, unit=False))
    l_mat = _triangle(ans, True, -1) + _const(_np.eye(shape(a)[-1]), a)
    u_mat = _triangle(ans, False)
    return fnp.matmul(l_mat, _triangle(f, True, -1)) + fnp.matmul(_triangle(f, False), u_mat)


def _lu_vjp(ans, a, perm):
    n = shape(a)[-1]
    l_mat = _triangle(ans, True, -1) + _const(_np.eye(n), a)
    u_mat = _triangle(ans, False)
    inverse = _np.argsort(perm, axis=-1)

    def bprop(ct):  # the transpose of _lu_jvp: P^T L^-T G U^-T
        g = (_triangle(fnp.matmul(_mT(l_mat), ct), True, -1)
             + _triangle(fnp.matmul(ct, _mT(u_mat)), False))
        w = _mT(_trsolve_p(ans, _mT(g), lower=False, trans=0, unit=False))
        return _take_rows(_trsolve_p(ans, w, lower=True, trans=1, unit=True), inverse)

    return bprop


_lu_p = defprimitive(
    lambda a, perm: _sl.lu_factor(a)[0],
    vjp=_lu_vjp,
    jvp=_lu_jvp,
    name="lu_factor",
)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """SciPy's `linalg.lu_factor` of a square matrix (batched): (lu, piv), lu holding L's
    strict lower triangle (its diagonal is 1) and U; piv are LAPACK's 0-based pivots, integers
    with no derivative. Differentiable where the pivots do not change.

    >>> import fgrad, fgrad.scipy.linalg as sla, numpy as np
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> f = lambda a: sla.lu_solve(sla.lu_factor(a), np.ones(2)).sum()
    >>> g = lambda a: np.linalg.solve(a, np.ones(2)).sum()
    >>> bool(np.allclose(fgrad.grad(f)(a), fgrad.grad(g)(a)))
    True
    """
    _square(a, "lu_factor")
    luv, piv = _sl.lu_factor(primal(a))
    if type(a) is not Box:
        return luv, piv
    # The primitive factors a again (its value must come from its input); the pivots of this
    # first factorization are the constant its rules use.
    return _lu_p(a, perm=_permutation(piv)), piv


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """SciPy's `linalg.lu_solve((lu, piv), b, trans)`: x with a @ x = b (trans=0) or
    a.T @ x = b (1 or 2), from `lu_factor(a)`; differentiable in lu and b."""
    luv, piv = lu_and_piv
    if trans not in _TRANS:
        raise ValueError(f"scipy.linalg.lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    n = _square(luv, "lu_solve", "lu")
    b2, vector = _as_matrix_rhs(b, n, "lu_solve")
    perm = _permutation(piv)
    if not _TRANS[trans]:  # x = U^-1 L^-1 P b
        y = _trsolve_p(luv, _take_rows(b2, perm), lower=True, trans=0, unit=True)
        x = _trsolve_p(luv, y, lower=False, trans=0, unit=False)
    else:  # a^T = U^T L^T P: x = P^T L^-T U^-T b
        y = _trsolve_p(luv, b2, lower=False, trans=1, unit=False)
        x = _take_rows(_trsolve_p(luv, y, lower=True, trans=1, unit=True),
                       _np.argsort(perm, axis=-1))
    return x[..., 0] if vector else x


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """SciPy's `linalg.lu` of a square matrix (batched): (p, l, u) with a = p @ l @ u, or
    (p @ l, u) with `permute_l`; p (or, with `p_indices`, the row indices with
    a = l[p] @ u) is a constant. A traced non-square a raises ValueError."""
    if type(a) is not Box:
        return _sl.lu(a, permute_l=permute_l, p_indices=p_indices)
    n = _square(a, "lu")
    packed, piv = lu_factor(a)
    perm = _permutation(piv)
    inverse = _np.argsort(perm, axis=-1)
    l_mat = _triangle(packed, True, -1) + _const(_np.eye(n), a)
    u_mat = _triangle(packed, False)
    if permute_l:
        return _take_rows(l_mat, inverse), u_mat
    if p_indices:
        return inverse, l_mat, u_mat
    p = _np.zeros(perm.shape + (n,), dtype=_dtype(a))
    _np.put_along_axis(p, perm[..., :, None], 1.0, axis=-1)  # rows of I in perm's order
    return _np.swapaxes(p, -1, -2), l_mat, u_mat


# --- solve_banded --------------------------------------------------------------------------


def _band_gather(m, rows, lo, n):
    """(m[j + r - lo, ...] for r < rows, j < n; the mask of valid j + r - lo): a gather with
    a constant index array, to be multiplied by the mask."""
    r = _np.arange(rows)[:, None]
    j = _np.arange(n)[None, :]
    idx = j + r - lo
    valid = (idx >= 0) & (idx < n)
    idx = _np.where(valid, idx, 0)
    return m[idx], valid


def _band_transpose(ab, l, u):
    """The band storage (u, l) of a.T from ab, the storage (l, u) of a: abT[r, j] =
    ab[u + l - r, j + r - l]."""
    rows, n = shape(ab)
    r = _np.arange(rows)[:, None]
    cols = _np.arange(n)[None, :] + r - l
    valid = (cols >= 0) & (cols < n)
    rows_idx = _np.broadcast_to(u + l - r, valid.shape)
    return ab[rows_idx, _np.where(valid, cols, 0)] * _const(valid, ab)


def _band_matvec(ab, x, l, u):
    """a @ x for a in band storage ab (l, u) and x (n, k): sum over a's diagonals."""
    abt = _band_transpose(ab, l, u)  # a[i, i + r - l] = abT[r, i]
    xs, valid = _band_gather(x, l + u + 1, l, shape(x)[0])
    return fnp.sum(fnp.expand_dims(abt * _const(valid, ab), -1) * xs, axis=0)


def _banded_vjp_ab(ans, ab, b, l, u):
    like = meta(ab)
    abt = _band_transpose(ab, l, u)

    def bprop(ct):  # d ab[r, j] = d a[j + r - u, j] = -(a^-T ct)[j + r - u] . x[j]
        g = _banded_p(abt, ct, l=u, u=l)
        gs, valid = _band_gather(g, l + u + 1, u, shape(g)[0])
        return unbroadcast(-fnp.sum(gs * ans, axis=-1) * _const(valid, ab), like)

    return bprop


def _banded_vjp_b(ans, ab, b, l, u):
    like = meta(b)
    abt = _band_transpose(ab, l, u)
    return lambda ct: unbroadcast(_banded_p(abt, ct, l=u, u=l), like)


_banded_p = defprimitive(
    lambda ab, b, l, u: _sl.solve_banded((l, u), ab, b),
    vjp=(_banded_vjp_ab, _banded_vjp_b),
    jvp=(
        lambda t, ans, ab, b, l, u: -_banded_p(ab, _band_matvec(t, ans, l, u), l=l, u=u),
        lambda t, ans, ab, b, l, u: _banded_p(ab, t, l=l, u=u),
    ),
    name="solve_banded",
)


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """SciPy's `linalg.solve_banded((l, u), ab, b)`: x with a @ x = b for a banded a stored as
    ab[u + i - j, j] = a[i, j]; b is (n,) or (n, k). The entries of ab outside the matrix
    (its unused corners) have gradient 0. Rules work on the band (cost O(n (l + u) k))."""
    l, u = (int(v) for v in l_and_u)
    abs_ = _np.shape(primal(ab))
    if len(abs_) != 2 or abs_[0] != l + u + 1:
        raise ValueError(
            f"scipy.linalg.solve_banded: 'ab' has {describe(ab)}; it must be 2-D with "
            f"l + u + 1 = {l + u + 1} rows"
        )
    b2, vector = _as_matrix_rhs(b, abs_[1], "solve_banded")
    if _np.ndim(primal(b2)) != 2:
        raise ValueError(f"scipy.linalg.solve_banded: 'b' has {describe(b)}; it must be 1-D "
                         "or 2-D")
    x = _banded_p(ab, b2, l=l, u=u)
    return x[..., 0] if vector else x


# --- solve_sylvester, sqrtm, expm ----------------------------------------------------------


def _sylvester_vjp(i):
    def maker(ans, a, b, q):
        like = meta((a, b, q)[i])

        def bprop(ct):  # G solves A^T G + G B^T = ct
            g = _sylvester_p(_mT(a), _mT(b), ct)
            if i == 0:
                return unbroadcast(-fnp.matmul(g, _mT(ans)), like)
            if i == 1:
                return unbroadcast(-fnp.matmul(_mT(ans), g), like)
            return unbroadcast(g, like)

        return bprop

    return maker


_sylvester_p = defprimitive(
    _sl.solve_sylvester,
    vjp=(_sylvester_vjp(0), _sylvester_vjp(1), _sylvester_vjp(2)),
    jvp=(  # A dX + dX B = dQ - dA X - X dB
        lambda t, ans, a, b, q: _sylvester_p(a, b, -fnp.matmul(t, ans)),
        lambda t, ans, a, b, q: _sylvester_p(a, b, -fnp.matmul(ans, t)),
        lambda t, ans, a, b, q: _sylvester_p(a, b, t),
    ),
    name="solve_sylvester",
)


def solve_sylvester(a, b, q):
    """SciPy's `linalg.solve_sylvester`: X with a @ X + X @ b = q (a (m, m), b (n, n),
    q (m, n)), differentiable in all three where a and -b share no eigenvalue."""
    _square(a, "solve_sylvester")
    _square(b, "solve_sylvester", "b")
    return _sylvester_p(a, b, q)


def _real_sqrtm(a):
    x = _sl.sqrtm(a)
    if _np.iscomplexobj(x) and not _np.iscomplexobj(a):
        raise ValueError(
            "scipy.linalg.sqrtm: this real matrix has no real square root (an eigenvalue is "
            "negative); fgrad differentiates real square roots only"
        )
    return x


_sqrtm_p = defprimitive(
    _real_sqrtm,
    vjp=lambda ans, a: lambda ct: _sylvester_p(_mT(ans), _mT(ans), ct),
    jvp=lambda t, ans, a: _sylvester_p(ans, ans, t),  # X dX + dX X = dA
    name="sqrtm",
)


def sqrtm(A, disp=True, blocksize=64):
    """SciPy's `linalg.sqrtm`: the principal square root X (X @ X = A) of a real matrix with
    no eigenvalue on the closed negative axis; dX solves the Sylvester equation
    X dX + dX X = dA."""
    _square(A, "sqrtm", "A")
    return _sqrtm_p(A)


def _expm_frechet(a, e):
    """L(a, e), the derivative of expm at a along e: the upper-right block of
    expm([[a, e], [0, a]]), in fgrad operations (so it differentiates again)."""
    zero = _np.zeros(_np.broadcast_shapes(_np.shape(primal(a)), _np.shape(primal(e))),
                     dtype=_np.result_type(primal(a), primal(e)))
    a = broadcast_to(a, zero.shape)
    top = fnp.concatenate([a, broadcast_to(e, zero.shape)], axis=-1)
    bottom = fnp.concatenate([zero, a], axis=-1)
    n = zero.shape[-1]
    return _expm_p(fnp.concatenate([top, bottom], axis=-2))[..., :n, n:]


_expm_p = defprimitive(
    _sl.expm,
    vjp=lambda ans, a: lambda ct: _expm_frechet(_mT(a), ct),  # <ct, L(A, E)> = <L(A^T, ct), E>
    jvp=lambda t, ans, a: _expm_frechet(a, t),
    name="expm",
)


def expm(A):
    """SciPy's `linalg.expm`, batched. Its derivative is the Frechet derivative, the
    upper-right block of expm([[A, E], [0, A]]), so it differentiates again (each order
    doubles the size of the matrix exponentiated).

    >>> import fgrad, fgrad.scipy.linalg as sla, numpy as np
    >>> round(float(fgrad.grad(lambda a: sla.expm(a)[0, 0])(np.zeros((1, 1)))[0, 0]), 6)
    1.0
    """
    _square(A, "expm", "A")
    return _expm_p(A)


# --- eigh ----------------------------------------------------------------------------------


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """SciPy's `linalg.eigh`: eigenvalues (ascending) and eigenvectors of a symmetric a, or of
    the generalized problem with a symmetric positive definite b (type 1: a v = w b v,
    2: a b v = w v, 3: b a v = w v), eigenvectors normalized as SciPy's (v.T b v = I for
    types 1, 2; v.T inv(b) v = I for 3). The generalized problem is reduced with b's Cholesky
    factor L to the standard one of L^-1 a L^-T (types 2, 3: L^T a L), so it differentiates in
    a and b. As JAX, a and b are read through their symmetric parts; eigenvector derivatives
    assume distinct eigenvalues (see `fgrad.numpy.linalg.eigh`); eigenvector signs may differ
    from SciPy's. `subset_by_index=(lo, hi)` and `subset_by_value=(lo, hi]` select eigenvalues
    (the selection is a constant); `driver` is ignored.
    """
    n = _square(a, "eigh")
    if type not in (1, 2, 3):
        raise ValueError(f"scipy.linalg.eigh: type must be 1, 2 or 3, got {type!r}")
    if b is None:
        w, v = _la.eigh(a)
    else:
        if _square(b, "eigh", "b") != n:
            raise ValueError(f"scipy.linalg.eigh: 'b' has {describe(b)} but 'a' has "
                             f"{describe(a)}; they must have the same shape")
        low = _la.cholesky(b)
        a = (a + _mT(a)) * 0.5
        if type == 1:  # L^-1 a L^-T
            c = solve_triangular(low, _mT(solve_triangular(low, a, lower=True)), lower=True)
        else:
            c = fnp.matmul(_mT(low), fnp.matmul(a, low))
        w, y = _la.eigh(c)
        v = solve_triangular(low, y, trans=1, lower=True) if type in (1, 2) else fnp.matmul(low, y)
    if subset_by_index is not None:
        lo, hi = (int(i) for i in subset_by_index)
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    elif subset_by_value is not None:
        lo, hi = subset_by_value
        keep = _np.nonzero((_np.asarray(primal(w)) > lo) & (_np.asarray(primal(w)) <= hi))[-1]
        if _np.ndim(primal(w)) != 1:
            raise ValueError("scipy.linalg.eigh: subset_by_value needs a single matrix, not a "
                             "batch (the number of selected eigenvalues may differ)")
        w, v = w[..., keep], v[..., keep]
    return w if eigvals_only else (w, v)
