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

Imports: nothing of fgrad.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar

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
