"""Closed-form values, derivatives and conventions of fgrad.numpy.linalg: NumPy's values (dtype,
shape and value, real and complex, factorizations up to their phases), the same values under
every transform, gradients at singular matrices and repeated eigenvalues, the 2-norm at 0,
complex input under JAX's convention, and the errors for derivatives that do not exist. (The
gradient table, tests/rows_linalg.py and tests/rows_linalg_complex.py, checks every name
against finite differences to order 2.)"""

import numpy as np
import pytest
from gradtable import load

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jit, jvp, vjp, vmap
from fgrad.core import primal
from fgrad.test_util import check_grads
from fgrad.tree_util import tree_flatten

la = fnp.linalg
rng = np.random.default_rng(7)
A = rng.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = A @ A.T
TALL = rng.standard_normal((4, 3))
WIDE = rng.standard_normal((3, 4))


SYM = np.array([[1.0, 2.0, 0.5], [2.0, -1.0, 0.3], [0.5, 0.3, 0.2]])  # eigenvalues of both signs


def _traced_value(f, x):
    """f(x) computed on a traced x (the path that differentiates), as plain arrays."""
    return fgrad.vjp(f, x)[0]


def _rotation():
    q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))
    return q


# --- values are NumPy's ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        ("inv", lambda: la.inv(A), lambda: np.linalg.inv(A)),
        ("det", lambda: la.det(A), lambda: np.linalg.det(A)),
        ("slogdet", lambda: la.slogdet(-A), lambda: np.linalg.slogdet(-A)),
        (
            "solve-vector",
            lambda: la.solve(np.stack([A, SPD]), A[0]),
            lambda: np.linalg.solve(np.stack([A, SPD]), A[0]),
        ),
        ("solve-matrix", lambda: la.solve(A, TALL.T), lambda: np.linalg.solve(A, TALL.T)),
        ("pinv", lambda: la.pinv(TALL), lambda: np.linalg.pinv(TALL)),
        ("pinv-rtol", lambda: la.pinv(WIDE, rtol=0.5), lambda: np.linalg.pinv(WIDE, rtol=0.5)),
        ("cholesky", lambda: la.cholesky(SPD), lambda: np.linalg.cholesky(SPD)),
        (
            "cholesky-upper",
            lambda: la.cholesky(SPD, upper=True),
            lambda: np.linalg.cholesky(SPD, upper=True),
        ),
        ("qr", lambda: la.qr(TALL), lambda: np.linalg.qr(TALL)),
        ("qr-wide", lambda: la.qr(WIDE), lambda: np.linalg.qr(WIDE)),
        ("qr-r", lambda: la.qr(TALL, mode="r"), lambda: np.linalg.qr(TALL, mode="r")),
        ("eigh", lambda: la.eigh(SPD), lambda: np.linalg.eigh(SPD)),
        ("eigvalsh", lambda: la.eigvalsh(SPD), lambda: np.linalg.eigvalsh(SPD)),
        (
            "svd",
            lambda: la.svd(TALL, full_matrices=False),
            lambda: np.linalg.svd(TALL, full_matrices=False),
        ),
        (
            "svd-hermitian",
            lambda: _traced_value(lambda a: la.svd(a, hermitian=True), SYM),
            lambda: np.linalg.svd(SYM, hermitian=True),
        ),
        (
            "svd-hermitian-s",
            lambda: _traced_value(lambda a: la.svdvals(a), SYM),
            lambda: np.linalg.svd(SYM, compute_uv=False, hermitian=True),
        ),
        (
            "svd-traced",
            lambda: _traced_value(lambda a: la.svd(a, full_matrices=False), TALL),
            lambda: np.linalg.svd(TALL, full_matrices=False),
        ),
        ("norm-3", lambda: la.norm(TALL, 3, axis=0), lambda: np.linalg.norm(TALL, 3, axis=0)),
        ("norm-nuc", lambda: la.norm(TALL, "nuc"), lambda: np.linalg.norm(TALL, "nuc")),
        ("norm-inf", lambda: la.norm(TALL, np.inf), lambda: np.linalg.norm(TALL, np.inf)),
        (
            "norm--1",
            lambda: la.norm(TALL, -1, keepdims=True),
            lambda: np.linalg.norm(TALL, -1, keepdims=True),
        ),
        ("norm-0", lambda: la.norm(TALL, 0, axis=1), lambda: np.linalg.norm(TALL, 0, axis=1)),
        (
            "norm-0-int",
            lambda: la.norm(np.array([1, 0, 2]), 0),
            lambda: np.linalg.norm(np.array([1, 0, 2]), 0),
        ),
        ("cond", lambda: la.cond(A), lambda: np.linalg.cond(A)),
        ("cond-1", lambda: la.cond(A, 1), lambda: np.linalg.cond(A, 1)),
        ("matrix_power", lambda: la.matrix_power(A, -3), lambda: np.linalg.matrix_power(A, -3)),
        ("matrix_power-0", lambda: la.matrix_power(A, 0), lambda: np.linalg.matrix_power(A, 0)),
        (
            "multi_dot",
            lambda: la.multi_dot([A[0], TALL.T, TALL, A[:, 0]]),
            lambda: np.linalg.multi_dot([A[0], TALL.T, TALL, A[:, 0]]),
        ),
        (
            "tensorinv",
            lambda: la.tensorinv(np.kron(A, A).reshape(3, 3, 9)),
            lambda: np.linalg.tensorinv(np.kron(A, A).reshape(3, 3, 9)),
        ),
        ("outer", lambda: la.outer(A[0], TALL[0]), lambda: np.linalg.outer(A[0], TALL[0])),
        (
            "tensordot",
            lambda: la.tensordot(TALL, WIDE, axes=1),
            lambda: np.linalg.tensordot(TALL, WIDE, axes=1),
        ),
        (
            "cross",
            lambda: la.cross(A, A[::-1], axis=0),
            lambda: np.linalg.cross(A, A[::-1], axis=0),
        ),
        (
            "trace",
            lambda: la.trace(np.stack([A, SPD]), offset=1),
            lambda: np.linalg.trace(np.stack([A, SPD]), offset=1),
        ),
        (
            "diagonal",
            lambda: la.diagonal(np.stack([TALL, TALL]), offset=-1),
            lambda: np.linalg.diagonal(np.stack([TALL, TALL]), offset=-1),
        ),
        ("vecdot", lambda: la.vecdot(TALL, A[0]), lambda: np.linalg.vecdot(TALL, A[0])),
        ("matmul", lambda: la.matmul(TALL, A), lambda: np.linalg.matmul(TALL, A)),
        (
            "tensorsolve",
            lambda: la.tensorsolve(np.kron(A, A).reshape(9, 3, 3), A.ravel()),
            lambda: np.linalg.tensorsolve(np.kron(A, A).reshape(9, 3, 3), A.ravel()),
        ),
        (
            "tensorsolve-axes",
            lambda: la.tensorsolve(np.kron(A, A).reshape(3, 3, 3, 3), A, axes=(0,)),
            lambda: np.linalg.tensorsolve(np.kron(A, A).reshape(3, 3, 3, 3), A, axes=(0,)),
        ),
    ],
)
def test_values_match_numpy(name, ours, theirs):
    got, want = ours(), theirs()
    if isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
    else:
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        assert np.result_type(g) == np.result_type(w)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_lstsq_returns_numpy_four_results():
    b = rng.standard_normal(4)
    x, res, rank, s = la.lstsq(TALL, b)
    x0, res0, rank0, s0 = np.linalg.lstsq(TALL, b)
    np.testing.assert_allclose(x, x0, rtol=1e-10)
    np.testing.assert_allclose(res, res0, rtol=1e-10)
    assert np.shape(res) == np.shape(res0) == (1,) and rank == rank0 == 3
    np.testing.assert_allclose(s, s0, rtol=1e-12)
    _, res_wide, _, _ = la.lstsq(WIDE, b[:3])
    assert np.shape(res_wide) == (0,)


def test_lstsq_rcond_outside_0_1_means_machine_precision_as_in_lapack():
    # gelsd replaces an rcond <= 0 or >= 1 (-1 was NumPy's default) by eps / 2
    a = np.outer([1.0, 2, 3, 4], [1.0, 0, 1]) + np.outer([0, 1.0, 0, 1], [0, 1.0, 0])  # rank 2
    b = rng.standard_normal(4)
    for rcond in (-1, 0.0, 1.0, 2.0):
        x0, _, rank0, _ = np.linalg.lstsq(a, b, rcond=rcond)
        x, _, rank, _ = la.lstsq(a, b, rcond=rcond)
        np.testing.assert_allclose(x, x0, rtol=1e-10, atol=1e-12)
        assert rank == rank0 == 2
        ranks = vmap(lambda m, r=rcond: la.lstsq(m, b, rcond=r)[2])(np.stack([a, a]))
        np.testing.assert_array_equal(ranks, [2, 2])
    # between eps / 2 and eps: kept, as NumPy keeps it
    tiny = np.diag([1.0, 1.5e-16])
    ones = np.ones(2)
    assert la.lstsq(tiny, ones, rcond=-1)[2] == np.linalg.lstsq(tiny, ones, rcond=-1)[2] == 2


def test_lstsq_takes_a_traced_rcond_as_pinv_does():
    a, b = rng.standard_normal((3, 3)), np.ones(3)
    rconds = np.array([0.5, 1e-15])
    want = [np.linalg.lstsq(a, b, rcond=r)[0] for r in rconds]
    jitted = jit(lambda m, r: la.lstsq(m, b, rcond=r)[0])
    for r, w in zip(rconds, want):
        np.testing.assert_allclose(jitted(a, float(r)), w, rtol=1e-12)
    rows = vmap(lambda r: la.lstsq(a, b, rcond=r)[0])(rconds)
    np.testing.assert_allclose(rows, want, rtol=1e-12)
    with pytest.raises(TypeError, match="'rcond' is a traced value"):
        grad(lambda r: fnp.sum(la.lstsq(a, b, rcond=r)[0]))(0.5)


def test_pinv_broadcasts_an_array_rcond_against_the_batch_shape_as_numpy():
    a = np.random.default_rng(1).standard_normal((3, 3, 4, 4))
    rcond = np.array([[0.9], [1e-15], [1e-15]])  # one cutoff per row of the (3, 3) stack
    np.testing.assert_allclose(la.pinv(a, rcond=rcond), np.linalg.pinv(a, rcond=rcond), atol=1e-12)
    rtol = np.array([0.9, 1e-15, 0.5])  # one per column
    np.testing.assert_allclose(la.pinv(a, rtol=rtol), np.linalg.pinv(a, rtol=rtol), atol=1e-12)
    np.testing.assert_allclose(
        la.pinv(a[:2], rcond=rcond[:2]), np.linalg.pinv(a[:2], rcond=rcond[:2]), atol=1e-12
    )
    with pytest.raises(ValueError, match="'rcond' .* has shape \\(2,\\)"):
        la.pinv(a, rcond=np.ones(2))


# --- closed-form derivatives ----------------------------------------------------------------------


def test_inv_and_logdet_gradients_are_the_textbook_ones():
    ai = np.linalg.inv(A)
    np.testing.assert_allclose(
        grad(lambda a: fnp.sum(la.inv(a)))(A), -ai.T @ np.ones((3, 3)) @ ai.T, rtol=1e-12
    )
    np.testing.assert_allclose(grad(lambda a: la.slogdet(a)[1])(A), ai.T, rtol=1e-12)
    np.testing.assert_allclose(grad(la.det)(A), np.linalg.det(A) * ai.T, rtol=1e-12)
    # second derivative of log|det|: d(inv(a).T)[h] = -(inv(a) h inv(a)).T
    h = rng.standard_normal((3, 3))
    _, dg = jvp(grad(lambda a: la.slogdet(a)[1]), (A,), (h,))
    np.testing.assert_allclose(dg, -(ai @ h @ ai).T, rtol=1e-10)


def test_sign_of_slogdet_is_a_constant():
    sign, _ = la.slogdet(-A)
    assert sign == -1.0
    np.testing.assert_array_equal(
        grad(lambda a: la.slogdet(a)[0] * fnp.sum(a))(-A), np.full((3, 3), -1.0)
    )


def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix():
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [1.5, 1.0, 5.0]])  # row 3 = row 1 + row 2
    cof = np.array(
        [
            [np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(grad(la.det)(a), cof, atol=1e-12)
    np.testing.assert_allclose(jacfwd(la.det)(a), cof, atol=1e-12)
    # det is a polynomial: its second derivative exists at rank n-1 as well (lower ranks:
    # test_det_derivatives_of_every_order_at_every_rank)
    check_grads(la.det, (a,), order=2)
    # rank n-2: every cofactor is 0
    np.testing.assert_allclose(
        grad(la.det)(np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5])), np.zeros((3, 3)), atol=1e-12
    )
    # a batch with one singular matrix and one invertible one
    batch = np.stack([a, A])
    g = grad(lambda b: fnp.sum(la.det(b)))(batch)
    np.testing.assert_allclose(g[0], cof, atol=1e-12)
    np.testing.assert_allclose(g[1], np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-10)


def _det_derivative(a, order):
    """The exact derivative tensor of det of the given order at a, shape (n, n) * order, from
    the Leibniz formula det(a) = sum over permutations p of sign(p) prod_i a[i, p(i)]: its
    derivative in a[i1, j1], ..., a[ik, jk] is the sum over p with p(iq) = jq of sign(p) times
    the product of the other factors."""
    import itertools

    n = a.shape[0]
    out = np.zeros((n, n) * order, dtype=a.dtype)
    for p in itertools.permutations(range(n)):
        sign = np.linalg.det(np.eye(n)[list(p)])
        for rows in itertools.permutations(range(n), order):
            rest = [m for m in range(n) if m not in rows]
            out[tuple(x for r in rows for x in (r, p[r]))] += sign * np.prod(
                [a[m, p[m]] for m in rest]
            )
    return out


def test_det_second_derivative_at_rank_n_minus_2_is_the_closed_form():
    # det(diag(1, 0, 0) + s E) = -s**2 with E[1, 2] = E[2, 1] = 1: every mode gives -2
    d, e = np.diag([1.0, 0.0, 0.0]), np.zeros((3, 3))
    e[1, 2] = e[2, 1] = 1.0

    def f(s):
        return la.det(d + s * e)

    assert grad(grad(f))(0.0) == pytest.approx(-2.0, abs=1e-12)
    assert jacfwd(jacfwd(f))(0.0) == pytest.approx(-2.0, abs=1e-12)
    assert fgrad.derivative(f, 2)(0.0) == pytest.approx(-2.0, abs=1e-12)
    assert fgrad.jet(f, (0.0,), ((1.0, 0.0),))[1][1] == pytest.approx(-2.0, abs=1e-12)
    assert fgrad.hessian(la.det)(d)[1, 2, 2, 1] == pytest.approx(-1.0, abs=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_det_derivatives_of_every_order_at_every_rank(n, dtype):
    # det is a polynomial of degree n: at ranks 0..n (random low-rank products), the
    # Hessian and third derivative in every mode, and jet's derivatives of orders 1..n+1 along a
    # line, equal the Leibniz formula's
    gen = np.random.default_rng(n)
    cplx = dtype is np.complex128

    def sample(*s):
        return gen.standard_normal(s) + (1j * gen.standard_normal(s) if cplx else 0)

    for rank in range(n + 1):
        a = sample(n, rank) @ sample(rank, n)
        h = _det_derivative(a, 2)
        scale = 1.0 + np.abs(h).max()
        for second in [
            jacfwd(fgrad.jacrev(la.det, holomorphic=cplx), holomorphic=cplx),
            jacfwd(jacfwd(la.det, holomorphic=cplx), holomorphic=cplx),
            fgrad.jacrev(fgrad.jacrev(la.det, holomorphic=cplx), holomorphic=cplx),
        ]:
            np.testing.assert_allclose(second(a), h, atol=1e-12 * scale, err_msg=f"rank {rank}")
        if n >= 3:
            third = jacfwd(
                fgrad.jacrev(fgrad.jacrev(la.det, holomorphic=cplx), holomorphic=cplx),
                holomorphic=cplx,
            )
            np.testing.assert_allclose(third(a), _det_derivative(a, 3), atol=1e-11 * scale)
        if not cplx:
            t = sample(n, n)
            _, series = fgrad.jet(la.det, (a,), ((t,) + (np.zeros((n, n)),) * n,))
            for k, got in enumerate(series, start=1):
                letters = "abcdefghij"[: 2 * k]
                exact = 0.0
                if k <= n:
                    operands = [t] * k
                    spec = ",".join(letters[2 * q : 2 * q + 2] for q in range(k))
                    exact = np.einsum(f"{letters},{spec}->", _det_derivative(a, k), *operands)
                assert got == pytest.approx(exact, abs=1e-10 * scale), (rank, k)


def test_det_hessian_at_singular_matrices_under_vmap_and_in_a_stack():
    gen = np.random.default_rng(11)
    batch = np.stack([gen.standard_normal((4, r)) @ gen.standard_normal((r, 4)) for r in range(5)])
    exact = np.stack([_det_derivative(m, 2) for m in batch])
    np.testing.assert_allclose(fgrad.vmap(fgrad.hessian(la.det))(batch), exact, atol=1e-12)
    stacked = fgrad.hessian(lambda b: fnp.sum(la.det(b)))(batch)
    got = np.stack([stacked[k, :, :, k] for k in range(len(batch))])
    np.testing.assert_allclose(got, exact, atol=1e-12)
    np.testing.assert_allclose(fgrad.jit(fgrad.hessian(la.det))(batch[2]), exact[2], atol=1e-12)
    # float32 stays float32, to float32's precision
    h32 = fgrad.hessian(la.det)(batch[2].astype(np.float32))
    assert h32.dtype == np.float32
    np.testing.assert_allclose(h32, exact[2], atol=1e-5 * np.abs(exact[2]).max())


def test_det_derivatives_at_a_matrix_with_a_nan_or_an_inf_are_nan_as_jaxs():
    """grad, jvp, vjp and linearize of det at a matrix holding a nan raised LinAlgError (SVD
    did not converge: NumPy's SVD chose the formula). They are nan now, at every order and
    under jit and vmap, and the other matrices of a stack keep their derivatives (those of
    each matrix alone, singular ones included)."""
    nan = np.array([[1.0, 2.0], [np.nan, 3.0]])
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    regular = np.array([[2.0, 1.0], [1.0, 3.0]])
    t = np.ones((2, 2))
    for bad in (nan, np.array([[np.inf, 0.0], [0.0, 0.0]]), np.array([[np.nan, 0.0], [0.0, 0.0]])):
        for d in (
            grad(la.det)(bad),
            jvp(la.det, (bad,), (t,))[1],
            vjp(la.det, bad)[1](1.0)[0],
            fgrad.linearize(la.det, bad)[1](t),
            fgrad.hessian(la.det)(bad),
            jit(grad(la.det))(bad),
            vmap(grad(la.det))(bad[None])[0],
        ):
            assert np.isnan(d).all()
        d32 = grad(la.det)(bad.astype(np.float32))
        assert np.isnan(d32).all() and d32.dtype == np.float32
    alone = [grad(la.det)(m) for m in (singular, regular)]
    alone_hessians = [fgrad.hessian(la.det)(m) for m in (singular, regular)]
    stack = np.stack([nan, singular, regular])
    for g in (
        grad(lambda x: fnp.sum(la.det(x)))(stack),
        jit(grad(lambda x: fnp.sum(la.det(x))))(stack),
        vmap(grad(la.det))(stack),
    ):
        assert np.isnan(g[0]).all()
        np.testing.assert_allclose(g[1:], alone, atol=1e-12)
    h = vmap(fgrad.hessian(la.det))(stack)
    assert np.isnan(h[0]).all()
    np.testing.assert_allclose(h[1:], alone_hessians, atol=1e-12)
    # a jit record made at a finite matrix, replayed at a nan one, and back
    g = jit(grad(la.det))
    for m in (singular, nan, singular, regular, nan):
        want = grad(la.det)(m)
        np.testing.assert_array_equal(g(m), want)


def _read_from(g, lower):
    """The gradient with respect to a of f(H), H Hermitian read from a's triangle, from the
    gradient g (Hermitian) with respect to H: g + g^H on the triangle read, its diagonal once."""
    tri = np.tril if lower else np.triu
    return tri(g + g.conj().T, -1 if lower else 1) + np.diag(np.diag(g).real)


def test_eigh_of_a_non_symmetric_input_reads_one_triangle_as_numpy():
    a = SPD + np.triu(np.ones((3, 3)), 1)  # NumPy reads the lower triangle only
    h = np.tril(a) + np.tril(a, -1).T
    for uplo, lower, m in (("L", True, a), ("U", False, a.T)):
        np.testing.assert_array_equal(la.eigvalsh(m, UPLO=uplo), np.linalg.eigvalsh(m, UPLO=uplo))
        for ours, numpys in zip(la.eigh(m, UPLO=uplo), np.linalg.eigh(m, UPLO=uplo)):
            np.testing.assert_array_equal(ours, numpys)
        np.testing.assert_array_equal(
            la.cholesky(m, upper=not lower), np.linalg.cholesky(m, upper=not lower)
        )
        # the gradient of the largest eigenvalue of h: v v^T on h, read back to m's triangle
        _, v = np.linalg.eigh(h)
        g = grad(lambda x, u=uplo: la.eigvalsh(x, UPLO=u)[-1])(m)
        np.testing.assert_allclose(g, _read_from(np.outer(v[:, -1], v[:, -1]), lower), atol=1e-12)
        assert not np.any(np.triu(g, 1) if lower else np.tril(g, -1))


def test_pinv_under_vmap_takes_each_rows_path_as_the_loop():
    """The check for a cut singular value was taken to hold under vmap, unread: every row took
    the SVD path, whose second derivatives are nan at tied singular values (72 of 162 entries
    of vmap(hessian) at a batch holding the identity) and whose gradient differed from the
    loop's by 4e-13 (probe DG #1). Rows that agree take one path; rows that differ, each
    its own, as in the loop."""
    f = lambda a: fnp.sum(fnp.linalg.pinv(a) ** 2)
    stack = np.stack([np.eye(3), np.diag([2.0, 2.0, 1.0])])
    np.testing.assert_array_equal(
        vmap(fgrad.hessian(f))(stack), np.stack([fgrad.hessian(f)(a) for a in stack])
    )
    g = grad(lambda a: fnp.sum(fnp.linalg.pinv(a, rtol=0.3) ** 3))
    rows = np.random.default_rng(0).standard_normal((3, 4, 3))
    rows[1] = rows[1] @ np.diag([1.0, 1.0, 0.01])  # a singular value the cutoff drops
    np.testing.assert_array_equal(vmap(g)(rows), np.stack([g(r) for r in rows]))


@pytest.mark.parametrize(
    "shape, rtol, complex_input",
    [
        ((3, 3), 0.4, False),
        ((5, 3), 0.3, False),
        ((3, 5), 0.6, False),
        ((2, 4, 3), 0.5, False),
        ((4, 4), 0.6, False),
        ((4, 3), 0.4, True),
        ((3, 4), 0.4, True),
    ],
)
def test_pinv_derivative_where_rtol_cuts_a_nonzero_singular_value_is_numpys(
    shape, rtol, complex_input
):
    # the derivative of the truncated pinv NumPy returns: it was Golub and Pereyra's at the
    # matrix without the cut singular values, 0.015 to 7 away from finite differences
    gen = np.random.default_rng(1)

    def draw(*dims):
        x = gen.standard_normal(dims)
        return x + 1j * gen.standard_normal(dims) if complex_input else x

    a = draw(*shape) * np.geomspace(1, 0.2, shape[-1])
    s = np.linalg.svd(a, compute_uv=False)
    assert (s <= rtol * s.max(axis=-1, keepdims=True)).any()
    t, ct = draw(*shape), draw(*shape[:-2], shape[-1], shape[-2])

    def f(x):
        return la.pinv(x, rtol=rtol)

    h = 1e-6
    fd = (np.linalg.pinv(a + h * t, rtol=rtol) - np.linalg.pinv(a - h * t, rtol=rtol)) / (2 * h)
    _, d = jvp(f, (a,), (t,))
    np.testing.assert_allclose(d, fd, atol=1e-8)
    g = vjp(f, a)[1](ct)[0]
    assert np.real(np.sum(g * t)) == pytest.approx(np.real(np.sum(ct * d)), abs=1e-12)
    np.testing.assert_array_equal(jit(lambda x, y: jvp(f, (x,), (y,))[1])(a, t), d)
    np.testing.assert_array_equal(jit(lambda x, c: vjp(f, x)[1](c)[0])(a, ct), g)
    if len(shape) == 3:
        rows = vmap(lambda x, y: jvp(f, (x,), (y,))[1])(a, t)
        np.testing.assert_allclose(rows, fd, atol=1e-8)
    if not complex_input and len(shape) == 2:
        check_grads(f, (a,), order=2)
        b = gen.standard_normal(shape[0])
        x_fd = (
            np.linalg.lstsq(a + h * t, b, rcond=rtol)[0]
            - np.linalg.lstsq(a - h * t, b, rcond=rtol)[0]
        ) / (2 * h)
        np.testing.assert_allclose(
            jvp(lambda m: la.lstsq(m, b, rcond=rtol)[0], (a,), (t,))[1], x_fd, atol=1e-8
        )


def test_lowercase_uplo_is_read_as_numpy_reads_it():
    m = np.array([[2.0, 1.0], [5.0, 3.0]])  # not symmetric: the triangle read shows
    for uplo in ("l", "u"):
        np.testing.assert_array_equal(la.eigvalsh(m, uplo), np.linalg.eigvalsh(m, uplo))
        for ours, theirs in zip(la.eigh(m, UPLO=uplo), np.linalg.eigh(m, UPLO=uplo)):
            np.testing.assert_array_equal(ours, theirs)
        g = grad(lambda x, u=uplo: la.eigvalsh(x, u)[-1])(m)
        np.testing.assert_array_equal(g, grad(lambda x, u=uplo: la.eigvalsh(x, u.upper())[-1])(m))
    with pytest.raises(ValueError, match="UPLO must be 'L' or 'U'.*got 'x'"):
        la.eigh(m, "x")


def test_eigvals_of_no_matrix_entries_has_an_empty_gradient():
    def f(m):
        return fnp.sum(fnp.abs(la.eigvals(m)))

    for empty in [np.zeros((0, 0)), np.zeros((2, 0, 0)), np.zeros((0, 3, 3))]:
        g = grad(f)(empty)
        assert g.shape == empty.shape and g.dtype == empty.dtype
        assert jvp(la.eigvals, (empty,), (empty,))[1].shape == empty.shape[:-1]
    assert fgrad.vmap(grad(f))(np.zeros((2, 0, 0))).shape == (2, 0, 0)


def test_tensorsolve_of_a_system_of_no_unknowns_is_numpys():
    """tensorsolve(zeros((0, 0)), zeros(0)) raised "cannot reshape array of size 0 into
    shape (0)" (a reshape to (-1, 0)); NumPy's is an empty x, in the dtype of NumPy's."""
    for a_shape, b_shape in [((0, 0), (0,)), ((0, 0, 0), (0, 0))]:
        for dtype in (np.float64, np.float32, np.int64, np.complex64):
            a, b = np.zeros(a_shape, dtype), np.zeros(b_shape, dtype)
            want = np.linalg.tensorsolve(a, b)
            for got in (la.tensorsolve(a, b), jit(la.tensorsolve)(a, b)):
                assert got.shape == want.shape and got.dtype == want.dtype
        ga, gb = grad(lambda a, b: fnp.sum(la.tensorsolve(a, b)), argnums=(0, 1))(
            np.zeros(a_shape), np.zeros(b_shape)
        )
        assert ga.shape == a_shape and gb.shape == b_shape


def test_eig_vectors_of_an_empty_complex_matrix_have_an_empty_gradient():
    # the phase fix of eig's eigenvectors took argmax over a column of no entries: ValueError
    def vectors(m):
        return la.eig(m).eigenvectors

    for empty in [np.zeros((0, 0), complex), np.zeros((2, 0, 0), complex)]:
        for g in (fgrad.vjp(vectors, empty)[1](empty)[0], jvp(vectors, (empty,), (empty,))[1]):
            assert g.shape == empty.shape and g.dtype == empty.dtype
    assert grad(lambda m: fnp.sum(fnp.abs(vectors(m))))(np.zeros((0, 0), complex)).shape == (0, 0)


# --- eigenvalue-only quantities at repeated eigenvalues and singular values -----------------------


def test_eigvals_derivatives_at_a_repeated_eigenvalue_of_a_diagonalizable_matrix():
    # sum(w) = tr(a) and sum(w**2) = tr(a @ a): gradients I and 2 a^T (equal eigenvalues once
    # took the same eigenvector column, and the solve with V was singular)
    p = np.random.default_rng(3).standard_normal((3, 3))
    stack = np.stack(
        [np.eye(3), np.diag([1.0, 1.0, 2.0]), p @ np.diag([1.0, 1.0, 2.0]) @ np.linalg.inv(p)]
    )

    def squares(a):
        return fnp.real(fnp.sum(la.eigvals(a) ** 2))

    for a in stack:
        np.testing.assert_allclose(
            grad(lambda m: fnp.real(fnp.sum(la.eigvals(m))))(a), np.eye(3), atol=1e-12
        )
        np.testing.assert_allclose(grad(squares)(a), 2 * a.T, atol=1e-12)
        t = np.random.default_rng(4).standard_normal((3, 3))
        _, dw = jvp(la.eigvals, (a,), (t,))
        np.testing.assert_allclose(np.sum(dw), np.trace(t), atol=1e-12)
    np.testing.assert_allclose(
        vmap(grad(squares))(stack), 2 * np.swapaxes(stack, -1, -2), atol=1e-12
    )


def test_eigenvalue_derivatives_at_a_defective_matrix_are_nan_not_a_wrong_number():
    # a has the Jordan block [[1, 1], [0, 1]]: eig's V is singular up to rounding (V[1, 1] =
    # 2.2e-16), and the solve with it gave grad of sum(w**3) = trace(a^3) as [[3,0,0],[0,3,0],
    # [0,0,12]] for 3 (a^2)^T = [[3,0,0],[6,3,0],[0,0,12]]. Eigenvalues have no derivative
    # there: nan, eagerly, forward, in a jit replay and in the defective row of a vmap
    a = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    regular = a + np.diag([0.0, 0.5, 0.0])  # diagonalizable: the exact gradient
    for values in (la.eigvals, lambda m: la.eig(m).eigenvalues):

        def cubes(m, values=values):
            return fnp.real(fnp.sum(values(m) ** 3))

        assert np.isnan(grad(cubes)(a)).all()
        assert np.isnan(jvp(cubes, (a,), (np.ones((3, 3)),))[1])
        replayed = jit(grad(cubes))
        np.testing.assert_allclose(replayed(regular), 3 * (regular @ regular).T, rtol=1e-12)
        np.testing.assert_array_equal(replayed(regular), grad(cubes)(regular))
        assert np.isnan(replayed(a)).all()
        rows = vmap(grad(cubes))(np.stack([a, regular]))
        assert np.isnan(rows[0]).all()
        np.testing.assert_array_equal(rows[1], grad(cubes)(regular))


def test_eigvalsh_gradient_at_repeated_eigenvalues():
    q = _rotation()
    a = q @ np.diag([1.0, 1.0, 3.0]) @ q.T
    for point in (a, np.eye(3)):
        # sum(w**2) = ||h||_F^2: gradient 2h; sum(w) = trace: gradient I (h = a, symmetric,
        # read from a's lower triangle: `_read_from`)
        np.testing.assert_allclose(
            grad(lambda x: fnp.sum(la.eigvalsh(x) ** 2))(point),
            _read_from(2 * point, True),
            atol=1e-12,
        )
        np.testing.assert_allclose(
            grad(lambda x: fnp.sum(la.eigvalsh(x)))(point), np.eye(3), atol=1e-12
        )
        np.testing.assert_allclose(
            jacfwd(lambda x: fnp.sum(la.eigvalsh(x) ** 2))(point),
            _read_from(2 * point, True),
            atol=1e-12,
        )
    # the largest eigenvalue is simple here, so its gradient is q_3 q_3^T (on h)
    np.testing.assert_allclose(
        grad(lambda x: la.eigvalsh(x)[-1])(a),
        _read_from(np.outer(q[:, 2], q[:, 2]), True),
        atol=1e-12,
    )


def _fd_grad(f, a, h=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        g[idx] = (f(a + e) - f(a - e)) / (2 * h)
    return g


def test_second_derivatives_of_eigenvalue_functions_at_a_tie_are_nan_not_zero():
    # sum(w**2) = ||h||_F^2 has a constant Hessian, but the rules cannot know g'' of the
    # function of the eigenvalues that the tie needs: nan there (as JAX), never the 0 they gave
    def squares(x):
        return fnp.sum(la.eigvalsh(x) ** 2)

    assert np.isnan(fgrad.hessian(squares)(np.eye(3))[1, 0, 1, 0])
    assert np.isnan(fgrad.hessian(lambda x: fnp.sum(la.svdvals(x) ** 2))(np.eye(3))).any()
    assert np.isnan(fgrad.hessian(lambda x: la.norm(x, "nuc"))(np.eye(3))).any()
    eig_squares = fgrad.hessian(lambda x: fnp.real(fnp.sum(la.eig(x)[0] ** 2)))(np.eye(3))
    assert np.isnan(eig_squares).any()
    h = fgrad.hessian(squares)(np.diag([1.0, 2.0, 3.0]))  # distinct: exact (2, 4 off diagonal)
    np.testing.assert_allclose(h[1, 0], 4 * np.eye(3)[1:2].T @ np.eye(3)[:1], atol=1e-12)
    # a direction that does not split the tie (diagonal in its eigenvectors): exact
    t = np.diag([1.0, 2.0, 3.0])
    _, hvp = jvp(grad(squares), (np.eye(3),), (t,))
    np.testing.assert_allclose(hvp, 2 * t, atol=1e-12)


def test_eigenvector_derivatives_at_a_tie_are_nan_or_exact():
    # smooth functions of the factors at an exact tie (the polar factor U Vh, U s^3 Vh =
    # a a^T a, V w^3 V^T = sym(a)^3) had finite wrong gradients (1/gap taken as 0): nan now
    weights = np.random.default_rng(0).standard_normal((3, 3))

    def polar(x):
        u, _, vh = la.svd(x)
        return fnp.sum(weights * (u @ vh))

    def cube(x):
        u, s, vh = la.svd(x)
        return fnp.sum(weights * ((u * s**3) @ vh))

    def sym_cube(x):
        w, v = la.eigh(x)
        return fnp.sum(weights * ((v * w**3) @ v.T))

    def linear(x):  # sym(a), at a tie at eigenvalue 0, where the cotangent of V is 0
        w, v = la.eigh(x)
        return fnp.sum(weights * ((v * w) @ v.T))

    for f, a in [
        (polar, np.diag([2.0, 2.0, 1.0])),
        (cube, np.diag([2.0, 2.0, 1.0])),
        (sym_cube, np.diag([1.0, 1.0, 3.0])),
        (linear, np.diag([0.0, 0.0, 1.0])),
    ]:
        assert np.isnan(grad(f)(a)).any()
        assert np.isnan(jvp(f, (a,), (weights,))[1])
    # distinct singular values: exact (the control)
    a = np.diag([3.0, 2.0, 1.0])
    np.testing.assert_allclose(
        grad(polar)(a), _fd_grad(lambda x: np.sum(weights * _polar(x)), a), atol=1e-8
    )
    # forward: a simple eigenvector next to a tie, and a direction that does not couple the
    # tie (diagonal at a diagonal a), keep their exact derivatives
    q = _rotation()
    b = q @ np.diag([1.0, 1.0, 3.0]) @ q.T
    t = np.random.default_rng(1).standard_normal((3, 3))
    _, dv = jvp(lambda x: la.eigh(x)[1][:, 2], (b,), (t,))
    v = lambda x: np.linalg.eigh(x)[1][:, 2] * np.sign(np.linalg.eigh(x)[1][0, 2])
    h = 1e-6
    fd = (v(b + h * np.tril(t)) - v(b - h * np.tril(t))) / (2 * h)  # eigh reads the lower triangle
    np.testing.assert_allclose(dv * np.sign(np.linalg.eigh(b)[1][0, 2]), fd, atol=1e-7)
    d = np.diag([1.0, 2.0, 3.0])
    _, dc = jvp(sym_cube, (np.diag([1.0, 1.0, 3.0]),), (d,))
    np.testing.assert_allclose(dc, np.sum(weights * np.diag([3.0, 6.0, 27.0 * 3])), atol=1e-12)


def _polar(x):
    u, _, vh = np.linalg.svd(x)
    return u @ vh


@pytest.mark.parametrize(
    "a",
    [_rotation(), _rotation()[:, :2], 2.0 * np.eye(3)],
    ids=["orthogonal", "orthonormal-columns", "scaled-identity"],
)
def test_singular_value_gradients_at_repeated_singular_values(a):
    u, _s, vh = np.linalg.svd(a, full_matrices=False)
    # sum(s**2) = ||a||_F^2
    np.testing.assert_allclose(
        grad(lambda x: fnp.sum(la.svd(x, compute_uv=False) ** 2))(a), 2 * a, atol=1e-12
    )
    np.testing.assert_allclose(jacfwd(lambda x: fnp.sum(la.svdvals(x) ** 2))(a), 2 * a, atol=1e-12)
    # the nuclear norm: gradient U Vh
    np.testing.assert_allclose(grad(lambda x: la.norm(x, "nuc"))(a), u @ vh, atol=1e-12)


# --- norms ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ord_", [None, 2, 3, 0.5, -1.5])
def test_norm_gradient_at_zero_is_zero(ord_):
    z = np.zeros(3)
    np.testing.assert_array_equal(grad(lambda x: la.norm(x, ord_))(z), np.zeros(3))
    _, t = jvp(lambda x: la.norm(x, ord_), (z,), (np.ones(3),))
    assert t == 0.0


def test_norm_gradients_closed_form():
    x = np.array([3.0, -4.0])
    np.testing.assert_allclose(grad(la.norm)(x), x / 5.0)
    np.testing.assert_allclose(grad(lambda v: la.norm(v, 1))(x), [1.0, -1.0])
    np.testing.assert_allclose(grad(lambda v: la.norm(v, np.inf))(x), [0.0, -1.0])
    np.testing.assert_allclose(
        grad(lambda v: la.norm(v, 3))(x),
        np.sign(x) * (np.abs(x) / np.sum(np.abs(x) ** 3) ** (1 / 3)) ** 2,
    )
    np.testing.assert_array_equal(grad(lambda v: la.norm(v, 0))(x), [0.0, 0.0])
    np.testing.assert_allclose(
        grad(lambda a: la.norm(a, "fro"))(np.zeros((2, 2))), np.zeros((2, 2))
    )
    np.testing.assert_allclose(grad(lambda a: la.norm(a, "fro"))(A), A / np.linalg.norm(A))


NORM_INPUTS = {
    "int-vector": np.array([3, -4]),
    "int-matrix": np.array([[3, -4], [1, 2]]),
    "int8-stack": np.arange(24, dtype=np.int8).reshape(2, 3, 4) - 5,
    "bool-vector": np.array([True, True]),
    "bool-matrix": np.array([[True, False], [True, True]]),
    "uint8": np.array([1, 2], dtype=np.uint8),
    "float16": np.array([1.0, 2.0], dtype=np.float16),
    "list": [3.0, 4.0],
    "nested-list": [[2.0, 1.0], [1.0, 3.0]],
    "int-list": [[1, 2], [3, 4]],
    "float": 3.0,
    "int": 3,
    "bool": True,
    "empty": np.zeros(0),
    "empty-3x0": np.zeros((3, 0)),
    "empty-0x3": np.zeros((0, 3)),
    "empty-0x0": np.zeros((0, 0)),
    "empty-stack": np.zeros((2, 3, 0)),
}
VECTOR_ORDS = [None, 1, -1, 2, -2, np.inf, -np.inf, 0, 3, 0.5, "fro", "nuc"]


def _same_as_numpy(ours, theirs):
    """ours() equals theirs() in dtype, shape and value, or both raise the same kind of error."""
    try:
        expected = theirs()
    except Exception as error:
        with pytest.raises(type(error)):
            ours()
        return
    got = ours()
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert np.shape(got) == np.shape(expected)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # NumPy's, and so ours
@pytest.mark.parametrize("name", NORM_INPUTS)
def test_norms_of_integer_bool_list_scalar_and_empty_input_are_numpys(name):
    # NumPy casts integer and bool input to float64 before any formula, reads lists and
    # numbers as arrays, and gives 0 for the max-based orders over no entries
    x = NORM_INPUTS[name]
    nd = np.ndim(x)
    axes = [None, *range(-nd, nd), *((i, j) for i in range(nd) for j in range(nd) if i != j)]
    for ord_ in VECTOR_ORDS:
        for axis in axes:
            for keepdims in (False, True):
                _same_as_numpy(
                    lambda: la.norm(x, ord_, axis, keepdims),
                    lambda: np.linalg.norm(x, ord_, axis, keepdims),
                )
    for ord_ in [2, 1, np.inf, -np.inf, 0, 3]:
        for axis in [None, *range(nd)]:
            _same_as_numpy(
                lambda: la.vector_norm(x, ord=ord_, axis=axis),
                lambda: np.linalg.vector_norm(x, ord=ord_, axis=axis),
            )
    if nd >= 2:
        for ord_ in ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]:
            _same_as_numpy(
                lambda: la.matrix_norm(x, ord=ord_), lambda: np.linalg.matrix_norm(x, ord=ord_)
            )


def test_norms_of_integer_input_are_float64_traced_too_and_empty_ones_have_empty_gradients():
    ints = np.array([[3, -4], [1, 2]])
    np.testing.assert_array_equal(fgrad.vmap(lambda v: la.norm(v, 1))(ints), [7.0, 3.0])
    assert fgrad.vmap(lambda v: la.norm(v, 1))(ints).dtype == np.float64
    assert fgrad.jit(la.norm)(np.array([True, True])) == np.sqrt(2.0)
    for ord_, x in [(np.inf, np.zeros(0)), (2, np.zeros((3, 0))), (1, np.zeros((3, 0)))]:
        g = grad(lambda v: la.norm(v, ord_))(x)
        assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_array_equal(fgrad.vmap(lambda v: la.norm(v, np.inf))(np.zeros((2, 0))), 0.0)
    # lists of traced values
    assert grad(lambda v: la.norm([v, 2 * v]))(1.0) == pytest.approx(np.sqrt(5.0))
    assert grad(lambda v: la.matrix_norm([[v, 2 * v], [0.0, v]]))(1.0) == pytest.approx(
        np.sqrt(6.0)
    )
    # ties of the max-based orders share the gradient among the entries alone, as before
    np.testing.assert_array_equal(grad(lambda v: la.norm(v, np.inf))(np.zeros(2)), [0.5, 0.5])


@pytest.mark.parametrize(
    "ord, zero, documented",
    [
        (None, np.zeros(3), np.zeros(3)),
        (3, np.zeros(3), np.zeros(3)),
        (1, np.zeros(3), np.ones(3)),
        (np.inf, np.zeros(3), np.full(3, 1 / 3)),
        ("fro", np.zeros((3, 3)), np.zeros((3, 3))),
        (1, np.zeros((3, 3)), np.full((3, 3), 1 / 3)),
        (np.inf, np.zeros((3, 3)), np.full((3, 3), 1 / 3)),
        (2, np.zeros((3, 3)), np.eye(3) / 3),
        ("nuc", np.zeros((3, 3)), np.eye(3)),
    ],
)
def test_norm_gradient_at_zero_is_the_documented_subgradient(ord, zero, documented):
    # the norm docstring's table; each is a subgradient: <g, h> <= norm(h) for every h
    def f(x):
        return la.norm(x, ord)

    for g in (grad(f)(zero), jacfwd(f)(zero), jit(grad(f))(zero), vmap(grad(f))(zero[None])[0]):
        np.testing.assert_allclose(g, documented, atol=1e-15)
    for h in np.random.default_rng(0).standard_normal((20, *zero.shape)):
        assert np.sum(documented * h) <= np.linalg.norm(h, ord) + 1e-12


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond_of_singular_matrices_is_inf_as_numpys(p):
    # NumPy's inverse does not raise at a singular matrix, and its cond turns nan into inf
    # (NumPy's own 'nuc' raises "SVD did not converge" there, from the inverse's nans: inf too)
    stack = np.stack([np.ones((2, 2)), 2 * np.eye(2), np.zeros((2, 2))])
    with np.errstate(all="ignore"):
        regular = np.linalg.cond(stack[1], p)
        expected = np.linalg.cond(stack, p) if p in (None, 2, -2) else [np.inf, regular, np.inf]
        for cond in [la.cond, fgrad.jit(la.cond, static_argnums=1)]:
            got = cond(stack, p)
            assert got.dtype == np.float64
            np.testing.assert_array_equal(got, expected)
            one = cond(np.ones((2, 2), np.float32), p)
            assert one == expected[0] and np.asarray(one).dtype == np.float32
        np.testing.assert_array_equal(fgrad.vmap(lambda m: la.cond(m, p))(stack), expected)
        # nan input stays nan, or raises NumPy's error
        _same_as_numpy(
            lambda: la.cond(np.array([[np.nan, 1.0], [1.0, 1.0]]), p),
            lambda: np.linalg.cond(np.array([[np.nan, 1.0], [1.0, 1.0]]), p),
        )
        # where the matrix is regular, the value and gradient are unchanged
        g = grad(lambda m: fnp.sum(la.cond(m, p)))(stack[1:2])
        assert np.all(np.isfinite(g))


@pytest.mark.parametrize("p", [None, 2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond_has_a_nan_derivative_at_singular_matrices_as_jax(p):
    # cond is inf there with no derivative: a 0 (of a constant inf) would be a stationary point
    # (p None and 2 divide by the smallest singular value 0: inf and nan, also no number)
    stack = np.stack([np.ones((2, 2)), A[:2, :2], np.zeros((2, 2))])
    weights = np.array([1.0, 2.0, 3.0])

    def f(m):
        return fnp.sum(weights * la.cond(m, p))

    with np.errstate(all="ignore"):
        for g in [grad(f), jit(grad(f))]:
            got = g(stack)
            assert not np.isfinite(got[0]).any() and not np.isfinite(got[2]).any()
            # the regular matrix's gradient is its own, to the bit
            np.testing.assert_array_equal(got[1], grad(lambda m: 2.0 * la.cond(m, p))(A[:2, :2]))
        tangent = np.stack([np.eye(2)] * 3)
        _, t = jvp(lambda m: la.cond(m, p), (stack,), (tangent,))
        assert not np.isfinite(t[0]) and not np.isfinite(t[2])
        assert t[1] == jvp(lambda m: la.cond(m, p), (A[:2, :2],), (np.eye(2),))[1]
        rows = vmap(grad(lambda m: la.cond(m, p)))(stack)
        assert not np.isfinite(rows[0]).any() and np.isfinite(rows[1]).all()
        regular = np.linalg.cond(A[:2, :2], p)
        np.testing.assert_array_equal(la.cond(stack, p), [np.inf, regular, np.inf])
    check_grads(lambda m: la.cond(m, p), (A,), order=2)


def test_cond_of_empty_matrices_raises_numpys_error():
    for empty in [np.zeros((0, 0)), np.zeros((2, 0, 0))]:
        with pytest.raises(np.linalg.LinAlgError, match=r"'x' has shape .*not defined on empty"):
            la.cond(empty)


def test_norm_refuses_bad_orders_and_axes():
    with pytest.raises(ValueError, match="invalid norm order 'nuc' for vectors"):
        la.norm(np.ones(3), "nuc")
    with pytest.raises(ValueError, match="for matrices"):
        la.norm(np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="duplicate axes"):
        la.norm(np.ones((2, 2)), axis=(0, -2))


# --- derivatives that do not exist raise, and shapes are checked ----------------------------------


def test_qr_derivatives_at_a_rank_deficient_matrix_are_nan():
    """R has a zero on its diagonal (ones((4, 3)) has rank 1): Q has no derivative, and the
    rules' solve with R raised NumPy's bare "Singular matrix". Now nan, as JAX, in every mode;
    a regular matrix beside it in a batch keeps its own derivative."""
    f = lambda x: fnp.sum(fnp.linalg.qr(x)[0])
    singular, regular = np.ones((4, 3)), np.random.default_rng(1).normal(size=(4, 3))
    for d in (fgrad.grad(f), fgrad.jacfwd(f), fgrad.jit(fgrad.grad(f))):
        assert np.isnan(d(singular)).all()
    rows = fgrad.vmap(fgrad.grad(f))(np.stack([singular, regular]))
    assert np.isnan(rows[0]).all()
    np.testing.assert_array_equal(rows[1], fgrad.grad(f)(regular))


def _H(x):
    return fnp.conj(fnp.swapaxes(x, -1, -2))


def _shape(a):
    return np.shape(primal(a))


def _full_svd_functions(a):
    """Functions of svd(a) (full_matrices=True, non-square) that a determines: s, |U1|^2 and
    |Vh1|^2 (U1, Vh1 the first min(m, n) vectors: a sign or phase each), U1 diag(s) Vh1, and
    the projectors onto the extra columns of U and of V (any basis of the complement)."""
    k = min(_shape(a)[-2:])
    u, s, vh = la.svd(a)
    u1, vh1 = u[..., :, :k], vh[..., :k, :]
    u2, v2 = u[..., :, k:], _H(vh[..., k:, :])
    usv = fnp.matmul(u1 * s[..., None, :], vh1)
    return s, fnp.abs(u1) ** 2, fnp.abs(vh1) ** 2, usv, u2 @ _H(u2), v2 @ _H(v2)


def _complete_qr_functions(a):
    """R, Q's first n columns (LAPACK's real diagonal of R fixes them) and the projector onto
    the extra columns of the complete Q (any basis of the complement)."""
    n = _shape(a)[-1]
    q, r = la.qr(a, mode="complete")
    return r, q[..., :, :n], q[..., :, n:] @ _H(q[..., :, n:])


def _real_parts(f):
    """f of x + i y, as the real and imaginary parts of its results (finite differences in x
    and y check complex input under JAX's convention)."""
    return lambda x, y: tuple(p for o in f(x + 1j * y) for p in (fnp.real(o), fnp.imag(o)))


@pytest.mark.parametrize("functions", [_full_svd_functions, _complete_qr_functions])
@pytest.mark.parametrize("shape", [(4, 2), (2, 4), (2, 5, 3), (2, 3, 5)])
def test_full_svd_and_complete_qr_of_non_square_matrices_are_differentiable(functions, shape):
    """The extra columns of a full U, V or complete Q take the least rotation that keeps them
    orthogonal, so every function of the factors that a determines has its true derivative
    (checked against finite differences to order 2, real and complex input): they raised
    ValueError ("the extra singular vectors are arbitrary"), even for s or R alone."""
    if functions is _complete_qr_functions and shape[-2] < shape[-1]:
        shape = shape[:-2] + shape[-2:][::-1]  # complete QR differs from reduced when tall
    r = np.random.default_rng(5)
    x, y = r.standard_normal(shape), r.standard_normal(shape)
    check_grads(functions, (x,), order=2)
    check_grads(_real_parts(functions), (x, y), order=2)


def test_full_svd_and_complete_qr_derivatives_of_one_output():
    """The probe's cases: the singular values alone, U of a wide matrix (determined), R alone
    and Q's first columns of a tall one, against central differences of NumPy's values."""
    wide = np.array([[1.0, 2.0, 0.5, -1.0], [0.3, -0.7, 2.0, 1.0]])
    cases = [
        (lambda a: fnp.sum(la.svd(a)[1]), lambda a: np.linalg.svd(a)[1].sum(), wide),
        (
            lambda a: fnp.sum(la.svd(a)[0] ** 3),
            lambda a: (np.linalg.svd(a)[0] ** 3).sum(),
            wide,
        ),
        (
            lambda a: fnp.sum(la.qr(a, mode="complete")[1]),
            lambda a: np.linalg.qr(a, mode="complete")[1].sum(),
            wide.T,
        ),
        (
            lambda a: fnp.sum(la.qr(a, mode="complete")[0][:, :2]),
            lambda a: np.linalg.qr(a, mode="complete")[0][:, :2].sum(),
            wide.T,
        ),
    ]
    eps = 1e-6
    for f, numpy_f, a in cases:
        numeric = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[i] = eps
            numeric[i] = (numpy_f(a + e) - numpy_f(a - e)) / (2 * eps)
        np.testing.assert_allclose(grad(f)(a), numeric, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(jacfwd(f)(a), numeric, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize(
    "f, numpy_f",
    [
        (la.svd, np.linalg.svd),
        (lambda m: la.svd(np.swapaxes(m, -1, -2)), lambda m: np.linalg.svd(np.swapaxes(m, -1, -2))),
        (lambda m: la.qr(m, mode="complete"), lambda m: np.linalg.qr(m, mode="complete")),
    ],
    ids=["svd-tall", "svd-wide", "qr-complete"],
)
def test_full_svd_and_complete_qr_of_non_square_matrices_under_vmap_and_jit(f, numpy_f):
    # no derivative is asked: NumPy's factors, bit for bit, batched and replayed
    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    expected = numpy_f(x)
    for got in [fgrad.vmap(f)(x), fgrad.jit(f)(x), fgrad.jit(fgrad.vmap(f))(x)]:
        assert type(got) is type(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and np.array_equal(g, e)
    replayed = fgrad.jit(f)
    replayed(x)
    for g, e in zip(replayed(x + 1), numpy_f(x + 1)):
        assert np.array_equal(g, e)

    # derivatives of quantities that do not depend on the complement's basis (R or s, and the
    # first columns of Q or U): jit replays them bit for bit, vmap is the loop, jacfwd jacrev
    def total(m):
        k = min(_shape(m)[-2:])
        factors = f(m)
        return fnp.sum(fnp.sin(factors[1])) + fnp.sum(factors[0][..., :, :k] ** 2)

    g = grad(total)
    jitted = fgrad.jit(g)
    for _ in range(3):  # recorded, replayed, compiled
        assert np.array_equal(jitted(x[0]), g(x[0]))
    np.testing.assert_allclose(
        fgrad.vmap(g)(x), np.stack([g(row) for row in x]), rtol=1e-13, atol=1e-14
    )
    np.testing.assert_allclose(jacfwd(total)(x[0]), fgrad.jacrev(total)(x[0]), rtol=1e-12)


def test_shape_errors_name_the_argument():
    with pytest.raises(np.linalg.LinAlgError, match=r"'a' has shape \(3, 2\)"):
        la.inv(np.ones((3, 2)))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        grad(lambda x: fnp.sum(la.inv(x)))(np.ones(3))
    with pytest.raises(ValueError, match="'b' has shape"):
        la.solve(A, np.ones(4))
    with pytest.raises(TypeError, match="integer"):
        la.matrix_power(A, 1.5)


def test_matrix_power_and_multi_dot():
    np.testing.assert_allclose(grad(lambda a: fnp.sum(la.matrix_power(a, 0)))(A), np.zeros((3, 3)))
    np.testing.assert_allclose(
        grad(lambda a: fnp.sum(la.matrix_power(a, 2)))(A),
        np.ones((3, 3)) @ A.T + A.T @ np.ones((3, 3)),
        rtol=1e-12,
    )
    x = np.array([1.0, 2.0, 3.0])
    assert np.ndim(la.multi_dot([x, A, x])) == 0
    np.testing.assert_allclose(grad(lambda v: la.multi_dot([v, A, v]))(x), (A + A.T) @ x)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, -3])
def test_matrix_power_multiplies_in_numpys_order_so_traced_values_are_its_bits(n):
    # n = 3 was a @ (a @ a), NumPy's (a @ a) @ a: jit differed from eager by 1 ulp
    m = np.array([[1.0, 0.2, 0.1], [0.3, 2.0, -0.4], [0.0, 0.5, 1.5]])
    want = np.linalg.matrix_power(m, n)
    np.testing.assert_array_equal(fgrad.jit(lambda a: np.linalg.matrix_power(a, n))(m), want)
    np.testing.assert_array_equal(la.matrix_power(m, n), want)


def test_results_are_numpy_result_types():
    _w, _v = la.eigh(SPD)
    r = la.eigh(SPD)
    assert r.eigenvalues is r[0] and type(r).__name__ == "EighResult"
    assert type(la.svd(A)).__name__ == "SVDResult" and type(la.qr(A)).__name__ == "QRResult"
    assert type(la.slogdet(A)).__name__ == "SlogdetResult"
    out = fgrad.grad(lambda a: fnp.sum(la.eigh(a).eigenvalues))(SPD)
    np.testing.assert_allclose(out, np.eye(3), atol=1e-12)


# --- every name's untraced value is NumPy's: dtype, shape and value, real and complex -------------


def _cnormal(r, shape):
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


_crng = np.random.default_rng(11)
CA = _cnormal(_crng, (3, 3)) + 3 * np.eye(3)
CHPD = CA @ CA.conj().T
CHERM = CA + CA.conj().T
CTALL = _cnormal(_crng, (4, 3))
CWIDE = _cnormal(_crng, (3, 4))
CBATCH = _cnormal(_crng, (2, 3, 3)) + 3 * np.eye(3)
BATCH = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
PAIRS = np.array([[0.5, -2.0, 0.3], [1.0, 0.2, -0.4], [0.1, 0.3, -1.0]])  # a complex pair

# (name, call): `call(L, x)` runs with L = np.linalg and with L = fnp.linalg; `x` is a dict of
# the inputs, real or complex. "phases" marks results whose columns NumPy fixes only up to a
# phase (a sign for real input): compared up to one phase per column.
VALUE_CASES = [
    ("inv", lambda L, x: L.inv(x["a"])),
    ("inv-batched", lambda L, x: L.inv(x["batch"])),
    ("det", lambda L, x: L.det(x["batch"])),
    ("slogdet", lambda L, x: L.slogdet(-x["a"])),
    ("solve-vector", lambda L, x: L.solve(x["a"], x["tall"][:3, 0])),
    ("solve-matrix", lambda L, x: L.solve(x["batch"], x["tall"][:3])),
    ("pinv-tall", lambda L, x: L.pinv(x["tall"])),
    ("pinv-wide-rtol", lambda L, x: L.pinv(x["wide"], rtol=0.5)),
    ("pinv-hermitian", lambda L, x: L.pinv(x["herm"], hermitian=True)),
    ("lstsq", lambda L, x: L.lstsq(x["tall"], x["tall"][:, :2] * x["tall"][:, 1:])),
    ("lstsq-vector", lambda L, x: L.lstsq(x["tall"], x["tall"][:, 0] + 1)),
    ("lstsq-wide", lambda L, x: L.lstsq(x["wide"], x["a"][:, 0])),
    ("cholesky", lambda L, x: L.cholesky(x["hpd"])),
    ("cholesky-upper", lambda L, x: L.cholesky(x["hpd"], upper=True)),
    ("qr-tall", lambda L, x: L.qr(x["tall"])),
    ("qr-wide", lambda L, x: L.qr(x["wide"])),
    ("qr-r", lambda L, x: L.qr(x["tall"], mode="r")),
    ("qr-complete", lambda L, x: L.qr(x["tall"], mode="complete")),
    ("eigh", lambda L, x: L.eigh(x["herm"]), "phases"),
    ("eigh-U", lambda L, x: L.eigh(x["herm"], UPLO="U"), "phases"),
    ("eigvalsh", lambda L, x: L.eigvalsh(x["herm"])),
    ("eig", lambda L, x: L.eig(x["a"]), "phases"),
    ("eig-pairs", lambda L, x: L.eig(PAIRS * (1 + 0j * x["a"][0, 0])), "phases"),
    ("eigvals", lambda L, x: L.eigvals(x["batch"])),
    ("svd", lambda L, x: L.svd(x["a"]), "phases"),
    ("svd-reduced", lambda L, x: L.svd(x["tall"], full_matrices=False), "phases"),
    ("svd-full-tall", lambda L, x: L.svd(x["tall"]), "phases"),
    ("svd-s", lambda L, x: L.svd(x["wide"], compute_uv=False)),
    ("svd-hermitian", lambda L, x: L.svd(x["herm"], hermitian=True), "phases"),
    ("svd-hermitian-s", lambda L, x: L.svd(x["herm"], compute_uv=False, hermitian=True)),
    ("svdvals", lambda L, x: L.svdvals(x["batch"])),
    ("norm", lambda L, x: L.norm(x["tall"])),
    ("norm-keepdims", lambda L, x: L.norm(x["batch"], keepdims=True)),
    ("norm-vector", lambda L, x: L.norm(x["tall"][0])),
    ("norm-2-axis", lambda L, x: L.norm(x["tall"], 2, axis=0)),
    ("norm-3", lambda L, x: L.norm(x["tall"], 3, axis=1)),
    ("norm-0.5", lambda L, x: L.norm(x["tall"], 0.5, axis=0)),
    ("norm-inf", lambda L, x: L.norm(x["tall"][0], np.inf)),
    ("norm--inf", lambda L, x: L.norm(x["tall"][0], -np.inf)),
    ("norm-0", lambda L, x: L.norm(x["tall"], 0, axis=1)),
    ("norm-1", lambda L, x: L.norm(x["tall"][0], 1)),
    ("norm-fro-axes", lambda L, x: L.norm(x["batch"], "fro", axis=(2, 0))),
    ("norm-nuc", lambda L, x: L.norm(x["tall"], "nuc")),
    ("norm-2-matrix", lambda L, x: L.norm(x["tall"], 2)),
    ("norm--2-matrix", lambda L, x: L.norm(x["tall"], -2)),
    ("norm-1-matrix", lambda L, x: L.norm(x["tall"], 1, keepdims=True)),
    ("norm-inf-matrix", lambda L, x: L.norm(x["tall"], np.inf)),
    ("vector_norm", lambda L, x: L.vector_norm(x["batch"])),
    ("vector_norm-axes", lambda L, x: L.vector_norm(x["batch"], axis=(0, 2), ord=3)),
    ("matrix_norm", lambda L, x: L.matrix_norm(x["batch"], ord="nuc")),
    ("cond", lambda L, x: L.cond(x["a"])),
    ("cond--2", lambda L, x: L.cond(x["tall"], -2)),
    ("cond-fro", lambda L, x: L.cond(x["a"], "fro")),
    ("cond-1", lambda L, x: L.cond(x["a"], 1)),
    ("matrix_rank", lambda L, x: L.matrix_rank(x["tall"])),
    ("tensorinv", lambda L, x: L.tensorinv(np.kron(x["a"], x["a"]).reshape(3, 3, 9))),
    (
        "tensorsolve",
        lambda L, x: L.tensorsolve(np.kron(x["a"], x["a"]).reshape(9, 3, 3), x["a"].ravel()),
    ),
    ("matrix_power", lambda L, x: L.matrix_power(x["a"], -3)),
    ("matrix_power-0", lambda L, x: L.matrix_power(x["a"], 0)),
    ("multi_dot", lambda L, x: L.multi_dot([x["a"][0], x["tall"].T, x["tall"], x["a"][:, 0]])),
    ("matrix_transpose", lambda L, x: L.matrix_transpose(x["batch"])),
    ("matmul", lambda L, x: L.matmul(x["tall"], x["a"])),
    ("outer", lambda L, x: L.outer(x["a"][0], x["tall"][0])),
    ("tensordot", lambda L, x: L.tensordot(x["tall"], x["wide"], axes=1)),
    ("cross", lambda L, x: L.cross(x["a"], x["a"][::-1], axis=0)),
    ("trace", lambda L, x: L.trace(x["batch"], offset=1)),
    ("diagonal", lambda L, x: L.diagonal(x["batch"], offset=-1)),
    ("vecdot", lambda L, x: L.vecdot(x["tall"], x["a"][0])),
]

REAL_INPUTS = {"a": A, "batch": BATCH, "tall": TALL, "wide": WIDE, "hpd": SPD, "herm": SYM}
COMPLEX_INPUTS = {
    "a": CA,
    "batch": CBATCH,
    "tall": CTALL,
    "wide": CWIDE,
    "hpd": CHPD,
    "herm": CHERM,
}


def _leaves_of(result):
    return list(result) if isinstance(result, tuple) else [result]


def _phases(ours, theirs):
    """exp(i theta) per column with theirs = ours * exp(i theta) (a sign for real input)."""
    c = np.sum(np.conj(ours) * theirs, axis=-2)
    return c / np.abs(c)


def _assert_numpy_value(got, want, phases):
    assert type(got) is type(want), (type(got), type(want))
    got_leaves, want_leaves = _leaves_of(got), _leaves_of(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert np.result_type(g) == np.result_type(w) and np.shape(g) == np.shape(w)
    if phases:  # the first result with columns fixes the phases; the others follow them
        names = type(want)._fields
        vectors = [i for i, n in enumerate(names) if n in ("eigenvectors", "U")]
        p = _phases(got_leaves[vectors[0]], want_leaves[vectors[0]])
        got_leaves = list(got_leaves)
        got_leaves[vectors[0]] = got_leaves[vectors[0]] * p[..., None, :]
        if "Vh" in names:
            k = np.shape(want_leaves[2])[-2]
            got_leaves[2] = np.conj(p[..., :k, None]) * got_leaves[2]
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.parametrize("case", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_untraced_values_are_numpys_dtype_shape_and_value(case, kind):
    _name, call, *phases = case
    x = REAL_INPUTS if kind == "real" else COMPLEX_INPUTS
    _assert_numpy_value(call(fnp.linalg, x), call(np.linalg, x), bool(phases))


# --- tracing never changes a value ----------------------------------------------------------------

TABLE = load(["linalg", "linalg_complex"])[0]


def _plain_leaves(tree):
    return [np.asarray(primal(leaf)) for leaf in tree_flatten(tree)[0]]


def _assert_identical(got, want, what):
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g.dtype}{g.shape}"
        np.testing.assert_array_equal(g, w, err_msg=what)


TRACED = [pytest.param(r, id=r.id) for r in TABLE]


@pytest.mark.parametrize("precision", [np.float64, np.float32])
@pytest.mark.parametrize("row", TRACED)
def test_traced_value_is_the_untraced_value_exactly(row, precision):
    """Under vjp, jvp and grad of a sum, every row's value has the untraced value's dtype,
    shape and bits, for real and complex input, in double and single precision."""
    args = row.args(precision)
    want = _plain_leaves(row.fn(*args))
    _assert_identical(_plain_leaves(vjp(row.fn, *args)[0]), want, "vjp")
    tangents = tuple(np.ones_like(a) for a in args)
    _assert_identical(_plain_leaves(jvp(row.fn, args, tangents)[0]), want, "jvp")
    seen = []

    def total(*xs):
        leaves = tree_flatten(row.fn(*xs))[0]
        seen.append([np.asarray(primal(leaf)) for leaf in leaves])
        return sum(
            fnp.sum(fnp.real(leaf)) for leaf in leaves if np.result_type(primal(leaf)).kind in "fc"
        )

    grad(total, argnums=tuple(range(len(args))))(*args)
    _assert_identical(seen[0], want, "grad of a sum")


@pytest.mark.parametrize(
    "row", [r for r in TABLE if np.iscomplexobj(r.args()[0])], ids=lambda r: r.id
)
def test_complex_rows_keep_single_precision(row):
    """complex64 in: complex64 or float32 values, complex64 cotangents, tangents of the
    values' dtypes (the float32 run of the table, for complex input)."""
    args = row.args(np.float32)
    assert all(a.dtype == np.complex64 for a in args)
    out, f_vjp = vjp(row.fn, *args)
    leaves = tree_flatten(out)[0]
    for leaf in leaves:
        assert np.result_type(leaf) in (np.complex64, np.float32), np.result_type(leaf)
    cts = f_vjp(fgrad.tree_util.tree_map(np.ones_like, out))
    for c, a in zip(cts, args):
        assert np.result_type(c) == np.complex64 and np.shape(c) == np.shape(a)
    _, t_out = jvp(row.fn, args, tuple(np.ones_like(a) for a in args))
    for t, leaf in zip(tree_flatten(t_out)[0], leaves):
        assert np.result_type(t) == np.result_type(leaf) and np.shape(t) == np.shape(leaf)


# --- complex input --------------------------------------------------------------------------------


def test_singular_values_of_a_complex_matrix_are_real_under_every_transform():
    assert vjp(la.svdvals, CTALL)[0].dtype == np.float64
    assert jvp(la.svdvals, (CTALL,), (CTALL,))[1].dtype == np.float64
    assert vjp(lambda a: la.svd(a, full_matrices=False), CTALL)[0].S.dtype == np.float64
    # sum(s^2) = |a|_F^2, whose gradient (JAX's convention) is 2 conj(a)
    g = grad(lambda a: fnp.sum(la.svd(a, compute_uv=False) ** 2))(CTALL)
    np.testing.assert_allclose(g, 2 * np.conj(CTALL), rtol=1e-12)
    # the nuclear norm: conj(U Vh)
    u, _, vh = np.linalg.svd(CTALL, full_matrices=False)
    np.testing.assert_allclose(
        grad(lambda a: la.norm(a, "nuc"))(CTALL), np.conj(u @ vh), rtol=1e-10
    )


def test_hermitian_decompositions_read_one_triangle_and_give_real_eigenvalues():
    w, v = np.linalg.eigh(CHERM)
    assert la.eigvalsh(CHERM).dtype == np.float64
    np.testing.assert_array_equal(la.eigvalsh(CHERM), np.linalg.eigvalsh(CHERM))
    np.testing.assert_array_equal(la.eigh(CHERM).eigenvalues, w)
    np.testing.assert_allclose(la.cholesky(CHPD), np.linalg.cholesky(CHPD), rtol=1e-12)
    # a non-Hermitian input with a complex diagonal: NumPy's values, bit for bit (LAPACK reads
    # the UPLO triangle and the real part of the diagonal)
    noise = _cnormal(_crng, (3, 3))
    for uplo, lower in (("L", True), ("U", False)):
        a = CHERM + (np.triu(noise, 1) if lower else np.tril(noise, -1)) + 0.5j * np.eye(3)
        p = CHPD + (np.triu(noise, 1) if lower else np.tril(noise, -1)) - 0.3j * np.eye(3)
        np.testing.assert_array_equal(la.eigvalsh(a, UPLO=uplo), np.linalg.eigvalsh(a, UPLO=uplo))
        for ours, numpys in zip(la.eigh(a, UPLO=uplo), np.linalg.eigh(a, UPLO=uplo)):
            np.testing.assert_array_equal(ours, numpys)
        np.testing.assert_array_equal(
            la.cholesky(p, upper=not lower), np.linalg.cholesky(p, upper=not lower)
        )
        np.testing.assert_array_equal(
            la.pinv(a, hermitian=True),  # the lower triangle
            np.linalg.pinv(a, hermitian=True),
        )
        # the gradient of the largest eigenvalue is conj(v v^H) on the Hermitian matrix read,
        # read back to a's triangle: 0 elsewhere, and on the imaginary part of the diagonal
        g = grad(lambda x, u=uplo: la.eigvalsh(x, UPLO=u)[-1])(a)
        np.testing.assert_allclose(
            g, _read_from(np.outer(v[:, -1], v[:, -1].conj()).T, lower), atol=1e-12
        )


def test_norms_and_residuals_of_complex_input_are_real():
    z = CTALL[:, 0]
    assert la.norm(z).dtype == np.float64 and la.norm(CTALL, "fro").dtype == np.float64
    np.testing.assert_array_equal(la.norm(z), np.linalg.norm(z))
    np.testing.assert_array_equal(la.norm(CTALL, axis=0), np.linalg.norm(CTALL, axis=0))
    np.testing.assert_allclose(grad(la.norm)(z), np.conj(z) / np.linalg.norm(z), rtol=1e-12)
    b = _cnormal(np.random.default_rng(3), 4)  # not in the column space of CTALL
    _, res, _, s = la.lstsq(CTALL, b)
    _, res0, _, _s0 = np.linalg.lstsq(CTALL, b)
    assert res0 > 0.1
    assert res.dtype == s.dtype == np.float64
    np.testing.assert_allclose(res, res0, rtol=1e-10)
    _, res_wide, _, _ = la.lstsq(CWIDE, z[:3])
    assert res_wide.dtype == np.float64 and res_wide.shape == (0,)


def test_slogdet_of_complex_input_closed_form():
    # logabsdet = Re(log det), so its gradient (JAX's convention) is (log det)' = inv(a).T
    np.testing.assert_allclose(
        grad(lambda a: la.slogdet(a).logabsdet)(CA), np.linalg.inv(CA).T, rtol=1e-12
    )
    # d sign = i Im(tr(inv(a) da)) sign
    h = _cnormal(_crng, (3, 3))
    (sign, _), (dsign, dlog) = jvp(la.slogdet, (CA,), (h,))
    tau = np.trace(np.linalg.solve(CA, h))
    np.testing.assert_allclose(dsign, 1j * tau.imag * sign, rtol=1e-12)
    np.testing.assert_allclose(dlog, tau.real, rtol=1e-12)
    assert dlog.dtype == np.float64 and dsign.dtype == np.complex128


def test_det_of_a_singular_complex_matrix_has_the_cofactor_gradient():
    a = CA.copy()
    a[2] = a[0] + (0.5 - 1j) * a[1]
    cof = np.array(
        [
            [np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(grad(la.det, holomorphic=True)(a), cof, atol=1e-12)
    check_grads(la.det, (a,), order=2)


# --- eig, eigvals ---------------------------------------------------------------------------------


def test_eig_results_follow_numpy_dtypes():
    real_eigenvalues = SYM + 0.1 * np.triu(np.ones((3, 3)), 1)
    for a, dtype in [
        (PAIRS, np.complex128),
        (real_eigenvalues, np.float64),
        (CA, np.complex128),
        (PAIRS.astype(np.float32), np.complex64),
    ]:
        w, v = la.eig(a)
        assert w.dtype == v.dtype == dtype == np.linalg.eig(a).eigenvalues.dtype
        assert la.eigvals(a).dtype == np.linalg.eigvals(a).dtype
        # traced: the same dtype, and a real input gets a real gradient
        g = grad(lambda x: fnp.sum(fnp.real(la.eig(x)[0]) ** 2 + fnp.abs(la.eig(x)[1][0])))(a)
        assert g.dtype == a.dtype


def test_eigenvalue_derivative_is_the_left_right_eigenvector_formula():
    # dw_i = (u_i^T da v_i) / (u_i^T v_i) with u_i a left eigenvector (a row of inv(V))
    _w, v = np.linalg.eig(CA)
    left = np.linalg.inv(v)
    g = grad(lambda a: fnp.real(la.eigvals(a)[1]), holomorphic=False)(CA)
    np.testing.assert_allclose(g, np.outer(left[1], v[:, 1]), rtol=1e-10)
    h = _cnormal(_crng, (3, 3))
    np.testing.assert_allclose(jvp(la.eigvals, (CA,), (h,))[1], np.diag(left @ h @ v), rtol=1e-10)


def test_eig_eigenvectors_keep_lapacks_normalization():
    """The tangent of each eigenvector keeps it of unit norm with its largest entry real, as
    LAPACK normalizes it, so it matches central differences of NumPy's eigenvectors."""
    h = _cnormal(_crng, (3, 3))
    (_w, v), (_dw, dv) = jvp(la.eig, (CA,), (h,))
    assert np.allclose(np.real(np.sum(np.conj(v) * dv, axis=0)), 0, atol=1e-12)
    k = np.argmax(np.abs(v), axis=0)
    assert np.allclose(np.imag(dv[k, np.arange(3)]), 0, atol=1e-12)
    eps = 1e-6
    numerical = (np.linalg.eig(CA + eps * h)[1] - np.linalg.eig(CA - eps * h)[1]) / (2 * eps)
    np.testing.assert_allclose(dv, numerical, atol=1e-7)


def _hessians_in_four_orders_match_finite_differences(f, x):
    """f's Hessian by jacfwd/jacrev in all four orders against central differences of its
    gradient: jacfwd inside jacrev gives the reverse rules a batch of tangents next to
    unbatched operands, whose cotangents must be summed back to the operands' shapes."""
    jf, jr = fgrad.jacfwd, fgrad.jacrev
    g, h = jr(f), 1e-5
    fd = np.stack([(g(x + h * e) - g(x - h * e)) / (2 * h) for e in np.eye(x.size)], -1)
    for name, second in [
        ("ff", jf(jf(f))),
        ("fr", jf(jr(f))),
        ("rf", jr(jf(f))),
        ("rr", jr(jr(f))),
    ]:
        np.testing.assert_allclose(second(x), fd, rtol=1e-5, atol=1e-6, err_msg=name)


def _matrix_and_columns(x):
    return fnp.reshape(x[:9], (3, 3)), fnp.reshape(x[9:], (3, 2))


_AB = np.concatenate([A.ravel(), TALL[:3, :2].ravel()])
SECOND_ORDER = {  # name: (f of a flat vector, the point)
    "solve": (lambda x: fnp.sum(fnp.sin(la.solve(*_matrix_and_columns(x)))), _AB),
    "lstsq": (
        lambda x: fnp.sum(fnp.sin(la.lstsq(fnp.reshape(x[:12], (4, 3)), x[12:])[0])),
        np.concatenate([TALL.ravel(), np.arange(1.0, 5.0)]),
    ),
    "tensorsolve": (
        lambda x: fnp.sum(
            fnp.sin(la.tensorsolve(fnp.reshape(x[:16], (2, 2, 4)), fnp.reshape(x[16:], (2, 2))))
        ),
        np.concatenate([(np.eye(4) * 3 + A[0, 0]).ravel(), A[1, :2], A[2, :2]]),
    ),
    "multi_dot": (
        lambda x: fnp.sum(fnp.sin(la.multi_dot([x[:3], fnp.reshape(x[3:12], (3, 3)), x[12:]]))),
        np.concatenate([A[0], A.ravel(), A[:, 1]]),
    ),
    "inv": (lambda x: fnp.sum(fnp.sin(la.inv(fnp.reshape(x, (3, 3))))), A.ravel()),
    "pinv": (lambda x: fnp.sum(fnp.sin(la.pinv(fnp.reshape(x, (4, 3))))), TALL.ravel()),
    "det": (lambda x: fnp.sin(la.det(fnp.reshape(x, (3, 3)))), A.ravel()),
    "slogdet": (lambda x: la.slogdet(fnp.reshape(x, (3, 3)))[1] ** 2, A.ravel()),
    "cholesky": (lambda x: fnp.sum(fnp.sin(la.cholesky(fnp.reshape(x, (3, 3))))), SPD.ravel()),
    "qr": (lambda x: fnp.sum(fnp.sin(la.qr(fnp.reshape(x, (4, 3)))[1])), TALL.ravel()),
    "eigh": (lambda x: fnp.sum(fnp.sin(la.eigh(fnp.reshape(x, (3, 3)))[0])), SYM.ravel()),
    "eigvals": (lambda x: fnp.sum(fnp.real(la.eigvals(fnp.reshape(x, (3, 3))) ** 2)), A.ravel()),
    "svd": (
        lambda x: fnp.sum(fnp.sin(la.svd(fnp.reshape(x, (4, 3)), full_matrices=False)[1])),
        TALL.ravel(),
    ),
    "norm 2": (lambda x: la.norm(fnp.reshape(x, (4, 3)), 2), TALL.ravel()),
    "vector_norm": (
        lambda x: la.vector_norm(fnp.reshape(x, (4, 3)), ord=3, axis=0)[1],
        TALL.ravel(),
    ),
    "matrix_power": (
        lambda x: fnp.sum(fnp.sin(la.matrix_power(fnp.reshape(x, (3, 3)), -2))),
        A.ravel(),
    ),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivatives_in_every_order_of_forward_and_reverse(name):
    _hessians_in_four_orders_match_finite_differences(*SECOND_ORDER[name])


def test_multi_dot_out_writes_on_plain_arrays_and_is_refused_on_traced_ones():
    # out= was refused even with nothing traced, by a message saying "inside a transform"
    arrays = [A, TALL.T, TALL]
    want = np.linalg.multi_dot(arrays)
    out = np.empty((3, 3))
    got = la.multi_dot(arrays, out=out)
    assert got is out
    np.testing.assert_array_equal(out, want)
    with pytest.raises(
        TypeError, match=r"traced value .* keyword argument out.*multi_dot\(arrays\)"
    ):
        grad(lambda a: fnp.sum(la.multi_dot([a, TALL.T, TALL], out=np.empty((3, 3)))))(A)


@pytest.mark.parametrize("axis", [5, 2, -3])
def test_linalg_cross_names_an_axis_out_of_bounds(axis):
    # shape(x)[axis] raised a bare "IndexError: tuple index out of range" (NumPy's own message)
    a = np.ones((2, 3))
    with pytest.raises(IndexError):
        np.linalg.cross(a, a, axis=axis)
    message = rf"linalg.cross: axis {axis} .* 'x1' \(shape \(2, 3\) and dtype float64\).*\[-2, 2\)"
    with pytest.raises(np.exceptions.AxisError, match=message):
        la.cross(a, a, axis=axis)
    with pytest.raises(np.exceptions.AxisError, match=message):
        grad(lambda x: fnp.sum(la.cross(x, a, axis=axis)))(a)


def test_linalg_cross_of_a_scalar_says_it_needs_an_axis_of_length_3():
    # the axis check said "pass an axis in [0, 0)"; NumPy raises a bare IndexError
    with pytest.raises(IndexError, match=r"'x1' is a scalar \(shape \(\) .* axis of length 3"):
        la.cross(np.float64(1.0), np.ones(3))


@pytest.mark.parametrize(
    "a_shape,b_shape", [((2, 3, 4), (4, 5)), ((), (2, 2)), ((3,), ()), ((2, 3), (4, 3, 5))]
)
def test_multi_dot_of_two_arrays_of_any_ndim_is_numpys_dot(a_shape, b_shape):
    # NumPy's multi_dot of exactly two arrays returns their dot; fgrad refused non-2-D ones
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=a_shape), rng.normal(size=b_shape)
    want = np.linalg.multi_dot([a, b])
    got = la.multi_dot([a, b])
    assert np.shape(got) == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(jit(lambda a, b: la.multi_dot([a, b]))(a, b), want, rtol=1e-13)
    check_grads(lambda a, b: la.multi_dot([a, b]), (a, b), order=2)
    three = [a, b, np.ones((2, 2))]  # (more than two: NumPy's 2-D chain, refused as NumPy)
    with pytest.raises(ValueError):
        np.linalg.multi_dot(three)
    with pytest.raises(ValueError, match=r"multi_dot: array \d has shape"):
        la.multi_dot(three)


def test_qr_raw_of_a_plain_array_is_numpys():
    """qr(a, mode='raw') was refused even for a plain array (NumPy and JAX return (h, tau));
    a traced one is refused naming its shape and dtype and the modes that differentiate."""
    a = np.random.default_rng(3).normal(size=(4, 3))
    for got, want in zip(fnp.linalg.qr(a, mode="raw"), np.linalg.qr(a, mode="raw")):
        assert got.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match=r"traced a \(shape \(4, 3\) and dtype float64\)"):
        grad(lambda a: fnp.sum(fnp.linalg.qr(a, mode="raw")[0]))(a)


def test_tensorsolve_of_a_system_that_is_not_square_names_tensorsolve_a_and_b():
    """The error named linalg.solve and a reshaped a ("argument 'a' has shape (3, 4)"); NumPy
    refuses the same system."""
    a, b = np.ones((3, 4)), np.ones(3)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.tensorsolve(a, b)
    said = (
        r"linalg.tensorsolve: a \(shape \(3, 4\) and dtype float64\) and b "
        r"\(shape \(3,\) and dtype float64\) do not make a square system.*hold "
        r"3.*hold 4.*b.shape \+ x.shape"
    )
    with pytest.raises(np.linalg.LinAlgError, match=said):
        fgrad.grad(lambda x: fnp.sum(fnp.linalg.tensorsolve(x, b)))(a)
