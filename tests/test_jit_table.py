"""The gradient table under `jit` (rows in tests/rows_*.py, see tests/gradtable.py).

For a row's function f: `jit(f)`, `jit(grad(f))`, `grad(jit(f))` and `jit(vmap(f))` equal the
eager results bit for bit (and of the same type: a NumPy scalar where eager gives one), on the
first call (the recording) and on a replay with new values;
and a branch taken after the row's operations grows the record by a path (the row's operations
compare equal from run to run).
The quick suite takes the rows `gradtable.sample` picks for "jit" (each primitive's hardest row
and one row per public name, by the seed in the pytest header); `FGRAD_FULL=1` takes every row.
"""

import dataclasses
import warnings

import numpy as np
import pytest
from gradtable import load, refused, sample

import fgrad
import fgrad.numpy as fnp
from fgrad.tree_util import tree_flatten

ROWS = sample(load()[0], "jit")


def _same(eager, replayed, what, nan_is_nan=False):
    """Equal leaves, bit for bit and of the same type; with `nan_is_nan`, a nan equals any nan
    (its sign and payload are not values)."""
    e_leaves, e_tree = tree_flatten(eager)
    r_leaves, r_tree = tree_flatten(replayed)
    assert e_tree == r_tree, f"{what}: output structure {r_tree} instead of {e_tree}"
    for k, (e, r) in enumerate(zip(e_leaves, r_leaves)):
        # (a record computes NumPy values: where SciPy returns a Python float, np.float64, its
        # subclass, with the same bits)
        same_type = type(r) is type(e) or (type(e) is float and type(r) is np.float64)
        assert same_type, f"{what}, leaf {k}: a {type(r).__name__}, not {type(e).__name__}"
        e, r = np.asarray(e), np.asarray(r)
        assert (e.dtype, e.shape) == (r.dtype, r.shape), (
            f"{what}, leaf {k}: {r.dtype}{r.shape} instead of {e.dtype}{e.shape}"
        )
        if nan_is_nan and e.dtype.kind in "fc":
            nan = np.isnan(e)
            assert np.array_equal(nan, np.isnan(r)), f"{what}, leaf {k}: {r} instead of {e}"
            e, r = np.where(nan, 0, e), np.where(nan, 0, r)
        assert e.tobytes() == r.tobytes(), f"{what}, leaf {k}: {r} instead of {e}"


def _two_inputs(row, dtype=np.float64):
    """The row's arguments, and new values of the same shapes for a replay."""
    first = row.args(dtype)
    second = dataclasses.replace(row, seed=row.seed + 1).args(dtype)
    if [np.shape(a) for a in first] != [np.shape(a) for a in second]:
        second = first
    return first, second


def _scalar(fn):
    """A real scalar of fn's outputs, to differentiate."""

    def scalar(*args):
        leaves, _ = tree_flatten(fn(*args))
        return sum(fnp.sum(fnp.real(leaf)) for leaf in leaves)

    return scalar


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_jit_of_the_function_equals_eager(row, dtype):
    """In float32 too: rounding that a formula's rearrangement changes shows there first (pad's
    traced constant was (x - c) + c, equal to x in most float64 draws)."""
    jitted = fgrad.jit(row.fn)
    for args in _two_inputs(row, dtype):
        _same(row.fn(*args), jitted(*args), f"jit({row.id})")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_jit_of_grad_equals_eager(row):
    g = fgrad.grad(_scalar(row.fn), argnums=tuple(range(len(row.args()))))
    jitted = fgrad.jit(g)
    for args in _two_inputs(row):
        _same(g(*args), jitted(*args), f"jit(grad({row.id}))")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_grad_of_jit_equals_eager(row):
    argnums = tuple(range(len(row.args())))
    eager = fgrad.grad(_scalar(row.fn), argnums=argnums)
    through = fgrad.grad(_scalar(fgrad.jit(row.fn)), argnums=argnums)
    for args in _two_inputs(row):
        _same(eager(*args), through(*args), f"grad(jit({row.id}))")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_jit_of_vmap_equals_eager(row):
    first, second = _two_inputs(row)
    batched = tuple(np.stack([a, b]) for a, b in zip(first, second))
    swapped = tuple(np.stack([b, a]) for a, b in zip(first, second))
    v = fgrad.vmap(row.fn)
    jitted = fgrad.jit(v)
    refusal = refused(row, "jit(vmap)")
    if refusal is not None:  # a documented refusal (the row's family says why)
        with pytest.raises(TypeError, match=refusal):
            jitted(*batched)
        return
    for args in (batched, swapped):
        _same(v(*args), jitted(*args), f"jit(vmap({row.id}))")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_a_branch_after_the_row_takes_a_second_path(row):
    """A branch on a value read after the row's operations: the second path's operations
    before the branch are those of the first, so they compare equal and the record grows a
    branch. (Parameters that compared unequal from run to run, an index template's, made
    `jit` take such a function for one that depends on hidden state: a warning, then eager.)"""
    args = row.args()

    def branching(s, *a):
        out = row.fn(*a)
        return out if s > 0 else [fnp.asarray(leaf) for leaf in tree_flatten(out)[0]]

    jitted = fgrad.jit(branching)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for s in (1.0, -1.0, 1.0, -1.0):
            _same(branching(s, *args), jitted(np.float64(s), *args), f"branching({row.id})")
    (entry,) = jitted._cache.values()
    assert not entry.eager, f"jit ran {row.id} eagerly after its second path"


# Values where a rule's branch or NumPy's own checks change what is computed: a replay must
# check what it depends on (a guard), compute it (an operation of the record), or raise as eager
# does. Found by running every row so: a traced partition arranged a nan as argpartition does
# (not as np.partition), traced polymul kept the factors' leading zeros that NumPy drops, a
# histogram's non-finite range gave nans where NumPy raises, a traced reduction `initial` of inf
# made the value nan, and -0.0 became 0.0 in polydiv and diag.
SPECIAL = (np.nan, np.inf, -np.inf, -0.0)


def _with_special(args, value):
    """args with `value` in the first element of the first float argument (None: none)."""
    args = list(args)
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            a = a.copy()
            a.flat[0] = value
            args[k] = a
            return args
        if isinstance(a, (float, np.floating)):
            args[k] = type(a)(value)
            return args
    return None


def _outcome(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as e:  # compared with the replay's: the same type of error
            return None, type(e)


# Rows that get -0.0 only. LAPACK's least squares and decompositions may not return on a nan
# or an inf (NumPy's own `lstsq` did not in 10 minutes); SciPy's odeint stops at a state that
# is not finite and leaves the later rows of its result unwritten (np.empty's memory: 5e-324,
# or an earlier array's values), so no two runs need agree there.
_LAPACK = ("linalg.", "scipy.linalg.", "polyfit", "roots", "poly", "scipy.integrate.odeint")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_a_replay_at_a_nan_an_inf_or_a_negative_zero_equals_eager(row):
    """Recorded at the row's values, replayed where one element is a nan, an inf or -0.0: the
    replay, and a recording at those values (traced, so fgrad's path rather than NumPy's),
    equal eager, or raise as eager does."""
    args = row.args()
    values = (-0.0,) if row.name.startswith(_LAPACK) else SPECIAL
    g = fgrad.grad(_scalar(row.fn), argnums=tuple(range(len(args))))
    for what, fn in ((f"jit({row.id})", row.fn), (f"jit(grad({row.id}))", g)):
        if _outcome(fn, args)[1] is not None:
            continue  # (a row whose gradient is refused: the other tests say so)
        for value in values:
            special = _with_special(args, value)
            if special is None:
                return
            jitted = fgrad.jit(fn)
            _outcome(jitted, args)  # the record, at the row's values
            want, error = _outcome(fn, special)
            recorded, recorded_error = _outcome(fgrad.jit(fn), special)
            for how, (got, got_error) in (
                ("recorded", (recorded, recorded_error)),
                ("replayed", _outcome(jitted, special)),
            ):
                at = f"{what} {how} at {value}"
                assert got_error is error, f"{at}: {got_error} raised instead of {error}"
                if error is None:
                    _same(want, got, at, nan_is_nan=True)
