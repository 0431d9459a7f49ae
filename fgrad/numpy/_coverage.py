"""What `fgrad.numpy` leaves out of NumPy's namespace on purpose, and why.

`EXCLUDED` maps each public name of `dir(numpy)` that fgrad.numpy does not mirror to the
reason of its group. The reasons: a traced value is a value, so whatever is about a file,
printing, memory, NumPy's error state or its build is about NumPy's arrays, not about
values; dates and strings have no derivative and no place in a numerical transform; the
array subclasses (`matrix`, `recarray`, masked arrays) and NumPy's submodules have no
mirror (`fgrad.numpy.linalg` and `fgrad.numpy.fft` are the two submodules that do). Names
NumPy adds later that are neither mirrored nor listed fail `tests/test_numpy_coverage.py`,
and the coverage tables of the docs (docs/_ext/fgrad_coverage.py) show these as "excluded"
with their reason, never as "missing".

`no_derivative(why)` marks a function of fgrad.numpy built from fgrad operations whose result
has no derivative (a dtype, indices from a shape, an in-place update of a plain array) for the
coverage tables, which otherwise call a composition differentiable.

Imports: nothing of fgrad.
"""

from collections.abc import Callable
from typing import TypeVar

from ._mirror import mirror

_F = TypeVar("_F", bound=Callable)

_GROUPS: dict[str, tuple[str, ...]] = {
    # reading and writing files, buffers and strings of bytes: I/O, not values (the names
    # jax.numpy has are mirrored: fgrad.numpy.input_output)
    "I/O: reads or writes files, buffers or text, not values": (
        "loadtxt",
        "savetxt",
        "savez_compressed",
        "fromregex",
        "genfromtxt",
        "memmap",
    ),
    # text of arrays and numbers: printing (array_str, array_repr and the print options,
    # which jax.numpy has, are mirrored: fgrad.numpy.input_output)
    "printing: the text of an array or a number": (
        "array2string",
        "base_repr",
        "binary_repr",
        "format_float_positional",
        "format_float_scientific",
    ),
    # where an array's bytes are: a traced value has no memory layout
    "memory layout: a traced value has no memory, strides or buffer": (
        "shares_memory",
        "may_share_memory",
        "isfortran",
        "require",
        "getbufsize",
        "setbufsize",
        "little_endian",
    ),
    # NumPy's floating-point error state is global and NumPy's (fgrad's rules run NumPy)
    "error state: NumPy's global floating-point error handling, which applies as it is": (
        "errstate",
        "geterr",
        "geterrcall",
        "seterr",
        "seterrcall",
    ),
    # dates and times: no derivative and no arithmetic fgrad traces
    "dates and times: not numbers fgrad differentiates": (
        "datetime64",
        "timedelta64",
        "datetime_as_string",
        "datetime_data",
        "busday_count",
        "busday_offset",
        "busdaycalendar",
        "is_busday",
        "isnat",
    ),
    # array subclasses and their constructors: fgrad's values are plain arrays
    "array subclasses: fgrad's values are plain arrays": (
        "matrix",
        "asmatrix",
        "bmat",
        "recarray",
        "record",
        "poly1d",
    ),
    # iterators over a NumPy array's memory or indices, and NumPy's Python-level loops
    "iterators and Python-level ufuncs: NumPy's loops over memory, not operations on values": (
        "nditer",
        "nested_iters",
        "ndenumerate",
        "ndindex",
        "flatiter",
        "broadcast",
    ),
    # submodules without a mirror (fgrad.numpy.linalg and fgrad.numpy.fft have theirs)
    "submodules without a mirror": (
        "char",
        "core",
        "ctypeslib",
        "dtypes",
        "emath",
        "exceptions",
        "f2py",
        "lib",
        "ma",
        "polynomial",
        "random",
        "rec",
        "strings",
        "testing",
        "typing",
    ),
    # NumPy's build, tests and help
    "NumPy's build, tests and help": (
        "get_include",
        "info",
        "show_config",
        "show_runtime",
        "test",
    ),
}

EXCLUDED: dict[str, str] = {name: why for why, names in _GROUPS.items() for name in names}


def no_derivative(why: str) -> Callable[[_F], _F]:
    """Mark a function whose result has no derivative, with the reason the coverage tables
    show (the gradient table declares it `Nondiff`)."""

    def mark(fn: _F) -> _F:
        fn.no_derivative = why  # type: ignore[attr-defined]
        return mirror("constant")(fn)

    return mark
