"""fgrad.vmap: JAX's semantics for in_axes, out_axes and axis_size, its errors, composition with
every other transform in both orders, and Python control flow on batched values (the batch is
split where rows read different values). The whole gradient table under vmap is in
tests/test_vmap_table.py."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import batching, grad, jacfwd, jacrev, jvp, vjp, vmap

X = np.linspace(-1.0, 1.3, 12).reshape(4, 3)


def f(r):
    return fnp.sum(fnp.tanh(r) ** 2) + fnp.prod(fnp.cos(r))


def loop(fun, *args, in_axes=0):
    """fun applied to each row, stacked: what vmap must equal."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    rows = [
        fun(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
        for i in range(n)
    ]
    if isinstance(rows[0], tuple):
        return tuple(np.stack([r[k] for r in rows]) for k in range(len(rows[0])))
    return np.stack(rows)


class Splits:
    """Counts the batch splits (rows that read different values) during a block."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = batching.Diverged.__init__

        def counting(signal, level, groups):
            self.count += 1
            real(signal, level, groups)

        monkeypatch.setattr(batching.Diverged, "__init__", counting)


# --- in_axes, out_axes, axis_size ---------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_in_axes_int_and_negative(axis):
    np.testing.assert_allclose(vmap(f, in_axes=axis)(X), loop(f, X, in_axes=axis))


def test_in_axes_tuple_list_and_none():
    w = np.array([0.5, -1.0, 2.0])

    def g(r, v):
        return fnp.dot(r, v) * fnp.sum(r)

    want = loop(g, X, w, in_axes=(0, None))
    np.testing.assert_allclose(vmap(g, in_axes=(0, None))(X, w), want)
    np.testing.assert_allclose(vmap(g, in_axes=[0, None])(X, w), want)  # a list is a tuple
    np.testing.assert_allclose(vmap(g, in_axes=(1, 0))(X.T, np.stack([w] * 4)), want)


def test_in_axes_pytree_prefix_and_keyword_arguments():
    params = {"w": np.array([1.0, 2.0, 3.0]), "b": np.array(0.5)}

    def g(p, r, scale=1.0):
        return (fnp.dot(r, p["w"]) + p["b"]) * scale

    want = loop(lambda r: g(params, r), X)
    np.testing.assert_allclose(vmap(g, in_axes=({"w": None, "b": None}, 0))(params, X), want)
    np.testing.assert_allclose(vmap(g, in_axes=(None, 0))(params, X), want)
    scales = np.array([1.0, 2.0, 3.0, 4.0])  # keyword arguments are mapped along axis 0
    got = vmap(g, in_axes=(None, 0))(params, X, scale=scales)
    np.testing.assert_allclose(got, want * scales)


def test_out_axes_int_negative_none_and_tree():
    def g(r):
        return fnp.outer(r, r), fnp.ones(2)

    m, c = vmap(g, out_axes=(2, None))(X)
    assert m.shape == (3, 3, 4) and c.shape == (2,)
    np.testing.assert_allclose(np.moveaxis(m, 2, 0), loop(lambda r: np.outer(r, r), X))
    m, c = vmap(g, out_axes=-1)(X)
    assert m.shape == (3, 3, 4) and c.shape == (2, 4)  # an unbatched output is broadcast
    np.testing.assert_array_equal(c, np.ones((2, 4)))


def test_an_output_the_rows_share_is_an_array_of_its_own_for_each_call():
    # a constant output (NumPy's array or scalar) is stacked with NumPy, as the loop would
    const = np.array([1.0, 2.0], dtype=np.float32)
    for c in (const, np.float32(3.0), np.int64(2)):
        _, c_rows = vmap(lambda r, c=c: (r, c))(X)
        assert c_rows.dtype == np.asarray(c).dtype and c_rows.shape == (4,) + np.shape(c)
        np.testing.assert_array_equal(c_rows, loop(lambda r, c=c: np.asarray(c), X))
        assert c_rows.flags.writeable and not np.shares_memory(c_rows, const)
    c_rows = vmap(lambda r: const, out_axes=1)(X)
    assert c_rows.shape == (2, 4)
    c_rows[0, 0] = 9.0  # the user's array is left alone
    assert const[0] == 1.0


def test_axis_size_when_nothing_is_mapped():
    out = vmap(lambda a: a * 2.0, in_axes=None, axis_size=3)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(out, np.array([[2.0, 4.0]] * 3))


def test_a_batch_of_no_rows():
    out = vmap(lambda r: fnp.sum(r**2) * fnp.ones(2))(np.zeros((0, 3)))
    assert out.shape == (0, 2) and out.dtype == np.float64
    out = vmap(lambda r: r if r.sum() > 0 else -r)(np.zeros((0, 3)))  # a branch, no rows
    assert out.shape == (0, 3)


def _endless_on_made_up_rows(body):
    """`body`'s loop, failing the test (not the function) if it runs on far past vmap's stop."""
    count = [0]

    def fun(r):
        while body(r):
            count[0] += 1
            if count[0] > 50_000:
                pytest.fail("vmap ran the function on a made-up row without end")
            r = r * 2.0
        return r

    return fun


def test_no_rows_of_a_function_that_loops_or_checks_its_values():
    """vmap over 0 rows ran the function on a made-up row of zeros: a loop on its values never
    ended there (`while sum(r) < 10`), and a check of the values raised the user's own error
    about data never passed. The loop over no rows gives an empty result in both cases; where
    every made-up row fails the check, vmap's error says the row was made up."""
    grow = _endless_on_made_up_rows(lambda r: fnp.sum(r) < 10)  # ends for rows of ones
    assert vmap(grow)(np.ones((0, 3))).shape == (0, 3)
    with pytest.raises(ValueError, match="vmap over 0 rows: .* kept reading its values"):
        vmap(_endless_on_made_up_rows(lambda r: fnp.sum(r) > -1))(np.ones((0, 3)))

    def loglik(rates):
        if fnp.any(rates <= 0):
            raise ValueError("rates must be positive")
        return fnp.sum(fnp.log(rates))

    assert loglik(np.ones((2, 2))) == 0.0  # (an empty loop over rows never calls it)
    assert vmap(loglik)(np.ones((0, 2, 2))).shape == (0,)  # (the varied made-up row passes)

    def peak(rates):
        if fnp.max(rates) < 100:  # false on every made-up row
            raise ValueError("a rate must reach 100")
        return fnp.sum(rates)

    with pytest.raises(ValueError, match="made-up row .* raised ValueError: a rate must reach"):
        vmap(peak)(np.ones((0, 2, 2)))


def test_nested_vmap_any_axes():
    t = np.random.default_rng(0).normal(size=(2, 3, 4))
    got = vmap(vmap(lambda r: fnp.sum(fnp.sin(r) * r), in_axes=1), in_axes=2)(t)
    want = np.array([[np.sum(np.sin(t[:, j, k]) * t[:, j, k]) for j in range(3)] for k in range(4)])
    np.testing.assert_allclose(got, want)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    axis=st.integers(-3, 2),
    seed=st.integers(0, 1000),
)
def test_property_vmap_equals_a_loop_for_any_shape_and_axis(shape, axis, seed):
    if not -len(shape) <= axis < len(shape):
        return
    x = np.random.default_rng(seed).normal(size=shape)

    def g(r):
        return fnp.exp(fnp.sin(r)) * fnp.sum(r**2) - fnp.mean(r)

    np.testing.assert_allclose(vmap(g, in_axes=axis)(x), loop(g, x, in_axes=axis), rtol=1e-12)


# --- errors ---------------------------------------------------------------------------------------


def test_error_mapped_axes_of_different_sizes_names_them():
    with pytest.raises(
        ValueError,
        match=r"argument 0 \(shape \(3,\), dtype float64, axis 0\) has 3, "
        r"argument 1 \(shape \(4,\), dtype float64, axis 0\) has 4",
    ):
        vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))


def test_error_mapped_axes_in_a_pytree_are_named_by_key_path_shape_dtype_and_axis():
    """The message numbered leaves in sorted-key order ("argument 0 (leaf 1) has 3") and gave
    no shape, dtype or axis."""
    a, b = np.ones((2, 3)), np.ones((3, 3), np.float32)
    with pytest.raises(
        ValueError,
        match=r"argument 0 at \['a'\] \(shape \(2, 3\), dtype float64, axis 0\) has 2, "
        r"argument 0 at \['b'\] \(shape \(3, 3\), dtype float32, axis 1\) has 3",
    ):
        vmap(lambda p: p["a"] + p["b"], in_axes=({"a": 0, "b": 1},))({"b": b, "a": a})


def test_error_axis_out_of_range_names_the_argument():
    with pytest.raises(ValueError, match=r"argument 0 along axis 2.*shape \(3,\)"):
        vmap(lambda a: a, in_axes=2)(np.ones(3))
    with pytest.raises(ValueError, match=r"argument 0 along axis 0.*no axes"):
        vmap(lambda a: a)(1.0)


def test_error_in_axes_tree_does_not_match():
    with pytest.raises(ValueError, match="tuple of length 2"):
        vmap(lambda a: a, in_axes=(0, 1))(np.ones(3))
    with pytest.raises(ValueError, match="in_axes does not match"):
        vmap(lambda a: a, in_axes=({"x": 0},))(np.ones(3))
    with pytest.raises(TypeError, match="in_axes must be an int, None"):
        vmap(lambda a: a, in_axes="0")


def test_jax_s_axis_names_are_refused_by_name_with_what_to_do():
    # (Python's "unexpected keyword argument" before); None, their default, means what it does
    # in JAX without collectives
    x = np.arange(6.0).reshape(2, 3)
    got = vmap(lambda a: a * 2.0, axis_name=None, spmd_axis_name=None)(x)
    np.testing.assert_array_equal(got, x * 2.0)
    with pytest.raises(TypeError, match=r"vmap: axis_name='i' .*collectives.*outside vmap"):
        vmap(lambda a: a, axis_name="i")
    with pytest.raises(TypeError, match=r"vmap: spmd_axis_name='i' .*drop it"):
        vmap(lambda a: a, spmd_axis_name="i")


@pytest.mark.parametrize("axes", ["0", 1.5, True, ("0",), (1.5,)])
def test_an_in_axes_that_is_no_axis_gets_advice_that_works(axes):
    # a str or float was told to be wrapped in a tuple, in_axes=('0',), which was refused next;
    # the advice is now an int, and the advised call runs
    with pytest.raises(TypeError, match=r"it holds .* An axis is an int") as error:
        vmap(lambda a: a * 2.0, in_axes=axes)
    message = str(error.value)
    assert "write in_axes=(" not in message
    advised = message.split("write e.g. ")[1].split(" ")[0]
    assert advised == "in_axes=0"
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(vmap(lambda a: a * 2.0, in_axes=0)(x), x * 2.0)


def test_error_batched_output_with_out_axes_none():
    with pytest.raises(ValueError, match="out_axes is None for the output, but it depends"):
        vmap(lambda a: a * 2, out_axes=None)(np.ones(3))


def test_error_an_output_that_is_not_a_number():
    with pytest.raises(TypeError, match="returned a value of type str as the output"):
        vmap(lambda x: "rows")(np.ones(3))


def test_error_axis_size_missing():
    with pytest.raises(ValueError, match="pass axis_size=n"):
        vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match="axis_size is 5"):
        vmap(lambda a: a, axis_size=5)(np.ones(3))


# --- composition with the other transforms, both orders -------------------------------------------


def test_per_example_gradients():
    w = np.array([0.3, -0.2, 0.1])
    y = np.array([1.0, 0.0, -1.0, 0.5])

    def loss(w, x, y):
        return (fnp.tanh(fnp.dot(x, w)) - y) ** 2

    got = vmap(grad(loss), in_axes=(None, 0, 0))(w, X, y)
    want = np.stack([grad(loss)(w, X[i], y[i]) for i in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(
    "inner",
    [grad(f), jacfwd(f), jacrev(f), fgrad.hessian(f), lambda r: jvp(f, (r,), (fnp.sin(r),))[1]],
    ids=["grad", "jacfwd", "jacrev", "hessian", "jvp"],
)
def test_vmap_of_each_transform_equals_a_loop(inner):
    np.testing.assert_allclose(vmap(inner)(X), loop(inner, X), rtol=1e-11, atol=1e-13)


def test_each_transform_of_vmap_equals_the_loop():
    def total(x):
        return fnp.sum(vmap(f)(x))

    want = loop(grad(f), X)
    np.testing.assert_allclose(grad(total)(X), want, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(total)(X), want, rtol=1e-12)
    np.testing.assert_allclose(jacrev(vmap(f))(X).sum(axis=0), want, rtol=1e-12)
    out, pull = vjp(vmap(f), X)
    np.testing.assert_allclose(out, loop(f, X))
    np.testing.assert_allclose(pull(np.ones(4))[0], want, rtol=1e-12)
    _, t = jvp(vmap(f), (X,), (np.ones_like(X),))
    np.testing.assert_allclose(t, want.sum(axis=1), rtol=1e-12)
    h = fgrad.hessian(total)(X)
    hl = loop(fgrad.hessian(f), X)
    for i in range(4):
        np.testing.assert_allclose(h[i, :, i, :], hl[i], rtol=1e-11, atol=1e-13)


def test_custom_rules_checkpoint_and_stop_gradient_under_vmap():
    @fgrad.custom_vjp
    def g(x):
        return fnp.sin(x) * 2.0

    g.defvjp(lambda x: (g(x), fnp.cos(x)), lambda c, ct: (ct * c * 3.0,))  # a rule, not sin'
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(vmap(grad(g))(x), 3 * np.cos(x))
    np.testing.assert_allclose(grad(lambda a: fnp.sum(vmap(g)(a)))(x), 3 * np.cos(x))

    @fgrad.custom_jvp
    def e(x):
        return fnp.exp(x)

    e.defjvp(lambda p, t: (e(p[0]), 5.0 * t[0]))
    np.testing.assert_allclose(vmap(grad(e))(x), 5.0 * np.ones(4))
    np.testing.assert_allclose(jvp(vmap(e), (x,), (np.ones(4),))[1], 5.0 * np.ones(4))

    a = 0.7  # a free variable of the checkpointed function, differentiated through vmap

    def c(a):
        return fnp.sum(vmap(lambda y: fgrad.checkpoint(lambda u: fnp.tanh(a * u))(y))(x))

    np.testing.assert_allclose(grad(c)(a), np.sum(x * (1 - np.tanh(a * x) ** 2)))
    np.testing.assert_allclose(
        vmap(grad(lambda r: fnp.sum(fgrad.stop_gradient(r) * r)))(X), X, rtol=1e-15
    )


def test_make_graph_of_vmap_and_vmap_inside_make_graph():
    graph = fgrad.make_graph(grad(lambda x: fnp.sum(vmap(f)(x))))(X)
    assert graph.equations  # the batched computation is drawn
    graph = fgrad.make_graph(vmap(f))(X)
    assert graph.equations


# --- Python control flow on batched values -------------------------------------------------------


def test_a_branch_rows_agree_on_runs_once(monkeypatch):
    calls = []

    def g(r):
        calls.append(1)
        return fnp.sum(r) if fnp.sum(r**2) >= 0 else -fnp.sum(r)

    splits = Splits(monkeypatch)
    np.testing.assert_allclose(vmap(g)(X), X.sum(axis=1))
    assert splits.count == 0 and len(calls) == 1


def test_a_branch_rows_disagree_on_splits_the_batch(monkeypatch):
    calls = []

    def g(r):
        calls.append(1)
        return fnp.sum(r**2) if fnp.sum(r) > 0 else fnp.sum(fnp.sin(r))

    want = loop(g, X)
    splits = Splits(monkeypatch)
    calls.clear()
    np.testing.assert_allclose(vmap(g)(X), want)
    # the run goes on with the larger group's branch; the other group runs again
    assert splits.count == 1 and len(calls) == 2
    np.testing.assert_allclose(vmap(grad(g))(X), loop(grad(g), X))
    np.testing.assert_allclose(grad(lambda x: fnp.sum(vmap(g)(x)))(X), loop(grad(g), X))


def test_rows_on_another_groups_path_neither_warn_nor_fail(recwarn):
    def g(v):  # sqrt and the inverse are guarded by the branch, for the rows that take it
        if v > 0:
            return fnp.sqrt(v) + fnp.linalg.inv(fnp.eye(2) * v)[0, 0]
        return -v

    v = np.array([4.0, -1.0, 0.0, 9.0, 16.0])
    np.testing.assert_allclose(vmap(g)(v), loop(g, v))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert np.geterr()["invalid"] == "warn"  # NumPy's settings are back

    def h(v):  # the rows that read False raise on the other path: each group runs alone
        if v > 0:
            if float(fnp.linalg.det(fnp.eye(2) * v)) == 0.0:
                raise ZeroDivisionError("a singular matrix")
            return v
        return fnp.sqrt(-v)

    np.testing.assert_allclose(vmap(h)(np.array([1.0, 2.0, 0.0, -4.0])), [1.0, 2.0, 0.0, 2.0])


def test_nested_splits_leave_numpys_error_settings_as_they_were():
    before = np.geterr()

    def outer(w, vs):
        return vmap(lambda v: (v if v > 0 else -v) * (w if w > 0 else -w))(vs)

    got = vmap(outer, in_axes=(0, None))(np.array([1.0, -2.0]), np.array([1.0, -1.0, 2.0]))
    np.testing.assert_array_equal(got, [[1.0, 1.0, 2.0], [2.0, 2.0, 4.0]])
    assert np.geterr() == before


def test_a_split_under_debug_nans_runs_every_group_alone(monkeypatch):
    splits = Splits(monkeypatch)

    def g(v):
        return fnp.sqrt(v) if v > 0 else fnp.sqrt(-v)

    with fgrad.debug_nans():
        np.testing.assert_allclose(vmap(g)(np.array([4.0, -9.0, 16.0])), [2.0, 3.0, 4.0])
    assert splits.count == 1


def test_debug_nans_under_vmap_names_the_callers_row():
    """debug_nans gave the index of the nan within the group of rows vmap ran apart ("(0, 2)"
    for row 3, which was run alone): the message now names the caller's row, also where groups
    split again (the rows that branch one way, then the row whose sqrt fails)."""
    x = np.array([[1.0, 2.0, 3.0], [4.0, 1.0, 0.5], [2.0, 2.0, 2.0], [0.2, 2.0, -3.0]])
    with pytest.raises(FloatingPointError, match=r"index \(3, 2\)"), fgrad.debug_nans():
        fnp.sqrt(x)  # the row the nan is in: 3
    branched = x * [[1.0], [-1.0], [1.0], [1.0]]  # row 1 takes the branch without sqrt
    for fun, rows in ((fnp.sqrt, x), (lambda r: fnp.sqrt(r) if r[0] > 0 else r, branched)):
        with pytest.raises(FloatingPointError) as caught, fgrad.debug_nans():
            vmap(fun)(rows)
        assert "position 0 along the batch axis is row 3" in str(caught.value)


def test_data_dependent_while_float_and_recursion():
    def halve(v):
        while v > 1.0:  # a different number of steps for each row
            v = v / 2.0
        return v

    v = np.array([0.5, 3.0, 9.0, 1.5])
    np.testing.assert_allclose(vmap(halve)(v), loop(halve, v))
    np.testing.assert_allclose(vmap(grad(halve))(v), loop(grad(halve), v))

    def depth(v, n=0):
        return v * n if float(v) < 0.1 else depth(v / 3.0, n + 1)

    np.testing.assert_allclose(vmap(depth)(v), loop(depth, v))


def test_control_flow_under_nested_vmap():
    t = np.array([[1.0, -2.0], [-3.0, 4.0]])
    np.testing.assert_array_equal(vmap(vmap(lambda v: v if v > 0 else -v))(t), np.abs(t))
    got = vmap(vmap(lambda v: v if v > 0 else -v), in_axes=1)(t)
    np.testing.assert_array_equal(got, np.abs(t).T)


def test_a_users_except_exception_does_not_swallow_the_split():
    def g(v):
        try:
            return v * 2.0 if v > 0 else -v
        except Exception:
            return v * 0.0

    np.testing.assert_array_equal(vmap(g)(np.array([-1.0, 2.0])), np.array([1.0, 4.0]))


def test_branches_returning_different_structures_are_an_error():
    with pytest.raises(ValueError, match="outputs of different structures"):
        vmap(lambda v: (v, v) if v > 0 else v)(np.array([-1.0, 2.0]))


def test_custom_rules_and_checkpoint_batch_without_splitting(monkeypatch):
    splits = Splits(monkeypatch)
    x, ys = np.linspace(0.1, 1.0, 4), np.array([1.0, 2.0, 3.0, 4.0])

    def closing_over(u, y):  # the checkpointed function reads y, batched, from its closure
        return fgrad.checkpoint(lambda v: fnp.tanh(v * y))(u)

    want = ys * (1 - np.tanh(x * ys) ** 2)
    np.testing.assert_allclose(vmap(grad(closing_over))(x, ys), want)
    np.testing.assert_allclose(
        grad(lambda u: fnp.sum(vmap(closing_over)(u, ys)))(x), want, rtol=1e-14
    )

    def scaled_by(y):
        @fgrad.custom_vjp
        def h(u):
            return u * y

        h.defvjp(lambda u: (h(u), None), lambda _, ct: (ct * y * 2.0,))  # twice the slope
        return h

    np.testing.assert_allclose(vmap(grad(lambda u, y: scaled_by(y)(u)))(x, ys), 2.0 * ys)
    np.testing.assert_allclose(vmap(lambda u, y: scaled_by(y)(u))(x, ys), x * ys)
    assert splits.count == 0
    # grad outside the vmap needs the rule for all rows at once, which cannot pair y's rows
    with pytest.raises(TypeError, match="reads 'y', a value batched by vmap"):
        grad(lambda u: fnp.sum(vmap(lambda v, y: scaled_by(y)(v))(u, ys)))(x)


def test_prod_with_a_traced_initial_batched_equals_the_loop_at_infinite_products():
    """d prod / d initial takes 0 where the product without it is not finite; the batched
    initial (one per row) gives the same as one row at a time."""
    a = np.array([3.0, np.inf])

    def g(i):
        return fnp.prod(a, initial=i)

    rows = np.array([2.0, 1.0, -0.5])
    np.testing.assert_array_equal(vmap(grad(g))(rows), loop(grad(g), rows))
    np.testing.assert_array_equal(vmap(g)(rows), loop(g, rows))


def test_size_of_a_traced_value_takes_numpys_axis_forms():
    a = np.ones((2, 3, 4))
    for axis in (None, 1, -1, (0, 2)):
        want = np.size(a, axis)
        assert grad(lambda x, axis=axis: fnp.sum(x) * fnp.size(x, axis))(a).ravel()[0] == want
        assert vmap(lambda x, axis=axis: fnp.size(x, axis) * 1.0)(a[None])[0] == want


# --- products: the batching rules of matmul and einsum against a loop over rows (issue 31) --------

# Shapes of one row's operands of `x @ y`: vectors, matrices, stacks, and every unit axis the
# rules treat apart (a unit row folded into one product, a unit contraction made a product).
MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 2)),
    ((4, 3), (3,)),
    ((4, 3), (3, 2)),
    ((1, 3), (3, 2)),
    ((4, 3), (3, 1)),
    ((1, 3), (3, 1)),
    ((4, 1), (1, 2)),
    ((1, 1), (1, 2)),
    ((1,), (1, 2)),
    ((4, 1), (1,)),
    ((1,), (1,)),
    ((2, 4, 3), (3, 2)),
    ((2, 1, 3), (3,)),
    ((4, 3), (2, 3, 2)),
    ((3,), (2, 3, 1)),
    ((2, 4, 1), (1, 2)),
    ((1, 4, 1), (2, 1, 2)),
    ((2, 1, 3), (1, 3, 2)),
    ((2, 4, 0), (0, 2)),
    ((0, 3), (3, 2)),
    ((4, 0), (2, 0, 1)),
]


def _rows(shape, batch, axis, dtype, seed):
    """`batch` rows of the given shape along `axis` (None: one unbatched operand)."""
    rng = np.random.default_rng(seed)
    full = shape if axis is None else (batch,) + shape
    x = rng.standard_normal(full)
    if dtype == np.complex128:
        x = x + 1j * rng.standard_normal(full)
    return x if axis is None else np.moveaxis(x, 0, axis)


def _mapped_cases():
    for xs, ys in MATMUL_SHAPES:
        for axes in [(0, 0), (0, None), (None, 0), (-1, 0), (None, -1), (1, -1)]:
            if any(a is not None and a > len(s) for a, s in zip(axes, (xs, ys))):
                continue
            yield xs, ys, axes


MAPPED = list(_mapped_cases())


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
@pytest.mark.parametrize(("xs", "ys", "axes"), MAPPED, ids=[f"{x}@{y}-{a}" for x, y, a in MAPPED])
def test_matmul_and_dot_of_rows_equal_the_loop(xs, ys, axes, dtype):
    x = _rows(xs, 5, axes[0], dtype, 1)
    y = _rows(ys, 5, axes[1], dtype, 2)
    want = loop(np.matmul, x, y, in_axes=axes)
    for product in (fnp.matmul, lambda a, b: a @ b):
        got = vmap(product, in_axes=axes)(x, y)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    if len(ys) <= 2:  # NumPy's dot is matmul there
        np.testing.assert_allclose(vmap(fnp.dot, in_axes=axes)(x, y), want, rtol=1e-13)


def _product_loss(x, y):
    z = fnp.matmul(x, y)
    return (
        fnp.sum(fnp.sin(z.real) * fnp.cos(z.imag)) if z.dtype.kind == "c" else fnp.sum(fnp.sin(z))
    )


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
@pytest.mark.parametrize(("xs", "ys", "axes"), MAPPED, ids=[f"{x}@{y}-{a}" for x, y, a in MAPPED])
def test_per_row_gradients_of_a_product_equal_the_loop(xs, ys, axes, dtype):
    # vmap(grad): the reverse rules' products (the outer products of a transpose are unit
    # contractions) batched; every operand that is mapped gets its own gradient per row
    x = _rows(xs, 3, axes[0], dtype, 3)
    y = _rows(ys, 3, axes[1], dtype, 4)
    g = vmap(grad(_product_loss, argnums=(0, 1)), in_axes=axes, out_axes=0)
    got = g(x, y)
    want = loop(grad(_product_loss, argnums=(0, 1)), x, y, in_axes=axes)
    for k in range(2):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(("xs", "ys", "axes"), MAPPED, ids=[f"{x}@{y}-{a}" for x, y, a in MAPPED])
def test_transforms_of_a_batched_product_equal_those_of_the_loop(xs, ys, axes):
    # grad, jacfwd and hessian of the vmapped product against the same of the loop written in
    # fgrad operations (one product per row, stacked)
    x = _rows(xs, 3, axes[0], np.float64, 5)
    y = _rows(ys, 3, axes[1], np.float64, 6)

    def batched(x, y):
        return fnp.sum(fnp.sin(vmap(fnp.matmul, in_axes=axes)(x, y)) ** 2)

    def looped(x, y):
        rows = [
            fnp.matmul(
                *[a if ax is None else fnp.take(a, i, axis=ax) for a, ax in zip((x, y), axes)]
            )
            for i in range(3)
        ]
        return fnp.sum(fnp.sin(fnp.stack(rows)) ** 2)

    for transform in (grad, jacfwd):
        for arg in (0, 1):
            got = transform(batched, argnums=arg)(x, y)
            np.testing.assert_allclose(
                got, transform(looped, argnums=arg)(x, y), rtol=1e-11, atol=1e-13
            )
    h = fgrad.hessian(batched, argnums=(0, 1))(x, y)
    hl = fgrad.hessian(looped, argnums=(0, 1))(x, y)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(h[i][j], hl[i][j], rtol=1e-10, atol=1e-12)


EINSUM_CASES = [
    ("i,ij->j", (3,), (3, 2)),
    ("ij,jk->ik", (1, 3), (3, 2)),
    ("ik,kj->ij", (4, 1), (1, 2)),
    ("i,j->ij", (4,), (2,)),
    ("ij,ij->", (4, 3), (4, 3)),
    ("ijk,jk->i", (2, 1, 3), (1, 3)),
]


@pytest.mark.parametrize(("subscripts", "xs", "ys"), EINSUM_CASES)
@pytest.mark.parametrize("axes", [(0, 0), (0, None), (None, -1)])
def test_einsum_tensordot_and_their_gradients_of_rows_equal_the_loop(subscripts, xs, ys, axes):
    x = _rows(xs, 4, axes[0], np.float64, 7)
    y = _rows(ys, 4, axes[1], np.float64, 8)
    for optimize in (False, True):
        f = lambda a, b, o=optimize: fnp.einsum(subscripts, a, b, optimize=o)
        np.testing.assert_allclose(
            vmap(f, in_axes=axes)(x, y), loop(f, x, y, in_axes=axes), rtol=1e-13, atol=1e-14
        )
    loss = lambda a, b: fnp.sum(fnp.sin(fnp.einsum(subscripts, a, b)))
    g = grad(loss, argnums=(0, 1))
    got, want = vmap(g, in_axes=axes)(x, y), loop(g, x, y, in_axes=axes)
    for k in range(2):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-13)
    f = lambda a, b: fnp.tensordot(a, b, axes=1)
    if xs[-1] == ys[0]:
        np.testing.assert_allclose(
            vmap(f, in_axes=axes)(x, y), loop(f, x, y, in_axes=axes), rtol=1e-13, atol=1e-14
        )


def test_a_unit_row_per_example_gradient_matches_the_plain_one():
    # the seed MLP of benchmarks/bench_peers.py, one example written as a (1, 784) matrix
    # (small sizes): the same per-example gradients as the loss written on the vector
    rng = np.random.default_rng(0)
    ws = (rng.standard_normal((7, 5)), rng.standard_normal((5, 3)))
    xs, i_y = rng.standard_normal((6, 7)), np.eye(3)[rng.integers(0, 3, 6)]

    def loss(ws, x, i_y, unit):
        z = fnp.reshape(x, (1, -1)) if unit else x
        z = fnp.maximum(z @ ws[0], 0.0) @ ws[1]
        return fnp.log(fnp.sum(fnp.exp(z))) - fnp.sum(i_y * z)

    plain = vmap(grad(lambda w, x, y: loss(w, x, y, False)), in_axes=(None, 0, 0))(ws, xs, i_y)
    unit = vmap(grad(lambda w, x, y: loss(w, x, y, True)), in_axes=(None, 0, 0))(ws, xs, i_y)
    looped = loop(lambda x, y: grad(lambda w: loss(w, x, y, True))(ws), xs, i_y)
    for p, u, w in zip(plain, unit, looped):
        np.testing.assert_allclose(u, p, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(u, w, rtol=1e-13, atol=1e-15)


def test_a_batching_rule_registered_by_any_dict_method_replaces_the_shortcut():
    """`BatchLevel` applies an elementwise primitive directly (its shortcut), remembering which
    primitives it may; registering a rule by `update`, `setdefault` or `del` + set forgets
    that, as item assignment does, so the new rule runs."""
    from fgrad import batching
    from fgrad.primitive import defunary

    cube = defunary(lambda x: x**3, lambda ans, x: 3.0 * x * x, name="cube_for_rules")
    prim = cube.primitive
    elementwise = batching.rules[fnp.sin.primitive]  # the elementwise rule, marked as such
    assert elementwise.elementwise
    batching.rules[prim] = elementwise
    x = np.arange(3.0)
    np.testing.assert_array_equal(fgrad.vmap(cube)(x), x**3)  # the shortcut is remembered
    calls = []

    def counted(args, dims):
        calls.append(tuple(dims))
        return prim.impl(args[0]), dims[0]

    try:
        for register in (
            lambda: batching.rules.update({prim: counted}),
            lambda: (batching.rules.pop(prim), batching.rules.setdefault(prim, counted)),
        ):
            batching.rules[prim] = elementwise
            fgrad.vmap(cube)(x)
            register()
            calls.clear()
            np.testing.assert_array_equal(fgrad.vmap(cube)(x), x**3)
            assert calls == [(0,)]
    finally:
        del batching.rules[prim]


@pytest.mark.parametrize("name", ["nonzero", "argwhere", "flatnonzero"])
def test_positions_of_nonzero_elements_under_vmap_are_each_rows_own(name):
    """Rows with the same number of nonzero elements share one vectorized result; rows whose
    numbers differ cannot be stacked, which vmap says (before, the shorter rows were padded
    with positions of zeros, silently); a function that reduces the positions works on them."""
    fn = getattr(fnp, name)
    first = (lambda r: fn(r)[0]) if name == "nonzero" else fn
    same = np.array([[1, 0, 1], [0, 1, 1]])
    np.testing.assert_array_equal(fgrad.vmap(first)(same), [first(r) for r in same])
    differ = np.array([[1, 0, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="different shapes per row"):
        fgrad.vmap(first)(differ)
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    def total(r, m):
        return fnp.sum(r[fnp.flatnonzero(m)])

    np.testing.assert_array_equal(fgrad.vmap(total)(x, differ), [4.0, 5.0])


def test_positions_of_the_larger_group_of_rows_are_not_padded():
    """The rows that run first are the largest group, here the two with fewer positive
    elements: their positions were padded to the other row's count with positions of
    negatives (sum(x[flatnonzero(x > 0)]) gave -1 and 0 for 1 and 2), under vmap, jit(vmap)
    and vmap(grad); a ragged result whose first rows have none was stacked with the others'."""
    x = np.array([[1.0, -1.0, -1.0], [2.0, -1.0, -1.0], [1.0, 2.0, 3.0]])

    def f(r):
        pos = fnp.nonzero(r > 0)
        return (
            fnp.sum(r[fnp.flatnonzero(r > 0)] ** 2)
            + fnp.sum(r[pos])
            + fnp.sum(fnp.argwhere(r > 0))
            + len(pos[0])
        )

    want = [f(r) for r in x]
    np.testing.assert_array_equal(fgrad.vmap(f)(x), want)
    np.testing.assert_array_equal(fgrad.jit(fgrad.vmap(f))(x), want)
    np.testing.assert_array_equal(fgrad.vmap(fgrad.jit(f))(x), want)
    np.testing.assert_array_equal(fgrad.vmap(fgrad.grad(f))(x), [fgrad.grad(f)(r) for r in x])
    with pytest.raises(ValueError, match="different shapes per row"):
        fgrad.vmap(lambda r: fnp.nonzero(r < 0)[0])(np.array([[1.0, 2.0], [-1.0, -2.0]]))


def test_a_primitive_applied_row_by_row_with_ragged_results_names_itself():
    # unique(sorted=False) and unique_values of rows with different counts reached NumPy's
    # np.stack, whose "all input arrays must have the same shape" named neither vmap nor
    # the function.
    x = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 3.0]])
    for fn in (lambda r: fnp.unique(r, sorted=False), fnp.unique_values):
        with pytest.raises(ValueError, match="vmap: unique.* different shapes per row"):
            fgrad.vmap(fn)(x)


SIZE_FUNCTIONS = {
    "hanning": lambda n: fnp.sum(fnp.hanning(n)),
    "hamming": lambda n: fnp.sum(fnp.hamming(n)),
    "blackman": lambda n: fnp.sum(fnp.blackman(n)),
    "bartlett": lambda n: fnp.sum(fnp.bartlett(n)),
    "hanning padded": lambda n: fnp.pad(fnp.hanning(n), (0, 4 - n)),
    "tri": lambda n: fnp.sum(fnp.tri(n, 3, n - 3)),
    "tril_indices": lambda n: fnp.sum(fnp.tril_indices(n)[0]),
    "triu_indices": lambda n: fnp.sum(fnp.triu_indices(4, n)[1]),
    "diag_indices": lambda n: fnp.sum(fnp.diag_indices(n)[0]),
    "indices": lambda n: fnp.sum(fnp.indices((n, 2))),
}


@pytest.mark.parametrize("name", SIZE_FUNCTIONS)
def test_a_function_of_a_size_that_differs_by_row_equals_the_loop(name):
    # The windows, tri and the index functions refused a size that differs by row ("gave
    # outputs of different shapes per row"), even where the function's output has one shape
    # in every row (a sum of the window: the loop gives [0, 1, 1.5]); arange and eye read the
    # size per row. They read it as arange does now: rows of different sizes run apart.
    f = SIZE_FUNCTIONS[name]
    sizes = np.array([2, 3, 4, 3])
    loop = np.stack([f(int(n)) for n in sizes])  # plain ints: NumPy's own call for each row
    np.testing.assert_array_equal(fgrad.vmap(f)(sizes), loop)
    np.testing.assert_array_equal(fgrad.jit(fgrad.vmap(f))(sizes), loop)


def test_a_ragged_refusal_under_vmap_does_not_advise_padding_afterwards():
    # The refusal is raised where the function is called, so padding its result afterwards
    # (which the message advised) raised the same error.
    x = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 3.0]])
    with pytest.raises(ValueError, match="padding its result afterwards does not help"):
        fgrad.vmap(lambda r: fnp.pad(fnp.unique_values(r), (0, 1)))(x)


def test_integer_data_keeps_its_dtype_under_vmap_and_jit():
    # The nan-functions of integer data (which hold no NaN) filled a batched NaN mask with
    # floats: vmap(fnp.nansum) of int64 rows was float64, NumPy's is int64. Integer weights
    # of a histogram raised under jit and vmap ("traced weights must be floating"), and
    # custom_root / custom_linear_solve of an integer initial guess raised under jit, where
    # the plain calls take them.
    x = np.array([[1, 2, 3], [4, 5, 6]])
    for f in (fnp.nansum, fnp.nanmax, fnp.nanmin, fnp.nanprod, fnp.nancumsum, fnp.nancumprod):
        want = np.stack([f(r) for r in x])
        for got in (fgrad.vmap(f)(x), fgrad.jit(fgrad.vmap(f))(x)):
            assert got.dtype == want.dtype == np.int64
            np.testing.assert_array_equal(got, want)
    a = np.array([0.1, 0.4, 0.45, 0.9, 1.5])
    w = np.array([[1, 2, 3, 4, 5], [2, 2, 2, 2, 2]], dtype=np.int32)

    def hist(w):
        return fnp.histogram(a, bins=2, range=(0, 1), weights=w)[0]

    want = np.stack([np.histogram(a, bins=2, range=(0, 1), weights=r)[0] for r in w])
    for got in (fgrad.vmap(hist)(w), np.stack([fgrad.jit(hist)(r) for r in w])):
        assert got.dtype == want.dtype == np.int32
        np.testing.assert_array_equal(got, want)

    def newton(f, x):
        for _ in range(30):
            x = x - f(x) / (3 * x**2 + 1)
        return x

    def cubic_root(theta):  # zeros_like of an integer theta: an integer initial guess
        return fgrad.custom_root(
            lambda x: x**3 + x - theta, fnp.zeros_like(theta), newton, lambda g, y: y / g(1.0)
        )

    theta = np.array([2, 10, 30])
    want = cubic_root(theta)
    np.testing.assert_allclose(want**3 + want, theta, rtol=1e-12)
    np.testing.assert_array_equal(fgrad.jit(cubic_root)(theta), want)
    np.testing.assert_array_equal(fgrad.vmap(cubic_root)(theta[None]), want[None])


def test_histogram_of_complex_weights_under_vmap_as_numpys():
    # NumPy's histogram sums complex weights; the batched rule's bincount (real weights only)
    # raised TypeError for them.
    a = np.array([0.1, 0.4, 0.45, 0.9, 1.5])
    w = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 2.0, 2.0, 2.0, 2.0]]) * (1 + 0.5j)

    def hist(w):
        return fnp.histogram(a, bins=2, range=(0, 1), weights=w)[0]

    want = np.stack([np.histogram(a, bins=2, range=(0, 1), weights=r)[0] for r in w])
    got = fgrad.vmap(hist)(w)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_outputs_are_arrays_of_their_own():
    """An output that was the input (r.astype(float64) of float64 rows, r itself) or a view of
    it shared the user's memory: writing the output wrote the input. A broadcast output was
    read-only. The loop over rows gives fresh, writable arrays; so does vmap."""
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    before = x.copy()
    for f in (lambda r: r.astype(np.float64), lambda r: r, lambda r: r[::-1], fnp.asarray):
        out = fgrad.vmap(f)(x)
        assert not np.shares_memory(out, x)
        out[...] = -1.0
        np.testing.assert_array_equal(x, before)
    assert fgrad.vmap(lambda r: fnp.broadcast_to(r, (2, 2)))(x).flags.writeable
    y = np.array([1.0, 2.0])
    assert fnp.astype(y, np.float64) is not y and fnp.astype(y, np.float64, copy=False) is y


def test_updates_at_per_row_indices_that_leave_axes_unindexed():
    """x.at[i].add(v) / .set(v) under vmap with a per-row index on the first of a row's axes
    and v of fewer axes than x[i]: v was laid out against one axis too few, so rows got other
    rows' values (row 0 got row 1's 100.0), silently; other row counts raised NumPy's
    'not broadcastable'. 890 of 2,220 random cases differed from the loop; now none."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5, 2))
    for idx in (lambda i: (i,), lambda i: (slice(None), i), lambda i: (0, i), lambda i: (i, 1)):
        i = rng.permuted(np.tile(np.arange(4), (3, 1)), axis=1)[:, :2]  # no repeats in a row
        row_shape = np.shape(x[0][idx(i[0])])
        for op in ("add", "set"):
            for v_shape in ((), row_shape[-1:], row_shape):
                v = rng.standard_normal((3,) + v_shape)

                def f(x, i, v):
                    return getattr(fnp.at(x)[idx(i)], op)(v)

                want = np.stack([f(x[b], i[b], v[b]) for b in range(3)])
                np.testing.assert_array_equal(fgrad.vmap(f)(x, i, v), want)


# NumPy reads a 0-d boolean index as an index array of shape (1,) (True) or (0,) (False) on a
# new axis: next to an integer index, apart from it or not, it decides where the index axes go.
_BOOL_0D_FORMS = {
    "i, b": lambda i, b: (i, b),
    "b, i": lambda i, b: (b, i),
    "i, :, b": lambda i, b: (i, slice(None), b),
    "b, :, i": lambda i, b: (b, slice(None), i),
    "0, :, b": lambda i, b: (0, slice(None), b),
    "i, None, b": lambda i, b: (i, None, b),
    "i, ..., b": lambda i, b: (i, Ellipsis, b),
    "b, ..., i": lambda i, b: (b, Ellipsis, i),
    "None, i, b, b": lambda i, b: (None, i, b, b),
    "i, b, i": lambda i, b: (i, b, i),
}


@pytest.mark.parametrize("form", _BOOL_0D_FORMS, ids=str)
@pytest.mark.parametrize("mask", ["True", "np.False_", "computed"])
def test_a_0d_boolean_index_next_to_integer_indices_is_the_loop(form, mask):
    """x[0, :, True] gave (1, 2, 3) where the loop over rows gives (2, 1, 3), x[[0, 1], :,
    np.True_] mixed rows, x[i, True] with a batched i dropped the boolean's axis ((2, 3) for
    (2, 1, 3)), x[i, False] and .at[i, True].add raised: the batching rules read a 0-d boolean
    as no index array, or as one of shape (). Each now equals the loop bit for bit, with the
    index batched, x batched, or both, for x[...], .at[...].add and the gradient."""
    x = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5) * 0.37 + 1
    i = np.array([[2], [1]])
    b = {"True": lambda r: True, "np.False_": lambda r: np.False_}.get(
        mask, lambda r: r[0, 0, 0] > 0
    )
    index = lambda r, i: _BOOL_0D_FORMS[form](i, b(r))
    calls = {
        "get": lambda r, i: r[index(r, i)],
        "at.add": lambda r, i: fnp.at(r)[index(r, i)].add(1.5),
        "grad": lambda r, i: grad(lambda z: fnp.sum(fnp.sin(z[index(z, i)])))(r),
    }
    for f in calls.values():
        loop = np.stack([f(x[k], i[k]) for k in range(2)])
        np.testing.assert_array_equal(vmap(f)(x, i), loop, strict=True)
        np.testing.assert_array_equal(
            vmap(f, in_axes=(0, None))(x, i[0]),
            np.stack([f(x[k], i[0]) for k in range(2)]),
            strict=True,
        )
        if mask != "computed":  # (a computed mask is batched with x)
            np.testing.assert_array_equal(
                vmap(f, in_axes=(None, 0))(x[0], i),
                np.stack([f(x[0], i[k]) for k in range(2)]),
                strict=True,
            )


def test_in_axes_of_a_registered_pytree_node():
    """in_axes=(Pt(0, 0),) for a registered class raised "'<=' not supported between 'int'
    and 'Pt'" (out_axes of one, and in_axes of dicts, worked)."""

    class Pt:
        def __init__(self, a, b):
            self.a, self.b = a, b

    fgrad.tree_util.register_pytree_node(Pt, lambda p: ((p.a, p.b), None), lambda _, c: Pt(*c))
    p = Pt(np.array([2.0, 1.0]), np.array([[3.0, 4.0], [5.0, 6.0]]))
    out = fgrad.vmap(lambda p: p.a * p.b[0], in_axes=(Pt(0, 1),))(p)
    np.testing.assert_array_equal(out, p.a * p.b[0])


def test_reverse_mode_through_a_vmap_whose_rows_branch_apart_has_no_nan():
    """grad(sum(vmap(f))) with a Python branch on each row: the run that went on for the
    larger group took the other rows down its branch too (sqrt of their negatives), and the
    backward pass multiplied their zero cotangents by nan there: nan for those rows."""

    def f(x):
        v = x if fnp.sum(x) > 0 else -x
        return fnp.sum(fnp.sqrt(v))

    def h(x):
        return fnp.sqrt(x) if x > 0 else 0.5 * x

    x = np.array([[0.5, 0.7], [-0.4, -0.9], [0.3, 0.2]])
    want = np.stack([fgrad.grad(f)(r) for r in x])
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(fgrad.vmap(f)(x)))(x), want)
    np.testing.assert_array_equal(fgrad.vjp(fgrad.vmap(f), x)[1](np.ones(3))[0], want)
    np.testing.assert_array_equal(fgrad.jacrev(fgrad.vmap(f))(x)[1], np.eye(3)[1][:, None] * want)
    y = np.array([0.25, 0.5, -1.0])
    np.testing.assert_array_equal(
        fgrad.grad(lambda y: fnp.sum(fgrad.vmap(h)(y)))(y), [fgrad.grad(h)(v) for v in y]
    )


@pytest.mark.parametrize(
    "name, f",
    [
        ("argsort", lambda m, r: m.argsort(r)),
        ("argmax", lambda m, r: m.argmax(r, axis=-1)),
        ("argmin keepdims", lambda m, r: m.argmin(r, axis=0, keepdims=True)),
        ("all", lambda m, r: m.all(r, axis=0)),
        ("argwhere", lambda m, r: m.argwhere(r)),
        ("matrix_rank of vectors", lambda m, r: m.linalg.matrix_rank(r)),
    ],
)
def test_rows_of_fewer_dimensions_than_the_rule_assumed_are_numpys_rows(name, f):
    # 0-d rows raised in argsort ("axis -1 is out of bounds") and argwhere (a reshape);
    # matrix_rank of 1-D rows took the batch for one matrix (an out_axes error)
    rows = np.array([[1.0, 2.0], [0.0, 0.0]]) if "matrix_rank" in name else np.array([0.3, 0.5])
    want = np.stack([f(np, r) for r in rows])
    got = vmap(lambda r: f(fnp, r))(rows)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# --- found by probing: vmap against the loop over rows --------------------------------------------


def test_an_exception_some_rows_raise_is_raised_in_those_rows_only():
    """`try: inv(m) except LinAlgError: ...` over a stack holding one singular matrix gave
    every row the fallback (the batched inv raised for the whole stack); so did a division
    under np.errstate(divide="raise"), and a singular matrix met only by another group's row
    computed on this path. Rows that raise now go on apart, as rows that branch apart do."""

    def f(m):
        try:
            return fnp.linalg.inv(m)
        except np.linalg.LinAlgError:
            return m * 0

    def g(x):
        with np.errstate(divide="raise"):
            try:
                return 1.0 / x
            except FloatingPointError:
                return x * 0

    def h(v):
        if v[0] > 0:
            m = fnp.diag(v[1:])
            try:
                return fnp.linalg.inv(m)
            except np.linalg.LinAlgError:
                return m * 0
        return -fnp.eye(2)

    cases = [
        (f, np.stack([np.eye(2), np.zeros((2, 2)), 2 * np.eye(2)])),
        (g, np.array([[1.0, 2.0], [0.0, 3.0], [4.0, 5.0]])),
        (h, np.array([[1.0, 2.0, 3.0], [1.0, 4.0, 5.0], [-1.0, 0.0, 0.0]])),
    ]
    for fun, rows in cases:
        np.testing.assert_array_equal(vmap(fun)(rows), loop(fun, rows))
    with pytest.raises(np.linalg.LinAlgError):  # raised where every row raises it
        vmap(fnp.linalg.inv)(np.zeros((2, 2, 2)))
    # under grad, each group's derivative is its own
    want = np.stack([grad(lambda m: fnp.sum(f(m)))(m) for m in cases[0][1]])
    np.testing.assert_allclose(vmap(grad(lambda m: fnp.sum(f(m))))(cases[0][1]), want)


def test_rows_reading_zeros_of_other_signs_go_apart():
    """-0.0 and 0.0 compare equal, so rows reading them took one path: atan2(float(s), -1)
    over [0.0, -0.0] gave [pi, pi] (the loop: [pi, -pi])."""
    import math

    f = lambda s: s * 0 + math.atan2(float(s), -1.0)
    rows = np.array([0.0, -0.0])
    np.testing.assert_array_equal(vmap(f)(rows), loop(f, rows))
    z = np.array([0j, complex(0.0, -0.0)])
    g = lambda s: s.real * 0 + math.atan2(float(s.imag), -1.0)
    np.testing.assert_array_equal(vmap(g)(z), loop(g, z))


def test_hash_str_of_traced_values_and_out_axes_none_after_a_split():
    """A traced value hashed by identity (`x in {1.0, 7.0}` never found it: wrong rows under
    vmap, and under grad); str(x) under vmap was the tracer's text; an out_axes=None output
    of rows that branched apart was the user's own input array."""
    f = lambda x: x * 2 if x[0] in {1.0, 7.0} else x * 3
    rows = np.array([[1.0, 2.0], [2.0, 3.0], [7.0, 5.0]])
    np.testing.assert_array_equal(vmap(f)(rows), loop(f, rows))
    assert grad(lambda x: fnp.sum(f(x)))(np.array([1.0, 2.0]))[0] == 2.0
    assert fgrad.jit(lambda x: fnp.sum(f(x)))(np.array([2.0, 3.0])) == 15.0
    s = lambda x: x * len(str(x[0] > 0))
    rows = np.array([[1.0, 2.0], [-1.0, 3.0]])
    np.testing.assert_array_equal(vmap(s)(rows), loop(s, rows))
    w = np.array([7.0, 8.0])
    out = vmap(lambda x, w: (x * 2 if x > 0 else -x, w), in_axes=(0, None), out_axes=(0, None))(
        np.array([1.0, -1.0]), w
    )
    assert not np.shares_memory(out[1], w)


def test_no_rows_and_a_string_mapped():
    """vmap of no rows ran the function on a row of zeros: inv and cholesky raised where NumPy
    gives an empty stack, and log warned of a division by zero; mapping a string raised
    NumPy's "data type 'abc' not understood"."""
    import warnings

    for fun in (fnp.linalg.inv, fnp.linalg.cholesky):
        assert vmap(fun)(np.zeros((0, 3, 3))).shape == (0, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vmap(fnp.log)(np.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(TypeError, match="argument 1 .* type str, not an array; use in_axes=None"):
        vmap(lambda x, s: x)(np.ones(3), "abc")


def test_no_rows_of_an_inverse_of_a_reshaped_row():
    """tensorinv and tensorsolve of no rows raised "Singular matrix": the made-up rows, zeros
    and then identities in the last two axes, are singular once reshaped to a square matrix.
    Empty results of the loop's shapes, as NumPy's stack of none would have."""
    a, b = np.zeros((0, 6, 2, 3)), np.zeros((0, 6))
    out = vmap(lambda r: fnp.linalg.tensorinv(r, ind=1))(a)
    assert out.shape == (0, 2, 3, 6) and out.dtype == np.float64
    assert vmap(fnp.linalg.tensorsolve)(a, b).shape == (0, 2, 3)
    assert vmap(lambda r: fnp.linalg.inv(fnp.reshape(r, (6, 6))))(a.astype(np.float32)).dtype == (
        np.float32
    )


def test_numpys_error_handling_set_inside_the_function_does_not_outlive_the_call():
    """A `with np.errstate(divide="raise")` block inside the function, in which the rows
    branched apart, left divide="raise" in force after vmap returned (the settings restored
    were those the block had set, saved when the rows went apart)."""
    before = np.geterr()

    def f(x):
        with np.errstate(divide="raise"):
            return x * 2 if x > 0 else x * 3

    np.testing.assert_array_equal(vmap(f)(np.array([1.0, -1.0, 2.0])), [2.0, -3.0, 4.0])
    assert np.geterr() == before


def test_the_users_floating_point_settings_hold_for_the_active_rows_after_a_split():
    """Once rows branched apart, NumPy's errors were off for the rest of the run, the active
    rows' own too: under np.errstate(divide="raise"), 1/r for a row r = [1, 0] returned
    [1, inf] instead of taking the user's `except FloatingPointError`, log(0) returned -inf
    where the loop raised, and under the default settings log(0) did not warn. The rows on
    another group's path still neither warn nor raise."""
    import warnings

    def branch(r):
        return r * 1.0 if r[0] > 0 else r + 1.0

    def inverse(r):
        r = branch(r)
        try:
            return 1.0 / r
        except FloatingPointError:
            return fnp.zeros(2)

    rows = np.array([[1.0, 0.0], [2.0, 1.0], [-0.5, 3.0], [-1.0, 0.0]])
    with np.errstate(divide="raise"):
        np.testing.assert_array_equal(vmap(inverse)(rows), loop(inverse, rows))
        with pytest.raises(FloatingPointError, match="divide by zero"):
            vmap(lambda r: fnp.log(branch(r)))(rows[:3])
    with pytest.warns(RuntimeWarning, match="divide by zero"):  # row 0's own log(0)
        vmap(lambda r: fnp.log(branch(r)))(rows[:3])
    calm = np.array([[1.0, 2.0], [2.0, 3.0], [-0.5, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # row 2's log(-0.5) on the others' path is not its own
        got = vmap(lambda r: fnp.log(branch(r)))(calm)
    np.testing.assert_array_equal(got, np.log([[1.0, 2.0], [2.0, 3.0], [0.5, 4.0]]))
    assert np.geterr()["divide"] == "warn"


def test_axes_structure_errors_speak_of_the_users_axes_and_values():
    """They quoted flatten_up_to's internals: "the root", the hidden tuple of the arguments,
    and a traced row printed as "Box array([0., 1., 2.])"."""
    a = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError) as out:
        vmap(lambda x: x, out_axes=(0,))(a)
    message = str(out.value)
    assert "out_axes is (0,) (a tuple), but the output is an array of shape (3,) per row" in (
        message
    )
    top_level = r"one entry per positional argument.*in_axes=\(\{'a': 0\},\)"
    with pytest.raises(TypeError, match=top_level):
        vmap(lambda p: p["a"], in_axes={"a": 0})
    with pytest.raises(ValueError) as arg:
        vmap(lambda p: p[0] + p[1], in_axes=([0, None],))((a, a[0]))
    assert "in_axes[0] is [0, None] (a list), but argument 0 is a tuple" in str(arg.value)
    with pytest.raises(ValueError) as deep:
        vmap(lambda x, q: x, in_axes=(0, {"a": {"c": 0}}))(a, {"a": a})
    assert "in_axes[1]['a'] is {'c': 0} (a dict), but argument 1 at ['a'] is an array of " in (
        str(deep.value)
    )
    for e in (out, arg, deep):
        assert not any(word in str(e.value) for word in ("Box", "flatten_up_to", "root"))


def test_round_with_decimals_given_by_position_and_batched_equals_the_loop():
    # decimals given by position was batched as an operand: NumPy's "only integer scalar
    # arrays can be converted to a scalar index"; the keyword form worked
    x = np.array([[1.2345, 2.5678], [3.14159, 2.71828]])
    d = np.array([1, 2])
    loop = np.stack([np.round(r, k) for r, k in zip(x, d)])
    for f in (
        lambda r, k: fnp.round(r, k),
        lambda r, k: fnp.around(r, k),
        lambda r, k: r.round(k),
        lambda r, k: fnp.round(r, decimals=k),
    ):
        np.testing.assert_array_equal(fgrad.vmap(f)(x, d), loop)
    out = np.empty(2)
    assert fnp.round(x[0], 1, out) is out and np.array_equal(out, np.round(x[0], 1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64])
def test_vmap_of_a_frobenius_norm_equals_the_loop_bit_for_bit(dtype):
    """NumPy's norm of all of a matrix's entries is a dot product: vmap summed the squares over
    the row's axes instead, 1 ulp off the loop on about 1 row in 8."""
    rng = np.random.default_rng(0)
    m = rng.standard_normal((50, 6, 6)) + (
        1j * rng.standard_normal((50, 6, 6)) if np.dtype(dtype).kind == "c" else 0
    )
    m = m.astype(dtype)
    for x in (m, m.transpose(0, 2, 1), m.reshape(5, 10, 6, 6)):
        f = np.linalg.norm if x.ndim == 3 else fgrad.vmap(np.linalg.norm)
        loop = np.stack([f(row) for row in x])
        np.testing.assert_array_equal(fgrad.vmap(f)(x), loop)


GATHERS = {
    "rows": lambda a: a[[0, 2]],
    "columns": lambda a: a[:, [0, 2]],
    "row mask": lambda a: a[a[:, 0] > 0],
    "column mask": lambda a: a[:, a[0] > 0],
    # an integer array among full slices: a take, laid out at once (no copy)
    "rows by array": lambda a: a[np.array([0, 2, -1])],
    "columns by array": lambda a: a[:, np.array([0, 2])],
    "columns by 2-d array": lambda a: a[:, np.array([[0, 2], [1, 1]])],
}


@pytest.mark.parametrize("form", GATHERS)
def test_a_sum_of_gathered_elements_equals_the_loop_bit_for_bit(form):
    """NumPy's advanced indexing of the batch puts the batch axis inside the index axes in
    memory, and a sum over each row then added in another order than over one row's own
    result: 1 ulp off the loop on 196 rows of 500 (rows), 185 (columns), 95 and 90 (masks).
    The gathered rows keep each row's own layout, under vmap, jit(vmap), vmap(grad) (the
    sum is in the gradient), the batch axis last, and vmap of vmap."""
    b = np.round(np.random.default_rng(0).normal(size=(500, 3, 3)), 1)
    gather = GATHERS[form]

    def f(a):
        return fnp.sum(gather(a))

    def g(a):
        return fnp.sum(gather(a)) ** 2

    want = loop(f, b)
    assert vmap(f)(b).tobytes() == want.tobytes()
    assert fgrad.jit(vmap(f))(b).tobytes() == want.tobytes()
    assert vmap(grad(g))(b).tobytes() == loop(grad(g), b).tobytes()
    last = np.ascontiguousarray(b.transpose(1, 2, 0))
    assert vmap(f, in_axes=2)(last).tobytes() == loop(f, last, in_axes=2).tobytes()
    assert vmap(vmap(f))(b.reshape(50, 10, 3, 3)).tobytes() == want.tobytes()


def test_a_batched_index_has_the_layout_of_one_rows_result():
    """A gathered batch has each row laid out as one row's own result, which NumPy puts in
    memory index axes first (a copy in C order would sum a row of a[:, [0, 2]] otherwise)."""
    b = np.zeros((5, 3, 4))
    assert b[0][:, [0, 2]].strides == (8, 3 * 8)
    assert vmap(lambda a: a[:, [0, 2]])(b).strides == (2 * 3 * 8, 8, 3 * 8)
    assert vmap(lambda a: a[[0, 2]])(b).strides == (2 * 4 * 8, 4 * 8, 8)
    assert vmap(lambda a: a[:, np.array([0, 2])])(b).strides == (2 * 3 * 8, 8, 3 * 8)
    assert vmap(lambda a: a[np.array([0, 2])])(b).strides == (2 * 4 * 8, 4 * 8, 8)


@pytest.mark.parametrize(
    "f",
    [fnp.nonzero, fnp.where, lambda r: r.nonzero(), np.nonzero],
    ids=["nonzero", "where", "method", "np"],
)
def test_vmap_of_nonzero_over_scalar_rows_refuses_as_each_row_does(f):
    # it returned () where NumPy (each row, the loop, jit) refuses a 0-d array
    x = np.array([0.5, 0.0, -1.2])
    with pytest.raises(ValueError, match="nonzero on 0d arrays"):
        f(x[0])
    with pytest.raises(ValueError, match="nonzero on 0d arrays is not allowed .* shape \\(\\)"):
        vmap(f)(x)


def test_vmap_of_an_index_with_too_many_parts_is_numpys_index_error():
    # the take of r[:, :, idx] on 2-D rows failed inside np.moveaxis ("AxisError source")
    with pytest.raises(IndexError, match="too many indices"):
        vmap(lambda r: r[:, :, np.array([0])])(np.ones((2, 3, 3)))


@pytest.mark.parametrize(
    "reduce",
    [fnp.sum, fnp.mean, fnp.nansum, fnp.var, fnp.std],
    ids=["sum", "mean", "nansum", "var", "std"],
)
@pytest.mark.parametrize("transform", [fgrad.jacfwd, fgrad.jacrev, fgrad.hessian])
def test_vmap_of_a_derivative_of_a_masked_reduction_equals_the_loop(reduce, transform):
    # the mask, batched by the outer vmap only, was broadcast against the derivative's own
    # batch of seeds: with the sizes equal, masked-out entries got derivatives (-0.4 where
    # the loop, finite differences and the math give 0); otherwise NumPy's broadcast error
    rows = np.array([[0.3, -0.2, 0.7], [1.0, 0.5, -0.4], [0.2, 0.9, 0.6]])

    def f(x):
        return reduce(x * x + x, where=x > 0.25)

    want = np.stack([transform(f)(r) for r in rows])
    np.testing.assert_allclose(vmap(transform(f))(rows), want, rtol=1e-14, atol=1e-15)


def test_nested_vmap_of_a_masked_sum_with_the_mask_mapped_outside_only():
    rows = np.array([[0.3, -0.2, 0.7], [1.0, 0.5, -0.4]])
    masks = np.array([[True, False, True], [True, True, False]])
    inner = vmap(lambda x, m: fnp.sum(x, where=m), in_axes=(0, None))
    xs = np.stack([rows, rows])
    want = [[np.sum(r, where=m) for r in x] for x, m in zip(xs, masks)]
    np.testing.assert_array_equal(vmap(inner)(xs, masks), want)


def test_rows_returning_different_shapes_name_the_output_by_its_path_with_dtypes():
    # The message said "output leaf 0" for a single output and "output leaf 1" for a dict's
    # ['b'] (keys flattened in sorted order), without the dtypes.
    x = np.array([[1.0, 2.0], [-1.0, 2.0]])
    with pytest.raises(
        ValueError,
        match=r"returned the output with different shapes per row "
        r"\(shape \(1,\) float64, shape \(2,\) float64\)",
    ):
        fgrad.vmap(lambda r: r if r[0] > 0 else r[:1])(x)
    with pytest.raises(ValueError, match=r"returned output \['b'\] with different shapes"):
        fgrad.vmap(lambda r: {"b": r if r[0] > 0 else r[:1], "a": r})(x)
    with pytest.raises(ValueError, match=r"out_axes is None for output \[1\], but it depends"):
        fgrad.vmap(lambda r: (r, r[:1] if r[0] > 0 else -r[:1]), out_axes=(0, None))(x)


def test_reverse_mode_of_a_vmapped_jvp_with_an_unbatched_tangent_term_sums_the_rows():
    """Under `vmap` of a `jvp` the tangent of a * b with t_a the same for every row and t_b
    batched is add_any(t_a * b, a * t_b) of an unbatched and a batched value. add_any's rules
    pass their cotangent through unchanged, so NumPy broadcasting inside it left the rows'
    axis on b's gradient: grad of the sum below was [[4.8, 5.6]] * 3, shape (3, 2), where the
    closed form is 6 y + 2 T.sum(0) = [5.2, 6.4] (probe FC #1). The same cause broke
    grad(jacfwd(custom_jvp)), grad(jacrev(custom_vjp)) of two outputs, grad(hessian(
    checkpoint)) of a tuple and jacfwd(jacfwd(custom_jvp)) (FC #2-#5), each checked here
    against the function without the wrapper."""
    y = np.array([0.2, 0.4])
    T = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    tangent = lambda y, t: jvp(lambda a, b: a * b * b, (1.0, y), (1.0, t))[1]
    g = lambda y: fnp.sum(vmap(lambda t: tangent(y, t))(T))
    loop = lambda y: sum(fnp.sum(tangent(y, t)) for t in T)
    want = 6 * y + 2 * T.sum(0)
    for transform in (grad, jacfwd, jacrev):
        np.testing.assert_allclose(transform(g)(y), want, rtol=1e-15)
    np.testing.assert_allclose(grad(loop)(y), want, rtol=1e-15)
    np.testing.assert_allclose(vjp(g, y)[1](1.0)[0], want, rtol=1e-15)

    leaves = fgrad.tree_util.tree_leaves
    total = lambda tree: sum(fnp.sum(fnp.sin(leaf)) for leaf in leaves(tree))

    def same(make, *args):
        got, plain = make(True)(*args), make(False)(*args)
        for a, b in zip(leaves(got), leaves(plain), strict=True):
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=1e-13)

    f = lambda x, y: fnp.sin(y) * x
    f_c = fgrad.custom_jvp(f)
    f_c.defjvp(lambda p, t: jvp(f, p, t))
    pick = lambda wrapped, plain: lambda w: wrapped if w else plain
    by = pick(f_c, f)
    same(lambda w: grad(lambda y: fnp.sum(jacfwd(by(w), argnums=1)(0.5, y) ** 2)), y)

    h = lambda x: (fnp.sin(x[1]) * x[0], x[0] * x[1] ** 2)
    h_v = fgrad.custom_vjp(h)
    h_v.defvjp(lambda x: (h(x), x), lambda r, ct: (vjp(h, r)[1](ct)[0],))
    by_h = pick(h_v, h)
    x2 = (np.array([0.3, 0.5]), np.array([0.6, 0.7]))
    same(lambda w: grad(lambda x: total(jacrev(by_h(w))(x))), x2)

    k = lambda x: (x[2] * x[0], x[1] * x[0][1])
    by_k = pick(fgrad.checkpoint(k), k)
    x3 = (np.array([0.3, 0.5, 0.7]), np.array([0.2, 0.4, 0.6]), np.float64(0.6))
    same(lambda w: grad(lambda x: total(fgrad.hessian(lambda z: total(by_k(w)(z)))(x))), x3)

    m = lambda x: fnp.tanh(x[1]) * x[0][1]
    m_c = fgrad.custom_jvp(m)
    m_c.defjvp(lambda p, t: jvp(m, p, t))
    x4 = (np.array([0.3, 0.5, 0.7]), np.array([0.2, 0.4]))
    same(lambda w: jacfwd(jacfwd(pick(m_c, m)(w))), x4)
