"""fgrad.scipy.integrate.odeint: values against SciPy, derivatives against closed forms
(exponential decay, y' = cos(t), the linear system y' = A y through expm) and against central
differences of SciPy's own solver, time points (t[0] included, decreasing and repeated
times), pytrees, constant arguments, and the errors that say what to do. Every test runs with
both reverse rules: forward sensitivities (what small systems use) and the adjoint method."""

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.integrate as integrate
from fgrad.scipy.integrate import odeint
from fgrad.test_util import check_grads

TOL = dict(rtol=1e-11, atol=1e-11)


@pytest.fixture(autouse=True, params=["sensitivities", "adjoint"])
def reverse_rule(request, monkeypatch):
    """Each test with each reverse rule: the adjoint method for every size, or forward
    sensitivities for every size the tests use (their largest system has 3x3 states)."""
    limit = 10**6 if request.param == "sensitivities" else 0
    monkeypatch.setattr(integrate, "FORWARD_SENSITIVITIES_MAX", limit)
    return request.param


def decay(y, t, k):
    return -k * y


# --- values ---------------------------------------------------------------------------------------


def lotka_volterra(y, t, a, b, c, d):
    return [a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]]  # a list, as SciPy allows


def test_value_is_scipys_with_scipys_defaults():
    t = np.linspace(0.0, 3.0, 7)
    args = (1.0, 0.5, 0.3, 0.8)
    ours = odeint(lotka_volterra, [1.2, 0.7], t, args)
    theirs = scipy.integrate.odeint(lotka_volterra, [1.2, 0.7], t, args)
    assert ours.shape == (7, 2) and ours.dtype == np.float64
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_tfirst_and_integer_time_points_as_scipy():
    t = [0, 1, 2]
    ours = odeint(lambda t, y, k: -k * y, np.array([1.0, 3.0]), t, (0.4,), tfirst=True)
    theirs = scipy.integrate.odeint(lambda t, y, k: -k * y, [1.0, 3.0], t, (0.4,), tfirst=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize(
    "y0, t",
    [
        (np.array([1, 2]), np.array([0.0, 1.0])),
        (np.array([True, False]), np.array([0.0, 0.5])),
        (np.array([3, 1], np.uint8), np.array([0, 1, 2])),
        (np.array([1.0, 2.0], np.float32), np.array([0, 1])),
        (3, np.array([0.0, 1.0])),
    ],
    ids=["int64", "bool", "uint8-int-times", "float32-int-times", "python-int"],
)
def test_integer_states_and_times_under_jit_and_vmap_are_read_as_eagerly(y0, t):
    """An integer or bool y0 and integer time points are read as float64, as SciPy reads
    them: jit and vmap refused a traced one ("integrates real states: split a complex one"),
    where the eager call gave SciPy's solution."""

    def solve(y0, t):
        return odeint(lambda y, t: -y, y0, t)

    eager = solve(y0, t)
    if np.asarray(y0).dtype.kind == "f":  # (float32 stays float32; SciPy's is float64)
        assert eager.dtype == np.asarray(y0).dtype
    else:
        expected = scipy.integrate.odeint(lambda y, t: -y, y0, t)
        assert eager.dtype == expected.dtype
        np.testing.assert_array_equal(eager, expected)
    stacked = (np.stack([y0, y0]), np.stack([t, t]))
    for out in (
        fgrad.jit(solve)(y0, t),
        fgrad.vmap(solve, in_axes=(0, None))(stacked[0], t)[1],
        fgrad.vmap(solve, in_axes=(None, 0))(y0, stacked[1])[1],
        fgrad.vmap(solve)(*stacked)[0],
    ):
        assert out.dtype == eager.dtype and out.shape == eager.shape
        np.testing.assert_array_equal(out, eager)


def test_a_scalar_state_is_a_state_of_one_element_as_in_scipy():
    seen = []

    def f(y, t, k):
        seen.append(np.shape(fgrad.core.primal(y)))
        return -k * y

    t = np.array([0.0, 0.5, 1.0])
    ours = odeint(f, 1.5, t, (0.7,))
    theirs = scipy.integrate.odeint(f, 1.5, t, (0.7,))
    assert ours.shape == theirs.shape == (3, 1) and set(seen) == {(1,)}
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    g = fgrad.grad(lambda y0, k: odeint(decay, y0, t, (k,), **TOL)[-1, 0], argnums=(0, 1))(1.5, 0.7)
    np.testing.assert_allclose(g, [np.exp(-0.7), -1.5 * np.exp(-0.7)], rtol=1e-8)
    # a scalar leaf of a pytree state stays a scalar
    assert odeint(lambda y, t: {"a": -y["a"]}, {"a": 1.0}, t)["a"].shape == (3,)


def test_dfun_is_used_by_the_forward_solve_and_gradients_still_work():
    calls = []

    def jac(y, t, k):
        calls.append(t)
        return -k * np.eye(2)

    t, y0 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0])
    stiff = np.array([0.0, 0.01, 10.0])  # k = 1000 is stiff: LSODA asks for the Jacobian
    ours = odeint(decay, y0, stiff, (1000.0,), Dfun=jac)
    np.testing.assert_allclose(
        ours, scipy.integrate.odeint(decay, y0, stiff, (1000.0,), Dfun=jac), rtol=1e-12
    )
    assert calls
    g = fgrad.grad(lambda k: odeint(decay, y0, t, (k,), Dfun=jac, **TOL)[-1, 0])(0.5)
    assert abs(g + 2.0 * np.exp(-1.0)) < 1e-8


def test_dfun_with_tfirst_is_called_as_dfun_t_y_as_in_scipy():
    # a Jacobian that depends on y: called with (y, t) swapped it crashed (y a scalar) or
    # gave LSODA a wrong matrix
    def rhs(t, y, k):
        return fnp.stack([-k * y[0] ** 3, -1000.0 * (y[1] - fnp.cos(t))])

    seen = []

    def jac(t, y, k):
        seen.append((np.shape(t), np.shape(y)))
        return np.array([[-3 * k * y[0] ** 2, 0.0], [0.0, -1000.0]])

    y0, t = np.array([1.0, 0.0]), np.linspace(0.0, 1.0, 3)
    ours = odeint(rhs, y0, t, args=(2.0,), Dfun=jac, tfirst=True)
    plain = lambda t, y, k: np.asarray(rhs(t, y, k))
    theirs = scipy.integrate.odeint(plain, y0, t, args=(2.0,), Dfun=jac, tfirst=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert seen and set(seen) == {((), (2,))}


def test_float32_state_gives_float32_solution_and_gradients():
    y0, t = np.array([1.0, 2.0], np.float32), np.array([0.0, 0.5, 1.0], np.float32)
    k = np.float32(0.7)
    ys = odeint(decay, y0, t, (k,))
    assert ys.dtype == np.float32
    g = fgrad.grad(lambda y0, t, k: fnp.sum(odeint(decay, y0, t, (k,))), argnums=(0, 1, 2))(
        y0, t, k
    )
    assert [x.dtype for x in g] == [np.float32] * 3
    np.testing.assert_allclose(g[0], np.sum(np.exp(-0.7 * t)), rtol=1e-5)


def test_the_users_arrays_are_not_changed():
    y0, t, k = np.array([1.0, 2.0]), np.array([0.0, 1.0]), np.array(0.5)
    copies = [y0.copy(), t.copy(), k.copy()]
    fgrad.grad(lambda y0: fnp.sum(odeint(decay, y0, t, (k,))))(y0)
    for a, b in zip((y0, t, k), copies):
        np.testing.assert_array_equal(a, b)


# --- closed forms: y' = -k y, y(t) = y0 exp(-k (t - t0)) ------------------------------------------


T = np.array([0.2, 0.7, 1.5])
Y0, K = 1.3, 0.6


def decay_solution(y0, t, k):
    return odeint(decay, y0, t, (k,), **TOL)[:, 0]  # a scalar y0 is a state of one element


def test_decay_value_and_derivatives_in_y0_k_and_every_time_point():
    s = T - T[0]
    e = np.exp(-K * s)
    np.testing.assert_allclose(decay_solution(Y0, T, K), Y0 * e, rtol=1e-9)
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        d_y0, d_t, d_k = jac(decay_solution, argnums=(0, 1, 2))(Y0, T, K)
        np.testing.assert_allclose(d_y0, e, rtol=1e-8)
        np.testing.assert_allclose(d_k, -s * Y0 * e, rtol=1e-8, atol=1e-12)
        # dy(t_i)/dt_j: -k y(t_i) on the diagonal (i > 0), +k y(t_i) for t_0 (i > 0), and y(t_0)
        # = y0 whatever t_0 is
        expected = np.diag(-K * Y0 * e)
        expected[:, 0] = K * Y0 * e
        expected[0, 0] = 0.0
        np.testing.assert_allclose(d_t, expected, rtol=1e-8, atol=1e-12)


def test_each_input_alone_gets_the_same_derivative_as_all_together():
    # the reverse rule leaves out the sensitivities of inputs that are plain values: each
    # input differentiated alone gets what it gets among all of them
    s = T - T[0]
    e = np.exp(-K * s)
    d_y0 = fgrad.jacrev(lambda y0: decay_solution(y0, T, K))(Y0)
    d_t = fgrad.jacrev(lambda t: decay_solution(Y0, t, K))(T)
    d_k = fgrad.jacrev(lambda k: decay_solution(Y0, T, k))(K)
    together = fgrad.jacrev(decay_solution, argnums=(0, 1, 2))(Y0, T, K)
    for alone, both in zip((d_y0, d_t, d_k), together):
        np.testing.assert_allclose(alone, both, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(d_k, -s * Y0 * e, rtol=1e-8, atol=1e-12)


def test_decay_second_derivatives_in_both_modes():
    s = T[-1] - T[0]

    def last(k):
        return decay_solution(Y0, T, k)[-1]

    expected = s**2 * Y0 * np.exp(-K * s)  # d2/dk2 y0 exp(-k s)
    assert abs(fgrad.grad(fgrad.grad(last))(K) - expected) < 1e-7
    assert abs(fgrad.jacfwd(fgrad.jacfwd(last))(K) - expected) < 1e-7
    assert abs(fgrad.jacfwd(fgrad.grad(last))(K) - expected) < 1e-7

    def last_of_t0(t0):
        return decay_solution(Y0, fnp.stack([t0, T[1], T[2]]), K)[-1]

    # d2/dt0^2 y0 exp(-k (t - t0)) = k^2 y0 exp(-k s)
    assert abs(fgrad.grad(fgrad.grad(last_of_t0))(T[0]) - K**2 * Y0 * np.exp(-K * s)) < 1e-7
    # mixed: d2/(dk dy0) = -s exp(-k s)
    h = fgrad.hessian(lambda p: decay_solution(p[0], T, p[1])[-1])(np.array([Y0, K]))
    np.testing.assert_allclose(h[0, 1], -s * np.exp(-K * s), rtol=1e-7)
    np.testing.assert_allclose(h, h.T, rtol=1e-7)


def test_time_point_gradients_of_a_non_autonomous_system_including_t0():
    # y' = cos(t): y(t_i) = y0 + sin(t_i) - sin(t_0), so dy(t_i)/dt_0 = -cos(t_0) (i > 0)
    t = np.array([0.3, 0.9, 1.4, 2.0])

    def f(t):
        return odeint(lambda y, t: fnp.cos(t) + 0.0 * y, 0.5, t, **TOL)[:, 0]

    np.testing.assert_allclose(f(t), 0.5 + np.sin(t) - np.sin(t[0]), rtol=1e-9)
    expected = np.diag(np.cos(t))
    expected[1:, 0] = -np.cos(t[0])
    expected[0, 0] = 0.0
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        np.testing.assert_allclose(jac(f)(t), expected, atol=1e-8)
    # second derivative in t_0 of y(t_end): sin(t_0)
    d2 = fgrad.grad(fgrad.grad(lambda t0: f(fnp.concatenate([t0[None], t[1:]]))[-1]))(t[0])
    assert abs(d2 - np.sin(t[0])) < 1e-7


def test_decreasing_and_repeated_time_points():
    t = np.array([1.5, 1.0, 1.0, 0.2])  # backward in time, with a repeated point
    ys = decay_solution(Y0, t, K)
    np.testing.assert_allclose(ys, Y0 * np.exp(-K * (t - t[0])), rtol=1e-9)
    d_t = fgrad.jacrev(decay_solution, argnums=1)(Y0, t, K)
    e = Y0 * np.exp(-K * (t - t[0]))
    expected = np.diag(-K * e)
    expected[:, 0] = K * e
    expected[0, 0] = 0.0
    np.testing.assert_allclose(d_t, expected, rtol=1e-8, atol=1e-12)


def test_one_time_point_is_the_initial_state():
    f = lambda y0, t, k: odeint(decay, y0, t, (k,))
    y0 = np.array([1.0, 2.0])
    np.testing.assert_array_equal(f(y0, np.array([0.5]), 0.3), y0[None])
    g = fgrad.grad(lambda y0, t, k: fnp.sum(f(y0, t, k) * 2.0), argnums=(0, 1, 2))(
        y0, np.array([0.5]), 0.3
    )
    np.testing.assert_array_equal(g[0], [2.0, 2.0])
    np.testing.assert_array_equal(g[1], [0.0])
    assert g[2] == 0.0


# --- closed form: y' = A y, y(t) = expm(A (t - t0)) y0 --------------------------------------------


def test_linear_system_against_expm():
    a = np.array([[-0.5, 1.0], [-1.0, -0.2]])
    y0, t = np.array([1.0, -0.5]), np.array([0.0, 0.6, 1.3])

    def f(y0, t, a):
        return odeint(lambda y, t, a: a @ y, y0, t, (a,), **TOL)

    ys = f(y0, t, a)
    for i, ti in enumerate(t):
        np.testing.assert_allclose(ys[i], scipy.linalg.expm(a * ti) @ y0, rtol=1e-9)
    d_y0, d_t, d_a = fgrad.jacrev(f, argnums=(0, 1, 2))(y0, t, a)
    for i, ti in enumerate(t):
        np.testing.assert_allclose(d_y0[i], scipy.linalg.expm(a * ti), rtol=1e-8, atol=1e-12)
        if i > 0:
            np.testing.assert_allclose(d_t[i, :, i], a @ ys[i], rtol=1e-8)
    np.testing.assert_allclose(d_t[2, :, 0], -scipy.linalg.expm(a * t[2]) @ a @ y0, rtol=1e-8)
    # d y(t)/dA by the Frechet derivative of expm: expm_frechet(A t, E t) y0
    for j in range(2):
        for k in range(2):
            e = np.zeros((2, 2))
            e[j, k] = 1.0
            frechet = scipy.linalg.expm_frechet(a * t[2], e * t[2], compute_expm=False)
            np.testing.assert_allclose(d_a[2, :, j, k], frechet @ y0, rtol=1e-7, atol=1e-11)


# --- central differences of SciPy's own solver ----------------------------------------------------


def lv(y, t, p):
    return fnp.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def test_gradient_of_a_trajectory_loss_against_central_differences_of_scipy():
    t = np.linspace(0.0, 2.0, 5)
    data = np.array([[1.0, 0.5], [1.1, 0.6], [1.0, 0.8], [0.8, 0.9], [0.7, 0.8]])
    y0, p = np.array([1.0, 0.5]), np.array([1.0, 0.6, 0.4, 0.7])

    def loss(y0, t, p):
        return fnp.sum((odeint(lv, y0, t, (p,), **TOL) - data) ** 2)

    def loss_scipy(y0, t, p):
        ys = scipy.integrate.odeint(
            lambda y, t: np.asarray(lv(y, t, p)), y0, t, rtol=1e-12, atol=1e-12
        )
        return np.sum((ys - data) ** 2)

    grads = fgrad.grad(loss, argnums=(0, 1, 2))(y0, t, p)
    eps = 1e-5
    for which, g in enumerate(grads):
        args = [y0, t, p]
        for i in range(len(g)):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[which][i] += eps
            minus[which][i] -= eps
            numerical = (loss_scipy(*plus) - loss_scipy(*minus)) / (2 * eps)
            assert abs(g[i] - numerical) < 1e-6 * (1 + abs(numerical)), (which, i)


def test_check_grads_of_a_trajectory_loss_to_order_2():
    t = np.array([0.0, 0.5, 1.0])
    data = np.array([[1.0, 0.5], [1.1, 0.6], [1.0, 0.8]])

    def loss(y0, t, p):
        return fnp.sum((odeint(lv, y0, t, (p,), rtol=1e-10, atol=1e-10) - data) ** 2)

    check_grads(loss, (np.array([1.0, 0.5]), t, np.array([1.0, 0.6, 0.4, 0.7])), order=2)


# --- pytrees and constant arguments ---------------------------------------------------------------


def test_pytree_state_and_arguments():
    def f(state, t, params):
        return {"x": state["v"], "v": -(params["w"] ** 2) * state["x"]}

    t = np.array([0.0, 0.4, 1.1])
    out = odeint(f, {"x": 1.0, "v": 0.0}, t, ({"w": 2.0},), **TOL)
    np.testing.assert_allclose(out["x"], np.cos(2.0 * t), rtol=1e-8, atol=1e-10)
    # d x(t)/dw = -t sin(w t) for x = cos(w t)
    g = fgrad.grad(lambda w: odeint(f, {"x": 1.0, "v": 0.0}, t, ({"w": w},), **TOL)["x"][-1])(2.0)
    assert abs(g + 1.1 * np.sin(2.2)) < 1e-7


def test_integer_arguments_are_constants():
    def f(y, t, k, n):
        return -k * y**n  # n is an int: passed as it is, never differentiated

    t = np.array([0.0, 1.0])
    out = odeint(f, 1.0, t, (0.5, 1), **TOL)
    np.testing.assert_allclose(out[-1], [np.exp(-0.5)], rtol=1e-9)
    g = fgrad.grad(lambda k: odeint(f, 1.0, t, (k, 2), **TOL)[-1, 0])(0.5)
    # y' = -k y**2: y = 1 / (1 + k t), dy/dk = -t / (1 + k t)**2
    assert abs(g + 1.0 / 1.5**2) < 1e-8


# --- errors ---------------------------------------------------------------------------------------


def test_func_closing_over_a_traced_value_is_refused():
    def f(k):
        return odeint(lambda y, t: -k * y, 1.0, np.array([0.0, 1.0]))[-1, 0]

    with pytest.raises(TypeError, match="closes over a value being differentiated.*args"):
        fgrad.grad(f)(0.5)


def test_closures_over_traced_values_are_found_in_defaults_and_inner_functions():
    def in_default(k):
        return odeint(lambda y, t, k=k: -k * y, 1.0, np.array([0.0, 1.0]))[-1, 0]

    def in_inner_function(k):
        rate = lambda: k

        def f(y, t):
            return -rate() * y

        return odeint(f, 1.0, np.array([0.0, 1.0]))[-1, 0]

    for f in (in_default, in_inner_function):
        with pytest.raises(TypeError, match="closes over a value being differentiated"):
            fgrad.grad(f)(0.5)


def test_a_closure_over_a_value_vmap_batches_or_jit_records_is_each_calls_own():
    """odeint and quad refused a func closing over a value that vmap batches or jit records,
    saying it was "being differentiated": nothing is. Each row solves with its own value
    (SciPy's, one call per row), and a jit's replay with another value never gives the old
    one's result."""
    import warnings

    t = np.array([0.0, 0.5, 1.0])
    decay = lambda k: odeint(lambda y, t: -k * y, 1.0, t, **TOL)[:, 0]
    area = lambda k: integrate.quad(lambda x: k * x**2, 0.0, 1.0)[0]
    ks = np.array([0.5, 1.0, 2.0])

    def scipy_decay(k):
        return scipy.integrate.odeint(lambda y, t: -k * y, 1.0, t, **TOL)[:, 0]

    def scipy_area(k):
        return scipy.integrate.quad(lambda x: k * x**2, 0.0, 1.0)[0]

    for ours, theirs in ((decay, scipy_decay), (area, scipy_area)):
        want = np.stack([theirs(k) for k in ks])
        np.testing.assert_allclose(fgrad.vmap(ours)(ks), want, rtol=1e-12, atol=0)
        replayed = fgrad.jit(ours)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # (no "depends on a global")
            for k in (*ks, ks[0], ks[2]):  # new values, then ones seen before
                np.testing.assert_allclose(replayed(k), theirs(k), rtol=1e-12, atol=0)
        # a differentiated one is still refused, under vmap too
        with pytest.raises(TypeError, match="closes over a value being differentiated"):
            fgrad.vmap(fgrad.grad(lambda k: fnp.sum(ours(k))))(ks)


class _Decay:
    def __init__(self, k):
        self.k = k

    def rhs(self, y, t):
        return -self.k * y

    def __call__(self, y, t):
        return -self.k * y


def test_a_traced_value_read_through_a_bound_method_or_an_object_is_refused():
    # no closure cell holds k: it was integrated as a constant, and grad gave 0.0
    t = np.array([0.0, 1.0, 2.0])
    by_method = lambda k: odeint(_Decay(k).rhs, np.array([1.0]), t, **TOL)[-1, 0]
    by_object = lambda k: odeint(_Decay(k), np.array([1.0]), t, **TOL)[-1, 0]
    for f in (by_method, by_object):
        for transform in (fgrad.grad, fgrad.jacfwd):
            with pytest.raises(TypeError, match="reads a value being differentiated.*args="):
                transform(f)(1.0)
        # nothing is differentiated: computed as before, row by row under vmap
        assert abs(f(1.0) - np.exp(-2.0)) < 1e-9
        ks = np.array([1.0, 2.0])
        np.testing.assert_allclose(fgrad.vmap(f)(ks), np.exp(-2.0 * ks), rtol=1e-8)


def oscillator(y, t, w):
    return fnp.stack([y[1], -(w**2) * y[0]])


def test_a_solve_that_stops_early_raises_when_differentiated():
    # mxstep=5: LSODA stops before t = 5; SciPy's values from there are uninitialised memory,
    # and grad returned 0.0 or 6.9e-310 (d/dw cos(10 w) at w = 3 is 9.88)
    y0, t = np.array([1.0, 0.0]), np.array([0.0, 5.0, 10.0])

    def f(w, **kwargs):
        return odeint(oscillator, y0, t, args=(w,), mxstep=5, **kwargs)[-1, 0]

    for transform in (fgrad.grad, fgrad.jacfwd):
        with pytest.raises(RuntimeError, match="stopped early.*Excess work.*mxstep"):
            transform(f)(3.0)
    with pytest.warns(RuntimeWarning, match="stopped early"):
        fgrad.grad(lambda w: f(w, on_failure="warn"))(3.0)
    # nothing differentiated: SciPy's result and SciPy's warning, as from SciPy
    with pytest.warns(scipy.integrate.ODEintWarning, match="Excess work"):
        f(3.0)


def test_a_backward_solve_that_stops_early_raises(reverse_rule):
    # The forward solve finishes within mxstep=150; the solve of the derivative (more
    # equations, or the adjoint's restarts) does not: grad gave -1.8438 for -3 sin(9) = -1.2364
    def f(w):
        y0, t = np.array([1.0, 0.0]), np.array([0.0, 3.0])
        return odeint(oscillator, y0, t, args=(w,), mxstep=150, rtol=1e-10, atol=1e-10)[-1, 0]

    assert abs(f(3.0) - np.cos(9.0)) < 1e-8
    try:
        g = fgrad.grad(f)(3.0)
    except RuntimeError as error:
        assert "a solve for the derivative stopped early" in str(error)
    else:  # a backward solve that finishes gives the right derivative
        assert abs(g + 3 * np.sin(9.0)) < 1e-6, (reverse_rule, g)


def test_tcrit_bounds_the_solves_of_the_derivative_too():
    """f = -k y (t (1 - t))**2.5 is nan outside [0, 1]; y(1) = exp(-5 pi k / 1024). With
    tcrit=[1] the solve stops at t = 1, but the sensitivities' solve (forward, without
    tcrit) stepped past it and grad and jacfwd gave nan; the adjoint's backward solve
    stepped below t[0] = 0 and gave nan too. Now both stop where the solution's does."""
    t = np.array([0.0, 0.5, 1.0])

    def rhs(y, t, k):
        return -k * y * fnp.power(t * (1.0 - t), 2.5)

    def f(k):
        y = odeint(rhs, np.array([1.0]), t, args=(k,), tcrit=np.array([1.0]), **TOL)
        return y[-1, 0]

    def scipy_f(k):
        with np.errstate(invalid="ignore"):
            y = scipy.integrate.odeint(
                lambda y, t: -k * y * (t * (1 - t)) ** 2.5, [1.0], t, tcrit=[1.0], **TOL
            )
        return y[-1, 0]

    k, h = 0.7, 1e-4
    exact = -5 * np.pi / 1024 * np.exp(-5 * np.pi * k / 1024)
    np.testing.assert_allclose((scipy_f(k + h) - scipy_f(k - h)) / (2 * h), exact, rtol=1e-6)
    with np.errstate(invalid="ignore"):
        for transform in (fgrad.grad, fgrad.jacfwd):
            np.testing.assert_allclose(transform(f)(k), exact, rtol=1e-6)


def test_jet_and_derivative_with_per_component_tolerances():
    """rtol and atol arrays, one tolerance per entry of y, are valid for odeint and its
    grad; jet and derivative solved a system of (order + 1) n coefficients with them and
    failed with SciPy's bare error "Tolerances must be an array of the same length as the
    number of equations". Each coefficient of an entry now gets that entry's tolerances."""
    t = np.array([0.0, 0.5, 1.0])
    y0, tol = np.array([1.0, -0.5]), dict(rtol=np.array([1e-11, 1e-12]), atol=[1e-11, 1e-13])

    def rhs(y, t, k):
        return fnp.stack([-k * y[0] + y[1], -y[0] - 0.3 * y[1]])

    def f(k):
        return odeint(rhs, y0, t, args=(k,), **tol)[-1, 0]

    def scipy_f(k):
        return scipy.integrate.odeint(lambda y, t: rhs(y, t, k), y0, t, **tol)[-1, 0]

    k, h = 0.7, 1e-3
    first = (scipy_f(k + h) - scipy_f(k - h)) / (2 * h)
    second = (scipy_f(k + h) - 2 * scipy_f(k) + scipy_f(k - h)) / h**2
    value, (c1, c2) = fgrad.jet(f, (k,), ((1.0, 0.0),))
    np.testing.assert_allclose(value, scipy_f(k), rtol=1e-12)
    np.testing.assert_allclose([c1, c2], [first, second], rtol=1e-5)
    np.testing.assert_allclose(fgrad.derivative(f, order=2)(k), second, rtol=1e-5)


def test_a_recursive_func_is_not_a_problem():
    def make():
        def f(y, t, k):
            return -k * y if t >= 0 else f(y, -t, k)

        return f

    g = fgrad.grad(lambda k: odeint(make(), 1.0, np.array([0.0, 1.0]), (k,), **TOL)[-1, 0])(0.5)
    assert abs(g + np.exp(-0.5)) < 1e-8


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(t=np.zeros((2, 2))), ValueError, "t must be a 1-D array"),
        (dict(t=np.array([])), ValueError, "at least one"),
        (dict(full_output=1), ValueError, "full_output"),
        (dict(func=3.0), TypeError, "func must be a function"),
        (dict(y0=np.array([1.0 + 1j])), TypeError, "complex"),
        (dict(func=lambda y, t: fnp.ones(3)), ValueError, r"shape \(3,\).*shape \(2,\)"),
        (dict(y0={"a": np.ones(2)}, func=lambda y, t: y["a"]), ValueError, "structure"),
        (dict(y0={"a": np.ones(2)}, Dfun=lambda y, t: -np.eye(2)), ValueError, "Dfun needs y0"),
        # SciPy cannot cast a complex dy/dt to its float64 state either; fgrad dropped the
        # imaginary part, integrating another equation
        (dict(func=lambda y, t: -(0.5 + 2j) * y), TypeError, "complex128.*two real ones"),
        # NumPy read a str as a dtype's name: "data type 's' not understood"
        (dict(func=lambda y, t: "s"), TypeError, r"type str as dy/dt.*y's shape \(2,\)"),
        (dict(func=lambda y, t: "float64"), TypeError, r"type str as dy/dt.*y's shape \(2,\)"),
        (dict(func=lambda y, t: np.array(["a", "b"])), TypeError, r"dtype <U1 as dy/dt"),
        # SciPy: "Extra arguments must be in a tuple."; read as one argument, func failed
        (dict(func=lambda y, t, a, b: -a * y, args=[1.0, 2.0]), TypeError, "must be a tuple"),
        (dict(on_failure="ignore"), ValueError, "on_failure must be"),
    ],
)
def test_errors_say_what_to_do(kwargs, error, match):
    call = dict(func=lambda y, t: -y, y0=np.ones(2), t=np.array([0.0, 1.0]))
    call.update(kwargs)
    with pytest.raises(error, match=match):
        odeint(call.pop("func"), call.pop("y0"), call.pop("t"), **call)


def shifted_decay(y, t, k, c):
    return -k * y + c


@pytest.mark.parametrize(
    "extra, place",
    [
        ((0.5, 1.0), "5th positional argument is SciPy's Dfun.*got the float 1.0"),
        ((0.5, np.ones(2)), r"Dfun.*got an array with shape \(2,\) and dtype float64"),
        (((0.5, 1.0), None, 0.5), "6th positional argument is SciPy's col_deriv"),
    ],
)
def test_jax_style_extra_arguments_say_to_pass_args_as_a_tuple(extra, place):
    # JAX's odeint(func, y0, t, *args) puts func's extra arguments where SciPy has Dfun, ...
    t = np.array([0.0, 1.0])
    with pytest.raises(TypeError, match=place + r".*args=\(a, b\)"):
        odeint(shifted_decay, np.ones(2), t, *extra)
    with pytest.raises(TypeError, match="got a traced value with shape \\(\\) .*args=\\(a, b\\)"):
        fgrad.grad(lambda c: odeint(shifted_decay, np.ones(2), t, 0.5, c)[-1, 0])(1.0)
    # ... and SciPy's way works: y = c/k + (1 - c/k) exp(-k t), so dy(1)/dc = (1 - exp(-k))/k
    y = lambda c: odeint(shifted_decay, np.ones(2), t, args=(0.5, c), **TOL)[-1, 0]
    assert abs(fgrad.grad(y)(1.0) - (1 - np.exp(-0.5)) / 0.5) < 1e-8
    # one extra argument was never ambiguous: it is `args`, as SciPy reads it
    assert odeint(decay, np.ones(2), t, 0.5, **TOL)[-1, 0] == pytest.approx(np.exp(-0.5))


def test_the_two_reverse_rules_agree_and_small_systems_take_sensitivities(reverse_rule):
    """The pendulum of benchmarks/bench_jit.py: forward sensitivities (one solve) and the
    adjoint (a solve per time point) give one gradient, to the tolerance of the solves; which
    rule runs is the size of the sensitivity system against FORWARD_SENSITIVITIES_MAX."""

    def pendulum(y, t, b, c):
        return fnp.stack([y[1], -b * y[1] - c * fnp.sin(y[0])])

    y0, t = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 10.0, 101)

    def loss(b, c, y0, t):
        return fnp.sum(odeint(pendulum, y0, t, args=(b, c), **TOL)[:, 0] ** 2)

    got = fgrad.grad(loss, argnums=(0, 1, 2, 3))(0.25, 5.0, y0, t)
    rule = integrate.FORWARD_SENSITIVITIES_MAX
    integrate.FORWARD_SENSITIVITIES_MAX = 0 if reverse_rule == "sensitivities" else 10**6
    try:
        other = fgrad.grad(loss, argnums=(0, 1, 2, 3))(0.25, 5.0, y0, t)
    finally:
        integrate.FORWARD_SENSITIVITIES_MAX = rule
    for g, o in zip(got, other):
        np.testing.assert_allclose(g, o, rtol=1e-7, atol=1e-7)


def test_the_default_rule_is_sensitivities_for_small_systems_only(monkeypatch):
    solves = []
    real = integrate._si.odeint

    def counting(f, y0, t, **kw):
        solves.append(len(y0))
        return real(f, y0, t, **kw)

    monkeypatch.setattr(integrate, "FORWARD_SENSITIVITIES_MAX", 64)
    monkeypatch.setattr(integrate._si, "odeint", counting)
    t = np.linspace(0.0, 1.0, 6)
    # (size of y, differentiated by y0 too, the solves' sizes): the forward solve, then one
    # solve of y and its sensitivities (only those of the differentiated inputs: a plain y0
    # has none), or, past FORWARD_SENSITIVITIES_MAX, an adjoint solve of (y, a, b) per interval
    cases = [
        (2, False, [2, 2 * (1 + 1)]),
        (2, True, [2, 2 * (1 + 3)]),
        (8, False, [8, 8 * (1 + 1)]),
        (8, True, [8] + [2 * 8 + 1] * 5),  # 8 (1 + 9) = 80 > 64
    ]
    for n, by_y0, want in cases:
        solves.clear()
        if by_y0:
            fgrad.grad(lambda y0, k: fnp.sum(odeint(decay, y0, t, (k,))), (0, 1))(np.ones(n), 0.5)
        else:
            fgrad.grad(lambda k: fnp.sum(odeint(decay, np.ones(n), t, (k,))))(0.5)
        assert solves == want


# --- integrators of sampled data, fixed-order quadrature ------------------------------------------


@pytest.mark.parametrize("name", ["simpson", "cumulative_trapezoid", "trapezoid"])
def test_sampled_integrals_of_traced_values_are_scipys_bit_for_bit(name):
    import scipy.integrate as si

    import fgrad.scipy.integrate as fsi

    rng = np.random.default_rng(0)
    for shape, axis in [
        ((5,), -1),
        ((6,), 0),
        ((2,), -1),
        ((4, 3), 0),
        ((3, 7), 1),
        ((2, 3, 6), -1),
    ]:
        y = rng.normal(size=shape).astype(np.float32 if shape == (4, 3) else np.float64)
        n = shape[axis]
        spacings = [{}, {"dx": 0.7}, {"x": np.cumsum(rng.uniform(0.1, 1.0, n))}]
        spacings.append({"x": np.cumsum(rng.uniform(0.1, 1.0, shape), axis=axis)})
        for kw in spacings:
            expected = getattr(si, name)(y, axis=axis, **kw)
            got = fgrad.jvp(lambda y: getattr(fsi, name)(y, axis=axis, **kw), (y,), (y,))[0]
            assert np.asarray(got).dtype == np.asarray(expected).dtype  # (float32 kept or not)
            np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match="length of x along axis"):
        fgrad.grad(lambda y: fsi.simpson(y, x=np.arange(3.0)))(np.ones(4))


def test_fixed_quad_is_differentiable_in_its_limits_and_integrand():
    import fgrad.scipy.integrate as fsi

    def area(a, b, k):
        return fsi.fixed_quad(lambda t: fnp.sin(k * t), a, b, n=12)[0]

    a, b, k = 0.2, 1.3, 0.9
    grads = fgrad.grad(area, argnums=(0, 1, 2))(a, b, k)
    exact_dk = np.sin(k * b) * k * b + np.cos(k * b) - np.sin(k * a) * k * a - np.cos(k * a)
    np.testing.assert_allclose(grads, [-np.sin(k * a), np.sin(k * b), exact_dk / k**2], rtol=1e-9)
    with pytest.raises(ValueError, match="finite limits"):
        fgrad.grad(lambda b: area(0.0, b, 1.0))(np.inf)


def test_quad_is_differentiated_by_leibniz_rule():
    import fgrad.scipy.integrate as fsi

    def f(x, p):
        return fnp.sin(p[0] * x) * fnp.exp(-p[1] * x)

    def integral(a, b, p):
        return fsi.quad(f, a, b, args=(p,))[0]

    a, b, p = 0.2, 1.7, np.array([1.3, 0.4])
    # plain values: SciPy's own, every option included
    plain = fsi.quad(f, a, b, args=(p,), full_output=1)
    assert plain[:2] == scipy.integrate.quad(f, a, b, args=(p,))[:2] and "neval" in plain[2]
    ga, gb, gp = fgrad.grad(integral, argnums=(0, 1, 2))(a, b, p)
    assert ga == -f(a, p) and gb == f(b, p)
    # d/dp: the integrals of the partial derivatives, in closed form here
    dp0 = scipy.integrate.quad(lambda x: x * np.cos(1.3 * x) * np.exp(-0.4 * x), a, b)[0]
    dp1 = scipy.integrate.quad(lambda x: -x * np.sin(1.3 * x) * np.exp(-0.4 * x), a, b)[0]
    np.testing.assert_allclose(gp, [dp0, dp1], rtol=1e-12)
    replayed = fgrad.jit(fgrad.grad(integral, argnums=2))
    for q in (p, 1.1 * p, p):
        np.testing.assert_array_equal(replayed(a, b, q), fgrad.grad(integral, argnums=2)(a, b, q))
    # an infinite limit does not move: d/dk of the Gaussian integral -sqrt(pi) / (4 k^1.5)
    gauss = lambda k: fsi.quad(lambda x, k: fnp.exp(-k * x * x), 0.0, np.inf, args=(k,))[0]
    np.testing.assert_allclose(fgrad.grad(gauss)(2.0), -np.sqrt(np.pi) / (4 * 2.0**1.5))
    # an integer argument (an exponent) has no derivative and is left alone; second order
    power = lambda k, b: fsi.quad(lambda x, k, n: k * x**n, 0.0, b, args=(k, 2))[0]
    np.testing.assert_allclose(fgrad.grad(power, argnums=(0, 1))(3.0, 2.0), (8.0 / 3.0, 12.0))
    decay = lambda k: fsi.quad(lambda x, k: fnp.exp(-k * x), 0.0, 1.0, args=(k,))[0]
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(decay))(1.0), 2.0 - 5.0 / np.e, rtol=1e-12)
    with pytest.raises(TypeError, match="closes over a value being differentiated.*args="):
        fgrad.grad(lambda k: fsi.quad(lambda x: fnp.exp(-k * x), 0.0, 1.0)[0])(1.0)
    with pytest.raises(TypeError, match="must be real, got shape \\(\\) and dtype complex128"):
        fsi.quad(f, 0.0, 1.0 + 1j, args=(p,))


def test_quad_points_are_read_as_constants_and_an_objects_parameter_is_refused():
    """A traced `points` failed inside SciPy ("Converting a traced value ... to a NumPy
    array"): the points only guide QUADPACK's subdivision, the integral does not depend on
    them, so they are read at their values. The integral of |x - c| over [0, 1], with the kink
    c as a point, has d/dc = 2c - 1. A callable object or bound method holding the parameter
    failed in SciPy's float(); it is refused as odeint refuses it, naming args."""
    import fgrad.scipy.integrate as fsi

    kink = lambda c: fsi.quad(lambda x, c: fnp.abs(x - c), 0.0, 1.0, args=(c,), points=[c])[0]
    for d in (fgrad.grad(kink), fgrad.jacfwd(kink), fgrad.jit(fgrad.grad(kink))):
        for c in (0.3, 0.6, 0.3):  # (jit: a replay with another point)
            np.testing.assert_allclose(d(c), 2 * c - 1, rtol=1e-10)
    cs = np.array([0.3, 0.6])
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(kink))(cs), 2 * cs - 1, rtol=1e-10)
    # the points alone traced: an integral that does not depend on them
    fixed = lambda c: fsi.quad(lambda x: fnp.abs(x - 0.5), 0.0, 1.0, points=[c])[0]
    assert fgrad.grad(fixed)(0.5) == 0.0

    class Wave:
        def __init__(self, c):
            self.c = c

        def __call__(self, x):
            return fnp.sin(self.c * x)

        def at(self, x):
            return fnp.sin(self.c * x)

    for func in (lambda c: Wave(c), lambda c: Wave(c).at):
        for a, b in ((0.0, 1.0), (0.0, np.inf), (-np.inf, np.inf)):
            with pytest.raises(TypeError, match=r"quad: func reads a value.*Pass it in args"):
                fgrad.grad(lambda c: fsi.quad(func(c), a, b)[0])(1.3)


def _rotating(y, t, k, c):
    return fnp.stack([-k * y[0] + c * y[1], -c * y[0] - 0.3 * y[1]])


def test_odeint_jit_and_vmap_arguments_not_differentiated_change_no_bit():
    """A time grid, y0 or float argument that jit or vmap holds but no transform differentiates
    counted as differentiated: the system of sensitivities was wider, LSODA took other steps,
    and jit(grad) differed from grad by 8.6e-11 (2.5e-10 for the argument c), vmap over y0
    from the loop by 5.4e-9 (SciPy's default tolerances)."""
    t, y0 = np.array([0.0, 1.3]), np.array([1.0, -0.5])

    def sol(k, t, y0, c):
        return odeint(_rotating, y0, t, args=(k, c))[-1, 0]

    for d in (fgrad.grad, fgrad.jacfwd):
        eager = d(sol)(0.7, t, y0, 1.1)
        assert fgrad.jit(d(sol))(0.7, t, y0, 1.1) == eager
    rows = np.array([[1.0, -0.5], [0.3, 0.2]])
    by_y0 = fgrad.vmap(fgrad.grad(sol), in_axes=(None, None, 0, None))(0.7, t, rows, 1.1)
    np.testing.assert_array_equal(by_y0, [fgrad.grad(sol)(0.7, t, y, 1.1) for y in rows])
    cs = np.array([1.1, 0.4])
    by_c = fgrad.vmap(fgrad.grad(sol), in_axes=(None, None, None, 0))(0.7, t, y0, cs)
    np.testing.assert_array_equal(by_c, [fgrad.grad(sol)(0.7, t, y0, c) for c in cs])


def _oscillating(k, on_failure="raise"):
    integrand = lambda x, k: fnp.sin(k * x) / x
    return integrate.quad(integrand, 1e-9, 1000.0, args=(k,), limit=5, on_failure=on_failure)[0]


def test_quad_refuses_an_unconverged_integral_that_is_differentiated():
    """quad never read QUADPACK's ier: an oscillating integral that did not converge gave
    grad 61.98 (exact -0.0200) with only SciPy's IntegrationWarning. Now, as odeint, a failed
    integral a derivative uses raises (or warns with on_failure="warn"), as does a failed
    integral of the derivative; one nothing differentiates is SciPy's, with its warning."""
    import warnings

    from scipy.integrate import IntegrationWarning

    for d in (fgrad.grad, fgrad.jacfwd, lambda f: fgrad.jit(fgrad.grad(f))):
        with pytest.raises(RuntimeError, match="quad: the integral did not converge.*limit"):
            d(_oscillating)(50.0)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        fgrad.grad(lambda k: _oscillating(k, "warn"))(50.0)
    # sqrt(x + k) converges with limit=8, its derivative 1 / (2 sqrt(x + k)) does not
    root = lambda k: integrate.quad(lambda x, k: fnp.sqrt(x + k), 0.0, 1.0, args=(k,), limit=8)[0]
    with pytest.raises(RuntimeError, match="integral of a derivative did not converge"):
        fgrad.grad(root)(1e-10)
    with pytest.raises(ValueError, match="on_failure must be 'raise' or 'warn'"):
        _oscillating(50.0, "ignore")
    with pytest.warns(IntegrationWarning):
        expected = scipy.integrate.quad(lambda x: np.sin(50.0 * x) / x, 1e-9, 1000.0, limit=5)[0]
    for run in (_oscillating, fgrad.jit(_oscillating)):
        with pytest.warns(IntegrationWarning):
            assert run(50.0) == expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        np.testing.assert_array_equal(fgrad.vmap(_oscillating)(np.array([50.0])), [expected])


def test_quad_derivative_in_a_limit_needs_no_converged_integral():
    """The derivative in a limit is the integrand there (exact whatever QUADPACK's
    accuracy): the convergence check raised for it, where f(b) = sin(1000) / 1000 is exact."""
    import warnings

    from scipy.integrate import IntegrationWarning

    integral = lambda b: integrate.quad(lambda x: fnp.sin(x) / x, 1e-9, b, limit=5)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        for d in (fgrad.grad, fgrad.jacfwd, lambda f: fgrad.jit(fgrad.grad(f))):
            assert d(integral)(1000.0) == np.sin(1000.0) / 1000.0


def test_quad_args_may_be_pytrees():
    """A dict or tuple in args failed under grad ("PyTreeDef(({'a': *, 'b': *},)) expected 2
    leaves, got 1"): the integrand of a partial derivative took flattened leaves where quad
    passes args as given."""
    e1 = 1.0 - np.exp(-1.0)  # d/da of the integral of a exp(-b x) over [0, 1]
    db = -2.0 * (1.0 - 2.0 * np.exp(-1.0))  # d/db: -a times the integral of x exp(-x)

    def by_dict(p):
        return integrate.quad(lambda x, p: p["a"] * fnp.exp(-p["b"] * x), 0.0, 1.0, args=(p,))[0]

    def by_tuple(a, b):
        return integrate.quad(lambda x, ab: ab[0] * fnp.exp(-ab[1] * x), 0.0, 1.0, args=((a, b),))[
            0
        ]

    p = {"a": 2.0, "b": 1.0}
    g = fgrad.grad(by_dict)(p)
    np.testing.assert_allclose([g["a"], g["b"]], [e1, db], rtol=1e-12)
    assert fgrad.jit(fgrad.grad(by_dict))(p) == g
    np.testing.assert_allclose(fgrad.grad(by_tuple, argnums=(0, 1))(2.0, 1.0), [e1, db])
    _, t = fgrad.jvp(by_dict, (p,), ({"a": 1.0, "b": 0.5},))
    np.testing.assert_allclose(t, e1 + 0.5 * db, rtol=1e-12)
    rows = {"a": np.array([2.0, 3.0]), "b": np.array([1.0, 1.0])}
    by_rows = fgrad.vmap(fgrad.grad(by_dict))(rows)
    loop = [fgrad.grad(by_dict)({"a": a, "b": 1.0}) for a in (2.0, 3.0)]
    np.testing.assert_array_equal(by_rows["b"], [r["b"] for r in loop])
    # second order: d2/da db = -(1 - 2/e)
    h = fgrad.hessian(by_dict)(p)
    np.testing.assert_allclose(h["a"]["b"], db / 2.0, rtol=1e-10)


@pytest.mark.parametrize("mode", ["sin", fnp.sin, "c8"])
def test_quad_args_may_hold_strings_and_functions(mode):
    """quad read a dtype from every leaf of args: a mode string failed ("data type 'sin' not
    understood"), a function too, and 'c8' was taken for a complex parameter. They are passed
    to func as they are, as SciPy passes them, with or without derivatives; the integral of
    sin(k x) over [0, 1] is (1 - cos k) / k."""

    def f(x, k, mode):
        if callable(mode):
            return mode(k * x)
        return fnp.sin(k * x) if mode == "sin" else fnp.cos(k * x)

    def area(k):
        return integrate.quad(f, 0.0, 1.0, args=(k, mode))[0]

    k = 1.3
    plain = scipy.integrate.quad(
        lambda x, k, m: np.sin(k * x) if m != "c8" else np.cos(k * x), 0.0, 1.0, args=(k, mode)
    )
    assert integrate.quad(f, 0.0, 1.0, args=(k, mode)) == plain
    if mode == "c8":  # the integral of cos(k x): sin(k) / k
        want = (k * np.cos(k) - np.sin(k)) / k**2
    else:
        want = (k * np.sin(k) - (1 - np.cos(k))) / k**2
    for d in (fgrad.grad, fgrad.jacfwd, lambda g: fgrad.jit(fgrad.grad(g))):
        assert float(d(area)(k)) == pytest.approx(want, rel=1e-10)
    rows = np.array([k, 0.7])
    np.testing.assert_allclose(fgrad.vmap(area)(rows), [area(v) for v in rows], rtol=1e-14)
    with pytest.raises(TypeError, match="must be real, got .* complex128 for args leaf 0"):
        integrate.quad(f, 0.0, 1.0, args=(k + 1j, mode))


def test_quad_under_grad_with_a_singularity_at_a_breakpoint():
    """The check that func reads no traced value called it at the interval's midpoint, which
    QUADPACK never evaluates when `points` puts a breakpoint there (where users put an
    integrable singularity): grad raised ZeroDivisionError; it gave 2 sqrt(2) (probe DG #5)."""
    f = lambda x, k: k * (1.0 / math.sqrt(abs(x - 0.5)))  # (Python's: 1 / 0.0 raises)
    value = integrate.quad(f, 0.0, 1.0, args=(1.0,), points=[0.5])[0]
    assert value == pytest.approx(2 * np.sqrt(2), rel=1e-10)
    assert fgrad.grad(lambda k: integrate.quad(f, 0.0, 1.0, args=(k,), points=[0.5])[0])(
        1.0
    ) == pytest.approx(value, rel=1e-12)


def test_quad_options_without_a_derivative_under_vmap_and_jit_are_scipys_per_row():
    # weight=, full_output= and complex_func= were refused whenever a limit or an arg was
    # traced, under vmap and jit too, where nothing is differentiated ("is not
    # differentiated; call quad with plain values (fgrad.stop_gradient)", which raised the
    # same). They are SciPy's own call on each row's values now, refused only when a value
    # is differentiated, and there stop_gradient does what the message says.
    def decay(x, a):
        return fnp.exp(-a * x)

    def cosine(a):
        return integrate.quad(decay, 0.0, 1.0, args=(a,), weight="cos", wvar=2.0)[0]

    def upto(b):
        return integrate.quad(fnp.exp, 0.0, b, full_output=1)[0]

    def complex_upto(b):
        return integrate.quad(lambda x: fnp.exp(1j * x), 0.0, b, complex_func=True)[0]

    rows = np.array([1.0, 2.0, 3.0, 2.0])
    for f, scipys in (
        (cosine, lambda a: scipy.integrate.quad(decay, 0, 1, args=(a,), weight="cos", wvar=2.0)),
        (upto, lambda b: scipy.integrate.quad(np.exp, 0.0, b, full_output=1)),
        (
            complex_upto,
            lambda b: scipy.integrate.quad(lambda x: np.exp(1j * x), 0, b, complex_func=True),
        ),
    ):
        loop = np.array([scipys(r)[0] for r in rows])
        np.testing.assert_array_equal(fgrad.vmap(f)(rows), loop)
        np.testing.assert_array_equal(fgrad.jit(fgrad.vmap(f))(rows), loop)
        jitted = fgrad.jit(f)
        np.testing.assert_array_equal([jitted(r) for r in rows], loop)  # replays never stale
    with pytest.raises(TypeError, match=r"weight='cos' has no derivative, and args leaf 0 is"):
        fgrad.grad(cosine)(1.0)
    held = fgrad.grad(lambda a: a * cosine(fgrad.stop_gradient(a)))(2.0)
    assert held == scipy.integrate.quad(decay, 0, 1, args=(2.0,), weight="cos", wvar=2.0)[0]
