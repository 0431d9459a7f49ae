"""The set routines, bitwise functions, data-type queries and index helpers of fgrad.numpy
(sets.py, bitwise.py, datatypes.py, indexing.py): NumPy's values on plain arrays, traced
inputs accepted, and the same values under `vmap` and `jit` (where reading a value is a guard
of the record). Their derivatives are checked by the gradient table (tests/rows_sets.py,
rows_indexing.py, ...); here, what the table does not reach."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import batching

SET_OPS = ["union1d", "intersect1d", "setdiff1d", "setxor1d"]


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def _same(got, want):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_array_equal(g, w)


def _pairs(count, seed=0):
    """Integer-valued float arrays of random lengths (0 to 6), with repeats and NaNs."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        a = rng.integers(0, 6, rng.integers(0, 7)).astype(float)
        b = rng.integers(0, 6, rng.integers(0, 7)).astype(float)
        if k % 5 == 0 and a.size:
            a[0] = np.nan
        yield a, b


# --- sets -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, kw",
    [(n, {}) for n in SET_OPS]
    + [
        ("intersect1d", {"return_indices": True}),
        ("intersect1d", {"assume_unique": True}),
        ("setdiff1d", {"assume_unique": True}),
        ("isin", {}),
        ("isin", {"invert": True}),
    ],
)
def test_set_operations_are_numpys_plain_and_traced(name, kw):
    ours, theirs = getattr(fnp, name), getattr(np, name)
    for a, b in _pairs(60):
        want = theirs(a, b, **kw)
        _same(ours(a, b, **kw), want)
        traced = fgrad.jvp(lambda a, b: ours(a, b, **kw), (a, b), (np.ones_like(a), b))[0]
        _same(traced, want)


@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all"])
def test_unique_functions_are_numpys_with_its_named_tuples(name):
    for a, _ in _pairs(40):
        a = a.reshape(-1, 1) if a.size % 2 else a  # an inverse shaped like a 2-d input too
        want = getattr(np, name)(a)
        got = fgrad.jvp(getattr(fnp, name), (a,), (np.ones_like(a),))[0]
        assert type(got) is type(want)
        if name == "unique_values":  # NumPy's order of its own: compare as sets
            got, want = np.sort(np.asarray(got)), np.sort(want)
        _same(tuple(got) if isinstance(want, tuple) else got, want)


def test_set_operations_differentiate_through_the_kept_elements():
    x = np.array([3.0, 1.0, 2.0, 5.0])
    c = np.array([2.0, 7.0])
    cases = {
        "union1d": lambda x: fnp.union1d(x, c),  # every element of x kept
        "setdiff1d": lambda x: fnp.setdiff1d(x, fgrad.stop_gradient(x[2:3])),  # x[2] dropped
        "intersect1d": lambda x: fnp.intersect1d(x, fgrad.stop_gradient(x[:2])),  # x[:2] kept
        "setxor1d": lambda x: fnp.setxor1d(x, fgrad.stop_gradient(x[1:2])),  # x[1] dropped
    }
    kept = {
        "union1d": [1, 1, 1, 1],
        "setdiff1d": [1, 1, 0, 1],
        "intersect1d": [1, 1, 0, 0],
        "setxor1d": [1, 0, 1, 1],
    }
    for name, f in cases.items():
        g = fgrad.grad(lambda x: fnp.sum(f(x) ** 2))(x)
        np.testing.assert_array_equal(g, 2 * x * np.array(kept[name]), err_msg=name)


@pytest.mark.parametrize("name", SET_OPS + ["isin"])
def test_set_operations_under_vmap_equal_a_loop(name):
    xs = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [4.0, 4.0, 9.0]])
    ys = np.array([[2.0, 5.0], [1.0, 9.0], [4.0, 0.0]])
    f = getattr(fnp, name)
    loop = [getattr(np, name)(x, y) for x, y in zip(xs, ys)]
    if len({w.shape for w in loop}) == 1:
        np.testing.assert_array_equal(fgrad.vmap(f)(xs, ys), np.stack(loop))
    else:  # rows whose results differ in length cannot stack: vmap says so
        with pytest.raises(ValueError, match="different shapes per row"):
            fgrad.vmap(f)(xs, ys)
    # reduced to one number per row, rows of every length run (apart, by their length)
    summed = fgrad.vmap(lambda x, y: fnp.sum(fnp.astype(f(x, y), float)))(xs, ys)
    np.testing.assert_array_equal(summed, [np.sum(w) for w in loop])


def test_a_set_operation_under_vmap_reads_only_how_many_elements_each_row_keeps(monkeypatch):
    splits = []
    real = batching.Diverged.__init__
    monkeypatch.setattr(
        batching.Diverged, "__init__", lambda s, *a: (splits.append(1), real(s, *a))[1]
    )
    xs = np.array([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    out = fgrad.vmap(lambda x: fnp.setdiff1d(x, x[::2]))(xs)  # kept at other positions
    np.testing.assert_array_equal(out, [[2.0, 4.0], [1.0, 3.0]])
    assert not splits


def test_isin_with_both_arguments_batched_compares_each_row_with_its_own():
    xs, ts = np.array([[1.0, 2.0], [1.0, 2.0]]), np.array([[2.0, 7.0, np.nan], [1.0, 1.0, 1.0]])
    for invert in (False, True):
        got = fgrad.vmap(lambda x, t: fnp.isin(x, t, invert=invert))(xs, ts)
        np.testing.assert_array_equal(got, [np.isin(x, t, invert=invert) for x, t in zip(xs, ts)])


@pytest.mark.parametrize("name", SET_OPS)
def test_set_operations_under_jit_replay_and_guard_their_lengths(name):
    f = fgrad.jit(getattr(fnp, name))
    record = fgrad.make_record(getattr(fnp, name))(np.array([1.0, 2.0]), np.array([2.0, 3.0]))
    assert record.guards, "the number of kept elements must be a guard"
    for a, b in _pairs(20, seed=1):
        _same(f(a, b), getattr(np, name)(a, b))


def test_set_operations_refuse_a_lazy_dask_array():
    da = pytest.importorskip("dask.array")
    from fgrad.protocols import DispatchError

    x = da.from_array(np.array([1.0, 2.0, 3.0]), chunks=2)
    for name in SET_OPS:
        with pytest.raises(DispatchError, match=f"{name} cannot run on a lazy Dask array"):
            getattr(fnp, name)(x, x, assume_unique=True) if name != "union1d" else fnp.union1d(x, x)


# --- bitwise --------------------------------------------------------------------------------------


def test_bitwise_operators_on_traced_values_are_numpys():
    x, y = np.array([12, 10, -3]), np.array([6, 3, 1])

    def f(x, y):
        return (x & y) + (x | y) + (x ^ y) + (x << 1) + (y >> 1) + (3 & x) + (1 << y)

    want = f(x, y)
    for run in (fgrad.jit(f), lambda x, y: fgrad.vmap(f)(x[None], y[None])[0]):
        np.testing.assert_array_equal(run(x, y), want)
    masks = fgrad.vmap(lambda v: (v > 0) & (v < 2))(np.array([[1.0, 3.0], [0.5, -1.0]]))
    np.testing.assert_array_equal(masks, [[True, False], [True, False]])


def test_bitwise_functions_keep_numpys_keywords_and_aliases():
    x = np.array([12, 10], dtype=np.uint8)
    np.testing.assert_array_equal(fnp.bitwise_and(x, 6, dtype=np.int16), np.bitwise_and(x, 6))
    assert fnp.bitwise_and(x, 6, dtype=np.int16).dtype == np.int16
    assert fnp.bitwise_left_shift is fnp.left_shift and fnp.bitwise_invert is fnp.invert
    packed = fgrad.vmap(lambda b: fnp.packbits(b, axis=-1))(np.eye(9, dtype=bool)[:3])
    np.testing.assert_array_equal(packed, np.packbits(np.eye(9, dtype=bool)[:3], axis=-1))
    back = fgrad.vmap(lambda p: fnp.unpackbits(p, count=9))(packed)
    np.testing.assert_array_equal(back, np.eye(9, dtype=np.uint8)[:3])


# --- data types -----------------------------------------------------------------------------------


def test_type_questions_take_a_traced_value_by_its_dtype_and_read_nothing():
    def f(x):
        fine = fnp.result_type(x, 1.0) == np.float32 and fnp.can_cast(x, np.float64)
        return x * (fine and fnp.common_type(x) == np.float32)

    x = np.array([1.0, 2.0], np.float32)
    assert fgrad.make_record(f)(x).guards == []
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(f(x)))(x), [1.0, 1.0])
    np.testing.assert_array_equal(fgrad.vmap(f)(np.ones((3, 2), np.float32)), np.ones((3, 2)))
    # NumPy's own functions, applied to a traced value, come here too
    assert fgrad.grad(lambda x: x * (np.result_type(x) == np.float64))(2.0) == 1.0


@pytest.mark.parametrize("s", [2.5, 3, True, 1j])
def test_type_questions_under_jit_take_a_python_number_as_weak_as_eager(s):
    # jit holds a Python number argument as given: NumPy's weak promotion, not float64/int64
    def questions(s):
        answers = []
        for other in (np.float32, np.int8, np.complex64):
            answers.append(fnp.result_type(s, other))
            answers.append(_outcome(lambda: fnp.can_cast(s, other)))
        answers.append(_outcome(lambda: fnp.common_type(s)))
        return answers

    seen = {}
    fgrad.jit(lambda s: seen.setdefault("jit", questions(s)) and s)(s)
    assert seen["jit"] == questions(s)
    assert seen["jit"][0] == np.result_type(s, np.float32)


def _outcome(f):
    """f's answer, or the type of the error it raises."""
    try:
        return f()
    except Exception as e:
        return type(e)


def test_min_scalar_type_reads_a_scalar_and_not_an_array():
    assert fnp.min_scalar_type(300) == np.min_scalar_type(300)
    assert fgrad.make_record(lambda x: x * fnp.min_scalar_type(x).itemsize)(np.ones(2)).guards == []
    record = fgrad.make_record(lambda x: x * fnp.min_scalar_type(x).itemsize)(3.0)
    assert len(record.guards) == 1  # the scalar's value decides


def test_dtype_names_are_numpys_own():
    for name in ("int8", "uint64", "complex128", "floating", "integer", "dtype", "finfo", "bool"):
        assert getattr(fnp, name) is getattr(np, name)
    assert fnp.finfo(fnp.float32).eps == np.finfo(np.float32).eps


# --- indices and conversions ----------------------------------------------------------------------


def test_index_helpers_under_vmap_and_jit_equal_numpy():
    rows = np.array([[1, 0], [0, 1]])
    x = np.arange(6.0).reshape(2, 3)
    got = fgrad.vmap(lambda i: x[fnp.ix_(i, [0, 2])])(rows)
    np.testing.assert_array_equal(got, [x[np.ix_(i, [0, 2])] for i in rows])
    masks = np.array([[True, False], [False, True]])
    got = fgrad.vmap(lambda m: x[fnp.ix_(m, [0, 2])])(masks)
    np.testing.assert_array_equal(got, [x[np.ix_(m, [0, 2])] for m in masks])
    flat = np.array([[5, 1], [0, 2]])
    got = fgrad.vmap(lambda i: fnp.unravel_index(i, (2, 3)))(flat)
    want = [np.unravel_index(i, (2, 3)) for i in flat]
    np.testing.assert_array_equal(got, np.array(want).transpose(1, 0, 2))
    i, j = np.array([[1, 0], [0, 1]]), np.array([[2, 1], [0, 2]])
    got = fgrad.vmap(lambda i, j: fnp.ravel_multi_index((i, j), (2, 3)))(i, j)
    np.testing.assert_array_equal(got, np.ravel_multi_index((i, j), (2, 3)))
    for f in (lambda i: fnp.ix_(i, [0, 2]), lambda i: fnp.unravel_index(i, (2, 3))):
        _same(fgrad.jit(f)(np.array([1, 0])), f(np.array([1, 0])))


def test_indices_from_read_only_the_shape():
    a = np.ones((3, 3))
    for name in ("diag_indices_from", "tril_indices_from", "triu_indices_from"):
        _same(getattr(fnp, name)(a), getattr(np, name)(a))
        assert fgrad.make_record(lambda a: a[getattr(fnp, name)(a)])(a).guards == []
    with pytest.raises(ValueError, match="tril_indices_from: arr must be 2-d, got shape"):
        fnp.tril_indices_from(np.ones(3))


def test_conversions_are_differentiable_identities_and_chkfinite_checks_every_row():
    assert fgrad.grad(lambda x: fnp.ascontiguousarray(x)[0] * 2.0)(3.0) == 2.0
    assert np.shape(fgrad.vmap(fnp.asfortranarray)(np.ones(3))) == (3, 1)
    for transform in (fgrad.grad, fgrad.jit):
        with pytest.raises(ValueError, match="must not contain infs or NaNs"):
            transform(lambda x: fnp.sum(fnp.asarray_chkfinite(x)))(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        fgrad.vmap(fnp.asarray_chkfinite)(np.array([[1.0, 2.0], [np.nan, 1.0]]))
    m = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    assert type(fnp.asanyarray(m)) is np.ma.MaskedArray  # NumPy's own on a plain subclass


@pytest.mark.parametrize("name", ["putmask", "copyto"])
def test_in_place_functions_write_plain_arrays_and_refuse_traced_ones(name):
    a, b = np.arange(5.0), np.arange(5.0)
    mask = a > 2
    if name == "putmask":
        fnp.putmask(a, mask, -1.0), np.putmask(b, mask, -1.0)
    else:
        fnp.copyto(a, -1.0, where=mask), np.copyto(b, -1.0, where=mask)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(
        TypeError, match=rf"{name} writes into an array, and \w+ is traced .*fgrad.numpy.where"
    ):
        if name == "putmask":
            fgrad.grad(lambda x: fnp.putmask(x, x > 0, 0.0))(np.ones(2))
        else:
            fgrad.grad(lambda x: fnp.copyto(np.zeros(2), x))(np.ones(2))


# --- input and output (fgrad/numpy/input_output.py) --------------------------------------------


def test_save_writes_plain_arrays_as_numpy_and_refuses_a_traced_one_by_name():
    import io

    buffer = io.BytesIO()
    fnp.save(buffer, np.arange(3.0))
    buffer.seek(0)
    np.testing.assert_array_equal(np.load(buffer), np.arange(3.0))
    assert fnp.load is np.load and fnp.printoptions is np.printoptions

    def saving(x):
        fnp.save(io.BytesIO(), x)
        return fnp.sum(x)

    for transform in (fgrad.grad, fgrad.jit, fgrad.vmap):
        with pytest.raises(TypeError, match=r"save: arr is a traced value \(shape \(3,\)"):
            transform(saving)(np.ones(3) if transform is not fgrad.vmap else np.ones((2, 3)))
    with pytest.raises(TypeError, match=r"savez: the array 'w' is a traced value .*result"):
        fgrad.grad(lambda x: (fnp.savez(io.BytesIO(), w=x), fnp.sum(x))[1])(np.ones(3))


def test_the_text_of_a_traced_value_is_its_values_text():
    x = np.array([1.0, 2.5])
    eager = (np.array_str(x), np.array_repr(x), np.array_repr(x, precision=1))
    texts = []

    def f(v):
        texts.append((fnp.array_str(v), fnp.array_repr(v), fnp.array_repr(v, precision=1)))
        return v * 2.0

    fgrad.jit(f)(x)  # under jit (a recording): the value's own text, as str(v) and repr(v)
    fgrad.vmap(f)(x[None])  # the row's
    assert texts == [eager, eager]
    texts.clear()
    fgrad.grad(lambda v: fnp.sum(f(v)))(x)  # under a derivative too
    assert texts == [eager]
    with pytest.raises(TypeError, match=r"frombuffer: buffer is a traced value .* no memory"):
        fgrad.jit(fnp.frombuffer)(x)
    with pytest.raises(TypeError, match=r"from_dlpack: x is a traced value .* no memory"):
        fgrad.grad(lambda v: fnp.sum(fnp.from_dlpack(v)))(x)


def test_piecewise_takes_one_traced_condition_array_as_one_condition():
    # under jit and vmap the traced condition's elements (a 1-d x) or rows were taken for
    # conditions of their own: [-1, 2] where NumPy gives [-1, 20]; a 0-d x with a traced 0-d
    # condition raised IndexError
    def f(v):
        return fnp.piecewise(v, v > 0, [lambda t: 10.0 * t, lambda t: t])

    x = np.array([-1.0, 2.0, 3.0])
    want = np.piecewise(x, x > 0, [lambda t: 10.0 * t, lambda t: t])
    np.testing.assert_array_equal(fgrad.jit(f)(x), want)
    np.testing.assert_array_equal(fgrad.vmap(f)(x[None]), want[None])
    np.testing.assert_array_equal(fgrad.vmap(f)(x), want)  # 0-d rows, 0-d conditions
    np.testing.assert_array_equal(fgrad.grad(lambda v: fnp.sum(f(v)))(x), [1.0, 10.0, 10.0])


def test_select_keeps_numpys_dtype_with_python_number_choices():
    # two Python numbers (a choice and the default) made an int64 or float64 array first:
    # float64 for [x32, 3], where NumPy gives float32
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    for choices, default in (([x, 3], 0), ([x, 3.5], 0), ([x, 3], 1.5)):
        want = np.select([x > 0, x < 0], choices, default)
        got = fnp.select([x > 0, x < 0], choices, default)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        f = lambda v, c=choices, d=default: fnp.select([v > 0, v < 0], [v, c[1]], d)
        assert fgrad.jit(f)(x).dtype == np.float32


def test_choose_takes_a_boolean_index_under_transforms_as_numpy_does():
    # False and True choose 0 and 1; under jit and grad a take_along_axis TypeError
    a, c = np.array([True, False]), np.arange(2.0)
    np.testing.assert_array_equal(fgrad.jit(lambda v: fnp.choose(a, [v, 2 * v]))(c), [0.0, 1.0])
    got = fgrad.grad(lambda v: fnp.sum(fnp.choose(a, [v, 2 * v])))(c)
    np.testing.assert_array_equal(got, [2.0, 1.0])


def test_fill_diagonal_with_an_empty_val_and_pad_with_a_callable_mode_answer_as_numpy():
    # fill_diagonal(..., inplace=False) with an empty val raised IndexError under a
    # transform (NumPy fills nothing); pad refused NumPy's documented callable mode even on
    # plain arrays
    ones = np.ones((2, 2))
    got = fgrad.jit(lambda v: fnp.fill_diagonal(ones, v, inplace=False))(np.array([]))
    np.testing.assert_array_equal(got, ones)

    def padder(vector, pad_width, iaxis, kwargs):
        vector[: pad_width[0]] = -1.0
        if pad_width[1]:
            vector[-pad_width[1] :] = 7.0

    x = np.arange(3.0)
    np.testing.assert_array_equal(fnp.pad(x, 2, padder), np.pad(x, 2, padder))
    with pytest.raises(TypeError, match=r"pad: a callable mode \('padder'\) .*traced value"):
        fgrad.grad(lambda v: fnp.sum(fnp.pad(v, 2, padder)))(x)
    da = pytest.importorskip("dask.array")  # Dask's own pad fills such a padding with nan
    with pytest.raises(TypeError, match=r"\('padder'\) .*another library's array: shape \(3,\)"):
        fnp.pad(da.from_array(x, chunks=2), 2, padder)
