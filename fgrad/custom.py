"""Your own derivative rules, checkpointing, and a tap on the backward pass.

- `custom_vjp(fun)` gives `fun` a reverse rule, `f.defvjp(fwd, bwd)`, with JAX's semantics.
  Forward mode (`jvp`, `jacfwd`, `hessian`) works too: it transposes `bwd`, which is linear in
  the cotangent, and pulls `bwd` on real cotangents where its Python reads the cotangent's
  value. (A JAX `custom_vjp` function refuses forward mode.)
- `custom_jvp(fun)` gives `fun` a forward rule, `f.defjvp(jvp)`; reverse mode transposes the
  rule's tangent part, which is linear in the tangents.
- `checkpoint(fun)` (alias `remat`) stores none of `fun`'s intermediates; its bprop runs
  `fun` again under `vjp` to get them.
- `tap_cotangent(x, on_cotangent)` is the identity on `x` whose bprop hands the cotangent to
  `on_cotangent` and passes on what it returns: for logging, clipping and teaching.

Each is one primitive with several outputs (`custom_vjp_call`, `custom_jvp_call`,
`checkpoint`, `tap_cotangent`): a call flattens its pytree arguments once, here, binds the
primitive to the leaves, with the call's structure as a parameter, and gets one output per
leaf of the result.

Rules are written in `fgrad.numpy` operations, like the built-in ones, so that they can be
differentiated again: then these functions work under every transform at every depth.

Free variables. A function given to `checkpoint` may close over values being differentiated
(through closure cells, globals, default arguments, a bound method's `self`): `checkpoint`
runs it once with every transform suspended to find the boxes it reads, and makes them inputs
of its primitive, so their derivatives are those of the function, at every order. A
`custom_vjp` or `custom_jvp` function, its `fwd`/`bwd` or its jvp rule may close over values
of outer transforms (the rule's operations on them are differentiated as operations), but not
over a value being differentiated by the transform that applies the rule: the rule gives no
derivative for it, so that raises a TypeError naming the value rather than dropping its
derivative. When none of a custom function's arguments is being differentiated, it runs as
itself, and what it closes over is differentiated through its operations.

Three worked examples
---------------------
A numerically stable logsumexp, whose gradient is the softmax (no subgradient of the max):

>>> import numpy as np, fgrad, fgrad.numpy as fnp
>>> @fgrad.custom_vjp
... def logsumexp(x):
...     m = fnp.max(x)
...     return m + fnp.log(fnp.sum(fnp.exp(x - m)))
>>> def logsumexp_fwd(x):
...     ans = logsumexp(x)
...     return ans, (x, ans)
>>> def logsumexp_bwd(res, ct):
...     x, ans = res
...     return (ct * fnp.exp(x - ans),)
>>> logsumexp.defvjp(logsumexp_fwd, logsumexp_bwd)
>>> x = np.array([0.0, 1000.0, 1000.0])
>>> print(logsumexp(x), fgrad.grad(logsumexp)(x))
1000.6931471805599 [0.  0.5 0.5]
>>> fgrad.hessian(logsumexp)(x) + 0.0  # forward over reverse: forward mode transposes bwd
array([[ 0.  ,  0.  ,  0.  ],
       [ 0.  ,  0.25, -0.25],
       [ 0.  , -0.25,  0.25]])

Gradient clipping: the identity, with a bprop that clips the cotangent (`tap_cotangent` is the
shortcut for this). The bounds are `nondiff_argnums`: bwd gets them first.

>>> from functools import partial
>>> @partial(fgrad.custom_vjp, nondiff_argnums=(0, 1))
... def clip_gradient(lo, hi, x):
...     return x
>>> clip_gradient.defvjp(lambda lo, hi, x: (x, None),
...                      lambda lo, hi, res, ct: (fnp.clip(ct, lo, hi),))
>>> fgrad.grad(lambda x: 10.0 * clip_gradient(-1.0, 1.0, x))(2.0)
np.float64(1.0)

A forward pass in plain NumPy, which fgrad cannot trace (a Newton iteration here; a call into
compiled code is the same), with a bprop by implicit differentiation: y = root(x) solves
y**3 + y = x, so dy/dx = 1 / (3 y**2 + 1). Under a transform `fun` only ever sees plain
values. `fwd` calls `root` itself, not the iteration, so that an outer transform sees `root`
with its rule too: with the bprop in fgrad operations, derivatives of every order work.

>>> @fgrad.custom_vjp
... def root(x):
...     y = np.zeros_like(x)
...     for _ in range(50):
...         y = y - (y**3 + y - x) / (3 * y**2 + 1)
...     return y
>>> root.defvjp(lambda x: (root(x), root(x)),
...             lambda y, ct: (ct / (3 * y**2 + 1),))
>>> x = np.array([2.0, 10.0])
>>> print(root(x), fgrad.jacrev(root)(x).diagonal(), fgrad.jacfwd(root)(x).diagonal())
[1. 2.] [0.25       0.07692308] [0.25       0.07692308]
>>> float(fgrad.grad(fgrad.grad(root))(2.0))  # -6 y (dy/dx)**3
-0.09375

Imports: `fgrad.core`, `fgrad.primitive` (registering rules; what a function reads besides
its arguments; it casts a user primitive's cotangents with `_cast`), `fgrad.reverse`,
`fgrad.tree_util`, `fgrad.numpy` (to cast cotangents differentiably) and `fgrad.api`
(`checkpoint` re-runs its function under `vjp` and `jvp`).
"""

from __future__ import annotations

import functools
import inspect
import numbers
import operator
import types
import weakref
from typing import TYPE_CHECKING

import numpy as _np

from . import batching, core, forward, numpy as fnp, primitive as _primitive, taylor
from .api import _jvp_flat, _vjp_flat
from .boundary import api_boundary
from .core import (
    Box,
    Primitive,
    bind,
    holds_box_of,
    live_levels_of,
    processing_level,
    zeros_like_value,
)
from .forward import NotLinearError, PlaceholderLevel, PlaceholderRead, transpose_bprop
from .numpy.shaping import batch_size, describe, every_row
from .primitive import boxes_in, free_values, register_rules
from .reverse import backward_pass
from .tree_util import tree_flatten, tree_map, tree_unflatten
from .vmapping import vmap

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .tree_util import PyTree

__all__ = ["checkpoint", "custom_jvp", "custom_vjp", "remat", "tap_cotangent"]


# --- which level applies a call's rule ------------------------------------------------------------


def _any_live(leaves):
    return any(type(x) is Box and (x.level.live or _any_live((x.value,))) for x in leaves)


# --- values being differentiated where a rule cannot see them -------------------------------------


def _leak(tree, level, allowed=None):
    """A leaf of `tree` holding a box of `level` or of a live level inside it (other than
    `allowed`), else None.

    Such a box in what a rule returns at `level` can only come from a value of that level the
    rule closed over (its arguments hold only boxes of outer levels).
    """
    for x in tree_flatten(tree)[0]:
        y = x
        while type(y) is Box:
            lv = y.level
            # (a `jit` recording inside `level` traces values without differentiating them:
            # its box leaks `level`'s derivatives only if one is under it)
            if lv.live and lv.depth >= level.depth and lv is not allowed and not lv.stages:
                return x
            y = y.value
    return None


def _box_of(v, level):
    """A box of `level` (or of a live level inside it) in `v` (`_boxes_in`); None if there is
    none."""
    return next((b for b in boxes_in(v) if _leak([b], level) is not None), None)


_DIFFERENTIATED = (
    "a value being differentiated",
    "the rule gives no derivative for it, so it would be lost",
)


def _check_closure(fn, level, who, what, why=_DIFFERENTIATED):
    """Refuse a function that reads a value of `level` (or of a level inside it) other than
    through its arguments: being differentiated there, the rule would give it no derivative
    (`why` says what the value is and what would go wrong, for the message)."""
    kind, consequence = why
    for name, v in free_values(fn):
        x = _box_of(v, level)
        if x is not None:
            raise TypeError(
                f"{who}: {what} reads {name}, {kind} (a traced value with {describe(x)}) that "
                f"is not one of its arguments; {consequence}. Pass it to the function as an "
                "explicit argument"
            )


def _tell_recorders_of_closures(fn, who):
    """A `jit` recording around a call of `fn` (a checkpointed function, which the record's
    replays run again) must not keep the record when `fn` reads one of the recording's traced
    values other than through its arguments: a replay would read this call's value."""
    for level in core.live_levels():
        if level.stages:
            for _, v in free_values(fn):
                x = next((b for b in boxes_in(v) if holds_box_of(b, level)), None)
                if x is not None:
                    level.closed_over(x, who, checkpoint=True)
                    break


def _check_no_leak(tree, level, who, what, allowed=None):
    x = _leak(tree, level, allowed)
    if x is not None:
        raise TypeError(
            f"{who}: {what} depends on a value being differentiated that is not one of the "
            f"function's arguments (it holds a traced value with {describe(x)}): the function "
            "or its rules read a traced value they were not given, whose derivative would be "
            "lost. Pass that value to the function as an explicit argument"
        )


# --- the call: structure of arguments and outputs -------------------------------------------------


def _as_numpy(v):
    """A Python number as a NumPy scalar: a leaf `tap_cotangent` passes through beside traced
    ones. (Not a custom function's argument or output: a Python number reaches the function's
    re-run and the rules as itself, and an output stays one, so each promotes and overflows as
    it does eagerly; a NumPy scalar made float32 data times 0.1 float64, and n**3 wrap around
    at 64 bits.)"""
    if isinstance(v, (bool, int, float, complex)):
        return _np.asarray(v)[()]
    return v


def _meta(v):
    return core.shape_of(v), core.dtype_of(v)


def _zeros(meta):
    shape, dtype = meta
    z = _np.zeros(shape, dtype)
    return z[()] if z.ndim == 0 else z


def _show(metas):
    return "[" + ", ".join(f"({s}, {d})" for s, d in metas) + "]"


class _Call:
    """One call of a custom or checkpointed function, its primitive's parameter `call`: what
    the rules need (the function, the structure of its arguments) and the structure, shapes and
    dtypes of its outputs, learned when first computed."""

    def __init__(self, who, in_tree):
        self.who = who
        self.in_tree = in_tree
        self.out_tree = None
        self.out_metas = None
        self.inputs = None  # the bound inputs, while the primitive is bound (see __call__)

    def __repr__(self):
        return self.who

    def output_leaves(self, out, what):
        """The leaves of an output `out`, as a tuple; every computation of the output must
        give the same structure, shapes and dtypes."""
        leaves, tree = tree_flatten(out)
        leaves = tuple(leaves)
        for k, v in enumerate(leaves):
            pv = core.innermost(v)
            if type(pv) in (bool, int, float, complex):
                continue  # a number computed from a Python number `jit` keeps as it was given
            if not (
                isinstance(pv, (_np.ndarray, _np.generic)) or core.is_foreign_array(pv)
            ) or not (_np.issubdtype(pv.dtype, _np.number) or pv.dtype == bool):
                raise TypeError(
                    f"{self.who}: {what} returned a value of type {type(pv).__name__} "
                    f"at output leaf {k}; return numbers or numeric arrays"
                )
        metas = [_meta(v) for v in leaves]
        if self.out_tree is None:
            self.out_tree, self.out_metas = tree, metas
        elif tree != self.out_tree or metas != self.out_metas:
            raise TypeError(
                f"{self.who}: {what} returned {tree} with (shape, dtype) {_show(metas)}, but "
                f"the output was first computed as {self.out_tree} with "
                f"{_show(self.out_metas)}; the function and its rules must return outputs of "
                "the same structure, shapes and dtypes"
            )
        return leaves

    def output(self, leaves):
        return tree_unflatten(self.out_tree, list(leaves))

    def output_cotangent(self, cts):
        """The output cotangent as a pytree for a user's rule: zeros for unused outputs."""
        return self.output([_zeros(m) if c is None else c for c, m in zip(cts, self.out_metas)])

    def level(self, vals):
        return processing_level(self.inputs, vals)

    def bind(self, prim, leaves, **params):
        """Bind `prim` to `leaves` with this call as its parameter; the result as a pytree."""
        self.inputs = leaves
        try:
            outs = bind(prim, leaves, dict(params, call=self))
        finally:
            self.inputs = None  # a bprop keeps the call: it must not keep boxes of its level
        return self.output(outs)


def _leaves_like(value, treedef, who, what):
    """The leaves of `value`, a pytree with structure `treedef` where None may stand for any
    leaf (a zero); None for the whole of it is all zeros."""
    if value is None:
        return [None] * treedef.num_leaves
    try:
        leaves = treedef.flatten_up_to(value)
    except ValueError:
        leaves = None
    if leaves is None or any(v is not None and _is_node(v) for v in leaves):
        raise ValueError(
            f"{who}: {what} has structure {tree_flatten(value)[1]}, but it must have the "
            f"structure {treedef} of the value it goes with; return one shaped like that value "
            "(None stands for a zero)"
        )
    return leaves


def _is_node(v):
    """Whether v is a pytree node (a container), not a leaf."""
    leaves, _ = tree_flatten(v)
    return len(leaves) != 1 or leaves[0] is not v


def _conform(v, meta, who, what):
    """A tangent or cotangent leaf with the shape of its value (an error otherwise) and its
    dtype (cast, as for NumPy's Python scalars). None stays None."""
    if v is None:
        return None
    shape, dtype = meta
    if not _np.issubdtype(dtype, _np.inexact):
        return None  # an integer value has no derivative
    pv = core.innermost(v)
    if isinstance(pv, bool) or not (
        isinstance(pv, (int, float, complex))
        or (
            (isinstance(pv, (_np.ndarray, _np.generic)) or core.is_foreign_array(pv))
            and _np.issubdtype(pv.dtype, _np.number)
        )
    ):
        kind = (
            f"dtype {pv.dtype}"
            if isinstance(pv, (_np.ndarray, _np.generic)) or core.is_foreign_array(pv)
            else (f"type {type(pv).__name__}")
        )
        raise TypeError(
            f"{who}: {what} is of {kind}, but the value it goes with has shape {shape} and "
            f"dtype {dtype}; return a number or an array of that dtype (or None for a zero)"
        )
    v_shape = core.shape_of(v)
    if v_shape != shape:
        raise ValueError(
            f"{who}: {what} has shape {v_shape}, but the value it goes with has shape {shape} "
            f"and dtype {dtype}; return an array of shape {shape} (or None for a zero)"
        )
    return _cast(v, dtype)


def _cast(v, dtype):
    """A tangent or cotangent leaf `v` of its value's dtype (cast: the real part of a complex
    one for a real value); None for a value of an integer or bool dtype (no derivative)."""
    if not _np.issubdtype(dtype, _np.inexact):
        return None
    if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
        return _np.asarray(v, dtype=dtype)[()]
    if core.dtype_of(v) != dtype:
        return fnp.astype(v, dtype)
    return v


_primitive.cast_cotangent = _cast  # a user primitive's bprop's cotangents are cast so too


def _call_impl(*leaves, call):
    return call.primal(leaves)


# --- the caller's arrays, which a user's function is run on, are never written into -------------
# Under a transform, `x *= 2` or `x.sort()` rebinds (or refuses) a traced value. But a custom
# function's primal and fwd, and a checkpointed function's first run, are run on the plain
# values under the boxes: the caller's own arrays. They are given read-only views of them
# (a view costs about a microsecond; a copy costs as much as a layer of an MLP), and code that
# writes into one is run again on private copies, so it computes what it would under `grad`.


def _read_only(v):
    """A read-only view of an array, of NumPy's class or a subclass of it (an `np.memmap` is
    the caller's file); other values as they are."""
    if not isinstance(v, _np.ndarray) or not v.flags.writeable:
        return v
    view = v.view()
    view.flags.writeable = False
    return view


def _private(v):
    return v.copy() if isinstance(v, _np.ndarray) else v


def _guarded(run, vals):
    """`run(vals)`, the plain arrays in `vals` made read-only; a run that writes into one (NumPy
    says "read-only") is repeated on copies of them, which it may write into."""
    try:
        return run([_read_only(v) for v in vals])
    except ValueError as e:
        if "read-only" not in str(e):
            raise
    return run([_private(v) for v in vals])


# --- custom_vjp and custom_jvp: what they share ---------------------------------------------------


def _resolve_kwargs(fun, args, kwargs, who):
    """Keyword arguments put in their positional places, and defaults applied, as JAX does for
    custom rules: the rules see every parameter however the function was called (a default
    left out made `bwd` return one cotangent fewer than when it was passed)."""
    code = getattr(fun, "__code__", None)
    if not kwargs and code is not None and len(args) >= code.co_argcount:
        return args  # the common call: every positional parameter given
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{who}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            f"{who}: keyword-only arguments ({', '.join(bound.kwargs)}) are not supported; "
            "make them positional parameters"
        )
    return bound.args


def _normalize_argnums(argnums, who):
    if isinstance(argnums, (int, _np.integer)) and not isinstance(argnums, bool):
        argnums = (argnums,)
    if not isinstance(argnums, (tuple, list)) or not all(
        isinstance(a, (int, _np.integer)) and not isinstance(a, bool) for a in argnums
    ):
        raise TypeError(
            f"{who}: nondiff_argnums must be a tuple of ints, got {argnums!r}; pass argument "
            "positions, e.g. nondiff_argnums=(0,)"
        )
    return tuple(operator.index(a) for a in argnums)


def _argnums_of_names(fun, names, who):
    """The positions of the parameters of `fun` named in `names` (JAX's nondiff_argnames)."""
    if isinstance(names, str):
        names = (names,)
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise TypeError(
            f"{who}: nondiff_argnames must be a tuple of parameter names, got {names!r}; "
            "e.g. nondiff_argnames=('n',), or pass positions with nondiff_argnums"
        )
    if not names:
        return ()
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is None:
        raise TypeError(
            f"{who}: nondiff_argnames={tuple(names)!r} needs the function's signature, which "
            f"cannot be read from {fun!r}; pass positions with nondiff_argnums"
        )
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for n in names:
        if n not in positional:
            raise TypeError(
                f"{who}: nondiff_argnames names {n!r}, which is not a positional parameter of "
                f"the function (its positional parameters: {', '.join(positional) or 'none'}); "
                "name one of them, or pass positions with nondiff_argnums"
            )
    return tuple(positional.index(n) for n in names)


def _fun_name(fun):
    """A function's name; fgrad's own primitives are objects with a `name`."""
    return getattr(fun, "__name__", None) or getattr(fun, "name", None) or type(fun).__name__


class _CustomFunction:
    """What custom_vjp and custom_jvp share: the function, its nondiff_argnums, the call."""

    _kind: str | None = None
    _primitive: Primitive | None = None

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        if not callable(fun):
            raise TypeError(
                f"{self._kind} expects a function, got {fun!r} of type {type(fun).__name__}; "
                f"pass the function to give a rule to, e.g. @fgrad.{self._kind} above its def"
            )
        functools.update_wrapper(self, fun)
        self.fun = fun
        argnums = _normalize_argnums(nondiff_argnums, self._kind)
        named = _argnums_of_names(fun, nondiff_argnames, self._kind)
        self.nondiff_argnums = argnums + tuple(i for i in named if i not in argnums)

    def __repr__(self):
        return f"<fgrad.{self._kind} function {_fun_name(self.fun)}>"

    def __get__(self, obj, objtype=None):
        """Used as a method, it binds like a function: `m.energy(x)` is `Model.energy(m, x)`,
        so `self` is argument 0 and nondiff_argnums count it, as in the function defined."""
        return self if obj is None else types.MethodType(self, obj)

    def _who(self):
        return f"{self._kind} function {_fun_name(self.fun)!r}"

    def _split_args(self, args):
        """(nondiff positions, diff positions) of a call with `len(args)` arguments."""
        n = len(args)
        nondiff = set()
        for a in self.nondiff_argnums:
            if not -n <= a < n:
                raise ValueError(
                    f"{self._who()}: nondiff_argnums names argument {a}, but it was called "
                    f"with {n} positional argument{'s' if n != 1 else ''}; pass every argument "
                    "named in nondiff_argnums positionally"
                )
            nondiff.add(a % n)
        return sorted(nondiff), [i for i in range(n) if i not in nondiff]

    def _has_rule(self):
        raise NotImplementedError

    @api_boundary
    def __call__(self, *args, **kwargs):
        who = self._who()
        if not self._has_rule():
            raise TypeError(
                f"{who} has no rule yet: call {_fun_name(self.fun)}.{self._how_to_define} first"
            )
        args = _resolve_kwargs(self.fun, args, kwargs, who)
        nondiff, diff = self._split_args(args)
        for i in nondiff:
            _not_recorded(args[i], i, who)
        leaves, in_tree = tree_flatten(tuple(args[i] for i in diff))
        leaves = core.live_leaves(leaves)
        if not _any_live(leaves):  # nothing to apply a rule to: the function itself
            return self.fun(*args)
        _check_differentiable(self.fun, args, diff, leaves, who)
        call = _CustomCall(self, args, nondiff, diff, in_tree)
        return call.bind(self._primitive, list(leaves))

    def _check_nondiff(self, args, nondiff, level):
        for i in nondiff:
            x = _leak(args[i], level)
            if x is not None:
                raise TypeError(
                    f"{self._who()}: argument {i} is in nondiff_argnums but is being "
                    f"differentiated (a traced value with {describe(x)}); its derivative "
                    f"would be lost. Remove {i} from nondiff_argnums to differentiate it, or "
                    "pass fgrad.stop_gradient(x) to treat it as a constant"
                )


def _is_array_leaf(v):
    """An array of any library (it has a dtype), a number, or a traced value."""
    return isinstance(v, (Box, numbers.Number)) or getattr(v, "dtype", None) is not None


def _check_differentiable(fun, args, diff, leaves, who):
    """Every leaf of the differentiable arguments is an array: a plain object there (a method's
    `self` left out of nondiff_argnums) has no tangent or cotangent to give the rules."""
    if all(_is_array_leaf(v) for v in leaves):
        return
    for i in diff:
        bad = next((v for v in tree_flatten(args[i])[0] if not _is_array_leaf(v)), None)
        if bad is not None:
            break
    try:
        name = f" ({list(inspect.signature(fun).parameters)[i]})"
    except (TypeError, ValueError, IndexError):
        name = ""
    holds = "is" if bad is args[i] else "holds"
    raise TypeError(
        f"{who}: argument {i}{name} {holds} a {type(bad).__name__}, not an array, so it cannot "
        f"be differentiated; add {i} to nondiff_argnums (the rules then get it first, as a "
        "constant), or pass arrays (a pytree of them) in its place"
    )


def _not_recorded(arg, i, who):
    """A nondiff argument holding a value `jit` records is kept in the call, which a replay
    would run with this call's value: the record is not kept (`Level.cannot_record`), and
    why is said truly (it is an argument, not a closure)."""
    for b in boxes_in(arg):
        while type(b) is Box:
            if b.level.live and b.level.stages:
                b.level.cannot_record(
                    f"{who}: argument {i} is in nondiff_argnums but holds a traced array, "
                    "which a record would keep as this call's value; remove it from "
                    "nondiff_argnums (the rule then takes it as an input), or pass a constant"
                )
                return
            b = b.value


class _CustomCall(_Call):
    """One call of a custom function: its arguments, and which of them are differentiated."""

    def __init__(self, f, args, nondiff, diff, in_tree):
        super().__init__(f._who(), in_tree)
        self.f, self.nondiff, self.diff = f, nondiff, diff
        self.diff_trees = [tree_flatten(args[i])[1] for i in diff]
        # Only the nondiff arguments are kept: the others come as the primitive's inputs, and
        # may be boxes of a level whose tape keeps this call (in a bprop).
        self.args = [None if i in diff else a for i, a in enumerate(args)]

    def full_args(self, vals):
        full = list(self.args)
        for i, a in zip(self.diff, tree_unflatten(self.in_tree, list(vals))):
            full[i] = a
        return full

    def primal(self, vals):
        out = _guarded(lambda vs: self.f.fun(*self.full_args(vs)), vals)
        return self.output_leaves(out, "the function")

    def nondiff_args(self):
        return [self.args[i] for i in self.nondiff]

    def check(self, level, rules):
        for what, fn in (("the function", self.f.fun),) + rules:
            _check_closure(fn, level, self.who, what)
        self.f._check_nondiff(self.args, self.nondiff, level)


# --- custom_vjp and custom_jvp under vmap (their batching rule) ----------------------------------
# Under vmap a custom call becomes a call of the same kind on whole batches: the function and
# its rules are vmapped over the rows (every input gets a leading batch axis), so that outer
# levels still apply the user's rule, now to all rows at once. (A checkpoint inside a vmap
# runs its function on the batch instead: see `checkpoint`.)


def _every_row(args, dims):
    n = batch_size(args, dims)
    return [every_row(a, d, n) for a, d in zip(args, dims)]


def _batched_outputs(out):
    leaves = tree_flatten(out)[0]
    return tuple(leaves), (0,) * len(leaves)


_BATCHED = (
    "a value batched by vmap",
    "under vmap the rule runs on all rows at once and could not pair that value's rows with "
    "the arguments'",
)


def _check_batched_closure(call, level, rules):
    """Refuse a function or rule that reads a value batched at `level` other than through its
    arguments: the batched call applies it to all rows at once."""
    for what, fn in (("the function", call.f.fun), *rules):
        _check_closure(fn, level, call.who, what, _BATCHED)


def _custom_batch(args, dims, call):
    f, nondiff = call.f, call.nondiff_args()
    level = call.level(args)
    if not any(lv.depth < level.depth for lv in live_levels_of(call.inputs) if not lv.batches):
        # No transform outside this vmap differentiates the call, so nobody needs its rule:
        # the function runs on the batch, rows together (it may read values of this vmap).
        boxed = [a if d is None else Box(a, level, d) for a, d in zip(args, dims)]
        outs = call.output_leaves(f.fun(*call.full_args(boxed)), "the function")
        return batching.unboxed_outputs(outs, level)
    rules = (("fwd", f.fwd), ("bwd", f.bwd)) if isinstance(f, custom_vjp) else (("jvp", f.jvp),)
    _check_batched_closure(call, level, rules)
    if any(_any_live(tree_flatten(a)[0]) for a in nondiff):
        return _by_row(call, args, dims)  # a nondiff argument that varies by row
    rows = _every_row(args, dims)

    def with_nondiff(diff_args):
        full = list(call.args)
        for i, a in zip(call.diff, diff_args):
            full[i] = a
        return full

    def fun(*diff_args):
        return vmap(lambda *d: f.fun(*with_nondiff(d)))(*diff_args)

    if isinstance(f, custom_vjp):
        batched = custom_vjp(fun)
        batched.defvjp(
            lambda *d: vmap(lambda *e: f.fwd(*with_nondiff(e)))(*d),
            lambda res, ct: vmap(lambda r, c: f.bwd(*nondiff, r, c))(res, ct),
        )
    else:
        batched = custom_jvp(fun)
        batched.defjvp(lambda ps, ts: vmap(lambda p, t: f.jvp(*nondiff, p, t))(ps, ts))
    out = batched(*tree_unflatten(call.in_tree, rows))
    leaves, tree = tree_flatten(out)
    if call.out_tree is None:  # the structure the call's own output would have had
        call.out_tree = tree
        call.out_metas = [(core.shape_of(v)[1:], core.dtype_of(v)) for v in leaves]
    return tuple(leaves), (0,) * len(leaves)


def _by_row(call, args, dims):
    prim = custom_vjp_call if isinstance(call.f, custom_vjp) else custom_jvp_call
    return batching.row_by_row(prim, args, dims, {"call": call}, batch_size(args, dims))


def _same_custom_call(params, other):
    """Whether two custom calls compute the same function (the same custom function, the same
    non-differentiated arguments); if so the new call learns the output structure the other
    one has (it will be given the other's outputs)."""
    a, b = params["call"], other["call"]
    same = (
        a.f is b.f
        and a.nondiff == b.nondiff
        and all(x is y for x, y in zip(a.nondiff_args(), b.nondiff_args()))
    )
    if same and a.out_tree is None:
        a.out_tree, a.out_metas = b.out_tree, b.out_metas
    return same


# Sparsity detection (`fgrad.sparsity`) of either call:
_CUSTOM_RULE_SPARSITY = (
    "dense",
    "a custom rule's derivative need not follow the structure of the function it replaces",
)


# --- rules whose Python reads a placeholder ---------------------------------------------------
# Forward mode transposes a bprop by running it once on placeholder cotangents, and reverse
# mode transposes a custom_jvp rule by running it once on placeholder tangents: zeros that
# stand for every value (`fgrad.forward.linear_transpose`). A rule whose Python reads such a
# value (a loop to a tolerance, `if ct is zero`, `np.asarray(ct)`) would take, for every
# value, the path it takes at zero. Then the linear map is applied to real values instead,
# one basis element at a time, and assembled in fgrad operations (so that outer transforms
# differentiate it): exact whatever the rule's Python does, at one rule call per element.
#
# The pairing is <a, b> = Re sum(a * b), under which a bprop is the transpose of the forward
# map (JAX's convention for complex values): a real output element y_k is <e_k, y>, and the
# imaginary part of a complex one is <-1j e_k, y>.


def _basis(shape, dtype, scale):
    """The one-hot arrays of `shape` and `dtype`, holding `scale` at each element in turn."""
    size = int(_np.prod(shape, dtype=_np.int64))
    for k in range(size):
        e = _np.zeros(size, dtype)
        e[k] = scale
        yield e.reshape(shape) if shape else e[0]


def _directions(dtype):
    """The scales of the basis whose pairings give a value's real part and imaginary part."""
    return (1, -1j) if dtype.kind == "c" else (1,)


def _pairing(xs, ys):
    """Re sum over i of sum(xs[i] * ys[i]), None standing for a zero; None if every term is."""
    total = None
    for x, y in zip(xs, ys):
        if x is None or y is None:
            continue
        p = fnp.sum(x * y)
        if core.dtype_of(p).kind == "c":
            p = fnp.real(p)
        total = p if total is None else total + p
    return total


def _assembled(parts, shape, dtype):
    """The array of `shape` and `dtype` whose real part has the elements `parts[0]` and whose
    imaginary part (for a complex dtype) has `parts[1]`, in order; None for all zeros."""
    arrays = []
    for elements in parts:
        if all(e is None for e in elements):
            arrays.append(None)
            continue
        zero = _np.zeros((), _np.finfo(dtype).dtype)
        elements = [zero if e is None else e for e in elements]
        arrays.append(elements[0] if not shape else fnp.reshape(fnp.stack(elements), shape))
    if all(a is None for a in arrays):
        return None
    value = arrays[0] if arrays[0] is not None else _np.zeros(shape, _np.finfo(dtype).dtype)
    if len(arrays) == 2 and arrays[1] is not None:
        value = value + 1j * arrays[1]
    return value if core.dtype_of(value) == dtype else fnp.astype(value, dtype)


def _tangent_by_pulls(pull, outputs, tangents):
    """J t from a linear bprop `pull` (cotangent per output -> cotangent per input) applied to
    real cotangents: element k of output j is <pull(e_k at j), t>."""
    t_out = []
    for j, a in enumerate(outputs):
        if not core.is_differentiable_value(a):
            t_out.append(None)
            continue
        shape, dtype = core.shape_of(a), core.dtype_of(a)
        parts = []
        for scale in _directions(dtype):
            elements = []
            for e in _basis(shape, dtype, scale):
                cts = [None] * len(outputs)
                cts[j] = e
                elements.append(_pairing(pull(cts), tangents))
            parts.append(elements)
        t_out.append(_assembled(parts, shape, dtype))
    return t_out


forward.tangent_by_pulls = _tangent_by_pulls


# --- custom_vjp -----------------------------------------------------------------------------------


def _no_level():
    return None


def _custom_vjp_fprop(*vals, call):
    """The reverse rule of a custom_vjp call: fwd gives the value and the residuals, bwd the
    cotangents (forward mode transposes it)."""
    level = call.level(vals)
    call.check(level, (("fwd", call.f.fwd), ("bwd", call.f.bwd)))
    return _fwd_and_bprop(call, vals, level)


def _fwd_and_bprop(call, vals, level):
    """fwd's output leaves and the bprop from bwd, at `vals`; `level` (the level applying the
    rule, whose values must not leak into what the rules return) is None where the caller
    checked already."""
    f, who = call.f, call.who
    pair = _guarded(lambda vs: f.fwd(*call.full_args(vs)), vals)
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
        raise TypeError(
            f"{who}: fwd must return a pair (output, residuals), got "
            f"{type(pair).__name__}"
            + (f" of length {len(pair)}" if isinstance(pair, (tuple, list)) else "")
        )
    out, res = pair
    if level is not None:
        _check_no_leak(res, level, who, "fwd's residuals")
        _check_no_leak(out, level, who, "its output")
    outs = call.output_leaves(out, "fwd")
    nondiff_args, diff = call.nondiff_args(), call.diff
    # The bprop keeps only structures and metadata of the differentiated arguments, never
    # the arguments: they are boxes of this level, and the level's tape keeps the bprop.
    diff_trees = call.diff_trees
    metas = [_meta(v) for v in vals]
    level_ref = weakref.ref(level) if level is not None else _no_level

    def bprop(cts):
        # The cotangent may be shared with another operand's (add's bprop hands both the
        # same array): a bwd that works on it in place gets a copy of its own
        in_cts = _guarded(lambda cs: f.bwd(*nondiff_args, res, call.output_cotangent(cs)), cts)
        if not isinstance(in_cts, (tuple, list)) or len(in_cts) != len(diff):
            got = (
                f"a {type(in_cts).__name__} of length {len(in_cts)}"
                if isinstance(in_cts, (tuple, list))
                else f"{type(in_cts).__name__}"
            )
            raise TypeError(
                f"{who}: bwd must return a tuple with one cotangent per differentiable "
                f"argument ({len(diff)}: arguments {diff}), got {got}; return "
                "None for an argument with a zero cotangent"
            )
        flat = []
        for i, c, tree in zip(diff, in_cts, diff_trees):
            flat.extend(_leaves_like(c, tree, who, f"bwd's cotangent of argument {i}"))
        flat = [
            _conform(c, m, who, f"bwd's cotangent (leaf {k} of the arguments)")
            for k, (c, m) in enumerate(zip(flat, metas))
        ]
        lv = level_ref()
        if lv is not None and lv.live:  # forward mode transposing the bprop: the cotangent's
            allowed = next((c.level for c in cts if type(c) is Box), None)  # level is allowed
            _check_no_leak(flat, lv, who, "the cotangents its bprop returned", allowed)
            if isinstance(allowed, PlaceholderLevel):  # bwd ran on a zero placeholder ct
                _check_linear(flat, who, "bwd's cotangent of the arguments", _VJP_LINEAR)
        return flat

    return outs, bprop


# what `_check_linear` says of each kind of rule: what was zero, and what to do
_JVP_LINEAR = (
    "tangents",
    "Reverse mode transposes the tangent part, which must be linear in the tangents: "
    "multiply by them (`fnp.cos(x) * t`, not `fnp.cos(x)`), and add no constant",
)
_VJP_LINEAR = (
    "ct",
    "Forward mode transposes bwd, which must be linear in ct: multiply by it "
    "(`ct * fnp.cos(x)`, not `fnp.cos(x)`), and add no constant",
)

custom_vjp_call = Primitive(
    "custom_vjp_call", _call_impl, fprop=_custom_vjp_fprop, multiple_results=True
)


class custom_vjp(_CustomFunction):
    """A function with your reverse rule, JAX's `jax.custom_vjp`.

    Parameters
    ----------
    fun : callable
        The function; outside any transform, calling the result runs `fun` itself.
    nondiff_argnums : tuple of int, default ()
        Arguments that are not differentiated (functions, flags, sizes): passed to `bwd` first,
        they get no cotangent.
    nondiff_argnames : tuple of str, default ()
        The same by parameter name: their positions in `fun`'s signature are added to
        `nondiff_argnums` (JAX's keyword; a name that is not a positional parameter is
        refused).

    Notes
    -----
    `f.defvjp(fwd, bwd)` sets the rule: `fwd(*args)` returns `(out, residuals)`, and
    `bwd(*nondiff_args, residuals, ct)` returns a tuple with one cotangent per differentiable
    argument (a pytree shaped like it; None for a zero). Arguments, outputs, residuals and
    cotangents may be pytrees.

    Under a transform `fwd` gives the value and `bwd` the reverse rule. Forward mode (`jvp`,
    `jacfwd`, `hessian`) transposes `bwd`, which must be linear in `ct`: once, on a placeholder
    cotangent, or, if `bwd` reads the cotangent's value (a loop to a tolerance, a zero
    shortcut, `np.asarray(ct)`), once per output element on real cotangents. Written in
    `fgrad.numpy` operations, `fwd` and `bwd` are differentiated again for higher orders. Check
    the rule with `fgrad.test_util.check_rule`.

    The cotangents `bwd` returns are handed on as they are, so a gradient may be one of them.
    One that is a residual, or an array kept elsewhere (a module's constant), is that array:
    updating the gradient in place (`g *= 0.5`) changes it, and so the next call of the
    pullback. fgrad does not copy them (JAX's arrays cannot be written into, so JAX code
    never needs to): a rule linear in `ct` computes new arrays from it, and a zero is None.
    Return `res.copy()` if you mean to hand out an array you keep.

    Defined in a class, it is a method and binds as a function does: `m.f(x)` is
    `Model.f(m, x)` under every transform (JAX raises). So `self` is argument 0 of `fwd`,
    `bwd` and `nondiff_argnums`: name it there (`nondiff_argnums=(0,)`, the rules then get it
    first) unless `self` is a pytree of arrays to differentiate, whose cotangent `bwd` returns
    first. A plain object left out is refused, naming it.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> @fgrad.custom_vjp
    ... def f(x, y):
    ...     return fnp.sin(x) * y
    >>> def f_fwd(x, y):
    ...     return f(x, y), (fnp.cos(x), fnp.sin(x), y)
    >>> def f_bwd(res, ct):
    ...     cos_x, sin_x, y = res
    ...     return ct * cos_x * y, ct * sin_x
    >>> f.defvjp(f_fwd, f_bwd)
    >>> print(fgrad.grad(f, argnums=(0, 1))(0.0, 2.0))
    (np.float64(2.0), np.float64(0.0))
    >>> print(fgrad.jvp(f, (0.0, 2.0), (1.0, 0.0)))  # forward mode, from bwd
    (np.float64(0.0), np.float64(2.0))
    """

    _kind = "custom_vjp"
    _primitive = custom_vjp_call
    fwd: Callable[..., tuple[Any, Any]] | None
    bwd: Callable[..., tuple[Any, ...]] | None

    def __init__(
        self,
        fun: Callable[..., Any],
        nondiff_argnums: int | Sequence[int] = (),
        nondiff_argnames: str | Sequence[str] = (),
    ) -> None:
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = self.bwd = None

    def defvjp(
        self, fwd: Callable[..., tuple[Any, Any]], bwd: Callable[..., tuple[Any, ...]]
    ) -> None:
        """Set the rule: `fwd(*args) -> (out, residuals)` and
        `bwd(*nondiff_args, residuals, ct) -> (cotangent per differentiable argument)`."""
        for what, fn in (("fwd", fwd), ("bwd", bwd)):
            if not callable(fn):
                raise TypeError(
                    f"{self._who()}: defvjp's {what} must be a function, got {fn!r}; pass "
                    "fwd(*args) -> (out, residuals) and bwd(residuals, ct) -> cotangents"
                )
        self.fwd, self.bwd = fwd, bwd

    _how_to_define = "defvjp(fwd, bwd)"

    def _has_rule(self):
        return self.fwd is not None


# custom_vjp's rules of the other transforms: its batching rule is `_custom_batch` (shared
# with custom_jvp, above). A custom call's Taylor coefficients come from its rule, by the
# general rule of `fgrad.taylor` (y' = J(x) x' solved order by order): custom_jvp's J x' is the
# user's jvp rule, custom_vjp's is bwd transposed. (A checkpointed function runs on the series
# itself, remembering nothing being a reverse-mode matter: see `checkpoint`'s rules.)


@taylor.declared("derived")
def _custom_vjp_taylor(primals, series, call):
    own = getattr(call.f, "taylor_rule", None)  # a custom function fgrad defines may carry its
    if own is not None:  # own rule (`fgrad.scipy.integrate`'s solve); None: it does not apply
        out = own(call, primals, series)
        if out is not None:
            return out
    level = call.level(primals)
    call.check(level, (("fwd", call.f.fwd), ("bwd", call.f.bwd)))

    def tangent(ts, ans, xs):
        outs, bprop = _fwd_and_bprop(call, xs, None)
        return transpose_bprop(bprop, outs, ts, multiple_results=True)

    return taylor.general_rule(custom_vjp_call, primals, series, {"call": call}, tangent)


taylor.same_params[custom_vjp_call] = _same_custom_call
register_rules(
    custom_vjp_call,
    batch=_custom_batch,
    taylor=_custom_vjp_taylor,
    sparsity=_CUSTOM_RULE_SPARSITY,
)


# --- custom_jvp -----------------------------------------------------------------------------------


def _apply_jvp_rule(call, vals, tangents, level):
    f, who = call.f, call.who
    call.check(level, (("its jvp rule", f.jvp),))
    n = len(vals)

    def run(arrays):  # the rule on the primals and tangents, the caller's arrays guarded
        primals = tuple(tree_unflatten(call.in_tree, list(arrays[:n])))
        return f.jvp(*call.nondiff_args(), primals, tuple(tree_unflatten(call.in_tree, arrays[n:])))

    pair = _guarded(run, [*vals, *tangents])
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
        raise TypeError(
            f"{who}: the jvp rule must return a pair (primal_out, tangent_out), got "
            f"{type(pair).__name__}"
        )
    return pair


def _tangent_leaves(call, t_out, p_leaves, p_tree):
    """The rule's tangent_out as leaves shaped and typed like the output leaves."""
    what = "the jvp rule's tangent_out"
    return [
        _conform(t, _meta(p), call.who, f"{what} (leaf {k})")
        for k, (t, p) in enumerate(zip(_leaves_like(t_out, p_tree, call.who, what), p_leaves))
    ]


def _check_primal_out(call, p_leaves, p_tree, f_leaves, f_tree):
    """Refuse a jvp rule whose primal_out is not like the function's output (structure, and
    each leaf's shape and dtype; a Python number's dtype is NumPy's weak one, not checked):
    forward mode keeps the function's value and reverse mode the rule's, so the two would
    disagree, and a tangent_out shaped like the function's output would be blamed for it."""
    who, what = call.who, "the jvp rule's primal_out"
    if p_tree != f_tree:
        raise TypeError(
            f"{who}: {what} has structure {p_tree}, but the function returns {f_tree}; "
            "return the function's value as primal_out (and tangent_out shaped like it)"
        )
    for k, (p, o) in enumerate(zip(p_leaves, f_leaves)):
        weak = type(core.innermost(p)) in (bool, int, float, complex)
        if core.shape_of(p) != core.shape_of(o) or (
            not weak and core.dtype_of(p) != core.dtype_of(o)
        ):
            raise ValueError(
                f"{who}: {what} (leaf {k}) has {describe(p)}, but the function's output has "
                f"{describe(o)}; return the function's value as primal_out (and tangent_out "
                "shaped like it)"
            )


def _check_primal_out_once(call, vals, p_leaves, p_tree):
    """Reverse mode keeps the rule's primal_out, and never runs the function: its primal_out
    is checked against the function's output (`_check_primal_out`) once per signature of the
    inputs, by one run of the function on their plain values (a wrong primal_out was returned
    by vjp and value_and_grad, silently, where jvp refuses it). Not under `vmap` (the plain
    values hold every row), nor for a function that cannot run (one evaluated through its
    rule only)."""
    plain = [core.innermost(v) for v in vals]
    if any(core.holds_batch(v) for v in vals):
        return
    key = (p_tree, tuple((core.shape_of(v), core.dtype_of(v)) for v in plain))
    checked = call.f.primal_out_checked
    if key in checked:
        return
    try:
        out = _guarded(lambda vs: call.f.fun(*call.full_args(vs)), plain)
    except Exception:
        checked.add(key)
        return
    _check_primal_out(call, p_leaves, p_tree, *tree_flatten(out))
    checked.add(key)


def _same_array_meta(p_out, ans):
    """Whether p_out is one NumPy array with the shape and dtype of the one output leaf."""
    if type(p_out) is not _np.ndarray or len(ans) != 1 or type(ans[0]) is not _np.ndarray:
        return False
    return p_out.shape == ans[0].shape and p_out.dtype == ans[0].dtype


def _tangent_leaves_of_rule(call, vals, t_out, p_leaves, p_tree):
    """`_tangent_leaves` in reverse mode, where the function is not run: when tangent_out
    does not fit primal_out, the function is run (a failure path) to tell which is wrong."""
    try:
        return _tangent_leaves(call, t_out, p_leaves, p_tree)
    except (TypeError, ValueError) as error:
        try:
            out = _guarded(lambda vs: call.f.fun(*call.full_args(vs)), vals)
        except Exception:
            raise error from None  # the function fails here: the tangent_out message stands
        _check_primal_out(call, p_leaves, p_tree, *tree_flatten(out))
        raise


def _custom_jvp_rule(tangents, ans, *vals, call):
    """Forward mode of a custom_jvp call: the value is the function's, the tangent the rule's
    (whose primal_out must be like the function's output: reverse mode keeps it)."""
    level = call.level(vals)
    tangents = [zeros_like_value(v) if t is None else t for t, v in zip(tangents, vals)]
    p_out, t_out = _apply_jvp_rule(call, vals, tangents, level)
    if not _same_array_meta(p_out, ans):  # (the common case without a flatten: 2 us of 47)
        _check_primal_out(call, *tree_flatten(p_out), ans, call.out_tree)
    _check_no_leak(ans, level, call.who, "its output")
    t_leaves = _tangent_leaves(call, t_out, ans, call.out_tree)
    _check_no_leak(t_leaves, level, call.who, "the tangent of its output")
    return t_leaves


def _custom_jvp_fprop(*vals, call):
    """Reverse mode of a custom_jvp call transposes the rule's tangent part: it is traced on a
    level of its own with the tangents as inputs, placeholders whose value (zero) is never used
    since the map is linear (`fgrad.forward.linear_transpose`), and the backward pass of that
    level maps an output cotangent to the tangents' cotangents. A rule whose Python reads its
    tangents' values is applied to real tangents instead (`_custom_jvp_by_columns`)."""
    level = call.level(vals)
    own = [holds_box_of(x, level) for x in call.inputs]
    with PlaceholderLevel() as tangent_level:
        tangents = [
            tangent_level.new_input(zeros_like_value(v)) if o else zeros_like_value(v)
            for v, o in zip(vals, own)
        ]
        try:
            p_out, t_out = _apply_jvp_rule(call, vals, tangents, level)
            p_leaves, p_tree = tree_flatten(p_out)
            t_leaves = _tangent_leaves(call, t_out, p_leaves, p_tree)  # a cast is transposed too
        except Exception:  # a read of a placeholder, or a failure on one
            tangent_level.was_read = True
    if tangent_level.was_read:
        return _custom_jvp_by_columns(call, vals, own, level)
    p_leaves = [core._live_value(p) for p in p_leaves]  # without the tangents' level
    _check_primal_out_once(call, vals, p_leaves, p_tree)
    outs = call.output_leaves(tree_unflatten(p_tree, p_leaves), "the jvp rule's primal_out")
    _check_no_leak(outs, level, call.who, "the jvp rule's primal_out")
    _check_no_leak(t_leaves, level, call.who, "the jvp rule's tangent_out")
    _check_linear(t_leaves, call.who, "the jvp rule's tangent_out", _JVP_LINEAR)
    out_positions = [
        t.aux if type(t) is Box and t.level is tangent_level else None for t in t_leaves
    ]
    in_positions = [t.aux if type(t) is Box else None for t in tangents]
    del tangents, t_out, t_leaves, p_out, p_leaves  # the bprop keeps the tape, not the values

    def bprop(cts):
        seeds = [(n, c) for n, c in zip(out_positions, cts) if n is not None and c is not None]
        if not seeds:
            return [None] * len(in_positions)
        summed = backward_pass(tangent_level, seeds)
        return [None if n is None else summed[n] for n in in_positions]

    return outs, bprop


def _check_linear(leaves, who, what, fix):
    """Refuse a rule whose output, run on placeholders (zero tangents or cotangents), is not
    zero: a linear map gives exactly zero there (0 * t is 0 for every finite t), so a nonzero
    entry is a part that does not scale with the tangents (`cos(x)` where `cos(x) * t` is
    meant). Transposing the rule would drop that part silently, and the two modes would
    disagree. (A nan or inf is no evidence: `t / x` at x = 0 gives nan for a zero t.)"""
    for k, leaf in enumerate(leaves):
        value = core.innermost(leaf)  # the rule's output at zero, under every level
        if leaf is None or not isinstance(value, (_np.ndarray, _np.generic, float, complex)):
            continue  # (a Dask array is not computed for a check)
        a = _np.asarray(value)
        if a.dtype.kind not in "fc":
            continue
        nonzero = _np.isfinite(a) & (a != 0)
        if nonzero.any():
            raise NotLinearError(
                f"{who}: {what} (leaf {k}, {describe(leaf)}) is not linear: for zero "
                f"{fix[0]} it is {a[nonzero].flat[0]!r}, not 0. {fix[1]}"
            )


def _custom_jvp_by_columns(call, vals, own, level):
    """The reverse rule of a custom_jvp call from its jvp rule applied to real tangents: the
    column J e_m for each element m of each input this level differentiates (and J (-1j e_m)
    for a complex one). Cotangent element m of input i is then <ct, J e_m>; see "rules whose
    Python reads a placeholder". The columns are the bprop's residuals."""
    zeros = [zeros_like_value(v) for v in vals]
    metas = [_meta(v) for v in vals]
    columns, first = [], None
    for i in (i for i, o in enumerate(own) if o and metas[i][1].kind in "fc"):
        shape, dtype = metas[i]
        per_scale = []
        for scale in _directions(dtype):
            cols = []
            for e in _basis(shape, dtype, scale):
                ts = list(zeros)
                ts[i] = e
                p_out, t_out = _apply_jvp_rule(call, vals, ts, level)
                p_leaves, p_tree = tree_flatten(p_out)
                first = first or (p_leaves, p_tree)
                cols.append(_tangent_leaves_of_rule(call, vals, t_out, p_leaves, p_tree))
            per_scale.append(cols)
        columns.append((i, per_scale))
    if first is None:  # no element to differentiate: the rule for the value only
        first = tree_flatten(_apply_jvp_rule(call, vals, zeros, level)[0])
    outs = call.output_leaves(tree_unflatten(first[1], first[0]), "the jvp rule's primal_out")
    _check_no_leak(outs, level, call.who, "the jvp rule's primal_out")
    for _, per_scale in columns:
        for cols in per_scale:
            _check_no_leak(cols, level, call.who, "the jvp rule's tangent_out")

    def bprop(cts):
        in_cts = [None] * len(vals)
        for i, per_scale in columns:
            parts = [[_pairing(cts, col) for col in cols] for cols in per_scale]
            in_cts[i] = _assembled(parts, *metas[i])
        return in_cts

    return outs, bprop


custom_jvp_call = Primitive(
    "custom_jvp_call",
    _call_impl,
    fprop=_custom_jvp_fprop,
    jvp=_custom_jvp_rule,
    multiple_results=True,
)


class custom_jvp(_CustomFunction):
    """A function with your forward rule, JAX's `jax.custom_jvp`.

    Parameters
    ----------
    fun : callable
        The function; outside any transform, calling the result runs `fun` itself.
    nondiff_argnums : tuple of int, default ()
        Arguments that are not differentiated: passed to the rule first.
    nondiff_argnames : tuple of str, default ()
        The same by parameter name, added to `nondiff_argnums` by `fun`'s signature.

    Notes
    -----
    `f.defjvp(rule)` sets the rule (and returns it, so it can decorate the rule):
    `rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`, where `primals` and
    `tangents` are tuples of the differentiable arguments and their tangents (zeros for
    arguments with none). `tangent_out` must be linear in `tangents`: reverse mode transposes
    it (on placeholder tangents, or, if the rule reads their values, column by column on real
    ones). `f.defjvps(*rules)` gives one rule per argument, `rule_i(t_i, ans, *args)`, summed. In
    forward mode `fun` gives the value, in reverse mode the rule's `primal_out` does (they must
    agree). As with `custom_vjp`'s `bwd`, a `tangent_out` that is an array the rule keeps (a
    module's constant) is handed out as it is: return a copy if the caller may update it.
    Defined in a class, it binds `self` as a method does, as argument 0 (see `custom_vjp`).

    Examples
    --------
    A norm whose derivative at 0 is 0 (the quotient x / norm(x) is 0 / 0 there):

    >>> import fgrad, fgrad.numpy as fnp
    >>> @fgrad.custom_jvp
    ... def norm(x):
    ...     return fnp.sqrt(fnp.sum(x * x))
    >>> @norm.defjvp
    ... def norm_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     n = norm(x)
    ...     return n, fnp.sum(x * t) / fnp.where(n == 0, 1.0, n)
    >>> print(fgrad.grad(norm)(fnp.array([3.0, 4.0])), fgrad.grad(norm)(fnp.zeros(2)))
    [0.6 0.8] [0. 0.]
    """

    _kind = "custom_jvp"
    _primitive = custom_jvp_call
    jvp: Callable[..., tuple[Any, Any]] | None

    def __init__(
        self,
        fun: Callable[..., Any],
        nondiff_argnums: int | Sequence[int] = (),
        nondiff_argnames: str | Sequence[str] = (),
    ) -> None:
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        # the signatures of inputs whose rule's primal_out reverse mode has checked
        self.primal_out_checked: set = set()

    def defjvp(self, jvp: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
        """Set the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
        if not callable(jvp):
            raise TypeError(
                f"{self._who()}: defjvp expects a function, got {jvp!r}; pass "
                "rule(primals, tangents) -> (primal_out, tangent_out)"
            )
        self.jvp = jvp
        return jvp

    def defjvps(self, *rules: Callable[..., Any] | None) -> None:
        """One rule per argument, `rule_i(t_i, ans, *args) -> tangent of ans` (None for an
        argument with no derivative); the tangent of the output is their sum.

        >>> import fgrad, fgrad.numpy as fnp
        >>> f = fgrad.custom_jvp(lambda x, y: x * y)
        >>> f.defjvps(lambda tx, ans, x, y: tx * y, lambda ty, ans, x, y: x * ty)
        >>> float(fgrad.grad(f, argnums=1)(2.0, 3.0))
        2.0
        """
        if self.nondiff_argnums:
            raise TypeError(
                f"{self._who()}: defjvps cannot be used with nondiff_argnums; use defjvp"
            )
        fun, who = self.fun, self._who()

        def rule(primals, tangents):
            if len(rules) != len(primals):
                raise TypeError(
                    f"{who}: defjvps was given {len(rules)} rule(s), but the function was "
                    f"called with {len(primals)} argument(s); give one rule per argument "
                    "(None for one with no derivative)"
                )
            ans = fun(*primals)
            t_out = None
            for r, t in zip(rules, tangents):
                if r is not None:
                    ti = r(t, ans, *primals)
                    t_out = ti if t_out is None else tree_map(operator.add, t_out, ti)
            return ans, t_out

        self.defjvp(rule)

    _how_to_define = "defjvp(rule)"

    def _has_rule(self):
        return self.jvp is not None


@taylor.declared("derived")
def _custom_jvp_taylor(primals, series, call):
    """The general rule with the user's jvp rule as J x'. Along the path the tangent it is
    given is a series whose value (its first coefficient) may be zero while the higher ones
    are not, so a rule whose Python reads its tangents' values is applied to real tangents
    instead, column by column (`_jvp_by_columns`)."""
    level = call.level(primals)

    def tangent(ts, ans, xs):
        ts = [zeros_like_value(x) if t is None else t for t, x in zip(ts, xs)]
        with _WatchLevel() as watch:
            try:
                watched = [Box(t, watch, None) for t in ts]
                _, t_out = _apply_jvp_rule(call, xs, watched, level)
                t_leaves = _tangent_leaves(call, t_out, ans, call.out_tree)
            except Exception:  # a read of a watched tangent, or a failure on one
                watch.was_read = True
        if watch.was_read:
            return _jvp_by_columns(call, xs, ts, ans, level)
        return [core._live_value(t) for t in t_leaves]  # without the watch's boxes

    return taylor.general_rule(custom_jvp_call, primals, series, {"call": call}, tangent)


class _ComputeLevel(core.Level):
    """Runs code on real values as boxes, which have the methods of traced values (`x.at`): a
    primitive applied to this level's boxes is applied to their values and its result boxed
    again (`aux` is None)."""

    __slots__ = ()

    def process(self, prim, args, params):
        vals = [a.value if type(a) is Box and a.level is self else a for a in args]
        ans = bind(prim, vals, params)
        if prim.multiple_results:
            return tuple(Box(a, self, None) for a in ans)
        return Box(ans, self, None)


class _WatchLevel(_ComputeLevel):
    """Runs code on real values and notices whether it reads them (a `_ComputeLevel` whose
    boxes' values must not be read): reading a box's value sets `was_read` and raises
    `PlaceholderRead`, as a placeholder's."""

    __slots__ = ("was_read",)

    reads_values = True

    def __init__(self):
        super().__init__()
        self.was_read = False

    def read(self, box):
        self.was_read = True
        raise PlaceholderRead(f"the value of a watched tangent at {self!r} was read")


def _jvp_by_columns(call, xs, ts, ans, level):
    """J t from the jvp rule applied to real tangents, one input element at a time: J t is
    the sum over elements m of t_m J e_m; for a complex input, of Re t_m J e_m and
    -Im t_m J (-1j e_m)."""
    zeros = [zeros_like_value(x) for x in xs]
    total = [None] * len(ans)
    for i, (x, t) in enumerate(zip(xs, ts)):
        shape, dtype = _meta(x)
        if dtype.kind not in "fc":
            continue
        for scale in _directions(dtype):
            if scale == 1:
                weights = fnp.real(t) if dtype.kind == "c" else t
            else:  # J (-1j e_m) carries the imaginary part with a minus sign: -Im t_m
                weights = -fnp.imag(t)
            weights = fnp.reshape(weights, (-1,))
            cols = []
            for e in _basis(shape, dtype, scale):
                e_ts = list(zeros)
                e_ts[i] = e
                _, t_out = _apply_jvp_rule(call, xs, e_ts, level)
                cols.append(_tangent_leaves(call, t_out, ans, call.out_tree))
            for j, a in enumerate(ans):
                col_j = [c[j] for c in cols]
                if not col_j or all(c is None for c in col_j):
                    continue
                z = _zeros(_meta(a))
                stacked = fnp.stack([z if c is None else c for c in col_j])
                term = fnp.tensordot(fnp.astype(weights, _meta(a)[1]), stacked, axes=1)
                total[j] = term if total[j] is None else total[j] + term
    return total


taylor.same_params[custom_jvp_call] = _same_custom_call
# The user's forward rule (reverse mode transposes it): no derivative fgrad writes twice.
register_rules(
    custom_jvp_call,
    batch=_custom_batch,
    taylor=_custom_jvp_taylor,
    forward="derived",
    sparsity=_CUSTOM_RULE_SPARSITY,
)


# --- checkpoint -----------------------------------------------------------------------------------


class _CheckpointCall(_Call):
    """One call of a checkpointed function. Its primitive's inputs are the leaves of the
    arguments (`n_args` of them) followed by the boxes the function reads without being given
    them (`captured`, found by running it once with every transform suspended)."""

    def __init__(self, fun, in_tree, who, prevent_cse=True):
        super().__init__(who, in_tree)
        self.fun = fun
        self.prevent_cse = prevent_cse
        self.n_args = in_tree.num_leaves
        self.captured = []
        self.aliases = []  # per captured box, the boxes read as it (`core.replacements`)
        self.cache = None  # (the plain inputs, the outputs) of that first run

    def discover(self, leaves):
        """Run the function once on the plain values, every live level suspended: the value,
        and the boxes it reads (its free variables), kept in `captured`."""
        plain = [core.constant_of(x) for x in leaves]  # a batched value keeps its rows
        with core.capturing() as capture:
            outs = self.output_leaves(self.call(plain), "the function")
        self.captured, self.aliases = capture.boxes, capture.aliases
        _tell_recorders_of_closures(self.fun, "checkpoint")
        self.cache = (plain + [core.constant_of(c) for c in self.captured], outs)
        return outs

    def call(self, vals):
        given = vals[: self.n_args]
        out_leaves, out_tree = _guarded(self._call_leaves, given)
        # an argument returned untouched is the caller's array, not the read-only view of it
        out_leaves = [_unviewed(o, given) for o in out_leaves]
        # a free variable returned untouched is read as a primitive's argument would be
        return tree_unflatten(out_tree, [core._live_value(o) for o in out_leaves])

    def _call_leaves(self, leaves):
        args, kwargs = tree_unflatten(self.in_tree, list(leaves))
        try:
            return tree_flatten(self.fun(*args, **kwargs))
        except AttributeError as e:
            if not (e.name == "at" and isinstance(e.obj, _np.ndarray)):
                raise
        # `x.at[...]`, which a traced value has and a plain array lacks: run again with the
        # plain arrays as boxes of a level that only computes
        with _ComputeLevel() as level:
            boxed = [Box(v, level, None) if isinstance(v, _np.ndarray) else v for v in leaves]
            args, kwargs = tree_unflatten(self.in_tree, boxed)
            out_leaves, out_tree = tree_flatten(self.fun(*args, **kwargs))
        return [o.value if type(o) is Box and o.level is level else o for o in out_leaves], out_tree

    def run(self, vals, suspend):
        """The output leaves for the inputs `vals`: the arguments' leaves, then a value for
        each captured box, which the function reads in its place."""
        replaced = core.replacements(self.captured, self.aliases, vals[self.n_args :])
        with core.replacing(replaced, suspend):
            return self.output_leaves(self.call(vals), "the function")

    def primal(self, vals):
        if self.cache is not None:
            plain, outs = self.cache
            if len(plain) == len(vals) and all(v is p for v, p in zip(vals, plain)):
                self.cache = None  # the first run's outputs are given out once
                return outs
        # (a vmap stays live: the function may read its rows from a closure, as it did when
        # first run, and must give each row's value as then)
        return self.run(vals, [lv for lv in core.live_levels() if not lv.batches])

    def function_of(self, vals, own, suspend):
        """The function of the inputs at positions `own`, the other inputs fixed at `vals`."""

        def fun_of_own(*own_vals):
            full = list(vals)
            for i, v in zip(own, own_vals):
                full[i] = v
            return self.run(full, suspend)

        fun_of_own.__name__ = self.who
        return fun_of_own


def _unviewed(o, given):
    """`o`, or the array of `given` it is the whole read-only view of (`_read_only`'s)."""
    if not isinstance(o, _np.ndarray) or o.flags.writeable or o.base is None:
        return o
    for v in given:
        if (
            isinstance(v, _np.ndarray)
            and (o.base is v or o.base is v.base)
            and (o.shape, o.strides, o.dtype) == (v.shape, v.strides, v.dtype)
            and o.ctypes.data == v.ctypes.data
        ):
            return v
    return o


def _checkpoint_vjp(wanted, ans, *vals, call):
    """The bprop runs the function again, under vjp, to get its intermediates."""
    own = [i for i, w in enumerate(wanted) if w]
    own_vals = [vals[i] for i in own]

    def bprop(cts):
        # A fresh vjp per backward pass, pulled once: it may free each recomputed layer's
        # residuals as soon as the pass is through with it (consume=True).
        inputs = _apart_from_the_forward_pass(vals) if call.prevent_cse else vals
        fun_of_own = call.function_of(inputs, own, ())
        _, in_tree = tree_flatten(tuple(own_vals))
        _, _, pull, _ = _vjp_flat(
            lambda xs: tuple(fun_of_own(*xs)),
            [inputs[i] for i in own],
            in_tree,
            False,
            call.who,
            consume=True,
        )
        in_cts = [None] * len(vals)
        for i, c in zip(own, pull(list(cts))):
            in_cts[i] = c
        return in_cts

    return bprop


def _apart_from_the_forward_pass(vals):
    """`vals`, or under a `jit` recording a copy of each traced float input: a record merges
    an operation repeated on the same inputs into the first (`jitting._without_repeats`), so
    the recomputation, made of the forward pass's operations on the forward pass's inputs,
    was merged into the forward pass, whose intermediates then lived until the backward pass:
    the replay of a gradient through 5 checkpointed blocks peaked at 28 MiB, eager's at 9.5.
    On copies (new inputs of the record: `x * 1.0`, x's bits for every real float) it stays a
    computation of its own, as with JAX's `prevent_cse`. Eagerly nothing is merged, and
    nothing copied. (A complex input is not copied: `z * 1.0` is not z where z holds an inf;
    merged, the values are the same, only held longer.)"""
    if not any(level.stages for level in live_levels_of(vals)):
        return vals
    return [v * 1.0 if type(v) is Box and core.dtype_of(v).kind == "f" else v for v in vals]


def _checkpoint_jvp(tangents, ans, *vals, call):
    """The function's jvp: it runs again with the inputs this level differentiates as its
    arguments (this level and the ones inside it suspended)."""
    level = call.level(vals)
    suspend = [lv for lv in core.live_levels() if lv.depth >= level.depth]
    # every input a transform traces, with a structural zero tangent where this level has
    # none (as `jvp` boxes them): the function sees traced values where it sees them without
    # the checkpoint (`x.dot(y)` with x a plain array met a traced y under jacfwd's pass for
    # y, and failed in NumPy's ndarray.dot; probe FE #5)
    own = [
        i for i, (t, x) in enumerate(zip(tangents, call.inputs)) if t is not None or type(x) is Box
    ]
    fun_of_own = call.function_of(vals, own, suspend)
    own_vals = [vals[i] for i in own]
    _, t_out, _, _ = _jvp_flat(
        lambda xs: tuple(fun_of_own(*xs)),
        own_vals,
        tree_flatten(tuple(own_vals))[1],
        [tangents[i] for i in own],
        who=call.who,
    )
    return t_out


checkpoint_p = Primitive(
    "checkpoint", _call_impl, vjp=_checkpoint_vjp, jvp=_checkpoint_jvp, multiple_results=True
)


def checkpoint(
    fun: Callable[..., Any],
    *,
    prevent_cse: bool = True,
    policy: Callable[..., Any] | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable[..., Any]:
    """`fun`, computed without storing its intermediates for the backward pass (also `remat`).

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays. It may read values being differentiated
        without being given them (closure cells, globals, default arguments, `self`): they are
        differentiated too.
    prevent_cse : bool, default True
        As JAX's: under `jit`, keep the recomputation apart from the forward pass. A record
        computes an operation repeated on the same inputs once, which would take the
        recomputation for the forward pass and keep its intermediates until the backward
        pass (the memory the checkpoint saves, lost). False lets it (for a checkpoint under
        `jit` whose point is not memory).
    policy : None
        JAX's saving policies are not implemented: nothing computed inside `fun` is kept.
        Split `fun` into smaller checkpointed functions to keep what lies between them.
    static_argnums : int or sequence of int, default ()
        As JAX's: the positions of arguments that are Python values (a flag, a count, a
        name), never traced. Every argument that is not an array is already passed to `fun`
        as it is, so these positions are only checked: a traced value there is refused.

    Returns
    -------
    callable
        A function with `fun`'s values and, at every order, its gradients.

    Notes
    -----
    The bprop runs `fun` again, under `vjp`, to get the intermediates: one more evaluation of
    `fun` traded for their memory. Notebook 05 measures the peak memory against depth and the
    number of segments.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> def block(w, h):
    ...     for _ in range(10):
    ...         h = fnp.tanh(w @ h)
    ...     return h
    >>> x, w = fnp.ones(3), fnp.eye(3) * 0.9
    >>> loss = lambda w: fnp.sum(block(w, block(w, x)))
    >>> loss_checkpointed = lambda w: fnp.sum(fgrad.checkpoint(block)(w, block(w, x)))
    >>> bool(fnp.all(fgrad.grad(loss_checkpointed)(w) == fgrad.grad(loss)(w)))
    True
    >>> a = 0.5  # a free variable, differentiated through the checkpoint
    >>> float(fgrad.grad(lambda a: fgrad.checkpoint(lambda x: fnp.tanh(a * x))(2.0))(a))
    0.8399486832280523
    """
    if not callable(fun):
        raise TypeError(
            f"checkpoint expects a function, got {fun!r} of type {type(fun).__name__}; pass "
            "the function itself, e.g. checkpoint(f), not checkpoint(f(x))"
        )
    who = f"checkpoint({_fun_name(fun)})"
    if policy is not None:
        raise TypeError(
            f"{who}: policy={policy!r} is not supported; fgrad's checkpoint keeps nothing "
            "computed inside the function. Checkpoint smaller functions to keep the values "
            "between them, or drop policy"
        )
    static = _static_positions(static_argnums, who)

    def checkpointed(*args, **kwargs):
        for i in static:
            if -len(args) <= i < len(args) and next(boxes_in(args[i]), None) is not None:
                raise TypeError(
                    f"{who}: argument {i} is in static_argnums but is a traced value "
                    f"({describe(args[i])}); remove it from static_argnums, or pass a "
                    "Python value there"
                )
        leaves, in_tree = tree_flatten((args, kwargs))
        leaves = core.live_leaves(leaves)
        call = _CheckpointCall(fun, in_tree, who, prevent_cse)
        outs = call.discover(leaves)
        inputs = list(leaves) + call.captured
        levels = live_levels_of(inputs)
        if not levels:
            return call.output(outs)
        # (a vmap whose rows the function reads from its closure shows in its outputs)
        batched = [lv for lv in live_levels_of(outs) if lv.batches]
        if max(levels + batched, key=operator.attrgetter("depth")).batches:
            # A vmap inside every transform that differentiates the call: its rows are
            # computed together by running the function itself (which may read other values
            # batched by that vmap), so the transforms outside the vmap trace every operation
            # of it: the call is not rematerialized for them.
            return fun(*args, **kwargs)
        return call.bind(checkpoint_p, inputs)

    functools.update_wrapper(checkpointed, fun)
    checkpointed.__name__ = checkpointed.__qualname__ = who
    del checkpointed.__wrapped__
    checkpointed.transformed = fun  # (for `jit`: see fgrad.api._named)
    return api_boundary(checkpointed)


remat = checkpoint


def _static_positions(static_argnums, who) -> tuple:
    positions = (static_argnums,) if isinstance(static_argnums, int) else static_argnums
    try:
        positions = tuple(operator.index(i) for i in positions)
    except TypeError:
        raise TypeError(
            f"{who}: static_argnums must be an int or a sequence of ints, got {static_argnums!r}"
        ) from None
    return positions


def _checkpoint_batch(args, dims, call):
    """A vmap inside the transforms that differentiate a checkpointed call (they process it
    first): the function runs on the batch, its rows together, as it reads values of this vmap
    that are not its arguments."""
    level = call.level(args)
    boxed = [a if d is None else Box(a, level, d) for a, d in zip(args, dims)]
    return batching.unboxed_outputs(call.run(boxed, ()), level)


@taylor.declared("derived")
def _checkpoint_taylor(primals, series, call):
    level = call.level(primals)
    boxed = [p if s is None else Box(p, level, s) for p, s in zip(primals, series)]
    outs = call.run(boxed, ())
    values = tuple(o.value if type(o) is Box and o.level is level else o for o in outs)
    out_series = tuple(o.aux if type(o) is Box and o.level is level else None for o in outs)
    return values, out_series


# The function's own forward mode: no derivative fgrad writes twice; sparsity detection runs
# the function on the level's boxes.
register_rules(
    checkpoint_p,
    batch=_checkpoint_batch,
    taylor=_checkpoint_taylor,
    forward="derived",
    sparsity="traced",
)


# --- tap_cotangent --------------------------------------------------------------------------------


def _tap_fprop(*vals, call):
    metas = [_meta(v) for v in vals]

    def bprop(cts):
        if any(_is_placeholder(c) for c in cts):
            # forward mode transposing this bprop (`jvp` of a function without a forward rule
            # around the tap, `linearize`): the tap is the identity there, as in `_tap_jvp`,
            # and a placeholder is no cotangent to show anyone
            return list(cts)
        ct = call.output_cotangent(cts)
        new = call.on_cotangent(ct)
        if new is None:
            return list(cts)
        flat = _leaves_like(new, call.out_tree, call.who, "on_cotangent's result")
        return [
            _conform(c, m, call.who, f"on_cotangent's result (leaf {k})")
            for k, (c, m) in enumerate(zip(flat, metas))
        ]

    return tuple(vals), bprop


def _is_placeholder(x):
    """Whether x holds a box of a live `PlaceholderLevel` (a cotangent being transposed)."""
    while type(x) is Box:
        if type(x.level) is PlaceholderLevel and x.level.live:
            return True
        x = x.value
    return False


def _tap_jvp(tangents, ans, *vals, call):
    return list(tangents)


tap_cotangent_p = Primitive(
    "tap_cotangent",
    lambda *vals, call: tuple(vals),
    fprop=_tap_fprop,
    jvp=_tap_jvp,
    multiple_results=True,
)


@api_boundary
def tap_cotangent(x: PyTree, on_cotangent: Callable[[Any], Any]) -> PyTree:
    """The identity on `x`, whose bprop shows (or changes) the cotangent flowing back through it.

    Parameters
    ----------
    x : array_like or pytree
        The value to watch.
    on_cotangent : callable
        Called in the backward pass with the cotangent of `x`; what it returns is passed on as
        the new cotangent (None: unchanged). Write it in `fgrad.numpy` operations for higher
        derivatives.

    Returns
    -------
    array or pytree
        `x`. Forward mode passes tangents through unchanged.

    Examples
    --------
    Gradient clipping (a cotangent of 10 leaves `x` as 1):

    >>> import fgrad, fgrad.numpy as fnp
    >>> clip = lambda ct: fnp.clip(ct, -1.0, 1.0)
    >>> float(fgrad.grad(lambda x: 10.0 * fgrad.tap_cotangent(x, clip))(3.0))
    1.0

    Logging:

    >>> seen = []
    >>> float(fgrad.grad(lambda x: fgrad.tap_cotangent(x, seen.append) ** 2)(3.0))
    6.0
    >>> print(seen)
    [np.float64(6.0)]
    """
    if not callable(on_cotangent):
        raise TypeError(
            f"tap_cotangent(x, on_cotangent) expects a function second, got {on_cotangent!r}; "
            "pass a function of the cotangent (returning None leaves it unchanged)"
        )
    leaves, tree = tree_flatten(x)
    leaves = core.live_leaves(leaves)
    if not _any_live(leaves):
        return tree_unflatten(tree, leaves)
    call = _Call("tap_cotangent", tree)
    call.on_cotangent = on_cotangent
    call.output_leaves(x, "its argument")
    return call.bind(tap_cotangent_p, [_as_numpy(v) for v in leaves])


def _tap_batch(args, dims, call):
    rows = _every_row(args, dims)
    on_rows = vmap(call.on_cotangent)
    return _batched_outputs(tap_cotangent(tree_unflatten(call.out_tree, rows), on_rows))


@taylor.declared("linear")
def _tap_taylor(primals, series, call):
    """The tap sees the cotangent of the value; the coefficients pass through."""
    return bind(tap_cotangent_p, primals, {"call": call}), tuple(series)


# A tap passes tangents and Taylor coefficients through, and the sparsity of its input.
register_rules(
    tap_cotangent_p, batch=_tap_batch, taylor=_tap_taylor, forward="linear", sparsity="unchanged"
)
