"""The array interface of traced values: operators and NumPy-style attributes on `Box`.

The core defines `Box` without operators so that it never depends on this layer; importing
`fgrad.numpy` attaches them here. Imports: `fgrad.core` and the rule modules of this package.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import math
import os
import re
import sys
import types
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from ..core import Box, Primitive, bind_one, bind_two, dtype_of, primal, shape_of
from . import (
    _ufunc_methods,
    elementwise as _ew,
    products as _pr,
    reductions as _rd,
    shaping as _sh,
    ufuncs as _uf,
)

if TYPE_CHECKING:
    from typing import Any


def _concrete_or_raise(box, what):
    """The plain value of a box whose levels have all exited or only read values (a batching
    level reads its rows, a staging level records a guard, see `core.primal`); a live level
    that differentiates refuses, naming what `what` (the conversion asked for) and the user's
    line that asked for it."""
    x = box
    while type(x) is Box and (not x.level.live or x.level.reads_values):
        x = x.value  # an exited level is just its value, which may be an outer level's box
    if type(x) is Box:
        raise TypeError(_refusal(box, what))
    return primal(box)


# What to write instead, after "... would drop its gradient: <your line>."
_BUILD_WITH_FGRAD = (
    "Build arrays from traced values with fgrad.numpy: fnp.stack([a, b]) or fnp.array([a, b]) "
    "of the elements; to change elements, write out = fnp.at(out)[idx].set(v) for "
    "out[idx] = v (out may be a NumPy array; the result is a new array that carries the "
    "gradient), as x = x.at[idx].set(v) for a traced x. If you mean the value as a constant, "
    "use fgrad.stop_gradient(v) in its place."
)
_KEEP_AN_ARRAY = (
    "Keep it an array and use fgrad.numpy operations on it, or wrap it in "
    "fgrad.stop_gradient(x) if you mean to treat it as a constant."
)


def _refusal(box, what):
    """The message refusing `what` (e.g. "float()") of a traced value. NumPy converts values
    implicitly, so `what` alone may not be what the user wrote: `out[i] = v` into a float
    array calls `float(v)`, `np.array([v, w])` and `out[i:j] = v` call `v.__array__()`. The
    user's line tells which (read from its text, as a traceback shows it)."""
    value = f"a traced value (one with {_sh.describe(box)})"
    place, text = _users_line()
    where = f" (at {place}: {text})" if text else ""
    if what == "NumPy conversion" and _inside_scipy_sparse():
        return (
            f"A scipy.sparse matrix's operation converts {value} to a NumPy array, which "
            f"would drop its gradient{where}: fgrad supports SciPy's sparse matrices in matrix "
            "products only (A @ x, x @ A, A.dot(x)). For an elementwise operation (A * x, "
            "A / x, A.multiply(x)) use A.toarray() (dense), or build the matrix with "
            "fgrad.scipy.sparse and operate on its data."
        )
    if what == "NumPy conversion" and _inside_numpys_vectorize():
        return (
            f"np.vectorize converts {value} to a NumPy array, which would drop its "
            f"gradient{where}: it calls the function on plain elements. Use "
            "fgrad.numpy.vectorize(f) instead, which applies f to traced elements under every "
            "transform."
        )
    statement = _statement(text)
    numpys = _numpys_own_call(statement)
    if numpys is not None:
        return (
            f"NumPy's np.{numpys} converts {value} to a NumPy array, which would drop its "
            f"gradient{where}: NumPy does not send this call to fgrad. Use "
            f"fgrad.numpy.{numpys}, which carries the gradient (or fgrad.stop_gradient(x) if you "
            "mean the value as a constant)."
        )
    written = {"float()": "float", "int()": "int", "complex()": "complex"}.get(what)
    if what == "NumPy conversion" and _calls(statement, ("array", "asarray", "asanyarray")):
        return (
            f"Building a NumPy array from {value} would drop its gradient{where}: "
            "np.array(...) and np.asarray(...) of a traced value or of a list holding one make "
            "an array of plain numbers. " + _BUILD_WITH_FGRAD
        )
    if (
        (written or what == "NumPy conversion")
        and _assigns_into_a_subscript(statement)
        and not _calls(statement, (written,))
    ):
        how = f"{what} of the value" if written else "np.asarray of the value"
        return (
            f"Assigning {value} into a NumPy array would drop its gradient{where}: a NumPy "
            f"array holds plain numbers, and NumPy takes {how} to store it. " + _BUILD_WITH_FGRAD
        )
    if what == "NumPy conversion":
        return (
            f"Converting {value} to a NumPy array would drop its gradient{where}. NumPy "
            "converts with np.asarray in np.array(...) and np.asarray(...) of a traced value "
            "or of a list holding one, and in NumPy functions that fgrad.numpy does not "
            "mirror. " + _BUILD_WITH_FGRAD
        )
    return (
        f"{what} of {value} would drop its gradient{where}. {_KEEP_AN_ARRAY} (Assigning it "
        "into a NumPy array does this too: build arrays with fgrad.numpy.stack or "
        "x.at[idx].set(v) instead.)"
    )


_FGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# NumPy's own code, which converts a value for a function the user called (np.vectorize's
# np.asarray): not the user's line either
_NUMPY_DIR = os.path.dirname(os.path.abspath(_np.__file__)) + os.sep


def _users_line():
    """("function, file.py line 12", the line's text) of the innermost line of the user's code
    (not fgrad's, nor NumPy's) on the stack; ("", "") if there is none.
    `fgrad.provenance.source_here` does the same for the layers above this one
    (tests/test_core.py: what each may import)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith((_FGRAD_DIR, _NUMPY_DIR)):
        frame = frame.f_back
    if frame is None:
        return "", ""
    code = frame.f_code
    place = f"{os.path.basename(code.co_filename)} line {frame.f_lineno}"
    if code.co_name != "<module>":
        place = f"{code.co_name}, {place}"
    return place, linecache.getline(code.co_filename, frame.f_lineno).strip()


# NumPy's functions that fgrad.numpy mirrors, by the code object of their Python body (filled
# by `install`): NumPy runs that body on a traced value when the function does not dispatch
# (np.kaiser, np.full) or does not dispatch on the traced argument (np.histogram's `range`)
_NUMPYS_CODE: dict[types.CodeType, str] = {}
# mirrored NumPy functions written in C (no frame of their own): known from the user's line
_NUMPYS_BUILTINS = ("ascontiguousarray", "asfortranarray")
# the arguments NumPy's own functions take traced values in without dispatching on them
_NOT_DISPATCHED = {"histogram": "range", "histogram2d": "range", "histogramdd": "range"}


def _numpys_own_call(statement):
    """The name of the NumPy function fgrad.numpy mirrors that the user's code called and whose
    own body is running on a traced value (the NumPy frame the user's line called), or one
    written in C that the user's statement calls; else None."""
    frame, found = sys._getframe(1), None
    while frame is not None and frame.f_code.co_filename.startswith((_FGRAD_DIR, _NUMPY_DIR)):
        back = frame.f_back
        if back is not None and not back.f_code.co_filename.startswith((_FGRAD_DIR, _NUMPY_DIR)):
            found = _NUMPYS_CODE.get(frame.f_code)  # (called by the user's line)
        frame = back
    if found is None and frame is not None:  # (the line's text, if it is no whole statement)
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        found = next((n for n in _NUMPYS_BUILTINS if _calls_name(statement, text, n)), None)
    return found


def _calls_name(statement, text, name):
    """Whether the statement calls `name`, or (no statement: part of one over several lines,
    a dict's entry) its text has `name(`."""
    if statement is not None:
        return _calls(statement, (name,))
    return re.search(rf"\b{name}\s*\(", text) is not None


def _numpys_own_body_refusal():
    """The refusal of an operation on a traced value inside the body of a NumPy function that
    fgrad.numpy mirrors (NumPy ran its own code: it did not dispatch on the traced argument),
    naming fgrad.numpy's function; None outside one."""
    place, text = _users_line()
    numpys = _numpys_own_call(_statement(text))
    if numpys is None:
        return None
    where = f" (at {place}: {text})" if text else ""
    argument = _NOT_DISPATCHED.get(numpys)
    why = f"its `{argument}` is traced, and NumPy does not dispatch on it" if argument else ""
    return (
        f"NumPy's np.{numpys}{where} ran its own code on a traced value{f' ({why})' if why else ''}"
        f", which cannot run inside a transform. Use fgrad.numpy.{numpys}, which takes traced "
        "values."
    )


def _inside_scipy_sparse():
    """Whether the innermost frame outside fgrad and NumPy is scipy.sparse's own code (an
    operator or method of a sparse matrix converting its other operand)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith((_FGRAD_DIR, _NUMPY_DIR)):
        frame = frame.f_back
    return frame is not None and f"{os.sep}scipy{os.sep}sparse{os.sep}" in frame.f_code.co_filename


def _inside_numpys_vectorize():
    """Whether the stack holds a call of an np.vectorize (whose function sees plain values):
    a frame running one of its methods' code (known by the code object, not by reading the
    frame's locals: fgrad reads no function's locals)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _VECTORIZE_CODE:
            return True
        frame = frame.f_back
    return False


_VECTORIZE_CODE = frozenset(
    f.__code__ for f in vars(_np.vectorize).values() if isinstance(f, types.FunctionType)
)


def _statement(text):
    """The one statement on a line of code, or None (none, or part of one over several)."""
    try:
        (statement,) = ast.parse(text).body
    except (SyntaxError, ValueError):
        return None
    return statement


def _calls(statement, names):
    """Whether the statement calls a function of one of these names (`f(...)`, `np.f(...)`)."""
    return statement is not None and any(
        isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) in names or getattr(node.func, "attr", None) in names)
        for node in ast.walk(statement)
    )


def _assigns_into_a_subscript(statement):
    """Whether the statement assigns into a subscript: `out[i] = v`, `out[i] += v`."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    else:
        return False
    return any(isinstance(t, ast.Subscript) for t in targets)


def _operator(prim, symbol, reflected=False):
    """A method for `prim` (a Primitive instance is not a descriptor, so it cannot be one):
    `self <symbol> other`, or with `reflected` the reflected operator's `other <symbol> self`
    (`__radd__`); `symbol` is the operator's, for the refusal of a SciPy sparse operand. An
    operand that handles the operator itself (`_defers`: fgrad.scipy.sparse's arrays) gets it:
    `c * A` is `A.__rmul__(c)`, as `x @ A` is `A.__rmatmul__(x)`. (Two forms, so that the
    operators of programs, the most frequent calls, make one call to bind.)"""
    if isinstance(prim, Primitive):
        repeats = symbol == "*"

        def method(self, other):
            if type(other) in _PLAIN_OPERANDS:
                return bind_two(prim, other, self) if reflected else bind_two(prim, self, other)
            if repeats and isinstance(other, _SEQUENCES) and _counts(self):
                return _repeated(other, self)
            if not _handles_itself(other):
                return bind_two(prim, other, self) if reflected else bind_two(prim, self, other)
            return _left_to(other, self, symbol, reflected)

    else:

        def method(self, other):
            if type(other) in _PLAIN_OPERANDS or not _handles_itself(other):
                return prim(other, self) if reflected else prim(self, other)
            return _left_to(other, self, symbol, reflected)

    return method


# Python's sequences, which a number multiplies by repeating them (`[x] * n`, `"-" * n`)
_SEQUENCES = (list, tuple, str, bytes, bytearray)


def _counts(box):
    """Whether `seq * box` is a repetition, as it is eagerly: the box holds a number (a Python
    number, as a `jit` argument keeps it, or a NumPy scalar, or a row of a batched 0-d value,
    as `vmap` gives each row) and is traced only by transforms that read values. An array
    multiplies elementwise, as NumPy's `[x] * np.array(3)` does; under a transform that
    differentiates, a list stays the array it is taken for (`x * [x, 1.0]`); an array of
    another library (Dask) multiplies, as its own operator does."""
    if not _only_read(box):
        return False
    inner = _core.innermost(box)
    if isinstance(inner, (int, float, complex, _np.generic)):
        return True
    return type(inner) is _np.ndarray and _core.holds_batch(box) and shape_of(box) == ()


def _repeated(seq, box):
    """`seq * n` for a traced number n, as Python repeats it: n read as `operator.index`
    reads it (under `jit` a guard, so another n takes another path; under `vmap` the rows of
    each count go on apart). A number that is not an integer refuses with Python's message
    (NumPy's bool and float scalars too)."""
    inner = _core.innermost(box)
    kind = dtype_of(box).type if type(inner) is _np.ndarray else type(inner)
    if not issubclass(kind, (int, _np.integer)):
        name = kind.__name__ if kind.__module__ == "builtins" else f"numpy.{kind.__name__}"
        raise TypeError(f"can't multiply sequence by non-int of type '{name}'")
    return seq * _index(box)


def _divmod_operator(reflected=False):
    """`divmod(x, y)` (or with `reflected` `divmod(y, x)`) as `(x // y, x % y)`, of the
    operators' twins: a traced Python number gives Python numbers, as eagerly (NumPy's divmod
    gives float64 and int64 scalars, which promote float32 and int8 arrays). On arrays and
    NumPy scalars the two are NumPy's floor_divide and remainder, whose values are np.divmod's."""
    floor_divide = _operator(_uf.floor_divide_operator, "//", reflected)
    remainder = _operator(_uf.remainder_operator, "%", reflected)

    def method(self, other):
        quotient = floor_divide(self, other)
        if quotient is NotImplemented:
            return NotImplemented
        return quotient, remainder(self, other)

    return method


def _handles_itself(other) -> bool:
    """Whether an operand is not one an operator binds: a SciPy sparse matrix (`_with_sparse`)
    or an object that defers NumPy's operators to its own (`_defers`)."""
    return _is_scipy_sparse(other) or _defers(other)


def _left_to(other, x, symbol, reflected):
    """What `x <symbol> other` (or the reflected form) returns when `other` is not an operand
    fgrad binds: a SciPy matrix's product or refusal, or NotImplemented for an object that
    defers (Python then calls its own operator, or raises its TypeError where it has none,
    as it does for a number)."""
    if _is_scipy_sparse(other):
        return _with_sparse(x, other, symbol, reflected)
    return NotImplemented


def _with_sparse(x, A, symbol, reflected):
    """`x <symbol> A` (or `A <symbol> x`) for a SciPy sparse A: `*` of a `spmatrix` is its
    matrix product (np.matrix's convention, which SciPy's matrices keep); fgrad refuses the
    elementwise operators, whose NumPy form would treat A as an object, not a matrix."""
    sp = _scipy_sparse_module()
    if symbol == "*" and sp.isspmatrix(A):
        return _sparse_product(A, x, reverse=not reflected)
    written = f"A {symbol} x" if reflected else f"x {symbol} A"
    raise TypeError(
        f"{written} with A a scipy.sparse {type(A).__name__} (shape {A.shape}, dtype "
        f"{A.dtype}) and x a traced value ({_sh.describe(x)}): fgrad supports SciPy's sparse "
        "matrices in matrix products only (A @ x, x @ A, A.dot(x)). For an elementwise "
        "operation use A.toarray() (dense), or build the matrix with fgrad.scipy.sparse and "
        "operate on its data."
    )


def _scipy_sparse_module():
    """`scipy.sparse` if the program has imported it (a sparse operand implies it has)."""
    return sys.modules.get("scipy.sparse")


# The usual operands of an operator, which need no look at SciPy
_PLAIN_OPERANDS = frozenset(
    {Box, _np.ndarray, float, int, complex, bool, _np.float64, _np.float32, _np.int64}
)


def _is_scipy_sparse(other):
    if type(other) in _PLAIN_OPERANDS:
        return False
    sp = _scipy_sparse_module()
    return sp is not None and sp.issparse(other)


def _asked_by_scipy_sparse(frame):
    """Whether `frame` is a SciPy sparse `_matmul_dispatch` (which converts the operand of
    `A @ x` with np.asanyarray): the base class's, or a format's own (COO has one)."""
    return frame.f_code.co_name == "_matmul_dispatch" and str(
        frame.f_globals.get("__name__", "")
    ).startswith("scipy.sparse.")


def _sparse_product(A, x, reverse):
    # SciPy's matrices meet traced values in fgrad.scipy.sparse (the layer above, imported
    # when a program that uses scipy.sparse first multiplies a traced value by one)
    mirror = importlib.import_module("fgrad.scipy.sparse")
    return mirror.matmul_constant(A, x, reverse=reverse)


def _defers(other):
    """Whether `other` asks NumPy's arrays to leave its operators to it (`__array_ufunc__ =
    None`, NEP 13), as fgrad.scipy.sparse's arrays do: a traced value defers to it too."""
    return (
        type(other) is not Box
        and type(other) is not _np.ndarray
        and getattr(type(other), "__array_ufunc__", False) is None
    )


def _matmul(self, other):
    if _is_scipy_sparse(other):
        return _sparse_product(other, self, reverse=True)  # x @ A
    if _defers(other):
        return NotImplemented
    try:
        return bind_two(_pr.matmul, self, other)
    except ValueError:
        _pr.refuse_unfit(self, other)  # fgrad's error where the shapes do not fit
        raise


def _rmatmul(self, other):
    if _is_scipy_sparse(other):
        return _sparse_product(other, self, reverse=False)  # A @ x, after SciPy gave up
    try:
        return bind_two(_pr.matmul, other, self)
    except ValueError:
        _pr.refuse_unfit(other, self)
        raise


def _unary(fn):
    if isinstance(fn, Primitive):  # (an operator's twin: bound directly, as `_operator` binds)
        return lambda self: bind_one(fn, self)
    return lambda self: fn(self)


def _setitem(self, idx, value):
    raise TypeError(
        _numpys_own_body_refusal()
        or f"item assignment on a traced array ({_sh.describe(self)}) is not supported: arrays "
        "are immutable inside a transform. Use x = x.at[idx].set(value) (or .add(value)) "
        "instead of x[idx] = value."
    )


def _iter(self):
    n = shape_of(self)
    if not n:
        raise TypeError("iteration over a 0-d traced array")
    return (self[i] for i in range(n[0]))


def _len(self):
    n = shape_of(self)
    if not n:
        raise TypeError("len() of a 0-d traced array")
    return n[0]


def _repr(self):
    if _only_read(self):  # under `jit` and `vmap` alone, the value's own (the row's), guarded
        return repr(primal(self))
    value = _core.innermost(self)  # a batched value shows all its rows
    return f"Traced<{type(self.level).__name__} depth {self.level.depth}>({value!r})"


def _only_read(box):
    """Whether `box` is traced only by transforms that read values (`jit`'s recordings,
    `vmap`'s rows), none that differentiates: what the function computes from the value's
    text (`str`, `format`) is then what it computes eagerly (on each row), read as `float(x)`
    reads it (a guard; rows that read different texts go on apart)."""
    x = box
    while type(x) is Box:
        if x.level.live and not x.level.reads_values:
            return False
        x = x.value
    return True


def _str(self):
    # `print(x)`, f"{x}" and str(x) give the value's text as eagerly (the row's, under `vmap`;
    # guarded, under `jit`), under every transform: code may compute with it (`len(str(x))`
    # gave 45 under grad where eagerly it is 3). `repr(x)` shows the traced form under a
    # transform that differentiates.
    return str(primal(self))


def _hash(self):
    # The value's hash, as eagerly (`x in {1.0, 2.0}`, `d.get(x)`: by identity they were
    # never found), read as `float(x)` reads it; an array's value is unhashable, as NumPy's.
    return hash(primal(self))


def _format(self, spec):
    if not spec:
        return _str(self)
    return format(primal(self), spec)  # (a read, as `str`'s: no derivative goes through text)


def _round(self, ndigits=None):
    """Python's `round` of a traced number, as of a NumPy scalar: `round(x)` an int, of the
    value read (under `jit` a guard, under `vmap` the rows' common value), and `round(x, n)`
    NumPy's round, a traced value of x's type. Rounding's derivative is 0, so nothing is
    dropped (`int(x)` and `float(x)` refuse under a derivative: they would drop one). A traced
    array has no `round`, as NumPy's arrays have none; a Python number (a `jit` argument
    as given) gives Python's round of the value read."""
    inner = _core.innermost(self)
    if shape_of(self) != () or (type(inner) is _np.ndarray and not _core.holds_batch(self)):
        raise TypeError(
            f"round() of a traced array ({_sh.describe(self)}): NumPy's arrays have no "
            "__round__ method; use fgrad.numpy.round(x, decimals)"
        )
    if ndigits is None or type(inner) in (float, int):
        value = primal(self)
        return round(value) if ndigits is None else round(value, ndigits)
    return _ew.round(self, ndigits)


def _index(self):
    """`operator.index(x)`, of the value read as `int(x)` reads it: a Python bool or int (a
    `jit` argument as given) is an int, as eagerly (`[a, b][flag]`); NumPy's rule otherwise
    (an integer scalar or 0-d array; np.True_ and floats refuse, as eagerly)."""
    value = _concrete_or_raise(self, "Using as an index")
    if type(value) is bool or type(value) is int:
        return int(value)
    return _np.asarray(value).__index__()


def _read_by(fn, what):
    """A method applying `fn` (`math.trunc`, ...) to the value, read as `float(x)` reads it:
    the Python number a `jit` argument holds as given keeps its type (an int beyond 2**53
    stays exact, where `math.floor` through `float()` rounded it)."""
    return lambda self: fn(_concrete_or_raise(self, what))


def _power(self, other, modulo=None):
    """`x ** y`, and Python's three-argument `pow(x, y, modulo)` of traced integers, of the
    values read (an integer result has no derivative), as `int(x)` reads them."""
    if modulo is not None:
        return pow(*(_concrete_or_raise(v, "pow(x, y, modulo)") for v in (self, other, modulo)))
    if type(other) in _PLAIN_OPERANDS or not _handles_itself(other):
        return bind_two(_ew.power_operator, self, other)
    return _left_to(other, self, "**", False)


# Python numbers' own methods and attributes (a `jit` record holds a Python-number argument as
# it was given; NumPy's scalars have some): those of the 0-d value read, as `float(x)` reads it
# (under `jit` a guard, under `vmap` each row's). An array has none, as eagerly.
_NUMBER_ATTRIBUTES = (
    "as_integer_ratio",
    "bit_count",
    "bit_length",
    "denominator",
    "hex",
    "is_integer",
    "numerator",
    "to_bytes",
)


def _number_attribute(name):
    def read(self):
        if shape_of(self) != ():
            raise AttributeError(
                f"x.{name}: a traced array ({_sh.describe(self)}) has no attribute {name!r}, "
                "as a NumPy array has none (Python's numbers have it)"
            )
        return getattr(_concrete_or_raise(self, f"x.{name}"), name)

    return property(read)


def _array(self, dtype=None, copy=None):
    if _asked_by_scipy_sparse(sys._getframe(1)):
        # `A @ x` with a SciPy sparse A: SciPy asks for an array first, and a 0-d array of
        # objects is its sign to give up (NotImplemented), so that Python calls x.__rmatmul__
        return _np.empty((), dtype=object)
    value = _np.asarray(_concrete_or_raise(self, "NumPy conversion"))
    return value if dtype is None else value.astype(dtype)


# NumPy calls this when a NumPy array meets a traced value (`ndarray * box`) or when a NumPy
# ufunc is applied to one; both are sent to the fgrad operation of the same name. `install`
# fills the table from the names fgrad.numpy exports.
_UFUNCS: dict[_np.ufunc, Any] = {}
_NAMESPACE: dict[str, Any] = {}  # fgrad.numpy's public names, for the ufunc methods (`install`)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = _UFUNCS.get(ufunc)
    if fn is None:
        raise TypeError(_no_mirror_message(self, ufunc, method))
    if method != "__call__":  # outer, reduce, accumulate (and at, reduceat: refused)
        return _ufunc_methods.apply(fn, ufunc, method, inputs, kwargs, _NAMESPACE)
    if not kwargs and len(inputs) == 2:
        # `ndarray * box`, `ndarray @ box`: what fn(*inputs) does, without its generic call
        bare = fn if isinstance(fn, Primitive) else getattr(fn, "bare", None)
        if bare is not None:
            try:
                return bind_two(bare, *inputs)
            except ValueError:
                if ufunc is _np.matmul:  # `ndarray @ box` whose shapes do not fit
                    _pr.refuse_unfit(*inputs)
                raise
    if kwargs.get("out") is not None:
        out = kwargs["out"][0] if type(kwargs["out"]) is tuple else kwargs["out"]
        given = _sh.describe(out) if hasattr(out, "dtype") else type(out).__name__
        raise TypeError(
            f"numpy.{ufunc.__name__}(..., out=...) cannot write into an array inside fgrad "
            f"(out: {given}): arrays are values here. Use the returned value instead (for "
            "an in-place operator on a NumPy array, a += v or a[idx] += v, write a = a + v, or "
            "a = fnp.at(a)[idx].add(v))"
        )
    kwargs.pop("out", None)
    if kwargs and not _takes_ufunc_keywords(fn):
        raise TypeError(
            _numpys_own_body_refusal()
            or f"numpy.{ufunc.__name__} was applied to a traced value with keyword arguments "
            f"{sorted(kwargs)}, which fgrad.numpy.{ufunc.__name__} does not take; call it "
            "without them (use fgrad.numpy.where for a `where=` mask)"
        )
    return fn(*inputs, **kwargs)


def _takes_ufunc_keywords(fn):
    """Whether fn takes NumPy's keywords: every mirror does, except the primitives kept bare
    (`f(x)`, no keywords) for speed: sin, exp, add, multiply, ..."""
    if isinstance(fn, Primitive):
        return False
    # a mirror with NumPy's signature (`_ufunc_signature`) or keywords of its own
    return hasattr(fn, "__signature__") or bool(getattr(fn, "__kwdefaults__", None))


_PACKAGES = {"numpy": "NumPy", "scipy": "SciPy"}


def _no_mirror_message(box, ufunc, method):
    """Why a ufunc applied to a traced value cannot run, naming the function as the user
    called it (SciPy's special functions are NumPy ufuncs too; `scipy.special.zeta` calls the
    private ufunc `_riemann_zeta`) and fgrad's mirror of that module."""
    if ufunc.__name__.endswith(" (vectorized)"):  # a ufunc np.frompyfunc made, of no module
        return _python_function_ufunc_message(box, ufunc, method)
    home = _home_of(ufunc)
    package = home.split(".")[0]
    public, name = home.rsplit(".", 1)
    what = f"{_PACKAGES.get(package, package)}'s {home}"
    if method != "__call__":
        what += f".{method}"
    head = f"{what} was applied to a traced value ({_sh.describe(box)}); "
    mirror = "fgrad." + public
    if package == "scipy" and mirror not in sys.modules:
        return head + (
            f"SciPy cannot differentiate it. Import {mirror}, which sends {public}'s ufuncs to "
            f"their differentiable mirrors where it has one, or call {mirror}.{name} directly."
        )
    if package == "scipy":
        return head + (
            f"fgrad has no derivative for it ({mirror}.__all__ lists the functions it "
            f"differentiates). Apply it to plain values instead (fgrad.stop_gradient(x) where "
            "no derivative should flow through it), build it from fgrad.numpy operations, or "
            "register your own rule with fgrad.primitive."
        )
    head += f"{_PACKAGES.get(package, 'it')} cannot differentiate it. "
    if mirror == "fgrad.numpy":
        from ._coverage import EXCLUDED

        if name in EXCLUDED:
            return head + f"fgrad.numpy leaves {name} out on purpose ({EXCLUDED[name]})."
    return head + (
        f"{mirror} has no differentiable {name} yet: build it from fgrad.numpy "
        "operations, or register your own with fgrad.primitive."
    )


def _python_function_ufunc_message(box, ufunc, method):
    """Why np.frompyfunc's ufunc of a Python function cannot take a traced value."""
    name = ufunc.__name__.removesuffix(" (vectorized)")
    call = "" if method == "__call__" else f".{method}"
    return (
        f"NumPy's np.frompyfunc ufunc of the Python function {name}{call} was applied to a "
        f"traced value ({_sh.describe(box)}): it calls the function on each element as a "
        "plain Python object, which fgrad cannot trace. Use fgrad.numpy.vectorize(f) instead "
        "(it applies f to traced elements, under every transform), or apply the ufunc to "
        "fgrad.stop_gradient(x) if no derivative should flow through it."
    )


def _home_of(ufunc):
    """Where a ufunc is defined, as "module.name": NumPy's own, or the public module of
    another package that holds it (SciPy's special functions are NumPy ufuncs too). A private
    ufunc (SciPy's `_zeta`) is named by the public function of its package's public module
    that calls it (`scipy.special.zeta`)."""
    name = ufunc.__name__
    if getattr(_np, name, None) is ufunc:
        return f"numpy.{name}"
    modules = [(m, module) for m, module in list(sys.modules.items()) if module is not None]
    homes = sorted(
        (
            m
            for m, module in modules
            if not any(p.startswith("_") for p in m.split("."))
            and getattr(module, name, None) is ufunc
        ),
        key=lambda m: (m.count("."), m),
    )
    if homes:
        return f"{homes[0]}.{name}"
    for m, module in modules:  # a private ufunc: the public function that calls it
        parts = m.split(".")
        if getattr(module, name, None) is not ufunc or not any(p.startswith("_") for p in parts):
            continue
        public = ".".join(parts[: next(i for i, p in enumerate(parts) if p.startswith("_"))])
        caller = _caller_of(sys.modules.get(public), name)
        if caller is not None:
            return f"{public}.{caller}"
    return f"ufunc.{name}"


def _caller_of(module, name):
    """The public function of `module` whose code names `name` (a private ufunc it wraps)."""
    for attr in sorted(getattr(module, "__all__", None) or dir(module or ())):
        fn = getattr(module, attr, None)
        code = getattr(fn, "__code__", None)
        if not attr.startswith("_") and code is not None and name in code.co_names:
            return attr
    return None


_FUNCTIONS: dict[Any, Any] = {}  # NumPy function -> fgrad function, for `__array_function__`


def _array_function(self, func, types, args, kwargs):
    fn = _FUNCTIONS.get(func)
    if fn is None:
        module = func.__module__.replace("numpy.", "") if func.__module__ != "numpy" else ""
        raise TypeError(
            f"NumPy's {func.__module__}.{func.__name__} was applied to a traced value "
            f"({_sh.describe(self)}); fgrad.numpy{'.' + module if module else ''} has no "
            f"differentiable {func.__name__} yet. Use fgrad.numpy operations in functions you "
            "differentiate, or register your own with fgrad.primitive."
        )
    return fn(*args, **kwargs)


def _method_reshape(self, *shape, order="C", copy=None):
    return _sh.reshape(self, shape[0] if len(shape) == 1 else shape, order=order, copy=copy)


def _method_transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _sh.transpose(self, axes or None)


def _copy_method(copy):
    """`x.copy()` from fgrad.numpy's `copy`. A traced value has no memory layout, so NumPy's
    default order for the method ("C") asks nothing of it."""

    def method(self, order="C"):
        return copy(self) if order == "C" else copy(self, order=order)

    method.__name__ = "copy"
    return method


def _concrete_method(name):
    """`x.item()`, `x.tolist()`, `x.tobytes()`: Python values, which carry no gradient; the
    same as `float(x)` (a value of a live level that differentiates is refused)."""

    def method(self, *args, **kwargs):
        value = _np.asarray(_concrete_or_raise(self, f"x.{name}()"))
        return getattr(value, name)(*args, **kwargs)

    method.__name__ = name
    return method


# ndarray methods that change the array in place, and what to write instead
_IN_PLACE = {
    "sort": "x = fgrad.numpy.sort(x, axis)",
    "partition": "x = fgrad.numpy.partition(x, kth, axis)",
    "fill": "x = fgrad.numpy.full_like(x, value)",
    "put": "x = x.at[indices].set(values)",
    "resize": "x = fgrad.numpy.reshape(x, shape), or build a new array",
    "setfield": "build a new array",
    "setflags": "leave the flags alone (a traced value is never written to)",
}


def _in_place_method(name):
    def method(self, *args, **kwargs):
        raise TypeError(
            f"x.{name}() changes an array in place, and a traced array ({_sh.describe(self)}) "
            f"is immutable inside a transform; use {_IN_PLACE[name]} instead"
        )

    method.__name__ = name
    return method


# ndarray attributes about memory and storage, which a traced value does not have (it is the
# value of an operation, not a block of memory), or functions fgrad.numpy does not mirror
_NO_TRACED_MEANING = {
    "base": "a traced value views no other array",
    "ctypes": "a traced value is not a block of memory",
    "data": "a traced value is not a block of memory",
    "flags": "a traced value has no memory layout",
    "strides": "a traced value has no memory layout",
    "flat": "use fgrad.numpy.ravel(x) (and x.at[...] to change elements)",
    "view": "use x.astype(dtype) to change the dtype, x.reshape(...) the shape",
    "getfield": "use x.astype(dtype)",
    "byteswap": "a traced value has no byte order to swap",
    "tofile": "save a plain array: call it outside the transform",
    "dump": "save a plain array: call it outside the transform",
    "dumps": "save a plain array: call it outside the transform",
    "device": "ask the array outside the transform",
    "to_device": "move the array before the transform",
    # (np.from_dlpack(x) reads these: an AttributeError keeps hasattr False for DLPack checks)
    "__dlpack__": "it is not a block of memory to share; call numpy.from_dlpack on a plain "
    "array outside the transform",
    "__dlpack_device__": "it is not a block of memory to share",
}


def _refused_attribute(name, why):
    """A property for a NumPy array attribute that a traced value does not have: reading it
    raises an AttributeError saying why and what to use instead (so `hasattr` is False).

    These are properties rather than one `__getattr__`: a class with `__getattr__` routes every
    attribute read through it (CPython then cannot specialize `box.value`, `box.level`), which
    doubled the cost of the core's reads of a box's slots."""

    def refuse(self):
        raise AttributeError(
            f"x.{name} is not supported on a traced array ({_sh.describe(self)}): {why}"
        )

    return property(refuse)


def _as_method(fn):
    """A method that is `fn` applied to the array (NumPy's functions call these methods)."""
    return lambda self, *args, **kwargs: fn(self, *args, **kwargs)


_METHODS = {
    "__add__": _operator(_ew.add_operator, "+"),
    "__radd__": _operator(_ew.add_operator, "+", reflected=True),
    "__sub__": _operator(_ew.subtract_operator, "-"),
    "__rsub__": _operator(_ew.subtract_operator, "-", reflected=True),
    "__mul__": _operator(_ew.multiply_operator, "*"),
    "__rmul__": _operator(_ew.multiply_operator, "*", reflected=True),
    "__truediv__": _operator(_ew.divide_operator, "/"),
    "__rtruediv__": _operator(_ew.divide_operator, "/", reflected=True),
    "__pow__": _power,
    "__rpow__": _operator(_ew.power_operator, "**", reflected=True),
    "__matmul__": _matmul,
    "__rmatmul__": _rmatmul,
    "__neg__": _unary(_ew.negative_operator),
    "__invert__": _unary(_ew.invert_operator),
    "__pos__": lambda self: self,
    "__abs__": _unary(_ew.abs_operator),
    "__lt__": _operator(_ew.comparison_operators["lt"], "<"),
    "__le__": _operator(_ew.comparison_operators["le"], "<="),
    "__gt__": _operator(_ew.comparison_operators["gt"], ">"),
    "__ge__": _operator(_ew.comparison_operators["ge"], ">="),
    "__eq__": _operator(_ew.comparison_operators["eq"], "=="),
    "__ne__": _operator(_ew.comparison_operators["ne"], "!="),
    "__getitem__": _sh.getitem,
    "__setitem__": _setitem,
    "__len__": _len,
    "__iter__": _iter,
    "__repr__": _repr,
    "__str__": _str,
    "__format__": _format,
    "__round__": _round,
    "__trunc__": _read_by(math.trunc, "math.trunc()"),
    "__floor__": _read_by(math.floor, "math.floor()"),
    "__ceil__": _read_by(math.ceil, "math.ceil()"),
    "__bool__": lambda self: bool(primal(self)),
    "__float__": lambda self: float(_concrete_or_raise(self, "float()")),
    "__int__": lambda self: int(_concrete_or_raise(self, "int()")),
    "__complex__": lambda self: complex(_concrete_or_raise(self, "complex()")),
    "__index__": _index,
    "__array__": _array,
    "__array_ufunc__": _array_ufunc,
    "__array_function__": _array_function,
    "__mod__": _operator(_uf.remainder_operator, "%"),
    "__rmod__": _operator(_uf.remainder_operator, "%", reflected=True),
    "__floordiv__": _operator(_uf.floor_divide_operator, "//"),
    "__rfloordiv__": _operator(_uf.floor_divide_operator, "//", reflected=True),
    "__divmod__": _divmod_operator(),
    "__rdivmod__": _divmod_operator(reflected=True),
    "sum": _as_method(_sh.sum),
    "mean": _as_method(_rd.mean),
    "prod": _as_method(_rd.prod),
    "max": _as_method(_rd.max),
    "min": _as_method(_rd.min),
    "reshape": _method_reshape,
    "transpose": _method_transpose,
    "ravel": _sh.ravel,
    "flatten": _sh.ravel,
    "squeeze": _sh.squeeze,
    "astype": _sh.astype,
    "dot": _pr.dot,
    "swapaxes": _sh.swapaxes,
    "conj": _unary(_ew.conj_operator),
    "conjugate": _unary(_ew.conj_operator),
    "item": _concrete_method("item"),
    "tolist": _concrete_method("tolist"),
    "tobytes": _concrete_method("tobytes"),
    **{name: _in_place_method(name) for name in _IN_PLACE},
}

_PROPERTIES = {
    "shape": lambda self: shape_of(self),
    "ndim": lambda self: len(shape_of(self)),
    "size": lambda self: _sh.size(self),
    "dtype": lambda self: dtype_of(self),
    "T": lambda self: _sh.transpose(self),
    "itemsize": lambda self: dtype_of(self).itemsize,
    "nbytes": lambda self: _sh.size(self) * dtype_of(self).itemsize,
    "real": _ew.real,
    "imag": _ew.imag,
    "at": _sh.at,
}


# ndarray methods that are the fgrad.numpy function of the same name applied to the array.
_FUNCTION_METHODS = (
    "var",
    "std",
    "cumsum",
    "cumprod",
    "all",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "clip",
    "round",
    "trace",
    "diagonal",
    "repeat",
    "nonzero",
    "take",
    "ptp",
    "searchsorted",
    "argpartition",
    "choose",
)


# NumPy's functions that write into an argument (and return None, or it): NumPy code calls
# them for that write and may drop the result, so the new array fgrad.numpy's function of the
# same name returns for a traced argument (a traced value cannot be written into) would be
# lost, and the array left as it was. Called as NumPy's, a traced argument is refused, naming
# the form that returns the new array: (the arguments, what to write, whether this call
# writes in place).
_WRITES_INTO = {
    "put_along_axis": (
        ("arr", "values"),
        "arr = fgrad.numpy.put_along_axis(arr, indices, values, axis, inplace=False), which "
        "returns the new array (JAX's form)",
        lambda arguments: True,
    ),
    "fill_diagonal": (
        ("a", "val"),
        "a = fgrad.numpy.fill_diagonal(a, val, inplace=False), which returns the new array "
        "(JAX's form)",
        lambda arguments: True,
    ),
    "nan_to_num": (
        ("x", "nan", "posinf", "neginf"),
        "x = fgrad.numpy.nan_to_num(x, nan=..., posinf=..., neginf=...) (copy=True, NumPy's "
        "default), which returns the new array",
        lambda arguments: _writes_in_place(arguments.get("copy", True)),
    ),
}


def _writes_in_place(copy):
    """Whether NumPy's `nan_to_num(x, copy=copy)` writes into x: its `np.array(x, copy=copy)`
    copies only for a true `copy`, so None, np.False_, 0 and [] write in place as False
    does."""
    return copy is None or not copy


def _refusing_traced(fn, names, instead, in_place):
    """`fn` as NumPy's own call reaches it: when the call writes in place (`in_place` of its
    arguments), the arguments `names` must not be traced."""
    signature = inspect.signature(fn)

    def numpys_call(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        if in_place(arguments):
            copy = arguments.get("copy", True)
            what = fn.__name__ + (f"(..., copy={copy!r})" if "copy" in arguments else "")
            _sh.refuse_traced(what, instead, **{n: arguments.get(n) for n in names})
        return fn(*args, **kwargs)

    return numpys_call


# fgrad.numpy functions whose result dtype differs from NumPy's on purpose (float32 data gives
# float32 where NumPy computes in float64: `cov`, `corrcoef`, `interp`, `vander`, `polyder`,
# `polyint`, `bincount`, `geomspace`). Called as NumPy's own
# function on a traced value, the value must not change under tracing: NumPy's dtype is passed
# (or its inputs cast), so the call computes what NumPy computes on the plain values.


def _data_dtype(*values):
    """NumPy's result dtype of `values` (None for an absent one) with float64: the dtype NumPy's
    `cov` and `interp` compute in."""
    present = [_np.result_type(dtype_of(v)) for v in values if v is not None]
    return _np.result_type(*present, _np.float64)


def _numpys_cov(fn):
    def numpys_cov(m, y=None, *args, dtype=None, **kwargs):
        if dtype is None:
            dtype = _data_dtype(_sh.asarray(m), None if y is None else _sh.asarray(y))
        return fn(m, y, *args, dtype=dtype, **kwargs)

    return numpys_cov


def _numpys_interp(fn):
    def numpys_interp(x, xp, fp, *args, **kwargs):
        fp = _sh.asarray(fp)
        data = _np.complex128 if dtype_of(fp).kind == "c" else _np.float64
        return fn(
            _sh.astype(_sh.asarray(x), _np.float64),
            _sh.astype(_sh.asarray(xp), _np.float64),
            _sh.astype(fp, data),
            *args,
            **kwargs,
        )

    return numpys_interp


def _numpys_double(*names, unless=None):
    """For a function NumPy computes in double precision whatever the precision of the
    arguments `names` (it promotes them with an integer, or casts them to float64): those of
    single precision (float16, float32, complex64) are cast up to float64 (complex128) before
    the call, as NumPy's promotion casts them, exactly. Not when the keyword `unless` is given
    (geomspace's `dtype`, which sets the precision NumPy computes in)."""

    def wrap(fn):
        signature = inspect.signature(fn)

        def numpys_call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            if bound.arguments.get(unless) is None:
                for name in names:
                    if bound.arguments.get(name) is not None:
                        bound.arguments[name] = _to_double(bound.arguments[name])
            return fn(*bound.args, **bound.kwargs)

        return numpys_call

    return wrap


def _to_double(x):
    """x cast up to double precision if it is a single-precision float or complex array, else
    x as given."""
    array = _sh.asarray(x)
    dtype = dtype_of(array)
    double = _np.result_type(dtype, _np.float64)
    return _sh.astype(array, double) if dtype.kind in "fc" and double != dtype else x


_NUMPYS_DTYPES = {
    "cov": _numpys_cov,
    "corrcoef": _numpys_cov,
    "interp": _numpys_interp,
    "vander": _numpys_double("x"),
    "polyder": _numpys_double("p"),
    "polyint": _numpys_double("p", "k"),
    "bincount": _numpys_double("weights"),
    "geomspace": _numpys_double("start", "stop", unless="dtype"),
}


# NumPy functions that dispatch on their array argument alone and copy a fill value into a new
# array of their own with `copyto`, whose result they return: `full_like(a, fill_value)` and
# `nan_to_num(x, nan=, posinf=, neginf=)`. For a plain array their own body runs, and the copy
# of a traced fill value is the value read (as `float(x)` reads it: under `jit` a guard, under
# `vmap` each row's), as `np.full(shape, fill_value)` reads it with np.asarray; under a
# transform that differentiates, NumPy's plain array would drop the derivative, so it is
# refused, naming fgrad.numpy's function, which carries it. Code object -> (the call, its fill
# values, fgrad.numpy's call).
_COPIES_FILL_VALUES = {
    getattr(getattr(numpys, "_implementation", None), "__code__", None): texts
    for numpys, texts in [
        (_np.full_like, ("np.full_like(a, fill_value)", "fill_value", "full_like(a, fill_value)")),
        (
            _np.nan_to_num,
            (
                "np.nan_to_num(x, nan=, posinf=, neginf=)",
                "nan, posinf or neginf",
                "nan_to_num(x, nan=..., posinf=..., neginf=...)",
            ),
        ),
    ]
}
_COPIES_FILL_VALUES.pop(None, None)  # (a NumPy without `_implementation`: none is known)


def _numpys_copyto(copyto):
    def numpys_copyto(dst, src, casting="same_kind", where=True):
        if type(src) is Box and type(dst) is _np.ndarray:
            texts = _numpys_function_copying_a_fill_value()
            if texts is not None:
                if not _only_read(src):
                    raise TypeError(_fill_value_refusal(src, *texts))
                _np.copyto(dst, primal(src), casting=casting, where=where)
                return None
        return copyto(dst, src, casting=casting, where=where)

    return numpys_copyto


def _numpys_function_copying_a_fill_value():
    """The texts of `_COPIES_FILL_VALUES` for the NumPy function that called this copyto
    (through `__array_function__`), or None for another caller."""
    frame = sys._getframe(2)
    for _ in range(3):  # numpys_copyto <- _array_function <- (NumPy's dispatch) <- full_like
        if frame is None:
            return None
        if frame.f_code in _COPIES_FILL_VALUES:
            return _COPIES_FILL_VALUES[frame.f_code]
        frame = frame.f_back
    return None


def _fill_value_refusal(fill_value, call, names, instead):
    place, text = _users_line()
    where = f" (at {place}: {text})" if text else ""
    return (
        f"NumPy's {call} of a plain array and a traced {names} "
        f"({_sh.describe(fill_value)}){where} returns NumPy's own array of plain numbers, "
        f"which would drop the fill value's gradient. Use fgrad.numpy.{instead}, which "
        "carries it, or fgrad.stop_gradient(value) if you mean it as a constant."
    )


def dispatch_to(mapping):
    """Send these NumPy-protocol callables (ufuncs or array functions, e.g. SciPy's special
    functions) to the given fgrad functions when they meet a traced value."""
    for theirs, fn in mapping.items():
        (_UFUNCS if isinstance(theirs, _np.ufunc) else _FUNCTIONS)[theirs] = fn


def install(namespace, submodules):
    """Attach the array interface to Box. `namespace` is fgrad.numpy's public names and
    `submodules` maps "linalg"/"fft" to those mirrors: NumPy functions and ufuncs applied to a
    traced value are sent to the fgrad function of the same name."""
    for prefix, names in [("", namespace)] + [
        (f"{sub}.", {n: getattr(m, n) for n in m.__all__}) for sub, m in submodules.items()
    ]:
        numpy_module = _np
        for part in prefix.split(".")[:-1]:
            numpy_module = getattr(numpy_module, part)
        for name, fn in names.items():
            theirs = getattr(numpy_module, name, None)
            if not callable(fn) or theirs is None or theirs is fn or isinstance(theirs, type):
                continue  # a NumPy function re-exported unchanged must not dispatch to itself
            (_UFUNCS if isinstance(theirs, _np.ufunc) else _FUNCTIONS)[theirs] = fn
    for name, (names, instead, in_place) in _WRITES_INTO.items():
        fn = _refusing_traced(namespace[name], names, instead, in_place)
        _FUNCTIONS[getattr(_np, name)] = fn
    for name, numpys in _NUMPYS_DTYPES.items():
        _FUNCTIONS[getattr(_np, name)] = numpys(namespace[name])
    _FUNCTIONS[_np.copyto] = _numpys_copyto(namespace["copyto"])
    for name in namespace:
        theirs = getattr(_np, name, None)
        code = getattr(getattr(theirs, "_implementation", theirs), "__code__", None)
        if code is not None and not isinstance(theirs, type):
            _NUMPYS_CODE[code] = name
    _NAMESPACE.update(namespace)
    for theirs, fn in list(_UFUNCS.items()):
        if not isinstance(fn, Primitive):  # (a Primitive takes no attributes: add, matmul, ...)
            _ufunc_methods.attach(fn, theirs, namespace)
    for name in _FUNCTION_METHODS:
        if name in namespace:
            setattr(Box, name, _as_method(namespace[name]))
    Box.copy = _copy_method(namespace["copy"])
    # the methods whose NumPy function takes the array elsewhere than first
    Box.compress = lambda self, condition, axis=None, out=None: namespace["compress"](
        condition, self, axis=axis, out=out
    )
    Box.mT = property(namespace["matrix_transpose"])
    for name, fn in _METHODS.items():
        setattr(Box, name, fn)
    for name, fn in _PROPERTIES.items():
        setattr(Box, name, property(fn))
    for name in _NUMBER_ATTRIBUTES:
        setattr(Box, name, _number_attribute(name))
    for name, why in _NO_TRACED_MEANING.items():
        setattr(Box, name, _refused_attribute(name, why))
    # Defining __eq__ leaves a class unhashable; a traced value hashes as its value does (the
    # core keys nothing by box: it keys boxes by `id`)
    Box.__hash__ = _hash
