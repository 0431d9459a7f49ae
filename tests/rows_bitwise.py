"""Declarations for the bitwise and integer functions (fgrad/numpy/bitwise.py): none has a
derivative. Each applies its function to integers made from the table's float input (or to a
mask of it), so the same entry runs on float32 and complex inputs. See tests/gradtable.py."""

import numpy as np
from gradtable import Nondiff

import fgrad.numpy as fnp


def _ints(x):
    """Integers from the input: [-4, 1, 7] for the table's [-1.3, 0.4, 2.6]."""
    return fnp.astype(fnp.floor(fnp.real(x) * 3), np.int64)


ROWS = []  # nothing here has a derivative

NONDIFF = [
    Nondiff("bitwise_and", lambda x: fnp.bitwise_and(_ints(x), 6)),
    Nondiff("bitwise_or", lambda x: fnp.bitwise_or(_ints(x), 6)),
    Nondiff("bitwise_xor", lambda x: fnp.bitwise_xor(_ints(x), _ints(-x))),
    Nondiff("bitwise_invert", lambda x: fnp.bitwise_invert(_ints(x))),
    Nondiff("left_shift", lambda x: fnp.left_shift(_ints(x), 2)),
    Nondiff("right_shift", lambda x: fnp.right_shift(_ints(x), 1)),
    Nondiff("bitwise_left_shift", lambda x: fnp.bitwise_left_shift(_ints(x), 2)),
    Nondiff("bitwise_right_shift", lambda x: fnp.bitwise_right_shift(_ints(x), 1)),
    Nondiff("bitwise_count", lambda x: fnp.bitwise_count(_ints(x))),
    Nondiff("gcd", lambda x: fnp.gcd(_ints(x), 4)),
    Nondiff("lcm", lambda x: fnp.lcm(_ints(x), 4)),
    Nondiff("packbits", lambda x: fnp.packbits(fnp.real(x) > 0)),
    Nondiff("unpackbits", lambda x: fnp.unpackbits(fnp.packbits(fnp.real(x) > 0), count=4)),
]
