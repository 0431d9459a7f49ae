"""Shape, broadcasting, indexing, dtype casts and `sum`: the linear operations every rule uses,
and NumPy's calling conventions that every family follows.

`sum` lives here rather than with the reductions because it is the adjoint of `broadcast_to`:
undoing broadcasting in a bprop (`unbroadcast`) is a sum, and the bprop of a sum is a broadcast.
With NumPy's `where=`, `initial=` or `dtype=` it is NumPy's own `add.reduce` with them, and
its transpose spreads the cotangent back over the True elements of the mask.

The conventions: a function keeps NumPy's signature, defaults included (`NO_VALUE` is NumPy's
"no value"); a name without a derivative is NumPy's own function applied to plain values
(`nondiff_function`); a NumPy keyword that cannot mean anything for a traced value (`out=`,
and the memory keywords `order`, `subok`, `like`, `device`) is refused by name (`refuse_out`,
`refuse_layout`), and a plain value gets NumPy's own result with every keyword.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.taylor` (rules).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import operator as _operator
import os
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as _np

from .. import batching as _batching, core as _core, taylor as _taylor
from ..core import (
    Box,
    Primitive,
    bind,
    constant_of,
    dtype_of,
    primal,
    shape_of,
    whole_value,
    zeros_like_value,
)
from ..primitive import deflinear, defprimitive, nondiff, register_rules
from ._mirror import exported, kind_of, mirror

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Literal

    from ..typing import Array, ArrayLike, DTypeLike


# --- NumPy's calling conventions: its defaults, and its keywords refused by name ------------------
# The names declared without a derivative keep NumPy's own signature; a NumPy keyword that
# cannot mean anything inside a transform is refused by name.

_F = TypeVar("_F", bound="Callable[..., Any]")  # a function type, which `variant` keeps
NO_VALUE: Any = _np._NoValue  # NumPy's own "not given" default, so signatures read as NumPy's
# (typed Any, as NumPy's stubs type their `...` defaults: a parameter reads `keepdims: bool =
# NO_VALUE`, and the marker only ever means "not given")


def nondiff_function(theirs, name=None, settings=()):
    """NumPy's function `theirs` declared without a derivative: it is applied to the plain
    values of its arguments, so it accepts exactly what NumPy's does (its signature is
    NumPy's), and its result is a constant at every level. `settings` names parameters that
    set what is computed rather than hold data (round's `decimals`): given by position too,
    they are read as keywords are (the rows' value under `vmap`), not batched as operands."""
    name = name or theirs.__name__
    prim = nondiff(theirs, name)
    parameters = list(inspect.signature(theirs).parameters)
    out_at = parameters.index("out") if "out" in parameters else None
    setting_at = {parameters.index(p): p for p in settings}
    first_setting = min(setting_at, default=0)

    def fn(*args: Any, **kwargs: Any) -> Array:
        if out_at is not None:
            _refuse_out_of_traced(args, kwargs, out_at, name)
        if setting_at and len(args) > first_setting:  # it and what follows, by name
            named = dict(zip(parameters[first_setting:], args[first_setting:]))
            args, kwargs = args[:first_setting], {**kwargs, **named}
        if kwargs:
            kwargs = {key: primal(value) for key, value in kwargs.items()}
        if not _core._PLAIN.issuperset(map(type, args)) and holds_foreign(args):
            # (a transform guards its own; outside one, this does)
            with _core.dispatch_guard():  # Dask would warn, then compute the whole array
                return prim(*args, **kwargs)
        return prim(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"NumPy's `{name}`, declared without a derivative: it runs on the plain "
        "values of its arguments, and its result is a constant at every level."
    )
    fn.__signature__ = inspect.signature(theirs)
    fn.primitive = prim  # what the batching rules know it by
    # a ufunc (a comparison, `floor`) keeps NumPy's ufunc signature: a ufunc without derivative
    return mirror("ufunc" if isinstance(theirs, _np.ufunc) else "constant")(fn)


def _refuse_out_of_traced(args, kwargs, out_at, name):
    """`out=` (by keyword or at its place) of a call on traced values: NumPy would write the
    plain values into it once, when `jit` records the call (replays returned that first call's
    values, or, for an `out` given to the jitted function, left it unwritten), and every row
    at once under `vmap`; refused as `out=` of the functions with a derivative is."""
    out = args[out_at] if len(args) > out_at else kwargs.get("out")
    if out is not None:
        named = [(f"argument {k}", v) for k, v in enumerate(args)] + list(kwargs.items())
        traced = [(k, v) for k, v in named if is_traced(v)]
        if traced:
            where, value = traced[0]
            refuse_out(out, name, f"; {where} is traced, {describe(value)}")


def variant(template: _F, name: str, body: Callable[..., Any], doc: str, **defaults: Any) -> _F:
    """A function `name` whose signature is `template`'s (its parameters and hints, with
    `defaults` replacing some of its defaults), so that `inspect.signature`, the docs and a
    type checker read the two alike; a call is bound as that signature binds it and every
    argument is passed to `body` by name. NumPy's functions of one signature are written once
    and made from it: `nansum` and `nanprod` from `sum` and `prod`, `std` from `var`, `ifftn`
    from `fftn`. The function is generated (`_function_of_signature`): a call costs what a
    call of a written-out function costs, and one more call, of the body.

    >>> import inspect, fgrad.numpy as fnp
    >>> inspect.signature(fnp.nansum) == inspect.signature(fnp.sum)
    True
    """
    signature = inspect.signature(template)
    if defaults:
        params = signature.parameters
        signature = signature.replace(
            parameters=[
                p.replace(default=defaults[n]) if n in defaults else p for n, p in params.items()
            ]
        )
    fn = _function_of_signature(name, signature, body)
    fn.__signature__ = signature
    fn.__annotations__ = {  # the hints, as a written-out function has them
        n: p.annotation for n, p in signature.parameters.items() if p.annotation is not p.empty
    }
    if signature.return_annotation is not signature.empty:
        fn.__annotations__["return"] = signature.return_annotation
    fn.__module__ = body.__module__  # the family module that declares it
    fn.__doc__ = doc
    return cast("_F", mirror(kind_of(template) or "function")(fn))


def _function_of_signature(name, signature, body):
    """A Python function `name` with `signature`'s parameters and defaults that passes every
    argument to `body` by name: written out and compiled once, so Python binds a call as it
    binds any function's (binding with `Signature.bind` at every call cost about 6 us)."""
    namespace = {"body": body}
    params, passed, kind_before = [], [], None
    for k, p in enumerate(signature.parameters.values()):
        if kind_before is p.POSITIONAL_ONLY and p.kind is not p.POSITIONAL_ONLY:
            params.append("/")
        if p.kind is p.KEYWORD_ONLY and kind_before not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            params.append("*")
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.default is not p.empty:
            namespace[f"_default_{k}"] = p.default
            text += f"=_default_{k}"
        params.append(text)
        passed.append(f"{p.name}={p.name}")
        kind_before = p.kind
    if kind_before is inspect.Parameter.POSITIONAL_ONLY:
        params.append("/")
    source = f"def {name}({', '.join(params)}):\n    return body({', '.join(passed)})\n"
    # a file name inside the package: tracebacks and `fgrad.provenance` read it as fgrad's code
    where = os.path.join(os.path.dirname(__file__), f"<fgrad.numpy.{name}>")
    exec(compile(source, where, "exec"), namespace)
    return namespace[name]


def refuse(name, keyword, why, instead):
    """The TypeError for a NumPy keyword given a value fgrad cannot honour: it names the
    function and the keyword, says why, and what to write instead."""
    return TypeError(f"{name}(..., {keyword}=...): {why}. {instead}")


def refuse_out(out, name, traced=""):
    """NumPy's `out=` writes into an array; inside a transform arrays are values. `traced`
    names the traced argument that makes the call a transform's, where the caller knows it."""
    if out is not None:
        given = describe(out) if hasattr(out, "dtype") else type(out).__name__
        raise TypeError(
            f"{name}(..., out=...) cannot write into an array inside fgrad (out: {given}"
            f"{traced}): arrays are values here. Use the returned value instead: "
            f"y = fgrad.numpy.{name}(...)"
        )


def refuse_traced(name: str, instead: str, **arguments: Any) -> None:
    """NumPy's in-place functions (`put`, `copyto`, ...) take plain arrays only: the TypeError
    for a traced argument names it and the functional form that returns the new array."""
    for keyword, value in arguments.items():
        if is_traced(value):
            raise TypeError(
                f"{name} writes into an array, and {keyword} is traced ({describe(value)}): "
                "inside a transform an array is a value, which cannot be written into nor "
                f"written into a plain array. Compute the new array instead: {instead}"
            )


def given(value):
    """Whether a keyword whose default is NumPy's "no value" was given."""
    return value is not NO_VALUE


def refuse_layout(name, **keywords):
    """For a traced input: NumPy's keywords about the memory of a new array (its layout
    `order`, `subok`, `like`, `device`, ...), each given as `keyword=(value, default)`, must
    keep their defaults, as fgrad's traced values have no memory layout, subclass or device
    to set."""
    for keyword, (value, default) in keywords.items():
        if keyword == "device" and value == "cpu":
            continue  # NumPy's one device, the same as none
        if not is_default(value, default):
            raise refuse(
                name,
                keyword,
                "it sets the memory layout, array subclass or device "
                "of a new array, which fgrad's traced values do not have",
                "Leave it out, and convert the result after the transform",
            )


def is_default(value, default):
    return value is default or (type(value) in (str, bool, int) and value == default)


# --- shape and dtype queries (plain values: they have no derivative) ------------------------------


@mirror("constant")
def shape(a: ArrayLike) -> tuple[int, ...]:
    """NumPy's `shape`, for plain and traced values alike (a value batched by `vmap` has the
    shape of one row)."""
    return shape_of(a)


@mirror("constant")
def ndim(a: ArrayLike) -> int:
    """NumPy's `ndim`: the number of axes of `a` (of a traced value, its value's; no read)."""
    return len(shape_of(a))


@mirror("constant")
def size(a: ArrayLike, axis: int | None = None) -> int:
    """NumPy's `size`: the number of elements, or the length of `axis`."""
    if type(a) is not Box:
        return _np.size(primal(a), axis)
    # a traced value's shape (one row's, under vmap) on a stand-in that allocates nothing:
    # NumPy's own answer for every form of `axis`
    return _np.size(_np.broadcast_to(_np.empty((), bool), shape_of(a)), axis)


def meta(x):
    """What a cotangent for x must match: x's shape, and its dtype (None for a Python number,
    which is weakly typed and takes the other operand's dtype)."""
    v = x
    while type(v) is Box:  # one walk down the boxes; a batched value's shape leaves out rows
        if v.level.batches and v.level.live:
            return shape_of(x), dtype_of(x)
        v = v.value
    try:
        return v.shape, v.dtype
    except AttributeError:  # a Python number, or a list that may hold traced values
        if isinstance(x, (int, float)):
            return (), None
        return shape_of(x), dtype_of(x)


# (0, 1, ..., n - 1): every axis of an n-dimensional array, as `_normalize_axes` gives it for
# axis=None, made once for every n up to NumPy's limit (64 axes)
_ALL_AXES = tuple(tuple(range(n)) for n in range(65))


def _normalize_axes(axis, nd, shape=None, ufunc=False):
    """`axis` (None, an integer or a tuple of integers) as a sorted tuple of non-negative ints,
    with NumPy's errors where a slip would otherwise reduce some other axis, silently: a
    TypeError for an entry that is not an integer (1.5 read as 1, or True as 1), NumPy's
    AxisError outside [-nd, nd), a ValueError for an axis named twice ((0, 0), or (1, -1) of
    a matrix). `shape`, when the caller has it, goes into the messages.

    With `ufunc`, an integer axis 0 or -1 of a 0-d array is no axis at all, as NumPy's ufunc
    reductions read it (np.sum(np.array(2.5), axis=0) is 2.5): sum, prod, max, min and the nan
    reductions made from them. mean, var, std and median refuse it, as NumPy's do."""
    if axis is None:
        return _ALL_AXES[nd] if nd < 65 else tuple(range(nd))
    if type(axis) is int and -nd <= axis < nd:
        return (axis % nd,)  # the common case, without the general one's checks and sorting
    if ufunc and nd == 0 and _is_integer(axis) and _operator.index(axis) in (0, -1):
        return ()
    entries = axis if isinstance(axis, tuple) else (axis,)
    out = [
        a % nd if type(a) is int and -nd <= a < nd else _axis_entry(a, axis, nd, shape)
        for a in entries
    ]
    if len(set(out)) < len(out):
        raise ValueError(
            f"duplicate value in 'axis': axis={axis!r} names an axis twice for an array of "
            f"{_dimensions(nd, shape)}; name each axis once"
        )
    return tuple(sorted(out))


def _is_integer(a):
    """Whether `a` is an integer as NumPy reads an axis (a bool is not)."""
    if isinstance(a, (bool, _np.bool_)):
        return False
    try:
        _operator.index(a)
    except TypeError:
        return False
    return True


def _dimensions(nd, shape):
    return f"shape {tuple(shape)}" if shape is not None else f"{nd} dimensions"


def _axis_entry(a, axis, nd, shape):
    """One entry `a` of `axis`, as an int in [0, nd)."""
    if isinstance(a, (bool, _np.bool_)):
        raise TypeError(
            f"axis={axis!r}: {a!r} is a bool, not an integer; pass the axis as an int (an "
            f"array of {_dimensions(nd, shape)})"
        )
    try:
        k = _operator.index(a)
    except TypeError:
        raise TypeError(
            f"axis={axis!r}: {a!r} ({type(a).__name__}) is not an integer; pass an int or a "
            f"tuple of ints (an array of {_dimensions(nd, shape)})"
        ) from None
    if not -nd <= k < nd:
        raise _np.exceptions.AxisError(
            f"axis {k} is out of bounds for an array of {_dimensions(nd, shape)} "
            f"(axis={axis!r}); pass axes in [{-nd}, {nd})"
        )
    return k % nd


def normalize_axis(axis, nd, who, argument="axis"):
    """`axis` of an array of `nd` dimensions in [0, nd): NumPy's AxisError (a ValueError and an
    IndexError) outside [-nd, nd), naming the function and its argument, where `%` alone would
    wrap it into another axis, silently."""
    if not -nd <= axis < nd:
        raise _np.exceptions.AxisError(
            f"{who}: {argument}: axis {axis} is out of bounds for array of dimension {nd}; "
            f"pass an axis in [{-nd}, {nd})"
        )
    return axis % nd


def _kept_shape(x_shape, axes):
    """x's shape with the reduced axes kept as length 1."""
    kept = list(x_shape)
    for i in axes:
        kept[i] = 1
    return tuple(kept)


# --- batching (vmap): the helpers -----------------------------------------------------------------
# The helpers every family's batching rules use (here and in the modules importing this one),
# the makers of rules shared by a family, and the fallback that applies a primitive to one row
# at a time (see `fgrad.batching`); each primitive's own rule sits beside it. In a rule, a
# value's `shape` includes its batch axis: the value is one level below the batching level.


def all_rows(x, name):
    """x's values in every row of the batches it is in at once (its innermost array; the
    layout is not the rows'), for a bound or a check that must serve every row: reading them
    this way splits no batch. Without a batch, x's value. `name` is the function reading
    them, for the error on a lazy array."""
    _core.refuse_lazy(name, "its rule reads the values (a bound or a check)", _core.innermost(x))
    return _np.asarray(whole_value(x))  # (under jit, a guard of the record)


def batch_to_front(x, dim):
    """x with its batch axis `dim` moved to the front (a view)."""
    return x if dim == 0 else moveaxis(x, dim, 0)


def batched_axis(axis, dim):
    """The axis of the batched value that is axis `axis` (non-negative) of one row."""
    return axis + (axis >= dim)


def with_example_ndim(x, dim, nd):
    """x with its batch axis first and length-1 axes after it, up to `nd` axes per row, so that
    it broadcasts against other arguments as one row would."""
    x = batch_to_front(x, dim)
    s = shape(x)
    missing = nd - (len(s) - 1)
    return x if missing <= 0 else _reshape_p(x, shape=s[:1] + (1,) * missing + s[1:])


def every_row(x, dim, size):
    """x with a leading batch axis of `size` rows; an unbatched x is the same in every row."""
    if dim is not None:
        return batch_to_front(x, dim)
    return _broadcast_to_p(x, shape=(size,) + shape(x))


def batch_size(args, dims):
    """The number of rows, from the first batched argument."""
    for a, d in zip(args, dims):
        if d is not None:
            return shape(a)[d]
    raise ValueError("no batched argument")


def row_by_row(prim, args, dims, params, size):
    """`prim` applied to each row, the results stacked along axis 0: right for any primitive,
    at the cost of one application per row."""
    if size == 0:
        return _no_rows(prim, args, dims, params)
    results = []
    for i in range(size):
        row = [
            a if d is None else getitem(a, (slice(None),) * d + (i,)) for a, d in zip(args, dims)
        ]
        results.append(bind(prim, row, params))
    if prim.multiple_results:
        outs = tuple(_rows_stacked(prim, [r[k] for r in results]) for k in range(len(results[0])))
        return outs, (0,) * len(outs)
    return _rows_stacked(prim, results), 0


def _rows_stacked(prim, rows):
    """The rows' results of `prim` stacked, or vmap's error where their shapes differ (a
    primitive whose output's shape depends on the values: `unique`, `nonzero`, ...)."""
    shapes = {tuple(shape(r)) for r in rows}
    if len(shapes) > 1:
        raise ValueError(
            f"vmap: {prim.name} gave outputs of different shapes per row "
            f"({', '.join(map(str, sorted(shapes)))}); vmap stacks the rows' outputs, so each "
            "output needs one shape in every row: call it on each row in a Python loop (padding "
            "its result afterwards does not help: the rows are stacked where it is called)"
        )
    return _stack_p(*rows, axis=0)


def _no_rows(prim, args, dims, params):
    """A batch of no rows: the primitive applied to one row of zeros gives the shapes and
    dtypes of the results, which get a batch axis of length 0."""
    row = [
        a if d is None else _np.zeros(shape(a)[:d] + shape(a)[d + 1 :], dtype_of(a))
        for a, d in zip(args, dims)
    ]
    out = bind(prim, [primal(a) for a in row], params)
    if prim.multiple_results:
        return tuple(_np.zeros((0,) + _np.shape(o), _np.result_type(o)) for o in out), (0,) * len(
            out
        )
    return _np.zeros((0,) + _np.shape(out), _np.result_type(out)), 0


_batching.row_by_row = row_by_row


def _same_axis(prim):
    """The rule of a primitive that acts on each element alone and keeps the shape."""

    def rule(args, dims, **params):
        return bind(prim, args, params), dims[0]

    return rule


def axis_batch_rule(fn):
    """The batching rule of `fn`, a function declared with `nondiff_function` that works
    along its first argument's `axis` (None: all of it, flattened; an int; a tuple, if fn
    takes one), as argmax, argsort, all and count_nonzero do: the rows go first and the axis
    moves one along. Other arguments are the same for every row."""
    prim = fn.primitive
    signature = inspect.signature(prim.impl)
    first = next(iter(signature.parameters))
    default = signature.parameters["axis"].default

    def rule(args, dims, **params):
        if any(d is not None for d in dims[1:]):
            why = "a second argument that differs by row"
            return _batching.rows_one_by_one(prim, args, dims, params, batch_size(args, dims), why)
        arguments = signature.bind(*args, **params).arguments
        x = batch_to_front(arguments.pop(first), dims[0])
        n, row = shape(x)[0], shape(x)[1:]
        axis = arguments.get("axis", default)
        if not row and _is_integer(axis) and _operator.index(axis) in (0, -1):
            # NumPy reads a 0-d value as one element along axis 0 (or -1): argsort gives [0],
            # argmax and all a scalar, with keepdims too
            x, row, axis = reshape(x, (n, 1)), (1,), 0
            arguments["axis"] = 0
            if "keepdims" in arguments:
                arguments["keepdims"] = False
        keep = arguments.get("keepdims", False) is True
        if axis is None:
            flat = reshape(x, (n, -1))
            if keep:
                arguments["keepdims"] = False
            out = bind(prim, (flat,), {**arguments, "axis": 1})
            return (reshape(out, (n,) + (1,) * len(row)) if keep else out), 0
        axes = _normalize_axes(axis, len(row))
        shifted = tuple(a + 1 for a in axes) if isinstance(axis, tuple) else axes[0] + 1
        return bind(prim, (x,), {**arguments, "axis": shifted}), 0

    register_rules(prim, batch=rule)


# --- reshape, transpose, broadcast ----------------------------------------------------------------


def _reshape_vjp(ans, x, shape):
    x_shape = shape_of(x)
    return lambda ct: _reshape_p(ct, shape=x_shape)


def _reshape_impl(x, shape):
    if type(x) is _np.ndarray:
        return x.reshape(shape)  # the method: 0.15 us, where np.reshape's dispatch takes 0.8
    if not _core.is_foreign_array(x):
        return _np.reshape(x, shape)
    # Dask reshapes only where chunks merge or split evenly. Every axis but the first in one
    # chunk makes most reshapes do; the rest take the whole array in one chunk (still lazy,
    # but one task holds it). fgrad.protocols rechunks a gradient back to its input's chunks.
    for rechunked in (
        lambda: x,
        lambda: x.rechunk({axis: -1 for axis in range(1, x.ndim)}),
        lambda: x.rechunk(-1),
    ):
        try:
            return _np.reshape(rechunked(), shape)
        except NotImplementedError:
            continue
    return _np.reshape(x.rechunk(-1), shape)  # raises Dask's own error


def _reshape_batch(args, dims, shape):
    (x,), (d,) = args, dims
    x = batch_to_front(x, d)
    return _reshape_p(x, shape=(shape_of(x)[0],) + tuple(shape)), 0


_reshape_p = deflinear(
    _reshape_impl, _reshape_vjp, name="reshape", batch=_reshape_batch, sparsity="moves"
)


@mirror("shape")
def reshape(
    a: ArrayLike,
    /,
    shape: int | Sequence[int],
    order: Literal["C", "F", "A"] = "C",
    *,
    copy: bool | None = None,
) -> Array:
    """NumPy's `reshape`. `order='F'` reads and writes the elements in Fortran order (as a
    transpose, a C-order reshape and a transpose back); 'A' does so when `a` is Fortran-
    contiguous in memory, as in NumPy. `copy` is NumPy's for a plain array; a traced value is
    never written to, so whether it shares memory cannot be observed, and any `copy` is
    accepted for it.

    >>> import fgrad.numpy as fnp
    >>> fnp.reshape(fnp.arange(6.0), (2, 3), order="F")
    array([[0., 2., 4.],
           [1., 3., 5.]])
    """
    if type(shape) is Box:  # a traced int (a `jit` argument): its value, guarded
        shape = read_int(shape)
    if isinstance(shape, (int, _np.integer)):
        shape = (int(shape),)
    shape = tuple(shape)
    try:
        if not is_traced(a) and (order == "C" or not holds_foreign(a)):  # (Dask: C order only)
            if order == "C" and copy is None:
                return _reshape_p(a, shape=shape)
            return _np.reshape(a, shape, order=order, copy=copy)
        if order != "C":
            order = _index_order(a, order, "reshape", allowed="CFA")
            if order == "F":
                return transpose(reshape(transpose(a), shape[::-1]))
        if shape_of(a) == shape and type(a) is Box:
            # nothing to record (a Python number `jit` holds: NumPy's array of it, as eagerly);
            # a list holding traced values is stacked below, into the array NumPy's would be
            return strongly_typed(a)
        return _reshape_p(a, shape=shape)
    except ValueError as error:
        _refuse_new_shape(a, shape, error)
        raise


def _refuse_new_shape(a, shape, error):
    """Raise fgrad's error in place of NumPy's `error` if `a` cannot take the shape `shape`
    (NumPy's names neither a's shape nor its dtype); return if it can, or if `error` is not
    NumPy's reshape error (an array-like's own, Dask's for lengths it does not know yet). On
    the failure path only, with `a` as the caller sees it (under `vmap`, one row)."""
    numpys = ("cannot reshape array", "can only specify one unknown", "negative dimensions")
    if not str(error).startswith((*numpys, "reshape: cannot reshape")):
        return  # (the last: fgrad's own, of an inner reshape: order='F' reshapes a transpose)
    if not all(isinstance(n, (int, _np.integer)) for n in shape):
        return  # NumPy's TypeError for a length that is not an int stands
    a_shape = shape_of(a)
    size = math.prod(a_shape)
    unknown = [n for n in shape if n < 0]
    known = math.prod(n for n in shape if n >= 0)
    if unknown == [-1] and (size % known == 0 if known else size == 0):
        return  # -1 stands for size // known: the shapes fit
    if not unknown and known == size:
        return
    if any(n < -1 for n in shape) or len(unknown) > 1:
        problem = "a length is negative: only one axis may be -1 (its length is computed)"
    elif unknown:
        problem = f"the other axes hold {known} elements, which do not divide {size}"
    else:
        problem = f"that shape holds {known}"
    raise ValueError(
        f"reshape: cannot reshape a ({describe(a)}, {size} elements) into shape {shape}: "
        f"{problem}; the new shape must hold the same number of elements (write -1 for one "
        f"axis to have its length computed, e.g. (-1,) or ({a_shape[0] if a_shape else 1}, -1))"
    ) from None


def _index_order(a, order, name, allowed):
    """NumPy's index `order` of reshape and ravel, with 'A' (and 'K' for a C- or Fortran-
    contiguous array) resolved by where a's elements lie in memory, as in NumPy."""
    if order is None:
        order = "C"
    if not isinstance(order, str) or order.upper() not in allowed:
        raise ValueError(
            f"{name}: order must be one of {', '.join(map(repr, allowed))}, got {order!r}"
        )
    order = order.upper()
    if order in "AK":
        v = _memory_of_a_row(a)
        if _np.isfortran(v):
            return "F"
        if order == "A" or v.flags.c_contiguous:
            return "C"
    return order


def _memory_of_a_row(a):
    """An array laid out in memory as a's value is (its elements are not read). For a value
    batched by `vmap`, an array of one row's shape whose axes lie in memory in the order of
    a row's (its strides skip the other rows, so a row alone is taken to be compact, as each
    array of a loop over rows would be)."""
    if type(a) is not Box:
        if type(a) is not _np.ndarray and _core.is_foreign_array(a):
            # a lazy array has no memory layout yet: read it as C-contiguous (NumPy's default)
            return _np.empty(a.shape, dtype=bool)
        return _np.asarray(a)
    v = _memory_of_a_row(a.value)  # as a's holder sees it: the levels below hold their rows
    level = a.level
    if level.stages and level.live:  # a `jit` record: its replay checks the layout read here
        level.read_with(a, _layout_of, _layout_key(v))
        return v
    if not (level.batches and level.live):
        return v
    row = v[(slice(None),) * a.aux + (0,)] if v.shape[a.aux] else _np.take(v, [], a.aux)
    return _np.empty_like(row, dtype=bool)  # order "K": the row's order of axes, compact


def _layout_key(v) -> tuple:
    """What NumPy's order 'A' and 'K' read of an array's memory: whether it is C- and
    Fortran-contiguous, and its strides (0 along an axis of length 1, which none crosses)."""
    flags = v.flags
    strides = tuple(st if n > 1 else 0 for st, n in zip(v.strides, v.shape))
    return (flags.c_contiguous, flags.f_contiguous, strides)


def _layout_of(value) -> tuple:
    """`_layout_key` of the memory of a row of `value` (a value under a `jit` record's box:
    what a replay reads to check the layout the record followed)."""
    return _layout_key(_memory_of_a_row(value))


@mirror("shape")
def ravel(a: ArrayLike, order: Literal["C", "F", "A", "K"] = "C") -> Array:
    """NumPy's `ravel`: the elements in C order, or 'F' (Fortran), 'A' (Fortran if `a` is
    Fortran-contiguous) or 'K' (as they lie in memory)."""
    if not is_traced(a) and (order == "C" or not holds_foreign(a)):  # (Dask: C order only)
        # the default order not passed on: Dask's ravel takes no `order`
        return _np.ravel(a) if order == "C" else _np.ravel(a, order=order)
    order = _index_order(a, order, "ravel", allowed="CFAK")
    if order == "K":  # where each element of NumPy's own ravel comes from
        v = _memory_of_a_row(a)
        positions = _np.empty_like(v, dtype=_np.intp)  # in v's memory layout
        positions[...] = _np.arange(v.size).reshape(v.shape)
        return getitem(reshape(a, (-1,)), _np.ravel(positions, order="K"))
    return reshape(a, (-1,), order=order)


def _transpose_vjp(ans, x, axes):
    inverse = tuple(_np.argsort(axes))
    return lambda ct: _transpose_p(ct, axes=inverse)


def _transpose_batch(args, dims, axes):
    (x,), (d,) = args, dims
    return _transpose_p(x, axes=(d,) + tuple(batched_axis(a, d) for a in axes)), 0


_transpose_p = deflinear(
    lambda x, axes: _np.transpose(x, axes),
    _transpose_vjp,
    name="transpose",
    batch=_transpose_batch,
    sparsity="moves",
)


@mirror("shape")
def transpose(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """NumPy's `transpose`; `axes=None` reverses the axes."""
    nd = ndim(a)
    if axes is None:
        axes = tuple(range(nd))[::-1]
    axes = tuple(normalize_axis(int(ax), nd, "transpose", "axes") for ax in axes)
    if axes == tuple(range(nd)) and type(a) is Box:
        # nothing to record (a Python number `jit` holds: NumPy's array of it, as eagerly). A
        # plain value takes NumPy's own below: a new array, never the caller's list or array
        return strongly_typed(a)
    return _transpose_p(a, axes=axes)


@mirror("shape")
def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    """NumPy's `swapaxes`: `a` with the two axes interchanged (a transpose, linear: its
    derivative swaps them back)."""
    if type(a) is _np.ndarray and _core.watch is None:
        # A plain array (a residual, in a matrix product's bprop) is a constant at every level:
        # NumPy's own view, a tenth of the time of binding the transpose.
        nd = a.ndim
        if -nd <= axis1 < nd and -nd <= axis2 < nd:  # (else the error below)
            return a.swapaxes(axis1, axis2)  # (a view even for axis1 == axis2, as NumPy's)
    nd = ndim(a)
    axes = list(range(nd))
    i, j = (
        normalize_axis(axis1, nd, "swapaxes", "axis1"),
        normalize_axis(axis2, nd, "swapaxes", "axis2"),
    )
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(a, axes)


@mirror("shape")
def moveaxis(a: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    """NumPy's `moveaxis`: `a` with the axes `source` moved to the places `destination`, the
    others in their order (a transpose, linear: its derivative moves them back)."""
    nd = ndim(a)
    src = [
        normalize_axis(s, nd, "moveaxis", "source")
        for s in (source if isinstance(source, (tuple, list)) else (source,))
    ]
    dst = [
        normalize_axis(d, nd, "moveaxis", "destination")
        for d in (destination if isinstance(destination, (tuple, list)) else (destination,))
    ]
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source {source!r} and destination {destination!r} must have the same "
            "number of elements"
        )
    for name, axes in (("source", src), ("destination", dst)):
        if len(set(axes)) < len(axes):
            raise ValueError(f"moveaxis: repeated axis in {name} {axes!r} (of {nd} dimensions)")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@mirror("shape")
def expand_dims(a: ArrayLike, axis: int | tuple[int, ...]) -> Array:
    """NumPy's `expand_dims` (int or tuple `axis`), as a reshape."""
    s = shape(a)
    axes: Sequence[int] = axis if isinstance(axis, tuple) else (axis,)
    nd = len(s) + len(axes)
    for ax in axes:  # (NumPy's errors; `%` alone would wrap them into other axes, silently)
        if not -nd <= ax < nd:
            raise _np.exceptions.AxisError(
                f"expand_dims: axis {ax} is out of bounds for a result with {nd} dimension(s) "
                f"(a: {describe(a)}); pass axes in [{-nd}, {nd})"
            )
    axes = sorted(ax % nd for ax in axes)
    if len(set(axes)) < len(axes):
        raise ValueError(f"expand_dims: repeated axis in {axis} (a: {describe(a)})")
    out = list(s)
    for ax in axes:
        out.insert(ax, 1)
    return reshape(a, tuple(out))


@mirror("shape")
def squeeze(a: ArrayLike, axis: int | tuple[int, ...] | None = None) -> Array:
    """NumPy's `squeeze`, as a reshape; squeezing an axis whose length is not 1 is an error."""
    s = shape(a)
    if axis is None:
        return reshape(a, tuple(n for n in s if n != 1))
    axes = _normalize_axes(axis, len(s))
    for ax in axes:
        if s[ax] != 1:
            raise ValueError(
                f"squeeze: axis {ax} of an array of shape {s} has length {s[ax]}, not 1; "
                "only axes of length 1 can be squeezed"
            )
    return reshape(a, tuple(n for i, n in enumerate(s) if i not in axes))


def is_plain_array(x):
    """Whether x is a NumPy array or scalar: a constant at every level. With no watch set,
    `bind` applies a primitive to such values by calling its impl and nothing else, so a bprop
    applied to them (in a first derivative) may call the impl itself, skipping bind's scan of
    the arguments: a third of the cost of a small operation."""
    return type(x) is _np.ndarray or type(x) in _NUMPY_SCALARS


_NUMPY_SCALARS = frozenset(
    (_np.float64, _np.float32, _np.float16, _np.longdouble, _np.complex128, _np.complex64)
)


def unbroadcast(ct, like):
    """Sum `ct` back to the shape in `like = meta(x)` and cast it to x's dtype. `like` is None
    when there is nothing to undo (see `unbroadcast_meta`).

    Broadcasting copies x along the new and length-1 axes, so its adjoint sums over them; a
    dtype promotion is a cast, so its adjoint casts back (float32 inputs get float32 gradients).
    """
    if like is None:
        return ct
    x_shape, x_dtype = like
    ct_shape, ct_dtype = (ct.shape, ct.dtype) if type(ct) is _np.ndarray else meta(ct)
    if _fits(ct_shape, ct_dtype, like):
        return ct
    if ct_shape != x_shape:
        lead = len(ct_shape) - len(x_shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(x_shape) if n == 1 and ct_shape[lead + i] != 1
        )
        if axes:
            ct = _sum_p(ct, axis=axes, keepdims=True)
        ct = _reshape_p(ct, shape=x_shape)
    if x_dtype is not None and ct_dtype != x_dtype:
        ct = _astype_p(ct, dtype=x_dtype)  # complex to real keeps the real part (JAX's rule)
    return ct


def _fits(shape, dtype, like):
    """Whether a value of this shape and dtype is already a cotangent for `like = meta(x)`."""
    x_shape, x_dtype = like
    return shape == x_shape and (x_dtype is None or dtype == x_dtype)


def unbroadcast_meta(x, ans):
    """What a bprop passes to `unbroadcast` for input x of a rule whose cotangent is computed
    elementwise from the cotangent of `ans` (so it has ans's shape and dtype): `meta(x)`, or
    None when x already has that shape and dtype. Decided once, when the rule is built, so
    that the bprop of the common unbroadcast operation does no work."""
    kind = type(x)
    if kind is Box and type(ans) is Box and not _core.holds_batch(x) and not _core.holds_batch(ans):
        # traced values (a rule traced by an outer level, or under jit): their plain values
        # have their shapes and dtypes
        x, ans = _core.innermost(x), _core.innermost(ans)
        kind = type(x)
    if kind is type(ans):  # the common cases, answered without building two metas
        if kind is _np.float64:
            return None
        if kind is _np.ndarray and x.shape == ans.shape and x.dtype == ans.dtype:
            return None
    like, ans_like = meta(x), meta(ans)
    # One tuple comparison (dtypes compare by identity first); a Python number's dtype (None)
    # is left to `unbroadcast`, as NumPy says `dtype == None` is true.
    if like == ans_like and like[1] is not None and ans_like[1] is not None:
        return None
    return like


def broadcast_like(t, ans):
    """A tangent broadcast to the shape and dtype of the result `ans` it is the tangent of."""
    ans_shape, ans_dtype = meta(ans)
    t_shape, t_dtype = meta(t)
    if t_shape == ans_shape and (t_dtype == ans_dtype or ans_dtype is None):
        return t
    if t_shape != ans_shape:
        t = _broadcast_to_p(t, shape=ans_shape)
    if ans_dtype is not None and t_dtype != ans_dtype:
        t = _astype_p(t, dtype=ans_dtype)
    return t


def _broadcast_to_vjp(ans, x, shape):
    like = meta(x)
    return lambda ct: unbroadcast(ct, like)


def _broadcast_to_impl(x, shape):
    """NumPy's `broadcast_to`: a read-only view of x. NumPy's builds it with an iterator in
    Python, 3 us, most of a sum's bprop; for a C-contiguous float array or scalar (a cotangent,
    nearly always) the same view (shape, strides, dtype, read-only) is made here in a fifth of
    that. Anything else, including every shape NumPy refuses, is NumPy's own."""
    kind = type(x)
    if (kind in _NUMPY_SCALARS or (kind is _np.ndarray and not x.shape)) and type(shape) is tuple:
        # a scalar (grad's own 1, the cotangent of a sum of everything): every stride is 0
        try:
            view = _np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        except (TypeError, ValueError):  # not a shape: NumPy's own error, below
            pass
        else:
            view.setflags(write=False)
            return view
    if isinstance(x, _np.generic):
        x = _np.asarray(x)
    if (
        type(x) is _np.ndarray
        and type(shape) is tuple
        and x.dtype.kind in "fc"
        and x.flags.c_contiguous
    ):
        lead = len(shape) - x.ndim
        if lead >= 0:
            strides = [0] * lead
            for n, m, stride in zip(x.shape, shape[lead:], x.strides):
                if n == 1 and type(m) is int and m >= 0:
                    strides.append(0)  # a broadcast axis (NumPy gives every length-1 axis 0)
                elif n == m:
                    strides.append(stride)
                else:
                    break
            else:
                view = _np.ndarray(shape, x.dtype, x, 0, strides)
                view.setflags(write=False)
                return view
    return _np.broadcast_to(x, shape)


def _broadcast_to_batch(args, dims, shape):
    (x,), (d,) = args, dims
    x = with_example_ndim(x, d, len(shape))
    return _broadcast_to_p(x, shape=(shape_of(x)[0],) + tuple(shape)), 0


_broadcast_to_p = deflinear(
    _broadcast_to_impl,
    _broadcast_to_vjp,
    name="broadcast_to",
    batch=_broadcast_to_batch,
    sparsity="moves",
)


@mirror("shape")
def broadcast_to(array: ArrayLike, shape: int | Sequence[int], subok: bool = False) -> Array:
    """NumPy's `broadcast_to` (the result is a read-only view, as in NumPy)."""
    if type(array) is _np.ndarray or (subok and not is_traced(array)):
        return _np.broadcast_to(array, shape, subok=subok)  # (a view even to its own shape)
    refuse_layout("broadcast_to", subok=(subok, False))
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    if shape_of(array) == shape and type(array) is Box:
        return strongly_typed(array)  # nothing to record; a plain value: NumPy's array below
    return _broadcast_to_p(array, shape=shape)


# --- sum ------------------------------------------------------------------------------------------


def _sum_vjp(ans, x, axis, keepdims):
    x_shape = x.shape if type(x) is _np.ndarray else shape_of(x)
    if keepdims or (len(axis) < 65 and axis == _ALL_AXES[len(axis)]):
        # The cotangent broadcasts to x as it is: it kept the summed axes, or they lead x's
        # shape (NumPy prepends missing axes), as in a sum of everything.
        kept = None
    else:
        kept = _kept_shape(x_shape, axis)
    x_value = x if type(x) is _np.ndarray else _core.innermost(x)
    if type(x_value) is not _np.ndarray and _core.is_foreign_array(x_value):
        return _foreign_sum_bprop(x_value, x_shape, kept)

    # A sum over some axes (a C-contiguous array: a reduction's result usually is, and the
    # view's buffer must be) has its cotangent, laid out as the sum is, spread by one view:
    # the sum's strides with stride 0 inserted along the summed axes, where reshaping and
    # broadcasting take twice as long. (A sum of everything, a scalar, is spread by
    # `_broadcast_to_impl`'s own zero-stride view.)
    spread_strides = None
    if kept is not None and type(ans) is _np.ndarray and ans.flags.c_contiguous:
        ans_shape, ans_strides, ans_dtype = ans.shape, ans.strides, ans.dtype
        spread_strides = list(ans_strides)
        for i in axis:  # ascending, so each insertion lands at its axis
            spread_strides.insert(i, 0)
        spread_strides = tuple(spread_strides)

    def bprop(ct):
        if _core.watch is None and is_plain_array(ct):  # the impls themselves: see is_plain_array
            if (
                spread_strides is not None
                and ct.shape == ans_shape
                and ct.strides == ans_strides
                and ct.dtype == ans_dtype
            ):
                view = _np.ndarray(x_shape, ans_dtype, ct, 0, spread_strides)
                view.setflags(write=False)  # read-only, as NumPy's broadcast_to
                return view
            return _broadcast_to_impl(ct if kept is None else ct.reshape(kept), x_shape)
        return _broadcast_to_p(ct if kept is None else _reshape_p(ct, shape=kept), shape=x_shape)

    return bprop


def _foreign_sum_bprop(like, x_shape, kept):
    """The bprop of a sum of `like`, another library's (Dask's) array of shape `x_shape`
    (`kept`: the sum's shape with the summed axes kept, or None where the cotangent broadcasts
    as it is): a plain cotangent (grad's own 1) is spread in that library, lazily, where a
    NumPy array of x's size would be built and shipped whole."""

    def bprop(ct):
        if is_plain_array(ct):
            if kept is None and not _np.ndim(ct) and like.shape == x_shape:
                # a sum of everything (a loss): grad's cotangent filled in x's chunks, one
                # task per chunk; a broadcast would make one chunk, which the elementwise
                # operation after it (`ct * slope`) splits again, in twice as many tasks
                return _np.full_like(like, ct, dtype=ct.dtype)
            ct = _np.asarray(ct, like=like)
        return _broadcast_to_p(ct if kept is None else _reshape_p(ct, shape=kept), shape=x_shape)

    return bprop


def _sum_batch(args, dims, axis, keepdims):
    (x,), (d,) = args, dims
    axes = tuple(batched_axis(a, d) for a in axis)
    out_dim = d if keepdims else d - len([a for a in axes if a < d])
    return _sum_p(x, axis=axes, keepdims=keepdims), out_dim


_sum_p = deflinear(
    # np.sum without its Python wrapper (the same ufunc reduction, for arrays and scalars);
    # another library's array (Dask's) implements np.sum, not the ufunc's reduce method
    lambda x, axis, keepdims: (
        _np.add.reduce(x, axis, None, None, keepdims)  # type: ignore[call-overload]  # (NumPy's stub: no positional None out)
        if type(x) is _np.ndarray or isinstance(x, (_np.generic, float, int, complex))
        else _np.sum(x, axis=axis, keepdims=keepdims)
    ),
    _sum_vjp,
    name="sum",
    batch=_sum_batch,
    sparsity="reduces",
)


# NumPy's keywords `dtype`, `initial` and `where` make another reduction: NumPy's own
# `add.reduce` with them (so the value is NumPy's: the accumulation starts at `initial`, in
# `dtype`, and a masked sum is not the sum of a masked array, whose rounding differs). It is
# linear in x (the `initial` offset is a constant), and its transpose, `_spread_p`, spreads a
# cotangent back over x's shape, zero where the mask is False; each is the other's transpose.


def _sum_kw_impl(x, axis, keepdims, dtype, initial, where):
    if _core.is_foreign_array(x) or _core.is_foreign_array(where):
        return _sum_kw_foreign(x, axis, keepdims, dtype, initial, where)
    keywords = {} if initial is NO_VALUE else {"initial": initial}
    return _np.add.reduce(x, axis=axis, dtype=dtype, keepdims=keepdims, where=where, **keywords)


def _sum_kw_foreign(x, axis, keepdims, dtype, initial, where):
    """`_sum_kw_impl` for an array of another library (Dask), whose sum has neither `where`
    nor `initial` (nor ufunc methods): the sum of x with zeros where the mask is False, in
    `dtype`, plus `initial`."""
    if where is not True:
        x = _np.where(where, x, _np.zeros((), dtype=_np.result_type(x)))
    total = _np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)
    if initial is NO_VALUE:
        return total
    return _np.add(total, initial, dtype=_np.result_type(total))


def _sum_kw_vjp(ans, x, axis, keepdims, dtype, initial, where):
    x_shape, x_dtype = meta(x)
    return lambda ct: _spread_p(
        ct, shape=x_shape, dtype=x_dtype, axis=axis, keepdims=keepdims, where=where
    )


def _sum_kw_batch(args, dims, axis, keepdims, dtype, initial, where):
    (x,), (d,) = args, dims
    x = batch_to_front(x, d)  # a `where` mask broadcasts against the trailing (row) axes
    axes = tuple(a + 1 for a in axis)
    return _sum_kw_p(x, axis=axes, keepdims=keepdims, dtype=dtype, initial=initial, where=where), 0


@_taylor.declared("linear")
def _sum_kw_taylor(primals, series, **params):
    """A sum starting at a constant `initial` is affine in x: its coefficients are the sums of
    x's, starting at 0."""
    ans = bind(_sum_kw_p, primals, params)
    coefficient = {**params, "initial": NO_VALUE}
    return ans, tuple(None if c is None else bind(_sum_kw_p, (c,), coefficient) for c in series[0])


_sum_kw_p: Primitive = defprimitive(
    _sum_kw_impl,
    vjp=_sum_kw_vjp,
    # the tangent of a sum starting at a constant `initial` starts at 0
    jvp=lambda t, ans, x, axis, keepdims, dtype, initial, where: _sum_kw_p(
        t, axis=axis, keepdims=keepdims, dtype=dtype, initial=NO_VALUE, where=where
    ),
    name="sum",
    batch=_sum_kw_batch,
    taylor=_sum_kw_taylor,
    forward="linear",
    sparsity="reduces",
)


def _spread_impl(ct, shape, dtype, axis, keepdims, where):
    ct = as_array(ct)
    if not keepdims:
        ct = _np.reshape(ct, _kept_shape(shape, axis))
    out = _cast(_np.broadcast_to(ct, shape), dtype)
    return out if where is True else _np.where(where, out, _np.zeros((), out.dtype))


def _spread_vjp(ans, ct, shape, dtype, axis, keepdims, where):
    ct_dtype = dtype_of(ct)
    return lambda g: _sum_kw_p(
        g, axis=axis, keepdims=keepdims, dtype=ct_dtype, initial=NO_VALUE, where=where
    )


def _spread_batch(args, dims, shape, dtype, axis, keepdims, where):
    (ct,), (d,) = args, dims
    ct = batch_to_front(ct, d)
    n = shape_of(ct)[0]
    axes = tuple(a + 1 for a in axis)
    return _spread_p(
        ct, shape=(n,) + tuple(shape), dtype=dtype, axis=axes, keepdims=keepdims, where=where
    ), 0


_spread_p = deflinear(
    _spread_impl,
    _spread_vjp,
    name="spread",
    batch=_spread_batch,
    sparsity=("moves", None, True),
)


# A sum with a `where=` mask computed from traced values (`x > 0` under `jit` or `vmap`): the
# mask is an operand (without a derivative) rather than a parameter, so that a record replays
# it for every mask and `vmap` sums each row under its own. The values are NumPy's masked sum
# and `_spread_p`'s masked spread, as with a constant mask.
def _sum_where_impl(x, mask, axis, keepdims, dtype, initial):
    return _sum_kw_impl(x, axis, keepdims, dtype, initial, mask)


def _sum_where_vjp(ans, x, mask, axis, keepdims, dtype, initial):
    x_shape, x_dtype = meta(x)
    return lambda ct: _spread_where_p(
        ct, mask, shape=x_shape, dtype=x_dtype, axis=axis, keepdims=keepdims
    )


def _sum_where_jvp(t, ans, x, mask, axis, keepdims, dtype, initial):
    # the tangent of a sum starting at a constant `initial` starts at 0
    return _sum_where_p(t, mask, axis=axis, keepdims=keepdims, dtype=dtype, initial=NO_VALUE)


def _spread_where_impl(ct, mask, shape, dtype, axis, keepdims):
    return _spread_impl(ct, shape, dtype, axis, keepdims, mask)


def _spread_where_vjp(ans, ct, mask, shape, dtype, axis, keepdims):
    ct_dtype = dtype_of(ct)
    return lambda g: _sum_where_p(
        g, mask, axis=axis, keepdims=keepdims, dtype=ct_dtype, initial=NO_VALUE
    )


def _spread_where_jvp(t, ans, ct, mask, **params):
    return _spread_where_p(t, mask, **params)


def _with_mask_to_front(x, d, mask, dm, rows=None):
    """x and its `where=` mask (shaped like x's rows, or like `rows` where x is a reduction's
    cotangent) with their batch axes first: a batch of masks broadcasts x to its rows, an
    unbatched mask broadcasts against x's row axes."""
    n = batch_size((x, mask), (d, dm))
    x = batch_to_front(x, d) if d is not None else broadcast_to(x, (n,) + tuple(shape(x)))
    if dm is not None:
        mask = batch_to_front(mask, dm)
    elif type(mask) is Box:
        # a mask an outer level batches: broadcast to this batch's rows here, under that
        # level (which adds its own axis in front); left to NumPy's broadcasting, its outer
        # axis would line up with this batch's axis (the same mask for every row, silently,
        # where the two sizes are equal)
        mask = broadcast_to(mask, (n, *(shape(x)[1:] if rows is None else rows)))
    return x, mask


def _sum_where_batch(args, dims, axis, keepdims, dtype, initial):
    (x, mask), (d, dm) = args, dims
    x, mask = _with_mask_to_front(x, d, mask, dm)
    axes = tuple(a + 1 for a in axis)
    return _sum_where_p(x, mask, axis=axes, keepdims=keepdims, dtype=dtype, initial=initial), 0


def _spread_where_batch(args, dims, shape, dtype, axis, keepdims):
    (ct, mask), (d, dm) = args, dims
    ct, mask = _with_mask_to_front(ct, d, mask, dm, tuple(shape))
    n = shape_of(ct)[0]
    axes = tuple(a + 1 for a in axis)
    return _spread_where_p(
        ct, mask, shape=(n,) + tuple(shape), dtype=dtype, axis=axes, keepdims=keepdims
    ), 0


@_taylor.declared("linear")
def _sum_where_taylor(primals, series, **params):
    """As `_sum_kw_taylor`, each coefficient summed under the same mask."""
    ans = bind(_sum_where_p, primals, params)
    coefficient = {**params, "initial": NO_VALUE}
    mask = primals[1]
    return ans, tuple(
        None if c is None else bind(_sum_where_p, (c, mask), coefficient) for c in series[0]
    )


_sum_where_p: Primitive = defprimitive(
    _sum_where_impl,
    vjp=(_sum_where_vjp, None),
    jvp=(_sum_where_jvp, None),
    name="sum",
    batch=_sum_where_batch,
    taylor=_sum_where_taylor,
    forward="linear",
    sparsity="reduces",  # (every element, read without the mask: a pattern for every mask)
)
_spread_where_p: Primitive = defprimitive(
    _spread_where_impl,
    vjp=(_spread_where_vjp, None),
    jvp=(_spread_where_jvp, None),
    name="spread",
    batch=_spread_where_batch,
    forward="linear",
    sparsity=(
        "dense",
        "the masked spread of a sum whose mask is traced: the mask may hold anywhere, so "
        "every element of the cotangent is taken to reach every element",
    ),
)
register_rules(_spread_where_p, taylor=_taylor.linear_rule(_spread_where_p, linear_in=(0,)))


@mirror("reduction")
def sum(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    dtype: DTypeLike | None = None,
    out: None = None,
    keepdims: bool = NO_VALUE,
    initial: ArrayLike = NO_VALUE,
    where: ArrayLike = NO_VALUE,
) -> Array:
    """NumPy's `sum` with `axis` (None, int or tuple), `dtype`, `keepdims`, `initial` (where
    the sum starts: a constant, or a traced scalar, differentiable) and `where` (a boolean
    mask, broadcast against `a`: only its True elements are summed, and only they get a
    gradient; a mask computed from traced values, under `jit` or `vmap`, is an operand of
    the sum: one record replays every mask). The value is NumPy's own in every case.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(x ** 3, where=x > 0))(np.array([-1.0, 2.0]))
    array([ 0., 12.])
    """
    if out is not None:
        refuse_out(out, "sum")
    keepdims = False if keepdims is NO_VALUE else bool(keepdims)
    s = shape_of(a)
    axes = _normalize_axes(axis, len(s), s, ufunc=True)
    if (
        initial is NO_VALUE
        and where is NO_VALUE
        and (dtype is None or _sums_in(dtype_of(a), _np.dtype(dtype)))
    ):
        return bind(_sum_p, (a,), {"axis": axes, "keepdims": keepdims})  # _sum_p(a, ...)
    mask = reduction_mask(where, a, "sum", operand=True)
    dtype = None if dtype is None else _np.dtype(dtype)
    if dtype is not None and dtype.kind in "biu":
        a, initial = without_derivatives(a, initial, dtype)

    def masked_sum(start):
        if type(mask) is Box:  # a mask computed from traced values: an operand
            return _sum_where_p(a, mask, axis=axes, keepdims=keepdims, dtype=dtype, initial=start)
        return _sum_kw_p(a, axis=axes, keepdims=keepdims, dtype=dtype, initial=start, where=mask)

    if _core.holds_batch(initial):  # one initial per row: added to the sum
        ans = masked_sum(NO_VALUE)
        return _astype_p(ans + initial, dtype=dtype_of(ans))
    c = primal(initial)
    ans = masked_sum(c)
    if type(initial) is Box:  # zero in value, so the value is NumPy's; its slope is 1
        ans = ans + zero_with_derivatives_of(initial)
    return ans


def without_derivatives(a, initial, dtype):
    """A reduction's operand and `initial` as constants of every level that differentiates,
    `initial` in `dtype`: NumPy sums (or multiplies) in an integer or bool `dtype` by casting
    each element and `initial` to it first, so the reduction is piecewise constant in both,
    its derivative 0 (as `astype`'s to that dtype). Under `vmap` and `jit` they stay traced:
    the value is computed for every row, and by the record."""
    if type(initial) is Box:  # one per row, added (or multiplied) after the reduction
        initial = astype(constant_of(initial), dtype)
    return constant_of(a), initial


def _sums_in(own, dtype):
    """Whether NumPy's sum of an array of dtype `own` is in `dtype` without being told: a float
    or complex dtype, or an integer at least as wide as the platform's (a sum of int8 is int64
    by default, and `dtype=int8` sums in int8)."""
    return dtype == own and (
        own.kind in "fc" or (own.kind in "iu" and own.itemsize >= _np.dtype(_np.intp).itemsize)
    )


def reduction_mask(where, a, name, operand=False):
    """NumPy's `where=` of a reduction: True, or a constant boolean mask broadcast to a's
    shape. A traced mask (computed from a traced value, as `x > 0` under `jit` or `vmap`) has
    no derivative. With `operand` (`sum`, `mean`: their primitive takes the mask as an
    operand) it stays traced, broadcast to a's shape, and so does a traced mask of another
    library (Dask's: reading it would compute it; the callers take it as an operand);
    otherwise it is read: under `jit` a guard on its values (a replay with another mask
    records a path for it), under `vmap` the rows' common mask (rows with different masks
    run apart)."""
    if where is NO_VALUE or where is True:
        return True
    if type(where) is Box and (operand or _core.is_foreign_array(_core.innermost(where))):
        if dtype_of(where) != _np.dtype(bool):
            raise TypeError(f"{name}: where= must be a boolean mask, got {describe(where)}")
        _check_mask_shape(where, a, name)
        return broadcast_to(where, shape(a))
    if is_traced(where):
        where = primal(where)
    mask = as_array(where)
    if mask.dtype != bool:
        raise TypeError(f"{name}: where= must be a boolean mask, got dtype {mask.dtype}")
    try:
        return _np.broadcast_to(mask, shape(a))
    except ValueError:
        _check_mask_shape(mask, a, name)
        raise


def _check_mask_shape(mask, a, name):
    """A ValueError naming where= and a when the mask does not broadcast to a's shape."""
    mask_shape, a_shape = shape_of(mask), shape_of(a)
    try:
        if _np.broadcast_shapes(mask_shape, a_shape) == a_shape:
            return
    except ValueError:
        pass
    raise ValueError(
        f"{name}: where= has {describe(mask)}, which does not broadcast to a's shape {a_shape} "
        f"(a: {describe(a)}); pass a boolean mask of a's shape, or one that broadcasts to it "
        f"(its trailing axes matching a's, or of length 1)"
    ) from None


# --- dtype casts ----------------------------------------------------------------------------------


def _astype_vjp(ans, x, dtype):
    x_dtype = dtype_of(x) if type(x) is Box or hasattr(x, "dtype") else None
    if x_dtype is None:
        return lambda ct: ct
    return lambda ct: _astype_p(ct, dtype=x_dtype)


def _astype_impl(x, dtype):
    """x.astype(dtype); complex to real keeps the real part, as JAX does (NumPy warns). A
    NumPy scalar stays one, as in `np.astype`."""
    if not isinstance(x, _np.generic):
        x = as_array(x)
    if _np.iscomplexobj(x) and not _np.issubdtype(dtype, _np.complexfloating):
        # (NumPy's function, not the attribute: an array of another library may have only
        # NumPy's protocols)
        x = x.real if isinstance(x, (_np.ndarray, _np.generic)) else _np.real(x)
    return x.astype(dtype)


_astype_p = deflinear(
    _astype_impl,
    _astype_vjp,
    name="astype",
    sparsity="astype",
)
register_rules(_astype_p, batch=_same_axis(_astype_p))


def _rechunk_impl(g, chunks):
    """g with the chunks `chunks`, where g is an array of another library of that shape."""
    if (
        _core.is_foreign_array(g)
        and getattr(g, "chunks", None) not in (None, chunks)
        and tuple(map(sum, chunks)) == tuple(g.shape)
    ):
        return g.rechunk(chunks)
    return g


# The derivative of a chunked input (Dask's) with that input's chunks, as an operation: under
# `jit` the input is traced and its derivative computed in the record, so the rechunking must
# be one of the record's operations, replayed (`fgrad.api`); a rule merging chunks (a
# reduction's transpose) gives fewer. The identity in value; its transpose is the identity.
rechunk_p = deflinear(
    _rechunk_impl,
    lambda ans, g, chunks: _same_cotangent,
    name="rechunk",
    batch=lambda args, dims, chunks: (args[0], dims[0]),  # (a batch has other chunks)
    sparsity="moves",  # (the identity)
)


_astype_nondiff = nondiff(
    lambda x, dtype: (x if isinstance(x, _np.generic) else as_array(x)).astype(dtype),
    name="astype",
)
register_rules(_astype_nondiff, batch=_same_axis(_astype_nondiff))


@mirror("function")
def astype(
    x: ArrayLike, dtype: DTypeLike, /, *, copy: bool = True, device: Literal["cpu"] | None = None
) -> Array:
    """NumPy's `astype(x, dtype)` (and `x.astype(dtype)`). A cast to an integer or bool dtype
    has no derivative. `copy` is NumPy's for a plain array; a traced value is never written
    to, so whether it shares memory cannot be observed, and any `copy` is accepted for it."""
    if type(x) is _np.ndarray or (not is_traced(x) and (copy is not True or device is not None)):
        return _np.astype(x, dtype, copy=copy, device=device)  # (a new array, by default)
    refuse_layout("astype", device=(device, None))
    dtype = _np.dtype(dtype)
    if not _np.issubdtype(dtype, _np.inexact):
        return _astype_nondiff(x, dtype=dtype)
    if (type(x) is Box or hasattr(x, "dtype")) and dtype_of(x) == dtype:
        return x
    return _astype_p(x, dtype=dtype)


# --- indexing -------------------------------------------------------------------------------------


def _has_array_index(idx):
    for p in idx if type(idx) is tuple else (idx,):
        if type(p) in _BASIC_INDEX:  # the common parts, without a call (gradients of x[1:])
            continue
        if isinstance(p, (list, _np.ndarray)) and _np.asarray(p).dtype != bool:
            return True
    return False


_BASIC_INDEX = frozenset((slice, int, type(None), type(Ellipsis)))


def _getitem_vjp(ans, x, idx):
    x_shape = shape(x)
    return lambda ct: _index_add_p(_np.zeros(x_shape, dtype=dtype_of(ct)), ct, idx=idx)


def _getitem_impl(x, idx):
    if type(x) is _np.ndarray:
        return x[idx]
    if type(x) in (float, int, complex):  # a Python number a `jit` record holds as it was given
        return _np.asarray(x)[idx]  # (indexed as NumPy's scalar of it)
    return x[idx] if not _core.is_foreign_array(x) else _getitem_foreign(x, idx)


def _index_layout(idx):
    """For an index applied after a leading full slice: the axis where the batch axis lands,
    or None when NumPy would move index-array axes in front of it (they are not side by side)
    and the batch axis would land after them."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    # a 0-d boolean is an index array too (of shape (1,) or (0,): NumPy's x[True])
    arrays = [isinstance(p, (list, _np.ndarray)) or _is_bool_0d(p) for p in parts]
    if any(arrays):  # integers next to index arrays are index arrays too
        arrays = [a or isinstance(p, (int, _np.integer)) for a, p in zip(arrays, parts)]
        first = arrays.index(True)
        last = len(arrays) - arrays[::-1].index(True)
        if not all(arrays[first:last]):
            return parts, None
    return parts, 0


_APART = "index arrays apart from each other, whose axes NumPy moves in front of the batch axis"


def _getitem_batch(args, dims, idx):
    (x,), (d,) = args, dims
    parts, out_dim = _index_layout(idx)
    if out_dim is None:
        return _batching.rows_one_by_one(_getitem_p, args, dims, {"idx": idx}, shape(x)[d], _APART)
    taken = _taken_axis(parts) if len(parts) < len(shape(x)) else None  # (too many: NumPy's)
    if taken is not None:  # one integer array among full slices: NumPy's take, laid out
        return _take_rows_p(batch_to_front(x, d), idx=parts[taken], axis=taken, lead=1), 0
    out = _getitem_p(batch_to_front(x, d), idx=(slice(None),) + parts)
    if any(_is_advanced_part(p) for p in parts):
        out = _leading_outermost_p(out, lead=1)
    return out, 0


_getitem_p = deflinear(
    _getitem_impl, _getitem_vjp, name="getitem", batch=_getitem_batch, sparsity="moves"
)


# --- getitem under vmap: a take along one axis, and the batch axis outermost in memory ------------


def _taken_axis(parts):
    """The axis of the one integer index array of a row's index, when every other part is a
    full slice (`x[idx]`, `x[:, idx]`: a take along that axis), else None."""
    taken = None
    for axis, p in enumerate(parts):
        if type(p) is slice and p == slice(None):
            continue
        if type(p) is not _np.ndarray or p.dtype.kind not in "iu" or taken is not None:
            return None
        taken = axis
    return taken


def _take_rows(x, idx, axis, lead):
    """`x[(:,) * (lead + axis) + (idx,)]` (`lead` leading batch axes; `idx` a constant
    integer array) with the memory layout of each row's own result stacked, as
    `_leading_outermost` gives it, without its copy: NumPy's indexing puts idx's axes
    outermost in memory, in front of the batch, where a take along the axis, with that axis
    moved next to the batch axes, makes the batch axes, idx's axes and the others in order
    (one row's own layout, as the loop over rows makes it) at once: a tenth of the cost of
    indexing and then copying a (256, 1000) gather."""
    if type(x) is not _np.ndarray:  # (another library's array: its own layout)
        return _getitem_impl(x, (slice(None),) * (lead + axis) + (idx,))
    at = lead + axis
    out = _np.take(_np.moveaxis(x, at, lead) if axis else x, idx, axis=lead)
    if not axis or idx.ndim == 0:
        return out
    return _np.moveaxis(out, range(lead, lead + idx.ndim), range(at, at + idx.ndim))


def _take_rows_vjp(ans, x, idx, axis, lead):
    return _getitem_vjp(ans, x, (slice(None),) * (lead + axis) + (idx,))


def _take_rows_batch(args, dims, idx, axis, lead):
    (x,), (d,) = args, dims
    return _take_rows_p(batch_to_front(x, d), idx=idx, axis=axis, lead=lead + 1), 0


_take_rows_p = deflinear(
    _take_rows, _take_rows_vjp, name="take_rows", batch=_take_rows_batch, sparsity="moves"
)


def _is_advanced_part(p):
    return isinstance(p, (list, _np.ndarray)) or _is_bool_0d(p)


# The batch axis outermost in memory. NumPy's advanced indexing (index arrays, masks) puts
# the index axes outermost in the memory of its result and the other axes inside them, so
# x[:, idx] on a batch has each row's elements spread apart, and a reduction over a row then
# adds them in another order than over that row's own result: one ulp from the loop over
# rows. The batched result is copied, where its layout is not already so, with the batch axes
# outermost and the others in the order they have in NumPy's result, which is one row's own
# layout (index axes, then the rest in x's order). An operation, so that `jit` replays it.


def _leading_outermost(x, lead):
    """x (same values) with its first `lead` axes outermost in memory, in order, and its other
    axes in the order they have in x's memory: a copy only where they are not so already."""
    if type(x) is not _np.ndarray or x.flags.c_contiguous:
        return x  # (another library's array, or a number: its layout is its own)
    strides = x.strides
    order = (*range(lead), *sorted(range(lead, x.ndim), key=lambda a: -strides[a]))
    in_memory_order = x.transpose(order)
    if in_memory_order.flags.c_contiguous:
        return x
    return _np.ascontiguousarray(in_memory_order).transpose(_np.argsort(order))


def _leading_outermost_batch(args, dims, lead):
    (x,), (d,) = args, dims
    return _leading_outermost_p(batch_to_front(x, d), lead=lead + 1), 0


_leading_outermost_p = deflinear(
    _leading_outermost,
    lambda ans, x, lead: _same_cotangent,
    name="leading_outermost",
    batch=_leading_outermost_batch,
    sparsity="moves",  # (the identity)
)


# --- indexing another library's arrays (Dask) -----------------------------------------------------
# Dask indexes with slices, integers and one 1-D integer array; NumPy's other forms (several
# index arrays, n-d index arrays, boolean masks, an integer next to an array) go through the
# flat positions the index picks. The index is a constant, so NumPy computes those positions
# on 0-stride coordinate views (memory of the size of the result, never of x); the array's
# values stay lazy. Writing at an index (the transposes of indexing, x.at[idx]) never assigns
# items: an array type need not support it (JAX's arrays do not), so the result is built by
# functions NumPy dispatches (pad, where, bincount, concatenate, reshape).


def _array_parts(idx):
    parts = idx if isinstance(idx, tuple) else (idx,)
    return [p for p in parts if isinstance(p, (_np.ndarray, _np.generic)) and p.dtype != object]


def _native_gather(idx):
    """Whether x[idx] on a Dask array means what it means in NumPy: slices, Ellipsis, None
    and integers, or slices and Ellipsis around one 1-D integer array."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    arrays = _array_parts(idx)
    if not arrays:
        return True
    return (
        len(arrays) == 1
        and arrays[0].ndim == 1
        and arrays[0].dtype.kind in "iu"
        and all(p is arrays[0] or p is Ellipsis or isinstance(p, slice) for p in parts)
    )


def _flat_positions(x_shape, idx):
    """The positions in x.ravel() of the elements x[idx] picks, in x[idx]'s shape."""
    if not x_shape:
        return _np.zeros((), dtype=_np.intp)[idx]
    coords = []
    for axis, n in enumerate(x_shape):
        along = _np.arange(n, dtype=_np.intp).reshape((n,) + (1,) * (len(x_shape) - axis - 1))
        coords.append(_np.broadcast_to(along, x_shape)[idx])
    return _np.ravel_multi_index(tuple(coords), x_shape)


def _getitem_foreign(x, idx):
    if _native_gather(idx):
        return x[idx]
    positions = _flat_positions(_np.shape(x), idx)
    return _np.reshape(_np.take(_np.reshape(x, (-1,)), positions.reshape(-1)), positions.shape)


def _without_newaxes(x_shape, v, idx):
    """idx without its None entries, and v reshaped to what that index picks (a None only
    inserts a length-1 axis), for item assignment, which Dask does without None."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    view = _np.broadcast_to(_np.zeros((), dtype=bool), x_shape)
    with_newaxes = view[idx].shape
    idx = tuple(p for p in idx if p is not None)
    return idx, _np.reshape(_fit(v, with_newaxes), view[idx].shape)


def _foreign_copy(x, template, dtype):
    """x's values (exactly: signed zeros and NaNs kept) as a new array of template's type."""
    # np.ones(like=) makes the template's type without casting its dtype (Dask's ones_like
    # casts its meta: a ComplexWarning for a complex template and a real dtype). A NumPy x in
    # C order: Dask names the task by a hash of x's memory, the same for a matrix and its
    # transposed (or reversed) view, whose copies would then be one task.
    if isinstance(x, _np.ndarray):
        x = _np.asarray(x, order="C")
    return _np.multiply(x, _np.ones((), dtype=dtype, like=template))


def _fit(v, shape):
    """v broadcast to shape, after dropping extra leading length-1 axes (NumPy's assignment
    `x[idx] = v` accepts them)."""
    extra = _np.ndim(v) - len(shape)
    if extra > 0:
        v = _np.reshape(v, _np.shape(v)[extra:])
    return _np.broadcast_to(v, shape)


def _bincount_flat(positions, v, size, dtype):
    """The sum of v's elements at each flat position (repeats add up), as a 1-D array of
    `size` in dtype, built lazily from v's chunks."""
    weights = _np.reshape(_fit(v, positions.shape), (-1,))
    # the positions in weights' chunks (from its real part: a complex meta cast to an integer
    # warns in Dask)
    at = _np.zeros_like(_np.real(weights), dtype=_np.intp) + positions.reshape(-1)
    if _np.dtype(dtype).kind == "c":
        real = _np.bincount(at, weights=_np.real(weights), minlength=size)
        imag = _np.bincount(at, weights=_np.imag(weights), minlength=size)
        return _cast(real + 1j * imag, dtype)
    if _np.iscomplexobj(weights):  # NumPy's cast into a real array keeps the real part
        weights = _np.real(weights)
    return _cast(_np.bincount(at, weights=weights, minlength=size), dtype)


def _foreign_write(write):
    """A write at an index into an array of another library (Dask), `write(x, v, idx, x_shape,
    dtype, axes)`, as a function of (x, v, idx): both writes first drop the index's None
    entries (v reshaped to match, `_without_newaxes`) and read the positions an index of
    integers and slices picks along each axis (`axes`: `_basic_axes`, None for any other
    index). An empty v writes nothing: the result is then x's values, in a new array of the
    foreign operand's type."""

    @functools.wraps(write)
    def prepared(x, v, idx):
        x_shape, dtype = _np.shape(x), _np.result_type(x)
        template = x if _core.is_foreign_array(x) else v
        idx, v = _without_newaxes(x_shape, v, idx)
        if 0 in _np.shape(v):  # nothing to write
            return _foreign_copy(x, template, dtype)
        return write(x, v, idx, x_shape, dtype, _basic_axes(x_shape, idx))

    return prepared


@_foreign_write
def _index_add_foreign(x, v, idx, x_shape, dtype, axes):
    """`_index_add` for an array of another library (Dask): x + (zeros with v at idx), the
    zeros with v placed by padding at an index of integers and slices (`_placed`), by a lazy
    bincount over the flat positions at any other index (repeated indices add up)."""
    if axes is not None:
        return _np.add(x, _placed(v, x_shape, axes, dtype))
    positions = _flat_positions(x_shape, idx)
    size = int(_np.prod(x_shape, dtype=_np.int64))
    added = _bincount_flat(positions, v, size, dtype)
    return _np.reshape(added, x_shape) + x


@_foreign_write
def _index_set_foreign(x, v, idx, x_shape, dtype, axes):
    """`_index_set` for an array of another library (Dask): v placed by padding where an index
    of integers and slices picks (`_placed`), x elsewhere; at any other index, x where no
    position is picked and v where one is (for a repeated position the last of its values,
    as NumPy assigns)."""
    if axes is not None:
        out = _placed(v, x_shape, axes, dtype)
        # x where an axis is not picked: one `where` per axis the index restricts, each with a
        # mask along that axis only (never one of x's size)
        restricted = [k for k, a in enumerate(axes) if a[2] != x_shape[k]]
        for k in reversed(restricted) if restricted else [None]:
            out = _np.where(True if k is None else _axis_mask(x_shape, k, axes[k]), out, x)
        return out
    picks = _flat_positions(x_shape, idx)
    positions = picks.reshape(-1)
    size = int(_np.prod(x_shape, dtype=_np.int64))
    values = _np.reshape(_fit(v, picks.shape), (-1,))
    last = positions.size - 1 - _np.unique(positions[::-1], return_index=True)[1]
    if last.size != positions.size:
        positions, values = positions[last], _np.take(values, last)
    picked = _np.zeros(size, dtype=bool)
    picked[positions] = True  # a NumPy array of booleans, made here
    new = _bincount_flat(positions, values, size, dtype)
    return _np.where(picked.reshape(x_shape), _np.reshape(new, x_shape), x)


def _basic_axes(x_shape, idx):
    """For an index of integers, slices and Ellipsis (no None), the positions it picks along
    each axis of x, as (start, step, count, kept: whether x[idx] keeps the axis); None for an
    index with anything else (arrays, booleans), which `_flat_positions` handles."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    if any(p is Ellipsis for p in parts):
        k = parts.index(Ellipsis)
        parts = parts[:k] + (slice(None),) * (len(x_shape) - len(parts) + 1) + parts[k + 1 :]
    parts = parts + (slice(None),) * (len(x_shape) - len(parts))
    axes = []
    for axis, (p, n) in enumerate(zip(parts, x_shape)):
        if isinstance(p, slice):
            start, stop, step = p.indices(n)
            axes.append((start, step, len(range(start, stop, step)), True))
        elif isinstance(p, (int, _np.integer)) and not isinstance(p, (bool, _np.bool_)):
            if not -n <= p < n:
                raise IndexError(f"index {p} is out of bounds for axis {axis} with size {n}")
            axes.append((int(p) % n, 1, 1, False))
        else:
            return None
    return axes


def _placed(v, x_shape, axes, dtype):
    """An array of x_shape and dtype holding v (shaped as x[idx]) where the basic index
    described by `axes` picks and zeros elsewhere, in v's array type: v padded with
    zeros along each axis, after reversing it along the axes the index steps backward through
    and putting step - 1 zeros after each of its elements along the axes it steps over."""
    v = _np.reshape(v, tuple(count if kept else 1 for _, _, count, kept in axes))
    widths = []
    for axis, (start, step, count, _) in enumerate(axes):
        if step < 0:  # the same positions, in increasing order
            v = _np.flip(v, axis)
            start, step = start + step * (count - 1), -step
        if step > 1 and count > 1:
            shape = _np.shape(v)
            gap = _np.zeros(
                shape[: axis + 1] + (step - 1,) + shape[axis + 1 :], _np.result_type(v), like=v
            )
            v = _np.concatenate(
                [_np.reshape(v, shape[: axis + 1] + (1,) + shape[axis + 1 :]), gap], axis + 1
            )
            v = _np.reshape(v, shape[:axis] + (count * step,) + shape[axis + 1 :])
            v = v[(slice(None),) * axis + (slice(0, (count - 1) * step + 1),)]
        span = (count - 1) * step + 1
        widths.append((start, x_shape[axis] - start - span))
    return _cast(_zero_padded(v, widths) if any(any(w) for w in widths) else v, dtype)


def _zero_padded(v, widths):
    """v with `widths[axis] = (before, after)` zeros on each side of each axis (`np.pad`'s
    constant mode). For an array of another library the zeros are made by `zeros(like=v)`,
    in that library's default chunks: Dask's `pad` chunks the padding like v's edge chunk, so
    one row placed in n rows made n chunks (and O(n) tasks in every derivative after it)."""
    if type(v) is _np.ndarray or not _core.is_foreign_array(v):
        return _np.pad(v, widths)
    for axis, (before, after) in enumerate(widths):
        if before or after:
            zeros = [_zeros_along(v, axis, width) for width in (before, after) if width]
            v = _np.concatenate(zeros[:1] + [v] + zeros[1:] if before else [v] + zeros, axis)
    return v


def _zeros_along(v, axis, width):
    """Zeros of v's array type and dtype, of v's shape but `width` along `axis`."""
    shape = _np.shape(v)
    return _np.zeros(shape[:axis] + (width,) + shape[axis + 1 :], _np.result_type(v), like=v)


def _axis_mask(x_shape, axis, picks):
    """Booleans along `axis` (length-1 axes elsewhere): True at the positions picks."""
    start, step, count, _ = picks
    mask = _np.zeros(x_shape[axis], dtype=bool)
    mask[_np.arange(count) * step + start] = True  # a NumPy array of booleans, made here
    return mask.reshape((1,) * axis + (-1,) + (1,) * (len(x_shape) - axis - 1))


def _cast(a, dtype):
    """a in dtype, as NumPy's assignment into an array of dtype casts it (by the array's
    `astype`: NumPy's function `np.astype` is not among those Dask implements)."""
    return a if _np.result_type(a) == dtype else a.astype(dtype)


# --- writing at an index: index_add, index_set (x.at[idx].add, .set) ------------------------------


def _index_update_batch(prim):
    """The batching rule of `prim`, index_add or index_set."""

    def rule(args, dims, idx):
        (x, v), (dx, dv) = args, dims
        n = batch_size(args, dims)
        parts, out_dim = _index_layout(idx)
        if out_dim is None:
            return _batching.rows_one_by_one(prim, args, dims, {"idx": idx}, n, _APART)
        x = every_row(x, dx, n)
        if dv is not None:  # v broadcasts against the selected part of one row
            picked = _np.broadcast_to(_np.zeros((), dtype=bool), shape(x)[1:])[parts]
            v = with_example_ndim(v, dv, picked.ndim)
            extra = ndim(v) - 1 - picked.ndim
            if extra > 0:  # NumPy accepts a v with extra leading length-1 axes: dropped
                v = _reshape_p(v, shape=shape(v)[:1] + shape(v)[1 + extra :])
        return bind(prim, (x, v), {"idx": (slice(None),) + parts}), 0

    return rule


def _index_add(x, v, idx):
    if type(x) is _np.ndarray:
        if type(v) is not _np.ndarray and _core.is_foreign_array(v):
            return _index_add_foreign(x, v, idx)
        out = x.copy(order="K")  # never write into the caller's array (its layout kept)
    elif _core.is_foreign_array(v) or _core.is_foreign_array(x):
        return _index_add_foreign(x, v, idx)
    else:
        out = _np.array(x, copy=True)
    v = _np.asarray(v, dtype=out.dtype)
    if _has_array_index(idx):
        # sums repeated indices, where `out[idx] += v` would not, in NumPy's order (the
        # adjoint of every gather; since NumPy 1.25 faster than a bincount of the repeats)
        _np.add.at(out, idx, v)
    else:
        out[idx] += v
    return out


def _index_add_vjp_v(ans, x, v, idx):
    like = meta(v)
    return lambda ct: unbroadcast(_getitem_p(ct, idx=idx), like)


_index_add_p: Primitive = defprimitive(
    _index_add,
    vjp=(lambda ans, x, v, idx: _identity_ct, _index_add_vjp_v),
    jvp=(
        lambda t, ans, x, v, idx: t,
        lambda t, ans, x, v, idx: _index_add_p(zeros_like_value(ans), t, idx=idx),
    ),
    name="index_add",
    forward="linear",
)
register_rules(
    _index_add_p,
    batch=_index_update_batch(_index_add_p),
    taylor=_taylor.linear_rule(_index_add_p),
    sparsity=("adds", "idx"),
)


def _identity_ct(ct):
    return ct


def _picked_positions(x_shape, idx):
    """The flat positions of x's elements that x[idx] selects, shaped as x[idx]."""
    return _np.arange(int(_np.prod(x_shape, dtype=_np.int64))).reshape(x_shape)[idx]


def _check_set_repeats(x_shape, idx, v, kept=None, x_dtype=None):
    """`.at[idx].set(v)` with an idx that selects an element more than once is defined only
    when every selection of that element writes the same value (v a single value, or equal
    values, as `==` compares them, NaN equal to NaN): then the value does not depend on which
    write wins. Where an element would get different values, the error says from which
    elements of v. `kept` (booleans shaped as x[idx]) limits the check to the selections
    written (mode='drop'). A traced v is read at the elements compared (`_same_values`), as
    x's dtype holds them (`x_dtype`: 0.5 and 0.7 written into integers are one value)."""
    if not _has_array_index(idx):
        return
    picked = _picked_positions(x_shape, idx)
    if kept is None and _np.unique(picked).size == picked.size:
        return
    v_shape = shape(v)
    try:  # which element of v each selection writes
        source = _fit(
            _np.arange(int(_np.prod(v_shape, dtype=_np.int64))).reshape(v_shape), picked.shape
        )
    except ValueError:
        return  # v does not fit x[idx]: the assignment raises NumPy's error
    positions, sources = picked.reshape(-1), source.reshape(-1)
    if kept is not None:
        positions, sources = positions[kept.reshape(-1)], sources[kept.reshape(-1)]
    order = _np.lexsort((sources, positions))
    positions, sources = positions[order], sources[order]
    pairs = _np.flatnonzero((positions[1:] == positions[:-1]) & (sources[1:] != sources[:-1]))
    if not pairs.size:
        return
    same = _same_values(v, sources[pairs], sources[pairs + 1], x_dtype)
    if not same.all():
        k = pairs[_np.argmin(same)]
        element = _np.unravel_index(positions[k], x_shape)
        first, second = (_np.unravel_index(sources[j], v_shape) for j in (k, k + 1))
        raise _repeats_error(
            f"v gives it different values: x{_listed(element)} gets v{_listed(first)} and "
            f"v{_listed(second)}"
        )


def _same_values(v, first, second, x_dtype=None):
    """Booleans: whether v's elements at the flat positions `first` and `second` are equal
    (NaN equal to NaN). For a traced v, the comparisons are read (so `jit` guards them, and
    `vmap` goes on with the rows that agree), not v's values; a lazy (Dask) v is refused."""
    flat = ravel(v)
    if x_dtype is not None and dtype_of(flat) != x_dtype:
        flat = astype(flat, x_dtype)  # (the values x receives)
    a, b = getitem(flat, first), getitem(flat, second)
    same = primal((a == b) | ((a != a) & (b != b)))
    _core.refuse_lazy(
        ".at[idx].set(v) at an index that repeats an element",
        "the elements of v written to one element of x are compared",
        same,
    )
    return _np.asarray(same, dtype=bool)


def _listed(coordinates):
    return [int(c) for c in coordinates]


def _repeats_error(clash):
    """The refusal of `.at[idx].set(v)` where an element selected more than once would get
    different values; `clash` says which (or that v is not a single value)."""
    return ValueError(
        f".at[idx].set(v): idx selects an element of x more than once and {clash}, so which "
        "value is kept is not defined (NumPy keeps the last, JAX any one), nor is the "
        "gradient. A single value (a scalar v), or equal values, may be set at a repeated "
        "index. To keep one value per element, pass an index without repeats; "
        ".at[idx].add(v) is another operation: it adds all the values given to an element "
        "(x plus the sum of v over the repeats)"
    )


def _winning_selections(x_shape, idx):
    """None when idx selects no element of x twice; else booleans shaped as x[idx], True at
    the selection whose write NumPy's assignment `x[idx] = v` keeps for each element (the
    last, in practice): found by that same assignment, of each selection's number."""
    if not _has_array_index(idx):
        return None
    positions = _picked_positions(x_shape, idx)
    if _np.unique(positions).size == positions.size:
        return None
    numbers = _np.arange(positions.size).reshape(positions.shape)
    written = _np.zeros(x_shape, dtype=_np.intp)
    written[idx] = numbers
    return written[idx] == numbers


def _index_set(x, v, idx):
    if _core.is_foreign_array(v) or _core.is_foreign_array(x):
        return _index_set_foreign(x, v, idx)
    out = _np.array(x, copy=True)
    out[idx] = v
    return out


def _index_set_vjp_x(ans, x, v, idx):
    return lambda ct: _index_set_p(ct, 0.0, idx=idx)


def _index_set_vjp_v(ans, x, v, idx):
    like = meta(v)

    def bprop(ct):
        g = _getitem_p(ct, idx=idx)
        kept = _winning_selections(shape(ct), idx)
        if kept is not None:
            # an element selected several times keeps one write (of equal values,
            # `_check_set_repeats`): its cotangent goes to that write's element of v, as the
            # forward rule's assignment of the tangent keeps that write's tangent
            g = _where(kept, g, _np.zeros((), dtype_of(g)))
        extra = len(like[0]) - ndim(g)
        if extra > 0:  # `x[idx] = v` accepts v with extra leading length-1 axes, as in NumPy
            g = _reshape_p(g, shape=(1,) * extra + shape(g))
        return unbroadcast(g, like)

    return bprop


_index_set_p: Primitive = defprimitive(
    _index_set,
    vjp=(_index_set_vjp_x, _index_set_vjp_v),
    jvp=(
        lambda t, ans, x, v, idx: _index_set_p(t, 0.0, idx=idx),
        lambda t, ans, x, v, idx: _index_set_p(zeros_like_value(ans), t, idx=idx),
    ),
    name="index_set",
    forward="linear",
)
register_rules(
    _index_set_p,
    batch=_index_update_batch(_index_set_p),
    taylor=_taylor.linear_rule(_index_set_p),
    sparsity=("moves", (0, 1)),
)


def _normalize_index(idx):
    """Lists in an index become arrays (NumPy's meaning); traced indices are refused."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    out = []
    for p in parts:
        if type(p) is Box:
            raise TypeError(
                "an index is a traced value; indices have no derivative. Compute it from "
                "plain values, or wrap it in fgrad.stop_gradient(...)"
            )
        if type(p) is slice and (
            type(p.stop) is Box or type(p.start) is Box or type(p.step) is Box
        ):
            # a traced Python int as a bound (`x[:n]`, n a `jit` argument): read here, as
            # `int(n)` reads it (a guard of each `jit` record holding it), before the
            # operation, whose parameters an outer level's rule would compute with
            p = slice(
                *(_operator.index(b) if type(b) is Box else b for b in (p.start, p.stop, p.step))
            )
        if isinstance(p, list):
            p = _np.asarray(p)
            if p.size == 0 and p.dtype == _np.float64:
                p = p.astype(_np.intp)  # `x[[]]` selects nothing, as in NumPy, not a float index
        out.append(p)
    return tuple(out) if isinstance(idx, tuple) else out[0]


def getitem(x, idx):
    """`x[idx]` with every NumPy indexing form; under `vmap`, integer index arrays may be
    batched too (one per row, as argsort and argmax give them)."""
    if type(idx) is Box or (type(idx) is tuple and _core.holds_box(idx)):
        return _gather(x, idx)
    return _getitem_p(x, idx=_normalize_index(idx))


class _IndexUpdater:
    """`x.at[idx]`: functional updates that return a new array (JAX's spelling): `.set(v)`,
    `.add(v)`, `.subtract(v)`, `.multiply(v)` (or `.mul(v)`), `.divide(v)`, `.power(v)`,
    `.min(v)`, `.max(v)` and `.get()`.
    `idx` is any NumPy index; repeated indices accumulate as `np.<ufunc>.at` does. `set`
    accepts a repeated index where every write to an element stores the same value (a single
    v, or equal elements of v, NaN equal to NaN) and refuses it where v would give an element
    different values (NumPy keeps the last, JAX any one). The derivative in v goes to the
    write NumPy's assignment keeps (the last): with equal values, any one write's value is
    the result, and the last is the one whose finite differences NumPy's `x[idx] = v` has,
    in each element of v (JAX on CPU agrees). Forward and reverse mode agree on it."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        if type(idx) is Box or (type(idx) is tuple and _core.holds_box(idx)):
            template, arrays = _index_template(idx)
            if not arrays:  # its traced parts were masks read as plain ones (a 0-d mask)
                return _IndexUpdate(self.x, template)
            return _BatchedIndexUpdate(self.x, template, arrays)
        return _IndexUpdate(self.x, _normalize_index(idx))


class _IndexUpdate:
    """`x.at[idx]` at a constant idx. Every method takes JAX's keywords: `unique_indices` and
    `indices_are_sorted` are hints (accepted; `set` still checks for repeats), and `mode`
    is JAX's (`_clipped_index`, `_dropped_out_of_bounds`, `_filled_gather`)."""

    __slots__ = ("idx", "x")

    def __init__(self, x, idx):
        self.x = x
        self.idx = idx

    def set(self, v, **options):
        """A copy of x with x[idx] replaced by v."""
        idx, v = self._update("set", v, options)
        return _unchanged_copy(self.x) if idx is None else _index_set_p(self.x, v, idx=idx)

    def add(self, v, **options):
        """A copy of x with v added at x[idx]; repeated indices add up."""
        return self._add("add", v, options)

    def subtract(self, v, **options):
        """A copy of x with v subtracted at x[idx]; repeated indices subtract in turn (as
        `np.subtract.at`): x[idx] plus -v, which is x[idx] - v to the last bit."""
        return self._add("subtract", _negated(v, self.x), options)

    def multiply(self, v, **options):
        """A copy of x with x[idx] multiplied by v; repeated indices multiply in turn (as
        `np.multiply.at`), and the gradient is exact at zeros. `mul` is another name."""
        return self._scatter("multiply", v, options)

    mul = multiply  # JAX's alias

    def divide(self, v, **options):
        """A copy of x with x[idx] divided by v; repeated indices divide in turn."""
        return self._scatter("divide", v, options)

    def power(self, v, **options):
        """A copy of x with x[idx] raised to the power v; repeated indices apply in index
        order, as `np.power.at` does."""
        return self._scatter("power", v, options)

    def min(self, v, **options):
        """A copy of x with x[idx] replaced by minimum(x[idx], v); with repeated indices the
        smallest of x and all its updates. Ties share the gradient evenly (as in JAX)."""
        return self._scatter("min", v, options)

    def max(self, v, **options):
        """A copy of x with x[idx] replaced by maximum(x[idx], v); with repeated indices the
        largest of x and all its updates. Ties share the gradient evenly (as in JAX)."""
        return self._scatter("max", v, options)

    def get(self, **options):
        """x[idx]; under mode='fill' (or 'drop', as in JAX) an out-of-bounds position gives
        fill_value."""
        mode, fill_value = _index_options("get", options)
        if mode in ("fill", "drop"):
            return _filled_gather(self.x, self.idx, mode, fill_value)
        if mode == "clip":
            return getitem(self.x, _clipped_index(shape(self.x), self.idx))
        return getitem(self.x, self.idx)

    def apply(self, func, **options):
        raise _apply_error()

    def __getattr__(self, name):
        raise _no_such_update(name)

    def _add(self, method, v, options):
        idx, v = self._update(method, v, options)
        if idx is None:
            return _unchanged_copy(self.x)
        try:
            return _index_add_p(self.x, v, idx=idx)
        except ValueError as e:
            raise (_refuse_unfitted(method, shape(self.x), idx, shape(v)) or e) from None

    def _scatter(self, op, v, options):
        idx, v = self._update(op, v, options)
        if idx is None:
            return _unchanged_copy(self.x)
        try:
            return _scatter_update(self.x, idx, v, op)
        except ValueError as e:
            raise (_refuse_unfitted(op, shape(self.x), idx, shape(v)) or e) from None

    def _update(self, method, v, options):
        """(idx, v) of an update under its mode; idx None where every update is dropped."""
        mode, _ = _index_options(method, options)
        x_shape = shape(self.x)
        if mode in ("drop", "fill"):  # JAX's updates drop under 'fill' too
            return _dropped_out_of_bounds(x_shape, self.idx, v, method, mode, dtype_of(self.x))
        idx = _clipped_index(x_shape, self.idx) if mode == "clip" else self.idx
        if method == "set":
            _check_set_repeats(x_shape, idx, v, x_dtype=dtype_of(self.x))
        return idx, v


_UPDATE_METHODS = (
    "set",
    "add",
    "subtract",
    "multiply",
    "mul",
    "divide",
    "power",
    "min",
    "max",
    "get",
)


def _no_such_update(name):
    """The AttributeError of `x.at[idx].<name>` for a name that is no method of it."""
    if name.startswith("__"):  # (asked by copy, pickle, ...: the plain error)
        return AttributeError(name)
    close = [m for m in _UPDATE_METHODS if len(name) > 1 and m.startswith(name)]
    close = close or difflib.get_close_matches(name, _UPDATE_METHODS, n=1)
    hint = f" Did you mean .{close[0]}?" if close else ""
    return AttributeError(
        f"x.at[idx] has no method {name!r}.{hint} Its methods are JAX's: "
        f"{', '.join(f'.{m}()' for m in _UPDATE_METHODS)} (.apply() is refused: it has no "
        "derivative)"
    )


def _negated(v, x):
    """-v for `.at[idx].subtract(v)`: by fgrad's negative for a traced v (a list holding
    traced values too), NumPy's (or the array's library's) otherwise; in the dtype v and x
    promote to, as x - v computes (in v's own dtype, an unsigned v wrapped: 0 - [1, 2] of
    uint8 was 509; and a boolean v has no negative)."""
    if type(v) in (list, tuple):
        v = asarray(v)
    if type(v) is not Box and not hasattr(v, "dtype"):  # a Python number: NumPy's scalar
        return _np.negative(v)  # (which wraps into an unsigned x as NumPy's subtract.at)
    target = _np.result_type(dtype_of(x), dtype_of(v))
    if dtype_of(v) != target:
        v = astype(v, target)
    return -v if type(v) is Box else _np.negative(v)


def _unchanged_copy(x):
    """x after an update that changed nothing (every index dropped by mode='drop' or 'fill'):
    as promised, a copy, so that writing into the result leaves the caller's x alone. A traced
    x is returned as it is (traced values are never written into)."""
    if type(x) is Box:
        return x
    copy = getattr(x, "copy", None)  # NumPy's, or another library's (Dask's, CuPy's) own
    return copy() if callable(copy) and not isinstance(x, list) else _np.array(x)


def _refuse_unfitted(method, x_shape, idx, v_shape):
    """After NumPy's `ufunc.at` refused an update (a message that names neither shape): the
    ValueError saying that v must broadcast to x[idx]'s shape (an assignment's extra leading
    length-1 axes are refused, as by NumPy's `+=` and JAX), or None if v does."""
    picked = _np.broadcast_to(_np.zeros((), dtype=bool), x_shape)[idx].shape
    try:
        if _np.broadcast_shapes(v_shape, picked) == picked:
            return None
    except ValueError:
        pass
    return ValueError(
        f".at[idx].{method}(v): v has shape {v_shape}, which does not broadcast to the shape "
        f"of x[idx], {picked}. Reshape v to {picked} (drop extra leading length-1 axes), or to "
        "a shape that broadcasts to it"
    )


_INDEX_MODES = ("promise_in_bounds", "clip", "drop", "fill")


def _index_options(method, options):
    """(mode, fill_value) among JAX's keywords of an `.at[idx]` method (None where not
    given); `unique_indices` and `indices_are_sorted` are hints, `fill_value` is get's, with
    mode='fill' or 'drop'."""
    options = dict(options)
    mode = options.pop("mode", None)
    fill_value = options.pop("fill_value", None)
    options.pop("unique_indices", None)
    options.pop("indices_are_sorted", None)
    if options:
        name = next(iter(options))
        raise TypeError(
            f".at[idx].{method}() got an unexpected keyword argument {name!r}; it takes "
            "JAX's mode=, fill_value= (get only), unique_indices= and indices_are_sorted="
        )
    if mode is not None and mode not in _INDEX_MODES:
        raise ValueError(
            f".at[idx].{method}(mode={mode!r}): mode is one of {', '.join(map(repr, _INDEX_MODES))}"
        )
    if fill_value is not None and method != "get":
        raise TypeError(
            f".at[idx].{method}() takes no fill_value= (nor does JAX's): under mode='fill' "
            "or 'drop' an update at an out-of-bounds index is dropped"
        )
    if fill_value is not None and mode not in ("fill", "drop"):
        raise ValueError(f".at[idx].get(fill_value=...) needs mode='fill' (got mode={mode!r})")
    return mode, fill_value


def _clipped_index(x_shape, idx):
    """idx under JAX's mode='clip': each integer index moved into its axis's range (a
    negative one counted from the end first, as in JAX)."""
    parts = idx if type(idx) is tuple else (idx,)
    out = []
    for p, axis in zip(parts, _index_axes(parts, len(x_shape))):
        if axis is not None and _is_integer_index(p):
            n, p = x_shape[axis], _np.asarray(p, dtype=_np.intp)  # (int8 + n may not fit int8)
            p = _np.clip(_np.where(p < 0, p + n, p), 0, n - 1)
            p = int(p) if _np.ndim(p) == 0 else p
        out.append(p)
    return tuple(out) if type(idx) is tuple else out[0]


# --- mode='drop' and 'fill' -----------------------------------------------------------------------
# JAX's rule: an integer index i of an axis of length n is in bounds where -n <= i < n (a
# negative one counts from the end). An update at an out-of-bounds position is dropped, with
# the element of v meant for it; a gather there gives fill_value. Both are rewritten here into
# in-bounds indexing by the existing primitives (so every transform applies unchanged): the
# index's integer parts are broadcast together into the block of x[idx]'s axes they index,
# and only the block's valid positions are kept (for a gather: all of them, clipped, then
# masked).


class _Bounds:
    """An index with out-of-bounds integer parts, in NumPy's advanced-index terms: `parts`
    (boolean masks spelled as their nonzero() arrays), `integer` (which parts are integer
    indices), `valid` (shaped as the broadcast of the integer parts), `pos` (the axis of
    x[idx] where that block starts) and `shape` (x[idx]'s shape)."""

    __slots__ = ("integer", "parts", "pos", "shape", "valid")

    def __init__(self, x_shape, parts):
        self.parts = parts
        axes = _index_axes(parts, len(x_shape))
        self.integer = [axis is not None and _is_integer_index(p) for p, axis in zip(parts, axes)]
        valid = [
            (p >= -x_shape[axis]) & (p < x_shape[axis])
            for p, axis, i in zip(parts, axes, self.integer)
            if i
        ]
        self.valid = _np.logical_and.reduce(_np.broadcast_arrays(*valid))
        # NumPy places the block (after the parts before it, or first when the integer parts
        # are not adjacent); an empty block on size-1 axes shows where
        empty = [_np.zeros(0, _np.intp) if i else p for p, i in zip(parts, self.integer)]
        ones = _np.zeros((1,) * len(x_shape), dtype=bool)
        one_slices = [slice(None) if isinstance(p, slice) else p for p in empty]
        self.pos = ones[tuple(one_slices)].shape.index(0)
        rest = _np.broadcast_to(_np.zeros((), dtype=bool), x_shape)[tuple(empty)].shape
        self.shape = rest[: self.pos] + self.valid.shape + rest[self.pos + 1 :]

    def kept(self):
        """The index with only the block's valid positions (each integer part 1-D)."""
        return tuple(
            _np.broadcast_to(p, self.valid.shape)[self.valid] if i else p
            for p, i in zip(self.parts, self.integer)
        )

    def valid_of_result(self):
        """`valid` with length-1 axes around it, to broadcast against x[idx]."""
        after = len(self.shape) - self.pos - self.valid.ndim
        return self.valid.reshape((1,) * self.pos + self.valid.shape + (1,) * after)


def _out_of_bounds(x_shape, idx, method, mode):
    """A `_Bounds` of idx where one of its integer indices is out of bounds; else None."""
    parts = idx if type(idx) is tuple else (idx,)
    outside = False
    for p, axis in zip(parts, _index_axes(parts, len(x_shape))):
        if axis is not None and _is_integer_index(p):
            outside = outside or bool(_np.any((p < -x_shape[axis]) | (p >= x_shape[axis])))
    if not outside:
        return None
    spelled = []
    for p in parts:
        is_bool = isinstance(p, (bool, _np.bool_)) or (
            isinstance(p, _np.ndarray) and p.dtype == bool
        )
        if is_bool and _np.ndim(p) == 0:
            raise NotImplementedError(
                f".at[idx].{method}(mode={mode!r}) with an out-of-bounds integer index next to "
                "a 0-d boolean index is not supported; index with None instead of True, or "
                "select the in-bounds positions yourself"
            )
        spelled.extend(_np.nonzero(p) if is_bool else (p,))  # a mask is its nonzero() arrays
    return _Bounds(x_shape, spelled)


def _dropped_out_of_bounds(x_shape, idx, v, method, mode, x_dtype=None):
    """(idx, v) of an update without its out-of-bounds positions and the elements of v meant
    for them (idx None where none is left). `set`'s repeats are checked on the positions kept,
    naming the elements of the v given."""
    bounds = _out_of_bounds(x_shape, idx, method, mode)
    if bounds is None:
        if method == "set":
            _check_set_repeats(x_shape, idx, v, x_dtype=x_dtype)
        return idx, v
    v = _fitted_update(v, bounds, method)
    if method == "set":
        kept = _np.broadcast_to(bounds.valid_of_result(), bounds.shape)
        _check_set_repeats(x_shape, _clipped_index(x_shape, tuple(bounds.parts)), v, kept, x_dtype)
    if not bounds.valid.any():
        return None, v
    pos, block = bounds.pos, bounds.valid.ndim
    aligned = (1,) * (len(bounds.shape) - ndim(v)) + shape(v)
    if all(d == 1 for d in aligned[pos : pos + block]):  # v constant along the block
        if ndim(v) > len(bounds.shape) - pos - block:  # (v reaches the block's axes)
            v = _reshape_p(v, shape=aligned[:pos] + (1,) + aligned[pos + block :])
        return bounds.kept(), v
    v = broadcast_to(v, aligned[:pos] + bounds.valid.shape + aligned[pos + block :])
    return bounds.kept(), getitem(v, (slice(None),) * pos + (bounds.valid,))


def _fitted_update(v, bounds, method):
    """v checked against x[idx]'s shape (NumPy's error otherwise), without the leading
    length-1 axes NumPy's assignment accepts beyond it."""
    extra = ndim(v) - len(bounds.shape)
    if extra > 0 and all(d == 1 for d in shape(v)[:extra]):
        v = _reshape_p(v, shape=shape(v)[extra:])
    try:
        fits = _np.broadcast_shapes(shape(v), bounds.shape) == bounds.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f".at[idx].{method}(v): v of shape {shape(v)} does not broadcast to x[idx]'s "
            f"shape {bounds.shape}"
        )
    return v


def _filled_gather(x, idx, mode, fill_value):
    """x[idx] where every integer index is in bounds; else the gather at the clipped index
    with fill_value at the out-of-bounds positions (which have no gradient)."""
    x_shape = shape(x)
    bounds = _out_of_bounds(x_shape, idx, "get", mode)
    if bounds is None:
        return getitem(x, idx)
    gathered = getitem(x, _clipped_index(x_shape, tuple(bounds.parts)))
    return _where(bounds.valid_of_result(), gathered, _fill_value(fill_value, dtype_of(x)))


def _fill_value(fill_value, dtype):
    """fill_value in x's dtype; JAX's default: nan for inexact dtypes, the smallest signed
    integer, the largest unsigned one, True for booleans."""
    dtype = _np.dtype(dtype)
    if fill_value is not None:
        return _np.asarray(fill_value).astype(dtype)
    if dtype.kind in "fc":
        return _np.asarray(_np.nan, dtype=dtype)
    if dtype.kind in "iu":
        info = _np.iinfo(dtype)
        return _np.asarray(info.min if dtype.kind == "i" else info.max, dtype=dtype)
    return _np.asarray(True, dtype=dtype)


def _is_integer_index(p):
    if isinstance(p, (bool, _np.bool_)):
        return False
    return isinstance(p, (int, _np.integer)) or (
        isinstance(p, _np.ndarray) and p.dtype.kind in "iu"
    )


def _index_axes(parts, ndim):
    """The axis of x each part of an index starts at (None for None and Ellipsis)."""
    spanned = [_axes_taken(p) for p in parts]
    rest = ndim - int(_np.sum(spanned, dtype=int))
    if rest < 0:  # (NumPy's message)
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but "
            f"{ndim - rest} were indexed"
        )
    axes, axis = [], 0
    for p, taken in zip(parts, spanned):
        axes.append(None if p is None or p is Ellipsis else axis)
        axis += rest if p is Ellipsis else taken
    return axes


def _axes_taken(p):
    """How many of x's axes one part of an index takes (an Ellipsis: counted apart)."""
    if p is None or p is Ellipsis or isinstance(p, (bool, _np.bool_)):
        return 0  # (a 0-d boolean adds an axis, as None does)
    return _np.ndim(p) if isinstance(p, _np.ndarray) and p.dtype == bool else 1


def _apply_error():
    return NotImplementedError(
        ".at[idx].apply(f) is not supported (JAX's has no derivative). Write "
        "x.at[idx].set(f(x.at[idx].get())), which is differentiable, for an idx without "
        "repeats; at a repeated idx, f would be applied once per selection"
    )


# The multiplicative and min/max updates are compositions of elementwise operations and
# reductions, whose modules import this one (imports point one way), so `fgrad.numpy.arrays`
# installs them here when it is imported, which importing `fgrad.numpy` always does.
_INSTALLED: dict[str, Any] = {}


def _scatter_update(x, idx, v, op):
    return _INSTALLED["scatter"](x, idx, v, op)


@mirror("shape")
def at(x: ArrayLike) -> _IndexUpdater:
    """`x.at` (JAX's functional index update) that works on plain NumPy arrays as well as on
    traced values, for code that must also run outside a transform.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.at(np.zeros(3))[1].set(5.0)
    array([0., 5., 0.])
    """
    return _IndexUpdater(x)


# --- stack and concatenate ------------------------------------------------------------------------


def _zero_if_none(t, x):
    return zeros_like_value(x) if t is None else t


def _stack_fprop(*xs, axis):
    ans = _stack_p(*xs, axis=axis)
    lead = (slice(None),) * axis
    likes = [meta(x) for x in xs]  # inputs of mixed dtypes get cotangents in their own dtype

    def bprop(ct):
        return tuple(
            unbroadcast(_getitem_p(ct, idx=lead + (i,)), like) for i, like in enumerate(likes)
        )

    return ans, bprop


def _joined_batch(prim):
    def rule(args, dims, axis):
        n = batch_size(args, dims)
        rows = [every_row(a, d, n) for a, d in zip(args, dims)]
        return bind(prim, rows, {"axis": axis + 1}), 0

    return rule


def _joining(name: str, impl: Callable[..., Any], fprop: Callable[..., Any]) -> Primitive:
    """The primitive that joins its inputs along `axis` (stack, concatenate): linear in each
    input, so its tangent is itself applied to the tangents (a zero where an input has none),
    and so are its Taylor coefficients; its rows, under `vmap`, are joined one axis along."""
    prim: Primitive = Primitive(
        name,
        lambda *xs, axis: impl(xs, axis=axis),
        fprop=fprop,
        jvp=lambda ts, ans, *xs, axis: prim(
            *[_zero_if_none(t, x) for t, x in zip(ts, xs)], axis=axis
        ),
    )
    register_rules(
        prim,
        batch=_joined_batch(prim),
        taylor=_taylor.linear_rule(prim),
        forward="linear",
        sparsity="moves",
    )
    return prim


def _stack_impl(xs, axis):
    """NumPy's `stack`, by a shorter path for NumPy arrays (or float64 scalars) of one shape
    and dtype: `np.stack` checks and expands each input in Python, about 2.5 us for two small
    arrays, as much as the rest of a small right-hand side (odeint's pendulum); `np.array` of
    the inputs (axis 0, or, for small inputs, with that axis moved and copied in order) and
    `concatenate` of them with the new axis give the same array, C-contiguous as `np.stack`'s.
    Anything else (other types, mixed dtypes or shapes) takes `np.stack` itself."""
    first = xs[0]
    kind = type(first)
    if kind is _np.ndarray or kind is _np.float64:
        dtype, shape = first.dtype, first.shape
        for x in xs:
            if type(x) is not kind or x.dtype is not dtype or x.shape != shape:
                break
        else:
            if dtype.kind != "O":
                if axis == 0:
                    return _np.array(xs)
                if first.size <= 16:  # small: one array, its new axis moved, copied in order
                    return _np.array(xs).transpose(_moved_first(len(shape), axis)).copy()
                index = (slice(None),) * axis + (None,)  # large: no strided copy
                return _np.concatenate([x[index] for x in xs], axis=axis)
    return _np.stack(xs, axis=axis)


@functools.lru_cache(maxsize=64)
def _moved_first(ndim: int, axis: int) -> tuple:
    """The transposition that moves axis 0 of an array of `ndim + 1` axes to `axis` (kept:
    building it cost as much as the rest of a small stack)."""
    return (*range(1, axis + 1), 0, *range(axis + 1, ndim + 1))


_stack_p = _joining("stack", _stack_impl, _stack_fprop)


@mirror("shape")
def stack(
    arrays: Sequence[ArrayLike],
    axis: int = 0,
    out: None = None,
    *,
    dtype: DTypeLike | None = None,
    casting: str = "same_kind",
) -> Array:
    """NumPy's `stack`, with `dtype` and `casting` (checked as NumPy checks them)."""
    refuse_out(out, "stack")
    arrays = _joined(arrays, dtype, casting, "stack")
    axis = _joining_axis(axis, ndim(arrays[0]) + 1, "stack", arrays)
    try:
        return _stack_p(*arrays, axis=axis)
    except ValueError:
        if len({shape_of(a) for a in arrays}) > 1:
            raise ValueError(
                f"stack: all arrays must have the same shape, got {_shapes_of(arrays)}; pad, "
                "slice or reshape them to one shape first, or join them along an existing "
                "axis with fgrad.numpy.concatenate"
            ) from None
        raise


def _shapes_of(arrays):
    """The shapes and dtypes of the arrays to join, for an error message."""
    shapes = ", ".join(str(shape_of(a)) for a in arrays)
    return f"shapes {shapes} and dtypes {', '.join(str(dtype_of(a)) for a in arrays)}"


def _joined(arrays, dtype, casting, name):
    """The arrays to join, cast to `dtype` if given; NumPy's casting rule is checked for each
    (against `dtype`, or against the result type of them all)."""
    if type(arrays) is Box or isinstance(arrays, _np.ndarray):
        if not shape(arrays):
            raise TypeError(
                f"{name}: arrays must be a sequence of arrays, got one 0-d array "
                f"({describe(arrays)}); pass them as a list: {name}([a, b])"
            )
        arrays = [arrays[i] for i in range(shape(arrays)[0])]  # NumPy iterates the first axis
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{name}: need at least one array to {name}")
    dtypes = [dtype_of(a) for a in arrays]  # each as NumPy makes it an array
    target = _np.result_type(*dtypes) if dtype is None else _np.dtype(dtype)
    for dt in dtypes:
        if not _np.can_cast(dt, target, casting):
            raise TypeError(
                f"{name}: cannot cast array data from {dt!r} to {target!r} "
                f"according to the rule {casting!r}"
            )
    if dtype is not None:
        arrays = [astype(asarray(a), target) for a in arrays]
    return arrays


def _concatenate_fprop(*xs, axis):
    ans = _concatenate_p(*xs, axis=axis)
    bounds = _np.cumsum([0] + [shape(x)[axis] for x in xs])
    lead = (slice(None),) * axis
    likes = [meta(x) for x in xs]  # inputs of mixed dtypes get cotangents in their own dtype

    def bprop(ct):
        return tuple(
            unbroadcast(_getitem_p(ct, idx=lead + (slice(int(lo), int(hi)),)), like)
            for lo, hi, like in zip(bounds[:-1], bounds[1:], likes)
        )

    return ans, bprop


_concatenate_p = _joining("concatenate", _np.concatenate, _concatenate_fprop)


@mirror("shape")
def concatenate(
    arrays: Sequence[ArrayLike],
    /,
    axis: int | None = 0,
    out: None = None,
    *,
    dtype: DTypeLike | None = None,
    casting: str = "same_kind",
) -> Array:
    """NumPy's `concatenate` (`axis=None` flattens first), with `dtype` and `casting`."""
    refuse_out(out, "concatenate")
    arrays = _joined(arrays, dtype, casting, "concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = ndim(arrays[0])
    if nd == 0:
        raise ValueError(
            f"concatenate: zero-dimensional arrays cannot be concatenated ({describe(arrays[0])}); "
            "use fgrad.numpy.stack, or make them 1-d with fgrad.numpy.atleast_1d"
        )
    axis = _joining_axis(axis, nd, "concatenate", arrays)
    try:
        return _concatenate_p(*arrays, axis=axis)
    except ValueError:
        refuse_unjoinable(arrays, axis, "concatenate")
        raise


def refuse_unjoinable(arrays, axis, who):
    """Raise fgrad's error if `arrays` cannot be concatenated along `axis` (>= 0) by `who`
    (NumPy's error names the lengths of two of them, and no dtype); return if they can (the
    error being handled was another). On the failure path only."""
    shapes = [shape_of(a) for a in arrays]
    if len({len(s) for s in shapes}) > 1:
        problem = "they must have the same number of dimensions"
    elif len({s[:axis] + s[axis + 1 :] for s in shapes}) > 1:
        problem = f"their lengths must be equal on every axis but axis {axis}, the joined one"
    else:
        return
    raise ValueError(
        f"{who}: the arrays do not fit: {problem}; got {_shapes_of(arrays)}; pad, slice or "
        "reshape them first, or join along another axis (concatenate's axis=)"
    ) from None


def _joining_axis(axis, nd, who, arrays):
    """`axis` in [0, nd) for a join of `arrays` whose result has `nd` dimensions: NumPy's
    AxisError (a ValueError and an IndexError) outside [-nd, nd), where `%` would wrap it; a
    TypeError for an axis that is not an int (an array there is the second array of a call
    that forgot the list's brackets, `concatenate(a, b)`)."""
    try:
        axis = _operator.index(axis)
    except TypeError:
        given = (
            f"an array of {describe(axis)}"
            if hasattr(axis, "shape")
            else f"{axis!r} of type {type(axis).__name__}"
        )
        advice = (
            f"pass the arrays as one list: {who}([a, b])"
            if hasattr(axis, "shape") or isinstance(axis, (list, tuple))
            else "pass an int"
        )
        raise TypeError(f"{who}: axis must be an int, got {given}; {advice}") from None
    if not -nd <= axis < nd:
        raise _np.exceptions.AxisError(
            f"{who}: axis {axis} is out of bounds for a result with {nd} dimension(s) (the "
            f"first array: {describe(arrays[0])}); pass an axis in [{-nd}, {nd})"
        )
    return axis % nd


# --- array-likes ----------------------------------------------------------------------------------


@mirror("creation")
def array(
    object: ArrayLike,
    dtype: DTypeLike | None = None,
    *,
    copy: bool = True,
    order: Literal["K", "A", "C", "F"] = "K",
    subok: bool = False,
    ndmin: int = 0,
    ndmax: int = 0,
    like: ArrayLike = None,
) -> Array:
    """NumPy's `array`; nested lists may hold traced values (they are stacked, differentiably).
    A plain object gets NumPy's own `array` with every keyword; for a traced one `ndmin`
    prepends axes, `copy` is accepted (a traced value is never written to), and the memory
    keywords (`order`, `subok`, `like`) and `ndmax` keep their defaults.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.jacrev(lambda x: fnp.array([x, 2 * x, x * x]))(3.0)
    array([1., 2., 6.])
    """
    if not is_traced(object) and not holds_foreign(object):
        keywords = dict(copy=copy, order=order, subok=subok, ndmin=ndmin, ndmax=ndmax, like=like)
        defaults = dict(copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None)
        return _np.array(
            object, dtype, **{k: v for k, v in keywords.items() if not is_default(v, defaults[k])}
        )
    refuse_layout(
        "array", order=(order, "K"), subok=(subok, False), like=(like, None), ndmax=(ndmax, 0)
    )
    out = _sequence_to_array(object)
    if type(out) is Box:  # a number (a NumPy scalar, or a Python one under `jit`): an array
        out = asarray(out)
    if out is object and copy and _core.is_foreign_array(out):  # a new array of its library, lazy
        out = out.copy()
    out = out if dtype is None else astype(out, dtype)
    missing = ndmin - ndim(out)
    return reshape(out, (1,) * missing + shape(out)) if missing > 0 else out


@mirror("creation")
def asarray(
    a: ArrayLike,
    dtype: DTypeLike | None = None,
    order: Literal["K", "A", "C", "F"] | None = None,
    *,
    device: Literal["cpu"] | None = None,
    copy: bool | None = None,
    like: ArrayLike = None,
) -> Array:
    """NumPy's `asarray`; a traced value is returned as it is (cast if `dtype` is given). A
    plain one gets NumPy's own `asarray` with every keyword, except an array of another library
    that speaks NumPy's protocols (a Dask or CuPy array), which stays an array of its library
    (cast if `dtype` is given): fgrad never computes a Dask array behind your back (call its
    own `.compute()` for a NumPy array)."""
    if not is_traced(a):
        if type(a) is not _np.ndarray and _core.is_foreign_array(a):
            return a if dtype is None or _np.dtype(dtype) == a.dtype else a.astype(dtype)
        if isinstance(a, (list, tuple)) and holds_foreign(a):  # stacked lazily, as traced ones
            out = _sequence_to_array(a)
            return out if dtype is None else astype(out, dtype)
        return _np.asarray(a, dtype=dtype, order=order, device=device, copy=copy, like=like)
    refuse_layout("asarray", order=(order, None), device=(device, None), like=(like, None))
    if type(a) is Box:
        if dtype is not None:
            return astype(a, dtype)
        # a NumPy scalar becomes a 0-d array, as NumPy's asarray makes it: arithmetic on the
        # two rounds differently (NumPy's scalar math), so the type is part of the value
        inner = _core.innermost(a)
        return a if type(inner) is _np.ndarray or _core.is_foreign_array(inner) else _asarray_p(a)
    return array(a, dtype=dtype)


def _scalar_ct(ct):
    return ct[()]  # the cotangent of a scalar is a scalar


_asarray_p = deflinear(_np.asarray, lambda ans, x: _scalar_ct, name="asarray", sparsity="moves")
register_rules(_asarray_p, batch=_same_axis(_asarray_p))

_PYTHON_NUMBERS = frozenset((int, float, complex, bool))


def strongly_typed(x):
    """x as NumPy's functions that are not ufuncs read it (`dot`, `kron`, `reshape`, ...: they
    convert with np.asarray): a Python number becomes a 0-d array of NumPy's type for it
    (float64, int64, complex128), so that a float32 array times it is float64, not float32 as
    NEP 50's weak Python numbers make it in a ufunc. A traced one too: `jit` holds a Python
    number argument as it was given, weak, and must compute what eager code computes. Anything
    else is returned as it is."""
    if type(x) in _PYTHON_NUMBERS:
        return _np.asarray(x)
    if type(x) is Box and held_number(x) is not None:
        return _asarray_p(x)
    return x


def keeps_single_precision(dtype) -> bool:
    """Whether fgrad keeps `dtype` where NumPy computes and returns double precision (`cov`,
    `interp`, `vander`, `polyint`, `geomspace`, `bincount`'s sums, ...): float32 and complex64
    stay, their values NumPy's rounded once ("Float32 in, float32 out", as JAX). float16 does
    not: NumPy computes it in float64, and fgrad gives NumPy's dtype and value (a float16
    result would carry float16's rounding, 5e-4, where NumPy's float64 has none)."""
    return _np.dtype(dtype) in _SINGLE_PRECISION


_SINGLE_PRECISION = frozenset((_np.dtype(_np.float32), _np.dtype(_np.complex64)))


def held_number(x):
    """The Python number x is, or that a traced x holds as it was given (`jit` records a
    Python-number argument as itself: weakly typed, NEP 50, as in eager code, where a NumPy
    value of it would be float64 or int64); None for anything else."""
    value = _core.innermost(x)
    return value if type(value) in _PYTHON_NUMBERS else None


def is_traced(obj):
    """Whether obj is a traced value, or a list or tuple that holds one at any depth."""
    return type(obj) is Box or (isinstance(obj, (list, tuple)) and _core.holds_box(obj))


def read_int(x):
    """x as the Python int it holds when it is a traced 0-d integer (a Python int argument of
    a jitted function, or a count computed with integer operations), for arguments that set
    shapes or choose an algorithm (a number of sections, a transform length, a power): `jit`
    guards the value read, so a call with another value traces again, as for `repeat`'s
    counts. Anything else is returned as it is, for the caller's own checks."""
    if type(x) is Box and dtype_of(x).kind in "iu" and shape_of(x) == ():
        return x.__index__()
    return x


def read_constant(x, who, what, instead="pass a constant"):
    """The plain value of an argument that has no derivative here and sets what is computed
    (an order, a count, a fill value), for `who`. A traced x whose live levels only read values
    is read: a `jit` argument's value, recorded as a guard (a call with another value records
    another path), or under `vmap` the rows' common value. A level that differentiates x is
    refused with a TypeError naming `what` and saying what to do (`instead`). Anything else
    (a list or tuple too, at any depth) is returned with its plain values."""
    if not is_traced(x):
        return x
    for leaf in x if isinstance(x, (list, tuple)) else (x,):
        v = leaf
        while type(v) is Box:
            if v.level.live and not v.level.reads_values:
                raise TypeError(
                    f"{who}: {what} is a traced value of a transform that differentiates "
                    f"({describe(leaf)}), and {who} has no derivative in it: {instead}"
                )
            v = v.value
        if isinstance(leaf, (list, tuple)):
            read_constant(leaf, who, what, instead)
    return primal(x)


def holds_foreign(obj):
    """Whether obj is an array of another library (Dask's), or a list or tuple that holds one
    at any depth. NumPy's own function would compute such an array (or find it lacks the
    function, or keywords): fgrad's operations keep it lazy instead."""
    if type(obj) is _np.ndarray:
        return False
    if isinstance(obj, (list, tuple)):
        kinds = set(map(type, obj))  # a long list of numbers: its types at C speed, first
        if kinds <= _core._PLAIN:
            return False
        return any(holds_foreign(o) for o in obj if type(o) not in _core._PLAIN)
    return _core.is_foreign_array(obj)


def numpy_applies(*xs):
    """Whether none of xs is traced or an array of another library (a lazy Dask array): then
    NumPy's own function gives the value. Otherwise the function is written in fgrad
    operations, which trace, and keep a Dask array lazy."""
    return not any(is_traced(x) or holds_foreign(x) for x in xs)


def as_array(v):
    """v as an array NumPy's functions compute with, for an implementation: a NumPy array, or
    an array of another library (Dask) as it is, lazy, never converted."""
    if type(v) is _np.ndarray or _core.is_foreign_array(v):
        return v
    return _np.asarray(v)


def describe(x):
    """ "shape ... and dtype ...", for error messages about x (traced or plain)."""
    return f"shape {shape_of(x)} and dtype {dtype_of(x)}"


def result_type(*xs):
    """NumPy's `result_type` of the values of xs, without reading a value batched by `vmap`
    (its dtype stands for it: it is an array, so it weighs as its dtype does). Python numbers
    stay weak, as in NumPy. From NumPy 2 on, the result depends on the values' types and
    dtypes, not on what they hold (NEP 50), so a traced value is not read (`innermost`, not
    `primal`): under `jit`, reading it was a guard on every element, and a record per call.
    (NumPy 1's value-based casting reads it.)"""
    value = _core.innermost if _NEP50 else primal
    return _np.result_type(*(dtype_of(x) if _core.holds_batch(x) else value(x) for x in xs))


_NEP50 = _np.lib.NumpyVersion(_np.__version__) >= "2.0.0"


def _sequence_to_array(obj):
    if isinstance(obj, (list, tuple)):
        return stack([_sequence_to_array(o) for o in obj])
    return obj


# --- constants shaped like an input ---------------------------------------------------------------


def like_batch_rule(fn):
    """The batching rule of `fn`, a constant shaped like its first argument (zeros_like,
    full_like, ...): applied to all rows at once, or to one row when a `shape` is given (then
    the result is the same for every row). Other batched arguments (a batched fill value):
    one row at a time."""
    prim = fn.primitive

    def rule(args, dims, **params):
        (x, *rest), (d, *rest_dims) = args, dims
        if any(e is not None for e in rest_dims):
            why = "a fill value that differs by row"
            return _batching.rows_one_by_one(prim, args, dims, params, batch_size(args, dims), why)
        if params.get("shape") is not None:
            row = _np.zeros(shape(x)[:d] + shape(x)[d + 1 :], dtype_of(x))
            return bind(prim, (row, *rest), params), None
        return bind(prim, args, params), d

    register_rules(prim, batch=rule)


zeros_like = nondiff_function(_np.zeros_like)
like_batch_rule(zeros_like)
ones_like = nondiff_function(_np.ones_like)
like_batch_rule(ones_like)


def _negative_zero(x):
    """Zeros of x's shape and type, negative ones where the dtype has a sign (-0.0)."""
    if type(x) in (float, complex):
        return type(x)(-0.0)
    if type(x) is int:
        return 0
    zero = _np.full_like(x, -0.0)  # (another library's array: its own, lazy)
    return zero[()] if isinstance(x, _np.generic) else zero


def identity_derivatives(impl: Callable[[Any], Any], name: str) -> Primitive:
    """A primitive of one input whose value is `impl`'s and whose derivatives are those of
    the identity at every order: every level passes tangents, cotangents and Taylor
    coefficients through it unchanged, and `jit` records it as one operation. For a value
    NumPy computes its own way (a clip that undoes rounding) or a term that is zero in value."""
    prim = defprimitive(
        impl,
        vjp=lambda ans, x: _same_cotangent,
        jvp=lambda t, ans, x: t,
        name=name,
        forward="linear",
        sparsity="keeps",
    )

    @_taylor.declared("linear")
    def taylor(primals, series):
        return bind(prim, primals, {}), series[0]

    register_rules(prim, batch=lambda args, dims: (bind(prim, args, {}), dims[0]), taylor=taylor)
    return prim


def _same_cotangent(ct):
    return ct


# `value + zero_with_derivatives_of(x) * slope`: NumPy's value as it is, carrying x's derivatives
# (times slope) at every order, where `value + (x - primal(x)) * slope` would not keep the
# value: x = inf gives inf - inf, a nan, and a zero term of +0.0 turns a -0.0 value into 0.0.
# The zero is -0.0 (x + -0.0 is x, for every x).
zero_with_derivatives_of = identity_derivatives(_negative_zero, "zero_with_derivatives_of")


# --- indexing by traced integer arrays: gather, scatter_add ---------------------------------------
# Indexing by integer arrays batched by `vmap` (one per row): `gather` and `scatter_add` take the
# index arrays as arguments (no derivative) and an index `template` with a `_Slot` where each
# goes. Under the batching level, an arange over the rows joins the index arrays, so that each
# row picks from its own row; NumPy puts the broadcast index axes first, where one row's
# result may have them further in, so the rule moves them there.


class _Slot:
    """The place of index array `i` (an argument of the primitive) in an index template."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"_Slot({self.i})"

    # Equal when they name the same argument: a `jit` record compares two runs' parameters,
    # and two runs of one path make equal templates (as objects, every run's are new).
    def __eq__(self, other):
        return type(other) is _Slot and other.i == self.i

    def __hash__(self):
        return hash(("_Slot", self.i))


def _filled(template, arrays):
    return tuple(arrays[p.i] if type(p) is _Slot else p for p in template)


def _index_template(idx):
    """(template, arrays) for an index holding batched integer arrays; a constant boolean
    array becomes its nonzero() integer arrays (NumPy's meaning), so that every array index
    is an integer array."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    template, arrays = [], []
    for p in parts:
        if (
            type(p) is Box
            and (_core.holds_batch(p) or _core.holds_staged(p))
            and dtype_of(p).kind in "iu"
        ):
            template.append(_Slot(len(arrays)))
            arrays.append(constant_of(p))
            continue
        if type(p) is Box and _core.holds_batch(p) and dtype_of(p) == _np.dtype(bool):
            p = primal(p)  # the rows' common mask (a mask's count of True sets the shape)
        elif type(p) is Box and _core.holds_staged(p) and dtype_of(p) == _np.dtype(bool):
            # A mask a `jit` record computes: its positions of True, computed in the record
            # (their count sets the result's shape: the record checks it, see
            # `core.shape_from_values`), as one integer index per axis of the mask.
            mask = constant_of(p)
            dims = shape_of(mask)
            if dims == ():
                # A 0-d mask adds an axis of length 1 or 0 (NumPy's x[True], x[False]): its
                # value is read, with a guard (a replay at the other value records again)
                template.append(bool(mask))
                continue
            flat = _flatnonzero(mask)
            for k, n in enumerate(dims):
                stride = int(_np.prod(dims[k + 1 :], dtype=_np.intp))
                template.append(_Slot(len(arrays)))
                arrays.append(flat if len(dims) == 1 else (flat // stride) % n)
            continue
        p = _normalize_index(p)
        if isinstance(p, _np.ndarray) and p.dtype == bool:
            # (a 0-d mask has no nonzero(): NumPy's x[True] adds an axis of length 1)
            template.extend(p.nonzero() if p.ndim else (bool(p),))
        else:
            template.append(p)
    return tuple(template), arrays


def counted_positions(theirs):
    """NumPy's `theirs` (nonzero, argwhere, flatnonzero: positions of nonzero elements) as the
    implementation of a primitive that also takes `count`, each row's number of nonzero
    elements under `vmap` (read by `fgrad.numpy.arrays`, which passes it for the batching rule
    to size the result by; NumPy's function has no use for it)."""

    def impl(a, count=None):
        return theirs(a)

    impl.__name__ = impl.__qualname__ = theirs.__name__
    return impl


# NumPy's flatnonzero (exported by fgrad.numpy.arrays, with its batching rule): here for the
# masks of `jit` records above.
_flatnonzero = nondiff_function(counted_positions(_np.flatnonzero))
_flatnonzero.__signature__ = inspect.signature(_np.flatnonzero)
register_rules(_flatnonzero.primitive, shape_from_values=True)


def _gather(x, idx):
    template, arrays = _index_template(idx)
    if not arrays:
        return _getitem_p(x, idx=template)
    return _gather_p(x, *arrays, template=template)


def _gather_vjp(ans, x, *arrays, template):
    x_shape = shape_of(x)
    return lambda ct: _scatter_add_p(
        _np.zeros(x_shape, dtype_of(ct)), ct, *arrays, template=template
    )


def _gathered(x, *arrays, template):
    """x at the index `template` filled with `arrays` (NumPy's advanced indexing)."""
    try:
        return x[_filled(template, arrays)]
    except NotImplementedError:  # Dask's, before it computes anything
        why = (
            f"indexing it ({describe(x)}) by {len(arrays)} integer arrays at once (as vmap "
            "does with an index computed per row, r[argmax(r)]) is nd fancy indexing, which "
            "Dask does not implement"
        )
        _core.refuse_lazy("getitem", why, x)
        raise


def _gather_batch(args, dims, template):
    (x, *arrays), (dx, *array_dims) = args, dims
    n = batch_size(args, dims)
    x = every_row(x, dx, n)
    row_shape, template = _bools_as_axes(template, shape(x)[1:])
    if row_shape is not None:
        x = _reshape_p(x, shape=(n, *row_shape))
    template, arrays, (k, p, _) = _batched_template(template, arrays, array_dims, n, ndim(x) - 1)
    out = _gather_p(x, *arrays, template=template)
    if p:  # the index axes to where one row's result has them
        out = moveaxis(out, tuple(range(1, 1 + k)), tuple(range(1 + p, 1 + p + k)))
    return out, 0


_gather_p: Primitive = Primitive(
    "gather",
    _gathered,
    vjps=(_gather_vjp,),
    jvps=(lambda t, ans, x, *arrays, template: _gather_p(t, *arrays, template=template),),
)
register_rules(
    _gather_p,
    batch=_gather_batch,
    taylor=_taylor.linear_rule(_gather_p, linear_in=(0,)),  # the index arrays are static
    forward="linear",
    sparsity=("moves", (0,)),  # the index arrays are not moved
)


def _scatter_add_impl(x, v, *arrays, template):
    return _index_add(x, v, _filled(template, arrays))  # another library's arrays too


def _scatter_add_vjp_v(ans, x, v, *arrays, template):
    like = meta(v)
    return lambda ct: unbroadcast(_gather_p(ct, *arrays, template=template), like)


def _scatter_add_batch(args, dims, template):
    (x, v, *arrays), (dx, dv, *array_dims) = args, dims
    n = batch_size(args, dims)
    x = every_row(x, dx, n)
    x_shape = shape(x)
    row_shape, template = _bools_as_axes(template, x_shape[1:])
    if row_shape is not None:
        x = _reshape_p(x, shape=(n, *row_shape))
    template, arrays, (k, p, nd) = _batched_template(template, arrays, array_dims, n, ndim(x) - 1)
    v = with_example_ndim(every_row(v, dv, n), 0, nd)  # v broadcasts against one row's result
    if p:  # one row's layout to the batched result's
        v = moveaxis(v, tuple(range(1 + p, 1 + p + k)), tuple(range(1, 1 + k)))
    out = _scatter_add_p(x, v, *arrays, template=template)
    return (out if row_shape is None else _reshape_p(out, shape=x_shape)), 0


_scatter_add_p: Primitive = Primitive(
    "scatter_add",
    _scatter_add_impl,
    vjps=(lambda ans, x, v, *arrays, template: _identity_ct, _scatter_add_vjp_v),
    jvps=(
        lambda t, ans, x, v, *arrays, template: t,
        lambda t, ans, x, v, *arrays, template: _scatter_add_p(
            zeros_like_value(ans), t, *arrays, template=template
        ),
    ),
)
register_rules(
    _scatter_add_p,
    batch=_scatter_add_batch,
    taylor=_taylor.linear_rule(_scatter_add_p, linear_in=(0, 1)),  # (the index arrays: static)
    forward="linear",
    sparsity=("adds", "template"),
)


class _BatchedIndexUpdate:
    """`x.at[idx]` where idx holds traced integer arrays (computed under `jit` or batched by
    `vmap`: argsort and argmax give them): every update of `_IndexUpdate`, by gathers and
    scatters of the arrays. Whether idx repeats an element is read (one boolean, which `jit`
    guards and `vmap` answers for rows that agree): `.set` of a single value needs no more,
    and the other updates (`.set` of several values too) then read the index itself, to
    apply them in turn (or check that the values written to an element are equal)."""

    __slots__ = ("arrays", "template", "x")

    def __init__(self, x, template, arrays):
        self.x, self.template, self.arrays = x, template, arrays

    def add(self, v, **options):
        _traced_index_options("add", options)
        return _scatter_add_p(self.x, v, *self.arrays, template=self.template)

    def subtract(self, v, **options):
        _traced_index_options("subtract", options)
        return _scatter_add_p(self.x, _negated(v, self.x), *self.arrays, template=self.template)

    def set(self, v, **options):
        _traced_index_options("set", options)
        picked = self._picked()
        if not _repeats(picked):
            return self._placed(v, picked)
        if _np.prod(shape(v), dtype=_np.int64) != 1:
            # which element of v each selection writes depends on the index: read it (as
            # the other updates do) for `_IndexUpdate`'s check of the values
            return _IndexUpdate(self.x, self._plain_index()).set(v)
        # one value written to every selected element, in x's dtype as an assignment casts it
        one = _index_set_p(
            _np.zeros(1, dtype_of(self.x)), _reshape_p(v, shape=(1,)), idx=slice(None)
        )
        return _where(picked > 0, _reshape_p(one, shape=()), self.x)

    def multiply(self, v, **options):
        _traced_index_options("multiply", options)
        return self._update(v, "multiply")

    mul = multiply  # JAX's alias

    def divide(self, v, **options):
        _traced_index_options("divide", options)
        return self._update(v, "divide")

    def power(self, v, **options):
        _traced_index_options("power", options)
        return self._update(v, "power")

    def min(self, v, **options):
        _traced_index_options("min", options)
        return self._update(v, "min")

    def max(self, v, **options):
        _traced_index_options("max", options)
        return self._update(v, "max")

    def get(self, **options):
        _traced_index_options("get", options)
        return _gather_p(self.x, *self.arrays, template=self.template)

    def apply(self, func, **options):
        raise _apply_error()

    def __getattr__(self, name):
        raise _no_such_update(name)

    def _picked(self):
        """How many times idx selects each element of x."""
        ones = _np.ones(())
        return _scatter_add_p(self._zeros(float), ones, *self.arrays, template=self.template)

    def _placed(self, v, picked):
        """x with x[idx] replaced by v, for an idx without repeats."""
        placed = _scatter_add_p(
            self._zeros(dtype_of(self.x)), v, *self.arrays, template=self.template
        )
        return _where(picked > 0, placed, self.x)

    def _zeros(self, dtype):
        """Zeros shaped as x, in x's memory layout where x is a Fortran-ordered value a `jit`
        record computes: the update's result then has the layout eager's copy of x keeps
        (a later sum adds in memory order: another layout, other last bits)."""
        value = _core.innermost(self.x)
        fortran = (
            not _core.holds_batch(self.x)
            and type(value) is _np.ndarray
            and value.flags.f_contiguous
            and not value.flags.c_contiguous
        )
        return _np.zeros(shape_of(self.x), dtype, order="F" if fortran else "C")

    def _update(self, v, op):
        picked = self._picked()
        if not _repeats(picked):
            return self._placed(_INSTALLED["combine"][op](self.get(), v), picked)
        return _scatter_update(self.x, self._plain_index(), v, op)

    def _plain_index(self):
        """The index's values, read (a guard of a `jit` record; `vmap` goes on with rows
        that agree)."""
        return _filled(self.template, [_np.asarray(a) for a in self.arrays])


def _traced_index_options(method, options):
    """JAX's keywords at a traced index: the hints, and mode='promise_in_bounds' (what every
    index of fgrad promises); other modes would need the index's values."""
    mode, _ = _index_options(method, options)
    if mode not in (None, "promise_in_bounds"):
        raise NotImplementedError(
            f".at[idx].{method}(mode={mode!r}) is not supported where idx is traced (computed "
            "under jit or batched by vmap). Make the indices in bounds first: for mode='clip', "
            "idx = fnp.clip(fnp.where(idx < 0, idx + n, idx), 0, n - 1)"
        )


def _repeats(picked):
    """Whether an element is picked more than once: one boolean read."""
    return bool(sum(picked > 1.0) > 0)


def _where(condition, x, y):
    return _INSTALLED["where"](condition, x, y)


def _is_bool_0d(p):
    """Whether index part p is a 0-d boolean (True, np.True_, a 0-d boolean array)."""
    return isinstance(p, (bool, _np.bool_)) or (
        type(p) is _np.ndarray and p.ndim == 0 and p.dtype == bool
    )


def _bools_as_axes(template, row_shape):
    """(row shape, template) with each 0-d boolean b of the template spelt as NumPy reads it
    next to index arrays: an index array of shape (1,) or (0,), np.zeros(b, intp), on a new
    length-1 axis of the row where b stands (b uses none of the row's axes). The row shape is
    None when there is no such boolean. One row's x[i, True] is then row[:, None][i, [0]],
    which the rules below batch as they batch any integer array."""
    if not any(_is_bool_0d(p) for p in template):
        return None, template
    used = [p for p in template if p is not None and p is not Ellipsis and not _is_bool_0d(p)]
    new_shape, new_template, axis = [], [], 0
    for p in template:
        if _is_bool_0d(p):
            new_shape.append(1)
            p = _np.zeros(int(bool(p)), dtype=_np.intp)
        elif p is Ellipsis:
            width = len(row_shape) - len(used)
            new_shape.extend(row_shape[axis : axis + width])
            axis += width
        elif p is not None:
            new_shape.append(row_shape[axis])
            axis += 1
        new_template.append(p)
    return (*new_shape, *row_shape[axis:]), tuple(new_template)


def _is_array_part(p):
    return not isinstance(p, slice) and p is not None and p is not Ellipsis


def _row_layout(template, array_shapes, row_nd):
    """(k, p, nd) of one row's result: its k broadcast index axes are at position p (where
    the first index array is when the index arrays are side by side, else first: NumPy's
    rule), and it has nd axes."""
    shapes = [
        array_shapes[p.i] if type(p) is _Slot else _np.shape(p)
        for p in template
        if _is_array_part(p)
    ]
    k = len(_np.broadcast_shapes(*shapes))
    advanced = [_is_array_part(p) for p in template]
    first = advanced.index(True)
    last = len(advanced) - advanced[::-1].index(True)
    spread = row_nd - len([p for p in template if p is not None and p is not Ellipsis])
    widths = [spread if p is Ellipsis else 1 for p in template if not _is_array_part(p)]
    # the axes an Ellipsis spans, or, without one, the row's axes after the index
    nd = (
        k
        + int(_np.sum(widths, dtype=int))
        + (0 if any(p is Ellipsis for p in template) else spread)
    )
    if not all(advanced[first:last]):
        return k, 0, nd
    before = [spread if p is Ellipsis else 1 for p in template[:first]]
    return k, int(_np.sum(before, dtype=int)), nd


def _batched_template(template, arrays, dims, n, row_nd):
    """The template and arrays that index the batched value (rows first) row by row, and the
    (k, p, nd) layout of one row's result."""
    array_shapes = [
        shape(a) if d is None else shape(a)[:d] + shape(a)[d + 1 :] for a, d in zip(arrays, dims)
    ]
    k, p, nd = _row_layout(template, array_shapes, row_nd)
    rows = _np.arange(n).reshape((n,) + (1,) * k)
    arrays = [a if d is None else with_example_ndim(a, d, k) for a, d in zip(arrays, dims)]
    return (_Slot(len(arrays)),) + template, arrays + [rows], (k, p, nd)


__all__ = exported(globals())
