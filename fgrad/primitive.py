"""Registering primitives: the public `primitive` decorator and the builders of the built-ins.

A primitive is an operation fgrad differentiates as a unit, through rules you give it, instead
of through the operations inside it. Each derivative is written once; the builders make the
rest:

- `defunary(impl, derivative)`: an elementwise function from its derivative expression
  `derivative(ans, x)`; the reverse rule is `ct * derivative`, the forward rule `t * derivative`.
- `deflinear(impl, transpose)`: an operation linear in its one input, whose forward rule is the
  operation itself applied to the tangent ("the same as the impl"); `transpose` is its reverse
  rule.
- `defbilinear(impl, vjp)`: linear in each of two inputs (products, convolutions); each forward
  rule is the operation with that input replaced by its tangent.
- `defprimitive(impl, vjp, jvp)`: any rules, one per input.
- `Primitive(..., multiple_results=True)` (from `fgrad.core`) for several outputs.

Every rule receives, after the tangent (forward) or nothing (a reverse rule's maker, called
at forward time), the primitive's output and then its inputs: `(t, ans, *args, **params)` and
`(ans, *args, **params)`.

The rules of the other transforms, a batching rule (`vmap`) and a Taylor rule (`jet`), and
what `jit` and `vmap` must know of a primitive's values (shapes that depend on them, raising on
some, rows that cannot share a call), are registered by `register_rules`, the one place that
writes their tables, or by a builder's
`batch=` and `taylor=` keywords, which pass them on to it, so that a primitive built in one block
declares all its rules there. Builders register the Taylor rules that follow from what they know:
a linear primitive's coefficients are the primitive applied to each, a bilinear one's are sums of
products (`fgrad.taylor`).

Imports: `fgrad.core`, `fgrad.batching`, `fgrad.taylor`.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import TYPE_CHECKING

import numpy as _np

from . import batching as _batching, core as _core, taylor as _taylor
from .core import Box, NondiffPrimitive, Primitive, add_any, bind, bind_one, stop_gradient_p

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class UnaryFunction(Protocol):
        """What `defunary` returns: a function of one argument that carries the primitive it
        binds as `.primitive` (for the rule tables, batching and the graph)."""

        primitive: Primitive

        def __call__(self, x: Any, /) -> Any: ...


__all__ = [
    "defbilinear",
    "deflinear",
    "defprimitive",
    "defunary",
    "forward_rules",
    "nondiff",
    "primitive",
    "register_rules",
]


def register_rules(
    prim: Primitive | NondiffPrimitive,
    *,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
    forward: str | None = None,
    taylor_kind: str | None = None,
    sparsity: str | tuple | None = None,
    shape_from_values: bool = False,
    raises_on_values: bool = False,
    row_by_row: str | None = None,
    replace: bool = False,
) -> None:
    """Register `prim`'s batching rule and/or its Taylor rule, declare why it has a forward
    rule of its own, how sparsity detection treats it, and what `jit` and `vmap` must know of
    its values: the one place where any of these is registered (the builders' keywords of the
    same names come here too).

    Parameters
    ----------
    prim : Primitive or NondiffPrimitive
        The primitive itself (for a function made by `defunary` or `primitive`, its
        `.primitive`).
    batch : callable, optional
        `vmap`'s rule (`fgrad.batching`): `batch(args, dims, **params) -> (out, out_dim)`.
        `args` are the values under the batching level's boxes, `dims[i]` the batch axis of
        `args[i]` (None for an argument that is the same for every row); it returns the result
        for all rows and its batch axis (None when the same for every row), or, for several
        outputs, a tuple of results and a tuple of axes. Without one, `vmap` applies the
        primitive one row at a time.
    taylor : callable, optional
        `jet`'s rule (`fgrad.taylor`): `taylor(primals, series, **params) -> (ans, out_series)`.
        `series[i]` is the tuple of the K normalized Taylor coefficients of input i (None for an
        input that is constant there); it returns the primitive's value and the K coefficients
        of its output (a tuple; None for all zero), or, for several outputs, a tuple of values
        and a tuple of coefficient tuples. Without one, `jet` derives the coefficients from
        the forward rule (`fgrad.taylor.general_rule`), at a cost cubic in K.
    forward : str, optional
        Why the primitive has a forward rule beside its reverse rule (forward mode would
        otherwise transpose the reverse rule), one of `FORWARD_RULE_KINDS`: "derived" (both
        rules are made from one derivative expression), "linear" (the forward rule applies
        the operation itself, or its linear part, to the tangents: no derivative is written)
        or "speed" (a derivative written a second time, by hand, because transposing the
        reverse rule costs more: `benchmarks/bench_forward_rules.py` measures each one).
        fgrad's own primitives all declare it (a test checks), so that a derivative written
        twice is always one of the measured few.
    taylor_kind : str, optional
        What the Taylor rule is, one of `TAYLOR_RULE_KINDS`: "linear" (the operation on each
        coefficient, or the Cauchy products of a bilinear one), "derived" (from the
        derivative, or the function itself, by a general construction) or "speed" (a
        recurrence written by hand, `benchmarks/bench_taylor_rules.py` measures each against
        the general rule). By default the kind the rule carries (`rule.kind`: the makers of
        `fgrad.taylor` mark theirs, `fgrad.taylor.kind_of_rule`).
    sparsity : str or tuple, optional
        Which of `fgrad.sparsity`'s rules gives the pattern of its output (`SparsityLevel`):
        a name, or a tuple of a name and its arguments, as `"reduces"`, `("blocks", (2, 2))`
        (a block per matrix of a stack, two matrix arguments), `("dense", "why")`; the names
        are those of `fgrad.sparsity.DECLARED`. An elementwise primitive (its batching rule is
        the elementwise one) and one without a derivative need none.
    shape_from_values : bool, default False
        Its outputs' shapes or dtypes depend on its inputs' values (`nonzero`, `unique`;
        `eig`, real or complex): a `jit` replay checks them (`fgrad.core.shape_from_values`).
    raises_on_values : bool, default False
        It raises on some values of valid shapes (a singular matrix): a `jit` replay runs it
        even where nothing reads its outputs (`fgrad.core.raises_on_values`).
    row_by_row : str, optional
        Why `vmap` applies it to one row at a time (rows that cannot share one NumPy call);
        listed by the coverage test (`fgrad.batching.declare_row_by_row`).
    replace : bool, default False
        Replace a rule of the same kind registered before. Without it, a second registration
        is refused: two declarations of one primitive's rule, the later one silently winning,
        are a mistake until shown otherwise.

    Both rules are written in fgrad operations, so that the levels outside trace them.

    Examples
    --------
    >>> import numpy as np, fgrad
    >>> from fgrad.primitive import deflinear, register_rules
    >>> twice = deflinear(lambda x: 2.0 * x, lambda ans, x: lambda ct: 2.0 * ct, name="twice")
    >>> register_rules(twice, batch=lambda args, dims: (twice(args[0]), dims[0]))
    >>> fgrad.vmap(twice)(np.arange(3.0))
    array([0., 2., 4.])
    """
    if not isinstance(prim, (Primitive, NondiffPrimitive)):
        held = getattr(prim, "primitive", None)
        hint = (
            f"; pass its primitive, {getattr(prim, '__name__', 'f')}.primitive"
            if isinstance(held, (Primitive, NondiffPrimitive))
            else ""
        )
        raise TypeError(
            f"register_rules: the first argument must be a Primitive or NondiffPrimitive, "
            f"not a {type(prim).__name__} ({prim!r}){hint}"
        )
    flags = shape_from_values or raises_on_values or row_by_row is not None
    if batch is None and taylor is None and forward is None and sparsity is None and not flags:
        raise TypeError(
            f"register_rules({prim.name!r}): nothing to register; give batch= (a batching "
            "rule), taylor= (a Taylor rule), forward= (why it has a forward rule), "
            "sparsity= (its sparsity rule), shape_from_values=True, raises_on_values=True or "
            "row_by_row= (why vmap takes one row at a time)"
        )
    if row_by_row is not None and not (isinstance(row_by_row, str) and row_by_row):
        raise TypeError(
            f"register_rules({prim.name!r}): row_by_row= is {row_by_row!r}; give the reason "
            "vmap applies the primitive to one row at a time, as a sentence"
        )
    if sparsity is not None and not (
        isinstance(sparsity, str) or (isinstance(sparsity, tuple) and isinstance(sparsity[0], str))
    ):
        raise TypeError(
            f"register_rules({prim.name!r}): sparsity= is {sparsity!r}; give the name of one "
            "of fgrad.sparsity.DECLARED's rules, or a tuple of a name and its arguments"
        )
    if taylor_kind is not None and (taylor is None or taylor_kind not in TAYLOR_RULE_KINDS):
        raise ValueError(
            f"register_rules({prim.name!r}): taylor_kind={taylor_kind!r} needs taylor= and one "
            f"of {', '.join(map(repr, TAYLOR_RULE_KINDS))}"
        )
    if forward is not None:
        if forward not in FORWARD_RULE_KINDS:
            raise ValueError(
                f"register_rules({prim.name!r}): forward={forward!r} is not one of "
                f"{', '.join(map(repr, FORWARD_RULE_KINDS))}"
            )
        if getattr(prim, "jvps", None) is None and getattr(prim, "jvp", None) is None:
            raise ValueError(
                f"register_rules({prim.name!r}): forward={forward!r} declares a forward rule, "
                "but the primitive has none (forward mode transposes its reverse rule)"
            )
    for keyword, rule, signature in (
        ("batch", batch, "batch(args, dims, **params) -> (out, out_dim)"),
        ("taylor", taylor, "taylor(primals, series, **params) -> (ans, out_series)"),
    ):
        if rule is not None and not callable(rule):
            raise TypeError(
                f"register_rules({prim.name!r}): {keyword}= is a {type(rule).__name__} "
                f"({rule!r}), not callable; give a function {signature}"
            )
    for keyword, rule, table in (
        ("batch", batch, _batching.rules),
        ("taylor", taylor, _taylor.rules),
    ):
        if rule is not None and not replace and prim in table:
            raise ValueError(
                f"register_rules({prim.name!r}): {keyword}= is given, but the primitive has "
                f"that rule already ({getattr(table[prim], '__qualname__', table[prim])}); pass "
                "replace=True to replace it"
            )
    # all checked before anything is written: a refused call registers nothing
    if forward is not None:
        forward_rules[prim] = forward
    if sparsity is not None:
        sparsity_declarations[prim] = sparsity
    if taylor is not None:
        taylor_kinds[prim] = taylor_kind or getattr(taylor, "kind", None)
    if batch is not None:
        _batching.rules[prim] = batch
    if taylor is not None:
        _taylor.rules[prim] = taylor
    if shape_from_values:
        _core.shape_from_values.add(prim)
    if raises_on_values:
        _core.raises_on_values.add(prim)
    if row_by_row is not None:
        _batching.declare_row_by_row(prim, row_by_row)


def _register_given(prim, batch, taylor, forward=None, taylor_kind=None, sparsity=None):
    """A builder's `batch=`, `taylor=`, `forward=`, `taylor_kind=` and `sparsity=`, registered
    if given."""
    if any(v is not None for v in (batch, taylor, forward, sparsity)):
        register_rules(
            prim,
            batch=batch,
            taylor=taylor,
            forward=forward,
            taylor_kind=taylor_kind,
            sparsity=sparsity,
        )


# Why a primitive has a forward rule of its own (`register_rules`'s `forward=`).
FORWARD_RULE_KINDS = {
    "derived": "both rules are made from one derivative expression (a builder's)",
    "linear": "the forward rule applies the operation, or its linear part, to the tangents",
    "speed": "a derivative written again by hand: transposing the reverse rule costs more",
}

# Primitive -> its kind of forward rule, as declared.
forward_rules: dict[Any, str] = {}

# What a registered Taylor rule is (`register_rules`'s `taylor_kind=`).
TAYLOR_RULE_KINDS = {
    "linear": "the operation on each coefficient (or a bilinear one's Cauchy products)",
    "derived": "made from the derivative, or the function itself, by a general construction",
    "speed": "a recurrence written by hand: the general rule costs more",
}

# Primitive -> the kind of its Taylor rule (None: not declared).
taylor_kinds: dict[Any, str | None] = {}

# Primitive -> how sparsity detection treats it (`register_rules`'s `sparsity=`), which
# `fgrad.sparsity` turns into its rule (it imports the NumPy layer, so it cannot be imported
# here).
sparsity_declarations: dict[Any, Any] = {}


def primitive(
    fprop: Callable[..., tuple[Any, Callable[..., Any]]] | None = None,
    *,
    jvp: Callable[..., Any] | None = None,
    name: str | None = None,
    multiple_results: bool = False,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """Register a differentiable operation from its fprop (usable as a decorator).

    Parameters
    ----------
    fprop : callable
        Takes the inputs and returns `(ans, bprop)`; `bprop` is a closure over the residuals it
        needs that maps the cotangent of `ans` to a tuple with one cotangent per positional
        input (`None` for "no gradient"). Write both in `fgrad.numpy` operations so that higher
        derivatives work. Keyword arguments are static parameters, never differentiated.
    jvp : callable, optional
        `jvp(tangents, ans, *args, **params)`, the forward-mode rule (`tangents` has `None` for
        inputs with no tangent). Without it, forward mode transposes the bprop.
    name : str, optional
        The primitive's name in graphs and errors; the function's name by default.
    multiple_results : bool, default False
        `ans` is a tuple of outputs; the bprop receives a list with one cotangent per output
        (None for an output that was not used) and `jvp` returns one tangent per output.
    batch, taylor : callable, optional
        Its batching rule (`vmap`) and Taylor rule (`jet`), as `register_rules` takes them.
        Without them, `vmap` applies the operation one row at a time and `jet` derives the
        Taylor coefficients from the forward rule.

    Returns
    -------
    callable
        The operation, differentiable in both modes and under `vmap` and `jet`; its `.primitive`
        attribute is the registered `Primitive`.

    Notes
    -----
    fgrad checks what the fprop and the rules return: `ans` an array or a number (a Python
    float becomes a NumPy scalar of the dtype NumPy gives it beside the inputs, an int or bool
    NumPy's own; a list or dict is refused), a tuple of
    them for `multiple_results`; one cotangent per positional input, each None or shaped like
    its input; a tangent, or Taylor coefficients, shaped like `ans`; `(out, out_dim)` from a
    batching rule (a ValueError or TypeError names the mistake). A cotangent, tangent or
    coefficient of another dtype is cast to its value's. Their values it trusts: check them
    with `fgrad.test_util.check_rule`. Arguments are arrays or numbers (a list or tuple of
    them is read as the array it stands for); a dict or other container holding traced values
    is refused, since the primitive would not see them.

    The fprop may close over values of outer transforms (they differentiate its operations on
    them), but not over a value that the transform applying the rule differentiates or
    batches: the rule gives it no derivative (and `vmap`, applying the primitive row by row,
    would pair its rows with every row of the arguments). That raises a TypeError naming the
    value: pass it as an argument.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> @fgrad.primitive
    ... def logsumexp(x):
    ...     m = fnp.max(x)
    ...     ans = m + fnp.log(fnp.sum(fnp.exp(x - m)))
    ...     return ans, lambda ct: (ct * fnp.exp(x - ans),)
    >>> g = fgrad.grad(logsumexp)(fnp.array([0.0, 1000.0]))
    >>> [round(float(v), 6) for v in g]
    [0.0, 1.0]
    """

    def make(fn):
        who = name or fn.__name__

        def impl(*args, **params):
            ans, _ = _pair(fn(*args, **params), who, "fprop", _FPROP_FORM)
            return _checked_ans(ans, who, multiple_results, args)

        prim = Primitive(
            who,
            impl,
            fprop=_checked_fprop(fn, who, multiple_results),
            jvp=None if jvp is None else _checked_jvp(jvp, who, multiple_results),
            multiple_results=multiple_results,
        )

        @functools.wraps(fn)
        def apply(*args, **params):
            for key, value in params.items():
                if type(value) is Box:
                    raise TypeError(
                        f"{prim.name}: keyword argument {key!r} is a traced value; keyword "
                        "arguments of a primitive are static parameters and are not "
                        "differentiated. Pass it positionally to differentiate it."
                    )
            for i, a in enumerate(args):
                if type(a) is not Box and isinstance(a, (list, tuple, dict)):
                    _refuse_unscanned_container(a, i, who)
            out = bind(prim, args, params)
            if type(out) is Box or type(out) is tuple:  # (a plain value cannot be nested wrongly)
                _refuse_nested_wrongly(out, fn, who)
            return out

        apply.primitive = prim
        _register_given(
            prim,
            None if batch is None else _checked_batch(batch, who, multiple_results),
            None if taylor is None else _checked_taylor(taylor, who, multiple_results),
        )
        return apply

    return make(fprop) if fprop is not None else make


def _refuse_unscanned_container(a, i, who):
    """Refuse argument `i`, a container holding a live box where `bind` does not look for one
    (a dict, a namedtuple, a list of dicts): `bind` would find no box, run the fprop on the
    boxes inside as plain code, and the primitive's rules would never be applied (its bprop
    bypassed, the fprop's operations differentiated instead). A plain list or tuple of boxes
    `bind` reads as the array it stands for, as NumPy does."""
    if (type(a) is list or type(a) is tuple) and _core.holds_box(a):
        return
    for b in boxes_in(a):
        if _holds_live_box(b):
            raise TypeError(
                f"{who}: argument {i} is a {type(a).__name__} holding traced values, which a "
                "primitive does not look into (its rules would be bypassed); pass the arrays "
                "as positional arguments, one cotangent for each from the bprop"
            )


def _holds_live_box(b):
    """Whether `b` holds a box of a live level that differentiates (one that reads values,
    `jit`'s or `vmap`'s, computes the fprop's operations on the values inside the container
    as they are: right, if not the primitive's own rules)."""
    while type(b) is Box:
        if b.level.live and not b.level.reads_values:
            return True
        b = b.value
    return False


def _refuse_nested_wrongly(out, fprop, who):
    """Refuse the output of a primitive whose fprop computed with a value of the level that
    applied it (or of a level inside that one) read other than through its arguments, which
    that level had stripped of its boxes: the output, a box of that level, then holds a box of
    the same level or of one inside it. A derivative level's rule gives such a value no
    derivative (it would be silently lost); a `vmap` level, applying the primitive one row at a
    time, would pair every row of the value with every row of the arguments. Under `jit`
    (a staging level applying the primitive, or its value read) the record is not kept and the
    function runs again without it (`Level.cannot_record`). An outer level
    that applied the primitive again (`vmap` to each row, forward mode for the value its
    forward rule needs) nests such a box further down: every box of the output is looked at."""
    for o in out if type(out) is tuple else (out,):
        while type(o) is Box:  # (an outer level may have applied the primitive again: vmap's
            inner = o.value  # rows, a forward rule's value, so look all the way down)
            if type(inner) is not Box:
                break
            level, own = o.level, inner.level
            if own.live and own.depth >= level.depth:
                staging = own if own.stages else level if level.stages else None
                if staging is None:
                    raise TypeError(_closure_message(fprop, who, own))
                # `jit` recording: a replay would run the fprop with this call's value, and
                # the levels are nested the wrong way round; the function runs again without
                # the staging level (where the fprop's reads are right, or refused as above)
                staging.cannot_record(
                    f"{who}'s fprop reads a traced value other than through its arguments; "
                    "pass it to the primitive as an explicit argument"
                )
            o = inner


def _closure_message(fprop, who, level):
    """Why a primitive whose fprop reads a value of `level` (a closure over it) is refused, and
    which value it is, when it can be found among what the fprop reads."""
    found = next(
        (
            (name, b)
            for name, v in free_values(fprop)
            for b in boxes_in(v)
            if _core.holds_box_of(b, level)
        ),
        None,
    )
    if found is None:
        what = "a traced value"
    else:
        name, b = found
        what = f"{name} (a traced value with shape {_core.shape_of(b)}, dtype {_core.dtype_of(b)})"
    if level.batches:
        kind = "a value batched by the vmap applying the primitive"
        consequence = (
            "applied one row at a time, it would pair every row of that value with every row "
            "of its arguments"
        )
    else:
        kind = "a value differentiated by the transform applying the primitive"
        consequence = "its bprop gives that value no derivative, which would be silently lost"
    return (
        f"{who}: its fprop reads {what}, {kind}, other than through its arguments; "
        f"{consequence}. Pass the value to the primitive as an explicit argument (and return "
        "its cotangent from the bprop)"
    )


def _is_value(v):
    return (
        type(v) is Box
        or isinstance(v, (int, float, complex, _np.ndarray, _np.generic))
        or _core.is_foreign_array(v)
    )


def _checked_ans(ans, who, multiple_results, inputs):
    """The value an fprop (or a Taylor rule) returned, as fgrad computes with it: a Python
    number made a NumPy scalar, which has a dtype and so carries a derivative (forward mode
    transposing the bprop gave a Python float a zero tangent). A float's or a complex's
    dtype is the one NumPy gives it beside the `inputs` (float32 beside float32 inputs,
    float64 beside none): a Taylor rule returning `float(...)` made `jet`'s value float64
    where the primitive's own is float32. An int or a bool (a count, a flag) is NumPy's int64
    or bool, as before (beside float inputs it became a float, and 300 from uint8 data
    overflowed). A
    list, a dict or a tuple as the one value is refused: read as one value they got a zero
    tangent too, and several values need `multiple_results` (a tuple, which is checked)."""
    if not multiple_results:
        return _checked_output(ans, who, "ans", inputs)
    if type(ans) is list:  # (JAX's primitives return a list of their outputs)
        ans = tuple(ans)
    if not isinstance(ans, tuple):
        raise TypeError(
            f"{who}: with multiple_results=True its fprop must return a tuple of outputs as "
            f"ans, got {_described(ans)}; return (ans_1, ans_2, ...)"
        )
    checked = tuple(_checked_output(a, who, f"output {k}", inputs) for k, a in enumerate(ans))
    return ans if all(c is a for c, a in zip(checked, ans)) else checked


def _checked_output(a, who, what, inputs):
    kind = type(a)
    if kind is Box or kind is _np.ndarray or isinstance(a, _np.generic):
        return a
    if kind is float or kind is complex:
        dtypes = [_core.dtype_of(x) for x in inputs if _has_dtype(x)]
        return _np.asarray(a, _np.result_type(*dtypes, a))[()]
    if kind is int or kind is bool:  # (a count or a flag: not of the inputs' dtype)
        return _np.asarray(a)[()]
    if _core.is_foreign_array(a):
        return a
    several = (
        "; for several outputs pass multiple_results=True and return a tuple of them"
        if what == "ans" and isinstance(a, (list, tuple, dict))
        else ""
    )
    raise TypeError(
        f"{who}: its fprop returned {_described(a)} as {what}; return an array or a number "
        f"(fnp.stack or fnp.array makes one of several values){several}"
    )


def _has_dtype(x) -> bool:
    """Whether `x` is an array (traced, NumPy's or another library's) or a NumPy scalar: what
    has a dtype of its own, as a Python number has not."""
    return (
        type(x) is Box
        or type(x) is _np.ndarray
        or isinstance(x, _np.generic)
        or (_core.is_foreign_array(x))
    )


def _described(v):
    name = type(v).__name__
    article = "an" if name[0] in "aeiou" or name.startswith("nd") else "a"
    return f"{article} {name}" + (f" of length {len(v)}" if isinstance(v, (list, tuple)) else "")


_FPROP_FORM = "(ans, bprop), a value and a function of the cotangent"


def _pair(result, who, rule, form):
    """`result`, what a user's `rule` returned, when it is a pair; else a TypeError naming the
    primitive, the rule and the `form` the pair must have."""
    if type(result) is not tuple or len(result) != 2:
        raise TypeError(f"{who}: its {rule} must return {form}; got {_described(result)}")
    return result


def _checked_fprop(fprop, who, multiple_results=False):
    """A user's fprop whose bprop is checked at every call: a tuple of one cotangent per
    positional input, each None or a value shaped like its input (a bprop that forgets to sum
    a broadcast back, or returns too few cotangents, would otherwise give a gradient of the
    wrong shape, or a silent zero). A cotangent of another dtype is cast to its input's
    (`cast_cotangent`): a complex one for a real input to its real part, one for an integer
    input to None, as for `custom_vjp`'s bwd, so that a gradient has its input's dtype. fgrad's
    own primitives are not made here: no cost to them."""

    def checked(*args, **params):
        out = fprop(*args, **params)
        ans, bprop = _pair(out, who, "fprop", _FPROP_FORM)
        if not callable(bprop):
            raise TypeError(f"{who}: its fprop must return {_FPROP_FORM}; got {_described(bprop)}")
        ans = _checked_ans(ans, who, multiple_results, args)

        def checked_bprop(ct):
            cts = bprop(ct)
            if type(cts) not in (tuple, list):
                raise TypeError(
                    f"{who}: its bprop must return a tuple with one cotangent per positional "
                    f"input ({len(args)}), got {type(cts).__name__}; write `return (ct_x,)` "
                    "for one input"
                )
            if len(cts) != len(args):
                raise ValueError(
                    f"{who}: its bprop returned {len(cts)} cotangent(s) for {len(args)} "
                    "positional input(s); return one per input (None for no gradient)"
                )
            recast = False
            for i, (c, a) in enumerate(zip(cts, args)):
                if c is None:
                    continue
                if not _is_value(c) or _core.shape_of(c) != _core.shape_of(a):
                    shape = _core.shape_of(c) if _is_value(c) else None
                    got = f"a {type(c).__name__}" if shape is None else f"shape {shape}"
                    raise ValueError(
                        f"{who}: its bprop returned {got} as the cotangent of input {i}, "
                        f"which has shape {_core.shape_of(a)}; return one shaped like the input "
                        "(sum a broadcast back over the axes it added)"
                    )
                recast = recast or _core.dtype_of(c) != _core.dtype_of(a)
            if recast:  # (a gradient has its input's dtype, as a custom_vjp's bwd's is made to)
                return tuple(
                    None if c is None else cast_cotangent(c, _core.dtype_of(a))
                    for c, a in zip(cts, args)
                )
            return cts

        return ans, checked_bprop

    return checked


# A cotangent of another dtype than its input's, cast to the input's dtype (None for an input of
# an integer or bool dtype, which has no derivative), as `custom_vjp` casts bwd's: in fgrad
# operations (a differentiable astype), which this module does not import: `fgrad.custom` sets it.
def cast_cotangent(ct: Any, dtype: _np.dtype) -> Any:
    """Replaced by `fgrad.custom`'s (see above) when it is imported."""
    raise RuntimeError("casting a primitive's cotangent needs fgrad.custom")


def _checked_batch(rule, who, multiple_results=False):
    """A user's batching rule whose result is checked: `(out, out_dim)` (a tuple of outputs and
    a tuple of axes for several), each axis in range and holding every row (one that dropped
    rows would pass a result of another length on, silently; a malformed result gave a bare
    IndexError, or an error about scalar indices from unpacking the rows of an array)."""

    @functools.wraps(rule)  # (`__wrapped__`: the rule as given)
    def checked(args, dims, **params):
        out, out_dim = _pair(
            rule(args, dims, **params),
            who,
            "batching rule",
            "(out, out_dim), the result for all rows and its batch axis (None if the same for "
            "every row)",
        )
        several = multiple_results or type(out_dim) is tuple
        if several and (
            not isinstance(out, (tuple, list))
            or type(out_dim) is not tuple
            or len(out) != len(out_dim)
        ):
            raise TypeError(
                f"{who}: its batching rule must return a tuple of outputs and a tuple of their "
                f"batch axes, one per output; got {_described(out)} and {_described(out_dim)}"
            )
        n = next(_core.shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
        outs, out_dims = (out, out_dim) if several else ((out,), (out_dim,))
        for k, (o, d) in enumerate(zip(outs, out_dims)):
            _check_batched_output(o, d, n, k, who)
        return out, out_dim

    return checked


def _check_batched_output(o, d, n, k, who):
    if d is None:
        return
    if not _is_value(o):
        raise TypeError(
            f"{who}: its batching rule returned {_described(o)} as output {k}; return an array "
            f"holding the {n} rows along its batch axis"
        )
    shape = _core.shape_of(o)
    if (
        isinstance(d, bool)
        or not isinstance(d, (int, _np.integer))
        or not -len(shape) <= d < len(shape)
    ):
        raise ValueError(
            f"{who}: its batching rule returned the batch axis {d!r} for output {k}, which is "
            f"out of range for an output of shape {shape}; return (out, out_dim) with out_dim "
            f"the axis of out holding the {n} rows (None if the same for every row)"
        )
    if shape[d] != n:
        raise ValueError(
            f"{who}: its batching rule returned output {k} with shape {shape} and batch axis "
            f"{d}, for {n} rows; return every row along that axis"
        )


def _checked_jvp(jvp, who, multiple_results):
    """A user's forward rule whose tangent is checked: shaped like the output (a tuple of
    them for `multiple_results`). A tangent of another dtype is cast to the output's, as
    `custom_jvp` casts its rule's (`cast_cotangent`: the real part of a complex one for a real
    output, None for an integer output), so that tracing never changes a value's dtype."""

    def checked(tangents, ans, *args, **params):
        t = jvp(tangents, ans, *args, **params)
        outs, ts = (ans, t) if multiple_results else ((ans,), (t,))
        if multiple_results and (type(t) not in (tuple, list) or len(t) != len(ans)):
            raise TypeError(
                f"{who}: its jvp must return one tangent per output ({len(ans)}), got "
                f"{type(t).__name__}"
            )
        recast = False
        for k, (tk, o) in enumerate(zip(ts, outs)):
            if tk is None:
                continue
            if not _is_value(tk) or _core.shape_of(tk) != _core.shape_of(o):
                got = f"shape {_core.shape_of(tk)}" if _is_value(tk) else f"a {type(tk).__name__}"
                raise ValueError(
                    f"{who}: its jvp returned {got} as the tangent of output {k}, which has "
                    f"shape {_core.shape_of(o)}; return a tangent shaped like the output"
                )
            recast = recast or _core.dtype_of(tk) != _core.dtype_of(o)
        if not recast:
            return t
        cast = tuple(
            None if tk is None else cast_cotangent(tk, _core.dtype_of(o)) for tk, o in zip(ts, outs)
        )
        return cast if multiple_results else cast[0]

    return checked


def _checked_taylor(rule, who, multiple_results):
    """A user's Taylor rule whose result is checked: `(ans, out_series)`, with as many
    coefficients per output as each input has, each None or shaped like its output (a wrong
    shape came back from `jet` and `derivative`; too few gave a bare IndexError). A
    coefficient of another dtype is cast to its output's, as a tangent is (`_checked_jvp`)."""

    @functools.wraps(rule)  # (`__wrapped__`: the rule as given)
    def checked(primals, series, **params):
        ans, out = _pair(
            rule(primals, series, **params),
            who,
            "Taylor rule",
            "(ans, out_series), the value and its Taylor coefficients",
        )
        ans = _checked_ans(ans, who, multiple_results, primals)
        order = next((len(s) for s in series if s is not None), None)
        if not multiple_results:
            return ans, _checked_coefficients(out, ans, order, who, "its output")
        if not isinstance(out, (tuple, list)) or len(out) != len(ans):
            raise TypeError(
                f"{who}: its Taylor rule must return one tuple of coefficients per output "
                f"({len(ans)}), got {_described(out)}"
            )
        return ans, tuple(
            _checked_coefficients(c, a, order, who, f"output {k}")
            for k, (c, a) in enumerate(zip(out, ans))
        )

    return checked


def _checked_coefficients(cs, ans, order, who, what):
    if cs is None:
        return None
    if type(cs) not in (tuple, list) or (order is not None and len(cs) != order):
        raise ValueError(
            f"{who}: its Taylor rule returned {_described(cs)} as the coefficients of {what}; "
            f"return a tuple of {order} (one per coefficient of the inputs, None for a zero), "
            "or None for all zero"
        )
    shape, dtype = _core.shape_of(ans), _core.dtype_of(ans)
    for m, c in enumerate(cs):
        if c is not None and (not _is_value(c) or _core.shape_of(c) != shape):
            got = f"shape {_core.shape_of(c)}" if _is_value(c) else _described(c)
            raise ValueError(
                f"{who}: its Taylor rule returned {got} as coefficient {m + 1} of {what}, "
                f"which has shape {shape}; return coefficients shaped like the output"
            )
    return tuple(
        c if c is None or _core.dtype_of(c) == dtype else cast_cotangent(c, dtype) for c in cs
    )


# --- what a function reads besides its arguments -------------------------------------------------
# A user's rule (a primitive's fprop, a custom function's rules) may read traced values through
# its closure: where the level applying the rule differentiates or batches such a value, the
# rule cannot account for it, and the error that refuses it names it from here.


def free_values(fn, depth=0, seen=None):
    """(name, value) for what `fn` reads besides its arguments: closure cells, the arguments of
    a functools.partial, default arguments, a bound method's object and the globals its code
    names (nested functions' code included), and what the functions among those read in turn
    (to a depth of three)."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return
    seen.add(id(fn))
    for name, v in _reads(fn):
        if callable(v) and type(v) is not Box:
            if depth < 3 and not isinstance(v, type) and not _core.is_fgrads(v):
                yield from ((f"{name} -> {sub}", w) for sub, w in free_values(v, depth + 1, seen))
        else:
            yield name, v


def _reads(fn):
    while isinstance(fn, functools.partial):
        yield from ((f"partial argument {k!r}", v) for k, v in enumerate(fn.args))
        yield from ((f"partial argument {k!r}", v) for k, v in fn.keywords.items())
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, type) and inspect.ismethod(fn):
        yield from ((f"self.{k}", v) for k, v in getattr(owner, "__dict__", {}).items())
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        return
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            yield repr(name), cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    defaults = fn.__defaults__ or ()
    first = code.co_argcount - len(defaults)
    for k, v in enumerate(defaults):
        yield f"default argument {code.co_varnames[first + k]!r}", v
    yield from ((f"default argument {k!r}", v) for k, v in (fn.__kwdefaults__ or {}).items())
    scope = fn.__globals__
    for name in _global_names(code):
        v = scope.get(name)
        if v is not None and not inspect.ismodule(v):
            yield f"global {name!r}", v


def boxes_in(v, depth=0):
    """The boxes in v, looking into lists, tuples and dicts a little way."""
    if type(v) is Box:
        yield v
    elif depth < 2 and isinstance(v, (list, tuple, dict)):
        for item in v.values() if isinstance(v, dict) else v:
            yield from boxes_in(item, depth + 1)


def _global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _global_names(const)
    return names


def defprimitive(
    impl: Callable[..., Any],
    vjp: Callable[..., Any] | tuple[Callable[..., Any] | None, ...] | None,
    jvp: Callable[..., Any] | tuple[Callable[..., Any] | None, ...] | None,
    name: str | None = None,
    *,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
    forward: str | None = None,
    taylor_kind: str | None = None,
    sparsity: str | tuple | None = None,
) -> Primitive:
    """A built-in primitive from per-input rules (see `fgrad.core.Primitive`).

    `vjp` and `jvp` are one rule for a one-input primitive or a tuple with one per input;
    `batch` and `taylor` its batching and Taylor rules, `forward` why it has a forward rule,
    `taylor_kind` what its Taylor rule is, `sparsity` its sparsity rule (`register_rules`).
    """
    vjps = vjp if type(vjp) is tuple else (vjp,)
    jvps = jvp if type(jvp) is tuple else (jvp,)
    # mypy cannot tell that a rule is never a tuple subclass, which the tests above leave wrapped
    prim = Primitive(name or impl.__name__, impl, vjps=vjps, jvps=jvps)  # type: ignore[arg-type]
    _register_given(prim, batch, taylor, forward, taylor_kind, sparsity)
    return prim


def _as_function(prim):
    """A one-input primitive without parameters as a plain function, with the primitive as its
    `.primitive` (as `primitive` returns).

    Why a function: calling a `Primitive` object goes through Python's generic `__call__`
    slot and packs `*args, **params`, which costs about twice a plain call, and these are the
    functions that programs and their bprops apply most.
    """

    def apply(x: Any) -> Any:
        return bind_one(prim, x)

    apply.__name__ = apply.__qualname__ = prim.name
    apply.primitive = prim
    return apply


def defunary(
    impl: Callable[[Any], Any],
    derivative: Callable[[Any, Any], Any] | str | None = None,
    *,
    vjp: Callable[[Any, Any], Callable[[Any], Any]] | None = None,
    jvp: Callable[[Any, Any, Any], Any] | None = None,
    name: str | None = None,
    namespace: dict[str, Any] | None = None,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
    forward: str | None = None,
) -> UnaryFunction:
    """An elementwise primitive of one argument without parameters (sin, exp, ...), returned as
    a plain function (see `_as_function`).

    Give `derivative(ans, x)`, the derivative of `impl` at x in fgrad operations: the reverse
    rule is `ct * derivative` and the forward rule `t * derivative`, both computed when they run
    (so the bprop keeps x and ans, not the derivative). Or give `vjp` and `jvp` for a function
    whose rules are not a product with its derivative (abs, conj, real, ...), and `forward`,
    why the forward rule is written apart (`register_rules`).

    The derivative may also be an expression in `ans` and `x`, as a string, with the module
    whose names it uses as `namespace` (its `globals()`): it is then written into both rules
    (`_inlined_rules`), which saves the call of a derivative function in every bprop, about 5%
    of a chain of small operations (benchmarks/bench_peers.py, chain10).

    `batch` and `taylor` are its batching and Taylor rules (`register_rules`).

    >>> import numpy as np, fgrad
    >>> from fgrad.primitive import defunary
    >>> cube = defunary(lambda x: x ** 3, lambda ans, x: 3.0 * x * x, name="cube")
    >>> float(fgrad.grad(cube)(2.0)), float(fgrad.jvp(cube, (2.0,), (1.0,))[1])
    (12.0, 12.0)
    >>> square = defunary(np.square, "2.0 * x", name="square", namespace={})
    >>> float(fgrad.grad(square)(3.0)), float(fgrad.jvp(square, (3.0,), (1.0,))[1])
    (6.0, 6.0)
    """
    if (derivative is None) == (vjp is None or jvp is None):
        raise ValueError("defunary: give derivative, or both vjp and jvp")
    if derivative is not None:
        forward = "derived"  # both rules below come from the one derivative
    if isinstance(derivative, str):
        if namespace is None:
            raise ValueError("defunary: a derivative given as an expression needs its namespace")
        vjp, jvp = _inlined_rules(derivative, name or impl.__name__, namespace)
    elif derivative is not None:

        def vjp(ans, x):
            return lambda ct: ct * derivative(ans, x)

        def jvp(t, ans, x):
            return t * derivative(ans, x)

    prim = defprimitive(impl, vjp, jvp, name, batch=batch, taylor=taylor, forward=forward)
    return _as_function(prim)


def _inlined_rules(expression: str, name: str, namespace: dict[str, Any]) -> tuple[Any, Any]:
    """The reverse rule `ct * (expression)` and the forward rule `t * (expression)` of an
    elementwise function, the derivative's expression written into each. Their names are looked
    up in `namespace` when a rule runs, as a function defined in that module would."""
    source = (
        f"def vjp(ans, x):\n    return lambda ct: ct * ({expression})\n"
        f"def jvp(t, ans, x):\n    return t * ({expression})\n"
    )
    rules: dict[str, Any] = {}
    # a file name inside the package, so that tracebacks and `fgrad.provenance` (which looks for
    # the user's line outside the package) read the rules as fgrad's own code
    where = os.path.join(os.path.dirname(__file__), f"<the derivative of {name}: {expression}>")
    exec(compile(source, where, "exec"), namespace, rules)
    return rules["vjp"], rules["jvp"]


def deflinear(
    impl: Callable[..., Any],
    transpose: Callable[..., Any],
    name: str | None = None,
    *,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
    sparsity: str | tuple | None = None,
) -> Primitive:
    """A primitive linear in its one input (reshapes, sums, FFTs, ...): the forward rule is the
    primitive itself applied to the tangent, with the same parameters. `transpose(ans, x,
    **params) -> (ct -> cotangent of x)` is the reverse rule: the transposed map. Its Taylor
    rule is `fgrad.taylor.linear_rule` unless `taylor` gives another; `batch` is its batching
    rule, `sparsity` its sparsity rule (`register_rules`).

    >>> import numpy as np, fgrad
    >>> from fgrad.primitive import deflinear
    >>> double = deflinear(lambda x: 2.0 * x, lambda ans, x: lambda ct: 2.0 * ct, name="double")
    >>> float(fgrad.grad(double)(1.0)), float(fgrad.jvp(double, (1.0,), (3.0,))[1])
    (2.0, 6.0)
    """
    prim = None

    def same(t, ans, x, /, **params):  # positional-only: a parameter may be named x
        return bind(prim, (t,), params)

    prim = defprimitive(impl, transpose, same, name)
    register_rules(
        prim,
        batch=batch,
        taylor=taylor or _taylor.linear_rule(prim),
        forward="linear",
        sparsity=sparsity,
    )
    return prim


def defbilinear(
    impl: Callable[..., Any],
    vjp: tuple[Callable[..., Any] | None, Callable[..., Any] | None],
    name: str | None = None,
    *,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
    sparsity: str | tuple | None = None,
) -> Primitive:
    """A primitive of two inputs, linear in each (products, convolutions): the forward rule of
    each input is the primitive with that input replaced by its tangent. `vjp` is the pair of
    reverse rules. Its Taylor rule is `fgrad.taylor.bilinear_rule` unless `taylor` gives
    another; `batch` is its batching rule, `sparsity` its sparsity rule (`register_rules`).

    >>> import fgrad
    >>> from fgrad.primitive import defbilinear
    >>> mul = defbilinear(lambda x, y: x * y, (lambda ans, x, y: lambda ct: ct * y,
    ...                                        lambda ans, x, y: lambda ct: x * ct), name="mul")
    >>> fgrad.jvp(mul, (2.0, 3.0), (1.0, 1.0))[1]
    np.float64(5.0)
    """
    prim = None

    def jvp_x(t, ans, x, y, /, **params):
        return bind(prim, (t, y), params)

    def jvp_y(t, ans, x, y, /, **params):
        return bind(prim, (x, t), params)

    prim = defprimitive(impl, vjp, (jvp_x, jvp_y), name)
    register_rules(
        prim,
        batch=batch,
        taylor=taylor or _taylor.bilinear_rule(prim),
        forward="linear",
        sparsity=sparsity,
    )
    return prim


def nondiff(
    impl: Callable[..., Any],
    name: str | None = None,
    *,
    batch: Callable[..., Any] | None = None,
    taylor: Callable[..., Any] | None = None,
) -> NondiffPrimitive:
    """A built-in with no derivative: its result is a constant at every level. `batch` and
    `taylor` are its batching and Taylor rules (`register_rules`)."""
    prim = NondiffPrimitive(name or impl.__name__, impl)
    _register_given(prim, batch, taylor)
    return prim


# The core's own primitive with a forward rule: the sum of two tangents passes each through;
# its Taylor coefficients are the sums of its inputs'.
register_rules(add_any, forward="linear", taylor=_taylor.linear_rule(add_any))
# The core's stop_gradient in a `jit` record: under `vmap`, each row is its own value.
register_rules(stop_gradient_p, batch=lambda args, dims: (args[0], dims[0]))
