"""The rest of NumPy's floating ufuncs: trigonometric and hyperbolic functions and their
inverses, exponentials and logarithms in other bases, roots, `hypot`, `arctan2`, `logaddexp`,
`sinc`, `copysign`, `fmod`, `remainder`, `fmax`/`fmin`, `nan_to_num`.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

__all__ = []
