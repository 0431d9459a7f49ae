"""Gradient-table rows for fgrad.scipy.linalg (see tests/gradtable.py).

Inputs with structure come from `make=`: well-conditioned matrices (random plus a multiple of
the identity), triangular-dominant matrices, symmetric positive definite matrices with
eigenvalues 0.8 or more apart, small-norm matrices for expm, matrices with eigenvalues in
(1, 3) for sqrtm, and band storage with a dominant main diagonal, so central differences stay
where each function is smooth (no pivot change in lu_factor, no repeated eigenvalue).
"""

import numpy as np
from gradtable import Row, counterpart

import fgrad.numpy as fnp
import fgrad.scipy.linalg as sla

P = "scipy.linalg."
ROWS = []

# Names whose rows cannot run on Dask arrays, and why (tests/test_dask_table.py).
DASK_CANNOT = {
    "scipy.linalg.sqrtm": "SciPy's square root of a real matrix is real or complex depending on "
    "its eigenvalues: a lazy array's dtype must be known before it is computed (fgrad raises "
    "for a real Dask input; a complex one runs)",
    **dict.fromkeys(
        (
            "scipy.linalg.schur[real]-3x3",
            "scipy.linalg.schur[real]-2x3x3",
            "scipy.linalg.schur[sort]-3x3",
        ),
        "the real form's rule reads the Schur form to find its 2x2 blocks (the complex form runs)",
    ),
    "scipy.linalg.eigh[subset_by_value]-4x4": "how many eigenvalues lie in the interval sets "
    "the output's shape, and is read from the values",
}
NONDIFF = []


def general(*shape):
    n = shape[-1]
    return lambda rng: rng.standard_normal(shape) + 2.0 * n**0.5 * np.eye(n)


def _orthogonal(rng, n, batch=()):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def spd(*shape, lo=0.6):
    """Symmetric positive definite, eigenvalues lo, lo + 0.8, ... plus a little noise."""

    def make(rng):
        n, batch = shape[-1], shape[:-2]
        q = _orthogonal(rng, n, batch)
        w = lo + 0.8 * np.arange(n) + rng.uniform(0, 0.2, batch + (n,))
        return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)

    return make


def positive_eigs(*shape):
    """Non-symmetric matrices with real eigenvalues in (1, 3) (for sqrtm)."""

    def make(rng):
        n = shape[-1]
        v = rng.standard_normal(shape) * 0.3 + np.eye(n)
        w = 1.0 + 2.0 * (np.arange(n) + rng.uniform(0, 0.5, shape[:-2] + (n,))) / n
        return (v * w[..., None, :]) @ np.linalg.inv(v)

    return make


def rows_of(*makers):
    return lambda rng: tuple(m(rng) if callable(m) else rng.standard_normal(m) for m in makers)


# --- inv, det, solve ------------------------------------------------------------------------------

for s in [(3, 3), (2, 3, 3)]:
    ROWS.append(Row(P + "inv", sla.inv, make=rows_of(general(*s))))
    ROWS.append(Row(P + "det", sla.det, make=rows_of(general(*s))))
for assume_a, lower in [
    ("pos", False),
    ("sym", True),
    ("upper triangular", False),
    ("lower triangular", False),
    ("diagonal", False),
]:
    ROWS.append(
        Row(
            P + "inv",
            lambda a, k=assume_a, lw=lower: sla.inv(a, assume_a=k, lower=lw),
            make=rows_of(spd(3, 3)),
            variant=f"assume_a={assume_a},lower={lower}",
        )
    )

for a_shape, b_shape, variant in [
    ((3, 3), (3,), "vector"),
    ((3, 3), (3, 2), "matrix"),
    ((2, 3, 3), (2, 3, 2), "batched"),
]:
    ROWS.append(
        Row(P + "solve", sla.solve, make=rows_of(general(*a_shape), b_shape), variant=variant)
    )
for kw in [
    dict(assume_a="pos"),
    dict(assume_a="sym", lower=True),
    dict(transposed=True),
    dict(assume_a="lower triangular"),
    dict(assume_a="diagonal"),
    dict(assume_a="tridiagonal"),
    dict(assume_a="upper triangular", transposed=True),
]:
    ROWS.append(
        Row(
            P + "solve",
            lambda a, b, kw=kw: sla.solve(a, b, **kw),
            make=rows_of(spd(3, 3), (3, 2)),
            variant=",".join(f"{k}={v}" for k, v in kw.items()),
        )
    )

# --- cholesky, cho_factor, cho_solve --------------------------------------------------------------

for s in [(3, 3), (2, 3, 3), (1, 1)]:
    for lower in (False, True):
        ROWS.append(
            Row(
                P + "cholesky",
                lambda a, lw=lower: sla.cholesky(a, lower=lw),
                make=rows_of(spd(*s)),
                variant=f"lower={lower}",
            )
        )
for lower in (False, True):
    ROWS.append(
        Row(
            P + "cho_factor",
            lambda a, lw=lower: sla.cho_factor(a, lower=lw)[0],
            make=rows_of(spd(3, 3)),
            variant=f"lower={lower}",
        )
    )
    for b_shape in [(3,), (3, 2)]:
        ROWS.append(
            Row(
                P + "cho_solve",
                lambda a, b, lw=lower: sla.cho_solve(sla.cho_factor(a, lower=lw), b),
                make=rows_of(spd(3, 3), b_shape),
                variant=f"end-to-end,lower={lower}",
            )
        )
    ROWS.append(
        Row(
            P + "cho_solve",
            lambda a, b, lw=lower: sla.cho_solve(sla.cho_factor(a, lower=lw), b),
            make=rows_of(spd(2, 3, 3), (3,)),
            variant=f"batched-vector,lower={lower}",
        )
    )
    # c itself (its other triangle is ignored, so its gradient there is 0)
    ROWS.append(
        Row(
            P + "cho_solve",
            lambda c, b, lw=lower: sla.cho_solve((c, lw), b),
            make=rows_of(general(3, 3), (3, 2)),
            variant=f"factor,lower={lower}",
        )
    )

# --- solve_triangular -----------------------------------------------------------------------------

for trans in (0, 1, "T", 2):
    for lower in (False, True):
        for unit in (False, True):
            ROWS.append(
                Row(
                    P + "solve_triangular",
                    lambda a, b, t=trans, lw=lower, un=unit: sla.solve_triangular(
                        a, b, trans=t, lower=lw, unit_diagonal=un
                    ),
                    make=rows_of(general(3, 3), (3, 2)),
                    variant=f"trans={trans},lower={lower},unit={unit}",
                )
            )
for a_shape, b_shape, variant in [
    ((3, 3), (3,), "vector"),
    ((2, 3, 3), (2, 3, 2), "batched"),
    ((2, 3, 3), (3, 1), "broadcast-b"),
    ((2, 3, 3), (3,), "batched-vector"),
]:
    ROWS.append(
        Row(
            P + "solve_triangular",
            lambda a, b: sla.solve_triangular(a, b, lower=True),
            make=rows_of(general(*a_shape), b_shape),
            variant=variant,
        )
    )

# --- lu_factor, lu_solve, lu ----------------------------------------------------------------------
# Random matrices with distinct row maxima in column 0 keep partial pivoting's choices fixed
# under central differences.

for s in [(3, 3), (4, 4), (2, 3, 3)]:
    ROWS.append(Row(P + "lu_factor", lambda a: sla.lu_factor(a)[0], make=rows_of(s)))
    ROWS.append(
        Row(
            P + "lu_solve",
            lambda a, b: sla.lu_solve(sla.lu_factor(a), b),
            make=rows_of(s, s[:-1] + (2,)),
            variant="end-to-end",
        )
    )
for trans in (1, 2):
    ROWS.append(
        Row(
            P + "lu_solve",
            lambda a, b, t=trans: sla.lu_solve(sla.lu_factor(a), b, t),
            make=rows_of((4, 4), (4,)),
            variant=f"trans={trans}",
        )
    )
ROWS.append(Row(P + "lu", sla.lu, make=rows_of((4, 4))))
ROWS.append(
    Row(P + "lu", lambda a: sla.lu(a, permute_l=True), make=rows_of((3, 3)), variant="permute_l")
)
ROWS.append(
    Row(
        P + "lu",
        lambda a: sla.lu(a, p_indices=True)[1:],
        make=rows_of((2, 3, 3)),
        variant="p_indices-batched",
    )
)

# --- solve_banded ---------------------------------------------------------------------------------


def banded(l, u, n):
    def make(rng):
        ab = rng.standard_normal((l + u + 1, n)) * 0.5
        ab[u] += 3.0
        return ab

    return make


for (l, u), b_shape in [
    ((1, 1), (5,)),
    ((1, 2), (5, 2)),
    ((0, 1), (4,)),
    ((2, 0), (4, 3)),
    ((0, 0), (3,)),
]:
    ROWS.append(
        Row(
            P + "solve_banded",
            lambda ab, b, l=l, u=u: sla.solve_banded((l, u), ab, b),
            make=rows_of(banded(l, u, b_shape[0]), b_shape),
            variant=f"l={l},u={u}",
        )
    )

# --- solve_sylvester, sqrtm, expm -----------------------------------------------------------------

ROWS.append(
    Row(
        P + "solve_sylvester",
        sla.solve_sylvester,
        make=rows_of(general(3, 3), general(2, 2), (3, 2)),
    )
)
ROWS.append(
    Row(
        P + "solve_sylvester",
        sla.solve_sylvester,
        variant="batched",
        make=rows_of(general(2, 2, 2), general(2, 3, 3), (2, 2, 3)),
    )
)

for s in [(3, 3), (2, 2, 2), (1, 1)]:
    ROWS.append(Row(P + "sqrtm", sla.sqrtm, make=rows_of(positive_eigs(*s))))
ROWS.append(Row(P + "sqrtm", sla.sqrtm, make=rows_of(spd(3, 3)), variant="spd"))

for s in [(3, 3), (2, 2, 2), (1, 1)]:
    ROWS.append(Row(P + "expm", sla.expm, make=lambda rng, s=s: (0.5 * rng.standard_normal(s),)))
ROWS.append(
    Row(
        P + "expm",
        sla.expm,
        variant="larger-norm",
        make=lambda rng: (1.5 * rng.standard_normal((3, 3)),),
    )
)

# --- eigh -----------------------------------------------------------------------------------------


def symmetric(n, batch=()):
    """Symmetric, eigenvalues -1.2, -0.4, 0.4, ... apart by 0.8."""

    def make(rng):
        q = _orthogonal(rng, n, batch)
        w = 0.8 * np.arange(n) - 0.4 * (n - 1) + rng.uniform(0, 0.1, batch + (n,))
        return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)

    return make


for shape_ in [(3,), (4,)]:
    ROWS.append(Row(P + "eigh", sla.eigh, make=rows_of(symmetric(*shape_))))
ROWS.append(Row(P + "eigh", sla.eigh, make=rows_of(symmetric(3, (2,))), variant="batched"))
ROWS.append(
    Row(
        P + "eigh",
        lambda a: sla.eigh(a, eigvals_only=True),
        make=rows_of(symmetric(3)),
        variant="eigvals_only",
    )
)
ROWS.append(
    Row(
        P + "eigh",
        lambda a: sla.eigh(a, subset_by_index=(1, 2)),
        make=rows_of(symmetric(4)),
        variant="subset_by_index",
    )
)
ROWS.append(
    Row(
        P + "eigh",
        lambda a: sla.eigh(a, subset_by_value=(0.0, 5.0)),
        make=rows_of(symmetric(4)),
        variant="subset_by_value",
    )
)
for type_ in (1, 2, 3):
    ROWS.append(
        Row(
            P + "eigh",
            lambda a, b, t=type_: sla.eigh(a, b, type=t),
            make=rows_of(symmetric(3), spd(3, 3)),
            variant=f"generalized-type={type_}",
        )
    )
ROWS.append(
    Row(
        P + "eigh",
        lambda a, b: sla.eigh(a, b, eigvals_only=True),
        make=rows_of(symmetric(3, (2,)), spd(2, 3, 3)),
        variant="generalized-batched",
    )
)

# --- non-symmetric input: SciPy reads one triangle ------------------------------------------------
# cholesky, cho_factor and eigh read the `lower` (else upper) triangle of a (and b) only; these
# inputs have noise in the other triangle, so the value must be SciPy's and the derivative
# that of SciPy's function (0 in the other triangle).


def unread(make, lower):
    def noisy(rng):
        a = make(rng)
        noise = rng.uniform(-1.0, 1.0, a.shape)
        return a + (np.triu(noise, 1) if lower else np.tril(noise, -1))

    return noisy


for lower in (False, True):
    ROWS.append(
        Row(
            P + "cholesky",
            lambda a, lw=lower: sla.cholesky(a, lower=lw),
            make=rows_of(unread(spd(2, 3, 3), lower)),
            variant=f"lower={lower},unread",
        )
    )
    ROWS.append(
        Row(
            P + "cho_factor",
            lambda a, lw=lower: sla.cho_factor(a, lower=lw)[0],
            make=rows_of(unread(spd(3, 3), lower)),
            variant=f"lower={lower},unread",
            reference=lambda a, lw=lower: (np.tril if lw else np.triu)(
                counterpart(P + "cho_factor")(a, lower=lw)[0]
            ),
        )
    )
    ROWS.append(
        Row(
            P + "cho_solve",
            lambda a, b, lw=lower: sla.cho_solve(sla.cho_factor(a, lower=lw), b),
            make=rows_of(unread(spd(3, 3), lower), (3, 2)),
            variant=f"end-to-end,lower={lower},unread",
        )
    )
    ROWS.append(
        Row(
            P + "eigh",
            lambda a, lw=lower: sla.eigh(a, lower=lw),
            make=rows_of(unread(symmetric(3), lower)),
            variant=f"lower={lower},unread",
        )
    )
    ROWS.append(
        Row(
            P + "eigh",
            lambda a, b, lw=lower: sla.eigh(a, b, lower=lw),
            make=rows_of(unread(symmetric(3), lower), unread(spd(3, 3), lower)),
            variant=f"generalized,lower={lower},unread",
        )
    )
    ROWS.append(
        Row(
            P + "eigh",
            lambda a, b, lw=lower: sla.eigh(a, b, lower=lw, type=3),
            make=rows_of(unread(symmetric(3), lower), unread(spd(3, 3), lower)),
            variant=f"generalized-type=3,lower={lower},unread",
        )
    )

# --- complex input --------------------------------------------------------------------------------
# A row's inputs are real; `cplx(f)` takes two (the real and imaginary parts) and applies f to
# the complex matrix x + 1j y, so the complex rules are checked through the real ones.


def cplx(f):
    return lambda x, y, *rest: f(x + 1j * y, *rest)


def cplx_general(*shape):
    def make(rng):
        n = shape[-1]
        return (rng.standard_normal(shape) + 2.0 * n**0.5 * np.eye(n), rng.standard_normal(shape))

    return make


def parts(z):
    """Real outputs of a complex result (the float32 run checks their dtype)."""
    return fnp.real(z), fnp.imag(z)


def projector(q):
    """q q^H: independent of the phases of q's columns."""
    return parts(fnp.matmul(q, fnp.conj(fnp.swapaxes(q, -1, -2))))


ROWS.append(
    Row(
        P + "solve_triangular",
        cplx(lambda a, b: parts(sla.solve_triangular(a, b, trans=2, lower=True))),
        make=lambda rng: cplx_general(3, 3)(rng) + (rng.standard_normal((3, 2)),),
        variant="complex,trans=C",
    )
)
ROWS.append(
    Row(
        P + "lu_solve",
        cplx(lambda a, b: parts(sla.lu_solve(sla.lu_factor(a), b, 2))),
        make=lambda rng: cplx_general(3, 3)(rng) + (rng.standard_normal(3),),
        variant="complex,trans=2",
    )
)
ROWS.append(
    Row(
        P + "sqrtm",
        cplx(lambda a: parts(sla.sqrtm(a))),
        make=lambda rng: (positive_eigs(3, 3)(rng), 0.2 * rng.standard_normal((3, 3))),
        variant="complex",
    )
)
ROWS.append(
    Row(
        P + "expm",
        cplx(lambda a: parts(sla.expm(a))),
        make=lambda rng: (0.5 * rng.standard_normal((3, 3)), 0.5 * rng.standard_normal((3, 3))),
        variant="complex",
    )
)
ROWS.append(
    Row(
        P + "solve_sylvester",
        cplx(lambda a, b, q: parts(sla.solve_sylvester(a, b, q))),
        make=lambda rng: (
            cplx_general(3, 3)(rng) + (general(2, 2)(rng), rng.standard_normal((3, 2)))
        ),
        variant="complex-a",
    )
)


def hermitian_pd(rng):
    """x, y with x + 1j y Hermitian positive definite, eigenvalues well apart."""
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    q, _ = np.linalg.qr(z)
    h = (q * np.array([1.0, 2.0, 3.2])) @ q.conj().T
    return h.real, h.imag


ROWS.append(
    Row(
        P + "cholesky",
        cplx(lambda a: parts(sla.cholesky(a))),
        make=hermitian_pd,
        variant="complex,upper",
    )
)
ROWS.append(
    Row(
        P + "cholesky",
        cplx(lambda a: parts(sla.cholesky(a, lower=True))),
        make=hermitian_pd,
        variant="complex,lower",
    )
)
ROWS.append(
    Row(
        P + "cho_factor",
        cplx(lambda a: parts(sla.cho_factor(a)[0])),
        make=hermitian_pd,
        variant="complex",
        reference=lambda x, y: (lambda c: (c.real, c.imag))(
            np.triu(counterpart(P + "cho_factor")(x + 1j * y)[0])
        ),
    )
)
ROWS.append(
    Row(
        P + "cho_solve",
        cplx(lambda a, b: parts(sla.cho_solve(sla.cho_factor(a), b))),
        make=lambda rng: hermitian_pd(rng) + (rng.standard_normal(3),),
        variant="complex",
    )
)
ROWS.append(
    Row(
        P + "eigh",
        cplx(lambda a: sla.eigh(a, eigvals_only=True)),
        make=hermitian_pd,
        variant="complex,eigvals_only",
    )
)
ROWS.append(
    Row(
        P + "eigh",
        cplx(lambda a: projector(sla.eigh(a)[1][..., :1])),
        make=hermitian_pd,
        variant="complex,vectors",
    )
)
ROWS.append(
    Row(
        P + "eigh",
        cplx(
            lambda a, b: sla.eigh(a, b @ b.T + fnp.eye(3, dtype=b.dtype) * 3.0, eigvals_only=True)
        ),
        make=lambda rng: hermitian_pd(rng) + (0.3 * rng.standard_normal((3, 3)),),
        variant="complex,generalized",
    )
)

# --- lu, lu_factor of every shape, complex --------------------------------------------------------

for s in [(4, 3), (3, 4), (2, 4, 3), (2, 3, 4)]:
    ROWS.append(Row(P + "lu", lambda a: sla.lu(a)[1:], make=rows_of(s), variant="rectangular"))
    ROWS.append(
        Row(P + "lu_factor", lambda a: sla.lu_factor(a)[0], make=rows_of(s), variant="rectangular")
    )
ROWS.append(
    Row(
        P + "lu",
        cplx(lambda a: parts(sla.lu(a)[1]) + parts(sla.lu(a)[2])),
        make=lambda rng: (rng.standard_normal((3, 3)), rng.standard_normal((3, 3))),
        variant="complex",
    )
)
ROWS.append(
    Row(
        P + "lu_factor",
        cplx(lambda a: parts(sla.lu_factor(a)[0])),
        make=lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal((4, 3))),
        variant="complex",
    )
)

# --- sqrtm of a matrix with a negative eigenvalue: a complex root ---------------------------------


def negative_eig(rng):
    v = np.eye(3) + 0.3 * rng.standard_normal((3, 3))
    return ((v * np.array([-1.5, 1.0, 2.0])) @ np.linalg.inv(v),)


ROWS.append(
    Row(
        P + "sqrtm", lambda a: parts(sla.sqrtm(a)), make=negative_eig, variant="negative-eigenvalue"
    )
)

# --- qr -------------------------------------------------------------------------------------------
# Real QR and SVD factors are smooth where they are unique up to sign (LAPACK's signs do not
# jump under a small step); the complement columns of full factors and complex phases are
# not unique: those rows check quantities that do not depend on them.

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3)]:
    ROWS.append(
        Row(P + "qr", lambda a: sla.qr(a, mode="economic"), make=rows_of(s), variant="economic")
    )
ROWS.append(Row(P + "qr", sla.qr, make=rows_of((3, 3))))
ROWS.append(Row(P + "qr", lambda a: sla.qr(a, mode="r")[0], make=rows_of((4, 3)), variant="r"))
ROWS.append(
    Row(
        P + "qr",
        lambda a: sla.qr(a, mode="economic", pivoting=True)[:2],
        make=rows_of((4, 3)),
        variant="pivoting",
    )
)
ROWS.append(
    Row(
        P + "qr",
        lambda a: projector(sla.qr(a)[0][..., 2:]) + (sla.qr(a)[1],),
        make=rows_of((5, 2)),
        variant="full-complement",
    )
)
ROWS.append(
    Row(
        P + "qr",
        cplx(lambda a: parts(sla.qr(a, mode="economic")[0]) + parts(sla.qr(a, mode="economic")[1])),
        make=lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal((4, 3))),
        variant="complex",
    )
)
ROWS.append(
    Row(
        P + "qr",
        cplx(lambda a: parts(sla.qr(a)[1]) + projector(sla.qr(a)[0][..., 2:])),
        make=lambda rng: (rng.standard_normal((4, 2)), rng.standard_normal((4, 2))),
        variant="complex,full",
    )
)

# --- svd ------------------------------------------------------------------------------------------

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3)]:
    ROWS.append(
        Row(
            P + "svd", lambda a: sla.svd(a, full_matrices=False), make=rows_of(s), variant="reduced"
        )
    )
    ROWS.append(
        Row(P + "svd", lambda a: sla.svd(a, compute_uv=False), make=rows_of(s), variant="values")
    )
ROWS.append(Row(P + "svd", sla.svd, make=rows_of((3, 3))))
ROWS.append(
    Row(
        P + "svd",
        lambda a: (
            projector(sla.svd(a)[0][..., 2:])
            + projector(fnp.swapaxes(sla.svd(a)[2][..., 2:, :], -1, -2))
        ),
        make=rows_of((4, 2)),
        variant="full-complement",
    )
)
ROWS.append(
    Row(
        P + "svd",
        lambda a: projector(fnp.swapaxes(sla.svd(a)[2][..., 2:, :], -1, -2)),
        make=rows_of((2, 4)),
        variant="full-complement-wide",
    )
)


def svd_invariants(a):
    u, s, vh = sla.svd(a, full_matrices=False)
    return (s, fnp.abs(u), fnp.abs(vh)) + parts(fnp.matmul(u[..., :, :1], vh[..., :1, :]))


for s in [(3, 3), (4, 3), (3, 4)]:
    ROWS.append(
        Row(
            P + "svd",
            cplx(svd_invariants),
            make=lambda rng, s=s: (rng.standard_normal(s), rng.standard_normal(s)),
            variant="complex",
        )
    )

# --- schur ----------------------------------------------------------------------------------------


def real_eigs(*shape):
    """Non-symmetric matrices with real eigenvalues 0.8 or more apart."""

    def make(rng):
        n = shape[-1]
        v = np.eye(n) + 0.3 * rng.standard_normal(shape)
        w = 0.8 * np.arange(n) - 1.0 + rng.uniform(0, 0.1, shape[:-2] + (n,))
        return ((v * w[..., None, :]) @ np.linalg.inv(v),)

    return make


def schur_invariants(a):
    t, z = sla.schur(a, output="complex")
    return (
        parts(fnp.diagonal(t, axis1=-2, axis2=-1))
        + (fnp.abs(t), fnp.abs(z))
        + projector(z[..., :, :2])
    )


for s in [(3, 3), (2, 3, 3)]:
    ROWS.append(Row(P + "schur", sla.schur, make=real_eigs(*s), variant="real"))
ROWS.append(Row(P + "schur", schur_invariants, make=rows_of((3, 3)), variant="complex"))
ROWS.append(
    Row(
        P + "schur",
        cplx(schur_invariants),
        make=lambda rng: (rng.standard_normal((4, 4)), rng.standard_normal((4, 4))),
        variant="complex-input",
    )
)
ROWS.append(
    Row(P + "schur", lambda a: sla.schur(a, sort="lhp")[:2], make=real_eigs(3, 3), variant="sort")
)

# --- block_diag, toeplitz -------------------------------------------------------------------------

ROWS.append(Row(P + "block_diag", sla.block_diag, ((2, 2), (3,), ())))
ROWS.append(Row(P + "block_diag", sla.block_diag, ((2, 1, 2), (2, 3)), variant="batched"))
ROWS.append(
    Row(
        P + "block_diag",
        lambda x: sla.block_diag(x, np.ones((1, 1))),
        ((2,),),
        variant="constant-block",
        promotes=True,
    )
)
ROWS.append(Row(P + "toeplitz", sla.toeplitz, ((3,), (4,))))
ROWS.append(Row(P + "toeplitz", sla.toeplitz, ((3,),), variant="r=None"))
ROWS.append(Row(P + "toeplitz", sla.toeplitz, ((2, 3), (4,)), variant="batched"))
ROWS.append(
    Row(
        P + "toeplitz",
        cplx(lambda c: parts(sla.toeplitz(c))),
        ((3,), (3,)),
        variant="complex,r=None",
    )
)
