"""The pieces of `sparse_jacobian`'s first call that have a fast path or a shortcut: each
against the general path it stands for (`fgrad.sparse`, `fgrad.coloring`)."""

import functools
import pathlib
import sys

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import coloring, sparse

# the benchmark's Brusselator (on a smaller grid), whose first call this file's fast paths serve
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_sparse


@st.composite
def square_patterns(draw):
    n = draw(st.integers(1, 20))
    density = draw(st.floats(0.0, 0.6))
    seed = draw(st.integers(0, 2**32 - 1))
    dense = np.random.default_rng(seed).random((n, n)) < density
    if draw(st.booleans()):
        dense = dense | dense.T
    return sp.csr_array(dense)


@settings(max_examples=80, deadline=None)
@given(square_patterns())
def test_the_symmetry_check_is_a_comparison_with_the_transpose(pattern):
    want = (pattern != pattern.T).nnz == 0
    assert sparse._symmetric(pattern, coloring._columns(pattern)) == want
    # each row's indices reversed (unsorted): never taken for symmetric unless it is (the
    # check may miss a symmetric one: then the rows are coloured too, and the fewer kept)
    n = pattern.shape[0]
    at = [np.arange(pattern.indptr[i + 1] - 1, pattern.indptr[i] - 1, -1) for i in range(n)]
    at = np.concatenate(at).astype(np.int64)
    unsorted = sp.csr_array((pattern.data[at], pattern.indices[at], pattern.indptr), pattern.shape)
    assert not sparse._symmetric(unsorted, coloring._columns(unsorted)) or want
    wide = sp.csr_array(np.ones((2, 3), dtype=bool))
    assert not sparse._symmetric(wide, coloring._columns(wide))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_permuting_columns_of_one_length_is_the_general_gather(n, length, seed):
    """`coloring._permuted`'s fast path (every column as long) against the general gather."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 50, size=n * length)
    indptr = np.arange(0, n * length + 1, max(length, 1)) if length else np.zeros(n + 1, int)
    visit = rng.permutation(n)
    got = coloring._permuted((indptr, rows), visit)
    lengths = np.diff(indptr)[visit]
    want_rows = np.concatenate([rows[indptr[j] : indptr[j + 1]] for j in visit] + [rows[:0]])
    np.testing.assert_array_equal(got[0], np.concatenate([[0], np.cumsum(lengths)]))
    np.testing.assert_array_equal(got[1], want_rows)


def test_one_input_is_differentiated_without_a_slice_or_reshape_in_the_pass():
    """One vector in, one vector out: the recorded pass holds the residual's operations only
    (no reshape of the input or output, no slice of the seeds); a matrix input and a pytree
    still go through the general path, and all three equal jacfwd."""

    def f(x):
        return fnp.concatenate([x[1:] * x[:-1], fnp.sin(x[:1])])

    x = np.random.default_rng(0).uniform(size=6)
    seeds = np.eye(3, 6)
    pass_ = sparse._make_pass(f, (0,), "fwd", seeds)
    pass_(x)
    source = pass_.record_source(x)
    assert "shape=(-1,)" not in source and "(3, -1)" not in source
    for g, arg in (
        (f, x),
        (lambda m: f(m.reshape(-1)), x.reshape(2, 3)),
        (lambda t: f(fnp.concatenate([t["a"], t["b"]])), {"a": x[:2], "b": x[2:]}),
    ):
        want = fgrad.jacfwd(g)(arg)
        want = np.concatenate(
            [np.asarray(w).reshape(6, -1) for w in fgrad.tree_util.tree_flatten(want)[0]], axis=1
        )
        got = fgrad.sparse_jacobian(g)(arg).toarray()
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


def test_the_seeds_are_constants_of_the_recorded_pass():
    """What the pass computes from the seeds alone is computed while it is recorded: the
    Brusselator's replay keeps 18 operations of the 66 or so it had with the seeds an argument (the
    Laplacian of each seed is a constant), and its result is the pass's, bit for bit, at
    another input; the Jacobian equals jacfwd's there."""
    n = 8
    brusselator = functools.partial(bench_sparse.brusselator, n=n)
    rng = np.random.default_rng(1)
    y0, y1 = rng.uniform(size=2 * n * n), rng.uniform(size=2 * n * n)
    pattern = fgrad.jacobian_sparsity(brusselator)(y0)
    seeds = sparse._seeds(coloring.column_coloring(pattern), 2 * n * n)
    pass_ = sparse._make_pass(brusselator, (0,), "fwd", seeds)
    pass_(y0)
    replayed = pass_(y1)
    source = pass_.record_source(y1)
    assert source.count(" = f") < 25  # 18 (about 66 with the seeds an argument)
    pushed = fgrad.vmap(lambda s: fgrad.jvp(brusselator, (y1,), (s,))[1])(seeds)
    np.testing.assert_array_equal(replayed, pushed)
    jac = fgrad.sparse_jacobian(brusselator)
    jac(y0)
    np.testing.assert_allclose(
        jac(y1).toarray(), fgrad.jacfwd(brusselator)(y1), rtol=1e-14, atol=1e-14
    )


def test_a_division_by_a_python_zero_gives_the_infinite_derivative_on_the_first_call():
    # the accumulation's seed tangent was Python's 1.0: the divide rule's 1.0 / 0.0 raised
    # ZeroDivisionError where the call with sparsity= given (and NumPy) gives inf
    x = np.array([1.0, 2.0])
    want = np.array([[np.inf, 0.0], [0.0, np.inf]])
    with np.errstate(divide="ignore"):
        for f in (lambda v: v / 0.0, lambda v: v / 0):
            np.testing.assert_array_equal(fgrad.sparse_jacobian(f)(x).toarray(), want)
        got = fgrad.sparse_jacobian(lambda v: v.astype(np.float32) / 0.0)(x).toarray()
        np.testing.assert_array_equal(got, want)
