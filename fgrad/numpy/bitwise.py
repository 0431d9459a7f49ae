"""Bitwise and integer functions (NumPy's "Bit-wise operations" and the integer ufuncs `gcd`,
`lcm`): `bitwise_and`, `bitwise_or`, `bitwise_xor`, the shifts, `bitwise_count`,
`packbits`/`unpackbits`, and the operators `&`, `|`, `^`, `<<`, `>>` on traced values.

They take integers and booleans, so none has a derivative: each is NumPy's own function
applied to plain values (`nondiff_function`), with NumPy's signature and every keyword, and
its result is a constant at every level. Under `vmap` the ufuncs broadcast their rows as any
ufunc does; `packbits` and `unpackbits` work along an axis, which moves one along.
(`bitwise_not`/`invert` live with the comparisons in `fgrad.numpy.elementwise`;
`bitwise_invert`, NumPy 2's name for them, is the same function.)

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

from typing import Any

import numpy as _np

from ..core import Box
from .elementwise import invert, register_elementwise
from .shaping import axis_batch_rule, nondiff_function

__all__ = [
    "bitwise_and",
    "bitwise_count",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "gcd",
    "lcm",
    "left_shift",
    "packbits",
    "right_shift",
    "unpackbits",
]

bitwise_and = nondiff_function(_np.bitwise_and)
bitwise_or = nondiff_function(_np.bitwise_or)
bitwise_xor = nondiff_function(_np.bitwise_xor)
left_shift = nondiff_function(_np.left_shift)
right_shift = nondiff_function(_np.right_shift)
bitwise_count = nondiff_function(_np.bitwise_count)
gcd = nondiff_function(_np.gcd)
lcm = nondiff_function(_np.lcm)
# NumPy 2's array-API names are the same ufuncs as the older ones
bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift

packbits = nondiff_function(_np.packbits)
unpackbits = nondiff_function(_np.unpackbits)

register_elementwise(globals())  # the ufuncs: rows broadcast as in every ufunc
for _fn in (packbits, unpackbits):
    axis_batch_rule(_fn)


# --- the operators on traced values ---------------------------------------------------------------
# `fgrad.numpy._box` gives Box the arithmetic operators; the bitwise ones are the functions
# above, so they are declared beside them. (`~x` is `invert`, installed with the others.)


def _operator(fn: Any) -> Any:
    def method(self: Box, other: Any) -> Any:
        return fn(self, other)

    return method


def _reflected(fn: Any) -> Any:
    def method(self: Box, other: Any) -> Any:
        return fn(other, self)

    return method


for _name, _fn in (
    ("and", bitwise_and),
    ("or", bitwise_or),
    ("xor", bitwise_xor),
    ("lshift", left_shift),
    ("rshift", right_shift),
):
    setattr(Box, f"__{_name}__", _operator(_fn))
    setattr(Box, f"__r{_name}__", _reflected(_fn))
