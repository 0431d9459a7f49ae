"""No derivative decided by a placeholder: every place fgrad runs a user's code on a value that
stands for every value (issue 31), with a user function that branches on it.

The places (docs/guarantees.md, "Placeholders"):
1. forward mode through a bprop (custom_vjp's bwd, a primitive's fprop): placeholder cotangents;
2. reverse mode through a custom_jvp rule: placeholder tangents;
3. jet through a custom_jvp rule: tangents whose value is a series' first coefficient;
4. linearize: the vjp transposed on placeholder cotangents;
5. tap_cotangent's on_cotangent, when its bprop is transposed;
6. checkpoint: its function runs again on real values, or on a placeholder inside 1-4;
7. vmap's probe of an empty batch: one row of zeros gives the output's shapes.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import custom, forward

# --- rules that branch on the cotangent or tangent they are given ---------------------------------


def fixed_point_double():
    """2 x, whose bwd finds 2 ct as the fixed point of u = ct + u / 2 (the issue's example): at
    a zero cotangent the loop stops after one step, at 1.5 ct."""

    @fgrad.custom_vjp
    def f(x):
        return 2.0 * x

    def bwd(res, ct):
        u = ct
        while True:
            u2 = ct + 0.5 * u
            if fnp.max(fnp.abs(u2 - u)) < 1e-13:
                return (u2,)
            u = u2

    f.defvjp(lambda x: (f(x), None), bwd)
    return f


def zero_shortcut_sin():
    """sin, whose bwd returns zeros for a zero cotangent (a common shortcut)."""

    @fgrad.custom_vjp
    def f(x):
        return fnp.sin(x)

    def bwd(x, ct):
        if not fnp.any(ct != 0):
            return (fnp.zeros_like(ct),)
        return (ct * fnp.cos(x),)

    f.defvjp(lambda x: (f(x), x), bwd)
    return f


def asarray_cos():
    """cos, whose bwd converts the cotangent to NumPy (fine for a first derivative)."""

    @fgrad.custom_vjp
    def f(x):
        return fnp.cos(x)

    f.defvjp(lambda x: (f(x), x), lambda x, ct: (-fnp.sin(x) * np.asarray(ct),))
    return f


def zero_shortcut_jvp_sin():
    """sin as a custom_jvp whose rule returns a zero tangent for a zero tangent."""

    @fgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        if not fnp.any(t != 0):
            return f(x), fnp.zeros_like(t)
        return f(x), fnp.cos(x) * t

    return f


X = np.array([0.3, -1.2, 2.0])


# --- 1. forward mode through a bprop --------------------------------------------------------------


def test_the_issues_fixed_point_bwd_is_exact_in_every_mode():
    f = fixed_point_double()
    assert fgrad.grad(f)(1.0) == pytest.approx(2.0, abs=1e-11)
    assert fgrad.jvp(f, (1.0,), (1.0,))[1] == pytest.approx(2.0, abs=1e-11)  # was 1.5
    assert fgrad.hessian(lambda x: f(x) ** 2)(1.0) == pytest.approx(8.0, abs=1e-10)  # was 6.0
    np.testing.assert_allclose(fgrad.jacfwd(f)(X), 2.0 * np.eye(3), atol=1e-11)
    np.testing.assert_allclose(fgrad.jacrev(f)(X), 2.0 * np.eye(3), atol=1e-11)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(lambda x: f(x) ** 2))(X), 8.0 * X, rtol=1e-10)
    _, series = fgrad.jet(lambda x: f(x) ** 2, (1.0,), ((1.0, 0.0),))
    np.testing.assert_allclose(series, [8.0, 8.0], rtol=1e-10)
    assert fgrad.derivative(lambda x: f(x) ** 2, 2)(1.0) == pytest.approx(8.0, rel=1e-10)


def test_a_zero_shortcut_in_bwd_no_longer_zeroes_forward_mode():
    f = zero_shortcut_sin()
    np.testing.assert_allclose(fgrad.jvp(f, (X,), (np.ones(3),))[1], np.cos(X), rtol=1e-13)
    np.testing.assert_allclose(fgrad.jacfwd(f)(X), np.diag(np.cos(X)), rtol=1e-13)
    hess = fgrad.hessian(lambda x: fnp.sum(f(x)))(X)
    np.testing.assert_allclose(hess, np.diag(-np.sin(X)), rtol=1e-13)


def test_a_bwd_converting_the_cotangent_to_numpy_works_in_forward_mode():
    f = asarray_cos()
    np.testing.assert_allclose(fgrad.jacfwd(f)(X), np.diag(-np.sin(X)), rtol=1e-13)
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(f(x)))(X), -np.sin(X), rtol=1e-13)
    # a constant cotangent is converted as it is; one that depends on x would be
    # differentiated through np.asarray: refused, not dropped
    hess = fgrad.hessian(lambda x: fnp.sum(f(x)))(X)
    np.testing.assert_allclose(hess, np.diag(-np.cos(X)), rtol=1e-13)
    with pytest.raises(TypeError, match="would drop its gradient"):
        fgrad.hessian(lambda x: fnp.sum(f(x) ** 2))(X)


def test_complex_values_follow_jaxs_pairing_on_the_exact_path():
    c = 2.0 - 3.0j

    def rule(body):
        f = fgrad.custom_vjp(lambda z: body(z))

        def bwd(res, ct):
            if fnp.all(ct == 0):  # a read: the exact path
                return (fnp.zeros_like(ct),)
            return ({"mul": lambda: c * ct, "conj": lambda: fnp.conj(ct)}[name](),)

        f.defvjp(lambda z: (f(z), None), bwd)
        return f

    for name, body in (("mul", lambda z: c * z), ("conj", fnp.conj)):
        z, t = 1.0 + 2.0j, 0.5 - 1.0j
        got = fgrad.jvp(rule(body), (z,), (t,))[1]
        assert got == pytest.approx(fgrad.jvp(body, (z,), (t,))[1], rel=1e-14), name


def test_the_fast_path_runs_bwd_once_and_the_exact_path_agrees_with_it():
    calls = []

    @fgrad.custom_vjp
    def polar(r, theta):
        return {"x": r * fnp.cos(theta), "y": r * fnp.sin(theta)}

    def bwd(res, ct):
        calls.append(1)
        r, theta = res
        c, s = fnp.cos(theta), fnp.sin(theta)
        return ct["x"] * c + ct["y"] * s, r * (ct["y"] * c - ct["x"] * s)

    polar.defvjp(lambda r, th: (polar(r, th), (r, th)), bwd)
    r, th = np.array([1.0, 2.0]), np.array([0.4, -0.7])
    tr, tth = np.array([0.3, -0.2]), np.array([1.1, 0.5])
    _, fast = fgrad.jvp(polar, (r, th), (tr, tth))
    assert len(calls) == 1  # no read: one transposition

    # the exact path (one pull per output element) applied to the same bprop
    outs = [r * np.cos(th), r * np.sin(th)]

    def pull(cts):
        ct = {k: np.zeros(2) if c is None else c for k, c in zip("xy", cts)}
        return list(bwd((r, th), ct))

    exact = forward.tangent_by_pulls(pull, outs, [tr, tth])
    np.testing.assert_allclose(exact[0], fast["x"], rtol=1e-14)
    np.testing.assert_allclose(exact[1], fast["y"], rtol=1e-14)


def test_a_primitive_whose_bprop_loops_on_the_cotangent_is_exact_in_forward_mode():
    def fprop(x):
        def bprop(ct):  # ct * 3 x^2 by repeated halving of the remainder
            u, left = 0.0 * ct, ct
            while fnp.any(fnp.abs(left) > 1e-15):
                u, left = u + 0.5 * left, 0.5 * left
            return (u * 3.0 * x**2,)

        return x**3, bprop

    cube = fgrad.primitive(fprop, name="cube")
    np.testing.assert_allclose(fgrad.jacfwd(cube)(X), np.diag(3 * X**2), rtol=1e-13)
    assert fgrad.derivative(cube, 2)(1.5) == pytest.approx(9.0, rel=1e-12)


# --- 2. and 3. reverse mode and jet through a custom_jvp rule ----------------------------------


def test_a_zero_shortcut_in_a_jvp_rule_no_longer_zeroes_reverse_mode_or_jet():
    f = zero_shortcut_jvp_sin()
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(f(x)))(X), np.cos(X), rtol=1e-13)
    np.testing.assert_allclose(fgrad.jacrev(f)(X), np.diag(np.cos(X)), rtol=1e-13)
    hess = fgrad.hessian(lambda x: fnp.sum(f(x)))(X)
    np.testing.assert_allclose(hess, np.diag(-np.sin(X)), rtol=1e-13)
    # x(s) = 1 + s^2 / 2: the tangent's value is 0 at s = 0, its derivative is not
    for series in ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)):
        got = fgrad.jet(f, (1.0,), (series,))[1]
        want = fgrad.jet(fnp.sin, (1.0,), (series,))[1]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
    _, fj = fgrad.linearize(lambda x: fnp.sum(f(x)), X)
    assert fj(np.ones(3)) == pytest.approx(np.sum(np.cos(X)), rel=1e-13)


def test_complex_inputs_through_a_jvp_rule_that_reads_its_tangent():
    f = zero_shortcut_jvp_sin()
    z = 1.0 + 1.0j
    for part in (fnp.real, fnp.imag):
        got = fgrad.grad(lambda z: part(f(z)))(z)
        assert got == pytest.approx(fgrad.grad(lambda z: part(fnp.sin(z)))(z), rel=1e-14)


# --- 4. linearize ---------------------------------------------------------------------------------


def test_linearize_through_a_reading_bwd_is_exact_and_keeps_one_evaluation_otherwise():
    f = fixed_point_double()
    out, f_jvp = fgrad.linearize(lambda x: f(x) ** 2, 1.0)
    assert out == 4.0
    assert f_jvp(1.0) == pytest.approx(8.0, rel=1e-10)
    assert f_jvp(0.5) == pytest.approx(4.0, rel=1e-10)
    calls = []
    h = zero_shortcut_jvp_sin()

    def g(x):
        calls.append(1)
        return h(x) * x

    _, g_jvp = fgrad.linearize(g, X)
    assert calls == [1]
    # the rule's reverse mode, built column by column, reads no cotangent: f_jvp transposes
    # it without running g again
    np.testing.assert_allclose(g_jvp(np.ones(3)), np.cos(X) * X + np.sin(X), rtol=1e-13)
    assert calls == [1]


# --- 5. tap_cotangent -----------------------------------------------------------------------------


def test_tap_cotangent_never_sees_a_placeholder_and_linearize_agrees_with_jvp():
    seen = []

    def clip_and_log(ct):
        seen.append(ct)
        return fnp.where(fnp.abs(ct) > 1.0, fnp.sign(ct), ct) if fnp.any(ct != 0) else ct

    f = lambda x: 10.0 * fgrad.tap_cotangent(x, clip_and_log)
    assert fgrad.grad(f)(2.0) == 1.0 and len(seen) == 1 and seen[0] == 10.0
    seen.clear()
    assert fgrad.jvp(f, (2.0,), (1.0,))[1] == 10.0  # forward mode passes tangents through
    assert fgrad.linearize(f, 2.0)[1](1.0) == 10.0
    assert seen == []
    scale = lambda x: 3.0 * fgrad.tap_cotangent(x, lambda ct: 2.0 * ct)
    assert fgrad.linearize(scale, 1.0)[1](1.0) == fgrad.jvp(scale, (1.0,), (1.0,))[1] == 3.0


# --- 6. checkpoint --------------------------------------------------------------------------------


def branchy(x):
    """A function that branches on its argument's value."""
    return fnp.sin(x) * x if x > 0 else x**3


def test_checkpoint_of_a_branching_function_runs_on_real_values_in_every_transform():
    cp = fgrad.checkpoint(branchy)
    for x in (0.7, -0.4):
        assert fgrad.grad(cp)(x) == pytest.approx(fgrad.grad(branchy)(x), rel=1e-14)
        assert fgrad.jvp(cp, (x,), (1.0,))[1] == pytest.approx(fgrad.grad(branchy)(x), rel=1e-14)
        assert fgrad.hessian(cp)(x) == pytest.approx(fgrad.hessian(branchy)(x), rel=1e-14)
        assert fgrad.jet(cp, (x,), ((1.0, 0.0),))[1][1] == pytest.approx(
            fgrad.hessian(branchy)(x), rel=1e-14
        )
    rows = np.array([0.7, -0.4])
    np.testing.assert_allclose(
        fgrad.vmap(fgrad.grad(cp))(rows), [fgrad.grad(branchy)(x) for x in rows], rtol=1e-14
    )


def test_a_checkpoint_inside_bwd_is_given_no_placeholder_to_branch_on():
    def doubled(c):
        return 2.0 * c if fnp.any(c != 0) else 0.0 * c  # 2 c, with a zero shortcut

    f = fgrad.custom_vjp(lambda x: 2.0 * x)
    f.defvjp(lambda x: (f(x), None), lambda res, ct: (fgrad.checkpoint(doubled)(ct),))
    np.testing.assert_allclose(fgrad.jacfwd(f)(X), 2.0 * np.eye(3), rtol=1e-14)
    assert fgrad.jvp(f, (1.0,), (1.0,))[1] == 2.0

    def bwd_closing_over_ct(res, ct):  # the checkpointed function reads ct as a free variable
        def inner(y):
            return 2.0 * ct * y if fnp.any(ct != 0) else 0.0 * ct * y

        return (fgrad.checkpoint(inner)(1.0),)

    g = fgrad.custom_vjp(lambda x: 2.0 * x)
    g.defvjp(lambda x: (g(x), None), bwd_closing_over_ct)
    assert fgrad.grad(g)(1.0) == 2.0 and fgrad.jvp(g, (1.0,), (1.0,))[1] == 2.0


# --- 7. vmap's probe of an empty batch ------------------------------------------------------------


def test_vmap_of_an_empty_batch_gives_no_rows_whatever_path_its_probe_takes():
    # The probe's row of zeros takes the else branch here; there is no row whose value it
    # could have made wrong, and both branches have rows of shape (3,).
    out = fgrad.vmap(lambda r: r if fnp.sum(r) > 0 else -r)(np.zeros((0, 3)))
    assert out.shape == (0, 3) and out.dtype == np.float64
    g = fgrad.vmap(fgrad.grad(lambda x: f_sq(x)))(np.zeros((0,)))
    assert g.shape == (0,)


def f_sq(x):
    return fixed_point_double()(x) ** 2


def test_laplacian_through_rules_that_read_their_placeholders():
    # the Laplacian's collapsed second coefficient meets the rule with a zero first one
    want = fgrad.laplacian(lambda x: fnp.sum(fnp.sin(x)))(X)
    for make in (zero_shortcut_sin, zero_shortcut_jvp_sin):
        f = make()
        assert fgrad.laplacian(lambda x: fnp.sum(f(x)))(X) == pytest.approx(want, rel=1e-13)
    f = fixed_point_double()
    assert fgrad.laplacian(lambda x: fnp.sum(f(x) ** 2))(X) == pytest.approx(24.0, rel=1e-11)


# --- the fast path and the exact path agree -------------------------------------------------------


def polar_pair(read):
    """(custom_vjp, custom_jvp) versions of polar coordinates (two arguments, a dict of two
    outputs); with `read`, each rule first reads the value it is given (which sends it down
    the exact path) and then computes exactly what the other does."""

    def bwd(res, ct):
        if read:
            bool(fnp.all(ct["x"] == ct["x"]))
        r, th = res
        c, s = fnp.cos(th), fnp.sin(th)
        return ct["x"] * c + ct["y"] * s, r * (ct["y"] * c - ct["x"] * s)

    vjp_polar = fgrad.custom_vjp(lambda r, th: {"x": r * fnp.cos(th), "y": r * fnp.sin(th)})
    vjp_polar.defvjp(lambda r, th: (vjp_polar(r, th), (r, th)), bwd)

    jvp_polar = fgrad.custom_jvp(lambda r, th: {"x": r * fnp.cos(th), "y": r * fnp.sin(th)})

    @jvp_polar.defjvp
    def rule(primals, tangents):
        (r, th), (tr, tth) = primals, tangents
        if read:
            bool(fnp.all(tr == tr))
        c, s = fnp.cos(th), fnp.sin(th)
        return jvp_polar(r, th), {"x": tr * c - r * s * tth, "y": tr * s + r * c * tth}

    return vjp_polar, jvp_polar


@pytest.mark.parametrize("which", [0, 1], ids=["custom_vjp", "custom_jvp"])
def test_the_exact_path_agrees_with_the_fast_path_in_every_transform(which, monkeypatch):
    fast, exact = polar_pair(False)[which], polar_pair(True)[which]
    exact_paths = []  # the names of the exact paths taken
    for module, name in (
        (forward, "tangent_by_pulls"),
        (custom, "_custom_jvp_by_columns"),
        (custom, "_jvp_by_columns"),
    ):

        def counted(*args, _run=getattr(module, name), _name=name):
            exact_paths.append(_name)
            return _run(*args)

        monkeypatch.setattr(module, name, counted)
    r, th = np.array([1.0, 2.0]), np.array([0.4, -0.7])

    def loss(f):
        return lambda r, th: fnp.sum(f(r, th)["x"] ** 2 * f(r, th)["y"])

    def flat(f):
        return lambda r, th: fnp.concatenate([f(r, th)["x"], f(r, th)["y"]])

    transforms = {
        "jvp": lambda f: fgrad.jvp(flat(f), (r, th), (np.ones(2), np.array([0.5, -1.0])))[1],
        "grad": lambda f: fgrad.grad(loss(f), argnums=(0, 1))(r, th),
        "jacfwd": lambda f: fgrad.jacfwd(flat(f), argnums=(0, 1))(r, th),
        "jacrev": lambda f: fgrad.jacrev(flat(f), argnums=(0, 1))(r, th),
        "hessian": lambda f: fgrad.hessian(loss(f))(r, th),
        "jet": lambda f: fgrad.jet(flat(f), (r, th), ((np.ones(2), r), (th, np.ones(2))))[1],
        "linearize": lambda f: fgrad.linearize(flat(f), r, th)[1](th, r),
    }
    # the transforms that run the rule on a placeholder (the others give it real values)
    placeholder = {"jvp", "jacfwd"} if which else {"grad", "jacrev"}
    placeholder = set(transforms) - placeholder
    for name, transform in transforms.items():
        a = transform(fast)
        assert exact_paths == [], name  # a rule that reads nothing keeps the fast path
        b = transform(exact)
        assert bool(exact_paths) == (name in placeholder), name
        exact_paths.clear()
        for x, y in zip(jax_like_leaves(a), jax_like_leaves(b)):
            np.testing.assert_allclose(y, x, rtol=1e-13, atol=1e-15, err_msg=name)


def jax_like_leaves(x):
    return [np.asarray(v) for v in fgrad.tree_util.tree_flatten(x)[0]]
