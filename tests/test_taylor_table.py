"""The gradient table through Taylor mode (rows in tests/rows_*.py, see tests/gradtable.py).

Every row's arguments move along a random polynomial path x(t) = x0 + x1 t + x2 t^2/2! + ...
(K random terms per argument, shaped like it, complex for a complex argument), and
`fgrad.jet` of the row's function along it must equal the derivatives at t = 0 of
g(t) = f(x(t)) computed by nested forward mode: `jvp` of `jvp` of ... in the scalar t (on a
scalar, `jacfwd` is one `jvp`). Dtypes and shapes must be equal exactly (tracing never changes
them), the primal output must equal the untraced call, and no Taylor rule may raise.

Each row runs once. The elementwise rows (of a NumPy or SciPy ufunc without a core signature:
their rules act on each element alone) run to order 8, one row of each name and variant (the
one with the most elements; its other shapes differ only in broadcasting) and one of each name
for the costliest (`ORDER_8_ONCE_PER_NAME`, the smallest row for `ORDER_8_SMALLEST`); nested
forward mode evaluates the function 2^K times over. The others run to order 4, odeint's to
order 2 (`ORDER_LIMITED`: its reference is the cost). The last test
reports which primitives took `fgrad.taylor.general_rule` (derived from the forward rule) and
which a direct rule.
"""

import math
import sys

import numpy as np
import pytest
from gradtable import load, numpy_object, sample

import fgrad
import fgrad.numpy as fnp
from fgrad import taylor
from fgrad.tree_util import tree_flatten

ROWS, _ = load()
ORDER = 4
ELEMENTWISE_ORDER = 8

# Elementwise names whose order-8 reference costs too much to run for every variant: nested
# forward mode evaluates the function 2^8 times over, and these functions' forward rules call
# further series or the same function at neighbouring orders. Measured seconds a row at order 8.
ORDER_8_ONCE_PER_NAME = {
    "scipy.special." + name: "the rule calls the function at orders v - 1 and v + 1: 0.3-0.8 s"
    for name in ("iv", "ive", "jv", "jn", "kv", "kve", "yv", "yn")
}
ORDER_8_ONCE_PER_NAME["scipy.special.betainc"] = "a series in a and b: 0.9-1.4 s"
# A series in a (or its inverse): 2-15 s a row at order 8; the smallest row of each name.
ORDER_8_SMALLEST = {
    "scipy.special." + name for name in ("gammainc", "gammaincc", "gammaincinv", "gammainccinv")
}
ORDER_8_ONCE_PER_NAME.update(dict.fromkeys(ORDER_8_SMALLEST, "a series in a: 2-15 s a row"))

# Rows run to a lower order, and why (measured).
ORDER_LIMITED = {
    "scipy.integrate.odeint": (
        2,
        "the reference: nested forward mode through odeint transposes its adjoint solve at "
        "every level, 100-135 s a row at order 4 (jet itself takes one solve of the system "
        "of coefficients: 13 ms at order 4)",
    ),
}

# Rows where jet disagrees with nested forward mode, by a defect in a Taylor rule (name, or
# (name, variant)): each is an expected failure until the rule is fixed.
DEFECTS = {}


def _defect(row):
    return DEFECTS.get((row.name, row.variant)) or DEFECTS.get(row.name)


def _is_elementwise(row):
    """A row of a NumPy or SciPy ufunc (not a gufunc such as matmul)."""
    ufunc = numpy_object(row.name)
    return isinstance(ufunc, np.ufunc) and ufunc.signature is None


def _size(row):
    return sum(np.size(a) for a in row.args())


def _order_8_rows():
    """The ids of the elementwise rows run to order 8: of each name and variant (of each name
    in ORDER_8_ONCE_PER_NAME), the row with the most elements."""
    chosen = {}
    for row in ROWS:
        if _is_elementwise(row):
            key = row.name if row.name in ORDER_8_ONCE_PER_NAME else (row.name, row.variant)
            smaller = row.name in ORDER_8_SMALLEST
            if key not in chosen or (
                _size(row) < _size(chosen[key]) if smaller else _size(row) > _size(chosen[key])
            ):
                chosen[key] = row
    return {id(row) for row in chosen.values()}


def _marks(row):
    reason = _defect(row)
    if reason is None:
        return []
    # the defect's nan comes with NumPy's warning: the xfail says it
    return [
        pytest.mark.xfail(strict=True, reason=reason),
        pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning"),
    ]


def _cases():
    """Each row once, to order 8 or 4 (order 8 checks orders 1-4 too). The quick suite samples
    the rows (tests/gradtable.py, `sample`), and of the rows that run to order 8, one of each
    elementwise name; FGRAD_FULL=1 runs them all."""
    high = _order_8_rows()
    picked = {id(r) for r in sample(ROWS, "taylor", smallest=True)}
    picked |= {id(r) for r in sample([r for r in ROWS if id(r) in high], "taylor-order8")}
    cases = [
        (
            row,
            ORDER_LIMITED[row.name][0]
            if row.name in ORDER_LIMITED
            else ELEMENTWISE_ORDER
            if id(row) in high
            else ORDER,
        )
        for row in ROWS
        if id(row) in picked
    ]
    return [
        pytest.param(
            row,
            order,
            id=f"{row.id}-order{order}",
            marks=_marks(row),
        )
        for row, order in cases
    ]


def _leaves(tree):
    return tree_flatten(tree)[0]


def _series(row, args, order):
    """`order` random terms per argument (derivatives of the path), shaped and typed like it."""
    rng = np.random.default_rng(row.seed + 17)
    series = []
    for x in args:
        terms = []
        for _ in range(order):
            t = rng.standard_normal(np.shape(x))
            if np.iscomplexobj(x):
                t = t + 1j * rng.standard_normal(np.shape(x))
            terms.append(np.asarray(t, dtype=np.result_type(x))[()])
        series.append(terms)
    return series


def _path(fn, args, series):
    """g(t) = fn(x(t)): each argument along its truncated Taylor series, by Horner's scheme."""
    normalized = [[term / math.factorial(k) for k, term in enumerate(terms, 1)] for terms in series]

    def g(t):
        moved = []
        for x, coefficients in zip(args, normalized):
            tail = coefficients[-1] * t
            for c in reversed(coefficients[:-1]):
                tail = (tail + c) * t
            moved.append(x + tail)
        return fn(*moved)

    return g


def _nested_forward(g, order):
    """(g(0), g'(0), ..., g^(order)(0)) by nested jvp: level k differentiates the tuple of
    orders 0..k-1, whose tangents are orders 1..k."""

    def derivatives(k):
        if k == 0:
            return lambda t: (g(t),)
        lower = derivatives(k - 1)

        def up_to_k(t):
            values, tangents = fgrad.jvp(lower, (t,), (np.float64(1.0),))
            return (values[0], *tangents)

        return up_to_k

    return derivatives(order)(np.float64(0.0))


def _tolerance(row):
    """The vmap table's: the row's own tolerance for central differences, a thousandth of it
    here (both sides are exact up to rounding), never below 1e-9."""
    rtol = 1e-9 if row.tol is None else max(1e-9, row.tol * 1e-3)
    return {"rtol": rtol, "atol": 1e-11}


def _assert_like(got, want, row, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{row.id} {what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{row.id} {what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, err_msg=f"{row.id} {what}", **_tolerance(row))


def _check(row, order):
    """jet of the row to `order` against its untraced value and nested forward mode."""
    args = row.args()
    series = _series(row, args, order)
    primal_out, series_out = fgrad.jet(row.fn, args, series)
    untraced = _leaves(row.fn(*args))
    want = [_leaves(d) for d in _nested_forward(_path(row.fn, args, series), order)]
    values = _leaves(primal_out)
    assert len(values) == len(untraced), (
        f"{row.id}: {len(values)} outputs, {len(untraced)} untraced"
    )
    for i, (value, plain) in enumerate(zip(values, untraced)):
        value, plain = np.asarray(value), np.asarray(plain)
        assert (value.dtype, value.shape) == (plain.dtype, plain.shape), f"{row.id} output {i}"
        np.testing.assert_array_equal(value, plain, err_msg=f"{row.id} output {i}, primal")
    # series_out has one list of `order` terms per output leaf
    terms = _leaves(series_out)
    assert len(terms) == order * len(values), f"{row.id}: {len(terms)} terms"
    for i in range(len(values)):
        for k in range(1, order + 1):
            _assert_like(terms[i * order + k - 1], want[k][i], row, f"output {i}, order {k}")


# --- which rule each primitive took ---------------------------------------------------------------

# primitive -> {"direct", "general"}: the rules the rows' Taylor levels ran for it
_TAKEN = {}


def _qualified_names():
    """{id of a primitive: its label} for fgrad's own primitives: the module defining it and
    its name, with the variable holding it where that differs (`fgrad.numpy.shaping.sum
    [_sum_kw_p]`, `fgrad.numpy.elementwise.add [add_operator]`)."""
    from fgrad.core import Primitive

    def rule_modules(prim):
        rules = [prim.impl, prim.fprop, prim.vjp, prim.jvp, *(prim.vjps or ()), *(prim.jvps or ())]
        return {getattr(r, "__module__", None) for r in rules}

    # id -> (rank, label): a module defining one of its rules wins, then a module over a
    # package, then a public variable
    found = {}
    for module_name, module in sys.modules.items():
        if module_name.startswith("fgrad") and module is not None:
            for name, v in vars(module).items():
                v = getattr(v, "primitive", v)
                if isinstance(v, Primitive):
                    rank = (
                        module_name in rule_modules(v),
                        not hasattr(module, "__path__"),
                        not name.startswith("_"),
                    )
                    label = f"{module_name}.{v.name}" + (f" [{name}]" if name != v.name else "")
                    if id(v) not in found or rank > found[id(v)][0]:
                        found[id(v)] = (rank, label)
    return {key: label for key, (_, label) in found.items()}


@pytest.fixture
def record_rules(monkeypatch):
    """Notes, for every primitive a Taylor level processes, whether it had a direct rule and
    whether the general rule ran for it (also as a direct rule's fallback)."""
    taken = []
    real_process, real_general = taylor.TaylorLevel.process, taylor.general_rule

    def process(level, prim, args, params):
        if any(getattr(a, "level", None) is level for a in args):
            taken.append((prim, "direct" if prim in taylor.rules else "general"))
        return real_process(level, prim, args, params)

    def general_rule(prim, *rest, **kw):
        taken.append((prim, "general"))
        return real_general(prim, *rest, **kw)

    monkeypatch.setattr(taylor.TaylorLevel, "process", process)
    monkeypatch.setattr(taylor, "general_rule", general_rule)
    yield
    for prim, how in taken:
        _TAKEN.setdefault(prim, set()).add(how)


@pytest.mark.parametrize(("row", "order"), _cases())
def test_jet_equals_nested_forward_mode(row, order, record_rules):
    _check(row, order)


def test_the_check_catches_a_slightly_wrong_rule(monkeypatch):
    """sin's rule with its third coefficient 1e-7 off (relative) fails the check."""
    sin_p = fnp.sin.primitive
    right = taylor.rules[sin_p]

    def wrong(primals, series):
        ans, out = right(primals, series)
        return ans, (*out[:2], out[2] * (1 + 1e-7), *out[3:])

    monkeypatch.setitem(taylor.rules, sin_p, wrong)
    row = next(r for r in load(["core"])[0] if r.name == "sin")
    with pytest.raises(AssertionError, match="order 3"):
        _check(row, ORDER)
    monkeypatch.setitem(taylor.rules, sin_p, right)
    _check(row, ORDER)


def test_report_primitives_on_the_general_rule(capsys):
    """Not a check of the rules (the rows are): lists which primitives the rows ran through
    `taylor.general_rule` and which through a direct rule, and which elementwise rows ran to
    order 4 only (run with -s or -v to see it)."""
    if not _TAKEN:
        pytest.skip("no row of the table ran in this session")
    names = _qualified_names()

    def taking(rules):
        return sorted(names.get(id(p), p.name) for p, how in _TAKEN.items() if how == rules)

    general, direct = taking({"general"}), taking({"direct"})
    fallback = taking({"direct", "general"})
    high = _order_8_rows()
    limits = ORDER_8_ONCE_PER_NAME
    held = sorted({r.name for r in ROWS if r.name in limits and id(r) not in high})
    with capsys.disabled():
        print(f"\n{len(ROWS)} rows: {len(high)} to order {ELEMENTWISE_ORDER}, the rest to {ORDER}")
        print(f"  elementwise names with variants held to order {ORDER} (seconds at order 8):")
        for name in held:
            once = " (one row to order 8)" if name in ORDER_8_ONCE_PER_NAME else ""
            print(f"    {name}{once}: {limits[name]}")
        print(f"Taylor rules the rows took: {len(direct)} direct, {len(general)} general only")
        print(f"  direct ({len(direct)}): {', '.join(direct)}")
        print(f"  direct, falling back to the general rule for some inputs: {', '.join(fallback)}")
        print(f"  general rule only ({len(general)}):")
        for name in general:
            print("    " + name)
    assert direct, "no primitive took a direct rule: the Taylor level did not run"
