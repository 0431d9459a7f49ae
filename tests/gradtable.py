"""The systematic gradient table: what a row is, where its inputs come from, and where rows live.

Rows live in `tests/rows_<family>.py`, one file per family of names, each defining `ROWS` (a
list of `Row`) and `NONDIFF` (a list of `Nondiff`). `tests/test_gradtable.py` drives every row
through `check_grads` in both modes to order 2, runs it again in float32, and fails when a
public name has neither a row nor a `Nondiff` entry.

A row's `name` is the public name it covers, as it is spelled after `fgrad.numpy.` (`"sin"`,
`"linalg.inv"`, `"fft.rfft"`) or after `fgrad.` (`"scipy.special.erf"`); `variant` tells rows
of the same name apart (`"axis=0"`, `"operator"`).
"""

import importlib
import os
import pathlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

TESTS = pathlib.Path(__file__).resolve().parent

# --- domains -----------------------------------------------------------------------------
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
    """

    name: str
    fn: Callable
    shapes: tuple = ()
    domains: tuple = ("real",)
    variant: str = ""
    make: Optional[Callable] = None
    promotes: bool = False
    float32: object = True
    order: int = 2
    eps: Optional[float] = None
    tol: Optional[float] = None
    seed: int = field(default=0)

    def args(self, dtype=np.float64):
        rng = np.random.default_rng(self.seed)
        if self.make is not None:
            values = self.make(rng)
        else:
            domains = self.domains * len(self.shapes) if len(self.domains) == 1 else self.domains
            values = tuple(draw(d, s, rng) for d, s in zip(domains, self.shapes))
        return tuple(np.asarray(v, dtype=dtype)[()] if np.ndim(v) == 0 else np.asarray(v, dtype=dtype)
                     for v in values)

    @property
    def id(self):
        shapes = self.shapes if self.make is None else tuple(np.shape(a) for a in self.args())
        dims = "-".join("x".join(map(str, s)) or "scalar" for s in shapes)
        return f"{self.name}[{self.variant}]-{dims}" if self.variant else f"{self.name}-{dims}"


@dataclass
class Nondiff:
    """A public name declared to have no derivative. `fn(x)` applies it to a float array x
    (constructors ignore x); its result must be a constant at every level."""

    name: str
    fn: Callable


def load(families=None):
    """(rows, nondiff) from every tests/rows_*.py, or the named families. While working on one
    family, `FGRAD_ROWS=core,linalg pytest tests/test_gradtable.py` loads only those."""
    if families is None and os.environ.get("FGRAD_ROWS"):
        families = os.environ["FGRAD_ROWS"].split(",")
    rows, nondiff = [], []
    paths = sorted(TESTS.glob("rows_*.py"))
    for path in paths:
        family = path.stem[len("rows_"):]
        if families is not None and family not in families:
            continue
        module = importlib.import_module(path.stem)
        rows += module.ROWS
        nondiff += getattr(module, "NONDIFF", [])
    return rows, nondiff


# Shapes every elementwise row runs over: scalars, vectors, matrices, and pairs that broadcast
# (equal shapes, a scalar with an array, a missing leading axis, length-1 axes).
SHAPES_1 = [(), (3,), (3, 2)]
SHAPES_2 = [((), ()), ((3,), (3,)), ((3, 2), (3, 2)), ((), (3, 2)), ((3, 2), (2,)),
            ((3, 1), (1, 2)), ((2,), ())]


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
