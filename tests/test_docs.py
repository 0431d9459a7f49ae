"""The documentation's generated parts: the coverage tables and the mirrors' examples.

The tables (docs/_ext/fgrad_coverage.py) must name every public name of each mirror and of its
NumPy or SciPy original, and call a name differentiable exactly when the gradient table checks
its derivatives; every example generated for a mirror's name (docs/_ext/examples.json) must
still print what it printed when it was recorded; and every docstring example of fgrad's
public modules must run as pasted into a new session, with no name it does not import. The
site itself is built by .ci/run.
"""

import doctest
import importlib
import importlib.util
import pathlib
import re
import sys
import types
import warnings

import numpy as np
import pytest

DOCS_EXT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "_ext"
sys.path.insert(0, str(DOCS_EXT))

import fgrad_coverage as coverage  # noqa: E402
import fgrad_examples  # noqa: E402
import gradtable  # noqa: E402

MIRRORS = [m for m in coverage.MIRRORS if coverage.available(m)]


def _row_name(mirror, entry_name):
    """A table's name as the gradient table spells it ("linalg.inv", "scipy.stats.t.cdf")."""
    prefix = mirror.module.removeprefix("fgrad.numpy").removeprefix("fgrad.")
    return f"{prefix.lstrip('.')}.{entry_name}".lstrip(".")


def _public_callables(module):
    """The mirror's public functions, in its distribution modules too (scipy.stats)."""
    found = {}
    for name in coverage.mirror_names(module):
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue
        found[name] = obj
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType) and module.__name__ == "fgrad.scipy.stats":
            for fn in obj.__all__:
                found[f"{name}.{fn}"] = getattr(obj, fn)
    return found


@pytest.mark.parametrize("mirror", MIRRORS, ids=lambda m: m.module)
def test_the_table_names_every_public_name_of_the_mirror_and_of_the_original(mirror):
    entries = {e.name: e for e in coverage.table(mirror)}
    assert len(entries) == len(coverage.table(mirror)), "a name listed twice"
    ours = _public_callables(importlib.import_module(mirror.module))
    unlisted = sorted(set(ours) - set(entries))
    assert not unlisted, f"{mirror.module}: public names missing from the table: {unlisted}"
    listed_missing = sorted(n for n in ours if entries[n].status == coverage.MISSING)
    assert not listed_missing, f"{mirror.module}: public names marked missing: {listed_missing}"
    if mirror.module != "fgrad.scipy.stats":
        theirs = coverage.original_names(importlib.import_module(mirror.original))
        assert set(theirs) <= set(entries), f"{mirror.original} names not in the table"
        for name in set(theirs) - set(ours):
            assert entries[name].status in (coverage.MISSING, coverage.EXCLUDED), name
            with pytest.raises(AttributeError):
                getattr(importlib.import_module(mirror.module), name)


def test_statuses_agree_with_the_gradient_table():
    """Differentiable exactly when the gradient table has a row (which checks the derivatives);
    constant exactly when it declares the name Nondiff and has no row."""
    rows, nondiff = gradtable.load(families=None) if not _only_some_rows() else ([], [])
    if not rows:
        pytest.skip("FGRAD_ROWS loads only some families of rows")
    with_rows = {r.name for r in rows}
    declared = {n.name for n in nondiff}
    wrong = []
    for mirror in MIRRORS:
        module = importlib.import_module(mirror.module)
        ours = _public_callables(module)
        for entry in coverage.table(mirror):
            obj = ours.get(entry.name)
            if entry.status == coverage.MISSING or not callable(obj) or isinstance(obj, type):
                continue
            spelled = _row_name(mirror, entry.name)
            expected = (
                coverage.DIFFERENTIABLE
                if spelled in with_rows
                else coverage.CONSTANT
                if spelled in declared
                else None
            )
            if entry.status != expected:
                wrong.append(f"{spelled}: table says {entry.status}, gradient table {expected}")
    assert not wrong, "\n".join(wrong)


def _only_some_rows():
    import os

    return bool(os.environ.get("FGRAD_ROWS"))


def test_the_statuses_come_from_the_code():
    fnp = importlib.import_module("fgrad.numpy")
    assert coverage.status_of(fnp.sin, "fgrad.numpy", "sin")[0] == coverage.DIFFERENTIABLE
    assert coverage.status_of(fnp.argmax, "fgrad.numpy", "argmax")[0] == coverage.CONSTANT
    assert coverage.status_of(fnp.zeros, "fgrad.numpy", "zeros")[0] == coverage.CONSTANT
    assert coverage.status_of(fnp.shape, "fgrad.numpy", "shape")[0] == coverage.CONSTANT
    about_abs = [what for what, _ in coverage.conventions_of("abs")]
    assert about_abs == [
        "abs'(0)",
        "abs''(0)",
        "grad abs(z)**2 at 1+2j",
        "grad abs(z) at 0j",
        "hessian of abs(x + 1j y)**2 at 0",
    ]
    assert [w for w, _ in coverage.conventions_of("maximum")] == ["d/dx maximum(x, 1) at x = 1"]
    assert len(coverage.conventions_of("power")) == 3  # x**2.0, x**0.0, 0**y
    assert coverage.conventions_of("tan") == []


def _examples():
    return sorted(fgrad_examples.EXAMPLES.items())


class ScaledChecker(doctest.OutputChecker):
    """Doctest's checker for the recorded examples, with numbers compared to a relative 1e-7 of
    the largest number of the same output, plus 1e-12.

    An entry that is round-off (the gradient of `sum(svdvals(a))` for a symmetric `a` is the
    identity, its off-diagonal entries 1e-17 of either sign) prints differently with each BLAS
    and each machine, and may even be an exact 0: compared with the output's scale it is a 0
    like the others. NumPy pads a column for the minus sign such an entry may or may not
    bring, so the text around the numbers is compared without its spaces. (fgrad_examples'
    NumericChecker compares each number with itself only, and the text with its spaces.)"""

    NUMBER = fgrad_examples.NumericChecker.NUMBER

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True

        def text(s):
            return re.sub(r"\s+", "", self.NUMBER.sub("#", s))

        if text(want) != text(got):
            return False
        wanted = np.array([float(v) for v in self.NUMBER.findall(want)])
        found = np.array([float(v) for v in self.NUMBER.findall(got)])
        if wanted.shape != found.shape:
            return False
        scale = np.max(np.abs(wanted), initial=0.0)
        return bool(np.allclose(found, wanted, rtol=1e-7, atol=1e-12 + 1e-7 * scale))


def test_every_mirror_function_has_an_example():
    """Its own, in its docstring (run by --doctest-modules), or a generated one."""
    without = []
    for mirror in MIRRORS:
        for name, obj in _public_callables(importlib.import_module(mirror.module)).items():
            ours = (getattr(obj, "__module__", None) or "").startswith("fgrad")
            if not callable(obj) or isinstance(obj, type) or not ours:
                continue  # NumPy's own objects, documented as NumPy's
            qualified = f"{mirror.module}.{name}"
            if not fgrad_examples._has_own_example(obj) and qualified not in dict(_examples()):
                without.append(qualified)
    assert not without, f"no example: {without}"


@pytest.mark.parametrize("name", ["sin", "cos", "tanh", "exp", "log", "negative"])
def test_the_bare_primitives_say_what_they_are(name):
    """The functions of the hottest loops are bare primitives, without `as_ufunc`'s generated
    docstring: `help(fnp.tanh)` said nothing. Each names NumPy's ufunc and its derivative."""
    import fgrad.numpy as fnp

    doc = getattr(fnp, name).__doc__
    assert doc and f"NumPy's `{name}`" in doc and "keywords" in doc and "derivative" in doc


def test_every_public_function_of_the_mirrors_has_a_docstring():
    # help(fnp.moveaxis), help(fnp.ndim) and help(fnp.swapaxes) said nothing
    without = []
    for mirror in MIRRORS:
        for name, obj in _public_callables(importlib.import_module(mirror.module)).items():
            ours = (getattr(obj, "__module__", None) or "").startswith("fgrad")
            if callable(obj) and not isinstance(obj, type) and ours:
                if not (getattr(obj, "__doc__", None) or "").strip():
                    without.append(f"{mirror.module}.{name}")
    assert not without, f"no docstring: {without}"


@pytest.mark.parametrize("qualified, example", _examples(), ids=[k for k, _ in _examples()])
def test_generated_example_prints_what_it_recorded(qualified, example):
    test = doctest.DocTestParser().get_doctest(example, {}, qualified, qualified, 0)
    runner = doctest.DocTestRunner(
        checker=ScaledChecker(), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report) + (
        "If the new output is right, record it: python docs/_ext/fgrad_examples.py --write"
    )


def test_the_numeric_checker_still_catches_a_wrong_number():
    checker = ScaledChecker()
    assert checker.check_output("array([0.29552021])\n", "array([0.2955202100001])\n", 0)
    assert not checker.check_output("array([0.29552021])\n", "array([0.29552031])\n", 0)
    assert not checker.check_output("array([1.5])\n", "(array([1.5]),)\n", 0)
    # an entry 1e-6 of the output's scale is a number, not round-off
    assert not checker.check_output("array([1.0, 1.0e-06])\n", "array([1.0, 3.0e-06])\n", 0)


def test_the_numeric_checker_takes_round_off_for_the_zero_it_is():
    """svdvals' recorded gradient (issue 32) against what another machine printed, and against
    an exact identity, which NumPy prints without exponents."""
    checker = ScaledChecker()
    recorded = (
        "array([[ 1.00000000e+00,  7.71461485e-17],\n       [-1.20521778e-17,  1.00000000e+00]])\n"
    )
    elsewhere = (
        "array([[1.00000000e+00, 7.71461485e-17],\n       [4.34589734e-17, 1.00000000e+00]])\n"
    )
    assert checker.check_output(recorded, elsewhere, doctest.NORMALIZE_WHITESPACE)
    assert checker.check_output(recorded, "array([[1., 0.],\n       [0., 1.]])\n", 0)
    all_round_off = "array([-2.22044605e-16, -2.22044605e-16])\n"  # dirichlet.mean's gradient
    assert checker.check_output(all_round_off, "array([0., 0.])\n", 0)


PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "fgrad"


def _public_modules():
    """fgrad and each of its modules with no underscore in its dotted name, found from the
    files so that collecting the tests imports nothing (fgrad.scipy needs SciPy)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("fgrad", *path.relative_to(PACKAGE).with_suffix("").parts)
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            names.append(".".join(parts))
    return names


def _docstrings_with_examples(module):
    """The doctests of the module's docstring, of what it defines, and of its public names
    made in another module (fnp.hanning in fgrad.numpy.shaping, quad in fgrad.scipy._quadrature),
    each run in an empty namespace as a reader pasting it into a new session would."""
    finder = doctest.DocTestFinder()
    public = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
    made_elsewhere = [
        (f"{module.__name__}.{name}", obj)
        for name in public
        if (obj := getattr(module, name, None)) is not None
        and not isinstance(obj, types.ModuleType)
        and (getattr(obj, "__module__", None) or "").startswith("fgrad.")
        and obj.__module__ != module.__name__
    ]
    for name, obj in [(module.__name__, module), *made_elsewhere]:
        yield from (t for t in finder.find(obj, name, globs={}) if t.examples)


class _NameErrors(doctest.DocTestRunner):
    """Collects the examples that raise NameError; other failures are --doctest-modules' job."""

    def __init__(self):
        super().__init__(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        self.unbound = []

    def report_unexpected_exception(self, out, test, example, exc_info):
        if issubclass(exc_info[0], NameError):
            source = example.source.strip().splitlines()[0]
            self.unbound.append(f"{test.name}: {source!r}: {exc_info[1]}")


@pytest.mark.parametrize("module_name", _public_modules())
def test_every_docstring_example_runs_as_pasted_into_a_new_session(module_name):
    """An example that calls a name it never imports (tree_map after `import fgrad`) raised
    NameError when pasted: doctest runs it in its module's globals, where the name is bound.
    Here each docstring runs in an empty namespace, with its own import lines only."""
    if module_name.startswith("fgrad.scipy"):
        pytest.importorskip("scipy", reason="fgrad.scipy's examples need SciPy")
    module = importlib.import_module(module_name)
    runner = _NameErrors()
    for test in _docstrings_with_examples(module):
        if "scipy" in test.docstring and importlib.util.find_spec("scipy") is None:
            continue  # an example that imports SciPy (fgrad.coloring's): SciPy is missing
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an example's own warnings are not this test's
            runner.run(test, out=lambda text: None)
    assert not runner.unbound, "examples that use a name they do not import:\n" + "\n".join(
        runner.unbound
    )


# --- every name the guides point to has an entry -----------------------------------------------

DOCS = DOCS_EXT.parent
# Named in the guides without an entry of their own, and why
NOT_API = {
    "fgrad.demo": "a script, run as `python -m fgrad.demo`",
    "fgrad.scipy": "the package of the SciPy mirrors, each of which has its page",
}
_DIRECTIVE = re.compile(r"^\.\. (?:auto\w+|py:\w+):: ([\w.]+)", re.M)
_IN_MODULE = re.compile(r"^\.\. py:\w+:: (\w+).*\n\s+:module: ([\w.]+)", re.M)


def _documented_targets():
    """The names the site documents: each generated page's entries and modules, and the
    hand-written API pages'."""
    import fgrad_api

    pages = list(fgrad_api.api_pages().values())
    pages += [p.read_text() for p in (DOCS / "api").glob("*.md")]
    targets = set()
    for text in pages:
        targets.update(_DIRECTIVE.findall(text))
        targets.update(f"{module}.{name}" for name, module in _IN_MODULE.findall(text))
    return targets


def test_every_name_the_readme_and_the_guides_point_to_has_an_api_entry():
    """The README says Dask users get a `fgrad.protocols.DispatchError`, the page on sparse
    derivatives sends readers to `fgrad.coloring`, `fgrad.accumulation`,
    `fgrad.sparsity.SparsityLevel` and `dense_reasons()`, the guarantees to
    `fgrad.conventions`: none of them had an entry, so a reader could not look them up."""
    pytest.importorskip("scipy", reason="the SciPy mirrors' pages need SciPy")
    guides = [p for p in DOCS.glob("*.md") if p.name != "contributing.md"]  # not contributors'
    texts = [DOCS.parent / "README.md", *guides]
    named = set()
    for path in texts:
        named.update(re.findall(r"\bfgrad(?:\.[A-Za-z_]\w*)+", path.read_text()))
    targets = _documented_targets()
    missing = sorted(n for n in named - set(NOT_API) if n not in targets)
    assert not missing, f"named in the guides, with no API entry: {missing}"
