"""`fgrad.typing`: the names fgrad's signatures use for values, for their readers and for type
checkers (`from fgrad.typing import ArrayLike, Array`, under `if TYPE_CHECKING:`).

- `ArrayLike`: anything a function of fgrad accepts as an array: a NumPy array or scalar, a
  Python number or nested list, a traced value (`fgrad.core.Box`) or another library's array
  (Dask's). It is `fgrad.tree_util`'s leaf type.
- `Array`: what fgrad's functions return: a NumPy array or scalar when called on plain
  values, a traced value inside a transform, another library's array when given one.
- `DTypeLike`: NumPy's, for `dtype=` parameters.

To a type checker `ArrayLike` and `Array` are `Any`: their members share no static type that
NumPy's stubs or the rules' bodies could use (a `Box` is not an `ndarray`), so the names say
what a value is for, and mypy checks everything else (tuples, axes, flags, dtypes). They exist
only for type checkers, as `fgrad.tree_util`'s do, so they cost `import fgrad` nothing.

Imports: `fgrad.tree_util` (for type checkers only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from numpy.typing import DTypeLike as DTypeLike

    from .tree_util import ArrayLike as ArrayLike

    Array: TypeAlias = Any
