"""Numerical checks of derivatives, for fgrad's tests and for users checking their own rules.

Imports: `fgrad.api`, `fgrad.tree_util`.
"""

import numpy as _np

from .api import jvp, vjp
from .core import primal
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["check_grads", "check_jvp", "check_vjp"]

# Central-difference step and tolerance by the precision of the inputs. In float64 a step of
# 1e-4 leaves a truncation error near 1e-9 and a rounding error near 1e-12, so a tolerance of
# 1e-5 catches a rule that is 0.1% wrong. float32 only supports a coarse check.
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
    return float(sum(
        _np.sum(_np.asarray(primal(x), dtype=complex) * _np.asarray(primal(y), dtype=complex)).real
        for x, y in zip(xs, ys)
    ))


def _numerical_jvp(f, args, tangents, eps):
    leaves, tree = tree_flatten(tuple(args))
    t_leaves, _ = tree_flatten(tuple(tangents))
    plus = tree_flatten(f(*tree_unflatten(tree, _axpy(eps, leaves, t_leaves))))[0]
    minus = tree_flatten(f(*tree_unflatten(tree, _axpy(-eps, leaves, t_leaves))))[0]
    return [(_np.asarray(primal(p), dtype=complex) - _np.asarray(primal(m), dtype=complex)) / (2 * eps)
            for p, m in zip(plus, minus)]


def _close(a, b, tol):
    a, b = _np.asarray(a, dtype=complex), _np.asarray(b, dtype=complex)
    return bool(_np.all(_np.abs(a - b) <= tol * (1.0 + _np.abs(b))))


def check_jvp(f, args, rng=None, eps=None, tol=None, where="f"):
    """Check `jvp(f)` against central differences along a random direction."""
    rng = rng or _np.random.default_rng(0)
    leaves, tree = tree_flatten(tuple(args))
    dt = _leaf_dtype(leaves)
    eps, tol = eps or _EPS[dt], tol or _TOL[dt]
    tangents = tree_unflatten(tree, _random_like(leaves, rng))
    _, t_out = jvp(f, tuple(args), tangents)
    numerical = _numerical_jvp(f, args, tangents, eps)
    for k, (a, b) in enumerate(zip(tree_flatten(t_out)[0], numerical)):
        if not _close(primal(a), b, tol):
            raise AssertionError(
                f"check_grads: forward mode (jvp) of {where} disagrees with central "
                f"differences at output leaf {k}:\n  jvp       = {_np.asarray(primal(a))!r}\n"
                f"  numerical = {b!r}\n  (step {eps}, tolerance {tol})"
            )


def check_vjp(f, args, rng=None, eps=None, tol=None, where="f"):
    """Check `vjp(f)` with the identity <ct, J t> = <J^T ct, t>, J t by central differences."""
    rng = rng or _np.random.default_rng(0)
    leaves, tree = tree_flatten(tuple(args))
    dt = _leaf_dtype(leaves)
    eps, tol = eps or _EPS[dt], tol or _TOL[dt]
    out, vjp_fun = vjp(f, *args)
    out_leaves, out_tree = tree_flatten(out)
    ct = _random_like(out_leaves, rng)
    ct_in = tree_flatten(vjp_fun(tree_unflatten(out_tree, ct)))[0]
    t = _random_like(leaves, rng)
    lhs = _inner(ct_in, t)
    rhs = _inner(ct, _numerical_jvp(f, args, tree_unflatten(tree, t), eps))
    if not _close(lhs, rhs, tol):
        raise AssertionError(
            f"check_grads: reverse mode (vjp) of {where} disagrees with central differences: "
            f"<J^T ct, t> = {lhs!r} but <ct, J t> = {rhs!r} numerically (step {eps}, tolerance {tol})"
        )


def check_grads(f, args, order=2, modes=("fwd", "rev"), eps=None, tol=None, seed=0):
    """Check f's derivatives numerically, in forward and/or reverse mode, up to `order`.

    Order 1 checks jvp against central differences along random directions, and vjp through
    the identity <ct, J t> = <J^T ct, t>. Each higher order applies the same checks to f's
    jvp (with a fixed random tangent) and to f's vjp (with a fixed random cotangent) as
    functions of the inputs, so order 2 covers forward-over-forward, forward-over-reverse,
    reverse-over-forward and reverse-over-reverse. Raises AssertionError naming the part that
    is wrong. Use float64 inputs for a sharp check.

    >>> import fgrad.numpy as fnp
    >>> check_grads(lambda x: fnp.sin(x) * x, (0.3,), order=2)
    """
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: modes must be 'fwd' and/or 'rev', got {m!r}")
    _check(f, tuple(args), order, modes, eps, tol, _np.random.default_rng(seed), "f")


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
