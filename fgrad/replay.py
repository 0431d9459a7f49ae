"""Batched Jacobians: all the rows of `jacrev` (all the columns of `jacfwd`) in one pass.

`jacrev` needs `pull(e_i)` for every one-hot cotangent `e_i` of an output, and `jacfwd` the
jvp for every one-hot tangent. One pass per row costs the Python overhead of every rule once
per row. Here the pass runs once on a *recording* level, which writes down each primitive
applied to the seed (and to values computed from it), with its parameters and its other
arguments, as the rules resolve them for one row. That list of equations is then evaluated
once on the stack of all rows: a batching rule per primitive says how to apply it to
arguments with a leading batch axis (`sum` over axis a becomes `sum` over axis a + 1, a
`matmul` by a constant matrix multiplies all rows at once, ...), and a primitive with no rule
is applied row by row, which is always right.

A list of equations replays the pass correctly only if the rules do not look at the seed's
values to decide what to compute (a comparison, `float(ct)`, a mask). Built-in rules never do,
but a user's `custom_vjp` may (gradient clipping does). So the result is checked: one extra
row, a seed with no zero and no pattern, is replayed with the others and compared with an
ordinary pass on that seed. If they disagree, or the recording raises, the rows are computed
one by one, as before. The check costs one pass.

Every rule applies fgrad primitives through `bind`, so values of outer levels (`hessian` is
`jacfwd` of `jacrev`) are traced by those levels as usual.

Imports: `fgrad.core`, `fgrad.provenance` (the record of an equation), `fgrad.numpy` (the
primitives that have batching rules).
"""

import numpy as _np

from . import numpy as fnp
from .core import Box, Level, Primitive, add_any, bind, holds_box_of, primal
from .numpy import elementwise as _elementwise
from .numpy import products as _products
from .numpy import shaping as _shaping
from .numpy import ufuncs as _ufuncs
from .provenance import Equation

__all__ = ["map_linear"]


def map_linear(linear, k, n_args, rows):
    """`[linear(args) for each row]`, stacked per output: `args` has the row at position `k`
    and None (no seed) at the other `n_args - 1` positions. `linear` (a vjp's pull, a jvp's
    push) is linear in its arguments and returns a list of values; `rows` is a plain array
    with the rows along axis 0. Returns one array per output of `linear`, each with a
    leading axis of length len(rows)."""

    def args_for(row):
        return [row if m == k else None for m in range(n_args)]

    if len(rows) >= _MIN_ROWS:
        batched = _batched_rows(linear, args_for, rows)
        if batched is not None:
            return batched
    results = [linear(args_for(row)) for row in rows]
    return [fnp.stack([r[j] for r in results]) for j in range(len(results[0]))]


def _batched_rows(linear, args_for, rows):
    """The stacked results by one replay of a recorded call of `linear`, or None when the
    recording cannot be trusted (see the module docstring)."""
    n = len(rows)
    probe = _probe_like(rows[0])
    try:
        program = _record(linear, args_for, rows[0])
        seeds = _np.concatenate([rows, probe[None]])
        # the rows go in chunks so that no batched value holds more than _MAX_ELEMENTS
        chunk = max(1, _MAX_ELEMENTS // program.largest)
        parts = [program.run(seeds[i : i + chunk]) for i in range(0, n + 1, chunk)]
    except Exception:  # e.g. float(ct) in a user's bprop: the row-by-row way is always right
        return None
    stacked = (
        parts[0]
        if len(parts) == 1
        else [fnp.concatenate([p[j] for p in parts]) for j in range(len(parts[0]))]
    )
    expected = linear(args_for(probe))
    for got, want in zip(stacked, expected):
        if not _close(got[n], want):
            return None
    return [got[:n] for got in stacked]


# Recording a pass, checking it and replaying it cost about four plain passes: with fewer rows
# one pass per row is faster (measured on small tanh/matmul Jacobians: the replay breaks even
# at about 4 columns for jacfwd, which reruns the function per column, and 8 rows for jacrev).
_MIN_ROWS = 8

# The largest batched value a replay makes, in elements (32 MiB of float64): a Jacobian of many
# rows through large intermediates is replayed a chunk of rows at a time.
_MAX_ELEMENTS = 1 << 22


def _probe_like(row):
    """A fixed cotangent with no zero and no repeated pattern (a recorded branch that depends on
    the cotangent's values would take another way for it than for the one-hot rows)."""
    k = _np.arange(1, _np.size(row) + 1)
    return _np.cos(k * 2.399963).reshape(_np.shape(row)).astype(_np.result_type(row))


def _close(got, want):
    """Whether the probe row of the replay matches a real backward pass, up to the rounding of
    summing in another order (a recorded branch taken wrongly changes far more than this)."""
    a, b = _np.asarray(primal(got)), _np.asarray(primal(want))
    if a.shape != b.shape:
        return False
    odd = ~(_np.isfinite(a) & _np.isfinite(b))  # nan and inf must match exactly
    if not _np.array_equal(a[odd], b[odd], equal_nan=True):
        return False
    a, b = a[~odd], b[~odd]
    tol = 1e-8 if _np.finfo(_np.result_type(a, _np.float32)).bits >= 64 else 1e-3
    return bool(_np.linalg.norm(a - b) <= tol * (_np.linalg.norm(a) + _np.linalg.norm(b)))


# --- recording ------------------------------------------------------------------------------------


class _Var:
    """An argument of a recorded equation that is the batched input or computed from it."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _Recorder(Level):
    """A level that applies each primitive as usual and writes it down when one of its
    arguments is this level's box (the recorded input, or a value computed from it)."""

    __slots__ = ("equations", "largest", "n_vars")

    def __init__(self, seed_size):
        super().__init__()
        self.equations = []
        self.n_vars = 1  # variable 0 is the input
        self.largest = max(1, seed_size)  # the most elements of one row of any value

    def process(self, prim, args, params):
        vals, refs = [], []
        for a in args:
            if type(a) is Box and a.level is self:
                vals.append(a.value)
                refs.append(_Var(a.aux))
            else:
                vals.append(a)
                refs.append(a)
        ans = bind(prim, vals, params)
        first = self.n_vars
        if not prim.multiple_results:
            self.n_vars += 1
            self.largest = max(self.largest, fnp.size(ans))
            self.equations.append(Equation(prim, refs, params, [first]))
            return Box(ans, self, first)
        self.n_vars += len(ans)
        self.largest = max(self.largest, *[fnp.size(a) for a in ans])
        self.equations.append(Equation(prim, refs, params, list(range(first, self.n_vars))))
        return tuple(Box(a, self, first + k) for k, a in enumerate(ans))


class _Program:
    """The recorded pass: equations from the input (variable 0) to the outputs."""

    def __init__(self, equations, n_vars, outputs, largest):
        self.equations, self.n_vars, self.outputs = equations, n_vars, outputs
        self.largest = largest
        # free each batched value after the last equation that reads it
        last_use = {}
        for i, eq in enumerate(equations):
            for a in eq.inputs:
                if type(a) is _Var:
                    last_use[a.index] = i
        for o in outputs:
            if type(o) is _Var:
                last_use.pop(o.index, None)
        self.frees = [[] for _ in equations]
        for var, i in last_use.items():
            self.frees[i].append(var)

    def run(self, stack):
        """Every output for every row of `stack` at once, each with a leading batch axis."""
        n = len(stack)
        env = [None] * self.n_vars
        env[0] = stack
        for eq, frees in zip(self.equations, self.frees):
            args = [env[a.index] if type(a) is _Var else a for a in eq.inputs]
            batched = [type(a) is _Var for a in eq.inputs]
            rule = _RULES.get(eq.prim)
            out = rule(eq.prim, args, batched, eq.params) if rule is not None else None
            if out is None:
                out = _row_by_row(eq.prim, args, batched, eq.params, n)
            for var, value in zip(eq.outputs, out if eq.prim.multiple_results else (out,)):
                env[var] = value
            del args, out
            for var in frees:
                env[var] = None
        results, seen = [], set()
        for o in self.outputs:
            if type(o) is not _Var:  # does not depend on the seed: the same for every row
                results.append(fnp.stack([o] * n))
            elif o.index in seen:  # two outputs with one value: give each its own array
                results.append(fnp.copy(env[o.index]))
            else:
                seen.add(o.index)
                results.append(env[o.index])
        return results


def _record(linear, args_for, row):
    with _Recorder(_np.size(row)) as recorder:
        outputs = linear(args_for(Box(row, recorder, 0)))
    refs = []
    for o in outputs:
        if type(o) is Box and o.level is recorder:
            refs.append(_Var(o.aux))
        elif holds_box_of(o, recorder):
            raise ValueError("a recorded value escaped inside another value")
        else:
            refs.append(o)  # does not depend on the seed (a zero)
    return _Program(recorder.equations, recorder.n_vars, refs, recorder.largest)


def _row_by_row(prim, args, batched, params, n):
    """The fallback for a primitive with no batching rule: apply it to each row, then stack."""
    outs = [bind(prim, [a[i] if b else a for a, b in zip(args, batched)], params) for i in range(n)]
    if prim.multiple_results:
        return tuple(fnp.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return fnp.stack(outs)


# --- batching rules -------------------------------------------------------------------------------
# A rule gets the primitive, its arguments (the batched ones with the batch axis first), a flag
# per argument saying whether it is batched, and the recorded parameters. It returns the batched
# result, or None to apply the primitive row by row instead.


def _example_ndim(a, is_batched):
    return fnp.ndim(a) - 1 if is_batched else fnp.ndim(a)


def _with_example_ndim(a, nd):
    """A batched argument with length-1 axes after the batch axis, up to `nd` example axes, so
    that it broadcasts against the other arguments as one example would."""
    s = tuple(fnp.shape(a))
    missing = nd - (len(s) - 1)
    return a if missing <= 0 else _shaping._reshape_p(a, shape=s[:1] + (1,) * missing + s[1:])


def _elementwise_rule(prim, args, batched, params):
    if params:
        return None
    nd = max(_example_ndim(a, b) for a, b in zip(args, batched))
    aligned = [_with_example_ndim(a, nd) if b else a for a, b in zip(args, batched)]
    return bind(prim, aligned, params)


def _shifted_axes(axes, nd):
    return tuple(int(ax) % nd + 1 for ax in axes) if nd else ()


def _sum_rule(prim, args, batched, params):
    (x,) = args
    nd = fnp.ndim(x) - 1
    axis = params["axis"]
    axes = tuple(range(nd)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    return bind(prim, [x], dict(params, axis=_shifted_axes(axes, nd)))


def _reshape_rule(prim, args, batched, params):
    (x,) = args
    return bind(prim, [x], dict(params, shape=(fnp.shape(x)[0],) + tuple(params["shape"])))


def _transpose_rule(prim, args, batched, params):
    (x,) = args
    nd = fnp.ndim(x) - 1
    return bind(prim, [x], dict(params, axes=(0,) + _shifted_axes(params["axes"], nd)))


def _broadcast_to_rule(prim, args, batched, params):
    (x,) = args
    shape = tuple(params["shape"])
    x = _with_example_ndim(x, len(shape))
    return bind(prim, [x], dict(params, shape=(fnp.shape(x)[0],) + shape))


def _astype_rule(prim, args, batched, params):
    return bind(prim, args, params)


def _batchable_index(idx):
    """idx as a tuple when a leading `slice(None)` selects every row without moving axes, else
    None. That holds unless idx has index arrays that are not side by side: NumPy then puts
    their axes first, in front of the batch axis too."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    arrays = [isinstance(p, (list, _np.ndarray)) for p in parts]
    if any(arrays):  # integers next to index arrays are index arrays too
        arrays = [a or isinstance(p, (int, _np.integer)) for a, p in zip(arrays, parts)]
        first = arrays.index(True)
        last = len(arrays) - arrays[::-1].index(True)
        if not all(arrays[first:last]):
            return None
    return parts


def _getitem_rule(prim, args, batched, params):
    (x,) = args
    parts = _batchable_index(params["idx"])
    if parts is None:
        return None
    return bind(prim, [x], dict(params, idx=(slice(None),) + parts))


def _index_add_rule(prim, args, batched, params):
    x, v = args
    parts = _batchable_index(params["idx"])
    if parts is None:
        return None
    n = fnp.shape(x if batched[0] else v)[0]
    x_shape = tuple(fnp.shape(x))[1:] if batched[0] else tuple(fnp.shape(x))
    if not batched[0]:
        x = fnp.broadcast_to(x, (n,) + x_shape)
    if batched[1]:
        picked = _np.broadcast_to(_np.zeros((), dtype=bool), x_shape)[parts]
        v = _with_example_ndim(v, picked.ndim)
    return bind(prim, [x, v], dict(params, idx=(slice(None),) + parts))


def _matmul_rule(prim, args, batched, params):
    """A batched matrix operand broadcasts over the other's batch axes once both have as many
    example axes; a batched vector times a constant matrix is one matrix product."""
    x, y = args
    x_nd = _example_ndim(x, batched[0])
    y_nd = _example_ndim(y, batched[1])
    if x_nd >= 2 and y_nd >= 2:
        nd = max(x_nd, y_nd)
        x = _with_example_ndim(x, nd) if batched[0] else x
        y = _with_example_ndim(y, nd) if batched[1] else y
        if batched[0] and not batched[1] and y_nd == 2:  # all rows as one matrix product
            s = tuple(fnp.shape(x))
            flat = bind(prim, [_shaping._reshape_p(x, shape=(-1, s[-1])), y], params)
            return _shaping._reshape_p(flat, shape=s[:-1] + tuple(fnp.shape(y))[-1:])
        return bind(prim, [x, y], params)
    if batched[0] and batched[1]:
        return None
    if batched[0] and x_nd == 1 and y_nd <= 2:  # rows @ y
        return bind(prim, [x, y], params)
    if batched[1] and y_nd == 1 and x_nd <= 2:  # x @ y_i for every row y_i: rows @ x^T
        return bind(prim, [y, x if x_nd == 1 else _shaping._transpose_p(x, axes=(1, 0))], params)
    if batched[1] and x_nd == 1:  # (n,) @ (batch, ..., n, m)
        return bind(prim, [x, y], params)
    return None


def _joined_rule(prim, args, batched, params):
    """stack and concatenate: the unbatched pieces are repeated for every row."""
    n = next(fnp.shape(a)[0] for a, b in zip(args, batched) if b)
    full = [
        a if b else fnp.broadcast_to(a, (n,) + tuple(fnp.shape(a))) for a, b in zip(args, batched)
    ]
    return bind(prim, full, dict(params, axis=params["axis"] + 1))


def _elementwise_primitives():
    """Every primitive of the elementwise and ufunc families broadcasts like a NumPy ufunc (the
    one-input ones are exported as functions holding their primitive)."""
    found = {add_any}
    for module in (_elementwise, _ufuncs):
        for v in vars(module).values():
            v = getattr(v, "primitive", v)
            if type(v) is Primitive:
                found.add(v)
    return found


_RULES = dict.fromkeys(_elementwise_primitives(), _elementwise_rule)
_RULES.update(
    {
        _shaping._sum_p: _sum_rule,
        _shaping._reshape_p: _reshape_rule,
        _shaping._transpose_p: _transpose_rule,
        _shaping._broadcast_to_p: _broadcast_to_rule,
        _shaping._astype_p: _astype_rule,
        _shaping._getitem_p: _getitem_rule,
        _shaping._index_add_p: _index_add_rule,
        _shaping._stack_p: _joined_rule,
        _shaping._concatenate_p: _joined_rule,
        _products.matmul: _matmul_rule,
    }
)
