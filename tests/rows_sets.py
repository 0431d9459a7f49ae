"""Gradient-table rows for the set routines (fgrad/numpy/sets.py): `union1d`, `intersect1d`,
`setdiff1d`, `setxor1d` and the `unique_*` functions return elements of their inputs, gathered
(as `unique`'s values are), so their values are checked to order 2; `isin` is declared without
a derivative. See tests/gradtable.py.

The inputs are distinct values ("apart_a", "apart_b": interleaved grids), so a finite-difference
step never makes two of them equal; where a row needs common elements, the second argument is
taken from the first (`x[::2]`), so the step moves both alike."""

import numpy as np
from gradtable import Nondiff, Row

import fgrad.numpy as fnp

_UNIQUE = (
    "the number of unique values is known only once they are computed (Dask's unique has an "
    "unknown length)"
)
DASK_CANNOT = {
    name: _UNIQUE
    for name in (
        "union1d",
        "intersect1d",
        "setdiff1d",
        "setxor1d",
        "unique_values",
        "unique_counts",
        "unique_inverse",
        "unique_all",
    )
}

ROWS = [
    Row("union1d", fnp.union1d, ((3,), (2,)), ("apart_a", "apart_b")),
    Row("union1d", fnp.union1d, ((3, 2), ()), ("apart_a", "apart_b")),
    Row("union1d", lambda x: fnp.union1d(x, x[1:]), ((4,),), ("apart_a",), variant="common"),
    Row("intersect1d", lambda x: fnp.intersect1d(x, x[::2]), ((5,),), ("apart_a",)),
    Row(
        "intersect1d",
        lambda x: fnp.intersect1d(x, x[::2], assume_unique=True),
        ((5,),),
        ("apart_a",),
        variant="assume_unique",
    ),
    Row(
        "intersect1d",
        lambda x: fnp.intersect1d(x[::-1], x[1:], return_indices=True)[0],
        ((4,),),
        ("apart_a",),
        variant="return_indices",
    ),
    Row("setdiff1d", lambda x: fnp.setdiff1d(x, x[::2]), ((5,),), ("apart_a",)),
    Row("setdiff1d", fnp.setdiff1d, ((3, 2), (2,)), ("apart_a", "apart_b"), variant="disjoint"),
    Row(
        "setdiff1d",
        lambda x: fnp.setdiff1d(x, x[::2], assume_unique=True),
        ((5,),),
        ("apart_a",),
        variant="assume_unique",
    ),
    Row("setxor1d", fnp.setxor1d, ((3,), (2,)), ("apart_a", "apart_b")),
    Row("setxor1d", lambda x: fnp.setxor1d(x, x[:2]), ((4,),), ("apart_a",), variant="common"),
    Row(
        "setxor1d",
        lambda x: fnp.setxor1d(x[1:], x[:2], assume_unique=True),
        ((4,),),
        ("apart_a",),
        variant="assume_unique",
    ),
    Row("unique_values", fnp.unique_values, ((3, 2),), ("apart_a",)),
    Row("unique_counts", lambda x: fnp.unique_counts(x).values, ((3, 2),), ("apart_a",)),
    Row(
        "unique_counts",
        lambda x: fnp.unique_counts(fnp.concatenate([x, x])).values,
        ((3,),),
        ("apart_a",),
        variant="repeated",
    ),
    Row("unique_inverse", lambda x: fnp.unique_inverse(x).values, ((3, 2),), ("apart_a",)),
    Row("unique_all", lambda x: fnp.unique_all(x).values, ((3, 2),), ("apart_a",)),
    Row(
        "unique_all",
        lambda x: fnp.unique_all(fnp.concatenate([x, x[::-1]])).values,
        ((3,),),
        ("apart_a",),
        variant="repeated",
    ),
]

NONDIFF = [
    Nondiff("isin", lambda x: fnp.isin(x, x[:2])),
    Nondiff("isin", lambda x: fnp.isin(x, np.array([0.4, 7.0]), invert=True)),
]
