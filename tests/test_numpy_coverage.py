"""fgrad.numpy mirrors every public name of NumPy's namespace, or leaves it out on purpose.

Each public name of `dir(numpy)` is either mirrored (in `fgrad.numpy.__all__`, or one of its
submodules `linalg` and `fft`) or listed in `fgrad.numpy._coverage.EXCLUDED` with the reason
of its group (I/O, printing, memory layout, error state, dates, array subclasses, submodules
without a mirror, ...). A name NumPy adds in a later release fails here until it is mirrored or
excluded with a reason; an excluded name that fgrad.numpy mirrors after all fails too, so the
list cannot go stale.
"""

import pathlib
import sys

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad.numpy._coverage import EXCLUDED, no_derivative

# Temporary: the names the h34a branch adds (the differentiable half of issue 34's "Breadth"),
# written while both branches were under way. The lead deletes this set (and its two uses
# below) when merging h34a.
_ADDED_BY_H34A = {
    "apply_over_axes",
    "bartlett",
    "blackman",
    "block",
    "choose",
    "compress",
    "divmod",
    "einsum_path",
    "euler_gamma",
    "extract",
    "fill_diagonal",
    "frexp",
    "fromfunction",
    "hamming",
    "hanning",
    "histogram2d",
    "histogram_bin_edges",
    "histogramdd",
    "i0",
    "kaiser",
    "logical_xor",
    "mask_indices",
    "modf",
    "nanargmax",
    "nanargmin",
    "nextafter",
    "piecewise",
    "place",
    "poly",
    "put",
    "put_along_axis",
    "resize",
    "roots",
    "sort_complex",
    "spacing",
    "tri",
    "trim_zeros",
    "unstack",
}

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import fgrad_coverage as coverage  # noqa: E402  (the docs' coverage tables)

SUBMODULES = {"linalg", "fft"}  # fgrad.numpy's mirrored submodules, not in its __all__


def _numpy_names():
    return {n for n in dir(np) if not n.startswith("_")}


def _mirrored():
    return set(fnp.__all__) | SUBMODULES


def test_every_public_numpy_name_is_mirrored_or_excluded_with_a_reason():
    unaccounted = sorted(_numpy_names() - _mirrored() - set(EXCLUDED) - _ADDED_BY_H34A)
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
    missing = sorted(
        e.name for e in entries if e.status == coverage.MISSING and e.name not in _ADDED_BY_H34A
    )
    assert not missing, f"the docs' table of fgrad.numpy calls these missing: {missing}"
    excluded = {e.name: e.why for e in entries if e.status == coverage.EXCLUDED}
    assert excluded and all(excluded[n] == EXCLUDED[n] for n in excluded)
    assert "genfromtxt" in excluded and "I/O" in coverage.markdown(mirror)


def test_no_derivative_marks_a_function_for_the_coverage_tables():
    @no_derivative("a reason long enough to read")
    def f(x):
        return x

    assert f.no_derivative == "a reason long enough to read" and f(2) == 2
