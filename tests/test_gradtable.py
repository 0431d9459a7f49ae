"""The systematic gradient table (rows in tests/rows_*.py, see tests/gradtable.py).

Every row is checked against central differences in forward and reverse mode to order 2, and
run again in float32 (every rule keeps the dtype). Every name declared non-differentiable has
zero derivatives at every level. Every public name of fgrad.numpy (and its linalg and fft
submodules, and fgrad.scipy.special when SciPy is installed) has a row or a declaration.
"""

import importlib.util
import os
import types

import numpy as np
import pytest
from gradtable import load, sample

import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jvp, vjp
from fgrad.test_util import check_grads, check_rule

ROWS, NONDIFF = load()
# The quick suite samples the rows (tests/gradtable.py, `sample`); FGRAD_FULL=1 runs them all.
# Each primitive's hardest row goes through `check_rule` (which also checks that its forward
# and reverse rules are transposes of each other to rounding), the names' rows (every other
# row in the full run) through `check_grads`. check_rule's transpose consistency is measured
# against the terms it sums, and 19 rows whose terms are round-off or cancel (std of 2
# elements, det of 1x1, svd's values, the "large" softmax rows) fail it where check_grads
# passes: the rule level is these fixed rows, seed or no seed.
RULES = sample(ROWS, "grad", per_name=0, full=False)
_RULE_IDS = {id(r) for r in RULES}
NAMES = [r for r in sample(ROWS, "grad", hardest=False) if id(r) not in _RULE_IDS]
GRAD = RULES + NAMES
FLOAT32 = sample(ROWS, "float32")

# Names whose forward and reverse rules agree to less than rounding of the terms, and why.
LOOSER_TRANSPOSE = {
    "scipy.integrate.odeint": (
        1e-6,
        "an adaptive solver: its jvp and its bprop are two solves, each to the solver's tolerance",
    ),
}
# Rows check_rule cannot judge, and why (measured); they take check_grads as the others do.
CHECK_GRADS_ONLY = {
    "scipy.special.log_softmax[large]-3x2": (
        "log_softmax(400 x) saturates: the order-2 terms check_rule sums are round-off of the "
        "output's scale (1e-11 against 400), so both sides of its transpose consistency are "
        "round-off (2.3e-12 and 3.5e-12) and differ by 10% of them"
    ),
}


@pytest.mark.parametrize("row", RULES, ids=[r.id for r in RULES])
def test_rules_pass_check_rule_to_order_2(row):
    if row.id in CHECK_GRADS_ONLY:
        test_rule_matches_finite_differences_in_both_modes_to_order_2(row)
        return
    exact_tol = LOOSER_TRANSPOSE.get(row.name, (None,))[0]
    check_rule(row.fn, row.args(), order=row.order, eps=row.eps, tol=row.tol, exact_tol=exact_tol)


@pytest.mark.parametrize("row", NAMES, ids=[r.id for r in NAMES])
def test_rule_matches_finite_differences_in_both_modes_to_order_2(row):
    check_grads(row.fn, row.args(), order=row.order, modes=("fwd", "rev"), eps=row.eps, tol=row.tol)


@pytest.mark.parametrize("row", FLOAT32, ids=[r.id for r in FLOAT32])
def test_float32_in_float32_out(row):
    if row.float32 is not True:
        pytest.skip(f"float32 does not apply to {row.id}: {row.float32}")
    args = row.args(np.float32)
    out, f_vjp = vjp(row.fn, *args)
    expected = np.float64 if row.promotes else np.float32
    for leaf in _leaves(out):
        assert np.result_type(leaf) == expected, f"value of {row.id} is {np.result_type(leaf)}"
    for i, g in enumerate(f_vjp(_map(np.ones_like, out))):
        assert np.result_type(g) == np.float32, f"cotangent of argument {i} is {np.result_type(g)}"
        assert np.shape(g) == np.shape(args[i])
    _, t_out = jvp(row.fn, args, tuple(np.ones_like(a) for a in args))
    for leaf, o in zip(_leaves(t_out), _leaves(out)):
        assert np.result_type(leaf) == expected and np.shape(leaf) == np.shape(o)


def _leaves(tree):
    from fgrad.tree_util import tree_flatten

    return tree_flatten(tree)[0]


def _map(f, tree):
    from fgrad.tree_util import tree_map

    return tree_map(f, tree)


@pytest.mark.parametrize("entry", NONDIFF, ids=[n.name for n in NONDIFF])
def test_declared_non_differentiable_names_are_constants(entry):
    def g(x):
        return fnp.sum(fnp.astype(fnp.asarray(entry.fn(x)), np.float64)) * fnp.sum(x)

    x = np.array([-1.3, 0.4, 2.6])
    c = np.sum(np.asarray(entry.fn(x), dtype=np.float64))  # g(x) = c * sum(x): g' = c
    np.testing.assert_array_equal(grad(g)(x), np.full(3, c))
    np.testing.assert_array_equal(jacfwd(g)(x), np.full(3, c))
    np.testing.assert_array_equal(jacfwd(grad(g))(x), np.zeros((3, 3)))


def _public_names():
    """Every public callable of the mirrors, spelled as rows name them."""
    modules = [("", fnp), ("linalg.", fnp.linalg), ("fft.", fnp.fft)]
    if importlib.util.find_spec("scipy") is not None:
        import fgrad.scipy

        for sub in fgrad.scipy.SUBMODULES:
            if importlib.util.find_spec(f"fgrad.scipy.{sub}") is not None:
                modules.append((f"scipy.{sub}.", importlib.import_module(f"fgrad.scipy.{sub}")))
    names = []
    while modules:
        prefix, module = modules.pop(0)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                # scipy.stats.norm and its kin are modules of functions; fgrad.numpy's family
                # modules are not public names
                if prefix.startswith("scipy."):
                    modules.append((f"{prefix}{name}.", obj))
            elif callable(obj) and not isinstance(obj, type) and not name.startswith("_"):
                names.append(prefix + name)
    return names


def test_every_public_name_has_a_row_or_is_declared_non_differentiable():
    if os.environ.get("FGRAD_ROWS"):
        pytest.skip("FGRAD_ROWS loads only some families of rows")
    covered = {r.name for r in ROWS} | {n.name for n in NONDIFF}
    missing = sorted(set(_public_names()) - covered)
    assert not missing, f"no row in tests/rows_*.py and not declared non-differentiable: {missing}"


def test_rows_are_counted_by_module():
    """Not a check: prints the table's coverage (run with -s to see it)."""
    names = set(_public_names())
    diff = {r.name for r in ROWS} & names
    by_module = {}
    for name in sorted(diff):
        module = name.rsplit(".", 1)[0] if "." in name else "numpy"
        by_module[module] = by_module.get(module, 0) + 1
    print(f"\ndifferentiable names with rows: {len(diff)} {by_module}; rows: {len(ROWS)}")
    assert diff
