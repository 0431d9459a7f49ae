"""The gradient table on Dask arrays (rows in tests/rows_*.py, see tests/gradtable.py).

Every row runs again with its inputs, tangents and cotangents as Dask arrays split into several
chunks: the value, the vjp and the jvp (first order), and forward-over-reverse and
reverse-over-reverse (second order, both modes). While fgrad traces, Dask may not
compute anything (the scheduler refuses): values, residuals and derivatives stay lazy. Then
everything is computed at once and must equal the same transforms of the NumPy inputs, and each
input's cotangent must be a Dask array with that input's chunks.

A row that calls a function Dask does not implement raises fgrad's `DispatchError`, or NumPy's
TypeError when Dask returns NotImplemented; `CANNOT` names those public names with the reason,
and the coverage test counts the rows that run and lists the names that cannot.

Every row also runs under `jit` and `jit(grad)` on Dask arrays, recording and replaying lazily.
Every row also runs untraced on Dask arrays: fgrad's functions outside any transform (and so
with Dask constants inside one) keep them lazy too and give NumPy's values. A row of a listed
name, traced or not, raises rather than compute a Dask array.
"""

import warnings

import numpy as np
import pytest
from gradtable import dask_cannot, load, sample

da = pytest.importorskip("dask.array", reason="Dask is not installed (pip install fgrad[dask])")
dask = pytest.importorskip("dask")

import fgrad  # noqa: E402
import fgrad.numpy as fnp  # noqa: E402
from fgrad.protocols import DispatchError  # noqa: E402
from fgrad.tree_util import tree_flatten, tree_map  # noqa: E402

ROWS, _ = load()

# Public name -> why its rows cannot run on Dask arrays: each tests/rows_<family>.py lists its
# own in DASK_CANNOT.
CANNOT = dask_cannot()


def _chunks(shape):
    """Two chunks along every axis longer than 1."""
    return tuple(max(1, -(-n // 2)) for n in shape) if shape else ()


def _dask(x):
    x = np.asarray(x)
    return da.from_array(x, chunks=_chunks(x.shape))


def _refuse(*args, **kwargs):
    raise AssertionError("Dask was asked to compute while fgrad traced")


def _transforms(fn, args, tangents, ct):
    """Everything the table checks, for inputs of one array type."""
    out, pull = fgrad.vjp(fn, *args)
    cts = pull(ct)
    _, t_out = fgrad.jvp(fn, args, tangents)

    def pulled(*a):
        return fgrad.vjp(fn, *a)[1](ct)

    _, fwd_rev = fgrad.jvp(pulled, args, tangents)
    rev_rev = fgrad.vjp(pulled, *args)[1](tuple(tangents))
    return {
        "value": out,
        "vjp": cts,
        "jvp": t_out,
        "fwd-over-rev": fwd_rev,
        "rev-over-rev": rev_rev,
    }


def _like(x, rng):
    """A random array with x's shape and dtype (complex for a complex x)."""
    shape, dtype = np.shape(x), np.result_type(x)
    v = rng.standard_normal(shape)
    if dtype.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return np.asarray(v, dtype=dtype)


def _leaves(tree):
    return tree_flatten(tree)[0]


def _cannot(row):
    """Whether `row` is listed as unable to run on Dask: by its name, or by its id alone (a
    row whose own Python code reads a value, where the name's other rows run)."""
    return row.name in CANNOT or row.id in CANNOT


def _rows():
    return [r for r in ROWS if not _cannot(r)]


# The quick suite samples the rows (tests/gradtable.py, `sample`); FGRAD_FULL=1 runs them all.
_ON_DASK = sample(_rows(), "dask", smallest=True)


@pytest.mark.parametrize("row", _ON_DASK, ids=[r.id for r in _ON_DASK])
def test_row_on_dask_equals_numpy(row):
    args = row.args()
    rng = np.random.default_rng(7)
    tangents = tuple(_like(a, rng) for a in args)
    out = row.fn(*args)
    ct = tree_map(lambda o: _like(o, rng), out)
    want = _transforms(row.fn, args, tangents, ct)

    d_args = tuple(_dask(a) for a in args)
    d_tangents = tuple(_dask(t) for t in tangents)
    d_ct = tree_map(_dask, ct)
    with dask.config.set(scheduler=_refuse):
        got = _transforms(row.fn, d_args, d_tangents, d_ct)
    for g, a in zip(got["vjp"], d_args):
        assert isinstance(g, da.Array), f"{row.id}: a cotangent is {type(g).__name__}"
        assert g.chunks == a.chunks, f"{row.id}: cotangent chunks {g.chunks} != {a.chunks}"
    (got,) = dask.compute(got, scheduler="sync")
    rtol = 1e-9 if row.tol is None else max(1e-9, row.tol * 1e-3)
    for what in want:
        w, g = _leaves(want[what]), _leaves(got[what])
        assert len(w) == len(g), f"{row.id} {what}: {len(g)} leaves, expected {len(w)}"
        for k, (wk, gk) in enumerate(zip(w, g)):
            gk = np.asarray(gk)
            assert gk.shape == np.shape(wk), f"{row.id} {what} leaf {k}: shape {gk.shape}"
            np.testing.assert_allclose(
                gk, wk, rtol=rtol, atol=1e-12, err_msg=f"{row.id} {what} leaf {k}"
            )


def _scalar(fn):
    return lambda *a: sum(fnp.sum(fnp.real(leaf)) for leaf in _leaves(fn(*a)))


@pytest.mark.parametrize("row", _ON_DASK, ids=[r.id for r in _ON_DASK])
def test_jit_of_a_row_on_dask_records_lazily_and_replays(row):
    """`jit(f)` and `jit(grad(f))` of Dask arrays: the recording and a replay build lazy graphs
    (the scheduler refuses while they run) whose values are those of the NumPy inputs. (The
    rules' checks of a mask took a traced lazy mask for a NumPy one and read it: 990 of the
    4,216 such cases of the table computed.)"""
    if "traced initial" in row.id:
        pytest.skip(
            "a reduction's traced `initial` is read (NumPy's sum starts from its value): under "
            "jit a guard of the record, which reads a Dask array's value by computing it"
        )
    args = row.args()
    argnums = tuple(range(len(args)))
    d_args = tuple(_dask(a) for a in args)
    for f in (row.fn, fgrad.grad(_scalar(row.fn), argnums=argnums)):
        want = f(*args)
        jitted = fgrad.jit(f)
        with dask.config.set(scheduler=_refuse):
            got = [jitted(*d_args) for _ in range(2)]  # the recording, then a replay
        rtol = 1e-9 if row.tol is None else max(1e-9, row.tol * 1e-3)
        for g in dask.compute(got, scheduler="sync")[0]:
            w, g = _leaves(want), _leaves(g)
            assert len(w) == len(g), f"{row.id}: {len(g)} leaves, expected {len(w)}"
            for wk, gk in zip(w, g):
                np.testing.assert_allclose(np.asarray(gk), wk, rtol=rtol, atol=1e-12)


def _dasks_own(row):
    """Whether the row's untraced call is Dask's rather than fgrad's: the row applies the
    array's own indexing or method, or NumPy's own function, which on a Dask array are
    Dask's, with Dask's limits (nd fancy indexing, `where=` of reductions, ...)."""
    return row.id.startswith("x[idx]") or "method" in row.id or "numpy" in row.id


_UNTRACED = sample([r for r in _rows() if not _dasks_own(r)], "dask-untraced", smallest=True)


@pytest.mark.parametrize("row", _UNTRACED, ids=[r.id for r in _UNTRACED])
def test_row_untraced_on_dask_stays_lazy_and_equals_numpy(row):
    args = row.args()
    want = row.fn(*args)
    d_args = tuple(_dask(a) for a in args)
    with warnings.catch_warnings():
        # Dask's warning that it lacks a function and computes the array for NumPy's
        warnings.simplefilter("error", FutureWarning)
        with dask.config.set(scheduler=_refuse):
            got = row.fn(*d_args)
    (got,) = dask.compute(got, scheduler="sync")
    rtol = 1e-9 if row.tol is None else max(1e-9, row.tol * 1e-3)
    w, g = _leaves(want), _leaves(got)
    assert len(w) == len(g), f"{row.id}: {len(g)} leaves, expected {len(w)}"
    for k, (wk, gk) in enumerate(zip(w, g)):
        gk = np.asarray(gk)
        assert gk.shape == np.shape(wk), f"{row.id} leaf {k}: shape {gk.shape}"
        assert gk.dtype == np.result_type(wk), f"{row.id} leaf {k}: dtype {gk.dtype}"
        np.testing.assert_allclose(gk, wk, rtol=rtol, atol=1e-12, err_msg=f"{row.id} leaf {k}")


# Listed rows whose own Python code (not fgrad's) reads a Dask array's value.
_ROW_READS_ITS_VALUES = {"vectorize-3x2"}
_CANNOT_ROWS = sample(
    [r for r in ROWS if _cannot(r) and r.id not in _ROW_READS_ITS_VALUES], "dask-cannot"
)


@pytest.mark.parametrize("row", _CANNOT_ROWS, ids=[r.id for r in _CANNOT_ROWS])
def test_a_row_that_cannot_run_on_dask_never_computes_it(row):
    """A name listed in DASK_CANNOT needs the values of a Dask array. Traced or not, fgrad then
    raises (a DispatchError naming the function, or an error saying why) rather than compute
    the array behind the user's back; a row that runs stays lazy."""
    d_args = tuple(_dask(a) for a in row.args())
    for call in (lambda: row.fn(*d_args), lambda: fgrad.vjp(row.fn, *d_args)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)  # Dask's "computing for NumPy"
            with dask.config.set(scheduler=_refuse):
                try:
                    call()
                except (TypeError, ValueError, NotImplementedError):
                    pass  # refused, with a reason (DispatchError is a TypeError)


def test_names_that_cannot_run_on_dask_are_listed(capsys):
    """Counts the rows that run on Dask and lists the names that cannot, with their reasons
    (run with -s to see them); a listed name must have rows, so the list cannot go stale."""
    names = {r.name for r in ROWS}
    stale = sorted(set(CANNOT) - names - {r.id for r in ROWS})
    assert not stale, f"DASK_CANNOT lists names or rows that do not exist: {stale}"
    running = [r for r in ROWS if not _cannot(r)]
    listed_names = set(CANNOT) & names
    with capsys.disabled():
        print(
            f"\nDask: {len(running)} of {len(ROWS)} rows run on Dask arrays "
            f"({len(names) - len(listed_names)} of {len(names)} names); "
            f"{len(listed_names)} names and {len(CANNOT) - len(listed_names)} single rows cannot:"
        )
        for name, reason in sorted(CANNOT.items()):
            print(f"  {name}: {reason}")
    assert running or set(CANNOT) >= names  # a family may have only listed names


def test_a_function_dask_does_not_implement_raises_naming_it():
    x, y = _dask(np.linspace(0.0, 1.0, 6)), _dask(np.linspace(1.0, 3.0, 6))
    with pytest.raises(DispatchError, match=r"numpy\.polyfit is not implemented by Dask"):
        with dask.config.set(scheduler=_refuse):
            fgrad.grad(lambda y: fnp.sum(fnp.polyfit(x, y, 1)))(y)
