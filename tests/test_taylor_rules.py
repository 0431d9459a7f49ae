"""Every direct Taylor rule (`fgrad.taylor.rules`) against the general rule.

A case is a small call that reaches one primitive with a series. `fgrad.jet` runs it to order
5 twice: with every direct rule, and with the primitive's own rule taken out of the registry
(so that primitive takes `fgrad.taylor.general_rule`, built from its forward rule); the two
must agree to 1e-10. Every application of a direct rule is watched: its coefficients must have
the shape and dtype of its value (float32 inputs too). A coverage test fails when a registered
rule has no case, or when its case does not reach it.
"""

import math

import numpy as np
import pytest
import scipy.sparse

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.linalg as sla
import fgrad.scipy.signal as ssignal
import fgrad.scipy.sparse as fsparse
import fgrad.scipy.special as sp
from fgrad import custom, taylor
from fgrad.core import Primitive, add_any, dtype_of, shape_of
from fgrad.numpy import (
    arrays,
    creation,
    elementwise,
    fft,
    linalg as la,
    products,
    reductions,
    shaping,
    signal,
    statistics as stats,
    ufuncs,
)
from fgrad.scipy import linalg as scipy_linalg, signal as scipy_signal, special
from fgrad.scipy.sparse import _sparse_matmul_p
from fgrad.scipy.sparse.linalg import (
    _expm_p,
    _it_solve_p,
    _lu_solve_p,
    cg as _cg,
    expm_multiply as _expm_multiply,
    spsolve as _spsolve,
)
from fgrad.scipy.stats import beta as stats_beta, poisson as stats_poisson, t as stats_t

ORDER = 5
rng = np.random.default_rng(17)


def _prim(p):
    return p if isinstance(p, Primitive) else p.primitive


def _normal(*shape):
    return rng.standard_normal(shape)


def _uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape)


def _spd(n):
    m = _normal(n, n)
    return m @ m.T + n * np.eye(n)


def _upper(n):
    return np.triu(_normal(n, n)) + 3.0 * np.eye(n)


X = _normal(3)
M = _normal(2, 3)
A = _spd(3)
U = _upper(3)
MASK = np.array([True, False, True])
ROWS = np.array([2, 0, 2])


def _grad_of(f):
    """The gradient of f as a function: reaches the transposes used only by reverse rules."""
    return fgrad.grad(f)


# a sparse symmetric positive definite matrix (SciPy's, and fgrad.scipy.sparse's of its data)
SPARSE_A = scipy.sparse.csr_array(A)


def _csr(data):
    return fsparse.csr_array((data, SPARSE_A.indices, SPARSE_A.indptr), shape=SPARSE_A.shape)


# (primitive, function, arguments): `fgrad.jet` takes the series of every argument.
CASES = [
    # arithmetic and elementwise (fgrad.numpy.elementwise, ufuncs)
    (add_any, _grad_of(lambda y: fnp.sum(y * y * y)), (X,)),
    (elementwise.add, lambda x, y: fnp.add(x, y), (M, X)),
    (elementwise.add_operator, lambda x, y: x + y, (M, X)),
    (elementwise.subtract, lambda x, y: fnp.subtract(x, y), (M, X)),
    (elementwise.subtract_operator, lambda x, y: x - y, (M, X)),
    (elementwise.multiply, lambda x, y: fnp.multiply(x, y), (M, X)),
    (elementwise.multiply_operator, lambda x, y: x * y, (M, X)),
    (elementwise.divide, lambda x, y: fnp.divide(x, y), (M, _uniform(1, 2, 3))),
    (elementwise.divide_operator, lambda x, y: x / y, (M, _uniform(1, 2, 3))),
    (elementwise.power, lambda x: fnp.power(x, 2.5), (_uniform(1, 2, 3),)),
    (elementwise.power_operator, lambda x: x**3, (X,)),
    (elementwise.power, lambda x, a: fnp.power(x, a), (_uniform(0.5, 2, 3), X)),  # exp(a log x)
    (elementwise.power_operator, lambda a: 1.7**a, (X,)),
    (elementwise.float_power_values, lambda x, a: fnp.float_power(x, a), (_uniform(0.5, 2, 3), X)),
    (elementwise.power, lambda x: fnp.power(x, np.array([2.0, 1.0, 0.0])), (np.zeros(3),)),
    (elementwise.negative, lambda x: -x, (X,)),
    (elementwise._where_p, lambda x, y: fnp.where(MASK, x, y), (X, M)),
    (elementwise.sin, fnp.sin, (X,)),
    (elementwise.cos, fnp.cos, (X,)),
    (elementwise.tan, fnp.tan, (_uniform(-1, 1, 3),)),
    (elementwise.tanh, fnp.tanh, (X,)),
    (elementwise.exp, fnp.exp, (X,)),
    (elementwise.expm1, fnp.expm1, (X,)),
    (ufuncs._ldexp, lambda x: fnp.ldexp(x * x, np.array([1, -2, 3])), (X,)),
    (elementwise._conj, lambda x: fnp.conj(x * (1 + 0.5j)), (X,)),
    (elementwise._real, lambda x: fnp.real(x * x * (1 + 0.5j)), (X,)),
    (elementwise._imag, lambda x: fnp.imag(x * x * (1 + 0.5j)), (X,)),
    (elementwise.log, fnp.log, (_uniform(0.5, 2, 3),)),
    (elementwise.log1p, fnp.log1p, (_uniform(0.5, 2, 3),)),
    (elementwise.sqrt, fnp.sqrt, (_uniform(0.5, 2, 3),)),
    (ufuncs.arcsin, fnp.arcsin, (_uniform(-0.8, 0.8, 3),)),
    (ufuncs.arccos, fnp.arccos, (_uniform(-0.8, 0.8, 3),)),
    (ufuncs.arctan, fnp.arctan, (X,)),
    (ufuncs.arcsinh, fnp.arcsinh, (X,)),
    (ufuncs.arccosh, fnp.arccosh, (_uniform(1.5, 3, 3),)),
    (ufuncs.arctanh, fnp.arctanh, (_uniform(-0.8, 0.8, 3),)),
    # the slopes of arcsin, arccos, arctanh (1 - x**2) and arccosh (sqrt(x**2 - 1)), real x
    (ufuncs._real_one_minus_square, ufuncs._real_one_minus_square, (_uniform(-0.8, 0.8, 3),)),
    (
        ufuncs._real_sqrt_square_minus_one,
        ufuncs._real_sqrt_square_minus_one,
        (_uniform(1.5, 3, 3),),
    ),
    (ufuncs.sinh, fnp.sinh, (X,)),
    (ufuncs.cosh, fnp.cosh, (X,)),
    (ufuncs.exp2, fnp.exp2, (X,)),
    (ufuncs.log2, fnp.log2, (_uniform(0.5, 2, 3),)),
    (ufuncs.log10, fnp.log10, (_uniform(0.5, 2, 3),)),
    (ufuncs.square, fnp.square, (X,)),
    (ufuncs.reciprocal, fnp.reciprocal, (_uniform(1, 2, 3),)),
    (ufuncs.deg2rad, fnp.deg2rad, (X,)),
    (ufuncs.degrees, fnp.degrees, (X,)),
    (ufuncs.rad2deg, fnp.rad2deg, (X,)),
    (ufuncs.radians, fnp.radians, (X,)),
    (ufuncs._sinc_k, fnp.sinc, (np.array([0.0, 0.3, -2.7]),)),  # 0: the series branch
    # shapes, sums and indexing (fgrad.numpy.shaping)
    (shaping._reshape_p, lambda x: fnp.reshape(x, (3, 2)), (M,)),
    (shaping.zero_with_derivatives_of, lambda x, c: fnp.max(x, initial=c), (X, np.float64(-5.0))),
    (shaping._transpose_p, fnp.transpose, (M,)),
    (arrays._roll_p, lambda x: fnp.roll(x * x, (1, 2), (0, 1)), (M,)),
    (shaping._broadcast_to_p, lambda x: fnp.broadcast_to(x, (2, 3)), (X,)),
    (shaping._sum_p, lambda x: fnp.sum(x, axis=0), (M,)),
    (shaping._sum_kw_p, lambda x: fnp.sum(x, axis=1, initial=2.0, where=MASK), (M,)),
    (shaping._spread_p, _grad_of(lambda y: fnp.sum(y, where=MASK) ** 3), (X,)),
    # a sum whose mask is traced takes it as an operand (here called directly with a plain one)
    (
        shaping._sum_where_p,
        lambda x: shaping._sum_where_p(
            x, np.broadcast_to(MASK, (2, 3)), axis=(1,), keepdims=False, dtype=None, initial=2.0
        ),
        (M,),
    ),
    (
        shaping._spread_where_p,
        _grad_of(
            lambda y: (
                shaping._sum_where_p(
                    y, MASK, axis=(0,), keepdims=False, dtype=None, initial=shaping.NO_VALUE
                )
                ** 3
            )
        ),
        (X,),
    ),
    (shaping._astype_p, lambda x: fnp.astype(x, np.float32), (X,)),
    (shaping._asarray_p, lambda x: fnp.asarray(x[0]) * x, (X,)),
    (shaping.rechunk_p, lambda x: shaping.rechunk_p(x * x, chunks=((3,),)), (X,)),
    (shaping._getitem_p, lambda x: x[1, ::2], (M,)),
    (shaping._leading_outermost_p, lambda x: shaping._leading_outermost_p(x.T * x.T, lead=1), (M,)),
    (
        shaping._take_rows_p,
        lambda x: shaping._take_rows_p(x * x, idx=np.array([2, 0, 2]), axis=0, lead=1),
        (M,),
    ),
    (shaping._index_add_p, lambda x, v: fnp.at(x)[ROWS].add(v), (X, _normal(3))),
    (shaping._index_set_p, lambda x, v: fnp.at(x)[1].set(v), (M, X)),
    (shaping._stack_p, lambda x, y: fnp.stack([x, y, x]), (X, X[::-1].copy())),
    (shaping._concatenate_p, lambda x, y: fnp.concatenate([x, y], axis=1), (M, M[:, :2].copy())),
    (
        shaping._gather_p,
        lambda x: fgrad.vmap(lambda r, i: r[i])(x, np.array([[0, 2], [1, 1]])),
        (M,),
    ),
    (
        shaping._scatter_add_p,
        lambda x, v: fgrad.vmap(lambda r, i, w: r.at[i].add(w))(x, np.array([[0, 2], [1, 1]]), v),
        (M, _normal(2, 2)),
    ),
    # reductions, products, FFTs, statistics, signals
    (reductions.max.primitive, lambda x: fnp.max(x, axis=1), (M,)),
    (reductions.min.primitive, lambda x: fnp.min(x, axis=0, keepdims=True), (M,)),
    (products.matmul, lambda x, y: x @ y, (M, _normal(3, 4))),
    (products._scalar_dot, lambda s, x: fnp.dot(s, x), (np.array(1.3), M)),  # NumPy's own dot
    (products._einsum_p, lambda a, b, c: fnp.einsum("ij,jk,k->i", a, b, c), (M, A, X)),
    (products._vecdot_p, fnp.vecdot, (M, X)),
    (products._matvec_p, fnp.matvec, (M, X)),
    (products._vecmat_p, fnp.vecmat, (_normal(2), M)),
    (fft._c2c_p, fnp.fft.fft, (X,)),
    (fft._rfft_p, fnp.fft.rfft, (_normal(4),)),
    (fft._irfft_p, lambda x: fnp.fft.irfft(x.astype(complex)), (X,)),
    (stats._cumsum_p, lambda x: fnp.cumsum(x, axis=1), (M,)),
    (stats._bincount_p, lambda w: fnp.bincount(np.array([0, 2, 2]), w), (X,)),
    (stats._histogram_p, lambda w: fnp.histogram(np.array([0.1, 0.5, 0.9]), 2, weights=w)[0], (X,)),
    (signal._conv_full, fnp.convolve, (X, _normal(2))),
    (signal._unwrap_p, fnp.unwrap, (np.array([0.0, 3.0, 6.5, 1.0]),)),
    (signal._unit_clip_p, fnp.corrcoef, (_normal(3, 5),)),
    (creation._linspace_p, lambda a, b: fnp.linspace(a, b, 4), (np.float64(0.5), X)),
    # linear algebra
    (la._read_triangle, lambda a: fnp.linalg.eigvalsh(a), (A,)),
    (la._solve_p, fnp.linalg.solve, (A, _normal(3, 2))),
    (la._inv_p, fnp.linalg.inv, (A,)),
    (la._cholesky_p, lambda a: fnp.linalg.cholesky(a, upper=True), (A,)),
    (
        scipy_linalg._trsolve_p,
        lambda a, b: sla.solve_triangular(a, b, trans=1, lower=True, unit_diagonal=True),
        (_upper(3).T.copy(), _normal(3, 2)),
    ),
    (
        scipy_linalg._banded_p,
        lambda ab, b: sla.solve_banded((1, 1), ab, b),
        (
            np.array([[0.0, 1.0, 0.5], [4.0, 5.0, 4.5], [0.5, 1.0, 0.0]]),
            _normal(3, 2),
        ),
    ),
    (scipy_linalg._sylvester_p, sla.solve_sylvester, (_upper(3), -_upper(2), _normal(3, 2))),
    (
        scipy_linalg._trisylv_p,
        lambda t, c: scipy_linalg._trisylv_p(t, c, transpose=False),
        (np.triu(_normal(3, 3)) + np.diag([1.0, 2.0, 3.5]), _normal(3, 3)),
    ),
    (scipy_linalg._sqrtm_p, sla.sqrtm, (A,)),
    (scipy_linalg._expm_p, sla.expm, (0.3 * _normal(3, 3),)),
    (scipy_signal._conv_p, ssignal.convolve, (X, _normal(2))),
    (
        scipy_signal._conv2d_p,
        lambda x, k: ssignal.convolve2d(x, k, mode="same", fillvalue=1.5),
        (_normal(3, 3), _normal(2, 2)),
    ),
    # special functions
    (special._expit_p, sp.expit, (3.0 * X,)),
    (special._logit_p, sp.logit, (_uniform(0.2, 0.8, 3),)),
    (special._log_expit_p, sp.log_expit, (3.0 * X,)),
    (special._erf_p, sp.erf, (X,)),
    (special._erfc_p, sp.erfc, (X,)),
    (special._erfinv_p, sp.erfinv, (_uniform(-0.8, 0.8, 3),)),
    (special._erfcinv_p, sp.erfcinv, (_uniform(0.2, 1.8, 3),)),
    (special._erfcx_p, sp.erfcx, (X,)),
    (special._entr_p, sp.entr, (_uniform(0.5, 2, 3),)),
    (special._ndtr_p, sp.ndtr, (X,)),
    (special._ndtri_p, sp.ndtri, (_uniform(0.1, 0.9, 3),)),
    (special._log_ndtr_p, sp.log_ndtr, (np.array([-30.0, -1.0, 2.0]),)),
    (special._mills_p, special._mills_p, (np.array([-30.0, -1.0, 2.0]),)),
    (special._mills_excess_p, special._mills_excess_p, (np.array([-30.0, -1.0, 2.0]),)),
    (special._exp1_p, sp.exp1, (_uniform(0.5, 2, 3),)),
    (special._expi_p, sp.expi, (_uniform(0.5, 2, 3),)),
    (special._polygamma_p, lambda x: sp.polygamma(2, x), (_uniform(0.5, 3, 3),)),
    (
        special._hurwitz_zeta_p,
        lambda q: sp.zeta(np.array([3.0, 2.5, 7.0]), q),
        (_uniform(0.5, 3, 3),),
    ),
    (special._psi_p, sp.digamma, (_uniform(0.5, 3, 3),)),
    (special._gammaln_p, sp.gammaln, (_uniform(0.5, 3, 3),)),
    (special._gamma_p, sp.gamma, (_uniform(0.5, 3, 3),)),
    (special._rgamma_p, sp.rgamma, (_uniform(0.5, 3, 3),)),
    (special._softmax_p, lambda x: sp.softmax(x, axis=1), (M,)),
    (special._log_softmax_p, lambda x: sp.log_softmax(x, axis=0), (M,)),
    (special._logsumexp_p, lambda x: sp.logsumexp(x, axis=1), (M,)),
    (special._bessel_p, lambda x: sp.jv(1.5, x), (_uniform(0.5, 3, 3),)),
    (special._yn_p, lambda x: sp.yn(2, x), (_uniform(0.5, 3, 3),)),
    (special._j0_p, sp.j0, (X,)),
    (special._j1_p, sp.j1, (X,)),
    (special._y0_p, sp.y0, (_uniform(0.5, 3, 3),)),
    (special._y1_p, sp.y1, (_uniform(0.5, 3, 3),)),
    (special._i0_p, sp.i0, (X,)),
    (special._i1_p, sp.i1, (X,)),
    (special._i0e_p, sp.i0e, (X,)),
    (special._i1e_p, sp.i1e, (X,)),
    # the CDFs of fgrad.scipy.stats
    (stats_beta._I, lambda z: stats_beta._I(z, 2.0, 3.5), (_uniform(0.2, 0.8, 3),)),
    (stats_beta._Ic, lambda z: stats_beta._Ic(z, 2.0, 3.5), (_uniform(0.2, 0.8, 3),)),
    (stats_poisson._P, lambda mu: stats_poisson._P(mu, 3.0), (_uniform(1, 4, 3),)),
    (stats_poisson._Q, lambda mu: stats_poisson._Q(mu, 3.0), (_uniform(1, 4, 3),)),
    (stats_t._stdtr, lambda z: stats_t._stdtr(z, 4.5), (X,)),
    # fgrad.scipy.sparse: a constant SciPy matrix times a series, and the solves by data
    (_sparse_matmul_p, lambda x: SPARSE_A @ x, (X,)),
    (_lu_solve_p, lambda d, b: _spsolve(_csr(d), b), (SPARSE_A.data, X)),
    (_it_solve_p, lambda d, b: _cg(_csr(d), b, rtol=1e-13)[0], (SPARSE_A.data, X)),
    (_expm_p, lambda b: _expm_multiply(_csr(0.3 * SPARSE_A.data), b), (X,)),
]

# More calls of some primitives: other parameters, other inputs with a series.
MORE = [
    (la._solve_p, lambda b: fnp.linalg.solve(A, b), (_normal(3, 2),)),
    (la._cholesky_p, fnp.linalg.cholesky, (A,)),
    (scipy_linalg._trsolve_p, lambda b: sla.solve_triangular(U, b), (_normal(3, 2),)),
    (scipy_linalg._banded_p, lambda b: sla.solve_banded((0, 0), np.ones((1, 3)), b), (X,)),
    (scipy_linalg._sylvester_p, lambda q: sla.solve_sylvester(A, A, q), (_normal(3, 3),)),
    (products._einsum_p, lambda a: fnp.einsum("ii->", a), (A,)),
    (products._einsum_p, lambda a, b: fnp.tensordot(a, b, 1), (M, _normal(3, 2))),
    (special._bessel_p, lambda x: sp.iv(-0.5, x), (_uniform(0.5, 3, 3),)),
    (special._bessel_p, lambda x: sp.kv(1.0, x), (_uniform(0.5, 3, 3),)),
    (special._bessel_p, lambda x: sp.yv(2, x), (_uniform(0.5, 3, 3),)),
    (special._bessel_p, lambda x: sp.ive(1, x), (np.array([-2.0, 0.5, 3.0]),)),
    (special._bessel_p, lambda x: sp.kve(0.5, x), (_uniform(0.5, 3, 3),)),
    (special._logsumexp_p, lambda x: sp.logsumexp(x, axis=0, keepdims=True), (M,)),
    (special._psi_p, sp.digamma, (np.array([0.5 + 1.0j, 2.0 - 0.5j]),)),
    (special._expit_p, sp.expit, (np.array([-40.0, 0.0, 40.0]),)),
]


def _label(case):
    return _prim(case[0]).name


def _series(args, seed):
    r = np.random.default_rng(seed)
    out = []
    for a in args:
        dtype = np.result_type(a)
        terms = [r.standard_normal(np.shape(a)) for _ in range(ORDER)]
        if dtype.kind == "c":
            terms = [t + 1j * r.standard_normal(np.shape(a)) for t in terms]
        out.append([np.asarray(t, dtype)[()] for t in terms])
    return tuple(out)


def _watched(rules, reached, problems):
    """`rules` with each rule recording that it ran, and checking the shape and dtype of the
    coefficients it returns against its value's."""

    def watch(prim, rule):
        def watched(primals, series, **params):
            reached.add(prim)
            ans, out = rule(primals, series, **params)
            pairs = zip(ans, out) if prim.multiple_results else [(ans, out)]
            for value, coefficients in pairs:
                for k, c in enumerate(coefficients or ()):
                    if c is None:
                        continue
                    got = (shape_of(c), dtype_of(c))
                    want = (shape_of(value), dtype_of(value))
                    if got != want:
                        problems.append(f"{prim.name} coefficient {k + 1}: {got}, value {want}")
            return ans, out

        return watched

    return {prim: watch(prim, rule) for prim, rule in rules.items()}


def _run(fun, args, rules, seed=0):
    """jet of fun to ORDER with the registry `rules`: (outputs, rules reached, problems)."""
    saved = dict(taylor.rules)
    reached, problems = set(), []
    watched = _watched(rules, reached, problems)
    try:
        taylor.rules.clear()
        taylor.rules.update(watched)
        value, series = fgrad.jet(fun, args, _series(args, seed))
    finally:
        taylor.rules.clear()
        taylor.rules.update(saved)
    return (value, series), reached, problems


def _assert_close(got, want, what):
    (value, series), (value0, series0) = got, want
    rtol = 1e-10 if np.finfo(np.result_type(value0)).bits == 64 else 1e-5
    np.testing.assert_allclose(value, value0, rtol=rtol * 1e-3, err_msg=what)
    for k, (c, c0) in enumerate(zip(series, series0)):
        scale = max(float(np.max(np.abs(c0), initial=0.0)), 1e-300)
        np.testing.assert_allclose(
            c, c0, rtol=rtol, atol=rtol * scale, err_msg=f"{what}, term {k + 1}"
        )


@pytest.mark.parametrize("case", CASES + MORE, ids=_label)
def test_direct_rule_agrees_with_the_general_rule(case):
    prim, fun, args = _prim(case[0]), case[1], case[2]
    direct, reached, problems = _run(fun, args, taylor.rules)
    assert prim in reached, f"the case of {prim.name} does not reach its rule"
    assert not problems, problems
    without = {p: r for p, r in taylor.rules.items() if p is not prim}
    general, _, _ = _run(fun, args, without)
    _assert_close(direct, general, prim.name)
    untraced = fun(*args)
    assert np.shape(direct[0]) == np.shape(untraced)
    for c in direct[1]:
        assert (np.shape(c), np.result_type(c)) == (np.shape(untraced), np.result_type(untraced))


def _float32(args):
    return tuple(np.asarray(a, np.float32) if np.result_type(a) == np.float64 else a for a in args)


FLOAT32 = [*CASES, (elementwise._where_p, lambda x: fnp.where(MASK, x, 0.0), (X,))]


@pytest.mark.parametrize("case", FLOAT32, ids=_label)
def test_float32_coefficients_stay_float32(case):
    fun, args = case[1], _float32(case[2])
    (_, series), _, problems = _run(fun, args, taylor.rules)
    assert not problems, problems
    untraced = fun(*args)
    for c in series:
        assert (np.shape(c), np.result_type(c)) == (np.shape(untraced), np.result_type(untraced))


# fgrad's own rules, as its modules register them: other tests (and the docstring examples
# run in-process by test_docs.py) register primitives of their own ('double', 'twice'), which
# this check, run after them in the same worker, took for fgrad's
_FGRADS_RULES = frozenset(taylor.rules)


def test_every_direct_rule_has_a_case():
    cased = {_prim(case[0]) for case in CASES}
    # The custom calls' rules are the general rule with the user's tangent (custom_jvp's
    # rule, custom_vjp's bwd transposed) or the function itself (checkpoint): test_taylor.py
    # checks them against nested forward mode and closed forms.
    cased |= {custom.custom_jvp_call, custom.custom_vjp_call, custom.checkpoint_p}
    cased.add(custom.tap_cotangent_p)
    missing = sorted(p.name for p in _FGRADS_RULES if p not in cased)
    assert not missing, f"direct Taylor rules without a case in CASES: {missing}"


def test_the_check_catches_a_rule_slightly_wrong():
    prim = special._erf_p.primitive
    right = taylor.rules[prim]

    def wrong(primals, series):
        ans, out = right(primals, series)
        return ans, (*out[:-1], out[-1] * (1.0 + 1e-6))

    rules = {**taylor.rules, prim: wrong}
    got, _, _ = _run(sp.erf, (X,), rules)
    want, _, _ = _run(sp.erf, (X,), {p: r for p, r in taylor.rules.items() if p is not prim})
    with pytest.raises(AssertionError):
        _assert_close(got, want, "erf")


NESTED = [
    (lambda w, x: w @ x, (_normal(2, 3), X)),
    (lambda a, b: fnp.linalg.solve(a, b), (A, X)),
    (lambda a, b: fnp.einsum("ij,j->i", a, b), (M, X)),
    (lambda w, x: sp.expit(w @ x), (M, X)),
    (lambda w, x: sp.logsumexp(w * x, axis=1), (M, X)),
    (lambda w, x: sp.gammaln(2.0 + (w @ x) ** 2), (M, X)),
]


@pytest.mark.parametrize("fun, args", NESTED)
def test_grad_of_jet_through_direct_rules(fun, args):
    """The rules are written in fgrad operations: the gradient of a jet's top coefficient with
    respect to the point agrees between the direct rules and the general rule alone."""

    series = _series(args, 1)

    def top(*point):
        return fnp.sum(fgrad.jet(fun, point, series)[1][-1])

    direct = fgrad.grad(top)(*args)
    saved = dict(taylor.rules)
    try:
        taylor.rules.clear()
        general = fgrad.grad(top)(*args)
    finally:
        taylor.rules.clear()
        taylor.rules.update(saved)
    np.testing.assert_allclose(direct, general, rtol=1e-9, atol=1e-9 * np.max(np.abs(general)))


def test_laplacian_through_direct_rules_equals_the_trace_of_the_hessian():
    w1, w2 = _normal(3, 3), _normal(2, 3)

    def f(x):
        h = sp.expit(w1 @ x)
        return sp.logsumexp(w2 @ h) + fnp.sum(sp.erf(h) * fnp.linalg.solve(A, x))

    x = _normal(3)
    lap = fgrad.laplacian(f)(x)
    np.testing.assert_allclose(lap, np.trace(fgrad.hessian(f)(x)), rtol=1e-10)


def test_expit_keeps_its_digits_where_it_saturates():
    # expit'(40) = expit(40) expit(-40) ~ 4.2e-18, where 1 - expit(40) is 0 in float64
    _, (d1, d2) = fgrad.jet(sp.expit, (40.0,), ((1.0, 0.0),))
    e = math.exp(-40.0)
    np.testing.assert_allclose([d1, d2], [e, -e], rtol=1e-12)


@pytest.mark.parametrize("fun, args", NESTED)
def test_vmap_of_jet_through_direct_rules_equals_the_loop(fun, args):
    """The rules apply to values batched by `vmap` (one point per row)."""
    points = [tuple(a + 0.1 * k for a in args) for k in range(3)]
    series = _series(args, 2)

    def coefficients(*point):
        return fgrad.jet(fun, point, series)[1]

    batched = fgrad.vmap(coefficients)(*(np.stack(column) for column in zip(*points)))
    for k, c in enumerate(batched):
        loop = np.stack([coefficients(*p)[k] for p in points])
        np.testing.assert_allclose(c, loop, rtol=1e-12, atol=1e-12 * np.max(np.abs(loop)))


def test_order_20_of_special_functions_matches_closed_forms():
    """The rules hold at high order, where the general rule of a chain of special functions
    doubles its work per order: gammaln's 20th derivative is polygamma(19), and those of
    expit, erf and jv match mpmath's (40 digits)."""
    import mpmath
    import scipy.special

    np.testing.assert_allclose(
        fgrad.derivative(sp.gammaln, 20)(1.7), scipy.special.polygamma(19, 1.7), rtol=1e-12
    )
    with mpmath.workdps(40):
        for fn, reference, x in (
            (sp.expit, lambda z: 1 / (1 + mpmath.exp(-z)), 0.3),
            (sp.erf, mpmath.erf, 0.3),
            (lambda z: sp.jv(1.5, z), lambda z: mpmath.besselj(1.5, z), 2.3),
        ):
            want = float(mpmath.diff(reference, mpmath.mpf(x), 20))
            np.testing.assert_allclose(fgrad.derivative(fn, 20)(x), want, rtol=1e-10)


def test_order_20_of_sinc_and_hurwitz_zeta_is_fast_and_exact():
    """sinc's derivatives are its own series one order up, and zeta(x, q)'s in q are
    (-1)^n (x)_n zeta(x + n, q): each has a rule composing them, where the general rule
    recursed through that chain at 2^K cost (81 s and 32 s at order 20). mpmath, 40 digits;
    sinc at 0 against its series sum_n (-1)^n (pi x)^(2n) / (2n + 1)!."""
    import time

    import mpmath

    with mpmath.workdps(40):
        for fn, reference, x in (
            (fnp.sinc, lambda z: mpmath.sinc(mpmath.pi * z), 0.3),
            (lambda q: sp.zeta(3.0, q), lambda q: mpmath.zeta(3, q), 1.3),
        ):
            start = time.perf_counter()
            got = fgrad.derivative(fn, 20)(x)
            assert time.perf_counter() - start < 0.5
            want = float(mpmath.diff(reference, mpmath.mpf(x), 20))
            np.testing.assert_allclose(got, want, rtol=1e-12)
    at_zero = math.factorial(20) * math.pi**20 / math.factorial(21)  # (-1)^10 pi^20 20! / 21!
    np.testing.assert_allclose(fgrad.derivative(fnp.sinc, 20)(0.0), at_zero, rtol=1e-13)
    np.testing.assert_allclose(fgrad.derivative(fnp.sinc, 19)(0.0), 0.0, atol=0.0)
