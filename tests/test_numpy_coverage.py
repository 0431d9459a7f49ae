"""fgrad.numpy mirrors every public name of NumPy's namespace, or leaves it out on purpose.

Each public name of `dir(numpy)` is either mirrored (in `fgrad.numpy.__all__`, or one of its
submodules `linalg` and `fft`) or listed in `fgrad.numpy._coverage.EXCLUDED` with the reason
of its group (I/O, printing, memory layout, error state, dates, array subclasses, submodules
without a mirror, ...). A name NumPy adds in a later release fails here until it is mirrored or
excluded with a reason; an excluded name that fgrad.numpy mirrors after all fails too, so the
list cannot go stale.
"""

import importlib
import inspect
import pathlib
import pkgutil
import sys

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad.numpy._coverage import EXCLUDED, no_derivative
from fgrad.numpy._mirror import KINDS, kind_of

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import fgrad_coverage as coverage

SUBMODULES = {"linalg", "fft"}  # fgrad.numpy's mirrored submodules, not in its __all__


def _numpy_names():
    return {n for n in dir(np) if not n.startswith("_")}


def _mirrored():
    return set(fnp.__all__) | SUBMODULES


def test_every_public_numpy_name_is_mirrored_or_excluded_with_a_reason():
    unaccounted = sorted(_numpy_names() - _mirrored() - set(EXCLUDED))
    assert not unaccounted, (
        f"public NumPy names neither in fgrad.numpy nor in fgrad/numpy/_coverage.py's "
        f"EXCLUDED: {unaccounted}"
    )


def test_no_excluded_name_is_mirrored():
    both = sorted(set(EXCLUDED) & _mirrored())
    assert not both, f"mirrored, yet listed as excluded in fgrad/numpy/_coverage.py: {both}"


def test_every_exclusion_has_a_reason_and_names_a_numpy_name():
    for name, why in EXCLUDED.items():
        assert len(why) > 20, f"{name}: say why it is left out"
    # names NumPy no longer has (or never had) do not linger in the list
    gone = sorted(set(EXCLUDED) - _numpy_names())
    assert not gone, f"not public names of NumPy {np.__version__}: {gone}"


def test_an_excluded_name_raises_an_attribute_error_that_says_so():
    with pytest.raises(AttributeError, match="leaves numpy.genfromtxt out on purpose"):
        fnp.genfromtxt  # noqa: B018


def test_every_mirrored_name_is_numpys_or_fgrads_own():
    """The mirror adds no public names of its own beyond `at` (JAX's indexed update)."""
    extra = sorted(set(fnp.__all__) - _numpy_names())
    assert extra == ["at"], extra


def test_the_docs_coverage_table_shows_no_missing_name_outside_the_exclusions():
    mirror = next(m for m in coverage.MIRRORS if m.module == "fgrad.numpy")
    entries = coverage.table(mirror)
    missing = sorted(e.name for e in entries if e.status == coverage.MISSING)
    assert not missing, f"the docs' table of fgrad.numpy calls these missing: {missing}"
    excluded = {e.name: e.why for e in entries if e.status == coverage.EXCLUDED}
    assert excluded and all(excluded[n] == EXCLUDED[n] for n in excluded)
    assert "genfromtxt" in excluded and "I/O" in coverage.markdown(mirror)


def test_no_derivative_marks_a_function_for_the_coverage_tables():
    @no_derivative("a reason long enough to read")
    def f(x):
        return x

    assert f.no_derivative == "a reason long enough to read" and f(2) == 2


# --- the mirror's table: every exported name was declared with its kind -----------------------


def _kinds():
    """(module, name, kind) of every exported name of fgrad.numpy, its linalg and its fft."""
    for mod, theirs in ((fnp, np), (fnp.linalg, np.linalg), (fnp.fft, np.fft)):
        for name in mod.__all__:
            value = getattr(mod, name)
            own = getattr(theirs, name, None) is value
            yield mod.__name__, name, kind_of(value) or ("numpy" if own else None)


def _elementwise_ufunc(name):
    u = getattr(np, name, None)
    return isinstance(u, np.ufunc) and u.signature is None


def test_every_exported_name_is_declared_with_a_kind_that_says_what_it_is():
    """The kinds are checked against NumPy: a "ufunc" is one of NumPy's elementwise ufuncs and
    each of those is a "ufunc"; a "gufunc" is a NumPy ufunc with core dimensions; a
    "reduction" takes an axis; a "constant" has no derivative in the coverage tables; a
    "numpy" name is NumPy's own object."""
    constant = {
        e.name
        for m in coverage.MIRRORS
        if m.module == "fgrad.numpy"
        for e in coverage.table(m)
        if e.status == coverage.CONSTANT
    }
    wrong = []
    for module, name, kind in _kinds():
        main = module == "fgrad.numpy"
        value = getattr(fnp, name) if main else None
        if kind == "ufunc":
            right = _elementwise_ufunc(name)
        elif kind == "gufunc":
            theirs = getattr(np, name, None)
            right = isinstance(theirs, np.ufunc) and theirs.signature is not None
        elif kind == "reduction" and main:
            right = bool({"axis", "axis1"} & set(inspect.signature(value).parameters))
        elif kind == "constant" and main:
            right = name in constant
        else:
            right = kind is not None
        if not right or (main and _elementwise_ufunc(name) and kind != "ufunc"):
            wrong.append((module, name, kind))
    assert not wrong, (
        f"declared with a kind that NumPy (or the coverage table) contradicts: {wrong}"
    )
    assert {kind for *_, kind in _kinds()} == set(KINDS)  # each kind is used


# --- a name a mirror lacks says so (fgrad.numpy._mirror.missing_names) ------------------------

_STATS = ("beta", "chi2", "dirichlet", "expon", "gamma", "multivariate_normal", "norm", "poisson")
# (mirror, original, the API page whose coverage table lists the mirror's names, or None)
MIRRORS = [
    ("fgrad.numpy.linalg", "numpy.linalg", "fgrad.numpy.linalg"),
    ("fgrad.numpy.fft", "numpy.fft", "fgrad.numpy.fft"),
    ("fgrad.scipy.special", "scipy.special", "fgrad.scipy.special"),
    ("fgrad.scipy.linalg", "scipy.linalg", "fgrad.scipy.linalg"),
    ("fgrad.scipy.signal", "scipy.signal", "fgrad.scipy.signal"),
    ("fgrad.scipy.integrate", "scipy.integrate", "fgrad.scipy.integrate"),
    ("fgrad.scipy.stats", "scipy.stats", "fgrad.scipy.stats"),
    ("fgrad.scipy.optimize", "scipy.optimize", None),
    ("fgrad.scipy.sparse", "scipy.sparse", None),
    ("fgrad.scipy.sparse.linalg", "scipy.sparse.linalg", None),
] + [(f"fgrad.scipy.stats.{d}", f"scipy.stats.{d}", "fgrad.scipy.stats") for d in _STATS + ("t",)]


def _modules(mirror, original):
    if original.startswith("scipy"):
        pytest.importorskip("scipy")
    return importlib.import_module(mirror), pkgutil.resolve_name(original)


def _lacked(ours, theirs, functions=True):
    """The public names of the original the mirror lacks, read now (so that the test stays
    valid as names are added): its functions, or else its classes and constants."""
    names = sorted(n for n in set(dir(theirs)) - set(dir(ours)) if not n.startswith("_"))
    function = {
        n: callable(getattr(theirs, n)) and not isinstance(getattr(theirs, n), type) for n in names
    }
    return [n for n in names if function[n] == functions]


@pytest.mark.parametrize(("mirror", "original", "page"), MIRRORS)
def test_a_function_a_mirror_lacks_says_it_is_not_mirrored_yet_and_what_to_do(
    mirror, original, page
):
    ours, theirs = _modules(mirror, original)
    lacked = _lacked(ours, theirs)
    assert lacked, f"{mirror} mirrors every function of {original}: pick another module"
    name = lacked[0]
    with pytest.raises(AttributeError) as raised:
        getattr(ours, name)
    message = str(raised.value)
    assert f"{mirror} has no {name!r} yet" in message
    assert f"apply {original}.{name} to fgrad.stop_gradient(x)" in message
    assert "register it with fgrad.primitive" in message
    assert (f"The API page of {page}" in message) == (page is not None)
    assert not hasattr(ours, name)


def test_a_class_a_mirror_lacks_says_to_use_the_original():
    ours, theirs = _modules("fgrad.numpy.linalg", "numpy.linalg")
    name = _lacked(ours, theirs, functions=False)[0]  # LinAlgError
    with pytest.raises(AttributeError, match=f"use numpy.linalg.{name} itself"):
        getattr(ours, name)


def test_a_sparse_matrix_class_names_its_array_form_and_a_submodule_is_named_one():
    """csr_matrix said "use scipy.sparse.csr_matrix itself", whose products refuse traced
    data; scipy.signal.windows and scipy.stats.mstats were called "not a function"."""
    sparse, _ = _modules("fgrad.scipy.sparse", "scipy.sparse")
    for name in ("csr_matrix", "coo_matrix"):
        with pytest.raises(AttributeError, match=rf"use fgrad\.scipy\.sparse\.{name[:3]}_array"):
            getattr(sparse, name)
    for mirror, original, name in [
        ("fgrad.scipy.signal", "scipy.signal", "windows"),
        ("fgrad.scipy.stats", "scipy.stats", "mstats"),
    ]:
        ours, _ = _modules(mirror, original)
        with pytest.raises(AttributeError, match=rf"no submodule '{name}' yet.*{original}\.{name}"):
            getattr(ours, name)


@pytest.mark.parametrize(
    ("mirror", "original"), [("fgrad.numpy", "numpy")] + [m[:2] for m in MIRRORS]
)
@pytest.mark.parametrize("name", ["no_such_name", "_private", "__wrapped__"])
def test_a_name_the_original_lacks_keeps_pythons_message(mirror, original, name):
    """A typo, a private name and a dunder probe (doctest, pickle, import machinery) read as
    Python's own message, and hasattr is False."""
    ours, _ = _modules(mirror, original)
    with pytest.raises(AttributeError) as raised:
        getattr(ours, name)
    assert str(raised.value) == f"module {mirror!r} has no attribute {name!r}"
    assert not hasattr(ours, name)
