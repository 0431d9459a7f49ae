"""`fgrad.custom_linear_solve` and `fgrad.custom_root`: derivatives of a solution by what it
satisfies, against closed forms, central differences, a differentiated unrolled solver, and
under every transform; and the errors a wrong call gets."""

import numpy as np
import pytest
import scipy.sparse.linalg as ssl

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

rng = np.random.default_rng(0)
A0 = rng.standard_normal((3, 3)) + 3 * np.eye(3)
S0 = A0 @ A0.T  # symmetric positive definite
B0 = rng.standard_normal(3)


def dense_solve(matvec, b):
    """A direct solve with the matrix `matvec` applies (its Jacobian, on plain values)."""
    return np.linalg.solve(fgrad.jacfwd(matvec)(b), b)


def dense_transpose_solve(vecmat, b):
    return np.linalg.solve(fgrad.jacfwd(vecmat)(b), b)


def cg_solve(matvec, b):
    op = ssl.LinearOperator((b.size, b.size), matvec=lambda v: np.asarray(matvec(v)))
    x, info = ssl.cg(op, b, rtol=1e-14, atol=0.0)
    assert info == 0
    return x


def solved(a, b):
    """A^-1 b by custom_linear_solve, A read from a closure."""
    return fgrad.custom_linear_solve(lambda x: a @ x, b, dense_solve, dense_transpose_solve)


# --- custom_linear_solve --------------------------------------------------------------------------


def test_linear_solve_value_and_derivatives_match_numpy_solve():
    f = lambda a, b: fnp.sin(solved(a, b))
    g = lambda a, b: fnp.sin(fnp.linalg.solve(a, b))
    np.testing.assert_allclose(f(A0, B0), g(A0, B0), rtol=1e-13)
    for argnums in (0, 1, (0, 1)):
        for jac in (fgrad.jacrev, fgrad.jacfwd):
            got, want = jac(f, argnums)(A0, B0), jac(g, argnums)(A0, B0)
            pairs = zip(got, want) if type(argnums) is tuple else [(got, want)]
            for a, b in pairs:
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    loss = lambda a, b: fnp.sum(f(a, b) ** 2)
    ref = lambda a, b: fnp.sum(g(a, b) ** 2)
    np.testing.assert_allclose(
        fgrad.hessian(loss)(A0, B0), fgrad.hessian(ref)(A0, B0), rtol=1e-8, atol=1e-10
    )


def test_linear_solve_check_grads_order_2():
    check_grads(lambda a, b: solved(a, b), (A0, B0), order=2)


def test_symmetric_iterative_solve_needs_no_transpose_solve():
    def f(s, b):
        return fgrad.custom_linear_solve(lambda x: s @ x, b, cg_solve, symmetric=True)

    check_grads(lambda b: f(S0, b), (B0,), order=2)
    np.testing.assert_allclose(
        fgrad.jacrev(f)(S0, B0), fgrad.jacrev(fnp.linalg.solve)(S0, B0), rtol=1e-9, atol=1e-11
    )


def test_reverse_mode_without_transpose_solve_says_what_to_pass():
    def f(b):
        return fgrad.custom_linear_solve(lambda x: A0 @ x, b, dense_solve)

    np.testing.assert_allclose(
        fgrad.jacfwd(f)(B0), np.linalg.inv(A0), rtol=1e-10
    )  # forward mode needs only solve
    with pytest.raises(TypeError, match="transpose_solve=.*symmetric=True"):
        fgrad.grad(lambda b: fnp.sum(f(b)))(B0)


def test_pytree_right_hand_side():
    def f(d, b):
        def matvec(x):
            return {"u": d * x["u"], "v": 2.0 * x["v"] + x["u"][0]}

        def solve(mv, r):  # block lower triangular: u first
            u = r["u"] / d_plain
            return {"u": u, "v": (r["v"] - u[0]) / 2.0}

        d_plain = fgrad.core.primal(d)
        return fgrad.custom_linear_solve(matvec, b, solve, symmetric=False)["v"]

    b = {"u": np.array([1.0, 2.0]), "v": np.array(3.0)}
    d = np.array([2.0, 4.0])
    # v = (b_v - b_u[0] / d[0]) / 2
    assert float(f(d, b)) == pytest.approx((3.0 - 0.5) / 2.0)
    np.testing.assert_allclose(fgrad.jacfwd(f)(d, b), [0.5 * 1.0 / 2.0**2, 0.0], rtol=1e-12)


def test_linear_solve_under_vmap_jet_and_jit():
    batch_a = np.stack([A0, A0 + np.eye(3)])
    got = fgrad.vmap(solved)(batch_a, np.stack([B0, -B0]))
    want = np.stack([np.linalg.solve(batch_a[0], B0), np.linalg.solve(batch_a[1], -B0)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a value batched by vmap read from the closure, not passed
    got = fgrad.vmap(lambda a: solved(a, B0))(batch_a)
    np.testing.assert_allclose(got[1], np.linalg.solve(batch_a[1], B0), rtol=1e-12)
    grads = fgrad.vmap(fgrad.grad(lambda a, b: fnp.sum(solved(a, b))))(batch_a, np.stack([B0] * 2))
    np.testing.assert_allclose(
        grads[1], fgrad.grad(lambda a: fnp.sum(fnp.linalg.solve(a, B0)))(batch_a[1]), rtol=1e-10
    )
    # Taylor mode: the path a(t) = A0 + t E
    e = np.eye(3)[::-1]
    _, got = fgrad.jet(lambda t: solved(A0 + t * e, B0)[0], (0.0,), ((1.0, 0.0, 0.0),))
    _, want = fgrad.jet(lambda t: fnp.linalg.solve(A0 + t * e, B0)[0], (0.0,), ((1.0, 0.0, 0.0),))
    np.testing.assert_allclose(got, want, rtol=1e-9)
    jitted = fgrad.jit(fgrad.grad(lambda a: fnp.sum(solved(a, B0))))
    for a in (A0, A0 + np.eye(3)):
        np.testing.assert_allclose(
            jitted(a), fgrad.grad(lambda a: fnp.sum(fnp.linalg.solve(a, B0)))(a), rtol=1e-10
        )


# --- custom_root ----------------------------------------------------------------------------------


def newton(f, x):
    for _ in range(40):
        x = x - f(x) / fgrad.grad(f)(x)
    return x


def scalar_tangent_solve(g, y):
    return y / g(1.0)


def cube_root(a):
    return fgrad.custom_root(lambda x: x**3 - a, 1.0, newton, scalar_tangent_solve)


def test_root_closed_form_every_order():
    a = 8.0
    assert float(cube_root(a)) == pytest.approx(2.0, rel=1e-14)
    d1 = lambda a: a ** (-2 / 3) / 3
    d2 = lambda a: -2 / 9 * a ** (-5 / 3)
    d3 = lambda a: 10 / 27 * a ** (-8 / 3)
    assert float(fgrad.grad(cube_root)(a)) == pytest.approx(d1(a), rel=1e-13)
    assert float(fgrad.grad(fgrad.grad(cube_root))(a)) == pytest.approx(d2(a), rel=1e-12)
    third = fgrad.jacfwd(fgrad.grad(fgrad.jacfwd(cube_root)))(a)
    assert float(third) == pytest.approx(d3(a), rel=1e-11)
    _, series = fgrad.jet(cube_root, (a,), ((1.0, 0.0, 0.0),))
    np.testing.assert_allclose(series, [d1(a), d2(a), d3(a)], rtol=1e-11)


def vector_root(p):
    """The root of x**3 + x - p + 0.1 * roll(x, 1) (p read from a closure)."""

    def f(x):
        return x**3 + x - p + 0.1 * fnp.roll(x, 1)

    def solve(f, x):
        for _ in range(30):
            x = x - np.linalg.solve(fgrad.jacfwd(f)(x), f(x))
        return x

    def tangent_solve(g, y):
        return np.linalg.solve(fgrad.jacfwd(g)(y), y)

    return fgrad.custom_root(f, np.ones(3), solve, tangent_solve)


def unrolled_vector_root(p):
    """The same Newton iteration written in fgrad operations: differentiated step by step."""
    x = fnp.ones(3)
    for _ in range(30):
        fx = x**3 + x - p + 0.1 * fnp.roll(x, 1)
        jac = fnp.diag(3 * x**2 + 1) + 0.1 * fnp.roll(fnp.eye(3), 1, axis=0)
        x = x - fnp.linalg.solve(jac, fx)
    return x


def test_root_against_an_unrolled_solver_and_central_differences():
    p = np.array([2.0, 10.0, -1.0])
    np.testing.assert_allclose(vector_root(p), unrolled_vector_root(p), rtol=1e-13)
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        np.testing.assert_allclose(
            jac(vector_root)(p), jac(unrolled_vector_root)(p), rtol=1e-11, atol=1e-13
        )
    loss = lambda p: fnp.sum(vector_root(p) ** 2)
    loss_unrolled = lambda p: fnp.sum(unrolled_vector_root(p) ** 2)
    np.testing.assert_allclose(
        fgrad.hessian(loss)(p), fgrad.hessian(loss_unrolled)(p), rtol=1e-9, atol=1e-12
    )
    check_grads(vector_root, (p,), order=2)


def test_root_has_aux_and_no_derivative_for_the_guess():
    def solve(f, x):
        return newton(f, x), {"iterations": np.array(40)}

    def f(a, x0):
        return fgrad.custom_root(lambda x: x**2 - a, x0, solve, scalar_tangent_solve, True)

    x, aux = f(4.0, 1.0)
    assert float(x) == 2.0 and int(aux["iterations"]) == 40
    assert float(fgrad.grad(lambda a: f(a, 1.0)[0])(4.0)) == pytest.approx(0.25, rel=1e-14)
    assert float(fgrad.grad(lambda x0: f(4.0, x0)[0])(1.0)) == 0.0


def test_root_nested_levels_no_perturbation_confusion():
    # r(a, b) solves x**2 = a * b: d/da d/db sqrt(a b) = 1 / (4 sqrt(a b))
    def r(a, b):
        return fgrad.custom_root(lambda x: x**2 - a * b, 1.0, newton, scalar_tangent_solve)

    got = fgrad.grad(lambda a: fgrad.grad(lambda b: r(a, b))(2.0))(8.0)
    assert float(got) == pytest.approx(1 / (4 * 4.0), rel=1e-12)


def test_root_under_vmap_and_jit():
    a = np.array([1.0, 8.0, 27.0])
    np.testing.assert_allclose(fgrad.vmap(cube_root)(a), [1.0, 2.0, 3.0], rtol=1e-14)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(cube_root))(a), a ** (-2 / 3) / 3, rtol=1e-13)
    jitted = fgrad.jit(fgrad.grad(cube_root))
    for v in a:
        assert float(jitted(v)) == pytest.approx(v ** (-2 / 3) / 3, rel=1e-13)


def test_grad_of_a_vmap_whose_function_closes_over_a_row_says_what_to_write():
    """grad(vmap(f)) with f reading the vmapped value from a closure: the differentiating
    level's box under the vmap holds every row, which one row's solve cannot pair (before, the
    backward pass failed with a cotangent of the wrong shape); vmap(grad(f)) works."""
    a = np.array([1.0, 8.0, 27.0])
    with pytest.raises(TypeError, match=r"vmap\(grad\(f\)\) rather than grad\(vmap\(f\)\)") as e:
        fgrad.grad(lambda a: fnp.sum(fgrad.vmap(cube_root)(a)))(a)
    assert "in args" not in str(e.value)  # custom_root has no args: a closure is its only way
    A = np.array([[4.0, 1.0], [1.0, 3.0]])

    def scaled_solve(s):
        return fgrad.custom_linear_solve(
            lambda x: s * (A @ x), np.ones(2), lambda mv, b: np.linalg.solve(A, b) / 1.0
        )

    with pytest.raises(TypeError, match="custom_linear_solve: under vmap"):
        fgrad.grad(lambda s: fnp.sum(fgrad.vmap(scaled_solve)(s)))(np.array([1.0, 2.0]))
    # jit(vmap(f)) likewise (before, its result had shape (3, 3) for 3 rows of scalars);
    # vmap(jit(f)) works
    with pytest.raises(TypeError, match=r"vmap\(jit\(f\)\) rather than jit\(vmap\(f\)\)"):
        fgrad.jit(fgrad.vmap(cube_root))(a)
    np.testing.assert_allclose(fgrad.vmap(fgrad.jit(cube_root))(a), [1.0, 2.0, 3.0], rtol=1e-14)


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_is_named():
    # custom_root has no right-hand side: f's output is compared with initial_guess
    with pytest.raises(ValueError, match=r"f returned .*but initial_guess is"):
        fgrad.custom_root(lambda x: x[:1], np.ones(2), lambda f, x: x, lambda g, y: y)
    with pytest.raises(ValueError, match=r"matvec returned .*shape.*\(2,\).*right-hand side"):
        fgrad.custom_linear_solve(lambda x: x[:2], B0, dense_solve)
    with pytest.raises(ValueError, match="solve returned"):
        fgrad.custom_linear_solve(lambda x: x, B0, lambda mv, b: b[:2])
    with pytest.raises(TypeError, match=r"b leaf 0 has shape \(2,\) and dtype <U1"):
        fgrad.custom_linear_solve(lambda x: x, np.array(["a", "b"]), dense_solve)
    with pytest.raises(TypeError, match="custom_root.*functions"):
        fgrad.custom_root(lambda x: x, 1.0, None, scalar_tangent_solve)
    with pytest.raises(ValueError, match="f returned"):
        fgrad.custom_root(lambda x: fnp.stack([x, x]), 1.0, newton, scalar_tangent_solve)


def test_a_parameter_read_only_after_the_first_run_is_refused():
    runs = []

    def r(a):
        def f(x):  # reads a only from its second call: the first run cannot see it
            runs.append(1)
            return x**2 - (a if len(runs) > 1 else 4.0)

        def solve(f, x):
            for _ in range(30):
                x = x - f(x) / (2 * x)
            return x

        return fgrad.custom_root(f, 1.0, solve, scalar_tangent_solve)

    with pytest.raises(TypeError, match="did not read when it was first run"):
        fgrad.grad(r)(4.0)
