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


# --- complex inputs or complex outputs, without holomorphic=True ---------------------------------
# The pairing is JAX's, <a, b> = Re sum(a b): of a real input and a complex output f = u + iv the
# Jacobian is du/dx + i dv/dx (what jacfwd's pushes give); of a complex input z = x + iy and a
# real output, grad's convention df/dx - i df/dy (what jacrev's pulls give).


def _differences(fn, args, h=1e-6):
    """The Jacobian of fn in every argument from central differences, in JAX's layout: along
    each element of a real argument, and of a complex one d/dx - i d/dy (of a real output)."""
    out_leaves, out_tree = tree_flatten(fn(*args))

    def along(j, idx, step):
        def moved(s):
            a = np.array(args[j])
            a[idx] += s
            return tree_flatten(fn(*args[:j], a, *args[j + 1 :]))[0]

        ahead, behind = moved(step), moved(-step)
        return [(np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(ahead, behind)]

    blocks = []
    for k, o in enumerate(out_leaves):
        per_arg = []
        for j, a in enumerate(args):
            block = np.zeros(np.shape(o) + np.shape(a), np.result_type(o, a))
            for idx in np.ndindex(np.shape(a)):
                d = along(j, idx, h)[k]
                if np.iscomplexobj(a):
                    d = d - 1j * along(j, idx, 1j * h)[k]
                block[(...,) + idx] = d
            per_arg.append(block)
        blocks.append(tuple(per_arg))
    return tree_unflatten(out_tree, blocks)


X = np.array([0.3, -1.1, 2.0, 0.7])
W = np.array([0.5 - 0.2j, -1.3 + 0.9j, 0.1 + 1.5j])
COMPLEX_OUT = {  # functions of real arguments with complex outputs
    "rfft": (fnp.fft.rfft, (X,)),
    "x*exp(1jx)": (lambda x: x * fnp.exp(1j * x), (X,)),
    "pytree": (
        lambda x, y: {"c": fnp.fft.fft(x * y[0]), "r": (fnp.sin(x) * y[1],)},
        (X, np.array([0.4, -0.8])),
    ),
}
REAL_OUT = {  # real-valued functions of complex (and real) arguments
    "abs(z)**2": (lambda z: fnp.abs(z) ** 2, (W,)),
    "real(z*conj(w))": (lambda z, w: fnp.real(z * fnp.conj(w)), (W, W[::-1] * 0.7j)),
    "mixed pytree": (
        lambda z, x: (fnp.abs(z * x[0]) ** 3, {"s": fnp.sum(fnp.imag(z)) * x}),
        (W, np.array([1.2, -0.4])),
    ),
}


@pytest.mark.parametrize("fn, args", COMPLEX_OUT.values(), ids=COMPLEX_OUT)
def test_jacrev_of_a_complex_output_of_real_inputs_is_jacfwds(fn, args):
    """jacrev refused a complex output (`rfft`, `x * exp(1j * x)`) and advised holomorphic=True,
    which then needs complex inputs; now the pulls along e_k and -1j e_k give du/dx + i dv/dx,
    jacfwd's Jacobian."""
    argnums = tuple(range(len(args)))
    rev = fgrad.jacrev(fn, argnums=argnums)(*args)
    _assert_same(rev, fgrad.jacfwd(fn, argnums=argnums)(*args), "jacrev against jacfwd")
    for got, want in zip(tree_flatten(rev)[0], tree_flatten(_differences(fn, args))[0]):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("fn, args", REAL_OUT.values(), ids=REAL_OUT)
def test_jacfwd_of_a_real_output_of_complex_inputs_is_jacrevs(fn, args):
    """jacfwd refused complex inputs where jacrev and grad answer df/dx - i df/dy; now the
    pushes along 1 and 1j of each element give the same."""
    argnums = tuple(range(len(args)))
    fwd = fgrad.jacfwd(fn, argnums=argnums)(*args)
    _assert_same(fwd, fgrad.jacrev(fn, argnums=argnums)(*args), "jacfwd against jacrev")
    for got, want in zip(tree_flatten(fwd)[0], tree_flatten(_differences(fn, args))[0]):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


def test_closed_forms_and_grads_convention():
    z = np.array([1 + 1j, 2 - 1j])
    want = np.diag(z.conj() / np.abs(z))  # d|z|/dx - i d|z|/dy = (x - iy) / |z|
    np.testing.assert_allclose(fgrad.jacfwd(fnp.abs)(z), want, rtol=1e-15)
    np.testing.assert_array_equal(
        fgrad.jacfwd(lambda z: fnp.abs(z[0]))(z), fgrad.grad(lambda z: fnp.abs(z[0]))(z)
    )
    x = np.array([1.0, 2.0, 3.0, 4.0])
    dft = np.exp(-2j * np.pi * np.outer(np.arange(3), np.arange(4)) / 4)  # rfft's rows
    np.testing.assert_allclose(fgrad.jacrev(fnp.fft.rfft)(x), dft, atol=1e-15)
    np.testing.assert_allclose(
        fgrad.jacrev(lambda x: x * fnp.exp(1j * x))(x), np.diag((1 + 1j * x) * np.exp(1j * x))
    )


def test_single_precision_keeps_its_dtypes():
    x = X.astype(np.float32)
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        got = jac(fnp.fft.rfft)(x)
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, jac(fnp.fft.rfft)(X), rtol=1e-6, atol=1e-6)
        assert jac(fnp.abs)(W.astype(np.complex64)).dtype == np.complex64


def test_complex_jacobians_with_has_aux_and_empty_arguments():
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        got, aux = jac(lambda x: (fnp.fft.rfft(x), fnp.sum(x)), has_aux=True)(X)
        np.testing.assert_array_equal(got, jac(fnp.fft.rfft)(X))
        assert aux == np.sum(X)
        got, aux = jac(lambda z: (fnp.abs(z), "label"), has_aux=True)(W)
        np.testing.assert_array_equal(got, jac(fnp.abs)(W))
        assert aux == "label"
        empty = jac(lambda x: 1j * x)(np.zeros(0))
        assert empty.shape == (0, 0) and empty.dtype == np.complex128
        empty = jac(fnp.abs)(np.zeros(0, complex))
        assert empty.shape == (0, 0) and empty.dtype == np.complex128


def test_complex_jacobians_under_vmap_and_jit():
    xs = np.stack([X, 2 * X, -X])
    zs = np.stack([W, W * 1j, W + 1])
    cases = (
        (fgrad.jacrev(lambda x: x * fnp.exp(1j * x)), xs),
        (fgrad.jacfwd(lambda x: x * fnp.exp(1j * x)), xs),
        (fgrad.jacfwd(lambda z: fnp.abs(z) ** 2), zs),
        (fgrad.jacrev(lambda z: fnp.abs(z) ** 2), zs),
    )
    for jac, rows in cases:
        loop = np.stack([jac(r) for r in rows])
        np.testing.assert_allclose(fgrad.vmap(jac)(rows), loop, rtol=1e-14, atol=1e-15)
        jitted = fgrad.jit(jac)
        for r in rows[:2]:  # the record, then its replay: eager's bits
            np.testing.assert_array_equal(jitted(r), jac(r))


def test_hessian_of_a_complex_valued_function_of_real_input():
    """hessian = jacfwd(jacrev): the inner jacrev of a complex output (refused before) gives
    d Re f + i d Im f, and the Hessian is that of Re f plus i that of Im f."""
    x = np.array([1.0, 2.0])
    got = fgrad.hessian(lambda x: fnp.sum(x * fnp.exp(1j * x)))(x)
    np.testing.assert_allclose(got, np.diag((2j - x) * np.exp(1j * x)), rtol=1e-14)


def test_complex_inputs_with_complex_outputs_are_refused_unless_holomorphic():
    """A complex output's derivative in a complex input is one number per element only for a
    holomorphic function; jacfwd(jacrev(f)) of a real f of complex z is the real Hessian in x
    and y, which one complex matrix cannot hold (hessian refuses complex inputs)."""
    z = np.array([1 + 1j, 2 - 1j])
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        with pytest.raises(
            TypeError,
            match=r"holomorphic=False takes complex inputs or complex outputs, not both: "
            r"argument 1 is complex .* output at \['a'\] is complex.*holomorphic=True",
        ):
            jac(lambda x, z: {"a": x * z, "b": fnp.abs(z)}, argnums=(0, 1))(1.0, z)
    f = lambda z: fnp.sum(fnp.abs(z) ** 3)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=False takes complex inputs"):
        fgrad.jacfwd(fgrad.jacrev(f))(z)
    with pytest.raises(TypeError, match="hessian requires real float inputs.*imaginary parts"):
        fgrad.hessian(f)(z)
