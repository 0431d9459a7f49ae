"""Numerical checks of derivatives, for fgrad's tests and for users checking their own rules.

- `check_grads(f, args, order=2)`: f's derivatives in forward and reverse mode against central
  differences, to any order (the systematic gradient table uses it).
- `check_rule(f, args, reference=...)`: a custom rule (`fgrad.primitive`, `custom_vjp`,
  `custom_jvp`) checked part by part, value, reverse rule, forward rule and the transpose
  consistency of the two, with a report of which part is wrong.

Imports: `fgrad.api`, `fgrad.core`, `fgrad.tree_util`. `check_rule` tells a `custom_vjp` or
`custom_jvp` function by its `_kind` rather than importing `fgrad.custom`, so that this module
stays below the transforms it checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from .api import jacfwd, jacrev, jvp, vjp
from .core import Primitive, primal
from .tree_util import tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .tree_util import PyTree

__all__ = ["check_grads", "check_jvp", "check_rule", "check_vjp"]

# Central-difference step and tolerance by the precision of the inputs. The difference is
# extrapolated from steps h and h/2 (Richardson), so its truncation error is of order h^4 times
# the fifth derivative: at order 2 the function differenced is itself a derivative, whose third
# derivative can be in the thousands, and plain central differences (error h^2/6 times the third
# derivative) then exceed the tolerance. In float64 a step of 1e-4 leaves a rounding error near
# 1e-12, so a tolerance of 1e-5 catches a rule that is 0.1% wrong. float32 only supports a
# coarse check.
_EPS = {_np.dtype("float64"): 1e-4, _np.dtype("float32"): 1e-3, _np.dtype("float16"): 1e-2}
_TOL = {_np.dtype("float64"): 1e-5, _np.dtype("float32"): 2e-2, _np.dtype("float16"): 1e-1}


def _leaf_dtype(leaves):
    """The least precise real dtype among the leaves (complex64 counts as float32)."""
    dts = [_np.result_type(primal(x)) for x in leaves]
    reals = [_np.dtype(_np.finfo(d).dtype) for d in dts if _np.issubdtype(d, _np.inexact)]
    worst = min(reals, key=lambda d: d.itemsize) if reals else _np.dtype("float64")
    return worst if worst in _EPS else _np.dtype("float64")


def _random_like(leaves, rng):
    """Random directions shaped like `leaves`; complex leaves get complex directions."""
    out = []
    for x in leaves:
        shape = _np.shape(primal(x))
        d = rng.standard_normal(shape)
        if _np.iscomplexobj(primal(x)):
            d = d + 1j * rng.standard_normal(shape)
        out.append(_as_like(d, x))
    return out


def _as_like(a, x):
    dt = _np.result_type(primal(x))
    a = _np.asarray(a, dtype=dt)
    return a[()] if a.ndim == 0 else a


def _axpy(a, xs, ys):
    return [_as_like(primal(x) + a * primal(y), x) for x, y in zip(xs, ys)]


def _inner(xs, ys):
    """Re sum(x * y), without conjugation: the pairing under which fgrad's (JAX's) vjp of a
    complex function is the transpose of its jvp. For real arrays it is the dot product."""
    return float(
        sum(
            _np.sum(
                _np.asarray(primal(x), dtype=complex) * _np.asarray(primal(y), dtype=complex)
            ).real
            for x, y in zip(xs, ys)
        )
    )


def _numerical_jvp(f, args, tangents, eps):
    """J t by central differences with steps eps and eps/2, extrapolated: (4 D(eps/2) - D(eps))/3
    cancels the eps^2 term of the error."""
    leaves, tree = tree_flatten(tuple(args))
    t_leaves, _ = tree_flatten(tuple(tangents))

    def central(h):
        plus = tree_flatten(f(*tree_unflatten(tree, _axpy(h, leaves, t_leaves))))[0]
        minus = tree_flatten(f(*tree_unflatten(tree, _axpy(-h, leaves, t_leaves))))[0]
        diffs = []
        for p, m in zip(plus, minus):
            p, m = _np.asarray(primal(p)), _np.asarray(primal(m))
            # in double precision, complex only for a complex output (a real function's
            # differences are shown as real numbers)
            dt = complex if p.dtype.kind == "c" or m.dtype.kind == "c" else _np.float64
            diffs.append((p.astype(dt) - m.astype(dt)) / (2 * h))
        return diffs

    return [(4 * half - full) / 3 for half, full in zip(central(eps / 2), central(eps))]


def _close(a, b, tol):
    """|a - b| <= atol + rtol |b| elementwise, or a and b equal (infinities of one sign, whose
    difference is nan) or both nan, as NumPy's `assert_allclose` counts them; `tol` is
    (atol, rtol), or one number for both."""
    atol, rtol = tol if isinstance(tol, tuple) else (tol, tol)
    a, b = _np.asarray(a, dtype=complex), _np.asarray(b, dtype=complex)
    with _np.errstate(invalid="ignore"):
        near = _np.abs(a - b) <= atol + rtol * _np.abs(b)
    return bool(_np.all(near | (a == b) | (_np.isnan(a) & _np.isnan(b))))


def _tolerance(tol, dt):
    """`tol` with the defaults of dtype `dt` filled in: one number, or (atol, rtol) (JAX's
    keywords, either of which may be None)."""
    if isinstance(tol, tuple):
        return tuple(_TOL[dt] if t is None else t for t in tol)
    return _TOL[dt] if tol is None else tol  # (0 is a tolerance: exact agreement)


def _tolerance_text(tol) -> str:
    if isinstance(tol, tuple):
        return f"atol {tol[0]}, rtol {tol[1]}"
    return f"tolerance {tol}"


def _args_tuple(args, who):
    """The point `f` is checked at, one entry per argument: a tuple (or list). A bare number
    or array is refused (a float is not iterable; an array would be split into its rows, each
    passed as an argument)."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            f"{who}: args must be a tuple with one entry per argument of f, got a value of "
            f"type {type(args).__name__}; for a function of one argument write (x,)"
        )
    return tuple(args)


def check_jvp(
    f: Callable[..., Any],
    args: Sequence[PyTree],
    rng: _np.random.Generator | None = None,
    eps: float | None = None,
    tol: float | None = None,
    where: str = "f",
) -> None:
    """Check `jvp(f)` at `args` against central differences along a random direction.

    Parameters
    ----------
    f : callable
        The function to check.
    args : tuple
        The point, one entry per argument of `f`.
    rng : numpy.random.Generator, optional
        Draws the direction (seeded with 0 by default).
    eps, tol : float, optional
        Step and tolerance, as in `check_grads`.
    where : str, default "f"
        What to call `f` in the error message.

    Raises
    ------
    AssertionError
        With the jvp and the numerical value, when they disagree.

    Examples
    --------
    >>> import fgrad.numpy as fnp
    >>> from fgrad.test_util import check_jvp
    >>> check_jvp(lambda x: fnp.sin(x) * x, (0.3,))
    """
    args = _args_tuple(args, "check_grads")
    rng = rng or _np.random.default_rng(0)
    leaves, tree = tree_flatten(args)
    dt = _leaf_dtype(leaves)
    eps, tol = eps or _EPS[dt], _tolerance(tol, dt)
    tangents = tree_unflatten(tree, _random_like(leaves, rng))
    value = f(*args)  # (first: a function that sets state, a global, reads it back later)
    out, t_out = jvp(f, tuple(args), tangents)
    _check_value(out, value, tol, "jvp", where)
    numerical = _numerical_jvp(f, args, tangents, eps)
    for k, (a, b) in enumerate(zip(tree_flatten(t_out)[0], numerical)):
        if not _close(primal(a), b, tol):
            raise AssertionError(
                f"check_grads: forward mode (jvp) of {where} disagrees with central "
                f"differences at output leaf {k}:\n  jvp       = {_np.asarray(primal(a))!r}\n"
                f"  numerical = {b!r}\n  (step {eps}, {_tolerance_text(tol)})"
            )


def _check_value(out, value, tol, mode, where):
    """The value a transform computes is f's own (`value`): a custom rule's primal output (a
    `custom_vjp` fwd, a `custom_jvp` rule) that differs would go unnoticed by the derivatives'
    checks, which compare the transform with itself."""
    plain = tree_flatten(value)[0]
    for k, (a, b) in enumerate(zip(tree_flatten(out)[0], plain)):
        if _np.shape(primal(a)) != _np.shape(b) or not _close(primal(a), b, tol):
            raise AssertionError(
                f"check_grads: the value of {where} under {mode} differs from {where}'s own at "
                f"output leaf {k}:\n  under {mode} = {_np.asarray(primal(a))!r}\n"
                f"  {where}(*args) = {_np.asarray(b)!r}\n  ({_tolerance_text(tol)}); a custom "
                "rule's primal output must be the function's value"
            )


def check_vjp(
    f: Callable[..., Any],
    args: Sequence[PyTree],
    rng: _np.random.Generator | None = None,
    eps: float | None = None,
    tol: float | None = None,
    where: str = "f",
) -> None:
    """Check `vjp(f)` at `args` with the identity <ct, J t> = <J^T ct, t>, J t numerically.

    Parameters
    ----------
    f : callable
        The function to check.
    args : tuple
        The point, one entry per argument of `f`.
    rng : numpy.random.Generator, optional
        Draws the cotangent and the direction (seeded with 0 by default).
    eps, tol : float, optional
        Step and tolerance, as in `check_grads`.
    where : str, default "f"
        What to call `f` in the error message.

    Raises
    ------
    AssertionError
        With both sides of the identity, when they disagree.

    Examples
    --------
    >>> import fgrad.numpy as fnp
    >>> from fgrad.test_util import check_vjp
    >>> check_vjp(lambda x: fnp.sin(x) * x, (0.3,))
    """
    args = _args_tuple(args, "check_grads")
    rng = rng or _np.random.default_rng(0)
    leaves, tree = tree_flatten(args)
    dt = _leaf_dtype(leaves)
    eps, tol = eps or _EPS[dt], _tolerance(tol, dt)
    value = f(*args)  # (first: a checkpoint's backward pass runs f again, reading its state)
    out, vjp_fun = vjp(f, *args)
    _check_value(out, value, tol, "vjp", where)
    out_leaves, out_tree = tree_flatten(out)
    ct = _random_like(out_leaves, rng)
    ct_in = tree_flatten(vjp_fun(tree_unflatten(out_tree, ct)))[0]
    t = _random_like(leaves, rng)
    lhs = _inner(ct_in, t)
    rhs = _inner(ct, _numerical_jvp(f, args, tree_unflatten(tree, t), eps))
    if not _close(lhs, rhs, tol):
        raise AssertionError(
            f"check_grads: reverse mode (vjp) of {where} disagrees with central differences: "
            f"<J^T ct, t> = {lhs!r} but <ct, J t> = {rhs!r} numerically (step {eps}, "
            f"{_tolerance_text(tol)})"
        )


def check_grads(
    f: Callable[..., Any],
    args: Sequence[PyTree],
    order: int = 2,
    modes: str | Sequence[str] = ("fwd", "rev"),
    eps: float | None = None,
    tol: float | None = None,
    seed: int = 0,
    *,
    atol: float | None = None,
    rtol: float | None = None,
) -> None:
    """Check `f`'s derivatives against central differences, in forward and/or reverse mode.

    Parameters
    ----------
    f : callable
        The function to check, of arrays or pytrees of arrays.
    args : tuple
        The point: one entry per argument of `f`. Use float64 for a sharp check.
    order : int, default 2
        The highest order checked.
    modes : str or tuple of str, default ("fwd", "rev")
        "fwd" (jvp), "rev" (vjp) or both.
    eps : float, optional
        The finite-difference step (by default 1e-4 for float64, 1e-3 for float32).
    tol : float, optional
        The tolerance (by default 1e-5 for float64, 2e-2 for float32): each value must be within
        tol * (1 + |expected|); 0 asks for exact agreement. A pair (atol, rtol) is taken as
        `atol` and `rtol` below.
    seed : int, default 0
        Seeds the random directions.
    atol, rtol : float, optional
        JAX's keywords, instead of `tol`: within atol + rtol * |expected| (the one not given
        takes `tol`'s default). JAX's positional order differs from the 5th argument on
        (`check_grads(f, args, order, modes, atol, rtol, eps)`): pass these by name.

    Raises
    ------
    AssertionError
        Naming the part that is wrong (`jvp(vjp(f))`, ...) with its numbers.

    Notes
    -----
    Order 1 checks jvp against central differences along random directions, and vjp through the
    identity <ct, J t> = <J^T ct, t>. Each higher order applies the same checks to f's jvp (with
    a fixed random tangent) and to f's vjp (with a fixed random cotangent) as functions of the
    inputs, so order 2 covers forward-over-forward, forward-over-reverse, reverse-over-forward
    and reverse-over-reverse.

    Examples
    --------
    >>> import fgrad.numpy as fnp
    >>> from fgrad.test_util import check_grads
    >>> check_grads(lambda x: fnp.sin(x) * x, (0.3,), order=2)
    """
    if isinstance(order, bool) or not isinstance(order, (int, _np.integer)) or order < 1:
        whole = isinstance(order, (int, _np.integer)) and not isinstance(order, bool)
        error = ValueError if whole else TypeError
        raise error(
            f"check_grads: order must be a positive int (1 checks first derivatives, 2 also "
            f"second ones), got {order!r} of type {type(order).__name__}"
        )
    if not isinstance(modes, (str, tuple, list, _np.ndarray)):
        raise TypeError(
            f"check_grads: modes must be 'fwd', 'rev' or a tuple of them, got {modes!r} of "
            f"type {type(modes).__name__}"
        )
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: modes must be 'fwd' and/or 'rev', got {m!r}")
    eps = _check_step(eps, "eps", positive=True)
    if isinstance(tol, tuple) and len(tol) == 2:  # (atol, rtol), as `_close` takes it
        tol = tuple(_check_step(t, "tol", positive=False) for t in tol)
    else:
        tol = _check_step(tol, "tol", positive=False)
    atol = _check_step(atol, "atol", positive=False)
    rtol = _check_step(rtol, "rtol", positive=False)
    args = _args_tuple(args, "check_grads")
    bound: float | tuple | None = tol  # one number, or (atol, rtol) (see `_close`)
    if atol is not None or rtol is not None:
        if tol is not None:
            raise TypeError(
                "check_grads: pass tol (one tolerance), or atol and rtol (JAX's), not both"
            )
        bound = (atol, rtol)
    _check(f, args, order, modes, eps, bound, _np.random.default_rng(seed), "f")


def _check_step(value, name, positive):
    """`value` as a float: refuse an `eps` (a step: finite and > 0; a zero step divides 0 by
    0, which no check then flags) or a tolerance (finite and >= 0) that is not such a number
    (a 0-d real array is one); None is the default."""
    if value is None:
        return None
    if isinstance(value, _np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]
    number = isinstance(value, (int, float, _np.integer, _np.floating))
    if isinstance(value, bool) or not number or not _np.isfinite(value):
        raise TypeError(
            f"check_grads: {name} must be a finite real number (or None for the default), "
            f"got {value!r} of type {type(value).__name__}"
        )
    if value < 0 or (positive and value == 0):
        raise ValueError(
            f"check_grads: {name} must be {'> 0' if positive else '>= 0'}, got {value!r}"
        )
    return float(value)


def _check(f, args, order, modes, eps, tol, rng, where):
    leaves, tree = tree_flatten(args)
    if "fwd" in modes:
        check_jvp(f, args, rng, eps, tol, where)
        if order > 1:
            tangents = tree_unflatten(tree, _random_like(leaves, rng))

            def f_jvp(*a):
                return jvp(f, a, tangents)[1]

            _check(f_jvp, args, order - 1, modes, eps, tol, rng, f"jvp({where})")
    if "rev" in modes:
        check_vjp(f, args, rng, eps, tol, where)
        if order > 1:
            out_leaves, out_tree = tree_flatten(f(*args))
            ct = tree_unflatten(out_tree, _random_like(out_leaves, rng))

            def f_vjp(*a):
                return vjp(f, *a)[1](ct)

            _check(f_vjp, args, order - 1, modes, eps, tol, rng, f"vjp({where})")


# --- check_rule: a custom rule checked part by part -----------------------------------------------

# Parts that must agree to rounding, not to a finite-difference step: the value computed in
# the different modes (and by a reference), and the pairing <ct, jvp(t)> = <bprop(ct), t>.
_EXACT_TOL = {_np.dtype("float64"): 1e-10, _np.dtype("float32"): 1e-4, _np.dtype("float16"): 1e-2}

VALUE, REVERSE, FORWARD, CONSISTENCY, TRANSFORMS = (
    "value",
    "reverse rule",
    "forward rule",
    "transpose consistency",
    "other transforms",
)


def _rule_sources(f):
    """(where the reverse rule comes from, where the forward rule comes from) for f:
    "yours" for a rule the user wrote, or the rule it is derived from."""
    while hasattr(f, "func") and hasattr(f, "args"):  # functools.partial
        f = f.func
    kind = getattr(type(f), "_kind", None)
    if kind == "custom_vjp":
        return "yours", "transposed from your bprop"
    if kind == "custom_jvp":
        return "transposed from your jvp rule", "yours"
    prim = getattr(f, "primitive", f)
    if isinstance(prim, Primitive):
        has_jvp = prim.jvp is not None or prim.jvps is not None
        return "yours", "yours" if has_jvp else "transposed from your bprop"
    return "yours", "yours"


def _fmt(x):
    a = _np.asarray(primal(x))
    if _np.iscomplexobj(a) and not _np.any(a.imag):
        a = a.real  # central differences are complex; show a real value as real
    return _np.array2string(a, precision=10, threshold=12) if a.ndim else repr(a[()])


def _worst(a, b):
    """The index and relative error of the largest disagreement of arrays a and b."""
    a, b = _np.asarray(a, dtype=complex), _np.asarray(b, dtype=complex)
    err = _np.abs(a - b) / (1.0 + _np.abs(b))
    k = int(_np.argmax(err))
    return tuple(int(i) for i in _np.unravel_index(k, err.shape)), float(err.flat[k])


def _agree_leaf(a, b, tol):
    a, b = _np.asarray(primal(a)), _np.asarray(primal(b))
    if a.shape != b.shape:
        return False
    scale = _np.maximum(_np.abs(a), _np.abs(b))
    return bool(_np.all(_np.abs(a.astype(complex) - b) <= tol * (1.0 + scale)))


def _raised(e):
    return f"raised {type(e).__name__}: {e}"


class _Report:
    """What each part of a rule check found: part -> (passed, line)."""

    def __init__(self, where):
        self.where = where
        self.results = {}
        self.cause = None

    def record(self, part, passed, line):
        self.results[part] = (passed, line)

    def error(self, part, e):
        self.cause = self.cause or e
        self.record(part, False, _raised(e))

    def ok(self, part):
        return self.results.get(part, (True, ""))[0]


def check_rule(
    f: Callable[..., Any],
    args: Sequence[PyTree],
    reference: Callable[..., Any] | None = None,
    order: int = 1,
    eps: float | None = None,
    tol: float | None = None,
    exact_tol: float | None = None,
    seed: int = 0,
) -> None:
    """Check a function's derivative rules numerically at `args`, and say which part is wrong.

    Parameters
    ----------
    f : callable
        Typically a function with rules you wrote (`fgrad.primitive`, `fgrad.custom_vjp`,
        `fgrad.custom_jvp`; wrap non-differentiable arguments with `functools.partial`).
    args : tuple
        The point, one entry per argument. Use float64 inputs of order one for a sharp check,
        and call it at several points.
    reference : callable, optional
        A plain function computing the same value (the NumPy function, say).
    order : int, default 1
        With 2, the same four parts are checked for `vjp(f)` and `jvp(f)` as functions of the
        inputs (derivatives of your rules: they must be written in `fgrad.numpy` operations).
    eps, tol : float, optional
        Finite-difference step and tolerance, as in `check_grads`.
    exact_tol : float, optional
        The tolerance of the checks that hold to rounding (values, transpose consistency).
    seed : int, default 0
        Seeds the random directions.

    Raises
    ------
    AssertionError
        Listing every part with its numbers; its `failed` attribute is the tuple of the parts
        found wrong (such as `("reverse rule",)`).

    Notes
    -----
    With random directions `t` (inputs) and `ct` (outputs) it checks:

    - value: `f(*args)`, the value under `vjp` (fwd's or the fprop's) and the value under `jvp`
      agree with each other and with `reference(*args)`, to rounding (`exact_tol`);
    - reverse rule: `<bprop(ct), t> == <ct, J t>`, with `J t` by central differences of
      `reference` if given, else of `f` (step `eps`, tolerance `tol`);
    - forward rule: `jvp(t) == J t`, element by element;
    - transpose consistency: `<ct, jvp(t)> == <bprop(ct), t>` to rounding. This catches a jvp
      and a bprop that disagree by less than central differences can see, and a rule that is
      not linear in its tangent or cotangent.

    A mode with no rule of its own (forward mode of a `custom_vjp`, reverse mode of a
    `custom_jvp`) is derived by transposing the other one; a failure there is blamed on the
    rule it comes from.

    Examples
    --------
    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> from fgrad.test_util import check_rule
    >>> @fgrad.primitive
    ... def softplus(x):
    ...     ans = fnp.logaddexp(0.0, x)
    ...     return ans, lambda ct: (ct * fnp.exp(x - ans),)
    >>> check_rule(softplus, (np.array([-1.0, 0.5, 3.0]),),
    ...            reference=lambda x: np.log1p(np.exp(x)), order=2)
    >>> @fgrad.primitive
    ... def bad_softplus(x):  # d/dx is 1 / (1 + exp(-x)): this bprop is 1% off
    ...     ans = fnp.logaddexp(0.0, x)
    ...     return ans, lambda ct: (1.01 * ct * fnp.exp(x - ans),)
    >>> try:
    ...     check_rule(bad_softplus, (np.array([-1.0, 0.5, 3.0]),))
    ... except AssertionError as e:
    ...     print(e.failed)
    ('reverse rule',)
    """
    order = int(order)
    if order < 1:
        raise ValueError(f"check_rule: order must be 1 or more, got {order}")
    if reference is not None and not callable(reference):
        raise TypeError(f"check_rule: reference must be a function or None, got {reference!r}")
    _check_rule(
        f,
        tuple(args),
        reference,
        order,
        eps,
        tol,
        exact_tol,
        _np.random.default_rng(seed),
        "f",
        _rule_sources(f),
    )


def _check_rule(f, args, reference, order, eps, tol, exact_tol, rng, where, sources):
    leaves, tree = tree_flatten(args)
    dt = _leaf_dtype(leaves)
    eps, tol = eps or _EPS[dt], _TOL[dt] if tol is None else tol
    exact_tol = _EXACT_TOL[dt] if exact_tol is None else exact_tol
    report = _Report(where)
    truth = reference if reference is not None else f
    out = f(*args)
    out_leaves, out_tree = tree_flatten(out)
    t = tree_unflatten(tree, _random_like(leaves, rng))
    ct = tree_unflatten(out_tree, _random_like(out_leaves, rng))
    numerical = _numerical_jvp(truth, args, t, eps)

    values = [(f"{where}(*args)", out)]
    if reference is not None:
        values.append(("reference(*args)", reference(*args)))
    bct = jt = None
    try:
        out_rev, pull = vjp(f, *args)
        values.append((f"the value of {where} under vjp (from fwd or the fprop)", out_rev))
        bct = pull(ct)
    except Exception as e:
        report.error(REVERSE, e)
    try:
        out_fwd, jt = jvp(f, args, t)
        values.append((f"the value of {where} under jvp", out_fwd))
    except Exception as e:
        report.error(FORWARD, e)
    _check_values(report, values, exact_tol)

    t_leaves, ct_leaves = tree_flatten(t)[0], tree_flatten(ct)[0]
    if bct is not None:
        report.record(
            REVERSE,
            *_check_reverse(
                truth, args, ct_leaves, t_leaves, numerical, tree_flatten(bct)[0], eps, tol
            ),
        )
    if jt is not None:
        line = "jvp(t) agrees with J t by central differences"
        passed = True
        for k, (a, b) in enumerate(zip(tree_flatten(jt)[0], numerical)):
            if not _close(primal(a), b, tol):
                idx, err = _worst(primal(a), b)
                passed = False
                line = (
                    f"output leaf {k}: jvp(t) = {_fmt(a)} but J t = {_fmt(b)} by central "
                    f"differences; worst at index {idx}: relative error {err:.2e}"
                )
                break
        report.record(FORWARD, passed, line)
    if bct is not None and jt is not None:
        fwd_pair = [
            _np.asarray(primal(c), dtype=complex) * _np.asarray(primal(j), dtype=complex)
            for c, j in zip(ct_leaves, tree_flatten(jt)[0])
        ]
        rev_pair = [
            _np.asarray(primal(b), dtype=complex) * _np.asarray(primal(v), dtype=complex)
            for b, v in zip(tree_flatten(bct)[0], t_leaves)
        ]
        lhs = float(sum(_np.sum(p).real for p in fwd_pair))
        rhs = float(sum(_np.sum(p).real for p in rev_pair))
        # rounding scales with the terms summed, not with their (possibly cancelling) sum
        scale = sum(float(_np.sum(_np.abs(p))) for p in fwd_pair + rev_pair)
        passed = abs(lhs - rhs) <= exact_tol * scale
        report.record(
            CONSISTENCY,
            passed,
            (
                f"<ct, jvp(t)> = {lhs!r}, <bprop(ct), t> = {rhs!r}"
                + (
                    ""
                    if passed
                    else f": they differ by {abs(lhs - rhs) / max(scale, 1e-300):.2e} "
                    "of the terms summed, more than rounding"
                )
            ),
        )
    failed = _verdict(report, sources)
    if not failed:
        report.record(TRANSFORMS, *_check_transforms(f, leaves, tree, t_leaves, jt, tol, rng))
        failed = () if report.ok(TRANSFORMS) else (TRANSFORMS,)
    if failed:
        raise _rule_error(report, failed, sources, eps, tol, exact_tol) from report.cause
    if order > 1:

        def f_vjp(*a):
            return vjp(f, *a)[1](ct)

        def f_jvp(*a):
            return jvp(f, a, t)[1]

        for g, name in ((f_vjp, f"vjp({where})"), (f_jvp, f"jvp({where})")):
            _check_rule(
                g, args, None, order - 1, eps, tol, exact_tol, rng, name, ("yours", "yours")
            )


def _check_transforms(f, leaves, tree, t, jt, tol, rng):
    """(passed, line): the transforms built on the rules agree with the jvp and the vjp just
    checked. jacfwd and jacrev apply the rules under vmap to one-hot tangents and cotangents
    (rows that branch apart in a rule that reads them), vmap applies f to two points at once,
    and jet's first and second derivatives along x + t s and x + t s^2 / 2 are both J t (the
    second with a zero first coefficient, which a rule reading its tangent must not mistake
    for a zero tangent). Complex values skip jacfwd and jacrev (they need holomorphic=True)."""
    # vmap and jet as a user calls them: `fgrad` imports this module, so they are looked up
    # when a check runs
    from fgrad import jet, vmap

    leaves = [primal(x) for x in leaves]

    def g(*ls):  # f of its flat leaves, with a tuple of flat outputs
        return tuple(tree_flatten(f(*tree_unflatten(tree, list(ls))))[0])

    jt = [primal(v) for v in tree_flatten(jt)[0]]
    out = [_np.asarray(primal(o)) for o in g(*leaves)]
    real = all(_np.asarray(v).dtype.kind == "f" for v in leaves + out)
    argnums = tuple(range(len(leaves)))
    checks = []  # (what, computed, expected): lists of arrays
    try:
        if real and argnums:
            j_fwd = jacfwd(g, argnums=argnums)(*leaves)
            j_rev = jacrev(g, argnums=argnums)(*leaves)
            for name, jac in (("jacfwd", j_fwd), ("jacrev", j_rev)):
                pushed = [
                    sum(_np.tensordot(jac[k][i], t[i], axes=_np.ndim(t[i])) for i in argnums)
                    for k in range(len(out))
                ]
                checks.append((f"{name}(f) @ t", pushed, jt))
        if real and argnums:
            ct = _random_like(out, rng)
            for name, jac in (("jacfwd", j_fwd), ("jacrev", j_rev)):
                pulled = [
                    sum(_np.tensordot(ct[k], jac[k][i], axes=out[k].ndim) for k in range(len(out)))
                    for i in argnums
                ]
                expected = [primal(v) for v in tree_flatten(vjp(g, *leaves)[1](tuple(ct)))[0]]
                checks.append((f"ct @ {name}(f)", pulled, expected))
        if argnums:
            other = [x + 0.01 * d for x, d in zip(leaves, t)]
            rows = [_np.stack([x, y]) for x, y in zip(leaves, other)]
            batched = vmap(g)(*rows)
            checks.append(("vmap(f) at x, x + t/100, row 0", [b[0] for b in batched], out))
            checks.append(
                ("vmap(f) at x, x + t/100, row 1", [b[1] for b in batched], list(g(*other)))
            )
            first = jet(g, tuple(leaves), tuple((d,) for d in t))[1]
            checks.append(("jet(f) along x + t s: the first derivative", [s[0] for s in first], jt))
            zeros = [_np.zeros_like(d) for d in t]
            second = jet(g, tuple(leaves), tuple((z, d) for z, d in zip(zeros, t)))[1]
            checks.append(
                ("jet(f) along x + t s^2/2: the second derivative", [s[1] for s in second], jt)
            )
    except Exception as e:
        return False, _raised(e)
    for what, got, want in checks:
        for k, (a, b) in enumerate(zip(got, want)):
            if not _agree_leaf(a, b, tol):
                idx, err = (
                    _worst(primal(a), primal(b)) if _np.shape(a) == _np.shape(b) else ((), 0.0)
                )
                return False, (
                    f"{what}: leaf {k} is {_fmt(a)} but the rules give {_fmt(b)} "
                    f"(worst at index {idx}: relative error {err:.2e})"
                )
    names = ", ".join(dict.fromkeys(w.split(" at ")[0].split(" along ")[0] for w, _, _ in checks))
    return True, f"{names or 'nothing to compare'} agree with the rules"


def _check_reverse(truth, args, ct, t, numerical, bct, eps, tol):
    """(passed, line) for <bprop(ct), t> = <ct, J t>, along the random `t` and along the unit
    direction s = conj(bprop(ct)) / |bprop(ct)|. Along s the left side is |bprop(ct)|, a sum
    without cancellation, so a bprop off by a factor 1 + d is off by d |bprop(ct)| there,
    however the random pairing happens to cancel."""
    leaves, tree = tree_flatten(args)
    pairs = [("t", _inner(bct, t), _inner(ct, numerical))]
    norm = _np.sqrt(sum(float(_np.sum(_np.abs(primal(b)) ** 2)) for b in bct))
    if norm > 0:
        s = [_as_like(_np.conj(primal(b)) / norm, x) for b, x in zip(bct, leaves)]
        pairs.append(
            (
                "s = conj(bprop(ct)) / |bprop(ct)|",
                _inner(bct, s),
                _inner(ct, _numerical_jvp(truth, args, tree_unflatten(tree, s), eps)),
            )
        )
    parts = []
    passed = True
    for name, lhs, rhs in pairs:
        ok = _close(lhs, rhs, tol)
        passed = passed and ok
        parts.append(
            f"along {name}: <bprop(ct), {name[0]}> = {lhs!r} but <ct, J {name[0]}> = "
            f"{rhs!r} by central differences (relative error "
            f"{abs(lhs - rhs) / (1 + abs(rhs)):.2e})"
            if not ok
            else f"along {name}: <bprop(ct), {name[0]}> = {lhs!r} = <ct, J {name[0]}>"
        )
    return passed, "; ".join(parts)


def _check_values(report, values, exact_tol):
    first_name, first = values[0]
    for name, v in values[1:]:
        if not _agree(v, first, exact_tol):
            report.record(
                VALUE, False, f"{first_name} = {_fmt_tree(first)} but {name} = {_fmt_tree(v)}"
            )
            return
    report.record(
        VALUE,
        True,
        f"{first_name} = {_fmt_tree(first)}, the same "
        f"{'everywhere' if len(values) > 1 else '(nothing to compare)'}",
    )


def _fmt_tree(x):
    leaves = tree_flatten(x)[0]
    return _fmt(leaves[0]) if len(leaves) == 1 else "(" + ", ".join(map(_fmt, leaves)) + ")"


def _agree(a, b, tol):
    """Whether pytrees a and b have the same structure and shapes and agree to `tol`."""
    la, ta = tree_flatten(a)
    lb, tb = tree_flatten(b)
    return ta == tb and all(_agree_leaf(x, y, tol) for x, y in zip(la, lb))


def _verdict(report, sources):
    """The parts to blame: a failure explained by another part's failure is not blamed."""
    rev_src, fwd_src = sources
    rev_ok, fwd_ok = report.ok(REVERSE), report.ok(FORWARD)
    failed = [] if report.ok(VALUE) else [VALUE]
    if not rev_ok and not fwd_ok:
        if fwd_src != "yours":  # forward mode is the bprop transposed: its failure follows
            failed.append(REVERSE)
        elif rev_src != "yours":
            failed.append(FORWARD)
        else:
            failed += [REVERSE, FORWARD]
    elif not rev_ok:
        failed.append(REVERSE)
    elif not fwd_ok:
        failed.append(FORWARD)
    elif not report.ok(CONSISTENCY):
        failed.append(CONSISTENCY)
    return tuple(failed)


def _rule_error(report, failed, sources, eps, tol, exact_tol):
    where = report.where
    rev_src, fwd_src = sources
    labels = {
        VALUE: "value",
        REVERSE: "reverse rule (bprop" + ("" if rev_src == "yours" else f", {rev_src}") + ")",
        FORWARD: "forward rule (jvp" + ("" if fwd_src == "yours" else f", {fwd_src}") + ")",
        CONSISTENCY: "transpose consistency of jvp and bprop",
        TRANSFORMS: "transforms built on the rules (jacfwd, jacrev, vmap, jet)",
    }
    blamed = " and ".join(labels[p] for p in failed)
    lines = [f"check_rule: the {blamed} of {where} {'is' if len(failed) == 1 else 'are'} wrong"]
    if failed == (CONSISTENCY,):
        lines.append(
            "  (each agrees with central differences, but not with the other to "
            "rounding: one is slightly wrong, or not linear in its tangent/cotangent)"
        )
    for part in (VALUE, REVERSE, FORWARD, CONSISTENCY, TRANSFORMS):
        if part not in report.results:
            continue
        passed, line = report.results[part]
        if passed:
            status = "ok"
        elif part in failed:
            status = "WRONG"
        else:
            status = "fails too, as a consequence"
        lines.append(f"  {labels[part]}: {status}: {line}")
    lines.append(
        f"  (central-difference step {eps}, tolerance {tol}; value and transpose "
        f"consistency to {exact_tol})"
    )
    err = AssertionError("\n".join(lines))
    err.failed = tuple(p if where == "f" else f"{p} of {where}" for p in failed)
    return err
