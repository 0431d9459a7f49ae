"""Data types and questions about them (NumPy's "Data type routines"): the scalar types
(`int8`, `complex128`, the abstract `floating`, `integer`, ...), `dtype`, `finfo`, `iinfo`,
`result_type`, `can_cast`, `promote_types`, `issubdtype`, ..., and two questions about shapes
and types, `broadcast_shapes` and `iterable`.

None of these has a derivative: they answer questions about types, not values. The types and
the functions that take only types or shapes are NumPy's own objects, re-exported. The three
that NumPy also lets take arrays (`result_type`, `can_cast`, `common_type`) take a traced value
by its dtype, without reading its values, so they cost nothing inside a transform and make no
guard under `jit`; `min_scalar_type` asks about the value of a scalar, so it reads a traced one
(a guard under `jit`; under `vmap`, rows that differ run apart).

Imports: `fgrad.core`, `fgrad.numpy.shaping`.
"""

import builtins as _builtins
from typing import Any, Literal

import numpy as _np

# The scalar types, `ndarray`, NumPy's functions of types, shapes and type codes
# (`broadcast_shapes` and `iterable` ask about shapes and Python types) and NumPy's constants
# (`pi`, `e`, `inf`, `nan`, `newaxis`): NumPy's own objects.
from numpy import (
    False_ as False_,
    ScalarType as ScalarType,
    True_ as True_,
    bool as bool,
    bool_ as bool_,
    broadcast_shapes as broadcast_shapes,
    byte as byte,
    bytes_ as bytes_,
    cdouble as cdouble,
    character as character,
    clongdouble as clongdouble,
    complex64 as complex64,
    complex128 as complex128,
    complexfloating as complexfloating,
    csingle as csingle,
    double as double,
    dtype as dtype,
    e as e,
    finfo as finfo,
    flexible as flexible,
    float16 as float16,
    float32 as float32,
    float64 as float64,
    floating as floating,
    generic as generic,
    half as half,
    iinfo as iinfo,
    inexact as inexact,
    inf as inf,
    int8 as int8,
    int16 as int16,
    int32 as int32,
    int64 as int64,
    int_ as int_,
    intc as intc,
    integer as integer,
    intp as intp,
    isdtype as isdtype,
    issubdtype as issubdtype,
    iterable as iterable,
    long as long,
    longdouble as longdouble,
    longlong as longlong,
    mintypecode as mintypecode,
    nan as nan,
    ndarray as ndarray,
    newaxis as newaxis,
    number as number,
    object_ as object_,
    pi as pi,
    promote_types as promote_types,
    sctypeDict as sctypeDict,
    short as short,
    signedinteger as signedinteger,
    single as single,
    str_ as str_,
    typecodes as typecodes,
    typename as typename,
    ubyte as ubyte,
    ufunc as ufunc,
    uint as uint,
    uint8 as uint8,
    uint16 as uint16,
    uint32 as uint32,
    uint64 as uint64,
    uintc as uintc,
    uintp as uintp,
    ulong as ulong,
    ulonglong as ulonglong,
    unsignedinteger as unsignedinteger,
    ushort as ushort,
    void as void,
)

from ..core import dtype_of, primal, shape_of
from ._coverage import no_derivative
from ._mirror import exported
from .shaping import held_number, is_traced

# NumPy's `casting` rules, as its stubs spell them
Casting = Literal["no", "equiv", "safe", "same_kind", "same_value", "unsafe"]

# Extended precision has a name of its own only where the platform has it (float128 on x86-64
# Linux, float96 on 32-bit x86): mirrored where NumPy has it.
_EXTENDED = [n for n in ("float96", "float128", "complex192", "complex256") if hasattr(_np, n)]
globals().update({n: getattr(_np, n) for n in _EXTENDED})


def _by_dtype(x: Any) -> Any:
    """A traced value stands for its dtype; anything else is NumPy's to judge. (Since NumPy 2
    an array's values never change a promotion, so its dtype says all an array would.) A
    Python number that `jit` holds as given stays that number: weakly typed, as in eager code
    (its dtype would be float64 or int64)."""
    if not is_traced(x):
        return x
    number = held_number(x)
    return number if number is not None else dtype_of(x)


@no_derivative("a dtype")
def result_type(*arrays_and_dtypes: Any) -> _np.dtype:
    """NumPy's `result_type`; a traced value counts by its dtype, its values unread.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(x) * (fnp.result_type(x, 1.0) == np.float32))(
    ...     np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """
    return _np.result_type(*[_by_dtype(a) for a in arrays_and_dtypes])


@no_derivative("a question about dtypes")
def can_cast(from_: Any, to: Any, casting: Casting = "safe") -> _builtins.bool:
    """NumPy's `can_cast`; a traced `from_` counts by its dtype, its values unread.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.can_cast(np.ones(2, np.float32), np.float64), fnp.can_cast(np.float64, np.int8)
    (True, False)
    """
    return _np.can_cast(_by_dtype(from_), to, casting)


@no_derivative("a scalar type")
def common_type(*arrays: Any) -> type:
    """NumPy's `common_type`: the inexact scalar type of the arrays (integers count as
    float64); a traced array counts by its dtype, its values unread.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.common_type(np.ones(2, np.float32), np.arange(3))
    <class 'numpy.float64'>
    """
    return _np.common_type(*[_as_empty(a) for a in arrays])


def _as_empty(a: Any) -> Any:
    """An empty array of a traced value's dtype, which answers NumPy's `a.dtype` as the value
    would (a Python number that `jit` holds stays the number, which NumPy refuses as it does
    eagerly)."""
    value = _by_dtype(a)
    return _np.empty(0, value) if isinstance(value, _np.dtype) else value


@no_derivative("a dtype")
def min_scalar_type(a: Any, /) -> _np.dtype:
    """NumPy's `min_scalar_type`. For an array it is the array's dtype; for a scalar it depends
    on the value, so a traced scalar is read (a guard under `jit`; under `vmap`, rows that
    differ run apart).

    >>> import fgrad.numpy as fnp
    >>> fnp.min_scalar_type(10), fnp.min_scalar_type(-260)
    (dtype('uint8'), dtype('int16'))
    """
    if is_traced(a) and shape_of(a) != ():
        return _np.min_scalar_type(_np.empty(0, dtype_of(a)))
    return _np.min_scalar_type(primal(a) if is_traced(a) else a)


__all__ = exported(globals())
