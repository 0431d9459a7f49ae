"""Property tests: random programs built from fgrad.numpy primitives, checked against the
identities every correct set of derivative rules satisfies.

A *composite* is a short random program over one or two inputs: each step applies one op from
the tables below to the previous value (binary ops take an earlier value or a constant as the
other operand), so the programs mix broadcasting, reductions, shape changes, indexing and
products, and reuse values (which exercises the summing of cotangents). Hypothesis draws the
program, the input shapes and values, the tangents and the cotangents, and prints the program
of a failing example as readable steps (`v2 = sin(v0)`).

The properties:
1. forward and reverse mode are transposes of each other: <ct, J t> == <J^T ct, t>;
2. check_grads (central differences, both modes, order 2) passes;
3. jacfwd == jacrev;
4. all four second-order mode pairs give the same, symmetric, Hessian;
5. float32 in gives float32 derivatives out (and the float64 values, to float32 precision).

Inputs near a kink, or with huge intermediate values, are kept from the finite-difference
checks.
"""

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from fgrad.tree_util import tree_flatten

# Small arrays keep Jacobians and Hessians cheap (one pass per element): no intermediate value
# has more than MAX_SIZE elements or MAX_NDIM axes, and no axis is longer than MAX_SIDE.
MAX_SIZE = 24
MAX_NDIM = 4
MAX_SIDE = 3
MAX_STEPS = 4


def _settings(n):
    """n examples, no deadline: a Hessian of a larger program can take a tenth of a second."""
    return settings(max_examples=n, deadline=None)


def values(shape, lo=-2.0, hi=2.0):
    """Bounded float64 arrays (NaN, infinities and subnormals excluded)."""
    return hnp.arrays(
        np.float64,
        shape,
        elements=st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    )


# --- the op tables --------------------------------------------------------------------------------
#
# Each op names the domain it needs; an argument is mapped into that domain by an adapter
# that is itself made of fgrad operations, so every value of the program stays smooth and
# finite and central differences stay accurate.

DOMAINS = {
    "real": (lambda h: h, "{}"),
    "nonnegative": (lambda h: h**2, "{}**2"),  # also exercises power with a constant exponent
    "positive": (lambda h: 1.0 + h**2, "(1 + {}**2)"),  # log, sqrt, divisor, base of power
    "bounded": (fnp.tanh, "tanh({})"),  # exp and expm1 stay below e; exponents stay in (-1, 1)
}


def _min_abs(a):
    return float(np.min(np.abs(a)))


def _min_gap(a, b):
    return float(np.min(np.abs(np.asarray(a) - np.asarray(b))))


class Unary(NamedTuple):
    name: str
    fn: Callable
    domain: str
    kink: Callable | None = None  # distance of the argument from a point of non-smoothness


UNARY = [
    Unary("sin", fnp.sin, "real"),
    Unary("cos", fnp.cos, "real"),
    Unary("tanh", fnp.tanh, "real"),
    Unary("negative", fnp.negative, "real"),
    Unary("exp", fnp.exp, "bounded"),
    Unary("expm1", fnp.expm1, "bounded"),
    Unary("log", fnp.log, "positive"),
    Unary("log1p", fnp.log1p, "nonnegative"),
    Unary("sqrt", fnp.sqrt, "positive"),
    Unary("abs", fnp.abs, "real", kink=_min_abs),
]


class Binary(NamedTuple):
    name: str
    fn: Callable
    domains: tuple[str, str]
    kink: Callable | None = None


BINARY = [
    Binary("add", fnp.add, ("real", "real")),
    Binary("subtract", fnp.subtract, ("real", "real")),
    Binary("multiply", fnp.multiply, ("real", "real")),
    Binary("divide", fnp.divide, ("real", "positive")),
    Binary("maximum", fnp.maximum, ("real", "real"), kink=_min_gap),
    Binary("minimum", fnp.minimum, ("real", "real"), kink=_min_gap),
    Binary("power", fnp.power, ("positive", "bounded")),
]


def _extremum_gap(a, axis, largest):
    """How far the extremum along `axis` is from a tie with the runner-up (inf if no rival)."""
    a = np.asarray(a)
    axes = (
        tuple(range(a.ndim))
        if axis is None
        else tuple(ax % a.ndim for ax in (axis if isinstance(axis, tuple) else (axis,)))
    )
    rest = [i for i in range(a.ndim) if i not in axes]
    n = math.prod(a.shape[i] for i in axes)
    if n < 2:
        return math.inf
    grouped = np.sort(np.transpose(a, rest + list(axes)).reshape(-1, n), axis=-1)
    top = grouped[:, -2:] if largest else grouped[:, :2]
    return float(np.min(np.abs(top[:, 1] - top[:, 0])))


class Reduction(NamedTuple):
    name: str
    fn: Callable
    kink: Callable | None = None  # (value, axis) -> distance from a tie


REDUCTIONS = [
    Reduction("sum", fnp.sum),
    Reduction("mean", fnp.mean),
    Reduction("prod", fnp.prod),
    Reduction("max", fnp.max, kink=lambda a, axis: _extremum_gap(a, axis, largest=True)),
    Reduction("min", fnp.min, kink=lambda a, axis: _extremum_gap(a, axis, largest=False)),
]


# --- composites -----------------------------------------------------------------------------------


class Step(NamedTuple):
    text: str  # e.g. "maximum(v2, c0)", for the report of a failing example
    fn: Callable  # applied to the values named by `inputs`
    inputs: tuple[int, ...]  # indices into the values computed so far (inputs first)
    kink: Callable | None = None  # plain input values -> distance from a kink


class Composite:
    """A random program; calling it runs the steps, the last value is the result."""

    def __init__(self, arg_shapes, steps, shapes, constants):
        self.arg_shapes = arg_shapes
        self.steps = steps
        self.out_shape = shapes[-1]
        self.constants = constants

    def __call__(self, *args):
        vals = list(args)
        for step in self.steps:
            vals.append(step.fn(*[vals[i] for i in step.inputs]))
        return vals[-1]

    def trace(self, *args):
        """Run on plain inputs: [(step, its input values, its output value)] for every step."""
        vals, out = list(args), []
        for step in self.steps:
            ins = [vals[i] for i in step.inputs]
            vals.append(np.asarray(step.fn(*ins)))
            out.append((step, ins, vals[-1]))
        return out

    def kink_margin(self, *args):
        """The smallest distance of any non-smooth op (abs, maximum, max, ...) from its kink
        at these plain inputs: central differences are only meaningful well away from it."""
        return min([s.kink(*ins) for s, ins, _ in self.trace(*args) if s.kink], default=math.inf)

    def largest_value(self, *args):
        return max(float(np.max(np.abs(v), initial=0)) for _, _, v in self.trace(*args))

    def __repr__(self):
        n = len(self.arg_shapes)
        head = ", ".join(f"v{i}: {s}" for i, s in enumerate(self.arg_shapes))
        lines = [f"v{n + k} = {s.text}" for k, s in enumerate(self.steps)]
        lines += [f"c{k} = {c!r}" for k, c in enumerate(self.constants)]
        return f"Composite({head} -> {self.out_shape})\n  " + "\n  ".join(lines)


class _Builder:
    """Draws the steps of a composite one at a time, tracking the shape of every value."""

    def __init__(self, draw, arg_shapes, dtype):
        self.draw = draw
        self.dtype = dtype
        self.arg_shapes = arg_shapes
        self.shapes = list(arg_shapes)
        self.steps = []
        self.constants = []

    @property
    def cur(self):
        return len(self.shapes) - 1

    @property
    def shape(self):
        return self.shapes[-1]

    def add(self, text, fn, inputs, out_shape, kink=None):
        self.steps.append(Step(text, fn, tuple(inputs), kink))
        self.shapes.append(tuple(out_shape))

    def add_mixed(self, text, op, operands, out_shape, kink=None):
        """A step applying `op` to `operands`, each an earlier value (its index) or a constant
        (an array, which the step closes over)."""
        inputs = sorted({o for o in operands if isinstance(o, int)})

        def args(xs):
            return [xs[inputs.index(o)] if isinstance(o, int) else o for o in operands]

        self.add(
            text,
            lambda *xs: op(*args(xs)),
            inputs,
            out_shape,
            None if kink is None else (lambda *xs: kink(*args(xs))),
        )

    def name(self, operand):
        if isinstance(operand, int):
            return f"v{operand}"
        return next(f"c{k}" for k, c in enumerate(self.constants) if c is operand)

    def constant(self, shape):
        """A constant operand, in the program's dtype so that float32 programs stay float32."""
        c = self.draw(values(shape)).astype(self.dtype)
        self.constants.append(c)
        return c

    def fits(self, shape):
        return math.prod(shape) <= MAX_SIZE and len(shape) <= MAX_NDIM

    # One method per family of ops; each returns False when it does not apply to the shape.

    def unary(self):
        op = self.draw(st.sampled_from(UNARY))
        adapt, fmt = DOMAINS[op.domain]
        kink = None if op.kink is None else (lambda h: op.kink(adapt(h)))
        self.add(
            f"{op.name}({fmt.format(f'v{self.cur}')})",
            lambda h: op.fn(adapt(h)),
            [self.cur],
            self.shape,
            kink,
        )
        return True

    def binary(self, first=None, second=None):
        """`first op second`; by default the current value on a random side and, on the other,
        an earlier value (so values are reused) or a constant of a broadcastable shape."""
        op = self.draw(st.sampled_from(BINARY))
        if first is None:
            partners = [i for i, s in enumerate(self.shapes) if self._broadcasts(self.shape, s)]
            if self.draw(st.booleans()):
                other = self.draw(st.sampled_from(partners))  # never empty: cur is one
            else:
                other = self.constant(
                    self.draw(
                        hnp.broadcastable_shapes(
                            self.shape, max_dims=MAX_NDIM, max_side=MAX_SIDE
                        ).filter(lambda s: self._broadcasts(self.shape, s))
                    )
                )
            first, second = (self.cur, other) if self.draw(st.booleans()) else (other, self.cur)
        (fx, tx), (fy, ty) = DOMAINS[op.domains[0]], DOMAINS[op.domains[1]]
        shapes = [self.shapes[o] if isinstance(o, int) else o.shape for o in (first, second)]
        self.add_mixed(
            f"{op.name}({tx.format(self.name(first))}, {ty.format(self.name(second))})",
            lambda x, y: op.fn(fx(x), fy(y)),
            [first, second],
            np.broadcast_shapes(*shapes),
            None if op.kink is None else (lambda x, y: op.kink(fx(x), fy(y))),
        )
        return True

    def _broadcasts(self, a, b):
        try:
            return self.fits(np.broadcast_shapes(a, b))
        except ValueError:
            return False

    def reduction(self, axis_none=False):
        op = self.draw(st.sampled_from(REDUCTIONS))
        nd = len(self.shape)
        if axis_none or nd == 0:
            axis = None
        else:
            axis = self.draw(
                st.one_of(
                    st.none(),
                    st.integers(-nd, nd - 1),
                    st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(
                        tuple
                    ),
                )
            )
        keepdims = False if axis_none else self.draw(st.booleans())
        out = np.empty(self.shape)
        out_shape = np.sum(out, axis=axis, keepdims=keepdims).shape
        kink = None if op.kink is None else (lambda a: op.kink(a, axis))
        self.add(
            f"{op.name}(v{self.cur}, axis={axis}, keepdims={keepdims})",
            lambda h: op.fn(h, axis=axis, keepdims=keepdims),
            [self.cur],
            out_shape,
            kink,
        )
        return True

    def reshape(self):
        size = math.prod(self.shape)
        targets = [s for s in _factorizations(size) if s != self.shape]
        if not targets:
            return False
        target = self.draw(st.sampled_from(targets))
        if target and self.draw(st.booleans()):  # NumPy's -1 for one inferred length
            k = self.draw(st.integers(0, len(target) - 1))
            spec = target[:k] + (-1,) + target[k + 1 :]
        else:
            spec = target
        self.add(
            f"reshape(v{self.cur}, {spec})", lambda h: fnp.reshape(h, spec), [self.cur], target
        )
        return True

    def transpose(self):
        nd = len(self.shape)
        if nd < 2:
            return False
        axes = self.draw(st.one_of(st.none(), st.permutations(range(nd)).map(tuple)))
        out_shape = self.shape[::-1] if axes is None else tuple(self.shape[a] for a in axes)
        self.add(
            f"transpose(v{self.cur}, {axes})",
            lambda h: fnp.transpose(h, axes),
            [self.cur],
            out_shape,
        )
        return True

    def expand_dims(self):
        nd = len(self.shape)
        if nd >= MAX_NDIM:
            return False
        axis = self.draw(st.integers(-nd - 1, nd))
        self.add(
            f"expand_dims(v{self.cur}, {axis})",
            lambda h: fnp.expand_dims(h, axis),
            [self.cur],
            np.expand_dims(np.empty(self.shape), axis).shape,
        )
        return True

    def squeeze(self):
        ones = [i for i, n in enumerate(self.shape) if n == 1]
        if not ones:
            return False
        axis = self.draw(st.one_of(st.none(), st.sampled_from(ones)))
        self.add(
            f"squeeze(v{self.cur}, {axis})",
            lambda h: fnp.squeeze(h, axis),
            [self.cur],
            np.squeeze(np.empty(self.shape), axis).shape,
        )
        return True

    def broadcast_to(self):
        nd = len(self.shape)
        lead = self.draw(st.lists(st.integers(1, MAX_SIDE), max_size=MAX_NDIM - nd))
        grown = [self.draw(st.integers(1, MAX_SIDE)) if n == 1 else n for n in self.shape]
        target = tuple(lead) + tuple(grown)
        if target == self.shape or not self.fits(target):
            return False
        self.add(
            f"broadcast_to(v{self.cur}, {target})",
            lambda h: fnp.broadcast_to(h, target),
            [self.cur],
            target,
        )
        return True

    def stack(self):
        """Stack the current value with 1 or 2 more: earlier values of its shape or constants."""
        nd = len(self.shape)
        n_more = self.draw(st.integers(1, 2))
        if nd >= MAX_NDIM or not self.fits((n_more + 1,) + self.shape):
            return False
        same = [i for i, s in enumerate(self.shapes) if s == self.shape]
        parts = [self.cur]
        for _ in range(n_more):
            parts.append(self.draw(st.sampled_from(same)) if self.draw(st.booleans()) else None)
        axis = self.draw(st.integers(-nd - 1, nd))
        self._join(
            "stack",
            fnp.stack,
            parts,
            [self.shape] * len(parts),
            axis,
            np.stack([np.empty(self.shape)] * len(parts), axis).shape,
        )
        return True

    def concatenate(self):
        nd = len(self.shape)
        if nd == 0:
            return False
        axis = self.draw(st.integers(-nd, nd - 1))
        shapes = [self.shape]
        parts = [self.cur]
        # An earlier value that matches off the axis, or a constant with its own length on it.
        matching = [
            i
            for i, s in enumerate(self.shapes)
            if len(s) == nd
            and all(a == b for k, (a, b) in enumerate(zip(s, self.shape)) if k != axis % nd)
        ]
        if self.draw(st.booleans()):
            parts.append(self.draw(st.sampled_from(matching)))
            shapes.append(self.shapes[parts[-1]])
        else:
            parts.append(None)
            s = list(self.shape)
            s[axis] = self.draw(st.integers(1, MAX_SIDE))
            shapes.append(tuple(s))
        if self.draw(st.booleans()):
            parts.reverse()
            shapes.reverse()
        out_shape = np.concatenate([np.empty(s) for s in shapes], axis).shape
        if not self.fits(out_shape):
            return False
        self._join("concatenate", fnp.concatenate, parts, shapes, axis, out_shape)
        return True

    def _join(self, name, join, parts, shapes, axis, out_shape):
        """`join([...], axis)` where None in `parts` is a fresh constant of the given shape."""
        parts = [self.constant(s) if p is None else p for p, s in zip(parts, shapes)]
        self.add_mixed(
            f"{name}([{', '.join(self.name(p) for p in parts)}], axis={axis})",
            lambda *xs: join(list(xs), axis=axis),
            parts,
            out_shape,
        )

    def index(self):
        nd = len(self.shape)
        if nd == 0:
            return False
        kind = self.draw(st.sampled_from(["slices", "int array", "mask", "mask on axis 0"]))
        if kind == "slices":
            idx = tuple(self.draw(_slices(n)) for n in self.shape)
            if self.draw(st.booleans()):  # an integer drops one axis
                k = self.draw(st.integers(0, nd - 1))
                n = self.shape[k]
                idx = idx[:k] + (self.draw(st.integers(-n, n - 1)),) + idx[k + 1 :]
        elif kind == "int array":  # repeats allowed: their cotangents must add up
            k = self.draw(st.integers(0, nd - 1))
            n = self.shape[k]
            picks = self.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=4))
            idx = (slice(None),) * k + (np.array(picks),)
        else:
            mask_shape = self.shape if kind == "mask" else self.shape[:1]
            idx = self.draw(hnp.arrays(bool, mask_shape))
            idx.flat[self.draw(st.integers(0, idx.size - 1))] = True  # never an empty result
        out_shape = np.empty(self.shape)[idx].shape
        if math.prod(out_shape) == 0:
            return False
        self.add(f"v{self.cur}[{_show_index(idx)}]", lambda h: h[idx], [self.cur], out_shape)
        return True

    def product(self):
        """matmul and dot of the current value with a constant, or with itself (x @ x.T)."""
        s, nd, x = self.shape, len(self.shape), self.cur
        if nd == 0:
            return False
        kind = self.draw(st.sampled_from(["x @ c", "c @ x", "x @ x.T", "dot(x, c)"]))
        k = self.draw(st.integers(1, MAX_SIDE))
        if kind == "x @ x.T":  # both operands traced
            if nd == 1:
                self.add(f"dot(v{x}, v{x})", lambda h: fnp.dot(h, h), [x], ())
                return True
            out_shape = s[:-1] + s[-2:-1]
            if not self.fits(out_shape):
                return False
            self.add(
                f"matmul(v{x}, swapaxes(v{x}, -1, -2))",
                lambda h: fnp.matmul(h, fnp.swapaxes(h, -1, -2)),
                [x],
                out_shape,
            )
            return True
        if kind == "x @ c":  # c may be a vector, a matrix, or a batch of matrices
            batch = (2,) if nd <= 2 else s[:-2]
            c_shape = self.draw(st.sampled_from([(s[-1],), (s[-1], k), batch + (s[-1], k)]))
            out_shape = np.matmul(np.empty(s), np.empty(c_shape)).shape
        elif kind == "c @ x":
            c_shape = (k, s[-2] if nd > 1 else s[0])
            out_shape = np.matmul(np.empty(c_shape), np.empty(s)).shape
        else:  # N-D dot: contracts x's last axis with the middle axis of a 3-D c
            c_shape = (2, s[-1], k)
            out_shape = np.dot(np.empty(s), np.empty(c_shape)).shape
        if not self.fits(out_shape):
            return False
        c = self.constant(c_shape)
        if kind == "x @ c":
            self.add_mixed(f"matmul(v{x}, {self.name(c)})", fnp.matmul, [x, c], out_shape)
        elif kind == "c @ x":  # a NumPy array on the left: NumPy hands the product to fgrad
            self.add_mixed(f"{self.name(c)} @ v{x}", lambda a, b: a @ b, [c, x], out_shape)
        else:
            self.add_mixed(f"dot(v{x}, {self.name(c)})", fnp.dot, [x, c], out_shape)
        return True

    def build(self):
        return Composite(self.arg_shapes, self.steps, self.shapes, self.constants)


FAMILIES = [
    _Builder.unary,
    _Builder.binary,
    _Builder.reduction,
    _Builder.reshape,
    _Builder.transpose,
    _Builder.expand_dims,
    _Builder.squeeze,
    _Builder.broadcast_to,
    _Builder.stack,
    _Builder.concatenate,
    _Builder.index,
    _Builder.product,
]


def _factorizations(size):
    """Shapes holding `size` elements: all of them on one axis, or 2 or 3 axes of length
    at most MAX_SIDE (1 included, so reshapes also add and drop unit axes)."""
    shapes = {(size,)} if size > 1 else {(), (1,)}
    for nd in range(2, 4):
        for dims in itertools.product(range(1, MAX_SIDE + 1), repeat=nd):
            if math.prod(dims) == size:
                shapes.add(dims)
    return sorted(shapes)


def _slices(n):
    """A non-empty slice of an axis of length n (negative steps and bounds included)."""
    return st.sampled_from(
        [
            slice(None),
            slice(1, None),
            slice(None, -1),
            slice(None, None, -1),
            slice(None, None, 2),
            slice(-2, None),
            slice(None, 1),
        ]
    ).filter(lambda sl: len(range(n)[sl]) > 0)


def _show_index(idx):
    parts = idx if isinstance(idx, tuple) else (idx,)
    out = []
    for p in parts:
        if isinstance(p, slice):
            out.append(
                ":".join("" if v is None else str(v) for v in (p.start, p.stop, p.step)).rstrip(":")
                or ":"
            )
        elif isinstance(p, np.ndarray):
            out.append(f"array({p.tolist()})")
        else:
            out.append(str(p))
    return ", ".join(out)


# Input shapes: half of the draws take one of these (scalar, vector, matrix, and the
# broadcasting pairs (3,1)+(1,2) and (2,)+(3,2)); the other half are Hypothesis's own.
ARG_SHAPES = [
    ((),),
    ((3,),),
    ((3, 2),),
    ((2, 3, 1),),
    ((3, 1), (1, 2)),
    ((2,), (3, 2)),
    ((), (3,)),
    ((3, 2), (3, 2)),
]


@st.composite
def composites(draw, scalar=False, dtype=np.float64):
    """A random program over one or two inputs (of mutually broadcastable shapes when two).

    With `scalar`, the program ends with a full reduction, so `grad` and `hessian` apply.
    """
    arg_shapes = draw(
        st.one_of(
            st.sampled_from(ARG_SHAPES),
            st.integers(1, 2)
            .flatmap(
                lambda n: hnp.mutually_broadcastable_shapes(
                    num_shapes=n, max_dims=3, max_side=MAX_SIDE
                )
            )
            .filter(lambda bs: math.prod(bs.result_shape) <= MAX_SIZE)
            .map(lambda bs: bs.input_shapes),
        )
    )
    n_args = len(arg_shapes)
    b = _Builder(draw, arg_shapes, dtype)
    if n_args == 2:
        b.binary(first=0, second=1)  # both inputs always reach the output
    for _ in range(draw(st.integers(0 if n_args == 2 else 1, MAX_STEPS))):
        # Families that do not apply to the current shape decline; unary always applies.
        family = draw(st.sampled_from(FAMILIES))
        if not family(b):
            b.unary()
    if scalar and b.shape != ():
        b.reduction(axis_none=True)
    return b.build()


@st.composite
def problems(draw, scalar=False, dtype=np.float64):
    """(f, args): a composite and inputs for it."""
    f = draw(composites(scalar=scalar, dtype=dtype))
    args = tuple(draw(values(s)).astype(dtype) for s in f.arg_shapes)
    return f, args


def leaves(tree):
    return [np.asarray(x) for x in tree_flatten(tree)[0]]


def argnums(args):
    return 0 if len(args) == 1 else tuple(range(len(args)))


# --- the properties -------------------------------------------------------------------------------


@_settings(200)
@given(problems(), st.data())
def test_jvp_and_vjp_are_transposes(problem, data):
    # <ct, J t> computed by forward mode must equal <J^T ct, t> computed by reverse mode, for
    # every t and ct: each side is exact up to rounding, so the tolerance is tight.
    f, args = problem
    tangents = tuple(data.draw(values(np.shape(a)), label="tangent") for a in args)
    ct = data.draw(values(f.out_shape), label="cotangent")
    out_fwd, jt = fgrad.jvp(f, args, tangents)
    out_rev, f_vjp = fgrad.vjp(f, *args)
    jtct = f_vjp(ct)
    np.testing.assert_allclose(out_fwd, f(*args), rtol=1e-13)
    np.testing.assert_allclose(out_rev, f(*args), rtol=1e-13)
    for g, a in zip(jtct, args):
        assert np.shape(g) == np.shape(a)
    assert np.shape(jt) == f.out_shape

    fwd_terms = ct * np.asarray(jt)
    rev_terms = [g * t for g, t in zip(leaves(jtct), tangents)]
    lhs, rhs = np.sum(fwd_terms), sum(np.sum(r) for r in rev_terms)
    # Relative to the size of the terms summed, so terms that cancel do not make it flaky, and
    # to |ct| |t|: a tangent 1e-26 beside one of 1 is lost to rounding inside J t itself.
    scale = (
        np.sum(np.abs(fwd_terms))
        + sum(np.sum(np.abs(r)) for r in rev_terms)
        + np.sum(np.abs(ct)) * sum(np.sum(np.abs(t)) for t in tangents)
    )
    assert abs(lhs - rhs) <= 1e-10 * scale + 1e-300, (lhs, rhs, scale)


# Where central differences say nothing about the rules, check_grads is not asked:
# - across a kink (abs at 0, a tie of maximum or of max(...)) they disagree with any one-sided
#   rule, so kinks must be KINK_MARGIN away;
# - on a value as large as sin(4e5) the step of 1e-4 is far from small, so every intermediate
#   value must stay below LARGEST_VALUE (a handful of draws in a thousand are this large).
KINK_MARGIN = 1e-2
LARGEST_VALUE = 20.0


# prod's rule once took the product of the others as ans / x; these found it wrong for tiny x.
def test_prod_gradient_when_the_product_underflows():
    # ans = 5e-324 * 0.25 underflows to 0, so ans / x would give 0 instead of 0.5 * 0.5.
    g = fgrad.grad(fnp.prod)(np.array([5e-324, 0.5, 0.5]))
    np.testing.assert_allclose(g, [0.25, 0.0, 0.0], rtol=1e-12, atol=1e-300)


def test_prod_second_derivative_near_zero():
    # The exact Hessian of x0 * x1 * x2 has a zero diagonal; the derivative of ans / x cancels
    # two terms of size ans / x**2 and gave 4.0 at [0, 0].
    h = fgrad.jacrev(fgrad.jacrev(fnp.prod))(np.array([1e-17, 0.3, 0.7]))
    exact = [[0.0, 0.7, 0.3], [0.7, 0.0, 1e-17], [0.3, 1e-17, 0.0]]
    np.testing.assert_allclose(h, exact, rtol=1e-12, atol=1e-12)


@_settings(150)
@given(problems())
def test_check_grads_passes_to_order_2_in_both_modes(problem):
    f, args = problem
    assume(f.kink_margin(*args) > KINK_MARGIN)
    assume(f.largest_value(*args) < LARGEST_VALUE)
    check_grads(f, args, order=2, modes=("fwd", "rev"))


@_settings(150)
@given(problems())
def test_jacfwd_equals_jacrev(problem):
    f, args = problem
    fwd = fgrad.jacfwd(f, argnums(args))(*args)
    rev = fgrad.jacrev(f, argnums(args))(*args)
    fwd, rev = leaves(fwd), leaves(rev)
    assert len(fwd) == len(rev) == len(args)
    for jf, jr, a in zip(fwd, rev, args):
        assert jf.shape == jr.shape == f.out_shape + np.shape(a)  # JAX's layout
        np.testing.assert_allclose(jf, jr, rtol=1e-10, atol=1e-12 * (1 + np.abs(jr).max(initial=0)))


def _flat(f, args):
    """f as a function of one vector holding all its inputs, so its Hessian is one matrix."""
    shapes = [np.shape(a) for a in args]
    bounds = np.cumsum([0] + [math.prod(s) for s in shapes])

    def f_flat(z):
        return f(*[fnp.reshape(z[lo:hi], s) for lo, hi, s in zip(bounds[:-1], bounds[1:], shapes)])

    return f_flat, np.concatenate([np.ravel(a) for a in args])


@_settings(100)
@given(problems(scalar=True))
def test_hessian_is_the_same_in_every_mode_pair_and_symmetric(problem):
    f, z = _flat(*problem)
    h = np.asarray(fgrad.hessian(f)(z))  # jacfwd(jacrev(f))
    assert h.shape == (z.size, z.size)
    tol = dict(rtol=1e-9, atol=1e-11 * (1 + np.abs(h).max()))
    np.testing.assert_allclose(fgrad.jacrev(fgrad.jacrev(f))(z), h, **tol)
    np.testing.assert_allclose(fgrad.jacrev(fgrad.jacfwd(f))(z), h, **tol)
    np.testing.assert_allclose(fgrad.jacfwd(fgrad.jacfwd(f))(z), h, **tol)
    np.testing.assert_allclose(h, h.T, **tol)


@_settings(100)
@given(problems(scalar=True, dtype=np.float32), st.data())
def test_float32_inputs_give_float32_derivatives(problem, data):
    f, args = problem  # the program's constants are float32 too
    assert np.asarray(f(*args)).dtype == np.float32  # NumPy itself keeps float32 here
    g32 = leaves(fgrad.grad(f, argnums(args))(*args))
    for g, a in zip(g32, args):
        assert g.dtype == np.float32 and g.shape == a.shape
    tangents = tuple(data.draw(values(a.shape)).astype(np.float32) for a in args)
    _, jt = fgrad.jvp(f, args, tangents)
    assert np.asarray(jt).dtype == np.float32
    _, f_vjp = fgrad.vjp(f, *args)
    for g in leaves(f_vjp(np.float32(1.0))):
        assert g.dtype == np.float32
    # And they are the float64 gradients, to float32 precision (same constants, wider inputs),
    # unless rounding to float32 moved the input across a kink (made a tie, for instance).
    args64 = [a.astype(np.float64) for a in args]
    if f.kink_margin(*args64) > KINK_MARGIN:
        g64 = leaves(fgrad.grad(f, argnums(args))(*args64))
        for a, b in zip(g32, g64):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * (1 + np.abs(b).max()))


@_settings(60)
@given(
    st.integers(1, 4),
    hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    st.sampled_from([np.float64, np.float32, np.int64, np.complex128]),
    st.data(),
)
def test_stack_is_numpys_stack_for_every_axis_shape_and_dtype(n, shape, dtype, data):
    # fgrad.numpy.stack's implementation takes a shorter path than np.stack for arrays of one
    # shape and dtype (shaping._stack_impl): the same values, dtype, shape and memory order
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    xs = [data.draw(hnp.arrays(dtype, shape)) for _ in range(n)]
    if data.draw(st.booleans()) and shape == ():
        xs = [x[()] for x in xs]  # NumPy scalars
    got, want = fnp.stack(xs, axis=axis), np.stack(xs, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.c_contiguous == want.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
