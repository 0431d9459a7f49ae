"""Which names each mirror module differentiates, computed from fgrad's own registries.

    python docs/_ext/fgrad_coverage.py            # every table, as Markdown, on stdout

For each mirror module (`fgrad.numpy`, its `linalg` and `fft`, and `fgrad.scipy`'s `special`,
`linalg`, `signal`, `integrate`, `stats`) every public name of the NumPy or SciPy original and
of the mirror gets one status:

- "differentiable": fgrad has rules for it (a `Primitive`) or builds it from operations that
  do; both modes, to any order.
- "constant": declared to have no derivative (a `NondiffPrimitive`: comparisons, `argmax`,
  `floor`, ...), NumPy's own object re-exported (`zeros`, `pi`, `float32`), or one of the few
  compositions that answer a question about an array rather than compute from its values
  (`shape`, `iscomplexobj`, `gammasgn`), listed below with their reason.
- "excluded": in NumPy but left out of `fgrad.numpy` on purpose (I/O, printing, memory
  layout, error state, dates, ...), with the reason `fgrad/numpy/_coverage.py` gives.
- "missing": in NumPy (SciPy) but not in the mirror, which raises an AttributeError for it.

Nothing here is a hand-kept list of names except `ANSWERS_ABOUT_THE_ARRAY` (a function
built from fgrad operations may say it has no derivative itself, with `no_derivative`, see
`fgrad/numpy/_coverage.py`, which also lists the names excluded on purpose);
`tests/test_docs.py` checks the tables against the gradient table's rows and declarations, so a
new name that is classified wrongly fails a test.

Imports: `fgrad`, NumPy, and SciPy when it is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
import types
from dataclasses import dataclass

from fgrad.core import NondiffPrimitive
from fgrad.numpy._coverage import EXCLUDED as _NUMPY_EXCLUDED

DIFFERENTIABLE = "differentiable"
CONSTANT = "constant"
EXCLUDED = "excluded"
MISSING = "missing"

STATUS_TEXT = {
    DIFFERENTIABLE: "differentiable in both modes",
    CONSTANT: "no derivative (constant)",
    EXCLUDED: "left out on purpose",
    MISSING: "missing",
}
SHORT_STATUS = {
    DIFFERENTIABLE: "differentiable",
    CONSTANT: "constant",
    EXCLUDED: "excluded",
    MISSING: "missing",
}

# Names of an original that its mirror leaves out on purpose, with the reason.
EXCLUSIONS = {"fgrad.numpy": _NUMPY_EXCLUDED}

# Compositions of fgrad operations whose result says something about an array (its shape, its
# dtype, the sign of a function) rather than computing from its values: no derivative flows
# through them, though no NondiffPrimitive marks them. The gradient table declares each one
# `Nondiff` (tests/test_docs.py checks the two agree).
ANSWERS_ABOUT_THE_ARRAY = {
    "fgrad.numpy": {
        "shape": "the shape, a tuple of ints",
        "size": "the number of elements, an int",
        "ndim": "the number of axes, an int",
        "iscomplexobj": "a question about the dtype",
        "isrealobj": "a question about the dtype",
        "isscalar": "a question about the type",
    },
    "fgrad.scipy.special": {"gammasgn": "the sign of the gamma function, piecewise constant"},
}


@dataclass(frozen=True)
class Entry:
    name: str  # as spelled after the module: "sin", "norm.logpdf"
    status: str
    reference: str | None  # the original's qualified name ("numpy.sin"), None if it has none
    why: str = ""


@dataclass(frozen=True)
class Mirror:
    module: str  # "fgrad.numpy.linalg"
    original: str  # "numpy.linalg"
    title: str


MIRRORS = [
    Mirror("fgrad.numpy", "numpy", "fgrad.numpy"),
    Mirror("fgrad.numpy.linalg", "numpy.linalg", "fgrad.numpy.linalg"),
    Mirror("fgrad.numpy.fft", "numpy.fft", "fgrad.numpy.fft"),
    Mirror("fgrad.scipy.special", "scipy.special", "fgrad.scipy.special"),
    Mirror("fgrad.scipy.stats", "scipy.stats", "fgrad.scipy.stats"),
    Mirror("fgrad.scipy.linalg", "scipy.linalg", "fgrad.scipy.linalg"),
    Mirror("fgrad.scipy.signal", "scipy.signal", "fgrad.scipy.signal"),
    Mirror("fgrad.scipy.integrate", "scipy.integrate", "fgrad.scipy.integrate"),
]

# fgrad.numpy's family modules (fgrad.numpy.arrays, ...) are attributes of the package, not
# public names of the mirror; its submodules linalg and fft have tables of their own.
_NOT_NAMES = {"linalg", "fft"}

# The methods a scipy.stats distribution has that fgrad.scipy.stats mirrors as functions
# (jax.scipy.stats' layout); rvs, fit, moments and the frozen form are not mirrored.
STATS_FUNCTIONS = ("logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")


def available(mirror: Mirror) -> bool:
    """The SciPy mirrors need SciPy."""
    return importlib.util.find_spec(mirror.original.split(".")[0]) is not None


def status_of(obj, module: str, name: str) -> tuple[str, str]:
    """(status, why) of a public name of a mirror, read from what the name is."""
    prim = getattr(obj, "primitive", obj)
    if isinstance(prim, NondiffPrimitive):
        return CONSTANT, "declared"
    if getattr(obj, "no_derivative", None):
        return CONSTANT, obj.no_derivative
    if name in ANSWERS_ABOUT_THE_ARRAY.get(module, {}):
        return CONSTANT, ANSWERS_ABOUT_THE_ARRAY[module][name]
    if not (getattr(obj, "__module__", None) or "").startswith("fgrad"):
        return CONSTANT, "NumPy's own"
    return DIFFERENTIABLE, ""


def mirror_names(module) -> list[str]:
    """The mirror's public names: its `__all__` without submodules."""
    skipped = _NOT_NAMES if module.__name__ == "fgrad.numpy" else set()
    return [
        n
        for n in module.__all__
        if n not in skipped and not isinstance(getattr(module, n), types.ModuleType)
    ]


def original_names(module) -> list[str]:
    """The public functions of a NumPy or SciPy module (its types, constants, exceptions and
    submodules are left out: a mirror re-exports the few it needs)."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    found = []
    for n in names:
        try:
            obj = getattr(module, n)
        except AttributeError:
            continue
        if n.startswith("_") or isinstance(obj, types.ModuleType | type) or not callable(obj):
            continue
        found.append(n)
    return found


def table(mirror: Mirror) -> list[Entry]:
    """Every name of the mirror and of its original, with its status, sorted by name."""
    if mirror.module == "fgrad.scipy.stats":
        return _stats_table()
    ours = importlib.import_module(mirror.module)
    theirs = importlib.import_module(mirror.original)
    entries = {}
    for name in mirror_names(ours):
        status, why = status_of(getattr(ours, name), mirror.module, name)
        original = getattr(theirs, name, None)
        # NumPy documents its functions on pages of their own, its types and constants not
        has_page = callable(original) and not isinstance(original, type)
        reference = f"{mirror.original}.{name}" if has_page else None
        entries[name] = Entry(name, status, reference, why)
    excluded = EXCLUSIONS.get(mirror.module, {})
    for name in original_names(theirs):
        if name not in entries:
            status, why = (EXCLUDED, excluded[name]) if name in excluded else (MISSING, "")
            entries[name] = Entry(name, status, f"{mirror.original}.{name}", why)
    return [entries[n] for n in sorted(entries, key=str.lower)]


def _stats_table() -> list[Entry]:
    """fgrad.scipy.stats is a module per distribution: one entry per function of each mirrored
    distribution, and one per scipy.stats distribution that is not mirrored."""
    import scipy.stats

    ours = importlib.import_module("fgrad.scipy.stats")
    entries = []
    for dist in ours.__all__:
        module = getattr(ours, dist)
        original = getattr(scipy.stats, dist)
        for fn in module.__all__:
            status, why = status_of(getattr(module, fn), module.__name__, fn)
            reference = f"scipy.stats.{dist}" if hasattr(original, fn) else None
            entries.append(Entry(f"{dist}.{fn}", status, reference, why))
        for fn in STATS_FUNCTIONS:
            if hasattr(original, fn) and fn not in module.__all__:
                entries.append(Entry(f"{dist}.{fn}", MISSING, f"scipy.stats.{dist}"))
    for dist in scipy.stats.__all__:
        if dist not in ours.__all__ and isinstance(
            getattr(scipy.stats, dist), scipy.stats.rv_continuous | scipy.stats.rv_discrete
        ):
            entries.append(Entry(dist, MISSING, f"scipy.stats.{dist}"))
    return sorted(entries, key=lambda e: e.name.lower())


def counts(entries: list[Entry]) -> dict[str, int]:
    statuses = (DIFFERENTIABLE, CONSTANT, EXCLUDED, MISSING)
    return {s: sum(e.status == s for e in entries) for s in statuses}


# --- references to the original's documentation ----------------------------------------------
# Links go to the original's page; fgrad's docs never copy its prose.

_NUMPY_DOCS = "https://numpy.org/doc/stable/reference/generated/{}.html"
_SCIPY_DOCS = "https://docs.scipy.org/doc/scipy/reference/generated/{}.html"


def reference_url(reference: str) -> str:
    base = _NUMPY_DOCS if reference.startswith("numpy") else _SCIPY_DOCS
    return base.format(reference)


# --- the conventions that apply to a name ----------------------------------------------------


def conventions_of(name: str) -> list[tuple[str, str]]:
    """The rows of fgrad.conventions's table about `name` (a bare function name): (what, why)."""
    from fgrad import conventions

    spelled = {"power": r"[\w.]\*\*"}.get(name, rf"(?<![\w.]){re.escape(name)}(?![\w])")
    return [(what, why) for what, _, _, _, why in conventions.CASES if re.search(spelled, what)]


# --- Markdown --------------------------------------------------------------------------------


def markdown(mirror: Mirror, api_page: str | None = None) -> str:
    """The table as MyST Markdown; names the mirror has link to their entries on `api_page`."""
    entries = table(mirror)
    c = counts(entries)
    lines = [
        f"{c[DIFFERENTIABLE]} names differentiable in both modes, {c[CONSTANT]} without a "
        f"derivative (constant), "
        + (f"{c[EXCLUDED]} left out on purpose, " if c[EXCLUDED] else "")
        + f"{c[MISSING]} of `{mirror.original}` missing. "
        "*differentiable*: forward and reverse mode, to any order; *constant*: no derivative, "
        "because it is declared so (comparisons, `argmax`, `floor`, ...), or it is NumPy's own "
        "object re-exported (`zeros`, `pi`), or for the reason given; "
        + ("*excluded*: left out on purpose, for the reason given; " if c[EXCLUDED] else "")
        + "*missing*: the mirror raises an AttributeError for it.",
        "",
        "| name | status | original |",
        "|---|---|---|",
    ]
    for e in entries:
        qualified = f"{mirror.module}.{e.name}"
        if e.status not in (MISSING, EXCLUDED) and api_page is not None:
            shown = f"{{py:obj}}`{e.name} <{qualified}>`"
        else:
            shown = f"`{e.name}`"
        status = SHORT_STATUS[e.status] + (f" ({e.why})" if e.why else "")
        original = f"[`{e.reference}`]({reference_url(e.reference)})" if e.reference else ""
        lines.append(f"| {shown} | {status} | {original} |")
    return "\n".join(lines) + "\n"


def signature_text(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


if __name__ == "__main__":
    for mirror in MIRRORS:
        if available(mirror):
            sys.stdout.write(f"\n## {mirror.title}\n\n{markdown(mirror)}")
