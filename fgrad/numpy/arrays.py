"""Rearranging, splitting, joining and indexing arrays: `flip`, `roll`, `tile`, `pad`, `split`,
`take`, `diag`, `tril`, `sort`, `meshgrid`, ... .

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

__all__ = []
