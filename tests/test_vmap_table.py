"""The gradient table under `vmap` (rows in tests/rows_*.py, see tests/gradtable.py).

Every row runs on a batch of three examples (the row's inputs drawn with three seeds) and is
compared with a loop over the examples: with the batch axis first, with it last, with only the
first argument mapped (the others the same for every row), under `vmap(grad)` and under `grad`
of a `vmap`. Every run must be vectorized: no primitive applied one row at a time unless it is
declared so (`fgrad.batching.declare_row_by_row`, with its reason), and no batch split because
a rule read a batched value with NumPy (`fgrad.batching.Diverged`).
"""

import dataclasses

import numpy as np
import pytest
from gradtable import load, refused, sample

import fgrad
import fgrad.numpy as fnp
from fgrad import batching
from fgrad.tree_util import tree_flatten

ROWS, _ = load()
BATCH = 3


def _examples(row):
    """BATCH argument tuples of the row, each drawn with its own seed."""
    return [dataclasses.replace(row, seed=row.seed + 101 * k).args() for k in range(BATCH)]


def _stacked(examples, axis):
    return tuple(
        np.stack([ex[i] for ex in examples], axis=axis if np.ndim(examples[0][i]) else 0)
        for i in range(len(examples[0]))
    )


def _leaves(tree):
    return tree_flatten(tree)[0]


def _tolerance(row):
    rtol = 1e-9 if row.tol is None else max(1e-9, row.tol * 1e-3)
    return {"rtol": rtol, "atol": 1e-11}


def _assert_rows(batched, per_row, axis, row, what):
    got, want = _leaves(batched), [_leaves(r) for r in per_row]
    assert len(got) == len(want[0]), f"{row.id} {what}: {len(got)} outputs, expected {len(want[0])}"
    for k, g in enumerate(got):
        expected = np.stack(
            [np.asarray(w[k]) for w in want], axis=axis if np.ndim(want[0][k]) else 0
        )
        g = np.asarray(g)
        assert g.dtype == expected.dtype, f"{row.id} {what}, output {k}: dtype {g.dtype}"
        assert g.shape == expected.shape, f"{row.id} {what}, output {k}: shape {g.shape}"
        np.testing.assert_allclose(
            g, expected, err_msg=f"{row.id} {what}, output {k}", **_tolerance(row)
        )


class _Vectorized:
    """Records what ran one row at a time and every batch split during the block."""

    def __init__(self, monkeypatch):
        self.by_row, self.splits = [], []
        real_row_by_row = batching.row_by_row

        def row_by_row(prim, *rest):
            if prim not in batching.row_by_row_reasons and not batching._declared:
                self.by_row.append(prim.name)
            return real_row_by_row(prim, *rest)

        monkeypatch.setattr(batching, "row_by_row", row_by_row)
        real_init = batching.Diverged.__init__

        def diverged(signal, level, groups):
            import traceback

            self.splits.append("".join(traceback.format_stack(limit=6)[:-1]))
            real_init(signal, level, groups)

        monkeypatch.setattr(batching.Diverged, "__init__", diverged)

    def check(self, row):
        assert not self.by_row, f"{row.id}: applied one row at a time: {sorted(set(self.by_row))}"
        if _by_design(row) is None:
            assert not self.splits, f"{row.id}: a rule read a batched value:\n{self.splits[0]}"


# Rows whose function reads its own values the way Python control flow does: vmap splits the
# batch there by design (the rows are still computed, and must equal the loop).
SPLITS_BY_DESIGN = {
    ("vectorize", ""): "the vectorized function has a Python if on each element",
    ("unique", "sorted=False"): "NumPy's unsorted order is not a function of each row alone",
    ("unique", "axis=0"): "the number of unique rows is read to shape the output",
    ("unique_values", ""): "it is unique(sorted=False), whose order is not a function of each row",
    **{
        ("histogram", variant): "NumPy's counts read the values of the sample, bins and range"
        for variant in ("edges", "traced range,edges", "traced range,density", "traced bins")
    },
    ("unwrap", "traced period"): "NumPy's unwrap takes one period: rows of periods run apart",
}


def _by_design(row):
    return SPLITS_BY_DESIGN.get((row.name, row.variant))


def _ragged(want):
    """Whether the loop's outputs have different shapes in different rows (then they do not
    stack, and vmap must say so)."""
    leaves = [_leaves(w) for w in want]
    return any(len({np.shape(ls[k]) for ls in leaves}) > 1 for k in range(len(leaves[0])))


def _scalar(row, examples):
    """The row's function made a real scalar by fixed weights on each output, so that every
    output element counts and complex outputs count by their real part."""
    outs = _leaves(row.fn(*examples[0]))
    rng = np.random.default_rng(7)
    weights = [rng.uniform(0.5, 1.5, np.shape(o)) for o in outs]

    def f(*args):
        total = 0.0
        for o, w in zip(_leaves(row.fn(*args)), weights):
            total = (
                total + fnp.sum(fnp.real(o * w)) if fnp.iscomplexobj(o) else total + fnp.sum(o * w)
            )
        return total

    return f


# The quick suite samples the rows (tests/gradtable.py, `sample`); FGRAD_FULL=1 runs them all.
MAPPED = {axis: sample(ROWS, f"vmap-axis{axis}") for axis in (0, -1)}
UNMAPPED = sample([r for r in ROWS if len(r.args()) > 1], "vmap-unmapped")
NESTED = sample(ROWS, "vmap-grad")


@pytest.mark.parametrize(
    "row, axis",
    [pytest.param(r, axis, id=f"{r.id}-axis{axis}") for axis in (0, -1) for r in MAPPED[axis]],
)
def test_vmap_equals_a_loop_over_rows(row, axis, monkeypatch):
    examples = _examples(row)
    want = [row.fn(*ex) for ex in examples]
    if _ragged(want):  # an output's shape depends on the row's values
        with pytest.raises(ValueError, match="different shapes"):
            fgrad.vmap(row.fn, in_axes=axis)(*_stacked(examples, axis))
        return
    watch = _Vectorized(monkeypatch)
    got = fgrad.vmap(row.fn, in_axes=axis)(*_stacked(examples, axis))
    _assert_rows(got, want, 0, row, f"vmap(in_axes={axis})")
    watch.check(row)


@pytest.mark.parametrize("row", UNMAPPED, ids=[r.id for r in UNMAPPED])
def test_vmap_with_unmapped_arguments(row, monkeypatch):
    examples = _examples(row)
    fixed = examples[0][1:]
    want = [row.fn(ex[0], *fixed) for ex in examples]
    if _ragged(want):
        pytest.skip(f"{row.id}: an output's shape depends on the row's values (see axis0)")
    in_axes = (0,) + (None,) * len(fixed)
    watch = _Vectorized(monkeypatch)
    got = fgrad.vmap(row.fn, in_axes=in_axes)(_stacked(examples, 0)[0], *fixed)
    _assert_rows(got, want, 0, row, f"vmap(in_axes={in_axes})")
    watch.check(row)


@pytest.mark.parametrize("row", NESTED, ids=[r.id for r in NESTED])
def test_vmap_of_grad_and_grad_of_vmap_equal_a_loop(row, monkeypatch):
    examples = _examples(row)
    f = _scalar(row, examples)
    argnums = tuple(range(len(examples[0])))
    g = fgrad.grad(f, argnums=argnums)
    if _ragged([row.fn(*ex) for ex in examples]):
        pytest.skip(f"{row.id}: an output's shape depends on the row's values (see axis0)")
    want = [g(*ex) for ex in examples]
    stacked = _stacked(examples, 0)
    watch = _Vectorized(monkeypatch)
    got = fgrad.vmap(g)(*stacked)
    _assert_rows(got, want, 0, row, "vmap(grad)")
    grad_of_vmap = fgrad.grad(lambda *a: fnp.sum(fgrad.vmap(f)(*a)), argnums=argnums)
    refusal = refused(row, "grad(vmap)")
    if refusal is not None:  # a documented refusal (the row's family says why)
        with pytest.raises(TypeError, match=refusal):
            grad_of_vmap(*stacked)
        return
    got = grad_of_vmap(*stacked)
    _assert_rows(got, want, 0, row, "grad(vmap)")
    watch.check(row)


def _primitives():
    """Every primitive and non-differentiable primitive of fgrad's modules."""
    import sys

    import fgrad.scipy  # noqa: F401 (its modules hold primitives too)
    from fgrad.core import NondiffPrimitive, Primitive

    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("fgrad") or module is None:
            continue
        for v in vars(module).values():
            v = getattr(v, "primitive", v)
            if isinstance(v, (Primitive, NondiffPrimitive)):
                found[id(v)] = (name, v)
    return list(found.values())


def test_every_primitive_has_a_batching_rule_or_a_declared_reason():
    missing = sorted(
        f"{module}.{p.name}"
        for module, p in _primitives()
        if p not in batching.rules and p not in batching.row_by_row_reasons
    )
    assert not missing, f"no batching rule: {missing}"
    for p, reason in batching.row_by_row_reasons.items():
        assert reason and len(reason) > 20, f"{p.name}: say why it runs one row at a time"


def test_the_primitives_applied_row_by_row_are_listed(capsys):
    declared = sorted(f"{p.name}: {reason}" for p, reason in batching.row_by_row_reasons.items())
    declared += sorted(
        f"{p.name} (some cases): {reason}"
        for p, reasons in batching.partial_reasons.items()
        for reason in reasons
    )
    with capsys.disabled():
        print(
            f"\n{len(declared)} declared to run one row at a time under vmap (all cases, or some):"
        )
        for line in declared:
            print("  " + line)
    numpy_ones = [
        f"{module}.{p.name}"
        for module, p in _primitives()
        if p in batching.row_by_row_reasons and module.startswith("fgrad.numpy")
    ]
    assert not numpy_ones, f"fgrad.numpy, linalg and fft should need none: {numpy_ones}"
