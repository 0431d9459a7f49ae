"""fgrad.scipy.linalg beyond the gradient table (tests/rows_scipy_linalg.py): values equal
SciPy's, closed-form derivatives (expm, sqrtm, solve_triangular), which entries a rule reads
(one triangle, the band), the generalized eigh's normalization, conventions and errors."""

import numpy as np
import pytest
import scipy.linalg as sl

import fgrad.numpy as fnp
import fgrad.scipy.linalg as sla
from fgrad import grad, hessian, jacfwd, jvp
from fgrad.test_util import check_grads

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 4)) + 3.0 * np.eye(4)
B = RNG.standard_normal((4, 2))
Q = np.linalg.qr(RNG.standard_normal((4, 4)))[0]
SPD = (Q * np.array([0.5, 1.4, 2.3, 3.1])) @ Q.T


def _traced(f, *args):
    """f's value computed inside a transform (the primitives' path, not the plain one)."""
    return jvp(f, args, tuple(np.zeros_like(a) for a in args))[0]


# --- values are SciPy's ------------------------------------------------------------------------


@pytest.mark.parametrize("name, args, kw", [
    ("inv", (A,), {}), ("det", (A,), {}), ("solve", (A, B), {}),
    ("solve", (SPD, B), {"assume_a": "pos"}), ("solve", (A, B), {"transposed": True}),
    ("solve", (A, B), {"assume_a": "lower triangular"}),
    ("solve", (A, B), {"assume_a": "sym", "lower": True}),
    ("solve", (A, B), {"assume_a": "tridiagonal"}),
    ("inv", (SPD,), {"assume_a": "pos"}), ("inv", (A,), {"assume_a": "upper triangular"}),
    ("solve", (A, B), {"assume_a": "upper triangular", "transposed": True}),
    ("cholesky", (SPD,), {}), ("cholesky", (SPD,), {"lower": True}),
    ("solve_triangular", (A, B), {}), ("solve_triangular", (A, B[:, 0]), {"trans": "T"}),
    ("solve_triangular", (A, B), {"lower": True, "unit_diagonal": True, "trans": 1}),
    ("solve_sylvester", (A, A[:2, :2], B), {}), ("sqrtm", (SPD,), {}), ("expm", (A / 3,), {}),
    ("lu", (A,), {}), ("lu", (A,), {"permute_l": True}), ("lu", (A,), {"p_indices": True}),
])
def test_values_equal_scipys_plain_and_traced(name, args, kw):
    expected = getattr(sl, name)(*args, **kw)
    for out in (getattr(sla, name)(*args, **kw),
                _traced(lambda *xs: getattr(sla, name)(*xs, **kw), *args)):
        for o, e in zip(*(x if isinstance(x, tuple) else (x,) for x in (out, expected))):
            np.testing.assert_allclose(o, e, rtol=1e-10, atol=1e-12)


def test_cholesky_is_upper_by_default_as_in_scipy():
    u = sla.cholesky(SPD)
    np.testing.assert_allclose(u, np.triu(u))
    np.testing.assert_allclose(u.T @ u, SPD, atol=1e-12)


def test_cho_factor_and_cho_solve_match_scipy_and_the_other_triangle_is_zero():
    for lower in (False, True):
        c, low = sla.cho_factor(SPD, lower=lower)
        assert low is lower
        np.testing.assert_array_equal(c, np.tril(c) if lower else np.triu(c))
        np.testing.assert_allclose(sla.cho_solve((c, low), B),
                                   sl.cho_solve(sl.cho_factor(SPD, lower), B))


def test_lu_factor_and_lu_solve_match_scipy():
    lu, piv = sla.lu_factor(A)
    lu_ref, piv_ref = sl.lu_factor(A)
    np.testing.assert_allclose(lu, lu_ref)
    np.testing.assert_array_equal(piv, piv_ref)
    traced_lu, traced_piv = _traced(lambda a: sla.lu_factor(a)[0], A), sla.lu_factor(A)[1]
    np.testing.assert_allclose(traced_lu, lu_ref)
    np.testing.assert_array_equal(traced_piv, piv_ref)
    for trans in (0, 1, 2):
        np.testing.assert_allclose(sla.lu_solve((lu, piv), B, trans),
                                   sl.lu_solve((lu_ref, piv_ref), B, trans))
    # a matrix that needs row swaps, batched
    a = RNG.standard_normal((3, 4, 4))
    np.testing.assert_allclose(_traced(lambda a: sla.lu_solve(sla.lu_factor(a), B), a),
                               np.linalg.solve(a, B))


def test_solve_banded_matches_scipy_and_ignores_the_corners():
    l, u, n = 1, 2, 5
    ab = RNG.standard_normal((l + u + 1, n))
    ab[u] += 4.0
    np.testing.assert_allclose(sla.solve_banded((l, u), ab, B[:, 0].tolist() + [1.0]),
                               sl.solve_banded((l, u), ab, B[:, 0].tolist() + [1.0]))
    b = RNG.standard_normal((n, 2))
    g = grad(lambda ab: fnp.sum(sla.solve_banded((l, u), ab, b) ** 2))(ab)
    # the corners ab[u + i - j, j] with i outside 0..n-1 are not part of the matrix
    corners = [(0, 0), (0, 1), (1, 0), (3, 4)]
    assert all(g[r, c] == 0.0 for r, c in corners)
    # elsewhere: the dense matrix's gradient, read at the band
    dense = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if -l <= j - i <= u:
                dense[i, j] = ab[u + i - j, j]
    gd = grad(lambda a: fnp.sum(fnp.linalg.solve(a, b) ** 2))(dense)
    for i in range(n):
        for j in range(n):
            if -l <= j - i <= u:
                assert g[u + i - j, j] == pytest.approx(gd[i, j], rel=1e-10, abs=1e-12)


def test_eigh_values_and_generalized_normalization():
    w, v = sla.eigh(SPD)
    np.testing.assert_allclose(w, sl.eigh(SPD)[0])
    np.testing.assert_allclose(np.abs(v.T @ sl.eigh(SPD)[1]), np.eye(4), atol=1e-10)
    a = A + A.T
    for type_ in (1, 2, 3):
        w, v = sla.eigh(a, SPD, type=type_)
        np.testing.assert_allclose(w, sl.eigh(a, SPD, type=type_)[0])
        norm = np.linalg.inv(SPD) if type_ == 3 else SPD
        np.testing.assert_allclose(v.T @ norm @ v, np.eye(4), atol=1e-10)
        lhs = {1: a @ v, 2: a @ SPD @ v, 3: SPD @ a @ v}[type_]
        rhs = SPD @ v * w if type_ == 1 else v * w
        np.testing.assert_allclose(lhs, rhs, atol=1e-10)
    np.testing.assert_allclose(sla.eigh(a, subset_by_index=(1, 2))[0],
                               sl.eigh(a, subset_by_index=(1, 2))[0])
    np.testing.assert_allclose(sla.eigh(a, eigvals_only=True, subset_by_value=(-1, 4)),
                               sl.eigh(a, eigvals_only=True, subset_by_value=(-1, 4)))


# --- closed-form derivatives -----------------------------------------------------------------


def test_expm_derivative_is_scipys_frechet_derivative_and_second_order_is_exact():
    a, e = A / 3, RNG.standard_normal((4, 4))
    _, t = jvp(sla.expm, (a,), (e,))
    np.testing.assert_allclose(t, sl.expm_frechet(a, e, compute_expm=False), rtol=1e-10)
    # d^k/ds^k expm(s a) = a^k expm(s a), in both modes, orders 1 and 2
    w = RNG.standard_normal((4, 4))

    def f(s):
        return fnp.sum(w * sla.expm(s * a))

    ea = sl.expm(a)
    assert float(grad(f)(1.0)) == pytest.approx(np.sum(w * (a @ ea)), rel=1e-10)
    assert float(grad(grad(f))(1.0)) == pytest.approx(np.sum(w * (a @ a @ ea)), rel=1e-9)
    assert float(jacfwd(jacfwd(f))(1.0)) == pytest.approx(np.sum(w * (a @ a @ ea)), rel=1e-9)


def test_sqrtm_derivative_at_a_diagonal_matrix():
    d = np.array([1.0, 4.0, 9.0])
    e = RNG.standard_normal((3, 3))
    _, t = jvp(sla.sqrtm, (np.diag(d),), (e,))
    s = np.sqrt(d)
    np.testing.assert_allclose(t, e / (s[:, None] + s[None, :]), rtol=1e-10)
    # second derivative of sqrt(x) at 4 along the identity: -1/4 x^(-3/2) = -1/32
    assert float(hessian(lambda x: sla.sqrtm(x * np.eye(2))[0, 0])(4.0)) == pytest.approx(-1 / 32)


def test_solve_sylvester_derivative_in_q_is_the_solver_itself():
    a, b = A, A[:2, :2] + 2 * np.eye(2)
    e = RNG.standard_normal((4, 2))
    _, t = jvp(lambda q: sla.solve_sylvester(a, b, q), (B,), (e,))
    np.testing.assert_allclose(t, sl.solve_sylvester(a, b, e))


def test_solve_triangular_gradient_lives_on_the_referenced_triangle():
    def f(a, lower, unit):
        return fnp.sum(sla.solve_triangular(a, B, lower=lower, unit_diagonal=unit))

    ones = np.ones((4, 4))
    for lower in (False, True):
        for unit in (False, True):
            k = -1 if unit else 0  # without the diagonal when it is taken as 1
            read = (np.tril(ones, k) if lower else np.triu(ones, -k)).astype(bool)
            g = grad(f)(A, lower, unit)
            assert np.all(g[~read] == 0.0)
            assert np.all(g[read] != 0.0)
    # scalar case: x = b / a, dx/da = -b / a^2
    g = grad(lambda a: sla.solve_triangular(a, np.ones(1))[0])(np.array([[2.0]]))
    assert float(g[0, 0]) == -0.25


def test_lu_factor_derivative_reconstructs_the_derivative_of_a():
    # P dA = dL U + L dU
    e = RNG.standard_normal((4, 4))
    (lu, piv), (dlu, _) = jvp(lambda a: sla.lu_factor(a), (A,), (e,))
    p, l, u = sl.lu(A)
    dl, du = np.tril(dlu, -1), np.triu(dlu)
    np.testing.assert_allclose(p @ (dl @ u + l @ du), e, atol=1e-10)


def test_generalized_eigh_is_differentiable_in_both_matrices():
    a = A + A.T
    check_grads(lambda a, b: sla.eigh(a, b, eigvals_only=True), (a, SPD), order=2,
                modes=("fwd", "rev"))


# --- conventions and errors --------------------------------------------------------------------


def test_inv_assume_a_diagonal_is_the_inverse_of_the_diagonal_part():
    # SciPy 1.17's inv(a, assume_a='diagonal') keeps a's off-diagonal entries; fgrad's is an inverse
    np.testing.assert_allclose(sla.inv(A, assume_a="diagonal"), np.diag(1 / np.diag(A)))


def test_float32_stays_float32_det_included():
    a32 = A.astype(np.float32)
    assert sla.det(a32).dtype == np.float32  # SciPy's det gives float64
    assert grad(sla.det)(a32).dtype == np.float32
    assert sla.expm(a32 / 3).dtype == np.float32


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="square"):
        sla.expm(np.ones((2, 3)))
    with pytest.raises(ValueError, match="no real square root"):
        sla.sqrtm(np.diag([-1.0, 2.0]))
    with pytest.raises(ValueError, match="type must be 1, 2 or 3"):
        sla.eigh(SPD, SPD, type=4)
    with pytest.raises(ValueError, match="trans"):
        sla.solve_triangular(A, B, trans=3)
    with pytest.raises(ValueError, match="l \\+ u \\+ 1"):
        sla.solve_banded((1, 1), np.ones((2, 4)), np.ones(4))
    with pytest.raises(ValueError, match="'b'"):
        sla.solve_triangular(A, np.ones(3))
    with pytest.raises(ValueError, match="assume_a"):
        sla.solve(A, B, assume_a="weird")


def test_expm_and_sqrtm_differentiate_to_order_3():
    check_grads(sla.expm, (0.3 * RNG.standard_normal((2, 2)),), order=3, modes=("fwd", "rev"))
    check_grads(sla.sqrtm, (2 * np.eye(2) + 0.2 * RNG.standard_normal((2, 2)),), order=3,
                modes=("fwd", "rev"))


def test_cho_solve_of_a_batch_with_one_vector_matches_scipy():
    a = RNG.standard_normal((2, 3, 3))
    for lower in (False, True):
        c = sla.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(3), lower=lower)
        np.testing.assert_allclose(sla.cho_solve((c, lower), B[:3, 0]),
                                   sl.cho_solve((c, lower), B[:3, 0]))
