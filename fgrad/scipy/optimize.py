"""`fgrad.scipy.optimize`: SciPy's solvers, with solutions differentiable by implicit
differentiation.

`minimize`, `root`, `least_squares`, `root_scalar`, `brentq` and `fixed_point` take SciPy's
arguments and return what SciPy returns (an `OptimizeResult`, `RootResults`, a float or an
array). SciPy does the solving, on plain values; fgrad supplies the derivatives SciPy asks for
(`jac`, `hess`, `hessp`) when they are not given. When the parameters of the problem are being
differentiated, the solution is differentiated by the implicit function theorem: a solution
x(θ) satisfies an optimality condition F(x, θ) = 0 (the gradient of the objective for
`minimize` and `least_squares`, the function itself for `root`, func(x) - x for
`fixed_point`), so

    dx/dθ = -(∂F/∂x)^-1 ∂F/∂θ,

computed with Hessian- (or Jacobian-) vector products and a linear solve (`implicit_solve`),
never by differentiating SciPy's iterations (see the docs page "Implicit differentiation").
This is `fgrad.solve`'s root primitive, so every transform works: reverse and forward mode,
higher orders, `vmap` (one solve per row), `jet` and `jit`.

What is differentiated. The parameters are the values in `args` (any pytree of arrays) and
the values the function reads from a closure (as `fgrad.custom_root` does); `x0` only starts
the solver: its derivative is zero. Only `res.x` (`root`, the returned array) and the
objective's value `res.fun` (recomputed at the solution) are differentiable; the other fields
are SciPy's plain values, of this very solve: under `jit` a replay's own (an output of the
record: an array, and a field that is no number, string or array, such as L-BFGS-B's
`hess_inv`, an array of one object), under `vmap` one per row, stacked.

Convergence. A gradient through a solution that did not converge would be silently wrong, so
when a parameter is being differentiated and SciPy reports failure (`success` False), the
call raises `RuntimeError`, or with `on_failure="warn"` warns (`RuntimeWarning`) and goes
on. When nothing is differentiated, the result is returned as SciPy returns it. The linear
solve of the implicit derivative raises when it does not converge.

Imports: `fgrad.core`, `fgrad.api`, `fgrad.solve`, `fgrad.tree_util`, `fgrad.numpy`,
`fgrad.scipy._failure` (`on_failure`), and `scipy.optimize`, `scipy.sparse.linalg` for values.
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Any

import numpy as _np
import scipy.optimize as _so
import scipy.sparse.linalg as _ssl

from .. import core, numpy as fnp
from ..api import grad as _grad, jacfwd, jvp, value_and_grad
from ..core import Box, live_levels_of, refuse_lazy
from ..jitting import jit
from ..numpy._mirror import missing_names
from ..numpy.shaping import describe, read_constant
from ..solve import _Closed, _discover, _refuse_closure_under_vmap, batch_levels, root_of
from ..tree_util import tree_flatten, tree_map, tree_unflatten
from ._failure import check_on_failure, report_failure

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["brentq", "fixed_point", "least_squares", "minimize", "root", "root_scalar"]

if not TYPE_CHECKING:  # a name of scipy.optimize not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.optimize")

OptimizeResult = _so.OptimizeResult
# what the solvers return, for a type checker (SciPy ships no type information)
_Result = Any

# minimize's methods that use no derivative, and those that use the Hessian (a product with
# it, or the matrix)
_NO_GRADIENT = {"nelder-mead", "powell", "cobyla", "cobyqa"}
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS = {"dogleg", "trust-exact"}
_IMPLICIT = ("auto", "direct", "cg", "gmres")


# --- a problem: the user's function, its parameters, its solution ---------------------------------


class _Problem:
    """A call of a solver: `fun(x, *args)`, with the parameters that are being differentiated
    (a traced `x0`, the traced leaves of `args`, the values `fun` reads from a closure) as
    `params`, and what SciPy reported."""

    def __init__(self, who, fun, x0, args, on_failure, implicit_solve, implicit_tol, flat=True):
        self.who = who
        if not callable(fun):
            raise TypeError(
                f"{who}: the function must be callable, got {type(fun).__name__}; pass the "
                "function itself, not its value"
            )
        check_on_failure(who, on_failure)
        if not (callable(implicit_solve) or implicit_solve in _IMPLICIT):
            raise ValueError(
                f"{who}: implicit_solve must be one of {', '.join(map(repr, _IMPLICIT))} or a "
                f"function tangent_solve(g, y); got {implicit_solve!r}"
            )
        self.fun, self.on_failure = fun, on_failure
        self.implicit_solve, self.implicit_tol = implicit_solve, implicit_tol
        if not isinstance(args, tuple):
            args = (args,)  # as SciPy reads a single extra argument
        self.x0 = _as_start(who, x0, flat)
        self.shape, self.dtype = core.shape_of(self.x0), _np.dtype(_np.float64)
        leaves, self.arg_tree = tree_flatten(args)
        self.arg_leaves = leaves
        _check_args(who, self.x0, leaves)
        self.traced = [i for i, v in enumerate(leaves) if type(v) is Box]
        self.x0_param = type(self.x0) is Box
        x_plain = core.constant_of(self.x0)
        plain_args = tree_unflatten(self.arg_tree, [core.constant_of(v) for v in leaves])
        out, captured, aliases = _discover(lambda xa: fun(xa[0], *xa[1]), (x_plain, plain_args))
        # a vmap's value read from a closure under a differentiating transform or jit outside
        # the vmap: refused, as custom_root refuses it (equal rows gave a wrong gradient)
        given = _nested_boxes([x_plain, *tree_flatten(plain_args)[0]])  # read, not closed over
        _refuse_closure_under_vmap(
            who,
            out,
            [c for c in captured if id(c) not in given],
            leaves,
            rows_read_by_numpy=True,
            undifferentiated=[self.x0],  # (x0's derivative is zero: docs/implicit.md)
        )
        # whether fun reads a value of a vmap from a closure (see fgrad.solve's vmap rule):
        # run on one row of the arguments, its value has rows only if it does
        self.reads_batched = bool(batch_levels(_leaves_of(out)))
        if batch_levels([self.x0, *leaves]):
            row = tree_unflatten(self.arg_tree, [_first_row(v) for v in leaves])
            out, _, _ = _discover(lambda xa: fun(xa[0], *xa[1]), (_first_row(self.x0), row))
            self.reads_batched = bool(batch_levels(_leaves_of(out)))
        self.closed = _Closed(lambda xa: fun(xa[0], *xa[1]), captured, aliases)
        self.params = (
            ([self.x0] if self.x0_param else []) + [leaves[i] for i in self.traced] + list(captured)
        )
        self.captured_end = len(self.params)  # then those of `parameter`
        # derivatives are taken: a failed solve must not give a gradient
        self.differentiated = any(
            not (lv.batches or lv.stages) for lv in live_levels_of(self.params)
        )
        # the fields of SciPy's result (see `fields`): its type and keys, from the first run
        self.result_type: type | None = None
        self.field_keys: list[str] = []
        self.field_kinds: list[str] = []

    def start(self, params):
        return _np.asarray(core.primal(params[0] if self.x0_param else self.x0), _np.float64)

    def call(self, x, params):
        """fun(x, *args) with the parameters `params` in place of the traced values."""
        first = 1 if self.x0_param else 0
        leaves = list(self.arg_leaves)
        for k, i in enumerate(self.traced):
            leaves[i] = params[first + k]
        args = tree_unflatten(self.arg_tree, leaves)
        return self.closed((x, args), list(params[first + len(self.traced) : self.captured_end]))

    def parameter(self, value):
        """A value the optimality condition reads besides fun's (least_squares' f_scale),
        made a parameter when traced: a function of the parameters that gives it."""
        if type(value) is not Box:
            return lambda params: value
        self.params.append(value)
        self.differentiated = self.differentiated or any(
            not (lv.batches or lv.stages) for lv in live_levels_of([value])
        )
        index = len(self.params) - 1
        return lambda params: params[index]

    def plain(self, fn):
        """A function of a plain x for SciPy: `fn` with float64 NumPy values out."""

        def out(x, *_scipy_args, **_scipy_kwargs):
            v = fn(_np.asarray(x, dtype=_np.float64))
            return _np.asarray(core.primal(v), dtype=_np.float64)

        return out

    def check(self, ok, message):
        if ok or not self.differentiated:
            return
        text = (
            f"{self.who} did not converge ({message}): the implicit derivative of the "
            "solution assumes the optimality condition holds there, and would be wrong. "
            "Raise maxiter, change the tolerances or the starting point, or pass "
            "on_failure='warn' to get the result with a warning"
        )
        report_failure(text, self.on_failure, stacklevel=4)

    def tangent_solve(self, symmetric):
        kind = self.implicit_solve
        if callable(kind):
            return kind
        size = int(_np.prod(self.shape))
        if kind == "auto":
            kind = "direct" if size <= 20 else ("cg" if symmetric else "gmres")
        if kind == "direct":
            return _direct
        return functools.partial(_iterative, self.who, kind, self.implicit_tol)

    def solve(self, condition, scipy_solve, symmetric):
        """The solution, differentiable: the root of `condition(x, params)` that
        `scipy_solve(params)` (returning x and SciPy's result) finds; and that result, whose
        fields are outputs of the root: this call's under `jit` (a replay's own, never the
        recorded run's) and each row's under `vmap` (stacked, as any output)."""

        def run(_f, _guess, params):
            x, result = scipy_solve(params)
            return x, self.fields(result)

        x, fields = root_of(
            self.who,
            condition,
            self.params,
            run,
            self.tangent_solve(symmetric),
            _np.zeros(self.shape),
            has_aux=True,
            symmetric=symmetric,
            solve_params=True,
            reads_batched=self.reads_batched,
        )
        return x, self.result_of(fields)

    def solved(self, condition, scipy_solve, symmetric, **values):
        """SciPy's result. Where the parameters are traced, its `x` is the differentiable root
        of `condition(x, params)` that SciPy finds (`solve`), and each of `values` (a name:
        a function of x and the parameters, as `fun`) is recomputed from that x; where they
        are not, the result is SciPy's as it is."""
        if not live_levels_of(self.params):
            return scipy_solve(self.params)[1]
        x, out = self.solve(condition, scipy_solve, symmetric)
        out.x = x
        for key, value in values.items():
            out[key] = value(x, self.params)
        return out

    def fields(self, result):
        """The fields of SciPy's `result` (but its solution, which `solve` gives) as arrays, one
        per field, for the root's outputs: a number, string or array as itself, any other value
        (L-BFGS-B's `hess_inv` operator, `final_simplex`) in an array of one object. The keys
        are the first run's (a replay's or another row's result has the same)."""
        if self.result_type is None:
            self.result_type = type(result)
            self.field_keys = [k for k in result if k not in ("x", "root")]
            self.field_kinds = [_field_kind(result[k]) for k in self.field_keys]
        return tuple(_field_array(result.get(k)) for k in self.field_keys)

    def result_of(self, fields):
        """SciPy's result from `fields` (as `fields` made them): a field that carries no value
        of a `jit` or `vmap` (whose output it is, per replay or per row) is given back as SciPy
        gave it (a Python number, a NumPy scalar, an array, an object)."""
        kind_of = self.result_type or OptimizeResult
        out = kind_of.__new__(kind_of)
        for key, kind, value in zip(self.field_keys, self.field_kinds, fields):
            value = core.constant_of(value)  # no derivative: a plain field
            if type(value) is not Box:
                value = (
                    value.item() if kind == "python" else value[()] if kind != "array" else value
                )
            dict.__setitem__(out, key, value)
        return out


def _field_kind(value):
    if isinstance(value, (bool, int, float, str)):
        return "python"
    if isinstance(value, (_np.ndarray, _np.generic)) and _np.asarray(value).dtype != object:
        return "array" if isinstance(value, _np.ndarray) else "scalar"
    return "object"


def _field_array(value):
    if isinstance(value, (bool, int, float, str, _np.ndarray, _np.generic)):
        a = _np.asarray(value)
        if a.dtype != object:
            return a
    held = _np.empty((), dtype=object)
    held[()] = value
    return held


def _check_args(who, x0, leaves):
    refuse_lazy(who, "SciPy's solver steps on NumPy arrays", core.innermost(x0))
    for k, v in enumerate(leaves):
        inner = core.innermost(v)
        refuse_lazy(who, "SciPy's solver steps on NumPy arrays", inner)
        dtype = getattr(inner, "dtype", None)
        if dtype is None and isinstance(inner, complex):
            dtype = _np.dtype(complex)
        if dtype is not None and _np.dtype(dtype).kind == "c":
            raise TypeError(
                f"{who}: args leaf {k} has {describe(v)}; SciPy's solvers and their implicit "
                "derivatives are real: split it into its real and imaginary parts"
            )


def _nested_boxes(values) -> set:
    """The ids of the boxes in `values` and under them (an argument's box under a vmap's)."""
    found = set()
    for v in values:
        while type(v) is Box:
            found.add(id(v))
            v = v.value
    return found


def _first_row(v):
    """v's plain value without the rows of any vmap (its first row): a probe."""
    axes = []
    while type(v) is Box:
        if v.level.batches and v.level.live:
            axes.append(v.aux)
        v = v.value
    if not axes:
        return v
    v = _np.asarray(v)
    for axis in axes:  # the outermost box is the innermost vmap's: its axis comes first
        v = _np.take(v, 0, axis=axis)
    return v


def _leaves_of(out):
    try:
        return tree_flatten(out)[0]
    except Exception:  # a value fgrad cannot flatten holds no box of a vmap
        return []


def _as_start(who, x0, flat):
    """x0 as a float array: of its own shape; with `flat` True, 1-D (a scalar as one unknown,
    more dimensions refused, as SciPy's minimize refuses them); with `flat` "ravel", raveled
    (as SciPy's root with "hybr" and "lm" reads it)."""
    if isinstance(x0, (list, tuple)):
        x0 = fnp.asarray(x0)
    if type(x0) is not Box:
        x0 = _np.asarray(x0)
        if x0.dtype.kind not in "fiub":
            raise TypeError(
                f"{who}: x0 has {describe(x0)}; pass a real float array (split a complex "
                "unknown into its real and imaginary parts)"
            )
        x0 = x0.astype(_np.float64)
    elif core.dtype_of(x0).kind != "f":
        raise TypeError(f"{who}: x0 is a traced value with {describe(x0)}; pass a real float array")
    shape = core.shape_of(x0)
    if flat is True and len(shape) > 1:
        raise ValueError(
            f"{who}: x0 has {describe(x0)}, but the unknowns must be a 1-D array (as SciPy "
            "asks); ravel it and reshape inside the function"
        )
    if flat and len(shape) != 1:  # a scalar; or, for "ravel", any shape
        x0 = fnp.reshape(x0, (-1,)) if type(x0) is Box else x0.reshape(-1)
    return x0


def _direct(g, y):
    """Solve g(z) = y for a linear g by its matrix (one product per unknown, batched).

    A matrix singular to working precision is refused: its smallest singular value at most
    n eps times its largest (NumPy's `matrix_rank` threshold; condition number >= 1 / (n eps)).
    Computed with rounding, the Jacobian of a flat valley is rarely exactly singular (cond
    2.3e16 for (0.1 x0 + 0.3 x1 - a)**2), and its solve returned an arbitrary number."""
    shape = _np.shape(y)
    n = int(_np.prod(shape))
    y = _np.asarray(y, dtype=_np.float64)

    def flat(u):
        return fnp.reshape(g(fnp.reshape(u, shape)), (n,))

    matrix = _np.asarray(core.primal(jacfwd(flat)(_np.zeros(n))), dtype=_np.float64)
    matrix = matrix.reshape(n, n)
    cond = _condition(matrix)
    try:
        if cond * n * _np.finfo(_np.float64).eps >= 1:
            raise _np.linalg.LinAlgError(f"condition number {cond:.3g} >= 1 / (n eps)")
        z = _np.linalg.solve(matrix, y.reshape(n))
    except _np.linalg.LinAlgError as error:
        raise RuntimeError(
            "the implicit derivative needs the Jacobian of the optimality condition at the "
            f"solution ({n} x {n}), which is singular there to working precision ({error}): "
            "the solution is not isolated (a flat direction of the objective), so it has no "
            "derivative. Add a regularisation term, or fix the free directions"
        ) from error
    return z.reshape(shape)


def _condition(matrix):
    """The 2-norm condition number of a square matrix (inf for a singular one; 0 when it is
    not finite, left to the solve, whose nan says so)."""
    if matrix.size == 0 or not _np.all(_np.isfinite(matrix)):
        return 0.0
    s = _np.linalg.svd(matrix, compute_uv=False)
    return float("inf") if s[-1] == 0 else float(s[0] / s[-1])


def _iterative(who, kind, tol, g, y):
    """Solve g(z) = y with SciPy's cg or gmres on products with g."""
    shape = _np.shape(y)
    n = int(_np.prod(shape))

    # The solver applies g tens of times to vectors of one shape: recorded once by `jit` and
    # replayed (a replay computes exactly what a call would), as odeint does with its function
    recorded = jit(g)
    recorded._warned = True  # a g that branches on values just runs eagerly, silently

    def matvec(v):
        return _np.asarray(core.primal(recorded(_np.reshape(v, shape))), dtype=_np.float64).ravel()

    op = _ssl.LinearOperator((n, n), matvec=matvec, dtype=_np.float64)
    b = _np.asarray(y, dtype=_np.float64).ravel()
    if not _np.any(b):
        return _np.zeros(shape)
    solver = _ssl.cg if kind == "cg" else _ssl.gmres
    z, info = solver(op, b, rtol=tol, atol=0.0, maxiter=10 * n + 10)
    if info != 0:
        raise RuntimeError(
            f"{who}: the linear solve of the implicit derivative ({kind}, {n} unknowns) did "
            f"not converge to rtol={tol} ({'info=' + str(info)}); pass implicit_solve='direct' "
            "for a small problem, or implicit_tol larger"
        )
    return z.reshape(shape)


# --- minimize -------------------------------------------------------------------------------------


def minimize(
    fun: Callable[..., Any],
    x0: Any,
    args: Any = (),
    method: str | Callable[..., Any] | None = None,
    jac: Any = None,
    hess: Any = None,
    hessp: Callable[..., Any] | None = None,
    bounds: Any = None,
    constraints: Any = (),
    tol: float | None = None,
    callback: Callable[..., Any] | None = None,
    options: dict | None = None,
    *,
    on_failure: str = "raise",
    implicit_solve: str | Callable[..., Any] = "auto",
    implicit_tol: float = 1e-10,
) -> _Result:
    """Minimize `fun(x, *args)` with SciPy's `minimize`; `res.x` is differentiable with respect
    to `args` (and values `fun` closes over) by the implicit function theorem.

    Parameters
    ----------
    fun, x0, args, method, jac, hess, hessp, bounds, constraints, tol, callback, options
        As SciPy's. `jac` (and `hessp` for the Newton and trust-region methods, `hess` for
        dogleg and trust-exact) are fgrad's when not given; `fun` must be written with
        `fgrad.numpy` when its solution is differentiated.
    on_failure : {"raise", "warn"}, default "raise"
        What a solve that did not converge does when its solution is differentiated.
    implicit_solve : {"auto", "direct", "cg", "gmres"} or callable, default "auto"
        The linear solve with the Hessian: "direct" builds it (one Hessian-vector product per
        unknown, batched), "cg" and "gmres" use products; "auto" is "direct" up to 20
        unknowns, else "cg". A callable is a `tangent_solve(g, y)` as for
        `fgrad.custom_root`.
    implicit_tol : float, default 1e-10
        The relative residual of "cg" and "gmres".

    Returns
    -------
    OptimizeResult
        SciPy's; `x` and `fun` are differentiable.

    Examples
    --------
    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.optimize import minimize
    >>> def argmin(a):  # the minimizer of sum((x - a)**2) + sum(x**4) / 4
    ...     f = lambda x, a: fnp.sum((x - a) ** 2) + fnp.sum(x**4) / 4
    ...     return minimize(f, np.zeros(2), args=(a,), method="BFGS", options={"gtol": 1e-10}).x
    >>> a = np.array([1.0, 2.0])
    >>> x = argmin(a)
    >>> J = fgrad.jacrev(argmin)(a)  # dx/da = 2 / (2 + 3 x**2)
    >>> bool(np.allclose(J, np.diag(2 / (2 + 3 * x**2)), atol=1e-9))
    True
    """
    who = "minimize"
    p = _Problem(who, fun, x0, args, on_failure, implicit_solve, implicit_tol)
    bounds = _read_bounds(p, bounds)
    name = method.lower() if isinstance(method, str) else method
    returns_grad = jac is True

    def objective(x, params):
        out = p.call(x, params)
        return out[0] if returns_grad else out

    def scipy_solve(params):
        # SciPy evaluates fgrad's functions of the problem (the user's, with its parameters
        # in place), which ignore the extra arguments SciPy passes; a `jac`, `hess` or `hessp`
        # the user gives gets them
        obj = functools.partial(objective, params=params)
        kw: dict[str, Any] = {
            k: _plain_callable(v) for k, v in (("jac", jac), ("hess", hess), ("hessp", hessp))
        }
        if name in _NO_GRADIENT:
            f = p.plain(obj)
        elif jac is None or jac is False:
            f, kw["jac"] = _pair_plain(value_and_grad(obj)), True
        elif jac is True:
            f = _pair_plain(lambda x: p.call(x, params))
        else:
            f = p.plain(obj)
        if name in _HESSP and hess is None and hessp is None:
            kw["hessp"] = _hessp_plain(obj)
        elif name in _HESS and hess is None:
            kw["hess"] = _hess_plain(obj)
        res = _so.minimize(
            f,
            p.start(params),
            _plain_args(p, params),
            method,
            bounds=bounds,
            constraints=constraints,
            tol=tol,
            callback=callback,
            options=options,
            **kw,
        )
        p.check(bool(res.success), res.message)
        if p.differentiated:
            _refuse_active(who, res.x, bounds, constraints, obj, p.tangent_solve(True))
        return _np.asarray(res.x, dtype=_np.float64), res

    def condition(x, params):
        return _grad(lambda y: objective(y, params))(x)

    return p.solved(condition, scipy_solve, True, fun=objective)


def _plain_callable(fn):
    """A derivative the user gives (`jac`, `hess`, `hessp`, `fprime`, `fprime2`), returning
    plain values: it only guides SciPy's search (the derivative of the solution is fun's, by
    the implicit function theorem), so a closure over a traced parameter needs none there.
    Other values (None, True, a finite-difference scheme's name) as they are."""
    if not callable(fn):
        return fn

    def plain(*args, **kwargs):
        return tree_map(core.primal, fn(*args, **kwargs))

    return plain


def _plain_args(p, params):
    first = 1 if p.x0_param else 0
    leaves = list(p.arg_leaves)  # the traced ones are in params (their values, for SciPy)
    for k, i in enumerate(p.traced):
        leaves[i] = core.primal(params[first + k])
    return tuple(tree_unflatten(p.arg_tree, leaves))


def _pair_plain(fn):
    """For a function that returns (value, gradient), as SciPy's jac=True asks."""

    def f(x, *_):
        v, g = fn(_np.asarray(x, dtype=_np.float64))
        return _scalar_value(v), _np.asarray(core.primal(g), dtype=_np.float64)

    return f


def _scalar_value(v):
    """The objective's value as a float: a scalar or an array of one element, as SciPy and
    `fgrad.value_and_grad` accept; another shape says which it was."""
    a = _np.asarray(core.primal(v), dtype=_np.float64)
    if a.size != 1:
        raise TypeError(
            f"minimize: fun must return a scalar (or an array of one element), got "
            f"{describe(a)}; return the objective's value, e.g. fnp.sum of the terms"
        )
    return float(a.reshape(()))


def _vector_pair_plain(fn):
    """For a function that returns (F(x), the Jacobian of F), as root's jac=True asks."""

    def f(x, *_):
        v, j = fn(_np.asarray(x, dtype=_np.float64))
        plain = [_np.asarray(core.primal(u), dtype=_np.float64) for u in (v, j)]
        return plain[0].reshape(-1), plain[1]

    return f


def _hessp_plain(objective):
    g = _grad(objective)

    def hessp(x, v, *_):
        x = _np.asarray(x, dtype=_np.float64)
        return _np.asarray(core.primal(jvp(g, (x,), (_np.asarray(v, _np.float64),))[1]))

    return hessp


def _hess_plain(objective):
    h = jacfwd(_grad(objective))

    def hess(x, *_):
        return _np.asarray(core.primal(h(_np.asarray(x, dtype=_np.float64))))

    return hess


def _refuse_active(who, x, bounds, constraints, objective, tangent_solve):
    """The implicit derivative of an unconstrained optimality condition does not hold where a
    bound or a constraint is active.

    A bound is active where x is on it (to 1e-8 relative), or where the objective's Newton
    step from x, x - H^-1 g (the minimum of its quadratic model), reaches or crosses it.
    Methods stop short of an active bound by an amount that depends on the objective's scale
    (trust-constr, an interior-point method, by 3e-3 for 1e-3 (x - 1)**2 with x <= 0), so no
    fixed band finds them all; the step is a distance, the same under f -> s f + C, and at an
    interior solution it is the solver's error, smaller than the distance to the bound. The
    full step, not each unknown's own |g_i| / H_ii: with coupled unknowns the latter is far
    shorter (4e-4 for 10 (x0 - x1)**2 + (x0 + x1 - 2e-3)**2 with x0 <= 0, where trust-constr
    stops 1.8e-3 inside and the step goes to (1e-3, 1e-3))."""
    if constraints not in ((), [], None):
        raise NotImplementedError(
            f"{who}: the solution is differentiated through its unconstrained optimality "
            "condition, which does not hold with constraints (their KKT system is not "
            "implemented); drop the constraints, or compute the solution without "
            "differentiating it (fgrad.stop_gradient on the parameters)"
        )
    if bounds is None:
        return
    x = _np.asarray(x, dtype=_np.float64)
    lo, hi = _bound_arrays(bounds, x.shape)
    _refuse_bounds(who, _active_bounds(x, lo, hi, objective, tangent_solve))


def _active_bounds(x, lo, hi, objective, tangent_solve):
    """Where a bound is active at `x` (see `_refuse_active`): x on it, or the Newton step of
    `objective` from x reaching it."""
    scale = 1 + _np.abs(x)
    active = (_np.abs(x - lo) <= 1e-8 * scale) | (_np.abs(x - hi) <= 1e-8 * scale)
    if not _np.any(active) and _np.any(_np.isfinite(lo) | _np.isfinite(hi)):
        active = _minimum_past_bound(objective, x, lo, hi, tangent_solve)
    return active


def _refuse_bounds(who, active):
    if _np.any(active):
        raise NotImplementedError(
            f"{who}: the bounds are active at the solution (unknowns "
            f"{_np.flatnonzero(active).tolist()}): the derivative of a solution on a bound is "
            "that of the bound, not of the unconstrained optimality condition fgrad "
            "differentiates; widen the bounds, or reparametrise the unknowns (x = lo + "
            "softplus(z)) to differentiate without them"
        )


def _read_bounds(p, bounds):
    """`bounds` with plain values, as SciPy reads them. The solution does not move with a
    bound that is not active (its derivative there is 0), and an active one is refused
    (`_refuse_active`), so traced bounds are read at their values (a jit's guarded, a vmap's
    rows read one by one); a bound being differentiated makes the solve differentiated: its
    convergence and its active bounds are checked."""
    leaves = tree_flatten(bounds)[0] if not isinstance(bounds, _so.Bounds) else []
    if not any(type(v) is Box for v in leaves):
        return bounds
    if any(not (lv.batches or lv.stages) for lv in live_levels_of(leaves)):
        p.differentiated = True
    return read_constant(core.constant_of(bounds), p.who, "bounds")


def _bound_arrays(bounds, shape, pairs=True):
    """The lower and upper bounds as float arrays of x's shape: minimize's `bounds`, a
    sequence of (lo, hi) pairs (None is unbounded), or with `pairs` False least_squares',
    (lo, hi); either may be a `Bounds`."""
    if isinstance(bounds, _so.Bounds):
        lo, hi = bounds.lb, bounds.ub
    elif not pairs:
        lo, hi = bounds
    else:
        pairs = [(-_np.inf if a is None else a, _np.inf if b is None else b) for a, b in bounds]
        lo, hi = [a for a, _ in pairs], [b for _, b in pairs]
    as_array = functools.partial(_np.asarray, dtype=_np.float64)
    return _np.broadcast_to(as_array(lo), shape), _np.broadcast_to(as_array(hi), shape)


def _minimum_past_bound(objective, x, lo, hi, tangent_solve):
    """Where the Newton step from x, to x - H^-1 g, ends on or past a bound: H z = g solved
    with the implicit derivative's own solve (products with the Hessian). Where that solve
    fails (a singular Hessian: the minimum is not isolated, and the implicit derivative
    fails the same way) or the step is not a descent direction (g . H^-1 g < 0: an
    indefinite Hessian, whose step goes to a saddle point), each unknown's own Newton step
    decides, with a curvature that is not positive counted as active.
    """
    g = _np.asarray(core.primal(_grad(objective)(x)), dtype=_np.float64)

    def hessian_times(v):
        return jvp(_grad(objective), (x,), (v,))[1]

    try:
        step = _np.asarray(core.primal(tangent_solve(hessian_times, g)), dtype=_np.float64)
    except (RuntimeError, _np.linalg.LinAlgError):
        return _coordinate_minimum_past_bound(objective, x, g, lo, hi)
    step = step.reshape(x.shape)
    if not _np.all(_np.isfinite(step)) or float(_np.vdot(g, step)) < 0:
        return _coordinate_minimum_past_bound(objective, x, g, lo, hi)
    newton = x - step
    return (newton <= lo) | (newton >= hi)


def _coordinate_minimum_past_bound(objective, x, g, lo, hi):
    """Where the minimum of `objective` along each unknown alone (from x, by a Newton step)
    is on or past the bound its gradient points to (or the curvature along it is not
    positive); the Hessian's diagonal only for those unknowns (one batched product each)."""
    bound = _np.where(g < 0, hi, lo)  # descent increases x where g < 0
    candidates = _np.flatnonzero(_np.isfinite(bound) & (g != 0))
    active = _np.zeros(x.shape, dtype=bool)
    if candidates.size == 0:
        return active
    embed = _np.zeros((candidates.size, x.size))
    embed[_np.arange(candidates.size), candidates] = 1.0

    def gradient_along(u):
        return _grad(objective)(x + u @ embed)

    columns = _np.asarray(core.primal(jacfwd(gradient_along)(_np.zeros(candidates.size))))
    h = columns[candidates, _np.arange(candidates.size)]
    g, distance = _np.abs(g[candidates]), _np.abs(bound[candidates] - x[candidates])
    with _np.errstate(divide="ignore", invalid="ignore"):
        active[candidates] = (h <= 0) | (g >= h * distance)
    return active


# --- root, least_squares, fixed_point -------------------------------------------------------------


def root(
    fun: Callable[..., Any],
    x0: Any,
    args: Any = (),
    method: str = "hybr",
    jac: Any = None,
    tol: float | None = None,
    callback: Callable[..., Any] | None = None,
    options: dict | None = None,
    *,
    on_failure: str = "raise",
    implicit_solve: str | Callable[..., Any] = "auto",
    implicit_tol: float = 1e-10,
) -> _Result:
    """A root of `fun(x, *args)` (a vector function, as many equations as unknowns), with
    SciPy's `root`; `res.x` is differentiable with respect to `args` by the implicit function
    theorem. `jac` is fgrad's (forward mode) when not given, for "hybr" and "lm"; the other
    methods use none, and `jac=True` there (fun returning values and Jacobian) warns as SciPy
    does and takes the values. Keywords
    `on_failure`, `implicit_solve` ("auto" is "direct" up to 20 unknowns, else "gmres") and
    `implicit_tol` as for `minimize`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.optimize import root
    >>> sol = lambda a: root(lambda x, a: x**3 + x - a, np.ones(2), args=(a,), tol=1e-13).x
    >>> a = np.array([2.0, 10.0])
    >>> print(sol(a), np.diag(fgrad.jacfwd(sol)(a)))  # 1 / (3 x**2 + 1)
    [1. 2.] [0.25       0.07692308]
    """
    who = "root"
    # x0 as SciPy reads it: "hybr" and "lm" ravel it, the other methods keep its shape
    flat = "ravel" if isinstance(method, str) and method.lower() in _USES_JAC else False
    p = _Problem(who, fun, x0, args, on_failure, implicit_solve, implicit_tol, flat)
    returns_jac = jac is True
    if returns_jac and method.lower() not in _USES_JAC:
        # as SciPy: the method ignores jac, with SciPy's warning (SciPy then fails on the
        # (values, Jacobian) pair it passes on; the values alone are the equations)
        warnings.warn(f"Method {method} does not use the jacobian (jac).", RuntimeWarning, 2)

    def values(x, params):
        out = p.call(x, params)
        return fnp.reshape(out[0] if returns_jac else out, (-1,))

    def equations(x, params):  # shaped as the unknowns (SciPy ravels them where it needs)
        return fnp.reshape(values(x, params), p.shape)

    def scipy_solve(params):
        j = None if returns_jac and method.lower() not in _USES_JAC else _plain_callable(jac)
        if returns_jac and method.lower() in _USES_JAC:
            f = _vector_pair_plain(lambda x: p.call(x, params))
        else:
            f = p.plain(functools.partial(equations, params=params))
            if jac is None and method in ("hybr", "lm"):
                j = _jac_plain(functools.partial(equations, params=params))
        start = p.start(params)
        res = _so.root(f, start, _plain_args(p, params), method, j, tol, callback, options)
        # SciPy's success is not always a small residual (method="krylov" with a tol it
        # cannot reach reports success far from a root): check the residual too
        pair = returns_jac and method.lower() in _USES_JAC
        scale = 1.0 + float(_np.max(_np.abs(_plain_equations(f, start, pair))))
        residual = float(_np.max(_np.abs(_plain_equations(f, res.x, pair))))
        ok = bool(res.success) and residual <= 1e-8 * scale
        message = f"{res.message}; max |fun(x)| = {residual:.3g}"
        if ok and p.differentiated:
            # that residual is relative to fun(x0): from a far start (x0 = 1e5) a point that
            # is no root (|fun| = 1, at the minimum of |fun|) passed; the Newton step from x
            # is its distance to a root, whatever the start or the equations' scales
            step = _newton_step(functools.partial(equations, params=params), res.x, p)
            ok = step <= _ROOT_STEP_TOL * (1 + float(_np.max(_np.abs(res.x), initial=0.0)))
            message += f"; a Newton step of {step:.3g} from x to a root"
        p.check(ok, message)
        return _np.asarray(res.x, dtype=_np.float64), res

    _check_square(p, values)
    return p.solved(equations, scipy_solve, False, fun=equations)


# the largest Newton step from a point that root accepts as a root, relative to 1 + max |x|:
# a root found to SciPy's default xtol (1.5e-8), with room for the rounding of an
# ill-conditioned Jacobian
_ROOT_STEP_TOL = 1e-6


def _newton_step(equations, x, p):
    """max |J^-1 F(x)| for the equations F at x, with the implicit derivative's own solve; 0
    where that solve fails (a Jacobian singular there: the implicit derivative raises that)."""
    x = _np.asarray(x, dtype=_np.float64)
    f = _np.asarray(core.primal(equations(x)), dtype=_np.float64)

    def jacobian_times(v):
        return jvp(equations, (x,), (v,))[1]

    try:
        step = core.primal(p.tangent_solve(False)(jacobian_times, f))
    except (RuntimeError, _np.linalg.LinAlgError):
        return 0.0
    step = _np.abs(_np.asarray(step, dtype=_np.float64))
    return float(_np.max(step, initial=0.0)) if _np.all(_np.isfinite(step)) else float("inf")


# SciPy's root methods that use `jac` (the others warn that they do not, and ignore it)
_USES_JAC = ("hybr", "lm")


def _plain_equations(f, x, returns_jac):
    out = f(x)
    return _np.asarray(out[0] if returns_jac else out, dtype=_np.float64)


def _jac_plain(fn):
    j = jacfwd(fn)

    def jac(x, *_, **__):
        return _np.asarray(core.primal(j(_np.asarray(x, dtype=_np.float64))), dtype=_np.float64)

    return jac


def _check_square(p, equations):
    out = equations(core.constant_of(p.x0), [core.constant_of(v) for v in p.params])
    n, m = int(_np.prod(p.shape)), int(_np.prod(core.shape_of(out)))
    if n != m:
        raise ValueError(
            f"{p.who}: the function returned {m} values for {n} unknowns (x0 has "
            f"{describe(p.x0)}); a root needs as many equations as unknowns: use "
            "least_squares for an over- or underdetermined system"
        )


def least_squares(
    fun: Callable[..., Any],
    x0: Any,
    jac: Any = "2-point",
    bounds: Any = (-_np.inf, _np.inf),
    method: str = "trf",
    ftol: float | None = 1e-08,
    xtol: float | None = 1e-08,
    gtol: float | None = 1e-08,
    x_scale: Any = None,
    loss: str = "linear",
    f_scale: float = 1.0,
    diff_step: Any = None,
    tr_solver: str | None = None,
    tr_options: dict | None = None,
    jac_sparsity: Any = None,
    max_nfev: int | None = None,
    verbose: int = 0,
    args: Any = (),
    kwargs: dict | None = None,
    callback: Callable[..., Any] | None = None,
    workers: Any = None,
    *,
    on_failure: str = "raise",
    implicit_solve: str | Callable[..., Any] = "auto",
    implicit_tol: float = 1e-10,
) -> _Result:
    """Minimize `0.5 * sum(rho(fun(x, *args)**2))` with SciPy's `least_squares`; `res.x` is
    differentiable with respect to `args` (the optimality condition is the gradient of the
    cost, whose Jacobian includes the residuals' second derivatives). fgrad gives the exact
    `jac` (forward mode) when `jac` is left at a finite-difference scheme ("2-point",
    "3-point", "cs"). Keywords as for `minimize`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.optimize import least_squares
    >>> t = np.linspace(0.0, 1.0, 5)
    >>> def rate(y):  # fit exp(-k t) to the data y
    ...     return least_squares(lambda k, y: fnp.exp(-k * t) - y, np.ones(1), args=(y,),
    ...                          gtol=1e-14, ftol=1e-14, xtol=1e-14).x[0]
    >>> y = np.exp(-2.0 * t)
    >>> round(float(rate(y)), 10), fgrad.grad(rate)(y).shape
    (2.0, (5,))
    """
    who = "least_squares"
    kwargs = {} if kwargs is None else dict(kwargs)
    with_kwargs = functools.partial(_with_kwargs, fun, kwargs)
    p = _Problem(who, with_kwargs, x0, args, on_failure, implicit_solve, implicit_tol)
    bounds = _read_bounds(p, bounds)
    own_jac = jac in ("2-point", "3-point", "cs")

    def residuals(x, params):
        return fnp.reshape(p.call(x, params), (-1,))

    _loss(who, loss, f_scale)  # (a loss fgrad cannot differentiate is refused first)
    # the robust loss, written in fgrad operations, is differentiable in f_scale: a parameter
    scale_of = p.parameter(f_scale)

    def cost(x, params):
        rho = _loss(who, loss, scale_of(params))
        return 0.5 * fnp.sum(rho(residuals(x, params) ** 2))

    def scipy_solve(params):
        # SciPy's keywords as given; x_scale, callback and workers only when given
        common = dict(bounds=bounds, method=method, ftol=ftol, xtol=xtol, gtol=gtol, loss=loss)
        common.update(f_scale=core.primal(scale_of(params)), diff_step=diff_step)
        common.update(tr_solver=tr_solver)
        common.update(jac_sparsity=jac_sparsity, max_nfev=max_nfev, verbose=verbose)
        common["tr_options"] = {} if tr_options is None else tr_options
        given = {"x_scale": x_scale, "callback": callback, "workers": workers}
        common.update({k: v for k, v in given.items() if v is not None})
        f = p.plain(functools.partial(residuals, params=params))
        j = (
            _jac_plain(functools.partial(residuals, params=params))
            if own_jac
            else _plain_callable(jac)
        )
        res = _so.least_squares(
            f, p.start(params), j, args=_plain_args(p, params), kwargs=kwargs, **common
        )
        p.check(bool(res.status > 0), res.message)
        if p.differentiated:
            # SciPy's active_mask, and where TRF, an interior method, stops short of an
            # active bound (1.96e-3 inside for residuals 1e-3 (x - a), active_mask 0), as
            # minimize finds it: the Newton step of the cost reaches the bound
            x = _np.asarray(res.x, dtype=_np.float64)
            lo, hi = _bound_arrays(bounds, x.shape, pairs=False)
            objective = functools.partial(cost, params=params)
            active = _active_bounds(x, lo, hi, objective, p.tangent_solve(True))
            _refuse_bounds(who, active | (res.active_mask != 0))
        return _np.asarray(res.x, dtype=_np.float64), res

    def condition(x, params):
        return _grad(lambda y: cost(y, params))(x)

    return p.solved(condition, scipy_solve, True, fun=residuals, cost=cost)


def _with_kwargs(fun, kwargs, x, *args):
    return fun(x, *args, **kwargs)


def _loss(who, loss, f_scale):
    """SciPy's robust loss rho(z) of z = f**2, in fgrad operations, scaled by f_scale."""
    c2 = f_scale**2
    forms = {
        "linear": lambda z: z,
        "soft_l1": lambda z: c2 * 2 * ((1 + z / c2) ** 0.5 - 1),
        "huber": lambda z: c2 * fnp.where(z / c2 <= 1, z / c2, 2 * (z / c2) ** 0.5 - 1),
        "cauchy": lambda z: c2 * fnp.log1p(z / c2),
        "arctan": lambda z: c2 * fnp.arctan(z / c2),
    }
    if loss not in forms:
        raise ValueError(
            f"{who}: loss {loss!r} is not one fgrad can differentiate; use one of "
            f"{', '.join(map(repr, forms))}"
        )
    return forms[loss]


def fixed_point(
    func: Callable[..., Any],
    x0: Any,
    args: Any = (),
    xtol: float = 1e-08,
    maxiter: int = 500,
    method: str = "del2",
    *,
    on_failure: str = "raise",
    implicit_solve: str | Callable[..., Any] = "auto",
    implicit_tol: float = 1e-10,
) -> Any:
    """A fixed point `x = func(x, *args)`, with SciPy's `fixed_point` (which raises
    RuntimeError when it does not converge); differentiable with respect to `args` through
    the condition func(x) - x = 0. x0 may have any shape.

    SciPy stops when successive iterates agree to `xtol`, which a slow map (x - 1e-9 (x**3 -
    a), a damped iteration) does after one step, far from its fixed point. So when the
    solution is differentiated, the Newton step of func(x) - x from x (its distance to the
    fixed point) must be within max(xtol, 1e-6) relative, as `root` checks its roots; else
    `on_failure` ("raise", or "warn") applies. Keywords as for `minimize`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.optimize import fixed_point
    >>> fp = lambda a: fixed_point(lambda x, a: fnp.cos(a * x), 0.5, args=(a,), xtol=1e-14)
    >>> x = fp(1.0)  # x = cos(x): dx/da = -x sin(x) / (1 + sin(x))
    >>> bool(abs(fgrad.grad(fp)(1.0) + x * np.sin(x) / (1 + np.sin(x))) < 1e-9)
    True
    """
    who = "fixed_point"
    p = _Problem(who, func, x0, args, on_failure, implicit_solve, implicit_tol, flat=False)

    def condition(x, params):
        return p.call(x, params) - x

    def scipy_solve(params):
        f = p.plain(lambda x: p.call(x, params))
        x = _np.asarray(_so.fixed_point(f, p.start(params), (), xtol, maxiter, method), _np.float64)
        if p.differentiated:
            step = _newton_step(functools.partial(condition, params=params), x, p)
            largest = float(_np.max(_np.abs(x), initial=0.0))
            ok = step <= max(xtol, _ROOT_STEP_TOL) * (1 + largest)
            p.check(ok, f"a Newton step of {step:.3g} from x to a fixed point, xtol={xtol}")
        return x, OptimizeResult()  # (SciPy's fixed_point gives x alone)

    if not live_levels_of(p.params):
        return scipy_solve(p.params)[0]
    return p.solve(condition, scipy_solve, symmetric=False)[0]


# --- scalar roots ---------------------------------------------------------------------------------


def root_scalar(
    f: Callable[..., Any],
    args: Any = (),
    method: str | None = None,
    bracket: Any = None,
    fprime: Any = None,
    fprime2: Any = None,
    x0: Any = None,
    x1: Any = None,
    xtol: float | None = None,
    rtol: float | None = None,
    maxiter: int | None = None,
    options: dict | None = None,
    *,
    on_failure: str = "raise",
) -> Any:
    """A root of the scalar function `f(x, *args)`, with SciPy's `root_scalar`; `res.root` is
    differentiable with respect to `args` (dx = -f_args / f_x). fgrad gives `fprime` (and
    `fprime2` for Halley's method) when the method needs them and they are not given.

    >>> import fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.optimize import root_scalar
    >>> cbrt = lambda a: root_scalar(lambda x, a: x**3 - a, args=(a,), x0=1.0, xtol=1e-14).root
    >>> round(float(cbrt(8.0)), 12), round(float(fgrad.grad(cbrt)(8.0)), 12)  # 1 / (3 x**2)
    (2.0, 0.083333333333)
    """
    who = "root_scalar"
    start = x0 if x0 is not None else (0.0 if bracket is None else core.primal(bracket[0]))
    p = _Problem(who, f, start, args, on_failure, "direct", 0.0, flat=False)
    if p.shape != ():
        raise ValueError(f"{who}: x0 has {describe(p.x0)}; root_scalar finds a scalar root")
    chosen = method
    if chosen is None and bracket is None and fprime is None and x0 is not None and x1 is None:
        chosen = "newton"  # SciPy would need fprime: fgrad gives it
    # fprime=True (fprime2=True): f returns (f, f') ((f, f', f'')), which SciPy reads
    returns_derivatives = any(d is not None and not callable(d) and d for d in (fprime, fprime2))
    need_fprime = chosen in ("newton", "halley") and fprime is None and not returns_derivatives
    need_fprime2 = chosen == "halley" and fprime2 is None

    def scalar(x, params):
        out = p.call(x, params)
        return out[0] if returns_derivatives else out

    def scipy_solve(params):
        plain = _plain_args(p, params)
        if returns_derivatives:
            g: Any = functools.partial(_scalars_plain, lambda x: p.call(x, params))
        else:
            g = functools.partial(_scalar_plain, lambda x: scalar(x, params))
        kw = dict(
            method=chosen,
            bracket=None if bracket is None else [float(core.primal(b)) for b in bracket],
            fprime=_plain_callable(fprime),
            fprime2=_plain_callable(fprime2),
            x0=None if x0 is None else float(core.primal(params[0] if p.x0_param else x0)),
            x1=None if x1 is None else float(core.primal(x1)),
            xtol=xtol,
            rtol=rtol,
            maxiter=maxiter,
            options=options,
        )
        if need_fprime:
            kw["fprime"] = functools.partial(
                _scalar_plain, _grad(functools.partial(scalar, params=params))
            )
        if need_fprime2:
            kw["fprime2"] = functools.partial(
                _scalar_plain, _grad(_grad(functools.partial(scalar, params=params)))
            )
        res = _so.root_scalar(g, args=plain, **kw)
        p.check(bool(res.converged), res.flag)
        return _np.float64(res.root), res

    if not live_levels_of(p.params):
        return scipy_solve(p.params)[1]
    x, res = p.solve(scalar, scipy_solve, symmetric=True)
    res.root = x
    return res


def _scalar_plain(fn, x, *_):
    return float(core.primal(fn(_np.float64(x))))


def _scalars_plain(fn, x, *_):
    """For an f that returns (f, f') or (f, f', f''), as root_scalar's fprime=True asks."""
    return tuple(float(core.primal(v)) for v in fn(_np.float64(x)))


def brentq(
    f: Callable[..., Any],
    a: float,
    b: float,
    args: Any = (),
    xtol: float = 2e-12,
    rtol: float = 4 * _np.finfo(float).eps,
    maxiter: int = 100,
    full_output: bool = False,
    disp: bool = True,
    *,
    on_failure: str = "raise",
) -> Any:
    """A root of the scalar `f(x, *args)` in the bracket [a, b], with SciPy's `brentq`;
    differentiable with respect to `args` (the bracket only locates the root: no derivative
    flows to `a` and `b`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.optimize import brentq
    >>> r = lambda c: brentq(lambda x, c: fnp.exp(x) - c, -5.0, 5.0, args=(c,))
    >>> round(float(r(2.0)), 12), round(float(fgrad.grad(r)(2.0)), 12)  # log c, 1 / c
    (0.69314718056, 0.5)
    """
    who = "brentq"
    p = _Problem(who, f, core.primal(a), args, on_failure, "direct", 0.0, flat=False)
    lo, hi = float(core.primal(a)), float(core.primal(b))

    def scalar(x, params):
        return p.call(x, params)

    def scipy_solve(params):
        g = functools.partial(_scalar_plain, lambda x: scalar(x, params))
        x, r = _so.brentq(g, lo, hi, (), xtol, rtol, maxiter, True, disp)
        p.check(bool(r.converged), r.flag)
        return _np.float64(x), r

    if not live_levels_of(p.params):
        x, res = scipy_solve(p.params)
    else:
        x, res = p.solve(scalar, scipy_solve, symmetric=True)
        res.root = x
    return (x, res) if full_output else x
