"""Closed-form values, derivatives and conventions of the arrays family (fgrad/numpy/arrays.py)
and of the `x.at[idx]` scatter updates; the systematic rows are in tests/rows_arrays.py."""

import warnings

import numpy as np
import pytest
from rows_arrays import NONDIFF, ROWS

import fgrad.numpy as fnp
from fgrad import grad, hessian, jacfwd, jacrev, jit, vmap
from fgrad.numpy import arrays
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
V = RNG.standard_normal(5)
C = RNG.standard_normal((2, 3, 4))


def test_every_name_of_the_family_has_a_row_or_is_declared_non_differentiable():
    covered = {r.name for r in ROWS} | {n.name for n in NONDIFF}
    assert set(arrays.__all__) - covered == set()


# The same call on NumPy and on fgrad.numpy (plain arrays in) gives the same values and dtypes.
SAME_AS_NUMPY = {
    "flip": lambda m: [m.flip(X), m.flip(C, (0, 2)), m.fliplr(X), m.flipud(V)],
    "roll": lambda m: [m.roll(X, 5), m.roll(X, -1, 1), m.roll(C, (1, 2, -7), (0, 2, 2))],
    "rot90": lambda m: [m.rot90(C, k, (2, 0)) for k in range(-1, 6)],
    "tile": lambda m: [m.tile(V, 3), m.tile(X, (2, 1, 2)), m.tile(1.5, (2, 2))],
    "repeat": lambda m: [m.repeat(X, 2), m.repeat(X, [1, 0, 3], axis=0), m.repeat(C, [2], axis=-1)],
    "pad": lambda m: (
        [
            m.pad(X, w, mode=md)
            for w in [1, (1, 2), ((1, 0), (2, 3)), ((2,), (1,))]
            for md in ["constant", "edge", "reflect", "symmetric", "wrap"]
        ]
        + [m.pad(V, 7, mode=md) for md in ["reflect", "symmetric", "wrap"]]
        + [m.pad(X, ((1, 2), (0, 1)), constant_values=((1, 2), (3, 4)))]
    ),
    "join": lambda m: [
        m.hstack([X, X]),
        m.vstack([X, X[0]]),
        m.dstack([V, V]),
        m.column_stack([X[:, 0], X]),
        m.append(X, V),
        m.append(X, X[:1], axis=0),
        m.broadcast_arrays(X, V[:4], 1.0),
    ],
    "split": lambda m: [
        m.split(V, 5),
        m.split(X, [1, 3], axis=1),
        m.array_split(X, [2, 10]),
        m.dsplit(C, 2),
        m.array_split(X, 5, axis=1),
    ],
    "take": lambda m: [
        m.take(X, [0, -1, 5]),
        m.take(X, [[0, 2], [1, 1]], axis=1),
        m.take(X, [-7, 9], mode="wrap"),
        m.take(X, [-7, 9], axis=0, mode="clip"),
        m.take_along_axis(X, np.argsort(X, axis=0), 0),
        m.take_along_axis(X, np.array([[0], [2], [1]]), 1),
    ],
    "diag": lambda m: [
        m.diag(V, 2),
        m.diag(V, -1),
        m.diag(X, 7),
        m.diagonal(C, 1, 2, 0),
        m.diagonal(C, -1, -1, 1),
        m.trace(C, 1, 1, 2),
        m.tril(X, -1),
        m.triu(C),
        m.tril(V),
        m.triu(V, -2),
    ],
    "sort": lambda m: [m.sort(X), m.sort(X, 0), m.sort(X, None), m.sort(C, 1)],
    "meshgrid": lambda m: [
        m.meshgrid(V, X[0]),
        m.meshgrid(V, X[0], indexing="ij"),
        m.meshgrid(V, X[0], V[:2], sparse=True),
        m.meshgrid(V),
    ],
    "atleast": lambda m: [
        m.atleast_1d(1.0, V),
        m.atleast_2d(V),
        m.atleast_3d(1.0),
        m.atleast_3d(X),
    ],
    "insert": lambda m: [
        m.insert(V, [1, 1, 4], [7.0, 8.0, 9.0]),
        m.insert(X, 1, V[:4], axis=0),
        m.insert(X, [0, 2], V[:2], axis=1),
        m.insert(X, slice(0, 2), 3.0, axis=0),
        m.insert(X.astype(np.float32), 1, 2.0),
    ],
    "delete": lambda m: [
        m.delete(V, [0, -1]),
        m.delete(X, slice(0, 2), axis=0),
        m.delete(X, [1, 5]),
        m.delete(V, np.array([True, False, True, False, False])),
    ],
    "select": lambda m: [m.select([X > 0, X < -1], [X, 2 * X], default=-5.0)],
}


def _assert_same(got, expected):
    if isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", list(SAME_AS_NUMPY))
def test_values_and_dtypes_are_numpys(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _assert_same(SAME_AS_NUMPY[name](fnp), SAME_AS_NUMPY[name](np))


def test_inputs_are_never_mutated():
    x, v = X.copy(), V[:2].copy()
    fnp.at(x)[[0, 0], [1, 1]].multiply(v)
    fnp.at(x)[[0, 0], [1, 1]].min(v)
    fnp.pad(x, 2, mode="reflect")
    fnp.insert(x, 1, 0.0)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(v, V[:2])


# --- closed-form derivatives ----------------------------------------------------------------------


def test_gradients_of_copies_count_the_copies():
    x = np.array([1.0, 2.0, 3.0])
    # reflect by 3 on each side: [2 3 2 | 1 2 3 | 2 1 2]... as NumPy pads: counts per element
    counts = np.bincount(np.pad(np.arange(3), 3, mode="reflect"), minlength=3)
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(fnp.pad(x, 3, mode="reflect")))(x), counts)
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(fnp.repeat(x, [2, 0, 3])))(x), [2, 0, 3])
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(fnp.tile(x, (2, 2))))(x), [4, 4, 4])
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(fnp.take(x, [0, 0, -1])))(x), [2, 0, 1])


def test_trace_tril_and_diag_have_their_closed_form_gradients():
    a = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(grad(lambda a: fnp.trace(a, 1))(a), np.eye(3, 4, 1))
    np.testing.assert_array_equal(grad(lambda a: fnp.sum(fnp.tril(a, -1)))(a), np.tri(3, 4, -1))
    np.testing.assert_array_equal(grad(lambda a: fnp.sum(fnp.triu(a)))(a), 1 - np.tri(3, 4, -1))
    v = np.array([1.0, 2.0])
    # f(v) = v^T diag(v) v^T-ish: sum(diag(v) @ diag(v)) = sum(v**2), so grad = 2 v, hessian 2 I
    f = lambda v: fnp.sum(fnp.diag(v, 1) @ fnp.diag(v, 1).T)
    np.testing.assert_allclose(grad(f)(v), 2 * v)
    np.testing.assert_allclose(hessian(f)(v), 2 * np.eye(2))


def test_trace_dtype_is_the_accumulators_as_numpys():
    # it summed in a's dtype and cast after: float32's bits lost, float16's 90000 was inf
    x = np.diag(np.float32([0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4]))
    h = np.diag(np.full(3000, 30.0, np.float16))
    for a, dtype in [(x, np.float64), (h, np.float32)]:
        want = np.trace(a, dtype=dtype)
        for got in [
            fnp.trace(a, dtype=dtype),
            jit(lambda a: fnp.trace(a, dtype=dtype))(a),
            fnp.linalg.trace(a, dtype=dtype),
        ]:
            assert got.dtype == want.dtype and got == want, (got, want)


def test_sort_gradient_follows_the_permutation_and_ties_keep_their_order():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([10.0, 20.0, 30.0])
    # sort(x) = [x1, x2, x0]: x1 gets w0, x2 gets w1, x0 gets w2
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(fnp.sort(x) * w))(x), [30.0, 10.0, 20.0])
    tied = np.array([1.0, 1.0, 0.0])  # stable: sorted = [x2, x0, x1]
    g = grad(lambda x: fnp.sum(fnp.sort(x) * w))(tied)
    np.testing.assert_array_equal(g, [20.0, 30.0, 10.0])
    np.testing.assert_array_equal(jacfwd(fnp.sort)(tied), jacrev(fnp.sort)(tied))


def test_traced_pad_constant_is_differentiable():
    x = np.ones((2, 2))
    # a 2x2 padded by 1 to 4x4 has 12 constant cells
    assert grad(lambda c: fnp.sum(fnp.pad(x, 1, constant_values=c)))(0.5) == 12.0


@pytest.mark.parametrize(
    "shape_, pad_width, kw",
    [((0,), 1, {}), ((0, 3), ((1, 1), (0, 2)), {}), ((0,), (2, 1), {"constant_values": 3.0})],
)
def test_pad_of_an_empty_array_is_numpys(shape_, pad_width, kw):
    # the gather read position 0 of an empty array (masked out, but absent): IndexError
    x = np.zeros(shape_)

    def f(a):
        return fnp.pad(a, pad_width, **kw)

    expected = np.pad(x, pad_width, **kw)
    for out in (f(x), jit(f)(x), vmap(f)(np.stack([x, x]))[1]):
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out, expected)
    assert grad(lambda a: fnp.sum(f(a)))(x).shape == shape_
    assert grad(lambda c: fnp.sum(fnp.pad(x, pad_width, constant_values=c)))(2.0) == expected.size


# --- x.at[idx] scatter updates --------------------------------------------------------------------


@pytest.mark.parametrize("op", ["multiply", "divide", "power", "min", "max"])
@pytest.mark.parametrize(
    "idx",
    [[0, 0, 2], np.array([1, 1, 1]), [0, 2], slice(1, 3)],
    ids=["repeats", "all-same", "unique", "slice"],
)
def test_at_updates_agree_with_numpy_ufunc_at(op, idx):
    x = np.abs(V) + 0.5
    v = RNG.standard_normal(len(np.arange(5)[idx]))
    expected = x.copy()
    {
        "multiply": np.multiply,
        "divide": np.divide,
        "power": np.power,
        "min": np.minimum,
        "max": np.maximum,
    }[op].at(expected, idx, v)
    np.testing.assert_allclose(getattr(fnp.at(x)[idx], op)(v), expected, rtol=1e-15)


def test_at_add_with_a_repeated_index_is_numpys_add_at_bit_for_bit():
    """The 1-D float path summed the repeats first by bincount, x + (v1 + v2), where
    np.add.at (and vmap's rows) compute (x + v1) + v2: 6.1034999999999995 for 6.1035."""
    x, idx = np.array([1.0123, 2.0, 3.0]), np.array([0, 0, -1, 2])
    for v in (2.5456, np.array([2.5456, 0.1, 0.7, 1e-17])):
        expected = x.copy()
        np.add.at(expected, idx, v)
        assert np.array_equal(fnp.at(x)[idx].add(v), expected)
        rows = vmap(lambda r: fnp.at(r)[idx].add(v))(np.stack([x, x]))
        assert np.array_equal(rows[0], expected)


@pytest.mark.parametrize("dtype, n", [(np.int8, 300), (np.int16, 40000), (np.uint8, 300)])
def test_a_narrow_integer_index_on_a_longer_axis_gathers_scatters_and_clips(dtype, n):
    """An int8 index + n (a negative one counted from the end) overflowed int8 on an axis
    longer than 127: grad of x[i] or take, .at[i].add and .get(mode='clip') raised."""
    last = -1 if np.issubdtype(dtype, np.signedinteger) else np.iinfo(dtype).max
    x, i = np.arange(float(n)), np.array([last, 5, 5, 7], dtype=dtype)
    scattered = np.zeros(n)
    np.add.at(scattered, i, 1.0)
    assert np.array_equal(grad(lambda z: fnp.sum(z[i]))(x), scattered)
    assert np.array_equal(grad(lambda z: fnp.sum(fnp.take(z, i)))(x), scattered)
    assert np.array_equal(fnp.at(x)[i].add(1.0), x + scattered)
    assert np.array_equal(fnp.at(x)[i].get(mode="clip"), x[i])
    assert np.array_equal(fnp.at(x)[i].add(1.0, mode="drop"), x + scattered)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("dtype, n", [(np.int8, 300), (np.int16, 40000), (np.uint8, 300)])
def test_take_wrap_and_clip_of_a_narrow_integer_index_on_a_longer_axis(dtype, mode, n):
    """take(x, int8 index, mode='wrap') computed idx % n in int8 and raised OverflowError for
    n > 127 (eagerly and under every transform), and mode='clip' raised so under jit and
    vmap: NumPy's values, in each, and grad is NumPy's scatter of ones."""
    i = np.array([np.iinfo(dtype).min, np.iinfo(dtype).max, 5, 5, 7], dtype=dtype)
    x = np.arange(float(n))
    expected = np.take(x, i, mode=mode)
    f = lambda z, i: fnp.take(z, i, mode=mode)
    assert np.array_equal(f(x, i), expected)
    assert np.array_equal(jit(f)(x, i), expected)
    assert np.array_equal(jit(f)(x, i[::-1]), expected[::-1])  # a replay
    assert np.array_equal(
        vmap(f, in_axes=(None, 0))(x, np.stack([i, i[::-1]])), [expected, expected[::-1]]
    )
    scattered = np.zeros(n)
    np.add.at(scattered, np.take(np.arange(n), i, mode=mode), 1.0)
    assert np.array_equal(grad(lambda z: fnp.sum(f(z, i)))(x), scattered)


@pytest.mark.parametrize("op", ["add", "multiply", "divide", "power", "min", "max"])
def test_at_update_with_a_v_that_does_not_fit_x_idx_names_both_shapes(op):
    """A v with an extra leading length-1 axis (which NumPy's `+=`, its ufunc.at and JAX
    refuse too) raised NumPy's internal 'array is not broadcastable to correct shape' or
    'more dimensions than allowed by the axis remapping', naming neither shape."""
    x, v = np.arange(1.0, 13.0).reshape(3, 4), np.ones((1, 1, 3))
    with pytest.raises(ValueError, match=r"v has shape \(1, 1, 3\).* x\[idx\], \(2, 3\)"):
        getattr(fnp.at(x)[[0, 0], 1:], op)(v)
    if op == "add":  # (a traced x's multiply, ... drop the axis, as the assignment does)
        with pytest.raises(ValueError, match=r"v has shape \(1, 1, 3\)"):
            grad(lambda x: fnp.sum(fnp.at(x)[[0, 2], 1:].add(v)))(x)
    expected = x.copy()
    getattr(np, {"min": "minimum", "max": "maximum"}.get(op, op)).at(
        expected, ([0, 0], slice(1, None)), v[0]
    )
    np.testing.assert_array_equal(getattr(fnp.at(x)[[0, 0], 1:], op)(v[0]), expected)


def test_at_multiply_with_repeats_is_exact_at_zeros_to_order_3():
    x = np.array([2.0, 7.0])
    v = np.array([0.0, 5.0, 0.0])

    def f(v):
        return fnp.at(x)[[0, 0, 0]].multiply(v)[0]  # 2 v0 v1 v2

    np.testing.assert_array_equal(grad(f)(v), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(hessian(f)(v), [[0, 0, 10], [0, 0, 0], [10, 0, 0]])
    check_grads(f, (np.array([0.0, 5.0, -1.0]),), order=3)


def test_at_min_ties_split_evenly_between_x_and_the_updates():
    x = np.array([1.0, 5.0])
    v = np.array([1.0, 1.0, 3.0])

    def f(x, v):
        return fnp.at(x)[[0, 0, 0]].min(v)[0]  # min(x0, v0, v1, v2) with x0 == v0 == v1

    gx, gv = grad(f, argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, [1 / 3, 0.0])
    np.testing.assert_allclose(gv, [1 / 3, 1 / 3, 0.0])
    # without repeats, a tie between x and its one update halves the gradient (maximum's rule)
    g = grad(lambda x: fnp.at(x)[1].max(5.0)[1])(x)
    np.testing.assert_allclose(g, [0.0, 0.5])


def _finite_difference(f, v, h=1e-6):
    return (f(v + h) - f(v - h)) / (2 * h)


def test_at_set_of_one_value_at_a_repeated_index_is_numpys_under_every_transform():
    """A single value set at an index that repeats an element (boundary nodes listing a corner
    twice) raised "selects some elements more than once"; every write stores the same value,
    so NumPy's answer exists. The derivative in v counts each element once (finite
    differences), and in x is 0 at the elements set."""
    import fgrad

    x = np.array([1.0, 2.0, 4.0, 0.5])
    idx = np.array([0, 1, 1, 3])
    w = np.array([1.5, -2.0, 3.0, 0.25])
    expected = x.copy()
    expected[idx] = 0.7
    np.testing.assert_array_equal(fnp.at(x)[idx].set(0.7), expected)
    np.testing.assert_array_equal(fnp.at(x)[list(idx)].set(0.7), expected)

    def f(v):
        return fnp.sum(fnp.at(x)[idx].set(v) * w)

    def g(v):
        return float(np.sum(_np_set(x, idx, v) * w))

    slope = 1.5 - 2.0 + 0.25  # w summed over the elements set, each once
    np.testing.assert_allclose(_finite_difference(g, 0.7), slope, rtol=1e-6)
    for d in (grad(f), jit(grad(f)), grad(jit(f))):
        np.testing.assert_allclose(d(0.7), slope, rtol=1e-9)
    np.testing.assert_allclose(fgrad.jvp(f, (0.7,), (1.0,))[1], slope, rtol=1e-9)
    np.testing.assert_array_equal(jacrev(lambda v: fnp.at(x)[idx].set(v))(0.7), [1, 1, 0, 1])
    np.testing.assert_array_equal(jacfwd(lambda v: fnp.at(x)[idx].set(v))(0.7), [1, 1, 0, 1])
    vs = np.array([0.7, -3.0])
    np.testing.assert_array_equal(
        vmap(lambda v: fnp.at(x)[idx].set(v))(vs), [_np_set(x, idx, v) for v in vs]
    )
    np.testing.assert_allclose(vmap(grad(f))(vs), [slope, slope], rtol=1e-9)
    np.testing.assert_allclose(grad(lambda v: fnp.sum(vmap(f)(v)))(vs), [slope, slope])
    np.testing.assert_array_equal(jit(lambda v: fnp.at(x)[idx].set(v))(0.7), expected)
    # Taylor: the set is linear in (x, v), so the series of v**2 lands where v is set
    series = fgrad.jet(lambda v: fnp.at(x)[idx].set(v**2), (0.7,), ((1.0, 0.0),))[1]
    np.testing.assert_allclose(series[0], [1.4, 1.4, 0, 1.4])
    np.testing.assert_allclose(series[1], [2.0, 2.0, 0, 2.0])
    np.testing.assert_allclose(fgrad.derivative(f, 2)(0.7), 0.0)
    # in x: 0 at the elements set (x2 is kept)
    gx = grad(lambda x: fnp.sum(x.at[idx].set(0.0) * x))(x)
    np.testing.assert_array_equal(gx, [0.0, 0.0, 8.0, 0.0])
    np.testing.assert_array_equal(
        vmap(grad(lambda x: fnp.sum(x.at[idx].set(0.0) * x)))(np.stack([x, x])), [gx, gx]
    )
    # a row of v set at a repeated row: each element of a row gets one element of v
    m = x.reshape(2, 2)
    rows = np.array([0, 0, 1])
    u = np.array([5.0, 6.0])
    np.testing.assert_array_equal(fnp.at(m)[rows].set(u), _np_set(m, rows, u))
    weights = np.array([[1.0, 2.0], [3.0, 4.0]])
    gu = grad(lambda u: fnp.sum(fnp.at(m)[rows].set(u) * weights))(u)
    for k in range(2):
        e = np.eye(2)[k]
        fd = _finite_difference(lambda h: np.sum(_np_set(m, rows, u + h * e) * weights), 0.0)
        np.testing.assert_allclose(gu[k], fd, rtol=1e-6)
    np.testing.assert_array_equal(gu, [1.0 + 3.0, 2.0 + 4.0])


def _np_set(x, idx, v):
    out = np.array(x, dtype=float)
    out[idx] = v
    return out


def test_at_set_of_different_values_at_a_repeated_index_says_which():
    x = np.array([1.0, 2.0, 4.0, 0.5])
    with pytest.raises(ValueError, match=r"x\[1\] gets v\[1\] and v\[2\].*adds all the values"):
        fnp.at(x)[np.array([0, 1, 1, 3])].set(np.array([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match=r"x\[0, 1\] gets v\[0\] and v\[1\]"):
        fnp.at(x.reshape(2, 2))[[0, 0], 1].set(np.array([5.0, 6.0]))


def test_at_set_of_equal_values_at_a_repeated_index_is_numpys_and_its_derivative_the_last():
    """Equal values written to one element (x.at[[0, 0]].set([1., 1.])) were refused, saying v
    gives it "different values": the check compared v's positions. NumPy and JAX take them;
    the derivative goes to the write NumPy keeps (the last), in both modes, which is what
    finite differences of NumPy's x[idx] = v give in each element of v (JAX on CPU agrees)."""
    import fgrad

    for x, idx, v in (
        (np.zeros(3), np.array([0, 0]), np.array([1.0, 1.0])),
        (np.zeros(3), [0, 2, 0], np.array([np.nan, 2.0, np.nan])),  # NaN equal to NaN
        (np.zeros((2, 2)), np.array([1, 1]), np.array([[3.0, 4.0], [3.0, 4.0]])),
    ):
        np.testing.assert_array_equal(fnp.at(x)[idx].set(v), _np_set(x, idx, v))
    np.testing.assert_array_equal(
        fnp.at(np.zeros(3))[np.array([0, 0, 5])].set(np.array([1.0, 1.0, 2.0]), mode="drop"),
        [1, 0, 0],
    )
    with pytest.raises(ValueError, match=r"x\[0\] gets v\[0\] and v\[1\]"):
        fnp.at(np.zeros(3))[[0, 0]].set(np.array([1.0, 1.0 + 1e-16 * 3]))

    x, idx = np.array([1.0, 2.0, 4.0]), np.array([0, 2, 0])

    def f(z):  # x[0] gets z0 and z2 (equal here), x[2] gets z1
        return fnp.at(x)[idx].set(fnp.stack([z[0], z[1], z[2]]))

    z = np.array([0.5, -1.5, 0.5])
    np.testing.assert_array_equal(f(z), _np_set(x, idx, z))
    h = 1e-6
    numpys = np.stack(
        [(_np_set(x, idx, z + h * e) - _np_set(x, idx, z - h * e)) / (2 * h) for e in np.eye(3)],
        axis=1,
    )
    np.testing.assert_allclose(numpys, [[0, 0, 1], [0, 0, 0], [0, 1, 0]], atol=1e-9)
    for jac in (jacrev, jacfwd, jit(jacrev(f)), jit(jacfwd(f))):
        j = jac(f)(z) if jac in (jacrev, jacfwd) else jac(z)
        np.testing.assert_array_equal(j, [[0, 0, 1], [0, 0, 0], [0, 1, 0]])
    # the same value from one traced number, twice: its derivative counts once
    np.testing.assert_array_equal(
        grad(lambda s: fnp.sum(fnp.at(x)[idx].set(fnp.stack([s, 2 * s, s]))))(0.5), 3.0
    )
    rows = np.array([[0.5, -1.5, 0.5], [2.0, 3.0, 2.0]])
    assert np.array_equal(vmap(f)(rows), np.stack([f(r) for r in rows]))
    assert np.array_equal(vmap(jacrev(f))(rows), np.stack([jacrev(f)(r) for r in rows]))
    assert np.array_equal(vmap(jacfwd(f))(rows), np.stack([jacfwd(f)(r) for r in rows]))
    jitted = jit(f)
    for r in (*rows, *rows):  # recorded, then replayed: the comparison is a guard
        assert np.array_equal(jitted(r), f(r))
    with pytest.raises(ValueError, match=r"v gives it different values: x\[0\] gets v\[0\]"):
        jitted(np.array([0.5, -1.5, 0.25]))
    with pytest.raises(ValueError, match="v gives it different values"):
        vmap(f)(np.array([[0.5, -1.5, 0.5], [0.5, -1.5, 0.25]]))
    # at a traced index (computed under jit): the index is read, then the values compared
    traced = jit(lambda x, v: fnp.at(x)[fnp.argsort(x)[np.array([0, 0])]].set(v))
    np.testing.assert_array_equal(traced(x, np.array([7.0, 7.0])), [7.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="v gives it different values"):
        traced(x, np.array([7.0, 8.0]))
    assert fgrad.jvp(f, (z,), (np.array([1.0, 10.0, 100.0]),))[1][0] == 100.0


@pytest.mark.parametrize("method", ["subtract", "mul"])
def test_at_subtract_and_mul_are_jaxs_with_numpys_values(method):
    """.at[idx].subtract and .mul (JAX's; mul is multiply's other name) raised a bare
    AttributeError. Values: NumPy's subtract.at / multiply.at bit for bit (jax 0.10.2 gives
    the same: x.at[[0, 0]].subtract([1., 2.]) of zeros is [-3, 0, 0]); the derivatives agree
    in both modes, with finite differences, under jit and vmap."""
    ufunc = {"subtract": np.subtract, "mul": np.multiply}[method]

    def numpys(x, idx, v):
        out = np.array(x, copy=True)
        ufunc.at(out, idx, v)
        return out

    x, v = RNG.standard_normal(4), RNG.standard_normal(4)
    m = RNG.standard_normal((3, 4))
    for a, idx, u in (
        (x, np.array([0, 2, 0, -1]), v),
        (x, [1, 1], 0.75),
        (m, (np.array([0, 0]), slice(1, None)), RNG.standard_normal((2, 3))),
        (m, np.array([True, False, True]), RNG.standard_normal(4)),
        (np.arange(4), [0, 0, 3], np.array([1, 2, 3])),
        (np.arange(3, dtype=np.uint8), [0, 0], 1),  # wraps, as NumPy's does
    ):
        got = getattr(fnp.at(a)[idx], method)(u)
        assert np.array_equal(got, numpys(a, idx, u)) and got.dtype == a.dtype

    idx = np.array([0, 2, 0, -1])

    def f(x, v):
        return getattr(fnp.at(x)[idx], method)(v)

    check_grads(f, (x, v), order=2)
    for k in (0, 1):
        np.testing.assert_array_equal(jacrev(f, k)(x, v), jacfwd(f, k)(x, v))
    assert np.array_equal(jit(f)(x, v), f(x, v)) and np.array_equal(jit(f)(v, x), f(v, x))
    xs, vs = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    assert np.array_equal(vmap(f)(xs, vs), np.stack([f(a, b) for a, b in zip(xs, vs)]))
    g = grad(lambda x, v: fnp.sum(f(x, v) ** 2), argnums=(0, 1))
    for got, want in zip(vmap(g)(xs, vs), zip(*[g(a, b) for a, b in zip(xs, vs)])):
        assert np.array_equal(got, np.stack(want))
    # JAX's keywords, as the other updates take them
    out_of_bounds = np.array([0, 9, 0])
    np.testing.assert_array_equal(
        getattr(fnp.at(x)[out_of_bounds], method)(v[:3], mode="drop"),
        numpys(x, [0, 0], v[[0, 2]]),
    )
    np.testing.assert_array_equal(
        getattr(fnp.at(x)[out_of_bounds], method)(v[:3], mode="clip"),
        numpys(x, [0, 3, 0], v[:3]),
    )
    hinted = getattr(fnp.at(x)[idx], method)(v, unique_indices=False, indices_are_sorted=False)
    assert np.array_equal(hinted, numpys(x, idx, v))
    name = "subtract" if method == "subtract" else "multiply"
    with pytest.raises(TypeError, match=rf"\.at\[idx\]\.{name}\(\) takes no fill_value"):
        getattr(fnp.at(x)[idx], method)(v, mode="fill", fill_value=0.0)
    with pytest.raises(TypeError, match=rf"{name}\.at writes into .* fnp\.at\(a\)\[idx\]\.{name}"):
        grad(lambda x: fnp.sum(ufunc.at(x, [0], 1.0)))(x)


def test_an_unknown_at_method_names_the_methods():
    """x.at[idx].sub raised "'_IndexUpdate' object has no attribute 'sub'", naming an
    internal class and no method."""
    import fgrad

    def update(ref, name):
        return getattr(ref, name)(1.0)

    for call in (
        lambda name, i: update(fnp.at(np.zeros(3))[i], name),
        fgrad.jit(lambda name, i: update(fnp.at(np.zeros(3))[i], name), static_argnums=0),
    ):
        with pytest.raises(AttributeError, match=r"no method 'sub'\. Did you mean \.subtract\?"):
            call("sub", np.array([0, 1]))  # (a traced index under jit)
        with pytest.raises(AttributeError, match=r"no method 'muliply'\. Did you mean \.multiply"):
            call("muliply", np.array([0, 1]))
        with pytest.raises(AttributeError, match=r"\.set\(\), \.add\(\), \.subtract\(\),"):
            call("scatter", np.array([0, 1]))
    assert not hasattr(fnp.at(np.zeros(3))[0], "__array__")


def test_at_modes_count_a_0d_boolean_as_a_new_axis():
    """A 0-d boolean takes no axis of x (it adds one, as None does): mode='clip' clipped the
    next index against the wrong axis (X.at[True, 7] gave row 2 where JAX gives row 4), and
    'drop' refused an in-bounds index; too many indices named no shape (values: jax 0.10.2)."""
    import fgrad

    X = np.arange(15.0).reshape(5, 3)
    np.testing.assert_array_equal(fnp.at(X)[True, 7].get(mode="clip"), X[None, 4])
    jitted = fgrad.jit(lambda x: x.at[x[0, 0] < 1, 7].get(mode="clip"))
    np.testing.assert_array_equal(jitted(X), X[None, 4])
    want = X.copy()
    want[4] = -1.0
    np.testing.assert_array_equal(fnp.at(X)[True, 4].set(-1.0, mode="drop"), want)
    np.testing.assert_array_equal(fnp.at(np.arange(3.0))[True, 1].set(9.0, mode="drop"), [0, 9, 2])
    for mode in ("clip", "drop", "fill"):
        with pytest.raises(IndexError, match="array is 2-dimensional, but 3 were indexed"):
            fnp.at(np.zeros((4, 6)))[np.array([0, 1]), :, np.array([1, 2])].add(1.0, mode=mode)


def test_at_takes_jaxs_keywords():
    """mode=, fill_value=, unique_indices= and indices_are_sorted= raised TypeError naming an
    internal class, and .apply AttributeError. The hints are accepted; mode='clip' is JAX's
    (a negative index counted from the end, then clipped; values from jax 0.10.2); 'drop' and
    'fill' are NumPy's indexing in bounds (out of bounds: the next test)."""
    import fgrad

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fnp.at(x)[np.array([-5, -1, 5])].get(mode="clip"), [1, 3, 3])
    np.testing.assert_array_equal(fnp.at(x)[np.array([-4, 1])].add(9.0, mode="clip"), [10, 11, 3])
    hinted = fnp.at(x)[np.array([0, 2])].set(
        np.array([7.0, 8.0]), unique_indices=True, indices_are_sorted=True
    )
    np.testing.assert_array_equal(hinted, [7.0, 2.0, 8.0])
    np.testing.assert_array_equal(fnp.at(x)[np.array([0, 1])].set(9.0, mode="drop"), [9, 9, 3])
    assert fnp.at(x)[1].get(mode="fill", fill_value=0.0) == 2.0
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(
        fnp.at(m)[..., np.array([7, -9])].get(mode="clip"), m[..., [3, 0]]
    )
    np.testing.assert_array_equal(fnp.at(m)[None, 5, 1:].get(mode="clip"), m[None, 2, 1:])
    # clip under transforms: the clipped index is a constant; d/dx sum((2 x[i])**2) = 8 x
    idx = np.array([-4, 1, 7])

    def f(x):
        return fnp.sum(fnp.at(x)[idx].multiply(2.0, mode="clip") ** 2)

    for g in (grad(f), jit(grad(f)), grad(jit(f))):
        np.testing.assert_array_equal(g(x), 8 * x)
    np.testing.assert_array_equal(vmap(grad(f))(np.stack([x, -x])), [8 * x, -8 * x])
    np.testing.assert_array_equal(fgrad.jvp(f, (x,), (np.ones(3),))[1], np.sum(8 * x))
    with pytest.raises(ValueError, match="mode is one of"):
        fnp.at(x)[0].set(9.0, mode="wrap")
    with pytest.raises(ValueError, match="fill_value=...\\) needs mode='fill'"):
        fnp.at(x)[0].get(fill_value=2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        fnp.at(x)[0].add(1.0, foo=2)
    with pytest.raises(TypeError, match=r"add\(\) takes no fill_value="):  # as JAX's
        fnp.at(x)[0].add(1.0, mode="fill", fill_value=2.0)
    with pytest.raises(NotImplementedError, match=r"apply\(f\) is not supported.*\.set\(f\("):
        fnp.at(x)[0].apply(np.sin)
    at_argmax = jit(
        lambda x: x.at[fnp.argmax(x)].get(mode="promise_in_bounds", unique_indices=True)
    )
    assert at_argmax(x) == 3.0
    with pytest.raises(NotImplementedError, match="mode='clip'.*traced"):
        jit(lambda x: x.at[fnp.argmax(x)].get(mode="clip"))(x)


def _in_bounds(i, n):
    """JAX's rule for mode='drop' and 'fill' (jax 0.10.2): -n <= i < n."""
    return (i >= -n) & (i < n)


def test_at_drop_and_fill_out_of_bounds_are_jaxs():
    """mode='drop' skipped no update and mode='fill' filled nothing: an index out of bounds
    raised IndexError. JAX's semantics (checked in jax 0.10.2): an index i of an axis of
    length n is in bounds where -n <= i < n; an update there is dropped (under 'fill' too),
    with the element of v meant for it (gradient 0); get gives fill_value there (default nan
    for floats, the smallest signed integer, the largest unsigned one, True), no gradient.
    Expected values are written with NumPy on the in-bounds positions."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    i = np.array([-6, -5, -1, 0, 4, 5, 7, 2])  # repeats (-5 is 0, -1 is 4) and out of bounds
    ok = _in_bounds(i, 5)
    v = 10.0 * np.arange(1.0, 9.0)
    expected = x.copy()
    np.add.at(expected, i[ok], v[ok])
    np.testing.assert_array_equal(fnp.at(x)[i].add(v, mode="drop"), expected)
    np.testing.assert_array_equal(fnp.at(x)[i].add(v, mode="fill"), expected)
    expected = x.copy()
    np.add.at(expected, i[ok], 7.0)
    np.testing.assert_array_equal(fnp.at(x)[i].add(7.0, mode="drop"), expected)
    for op, ufunc in [("multiply", np.multiply), ("divide", np.divide), ("power", np.power)]:
        for w in (v / 20, 1.5):
            expected = x.copy()
            ufunc.at(expected, i[ok], np.broadcast_to(w, i.shape)[ok])
            got = getattr(fnp.at(x)[i], op)(w, mode="drop")
            np.testing.assert_allclose(got, expected, rtol=1e-15)
    for op, ufunc in [("min", np.minimum), ("max", np.maximum)]:
        w = np.array([9.0, 0.0, 9.0, 2.0, 0.5, 9.0, 9.0, 1.0])
        expected = x.copy()
        ufunc.at(expected, i[ok], w[ok])
        np.testing.assert_array_equal(getattr(fnp.at(x)[i], op)(w, mode="drop"), expected)
    unique = np.array([-6, 1, 3, 9])
    expected = x.copy()
    expected[unique[_in_bounds(unique, 5)]] = v[:4][_in_bounds(unique, 5)]
    np.testing.assert_array_equal(fnp.at(x)[unique].set(v[:4], mode="drop"), expected)
    np.testing.assert_array_equal(fnp.at(x)[7].set(1.0, mode="drop"), x)
    with pytest.raises(ValueError, match=r"x\[0\] gets v\[1\] and v\[3\]"):  # the v given
        fnp.at(x)[i].set(v, mode="drop")
    # get: the gathered values in bounds, fill_value out of bounds
    np.testing.assert_array_equal(
        fnp.at(x)[i].get(mode="fill", fill_value=-1.0), np.where(ok, x[np.where(ok, i, 0)], -1)
    )
    np.testing.assert_array_equal(
        fnp.at(x)[i].get(mode="fill"), np.where(ok, x[np.where(ok, i, 0)], np.nan)
    )
    assert np.isnan(fnp.at(x)[-6].get(mode="fill"))
    np.testing.assert_array_equal(  # 'drop' fills a gather, as in JAX
        fnp.at(x)[i].get(mode="drop", fill_value=3.0), np.where(ok, x[np.where(ok, i, 0)], 3)
    )
    for a, fill in [
        (np.arange(5), np.iinfo(np.int64).min),
        (np.arange(5, dtype=np.uint8), 255),
        (np.arange(5) > 2, True),
    ]:
        got = fnp.at(a)[i].get(mode="fill")
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, np.where(ok, a[np.where(ok, i, 0)], fill))
    np.testing.assert_array_equal(  # fill_value in x's dtype, as in JAX
        fnp.at(np.arange(5))[i].get(mode="fill", fill_value=2.5),
        np.where(ok, i % 5, 2),
    )


@pytest.mark.parametrize("method", ["set", "add", "multiply", "divide", "power", "min", "max"])
@pytest.mark.parametrize("mode", ["drop", "fill"])
def test_at_update_dropping_every_index_returns_a_copy(method, mode):
    """With every index out of bounds, .at[idx].<method>(v, mode='drop'|'fill') returned x
    itself, so writing into the result wrote into the caller's x; it is a copy, equal to x,
    as when some index is kept."""
    x = np.arange(1.0, 7.0).reshape(3, 2)
    for idx in [7, (np.array([3, -4]), 0)]:
        y = getattr(fnp.at(x)[idx], method)(2.0, mode=mode)
        assert np.array_equal(y, np.arange(1.0, 7.0).reshape(3, 2))
        assert not np.shares_memory(y, x)
        y[0, 0] = 999.0
        assert x[0, 0] == 1.0


def test_at_drop_and_fill_with_slices_none_ellipsis_and_masks():
    """The out-of-bounds positions of mixed indices, with NumPy's placement of the block of
    advanced indices (first when they are not adjacent); values as jax 0.10.2's."""
    m = np.arange(12.0).reshape(3, 4)
    rows = np.array([0, 3, -4, 2])
    ok = _in_bounds(rows, 3)
    got = fnp.at(m)[rows, 1:].get(mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(got, np.where(ok[:, None], m[np.where(ok, rows, 0), 1:], -1))
    w = 100 + np.arange(12.0).reshape(4, 3)
    expected = m.copy()
    expected[rows[ok], 1:] = w[ok]
    np.testing.assert_array_equal(fnp.at(m)[rows, 1:].set(w, mode="drop"), expected)
    row = np.array([7.0, 8.0, 9.0])  # the same row for repeated rows: allowed, as in bounds
    expected = m.copy()
    expected[0, 1:] = row
    np.testing.assert_array_equal(
        fnp.at(m)[np.array([0, 0, 5]), 1:].set(row, mode="drop"), expected
    )
    np.testing.assert_array_equal(fnp.at(m)[5].get(mode="fill", fill_value=-1.0), -np.ones(4))
    np.testing.assert_array_equal(fnp.at(m)[-4].set(7.0, mode="drop"), m)
    cols = np.array([0, 4, -1])
    got = fnp.at(m)[None, ..., cols].get(mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(got, np.where(_in_bounds(cols, 4), m[None, :, [0, 0, 3]], -1))
    t = np.arange(24.0).reshape(2, 3, 4)
    first, last = np.array([0, 5]), np.array([1, 9])  # not adjacent: the block comes first
    got = fnp.at(t)[first, :, last].get(mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(got, [t[0, :, 1], [-1, -1, -1]])
    w = np.arange(6.0).reshape(2, 3)
    expected = np.zeros((2, 3, 4))
    expected[0, :, 1] = w[0]
    got = fnp.at(np.zeros((2, 3, 4)))[first, :, last].set(w, mode="drop")
    np.testing.assert_array_equal(got, expected)
    mask, cols = np.array([True, False, True]), np.array([1, 9])  # a mask is its nonzero()
    expected = m.copy()
    expected[0, 1] += 5.0
    got = fnp.at(m)[mask, cols].add(np.array([5.0, 6.0]), mode="drop")
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match=r"v of shape \(3,\) does not broadcast.*\(8,\)"):
        fnp.at(np.ones(5))[np.arange(8)].add(np.ones(3), mode="drop")


def test_at_drop_and_fill_under_transforms():
    """Gradients (finite differences), jit (first call and replay, bit for bit eager), vmap
    (a loop) and jvp of the rewritten index; the dropped elements of v and the filled
    positions get gradient 0."""
    import fgrad

    x = np.array([1.0, 2.0, -3.0, 4.0, 5.0])
    i = np.array([-6, -5, -1, 0, 4, 5, 7, 2])
    ok = _in_bounds(i, 5)
    v = np.linspace(0.5, 2.0, 8)
    rows = np.array([0, 3, -4, 2])
    m = np.arange(1.0, 13.0).reshape(3, 4)

    def updates(x, v):
        y = fnp.at(x)[i].add(v, mode="drop") * fnp.at(x)[i].multiply(v, mode="fill")
        y = fnp.at(y)[i].max(v, mode="drop") + fnp.at(x)[i].add(2.0 * v[0], mode="drop")
        return fnp.sum(fnp.sin(y) * fnp.at(x)[i].get(mode="fill", fill_value=0.5)[:5])

    def mixed(m, w):
        return fnp.sum(
            fnp.at(m)[rows, 1:].set(w, mode="drop") ** 2
            + fnp.at(m)[rows, 1:].get(mode="fill", fill_value=0.0).sum() * m
        )

    check_grads(updates, (x, v), order=2)
    check_grads(mixed, (m, np.arange(12.0).reshape(4, 3)), order=2)
    g_v = grad(lambda v: fnp.sum(fnp.at(x)[i].add(v, mode="drop") ** 2))(v)
    expected = np.zeros(8)
    added = x.copy()
    np.add.at(added, i[ok], v[ok])
    expected[ok] = 2 * added[i[ok]]
    np.testing.assert_allclose(g_v, expected, rtol=1e-15)  # (order of the sums)
    g_x = grad(lambda x: fnp.sum(fnp.at(x)[i].get(mode="fill", fill_value=2.0) ** 2))(x)
    expected = np.zeros(5)
    np.add.at(expected, i[ok], 2 * x[i[ok]])
    np.testing.assert_array_equal(g_x, expected)
    for f, args in [(updates, (x, v)), (mixed, (m, np.ones((4, 3))))]:
        replayed = jit(f)
        for _ in range(2):
            np.testing.assert_array_equal(replayed(*args), f(*args))
        np.testing.assert_array_equal(jit(grad(f))(*args), grad(f)(*args))
        tangents = tuple(np.cos(np.arange(np.size(a))).reshape(np.shape(a)) for a in args)
        _, t = fgrad.jvp(f, args, tangents)
        np.testing.assert_allclose(
            t,
            np.sum(
                np.concatenate(
                    [np.ravel(gi * ti) for gi, ti in zip(grad(f, argnums=(0, 1))(*args), tangents)]
                )
            ),
            rtol=1e-12,
        )
    d = np.cos(np.arange(5.0))  # Taylor mode along a line, against nested grad

    def line(s):
        return updates(x + s * d, v)

    for order, nested in [(2, grad(grad(line))), (3, grad(grad(grad(line))))]:
        np.testing.assert_allclose(
            fgrad.derivative(line, order=order)(0.0), nested(0.0), rtol=1e-12
        )
    xs, vs = np.stack([x, -x, 2 * x]), np.stack([v, v**2, -v])
    for in_axes in [(0, 0), (0, None), (None, 0)]:
        args = [xs if in_axes[0] == 0 else x, vs if in_axes[1] == 0 else v]
        loop = [
            updates(*(a[k] if ax == 0 else a for a, ax in zip(args, in_axes))) for k in range(3)
        ]
        batched = vmap(updates, in_axes=in_axes)(*args)
        np.testing.assert_allclose(batched, loop, rtol=1e-12)  # (order of the sums)
    got = vmap(lambda x: fnp.at(x)[i].get(mode="fill", fill_value=-1.0))(xs)
    np.testing.assert_array_equal(got, np.where(ok, xs[:, np.where(ok, i, 0)], -1))


# --- indexing forms and errors --------------------------------------------------------------------


def test_every_indexing_form_matches_numpy_and_its_gradient_is_the_scatter():
    x = RNG.standard_normal((2, 3, 4))
    for idx in [
        np.s_[[0, 1, 1], :, [3, 0, 3]],
        np.s_[1, ..., [0, 0]],
        np.s_[None, ..., ::-2],
        x > 0,
        np.s_[[], 1],
        np.s_[np.bool_(True)],
        np.s_[[[1]], [0, 2]],
    ]:
        np.testing.assert_array_equal(fnp.at(x)[idx].get(), x[idx])
        w = RNG.standard_normal(x[idx].shape)
        expected = np.zeros_like(x)
        np.add.at(expected, idx, w)
        np.testing.assert_array_equal(grad(lambda x: fnp.sum(x[idx] * w))(x), expected)


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_odd_reflection_is_numpys(mode):
    # 2 * edge - reflected, bit for bit for a pad no wider than the array; a wider one
    # reflects NumPy's own pad again, a sum in another order (equal up to rounding)
    for shape in [(1,), (2,), (5,), (3, 4), (2, 1, 3)]:
        x = RNG.standard_normal(shape)
        for pw in [1, (0, 2), [(1, 0)] * len(shape), 6, (7, 0)]:
            expected = np.pad(x, pw, mode=mode, reflect_type="odd")
            got = fnp.pad(x, pw, mode=mode, reflect_type="odd")
            narrow = max(np.ravel(pw)) < min(shape) - (mode == "reflect")
            if narrow:
                np.testing.assert_array_equal(got, expected)
            np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
            replayed = jit(lambda x: fnp.pad(x, pw, mode=mode, reflect_type="odd"))
            np.testing.assert_array_equal(replayed(x), got)
    # linear: the Jacobian's columns are NumPy's pads of the unit vectors
    jac = jacfwd(lambda x: fnp.pad(x, (4, 2), mode=mode, reflect_type="odd"))(np.ones(3))
    columns = [np.pad(e, (4, 2), mode=mode, reflect_type="odd") for e in np.eye(3)]
    np.testing.assert_array_equal(jac, np.stack(columns, axis=1))


def test_traced_indices_are_refused_with_a_message():
    # (an integer cast of a traced value is already a constant: astype(int) has no derivative)
    for f in [
        lambda x: fnp.take(x, x),
        lambda x: fnp.repeat(x, x),
        lambda x: x[x],
        lambda x: fnp.at(x)[x].add(1.0),
    ]:
        with pytest.raises(TypeError, match="indices have no derivative"):
            grad(lambda x: fnp.sum(f(x)))(np.ones(3))


def test_errors_name_the_argument_and_say_what_to_do():
    with pytest.raises(ValueError, match="mode 'odd' is not supported.*'linear_ramp'"):
        fnp.pad(np.ones(3), 1, mode="odd")
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.take(np.ones(3), [3])
    with pytest.raises(ValueError, match="use array_split"):
        fnp.split(np.ones(5), 2)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        fnp.diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="more than once and v gives it different values"):
        fnp.at(np.ones(3))[[0, 0]].set(np.array([1.0, 2.0]))


# --- the names added for issue 15: partition, rollaxis, unique, stacks of one array ---------------


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_unique_values_take_the_gradient_of_their_first_occurrence(jac):
    x = np.array([2.0, 1.0, 2.0, 3.0, 1.0])  # unique: [1, 2, 3] from positions 1, 0, 3
    np.testing.assert_array_equal(jac(fnp.unique)(x), np.eye(5)[[1, 0, 3]])
    rows = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]])  # unique rows: [0, 1], [1, 2]
    j = jac(lambda a: fnp.unique(a, axis=0))(rows)
    np.testing.assert_array_equal(j.reshape(4, 6), np.eye(6)[[2, 3, 0, 1]])
    values, index, inverse, counts = fnp.unique(x, True, True, True)
    assert index.tolist() == [1, 0, 3] and inverse.tolist() == [1, 0, 1, 2, 0]
    assert counts.tolist() == [2, 2, 1] and values.tolist() == [1.0, 2.0, 3.0]


def test_unique_of_nans_keeps_numpys_equal_nan():
    x = np.array([np.nan, 1.0, np.nan])
    for equal_nan in (True, False):
        got = fgrad_value(lambda a: fnp.unique(a, equal_nan=equal_nan), x)
        np.testing.assert_array_equal(got, np.unique(x, equal_nan=equal_nan))
    g = grad(lambda a: fnp.nansum(fnp.unique(a)))(x)
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])


def test_unique_under_vmap_counts_a_nan_after_a_number_as_a_value():
    # The rows' stable sort puts NaNs last, and the first NaN begins a run of its own. It
    # was merged into the number before it: under vmap, [1, 2, nan] had the unique values
    # [1, 2] (silently, beside a row with two: [1, 2, 2]), and the NaN's gradient was 0.
    rows = np.array([[1.0, 2.0, np.nan], [1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(vmap(fnp.unique)(rows), [np.unique(r) for r in rows])
    with pytest.raises(ValueError, match="different shapes"):  # 3 values and 2: no stack
        vmap(fnp.unique)(np.array([[1.0, 2.0, np.nan], [1.0, 2.0, 2.0]]))

    def f(a):
        return fnp.sum(fnp.unique(a) ** 2)

    rows = np.array([[1.0, 2.0, 3.0], [np.nan, 4.0, 5.0]])
    np.testing.assert_array_equal(vmap(grad(f))(rows), [grad(f)(r) for r in rows])


@pytest.mark.parametrize("where", [{"axis": 0}, {"sorted": False}, {"axis": 0, "sorted": False}])
def test_unique_with_several_index_outputs_under_vmap_is_the_loop(where):
    # the primitive's tuple (indices, inverse, counts) was stacked as one array per row: a
    # raw NumPy error, or right only where every output had the same length
    x = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]])
    rows = np.stack([x, 2 * x, x[::-1]])
    rows = rows if "axis" in where else rows.reshape(3, -1)
    for flags in [
        {"return_inverse": True},
        {"return_index": True, "return_counts": True},
        {"return_index": True, "return_inverse": True, "return_counts": True},
    ]:

        def f(r):
            return fnp.unique(r, **flags, **where)

        loop = [np.unique(r, **flags, **where) for r in rows]
        for got in (vmap(f)(rows), vmap(jit(f))(rows)):
            for k, out in enumerate(got):
                np.testing.assert_array_equal(out, [row[k] for row in loop])


def test_unique_unsorted_keeps_numpys_order_traced_or_not():
    # unsorted, NumPy finds the unique values by hashing, in an order of its own
    rng = np.random.default_rng(3)
    z = rng.normal(size=12) + 1j * rng.normal(size=12)
    for x in (z, np.concatenate([z, z[::-1]]), z.real, np.array([2.0, np.nan, 1.0, np.nan])):
        expected = np.unique(x, sorted=False)
        np.testing.assert_array_equal(fnp.unique(x, sorted=False), expected)
        np.testing.assert_array_equal(
            fgrad_value(lambda a: fnp.unique(a, sorted=False), x), expected
        )
    # each value's gradient goes to its first occurrence
    x = np.array([2.0 + 1j, 1.0, 2.0 + 1j, 3.0j])
    j = jacrev(lambda a: fnp.unique(a, sorted=False), holomorphic=True)(x)
    first = [list(x).index(v) for v in np.unique(x, sorted=False)]
    np.testing.assert_array_equal(j, np.eye(4)[first])


def fgrad_value(f, *args):
    from fgrad import vjp

    return vjp(f, *args)[0]


def test_partition_is_numpys_arrangement_and_its_gradient_a_permutation():
    x = RNG.standard_normal((6, 3))
    for kth in (0, 2, (1, 4), -1):
        got = fgrad_value(lambda a: fnp.partition(a, kth, axis=0), x)
        np.testing.assert_array_equal(got, np.partition(x, kth, axis=0))
        j = jacrev(lambda a: fnp.partition(a, kth, axis=0))(x).reshape(18, 18)
        assert sorted(j.sum(axis=0)) == [1.0] * 18 and sorted(j.sum(axis=1)) == [1.0] * 18
    # the k-th value is the k-th smallest: its gradient is at the element of that rank
    np.testing.assert_array_equal(
        grad(lambda a: fnp.partition(a, 2)[2])(V), np.eye(5)[np.argsort(V)[2]]
    )
    with pytest.raises(ValueError, match="kth"):
        fnp.partition(fgrad_value(lambda a: a, V), 7)
    assert fnp.argpartition(V, 2)[2] == np.argsort(V)[2]


def test_rollaxis_is_numpys_for_every_start():
    for axis in range(-3, 3):
        for start in range(-3, 4):
            want = np.rollaxis(C, axis, start)
            got = fgrad_value(lambda a: fnp.rollaxis(a, axis, start), C)
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="start"):
        fnp.rollaxis(C, 0, 4)


@pytest.mark.parametrize("name", ["vstack", "hstack", "column_stack", "dstack"])
def test_a_stack_of_one_array_joins_its_rows_as_numpy_does(name):
    for a in (X, C, V):
        want = getattr(np, name)(a)
        got = fgrad_value(getattr(fnp, name), a)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # a permutation (with reshapes) of the elements: every element's gradient is 1
    np.testing.assert_array_equal(grad(lambda a: fnp.sum(getattr(fnp, name)(a) ** 2))(X), 2 * X)
    with pytest.raises(TypeError, match="0-d"):
        grad(lambda a: fnp.sum(getattr(fnp, name)(a[0, 0])))(X)


def test_moveaxis_swapaxes_transpose_refuse_an_axis_out_of_bounds_as_numpy_does():
    # `% ndim` wrapped them into other axes, silently: swapaxes(x, 0, 5) of a 2-d x was x.T,
    # traced or not; NumPy raises AxisError
    x = np.arange(6.0).reshape(2, 3)
    calls = [
        (lambda m, x: m.swapaxes(x, 0, 5), "axis2: axis 5"),
        (lambda m, x: m.swapaxes(x, -3, 0), "axis1: axis -3"),
        (lambda m, x: m.moveaxis(x, 2, 0), "source: axis 2"),
        (lambda m, x: m.moveaxis(x, [0, 1], [1, -3]), "destination: axis -3"),
        (lambda m, x: m.transpose(x, (0, 3)), "axis 3"),
    ]
    for call, message in calls:
        with pytest.raises(np.exceptions.AxisError, match=message):
            call(np, x)  # NumPy's own error, the same type and words
        with pytest.raises(np.exceptions.AxisError, match=message):
            call(fnp, x)
        with pytest.raises(np.exceptions.AxisError, match=message):
            grad(lambda x, c=call: fnp.sum(c(fnp, x)))(x)
        with pytest.raises(np.exceptions.AxisError, match=message):
            jit(lambda x, c=call: c(fnp, x))(x)
    # repeated or unpaired axes: NumPy's ValueErrors (it was "axes don't match array")
    for src, dst, message in (([0, 0], [0, 1], "repeated axis"), ([0, 1], [0], "same number")):
        for m in (np, fnp):
            with pytest.raises(ValueError, match=message):
                m.moveaxis(x, src, dst)
    np.testing.assert_array_equal(fnp.swapaxes(x, -1, -2), x.T)  # in bounds: as before
    np.testing.assert_array_equal(
        fnp.moveaxis(x[None], [0, -1], [-1, 0]), np.moveaxis(x[None], [0, -1], [-1, 0])
    )


def test_joins_and_expand_dims_refuse_an_axis_out_of_bounds_as_numpy_does():
    # concatenate wrapped an axis out of bounds with `%` (axis=3 of 1-d arrays joined along
    # axis 0, silently; NumPy raises AxisError); 0-d arrays raised ZeroDivisionError.
    a = np.ones(2)
    for join, axis in ((fnp.concatenate, 1), (fnp.concatenate, -2), (fnp.stack, 2)):
        with pytest.raises(np.exceptions.AxisError, match=f"axis {axis} is out of bounds"):
            join([a, a], axis=axis)
        with pytest.raises(np.exceptions.AxisError):
            grad(lambda x, j=join, ax=axis: fnp.sum(j([x, x], axis=ax)))(a)
        with pytest.raises(np.exceptions.AxisError):  # NumPy's own error, the same type
            {fnp.concatenate: np.concatenate, fnp.stack: np.stack}[join]([a, a], axis=axis)
    with pytest.raises(np.exceptions.AxisError, match="axis 5 is out of bounds"):
        fnp.expand_dims(np.ones((2, 3)), 5)  # it was (2, 3, 1)
    with pytest.raises(ValueError, match="repeated axis"):
        fnp.expand_dims(np.ones((2, 3)), (0, -4))  # it was (1, 1, 2, 3)
    with pytest.raises(ValueError, match="repeated axis"):
        np.expand_dims(np.ones((2, 3)), (0, -4))
    assert fnp.expand_dims(np.ones((2, 3)), (0, -1)).shape == (1, 2, 3, 1)
    with pytest.raises(ValueError, match="zero-dimensional arrays cannot be concatenated"):
        fnp.concatenate([np.float64(1.0), np.float64(2.0)])
    np.testing.assert_array_equal(fnp.concatenate([a, 2 * a], axis=-1), [1, 1, 2, 2])


def test_flip_and_transpose_of_a_number_have_numpys_type():
    """flip of a 0-d value is NumPy's scalar (m[()]) and transpose of a Python number is a 0-d
    array (np.asarray); fgrad gave a 0-d array and the number as given."""
    for x in (0.3, 2, np.float64(0.3), np.float32(0.3), np.array(0.3)):
        for name in ("flip", "transpose", "permute_dims"):
            want, got = getattr(np, name)(x), getattr(fnp, name)(x)
            assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype


def test_shaping_that_moves_nothing_returns_numpys_array_never_the_callers_object():
    """transpose, permute_dims, swapaxes, moveaxis and broadcast_to with identity axes (and
    flip of no axis, rot90 by 0) returned the caller's list or array itself: `* 2` then
    repeated the list, and the result aliased the input object. Each now returns what NumPy
    returns: a new array (a view of an array), and diff(n=0) the input itself, as NumPy's."""
    calls = {
        "transpose": lambda m, a: m.transpose(a, tuple(range(np.ndim(a)))),
        "transpose of 1-d": lambda m, a: m.transpose(np.ravel(a).tolist()),
        "permute_dims": lambda m, a: m.permute_dims(a, tuple(range(np.ndim(a)))),
        "swapaxes": lambda m, a: m.swapaxes(a, 0, 0),
        "swapaxes negative": lambda m, a: m.swapaxes(a, -1, np.ndim(a) - 1),
        "moveaxis": lambda m, a: m.moveaxis(a, 0, 0),
        "broadcast_to": lambda m, a: m.broadcast_to(a, np.shape(a)),
        "flip": lambda m, a: m.flip(a, ()),
        "rot90": lambda m, a: m.rot90(a, 0),
        "diff": lambda m, a: m.diff(a, n=0),
    }
    for what, call in calls.items():
        for a in ([[1.0, 2.0], [3.0, 4.0]], np.array([[1.0, 2.0], [3.0, 4.0]])):
            want, got = call(np, a), call(fnp, a)
            assert type(got) is type(want) and (got is a) == (want is a), what
            np.testing.assert_array_equal(got * 2, want * 2)
            if isinstance(want, np.ndarray):
                assert got.flags.writeable == want.flags.writeable, what
    # a list holding traced values is stacked, differentiably, as by a transpose that moves
    # (the list came back as it was, and NumPy's `*` could not read it)
    w = np.array([[1.0, 3.0]])
    moves_nothing = (
        lambda a: fnp.transpose(a, (0, 1)),
        lambda a: fnp.moveaxis(a, 0, 0),
        lambda a: fnp.swapaxes(a, 1, 1),
        lambda a: fnp.broadcast_to(a, (1, 2)),
    )
    for f in moves_nothing:
        assert grad(lambda x, f=f: fnp.sum(f([[x, 2 * x]]) * w))(1.0) == 7.0


def test_at_subtract_and_set_work_in_xs_dtype():
    """Review (probe DL): subtract negated v in v's own dtype, where it wraps (0 - [1, 2] of
    uint8 gave [509, 0, 0]; -int8(-128) is -128) or has no negative (bool v raised); set
    compared repeated values in v's dtype ([0.5, 0.7] into integers is one value, 0)."""
    for x_dtype, v in [
        (np.float64, np.array([1, 2], np.uint8)),
        (np.float64, np.array([-128, 0], np.int8)),
        (np.int64, np.array([1, 2], np.uint8)),
        (np.float64, np.array([True, True])),
    ]:
        x = np.zeros(3, x_dtype)
        want = x.copy()
        np.subtract.at(want, [0, 0], v)
        got = fnp.at(x)[[0, 0]].subtract(v)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        jitted = jit(lambda x, i, v=v: fnp.at(x)[fnp.stack([i, i])].subtract(v))
        assert jitted(x, 0).tobytes() == jitted(x, 0).tobytes() == want.tobytes()
    want = np.zeros(3, np.int64)
    want[[0, 0]] = np.array([0.5, 0.7])
    got = fnp.at(np.zeros(3, np.int64))[[0, 0]].set(np.array([0.5, 0.7]))
    assert got.tobytes() == want.tobytes()


def test_reshape_to_another_size_names_the_input_and_says_to_use_minus_one():
    """NumPy's "cannot reshape array of size 12 into shape (5,)" named neither a's shape nor
    its dtype; eagerly and under grad, jit and vmap (one row's shape) fgrad's does."""
    a = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError):
        np.reshape(a, (5,))
    said = (
        r"reshape: cannot reshape a \(shape \(3, 4\) and dtype float32, 12 "
        r"elements\) into shape \(5,\).*-1"
    )
    for call in (
        lambda: fnp.reshape(a, 5),
        lambda: grad(lambda x: fnp.sum(x.reshape(5)))(a.astype(float)),
        lambda: jit(lambda x: x.reshape(5))(a),
        lambda: vmap(lambda x: x.reshape(5))(np.ones((2, 3, 4), np.float32)),
        lambda: grad(lambda x: fnp.sum(fnp.reshape(x, 5, order="F")))(a.astype(float)),
    ):
        with pytest.raises(ValueError, match=said.replace("float32", "float(32|64)")):
            call()
    with pytest.raises(ValueError, match=r"other axes hold 5 elements, which do not divide 12"):
        fnp.reshape(a, (5, -1))
    with pytest.raises(ValueError, match="only one axis may be -1"):
        fnp.reshape(a, (-1, -1))
    assert vmap(lambda x: x.reshape(-1, 2))(np.ones((2, 3, 4))).shape == (2, 6, 2)


def test_joins_of_arrays_that_do_not_fit_name_every_shape_and_dtype():
    """stack said "all input arrays must have the same shape" (no shape), concatenate and
    vstack NumPy's sizes of two arrays (no dtype, no advice); NumPy refuses the same."""
    a, b = np.ones((3, 4)), np.ones((5, 2), np.float32)
    for theirs in (np.stack, np.concatenate, np.vstack):
        with pytest.raises(ValueError):
            theirs([a, b])
    shapes = r"shapes \(3, 4\), \(5, 2\) and dtypes float64, float32"
    cases = (
        (fnp.stack, "stack: all arrays must have the same shape, got " + shapes),
        (fnp.concatenate, r"concatenate: .*every axis but axis 0.*got " + shapes + "; pad"),
        (fnp.vstack, r"vstack: .*every axis but axis 0.*got " + shapes),
    )
    for join, said in cases:
        with pytest.raises(ValueError, match=said):
            join([a, b])
        with pytest.raises(ValueError, match=said):
            grad(lambda x, j=join: fnp.sum(j([x, b])))(a)
        with pytest.raises(ValueError, match=said):
            jit(lambda x, j=join: j([x, b]))(a)
    with pytest.raises(ValueError, match=r"hstack: .*axis 1.*shapes \(3, 4\), \(2, 2\)"):
        fnp.hstack([a, np.ones((2, 2))])
    with pytest.raises(ValueError, match=r"same number of dimensions; got shapes \(3, 4\), \(3,\)"):
        fnp.concatenate([a, np.ones(3)])
    with pytest.raises(ValueError, match=r"stack: .*shapes \(4,\), \(3,\)"):  # one row's shape
        vmap(lambda x: fnp.stack([x, np.ones(3)]))(np.ones((2, 4)))


def test_joins_refuse_an_axis_that_is_not_an_int_by_name():
    """A non-int axis leaked Python's errors from the bounds check ("truth value of an array
    is ambiguous" for `concatenate(a, b)`, "'<=' not supported" for None or '0'), and a 0-d
    array to stack an IndexError."""
    a = np.ones((3, 4))
    for theirs in (lambda: np.concatenate(a, a), lambda: np.stack([a, a], axis=None)):
        with pytest.raises(TypeError):
            theirs()
    with pytest.raises(
        TypeError,
        match=(
            r"concatenate: axis must be an int, got an array of shape \(3, 4\) and "
            r"dtype float64; pass the arrays as one list: concatenate\(\[a, b\]\)"
        ),
    ):
        grad(lambda x: fnp.sum(fnp.concatenate(x, x)))(a)
    with pytest.raises(
        TypeError, match="stack: axis must be an int, got None of type NoneType; pass an int"
    ):
        fnp.stack([a, a], axis=None)
    with pytest.raises(TypeError, match="concatenate: axis must be an int, got '0' of type str"):
        fnp.concatenate([a, a], axis="0")
    with pytest.raises(
        TypeError,
        match=(
            r"stack: arrays must be a sequence of arrays, got one 0-d array \(shape "
            r"\(\) and dtype float64\); pass them as a list"
        ),
    ):
        grad(lambda x: fnp.sum(fnp.stack(x[0, 0])))(a)
    np.testing.assert_array_equal(fnp.stack([a, a], axis=np.int64(1)), np.stack([a, a], axis=1))


def test_take_out_of_bounds_names_the_index_and_the_array():
    """take said "an index is out of bounds for axis 1 with size 4": less than NumPy (which
    names the index); with axis=None the axis of the flattened array the user never sees."""
    a = np.arange(12.0).reshape(3, 4)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        np.take(a, [0, 7], axis=1)
    with pytest.raises(
        IndexError,
        match=(
            r"take: index 7 is out of bounds for axis 1 of a \(shape \(3, 4\) and "
            r"dtype float64\), whose length is 4.*\[-4, 3\].*mode='wrap'"
        ),
    ):
        grad(lambda x: fnp.sum(fnp.take(x, [0, 7], axis=1)))(a)
    with pytest.raises(
        IndexError,
        match=(
            r"take: index -13 is out of bounds for the flattened a \(shape \(3, 4\) "
            r"and dtype float64\), whose length is 12"
        ),
    ):
        fnp.take(a, -13)
