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
from ._mirror import exported
from .elementwise import bitwise_operators, invert, register_elementwise
from .shaping import axis_batch_rule, nondiff_function

# Each with a call that shows it (run as a doctest through `__test__`: the functions are made
# by `nondiff_function` in another module, so doctest would not find them here).
_EXAMPLES = {
    "bitwise_and": ("bitwise_and(x, 6)", "array([4, 2])"),
    "bitwise_or": ("bitwise_or(x, 1)", "array([13, 11])"),
    "bitwise_xor": ("bitwise_xor(x, 6)", "array([10, 12])"),
    "left_shift": ("left_shift(x, 1)", "array([24, 20])"),
    "right_shift": ("right_shift(x, 2)", "array([3, 2])"),
    "bitwise_count": ("bitwise_count(x)", "array([2, 2], dtype=uint8)"),
    "gcd": ("gcd(x, 8)", "array([4, 2])"),
    "lcm": ("lcm(x, 8)", "array([24, 40])"),
    "packbits": ("packbits(x > 11)", "array([128], dtype=uint8)"),
    "unpackbits": ("unpackbits(np.array([160], np.uint8))[:4]", "array([1, 0, 1, 0], dtype=uint8)"),
}


def _declared(theirs: Any) -> Any:
    fn = nondiff_function(theirs)
    call, shown = _EXAMPLES[fn.__name__]
    fn.__doc__ += (
        "\n\n    >>> import numpy as np, fgrad.numpy as fnp\n    >>> x = np.array([12, 10])\n"
        f"    >>> fnp.{call}\n    {shown}\n"
    )
    return fn


bitwise_and = _declared(_np.bitwise_and)
bitwise_or = _declared(_np.bitwise_or)
bitwise_xor = _declared(_np.bitwise_xor)
left_shift = _declared(_np.left_shift)
right_shift = _declared(_np.right_shift)
bitwise_count = _declared(_np.bitwise_count)
gcd = _declared(_np.gcd)
lcm = _declared(_np.lcm)
# NumPy 2's array-API names are the same ufuncs as the older ones
bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift

packbits = _declared(_np.packbits)
unpackbits = _declared(_np.unpackbits)
__test__ = {name: globals()[name].__doc__ for name in _EXAMPLES}

for _fn in (packbits, unpackbits):  # along an axis: first, so that the next line skips them
    axis_batch_rule(_fn)
register_elementwise(globals())  # the ufuncs: rows broadcast as in every ufunc


# --- the operators on traced values ---------------------------------------------------------------
# `fgrad.numpy._box` gives Box the arithmetic operators; the bitwise ones are installed here.
# Each is the operator itself on plain values (`fgrad.numpy.elementwise.bitwise_operators`; on
# arrays and NumPy scalars, the ufunc above),
# so that `n & 3` or `n << 70` of a Python int a `jit` record holds as it was given computes as
# Python does, as it does eagerly (the ufunc would make it a bounded np.int64). (`~x` is
# `fgrad.numpy.elementwise.invert_operator`, installed with the others.)


def _method(prim: Any) -> Any:
    def method(self: Box, other: Any) -> Any:
        return prim(self, other)

    return method


def _reflected(prim: Any) -> Any:
    def method(self: Box, other: Any) -> Any:
        return prim(other, self)

    return method


for _name, _prim in bitwise_operators.items():
    setattr(Box, f"__{_name}__", _method(_prim))
    setattr(Box, f"__r{_name}__", _reflected(_prim))

__all__ = exported(globals())
