"""`fgrad.scipy.special`: SciPy's special functions with forward and reverse rules.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy`, and `scipy.special` for values.
"""

__all__ = []
