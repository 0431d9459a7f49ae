"""Signal and polynomial functions: `convolve`, `correlate`, `diff`, `interp`, `polyval`,
`trapezoid`, `cov`, `corrcoef`, `vander`.

Imports: `fgrad.core`, `fgrad.primitive`, and the other modules of `fgrad.numpy` except
`linalg` and `fft`.
"""

__all__ = []
