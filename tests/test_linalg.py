"""Closed-form values, derivatives and conventions of fgrad.numpy.linalg: NumPy's values for
plain inputs, gradients at singular matrices and repeated eigenvalues, the 2-norm at 0, and
the errors for derivatives that do not exist. (The gradient table, tests/rows_linalg.py,
checks every name against finite differences to order 2.)"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jvp
from fgrad.test_util import check_grads

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


# --- values are NumPy's --------------------------------------------------------------------

@pytest.mark.parametrize("name, ours, theirs", [
    ("inv", lambda: la.inv(A), lambda: np.linalg.inv(A)),
    ("det", lambda: la.det(A), lambda: np.linalg.det(A)),
    ("slogdet", lambda: la.slogdet(-A), lambda: np.linalg.slogdet(-A)),
    ("solve-vector", lambda: la.solve(np.stack([A, SPD]), A[0]),
     lambda: np.linalg.solve(np.stack([A, SPD]), A[0])),
    ("solve-matrix", lambda: la.solve(A, TALL.T), lambda: np.linalg.solve(A, TALL.T)),
    ("pinv", lambda: la.pinv(TALL), lambda: np.linalg.pinv(TALL)),
    ("pinv-rtol", lambda: la.pinv(WIDE, rtol=0.5), lambda: np.linalg.pinv(WIDE, rtol=0.5)),
    ("cholesky", lambda: la.cholesky(SPD), lambda: np.linalg.cholesky(SPD)),
    ("cholesky-upper", lambda: la.cholesky(SPD, upper=True),
     lambda: np.linalg.cholesky(SPD, upper=True)),
    ("qr", lambda: la.qr(TALL), lambda: np.linalg.qr(TALL)),
    ("qr-wide", lambda: la.qr(WIDE), lambda: np.linalg.qr(WIDE)),
    ("qr-r", lambda: la.qr(TALL, mode="r"), lambda: np.linalg.qr(TALL, mode="r")),
    ("eigh", lambda: la.eigh(SPD), lambda: np.linalg.eigh(SPD)),
    ("eigvalsh", lambda: la.eigvalsh(SPD), lambda: np.linalg.eigvalsh(SPD)),
    ("svd", lambda: la.svd(TALL, full_matrices=False),
     lambda: np.linalg.svd(TALL, full_matrices=False)),
    ("svd-hermitian", lambda: _traced_value(lambda a: la.svd(a, hermitian=True), SYM),
     lambda: np.linalg.svd(SYM, hermitian=True)),
    ("svd-hermitian-s", lambda: _traced_value(lambda a: la.svdvals(a), SYM),
     lambda: np.linalg.svd(SYM, compute_uv=False, hermitian=True)),
    ("svd-traced", lambda: _traced_value(lambda a: la.svd(a, full_matrices=False), TALL),
     lambda: np.linalg.svd(TALL, full_matrices=False)),
    ("norm-3", lambda: la.norm(TALL, 3, axis=0), lambda: np.linalg.norm(TALL, 3, axis=0)),
    ("norm-nuc", lambda: la.norm(TALL, "nuc"), lambda: np.linalg.norm(TALL, "nuc")),
    ("norm-inf", lambda: la.norm(TALL, np.inf), lambda: np.linalg.norm(TALL, np.inf)),
    ("norm--1", lambda: la.norm(TALL, -1, keepdims=True),
     lambda: np.linalg.norm(TALL, -1, keepdims=True)),
    ("norm-0", lambda: la.norm(TALL, 0, axis=1), lambda: np.linalg.norm(TALL, 0, axis=1)),
    ("norm-0-int", lambda: la.norm(np.array([1, 0, 2]), 0),
     lambda: np.linalg.norm(np.array([1, 0, 2]), 0)),
    ("cond", lambda: la.cond(A), lambda: np.linalg.cond(A)),
    ("cond-1", lambda: la.cond(A, 1), lambda: np.linalg.cond(A, 1)),
    ("matrix_power", lambda: la.matrix_power(A, -3), lambda: np.linalg.matrix_power(A, -3)),
    ("matrix_power-0", lambda: la.matrix_power(A, 0), lambda: np.linalg.matrix_power(A, 0)),
    ("multi_dot", lambda: la.multi_dot([A[0], TALL.T, TALL, A[:, 0]]),
     lambda: np.linalg.multi_dot([A[0], TALL.T, TALL, A[:, 0]])),
    ("tensorinv", lambda: la.tensorinv(np.kron(A, A).reshape(3, 3, 9)),
     lambda: np.linalg.tensorinv(np.kron(A, A).reshape(3, 3, 9))),
    ("outer", lambda: la.outer(A[0], TALL[0]), lambda: np.linalg.outer(A[0], TALL[0])),
    ("tensordot", lambda: la.tensordot(TALL, WIDE, axes=1),
     lambda: np.linalg.tensordot(TALL, WIDE, axes=1)),
    ("cross", lambda: la.cross(A, A[::-1], axis=0), lambda: np.linalg.cross(A, A[::-1], axis=0)),
    ("trace", lambda: la.trace(np.stack([A, SPD]), offset=1),
     lambda: np.linalg.trace(np.stack([A, SPD]), offset=1)),
    ("diagonal", lambda: la.diagonal(np.stack([TALL, TALL]), offset=-1),
     lambda: np.linalg.diagonal(np.stack([TALL, TALL]), offset=-1)),
    ("vecdot", lambda: la.vecdot(TALL, A[0]), lambda: np.linalg.vecdot(TALL, A[0])),
    ("matmul", lambda: la.matmul(TALL, A), lambda: np.linalg.matmul(TALL, A)),
    ("tensorsolve", lambda: la.tensorsolve(np.kron(A, A).reshape(9, 3, 3), A.ravel()),
     lambda: np.linalg.tensorsolve(np.kron(A, A).reshape(9, 3, 3), A.ravel())),
    ("tensorsolve-axes", lambda: la.tensorsolve(np.kron(A, A).reshape(3, 3, 3, 3), A, axes=(0,)),
     lambda: np.linalg.tensorsolve(np.kron(A, A).reshape(3, 3, 3, 3), A, axes=(0,))),
])
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


# --- closed-form derivatives ---------------------------------------------------------------

def test_inv_and_logdet_gradients_are_the_textbook_ones():
    ai = np.linalg.inv(A)
    np.testing.assert_allclose(grad(lambda a: fnp.sum(la.inv(a)))(A),
                               -ai.T @ np.ones((3, 3)) @ ai.T, rtol=1e-12)
    np.testing.assert_allclose(grad(lambda a: la.slogdet(a)[1])(A), ai.T, rtol=1e-12)
    np.testing.assert_allclose(grad(la.det)(A), np.linalg.det(A) * ai.T, rtol=1e-12)
    # second derivative of log|det|: d(inv(a).T)[h] = -(inv(a) h inv(a)).T
    h = rng.standard_normal((3, 3))
    _, dg = jvp(grad(lambda a: la.slogdet(a)[1]), (A,), (h,))
    np.testing.assert_allclose(dg, -(ai @ h @ ai).T, rtol=1e-10)


def test_sign_of_slogdet_is_a_constant():
    sign, _ = la.slogdet(-A)
    assert sign == -1.0
    np.testing.assert_array_equal(grad(lambda a: la.slogdet(a)[0] * fnp.sum(a))(-A),
                                  np.full((3, 3), -1.0))


def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix():
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [1.5, 1.0, 5.0]])  # row 3 = row 1 + row 2
    cof = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(grad(la.det)(a), cof, atol=1e-12)
    np.testing.assert_allclose(jacfwd(la.det)(a), cof, atol=1e-12)
    # det is a polynomial: its second derivative exists at rank n-1 as well
    check_grads(la.det, (a,), order=2)
    # rank n-2: every cofactor is 0
    np.testing.assert_allclose(grad(la.det)(np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5])),
                               np.zeros((3, 3)), atol=1e-12)
    # a batch with one singular matrix and one invertible one
    batch = np.stack([a, A])
    g = grad(lambda b: fnp.sum(la.det(b)))(batch)
    np.testing.assert_allclose(g[0], cof, atol=1e-12)
    np.testing.assert_allclose(g[1], np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-10)


def test_eigh_gradient_is_symmetric_for_a_non_symmetric_input():
    a = SPD + np.triu(np.ones((3, 3)), 1)  # NumPy would read the lower triangle only
    g = grad(lambda x: la.eigvalsh(x)[-1])(a)
    w, v = np.linalg.eigh((a + a.T) / 2)
    np.testing.assert_allclose(g, np.outer(v[:, -1], v[:, -1]), atol=1e-12)
    np.testing.assert_allclose(la.eigvalsh(a), w, rtol=1e-12)


# --- eigenvalue-only quantities at repeated eigenvalues and singular values ----------------

def test_eigvalsh_gradient_at_repeated_eigenvalues():
    q = _rotation()
    a = q @ np.diag([1.0, 1.0, 3.0]) @ q.T
    for point in (a, np.eye(3)):
        # sum(w**2) = ||a||_F^2: gradient 2a; sum(w) = trace: gradient I
        np.testing.assert_allclose(grad(lambda x: fnp.sum(la.eigvalsh(x) ** 2))(point),
                                   2 * point, atol=1e-12)
        np.testing.assert_allclose(grad(lambda x: fnp.sum(la.eigvalsh(x)))(point), np.eye(3),
                                   atol=1e-12)
        np.testing.assert_allclose(jacfwd(lambda x: fnp.sum(la.eigvalsh(x) ** 2))(point),
                                   2 * point, atol=1e-12)
    # the largest eigenvalue is simple here, so its gradient is q_3 q_3^T
    np.testing.assert_allclose(grad(lambda x: la.eigvalsh(x)[-1])(a), np.outer(q[:, 2], q[:, 2]),
                               atol=1e-12)


def test_eigenvector_gradient_at_a_repeated_eigenvalue_is_finite():
    g = grad(lambda x: fnp.sum(la.eigh(x)[1] ** 3))(np.eye(3))
    assert np.all(np.isfinite(g))  # 1/gap is taken as 0 where the gap is 0


@pytest.mark.parametrize("a", [_rotation(), _rotation()[:, :2], 2.0 * np.eye(3)],
                         ids=["orthogonal", "orthonormal-columns", "scaled-identity"])
def test_singular_value_gradients_at_repeated_singular_values(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    # sum(s**2) = ||a||_F^2
    np.testing.assert_allclose(grad(lambda x: fnp.sum(la.svd(x, compute_uv=False) ** 2))(a),
                               2 * a, atol=1e-12)
    np.testing.assert_allclose(jacfwd(lambda x: fnp.sum(la.svdvals(x) ** 2))(a), 2 * a,
                               atol=1e-12)
    # the nuclear norm: gradient U Vh
    np.testing.assert_allclose(grad(lambda x: la.norm(x, "nuc"))(a), u @ vh, atol=1e-12)


# --- norms ---------------------------------------------------------------------------------

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
    np.testing.assert_allclose(grad(lambda v: la.norm(v, 3))(x),
                               np.sign(x) * (np.abs(x) / np.sum(np.abs(x) ** 3) ** (1 / 3)) ** 2)
    np.testing.assert_array_equal(grad(lambda v: la.norm(v, 0))(x), [0.0, 0.0])
    np.testing.assert_allclose(grad(lambda a: la.norm(a, "fro"))(np.zeros((2, 2))),
                               np.zeros((2, 2)))
    np.testing.assert_allclose(grad(lambda a: la.norm(a, "fro"))(A), A / np.linalg.norm(A))


def test_norm_refuses_bad_orders_and_axes():
    with pytest.raises(ValueError, match="invalid norm order 'nuc' for vectors"):
        la.norm(np.ones(3), "nuc")
    with pytest.raises(ValueError, match="for matrices"):
        la.norm(np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="duplicate axes"):
        la.norm(np.ones((2, 2)), axis=(0, -2))


# --- derivatives that do not exist raise, and shapes are checked ---------------------------

def test_full_svd_and_complete_qr_of_non_square_matrices_refuse_a_gradient():
    with pytest.raises(ValueError, match="full_matrices=False"):
        grad(lambda a: fnp.sum(la.svd(a)[0]))(TALL)
    with pytest.raises(ValueError, match="mode='reduced'"):
        grad(lambda a: fnp.sum(la.qr(a, mode="complete")[0]))(TALL)
    # plain inputs still get NumPy's full factors
    assert la.svd(TALL)[0].shape == (4, 4) and la.qr(TALL, mode="complete")[0].shape == (4, 4)
    # square: full and reduced are the same, so the gradient exists
    assert np.all(np.isfinite(grad(lambda a: fnp.sum(la.svd(a)[0]))(A)))


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
    np.testing.assert_allclose(grad(lambda a: fnp.sum(la.matrix_power(a, 2)))(A),
                               np.ones((3, 3)) @ A.T + A.T @ np.ones((3, 3)), rtol=1e-12)
    x = np.array([1.0, 2.0, 3.0])
    assert np.ndim(la.multi_dot([x, A, x])) == 0
    np.testing.assert_allclose(grad(lambda v: la.multi_dot([v, A, v]))(x), (A + A.T) @ x)


def test_results_are_numpy_result_types():
    w, v = la.eigh(SPD)
    r = la.eigh(SPD)
    assert r.eigenvalues is r[0] and type(r).__name__ == "EighResult"
    assert type(la.svd(A)).__name__ == "SVDResult" and type(la.qr(A)).__name__ == "QRResult"
    assert type(la.slogdet(A)).__name__ == "SlogdetResult"
    out = fgrad.grad(lambda a: fnp.sum(la.eigh(a).eigenvalues))(SPD)
    np.testing.assert_allclose(out, np.eye(3), atol=1e-12)
