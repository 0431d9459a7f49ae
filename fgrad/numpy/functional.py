"""Functions applied over arrays: `apply_along_axis` and `vectorize`.

Both call the user's function on slices or elements of traced arrays, so what the function
does with fgrad operations is differentiated like any other code, to every order and in
both modes; the results are stacked (a differentiable operation) into NumPy's layout. Values
and dtypes are NumPy's: the function is called on the same slices in the same order, and
the results are cast to the dtype NumPy would give them (that of the first result, or
`otypes`).

Imports: `fgrad.core`, `fgrad.numpy.shaping`.
"""

import functools as _functools
import re as _re

import numpy as _np

from ..core import primal
from ._api import NO_VALUE
from .shaping import (
    asarray, astype, broadcast_to, getitem, is_traced, moveaxis, ndim, reshape, shape, stack,
    transpose,
)

__all__ = ["apply_along_axis", "vectorize"]


def _dtype(x):
    return _np.asarray(primal(x)).dtype


def _stacked(results, lead_shape, dtype):
    """The results (each of one shape) stacked with `lead_shape` in front, in `dtype`."""
    results = [astype(asarray(r), dtype) for r in results]
    if not any(is_traced(r) for r in results):
        out = _np.stack([_np.asarray(r) for r in results])
    else:
        out = stack(results)
    return reshape(out, tuple(lead_shape) + shape(results[0]))


# --- apply_along_axis ---------------------------------------------------------------------


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """NumPy's `apply_along_axis`: `func1d(slice, *args, **kwargs)` on every 1-D slice of
    `arr` along `axis`; the results (scalars or arrays, all of one shape) take the place of
    that axis. Differentiable through whatever fgrad operations `func1d` uses (in `arr`, and
    in traced values it closes over or is given in `args`).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sum(fnp.apply_along_axis(lambda r: r[0] * r[1], 1, x))
    >>> fgrad.grad(f)(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[2., 1.],
           [4., 3.]])
    """
    arr = asarray(arr)
    nd = ndim(arr)
    if not isinstance(axis, (int, _np.integer)) or not -nd <= axis < nd:
        raise ValueError(f"apply_along_axis: axis {axis!r} is out of bounds for an array with "
                         f"{nd} dimensions")
    axis = int(axis) % nd
    rows = moveaxis(arr, axis, -1)
    outer = shape(rows)[:-1]
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [func1d(getitem(rows, ind), *args, **kwargs) for ind in _np.ndindex(*outer)]
    res_shape = _np.shape(primal(results[0]))
    for r in results[1:]:
        if _np.shape(primal(r)) != res_shape:
            raise ValueError(f"apply_along_axis: func1d returned results of shapes {res_shape} "
                             f"and {_np.shape(primal(r))}; NumPy needs one shape")
    # NumPy writes every result into an array of the first one's dtype
    out = _stacked(results, outer, _dtype(results[0]))
    k = len(res_shape)
    n_out = len(outer) + k
    order = list(range(axis)) + list(range(n_out - k, n_out)) + list(range(axis, n_out - k))
    return transpose(out, order) if order != list(range(n_out)) else out


# --- vectorize ----------------------------------------------------------------------------

_DIMENSION = r"\w+"
_CORE = rf"\((?:{_DIMENSION}(?:,\s*{_DIMENSION})*)?\)"
_CORES = rf"{_CORE}(?:,\s*{_CORE})*"
_SIGNATURE = rf"^\s*{_CORES}\s*->\s*{_CORES}\s*$"


def _parse_signature(signature):
    """'(m,n),(n)->(m)' as ([('m', 'n'), ('n',)], [('m',)])."""
    if not _re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = signature.split("->")
    parse = lambda part: [tuple(_re.findall(_DIMENSION, core))  # noqa: E731
                          for core in _re.findall(_CORE, part)]
    return parse(ins), parse(outs)


class vectorize:
    """NumPy's `vectorize`: `pyfunc` applied to each element (or, with a gufunc `signature`
    such as '(n),(n)->()', to each core slice) of its broadcast arguments. Applied to traced
    values, `pyfunc` receives traced elements, so whatever fgrad operations it uses are
    differentiated. `otypes`, `excluded`, `cache` and the decorator form
    (`@vectorize(otypes=[float])`) are NumPy's.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = fnp.vectorize(lambda x, y: x * y if x > 0 else y)
    >>> fgrad.grad(lambda x: fnp.sum(f(x, 3.0)))(np.array([-1.0, 2.0]))
    array([0., 3.])
    """

    def __init__(self, pyfunc=NO_VALUE, otypes=None, doc=None, excluded=None, cache=False,
                 signature=None):
        if pyfunc is not NO_VALUE and not callable(pyfunc):
            raise TypeError("When used as a decorator, only accepts keyword arguments.")
        self.pyfunc = pyfunc
        self.cache = cache
        self.signature = signature
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)
        self._doc = doc
        if pyfunc is not NO_VALUE:
            _functools.update_wrapper(self, pyfunc, assigned=("__name__", "__qualname__"),
                                      updated=())
        if isinstance(otypes, str):
            for char in otypes:
                if char not in _np.typecodes["All"]:
                    raise ValueError(f"Invalid otype specified: {char}")
            otypes = [_np.dtype(char) for char in otypes]
        elif otypes is not None:
            try:
                otypes = [_np.dtype(t) for t in otypes]
            except TypeError:
                raise ValueError("Invalid otype specification") from None
        self.otypes = otypes
        self.excluded = set() if excluded is None else set(excluded)
        self._cores = None if signature is None else _parse_signature(signature)

    def __call__(self, *args, **kwargs):
        if self.pyfunc is NO_VALUE:  # the decorator form: @vectorize(otypes=...)
            (pyfunc,) = args
            self.pyfunc = pyfunc
            _functools.update_wrapper(self, pyfunc, assigned=("__name__", "__qualname__"),
                                      updated=())
            if self._doc is None:
                self.__doc__ = pyfunc.__doc__
            return self
        positions = [i for i in range(len(args)) if i not in self.excluded]
        names = [name for name in kwargs if name not in self.excluded]
        vectorized = [args[i] for i in positions] + [kwargs[name] for name in names]

        def func(*values):
            call_args, call_kwargs = list(args), dict(kwargs)
            for i, v in zip(positions, values):
                call_args[i] = v
            call_kwargs.update(zip(names, values[len(positions):]))
            return self.pyfunc(*call_args, **call_kwargs)

        if not vectorized:
            return func()
        if self._cores is not None:
            return self._call_with_signature(func, vectorized)
        return self._call_elementwise(func, vectorized)

    def _results(self, func, calls, n_calls):
        """The outputs of `func` on each tuple of arguments in `calls`, each as a tuple."""
        if self.otypes is None and n_calls == 0:
            raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
        out = []
        for call_args in calls:
            r = func(*call_args)
            out.append(r if isinstance(r, tuple) else (r,))
        return out

    def _output_dtypes(self, results):
        if self.otypes is not None:
            return self.otypes
        return [_np.asarray(primal(r)).dtype for r in results[0]]

    def _call_elementwise(self, func, args):
        args = [asarray(a) for a in args]
        lead = _np.broadcast_shapes(*[shape(a) for a in args])
        args = [broadcast_to(a, lead) if shape(a) != lead else a for a in args]
        indices = list(_np.ndindex(*lead))
        results = self._results(func, ([getitem(a, i) for a in args] for i in indices),
                                len(indices))
        return self._assemble(results, lead)

    def _assemble(self, results, lead):
        if not results:  # size 0 with otypes
            outs = tuple(_np.zeros(lead, dtype=t) for t in self.otypes)
            return outs[0] if len(outs) == 1 else outs
        dtypes = self._output_dtypes(results)
        n_out = len(results[0])
        if len(dtypes) != n_out:
            raise ValueError(f"vectorize: pyfunc returned {n_out} outputs but otypes lists "
                             f"{len(dtypes)}")
        outs = tuple(_stacked([r[j] for r in results], lead, dtypes[j]) for j in range(n_out))
        return outs[0] if n_out == 1 else outs

    def _call_with_signature(self, func, args):
        in_cores, out_cores = self._cores
        if len(args) != len(in_cores):
            raise TypeError(f"wrong number of positional arguments: expected "
                            f"{len(in_cores)}, got {len(args)}")
        args = [asarray(a) for a in args]
        sizes, loops = {}, []
        for a, core in zip(args, in_cores):
            s = shape(a)
            if len(s) < len(core):
                raise ValueError(f"{len(core)}-dimensional argument does not have enough "
                                 f"dimensions for all core dimensions {core!r}")
            for name, n in zip(core, s[len(s) - len(core):]):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: {n} vs "
                                     f"{sizes[name]}")
            loops.append(s[:len(s) - len(core)])
        lead = _np.broadcast_shapes(*loops)
        args = [broadcast_to(a, lead + shape(a)[len(loop):]) if loop != lead else a
                for a, loop in zip(args, loops)]
        indices = list(_np.ndindex(*lead))
        results = self._results(func, ([getitem(a, i) for a in args] for i in indices),
                                len(indices))
        if results and len(results[0]) != len(out_cores):
            raise ValueError(f"wrong number of outputs from pyfunc: expected {len(out_cores)}, "
                             f"got {len(results[0])}")
        for r in results:
            for value, core in zip(r, out_cores):
                s = _np.shape(primal(value))
                if len(s) != len(core):
                    raise ValueError(f"wrong number of dimensions: expected {len(core)}, got "
                                     f"{len(s)}")
                for name, n in zip(core, s):
                    if sizes.setdefault(name, n) != n:
                        raise ValueError(f"inconsistent size for core dimension {name!r}: "
                                         f"{n} vs {sizes[name]}")
        if not results:
            if self.otypes is None:
                raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` "
                                 "is set")
            missing = [name for core in out_cores for name in core if name not in sizes]
            if missing:
                raise ValueError(f"cannot call `vectorize` with a signature including new "
                                 f"output dimensions on size 0 inputs: {missing}")
            outs = tuple(_np.zeros(lead + tuple(sizes[n] for n in core), dtype=t)
                         for core, t in zip(out_cores, self.otypes))
            return outs[0] if len(outs) == 1 else outs
        return self._assemble(results, lead)

