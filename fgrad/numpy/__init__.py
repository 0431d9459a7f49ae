"""`fgrad.numpy`: a differentiable mirror of NumPy.

Every name here is either differentiable (forward and reverse rules, to any order) or declared
to have no derivative (comparisons, `floor`, `zeros`, ...). A NumPy name that is not here yet
raises an AttributeError that says so, rather than silently returning an undifferentiated
result.

>>> import fgrad, fgrad.numpy as fnp
>>> float(fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2))(0.5))  # 2 sin(x) cos(x)
0.8414709848078965

Where a name lives: each family module declares its names where it makes them, each with its
kind (`fgrad.numpy._mirror`: a builder such as `as_ufunc` or `nondiff_function` declares what
it builds, `@mirror(kind)` a function written out; NumPy's own objects are re-exported as
`from numpy import pi as pi`). A family's `__all__` is read off its declarations, and the
package exports exactly those (`_export`; a name two families export fails at import). By
NumPy's reference groups:

- `elementwise`: the arithmetic operators, comparisons and logic, `where`, `clip`, and the
  unary functions the rules use (`sin`, `exp`, `sqrt`, ...); `ufuncs`: the rest of the
  floating ufuncs ("Mathematical functions": trigonometric, hyperbolic, exponents and
  logarithms, `hypot`, `fmod`, ...); `mathematical`: the ufuncs that split a float or step
  between floats (`frexp`, `modf`, `divmod`, `nextafter`, `spacing`, `i0`), with `logical_xor`
  and the constant `euler_gamma`; `bitwise`: "Bit-wise operations".
- `shaping`: shapes, broadcasting, casts, `sum` (the adjoint of broadcasting) and NumPy's
  calling conventions; `arrays`: "Array manipulation", "Sorting, searching, and counting"
  (`argmax`, `nanargmax`, `searchsorted`, ...) and the indexing functions; `manipulation`:
  more of those (`block`, `resize`, `unstack`); `indexing`: index helpers and conversions
  (`ix_`, `unravel_index`, `asanyarray`); `selection`: the routines that pick or place values
  (`choose`, `put`, `fill_diagonal`).
- `creation`: "Array creation routines" (and NumPy's own constant constructors `zeros`,
  `arange`, ...); `datatypes`: "Data type routines", the scalar types, `ndarray` and the
  constants (`pi`, `inf`, `newaxis`).
- `reductions`: `mean`, `max`, `min`, `prod`; `statistics`: "Statistics" and the sums, scans
  and nan-functions (`var`, `quantile`, `cumsum`, `nansum`), with `bincount` and `digitize`
  (NumPy lists them among its histograms); `histograms`: the histograms (`histogram`,
  `histogram2d`, `histogram_bin_edges`, ...); `sets`: "Set routines".
- `products`: the linear-algebra products of the main namespace (`matmul`, `dot`, `einsum`,
  `outer`, `vecdot`, ...); `linalg` and `fft`: the submodules of the same names.
- `signal`: convolution, differences, interpolation, `cov`/`corrcoef` and the `poly*`
  functions; `polynomials`: `roots` and `poly`; `windows`: the window functions.
- `input_output`: "Input and output" (`load`, `save`, `fromfile`, `array_str`, the print
  options), no derivative.

A NumPy function whose signature another already has is made from it (`shaping.variant`:
`nansum` from `sum`, `std` from `var`, `ifftn` from `fftn`), not written again.

The families ask `fgrad.core` which levels a value is under by module, `_core.holds_batch(x)`
(`holds_staged`, `holds_box`, `is_foreign_array`, `innermost`, `refuse_lazy` likewise): those
questions belong to the transforms, and the prefix keeps them apart from the mirror's own
tests of the same look (`shaping.is_traced`, `shaping.holds_foreign`). `elementwise` names
them directly: its value helpers (`mask_values`, `may_hold`, ...) are where a rule's
questions of that kind are answered.
"""

import types as _types
import typing as _typing

from .. import core as _core
from . import (
    _box,
    _mirror,
    arrays as _arrays,
    bitwise,
    creation as _creation,
    datatypes,
    elementwise,
    fft,
    histograms as _histograms,
    indexing,
    input_output as _input_output,
    linalg,
    manipulation as _manipulation,
    mathematical as _mathematical,
    polynomials as _polynomials,
    products,
    reductions,
    selection as _selection,
    sets,
    shaping,
    signal as _signal,
    statistics as _statistics,
    ufuncs as _ufuncs,
    windows as _windows,
)
from ._coverage import EXCLUDED as _EXCLUDED
from .shaping import _sequence_to_array  # the core's reader of lists of traced values


def _export(*modules):
    """Re-export each family module's `__all__` (its declared names); a name exported twice is
    a bug."""
    namespace = globals()
    for module in modules:
        for name in module.__all__:
            if name in namespace:
                raise ImportError(f"fgrad.numpy.{name} is defined twice ({module.__name__})")
            namespace[name] = getattr(module, name)


_export(
    elementwise,
    products,
    reductions,
    shaping,
    _ufuncs,
    _statistics,
    _arrays,
    _signal,
    _creation,
    bitwise,
    datatypes,
    indexing,
    sets,
    _mathematical,
    _windows,
    _polynomials,
    _histograms,
    _selection,
    _manipulation,
    _input_output,
)
# the names `_export` binds, as a type checker reads them (their `__all__`)
if _typing.TYPE_CHECKING:
    from .arrays import *  # noqa: F403
    from .bitwise import *  # noqa: F403
    from .creation import *  # noqa: F403
    from .datatypes import *  # noqa: F403
    from .elementwise import *  # noqa: F403
    from .histograms import *  # noqa: F403
    from .indexing import *  # noqa: F403
    from .input_output import *  # noqa: F403
    from .manipulation import *  # noqa: F403
    from .mathematical import *  # noqa: F403
    from .polynomials import *  # noqa: F403
    from .products import *  # noqa: F403
    from .reductions import *  # noqa: F403
    from .selection import *  # noqa: F403
    from .sets import *  # noqa: F403
    from .shaping import *  # noqa: F403
    from .signal import *  # noqa: F403
    from .statistics import *  # noqa: F403
    from .ufuncs import *  # noqa: F403
    from .windows import *  # noqa: F403


# A NumPy name that is not here says so, and what to do instead. (A type checker reads the
# names `_export` binds through this, as Any.)
__getattr__ = _mirror.missing_names(__name__, "numpy", page=__name__, excluded=_EXCLUDED)


# every module bound here is a family (its names are exported above) or one of the public
# submodules fft and linalg, which are not functions: none is a public name
__all__ = sorted(
    name
    for name in dir()
    if not name.startswith("_") and not isinstance(globals()[name], _types.ModuleType)
)

_box.install({name: globals()[name] for name in __all__}, {"linalg": linalg, "fft": fft})
_core.array_from_sequence = _sequence_to_array  # lists of traced values given to a primitive
