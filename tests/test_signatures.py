"""Every mirrored function has NumPy's (SciPy's) signature, and a NumPy keyword that cannot
mean anything inside a transform is still accepted, and refused by name when it is given.

Compared: each public callable of `fgrad.numpy`, `fgrad.numpy.linalg`, `fgrad.numpy.fft` and
`fgrad.scipy.<sub>` whose name the mirrored module has too, by `inspect.signature`: the
parameters' names, kinds (positional-only, keyword-only, ...) and defaults (NumPy's "no
value" default included). SciPy's continuous and discrete distributions declare their
methods as `(x, *args, **kwds)`; the signature they take in fact, `(x, <shapes>, loc=0,
scale=1)` (discrete: `(k, <shapes>, loc=0)`), is built from the distribution's `shapes`.

`DIFFERENCES` lists the justified differences, each with its reason; an entry that no longer
differs fails, so the list cannot go stale. `PENDING` lists the differences of files other
helpers are fixing (each an expected failure that must pass once fixed: then delete it).

Refused keywords: `out=` on every differentiable function (fgrad returns values, it never
writes into arrays), the ufuncs' `where=` (without `out`, NumPy leaves the masked elements
uninitialized), and the memory keywords (`order` of a new array's layout, `subok`, `like`,
`device`) given a traced value. Each is in the signature, keeps NumPy's default, and a
non-default value raises a TypeError that names it. (The names declared without a derivative
are NumPy's own functions applied to plain values, so every keyword keeps NumPy's meaning.)
"""

import importlib
import importlib.util
import inspect
import pathlib
import types

import numpy as np
import pytest
from gradtable import TESTS, load

import fgrad
import fgrad.numpy as fnp

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None

# --- what is compared -----------------------------------------------------------------------------


def _modules():
    """(prefix, fgrad module, the module it mirrors)."""
    pairs = [
        ("numpy.", fnp, np),
        ("numpy.linalg.", fnp.linalg, np.linalg),
        ("numpy.fft.", fnp.fft, np.fft),
    ]
    if HAVE_SCIPY:
        import fgrad.scipy

        for sub in fgrad.scipy.SUBMODULES:
            pairs.append(
                (
                    f"scipy.{sub}.",
                    importlib.import_module(f"fgrad.scipy.{sub}"),
                    importlib.import_module(f"scipy.{sub}"),
                )
            )
    return pairs


def _expected(theirs, owner=None):
    """SciPy's or NumPy's signature of `theirs`; for a method of a SciPy distribution, the
    signature it takes in fact (its `(x, *args, **kwds)` resolved with the shapes)."""
    sig = inspect.signature(theirs)
    if owner is None or list(sig.parameters)[1:] != ["args", "kwds"]:
        return sig
    import scipy.stats

    shapes = [s.strip() for s in (owner.shapes or "").split(",") if s.strip()]
    first = next(iter(sig.parameters.values()))
    params = [first] + [
        inspect.Parameter(s, inspect.Parameter.POSITIONAL_OR_KEYWORD) for s in shapes
    ]
    params.append(inspect.Parameter("loc", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0))
    if isinstance(owner, scipy.stats.rv_continuous):
        params.append(
            inspect.Parameter("scale", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=1)
        )
    return inspect.Signature(params)


def _mirrored():
    """(name, ours, their signature) for every public callable that has a counterpart."""
    return [(name, ours, sig) for name, ours, sig, _ in _mirrored_with_theirs()]


def _mirrored_with_theirs():
    """(name, ours, their signature, theirs) for every public callable with a counterpart."""
    found = []
    for prefix, ours_module, theirs_module in _modules():
        for name in ours_module.__all__:
            ours, theirs = getattr(ours_module, name), getattr(theirs_module, name, None)
            if theirs is None or ours is theirs:
                continue  # not NumPy's/SciPy's, or NumPy's own object re-exported
            if isinstance(ours, types.ModuleType):  # scipy.stats.norm and its kin
                for method in ours.__all__:
                    if hasattr(theirs, method):
                        found.append(
                            (
                                f"{prefix}{name}.{method}",
                                getattr(ours, method),
                                _expected(getattr(theirs, method), owner=theirs),
                                getattr(theirs, method),
                            )
                        )
            elif callable(ours) and callable(theirs):
                found.append((prefix + name, ours, _expected(theirs), theirs))
    return found


MIRRORED = _mirrored()

# --- the justified differences --------------------------------------------------------------------

_SPEED = (
    "kept a bare primitive for speed (the lead's benchmark runs it): NumPy's keyword-only "
    "ufunc parameters cost about 130 ns a call (a chain of sin under grad: 3.33 -> 3.47 us "
    "per op), so it takes its inputs only; a NumPy keyword given to it raises Python's "
    "TypeError, which names it"
)
DIFFERENCES = {
    f"numpy.{name}": _SPEED
    for name in (
        "sin",
        "cos",
        "tanh",
        "exp",
        "log",
        "negative",
        "add",
        "subtract",
        "multiply",
        "divide",
        "true_divide",
        "power",
        "pow",
        "matmul",
    )
}

_IMPLICIT = (
    "SciPy's parameters, then fgrad's keyword-only options for the implicit derivative "
    "(on_failure: raise or warn when a solve that is differentiated did not converge; "
    "implicit_solve and implicit_tol: how the linear system of the derivative is solved)"
)
DIFFERENCES.update(
    {
        f"scipy.optimize.{name}": _IMPLICIT
        for name in ("brentq", "fixed_point", "least_squares", "minimize", "root", "root_scalar")
    }
)
DIFFERENCES.update(
    {
        "scipy.sparse.coo_array": "without copy (fgrad never writes into the data it is "
        "given) and maxprint (printing)",
        "scipy.sparse.csr_array": "without copy (fgrad never writes into the data it is "
        "given) and maxprint (printing)",
        "scipy.sparse.diags": "dtype=None where SciPy's default is a private sentinel for "
        "'not given' (the same meaning)",
        "scipy.sparse.diags_array": "dtype=None where SciPy's default is a private sentinel "
        "for 'not given' (the same meaning)",
        "scipy.sparse.linalg.SuperLU": "made by fgrad's splu only (SciPy's cannot be made "
        "directly either); its solve method has SciPy's signature",
        "scipy.integrate.odeint": "SciPy's parameters, then fgrad's keyword-only on_failure "
        "(raise or warn when a solve that is differentiated stops early), as the optimizers'",
        "scipy.integrate.quad": "SciPy's parameters, then fgrad's keyword-only on_failure "
        "(raise or warn when an integral that is differentiated did not converge), as odeint's",
        "scipy.sparse.linalg.gmres": "without callback_type: a callback is refused (the "
        "iterates of a differentiated solve are not the user's to watch)",
        "numpy.fill_diagonal": "NumPy's parameters, then JAX's keyword-only inplace: False "
        "returns the new array (the form for traced values, which cannot be written into)",
        "numpy.put_along_axis": "NumPy's parameters, then JAX's keyword-only inplace: False "
        "returns the new array (the form for traced values, which cannot be written into)",
    }
)

# Differences in files other helpers own and are fixing now (see the module docstring).
PENDING = {}

# --- comparing ------------------------------------------------------------------------------------


def _same_default(a, b):
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _differences(ours, theirs):
    """How the signature of `ours` differs from `theirs` (an empty list when it does not)."""
    try:
        mine = inspect.signature(ours)
    except (TypeError, ValueError) as error:
        return [f"no signature: {error}"]
    a, b = list(mine.parameters.values()), list(theirs.parameters.values())
    out = []
    if [p.name for p in a] != [p.name for p in b]:
        out.append(f"parameters {[p.name for p in a]} != {[p.name for p in b]}")
    for p, q in zip(a, b):
        if p.name != q.name:
            continue
        if p.kind != q.kind:
            out.append(f"{p.name}: kind {p.kind.description} != {q.kind.description}")
        if not _same_default(p.default, q.default):
            out.append(f"{p.name}: default {p.default!r} != {q.default!r}")
    return out


@pytest.mark.parametrize("name, ours, theirs", MIRRORED, ids=[m[0] for m in MIRRORED])
def test_signature_is_numpys_or_scipys(name, ours, theirs):
    diffs = _differences(ours, theirs)
    if name in DIFFERENCES:
        assert diffs, f"{name} now has the signature {theirs}: delete it from DIFFERENCES"
        return
    if name in PENDING:
        if diffs:
            pytest.xfail(f"{PENDING[name]}: {'; '.join(diffs)}")
        pytest.fail(f"{name} now has the signature {theirs}: delete it from PENDING")
    assert not diffs, f"fgrad.{name}{inspect.signature(ours)} is not {theirs}: {diffs}"


def test_the_lists_of_differences_name_mirrored_functions():
    names = {m[0] for m in MIRRORED}
    assert set(DIFFERENCES) <= names and set(PENDING) <= names
    assert len(MIRRORED) > 350  # numpy, linalg, fft and the SciPy mirrors are all compared


# --- the speed-tuned primitives refuse NumPy's keywords by name -----------------------------------


@pytest.mark.parametrize("name", sorted(n for n, why in DIFFERENCES.items() if why is _SPEED))
@pytest.mark.parametrize(
    "keyword, value",
    [("out", np.zeros(2)), ("dtype", np.float32), ("where", np.array([True, False]))],
)
def test_a_speed_tuned_primitive_names_the_keyword_it_refuses(name, keyword, value):
    fn = getattr(fnp, name.split(".", 1)[1])
    x = np.array([0.3, 0.6])
    n_inputs = getattr(np, name.split(".", 1)[1]).nin
    with pytest.raises(TypeError, match=keyword):
        fgrad.grad(lambda x: fnp.sum(fn(*[x] * n_inputs, **{keyword: value})))(x)


# --- keywords that cannot mean anything inside a transform are refused by name --------------------

X = np.array([[0.3, 0.6], [0.2, 0.9]])

# The arguments of a sample call, for functions whose first argument is not all they need.
SAMPLES = {
    "numpy.clip": lambda x: (x, 0.25, 0.75),
    "numpy.concatenate": lambda x: ([x, x],),
    "numpy.concat": lambda x: ([x, x],),
    "numpy.stack": lambda x: ([x, x],),
    "numpy.dot": lambda x: (x, x),
    "numpy.outer": lambda x: (x, x),
    "numpy.einsum": lambda x: ("ij,jk", x, x),
    "numpy.take": lambda x: (x, [0, 1]),
    "numpy.quantile": lambda x: (x, 0.5),
    "numpy.percentile": lambda x: (x, 50.0),
    "numpy.nanquantile": lambda x: (x, 0.5),
    "numpy.nanpercentile": lambda x: (x, 50.0),
    "numpy.vecdot": lambda x: (x, x),
    "numpy.matvec": lambda x: (x, x[0]),
    "numpy.vecmat": lambda x: (x[0], x),
    "numpy.broadcast_to": lambda x: (x, (3, 2, 2)),
    "numpy.broadcast_arrays": lambda x: (x, x),
    "numpy.astype": lambda x: (x, np.float32),
    "numpy.reshape": lambda x: (x, (4,)),
    "numpy.linalg.multi_dot": lambda x: ([x, x],),
    "numpy.choose": lambda x: (np.array([[0, 1], [1, 0]]), [x, 2 * x]),
    "numpy.compress": lambda x: ([True, False], x),
    "numpy.fromfunction": lambda x: (lambda i, j: x * i, (2, 2)),
}

# The memory keywords, with a value other than the default, per function that has them.
_MEMORY = {"order": "F", "subok": None, "like": np.empty(0), "device": "gpu"}


def _nondiff_names():
    families = [p.stem[len("rows_") :] for p in sorted(pathlib.Path(TESTS).glob("rows_*.py"))]
    return {n.name for n in load(families)[1]}


def _refused():
    """(name, function, keyword, value, theirs) for each keyword to refuse on traced inputs:
    every differentiable function of fgrad.numpy, and fgrad.scipy's mirrors of ufuncs."""
    nondiff = _nondiff_names()  # spelled as rows spell them: "floor", "scipy.special.gammasgn"
    cases = []
    for name, ours, _, theirs in _mirrored_with_theirs():
        short = name[len("numpy.") :] if name.startswith("numpy.") else name
        is_ufunc = isinstance(theirs, np.ufunc)
        if (
            short in nondiff
            or name in DIFFERENCES
            or name in PENDING
            or isinstance(ours, type)
            or not (name.startswith("numpy.") or is_ufunc)
        ):
            continue
        params = inspect.signature(ours).parameters
        if "out" in params:
            cases.append((name, ours, "out", np.zeros_like(X), theirs))
        if "where" in params and is_ufunc:
            cases.append((name, ours, "where", X > 0.4, theirs))
        for keyword, value in _MEMORY.items():
            if keyword in params and not (
                keyword == "order"
                and name in ("numpy.reshape", "numpy.ravel", "numpy.partition", "numpy.sort")
            ):
                # (reshape's and ravel's order is the order of the elements, not memory's)
                default = params[keyword].default
                cases.append(
                    (name, ours, keyword, (not default) if keyword == "subok" else value, theirs)
                )
    return cases


REFUSED = _refused()


@pytest.mark.parametrize(
    "name, fn, keyword, value, theirs", REFUSED, ids=[f"{c[0]}-{c[2]}" for c in REFUSED]
)
def test_a_keyword_without_meaning_for_traced_values_is_refused_by_name(
    name, fn, keyword, value, theirs
):
    def f(x):
        call = SAMPLES.get(name)
        n = theirs.nin if isinstance(theirs, np.ufunc) else 1
        out = fn(*(call(x) if call else (x,) * n), **{keyword: value})
        return fnp.sum(fnp.real(out[0] if isinstance(out, (tuple, list)) else out))

    with pytest.raises(TypeError, match=rf"\b{keyword}\b"):
        fgrad.grad(f)(X)


def test_every_keyword_kind_is_checked():
    keywords = {c[2] for c in REFUSED}
    assert keywords == {"out", "where", "order", "subok", "like", "device"}
    assert len(REFUSED) > 150


def test_the_default_values_of_the_refused_keywords_are_accepted():
    x = np.array([0.3, 0.6])
    g = fgrad.grad(
        lambda x: fnp.sum(
            fnp.arcsinh(x, out=None, where=True, order="K", subok=True) * fnp.sum(x, out=None)
        )
    )(x)
    np.testing.assert_allclose(g, fgrad.grad(lambda x: fnp.sum(fnp.arcsinh(x)) * fnp.sum(x))(x))
    a = fgrad.grad(lambda x: fnp.sum(fnp.asarray(x, order=None, device="cpu", like=None)))(x)
    np.testing.assert_array_equal(a, np.ones(2))


# --- type hints: every public function of the mirrors says what it takes and returns -------------
# (mypy checks the hints against the bodies: `mypy` from the root, as CI runs it.)


def _public_objects():
    """(name, object) for every public name of the mirrors, including those without a NumPy
    or SciPy counterpart; a module of functions (scipy.stats.norm, ...) gives its functions."""
    for prefix, module, _ in _modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                yield from ((f"{prefix}{name}.{m}", getattr(obj, m)) for m in obj.__all__)
            else:
                yield prefix + name, obj


def _why_no_hints_of_its_own(name, obj):
    """Why the public name `name` needs no hints of its own, or None when it must have them."""
    module, _, attr = name.rpartition(".")
    theirs = importlib.import_module(module) if module.startswith("numpy") else None
    if theirs is not None and getattr(theirs, attr, None) is obj:
        return "NumPy's own object, re-exported unchanged (arange, float64): NumPy's stubs type it"
    if isinstance(obj, type):
        return "a class (a dtype, vectorize): its constructor's parameters are NumPy's"
    if not callable(obj):
        return "a constant or an index expression (pi, newaxis, c_): not a function"
    return None


def _missing_hints(obj):
    """The parameters (and 'return') of the callable `obj` that its `def` leaves unhinted.

    Read from the function's code, not `inspect.signature`: a name declared without a
    derivative shows NumPy's signature (its `__signature__`) but is fgrad's hinted
    `(*args: Any, **kwargs: Any) -> Array`, which is what a type checker reads."""
    if not inspect.isfunction(obj):  # a Primitive object: its __call__ takes every call
        obj = type(obj).__call__
    code = obj.__code__
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    hints = obj.__annotations__
    missing = [p for p in code.co_varnames[:count] if p not in hints and p != "self"]
    return missing + ([] if "return" in hints else ["return"])


PUBLIC = sorted(_public_objects(), key=lambda c: c[0])
HINTED = [(n, o) for n, o in PUBLIC if _why_no_hints_of_its_own(n, o) is None]


@pytest.mark.parametrize("name, fn", HINTED, ids=[c[0] for c in HINTED])
def test_every_public_function_has_type_hints(name, fn):
    missing = _missing_hints(fn)
    assert not missing, (
        f"fgrad.{name} has no type hint for {missing}: hint every parameter and the return "
        "(fgrad.typing's ArrayLike for an array argument, Array for a result; see "
        "CONTRIBUTING.md's type checker section)"
    )


def test_the_hint_check_sees_every_public_function():
    skipped = {n for n, o in PUBLIC if _why_no_hints_of_its_own(n, o) is not None}
    # what is skipped is only NumPy's re-exported objects, classes and constants
    assert {"numpy.arange", "numpy.float64", "numpy.pi", "numpy.c_", "numpy.vectorize"} <= skipped
    assert not {"numpy.sin", "numpy.add", "numpy.sum", "scipy.stats.norm.logpdf"} & skipped
    assert len(HINTED) > 400
    # and the check fails on a function without hints
    assert _missing_hints(lambda x, y=1: x) == ["x", "y", "return"]
