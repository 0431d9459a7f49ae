"""Gradient-table rows for fgrad.scipy.sparse and fgrad.scipy.sparse.linalg (see
tests/gradtable.py).

The differentiated inputs are a sparse array's stored values (`data`) and dense operands or
right-hand sides. Each structure is fixed here (a module constant); `make=` draws data that
keeps the solves well conditioned (a dominant diagonal), and for `cg` a symmetric matrix
built from its diagonal and one off-diagonal (so every perturbation stays symmetric).
"""

import numpy as np
from gradtable import Nondiff, Row

import fgrad.scipy.sparse as fsp
import fgrad.scipy.sparse.linalg as fsla

P = "scipy.sparse."
L = "scipy.sparse.linalg."
ROWS = []
NONDIFF = [Nondiff(P + "issparse", lambda x: np.float64(fsp.issparse(x)))]

_SOLVER_VALUES = (
    "SciPy's SuperLU, cg, gmres and expm_multiply compute with the values in memory (a Dask "
    "array would be computed at once)"
)
DASK_CANNOT = {
    L + name: _SOLVER_VALUES for name in ("spsolve", "splu", "cg", "gmres", "expm_multiply")
}
DASK_CANNOT.update(
    {
        P + "csr_array[" + variant: "SciPy's sparse product converts a Dask operand to NumPy"
        for variant in ("scipy_X@A]-2x4",)
    }
)

# a 4 x 3 structure in CSR (indptr, indices) and the same positions as COO, with a repeat
INDPTR = np.array([0, 2, 3, 3, 5])
INDICES = np.array([0, 2, 1, 0, 2])
ROW = np.array([0, 0, 1, 3, 3, 1])
COL = np.array([0, 2, 1, 0, 2, 1])  # (1, 1) twice: the two values add up

# a 5 x 5 structure for the solves: the diagonal first, then off-diagonal entries
N = 5
_OFF_ROW = np.array([0, 1, 2, 3, 4, 2, 0])
_OFF_COL = np.array([1, 2, 3, 4, 0, 0, 3])
S_ROW = np.concatenate([np.arange(N), _OFF_ROW])
S_COL = np.concatenate([np.arange(N), _OFF_COL])


def _solve_data(rng):
    return np.concatenate([rng.uniform(3.0, 4.0, N), rng.uniform(-1.0, 1.0, len(_OFF_ROW))])


def _matrix(d):
    return fsp.coo_array((d, (S_ROW, S_COL)), shape=(N, N))


def _data_and(*rhs_shapes):
    def make(rng):
        return (_solve_data(rng),) + tuple(rng.standard_normal(s) for s in rhs_shapes)

    return make


# --- building and products ------------------------------------------------------------------------


def _csr(d):
    return fsp.csr_array((d, INDICES, INDPTR), shape=(4, 3))


def _coo(d):
    return fsp.coo_array((d, (ROW, COL)), shape=(4, 3))


ROWS += [
    Row(P + "csr_array", lambda d, x: _csr(d) @ x, ((5,), (3,)), variant="A@x"),
    Row(P + "csr_array", lambda d, x: _csr(d) @ x, ((5,), (3, 2)), variant="A@X"),
    Row(P + "csr_array", lambda d, y: _csr(d).T @ y, ((5,), (4,)), variant="A.T@y"),
    Row(P + "csr_array", lambda d, x: x @ _csr(d), ((5,), (2, 4)), variant="X@A"),
    Row(P + "csr_array", lambda d, x: _csr(d).dot(x), ((5,), (3,)), variant="dot"),
    Row(P + "csr_array", lambda d: _csr(d).toarray(), ((5,),), variant="toarray"),
    Row(P + "csr_array", lambda d: _csr(d).sum(axis=0), ((5,),), variant="sum0"),
    Row(P + "csr_array", lambda d: _csr(d).sum(axis=1), ((5,),), variant="sum1"),
    Row(P + "csr_array", lambda d: _csr(d).sum(), ((5,),), variant="sum"),
    Row(P + "coo_array", lambda d, x: _coo(d) @ x, ((6,), (3,)), variant="A@x"),
    Row(P + "coo_array", lambda d: _coo(d).todense(), ((6,),), variant="todense"),
    Row(P + "coo_array", lambda d, x: (_coo(d) @ x) ** 2, ((6,), (3, 2)), variant="square"),
    Row(
        P + "diags",
        lambda a, b, x: fsp.diags([a, b], [0, 1]) @ x,
        ((4,), (3,), (4,)),
    ),
    Row(
        P + "diags_array",
        lambda a, c: fsp.diags_array([a, c], offsets=[0, -1], shape=(4, 3)).toarray(),
        ((3,), (3,)),
    ),
]

# --- solves -------------------------------------------------------------------------------------

ROWS += [
    Row(L + "spsolve", lambda d, b: fsla.spsolve(_matrix(d), b), make=_data_and((N,))),
    Row(
        L + "spsolve",
        lambda d, b: fsla.spsolve(_matrix(d), b),
        make=_data_and((N, 2)),
        variant="matrix_b",
    ),
    Row(
        L + "spsolve",
        lambda d, b: fsla.spsolve(_matrix(d), b) ** 2,
        make=_data_and((N,)),
        variant="square",
    ),
    Row(L + "splu", lambda d, b: fsla.splu(_matrix(d)).solve(b), make=_data_and((N,))),
    Row(
        L + "splu",
        lambda d, b: fsla.splu(_matrix(d)).solve(b, trans="T"),
        make=_data_and((N, 2)),
        variant="trans=T",
    ),
]


def _spd(diagonal, off):
    """A symmetric tridiagonal matrix: `diagonal` (>= 3) and `off` (in (-1, 1)) on both sides."""
    return fsp.diags([diagonal, off, off], [0, 1, -1])


def _spd_inputs(rng):
    return rng.uniform(3.0, 4.0, N), rng.uniform(-1.0, 1.0, N - 1), rng.standard_normal(N)


_TIGHT = "a tolerance of 1e-13 for the derivative's accuracy, below float32's resolution"


def _rtol(b):
    """Tight enough for central differences in float64; what float32 can reach otherwise."""
    return 1e-13 if b.dtype == np.float64 else 1e-5


ROWS += [
    Row(
        L + "cg",
        lambda p, q, b: fsla.cg(_spd(p, q), b, rtol=_rtol(b))[0],
        make=_spd_inputs,
        float32=_TIGHT,
    ),
    Row(
        L + "gmres",
        lambda d, b: fsla.gmres(_matrix(d), b, rtol=_rtol(b), restart=N)[0],
        make=_data_and((N,)),
        float32=_TIGHT,
    ),
]

# expm_multiply: in B, and in A's data (its reverse rule is a quadrature exact to round-off,
# checked against SciPy's Frechet derivative in tests/test_scipy_sparse.py)
_EXPM_DATA = 0.3 * _solve_data(np.random.default_rng(7))
ROWS += [
    Row(
        L + "expm_multiply",
        lambda b: fsla.expm_multiply(_matrix(_EXPM_DATA), b),
        ((N,),),
        float32="the matrix is a float64 constant",
    ),
    Row(
        L + "expm_multiply",
        lambda b: fsla.expm_multiply(_matrix(_EXPM_DATA), b) ** 2,
        ((N, 2),),
        variant="square",
        float32="the matrix is a float64 constant",
    ),
    Row(
        L + "expm_multiply",
        lambda d, b: fsla.expm_multiply(_matrix(0.3 * d), b),
        make=_data_and((N,)),
        variant="data",
    ),
    Row(
        L + "expm_multiply",
        lambda d, b: fsla.expm_multiply(_matrix(0.3 * d).T, b) ** 2,
        make=_data_and((N, 2)),
        variant="data_T",
    ),
]

# a constant SciPy sparse array meeting traced values (the primitive sparse_matmul). Only
# x @ A: in A @ x SciPy converts a Dask x itself, before fgrad sees it (A @ x, A.T @ x and
# A.dot(x) are checked under every transform in tests/test_scipy_sparse.py)
_SCIPY_A = fsp.csr_array((np.arange(1.0, 6.0), INDICES, INDPTR), shape=(4, 3)).to_scipy()
ROWS += [
    Row(P + "csr_array", lambda x: x @ _SCIPY_A, ((2, 4),), variant="scipy_X@A", promotes=True),
]
