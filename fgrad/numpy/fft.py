"""`fgrad.numpy.fft`: NumPy's discrete Fourier transforms with forward and reverse rules.

Imports: `fgrad.core`, `fgrad.primitive`, and the other modules of `fgrad.numpy`.
"""

__all__ = []
