"""Sparsity detection (`fgrad.sparsity`) and sparse Jacobians and Hessians (`fgrad.sparse`).

Structured problems whose patterns are known exactly; a sample of the gradient table (all of
it with `FGRAD_FULL=1`), whose detected patterns must hold every nonzero of `jacfwd` and
`hessian` (at the input of the detection, and at other inputs unless the function read
values, in which case each call detects again); the coverage of the rules; the cache; the
errors.
"""

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from gradtable import load
from hypothesis import given, settings, strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import coloring, sparse, sparsity
from fgrad.tree_util import tree_flatten


def _dense(pattern):
    return pattern.toarray().astype(bool)


def _flat_jacobian(fun, x):
    """jacfwd as a 2-D array (flat outputs, flat inputs)."""
    leaves = tree_flatten(fgrad.jacfwd(fun)(x))[0]
    return np.concatenate([np.asarray(j).reshape(-1, np.size(x)) for j in leaves], axis=0)


def _assert_equal_to_jacfwd(fun, x, **kw):
    """The first call (accumulated where it can be, else found, coloured and passed) and the
    second (the plan's pass) both give jacfwd's entries."""
    jac = fgrad.sparse_jacobian(fun, **kw)
    want = _flat_jacobian(fun, x)
    scale = np.abs(want).max(initial=0.0)
    for _ in range(2):
        got = jac(x)
        assert isinstance(got, sp.csr_array)
        np.testing.assert_allclose(got.toarray(), want, rtol=1e-14, atol=1e-15 * scale)
    return got


# --- structured problems --------------------------------------------------------------------------


def tridiagonal_residual(x):
    inner = x[:-2] - 2.0 * x[1:-1] + x[2:] + x[1:-1] ** 3
    return fnp.concatenate([x[:1] - 1.0, inner, x[-1:] + 1.0])


def banded(x, k=2):  # each output depends on x[i - k .. i + k]
    padded = fnp.pad(x, k)
    n = x.shape[0]
    return sum(fnp.sin(padded[j : j + n]) * (j + 1) for j in range(2 * k + 1))


def block_diagonal(x):  # blocks of 3: a 3x3 dense block each
    blocks = fnp.reshape(x, (-1, 3))
    return fnp.reshape(blocks * fnp.sum(blocks**2, axis=1, keepdims=True), (-1,))


def arrowhead(x):  # each output depends on itself and x[0]; the last one on everything
    return fnp.concatenate([x[:-1] * x[0], fnp.sum(x**2, keepdims=True)])


def stencil_2d(u):  # the 5-point Laplacian of a periodic grid, plus a reaction term
    lap = (
        fnp.roll(u, 1, axis=0)
        + fnp.roll(u, -1, axis=0)
        + fnp.roll(u, 1, axis=1)
        + fnp.roll(u, -1, axis=1)
        - 4.0 * u
    )
    return lap + u**2


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _band(n, k):
    i, j = np.indices((n, n))
    return np.abs(i - j) <= k


def test_tridiagonal_pattern_and_values():
    x = np.linspace(-1.0, 1.0, 12)
    want = _band(12, 1)
    want[0, 1] = want[-1, -2] = False  # the boundary rows: x[0] - 1 and x[-1] + 1
    assert (_dense(fgrad.jacobian_sparsity(tridiagonal_residual)(x)) == want).all()
    got = _assert_equal_to_jacfwd(tridiagonal_residual, x)
    assert got.nnz == 3 * 12 - 2 - 2  # the first and last rows have one entry each


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_banded(mode):
    x = np.linspace(0.1, 2.0, 15)
    assert (_dense(fgrad.jacobian_sparsity(banded)(x)) == _band(15, 2)).all()
    _assert_equal_to_jacfwd(banded, x, mode=mode)


def test_block_diagonal():
    x = np.linspace(0.5, 1.5, 12)
    want = np.kron(np.eye(4, dtype=bool), np.ones((3, 3), dtype=bool))
    assert (_dense(fgrad.jacobian_sparsity(block_diagonal)(x)) == want).all()
    _assert_equal_to_jacfwd(block_diagonal, x)


def test_arrowhead_takes_the_fewer_passes():
    x = np.linspace(0.5, 1.5, 10)
    want = np.eye(10, dtype=bool)
    want[:, 0] = True
    want[-1, :] = True
    assert (_dense(fgrad.jacobian_sparsity(arrowhead)(x)) == want).all()
    # a dense row and a dense column: columns need 10 colours, rows 2 (VJPs): auto pulls back
    for mode in ("fwd", "rev", "auto"):
        _assert_equal_to_jacfwd(arrowhead, x, mode=mode)


def test_2d_stencil():
    u = np.random.default_rng(0).uniform(size=(6, 7))
    got = _dense(fgrad.jacobian_sparsity(stencil_2d)(u))
    assert got.sum(axis=1).tolist() == [5] * 42
    _assert_equal_to_jacfwd(stencil_2d, u)


def brusselator(y, n=8):  # the 2-D Brusselator on a periodic n x n grid, u and v stacked
    u, v = fnp.reshape(y[: n * n], (n, n)), fnp.reshape(y[n * n :], (n, n))
    du = stencil_2d(u) - u**2 + 1.0 + u * u * v - 4.4 * u
    dv = stencil_2d(v) - v**2 + 3.4 * u - u * u * v
    return fnp.concatenate([fnp.reshape(du, (-1,)), fnp.reshape(dv, (-1,))])


def _count_passes(monkeypatch) -> list:
    """The number of seeds (passes: JVPs, VJPs or HVPs) of each sparse plan made from now on."""
    seeds: list = []
    original = sparse._Plan.__init__

    def spy(self, pattern, seeds_, *rest):
        seeds.append(seeds_.shape[0])
        original(self, pattern, seeds_, *rest)

    monkeypatch.setattr(sparse._Plan, "__init__", spy)
    return seeds


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_every_order_gives_the_jacobian_in_its_number_of_passes(mode, monkeypatch):
    y = np.random.default_rng(2).uniform(size=128)
    seeds = _count_passes(monkeypatch)
    for order in ("natural", "smallest_last", "recursive_largest_first"):
        _assert_equal_to_jacfwd(brusselator, y, mode=mode, order=order)
    # on the 8 x 8 grid (6 at least: a row has 6 nonzeros): the natural order, which also
    # visits the two stacked fields point by point, takes 8; smallest-last 10 and RLF 9
    assert seeds == [8, 10, 9]


def test_chained_rosenbrock_hessian():
    x = np.random.default_rng(1).uniform(-1.0, 1.0, 20)
    pattern = fgrad.hessian_sparsity(rosenbrock)(x)
    assert (_dense(pattern) == _band(20, 1)).all()
    got = fgrad.sparse_hessian(rosenbrock)(x)
    want = fgrad.hessian(rosenbrock)(x)
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-14, atol=1e-14 * np.abs(want).max())


@pytest.mark.parametrize("order", ["natural", "largest_first", "smallest_last"])
def test_a_double_arrow_hessian_takes_three_passes_in_every_order(order, monkeypatch):
    # two dense rows and columns (the last two) and the diagonal; the natural order took 40
    n, a, b = 40, 38, 39
    x = np.linspace(-1.0, 1.0, n)
    seeds = _count_passes(monkeypatch)
    f = lambda x: 0.5 * fnp.sum(x * x) + x[a] * fnp.sum(x) + x[b] * fnp.sum(x)
    got = fgrad.sparse_hessian(f, order=order)(x).toarray()
    # the closed form: I + e_a 1' + 1 e_a' + e_b 1' + 1 e_b'
    want = np.eye(n)
    for k in (a, b):
        want[k, :] += 1.0
        want[:, k] += 1.0
    np.testing.assert_array_equal(got, want)
    assert seeds == [3]


def test_hessian_of_a_function_of_several_arguments_and_a_given_pattern():
    def f(a, b):
        return fnp.sum(a**2 * b[:3]) + fnp.sum(fnp.sin(b))

    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, -0.5, 1.5, 2.0])
    got = fgrad.sparse_hessian(f, argnums=(0, 1))(a, b).toarray()
    hs = fgrad.hessian(f, argnums=(0, 1))(a, b)
    want = np.block([[hs[0][0], hs[0][1]], [hs[1][0], hs[1][1]]])
    np.testing.assert_allclose(got, want, rtol=1e-14)
    given = fgrad.hessian_sparsity(f, argnums=(0, 1))(a, b)
    again = fgrad.sparse_hessian(f, argnums=(0, 1), sparsity=given)(a, b).toarray()
    np.testing.assert_allclose(again, want, rtol=1e-14)


# --- the pattern is global ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fun, both",
    [
        (lambda x: fnp.where(x[:3] > 0, x[:3], x[1:]), True),
        (lambda x: fnp.maximum(x[:3], x[1:]), True),
        (lambda x: fnp.abs(x[:3]) * x[1:], True),
        (lambda x: fnp.clip(x[:3], -0.5, 0.5) + (x[1:] > 0) * 2.0, False),
    ],
    ids=["where", "maximum", "abs", "clip-and-comparison"],
)
def test_both_sides_are_kept_whichever_is_taken(fun, both):
    x = np.array([1.0, -2.0, 3.0, -4.0])
    got = _dense(fgrad.jacobian_sparsity(fun)(x))
    want = np.eye(3, 4, dtype=bool) | (np.eye(3, 4, k=1, dtype=bool) & both)
    assert (got == want).all(), got.astype(int)  # a comparison gives a constant: no dependency
    for y in (x, -x, x[::-1].copy(), 0.1 * x):  # the same pattern holds at every input
        assert not ((_flat_jacobian(fun, y) != 0) & ~got).any()


def test_a_comparison_gives_a_constant():
    got = fgrad.jacobian_sparsity(lambda x: (x > 0) * 1.0 + fnp.floor(x))(np.ones(3))
    assert got.nnz == 0 and got.shape == (3, 3)


def test_a_python_branch_follows_the_path_and_each_call_detects_again():
    def f(x):
        if x[0] > 0:
            return x * 2.0
        return x * x[::-1]

    jac = fgrad.sparse_jacobian(f)
    pos, neg = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 2.0, 3.0])
    assert fgrad.jacobian_sparsity(f)(pos).nnz == 3
    assert fgrad.jacobian_sparsity(f)(neg).nnz == 5  # the anti-diagonal joins in
    for x in (pos, neg, pos):
        np.testing.assert_allclose(jac(x).toarray(), _flat_jacobian(f, x), rtol=1e-15)


def test_sort_reads_values_and_stays_exact():
    x = np.array([3.0, 1.0, 2.0])
    jac = fgrad.sparse_jacobian(fnp.sort)
    for y in (x, x[::-1].copy(), np.array([1.0, 3.0, 2.0])):
        np.testing.assert_array_equal(jac(y).toarray(), _flat_jacobian(fnp.sort, y))


def test_under_jit_a_pattern_found_from_values_is_found_again_at_each_input():
    """sort and an index from argmax make the pattern depend on values (no Python branch, so
    no guard of jit's own): the record replayed the first input's pattern, filled with another
    input's pass (sort at [1, 2, 3]: [[0, 2, 0], [0, 0, 4], [6, 0, 0]], not diag(2, 4, 6)).
    The record now guards the inputs; past jit's max_paths, it runs eagerly, still right."""
    sort_sq = lambda x: fnp.sort(x) ** 2
    at_argmax = lambda x: x[fnp.argmax(x)] * x
    rng = np.random.default_rng(5)
    inputs = [np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 3.0])]
    inputs += [rng.permutation(4)[:3] + 1.0 for _ in range(10)]
    for fun in (sort_sq, at_argmax):
        jac, pattern = fgrad.sparse_jacobian(fun), fgrad.jacobian_sparsity(fun)
        jitted = fgrad.jit(lambda x: jac(x).toarray())
        jitted_pattern = fgrad.jit(lambda x: pattern(x).toarray())
        hes = fgrad.sparse_hessian(lambda x: fnp.sum(fun(x) ** 2))
        jitted_hes = fgrad.jit(lambda x: hes(x).toarray())
        with pytest.warns(RuntimeWarning, match="runs eagerly"):
            for x in inputs + inputs[:3]:
                want = _flat_jacobian(fun, x)
                np.testing.assert_array_equal(jitted(x), want)
                assert (np.asarray(jitted_pattern(x)) >= (want != 0)).all()
                np.testing.assert_allclose(
                    jitted_hes(x), fgrad.hessian(lambda x: fnp.sum(fun(x) ** 2))(x), rtol=1e-14
                )


# --- the gradient table ---------------------------------------------------------------------------

_ROWS = [
    row
    for row in load()[0]
    if len(row.args()) == 1
    and np.ndim(row.args()[0]) >= 1
    and np.asarray(row.args()[0]).dtype.kind == "f"
]
# The quick suite takes every 4th row (every 8th for Hessians); `FGRAD_FULL=1` takes them all.
FULL = bool(os.environ.get("FGRAD_FULL"))
SAMPLE = _ROWS if FULL else _ROWS[::4]


def _inputs(row):
    return [dataclasses.replace(row, seed=row.seed + 101 * k).args()[0] for k in range(3)]


@pytest.mark.parametrize("row", SAMPLE, ids=lambda r: r.id)
def test_the_pattern_holds_every_nonzero_of_jacfwd(row):
    xs = _inputs(row)
    shapes = {tuple(np.shape(leaf)) for x in xs for leaf in tree_flatten(row.fn(x))[0]}
    if len(shapes) > 1 and len(tree_flatten(row.fn(xs[0]))[0]) == 1:
        pytest.skip("the output's shape depends on the input's values")
    values, tree = sparse._inputs((xs[0],), (0,), "test")
    pattern, reads, _ = sparse._detect(row.fn, (xs[0],), (0,), values, tree, "test")
    pattern = _dense(pattern)
    for k, x in enumerate(xs):
        nonzero = _flat_jacobian(row.fn, x) != 0
        if k == 0 or not reads:  # found at this input, or global
            assert not (nonzero & ~pattern).any(), f"input {k}: a nonzero is missing"
        else:  # the path may differ: the pattern found at this input holds it
            here = _dense(fgrad.jacobian_sparsity(row.fn)(x))
            assert not (nonzero & ~here).any(), f"input {k}: a nonzero is missing"
    _assert_equal_to_jacfwd(row.fn, xs[1])


@pytest.mark.parametrize("row", SAMPLE, ids=lambda r: r.id)
def test_an_accumulated_jacobian_is_jacfwds_with_detections_pattern(row):
    """A first call's one run (`fgrad.accumulation`), where the row's operations allow it:
    jacfwd's entries, and the pattern and reads detection finds, so that the plan made from
    it at the second call is the one detection would have made."""
    x = row.args()[0]
    values, tree = sparse._inputs((x,), (0,), "test")
    found = sparse._accumulate(row.fn, (x,), (0,), values, tree, "test")
    if found is None:  # an operation without an accumulation rule, or not float64
        return
    jac, reads = found
    want = _flat_jacobian(row.fn, x)
    scale = np.abs(want).max(initial=0.0)
    np.testing.assert_allclose(jac.toarray(), want, rtol=1e-14, atol=1e-15 * scale)
    pattern, detected_reads, _ = sparse._detect(row.fn, (x,), (0,), values, tree, "test")
    assert (sparse._pattern_of(jac) != pattern).nnz == 0
    assert reads == detected_reads


# Steps of a random residual for the accumulation property below: each takes the running value
# h (a vector of 12) and the input x, and returns a vector of 12.
_STEPS = [
    lambda h, x: fnp.sin(h) * x,
    lambda h, x: h * h - 2.0 * x,
    lambda h, x: fnp.roll(h, 3) + fnp.flip(x),
    lambda h, x: fnp.concatenate([h[4:], h[:4] ** 3]),
    lambda h, x: fnp.where(x > 0.5, h, fnp.exp(h)),  # a mask read from x: both sides kept
    lambda h, x: fnp.where(np.arange(12) % 3 == 0, h, 0.0),  # a fixed mask: one side
    lambda h, x: fnp.reshape(fnp.transpose(fnp.reshape(h, (3, 4))), (12,)) / (1.0 + x * x),
    lambda h, x: fnp.maximum(h, x[::-1]) + fnp.abs(h[2]) * h,
    lambda h, x: (
        fnp.tanh(h[::2])[:, None]
        * x[None, :2]
        @ np.ones(2)
        * np.ones((2, 1)).ravel()[0]
        * fnp.concatenate([h[1::2], h[::2]])
    ),
    lambda h, x: fnp.astype(h, np.float32).astype(np.float64) + x,
    lambda h, x: fnp.ravel(
        fnp.reshape(h, (3, 4)) * fnp.sum(fnp.reshape(x, (3, 4)), 1, keepdims=True)
    ),
    lambda h, x: h + fnp.mean(h[:3]) * fnp.sum(x * x),  # sums of a few and of all elements
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, len(_STEPS) - 1), min_size=1, max_size=6), st.integers(0, 2**31))
def test_an_accumulated_residual_of_random_steps_is_jacfwds(steps, seed):
    """Compositions of elementwise operations, moves and masks: where the accumulation runs,
    its entries are jacfwd's and its pattern and reads detection's."""

    def residual(x):
        h = x
        for k in steps:
            h = _STEPS[k](h, x)
        return h

    x = np.random.default_rng(seed).uniform(0.0, 1.0, 12)
    values, tree = sparse._inputs((x,), (0,), "test")
    found = sparse._accumulate(residual, (x,), (0,), values, tree, "test")
    if found is None:  # a product of matrices, a float32 value or an overflow: detection's path
        if not any(k in (8, 9) for k in steps):
            h, largest = x, 0.0
            for k in steps:
                h = _STEPS[k](h, x)
                largest = max(largest, float(np.max(np.abs(h))))
            assert not largest < 100.0  # (exp(100) ** 7: inf)
        return
    jac, reads = found
    want = _flat_jacobian(residual, x)
    if np.isfinite(want).all():  # (past an overflow, which of inf and nan fills a row differs)
        scale = np.abs(want).max(initial=0.0)
        np.testing.assert_allclose(jac.toarray(), want, rtol=1e-13, atol=1e-14 * scale)
    pattern, detected_reads, _ = sparse._detect(residual, (x,), (0,), values, tree, "test")
    assert (sparse._pattern_of(jac) != pattern).nnz == 0
    assert reads == detected_reads


def test_a_value_traced_outside_that_fun_closes_over_is_differentiated():
    # The arguments are plain, but fun closes over a value an outer transform traces: the
    # entries depend on it (their derivative was 0, and an outer jit kept the first value)
    x = np.arange(3.0)
    for kw in ({}, {"sparsity": np.eye(3)}):

        def total(a, kw=kw):
            return fnp.sum(fgrad.sparse_jacobian(lambda x: x * a, **kw)(x).toarray())

        assert fgrad.grad(total)(2.0) == 3.0
    hess = lambda a: fnp.sum(fgrad.sparse_hessian(lambda x: fnp.sum(x**3) * a)(x).toarray())
    assert fgrad.grad(hess)(2.0) == np.sum(6.0 * x)
    replayed = fgrad.jit(lambda a: fgrad.sparse_jacobian(lambda x: x * a)(x).toarray())
    for a in (2.0, 5.0, 2.0):
        np.testing.assert_array_equal(replayed(a), a * np.eye(3))


_CLOSED_OVER_PRODUCTS = {  # each one's Jacobian in x is outer(c, c) (or its lanes)
    "matmul": lambda c, x: fnp.outer(c, c) @ x,
    "einsum": lambda c, x: fnp.einsum("ij,j->i", fnp.outer(c, c), x),
    "matvec": lambda c, x: fnp.matvec(fnp.outer(c, c), x),
    "convolve": lambda c, x: fnp.convolve(c, x),
    "where": lambda c, x: fnp.where(c > 0.5, x, 0.0),
}


@pytest.mark.parametrize(
    "product", list(_CLOSED_OVER_PRODUCTS.values()), ids=list(_CLOSED_OVER_PRODUCTS)
)
def test_the_zeros_of_a_closed_over_value_being_differentiated_are_not_structural(product):
    """fun closes over c, which an outer grad, jvp or jit traces: c[0] = 0 here is no zero
    of every point (grad of c'Wc through the Jacobian outer(c, c) was [24, 38, 50], not
    (W + W')c = [26, 38, 50]; jit replayed the first c's pattern)."""
    x0 = np.array([1.0, 2.0, 3.0])
    w = np.arange(1.0, 1.0 + 3 * len(product(x0, x0))).reshape(-1, 3)

    def total(c, sparse):
        f = lambda x: product(c, x)
        jac = fgrad.sparse_jacobian(f)(x0).toarray() if sparse else fgrad.jacfwd(f)(x0)
        return fnp.sum(jac * w)

    c = np.array([0.0, 1.0, 2.0])
    want = fgrad.grad(total)(c, False)
    np.testing.assert_allclose(fgrad.grad(total)(c, True), want, rtol=1e-14)
    t = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(
        fgrad.jvp(lambda c: total(c, True), (c,), (t,))[1],
        fgrad.jvp(lambda c: total(c, False), (c,), (t,))[1],
        rtol=1e-14,
    )
    replayed = fgrad.jit(lambda c: total(c, True))
    for c_k in (c, c[::-1], c + 1.0):
        np.testing.assert_allclose(replayed(c_k), total(c_k, False), rtol=1e-14)


def test_accumulation_covers_residuals_and_keeps_the_pattern_global():
    # the structured problems above accumulate, entries and pattern as detection's
    y = np.random.default_rng(3).uniform(size=128)
    for fun, x in [(brusselator, y), (tridiagonal_residual, y[:9]), (banded, y[:12])]:
        values, tree = sparse._inputs((x,), (0,), "test")
        jac, reads = sparse._accumulate(fun, (x,), (0,), values, tree, "test")
        np.testing.assert_allclose(jac.toarray(), _flat_jacobian(fun, x), rtol=1e-14, atol=1e-13)
        pattern = sparse._detect(fun, (x,), (0,), values, tree, "test")[0]
        assert (sparse._pattern_of(jac) != pattern).nnz == 0 and not reads
    # where, maximum and abs keep both sides (an entry whose derivative is 0 here is stored)
    x = np.array([-1.0, 2.0, 0.5])
    jac = fgrad.sparse_jacobian(lambda x: fnp.where(x > 0, x[::-1], 2.0 * x) + fnp.abs(x))(x)
    # (0, 2): where's side not taken at x[0] < 0, 0 here and stored
    assert jac.nnz == 5 and jac.toarray()[0, 2] == 0.0 and sparse._pattern_of(jac)[0, 2]
    # a float argument not differentiated may change between calls: what it decides is not
    # fixed (a where on it keeps both sides), and it adds no column
    f = lambda x, t: fnp.where(t > 0.5, x, x[::-1]) * t
    jac = fgrad.sparse_jacobian(f)
    for t in (0.25, 0.75, 0.25):
        np.testing.assert_allclose(jac(x, t).toarray(), fgrad.jacfwd(f)(x, t))
    # a reduction has no accumulation rule: detection's path, the same result
    g = lambda x: fnp.cumsum(x) * x
    values, tree = sparse._inputs((x,), (0,), "test")
    assert sparse._accumulate(g, (x,), (0,), values, tree, "test") is None
    np.testing.assert_allclose(fgrad.sparse_jacobian(g)(x).toarray(), fgrad.jacfwd(g)(x))


def _diagonal_calls(fun, args, mode, calls=3):
    """The diagonals of `calls` calls of one `sparse_jacobian` (the first accumulated where it
    can be), each checked to store nothing off the diagonal."""
    jac = fgrad.sparse_jacobian(fun, mode=mode)
    out = []
    for _ in range(calls):
        got = jac(*args)
        assert got.nnz == got.shape[0] == got.shape[1]
        out.append(got.diagonal())
    return out


def test_a_first_call_keeps_the_nan_of_0_times_inf():
    """0 * inf in the chain rule is nan, in jacfwd and jacrev alike: the first call (the
    accumulated one) gave 1.0 at x = 0 for x + w * sqrt(x) with w = 0 and for
    log(x**2) * 0 + x, its later calls nan. Each call of each mode gives the IEEE closed form."""
    x = np.array([0.0, 1.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        weighted = 1.0 + 0.0 * (0.5 / np.sqrt(x))  # d/dx (x + w sqrt(x)), w = 0
        logged = 0.0 * (2.0 / x) + 1.0  # d/dx (log(x^2) * 0 + x)
    assert np.isnan(weighted[0]) and np.isnan(logged[0])
    cases = [
        (lambda x, w: x + w * fnp.sqrt(x), (x, 0.0), weighted),
        (lambda x: fnp.log(x**2) * 0 + x, (x,), logged),
    ]
    with np.errstate(divide="ignore", invalid="ignore"):
        for fun, args, want in cases:
            for mode in ("auto", "fwd", "rev"):
                for got in _diagonal_calls(fun, args, mode):
                    np.testing.assert_array_equal(got, want)


def test_every_call_of_a_mode_gives_that_modes_entries():
    """Where 0 * inf falls differently forward and backward, each call of mode "fwd" gives
    jacfwd's entries and each of mode "rev" jacrev's: the first call of mode "rev" (accumulated
    forward) gave jacfwd's, its later calls jacrev's. nan_to_num(log(x)) at 0: forward,
    nan_to_num turns log's tangent -inf into 0; backward, log divides nan_to_num's cotangent 0
    by x = 0. where(x > 0, log|x|, x) at 0: forward, the side not taken is dropped (1);
    backward, it gets the cotangent 0, divided by x = 0 (nan)."""
    zeros, signs = np.zeros(3), np.array([0.0, 1.0, -1.0])
    cases = [
        (lambda x: fnp.nan_to_num(fnp.log(x)), zeros, [0.0] * 3, [np.nan] * 3),
        (lambda x: fnp.where(x > 0, fnp.log(fnp.abs(x)), x), signs, [1.0] * 3, [np.nan, 1, 1]),
    ]
    with np.errstate(divide="ignore", invalid="ignore"):
        for fun, x, forward, backward in cases:
            np.testing.assert_array_equal(np.diag(fgrad.jacfwd(fun)(x)), forward)
            np.testing.assert_array_equal(np.diag(fgrad.jacrev(fun)(x)), backward)
            for mode, want in (("fwd", forward), ("rev", backward)):
                for got in _diagonal_calls(fun, (x,), mode):
                    np.testing.assert_array_equal(got, want)


HESSIAN_SAMPLE = [row for row in _ROWS if row.order >= 2][
    slice(None) if FULL else slice(1, None, 8)
]


@pytest.mark.parametrize("row", HESSIAN_SAMPLE, ids=lambda r: r.id)
def test_the_hessian_pattern_holds_every_nonzero_of_hessian(row):
    def f(x):  # a scalar of every output: a weighted sum of their real parts
        leaves = tree_flatten(row.fn(x))[0]
        return sum(
            fnp.sum(fnp.real(leaf) * np.linspace(0.5, 1.5, np.size(leaf)).reshape(np.shape(leaf)))
            for leaf in leaves
        )

    xs = _inputs(row)
    values, tree = sparse._inputs((xs[0],), (0,), "test")
    pattern, reads = sparse._hessian_pattern(f, (xs[0],), (0,), values, tree, "test")
    pattern = _dense(pattern)
    for k, x in enumerate(xs):
        nonzero = np.asarray(fgrad.hessian(f)(x)).reshape(pattern.shape) != 0
        if k == 0 or not reads:
            assert not (nonzero & ~pattern).any(), f"input {k}: a nonzero is missing"
    want = np.asarray(fgrad.hessian(f)(xs[1])).reshape(pattern.shape)
    got = fgrad.sparse_hessian(f)(xs[1]).toarray()
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14 * np.abs(want).max(initial=0.0))


def test_the_check_catches_a_rule_that_drops_a_dependency(monkeypatch):
    """The containment check above fails for a moves rule that loses the last element."""
    getitem = fgrad.numpy.shaping._getitem_p
    right = sparsity.rules[getitem]

    def wrong(vals, pats, ans, params):
        p = right(vals, pats, ans, params).tolil()
        p[p.shape[0] - 1, :] = False
        return p.tocsr()

    monkeypatch.setitem(sparsity.rules, getitem, wrong)
    f = lambda x: x[1:] * 2.0
    x = np.arange(1.0, 4.0)
    pattern = _dense(fgrad.jacobian_sparsity(f)(x))
    assert ((_flat_jacobian(f, x) != 0) & ~pattern).any()


# --- the rules ------------------------------------------------------------------------------------


def _primitives():
    import importlib

    from fgrad.core import NondiffPrimitive, Primitive

    for name in ("special", "linalg", "signal", "integrate", "stats"):
        importlib.import_module(f"fgrad.scipy.{name}")
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("fgrad") or module is None:
            continue
        for v in vars(module).values():
            v = getattr(v, "primitive", v)
            if isinstance(v, (Primitive, NondiffPrimitive)):
                found[id(v)] = (name, v)
    return list(found.values())


def test_every_primitive_has_a_sparsity_rule(capsys):
    found = _primitives()
    missing = sorted(f"{m}.{p.name}" for m, p in found if sparsity.rule_kind(p) is None)
    assert not missing, f"no sparsity rule: {missing}"
    kinds = {}
    for _, p in found:
        kinds.setdefault(sparsity.rule_kind(p), set()).add(p.name)
    with capsys.disabled():
        print(f"\nsparsity rules of {len(found)} primitives:")
        for kind in sorted(kinds):
            print(f"  {kind} ({len(kinds[kind])}): {' '.join(sorted(kinds[kind]))}")
    assert len(kinds["elementwise"]) > 50  # derived from the batching table, not listed here
    for name, reason in sparsity.dense_reasons().items():
        assert len(reason) > 30, f"{name}: say why its rule is a dense block"


@pytest.mark.parametrize("size, width", [(0, 3), (5, 0), (7, 1), (50, 5), (300, 12)])
def test_a_narrow_pattern_becomes_the_csr_array_of_its_columns(size, width):
    cols = np.random.default_rng(size + width).integers(-1, 20, (size, width))
    got = sparsity._csr(sparsity._Narrow(cols, 20))
    want = np.zeros((size, 20), dtype=bool)
    rows = np.repeat(np.arange(size), width).reshape(size, width)
    want[rows[cols >= 0], cols[cols >= 0]] = True
    np.testing.assert_array_equal(got.toarray(), want)
    assert got.has_canonical_format  # sorted, no repeats


@pytest.mark.parametrize(
    "fun, size",
    [(tridiagonal_residual, 30), (banded, 30), (block_diagonal, 30), (brusselator, 128)],
    ids=["tridiagonal", "banded", "block_diagonal", "brusselator"],
)
def test_inputs_start_narrow_or_csr_with_one_pattern(fun, size, monkeypatch):
    """An input of at most `_NARROW_ROWS` elements starts as lists of columns, a larger one as
    CSR (whose unions are merges in C): both find the same pattern."""
    x = np.random.default_rng(0).uniform(0.1, 1.0, size)
    narrow = _dense(fgrad.jacobian_sparsity(fun)(x))
    monkeypatch.setattr(sparsity, "_NARROW_ROWS", 0)
    np.testing.assert_array_equal(_dense(fgrad.jacobian_sparsity(fun)(x)), narrow)


@pytest.mark.parametrize("copies", ["few", "many"])
def test_long_elementwise_chains_keep_every_dependency(copies):
    """Elementwise code keeps each row's columns as a list (`sparsity._Narrow`) and a union
    puts the lists side by side; past 32 per row the repeats are sorted out ("few": 3 distinct
    moves, 40 times), and a row still wide makes the pattern CSR ("many": 40 permutations).
    Either way the pattern is jacfwd's, also where the chain meets a reduction's CSR pattern."""
    rng = np.random.default_rng(0)
    if copies == "few":
        moves = [np.roll(np.arange(50), k % 3) for k in range(40)]
    else:
        moves = [rng.permutation(50) for _ in range(40)]

    def f(x):
        out = x
        for m in moves:
            out = out * 0.5 + fnp.sin(x[m])
        return fnp.concatenate([out, out[:5] * fnp.sum(x[:3])])

    x = rng.uniform(0.1, 1.0, 50)
    got = _dense(fgrad.jacobian_sparsity(f)(x))
    np.testing.assert_array_equal(got, _flat_jacobian(f, x) != 0)
    fullest = got[:50].sum(axis=1).max()
    assert fullest == 3 if copies == "few" else fullest > sparsity._WIDE // 2  # CSR then


_MANY_PATHS = {  # each output reaches an input along 256 or 512 paths
    "sum": lambda x: fnp.sum(fnp.repeat(x, 256) ** 2, keepdims=True),
    "cumsum": lambda x: fnp.cumsum(fnp.repeat(x, 256))[-1:],
    "matmul": lambda x: np.ones((2, 256)) @ fnp.tile(x, 256).reshape(256, -1),
    "mean over a broadcast": lambda x: fnp.mean(x * np.ones((512, 1)), axis=0),
    "add at": lambda x: fnp.sin(x[:1]).at[np.zeros(768, dtype=int)].add(fnp.tile(x, 256)),
    "einsum": lambda x: fnp.einsum("ij,ij->i", fnp.tile(x, (2, 256)), np.ones((2, 768))),
    "convolve": lambda x: fnp.convolve(fnp.repeat(x[:1], 256), np.ones(256))[255:256],
}


@pytest.mark.parametrize("fun", list(_MANY_PATHS.values()), ids=list(_MANY_PATHS))
def test_many_paths_to_one_output_keep_the_entry(fun):
    """A pattern is a boolean product (`sparsity._through`), never a count of paths: in
    int8, 256 paths from an input to an output summed to 0 and the entry was dropped."""
    x = np.array([1.0, 2.0, 3.0])
    want = _flat_jacobian(fun, x) != 0
    assert want.any()
    np.testing.assert_array_equal(_dense(fgrad.jacobian_sparsity(fun)(x)), want)
    _assert_equal_to_jacfwd(fun, x, mode="fwd")


def test_the_hessian_of_least_squares_over_256_rows_is_full():
    a = np.random.default_rng(0).normal(size=(256, 3))

    def loss(p):
        return 0.5 * fnp.sum((a @ p - 1.0) ** 2)

    p = np.ones(3)
    assert fgrad.hessian_sparsity(loss)(p).nnz == 9
    np.testing.assert_allclose(fgrad.sparse_hessian(loss)(p).toarray(), a.T @ a, rtol=1e-13)


def test_moves_are_derived_from_element_numbers():
    x = np.arange(24.0).reshape(2, 3, 4)
    funs = [
        lambda x: fnp.transpose(x, (2, 0, 1))[1:, ::-1],
        lambda x: fnp.pad(x, ((0, 1), (1, 0), (0, 0)))[..., 2],
        lambda x: fnp.roll(x, 2, axis=2).reshape(6, 4)[[0, 5, 2]],
        lambda x: fnp.concatenate([x, x[:, :1] * 2.0], axis=1),
        lambda x: x.at[0, 1].set(7.0).at[1, :, 0].add(x[0, 0, 0]),
        lambda x: fnp.take_along_axis(x, np.array([[[1, 0, 3, 2]]]), axis=2),
        lambda x: fnp.cumsum(x, axis=1) + fnp.max(x, axis=0, keepdims=True),
        lambda x: fnp.prod(x, axis=(0, 2)),
    ]
    for fun in funs:
        got = _dense(fgrad.jacobian_sparsity(fun)(x))
        want = np.zeros_like(got)
        rng = np.random.default_rng(2)
        for _ in range(30):  # max picks another element at each: their union is the pattern
            want |= _flat_jacobian(fun, rng.uniform(1.0, 2.0, x.shape)) != 0
        assert (got == want).all()  # exact: these structures hold no accidental zeros


def test_matmul_of_stacks_has_the_exact_pattern_as_einsum():
    # a stack took a dense block per matrix product: (2, 1, 3) @ W of (3, 2) had 24 entries in
    # W where 12 are true; a batched linear layer's pattern in its weights was fully dense
    rng = np.random.default_rng(5)
    x_3d, zeros = rng.uniform(1.0, 2.0, (2, 1, 3)), rng.uniform(1.0, 2.0, (2, 3, 4))
    zeros[0, 1] = zeros[1, :, 2] = 0.0  # constant zeros: no dependence through them
    w = np.linspace(1.0, 2.0, 6)
    funs = [
        lambda w: fnp.matmul(x_3d, w.reshape(3, 2)),
        lambda w: w.reshape(3, 2).T @ zeros,  # (2, 3) @ (2, 3, 4)
        lambda w: zeros @ w[:4],  # (2, 3, 4) @ (4,)
        lambda w: w[:3] @ zeros,  # (3,) @ (2, 3, 4)
        lambda w: w.reshape(1, 2, 3) @ zeros,
        lambda w: fnp.reshape(w, (2, 1, 3)) @ fnp.reshape(w, (1, 3, 2)),  # both traced
        lambda w: fnp.sin(w.reshape(2, 3, 1)) @ w.reshape(1, 1, 6),  # a unit contraction
    ]
    for fun in funs:
        got = _dense(fgrad.jacobian_sparsity(fun)(w))
        want = np.zeros_like(got)
        for _ in range(3):
            want |= _flat_jacobian(fun, rng.uniform(1.0, 2.0, w.shape)) != 0
        np.testing.assert_array_equal(got, want)


def test_einsum_of_scalars_has_a_one_by_one_pattern():
    # every letter-free einsum raised (np.nonzero of a 0-d array; np.einsum("->") of nothing)
    x = np.float64(2.0)
    funs = [
        lambda x: fnp.einsum(",->", x, 3.0),
        lambda x: fnp.tensordot(x, 3.0, 0),
        lambda x: fnp.einsum("->", x),
        lambda x: fnp.einsum(",,->", x, 3.0, x),
    ]
    for fun in funs:
        got = _dense(fgrad.jacobian_sparsity(fun)(x))
        np.testing.assert_array_equal(got, np.reshape(fgrad.jacfwd(fun)(x) != 0, (1, 1)))
        assert got.tolist() == [[True]]
    # a constant zero factor: no dependence, as for the einsums with letters
    zero = _dense(fgrad.jacobian_sparsity(lambda x: fnp.einsum(",->", x, 0.0))(x))
    assert zero.tolist() == [[False]]


_EMPTY_CONTRACTIONS = {  # each output element a sum over nothing: 0, whatever x is
    "tensordot": lambda e: fnp.tensordot(e.reshape(3, 0), e.reshape(0, 4), axes=1),
    "tensordot_axes": lambda e: fnp.tensordot(e.reshape(3, 0), e.reshape(0, 4), ([1], [0])),
    "inner": lambda e: fnp.inner(e.reshape(3, 0), e.reshape(2, 0)),
    "dot": lambda e: fnp.dot(e.reshape(3, 0), e.reshape(0, 4)),
    "matmul": lambda e: fnp.matmul(e.reshape(3, 0), np.ones((0, 4))),
    "einsum": lambda e: fnp.einsum("ij,jk->ik", e.reshape(3, 0), e.reshape(0, 4)),
    "einsum_broadcast": lambda e: fnp.einsum("ij,jk->ik", np.ones((3, 1)), e.reshape(0, 4)),
    "vecdot": lambda e: fnp.vecdot(e.reshape(3, 0), e.reshape(3, 0)),
}


@pytest.mark.parametrize("name", sorted(_EMPTY_CONTRACTIONS))
def test_a_contraction_over_an_empty_axis_is_a_constant_zero(name):
    # the einsum rule took a letter's length as the largest among its axes and 1, so that
    # a 0-length axis became 1 and raised ("could not be broadcast"): tensordot, inner,
    # einsum, vecdot
    product = _EMPTY_CONTRACTIONS[name]
    x = np.linspace(1.0, 2.0, 5)

    def f(x):  # the product's rows, then x**2's
        return fnp.concatenate([fnp.ravel(product(x[:0])), x**2])

    rows = np.size(product(np.zeros(0)))
    want = np.vstack([np.zeros((rows, 5), dtype=bool), np.eye(5, dtype=bool)])
    np.testing.assert_array_equal(_dense(fgrad.jacobian_sparsity(f)(x)), want)
    got = _assert_equal_to_jacfwd(f, x)
    np.testing.assert_array_equal(got.toarray()[:rows], 0.0)

    # (einsum_broadcast's gradient, traced, raised in einsum's bprop: a length-1 axis against
    # x's 0-length one gave a cotangent of length 1, "cannot reshape array of size 4")
    def g(x):
        return fnp.sum(product(x[:0])) + fnp.sum(x**3)

    np.testing.assert_array_equal(_dense(fgrad.hessian_sparsity(g)(x)), np.eye(5, dtype=bool))
    np.testing.assert_array_equal(fgrad.sparse_hessian(g)(x).toarray(), np.diag(6.0 * x))


def test_products_keep_the_zeros_of_a_constant_factor():
    import fgrad.scipy.special as special

    a = np.diag(np.full(5, 2.0)) + np.diag(np.ones(4), 1)  # upper bidiagonal
    x = np.linspace(1.0, 2.0, 5)
    funs = [
        lambda x: a @ x,
        lambda x: x @ a,
        lambda x: a @ fnp.sin(fnp.reshape(fnp.concatenate([x, x]), (5, 2))),
        lambda x: (x[:4].reshape(2, 2) @ x[1:].reshape(2, 2)).ravel(),
        lambda x: special.softmax(x.reshape(5, 1) * x[:3], axis=0).ravel(),
        lambda x: special.logsumexp(x.reshape(5, 1) * x[:2], axis=1),
        lambda x: fnp.convolve(x, np.array([1.0, 0.0, -1.0]), mode="same"),
        lambda x: fnp.convolve(x[:2], x[2:]),
        lambda x: fnp.tensordot(a, x, 1),
        lambda x: fnp.einsum("ii->i", fnp.outer(x, x[::-1])),
        lambda x: fnp.einsum("bij,bj->bi", fnp.stack([a, 2.0 * a]), fnp.stack([x, x**2])),
        lambda x: fnp.einsum("i,ij,j->", x, a, x),
        lambda x: fnp.vecdot(fnp.reshape(fnp.concatenate([x, x]), (2, 5)), x),
        lambda x: fnp.concatenate([x[:2], np.zeros(2)]).reshape(2, 2) @ x[2:4],
    ]
    if hasattr(np, "matvec"):  # NumPy >= 2.2
        funs += [lambda x: fnp.matvec(a, x), lambda x: fnp.vecmat(x, a)]
    for fun in funs:
        got = _dense(fgrad.jacobian_sparsity(fun)(x))
        want = np.zeros_like(got)
        rng = np.random.default_rng(3)
        for _ in range(3):
            want |= _flat_jacobian(fun, rng.uniform(1.0, 2.0, x.shape)) != 0
        assert (got == want).all()

    # a factor computed after a value was read may differ elsewhere: its zeros do not count
    def read_first(x):
        m = a if x[0] > 0 else a.T
        return m @ x

    assert fgrad.jacobian_sparsity(read_first)(x).nnz == 25


def test_matrix_functions_of_a_stack_take_a_block_per_matrix():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 2, 2)) + 3.0 * np.eye(2)
    b = rng.normal(size=(2,))
    funs = [
        (lambda a: fnp.linalg.inv(a), np.kron(np.eye(3), np.ones((4, 4)))),
        (lambda a: fnp.linalg.det(a), np.kron(np.eye(3), np.ones((1, 4)))),
        (lambda a: fnp.linalg.solve(a, b), np.kron(np.eye(3), np.ones((2, 4)))),
        (lambda a: fnp.linalg.eigh(a @ fnp.swapaxes(a, -1, -2))[0], None),
        (lambda a: fnp.linalg.norm(a, axis=(1, 2)), np.kron(np.eye(3), np.ones((1, 4)))),
    ]
    for fun, want in funs:
        got = _dense(fgrad.jacobian_sparsity(fun)(a))
        if want is None:
            want = np.kron(np.eye(3), np.ones((2, 4)))
        assert (got == want.astype(bool)).all()
        _assert_equal_to_jacfwd(fun, a)


def test_an_fft_mixes_each_lane_only():
    x = np.random.default_rng(5).normal(size=(3, 4))
    got = _dense(fgrad.jacobian_sparsity(lambda x: fnp.abs(fnp.fft.rfft(x, axis=1)))(x))
    assert (got == np.kron(np.eye(3), np.ones((3, 4))).astype(bool)).all()
    got = _dense(fgrad.jacobian_sparsity(lambda x: fnp.fft.irfft(x, axis=0))(x))
    assert got.shape == (16, 12) and got.sum() == 16 * 3  # each output: its column's 3


def test_a_checkpointed_function_is_traced_through():
    x = np.linspace(0.1, 1.0, 5)

    def f(x):
        return fgrad.checkpoint(lambda y: y[1:] * y[:-1] * x[0])(x)

    want = np.eye(4, 5, dtype=bool) | np.eye(4, 5, k=1, dtype=bool)
    want[:, 0] = True  # x[0], a free variable of the checkpointed function
    assert (_dense(fgrad.jacobian_sparsity(f)(x)) == want).all()
    _assert_equal_to_jacfwd(f, x)


def test_a_dense_rule_is_a_dense_block():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    got = _dense(fgrad.jacobian_sparsity(lambda x: fnp.linalg.inv(x))(a))
    assert got.all()


# --- the API --------------------------------------------------------------------------------------


def test_pytree_inputs_and_outputs_are_flattened_and_concatenated():
    def f(p):
        return {"a": p["u"] * p["v"][0], "b": fnp.sum(p["v"])}

    p = {"u": np.array([1.0, 2.0]), "v": np.array([3.0, 4.0, 5.0])}
    got = fgrad.sparse_jacobian(f)(p).toarray()
    # inputs: u (2), v (3); outputs: a (2), b (1)
    want = np.array(
        [[3.0, 0.0, 1.0, 0.0, 0.0], [0.0, 3.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0, 1.0]]
    )
    np.testing.assert_array_equal(got, want)


def test_detection_and_colouring_run_once_per_signature(monkeypatch):
    calls = []
    for name in ("_detect", "_accumulate", "_jacobian_plan"):
        original = getattr(sparse, name)
        monkeypatch.setattr(sparse, name, lambda *a, n=name, f=original: calls.append(n) or f(*a))
    jac = fgrad.sparse_jacobian(tridiagonal_residual)
    for k in range(3):
        x = np.linspace(-1.0, 1.0, 8) + k
        np.testing.assert_allclose(
            jac(x).toarray(), _flat_jacobian(tridiagonal_residual, x), rtol=1e-15
        )
    # the first call accumulates the Jacobian (its pattern with it); the second colours that
    # pattern and records the pass, which the third replays
    assert calls == ["_accumulate", "_jacobian_plan"]
    jac(np.ones(9))  # another signature
    assert calls == ["_accumulate", "_jacobian_plan", "_accumulate"]
    # a function that cannot be accumulated (a reduction) finds its pattern instead, once
    calls.clear()
    summed = fgrad.sparse_jacobian(lambda x: fnp.cumsum(x) * x)
    for k in range(3):
        summed(np.arange(4.0) + k)
    assert calls == ["_accumulate", "_detect", "_jacobian_plan"]


def test_a_given_pattern_is_used_and_checked():
    x = np.linspace(0.0, 1.0, 6)
    pattern = fgrad.jacobian_sparsity(tridiagonal_residual)(x)
    got = fgrad.sparse_jacobian(tridiagonal_residual, sparsity=pattern.toarray())(x)
    np.testing.assert_allclose(got.toarray(), _flat_jacobian(tridiagonal_residual, x))
    with pytest.raises(ValueError, match=r"sparsity has shape \(6, 6\).*\(outputs, 7\)"):
        fgrad.sparse_jacobian(tridiagonal_residual, sparsity=pattern)(np.ones(7))
    # too few or many columns: the outputs are not known yet, so the message states only the
    # columns (it stated the pattern's own rows as the outputs, (2, 3) for v**2 of 3 inputs,
    # whose Jacobian is (3, 3): following it gave a second error)
    for rows in (2, 5):
        with pytest.raises(ValueError, match=r"needs 3 columns.*\(outputs, 3\)") as error:
            fgrad.sparse_jacobian(lambda v: v**2, sparsity=np.ones((rows, 2)))(np.ones(3))
        assert f"({rows}, 3)" not in str(error.value)
    # a pattern with the wrong number of outputs is refused, never read from
    f = lambda x: x[1:] * x[:-1]
    with pytest.raises(ValueError, match=r"sparsity has shape \(2, 4\).*\(3, 4\)"):
        fgrad.sparse_jacobian(f, sparsity=np.ones((2, 4)), mode="fwd")(np.ones(4))
    # in every mode, with too few rows or too many: the pattern's shape, not a cotangent's
    for mode in ("auto", "fwd", "rev"):
        for rows in (2, 4):
            with pytest.raises(ValueError, match=rf"sparsity has shape \({rows}, 4\).*\(3, 4\)"):
                fgrad.sparse_jacobian(f, sparsity=np.ones((rows, 4)), mode=mode)(np.ones(4))
    for who in ("sparse_jacobian", "sparse_hessian"):
        with pytest.raises(ValueError, match=rf"{who}: sparsity has shape \(4,\); .* 2-D"):
            getattr(fgrad, who)(f, sparsity=np.ones(4))


def test_errors_say_what_to_do():
    with pytest.raises(TypeError, match=r"shape \(3,\) and dtype int64.*float"):
        fgrad.sparse_jacobian(lambda x: x)(np.arange(3))
    with pytest.raises(ValueError, match="mode must be one of"):
        fgrad.sparse_jacobian(lambda x: x, mode="forward")
    with pytest.raises(ValueError, match="order must be one of"):
        fgrad.sparse_jacobian(lambda x: x, order="random")
    with pytest.raises(ValueError, match="star colouring is greedy"):
        fgrad.sparse_hessian(lambda x: fnp.sum(x), order="recursive_largest_first")
    with pytest.raises(ValueError, match="argnums 2 is out of range"):
        fgrad.jacobian_sparsity(lambda x: x, argnums=2)(np.ones(2))
    with pytest.raises(ValueError, match="complex.*mode='fwd'"):
        fgrad.sparse_jacobian(lambda x: x * 1j, mode="rev")(np.ones(2))
    # a complex input: its imaginary part is an input too (x.astype(float) would drop it)
    with pytest.raises(TypeError, match=r"complex128.*real and imaginary parts") as error:
        fgrad.sparse_jacobian(lambda z: z[1:] * z[:-1])(np.ones(3) + 1j)
    assert "astype(float)" not in str(error.value)
    re, im = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    f = lambda re, im: fnp.abs((re + 1j * im)[1:] * (re + 1j * im)[:-1]) ** 2
    got = fgrad.sparse_jacobian(f, argnums=(0, 1))(re, im).toarray()
    want = np.hstack([np.asarray(j) for j in fgrad.jacfwd(f, argnums=(0, 1))(re, im)])
    np.testing.assert_allclose(got, want, rtol=1e-14)


SPARSE_TOOLS = ["sparse_jacobian", "jacobian_sparsity", "sparse_hessian", "hessian_sparsity"]


@pytest.mark.parametrize("who", SPARSE_TOOLS)
def test_a_function_is_asked_for_as_every_transform_asks(who):
    # it failed at the call with Python's "'int' object is not callable"
    with pytest.raises(TypeError, match=rf"^{who} expects a function .* {who}\(f\), not"):
        getattr(fgrad, who)(3)


@pytest.mark.parametrize("who", SPARSE_TOOLS)
@pytest.mark.parametrize(
    "fun, leaf, what",
    [
        (lambda x: "float64", 0, "str"),  # read as a dtype's name: a zero Jacobian (no error)
        (lambda x: "done", 0, "str"),  # "data type 'done' not understood"
        (lambda x: object(), 0, "object"),
        (lambda x: [x, "a"], 1, "str"),  # refused in jvp's name
    ],
    ids=["float64", "done", "object", "list"],
)
def test_an_output_that_is_not_numeric_is_refused_as_jacrev_refuses_it(who, fun, leaf, what):
    x = np.ones(3)
    with pytest.raises(TypeError, match=rf"^jacrev: .*type {what} at output leaf {leaf}"):
        fgrad.jacrev(fun)(x)
    makers = [{}]
    if who == "sparse_jacobian":  # with a pattern given, the pass is the first to see it
        makers += [{"sparsity": np.ones((4, 3))}, {"sparsity": np.ones((4, 3)), "mode": "rev"}]
    for kw in makers:
        with pytest.raises(TypeError, match=rf"^{who}: .*type {what} at output leaf {leaf}"):
            getattr(fgrad, who)(fun, **kw)(x)


@pytest.mark.parametrize("argnums", [(0, 0), (0, -2), [1, -1]])
@pytest.mark.parametrize(
    "who", ["sparse_jacobian", "jacobian_sparsity", "sparse_hessian", "hessian_sparsity"]
)
def test_an_argument_named_twice_in_argnums_is_refused(who, argnums):
    # it was written twice into the call, so only its second copy's leaves were inputs: the
    # first block of sparse_jacobian(f, argnums=(0, 0)) all zeros where jacfwd gives
    # diag(2, 8, 18); sparse_hessian refused it in grad's name
    f = (lambda x, y: x**2 * y) if "jacobian" in who else (lambda x, y: fnp.sum(x**3 * y))
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=rf"^{who}: argnums .* names an argument twice"):
        getattr(fgrad, who)(f, argnums=argnums)(x, x)


def test_keyword_arguments_are_passed_through_and_numpy_int_argnums_read():
    # as grad and jacfwd do: keyword arguments are not differentiated (they were refused by
    # Python: "got an unexpected keyword argument"), and argnums may be a NumPy int
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    f = lambda x, *, w: fnp.concatenate([x[1:] * x[:-1] * w[1:], x**2 * w])
    g = lambda x, *, w: fnp.sum(x[1:] ** 2 * x[:-1] * w[1:]) + fnp.sum(x**3 * w)
    for w_ in (w, 2.0 * w):  # a new value of a keyword: a new plan, not the first one's
        want = np.asarray(fgrad.jacfwd(f)(x, w=w_))
        for _ in range(3):  # the first call, the plan's making, a replay
            got = fgrad.sparse_jacobian(f)(x, w=w_).toarray()
            np.testing.assert_allclose(got, want, rtol=1e-14)
        h = fgrad.sparse_hessian(g)
        for _ in range(2):
            np.testing.assert_allclose(h(x, w=w_).toarray(), fgrad.hessian(g)(x, w=w_), rtol=1e-14)
    jac = fgrad.sparse_jacobian(f)
    for w_ in (w, 2.0 * w):  # one function, two keyword values, alternately
        np.testing.assert_allclose(jac(x, w=w_).toarray(), fgrad.jacfwd(f)(x, w=w_), rtol=1e-14)
        np.testing.assert_allclose(jac(x, w=w_).toarray(), fgrad.jacfwd(f)(x, w=w_), rtol=1e-14)
    want_pattern = np.asarray(fgrad.jacfwd(f)(x, w=w)) != 0
    np.testing.assert_array_equal(fgrad.jacobian_sparsity(f)(x, w=w).toarray(), want_pattern)
    np.testing.assert_array_equal(
        fgrad.hessian_sparsity(g)(x, w=w).toarray(), np.asarray(fgrad.hessian(g)(x, w=w)) != 0
    )
    f2 = lambda x, y: x**2 * y
    for who in ("sparse_jacobian", "jacobian_sparsity"):
        got = getattr(fgrad, who)(f2, argnums=np.int64(1))(x, w)
        np.testing.assert_array_equal(got.toarray() != 0, np.diag(x**2) != 0)
    np.testing.assert_allclose(
        fgrad.sparse_jacobian(f2, argnums=(np.int64(0), 1))(x, w).toarray(),
        np.hstack(fgrad.jacfwd(f2, argnums=(0, 1))(x, w)),
        rtol=1e-14,
    )


@pytest.mark.parametrize("who", ["sparse_hessian", "hessian_sparsity"])
@pytest.mark.parametrize(
    "fun, returned",
    [
        (lambda x: x**2, r"shape \(4,\) and dtype float64"),
        (lambda x: (fnp.sum(x), fnp.sum(x)), "a tuple of 2 leaves"),
        (lambda x: fnp.sum(x) * 1j, r"shape \(\) and dtype complex128"),
    ],
    ids=["vector", "tuple", "complex"],
)
def test_a_hessian_of_a_function_that_is_not_scalar_says_so_in_its_own_name(who, fun, returned):
    makers = {"sparse_hessian": [{}, {"sparsity": np.eye(4)}], "hessian_sparsity": [{}]}
    for kw in makers[who]:
        with pytest.raises(TypeError, match=rf"^{who}: .*returned {returned}.*weighted sum"):
            getattr(fgrad, who)(fun, **kw)(np.arange(1.0, 5.0))


def test_a_dask_array_is_refused_before_it_is_computed():
    da = pytest.importorskip("dask.array")
    x = da.ones(4, chunks=2)
    with pytest.raises(TypeError, match=r"dask.*shape \(4,\).*x.compute\(\)"):
        fgrad.sparse_jacobian(lambda x: x**2)(x)


@pytest.mark.parametrize(
    "fun, x, want",
    [
        (lambda x: x**2, 2.0, [[4.0]]),  # a scalar
        (lambda x: 3.0, np.ones(2), [[0.0, 0.0]]),  # a constant output
        (lambda x: x[:0], np.ones(2), np.zeros((0, 2))),  # no output
        (lambda x: (), np.ones(2), np.zeros((0, 2))),  # no output leaf
        (lambda x: fnp.sum(x), np.zeros(0), np.zeros((1, 0))),  # no input
        (lambda x: [x, x[::-1]], np.arange(2.0), [[1, 0], [0, 1], [0, 1], [1, 0]]),
    ],
    ids=["scalar", "constant", "no-output", "no-output-leaf", "no-input", "list-output"],
)
def test_edge_cases(fun, x, want):
    for mode in ("fwd", "rev"):
        np.testing.assert_array_equal(fgrad.sparse_jacobian(fun, mode=mode)(x).toarray(), want)


def test_a_complex_output_is_pushed_forward():
    fun = lambda x: fnp.exp(1j * x[1:]) * x[:-1]
    _assert_equal_to_jacfwd(fun, np.array([0.1, 0.2, 0.3]))


def _full_last_row(x):  # the columns need a colour each, the rows two: "auto" would pull
    return fnp.concatenate([x**2, fnp.sum(x)[None]])


@pytest.mark.parametrize("given", [False, True], ids=["found", "given"])
def test_an_output_holding_more_than_the_inputs_is_pushed_forward(given):
    """A complex output, or a float64 one of float32 inputs: "auto" pushes forward, with a
    pattern found or given (known only when the pass runs), also under `jit` and `grad`; a
    pull into a real input dropped the imaginary part (20.0 off) or rounded to float32."""
    x = np.arange(1.0, 6.0)
    for fun, x_k in [
        (lambda x: (1 + 2j) * _full_last_row(x), x),
        (lambda x: _full_last_row(x.astype(np.float64) / 3.0), x.astype(np.float32)),
    ]:
        want = _flat_jacobian(fun, x_k)
        kw = {"sparsity": want != 0} if given else {}
        jac = fgrad.sparse_jacobian(fun, **kw)
        for _ in range(3):
            got = jac(x_k)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.toarray(), want)
        jitted = fgrad.jit(lambda x: fgrad.sparse_jacobian(fun, **kw)(x).toarray())
        np.testing.assert_array_equal(jitted(x_k), want)
        np.testing.assert_array_equal(jitted(x_k), want)


def test_rev_refuses_a_complex_output_and_gives_the_output_s_dtype():
    fun = lambda x: (1 + 2j) * _full_last_row(x)
    x = np.arange(1.0, 6.0)
    with pytest.raises(ValueError, match=r"output is complex128.*mode='fwd'"):
        fgrad.sparse_jacobian(fun, sparsity=np.ones((6, 5)), mode="rev")(x)
    for x_dtype, out_dtype in [(np.float32, np.float64), (np.float64, np.float32)]:
        fun = lambda x: _full_last_row(x.astype(out_dtype) / 3.0)
        got = fgrad.sparse_jacobian(fun, mode="rev")(x.astype(x_dtype))
        want = _flat_jacobian(fun, x.astype(x_dtype))
        assert got.dtype == want.dtype == out_dtype
        np.testing.assert_allclose(got.toarray(), want, rtol=1e-6)  # float32 precision


def test_import_fgrad_does_not_import_scipy():
    code = "import sys, fgrad; assert not any(m.startswith('scipy') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_values_of_the_other_arguments_are_part_of_the_key():
    def f(x, idx):
        return x[idx] * 2.0

    jac = fgrad.sparse_jacobian(f)
    x = np.array([1.0, 2.0, 3.0])
    for idx in (np.array([0, 1]), np.array([2, 0]), np.array([0, 1])):
        want = fgrad.jacfwd(f)(x, idx)
        np.testing.assert_array_equal(jac(x, idx).toarray(), want)


@pytest.mark.parametrize("mode", ["auto", "fwd", "rev"])
def test_a_function_or_a_scipy_matrix_not_differentiated_is_closed_over(mode):
    """A leaf that a record cannot take as an input (a function, a scipy.sparse matrix) is a
    constant of the pass: every call equals jacfwd (the second call raised jit's TypeError,
    and a matrix the first), also under jit; a new matrix at a freed one's address is keyed by
    its values, not its id."""
    x = np.arange(1.0, 6.0)
    cases = [
        (lambda x, fn: fn(x[1:]) * x[:-1], [fnp.sin, fnp.cos, fnp.sin]),
        (lambda x, A: A @ x + x**2, [sp.csr_array(np.eye(5, k=k) - np.eye(5)) for k in (1, 2, 1)]),
        (lambda x, p: p["A"] @ fnp.tanh(x) * p["c"], [{"A": sp.csr_array(np.eye(5)), "c": 2.0}]),
    ]
    for f, others in cases:
        jac = fgrad.sparse_jacobian(f, mode=mode)
        for other in others + others:
            want = _flat_jacobian(lambda x: f(x, other), x)
            np.testing.assert_allclose(jac(x, other).toarray(), want, rtol=1e-14, atol=1e-15)
            inner = fgrad.sparse_jacobian(f, mode=mode)
            jitted = fgrad.jit(lambda x: inner(x, other).toarray())
            for _ in range(2):
                np.testing.assert_allclose(jitted(x), want, rtol=1e-14, atol=1e-15)
    for k in range(4):  # each matrix freed before the next is made
        A = sp.csr_array(np.eye(4, k=k % 2) * (k + 1.0))
        got = fgrad.sparse_jacobian(lambda x, A: A @ x, mode=mode)
        np.testing.assert_array_equal(got(np.ones(4), A).toarray(), A.toarray())
        del A


def test_a_sparse_hessian_closes_over_a_function_or_a_scipy_matrix():
    x = np.arange(1.0, 6.0)
    A = sp.csr_array(np.eye(5, k=1) - 2 * np.eye(5))
    for f, other in [
        (lambda x, A: fnp.sum((A @ x) ** 2), A),
        (lambda x, fn: fnp.sum(fn(x[1:]) * x[:-1]), fnp.sin),
    ]:
        hess = fgrad.sparse_hessian(f)
        want = np.asarray(fgrad.hessian(f)(x, other))
        for _ in range(3):
            np.testing.assert_allclose(hess(x, other).toarray(), want, rtol=1e-14, atol=1e-14)


def test_a_time_argument_that_changes_does_not_make_a_plan_per_call(monkeypatch):
    calls = []
    detect = sparse._detect
    monkeypatch.setattr(sparse, "_detect", lambda *a: calls.append(1) or detect(*a))
    a = np.eye(4) + np.eye(4, k=1)

    def rhs(t, y, a):
        return a @ y * t + fnp.sin(y) * t**2

    jac = fgrad.sparse_jacobian(rhs, argnums=1)
    y = np.linspace(1.0, 2.0, 4)
    for t in (0.1, 0.2, np.float64(0.3), np.array(0.0)):
        got = jac(t, y, a)
        assert got.nnz == 7  # the matrix's zeros count; the time's do not
        np.testing.assert_array_equal(got.toarray(), fgrad.jacfwd(rhs, argnums=1)(t, y, a))
    assert len(calls) == 1

    def branching(t, y):
        return y * y[::-1] if t > 0.5 else y * 2.0

    jac = fgrad.sparse_jacobian(branching, argnums=1)
    for t in (0.1, 0.9, 0.1):  # the branch reads t: each call finds its pattern again
        want = fgrad.jacfwd(branching, argnums=1)(t, y)
        np.testing.assert_array_equal(jac(t, y).toarray(), want)


def test_the_plans_kept_are_bounded():
    jac = fgrad.sparse_jacobian(lambda x, a: a @ x)
    x = np.ones(3)
    for k in range(sparse.PLANS_KEPT + 5):  # a new matrix (not differentiated) each time
        a = np.eye(3) * (k + 1)
        np.testing.assert_array_equal(jac(x, a).toarray(), a)
    cell = next(
        c.cell_contents for c in jac.__wrapped__.__closure__ if type(c.cell_contents) is dict
    )
    assert len(cell) == sparse.PLANS_KEPT


def _parametric(x, p):
    return x[1:] * x[:-1] * p + fnp.sin(x[1:])


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_inside_jit_the_passes_replay_and_give_jacfwds_products(mode):
    """Inside `jit` the result is a `fgrad.scipy.sparse` array whose data the record computes:
    `J @ v` replays at new inputs and parameters (no guard on their values)."""
    v = np.arange(6.0)
    jac = fgrad.sparse_jacobian(_parametric, mode=mode)
    product = fgrad.jit(lambda x, p: jac(x, p) @ v)
    x = np.linspace(0.1, 1.0, 6)
    for x_k, p_k in [(x, 2.0), (x, 2.0), (x + 1.0, 3.0)]:
        np.testing.assert_allclose(
            product(x_k, p_k), fgrad.jacfwd(_parametric)(x_k, p_k) @ v, rtol=1e-14
        )
    assert product.record_source(x, 2.0) is not None


def test_grad_and_jvp_through_sparse_derivatives_equal_through_dense_ones():
    """Under `grad` and `jvp` the data are traced: the derivative of what is computed from the
    sparse Jacobian or Hessian (in the differentiated input and in a parameter) is the one
    through `jacfwd` or `hessian`."""
    v, x = np.arange(6.0), np.linspace(0.1, 1.0, 6)
    jac = fgrad.sparse_jacobian(_parametric)
    got = fgrad.grad(lambda x, p: fnp.sum((jac(x, p) @ v) ** 2), argnums=(0, 1))(x, 2.0)
    want = fgrad.grad(
        lambda x, p: fnp.sum((fgrad.jacfwd(_parametric)(x, p) @ v) ** 2), argnums=(0, 1)
    )(x, 2.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    hes = fgrad.sparse_hessian(rosenbrock)
    t = np.ones(6)
    got = fgrad.jvp(lambda x: hes(x).toarray(), (x,), (t,))
    want = fgrad.jvp(fgrad.hessian(rosenbrock), (x,), (t,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    # the pattern is a constant: the same under a transform
    pattern = fgrad.jacobian_sparsity(_parametric)(x, 2.0)
    inside = fgrad.jit(lambda x: fgrad.jacobian_sparsity(_parametric)(x, 2.0).nnz)(x)
    assert inside == pattern.nnz == 10


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_float32_stays_float32(mode):
    x = np.linspace(1.0, 2.0, 5, dtype=np.float32)
    got = fgrad.sparse_jacobian(tridiagonal_residual, mode=mode)(x)
    want = fgrad.jacfwd(tridiagonal_residual)(x)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got.toarray(), want)
    hes = fgrad.sparse_hessian(rosenbrock)(x)
    assert hes.dtype == np.float32
    np.testing.assert_allclose(hes.toarray(), fgrad.hessian(rosenbrock)(x), rtol=1e-6)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_float16_entries_come_in_float32_which_scipy_holds(mode):
    """SciPy's sparse arrays hold no float16 (`toarray`, `@` and `repr` raised): the entries of
    float16 inputs come in float32, equal to jacfwd's and hessian's float16 ones."""
    x = np.linspace(1.0, 2.0, 5).astype(np.float16)
    jac = fgrad.sparse_jacobian(tridiagonal_residual, mode=mode)
    hes = fgrad.sparse_hessian(rosenbrock)
    for _ in range(2):
        got, want = jac(x), fgrad.jacfwd(tridiagonal_residual)(x)
        assert got.dtype == np.float32 and want.dtype == np.float16
        np.testing.assert_array_equal(got.toarray(), want.astype(np.float32))
        np.testing.assert_array_equal(got @ np.ones(5), want.astype(np.float32) @ np.ones(5))
        repr(got)
        got, want = hes(x), fgrad.hessian(rosenbrock)(x)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.toarray(), want.astype(np.float32))


def test_a_batch_of_problems_is_the_batched_function_block_diagonal():
    """`sparse_jacobian(vmap(f))`: one block per problem, in the passes of one problem (the
    blocks share no column, so the colours of one serve all)."""
    f = lambda x: x[1:] ** 2 - x[:-1] + fnp.sum(x[:2])
    xs = np.random.default_rng(0).uniform(size=(3, 5))
    got = fgrad.sparse_jacobian(fgrad.vmap(f))(xs).toarray()
    for b in range(3):
        block = got[4 * b : 4 * (b + 1), 5 * b : 5 * (b + 1)]
        np.testing.assert_allclose(block, fgrad.jacfwd(f)(xs[b]), rtol=1e-14)
        got[4 * b : 4 * (b + 1), 5 * b : 5 * (b + 1)] = 0.0
    assert not got.any()  # nothing outside the blocks
    one = fgrad.jacobian_sparsity(f)(xs[0])
    batch = fgrad.jacobian_sparsity(fgrad.vmap(f))(xs)
    colours = [int(coloring.column_coloring(p).max()) + 1 for p in (one, batch)]
    assert colours[0] == colours[1] == 4

    g = lambda x: fnp.sum(x[1:] * x[:-1] ** 2)
    hes = fgrad.sparse_hessian(lambda xs: fnp.sum(fgrad.vmap(g)(xs)))(xs).toarray()
    for b in range(3):
        np.testing.assert_allclose(
            hes[5 * b : 5 * (b + 1), 5 * b : 5 * (b + 1)], fgrad.hessian(g)(xs[b]), rtol=1e-14
        )


@pytest.mark.parametrize(
    "make", [fgrad.sparse_jacobian, fgrad.jacobian_sparsity, fgrad.sparse_hessian]
)
def test_vmap_of_it_says_to_differentiate_the_batched_function(make):
    inner = make(lambda x: fnp.sum(x**3))
    name = make.__name__
    with pytest.raises(TypeError, match=rf"fgrad\.{name}\(fgrad\.vmap\(fun\)\)\(xs\)"):
        fgrad.vmap(inner)(np.ones((3, 2)))


def test_an_output_whose_size_the_values_decide_gets_its_own_pattern_at_each_call():
    """x[x > 0] ** 2 has as many outputs as positives: a later call with fewer unioned the
    old pattern with the new one, of another shape, and SciPy raised 'inconsistent shapes'."""
    f = lambda x: x[x > 0] ** 2
    jac = fgrad.sparse_jacobian(f)
    rng = np.random.default_rng(0)
    for x in (
        np.array([1.0, -2.0, 3.0, 4.0]),
        np.array([-1.0, 2.0, -3.0, -4.0]),
        *rng.standard_normal((6, 5)),
    ):
        np.testing.assert_array_equal(jac(x).toarray(), fgrad.jacfwd(f)(x))
