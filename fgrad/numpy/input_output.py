"""Input and output (NumPy's "Input and output"), the names `jax.numpy` has: reading arrays
from files, buffers and iterables (`load`, `fromfile`, `frombuffer`, `fromstring`,
`fromiter`, `from_dlpack`), writing them (`save`, `savez`), their text (`array_repr`,
`array_str`) and NumPy's print options (`printoptions`, `get_printoptions`,
`set_printoptions`), and `frompyfunc`.

None has a derivative. What reads from outside (a file, a buffer, an iterable) and the print
options are NumPy's own objects, re-exported: their results are NumPy arrays, constants to
every transform. What takes an array:

- `save` and `savez` write plain arrays as NumPy does, and refuse a traced one, naming it: a
  file written inside `jit` would be written once, at the recording, and a derivative's
  value is known only when the transformed call returns. Save that call's result instead.
- `frombuffer` and `from_dlpack` read an array's memory, which a traced value does not
  have: they refuse one, naming it. So does NumPy's own `np.from_dlpack`; NumPy's own
  `np.frombuffer` of a traced value raises Python's "a bytes-like object is required, not
  'Box'" (NumPy's C code asks for a buffer, which fgrad cannot intercept).
- `array_str` and `array_repr` of a traced value give NumPy's text of its value, as `str(x)`
  does (`fgrad.numpy`'s arrays read the value for its text: under `jit` a guard).

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy._coverage`, `fgrad.numpy._mirror`.
"""

from __future__ import annotations

from typing import Any

import numpy as _np

# What reads arrays from outside, and NumPy's print options: NumPy's own objects.
from numpy import (
    fromfile as fromfile,
    fromiter as fromiter,
    frompyfunc as frompyfunc,
    fromstring as fromstring,
    get_printoptions as get_printoptions,
    load as load,
    printoptions as printoptions,
    set_printoptions as set_printoptions,
)

from .. import core as _core
from ._coverage import no_derivative
from ._mirror import exported
from .shaping import describe


def _refuse_traced_memory(name: str, what: str, value: Any) -> None:
    """Refuse a traced `value` given to `name` (which reads memory) as its argument `what`."""
    if type(value) is _core.Box:
        raise TypeError(
            f"{name}: {what} is a traced value ({describe(value)}), which has no memory to "
            f"read; call numpy.{name} on a plain array outside the transform, or use "
            "fgrad.numpy.astype for another dtype of the same values"
        )


@no_derivative("reads memory")
def frombuffer(
    buffer: Any, dtype: Any = None, count: int = -1, offset: int = 0, *, like: Any = None
) -> Any:
    """NumPy's `frombuffer`; a traced buffer is refused (see the module docstring).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.frombuffer(np.array([1.5, 2.5]).tobytes())
    array([1.5, 2.5])
    """
    _refuse_traced_memory("frombuffer", "buffer", buffer)
    return _np.frombuffer(buffer, dtype, count, offset, like=like)


@no_derivative("reads memory")
def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """NumPy's `from_dlpack`; a traced array is refused (see the module docstring).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.from_dlpack(np.array([1.5, 2.5]))
    array([1.5, 2.5])
    """
    _refuse_traced_memory("from_dlpack", "x", x)
    return _np.from_dlpack(x, device=device, copy=copy)


def _refuse_traced(name: str, what: str, value: Any) -> None:
    """Refuse a traced `value` given to `name` as its argument `what`."""
    if type(value) is _core.Box:
        raise TypeError(
            f"{name}: {what} is a traced value ({describe(value)}): a file is written "
            "outside transforms (inside jit it would be written once, at the recording, "
            "and a derivative's value is known only when the transformed call returns). "
            f"Save the result of the call instead, e.g. numpy.{name}(file, fgrad.grad(f)(x))"
        )


@no_derivative("writes a file")
def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """NumPy's `save` of a plain array; a traced one is refused (see the module docstring).

    >>> import io, numpy as np, fgrad, fgrad.numpy as fnp
    >>> file = io.BytesIO()
    >>> fnp.save(file, fgrad.grad(lambda x: fnp.sum(x ** 2))(np.arange(3.0)))
    >>> _ = file.seek(0)
    >>> fnp.load(file)
    array([0., 2., 4.])
    """
    _refuse_traced("save", "arr", arr)
    _np.save(file, arr, allow_pickle=allow_pickle)


@no_derivative("writes a file")
def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """NumPy's `savez` of plain arrays; a traced one is refused (see the module docstring).

    >>> import io, numpy as np, fgrad.numpy as fnp
    >>> file = io.BytesIO()
    >>> fnp.savez(file, w=np.ones(2), b=np.zeros(1))
    >>> _ = file.seek(0)
    >>> sorted(fnp.load(file).files)
    ['b', 'w']
    """
    for k, value in enumerate(args):
        _refuse_traced("savez", f"the array at position {k}", value)
    for key, value in kwds.items():
        _refuse_traced("savez", f"the array {key!r}", value)
    _np.savez(file, *args, allow_pickle=allow_pickle, **kwds)


@no_derivative("text")
def array_str(
    a: Any,
    max_line_width: int | None = None,
    precision: int | None = None,
    suppress_small: bool | None = None,
) -> str:
    """NumPy's `array_str`; of a traced value, the text of its value, as `str(a)`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> y = fgrad.jit(lambda x: (print(fnp.array_str(x, precision=2)), 2 * x)[1])(np.array([1/3]))
    [0.33]
    """
    if type(a) is _core.Box:
        a = _core.primal(a)  # a read, as str(a)'s (under jit a guard)
    return _np.array_str(a, max_line_width, precision, suppress_small)


@no_derivative("text")
def array_repr(
    arr: Any,
    max_line_width: int | None = None,
    precision: int | None = None,
    suppress_small: bool | None = None,
) -> str:
    """NumPy's `array_repr`; of a traced value, NumPy's text of its value.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.array_repr(np.array([1/3, 2.0]), precision=3)
    'array([0.333, 2.   ])'
    """
    if type(arr) is _core.Box:
        arr = _core.primal(arr)  # a read, as str(arr)'s (under jit a guard)
    return _np.array_repr(arr, max_line_width, precision, suppress_small)


__all__ = exported(globals())
