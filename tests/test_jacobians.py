"""Jacobians as vmap of a pull (jacrev) or a push (jacfwd) over one-hot seeds, as in JAX.

The reference is one pass per row: a vjp pulled once per one-hot cotangent (per column for
jacfwd, a jvp per one-hot tangent). Every row of the gradient table is differentiated by
jacrev and by jacfwd against that reference, and jacfwd of jacrev on the small rows against
the loop of its own rows. A user's bprop that reads its cotangent's values (gradient
clipping) is handled by vmap's control-flow rule: the rows are split where they read
different values.
"""

import numpy as np
import pytest
from gradtable import load, sample

import fgrad
import fgrad.numpy as fnp
from fgrad import api
from fgrad.tree_util import tree_flatten, tree_unflatten

ROWS, _ = load()
SLOW = {"scipy.integrate.odeint"}  # its rows take seconds each; a Jacobian per row is minutes
TABLE = [r for r in ROWS if r.name not in SLOW]


def _one_hots(v):
    n = int(np.size(v))
    return np.eye(n, dtype=np.result_type(v)).reshape((n,) + np.shape(v))


def _by_rows(mode, fn, args):
    """The Jacobian of fn with respect to every argument, one vjp pull per output element
    (jacrev) or one jvp per input element (jacfwd), in JAX's layout."""
    out, pull = fgrad.vjp(fn, *args)
    out_leaves, out_tree = tree_flatten(out)
    blocks = []
    for k, o in enumerate(out_leaves):
        per_arg = []
        for j, a in enumerate(args):
            if mode == "jacrev":
                rows = []
                for e in _one_hots(o):
                    cts = [e if m == k else np.zeros_like(c) for m, c in enumerate(out_leaves)]
                    rows.append(np.asarray(pull(tree_unflatten(out_tree, cts))[j]))
                block = np.stack(rows) if rows else np.zeros((0,) + np.shape(a))
            else:
                cols = []
                for e in _one_hots(a):
                    ts = tuple(e if m == j else np.zeros_like(b) for m, b in enumerate(args))
                    cols.append(np.asarray(tree_flatten(fgrad.jvp(fn, args, ts)[1])[0][k]))
                block = np.stack(cols, axis=-1) if cols else np.zeros(np.shape(o) + (0,))
            per_arg.append(block.reshape(np.shape(o) + np.shape(a)))
        blocks.append(tuple(per_arg))
    return tree_unflatten(out_tree, blocks)


def _assert_same(got, want, what):
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_tree = tree_flatten(want)
    assert g_tree == w_tree, what
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, what
        scale = np.max(np.abs(w[np.isfinite(w)]), initial=1.0)
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12 * scale, err_msg=what)


def _real(row):
    args = row.args()
    if any(np.iscomplexobj(a) for a in args):
        return False
    return not any(np.iscomplexobj(o) for o in tree_flatten(row.fn(*args))[0])


REAL = [r for r in TABLE if _real(r)]


# The quick suite samples the rows (tests/gradtable.py, `sample`); FGRAD_FULL=1 runs them all.
BY_MODE = {mode: sample(REAL, mode) for mode in ("jacrev", "jacfwd")}


@pytest.mark.parametrize(
    "row, mode",
    [pytest.param(r, mode, id=f"{mode}-{r.id}") for mode, rows in BY_MODE.items() for r in rows],
)
def test_jacobian_equals_one_pass_per_row(row, mode):
    args = row.args()
    argnums = tuple(range(len(args)))
    got = getattr(fgrad, mode)(row.fn, argnums=argnums)(*args)
    _assert_same(got, _by_rows(mode, row.fn, args), row.id)


SMALL_ROWS = [r for r in REAL if sum(np.size(a) for a in r.args()) <= 6]
SMALL = sample(SMALL_ROWS, "jacfwd-of-jacrev")


@pytest.mark.parametrize("row", SMALL, ids=[r.id for r in SMALL])
def test_jacfwd_of_jacrev_equals_its_rows(row):
    """jacfwd of jacrev: vmap over a push whose function is itself a vmap over a pull."""
    args = row.args()
    argnums = tuple(range(len(args)))
    inner = fgrad.jacrev(row.fn, argnums=argnums)
    got = fgrad.jacfwd(inner, argnums=argnums)(*args)
    _assert_same(got, _by_rows("jacfwd", inner, args), row.id)


def test_jacobian_matches_closed_form():
    rng = np.random.default_rng(1)
    A, x = rng.standard_normal((6, 6)), rng.standard_normal(6)
    t = np.tanh(A @ x)
    want = ((1 - t * t) * x)[:, None] * A + np.diag(t)
    f = lambda x: fnp.tanh(A @ x) * x
    np.testing.assert_allclose(fgrad.jacrev(f)(x), want, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(fgrad.jacfwd(f)(x), want, rtol=1e-13, atol=1e-14)


def _rectified(threshold):
    """The identity with a bprop that reads its cotangent's values, as gradient clipping does."""

    @fgrad.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (x, None), lambda _, ct: (fnp.where(ct > threshold, ct, 0.0),))
    return f


@pytest.mark.parametrize("threshold", [0.0, 0.5, -0.5])
def test_a_bprop_that_reads_the_cotangent(threshold):
    f = _rectified(threshold)
    x = np.linspace(-1.0, 1.0, 5)
    got = fgrad.jacrev(lambda x: f(x * 2.0))(x)
    np.testing.assert_array_equal(got, _by_rows("jacrev", lambda x: f(x * 2.0), (x,))[0])
    # rows are one-hot: ct > 0 keeps each one and ct > 0.5 too; ct > -0.5 keeps them all
    np.testing.assert_array_equal(got, 2.0 * np.eye(5))


def test_a_bprop_that_branches_on_float_of_the_cotangent():
    @fgrad.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (x, None), lambda _, ct: (ct * (2.0 if float(fnp.sum(ct)) > 0 else 1.0),))
    np.testing.assert_array_equal(fgrad.jacrev(f)(np.ones(3)), 2.0 * np.eye(3))
    x = np.array([1.0, -1.0])
    got = fgrad.jacrev(lambda x: f(x) * np.array([1.0, -1.0]))(x)
    np.testing.assert_array_equal(got, np.diag([2.0, -1.0]))  # the rows branch apart


def test_outputs_sharing_a_cotangent_get_their_own_arrays():
    jac = fgrad.jacrev(lambda x, y: x + y, argnums=(0, 1))(np.ones(3), np.ones(3))
    jac[0][0, 0] = 5.0
    assert jac[1][0, 0] == 1.0


def test_an_output_that_does_not_depend_on_the_input():
    jac = fgrad.jacrev(lambda x, y: x * 2.0, argnums=(0, 1))(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(jac[1], np.zeros((3, 2)))
    jac[1][0, 0] = 1.0  # writable, and not shared


def test_many_rows_through_large_values_go_in_chunks(monkeypatch):
    rng = np.random.default_rng(2)
    A, x = rng.standard_normal((7, 5)), rng.standard_normal(5)

    def f(x):
        return fnp.sin(A @ x) * fnp.sum(x**2)

    want = _by_rows("jacrev", f, (x,))[0]
    sizes = []
    real = api.map_rows

    def counting(fun, rows):
        sizes.append(len(rows))
        return real(fun, rows)

    monkeypatch.setattr(api, "_MAX_ELEMENTS", 14)  # 2 rows of 7 elements per vmap
    monkeypatch.setattr(api, "map_rows", counting)
    for jac in (fgrad.jacrev(f), fgrad.jacfwd(f)):
        sizes.clear()
        np.testing.assert_allclose(jac(x), want, rtol=1e-12, atol=1e-14)
        assert max(sizes) == 2 and len(sizes) > 1  # several vmaps of at most two rows


def test_has_aux_returns_the_auxiliary_value_undifferentiated_as_jax():
    """jacfwd, jacrev, hessian and linearize take has_aux (JAX's signatures: after argnums,
    before holomorphic); they raised TypeError."""
    x = np.array([0.5, -1.0, 2.0])

    def f(x):
        return fnp.sin(x) * x[0], {"norm": fnp.sum(x**2), "plain": 7}

    def scalar(x):
        return fnp.sum(fnp.sin(x) ** 2), fnp.max(x)

    out, aux = f(x)
    for jac in (fgrad.jacfwd, fgrad.jacrev):
        got, got_aux = jac(f, has_aux=True)(x)
        np.testing.assert_array_equal(got, jac(lambda x: f(x)[0])(x))
        assert got_aux == aux and type(got_aux["norm"]) is np.float64
        got, got_aux = jac(lambda x, y: (x * y, y), 1, True)(x, 2.0)  # positionally, as JAX
        np.testing.assert_array_equal(got, x)
        assert got_aux == 2.0
    h, h_aux = fgrad.hessian(scalar, has_aux=True)(x)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(2 * x)), rtol=1e-14, atol=1e-15)
    assert h_aux == 2.0 and type(h_aux) is np.float64
    value, f_jvp, lin_aux = fgrad.linearize(f, x, has_aux=True)
    np.testing.assert_array_equal(value, out)
    np.testing.assert_allclose(
        f_jvp(np.ones(3)), fgrad.jvp(lambda x: f(x)[0], (x,), (np.ones(3),))[1]
    )
    assert lin_aux == aux
    z = np.array([1.0 + 0.5j, -0.3j])
    np.testing.assert_allclose(
        fgrad.hessian(lambda z: fnp.sum(z**3), holomorphic=True)(z), np.diag(6 * z)
    )


def test_jacrev_of_an_integer_or_boolean_output_is_refused_as_grad_refuses_it():
    """jacrev(argsort) returned a float32 zero Jacobian where grad raises (and JAX's jacrev
    too); jacfwd keeps the integer zeros of the output's tangent (as JAX's)."""
    x = np.array([0.5, 1.5], np.float32)
    for f in (fnp.argsort, lambda x: x > 1.0, lambda x: (x, fnp.argmax(x))):
        with pytest.raises(
            TypeError, match=r"jacrev requires real float outputs.*dtype (int|bool)"
        ):
            fgrad.jacrev(f)(x)
    with pytest.raises(TypeError, match=r"hessian requires real float outputs.*dtype int64"):
        fgrad.hessian(fnp.argmax)(x)
    jacobian = fgrad.jacfwd(fnp.argsort)(x)
    assert jacobian.dtype == np.argsort(x).dtype
    np.testing.assert_array_equal(jacobian, np.zeros((2, 2)))
