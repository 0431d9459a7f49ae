"""fgrad.numpy mirrors every public name of NumPy's namespace, or leaves it out on purpose.

Each public name of `dir(numpy)` is either mirrored (in `fgrad.numpy.__all__`, or one of its
submodules `linalg` and `fft`) or listed in `fgrad.numpy._coverage.EXCLUDED` with the reason
of its group (I/O, printing, memory layout, error state, dates, array subclasses, submodules
without a mirror, ...). A name NumPy adds in a later release fails here until it is mirrored or
excluded with a reason; an excluded name that fgrad.numpy mirrors after all fails too, so the
list cannot go stale.
"""

import inspect
import pathlib
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
