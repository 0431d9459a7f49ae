"""The quick suite's sample of the gradient table (tests/gradtable.py, `sample`) loses no name
and no primitive: under every transform, each public name that has a row the transform's test
can run, and each primitive such a row applies, is in the sample, on the rows the test really
parametrizes. The pick is a pure function of the seed, and FGRAD_FULL=1 takes every row."""

import gradtable
import pytest
import test_dask_table
import test_gradtable
import test_jacobians
import test_taylor_table
import test_values
import test_vmap_table
from gradtable import load, primitives_of, sample

ROWS, _ = load()


def _rows_of(params):
    return [p.values[0] for p in params]


# (transform, the rows its test runs, the rows it could run)
SAMPLES = [
    ("grad", test_gradtable.GRAD, ROWS),
    ("float32", test_gradtable.FLOAT32, ROWS),
    ("vmap in_axes=0", test_vmap_table.MAPPED[0], ROWS),
    ("vmap in_axes=-1", test_vmap_table.MAPPED[-1], ROWS),
    ("vmap unmapped", test_vmap_table.UNMAPPED, [r for r in ROWS if len(r.args()) > 1]),
    ("vmap of grad", test_vmap_table.NESTED, ROWS),
    ("jacrev", test_jacobians.BY_MODE["jacrev"], test_jacobians.REAL),
    ("jacfwd", test_jacobians.BY_MODE["jacfwd"], test_jacobians.REAL),
    ("jacfwd of jacrev", test_jacobians.SMALL, test_jacobians.SMALL_ROWS),
    ("taylor", _rows_of(test_taylor_table._cases()), ROWS),
    ("values", _rows_of(test_values._cases("numpy")), ROWS),
    ("tracing", _rows_of(test_values._cases("tracing")), ROWS),
    ("dask", test_dask_table._ON_DASK, test_dask_table._rows()),
    (
        "dask untraced",
        test_dask_table._UNTRACED,
        [r for r in test_dask_table._rows() if not test_dask_table._dasks_own(r)],
    ),
]


@pytest.mark.parametrize("transform, run, could", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_every_name_and_primitive_runs_under_every_transform(transform, run, could):
    missing_names = sorted({r.name for r in could} - {r.name for r in run})
    assert not missing_names, f"{transform}: no row of {missing_names}"
    reached = set().union(*map(primitives_of, could))
    missing = sorted(reached - set().union(*map(primitives_of, run)))
    assert not missing, f"{transform}: no row applies the primitives {missing}"


def test_each_primitive_runs_on_its_hardest_row():
    """Of the rows that apply a primitive, one with the most broadcasting (then dimensions,
    then elements) is in the sample: where a forgotten unbroadcast or transpose shows."""
    if gradtable.FULL:
        pytest.skip("FGRAD_FULL=1 takes every row")
    chosen = {id(r) for r in sample(ROWS, "grad")}
    for prim in set().union(*map(primitives_of, ROWS)):
        applying = [r for r in ROWS if prim in primitives_of(r)]
        hardest = max(map(gradtable._hardness, applying))
        assert any(id(r) in chosen and gradtable._hardness(r) == hardest for r in applying), prim


def test_the_sample_is_a_function_of_the_seed(monkeypatch):
    if gradtable.FULL:
        pytest.skip("FGRAD_FULL=1 takes every row")
    first = [r.id for r in sample(ROWS, "grad")]
    assert first == [r.id for r in sample(ROWS, "grad")]
    assert first != [r.id for r in sample(ROWS, "vmap")], "each transform samples other rows"
    monkeypatch.setattr(gradtable, "SEED", gradtable.SEED + 1)
    assert first != [r.id for r in sample(ROWS, "grad")]
    assert f"FGRAD_SEED={gradtable.SEED}" in gradtable.describe_sampling()


def test_full_takes_every_row(monkeypatch):
    monkeypatch.setattr(gradtable, "FULL", True)
    assert sample(ROWS, "grad") == ROWS
    assert "FGRAD_FULL=1" in gradtable.describe_sampling()


def test_per_name_takes_that_many_rows_of_each_name(monkeypatch):
    monkeypatch.setattr(gradtable, "FULL", False)
    monkeypatch.setattr(gradtable, "PER_NAME", 3)
    rows = [r for r in ROWS if r.name in ("sin", "linalg.norm")]
    picked = sample(rows, "grad")
    for name in ("sin", "linalg.norm"):
        of_name = [r for r in rows if r.name == name]
        assert len([r for r in picked if r.name == name]) >= min(3, len(of_name))
