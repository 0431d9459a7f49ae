"""Gradient-table rows for the signal family: einsum and the products built on it (tensordot,
inner, outer, vdot, kron, cross), convolve/correlate in every mode and length order, diff and
ediff1d, interp, polyval, vander, trapezoid, cov and corrcoef. See tests/gradtable.py."""

import numpy as np
from gradtable import Row

import fgrad.numpy as fnp

ROWS = []

# Names whose rows cannot run on Dask arrays (tests/test_dask_table.py), and why.
DASK_CANNOT = {
    "interp": "each x's segment comes from its value (searchsorted), so the gather index "
    "would be a lazy Dask array; fgrad indexes with constant indices only",
}

# --- einsum: explicit and implicit outputs, '...', traces and diagonals, many operands ------------

EINSUMS = [
    ("ij,jk->ik", ((2, 3), (3, 4))),
    ("ij,jk", ((2, 3), (3, 4))),  # implicit output
    ("ba", ((3, 2),)),  # implicit transpose
    ("ii->", ((3, 3),)),  # trace
    ("ii", ((3, 3),)),  # implicit trace
    ("ii->i", ((3, 3),)),  # diagonal
    ("iij->ji", ((2, 2, 3),)),  # diagonal of a batch
    ("iji->j", ((2, 3, 2),)),
    ("ij->i", ((3, 2),)),  # a letter summed in one operand only
    ("ij->", ((3, 2),)),
    ("i,j->ij", ((3,), (2,))),
    ("i,i->", ((3,), (3,))),
    (",->", ((), ())),
    ("i,->i", ((3,), ())),
    ("i,i,i->", ((3,), (3,), (3,))),
    ("ijk,jl,lk->i", ((2, 3, 2), (3, 2), (2, 2))),
    ("bij,bjk->bik", ((2, 3, 2), (2, 2, 3))),
    ("...ij,...jk->...ik", ((2, 2, 3), (3, 2))),  # ellipsis, broadcast batch
    ("...i,...i->...", ((3, 1, 2), (2, 2))),  # ellipsis with a length-1 axis
    ("i...->...", ((2, 3, 2),)),
    ("...", ((3, 2),)),
    ("ij,ij->ij", ((3, 2), (1, 2))),  # a named axis of length 1 broadcasts
    ("ij,jk,kl->il", ((2, 3), (3, 3), (3, 2))),  # three operands
]
ROWS += [
    Row("einsum", lambda *a, s=s: fnp.einsum(s, *a), shapes, variant=s) for s, shapes in EINSUMS
]
_W = np.array([[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]])
ROWS += [
    Row(
        "einsum",
        lambda x, y: fnp.einsum(x, [0, 1], y, [1, 2], [0, 2]),
        ((2, 3), (3, 2)),
        variant="sublists",
    ),
    Row(
        "einsum",
        lambda x, y: fnp.einsum("ij,jk->ik", x, y, optimize=True),
        ((2, 3), (3, 2)),
        variant="optimize=True",
    ),
    Row(
        "einsum",
        lambda x, y, z: fnp.einsum("ij,jk,kl", x, y, z, optimize="greedy"),
        ((2, 3), (3, 2), (2, 2)),
        variant="optimize=greedy",
    ),
    Row(
        "einsum",
        lambda x: fnp.einsum("ij->i", x, dtype=np.float64),
        ((3, 3),),
        variant="dtype",
        promotes=True,
    ),
    # NumPy returns a single operand whose axes are all kept ("ii->i") as a view of it,
    # ignoring dtype (and casting): fgrad too, so the value stays NumPy's
    Row(
        "einsum",
        lambda x: fnp.einsum("ii->i", x, dtype=np.float64),
        ((3, 3),),
        variant="dtype,view",
    ),
    Row(
        "einsum",
        lambda x, y: fnp.einsum(x, [Ellipsis, 1], y, [1]),
        ((2, 3), (3,)),
        variant="sublists-ellipsis-implicit",
    ),
    Row(
        "einsum",
        lambda x: fnp.einsum("bi,ij->bj", x, _W.astype(x.dtype)),
        ((4, 3),),
        variant="constant-operand",
    ),
    Row("einsum", lambda x: fnp.einsum("ij,ij->", x, x), ((3, 2),), variant="same-operand-twice"),
    Row(
        "einsum",
        lambda x, w: fnp.tanh(fnp.einsum("bi,ij->bj", x, w)).sum(),
        ((4, 3), (3, 2)),
        variant="mlp",
    ),
]

# --- products built on einsum ---------------------------------------------------------------------

ROWS += [
    Row("tensordot", fnp.tensordot, ((2, 3, 2), (3, 2, 2)), variant="axes=2"),
    Row("tensordot", lambda x, y: fnp.tensordot(x, y, 1), ((2, 3), (3, 2)), variant="axes=1"),
    Row("tensordot", lambda x, y: fnp.tensordot(x, y, 0), ((2,), (3,)), variant="axes=0"),
    Row(
        "tensordot",
        lambda x, y: fnp.tensordot(x, y, axes=([1, 0], [2, 0])),
        ((3, 2, 2), (3, 2, 2)),
        variant="axes=pairs",
    ),
    Row(
        "tensordot",
        lambda x, y: fnp.tensordot(x, y, axes=(-1, 0)),
        ((2, 3), (3,)),
        variant="axes=ints",
    ),
]
for shapes in [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3)), ((), (3, 2)), ((3,), ())]:
    ROWS.append(Row("inner", fnp.inner, shapes))
for shapes in [((3,), (2,)), ((3, 2), (2,)), ((), (3,))]:
    ROWS.append(Row("outer", fnp.outer, shapes))
for shapes in [((3,), (3,)), ((3, 2), (6,)), ((), ())]:
    ROWS.append(Row("vdot", fnp.vdot, shapes))
for shapes in [((2,), (3,)), ((2, 3), (2, 2)), ((3,), (2, 2)), ((), (3,)), ((2, 1, 2), (2, 2))]:
    ROWS.append(Row("kron", fnp.kron, shapes))
ROWS += [
    Row("cross", fnp.cross, ((3,), (3,))),
    Row("cross", fnp.cross, ((4, 3), (3,)), variant="broadcast"),
    Row(
        "cross",
        lambda x, y: fnp.cross(x, y, axisa=0, axisb=-1, axisc=0),
        ((3, 2), (2, 3)),
        variant="axisa=0,axisc=0",
    ),
    Row("cross", lambda x, y: fnp.cross(x, y, axis=0), ((3, 2), (3, 2)), variant="axis=0"),
    Row("cross", fnp.cross, ((2, 2), (2, 2)), variant="2-vectors"),
    Row("cross", fnp.cross, ((2,), (3,)), variant="2x3"),
    Row("cross", fnp.cross, ((2, 3), (2,)), variant="3x2"),
]

# --- convolution and correlation: every mode, both length orders ----------------------------------

for name, fn in [("convolve", fnp.convolve), ("correlate", fnp.correlate)]:
    for shapes in [((5,), (3,)), ((2,), (4,))]:
        for mode in ("full", "same", "valid"):
            ROWS.append(
                Row(
                    name,
                    lambda a, v, fn=fn, mode=mode: fn(a, v, mode=mode),
                    shapes,
                    variant=f"mode={mode}",
                )
            )
    ROWS.append(Row(name, fn, ((4,), (4,)), variant="default-mode"))
    ROWS.append(
        Row(
            name,
            lambda a, fn=fn: fn(a, np.array([1.0, -2.0, 0.5], dtype=a.dtype)),
            ((5,),),
            variant="constant-kernel",
        )
    )

ROWS.append(Row("convolve", fnp.convolve, ((), (3,)), variant="scalar"))  # correlate refuses one

# --- differences ----------------------------------------------------------------------------------

ROWS += [
    Row("diff", fnp.diff, ((4,),)),
    Row("diff", fnp.diff, ((3, 4),), variant="2-D"),
    Row("diff", lambda x: fnp.diff(x, n=2, axis=0), ((4, 2),), variant="n=2,axis=0"),
    Row("diff", lambda x: fnp.diff(x, n=3), ((5,),), variant="n=3"),
    Row("diff", lambda x: fnp.diff(x, n=0), ((3,),), variant="n=0"),
    Row("diff", lambda x: fnp.diff(x, axis=-2, prepend=0.5), ((3, 2),), variant="prepend-scalar"),
    Row(
        "diff",
        lambda x, p, q: fnp.diff(x, prepend=p, append=q),
        ((3, 2), (3, 1), (3, 2)),
        variant="prepend-append-traced",
    ),
    Row(
        "diff", lambda x, p: fnp.diff(x, n=2, append=p), ((4,), ()), variant="append-traced-scalar"
    ),
    Row("ediff1d", fnp.ediff1d, ((4,),)),
    Row("ediff1d", fnp.ediff1d, ((3, 2),), variant="2-D"),
    Row(
        "ediff1d",
        lambda x, b, e: fnp.ediff1d(x, to_end=e, to_begin=b),
        ((4,), (2,), ()),
        variant="to_begin-to_end",
    ),
    Row("ediff1d", lambda x: fnp.ediff1d(x, to_begin=[1.0, 2.0]), ((3,),), variant="constant-ends"),
]

# --- interpolation: x, fp and xp traced; outside the range; left/right; period --------------------
# Query points are drawn away from the knots so that finite differences never cross a kink.

_XP = np.array([-1.0, -0.2, 0.5, 1.5])


def _interp_x(rng, n=(5,)):
    return np.array([-1.6, -0.6, 0.1, 1.1, 1.9]).reshape(n) + rng.uniform(-0.05, 0.05, n)


ROWS += [
    Row(
        "interp",
        lambda x, fp: fnp.interp(x, _XP.astype(x.dtype), fp),
        make=lambda rng: (_interp_x(rng), rng.normal(size=4)),
    ),
    Row(
        "interp",
        lambda x, fp: fnp.interp(x, _XP.astype(x.dtype), fp, left=-3.0, right=2.0),
        make=lambda rng: (_interp_x(rng), rng.normal(size=4)),
        variant="left-right",
    ),
    Row(
        "interp",
        lambda x, fp, lo, hi: fnp.interp(x, _XP.astype(x.dtype), fp, lo, hi),
        make=lambda rng: (_interp_x(rng), rng.normal(size=4), rng.normal(), rng.normal()),
        variant="traced-left-right",
    ),
    Row(
        "interp",
        lambda x, xp, fp: fnp.interp(x, xp, fp),
        make=lambda rng: (_interp_x(rng), _XP + rng.uniform(-0.05, 0.05, 4), rng.normal(size=4)),
        variant="traced-xp",
    ),
    Row(
        "interp",
        lambda x, fp: fnp.interp(x, _XP.astype(x.dtype), fp, period=2.2),
        make=lambda rng: (
            np.array([-1.9, -0.55, 0.3, 1.0, 2.9]) + rng.uniform(-0.05, 0.05, 5),
            rng.normal(size=4),
        ),
        variant="period",
    ),
    Row(
        "interp",
        lambda x: fnp.interp(x, [0.0, 1.0, 2.0], [1.0, 3.0, 2.0]),
        make=lambda rng: (np.float64(0.4 + rng.uniform(-0.1, 0.1)),),
        variant="scalar-x-lists",
        promotes=True,
    ),  # lists of Python floats are float64, as in NumPy
    Row(
        "interp",
        lambda x, fp: fnp.interp(x, _XP.astype(x.dtype), fp),
        make=lambda rng: (_interp_x(rng).reshape(5, 1)[:4].reshape(2, 2), rng.normal(size=4)),
        variant="2-D-x",
    ),
]

# --- polynomials ----------------------------------------------------------------------------------

ROWS += [
    Row("polyval", fnp.polyval, ((4,), ())),
    Row("polyval", fnp.polyval, ((3,), (3, 2)), variant="array-x"),
    Row("polyval", fnp.polyval, ((1,), (3,)), variant="constant-polynomial"),
    Row(
        "polyval",
        lambda a, b, x: fnp.polyval([a, 2.0, b], x),
        ((), (), (3,)),
        variant="list-of-traced",
        promotes=True,
    ),  # the 2.0 in the list is float64
    Row(
        "polyval",
        lambda x: fnp.polyval(np.array([1.0, -2.0, 0.5, 3.0], dtype=x.dtype), x),
        ((3,),),
        variant="constant-p",
    ),
    Row("vander", fnp.vander, ((3,),)),
    Row("vander", lambda x: fnp.vander(x, N=5, increasing=True), ((3,),), variant="N=5,increasing"),
    Row("vander", lambda x: fnp.vander(x, N=2), ((4,),), variant="N=2"),
    Row("vander", fnp.vander, make=lambda rng: (np.array([0.0, 1.3, -0.7]),), variant="at-zero"),
]

# --- integration ----------------------------------------------------------------------------------

ROWS += [
    Row("trapezoid", fnp.trapezoid, ((5,),)),
    Row("trapezoid", fnp.trapezoid, ((3, 4),), variant="2-D"),
    Row("trapezoid", lambda y: fnp.trapezoid(y, axis=0), ((3, 4),), variant="axis=0"),
    Row("trapezoid", lambda y: fnp.trapezoid(y, dx=0.3, axis=-2), ((3, 2),), variant="dx"),
    Row("trapezoid", lambda y, dx: fnp.trapezoid(y, dx=dx), ((3, 4), ()), variant="traced-dx"),
    Row("trapezoid", lambda y, x: fnp.trapezoid(y, x), ((3, 4), (4,)), variant="x-1-D"),
    Row(
        "trapezoid",
        lambda y, x: fnp.trapezoid(y, x, axis=0),
        ((3, 2), (3, 2)),
        variant="x-2-D,axis=0",
    ),
]

# --- covariance and correlation -------------------------------------------------------------------

_FW = np.array([1, 2, 1, 3, 1])
_AW = np.array([0.5, 1.0, 0.25, 2.0, 1.5])
ROWS += [
    Row("cov", fnp.cov, ((3, 5),)),
    Row("cov", fnp.cov, ((5,),), variant="1-D"),
    Row("cov", lambda x: fnp.cov(x, rowvar=False), ((5, 3),), variant="rowvar=False"),
    Row("cov", lambda x: fnp.cov(x, bias=True), ((2, 5),), variant="bias"),
    Row("cov", lambda x: fnp.cov(x, ddof=2), ((2, 5),), variant="ddof=2"),
    Row("cov", lambda x, y: fnp.cov(x, y), ((5,), (5,)), variant="y"),
    Row(
        "cov", lambda x, y: fnp.cov(x, y, rowvar=False), ((5, 2), (5, 1)), variant="y,rowvar=False"
    ),
    Row("cov", lambda x: fnp.cov(x, fweights=_FW), ((2, 5),), variant="fweights"),
    Row("cov", lambda x: fnp.cov(x, aweights=_AW), ((2, 5),), variant="aweights"),
    Row(
        "cov",
        lambda x: fnp.cov(x, fweights=_FW, aweights=_AW, ddof=0),
        ((2, 5),),
        variant="both-weights,ddof=0",
    ),
    Row(
        "cov",
        lambda x, w: fnp.cov(x, fweights=_FW, aweights=w),
        ((2, 5), (5,)),
        ("real", "positive"),
        variant="traced-aweights",
    ),
    Row("corrcoef", fnp.corrcoef, ((3, 5),)),
    Row("corrcoef", lambda x: fnp.corrcoef(x, rowvar=False), ((5, 2),), variant="rowvar=False"),
    Row("corrcoef", fnp.corrcoef, ((5,), (5,)), variant="y"),
    Row("corrcoef", fnp.corrcoef, ((5,),), variant="1-D"),
]

NONDIFF = []

# --- complex operands, built inside the row (x + 1j y), results returned as real parts ------------
# (correlate, vdot and cov conjugate one operand, as NumPy does)


def _parts(z):
    return fnp.stack([fnp.real(z), fnp.imag(z)])


ROWS += [
    Row(
        "correlate",
        lambda a, b, v, w: _parts(fnp.correlate(a + 1j * b, v + 1j * w, "full")),
        ((4,), (4,), (2,), (2,)),
        variant="complex",
    ),
    Row(
        "correlate",
        lambda a, b, v, w: _parts(fnp.correlate(a + 1j * b, v + 1j * w, "same")),
        ((2,), (2,), (3,), (3,)),
        variant="complex,swapped",
    ),
    Row(
        "convolve",
        lambda a, b, v: _parts(fnp.convolve(a + 1j * b, v)),
        ((3,), (3,), (2,)),
        variant="complex",
    ),
    Row(
        "vdot",
        lambda a, b, c, d: _parts(fnp.vdot(a + 1j * b, c + 1j * d)),
        ((3,), (3,), (3,), (3,)),
        variant="complex",
    ),
    Row(
        "einsum",
        lambda a, b, c: _parts(fnp.einsum("ij,jk->ik", a + 1j * b, c)),
        ((2, 3), (2, 3), (3, 2)),
        variant="complex",
    ),
    Row(
        "interp",
        lambda x, f, g: _parts(fnp.interp(x, _XP.astype(x.dtype), f + 1j * g)),
        make=lambda rng: (_interp_x(rng), rng.normal(size=4), rng.normal(size=4)),
        variant="complex-fp",
    ),
    Row("cov", lambda x, y: _parts(fnp.cov(x + 1j * y)), ((2, 4), (2, 4)), variant="complex"),
    Row(
        "corrcoef",
        lambda x, y: _parts(fnp.corrcoef(x + 1j * y)),
        ((2, 4), (2, 4)),
        variant="complex",
    ),
]
