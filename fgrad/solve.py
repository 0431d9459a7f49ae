"""Implicit differentiation: `custom_linear_solve` and `custom_root`, with JAX's semantics.

A solver's iterations are not differentiated: the solution is differentiated by what it
satisfies. For a linear solve x = A^-1 b, with A given as a function `matvec`:

    dx = A^-1 (db - dA x),            ct_b = A^-T ct_x,   ct_A-params = -(dA x)^T ct_b

and for a root x(θ) of f(x, θ) = 0 (the implicit function theorem):

    dx = -(∂f/∂x)^-1 (∂f/∂θ) dθ,      ct_θ = -(∂f/∂θ)^T (∂f/∂x)^-T ct_x.

Each is one primitive with several outputs (`custom_linear_solve`, `custom_root`) whose
inputs are the leaves of the right-hand side and the values the user's functions read without
being given them (their free variables, found as `checkpoint` finds them, and also those `jit`
records: see `_discover`).
Their rules are written with the same primitives: the tangent of a solve is a solve with the
same operator, its cotangent a solve with the transposed operator (`transpose_solve`), and the
operator of a root's tangent is f linearized at the root, solved by the user's
`tangent_solve`. So the rules are differentiated again like any fgrad program: every order,
both modes. Under `vmap` each row is a solve of its own (a user's solver may be SciPy, which
cannot take a batch), unless the functions read a vmapped value from a closure (see `_batch`);
Taylor mode uses the general rule of `fgrad.taylor` (the forward rule applied order by order).

The user's functions are run with their free variables replaced by the primitive's inputs
(`fgrad.core.replacing`, see `_Closed` for which levels that suspends).

Imports: `fgrad.core`, `fgrad.primitive` (registering rules), `fgrad.batching`, `fgrad.numpy`,
`fgrad.api`, `fgrad.tree_util`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from . import batching, core, numpy as fnp
from .api import jvp, vjp
from .core import Box, Primitive, bind, live_levels_of, processing_level, refuse_lazy
from .numpy.shaping import describe
from .primitive import register_rules
from .reverse import ReverseLevel
from .tree_util import tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .tree_util import PyTree

__all__ = ["custom_linear_solve", "custom_root"]


# --- a user's function with its free variables made inputs ----------------------------------------


def _levels_in(leaves):
    seen = set()
    for x in leaves:
        while type(x) is Box:
            seen.add(id(x.level))
            x = x.value
    return seen


class _Closed:
    """`fun(x)` as `closed(x, params)`: the boxes it read when it was first run (`captured`)
    are read as `params`.

    A captured box is read as its parameter only while its level is suspended. Which levels
    to suspend follows from the parameters: a level that still has boxes among them has not
    applied its rule yet (the parameter of its captured box is that box itself, read as it
    is); a captured box's level without boxes among them is the level applying a rule, or one
    inside it that already has, or one that has exited: its boxes are read as the parameters.
    Levels a rule opens itself (to take a jvp or a vjp) capture nothing and stay live."""

    def __init__(self, fun, captured, aliases):
        self.fun = fun
        self.captured = captured
        self.aliases = aliases  # per captured box, the boxes read as it (`core.replacements`)

    def __call__(self, x, params):
        present = _levels_in(params)
        if not self.captured:
            leaves, tree = tree_flatten(self.fun(x))
        else:
            replaced = core.replacements(self.captured, self.aliases, params)
            suspend = {
                id(c.level): c.level
                for c in self.captured
                if c.level.live and not c.level.batches and id(c.level) not in present
            }
            with core.replacing(replaced, list(suspend.values())):
                leaves, tree = tree_flatten(self.fun(x))
                # a free variable returned untouched is read as an argument would be
                leaves = [core._live_value(o) for o in leaves]
        # A value being differentiated that the first run did not read (a branch taken only
        # now) is not an input: its derivative would be lost. Its level has boxes in the
        # output but none among the parameters or x.
        known = present | _levels_in(tree_flatten(x)[0])
        for lv in live_levels_of(leaves):
            if not (lv.batches or lv.stages) and id(lv) not in known:
                raise TypeError(
                    "the function of a solve read a value being differentiated that it did "
                    "not read when it was first run (in a branch taken only later), so its "
                    "derivative would be lost; read every parameter on every call (or pass "
                    "it in args)"
                )
        return tree_unflatten(tree, leaves)


def _refuse_closure_under_vmap(
    who, out, captured, given=(), rows_read_by_numpy=False, undifferentiated=()
):
    """A value the function reads from a closure that a vmap *inside* a differentiating
    transform batches (grad(vmap(f))): what is captured is the differentiating level's box,
    under which the vmap's rows are all one array, and the solve's primitive, bound without the
    vmap's box, would pair every row of it with one row's solution. Refused, as `_batch`
    refuses the other forms.

    So is an argument (`given`: b, or a solver's args) that a transform outside such a vmap
    differentiates, when the function reads the vmap's rows from a closure and no argument
    holds them: no input of the solve is batched, so `_batch` never runs, and the primitive,
    bound by the differentiating level, took every row's solution for one value
    (custom_linear_solve's jvp summed the rows' solutions, its grad raised; probe FE #1).
    SciPy's solvers (`rows_read_by_numpy`) read the closure's rows as NumPy reads them, row
    by row (see `_batch`), which pairs them under forward mode and `jit`; only a reverse
    level's bprop cannot, so only it is refused there. An input without a derivative
    (`undifferentiated`: a solver's x0) may hold rows, but a transform tracing it is not
    refused (a warm start from the value being differentiated had its right gradient)."""
    out_batches = [lv for lv in live_levels_of(tree_flatten(out)[0]) if lv.batches]
    inner = [lv.depth for lv in out_batches]
    held = batch_levels([*given, *undifferentiated])  # rows an input holds: `_batch` pairs them
    closure_only = [lv.depth for lv in out_batches if id(lv) not in held]
    outer = [(c.level, inner) for c in captured]
    outer += [
        (lv, closure_only)
        for lv in live_levels_of(given)
        if not rows_read_by_numpy or isinstance(lv, ReverseLevel)
    ]
    for level, depths in outer:
        if level.live and not level.batches and any(depth > level.depth for depth in depths):
            if level.stages:  # jit(vmap(f)): the record would pair all rows with each row
                raise TypeError(_READS_BATCHED_JIT.format(who=who))
            raise TypeError(_reads_batched(who))


def _discover(fun, x):
    """Run `fun(x)` with every transform that differentiates or records suspended: its output,
    the boxes it reads (its free variables) and the boxes read as each (`core.replacements`).
    A value `jit` records is captured too (core's `capturing` keeps a staging level live):
    read from a closure, it must be an input of the solve's primitive, or a replay would use
    the recorded value."""
    levels = [lv for lv in core.live_levels() if not lv.batches]
    with core._rewritten(core._Capture(set(levels)), levels) as capture:
        out = fun(x)
    return out, list(capture.boxes), capture.aliases


_LAZY = "the user's solver runs on NumPy values"


def _plain(v):
    return _np.asarray(core.primal(v))


def _check_like(who, what, out, tree, metas):
    """The leaves of `out`, which must have the structure, shapes and dtypes `tree`, `metas`."""
    leaves, out_tree = tree_flatten(out)
    got = [(core.shape_of(v), core.dtype_of(v)) for v in leaves]
    if out_tree != tree or [s for s, _ in got] != [s for s, _ in metas]:
        shown = ", ".join(f"{s} {d}" for s, d in got)
        want = ", ".join(f"{s} {d}" for s, d in metas)
        reference = "the right-hand side" if who == "custom_linear_solve" else "initial_guess"
        raise ValueError(
            f"{who}: {what} returned {out_tree} with shapes and dtypes [{shown}], but "
            f"{reference} is {tree} with [{want}]; it must return a value of the same "
            "structure and shapes"
        )
    return [v if core.dtype_of(v) == d else fnp.astype(v, d) for v, (_, d) in zip(leaves, metas)]


def _zeros(meta):
    shape, dtype = meta
    z = _np.zeros(shape, dtype)
    return z[()] if z.ndim == 0 else z


def _sub(a, b):
    return [x if y is None else (-y if x is None else x - y) for x, y in zip(a, b)]


# --- vmap -----------------------------------------------------------------------------------------


def _bind_call(prim, call, inputs):
    """Bind `prim` with `call` as its parameter; while it is processed, `call.inputs` are its
    inputs (a rule may bind the same call again: the outer binding's come back after)."""
    previous, call.inputs = call.inputs, inputs
    try:
        return bind(prim, inputs, {"call": call})
    finally:
        call.inputs = previous


_BY_ROW = (
    "the user's solver finds one solution at a time (it may be SciPy's, which cannot take a "
    "batch), and each row bound again lets a transform outside the vmap apply the rules"
)

_READS_BATCHED = (
    "{who}: under vmap, the function reads a value batched by that vmap without being given "
    "it, while its arguments are batched too or a transform outside the vmap differentiates "
    "it: one row at a time, that value's rows cannot be paired with the arguments' (and its "
    "derivative would be lost); {instead}put the vmap outside the differentiating transform "
    "(vmap(grad(f)) rather than grad(vmap(f)))"
)


def _reads_batched(who):
    """The message of `_READS_BATCHED` for `who`: the SciPy solvers take the value in `args`;
    custom_root and custom_linear_solve have no args (a closure is their only way)."""
    custom = who in ("custom_root", "custom_linear_solve")
    instead = "" if custom else "pass the value as an argument (in args), or "
    return _READS_BATCHED.format(who=who, instead=instead)


_READS_BATCHED_JIT = (
    "{who}: under vmap inside jit, the function reads a value batched by that vmap from a "
    "closure: jit records that value with all its rows, and one row's solve cannot pair them "
    "with its own (its result would have the wrong shape); put jit inside the vmap "
    "(vmap(jit(f)) rather than jit(vmap(f))), or run the vmap without jit"
)


def batch_levels(leaves: Sequence[Any]) -> set[int]:
    """The ids of the live batching levels of the boxes in `leaves`."""
    return {id(lv) for lv in live_levels_of(leaves) if lv.batches}


def _batch(prim, impl, args, dims, call):
    """A solve under vmap: one solve per row, each row bound again, so that a transform
    outside the vmap applies the rules. When the user's functions read a value of this vmap
    from a closure (`call.reads_batched`, seen when first run on arguments without rows) and
    no transform outside the vmap differentiates the solve, the user's solver runs on the
    batch itself instead: fgrad operations take all rows together, and a value read with
    NumPy (SciPy's solvers) is read row by row by the batching level (see `fgrad.batching`,
    "Reading rows"), which pairs the closure's rows with the arguments'."""
    level = processing_level(call.inputs, args)
    differentiated = any(not (lv.batches or lv.stages) for lv in live_levels_of(args))
    if call.reads_batched and not differentiated:
        boxed = [a if d is None else Box(a, level, d) for a, d in zip(args, dims)]
        outs = impl(*boxed, call=call)
        if any(not (lv.batches or lv.stages) for lv in live_levels_of(outs)):
            raise TypeError(_reads_batched(call.who))
        return batching.unboxed_outputs(outs, level)
    size = next(core.shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
    outs, out_dims = batching.rows_one_by_one(prim, args, dims, {"call": call}, size, _BY_ROW)
    if any(core.holds_box_of(o, level) for o in outs):
        raise TypeError(_reads_batched(call.who))
    return outs, out_dims


# --- the linear solve -----------------------------------------------------------------------------


class _LinearCall:
    """One linear solve: `matvec(x, params)` (A x, with the operator's free variables
    as `params`), the user's `solve(matvec, b)` and `transpose_solve(vecmat, b)`, and the
    structure, shapes and dtypes of b (and so of x)."""

    def __init__(self, who, matvec, solve, transpose_solve, symmetric, tree, metas):
        self.who = who
        self.matvec = matvec
        self.solve = solve
        self.transpose_solve = transpose_solve
        self.symmetric = symmetric
        self.tree, self.metas = tree, metas
        self.n_b = len(metas)
        self.inputs = None  # the inputs of the binding being processed (see `_bind_call`)
        self.reads_batched = False  # matvec reads a value of a vmap from a closure
        self._transposed = None

    def __repr__(self):
        return self.who

    def operator(self, params):
        """A x as a function of x's tree, for the user's solver."""
        return lambda x: self.matvec(x, params)

    def transposed(self):
        """The solve with A^T: its matvec is the vjp of A's (linear, so taken at x = 0)."""
        if self.symmetric:
            return self
        if self._transposed is None:
            if self.transpose_solve is None:
                raise TypeError(
                    f"{self.who}: reverse mode needs the transposed solve; pass "
                    "transpose_solve=lambda vecmat, b: ... (a solver for A^T x = b), or "
                    "symmetric=True when A is symmetric"
                )
            tree, metas, matvec = self.tree, self.metas, self.matvec

            def vecmat(y, params):
                zero = tree_unflatten(tree, [_zeros(m) for m in metas])
                _, pull = vjp(lambda x: matvec(x, params), zero)
                return pull(y)[0]

            t = _LinearCall(
                f"{self.who} transposed",
                vecmat,
                self.transpose_solve,
                self.solve,
                False,
                tree,
                metas,
            )
            t._transposed = self
            t.reads_batched = self.reads_batched
            self._transposed = t
        return self._transposed

    def bind(self, b_leaves, params):
        """x's leaves for right-hand side leaves `b_leaves` (cast to x's dtypes)."""
        b_leaves = [
            v if core.dtype_of(v) == d else fnp.astype(v, d)
            for v, (_, d) in zip(b_leaves, self.metas)
        ]
        return _bind_call(linear_solve_p, self, list(b_leaves) + list(params))


def _linear_impl(*vals, call):
    b, params = vals[: call.n_b], vals[call.n_b :]
    x = call.solve(call.operator(params), tree_unflatten(call.tree, list(b)))
    return tuple(_check_like(call.who, "solve", x, call.tree, call.metas))


def _linear_jvp(tangents, ans, *vals, call):
    n = call.n_b
    params = list(vals[n:])
    rhs = list(tangents[:n])
    own = [i for i, t in enumerate(tangents[n:]) if t is not None]
    if own:
        # dA x: the operator's tangent in the directions of its free variables, at x fixed
        x = tree_unflatten(call.tree, list(ans))

        def product(*ps):
            full = list(params)
            for i, p in zip(own, ps):
                full[i] = p
            return tuple(tree_flatten(call.matvec(x, full))[0])

        _, d_ax = jvp(product, tuple(params[i] for i in own), tuple(tangents[n + i] for i in own))
        rhs = _sub(rhs, list(d_ax))
    if all(r is None for r in rhs):
        return [None] * n
    rhs = [_zeros(m) if r is None else r for r, m in zip(rhs, call.metas)]
    return list(_LinearCall.bind(call, rhs, params))


def _linear_vjp(wanted, ans, *vals, call):
    n = call.n_b
    params = list(vals[n:])
    own = [i for i, w in enumerate(wanted[n:]) if w]
    transposed = call.transposed()  # refuse early, at forward time, without transpose_solve

    def bprop(cts):
        ct = [_zeros(m) if c is None else c for c, m in zip(cts, call.metas)]
        lam = list(transposed.bind(ct, params))
        out = [lam[i] if wanted[i] else None for i in range(n)] + [None] * len(params)
        if own:
            x = tree_unflatten(call.tree, list(ans))

            def product(*ps):
                full = list(params)
                for i, p in zip(own, ps):
                    full[i] = p
                return call.matvec(x, full)

            _, pull = vjp(product, *[params[i] for i in own])
            for i, c in zip(own, pull(tree_unflatten(call.tree, lam))):
                out[n + i] = None if c is None else -c
        return out

    return bprop


linear_solve_p = Primitive(
    "custom_linear_solve",
    _linear_impl,
    vjp=_linear_vjp,
    jvp=_linear_jvp,
    multiple_results=True,
)
register_rules(
    linear_solve_p,
    batch=lambda args, dims, call: _batch(linear_solve_p, _linear_impl, args, dims, call),
    forward="speed",
)


def _as_float_leaves(who, what, tree_value):
    leaves, tree = tree_flatten(tree_value)
    refuse_lazy(who, _LAZY, *[core.innermost(v) for v in leaves])  # before asarray computes one
    out = []
    for k, v in enumerate(leaves):
        if type(v) is not Box:
            v = _np.asarray(v)
            if v.dtype.kind in "iub":
                v = v.astype(_np.float64)
            v = v[()] if v.ndim == 0 else v
        elif core.dtype_of(v).kind in "iub":  # (traced by `jit` or `vmap`: as a plain one)
            v = fnp.astype(v, _np.float64)
        if core.dtype_of(v).kind not in "fc":
            raise TypeError(
                f"{who}: {what} leaf {k} has {describe(v)}; pass a float array (for example "
                "np.asarray(b, dtype=float))"
            )
        out.append(v)
    return out, tree


def custom_linear_solve(
    matvec: Callable[[PyTree], PyTree],
    b: PyTree,
    solve: Callable[[Callable[[PyTree], PyTree], PyTree], PyTree],
    transpose_solve: Callable[[Callable[[PyTree], PyTree], PyTree], PyTree] | None = None,
    symmetric: bool = False,
) -> PyTree:
    """x = solve(matvec, b), differentiated as the solution of A x = b (JAX's semantics).

    Parameters
    ----------
    matvec : callable
        x -> A x, linear, from and to pytrees shaped like `b`. It may read values being
        differentiated without being given them (A's entries in a closure): the solution is
        differentiated with respect to them too.
    b : pytree of float arrays
        The right-hand side.
    solve : callable
        `solve(matvec, b)` returns x with `matvec(x) == b`; any code (SciPy's, plain NumPy):
        it is never differentiated, it only ever sees plain values.
    transpose_solve : callable, optional
        `transpose_solve(vecmat, b)` solves A^T x = b; reverse mode needs it unless
        `symmetric`.
    symmetric : bool, default False
        A is symmetric: `solve` also solves with A^T.

    Returns
    -------
    pytree
        x, shaped like `b`.

    Notes
    -----
    The derivative is exact for the exact solution; with an iterative `solve` it is as
    accurate as the solve (see the docs page "Implicit differentiation"). Under `vmap` each
    row is solved on its own.

    Examples
    --------
    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> def solve(matvec, r):  # a direct solve with the matrix matvec applies
    ...     return np.linalg.solve(fgrad.jacfwd(matvec)(r), r)
    >>> def f(a, b):
    ...     A = fnp.array([[a, 1.0], [1.0, 3.0]])
    ...     return fnp.sum(fgrad.custom_linear_solve(lambda v: A @ v, b, solve, symmetric=True))
    >>> b = np.array([1.0, 2.0])
    >>> g = fgrad.grad(f)(4.0, b)
    >>> gn = (f(4.0 + 1e-6, b) - f(4.0 - 1e-6, b)) / 2e-6
    >>> bool(abs(g - gn) < 1e-8)
    True
    """
    who = "custom_linear_solve"
    if not callable(matvec) or not callable(solve):
        raise TypeError(
            f"{who}: matvec and solve must be functions; got {type(matvec).__name__} and "
            f"{type(solve).__name__}. Call it as custom_linear_solve(matvec, b, solve)"
        )
    b_leaves, tree = _as_float_leaves(who, "b", b)
    refuse_lazy(who, _LAZY, *[core.innermost(v) for v in b_leaves])
    probe = tree_unflatten(tree, [_zeros((core.shape_of(v), core.dtype_of(v))) for v in b_leaves])
    # matvec is linear: zeros show what it reads without the rows of a vmap that b may have
    out, captured, aliases = _discover(matvec, probe)
    _refuse_closure_under_vmap(who, out, captured, b_leaves)
    out_leaves = tree_flatten(out)[0]
    if len(out_leaves) == len(b_leaves):  # a solution of A's and b's dtype, as a product's
        b_leaves = [
            v
            if _np.result_type(core.dtype_of(v), core.dtype_of(o)) == core.dtype_of(v)
            else fnp.astype(v, _np.result_type(core.dtype_of(v), core.dtype_of(o)))
            for v, o in zip(b_leaves, out_leaves)
        ]
    metas = [(core.shape_of(v), core.dtype_of(v)) for v in b_leaves]
    _check_like(who, "matvec", out, tree, metas)
    call = _LinearCall(
        who, _Closed(matvec, captured, aliases), solve, transpose_solve, symmetric, tree, metas
    )
    call.reads_batched = bool(batch_levels(out_leaves))
    inputs = b_leaves + captured
    if not live_levels_of(inputs):
        return tree_unflatten(tree, list(_linear_impl(*inputs, call=call)))
    return tree_unflatten(tree, list(call.bind(b_leaves, captured)))


# --- the root -------------------------------------------------------------------------------------


class _RootCall:
    """One root: `f(x, params)`, the user's `solve(f, guess)` and
    `tangent_solve(g, y)`, the initial guess (plain) and the structure of x."""

    def __init__(self, who, f, solve, tangent_solve, guess, has_aux, symmetric=False):
        self.who = who
        self.symmetric = symmetric  # f's Jacobian in x is symmetric (a gradient's)
        self.f = f
        self.solve = solve
        self.tangent_solve = tangent_solve
        self.guess = guess
        self.has_aux = has_aux
        leaves, self.tree = tree_flatten(guess)
        self.metas = [(core.shape_of(v), core.dtype_of(v)) for v in leaves]
        self.n_x = len(leaves)
        self.aux_tree = None
        self.solve_params = False
        self.inputs = None
        self.reads_batched = False  # f reads a value of a vmap from a closure

    def __repr__(self):
        return self.who

    def bind(self, params):
        return _bind_call(root_p, self, list(params))

    def linearized(self):
        """The linear solve with f's Jacobian in x at the root: its parameters are the root's
        leaves followed by f's; both solves use the user's `tangent_solve`."""
        n, f, tree = self.n_x, self.f, self.tree

        def matvec(u, ps):
            x = tree_unflatten(tree, list(ps[:n]))
            return jvp(lambda y: f(y, ps[n:]), (x,), (u,))[1]

        def tangent_solve(g, y):
            return self.tangent_solve(g, y)

        lin = _LinearCall(
            f"{self.who}'s tangent_solve",
            matvec,
            tangent_solve,
            tangent_solve,
            self.symmetric,
            tree,
            self.metas,
        )
        lin.reads_batched = self.reads_batched
        return lin


def _root_impl(*params, call):
    f = lambda x: call.f(x, params)  # noqa: E731
    out = call.solve(f, call.guess, params) if call.solve_params else call.solve(f, call.guess)
    aux = ()
    if call.has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(
                f"{call.who}: has_aux=True, so solve must return (solution, aux); got "
                f"{type(out).__name__}"
            )
        out, aux = out
    x = _check_like(call.who, "solve", out, call.tree, call.metas)
    aux_leaves, call.aux_tree = tree_flatten(aux)
    return tuple(x) + tuple(_plain(a) for a in aux_leaves)


def _root_jvp(tangents, ans, *params, call):
    if all(t is None for t in tangents):
        return [None] * len(ans)
    n = call.n_x
    x = tree_unflatten(call.tree, list(ans[:n]))
    own = [i for i, t in enumerate(tangents) if t is not None]

    def at_root(*ps):
        full = list(params)
        for i, p in zip(own, ps):
            full[i] = p
        return tuple(tree_flatten(call.f(x, full))[0])

    _, rhs = jvp(at_root, tuple(params[i] for i in own), tuple(tangents[i] for i in own))
    rhs = [_zeros(m) if r is None else r for r, m in zip(rhs, call.metas)]
    dx = call.linearized().bind(rhs, list(ans[:n]) + list(params))
    return [-d for d in dx] + [None] * (len(ans) - n)


def _root_vjp(wanted, ans, *params, call):
    n = call.n_x
    own = [i for i, w in enumerate(wanted) if w]
    lin = call.linearized().transposed()

    def bprop(cts):
        out = [None] * len(params)
        if all(c is None for c in cts[:n]) or not own:
            return out
        ct = [_zeros(m) if c is None else c for c, m in zip(cts[:n], call.metas)]
        lam = lin.bind(ct, list(ans[:n]) + list(params))
        x = tree_unflatten(call.tree, list(ans[:n]))

        def at_root(*ps):
            full = list(params)
            for i, p in zip(own, ps):
                full[i] = p
            return call.f(x, full)

        _, pull = vjp(at_root, *[params[i] for i in own])
        for i, c in zip(own, pull(tree_unflatten(call.tree, list(lam)))):
            out[i] = None if c is None else -c
        return out

    return bprop


root_p = Primitive("custom_root", _root_impl, vjp=_root_vjp, jvp=_root_jvp, multiple_results=True)
register_rules(
    root_p,
    batch=lambda args, dims, call: _batch(root_p, _root_impl, args, dims, call),
    forward="speed",
)


def root_of(
    who: str,
    f: Callable[[PyTree, Sequence[Any]], PyTree],
    params: Sequence[Any],
    solve: Callable[[Callable[[PyTree], PyTree], PyTree], Any],
    tangent_solve: Callable[[Callable[[PyTree], PyTree], PyTree], PyTree],
    guess: PyTree,
    has_aux: bool = False,
    symmetric: bool = False,
    solve_params: bool = False,
    reads_batched: bool = False,
) -> tuple[PyTree, Any]:
    """The root of `f(x, params)` found by `solve`, differentiable with respect to
    `params` (for `fgrad.scipy.optimize`, whose functions are given their parameters): the
    root, and the aux of `solve` (None without has_aux). With `symmetric`, f's Jacobian in x
    is symmetric (f is a gradient) and `tangent_solve` also solves with its transpose; with
    `solve_params`, `solve` is called as `solve(f, guess, params)` with the plain
    parameters; `reads_batched` says that f reads a value of a vmap from a closure."""
    call = _RootCall(who, f, solve, tangent_solve, guess, has_aux, symmetric)
    call.solve_params = solve_params
    call.reads_batched = reads_batched
    params = list(params)
    if not live_levels_of(params):
        outs = _root_impl(*params, call=call)
    else:
        outs = call.bind(params)
    x = tree_unflatten(call.tree, list(outs[: call.n_x]))
    aux = tree_unflatten(call.aux_tree, list(outs[call.n_x :])) if has_aux else None
    return x, aux


def custom_root(
    f: Callable[[PyTree], PyTree],
    initial_guess: PyTree,
    solve: Callable[[Callable[[PyTree], PyTree], PyTree], Any],
    tangent_solve: Callable[[Callable[[PyTree], PyTree], PyTree], PyTree],
    has_aux: bool = False,
) -> Any:
    """A root of `f` found by `solve`, differentiated by the implicit function theorem (JAX's
    semantics).

    Parameters
    ----------
    f : callable
        x -> f(x), from and to pytrees shaped like `initial_guess`. The values it reads without
        being given them (its parameters, in a closure) are what the root is differentiated
        with respect to.
    initial_guess : pytree of float arrays
        Where `solve` starts; the root does not depend on it (no derivative flows to it).
    solve : callable
        `solve(f, initial_guess)` returns x with f(x) = 0 (and aux, with `has_aux`); any code,
        never differentiated: it sees plain values only.
    tangent_solve : callable
        `tangent_solve(g, y)` returns z with g(z) = y for a linear g (f linearized at the
        root, or its transpose in reverse mode): `lambda g, y: y / g(1.0)` for a scalar,
        `lambda g, y: np.linalg.solve(fgrad.jacfwd(g)(y), y)` for a small vector.
    has_aux : bool, default False
        `solve` returns (x, aux); aux is returned as is, not differentiated.

    Returns
    -------
    pytree
        The root (and aux, with `has_aux`).

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> def newton(f, x):
    ...     for _ in range(30):
    ...         x = x - f(x) / fgrad.grad(f)(x)
    ...     return x
    >>> def sqrt(a):  # the root of x**2 - a
    ...     return fgrad.custom_root(lambda x: x**2 - a, 1.0, newton,
    ...                              lambda g, y: y / g(1.0))
    >>> float(sqrt(2.0)), float(fgrad.grad(sqrt)(4.0)), float(fgrad.grad(fgrad.grad(sqrt))(4.0))
    (1.414213562373095, 0.25, -0.03125)
    """
    who = "custom_root"
    if not callable(f) or not callable(solve) or not callable(tangent_solve):
        raise TypeError(
            f"{who}: f, solve and tangent_solve must be functions; call it as "
            "custom_root(f, initial_guess, solve, tangent_solve)"
        )
    guess_leaves, tree = _as_float_leaves(who, "initial_guess", initial_guess)
    refuse_lazy(who, _LAZY, *[core.innermost(v) for v in guess_leaves])
    guess = tree_unflatten(tree, [_plain(v)[()] for v in guess_leaves])
    metas = [(core.shape_of(v), core.dtype_of(v)) for v in guess_leaves]
    out, captured, aliases = _discover(f, guess)
    _refuse_closure_under_vmap(who, out, captured)
    _check_like(who, "f", out, tree, metas)
    reads = bool(batch_levels(tree_flatten(out)[0]))  # the guess is plain: from a closure
    x, aux = root_of(
        who,
        _Closed(f, captured, aliases),
        captured,
        solve,
        tangent_solve,
        guess,
        has_aux,
        reads_batched=reads,
    )
    return (x, aux) if has_aux else x


# A solve mixes every element of b (A^-1 of a sparse A is dense); a root's every element
# depends on every parameter through f's Jacobian.
for _prim in (linear_solve_p, root_p):
    register_rules(
        _prim,
        sparsity=(
            "dense",
            "the solution of a linear system or a root depends on the whole right-hand side "
            "and operator (the inverse of a sparse matrix is dense)",
        ),
    )
