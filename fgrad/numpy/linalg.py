"""`fgrad.numpy.linalg`: NumPy's linear algebra with forward and reverse rules.

Imports: `fgrad.core`, `fgrad.primitive`, and the other modules of `fgrad.numpy`.
"""

__all__ = []
