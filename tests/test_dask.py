"""Dask arrays through every transform (fgrad.protocols): lazy, chunked, never computed behind
the user's back. The gradient table on Dask is tests/test_dask_table.py; this module checks
the transforms, the errors, chunks, and a real `dask.distributed` cluster."""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is not installed (pip install fgrad[dask])")
dask = pytest.importorskip("dask")

import fgrad  # noqa: E402
import fgrad.numpy as fnp  # noqa: E402
from fgrad.protocols import DispatchError, is_foreign_array  # noqa: E402


def _refuse(*args, **kwargs):
    raise AssertionError("Dask was asked to compute while fgrad traced")


@pytest.fixture
def lazy():
    """Within: Dask refuses to compute (so fgrad must not ask it to)."""
    with dask.config.set(scheduler=_refuse):
        yield


X = np.linspace(0.1, 1.2, 12).reshape(4, 3)
CHUNKS = ((3, 1), (2, 1))


def _x():
    return da.from_array(X, chunks=(3, 2))


def f(x):
    return fnp.sum(fnp.tanh(x) ** 2 * fnp.exp(-x))


TRANSFORMS = {
    "grad": lambda f, x: fgrad.grad(f)(x),
    "value_and_grad": lambda f, x: fgrad.value_and_grad(f)(x),
    "vjp": lambda f, x: fgrad.vjp(lambda x: fnp.sin(x) * x, x)[1](x),
    "jvp": lambda f, x: fgrad.jvp(f, (x,), (x,)),
    "linearize": lambda f, x: fgrad.linearize(f, x)[1](x),
    "jacfwd": lambda f, x: fgrad.jacfwd(f)(x),
    "jacrev": lambda f, x: fgrad.jacrev(f)(x),
    "hessian": lambda f, x: fgrad.hessian(f)(x),
    "vmap": lambda f, x: fgrad.vmap(f)(x),
    "vmap(grad)": lambda f, x: fgrad.vmap(fgrad.grad(f))(x),
    "grad(vmap)": lambda f, x: fgrad.grad(lambda x: fnp.sum(fgrad.vmap(f)(x)))(x),
    "jet": lambda f, x: fgrad.jet(f, (x,), ((x, x * 0.5),)),
    "laplacian": lambda f, x: fgrad.laplacian(f)(x),
    "checkpoint": lambda f, x: fgrad.grad(fgrad.checkpoint(f))(x),
    "grad(grad)": lambda f, x: fgrad.grad(lambda x: fnp.sum(fgrad.grad(f)(x) ** 2))(x),
}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_transform_on_dask_is_lazy_and_equals_numpy(name, lazy):
    transform = TRANSFORMS[name]
    got = transform(f, _x())
    leaves = fgrad.tree_util.tree_leaves(got)
    assert any(isinstance(v, da.Array) for v in leaves), f"{name}: no Dask result"
    with dask.config.set(scheduler="sync"):
        (got,) = dask.compute(got)
    want = transform(f, X)
    for g, w in zip(fgrad.tree_util.tree_leaves(got), fgrad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-14)


def test_a_gradient_keeps_its_inputs_chunks(lazy):
    x = _x()
    # a sum over rows then a broadcast back: its transpose merges nothing, but a rule may
    g = fgrad.grad(lambda x: fnp.sum(fnp.sum(x, axis=0) ** 2) + fnp.sum(x.T @ x))(x)
    assert g.chunks == x.chunks == CHUNKS
    y = da.from_array(np.arange(1.0, 7.0), chunks=2)
    gy = fgrad.grad(lambda y: fnp.sum(fnp.reshape(y, (2, 3)) ** 2))(y)
    assert gy.chunks == y.chunks


def test_a_tangent_keeps_its_values_chunks(lazy):
    x = _x()
    value, tangent = fgrad.jvp(lambda x: fnp.cumsum(x, axis=0) * 2.0, (x,), (x,))
    assert isinstance(tangent, da.Array) and tangent.chunks == value.chunks


def test_a_gradient_that_does_not_depend_on_the_input_is_a_dask_zero(lazy):
    x = _x()
    g = fgrad.grad(lambda x, c: fnp.sum(c * 2.0), argnums=0)(x, np.float64(1.0))
    assert isinstance(g, da.Array) and g.chunks == x.chunks
    np.testing.assert_array_equal(g.compute(scheduler="sync"), np.zeros_like(X))


def test_mixing_with_numpy_constants_and_numpy_functions(lazy):
    x = _x()
    c = np.arange(12.0).reshape(4, 3)
    g = fgrad.grad(lambda x: np.sum(np.sin(x) * c) + fnp.sum(x @ np.ones(3)))(x)
    assert isinstance(g, da.Array)
    want = fgrad.grad(lambda x: np.sum(np.sin(x) * c) + fnp.sum(x @ np.ones(3)))(X)
    np.testing.assert_allclose(g.compute(scheduler="sync"), want, rtol=1e-13)


def test_a_function_dask_does_not_implement_raises_naming_it(lazy):
    x = da.from_array(np.linspace(0.0, 1.0, 6), chunks=3)
    y = da.from_array(np.linspace(1.0, 3.0, 6), chunks=3)
    for call in (
        lambda: fgrad.grad(lambda y: fnp.sum(fnp.polyfit(x, y, 1)))(y),
        lambda: fgrad.grad(lambda y: fnp.sum(np.polyfit(x, y, 1)))(y),  # NumPy's name, traced
    ):
        with pytest.raises(DispatchError, match=r"numpy\.\w+ is not implemented by Dask"):
            call()


def test_a_function_that_needs_the_values_names_itself_and_why(lazy):
    import fgrad.scipy.stats as stats

    x = da.from_array(np.array([0.5, 1.0, 2.0, 4.0]), chunks=2)
    for call, name in [
        (lambda: fgrad.grad(lambda x: fnp.sum(fnp.sort(x) * x))(x), "sort"),
        (lambda: fnp.median(x), "a median, quantile or percentile"),
        (lambda: stats.gamma.logcdf(x, 2.0), "scipy.stats.gamma"),
        (lambda: fgrad.grad(lambda x: fnp.sum(stats.gamma.logsf(x, 2.0)))(x), "scipy.stats.gamma"),
    ]:
        with pytest.raises(DispatchError, match=rf"^{name} cannot run on a lazy Dask array: "):
            call()


def test_linear_algebra_on_stacks_of_matrices_is_lazy_and_right(lazy):
    a = np.random.default_rng(1).standard_normal((4, 3, 3)) + 3 * np.eye(3)
    d = da.from_array(a, chunks=(2, 3, 3))
    g = fgrad.grad(lambda a: fnp.sum(fnp.linalg.det(a)) + fnp.sum(fnp.linalg.inv(a)))(d)
    assert isinstance(g, da.Array) and g.chunks == d.chunks
    want = fgrad.grad(lambda a: fnp.sum(fnp.linalg.det(a)) + fnp.sum(fnp.linalg.inv(a)))(a)
    np.testing.assert_allclose(g.compute(scheduler="sync"), want, rtol=1e-12)


def test_dask_constants_inside_a_transform_stay_lazy(lazy):
    """A Dask array the function closes over (not differentiated) is never computed by a rule:
    the gradient of a NumPy input that meets it is a lazy Dask array, equal to NumPy's."""
    w = np.linspace(0.5, 1.5, 3)

    def f_of(c):
        def f(w):
            scans = fnp.cumsum(c, axis=0) * w + fnp.nanstd(c, axis=0) * w
            listed = fnp.asarray([c[0, 0], c[1, 1]]) * w[0]
            joined = fnp.r_[c[0], c[1]][:3] * w
            weighted = fnp.cov(c, aweights=c[0]) * w[1]
            return fnp.sum(scans) + fnp.sum(listed) + fnp.sum(joined) + fnp.sum(weighted)

        return f

    g = fgrad.grad(f_of(_x()))(w)
    assert isinstance(g, da.Array)
    want = fgrad.grad(f_of(X))(w)
    np.testing.assert_allclose(g.compute(scheduler="sync"), want, rtol=1e-12)


def test_searchsorted_with_one_dask_operand_stays_lazy_and_is_numpys():
    """searchsorted of a Dask and a NumPy operand raised Dask's internal AttributeError ('numpy.
    ndarray' object has no attribute '_meta'); a sorter raised Dask's NotImplementedError, a
    number looked up in Dask's a its TypeError."""
    rng = np.random.default_rng(2)
    a = np.sort(rng.standard_normal(11))
    a[4] = a[3]  # a tie: left and right differ there
    v = rng.standard_normal((3, 4))
    v[0, 0] = a[3]
    u = rng.permutation(a)
    s = np.argsort(u, kind="stable")
    lazy_a, lazy_v = da.from_array(a, chunks=4), da.from_array(v, chunks=2)
    lazy_u, lazy_s = da.from_array(u, chunks=4), da.from_array(s, chunks=5)
    for side in ("left", "right"):
        want = np.searchsorted(a, v, side)
        with dask.config.set(scheduler=_refuse):
            calls = [
                fnp.searchsorted(lazy_a, v, side),
                fnp.searchsorted(a, lazy_v, side=side),
                fnp.searchsorted(lazy_u, v, side, sorter=s),
                fnp.searchsorted(u, v, side, sorter=lazy_s),
            ]
            numbers = [fnp.searchsorted(lazy_a, 0.3, side), fnp.searchsorted(lazy_a, a[3], side)]
        for got in calls:
            assert isinstance(got, da.Array)
            np.testing.assert_array_equal(got.compute(scheduler="sync"), want)
        for got, number in zip(numbers, (0.3, a[3])):
            assert isinstance(got, da.Array) and got.shape == ()
            assert got.compute(scheduler="sync") == np.searchsorted(a, number, side)


def test_linspace_of_dask_end_points_with_an_integer_dtype_stays_lazy(lazy):
    """An integer linspace has no derivative and goes to NumPy's own, which hands Dask end
    points to Dask's linspace (it takes no `device` keyword)."""
    a = da.from_array(np.array([0.0, 10.0]), chunks=1)
    y = fnp.linspace(a[0], a[1], 5, dtype=int)
    assert isinstance(y, da.Array)
    np.testing.assert_array_equal(
        y.compute(scheduler="sync"), np.linspace(0.0, 10.0, 5, dtype=int), strict=True
    )


def test_copy_of_dask_arrays_is_a_new_lazy_array(lazy):
    """fnp.copy of a Dask array is a new Dask array; of a list of them, their stack (NumPy's
    copy of a list is an array), lazy and equal to NumPy's."""
    x = _x()
    assert isinstance(fnp.copy(x), da.Array) and fnp.copy(x) is not x
    stacked = fnp.copy([x, x])
    assert isinstance(stacked, da.Array)
    np.testing.assert_array_equal(stacked.compute(scheduler="sync"), np.copy([X, X]), strict=True)


def test_dask_inputs_are_never_modified():
    x = _x()
    before = x.compute(scheduler="sync").copy()
    fgrad.grad(lambda x: fnp.sum(fnp.at(x)[1:].set(0.0) ** 2))(x)
    fgrad.vjp(lambda x: x[::-1] * 2.0, x)[1](x)
    np.testing.assert_array_equal(x.compute(scheduler="sync"), before)


def test_is_foreign_array():
    assert is_foreign_array(_x())
    assert not is_foreign_array(X)
    assert not is_foreign_array(np.float64(1.0))
    assert not is_foreign_array([1.0, 2.0])


def test_gradient_on_a_local_cluster_equals_numpy():
    """A `dask.distributed` cluster of two worker processes (started and closed here)."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((400, 5))
    labels = np.sign(data @ np.arange(1.0, 6.0) + rng.standard_normal(400))
    w = np.full(5, 0.1)

    def loss(w, X, y):
        return fnp.mean(fnp.log1p(fnp.exp(-y * (X @ w))))

    want_value, want_grad = fgrad.value_and_grad(loss)(w, data, labels)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        X = da.from_array(data, chunks=(100, 5))
        y = da.from_array(labels, chunks=100)
        value, g = fgrad.value_and_grad(loss)(w, X, y)
        assert isinstance(g, da.Array)
        value, g = dask.compute(value, g)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(g, want_grad, rtol=1e-11)


# --- the logistic regression gradient's graph (issue 31) ------------------------------------------


def _logistic_data(chunks):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((100 * chunks, 10))
    labels = np.sign(data @ np.linspace(-1.0, 1.0, 10) + rng.standard_normal(100 * chunks))
    return data, labels


def _logistic_loss(w, X, y):  # benchmarks/bench_out_of_core.py's loss
    return fnp.mean(fnp.logaddexp(0.0, -y * (X @ w)))


def _logistic_grad_by_hand(w, X, y):  # the same gradient written in dask.array
    z = -y * (X @ w)
    return X.T @ (-y * (1.0 / (1.0 + np.exp(-z)))) / len(y)


def test_the_logistic_regression_gradient_builds_about_the_tasks_written_by_hand(lazy):
    # 106 tasks against the hand-written 69 before: a broadcast of the loss's cotangent into one
    # chunk and its rechunk (10 tasks), and the softplus slope's mask of infinite results (9
    # operations per chunk, the forward logaddexp among them) that a lazy array cannot read.
    # Now 84; after Dask's own fusion of elementwise operations, as many as by hand.
    data, labels = _logistic_data(4)
    X, y = da.from_array(data, chunks=(100, 10)), da.from_array(labels, chunks=100)
    w = np.linspace(0.3, -0.2, 10)
    g = fgrad.grad(_logistic_loss)(w, X, y)
    by_hand = _logistic_grad_by_hand(w, X, y)
    tasks, hand_tasks = len(g.__dask_graph__()), len(by_hand.__dask_graph__())
    assert tasks <= 1.25 * hand_tasks, f"{tasks} tasks against {hand_tasks} by hand"

    def fused(a):
        return len(a.__dask_optimize__(a.__dask_graph__(), a.__dask_keys__()))

    assert fused(g) <= fused(by_hand)
    with dask.config.set(scheduler="sync"):
        got, want = g.compute(), by_hand.compute()
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(got, fgrad.grad(_logistic_loss)(w, data, labels), rtol=1e-13)


def test_a_full_sum_spreads_its_cotangent_in_the_inputs_chunks(lazy):
    x = _x()
    g = fgrad.grad(lambda x: fnp.mean(fnp.sin(x)))(x)
    assert g.chunks == x.chunks
    # one task per chunk spreads the cotangent (no chunk of x's whole size to split again)
    assert not any(name.startswith(("broadcast_to", "rechunk")) for name in g.dask.layers)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_allclose(g.compute(), np.cos(X) / X.size, rtol=1e-14)


# the slope of logaddexp with one operand a finite constant: the path a lazy array takes (its
# mask of infinite results cannot be read), and NumPy's where the result is infinite somewhere
SOFTPLUS_AT = np.array([-np.inf, -800.0, -40.0, -1.0, -0.0, 0.0, 1.5, 40.0, 800.0, np.inf])


def _sigmoid(u):
    """The logistic sigmoid, each side from the exponential that does not overflow."""
    e = np.exp(-np.abs(u))
    return np.where(u >= 0, 1.0, e) / (1.0 + e)


@pytest.mark.parametrize(
    ("name", "c", "first"),
    [("logaddexp", 0.0, True), ("logaddexp", 2.0, False), ("logaddexp2", np.float64(-0.5), True)],
)
def test_logaddexp_of_a_finite_constant_is_exact_everywhere_and_never_warns(name, c, first):
    fn = getattr(fnp, name)

    def f(x):
        return fnp.sum(fn(c, x) if first else fn(x, c))

    k = 1.0 if name == "logaddexp" else np.log(2.0)  # d/dx logaddexp2(c, x) = sigmoid(k (x - c))
    u = k * (SOFTPLUS_AT - c)
    s = _sigmoid(u)
    with np.errstate(all="raise", under="ignore"):  # no overflow, no inf - inf, at any order
        d1 = fgrad.grad(f)(SOFTPLUS_AT)
        d2 = fgrad.grad(lambda x: fnp.sum(fgrad.grad(f)(x)))(SOFTPLUS_AT)
        d2_rows = fgrad.vmap(fgrad.grad(fgrad.grad(f)))(SOFTPLUS_AT)
        lazy = fgrad.grad(f)(da.from_array(SOFTPLUS_AT, chunks=4))
    np.testing.assert_allclose(d1, s, rtol=1e-12, atol=0)  # (k u rounds: |u| eps relative)
    np.testing.assert_allclose(d2, k * s * _sigmoid(-u), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(d2_rows, d2, rtol=1e-15, atol=0)
    assert d1[0] == 0.0 and d1[-1] == 1.0 and d2[0] == 0.0 and d2[-1] == 0.0
    with dask.config.set(scheduler="sync"), np.errstate(all="raise", under="ignore"):
        np.testing.assert_array_equal(lazy.compute(), d1)
    # a nan stays a nan (NumPy's logaddexp itself warns of it); a tie of infinities (an
    # operand that is not a constant) is still 1/2
    with np.errstate(invalid="ignore"):
        assert np.isnan(fgrad.grad(f)(np.array([np.nan]))[0])
    assert fgrad.grad(lambda x: fnp.sum(fn(x, x * 1.0)))(np.array([np.inf]))[0] == 1.0


def test_dirichlet_on_dask_gives_nan_derivatives_where_a_lazy_check_fails():
    import fgrad.scipy.stats

    # Dask's values are not read for dirichlet's checks: a point that fails one is nan (SciPy
    # raises), and so are the derivatives there (they were 0, silently), in x's components of
    # that point and in all of alpha; the valid point keeps its own.
    x = np.array([[0.2, 0.5], [0.3, 0.6], [0.5, -0.1]])  # the second point is off the simplex
    alpha = np.array([1.5, 2.0, 3.0])

    def total(x, a):
        return fnp.sum(fgrad.scipy.stats.dirichlet.logpdf(x, a))

    with dask.config.set(scheduler=_refuse):  # traced lazily
        gx, ga = fgrad.grad(total, argnums=(0, 1))(da.from_array(x), da.from_array(alpha))
        bad_alpha = da.from_array(np.array([1.0, -1.0, 2.0]))
        jac = fgrad.jacfwd(fgrad.scipy.stats.dirichlet.mean)(bad_alpha)
    gx, ga = np.asarray(gx), np.asarray(ga)
    assert np.all(np.isnan(gx[:, 1])) and np.all(np.isnan(ga))
    np.testing.assert_allclose(gx[:, 0], fgrad.grad(total)(x[:, :1], alpha)[:, 0], rtol=1e-14)
    assert np.all(np.isnan(np.asarray(jac)))


def test_multigammaln_on_dask_gives_nan_derivatives_outside_its_domain():
    # Dask's values are not read: a outside the domain gives nan (SciPy raises), and its
    # derivative there was 0, silently; it is nan now, and the valid element keeps its own.
    import fgrad.scipy.special as sp

    a = np.array([0.2, 3.0])
    with dask.config.set(scheduler=_refuse):  # traced lazily
        g = fgrad.grad(lambda a: fnp.sum(sp.multigammaln(a, 2)))(da.from_array(a))
    g = np.asarray(g)
    assert np.isnan(g[0])
    assert g[1] == fgrad.grad(lambda a: fnp.sum(sp.multigammaln(a, 2)))(a[1:])[0]


def test_a_hessian_whose_gradient_is_a_constant_of_the_tangents():
    """vmap refused a Dask array that is the same for every row (`vmap(lambda r: dx * 2.0)`),
    so hessian, jacfwd(grad) and jacrev(grad) of sum(abs(x)), max, clip, ... on Dask input
    raised 'vmap: the function returned a value of type Array'. NumPy input gives zeros."""
    x = np.array([0.3, -1.2, 2.0, 0.5])
    dx = da.from_array(x, chunks=2)
    for f in (lambda x: fnp.sum(fnp.abs(x)), fnp.max, lambda x: fnp.sum(fnp.clip(x, 0.0, 1.0))):
        for transform in (fgrad.hessian, lambda f: fgrad.jacfwd(fgrad.grad(f))):
            got = transform(f)(dx)
            want = transform(f)(x)
            np.testing.assert_array_equal(
                np.asarray(got.compute() if is_foreign_array(got) else got), want
            )
    out = fgrad.vmap(lambda r: dx * 2.0)(np.ones((2, 4)))  # the same for every row
    np.testing.assert_array_equal(np.asarray(out), np.stack([x * 2.0] * 2))


def test_dask_index_arguments_stay_lazy_or_are_refused_never_computed(lazy):
    """take, take_along_axis, repeat, delete, insert and bincount read an index or count
    argument: a Dask one was computed (np.asarray), untraced and under grad. Dask's own take
    and bincount are lazy: so are fgrad's, untraced; everything else is a DispatchError."""
    x = da.from_array(X, chunks=(2, 2))
    i = da.from_array(np.array([2, 0, -1]), chunks=2)
    took = fnp.take(x, i, axis=0)
    counted = fnp.bincount(abs(i), weights=x[0])
    assert isinstance(took, da.Array) and isinstance(counted, da.Array)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(took.compute(), np.take(X, [2, 0, -1], axis=0))
        np.testing.assert_array_equal(counted.compute(), np.bincount([2, 0, 1], weights=X[0]))
    for name, call in [
        ("take", lambda x: fnp.take(x, i, axis=0)),
        ("take_along_axis", lambda x: fnp.take_along_axis(x, fnp.argmax(x, axis=0)[None], 0)),
        ("repeat", lambda x: fnp.repeat(x[0], abs(i) + 1)),
        ("delete", lambda x: fnp.delete(x, i[:1], axis=0)),
        ("insert", lambda x: fnp.insert(x, i[:1], 5.0, axis=0)),
        ("bincount", lambda x: fnp.bincount(abs(i), weights=x[0])),
    ]:
        for run in (call, lambda x: fgrad.grad(lambda x: fnp.sum(call(x) ** 2))(x)):
            if run is call and name in ("take", "bincount"):
                continue  # Dask's own, lazy (above)
            with pytest.raises(DispatchError, match=rf"^{name} cannot run on a lazy Dask array"):
                run(x)


def test_nondifferentiable_functions_outside_a_transform_never_compute(lazy):
    """argsort, lexsort and matrix_rank of Dask arrays: DispatchError inside grad, but Dask's
    fallback computed them when called outside any transform."""
    x = da.from_array(np.array([0.3, 0.5, 0.9, 1.2]), chunks=2)
    m = da.from_array(np.array([[2.0, 1.0], [1.0, 3.0]]), chunks=1)
    for name, call in [
        ("argsort", lambda: fnp.argsort(x)),
        ("lexsort", lambda: fnp.lexsort((x, -x))),
        ("linalg.matrix_rank", lambda: fnp.linalg.matrix_rank(m)),
    ]:
        with pytest.raises(DispatchError, match=rf"numpy\.{name} is not implemented by Dask"):
            call()


def test_interp_under_jit_refuses_a_dask_array_as_eagerly(lazy):
    """Under jit, interp's segments were gathered from a staged index: the record computed
    the Dask array, where the eager call raised. vmap stays lazy (fgrad's comparisons)."""
    x = da.from_array(X.ravel(), chunks=4)
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([0.0, 3.0, 1.0])
    f = lambda x: fnp.interp(x, xp, fp)
    for call in (f, fgrad.jit(f), fgrad.jit(fgrad.grad(lambda x: fnp.sum(f(x))))):
        with pytest.raises(DispatchError, match=r"^interp cannot run on a lazy Dask array"):
            call(x)
    batched = fgrad.vmap(f)(x)
    assert isinstance(batched, da.Array)
    np.testing.assert_array_equal(batched.compute(scheduler="sync"), np.interp(X.ravel(), xp, fp))


def test_dasks_own_errors_become_dispatch_errors_naming_the_function(lazy):
    """unique and a vmapped per-row index leaked Dask's bare TypeError/NotImplementedError."""
    x = da.from_array(np.array([0.3, 0.5, 0.9, 1.2]), chunks=2)
    rows = da.from_array(X, chunks=(2, 3))
    for name, call in [
        ("unique", lambda: fnp.unique(x)),
        ("unique", lambda: fgrad.grad(lambda x: fnp.sum(fnp.unique(x)))(x)),
        ("getitem", lambda: fgrad.vmap(lambda r: r[fnp.argmax(r)])(rows)),
    ]:
        with pytest.raises(DispatchError, match=rf"^{name} cannot run on a lazy Dask array"):
            call()


def test_isin_of_a_dask_array_is_lazy(lazy):
    """fgrad passed kind=None, which Dask's isin does not take."""
    x = da.from_array(np.array([0.3, 0.5, 0.9, 1.2]), chunks=2)
    found = fnp.isin(x, [0.5])
    g = fgrad.grad(lambda x: fnp.sum(fnp.where(fnp.isin(x, [0.5]), 0.0, x**2)))(x)
    assert isinstance(found, da.Array) and isinstance(g, da.Array)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(found.compute(), [False, True, False, False])
        np.testing.assert_array_equal(g.compute(), [0.6, 0.0, 1.8, 2.4])


def test_a_jitted_gradient_keeps_the_inputs_chunks_on_records_and_replays():
    """jit(grad) of prod, average or pad gave the gradient 1000 one-row chunks, or one chunk,
    where the eager gradient has its input's (the rechunking was done eagerly only)."""
    x = da.from_array(np.random.default_rng(0).standard_normal((1000, 3)), chunks=(250, 3))
    for f in (
        lambda x: fnp.sum(fnp.prod(x, axis=0)),
        lambda x: fnp.sum(fnp.average(x, axis=0, weights=np.arange(1000.0))),
        lambda x: fnp.sum(fnp.pad(x, 1) ** 2),
    ):
        g = fgrad.grad(f)
        jitted = fgrad.jit(g)
        with dask.config.set(scheduler=_refuse):
            results = [g(x), jitted(x), jitted(x + 1.0)]
        for r in results:
            assert r.chunks == x.chunks
        np.testing.assert_allclose(results[1].compute(), results[0].compute(), rtol=1e-12)


def _tasks(a):
    return len(a.__dask_graph__())


def test_gradient_of_one_row_of_a_long_dask_array_has_tasks_per_chunk_not_per_row(lazy):
    """Dask's `pad` chunked the zeros around x[0] like the row: n rows gave O(n) tasks
    (400,050 for 50,000 rows in 4 chunks)."""
    counts = []
    for n in (1_000, 16_000):
        values = np.random.default_rng(n).standard_normal((n, 3))
        x = da.from_array(values, chunks=(n // 4, 3))
        g = fgrad.grad(lambda x: fnp.sum(fnp.sin(x[0])) + fnp.sum(x[1:] ** 2) + x[-2, 1])(x)
        counts.append(_tasks(g))
        want = 2 * values
        want[0], want[-2, 1] = np.cos(values[0]), want[-2, 1] + 1
        with dask.config.set(scheduler="sync"):
            np.testing.assert_allclose(g.compute(), want, rtol=1e-13)
    assert counts[1] == counts[0] < 200, counts


def test_derivatives_of_prod_and_cumprod_along_a_dask_chunked_axis_have_tasks_per_chunk(lazy):
    """The scans' shifts moved chunk boundaries at each doubling step: grad(prod) of 16,000
    rows in 4 chunks had 683,345 tasks, grad(cumprod) 1,412,916."""
    counts = []
    for n in (1_000, 16_000):
        values = 1.0 + 1e-3 * np.random.default_rng(n).standard_normal((n, 3))
        x, t = da.from_array(values, chunks=(n // 4, 3)), np.ones((n, 3))
        others = np.prod(values, axis=0) / values
        after = np.cumsum(np.cumprod(values, axis=0)[::-1], axis=0)[::-1] / values
        results = [
            (fgrad.grad(lambda x: fnp.sum(fnp.prod(x, axis=0)))(x), others),
            (fgrad.grad(lambda x: fnp.sum(fnp.cumprod(x, axis=0)))(x), after),
            (fgrad.jvp(lambda x: fnp.prod(x, axis=0), (x,), (t,))[1], others.sum(axis=0)),
            (fgrad.jvp(lambda x: fnp.cumprod(x, axis=0), (x,), (t,))[1], None),
        ]
        counts.append([_tasks(r) for r, _ in results])
        with dask.config.set(scheduler="sync"):
            for r, want in results[:3]:
                np.testing.assert_allclose(r.compute(), want, rtol=1e-12)
            want = np.cumprod(values, axis=0) * np.cumsum(1 / values, axis=0)
            np.testing.assert_allclose(results[3][0].compute(), want, rtol=1e-12)
    # log2(n) doubling steps of O(chunks) tasks each: 16 times the rows, 4 more steps
    for small, large in zip(*counts):
        assert large < 1.5 * small and large < 60 * 4 * np.log2(16_000), counts


def test_vmap_of_scipy_linalg_factorizations_on_a_dask_stack_is_lazy_and_right(lazy):
    """vmap of lu_factor, lu and lu_solve computed the Dask stack (NumPy results), and of svd
    and qr raised Dask's errors (2-D only, no full_matrices, no mode): their batched
    primitives skipped the per-block path the unbatched ones take."""
    import fgrad.scipy.linalg as fsl

    a = np.random.default_rng(0).standard_normal((4, 3, 3)) + 3 * np.eye(3)
    b = np.random.default_rng(1).standard_normal((4, 3))
    d, db = da.from_array(a, chunks=(2, 3, 3)), da.from_array(b, chunks=(2, 3))
    calls = {  # each of (matrix, right-hand side)
        "lu_factor": lambda m, r: fsl.lu_factor(m)[0],
        "lu": lambda m, r: fsl.lu(m)[1:],
        "lu_solve": lambda m, r: fsl.lu_solve(fsl.lu_factor(m), r),
        "svd": lambda m, r: fsl.svd(m)[1],
        "svd(compute_uv=False)": lambda m, r: fsl.svd(m, compute_uv=False),
        "qr": lambda m, r: fsl.qr(m)[1],
        "grad(lu_solve)": fgrad.grad(lambda m, r: fnp.sum(fsl.lu_solve(fsl.lu_factor(m), r))),
        "grad(svd)": fgrad.grad(lambda m, r: fnp.sum(fsl.svd(m, compute_uv=False) * r)),
        "grad(qr)": fgrad.grad(lambda m, r: fnp.sum(fnp.abs(fsl.qr(m)[1]))),
    }
    for name, f in calls.items():
        got = fgrad.tree_util.tree_leaves(fgrad.vmap(f)(d, db))
        assert all(isinstance(v, da.Array) for v in got), name
        with dask.config.set(scheduler="sync"):
            (got,) = dask.compute(got)
        want = fgrad.tree_util.tree_leaves(fgrad.vmap(f)(a, b))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=name)


def test_vmap_of_cov_with_dask_aweights_is_lazy_and_right(lazy):
    """The batched path read the degrees of freedom for NumPy's warning (a DispatchError);
    the unbatched path skips that read on a lazy array, and so does it now. The second row
    has no degrees of freedom (one nonzero weight): NumPy's inf and nan there."""
    x = np.arange(10.0).reshape(2, 5) ** 1.5
    w = np.array([[1.0, 2.0, 1.0, 3.0, 1.0], [0.0, 0.0, 2.0, 0.0, 0.0]])
    X, W = da.from_array(x, chunks=(2, 3)), da.from_array(w, chunks=(1, 3))
    got = fgrad.vmap(lambda w: fnp.cov(X, aweights=w))(W)
    assert isinstance(got, da.Array)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        want = [np.cov(x, aweights=row) for row in w]
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got.compute(scheduler="sync"), want, rtol=1e-13)


def test_solve_banded_and_complex_schur_derivatives_on_dask_are_lazy_and_right(lazy):
    """grad and vmap of solve_banded and grad of the complex Schur form raised Dask's bare
    "Don't yet support nd fancy indexing": their rules gathered the band with several (or
    2-D) index arrays, and the Schur form's Sylvester solve updated a Dask array in place."""
    import fgrad.scipy.linalg as fsl

    ab = np.array([[0.0, 1.0, 1.0, 1.0], [4.0, 5.0, 6.0, 7.0], [1.0, 1.0, 1.0, 0.0]])
    b = np.array([1.0, 2.0, 3.0, 4.0])
    m = np.array([[1.0, 2.0], [-3.0, 1.0]]) + 0j
    bands = np.stack([ab, 1.1 * ab])
    cases = {
        "grad(solve_banded)": (
            fgrad.grad(lambda ab, b: fnp.sum(fsl.solve_banded((1, 1), ab, b) ** 2), (0, 1)),
            (ab, b),
        ),
        "vmap(solve_banded)": (
            fgrad.vmap(lambda ab, b: fsl.solve_banded((1, 1), ab, b), (0, None)),
            (bands, b),
        ),
        "vmap(grad(solve_banded))": (
            fgrad.vmap(fgrad.grad(lambda ab, b: fnp.sum(fsl.solve_banded((1, 2), ab, b)))),
            (np.concatenate([bands, bands[:, :1] * 0.5], axis=1), np.stack([b, -b])),
        ),
        "grad(schur complex)": (
            fgrad.grad(lambda m: fnp.sum(fnp.abs(fsl.schur(m, output="complex")[0]) ** 2)),
            (m,),
        ),
    }
    for name, (f, args) in cases.items():
        got = fgrad.tree_util.tree_leaves(f(*(da.from_array(a, chunks=1) for a in args)))
        assert all(isinstance(v, da.Array) for v in got), name
        with dask.config.set(scheduler="sync"):
            (got,) = dask.compute(got)
        want = fgrad.tree_util.tree_leaves(f(*args))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=name)


def test_jitted_derivatives_of_prod_and_cumprod_along_a_chunked_axis_have_eagers_tasks(lazy):
    """Under jit the scans' shifts were not rechunked (a traced value was left as it was):
    jvp(cumprod) of 3,200 rows in 4 chunks had 604,228 tasks, against 1,137 eagerly."""
    values = 1.0 + 1e-3 * np.random.default_rng(0).standard_normal((3_200, 3))
    x = da.from_array(values, chunks=(800, 3))
    for f in (
        fgrad.grad(lambda x: fnp.sum(fnp.prod(x, axis=0))),
        fgrad.grad(lambda x: fnp.sum(fnp.cumprod(x, axis=0))),
        lambda x: fgrad.jvp(lambda x: fnp.cumprod(x, axis=0), (x,), (x,))[1],
    ):
        jitted = fgrad.jit(f)
        for y in (x, x * 1.001):  # the record, then a replay on new values
            eager, recorded = f(y), jitted(y)
            assert _tasks(recorded) == _tasks(eager) and recorded.chunks == y.chunks
            with dask.config.set(scheduler="sync"):
                eager, recorded = dask.compute(eager, recorded)
            np.testing.assert_array_equal(recorded, eager)


def test_poisson_with_a_dask_k_or_loc_is_lazy_and_scipys(lazy):
    """poisson read k and loc with NumPy's asarray, which computed a Dask k or loc (and gave a
    NumPy result); they stay lazy, and the values and the derivative in mu are SciPy's."""
    import scipy.stats

    import fgrad.scipy.stats as stats

    k = np.array([0.0, 1.0, 2.5, 3.0, -1.0, np.nan, 7.0, 4.0])
    mu, loc = 2.5, 1.0
    lazy_k, lazy_loc = da.from_array(k, chunks=3), da.from_array(np.array(loc))
    for fn in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
        want = getattr(scipy.stats.poisson, fn)(k, mu, loc)
        for got in (
            getattr(stats.poisson, fn)(lazy_k, mu, loc),
            getattr(stats.poisson, fn)(k, mu, lazy_loc),
        ):
            assert isinstance(got, da.Array), fn
            np.testing.assert_allclose(got.compute(scheduler="sync"), want, rtol=1e-12, err_msg=fn)
    got = fgrad.grad(lambda m: fnp.sum(stats.poisson.logpmf(lazy_k[:4], m)))(mu)
    assert isinstance(got, da.Array)
    want = np.sum(k[:4] / mu - 1.0, where=(k[:4] == np.floor(k[:4])))  # d/dmu (k log mu - mu)
    np.testing.assert_allclose(got.compute(scheduler="sync"), want, rtol=1e-12)


def test_full_like_with_a_dask_or_traced_fill_keeps_the_chunks_and_allocates_nothing(lazy):
    """full_like of a chunked Dask array with a Dask (or traced) fill spread the fill with a
    NumPy `ones` of the whole shape (192 MB allocated to build the graph of a 96 MB array) and
    gave one chunk; the ones are now Dask's, lazy, in the input's chunks, as Dask's own."""
    import tracemalloc

    z = da.ones((4000, 3000), chunks=(1000, 1000)) * 0.5  # 96 MB, were it computed
    fill = da.from_array(np.array(2.5))
    tracemalloc.start()
    try:
        out = fnp.full_like(z, fill)
        out_f32 = fnp.full_like(z, fill, dtype=np.float32)
        grad = fgrad.grad(lambda s: fnp.sum(fnp.full_like(z, s) * z))(fill)
        jitted = fgrad.jit(lambda z, s: fnp.full_like(z, s))(z, fill)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10e6, f"{peak / 1e6:.0f} MB allocated to build lazy graphs"
    for got, dtype in ((out, np.float64), (out_f32, np.float32), (jitted, np.float64)):
        assert isinstance(got, da.Array) and got.chunks == z.chunks and got.dtype == dtype
    small = fnp.full_like(z[:5, :3], fill, dtype=np.float32).compute(scheduler="sync")
    np.testing.assert_array_equal(small, np.full_like(np.zeros((5, 3)), 2.5, dtype=np.float32))
    assert isinstance(grad, da.Array)  # d/ds sum(s * z) = sum(z) = 0.5 * 12e6
    assert float(grad.compute(scheduler="sync")) == 0.5 * 4000 * 3000


_MASKED = {  # the reductions with a where= mask, and their keywords
    "var": dict(axis=0),
    "std": dict(axis=1, ddof=1),
    "prod": dict(axis=0),
    "max": dict(axis=1, initial=0.3),
    "min": dict(axis=0, initial=0.9),
    "nanmean": dict(axis=1),
    "nanvar": dict(axis=0),
    "nanstd": dict(axis=1),
}


@pytest.mark.parametrize("name", _MASKED)
def test_a_dask_where_mask_stays_lazy_under_jit_and_vmap_and_is_numpys(name, lazy):
    """A Dask where= mask of var, std, prod, max, min and the nan reductions was read as a
    value under jit (a guard on its bytes) and vmap (the rows' common mask), which computed
    it; it is an operand there, as mean's: lazy, the values NumPy's, the gradients eager
    fgrad's on NumPy arrays, a jit replay's for another mask too."""
    keywords = _MASKED[name]

    def f(x, w):
        return getattr(fnp, name)(x, where=w, **keywords)

    def g(x, w):  # (a group with no element is nan, and has no gradient)
        return fnp.sum(fnp.where(fnp.isnan(f(x, w)), 0.0, f(x, w)))

    rs = np.random.RandomState(3)
    x = rs.rand(6, 4) + 0.2
    if name.startswith("nan"):
        x[1, 2] = x[4, 0] = np.nan
    masks = [rs.rand(6, 4) > 0.4 for _ in range(2)]
    masks[0][:, 1] = masks[0][2] = False  # groups with no element

    def chunked(a):
        return da.from_array(a, chunks=(1,) * (a.ndim - 2) + (3, 2))

    jit_f, jit_grad = fgrad.jit(f), fgrad.jit(fgrad.grad(g))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, on the empty groups
        wants = [getattr(np, name)(x, where=w, **keywords) for w in masks]
        for w, want in zip(masks, wants):  # the second call replays the record
            for got, want_one in (
                (jit_f(chunked(x), chunked(w)), want),
                (jit_grad(chunked(x), chunked(w)), fgrad.grad(g)(x, w)),
            ):
                assert isinstance(got, da.Array)
                np.testing.assert_allclose(got.compute(scheduler="sync"), want_one, rtol=1e-13)
        got = fgrad.vmap(f)(chunked(np.stack([x, x])), chunked(np.stack(masks)))
        assert isinstance(got, da.Array)
        np.testing.assert_allclose(got.compute(scheduler="sync"), np.stack(wants), rtol=1e-13)


def test_max_of_a_numpy_array_with_a_dask_mask_is_lazy_and_numpys(lazy):
    """max and min of a NumPy array with a Dask where= mask leaked Dask's TypeError (NumPy's
    reduce refuses the mask: 'operand type(s) all returned NotImplemented')."""
    x = np.random.RandomState(4).rand(4, 3)
    w = x > 0.4
    for name, initial in (("max", -1.0), ("min", 2.0), ("nanmax", -1.0), ("nanmin", 2.0)):
        got = getattr(fnp, name)(x, axis=0, where=da.from_array(w, chunks=2), initial=initial)
        assert isinstance(got, da.Array)
        want = getattr(np, name)(x, axis=0, where=w, initial=initial)
        np.testing.assert_array_equal(got.compute(scheduler="sync"), want)


def test_a_numpy_matrix_and_its_transposed_view_stay_two_values_beside_a_dask_array(lazy):
    """Dask names a task by a hash of its NumPy operands' memory, the same for M and its view
    M.T: the solves' Dask copies `zeros + M` and `zeros + M.T` were one task, so grad of
    sum(solve(M, b)**2) with a Dask b was off by 0.026 (its reverse rule solves with M.T), and
    so was solve(M, b) - solve(M.T, b) untraced; an empty write into M and into M.T too."""
    import fgrad.scipy.linalg as fsl

    rs = np.random.RandomState(0)
    m = rs.rand(3, 3) + 3 * np.eye(3)
    b = rs.randn(3, 4)
    bd = da.from_array(b, chunks=(3, 2))
    # the closed forms: d/db sum(solve(M, b)**2) = 2 M^-T M^-1 b
    grad_solve = 2 * np.linalg.solve(m.T, np.linalg.solve(m, b))
    c = m[:, :1] @ m[:1, :] + 4 * np.eye(3)  # solve_sylvester(m, c, q) = x: m x + x c = q
    kron = np.kron(np.eye(3), m) + np.kron(c.T, np.eye(3))  # on x's columns stacked
    x = np.linalg.solve(kron, b[:, :3].reshape(-1, order="F"))
    grad_sylvester = (2 * np.linalg.solve(kron.T, x)).reshape(3, 3, order="F")
    cases = {
        "grad(numpy.linalg.solve)": (
            fgrad.grad(lambda b: fnp.sum(fnp.linalg.solve(m, b) ** 2)),
            bd,
            grad_solve,
        ),
        "grad(scipy.linalg.solve)": (
            fgrad.grad(lambda b: fnp.sum(fsl.solve(m, b) ** 2)),
            bd,
            grad_solve,
        ),
        "grad(solve_sylvester)": (
            fgrad.grad(lambda q: fnp.sum(fsl.solve_sylvester(m, c, q) ** 2)),
            bd[:, :3],
            grad_sylvester,
        ),
        "solve(M, b) - solve(M.T, b)": (
            lambda b: fnp.linalg.solve(m, b) - fnp.linalg.solve(m.T, b),
            bd,
            np.linalg.solve(m, b) - np.linalg.solve(m.T, b),
        ),
        "empty write into M and M.T": (
            lambda v: fnp.at(m)[3:].set(v) - fnp.at(m.T)[3:].set(v),
            da.zeros((0, 3), chunks=1),
            m - m.T,
        ),
    }
    wrong = {}
    for name, (f, arg, want) in cases.items():
        got = f(arg)
        assert isinstance(got, da.Array), name
        error = np.abs(got.compute(scheduler="sync") - want).max()
        if not error < 1e-13:
            wrong[name] = error
    assert not wrong


def test_einsum_path_of_a_dask_operand_beside_a_traced_one_reads_shapes_only():
    # the traced operand got a stand-in but the Dask one was handed to NumPy's einsum_path,
    # which dispatched to Dask with the stand-in and raised
    d = da.from_array(np.arange(12.0).reshape(3, 4), chunks=1)
    b = np.ones((4, 5))

    def f(b):
        path = fnp.einsum_path("ij,jk->ik", d, b)[0]
        return fnp.sum(fnp.einsum("ij,jk->ik", d, b, optimize=path))

    want = np.einsum_path("ij,jk->ik", np.ones((3, 4)), b)[0]
    paths = []
    fgrad.grad(lambda b: paths.append(fnp.einsum_path("ij,jk->ik", d, b)[0]) or fnp.sum(b))(b)
    assert paths == [want]
    np.testing.assert_allclose(
        np.asarray(fgrad.grad(f)(b)), np.tile(np.arange(12.0).reshape(3, 4).sum(0)[:, None], 5)
    )


def test_interp_of_dask_values_at_numpy_points_stays_lazy(lazy):
    # the values were computed to check for a nan from 0 * inf
    x, xp = np.array([0.5, 1.5, 2.5]), np.arange(4.0)
    fp = da.from_array(np.arange(4.0) * 10, chunks=2)
    y = fnp.interp(x, xp, fp)
    g = fgrad.grad(lambda v: fnp.sum(fnp.interp(x, xp, v)))(fp)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(y.compute(), np.interp(x, xp, np.arange(4.0) * 10))
        np.testing.assert_array_equal(g.compute(), [0.5, 1.0, 1.0, 0.5])


def test_piecewise_with_dask_conditions_is_numpys_and_lazy(lazy):
    """A list of Dask conditions was taken for one condition (its first element is not a NumPy
    array): stacked into a (2, 4) mask, with a (2, 4) result whose second row was the
    'otherwise' mask's value; jvp and jacfwd on a Dask x (whose `v < 0` is plain Dask) too."""
    x = np.array([-1.0, 2.0, -3.0, 0.5])
    xd = da.from_array(x, chunks=2)
    cases = [([lambda v: v < 0, lambda v: v >= 0], [1.0, 2.0]), ([lambda v: v < 0], [1.0, 2.0])]
    cases.append(([lambda v: v < 0, lambda v: v > 1], [1.0, 2.0, 3.0]))
    f = lambda v: v * fnp.piecewise(v, [v < 0, v >= 0], [1.0, 2.0])  # f'(v) = [1, 2, 1, 2]
    got = [fnp.piecewise(xd, [c(xd) for c in conds], funcs) for conds, funcs in cases]
    tangent = fgrad.jvp(f, (xd,), (np.ones(4),))[1]
    jacobian = fgrad.jacfwd(f)(xd)
    with dask.config.set(scheduler="sync"):
        for (conds, funcs), y in zip(cases, got):
            want = np.piecewise(x, [c(x) for c in conds], funcs)
            np.testing.assert_array_equal(y.compute(), want)
        np.testing.assert_array_equal(tangent.compute(), [1.0, 2.0, 1.0, 2.0])
        np.testing.assert_array_equal(jacobian.compute(), np.diag([1.0, 2.0, 1.0, 2.0]))


def test_digitize_refuses_dask_bins_and_stays_lazy_with_numpy_bins(lazy):
    """Dask's digitize reads its bins with asarray (to tell increasing from decreasing ones):
    Dask bins were computed, untraced, under jit and under grad, with no warning."""
    x = np.array([-1.5, -0.2, 0.3, 2.0])
    bins = da.from_array(np.array([-1.0, 0.0, 1.0]), chunks=2)
    xd = da.from_array(x, chunks=2)
    for call in (
        lambda: fnp.digitize(x, bins),
        lambda: fnp.digitize(xd, bins, right=True),
        lambda: fgrad.jit(lambda b: fnp.digitize(x, b))(bins),
        lambda: fgrad.grad(lambda v: fnp.sum(v * fnp.digitize(v, bins)))(x),
    ):
        with pytest.raises(DispatchError, match=r"^digitize cannot run on a lazy Dask array"):
            call()
    for b in (np.array([-1.0, 0.0, 1.0]), np.array([1.0, 0.0, -1.0])):
        for right in (False, True):
            got = fnp.digitize(xd, b, right)
            assert isinstance(got, da.Array)
            with dask.config.set(scheduler="sync"):
                np.testing.assert_array_equal(got.compute(), np.digitize(x, b, right))


def test_histogram2d_and_dd_of_numpy_points_with_dask_weights_are_lazy_and_numpys(lazy):
    """histogram sums Dask weights lazily, but histogram2d and histogramdd refused them
    (blaming the range of the sample, which was NumPy's)."""
    rng = np.random.default_rng(1)
    x, y, w = rng.standard_normal(8), rng.standard_normal(8), np.abs(rng.standard_normal(8))
    wd = da.from_array(w, chunks=4)
    got = {
        "2d": fnp.histogram2d(x, y, bins=3, weights=wd)[0],
        "2d-density": fnp.histogram2d(x, y, bins=3, weights=wd, density=True)[0],
        "dd": fnp.histogramdd(np.stack([x, y], 1), bins=(2, 3), weights=wd)[0],
        "grad": fgrad.grad(lambda v: fnp.sum(fnp.histogram2d(x, y, 3, weights=v)[0] ** 2))(wd),
    }
    assert all(isinstance(v, da.Array) for v in got.values())
    counts = np.histogram2d(x, y, bins=3, weights=w)[0]
    bin_of = np.digitize(x, np.linspace(x.min(), x.max(), 4)[1:-1]) * 3
    bin_of += np.digitize(y, np.linspace(y.min(), y.max(), 4)[1:-1])
    want = {
        "2d": counts,
        "2d-density": np.histogram2d(x, y, bins=3, weights=w, density=True)[0],
        "dd": np.histogramdd(np.stack([x, y], 1), bins=(2, 3), weights=w)[0],
        "grad": 2 * counts.ravel()[bin_of],  # d/dw_i sum(h**2) = 2 h[bin of point i]
    }
    with dask.config.set(scheduler="sync"):
        for key, value in got.items():
            np.testing.assert_allclose(value.compute(), want[key], rtol=1e-13, err_msg=key)
    with pytest.raises(DispatchError, match=r"^histogram2d cannot run on a lazy Dask array"):
        fnp.histogram2d(da.from_array(x, chunks=4), y, bins=3, weights=wd)


def test_isin_with_a_kind_on_dask_is_numpys_and_lazy(lazy):
    """kind only picks NumPy's algorithm, and Dask's isin takes none: kind='sort' or 'table'
    raised Dask's "unexpected keyword argument 'kind'", untraced and under grad."""
    e, t = np.array([0, 1, 1, 3]), np.array([1, 3])
    ed = da.from_array(e, chunks=2)
    got = [fnp.isin(ed, t, kind=kind) for kind in ("sort", "table")]
    got.append(fnp.isin(e, da.from_array(t, chunks=1), kind="table", invert=True))
    f = lambda v: fnp.sum(v * fnp.isin(v, np.array([1.0, 3.0]), kind="sort"))
    got.append(fgrad.grad(f)(ed * 1.0))  # d/dv_i = [v_i in t]
    got.append(fgrad.jit(lambda v: fnp.isin(v, t, kind="sort"))(ed))
    assert all(isinstance(v, da.Array) for v in got)
    want = np.isin(e, t, kind="sort")
    with dask.config.set(scheduler="sync"):
        for value, expected in zip(got, [want, want, ~want, want * 1.0, want]):
            np.testing.assert_array_equal(value.compute(), expected)
    # NumPy's checks of kind, made at the call
    with pytest.raises(ValueError, match="Invalid kind: 'hash'"):
        fnp.isin(ed, t, kind="hash")
    with pytest.raises(ValueError, match=r"kind='table' works only on integer and boolean"):
        fnp.isin(ed * 1.0, t, kind="table")


def test_weighted_quantile_refuses_dask_operands_naming_them_and_checks_the_method(lazy):
    """Outside a transform the weighted quantile handed Dask arrays to Dask's quantile: a
    NumPy a with Dask weights raised AttributeError 'numblocks', axis=None Dask's bare
    NotImplementedError, and a method other than 'inverted_cdf' came back as a lazy array
    that raised only when computed."""
    M = np.array([[1.0, 2, 3, 4], [10, 20, 30, 40]])
    W = np.array([[0.0, 0, 0, 1], [5, 0, 0, 1]])
    Md, Wd = da.from_array(M, chunks=1), da.from_array(W, chunks=1)
    inverted = {"method": "inverted_cdf"}
    weighted = lambda a, w: fnp.quantile(a, 0.5, axis=1, weights=w, **inverted)
    for argument, call in [
        ("a", lambda: fnp.quantile(Md, 0.5, weights=Wd, **inverted)),
        ("weights", lambda: weighted(M, Wd)),
        ("weights", lambda: fnp.percentile(M, 50, axis=1, weights=Wd, **inverted)),
        ("q", lambda: fnp.quantile(M, da.from_array([0.5], 1), axis=1, weights=W, **inverted)),
        ("weights", lambda: fgrad.jit(lambda w: weighted(M, w))(Wd)),
        ("a", lambda: fgrad.grad(lambda a: fnp.sum(weighted(a, W)))(Md)),
    ]:
        pattern = rf"with weights cannot run on a lazy Dask array: the values of its {argument} "
        with pytest.raises(DispatchError, match=pattern):
            call()
    with pytest.raises(ValueError, match="Only method 'inverted_cdf' supports weights"):
        fnp.quantile(Md, 0.5, axis=1, weights=Wd)
