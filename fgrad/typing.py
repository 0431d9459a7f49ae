"""`fgrad.typing`: the names fgrad's signatures use for values, for their readers and for type
checkers (`from fgrad.typing import Array, ArrayLike`).

- `ArrayLike`: anything a function of fgrad accepts as an array: a NumPy array or scalar, a
  Python number or nested list, a traced value (`fgrad.core.Box`) or another library's array
  (Dask's). It is `fgrad.tree_util`'s leaf type.
- `Array`: what fgrad's functions return: a NumPy array or scalar when called on plain
  values, a traced value inside a transform, another library's array when given one.
- `DTypeLike`: NumPy's, for `dtype=` parameters.

To a type checker `ArrayLike` and `Array` are `Any`: their members share no static type that
NumPy's stubs or the rules' bodies could use (a `Box` is not an `ndarray`), so the names say
what a value is for, and mypy checks everything else (tuples, axes, flags, dtypes). fgrad's
own modules import them under `if TYPE_CHECKING:`, so `import fgrad` never loads this module.

>>> from fgrad.typing import Array, ArrayLike
>>> def double(x: ArrayLike) -> Array:
...     return 2.0 * x

Imports: `fgrad.tree_util` (for type checkers only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpy.typing import DTypeLike

if TYPE_CHECKING:
    from typing import TypeAlias

    from .tree_util import ArrayLike as ArrayLike
else:
    ArrayLike = Any  # tree_util's, which exists for type checkers only

Array: TypeAlias = Any

__all__ = ["Array", "ArrayLike", "DTypeLike"]
