"""`fgrad.numpy.linalg`: NumPy's linear algebra with forward and reverse rules, to every order,
for real and complex input.

The factorizations and solvers (`inv`, `solve`, `det`, `slogdet`, `pinv`, `cholesky`, `qr`,
`eigh`, `eig`, `svd`) are primitives whose rules are written in fgrad operations on the traced
results (`inv`'s bprop is `-ans.T @ ct @ ans.T`), so their derivatives are differentiable
again. A factorization with several results (`svd`, `eigh`, `eig`, `qr`, `slogdet`) is one
primitive with several outputs: one LAPACK call serves all of them, each output keeps its own
dtype (the singular values of a complex matrix are real), and a bprop receives one cotangent
per output, None for an output nobody used. The value-only names (`svdvals`, `eigvalsh`,
`eigvals`, `svd(compute_uv=False)`) call NumPy's value-only routine, whose result is NumPy's
to the last bit, and their rules call the full factorization. Everything else (`norm`,
`lstsq`, `matrix_power`, `multi_dot`, `cond`, `tensorinv`, `tensorsolve`, ...) is a
composition of those and of `fgrad.numpy` operations. Results have NumPy's result types
(`SVDResult`, `EighResult`, `EigResult`, `QRResult`, `SlogdetResult`) and NumPy's dtypes,
traced or not.

Complex numbers follow JAX's convention (see `fgrad.grad`): the cotangent of a complex input z
of a real-valued f is df/dRe(z) - i df/dIm(z), and a reverse rule is the transpose of its
forward rule under the pairing Re(sum(ct * t)), without conjugation. So the rules of the
holomorphic functions (`inv`, `det`, `solve`) have plain transposes, and the others have
conjugate transposes where the function has them (`eigh`'s forward rule has V^H dA V, its
reverse rule conj(V) C V^T).

Conventions (where NumPy has no derivative to follow):

- `eigh`, `eigvalsh`, `cholesky`, `svd(hermitian=True)` and `pinv(hermitian=True)` read what
  NumPy (LAPACK) reads: one triangle of their input (`UPLO`'s; `cholesky`'s lower one, its
  upper one with `upper=True`) and the real part of its diagonal. So their values are NumPy's
  for any input, Hermitian or not, and their derivatives are those of NumPy's functions: the
  gradient is 0 outside the triangle read, and an entry of that triangle off the diagonal gets
  both its own and its mirror's share (twice the Hermitian part's entry). JAX decomposes the
  Hermitian part `(a + a^H) / 2` instead: the same value for a Hermitian input, a different
  value otherwise, and a Hermitian gradient.
- Eigenvector and singular-vector derivatives divide by eigenvalue (singular-value) gaps;
  where a gap is exactly 0 (a repeated eigenvalue) the vectors of the tie have no derivative,
  and a derivative that depends on them is nan, as JAX's, never a finite guess. Forward rules
  keep the exact 0 where the tangent does not couple the tie (V^H dA V is 0 there), and a
  simple eigenvector's derivative is finite next to a tie (forward mode; reverse mode gives
  nan, as JAX). Eigenvalue-only quantities (`eigvalsh`, `svdvals`, `eigvals`,
  `norm(a, 'nuc')`, `norm(a, 2)`) get their exact gradient at repeated eigenvalues (their
  rules use the vectors only, not the gaps), but their second derivatives there are nan: the
  exact one needs the second derivative of the function of the eigenvalues at the tie, which
  no rule of the eigenvalues sees. (Near a tie, 1/gap is huge and so are the derivatives.)
  At a defective (non-diagonalizable) matrix, where eig's eigenvectors are linearly dependent
  to working precision (V's smallest singular value at most n eps times its largest), every
  derivative of `eig` and `eigvals` is nan: the eigenvalues have none there.
- Phases. The eigenvectors of `eigh` and the singular vectors of `svd` of a complex matrix are
  fixed only up to a phase each (a sign for real input): fgrad's factors are NumPy's (LAPACK's)
  and their derivatives take JAX's gauge (`eigh`: Im(V^H dV) has a zero diagonal; `svd`: so
  has V^H dV, and U's carries the rest). A function of the factors that does not depend on
  the phases (`U @ diag(f(s)) @ Vh`, `abs(V)`, a projector) has the exact derivative; the
  phases themselves have none. `eig`'s eigenvectors are differentiated under LAPACK's own
  normalization (unit norm, largest-magnitude component real), as JAX's
  `enable_eigvec_derivs`, so they match finite differences of NumPy's values; `qr`'s R has a
  real diagonal (LAPACK's), which fixes its phases, and `cholesky` is unique.
- Norms have no derivative at 0; the gradient there is a subgradient, which depends on `ord`:
  0 for the vector p-norms other than 1 and +-inf (the 2-norm included) and for 'fro' (the
  minimum's; JAX gives nan); ones for the vector 1-norm (real `abs'(0)` is 1, as JAX's), 1/n
  each for the inf-norm (the tie shares), and nonzero ones for the matrix 1, inf, 2 and 'nuc'
  norms (see `norm`). A jvp at 0 is that subgradient applied to the tangent, not a
  directional derivative (which is the norm of the tangent): it can be negative.
- `det`'s gradient is the transposed adjugate, and its derivatives of every order are exact
  at matrices of any rank (an average of regular adjugates, see `_adjugate_T_shifted`).
- `slogdet`'s sign is a constant for real input and differentiable for complex input
  (d sign = i Im(tr(inv(a) da)) sign).
- `pinv` (and `lstsq`'s x) differentiate NumPy's truncated pseudo-inverse (exact away from
  the cutoff, where it jumps).
- The extra columns of `svd`'s full U and Vh and of `qr`'s complete Q (non-square inputs) are
  any orthonormal basis of a complement, which the input does not determine: their
  derivative is the least rotation that keeps them orthogonal (`_complement_tangent`), so the
  other factors and the projector onto them have their true derivatives (JAX raises).
- `lstsq`'s residuals are differentiable (`sum(|b - a @ x|**2, axis=0)`); `rank` is an integer.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.taylor` (rules), and the other modules of
`fgrad.numpy`.
"""

from __future__ import annotations

import builtins
import collections
from typing import TYPE_CHECKING

import numpy as _np

from .. import batching as _batching, core as _core, taylor as _taylor
from ..core import Primitive, bind, constant_of, dtype_of, primal
from ..primitive import deflinear, defprimitive, nondiff, register_rules
from . import arrays as _arrays, products as _products
from ._mirror import exported, mirror, missing_names
from .elementwise import (
    abs,
    conj,
    equal,
    greater,
    imag,
    isfinite,
    less,
    logical_and,
    logical_not,
    logical_or,
    mask_values,
    may_hold,
    not_equal,
    read_any,
    real,
    sign,
    where,
)
from .products import conj_if_complex as _conj, vecdot as _vecdot, whole_along
from .reductions import max, min
from .shaping import (
    _kept_shape,
    _normalize_axes,
    asarray,
    astype,
    batch_size,
    batch_to_front,
    broadcast_to,
    concatenate,
    describe,
    expand_dims,
    is_traced,
    meta,
    moveaxis,
    nondiff_function,
    numpy_applies,
    read_int,
    reshape,
    shape,
    sum,
    swapaxes,
    transpose,
    unbroadcast,
    with_example_ndim,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..typing import Array, ArrayLike, DTypeLike

_matmul = _products.matmul  # the primitive, for the rules below


try:  # NumPy 2's result types, so results compare and unpack exactly like NumPy's
    from numpy.linalg._linalg import (
        EighResult,
        EigResult,
        QRResult,
        SlogdetResult,
        SVDResult,
    )
except ImportError:  # pragma: no cover - older NumPy (mypy reads NumPy 2's stubs: redefined)
    EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])  # type: ignore[no-redef]
    EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])  # type: ignore[no-redef]
    QRResult = collections.namedtuple("QRResult", ["Q", "R"])  # type: ignore[no-redef]
    SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])  # type: ignore[no-redef]
    SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])  # type: ignore[no-redef]

_LinAlgError = _np.linalg.LinAlgError  # a ValueError, so `except ValueError` catches it too


# --- chunked arrays of other libraries ------------------------------------------------------------


def _in_blocks(x):
    """Whether x is a chunked array of another library with a block map (a Dask array)."""
    return type(x) is not _np.ndarray and _core.is_foreign_array(x) and hasattr(x, "map_blocks")


def _library(x):
    """The name of the library of x's value under all its boxes ("dask"), for messages."""
    return type(_core.innermost(x)).__module__.split(".")[0]


def _lazy(x):
    """Whether x's value, under all its boxes (nothing is read), is a lazy array of another
    library."""
    x = _core.innermost(x)
    return type(x) is not _np.ndarray and _core.is_foreign_array(x)


def _unreadable(x):
    """Whether a rule must not read x's values: x has one value per row (under `vmap`), or it
    is a lazy array of another library (reading would compute it). The rules then take their
    general branch, which reads nothing."""
    return _core.holds_batch(x) or _lazy(x)


def _unread(x):
    """`_unreadable`, or x is computed in a `jit` record (reading it would be a guard on every
    element, and a record per call), for the rules whose general branch gives the same bits
    as the branch that reads (hermitian `svd`, `norm` of order 0; not `lstsq`'s rank or
    `sqrtm`'s, which LAPACK and the general branch may count apart)."""
    return _unreadable(x) or _core.holds_staged(x)


def per_matrix(func):
    """`func`, a NumPy function of stacks of matrices (the last two axes of each argument), as
    a primitive's value that also takes chunked arrays of another library.

    NumPy arrays go to `func` as they are. Dask has no `det`, `slogdet`, `eig`, `eigh` or
    `pinv`, no linear algebra on stacks of matrices, and needs chunkings fgrad cannot choose
    for the rest (square chunks for `inv` and `solve`, one chunked axis for `qr` and `svd`):
    there `func` runs lazily on each block, each block holding whole matrices (the two matrix
    axes rechunked into one chunk, the batch axes of every argument broadcast and chunked
    alike). So each matrix is NumPy's, bit for bit, and nothing is computed until asked. A
    function of several results runs once per result and block."""

    def value(*xs, **params):
        if any(map(_in_blocks, xs)):
            return _blockwise(func, xs, params)
        try:
            return func(*xs, **params)
        except ValueError:
            # SciPy's solve_triangular and solve_sylvester refuse a stack of no matrices,
            # which a derivative of lu or sqrtm of one gives them: its empty results
            batch = _np.broadcast_shapes(*(_np.shape(x)[:-2] for x in xs))
            if 0 not in batch:
                raise
            return _no_matrices(func, xs, params, batch)

    value.__name__ = value.__qualname__ = getattr(func, "__name__", "per_matrix")
    return value


def matrix_primitive(name: str, func: Callable[..., Any], vjp: Any, jvp: Any) -> Primitive:
    """The primitive `name` of a NumPy or SciPy `func` on stacks of matrices (through
    `per_matrix`), with its reverse rules and its forward rules written by hand (transposing a
    factorization's or a solve's reverse rule costs more)."""
    return defprimitive(per_matrix(func), vjp=vjp, jvp=jvp, name=name, forward="speed")


def _blockwise(func, xs, params):
    template = next(x for x in xs if _in_blocks(x))
    batch = _np.broadcast_shapes(*(_np.shape(x)[:-2] for x in xs))
    nb = len(batch)
    blocked = []
    for x in xs:
        if not _in_blocks(x):  # a NumPy operand: as a Dask array, so that it is cut alike
            x = _np.zeros(_np.shape(x), dtype=x.dtype, like=template) + _in_value_order(x)
        blocked.append(whole_along(_np.broadcast_to(x, batch + x.shape[-2:]), (-2, -1)))
    batch_chunks = blocked[0].chunks[:nb]
    blocked = [x.rechunk(batch_chunks + x.chunks[nb:]) for x in blocked]
    # One matrix of each argument gives the results' dtypes and matrix shapes: the identity
    # (positive definite, as cholesky needs), else a random one (a band of ones may be singular).
    sample = _sample(func, blocked, nb, params)
    several = isinstance(sample, tuple)

    def result(k, out):
        core = out.shape[nb:]
        take = (lambda *b: func(*b, **params)[k]) if several else (lambda *b: func(*b, **params))
        return blocked[0].map_blocks(
            take,
            *blocked[1:],
            chunks=batch_chunks + tuple((n,) for n in core),
            drop_axis=list(range(nb + len(core), nb + 2)),
            dtype=out.dtype,
            meta=_np.empty((0,) * (nb + len(core)), dtype=out.dtype),
        )

    if several:
        return tuple(result(k, out) for k, out in enumerate(sample))
    return result(0, sample)


def _in_value_order(x):
    """x with its elements in memory in the order of its values (C order; a copy if they were
    not). Dask names a task by a hash of its NumPy operands' memory (`ravel(order="K")`), so
    a matrix and its transposed view (or a reversed view) hash alike: `zeros + m` and
    `zeros + m.T` would be one task, and one silently replace the other in a graph."""
    return _np.asarray(x, order="C")


def _sample(func, xs, nb, params):
    """func of one matrix of each argument (a batch of one along each of the nb batch axes),
    which gives the results' dtypes and matrix shapes: the identity (positive definite, as
    cholesky needs), else a random one (a band of ones may be singular)."""
    try:
        return func(*(_np.eye(*x.shape[-2:], dtype=x.dtype)[(None,) * nb] for x in xs), **params)
    except (_LinAlgError, ValueError):
        rng = _np.random.default_rng(0)
        samples = (rng.standard_normal((1,) * nb + x.shape[-2:]).astype(x.dtype) for x in xs)
        return func(*samples, **params)


def _no_matrices(func, xs, params, batch):
    """The empty results of func on a stack of no matrices (shape `batch`, one axis 0)."""
    nb = len(batch)
    sample = _sample(func, [_np.asarray(x) for x in xs], nb, params)

    def empty(out):
        return _np.empty(batch + out.shape[nb:], dtype=out.dtype)

    return tuple(map(empty, sample)) if isinstance(sample, tuple) else empty(sample)


# --- the rules of a primitive of stacks of matrices -----------------------------------------------
# NumPy's linalg functions broadcast over leading axes, so a batch is one more leading axis: the
# rules put every batched operand's batch axis first (with length-1 axes after it where operands
# have different numbers of leading axes, as `products.gufunc_batch_rule`) and apply the
# primitive once; the rows come out on axis 0. `_leading_axes_rule` makes that `vmap` rule, and
# `_register_per_matrix` registers it with the sparsity ("blocks", core_ndims) (each output
# element depends on the whole matrix at its place in the stack) for hermitian_from_triangle,
# inv, solve, det, slogdet, pinv, cholesky, qr, eigh, eigvalsh, eig, eigvals, svd and svdvals,
# in the primitive's block; matrix_rank (of stacks, no derivative) uses the rule alone.
# LAPACK raises on a singular, not positive definite or non-converging input: those of them that
# can (inv, solve, pinv, lstsq's rank, cholesky, eigh, eigvalsh, eig, eigvals, svd, svdvals)
# declare `raises_on_values`, so that a `jit` replay keeps the call where its result goes unused
# (a check), as the eager call raises.


def _leading_axes_rule(prim, core_ndims):
    """The rule of a primitive that broadcasts over leading axes, its operands having
    `core_ndims` core axes each (2 for a matrix, 0 for a scalar per matrix)."""

    def rule(args, dims, **params):
        loops = builtins.max(
            len(shape(a)) - (d is not None) - c for a, d, c in zip(args, dims, core_ndims)
        )
        aligned = [
            a if d is None else with_example_ndim(a, d, loops + c)
            for a, d, c in zip(args, dims, core_ndims)
        ]
        out = bind(prim, aligned, params)
        return (out, (0,) * len(out)) if prim.multiple_results else (out, 0)

    return rule


def _register_per_matrix(prim, core_ndims=(2,), **rules):
    """Register `prim`'s `vmap` rule and sparsity as a primitive of stacks of matrices (its
    operands having `core_ndims` core axes each), with its other `rules` (`register_rules`'
    keywords): both follow from the core axes, so they are declared together."""
    register_rules(
        prim,
        batch=_leading_axes_rule(prim, core_ndims),
        sparsity=("blocks", core_ndims),
        **rules,
    )


# --- helpers --------------------------------------------------------------------------------------


def _check_matrix(a, who, arg="a"):
    if len(shape(a)) < 2:
        raise _LinAlgError(
            f"{who}: argument {arg!r} has {describe(a)}; it must be a matrix or a stack of "
            "matrices (at least 2 dimensions)"
        )


def _check_square(a, who, arg="a"):
    _check_matrix(a, who, arg)
    s = shape(a)
    if s[-1] != s[-2]:
        raise _LinAlgError(
            f"{who}: argument {arg!r} has {describe(a)}; its last two dimensions must be "
            "equal (a square matrix or a stack of them)"
        )


def _mT(x):
    """The matrix transpose of the last two axes (NumPy's `matrix_transpose`)."""
    return swapaxes(x, -1, -2)


def _H(x):
    """The conjugate transpose of the last two axes (the transpose of a real x)."""
    return _conj(swapaxes(x, -1, -2))


def _is_complex(x):
    return _np.issubdtype(dtype_of(x), _np.complexfloating)


def _dtype(x):
    return dtype_of(x)


def _const(values, like):
    """A constant array (no derivative) in the dtype of `like`, so float32 stays float32."""
    return _np.asarray(values, dtype=_dtype(like))


def _diagonal(m):
    """The diagonal of the last two axes, as a product with the identity (differentiable)."""
    return sum(m * _const(_np.eye(shape(m)[-1]), m), axis=-1)


def _diag_embed(v):
    """A stack of diagonal matrices with `v` (..., k) on the diagonal."""
    return expand_dims(v, -1) * _const(_np.eye(shape(v)[-1]), v)


def _onehot(mask, like):
    """A boolean mask as a constant 0/1 array in the dtype of `like`."""
    dt = _dtype(like)
    return where(mask, _np.ones((), dt), _np.zeros((), dt))


def _first_largest(m):
    """The boolean one-hot of the first largest entry along m's last axis (NumPy's argmax),
    from comparisons of every pair of entries, so that it batches: no row's value is read."""
    n = shape(m)[-1]
    mine, other = expand_dims(m, -1), expand_dims(m, -2)  # [..., i, j]: m_i and m_j
    beaten = logical_or(
        greater(other, mine), logical_and(equal(other, mine), _np.tri(n, n, -1, dtype=bool))
    )
    return equal(sum(where(beaten, 1.0, 0.0), axis=-1), 0.0)


def _descending_order(m):
    """P (..., n, n) with P[..., i, r] = 1 where entry i of m's last axis comes r-th in NumPy's
    `argsort(m)[..., ::-1]` (ties: the later entry first), from comparisons, so that it
    batches. `_reordered(x, P)` applies it."""
    n = shape(m)[-1]
    mine, other = expand_dims(m, -1), expand_dims(m, -2)
    ahead = logical_or(
        greater(other, mine), logical_and(equal(other, mine), _np.tri(n, n, -1, dtype=bool).T)
    )
    rank = sum(where(ahead, 1.0, 0.0), axis=-1)
    return equal(expand_dims(rank, -1), _np.arange(n, dtype=float))


def _reordered(x, order):
    """x[..., k] reordered along its last axis by the one-hot `order` (P[i, r]: entry i goes
    to place r): a product with a 0/1 matrix, exact for finite x."""
    p = _onehot(order, x)
    if len(shape(x)) == len(shape(order)) - 1:  # a vector per matrix of `order`
        return _matmul(expand_dims(x, -2), p)[..., 0, :]
    return _matmul(x, p)


def _imag_part(z):
    """i Im(z) = z - Re(z), a complex array with z's dtype."""
    return z - real(z)


def _plus(x, y):
    """x + y where either may be None (a zero)."""
    return y if x is None else x if y is None else x + y


def _inverse_where_nonzero(d):
    """1/d with 0 where d is exactly 0 (the mask is a constant, so this is differentiable):
    `svd`'s 1/s for the columns a non-square matrix adds."""
    zero = mask_values(d) == 0
    if not may_hold(zero):
        return 1.0 / d
    return where(zero, 0.0, 1.0 / where(zero, 1.0, d))


def _gaps_inverse(w):
    """F[..., i, j] = 1 / (w_j - w_i), 0 on the diagonal, and nan where w_j == w_i off it: a
    repeated eigenvalue (singular value), where the vectors of the tie have no derivative, so
    that a derivative that depends on them is nan (as JAX's), not a wrong number."""
    return _gaps_inverse_and_ties(w)[0]


def _gaps_inverse_and_ties(w):
    """`_gaps_inverse(w)` and the mask of its ties (None where there is none), for
    `_times_gaps_inverse`."""
    gaps = expand_dims(w, -2) - expand_dims(w, -1)
    zero = mask_values(gaps) == 0  # the diagonal at least
    inverse = where(zero, 0.0, 1.0 / where(zero, 1.0, gaps))
    tie = _np.logical_and(zero, ~_np.eye(shape(w)[-1], dtype=bool))
    if not may_hold(tie):
        return inverse, None
    return where(tie, _np.nan, inverse), tie


def _times_gaps_inverse(f, tie, t):
    """f * t in a forward rule, for (F, tie) = `_gaps_inverse_and_ties(w)` and t the tangent
    in the basis of the vectors (V^H dA V): where a tie meets an exact 0 of t, 0. A direction
    that does not couple the tie (t_ij = 0: a diagonal dA at a diagonal a) keeps the exact
    derivative of every smooth function of the factors, and a simple eigenvector's derivative
    is finite anyway (its column of F has no tie). Reverse rules keep the nan: their cotangent
    can be 0 at a tie by accident (the weight w_j of v_j at w_j = 0), which a 0 would make
    wrong."""
    if tie is None:
        return f * t
    return where(_np.logical_and(tie, mask_values(t) == 0), 0.0, f * t)


def _right_solve(y, m):
    """y @ inv(m), as a solve: (inv(m).T @ y.T).T."""
    return _mT(_solve_p(_mT(m), _mT(y)))


def _right_solve_T(y, m):
    """y @ inv(m).T, as a solve: (inv(m) @ y.T).T."""
    return _mT(_solve_p(m, _mT(y)))


def _read_triangle_impl(x, lower):
    foreign = type(x) is not _np.ndarray and _core.is_foreign_array(x)
    xv = x if foreign else _np.asarray(x)
    n = xv.shape[-1]
    other = _np.triu(_np.ones((n, n), dtype=bool), 1)  # the triangle LAPACK does not read
    h = _np.where(other if lower else other.T, _np.conj(_np.swapaxes(xv, -1, -2)), xv)
    if foreign and h.dtype.kind == "c":  # no item assignment: the diagonal's real part by where
        return _np.where(_np.eye(n, dtype=bool), _np.real(h), h)
    if h.dtype.kind == "c":  # LAPACK ignores the imaginary part of the diagonal
        i = _np.arange(n)
        h[..., i, i] = h[..., i, i].real
    return h


def _read_triangle_transpose(ans, x, lower):
    n = shape(x)[-1]
    mask = (_np.tril if lower else _np.triu)(_np.ones((n, n))) - 0.5 * _np.eye(n)

    def bprop(ct):  # back to the triangle read: ct + ct^H there, with the diagonal halved
        return (ct + _H(ct)) * _const(mask, ct)

    return bprop


# The Hermitian matrix that LAPACK's Hermitian routines (and so NumPy's eigh, eigvalsh,
# cholesky) read from x: its `lower` (else upper) triangle, that triangle's conjugate
# transpose in the other, and the real part of its diagonal. It is real-linear in x, and
# the value of eigh(x) is eigh of it bit for bit.
_read_triangle = deflinear(
    _read_triangle_impl, _read_triangle_transpose, name="hermitian_from_triangle"
)
_register_per_matrix(_read_triangle)


def _hermitian_from(a, lower=True):
    """The Hermitian (real symmetric) matrix NumPy's Hermitian routines read from a."""
    return _read_triangle(a, lower=bool(lower))


# --- inv, solve -----------------------------------------------------------------------------------


_inv_p = matrix_primitive(
    "inv",
    _np.linalg.inv,
    vjp=lambda ans, x: lambda ct: -_matmul(_mT(ans), _matmul(ct, _mT(ans))),
    jvp=lambda t, ans, x: -_matmul(ans, _matmul(t, ans)),
)


@_taylor.declared("speed")
def _inv_taylor(primals, series):
    """a y = 1 along the path: y_k = -y_0 sum_(j=1..k) a_j y_(k-j), quadratic in the order."""
    (a,), (s,) = primals, series
    y = [_inv_p(a)]
    for k in range(1, len(s) + 1):
        total = None
        for j in range(1, k + 1):
            if s[j - 1] is not None and y[k - j] is not None:
                total = _taylor.add(total, _matmul(s[j - 1], y[k - j]))
        y.append(None if total is None else -_matmul(y[0], total))
    return y[0], tuple(y[1:])


_register_per_matrix(_inv_p, taylor=_inv_taylor, raises_on_values=True)


@mirror("function")
def inv(a: ArrayLike) -> Array:
    """NumPy's `linalg.inv`, batched over leading axes. d inv(a) = -inv(a) da inv(a).

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(lambda a: fnp.linalg.inv(a)[0, 0])(fnp.array([[2.0]]))[0, 0])
    -0.25
    """
    _check_square(a, "linalg.inv")
    return _inv_p(a)


def _solve_vjp_a(ans, a, b):
    like = meta(a)
    return lambda ct: unbroadcast(-_matmul(_solve_p(_mT(a), ct), _mT(ans)), like)


def _solve_vjp_b(ans, a, b):
    like = meta(b)
    return lambda ct: unbroadcast(_solve_p(_mT(a), ct), like)


# b is a (stack of) matrices here; `solve` handles a vector b by adding and removing an axis.
_solve_p: Primitive = matrix_primitive(
    "solve",
    _np.linalg.solve,
    vjp=(_solve_vjp_a, _solve_vjp_b),
    jvp=(
        lambda t, ans, a, b: -_solve_p(a, _matmul(t, ans)),
        lambda t, ans, a, b: broadcast_to(_solve_p(a, t), shape(ans)),
    ),
)


def linear_solve_taylor_rule(prim, tangent_map, columns=False):
    """The Taylor rule of a linear solve x = prim(*matrices, b, **params) (b last), which solves
    L(matrices) x = b. Along the path, L(a_0) x_k = b_k - sum_(j=1..k) dL(a_j) x_(k-j): one
    solve per order with the matrices' values, quadratic in the order. `tangent_map(cs, x,
    **params)` is dL(cs) x, the operator's perturbation by the matrices' coefficients `cs`
    (None for a constant one) applied to x, as in the forward rules. With constant matrices
    the solve is linear in b; with `columns` (b's last axis holds independent right-hand
    sides) every coefficient is then solved in one call, side by side."""

    def rule(primals, series, **params):
        *matrices, b = primals
        ans = bind(prim, primals, params)
        order = next(len(s) for s in series if s is not None)

        def solve(rhs):
            return bind(prim, (*matrices, rhs), params)

        bs = series[-1] if series[-1] is not None else (None,) * order
        if all(s is None for s in series[:-1]):  # constant matrices: linear in b
            present = [k for k, c in enumerate(bs) if c is not None]
            if not columns or len(present) < 2:
                return ans, tuple(None if c is None else solve(c) for c in bs)
            width = shape(b)[-1]
            xs = solve(concatenate([bs[k] for k in present], axis=-1))
            out = [None] * order
            for n, k in enumerate(present):
                out[k] = xs[..., n * width : (n + 1) * width]
            return ans, tuple(out)
        mats = [(None,) * order if s is None else s for s in series[:-1]]
        x = [ans]
        for k in range(1, order + 1):
            rhs = bs[k - 1]
            for j in range(1, k + 1):
                cs = [m[j - 1] for m in mats]
                if x[k - j] is not None and any(c is not None for c in cs):
                    term = tangent_map(cs, x[k - j], **params)
                    rhs = -term if rhs is None else rhs - term
            x.append(None if rhs is None else solve(rhs))
        return ans, tuple(x[1:])

    return _taylor.kind_of_rule(rule, "speed")


_register_per_matrix(
    _solve_p,
    (2, 2),
    taylor=linear_solve_taylor_rule(_solve_p, lambda cs, x: _matmul(cs[0], x), columns=True),
    raises_on_values=True,
)


@mirror("function")
def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """NumPy's `linalg.solve`: x with a @ x = b. As in NumPy 2, `b` is a vector only when it is
    1-D; otherwise it is a (stack of) matrices (..., M, K), and batch axes broadcast."""
    return solve_for(a, b, "linalg.solve")


def solve_for(a: ArrayLike, b: ArrayLike, who: str) -> Array:
    """`solve(a, b)` for the function `who` (SciPy's `solve`), which its errors name."""
    _check_square(a, who)
    n = shape(a)[-1]
    if len(shape(b)) == 1:
        if shape(b)[0] != n:
            raise _LinAlgError(
                f"{who}: 'b' has {describe(b)} but 'a' has {describe(a)}; b's length "
                "must equal a's last dimension"
            )
        return _solve_p(a, expand_dims(b, -1))[..., 0]
    _check_matrix(b, who, "b")
    if shape(b)[-2] != n:
        raise _LinAlgError(
            f"{who}: 'b' has {describe(b)} but 'a' has {describe(a)}; b's second-to-"
            "last dimension must equal a's last (pass a 1-D b for a single vector)"
        )
    return _solve_p(a, b)


@mirror("function")
def tensorinv(a: ArrayLike, ind: int = 2) -> Array:
    """NumPy's `linalg.tensorinv`: `inv` of `a` reshaped to a square matrix, reshaped back."""
    s = shape(a)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive integer, got {ind}")
    out_shape = s[ind:] + s[:ind]
    rows = int(_np.prod(s[:ind], dtype=_np.int64))
    return reshape(inv(reshape(a, (rows, -1))), out_shape)


@mirror("function")
def tensorsolve(a: ArrayLike, b: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """NumPy's `linalg.tensorsolve`: x with tensordot(a, x, x.ndim) = b, through `solve`."""
    nd = len(shape(a))
    if axes is not None:
        order = [k for k in range(nd) if k not in [ax % nd for ax in axes]]
        order += [ax % nd for ax in axes]
        a = transpose(a, order)
    s = shape(a)
    old = s[len(shape(b)) :]
    n = int(_np.prod(old, dtype=_np.int64))
    rows = int(_np.prod(s[: len(shape(b))], dtype=_np.int64))
    if rows != n or int(_np.prod(shape(b), dtype=_np.int64)) != n:
        raise _LinAlgError(
            f"linalg.tensorsolve: a ({describe(a)}{', axes moved' if axes is not None else ''}) "
            f"and b ({describe(b)}) do not make a square system: a's first {len(shape(b))} "
            f"axes (one per axis of b) hold {rows} elements, its other axes (x's shape, "
            f"{old}) hold {n}, and b holds {int(_np.prod(shape(b), dtype=_np.int64))}; all "
            "three must be equal: pass a of shape b.shape + x.shape (or move its axes with axes=)"
        )
    # (n, n), not (-1, n): NumPy cannot tell the -1 of a system of no unknowns (n = 0)
    return reshape(solve_for(reshape(a, (n, n)), reshape(b, (n,)), "linalg.tensorsolve"), old)


# --- determinants ---------------------------------------------------------------------------------


def _adjugate_T(x, ans, s=None):
    """The transposed adjugate of x (d det(x) / dx), in fgrad operations; nan for a matrix
    that holds a nan or an inf (`_finite_or_nan`). `s`: x's `_singular_values`, if known.

    det(x) inv(x).T where every matrix of the batch is well conditioned (smallest singular
    value above sqrt(eps) times the largest); otherwise by `_adjugate_T_shifted`, whose
    derivatives are those of the adjugate at any rank. The inverse is preferred where it is
    accurate: it is one LAPACK call, and its values are the ones fgrad has always given.
    """
    if 0 in shape(x):
        return expand_dims(expand_dims(ans, -1), -1) * _mT(_inv_p(x))
    if s is None:
        s = _singular_values(x)
    if _unreadable(x):  # no matrix is read
        return _finite_or_nan(x, ans, s, _adjugate_T_rows)
    dtype = _dtype(x)
    if not primal((~(s[..., -1] > _np.sqrt(_np.finfo(dtype).eps) * s[..., 0])).any()):
        return expand_dims(expand_dims(ans, -1), -1) * _mT(_inv_p(x))  # all well conditioned
    # (a matrix that holds a nan or an inf has nan singular values: it is read as ill here)
    if read_any(_not_finite(x)):
        return _finite_or_nan(x, ans, s, _adjugate_T)
    shifted = (s <= _SHIFTED_BELOW(dtype) * s[..., :1]).sum(axis=-1).max()
    return _adjugate_T_shifted(x, int(primal(shifted)) + 1)


def _svdvals_or_nan(x):
    """NumPy's singular values of each matrix of the stack x; nan for a matrix that holds a
    nan, where NumPy's SVD raises ("SVD did not converge"; it gives nan for an inf)."""
    try:
        return _np.linalg.svd(x, compute_uv=False)
    except _LinAlgError:
        pass
    not_finite = ~_np.isfinite(x).all(axis=(-2, -1))
    finite_x = _np.where(not_finite[..., None, None], _np.eye(x.shape[-1], dtype=x.dtype), x)
    s = _np.linalg.svd(finite_x, compute_uv=False)
    s[not_finite] = _np.nan
    return s


# `_svdvals_or_nan` as an operation with no derivative, which `vmap` and `jit` records compute
_svdvals_or_nan_p = nondiff(per_matrix(_svdvals_or_nan), name="svdvals_or_nan")
_register_per_matrix(_svdvals_or_nan_p)


def _singular_values(x):
    """`_svdvals_or_nan` of x's value, which chooses det's derivative's formula. Under `jit`
    they are recorded operations and what is read is the branch and the number of points,
    each a guard on one number: a record serves every matrix that takes its branch (reading
    the matrix would guard each element, a record per call); under `vmap` each row has its
    own. Otherwise NumPy computes them; the operators are NumPy's or fgrad's alike."""
    if _unread(x):
        return _svdvals_or_nan_p(constant_of(x))
    return _svdvals_or_nan(_np.asarray(primal(x)))


def _not_finite(x):
    """Whether each matrix of the stack x holds a nan or an inf (a constant)."""
    return max(logical_not(isfinite(constant_of(x))), axis=(-2, -1))


def _finite_or_nan(x, ans, s, adjugate_T):
    """`adjugate_T(x, ans, s)` with nan for each matrix of the stack that holds a nan or an
    inf, as JAX's: the derivatives of det have no value there (and NumPy's SVD, which chooses
    the formula, raises on a nan). Those matrices give ans times nan, so that every higher
    derivative is nan too, and the identity takes their place in the formula of the others
    (which no matrix of theirs changes). Under `vmap` every row takes this form (no row is
    read): a plain where for the rows that are finite."""
    not_finite = _not_finite(x)
    nan_at = expand_dims(expand_dims(not_finite, -1), -1)
    finite_x = where(nan_at, _const(_np.eye(shape(x)[-1]), x), x)
    finite_ans = where(not_finite, 1.0, ans)  # det(identity) = 1
    adj = adjugate_T(finite_x, finite_ans, where(expand_dims(not_finite, -1), 1.0, s))
    # ans times 0, not nan, at the finite matrices: the product's derivative reaches ans there
    # (times a cotangent of 0), and 0 * nan would make theirs nan
    nan_or_0 = where(nan_at, _const(_np.nan, x), _const(0.0, x))
    return where(nan_at, expand_dims(expand_dims(ans, -1), -1) * nan_or_0, adj)


def _adjugate_T_rows(x, ans, sv):
    """`_adjugate_T` of a batch (under `vmap`) of finite matrices, whose singular values are
    sv: both formulas, each row taking the one its own matrices call for, so that no row's
    value is read. The rows that take the shifted formula get the identity's inverse in the
    other (masked out, and finite, so its derivatives are 0 rather than nan); the shifted
    formula takes as many points as any matrix may need (n + 1), since the number cannot be
    read."""
    s = shape(x)
    eps = _np.sqrt(_np.finfo(_dtype(x)).eps)
    ill = where(greater(sv[..., -1], eps * sv[..., 0]), 0.0, 1.0)
    if len(s) > 2:  # the row's whole stack takes one formula, as in `_adjugate_T`
        ill = sum(ill, axis=tuple(range(len(s) - 2)))
    regular = equal(ill, 0.0)
    inverse = _inv_p(where(regular, x, _const(_np.eye(s[-1]), x)))
    return where(
        regular,
        expand_dims(expand_dims(ans, -1), -1) * _mT(inverse),
        _adjugate_T_shifted(x, s[-1] + 1),
    )


def _SHIFTED_BELOW(dtype):
    """The singular values that `_adjugate_T_shifted` moves: those below eps**(1/4) times the
    largest. Then the shifted matrices have a condition number below about
    eps**(-1/4) 2 points / pi, far (for float64) from the eps**(-1/2) that would send them to
    the shifted formula again (which would still be exact, only slower)."""
    return _np.finfo(dtype).eps ** 0.25


def _adjugate_T_shifted(x, points):
    """adj(x).T at any rank, with every derivative exact, as an average of regular adjugates.

    With x = U diag(s) Vh and B = U diag(w) Vh, w_i = 1 for the k small singular values
    (`_SHIFTED_BELOW`) and 0 for the others, every entry of adj(x + z B) and of each of its
    derivatives in x is a polynomial in z of degree at most k (a minor of x + z B is, B having
    rank k). The mean of such a polynomial over p > k points z_j = r exp(i (pi/(2p) + 2 pi j/p))
    is its value at z = 0, exactly. So with B a constant,
        adj(x).T = mean_j det(x + z_j B) inv(x + z_j B).T,
    and so is every derivative of both sides: the right side is made of inverses of matrices
    whose singular values are those of x with the small ones moved to |s_i + z_j| >= r sin(pi/(2p))
    (r the smallest singular value not moved), whose derivatives to every order are plain
    matrix products.
    (A formula through the singular vectors of x instead has derivatives that divide by
    singular-value gaps, 0 at rank <= n - 2: det's second derivative came out wrong there.)
    `points` is p, at least one more than the largest k of the batch.
    """
    n = shape(x)[-1]
    real_dtype = _dtype(x)
    if n == 1:
        return _np.ones(shape(x), real_dtype)
    u, s, vh = _svd_p(constant_of(x), full_matrices=False)
    largest = s[..., :1]
    kept = greater(s, _SHIFTED_BELOW(real_dtype) * largest)
    w = where(kept, 0.0, 1.0)
    # r, the smallest singular value kept: larger would make the averaged terms larger than
    # the result (cancellation), smaller the shifted matrices worse conditioned
    smallest_kept = min(where(kept, s, largest), axis=-1, keepdims=True)
    r = where(greater(largest, 0.0), smallest_kept, 1.0)  # the zero matrix: any radius does
    b = _matmul(u * expand_dims(astype(w * r, real_dtype), -2), vh)
    angles = _np.pi / (2 * points) + 2 * _np.pi * _np.arange(points) / points
    z = _np.exp(1j * angles).astype(_np.result_type(real_dtype, _np.complex64))
    shifted = expand_dims(x, 0) + z.reshape((points,) + (1,) * len(shape(x))) * expand_dims(b, 0)
    adj = expand_dims(expand_dims(_det_p(shifted), -1), -1) * _mT(_inv_p(shifted))
    mean = sum(adj, axis=0) / _np.asarray(points, real_dtype)
    return mean if _is_complex(x) else real(mean)


def _det_vjp(ans, x):
    adj_t = _adjugate_T(x, ans)
    return lambda ct: expand_dims(expand_dims(ct, -1), -1) * adj_t


_det_p = matrix_primitive(
    "det",
    _np.linalg.det,
    vjp=_det_vjp,
    jvp=lambda t, ans, x: sum(_adjugate_T(x, ans) * t, axis=(-2, -1)),
)
_register_per_matrix(_det_p)


@mirror("function")
def det(a: ArrayLike) -> Array:
    """NumPy's `linalg.det`, batched. Its gradient is the transposed adjugate, det(a) inv(a).T
    for invertible a and exact at singular a too (where det(a) inv(a).T would be nan), as are
    its higher derivatives at any rank.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(fnp.linalg.det)(fnp.array([[1.0, 2.0], [2.0, 4.0]]))  # singular
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    _check_square(a, "linalg.det")
    return _det_p(a)


@per_matrix
def _slogdet_impl(x):
    sign, logabsdet = _np.linalg.slogdet(x)
    return sign, logabsdet


def _slogdet_jvp(tangents, ans, x):
    """With tau = tr(inv(a) da): d logabsdet = Re(tau); d sign = i Im(tau) sign, which is 0
    for real a (a structural zero: the sign of a real determinant is a constant)."""
    (t,) = tangents
    tau = sum(_mT(_inv_p(x)) * t, axis=(-2, -1))
    if not _is_complex(x):
        return None, tau
    sign, _ = ans
    return sign * _imag_part(tau), real(tau)


def _slogdet_vjp(wanted, ans, x):
    sign, _ = ans
    complex_input = _is_complex(x)

    def bprop(cts):  # the transpose of _slogdet_jvp: (ct_l + i Im(ct_sign sign)) inv(a).T
        ct_sign, ct_l = cts
        coef = ct_l
        if complex_input and ct_sign is not None:
            coef = _plus(coef, _imag_part(ct_sign * sign))
        if coef is None:
            return (None,)
        return (expand_dims(expand_dims(coef, -1), -1) * _mT(_inv_p(x)),)

    return bprop


_slogdet_p = Primitive(
    "slogdet", _slogdet_impl, vjp=_slogdet_vjp, jvp=_slogdet_jvp, multiple_results=True
)
_register_per_matrix(_slogdet_p, forward="speed")


@mirror("function")
def slogdet(a: ArrayLike) -> SlogdetResult:
    """NumPy's `linalg.slogdet`: (sign, logabsdet), batched. d logabsdet = Re(tr(inv(a) da));
    the sign of a real determinant is a constant, that of a complex one, det/|det|, has the
    derivative i Im(tr(inv(a) da)) sign.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda a: fnp.linalg.slogdet(a).logabsdet)(fnp.array([[2.0]]))
    array([[0.5]])
    """
    _check_square(a, "linalg.slogdet")
    return SlogdetResult(*_slogdet_p(a))


# --- pinv, lstsq ----------------------------------------------------------------------------------


def _pinv_jvp(t, ans, x, rcond, hermitian):
    """Golub and Pereyra's derivative of the pseudo-inverse P of A (rank locally constant):
    dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P. Where `rcond` cuts a singular
    value, the truncated pseudo-inverse's (`_truncated_pinv_jvp`)."""
    if _cuts_a_singular_value(ans, x):
        return _truncated_pinv_jvp(t, ans, x, rcond)
    p, a = ans, x
    th = _H(t)
    return (
        -_matmul(p, _matmul(t, p))
        + _matmul(_matmul(p, _H(p)), th - _matmul(th, _matmul(a, p)))
        + _matmul(th - _matmul(p, _matmul(a, th)), _matmul(_H(p), p))
    )


def _pinv_vjp(ans, x, rcond, hermitian):
    if _cuts_a_singular_value(ans, x):
        return _truncated_pinv_vjp(ans, x, rcond)
    p, a = ans, x
    pt, pc, ac = _mT(p), _conj(p), _conj(a)

    def bprop(ct):  # the transpose of _pinv_jvp, term by term
        ch = _H(ct)
        return (
            -_matmul(pt, _matmul(ct, pt))
            + _matmul(ch - _matmul(_matmul(ac, pc), ch), _matmul(pc, pt))
            + _matmul(_matmul(pt, pc), ch - _matmul(ch, _matmul(pc, ac)))
        )

    return bprop


def _cuts_a_singular_value(p, a):
    """Whether the cutoff dropped a singular value of a (of some matrix of the stack) above
    rounding. P A is the projector on the kept right singular vectors, so its trace (a cheap
    sum) counts them; then a - a P a, the part cut, is compared with a. Where none is cut, or
    only singular values at rounding level (a rank-deficient a that stays so, like b @ c with
    thin b and c), Golub and Pereyra's rule is exact (to rounding) and needs no SVD. Read
    (under `jit`, booleans the record checks; under `vmap`, every row's at once: where the
    rows disagree, they run apart, each on its own path, as in a loop. Taken to hold without
    reading it, the SVD path gave nan second derivatives at a batch of identities, and
    differed from the loop in the last bits.) A lazy (Dask) value is not read: taken to hold."""
    p, a = constant_of(p), constant_of(a)
    m, n = shape(a)[-2:]
    kept = real(sum(p * _mT(a), axis=(-2, -1)))
    if not _holds_somewhere(less(kept, builtins.min(m, n) - 0.5)):
        return False
    cut = _matmul(_matmul(a, p), a) - a
    size = sum(real(a * _conj(a)), axis=(-2, -1))
    rounding = (100 * builtins.max(m, n) * float(_np.finfo(_dtype(a)).eps)) ** 2
    return _holds_somewhere(greater(sum(real(cut * _conj(cut)), axis=(-2, -1)), rounding * size))


def _holds_somewhere(mask) -> bool:
    return may_hold(mask) if _core.is_foreign_array(_core.innermost(mask)) else read_any(mask)


def _truncated_pinv_parts(a, rcond):
    """a's thin SVD (U, s, V) and the real coefficients C1, C2 of the truncated pseudo-inverse
    P = V diag(1/s_kept) U^H's derivative: in the singular bases, with E = U^H dA V,
    V^H dP U = C1 * E + C2 * E^H, where for kept i, j: C1 = -1/(s_i s_j); for i kept, j cut
    (sigma_j its singular value, d = s_i^2 - sigma_j^2 > 0 away from the cutoff):
    C1 = sigma_j / (s_i d), C2 = 1 / d; for i cut, j kept the mirror image; 0 for cut i, j.
    (The kept singular subspaces turn with dA, coupled to the cut ones through their
    singular values: sigma = 0 gives Golub and Pereyra's rule.)"""
    u, s, vh = svd(a, full_matrices=False)
    sv = constant_of(s)
    cutoff = _np.asarray(rcond, dtype=float)[..., None] * _largest(sv, -1, keepdims=True)
    kept = greater(sv, cutoff)
    si, sj = expand_dims(s, -1), expand_dims(s, -2)
    ki, kj = expand_dims(kept, -1), expand_dims(kept, -2)
    both, left_only = logical_and(ki, kj), logical_and(ki, logical_not(kj))
    right_only = logical_and(kj, logical_not(ki))
    mixed = logical_or(left_only, right_only)
    one = _const(1.0, sv)
    # the kept singular value's square minus the cut one's: > 0 away from the cutoff
    gap = where(left_only, si * si - sj * sj, where(right_only, sj * sj - si * si, one))
    c2 = where(mixed, 1.0 / gap, 0.0)
    c1 = where(
        both,
        -1.0 / where(both, si * sj, one),
        where(
            left_only,
            sj / (where(left_only, si, one) * gap),
            where(right_only, si / (where(right_only, sj, one) * gap), 0.0),
        ),
    )
    return u, _H(vh), c1, c2


def _truncated_pinv_jvp(t, ans, x, rcond):
    """dP = V (C1 * (U^H dA V) + C2 * (V^H dA^H U)) U^H + P P^H dA^H (I - U U^H)
    + (I - V V^H) dA^H P^H P: the derivative of NumPy's truncated pseudo-inverse, exact away
    from the cutoff (the last two terms reach outside a's thin singular bases)."""
    u, v, c1, c2 = _truncated_pinv_parts(x, rcond)
    p, th = ans, _H(t)
    e = _matmul(_H(u), _matmul(t, v))
    inner = _matmul(v, _matmul(c1 * e + c2 * _H(e), _H(u)))
    outside_u = th - _matmul(_matmul(th, u), _H(u))
    outside_v = th - _matmul(v, _matmul(_H(v), th))
    return inner + _matmul(_matmul(p, _H(p)), outside_u) + _matmul(outside_v, _matmul(_H(p), p))


def _truncated_pinv_vjp(ans, x, rcond):
    u, v, c1, c2 = _truncated_pinv_parts(x, rcond)
    p = ans

    def bprop(ct):  # the transpose of _truncated_pinv_jvp: conj of its adjoint at conj(ct)
        g = _conj(ct)
        gh = _H(g)
        w = _matmul(_H(v), _matmul(g, u))
        inner = _matmul(u, _matmul(c1 * w + _H(c2 * w), _H(v)))
        outside_u = gh - _matmul(u, _matmul(_H(u), gh))
        outside_v = gh - _matmul(_matmul(gh, v), _H(v))
        gamma = (
            inner + _matmul(outside_u, _matmul(p, _H(p))) + _matmul(_matmul(_H(p), p), outside_v)
        )
        return _conj(gamma)

    return bprop


_pinv_p = matrix_primitive(
    "pinv",
    lambda x, rcond, hermitian: _np.linalg.pinv(x, rcond=rcond, hermitian=hermitian),
    vjp=_pinv_vjp,
    jvp=_pinv_jvp,
)
_register_per_matrix(_pinv_p, raises_on_values=True)

_NOT_GIVEN: Any = _np._NoValue  # NumPy's "not given" default; typed Any as `shaping.NO_VALUE`


def _nested_tuples(x):
    return tuple(map(_nested_tuples, x)) if isinstance(x, list) else x


def _cutoffs_param(rcond, batch):
    """pinv's `rcond` (or `rtol`) as a parameter: a float, or nested tuples of floats that
    keep its shape, which NumPy broadcasts against the batch shape of the stack (entry i of a
    (k, 1) array is the cutoff of row i of a (k, n) stack)."""
    cutoffs = _np.asarray(rcond, dtype=float)
    if cutoffs.ndim == 0:
        return float(cutoffs)
    try:
        fits = _np.broadcast_shapes(cutoffs.shape, batch) == batch
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"linalg.pinv: 'rcond' (or 'rtol') has shape {cutoffs.shape}, which does not "
            f"broadcast to the batch shape {batch} of 'a' (its shape without the last two "
            "axes); give one cutoff, or an array that broadcasts to the batch shape"
        )
    return _nested_tuples(cutoffs.tolist())


@mirror("function")
def pinv(
    a: ArrayLike,
    rcond: ArrayLike | None = None,
    hermitian: bool = False,
    *,
    rtol: ArrayLike | None = _NOT_GIVEN,
) -> Array:
    """NumPy's `linalg.pinv` (same `rcond`/`rtol` defaults), batched.

    The derivative is that of the pseudo-inverse NumPy returns. Where no singular value is
    cut it is Golub and Pereyra's (no SVD). Where `rcond` cuts some, it is the truncated
    pseudo-inverse's, through a's SVD: a cut singular value that is not 0 still turns the
    kept singular vectors, through 1 / (s_kept^2 - s_cut^2); exact away from the cutoff
    (at it, pinv jumps). Its second derivatives go through `svd`'s rules, nan where singular
    values tie. With `hermitian=True`, as
    NumPy, it reads a's lower triangle only (and the real part of its diagonal), as `eigh`.
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
    if not is_traced(rcond):
        rcond = _cutoffs_param(rcond, shape(a)[:-2])
    if hermitian:  # NumPy's svd(hermitian=True) reads a's lower triangle (`eigh`)
        _check_square(a, "linalg.pinv(hermitian=True)")
        a = _hermitian_from(a)
    return _pinv_p(a, rcond=rcond, hermitian=bool(hermitian))


# NumPy's (LAPACK's) rank of a in lstsq, as an operation a `jit` record computes: reading a and
# b to count it was a guard on every element, and a record per call. (Under `vmap`, lstsq counts
# it from each row's singular values instead.)
_lstsq_rank_p = nondiff(
    lambda a, b, rcond: _np.linalg.lstsq(a, b, rcond=rcond)[2], name="lstsq_rank"
)


def _lstsq_rank_batch(args, dims, rcond):
    return _batching.rows_one_by_one(
        _lstsq_rank_p,
        args,
        dims,
        {"rcond": rcond},
        batch_size(args, dims),
        "LAPACK's rank of each matrix, exactly (lstsq under vmap counts each row's rank from "
        "its singular values instead, and does not reach this)",
    )


register_rules(_lstsq_rank_p, batch=_lstsq_rank_batch, raises_on_values=True)


def _lstsq_rcond(rcond):
    """lstsq's `rcond` as a Python float (None stays None). A traced one is read: a `jit`
    argument is guarded (another value records again), and under `vmap` each row runs alone.
    x depends on the cutoff only through the rank, a step: it has no derivative to carry."""
    if rcond is None or not is_traced(rcond):
        return rcond if rcond is None else float(rcond)
    if shape(rcond) != ():
        raise ValueError(f"linalg.lstsq: 'rcond' has {describe(rcond)}; it must be a number")
    try:
        return float(rcond)
    except TypeError:
        raise TypeError(
            f"linalg.lstsq: 'rcond' is a traced value ({describe(rcond)}) of a derivative: "
            "lstsq's results do not vary smoothly with the cutoff (they step where it crosses a "
            "singular value). Pass fgrad.stop_gradient(rcond), or a number"
        ) from None


def _gelsd_cutoff(rcond, m, n):
    """The relative cutoff LAPACK's gelsd applies (singular values s <= cutoff * s[0] are
    taken as 0), for NumPy's `rcond`: NumPy's default eps * max(m, n), and gelsd's own
    rule, which replaces an rcond outside (0, 1) (NumPy's old default -1, say) by the
    machine precision of the float64 NumPy computes in (LAPACK's dlamch('E') = eps / 2)."""
    eps = float(_np.finfo(_np.float64).eps)
    if rcond is None:
        return eps * builtins.max(m, n)
    return rcond if 0.0 < rcond < 1.0 else eps / 2


@mirror("function")
def lstsq(
    a: ArrayLike, b: ArrayLike, rcond: float | None = None
) -> tuple[Array, Array, Array, Array]:
    """NumPy's `linalg.lstsq`: (x, residuals, rank, s) for 2-D a and 1-D or 2-D b.

    x is `pinv(a) @ b` with NumPy's cutoff (its derivative is pinv's: that of NumPy's x, the
    truncated one where `rcond` cuts a singular value);
    `residuals` (the squared residual norms, given as NumPy gives them: only when a has full
    column rank and more rows than columns, real for complex input) is
    `sum(|b - a @ x|**2, axis=0)`, differentiable; `rank` is NumPy's integer; `s` is
    `svdvals(a)`, differentiable.
    """
    a_shape, b_shape = shape(a), shape(b)
    if len(a_shape) != 2 or len(b_shape) not in (1, 2):
        raise _LinAlgError(
            f"linalg.lstsq: 'a' has {describe(a)} and 'b' has {describe(b)}; a must be 2-D "
            "and b 1-D or 2-D"
        )
    m, n = a_shape
    if b_shape[0] != m:
        raise _LinAlgError(
            f"linalg.lstsq: 'b' has {describe(b)} but 'a' has {describe(a)}; their first "
            "dimensions must be equal"
        )
    dtypes = (dtype_of(a), dtype_of(b))
    rcond = _lstsq_rcond(rcond)
    cutoff = _gelsd_cutoff(rcond, m, n)
    s = svdvals(a)
    if _unreadable(a):  # LAPACK's rank (gelsd's), counted on each row's singular values
        kept = greater(constant_of(s), cutoff * constant_of(s)[..., :1])
        rank = astype(sum(where(kept, 1.0, 0.0), axis=-1), _np.int32)
    elif _core.holds_staged(a) or _core.holds_staged(b):
        # in a `jit` record: computed there, not read
        rank = _lstsq_rank_p(a, b, rcond=rcond)
    else:
        rank = _np.linalg.lstsq(primal(a), primal(b), rcond=rcond)[2]
    x = _matmul(_pinv_p(a, rcond=float(cutoff), hermitian=False), b)
    # The residuals' shape depends on the rank: a batch whose rows' ranks differ is split
    # (by the read of `rank` under `vmap`).
    if m > n and not _core.holds_batch(a) and _unreadable(a):
        raise TypeError(
            f"linalg.lstsq of a tall {_library(a)} array: NumPy's residuals have one "
            "entry per column of b when a has full rank and none otherwise, a shape that a "
            "lazy array cannot know before its rank is computed. Compute a first, or use "
            "pinv(a) @ b for x"
        )
    if m > n and rank == n:
        r = b - _matmul(a, x)
        residuals = sum(real(r * conj(r)) if _is_complex(r) else r * r, axis=0)
        if len(b_shape) == 1:
            residuals = reshape(residuals, (1,))
    else:  # NumPy's empty residuals: of the real dtype of the result
        residuals = _np.array([], dtype=_np.finfo(_np.result_type(*dtypes, _np.float32)).dtype)
    return x, residuals, rank, s


# --- cholesky -------------------------------------------------------------------------------------


def _phi(x):
    """The lower triangle of x with its diagonal halved (self-adjoint: a constant mask)."""
    n = shape(x)[-1]
    return x * _const(_np.tril(_np.ones((n, n))) - 0.5 * _np.eye(n), x)


def _cholesky_jvp(t, ans, x, upper):
    low = _H(ans) if upper else ans  # dL = L phi(L^-1 dA L^-H); dU = dL^H
    dlow = _matmul(low, _phi(_H(_solve_p(low, _H(_solve_p(low, t))))))
    return _H(dlow) if upper else dlow


def _cholesky_vjp(ans, x, upper):
    low = _H(ans) if upper else ans

    def bprop(ct):  # L^-T phi(L^T ct) conj(L)^-1 (ct of U = L^H: ct^H of L)
        lt = _mT(low)
        y = _solve_p(lt, _phi(_matmul(lt, _H(ct) if upper else ct)))
        return _mT(_solve_p(_H(low), _mT(y)))  # on Hermitian tangents; see `cholesky`

    return bprop


_cholesky_p = matrix_primitive(
    "cholesky",
    lambda x, upper: _np.linalg.cholesky(x, upper=upper),
    vjp=_cholesky_vjp,
    jvp=_cholesky_jvp,
)


@_taylor.declared("speed")
def _cholesky_taylor(primals, series, upper):
    """A = L L^H along the path: L_0 L_k^H + L_k L_0^H = A_k - sum_(j=1..k-1) L_j L_(k-j)^H,
    solved for the triangular L_k as the forward rule solves for dL (quadratic in the order)."""
    (x,), (s,) = primals, series
    ans = _cholesky_p(x, upper=upper)
    low = [_H(ans) if upper else ans]
    for k in range(1, len(s) + 1):
        rhs = s[k - 1]
        for j in range(1, k):
            if low[j] is not None and low[k - j] is not None:
                term = _matmul(low[j], _H(low[k - j]))
                rhs = -term if rhs is None else rhs - term
        low.append(None if rhs is None else _cholesky_jvp(rhs, low[0], x, upper=False))
    if upper:  # U = L^H
        return ans, tuple(None if c is None else _H(c) for c in low[1:])
    return ans, tuple(low[1:])


_register_per_matrix(_cholesky_p, taylor=_cholesky_taylor, raises_on_values=True)


@mirror("function")
def cholesky(a: ArrayLike, /, *, upper: bool = False) -> Array:
    """NumPy's `linalg.cholesky`: lower L with a = L @ L^H (`upper=True`: L^H), batched.

    As NumPy (LAPACK), it reads only a's lower triangle (`upper=True`: its upper one) and the
    real part of its diagonal, so the value is NumPy's for any a, and the derivative is that
    of NumPy's function: it flows to the triangle read only. (JAX factors the Hermitian part
    (a + a^H) / 2 instead; the two agree for a Hermitian a, but not their gradients.)

    >>> import fgrad, fgrad.numpy as fnp
    >>> a = fnp.array([[4.0, 9.0], [2.0, 5.0]])  # the 9 is not read
    >>> fnp.linalg.cholesky(a)
    array([[2., 0.],
           [1., 2.]])
    >>> fgrad.grad(lambda a: fnp.linalg.cholesky(a)[1, 0])(a)
    array([[-0.125,  0.   ],
           [ 0.5  ,  0.   ]])
    """
    _check_square(a, "linalg.cholesky")
    return _cholesky_p(_hermitian_from(a, lower=not upper), upper=bool(upper))


# --- qr -------------------------------------------------------------------------------------------


@per_matrix
def _qr_impl(x, mode):
    q, r = _np.linalg.qr(x, mode=mode)
    return q, r


def _strict_lower(n, like):
    return _const(_np.tril(_np.ones((n, n)), -1), like)


def _nan_where_singular(r):
    """QR's R, as the derivative rules solve with it: nan in each matrix of the stack with a
    zero on its diagonal (a rank-deficient a, as ones((4, 3))), where Q has no derivative
    (JAX's is nan too; the solve raised NumPy's bare "Singular matrix"). Read eagerly (a
    plain R passes as it is); under `vmap` and `jit` the test is computed, not read."""
    if 0 in shape(r):
        return r
    if not _unread(r):
        d = _np.diagonal(_np.asarray(primal(r)), axis1=-2, axis2=-1)
        if (d != 0).all():
            return r
    singular = equal(min(abs(_diagonal(constant_of(r))), axis=-1), 0.0)
    return where(expand_dims(expand_dims(singular, -1), -1), _np.nan, r)


def _qr_thin_jvp(t, q, r):
    """For m >= n (see J. Townsend, "Differentiating the QR decomposition"): X = dA R^-1,
    B = Q^H X, O = tril(B, -1) - tril(B, -1)^H + i Im(diag B), dQ = Q (O - B) + X,
    dR = (B - O) R. The i Im(diag B) term keeps R's diagonal real, as LAPACK's is."""
    xr = _right_solve(t, _nan_where_singular(r))
    b = _matmul(_H(q), xr)
    low = b * _strict_lower(shape(r)[-1], b)
    o = low - _H(low)
    if _is_complex(b):
        o = o + _diag_embed(_imag_part(_diagonal(b)))
    return _matmul(q, o - b) + xr, _matmul(b - o, r)


def _qr_thin_vjp(ct_q, ct_r, q, r):
    """The transpose of _qr_thin_jvp: with c = Q^T ct_Q - ct_R R^T, the cotangent of B is
    tril(c - c^H, -1) + i Im(diag c) - c, and dA's is (ct_Q + conj(Q) ct_B) R^-T."""
    c = _plus(
        None if ct_q is None else _matmul(_mT(q), ct_q),
        None if ct_r is None else -_matmul(ct_r, _mT(r)),
    )
    ct_b = (c - _H(c)) * _strict_lower(shape(r)[-1], c) - c
    if _is_complex(c):
        ct_b = ct_b + _diag_embed(_imag_part(_diagonal(c)))
    return _right_solve_T(_plus(ct_q, _matmul(_conj(q), ct_b)), _nan_where_singular(r))


def _complement_tangent(q1, dq1, q2):
    """The tangent of an orthonormal complement q2 of q1's columns (the extra columns of a
    complete Q or a full U or V, which the input does not determine): dq2 = -q1 dq1^H q2, the
    least rotation of q2 that keeps it orthogonal to q1 (q1^H q2 = 0 and q2^H dq2 = 0). So a
    function of q2 that does not depend on the choice of basis (the projector q2 q2^H) has its
    true derivative."""
    return -_matmul(q1, _matmul(_H(dq1), q2))


def _complement_cotangent(q1, ct_q2, q2):
    """The transpose of `_complement_tangent` in dq1: -conj(q2 ct_q2^T q1)."""
    return -_H(_matmul(_mT(q1), _matmul(ct_q2, _mT(q2))))


def _qr_complete_jvp(t, q, r):
    """mode='complete' with m > n: Q = [Q1 | Q2] and R = [R1; 0] with (Q1, R1) the thin QR;
    Q2 rotates as `_complement_tangent` says and R's zero rows stay zero."""
    n = shape(r)[-1]
    q1 = q[..., :n]
    dq1, dr1 = _qr_thin_jvp(t, q1, r[..., :n, :])
    zero_rows = _np.zeros(shape(r)[:-2] + (shape(r)[-2] - n, n), _dtype(dr1))
    dq = concatenate([dq1, _complement_tangent(q1, dq1, q[..., n:])], axis=-1)
    return dq, concatenate([dr1, zero_rows], axis=-2)


def _qr_complete_vjp(q, r):
    """The transpose of `_qr_complete_jvp` (R's zero rows pass no cotangent on)."""
    n = shape(r)[-1]
    q1, q2, r1 = q[..., :n], q[..., n:], r[..., :n, :]

    def bprop(cts):
        ct_q, ct_r = cts
        if ct_q is not None:
            ct_q = ct_q[..., :n] + _complement_cotangent(q1, ct_q[..., n:], q2)
        if ct_r is not None:
            ct_r = ct_r[..., :n, :]
        return (_qr_thin_vjp(ct_q, ct_r, q1, r1),)

    return bprop


def _qr_jvp(tangents, ans, x, mode):
    """Tall and square: the thin rule (and the complement's for mode='complete'). Wide
    (m < n): x = [x1 | x2] with x1 square, and Householder QR factors x1 alone, so (Q, R1) is
    x1's QR and R2 = Q^H x2: dR2 = dQ^H x2 + Q^H dx2."""
    (t,) = tangents
    q, r = ans
    m, n = shape(x)[-2:]
    if m > n and mode == "complete":
        return _qr_complete_jvp(t, q, r)
    if m >= n:
        return _qr_thin_jvp(t, q, r)
    dq, dr1 = _qr_thin_jvp(t[..., :m], q, r[..., :m])
    dr2 = _matmul(_H(dq), x[..., m:]) + _matmul(_H(q), t[..., m:])
    return dq, concatenate([dr1, dr2], axis=-1)


def _qr_vjp(wanted, ans, x, mode):
    q, r = ans
    m, n = shape(x)[-2:]
    if m > n and mode == "complete":
        return _qr_complete_vjp(q, r)

    def bprop(cts):
        ct_q, ct_r = cts
        if m >= n:
            return (_qr_thin_vjp(ct_q, ct_r, q, r),)
        if ct_r is None:
            ct_x2 = _np.zeros(shape(x)[:-1] + (n - m,), _dtype(x))
            ct_r1 = None
        else:  # dR2 = dQ^H x2 + Q^H dx2: ct_Q gains conj(x2) ct_R2^H, dx2's is conj(Q) ct_R2
            ct_r1, ct_r2 = ct_r[..., :m], ct_r[..., m:]
            ct_q = _plus(ct_q, _matmul(_conj(x[..., m:]), _H(ct_r2)))
            ct_x2 = _matmul(_conj(q), ct_r2)
        ct_x1 = _qr_thin_vjp(ct_q, ct_r1, q, r[..., :m])
        return (concatenate([ct_x1, ct_x2], axis=-1),)

    return bprop


_qr_p = Primitive("qr", _qr_impl, vjp=_qr_vjp, jvp=_qr_jvp, multiple_results=True)
_register_per_matrix(_qr_p, forward="speed")


@mirror("function")
def qr(a: ArrayLike, mode: str = "reduced") -> QRResult | Array:
    """NumPy's `linalg.qr` with mode 'reduced', 'complete' or 'r', batched ('raw' of a plain
    array is NumPy's own, without derivatives).

    Differentiable where a's leading min(m, n) columns are independent; where they are not
    (R has a zero on its diagonal) the derivatives are nan, as JAX's. R's diagonal is real
    (LAPACK's choice, which fixes the factors' phases), and so is its derivative. With
    mode='complete' and more rows than columns, the extra columns Q2 of Q are any orthonormal
    basis of the complement of the first n, which a does not determine: their derivative is
    the least rotation that keeps them orthogonal (dQ2 = -Q1 dQ1^H Q2), so R, Q's first n
    columns and every function of Q2 that does not depend on the basis chosen (the projector
    Q2 Q2^H, norms of Q2^H b) have their true derivatives (JAX raises).
    """
    _check_matrix(a, "linalg.qr")
    m, n = shape(a)[-2:]
    if mode == "raw":
        if not is_traced(a):  # NumPy's Householder form (h, tau), as NumPy gives it
            return _np.linalg.qr(a, mode="raw")
        raise ValueError(
            f"linalg.qr: mode='raw' (LAPACK's Householder form) of a traced a ({describe(a)}) "
            "has no derivative in fgrad; use mode='reduced' (Q and R) or mode='r'"
        )
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"linalg.qr: mode must be 'reduced', 'complete', 'r' or 'raw', got {mode!r}"
        )
    # with m <= n NumPy's complete QR is its reduced one
    q, r = _qr_p(a, mode="complete" if mode == "complete" and m > n else "reduced")
    return r if mode == "r" else QRResult(q, r)


# --- eigh, eigvalsh -------------------------------------------------------------------------------


@per_matrix
def _eigh_impl(x, UPLO):
    w, v = _np.linalg.eigh(x, UPLO=UPLO)
    return w, v


def _eigh_jvp(tangents, ans, x, UPLO):
    """With T = V^H dA V: dw = Re(diag(T)), dV = V (F * T), F_ij = 1/(w_j - w_i) (0 on the
    diagonal: JAX's gauge, V^H dV has a zero diagonal)."""
    (t,) = tangents
    w, v = ans
    vtv = _matmul(_H(v), _matmul(t, v))
    dw = _diagonal(vtv)
    return real(dw) if _is_complex(dw) else dw, _matmul(
        v, _times_gaps_inverse(*_gaps_inverse_and_ties(w), vtv)
    )


def _eigh_vjp(wanted, ans, x, UPLO):
    w, v = ans
    f = _gaps_inverse(w)

    def bprop(cts):  # the transpose of _eigh_jvp: conj(V) (diag(ct_w) + F * (V^T ct_V)) V^T
        ct_w, ct_v = cts
        inner = _plus(
            None if ct_w is None else _diag_embed(ct_w),
            None if ct_v is None else f * _matmul(_mT(v), ct_v),
        )
        return (_matmul(_conj(v), _matmul(inner, _mT(v))),)  # on Hermitian tangents: `eigh`

    return bprop


_eigh_p = Primitive("eigh", _eigh_impl, vjp=_eigh_vjp, jvp=_eigh_jvp, multiple_results=True)
_register_per_matrix(_eigh_p, forward="speed", raises_on_values=True)


def _check_uplo(UPLO, who):
    """UPLO upper-cased, as NumPy reads it ('l' is 'L')."""
    upper = UPLO.upper() if isinstance(UPLO, str) else UPLO
    if upper not in ("L", "U"):
        raise ValueError(f"linalg.{who}: UPLO must be 'L' or 'U' (or 'l', 'u'), got {UPLO!r}")
    return upper


@mirror("function")
def eigh(a: ArrayLike, UPLO: str = "L") -> EighResult:
    """NumPy's `linalg.eigh`: (eigenvalues, eigenvectors) of a Hermitian (real symmetric)
    matrix, batched; the eigenvalues are real.

    As NumPy (LAPACK), it reads only the `UPLO` triangle of a and the real part of its
    diagonal: the value is NumPy's for any a, and the derivative is that of NumPy's function
    (0 outside the triangle read; JAX decomposes (a + a^H) / 2 instead, the same for a
    Hermitian a, but not its gradient). The eigenvector derivative divides by the gaps
    w_j - w_i; where a gap is exactly 0 (a repeated eigenvalue) a derivative that depends on
    the eigenvectors of the tie is nan (see the module docstring), while eigenvalue gradients
    remain exact.
    Complex eigenvectors are NumPy's, each fixed up to a phase: functions of them that do not
    depend on the phases have exact derivatives (see the module docstring).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda a: fnp.linalg.eigh(a).eigenvalues[1])(fnp.eye(2) * [1.0, 2.0])
    array([[0., 0.],
           [0., 1.]])
    """
    _check_square(a, "linalg.eigh")
    UPLO = _check_uplo(UPLO, "eigh")
    return EighResult(*_eigh_p(_hermitian_from(a, lower=UPLO == "L"), UPLO=UPLO))


def _eigvalsh_vjp(ans, x, UPLO):
    _, v = _eigh_p(x, UPLO=UPLO)
    return lambda ct: _matmul(_conj(v) * expand_dims(ct, -2), _mT(v))


def _eigvalsh_jvp(t, ans, x, UPLO):
    _, v = _eigh_p(x, UPLO=UPLO)
    dw = sum(_conj(v) * _matmul(t, v), axis=-2)  # diag(V^H dA V)
    return real(dw) if _is_complex(dw) else dw


_eigvalsh_p = matrix_primitive(
    "eigvalsh",
    lambda x, UPLO: _np.linalg.eigvalsh(x, UPLO=UPLO),
    vjp=_eigvalsh_vjp,
    jvp=_eigvalsh_jvp,
)
_register_per_matrix(_eigvalsh_p, raises_on_values=True)


@mirror("function")
def eigvalsh(a: ArrayLike, UPLO: str = "L") -> Array:
    """NumPy's `linalg.eigvalsh`: the real eigenvalues, ascending, of the Hermitian matrix read
    from a's `UPLO` triangle (as `eigh`); its gradient is exact at repeated eigenvalues too,
    its second derivatives there are nan (see the module docstring).

    >>> import fgrad, fgrad.numpy as fnp
    >>> a = fnp.array([[0.0, 7.0], [1.0, 0.0]])  # NumPy reads [[0, 1], [1, 0]]
    >>> fnp.linalg.eigvalsh(a)
    array([-1.,  1.])
    >>> fgrad.grad(lambda a: fnp.linalg.eigvalsh(a)[1])(a)
    array([[0.5, 0. ],
           [1. , 0.5]])
    """
    _check_square(a, "linalg.eigvalsh")
    UPLO = _check_uplo(UPLO, "eigvalsh")
    return _eigvalsh_p(_hermitian_from(a, lower=UPLO == "L"), UPLO=UPLO)


# --- eig, eigvals ---------------------------------------------------------------------------------


def _check_known_dtype(a, who):
    """NumPy's eig and eigvals of a real matrix are real when every eigenvalue is real and
    complex otherwise: a lazy array's dtype must be known before anything is computed."""
    if not _is_complex(a) and _lazy(a):
        raise TypeError(
            f"{who} of a real {_library(a)} array: NumPy's result is real or "
            "complex depending on the eigenvalues, which a lazy array cannot know before it "
            "is computed. Pass a complex array (a + 0j), or compute the array first"
        )


@per_matrix
def _eig_impl(x):
    w, v = _np.linalg.eig(x)
    return w, v


def _largest_entries(v):
    """A constant one-hot mask of the largest-magnitude entry of each column of v: the entry
    LAPACK's geev makes real (the first largest re^2 + im^2, as geev picks it)."""
    if _unread(v):  # (under jit: computed, not guarded)
        c = constant_of(v)
        return _onehot(_mT(_first_largest(_mT(real(c) ** 2 + imag(c) ** 2))), v)
    vv = _np.asarray(primal(v))
    if vv.shape[-2] == 0:  # no entries (argmax refuses an empty axis)
        return _const(_np.zeros(vv.shape, bool), v)
    k = _np.argmax(vv.real**2 + vv.imag**2, axis=-2)
    return _const(_np.arange(vv.shape[-2])[:, None] == k[..., None, :], v)


def _nan_where_defective(v):
    """eig's eigenvectors V, as the derivative rules solve with them: nan in each matrix of
    the stack whose columns are linearly dependent to working precision (smallest singular
    value at most n eps times the largest). There the matrix is defective (not
    diagonalizable): its eigenvalues have no derivative, and a solve with a V that rounding
    alone keeps regular gave a finite wrong number (the gradient of trace(a^3) computed as
    sum(eigvals(a)^3), with entry 0 for 6). Eagerly nothing changes where every matrix is
    well conditioned; under `vmap` and `jit` the test is computed, not read (a replay with
    another matrix takes the same path, and each row its own answer)."""
    n = shape(v)[-1]
    if n == 0 or 0 in shape(v):
        return v
    eps = n * float(_np.finfo(_dtype(v)).eps)
    if not _unread(v):
        sv = _np.linalg.svd(_np.asarray(primal(v)), compute_uv=False)
        if (sv[..., -1] > eps * sv[..., 0]).all():
            return v
    sv = _svdvals_p(constant_of(v))
    regular = greater(sv[..., -1], eps * sv[..., 0])
    return where(expand_dims(expand_dims(regular, -1), -1), v, _np.nan)


def _eig_jvp(tangents, ans, x):
    """Nondegenerate perturbation theory (as JAX): P = V^-1 dA V, dw = diag(P), and
    dV = U + V diag(c) with U = V (F * P), F_ij = 1/(w_j - w_i). The free c_j keeps LAPACK's
    normalization: unit norm (Re c_j = -Re(v_j^H u_j)) and, for complex v, the largest entry
    v_kj real (Im c_j = -Im(u_kj) / v_kj)."""
    (t,) = tangents
    w, v = ans
    p = _matmul(_solve_p(_nan_where_defective(v), t), v)
    u = _matmul(v, _times_gaps_inverse(*_gaps_inverse_and_ties(w), p))
    if _is_complex(v):
        mask = _largest_entries(v)
        largest = real(sum(mask * v, axis=-2))
        c = -real(sum(conj(v) * u, axis=-2)) - 1j * imag(sum(mask * u, axis=-2)) / largest
    else:
        c = -sum(v * u, axis=-2)
    return _diagonal(p), u + v * expand_dims(c, -2)


def _eig_vjp(wanted, ans, x):
    w, v = ans
    f = _gaps_inverse(w)
    real_input = not _is_complex(x)
    invertible = _nan_where_defective(v)
    if _is_complex(v):
        mask = _largest_entries(v)
        largest = real(sum(mask * v, axis=-2))

    def bprop(cts):  # the transpose of _eig_jvp
        ct_w, ct_v = cts
        inner = None if ct_w is None else _diag_embed(ct_w)
        if ct_v is not None:
            g = sum(ct_v * v, axis=-2)  # pairs with c
            if _is_complex(v):
                ct_u = (
                    ct_v
                    - expand_dims(real(g), -2) * conj(v)
                    + mask * expand_dims(-1j * imag(g) / largest, -2)
                )
            else:
                ct_u = ct_v - expand_dims(g, -2) * v
            inner = _plus(inner, f * _matmul(_mT(v), ct_u))
        ct = _solve_p(_mT(invertible), _matmul(inner, _mT(v)))  # V^-T (...) V^T
        return (real(ct) if real_input and _is_complex(ct) else ct,)

    return bprop


_eig_p = Primitive("eig", _eig_impl, vjp=_eig_vjp, jvp=_eig_jvp, multiple_results=True)
# NumPy's eig (and eigvals) are real where every eigenvalue is, complex otherwise: a `jit`
# record checks the dtype it was recorded for (`shape_from_values`)
_register_per_matrix(_eig_p, forward="speed", shape_from_values=True, raises_on_values=True)


@mirror("function")
def eig(a: ArrayLike) -> EigResult:
    """NumPy's `linalg.eig`: (eigenvalues, eigenvectors) of a general square matrix, batched.
    As in NumPy, the results are complex unless a is real with real eigenvalues only.

    The derivatives are JAX's, for distinct eigenvalues: dw = diag(V^-1 dA V); the
    eigenvectors are differentiated under LAPACK's normalization (each of unit norm, its
    largest-magnitude entry real), so they match finite differences of NumPy's own values
    where that entry is unique. (JAX differentiates eigenvectors only when asked with
    `enable_eigvec_derivs=True`, as it cannot see its values; fgrad differentiates the
    normalization NumPy's values have.) For a real matrix LAPACK leaves each eigenvector's sign
    free, and it can flip under a tiny change of the matrix; a function of the eigenvectors
    that does not depend on their scaling (`v @ diag(w) @ inv(v)`) has the exact derivative
    regardless. Where two eigenvalues are equal, a derivative that depends on their
    eigenvectors is nan, as `eigh`'s (and so are second derivatives of the eigenvalues). At a
    defective matrix (not diagonalizable: V singular to working precision) every derivative
    is nan.

    >>> import fgrad, fgrad.numpy as fnp
    >>> a = fnp.array([[0.0, -2.0], [1.0, 0.0]])  # eigenvalues +-i sqrt(2)
    >>> fnp.linalg.eig(a).eigenvalues.dtype
    dtype('complex128')
    >>> fgrad.grad(lambda a: fnp.imag(fnp.linalg.eigvals(a)[0]))(a)  # d sqrt(-a01 a10)
    array([[ 0.        , -0.35355339],
           [ 0.70710678,  0.        ]])
    """
    _check_square(a, "linalg.eig")
    _check_known_dtype(a, "linalg.eig")
    return EigResult(*_eig_p(a))


def _eigvectors_for(ans, x):
    """eig(x)'s traced eigenvectors, their columns in the order of the eigenvalues `ans`
    (NumPy's `eigvals` and `eig` are separate LAPACK calls). Each eigenvalue takes the column
    of its nearest one of eig's, one to one: equal eigenvalues take distinct columns, so V
    stays invertible where a is diagonalizable."""
    w, v = _eig_p(x)
    v = _nan_where_defective(v)
    if 0 in shape(ans):  # no eigenvalue to match (0x0 matrices, or none): nothing to reorder
        return v
    if _unreadable(w):  # no read: the pairing by reductions and comparisons
        gaps = abs(expand_dims(constant_of(ans), -1) - expand_dims(constant_of(w), -2))
        return _reordered(v, _mT(_nearest_pairs(gaps)))
    if _core.holds_staged(w):
        # Under `jit` the pairing is computed in the record and only its order is read: a
        # guard on n integers (the same for nearly every matrix), where reading the
        # eigenvalues guarded every one of them (a record per matrix)
        gaps = abs(expand_dims(constant_of(ans), -1) - expand_dims(constant_of(w), -2))
        order = _np.asarray(primal(_arrays.argmin(gaps, axis=-1)))
    else:
        wa, we = _np.asarray(primal(ans)), _np.asarray(primal(w))
        gaps = _np.abs(wa[..., :, None] - we[..., None, :])
        order = _np.argmin(gaps, axis=-1)
    n = shape(ans)[-1]
    if (order == _np.arange(n)).all():
        return v
    if not (_np.sort(order, axis=-1) == _np.arange(n)).all():  # not one to one
        order = _np.asarray(primal(_arrays.argmax(_nearest_pairs(gaps), axis=-1)))
    return _take_last(v, _np.broadcast_to(order[..., None, :], shape(v)))


def _nearest_pairs(gaps):
    """M (..., n, n) boolean, M[..., i, j] where entry i of one list is paired with entry j of
    the other (gaps[..., i, j] the distance between them): one to one, each step pairing the
    closest entries not yet paired (at a tie, the first in row-major order). Reductions and
    comparisons only, so that it batches."""
    n = shape(gaps)[-1]
    flat, square = shape(gaps)[:-2] + (n * n,), shape(gaps)
    places = _np.arange(n * n, dtype=float)
    paired = _np.zeros(square, dtype=bool)
    for _ in range(n):
        left = reshape(where(_paired_lines(paired), _np.inf, gaps), flat)
        closest = equal(left, min(left, axis=-1, keepdims=True))
        at = where(closest, places, float(n * n))
        paired = logical_or(paired, reshape(equal(at, min(at, axis=-1, keepdims=True)), square))
    return paired


def _paired_lines(paired):
    """Where row i or column j of the pairing `paired` already holds a pair."""
    held = where(paired, 1.0, 0.0)
    rows = greater(max(held, axis=-1, keepdims=True), 0.0)
    return logical_or(rows, greater(max(held, axis=-2, keepdims=True), 0.0))


def _eigvals_vjp(ans, x):
    v = _eigvectors_for(ans, x)
    real_input = not _is_complex(x)

    def bprop(ct):  # V^-T diag(ct) V^T
        g = _solve_p(_mT(v), expand_dims(ct, -1) * _mT(v))
        return real(g) if real_input and _is_complex(g) else g

    return bprop


def _eigvals_jvp(t, ans, x):
    v = _eigvectors_for(ans, x)
    dw = sum(_solve_p(v, t) * _mT(v), axis=-1)  # diag(V^-1 dA V)
    return real(dw) if _is_complex(dw) and not _is_complex(ans) else dw


_eigvals_p = matrix_primitive(
    "eigvals",
    _np.linalg.eigvals,
    vjp=_eigvals_vjp,
    jvp=_eigvals_jvp,
)
# real or complex by the values, as eig
_register_per_matrix(_eigvals_p, shape_from_values=True, raises_on_values=True)


@mirror("function")
def eigvals(a: ArrayLike) -> Array:
    """NumPy's `linalg.eigvals`: the eigenvalues of a general square matrix (complex unless a
    is real with real eigenvalues only), batched; dw = diag(V^-1 dA V), as `eig` (exact at
    repeated eigenvalues of a diagonalizable matrix, nan at a defective one)."""
    _check_square(a, "linalg.eigvals")
    _check_known_dtype(a, "linalg.eigvals")
    return _eigvals_p(a)


# --- svd, svdvals ---------------------------------------------------------------------------------


@per_matrix
def _svd_impl(x, full_matrices):
    u, s, vh = _np.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def _svd_reduced(ans):
    """The reduced factors (U, s, Vh) of `svd`'s result, k = min(m, n) singular vectors on
    each side, and the extra columns of a full U and of a full V (None where there are none)."""
    u, s, vh = ans
    k = shape(s)[-1]
    u2 = v2 = None
    if shape(u)[-1] > k:
        u, u2 = u[..., :, :k], u[..., :, k:]
    if shape(vh)[-2] > k:
        vh, v2 = vh[..., :k, :], _H(vh[..., k:, :])
    return (u, s, vh), u2, v2


def _svd_jvp(tangents, ans, x, full_matrices):
    """The reduced SVD's derivative (as in JAX): with dP = U^H dA V and F_ij =
    1/(s_j^2 - s_i^2), ds = Re(diag(dP)), dU = U (F * (dP S + S dP^H) + i Im(diag(dP)) / S)
    [+ (I - U U^H) dA V / s if m > n], dV = V (F * (S dP + dP^H S)) [+ (I - V V^H) dA^H U / s
    if m < n]. The i Im(diag(dP)) / S term is JAX's gauge: V^H dV has a zero diagonal. The
    extra columns of a full U or V rotate as `_complement_tangent` says."""
    (t,) = tangents
    (u, s, vh), u2, v2 = _svd_reduced(ans)
    m, n = shape(x)[-2:]
    v = _H(vh)
    f, ties = _gaps_inverse_and_ties(s * s)
    inv_s = _inverse_where_nonzero(s)
    dp = _matmul(_H(u), _matmul(t, v))
    dps = dp * expand_dims(s, -2)
    sdp = expand_dims(s, -1) * dp
    du_inner = _times_gaps_inverse(f, ties, dps + _H(dps))
    ds = _diagonal(dp)
    if _is_complex(dp):
        du_inner = du_inner + _diag_embed(_imag_part(ds) * inv_s)
        ds = real(ds)
    du = _matmul(u, du_inner)
    dv = _matmul(v, _times_gaps_inverse(f, ties, sdp + _H(sdp)))
    if m > n:
        dav = _matmul(t, v)
        du = du + (dav - _matmul(u, _matmul(_H(u), dav))) * expand_dims(inv_s, -2)
    elif m < n:
        dau = _matmul(_H(t), u)
        dv = dv + (dau - _matmul(v, _matmul(vh, dau))) * expand_dims(inv_s, -2)
    if u2 is not None:
        du = concatenate([du, _complement_tangent(u, du, u2)], axis=-1)
    if v2 is not None:
        dv = concatenate([dv, _complement_tangent(v, dv, v2)], axis=-1)
    return du, ds, _H(dv)


def _svd_vjp(wanted, ans, x, full_matrices):
    (u, s, vh), u2, v2 = _svd_reduced(ans)
    n_s = shape(s)[-1]  # min(m, n)
    m, n = shape(x)[-2:]
    f = _gaps_inverse(s * s)
    inv_s = _inverse_where_nonzero(s)
    uc, vt = _conj(u), _conj(vh)  # conj(U) and V^T

    def bprop(cts):  # the transpose of _svd_jvp: dA's cotangent is conj(U) C V^T + ...
        ct_u, ct_s, ct_vh = cts
        if u2 is not None and ct_u is not None:  # the full U's extra columns: into U's
            ct_u = ct_u[..., :, :n_s] + _complement_cotangent(u, ct_u[..., :, n_s:], u2)
        if v2 is not None and ct_vh is not None:  # the same for V, whose cotangent is ct_Vh^H
            ct_v2 = _H(ct_vh[..., n_s:, :])
            ct_vh = ct_vh[..., :n_s, :] + _H(_complement_cotangent(_H(vh), ct_v2, v2))
        inner = None if ct_s is None else _diag_embed(ct_s)  # C, the cotangent of dP
        if ct_u is not None:
            j = _matmul(_mT(u), ct_u)
            inner = _plus(inner, (f * (j - _H(j))) * expand_dims(s, -2))
            if _is_complex(j):
                inner = inner + _diag_embed(_imag_part(_diagonal(j)) * inv_s)
        if ct_vh is not None:
            k = _matmul(vt, _H(ct_vh))  # V^T ct_V, where ct_V = ct_Vh^H
            inner = _plus(inner, expand_dims(s, -1) * (f * (k - _H(k))))
        g = _matmul(uc, _matmul(inner, vt))
        if m > n and ct_u is not None:  # (I - conj(U) U^T) ct_U S^-1 V^T
            g = g + _matmul((ct_u - _matmul(uc, j)) * expand_dims(inv_s, -2), vt)
        elif m < n and ct_vh is not None:  # conj(U) S^-1 ct_Vh (I - conj(V) V^T)
            g = g + _matmul(uc, expand_dims(inv_s, -1) * (ct_vh - _matmul(_H(k), vt)))
        return (g,)

    return bprop


_svd_p = Primitive("svd", _svd_impl, vjp=_svd_vjp, jvp=_svd_jvp, multiple_results=True)
_register_per_matrix(_svd_p, forward="speed", raises_on_values=True)


def _svdvals_vjp(ans, x):
    u, _, vh = _svd_p(x, full_matrices=False)
    return lambda ct: _conj(_matmul(u * expand_dims(ct, -2), vh))  # conj(U diag(ct) Vh)


def _svdvals_jvp(t, ans, x):
    u, _, vh = _svd_p(x, full_matrices=False)
    ds = sum(_conj(u) * _matmul(t, _H(vh)), axis=-2)  # diag(U^H dA V)
    return real(ds) if _is_complex(ds) else ds


_svdvals_p = matrix_primitive(
    "svdvals",
    lambda x: _np.linalg.svd(x, compute_uv=False),
    vjp=_svdvals_vjp,
    jvp=_svdvals_jvp,
)
_register_per_matrix(_svdvals_p, raises_on_values=True)


@mirror("function")
def svd(
    a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> SVDResult | Array:
    """NumPy's `linalg.svd`, batched: (U, S, Vh), or S alone with compute_uv=False; S is real.

    The singular vectors' derivatives divide by the gaps s_j^2 - s_i^2 and (for non-square a)
    by s. Where a gap is exactly 0 (a repeated singular value, or two zero ones), a derivative
    that depends on the singular vectors of the tie is nan, as JAX's (even for smooth functions
    such as U Vh or U diag(s**3) Vh: the rules cannot tell them apart), while the singular
    values' gradient conj(U diag(ct) Vh) is exact and their second derivatives are nan (see the
    module docstring); where s is 0 (non-square a), 1/s is taken as 0, so singular-vector
    gradients there are not meaningful. For complex a, U and Vh are NumPy's, fixed up to a
    phase per singular value: functions of them that do not depend on the phases
    (U diag(f(s)) Vh, abs(U), U Vh) have exact derivatives at distinct singular values (see
    the module docstring). With full_matrices=True and a non-square a, the extra columns of
    U (or rows of Vh) are any orthonormal basis of the complement, which a does not determine:
    their derivative is the least rotation that keeps them orthogonal (see `qr`), so s, U's
    (Vh's) first min(m, n) columns (rows) and the projector onto the extra ones have their true
    derivatives (JAX raises). With `hermitian=True` it is computed from
    `eigh` as NumPy does (s = |w| sorted descending, U the matching eigenvectors,
    Vh = (U sign(w))^H), so it reads a's lower triangle only (as `eigh`) and the eigenvalue
    gaps are the ones divided by.

    >>> import fgrad, fgrad.numpy as fnp
    >>> a = fnp.array([[3.0, 0.0], [0.0, 1j]])
    >>> fnp.linalg.svd(a, compute_uv=False)
    array([3., 1.])
    >>> g = fgrad.grad(lambda a: fnp.sum(fnp.linalg.svdvals(a) ** 2))(a)  # of |a|_F^2
    >>> bool(fnp.allclose(g, 2 * fnp.conj(a)))
    True
    """
    _check_matrix(a, "linalg.svd")
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    if not compute_uv:
        return _svdvals_p(a)
    return SVDResult(*_svd_p(a, full_matrices=bool(full_matrices)))


def _take_last(x, idx):
    """x[..., idx] with a different (constant) index vector for every leading position."""
    grids = _np.indices(idx.shape, sparse=True)
    return x[tuple(grids[:-1]) + (idx,)]


def _svd_hermitian(a, compute_uv):
    _check_square(a, "linalg.svd(hermitian=True)")
    if not compute_uv:  # NumPy: the sorted |eigvalsh|
        w = eigvalsh(a)
        if _unread(w):
            return _reordered(abs(w), _descending_order(abs(constant_of(w))))
        order = _np.argsort(_np.abs(_np.asarray(primal(w))), axis=-1)[..., ::-1]
        return _take_last(abs(w), order)
    w, v = eigh(a)
    if _unread(w):
        order = _descending_order(abs(constant_of(w)))
        u = _reordered(v, order)
        signs = _reordered(sign(constant_of(w)), order)
        return SVDResult(u, _reordered(abs(w), order), _H(u * expand_dims(signs, -2)))
    wv = _np.asarray(primal(w))
    order = _np.argsort(_np.abs(wv), axis=-1)[..., ::-1]
    s = _take_last(abs(w), order)
    signs = _const(_np.take_along_axis(_np.sign(wv), order, axis=-1), w)
    u = _take_last(v, _np.broadcast_to(order[..., None, :], shape(v)))
    return SVDResult(u, s, _H(u * expand_dims(signs, -2)))


@mirror("function")
def svdvals(x: ArrayLike, /) -> Array:
    """NumPy's `linalg.svdvals`: `svd(x, compute_uv=False)`, real and descending."""
    _check_matrix(x, "linalg.svdvals", "x")
    return _svdvals_p(x)


# --- norms ----------------------------------------------------------------------------------------


def _pnorm_impl(x, ord, axis, keepdims, flat):
    """NumPy's own formulas, so that values are NumPy's to the last bit: `flat` is NumPy's fast
    path for the 2-norm of all entries (a dot product)."""
    complex_input = _np.iscomplexobj(x)
    foreign = type(x) is not _np.ndarray and _core.is_foreign_array(x)
    if flat is not True and flat and not foreign:
        # the first `flat` axes are rows of vmap (`_pnorm_batch`): each row's own dot, as
        # NumPy's fast path takes it (vecdot is the BLAS dot per row: the loop's bits)
        # (each row's entries in memory order, as ravel(order="K") takes them)
        inner = sorted(range(flat, x.ndim), key=lambda a: -abs(x.strides[a]))
        rows = x.transpose((*range(flat), *inner)).reshape(x.shape[:flat] + (-1,))
        if complex_input:
            return _np.sqrt(_np.vecdot(rows.real, rows.real) + _np.vecdot(rows.imag, rows.imag))
        return _np.sqrt(_np.vecdot(rows, rows))
    if flat:
        x = x.ravel() if foreign else x.ravel(order="K")
        if complex_input:
            return _np.sqrt(x.real.dot(x.real) + x.imag.dot(x.imag))
        return _np.sqrt(x.dot(x))
    if ord == 2:
        squares = (x.conj() * x).real if complex_input else x * x
        # Dask has np.sum, not the ufunc method np.add.reduce
        total = _np.sum if foreign else _np.add.reduce
        return _np.sqrt(total(squares, axis=axis, keepdims=keepdims))
    total = _np.sum if foreign else _np.add.reduce
    out = total(_np.abs(x) ** ord, axis=axis, keepdims=keepdims)
    return out ** _np.reciprocal(ord, dtype=out.dtype)


def _phase(x):
    """d|x| / dx as a cotangent: sign(x) for real x (a constant), conj(x) / |x| for complex x,
    0 at 0 (as `abs` of a complex 0 takes; a real `abs` takes 1 there). The p-norms that use
    it multiply it by |x|^(p-1), which is 0 at x = 0 for p > 1, so the choice shows only for
    p <= 1."""
    if not _is_complex(x):
        return sign(x)
    zero = mask_values(x) == 0
    if may_hold(zero):
        return where(zero, 0.0, conj(x) / where(zero, 1.0, abs(x)))
    return conj(x) / abs(x)


def _pnorm_slope(ans, x, ord, axis):
    """d norm / dx as a cotangent: phase(x) (|x| / norm)^(p-1) (conj(x) / norm for p = 2), and
    0 where the norm is 0: a subgradient at the zero vector, where JAX gives nan."""
    a = reshape(ans, _kept_shape(shape(x), axis))
    batched = _unread(a)  # a lazy or jit-computed norm is never read
    zero = equal(a, 0) if batched else _np.asarray(primal(a)) == 0
    if not batched and not zero.any():
        return _conj(x) / a if ord == 2 else _phase(x) * (abs(x) / a) ** (ord - 1)
    # Where the norm is 0, so is x: both are replaced by 1 inside the masked branch, which
    # keeps it finite, so that its derivatives are 0 rather than nan.
    zero_x = broadcast_to(zero, shape(x)) if batched else _np.broadcast_to(zero, shape(x))
    a, x = where(zero, 1.0, a), where(zero_x, 1.0, x)
    g = _conj(x) / a if ord == 2 else _phase(x) * (abs(x) / a) ** (ord - 1)
    return where(zero_x, 0.0, g)


def _pnorm_vjp(ans, x, ord, axis, keepdims, flat):
    slope = _pnorm_slope(ans, x, ord, axis)
    kept = _kept_shape(shape(x), axis)
    return lambda ct: reshape(ct, kept) * slope


def _pnorm_jvp(t, ans, x, ord, axis, keepdims, flat):
    dn = sum(t * _pnorm_slope(ans, x, ord, axis), axis=axis, keepdims=keepdims)
    return real(dn) if _is_complex(dn) else dn


def _pnorm_batch(args, dims, ord, axis, keepdims, flat):
    """The norm over the same axes of each row (`flat`, NumPy's dot-product path for all of a
    row's entries, stays a dot per row: `flat` counts the rows' leading axes)."""
    (x,), (d,) = args, dims
    x = batch_to_front(x, d)
    if flat:
        axis = tuple(range(len(shape(x)) - 1))
        flat = 1 if flat is True else flat + 1
    axes = tuple(ax + 1 for ax in axis)
    return _pnorm_p(x, ord=ord, axis=axes, keepdims=keepdims, flat=flat), 0


_pnorm_p = defprimitive(
    _pnorm_impl,
    vjp=_pnorm_vjp,
    jvp=_pnorm_jvp,
    name="norm",
    batch=_pnorm_batch,
    forward="speed",
    sparsity="norm",  # a reduction
)


def _pnorm(x, ord, axis, keepdims=False, flat=False):
    return _pnorm_p(x, ord=ord, axis=axis, keepdims=keepdims, flat=flat)


def _norm_input(x):
    """x as `norm` reads it, as NumPy's does: an array (from a list or a Python number), and
    float64 for integer or bool input (NumPy casts before any formula, so every ord gives
    float64, and the 2-norm of bools is sqrt(count), not a bool)."""
    x = asarray(x)
    return x if _np.issubdtype(_dtype(x), _np.inexact) else astype(x, _np.float64)


def _largest(v, axis, keepdims=False):
    """The largest entry of v (non-negative: absolute values, their sums, singular values)
    along `axis`, and 0 over no entries, as NumPy's norms (`initial=0`). Only an empty
    reduction passes the initial 0: elsewhere it would take a share of the gradient where it
    ties with entries that are 0."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    if any(shape(v)[ax] == 0 for ax in axes):
        return max(v, axis=axis, keepdims=keepdims, initial=0.0)
    return max(v, axis=axis, keepdims=keepdims)


def _vector_norm(x, ord, axes, keepdims):
    if ord is None:
        ord = 2
    if isinstance(ord, str):
        raise ValueError(f"linalg.norm: invalid norm order {ord!r} for vectors")
    if ord == _np.inf:
        return _largest(abs(x), axes, keepdims)
    if ord == -_np.inf:
        return min(abs(x), axis=axes, keepdims=keepdims)
    if ord == 0 and _unread(x):  # the number of nonzero entries: a constant
        dtype = _np.finfo(_dtype(x)).dtype if _np.issubdtype(_dtype(x), _np.inexact) else float
        return sum(
            _onehot(not_equal(constant_of(x), 0), _np.zeros((), dtype)),
            axis=axes,
            keepdims=keepdims,
        )
    if ord == 0:
        xv = _np.asarray(primal(x))
        dtype = xv.real.dtype if _np.issubdtype(xv.dtype, _np.inexact) else _np.float64
        return _np.sum(xv != 0, axis=axes, keepdims=keepdims).astype(dtype)[()]
    if ord == 1:
        return sum(abs(x), axis=axes, keepdims=keepdims)
    return _pnorm(x, float(ord), axes, keepdims)


def _matrix_norm(x, ord, row, col, keepdims):
    nd = len(shape(x))
    if ord in (None, "fro", "f"):
        out = _pnorm(x, 2.0, tuple(sorted((row, col))))
    elif ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(x, (row, col), (-2, -1)))
        out = sum(s, axis=-1) if ord == "nuc" else (_largest if ord == 2 else min)(s, axis=-1)
    elif ord in (1, -1):  # the largest (smallest) column sum of |x|
        sums = sum(abs(x), axis=row)
        out = (_largest if ord == 1 else min)(sums, axis=col - 1 if col > row else col)
    elif ord in (_np.inf, -_np.inf):  # the largest (smallest) row sum of |x|
        sums = sum(abs(x), axis=col)
        out = (_largest if ord == _np.inf else min)(sums, axis=row - 1 if row > col else row)
    else:
        raise ValueError(
            f"linalg.norm: invalid norm order {ord!r} for matrices; use None, 'fro', 'nuc', "
            "1, -1, 2, -2, inf or -inf"
        )
    if keepdims:
        out = reshape(out, _kept_shape(shape(x), (row, col)) if nd else ())
    return out


@mirror("function")
def norm(
    x: ArrayLike,
    ord: float | str | None = None,
    axis: int | tuple[int, int] | None = None,
    keepdims: bool = False,
) -> Array:
    """NumPy's `linalg.norm`: every vector `ord` (None, 2, 1, inf, -inf, 0, other p) and
    matrix `ord` (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf), `axis` an int or a pair, and
    `keepdims`; real for complex x (the 2-norm sums |x|^2).

    Conventions: ord=0 counts nonzeros and has no derivative; 1, inf and the matrix 1/inf
    norms follow `abs` (abs'(0) = 1 for real x) and `max` (ties share evenly); 2, -2 and
    'nuc' use the singular values, whose gradient is exact at repeated singular values. For
    complex x the gradient is JAX's: conj(x) / norm for the 2-norm.

    At 0, where a norm has no derivative, the gradient is a subgradient that depends on
    `ord`: 0 for the 2-norm, 'fro' and the vector p-norms other than 1 and +-inf (JAX gives
    nan); for real x, ones for the vector 1-norm, 1/n each for the inf-norm, 1/n each for the
    n x n matrix 1- and inf-norms, I/n for the matrix 2-norm and I for 'nuc' (complex x: 0
    for the vector norms). A jvp there is that subgradient applied to the tangent, not the
    directional derivative (the norm of the tangent): along -I the 'nuc' norm's is -n.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(fnp.linalg.norm)(fnp.array([3.0, 4.0]))
    array([0.6, 0.8])
    >>> z = fnp.array([3.0, 4.0j])
    >>> bool(fnp.allclose(fgrad.grad(fnp.linalg.norm)(z), fnp.conj(z) / 5.0))  # conj(z) / |z|
    True
    """
    x = _norm_input(x)
    nd = len(shape(x))
    ord = _norm_order(ord)
    if axis is None:
        if ord is None or (ord in ("fro", "f") and nd == 2) or (ord == 2 and nd == 1):
            out = _pnorm(x, 2.0, tuple(range(nd)), flat=True)
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


def _norm_order(ord, who="linalg.norm", what="ord"):
    """`ord` as a plain value: it chooses which norm is computed. A traced integer (a jitted
    function's int argument) is read, and guarded; a traced float is refused."""
    ord = read_int(ord)
    if is_traced(ord):
        raise TypeError(
            f"{who}: {what} is a traced value of {describe(ord)}; it chooses which norm is "
            "computed, so it must be a plain number or string. Under jit, pass it through "
            "static_argnums or static_argnames"
        )
    return ord


def _bad_axis(ax, nd):
    raise ValueError(f"linalg.norm: axis {ax} is out of bounds for an array of dimension {nd}")


@mirror("function")
def vector_norm(
    x: ArrayLike,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    ord: float = 2,
) -> Array:
    """NumPy's `linalg.vector_norm`: `axis=None` takes the norm of all entries."""
    x = _norm_input(x)
    nd = len(shape(x))
    if axis is None:
        out = _vector_norm(reshape(x, (-1,)), ord, (0,), False)
        return reshape(out, (1,) * nd) if keepdims else out
    return _vector_norm(x, ord, _normalize_axes(axis, nd), keepdims)


@mirror("function")
def matrix_norm(x: ArrayLike, /, *, keepdims: bool = False, ord: float | str = "fro") -> Array:
    """NumPy's `linalg.matrix_norm`: a matrix norm over the last two axes."""
    x = _norm_input(x)
    _check_matrix(x, "linalg.matrix_norm", "x")
    nd = len(shape(x))
    return _matrix_norm(x, _norm_order(ord, "linalg.matrix_norm"), nd - 2, nd - 1, keepdims)


@mirror("function")
def cond(x: ArrayLike, p: float | str | None = None) -> Array:
    """NumPy's `linalg.cond`: s_max / s_min for p None, 2 (s_min / s_max for -2), otherwise
    norm(x, p) * norm(inv(x), p); real for complex x. As NumPy's, it is inf for a singular
    matrix (each of a stack on its own), with no derivative there.

    >>> import fgrad.numpy as fnp
    >>> fnp.linalg.cond(fnp.ones((2, 2)), 1)
    np.float64(inf)
    """
    x = asarray(x)
    _check_matrix(x, "linalg.cond", "x")
    if 0 in shape(x)[-2:]:
        raise _LinAlgError(
            f"linalg.cond: argument 'x' has {describe(x)}; cond is not defined on empty "
            "arrays: pass matrices with at least one row and one column"
        )
    p = _norm_order(p, "linalg.cond", "p")
    with _np.errstate(all="ignore"):  # as NumPy's: a singular matrix is no error
        r = _cond(x, p)
    # As NumPy's: a nan (0 / 0, 0 * inf, a singular matrix) is inf unless x holds a nan
    nans = _np.any(_np.isnan(mask_values(x)), axis=(-2, -1))
    undefined = _np.logical_and(_np.isnan(mask_values(r)), _np.logical_not(nans))
    if may_hold(undefined):
        r = where(undefined, _inf_without_derivative(undefined, x, r), r)
    return r[()]  # a number for one matrix, as NumPy's


def _inf_without_derivative(undefined, x, r):
    """inf where `undefined` holds (a mask over the stack), 1 elsewhere, with a nan derivative
    (every entry of x's) where it is inf: cond is inf at a singular matrix and has no
    derivative there. A constant inf would give a 0 derivative, a stationary point to an
    optimizer. The value is inf * (1 + 0 * total), total a sum of x's finite entries: inf,
    and its derivative inf * 0 = nan; where the mask does not hold the factor is 1, the
    derivative 0, which the caller's `where` drops."""
    finite = where(_np.isfinite(mask_values(x)), x, _const(0.0, x))
    total = sum(real(finite) if _is_complex(finite) else finite, axis=(-2, -1))
    scale = where(undefined, _const(_np.inf, r), _const(1.0, r))
    return scale * (1.0 + 0.0 * total)


def _cond(x, p):
    """`cond`'s formulas, nan where NumPy's give nan or inf (its caller makes those inf)."""
    if p in (None, 2, -2):
        s = svdvals(x)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    _check_square(x, "linalg.cond", "x")
    # NumPy's inverse gives inf or nan where LU meets a zero pivot, which slogdet's sign 0
    # reports from the same factorization; inv would raise there, so those matrices are
    # replaced by the identity, and their result by nan
    singular = equal(slogdet(mask_values(x)).sign, 0)
    if not may_hold(singular):
        return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    regular = where(expand_dims(expand_dims(singular, -1), -1), _const(_np.eye(shape(x)[-1]), x), x)
    r = norm(x, p, axis=(-2, -1)) * norm(inv(regular), p, axis=(-2, -1))
    return where(singular, _np.asarray(_np.nan, _dtype(r)), r)


matrix_rank = nondiff_function(_np.linalg.matrix_rank)
_matrix_rank_stacked = _leading_axes_rule(matrix_rank.primitive, (2, 0))


def _matrix_rank_batch(args, dims, **params):
    """Stacks of matrices share one call; rows of fewer than 2 dimensions (NumPy's rank of a
    vector or a scalar: 1 unless all zero) are no stack, so they go one at a time."""
    if dims[0] is not None and len(shape(args[0])) < 3:
        why = "rows of fewer than 2 dimensions (the rank of a vector)"
        n = shape(args[0])[dims[0]]
        return _batching.rows_one_by_one(matrix_rank.primitive, args, dims, params, n, why)
    return _matrix_rank_stacked(args, dims, **params)


# (an svd: it raises on a nan or an inf, which a `jit` replay keeps as a check)
register_rules(matrix_rank.primitive, batch=_matrix_rank_batch, raises_on_values=True)


@mirror("shape")
def matrix_transpose(x: ArrayLike, /) -> Array:
    """NumPy's `linalg.matrix_transpose`: swap the last two axes."""
    _check_matrix(x, "linalg.matrix_transpose", "x")
    return _mT(x)


# --- products -------------------------------------------------------------------------------------


@mirror("function")
def matrix_power(a: ArrayLike, n: int) -> Array:
    """NumPy's `linalg.matrix_power` for an integer n, by repeated squaring; a negative n
    powers `inv(a)`; n = 0 gives the identity (a constant)."""
    _check_square(a, "linalg.matrix_power")
    n = read_int(n)  # a traced integer (a jitted function's int argument) is read, and guarded
    if not isinstance(n, (int, _np.integer)) or isinstance(n, bool):
        got = f"a traced value of {describe(n)}" if is_traced(n) else repr(n)
        raise TypeError(f"linalg.matrix_power: n must be an integer, got {got}")
    n = int(n)
    if n == 0:
        return _np.broadcast_to(_const(_np.eye(shape(a)[-1]), a), shape(a)).copy()
    if n < 0:
        a, n = inv(a), -n
    if n == 3:  # NumPy's own order of products for n = 3 (the loop gives a @ (a @ a))
        return _matmul(_matmul(a, a), a)
    result, base = None, a
    while True:
        if n & 1:
            result = base if result is None else _matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = _matmul(base, base)


@mirror("function")
def multi_dot(arrays: Sequence[ArrayLike], *, out: Any = None) -> Array:
    """NumPy's `linalg.multi_dot`: a chain of matmuls in the cheapest order (the same
    dynamic programme as NumPy); the first and last arrays may be 1-D. `out=` is NumPy's on
    plain arrays (written into, and returned), and refused where a value is traced."""
    arrays = list(arrays)
    if out is not None:
        if numpy_applies(*arrays, out):
            return _np.linalg.multi_dot(arrays, out=out)
        raise TypeError(
            "fgrad.numpy.linalg.multi_dot was called on a traced value (or a lazy array) with "
            "the keyword argument out, which it does not take there (fgrad returns values: it "
            "never writes into an array); call multi_dot(arrays) and use the result"
        )
    if len(arrays) < 2:
        raise ValueError("linalg.multi_dot: expecting at least two arrays")
    if len(arrays) == 2 and not all(len(shape(x)) in (1, 2) for x in arrays):
        return _products.dot(*arrays)  # NumPy's multi_dot of two arrays is their dot, of any ndim
    first_1d, last_1d = len(shape(arrays[0])) == 1, len(shape(arrays[-1])) == 1
    if first_1d:
        arrays[0] = expand_dims(arrays[0], 0)
    if last_1d:
        arrays[-1] = expand_dims(arrays[-1], -1)
    for i, arr in enumerate(arrays):
        if len(shape(arr)) != 2:
            raise ValueError(
                f"linalg.multi_dot: array {i} has {describe(arr)}; all must be 2-D (the "
                "first and last may be 1-D)"
            )
        if i and shape(arrays[i - 1])[1] != shape(arr)[0]:
            raise ValueError(
                f"linalg.multi_dot: array {i - 1} ({describe(arrays[i - 1])}) and array {i} "
                f"({describe(arr)}) are not aligned: {shape(arrays[i - 1])[1]} != "
                f"{shape(arr)[0]} (shapes as 2-D, a first or last 1-D array taken as a row or "
                "a column); each array's columns must match the next one's rows"
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
    return _matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


# --- NumPy 2's array-API spellings of products and diagonals (over the last axes) -----------------


@mirror("gufunc")
def matmul(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """NumPy's `linalg.matmul`: `matmul` without its ufunc keywords."""
    return _products.matmul(x1, x2)


@mirror("function")
def outer(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """NumPy's `linalg.outer`: the outer product of two 1-D arrays."""
    for arg, x in (("x1", x1), ("x2", x2)):
        if len(shape(x)) != 1:
            raise ValueError(f"linalg.outer: {arg!r} has {describe(x)}; it must be 1-D")
    return _products.outer(x1, x2)


@mirror("function")
def tensordot(
    x1: ArrayLike, x2: ArrayLike, /, *, axes: int | Sequence[int | Sequence[int]] = 2
) -> Array:
    """NumPy's `linalg.tensordot`."""
    return _products.tensordot(x1, x2, axes=axes)


@mirror("function")
def cross(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1) -> Array:
    """NumPy's `linalg.cross`: of 3-vectors along `axis`."""
    for arg, x in (("x1", x1), ("x2", x2)):
        nd = len(shape(x))
        if nd == 0:  # (an AxisError is NumPy's IndexError, and a ValueError)
            raise _np.exceptions.AxisError(
                f"linalg.cross: {arg!r} is a scalar ({describe(x)}); it needs an axis of "
                "length 3 (the 3-vectors)"
            )
        if not -nd <= axis < nd:  # (shape(x)[axis] raised a bare IndexError, as NumPy's)
            raise _np.exceptions.AxisError(
                f"linalg.cross: axis {axis} is out of bounds for {arg!r} ({describe(x)}); "
                f"pass an axis in [{-nd}, {nd})"
            )
        if shape(x)[axis] != 3:
            raise ValueError(
                f"linalg.cross: {arg!r} has {describe(x)}; axis {axis} must have length 3"
            )
    return _products.cross(x1, x2, axis=axis)


@mirror("reduction")
def trace(x: ArrayLike, /, *, offset: int = 0, dtype: DTypeLike | None = None) -> Array:
    """NumPy's `linalg.trace`: over the last two axes."""
    return _arrays.trace(x, offset, -2, -1, dtype=dtype)


@mirror("shape")
def diagonal(x: ArrayLike, /, *, offset: int = 0) -> Array:
    """NumPy's `linalg.diagonal`: of the last two axes."""
    return _arrays.diagonal(x, offset, -2, -1)


@mirror("gufunc")
def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1) -> Array:
    """NumPy's `linalg.vecdot`: sum(conj(x1) * x2) over `axis`, with broadcasting."""
    return _vecdot(x1, x2, axis=axis)


__all__ = exported(globals(), _np.linalg)

if not TYPE_CHECKING:  # a name of numpy.linalg not mirrored yet says so
    __getattr__ = missing_names(__name__, "numpy.linalg", page=__name__)
