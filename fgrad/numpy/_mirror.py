"""The mirror's table: each name `fgrad.numpy` mirrors is declared once, where it is made,
with its kind, and a family module's exports (`__all__`) are read off its declarations.

A name is declared by what makes it: the builders declare what they build (`as_ufunc` a
ufunc, `nondiff_function` and `no_derivative` a constant-valued function, `variant` one of
its template's kind, the products' and reductions' builders theirs), and a function written
out is declared by `@mirror(kind)` above its `def`. A name bound to NumPy's own object of
that name (`pi`, `float32`, `zeros`) needs no declaration: it is NumPy's, re-exported. The
kind says what made the signature, the keyword refusals and the docstring:

- "ufunc": one of NumPy's elementwise ufuncs, with its signature (`fgrad.numpy.
  _ufunc_signature`: the keywords taken or refused by name), differentiable, or without a
  derivative (a comparison, `floor`: NumPy's own ufunc on plain values);
- "gufunc": a product over core dimensions, broadcast over the others (`matmul`, `vecdot`);
- "reduction": `(a, axis, dtype, out, keepdims, ...)` with `out` refused (`sum`, `var`);
- "shape": moves, selects or combines entries without arithmetic (`reshape`, `take`);
- "creation": makes a new array from parameters (`linspace`, the windows);
- "function": any other computation, written in fgrad operations (`interp`, `linalg.solve`);
- "constant": any other function without a derivative: NumPy's own on plain values (its
  signature is NumPy's, every keyword keeps NumPy's meaning), or a composition that answers
  a question about an array (`shape`, `isin`);
- "numpy": NumPy's own object (a dtype, a constant, a function of types).

`exported(globals())`, the last statement of a family module, is its `__all__`: the public
names the module declared (aliases of one object included), NumPy's own objects bound
under their NumPy names, and none that the module imported (an object is exported by the
first module that reaches this line with it, the module that made it: imports go one way).
A mirror of a submodule (`linalg`, `fft`) passes the NumPy module it mirrors, so that its
names are counted apart from the main namespace's.

`missing_names(mirror, original)` is the `__getattr__` of every mirror module (NumPy's and
SciPy's): a name the original has and the mirror lacks raises an AttributeError that says so
and what to do instead, a misspelt name Python's own.

Imports: nothing of fgrad.
"""

from __future__ import annotations

import pkgutil
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

import numpy as _np

KINDS = ("ufunc", "gufunc", "reduction", "shape", "creation", "function", "constant", "numpy")

_T = TypeVar("_T")

# id of a declared object -> (the object, its kind). By id: a `Primitive` takes no attribute;
# the object is kept, so that its id is never reused.
_KINDS: dict[int, tuple[Any, str]] = {}
# (a name, id of the object it names) -> the family module that exports it
_OWNERS: dict[tuple[str, int], str] = {}


def mirror(kind: str) -> Callable[[_T], _T]:
    """Declare the object it is applied to (a decorator above a `def`, or a call on what a
    builder made) a mirror of the kind `kind` (one of `KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"a mirror's kind is one of {KINDS}, not {kind!r}")

    def declare(obj: _T) -> _T:
        # the last declaration holds: a comparison made by `nondiff_function` (a constant)
        # and then given the ufunc signature by `as_ufunc` is a ufunc
        _KINDS[id(obj)] = (obj, kind)
        return obj

    return declare


def kind_of(obj: Any) -> str | None:
    """The kind `obj` was declared with, None for an undeclared object."""
    found = _KINDS.get(id(obj))
    return found[1] if found is not None and found[0] is obj else None


def exported(namespace: dict[str, Any], of: types.ModuleType = _np) -> list[str]:
    """The public names of a family module (`namespace`, its globals) that mirror a name of
    NumPy's module `of`: see the module's docstring."""
    module = namespace["__name__"]
    names = []
    for name, value in namespace.items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if kind_of(value) is None and getattr(of, name, None) is not value:
            continue  # a helper, or an object of another library
        owner = _OWNERS.setdefault((name, id(value)), module)
        if owner == module:
            names.append(name)
    return sorted(names)


_ABSENT = object()


def missing_names(
    mirror: str,
    original: str,
    *,
    page: str | None = None,
    excluded: Mapping[str, str] | None = None,
) -> Callable[[str], Any]:
    """The module `__getattr__` of the mirror module named `mirror`, which mirrors the object
    named `original` (`"scipy.linalg"`, or a SciPy distribution: `"scipy.stats.norm"`),
    imported at the first name looked up and not found.

    A public name of the original the mirror lacks raises an AttributeError that says it is
    not mirrored yet and what to do: apply the original to plain values where no derivative
    flows, else build it or register a primitive; `page`, the API page whose coverage table
    lists what the mirror has, is named in it. A name in `excluded` (name -> reason) is left
    out on purpose, and says why. A private or dunder name (`__path__`, `__wrapped__`: import
    machinery, doctest, pickle) and a name the original does not have either raise Python's
    own message, so `hasattr` stays False and a typo reads as a typo.

    It never returns; its type says Any because a type checker types a name a module does not
    bind by the module's `__getattr__`, and the names `fgrad.numpy` binds at import must read
    as Any. A module whose names are all written out binds it under `if not TYPE_CHECKING`,
    so that a type checker still reports a misspelt name."""
    found: list[Any] = []  # the original, once imported

    def __getattr__(name: str) -> NoReturn:
        if not name.startswith("_"):
            if excluded is not None and name in excluded:
                raise AttributeError(
                    f"{mirror} leaves {original}.{name} out on purpose ({excluded[name]}); use "
                    f"{original}.{name} itself, on plain values (fgrad.stop_gradient(x) of a "
                    "traced x)"
                )
            if not found:
                found.append(pkgutil.resolve_name(original))
            theirs = getattr(found[0], name, _ABSENT)
            if isinstance(theirs, types.ModuleType):  # (scipy.signal.windows)
                raise AttributeError(
                    f"{mirror} has no submodule {name!r} yet, so it cannot differentiate its "
                    f"functions: apply those of {original}.{name} to plain values "
                    "(fgrad.stop_gradient(x) of a traced x)"
                )
            if isinstance(theirs, type) or (theirs is not _ABSENT and not callable(theirs)):
                # a class (LinAlgError) or a constant: nothing to differentiate; a sparse
                # matrix class has its sparse array's mirror (csr_matrix: csr_array)
                twin = name.replace("_matrix", "_array")
                if twin != name and hasattr(sys.modules.get(mirror), twin):
                    raise AttributeError(
                        f"{mirror} has no {name!r}: use {mirror}.{twin}, its sparse array "
                        "form, which takes traced values (SciPy recommends the arrays too)"
                    )
                raise AttributeError(
                    f"{mirror} has no {name!r}, which is not a function of array values: use "
                    f"{original}.{name} itself"
                )
            if theirs is not _ABSENT:
                listed = f" The API page of {page} lists what it has." if page else ""
                raise AttributeError(
                    f"{mirror} has no {name!r} yet, so it cannot differentiate it. If no "
                    f"derivative flows through it, apply {original}.{name} to "
                    "fgrad.stop_gradient(x); otherwise build it from fgrad.numpy operations, or "
                    f"register it with fgrad.primitive.{listed}"
                )
        # (name and obj: Python's traceback adds "Did you mean ...?" to a typo)
        raise AttributeError(
            f"module {mirror!r} has no attribute {name!r}", name=name, obj=sys.modules.get(mirror)
        )

    return __getattr__
