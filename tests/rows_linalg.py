"""Gradient-table rows for fgrad.numpy.linalg (see tests/gradtable.py).

Inputs with structure come from `make=`: well-conditioned square matrices (random plus a
multiple of the identity), symmetric matrices with eigenvalues at least 0.5 apart, symmetric
positive definite matrices, and matrices with singular values at least 0.4 apart, so that
central differences stay inside the region where each function is smooth (no repeated
eigenvalue or singular value, no change of rank, no sign flip of a factor).
"""

import numpy as np
from gradtable import Nondiff, Row

import fgrad.numpy as fnp

la = fnp.linalg
ROWS = []

# Names whose rows cannot run on Dask arrays, and why (tests/test_dask_table.py).
DASK_CANNOT = {
    "linalg.eig": "NumPy's eig of a real matrix is real when every eigenvalue is real and "
    "complex otherwise: a lazy array's dtype must be known before it is computed (fgrad raises "
    "for a real Dask input; a complex one runs)",
    "linalg.eigvals": "as eig: the dtype of NumPy's eigvals of a real matrix depends on the "
    "eigenvalues, which a lazy array does not know before it is computed",
    "linalg.lstsq": "NumPy's residuals have one entry per column of b only when a tall a has "
    "full rank (none otherwise): their shape depends on the computed rank (fgrad raises for a "
    "tall Dask a; a wide one runs)",
}


def general(*shape):
    """Well-conditioned square matrices of `shape` (..., n, n)."""

    def make(rng):
        n = shape[-1]
        return (rng.standard_normal(shape) + 2.0 * n**0.5 * np.eye(n),)

    return make


def _orthogonal(rng, n, batch=()):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def symmetric(*shape, positive=False):
    """Symmetric matrices with eigenvalues 0.6 or more apart and 0.3 or more from 0 (all
    positive if asked)."""

    def make(rng):
        n, batch = shape[-1], shape[:-2]
        q = _orthogonal(rng, n, batch)
        w = np.arange(n) * 0.8 + (0.6 if positive else 0.3 - 0.8 * (n - 1) / 2)
        w = w + rng.uniform(0, 0.2, batch + (n,))
        return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2),)

    return make


def spread(*shape):
    """Matrices (..., m, n) with singular values 0.5, 0.9, 1.3, ... plus a little noise."""

    def make(rng):
        m, n, batch = shape[-2], shape[-1], shape[:-2]
        k = min(m, n)
        u = _orthogonal(rng, m, batch)[..., :k]
        v = _orthogonal(rng, n, batch)[..., :k]
        s = 0.5 + 0.4 * np.arange(k)[::-1] + rng.uniform(0, 0.1, batch + (k,))
        return ((u * s[..., None, :]) @ np.swapaxes(v, -1, -2),)

    return make


def plus(make, *extra):
    """`make`'s matrices followed by plain random arrays of the `extra` shapes."""
    return lambda rng: make(rng) + tuple(rng.standard_normal(s) for s in extra)


SQUARE = [(3, 3), (2, 3, 3)]

# --- inv, solve, det, slogdet, tensorinv, tensorsolve, matrix_power -------------------------------

for s in SQUARE + [(1, 1)]:
    ROWS.append(Row("linalg.inv", la.inv, make=general(*s)))
    ROWS.append(Row("linalg.det", la.det, make=general(*s)))
    ROWS.append(Row("linalg.slogdet", lambda a: la.slogdet(a)[1], make=general(*s)))
ROWS.append(Row("linalg.det", la.det, make=symmetric(3, 3), variant="negative-eigenvalues"))
ROWS.append(
    Row("linalg.slogdet", lambda a: la.slogdet(a)[1], make=symmetric(3, 3), variant="negative-det")
)
ROWS.append(Row("linalg.slogdet", la.slogdet, make=general(2, 3, 3), variant="tuple"))

for a_shape, b_shape, variant in [
    ((3, 3), (3,), "vector"),
    ((3, 3), (3, 2), "matrix"),
    ((2, 3, 3), (2, 3, 2), "batched"),
    ((2, 3, 3), (3, 4), "broadcast-b"),
    ((3, 3), (2, 3, 1), "broadcast-a"),
    ((2, 3, 3), (3,), "batched-vector"),
]:
    ROWS.append(
        Row("linalg.solve", la.solve, make=plus(general(*a_shape), b_shape), variant=variant)
    )

ROWS.append(
    Row(
        "linalg.tensorinv",
        lambda a: la.tensorinv(a, ind=1),
        make=lambda rng: (general(6, 6)(rng)[0].reshape(6, 2, 3),),
    )
)
ROWS.append(
    Row(
        "linalg.tensorinv",
        la.tensorinv,
        variant="ind=2",
        make=lambda rng: (general(6, 6)(rng)[0].reshape(2, 3, 6),),
    )
)
ROWS.append(
    Row(
        "linalg.tensorsolve",
        la.tensorsolve,
        make=lambda rng: (general(6, 6)(rng)[0].reshape(2, 3, 2, 3), rng.standard_normal((2, 3))),
    )
)
ROWS.append(
    Row(
        "linalg.tensorsolve",
        lambda a, b: la.tensorsolve(a, b, axes=(0,)),
        variant="axes",
        make=lambda rng: (general(6, 6)(rng)[0].T.reshape(6, 2, 3), rng.standard_normal((2, 3))),
    )
)

for n in [0, 1, 2, 3, 5, -1, -2]:
    ROWS.append(
        Row(
            "linalg.matrix_power",
            lambda a, n=n: la.matrix_power(a, n),
            make=general(3, 3),
            variant=f"n={n}",
            tol=1e-5 if n > -2 else 2e-5,
        )
    )
ROWS.append(
    Row(
        "linalg.matrix_power",
        lambda a: la.matrix_power(a, 3),
        make=general(2, 3, 3),
        variant="batched",
    )
)

# --- pinv, lstsq ----------------------------------------------------------------------------------

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3)]:
    ROWS.append(Row("linalg.pinv", la.pinv, make=spread(*s)))
ROWS.append(
    Row(
        "linalg.pinv",
        lambda b, c: la.pinv(b @ c),
        variant="rank-2",
        make=lambda rng: (rng.standard_normal((4, 2)), rng.standard_normal((2, 3))),
    )
)
ROWS.append(
    Row(
        "linalg.pinv",
        lambda a: la.pinv(a, hermitian=True),
        variant="hermitian",
        make=symmetric(3, 3),
    )
)
ROWS.append(
    Row("linalg.pinv", lambda a: la.pinv(a, rtol=None), variant="rtol=None", make=spread(4, 3))
)

ROWS.append(
    Row(
        "linalg.lstsq",
        lambda a, b: la.lstsq(a, b)[0],
        make=plus(spread(4, 3), (4,)),
        variant="x-tall",
    )
)
ROWS.append(
    Row(
        "linalg.lstsq",
        lambda a, b: la.lstsq(a, b)[0],
        make=plus(spread(3, 4), (3, 2)),
        variant="x-wide",
    )
)
ROWS.append(
    Row(
        "linalg.lstsq",
        lambda a, b: la.lstsq(a, b, rcond=None)[:2] + la.lstsq(a, b)[3:],
        make=plus(spread(5, 3), (5, 2)),
        variant="x-residuals-s",
    )
)
ROWS.append(
    Row(
        "linalg.lstsq",
        lambda a, b: la.lstsq(a, b)[1],
        make=plus(spread(4, 2), (4,)),
        variant="residuals-1d",
    )
)

# --- cholesky, qr ---------------------------------------------------------------------------------

for s in [(3, 3), (2, 3, 3), (1, 1)]:
    ROWS.append(Row("linalg.cholesky", la.cholesky, make=symmetric(*s, positive=True)))
ROWS.append(
    Row(
        "linalg.cholesky",
        lambda a: la.cholesky(a, upper=True),
        variant="upper",
        make=symmetric(3, 3, positive=True),
    )
)
ROWS.append(
    Row(
        "linalg.cholesky",
        la.cholesky,
        variant="non-symmetric-input",
        make=lambda rng: (
            symmetric(3, 3, positive=True)(rng)[0] + np.triu(rng.uniform(0, 0.2, (3, 3)), 1),
        ),
    )
)

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3), (2, 2, 4)]:
    ROWS.append(Row("linalg.qr", la.qr, make=spread(*s)))
ROWS.append(Row("linalg.qr", lambda a: la.qr(a, mode="r"), make=spread(4, 3), variant="r"))
ROWS.append(
    Row(
        "linalg.qr", lambda a: la.qr(a, mode="complete"), make=spread(3, 4), variant="complete-wide"
    )
)


def _projector(q):
    """q q^T: the projector onto q's columns, whichever orthonormal basis of them q is."""
    return q @ fnp.swapaxes(q, -1, -2)


def _complete_qr_invariants(a):
    """R, Q's first n columns and the projector onto the rest (any basis of the complement:
    only the projector is a function of a)."""
    n = a.shape[-1]
    q, r = la.qr(a, mode="complete")
    return r, q[..., :, :n], _projector(q[..., :, n:])


for s in [(4, 2), (2, 5, 3)]:
    ROWS.append(Row("linalg.qr", _complete_qr_invariants, make=spread(*s), variant="complete-tall"))

# --- eigh, eigvalsh -------------------------------------------------------------------------------

for s in [(3, 3), (2, 3, 3), (4, 4)]:
    ROWS.append(Row("linalg.eigh", la.eigh, make=symmetric(*s)))
    ROWS.append(Row("linalg.eigvalsh", la.eigvalsh, make=symmetric(*s)))
ROWS.append(
    Row("linalg.eigh", lambda a: la.eigh(a, UPLO="U"), make=symmetric(3, 3), variant="UPLO=U")
)
ROWS.append(Row("linalg.eigh", lambda a: la.eigh(a)[1], make=symmetric(3, 3), variant="vectors"))
ROWS.append(
    Row(
        "linalg.eigh",
        la.eigh,
        variant="non-symmetric-input",
        make=lambda rng: (symmetric(3, 3)(rng)[0] + np.triu(rng.uniform(0, 0.2, (3, 3)), 1),),
    )
)

# --- non-symmetric input: NumPy reads one triangle ------------------------------------------------
# eigh, eigvalsh and cholesky (and svd, pinv with hermitian=True) read the UPLO triangle of
# their input only (cholesky: the lower one, the upper one with upper=True). These inputs have
# up to +-1 added to the other triangle: the value must be NumPy's (tests/test_values.py) and
# the derivative that of NumPy's function (0 in the other triangle).


def unread(make, lower=True):
    """`make`'s matrices with noise in the triangle NumPy does not read (the strict upper one
    for lower=True)."""

    def noisy(rng):
        (a,) = make(rng)
        noise = rng.uniform(-1.0, 1.0, a.shape)
        return (a + (np.triu(noise, 1) if lower else np.tril(noise, -1)),)

    return noisy


for uplo in ("L", "U"):
    lower = uplo == "L"
    ROWS.append(
        Row(
            "linalg.eigh",
            lambda a, u=uplo: la.eigh(a, UPLO=u),
            make=unread(symmetric(2, 3, 3), lower),
            variant=f"UPLO={uplo},unread",
        )
    )
    ROWS.append(
        Row(
            "linalg.eigvalsh",
            lambda a, u=uplo: la.eigvalsh(a, UPLO=u),
            make=unread(symmetric(3, 3), lower),
            variant=f"UPLO={uplo},unread",
        )
    )
    ROWS.append(
        Row(
            "linalg.cholesky",
            lambda a, up=not lower: la.cholesky(a, upper=up),
            make=unread(symmetric(2, 3, 3, positive=True), lower),
            variant=f"upper={not lower},unread",
        )
    )
ROWS.append(
    Row(
        "linalg.pinv",
        lambda a: la.pinv(a, hermitian=True),
        variant="hermitian,unread",
        make=unread(symmetric(3, 3)),
    )
)
ROWS.append(
    Row(
        "linalg.svd",
        lambda a: la.svd(a, hermitian=True),
        make=unread(symmetric(3, 3)),
        variant="hermitian,unread",
    )
)
ROWS.append(
    Row(
        "linalg.svd",
        lambda a: la.svd(a, compute_uv=False, hermitian=True),
        make=unread(symmetric(3, 3)),
        variant="hermitian-compute_uv=False,unread",
    )
)

# --- eig, eigvals (real input) --------------------------------------------------------------------

COMPLEX_OUT = (
    "the output is complex64, not float32 (the real-and-imaginary-parts rows cover float32)"
)


def diagonalizable(*shape, pairs=True):
    """Real S B S^-1 with S = I + small noise (each eigenvector has one clearly largest entry,
    which LAPACK makes real) and B block diagonal: a 2x2 rotation-scaling block per complex
    pair a +- ib (if `pairs`) and real eigenvalues, all 0.6 or more apart."""

    def make(rng):
        n, batch = shape[-1], shape[:-2]
        b = np.zeros(batch + (n, n))
        k = 0
        if pairs:
            b[..., 0, 0] = b[..., 1, 1] = 0.4 + rng.uniform(0, 0.1, batch)
            b[..., 0, 1] = -(1.0 + rng.uniform(0, 0.1, batch))
            b[..., 1, 0] = -b[..., 0, 1]
            k = 2
        for i in range(k, n):
            b[..., i, i] = (i - k) * 0.8 - 1.0 + rng.uniform(0, 0.1, batch)
        s = np.eye(n) + 0.25 * rng.standard_normal(batch + (n, n))
        return (s @ b @ np.linalg.inv(s),)

    return make


def _parts(result):
    """A complex result as real arrays: its real and imaginary parts."""
    return tuple(p for z in result for p in (fnp.real(z), fnp.imag(z)))


def _signed(result):
    """eig's (w, v) with each eigenvector's sign chosen so that its largest entry is positive:
    for a real matrix LAPACK fixes the eigenvectors only up to a sign each, which can flip
    under a tiny change of the matrix (fgrad's derivative is the one of the continuous
    choice)."""
    w, v = result
    k = fnp.argmax(fnp.abs(v), axis=-2)[..., None, :]
    return w, v * fnp.sign(fnp.real(fnp.take_along_axis(v, k, axis=-2)))


for s in SQUARE:
    ROWS.append(
        Row(
            "linalg.eig",
            lambda a: _parts(_signed(la.eig(a))),
            make=diagonalizable(*s),
            variant="complex-pairs",
        )
    )
    ROWS.append(
        Row(
            "linalg.eigvals",
            lambda a: _parts([la.eigvals(a)]),
            make=diagonalizable(*s),
            variant="complex-pairs",
        )
    )
    ROWS.append(
        Row(
            "linalg.eig",
            lambda a: _signed(la.eig(a)),
            make=diagonalizable(*s, pairs=False),
            variant="real-eigenvalues",
        )
    )
    ROWS.append(
        Row(
            "linalg.eigvals",
            la.eigvals,
            make=diagonalizable(*s, pairs=False),
            variant="real-eigenvalues",
        )
    )
ROWS.append(
    Row(
        "linalg.eig",
        lambda a: _signed(la.eig(a)),
        make=diagonalizable(4, 4),
        variant="complex-output",
        float32=COMPLEX_OUT,
    )
)
ROWS.append(
    Row(
        "linalg.eig",
        lambda a: (lambda w, v: fnp.real((v * fnp.sin(w)[..., None, :]) @ la.inv(v)))(*la.eig(a)),
        make=diagonalizable(3, 3),
        variant="sin(a)",
    )
)  # V diag(sin w) V^-1 does not depend on the eigenvectors' scaling
ROWS.append(
    Row(
        "linalg.eigvals",
        la.eigvals,
        make=diagonalizable(4, 4),
        variant="complex-output",
        float32=COMPLEX_OUT,
    )
)

# --- svd ------------------------------------------------------------------------------------------

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3), (2, 3, 4)]:
    ROWS.append(Row("linalg.svd", lambda a: la.svd(a, full_matrices=False), make=spread(*s)))
    ROWS.append(
        Row(
            "linalg.svd",
            lambda a: la.svd(a, compute_uv=False),
            make=spread(*s),
            variant="compute_uv=False",
        )
    )
ROWS.append(Row("linalg.svd", la.svd, make=spread(3, 3), variant="full-square"))


def _full_svd_invariants(a):
    """s, U's and Vh's first k = min(m, n) vectors and the projector onto the extra ones of a
    full U (m > n) or V (m < n): any basis of the complement, only the projector is a
    function of a."""
    m, n = a.shape[-2:]
    k = min(m, n)
    u, s, vh = la.svd(a)
    extra = u[..., :, k:] if m > n else fnp.swapaxes(vh[..., k:, :], -1, -2)
    return s, u[..., :, :k], vh[..., :k, :], _projector(extra)


for s in [(4, 2), (2, 4), (2, 3, 5)]:
    ROWS.append(Row("linalg.svd", _full_svd_invariants, make=spread(*s), variant="full-non-square"))
ROWS.append(Row("linalg.svdvals", la.svdvals, make=spread(4, 3)))
for s in [(3, 3), (2, 3, 3)]:
    ROWS.append(
        Row(
            "linalg.svd",
            lambda a: la.svd(a, hermitian=True),
            make=symmetric(*s),
            variant="hermitian",
        )
    )
    ROWS.append(
        Row(
            "linalg.svd",
            lambda a: la.svd(a, compute_uv=False, hermitian=True),
            make=symmetric(*s),
            variant="hermitian-compute_uv=False",
        )
    )

# --- norms ----------------------------------------------------------------------------------------

for ord_ in [None, 2, 1, np.inf, -np.inf, 3, 0.5, -1.5]:
    for shapes, axis in [(((3,),), None), (((3, 2),), 0), (((2, 3, 2),), -1)]:
        ROWS.append(
            Row(
                "linalg.norm",
                lambda x, o=ord_, ax=axis: la.norm(x, o, ax),
                shapes,
                ("nonzero",),
                variant=f"ord={ord_},axis={axis}",
            )
        )
ROWS.append(
    Row("linalg.norm", lambda x: la.norm(x, 2, 1, keepdims=True), ((3, 2),), variant="keepdims")
)
ROWS.append(Row("linalg.norm", la.norm, ((3, 2),), variant="all"))
ROWS.append(
    Row("linalg.norm", lambda x: la.norm(x, keepdims=True), ((2, 3, 2),), variant="all-keepdims")
)
ROWS.append(
    Row(
        "linalg.norm", lambda x: la.norm(x, 0, 0), ((3, 2),), ("nonzero",), variant="ord=0", order=1
    )
)
for ord_ in [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]:
    ROWS.append(
        Row(
            "linalg.norm",
            lambda a, o=ord_: la.norm(a, o),
            make=spread(4, 3),
            variant=f"matrix-ord={ord_}",
        )
    )
    ROWS.append(
        Row(
            "linalg.norm",
            lambda a, o=ord_: la.norm(a, o, axis=(2, 0), keepdims=True),
            make=lambda rng: (np.moveaxis(spread(2, 4, 3)(rng)[0], 0, 1),),
            variant=f"matrix-ord={ord_}-axis=(2,0)-keepdims",
        )
    )

ROWS.append(Row("linalg.vector_norm", la.vector_norm, ((3, 2),)))
ROWS.append(
    Row(
        "linalg.vector_norm",
        lambda x: la.vector_norm(x, axis=(0, 1), ord=3),
        ((3, 2),),
        ("nonzero",),
        variant="axis-pair-ord=3",
    )
)
ROWS.append(
    Row(
        "linalg.vector_norm",
        lambda x: la.vector_norm(x, keepdims=True, ord=1),
        ((3, 2),),
        ("nonzero",),
        variant="keepdims-ord=1",
    )
)
for ord_ in ["fro", "nuc", 2, np.inf]:
    ROWS.append(
        Row(
            "linalg.matrix_norm",
            lambda a, o=ord_: la.matrix_norm(a, ord=o),
            make=spread(2, 4, 3),
            variant=f"ord={ord_}",
        )
    )
ROWS.append(
    Row(
        "linalg.matrix_norm",
        lambda a: la.matrix_norm(a, keepdims=True),
        make=spread(4, 3),
        variant="keepdims",
    )
)

for p in [None, 2, -2, "fro", 1, np.inf, "nuc"]:
    ROWS.append(
        Row("linalg.cond", lambda a, p=p: la.cond(a, p), make=spread(3, 3), variant=f"p={p}")
    )
ROWS.append(Row("linalg.cond", la.cond, make=spread(2, 4, 3), variant="tall-batched"))

# --- products and shapes --------------------------------------------------------------------------

for shapes in [
    ((2, 3), (3, 4)),
    ((2, 3), (3, 4), (4, 2)),
    ((3,), (3, 4), (4, 2), (2,)),
    ((5, 2), (2, 4), (4, 3), (3,)),
    ((3,), (3,)),
]:
    ROWS.append(
        Row(
            "linalg.multi_dot",
            lambda *xs: la.multi_dot(xs),
            shapes,
            variant=f"{len(shapes)}-arrays",
        )
    )

ROWS.append(Row("linalg.matrix_transpose", la.matrix_transpose, ((2, 3, 2),)))
ROWS += [Row("linalg.matmul", la.matmul, s) for s in [((2, 3), (3, 2)), ((2, 2, 3), (3,))]]
ROWS.append(Row("linalg.outer", la.outer, ((3,), (2,))))
ROWS += [
    Row("linalg.tensordot", la.tensordot, ((2, 3, 2), (3, 2, 2))),
    Row(
        "linalg.tensordot",
        lambda x, y: la.tensordot(x, y, axes=1),
        ((2, 3), (3, 2)),
        variant="axes=1",
    ),
]
ROWS += [
    Row("linalg.cross", la.cross, ((2, 3), (3,))),
    Row("linalg.cross", lambda x, y: la.cross(x, y, axis=0), ((3, 2), (3, 2)), variant="axis=0"),
]
ROWS += [
    Row("linalg.trace", la.trace, ((2, 3, 3),)),
    Row("linalg.trace", lambda x: la.trace(x, offset=1), ((3, 4),), variant="offset=1"),
]
ROWS += [
    Row("linalg.diagonal", la.diagonal, ((2, 3, 4),)),
    Row("linalg.diagonal", lambda x: la.diagonal(x, offset=-1), ((3, 3),), variant="offset=-1"),
]
ROWS += [
    Row("linalg.vecdot", la.vecdot, ((2, 3), (3,))),
    Row("linalg.vecdot", lambda x, y: la.vecdot(x, y, axis=0), ((3, 2), (3, 1)), variant="axis=0"),
]

NONDIFF = [Nondiff("linalg.matrix_rank", lambda x: la.matrix_rank(x[:, None] * x[None, :]))]
