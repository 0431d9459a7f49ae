"""Gradient-table rows for fgrad.numpy.linalg with complex input (see tests/gradtable.py).

Every linalg name that takes complex input has rows here whose arguments are complex128
(`ComplexRow`); check_grads draws complex directions for them, so both modes are checked to
order 2 under JAX's convention for complex numbers. Factors fixed only up to a phase per
column (the eigenvectors of `eigh`, the singular vectors of `svd`) enter through functions
that do not depend on the phases (`V diag(sin w) V^H`, `|U|^2`, `U @ Vh`); `eig`'s
eigenvectors (normalized as LAPACK does), `qr`'s factors (R with a real diagonal) and
`cholesky`'s are checked as they are. The inputs keep central differences inside the smooth
region: eigenvalues and singular values well apart, and each eigenvector of `eig` with one
clearly largest entry.
"""

from dataclasses import dataclass

import numpy as np
from gradtable import Row, draw

import fgrad.numpy as fnp

la = fnp.linalg
ROWS = []

# Names whose rows cannot run on Dask arrays, and why (tests/test_dask_table.py).
DASK_CANNOT = {
    "linalg.lstsq": "NumPy's residuals have one entry per column of b only when a tall a has "
    "full rank (none otherwise): their shape depends on the computed rank (fgrad raises for a "
    "tall Dask a; a wide one runs)",
}

COMPLEX64 = (
    "complex input gives complex64 (or float32) results and complex64 cotangents: "
    "tests/test_linalg.py::test_complex_rows_keep_single_precision checks them"
)


@dataclass
class ComplexRow(Row):
    """A row with complex arguments: `make(rng)` returns complex arrays (or, without `make`,
    real and imaginary parts are drawn from `domains`); `args(dtype)` gives them in the
    complex dtype of dtype's precision (float32: complex64)."""

    float32: object = COMPLEX64

    def args(self, dtype=np.float64):
        cdtype = np.result_type(dtype, np.complex64)
        rng = np.random.default_rng(self.seed)
        if self.make is not None:
            values = self.make(rng)
        else:
            domains = self.domains * len(self.shapes) if len(self.domains) == 1 else self.domains
            values = tuple(
                draw(d, s, rng) + 1j * draw(d, s, rng) for d, s in zip(domains, self.shapes)
            )
        return tuple(np.asarray(v, dtype=cdtype) for v in values)


def row(name, fn, variant="", **kw):
    ROWS.append(ComplexRow(name, fn, variant="complex" + (f",{variant}" if variant else ""), **kw))


def H(x):
    return fnp.conj(fnp.swapaxes(x, -1, -2))


def _normal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _unitary(rng, n, batch=()):
    q, r = np.linalg.qr(_normal(rng, batch + (n, n)))
    d = np.diagonal(r, axis1=-2, axis2=-1)
    return q * (d / np.abs(d))[..., None, :]


def general(*shape):
    """Well-conditioned complex square matrices."""

    def make(rng):
        n = shape[-1]
        return (_normal(rng, shape) + 2.0 * n**0.5 * np.eye(n),)

    return make


def hermitian(*shape, positive=False):
    """Hermitian matrices with eigenvalues 0.6 or more apart (all positive if asked)."""

    def make(rng):
        n, batch = shape[-1], shape[:-2]
        q = _unitary(rng, n, batch)
        w = np.arange(n) * 0.8 + (0.6 if positive else 0.3 - 0.8 * (n - 1) / 2)
        w = w + rng.uniform(0, 0.2, batch + (n,))
        return ((q * w[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2)),)

    return make


def spread(*shape):
    """Complex matrices (..., m, n) with singular values 0.5, 0.9, 1.3, ... plus noise."""

    def make(rng):
        m, n, batch = shape[-2], shape[-1], shape[:-2]
        k = min(m, n)
        u = _unitary(rng, m, batch)[..., :k]
        v = _unitary(rng, n, batch)[..., :k]
        s = 0.5 + 0.4 * np.arange(k)[::-1] + rng.uniform(0, 0.1, batch + (k,))
        return ((u * s[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)),)

    return make


def diagonalizable(*shape):
    """S diag(w) S^-1 with complex eigenvalues 0.7 or more apart and S = I + small noise, so
    that each eigenvector has one clearly largest entry (LAPACK makes it real)."""

    def make(rng):
        n, batch = shape[-1], shape[:-2]
        w = (np.arange(n) - (n - 1) / 2) * (0.6 + 0.5j) + 0.1 * _normal(rng, batch + (n,))
        s = np.eye(n) + 0.25 * _normal(rng, batch + (n, n))
        return ((s * w[..., None, :]) @ np.linalg.inv(s),)

    return make


def plain(*shapes):
    return lambda rng: tuple(_normal(rng, s) for s in shapes)


def plus(make, *extra):
    return lambda rng: make(rng) + tuple(_normal(rng, s) for s in extra)


SQUARE = [(3, 3), (2, 3, 3)]

# --- inv, solve, det, slogdet, tensorinv, tensorsolve, matrix_power -------------------------------

for s in SQUARE + [(1, 1)]:
    row("linalg.inv", la.inv, make=general(*s))
    row("linalg.det", la.det, make=general(*s))
    row("linalg.slogdet", la.slogdet, make=general(*s))
row("linalg.slogdet", lambda a: la.slogdet(a).logabsdet, make=general(3, 3), variant="logabsdet")
row("linalg.slogdet", lambda a: la.slogdet(a).sign, make=general(3, 3), variant="sign")
row(
    "linalg.det",
    la.det,
    variant="singular",
    make=lambda rng: (spread(3, 3)(rng)[0] @ np.diag([1.0, 1.0, 0.0]),),
)
row(
    "linalg.det",
    la.det,
    variant="singular-batched",
    make=lambda rng: (spread(2, 4, 4)(rng)[0] @ np.diag([1.0, 1.0, 1.0, 0.0]),),
)
for a_shape, b_shape, variant in [
    ((3, 3), (3,), "vector"),
    ((2, 3, 3), (2, 3, 2), "batched"),
    ((3, 3), (2, 3, 1), "broadcast-a"),
]:
    row("linalg.solve", la.solve, make=plus(general(*a_shape), b_shape), variant=variant)
row(
    "linalg.tensorinv",
    lambda a: la.tensorinv(a, ind=1),
    make=lambda rng: (general(6, 6)(rng)[0].reshape(6, 2, 3),),
)
row(
    "linalg.tensorsolve",
    la.tensorsolve,
    make=lambda rng: (general(6, 6)(rng)[0].reshape(2, 3, 2, 3), _normal(rng, (2, 3))),
)
for n in [3, -2]:
    row(
        "linalg.matrix_power",
        lambda a, n=n: la.matrix_power(a, n),
        make=general(3, 3),
        variant=f"n={n}",
    )

# --- pinv, lstsq ----------------------------------------------------------------------------------

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3)]:
    row("linalg.pinv", la.pinv, make=spread(*s))
row("linalg.pinv", lambda b, c: la.pinv(b @ c), variant="rank-2", make=plain((4, 2), (2, 3)))
row("linalg.pinv", lambda a: la.pinv(a, hermitian=True), variant="hermitian", make=hermitian(3, 3))
row("linalg.lstsq", lambda a, b: la.lstsq(a, b)[0], make=plus(spread(4, 3), (4,)), variant="x-tall")
row(
    "linalg.lstsq",
    lambda a, b: la.lstsq(a, b)[0],
    make=plus(spread(3, 4), (3, 2)),
    variant="x-wide",
)
row(
    "linalg.lstsq",
    lambda a, b: la.lstsq(a, b)[:2] + la.lstsq(a, b)[3:],
    make=plus(spread(5, 3), (5, 2)),
    variant="x-residuals-s",
)

# --- cholesky, qr ---------------------------------------------------------------------------------

for s in SQUARE:
    row("linalg.cholesky", la.cholesky, make=hermitian(*s, positive=True))
row(
    "linalg.cholesky",
    lambda a: la.cholesky(a, upper=True),
    variant="upper",
    make=hermitian(3, 3, positive=True),
)
row(
    "linalg.cholesky",
    la.cholesky,
    variant="non-hermitian-input",
    make=lambda rng: (
        hermitian(3, 3, positive=True)(rng)[0] + 0.1 * np.triu(_normal(rng, (3, 3)), 1),
    ),
)

for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3), (2, 2, 4)]:
    row("linalg.qr", la.qr, make=spread(*s))
row("linalg.qr", lambda a: la.qr(a, mode="r"), make=spread(4, 3), variant="r")
row("linalg.qr", lambda a: la.qr(a)[0], make=spread(3, 4), variant="q-wide")
row("linalg.qr", lambda a: la.qr(a, mode="complete"), make=spread(3, 4), variant="complete-wide")


def _complete_qr_invariants(a):
    """R, Q's first n columns (R's real diagonal fixes their phases) and the projector onto
    the rest (any basis of the complement: only the projector is a function of a)."""
    n = a.shape[-1]
    q, r = la.qr(a, mode="complete")
    return r, q[..., :, :n], q[..., :, n:] @ H(q[..., :, n:])


for s in [(4, 2), (2, 5, 3)]:
    row("linalg.qr", _complete_qr_invariants, make=spread(*s), variant="complete-tall")

# --- eigh, eigvalsh, eig, eigvals -----------------------------------------------------------------


def _eigh_function(a, **kw):
    """w and V diag(sin w) V^H: a matrix function, independent of the eigenvectors' phases."""
    w, v = la.eigh(a, **kw)
    return w, (v * fnp.sin(w)[..., None, :]) @ H(v)


for s in SQUARE + [(4, 4)]:
    row("linalg.eigh", _eigh_function, make=hermitian(*s))
    row("linalg.eigvalsh", la.eigvalsh, make=hermitian(*s))
row(
    "linalg.eigh",
    lambda a: fnp.abs(la.eigh(a)[1]) ** 2,
    make=hermitian(3, 3),
    variant="abs(vectors)**2",
)
row("linalg.eigh", lambda a: _eigh_function(a, UPLO="U"), make=hermitian(3, 3), variant="UPLO=U")
row(
    "linalg.eigh",
    _eigh_function,
    variant="non-hermitian-input",
    make=lambda rng: (hermitian(3, 3)(rng)[0] + 0.1 * np.triu(_normal(rng, (3, 3)), 1),),
)
row("linalg.eigvalsh", lambda a: la.eigvalsh(a, UPLO="U"), make=hermitian(3, 3), variant="UPLO=U")

# Non-Hermitian input: NumPy reads the UPLO triangle only (cholesky: the lower one, the upper
# one with upper=True) and the real part of the diagonal. These inputs have noise in the other
# triangle and an imaginary part on the diagonal: the value must be NumPy's and the derivative
# that of NumPy's function (0 where NumPy does not read).


def unread(make, lower=True):
    """`make`'s matrices with complex noise in the triangle NumPy does not read and an
    imaginary part of up to 0.5 on the diagonal."""

    def noisy(rng):
        (a,) = make(rng)
        noise = _normal(rng, a.shape)
        n = a.shape[-1]
        im = rng.uniform(-0.5, 0.5, a.shape[:-1])[..., None] * np.eye(n)
        return (a + (np.triu(noise, 1) if lower else np.tril(noise, -1)) + 1j * im,)

    return noisy


for uplo in ("L", "U"):
    lower = uplo == "L"
    row(
        "linalg.eigh",
        lambda a, u=uplo: _eigh_function(a, UPLO=u),
        make=unread(hermitian(2, 3, 3), lower),
        variant=f"UPLO={uplo},unread",
    )
    row(
        "linalg.eigvalsh",
        lambda a, u=uplo: la.eigvalsh(a, UPLO=u),
        make=unread(hermitian(3, 3), lower),
        variant=f"UPLO={uplo},unread",
    )
    row(
        "linalg.cholesky",
        lambda a, up=not lower: la.cholesky(a, upper=up),
        make=unread(hermitian(2, 3, 3, positive=True), lower),
        variant=f"upper={not lower},unread",
    )
row(
    "linalg.pinv",
    lambda a: la.pinv(a, hermitian=True),
    variant="hermitian,unread",
    make=unread(hermitian(3, 3)),
)
row(
    "linalg.svd",
    lambda a: (lambda u, s, vh: (s, (u * s[..., None, :]) @ vh))(*la.svd(a, hermitian=True)),
    make=unread(hermitian(3, 3)),
    variant="hermitian,unread",
)

for s in SQUARE + [(4, 4)]:
    row("linalg.eig", la.eig, make=diagonalizable(*s))
    row("linalg.eigvals", la.eigvals, make=diagonalizable(*s))
row("linalg.eig", lambda a: la.eig(a)[1], make=diagonalizable(3, 3), variant="vectors")
row("linalg.eig", lambda a: la.eig(a)[0], make=diagonalizable(3, 3), variant="values")

# --- svd, svdvals ---------------------------------------------------------------------------------


def _svd_functions(a):
    """s, U diag(sin s) Vh, |U|^2 and |Vh|^2: independent of the singular vectors' phases."""
    u, s, vh = la.svd(a, full_matrices=False)
    return s, (u * fnp.sin(s)[..., None, :]) @ vh, fnp.abs(u) ** 2, fnp.abs(vh) ** 2


for s in [(3, 3), (4, 3), (3, 4), (2, 4, 3), (2, 3, 4)]:
    row("linalg.svd", _svd_functions, make=spread(*s))
    row(
        "linalg.svd",
        lambda a: la.svd(a, compute_uv=False),
        make=spread(*s),
        variant="compute_uv=False",
    )
row(
    "linalg.svd",
    lambda a: (lambda u, s, vh: u @ vh)(*la.svd(a)),
    make=spread(3, 3),
    variant="polar-factor",
)


def _full_svd_invariants(a):
    """`_svd_functions` of a full SVD, and the projector onto the extra columns of U (m > n)
    or V (m < n): any basis of the complement, only the projector is a function of a."""
    m, n = a.shape[-2:]
    k = min(m, n)
    u, s, vh = la.svd(a)
    u1, vh1 = u[..., :, :k], vh[..., :k, :]
    extra = u[..., :, k:] if m > n else H(vh[..., k:, :])
    usv = (u1 * fnp.sin(s)[..., None, :]) @ vh1
    return s, usv, fnp.abs(u1) ** 2, fnp.abs(vh1) ** 2, extra @ H(extra)


for s in [(4, 2), (2, 4), (2, 3, 5)]:
    row("linalg.svd", _full_svd_invariants, make=spread(*s), variant="full-non-square")
row("linalg.svdvals", la.svdvals, make=spread(4, 3))
row("linalg.svdvals", la.svdvals, make=spread(2, 3, 4), variant="wide-batched")
for s in SQUARE:
    row(
        "linalg.svd",
        lambda a: (lambda u, s, vh: (s, (u * s[..., None, :]) @ vh))(*la.svd(a, hermitian=True)),
        make=hermitian(*s),
        variant="hermitian",
    )
    row(
        "linalg.svd",
        lambda a: la.svd(a, compute_uv=False, hermitian=True),
        make=hermitian(*s),
        variant="hermitian-compute_uv=False",
    )

# --- norms ----------------------------------------------------------------------------------------

for ord_ in [None, 2, 1, np.inf, -np.inf, 3, 0.5, -1.5]:
    for shape, axis in [((3,), None), ((3, 2), 0), ((2, 3, 2), -1)]:
        row(
            "linalg.norm",
            lambda x, o=ord_, ax=axis: la.norm(x, o, ax),
            shapes=(shape,),
            domains=("nonzero",),
            variant=f"ord={ord_},axis={axis}",
        )
row("linalg.norm", lambda x: la.norm(x, 2, 1, keepdims=True), shapes=((3, 2),), variant="keepdims")
row("linalg.norm", la.norm, shapes=((3, 2),), variant="all")
row("linalg.norm", lambda x: la.norm(x, keepdims=True), shapes=((2, 3, 2),), variant="all-keepdims")
row(
    "linalg.norm",
    lambda x: la.norm(x, 0, 0),
    shapes=((3, 2),),
    domains=("nonzero",),
    variant="ord=0",
    order=1,
)
for ord_ in [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]:
    row(
        "linalg.norm",
        lambda a, o=ord_: la.norm(a, o),
        make=spread(4, 3),
        variant=f"matrix-ord={ord_}",
    )
    row(
        "linalg.norm",
        lambda a, o=ord_: la.norm(a, o, axis=(2, 0), keepdims=True),
        make=lambda rng: (np.moveaxis(spread(2, 4, 3)(rng)[0], 0, 1),),
        variant=f"matrix-ord={ord_}-axis=(2,0)-keepdims",
    )

row("linalg.vector_norm", la.vector_norm, shapes=((3, 2),))
row(
    "linalg.vector_norm",
    lambda x: la.vector_norm(x, axis=(0, 1), ord=3),
    shapes=((3, 2),),
    domains=("nonzero",),
    variant="axis-pair-ord=3",
)
row(
    "linalg.vector_norm",
    lambda x: la.vector_norm(x, keepdims=True, ord=1),
    shapes=((3, 2),),
    domains=("nonzero",),
    variant="keepdims-ord=1",
)
for ord_ in ["fro", "nuc", 2, np.inf]:
    row(
        "linalg.matrix_norm",
        lambda a, o=ord_: la.matrix_norm(a, ord=o),
        make=spread(2, 4, 3),
        variant=f"ord={ord_}",
    )

for p in [None, 2, -2, "fro", 1, np.inf, "nuc"]:
    row("linalg.cond", lambda a, p=p: la.cond(a, p), make=spread(3, 3), variant=f"p={p}")
row("linalg.cond", la.cond, make=spread(2, 4, 3), variant="tall-batched")

# --- products and shapes --------------------------------------------------------------------------

row(
    "linalg.multi_dot",
    lambda *xs: la.multi_dot(xs),
    make=plain((3,), (3, 4), (4, 2), (2,)),
    variant="4-arrays",
)
row("linalg.matrix_transpose", la.matrix_transpose, make=plain((2, 3, 2)))
row("linalg.matmul", la.matmul, make=plain((2, 2, 3), (3,)))
row("linalg.outer", la.outer, make=plain((3,), (2,)))
row("linalg.tensordot", la.tensordot, make=plain((2, 3, 2), (3, 2, 2)))
row("linalg.cross", la.cross, make=plain((2, 3), (3,)))
row("linalg.trace", lambda x: la.trace(x, offset=1), make=plain((3, 4)))
row("linalg.diagonal", la.diagonal, make=plain((2, 3, 4)))
row("linalg.vecdot", la.vecdot, make=plain((2, 3), (3,)))
row(
    "linalg.vecdot",
    lambda x, y: la.vecdot(x, y, axis=0),
    make=plain((3, 2), (3, 1)),
    variant="axis=0",
)
