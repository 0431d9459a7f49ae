"""Batched Jacobians (fgrad/replay.py): jacrev's rows and jacfwd's columns in one pass.

The reference is one pass per row (per column), which is what the Jacobians did before and
still do when the batched replay is refused. Every row of the gradient table is
differentiated both ways, by jacrev, by jacfwd and by jacfwd of jacrev (where the replay runs
on values traced by a forward level); they must agree to rounding. Cotangent-dependent user
bprops must be noticed and pulled row by row.
"""

import numpy as np
import pytest
from gradtable import load

import fgrad
import fgrad.numpy as fnp
from fgrad import replay as batching
from fgrad.tree_util import tree_flatten

ROWS, _ = load()


@pytest.fixture(autouse=True)
def batch_small_jacobians(monkeypatch):
    """Replay from two rows on, so that the table's small Jacobians test the replay (by
    default, Jacobians of fewer than batching._MIN_ROWS rows take one pass per row)."""
    monkeypatch.setattr(batching, "_MIN_ROWS", 2)


@pytest.fixture
def row_by_row(monkeypatch):
    """Run `fn` with the batched replay turned off."""

    def run(fn, *args):
        with monkeypatch.context() as m:
            m.setattr(batching, "_batched_rows", lambda *a: None)
            return fn(*args)

    return run


@pytest.fixture
def replays(monkeypatch):
    """Counts the Jacobians that were batched and those that fell back to row-by-row pulls."""
    counts = {"batched": 0, "refused": 0}
    real = batching._batched_rows

    def counting(*a):
        out = real(*a)
        counts["batched" if out is not None else "refused"] += 1
        return out

    monkeypatch.setattr(batching, "_batched_rows", counting)
    return counts


def _assert_same(got, want, what):
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_tree = tree_flatten(want)
    assert g_tree == w_tree, what
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, what
        scale = np.max(np.abs(w[np.isfinite(w)]), initial=1.0)
        np.testing.assert_allclose(
            g, w, rtol=1e-9, atol=1e-12 * scale, equal_nan=True, err_msg=what
        )


def _complex_in(args, mode):
    return mode == "jacfwd" and any(np.iscomplexobj(a) for a in args)


def _outcome(fn, *args):
    """The value, or the type of the error raised (complex outputs need holomorphic=True)."""
    try:
        return fn(*args)
    except TypeError as e:
        return TypeError, str(e)


def _assert_same_outcome(fn, args, row_by_row, what):
    """fn(*args) batched and row by row: the same values, or the same TypeError."""
    got = _outcome(fn, *args)
    want = row_by_row(_outcome, fn, *args)
    if isinstance(want, tuple) and want and want[0] is TypeError:
        assert got == want, what
    else:
        _assert_same(got, want, what)


SLOW = {"scipy.integrate.odeint"}  # its rows take seconds each; the nested Jacobian is minutes
TABLE = [r for r in ROWS if r.name not in SLOW]


@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("row", TABLE, ids=[r.id for r in TABLE])
def test_jacobian_batched_equals_row_by_row(row, mode, row_by_row):
    args = row.args()
    argnums = tuple(range(len(args)))
    jac = getattr(fgrad, mode)(row.fn, argnums=argnums, holomorphic=_complex_in(args, mode))
    _assert_same_outcome(jac, args, row_by_row, row.id)


# jacfwd of jacrev costs (input size)^2 backward passes: rows with small inputs, which are
# most rows and every family
SMALL = [r for r in TABLE if sum(np.size(a) for a in r.args()) <= 6]


@pytest.mark.parametrize("row", SMALL, ids=[r.id for r in SMALL])
def test_second_derivatives_batched_equal_row_by_row(row, row_by_row):
    """jacfwd of jacrev: the replay's constants are boxes of the forward level, so every
    rule runs on traced values too."""
    args = row.args()
    argnums = tuple(range(len(args)))
    second = fgrad.jacfwd(fgrad.jacrev(row.fn, argnums=argnums), argnums=argnums)
    _assert_same_outcome(second, args, row_by_row, row.id)


def test_the_common_rules_are_batched_not_refused(replays):
    """The replay is used, not silently refused, on the benchmark's function and an MLP layer."""
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((7, 5)), rng.standard_normal(5)
    W, X = rng.standard_normal((5, 3)), rng.standard_normal((4, 5))
    fgrad.jacrev(lambda x: fnp.tanh(A[:5] @ x) * x)(x)
    fgrad.jacrev(lambda W: fnp.maximum(X @ W, 0.0).sum(axis=0) / fnp.sum(W**2))(W)
    fgrad.jacfwd(fgrad.jacrev(lambda x: fnp.tanh(A @ x) ** 2 + fnp.sum(x[1:] * x[:-1])))(x)
    # jacfwd of jacrev: jacfwd's replay, and jacrev's in jacfwd's recording and probe passes
    assert replays == {"batched": 5, "refused": 0}


def test_jacobian_matches_closed_form():
    rng = np.random.default_rng(1)
    A, x = rng.standard_normal((6, 6)), rng.standard_normal(6)
    t = np.tanh(A @ x)
    want = ((1 - t * t) * x)[:, None] * A + np.diag(t)
    np.testing.assert_allclose(
        fgrad.jacrev(lambda x: fnp.tanh(A @ x) * x)(x), want, rtol=1e-13, atol=1e-14
    )


def _rectified(threshold):
    """The identity with a bprop that reads its cotangent's values, as gradient clipping does."""

    @fgrad.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        return x, None

    def f_bwd(_, ct):
        return (fnp.where(ct > threshold, ct, 0.0),)

    f.defvjp(f_fwd, f_bwd)
    return f


@pytest.mark.parametrize("threshold", [0.0, 0.5, -0.5])
def test_a_bprop_that_reads_the_cotangent_is_pulled_row_by_row(threshold, replays, row_by_row):
    f = _rectified(threshold)
    x = np.linspace(-1.0, 1.0, 5)
    got = fgrad.jacrev(lambda x: f(x * 2.0))(x)
    want = row_by_row(fgrad.jacrev(lambda x: f(x * 2.0)), x)
    np.testing.assert_array_equal(got, want)
    # rows are one-hot: ct > 0 keeps each one and ct > 0.5 too; ct > -0.5 keeps them all
    np.testing.assert_array_equal(got, 2.0 * np.eye(5))
    assert replays["refused"] == 1  # the probe row saw the recorded mask give a wrong answer


def test_a_bprop_that_reads_float_of_the_cotangent_still_works(replays):
    @fgrad.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (x, None), lambda _, ct: (ct * (2.0 if float(fnp.sum(ct)) > 0 else 1.0),))
    got = fgrad.jacrev(lambda x: f(x))(np.ones(3))
    np.testing.assert_array_equal(got, 2.0 * np.eye(3))
    assert replays["refused"] == 1


def test_outputs_sharing_a_cotangent_get_their_own_arrays():
    jac = fgrad.jacrev(lambda x, y: x + y, argnums=(0, 1))(np.ones(3), np.ones(3))
    jac[0][0, 0] = 5.0
    assert jac[1][0, 0] == 1.0


def test_an_output_that_does_not_depend_on_the_input():
    jac = fgrad.jacrev(lambda x, y: x * 2.0, argnums=(0, 1))(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(jac[1], np.zeros((3, 2)))
    jac[1][0, 0] = 1.0  # writable, and not shared


def test_many_rows_through_large_values_are_replayed_in_chunks(monkeypatch, row_by_row):
    rng = np.random.default_rng(2)
    A, x = rng.standard_normal((7, 5)), rng.standard_normal(5)

    def f(x):
        return fnp.sin(A @ x) * fnp.sum(x**2)

    want = row_by_row(fgrad.jacrev(f), x)
    runs = []
    real_run = batching._Program.run
    monkeypatch.setattr(batching, "_MAX_ELEMENTS", 16)  # 2 rows of 7 elements per replay
    monkeypatch.setattr(
        batching._Program,
        "run",
        lambda self, stack: runs.append(len(stack)) or real_run(self, stack),
    )
    for jac in (fgrad.jacrev(f), fgrad.jacfwd(f)):
        runs.clear()
        np.testing.assert_allclose(jac(x), want, rtol=1e-12, atol=1e-14)
        assert max(runs) == 2 and len(runs) > 1  # several replays of at most two rows


def test_small_jacobians_take_one_pass_per_row_by_default(monkeypatch):
    monkeypatch.undo()  # back to the default threshold
    counts = {"batched": 0}
    real = batching._batched_rows
    monkeypatch.setattr(
        batching,
        "_batched_rows",
        lambda *a: counts.__setitem__("batched", counts["batched"] + 1) or real(*a),
    )
    x = np.linspace(0.1, 0.9, batching._MIN_ROWS - 1)
    fgrad.jacrev(fnp.sin)(x)
    assert counts["batched"] == 0
    fgrad.jacrev(fnp.sin)(np.linspace(0.1, 0.9, batching._MIN_ROWS))
    assert counts["batched"] == 1
