"""`fgrad.numpy.linalg`: NumPy's linear algebra with forward and reverse rules, to every order.

The factorizations and solvers (`inv`, `solve`, `det`, `slogdet`, `pinv`, `cholesky`, `qr`,
`eigh`, `svd`) are primitives whose rules are written in fgrad operations on the traced
result (`inv`'s bprop is `-ans.T @ ct @ ans.T`), so their derivatives are differentiable
again. Everything else (`norm`, `lstsq`, `matrix_power`, `multi_dot`, `cond`, `eigvalsh`,
`tensorinv`, `tensorsolve`, ...) is a composition of those and of `fgrad.numpy` operations.

A factorization with several results is one primitive whose value packs them into one array
(`eigh`: the eigenvalues as row 0 above the eigenvectors; `svd`, `qr`: the flattened factors
side by side); the public function unpacks it with differentiable indexing. One call of the
LAPACK routine serves every result, and a cotangent given for only some of them arrives as
zeros for the others.

Conventions (where NumPy has no derivative to follow):

- `eigh`, `eigvalsh`, `cholesky`, `svd(hermitian=True)` and `pinv(hermitian=True)` use the
  symmetric part `(a + a.T) / 2` of their input, as JAX does (NumPy reads one triangle only:
  the same for a symmetric a), so the gradient with respect to `a` is symmetric.
- Eigenvector and singular-vector derivatives divide by eigenvalue (singular-value) gaps; where
  a gap is exactly 0 the factor 1/gap is taken as 0 (JAX gives inf or nan there). Eigenvalue-
  only quantities (`eigvalsh`, `svd(compute_uv=False)`, `norm(a, 'nuc')`, `norm(a, 2)`) then
  get their exact gradient at repeated eigenvalues, where they are differentiable.
- The 2-norm (and every p-norm) has gradient 0 at the zero vector (a subgradient; JAX gives nan).
- `det`'s gradient is the transposed adjugate, exact at singular matrices too (its second
  derivative there is exact at rank n-1 with distinct singular values).
- `pinv` (and `lstsq`'s x) differentiate where the rank is locally constant; the full U/Vh of
  `svd` and the complete Q of `qr` for non-square inputs have no derivative (ValueError).
- `lstsq`'s residuals are differentiable (`sum((b - a @ x)**2, axis=0)`); `rank` is an int
  and `slogdet`'s sign a constant.

Imports: `fgrad.core`, `fgrad.primitive`, and the other modules of `fgrad.numpy`.
"""

import builtins
import collections

import numpy as _np

from ..core import Box, primal
from ..primitive import defprimitive, nondiff
from . import arrays as _arrays
from . import products as _products
from .elementwise import abs, sign, where
from .products import matmul  # also exported: NumPy 2's `linalg.matmul` is `matmul`
from .products import vecdot as _vecdot
from .reductions import _product_of_others, max, min
from .shaping import (
    _kept_shape, _normalize_axes, broadcast_to, concatenate, describe, expand_dims, meta,
    moveaxis,
    reshape, shape, sum, swapaxes, transpose, unbroadcast,
)

__all__ = [
    "inv", "pinv", "solve", "det", "slogdet", "lstsq", "cholesky", "qr", "eigh", "eigvalsh",
    "svd", "svdvals", "norm", "vector_norm", "matrix_norm", "matrix_power", "multi_dot",
    "cond", "matrix_rank", "tensorinv", "tensorsolve", "matrix_transpose",
    "matmul", "outer", "tensordot", "cross", "trace", "diagonal", "vecdot",
]

try:  # NumPy 2's result types, so results compare and unpack exactly like NumPy's
    from numpy.linalg._linalg import EighResult, QRResult, SlogdetResult, SVDResult
except ImportError:  # pragma: no cover - older NumPy
    EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
    QRResult = collections.namedtuple("QRResult", ["Q", "R"])
    SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
    SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])

LinAlgError = _np.linalg.LinAlgError  # a ValueError, so `except ValueError` catches it too


# --- helpers -------------------------------------------------------------------------------



def _check_matrix(a, who, arg="a"):
    if _np.ndim(primal(a)) < 2:
        raise LinAlgError(
            f"{who}: argument {arg!r} has {describe(a)}; it must be a matrix or a stack of "
            "matrices (at least 2 dimensions)"
        )


def _check_square(a, who, arg="a"):
    _check_matrix(a, who, arg)
    s = shape(a)
    if s[-1] != s[-2]:
        raise LinAlgError(
            f"{who}: argument {arg!r} has {describe(a)}; its last two dimensions must be "
            "equal (a square matrix or a stack of them)"
        )


def _mT(x):
    """The matrix transpose of the last two axes (NumPy's `matrix_transpose`)."""
    return swapaxes(x, -1, -2)


def _dtype(x):
    return _np.result_type(primal(x))


def _const(values, like):
    """A constant array (no derivative) in the dtype of `like`, so float32 stays float32."""
    return _np.asarray(values, dtype=_dtype(like))


def _diagonal(m):
    """The diagonal of the last two axes, as a product with the identity (differentiable)."""
    return sum(m * _const(_np.eye(shape(m)[-1]), m), axis=-1)


def _diag_embed(v):
    """A stack of diagonal matrices with `v` (..., k) on the diagonal."""
    return expand_dims(v, -1) * _const(_np.eye(shape(v)[-1]), v)


def _inverse_where_nonzero(d):
    """1/d with 0 where d is exactly 0 (the mask is a constant, so this is differentiable).

    The gaps between eigenvalues (or squared singular values) pass through here, and so does
    the diagonal of the gap matrix, which is always 0.
    """
    zero = _np.asarray(primal(d)) == 0
    if not zero.any():
        return 1.0 / d
    return where(zero, 0.0, 1.0 / where(zero, 1.0, d))


def _gaps_inverse(w):
    """F[..., i, j] = 1 / (w_j - w_i), and 0 where w_j == w_i (on the diagonal and at ties)."""
    return _inverse_where_nonzero(expand_dims(w, -2) - expand_dims(w, -1))


def _symmetric_part(a):
    return (a + _mT(a)) * 0.5


def _pack(parts, batch):
    """Several arrays with leading shape `batch`, flattened side by side along one last axis."""
    return _np.concatenate([_np.reshape(p, batch + (-1,)) for p in parts], axis=-1)


def _unpack(packed, shapes):
    """The inverse of `_pack`, in fgrad operations (so cotangents flow to every part)."""
    batch = shape(packed)[:-1]
    out, lo = [], 0
    for s in shapes:
        n = int(_np.prod(s, dtype=_np.int64))
        out.append(reshape(packed[..., lo:lo + n], batch + s))
        lo += n
    return out


def _pack_traced(parts, batch):
    """`_pack` in fgrad operations, for tangents."""
    return concatenate([reshape(p, batch + (-1,)) for p in parts], axis=-1)


# --- inv, solve ----------------------------------------------------------------------------


_inv_p = defprimitive(
    _np.linalg.inv,
    vjp=lambda ans, x: lambda ct: -matmul(_mT(ans), matmul(ct, _mT(ans))),
    jvp=lambda t, ans, x: -matmul(ans, matmul(t, ans)),
    name="inv",
)


def inv(a):
    """NumPy's `linalg.inv`, batched over leading axes. d inv(a) = -inv(a) da inv(a).

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(lambda a: fnp.linalg.inv(a)[0, 0])(fnp.array([[2.0]]))[0, 0])
    -0.25
    """
    _check_square(a, "linalg.inv")
    return _inv_p(a)


def _solve_vjp_a(ans, a, b):
    like = meta(a)
    return lambda ct: unbroadcast(-matmul(_solve_p(_mT(a), ct), _mT(ans)), like)


def _solve_vjp_b(ans, a, b):
    like = meta(b)
    return lambda ct: unbroadcast(_solve_p(_mT(a), ct), like)


# b is a (stack of) matrices here; `solve` handles a vector b by adding and removing an axis.
_solve_p = defprimitive(
    _np.linalg.solve,
    vjp=(_solve_vjp_a, _solve_vjp_b),
    jvp=(
        lambda t, ans, a, b: -_solve_p(a, matmul(t, ans)),
        lambda t, ans, a, b: broadcast_to(_solve_p(a, t), shape(ans)),
    ),
    name="solve",
)


def solve(a, b):
    """NumPy's `linalg.solve`: x with a @ x = b. As in NumPy 2, `b` is a vector only when it is
    1-D; otherwise it is a (stack of) matrices (..., M, K), and batch axes broadcast."""
    _check_square(a, "linalg.solve")
    n = shape(a)[-1]
    if _np.ndim(primal(b)) == 1:
        if shape(b)[0] != n:
            raise LinAlgError(
                f"linalg.solve: 'b' has {describe(b)} but 'a' has {describe(a)}; b's length "
                "must equal a's last dimension"
            )
        return _solve_p(a, expand_dims(b, -1))[..., 0]
    _check_matrix(b, "linalg.solve", "b")
    if shape(b)[-2] != n:
        raise LinAlgError(
            f"linalg.solve: 'b' has {describe(b)} but 'a' has {describe(a)}; b's second-to-"
            "last dimension must equal a's last (pass a 1-D b for a single vector)"
        )
    return _solve_p(a, b)


def tensorinv(a, ind=2):
    """NumPy's `linalg.tensorinv`: `inv` of `a` reshaped to a square matrix, reshaped back."""
    s = shape(a)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive integer, got {ind}")
    out_shape = s[ind:] + s[:ind]
    rows = int(_np.prod(s[:ind], dtype=_np.int64))
    return reshape(inv(reshape(a, (rows, -1))), out_shape)


def tensorsolve(a, b, axes=None):
    """NumPy's `linalg.tensorsolve`: x with tensordot(a, x, x.ndim) = b, through `solve`."""
    nd = _np.ndim(primal(a))
    if axes is not None:
        order = [k for k in range(nd) if k not in [ax % nd for ax in axes]]
        order += [ax % nd for ax in axes]
        a = transpose(a, order)
    s = shape(a)
    old = s[-(nd - _np.ndim(primal(b))):]
    n = int(_np.prod(old, dtype=_np.int64))
    return reshape(solve(reshape(a, (-1, n)), reshape(b, (-1,))), old)


# --- determinants --------------------------------------------------------------------------


def _adjugate_T(x, ans):
    """The transposed adjugate of x (d det(x) / dx), in fgrad operations.

    det(x) inv(x).T where every matrix of the batch is well conditioned (smallest singular
    value above sqrt(eps) times the largest); otherwise from the SVD x = U diag(s) Vh:
    adj(x).T = det(U) det(Vh) U diag(prod of the other s) Vh, an identity that stays exact at
    singular matrices (JAX gets the same from a cofactor solve). The inverse is preferred
    where it is accurate because its own derivative has no trouble at repeated singular
    values (det's second derivative at the identity).
    """
    xv = _np.asarray(primal(x))
    s = _np.linalg.svd(xv, compute_uv=False)
    if xv.size == 0 or _np.all(s[..., -1] > _np.sqrt(_np.finfo(xv.dtype).eps) * s[..., 0]):
        return expand_dims(expand_dims(ans, -1), -1) * _mT(_inv_p(x))
    u, s, vh = svd(x, full_matrices=False)
    turn = _np.linalg.det(_np.asarray(primal(u))) * _np.linalg.det(_np.asarray(primal(vh)))
    others = _product_of_others(s, (len(shape(s)) - 1,))
    return _const(turn, s)[..., None, None] * matmul(u * expand_dims(others, -2), vh)


def _det_vjp(ans, x):
    adj_t = _adjugate_T(x, ans)
    return lambda ct: expand_dims(expand_dims(ct, -1), -1) * adj_t


_det_p = defprimitive(
    _np.linalg.det,
    vjp=_det_vjp,
    jvp=lambda t, ans, x: sum(_adjugate_T(x, ans) * t, axis=(-2, -1)),
    name="det",
)


def det(a):
    """NumPy's `linalg.det`, batched. Its gradient is the transposed adjugate, det(a) inv(a).T
    for invertible a and exact at singular a too (where det(a) inv(a).T would be nan).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(fnp.linalg.det)(fnp.array([[1.0, 2.0], [2.0, 4.0]]))  # singular
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    _check_square(a, "linalg.det")
    return _det_p(a)


_logabsdet_p = defprimitive(
    lambda x: _np.linalg.slogdet(x)[1],
    vjp=lambda ans, x: lambda ct: expand_dims(expand_dims(ct, -1), -1) * _mT(_inv_p(x)),
    jvp=lambda t, ans, x: sum(_mT(_inv_p(x)) * t, axis=(-2, -1)),
    name="logabsdet",
)


def slogdet(a):
    """NumPy's `linalg.slogdet`: (sign, logabsdet). `sign` is a constant (no derivative);
    d logabsdet / da = inv(a).T."""
    _check_square(a, "linalg.slogdet")
    return SlogdetResult(_np.linalg.slogdet(primal(a))[0], _logabsdet_p(a))


# --- pinv, lstsq ---------------------------------------------------------------------------


def _pinv_jvp(t, ans, x, rcond, hermitian):
    """Golub and Pereyra's derivative of the pseudo-inverse P of A (rank locally constant):
    dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P."""
    p, a = ans, x
    tt = _mT(t)
    return (
        -matmul(p, matmul(t, p))
        + matmul(matmul(p, _mT(p)), tt - matmul(tt, matmul(a, p)))
        + matmul(tt - matmul(p, matmul(a, tt)), matmul(_mT(p), p))
    )


def _pinv_vjp(ans, x, rcond, hermitian):
    p, a = ans, x

    def bprop(ct):  # the transpose of _pinv_jvp, term by term
        ctt = _mT(ct)
        pt = _mT(p)
        return (
            -matmul(pt, matmul(ct, pt))
            + matmul(ctt - matmul(matmul(a, p), ctt), matmul(p, pt))
            + matmul(matmul(pt, p), ctt - matmul(ctt, matmul(p, a)))
        )

    return bprop


_pinv_p = defprimitive(
    lambda x, rcond, hermitian: _np.linalg.pinv(x, rcond=rcond, hermitian=hermitian),
    vjp=_pinv_vjp,
    jvp=_pinv_jvp,
    name="pinv",
)

_NOT_GIVEN = object()


def pinv(a, rcond=None, hermitian=False, *, rtol=_NOT_GIVEN):
    """NumPy's `linalg.pinv` (same `rcond`/`rtol` defaults), batched.

    The derivative is Golub and Pereyra's, exact where the rank is locally constant: when no
    singular value is cut, or when the cut ones are exactly 0 (a rank-deficient matrix that
    stays so, like `pinv(b @ c)` with thin b, c). Singular values cut by `rcond` that are not 0
    are treated as if they were.
    """
    _check_matrix(a, "linalg.pinv")
    if rcond is None:
        if rtol is _NOT_GIVEN:
            rcond = 1e-15
        elif rtol is None:
            rcond = builtins.max(shape(a)[-2:]) * float(_np.finfo(_dtype(a)).eps)
        else:
            rcond = rtol
    elif rtol is not _NOT_GIVEN:
        raise ValueError("linalg.pinv: give rcond or rtol, not both")
    if isinstance(rcond, _np.ndarray):
        rcond = float(rcond) if rcond.ndim == 0 else tuple(map(float, rcond.ravel()))
    if hermitian:  # as `eigh`: the symmetric part, so the derivative matches the value
        a = _symmetric_part(a)
    return _pinv_p(a, rcond=rcond, hermitian=bool(hermitian))


def lstsq(a, b, rcond=None):
    """NumPy's `linalg.lstsq`: (x, residuals, rank, s) for 2-D a and 1-D or 2-D b.

    x is `pinv(a) @ b` with NumPy's cutoff (its derivative is pinv's: exact where the rank is
    locally constant); `residuals` (the squared residual norms, given as NumPy gives them: only
    when a has full column rank and more rows than columns) is `sum((b - a @ x)**2, axis=0)`,
    differentiable; `rank` is a plain int; `s` is `svd(a, compute_uv=False)`, differentiable.
    """
    av, bv = _np.asarray(primal(a)), _np.asarray(primal(b))
    if av.ndim != 2 or bv.ndim not in (1, 2):
        raise LinAlgError(
            f"linalg.lstsq: 'a' has {describe(a)} and 'b' has {describe(b)}; a must be 2-D "
            "and b 1-D or 2-D"
        )
    m, n = av.shape
    if bv.shape[0] != m:
        raise LinAlgError(
            f"linalg.lstsq: 'b' has {describe(b)} but 'a' has {describe(a)}; their first "
            "dimensions must be equal"
        )
    _, _, rank, _ = _np.linalg.lstsq(av, bv, rcond=rcond)
    if rcond is None:
        rcond = _np.finfo(_np.result_type(av, bv, _np.float64)).eps * builtins.max(m, n)
    x = matmul(_pinv_p(a, rcond=float(rcond), hermitian=False), b)
    if rank == n and m > n:
        r = b - matmul(a, x)
        residuals = sum(r * r, axis=0)
        if bv.ndim == 1:
            residuals = reshape(residuals, (1,))
    else:
        residuals = _np.array([], dtype=_np.result_type(av, bv, _np.float32))
    return x, residuals, int(rank), svd(a, compute_uv=False)


# --- cholesky ------------------------------------------------------------------------------


def _phi(x):
    """The lower triangle of x with its diagonal halved (self-adjoint: a constant mask)."""
    n = shape(x)[-1]
    return x * _const(_np.tril(_np.ones((n, n))) - 0.5 * _np.eye(n), x)


def _right_solve_T(y, m):
    """y @ inv(m).T, as a solve: (inv(m) @ y.T).T."""
    return _mT(_solve_p(m, _mT(y)))


def _cholesky_jvp(t, ans, x):
    low = ans  # dL = L phi(L^-1 dA L^-T)
    return matmul(low, _phi(_right_solve_T(_solve_p(low, t), low)))


def _cholesky_vjp(ans, x):
    low = ans

    def bprop(ct):  # L^-T phi(L^T ct) L^-1; the symmetric part is taken by `cholesky`
        lt = _mT(low)
        return _right_solve_T(_solve_p(lt, _phi(matmul(lt, ct))), lt)

    return bprop


_cholesky_p = defprimitive(_np.linalg.cholesky, vjp=_cholesky_vjp, jvp=_cholesky_jvp,
                           name="cholesky")


def cholesky(a, /, *, upper=False):
    """NumPy's `linalg.cholesky`: lower L with a = L @ L.T (`upper=True`: L.T), batched.

    As in JAX, the factor is that of the symmetric part (a + a.T) / 2 (NumPy reads the lower
    triangle only: the same for a symmetric a), so the gradient with respect to a is symmetric.
    """
    _check_square(a, "linalg.cholesky")
    low = _cholesky_p(_symmetric_part(a))
    return _mT(low) if upper else low


# --- qr ------------------------------------------------------------------------------------


def _qr_impl(x):
    q, r = _np.linalg.qr(x, mode="reduced")
    return _pack([q, r], x.shape[:-2])


def _qr_parts(packed, m, n):
    return _unpack(packed, [(m, n), (n, n)])


def _qr_jvp(t, ans, x):
    """For m >= n (see J. Townsend, "Differentiating the QR decomposition"):
    X = dA R^-1, B = Q^T X, O = tril(B, -1) - tril(B, -1)^T, dQ = Q (O - B) + X, dR = (B - O) R.
    """
    m, n = shape(x)[-2:]
    q, r = _qr_parts(ans, m, n)
    xr = _right_solve_T(t, _mT(r))
    b = matmul(_mT(q), xr)
    low = b * _const(_np.tril(_np.ones((n, n)), -1), b)
    o = low - _mT(low)
    return _pack_traced([matmul(q, o - b) + xr, matmul(b - o, r)], shape(x)[:-2])


def _qr_vjp(ans, x):
    m, n = shape(x)[-2:]
    q, r = _qr_parts(ans, m, n)
    strict_lower = _const(_np.tril(_np.ones((n, n)), -1), r)

    def bprop(ct):  # the transpose of _qr_jvp
        ct_q, ct_r = _qr_parts(ct, m, n)
        c = matmul(_mT(q), ct_q) - matmul(ct_r, _mT(r))
        coef = (c - _mT(c)) * strict_lower - c
        return _right_solve_T(matmul(q, coef) + ct_q, r)

    return bprop


_qr_p = defprimitive(_qr_impl, vjp=_qr_vjp, jvp=_qr_jvp, name="qr")


def _qr_reduced(a):
    m, n = shape(a)[-2:]
    if m >= n:
        return _qr_parts(_qr_p(a), m, n)
    # Wide: a = [x | y] with x square; Householder QR of a factors x first, so Q is x's and
    # R = [R_x | Q^T y]: a composition, differentiable where x is invertible.
    q, r = _qr_parts(_qr_p(a[..., :m]), m, m)
    return q, concatenate([r, matmul(_mT(q), a[..., m:])], axis=-1)


def qr(a, mode="reduced"):
    """NumPy's `linalg.qr` with mode 'reduced', 'complete' or 'r', batched.

    Differentiable where a's leading min(m, n) columns are independent. With
    mode='complete' and more rows than columns, the extra columns of Q are not determined by
    a, so they have no derivative: a traced input raises ValueError (use mode='reduced').
    """
    _check_matrix(a, "linalg.qr")
    m, n = shape(a)[-2:]
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"linalg.qr: mode must be 'reduced', 'complete' or 'r' (fgrad does not "
            f"differentiate 'raw'), got {mode!r}"
        )
    if mode == "complete" and m > n:
        if type(a) is Box:
            raise ValueError(
                f"linalg.qr: mode='complete' of a tall matrix ({describe(a)}) has no "
                "derivative: its extra columns of Q are arbitrary. Use mode='reduced'."
            )
        return QRResult(*_np.linalg.qr(a, mode="complete"))
    q, r = _qr_reduced(a)
    return r if mode == "r" else QRResult(q, r)


# --- eigh ----------------------------------------------------------------------------------


def _eigh_impl(x, UPLO):
    w, v = _np.linalg.eigh(x, UPLO=UPLO)
    return _np.concatenate([w[..., None, :], v], axis=-2)


def _eigh_parts(packed):
    return packed[..., 0, :], packed[..., 1:, :]


def _eigh_jvp(t, ans, x, UPLO):
    """dw = diag(V^T dA V), dV = V (F * (V^T dA V)) with F_ij = 1/(w_j - w_i)."""
    w, v = _eigh_parts(ans)
    vtv = matmul(_mT(v), matmul(t, v))
    dv = matmul(v, _gaps_inverse(w) * vtv)
    return concatenate([expand_dims(_diagonal(vtv), -2), dv], axis=-2)


def _eigh_vjp(ans, x, UPLO):
    w, v = _eigh_parts(ans)
    f = _gaps_inverse(w)

    def bprop(ct):
        ct_w, ct_v = _eigh_parts(ct)
        inner = f * matmul(_mT(v), ct_v) + _diag_embed(ct_w)
        return matmul(v, matmul(inner, _mT(v)))  # `eigh` takes the symmetric part

    return bprop


_eigh_p = defprimitive(_eigh_impl, vjp=_eigh_vjp, jvp=_eigh_jvp, name="eigh")


def eigh(a, UPLO="L"):
    """NumPy's `linalg.eigh`: (eigenvalues, eigenvectors) of a symmetric matrix, batched.

    As in JAX, it is the decomposition of the symmetric part (a + a.T) / 2, so the gradient
    with respect to a is symmetric (NumPy reads the `UPLO` triangle only: the same for a
    symmetric a). The eigenvector derivative divides by the gaps w_j - w_i; where a gap is
    exactly 0 (a repeated eigenvalue) 1/gap is taken as 0, so eigenvector gradients there are
    not meaningful, while eigenvalue gradients remain exact.
    """
    _check_square(a, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    w, v = _eigh_parts(_eigh_p(_symmetric_part(a), UPLO=UPLO))
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """NumPy's `linalg.eigvalsh`, ascending, from `eigh` (same conventions); its gradient
    V diag(ct) V^T is exact at repeated eigenvalues too."""
    return eigh(a, UPLO)[0]


# --- svd -----------------------------------------------------------------------------------


def _svd_impl(x):
    u, s, vh = _np.linalg.svd(x, full_matrices=False)
    return _pack([u, s, vh], x.shape[:-2])


def _svd_parts(packed, m, n):
    k = builtins.min(m, n)
    return _unpack(packed, [(m, k), (k,), (k, n)])


def _svd_jvp(t, ans, x):
    """The reduced SVD's derivative (as in JAX, real case): with dP = U^T dA V,
    ds = diag(dP), dU = U (F * (dP S + S dP^T)) [+ (I - U U^T) dA V / s if m > n],
    dV = V (F * (S dP + dP^T S)) [+ (I - V V^T) dA^T U / s if m < n], F_ij = 1/(s_j^2 - s_i^2).
    """
    m, n = shape(x)[-2:]
    u, s, vh = _svd_parts(ans, m, n)
    v = _mT(vh)
    f = _gaps_inverse(s * s)
    dp = matmul(_mT(u), matmul(t, v))
    row_s, col_s = expand_dims(s, -2), expand_dims(s, -1)
    dps = dp * row_s
    sdp = col_s * dp
    du = matmul(u, f * (dps + _mT(dps)))
    dv = matmul(v, f * (sdp + _mT(sdp)))
    inv_s = expand_dims(_inverse_where_nonzero(s), -2)
    if m > n:
        dav = matmul(t, v)
        du = du + (dav - matmul(u, matmul(_mT(u), dav))) * inv_s
    elif m < n:
        dau = matmul(_mT(t), u)
        dv = dv + (dau - matmul(v, matmul(vh, dau))) * inv_s
    return _pack_traced([du, _diagonal(dp), _mT(dv)], shape(x)[:-2])


def _svd_vjp(ans, x):
    m, n = shape(x)[-2:]
    u, s, vh = _svd_parts(ans, m, n)
    v = _mT(vh)
    f = _gaps_inverse(s * s)
    row_s, col_s = expand_dims(s, -2), expand_dims(s, -1)

    def bprop(ct):  # the transpose of _svd_jvp
        ct_u, ct_s, ct_vh = _svd_parts(ct, m, n)
        ct_v = _mT(ct_vh)
        j = matmul(_mT(u), ct_u)
        k = matmul(vh, ct_v)
        inner = (f * (j - _mT(j))) * row_s + _diag_embed(ct_s) + col_s * (f * (k - _mT(k)))
        g = matmul(u, matmul(inner, vh))
        if m > n:  # (I - U U^T) ct_U diag(1/s) Vh
            g = g + matmul((ct_u - matmul(u, j)) * expand_dims(_inverse_where_nonzero(s), -2), vh)
        elif m < n:  # U diag(1/s) ct_V^T (I - V V^T)
            g = g + matmul(u, expand_dims(_inverse_where_nonzero(s), -1) * _mT(ct_v - matmul(v, k)))
        return g

    return bprop


_svd_p = defprimitive(_svd_impl, vjp=_svd_vjp, jvp=_svd_jvp, name="svd")


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """NumPy's `linalg.svd`, batched: (U, S, Vh), or S alone with compute_uv=False.

    The singular vectors' derivatives divide by the gaps s_j^2 - s_i^2 and (for non-square a)
    by s; where one is exactly 0, its inverse is taken as 0, so singular-vector gradients at
    repeated (or zero) singular values are not meaningful, while the singular values' gradient
    U diag(ct) Vh is exact. With full_matrices=True and a non-square a, the extra columns of
    U (or rows of Vh) are arbitrary, so a traced input raises ValueError: use
    full_matrices=False. With `hermitian=True` it is computed from `eigh` as NumPy does
    (s = |w| sorted descending, U the matching eigenvectors, Vh = (U sign(w)).T), so it is the
    SVD of the symmetric part (a + a.T) / 2 and the eigenvalue gaps are the ones divided by.
    """
    _check_matrix(a, "linalg.svd")
    m, n = shape(a)[-2:]
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    if type(a) is not Box:
        return _np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    u, s, vh = _svd_parts(_svd_p(a), m, n)
    if not compute_uv:
        return s
    if full_matrices and m != n:
        raise ValueError(
            f"linalg.svd: full_matrices=True of a non-square matrix ({describe(a)}) has no "
            "derivative: its extra singular vectors are arbitrary. Pass full_matrices=False "
            "(or compute_uv=False for the singular values alone)."
        )
    return SVDResult(u, s, vh)


def _take_last(x, idx):
    """x[..., idx] with a different (constant) index vector for every leading position."""
    grids = _np.indices(idx.shape, sparse=True)
    return x[tuple(grids[:-1]) + (idx,)]


def _svd_hermitian(a, compute_uv):
    _check_square(a, "linalg.svd(hermitian=True)")
    w, v = eigh(a)
    wv = _np.asarray(primal(w))
    order = _np.argsort(_np.abs(wv), axis=-1)[..., ::-1]
    s = _take_last(abs(w), order)
    if not compute_uv:
        return s
    signs = _const(_np.take_along_axis(_np.sign(wv), order, axis=-1), w)
    u = _take_last(v, _np.broadcast_to(order[..., None, :], shape(v)))
    return SVDResult(u, s, _mT(u * expand_dims(signs, -2)))


def svdvals(x, /):
    """NumPy's `linalg.svdvals`: `svd(x, compute_uv=False)`."""
    return svd(x, compute_uv=False)


# --- norms ---------------------------------------------------------------------------------


def _pnorm_impl(x, ord, axis, keepdims):
    if ord == 2:
        return _np.sqrt(_np.sum(x * x, axis=axis, keepdims=keepdims))
    return _np.sum(_np.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _pnorm_slope(ans, x, ord, axis):
    """d norm / dx = sign(x) (|x| / norm)^(p-1) (x / norm for p = 2), and 0 where the norm is
    0: a subgradient at the zero vector, where JAX gives nan."""
    a = reshape(ans, _kept_shape(shape(x), axis))
    zero = _np.asarray(primal(a)) == 0
    if not zero.any():
        return x / a if ord == 2 else sign(x) * (abs(x) / a) ** (ord - 1)
    # Where the norm is 0, so is x: both are replaced by 1 inside the masked branch, which
    # keeps it finite, so that its derivatives are 0 rather than nan.
    zero_x = _np.broadcast_to(zero, shape(x))
    a, x = where(zero, 1.0, a), where(zero_x, 1.0, x)
    g = x / a if ord == 2 else sign(x) * (abs(x) / a) ** (ord - 1)
    return where(zero_x, 0.0, g)


def _pnorm_vjp(ans, x, ord, axis, keepdims):
    slope = _pnorm_slope(ans, x, ord, axis)
    kept = _kept_shape(shape(x), axis)
    return lambda ct: reshape(ct, kept) * slope


_pnorm_p = defprimitive(
    _pnorm_impl,
    vjp=_pnorm_vjp,
    jvp=lambda t, ans, x, ord, axis, keepdims: sum(
        t * _pnorm_slope(ans, x, ord, axis), axis=axis, keepdims=keepdims
    ),
    name="norm",
)


def _vector_norm(x, ord, axes, keepdims):
    if ord is None:
        ord = 2
    if isinstance(ord, str):
        raise ValueError(f"linalg.norm: invalid norm order {ord!r} for vectors")
    if ord == _np.inf:
        return max(abs(x), axis=axes, keepdims=keepdims)
    if ord == -_np.inf:
        return min(abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:  # the number of nonzero entries: a constant
        xv = _np.asarray(primal(x))
        dtype = xv.dtype if _np.issubdtype(xv.dtype, _np.inexact) else _np.float64
        return _np.sum(xv != 0, axis=axes, keepdims=keepdims).astype(dtype)[()]
    if ord == 1:
        return sum(abs(x), axis=axes, keepdims=keepdims)
    return _pnorm_p(x, ord=float(ord), axis=axes, keepdims=keepdims)


def _matrix_norm(x, ord, row, col, keepdims):
    nd = len(shape(x))
    if ord in (None, "fro", "f"):
        out = _pnorm_p(x, ord=2.0, axis=tuple(sorted((row, col))), keepdims=False)
    elif ord in (2, -2, "nuc"):
        s = svd(moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        out = sum(s, axis=-1) if ord == "nuc" else (max if ord == 2 else min)(s, axis=-1)
    elif ord in (1, -1):  # the largest (smallest) column sum of |x|
        sums = sum(abs(x), axis=row)
        out = (max if ord == 1 else min)(sums, axis=col - 1 if col > row else col)
    elif ord in (_np.inf, -_np.inf):  # the largest (smallest) row sum of |x|
        sums = sum(abs(x), axis=col)
        out = (max if ord == _np.inf else min)(sums, axis=row - 1 if row > col else row)
    else:
        raise ValueError(
            f"linalg.norm: invalid norm order {ord!r} for matrices; use None, 'fro', 'nuc', "
            "1, -1, 2, -2, inf or -inf"
        )
    if keepdims:
        out = reshape(out, _kept_shape(shape(x), (row, col)) if nd else ())
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's `linalg.norm`: every vector `ord` (None, 2, 1, inf, -inf, 0, other p) and
    matrix `ord` (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf), `axis` an int or a pair, and
    `keepdims`.

    Conventions: a p-norm (the 2-norm included) has gradient 0 at the zero vector (a
    subgradient; JAX gives nan); ord=0 counts nonzeros and has no derivative; 1, inf and the
    matrix 1/inf norms follow `abs` (abs'(0) = 1) and `max` (ties share evenly); 2, -2 and
    'nuc' use the singular values, whose gradient is exact at repeated singular values.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(fnp.linalg.norm)(fnp.array([3.0, 4.0]))
    array([0.6, 0.8])
    """
    nd = _np.ndim(primal(x))
    if axis is None:
        if ord is None or (ord in ("fro", "f") and nd == 2) or (ord == 2 and nd == 1):
            out = _pnorm_p(x, ord=2.0, axis=tuple(range(nd)), keepdims=False)
            return reshape(out, (1,) * nd) if keepdims else out
        axes = tuple(range(nd))
    else:
        axes = axis if isinstance(axis, tuple) else (int(axis),)
    if len(axes) == 1:
        return _vector_norm(x, ord, _normalize_axes(axes, nd), keepdims)
    if len(axes) == 2:
        row, col = (int(ax) % nd if -nd <= ax < nd else _bad_axis(ax, nd) for ax in axes)
        if row == col:
            raise ValueError(f"linalg.norm: duplicate axes {axes}")
        return _matrix_norm(x, ord, row, col, keepdims)
    raise ValueError(
        f"linalg.norm: x has {describe(x)} and axis={axis}; give axis as one int (a vector "
        "norm) or a pair (a matrix norm)"
    )


def _bad_axis(ax, nd):
    raise ValueError(f"linalg.norm: axis {ax} is out of bounds for an array of dimension {nd}")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """NumPy's `linalg.vector_norm`: `axis=None` takes the norm of all entries."""
    nd = _np.ndim(primal(x))
    if axis is None:
        out = _vector_norm(reshape(x, (-1,)), ord, (0,), False)
        return reshape(out, (1,) * nd) if keepdims else out
    return _vector_norm(x, ord, _normalize_axes(axis, nd), keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """NumPy's `linalg.matrix_norm`: a matrix norm over the last two axes."""
    _check_matrix(x, "linalg.matrix_norm", "x")
    nd = _np.ndim(primal(x))
    return _matrix_norm(x, ord, nd - 2, nd - 1, keepdims)


def cond(x, p=None):
    """NumPy's `linalg.cond`: s_max / s_min for p None, 2 (s_min / s_max for -2), otherwise
    norm(x, p) * norm(inv(x), p)."""
    _check_matrix(x, "linalg.cond", "x")
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    _check_square(x, "linalg.cond", "x")
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


matrix_rank = nondiff(_np.linalg.matrix_rank, name="matrix_rank")


def matrix_transpose(x, /):
    """NumPy's `linalg.matrix_transpose`: swap the last two axes."""
    _check_matrix(x, "linalg.matrix_transpose", "x")
    return _mT(x)


# --- products ------------------------------------------------------------------------------


def matrix_power(a, n):
    """NumPy's `linalg.matrix_power` for an integer n, by repeated squaring; a negative n
    powers `inv(a)`; n = 0 gives the identity (a constant)."""
    _check_square(a, "linalg.matrix_power")
    if not isinstance(n, (int, _np.integer)) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an integer, got {n!r}")
    n = int(n)
    if n == 0:
        return _np.broadcast_to(_const(_np.eye(shape(a)[-1]), a), shape(a)).copy()
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = matmul(base, base)


def multi_dot(arrays, *, out=None):
    """NumPy's `linalg.multi_dot`: a chain of matmuls in the cheapest order (the same
    dynamic programme as NumPy); the first and last arrays may be 1-D."""
    if out is not None:
        raise TypeError(
            "linalg.multi_dot(..., out=...) cannot write into an array inside a transform; "
            "use the returned value"
        )
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("linalg.multi_dot: expecting at least two arrays")
    first_1d, last_1d = _np.ndim(primal(arrays[0])) == 1, _np.ndim(primal(arrays[-1])) == 1
    if first_1d:
        arrays[0] = expand_dims(arrays[0], 0)
    if last_1d:
        arrays[-1] = expand_dims(arrays[-1], -1)
    for i, arr in enumerate(arrays):
        if _np.ndim(primal(arr)) != 2:
            raise ValueError(
                f"linalg.multi_dot: array {i} has {describe(arr)}; all must be 2-D (the "
                "first and last may be 1-D)"
            )
    result = _chain(arrays, _chain_order(arrays), 0, len(arrays) - 1)
    if first_1d and last_1d:
        return result[0, 0]
    if first_1d:
        return result[0]
    if last_1d:
        return result[:, 0]
    return result


def _chain_order(arrays):
    """split[i][j]: where the cheapest product of arrays i..j splits (matrix-chain order)."""
    dims = [shape(arrays[0])[0]] + [shape(a)[1] for a in arrays]
    n = len(arrays)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


# --- NumPy 2's array-API spellings of products and diagonals (over the last axes) ----------


def outer(x1, x2, /):
    """NumPy's `linalg.outer`: the outer product of two 1-D arrays."""
    for arg, x in (("x1", x1), ("x2", x2)):
        if _np.ndim(primal(x)) != 1:
            raise ValueError(f"linalg.outer: {arg!r} has {describe(x)}; it must be 1-D")
    return _products.outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    """NumPy's `linalg.tensordot`."""
    return _products.tensordot(x1, x2, axes=axes)


def cross(x1, x2, /, *, axis=-1):
    """NumPy's `linalg.cross`: of 3-vectors along `axis`."""
    for arg, x in (("x1", x1), ("x2", x2)):
        if shape(x)[axis] != 3:
            raise ValueError(
                f"linalg.cross: {arg!r} has {describe(x)}; axis {axis} must have length 3"
            )
    return _products.cross(x1, x2, axis=axis)


def trace(x, /, *, offset=0, dtype=None):
    """NumPy's `linalg.trace`: over the last two axes."""
    return _arrays.trace(x, offset, -2, -1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    """NumPy's `linalg.diagonal`: of the last two axes."""
    return _arrays.diagonal(x, offset, -2, -1)


def vecdot(x1, x2, /, *, axis=-1):
    """NumPy's `linalg.vecdot`: sum(conj(x1) * x2) over `axis`, with broadcasting."""
    return _vecdot(x1, x2, axis=axis)
