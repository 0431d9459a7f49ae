"""The transforms users call: grad, value_and_grad, vjp, jvp, linearize, jacfwd, jacrev,
hessian and stop_gradient, with JAX's names and semantics.

Pytrees are flattened once here, at the edge; the core sees flat lists of values. Errors about
what the user passed are raised here, naming the argument, its shape and dtype.

Imports: `fgrad.core`, `fgrad.reverse`, `fgrad.forward`, `fgrad.boundary`, `fgrad.tree_util`,
`fgrad.vmapping`, `fgrad.numpy` (Jacobians are assembled with fgrad operations so that they
can be differentiated again: `hessian = jacfwd(jacrev(f))`).
"""

from __future__ import annotations

import functools
import gc
import inspect
import math
import operator
import weakref
from typing import TYPE_CHECKING

import numpy as _np

from . import numpy as fnp
from .boundary import api_boundary
from .core import (
    Box,
    constant_of,
    dtype_of,
    holds_batch,
    innermost,
    shape_of,
    zeros_like_value,
)
from .forward import ForwardLevel, linear_transpose, scalar_like
from .protocols import is_foreign_array, like_input
from .reverse import ReverseLevel, backward_pass
from .tree_util import (
    LeafName,
    keystr,
    leaf_paths,
    registration_hint,
    structure_difference,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from .vmapping import map_rows, returns_iterator

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .tree_util import PyTree

__all__ = [
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stop_gradient",
    "value_and_grad",
    "vjp",
]


# --- checking what the user passed ----------------------------------------------------------------


def _plain(x):
    """x's plain value, for checks of its type, shape and dtype. A batched value (inside
    `vmap`) gets a stand-in with one row's shape and dtype: reading its rows would split the
    batch (see `fgrad.batching`)."""
    if holds_batch(x):
        shape, dtype = shape_of(x), dtype_of(x)
        if not shape:
            return dtype.type(0)
        # an uninitialized array allocates no pages; np.broadcast_to costs several us
        return (
            _np.empty(shape, dtype)
            if _np.prod(shape) <= 1 << 20
            else _np.broadcast_to(_np.zeros((), dtype), shape)
        )
    return _peek(x)


def _peek(x):
    """The value under every box, without asking any level to read it: a staging level
    (`jit`'s) would record a guard on a read, and a check of type, shape and dtype reads no
    value. Lists and tuples get the values of their elements."""
    if type(x) is Box:
        return innermost(x)
    if type(x) is list or type(x) is tuple:
        return type(x)(_peek(v) for v in x)
    return x


def _describe(x):
    v = _plain(x)
    return f"shape {_shape(v)} and dtype {_dtype(v)}"


def _shape(v):
    """NumPy's shape of a value (an array of any library: its own `.shape`)."""
    s = getattr(v, "shape", None)
    return tuple(s) if s is not None else _np.shape(v)


def _dtype(v):
    """NumPy's dtype of a value; a Python float counts as float64, as in NumPy."""
    dt = getattr(v, "dtype", None)  # arrays and NumPy scalars: the cheap way, once per call
    if dt is not None:
        return dt
    return _np.result_type(v) if not isinstance(v, (list, tuple)) else _np.asarray(v).dtype


def _check_callable(fun, who):
    if not callable(fun):
        raise TypeError(
            f"{who} expects a function as its first argument, got {fun!r} of type "
            f"{type(fun).__name__}; pass the function itself, e.g. {who}(f), not {who}(f(x))"
        )
    _refuse_generator(fun, who)


def _refuse_generator(fun, who):
    """A generator function (or an async one) returns an iterator whose body runs only when it
    is iterated, outside the transform: refused where the function is given (one look at its
    code flags, not a check per call)."""
    if returns_iterator(fun):
        raise TypeError(_generator_message(fun, who))


def _generator_message(fun, who, returned=False):
    """Why a generator function is refused and what to give instead; `returned`: `fun` is the
    generator a function returned (a callable object whose `__call__` yields)."""
    # (a generator's qualname names its method's class; a partial is named by its function)
    name = fun.__qualname__ if returned else getattr(getattr(fun, "func", fun), "__name__", "")
    what = (
        f"the function returned a generator (of {name})"
        if returned
        else f"{name} is a generator function (or an async one): calling it returns an iterator"
    )
    return (
        f"{who}: {what}, whose body runs only when iterated, outside the transform; give a "
        "function that returns its result instead (for several values, return a list or "
        "tuple of what it yields)"
    )


def _refuse_allow_int(allow_int, who):
    """JAX's `allow_int=True` gives an integer input a gradient of dtype float0 (no values: the
    integers are not a vector space); NumPy has no such dtype, and fgrad differentiates float
    inputs only. Refused by name rather than with Python's 'unexpected keyword'."""
    if allow_int:
        raise TypeError(
            f"{who}: allow_int=True is not supported: JAX gives an integer input a float0 "
            "gradient, which has no NumPy counterpart; leave the integer arguments out of "
            "argnums (they are passed through, not differentiated), or pass them as floats "
            "(x.astype(float)) for the derivative in them"
        )


def _normalize_argnums(argnums, who):
    if isinstance(argnums, (int, _np.integer)) and not isinstance(argnums, bool):
        return (operator.index(argnums),), True
    if isinstance(argnums, (tuple, list)) and all(
        isinstance(a, (int, _np.integer)) and not isinstance(a, bool) for a in argnums
    ):
        nums = tuple(operator.index(a) for a in argnums)
        if not nums:
            raise ValueError(f"{who}: argnums is an empty tuple; name at least one argument")
        return nums, False
    raise TypeError(
        f"{who}: argnums must be an int or a tuple of ints, got {argnums!r} of type "
        f"{type(argnums).__name__}; pass argnums=0 or, for several, argnums=(0, 1)"
    )


def _check_argnums_range(argnums, nargs, who):
    if nargs == 0:
        raise ValueError(
            f"{who}: the function was called with no positional arguments, so there is "
            "nothing to differentiate; pass the value to differentiate positionally, "
            f"e.g. {who}(f)(x)"
        )
    for a in argnums:
        if not -nargs <= a < nargs:
            raise ValueError(
                f"{who}: argnums {a} is out of range: the function was called with {nargs} "
                f"positional argument{'s' if nargs != 1 else ''} (valid argnums are 0 to "
                f"{nargs - 1}); pass the value to differentiate positionally"
            )
    nums = tuple(a % nargs for a in argnums)
    # checked after wrapping negative argnums: (0, -2) of two arguments names argument 0 twice
    if len(set(nums)) != len(nums):
        raise ValueError(
            f"{who}: argnums {tuple(argnums)} names an argument twice (as {nums} for "
            f"{nargs} arguments); list each once"
        )
    return nums


def _check_float_leaves(leaves, labels, who, holomorphic=None):
    """Differentiated inputs must be floats (real or complex): name the offending one and say
    what to do. `holomorphic=True` requires complex inputs; `False`, real ones. `labels()`
    names the leaves; it is only called to write an error."""
    accepted = "c" if holomorphic else "f" if holomorphic is False else "fc"
    for i, x in enumerate(leaves):
        if (type(x) is _np.ndarray or type(x) in _NUMPY_INEXACT) and x.dtype.kind in accepted:
            continue  # the common cases, without the general one's checks
        v = _plain(x)
        if isinstance(v, (list, tuple)):
            v = _np.asarray(v)
        dt = _dtype(v) if _is_arraylike(v) else None
        is_complex = dt is not None and dt.kind == "c"
        if dt is not None and dt.kind == "f" and not holomorphic:
            continue
        if is_complex and holomorphic is not False:
            continue
        label = labels()[i]
        if dt is None:
            what = f"of type {type(v).__name__}"
            fix = "pass a float or a float NumPy array" + registration_hint(v)
        elif holomorphic:
            what = f"real ({_describe(v)})"
            fix = "holomorphic=True needs complex inputs; cast it with x.astype(complex)"
        elif is_complex:
            what = f"complex ({_describe(v)})"
            fix = (
                f"for a holomorphic function pass holomorphic=True to {who}; otherwise "
                "differentiate the real and imaginary parts as separate float inputs"
            )
        else:
            what = f"{dt} with shape {_np.shape(v)}"
            if _np.ndim(v) != 0:
                fix = "cast it with x.astype(float)"
            elif dt.kind in "biu":  # an integer or a bool: the same number as a float
                fix = (
                    f"pass {float(v)!r} instead of {v!r} to differentiate it; an index, a "
                    "count or a flag has no derivative: close over it instead (a lambda or "
                    "functools.partial)"
                )
            else:
                fix = "pass a float or a float NumPy array"
        kind = {True: "complex", False: "real float"}.get(holomorphic, "float")
        raise TypeError(f"{who} requires {kind} inputs; {label} is {what}: {fix}")


def _numpy_scalar(v, like=None):
    """A Python number as a NumPy scalar (of `like`'s dtype, if given); anything else as is.

    Inputs, tangents and cotangents enter the core as NumPy values so that rules compute with
    NumPy's semantics: with Python floats, `0.0 ** -2.0` in a rule would raise
    ZeroDivisionError where NumPy gives inf.
    """
    kind = type(v)
    if kind is _np.ndarray or (kind is type(like) and kind in _NUMPY_FLOATS):
        return v  # the common cases, answered first: an array, or a scalar of like's type
    if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
        if like is not None:
            dtype = _dtype(_plain(like))
        else:
            dtype = _np.complex128 if isinstance(v, complex) else _np.float64
        return _np.asarray(v, dtype=dtype)[()]
    if kind is Box and type(innermost(v)) in (float, complex):
        # an outer transform's value of a Python number (`jit(grad(f))(0.0)` records with the
        # float itself): made a NumPy scalar by operations of that transform
        dtype = _dtype(_plain(like)) if like is not None else _dtype(innermost(v))
        return fnp.asarray(v, dtype=dtype)[()]
    return v


# NumPy's float scalars: what a scalar-valued function's output usually is.
_NUMPY_FLOATS = frozenset((_np.float64, _np.float32, _np.float16, _np.longdouble))
_NUMPY_INEXACT = _NUMPY_FLOATS | {_np.complex128, _np.complex64, _np.clongdouble}
_ONE = _np.float64(1)


def _is_arraylike(v):
    """A number or an array: NumPy's, or another library's that speaks NumPy's protocols."""
    return isinstance(v, (int, float, complex, bool, _np.ndarray, _np.generic)) or (
        is_foreign_array(v)
    )


def _leaf_labels(tree_args, argnums):
    """'argument i' (or "argument i at ['w'][0]", with the leaf's key path in its pytree) for
    each leaf of the differentiated arguments."""
    labels = []
    for a, arg in zip(argnums, tree_args):
        labels.extend(
            f"argument {a} at {keystr(path)}" if path else f"argument {a}"
            for path in leaf_paths(tree_structure(arg))
        )
    return labels


def _remade_by(named, fun, remake):
    """`named` (a transform of `fun`) marked for `jit`, which records grad(jit(fun)) first
    (`jitting.Jitted`): `same_transform_of` holds `named` by a weak reference (to tell it from
    a wrapper of it, which copies its __dict__: functools.update_wrapper), `fun`, and `remake`,
    the same transform of another function."""
    named.same_transform_of = (weakref.ref(named), fun, remake)
    return named


def _named(wrapper, fun, transform):
    """`wrapper`, a transform of `fun`, named after both, behind the API boundary."""
    name = getattr(fun, "__name__", type(fun).__name__)
    functools.update_wrapper(wrapper, fun)
    wrapper.__name__ = wrapper.__qualname__ = f"{transform}({name})"
    del wrapper.__wrapped__  # inspect.signature should show the wrapper's, not fun's
    wrapper.transformed = fun  # (for `jit`, which watches the state fun reads)
    return api_boundary(wrapper)


def _strip(x, level):
    """x as seen outside `level`: the value under a box of `level` (boxes of exited inner
    levels are unwrapped first)."""
    while type(x) is Box and x.level is not level and not x.level.live:
        x = x.value
    if type(x) is Box and x.level is level:
        return x.value
    return x


def _own_aux(x, level):
    """The aux of x's box of `level` (its tape position on a reverse level, its tangent on a
    forward level), or None when x is a constant there."""
    while type(x) is Box and x.level is not level and not x.level.live:
        x = x.value
    return x.aux if type(x) is Box and x.level is level else None


def _kind_of(x):
    """What a user's value is, in their words: an array (even a traced one) or a type name."""
    if type(x) is Box or _is_arraylike(x):
        return f"an array with {_describe(x)}"
    return f"a {type(x).__name__}"


def _split_aux(out, who):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"{who} with has_aux=True expects the function to return a pair (output, aux); "
            f"it returned {_kind_of(out)}"
            + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "")
            + "; return (output, aux), or drop has_aux=True"
        )
    return out[0], out[1]


# --- reverse mode ---------------------------------------------------------------------------------


@api_boundary
def vjp(fun: Callable[..., Any], *primals: PyTree, has_aux: bool = False) -> tuple[Any, ...]:
    """Reverse mode: evaluate `fun(*primals)` and return the function that pulls cotangents back.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays, with outputs of any shape and structure.
    *primals : array_like or pytree
        The point at which `fun` is evaluated and differentiated.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; `aux` is returned third and not differentiated.

    Returns
    -------
    out : array or pytree
        `fun(*primals)`.
    vjp_fun : callable
        `vjp_fun(ct)`, for a cotangent `ct` shaped like `out`, returns the tuple of cotangents of
        the primals (one per primal, each shaped like it): ct^T J. It may be called many times.
    aux : object
        Only with `has_aux=True`.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> out, f_vjp = fgrad.vjp(lambda x, y: x * y, 2.0, 3.0)
    >>> [float(c) for c in f_vjp(1.0)]
    [3.0, 2.0]
    """
    _check_callable(fun, "vjp")
    return _vjp(fun, primals, has_aux, "vjp")


def _vjp(fun, primals, has_aux, who, labels=None):
    leaves, in_tree = tree_flatten(tuple(primals))
    _check_float_leaves(leaves, labels or (lambda: _leaf_labels(primals, range(len(primals)))), who)
    out_values, out_tree, pull, aux = _vjp_flat(
        lambda args: fun(*args), leaves, in_tree, has_aux, who
    )

    def vjp_fun(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            where = structure_difference(ct, tree_unflatten(out_tree, out_values))
            raise ValueError(
                "the cotangent passed to the vjp function does not match the function's "
                f"output: {'in the cotangent, ' + where if where else ''}"
                f"{'; ' if where else ''}it has structure {ct_tree}, the output {out_tree}; "
                "pass a cotangent shaped like the output, one leaf per output leaf"
            )
        for i, (c, o) in enumerate(zip(ct_leaves, out_values)):
            _check_like(c, o, LeafName("the cotangent", out_tree, i, " at "), "output")
        return tree_unflatten(in_tree, _fresh(pull(ct_leaves), ct_leaves + leaves))

    primal_out = tree_unflatten(out_tree, _fresh(out_values, leaves))
    vjp_fun = api_boundary(vjp_fun)
    if has_aux:
        return primal_out, vjp_fun, _fresh_tree(aux, leaves)
    return primal_out, vjp_fun


def _fresh(results, given):
    """`results` (a list of leaves) as arrays the caller owns: one that may share memory with
    an array in `given` (the caller's primals, tangents or cotangents) is copied, and so is one
    that is read-only (a 0-stride broadcast, `grad(mean)`'s), as `jit` does with its outputs.
    So updating a result in place (an optimizer's step, `g *= 0.5`, an aux snapshot kept
    across steps) works and leaves the caller's arrays alone.

    Inside a transform, copies of traced values (`x.copy()`, `astype`, `+x`, `flatten`, ...)
    are the value itself and views stay views: nothing can write into a traced value, so no
    one can tell. It becomes visible only here, where values leave the transform, which is
    why they are made fresh here, once, rather than by every operation. An array that owns
    its memory and is none of `given` (what most operations return) is kept as it is; a view
    is copied when its memory's owner is one of `given`'s (checking the owner, not the
    bytes, costs O(1) a leaf; at worst it copies a view of another part of that memory).
    So is a result whose memory's owner an earlier result's is: a forward rule passes a
    tangent through unchanged, so the tangents of `(w + 1, w - 1)` are one array, and
    writing into one would change the other. An ndarray subclass counts as an array: an
    `np.memmap`'s memory is the caller's file."""
    owners = {id(_owner(g)) for g in given if isinstance(g, _np.ndarray)}
    copied = None
    for k, r in enumerate(results):
        if not isinstance(r, _np.ndarray):
            continue
        owner = id(_owner(r))
        if r.flags.writeable and owner not in owners:
            owners.add(owner)  # (a result kept: later ones may not share its memory)
            continue
        if copied is None:
            copied = list(results)
        copied[k] = r.copy()
    return results if copied is None else copied


def _owner(a):
    """The object that owns an array's memory: the end of its chain of `base`s (through
    subclasses: a memmap's is its `mmap`)."""
    while isinstance(a, _np.ndarray) and a.base is not None:
        a = a.base
    return a


def _arrays_of(args, kwargs):
    """Every argument's leaves (the differentiated ones and the others), for `_fresh` of what
    the function may hand back as it is (a has_aux snapshot of an argument)."""
    return tree_flatten((args, kwargs))[0]


def _fresh_tree(tree, given):
    """`_fresh` of a pytree (a has_aux function's aux, a primal output)."""
    leaves, treedef = tree_flatten(tree)
    fresh = _fresh(leaves, given)
    return tree if fresh is leaves else tree_unflatten(treedef, fresh)


def _check_outputs(out_leaves, who):
    """Transforms differentiate numbers and numeric arrays; say so for anything else."""
    for k, o in enumerate(out_leaves):
        v = o.value if type(o) is Box and not o.level.batches else o  # a reverse or forward box
        if type(v) in _NUMPY_FLOATS or (type(v) is _np.ndarray and v.dtype.kind in "biufc"):
            continue  # the common cases, without the general one's checks
        v = _plain(o)
        if not (_is_arraylike(v) and _np.dtype(_dtype(v)).kind in "biufc"):  # numbers, bools
            if inspect.isgenerator(v) or inspect.iscoroutine(v):  # (a callable's __call__)
                raise TypeError(_generator_message(v, who, returned=True))
            kind = f"dtype {_dtype(v)}" if _is_arraylike(v) else f"type {type(v).__name__}"
            raise TypeError(
                f"{who}: the function returned a value of {kind} at output leaf {k}; "
                "transforms differentiate numbers and numeric arrays, so return those"
                + (" (put other results in has_aux=True's aux)" if who not in _NO_AUX else "")
            )


# the transforms without `has_aux`
_NO_AUX = frozenset(
    (
        "derivative",
        "laplacian",
        "jet",
        "sparse_jacobian",
        "sparse_hessian",
        "jacobian_sparsity",
        "hessian_sparsity",
    )
)


def _pause_collector():
    """Pause Python's cyclic garbage collector while a trace or a backward pass runs; returns
    whether it was running, for `_resume_collector` (called in a `finally`).

    A trace makes several objects per primitive (boxes, nodes, closures) that live until the
    backward pass; each young-generation collection re-scans them, which is a fifth of the time
    of a 20,000-op gradient. The tape holds no reference cycles (tests/test_no_leaks.py), so
    reference counting frees it without the collector. (Two calls rather than a context
    manager: its object and method calls cost a microsecond a gradient.)
    """
    running = gc.isenabled()
    gc.disable()
    return running


def _resume_collector(running):
    if running:
        gc.enable()


def _trace(fun, leaves, in_tree, has_aux, who):
    """Trace `fun`, a function of one argument (the tree `in_tree` of `leaves`), on a new
    reverse level; the caller pauses the collector. Returns the level, the output (traced)
    and aux (with this level's boxes stripped). Python numbers enter as NumPy scalars (see
    `_numpy_scalar`)."""
    with ReverseLevel() as level:
        boxes = [level.new_input(x if type(x) is _np.ndarray else _numpy_scalar(x)) for x in leaves]
        out = fun(tree_unflatten(in_tree, boxes))
    aux = None
    if has_aux:
        out, aux = _split_aux(out, who)
        aux = tree_map(lambda a: _strip(a, level), aux)
    return level, out, aux


def _input_cotangents(cts, leaves):
    """The inputs' cotangents from a backward pass's (the inputs are the first entries of the
    tape): a zero where none arrived, an input of another library (Dask) gets one of its
    type with its chunks, and a number (a NumPy scalar or a Python float) NumPy's scalar."""
    out = cts[: len(leaves)]
    for i, g in enumerate(out):
        x = leaves[i]
        if g is None:  # no cotangent reached input i: its derivative is a zero
            out[i] = g = zeros_like_value(x)
        if type(x) is _np.ndarray:
            if type(g) is not _np.ndarray or g.dtype is not x.dtype:
                out[i] = _in_dtype_of(g, x.dtype)
            continue
        if type(x) is not Box and is_foreign_array(x):  # (a box's check: 1 us of a jit's record)
            out[i] = like_input(g, x)
            continue
        x = innermost(x)  # (a value a `jit` record holds, or an outer `grad`'s)
        chunks = getattr(x, "chunks", None)
        if chunks is not None and is_foreign_array(x):  # a traced Dask input (under `jit`)
            out[i] = fnp.shaping.rechunk_p(g, chunks=chunks)
            continue
        if isinstance(x, (_np.ndarray, _np.generic)):
            out[i] = g = _in_dtype_of(g, x.dtype)
        if type(x) in (float, complex) or isinstance(x, _np.generic):
            # a number's: NumPy's scalar, as its zero is (a rule that sums a cotangent over
            # axes, or a `where`, makes a 0-d array, so the type depended on the path taken)
            inner = innermost(g)
            if type(inner) is _np.ndarray and inner.ndim == 0 and not holds_batch(g):
                out[i] = g[()]
    return out


def _in_dtype_of(g, dtype):
    """The cotangent `g` of an input of `dtype`, in that dtype, as JAX gives it: a rule whose
    value NumPy or SciPy computes in another precision (SciPy's special functions compute a
    float16 input in float64) sends back a cotangent of that precision. A real cotangent of
    a complex input becomes complex (exactly); a complex one of a real input stays as it is
    (dropping its imaginary part would hide a wrong rule)."""
    g_dtype = dtype_of(g)
    if g_dtype == dtype or dtype.kind not in "fc" or g_dtype.kind not in "fc":
        return g
    if (g_dtype.kind == "c" and dtype.kind == "f") or g_dtype.char == dtype.char:
        return g  # (the same type in another byte order stays in the native one)
    return fnp.astype(g, _np.dtype(dtype.char))


def _vjp_flat(fun, leaves, in_tree, has_aux, who, consume=False):
    """Trace `fun`, a function of one argument (the tree `in_tree` of `leaves`), on a reverse
    level. Returns the output's leaves and structure, `pull` (cotangent leaves -> input
    cotangent leaves; a None cotangent is a structural zero, so nothing is computed for it)
    and aux."""
    collecting = _pause_collector()
    try:
        level, out, aux = _trace(fun, leaves, in_tree, has_aux, who)
    finally:
        _resume_collector(collecting)
    out_leaves, out_tree = tree_flatten(out)
    _check_outputs(out_leaves, who)
    out_positions, out_values = [], []
    for o in out_leaves:
        if type(o) is Box and o.level is level:  # the common case: an output of this level
            out_positions.append(o.aux)
            out_values.append(o.value)
        else:
            out_positions.append(_own_aux(o, level))
            out_values.append(_strip(o, level))
    del out, out_leaves  # the vjp function keeps the tape, not the traced values

    def pull(ct_leaves):
        seeds = [
            (n, _numpy_scalar(c, o))
            for n, c, o in zip(out_positions, ct_leaves, out_values)
            if n is not None and c is not None
        ]
        if not seeds:
            return _input_cotangents([None] * len(leaves), leaves)
        collecting = _pause_collector()
        try:
            cts = backward_pass(level, seeds, consume=consume)
        finally:
            _resume_collector(collecting)
        return _input_cotangents(cts, leaves)

    return out_values, out_tree, pull, aux


def _grad_flat(fun, leaves, in_tree, has_aux, who, holomorphic):
    """`value_and_grad`'s trace and backward pass, for a function of one argument (the tree
    `in_tree` of `leaves`), run under one pause of the collector and without `_vjp_flat`'s
    function for later cotangents. Returns the output's value, aux and the input cotangents."""
    collecting = _pause_collector()
    try:
        level, out, aux = _trace(fun, leaves, in_tree, has_aux, who)
        if type(out) is Box and out.level is level:  # the common case: an output of this level
            position, value = out.aux, out.value
        else:  # a constant, an outer level's value or not a scalar: the checks of every output
            out_leaves, _ = tree_flatten(out)
            _check_outputs(out_leaves, who)
            position, value = _own_aux(out, level), _strip(out, level)
        ct = _unit_cotangent(value, who, holomorphic)
        if position is None:  # the output does not depend on the inputs
            cts = [None] * len(leaves)
        else:
            cts = backward_pass(level, [(position, ct)], consume=True)
    finally:
        _resume_collector(collecting)
    return value, aux, _input_cotangents(cts, leaves)


def _check_like(given, expected, what, of_what):
    """A tangent or cotangent must have the shape and dtype of the value it goes with. A bool
    or integer value (a mask, a count) has no derivative: any cotangent of its shape is taken
    (and not read), a bool or int one as JAX takes one."""
    g, e = _plain(given), _plain(expected)
    if _dtype(e).kind in "biu" and _is_arraylike(g) and _np.shape(g) in ((), _np.shape(e)):
        return
    if not (_is_arraylike(g) and _np.issubdtype(_dtype(g), _np.number)) or isinstance(g, bool):
        kind = (
            f"{_dtype(g)} with shape {_np.shape(g)}"
            if _is_arraylike(g)
            else f"of type {type(g).__name__}"
        )
        raise TypeError(
            f"{what} is {kind}, but the {of_what} it goes with has shape {_np.shape(e)} and "
            f"dtype {_dtype(e)}; pass a number or an array of that shape and dtype"
        )
    g_shape, e_shape = _np.shape(g), _np.shape(e)
    if g_shape != e_shape:
        raise ValueError(
            f"{what} has shape {g_shape}, but the {of_what} it goes with has shape {e_shape} "
            f"(dtype {_dtype(e)}); pass an array of shape {e_shape}"
        )
    if type(g) in (float, int) or (type(g) is complex and _np.iscomplexobj(e)):
        return  # a Python number is weakly typed: it takes the dtype of the value
    g_dtype, e_dtype = _dtype(g), _dtype(e)
    if g_dtype != e_dtype:
        raise ValueError(
            f"{what} has dtype {g_dtype}, but the {of_what} it goes with has dtype {e_dtype} "
            f"(shape {e_shape}); cast it with .astype({e_dtype.name!r})"
        )


def value_and_grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., tuple[Any, Any]]:
    """Like `grad`, but the function returns `(fun(*args), gradient)`: the value comes for free.

    Parameters
    ----------
    fun : callable
        A scalar-valued function, as for `grad`.
    argnums : int or tuple of int, default 0
        Which positional argument(s) to differentiate.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; the result is then `((out, aux), gradient)`.
    holomorphic : bool, default False
        As for `grad`.
    allow_int : bool, default False
        As for `grad`: only False.

    Returns
    -------
    callable
        A function returning `(value, gradient)`.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> value, g = fgrad.value_and_grad(lambda x: x ** 3)(2.0)
    >>> float(value), float(g)
    (8.0, 12.0)
    """
    _check_callable(fun, "value_and_grad")
    _refuse_allow_int(allow_int, "value_and_grad")
    value_and_grad_fun = _value_and_grad(fun, argnums, has_aux, holomorphic, "value_and_grad")
    named = _named(value_and_grad_fun, fun, "value_and_grad")
    return _remade_by(named, fun, lambda g: value_and_grad(g, argnums, has_aux, holomorphic))


def _value_and_grad(fun, argnums, has_aux, holomorphic, who, with_value=True):
    """The function `value_and_grad` returns, before it is named and put behind the API
    boundary; with `with_value=False`, `grad`'s (the gradient, and aux with `has_aux`)."""
    nums, single = _normalize_argnums(argnums, who)
    positions = {}  # the differentiated arguments' positions, checked once per argument count

    def value_and_grad_fun(*args, **kwargs):
        dyn_nums = positions.get(len(args))
        if dyn_nums is None:
            dyn_nums = positions[len(args)] = _check_argnums_range(nums, len(args), who)
        # What is differentiated: the one argument itself (argnums an int), or the tuple of
        # the arguments
        dyn = args[dyn_nums[0]] if single else tuple([args[i] for i in dyn_nums])
        fun_of_dyn = _function_of_dyn(fun, args, kwargs, dyn_nums, single)
        leaves, in_tree = tree_flatten(dyn)
        _check_float_leaves(
            leaves,
            lambda: _leaf_labels((dyn,) if single else dyn, dyn_nums),
            who,
            holomorphic=True if holomorphic else None,
        )
        out, aux, g_leaves = _grad_flat(fun_of_dyn, leaves, in_tree, has_aux, who, holomorphic)
        g = tree_unflatten(in_tree, _fresh(g_leaves, leaves))
        if has_aux:
            aux = _fresh_tree(aux, _arrays_of(args, kwargs))
        if not with_value:
            return (g, aux) if has_aux else g
        (out,) = _fresh([out], leaves)
        return ((out, aux) if has_aux else out), g

    return value_and_grad_fun


def _unit_cotangent(out, who, holomorphic=False):
    """grad's output must be a float with one element (real, or complex if `holomorphic`);
    its cotangent is 1."""
    if type(out) is _np.float64 and not holomorphic:
        return _ONE  # the common case, without the general one's checks
    v = _plain(out)
    if type(v) is _np.float64 and not holomorphic:
        return _ONE
    if not _is_arraylike(v):
        raise TypeError(
            f"{who} requires the function to return a scalar (a float or an array with one "
            f"element); it returned {type(out).__name__}. For a pytree output use "
            "jacrev(f) or vjp(f, x)"
        )
    dt = _np.dtype(_dtype(v))
    v_shape = _shape(v)
    if math.prod(v_shape) != 1:
        raise TypeError(
            f"{who} requires a scalar output (shape () or one element); the function "
            f"returned {_describe(v)}. For the full Jacobian use jacrev(f); for a "
            "vector-Jacobian product use vjp(f, x)"
        )
    if holomorphic and dt.kind != "c":
        raise TypeError(
            f"{who} with holomorphic=True requires a complex output; the function returned "
            f"{_describe(v)}. Drop holomorphic=True for a real-valued function"
        )
    if not holomorphic and dt.kind == "c":
        raise TypeError(
            f"{who} requires a real output; the function returned {_describe(v)}. For a "
            "holomorphic function pass holomorphic=True; otherwise differentiate "
            "fgrad.numpy.real(f) and fgrad.numpy.imag(f) separately, or use vjp(f, x)"
        )
    if dt.kind not in "fc":
        raise TypeError(
            f"{who} requires a real float output; the function returned {_describe(v)}. "
            "Make sure the output is computed from the float inputs"
        )
    return dt.type(1) if not v_shape else _np.ones(v_shape, dt)


def grad(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., Any]:
    """The gradient of a scalar-valued function: `grad(fun)(*args)` is d fun / d args[argnums].

    Parameters
    ----------
    fun : callable
        A function of arrays (or pytrees of arrays) written with `fgrad.numpy`, returning a real
        scalar (a complex one with `holomorphic=True`).
    argnums : int or tuple of int, default 0
        Which positional argument to differentiate; a tuple gives a tuple of gradients.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; the gradient function then returns `(gradient, aux)`, and
        `aux` is not differentiated.
    holomorphic : bool, default False
        `fun` is complex-valued and complex-differentiable: the gradient is f'(z).
    allow_int : bool, default False
        JAX's gradient of an integer input (a float0 array) has no counterpart here: True is
        refused, with what to do instead (leave the integer out of `argnums`, or pass it as
        floats for the derivative in it).

    Returns
    -------
    callable
        A function of the same arguments as `fun` returning the gradient, shaped (and typed) like
        the argument(s) chosen by `argnums`. It can be transformed again: `grad(grad(f))`.

    Notes
    -----
    Complex inputs follow JAX's convention: for a real-valued f of z = x + iy the gradient is
    df/dx - i df/dy (PyTorch returns its conjugate, df/dx + i df/dy). At a point where `fun` has
    no derivative (a kink, a tie) the result is the convention of the rule concerned; see the
    conventions table (`fgrad.conventions`).

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(fnp.sin)(0.0))
    1.0
    >>> [float(g) for g in fgrad.grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 5.0)]
    [5.0, 2.0]
    >>> complex(fgrad.grad(lambda z: fnp.abs(z) ** 2)(1 + 2j))
    (2-4j)
    >>> complex(fgrad.grad(lambda z: z ** 2, holomorphic=True)(1 + 2j))
    (2+4j)
    """
    _check_callable(fun, "grad")
    _refuse_allow_int(allow_int, "grad")
    grad_fun = _value_and_grad(fun, argnums, has_aux, holomorphic, "grad", with_value=False)
    named = _named(grad_fun, fun, "grad")
    return _remade_by(named, fun, lambda g: grad(g, argnums, has_aux, holomorphic))


# --- forward mode ---------------------------------------------------------------------------------


@api_boundary
def jvp(
    fun: Callable[..., Any],
    primals: Sequence[PyTree],
    tangents: Sequence[PyTree],
    has_aux: bool = False,
) -> tuple[Any, ...]:
    """Forward mode: evaluate `fun(*primals)` and its directional derivative along `tangents`.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays.
    primals : tuple
        One entry per argument of `fun`: the point.
    tangents : tuple
        One entry per primal, each shaped (and typed) like it: the direction.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; `aux` is returned third and not differentiated.

    Returns
    -------
    out : array or pytree
        `fun(*primals)`.
    tangent_out : array or pytree
        J t, shaped like `out`.
    aux : object
        Only with `has_aux=True`.

    Notes
    -----
    Every primitive has a forward rule, or one derived by transposing its reverse rule, so
    `jvp` works through your own `primitive` and `custom_vjp` functions too.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> out, t = fgrad.jvp(fnp.sin, (0.0,), (2.0,))
    >>> float(out), float(t)
    (0.0, 2.0)
    """
    _check_callable(fun, "jvp")
    for name, val in (("primals", primals), ("tangents", tangents)):
        if not isinstance(val, (tuple, list)):
            raise TypeError(
                f"jvp: {name} must be a tuple (or list) with one entry per argument, like "
                f"jvp(f, (x,), (t,)); got {type(val).__name__}"
            )
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        where = structure_difference(tuple(tangents), tuple(primals))
        raise ValueError(
            f"jvp: the tangents do not match the primals: "
            f"{'in the tangents, ' + where + '; ' if where else ''}"
            f"tangents have structure {t_tree} but primals have structure {p_tree}; "
            "pass one tangent shaped like each primal"
        )
    _check_float_leaves(p_leaves, lambda: _leaf_labels(primals, range(len(primals))), "jvp")
    for i, (t, p) in enumerate(zip(t_leaves, p_leaves)):
        _check_like(t, p, LeafName("jvp: tangents", p_tree, i), "primal")
    values, tangents_out, out_tree, aux = _jvp_flat(
        lambda args: fun(*args), p_leaves, p_tree, t_leaves, has_aux
    )
    given = p_leaves + t_leaves
    values, tangents_out = _fresh(values, given), _fresh(tangents_out, given)
    result = (tree_unflatten(out_tree, values), tree_unflatten(out_tree, tangents_out))
    return result + (_fresh_tree(aux, given),) if has_aux else result


def _jvp_flat(fun, p_leaves, p_tree, t_leaves, has_aux=False, who="jvp"):
    """Push tangent leaves through `fun`, a function of one argument (the tree `p_tree` of
    `p_leaves`), on a forward level. A None tangent is a structural
    zero: no tangent is computed from it, but the input is still a traced value (its box
    carries None), so that `fun` sees the same kind of value for every input it is
    differentiated in (`x.dot(y)` with x plain and y traced cannot dispatch to fgrad)."""
    p_leaves = [_numpy_scalar(p) for p in p_leaves]
    with ForwardLevel() as level:
        args = [
            Box(p, level, None if t is None else _numpy_scalar(t, p))
            for p, t in zip(p_leaves, t_leaves)
        ]
        out = fun(tree_unflatten(p_tree, args))
    aux = None
    if has_aux:
        out, aux = _split_aux(out, who)
        aux = tree_map(lambda a: _strip(a, level), aux)
    out_leaves, out_tree = tree_flatten(out)
    _check_outputs(out_leaves, who)
    values, tangents_out = [], []
    for o in out_leaves:
        tangent = _own_aux(o, level)
        value = _strip(o, level)
        values.append(value)
        if tangent is None:
            tangent = zeros_like_value(value)
        elif type(value) is not _np.ndarray and is_foreign_array(value):
            tangent = like_input(tangent, value)  # a Dask tangent has its value's chunks
        else:  # in the value's dtype (a rule may compute in another precision, as SciPy's)
            tangent = _in_dtype_of(tangent, dtype_of(value))
        tangents_out.append(tangent)
    return values, tangents_out, out_tree, aux


@api_boundary
def linearize(fun: Callable[..., Any], *primals: PyTree, has_aux: bool = False) -> tuple[Any, ...]:
    """Evaluate `fun` once at `primals` and return its linearization there.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays.
    *primals : array_like or pytree
        The point.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; `aux` is returned third and not differentiated.

    Returns
    -------
    out : array or pytree
        `fun(*primals)`.
    f_jvp : callable
        `f_jvp(*tangents)` is the jvp of `fun` at `primals`, computed without running `fun`
        again.
    aux : object
        Only with `has_aux=True`.

    Notes
    -----
    `f_jvp` transposes the vjp: the vjp function is linear in its cotangent, and its own vjp is
    the jvp. Each call costs about one backward pass. When a rule's Python reads the cotangent
    (a `custom_vjp` whose bwd loops to a tolerance or tests for zero), the transposition would
    take the path of a zero cotangent, so `f_jvp` computes `jvp(fun, primals, tangents)`
    instead, running `fun` again: exact, at the price of a forward pass per call.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> out, f_jvp = fgrad.linearize(lambda x: x ** 3, 2.0)
    >>> float(out), float(f_jvp(1.0)), float(f_jvp(0.5))
    (8.0, 12.0, 6.0)
    """
    _check_callable(fun, "linearize")
    primals_tuple = tuple(primals)
    p_leaves, p_tree = tree_flatten(primals_tuple)
    _check_float_leaves(p_leaves, lambda: _leaf_labels(primals, range(len(primals))), "linearize")
    out_leaves, out_tree, pull_leaves, aux = _vjp_flat(
        lambda args: fun(*args), p_leaves, p_tree, has_aux, "linearize"
    )
    out = tree_unflatten(out_tree, _fresh(out_leaves, p_leaves))
    if has_aux:
        aux = _fresh_tree(aux, p_leaves)

    def pull(cts):
        return pull_leaves(
            [zeros_like_value(o) if c is None else c for c, o in zip(cts, out_leaves)]
        )

    transposed = linear_transpose(pull, out_leaves)  # None: a rule reads its cotangent

    def f_jvp(*tangents):
        if len(tangents) != len(primals_tuple):
            raise TypeError(
                f"the linearized function takes {len(primals_tuple)} tangent(s), one per "
                f"primal, but was given {len(tangents)}; pass one tangent shaped like each primal"
            )
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != p_tree:
            raise ValueError(
                f"linearize: the tangents have structure {t_tree} but the primals have "
                f"structure {p_tree}; pass one tangent shaped like each primal"
            )
        for i, (t, p) in enumerate(zip(t_leaves, p_leaves)):
            _check_like(t, p, LeafName("linearize: tangents", p_tree, i), "primal")
        if transposed is None:
            return jvp(fun, primals_tuple, tangents, has_aux=has_aux)[1]
        t_out = _fresh(
            transposed([_numpy_scalar(t, p) for t, p in zip(t_leaves, p_leaves)]),
            t_leaves + p_leaves,
        )
        return tree_unflatten(
            out_tree,
            [
                zeros_like_value(o) if t is None else scalar_like(_in_dtype_of(t, dtype_of(o)), o)
                for t, o in zip(t_out, out_leaves)
            ],
        )

    f_jvp = _named(f_jvp, fun, "linearize")
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# --- Jacobians ------------------------------------------------------------------------------------


def _jacobian_setup(fun, argnums, args, kwargs, who, holomorphic, real_inputs):
    """The differentiated arguments' leaves and structure, whether the Jacobian is of one
    argument (`single`), `fun` as a function of those arguments, and `labels()`, their leaves'
    names for an error. `holomorphic=True` needs complex inputs; otherwise `real_inputs` says
    whether complex ones are refused (`hessian`'s) or taken (in grad's convention)."""
    nums, single = _normalize_argnums(argnums, who)
    dyn_nums = _check_argnums_range(nums, len(args), who)
    dyn = tuple(args[i] for i in dyn_nums)
    in_leaves, in_tree = tree_flatten(dyn)
    labels = functools.partial(_leaf_labels, dyn, dyn_nums)
    _check_float_leaves(
        in_leaves, labels, who, holomorphic=True if holomorphic else False if real_inputs else None
    )
    fun_of_dyn = _function_of_dyn(fun, args, kwargs, dyn_nums, False)
    return in_leaves, in_tree, single, fun_of_dyn, labels


def _function_of_dyn(fun, args, kwargs, dyn_nums, single):
    """`fun` as a function of what a transform differentiates: the argument at `dyn_nums[0]`
    itself (`single`), or the tuple of the arguments at `dyn_nums`; the others as given."""
    if single:
        if len(args) == 1 and not kwargs:
            return fun
        i = dyn_nums[0]

        def fun_of_one(x):
            full = list(args)
            full[i] = x
            return fun(*full, **kwargs)

        return fun_of_one

    def fun_of_tuple(dyn_args):
        full = list(args)
        for i, a in zip(dyn_nums, dyn_args):
            full[i] = a
        return fun(*full, **kwargs)

    return fun_of_tuple


# The most elements a batch of Jacobian rows holds per input or output leaf: the rows go
# through `vmap` a chunk at a time, so that the batched intermediates of a large Jacobian
# (n rows, each as large as the values it passes through) fit in memory.
_MAX_ELEMENTS = 1 << 22


def _map_linear(linear, k, n_args, rows, row_elements):
    """`[linear(args) for each row]`, stacked per output on a leading axis, by `vmap`: `args`
    has the row at position k and None (no seed) at the other `n_args - 1` positions.
    `linear` (a vjp's pull, a jvp's push) returns a list of values. `row_elements` is the size
    of the largest value of one row that the caller knows of (inputs, outputs)."""

    def one(row):
        return linear([row if m == k else None for m in range(n_args)])

    chunk = max(1, _MAX_ELEMENTS // max(1, row_elements))
    parts = [map_rows(one, rows[i : i + chunk]) for i in range(0, len(rows), chunk)]
    if len(parts) == 1:
        return parts[0]
    return [fnp.concatenate([p[j] for p in parts]) for j in range(len(parts[0]))]


def _largest(leaves):
    return max((math.prod(_shape(_plain(x))) for x in leaves), default=1)


def _one_hots(v):
    """One one-hot array shaped like the plain value v per element of v, stacked on axis 0."""
    return _np.eye(math.prod(_shape(v)), dtype=_dtype(v)).reshape((-1,) + _shape(v))


def _no_rows(leaves):
    """The stacked rows of a Jacobian block with no rows: one empty stack per leaf."""
    return [_np.zeros((0,) + _np.shape(_plain(x)), dtype=_dtype(_plain(x))) for x in leaves]


def _is_complex(x):
    return _np.dtype(_dtype(_plain(x))).kind == "c"


def _seeds(v, holomorphic, along_imaginary):
    """The seeds of the rows for the plain value v: its one-hots; for a complex v (not
    holomorphic) followed by `along_imaginary` times them. The pairing is <a, b> = Re sum(a b)
    (grad's convention), so of a complex output f = u + iv reverse mode pulls u's row with e_k
    and v's with -1j e_k; of a complex input z = x + iy forward mode pushes along x with e_m
    and along y with 1j e_m."""
    e = _one_hots(v)
    if holomorphic or not _is_complex(v):
        return e
    return _np.concatenate([e, along_imaginary * e])


def _combine(rows, sign):
    """The Jacobian rows from `_seeds`'s doubled ones: the first half plus `sign` 1j times the
    second (d/dx - i d/dy of a real output in a complex input; du/dx + i dv/dx of a complex
    output in a real input)."""
    n = _shape(_plain(rows))[0] // 2
    return rows[:n] + (sign * 1j) * rows[n:]


def _check_complex_blocks(in_leaves, out_leaves, out_tree, labels, who):
    """Without holomorphic=True a Jacobian takes complex inputs (of real outputs, in grad's
    convention) and complex outputs (of real inputs), not both: a complex output's derivative
    in a complex input is one complex number per element only when the function is
    holomorphic (otherwise it has two, in z and in its conjugate)."""
    i = next((i for i, x in enumerate(in_leaves) if _is_complex(x)), None)
    k = next((k for k, o in enumerate(out_leaves) if _is_complex(o)), None)
    if i is None or k is None:
        return
    path = leaf_paths(out_tree)[k]
    output = f"the output at {keystr(path)}" if path else "the output"
    raise TypeError(
        f"{who} with holomorphic=False takes complex inputs or complex outputs, not both: "
        f"{labels()[i]} is complex ({_describe(in_leaves[i])}) and {output} is complex "
        f"({_describe(out_leaves[k])}). For a holomorphic function pass holomorphic=True; "
        "otherwise differentiate the real and imaginary parts separately (of the output: "
        "fgrad.numpy.real(f) and fgrad.numpy.imag(f); or of the input: f(x + 1j * y) in "
        "float x and y)"
    )


def _assemble(pieces_by_out, out_leaves, in_leaves, in_tree_of, out_tree):
    """Jacobian blocks -> pytree: the output's structure, each leaf holding the input's
    structure, each block of shape out_leaf.shape + in_leaf.shape (JAX's layout)."""
    blocks = []
    for k, o in enumerate(out_leaves):
        per_input = [
            fnp.reshape(pieces_by_out[k][j], _np.shape(_plain(o)) + _np.shape(_plain(x)))
            for j, x in enumerate(in_leaves)
        ]
        blocks.append(in_tree_of(per_input))
    return tree_unflatten(out_tree, blocks)


def jacfwd(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable[..., PyTree]:
    """The Jacobian of `fun` by forward mode: one jvp per input element, all at once.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays.
    argnums : int or tuple of int, default 0
        The argument(s) to differentiate with respect to.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; the Jacobian function then returns `(jacobian, aux)`, `aux`
        not differentiated (as in JAX).
    holomorphic : bool, default False
        For a holomorphic function of complex inputs: the Jacobian is then f'(z).

    Returns
    -------
    callable
        A function returning the Jacobian, shaped `out.shape + x.shape` (a pytree of such
        arrays for pytree inputs or outputs, a tuple for a tuple of `argnums`).

    Notes
    -----
    The jvps run together, as `vmap` over one-hot tangents; cheaper than `jacrev` when inputs
    are fewer than outputs.

    Without `holomorphic`, complex values follow `grad`'s convention, and `jacfwd` equals
    `jacrev`: of a real input and a complex output f = u + iv the Jacobian is du/dx + i dv/dx;
    of a complex input z = x + iy and a real output it is df/dx - i df/dy, from two pushes per
    element, along 1 and 1j (JAX's jacfwd refuses complex inputs). A complex output of a complex
    input is refused: its derivative is one complex number only when the function is
    holomorphic.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.jacfwd(lambda x: x ** 2)(fnp.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    _check_callable(fun, "jacfwd")
    return _jacfwd(fun, argnums, has_aux, holomorphic, "jacfwd")


def _jacfwd(fun, argnums, has_aux, holomorphic, who, real_inputs=False):
    """`jacfwd`, its errors naming the transform the user called as `who` (`hessian`);
    `real_inputs` refuses complex inputs unless holomorphic (`hessian`'s)."""

    def jacfwd_fun(*args, **kwargs):
        in_leaves, in_tree, single, fun_of_dyn, labels = _jacobian_setup(
            fun, argnums, args, kwargs, who, holomorphic, real_inputs
        )
        evaluated = []  # the outputs and their structure, from the first jvp

        def push(tangents):
            values, t_out, out_tree, aux = _jvp_flat(
                fun_of_dyn, in_leaves, in_tree, tangents, has_aux, who=who
            )
            if not evaluated:  # (aux does not depend on the tangents: the first one's)
                evaluated.extend((values, out_tree, aux))
            return t_out

        # columns[j][k]: the tangents of output leaf k along each element of input leaf j,
        # stacked on a leading axis
        columns = []
        for j, x in enumerate(in_leaves):
            v = _plain(x)
            if math.prod(_shape(v)) == 0:
                columns.append(None)  # filled in below, once the outputs are known
                continue
            # one-hot tangents (and 1j times them, of a complex input); the other inputs get
            # no tangent at all (0 * inf is nan)
            seeds = _seeds(v, holomorphic, 1j)
            columns.append(_map_linear(push, j, len(in_leaves), seeds, _largest(in_leaves)))
        if not evaluated:  # every input is empty: no jvp ran
            push([None] * len(in_leaves))
        out_leaves, out_tree, aux = evaluated
        if holomorphic:  # (a real output of a complex input has no complex derivative)
            _check_output_kind(out_leaves, holomorphic, who)
        else:
            _check_complex_blocks(in_leaves, out_leaves, out_tree, labels, who)
        columns = [col if col is not None else _no_rows(out_leaves) for col in columns]
        if not holomorphic:
            columns = [
                _of_complex_input(col, out_leaves) if _is_complex(x) else col
                for col, x in zip(columns, in_leaves)
            ]
        pieces = [[fnp.moveaxis(col[k], 0, -1) for col in columns] for k in range(len(out_leaves))]
        in_tree_of = _in_tree_builder(in_tree, single)
        jacobian = _fresh_tree(
            _assemble(pieces, out_leaves, in_leaves, in_tree_of, out_tree), in_leaves
        )
        return (jacobian, _fresh_tree(aux, _arrays_of(args, kwargs))) if has_aux else jacobian

    return _named(jacfwd_fun, fun, who)


def _of_complex_input(column, out_leaves):
    """A complex input's column of Jacobian blocks from its doubled rows: d/dx - i d/dy of
    each real output; an integer or boolean output keeps its zero tangent (one half)."""
    return [
        _combine(c, -1) if _np.dtype(_dtype(_plain(o))).kind == "f" else c[: len(c) // 2]
        for c, o in zip(column, out_leaves)
    ]


def _in_tree_builder(in_tree, single):
    def build(per_input):
        dyn = tree_unflatten(in_tree, per_input)
        return dyn[0] if single else dyn

    return build


def jacrev(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable[..., PyTree]:
    """The Jacobian of `fun` by reverse mode: one backward pass per output element, all at once.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays.
    argnums : int or tuple of int, default 0
        The argument(s) to differentiate with respect to.
    has_aux : bool, default False
        As `jacfwd`'s.
    holomorphic : bool, default False
        For a holomorphic function of complex inputs: the Jacobian is then f'(z).
    allow_int : bool, default False
        As for `grad`: only False.

    Returns
    -------
    callable
        A function returning the Jacobian, shaped `out.shape + x.shape`, as `jacfwd`'s.

    Notes
    -----
    The backward passes run together, as `vmap` over one-hot cotangents; cheaper than `jacfwd`
    when outputs are fewer than inputs.

    Without `holomorphic`, complex values follow `grad`'s convention, and `jacrev` equals
    `jacfwd`: of a complex input z = x + iy and a real output the Jacobian is df/dx - i df/dy;
    of a real input and a complex output f = u + iv it is du/dx + i dv/dx, from two pulls per
    output element, along e_k and -1j e_k (the pairing is <a, b> = Re sum(a b)); JAX's jacrev
    refuses complex outputs. A complex output of a complex input is refused, as in `jacfwd`.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.jacrev(lambda x: x[0] * x)(fnp.array([1.0, 2.0]))
    array([[2., 0.],
           [2., 1.]])
    >>> fgrad.jacrev(fnp.fft.rfft)(fnp.array([1.0, 2.0]))  # [[1, 1], [1, -1]], complex
    array([[ 1.+0.j,  1.+0.j],
           [ 1.+0.j, -1.+0.j]])
    """
    _check_callable(fun, "jacrev")
    _refuse_allow_int(allow_int, "jacrev")
    return _jacrev(fun, argnums, has_aux, holomorphic, "jacrev")


def _jacrev(fun, argnums, has_aux, holomorphic, who):
    """`jacrev`, its errors naming the transform the user called as `who` (`hessian`)."""

    def jacrev_fun(*args, **kwargs):
        in_leaves, in_tree, single, fun_of_dyn, labels = _jacobian_setup(
            fun, argnums, args, kwargs, who, holomorphic, real_inputs=False
        )
        out_leaves, out_tree, pull, aux = _vjp_flat(fun_of_dyn, in_leaves, in_tree, has_aux, who)
        _check_output_kind(out_leaves, holomorphic, who)
        if not holomorphic:
            _check_complex_blocks(in_leaves, out_leaves, out_tree, labels, who)
        pieces = []  # pieces[k][j]: the rows of output leaf k's Jacobian for input leaf j
        for k, o in enumerate(out_leaves):
            v = _plain(o)
            if math.prod(_shape(v)) == 0:
                rows = _no_rows(in_leaves)
            else:
                # one-hot cotangents, one row per element of output leaf k (and -1j times
                # them, of a complex output); the other outputs get no cotangent at all (not
                # a zero one: 0 * inf is nan)
                row_elements = max(_largest(in_leaves), _largest(out_leaves))
                seeds = _seeds(v, holomorphic, -1j)
                rows = _map_linear(pull, k, len(out_leaves), seeds, row_elements)
            if not holomorphic and _is_complex(v):
                rows = [_combine(r, 1) for r in rows]
            pieces.append(rows)
        in_tree_of = _in_tree_builder(in_tree, single)
        jacobian = _fresh_tree(
            _assemble(pieces, out_leaves, in_leaves, in_tree_of, out_tree), in_leaves
        )
        return (jacobian, _fresh_tree(aux, _arrays_of(args, kwargs))) if has_aux else jacobian

    return _named(jacrev_fun, fun, who)


def _check_output_kind(out, holomorphic, who):
    """holomorphic=True needs complex outputs (a real output of a complex input has no complex
    derivative). Integer and boolean outputs are refused as `grad` refuses them (as JAX's
    jacrev does): they have no cotangent."""
    for leaf in tree_flatten(out)[0]:
        kind = _np.dtype(_dtype(_plain(leaf))).kind
        if not holomorphic and kind not in "fc":
            raise TypeError(
                f"{who} requires real float outputs; the function returned "
                f"{_describe(leaf)}. Make sure the outputs are computed from the float "
                "inputs (jacfwd gives the zero Jacobian of an integer or boolean output)"
            )
        if holomorphic and kind != "c":
            raise TypeError(
                f"{who} with holomorphic=True requires complex outputs; the function returned "
                f"{_describe(leaf)}. Drop holomorphic=True for a real-valued function"
            )


def hessian(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable[..., PyTree]:
    """The Hessian of a scalar-valued `fun`, as `jacfwd(jacrev(fun))`: forward over reverse.

    Parameters
    ----------
    fun : callable
        A scalar-valued function of arrays.
    argnums : int or tuple of int, default 0
        The argument(s) to differentiate with respect to.
    has_aux : bool, default False
        `fun` returns `(out, aux)`; the Hessian function then returns `(hessian, aux)`.
    holomorphic : bool, default False
        For a holomorphic function of complex inputs, as in `jacfwd` and `jacrev`.

    Returns
    -------
    callable
        A function returning the matrix of second derivatives, shaped `x.shape + x.shape`.

    Notes
    -----
    A complex-valued function of real inputs has the Hessian of its real part plus i times
    that of its imaginary part. A real function of complex z = x + iy is refused: its second
    derivatives form the real Hessian in x and y, which one complex matrix of z's shape cannot
    hold (for |z|^2 it is 2 in x and in y, while d/dx - i d/dy of its gradient 2x - 2iy is 0).
    Pass x and y as float arguments: `hessian(lambda x, y: f(x + 1j * y), argnums=(0, 1))`.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.hessian(lambda x: x[0] ** 2 * x[1])(fnp.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    """
    _check_callable(fun, "hessian")
    inner = _jacrev(fun, argnums, has_aux, holomorphic, "hessian")
    outer = _jacfwd(inner, argnums, has_aux, holomorphic, "hessian", real_inputs=True)
    return _named(outer, fun, "hessian")


def stop_gradient(x: PyTree) -> PyTree:
    """`x` as a constant: no derivative flows through it, at any level of nesting.

    Parameters
    ----------
    x : array_like or pytree
        Any value, traced or not.

    Returns
    -------
    array or pytree
        The same value, no longer traced by any differentiating transform (a `vmap` keeps its
        rows).

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(lambda x: x * fgrad.stop_gradient(x))(3.0))
    3.0
    """
    return tree_map(constant_of, x)
