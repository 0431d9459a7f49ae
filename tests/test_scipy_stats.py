"""fgrad.scipy.stats: values against SciPy, derivatives against closed forms and mpmath,
conventions outside the support (-inf / 0 with zero, not nan, gradients), the gamma and chi2
CDFs in their shape parameter against mpmath (to order 2, in the log tails too), those of t
and beta in theirs against mpmath, and argument errors. Gradients
to order 2 in both modes are in the gradient table (tests/rows_scipy_stats.py)."""

import math
import time
import warnings

import mpmath
import numpy as np
import pytest
import scipy.stats as ss

import fgrad
import fgrad.scipy.stats as fst
from fgrad import grad, jacfwd, jacrev

X = np.array([-1.0, 0.0, 0.1, 0.5, 1.0, 2.0, 2.6, 5.0])
UNIVARIATE = [  # (name, shape parameters, loc, scale)
    ("norm", (), 0.1, 1.5),
    ("expon", (), 0.1, 1.5),
    ("gamma", (2.5,), 0.1, 1.5),
    ("gamma", (1.0,), 0.0, 1.5),
    ("gamma", (0.5,), 0.0, 1.0),
    ("chi2", (3.0,), 0.1, 1.5),
    ("t", (3.0,), 0.1, 1.5),
    ("beta", (2.0, 3.0), -0.5, 3.0),
    ("beta", (1.0, 1.0), 0.0, 2.0),
    ("beta", (0.5, 0.7), 0.0, 1.0),
]
FUNCTIONS = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


@pytest.mark.parametrize("name,shapes,loc,scale", UNIVARIATE)
@pytest.mark.parametrize("fname", FUNCTIONS)
def test_values_match_scipy(name, shapes, loc, scale, fname):
    ours = getattr(getattr(fst, name), fname)(X, *shapes, loc, scale)
    theirs = getattr(getattr(ss, name), fname)(X, *shapes, loc, scale)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("fname", ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"])
@pytest.mark.parametrize("mu,loc", [(2.5, 1), (0.0, 0), (40.0, 0)])
def test_poisson_values_match_scipy(fname, mu, loc):
    k = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 7.0, 30.0])
    # (near 0 the logs are log1p of the complement, where SciPy's log of a value near 1 is
    # off by up to half an ulp of 1)
    atol = 1.2e-16 if fname in ("logcdf", "logsf") else 1e-300
    np.testing.assert_allclose(
        getattr(fst.poisson, fname)(k, mu, loc),
        getattr(ss.poisson, fname)(k, mu, loc),
        rtol=1e-12,
        atol=atol,
    )


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (SciPy's own, at nan)
def test_poisson_log_cdfs_at_the_ends_of_mu_are_scipys_to_the_sign_of_zero():
    """At mu = inf the stable logs gave nan (inf - inf) where SciPy gives -inf and 0; at
    mu = 0 logcdf gave -0.0 (log1p(-0.0)) for SciPy's 0.0."""
    for fname in ("logcdf", "logsf"):
        for k in (0, 3, -1, 2.5):
            for mu in (0.0, 2.0, np.inf, np.nan):
                ours = getattr(fst.poisson, fname)(k, mu)
                theirs = getattr(ss.poisson, fname)(k, mu)
                np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=1e-300)
                assert np.signbit(ours) == np.signbit(theirs) or np.isnan(theirs)
    assert fgrad.grad(fst.poisson.logcdf, argnums=1)(0, 0.0) == -1.0  # -pmf(0, 0)


@pytest.mark.parametrize(
    "fname,k,mu",
    [
        ("logcdf", 0, 1000.0),  # -mu
        ("logcdf", 5, 1000.0),
        ("logcdf", 10, 1e4),
        ("logcdf", 100, 1.0),  # -P(101, 1): SciPy's 0
        ("logsf", 5000, 10.0),
        ("logsf", 50, 10.0),
        ("logcdf", 3, 2.0),
    ],
)
def test_poisson_log_cdfs_in_the_far_tails_against_mpmath(fname, k, mu):
    """logcdf(0, 1000) is -1000; it was log(Q(1, 1000)) = -inf (SciPy's too), with a nan
    derivative. Values and d/dmu against mpmath."""

    def exact(m):
        lower, upper = (m, mpmath.inf) if fname == "logcdf" else (0, m)
        return mpmath.log(mpmath.gammainc(k + 1, lower, upper, regularized=True))

    f = getattr(fst.poisson, fname)
    with mpmath.workdps(250):  # (log Q(101, 1) = -3.9e-161: 1 - Q needs 161 digits)
        value, slope = float(exact(mpmath.mpf(mu))), float(mpmath.diff(exact, mpmath.mpf(mu)))
    np.testing.assert_allclose(f(k, mu), value, rtol=1e-13)
    np.testing.assert_allclose(fgrad.grad(f, argnums=1)(k, mu), slope, rtol=1e-12)


@pytest.mark.parametrize("name,shapes,loc,scale", UNIVARIATE[:8])
def test_invalid_parameters_give_nan_as_scipy(name, shapes, loc, scale):
    mod = getattr(fst, name)
    assert np.isnan(mod.logpdf(1.0, *shapes, loc, -scale))
    assert np.isnan(mod.cdf(1.0, *shapes, loc, 0.0))
    if shapes:
        assert np.isnan(mod.logpdf(1.0, -1.0, *shapes[1:], loc, scale))
        assert np.isnan(ss.__dict__[name].logpdf(1.0, -1.0, *shapes[1:], loc, scale))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (SciPy's own, at scale = nan)
@pytest.mark.parametrize("fname", ["ppf", "isf"])
def test_norm_quantiles_with_a_scale_not_above_zero_are_nan_as_scipy(fname):
    # ppf and isf were loc +- scale * ndtri(q) with no range check: 0.524 at scale = -1
    f, theirs = getattr(fst.norm, fname), getattr(ss.norm, fname)
    q = np.array([0.3, 0.5, 0.9, 1e-300])
    scale = np.array([-1.0, 0.0, np.nan, 2.0])
    np.testing.assert_array_equal(f(q, 0.1, scale), theirs(q, 0.1, scale))
    assert type(f(0.3, 0.0, -1.0)) is type(theirs(0.3, 0.0, -1.0))
    d = grad(lambda s: fgrad.numpy.sum(f(q, 0.1, s)))(scale)
    assert np.all(np.isnan(d[:3])) and d[3] == theirs(1e-300)
    assert np.isnan(grad(f, argnums=2)(0.3, 0.0, -1.0))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (nan and inf made inside, as eager)
@pytest.mark.parametrize("name,shapes,loc,scale", UNIVARIATE)
@pytest.mark.parametrize("fname", FUNCTIONS)
def test_invalid_parameters_give_nan_derivatives(name, shapes, loc, scale, fname):
    # At an element whose parameter is out of range (scale <= 0 or nan, a shape <= 0) the value
    # is nan, as SciPy's, and so is its derivative in every argument, in both modes (it was 0,
    # silently: the 1.0 that stands in for the parameter there has a finite derivative, and a
    # `where` with a constant nan gives none). The valid elements keep their own derivatives.
    f = getattr(getattr(fst, name), fname)
    scales = np.array([scale, -scale, 0.0, np.nan, scale])
    args = [loc + 0.4 * scale + np.zeros(5)]
    args += [np.full(5, s) for s in shapes] + [np.full(5, loc), scales]
    if shapes:
        args[1] = np.where(np.arange(5) == 4, -shapes[0], shapes[0])  # a shape out of range
    invalid = np.array([False, True, True, True, bool(shapes)])
    n = len(args)
    value = f(*args)
    assert np.all(np.isnan(value[invalid])) and np.all(np.isfinite(value[~invalid]))
    reverse = grad(lambda *a: fgrad.numpy.sum(f(*a)), argnums=tuple(range(n)))(*args)
    one = [grad(f, argnums=tuple(range(n)))(*[a[0] for a in args])]  # the valid element alone
    for i in range(n):
        tangents = [np.ones(5) if j == i else np.zeros(5) for j in range(n)]
        forward = fgrad.jvp(f, tuple(args), tuple(tangents))[1]
        for d in (reverse[i], forward):
            assert np.all(np.isnan(d[invalid])), (i, d)
            np.testing.assert_allclose(d[0], one[0][i], rtol=1e-13)
    bad = [a[1] for a in args]  # scale < 0: every order (the nan is not a linear term's)
    assert np.isnan(fgrad.hessian(f, argnums=n - 1)(*bad))
    assert np.isnan(fgrad.derivative(lambda v: f(v, *bad[1:]), 3)(bad[0]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (nan and inf made inside, as eager)
@pytest.mark.parametrize("name,shapes,loc,scale", UNIVARIATE)
@pytest.mark.parametrize("fname", FUNCTIONS)
def test_a_nan_argument_gives_nan_as_scipy_and_nan_derivatives(name, shapes, loc, scale, fname):
    # A nan x or loc was taken as outside the support by expon, gamma, chi2 and beta (their
    # masks are false at nan): -inf, 0 or 1 where SciPy gives nan, with a zero gradient.
    f = getattr(getattr(fst, name), fname)
    for k in range(len(shapes) + 3):
        args = [loc + 0.4 * scale, *shapes, loc, scale]
        args[k] = np.nan
        assert np.isnan(f(*args)) and np.isnan(getattr(getattr(ss, name), fname)(*args))
        assert all(np.isnan(grad(f, argnums=tuple(range(len(args))))(*args))), k


@pytest.mark.parametrize("fname", ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"])
def test_poisson_nan_k_or_loc_is_nan_as_scipy(fname):
    # a nan k or loc was taken for a k off the support: -inf, 0 or 1 instead of nan
    f, theirs = getattr(fst.poisson, fname), getattr(ss.poisson, fname)
    k, loc = np.array([np.nan, 2.0, 2.0]), np.array([0.0, np.nan, 1.0])
    for ours in [f(k, 3.0, loc), fgrad.vmap(f, in_axes=(0, None, 0))(k, 3.0, loc)]:
        np.testing.assert_array_equal(ours, theirs(k, 3.0, loc))
    d = grad(lambda m: fgrad.numpy.sum(f(k, m, loc)))(3.0)
    assert np.isnan(d)  # (a nan value has no derivative)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (nan and inf made inside, as eager)
def test_invalid_poisson_mean_gives_nan_derivatives():
    mu = np.array([2.5, -1.0, np.nan])
    for fname in ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]:
        f = getattr(fst.poisson, fname)
        d = grad(lambda m, f=f: fgrad.numpy.sum(f(2.0, m)))(mu)
        assert np.isfinite(d[0]) and np.all(np.isnan(d[1:])), (fname, d)
        assert d[0] == grad(f, argnums=1)(2.0, 2.5)


def test_derivative_in_x_of_each_cdf_is_the_density():
    for name, shapes, loc, scale in UNIVARIATE:
        mod = getattr(fst, name)
        for x in [0.3, 1.2, 2.0]:
            np.testing.assert_allclose(
                grad(mod.cdf)(x, *shapes, loc, scale), mod.pdf(x, *shapes, loc, scale), rtol=1e-12
            )
            np.testing.assert_allclose(
                grad(mod.sf)(x, *shapes, loc, scale), -mod.pdf(x, *shapes, loc, scale), rtol=1e-12
            )


def test_second_derivative_of_gamma_cdf_in_x_and_loc_by_mpmath():
    a, x, loc, scale = 2.5, 1.7, 0.2, 1.3

    def reference(xx):
        return mpmath.gammainc(a, 0, (xx - loc) / scale, regularized=True)

    mpmath.mp.dps = 30
    d2 = float(mpmath.diff(reference, x, 2))
    assert grad(grad(fst.gamma.cdf))(x, a, loc, scale) == pytest.approx(d2, rel=1e-10)
    # d/dloc = -d/dx
    assert grad(fst.gamma.cdf, argnums=2)(x, a, loc, scale) == pytest.approx(
        -float(mpmath.diff(reference, x)), rel=1e-12
    )


def test_logpdf_derivatives_in_shape_parameters_by_closed_form():
    # d/da gamma.logpdf = log x - digamma(a); d/ddf t.logpdf by mpmath
    from scipy.special import digamma

    x, a = 1.7, 2.5
    assert grad(fst.gamma.logpdf, argnums=1)(x, a) == pytest.approx(math.log(x) - digamma(a))
    df = 3.5
    ref = mpmath.diff(
        lambda d: mpmath.log(
            mpmath.gamma((d + 1) / 2)
            / mpmath.gamma(d / 2)
            / mpmath.sqrt(d * mpmath.pi)
            * (1 + x * x / d) ** (-(d + 1) / 2)
        ),
        df,
    )
    assert grad(fst.t.logpdf, argnums=1)(x, df) == pytest.approx(float(ref), rel=1e-10)
    # beta: d/da = log x - digamma(a) + digamma(a + b)
    b = 1.5
    assert grad(fst.beta.logpdf, argnums=1)(0.3, a, b) == pytest.approx(
        math.log(0.3) - digamma(a) + digamma(a + b)
    )


def _mp_t_logpdf(x, df):
    if df > 1e200:  # the normal's, to 1e-200
        return -x * x / 2 - mpmath.log(2 * mpmath.pi) / 2
    return (
        mpmath.loggamma((df + 1) / 2)
        - mpmath.loggamma(df / 2)
        - mpmath.log(df * mpmath.pi) / 2
        - (df + 1) / 2 * mpmath.log1p(x * x / df)
    )


def test_t_density_at_large_df_against_mpmath():
    # gammaln((df+1)/2) - gammaln(df/2) cancelled: logpdf(1.5) was -2.04393934 at df = 1e9
    # (-2.04393853), 1.03 at 1e15, nan at inf, and so was the x-derivative of every t CDF
    mpmath.mp.dps = 50
    for df in [150.0, 1e5, 1e9, 1e15, 1e300, np.inf]:
        for x in [0.0, 1.5, -7.0]:
            want = _mp_t_logpdf(mpmath.mpf(x), mpmath.mpf(df))
            assert float(fst.t.logpdf(x, df)) == pytest.approx(float(want), rel=1e-14)
            assert float(grad(fst.t.cdf)(x, df)) == pytest.approx(
                float(mpmath.exp(want)), rel=1e-13
            )
            assert float(grad(fst.t.logpdf)(x, df)) == pytest.approx(
                float(mpmath.diff(lambda s: _mp_t_logpdf(s, mpmath.mpf(df)), x)), rel=1e-13
            )
            if np.isfinite(df) and df < 1e200:  # d/d df: 0 at 1e9 and x = 1 (exact 5e-19)
                want_df = mpmath.diff(lambda d: _mp_t_logpdf(mpmath.mpf(x), d), df)
                assert float(grad(fst.t.logpdf, argnums=1)(x, df)) == pytest.approx(
                    float(want_df), rel=1e-11, abs=1e-300
                )
    assert fst.t.logpdf(np.float32(1.5), np.float32(1e9)).dtype == np.float32
    assert float(grad(fst.t.logpdf, argnums=1)(1.0, np.inf)) == 0.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (d/dscale at z = inf: 0 * inf)
@pytest.mark.parametrize("df", [3.0, 99.0, 100.0, 300.0, 1e5, np.inf])
def test_t_density_where_z_is_infinite_or_z_squared_overflows(df):
    # from df = 100 on, z^2 log1p(u) / u was inf / inf: nan for -inf / 0 (SciPy's); and the
    # derivatives were nan there for every df
    x = np.array([np.inf, -np.inf, 1e160, -2e200, 0.0, np.nan])
    loc = np.array([0.0, 0.0, 0.0, 0.0, np.inf, 0.0])
    for fname in ["logpdf", "pdf"]:
        with np.errstate(all="ignore"), warnings.catch_warnings():  # (SciPy's z^2 overflows)
            warnings.simplefilter("ignore")
            f, theirs = getattr(fst.t, fname), getattr(ss.t, fname)(x, df, loc)
        np.testing.assert_array_equal(f(x, df, loc), theirs)
        np.testing.assert_array_equal(fgrad.vmap(f, in_axes=(0, None, 0))(x, df, loc), theirs)
    # the derivatives are the density's (its limits at z = +-inf): in x -(df+1) z/(df + z^2)
    # (-z at df = inf), in scale df/scale (z^2 - 1), in df -inf at z = +-inf
    d_x, d_df, d_scale = fgrad.vmap(
        grad(fst.t.logpdf, argnums=(0, 1, 3)), in_axes=(0, None, None, None)
    )(x[:4], df, 0.0, 2.0)
    z = x[:4] / 2.0
    if np.isfinite(df):
        np.testing.assert_allclose(d_x, -(df + 1) / (z + df / z) / 2.0, rtol=1e-14)
        np.testing.assert_allclose(d_scale[2:], df / 2.0, rtol=1e-14)
        assert (d_df[:2] == -np.inf).all()
    else:
        np.testing.assert_array_equal(d_x, -z / 2.0)
        assert (d_scale[2:] == np.inf).all()
    for i in [0, 1, 2, 3]:  # pdf: 0 (exp(-inf) times each)
        assert float(grad(fst.t.pdf, argnums=i)(x[2], df, 0.0, 2.0)) == 0.0
    # and at ordinary points the derivatives are unchanged (against the closed form)
    want = -(df + 1) * 1.7 / (df + 1.7**2) if np.isfinite(df) else -1.7
    assert float(grad(fst.t.logpdf)(1.7, df)) == pytest.approx(want, rel=1e-14)


def test_t_density_derivative_in_df_where_z_squared_overflows_against_mpmath():
    mpmath.mp.dps = 50
    for df in [3.0, 300.0, 1e5]:
        want = mpmath.diff(lambda d: _mp_t_logpdf(mpmath.mpf("1e160"), d), df)
        assert float(grad(fst.t.logpdf, argnums=1)(1e160, df)) == pytest.approx(
            float(want), rel=1e-13
        )


def _mp_beta_cdfs(which, x, a, b):
    I = mpmath.betainc(a, b, 0, x, regularized=True)
    J = mpmath.betainc(a, b, x, 1, regularized=True)
    return {"cdf": I, "sf": J, "logcdf": mpmath.log(I), "logsf": mpmath.log(J)}[which]


def _mp_t_cdfs(which, z, df):
    x = df / (df + z * z)
    half = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, x, regularized=True) / 2
    lower = 1 - half if z > 0 else half  # stdtr(df, z)
    upper = half if z > 0 else 1 - half
    return {"cdf": lower, "sf": upper, "logcdf": mpmath.log(lower), "logsf": mpmath.log(upper)}[
        which
    ]


@pytest.mark.parametrize("fname", ["cdf", "sf", "logcdf", "logsf"])
def test_t_and_beta_cdfs_in_their_shape_parameters_against_mpmath(fname):
    # the incomplete beta function's series in its shape parameters (fgrad.scipy.special's
    # betainc), through the CDFs of beta and, with x = df / (df + z^2), of t: both modes
    mpmath.mp.dps = 30
    beta_f = getattr(fst.beta, fname)
    for x, a, b in [(0.3, 2.0, 3.0), (0.8, 0.7, 1.6), (0.05, 4.0, 0.9)]:
        want_a = mpmath.diff(lambda s: _mp_beta_cdfs(fname, x, s, b), a)
        want_b = mpmath.diff(lambda s: _mp_beta_cdfs(fname, x, a, s), b)
        for transform in (grad, jacfwd):
            got = transform(beta_f, argnums=(1, 2))(x, a, b)
            assert float(got[0]) == pytest.approx(float(want_a), rel=1e-9, abs=1e-13)
            assert float(got[1]) == pytest.approx(float(want_b), rel=1e-9, abs=1e-13)
    t_f = getattr(fst.t, fname)
    for z, df in [(-2.0, 3.0), (-0.3, 1.5), (0.0, 4.0), (0.7, 2.5), (4.0, 10.0)]:
        want = mpmath.diff(lambda s: _mp_t_cdfs(fname, mpmath.mpf(z), s), df)
        for transform in (grad, jacfwd):
            got = transform(t_f, argnums=1)(z, df)
            assert float(got) == pytest.approx(float(want), rel=1e-9, abs=1e-13)


@pytest.mark.parametrize("fname", ["cdf", "sf", "logcdf", "logsf"])
def test_t_cdfs_in_df_in_the_far_tail_against_mpmath(fname):
    # the incomplete beta's derivative through x = df / (df + z^2) is a power of x times z:
    # its factor before z underflowed to 0 from |z| ~ 1e90 at df = 3 (d/ddf logcdf at
    # (-1e100, 3) was -229.849 for -229.349); at |z| = 1e153, x is below 1e-304
    mpmath.mp.dps = 250  # (log Q(101, 1) = -3.9e-161: 1 - Q needs 161 digits)
    f = getattr(fst.t, fname)
    side = -1.0 if fname in ("cdf", "logcdf") else 1.0
    for size, df in [
        (1e60, 3.0),
        (1e80, 3.0),
        (1e90, 3.0),
        (1e100, 3.0),
        (1e100, 0.5),
        (1e150, 1.0),
        (1e153, 0.5),
        (1e153, 1.0),
    ]:
        z = side * size
        want = mpmath.diff(lambda s: _mp_t_cdfs(fname, mpmath.mpf(z), s), df)
        for transform in (grad, jacfwd):
            got = transform(f, argnums=1)(z, df)
            assert float(got) == pytest.approx(float(want), rel=1e-10, abs=0.0), (z, df)


def _mp_t_score_df(s, df):  # d/d df of the t log density
    return (
        mpmath.digamma((df + 1) / 2) / 2
        - mpmath.digamma(df / 2) / 2
        - 1 / (2 * df)
        - mpmath.log1p(s * s / df) / 2
        + (df + 1) / 2 * (s * s / df**2) / (1 + s * s / df)
    )


def _mp_t_cdf_ddf(z, df, order=1):
    """d/d df (order 1) or d2/d df2 (order 2) of stdtr(df, z): the integral of the density's
    derivatives in df from 0 to z, or minus from |z| to inf (split at multiples of the tail's
    decay length)"""

    def integrand(s):
        f = mpmath.exp(_mp_t_logpdf(s, df))
        h = _mp_t_score_df(s, df)
        if order == 1:
            return f * h
        return f * (h * h + mpmath.diff(lambda d: _mp_t_score_df(s, d), df))

    z, df = mpmath.mpf(z), mpmath.mpf(df)
    if abs(z) < 3:
        return mpmath.quad(integrand, mpmath.linspace(0, z, 5))
    decay = (df + z * z) / ((df + 1) * abs(z))
    points = [abs(z) + j * decay for j in (0, 1, 2, 4, 8, 16, 32, 64)] + [mpmath.inf]
    return -mpmath.sign(z) * mpmath.quad(integrand, points)


def test_t_cdfs_in_df_at_large_df_against_mpmath():
    # the incomplete beta's two derivatives cancelled from order 1/df to 1/df^2: d/d df of
    # t.cdf at (3, 1e7) was 8.2e-17 (exact 3.32e-16), at (0.3, 1e7) 1.2e-16 (3.12e-16), at
    # (20, 1e3) 3.9e-5 off; now the density's derivative integrated (0 at df = inf)
    mpmath.mp.dps = 40
    for df in [100.0, 1e3, 1e4, 1e7, 1e12]:
        for z in [0.05, 0.3, -1.0, 2.4, 2.6, 3.0, -6.0, 20.0, 100.0]:
            want = _mp_t_cdf_ddf(z, df)
            assert float(grad(fst.t.cdf, argnums=1)(z, df)) == pytest.approx(float(want), rel=1e-10)
            assert float(grad(fst.t.sf, argnums=1)(z, df)) == pytest.approx(-float(want), rel=1e-10)
    # the log tails: d/d df log sf = (d/d df sf) / sf, where sf is about 1e-88 (df = 1e4)
    z, df = 20.0, 1e4
    sf = mpmath.betainc(df / 2, 0.5, 0, df / (df + z * z), regularized=True) / 2
    want = -_mp_t_cdf_ddf(z, df) / sf
    assert float(grad(fst.t.logsf, argnums=1)(z, df)) == pytest.approx(float(want), rel=1e-10)
    assert float(grad(fst.t.logcdf, argnums=1)(-z, df)) == pytest.approx(float(want), rel=1e-10)
    # second order: in x (the density's df derivative) and in df, both modes
    for z, df in [(0.3, 1e4), (3.0, 1e7), (-5.0, 300.0)]:
        f = mpmath.exp(_mp_t_logpdf(mpmath.mpf(z), mpmath.mpf(df)))
        mixed = f * _mp_t_score_df(mpmath.mpf(z), mpmath.mpf(df))
        assert float(jacfwd(grad(fst.t.cdf, argnums=1))(z, df)) == pytest.approx(
            float(mixed), rel=1e-10
        )
        assert float(grad(grad(fst.t.cdf), argnums=1)(z, df)) == pytest.approx(
            float(mixed), rel=1e-10
        )
        second = _mp_t_cdf_ddf(z, df, order=2)
        assert float(grad(grad(fst.t.cdf, argnums=1), argnums=1)(z, df)) == pytest.approx(
            float(second), rel=1e-9
        )
    for df in [1e300, np.inf]:
        assert float(grad(fst.t.cdf, argnums=1)(3.0, df)) == 0.0
    # float32 stays float32; vmap over a batch mixing the two ways agrees with a loop
    assert grad(fst.t.cdf, argnums=1)(np.float32(3.0), np.float32(1e5)).dtype == np.float32
    zs, dfs = np.array([0.3, 3.0, -0.2, 30.0]), np.array([1e5, 50.0, 5.0, 1e3])
    batched = fgrad.vmap(grad(fst.t.cdf, argnums=1))(zs, dfs)
    looped = [grad(fst.t.cdf, argnums=1)(z, d) for z, d in zip(zs, dfs)]
    np.testing.assert_allclose(batched, looped, rtol=1e-14)


def test_t_cdf_mixed_derivative_in_x_and_df_at_and_near_the_centre():
    # d/dx of d/d df stdtr(df, x) at x = 0 and 1e-8 (where the incomplete-beta form of the df
    # derivative loses its digits and its own derivative in x), in both orders, against mpmath
    mpmath.mp.dps = 30

    def stdtr(z, df):  # 1/2 + sign(z) I(1/2, df/2, z^2 / (df + z^2)) / 2: smooth through 0
        y = z * z / (df + z * z)
        half = mpmath.betainc(mpmath.mpf(1) / 2, df / 2, 0, y, regularized=True) / 2
        return mpmath.mpf(1) / 2 + mpmath.sign(z) * half

    for z, df in [(0.0, 3.0), (1e-8, 3.0), (0.0, 0.7), (-0.05, 40.0)]:
        want = float(mpmath.diff(stdtr, (mpmath.mpf(z), mpmath.mpf(df)), (1, 1)))
        x_then_df = grad(lambda d: grad(fst.t.cdf)(z, d))(df)
        df_then_x = grad(lambda x: grad(fst.t.cdf, argnums=1)(x, df))(z)
        assert float(x_then_df) == pytest.approx(want, rel=1e-10)
        assert float(df_then_x) == pytest.approx(want, rel=1e-10)


def _mp_gamma_cdfs(which, x, a):
    P = mpmath.gammainc(a, 0, x, regularized=True)
    Q = mpmath.gammainc(a, x, mpmath.inf, regularized=True)
    return {"cdf": P, "sf": Q, "logcdf": mpmath.log(P), "logsf": mpmath.log(Q)}[which]


def _mp_gamma_cdfs_dx(which, x, a):
    x = mpmath.mpf(x)
    density = x ** (a - 1) * mpmath.exp(-x) / mpmath.gamma(a)
    return {
        "cdf": density,
        "sf": -density,
        "logcdf": density / _mp_gamma_cdfs("cdf", x, a),
        "logsf": -density / _mp_gamma_cdfs("sf", x, a),
    }[which]


GAMMA_POINTS = {  # (z, a): both ways of d/da (z < a + 1 and above) and of the log
    "cdf": [(0.3, 0.7), (6.0, 1.5), (40.0, 30.0)],
    "sf": [(0.3, 0.7), (6.0, 1.5), (40.0, 30.0)],
    "logcdf": [(0.5, 4.0), (6.0, 1.5), (1e-200, 2.5), (3.0, 200.0), (60.0, 2.5)],
    "logsf": [(1.7, 2.5), (0.05, 1.5), (800.0, 2.5), (2000.0, 40.0)],
}


@pytest.mark.parametrize("fname", ["cdf", "sf", "logcdf", "logsf"])
def test_gamma_cdfs_in_a_match_mpmath_to_order_2(fname):
    mpmath.mp.dps = 40
    f = getattr(fst.gamma, fname)
    for z, a in GAMMA_POINTS[fname]:
        da = mpmath.diff(lambda aa: _mp_gamma_cdfs(fname, z, aa), a)
        daa = mpmath.diff(lambda aa: _mp_gamma_cdfs(fname, z, aa), a, 2)
        dax = mpmath.diff(lambda aa: _mp_gamma_cdfs_dx(fname, z, aa), a)
        assert f(z, a) == pytest.approx(float(_mp_gamma_cdfs(fname, z, a)), rel=1e-13)
        assert grad(f, argnums=1)(z, a) == pytest.approx(float(da), rel=1e-12)
        assert fgrad.jvp(lambda aa: f(z, aa), (a,), (1.0,))[1] == pytest.approx(
            float(da), rel=1e-12
        )
        assert grad(grad(f, argnums=1), argnums=1)(z, a) == pytest.approx(float(daa), rel=1e-11)
        assert jacfwd(jacrev(f, argnums=1))(z, a) == pytest.approx(float(dax), rel=1e-11)


def test_chi2_cdfs_in_df_are_gammas_in_a_at_df_over_2():
    # chi2(df) = gamma(df / 2, scale=2): d/ddf = d/da / 2, d2/ddf2 = d2/da2 / 4
    x, df, loc, scale = 3.1, 3.0, 0.2, 1.3
    for fname in ["cdf", "sf", "logcdf", "logsf"]:
        f, g = getattr(fst.chi2, fname), getattr(fst.gamma, fname)
        assert grad(f, argnums=1)(x, df, loc, scale) == pytest.approx(
            0.5 * grad(g, argnums=1)(x, df / 2, loc, 2 * scale), rel=1e-13
        )
        assert grad(grad(f, argnums=1), argnums=1)(x, df, loc, scale) == pytest.approx(
            0.25 * grad(grad(g, argnums=1), argnums=1)(x, df / 2, loc, 2 * scale), rel=1e-13
        )
    # chi2 with df = 2 is expon(scale=2): sf = exp(-x/2), d/ddf of sf by mpmath
    mpmath.mp.dps = 30
    ref = mpmath.diff(lambda d: mpmath.gammainc(d / 2, 1.5, mpmath.inf, regularized=True), 2.0)
    assert grad(fst.chi2.sf, argnums=1)(3.0, 2.0) == pytest.approx(float(ref), rel=1e-12)


def _mp_log_p_by_quadrature(a, x):
    """log P(a, x) for x < a - 1 by quadrature of the integrand scaled at its end x (mpmath's
    gammainc does not converge at large a), with d/dx log P = density / P."""
    with mpmath.workdps(40):
        a, x = mpmath.mpf(a), mpmath.mpf(x)
        w = 1 / ((a - 1) / x - 1)  # the integrand's e-folding length below x
        pieces = [0] + [w * 10**k for k in range(-1, 4) if w * 10**k < x] + [x]
        integral = mpmath.quad(lambda s: mpmath.exp((a - 1) * mpmath.log1p(-s / x) + s), pieces)
        log_p = (a - 1) * mpmath.log(x) - x - mpmath.loggamma(a) + mpmath.log(integral)
        return float(log_p), float(1 / integral)


@pytest.mark.parametrize("a", [1e3, 3e4, 1e8, 1e10, 1e12])
def test_gamma_log_cdf_deep_in_the_left_tail_at_large_a_against_mpmath(a):
    # the series was cut at 2000 terms: logcdf was -269.59 at a = 1e10, z = a - 23 sqrt(a)
    # (mpmath -268.60), -271.66 at a = 1e12 (-268.56); chi2's likewise
    for z in [a - 23 * math.sqrt(a), a - 60 * math.sqrt(a), 0.6 * a]:
        if z >= a - 23 * math.sqrt(a) or z > 0.5 * a:
            want, slope = _mp_log_p_by_quadrature(a, z)
            assert fst.gamma.logcdf(z, a) == pytest.approx(want, rel=1e-14, abs=1e-13), z
            assert fst.chi2.logcdf(2 * z, 2 * a) == pytest.approx(want, rel=1e-14, abs=1e-13)
            assert grad(fst.gamma.logcdf)(z, a) == pytest.approx(slope, rel=1e-11), z


@pytest.mark.parametrize("a", [1e3, 1e8, 1e11])  # (mpmath takes 9 s at 1e15)
def test_gamma_log_sf_far_in_the_right_tail_at_large_a_is_fast_and_right(a):
    # the continued fraction ran 40 + 8 sqrt(a) steps: 2.7 s at a = 1e11 (and -804.54073
    # where mpmath gives -804.54099), 8e125 steps at a = 1e250
    z = a + 40 * math.sqrt(a)
    with mpmath.workdps(40):
        want = mpmath.log(mpmath.gammainc(a, z, mpmath.inf, regularized=True))
        slope = -mpmath.exp((a - 1) * mpmath.log(z) - z - mpmath.loggamma(a) - want)
    assert fst.gamma.logsf(z, a) == pytest.approx(float(want), rel=1e-14)
    assert fst.chi2.logsf(2 * z, 2 * a) == pytest.approx(float(want), rel=1e-14)
    assert grad(fst.gamma.logsf)(z, a) == pytest.approx(float(slope), rel=1e-11)


@pytest.mark.parametrize("a", [1e3, 1e4, 1e8])
def test_gamma_log_sf_at_large_a_where_z_is_far_above_a_against_mpmath(a):
    # Temme's form cancels for z >> a: d/da logsf at (1e18, 1000) was 34.5 for 34.539, at
    # (1e25, 1000) 1.0 for 50.657, and logsf(1e50, 1000) nan for -1e50; the points straddle
    # the switch to the asymptotic series in 1/z at z = 1000 a; chi2's (df >= 2000) likewise
    mpmath.mp.dps = 110  # (log Q is about -z, up to -1e55: its derivatives need 55 more digits)

    def log_q(s, t):
        return mpmath.log(mpmath.gammainc(t, s, mpmath.inf, regularized=True))

    for ratio in [500.0, 999.0, 1000.0, 1001.0, 1e4, 1e15, 1e22, 1e47]:
        z = a * ratio
        want = log_q(mpmath.mpf(z), mpmath.mpf(a))
        want_a = float(mpmath.diff(lambda t: log_q(mpmath.mpf(z), t), a))
        want_z = float(mpmath.diff(lambda s: log_q(s, mpmath.mpf(a)), z))
        assert fst.gamma.logsf(z, a) == pytest.approx(float(want), rel=1e-14), z
        assert fst.chi2.logsf(2 * z, 2 * a) == pytest.approx(float(want), rel=1e-14), z
        for transform in (grad, jacfwd):
            got_z, got_a = transform(fst.gamma.logsf, argnums=(0, 1))(z, a)
            assert float(got_a) == pytest.approx(want_a, rel=1e-12), z
            assert float(got_z) == pytest.approx(want_z, rel=1e-12), z
        got_df = grad(fst.chi2.logsf, argnums=1)(2 * z, 2 * a)
        assert float(got_df) == pytest.approx(want_a / 2, rel=1e-12), z
    assert fst.gamma.logsf(1e300, 1e8) == pytest.approx(-1e300, rel=1e-14)


def test_gamma_log_tails_at_huge_or_infinite_a():
    # logsf(1.001e250, 1e250) never returned; logcdf at a = inf was nan (P = 0: -inf), and
    # at a = 1e300, z one ulp below a, +7.6 (a cancelled series). The leading term of both
    # tails there is -a (mu - log1p(mu)), mu = z/a - 1, the rest is of order log(a)
    start = time.perf_counter()
    a, z = 1e250, 1.001e250
    lead = -a * (1e-3 - math.log1p(1e-3))
    assert fst.gamma.logsf(z, a) == pytest.approx(lead, rel=1e-12)
    assert time.perf_counter() - start < 5.0
    z = 1.0 / 1e-300
    lead = -1e300 * ((z - 1e300) / 1e300) ** 2 / 2
    assert fst.gamma.logcdf(1.0, 1e300, scale=1e-300) == pytest.approx(lead, rel=1e-12)
    assert fst.gamma.logcdf(1.0, math.inf) == -math.inf == ss.gamma.logcdf(1.0, math.inf)
    assert fst.gamma.logcdf(np.array([1.0, 2.0]), np.array([math.inf, 2.0]))[0] == -math.inf


def test_gamma_cdf_tails_against_scipy():
    # where SciPy's value is finite ours is the same; where SciPy's log underflows to -inf
    # (log of an underflowed P or Q) ours is the log-form value (checked against mpmath)
    z = np.array([1e-300, 1e-200, 1e-120, 1e-5, 0.5, 5.0, 60.0, 300.0, 800.0, 5000.0])
    for a in [0.7, 2.5, 40.0]:
        for fname in ["logcdf", "logsf"]:
            ours = getattr(fst.gamma, fname)(z, a)
            theirs = getattr(ss.gamma, fname)(z, a)
            finite = np.isfinite(theirs) & (theirs != 0)
            np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-9)
            assert np.all(np.isfinite(ours))
            for zi in z[~np.isfinite(theirs)]:
                mpmath.mp.dps = 30
                assert getattr(fst.gamma, fname)(zi, a) == pytest.approx(
                    float(_mp_gamma_cdfs(fname, zi, a)), rel=1e-12
                ), (fname, zi, a)
    # nan and inf as SciPy (values), with zero (not nan) gradients at inf
    edge = np.array([np.nan, np.inf, -np.inf])
    for fname in ["cdf", "sf", "logcdf", "logsf"]:
        for mod, shape in [(fst.gamma, 2.5), (fst.chi2, 3.0)]:
            np.testing.assert_array_equal(
                getattr(mod, fname)(edge, shape),
                getattr(getattr(ss, mod.__name__.rsplit(".")[-1]), fname)(edge, shape),
            )
            g = grad(lambda a, f=getattr(mod, fname): fgrad.numpy.sum(f(edge[1:], a)))(shape)
            assert g == 0.0
    # logcdf where P is 1 - 1e-15: log1p(-Q), all digits (SciPy's log(P) keeps about one)
    assert fst.gamma.logcdf(40.0, 2.5) == pytest.approx(
        float(mpmath.log(mpmath.gammainc(2.5, 0, 40, regularized=True))), rel=1e-13
    )


def test_gamma_and_chi2_cdfs_keep_float32_in_the_shape_parameter():
    x, a = np.float32([0.3, 1.7, 900.0]), np.float32(2.5)
    for f in (fst.gamma.cdf, fst.gamma.logcdf, fst.gamma.logsf, fst.chi2.sf, fst.chi2.logsf):
        assert f(x, a).dtype == np.float32
        assert grad(lambda v, f=f: fgrad.numpy.sum(f(x, v)))(a).dtype == np.float32
        assert np.all(np.isfinite(grad(lambda v, f=f: fgrad.numpy.sum(f(x, v)))(a)))
    assert fst.gamma.cdf(x, 2.5).dtype == np.float32  # a Python float a


def test_outside_the_support_values_and_zero_gradients():
    cases = [
        (fst.expon, (), -0.5),
        (fst.gamma, (2.5,), -0.5),
        (fst.chi2, (3.0,), -0.5),
        (fst.beta, (2.0, 3.0), -0.5),
        (fst.beta, (2.0, 3.0), 1.5),
    ]
    for mod, shapes, x in cases:
        assert mod.logpdf(x, *shapes) == -np.inf
        assert mod.pdf(x, *shapes) == 0.0
        nargs = 1 + len(shapes) + 2
        for fname in ["pdf", "cdf", "sf"]:
            f = getattr(mod, fname)
            g = grad(
                f,
                argnums=tuple(
                    i
                    for i in range(nargs)
                    if fname == "pdf" or (i != 1 and i not in range(1, 1 + len(shapes)))
                ),
            )(x, *shapes, 0.0, 1.0)
            assert all(np.all(np.isfinite(v)) and np.all(v == 0.0) for v in g), (mod, fname, g)
        # logpdf: -inf, and the gradient is 0 (not nan) there
        g = grad(mod.logpdf, argnums=(0, 1 + len(shapes), 2 + len(shapes)))(x, *shapes, 0.0, 1.0)
        assert all(v == 0.0 for v in g)
    assert grad(fst.poisson.pmf, argnums=1)(2.5, 3.0) == 0.0
    assert grad(fst.poisson.cdf, argnums=1)(-1.0, 3.0) == 0.0


def test_boundary_values_with_finite_gradients():
    # gamma with a = 1 and beta with a = 1 have finite densities at the left end
    assert grad(fst.gamma.logpdf)(0.0, 1.0) == -1.0
    assert grad(fst.gamma.logpdf, argnums=3)(0.0, 1.0, 0.0, 2.0) == -0.5
    assert grad(fst.beta.logpdf)(0.0, 1.0, 3.0) == pytest.approx(-2.0)
    assert fst.beta.logpdf(0.0, 1.0, 3.0) == pytest.approx(math.log(3.0))
    # poisson at mu = 0: pmf(0) = 1, d/dmu logpmf = k/mu - 1 -> -1 at k = 0 (0 log 0 = 0)
    assert fst.poisson.logpmf(0, 0.0) == 0.0
    assert grad(fst.poisson.logpmf, argnums=1)(0, 0.0) == -1.0
    assert grad(fst.poisson.cdf, argnums=1)(0, 0.0) == -1.0


def test_stable_tails():
    # norm.logcdf deep in the left tail: derivative about -x, no underflow
    assert grad(fst.norm.logcdf)(-1000.0) == pytest.approx(1000.0, rel=1e-5)
    assert grad(fst.norm.logsf)(1000.0) == pytest.approx(-1000.0, rel=1e-5)
    # expon.logcdf for tiny and huge z
    assert fst.expon.logcdf(1e-12) == pytest.approx(math.log(1e-12))
    assert fst.expon.logcdf(50.0) == pytest.approx(-math.exp(-50.0), rel=1e-12)
    assert grad(fst.expon.logcdf)(50.0) == pytest.approx(math.exp(-50.0), rel=1e-10)


def test_poisson_cdf_derivative_is_minus_the_pmf():
    for k in [0, 3, 7.5]:
        assert grad(fst.poisson.cdf, argnums=1)(k, 2.5) == pytest.approx(
            -ss.poisson.pmf(math.floor(k), 2.5), rel=1e-12
        )
        assert grad(fst.poisson.sf, argnums=1)(k, 2.5) == pytest.approx(
            ss.poisson.pmf(math.floor(k), 2.5), rel=1e-12
        )


def test_poisson_refuses_a_traced_k():
    with pytest.raises(TypeError, match="k is a traced value"):
        grad(fst.poisson.logpmf)(3.0, 2.0)


def test_complex_arguments_are_refused_where_scipy_refuses_or_drops_them():
    # SciPy's poisson refuses complex mu; its multivariate_normal casts to real with a
    # ComplexWarning, dropping the imaginary part: fgrad refuses both, naming the argument
    with pytest.raises(TypeError):
        ss.poisson.pmf(3, 2.0 + 0.5j)
    with pytest.raises(
        TypeError,
        match=r"poisson.pmf: mu is complex \(shape \(\), dtype "
        r"complex128\)",
    ):
        fst.poisson.pmf(3, 2.0 + 0.5j)
    x, mean, cov = np.array([0.3, 0.2j]), np.zeros(2), np.eye(2)
    with pytest.warns(np.exceptions.ComplexWarning):
        ss.multivariate_normal.logpdf(x, mean, cov)
    with pytest.raises(TypeError, match="multivariate_normal.logpdf: x is complex"):
        fst.multivariate_normal.logpdf(x, mean, cov)
    with pytest.raises(TypeError, match="multivariate_normal.entropy: cov is complex"):
        fst.multivariate_normal.entropy(cov=cov * (1 + 0j))


def test_dirichlet_matches_scipy_and_closed_forms():
    alpha = np.array([1.5, 2.0, 3.0])
    x = np.array([[0.2, 0.3, 0.1], [0.5, 0.1, 0.6]])
    np.testing.assert_allclose(fst.dirichlet.logpdf(x, alpha), ss.dirichlet.logpdf(x, alpha))
    np.testing.assert_allclose(fst.dirichlet.pdf(x[:, 0], alpha), ss.dirichlet.pdf(x[:, 0], alpha))
    full = np.concatenate([x, 1 - x.sum(0, keepdims=True)])
    np.testing.assert_allclose(fst.dirichlet.logpdf(full, alpha), ss.dirichlet.logpdf(full, alpha))
    for f in ["entropy", "mean", "var"]:
        np.testing.assert_allclose(
            getattr(fst.dirichlet, f)(alpha), getattr(ss.dirichlet, f)(alpha), rtol=1e-12
        )
    # d/dx_i of the full-form logpdf: (alpha_i - 1) / x_i
    np.testing.assert_allclose(
        grad(fst.dirichlet.logpdf)(full[:, 0], alpha), (alpha - 1) / full[:, 0]
    )
    # a zero coordinate with alpha = 1 contributes 0 (xlogy), with a finite gradient in alpha
    with np.errstate(divide="ignore"):  # d/dalpha_0 = log 0
        g = grad(fst.dirichlet.logpdf, argnums=1)(
            np.array([0.0, 0.4, 0.6]), np.array([1.0, 2.0, 3.0])
        )
    assert np.isneginf(g[0]) and np.all(np.isfinite(g[1:]))


def test_dirichlet_refuses_points_off_the_simplex_as_scipy():
    alpha = np.array([1.5, 2.0, 3.0])
    for x in [
        np.array([0.2, 0.3, 0.4]),
        np.array([-0.1, 0.5, 0.6]),
        np.array([0.2]),
        np.array([0.0, 0.5]),
    ]:
        with pytest.raises(ValueError):
            ss.dirichlet.logpdf(x, np.array([0.5, 2.0, 3.0]) if x.size == 2 else alpha)
        with pytest.raises(ValueError):
            fst.dirichlet.logpdf(x, np.array([0.5, 2.0, 3.0]) if x.size == 2 else alpha)
    with pytest.raises(ValueError, match="alpha must be one-dimensional"):
        fst.dirichlet.logpdf(np.array([0.5]), np.ones((2, 1)))


def test_dirichlet_with_a_nan_alpha_gives_nan_as_scipy():
    """SciPy's check `alpha > 0` lets a nan through, and its results are nan: fgrad raised."""
    x, alpha = np.array([0.3, 0.7]), np.array([np.nan, 2.0])
    for fname, args in [("logpdf", (x, alpha)), ("pdf", (x, alpha)), ("mean", (alpha,))]:
        got, want = getattr(fst.dirichlet, fname)(*args), getattr(ss.dirichlet, fname)(*args)
        np.testing.assert_array_equal(got, want)
        assert np.all(np.isnan(got))
    with pytest.raises(ValueError, match="every entry of alpha must be > 0"):
        fst.dirichlet.logpdf(x, np.array([0.0, 2.0]))


def _spd(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T + np.eye(d)


MVN_CASES = [
    "matrix",
    "one-point",
    "diag",
    "scalar",
    "no-mean",
    "dim-1",
    "dim-1-vector",
    "scalar-x",
    "squeezed",
]


@pytest.mark.parametrize("case", MVN_CASES)
def test_multivariate_normal_matches_scipy(case):
    rng = np.random.default_rng(0)
    c, m, x = _spd(rng, 3), rng.normal(size=3), rng.normal(size=(4, 3))
    args = {
        "matrix": (x, m, c),
        "one-point": (x[0], m, c),
        "diag": (x, m, np.diag(c)),
        "scalar": (x, m, 2.0),
        "no-mean": (x, None, c),
        "dim-1": (x[:, :1], None, 2.0),
        "dim-1-vector": (x[:, 0], 0.5, 2.0),
        "scalar-x": (1.0,),
        "squeezed": (x[:1], m, c),
    }
    args = args[case]
    for f in ["logpdf", "pdf"]:
        np.testing.assert_allclose(
            getattr(fst.multivariate_normal, f)(*args),
            getattr(ss.multivariate_normal, f)(*args),
            rtol=1e-12,
        )
    if len(args) == 3:
        np.testing.assert_allclose(
            fst.multivariate_normal.entropy(*args[1:]),
            ss.multivariate_normal.entropy(*args[1:]),
            rtol=1e-12,
        )


def test_multivariate_normal_gradients_by_closed_form():
    rng = np.random.default_rng(1)
    c, m, x = _spd(rng, 3), rng.normal(size=3), rng.normal(size=3)
    ci = np.linalg.inv(c)
    d = x - m
    gx, gm, gc = grad(fst.multivariate_normal.logpdf, argnums=(0, 1, 2))(x, m, c)
    np.testing.assert_allclose(gx, -ci @ d)
    np.testing.assert_allclose(gm, ci @ d)
    # the gradient with respect to the symmetric cov, read back to the lower triangle (SciPy
    # reads that one): the off-diagonal entries count twice
    g_sym = 0.5 * (ci @ np.outer(d, d) @ ci - ci)
    np.testing.assert_allclose(gc, np.tril(2 * g_sym, -1) + np.diag(np.diag(g_sym)), atol=1e-12)
    np.testing.assert_allclose(
        jacrev(grad(fst.multivariate_normal.logpdf))(x, m, c), -ci, atol=1e-12
    )


def test_multivariate_normal_singular():
    rng = np.random.default_rng(2)
    b, m = rng.normal(size=(3, 2)), rng.normal(size=3)
    c = b @ b.T
    x = np.vstack([m + b @ rng.normal(size=2) for _ in range(3)] + [rng.normal(size=(1, 3))])
    ours = fst.multivariate_normal.logpdf(x, m, c, allow_singular=True)
    np.testing.assert_allclose(
        ours, ss.multivariate_normal.logpdf(x, m, c, allow_singular=True), rtol=1e-9
    )
    assert ours[-1] == -np.inf
    g = grad(
        lambda xx: fgrad.numpy.sum(
            fgrad.numpy.exp(fst.multivariate_normal.logpdf(xx, m, c, allow_singular=True))
        )
    )(x)
    assert np.all(np.isfinite(g)) and np.all(g[-1] == 0.0)
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular=True"):
        fst.multivariate_normal.logpdf(x, m, c)
    with pytest.raises(ValueError, match="positive semidefinite"):
        fst.multivariate_normal.logpdf(x, m, -c)
    np.testing.assert_allclose(
        fst.multivariate_normal.entropy(m, c), ss.multivariate_normal.entropy(m, c), rtol=1e-9
    )


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (SciPy's inf - inf)
def test_multivariate_normal_at_an_infinite_deviation_is_minus_inf():
    """An infinite x or mean with a matrix covariance gave nan (logpdf) where the density is
    0: the solve with the Cholesky factor formed 0 * inf. SciPy gives -inf for a generic
    covariance (and nan for eye(2), from the same 0 * inf)."""
    mvn = fst.multivariate_normal
    mu, c = np.array([0.1, -0.2]), np.array([[2.0, 0.3], [0.3, 1.0]])
    x = np.array([[0.5, 0.4], [np.inf, 0.0], [0.0, -np.inf]])
    want = ss.multivariate_normal.logpdf(x, mu, c)
    assert want[1] == want[2] == -np.inf
    np.testing.assert_allclose(mvn.logpdf(x, mu, c), want, rtol=1e-12)
    assert mvn.pdf(x[1], mu, c) == ss.multivariate_normal.pdf(x[1], mu, c) == 0.0
    assert mvn.logpdf(np.zeros(2), np.array([np.inf, 0.0]), c) == -np.inf
    for cov in [np.eye(2), np.array([[1.0, 1.0], [1.0, 1.0]])]:  # (SciPy: nan; singular)
        assert np.all(mvn.logpdf(x[1:], mu, cov, allow_singular=True) == -np.inf)
    assert np.isnan(mvn.logpdf(np.array([np.nan, np.inf]), mu, c))  # a nan stays nan
    # the finite point keeps its gradient (closed form), the far ones get 0, not nan
    ci = np.linalg.inv(c)
    gx, gm = grad(lambda x, m: fgrad.numpy.sum(mvn.logpdf(x, m, c)), argnums=(0, 1))(x, mu)
    np.testing.assert_allclose(gx[0], -ci @ (x[0] - mu), rtol=1e-12)
    np.testing.assert_array_equal(gx[1:], 0.0)
    np.testing.assert_allclose(gm, ci @ (x[0] - mu), rtol=1e-12)
    for f in [fgrad.jit(mvn.logpdf), fgrad.vmap(mvn.logpdf, in_axes=(0, None, None))]:
        np.testing.assert_array_equal(f(x, mu, c), mvn.logpdf(x, mu, c))


def test_multivariate_normal_shape_errors():
    with pytest.raises(ValueError, match="last axis must have length 3"):
        fst.multivariate_normal.logpdf(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="'cov' has shape"):
        fst.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))


def test_float32_stays_float32():
    x = np.float32([0.3, 0.7])
    for f, args in [
        (fst.gamma.logpdf, (2.5,)),
        (fst.beta.logpdf, (1.0, 2.0)),
        (fst.t.cdf, (3.0,)),
        (fst.norm.logcdf, ()),
        (fst.expon.logsf, ()),
        (fst.chi2.sf, (3.0,)),
    ]:
        assert f(x, *args).dtype == np.float32
        assert grad(lambda v, f=f, args=args: fgrad.numpy.sum(f(v, *args)))(x).dtype == np.float32
    assert fst.poisson.logpmf(np.array([1, 2]), np.float32(2.0)).dtype == np.float32
    assert (
        fst.multivariate_normal.logpdf(np.float32([[0.1, 0.2]]), np.float32([0, 1])).dtype
        == np.float32
    )


# --- integer and float16 arguments: computed in float64 (SciPy's dtype), nothing wraps around ----

LOCATION_SCALE = [  # (name, shape parameters, x, loc, scale): x below, at and above loc
    ("norm", (), [3, 4, 9], [4, 4, 1], [2, 3, 2]),
    ("expon", (), [3, 4, 9], [4, 4, 1], [2, 3, 2]),
    ("gamma", ([3, 2, 5],), [3, 4, 9], [4, 4, 1], [2, 3, 2]),
    ("chi2", ([3, 2, 5],), [3, 4, 9], [4, 4, 1], [2, 3, 2]),
    ("t", ([3, 2, 5],), [3, 4, 9], [4, 4, 1], [2, 3, 2]),
    ("beta", ([3, 2, 5], [2, 4, 3]), [3, 6, 7], [4, 4, 4], [4, 4, 4]),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (SciPy's own, at the edges)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.float16])
@pytest.mark.parametrize(
    "name,shapes,x,loc,scale", LOCATION_SCALE, ids=[c[0] for c in LOCATION_SCALE]
)
def test_integer_and_float16_arguments_are_computed_in_float64(name, shapes, x, loc, scale, dtype):
    """SciPy converts every argument to float64 (x - loc after subtracting). fgrad computed in
    the arguments' types: x - loc wrapped around in uint8 (norm.logpdf(3, loc=4) as at x - loc
    = 255), log(scale) of an 8-bit integer was float16 (norm.pdf 2e-4 off, and vmap gave
    another value than eager), and float16 arguments gave float16 results, or float64 ones
    with float16's error (chi2.pdf, t.pdf). Now: SciPy's float64 computation on the same
    numbers, in eager, jit and vmap alike, and float16's derivatives in float16."""
    args = [np.array(a).astype(dtype) for a in (x, *shapes, loc, scale)]
    exact = [a.astype(np.float64) for a in args]  # (SciPy's own subtraction wraps around)
    for fname in FUNCTIONS:
        ours, theirs = getattr(getattr(fst, name), fname), getattr(getattr(ss, name), fname)
        want = theirs(*exact)
        eager = ours(*args)
        assert eager.dtype == theirs(*args).dtype == np.float64, fname
        np.testing.assert_allclose(eager, want, rtol=1e-12, atol=1e-300, err_msg=fname)
        for how, got in [("jit", fgrad.jit(ours)(*args)), ("vmap", fgrad.vmap(ours)(*args))]:
            assert got.dtype == np.float64, (fname, how)
            np.testing.assert_array_equal(got, eager, err_msg=f"{fname} {how}")
        if dtype == np.float16:
            g = grad(lambda v, f=ours: fgrad.numpy.sum(f(v, *args[1:])))(args[0])
            want_g = grad(lambda v, f=ours: fgrad.numpy.sum(f(v, *exact[1:])))(exact[0])
            assert g.dtype == np.float16, fname
            np.testing.assert_allclose(g, want_g.astype(np.float16), rtol=1e-3, err_msg=fname)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.float16])
def test_poisson_of_integer_or_float16_mu_is_computed_in_float64(dtype):
    """A float16 mu gave float16 CDFs and a float64 pmf with float16's error (2e-4)."""
    k, mu, loc = np.array([3, 5, 9]), np.array([2, 3, 4]).astype(dtype), np.array([1, 1, 0])
    for fname in ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]:
        ours, theirs = getattr(fst.poisson, fname), getattr(ss.poisson, fname)
        eager = ours(k, mu, loc)
        assert eager.dtype == theirs(k, mu, loc).dtype == np.float64, fname
        want = theirs(k, mu.astype(np.float64), loc)
        np.testing.assert_allclose(eager, want, rtol=1e-12, err_msg=fname)
        np.testing.assert_array_equal(fgrad.vmap(ours)(k, mu, loc), eager, err_msg=fname)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.float16])
def test_multivariate_normal_of_integer_or_float16_arguments_is_computed_in_float64(dtype):
    """SciPy converts x, mean and cov to float64 first. fgrad computed x - mean in their type:
    in uint8 it wrapped around, logpdf -16135.3 for SciPy's -7.30 (pdf 0.0 for 6.8e-4); a
    float16 covariance raised "array type float16 is unsupported in linalg"."""
    x, mean = np.array([1, 2, 3]).astype(dtype), np.array([3, 1, 0]).astype(dtype)
    cov = (2 * np.eye(3)).astype(dtype)
    calls = [("logpdf", (x, mean, cov)), ("pdf", (x, mean, cov)), ("entropy", (mean, cov))]
    for fname, args in calls:
        ours = getattr(fst.multivariate_normal, fname)
        theirs = getattr(ss.multivariate_normal, fname)
        want = theirs(*args)
        for how, got in [("eager", ours(*args)), ("jit", fgrad.jit(ours)(*args))]:
            assert np.asarray(got).dtype == np.asarray(want).dtype == np.float64, (fname, how)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{fname} {how}")
    # float64 covariance, integer points: as SciPy too
    want = ss.multivariate_normal.logpdf(x, mean, 2.0 * np.eye(3))
    np.testing.assert_allclose(fst.multivariate_normal.logpdf(x, mean, 2.0 * np.eye(3)), want)


def test_multivariate_normal_keeps_a_python_number_cov_weak_under_jit():
    """Under jit alone a Python number keeps its type (README): a Python-float cov next to
    float32 points gave float32 eagerly and float64 under jit."""
    x, mean = np.float32([[0.1, 0.2]]), np.float32([0.0, 1.0])
    for cov in (2.0, 2):
        for f, args in [
            (fst.multivariate_normal.logpdf, (x, mean, cov)),
            (fst.multivariate_normal.entropy, (mean, cov)),
        ]:
            eager, jitted = f(*args), fgrad.jit(f)
            for _ in (1, 2):  # the record, then its replay
                got = jitted(*args)
                assert np.asarray(got).dtype == np.asarray(eager).dtype == np.float32, (f, cov)
                np.testing.assert_array_equal(got, eager)


def test_every_module_lists_its_functions():
    for name in fst.__all__:
        mod = getattr(fst, name)
        assert mod.__all__ and all(callable(getattr(mod, f)) for f in mod.__all__)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (nan and inf made inside, as eager)
def test_vmap_of_the_gradients_keeps_each_rows_signed_zeros():
    # Under vmap the nan branch of an invalid parameter is always built (a batched mask may
    # hold anywhere); its carrier sent 0.0 back to the valid rows, which turned a -0.0
    # derivative (norm.sf's at x = inf) into 0.0 there, unlike a loop over the rows.
    x = np.array([np.inf, 0.3, -np.inf])
    for f in (fst.norm.sf, fst.norm.cdf, fst.expon.sf, fst.t.sf):
        g = grad(
            lambda x, loc, scale, f=f: f(x, *((3.0,) if f is fst.t.sf else ()), loc, scale),
            argnums=(0, 1, 2),
        )
        want = [g(v, 0.1, 1.5) for v in x]
        got = fgrad.vmap(g, in_axes=(0, None, None))(x, 0.1, 1.5)
        for k in range(3):
            w = np.array([float(wi[k]) for wi in want])
            np.testing.assert_array_equal(got[k], w)
            assert np.array_equal(np.signbit(got[k]), np.signbit(w)), (f, k, got[k], w)


def test_log_cdfs_keep_their_precision_where_the_probability_nears_one():
    """t's and beta's logcdf and logsf were log(p): 0.0 where SciPy gives -6.2e-40 (t.logcdf
    at 40 with 50 degrees of freedom), -8.03801e-14 for -8.03867e-14. Now log1p(-q) there."""
    cases = [
        (fst.t.logcdf, ss.t.logcdf, np.array([40.0, 1e4, -10.0, 0.3, -3.0]), (50.0,)),
        (fst.t.logsf, ss.t.logsf, np.array([-10.0, -40.0, 2.0, 0.0]), (50.0,)),
        (fst.beta.logsf, ss.beta.logsf, np.array([0.3, 0.01, 0.9, -0.5, 1.5]), (60.0, 2.0)),
        (fst.beta.logcdf, ss.beta.logcdf, np.array([0.999, 0.5, 0.01, -0.5, 1.5]), (3.0, 40.0)),
    ]
    for ours, theirs, x, params in cases:
        want = theirs(x, *params)
        np.testing.assert_allclose(ours(x, *params), want, rtol=1e-12, atol=0)
        np.testing.assert_allclose(fgrad.jit(ours)(x, *params), want, rtol=1e-12, atol=0)
    x = np.array([-3.0, 0.2, 5.0, 40.0])  # d/dx log cdf = pdf / cdf, on both branches
    np.testing.assert_allclose(
        grad(lambda x: fst.t.logcdf(x, 5.0).sum())(x),
        ss.t.pdf(x, 5.0) / ss.t.cdf(x, 5.0),
        rtol=1e-10,
    )


SCALAR_SWEEP = [  # (name, shape parameters, functions): every function of each distribution
    ("norm", (), FUNCTIONS + ["ppf", "isf"]),
    ("expon", (), FUNCTIONS),
    ("gamma", (2.5,), FUNCTIONS),
    ("chi2", (3.0,), FUNCTIONS),
    ("t", (3.0,), FUNCTIONS),
    ("beta", (2.0, 3.0), FUNCTIONS),
]


def _input_kinds(v):
    """v as a Python float and int, a NumPy scalar, 0-d and 1-d arrays, in float64 and float32."""
    n = round(v) or 1
    return {
        "python float": v,
        "python int": n,
        "float64 scalar": np.float64(v),
        "0-d float64": np.array(v),
        "1-d float64": np.array([v, v / 2]),
        "int64 scalar": np.int64(n),
        "float32 scalar": np.float32(v),
        "0-d float32": np.array(v, np.float32),
    }


def _result_kind(r):
    return type(r), np.asarray(r).dtype, np.shape(r)


def _assert_result_as_scipy(ours, theirs, float32, what):
    """ours has SciPy's result type (a NumPy scalar for a 0-d result, not a Python float or a
    0-d array) and dtype (float32 data stays float32 in fgrad, where SciPy gives float64)."""
    if float32:
        theirs = np.asarray(theirs).astype(np.float32)[()]
    assert _result_kind(ours) == _result_kind(theirs), (what, ours, theirs)
    rtol = 1e-6 if float32 else 1e-12
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=0, err_msg=str(what))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,shapes,fnames", SCALAR_SWEEP, ids=[c[0] for c in SCALAR_SWEEP])
def test_result_type_and_dtype_match_scipy_eager_jit_and_vjp(name, shapes, fnames):
    """norm.logpdf(0.3) was a Python float, expon.logcdf(0.3), chi2.logsf(0.3, 3) and others
    a 0-d array, where SciPy gives np.float64; and with float32 x and Python-number
    parameters, jit gave float64 where eager gives float32."""
    for fname in fnames:
        ours, theirs = getattr(getattr(fst, name), fname), getattr(getattr(ss, name), fname)
        jitted = fgrad.jit(ours)
        for v in (0.3, -1.0):
            for kind, x in _input_kinds(v).items():
                for every_argument in (False, True):  # the shapes as Python floats, or as x
                    params = (
                        tuple(_input_kinds(s)[kind] for s in shapes) if every_argument else shapes
                    )
                    for loc_scale in ((), (0.1, 1.5)):
                        args = (x, *params, *loc_scale)
                        what = (fname, v, kind, every_argument, loc_scale)
                        want = theirs(*args)
                        eager = ours(*args)
                        float32 = "float32" in kind
                        _assert_result_as_scipy(eager, want, float32, what)
                        primals = {"jit": jitted(*args), "jit replay": jitted(*args)}
                        if "int" not in kind:
                            primals["vjp"] = fgrad.vjp(lambda x: ours(x, *args[1:]), x)[0]
                        for how, r in primals.items():
                            assert _result_kind(r) == _result_kind(eager), (how, what, r)
                            np.testing.assert_array_equal(r, eager, err_msg=str((how, what)))


@pytest.mark.parametrize(
    "fname,args",
    [
        ("logpdf", (0.3,)),
        ("logpdf", (2,)),
        ("logpdf", (np.float64(0.3), 0.1, 2.0)),
        ("logpdf", (np.array(0.3), np.array(0.1), np.array(2.0))),
        ("logpdf", (np.array([0.3, 0.4]), np.zeros(2), np.eye(2))),
        ("logpdf", (np.array([[0.3, 0.4]]), np.zeros(2))),
        ("logpdf", (np.array([[0.3, 0.4], [0.1, 0.2]]), np.zeros(2))),
        ("pdf", (0.3,)),
        ("pdf", (np.array([0.3, 0.4]), np.zeros(2))),
        ("entropy", (0.0, 2.0)),
        ("entropy", (np.zeros(2), np.eye(2))),
    ],
)
def test_multivariate_normal_result_type_matches_scipy(fname, args):
    """multivariate_normal.logpdf of one point was a 0-d array, SciPy's np.float64."""
    ours, theirs = getattr(fst.multivariate_normal, fname), getattr(ss.multivariate_normal, fname)
    want = theirs(*args)
    for how, r in [
        ("eager", ours(*args)),
        ("jit", fgrad.jit(ours)(*args)),
        ("vjp", fgrad.vjp(lambda x: ours(x, *args[1:]), np.asarray(args[0], float))[0]),
    ]:
        assert _result_kind(r) == _result_kind(want), (how, r, want)
        np.testing.assert_allclose(r, want, rtol=1e-12)


@pytest.mark.parametrize("name,shapes,fnames", SCALAR_SWEEP)
def test_lists_are_taken_as_arrays_as_scipy(name, shapes, fnames):
    """A list as x, loc, scale or a shape parameter raised a bare operator TypeError
    ("unsupported operand type(s) for -: 'list' and 'int'") in norm, gamma, chi2, beta and t;
    SciPy takes array-likes. Each argument in turn is a list; values and types as SciPy's."""
    ours, theirs = getattr(fst, name), getattr(ss, name)
    for fname in fnames:
        x = 0.3 if fname in ("ppf", "isf") else 1.2
        args = [x, *shapes, 0.1, 1.5]
        for i in range(len(args)):
            listed = args[:i] + [[args[i], args[i] * 1.5]] + args[i + 1 :]
            got, want = getattr(ours, fname)(*listed), getattr(theirs, fname)(*listed)
            assert _result_kind(got) == _result_kind(want), (fname, i, got, want)
            np.testing.assert_allclose(got, want, rtol=1e-9, err_msg=f"{name}.{fname} arg {i}")
    # a list holding a traced value stays traced: d/dloc of logpdf at the list's first entry
    f = ours.logpdf
    g = grad(lambda m: fgrad.numpy.sum(f(1.2, *shapes, [m, 0.4], 1.5)))(0.1)
    h = 1e-6
    fd = theirs.logpdf(1.2, *shapes, 0.1 + h, 1.5) - theirs.logpdf(1.2, *shapes, 0.1 - h, 1.5)
    np.testing.assert_allclose(g, fd / (2 * h), rtol=1e-6)


def test_dirichlet_and_multivariate_normal_take_lists_as_scipy():
    """dirichlet.logpdf([.2, .8], [1., 2.]) and multivariate_normal.logpdf with a list x, mean
    or cov raised TypeError; SciPy takes array-likes."""
    x, alpha = [0.2, 0.3, 0.5], [1.5, 2.0, 3.0]
    for fname, args in [
        ("logpdf", (x, alpha)),
        ("logpdf", (x[:2], alpha)),
        ("pdf", (np.array(x), alpha)),
        ("entropy", (alpha,)),
        ("mean", (alpha,)),
        ("var", (alpha,)),
    ]:
        got, want = getattr(fst.dirichlet, fname)(*args), getattr(ss.dirichlet, fname)(*args)
        assert _result_kind(got) == _result_kind(want), (fname, got, want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    x2, m2, c2 = [0.2, 0.8], [0.1, -0.3], [[2.0, 0.3], [0.3, 1.0]]
    for fname, args in [
        ("logpdf", (x2, m2)),
        ("logpdf", (x2, m2, c2)),
        ("logpdf", (np.array(x2), np.zeros(2), [1.0, 2.0])),
        ("logpdf", ([x2, m2], None, c2)),
        ("pdf", (x2, m2, c2)),
        ("entropy", (m2, c2)),
        ("entropy", ([0.0, 0.0], [1.0, 2.0])),
    ]:
        mvn, smvn = fst.multivariate_normal, ss.multivariate_normal
        got, want = getattr(mvn, fname)(*args), getattr(smvn, fname)(*args)
        assert _result_kind(got) == _result_kind(want), (fname, got, want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the closed form d/dmean = cov^-1 (x - mean), through a list holding the traced mean
    g = grad(lambda m: fst.multivariate_normal.logpdf(x2, [m, -0.3], c2))(0.1)
    want = (np.linalg.inv(c2) @ (np.array(x2) - m2))[0]
    np.testing.assert_allclose(g, want, rtol=1e-12)


@pytest.mark.parametrize("fname", ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"])
def test_poisson_result_type_matches_scipy(fname):
    """poisson off its support (and with loc) returned a 0-d ndarray, SciPy np.float64."""
    for args in [(0.5, 2.5), (-1.0, 2.5), (1, 2.5, 5), (1.0, 2.5, 5), (1, 2.5), (3, -1.0)]:
        got, want = getattr(fst.poisson, fname)(*args), getattr(ss.poisson, fname)(*args)
        assert _result_kind(got) == _result_kind(want), (args, got, want)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dirichlet_result_type_matches_scipy():
    alpha, x = np.array([1.5, 2.0, 3.0]), np.array([0.2, 0.3, 0.5])
    for fname, args in [
        ("logpdf", (x, alpha)),
        ("pdf", (x, alpha)),
        ("logpdf", (x[:, None] * np.ones((3, 2)), alpha)),
        ("entropy", (alpha,)),
        ("mean", (alpha,)),
        ("var", (alpha,)),
    ]:
        ours, theirs = getattr(fst.dirichlet, fname), getattr(ss.dirichlet, fname)
        want = theirs(*args)
        for how, r in [
            ("eager", ours(*args)),
            ("jit", fgrad.jit(ours)(*args)),
            ("vjp", fgrad.vjp(lambda a: ours(*args[:-1], a), args[-1])[0]),
        ]:
            assert _result_kind(r) == _result_kind(want), (fname, how, r, want)
            np.testing.assert_allclose(r, want, rtol=1e-12)


@pytest.mark.parametrize("fname", FUNCTIONS)
def test_vmap_of_t_derivatives_equals_the_loop_bit_for_bit(fname):
    """Under vmap both of t's df forms (below and from df = 100) ran, picked by where, which
    sums the df cotangent in another order than a loop over the rows: t.pdf's d/d df differed
    on 24 of 50 rows, by up to 128 ulps (jit matched the loop). Rows below and above df = 100
    are mixed here, as are batched and shared arguments."""
    f = getattr(fst.t, fname)
    rng = np.random.default_rng(0)
    n = 40
    x = rng.normal(size=n) * 2
    df = np.concatenate([rng.uniform(0.3, 3.0, n // 2), rng.uniform(50.0, 400.0, n // 2)])
    loc, scale = rng.normal(size=n) * 0.1, rng.uniform(0.5, 2.0, n)
    g = grad(f, argnums=(0, 1, 2, 3))
    for in_axes in [(0, 0, 0, 0), (0, 0, None, None), (None, 0, None, None)]:
        args = [a if ax == 0 else a[0] for a, ax in zip((x, df, loc, scale), in_axes)]
        got = fgrad.vmap(g, in_axes=in_axes)(*args)
        rows = [g(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]) for i in range(n)]
        for k in range(4):
            want = np.array([r[k] for r in rows])
            np.testing.assert_array_equal(got[k], want, err_msg=f"{fname} {in_axes} d/d arg {k}")
        np.testing.assert_array_equal(
            fgrad.vmap(f, in_axes=in_axes)(*args),
            [f(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]) for i in range(n)],
        )


@pytest.mark.parametrize(
    "cov", [np.array([2.0, 0.5]), 0.5, np.eye(2)], ids=["diag", "scalar", "eye"]
)
def test_multivariate_normal_gradients_of_finite_rows_beside_an_infinite_one(cov):
    # a diagonal covariance took the formula at an infinite deviation: its gradient there
    # was -inf, and a batch masking that row had nan gradients in the mean (jacfwd right)
    x = np.array([[np.inf, 0.0], [0.5, 0.4]])

    def f(m):
        out = fst.multivariate_normal.logpdf(x, m, cov)
        return fgrad.numpy.sum(fgrad.numpy.where(fgrad.numpy.isfinite(out), out, 0.0))

    mean = np.array([0.1, -0.2])
    np.testing.assert_allclose(grad(f)(mean), fgrad.jacfwd(f)(mean), rtol=1e-13)
    assert np.all(np.isfinite(grad(f)(mean)))
    assert fst.multivariate_normal.logpdf(x, mean, cov)[0] == -np.inf


@pytest.mark.parametrize(
    "dist, args, x",
    [
        ("gamma", (1e10,), 1e10),
        ("gamma", (1e12,), 1e12 + 3e6),
        ("gamma", (150.0,), 140.0),
        ("beta", (1e10, 1e10), 0.5),
        ("beta", (3e4, 1.5e4), 0.66),
        ("gamma", (150.0,), 1e-20),  # far below the peak: the direct form (x -> 0)
        ("beta", (150.0, 150.0), 1e-20),
    ],
)
def test_gamma_and_beta_densities_at_large_shapes_against_mpmath(dist, args, x):
    # their logs were differences of terms of size a log x (or (a+b) log x): 2.9e-5 relative
    # at a = b = 1e10, 4e-3 at a = 1e12 (pdf, and the cdfs' derivatives in x)
    mpmath.mp.dps = 250  # (log Q(101, 1) = -3.9e-161: 1 - Q needs 161 digits)
    xm, *shapes = (mpmath.mpf(v) for v in (x, *args))
    if dist == "gamma":
        (a,) = shapes
        log_want = (a - 1) * mpmath.log(xm) - xm - mpmath.loggamma(a)
    else:
        a, b = shapes
        log_want = (
            (a - 1) * mpmath.log(xm) + (b - 1) * mpmath.log1p(-xm) - mpmath.log(mpmath.beta(a, b))
        )
    want = float(mpmath.exp(log_want))
    module = getattr(fst, dist)
    assert module.pdf(x, *args) == pytest.approx(want, rel=1e-14)
    assert module.logpdf(x, *args) == pytest.approx(float(log_want), rel=1e-14)
    assert fgrad.grad(lambda x: module.cdf(x, *args))(x) == pytest.approx(want, rel=1e-14)
    assert fgrad.grad(lambda x: module.sf(x, *args))(x) == pytest.approx(-want, rel=1e-14)


def test_gamma_and_beta_logpdf_derivatives_in_the_shapes_far_from_the_peak():
    # Stirling's form used there (it was, from a = 100 on, for every x) cancelled in its
    # derivative in a: 1.0 where log x - digamma(a) is 685.768 (review probe RV3)
    from scipy.special import digamma

    x, a = 1e300, 150.0
    got = fgrad.grad(fst.gamma.logpdf, argnums=1)(x, a)
    assert got == pytest.approx(math.log(x) - digamma(a), rel=1e-13)
    x, a, b = 1 - 1e-16, 150.0, 150.0
    want = math.log(x) - digamma(a) + digamma(a + b)
    assert fgrad.grad(fst.beta.logpdf, argnums=1)(x, a, b) == pytest.approx(want, rel=1e-12)
    a = 2e4  # a large shape, at x far from it
    got = fgrad.grad(fst.gamma.logpdf, argnums=1)(1e-20, a)
    assert got == pytest.approx(math.log(1e-20) - digamma(a), rel=1e-13)
