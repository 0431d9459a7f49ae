"""`fgrad.scipy.optimize`: solutions differentiated by the implicit function theorem, against
central differences of the whole solve, a differentiated unrolled solver and closed forms; a
bilevel problem; the transforms; failed solves and bad input."""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy.optimize import (
    brentq,
    fixed_point,
    least_squares,
    minimize,
    root,
    root_scalar,
)
from fgrad.test_util import check_grads

rng = np.random.default_rng(1)
TIGHT = {"gtol": 1e-12, "ftol": 1e-16, "maxiter": 1000}  # L-BFGS-B


def objective(x, a, c):
    """Strongly convex: quadratic pull to a, quartic, and a coupling weighted by c."""
    return fnp.sum((x - a) ** 2) + fnp.sum(x**4) / 4 + c * fnp.sum(x[:-1] * x[1:])


def argmin(a, c, method="L-BFGS-B", **kw):
    options = kw.pop("options", TIGHT if method == "L-BFGS-B" else None)
    return minimize(objective, np.zeros(3), args=(a, c), method=method, options=options, **kw).x


def central(f, x, h=1e-4):
    """Central differences of f at x, one column per element of x (the whole solve each)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for e in np.eye(x.size):
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + h * e)) - np.asarray(f(x - h * e))) / (2 * h))
    return np.stack(cols, axis=-1)


A = np.array([1.0, 2.0, -0.5])
C = 0.3


# --- minimize -------------------------------------------------------------------------------------


def test_minimize_gradient_matches_central_differences_of_the_solve():
    jac_rev = fgrad.jacrev(argmin)(A, C)
    jac_fwd = fgrad.jacfwd(argmin)(A, C)
    np.testing.assert_allclose(jac_rev, jac_fwd, rtol=1e-10, atol=1e-13)
    # central differences of the whole solve: L-BFGS-B solves to about 5e-12 here, which a
    # step of 1e-4 turns into errors up to 5e-8
    fd = central(lambda a: argmin(a, C), A)
    np.testing.assert_allclose(jac_rev, fd, rtol=1e-6, atol=1e-7)
    d_c = fgrad.jacrev(argmin, argnums=1)(A, C)
    fd = central(lambda c: argmin(A, c), C).ravel()
    np.testing.assert_allclose(d_c, fd, rtol=1e-6, atol=1e-7)


def test_minimize_second_order_matches_central_differences_of_the_gradient():
    loss = lambda a: fnp.sum(fnp.sin(argmin(a, C)))
    hess = fgrad.hessian(loss)(A)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hess, central(fgrad.grad(loss), A), rtol=1e-5, atol=1e-7)
    check_grads(lambda a: argmin(a, C), (A,), order=2)


def unrolled_gradient_descent(a, c, steps=400, lr=0.1):
    x = fnp.zeros(3)
    g = fgrad.grad(objective)
    for _ in range(steps):
        x = x - lr * g(x, a, c)
    return x


def test_minimize_gradient_matches_an_unrolled_solver():
    np.testing.assert_allclose(argmin(A, C), unrolled_gradient_descent(A, C), atol=1e-11)
    np.testing.assert_allclose(
        fgrad.jacrev(argmin)(A, C),
        fgrad.jacrev(unrolled_gradient_descent)(A, C),
        rtol=1e-8,
        atol=1e-10,
    )


@pytest.mark.parametrize(
    "method, options",
    [
        ("BFGS", {"gtol": 1e-10}),
        ("Newton-CG", {"xtol": 1e-12}),
        ("trust-ncg", {"gtol": 1e-8}),
        ("Nelder-Mead", {"xatol": 1e-12, "fatol": 1e-16, "maxiter": 20000}),
    ],
)
def test_minimize_methods_agree(method, options):
    got = fgrad.jacrev(lambda a: argmin(a, C, method, options=options))(A)
    np.testing.assert_allclose(got, fgrad.jacrev(argmin)(A, C), rtol=1e-5, atol=1e-7)


def test_minimize_implicit_solves_agree_and_closures_are_differentiated():
    want = fgrad.jacrev(argmin)(A, C)
    for solve in ("direct", "cg", "gmres"):
        got = fgrad.jacrev(lambda a: argmin(a, C, implicit_solve=solve))(A)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)

    def closed(a):  # a read from a closure, not given in args
        return minimize(
            lambda x: objective(x, a, C), np.zeros(3), method="L-BFGS-B", options=TIGHT
        ).x

    np.testing.assert_allclose(fgrad.jacrev(closed)(A), want, rtol=1e-12)
    np.testing.assert_allclose(fgrad.jacfwd(closed)(A), want, rtol=1e-10)


def test_minimize_user_jac_and_result_fields():
    def fun_and_grad(x, a, c):
        return objective(x, a, c), fgrad.grad(objective)(x, a, c)

    res = minimize(
        fun_and_grad, np.zeros(3), args=(A, C), jac=True, method="L-BFGS-B", options=TIGHT
    )
    assert res.success and res.x.shape == (3,)

    def value(a):
        r = minimize(objective, np.zeros(3), args=(a, C), method="L-BFGS-B", options=TIGHT)
        return r.fun

    # the envelope theorem: d/da min_x f(x, a) = df/da at the minimizer
    x = argmin(A, C)
    np.testing.assert_allclose(fgrad.grad(value)(A), -2 * (x - A), rtol=1e-9)


def test_a_users_jac_and_hess_may_close_over_the_parameters():
    # They only guide SciPy's search (the derivative is fun's, by the implicit function
    # theorem): a closure over a traced parameter was refused as if a gradient were dropped
    def solution(a):
        return minimize(
            lambda x: fnp.sum((x - a) ** 4),
            np.zeros(2),
            method="Newton-CG",
            jac=lambda x: 4 * (x - a) ** 3,
            hess=lambda x: fnp.diag(12 * (x - a) ** 2 + 1e-9),
        ).x[1]

    np.testing.assert_allclose(fgrad.grad(solution)(2.0), 1.0, rtol=1e-6)
    # the same for root's jac, least_squares' jac and root_scalar's fprime
    root_jac = lambda a: root(
        lambda x: x**3 - a, np.array([1.0]), jac=lambda x: fnp.diag(3 * x**2) + 0 * a
    ).x[0]
    fit_jac = lambda a: least_squares(
        lambda x: x**2 - a, np.array([1.0]), jac=lambda x: fnp.diag(2 * x) + 0 * a
    ).x[0]
    newton = lambda a: (
        root_scalar(
            lambda x: x**2 - a, x0=1.0, fprime=lambda x: 2 * x + 0 * a, method="newton"
        ).root
    )
    np.testing.assert_allclose(fgrad.grad(root_jac)(2.0), 2.0 ** (-2 / 3) / 3, rtol=1e-6)
    for fn in (fit_jac, newton):
        np.testing.assert_allclose(fgrad.grad(fn)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-6)


def test_minimize_under_vmap_jit_and_jet():
    batch = np.stack([A, A + 1.0])
    np.testing.assert_allclose(
        fgrad.vmap(lambda a: argmin(a, C))(batch)[1], argmin(A + 1.0, C), rtol=1e-12
    )
    per_row = fgrad.vmap(fgrad.jacrev(lambda a: argmin(a, C)))(batch)
    np.testing.assert_allclose(per_row[1], fgrad.jacrev(argmin)(A + 1.0, C), rtol=1e-10)
    jitted = fgrad.jit(fgrad.jacrev(lambda a: argmin(a, C)))
    for a in (A, A + 1.0, A - 0.5):
        np.testing.assert_allclose(jitted(a), fgrad.jacrev(argmin)(a, C), rtol=1e-10, atol=1e-13)
    e = np.array([1.0, -1.0, 0.5])
    _, series = fgrad.jet(lambda t: argmin(A + t * e, C)[0], (0.0,), ((1.0, 0.0),))
    d1 = fgrad.jvp(lambda t: argmin(A + t * e, C)[0], (0.0,), (1.0,))[1]
    d2 = fgrad.grad(fgrad.grad(lambda t: argmin(A + t * e, C)[0]))(0.0)
    np.testing.assert_allclose(series, [d1, d2], rtol=1e-8)


# --- a bilevel problem: ridge regularisation chosen by the validation loss ----------------------

X_TRAIN = rng.standard_normal((30, 5))
W_TRUE = rng.standard_normal(5)
Y_TRAIN = X_TRAIN @ W_TRUE + 0.5 * rng.standard_normal(30)
X_VAL = rng.standard_normal((20, 5))
Y_VAL = X_VAL @ W_TRUE + 0.5 * rng.standard_normal(20)


def ridge_loss(w, log_lam):
    return fnp.sum((X_TRAIN @ w - Y_TRAIN) ** 2) + fnp.exp(log_lam) * fnp.sum(w**2)


def validation_loss(log_lam):
    # trust-exact (with fgrad's Hessian) solves this quadratic to rounding; L-BFGS-B stops
    # with ABNORMAL for some log(lambda) at the tolerances that an rtol of 1e-8 needs
    options = {"gtol": 1e-10}
    w = minimize(ridge_loss, np.zeros(5), args=(log_lam,), method="trust-exact", options=options).x
    return fnp.mean((X_VAL @ w - Y_VAL) ** 2)


def validation_loss_closed_form(log_lam):
    lam = fnp.exp(log_lam)
    w = fnp.linalg.solve(X_TRAIN.T @ X_TRAIN + lam * fnp.eye(5), X_TRAIN.T @ Y_TRAIN)
    return fnp.mean((X_VAL @ w - Y_VAL) ** 2)


def test_bilevel_ridge_hypergradient():
    for log_lam in (-1.0, 1.0, 3.0):
        g = fgrad.grad(validation_loss)(log_lam)
        np.testing.assert_allclose(g, fgrad.grad(validation_loss_closed_form)(log_lam), rtol=1e-8)
        h = fgrad.grad(fgrad.grad(validation_loss))(log_lam)
        want = fgrad.grad(fgrad.grad(validation_loss_closed_form))(log_lam)
        np.testing.assert_allclose(h, want, rtol=1e-6)
    # gradient descent on log(lambda) by the implicit hypergradient lowers the validation loss
    log_lam, losses = 3.0, []
    for _ in range(15):
        losses.append(float(validation_loss(log_lam)))
        log_lam = log_lam - 2.0 * float(fgrad.grad(validation_loss)(log_lam))
    assert losses[-1] < losses[0] and all(b <= a + 1e-12 for a, b in zip(losses, losses[1:]))


# --- root, least_squares, fixed_point, root_scalar, brentq ---------------------------------------


def equations(x, p):
    return x**3 + x - p + 0.1 * fnp.roll(x, 1)


def solution(p):
    return root(equations, np.ones(3), args=(p,), tol=1e-13).x


def test_root_both_modes_second_order():
    p = np.array([2.0, 10.0, -1.0])
    jac = fgrad.jacrev(solution)(p)
    np.testing.assert_allclose(jac, fgrad.jacfwd(solution)(p), rtol=1e-10)
    np.testing.assert_allclose(jac, central(solution, p), rtol=1e-6, atol=1e-9)
    x = solution(p)
    np.testing.assert_allclose(equations(x, p), 0.0, atol=1e-12)
    check_grads(solution, (p,), order=2)
    lm = lambda p: root(equations, np.ones(3), args=(p,), method="lm", tol=1e-13).x
    np.testing.assert_allclose(fgrad.jacrev(lm)(p), jac, rtol=1e-9, atol=1e-12)


def test_root_checks_the_residual_not_only_scipys_success():
    # SciPy's krylov method reports success at this unreachable tol, far from the root
    p = np.array([2.0, 10.0, -1.0])
    res = root(equations, np.ones(3), args=(p,), method="krylov", tol=1e-13)
    assert res.success and np.max(np.abs(res.fun)) > 1.0
    with pytest.raises(RuntimeError, match=r"root did not converge.*max \|fun\(x\)\| = 1.98"):
        fgrad.jacrev(
            lambda p: root(equations, np.ones(3), args=(p,), method="krylov", tol=1e-13).x
        )(p)


@pytest.mark.parametrize("method", ["lm", "hybr"])
def test_root_refuses_a_point_that_is_no_root_whatever_the_start(method):
    """x0**2 + a = 0 has no root for a = 1: lm stops at the minimum of |fun|, fun = (1, 0),
    reporting success. The residual check, relative to fun(x0), passed it from x0 = 1e5
    (1 <= 1e-8 (1 + 1e10)) and jacfwd gave 4.5e8. A true root from the same start keeps its
    derivative: x0 = sqrt(-a), dx0/da = -1 / (2 x0)."""

    def solution(a, x0):
        f = lambda x, a: fnp.stack([x[0] ** 2 + a, x[1] - 1.0])
        return root(f, x0, args=(a,), method=method).x

    for x0 in (np.array([3.0, 0.0]), np.array([1e5, 0.0])):
        with pytest.raises(RuntimeError, match="root did not converge"):
            fgrad.jacfwd(solution)(1.0, x0)
        np.testing.assert_allclose(fgrad.jacfwd(solution)(-4.0, x0), [-0.25, 0.0], rtol=1e-7)


T = np.linspace(0.0, 1.0, 8)


def decay_residuals(k, y):
    return k[1] * fnp.exp(-k[0] * T) - y


def fitted(y, **kw):
    return least_squares(
        decay_residuals, np.ones(2), args=(y,), gtol=1e-15, ftol=1e-15, xtol=1e-15, **kw
    ).x


def test_least_squares_gradient_includes_the_residual_curvature():
    y = 1.5 * np.exp(-2.0 * T) + 0.05 * np.sin(7 * T)  # a misfit: the residuals are not zero
    jac = fgrad.jacrev(fitted)(y)
    np.testing.assert_allclose(jac, fgrad.jacfwd(fitted)(y), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(jac, central(fitted, y, h=1e-3), rtol=2e-5, atol=1e-7)
    # with a robust loss, the condition is the gradient of the robust cost
    soft = lambda y: fitted(y, loss="soft_l1", f_scale=0.1)
    np.testing.assert_allclose(
        fgrad.jacrev(soft)(y), central(soft, y, h=1e-3), rtol=1e-4, atol=1e-7
    )


def test_fixed_point_root_scalar_brentq_closed_forms():
    def fp(a):
        return fixed_point(lambda x, a: fnp.cos(a * x), np.array([0.5, 0.6]), args=(a,), xtol=1e-15)

    a = np.array([1.0, 0.5])
    x = fp(a)
    want = np.diag(-x * np.sin(a * x) / (1 + a * np.sin(a * x)))
    np.testing.assert_allclose(fgrad.jacrev(fp)(a), want, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(fgrad.jacfwd(fp)(a), want, rtol=1e-10, atol=1e-14)

    def cbrt(a):
        return root_scalar(lambda x, a: x**3 - a, args=(a,), x0=1.0, xtol=1e-15).root

    assert float(fgrad.grad(cbrt)(8.0)) == pytest.approx(1 / 12, rel=1e-12)
    assert float(fgrad.grad(fgrad.grad(cbrt))(8.0)) == pytest.approx(
        -2 / 9 * 8 ** (-5 / 3), rel=1e-10
    )
    bracketed = lambda a: (
        root_scalar(
            lambda x, a: x**3 - a,
            args=(a,),
            bracket=[0.0, 5.0],
            xtol=1e-15,
        ).root
    )
    assert float(fgrad.grad(bracketed)(8.0)) == pytest.approx(1 / 12, rel=1e-10)

    def log(c):
        return brentq(lambda x, c: fnp.exp(x) - c, -5.0, 5.0, args=(c,))

    assert float(fgrad.grad(log)(2.0)) == pytest.approx(0.5, rel=1e-12)
    assert float(fgrad.jacfwd(fgrad.grad(log))(2.0)) == pytest.approx(-0.25, rel=1e-10)
    np.testing.assert_allclose(
        fgrad.vmap(fgrad.grad(log))(np.array([2.0, 4.0])), [0.5, 0.25], rtol=1e-12
    )


# --- failures and bad input -----------------------------------------------------------------------


def test_a_failed_solve_raises_when_differentiated_and_warns_on_request():
    short = {"maxiter": 2}
    res = minimize(objective, np.zeros(3), args=(A, C), method="BFGS", options=short)
    assert not res.success  # nothing differentiated: SciPy's result as SciPy returns it
    with pytest.raises(RuntimeError, match="minimize did not converge.*on_failure='warn'"):
        fgrad.grad(lambda a: fnp.sum(argmin(a, C, "BFGS", options=short)))(A)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        fgrad.grad(lambda a: fnp.sum(argmin(a, C, "BFGS", options=short, on_failure="warn")))(A)
    with pytest.raises(RuntimeError, match="root did not converge"):
        fgrad.jacrev(lambda p: root(equations, np.ones(3), args=(p,), options={"maxfev": 3}).x)(
            np.array([2.0, 10.0, -1.0])
        )
    with pytest.raises(RuntimeError, match="root_scalar did not converge"):
        fgrad.grad(lambda a: root_scalar(lambda x, a: x**3 - a, args=(a,), x0=1.0, maxiter=2).root)(
            8.0
        )


def test_the_implicit_linear_solve_must_converge():
    def flat(a):  # every x with x[0] + x[1] = a minimizes: no isolated solution
        return minimize(
            lambda x, a: (x[0] + x[1] - a) ** 2,
            np.zeros(2),
            args=(a,),
            method="L-BFGS-B",
            options=TIGHT,
        ).x

    with pytest.raises(RuntimeError, match="singular.*not isolated"):
        fgrad.jacrev(flat)(1.0)


@pytest.mark.parametrize("c", [(0.1, 0.3), (0.7, 0.3)])
@pytest.mark.parametrize("implicit_solve", ["direct", "auto"])
def test_a_flat_valley_singular_up_to_rounding_raises(c, implicit_solve):
    # every x on the line c . x = a minimizes; the Hessian 2 c c^T, computed with rounding,
    # is not exactly singular (cond 2.3e16), and the solve returned 8.0 and 2.0
    def argmin0(a):
        f = lambda x, a: (c[0] * x[0] + c[1] * x[1] - a) ** 2
        return minimize(f, np.zeros(2), args=(a,), method="BFGS", implicit_solve=implicit_solve).x[
            0
        ]

    with pytest.raises(RuntimeError, match="singular there to working precision.*not isolated"):
        fgrad.grad(argmin0)(1.0)


def test_functions_that_return_their_derivatives_as_scipy_documents():
    # root(jac=True) and root_scalar(fprime=True / fprime2=True) failed with a float() of a
    # vector or a tuple, even with nothing traced
    def fj(x, a):
        return x**3 + x - a, fnp.diag(3 * x**2 + 1)

    a = np.array([2.0, 10.0])
    sol = lambda a: root(fj, np.ones(2), args=(a,), jac=True, tol=1e-13).x
    np.testing.assert_allclose(sol(a), [1.0, 2.0], rtol=1e-12)
    # x**3 + x = a: dx/da = 1 / (3 x**2 + 1)
    np.testing.assert_allclose(fgrad.jacfwd(sol)(a), np.diag([0.25, 1 / 13]), rtol=1e-9)

    with_first = lambda x, c: (x**3 - c, 3 * x**2)
    with_both = lambda x, c: (x**3 - c, 3 * x**2, 6 * x)
    for f, kw in ((with_first, dict(fprime=True)), (with_both, dict(fprime2=True))):
        for method in ("newton", "halley") if "fprime2" in kw else ("newton",):
            cbrt = lambda c: root_scalar(f, args=(c,), x0=1.0, method=method, xtol=1e-14, **kw)
            assert abs(cbrt(8.0).root - 2.0) < 1e-12
            assert abs(fgrad.grad(lambda c: cbrt(c).root)(8.0) - 1 / 12) < 1e-10


@pytest.mark.parametrize("method", ["broyden1", "krylov", "df-sane"])
def test_root_jac_true_with_a_method_without_jacobian_warns_and_ignores_it_as_scipy(method):
    # SciPy warns "Method ... does not use the jacobian (jac)" for these, and takes the
    # values of fun only with args (broyden1, krylov) or never (df-sane): fgrad passed the
    # (values, Jacobian) pair on and NumPy failed ("inhomogeneous shape")
    def sol(a):
        fj = lambda x: (x**3 + x - a, fnp.diag(3 * x**2 + 1))  # (no args)
        return root(fj, np.ones(2), jac=True, method=method, tol=1e-12).x

    a = np.array([2.0, 10.0])

    with pytest.warns(RuntimeWarning, match=f"Method {method} does not use the jacobian"):
        np.testing.assert_allclose(sol(a), [1.0, 2.0], rtol=1e-6)
    with pytest.warns(RuntimeWarning, match="does not use the jacobian"):
        jac = fgrad.jacfwd(sol)(a)
    np.testing.assert_allclose(jac, np.diag([0.25, 1 / 13]), rtol=1e-5)


def test_an_objective_of_one_element_is_a_scalar_as_in_scipy():
    a = np.array([1.0, 2.0])
    f = lambda x, a: fnp.reshape(fnp.sum((x - a) ** 2) + fnp.sum(x**4) / 4, (1,))
    argmin = lambda a: minimize(f, np.zeros(2), args=(a,), method="BFGS", options={"gtol": 1e-10}).x
    x = argmin(a)
    np.testing.assert_allclose(2 * x + x**3, 2 * a, rtol=1e-9)  # the gradient is zero there
    np.testing.assert_allclose(fgrad.jacrev(argmin)(a), np.diag(2 / (2 + 3 * x**2)), atol=1e-8)
    # another shape is refused, naming it (fgrad's gradient, or the value of jac=True)
    with pytest.raises(TypeError, match=r"scalar output.*shape \(2,\)"):
        minimize(lambda x: x**2, np.ones(2), method="BFGS")
    with pytest.raises(TypeError, match=r"fun must return a scalar.*shape \(2,\)"):
        minimize(lambda x: (x**2, 2 * x), np.ones(2), method="BFGS", jac=True)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match=r"x0 has shape \(2, 2\) and dtype float64.*1-D"):
        minimize(objective, np.zeros((2, 2)), args=(A, C))
    with pytest.raises(TypeError, match=r"x0 has shape \(3,\) and dtype complex128"):
        minimize(objective, np.zeros(3, complex), args=(A, C))
    with pytest.raises(ValueError, match="on_failure must be 'raise' or 'warn'"):
        minimize(objective, np.zeros(3), args=(A, C), on_failure="ignore")
    with pytest.raises(ValueError, match="implicit_solve must be one of"):
        minimize(objective, np.zeros(3), args=(A, C), implicit_solve="lu")
    with pytest.raises(ValueError, match=r"returned 2 values for 3 unknowns.*least_squares"):
        root(lambda x, p: x[:2] - p, np.ones(3), args=(1.0,))
    with pytest.raises(TypeError, match="must be callable"):
        minimize(objective(np.zeros(3), A, C), np.zeros(3))
    with pytest.raises(NotImplementedError, match=r"bounds are active.*\[0\]"):
        fgrad.jacrev(
            lambda a: (
                minimize(
                    objective,
                    np.zeros(3),
                    args=(a, C),
                    method="L-BFGS-B",
                    bounds=[(1.5, None), (None, None), (None, None)],
                ).x
            )
        )(A)
    with pytest.raises(NotImplementedError, match="constraints"):
        fgrad.jacrev(
            lambda a: (
                minimize(
                    objective,
                    np.zeros(3),
                    args=(a, C),
                    method="SLSQP",
                    constraints=[{"type": "eq", "fun": lambda x: x[0]}],
                ).x
            )
        )(A)


def test_inactive_bounds_do_not_change_the_derivative():
    def bounded(a):
        return minimize(
            objective,
            np.zeros(3),
            args=(a, C),
            method="L-BFGS-B",
            options=TIGHT,
            bounds=[(-10.0, 10.0)] * 3,
        ).x

    np.testing.assert_allclose(fgrad.jacrev(bounded)(A), fgrad.jacrev(argmin)(A, C), rtol=1e-9)


@pytest.mark.parametrize("method", ["Powell", "trust-constr", "L-BFGS-B", "Nelder-Mead"])
def test_a_bound_a_method_stops_short_of_is_active_and_one_nearby_is_not(method):
    """Powell and trust-constr stop about 3e-5 inside an active bound, which the check (on the
    bound to 1e-8) missed: jacrev gave 1 where the clamped solution's derivative is 0. Near
    a bound (5e-4 inside) with a zero gradient, the solution is interior: derivative 1."""

    def solution(a):
        return minimize(
            lambda x, a: fnp.sum((x - a) ** 2),
            np.ones(3),
            args=(a,),
            method=method,
            bounds=[(0.0, 5.0)] * 3,
            tol=1e-12,
        ).x

    with pytest.raises(NotImplementedError, match=r"bounds are active.*\[2\]"):
        fgrad.jacrev(solution)(np.array([1.0, 2.0, -0.5]))
    inside = np.array([1.0, 2.0, 5e-4])
    np.testing.assert_allclose(fgrad.jacrev(solution)(inside), np.eye(3), atol=1e-6)


def test_warnings_are_not_raised_on_success():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fgrad.jacrev(argmin)(A, C)


def test_a_vmapped_value_read_from_a_closure_inside_grad_or_jit_is_refused():
    """minimize and root did not refuse a value batched by a vmap inside grad (or jit) read
    from the function's closure, as custom_root does and docs/implicit.md says: rows that read
    equal values gave a wrong gradient ([1.383, 0.979] for [1.057, 0.648]) and jit's replays
    wrong solutions; root raised an error about a cotangent the user never passed."""
    from fgrad.scipy.optimize import minimize, root

    def argmin(a):
        def fun(x):
            return fnp.sum((x - a) ** 2) + fnp.sum(x**4) / 4

        return minimize(fun, np.zeros(2), method="BFGS").x

    def solve(a):
        return root(lambda x: x**3 + x - a, np.zeros(2)).x

    rows = np.ones((2, 2))
    for f in (argmin, solve):
        with pytest.raises(TypeError, match="pass the value as an argument"):
            fgrad.grad(lambda a: fnp.sum(fgrad.vmap(lambda r: f(a * r))(rows)))(np.ones(2))
        with pytest.raises(TypeError, match="under vmap inside jit"):
            fgrad.jit(fgrad.vmap(lambda a, r: f(a * r), in_axes=(None, 0)))(np.ones(2), rows)


BOUNDED = ["L-BFGS-B", "TNC", "SLSQP", "trust-constr", "Powell", "Nelder-Mead", "COBYLA", "COBYQA"]


@pytest.mark.parametrize("method", BOUNDED)
@pytest.mark.parametrize("offset, scale", [(0.0, 1.0), (1e4, 1.0), (0.0, 1e-3), (1e4, 1e-6)])
def test_an_active_bound_is_refused_whatever_the_objective_offset_or_scale(method, offset, scale):
    """trust-constr stops 4e-4 (offset 1e4) to 3e-3 (scale 1e-3) inside an active bound; the
    check compared the gradient with 1e-3 (1 + |f|) within a band of 1e-3, and grad gave 1.0
    where the solution, the bound x = 0, has derivative 0. An interior solution 0.05 from the
    bound keeps its derivative 1, with the same offsets and scales."""

    def solution(a):
        def f(x, a):
            return scale * fnp.sum((x - a) ** 2) + offset

        return minimize(f, np.array([-0.3]), args=(a,), method=method, bounds=[(None, 0.0)]).x[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy's warnings of a bounded method
        with pytest.raises(NotImplementedError, match=r"bounds are active.*\[0\]"):
            fgrad.grad(solution)(1.0)
        np.testing.assert_allclose(fgrad.grad(solution)(-0.05), 1.0, rtol=1e-6)


@pytest.mark.parametrize("method", ["trust-constr", "L-BFGS-B", "SLSQP", "TNC", "COBYQA"])
@pytest.mark.parametrize("c, a", [(10.0, 1e-3), (100.0, 1e-2), (1e5, 1.0)])
def test_an_active_bound_on_coupled_unknowns_is_refused(method, c, a):
    """c (x0 - x1)**2 + (x0 + x1 - 2a)**2 with x0 <= 0: for a > 0 the minimizer is on the
    bound, (0, 2a / (c + 1)), derivative (0, 2 / (c + 1)); trust-constr stops 1.8e-3 inside
    it (c = 10, a = 1e-3), where each unknown's own Newton step (4e-4) fell short of the
    bound, and jacfwd gave [1, 1], the unconstrained derivative. For a < 0 the minimizer
    (a, a) is interior, |a| from the bound: derivative [1, 1]."""

    def solution(a):
        def f(x, a):
            return c * (x[0] - x[1]) ** 2 + (x[0] + x[1] - 2 * a) ** 2

        bounds = [(None, 0.0), (None, None)]
        return minimize(f, np.array([-1.0, 0.0]), args=(a,), method=method, bounds=bounds).x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy's warnings of a bounded method
        with pytest.raises(NotImplementedError, match=r"bounds are active.*\[0\]"):
            fgrad.jacfwd(solution)(a)
        np.testing.assert_allclose(fgrad.jacfwd(solution)(-a), [1.0, 1.0], rtol=1e-6)


@pytest.mark.parametrize("method", ["trf", "dogbox"])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_least_squares_refuses_a_bound_it_stops_short_of(method, scale):
    """least_squares read an active bound from SciPy's active_mask only: TRF, an interior
    method, stops 1.96e-3 inside the bound x >= 0 for the residual 1e-3 (x - a) with its
    active_mask 0, and grad gave 1.0 where the solution, the bound, has derivative 0. An
    interior solution keeps its derivative 1, at every scale."""

    def solution(a):
        residual = lambda x, a: scale * (x - a)
        bounds = (0.0, 1.0)
        return least_squares(residual, np.array([0.5]), bounds=bounds, args=(a,), method=method)

    assert method != "trf" or scale != 1e-3 or not solution(-0.5).active_mask.any()
    with pytest.raises(NotImplementedError, match=r"least_squares: the bounds are active.*\[0\]"):
        fgrad.grad(lambda a: solution(a).x[0])(-0.5)
    np.testing.assert_allclose(fgrad.grad(lambda a: solution(a).x[0])(0.3), 1.0, rtol=1e-6)


@pytest.mark.parametrize("a", [-2e-3, 2e-3])
def test_least_squares_refuses_an_active_bound_on_coupled_unknowns(a):
    """Residuals (10 (x0 - x1), x0 + x1 - a) with x0 >= 0: for a < 0 the solution is on the
    bound, (0, a / 101), derivative (0, 1 / 101); TRF stopped 2e-6 inside it (active_mask 0)
    and jacfwd gave (0.5, 0.5), the unconstrained derivative. For a > 0 the solution
    (a / 2, a / 2) is interior: derivative (0.5, 0.5)."""

    def solution(a):
        residuals = lambda x, a: fnp.stack([10 * (x[0] - x[1]), x[0] + x[1] - a])
        bounds = ([0.0, -np.inf], [np.inf, np.inf])
        return least_squares(residuals, np.array([0.5, 0.5]), bounds=bounds, args=(a,)).x

    if a < 0:
        with pytest.raises(NotImplementedError, match=r"bounds are active.*\[0\]"):
            fgrad.jacfwd(solution)(a)
    else:
        np.testing.assert_allclose(fgrad.jacfwd(solution)(a), [0.5, 0.5], rtol=1e-6)


@pytest.mark.parametrize("solver", ["minimize", "least_squares"])
def test_traced_bounds_are_read_and_refused_where_active(solver):
    """A traced bound failed inside SciPy (minimize: "float() of a traced value", in
    _constraints.py). The solution x = max(a, lo) of min (x - a)**2 over [lo, 5] does not move
    with an inactive bound: d/dlo = 0, d/da = 1; on the bound (a < lo) its derivative is the
    bound's, refused as a bound being active is. jit reads the bound at each call."""

    def solution(lo, a):
        if solver == "minimize":
            bounds = [(lo, 5.0)]
            f = lambda x, a: fnp.sum((x - a) ** 2)
            return minimize(f, np.array([2.0]), args=(a,), bounds=bounds, method="L-BFGS-B").x[0]
        f = lambda x, a: x - a
        return least_squares(f, np.array([2.0]), args=(a,), bounds=(lo, 5.0)).x[0]

    for d in (fgrad.grad, fgrad.jacfwd):
        np.testing.assert_allclose(d(solution, argnums=(0, 1))(-1.0, 1.0), (0.0, 1.0), atol=1e-6)
        with pytest.raises(NotImplementedError, match=r"bounds are active.*\[0\]"):
            d(solution)(2.0, 1.0)
    jitted = fgrad.jit(solution)
    for lo in (-1.0, 2.0, -1.0):
        np.testing.assert_allclose(jitted(lo, 1.0), max(lo, 1.0), atol=1e-6)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_least_squares_is_differentiable_in_f_scale(loss):
    """A traced f_scale failed inside SciPy's loss ("Assigning a traced value ... into a
    NumPy array"): SciPy got the traced value. The robust cost, in fgrad operations, is
    differentiable in it: the fit against central differences of the whole solve; jit replays
    with another f_scale, vmap equals the loop."""
    y = 1.5 * np.exp(-2.0 * T) + 0.05 * np.sin(7 * T)
    y[3] += 1.0  # an outlier, which the loss weighs by f_scale

    def fit(s):
        return fitted(y, loss=loss, f_scale=s)

    s = np.array(0.3)
    jac = fgrad.jacrev(fit)(s)
    np.testing.assert_allclose(jac, fgrad.jacfwd(fit)(s), rtol=1e-9, atol=1e-12)
    # (the solves stop at a gradient of about 1e-9, a solution off by up to 1e-8, which
    # differences of them 2e-4 apart read as up to 6e-5 (seen on one machine, SciPy 1.17.1):
    # 6e-3 apart, about 2e-6, their truncation error less)
    np.testing.assert_allclose(jac, central(fit, s, h=3e-3)[:, 0], rtol=1e-4, atol=5e-6)
    jitted = fgrad.jit(fit)
    for v in (0.3, 0.5, 0.3):
        np.testing.assert_allclose(jitted(v), fit(v), rtol=1e-12)
    rows = np.array([0.3, 0.5])
    np.testing.assert_allclose(fgrad.vmap(fit)(rows), [fit(v) for v in rows], rtol=1e-12)


def _quartic(x, a):
    return fnp.sum((x - a) ** 2) + fnp.sum(x**4) / 4


def test_result_fields_are_this_calls_under_jit_and_each_rows_under_vmap():
    """SciPy's plain fields (success, nit, jac, status, ...) were read at trace time: a jit
    replay gave the recorded run's (success=True, nit=4 for a replay stopped by maxiter at 6,
    unconverged) and vmap gave the last row's for every row (nit [9, 9] for [4, 9]). They are
    outputs of the solve now: a replay's own, and one per row, as SciPy's eager results."""
    start, hard = np.array([0.1, 0.1]), np.array([5.0, -3.0])

    def fields(a):
        r = minimize(_quartic, np.zeros(2), args=(a,), method="BFGS", options={"maxiter": 6})
        return r.success, r.nit, r.jac, r.status, r.nfev, r.message

    def scalar_root(c):
        r = root_scalar(lambda x, c: x**3 - c, args=(c,), x0=1.0, maxiter=5)
        return r.converged, r.iterations, r.function_calls, r.flag

    def fit(a):
        r = least_squares(lambda x, a: fnp.exp(x) - a, np.zeros(2), args=(a,), max_nfev=4)
        return r.status, r.nfev, r.jac, r.success

    for fn, first, then in ((fields, start, hard), (scalar_root, 1.2, 1e6), (fit, start, hard)):
        jitted = fgrad.jit(fn)
        jitted(first)  # recorded on a problem that converges
        got, want = jitted(then), fn(then)
        assert not want[0] or fn is fit  # the replay's solve fails (least_squares: max_nfev)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    rows = np.stack([start, hard])
    by_rows = fgrad.vmap(fields)(rows)
    for k, field in enumerate(by_rows):
        np.testing.assert_array_equal(field, [fields(a)[k] for a in rows])
    with_grad = fgrad.vmap(
        fgrad.grad(lambda a: fnp.sum(minimize(_quartic, np.zeros(2), args=(a,), method="BFGS").x))
    )
    np.testing.assert_allclose(
        with_grad(rows),
        [
            fgrad.grad(
                lambda a: fnp.sum(minimize(_quartic, np.zeros(2), args=(a,), method="BFGS").x)
            )(a)
            for a in rows
        ],
        rtol=1e-12,
    )

    def iterations(c):
        return brentq(lambda x, c: fnp.exp(x) - c, -5.0, 5.0, args=(c,), full_output=True)[1]

    c = np.array([1.0001, 100.0])
    np.testing.assert_array_equal(
        fgrad.vmap(lambda c: iterations(c).iterations)(c), [iterations(v).iterations for v in c]
    )
    # under grad, the fields are SciPy's plain values, as without it
    seen = {}

    def spy(a):
        r = minimize(_quartic, np.zeros(2), args=(a,), method="BFGS")
        seen.update(nit=r.nit, success=r.success, message=r.message)
        return fnp.sum(r.x)

    fgrad.grad(spy)(hard)
    plain = minimize(_quartic, np.zeros(2), args=(hard,), method="BFGS")
    assert seen == {"nit": plain.nit, "success": plain.success, "message": plain.message}
    assert type(seen["nit"]) is int and type(seen["success"]) is bool


def test_jit_replays_of_a_derivative_through_a_solver_keep_no_results():
    """Each replay appended SciPy's whole result (BFGS's n x n hess_inv) to a list the record
    held: memory grew by n * n * 8 bytes per call (3.3 MB over 40 calls at n = 100)."""
    import gc
    import tracemalloc

    n = 100
    g = fgrad.jit(
        fgrad.grad(lambda a: fnp.sum(minimize(_quartic, np.zeros(n), args=(a,), method="BFGS").x))
    )
    a = np.linspace(1.0, 2.0, n)
    for i in range(3):
        g(a + i * 1e-3)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(40):
            g(a + i * 1e-3)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 40 * n * n * 8 / 4, grown


def test_fixed_point_iteration_stopped_far_from_the_fixed_point_is_not_differentiated():
    """SciPy's test on successive iterates passes after one step of a slow map
    x - 1e-9 (x**3 - a), at x = 1.000000007 (the fixed point is 2): the gradient there was
    0.333 (true 1/12), silently. The Newton step of func(x) - x (2.33 there) is checked when
    the solution is differentiated; without a derivative, the value is SciPy's."""
    import scipy.optimize

    def slow(x, a):
        return x - 1e-9 * (x**3 - a)

    def fp(a, **kw):
        return fixed_point(slow, 1.0, args=(a,), method="iteration", **kw)

    np.testing.assert_array_equal(
        fp(8.0), scipy.optimize.fixed_point(slow, 1.0, args=(8.0,), method="iteration")
    )
    for d in (fgrad.grad, fgrad.jacfwd, lambda f: fgrad.jit(fgrad.grad(f))):
        with pytest.raises(RuntimeError, match=r"fixed_point did not converge.*Newton step"):
            d(fp)(8.0)
    with pytest.warns(RuntimeWarning, match="fixed_point did not converge"):
        fgrad.grad(lambda a: fp(a, on_failure="warn"))(8.0)

    # a contraction reached by plain iteration, and del2 on a slow map, are differentiated
    def cos_point(a, method):
        return fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(a,), xtol=1e-12, method=method)

    for method in ("iteration", "del2"):
        x = cos_point(1.0, method)
        want = -x * np.sin(x) / (1 + np.sin(x))
        assert float(fgrad.grad(lambda a: cos_point(a, method))(1.0)) == pytest.approx(
            want, rel=1e-9
        )
    damped = lambda a: fixed_point(lambda x, a: x - 0.01 * (x**3 - a), 1.0, args=(a,))
    assert float(fgrad.grad(damped)(8.0)) == pytest.approx(1 / 12, rel=1e-7)


@pytest.mark.parametrize("method", ["hybr", "lm", "krylov", "broyden1", "df-sane"])
def test_root_takes_x0_of_any_shape_as_scipy_does(method):
    """root refused a 2-D x0 ("the unknowns must be a 1-D array (as SciPy asks)"); SciPy's
    root takes it: hybr and lm ravel it, the other methods keep its shape (and a scalar's).
    The values are SciPy's and the Jacobian is the closed form diag(1 / (3 x**2 + 1))."""
    import scipy.optimize

    a = np.array([[1.0, 2.0], [3.0, 4.0]])

    def equations(x, a):
        return x**3 + x - fnp.reshape(a, x.shape)

    def solution(a):
        return root(equations, np.ones((2, 2)), args=(a,), method=method, tol=1e-12).x

    want = scipy.optimize.root(
        lambda x, a: x**3 + x - a.reshape(x.shape),
        np.ones((2, 2)),
        args=(a,),
        method=method,
        tol=1e-12,
    ).x
    x = solution(a)
    assert x.shape == want.shape == ((4,) if method in ("hybr", "lm") else (2, 2))
    np.testing.assert_array_equal(x, want)
    closed = np.diag(1 / (3 * x.ravel() ** 2 + 1)).reshape(x.shape + a.shape)
    for d in (fgrad.jacrev, fgrad.jacfwd):
        np.testing.assert_allclose(d(solution)(a), closed, rtol=1e-7, atol=1e-12)
    scalar = root(lambda x: x**3 + x - 2.0, 1.5, method=method, tol=1e-12).x
    assert scalar.shape == scipy.optimize.root(lambda x: x**3 + x - 2.0, 1.5, method=method).x.shape


def test_an_argument_differentiated_outside_a_vmap_whose_rows_a_closure_gives():
    """A solver whose function reads a vmap's rows from a closure while an argument (b,
    args) is differentiated outside the vmap and holds no rows: no input of the solve is
    batched, so its vmap rule never ran. custom_linear_solve's jvp summed the rows' solutions
    (3.9 where the loop gives 1.95) and jit replayed every row's solution per row, shape
    (2, 2, 2); brentq's grad raised about a cotangent the user never passed (probe FE #1,
    #2). Now refused as docs/implicit.md says; SciPy's solvers read the rows as NumPy reads
    them, so under jvp and jit they keep the loop's answer."""
    from fgrad.scipy.optimize import brentq

    def solve(matvec, r):
        return np.linalg.solve(fgrad.jacfwd(matvec)(r), r)

    As = np.array([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 0.0], [0.0, 5.0]]])
    rows = lambda b: fgrad.vmap(
        lambda A: fgrad.custom_linear_solve(lambda v: A @ v, b, solve, solve)
    )(As)
    b = np.array([1.0, 1.0])
    np.testing.assert_allclose(rows(b), [np.linalg.solve(A, b) for A in As], rtol=1e-15)
    total = lambda b: fnp.sum(rows(b))
    for transform in (fgrad.grad, fgrad.jacfwd, lambda f: lambda b: fgrad.jvp(f, (b,), (b,))):
        with pytest.raises(TypeError, match="put the vmap outside the differentiating"):
            transform(total)(b)
    with pytest.raises(TypeError, match="under vmap inside jit"):
        fgrad.jit(rows)(b)

    C = np.array([0.5, 1.0, 1.5])
    roots = lambda y: fgrad.vmap(
        lambda c: brentq(lambda x, y: x**3 + c * x - y, -5.0, 5.0, args=(y,))
    )(C)
    loop = [brentq(lambda x, y, c=c: x**3 + c * x - y, -5.0, 5.0, args=(0.8,)) for c in C]
    slopes = 1.0 / (3 * np.square(loop) + C)  # d root / d y
    with pytest.raises(TypeError, match="pass the value as an argument"):
        fgrad.grad(lambda y: fnp.sum(roots(y)))(0.8)
    np.testing.assert_allclose(fgrad.jit(roots)(0.8), loop, rtol=1e-12)
    np.testing.assert_allclose(fgrad.jvp(roots, (0.8,), (1.0,))[1], slopes, rtol=1e-9)
    np.testing.assert_allclose(
        fgrad.jacfwd(lambda y: fnp.sum(roots(y)))(0.8), slopes.sum(), rtol=1e-9
    )

    # x0, whose derivative is zero, may come from the value differentiated: not refused
    # (a first version refused this warm start, whose gradient was right; review FR #1)
    def warm(p, c):
        fun = lambda x: fnp.sum((x - c) ** 2) + fnp.sum(x**4)
        return fnp.sum(minimize(fun, p * fnp.ones(2), method="BFGS", tol=1e-12).x) * p

    loop = fgrad.grad(lambda p: sum(warm(p, c) for c in C))(0.3)
    np.testing.assert_allclose(
        fgrad.grad(lambda p: fnp.sum(fgrad.vmap(lambda c: warm(p, c))(C)))(0.3), loop, rtol=1e-9
    )
