"""Batching, Taylor and sparsity rules, and what `jit` and `vmap` must know of a primitive's
values, are registered in one place, `fgrad.primitive.register_rules`.

The tables themselves (`fgrad.batching.rules` and `row_by_row_reasons`, `fgrad.taylor.rules`,
`fgrad.sparsity.rules`, `fgrad.core.shape_from_values` and `raises_on_values`) stay where
their levels read them; this test reads every module of the package (its syntax tree, so a
comment or a string never counts) and fails, naming file:line, on any write into one of them
(or a call of `declare_row_by_row`) outside the modules that own them and
`fgrad/primitive.py`.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import fgrad
from fgrad import batching, taylor
from fgrad.core import Primitive
from fgrad.primitive import (
    defbilinear,
    deflinear,
    defprimitive,
    defunary,
    nondiff,
    primitive,
    register_rules,
)

PACKAGE = pathlib.Path(fgrad.__file__).parent
# each module that holds tables, and their names in it
TABLE_NAMES = {
    "fgrad.batching": {"rules", "row_by_row_reasons"},
    "fgrad.taylor": {"rules"},
    "fgrad.sparsity": {"rules"},
    "fgrad.core": {"shape_from_values", "raises_on_values"},
}
TABLES = {f"{module}.{name}" for module, names in TABLE_NAMES.items() for name in names}
# the modules allowed to write the tables: those that own them and the one place of registration
# (the sparsity level fills its table from the declarations, `register_rules(sparsity=...)`)
OWNERS = {"batching.py", "taylor.py", "sparsity.py", "core.py", "primitive.py"}
# a dict's or a set's methods that change it
WRITERS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
WRITERS |= {"add", "discard", "remove", "difference_update", "intersection_update"}
# functions that write a table for their caller
REGISTRARS = {"fgrad.batching.declare_row_by_row"}


def _module_name(path: pathlib.Path) -> str:
    parts = ["fgrad", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str | None, level: int, here: str, is_package: bool) -> str:
    """The absolute name of an import's module (`from .. import x` in fgrad.numpy.linalg is
    fgrad)."""
    if level == 0:
        return module or ""
    base = here.split(".")
    base = base[: len(base) - level + (1 if is_package else 0)]
    return ".".join(base + ([module] if module else []))


def writes_into_tables(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, what) for every write into `fgrad.batching.rules` or `fgrad.taylor.rules` in this
    source, and every name bound to either table (writes through such an alias would go unseen).
    """
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # local name -> the module of tables it stands for
    tables: set[str] = set()  # local names of the tables themselves
    registrars: set[str] = set()  # local names of `REGISTRARS`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            where = _absolute(node.module, node.level, module, is_package)
            for alias in node.names:
                local = alias.asname or alias.name
                if f"{where}.{alias.name}" in TABLE_NAMES:
                    modules[local] = f"{where}.{alias.name}"
                elif f"{where}.{alias.name}" in TABLES:
                    tables.add(local)
                elif f"{where}.{alias.name}" in REGISTRARS:
                    registrars.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in TABLE_NAMES and alias.asname:
                    modules[alias.asname] = alias.name

    def dotted(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            head = dotted(node.value)
            return None if head is None else f"{head}.{node.attr}"
        return None

    def is_table(node: ast.expr) -> bool:
        name = dotted(node)
        if name is None:
            return False
        if name in tables:
            return True
        head, _, attr = name.rpartition(".")
        return f"{modules.get(head, head)}.{attr}" in TABLES

    def is_registrar(node: ast.expr) -> bool:
        name = dotted(node)
        if name is None:
            return False
        head, _, attr = name.rpartition(".")
        return name in registrars or f"{modules.get(head, head)}.{attr}" in REGISTRARS

    found = []

    def targets_of(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, ast.Assign):
            return node.targets
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        if isinstance(node, ast.Delete):
            return node.targets
        return []

    for node in ast.walk(tree):
        for target in targets_of(node):
            for part in ast.walk(target):
                if isinstance(part, ast.Subscript) and is_table(part.value):
                    found.append((part.lineno, f"writes {ast.unparse(part)}"))
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            value = node.value
            if value is not None and is_table(value):
                found.append((node.lineno, f"binds a name to the table {ast.unparse(value)}"))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITERS
            and is_table(node.func.value)
        ):
            found.append((node.lineno, f"calls {ast.unparse(node.func)}"))
        if isinstance(node, ast.Call) and is_registrar(node.func):
            found.append((node.lineno, f"calls {ast.unparse(node.func)}"))
    return sorted(found)


def test_every_rule_is_registered_through_register_rules():
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent == PACKAGE and path.name in OWNERS:
            continue
        source = path.read_text(encoding="utf-8")
        module = _module_name(path)
        for line, what in writes_into_tables(source, module, path.name == "__init__.py"):
            offences.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert not offences, (
        "batching and Taylor rules are registered by fgrad.primitive.register_rules (or a "
        "builder's batch=/taylor= keywords), not written into the tables:\n" + "\n".join(offences)
    )


@pytest.mark.parametrize(
    "source",
    [
        "from .. import batching as _b\n_b.rules[p] = r\n",
        "from .. import taylor\ntaylor.rules.update({p: r})\n",
        "from ..taylor import rules as t\nt.setdefault(p, r)\n",
        "import fgrad.batching\nfgrad.batching.rules[p] = r\n",
        "import fgrad.batching as b\nb.rules.pop(p)\n",
        "from .. import taylor as _t\nrules = _t.rules\nrules[p] = r\n",
        "from .. import batching\ndef f():\n    batching.rules[p] += r\n",
        "from .. import batching\ndel batching.rules[p]\n",
        "from .. import sparsity\nsparsity.rules[p] = r\n",
        "from .. import core as _core\n_core.shape_from_values.add(p)\n",
        "from ..core import raises_on_values\nraises_on_values.update((p, q))\n",
        "from .. import batching as _b\n_b.declare_row_by_row(p, 'why')\n",
        "from ..batching import declare_row_by_row\ndeclare_row_by_row(p, 'why')\n",
        "from .. import batching\nbatching.row_by_row_reasons[p] = 'why'\n",
    ],
)
def test_the_scan_finds_each_way_of_writing_a_table(source):
    assert writes_into_tables(source, "fgrad.numpy.linalg"), source


@pytest.mark.parametrize(
    "source",
    [
        "from .. import batching as _b\nrule = _b.rules[p]\nx = _b.rules.get(p)\n",
        "from .. import coloring\ncoloring.rules[p] = r\n",  # another module's dict
        "rules = {}\nrules[p] = r\n",  # a table of this module's own
        "from . import taylor\ntaylor.rules[p] = r\n",  # fgrad.numpy.taylor is no table
    ],
)
def test_the_scan_leaves_reads_and_other_tables_alone(source):
    assert writes_into_tables(source, "fgrad.numpy.linalg") == [], source


def test_relative_imports_of_a_package_resolve_from_the_package_itself():
    source = "from ... import batching\nbatching.rules[p] = r\n"
    # fgrad/scipy/sparse/__init__.py: `...` is fgrad; in a module fgrad/scipy/sparse.py it
    # would be the package above fgrad
    assert writes_into_tables(source, "fgrad.scipy.sparse", is_package=True)
    assert writes_into_tables(source, "fgrad.scipy.sparse", is_package=False) == []


def _fresh_primitive(name):
    return defprimitive(lambda x: x, None, None, name=name)


def test_register_rules_writes_both_tables():
    prim = _fresh_primitive("registered_twice_over")

    def batch(args, dims):
        return args[0], dims[0]

    def series(primals, series):
        return primals[0], series[0]

    register_rules(prim, batch=batch, taylor=series)
    try:
        assert batching.rules[prim] is batch
        assert taylor.rules[prim] is series
    finally:
        del batching.rules[prim], taylor.rules[prim]


def test_register_rules_writes_what_jit_and_vmap_must_know_of_the_values():
    from fgrad import core

    prim = _fresh_primitive("depends_on_its_values")
    register_rules(
        prim, shape_from_values=True, raises_on_values=True, row_by_row="one row at a time"
    )
    try:
        assert prim in core.shape_from_values and prim in core.raises_on_values
        assert batching.row_by_row_reasons[prim] == "one row at a time"
    finally:
        core.shape_from_values.discard(prim)
        core.raises_on_values.discard(prim)
        del batching.row_by_row_reasons[prim]
    with pytest.raises(TypeError, match="depends_on_its_values.*row_by_row=.*reason"):
        register_rules(prim, row_by_row="")
    assert prim not in batching.row_by_row_reasons


def test_the_batching_table_forgets_its_shortcuts_on_every_write():
    # `BatchLevel` caches which primitives take the elementwise shortcut: each way of writing
    # the table must clear it (a stale entry would batch a new rule's primitive elementwise)
    prim = _fresh_primitive("rewritten_rule")

    def rule(args, dims):
        return args[0], dims[0]

    for write in (
        lambda t: t.__setitem__(prim, rule),
        lambda t: t.update({prim: rule}),
        lambda t: t.setdefault(prim, rule),
        lambda t: t.__ior__({prim: rule}),
    ):
        batching._elementwise[prim] = True
        write(batching.rules)
        assert prim not in batching._elementwise
        batching._elementwise[prim] = True
        batching.rules.pop(prim)
        assert prim not in batching._elementwise
    batching.rules[prim] = rule
    batching._elementwise[prim] = True
    assert batching.rules.popitem() == (prim, rule)  # the newest entry
    assert prim not in batching._elementwise


@pytest.mark.parametrize("which", ["batch", "taylor"])
def test_register_rules_refuses_a_rule_that_is_not_callable(which):
    prim = _fresh_primitive("needs_a_callable_rule")
    with pytest.raises(TypeError, match=rf"needs_a_callable_rule.*{which}.*str.*not callable"):
        register_rules(prim, **{which: "a rule"})
    assert prim not in batching.rules and prim not in taylor.rules


def test_register_rules_refuses_a_second_rule_unless_told_to_replace():
    prim = _fresh_primitive("declared_twice")

    def first(args, dims):
        return args[0], dims[0]

    def second(args, dims):
        return args[0], dims[0]

    register_rules(prim, batch=first)
    try:
        with pytest.raises(ValueError, match=r"declared_twice.*batch=.*first.*replace=True"):
            register_rules(prim, batch=second, taylor=lambda primals, series: (primals[0], None))
        assert batching.rules[prim] is first and prim not in taylor.rules  # nothing written
        register_rules(prim, batch=second, replace=True)
        assert batching.rules[prim] is second
    finally:
        del batching.rules[prim]


def test_register_rules_refuses_what_is_not_a_primitive():
    with pytest.raises(TypeError, match=r"Primitive.*not a function.*sin\.primitive"):
        register_rules(fgrad.numpy.sin, batch=lambda args, dims: (args[0], dims[0]))


def test_register_rules_without_rules_is_a_mistake():
    with pytest.raises(TypeError, match="nothing to register"):
        register_rules(_fresh_primitive("without_rules"))


def test_every_builder_takes_the_rules_as_keywords():
    def batch(args, dims, **params):
        return args[0], dims[0]

    def series(primals, series, **params):
        return primals[0], series[0]

    made = [
        defprimitive(lambda x: x, None, None, name="kw_def", batch=batch, taylor=series),
        deflinear(lambda x: x, lambda ans, x: lambda ct: ct, "kw_lin", batch=batch, taylor=series),
        defbilinear(lambda x, y: x * y, (None, None), "kw_bilin", batch=batch, taylor=series),
        defunary(
            lambda x: x, lambda ans, x: 1.0, name="kw_unary", batch=batch, taylor=series
        ).primitive,
        nondiff(lambda x: x, "kw_nondiff", batch=batch, taylor=series),
        primitive(
            lambda x: (x, lambda ct: (ct,)), name="kw_user", batch=batch, taylor=series
        ).primitive,
    ]
    try:
        for prim in made:
            assert isinstance(prim, (Primitive, fgrad.core.NondiffPrimitive)), prim
            rule = batching.rules[prim]  # (a user's is checked: wrapped, `__wrapped__` it)
            assert getattr(rule, "__wrapped__", rule) is batch, prim.name
            rule = taylor.rules[prim]
            assert getattr(rule, "__wrapped__", rule) is series, prim.name
    finally:
        for prim in made:
            del batching.rules[prim], taylor.rules[prim]


def test_a_user_primitives_rules_given_as_keywords_are_the_ones_vmap_and_jet_apply():
    import fgrad.numpy as fnp

    used = []

    def batch(args, dims):
        used.append("batch")
        return cube(args[0]), dims[0]  # elementwise: all rows in one call

    def series(primals, series):
        used.append("taylor")
        (x,), (s,) = primals, series
        x1 = s[0]  # order 1 only: d(x^3) = 3 x^2 dx
        return cube(x), (3.0 * x * x * x1,)

    def fprop(x):
        return x * x * x, lambda ct: (3.0 * ct * x * x,)

    cube = primitive(fprop, name="cube_with_rules", batch=batch, taylor=series)
    try:
        xs = np.array([1.0, 2.0, -0.5])
        np.testing.assert_array_equal(fgrad.vmap(cube)(xs), xs**3)
        assert used == ["batch"]  # not one row at a time
        y0, (y1,) = fgrad.jet(cube, (2.0,), ((0.5,),))
        assert (float(y0), float(y1)) == (8.0, 6.0)
        assert used == ["batch", "taylor"]  # not the general rule
        assert float(fgrad.grad(cube)(2.0)) == 12.0  # the derivative is still the fprop's
        assert fnp.allclose(fgrad.vmap(fgrad.grad(cube))(xs), 3 * xs**2)
    finally:
        del batching.rules[cube.primitive], taylor.rules[cube.primitive]
