"""The systematic gradient table: what a row is, where its inputs come from, and where rows live.

Rows live in `tests/rows_<family>.py`, one file per family of names, each defining `ROWS` (a
list of `Row`) and `NONDIFF` (a list of `Nondiff`). `tests/test_gradtable.py` drives every row
through `check_grads` in both modes to order 2, runs it again in float32, and fails when a
public name has neither a row nor a `Nondiff` entry.

A row's `name` is the public name it covers, as it is spelled after `fgrad.numpy.` (`"sin"`,
`"linalg.inv"`, `"fft.rfft"`) or after `fgrad.` (`"scipy.special.erf"`); `variant` tells rows
of the same name apart (`"axis=0"`, `"operator"`).
"""

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import os
import pathlib
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

TESTS = pathlib.Path(__file__).resolve().parent

# --- domains --------------------------------------------------------------------------------------
# Values are drawn so that central differences (step 1e-4 along a random direction) never
# cross a kink, a pole or a branch cut: "apart_a" and "apart_b" lie on interleaved grids
# 0.35 apart, so `maximum(a, b)`, `max`, `sort` and `clip` never see a tie or a bound.


def draw(domain, shape, rng):
    """A float64 array (a NumPy scalar for shape ()) of values from `domain`."""
    n = int(np.prod(shape, dtype=int))
    if domain == "real":
        v = rng.uniform(-2.0, 2.0, n)
    elif domain == "positive":
        v = rng.uniform(0.5, 2.0, n)
    elif domain == "nonzero":
        v = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 2.0, n)
    elif domain == "small":  # tan, away from its poles
        v = rng.uniform(-1.0, 1.0, n)
    elif domain == "unit":  # arcsin, arccos, arctanh: inside (-1, 1), away from the ends
        v = rng.uniform(-0.8, 0.8, n)
    elif domain == "above_one":  # arccosh
        v = rng.uniform(1.2, 3.0, n)
    elif domain == "probability":  # logit, quantiles
        v = rng.uniform(0.1, 0.9, n)
    elif domain in ("apart_a", "apart_b"):
        offset = 0.0 if domain == "apart_a" else 0.35
        v = rng.permutation(n) * 0.7 - 1.4 + offset + 0.1
    else:
        raise ValueError(f"unknown domain {domain!r}")
    v = v.reshape(shape)
    return v[()] if v.ndim == 0 else v


@dataclass
class Row:
    """One checked use of a differentiable name.

    `shapes` has one shape per differentiated argument, drawn from `domains` (one domain for
    all, or one per argument). `make(rng)` replaces both when the inputs need structure (a
    positive definite matrix, sorted knots): it returns a tuple of float64 arrays.
    `promotes` marks rows whose result is float64 even for float32 inputs because a float64
    constant takes part, as NumPy would have it. `float32` is True, or the reason the float32
    run does not apply. `eps` and `tol` loosen `check_grads` for ill-conditioned functions.
    `reference` is NumPy's or SciPy's version of `fn`, for tests/test_values.py, where
    `reference(fn)` (fn read with NumPy's names) cannot give it.
    """

    name: str
    fn: Callable
    shapes: tuple = ()
    domains: tuple = ("real",)
    variant: str = ""
    make: Callable | None = None
    promotes: bool = False
    float32: object = True
    order: int = 2
    eps: float | None = None
    tol: float | None = None
    seed: int = field(default=0)
    reference: Callable | None = None

    def args(self, dtype=np.float64):
        rng = np.random.default_rng(self.seed)
        if self.make is not None:
            values = self.make(rng)
        else:
            domains = self.domains * len(self.shapes) if len(self.domains) == 1 else self.domains
            values = tuple(draw(d, s, rng) for d, s in zip(domains, self.shapes))
        return tuple(
            np.asarray(v, dtype=dtype)[()] if np.ndim(v) == 0 else np.asarray(v, dtype=dtype)
            for v in values
        )

    @functools.cached_property
    def id(self):
        # cached: collection asks for every row's id several times, and a row with `make`
        # draws its inputs to learn its shapes
        shapes = self.shapes if self.make is None else tuple(np.shape(a) for a in self.args())
        dims = "-".join("x".join(map(str, s)) or "scalar" for s in shapes)
        return f"{self.name}[{self.variant}]-{dims}" if self.variant else f"{self.name}-{dims}"


@dataclass
class Nondiff:
    """A public name declared to have no derivative. `fn(x)` applies it to a float array x
    (constructors ignore x); its result must be a constant at every level. `reference` as
    `Row.reference`."""

    name: str
    fn: Callable
    reference: Callable | None = None


def load(families=None):
    """(rows, nondiff) from every tests/rows_*.py, or the named families. While working on one
    family, `FGRAD_ROWS=core,linalg pytest tests/test_gradtable.py` loads only those."""
    if families is None and os.environ.get("FGRAD_ROWS"):
        families = os.environ["FGRAD_ROWS"].split(",")
    rows, nondiff = [], []
    paths = sorted(TESTS.glob("rows_*.py"))
    for path in paths:
        family = path.stem[len("rows_") :]
        if families is not None and family not in families:
            continue
        module = importlib.import_module(path.stem)
        rows += module.ROWS
        nondiff += getattr(module, "NONDIFF", [])
    return rows, nondiff


def _gathered(attribute, families=None):
    if families is None and os.environ.get("FGRAD_ROWS"):
        families = os.environ["FGRAD_ROWS"].split(",")
    found = {}
    for path in sorted(TESTS.glob("rows_*.py")):
        family = path.stem[len("rows_") :]
        if families is None or family in families:
            found.update(getattr(importlib.import_module(path.stem), attribute, {}))
    return found


def dask_cannot(families=None):
    """Public name -> why its rows cannot run on Dask arrays (tests/test_dask_table.py), from
    each family's `DASK_CANNOT`."""
    return _gathered("DASK_CANNOT", families)


def refused(row, transform):
    """The error message (a regular expression) with which `row`'s name refuses `transform`
    ("grad(vmap)", "jit(vmap)") by design, from its family's `REFUSED` (name -> {transform:
    (pattern, why)}); None when it must run. A refusal is a documented TypeError, checked to
    be raised, never a skip."""
    entry = _gathered("REFUSED").get(row.name, {}).get(transform)
    return None if entry is None else entry[0]


# --- sampling the product of rows and transforms ------------------------------------------------
# The table has about 2,800 rows and a dozen transforms run each; their full product is the
# slow top of the pyramid (FGRAD_FULL=1, run by .ci/run). The quick suite runs, per transform,
# the rule level in full and the compositions sampled, as JAX's JAX_NUM_GENERATED_CASES does:
#
# - every primitive the table reaches, through its hardest row (most broadcasting, then most
#   dimensions, then most elements) among the rows that apply it: its rules under that
#   transform on the shapes where a forgotten unbroadcast, transpose or axis shows. This level
#   is fixed: ties are broken by a hash of the transform and the row's id, not by the seed;
# - every public name, through FGRAD_PER_NAME rows (default 1) picked by a hash of the seed,
#   the transform and the row's id.
#
# The pick is a pure function of the seed (printed in the pytest header by tests/conftest.py,
# set with FGRAD_SEED), so every xdist worker and every rerun collects the same tests.

FULL = os.environ.get("FGRAD_FULL", "") not in ("", "0")
SEED = int(os.environ.get("FGRAD_SEED", "0"))
PER_NAME = int(os.environ.get("FGRAD_PER_NAME", "1"))


_reached = {}  # id(row) -> primitives_of(row); rows live as long as the session


def primitives_of(row):
    """The names of the primitives the row's untraced call applies (from fgrad's watch; about
    0.1 ms a row, so the whole table's map costs a fraction of a second at collection)."""
    if id(row) in _reached:
        return _reached[id(row)][1]
    import warnings

    from fgrad import provenance

    class Seen(provenance.Watcher):
        def __init__(self):
            self.names = set()

        def value(self, prim, args, params, ans):
            self.names.add(prim.name)

    seen = Seen()
    provenance.add_watcher(seen)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            row.fn(*row.args())
    except Exception:
        pass  # a row that raises untraced (it is a test's business to say so) reaches nothing
    finally:
        provenance.remove_watcher(seen)
    _reached[id(row)] = (row, frozenset(seen.names))  # the row is kept so its id stays its own
    return _reached[id(row)][1]


_hard = {}  # id(row) -> (row, _hardness(row))


def _hardness(row):
    """Larger for a row whose shapes make rules work harder: arguments of different shapes
    (broadcasting), then more dimensions, then more elements."""
    if id(row) not in _hard:
        shapes = [np.shape(a) for a in row.args()]
        rank = (len(set(shapes)), sum(map(len, shapes)), sum(int(np.prod(s)) for s in shapes))
        _hard[id(row)] = (row, rank)
    return _hard[id(row)][1]


def _draw(transform, row, seed=None):
    """The row's place in the seeded order of `transform`'s sample."""
    seed = SEED if seed is None else seed
    return hashlib.sha256(f"{seed}/{transform}/{row.id}".encode()).digest()


def sample(
    rows,
    transform,
    key=lambda row: row.name,
    smallest=False,
    per_name=None,
    hardest=True,
    full=None,
):
    """The rows `transform`'s test runs: all of them under FGRAD_FULL=1, else each primitive's
    hardest row and FGRAD_PER_NAME rows of each `key` (a public name by default), in the
    table's order. `transform` names the test (it seeds the pick, so each transform samples
    other rows of a name). With `smallest`, each primitive's and each name's row with the
    fewest elements instead (the seed picks among equals): for tests whose cost grows fast
    with the size (Dask's chunks, Taylor mode's nested reference) and whose hardest shapes the
    other tables already cover. `per_name` overrides FGRAD_PER_NAME (0: the primitives' rows
    only); `hardest=False` leaves the primitives' rows out (the names' rows only); `full`
    overrides FGRAD_FULL (False: the rule level even in the full run)."""
    rows = list(rows)
    per_name = PER_NAME if per_name is None else per_name
    if FULL if full is None else full:
        return rows
    chosen = set()
    by_key = {}
    for row in rows:
        by_key.setdefault(key(row), []).append(row)
    for group in by_key.values():
        if smallest:
            group = sorted(group, key=lambda r: (_hardness(r)[2], _draw(transform, r)))
        else:
            group = sorted(group, key=lambda r: _draw(transform, r))
        chosen.update(id(r) for r in group[:per_name])
    hardest_of = {}
    for row in rows if hardest else ():
        hardness = _hardness(row)
        tie = _draw(transform, row, seed=0)  # the rule level does not move with the seed
        rank = ((-hardness[2], -hardness[1]) if smallest else hardness, tie)
        for prim in primitives_of(row):
            if prim not in hardest_of or rank > hardest_of[prim][0]:
                hardest_of[prim] = (rank, row)
    chosen.update(id(row) for _, row in hardest_of.values())
    return [row for row in rows if id(row) in chosen]


def describe_sampling():
    """One line for the pytest header: how much of the product runs, and how to change it."""
    if FULL:
        return "fgrad tables: FGRAD_FULL=1, every row under every transform"
    return (
        f"fgrad tables: sampled, FGRAD_SEED={SEED}, FGRAD_PER_NAME={PER_NAME} row(s) per name "
        "and transform plus each primitive's hardest row; FGRAD_FULL=1 runs every row"
    )


# Shapes every elementwise row runs over: scalars, vectors, matrices, and pairs that broadcast
# (equal shapes, a scalar with an array, a missing leading axis, length-1 axes).
SHAPES_1 = [(), (3,), (3, 2)]
SHAPES_2 = [
    ((), ()),
    ((3,), (3,)),
    ((3, 2), (3, 2)),
    ((), (3, 2)),
    ((3, 2), (2,)),
    ((3, 1), (1, 2)),
    ((2,), ()),
]


def unary_rows(name, fn, domain="real", variant="", **kw):
    return [Row(name, fn, (s,), (domain,), variant=variant, **kw) for s in SHAPES_1]


def binary_rows(name, fn, domains=("real", "real"), variant="", **kw):
    return [Row(name, fn, pair, domains, variant=variant, **kw) for pair in SHAPES_2]


def derivatives(f, x, n, mode):
    """f', f'', ..., f^(n) at the scalar x, by nested grad (mode "rev") or nested jvp ("fwd")."""
    from fgrad import grad, jvp

    out = []
    for _ in range(n):
        f = grad(f) if mode == "rev" else (lambda g: lambda y: jvp(g, (y,), (1.0,))[1])(f)
        out.append(float(f(x)))
    return out


# --- NumPy's and SciPy's reference for a row ------------------------------------------------------
# tests/test_values.py compares every row's value with what NumPy or SciPy computes. A row's
# reference is its `fn` with every fgrad name replaced by NumPy's or SciPy's name of the same
# spelling (`fnp.sin` -> `np.sin`, `la.svd` -> `np.linalg.svd`, `norm.logpdf` ->
# `scipy.stats.norm.logpdf`): the same code object, run with translated globals, defaults
# and closure cells, so `lambda x: fnp.sum(x, axis=0) * 2` becomes
# `lambda x: np.sum(x, axis=0) * 2`. Operators and methods need nothing: on plain arrays
# they are NumPy's already. Every reference records the public names it calls, so a test can
# tell which names were compared with NumPy.


class NoReference(Exception):
    """The row calls an fgrad name NumPy and SciPy do not have (and no reference is given)."""


def public_modules():
    """(prefix, module) of every module of public names, spelled as rows name them."""
    import fgrad.numpy as fnp

    modules = [("", fnp), ("linalg.", fnp.linalg), ("fft.", fnp.fft)]
    if importlib.util.find_spec("scipy") is not None:
        import fgrad.scipy

        for sub in fgrad.scipy.SUBMODULES:
            module = importlib.import_module(f"fgrad.scipy.{sub}")
            modules.append((f"scipy.{sub}.", module))
            for name in module.__all__:  # scipy.stats.norm and its kin: modules of functions
                obj = getattr(module, name)
                if isinstance(obj, types.ModuleType):
                    modules.append((f"scipy.{sub}.{name}.", obj))
    return modules


def public_names():
    """Every public callable of fgrad's mirrors of NumPy and SciPy (module prefix + name)."""
    names = []
    for prefix, module in public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if (
                callable(obj)
                and not isinstance(obj, (type, types.ModuleType))
                and not name.startswith("_")
            ):
                names.append(prefix + name)
    return names


def numpy_object(name):
    """NumPy's or SciPy's object of a public name (`"linalg.svd"` -> `np.linalg.svd`,
    `"scipy.stats.norm.cdf"` -> `scipy.stats.norm.cdf`), or None where they have none."""
    parts = name.split(".")
    if parts[0] == "scipy":
        obj, parts = importlib.import_module(f"scipy.{parts[1]}"), parts[2:]
    else:
        obj = np
    for part in parts:
        obj = getattr(obj, part, None)
        if obj is None:
            return EXTRA_REFERENCES.get(name)
    return obj


class _NumpyIndexUpdate:
    """The reference of `fnp.at(x)[idx]`: the same update on a copy, with NumPy's
    assignment and unbuffered `ufunc.at` (repeated indices accumulate)."""

    def __init__(self, x, idx):
        self.x, self.idx = np.asarray(x), idx

    def _apply(self, ufunc, v):
        y = self.x.copy()
        ufunc.at(y, self.idx, v)
        return y

    def set(self, v):
        y = self.x.copy()
        y[self.idx] = v
        return y

    def add(self, v):
        return self._apply(np.add, v)

    def subtract(self, v):
        return self._apply(np.subtract, v)

    def multiply(self, v):
        return self._apply(np.multiply, v)

    mul = multiply

    def divide(self, v):
        return self._apply(np.divide, v)

    def power(self, v):
        return self._apply(np.power, v)

    def min(self, v):
        return self._apply(np.minimum, v)

    def max(self, v):
        return self._apply(np.maximum, v)

    def get(self):
        return self.x[self.idx]


class _NumpyAt:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _NumpyIndexUpdate(self.x, idx)


# References of public names NumPy and SciPy spell differently or do not have.
EXTRA_REFERENCES = {"at": _NumpyAt}

_recorders = []


@contextlib.contextmanager
def recording():
    """Collects, into the set it yields, the public names whose references ran inside."""
    names = set()
    _recorders.append(names)
    try:
        yield names
    finally:
        _recorders.remove(names)


class _Recorded:
    """A reference that notes the public names it stands for each time it is called."""

    def __init__(self, names, ref):
        self.names, self.ref = names, ref

    def __call__(self, *args, **kwargs):
        for names in _recorders:
            names.update(self.names)
        return self.ref(*args, **kwargs)

    def __getattr__(self, attr):
        return getattr(self.ref, attr)


class _Missing:
    """Stands for an fgrad name without a reference: using it raises NoReference."""

    def __init__(self, what):
        self.what = what

    def __call__(self, *args, **kwargs):
        raise NoReference(f"NumPy and SciPy have no counterpart of {self.what}")

    def __getattr__(self, attr):
        raise NoReference(f"NumPy and SciPy have no counterpart of {self.what}")


@functools.cache
def _table():
    """{id of a public fgrad object: (its public names, its reference, the object)}."""
    objects = {}
    for prefix, module in public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not callable(obj) or isinstance(obj, type):
                continue
            names, _ = objects.get(id(obj), ((), None))
            objects[id(obj)] = (names + (prefix + name,), obj)
    table = {}
    for key, (names, obj) in objects.items():
        # aliases (fnp.abs is fnp.absolute) share one fgrad object: every name is recorded,
        # and the reference is the first name NumPy or SciPy has
        refs = [r for r in map(numpy_object, names) if r is not None]
        table[key] = (names, _Recorded(names, refs[0]) if refs else _Missing(names[0]), obj)
    return table


@functools.cache
def _prefixes():
    """{id of a public module: its prefix ("linalg.", "scipy.stats.norm.")}."""
    return {id(module): prefix for prefix, module in public_modules()}


class _TwinModule:
    """An fgrad module seen through the reference: its names are NumPy's or SciPy's."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, attr):
        obj = getattr(self._module, attr)
        prefix = _prefixes().get(id(self._module))
        if id(obj) not in _table() and prefix is not None and _package(type(obj)) == "fgrad":
            # an fgrad object that is not a function (an index maker such as r_): NumPy's
            # object of the same name
            ref = numpy_object(prefix + attr)
            return _Missing(f"fgrad's {prefix}{attr}") if ref is None else ref
        return _translate(obj)


_twin_namespaces, _twin_functions = {}, {}


def _package(obj):
    return (getattr(obj, "__module__", None) or getattr(obj, "__name__", "")).split(".")[0]


def _translate(obj, containers=False):
    table = _table()
    if id(obj) in table and table[id(obj)][2] is obj:
        return table[id(obj)][1]
    if isinstance(obj, types.ModuleType):
        return _TwinModule(obj) if _package(obj) == "fgrad" else obj
    if isinstance(obj, types.FunctionType):
        if _package(obj) == "fgrad":  # not a public name: no counterpart
            return _Missing(f"fgrad's {obj.__module__}.{obj.__qualname__}")
        if _package(obj) in ("numpy", "scipy"):
            return obj
        return _twin_function(obj)  # a function of the tests
    if isinstance(obj, functools.partial):
        return functools.partial(
            _translate(obj.func),
            *map(_translate, obj.args),
            **{k: _translate(v) for k, v in obj.keywords.items()},
        )
    if containers and type(obj) in (tuple, list):
        return type(obj)(_translate(v) for v in obj)
    if containers and type(obj) is dict:
        return {k: _translate(v) for k, v in obj.items()}
    return obj


def _twin_globals(namespace):
    key = id(namespace)
    if key not in _twin_namespaces:
        # stored before it is filled: the functions it holds refer to it
        twin = _twin_namespaces[key] = {}
        for k, v in list(namespace.items()):
            twin[k] = (
                _translate(v)
                if isinstance(v, (types.ModuleType, types.FunctionType, functools.partial))
                else v
            )
    return _twin_namespaces[key]


def _cell(cell):
    try:
        contents = cell.cell_contents
    except ValueError:  # an empty cell
        return types.CellType()
    return types.CellType(_translate(contents, containers=True))


def _twin_function(fn):
    if fn not in _twin_functions:
        twin = types.FunctionType(
            fn.__code__,
            _twin_globals(fn.__globals__),
            fn.__name__,
            tuple(_translate(d, containers=True) for d in fn.__defaults__ or ()) or None,
            tuple(map(_cell, fn.__closure__)) if fn.__closure__ else None,
        )
        twin.__kwdefaults__ = fn.__kwdefaults__ and {
            k: _translate(v, containers=True) for k, v in fn.__kwdefaults__.items()
        }
        _twin_functions[fn] = twin
    return _twin_functions[fn]


def counterpart(name):
    """NumPy's or SciPy's function of a public name, noting its calls as `reference`'s do (for
    references written by hand, tests/rows_values.py)."""
    ref = numpy_object(name)
    if ref is None:
        raise NoReference(f"NumPy and SciPy have no counterpart of {name}")
    return _Recorded((name,), ref)


def reference(fn):
    """NumPy's and SciPy's version of `fn`: a public fgrad function's counterpart, or a
    function of the tests with every fgrad name in it replaced by its counterpart. Calling it
    raises NoReference when `fn` uses a name NumPy and SciPy do not have."""
    return _translate(fn)


def all_primitives():
    """Every primitive of the package, once, with the module that holds it: (module name,
    primitive) pairs, after importing every module that defines some."""
    from fgrad.core import NondiffPrimitive, Primitive

    for name in ("special", "linalg", "signal", "integrate", "stats", "sparse.linalg", "optimize"):
        importlib.import_module(f"fgrad.scipy.{name}")
    importlib.import_module("fgrad.solve")
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("fgrad") or module is None:
            continue
        for v in list(vars(module).values()):
            v = getattr(v, "primitive", v)
            if isinstance(v, (Primitive, NondiffPrimitive)):
                found.setdefault(id(v), (name, v))
    return list(found.values())
