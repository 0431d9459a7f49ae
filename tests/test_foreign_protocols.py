"""An array type that speaks NumPy's protocols and cannot be written to, as JAX's arrays: the
transposes of indexing (the reverse rule of `x[idx]`, `x.at[idx].set/add/...`, the scatter
behind a gather with batched indices) build their results from functions NumPy dispatches, never
by item assignment, so such arrays flow through every transform and come back in their own type.

`Frozen` holds a read-only NumPy array and has what fgrad's rules use of an array type besides
NumPy's: the two dispatch protocols (NEP 13, NEP 18), `shape`, `dtype`, `__getitem__`, the
arithmetic and comparison operators and `astype`. It has no `__setitem__`, no `out=` and no
`ufunc.at`, and no other method.
"""

import warnings

import numpy as np
import pytest
from gradtable import load

import fgrad
import fgrad.numpy as fnp
from fgrad.protocols import is_foreign_array
from fgrad.tree_util import tree_leaves, tree_map


class Frozen:
    """An immutable array: NumPy's protocols, shape, dtype, indexing, operators and astype."""

    __slots__ = ("_a",)

    def __init__(self, a):
        a = np.array(a, copy=True)
        a.flags.writeable = False
        object.__setattr__(self, "_a", a)

    def __setattr__(self, name, value):
        raise AttributeError("Frozen arrays are immutable")

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)

    def __getitem__(self, idx):
        return _wrap(self._a[_unwrap(idx)])

    def astype(self, dtype, copy=True):
        return Frozen(self._a.astype(dtype))

    def __repr__(self):
        return f"Frozen({self._a!r})"

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if kwargs.get("out") is not None or method == "at":
            raise TypeError("Frozen arrays cannot be written to (out=, ufunc.at)")
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    __hash__ = None


def _binary(ufunc):
    return (lambda self, other: ufunc(self, other)), (lambda self, other: ufunc(other, self))


for _name, _ufunc in [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("truediv", np.divide),
    ("pow", np.power),
    ("matmul", np.matmul),
    ("mod", np.remainder),
    ("floordiv", np.floor_divide),
]:
    _forward, _reflected = _binary(_ufunc)
    setattr(Frozen, f"__{_name}__", _forward)
    setattr(Frozen, f"__r{_name}__", _reflected)
for _name, _ufunc in [
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("eq", np.equal),
    ("ne", np.not_equal),
]:
    setattr(Frozen, f"__{_name}__", _binary(_ufunc)[0])
Frozen.__neg__ = lambda self: np.negative(self)
Frozen.__abs__ = lambda self: np.absolute(self)


def _unwrap(x):
    if isinstance(x, Frozen):
        return x._a
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return Frozen(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_wrap(v) for v in x)
    return x


X = np.linspace(0.5, 6.0, 12).reshape(4, 3)
V = np.array([[0.3, -1.2, 2.5], [1.1, 0.7, -0.4]])


def test_frozen_is_a_foreign_array_that_refuses_item_assignment():
    x = Frozen(X)
    assert is_foreign_array(x)
    with pytest.raises(TypeError, match="does not support item assignment"):
        x[0] = 1.0
    with pytest.raises(TypeError, match="cannot be written to"):
        np.add.at(x, [0], 1.0)
    assert isinstance(x[1:] * 2.0 + x[:-1], Frozen)


def _same(got, want):
    """got is a Frozen array (or a Python/NumPy scalar where want is one) equal to want."""
    if np.ndim(want):
        assert isinstance(got, Frozen), f"a {type(got).__name__}, not a Frozen array"
        got = got._a
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)


def _check_everywhere(f, *args):
    """f's gradient (all arguments), a jvp and a Hessian-vector product (forward over
    reverse) on Frozen arrays equal the same on NumPy arrays, and come back Frozen."""
    argnums = tuple(range(len(args)))
    tangents = tuple(np.cos(np.arange(np.size(a))).reshape(np.shape(a)) for a in args)
    frozen = tuple(Frozen(a) for a in args)
    frozen_tangents = tuple(Frozen(t) for t in tangents)
    for g, w in zip(fgrad.grad(f, argnums)(*frozen), fgrad.grad(f, argnums)(*args)):
        _same(g, w)
    _same(fgrad.jvp(f, frozen, frozen_tangents)[1], fgrad.jvp(f, args, tangents)[1])
    hvp = lambda x, t, *rest: fgrad.jvp(lambda x: fgrad.grad(f)(x, *rest), (x,), (t,))[1]
    _same(hvp(frozen[0], frozen_tangents[0], *frozen[1:]), hvp(args[0], tangents[0], *args[1:]))


INDICES = {
    "int": 1,
    "negative int": -1,
    "slice": slice(1, 3),
    "column": (slice(None), 2),
    "step 2": slice(None, None, 2),
    "step -1": slice(None, None, -1),
    "steps -2 and 2": (slice(None, 0, -2), slice(0, None, 2)),
    "int and newaxis": (1, None),
    "ellipsis": (Ellipsis, 0),
    "empty slice": slice(2, 2),
    "repeated rows": np.array([0, 0, 2]),
    "two arrays": (np.array([0, 3, 0]), np.array([1, 1, 1])),
    "mask": X > 3.0,
}


@pytest.mark.parametrize("name", INDICES)
def test_the_transpose_of_indexing_never_assigns_items(name):
    idx = INDICES[name]
    _check_everywhere(lambda x: fnp.sum(fnp.sin(x[idx]) * x[idx]), X)


UPDATES = {
    "set row": lambda x, v: fnp.at(x)[1].set(v[0]),
    "set slice": lambda x, v: fnp.at(x)[1:3].set(v),
    "set stepped": lambda x, v: fnp.at(x)[::-2, 0].set(v[:, 1]),
    "set everything": lambda x, v: fnp.at(x)[...].set(v[1]),
    "set rows by array": lambda x, v: fnp.at(x)[np.array([3, 0])].set(v),
    "set by mask": lambda x, v: fnp.at(x)[X > 4.0].set(v[1, 2]),
    "add column": lambda x, v: fnp.at(x)[:, 1].add(v[1, 0]),
    "add repeated": lambda x, v: fnp.at(x)[np.array([2, 2])].add(v),
    "multiply": lambda x, v: fnp.at(x)[1:3].multiply(v),
    "multiply repeated": lambda x, v: fnp.at(x)[np.array([0, 0])].multiply(v),
    "max": lambda x, v: fnp.at(x)[0].max(v[0]),
    "divide": lambda x, v: fnp.at(x)[2:].divide(v),
}


@pytest.mark.parametrize("name", UPDATES)
def test_index_updates_and_their_transposes_never_assign_items(name):
    update = UPDATES[name]
    _check_everywhere(lambda x, v: fnp.sum(fnp.tanh(update(x, v)) * x), X, V)
    _same(update(Frozen(X), Frozen(V)), update(X, V))  # and outside any transform


def test_an_update_of_a_numpy_array_with_a_frozen_value_is_frozen():
    _same(fnp.at(X)[1:3, ::2].set(Frozen(V[:, :2])), fnp.at(X)[1:3, ::2].set(V[:, :2]))
    _same(fnp.at(X)[0].add(Frozen(V[0])), fnp.at(X)[0].add(V[0]))


def test_an_update_at_an_index_out_of_bounds_is_numpys_index_error():
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        fnp.at(Frozen(X))[4].set(1.0)


def test_gathers_and_updates_with_batched_indices_never_assign_items():
    rows = np.array([[0, 2], [1, 1], [2, 0], [0, 0]])
    distinct = np.array([[0, 2], [1, 0], [2, 1], [0, 1]])

    def f(x):
        picked = fgrad.vmap(lambda r, j: r[j])(x, rows)
        added = fgrad.vmap(lambda r, j: fnp.at(r)[j].add(r[0]))(x, rows)
        # (set refuses an index that repeats, as NumPy's order would decide the value)
        replaced = fgrad.vmap(lambda r, j: fnp.at(r)[j].set(r[1] ** 2))(x, distinct)
        return fnp.sum(picked**2) + fnp.sum(fnp.sin(added)) + fnp.sum(replaced * x)

    _check_everywhere(f, X)


# The gradient table's rows of the core and array families, as tests/test_cupy.py runs them on
# CuPy: value, vjp and jvp on Frozen arrays equal NumPy's. The rows listed need what no
# protocol gives, and are not about indexing.
ROWS, _ = load(["core", "arrays"])
NEEDS_MORE = {
    "sort": "its values decide the order: fgrad refuses to compute them (DispatchError)",
    "partition": "as sort",
    "argsort": "as sort",
    "unique": "its values decide its length",
    "reshape[order=A]": "order='A' reads the array's memory layout, which Frozen does not have",
    "ravel[order=K]": "as reshape[order=A]",
    "pad[median]": "as sort (a median gathers its order statistics through np.argsort)",
}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_rows_on_frozen_arrays_equal_numpy(row):
    args = row.args()
    for key in (row.name, row.id.split("-")[0]):  # the name, or the name and its variant
        if key in NEEDS_MORE:
            pytest.skip(NEEDS_MORE[key])
    out, pull = fgrad.vjp(row.fn, *args)
    ct = tree_map(np.ones_like, out)
    want = (out, pull(ct), fgrad.jvp(row.fn, args, tuple(np.ones_like(a) for a in args))[1])

    f_args = tuple(Frozen(a) if np.ndim(a) else a for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to NumPy, no cast that loses a part
        f_out, f_pull = fgrad.vjp(row.fn, *f_args)
        f_tangents = tuple(Frozen(np.ones_like(a)) if np.ndim(a) else 1.0 for a in args)
        got = (f_out, f_pull(tree_map(Frozen, ct)), fgrad.jvp(row.fn, f_args, f_tangents)[1])
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        g = g._a if isinstance(g, Frozen) else g
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


def test_searchsorted_with_a_frozen_operand_is_numpys():
    """searchsorted took every foreign operand for a Dask array and read its `.ndim`, which a
    protocol-only array does not have (AttributeError); NumPy's own call dispatches it."""
    a, v = np.array([0.1, 0.4, 0.7, 0.9]), np.array([0.5, 0.05])
    for side in ("left", "right"):
        _same(fnp.searchsorted(Frozen(a), v, side), np.searchsorted(a, v, side))
        _same(fnp.searchsorted(a, Frozen(v), side), np.searchsorted(a, v, side))
        _same(fnp.searchsorted(Frozen(a), 0.5, side), np.searchsorted(a, 0.5, side))


def _scipy_linalg_cases():
    import fgrad.scipy.linalg as fsl

    a = np.array([[2.0, 0.5], [0.25, 3.0]])
    return {
        "expm": (fsl.expm, (a,)),
        "sqrtm": (fsl.sqrtm, (a + 0j,)),  # (a real one is refused: its root's dtype is unknown)
        "lu": (fsl.lu, (a,)),
        "lu_factor": (fsl.lu_factor, (a,)),
        "qr": (fsl.qr, (a,)),
        "qr[raw]": (lambda a: fsl.qr(a, mode="raw"), (a,)),
        "svd": (fsl.svd, (a,)),
        "svd[s]": (lambda a: fsl.svd(a, compute_uv=False), (a,)),
        "schur": (fsl.schur, (a,)),
        "solve_triangular": (fsl.solve_triangular, (a, a[0])),
        "solve_banded": (lambda ab, b: fsl.solve_banded((0, 1), ab, b), (a, a[0])),
        "solve_sylvester": (fsl.solve_sylvester, (a, a, a)),
    }


@pytest.mark.parametrize("name", list(_scipy_linalg_cases()))
def test_scipy_linalg_refuses_an_array_numpy_cannot_convert_naming_itself(name):
    """SciPy reads its operands with numpy.asarray: a Frozen array (no __array__) became one
    object, so expm of a 2 x 2 Frozen gave a 1 x 1 object array, and lu, qr and svd raised
    SciPy's "must be two-dimensional" or "object arrays are not supported"."""
    f, args = _scipy_linalg_cases()[name]
    head = name.split("[")[0]
    want = rf"scipy\.linalg\.{head} cannot take a Frozen array .*\(2, 2\), dtype {args[0].dtype}"
    for transform in (f, fgrad.grad(lambda *xs: fnp.sum(tree_leaves(f(*xs))[-1]))):
        if transform is not f and name == "qr[raw]":
            continue  # (raw reflectors are not differentiated)
        with pytest.raises(TypeError, match=want):
            transform(*(Frozen(x) for x in args))


def test_interp_of_protocol_only_values_is_numpys():
    # the values were read with np.asarray (an object array of one Frozen) where 0 * inf
    # could make a nan: every mask came out true, and interp gave each segment's left knot
    x, xp, fp = np.array([0.5, 1.5, 2.5]), np.arange(4.0), np.arange(4.0) * 10
    f = lambda v: fnp.interp(x, xp, v)
    np.testing.assert_array_equal(np.asarray(f(Frozen(fp))._a), np.interp(x, xp, fp))
    g = fgrad.grad(lambda v: fnp.sum(f(v)))
    np.testing.assert_array_equal(np.asarray(g(Frozen(fp))._a), g(fp))


def test_piecewise_with_frozen_conditions_is_numpys():
    # a list of protocol-only conditions was taken for one condition: a (1, 4) result
    x = np.array([-1.0, 2.0, -3.0, 0.5])
    for conds in ([x < 0], [x < 0, x >= 0]):
        got = fnp.piecewise(Frozen(x), [Frozen(c) for c in conds], [1.0, 2.0])
        _same(got, np.piecewise(x, conds, [1.0, 2.0]))
