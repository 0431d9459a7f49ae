"""fgrad.scipy.sparse and fgrad.scipy.sparse.linalg: SciPy's sparse matrices meeting traced
values, sparse arrays with traced data, and solves differentiated implicitly.

Derivatives are checked against finite differences of the whole solve (`check_grads`), against
the dense solve (`fnp.linalg.solve`) on small problems, and on a Poisson problem's solution
differentiated with respect to its conductivity field; under `vmap`, `jit` and `jet` too.
"""

from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
import rows_scipy_sparse
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.sparse as fsp
import fgrad.scipy.sparse.linalg as fsla
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# --- a constant SciPy matrix meets traced values --------------------------------------------------

A_SP = sp.random_array((6, 4), density=0.5, rng=1, format="csr")
A_DENSE = A_SP.toarray()
X0 = RNG.standard_normal(4)

PRODUCTS = {
    "A @ x": (lambda A, x: A @ x, (4,)),
    "A.T @ y": (lambda A, y: A.T @ y, (6,)),
    "A.dot(x)": (lambda A, x: A.dot(x), (4,)),
    "x @ A": (lambda A, x: x @ A, (6,)),
    "A @ X": (lambda A, x: A @ x, (4, 3)),
    "X @ A": (lambda A, x: x @ A, (2, 6)),
}


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_a_scipy_matrix_times_a_traced_value_under_every_transform(name):
    product, shape = PRODUCTS[name]
    x = RNG.standard_normal(shape)

    def f(x):
        return fnp.sin(product(A_SP, x))

    def dense(x):
        # ndarray.dot does not dispatch to fgrad: the dense reference multiplies with @
        return fnp.sin(product(A_DENSE, x) if name != "A.dot(x)" else A_DENSE @ x)

    _close(fgrad.jacrev(f)(x), fgrad.jacrev(dense)(x))
    _close(fgrad.jacfwd(f)(x), fgrad.jacfwd(dense)(x))
    _close(fgrad.hessian(lambda x: fnp.sum(f(x)))(x), fgrad.hessian(lambda x: fnp.sum(dense(x)))(x))
    xs = np.stack([x, 2 * x, -x])
    _close(fgrad.vmap(f)(xs), fgrad.vmap(dense)(xs))
    _close(
        fgrad.vmap(f, in_axes=-1, out_axes=-1)(np.moveaxis(xs, 0, -1)),
        np.moveaxis(fgrad.vmap(dense)(xs), 0, -1),
    )
    _close(
        fgrad.jit(fgrad.grad(lambda x: fnp.sum(f(x))))(x),
        fgrad.grad(lambda x: fnp.sum(dense(x)))(x),
    )
    series = ((x, -x),)
    got, want = fgrad.jet(f, (x,), series), fgrad.jet(dense, (x,), series)
    _close(got[0], want[0])
    for g, w in zip(got[1], want[1]):
        _close(g, w)
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_the_product_never_makes_the_matrix_dense():
    # dense, this matrix would take 80 GB: its product and gradient take microseconds
    n = 100_000
    A = sp.diags_array([np.full(n, 2.0), np.full(n - 1, -1.0)], offsets=[0, 1], format="csr")
    x = np.ones(n)
    g = fgrad.grad(lambda x: fnp.sum((A @ x) ** 2))(x)
    _close(g, 2 * A.T @ (A @ x))


def test_the_products_derivative_is_a_sparse_product():
    # the bprop multiplies by A.T, SciPy's own sparse transpose
    seen = []

    class Watch(fgrad.provenance.Watcher):
        def value(self, prim, args, params, ans):
            if prim.name == "sparse_matmul":
                seen.append(sp.issparse(params["A"]) and params["A"].shape)

    watch = Watch()
    fgrad.provenance.add_watcher(watch)
    try:
        fgrad.grad(lambda x: fnp.sum(A_SP @ x))(X0)
    finally:
        fgrad.provenance.remove_watcher(watch)
    assert seen == [(6, 4), (4, 6)]


@pytest.mark.parametrize("fmt", ["coo_array", "coo_matrix", "dok_array", "lil_array", "dia_array"])
def test_every_sparse_format_multiplies_a_traced_value(fmt):
    """COO has its own `_matmul_dispatch` (SciPy's n-d COO), which asked NumPy for an array of
    the traced value and was refused."""
    A = getattr(sp, fmt)(A_DENSE)
    np.testing.assert_allclose(fgrad.jacrev(lambda x: A @ x)(X0), A_DENSE)
    np.testing.assert_allclose(fgrad.jacfwd(lambda x: A @ x)(X0), A_DENSE)
    np.testing.assert_allclose(fgrad.jit(lambda x: A @ x)(X0), A_DENSE @ X0)
    np.testing.assert_allclose(fgrad.grad(lambda y: fnp.sum(y @ A))(np.ones(6)), A_DENSE.sum(1))


def test_a_mismatched_product_names_the_shapes():
    with pytest.raises(ValueError, match=r"shape \(6, 4\).*float64.*\(5,\)"):
        fgrad.grad(lambda x: fnp.sum(A_SP @ x))(np.ones(5))


def test_numpy_arrays_are_still_refused_a_conversion():
    # the lever that sends A @ x to fgrad is only SciPy's dispatch: np.asarray still refuses
    with pytest.raises(TypeError, match="would drop its gradient"):
        fgrad.grad(lambda x: np.asarray(x).sum())(X0)


# --- sparse arrays with traced data ---------------------------------------------------------------

INDPTR = np.array([0, 2, 3, 3, 5])
INDICES = np.array([0, 2, 1, 0, 2])
D0 = np.array([1.0, -2.0, 3.0, 0.5, 4.0])


def _dense_of(d):
    rows = np.repeat(np.arange(4), np.diff(INDPTR))
    return fnp.at(np.zeros((4, 3)))[rows, INDICES].add(d)


def test_sparse_array_operations_equal_the_dense_ones():
    A = fsp.csr_array((D0, INDICES, INDPTR), shape=(4, 3))
    S = sp.csr_array((D0, INDICES, INDPTR), shape=(4, 3))
    x, y = RNG.standard_normal(3), RNG.standard_normal((4, 2))
    _close(A.toarray(), S.toarray())
    _close(A @ x, S @ x)
    _close(A.T @ y, S.T @ y)
    _close(y.T @ A, y.T @ S)
    _close(A.sum(axis=0), S.sum(axis=0))
    _close(A.sum(axis=1), S.sum(axis=1))
    _close(A.sum(), S.sum())
    _close((2.0 * A).toarray(), 2.0 * S.toarray())
    _close((-A).toarray(), -S.toarray())
    _close(A.to_scipy().toarray(), S.toarray())
    row, col = np.array([0, 0, 2]), np.array([1, 1, 0])
    _close(
        fsp.coo_array((np.ones(3), (row, col)), shape=(3, 2)).toarray(),
        sp.coo_array((np.ones(3), (row, col)), shape=(3, 2)).toarray(),
    )
    diagonals = [np.arange(1.0, 5.0), np.arange(1.0, 4.0), -1.0]
    _close(fsp.diags(diagonals, [0, 1, -1]).toarray(), sp.diags(diagonals, [0, 1, -1]).toarray())
    _close(
        fsp.diags_array([1.0, 2.0], offsets=[0, 2], shape=(3, 5)).toarray(),
        sp.diags_array([1.0, 2.0], offsets=[0, 2], shape=(3, 5)).toarray(),
    )


def test_csr_array_takes_scipys_other_forms():
    # COO triplets (repeats summed into one stored element, row-major as SciPy's CSR), a dense
    # array (its nonzeros) and (M, N) (empty): the same arrays as SciPy's
    row, col = np.array([2, 0, 1, 0, 2, 2]), np.array([0, 1, 2, 1, 0, 1])
    d = RNG.standard_normal(6)
    dense = np.array([[0.0, 2.0, 0.0], [1.5, 0.0, -3.0]])
    triplets = (d, (row, col))
    forms = [((triplets,), {"shape": (3, 4)}), ((triplets,), {}), ((dense,), {})]
    forms += [(((2, 3),), {}), (((2, 3),), {"dtype": np.float32}), ((dense.tolist(),), {})]
    for args, kwargs in forms:
        A, S = fsp.csr_array(*args, **kwargs), sp.csr_array(*args, **kwargs)
        assert A.shape == S.shape and A.nnz == S.nnz and A.dtype == S.dtype
        _close(A.toarray(), S.toarray())
        _close(A.data, S.data)
        _close(A.col, S.indices)
    x = RNG.standard_normal(4)

    def product(d):
        return fnp.sin(fsp.csr_array((d, (row, col)), shape=(3, 4)) @ x)

    check_grads(product, (d,), order=2, modes=("fwd", "rev"))
    with pytest.raises(ValueError, match=r"2 dimensions.*shape \(3,\)"):
        fsp.csr_array(np.ones(3))


INT_DATA_FORMS = {
    "dense": lambda m, M: m.csr_array(M),
    "triplets": lambda m, M: m.csr_array((M[M != 0], np.nonzero(M)), shape=M.shape),
    "csr": lambda m, M: m.csr_array(
        (M[M != 0], np.nonzero(M)[1], np.r_[0, np.cumsum((M != 0).sum(1))]), shape=M.shape
    ),
    "coo": lambda m, M: m.coo_array((M[M != 0], np.nonzero(M)), shape=M.shape),
    "list-data": lambda m, M: m.coo_array((M[M != 0].tolist(), np.nonzero(M)), shape=M.shape),
}


@pytest.mark.parametrize("form", INT_DATA_FORMS)
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int32, np.int64])
def test_integer_and_bool_data_keep_scipys_dtype(form, dtype):
    """A sparse array of integer or bool data keeps their dtype, as SciPy's (it became float64:
    csr_array(M) @ v of int64 M and v was float64, SciPy's int64); its sums, products and
    dense form are SciPy's, eagerly and under jit. (A list of data stayed a list: A * 2
    repeated it.)"""
    M = np.array([[1, 0, 2], [0, 3, 0], [4, 0, 5]]).astype(dtype)
    make = INT_DATA_FORMS[form]
    S = make(sp, M)
    v = np.array([1, 2, 3]).astype(dtype)
    ops = {
        "toarray": lambda A: A.toarray(),
        "A @ v": lambda A: A @ v,
        "v @ A": lambda A: v @ A,
        "A.T": lambda A: A.T.toarray(),
        "sum": lambda A: np.asarray(A.sum()),
        "sum0": lambda A: A.sum(axis=0),
        "sum1": lambda A: A.sum(axis=1),
        "A * 2": lambda A: (A * 2).toarray(),
        "A * 2.5": lambda A: (A * 2.5).toarray(),
    }
    assert make(fsp, M).dtype == S.dtype  # (M's own; a list of Python ints: int64)
    for name, op in ops.items():
        want = np.asarray(op(S))
        for got in (op(make(fsp, M)), fgrad.jit(lambda M: op(make(fsp, M)))(M)):
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_dtype_casts_the_data_of_every_form_and_makes_integer_data_differentiable():
    # csr_array(dense, dtype=...) raised (the SparseArray was cast, not its data)
    M = np.array([[1, 0, 2], [0, 3, 0]])

    def as_float32(m):  # the module m's constructors, with dtype=float32
        return SimpleNamespace(
            csr_array=partial(m.csr_array, dtype=np.float32),
            coo_array=partial(m.coo_array, dtype=np.float32),
        )

    for make in INT_DATA_FORMS.values():
        S, A = make(as_float32(sp), M), make(as_float32(fsp), M)
        assert A.dtype == S.dtype == np.float32
        np.testing.assert_array_equal(A.toarray(), S.toarray())
    g = fgrad.grad(lambda A: fnp.sum(A @ np.arange(3.0)))(fsp.csr_array(M, dtype=float))
    np.testing.assert_array_equal(g.data, [0.0, 2.0, 1.0])
    with pytest.raises(TypeError, match="int64"):
        fgrad.grad(lambda A: fnp.sum(A @ np.arange(3.0)))(fsp.csr_array(M))


@pytest.mark.parametrize("a_dtype", [np.bool_, np.uint8, np.int16, np.int64])
@pytest.mark.parametrize("b_dtype", [np.bool_, np.uint8, np.int32, np.float32, np.complex64])
def test_spsolve_and_splu_of_integer_data_compute_in_scipys_dtype(a_dtype, b_dtype):
    """SuperLU computes bool and integers up to int16 in float32, as SciPy's spsolve and splu
    do: they gave float64 where SciPy gives float32 (a bool or uint8 matrix, a float32 or
    small-integer right-hand side)."""
    M = (
        np.eye(3, dtype=bool)
        if a_dtype is np.bool_
        else np.array([[2, 0, 1], [0, 3, 0], [1, 0, 4]])
    )
    M = M.astype(a_dtype)
    b = np.array([1, 0, 1]).astype(b_dtype)
    want = spla.spsolve(sp.csr_array(M), b)
    for A in (fsp.csr_array(M), sp.csr_array(M)):
        for got in (fsla.spsolve(A, b), fsla.splu(A).solve(b)):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_csr_array_of_a_traced_dense_array_differentiates_its_zeros_too():
    # csr_array(x).toarray() is x: the derivative at an entry that is zero now is not zero
    dense = np.array([[0.0, 2.0, 0.0], [1.5, 0.0, -3.0]])
    v = np.arange(1.0, 4.0)
    check_grads(lambda x: fnp.sin(fsp.csr_array(x) @ v), (dense,), order=2)
    _close(fgrad.grad(lambda x: fnp.sum(fsp.csr_array(x) @ v))(dense), np.tile(v, (2, 1)))
    eager = fgrad.grad(lambda x: fnp.sum(fnp.sin(fsp.csr_array(x) @ v)))
    jitted = fgrad.jit(eager)
    for x in (dense, np.diag([1.0, 2.0, 0.0])[:2]):
        np.testing.assert_array_equal(jitted(x), eager(x))


def test_the_gradient_with_respect_to_a_sparse_array_is_a_sparse_array():
    A = fsp.csr_array((D0, INDICES, INDPTR), shape=(4, 3))
    x = RNG.standard_normal(3)
    g = fgrad.grad(lambda A: fnp.sum((A @ x) ** 2))(A)
    assert isinstance(g, fsp.SparseArray) and g.structure is A.structure
    want = fgrad.grad(lambda d: fnp.sum((_dense_of(d) @ x) ** 2))(D0)
    _close(g.data, want)
    batched = fgrad.vmap(lambda A: A @ x)(fsp.SparseArray(np.stack([D0, 2 * D0]), A.structure))
    _close(batched, np.stack([_dense_of(D0) @ x, _dense_of(2 * D0) @ x]))


# --- solves ---------------------------------------------------------------------------------------

N = 6
_S = sp.coo_array(sp.random_array((N, N), density=0.3, rng=3) + 5.0 * sp.eye_array(N))
ROW, COL, DATA = _S.row, _S.col, _S.data.copy()
B0 = RNG.standard_normal(N)


def _A(d):
    return fsp.coo_array((d, (ROW, COL)), shape=(N, N))


def _dense_A(d):
    return fnp.at(np.zeros((N, N)))[ROW, COL].add(d)


SOLVES = {
    "spsolve": lambda d, b: fsla.spsolve(_A(d), b),
    "splu": lambda d, b: fsla.splu(_A(d)).solve(b),
    "gmres": lambda d, b: fsla.gmres(_A(d), b, rtol=1e-14, restart=N)[0],
}


@pytest.mark.parametrize("name", list(SOLVES))
def test_a_solve_is_differentiated_as_the_dense_solve(name):
    solve = SOLVES[name]

    def dense(d, b):
        return fnp.linalg.solve(_dense_A(d), b)

    _close(solve(DATA, B0), dense(DATA, B0))
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        for got, want in zip(
            jac(solve, argnums=(0, 1))(DATA, B0), jac(dense, argnums=(0, 1))(DATA, B0)
        ):
            _close(got, want, 1e-9)
    loss = lambda d, b: fnp.sum(solve(d, b) ** 3)
    dense_loss = lambda d, b: fnp.sum(dense(d, b) ** 3)
    _close(fgrad.hessian(loss)(DATA, B0), fgrad.hessian(dense_loss)(DATA, B0), 1e-8)
    check_grads(solve, (DATA, B0), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["spsolve", "gmres"])
def test_a_single_column_right_hand_side_gives_scipy_s_vector(name):
    """b of shape (n, 1): SciPy's spsolve, cg and gmres return x of shape (n,) (fgrad's
    spsolve returned (n, 1), and its cg and gmres refused b), with its derivative."""
    column = B0[:, None]
    x = SOLVES[name](DATA, column)
    scipy_solve = {"spsolve": spla.spsolve, "gmres": lambda A, b: spla.gmres(A, b, rtol=1e-14)[0]}
    want = scipy_solve[name](_S.tocsr(), column)
    assert x.shape == want.shape == (N,)
    _close(x, want)
    _close(
        fgrad.jacrev(SOLVES[name], argnums=1)(DATA, column),
        fgrad.jacrev(lambda b: fnp.linalg.solve(_S.toarray(), b[:, 0]))(column),
        1e-9,
    )
    spd = fsp.diags([np.full(N, 3.0), -1.0, -1.0], [0, 1, -1])
    x = fsla.cg(spd, column, rtol=1e-14)[0]
    assert x.shape == spla.cg(spd.to_scipy(), column)[0].shape == (N,)
    _close(x, np.linalg.solve(spd.toarray(), B0))


def test_splu_solves_with_the_transpose():
    lu = fsla.splu(_A(DATA))
    _close(lu.solve(B0, trans="T"), np.linalg.solve(_S.toarray().T, B0))
    check_grads(lambda d, b: fsla.splu(_A(d)).solve(b, trans="T"), (DATA, B0), order=2)


def test_cg_is_differentiated_as_the_dense_solve():
    def spd(p, q):
        return fsp.diags([p, q, q], [0, 1, -1])

    p, q = RNG.uniform(3, 4, N), RNG.uniform(-1, 1, N - 1)

    def f(p, q, b):
        return fsla.cg(spd(p, q), b, rtol=1e-14)[0]

    def dense(p, q, b):
        return fnp.linalg.solve(spd(p, q).toarray(), b)

    for got, want in zip(
        fgrad.jacrev(f, argnums=(0, 1, 2))(p, q, B0),
        fgrad.jacrev(dense, argnums=(0, 1, 2))(p, q, B0),
    ):
        _close(got, want, 1e-9)
    check_grads(f, (p, q, B0), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("solver", [fsla.cg, fsla.gmres])
def test_an_absolute_tolerance_for_b_does_not_zero_a_small_derivative(solver):
    # atol=1e-6 is met by b's solve to rtol 1e-12 (||b|| = 5.5); reused for a cotangent or a
    # tangent of size 1e-8 it was met at the start iterate 0: gradient and tangent exactly 0
    A = sp.diags_array([np.full(4, 2.0), np.full(3, -1.0), np.full(3, -1.0)], offsets=[0, 1, -1])
    A = A.tocsr()
    b, ones = np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4)
    solve = lambda b: solver(A, b, rtol=1e-12, atol=1e-6)[0]
    g = fgrad.grad(lambda b: 1e-8 * fnp.sum(solve(b)))(b)
    np.testing.assert_allclose(g, 1e-8 * np.linalg.solve(A.toarray().T, ones), rtol=1e-9)
    _, tangent = fgrad.jvp(solve, (b,), (1e-8 * ones,))
    np.testing.assert_allclose(tangent, 1e-8 * np.linalg.solve(A.toarray(), ones), rtol=1e-9)
    _, (first,) = fgrad.jet(solve, (b,), ((1e-8 * ones,),))
    np.testing.assert_allclose(first, 1e-8 * np.linalg.solve(A.toarray(), ones), rtol=1e-9)


@pytest.mark.parametrize("solver", [fsla.cg, fsla.gmres])
def test_a_derivative_does_not_depend_on_the_size_of_b(solver):
    # x = A^-1 b, so the gradient A^-T w is the same for every b. The derivative's solves took
    # rtol max(rtol, atol / ||b||) from the b of the call: the gradient was exactly 0 eagerly
    # at a small b, in a jit replay of a record made at one, and in a vmap row next to it
    n = 20
    A = fsp.diags([np.full(n, 4.0), -1.0, -1.0], [0, 1, -1])
    w = np.linspace(1.0, 2.0, n)
    loss = lambda b: fnp.sum(solver(A, b, rtol=1e-10, atol=1e-6)[0] * w)
    small, big = np.full(n, 1e-7), np.linspace(1.0, 2.0, n)
    exact = np.linalg.solve(A.toarray().T, w)
    eager = fgrad.grad(loss)(big)
    np.testing.assert_allclose(eager, exact, rtol=1e-8)
    for b in (small, 1e-3 * big):
        np.testing.assert_array_equal(fgrad.grad(loss)(b), eager)
    replayed = fgrad.jit(fgrad.grad(loss))
    replayed(small)  # the record is made at a small b
    np.testing.assert_array_equal(replayed(big), eager)
    rows = fgrad.vmap(fgrad.grad(loss))(np.stack([small, big]))
    np.testing.assert_array_equal(rows, np.stack([eager, eager]))


def test_a_derivative_solve_with_rtol_0_has_scipy_s_default_rtol():
    # rtol=0 with atol alone: the derivative's solves (no atol) take SciPy's default 1e-5
    A = fsp.diags([np.full(6, 4.0), -1.0, -1.0], [0, 1, -1])
    w = np.linspace(1.0, 2.0, 6)
    g = fgrad.grad(lambda b: fnp.sum(fsla.cg(A, b, rtol=0.0, atol=1e-12)[0] * w))(np.ones(6))
    np.testing.assert_allclose(g, np.linalg.solve(A.toarray().T, w), rtol=1e-4)


def test_a_solve_under_vmap_and_jit():
    def loss(d, b):
        return fnp.sum(fsla.spsolve(_A(d), b) ** 2)

    def dense_loss(d, b):
        return fnp.sum(fnp.linalg.solve(_dense_A(d), b) ** 2)

    ds = np.stack([DATA, 1.1 * DATA, 0.9 * DATA])
    bs = np.stack([B0, -B0, 2 * B0])
    _close(fgrad.vmap(fgrad.grad(loss))(ds, bs), fgrad.vmap(fgrad.grad(dense_loss))(ds, bs))
    # one matrix, many right-hand sides: one solve with them side by side
    _close(
        fgrad.vmap(fgrad.grad(loss, argnums=1), in_axes=(None, 0))(DATA, bs),
        fgrad.vmap(fgrad.grad(dense_loss, argnums=1), in_axes=(None, 0))(DATA, bs),
    )
    g = fgrad.jit(fgrad.grad(loss))
    for d in (DATA, 1.3 * DATA, 0.7 * DATA):  # a record replayed at other data refactorises
        _close(g(d, B0), fgrad.grad(dense_loss)(d, B0))


def test_a_solve_under_jet():
    f = lambda d: fnp.sum(fsla.spsolve(_A(d), B0) ** 2)
    dense = lambda d: fnp.sum(fnp.linalg.solve(_dense_A(d), B0) ** 2)
    series = ((DATA, np.cos(DATA), DATA**2),)
    got, want = fgrad.jet(f, (DATA,), series), fgrad.jet(dense, (DATA,), series)
    _close(got[0], want[0])
    for g, w in zip(got[1], want[1]):
        _close(g, w, 1e-9)


def test_the_adjoint_solve_reuses_the_factorisation(monkeypatch):
    calls = []
    real = spla.splu

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(spla, "splu", counting)
    fgrad.value_and_grad(lambda d, b: fnp.sum(fsla.spsolve(_A(d), b) ** 2), argnums=(0, 1))(
        DATA, B0
    )
    assert len(calls) == 1
    lu = fsla.splu(_A(DATA))
    lu.solve(B0)
    lu.solve(2 * B0)
    assert len(calls) == 2  # one more factorisation, for the second splu only


# --- a Poisson problem ----------------------------------------------------------------------------


def poisson(k, m):
    """The matrix of -div(k grad u) on an m x m grid of unknowns (spacing 1/(m+1), u = 0 on
    the boundary), k given at the unknowns, with the conductivity of each edge the mean of its
    two ends (a boundary edge: its inner end's). A `coo_array` whose data are traced with k;
    repeated positions add up."""
    idx = np.arange(m * m).reshape(m, m)
    h2 = (m + 1) ** 2
    left, right = idx[:, :-1].ravel(), idx[:, 1:].ravel()
    up, down = idx[:-1, :].ravel(), idx[1:, :].ravel()
    i = np.concatenate([left, up])
    j = np.concatenate([right, down])
    edge = 0.5 * (k[i] + k[j]) * h2
    # each unknown next to the boundary has one or two boundary edges
    col_of, row_of = np.arange(m * m) % m, np.arange(m * m) // m
    n_boundary = (col_of == 0).astype(float) + (col_of == m - 1) + (row_of == 0) + (row_of == m - 1)
    data = fnp.concatenate([edge, edge, -edge, -edge, k * n_boundary * h2])
    rows = np.concatenate([i, j, i, j, np.arange(m * m)])
    cols = np.concatenate([i, j, j, i, np.arange(m * m)])
    return fsp.coo_array((data, (rows, cols)), shape=(m * m, m * m))


def test_a_poisson_solution_differentiated_with_respect_to_its_conductivity():
    m = 8
    k = 1.0 + 0.5 * np.sin(np.arange(m * m))
    f = np.ones(m * m)
    target = RNG.standard_normal(m * m) * 0.01

    def misfit(k):
        u = fsla.spsolve(poisson(k, m), f)
        return fnp.sum((u - target) ** 2)

    def dense_misfit(k):
        u = fnp.linalg.solve(poisson(k, m).toarray(), f)
        return fnp.sum((u - target) ** 2)

    # against the dense solve and against central differences of the whole solve
    _close(fgrad.grad(misfit)(k), fgrad.grad(dense_misfit)(k), 1e-9)
    check_grads(misfit, (k,), order=2, modes=("fwd", "rev"))
    # the solution is that of SciPy's own solve of the same matrix
    A = poisson(k, m).to_scipy()
    _close(fsla.spsolve(poisson(k, m), f), spla.spsolve(A.tocsc(), f))


# --- expm_multiply --------------------------------------------------------------------------------


def test_expm_multiply_in_b_and_in_the_data_both_modes_to_second_order():
    d = 0.3 * DATA
    _close(fsla.expm_multiply(_A(d), B0), scipy.linalg.expm(_S.toarray() * 0.3) @ B0)
    check_grads(lambda b: fsla.expm_multiply(_A(d), b), (B0,), order=2, modes=("fwd", "rev"))
    check_grads(lambda d: fsla.expm_multiply(_A(d), B0), (d,), order=2, modes=("fwd", "rev"))
    t = RNG.standard_normal(d.shape)
    E = _dense_A(t)
    frechet = scipy.linalg.expm_frechet(_dense_A(d), E, compute_expm=False) @ B0
    _close(fgrad.jvp(lambda d: fsla.expm_multiply(_A(d), B0), (d,), (t,))[1], frechet, 1e-9)


@pytest.mark.parametrize("scale", [0.05, 1.0, 12.0])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("columns", [None, 3])
def test_expm_multiply_data_gradient_is_the_frechet_adjoint_to_round_off(
    scale, transposed, columns
):
    # the reverse rule integrates exp(x M^T) ct (exp((1-x) M) b)^T over [0, 1] by quadrature
    # (several panels at the larger scales); the exact value is the adjoint Frechet
    # derivative L(M^T, ct b^T), read at the stored elements
    d = scale * DATA / np.abs(DATA).max()
    b = RNG.standard_normal(N if columns is None else (N, columns))
    ct = RNG.standard_normal(b.shape)

    def f(d):
        A = _A(d).T if transposed else _A(d)
        return fnp.sum(ct * fsla.expm_multiply(A, b))

    M = _dense_A(d).T if transposed else _dense_A(d)
    G = scipy.linalg.expm_frechet(M.T, ct.reshape(N, -1) @ b.reshape(N, -1).T, compute_expm=False)
    rows, cols = (_S.col, _S.row) if transposed else (_S.row, _S.col)
    want = G[rows, cols]
    got = fgrad.grad(f)(d)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.abs(want).max())

    # forward and reverse Jacobians of the whole product agree
    def y(d):
        return fsla.expm_multiply(_A(d).T if transposed else _A(d), b)

    _close(fgrad.jacrev(y)(d), fgrad.jacfwd(y)(d), 1e-11)


def test_expm_multiply_data_gradient_under_vmap_and_jit():
    ds = np.stack([0.3 * DATA, -0.2 * DATA, 2.0 * DATA])
    runs = []

    def f(d):
        runs.append(1)
        return fnp.sum(fsla.expm_multiply(_A(d), B0) ** 2)

    loop = np.stack([fgrad.grad(f)(d) for d in ds])
    _close(fgrad.vmap(fgrad.grad(f))(ds), loop, 1e-12)
    # jit guards the quadrature's panel count (from a power of 2^(1/4) above the norm), not
    # the data: data of nearby norms replay one record
    jitted = fgrad.jit(fgrad.grad(f))
    near = [(1.0 + 0.01 * k) * 0.3 * DATA for k in range(6)]
    del runs[:]
    for d in near:
        _close(jitted(d), fgrad.grad(f)(d), 1e-12)
    assert len(runs) == len(near) + 1
    for d in ds:  # and other panel counts record paths of their own, each right
        _close(jitted(d), fgrad.grad(f)(d), 1e-12)


def test_expm_multiply_under_vmap_keeps_a_finite_row_from_another_rows_inf():
    # The rows' vectors go side by side as the columns of one SciPy call, whose steps and
    # stopping test read all the columns' norms: one row's inf made another row's value 5% off
    # (on the gradient table's matrix)
    A = rows_scipy_sparse._matrix(rows_scipy_sparse._EXPM_DATA)
    bs = np.stack([RNG.standard_normal(A.shape[0])] * 2)
    bs[1, 0] = np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        got = fgrad.vmap(lambda b: fsla.expm_multiply(A, b))(bs)
        want = [fsla.expm_multiply(A, b) for b in bs]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(want[1]))


# --- errors ---------------------------------------------------------------------------------------


def test_a_non_square_matrix_is_refused_with_its_shape_and_dtype():
    A = fsp.csr_array((D0, INDICES, INDPTR), shape=(4, 3))
    for solve in (fsla.spsolve, lambda A, b: fsla.cg(A, b), lambda A, b: fsla.gmres(A, b)):
        with pytest.raises(ValueError, match=r"square.*\(4, 3\).*float64"):
            solve(A, np.ones(4))
    with pytest.raises(ValueError, match="square"):
        fsla.splu(A)


def test_a_mismatched_right_hand_side_is_refused_with_both_shapes():
    with pytest.raises(ValueError, match=r"b \(.*\(4,\).*float64.*\(6, 6\)"):
        fsla.spsolve(_A(DATA), np.ones(4))
    with pytest.raises(ValueError, match=r"data must have shape \(13,\)|data must have shape"):
        fsp.coo_array((np.ones(3), (ROW, COL)), shape=(N, N))


def test_a_dense_matrix_is_refused_with_what_to_use_instead():
    with pytest.raises(TypeError, match="fgrad.numpy.linalg.solve"):
        fsla.spsolve(np.eye(3), np.ones(3))


def test_an_unconverged_solve_raises_instead_of_returning_a_wrong_gradient():
    with pytest.raises(RuntimeError, match=r"did not converge.*\(6, 6\).*float64.*maxiter"):
        fgrad.grad(lambda b: fnp.sum(fsla.gmres(_A(DATA), b, rtol=1e-14, maxiter=1, restart=1)[0]))(
            B0
        )


def test_a_singular_matrix_is_refused():
    d = np.zeros(N)
    A = fsp.coo_array((d, (np.arange(N), np.arange(N))), shape=(N, N))
    with pytest.raises(ValueError, match="singular"):
        fsla.spsolve(A, B0)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # SciPy's
def test_a_nan_in_the_data_or_b_is_named_not_called_singular_or_unconverged():
    diag = lambda d: fsp.diags([d], [0])
    with pytest.raises(ValueError, match=r"nan or inf in A's data \(1 value"):
        fsla.spsolve(diag(np.array([np.nan, 1.0])), np.ones(2))
    for solve in (fsla.cg, fsla.gmres):
        with pytest.raises(RuntimeError, match=r"nan or inf in b \(1 value.*index 0"):
            solve(diag(np.array([2.0, 1.0])), np.array([np.nan, 1.0]))
        with pytest.raises(RuntimeError, match=r"nan or inf in A's data"):
            solve(diag(np.array([2.0, np.inf])), np.ones(2))


def test_a_preconditioner_without_rmatvec_serves_the_gradient():
    """M = LinearOperator(matvec=ilu.solve), the usual wrapper of spilu, has no transpose:
    the adjoint solve of gmres runs without it (SciPy raised "rmatvec is not defined" under
    grad), cg's uses M itself (symmetric, as A is); the gradient is the dense solve's. When
    the solve without M does not converge, the error says so and what to give."""
    n = 30
    A = sp.coo_array(
        sp.diags_array([2 * np.ones(n), -np.ones(n - 1), -0.5 * np.ones(n - 1)], offsets=[0, 1, -1])
    )
    b = np.linspace(0.0, 1.0, n)

    def ilu_operator(matrix):  # the usual wrapper: no rmatvec
        return spla.LinearOperator((n, n), matvec=spla.spilu(sp.csc_array(matrix), 1e-1).solve)

    def loss(solve, matrix, M, **kw):
        def of_data(d):
            A = fsp.coo_array((d, (matrix.row, matrix.col)), shape=(n, n))
            return fnp.sum(solve(A, b, M=M, **kw)[0] ** 2)

        return of_data

    def dense_loss(matrix):
        return lambda d: fnp.sum(
            fnp.linalg.solve(fnp.at(np.zeros((n, n)))[matrix.row, matrix.col].add(d), b) ** 2
        )

    spd = sp.coo_array(A + A.T)
    for solve, matrix in [(fsla.gmres, A), (fsla.cg, spd)]:
        got = fgrad.grad(loss(solve, matrix, ilu_operator(matrix), rtol=1e-13))(matrix.data)
        _close(got, fgrad.grad(dense_loss(matrix))(matrix.data), 1e-8)
    # A near-exact M: the solve converges in one restart cycle; without M the adjoint's
    # does not (a diagonal spread over six decades)
    hard = sp.coo_array(A + sp.diags_array(np.logspace(0, 6, n)))
    exact = spla.LinearOperator((n, n), matvec=spla.splu(sp.csc_array(hard)).solve)
    short = loss(fsla.gmres, hard, exact, rtol=1e-10, maxiter=1, restart=5)
    assert np.isfinite(short(hard.data))
    with pytest.raises(
        RuntimeError, match=r"without the preconditioner M \(LinearOperator.*rmatvec="
    ):
        fgrad.grad(short)(hard.data)


def test_the_users_data_is_never_changed():
    d, b = DATA.copy(), B0.copy()
    fgrad.grad(lambda d, b: fnp.sum(fsla.spsolve(_A(d), b)), argnums=(0, 1))(d, b)
    np.testing.assert_array_equal(d, DATA)
    np.testing.assert_array_equal(b, B0)


def test_a_scipy_matrix_times_is_its_matrix_product():
    # SciPy's spmatrix keeps np.matrix's `*`: the matrix product, in both orders
    M = sp.csr_matrix(A_DENSE)
    y = RNG.standard_normal(6)
    _close(
        fgrad.grad(lambda x: fnp.sum(fnp.sin(M * x)))(X0),
        fgrad.grad(lambda x: fnp.sum(fnp.sin(A_DENSE @ x)))(X0),
    )
    _close(
        fgrad.grad(lambda y: fnp.sum(fnp.sin(y * M)))(y),
        fgrad.grad(lambda y: fnp.sum(fnp.sin(y @ A_DENSE)))(y),
    )


@pytest.mark.parametrize("op", ["x * A", "x + A", "A + x", "x - A", "x < A", "x / A"])
def test_elementwise_operators_with_a_scipy_array_are_refused(op):
    B = sp.csr_array(np.eye(4))
    f = {
        "x * A": lambda x: x * B,
        "x + A": lambda x: x + B,
        "A + x": lambda x: B + x,
        "x - A": lambda x: x - B,
        "x < A": lambda x: x < B,
        "x / A": lambda x: x / B,
    }[op]
    with pytest.raises(TypeError, match=r"\(4, 4\).*float64.*matrix products only"):
        fgrad.grad(lambda x: fnp.sum(f(x)))(X0)


def test_sums_of_sparse_arrays_and_their_gradients():
    A = fsp.csr_array((D0, INDICES, INDPTR), shape=(4, 3))
    B = fsp.diags([np.ones(3), 2.0], [0, 1], shape=(4, 3))
    _close((A + B).toarray(), A.toarray() + B.toarray())
    _close((A - B).toarray(), A.toarray() - B.toarray())
    x = RNG.standard_normal(3)

    def f(d, e):
        A = fsp.csr_array((d, INDICES, INDPTR), shape=(4, 3))
        B = fsp.diags([e], [0], shape=(4, 3))
        return fnp.sin((A - 2.0 * B) @ x)

    check_grads(f, (D0, np.ones(3)), order=2, modes=("fwd", "rev"))
    with pytest.raises(TypeError, match=r"shape \(4, 3\)"):
        A + np.ones((4, 3))


@pytest.mark.parametrize("side", ["c * A", "A * c"])
def test_a_traced_scalar_times_a_sparse_array_on_either_side(side):
    """`c * A` for a traced c is A's own product, as `A * c` is: under grad a Box wrapped the
    SparseArray, under jit the product raised NumPy's ufunc refusal, and under vmap c's batch
    was taken for a matrix. Compared with the dense product's derivatives (closed forms)."""
    d = np.array([1.0, 2.0, 3.0])
    A = fsp.diags([d], [0])
    x = np.array([1.0, -2.0, 0.5])
    product = (lambda c: c * A) if side == "c * A" else (lambda c: A * c)
    f = lambda c: fnp.sum(fnp.sin(product(c) @ x))
    want = lambda c: np.sum(np.sin(c * d * x))
    dwant = lambda c: np.sum(np.cos(c * d * x) * d * x)
    assert isinstance(product(2.0), fsp.SparseArray)
    _close(fgrad.grad(f)(2.0), dwant(2.0))
    _close(fgrad.jit(f)(2.0), want(2.0))
    _close(fgrad.jit(fgrad.grad(f))(2.0), dwant(2.0))
    cs = np.array([2.0, 3.0])
    _close(fgrad.vmap(f)(cs), [want(c) for c in cs])
    _close(fgrad.vmap(fgrad.grad(f))(cs), [dwant(c) for c in cs])
    _close(fgrad.jvp(f, (2.0,), (1.0,))[1], dwant(2.0))
    # no sum of a number and a sparse array (as eagerly): Python's TypeError, for either side
    for g in (lambda c: c + A, lambda c: A + c):
        with pytest.raises(TypeError):
            g(2.0)
        with pytest.raises(TypeError):
            fgrad.grad(lambda c: g(c).sum())(2.0)


def test_splu_solves_with_the_conjugate_transpose():
    d = DATA * (1.0 + 0.5j)
    lu = fsla.splu(_A(d))
    dense = _S.toarray() * (1.0 + 0.5j)
    _close(lu.solve(B0, trans="H"), np.linalg.solve(dense.conj().T, B0))
    # a real matrix: 'H' is 'T', with the same factorisation
    _close(fsla.splu(_A(DATA)).solve(B0, trans="H"), np.linalg.solve(_S.toarray().T, B0))
    check_grads(lambda b: fsla.splu(_A(d)).solve(b, trans="H"), (B0 + 0j,), order=2)


def test_a_sparse_array_as_an_argument_of_jit():
    A = fsp.diags([np.array([2.0, 3.0, 4.0]), 0.5], [0, 1])
    b = np.ones(3)

    def loss(A, b):
        return fnp.sum(fsla.spsolve(A, b) ** 2)

    solve = fgrad.jit(lambda A, b: fsla.spsolve(A, b))
    g = fgrad.jit(fgrad.grad(loss))
    for scale in (1.0, 2.0, 0.5):  # replayed with other data: refactorised, never stale
        _close(solve(scale * A, b), fsla.spsolve(scale * A, b))
        _close(g(scale * A, b).data, fgrad.grad(loss)(scale * A, b).data)


def test_a_float32_right_hand_side_gets_a_float32_gradient():
    # The solves and expm_multiply run in the matrix's float64 (SciPy's result is float64),
    # but the gradient of a float32 input is float32 in fgrad, as a broadcast's cast is undone
    # (it was float64 here).
    A = sp.csr_array(np.array([[2.0, 0.5], [0.2, 1.0]]))
    v = np.float32([1.0, 2.0])
    for solve in (
        fsla.spsolve,
        fsla.expm_multiply,
        lambda A, b: fsla.splu(A).solve(b),
        lambda A, b: fsla.gmres(A, b)[0],
    ):
        g = fgrad.grad(lambda b, f=solve: fnp.sum(f(A, b)))(v)
        assert g.dtype == np.float32
        want = fgrad.grad(lambda b, f=solve: fnp.sum(f(A, b)))(v.astype(np.float64))
        np.testing.assert_allclose(g, want, rtol=1e-6)


def test_diags_sizes_and_checks_as_scipy_does():
    # the size came from the longest diagonal (SciPy: the first, with its offset), so
    # diags([ones(3), 2*ones(3)], [0, 1]) raised blaming the diagonal at offset 0; a diagonal
    # of one element is broadcast; repeated offsets were summed and an offset outside the
    # shape made an empty diagonal, where SciPy raises
    cases = [
        ([np.ones(3), 2.0 * np.ones(3)], [0, 1]),
        (np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), [0, 1]),
        ([np.ones(2), 2.0 * np.ones(3)], [1, 0]),
        ([np.ones(3), np.array([2.0])], [0, 1]),
        ([2.0, np.ones(3)], [1, 0]),
        ([np.arange(4.0)], [-2]),
    ]
    for d, k in cases:
        np.testing.assert_array_equal(fsp.diags(d, k).toarray(), sp.diags(d, k).toarray())
    with pytest.raises(ValueError, match=r"offsets \[0, 0\] repeat one"):
        fsp.diags([np.ones(3), np.ones(3)], [0, 0])
    for k in (3, -3):  # an empty diagonal, as SciPy's
        np.testing.assert_array_equal(
            fsp.diags_array(np.ones(3), offsets=k, shape=(3, 3)).toarray(),
            sp.diags_array(np.ones(3), offsets=k, shape=(3, 3)).toarray(),
        )
    with pytest.raises(ValueError, match=r"offset 5 is outside the shape \(3, 3\)"):
        fsp.diags_array([np.ones(3), np.ones(3)], offsets=[0, 5], shape=(3, 3))


@pytest.mark.filterwarnings("ignore:Input has data type:FutureWarning")  # SciPy's, for 3
@pytest.mark.parametrize("x", [2.0, np.float32(2.0), np.array(2.0), 3])
def test_diags_of_a_single_number_is_refused_as_scipy_refuses_it(x):
    """SciPy raises TypeError for a number given as the diagonals (it needs one 1-d diagonal
    or a sequence of them); fgrad made a 1 x 1 array of it, or repeated it along the
    diagonal of `shape`."""
    for kwargs in ({}, {"shape": (3, 3)}):
        with pytest.raises(TypeError):
            sp.diags(x, **kwargs)
        with pytest.raises(TypeError, match=r"diagonals is a single number \(shape \(\)"):
            fsp.diags(x, **kwargs)
        with pytest.raises(TypeError, match=r"\[value\] repeats a value"):
            fsp.diags_array(x, **kwargs)
    # a one-element diagonal is SciPy's broadcast, an integer one SciPy's float64
    want = sp.diags_array([x], shape=(3, 3)).toarray()
    got = fsp.diags_array([x], shape=(3, 3)).toarray()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_sparse_matrixs_elementwise_operation_on_a_traced_value_says_what_to_do():
    # A * x, A / x and A.multiply(x) for a SciPy sparse A gave the generic "Building a NumPy
    # array" message, pointing into SciPy's code; x * A and A - x had the sparse advice
    A = sp.csr_array(np.eye(2))
    for f in (lambda x: A * x, lambda x: A / x, lambda x: A.multiply(x)):
        with pytest.raises(TypeError, match=r"scipy.sparse matrix's operation .*A @ x.*toarray"):
            fgrad.grad(lambda x: f(x).sum())(np.ones(2))
