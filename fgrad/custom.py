"""Your own derivative rules, checkpointing, and a tap on the backward pass.

- `custom_vjp(fun)` gives `fun` a reverse rule, `f.defvjp(fwd, bwd)`, with JAX's semantics.
  Forward mode (`jvp`, `jacfwd`, `hessian`) works too: it transposes `bwd`, which is linear in
  the cotangent. (A JAX `custom_vjp` function refuses forward mode.)
- `custom_jvp(fun)` gives `fun` a forward rule, `f.defjvp(jvp)`; reverse mode transposes the
  rule's tangent part, which is linear in the tangents.
- `checkpoint(fun)` (alias `remat`) stores none of `fun`'s intermediates; its bprop runs
  `fun` again under `vjp` to get them.
- `tap_cotangent(x, on_cotangent)` is the identity on `x` whose bprop hands the cotangent to
  `on_cotangent` and passes on what it returns: for logging, clipping and teaching.

Each call flattens its pytree arguments once, here, and binds a `core.Primitive` made for
that call, whose fprop, bprop and jvp close over the call's structure. The core's primitives
have one output, so several output leaves travel through it as one flat array, split again
(with differentiable fgrad operations) on the way out.

Rules are written in `fgrad.numpy` operations, like the built-in ones, so that they can be
differentiated again: then these functions work under every transform at every depth. A
function or rule that closes over a value being differentiated, instead of taking it as an
argument, raises a TypeError naming that value: its derivative would otherwise be lost.

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

Imports: `fgrad.core`, `fgrad.tree_util`, `fgrad.numpy` (to split outputs differentiably) and
`fgrad.api` (`checkpoint` re-runs its function under `vjp` and `jvp`).
"""

import functools
import inspect
import operator
import weakref

import numpy as _np

from . import numpy as fnp
from .api import _vjp
from .api import jvp as _api_jvp
from .core import (
    Box, Primitive, ReverseLevel, backward_pass, bind, holds_box_of, primal, zeros_like_value,
)
from .numpy.shaping import describe
from .tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["custom_vjp", "custom_jvp", "checkpoint", "remat", "tap_cotangent"]


# --- which levels a call sees ----------------------------------------------------------------


def _outer_value(x):
    """x without boxes of exited levels on top: what `bind` sees."""
    while type(x) is Box and not x.level.live:
        x = x.value
    return x


def _live_levels(leaves):
    """The live levels of the boxes in `leaves` (at any depth of a box's nesting)."""
    seen = {}
    for x in leaves:
        while type(x) is Box:
            if x.level.live:
                seen[id(x.level)] = x.level
            x = x.value
    return list(seen.values())


def _processing_level(levels, vals):
    """Which of the call's live `levels` is processing the primitive, given the values it was
    handed: each level strips its own boxes before the next outer one sees the arguments, so it
    is the outermost of `levels` that is deeper than every live box left in `vals`."""
    left = max((lv.depth for lv in _live_levels(vals)), default=-1)
    return min((lv for lv in levels if lv.depth > left), key=operator.attrgetter("depth"))


def _leak(tree, level, allowed=None):
    """A leaf of `tree` holding a box of `level` or of a live level inside it (other than
    `allowed`), else None.

    Such a box in what a primitive's rule returns at `level` can only come from a value of
    that level the rule closed over (its arguments hold only boxes of outer levels).
    """
    for x in tree_flatten(tree)[0]:
        y = x
        while type(y) is Box:
            if y.level.live and y.level.depth >= level.depth and y.level is not allowed:
                return x
            y = y.value
    return None



def _check_closure(fn, level, who, what):
    """Refuse a function that closes over a value being differentiated at `level` (or inside
    it): the primitive would treat that value as a constant and drop its derivative."""
    while isinstance(fn, functools.partial):
        for k, v in list(enumerate(fn.args)) + list(fn.keywords.items()):
            x = _leak(v, level)
            if x is not None:
                _raise_captured(who, what, f"partial argument {k!r}", x)
        fn = fn.func
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None)
    if code is None or not cells:
        return
    for name, cell in zip(code.co_freevars, cells):
        try:
            v = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        x = _leak(v, level)
        if x is not None:
            _raise_captured(who, what, f"{name!r}", x)


def _raise_captured(who, what, name, x):
    raise TypeError(
        f"{who}: {what} closes over {name}, a value being differentiated (a traced value with "
        f"{describe(x)}); its derivative would be lost. Pass it to the function as an "
        "explicit argument instead of closing over it"
    )


def _raise_leak(who, what, x):
    raise TypeError(
        f"{who}: {what} depends on a value being differentiated that is not one of the "
        f"function's arguments (it holds a traced value with {describe(x)}): the function or "
        "its rules close over a traced value, whose derivative would be lost. Pass that value "
        "to the function as an explicit argument instead of closing over it"
    )


def _check_no_leak(tree, level, who, what):
    x = _leak(tree, level)
    if x is not None:
        _raise_leak(who, what, x)


# --- outputs: several leaves through a one-output primitive ---------------------------------


class _Packed:
    """A primitive's output already packed (checkpoint's recursive call returns one)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Outputs:
    """The structure, shapes and dtypes of a call's outputs, learned when first computed.

    One output leaf goes through the core as itself; several go as one flat array of their
    common dtype, split again with fgrad operations so that the split is differentiated too.
    """

    __slots__ = ("who", "tree", "metas", "dtype")

    def __init__(self, who):
        self.who = who
        self.tree = None
        self.metas = None
        self.dtype = None

    def pack(self, out, what):
        if type(out) is _Packed:
            return out.value
        leaves, tree = tree_flatten(out)
        leaves = [_as_numpy(v) for v in leaves]
        for k, v in enumerate(leaves):
            pv = primal(v)
            if not isinstance(pv, (_np.ndarray, _np.generic)) or not (
                    _np.issubdtype(pv.dtype, _np.number) or pv.dtype == bool):
                raise TypeError(
                    f"{self.who}: {what} returned a value of type {type(pv).__name__} "
                    f"at output leaf {k}; return numbers or numeric arrays"
                )
        metas = [(_np.shape(primal(v)), _np.result_type(primal(v))) for v in leaves]
        if self.tree is None:
            self.tree, self.metas = tree, metas
            self.dtype = _np.result_type(*[d for _, d in metas]) if metas else _np.float64
        elif tree != self.tree or metas != self.metas:
            raise TypeError(
                f"{self.who}: {what} returned {tree} with (shape, dtype) {_show(metas)}, but "
                f"the output was first computed as {self.tree} with {_show(self.metas)}; the "
                "function and its rules must return outputs of the same structure, shapes "
                "and dtypes"
            )
        return self._join(leaves)

    def pack_tangent(self, t, what):
        """A tangent (or cotangent) pytree shaped like the output; None is a zero."""
        leaves = _leaves_like(t, self.tree, self.who, what)
        leaves = [
            _conform(v, meta, self.who, f"{what}, leaf {k}")
            for k, (v, meta) in enumerate(zip(leaves, self.metas))
        ]
        return self._join([_zeros(m) if v is None else v for v, m in zip(leaves, self.metas)])

    def _join(self, leaves):
        if len(leaves) == 1:
            return leaves[0]
        if not leaves:
            return _np.zeros(0)
        return fnp.concatenate([fnp.ravel(fnp.astype(v, self.dtype)) for v in leaves])

    def split(self, packed):
        """The output pytree from its packed form."""
        if len(self.metas) == 1:
            return tree_unflatten(self.tree, [packed])
        leaves, lo = [], 0
        for shape, dtype in self.metas:
            n = int(_np.prod(shape))
            piece = fnp.reshape(packed[lo:lo + n], shape)
            leaves.append(piece if dtype == self.dtype else fnp.astype(piece, dtype))
            lo += n
        return tree_unflatten(self.tree, leaves)


def _show(metas):
    return "[" + ", ".join(f"({s}, {d})" for s, d in metas) + "]"


def _as_numpy(v):
    """A Python number as a NumPy scalar, so that rules compute with NumPy's semantics."""
    if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
        return _np.asarray(v)[()]
    return v


def _zeros(meta):
    shape, dtype = meta
    z = _np.zeros(shape, dtype)
    return z[()] if z.ndim == 0 else z


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
    pv = primal(v)
    if isinstance(pv, bool) or not (
            isinstance(pv, (int, float, complex))
            or (isinstance(pv, (_np.ndarray, _np.generic)) and _np.issubdtype(pv.dtype, _np.number))):
        kind = f"dtype {pv.dtype}" if isinstance(pv, (_np.ndarray, _np.generic)) else (
            f"type {type(pv).__name__}")
        raise TypeError(
            f"{who}: {what} is of {kind}, but the value it goes with has shape {shape} and "
            f"dtype {dtype}; return a number or an array of that dtype (or None for a zero)"
        )
    v_shape = _np.shape(pv)
    if v_shape != shape:
        raise ValueError(
            f"{who}: {what} has shape {v_shape}, but the value it goes with has shape {shape} "
            f"and dtype {dtype}; return an array of shape {shape} (or None for a zero)"
        )
    if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
        return _np.asarray(v, dtype=dtype)[()]
    if _np.result_type(primal(v)) != dtype:
        return fnp.astype(v, dtype)
    return v


# --- one call, bound as a primitive -----------------------------------------------------------


def _bind_call(name, leaves, rules, outputs=None):
    """Bind one call of a custom function to the flat list `leaves` and return its output.

    `rules` has `primal(vals) -> out` (the value, when no live level differentiates the call),
    `fprop(vals, level) -> (out, bprop)` with `bprop(ct) -> [cotangent or None per leaf]`
    (`ct` shaped like `out`), and `jvp(tangents, vals, level) -> tangent of out` or no `jvp`
    (forward mode then transposes the bprop). `level` is the level processing the primitive;
    `vals` are the leaves without its boxes.
    """
    leaves = [_outer_value(x) for x in leaves]
    levels = _live_levels(leaves)
    if not levels:
        return rules.primal(leaves)
    return outputs.split(_bind_packed(name, leaves, levels, rules, outputs))


def _bind_packed(name, leaves, levels, rules, outputs):
    who = rules.who

    def impl(*vals):
        return outputs.pack(rules.primal(list(vals)), "the function")

    def fprop(*vals):
        vals = list(vals)
        level = _processing_level(levels, vals)
        out, bprop_of_tree = rules.fprop(vals, leaves, level)
        if type(out) is not _Packed:
            _check_no_leak(out, level, who, "its output")
        ans = outputs.pack(out, "the forward rule")
        level_ref = weakref.ref(level)  # the level's tape keeps this bprop: no cycle back

        def bprop(ct):
            cts = tuple(bprop_of_tree(outputs.split(ct)))
            level = level_ref()
            if level is not None and level.live:  # forward mode transposing the bprop: the
                allowed = ct.level if type(ct) is Box else None  # cotangent's level is the
                x = _leak(cts, level, allowed)  # only one allowed inside
                if x is not None:
                    _raise_leak(who, "the cotangents its bprop returned", x)
            return cts

        return ans, bprop

    def jvp(tangents, ans, *vals):
        vals = list(vals)
        level = _processing_level(levels, vals)
        t_out = rules.jvp(list(tangents), vals, leaves, level)
        _check_no_leak(ans, level, who, "its output")
        _check_no_leak(t_out, level, who, "the tangent of its output")
        return outputs.pack_tangent(t_out, "the tangent of the output")

    # Without a jvp rule (custom_vjp), forward mode transposes the bprop.
    prim = Primitive(name, impl, fprop=fprop, jvp=jvp if hasattr(rules, "jvp") else None)
    return bind(prim, leaves, {})


def _resolve_kwargs(fun, args, kwargs, who):
    """Keyword arguments put in their positional places, as JAX does for custom rules."""
    if not kwargs:
        return args
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


def _fun_name(fun):
    """A function's name; fgrad's own primitives are objects with a `name`."""
    return getattr(fun, "__name__", None) or getattr(fun, "name", None) or type(fun).__name__


class _CustomFunction:
    """What custom_vjp and custom_jvp share: the function, its nondiff_argnums, the call."""

    _kind = None

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(
                f"{self._kind} expects a function, got {fun!r} of type {type(fun).__name__}; "
                f"pass the function to give a rule to, e.g. @fgrad.{self._kind} above its def"
            )
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _normalize_argnums(nondiff_argnums, self._kind)

    def __repr__(self):
        return f"<fgrad.{self._kind} function {_fun_name(self.fun)}>"

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

    def __call__(self, *args, **kwargs):
        who = self._who()
        if not self._has_rule():
            raise TypeError(
                f"{who} has no rule yet: call {_fun_name(self.fun)}.{self._how_to_define} first"
            )
        args = _resolve_kwargs(self.fun, args, kwargs, who)
        nondiff, diff = self._split_args(args)
        leaves, in_tree = tree_flatten(tuple(args[i] for i in diff))
        return _bind_call(
            f"{self._kind}({_fun_name(self.fun)})", leaves,
            self._rules(self, args, nondiff, diff, in_tree), _Outputs(who),
        )

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


# --- custom_vjp -------------------------------------------------------------------------------


class custom_vjp(_CustomFunction):
    """A function with your reverse rule, JAX's `jax.custom_vjp`.

    `f.defvjp(fwd, bwd)` sets the rule: `fwd(*args)` returns `(out, residuals)`, and
    `bwd(*nondiff_args, residuals, ct)` returns a tuple with one cotangent per differentiable
    argument (a pytree shaped like it; None for a zero). Arguments, outputs, residuals and
    cotangents may be pytrees; arguments in `nondiff_argnums` are passed to `bwd` first and get
    no cotangent. Outside any transform, calling `f` runs `fun` itself.

    Under a transform `fwd` gives the value and `bwd` the reverse rule. Forward mode (`jvp`,
    `jacfwd`, `hessian`) transposes `bwd`, which must be linear in `ct`. Written in
    `fgrad.numpy` operations, `fwd` and `bwd` are differentiated again for higher orders.

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

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
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

    @property
    def _rules(self):
        return _VjpRules


class _CallRules:
    """One call of a custom function: its arguments, and which of them are differentiated."""

    def __init__(self, f, args, nondiff, diff, in_tree):
        self.f, self.args, self.nondiff, self.diff, self.in_tree = f, args, nondiff, diff, in_tree
        self.who = f._who()

    def full_args(self, vals):
        full = list(self.args)
        for i, a in zip(self.diff, tree_unflatten(self.in_tree, vals)):
            full[i] = a
        return full

    def primal(self, vals):
        return self.f.fun(*self.full_args(vals))


class _VjpRules(_CallRules):
    def fprop(self, vals, leaves, level):
        f, who = self.f, self.who
        for what, fn in (("the function", f.fun), ("fwd", f.fwd), ("bwd", f.bwd)):
            _check_closure(fn, level, who, what)
        f._check_nondiff(self.args, self.nondiff, level)
        pair = f.fwd(*self.full_args(vals))
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError(
                f"{who}: fwd must return a pair (output, residuals), got "
                f"{type(pair).__name__}" + (f" of length {len(pair)}"
                                             if isinstance(pair, (tuple, list)) else "")
            )
        out, res = pair
        _check_no_leak(res, level, who, "fwd's residuals")
        nondiff_args = [self.args[i] for i in self.nondiff]
        # The bprop keeps only structures and metadata of the differentiated arguments, never
        # the arguments: they are boxes of this level, and the level's tape keeps the bprop.
        diff, diff_trees = self.diff, [tree_flatten(self.args[i])[1] for i in self.diff]
        metas = [(_np.shape(primal(v)), _np.result_type(primal(v))) for v in vals]

        def bprop(ct):
            cts = f.bwd(*nondiff_args, res, ct)
            if not isinstance(cts, (tuple, list)) or len(cts) != len(diff):
                got = (f"a {type(cts).__name__} of length {len(cts)}"
                       if isinstance(cts, (tuple, list)) else f"{type(cts).__name__}")
                raise TypeError(
                    f"{who}: bwd must return a tuple with one cotangent per differentiable "
                    f"argument ({len(diff)}: arguments {diff}), got {got}; return "
                    "None for an argument with a zero cotangent"
                )
            flat = []
            for i, c, tree in zip(diff, cts, diff_trees):
                what = f"bwd's cotangent of argument {i}"
                flat.extend(_leaves_like(c, tree, who, what))
            return [
                _conform(c, m, who, f"bwd's cotangent (leaf {k} of the arguments)")
                for k, (c, m) in enumerate(zip(flat, metas))
            ]

        return out, bprop


# --- custom_jvp -------------------------------------------------------------------------------


class custom_jvp(_CustomFunction):
    """A function with your forward rule, JAX's `jax.custom_jvp`.

    `f.defjvp(rule)` sets it (and returns it, so it can decorate the rule):
    `rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`, where `primals`
    and `tangents` are tuples of the differentiable arguments and their tangents (zeros for
    arguments with none). `tangent_out` must be linear in `tangents`: reverse mode transposes
    it. `f.defjvps(*rules)` gives one rule per argument, `rule_i(t_i, ans, *args)`, summed.
    Outside any transform, calling `f` runs `fun` itself; in forward mode `fun` gives the
    value, in reverse mode the rule's `primal_out` does (they must agree).

    A norm whose derivative at 0 is 0 (the quotient x / |x| is 0 / 0 there):

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

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp):
        """Set the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
        if not callable(jvp):
            raise TypeError(
                f"{self._who()}: defjvp expects a function, got {jvp!r}; pass "
                "rule(primals, tangents) -> (primal_out, tangent_out)"
            )
        self.jvp = jvp
        return jvp

    def defjvps(self, *rules):
        """One rule per argument, `rule_i(t_i, ans, *args) -> tangent of ans` (None for an
        argument with no derivative); the tangent of the output is their sum.

        >>> import fgrad, fgrad.numpy as fnp
        >>> f = fgrad.custom_jvp(lambda x, y: x * y)
        >>> f.defjvps(lambda tx, ans, x, y: tx * y, lambda ty, ans, x, y: x * ty)
        >>> float(fgrad.grad(f, argnums=1)(2.0, 3.0))
        2.0
        """
        if self.nondiff_argnums:
            raise TypeError(f"{self._who()}: defjvps cannot be used with nondiff_argnums; "
                            "use defjvp")
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

    @property
    def _rules(self):
        return _JvpRules


class _JvpRules(_CallRules):
    def _rule(self, vals, tangents, level):
        f, who = self.f, self.who
        for what, fn in (("the function", f.fun), ("its jvp rule", f.jvp)):
            _check_closure(fn, level, who, what)
        f._check_nondiff(self.args, self.nondiff, level)
        primals = tuple(tree_unflatten(self.in_tree, vals))
        tangents = tuple(tree_unflatten(self.in_tree, tangents))
        pair = f.jvp(*[self.args[i] for i in self.nondiff], primals, tangents)
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError(
                f"{who}: the jvp rule must return a pair (primal_out, tangent_out), got "
                f"{type(pair).__name__}"
            )
        return pair

    def jvp(self, tangents, vals, leaves, level):
        tangents = [zeros_like_value(v) if t is None else t for t, v in zip(tangents, vals)]
        _, t_out = self._rule(vals, tangents, level)
        return t_out

    def fprop(self, vals, leaves, level):
        # Reverse mode transposes the rule's tangent part: trace it on a level of its own with
        # the tangents as inputs (their value, zero, is never used: the map is linear), then
        # the backward pass of that level maps an output cotangent to the tangents' cotangents.
        with ReverseLevel() as tangent_level:
            tangents = [
                tangent_level.new_input(zeros_like_value(v)) if holds_box_of(x, level)
                else zeros_like_value(v)
                for v, x in zip(vals, leaves)
            ]
            p_out, t_out = self._rule(vals, tangents, level)
            p_leaves, p_tree = tree_flatten(p_out)
            what = "the jvp rule's tangent_out"
            t_leaves = [  # cast inside the level, so that a cast is transposed too
                _conform(t, (_np.shape(primal(p)), _np.result_type(primal(p))), self.who,
                         f"{what} (leaf {k})")
                for k, (t, p) in enumerate(
                    zip(_leaves_like(t_out, p_tree, self.who, what), p_leaves))
            ]
        p_out = tree_unflatten(p_tree, [_outer_value(p) for p in p_leaves])
        _check_no_leak(t_leaves, level, self.who, what)
        out_positions = [
            t.aux if type(t) is Box and t.level is tangent_level else None for t in t_leaves
        ]
        in_positions = [t.aux if type(t) is Box else None for t in tangents]
        del tangents, t_out, t_leaves, p_leaves  # the bprop keeps the tape, not the traced values

        def bprop(ct):
            seeds = [(n, c) for n, c in zip(out_positions, tree_flatten(ct)[0]) if n is not None]
            if not seeds:
                return [None] * len(in_positions)
            cts = backward_pass(tangent_level, seeds)
            return [None if n is None else cts[n] for n in in_positions]

        return p_out, bprop


# --- checkpoint -------------------------------------------------------------------------------


def checkpoint(fun):
    """`fun`, computed without storing its intermediates for the backward pass: the bprop runs
    `fun` again, under `vjp`, to get them. Trades time (one more evaluation of `fun`) for the
    memory of its intermediates. Gradients equal those of `fun` at every order.

    Arguments and outputs may be pytrees; `fun` may close over constants, but a value being
    differentiated must be passed as an argument. Also named `remat`, as in JAX.

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
    """
    if not callable(fun):
        raise TypeError(
            f"checkpoint expects a function, got {fun!r} of type {type(fun).__name__}; pass "
            "the function itself, e.g. checkpoint(f), not checkpoint(f(x))"
        )
    who = f"checkpoint({_fun_name(fun)})"

    def checkpointed(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        rules = _CheckpointRules(fun, in_tree, who)
        return _bind_call(who, leaves, rules, rules.outputs)

    functools.update_wrapper(checkpointed, fun)
    checkpointed.__name__ = checkpointed.__qualname__ = who
    del checkpointed.__wrapped__
    return checkpointed


remat = checkpoint


class _CheckpointRules:
    def __init__(self, fun, in_tree, who):
        self.fun, self.in_tree, self.who = fun, in_tree, who
        self.outputs = _Outputs(who)  # shared by the levels' primitives of one call

    def call(self, vals):
        args, kwargs = tree_unflatten(self.in_tree, vals)
        return self.fun(*args, **kwargs)

    def primal(self, vals):
        return self.call(vals)

    def _of_own(self, vals, own):
        """fun as a function of the leaves in `own` only, the others fixed."""
        def fun_of_own(*own_vals):
            full = list(vals)
            for i, v in zip(own, own_vals):
                full[i] = v
            return self.call(full)

        return fun_of_own

    def fprop(self, vals, leaves, level):
        _check_closure(self.fun, level, self.who, "the function")
        # The value, with the outer levels each recording one checkpoint node of their own.
        levels = _live_levels(vals)
        if levels:
            packed = _bind_packed(self.who, vals, levels, self, self.outputs)
            _check_no_leak(packed, level, self.who, "its output")
            out = _Packed(packed)
        else:
            out = self.call(vals)
        own = [i for i, x in enumerate(leaves) if holds_box_of(x, level)]

        def bprop(ct):
            # A fresh vjp per backward pass, pulled once: it may free each recomputed
            # layer's residuals as soon as the pass is through with it (consume=True).
            _, pull = _vjp(self._of_own(vals, own), [vals[i] for i in own], False, self.who,
                           consume=True)
            cts = [None] * len(vals)
            for i, c in zip(own, pull(ct)):
                cts[i] = c
            return cts

        return out, bprop

    def jvp(self, tangents, vals, leaves, level):
        _check_closure(self.fun, level, self.who, "the function")
        own = [i for i, t in enumerate(tangents) if t is not None]
        _, t_out = _api_jvp(
            self._of_own(vals, own), tuple(vals[i] for i in own), tuple(tangents[i] for i in own)
        )
        return t_out


# --- tap_cotangent ----------------------------------------------------------------------------


def tap_cotangent(x, on_cotangent):
    """The identity on `x` (a pytree), whose bprop calls `on_cotangent(ct)` with the cotangent
    of `x` and passes on what it returns as the new cotangent (None: `ct` unchanged).

    Use it to see or change the gradient at a point of the computation: to log it, clip it,
    or watch it in a lesson. Forward mode passes tangents through unchanged. Write
    `on_cotangent` in `fgrad.numpy` operations for higher derivatives.

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
    if not leaves:
        return x
    return _bind_call("tap_cotangent", leaves, _TapRules(tree, on_cotangent),
                      _Outputs("tap_cotangent"))


class _TapRules:
    who = "tap_cotangent"

    def __init__(self, tree, on_cotangent):
        self.tree, self.on_cotangent = tree, on_cotangent

    def primal(self, vals):
        return tree_unflatten(self.tree, vals)

    def fprop(self, vals, leaves, level):
        metas = [(_np.shape(primal(v)), _np.result_type(primal(v))) for v in vals]

        def bprop(ct):
            new = self.on_cotangent(ct)
            if new is None:
                return tree_flatten(ct)[0]
            flat = _leaves_like(new, self.tree, self.who, "on_cotangent's result")
            return [_conform(c, m, self.who, f"on_cotangent's result (leaf {k})")
                    for k, (c, m) in enumerate(zip(flat, metas))]

        return tree_unflatten(self.tree, vals), bprop

    def jvp(self, tangents, vals, leaves, level):
        return tree_unflatten(self.tree, tangents)
