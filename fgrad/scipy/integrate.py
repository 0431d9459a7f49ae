"""`fgrad.scipy.integrate`: `odeint`, SciPy's ODE solver, differentiable to every order; and
SciPy's integrators of sampled data and fixed-order quadrature (`trapezoid`,
`cumulative_trapezoid`, `simpson`, `fixed_quad`: `fgrad.scipy._quadrature`).

The value is computed by `scipy.integrate.odeint` (LSODA) on plain values. For a small system
(the state and its derivatives by `y0` and `args` together at most
`FORWARD_SENSITIVITIES_MAX` = 64 numbers), the reverse rule integrates the forward sensitivity
equations, y' = f(y, t, args) with S' = df/dy S + df/dargs for S = dy/d(y0, args), in one
solve over all the time points, and contracts the output's cotangent with S(t[i]). For a
larger one it is the adjoint method, as in JAX's `odeint`, whose cost does not grow with the
number of parameters but which restarts the solver at every time point: from the last time
point back to the first, it integrates the augmented system::

    y' = f(y, t, *args),   a' = -a . df/dy,   b' = -a . df/dargs

backward in time from `y(t[i])`, adding the output's cotangent to `a = dL/dy` at each time
point; the cotangent of `y0` is `a(t[0])`, that of `args` is `b(t[0])`, and that of the time
points is `ct[i] . f(y[i], t[i])` for i > 0 and `-a(t[0]) . f(y0, t[0])` for `t[0]`. The
products with the Jacobians of `f` are `fgrad.vjp` of `f`, and the backward integration is a
call of this same differentiable solver on the augmented dynamics, so the reverse rule is
itself differentiated by the adjoint method again: every order works, in both modes
(forward mode transposes the reverse rule, through `fgrad.custom_vjp`).

Taylor mode (`fgrad.jet`) solves one more system: the normalized Taylor coefficients y_k of
the solution in the path parameter satisfy y_k' = [f(y, t, args)]_k, the k-th coefficient of
f pushed through a Taylor level, so all orders come from one solve (transposing the adjoint
order by order would cost about tenfold per order).

Imports: `fgrad.core`, `fgrad.batching` (declaring the solve row by row), `fgrad.taylor`,
`fgrad.primitive`, `fgrad.tree_util`, `fgrad.numpy`, `fgrad.api` (`vjp`, `jvp`),
`fgrad.vmapping` (`vmap`, for the sensitivities), `fgrad.custom` (`custom_vjp`),
`fgrad.jitting` (`jit`, replaying the right-hand side), `fgrad.scipy._quadrature`,
`fgrad.scipy._failure` (`on_failure`), and `scipy.integrate` for values.
"""

from __future__ import annotations

import functools
import warnings as _warnings
from typing import TYPE_CHECKING

import numpy as _np
import scipy.integrate as _si

from .. import numpy as fnp, taylor as _taylor
from ..api import jvp, vjp
from ..core import (
    Box,
    constant_of,
    dtype_of,
    holds_batch,
    innermost,
    live_levels_of,
    primal,
    refuse_lazy,
    shape_of,
    zeros_like_value,
)
from ..custom import custom_vjp
from ..jitting import jit
from ..numpy._mirror import missing_names
from ..numpy.shaping import describe, read_constant
from ..primitive import nondiff, register_rules
from ..tree_util import LEAF, tree_flatten, tree_map, tree_unflatten
from ..vmapping import vmap
from ._closures import check_closure, check_reads
from ._failure import check_on_failure, report_failure
from ._quadrature import cumulative_trapezoid, fixed_quad, quad, simpson, trapezoid

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..typing import Array, ArrayLike

__all__ = ["cumulative_trapezoid", "fixed_quad", "odeint", "quad", "simpson", "trapezoid"]

if not TYPE_CHECKING:  # a name of scipy.integrate not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.integrate", page=__name__)


def odeint(
    func: Callable[..., Any],
    y0: ArrayLike,
    t: ArrayLike,
    args: tuple[Any, ...] = (),
    Dfun: Callable[..., Any] | None = None,
    col_deriv: int = 0,
    full_output: int = 0,
    ml: int | None = None,
    mu: int | None = None,
    rtol: ArrayLike | None = None,
    atol: ArrayLike | None = None,
    tcrit: ArrayLike | None = None,
    h0: float = 0.0,
    hmax: float = 0.0,
    hmin: float = 0.0,
    ixpr: int = 0,
    mxstep: int = 0,
    mxhnil: int = 0,
    mxordn: int = 12,
    mxords: int = 5,
    printmessg: int = 0,
    tfirst: bool = False,
    *,
    on_failure: str = "raise",
) -> Array | tuple[Array, dict[str, Any]]:
    """Integrate `dy/dt = func(y, t, *args)` from `y(t[0]) = y0`; SciPy's `odeint`, with
    gradients with respect to `y0`, the time points `t` and `args`, to every order, in both
    modes (by forward sensitivities for small systems, by the adjoint method for larger ones;
    see the module docstring).

    Write `func` in `fgrad.numpy` operations. `y0` may be a 1-D array (SciPy's state vector),
    a scalar, or, beyond SciPy, an array of any shape or a pytree of arrays (then `func` gets
    and returns that structure); the result has, for each leaf, shape `(len(t),) +
    leaf.shape` and the leaf's dtype. A scalar `y0` is a state of one element, as in SciPy:
    `func` gets it as an array of shape `(1,)` and the result has shape `(len(t), 1)`
    (scalar leaves of a pytree stay scalars). The entries of `args` may be
    arrays, scalars or pytrees of arrays; their float leaves are differentiated, other leaves
    (ints, strings, ...) are passed through as constants. A value being differentiated must
    be passed in `y0`, `t` or `args`: `func` may not close over one (a TypeError says so).

    The value uses SciPy's defaults (`rtol`, `atol` of about 1.5e-8); gradients are accurate
    to about the solver's tolerance, so pass tight tolerances (e.g. `rtol=atol=1e-10`) when
    derivatives matter. The solves of the derivative use `rtol`, `atol`, `mxstep`, `hmax`,
    `hmin`, `mxordn` and `mxords`, and `tcrit`: the sensitivities' solve does not step past
    it, and with it each of the adjoint's backward solves stops at its time point, not past
    it; `Dfun` (with `col_deriv`, `ml`, `mu`), `h0`, `ixpr`, `mxhnil` and `printmessg` apply
    to the forward solve only. Like every adjoint method, the
    adjoint's backward solve integrates `y` backward in time again: a system that is very
    unstable backward (strongly damped) may need tight tolerances for accurate gradients.
    `full_output` is not supported (call `scipy.integrate.odeint` for SciPy's diagnostics).

    A solve that stops early (LSODA's "Excess work done", too small tolerances, ...) returns
    values that are wrong from where it stopped, with only SciPy's `ODEintWarning`. When the
    solution is differentiated, such a failure of the solve or of a backward solve of the
    derivative raises `RuntimeError`, or with `on_failure="warn"` warns (`RuntimeWarning`)
    and goes on, as `fgrad.scipy.optimize`'s solvers do; when nothing is differentiated, the
    result is SciPy's, with SciPy's warning.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.integrate import odeint
    >>> decay = lambda y, t, k: -k * y
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> y = lambda y0, k: odeint(decay, y0, t, (k,), rtol=1e-10, atol=1e-10)[-1, 0]
    >>> round(float(y(1.0, 0.5)), 8), round(float(np.exp(-1.0)), 8)
    (0.36787944, 0.36787944)
    >>> g = fgrad.grad(y, argnums=1)(1.0, 0.5)   # d/dk exp(-2k) = -2 exp(-2k)
    >>> bool(abs(g + 2 * np.exp(-1.0)) < 1e-7)
    True
    """
    check_on_failure("odeint", on_failure)
    if not callable(func):
        raise TypeError(
            f"odeint: func must be a function func(y, t, *args), got {func!r} of type "
            f"{type(func).__name__}"
        )
    _refuse_jax_style_args(
        dict(Dfun=Dfun, col_deriv=col_deriv, full_output=full_output, ml=ml, mu=mu)
    )
    if full_output:
        raise ValueError(
            "odeint: full_output=True is not supported by fgrad.scipy.integrate.odeint (it "
            "returns the solution only); call scipy.integrate.odeint for SciPy's diagnostics"
        )
    if isinstance(args, list):
        # SciPy refuses it ("Extra arguments must be in a tuple."); read as one argument, it
        # would fail later inside func with a message about something else
        raise TypeError(
            f'odeint: args must be a tuple, as in SciPy ("Extra arguments must be in a '
            f'tuple."), got a list of {len(args)}: pass args=tuple(...) for func(y, t, '
            "*args), or args=(the_list,) for one argument that is a list"
        )
    if not isinstance(args, tuple):
        args = (args,)
    instead = "Pass it in args instead: odeint(func, y0, t, args=(value,)) with func(y, t, value)"
    check_closure(func, "odeint", instead)

    if isinstance(y0, (list, tuple)) and all(shape_of(v) == () for v in tree_flatten(y0)[0]):
        y0 = fnp.asarray(y0)  # a list of numbers is an array, as SciPy reads it
    if tree_flatten(y0)[1] is LEAF and shape_of(y0) == ():
        y0 = fnp.reshape(y0, (1,))  # a scalar is a state of one element, as SciPy reads it
    y0_leaves, y_tree = tree_flatten(y0)
    if not y0_leaves:
        raise ValueError(
            "odeint: y0 has no arrays; pass the initial state as an array or a pytree of arrays"
        )
    y0_leaves = [_as_float(v, f"y0 (leaf {k})") for k, v in enumerate(y0_leaves)]
    y0 = tree_unflatten(y_tree, y0_leaves)
    t = _as_times(t)

    # Float leaves of args are differentiated; the others are constants, kept in the rhs.
    arg_leaves, arg_tree = tree_flatten(args)
    diff_pos, diff_vals, static = [], [], list(arg_leaves)
    for k, v in enumerate(arg_leaves):
        if (type(v) is Box and dtype_of(v).kind == "f") or (
            isinstance(v, float)
            or (isinstance(v, (_np.ndarray, _np.generic)) and _np.issubdtype(v.dtype, _np.floating))
        ):
            diff_pos.append(k)
            diff_vals.append(_np.float64(v) if type(v) is float else v)
        elif type(v) is Box:  # a constant (an int, a `jit` argument: its value, guarded)
            static[k] = read_constant(
                v,
                "odeint",
                f"args (leaf {k})",
                "only real float arguments are differentiated (split a complex one into its "
                "real and imaginary parts)",
            )

    rhs = _Rhs(func, tfirst, arg_tree, static, diff_pos, y_tree, [shape_of(v) for v in y0_leaves])
    # a value read through a bound method's self or a callable object's attribute escapes
    # check_closure: one run of func at the start sees every value it reads
    y0_constant = tree_unflatten(y_tree, [constant_of(v) for v in y0_leaves])
    diff_constants = [constant_of(v) for v in diff_vals]
    check_reads(lambda: rhs(y0_constant, constant_of(t)[0], *diff_constants), "odeint", instead)
    forward: dict[str, Any] = dict(
        rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax, hmin=hmin, mxordn=mxordn, mxords=mxords
    )
    backward = dict(forward)
    for key in ("rtol", "atol"):  # the augmented state has another size: one tolerance
        if backward[key] is not None and _np.ndim(backward[key]) > 0:
            backward[key] = float(_np.min(backward[key]))
    if Dfun is not None and (y_tree is not LEAF or len(shape_of(y0_leaves[0])) != 1):
        raise ValueError(
            "odeint: Dfun needs y0 to be a 1-D array (SciPy's state vector), got "
            f"{describe(y0) if y_tree is LEAF else 'a pytree'}; leave Dfun out (LSODA "
            "estimates the Jacobian) or pass y0 as a 1-D array"
        )
    forward.update(
        Dfun=None if Dfun is None else _Dfun(Dfun, tfirst, rhs),
        col_deriv=col_deriv,
        ml=ml,
        mu=mu,
        tcrit=tcrit,
        h0=h0,
        ixpr=ixpr,
        mxhnil=mxhnil,
        printmessg=printmessg,
    )
    # (a value only a jit or a vmap holds is plain: its directions would widen the system of
    # sensitivities, on which LSODA controls its error, and change the derivative's steps)
    plain = (not _differentiated([*y0_leaves, t]),) + tuple(
        not _differentiated([v]) for v in diff_vals
    )
    opts = _Options(forward, backward, plain, on_failure=on_failure)
    return _solve(rhs, opts, y0, t, *diff_vals)


def _differentiated(leaves):
    """Whether a transform that differentiates holds one of `leaves`: levels that read values
    (`jit`'s staging, `vmap`'s batching) compute with them but take no derivative."""
    return any(not lv.reads_values for lv in live_levels_of(leaves))


def _refuse_jax_style_args(scipy_params):
    """JAX's `odeint(func, y0, t, *args)` takes func's extra arguments after `t`; SciPy's (and
    so fgrad's) takes them as one tuple, `args`, and gives the next positional places to
    `Dfun`, `col_deriv`, `full_output`, `ml` and `mu`. A value that cannot be one of those (an
    array or a float where `Dfun`, a callable, or a flag or band width, an integer, belongs) is
    an extra argument written the JAX way: say how to pass it rather than fail later inside
    SciPy or `func` with a message about something else."""
    for place, (name, value) in zip(("5th", "6th", "7th", "8th", "9th"), scipy_params.items()):
        if name == "Dfun":
            wrong, expected = value is not None and not callable(value), "a function or None"
        else:
            integer = isinstance(value, (bool, int, _np.bool_, _np.integer))
            wrong = not integer and not (value is None and name in ("ml", "mu"))
            expected = "an integer"
        if wrong:
            if type(value) is Box:
                got = f"a traced value with {describe(value)}"
            elif _np.ndim(value):
                got = f"an array with {describe(value)}"
            else:
                got = f"the {type(value).__name__} {value!r}"
            raise TypeError(
                f"odeint: the {place} positional argument is SciPy's {name}, which must be "
                f"{expected}; got {got}. fgrad's odeint follows SciPy's signature "
                "odeint(func, y0, t, args=(...), ...): pass func's extra arguments as one "
                "tuple, odeint(func, y0, t, args=(a, b)), not after t as in JAX's "
                "odeint(func, y0, t, a, b)"
            )


# --- the function of the state that the solver integrates -----------------------------------------


class _Rhs:
    """The user's `func` as `rhs(y, t, *diff_args)`: SciPy's argument order, constant
    arguments put back in place, and the derivative returned with the structure of `y`."""

    def __init__(self, func, tfirst, arg_tree, static, diff_pos, y_tree, y_shapes):
        self.func, self.tfirst = func, tfirst
        self.arg_tree, self.static, self.diff_pos = arg_tree, static, diff_pos
        self.y_tree, self.y_shapes = y_tree, y_shapes

    def __call__(self, y, t, *diff_args):
        leaves = list(self.static)
        for k, v in zip(self.diff_pos, diff_args):
            leaves[k] = v
        args = tree_unflatten(self.arg_tree, leaves)
        out = self.func(t, y, *args) if self.tfirst else self.func(y, t, *args)
        if self.y_tree is LEAF and isinstance(out, (list, tuple)):
            out = fnp.asarray(out)  # a list of derivatives, as SciPy accepts for a 1-D state
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != self.y_tree:
            raise ValueError(
                f"odeint: func returned {out_tree}, but the state y has structure "
                f"{self.y_tree}; return dy/dt with the structure of y"
            )
        fixed = []
        for k, (o, shape) in enumerate(zip(out_leaves, self.y_shapes)):
            dtype = getattr(innermost(o), "dtype", None)  # (arrays: without dtype_of's call)
            if dtype is None or dtype.kind not in "biufc":
                dtype = _rhs_dtype(o, k, shape)
            if dtype.kind == "c":
                # SciPy refuses it too (it cannot cast complex128 to float64): dropping the
                # imaginary part would integrate another equation
                raise TypeError(
                    f"odeint: func returned dy/dt with {describe(o)} (leaf {k}); odeint "
                    "integrates real states, as SciPy's does: write the complex equation as "
                    "two real ones, for its real and imaginary parts"
                )
            o_shape = shape_of(o)
            if o_shape != shape:
                if int(_np.prod(o_shape)) != int(_np.prod(shape)):
                    raise ValueError(
                        f"odeint: func returned dy/dt of shape {o_shape} (leaf {k}), but the "
                        f"state has shape {shape}; return an array shaped like y"
                    )
                o = fnp.reshape(o, shape)
            fixed.append(o)
        return tree_unflatten(self.y_tree, fixed)


def _rhs_dtype(o, k, shape):
    """The dtype of leaf k of what func returned, a Python number (which has none), or a
    TypeError for anything else: NumPy reads a str as a dtype's name ("float64"), and SciPy
    would fail on it later with no word of func."""
    if isinstance(innermost(o), (bool, int, float, complex)):
        return dtype_of(o)
    what = describe(o) if hasattr(innermost(o), "dtype") else f"type {type(o).__name__}"
    raise TypeError(
        f"odeint: func returned a value of {what} as dy/dt (leaf {k}); it must return the "
        f"derivative of the state as numbers: a float array of y's shape {shape}"
    )


class _Dfun:
    """SciPy's Dfun with the constant and differentiated arguments of the call."""

    def __init__(self, dfun, tfirst, rhs):
        self.dfun, self.tfirst, self.rhs = dfun, tfirst, rhs

    def bind(self, diff_args):
        leaves = list(self.rhs.static)
        for k, v in zip(self.rhs.diff_pos, diff_args):
            leaves[k] = v
        args = tree_unflatten(self.rhs.arg_tree, leaves)
        if self.tfirst:  # SciPy calls the bound Dfun as Dfun(y, t): tfirst is fgrad's
            return lambda y, t: self.dfun(t, y, *args)
        return lambda y, t: self.dfun(y, t, *args)


class _Options:
    """Solver options: those of the forward solve and those of the backward (adjoint) solves,
    and which inputs were plain values at the call (`plain`: y0 and t together, then each
    differentiable argument). A plain value is differentiated by no transform, so the reverse
    rule by sensitivities leaves out its directions (their cotangents are never read).

    `checked`: a solve whose result a derivative uses (the forward solve under a
    differentiating transform, every backward solve), whose failure must not pass with only
    SciPy's warning: it raises, or warns with `on_failure="warn"` (`_lsoda_impl`)."""

    def __init__(self, forward, backward, plain=None, *, on_failure="raise", checked=False):
        self.forward, self.backward, self.plain = forward, backward, plain
        self.on_failure, self.checked = on_failure, checked

    def for_adjoint(self):
        """For the adjoint's solves, backward from t[i] to t[i-1]. With the user's `tcrit`
        (a function not to be evaluated past some time), each stops exactly at t[i-1]
        instead of stepping past it and interpolating (`_lsoda_impl`): t[0] may be where the
        function starts to be defined, as tcrit is where it stops."""
        stop = dict(self.backward, tcrit=_END) if self.forward.get("tcrit") is not None else None
        solve = stop or self.backward
        return _Options(solve, solve, on_failure=self.on_failure, checked=True)

    def for_sensitivities(self):
        """For the solve of the sensitivities, forward over the same time points as the
        solution's: the backward options and the user's `tcrit`, which the solve must not
        step past either (a function undefined past it gave a nan derivative)."""
        solve = dict(self.backward, tcrit=self.forward.get("tcrit"))
        return _Options(solve, solve, on_failure=self.on_failure, checked=True)

    def checking(self):
        """These options, for a solve whose result is differentiated."""
        if self.checked:
            return self
        return _Options(
            self.forward, self.backward, self.plain, on_failure=self.on_failure, checked=True
        )


class _Augmented:
    """The adjoint system of `rhs`, integrated backward in time: the state is (y, a, b) with
    a = dL/dy(t) and b the cotangent of the arguments gathered from t to the later times."""

    def __init__(self, rhs):
        self.rhs = rhs

    def __call__(self, state, t, *args):
        y, a, _ = state
        y_dot, pull = vjp(self.rhs, y, t, *args)
        cts = pull(tree_map(_like, a, y_dot))
        neg = functools.partial(tree_map, fnp.negative)
        return (y_dot, neg(cts[0]), neg(tuple(cts[2:])))


def _like(a, ref):
    """a with the dtype of ref (a cotangent must match its output's dtype)."""
    if dtype_of(a) != dtype_of(ref):
        return fnp.astype(a, dtype_of(ref))
    return a


# --- the solve, with its adjoint rule -------------------------------------------------------------


def _lsoda_impl(*values, n_leaves, tree, rhs, opts):
    """SciPy's LSODA on plain values: the state's leaves, the time points, then the arguments;
    the solution as one float64 array (time points, the leaves' entries one after another)."""
    leaves, t, args = values[:n_leaves], values[n_leaves], values[n_leaves + 1 :]
    shapes = tuple(_np.shape(v) for v in leaves)
    y0 = (
        _np.concatenate([_np.ravel(_np.asarray(primal(v), dtype=_np.float64)) for v in leaves])
        if leaves
        else _np.zeros(0)
    )
    replayed = _replayed(rhs, tree, shapes)
    f: Any = None

    def first(y, s):
        # The first step records `rhs` on these values (jit); every later one replays the
        # record by a call that looks its signature up no more.
        nonlocal f
        out = replayed(y, s, *args)
        f = replayed.with_signature_of(y, s, *args)
        return out

    def step(y, s):
        out = first(y, s) if f is None else f(y, s, *args)
        return out if type(out) is _np.ndarray else _np.asarray(primal(out), dtype=_np.float64)

    opts_ = dict(opts.forward)
    if opts_.get("tcrit") is _END:
        opts_["tcrit"] = _np.asarray(t, dtype=_np.float64)[-1:]
    if opts_.get("Dfun") is not None:
        opts_["Dfun"] = opts_["Dfun"].bind(args)
    times = _np.asarray(t, dtype=_np.float64)
    if not opts.checked:
        return _si.odeint(step, y0, times, **opts_)
    with _warnings.catch_warnings(record=True) as seen:
        _warnings.simplefilter("always")
        sol, info = _si.odeint(step, y0, times, full_output=True, **opts_)
    if info["message"] in _SUCCESS:
        for w in seen:  # the warnings of a successful solve (printmessg), as they were
            _warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return sol
    text = (
        f"odeint: a solve {'for the derivative ' if _is_derived(rhs) else ''}stopped early "
        f"({info['message'].rstrip('.')}): the solution is wrong from where it stopped, and "
        "so would be its derivative. Raise mxstep (LSODA's steps per time point, 500 by "
        "default) or loosen rtol and atol, or pass on_failure='warn' to get the result with a "
        "warning"
    )
    report_failure(text, opts.on_failure, stacklevel=2)
    return sol


# The `tcrit` of a solve that must not step past its last time point (`_Options.for_adjoint`)
_END = "the last time point"

# LSODA's messages for a solve that finished (SciPy's odeint, istate 2 and 1)
_SUCCESS = ("Integration successful.", "Nothing was done; the integration time was 0.")


def _is_derived(rhs):
    """Whether `rhs` is a system of the derivative (adjoint, sensitivities, Taylor
    coefficients) rather than the user's."""
    return not isinstance(rhs, _Rhs)


def _replayed(rhs, tree, shapes):
    """`rhs` as a function of the state vector (SciPy's: the leaves' entries one after
    another, in float64), the time and the arguments, returning the derivative as such a
    vector, under `jit`, kept on `rhs`: the solver calls it at every step with values of the
    same shapes, so it is recorded at the first step and replayed at the others (for the
    adjoint system, the whole vector-Jacobian product of the user's function is one recorded
    program; the state's split into leaves and the derivative's join are in the record too).
    A replay computes exactly what a call would."""
    cache = rhs.__dict__.setdefault("replayed", {})
    found = cache.get((tree, shapes))
    if found is None:
        found = cache[(tree, shapes)] = jit(_VectorRhs(rhs, tree, shapes))
        # A user's function that branches on many values just runs eagerly: the user did not
        # ask for jit, so jit's warnings (which suggest changing the jitted call) stay silent.
        found._warned = True
    return found


class _VectorRhs:
    """`rhs` of the state vector, the time and the arguments, returning the derivative as a
    vector (see `_replayed`). An object rather than a closure: `jit` checks a function's
    closure cells at every call (a rebound one records again), and these never change."""

    def __init__(self, rhs, tree, shapes):
        self.rhs, self.tree = rhs, tree
        self.__name__ = getattr(rhs, "__name__", "odeint's right-hand side")
        sizes = [int(_np.prod(s)) for s in shapes]
        bounds = _np.cumsum([0, *sizes]).tolist()
        # each leaf's part of the state vector: its index for a scalar, else (slice, shape)
        self.parts = [
            (slice(lo, hi), shape) if shape else lo
            for lo, hi, shape in zip(bounds[:-1], bounds[1:], shapes)
        ]

    def __call__(self, vec, t, *args):
        leaves = [vec[p] if type(p) is int else fnp.reshape(vec[p[0]], p[1]) for p in self.parts]
        out = self.rhs(tree_unflatten(self.tree, leaves), t, *args)
        flat = [fnp.ravel(fnp.asarray(o, dtype=_np.float64)) for o in tree_flatten(out)[0]]
        if not flat:
            return _np.zeros(0)
        return flat[0] if len(flat) == 1 else fnp.concatenate(flat)


# The solve has no derivative of its own: `_solve`'s adjoint rule gives it.
_lsoda_p = nondiff(_lsoda_impl, name="odeint")
register_rules(
    _lsoda_p,
    row_by_row=(
        "LSODA picks its steps by the error of the whole state: one run over all rows at once "
        "would give each row values that depend on the other rows (they differ from the row's own "
        "run by up to the solver's tolerance, 4e-10 relative at rtol=atol=1e-10 on the table's "
        "Lotka-Volterra rows), and rows with different time points would need a change of time "
        "variable; so each row is its own solve"
    ),
)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1))
def _solve(rhs, opts, y0, t, *args):
    """The solution at the time points (SciPy's LSODA); under `vmap`, one solve per row."""
    leaves, tree = tree_flatten(y0)
    sol = _lsoda_p(*leaves, t, *args, n_leaves=len(leaves), tree=tree, rhs=rhs, opts=opts)
    n = shape_of(t)[0]
    out, lo = [], 0
    for v in leaves:
        shape, dtype = shape_of(v), dtype_of(v)
        hi = lo + int(_np.prod(shape))
        if holds_batch(sol):
            out.append(fnp.astype(fnp.reshape(sol[:, lo:hi], (n,) + shape), dtype))
        else:
            out.append(_np.asarray(sol[:, lo:hi].reshape((n,) + shape), dtype=dtype))
        lo = hi
    return tree_unflatten(tree, out)


def _solve_fwd(rhs, opts, y0, t, *args):
    # the value a derivative is taken at: a failed solve raises (or warns)
    ys = _solve(rhs, opts.checking(), y0, t, *args)
    return ys, (ys, t, args)


def _solve_bwd(rhs, opts, res, ct):
    ys, t, args = res
    n = shape_of(t)[0]
    at = functools.partial(_at_time, ct)
    y_at = functools.partial(_at_time, ys)
    a = at(n - 1)
    if n == 1:
        return (a, None) + (None,) * len(args)
    y_sizes = [int(_np.prod(shape_of(v)[1:])) for v in tree_flatten(ys)[0]]
    plain = opts.plain or (False,) * (1 + len(args))  # directions nobody differentiates
    arg_sizes = [int(_np.prod(shape_of(v))) for v, fixed in zip(args, plain[1:]) if not fixed]
    width = (0 if plain[0] else sum(y_sizes)) + sum(arg_sizes)
    if sum(y_sizes) * (1 + width) <= FORWARD_SENSITIVITIES_MAX:
        return _sensitivity_bwd(rhs, opts, ys, t, args, ct)
    aug, adj_opts = _Augmented(rhs), opts.for_adjoint()
    b = tuple(tree_map(fnp.zeros_like, arg) for arg in args)
    t_cts = [None] * n
    for i in range(n - 1, 0, -1):
        y_i = y_at(i)
        # Moving t[i] moves where y is read: d/dt[i] = ct[i] . f(y[i], t[i]).
        t_cts[i] = _dot(rhs(y_i, t[i], *args), at(i))
        path = _solve(aug, adj_opts, (y_i, a, b), fnp.stack([t[i], t[i - 1]]), *args)
        _, a, b = tree_map(lambda v: v[1], path)
        if i == 1:
            # Moving t[0] moves the start of every later value: -a(t[0]) . f(y0, t[0]).
            t_cts[0] = -_dot(rhs(y_at(0), t[0], *args), a)
        a = tree_map(fnp.add, a, at(i - 1))
    return (a, fnp.stack(t_cts)) + b


# The largest sensitivity system (entries of y and of its derivatives by y0 and the arguments)
# that the reverse rule integrates forward instead of running the adjoint method: one solve over
# all time points, where the adjoint restarts the solver at every time point (on the pendulum
# of benchmarks/bench_jit.py, 101 time points: about 4,500 steps backward against about 300
# forward). LSODA estimates the Jacobian of a stiff system by differences, one evaluation per
# entry of the state, so large systems keep the adjoint method.
FORWARD_SENSITIVITIES_MAX = 64


class _Sensitivities:
    """The system of y and S = dy/d(y0, args), for P directions (each entry of y0, then each
    entry of the arguments): y' = f(y, t, args), S' = df/dy S + df/dargs D, where D holds the
    constant directions of the arguments (zero for the directions of y0). S is a batch of P
    tangents of y, each leaf of shape (P,) + leaf.shape; S' is `jvp` of f, mapped over them."""

    def __init__(self, rhs, arg_directions):
        self.rhs, self.arg_directions = rhs, arg_directions

    def __call__(self, state, t, *args):
        y, s = state

        def with_tangent(s_k, *d_k):
            return jvp(lambda y_, *a: self.rhs(y_, t, *a), (y, *args), (s_k, *d_k))

        # f itself does not depend on the direction: computed once, by the same `jvp`
        return vmap(with_tangent, out_axes=(None, 0))(s, *self.arg_directions)


def _sensitivity_bwd(rhs, opts, ys, t, args, ct):
    """The reverse rule by forward sensitivities: S(t_i) = dy(t_i)/d(y0, args) from one solve,
    then the cotangents are sums of ct[i] . S(t_i); the time points' as in the adjoint rule."""
    y_leaves, y_tree = tree_flatten(ys)
    n_y = len(y_leaves)
    # the directions of the plain inputs (opts.plain) have size 0: nothing to integrate
    plain = opts.plain or (False,) * (1 + len(args))
    sizes = [0 if plain[0] else int(_np.prod(shape_of(v)[1:])) for v in y_leaves]
    sizes += [0 if fixed else int(_np.prod(shape_of(v))) for v, fixed in zip(args, plain[1:])]
    width, ends = sum(sizes), _np.cumsum([0, *sizes])
    if width == 0:  # only plain inputs: no cotangent is read
        return (None, None) + (None,) * len(args)
    eye = _np.eye(width)

    def directions(k, shape, dtype):
        if sizes[k] == 0:
            return _np.zeros((width, *shape), dtype)
        return eye[:, ends[k] : ends[k + 1]].reshape((width, *shape)).astype(dtype)

    s0 = [directions(k, shape_of(v)[1:], dtype_of(v)) for k, v in enumerate(y_leaves)]
    arg_dirs = tuple(directions(n_y + m, shape_of(v), dtype_of(v)) for m, v in enumerate(args))
    y0 = _at_time(ys, 0)
    sens = _Sensitivities(rhs, arg_dirs)
    path = _solve(sens, opts.for_sensitivities(), (y0, tree_unflatten(y_tree, s0)), t, *args)
    s_path = tree_flatten(path[1])[0]
    ct_leaves = tree_flatten(ct)[0]
    n = shape_of(t)[0]
    # sum over the time points after t[0] and the entries of each leaf: one number per direction
    g = functools.reduce(
        fnp.add,
        [
            fnp.sum(
                fnp.reshape(s[1:], (n - 1, width, -1)) * fnp.reshape(c[1:], (n - 1, 1, -1)),
                axis=(0, 2),
            )
            for s, c in zip(s_path, ct_leaves)
        ],
    )
    g_args = tuple(
        None
        if sizes[n_y + m] == 0
        else fnp.reshape(g[ends[n_y + m] : ends[n_y + m + 1]], shape_of(v))
        for m, v in enumerate(args)
    )
    if plain[0]:  # y0 and t are plain: their cotangents are never read
        return (None, None) + g_args
    g_y0 = [fnp.reshape(g[ends[k] : ends[k + 1]], shape_of(v)[1:]) for k, v in enumerate(y_leaves)]
    # Moving t[i] moves where y is read: ct[i] . f(y[i], t[i]) for i > 0; moving t[0] moves
    # the start of every later value: -(the y0 cotangent of the later values) . f(y0, t[0]).
    in_axes = (0, 0) + (None,) * len(args)
    rates = tree_flatten(vmap(rhs, in_axes=in_axes)(ys, t, *args))[0]
    per_time = functools.reduce(
        fnp.add,
        [fnp.sum(fnp.reshape(r * c, (n, -1)), axis=1) for r, c in zip(rates, ct_leaves)],
    )
    start = -functools.reduce(fnp.add, [fnp.sum(r[0] * gy) for r, gy in zip(rates, g_y0)])
    t_ct = fnp.concatenate([fnp.reshape(start, (1,)), per_time[1:]])
    y0_ct = [gy + c[0] for gy, c in zip(g_y0, ct_leaves)]
    return (tree_unflatten(y_tree, y0_ct), t_ct) + g_args


_solve.defvjp(_solve_fwd, _solve_bwd)


# --- Taylor mode (jet): one solve of the system of the coefficients -------------------------------


class _TaylorRhs:
    """The derivatives of the normalized Taylor coefficients (in the path parameter) of the
    state: d/dt y_k = [rhs(y(s), t, args(s))]_k, the k-th coefficient of rhs pushed through a
    Taylor level. The state is (y_0, ..., y_K); the arguments are followed by their
    coefficients, `order` trees per argument."""

    def __init__(self, rhs, order, n_args):
        self.rhs, self.order, self.n_args = rhs, order, n_args

    def __call__(self, state, t, *all_args):
        order, n = self.order, self.n_args
        args, coefficients = all_args[:n], all_args[n:]
        with _taylor.TaylorLevel(order) as level:

            def boxed(value, coeffs):
                leaves, tree = tree_flatten(value)
                per_order = [tree_flatten(c)[0] for c in coeffs]
                return tree_unflatten(
                    tree,
                    [Box(v, level, tuple(c[j] for c in per_order)) for j, v in enumerate(leaves)],
                )

            y = boxed(state[0], state[1:])
            boxed_args = [
                boxed(a, coefficients[i * order : (i + 1) * order]) for i, a in enumerate(args)
            ]
            out = self.rhs(y, t, *boxed_args)
        leaves, tree = tree_flatten(out)
        values, series = [], [[] for _ in range(order)]
        for o in leaves:
            own = type(o) is Box and o.level is level
            values.append(o.value if own else o)
            for k in range(order):
                c = o.aux[k] if own else None
                series[k].append(zeros_like_value(values[-1]) if c is None else c)
        return (tree_unflatten(tree, values), *(tree_unflatten(tree, c) for c in series))


def _solve_taylor(call, primals, series):
    """The Taylor rule of a solve, for time points without a series: the coefficients of the
    solution in the path parameter solve an ODE of their own (`_TaylorRhs`), integrated with
    the solution in one solve (the value itself is the plain solve's), where the general rule
    would transpose the adjoint solve order by order. Returns None (the general rule applies)
    when the time points have a series."""
    rhs, opts, y0, t, *args = call.full_args(primals)
    n_y = len(tree_flatten(y0)[0])
    if series[n_y] is not None:
        return None
    order = len(next(s for s in series if s is not None))

    def coefficients(value, first):
        """The `order` coefficient trees of a value whose leaves start at leaf `first`."""
        leaves, tree = tree_flatten(value)
        out = []
        for k in range(order):
            ck = []
            for j, v in enumerate(leaves):
                s = series[first + j]
                ck.append(zeros_like_value(v) if s is None or s[k] is None else s[k])
            out.append(tree_unflatten(tree, ck))
        return out

    state0 = (y0, *coefficients(y0, 0))
    first, arg_coefficients = n_y + 1, []
    for a in args:
        arg_coefficients.extend(coefficients(a, first))
        first += len(tree_flatten(a)[0])
    forward = {k: v for k, v in opts.forward.items() if k != "Dfun"}  # y's Jacobian only
    backward = {k: v for k, v in opts.backward.items() if k != "Dfun"}
    for key in ("rtol", "atol"):
        forward[key] = _per_coefficient(forward[key], order)
    path = _solve(
        _TaylorRhs(rhs, order, len(args)),
        _Options(forward, backward, on_failure=opts.on_failure, checked=True),
        state0,
        t,
        *args,
        *arg_coefficients,
    )
    # The value is the plain solve's: the system of coefficients takes other steps, and
    # tracing must not change a value (its coefficients agree within the solver's tolerance).
    values = call.output_leaves(_solve(rhs, opts.checking(), y0, t, *args), "the solve")
    out_series = tuple(tree_flatten(path[k])[0] for k in range(1, order + 1))
    return values, tuple(tuple(c[j] for c in out_series) for j in range(len(values)))


def _per_coefficient(tolerance, order):
    """A tolerance of the state for the system of its coefficients (y_0, ..., y_K): a
    per-entry array repeated once per coefficient (the state's entries, then each
    coefficient's, in the same order), so each coefficient of an entry is solved to that
    entry's tolerance, as y_0 is; a scalar as it is. (The minimum, as the adjoint takes,
    would hold every entry to the tightest one: more steps, or LSODA's "excess accuracy
    requested" for tolerances far apart.)"""
    if tolerance is None or _np.ndim(tolerance) == 0:
        return tolerance
    return _np.tile(_np.ravel(tolerance), order + 1)


_solve.taylor_rule = _solve_taylor  # type: ignore[attr-defined]  # (custom_vjp's optional hook)


def _at_time(tree, i):
    return tree_map(lambda v: v[i], tree)


def _dot(x, y):
    """The sum of the products of two pytrees of the same structure."""
    terms = [fnp.sum(u * v) for u, v in zip(tree_flatten(x)[0], tree_flatten(y)[0])]
    return functools.reduce(fnp.add, terms)


# --- checking the inputs --------------------------------------------------------------------------


def _as_float(v, what):
    """A state leaf as a float array (SciPy integrates in float64; float32 stays float32), an
    integer or bool one in float64 as SciPy reads it: traced by `jit` or `vmap` too, where it
    has no derivative to lose."""
    why = "SciPy's solver steps on NumPy arrays"
    refuse_lazy("scipy.integrate.odeint", why, innermost(v))
    a = v if type(v) is Box else _np.asarray(primal(v))
    kind = dtype_of(a).kind
    if kind not in "biuf":
        hint = (
            " (split a complex state into its real and imaginary parts)"
            if kind == "c"
            else " (pass a float array)"
        )
        raise TypeError(
            f"odeint: {what} has {describe(a)}; odeint integrates real float states{hint}"
        )
    if kind != "f":
        a = fnp.astype(a, _np.float64)
    return a[()] if type(a) is _np.ndarray and a.ndim == 0 else a


def _as_times(t):
    if isinstance(t, (list, tuple)):
        t = fnp.asarray(t)  # traced time points in a list become one traced array
    shape = shape_of(t)
    if len(shape) != 1 or shape[0] == 0:
        raise ValueError(
            f"odeint: t must be a 1-D array of time points with at least one "
            f"element, got shape {shape}"
        )
    kind = dtype_of(t).kind
    if kind == "f":
        return t
    if kind not in "iu":
        raise TypeError(f"odeint: t has {describe(t)}; pass real float time points")
    return fnp.astype(t, _np.float64)  # integer time points, as SciPy reads them (traced too)
