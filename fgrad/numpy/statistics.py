"""Statistics over axes: `var`, `std`, `median`, `percentile`, `quantile`, `average`, `ptp` and
the nan-ignoring reductions.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`,
`fgrad.numpy.reductions`.
"""

__all__ = []
