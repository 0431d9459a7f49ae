"""The transforms' semantics (JAX's) and the errors they give for bad input."""

import collections
import copy
import functools
import pickle

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import (
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
)

Point = collections.namedtuple("Point", "x y")


# --- semantics ------------------------------------------------------------------------------------


def test_grad_argnums_int_and_tuple():
    f = lambda x, y, z: x * y**2 + z
    assert grad(f)(1.0, 2.0, 3.0) == 4.0
    assert grad(f, argnums=1)(1.0, 2.0, 3.0) == 4.0
    assert grad(f, argnums=-1)(1.0, 2.0, 3.0) == 1.0
    g = grad(f, argnums=(0, 2))(1.0, 2.0, 3.0)
    assert isinstance(g, tuple) and g == (4.0, 1.0)


def test_value_and_grad_with_aux_and_kwargs():
    def f(x, scale=1.0):
        return scale * fnp.sum(x**2), {"norm": fnp.sqrt(fnp.sum(x**2))}

    x = np.array([3.0, 4.0])
    (value, aux), g = value_and_grad(f, has_aux=True)(x, scale=2.0)
    assert value == 50.0 and aux["norm"] == 5.0
    assert type(aux["norm"]) is not fgrad.core.Box  # aux comes back as plain values
    np.testing.assert_array_equal(g, 4.0 * x)
    g2, _aux2 = grad(f, has_aux=True)(x)
    np.testing.assert_array_equal(g2, 2.0 * x)


def test_pytrees_in_and_out():
    params = {"w": np.array([1.0, 2.0]), "b": 0.5, "extra": None, "p": Point(1.0, [2.0, 3.0])}

    def loss(p):
        return fnp.sum(p["w"] ** 2) + p["b"] * p["p"].x + p["p"].y[0] * p["p"].y[1]

    g = grad(loss)(params)
    assert g["extra"] is None and isinstance(g["p"], Point) and isinstance(g["p"].y, list)
    np.testing.assert_array_equal(g["w"], [2.0, 4.0])
    assert (g["b"], g["p"].x, g["p"].y[0], g["p"].y[1]) == (1.0, 0.5, 3.0, 2.0)

    _out, f_vjp = vjp(lambda p: {"a": p["w"] * 2.0, "t": (p["b"], p["b"] ** 2)}, params)
    ct = f_vjp({"a": np.ones(2), "t": (1.0, 1.0)})[0]
    np.testing.assert_array_equal(ct["w"], [2.0, 2.0])
    assert ct["b"] == 1.0 + 2 * 0.5


def test_vjp_function_can_be_called_many_times():
    _out, f_vjp = vjp(lambda x: fnp.sin(x) * 3.0, np.array([0.0, 1.0]))
    first = f_vjp(np.ones(2))[0]
    second = f_vjp(np.array([2.0, 0.0]))[0]
    np.testing.assert_allclose(first, 3 * np.cos([0.0, 1.0]))
    np.testing.assert_allclose(second, [6.0, 0.0])


def test_jvp_with_aux_and_pytrees():
    f = lambda p: (p["a"] * p["b"], "aux")
    out, t, aux = jvp(f, ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": 0.0},), has_aux=True)
    assert (out, t, aux) == (6.0, 3.0, "aux")


def test_linearize_evaluates_once_and_matches_jvp():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(x) * x

    x = np.array([0.1, 0.7, 2.0])
    tangents = (np.ones(3), np.array([0.5, -1.0, 2.0]))
    expected = [jvp(f, (x,), (t,))[1] for t in tangents]
    calls.clear()
    out, f_jvp = linearize(f, x)
    got = [f_jvp(t) for t in tangents]
    assert len(calls) == 1  # f ran once, for both tangents
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    np.testing.assert_allclose(out, np.sin(x) * x)


def test_jacobian_layouts_follow_jax():
    f = lambda x, y: {"s": fnp.sum(x) * y, "v": x * y}
    x, y = np.arange(3.0), 2.0
    J = jacrev(f, argnums=(0, 1))(x, y)
    assert J["s"][0].shape == (3,) and J["s"][1].shape == ()
    assert J["v"][0].shape == (3, 3) and J["v"][1].shape == (3,)
    Jf = jacfwd(f, argnums=(0, 1))(x, y)
    for k in ("s", "v"):
        for i in (0, 1):
            np.testing.assert_allclose(Jf[k][i], J[k][i])
    np.testing.assert_allclose(J["v"][0], 2.0 * np.eye(3))
    M = jacrev(lambda m: m @ m)(np.eye(2) + 1.0)
    assert M.shape == (2, 2, 2, 2)


def test_hessian_of_a_quadratic_form():
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    H = hessian(lambda x: 0.5 * x @ A @ x + fnp.sum(x))(np.array([0.3, -0.2]))
    np.testing.assert_allclose(H, A)


def test_stop_gradient():
    f = lambda x: x**2 + stop_gradient(x**3)
    assert grad(f)(2.0) == 4.0
    assert jvp(f, (2.0,), (1.0,))[1] == 4.0
    assert grad(lambda x: stop_gradient({"a": x})["a"] * x)(3.0) == 3.0


def test_transformed_functions_have_readable_names():
    def loss(x):
        return x**2

    assert grad(loss).__name__ == "grad(loss)"
    assert jacfwd(jacrev(loss)).__name__ == "jacfwd(jacrev(loss))"
    assert hessian(loss).__name__ == "hessian(loss)"


def test_one_element_outputs_are_accepted_by_grad():
    x = np.array([1.0, 2.0])
    g = grad(lambda x: fnp.sum(x * x, keepdims=True))(x)  # shape (1,)
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_float32_in_float32_out():
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert grad(lambda x: fnp.sum(fnp.sin(x) * 2.0))(x).dtype == np.float32
    assert jvp(fnp.tanh, (x,), (np.ones(2, np.float32),))[1].dtype == np.float32
    assert jacrev(fnp.tanh)(x).dtype == np.float32


def test_a_gradient_has_its_inputs_dtype_where_scipy_computes_in_another():
    # SciPy computes a special function of a float16 input in float64 (fgrad's value is
    # float64 too, as SciPy's): the rule's cotangent was float64, and so was the gradient of
    # 213 float16 rows of the gradient table (special, stats, expm). JAX gives the input's.
    special = pytest.importorskip("scipy.special")
    from fgrad.scipy import special as fspecial

    x = np.array([0.5, 0.7], np.float16)
    want = special.digamma(x.astype(np.float64)).astype(np.float16)

    def f(x):
        return fnp.sum(fspecial.gammaln(x))

    for name, g in [
        ("grad", grad(f)),
        ("jit(grad)", fgrad.jit(grad(f))),
        ("vmap(grad)", fgrad.vmap(grad(fspecial.gammaln))),
        ("jacrev", lambda x: fnp.diagonal(jacrev(fspecial.gammaln)(x))),
        ("vjp", lambda x: fgrad.vjp(fspecial.gammaln, x)[1](np.ones(2))[0]),
    ]:
        for _ in range(2):  # (jit: the record, then its replay)
            got = g(x)
            assert got.dtype == np.float16, name
            np.testing.assert_array_equal(got, want, err_msg=name)
    scalar = grad(fspecial.gammaln)(np.float16(0.5))
    assert type(scalar) is np.float16 and scalar == want[0]
    # a real cotangent of a complex input is complex (as it was)
    z = np.array([1.0 + 0.5j, 2.0], np.complex64)
    assert grad(lambda z: fnp.sum(fnp.real(z) ** 2))(z).dtype == np.complex64


# --- errors that say what to do -------------------------------------------------------------------


def test_integer_inputs_to_grad():
    with pytest.raises(
        TypeError, match=r"argument 0 is int64 with shape \(\): pass 1.0 instead of 1"
    ):
        grad(lambda x: x * 2.0)(1)
    with pytest.raises(
        TypeError, match=r"argument 0 is int64 with shape \(\): pass 2.0 instead of 2 to differ"
    ):
        grad(lambda x: x * 2.0)(2)  # the number the user passed, not always 1
    with pytest.raises(
        TypeError, match=r"int32 with shape \(\): pass -3.0 instead of np.int32\(-3\)"
    ):
        grad(lambda x: x * 2.0)(np.int32(-3))
    with pytest.raises(TypeError, match=r"argument 1 is int64 with shape \(3,\).*astype\(float\)"):
        grad(lambda x, y: x, argnums=1)(1.0, np.arange(3))
    with pytest.raises(
        TypeError, match=r"argument 0 is bool with shape \(\): pass 1.0 instead of True"
    ):
        grad(lambda x: x * 2.0)(True)
    with pytest.raises(TypeError, match=r"argument 0 at \[1\] is int64"):
        grad(lambda p: p[0])((1.0, 2))


def test_non_scalar_output_to_grad_points_to_jacrev_and_vjp():
    with pytest.raises(TypeError, match=r"shape \(3,\) and dtype float64.*jacrev.*vjp"):
        grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(TypeError, match="real float output"):
        grad(lambda x: fnp.sum(x) > 0)(np.ones(3))


@pytest.mark.parametrize(
    "argnums, error, match",
    [
        (2, ValueError, "argnums 2 is out of range.*2 positional arguments"),
        ((0, 5), ValueError, "argnums 5 is out of range"),
        (1.0, TypeError, "argnums must be an int or a tuple of ints"),
        (True, TypeError, "argnums must be an int"),
        ((0, 0), ValueError, "names an argument twice"),
    ],
)
def test_bad_argnums(argnums, error, match):
    with pytest.raises(error, match=match):
        grad(lambda x, y: x * y, argnums=argnums)(1.0, 2.0)


def test_a_function_called_with_no_positional_arguments():
    with pytest.raises(ValueError, match="no positional arguments.*grad\\(f\\)\\(x\\)"):
        grad(lambda: 1.0)()


def test_non_callable():
    with pytest.raises(TypeError, match=r"grad expects a function.*grad\(f\), not grad\(f\(x\)\)"):
        grad(3.0)
    with pytest.raises(TypeError, match="jvp expects a function"):
        jvp(None, (1.0,), (1.0,))


def test_cotangent_of_the_wrong_shape_or_dtype_or_structure():
    _, f_vjp = vjp(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match=r"^the cotangent has shape \(2,\).*shape \(3,\)"):
        f_vjp(np.ones(2))
    with pytest.raises(ValueError, match=r"dtype float32.*dtype float64.*astype\('float64'\)"):
        f_vjp(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="structure"):
        f_vjp((np.ones(3), np.ones(3)))


def test_tangent_of_the_wrong_shape_or_dtype():
    with pytest.raises(ValueError, match=r"tangents\[0\] has shape \(2,\)"):
        jvp(fnp.sin, (np.ones(3),), (np.ones(2),))
    with pytest.raises(ValueError, match=r"tangents\[0\] has dtype float32"):
        jvp(fnp.sin, (np.ones(3),), (np.ones(3, np.float32),))
    with pytest.raises(TypeError, match=r"primals must be a tuple.*jvp\(f, \(x,\), \(t,\)\)"):
        jvp(fnp.sin, 1.0, 1.0)
    with pytest.raises(ValueError, match="structure"):
        jvp(lambda x, y: x, (1.0, 2.0), (1.0,))


def test_float_and_int_of_a_traced_value_raise_instead_of_dropping_the_gradient():
    with pytest.raises(TypeError, match=r"float\(\) of a traced value.*stop_gradient"):
        grad(lambda x: float(x) * x)(1.0)
    with pytest.raises(TypeError, match=r"int\(\) of a traced value"):
        grad(lambda x: int(x) * x)(1.0)
    with pytest.raises(TypeError, match="np.asarray"):
        grad(lambda x: np.asarray(x).sum())(np.ones(2))


def test_writing_a_traced_value_into_a_numpy_array_raises():
    def f(x):
        out = np.zeros(2)
        out[0] = x
        return fnp.sum(out)

    # NumPy reports it as a ValueError caused by fgrad's TypeError; both are shown.
    with pytest.raises((TypeError, ValueError)) as info:
        grad(f)(1.0)
    messages = str(info.value) + str(info.value.__cause__)
    assert "traced value" in messages and "x.at[idx].set(v)" in messages


def test_item_assignment_on_a_traced_array_names_at_set():
    def f(x):
        x[0] = 1.0
        return fnp.sum(x)

    with pytest.raises(TypeError, match=r"x = x\.at\[idx\]\.set\(value\)"):
        grad(f)(np.ones(3))
    g = grad(lambda x: fnp.sum(x.at[0].set(5.0) * x))(np.ones(3))
    np.testing.assert_array_equal(g, [5.0, 2.0, 2.0])  # 5 x0 + x1^2 + x2^2


def test_has_aux_with_a_function_that_does_not_return_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True expects the function to return a pair"):
        grad(lambda x: x * 2.0, has_aux=True)(1.0)


def test_numpy_ufunc_on_a_traced_value_is_differentiated_or_refused_clearly():
    # np.sin on a traced value is sent to fgrad.numpy.sin ...
    assert grad(lambda x: np.sin(x))(0.0) == 1.0
    # ... and so are its methods (np.add.reduce is fgrad.numpy.sum), but at, which writes in
    # place, is refused saying what to write instead.
    np.testing.assert_array_equal(grad(lambda x: np.add.reduce(x))(np.ones(2)), np.ones(2))
    with pytest.raises(TypeError, match=r"fnp.at\(a\)\[idx\].add\(b\)"):
        grad(lambda x: np.add.at(x, [0], 1.0))(np.ones(2))


def test_a_numpy_name_left_out_says_why_and_what_to_call():
    with pytest.raises(AttributeError, match="leaves numpy.busday_count out on purpose"):
        _ = fnp.busday_count
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = fnp.no_such_name


def test_the_gradient_of_a_number_is_numpys_scalar_on_every_path():
    """The cotangent of a NumPy scalar or Python float input is NumPy's scalar (as its zero
    is), whichever path the rules take: a `where` or a sum over axes made a 0-d array, so the
    type depended on the values (interp's `left` outside or inside the knots) and differed
    between eager and `jit`."""
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])
    g = fgrad.grad(lambda x, lo, hi: fnp.sum(fnp.interp(x, xp, fp, lo, hi)), argnums=(0, 1, 2))
    jitted = fgrad.jit(g)
    for x in (np.array([0.5, 3.0]), np.array([-1.0, 0.5])):
        for got in (g(x, np.float64(0.0), 5.0), jitted(x, np.float64(0.0), 5.0)):
            assert [type(v) for v in got] == [np.ndarray, np.float64, np.float64]
    h = fgrad.grad(fgrad.grad(lambda c: fnp.sum(fnp.where(np.array([True, False]), c**2, 1.0))))
    assert type(h(np.float64(3.0))) is np.float64
    rows = fgrad.vmap(fgrad.grad(lambda c: fnp.sum(fnp.where(np.array([True, False]), c, 1.0))))
    assert type(rows(np.array([1.0, 2.0]))) is np.ndarray  # a batch of them stays an array


# --- found by probing the API ---------------------------------------------------------------------


def test_api_edges_found_by_a_probe():
    """A bool output's cotangent was refused whatever was passed; jacfwd/jacrev/hessian
    refused keyword arguments grad passes through; a custom rule saw a default only when some
    keyword was passed; vjp named the wrong argument (or crashed) for an int leaf of a pytree;
    hessian's and jacfwd's errors named jacrev/jacfwd/jvp; derivative advised has_aux, which
    it lacks; a pullback of an identity returned the caller's own cotangent array."""
    _, pull = fgrad.vjp(lambda x: (x * 2, x > 1), np.array([1.0, 2.0]))
    for ct in (np.zeros(2, bool), np.zeros(2), np.zeros(2, int)):
        np.testing.assert_array_equal(pull((np.ones(2), ct))[0], [2.0, 2.0])
    f = lambda x, scale=1.0: fnp.sum(x**2) * scale
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(fgrad.jacfwd(f)(x, scale=2.0), [4.0, 8.0])
    np.testing.assert_array_equal(fgrad.jacrev(f)(x, scale=2.0), [4.0, 8.0])
    np.testing.assert_array_equal(fgrad.hessian(f)(x, scale=2.0), 4 * np.eye(2))
    k = fgrad.custom_vjp(lambda x, y=2.0: x * y)
    k.defvjp(lambda x, y=2.0: (x * y, y), lambda y, ct: (ct * y, None))
    assert fgrad.grad(k)(1.0) == 2.0 and fgrad.grad(k)(1.0, y=3.0) == 3.0
    with pytest.raises(TypeError, match=r"argument 0 at \[1\] is int64.*close"):
        fgrad.vjp(lambda xs, y: xs[0] * xs[1] * y, [2.0, 3], 4.0)
    with pytest.raises(TypeError, match="^hessian with has_aux=True"):
        fgrad.hessian(lambda x: fnp.sum(x), has_aux=True)(x)
    with pytest.raises(TypeError, match="^jacfwd with has_aux=True"):
        fgrad.jacfwd(lambda x: x, has_aux=True)(x)
    with pytest.raises(TypeError, match="^hessian requires real float inputs"):
        fgrad.hessian(lambda x: fnp.sum(x))(np.array([1, 2]))
    with pytest.raises(TypeError) as refused:
        fgrad.derivative(lambda x: (x, "label"), 2)(1.0)
    assert "has_aux" not in str(refused.value)
    ct = np.ones(2)
    g = fgrad.vjp(lambda x: x, x)[1](ct)[0]
    g *= 0.1
    assert np.array_equal(ct, np.ones(2))
    t = np.ones(2)
    assert fgrad.jvp(lambda x: x, (x,), (t,))[1] is not t


def test_a_deep_copy_of_a_traced_value_stays_traced_and_pickle_is_refused():
    # copy.deepcopy copied the box with a level no transform knew: grad through it was
    # silently 0, vmap gave row 0 for every row, and jvp returned a box
    x = np.array([0.3, 1.2, 2.5, 0.7])
    assert np.array_equal(fgrad.grad(lambda z: fnp.sum(copy.deepcopy(z) ** 2))(x), 2 * x)
    params = fgrad.grad(lambda p: fnp.sum(copy.deepcopy(p)["w"] ** 2))({"w": x})
    assert np.array_equal(params["w"], 2 * x)
    rows = np.stack([x, 10 * x])
    assert np.array_equal(fgrad.vmap(lambda z: copy.copy(z) * 2)(rows), 2 * rows)
    p, t = fgrad.jvp(lambda z: copy.deepcopy(z) * 2, (x,), (np.ones(4),))
    assert type(p) is np.ndarray and np.array_equal(t, np.full(4, 2.0))
    assert np.array_equal(fgrad.jit(lambda z: copy.deepcopy(z) * 2)(x), 2 * x)
    with pytest.raises(TypeError, match=r"cannot pickle a traced value \(shape \(4,\), dtype"):
        fgrad.grad(lambda z: fnp.sum(pickle.loads(pickle.dumps(z))))(x)


def test_shape_and_dtype_errors_name_the_leaf_by_its_key_path():
    """They said "cotangent leaf 1" and "tangent leaf 1", numbering leaves in sorted-key order:
    leaf 1 was key 'z' of {'z': ..., 'o': ...}."""
    fo = lambda p: {"z": p["w"] * p["b"], "o": p["b"]}
    p = {"w": np.ones(2), "b": np.array(3.0)}
    with pytest.raises(ValueError, match=r"^the cotangent at \['z'\] has shape \(3,\)"):
        vjp(fo, p)[1]({"z": np.ones(3), "o": np.array(1.0)})
    t = {"w": np.ones(2, np.float32), "b": np.array(1.0)}
    with pytest.raises(ValueError, match=r"^jvp: tangents\[0\]\['w'\] has dtype float32"):
        jvp(fo, (p,), (t,))
    f_jvp = fgrad.linearize(fo, p)[1]
    with pytest.raises(ValueError, match=r"^linearize: tangents\[0\]\['w'\] has dtype float32"):
        f_jvp(t)


def test_an_unregistered_dataclass_of_arrays_is_told_to_register():
    """grad, jacrev, jvp and vmap said only "pass a float or a float NumPy array"; jit's
    message already pointed to registering the type."""
    import dataclasses

    @dataclasses.dataclass
    class Params:
        w: np.ndarray
        b: np.ndarray

    loss = lambda p: fnp.sum(p.w**2) + p.b
    p = Params(np.array([1.0, 2.0]), np.array(1.0))
    hint = r"register it as a pytree node: fgrad.tree_util.register_dataclass\(Params\)"
    for call in (
        lambda: grad(loss)(p),
        lambda: fgrad.jacrev(loss)(p),
        lambda: jvp(loss, (p,), (p,)),
        lambda: fgrad.vmap(loss)(Params(np.ones((3, 2)), np.ones(3))),
    ):
        with pytest.raises(TypeError, match=hint):
            call()
    # and once registered, the gradient is a Params: d/dw sum(w**2) + b = 2w, d/db = 1
    fgrad.tree_util.register_dataclass(Params)
    g = grad(loss)(p)
    assert type(g) is Params
    np.testing.assert_array_equal(g.w, 2 * p.w)
    assert g.b == 1.0
    # a built-in type gets no such advice
    with pytest.raises(TypeError, match=r"is of type str: pass a float or a float NumPy array\n"):
        grad(lambda s: 1.0)("text")


# --- what reaches the user is an array of its own -------------------------------------------------

# Functions whose NumPy result is a new array (a copy) while fgrad's traced value is the input
# itself or a view of it: a copy of a traced value costs nothing inside a transform
_COPIES = {
    "x.copy()": lambda x: x.copy(),
    "fnp.copy": lambda x: fnp.copy(x),
    "fnp.array": lambda x: fnp.array(x),
    "astype": lambda x: x.astype(np.float64),
    "+x": lambda x: +x,
    "nan_to_num": lambda x: fnp.nan_to_num(x),
    "flatten": lambda x: x.flatten(),
    "tile(x, 1)": lambda x: fnp.tile(x, 1),
    "repeat(x, 1)": lambda x: fnp.repeat(x, 1, axis=0),
    "roll(x, 0)": lambda x: fnp.roll(x, 0),
    "x.T": lambda x: x.T,  # a view in NumPy too: a transform's output is still the user's own
}


def _shares(tree, *arrays):
    leaves = fgrad.tree_util.tree_leaves(tree)
    return any(np.shares_memory(v, a) for v in leaves for a in arrays if isinstance(v, np.ndarray))


class _Sub(np.ndarray):
    """A user's ndarray subclass (as np.memmap is NumPy's)."""


def _of_layout(layout, x, tmp_path):
    """`x` as it is, as an np.memmap on a file, or as an ndarray subclass."""
    if layout == "memmap":
        m = np.memmap(tmp_path / "x.dat", dtype=x.dtype, mode="w+", shape=x.shape)
        m[...] = x
        return m
    return x.view(_Sub) if layout == "subclass" else x


@pytest.mark.parametrize("layout", ["ndarray", "memmap", "subclass"])
@pytest.mark.parametrize("name", sorted(_COPIES))
def test_outputs_of_every_transform_share_no_memory_with_the_callers_arrays(name, layout, tmp_path):
    """Primal outputs, aux, tangents and cotangents were the caller's array or views of it
    (x.copy() of a traced x returned x itself): an aux snapshot changed when the caller
    updated the parameters, and writing into vjp(copy)(x)[0] wrote into x. An np.memmap (or
    another ndarray subclass) argument was still shared (the write went to its file), and
    jet's outputs were the caller's primal and series, for every layout."""
    f = _COPIES[name]
    x = _of_layout(layout, np.arange(6.0).reshape(2, 3), tmp_path)
    t, ct = np.ones((2, 3)), np.ones_like(f(np.asarray(x)))
    assert not _shares(fgrad.vmap(f)(x), x)
    assert not _shares(fgrad.jet(f, (x,), ((t, t),)), x, t)
    with_aux = lambda x: (fnp.sum(x), f(x))
    out, pull = fgrad.vjp(f, x)
    assert not _shares((out, pull(ct)), x, ct)
    assert not _shares(fgrad.jvp(f, (x,), (t,)), x, t)
    out, f_jvp = fgrad.linearize(f, x)
    assert not _shares((out, f_jvp(t)), x, t)
    assert not _shares(fgrad.value_and_grad(with_aux, has_aux=True)(x), x)
    assert not _shares(fgrad.grad(with_aux, has_aux=True)(x), x)
    assert not _shares(fgrad.jacfwd(with_aux, has_aux=True)(x), x)
    assert not _shares(fgrad.jacrev(with_aux, has_aux=True)(x), x)
    assert not _shares(fgrad.vjp(with_aux, x, has_aux=True)[::2], x)


@pytest.mark.parametrize("layout", ["ndarray", "memmap", "subclass"])
def test_an_aux_snapshot_survives_the_optimizers_in_place_step(layout, tmp_path):
    w = _of_layout(layout, np.array([1.0, 2.0, 3.0]), tmp_path)
    (_, snapshot), g = fgrad.value_and_grad(lambda w: (fnp.sum(w**2), w.copy()), has_aux=True)(w)
    w -= 0.1 * g
    np.testing.assert_array_equal(snapshot, [1.0, 2.0, 3.0])


def test_outputs_of_jvp_and_jet_never_share_memory_with_each_other():
    """A forward rule passes a tangent through: the tangents of (w + 1, w - 1) were one array,
    and jet's first terms of (x + 1, x - 1) were the caller's term itself, so writing into
    one output's changed the other's (and the caller's)."""
    x, t = np.array([0.5, 1.0, 2.0]), np.ones(3)
    via_sin = lambda z: (lambda w: (w + 1.0, w - 1.0))(fnp.sin(z))
    _, (ta, tb) = fgrad.jvp(via_sin, (x,), (t,))
    ta *= 2.0
    np.testing.assert_array_equal(tb, np.cos(x))
    # the derivatives of the second output along x + t: cos, -sin; and 1, 0
    linear = lambda z: (z + 1.0, z - 1.0)
    for f, want in ((via_sin, (np.cos(x), -np.sin(x))), (linear, (t, np.zeros(3)))):
        _, ((a1, a2), (b1, b2)) = fgrad.jet(f, (x,), ((t, np.zeros(3)),))
        a1[:] = 42.0
        a2[:] = 42.0
        np.testing.assert_allclose(b1, want[0], rtol=1e-15)
        np.testing.assert_allclose(b2, want[1], rtol=1e-15, atol=1e-15)
        np.testing.assert_array_equal(t, np.ones(3))


@pytest.mark.parametrize(
    "f",
    [
        fnp.mean,
        fnp.sum,
        lambda w: fnp.sum(w + np.ones(3)),
        lambda w: fnp.sum(fnp.broadcast_to(w, (2, 3))),
    ],
)
def test_gradients_can_be_updated_in_place_as_jits_can(f):
    """grad(mean) was a read-only 0-stride broadcast: `g *= 0.5` raised 'output array is
    read-only' (jit's was writeable)."""
    w = np.array([1.0, 2.0, 3.0])
    for g in (
        fgrad.grad(f)(w),
        fgrad.value_and_grad(f)(w)[1],
        fgrad.vjp(f, w)[1](1.0)[0],
        fgrad.grad(fgrad.checkpoint(f))(w),
        fgrad.jacrev(f)(w),
    ):
        expected = fgrad.jit(fgrad.grad(f))(w) * 0.5
        g *= 0.5
        np.testing.assert_array_equal(g, expected)


@pytest.mark.parametrize("name", ["cov", "corrcoef", "cov_weighted", "interp"])
def test_numpys_own_cov_corrcoef_and_interp_keep_numpys_dtype_and_bits_under_tracing(name):
    # fgrad.numpy's cov, corrcoef and interp keep float32 (documented); called as NumPy's own
    # functions on a traced value they gave float32 under jit, vmap and jvp, where NumPy's call
    # on the plain value gives float64: tracing changed the value's dtype and bits
    m = np.array([[1.0, 0.2, 0.1], [0.3, 2.0, -0.4]], dtype=np.float32)
    xp, fp = np.array([0.0, 1.0, 3.0], np.float32), np.array([1.0, 2.0, 0.0], np.float32)
    f = {
        "cov": np.cov,
        "corrcoef": np.corrcoef,
        "cov_weighted": lambda a: np.cov(a, aweights=np.array([1.0, 2.0, 3.0], np.float32)),
        "interp": lambda a: np.interp(a, xp, fp),
    }[name]
    want = f(m)
    jitted = fgrad.jit(f)
    for got in (jitted(m), jitted(m), fgrad.vmap(f)(m[None])[0], fgrad.jvp(f, (m,), (m,))[0]):
        assert got.dtype == want.dtype == np.float64
        assert np.array_equal(got, want)
    assert fgrad.grad(lambda a: fnp.sum(f(a)))(m).dtype == np.float32  # the input's
    assert fnp.cov(m).dtype == np.float32  # fgrad.numpy's own keeps float32, as documented


_DOUBLE_IN_NUMPY = {  # NumPy computes and returns double precision for single-precision data
    "vander": (np.vander, np.array([0.3, 1.2, 2.5, 0.7], np.float32)),
    "polyder": (lambda p: np.polyder(p, 2), np.array([0.3, 1.2, 2.5, 0.7], np.float32)),
    "polyint": (lambda p: np.polyint(p, 2), np.array([0.3, 1.2, 2.5], np.float32)),
    "bincount": (lambda w: np.bincount([0, 2, 2, 1], w), np.array([0.3, 1.2, 2.5, 0.7], "f4")),
    "geomspace": (lambda a: np.geomspace(a, np.float32(10), 4), np.float32(1.5)),
    "geomspace_complex": (lambda a: np.geomspace(a, 10, 3), np.complex64(1.5 + 0.5j)),
}


@pytest.mark.parametrize("name", sorted(_DOUBLE_IN_NUMPY))
def test_numpys_own_functions_of_single_precision_keep_numpys_double_under_tracing(name):
    # NumPy's vander, polyder, polyint, bincount(weights=) and geomspace of float32 (complex64)
    # data return float64 (complex128); called on a traced value they reached fgrad.numpy's
    # own, which keeps float32 (documented), so jit, vmap and jvp gave float32
    f, a = _DOUBLE_IN_NUMPY[name]
    want = f(a)
    assert want.dtype == np.result_type(a, np.float64)
    jitted = fgrad.jit(f)
    batched = fgrad.vmap(f)(np.stack([a, a]))
    for got in (jitted(a), jitted(a), batched[0], batched[1], fgrad.jvp(f, (a,), (a,))[0]):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    if np.iscomplexobj(a):
        return
    # the derivative, against central differences of NumPy's function in double precision
    grad = fgrad.grad(lambda a: fnp.sum(f(a) * np.arange(1.0, want.size + 1).reshape(want.shape)))
    g = grad(a)
    assert g.dtype == a.dtype  # the input's
    a64, h = np.asarray(a, np.float64), 1e-6
    weights = np.arange(1.0, want.size + 1).reshape(want.shape)
    for i in np.ndindex(a64.shape):
        step = np.zeros_like(a64)
        step[i] = h
        fd = (np.sum(f(a64 + step) * weights) - np.sum(f(a64 - step) * weights)) / (2 * h)
        np.testing.assert_allclose(g[i], fd, rtol=1e-5)


def test_aux_never_shares_memory_with_an_argument_that_is_not_differentiated():
    # aux was made fresh against the differentiated arguments only: a snapshot of y (argnums
    # 0) was a view of the caller's y, and writing into it zeroed y
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    f = lambda x, y: (fnp.sum(x * y), {"y": y.reshape(2), "x": x.reshape(2)})
    for transform in (fgrad.grad, fgrad.value_and_grad, fgrad.jacrev, fgrad.jacfwd):
        out = transform(f, has_aux=True)(x, y)
        aux = out[0][1] if transform is fgrad.value_and_grad else out[1]
        assert not np.shares_memory(aux["y"], y) and not np.shares_memory(aux["x"], x)
        aux["y"] *= 0
        assert np.array_equal(y, [3.0, 4.0])


def _yields(x):
    yield 2.0 * x


class _YieldingCall:
    def __call__(self, x):
        yield 2.0 * x


_X = np.array([1.0, 2.0])
_GIVEN_TO = {
    "grad": lambda f: fgrad.grad(f),
    "value_and_grad": lambda f: fgrad.value_and_grad(f),
    "vjp": lambda f: fgrad.vjp(f, _X),
    "jvp": lambda f: fgrad.jvp(f, (_X,), (_X,)),
    "linearize": lambda f: fgrad.linearize(f, _X),
    "jacfwd": lambda f: fgrad.jacfwd(f),
    "jacrev": lambda f: fgrad.jacrev(f),
    "hessian": lambda f: fgrad.hessian(f),
    "vmap": lambda f: fgrad.vmap(f),
    "jit": lambda f: fgrad.jit(f),
    "jet": lambda f: fgrad.jet(f, (_X,), ((_X,),)),
}


@pytest.mark.parametrize("transform", sorted(_GIVEN_TO))
def test_a_generator_function_is_refused_where_it_is_given(transform):
    # grad advised has_aux and vmap out_axes=None for the generator it returned, and jit
    # returned the generator, whose body ran outside the recording when iterated
    for fun in (_yields, functools.partial(_yields)):
        with pytest.raises(TypeError, match=rf"^{transform}: _yields is a generator function"):
            _GIVEN_TO[transform](fun)


@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp", "jacfwd", "vmap"])
def test_a_generator_returned_is_refused_in_words_that_say_so(transform):
    # (a callable object whose __call__ yields: found when it returns, not before)
    with pytest.raises(TypeError, match=rf"^{transform}: .*returned a generator.*_YieldingCall"):
        given = _GIVEN_TO[transform](_YieldingCall())  # (vjp and jvp call it here)
        given(1.0 if transform == "grad" else _X)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacrev"])
def test_allow_int_is_jax_s_keyword_refused_by_name_when_true(transform):
    # (Python's "unexpected keyword argument 'allow_int'" before)
    f = lambda x, n: fnp.sum(x**2) * n
    x = np.array([1.0, 2.0])
    got = getattr(fgrad, transform)(f, allow_int=False)(x, 3)
    got = got[1] if transform == "value_and_grad" else got
    np.testing.assert_allclose(got, 6.0 * x, rtol=1e-15)  # d/dx 3 sum(x^2)
    with pytest.raises(TypeError, match=rf"^{transform}: allow_int=True .*float0.*argnums"):
        getattr(fgrad, transform)(f, allow_int=True)
