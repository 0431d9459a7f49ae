"""`vmap`: a function applied to every row of a batch at once (JAX's names and semantics).

The rows run together on a batching level (`fgrad.batching`): each primitive is applied once to
all of them by its batching rule. Python control flow that reads a batched value (`if x > 0`,
`float(x)`, a `while` on a value) goes on when every row reads the same value; when rows read
different values, they are grouped by the value read, the run goes on with the largest group
(see `fgrad.batching`, "Reading rows"), the function runs again on each other group, and the
rows are put back in place. This rests on the function being pure (it may run more than once,
on subsets of the rows); its cost is one run of the batch, then one run per other group.

Imports: `fgrad.core`, `fgrad.batching`, `fgrad.boundary`, `fgrad.tree_util`, `fgrad.numpy`.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING

import numpy as _np

from . import core, numpy as fnp
from .batching import BatchLevel, Diverged
from .boundary import api_boundary
from .core import Box, dtype_of, is_foreign_array, primal, shape_of
from .tree_util import (
    keystr,
    leaf_paths,
    leaves_per_child,
    registration_hint,
    tree_flatten,
    tree_leaves,
    tree_structure,
    tree_unflatten,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .tree_util import ArrayLike, PyTree

__all__ = ["map_rows", "vmap"]


def vmap(
    fun: Callable[..., Any],
    in_axes: PyTree = 0,
    out_axes: PyTree = 0,
    axis_size: int | None = None,
    *,
    axis_name: Any = None,
    spmd_axis_name: Any = None,
) -> Callable[..., Any]:
    """Batching: a function that applies `fun`, written for one example, to every row at once.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays, written for one row. It must be pure: when
        rows take different branches of Python control flow it runs again for each other group.
    in_axes : int, None, tuple or pytree, default 0
        Which axis of each argument holds the rows: an int (negative counts from the end), None
        for an argument that is the same for every row, or a tuple (a top-level list is read as
        one) or other pytree prefix of the arguments. Keyword arguments are mapped along axis 0.
    out_axes : int, None, tuple or pytree, default 0
        Where the rows go in the outputs, likewise; None only for an output that does not depend
        on the rows.
    axis_size : int, optional
        The number of rows, needed only when no argument is mapped.
    axis_name, spmd_axis_name : None
        JAX's names for collectives over the mapped axis (`psum`, `pmean`, `all_gather`) and
        for sharding it across devices, which fgrad does not have: anything but None is
        refused, with what to do instead.

    Returns
    -------
    callable
        The batched function. It composes with every transform: `vmap(grad(f))` gives
        per-example gradients, `grad(vmap(f))` differentiates through the batch.

    Notes
    -----
    Each primitive runs once on all rows (by its batching rule). Where code reads a batched
    value (`if x > 0`, `float(x)`) and the rows disagree, the run goes on with the largest group
    of rows that read the same value and `fun` runs again on each other group; JAX and
    torch.func raise there.

    Examples
    --------
    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.vmap(lambda x, y: fnp.dot(x, y), in_axes=(0, None))(np.eye(2), np.array([3.0, 4.0]))
    array([3., 4.])
    >>> fgrad.vmap(lambda x: x if x > 0 else -x)(np.array([-1.0, 2.0]))  # rows branch apart
    array([1., 2.])
    """
    if not callable(fun):
        raise TypeError(
            f"vmap expects a function as its first argument, got {fun!r} of type "
            f"{type(fun).__name__}; pass the function itself, e.g. vmap(f), not vmap(f(x))"
        )
    if returns_iterator(fun):  # (one look at the code's flags, here rather than per call)
        raise TypeError(
            f"vmap: {getattr(getattr(fun, 'func', fun), '__name__', '')} is a generator "
            "function (or an async one): calling it returns an iterator, whose body runs only "
            "when iterated, outside the transform; give a function that returns its result "
            "instead (for several values, return a list or tuple of what it yields)"
        )
    _refuse_axis_names(axis_name, spmd_axis_name)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # JAX reads a top-level list as a tuple
    # (first: a str or float is no axis, inside a tuple either, so wrapping it is no advice)
    _check_axes_spec(in_axes, "in_axes")
    if not (in_axes is None or isinstance(in_axes, (int, _np.integer, tuple))):
        raise TypeError(
            "vmap: in_axes must be an int, None, or a tuple (or list) with one entry per "
            f"positional argument; got {in_axes!r:.80}. The function's arguments are a tuple: "
            f"for a function of one argument, write in_axes=({in_axes!r:.60},)"
        )
    _check_axes_spec(out_axes, "out_axes")
    if axis_size is not None and (
        not isinstance(axis_size, (int, _np.integer))
        or isinstance(axis_size, bool)
        or axis_size < 0
    ):
        raise TypeError(f"vmap: axis_size must be a non-negative int or None, got {axis_size!r}")

    # in_axes as one axis (or None) per positional argument, when it is that simple
    per_argument = in_axes if isinstance(in_axes, tuple) else None
    if per_argument is not None and not all(
        a is None or isinstance(a, (int, _np.integer)) for a in per_argument
    ):
        per_argument = None  # a pytree prefix deeper than the arguments (a registered node too)

    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap: in_axes is a tuple of length {len(in_axes)}, but the function was "
                f"called with {len(args)} positional argument{'s' if len(args) != 1 else ''}; "
                "give one entry per argument (None for an argument that is not mapped)"
            )
        leaves, in_tree = tree_flatten((args, kwargs))
        args_tree, kwargs_tree = leaves_per_child(in_tree)
        if in_axes is None or isinstance(in_axes, (int, _np.integer)):
            dims = [in_axes] * args_tree
        elif per_argument is not None:
            dims = []
            for ax, n in zip(per_argument, leaves_per_child(in_tree, 0)):
                dims += [ax] * n
        else:
            dims = _dims_of_leaves(in_axes, args, "in_axes")
        dims += [0] * kwargs_tree  # keyword arguments are mapped along axis 0
        dims, size = _checked(leaves, dims, axis_size, lambda: _labels(args, kwargs))
        try:
            out_tree, results, _ = _batched_call(fun, in_tree, leaves, dims, size, out_axes)
        except FloatingPointError as error:
            _name_the_rows(error)
            raise
        return tree_unflatten(out_tree, results)

    name = getattr(fun, "__name__", type(fun).__name__)
    functools.update_wrapper(vmapped, fun)
    vmapped.__name__ = vmapped.__qualname__ = f"vmap({name})"
    del vmapped.__wrapped__
    vmapped.transformed = fun  # (for `jit`: see fgrad.api._named)
    return api_boundary(vmapped)


def map_rows(fun: Callable[..., Any], rows: ArrayLike) -> PyTree:
    """`vmap(fun)(rows)` for one array of rows along axis 0, without vmap's checks of what a
    user passes (for Jacobians: `fgrad.api` gives it one-hot seeds)."""
    in_tree = tree_flatten(((rows,), {}))[1]
    out_tree, results, _ = _batched_call(fun, in_tree, [rows], [0], len(rows), 0)
    return tree_unflatten(out_tree, results)


# the code flags of a function whose call returns an iterator (or awaitable) of its body
_ITERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def returns_iterator(fun) -> bool:
    """Whether `fun` is a generator function, or an async one: its body would run only when
    the iterator its call returns is iterated, outside any transform (`vmap` and `fgrad.api`'s
    transforms refuse it where it is given)."""
    code = getattr(fun, "__code__", None)  # a function's or a method's: its flags at once
    if code is not None:
        return bool(code.co_flags & _ITERATOR_FLAGS)
    # (a partial, unwrapped by inspect; another callable: False)
    return (
        inspect.isgeneratorfunction(fun)
        or inspect.iscoroutinefunction(fun)
        or inspect.isasyncgenfunction(fun)
    )


def _refuse_axis_names(axis_name, spmd_axis_name):
    """JAX's `axis_name` names the mapped axis for collectives inside the function, and
    `spmd_axis_name` shards it across devices: fgrad has neither, so a name would mean
    nothing; refused rather than ignored."""
    if axis_name is not None:
        raise TypeError(
            f"vmap: axis_name={axis_name!r} names the mapped axis for collectives (psum, "
            "pmean, all_gather), which fgrad does not have; drop it, and compute a reduction "
            "over the rows outside vmap (e.g. fnp.sum(vmap(f)(xs), axis=0)), or pass what "
            "every row needs as an argument that is not mapped (in_axes=None)"
        )
    if spmd_axis_name is not None:
        raise TypeError(
            f"vmap: spmd_axis_name={spmd_axis_name!r} shards the mapped axis across devices; "
            "fgrad runs on NumPy in one process, so there is nothing to shard: drop it"
        )


# --- the axes: checking them and matching them to the leaves ------------------------------------


def _check_axes_spec(axes, what):
    for leaf in tree_leaves(axes, is_leaf=lambda x: x is None):
        if leaf is not None and (
            not isinstance(leaf, (int, _np.integer)) or isinstance(leaf, bool)
        ):
            instead = (
                f"{what}={int(leaf)}"
                if isinstance(leaf, str) and leaf.lstrip("-").isdigit()
                else f"{what}=0 (the first axis) or {what}=-1 (the last)"
            )
            raise TypeError(
                f"vmap: {what} must be an int, None, or a pytree of them; it holds {leaf!r} of "
                f"type {type(leaf).__name__}. An axis is an int (negative counts from the end) "
                f"or None (not mapped): write e.g. {instead}"
            )


def _dims_of_leaves(axes, tree, what):
    """One axis (or None) per leaf of `tree` (the arguments, for `what` "in_axes", or the
    outputs), from `axes`, an int or None or a pytree prefix of `tree`."""
    if axes is None or isinstance(axes, (int, _np.integer)):
        return [axes] * len(tree_leaves(tree))
    axes_leaves, axes_def = tree_flatten(axes, is_leaf=lambda x: x is None)
    try:
        subtrees = axes_def.flatten_up_to(tree)
    except ValueError as e:
        raise ValueError(_axes_mismatch(axes, tree, what) or f"vmap: {what}: {e}") from None
    dims = []
    for ax, sub in zip(axes_leaves, subtrees):
        dims.extend([ax] * len(tree_leaves(sub)))
    return dims


def _axes_mismatch(axes, tree, what, path=()):
    """The error for `axes` that are not a pytree prefix of `tree`: the first place where
    they part, in the user's terms (`in_axes[0]` and argument 0, shapes and dtypes)."""
    if axes is None or isinstance(axes, (int, _np.integer)):
        return ""
    axes_node = tree_structure(axes, is_leaf=lambda x: x is None or x is not axes)
    tree_node = tree_structure(tree, is_leaf=lambda x: x is not tree)  # the root alone
    if axes_node == tree_node:
        for a, t, key in zip(
            axes_node.flatten_up_to(axes), tree_node.flatten_up_to(tree), leaf_paths(tree_node)
        ):
            found = _axes_mismatch(a, t, what, path + key)
            if found:
                return found
        return ""
    name = _value_name(what, path)
    values = "arguments" if what == "in_axes" else "outputs"
    return (
        f"vmap: {what} does not match {name}: {what}{keystr(path)} is {axes!r:.80} (a "
        f"{type(axes).__name__}), but {name} is {_value_text(tree, tree_node, what)}. Write "
        f"{what} with the containers (and dict keys) of the {values}, down to where one axis "
        "(an int) or None applies to everything below"
    )


def _value_name(what, path):
    """What a path of in_axes (or out_axes) points at: "argument 1 at ['w']", "the output"."""
    if what == "in_axes":
        return "the arguments" if not path else _at(f"argument {path[0].idx}", path[1:])
    return _at("the output", path)


def _value_text(x, root, what):
    """A value as an error names it: an array by its shape and dtype, a container by its
    type and structure."""
    if root.num_nodes == 1 and root.num_leaves == 1:
        try:
            shape, dtype = shape_of(x), dtype_of(x)
        except TypeError:
            return f"a value of type {type(x).__name__}"
        per_row = " per row" if what == "out_axes" else ""
        return f"an array of shape {shape}{per_row} and dtype {dtype}"
    structure = repr(root).removeprefix("PyTreeDef(").removesuffix(")")
    return f"a {type(x).__name__} {structure}"


def _labels(args, kwargs):
    """How errors name each leaf of the arguments: 'argument 0', "argument 1 at ['w'][0]"."""
    labels = []
    for i, a in enumerate(args):
        labels.extend(_at(f"argument {i}", path) for path in leaf_paths(tree_structure(a)))
    for key in sorted(kwargs):
        labels.extend(
            _at(f"keyword argument {key!r}", path)
            for path in leaf_paths(tree_structure(kwargs[key]))
        )
    return labels


def _at(name, path):
    return f"{name} at {keystr(path)}" if path else name


def _checked(leaves, dims, axis_size, labels):
    """The batch axes made non-negative, and the number of rows; an error naming the argument
    (`labels()` names the leaves, called only for an error) if an axis or a size is wrong."""
    normalized, size = [], None
    for x, d in zip(leaves, dims):
        if d is not None:
            shape = shape_of(x)
            if not -len(shape) <= d < len(shape):
                label = labels()[len(normalized)]
                _normalized_in_dim(x, d, label)  # raises, naming it
            d %= len(shape)
            if size is None:
                size = shape[d]
            elif shape[d] != size:
                _batch_size(leaves, normalized + [d], labels(), axis_size)  # raises, naming them
        normalized.append(d)
    if size is None or (axis_size is not None and axis_size != size):
        size = _batch_size(leaves, normalized, labels(), axis_size)
    return normalized, size


def _normalized_in_dim(x, d, label):
    if d is None:
        return None
    shape = shape_of(x)
    nd = len(shape)
    if not -nd <= d < nd:
        if isinstance(x, (str, bytes)) or not _is_numeric(x):
            raise TypeError(
                f"vmap: in_axes maps {label} along axis {d}, but it is a value of type "
                f"{type(x).__name__}, not an array; use in_axes=None for it (the same for "
                f"every row), or close over it in the function{registration_hint(x)}"
            )
        what = f"an array with shape {shape} and dtype {dtype_of(x)}"
        if nd == 0:
            raise ValueError(
                f"vmap: in_axes maps {label} along axis {d}, but it is {what} (no axes); "
                "pass an array with a batch axis, or use in_axes=None for it"
            )
        raise ValueError(
            f"vmap: in_axes maps {label} along axis {d}, which is out of range for {what} "
            f"(valid axes are {-nd} to {nd - 1})"
        )
    return d % nd


def _is_numeric(x):
    try:
        return dtype_of(x).kind in "biufc"
    except TypeError:  # (NumPy could not read it as an array)
        return False


def _batch_size(leaves, dims, labels, axis_size):
    sizes = {
        f"{label} (shape {shape_of(x)}, dtype {dtype_of(x)}, axis {d})": shape_of(x)[d]
        for x, d, label in zip(leaves, dims, labels)
        if d is not None
    }
    if not sizes:
        if axis_size is None:
            raise ValueError(
                "vmap: no argument is mapped (in_axes is None for all of them), so the number "
                "of rows is unknown; pass axis_size=n"
            )
        return int(axis_size)
    distinct = set(sizes.values())
    if axis_size is not None:
        distinct.add(int(axis_size))
    if len(distinct) > 1:
        listed = ", ".join(f"{label} has {n}" for label, n in sizes.items())
        extra = f", and axis_size is {axis_size}" if axis_size is not None else ""
        raise ValueError(
            f"vmap: the mapped axes have different sizes: {listed}{extra}. Every mapped axis "
            "must have the same number of rows"
        )
    return distinct.pop()


# --- running the batch --------------------------------------------------------------------------


def _batched_call(fun, in_tree, leaves, dims, size, out_axes, level=None):
    """`fun` on every row (on `level`, a new `BatchLevel` unless given). Returns the output's
    structure, its leaves with the rows along `out_axes`, and those axes."""
    if size == 0:
        return _no_rows(fun, in_tree, leaves, dims, out_axes)
    level = BatchLevel(size) if level is None else level
    try:
        with level:
            boxes = [x if d is None else Box(x, level, d) for x, d in zip(leaves, dims)]
            args, kwargs = tree_unflatten(in_tree, boxes)
            out = fun(*args, **kwargs)
            out_leaves, out_tree = tree_flatten(out)
            if out_axes is None or isinstance(out_axes, (int, _np.integer)):
                out_dims = [out_axes] * len(out_leaves)
            else:
                out_dims = _dims_of_leaves(out_axes, out, "out_axes")
            results = [
                _placed(o, level, d, size, _OutputName(k, out_tree))
                for k, (o, d) in enumerate(zip(out_leaves, out_dims))
            ]
    except Diverged as signal:  # raised where a watch is set
        if signal.level is not level:
            raise  # an outer vmap's rows disagree: that vmap splits its batch
        return _split_call(fun, in_tree, leaves, dims, out_axes, signal.groups)
    except Exception:
        if not level.pending:
            raise
        # The run went on for some rows on another group's path and failed: perhaps because
        # of those rows. Every group runs on its own (a real error is raised there again).
        groups = [level.active, *level.pending]
        return _split_call(fun, in_tree, leaves, dims, out_axes, groups)
    if level.pending:  # this run is right for the active rows; the others run again
        done = (
            out_tree,
            [_rows_of(r, level.active, d) for r, d in zip(results, out_dims)],
            out_dims,
        )
        if any(map(_differentiated, results)):
            # An outer derivative traced this run, the other rows' wrong paths too (sqrt of the
            # negatives the other branch avoids): a backward pass through it would multiply
            # their zero cotangents by nan. The active rows run again on their own, and this
            # run's results are left unused, so no derivative reaches it.
            done = None
        groups = [level.active, *level.pending]
        return _split_call(fun, in_tree, leaves, dims, out_axes, groups, done)
    return out_tree, _own_arrays(results, leaves), out_dims


def _differentiated(x):
    """Whether a level that differentiates (not an outer vmap's, not jit's) holds x."""
    while type(x) is Box:
        if not (x.level.batches or x.level.stages):
            return True
        x = x.value
    return False


def _rows_of(result, rows, axis):
    """The rows `rows` of an output (all of an output that does not depend on them)."""
    return result if axis is None else _take(result, rows, axis)


def _placed(o, level, out_dim, size, where):
    """Output leaf `o` (named `where` by errors) with its rows along `out_dim`."""
    while type(o) is Box and o.level is not level and not o.level.live:
        o = o.value  # a box of an inner transform that has exited is its value
    if type(o) is Box and o.level is level:
        value, dim = o.value, o.aux
        if out_dim is None:
            raise ValueError(
                f"vmap: out_axes is None for {where}, but it depends on the mapped rows "
                f"(it has shape {shape_of(o)} per row); give it an axis in out_axes"
            )
        axis = _out_axis(out_dim, len(shape_of(value)), where)
        return value if axis == dim else fnp.moveaxis(value, dim, axis)
    if out_dim is None:
        return o
    if (
        not isinstance(o, (int, float, complex, _np.ndarray, _np.generic))
        and type(o) is not Box
        and not is_foreign_array(o)  # (a Dask array the same for every row: broadcast, lazily)
    ):
        if inspect.isgenerator(o) or inspect.iscoroutine(o):  # (a callable's __call__ yields)
            raise TypeError(
                f"vmap: the function returned a generator (of {o.__qualname__}) as {where}, whose "
                "body runs only when iterated, outside the transform; give a function that "
                "returns its result instead (for several values, return a list or tuple of "
                "what it yields)"
            )
        raise TypeError(
            f"vmap: the function returned a value of type {type(o).__name__} as {where}; vmap "
            "stacks numbers and numeric arrays, one per row, so return those (use out_axes=None "
            "for an array that is the same for every row)"
        )
    shape = shape_of(o)
    axis = _out_axis(out_dim, len(shape) + 1, where)
    rows = shape[:axis] + (size,) + shape[axis:]
    # a copy, not a broadcast view: an output is an array of its own, which its user may write
    if type(o) is _np.ndarray or isinstance(o, _np.generic):  # a constant: NumPy's own
        return _np.broadcast_to(_np.expand_dims(o, axis), rows).copy()
    return fnp.copy(fnp.broadcast_to(fnp.expand_dims(o, axis), rows))


class _OutputName:
    """How an error names leaf k of an output of structure `tree`: by its key path, as the
    user wrote it ("output ['b']", "output [1]"), or "the output" for a single array
    (written only for an error)."""

    __slots__ = ("k", "tree")

    def __init__(self, k, tree):
        self.k, self.tree = k, tree

    def __str__(self):
        path = leaf_paths(self.tree)[self.k]
        return f"output {keystr(path)}" if path else "the output"


def _own_arrays(results, inputs):
    """Outputs as arrays of their own, as the loop over rows would give: one array returned
    twice (a function returning x twice), an input or a view of one (`r.astype(float64)` of
    float64 rows is the rows themselves: writing the output wrote the user's input), and a
    read-only view (`broadcast_to`) are copied."""
    seen = set()
    own = []
    for r in results:
        if id(r) in seen or (
            isinstance(r, _np.ndarray)  # (a subclass too: an np.memmap is the user's file)
            and (
                not r.flags.writeable
                or any(isinstance(x, _np.ndarray) and _np.may_share_memory(r, x) for x in inputs)
            )
        ):
            r = fnp.copy(r)
        own.append(r)
        seen.add(id(r))
    return own


def _out_axis(d, nd, where):
    if 0 <= d < nd:
        return d
    if not -nd <= d < nd:
        raise ValueError(
            f"vmap: out_axes {d} is out of range for {where}, which has {nd} axes with the "
            f"rows (valid axes are {-nd} to {nd - 1})"
        )
    return d % nd


def _split_call(fun, in_tree, leaves, dims, out_axes, groups, done=None):
    """Run each group of rows on its own (but the first, if `done` gives its output's structure
    and leaves already), then put the rows back in their places."""
    parts = []
    for i, rows in enumerate(groups):
        if i == 0 and done is not None:
            parts.append(done)
            continue
        picked = [x if d is None else _take(x, rows, d) for x, d in zip(leaves, dims)]
        try:
            parts.append(_batched_call(fun, in_tree, picked, dims, len(rows), out_axes))
        except FloatingPointError as error:
            if core.watch is not None:  # debug_nans: its index counts the rows of this run
                inner = getattr(error, "_vmap_rows", None)
                error._vmap_rows = rows if inner is None else rows[inner]
            raise
    out_tree, _, out_dims = parts[0]
    for tree, _, _ in parts[1:]:
        if tree != out_tree:
            raise ValueError(
                "vmap: rows that took different branches returned outputs of different "
                f"structures ({out_tree} and {tree}); return the same structure from every branch"
            )
    inverse = _np.argsort(_np.concatenate(groups), kind="stable")
    results = []
    for k, d in enumerate(out_dims):
        pieces = [p[1][k] for p in parts]
        if d is None:
            first = _np.asarray(primal(pieces[0]))
            if any(not _np.array_equal(first, _np.asarray(primal(p))) for p in pieces[1:]):
                raise ValueError(
                    f"vmap: out_axes is None for {_OutputName(k, out_tree)}, but it depends on "
                    "the mapped rows (rows that read different values ran apart and returned "
                    "different values); give it an axis in out_axes"
                )
            results.append(pieces[0])
            continue
        row_shapes = [_without(shape_of(p), d % len(shape_of(p))) for p in pieces]
        if len(set(row_shapes)) > 1:
            raise ValueError(
                "vmap: rows that read different values ran apart (took different branches) and "
                f"returned {_OutputName(k, out_tree)} with different shapes per row "
                f"({_rows_described(pieces, row_shapes)}); vmap stacks the rows' "
                "outputs, so each output needs one shape in every row"
            )
        if all(type(p) is _np.ndarray for p in pieces):  # plain rows: NumPy's own, faster
            results.append(_np.concatenate(pieces, axis=d).take(inverse, axis=d))
        else:
            results.append(fnp.take(fnp.concatenate(pieces, axis=d), inverse, axis=d))
    # (an output the same for every row is the first group's, which may be an input)
    return out_tree, _own_arrays(results, leaves), out_dims


def _rows_described(pieces, row_shapes):
    """The shapes and dtypes the rows gave, each once: "shape (1,) float64, shape (2,) ..."."""
    kinds = sorted({(s, str(dtype_of(p))) for p, s in zip(pieces, row_shapes)})
    return ", ".join(f"shape {s} {dtype}" for s, dtype in kinds)


def _name_the_rows(error):
    """Add to `debug_nans`'s error, raised in a run of some rows of the batch alone (rows that
    read different values run apart: `_split_call`), which of the caller's rows they are: the
    index it gives counts the rows of that run, not the caller's."""
    rows = getattr(error, "_vmap_rows", None)
    if rows is None:
        return
    del error._vmap_rows  # (an outer vmap's rows are another axis)
    rows = [int(r) for r in rows]
    if len(rows) == 1:
        which = f"row {rows[0]} of its input alone: at the index above, position 0 along the "
        which += f"batch axis is row {rows[0]}"
    else:
        which = f"rows {rows} of its input alone: at the index above, position k along the "
        which += "batch axis is the k-th of them"
    note = f"  vmap ran {which} (rows that read different values run apart)."
    error.args = (f"{error.args[0]}\n{note}", *error.args[1:]) if error.args else (note,)


def _without(shape, axis):
    return shape[:axis] + shape[axis + 1 :]


def _identities(shape, dtype):
    """Identity matrices in the last two axes where they are square, else ones."""
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return _np.broadcast_to(_np.eye(shape[-1], dtype=dtype), shape).copy()
    return _np.ones(shape, dtype=dtype)


def _varied(shape, dtype):
    """Entries in [0.5, 1.5) from a fixed seed (whole numbers 1 to 3 for an integer dtype):
    a square matrix made of them is invertible, where zeros and identities reshaped are not
    (`tensorinv`, `inv` of a reshaped row)."""
    dtype = _np.dtype(dtype)
    rng = _np.random.default_rng(0)  # (its own generator: NumPy's global state is the user's)
    if dtype.kind in "iu":
        return rng.integers(1, 4, shape).astype(dtype)
    if dtype.kind == "b":
        return _np.ones(shape, dtype=dtype)
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def _take(x, rows, axis):
    """The rows of x at `rows` along `axis`: NumPy's own for a plain array (a constant at
    every level), fgrad's for a traced one."""
    return x.take(rows, axis=axis) if type(x) is _np.ndarray else fnp.take(x, rows, axis=axis)


def _no_rows(fun, in_tree, leaves, dims, out_axes):
    """A batch of no rows: one made-up row gives the outputs' structure, shapes and dtypes.
    A row of zeros, or where the function fails on it (`inv`, `cholesky`), of identity
    matrices (ones for other shapes), or where it fails on those too (`inv` of a reshaped row,
    as in `tensorinv`), of varied values; NumPy's warnings about the made-up row are not the
    caller's, and stay off.

    A function that reads the made-up row's values (`if`, `while`) computes on values nobody
    passed: a branch that gives rows of the same shape either way is fine (the shapes are all
    that is kept), but an error it raises there (a check that the values are valid) or a loop
    that never ends there (it is stopped after `_READS_ALLOWED` reads) is not about the
    caller's data, and becomes vmap's error saying so when every made-up row fails."""
    failed = None
    read = False
    for fill in (_np.zeros, _identities, _varied):
        one = [
            x
            if d is None
            else fill(shape_of(x)[:d] + (1,) + shape_of(x)[d + 1 :], dtype=dtype_of(x))
            for x, d in zip(leaves, dims)
        ]
        level = _MadeUpRowLevel()
        try:
            with _np.errstate(all="ignore"):
                out_tree, results, out_dims = _batched_call(
                    fun, in_tree, one, dims, 1, out_axes, level
                )
            break
        except (Exception, _ReadTooOften) as error:  # (the first error is raised if both fail)
            failed = failed or error
            read = read or level.reads > 0
    else:
        if read:
            raise ValueError(_no_rows_message(fun, failed)) from failed
        raise failed
    empty = _np.zeros(0, dtype=_np.intp)
    results = [r if d is None else fnp.take(r, empty, axis=d) for r, d in zip(results, out_dims)]
    return out_tree, results, out_dims


# How often the function may read a made-up row's values: a loop on them that ends for real
# data may never end for zeros (`while sum(r) < 10: r = 2 * r`). 10_000 reads take ~0.1 s.
_READS_ALLOWED = 10_000


class _ReadTooOften(BaseException):
    """The function read the made-up row's values more than `_READS_ALLOWED` times. A
    BaseException, so that a user's `except Exception` inside the loop does not swallow it."""


class _MadeUpRowLevel(BatchLevel):
    """The batch of one made-up row that `_no_rows` runs: a `BatchLevel` that counts the
    reads of its values and stops the run after `_READS_ALLOWED` of them."""

    __slots__ = ("reads",)

    def __init__(self):
        super().__init__(1)
        self.reads = 0

    def read(self, box):
        self.reads += 1
        if self.reads > _READS_ALLOWED:
            raise _ReadTooOften
        return super().read(box)


def _no_rows_message(fun, error):
    name = getattr(fun, "__name__", type(fun).__name__)
    if isinstance(error, _ReadTooOften):
        what = (
            f"kept reading its values ({_READS_ALLOWED} reads: a loop on the values that does "
            "not end for that row?)"
        )
    else:
        what = f"read its values and then raised {type(error).__name__}: {error}"
    return (
        f"vmap over 0 rows: to learn the shapes of the outputs of {name}, vmap ran it on a "
        "made-up row (zeros, then identity matrices or ones, then varied values), which "
        f"{what}. None of this is about data you passed, but vmap cannot learn the output's "
        "shapes of a function that branches on its values without running it on some row: "
        "check for an empty batch before calling vmap (if len(x) == 0: ...) and build the "
        "empty result yourself"
    )
