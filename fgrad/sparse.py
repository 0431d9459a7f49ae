"""Sparse Jacobians and Hessians: find the pattern, colour it, and compute it in a few passes.

`jacobian_sparsity(fun)(x)` runs `fun` once under a `fgrad.sparsity.SparsityLevel` and returns
which outputs depend on which inputs, as a boolean `scipy.sparse.csr_array` of shape (outputs,
inputs). `sparse_jacobian(fun)(x)` colours that pattern (`fgrad.coloring`) so that columns
sharing no row are pushed forward together (or rows sharing no column pulled back together),
runs one batched pass over the colours' seeds (`vmap` of `jvp` or of a `vjp`'s pullback,
recorded by `fgrad.jit` so later calls replay it), and reads each nonzero out of the compressed
result. `sparse_hessian` does the same for a scalar function's Hessian, with a star colouring
when the pattern allows one.

A first call of `sparse_jacobian` that can (float64 values, a function of elementwise
operations, moves and sums: `fgrad.accumulation`) accumulates the Jacobian in one run instead, and
the colouring and the recorded pass are made at the second call, from its pattern. (Its
entries are `jacfwd`'s; a later call's, read from the pass, agree to rounding.)

Inside another transform (`jit`, `grad`, `jvp`, `jet`) the two derivatives are
`fgrad.scipy.sparse` arrays whose data are traced; under `vmap` they are refused (a batch of
sparse arrays is no array: differentiate the batched function instead).

Inputs and outputs that are pytrees are flattened (leaves in `tree_flatten` order, each in C
order) and concatenated: entry (i, j) is the derivative of flat output i in flat input j.

The pattern is found once per signature of the arguments differentiated (their shapes and
dtypes) and values of the others, and kept with its colouring: a loop pays only the passes.
As for `jit`, `fun` must be pure: what it reads from outside its arguments (a global, a
closure) is taken to stay the same. A function that reads values while the
pattern is found (a Python branch on a value, a `where` mask, an index from `argsort`) may
have another pattern elsewhere: each call then finds the pattern at its own input again, and
keeps one colouring while the patterns stay inside the one it was made for. Under `jit`, the
record of such a call guards its inputs, so that it replays at those inputs only: another
input is recorded again, its pattern found again (past jit's `max_paths`, the function runs
eagerly, with jit's warning).

Imports: `fgrad.accumulation`, `fgrad.api`, `fgrad.boundary`, `fgrad.coloring`, `fgrad.core`,
`fgrad.jitting`, `fgrad.numpy`, `fgrad.protocols`, `fgrad.sparsity`, `fgrad.tree_util`,
`fgrad.vmapping`.
SciPy is imported when a function made here is first called.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from . import coloring, numpy as fnp
from .accumulation import AccumulationLevel, NoAccumulation
from .api import (
    _check_argnums_range,
    _check_callable,
    _check_outputs,
    _normalize_argnums,
    grad,
    jvp,
    vjp,
)
from .boundary import api_boundary
from .core import Box, dtype_of, holds_batch, innermost, primal, shape_of
from .jitting import jit
from .protocols import is_foreign_array
from .sparsity import SparsityLevel, empty_pattern, sparse_module
from .tree_util import tree_flatten, tree_unflatten
from .vmapping import vmap

__all__ = ["hessian_sparsity", "jacobian_sparsity", "sparse_hessian", "sparse_jacobian"]

_MODES = ("auto", "fwd", "rev")


def _named(wrapper, fun, transform):
    """`wrapper`, a transform of `fun`, named after both, behind the API boundary (errors
    leave without fgrad's frames)."""
    name = getattr(fun, "__name__", type(fun).__name__)
    wrapper.__name__ = wrapper.__qualname__ = f"{transform}({name})"
    wrapper.transformed = fun  # (for `jit`: see fgrad.api._named)
    return api_boundary(wrapper)


def _argnums(argnums, n_args: int, who: str) -> tuple[int, ...]:
    """`argnums` as non-negative positions, read as `grad` reads them (an int, a NumPy int, a
    tuple or list of them), each in range and named once: an argument named twice would be
    written twice into the call, and only its second copy's leaves would be inputs (the first
    block of columns all zeros)."""
    nums, _ = _normalize_argnums(argnums, who)
    return _check_argnums_range(nums, n_args, who)


def _keywords_last(fun):
    """`fun` taking its keyword arguments as one more positional argument, a dict, after the
    others: a call's keyword arguments are then an argument not differentiated like any other
    (part of a plan's key, constants or inputs of its recorded pass)."""

    def with_keywords(*args):
        return fun(*args[:-1], **args[-1])

    return with_keywords


def _inputs(args, nums, who):
    """The leaves differentiated (plain values), their tree and shapes."""
    leaves, tree = tree_flatten(tuple(args[i] for i in nums))
    values = []
    for k, leaf in enumerate(leaves):
        v = innermost(leaf)  # the value under an outer transform's box, read without a guard
        if is_foreign_array(v):
            raise TypeError(
                f"{who}: input {k} (of the arguments at argnums {nums}, flattened) is a "
                f"{type(v).__module__}.{type(v).__name__} with shape {tuple(shape_of(v))} and "
                f"dtype {dtype_of(v)}; sparse derivatives are computed on NumPy arrays: pass "
                "np.asarray(x) (for a Dask array, x.compute()) if it fits in memory"
            )
        dtype = dtype_of(v)
        if dtype.kind != "f":
            # (a complex input's imaginary part is a second real input: casting it to float
            # would drop it and give another function's derivative)
            instead = (
                "pass its real and imaginary parts as two real arguments, e.g. "
                f"{who}(lambda re, im: f(re + 1j * im), argnums=(0, 1))(x.real, x.imag) "
                "(columns: the real parts' derivatives, then the imaginary parts')"
                if dtype.kind == "c"
                else "pass it as floats (e.g. x.astype(float))"
            )
            raise TypeError(
                f"{who}: input {k} (of the arguments at argnums {nums}, flattened) has shape "
                f"{tuple(shape_of(v))} and dtype {dtype}; sparse derivatives need real float "
                f"inputs: {instead}"
            )
        values.append(_np.asarray(v))
    return values, tree


def _with_inputs(args, nums, tree, leaves):
    full = list(args)
    for i, a in zip(nums, tree_unflatten(tree, leaves)):
        full[i] = a
    return full


def _is_number_leaf(v) -> bool:
    """Whether a leaf of an argument not differentiated is a float or complex number (a
    Python or NumPy scalar, or an array of one element): such a leaf (a time, a step, a
    parameter) takes part in the detection as a value that may change (`_detect`). Larger
    arrays (a matrix, a mask) are constants of the plan: their values are part of its key,
    and their zeros count."""
    if type(v) is float or type(v) is complex:
        return True
    return isinstance(v, (_np.ndarray, _np.generic)) and v.dtype.kind in "fc" and v.size == 1


def _is_variable_leaf(v) -> bool:
    """A leaf of an argument not differentiated that may change from call to call: a float
    number (`_is_number_leaf`), or a value an outer transform traces (its derivative or its
    record is being taken, so its value is not a constant of the plan)."""
    return type(v) is Box or _is_number_leaf(v)


def _run_on(level, fun, args, nums, values, tree, who):
    """fun's flat outputs, run on `level` (detection's or accumulation's): the inputs
    differentiated as its inputs, numbered one after another, and the float numbers among
    the other arguments as values that may change (`_detect`). An output that is not a
    number or a numeric array is refused in `who`'s words, before its dtype is read (NumPy
    reads a string such as "float64" as a dtype's name)."""
    boxes, offset = [], 0
    for v in values:
        boxes.append(level.new_input(v, offset))
        offset += v.size
    full = _with_inputs(args, nums, tree, boxes)
    for i, a in enumerate(full):
        if i not in nums:
            leaves, arg_tree = tree_flatten(a)
            leaves = [
                level.new_variable(innermost(v)) if _is_variable_leaf(v) else v for v in leaves
            ]
            full[i] = tree_unflatten(arg_tree, leaves)
    out = tree_flatten(fun(*full))[0]
    _check_outputs(out, who)
    return out


def _outruns_inputs(out_dtype, values) -> bool:
    """Whether an output of `out_dtype` holds more than the inputs `values` (all real floats):
    a complex output, or a float64 one of float32 inputs. Pulling back cotangents then cannot
    give jacfwd's entries: a cotangent pulled into a real input keeps only the real part, and
    is rounded to the input's precision (a "rev" pass is refused or avoided for it)."""
    if out_dtype.kind not in "fc":
        return False
    in_dtype = _np.result_type(*values) if values else _np.dtype(_np.float64)
    return _np.result_type(out_dtype, in_dtype) != in_dtype


def _detect(fun, args, nums, values, tree, who):
    """(pattern, reads, fwd_only): the pattern of fun's flat outputs in its flat inputs,
    whether the traced code read values (then the pattern may hold on this path only), and
    whether an output holds more than the inputs (`_outruns_inputs`: only pushes forward give
    its Jacobian).

    The float numbers among the arguments not differentiated (`_is_number_leaf`) are boxes
    too, whose elements depend on one more input, column n, which stands for "a value that
    may change from call to call": what is computed from them is not a constant (its zeros do
    not count, `sparsity._may_be_nonzero`), a read of them counts as a read, and so they need
    not be part of the cache's key (a time that changes at every call does not make a plan
    per call). Column n is dropped at the end.
    """
    sp = sparse_module()
    n = sum(v.size for v in values)
    with SparsityLevel(n + 1) as level:
        out = _run_on(level, fun, args, nums, values, tree, who)
        pats = [level.pattern_of(o) for o in out]
    if len(pats) == 1:
        pattern = pats[0]
    else:
        pattern = sp.vstack(pats, format="csr") if pats else empty_pattern(0, n + 1)
    if pattern.nnz and pattern.indices.max() == n:  # column n, the values that may change
        pattern = sp.csr_array(pattern[:, :n])
    else:  # (a slice of no column costs more than the same arrays with one column fewer)
        pattern = sp.csr_array(
            (pattern.data, pattern.indices, pattern.indptr), (len(pattern.indptr) - 1, n)
        )
    pattern.sum_duplicates()
    pattern.sort_indices()
    return pattern, level.reads > 0, any(_outruns_inputs(dtype_of(o), values) for o in out)


def _guard_what_was_read(args):
    """The pattern was found from values the function read (a branch, an index from
    `argmax`, a `sort`): it holds at these inputs only, and an eager call finds it again at
    each input. Under `jit` the record must not replay it at other inputs (the pass would fill
    this pattern with another input's Jacobian): reading the traced arguments makes the record
    guard them, so that another input records its own path, with its own pattern (past jit's
    `max_paths`, the function runs eagerly, with jit's warning). Under the other transforms a
    read only unwraps the value."""
    for leaf in tree_flatten(args)[0]:
        if type(leaf) is Box:
            primal(leaf)


def _accumulate(fun, args, nums, values, tree, who):
    """(Jacobian, reads) of fun's flat outputs in its flat inputs by sparse forward
    accumulation (`fgrad.accumulation`): one run, for a first call, where finding the pattern,
    colouring it and running the passes would take three. None where it does not apply: an
    argument traced by an outer transform, inputs or outputs that are not float64, a
    primitive without an accumulation rule. The float numbers among the arguments not
    differentiated are values that may change, as in `_detect`."""
    if any(v.dtype != _np.float64 for v in values) or any(
        type(leaf) is Box for a in args for leaf in tree_flatten(a)[0]
    ):
        return None
    sp = sparse_module()
    n = sum(v.size for v in values)
    try:
        with AccumulationLevel(n + 1) as level:
            out = _run_on(level, fun, args, nums, values, tree, who)
            if any(dtype_of(o) != _np.float64 for o in out):
                return None
            parts = [level.jacobian_of(o) for o in out]
    except NoAccumulation:
        return None
    if not parts:  # no output: no rows (SciPy stacks no blocks)
        return sp.csr_array((0, n), dtype=_np.float64), level.reads > 0
    jac = parts[0] if len(parts) == 1 else sp.csr_array(sp.vstack(parts, format="csr"))
    return jac, level.reads > 0


def _pattern_of(jac):
    """The pattern of a Jacobian found by `_accumulate` (its stored entries, zeros included)."""
    sp = sparse_module()
    return sp.csr_array(
        (_np.ones(jac.nnz, dtype=bool), jac.indices.copy(), jac.indptr.copy()), shape=jac.shape
    )


class _Pending:
    """The pattern of a first call that accumulated its Jacobian: the plan (its colouring and
    recorded pass) is made at the next call, which needs it."""

    __slots__ = ("pattern",)

    def __init__(self, pattern):
        self.pattern = pattern


def jacobian_sparsity(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable:
    """The pattern of `fun`'s Jacobian: a boolean `scipy.sparse.csr_array` of shape (outputs,
    inputs), flattened in C order (pytrees: leaves concatenated in `tree_flatten` order).

    It holds at every input, except where `fun` reads values (a Python branch, an index
    computed from the input): there it is the pattern of the path taken at the input given.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: x[1:] * x[:-1]
    >>> fgrad.jacobian_sparsity(f)(np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """

    _check_callable(fun, "jacobian_sparsity")
    fun_kw = _keywords_last(fun)

    def jacobian_sparsity_fun(*args, **kwargs):
        _refuse_batched(args, "jacobian_sparsity")
        nums = _argnums(argnums, len(args), "jacobian_sparsity")
        values, tree = _inputs(args, nums, "jacobian_sparsity")
        if kwargs:  # (not differentiated: an argument more, after the others)
            pattern, reads, _ = _detect(
                fun_kw, (*args, kwargs), nums, values, tree, "jacobian_sparsity"
            )
        else:
            pattern, reads, _ = _detect(fun, args, nums, values, tree, "jacobian_sparsity")
        if reads:
            _guard_what_was_read(args)
        return pattern

    return _named(jacobian_sparsity_fun, fun, "jacobian_sparsity")


def _scalar_valued(fun, who):
    """`fun`, refusing an output that is not a real scalar in `who`'s words (grad's own
    refusal names grad, and advises a Jacobian)."""

    def scalar(*args, **kwargs):
        out = fun(*args, **kwargs)
        leaves = tree_flatten(out)[0]
        _check_outputs(leaves, who)  # (before a dtype is read: a str reads as a dtype's name)
        if len(leaves) == 1 and leaves[0] is out and math.prod(shape_of(out)) == 1:
            if dtype_of(out).kind == "f":
                return out
        what = (
            f"shape {tuple(shape_of(out))} and dtype {dtype_of(out)}"
            if len(leaves) == 1 and leaves[0] is out
            else f"a {type(out).__name__} of {len(leaves)} leaves"
        )
        raise TypeError(
            f"{who}: the function must return a real scalar (its Hessian is that of a scalar "
            f"function); it returned {what}. For a vector function f, take the Hessian of a "
            f"weighted sum, {who}(lambda x: fnp.sum(w * f(x))) (a Lagrangian's), or of each "
            "output (of a complex one: of fnp.real(f) and fnp.imag(f) apart); for first "
            "derivatives use sparse_jacobian"
        )

    return scalar


def _hessian_pattern(fun, args, nums, values, tree, who):
    def gradient(*full):
        return grad(fun, argnums=nums if len(nums) > 1 else nums[0])(*full)

    pattern, reads, _ = _detect(gradient, args, nums, values, tree, who)
    pattern = (pattern + pattern.T).tocsr()  # a Hessian is symmetric: keep either side's
    pattern.sort_indices()
    return pattern, reads


def hessian_sparsity(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable:
    """The pattern of a scalar function's Hessian: the pattern of its gradient's Jacobian
    (found by the sparsity level run over `grad(fun)`), made symmetric.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sum((x[1:] - x[:-1] ** 2) ** 2)
    >>> fgrad.hessian_sparsity(f)(np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """

    _check_callable(fun, "hessian_sparsity")
    scalar_fun = _scalar_valued(fun, "hessian_sparsity")
    scalar_fun_kw = _keywords_last(scalar_fun)

    def hessian_sparsity_fun(*args, **kwargs):
        _refuse_batched(args, "hessian_sparsity")
        nums = _argnums(argnums, len(args), "hessian_sparsity")
        values, tree = _inputs(args, nums, "hessian_sparsity")
        if kwargs:  # (not differentiated: an argument more, after the others)
            pattern, reads = _hessian_pattern(
                scalar_fun_kw, (*args, kwargs), nums, values, tree, "hessian_sparsity"
            )
        else:
            pattern, reads = _hessian_pattern(
                scalar_fun, args, nums, values, tree, "hessian_sparsity"
            )
        if reads:
            _guard_what_was_read(args)
        return pattern

    return _named(hessian_sparsity_fun, fun, "hessian_sparsity")


# --- evaluation -----------------------------------------------------------------------------------


def _flat_function(fun, args, nums, tree, shapes):
    """fun as a function of one vector of every input element, returning one vector of every
    output element (written in fgrad operations: it is differentiated)."""
    if len(shapes) == 1:
        # One input: no slice of the vector (under `vmap` of `jvp`, a copy of every seed at
        # each call of the recorded pass), and no reshape when it is a vector already.
        (shape,) = shapes

        def one(v):
            leaf = v if len(shape) == 1 else fnp.reshape(v, shape)
            return fun(*_with_inputs(args, nums, tree, [leaf]))

        return one
    bounds = _np.cumsum([0] + [math.prod(s) for s in shapes]).tolist()

    def flat(v):
        leaves = [fnp.reshape(v[lo:hi], s) for lo, hi, s in zip(bounds[:-1], bounds[1:], shapes)]
        return fun(*_with_inputs(args, nums, tree, leaves))

    return flat


def _vector(leaf):
    """`leaf` in C order as a vector (itself if it is one: a reshape is an operation more in
    the recorded pass)."""
    return leaf if len(shape_of(leaf)) == 1 else fnp.reshape(leaf, (-1,))


def _raveled(out):
    """`sparse_jacobian`'s output `out` (a pytree) as one vector, refusing an output that is
    not numeric in its words (with a pattern given, the pass is the first to see it)."""
    leaves = tree_flatten(out)[0]
    _check_outputs(leaves, "sparse_jacobian")
    parts = [_vector(leaf) for leaf in leaves]
    return parts[0] if len(parts) == 1 else fnp.concatenate(parts)


def _joined(args, nums):
    parts = [_vector(leaf) for leaf in tree_flatten(tuple(args[i] for i in nums))[0]]
    return parts[0] if len(parts) == 1 else fnp.concatenate(parts)


class _PullsLose(Exception):
    """Raised while a "rev" pass of mode "auto" is recorded, when its output holds more than
    its inputs (`_outruns_inputs`; with a pattern given, the output's dtype is known only
    then): `sparse_jacobian` makes a "fwd" plan instead."""


def _rev_refused(out_dtype, x_dtype):
    return ValueError(
        f"sparse_jacobian: mode='rev' pulls back cotangents into the inputs ({x_dtype}), "
        f"but the output is {out_dtype}: a complex part would be dropped; use mode='fwd' (or "
        "'auto', which then pushes forward)"
    )


def _make_pass(fun, nums, kind, seeds, auto=False):
    """The batched pass over `seeds` (one per row), recorded by `jit` (its arguments: fun's):
    "fwd" pushes each seed forward, "rev" pulls each back, "hvp" pushes each forward through
    the gradient. The seeds are constants of the record, not arguments: what the pass
    computes from them alone (each seed through the linear parts of the derivative: a
    stencil's shifts and sums of the tangents) is computed once, while the record is made,
    and kept in it as constants, so that a replay does only the work that depends on the
    arguments (the 2-D Brusselator's: 66 operations -> 17, 0.12 -> 0.04 ms).
    A "rev" pass whose output holds more than its inputs (`_outruns_inputs`) raises
    `_PullsLose` for mode "auto" (`auto`); asked for by name, it refuses a complex output and
    gives a float64 one of float32 inputs to float32 precision. Its entries are in the
    output's dtype, as jacfwd's."""

    def compressed(*args):
        values, tree = tree_flatten(tuple(args[i] for i in nums))
        shapes = [tuple(shape_of(v)) for v in values]
        flat = _flat_function(fun, args, nums, tree, shapes)
        x0 = _joined(args, nums)
        if kind == "rev":  # the seeds are cotangents of the output, in its dtype
            out, pull = vjp(lambda v: _raveled(flat(v)), x0)
            if tuple(shape_of(out)) != seeds.shape[1:]:  # a given pattern with too few or many rows
                given = (seeds.shape[1], math.prod(shape_of(x0)))
                raise _shape_refused(given, (math.prod(shape_of(out)), given[1]), "sparse_jacobian")
            out_dtype = dtype_of(out)
            if _outruns_inputs(out_dtype, [_np.empty(0, dtype_of(x0))]):
                if auto:
                    raise _PullsLose
                if out_dtype.kind == "c":
                    raise _rev_refused(out_dtype, dtype_of(x0))
            rows = vmap(lambda w: pull(w)[0])(fnp.astype(seeds, out_dtype))
            return rows if dtype_of(rows) == out_dtype else fnp.astype(rows, out_dtype)
        tangents = fnp.astype(seeds, dtype_of(x0))  # tangents of the input, in its dtype
        if kind == "fwd":
            return vmap(lambda s: jvp(lambda v: _raveled(flat(v)), (x0,), (s,))[1])(tangents)
        return vmap(lambda s: jvp(grad(flat), (x0,), (s,))[1])(tangents)

    return _RecordedPass(compressed)


class _RecordedPass:
    """`pass_` recorded by `jit`, called with fun's arguments: the leaves a record cannot take
    as inputs (`_Constants`) are closed over, as a static argument."""

    __slots__ = ("plain", "with_constants")

    def __init__(self, pass_):
        self.plain = jit(pass_)
        self.with_constants = jit(
            lambda constants, *inputs: pass_(*constants.args(inputs)), static_argnums=0
        )

    def _call(self, args, method):
        constants, inputs = _Constants.split(args)
        if constants is None:  # (the common call: every leaf is a record's input)
            return method(self.plain)(*args)
        return method(self.with_constants)(constants, *inputs)

    def __call__(self, *args):
        return self._call(args, lambda recorded: recorded)

    def record_source(self, *args):
        """The source of the record replayed for these arguments (`jit`'s)."""
        return self._call(args, lambda recorded: recorded.record_source)


def _is_record_input(leaf) -> bool:
    """Whether `jit` can take `leaf` as an input of a record: an array, a number, a string, a
    value an outer transform traces, an array of another library."""
    return (
        type(leaf) is Box
        or isinstance(leaf, (_np.ndarray, _np.generic, int, float, complex, str, bytes))
        or is_foreign_array(leaf)
    )


class _Constants:
    """The leaves of a call's arguments that a record cannot take as inputs (a function, a
    `scipy.sparse` matrix, an argument not differentiated): the record closes over them, as
    jit's static argument, compared as the plan's key compares them (`_value_key`). A plan is
    made for one such key, so its pass keeps one record."""

    __slots__ = ("_key", "leaves", "places", "tree")

    def __init__(self, tree, places, leaves):
        self.tree = tree
        self.places = places  # the leaves' places among the call's flat leaves
        self.leaves = leaves
        self._key = (tree, places, tuple(_value_key(v) for v in leaves))

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return type(other) is _Constants and self._key == other._key

    @staticmethod
    def split(args):
        """(_Constants, the other leaves) of `args`, or (None, args) where every leaf is a
        record's input."""
        leaves, tree = tree_flatten(args)
        places = tuple(k for k, leaf in enumerate(leaves) if not _is_record_input(leaf))
        if not places:
            return None, args
        inputs = [leaf for k, leaf in enumerate(leaves) if k not in places]
        return _Constants(tree, places, tuple(leaves[k] for k in places)), inputs

    def args(self, inputs):
        """The call's arguments: `inputs` (the other leaves) with these put back."""
        leaves, rest = [], iter(inputs)
        constants = dict(zip(self.places, self.leaves))
        for k in range(self.tree.num_leaves):
            leaves.append(constants[k] if k in constants else next(rest))
        return tree_unflatten(self.tree, leaves)


def _seeds(colors, size):
    k = int(colors.max()) + 1 if size else 0
    seeds = _np.zeros((k, size))
    seeds[colors, _np.arange(size)] = 1.0
    return seeds


class _Plan:
    """A pattern with its colouring, seeds and recovery, and the batched pass that fills it."""

    __slots__ = ("across", "flat_at", "pass_", "pattern", "read_at", "seeds", "who")

    def __init__(self, pattern, seeds, read_at, pass_, across, who):
        self.pattern = pattern
        self.seeds = seeds
        self.read_at = read_at  # (row, col) of each nonzero's value in the compressed result
        # the same places in the compressed result flattened: one `take` reads them (a third
        # of the time of indexing by the pair)
        self.flat_at = read_at[0] * across + read_at[1]
        self.pass_ = pass_
        self.across = across  # the compressed result's length along its second axis
        self.who = who

    def __call__(self, args):
        sp = sparse_module()
        p = self.pattern
        if any(type(leaf) is Box for leaf in tree_flatten(args)[0]):
            return self._traced(args)
        if self.seeds.shape[0] == 0:
            data = _np.zeros(p.nnz)
        else:
            compressed = self.pass_(*args)
            if type(compressed) is Box:
                # `fun` closes over a value an outer transform traces (a parameter being
                # differentiated, a record's input): the entries are traced values too
                return self._traced(args, compressed)
            compressed = _np.asarray(compressed)
            if compressed.shape[1] != self.across:  # a given pattern with too few or many rows
                shape = (compressed.shape[1], p.shape[1])
                _check_shape(p, shape if self.across == p.shape[0] else p.shape, self.who)
            data = _held_by_scipy(_np.take(compressed, self.flat_at))
        return sp.csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)

    def _traced(self, args, compressed=None):
        """Under an outer transform (`grad`, `jvp`, `jit`, `jet`): the same pass, on the traced
        arguments (or `compressed`, its result already), read into a `fgrad.scipy.sparse`
        array whose data are traced values, so that what is computed from it (`J @ v`,
        `J.toarray()`) is differentiated or recorded. (Imported by name: `fgrad.scipy` is a
        layer above this module.)"""
        fsp = importlib.import_module("fgrad.scipy.sparse")
        p = self.pattern
        if self.seeds.shape[0] == 0:
            data = fnp.zeros(p.nnz)
        else:
            if compressed is None:
                compressed = self.pass_(*args)
            if tuple(shape_of(compressed))[1] != self.across:
                shape = (tuple(shape_of(compressed))[1], p.shape[1])
                _check_shape(p, shape if self.across == p.shape[0] else p.shape, self.who)
            data = compressed[self.read_at]
        return fsp.csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)


def _held_by_scipy(data):
    """The entries as a SciPy sparse array can hold them: float16 ones (of float16 inputs) in
    float32, which holds each exactly (SciPy refuses float16: `toarray`, `@`, even `repr`)."""
    return data.astype(_np.float32) if data.dtype == _np.float16 else data


def _entries(pattern):
    rows = _np.repeat(_np.arange(pattern.shape[0], dtype=_np.int64), _np.diff(pattern.indptr))
    return rows, pattern.indices.astype(_np.int64)


def _jacobian_plan(pattern, mode, order, fun, nums, fwd_only):
    """The plan of a Jacobian with this pattern: one JVP per colour of the columns ("fwd") or
    one VJP per colour of the rows ("rev"), whichever mode asks for ("auto": fewer passes).
    `fwd_only`: an output holds more than the inputs (`_outruns_inputs`), so "auto" pushes
    forward."""
    rows, cols = _entries(pattern)
    m, n = pattern.shape
    choices = []
    # The pattern's CSC arrays (those of its transpose's CSR): the column colouring's lists of
    # rows, and the symmetry check's other side. (Its stored entries are its nonzeros, sorted.)
    columns = coloring._columns(pattern)
    if mode in ("auto", "fwd"):
        c = coloring._column_coloring(pattern, order, columns) if n else _np.zeros(0, _np.int64)
        choices.append(("fwd", c))
    if mode == "rev" or (mode == "auto" and not fwd_only):
        if mode == "auto" and _symmetric(pattern, columns):
            pass  # a symmetric pattern: its rows need as many colours as its columns
        elif mode == "auto" and choices[0][1].max(initial=-1) + 1 <= _fullest_column(pattern):
            pass  # the rows need at least as many colours as a column has nonzeros
        else:
            c = coloring.row_coloring(pattern, order) if m else _np.zeros(0, _np.int64)
            choices.append(("rev", c))
    kind, colors = min(choices, key=lambda kc: int(kc[1].max(initial=-1)))  # fwd on ties
    seeds = _seeds(colors, n if kind == "fwd" else m)
    pass_ = _make_pass(fun, nums, kind, seeds, auto=mode == "auto")
    if kind == "fwd":
        return _Plan(pattern, seeds, (colors[cols], rows), pass_, m, "sparse_jacobian")
    return _Plan(pattern, seeds, (colors[rows], cols), pass_, n, "sparse_jacobian")


def _symmetric(pattern, columns) -> bool:
    """Whether a CSR pattern with sorted indices equals its transpose, given its CSC arrays
    (`coloring._columns`, those of the transpose's CSR, sorted by construction): whether the
    two pairs of arrays are equal. (`pattern != pattern.T` costs a sparse comparison, several
    times more.)"""
    if pattern.shape[0] != pattern.shape[1]:
        return False
    indptr, rows = columns
    return _np.array_equal(pattern.indptr, indptr) and _np.array_equal(pattern.indices, rows)


def _fullest_column(pattern) -> int:
    """The most nonzeros in a column: the fewest colours a row colouring can take (the rows
    that share that column all differ)."""
    return int(_np.bincount(pattern.indices, minlength=pattern.shape[1]).max(initial=0))


def _hessian_plan(pattern, order, fun, nums):
    n = pattern.shape[0]
    banded = coloring.banded_coloring(pattern)
    if banded is not None and banded.max() < 3:
        # Only a shortcut (a tridiagonal Hessian): three colours read directly, as many as
        # a star colouring of a path takes, without the greedy pass over the graph.
        rows, cols = _entries(pattern)
        read_at = (banded[cols], rows)
        seeds = _seeds(banded, n)
        return _Plan(pattern, seeds, read_at, _make_pass(fun, nums, "hvp", seeds), n, "")
    colors = coloring.star_coloring(pattern, order) if n else _np.zeros(0, _np.int64)
    try:
        _, _, (read_row, read_col) = coloring.star_recovery(pattern, colors)
    except ValueError:  # not a star colouring (a bug in it): one that needs no symmetry
        colors = coloring.column_coloring(pattern, order)
        rows, cols = _entries(pattern)
        read_row, read_col = rows, colors[cols]
    read_at = (read_col, read_row)
    seeds = _seeds(colors, n)
    return _Plan(pattern, seeds, read_at, _make_pass(fun, nums, "hvp", seeds), n, "")


def _given_pattern(sparsity, who):
    sp = sparse_module()
    if sp.issparse(sparsity):
        p = sp.csr_array(sparsity).astype(bool)
    else:
        a = _np.asarray(sparsity)
        if a.ndim != 2:
            axes = "(inputs, inputs)" if who == "sparse_hessian" else "(outputs, inputs)"
            raise ValueError(
                f"{who}: sparsity has shape {a.shape}; a pattern is 2-D, of shape {axes} "
                "with outputs and inputs flattened as in jacobian_sparsity: pass one of that "
                "shape, or sparsity=None to find it"
            )
        p = sp.csr_array(a.astype(bool))
    p.eliminate_zeros()
    p.sum_duplicates()
    p.sort_indices()
    return p


def _check_shape(pattern, shape, who):
    if pattern.shape != shape:
        raise _shape_refused(pattern.shape, shape, who)


def _shape_refused(given, shape, who):
    return ValueError(
        f"{who}: sparsity has shape {given}, but the derivative of this call has "
        f"shape {shape} (flat outputs, flat inputs); pass a pattern of that shape, or "
        "sparsity=None to find it"
    )


def _columns_refused(given, n):
    """A given pattern whose columns are not the call's flat inputs (its rows, the outputs,
    are not known before the function runs: the message says only what the columns must be)."""
    return ValueError(
        f"sparse_jacobian: sparsity has shape {given}, but this call differentiates {n} flat "
        f"input(s), so the pattern needs {n} columns: pass a pattern of shape (outputs, {n}), "
        "with outputs and inputs flattened as in jacobian_sparsity, or sparsity=None to find it"
    )


def _refuse_batched(args, who):
    for i, a in enumerate(args):
        for leaf in tree_flatten(a)[0]:
            if type(leaf) is not Box:
                continue
            where = (
                f"{who}: argument {i} is a value batched by vmap with shape "
                f"{tuple(shape_of(leaf))} and dtype {dtype_of(leaf)}; a sparse result cannot "
                "carry a batch."
            )
            if holds_batch(leaf):
                # vmap of a sparse derivative: a batch of scipy.sparse arrays is no array. The
                # batched function's derivative is, and costs the passes of one problem.
                raise TypeError(
                    f"{where} For a batch of problems, differentiate the batched function: "
                    f"fgrad.{who}(fgrad.vmap(fun))(xs) (for a Hessian, of "
                    "lambda xs: fnp.sum(fgrad.vmap(fun)(xs))) is block-diagonal: with m outputs "
                    "and n inputs per problem, problem b's block is at rows b*m:(b+1)*m and "
                    "columns b*n:(b+1)*n, found in as many passes as one problem takes"
                )


def _key(args, nums, who):
    """What a plan is kept for: the shapes and dtypes of the arguments differentiated, and of
    the float numbers among the others (values that may change, see `_detect`), and the
    values of their other leaves (a pattern may depend on them: an index array, a matrix)."""
    _refuse_batched(args, who)
    parts = []
    for i, a in enumerate(args):
        leaves, tree = tree_flatten(a)
        parts.append(
            (
                tree,
                tuple(
                    (tuple(shape_of(v)), str(dtype_of(v)))
                    if i in nums or _is_variable_leaf(v)
                    else _value_key(v)
                    for v in leaves
                ),
            )
        )
    return nums, tuple(parts)


# The most plans a function keeps (one per key): a loop over changing matrices that are not
# differentiated makes a plan per value; the oldest are forgotten.
PLANS_KEPT = 16


def _remember(plans, key, plan):
    plans.pop(key, None)
    plans[key] = plan
    while len(plans) > PLANS_KEPT:
        del plans[next(iter(plans))]


def _value_key(v):
    """A leaf not differentiated, as the plan's key compares it: an array by its values, a
    `scipy.sparse` matrix by its stored entries, another hashable value by itself, anything
    else by identity (the key holds it, so that its id is not another object's while the plan
    is kept)."""
    if isinstance(v, (_np.ndarray, _np.generic, float, int, complex, bool)):
        a = _np.asarray(v)
        return (a.dtype.str, a.shape, a.tobytes())
    if _is_scipy_sparse(v):
        m = v.tocsr()
        return (type(v), m.shape, *(_value_key(a) for a in (m.data, m.indices, m.indptr)))
    try:
        hash(v)
    except TypeError:
        return _Identity(v)
    return (type(v), v)


def _is_scipy_sparse(v) -> bool:
    """Whether `v` is a `scipy.sparse` matrix or array (without importing SciPy for it)."""
    return type(v).__module__.startswith("scipy.sparse") and hasattr(v, "tocsr")


class _Identity:
    """A key that is its object, compared by identity."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return id(self.value)

    def __eq__(self, other):
        return type(other) is _Identity and other.value is self.value


def _covers(old, new) -> bool:
    """Whether every nonzero of `new` is one of `old`."""
    return old.shape == new.shape and old.multiply(new).nnz == new.nnz


def _subset_or_union(plan, pattern):
    """The pattern a call needs a new plan for: None where the plan's covers it, else the union
    of both, or the new pattern alone where its shape differs (an output whose size the
    values decide, as `x[x > 0]`'s)."""
    if plan is not None and _covers(plan.pattern, pattern):
        return None
    if plan is None or plan.pattern.shape != pattern.shape:
        return pattern
    union = (plan.pattern + pattern).tocsr()
    union.sort_indices()
    return union


def sparse_jacobian(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    sparsity: Any = None,
    mode: str = "auto",
    order: str = "natural",
) -> Callable:
    """`fun`'s Jacobian as a `scipy.sparse.csr_array` of shape (outputs, inputs), flattened
    as in `jacobian_sparsity`; its entries are `jacfwd`'s (mode "fwd") or `jacrev`'s (mode
    "rev", or "auto" where it pulls back), the same at every call. (The two differ only where
    0 * inf decides an entry: `nan_to_num(log(x))` at 0 is 0 forward, nan backward.)

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays.
    argnums : int or tuple of int, default 0
        The argument(s) to differentiate with respect to.
    sparsity : sparse or dense boolean array, optional
        The pattern, if known (then it is not looked for): every nonzero of the Jacobian must
        be in it, or the result is wrong.
    mode : {"auto", "fwd", "rev"}
        "fwd": one JVP per colour of the columns; "rev": one VJP per colour of the rows;
        "auto": whichever needs fewer passes, and "fwd" when an output holds more than the
        inputs (a complex output, whose imaginary part a pull into a real input drops, which
        "rev" refuses; a float64 output of float32 inputs, which "rev" gives to float32
        precision). The entries are in the output's dtype, as jacfwd's (float16: in float32,
        which holds them exactly, as SciPy's sparse arrays hold no float16).
    order : {"natural", "largest_first", "smallest_last", "recursive_largest_first"}
        The order of the greedy colouring (`fgrad.coloring`; each is then refined by a few
        passes that never add a colour). "natural", the columns' (or rows') numbering, costs
        least (about 0.5 ms for 2048 columns) and suits the local numbering of a
        discretised equation; fields stored one after the other (all of u, then all of v)
        are also tried point by point (the 2-D Brusselator: 8 colours instead of 10);
        "smallest_last" often needs fewer colours on an unstructured pattern (a 2-D
        Laplacian's 5-point stencil: 5 instead of 7) and costs about 4 ms more for 2048
        columns; "recursive_largest_first" often needs the fewest (so the fewest passes at
        every call: two fields on a 20 x 20 grid 7 instead of 8) and costs about 25 ms for
        2048 columns, once, on the first call.

    Notes
    -----
    The pattern and its colouring are found on the first call for each signature of the
    arguments differentiated (shapes and dtypes) and values of the others, and kept; later
    calls run only the batched pass. A function of elementwise operations, moves and sums on
    float64 values gets its first call's Jacobian in one run instead (`fgrad.accumulation`),
    and the colouring and the pass are made at its second call, from that pattern. As for
    `jit`, `fun` must be pure: an array it reads from outside its arguments (a global, a
    closure) is taken to stay the same, zeros included (a constant matrix's zeros shape the
    pattern). Pass such an array as an argument not differentiated if it changes: its values
    are part of the cache's key.

    A batch of problems: `sparse_jacobian(vmap(fun))(xs)` is the block-diagonal Jacobian of
    them all, found in as many passes as one problem (its blocks share no column, so one
    problem's colours serve every block). `vmap(sparse_jacobian(fun))` raises a TypeError: a
    batch of `scipy.sparse` arrays is not an array `vmap` can return.

    Examples
    --------
    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: x[1:] ** 2 - x[:-1]
    >>> fgrad.sparse_jacobian(f)(np.arange(4.0)).toarray()
    array([[-1.,  2.,  0.,  0.],
           [ 0., -1.,  4.,  0.],
           [ 0.,  0., -1.,  6.]])
    """
    _check_callable(fun, "sparse_jacobian")
    if mode not in _MODES:
        raise ValueError(f"sparse_jacobian: mode must be one of {_MODES}, not {mode!r}")
    if order not in coloring.COLUMN_METHODS:
        raise ValueError(
            f"sparse_jacobian: order must be one of {coloring.COLUMN_METHODS}, not {order!r}"
        )
    plans: dict = {}  # signature -> (_Plan, whether each call must look at its pattern again)
    given = None if sparsity is None else _given_pattern(sparsity, "sparse_jacobian")

    plans_kw: dict = {}  # the same, for calls with keyword arguments (of `fun_kw`)
    fun_kw = _keywords_last(fun)

    def sparse_jacobian_fun(*args, **kwargs):
        nums = _argnums(argnums, len(args), "sparse_jacobian")
        if kwargs:  # (not differentiated: an argument more, after the others)
            return jacobian_of(fun_kw, plans_kw, (*args, kwargs), nums)
        return jacobian_of(fun, plans, args, nums)

    def jacobian_of(fun, plans, args, nums):
        who = "sparse_jacobian"
        key = _key(args, nums, who)
        plan, recheck = plans.get(key, (None, True))
        if plan is None and given is None:
            # A first call: the Jacobian in one run where it can be accumulated; the plan
            # that later calls replay is made from its pattern at the second call
            values, tree = _inputs(args, nums, "sparse_jacobian")
            found = _accumulate(fun, args, nums, values, tree, who)
            if found is not None:
                jac, reads = found
                _remember(plans, key, (_Pending(_pattern_of(jac)), reads))
                return jac
        if plan is None or recheck or type(plan) is _Pending:
            new, fwd_only = None, False
            if plan is None or recheck:
                values, tree = _inputs(args, nums, "sparse_jacobian")
                if given is not None:
                    pattern, recheck = given, False
                    n = sum(v.size for v in values)
                    if given.shape[1] != n:
                        raise _columns_refused(given.shape, n)
                    # (whether an output holds more than the inputs, which "rev" cannot
                    # give, is known only when the pass runs: `_PullsLose`)
                else:
                    pattern, recheck, fwd_only = _detect(fun, args, nums, values, tree, who)
                new = _subset_or_union(plan, pattern)
            if type(plan) is _Pending and new is None:
                new = plan.pattern
            if new is not None:
                plan = _jacobian_plan(new, mode, order, fun, nums, fwd_only)
            _remember(plans, key, (plan, recheck))
        if recheck:
            _guard_what_was_read(args)
        try:
            return plan(args)
        except _PullsLose:  # (raised only while an "auto" plan's "rev" pass is recorded)
            plan = _jacobian_plan(plan.pattern, mode, order, fun, nums, fwd_only=True)
            _remember(plans, key, (plan, recheck))
            return plan(args)

    return _named(sparse_jacobian_fun, fun, "sparse_jacobian")


def sparse_hessian(
    fun: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    sparsity: Any = None,
    order: str = "smallest_last",
) -> Callable:
    """The Hessian of a scalar function as a `scipy.sparse.csr_array` of shape (inputs,
    inputs), flattened as in `jacobian_sparsity`; its entries are `hessian`'s.

    The pattern (`hessian_sparsity`, or `sparsity` if given) gets a star colouring: one
    Hessian-vector product per colour, each off-diagonal entry read where it is alone in its
    colour (or at its mirror image). Found once per signature, as in `sparse_jacobian`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sum(x[1:] * x[:-1] ** 2)
    >>> fgrad.sparse_hessian(f)(np.array([1.0, 2.0, 3.0])).toarray()
    array([[4., 2., 0.],
           [2., 6., 4.],
           [0., 4., 0.]])
    """
    _check_callable(fun, "sparse_hessian")
    if order not in coloring.ORDERS:
        raise ValueError(
            f"sparse_hessian: order must be one of {coloring.ORDERS} (the star colouring is "
            f"greedy in one of these orders), not {order!r}"
        )
    plans: dict = {}
    given = None if sparsity is None else _given_pattern(sparsity, "sparse_hessian")
    plans_kw: dict = {}  # the same, for calls with keyword arguments (of `scalar_fun_kw`)
    scalar_fun = _scalar_valued(fun, "sparse_hessian")
    scalar_fun_kw = _keywords_last(scalar_fun)

    def sparse_hessian_fun(*args, **kwargs):
        nums = _argnums(argnums, len(args), "sparse_hessian")
        if kwargs:  # (not differentiated: an argument more, after the others)
            return hessian_of(scalar_fun_kw, plans_kw, (*args, kwargs), nums)
        return hessian_of(scalar_fun, plans, args, nums)

    def hessian_of(scalar_fun, plans, args, nums):
        who = "sparse_hessian"
        key = _key(args, nums, who)
        plan, recheck = plans.get(key, (None, True))
        if plan is None or recheck:
            values, tree = _inputs(args, nums, "sparse_hessian")
            n = sum(v.size for v in values)
            if given is not None:
                _check_shape(given, (n, n), "sparse_hessian")
                pattern = (given + given.T).tocsr()
                pattern.sort_indices()
                recheck = False
            else:
                pattern, recheck = _hessian_pattern(scalar_fun, args, nums, values, tree, who)
            new = _subset_or_union(plan, pattern)
            if new is not None:
                plan = _hessian_plan(new, order, scalar_fun, nums)
            _remember(plans, key, (plan, recheck))
        if recheck:
            _guard_what_was_read(args)
        return plan(args)

    return _named(sparse_hessian_fun, fun, "sparse_hessian")
