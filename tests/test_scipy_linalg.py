"""fgrad.scipy.linalg beyond the gradient table (tests/rows_scipy_linalg.py): values equal
SciPy's, closed-form derivatives (expm, sqrtm, solve_triangular), which entries a rule reads
(one triangle, the band), the generalized eigh's normalization, conventions and errors."""

import numpy as np
import pytest
import scipy.linalg as sl

import fgrad
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


# --- values are SciPy's ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, args, kw",
    [
        ("inv", (A,), {}),
        ("det", (A,), {}),
        ("solve", (A, B), {}),
        ("solve", (SPD, B), {"assume_a": "pos"}),
        ("solve", (A, B), {"transposed": True}),
        ("solve", (A, B), {"assume_a": "lower triangular"}),
        ("solve", (A, B), {"assume_a": "sym", "lower": True}),
        ("solve", (A, B), {"assume_a": "tridiagonal"}),
        ("inv", (SPD,), {"assume_a": "pos"}),
        ("inv", (A,), {"assume_a": "upper triangular"}),
        ("solve", (A, B), {"assume_a": "upper triangular", "transposed": True}),
        ("cholesky", (SPD,), {}),
        ("cholesky", (SPD,), {"lower": True}),
        ("solve_triangular", (A, B), {}),
        ("solve_triangular", (A, B[:, 0]), {"trans": "T"}),
        ("solve_triangular", (A, B), {"lower": True, "unit_diagonal": True, "trans": 1}),
        ("solve_sylvester", (A, A[:2, :2], B), {}),
        ("sqrtm", (SPD,), {}),
        ("expm", (A / 3,), {}),
        ("lu", (A,), {}),
        ("lu", (A,), {"permute_l": True}),
        ("lu", (A,), {"p_indices": True}),
    ],
)
def test_values_equal_scipys_plain_and_traced(name, args, kw):
    expected = getattr(sl, name)(*args, **kw)
    for out in (
        getattr(sla, name)(*args, **kw),
        _traced(lambda *xs: getattr(sla, name)(*xs, **kw), *args),
    ):
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
        np.testing.assert_allclose(
            sla.cho_solve((c, low), B), sl.cho_solve(sl.cho_factor(SPD, lower), B)
        )


def test_lu_permutation_is_real_for_complex_input_as_scipys():
    for dtype in (np.complex128, np.complex64):
        z = (A + 1j * B[:, :1]).astype(dtype)
        perm, lower, upper = sla.lu(z)
        perm_ref = sl.lu(z)[0]
        assert perm.dtype == perm_ref.dtype == np.finfo(dtype).dtype
        assert lower.dtype == upper.dtype == dtype
        np.testing.assert_array_equal(perm, perm_ref)


def test_lu_factor_and_lu_solve_match_scipy():
    lu, piv = sla.lu_factor(A)
    lu_ref, piv_ref = sl.lu_factor(A)
    np.testing.assert_allclose(lu, lu_ref)
    np.testing.assert_array_equal(piv, piv_ref)
    traced_lu, traced_piv = _traced(lambda a: sla.lu_factor(a)[0], A), sla.lu_factor(A)[1]
    np.testing.assert_allclose(traced_lu, lu_ref)
    np.testing.assert_array_equal(traced_piv, piv_ref)
    for trans in (0, 1, 2):
        np.testing.assert_allclose(
            sla.lu_solve((lu, piv), B, trans), sl.lu_solve((lu_ref, piv_ref), B, trans)
        )
    # a matrix that needs row swaps, batched
    a = RNG.standard_normal((3, 4, 4))
    np.testing.assert_allclose(
        _traced(lambda a: sla.lu_solve(sla.lu_factor(a), B), a), np.linalg.solve(a, B)
    )


def test_solve_banded_matches_scipy_and_ignores_the_corners():
    l, u, n = 1, 2, 5
    ab = RNG.standard_normal((l + u + 1, n))
    ab[u] += 4.0
    np.testing.assert_allclose(
        sla.solve_banded((l, u), ab, B[:, 0].tolist() + [1.0]),
        sl.solve_banded((l, u), ab, B[:, 0].tolist() + [1.0]),
    )
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
    np.testing.assert_allclose(
        sla.eigh(a, subset_by_index=(1, 2))[0], sl.eigh(a, subset_by_index=(1, 2))[0]
    )
    np.testing.assert_allclose(
        sla.eigh(a, eigvals_only=True, subset_by_value=(-1, 4)),
        sl.eigh(a, eigvals_only=True, subset_by_value=(-1, 4)),
    )


# --- closed-form derivatives ----------------------------------------------------------------------


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


def test_expm_derivative_is_linear_in_the_cotangent_and_tangent_scale():
    # the block matrix [[A, E], [0, A]] was exponentiated as given: grad(c * f) / c differed
    # from grad(f) by 1.9e-5 at c = 1e16 and was nan at 1e50; a tangent of 1e100 lost 4 digits
    a = np.random.RandomState(1).randn(4, 4) * 0.5
    t = np.random.RandomState(2).randn(4, 4)
    base = grad(lambda a: sla.expm(a)[0, 1])(a)
    np.testing.assert_allclose(
        base, sl.expm_frechet(a.T, np.eye(4)[:, [0]] * np.eye(4)[1], compute_expm=False), rtol=1e-12
    )
    for c in [1e-50, 1e16, 1e50, 2.0**60]:
        g = grad(lambda a, c=c: c * sla.expm(a)[0, 1])(a)
        np.testing.assert_allclose(g / c, base, rtol=1e-14, atol=0)
        d = jvp(sla.expm, (a,), (c * t,))[1]
        np.testing.assert_allclose(d / c, jvp(sla.expm, (a,), (t,))[1], rtol=1e-13, atol=1e-15)
    rows = fgrad.vmap(lambda s: jvp(sla.expm, (a,), (s * t,))[1])(np.array([1.0, 1e100]))
    np.testing.assert_allclose(rows[1] / 1e100, rows[0], rtol=1e-13, atol=1e-15)
    d32 = jvp(sla.expm, (a.astype(np.float32),), (1e30 * t.astype(np.float32),))[1]
    assert d32.dtype == np.float32 and np.all(np.isfinite(d32))
    assert np.all(jvp(sla.expm, (a,), (np.zeros((4, 4)),))[1] == 0)


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
    (_lu, _piv), (dlu, _) = jvp(lambda a: sla.lu_factor(a), (A,), (e,))
    p, l, u = sl.lu(A)
    dl, du = np.tril(dlu, -1), np.triu(dlu)
    np.testing.assert_allclose(p @ (dl @ u + l @ du), e, atol=1e-10)


def test_generalized_eigh_is_differentiable_in_both_matrices():
    a = A + A.T
    check_grads(
        lambda a, b: sla.eigh(a, b, eigvals_only=True), (a, SPD), order=2, modes=("fwd", "rev")
    )


# --- conventions and errors -----------------------------------------------------------------------


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
    check_grads(
        sla.sqrtm,
        (2 * np.eye(2) + 0.2 * RNG.standard_normal((2, 2)),),
        order=3,
        modes=("fwd", "rev"),
    )


def test_cho_solve_of_a_batch_with_one_vector_matches_scipy():
    a = RNG.standard_normal((2, 3, 3))
    for lower in (False, True):
        c = sla.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(3), lower=lower)
        np.testing.assert_allclose(
            sla.cho_solve((c, lower), B[:3, 0]), sl.cho_solve((c, lower), B[:3, 0])
        )


# --- the new names: SciPy's values, untraced and under every transform ----------------------------

C = RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))
W = RNG.standard_normal((3, 5))
BATCH = RNG.standard_normal((2, 4, 3))
NEG = np.array([[-2.0, 1.0, 0.0], [0.5, 1.0, 0.3], [0.0, 0.2, 3.0]])  # a negative eigenvalue

FACTORIZATIONS = [
    ("lu", (A,), {}),
    ("lu", (C,), {"permute_l": True}),
    ("lu", (W,), {"p_indices": True}),
    ("lu", (BATCH,), {}),
    ("lu_factor", (C,), {}),
    ("lu_factor", (W,), {}),
    ("lu_factor", (BATCH.astype(np.float32),), {}),
    ("qr", (A,), {}),
    ("qr", (C,), {}),
    ("qr", (W,), {"mode": "economic"}),
    ("qr", (BATCH,), {"mode": "r"}),
    ("qr", (C,), {"pivoting": True}),
    ("qr", (A.astype(np.float32),), {"mode": "economic", "pivoting": True}),
    ("svd", (A,), {}),
    ("svd", (C,), {"full_matrices": False}),
    ("svd", (W,), {}),
    ("svd", (C,), {"compute_uv": False}),
    ("svd", (BATCH,), {"lapack_driver": "gesvd"}),
    ("svd", (A.astype(np.float32),), {"compute_uv": False}),
    ("schur", (SPD,), {}),
    ("schur", (A,), {"output": "complex"}),
    ("schur", (C[:3],), {}),
    ("schur", (SPD,), {"sort": "lhp"}),
    ("schur", (A.astype(np.float32),), {"output": "complex"}),
    ("sqrtm", (NEG,), {}),
    ("sqrtm", (NEG.astype(np.float32),), {}),
    ("sqrtm", (C[:3] + 3 * np.eye(3),), {}),
    ("block_diag", (A, W[0], 2.0), {}),
    ("block_diag", (BATCH, A.astype(np.float32)), {}),
    ("toeplitz", (W[0], W[1]), {}),
    ("toeplitz", (C[:, 0],), {}),
    ("toeplitz", (BATCH[..., 0], W[0]), {}),
]


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _assert_same(out, expected, where):
    out, expected = _tuple(out), _tuple(expected)
    assert len(out) == len(expected), where
    for o, e in zip(out, expected):
        o, e = np.asarray(o), np.asarray(e)
        assert o.dtype == e.dtype and o.shape == e.shape, (where, o.dtype, e.dtype, o.shape)
        np.testing.assert_array_equal(o, e, err_msg=where)


@pytest.mark.parametrize(
    "name, args, kw", FACTORIZATIONS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FACTORIZATIONS)]
)
def test_new_names_give_scipys_values_untraced_and_under_vjp_and_jvp(name, args, kw):
    """The untraced value is SciPy's exactly (dtype, shape, bits; a tuple where SciPy's
    batched calls give a list, (R,) for qr(mode='r') where SciPy's batched call gives R), and
    tracing changes nothing."""
    from fgrad import vjp

    f = getattr(sla, name)
    plain = f(*args, **kw)
    expected = getattr(sl, name)(*args, **kw)
    if name == "qr" and kw.get("mode") == "r" and np.ndim(args[0]) > 2:
        expected = (expected,)
    _assert_same(plain, expected, "untraced")
    diff = [i for i, a in enumerate(args) if np.ndim(a) > 0]
    g = lambda *xs: f(*[xs[diff.index(i)] if i in diff else a for i, a in enumerate(args)], **kw)
    xs = [args[i] for i in diff]
    _assert_same(vjp(g, *xs)[0], plain, "vjp")
    _assert_same(jvp(g, tuple(xs), tuple(np.zeros_like(x) for x in xs))[0], plain, "jvp")


def test_sqrtm_of_a_negative_eigenvalue_is_complex_and_differentiable():
    x = sla.sqrtm(NEG)
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x @ x, NEG, atol=1e-12)
    # the derivative solves X dX + dX X = dA for the complex root too
    e = RNG.standard_normal((3, 3))
    _, t = jvp(sla.sqrtm, (NEG,), (e,))
    np.testing.assert_allclose(x @ t + t @ x, e, atol=1e-12)
    check_grads(
        lambda a: (fnp.real(sla.sqrtm(a)), fnp.imag(sla.sqrtm(a))),
        (NEG,),
        order=2,
        modes=("fwd", "rev"),
    )


def test_gauge_free_quantities_of_complex_factorizations_in_both_modes():
    h = lambda x: fnp.conj(fnp.swapaxes(x, -1, -2))

    def qr_parts(a):  # the complement's projector and R do not depend on Q2's basis
        q, r = sla.qr(a)
        return fnp.real(fnp.matmul(q[:, 3:], h(q[:, 3:]))), fnp.abs(r)

    def svd_parts(a):  # |U|, |Vh|, s, the rank-one terms
        u, s, vh = sla.svd(a)
        return fnp.abs(u[:, :3]), fnp.abs(vh), s, fnp.imag(fnp.matmul(u[:, :1], vh[:1]))

    def schur_parts(a):  # eigenvalues, |T|, the leading invariant subspace
        t, z = sla.schur(a, output="complex")
        return (fnp.real(fnp.diagonal(t)), fnp.abs(t), fnp.imag(fnp.matmul(z[:, :2], h(z[:, :2]))))

    check_grads(qr_parts, (np.vstack([C, C[:2] * 0.5j + 1]),), order=2, modes=("fwd", "rev"))
    check_grads(svd_parts, (C,), order=2, modes=("fwd", "rev"))
    check_grads(schur_parts, (C[:3],), order=2, modes=("fwd", "rev"))
    check_grads(schur_parts, (A,), order=2, modes=("fwd", "rev"))


def test_schur_derivative_follows_its_convention():
    # Z^H dZ is skew-Hermitian with a zero diagonal, dT is upper triangular, and
    # dA = dZ T Z^H + Z dT Z^H + Z T dZ^H
    e = RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))
    (t, z), (dt, dz) = jvp(lambda a: sla.schur(a, output="complex"), (A + 0j,), (e,))
    w = z.conj().T @ dz
    np.testing.assert_allclose(w + w.conj().T, 0, atol=1e-10)
    np.testing.assert_allclose(np.diag(w), 0, atol=1e-12)
    np.testing.assert_allclose(np.tril(dt, -1), 0, atol=1e-12)
    np.testing.assert_allclose(
        dz @ t @ z.conj().T + z @ dt @ z.conj().T + z @ t @ dz.conj().T, e, atol=1e-10
    )


def test_traced_real_schur_with_a_complex_pair_asks_for_the_complex_form():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    real_pair = np.array([[1.0, 2.0], [0.5, 3.0]])

    def f(a):
        return fnp.sum(sla.schur(a)[0] ** 2)

    for derivative in (grad(f), jacfwd(f), fgrad.jit(grad(f)), grad(fgrad.jit(f))):
        derivative(real_pair)  # recorded, for the jitted ones, where T is triangular
        with pytest.raises(ValueError, match="output='complex'"):
            derivative(rotation)
    assert sla.schur(rotation)[0].shape == (2, 2)  # untraced, SciPy's value
    # Only a derivative reads the blocks: jit and vmap alone give SciPy's values (they raised)
    want = np.sum(sl.schur(rotation)[0] ** 2)
    jitted = fgrad.jit(f)
    jitted(real_pair)
    assert jitted(rotation) == fgrad.jit(f)(rotation) == want
    batch = np.stack([rotation, real_pair])
    np.testing.assert_array_equal(fgrad.vmap(f)(batch), [want, f(real_pair)])


def test_full_factors_complement_convention():
    # the extra columns rotate least: Q2^H dQ2 = 0 and Q1^H dQ2 = -dQ1^H Q2
    a = RNG.standard_normal((5, 2))
    (q, _), (dq, _) = jvp(sla.qr, (a,), (RNG.standard_normal((5, 2)),))
    q1, q2, dq1, dq2 = q[:, :2], q[:, 2:], dq[:, :2], dq[:, 2:]
    np.testing.assert_allclose(q2.T @ dq2, 0, atol=1e-12)
    np.testing.assert_allclose(q1.T @ dq2, -dq1.T @ q2, atol=1e-12)


def test_block_diag_and_toeplitz_gradients_are_their_transposes():
    g = grad(
        lambda a, b: fnp.sum(sla.block_diag(a, b) * np.arange(20.0).reshape(4, 5)), argnums=(0, 1)
    )(np.ones((2, 2)), np.ones((2, 3)))
    np.testing.assert_array_equal(g[0], [[0.0, 1.0], [5.0, 6.0]])
    np.testing.assert_array_equal(g[1], [[12.0, 13.0, 14.0], [17.0, 18.0, 19.0]])
    gc, gr = grad(
        lambda c, r: fnp.sum(sla.toeplitz(c, r) * np.arange(12.0).reshape(3, 4)), argnums=(0, 1)
    )(np.ones(3), np.ones(4))
    np.testing.assert_array_equal(gc, [15.0, 13.0, 8.0])  # c[i]: entries (i + j, j)
    np.testing.assert_array_equal(gr, [0.0, 18.0, 9.0, 3.0])  # r[0] is not read


def test_complex_transposed_solves_use_the_conjugate_transpose():
    a = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    np.testing.assert_allclose(
        sla.solve_triangular(a, b, trans="C"), sl.solve_triangular(a, b, trans="C")
    )
    np.testing.assert_allclose(
        sla.lu_solve(sla.lu_factor(a), b, 2), sl.lu_solve(sl.lu_factor(a), b, 2)
    )
    h = a @ a.conj().T
    for lower in (False, True):
        c = sl.cholesky(h, lower=lower)
        np.testing.assert_allclose(sla.cho_solve((c, lower), b), sl.cho_solve((c, lower), b))
    for assume_a in ("her", "pos", "sym"):
        m = h if assume_a == "pos" else a
        np.testing.assert_allclose(
            sla.solve(m, b, assume_a=assume_a), sl.solve(m, b, assume_a=assume_a)
        )


# --- signatures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sla.__all__)
def test_signature_is_scipys(name):
    import inspect

    def parameters(fn):  # names, kinds and defaults (fgrad's also carry type hints)
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert parameters(getattr(sla, name)) == parameters(getattr(sl, name))


def test_unsupported_keywords_raise_a_type_error_naming_them():
    with pytest.raises(TypeError, match="'disp'"):
        sla.sqrtm(SPD, disp=False)
    with pytest.raises(TypeError, match="'blocksize'"):
        sla.sqrtm(SPD, blocksize=16)
    with pytest.raises(TypeError, match="'driver'"):
        sla.eigh(SPD, driver="evr")


def test_derivatives_of_a_stack_of_no_matrices_are_empty():
    # The rules of lu and sqrtm solve with SciPy's solve_triangular and solve_sylvester, which
    # refuse a stack of no matrices ("does not support zero-size batches"): the gradient of
    # lu or sqrtm of a (0, n, n) stack raised where the plain call works. Now empty, as the
    # functions of NumPy's linalg give them.
    for f, x in (
        (lambda a: fnp.sum(sla.lu(a)[1]), np.zeros((0, 3, 3))),
        (lambda a: fnp.sum(sla.lu(a)[2]), np.zeros((0, 3, 4))),
        (lambda a: fnp.sum(sla.sqrtm(a)), np.zeros((0, 2, 2))),
    ):
        for d in (fgrad.grad(f)(x), fgrad.jacfwd(f)(x), fgrad.jacrev(f)(x)):
            assert d.shape == x.shape and d.dtype == x.dtype
    assert sla.solve_triangular(np.zeros((0, 3, 3)), np.zeros((0, 3, 2))).shape == (0, 3, 2)


def test_vmap_of_solve_sylvester_keeps_float32():
    """The batched rule built its Kronecker system with float64 identities: vmap of float32
    input returned float64 (every other transform, and SciPy, float32)."""
    a = np.eye(3, dtype=np.float32) * 2 + 0.1
    b, q = np.eye(3, dtype=np.float32) * 3, np.ones((3, 3), np.float32)
    out = fgrad.vmap(sla.solve_sylvester)(a[None], b[None], q[None])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[0], sl.solve_sylvester(a, b, q), rtol=1e-5)


def test_svd_second_derivative_at_a_repeated_singular_value_is_nan_not_zero():
    # sum(s**2) = ||a||_F^2 (Hessian 2 I): the gradient is exact at I, the Hessian cannot be
    # (it needs the second derivative of the function of s at the tie): nan, as JAX, not 0
    def squares(x):
        return fnp.sum(sla.svd(x, compute_uv=False) ** 2)

    np.testing.assert_allclose(grad(squares)(np.eye(3)), 2 * np.eye(3), atol=1e-12)
    assert np.isnan(hessian(squares)(np.eye(3))).any()
    np.testing.assert_allclose(
        hessian(squares)(np.diag([3.0, 2.0, 1.0])).reshape(9, 9), 2 * np.eye(9), atol=1e-12
    )


def test_lu_solve_broadcasts_b_with_more_batch_axes_than_lu_eagerly():
    # b (5, 2, 3, 2) against lu (2, 3, 3): SciPy's shape; it raised eagerly and worked in jit
    gen = np.random.default_rng(0)
    a = gen.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = gen.standard_normal((5, 2, 3, 2))
    for trans in (0, 1):
        want = sl.lu_solve(sl.lu_factor(a), b, trans=trans)
        np.testing.assert_allclose(sla.lu_solve(sla.lu_factor(a), b, trans=trans), want, rtol=1e-12)

        def f(a, b, trans=trans):
            return fnp.sum(sla.lu_solve(sla.lu_factor(a), b, trans=trans) ** 2)

        eager = grad(f, argnums=(0, 1))(a, b)
        jitted = fgrad.jit(grad(f, argnums=(0, 1)))(a, b)
        for e, j in zip(eager, jitted):
            np.testing.assert_array_equal(e, j)
    with pytest.raises(ValueError, match="lu_solve: 'b' has shape \\(4, 3, 2\\)"):
        sla.lu_solve(sla.lu_factor(a), b[0, :1].repeat(4, axis=0))


def _fd_jacobian(f, a, h=1e-6):
    cols = []
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        cols.append((f(a + e) - f(a - e)) / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(cols[0]) + a.shape)


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")  # SciPy: a zero pivot
def test_lu_derivatives_at_a_singular_matrix_whose_last_pivot_is_zero():
    # L and U are rational in a with the leading pivots (2, -2) as denominators: the last
    # pivot 0 is not one, but the rules divided by it (LinAlgError: singular matrix)
    square = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    wide = np.concatenate([square, np.array([[1.0], [0.5], [2.0]])], axis=1)
    for a in (square, wide):
        assert sl.lu(a)[2][2, 2] == 0.0
        for k in (1, 2):  # L, U
            want = _fd_jacobian(lambda x, k=k: sl.lu(x)[k], a)
            np.testing.assert_allclose(jacfwd(lambda x, k=k: sla.lu(x)[k])(a), want, atol=1e-7)
            np.testing.assert_allclose(
                fgrad.jacrev(lambda x, k=k: sla.lu(x)[k])(a), want, atol=1e-7
            )
    packed = _fd_jacobian(lambda x: sl.lu_factor(x)[0], square)
    np.testing.assert_allclose(
        fgrad.jacrev(lambda x: sla.lu_factor(x)[0])(square), packed, atol=1e-7
    )


# --- float16: computed in float32, as SciPy does --------------------------------------------------

A16 = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 4.0]], np.float16)
B16 = np.array([1.0, -2.0, 0.5], np.float16)

FLOAT16_CALLS = [
    ("inv", lambda a: sla.inv(a)),
    ("det", lambda a: sla.det(a)),
    ("solve", lambda a: sla.solve(a, B16)),
    ("cholesky", lambda a: sla.cholesky(a)),
    ("eigh", lambda a: sla.eigh(a)[0]),
    ("eigh-generalized", lambda a: sla.eigh(a, a + np.eye(3, dtype=a.dtype))[0]),
    ("cho_solve", lambda a: sla.cho_solve(sla.cho_factor(a), B16)),
    ("lu_factor", lambda a: sla.lu_factor(a)[0]),
    ("lu", lambda a: sla.lu(a)[1] + sla.lu(a)[2]),
    ("qr", lambda a: sla.qr(a)[1]),
    ("svd", lambda a: sla.svd(a)[1]),
    ("solve_triangular", lambda a: sla.solve_triangular(a, B16)),
    ("lu_solve", lambda a: sla.lu_solve(sla.lu_factor(a), B16)),
    ("solve_sylvester", lambda a: sla.solve_sylvester(a, a, a)),
]


@pytest.mark.parametrize("name, f", FLOAT16_CALLS, ids=[n for n, _ in FLOAT16_CALLS])
def test_float16_is_computed_in_float32_under_every_transform(name, f):
    """SciPy computes float16 in float32 (and returns float32, det float64: fgrad's det keeps
    float32 as for float32 input). inv, solve, cholesky, eigh, det, cho_factor and cho_solve
    refused float16 with NumPy's message; vmap of lu_factor and lu gave float64 and vmap of
    qr, svd, solve_triangular, lu_solve and solve_sylvester refused it."""
    a32 = A16.astype(np.float32)
    expected = f(a32)  # the float32 computation, SciPy's dtype
    for out in (f(A16), fgrad.jit(f)(A16), _traced(f, A16)):
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, expected)
    rows = np.stack([A16, A16.T * np.float16(0.5) + A16])
    batched = fgrad.vmap(f)(rows)
    assert batched.dtype == np.float32
    np.testing.assert_allclose(batched, np.stack([f(r) for r in rows]), rtol=2e-6, atol=2e-6)
    g = grad(lambda a: fnp.sum(f(a)))(A16)
    assert g.dtype == np.float16
    np.testing.assert_allclose(g, grad(lambda a: fnp.sum(f(a)))(a32), rtol=1e-3, atol=1e-3)


# each call takes the module (SciPy's or fgrad's) and the matrix
SMALL_INT_CALLS = [
    ("inv", lambda m, a: m.inv(a)),
    ("inv-pos", lambda m, a: m.inv(a, assume_a="pos")),
    ("eigh", lambda m, a: m.eigh(a)[0]),
    ("eigh-vectors", lambda m, a: np.abs(m.eigh(a)[1])),
    ("eigh-generalized", lambda m, a: m.eigh(a, 2 * np.eye(3, dtype=a.dtype))[0]),
    ("solve", lambda m, a: m.solve(a, np.ones(3, a.dtype))),
    ("cholesky", lambda m, a: m.cholesky(a)),
    ("lu", lambda m, a: m.lu(a)[2]),
    ("lu_factor", lambda m, a: m.lu_factor(a)[0]),
    ("lu_solve", lambda m, a: m.lu_solve(m.lu_factor(a), a[0])),
    ("qr", lambda m, a: np.abs(m.qr(a)[0])),
    ("qr-r", lambda m, a: np.abs(m.qr(a, mode="r")[0])),
    ("svd", lambda m, a: m.svd(a)[1]),
    ("svd-values", lambda m, a: m.svd(a, compute_uv=False)),
    ("solve_triangular", lambda m, a: m.solve_triangular(a, a[0])),
    ("solve_triangular-unit", lambda m, a: m.solve_triangular(a, a, unit_diagonal=True)),
    ("cho_solve", lambda m, a: m.cho_solve((a, False), a[0])),
    ("solve_sylvester", lambda m, a: m.solve_sylvester(a, a, a)),
]


@pytest.mark.parametrize("name, f", SMALL_INT_CALLS, ids=[n for n, _ in SMALL_INT_CALLS])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int32])
def test_integer_and_bool_input_gives_scipys_dtype(name, f, dtype):
    """SciPy's LAPACK wrappers promote int8, uint8, int16 and bool with float32 (float32
    results), wider integers to float64: inv and eigh gave float64 for the small ones, and
    vmap of lu_factor, lu, lu_solve, qr, svd, solve_triangular, cho_solve and
    solve_sylvester gave float64 (NumPy's batched routines compute integers in float64)."""
    a = np.eye(3) if dtype is np.bool_ else np.array([[4, 1, 0], [1, 3, 1], [0, 1, 4]])
    a = a.astype(dtype)
    expected = np.asarray(f(sl, a))
    batched = fgrad.vmap(lambda x: f(sla, x))(np.stack([a, a]))
    for out in (f(sla, a), fgrad.jit(lambda x: f(sla, x))(a), batched[0], batched[1]):
        assert out.dtype == expected.dtype
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


# (fgrad's call, SciPy's) of a matrix and a right-hand side, whose dtypes SciPy combines
MIXED_DTYPE_SOLVES = [
    ("lu_solve", lambda m, a, b: m.lu_solve(m.lu_factor(a), b)),
    ("solve_triangular", lambda m, a, b: m.solve_triangular(a, b, lower=True)),
    ("cho_solve", lambda m, a, b: m.cho_solve((a, True), b)),
    ("solve_sylvester", lambda m, a, b: m.solve_sylvester(a, a, b[:, None] * a)),
    ("solve_banded", lambda m, a, b: m.solve_banded((1, 1), a, b)),
]
MIXED_DTYPES = [
    (np.uint8, np.float32),
    (np.float32, np.uint8),
    (np.float32, np.bool_),
    (np.int16, np.complex64),
    (np.complex64, np.int16),
    (np.float16, np.int8),
    (np.int64, np.float32),
    (np.float32, np.int32),
]


@pytest.mark.parametrize("name, f", MIXED_DTYPE_SOLVES, ids=[n for n, _ in MIXED_DTYPE_SOLVES])
@pytest.mark.parametrize("dtypes", MIXED_DTYPES, ids=lambda d: f"{d[0].__name__}-{d[1].__name__}")
def test_vmap_of_a_solve_gives_scipys_dtype_for_mixed_operands(name, f, dtypes):
    """Each row's result has the dtype of SciPy's call (its own rule per function; SciPy's
    solve_sylvester reads integer matrices as int64), whichever operand is batched: vmap of
    a float32 triangular solve with a uint8 right-hand side gave float64, and of an int16
    Sylvester equation with a float32 q float32 (SciPy: float64)."""
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 4]]).astype(dtypes[0])
    b = np.array([1, 0, 2]).astype(dtypes[1])
    expected = np.asarray(f(sl, a, b))
    assert f(sla, a, b).dtype == expected.dtype
    for axes in [(0, 0), (0, None), (None, 0)]:
        rows = [np.stack([x, x]) if ax == 0 else x for x, ax in zip((a, b), axes)]
        batched = fgrad.vmap(lambda a, b: f(sla, a, b), in_axes=axes)(*rows)
        assert batched.dtype == expected.dtype, axes
        tol = 1e-6 if expected.dtype.itemsize >= 8 and expected.dtype.kind == "f" else 1e-5
        np.testing.assert_allclose(batched, np.stack([expected] * 2), rtol=tol, atol=tol)


def test_toeplitz_and_expm_derivative_of_empty_input_are_scipys_empty_results():
    # toeplitz broadcast r[1:] to n - 1 = -1 entries; expm's Frechet scale took max of nothing
    e = np.zeros(0)
    for c, r in [(e, None), (e, np.ones(3)), (np.ones(2), e)]:

        def f(c, r=r):
            return sla.toeplitz(c, r)

        for out in (f(c), fgrad.jit(f)(c), _traced(f, c), fgrad.vmap(f)(c[None])[0]):
            _assert_same(out, sl.toeplitz(c, r), (c.shape, None if r is None else r.shape))
    z = np.zeros((0, 0))
    for out in (*jvp(sla.expm, (z,), (z,)), fgrad.vjp(sla.expm, z)[1](z)[0]):
        _assert_same(out, sl.expm(z), "expm")


def _second_derivatives_agree_with_finite_differences(f, x):
    """f's Hessian in the four orders of jacfwd and jacrev equal each other and central
    differences of its gradient. jacfwd inside jacrev gives the reverse rules a batch of
    tangents next to unbatched operands, whose cotangents must be summed back to them."""
    jf, jr = fgrad.jacfwd, fgrad.jacrev
    h = 1e-5
    g = jr(f)
    fd = np.stack([(g(x + h * e) - g(x - h * e)) / (2 * h) for e in np.eye(x.size)], -1)
    for name, second in [
        ("jacfwd(jacfwd)", jf(jf(f))),
        ("jacfwd(jacrev)", jf(jr(f))),
        ("jacrev(jacfwd)", jr(jf(f))),
        ("jacrev(jacrev)", jr(jr(f))),
    ]:
        np.testing.assert_allclose(second(x), fd, rtol=1e-5, atol=1e-6, err_msg=name)


def _split(x, *shapes):
    """The arrays of those shapes that the flat vector x holds, in order."""
    out, start = [], 0
    for s in shapes:
        size = int(np.prod(s))
        out.append(fnp.reshape(x[start : start + size], s))
        start += size
    return out


_T3 = np.array([[4.0, 1.0, 0.0], [2.0, 3.0, 1.0], [0.0, 1.0, 1.0]])  # distinct real eigenvalues
_W3 = np.arange(1.0, 10.0).reshape(3, 3) / 5.0

SECOND_ORDER_CASES = [  # (name, f of a flat vector, the point)
    (
        "schur T",  # T ** 2 and T's diagonal do not depend on the signs of Z's columns
        lambda x: fnp.sum(sla.schur(fnp.reshape(x, (3, 3)))[0] ** 2 * _W3),
        _T3.ravel(),
    ),
    (
        "schur diagonal",
        lambda x: fnp.sum(fnp.diagonal(sla.schur(fnp.reshape(x, (3, 3)))[0]) ** 3),
        _T3.ravel(),
    ),
    (
        "schur complex",
        lambda x: fnp.sum(fnp.abs(sla.schur(fnp.reshape(x, (3, 3)), output="complex")[0]) ** 2),
        _T3.ravel(),
    ),
    (
        "solve_triangular",
        lambda x: fnp.sum(fnp.sin(sla.solve_triangular(*_split(x, (3, 3), (3, 2))))),
        np.concatenate([(np.triu(_T3) + 2 * np.eye(3)).ravel(), B[:3].ravel()]),
    ),
    (
        "solve_triangular lower trans",
        lambda x: fnp.sum(
            fnp.sin(sla.solve_triangular(*_split(x, (3, 3), (3,)), lower=True, trans=1))
        ),
        np.concatenate([(np.tril(_T3) + 2 * np.eye(3)).ravel(), B[:3, 0]]),
    ),
    (
        "solve_banded",
        lambda x: fnp.sum(fnp.sin(sla.solve_banded((1, 1), *_split(x, (3, 4), (4, 2))))),
        np.concatenate(
            [np.array([[0, 1, 0.5, 1], [4, 5, 6, 5], [1, 0.5, 1, 0]]).ravel(), B.ravel()]
        ),
    ),
    (
        "solve_sylvester",
        lambda x: fnp.sum(fnp.sin(sla.solve_sylvester(*_split(x, (3, 3), (2, 2), (3, 2))))),
        np.concatenate([_T3.ravel(), np.array([[2.0, 0.5], [0.3, 3.0]]).ravel(), B[:3].ravel()]),
    ),
    (
        "lu_solve",
        lambda x: fnp.sum(
            fnp.sin(
                sla.lu_solve(
                    sla.lu_factor(_split(x, (3, 3), (3, 2))[0]), _split(x, (3, 3), (3, 2))[1]
                )
            )
        ),
        np.concatenate([_T3.ravel(), B[:3].ravel()]),
    ),
    (
        "cho_solve",
        lambda x: fnp.sum(
            fnp.sin(
                sla.cho_solve(
                    sla.cho_factor(_split(x, (4, 4), (4, 2))[0]), _split(x, (4, 4), (4, 2))[1]
                )
            )
        ),
        np.concatenate([SPD.ravel(), B.ravel()]),
    ),
    ("lu", lambda x: fnp.sum(fnp.sin(sla.lu(fnp.reshape(x, (3, 3)))[2])), _T3.ravel()),
    ("qr", lambda x: fnp.sum(fnp.sin(sla.qr(fnp.reshape(x, (3, 3)))[1])), _T3.ravel()),
    ("svd", lambda x: fnp.sum(fnp.sin(sla.svd(fnp.reshape(x, (3, 3)))[1])), _T3.ravel()),
    (
        "eigh generalized",
        lambda x: fnp.sum(fnp.sin(sla.eigh(*_split(x, (3, 3), (3, 3)), eigvals_only=True))),
        np.concatenate([(_T3 + _T3.T).ravel(), SPD[:3, :3].ravel()]),
    ),
    ("expm", lambda x: fnp.sum(fnp.sin(sla.expm(fnp.reshape(x, (3, 3)) / 3))), _T3.ravel()),
    ("sqrtm", lambda x: fnp.sum(fnp.sin(sla.sqrtm(fnp.reshape(x, (3, 3))))), (_T3 + _T3.T).ravel()),
]


@pytest.mark.parametrize(
    "f, x", [c[1:] for c in SECOND_ORDER_CASES], ids=[c[0] for c in SECOND_ORDER_CASES]
)
def test_second_derivatives_in_every_order_of_forward_and_reverse(f, x):
    # schur's reverse rules gave a (batch, n, n) cotangent to its unbatched (n, n) T under
    # jacrev(jacfwd): the Hessian of sum(diag(T)**2) was off by 17.8
    _second_derivatives_agree_with_finite_differences(f, x)


@pytest.mark.parametrize(
    "kw",
    [
        {"subset_by_index": [2, 7]},  # past the end: a slice clipped it to [3., 4.]
        {"subset_by_index": [-1, 1]},  # negative: a slice counted from the end (empty)
        {"subset_by_index": [-2, -1]},
        {"subset_by_index": [3, 1]},  # reversed
        {"subset_by_index": [0, 1], "subset_by_value": [0.0, 5.0]},  # both: value was ignored
        {"subset_by_value": [3.0, 1.0]},  # reversed bounds
        {"subset_by_value": [2.0, 2.0]},
    ],
)
def test_eigh_refuses_the_subsets_scipy_refuses(kw):
    a = np.diag([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError) as scipys:
        sl.eigh(a, eigvals_only=True, **kw)
    word = "indices" if "indices" in str(scipys.value) else "bounds"
    if "Either" in str(scipys.value):
        word = "either index or value"
    for f in (sla.eigh, fgrad.jit(sla.eigh, static_argnames=("eigvals_only",))):
        with pytest.raises(ValueError, match=word):
            f(a, eigvals_only=True, **kw)
    # the edges of the valid ranges are SciPy's values
    for ok in ({"subset_by_index": [0, 3]}, {"subset_by_index": [3, 3]}):
        np.testing.assert_allclose(
            sla.eigh(a, eigvals_only=True, **ok), sl.eigh(a, eigvals_only=True, **ok)
        )


EMPTY_FACTORIZATIONS = [
    ("lu", {}),
    ("lu", {"permute_l": True}),
    ("lu", {"p_indices": True}),
    ("lu_factor", {}),
    ("qr", {}),
    ("qr", {"mode": "economic"}),
    ("qr", {"mode": "r"}),
    ("qr", {"pivoting": True}),
    ("svd", {}),
    ("svd", {"full_matrices": False}),
    ("svd", {"compute_uv": False}),
]


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("shape_", [(0, 0), (3, 0), (0, 2)])
@pytest.mark.parametrize(
    "name, kw", EMPTY_FACTORIZATIONS, ids=[f"{n}{k}" for n, k in EMPTY_FACTORIZATIONS]
)
def test_factorizations_of_an_empty_matrix_are_scipys_empty_factors(name, kw, shape_):
    # they raised "it must be a non-empty matrix"; SciPy returns empty factors (and, for
    # qr and svd of a (3, 0) matrix, a full 3 x 3 orthogonal factor)
    def f(a):
        return getattr(sla, name)(a, **kw)

    for dtype in (np.float64, np.float32, np.complex128):
        a = np.zeros(shape_, dtype)
        want = _as_tuple(getattr(sl, name)(a, **kw))
        for out in (f(a), fgrad.jit(f)(a), _traced(f, a)):
            assert [(o.shape, o.dtype) for o in _as_tuple(out)] == [
                (w.shape, w.dtype) for w in want
            ]
            for o, w in zip(_as_tuple(out), want):
                np.testing.assert_array_equal(o, w)
        batched = _as_tuple(fgrad.vmap(f)(a[None]))
        assert [(o.shape[1:], o.dtype) for o in batched] == [(w.shape, w.dtype) for w in want]
    # derivatives of empty factors are empty, in the input's shape and dtype
    a = np.zeros(shape_, np.float32)

    def total(a):
        return sum(fnp.sum(o) for o in _as_tuple(f(a)) if o.dtype.kind == "f")

    for d in (grad(total), jacfwd(total), fgrad.jacrev(total), hessian(total)):
        out = d(a)
        assert out.dtype == np.float32 and out.shape[-2:] == shape_


@pytest.mark.parametrize("n, rhs", [(0, (0,)), (0, (0, 3))])
def test_lu_solve_of_an_empty_system(n, rhs):
    a, b = np.zeros((n, n)), np.zeros(rhs)
    want = sl.lu_solve(sl.lu_factor(a), b)
    for out in (
        sla.lu_solve(sla.lu_factor(a), b),
        _traced(lambda a: sla.lu_solve(sla.lu_factor(a), b), a),
    ):
        assert out.shape == want.shape and out.dtype == want.dtype
    g = grad(lambda a, b: fnp.sum(sla.lu_solve(sla.lu_factor(a), b)), argnums=(0, 1))(a, b)
    assert g[0].shape == a.shape and g[1].shape == b.shape


@pytest.mark.parametrize(
    "x", [2.0, np.float32(2.0), np.array([2.0]), 3, np.array(1.0 + 1.0j)], ids=repr
)
def test_expm_of_a_single_number_is_scipys_one_by_one_matrix(x):
    # SciPy (1.17) reads a 0-d or length-1 A as a number: [[e^A]], float64 or complex128;
    # fgrad raised "it must be a square matrix"
    want = sl.expm(x)
    outs = [sla.expm(x), fgrad.jit(sla.expm)(x)]
    if np.iscomplexobj(x) or isinstance(x, float) or np.asarray(x).dtype.kind == "f":
        outs.append(_traced(sla.expm, np.asarray(x)))
    for out in outs:
        assert out.shape == want.shape and out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)
    if np.asarray(x).dtype.kind == "f":
        x = np.asarray(x)

        def f(a):
            return sla.expm(a)[0, 0]

        e = np.exp(np.float64(x.ravel()[0]))  # d/dx e^x = e^x, to any order
        for d in (grad(f), grad(grad(lambda a: f(a)))):
            assert d(x).shape == x.shape and d(x).dtype == x.dtype
        for d in (grad(f), jacfwd(f), grad(grad(f)), fgrad.jacrev(jacfwd(f))):
            np.testing.assert_allclose(d(x), np.full_like(d(x), e), rtol=1e-6)
        batch = np.array([0.5, 2.0], x.dtype)
        np.testing.assert_array_equal(fgrad.vmap(sla.expm)(batch), [sl.expm(b) for b in batch])


NUMBERS = [0.3, 2, True, np.float32(0.3), np.float16(0.3), np.array(0.3), np.array([0.3])]
NUMBERS += [np.int8(2), np.array(True), np.complex64(0.3 + 0.1j), 0.3 + 0.1j]


@pytest.mark.parametrize("name", ["cholesky", "cho_factor", "lu_factor", "expm"])
@pytest.mark.parametrize("x", NUMBERS, ids=repr)
def test_single_numbers_are_scipys_one_by_one_matrices(name, x):
    # SciPy 1.17 reads a 0-d or length-1 a as [[a]]; fgrad raised "it must be a square matrix"
    # (expm(True) was float64 where SciPy's is float16)
    want = getattr(sl, name)(x)
    for out in (getattr(sla, name)(x), fgrad.jit(getattr(sla, name))(x)):
        for o, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (out, want))):
            assert np.shape(o) == np.shape(w) and np.asarray(o).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(o, w)


@pytest.mark.parametrize("x", [0.3, np.float32(0.3), np.array([0.3]), 2, 0.3 + 0.1j], ids=repr)
def test_sqrtm_of_a_single_number_is_its_square_root(x):
    # SciPy 1.17.1 returns [[e^x]] here (scipy/scipy#25610, fixed by #25615 to sqrt(x.item()));
    # fgrad raised. It is SciPy's root of the matrix [[x]], as float64 (complex128)
    out = sla.sqrtm(x)
    want = sl.sqrtm(np.reshape(np.asarray(x, np.result_type(x, np.float64)), (1, 1)))
    assert out.shape == (1, 1) and out.dtype == want.dtype
    np.testing.assert_allclose(out, want, rtol=1e-15)
    np.testing.assert_array_equal(fgrad.jit(sla.sqrtm)(x), out)


def test_single_number_factorizations_and_solve_differentiate():
    x = np.float64(0.3)
    d = {  # closed forms of the 1 x 1 case: sqrt(x), x, b / x, sqrt(x), e^x
        "cholesky": (lambda a: sla.cholesky(a)[0, 0], 0.5 / np.sqrt(x)),
        "cho_factor": (lambda a: sla.cho_factor(a)[0][0, 0], 0.5 / np.sqrt(x)),
        "lu_factor": (lambda a: sla.lu_factor(a)[0], 1.0),
        "solve": (lambda a: sla.solve(a, 0.45)[0], -0.45 / x**2),
        "sqrtm": (lambda a: sla.sqrtm(a)[0, 0], 0.5 / np.sqrt(x)),
        "expm": (lambda a: sla.expm(a)[0, 0], np.exp(x)),
    }
    for name, (f, want) in d.items():
        for deriv in (grad(f), jacfwd(f)):
            assert deriv(x).dtype == x.dtype, name
            np.testing.assert_allclose(deriv(x), want, rtol=1e-12, err_msg=name)
    g = grad(lambda b: sla.solve(x, b)[0])(0.45)
    np.testing.assert_allclose(g, 1 / x, rtol=1e-15)


@pytest.mark.parametrize(
    "a, b",
    [(0.3, 0.45), (np.float32(0.3), np.float32(0.45)), (0.3, [0.45]), (np.array([0.3]), 0.45)],
    ids=repr,
)
def test_solve_with_a_single_number_is_scipys(a, b):
    want = sl.solve(a, b)
    for out in (sla.solve(a, b), fgrad.jit(sla.solve)(a, b)):
        assert out.shape == want.shape and out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)


def test_cho_factor_errors_name_cho_factor():
    with pytest.raises(ValueError, match="scipy.linalg.cho_factor"):
        sla.cho_factor(np.ones(3))


def test_vmap_of_solve_banded_with_float16_bands_solves_in_float32_as_scipy():
    """vmap(solve_banded) with float16 bands raised NumPy's bare "array type float16 is
    unsupported in linalg": its batching rule's dense solve did not widen float16 to float32,
    as SciPy (and the loop over rows) and the triangular and Sylvester rules do."""
    rng = np.random.default_rng(0)
    ab = (rng.normal(size=(2, 3, 4)) + np.array([0.0, 4.0, 0.0])[:, None]).astype(np.float16)
    b = rng.normal(size=(2, 4)).astype(np.float16)
    want = np.stack([sl.solve_banded((1, 1), a, c) for a, c in zip(ab, b)])
    for in_axes in (0, (0, None)):
        rhs = b if in_axes == 0 else b[0]
        got = fgrad.vmap(lambda ab, b: sla.solve_banded((1, 1), ab, b), in_axes)(ab, rhs)
        rows = want if in_axes == 0 else [sl.solve_banded((1, 1), a, b[0]) for a in ab]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, rows, rtol=1e-5, atol=1e-6)


def test_solve_sylvester_names_qs_shape_eagerly_and_under_vmap():
    # under vmap the batching rule's reshape said "cannot reshape array of size 64 into shape
    # (16,1)"; eagerly NumPy's "shapes (4,4) and (8,8) not aligned"
    a, b, q = 2.0 * np.eye(4), 3.0 * np.eye(4), np.ones((8, 8))
    with pytest.raises(ValueError, match=r"q must have shape \(4, 4\) .*got shape \(8, 8\)"):
        sla.solve_sylvester(a, b, q)
    with pytest.raises(ValueError, match=r"q must have shape \(4, 4\)"):
        fgrad.vmap(lambda m: sla.solve_sylvester(m, b, q))(np.stack([a, a]))
    # a scalar q of a 1 x 1 equation broadcasts, as SciPy's
    np.testing.assert_allclose(sla.solve_sylvester(np.eye(1), np.eye(1), 1.0), [[0.5]])


def test_a_batch_of_factorizations_raises_on_a_nan_as_each_one_does():
    # vmap's stacked lu, lu_factor, qr and svd returned values (an identity permutation for
    # lu) for a matrix with a nan, where each matrix's own call raises, as SciPy's
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    bad = a.copy()
    bad[0, 0] = np.nan
    for f in (sla.lu, sla.lu_factor, sla.qr, sla.svd):
        with pytest.raises(ValueError, match="must not contain infs or NaNs"):
            f(bad)
        with pytest.raises(ValueError, match="must not contain infs or NaNs"):
            fgrad.vmap(f)(np.stack([a, bad]))
        fgrad.vmap(f)(np.stack([a, 2.0 * a]))  # finite stacks as before


def test_solve_of_a_b_that_does_not_fit_names_scipys_solve():
    """The error named NumPy's linalg.solve; SciPy refuses the same b."""
    with pytest.raises(ValueError):
        sl.solve(np.eye(3), np.ones(4))
    with pytest.raises(
        ValueError,
        match=(
            r"^scipy.linalg.solve: 'b' has shape \(4,\) and dtype float64 but 'a' "
            r"has shape \(3, 3\)"
        ),
    ):
        grad(lambda b: fnp.sum(sla.solve(np.eye(3), b)))(np.ones(4))


@pytest.mark.parametrize("assume_a", ["sym", "pos"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_of_a_symmetric_assumption_transposed_reads_as_own_triangle(assume_a, lower):
    """With transposed=True fgrad transposed a first and so read its other triangle: value
    and gradient of another matrix (probe EK #1). SciPy reads a's own `lower` triangle."""
    a = np.array([[4.0, 1.0, 0.0], [-2.0, 5.0, 1.0], [3.0, 0.5, 6.0]])  # not symmetric
    b = np.array([1.0, 2.0, 3.0])
    for transposed in (False, True):
        ours = sla.solve(a, b, assume_a=assume_a, lower=lower, transposed=transposed)
        theirs = sl.solve(a, b, assume_a=assume_a, lower=lower, transposed=transposed)
        np.testing.assert_allclose(ours, theirs, rtol=1e-13)
        g = fgrad.grad(
            lambda m: fnp.sum(sla.solve(m, b, assume_a=assume_a, lower=lower, transposed=True))
        )(a)
        unread = np.tril(np.ones((3, 3)), -1) if not lower else np.triu(np.ones((3, 3)), 1)
        assert not np.any(g[unread == 1])  # the other triangle is not read
        check_grads(
            lambda m: sla.solve(m, b, assume_a=assume_a, lower=lower, transposed=True),
            (a,),
            order=1,
            modes=("rev",),
        )


def test_solve_sylvester_of_a_complex_and_a_real_operand_with_complex_eigenvalues():
    """SciPy 1.17's solve_sylvester hands a real operand's real Schur form (quasi-triangular:
    its eigenvalues are complex) to the complex solver, which reads it as triangular: its X
    left a residual of 0.1, vmap's Kronecker form gave another X, and the gradient matched
    neither (probe FE #4). X now solves the equation whichever operand is the real one."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 3)) + 2 * 3**0.5 * np.eye(3) + 1j * rng.standard_normal((3, 3))
    b = np.array([[3.0, 1.0], [-0.75, 3.0]])  # eigenvalues 3 +- 0.866j
    q = rng.standard_normal((3, 2))
    real_a = np.array([[3.0, 1.0, 0.0], [-2.0, 3.0, 0.5], [0.0, 0.0, 4.0]])
    complex_b = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2)) + 3 * np.eye(2)
    for a_, b_ in ((a, b), (real_a, complex_b)):
        x = sla.solve_sylvester(a_, b_, q)
        np.testing.assert_allclose(a_ @ x + x @ b_, q, atol=1e-13)
        rows = fgrad.vmap(sla.solve_sylvester, in_axes=(None, None, 0))(a_, b_, q[None])
        np.testing.assert_allclose(rows[0], x, atol=1e-13)
    f = lambda q: fnp.sum(fnp.real(sla.solve_sylvester(a, b, q)))
    check_grads(f, (q,), order=1, modes=("rev",))
