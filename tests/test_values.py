"""Tracing never changes a value, and fgrad's values are NumPy's and SciPy's.

For every row of the gradient table (tests/rows_*.py, see tests/gradtable.py), in float64, in
float32 and with complex inputs:

- `test_value_is_numpys`: the untraced call `row.fn(*args)` has the dtype, shape and value
  (to rounding) of NumPy's or SciPy's reference (`gradtable.reference`: the row's function with
  every fgrad name replaced by NumPy's or SciPy's name of the same spelling), and the same
  containers (a namedtuple where NumPy returns one). Factorizations (eigenvectors, singular
  vectors, Q) are compared up to the phase of each vector. Where NumPy or SciPy reject the
  input (a complex argument to `floor`, a scalar to `correlate`), fgrad must reject it too,
  with a TypeError or ValueError; where NumPy would discard an imaginary part with a
  ComplexWarning, fgrad may refuse instead.
- `test_tracing_keeps_the_value`: the value returned by `vjp` and `jvp` and the value
  computed inside `grad` (as `has_aux`), in every dtype; in float64 also the value returned
  by `linearize` and by `vjp` nested inside `jvp` (forward over reverse, as `hessian`), and
  the values computed inside `jacfwd` and `jacrev` (their batched passes): these run once
  per row, in one dtype, to keep the file fast (their handling of values is the same code in
  every dtype). Each is the untraced value bit for bit (NaN payloads aside): the same
  containers, dtypes, shapes and bits.

The declared non-differentiable names (`Nondiff`) get the same two checks, on the input the
table uses for them. `test_every_public_name_is_compared_with_numpy` fails when a public name
is not compared with NumPy's or SciPy's by any row of its name.

Tolerances. Tracing: none (bit for bit). Against NumPy and SciPy: 64 units of rounding of
the run's dtype, relative to the largest magnitude of the output leaf. 90% of the cases are
bit for bit; the others compute by another route (`dot` and `tensordot` by other BLAS calls,
`norm` as a square root of a sum, the densities of `scipy.stats` as compositions, SciPy's
`eigh` by another LAPACK driver), measured at up to 20 units.

Float32. fgrad keeps float32 where NumPy or SciPy compute in float64 and return float64 for
float32 inputs (`interp`, `cov`, `vander`, the distributions of `scipy.stats`, SciPy's
special functions of an integer order): README, "Float32 in, float32 out". There the value is
compared at float32 precision and the dtype must be float32 (float64 for rows that
`promote`, as the gradient table has it). Anywhere else the dtype is NumPy's.

References: `reference_of(row)` is the row's own `reference` if it has one, else one of
tests/rows_values.py's REFERENCES (pytrees of `odeint`, the meaningful triangle of
`cho_factor`, ...), else `gradtable.reference(row.fn)`. The rows whose function is a lambda
are read with NumPy's names too, so every row is compared.

Known defects in files owned elsewhere are listed in `KNOWN` with the reason; those tests are
marked xfail(strict=True), so they turn into failures (XPASS) once fixed: then drop the entry.
Run one family while working on it: `FGRAD_ROWS=linalg pytest tests/test_values.py`.
"""

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from gradtable import NoReference, load, public_names, recording, reference, sample
from rows_values import REFERENCES

import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jacrev, jit, jvp, linearize, vjp
from fgrad.core import primal

ROWS, NONDIFF = load()
KINDS = ("float64", "float32", "complex128")

# --- inputs ---------------------------------------------------------------------------------------


def complex_args(args, seed):
    """The row's float64 arguments plus an imaginary part of up to 0.2. On square matrices the
    imaginary part is antisymmetric, so a symmetric (positive definite) input becomes a
    Hermitian (positive definite) one, as a complex row of eigh or cholesky needs."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for a in args:
        im = rng.uniform(-0.1, 0.1, np.shape(a))
        if np.ndim(a) >= 2 and np.shape(a)[-1] == np.shape(a)[-2]:
            im = im - np.swapaxes(im, -1, -2)
        else:
            im = 2.0 * im
        z = np.asarray(a + 1j * im, dtype=np.complex128)
        out.append(z[()] if z.ndim == 0 else z)
    return tuple(out)


def row_args(row, kind):
    if kind == "complex128":
        return complex_args(row.args(), row.seed)
    return row.args(np.dtype(kind))


NONDIFF_X = np.array([-1.3, 0.4, 2.6])  # the input tests/test_gradtable.py uses for them


def nondiff_args(kind):
    if kind == "complex128":
        return complex_args((NONDIFF_X,), 0)
    return (NONDIFF_X.astype(kind),)


# --- comparing values -----------------------------------------------------------------------------


def _flatten(tree, path="out", lists_are_tuples=False):
    """[(path, leaf)] of a result, and a description of its containers (types, lengths)."""
    if isinstance(tree, (tuple, list)):
        kind = type(tree).__name__
        leaves, shape = [], ["tuple" if lists_are_tuples and kind == "list" else kind]
        for i, v in enumerate(tree):
            sub_leaves, sub_shape = _flatten(v, f"{path}[{i}]", lists_are_tuples)
            leaves += sub_leaves
            shape.append(sub_shape)
        return leaves, shape
    if isinstance(tree, dict):
        leaves, shape = [], ["dict"]
        for k in sorted(tree):
            sub_leaves, sub_shape = _flatten(tree[k], f"{path}[{k!r}]", lists_are_tuples)
            leaves += sub_leaves
            shape.append((k, sub_shape))
        return leaves, shape
    return [(path, tree)], "leaf"


def _same_bits(a, b):
    """a and b are the same bits, except that any NaN equals any NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind not in "fc":
        return np.array_equal(a, b)
    a = np.ascontiguousarray(a).reshape(-1).view(a.real.dtype)
    b = np.ascontiguousarray(b).reshape(-1).view(b.real.dtype)
    nan = np.isnan(a) & np.isnan(b)
    same = (a == b) & (np.signbit(a) == np.signbit(b))
    return bool(np.all(same | nan))


def assert_identical(traced, plain, who):
    """`traced`, a transform's value, is `plain`, the untraced value, bit for bit."""
    t_leaves, t_shape = _flatten(traced)
    p_leaves, p_shape = _flatten(plain)
    assert t_shape == p_shape, f"{who}: containers {t_shape}, untraced {p_shape}"
    for (path, t), (_, p) in zip(t_leaves, p_leaves):
        t, p = np.asarray(t), np.asarray(p)
        assert t.dtype == p.dtype, f"{who}: {path} has dtype {t.dtype}, untraced {p.dtype}"
        assert t.shape == p.shape, f"{who}: {path} has shape {t.shape}, untraced {p.shape}"
        if not _same_bits(t, p):
            diff = np.max(np.abs(t.astype(complex) - p.astype(complex)), initial=0)
            raise AssertionError(
                f"{who}: {path} differs from the untraced value (by up to "
                f"{diff:.3g}):\n{t!r}\nuntraced:\n{p!r}"
            )


# Names whose results hold vectors fixed only up to a phase (a sign, for real input): each
# vector (column, or row of Vh) of fgrad's result is turned to NumPy's before comparing.
FACTORIZATIONS = {
    "linalg.svd",
    "linalg.eigh",
    "linalg.qr",
    "linalg.eig",
    "scipy.linalg.eigh",
    "scipy.linalg.svd",
    "scipy.linalg.qr",
    "scipy.linalg.schur",
    "scipy.linalg.eig",
}


def _aligned(a, ref, axis):
    """a with each vector along `axis` (-2: columns, -1: rows) times the unit phase that best
    turns it onto ref's."""
    c = np.sum(np.conj(a) * ref, axis=axis, keepdims=True)
    phase = np.where(np.abs(c) > 0, c / np.where(np.abs(c) > 0, np.abs(c), 1), 1)
    return a * phase.astype(a.dtype) if a.dtype.kind == "c" else a * np.real(phase)


def _close(a, ref, tol):
    scale = np.max(np.abs(ref), initial=0.0) if ref.size else 0.0
    if not np.all(np.isfinite(scale)):
        scale = 0.0
    return np.allclose(a, ref, rtol=tol, atol=tol * scale, equal_nan=True)


def expected_dtype(ref_dtype, kind, keeps_float32):
    """NumPy's dtype, except that fgrad keeps single precision where NumPy or SciPy compute in
    double for single-precision inputs (README: "Float32 in, float32 out")."""
    if kind == "float32" and keeps_float32:
        return {
            np.dtype(np.float64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.complex64),
        }.get(ref_dtype, ref_dtype)
    return ref_dtype


TOL_UNITS = 64  # units of rounding of the run's dtype (see the module docstring)


def assert_numpys(out, ref, kind, name, keeps_float32=False):
    """fgrad's untraced value `out` has the containers, dtypes, shapes and (to rounding)
    values of NumPy's or SciPy's `ref`."""
    # a list where NumPy returns a tuple, or the reverse, unpacks and indexes alike (SciPy's
    # batched eigh returns a list, its unbatched eigh a tuple)
    o_leaves, o_shape = _flatten(out, lists_are_tuples=True)
    r_leaves, r_shape = _flatten(ref, lists_are_tuples=True)
    assert o_shape == r_shape, f"containers {o_shape}; NumPy's {r_shape}"
    tol = TOL_UNITS * np.finfo(np.complex64 if kind == "float32" else np.float64).eps
    for (path, o), (_, r) in zip(o_leaves, r_leaves):
        o, r = np.asarray(o), np.asarray(r)
        want = expected_dtype(r.dtype, kind, keeps_float32)
        assert o.dtype == want, f"{path} has dtype {o.dtype}; NumPy's is {r.dtype}" + (
            f" (expected {want}: float32 in, float32 out)" if want != r.dtype else ""
        )
        assert o.shape == r.shape, f"{path} has shape {o.shape}; NumPy's is {r.shape}"
        if o.dtype.kind not in "fc":
            assert np.array_equal(o, r), f"{path} is\n{o!r}\nNumPy's is\n{r!r}"
            continue
        if _close(o, r, tol):
            continue
        if (
            name in FACTORIZATIONS
            and o.ndim >= 2
            and (_close(_aligned(o, r, -2), r, tol) or _close(_aligned(o, r, -1), r, tol))
        ):
            continue  # the same vectors up to their phases
        with np.errstate(all="ignore"):
            err = np.max(np.abs(o - r) / np.maximum(np.abs(r), 1e-300), initial=0)
        raise AssertionError(
            f"{path} differs from NumPy's by up to {err:.3g} relative "
            f"(tolerance {tol:.3g}):\n{o!r}\nNumPy's:\n{r!r}"
        )


# --- known defects in files other helpers own -----------------------------------------------------


@dataclass
class Known:
    """Cases of `test` ("numpy" or "tracing") that fail for a known defect: rows named `name`,
    of the given `kinds`, whose variant or id is in `variants` (None: every row)."""

    test: str
    name: str
    kinds: tuple
    reason: str
    variants: tuple | None = None

    def covers(self, test, row, kind):
        return (
            test == self.test
            and row.name == self.name
            and kind in self.kinds
            and (self.variants is None or row.variant in self.variants or row.id in self.variants)
        )


# A defect found and not yet fixed is listed here as a `Known` (its cases xfail, strictly, with
# the defect named, so that they fail again once it is fixed). None at present.
KNOWN = []


_KNOWN_BY_NAME = {}
for _k in KNOWN:
    _KNOWN_BY_NAME.setdefault(_k.name, []).append(_k)


def _known(test, row, kind):
    for k in _KNOWN_BY_NAME.get(row.name, ()):
        if k.covers(test, row, kind):
            return k.reason
    return None


@contextlib.contextmanager
def _brief_if_known(test, row, kind):
    """A known defect's failure reported as its message alone: pytest would otherwise format
    a full traceback for every expected failure (parsing each source file on the way), which
    costs more than all the checks."""
    if _known(test, row, kind) is None:
        yield
        return
    try:
        yield
    except Exception as e:
        pytest.fail(f"{type(e).__name__}: {e}", pytrace=False)


def _cases(test):
    """(row, kind) of every sampled row (tests/gradtable.py, `sample`; FGRAD_FULL=1 runs them
    all), each in every kind: NumPy's value once per name and variant, tracing once per name
    (tracing is the same code for every variant of a name)."""
    key = (lambda r: (r.name, r.variant)) if test == "numpy" else (lambda r: r.name)
    cases = []
    for row in sample(ROWS, f"values-{test}", key=key):
        for kind in KINDS:
            reason = _known(test, row, kind)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(row, kind, id=f"{row.id}-{kind}", marks=marks))
    return cases


# --- the untraced value is NumPy's ----------------------------------------------------------------


def reference_of(row):
    """NumPy's or SciPy's version of a row's function: the row's own `reference`, one from
    tests/rows_values.py's REFERENCES, or the row's function with NumPy's names."""
    if row.reference is not None:
        return row.reference
    if (row.name, getattr(row, "variant", "")) in REFERENCES:
        return REFERENCES[(row.name, getattr(row, "variant", ""))]
    return reference(row.fn)


def _call(fn, args):
    """(value, exception, whether NumPy warned that it discards an imaginary part) of
    fn(*args), other warnings silenced."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="ignore"):
            try:
                value, error = fn(*args), None
            except NoReference:
                raise
            except Exception as e:
                value, error = None, e
    discards = any(issubclass(w.category, np.exceptions.ComplexWarning) for w in caught)
    return value, error, discards


def check_against_numpy(fn, ref, args, kind, name, keeps_float32=False):
    try:
        expected, ref_error, discards = _call(ref, args)
    except NoReference as e:
        pytest.skip(str(e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                out, error = fn(*args), None
            except (TypeError, ValueError, NotImplementedError) as e:
                out, error = None, e
    if ref_error is not None:
        if isinstance(ref_error, NotImplementedError) and error is None:
            pytest.skip(f"NumPy/SciPy have not implemented this ({ref_error}); fgrad has")
        assert error is not None, (
            f"NumPy/SciPy reject these {kind} inputs ({type(ref_error).__name__}: "
            f"{ref_error}) but fgrad returns {out!r}; raise a TypeError or ValueError too"
        )
        pytest.skip(
            f"NumPy/SciPy reject these {kind} inputs: {type(ref_error).__name__}: {ref_error}"
        )
    if error is not None and discards:
        pytest.skip(f"fgrad refuses ({error}) where NumPy/SciPy discard an imaginary part")
    if error is not None:
        raise AssertionError(
            f"fgrad raises {type(error).__name__}: {error}; NumPy/SciPy return {expected!r}"
        ) from error
    assert_numpys(out, expected, kind, name, keeps_float32)


def _keeps_float32(row):
    """Whether the row's float32 result must be float32 (the gradient table's float32 run
    applies, and no float64 constant takes part)."""
    return row.float32 is True and not row.promotes


@pytest.mark.parametrize("row, kind", _cases("numpy"))
def test_value_is_numpys(row, kind):
    with _brief_if_known("numpy", row, kind):
        check_against_numpy(
            row.fn, reference_of(row), row_args(row, kind), kind, row.name, _keeps_float32(row)
        )


@pytest.mark.parametrize("entry", NONDIFF, ids=[n.name for n in NONDIFF])
@pytest.mark.parametrize("kind", KINDS)
def test_value_of_a_non_differentiable_name_is_numpys(entry, kind):
    check_against_numpy(entry.fn, reference_of(entry), nondiff_args(kind), kind, entry.name)


# --- tracing keeps the value ----------------------------------------------------------------------


def _float_leaves(out):
    return [v for _, v in _flatten(out)[0] if np.asarray(primal(v)).dtype.kind in "fc"]


def _scalar(out):
    """A real scalar computed from every float leaf of `out` (for grad)."""
    total = 0.0
    for v in _float_leaves(out):
        total = total + fnp.sum(fnp.real(v))
    return total


def _capture(fn, into):
    """fn, noting the plain value of what it returns each time it runs."""

    def g(*args):
        out = fn(*args)
        into.append(_unbox(out))
        return out

    return g


def _unbox(tree):
    if isinstance(tree, (tuple, list)):
        values = [_unbox(v) for v in tree]
        return type(tree)(*values) if hasattr(tree, "_fields") else type(tree)(values)
    if isinstance(tree, dict):
        return {k: _unbox(v) for k, v in tree.items()}
    return primal(tree)


def check_tracing(fn, args, every_transform=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                plain = fn(*args)
            except (TypeError, ValueError, NotImplementedError) as e:
                pytest.skip(
                    f"the untraced call raises {type(e).__name__}: {e} "
                    "(test_value_is_numpys checks that NumPy does too)"
                )
            _check_transforms(fn, args, plain, every_transform)


def _check_transforms(fn, args, plain, every_transform):
    tangents = tuple(np.ones_like(a) for a in args)
    nums = tuple(range(len(args)))
    assert_identical(vjp(fn, *args)[0], plain, "vjp")
    assert_identical(jvp(fn, args, tangents)[0], plain, "jvp")
    if _float_leaves(plain):
        _, value = grad(lambda *a: (lambda o: (_scalar(o), o))(fn(*a)), argnums=nums, has_aux=True)(
            *args
        )
        assert_identical(value, plain, "grad's aux")
    if not every_transform:
        return
    assert_identical(linearize(fn, *args)[0], plain, "linearize")
    assert_identical(jvp(lambda *a: vjp(fn, *a)[0], args, tangents)[0], plain, "jvp of vjp")
    complex_in = any(np.iscomplexobj(a) for a in args)
    complex_out = [np.iscomplexobj(v) for v in _float_leaves(plain)]
    if not complex_in or all(complex_out):  # jacfwd's one-hot tangents are real, or f'(z)
        seen = []
        jacfwd(_capture(fn, seen), argnums=nums, holomorphic=complex_in)(*args)
        for value in seen:
            assert_identical(value, plain, "inside jacfwd")
    if not any(complex_out) or (complex_in and all(complex_out)):  # likewise for jacrev
        seen = []
        jacrev(_capture(fn, seen), argnums=nums, holomorphic=any(complex_out))(*args)
        for value in seen:
            assert_identical(value, plain, "inside jacrev")


@pytest.mark.parametrize("row, kind", _cases("tracing"))
def test_tracing_keeps_the_value(row, kind):
    with _brief_if_known("tracing", row, kind):
        check_tracing(row.fn, row_args(row, kind), every_transform=kind == "float64")


@pytest.mark.parametrize("entry", NONDIFF, ids=[n.name for n in NONDIFF])
@pytest.mark.parametrize("kind", KINDS)
def test_tracing_keeps_the_value_of_a_non_differentiable_name(entry, kind):
    (x,) = nondiff_args(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            plain = entry.fn(x)
        except (TypeError, ValueError) as e:
            pytest.skip(f"the untraced call raises {type(e).__name__}: {e}")

        def f(x):  # the output to differentiate, and the name's value as aux
            return fnp.sum(fnp.real(x)), entry.fn(x)

        assert_identical(vjp(f, x, has_aux=True)[2], plain, "vjp's aux")
        assert_identical(jvp(f, (x,), (np.ones_like(x),), has_aux=True)[2], plain, "jvp's aux")
        assert_identical(grad(f, has_aux=True)(x)[1], plain, "grad's aux")


# --- every public name is compared with NumPy's ---------------------------------------------------


def test_every_public_name_is_compared_with_numpy():
    """Each public name is called through its NumPy or SciPy reference by at least one row
    (or non-differentiable entry) of its own name, so test_value_is_numpys compares it."""
    import os

    if os.environ.get("FGRAD_ROWS"):
        pytest.skip("FGRAD_ROWS loads only some families of rows")
    compared = set()
    for entries, args_of in ((ROWS, lambda r: r.args()), (NONDIFF, lambda e: (NONDIFF_X,))):
        for entry in entries:
            ref = reference_of(entry)
            with recording() as called:
                try:
                    _, error, _ = _call(ref, args_of(entry))
                except NoReference:
                    continue
            if error is None and entry.name in called:
                compared.add(entry.name)
    missing = sorted(set(public_names()) - compared)
    assert not missing, (
        f"no row or non-differentiable entry of these names calls NumPy's or SciPy's "
        f"counterpart: {missing}; give one a reference (tests/rows_values.py)"
    )


# --- the checks catch what they are for -----------------------------------------------------------


def test_assert_identical_tells_apart_one_ulp_a_signed_zero_a_dtype_and_a_container():
    x = np.array([1.0, -0.0, np.nan])
    assert_identical(x.copy(), x, "same")
    assert_identical(np.array([1.0, -0.0, -np.nan]), x, "any nan is any nan")
    for other in (
        np.array([np.nextafter(1.0, 2.0), -0.0, np.nan]),
        np.array([1.0, 0.0, np.nan]),
        x.astype(np.float32),
        x[:2],
        [x],
        (x, x),
    ):
        with pytest.raises(AssertionError):
            assert_identical(other, x, "changed")
    with pytest.raises(AssertionError, match="containers"):
        assert_identical([x, x], (x, x), "list for tuple")


def test_assert_numpys_allows_rounding_and_vector_phases_only():
    ref = np.array([[0.6, 0.8], [0.8, -0.6]])
    assert_numpys(ref * (1 + 1e-15), ref, "float64", "linalg.eigh")
    flipped = ref * np.array([-1.0, 1.0])  # an eigenvector's sign is free
    assert_numpys(flipped, ref, "float64", "linalg.eigh")
    with pytest.raises(AssertionError, match="differs"):
        assert_numpys(flipped, ref, "float64", "matmul")  # not a factorization: no freedom
    with pytest.raises(AssertionError, match="differs"):
        assert_numpys(ref[:, ::-1], ref, "float64", "linalg.eigh")  # other vectors
    with pytest.raises(AssertionError, match="dtype"):
        assert_numpys(ref.astype(np.float32), ref, "float64", "matmul")
    with pytest.raises(AssertionError, match="containers"):
        assert_numpys((ref, ref), [ref], "float64", "matmul")
    # float32 in, float32 out where NumPy computes in double; elsewhere NumPy's dtype
    assert_numpys(ref.astype(np.float32), ref, "float32", "cov", keeps_float32=True)
    with pytest.raises(AssertionError, match="dtype"):
        assert_numpys(ref, ref, "float32", "cov", keeps_float32=True)


def test_check_tracing_catches_a_value_changed_under_a_transform():
    from fgrad.core import Box

    def f(x):  # adds one unit in the last place when traced
        return x * 1.0000000000000002 if type(x) is Box else x * 1.0

    with pytest.raises(AssertionError, match="vjp: out differs"):
        check_tracing(f, (np.array([1.0, 2.0]),))
    check_tracing(lambda x: x * 1.0, (np.array([1.0, 2.0]),))


def test_check_against_numpy_catches_an_input_numpy_rejects_and_a_wrong_value():
    with pytest.raises(AssertionError, match="reject"):
        check_against_numpy(lambda x: x, np.floor, (np.array([1j]),), "complex128", "floor")
    with pytest.raises(AssertionError, match="differs"):
        check_against_numpy(lambda x: fnp.sin(x) + 1e-12, np.sin, (np.ones(2),), "float64", "sin")


def test_reference_reads_a_function_with_numpys_names():
    import fgrad.scipy.special as special

    la = fnp.linalg
    shift = 0.5

    def f(x, g=fnp.cos):
        return fnp.sum(fnp.sin(x) * g(x), axis=0) + la.norm(x) + special.expit(x[0]) + shift

    x = np.array([[0.3, -1.2], [2.0, 0.7]])
    with recording() as called:
        value = reference(f)(x)
    import scipy.special

    expected = (
        np.sum(np.sin(x) * np.cos(x), axis=0)
        + np.linalg.norm(x)
        + scipy.special.expit(x[0])
        + shift
    )
    assert np.array_equal(value, expected)
    assert called == {"sum", "sin", "cos", "linalg.norm", "scipy.special.expit"}
    from fgrad.numpy.shaping import getitem  # not a public name: NumPy has no counterpart

    with pytest.raises(NoReference, match="getitem"):
        reference(lambda x: getitem(x, 0))(x)


_X = np.array([0.5, -1.5, 2.0])
# Inputs where fgrad's traced path once gave another value than NumPy's (found by replaying
# every row of the table at a nan, an inf and a -0.0): each case's transforms keep NumPy's.
SPECIAL_INPUTS = {
    # argpartition arranges a nan otherwise than partition does
    "partition, a nan": (
        lambda x: fnp.partition(x, 3),
        (np.array([np.nan, 1.5, 0.8, -1.3, -0.6]),),
    ),
    "partition, axis=None": (
        lambda x: fnp.partition(x, 2, axis=None),
        (np.array([[np.nan, 1.0], [-2.0, 0.5]]),),
    ),
    # NumPy's polymul drops each factor's leading zeros (poly1d)
    "polymul, a leading zero": (lambda a: fnp.polymul(a, _X), (np.array([0.0, 1.0, 2.0]),)),
    "polymul, all zeros": (lambda a: fnp.polymul(a, _X), (np.array([-0.0, 0.0]),)),
    # NumPy's polydiv adds 0.0 to both: a -0.0 coefficient is 0.0
    "polydiv, a -0.0": (lambda u: fnp.polydiv(u, _X), (np.array([-0.0, 2.0, 3.0, 4.0]),)),
    # a traced `initial` of inf, or a -0.0 extreme: the value is NumPy's, not (inf - inf) * w
    "max, initial -inf": (lambda x, c: fnp.max(x, initial=c), (_X, np.float64(-np.inf))),
    "max, initial +inf": (lambda x, c: fnp.max(x, initial=c), (_X, np.float64(np.inf))),
    "min, a -0.0 extreme": (
        lambda x, c: fnp.min(x, axis=1, initial=c),
        (np.full((2, 2), -0.0), np.float64(0.5)),
    ),
    "prod, initial inf": (lambda x, c: fnp.prod(x, initial=c), (_X, np.float64(np.inf))),
    "sum, initial -inf": (lambda x, c: fnp.sum(x, initial=c), (_X, np.float64(-np.inf))),
    # diag wrote v by adding it to zeros: 0.0 + -0.0 is 0.0
    "diag, a -0.0": (fnp.diag, (np.array([-0.0, 1.0]),)),
    "diagflat, a -0.0": (lambda v: fnp.diagflat(v, 1), (np.array([-0.0, 1.0]),)),
    # nan_to_num of a 0-d value: NumPy's scalar
    "nan_to_num, a 0-d nan": (fnp.nan_to_num, (np.array(np.nan),)),
    "interp, a nan x": (
        lambda x: fnp.interp(x, np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])),
        (np.array([np.nan, 0.5]),),
    ),
}


@pytest.mark.parametrize("name", SPECIAL_INPUTS)
def test_tracing_keeps_numpys_value_at_a_nan_an_inf_or_a_negative_zero(name):
    fn, args = SPECIAL_INPUTS[name]
    check_tracing(fn, args)


# --- float16 where NumPy computes in double precision ---------------------------------------------

_H = np.array([1.0, 2.5, 3.0], np.float16)
_M = np.array([[1.0, 2.0, 4.0], [0.5, 3.0, 1.0]], np.float16)
DOUBLE_PRECISION_FUNCTIONS = {
    "cov": (lambda m, x: m.cov(x), _M),
    "cov-y": (lambda m, x: m.cov(x, x[::-1]), _H),
    "cov-aweights": (lambda m, x: m.cov(m.stack([x, x[::-1]]), aweights=x), _H),
    "corrcoef": (lambda m, x: m.corrcoef(x), _M),
    "interp-x": (lambda m, x: m.interp(x, x[::2], x[::-2]), _H),
    "interp-xp-fp": (lambda m, x: m.interp(x[:2] + 0.25, x, x[::-1]), _H),
    "vander": (lambda m, x: m.vander(x), _H),
    "geomspace": (lambda m, x: m.geomspace(x, 2 * x, 3), _H),
    "polyint": (lambda m, x: m.polyint(x, 2, k=x[0]), _H),
    "polyder": (lambda m, x: m.polyder(x), _H),
    "bincount": (lambda m, x: m.bincount(np.array([0, 1, 1]), weights=x), _H),
}


@pytest.mark.parametrize("name", DOUBLE_PRECISION_FUNCTIONS)
def test_float16_takes_numpys_double_precision_where_float32_is_kept(name):
    """fgrad keeps float32 where NumPy computes and returns float64 ("Float32 in, float32
    out"), but kept float16 too: cov of float16 data was float16, 2.8e-4 off NumPy's float64.
    float16 now gets NumPy's dtype and value, bit for bit, plain and traced (the gradient
    stays in the input's float16); float32 keeps its own dtype, NumPy's value rounded."""
    f, x = DOUBLE_PRECISION_FUNCTIONS[name]
    want = f(np, x)
    assert want.dtype == np.float64
    traced = [
        lambda x: f(fnp, x),
        jit(lambda x: f(fnp, x)),
        lambda x: vjp(lambda x: f(fnp, x), x)[0],
    ]
    for got in (g(x) for g in traced):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert grad(lambda x: fnp.sum(f(fnp, x)))(x).dtype == np.float16
    got32 = f(fnp, x.astype(np.float32))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, f(np, x.astype(np.float32)), rtol=1e-6)
