"""The first `fgrad.numpy`: one table drives every differentiable name through `check_grads`.

Each row is a function, the shapes of its differentiated arguments (scalars, vectors, matrices
and broadcasting pairs) and the domain each argument is drawn from. Every row is checked in
forward and reverse mode to order 2 in float64, and run again in float32 to check that every
rule keeps the dtype. Conventions at kinks, powers at 0, operators, attributes and indexing
forms have their own tests below the table.
"""

from dataclasses import dataclass

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jacrev, jvp, vjp
from fgrad.test_util import check_grads

# --- domains -----------------------------------------------------------------------------
# Values are drawn so that central differences (step 1e-4 along a random direction) never
# cross a kink or a pole: "apart_a" and "apart_b" lie on interleaved grids 0.35 apart, so
# `maximum(a, b)`, `max` and `clip` never see a tie or a bound.


def _draw(domain, shape, rng):
    n = int(np.prod(shape, dtype=int))
    if domain == "real":
        v = rng.uniform(-2.0, 2.0, n)
    elif domain == "positive":
        v = rng.uniform(0.5, 2.0, n)
    elif domain == "nonzero":
        v = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 2.0, n)
    elif domain == "small":  # tan, away from its poles
        v = rng.uniform(-1.0, 1.0, n)
    elif domain in ("apart_a", "apart_b"):
        offset = 0.0 if domain == "apart_a" else 0.35
        v = rng.permutation(n) * 0.7 - 1.4 + offset + 0.1
    else:
        raise ValueError(domain)
    v = v.reshape(shape)
    return v[()] if v.ndim == 0 else v


@dataclass
class Row:
    name: str
    fn: object
    shapes: tuple  # one shape per differentiated argument
    domains: tuple = ("real",)

    def args(self, dtype=np.float64, seed=0):
        rng = np.random.default_rng(seed)
        domains = self.domains * len(self.shapes) if len(self.domains) == 1 else self.domains
        return tuple(
            np.asarray(_draw(d, s, rng), dtype=dtype)[()] if s == () else _draw(d, s, rng).astype(dtype)
            for d, s in zip(domains, self.shapes)
        )

    @property
    def id(self):
        return f"{self.name}-" + "-".join("x".join(map(str, s)) or "scalar" for s in self.shapes)


SHAPES_1 = [(), (3,), (3, 2)]
# Pairs that broadcast: equal shapes, scalar with array, a missing leading axis, length-1 axes.
SHAPES_2 = [((), ()), ((3,), (3,)), ((3, 2), (3, 2)), ((), (3, 2)), ((3, 2), (2,)), ((3, 1), (1, 2)), ((2,), ())]

UNARY = [
    ("sin", fnp.sin, "real"), ("cos", fnp.cos, "real"), ("tan", fnp.tan, "small"),
    ("tanh", fnp.tanh, "real"), ("exp", fnp.exp, "real"), ("log", fnp.log, "positive"),
    ("log1p", fnp.log1p, "positive"), ("expm1", fnp.expm1, "real"), ("sqrt", fnp.sqrt, "positive"),
    ("abs", fnp.abs, "nonzero"), ("absolute", fnp.absolute, "nonzero"),
    ("negative", fnp.negative, "real"), ("neg_operator", lambda x: -x, "real"),
    ("abs_operator", lambda x: abs(x), "nonzero"),
]
BINARY = [
    ("add", fnp.add, ("real", "real")), ("subtract", fnp.subtract, ("real", "real")),
    ("multiply", fnp.multiply, ("real", "real")), ("divide", fnp.divide, ("real", "nonzero")),
    ("true_divide", fnp.true_divide, ("real", "nonzero")),
    ("power", fnp.power, ("positive", "real")),
    ("maximum", fnp.maximum, ("apart_a", "apart_b")), ("minimum", fnp.minimum, ("apart_a", "apart_b")),
    ("add_operator", lambda x, y: x + y, ("real", "real")),
    ("sub_operator", lambda x, y: x - y, ("real", "real")),
    ("mul_operator", lambda x, y: x * y, ("real", "real")),
    ("div_operator", lambda x, y: x / y, ("real", "nonzero")),
    ("pow_operator", lambda x, y: x**y, ("positive", "real")),
]

ROWS = []
ROWS += [Row(name, fn, (s,), (dom,)) for name, fn, dom in UNARY for s in SHAPES_1]
ROWS += [Row(name, fn, pair, doms) for name, fn, doms in BINARY for pair in SHAPES_2]
ROWS += [
    # constants on either side, including a NumPy array on the left (NumPy's __array_ufunc__)
    Row("rsub_constant", lambda x: 2.0 - x, ((3,),)),
    Row("rdiv_constant", lambda x: 2.0 / x, ((3,),), ("nonzero",)),
    Row("rpow_constant", lambda x: 2.0**x, ((3,),)),
    Row("pow_constant_exponent", lambda x: x**3.0, ((3, 2),)),
    Row("pow_integer_exponent", lambda x: x**2, ((3,),)),
    Row("ndarray_times_traced", lambda x: np.array([1.0, -2.0, 3.0]) * x, ((3,),)),
    Row("ndarray_minus_traced", lambda x: np.ones((2, 3)) - x, ((3,),)),
    Row("list_operand", lambda x: x * [1.0, 2.0, 3.0] + [0.5, 0.5, 0.5], ((3,),)),
    Row("list_exponent", lambda x: x ** [1.0, 2.0, 0.0], ((3,),), ("positive",)),
    # where: the condition is a constant; both branches are differentiable, with broadcasting
    Row("where", lambda x, y: fnp.where(np.array([True, False]), x, y), ((3, 2), (2,))),
    Row("where_scalar_branch", lambda x: fnp.where(np.array([True, False, True]), x, 0.0), ((3,),)),
    Row("clip", lambda x: fnp.clip(x, -0.3, 0.6), ((3, 2),), ("apart_a",)),
    Row("clip_one_sided", lambda x: fnp.clip(x, None, 0.6), ((3,),), ("apart_a",)),
    # lo and hi are drawn equal (-0.95); the bounds used are -1.45 and -0.45, away from every x
    Row("clip_traced_bounds", lambda x, lo, hi: fnp.clip(x, lo - 0.5, hi + 0.5), ((3,), (), ()), ("apart_a", "apart_b", "apart_b")),
]

# products: NumPy's rules for 1-D operands, batches, and dot's N-D contraction
ROWS += [
    Row("matmul", fnp.matmul, s) for s in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)),
                                             ((2, 2, 3), (3, 4)), ((2, 2, 3), (1, 3, 4)), ((3,), (2, 3, 4))]
]
ROWS += [Row("matmul_operator", lambda x, y: x @ y, ((2, 3), (3, 2)))]
ROWS += [
    Row("dot", fnp.dot, s) for s in [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 2)),
                                       ((2, 3), (2, 3, 4)), ((2, 2, 3), (3,))]
]
ROWS += [Row("dot_method", lambda x, y: x.dot(y), ((2, 3), (3,)))]

# reductions, with every axis form and keepdims
AXES = [None, 0, -1, (0, 1)]
for name, fn, dom in [("sum", fnp.sum, "real"), ("mean", fnp.mean, "real"), ("prod", fnp.prod, "real"),
                      ("max", fnp.max, "apart_a"), ("min", fnp.min, "apart_a"),
                      ("amax", fnp.amax, "apart_a"), ("amin", fnp.amin, "apart_a")]:
    ROWS.append(Row(name, fn, ((3,),), (dom,)))
    ROWS.append(Row(name, fn, ((),), (dom,)))
    for axis in AXES:
        for keepdims in (False, True):
            ROWS.append(Row(f"{name}[axis={axis},keepdims={keepdims}]",
                            lambda x, fn=fn, axis=axis, k=keepdims: fn(x, axis=axis, keepdims=k),
                            ((3, 2),), (dom,)))
ROWS += [
    Row("sum_method", lambda x: x.sum(axis=0), ((3, 2),)),
    Row("mean_method", lambda x: x.mean(), ((3, 2),)),
    Row("max_method", lambda x: x.max(axis=1), ((3, 2),), ("apart_a",)),
    Row("min_method", lambda x: x.min(keepdims=True), ((3, 2),), ("apart_a",)),
    Row("prod_method", lambda x: x.prod(axis=-1), ((3, 2),)),
    Row("prod_with_a_zero", lambda x: fnp.prod(x * np.array([1.0, 0.0, 1.0])), ((3,),)),
    Row("prod_with_two_zeros", lambda x: fnp.prod(x * np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), axis=0), ((3, 2),)),
]

# shape operations
ROWS += [
    Row("reshape", lambda x: fnp.reshape(x, (2, 3)), ((3, 2),)),
    Row("reshape_minus_one", lambda x: fnp.reshape(x, -1), ((3, 2),)),
    Row("reshape_method", lambda x: x.reshape(2, 3), ((3, 2),)),
    Row("transpose", fnp.transpose, ((3, 2),)),
    Row("transpose_axes", lambda x: fnp.transpose(x, (1, 2, 0)), ((2, 3, 2),)),
    Row("transpose_method", lambda x: x.transpose(0, 2, 1), ((2, 3, 2),)),
    Row("T", lambda x: x.T, ((3, 2),)),
    Row("squeeze", fnp.squeeze, ((3, 1),)),
    Row("squeeze_axis", lambda x: fnp.squeeze(x, axis=0), ((1, 3),)),
    Row("expand_dims", lambda x: fnp.expand_dims(x, 1), ((3, 2),)),
    Row("expand_dims_tuple", lambda x: fnp.expand_dims(x, (0, -1)), ((3,),)),
    Row("broadcast_to", lambda x: fnp.broadcast_to(x, (4, 3, 2)), ((3, 1),)),
    Row("broadcast_to_scalar", lambda x: fnp.broadcast_to(x, (3,)), ((),)),
    Row("stack", lambda x, y: fnp.stack([x, y]), ((3,), (3,))),
    Row("stack_axis_last", lambda x, y: fnp.stack([x, y, x], axis=-1), ((3, 2), (3, 2))),
    Row("stack_with_constant", lambda x: fnp.stack([x, np.ones(3)], axis=1), ((3,),)),
    Row("concatenate", lambda x, y: fnp.concatenate([x, y]), ((3,), (2,))),
    Row("concatenate_axis1", lambda x, y: fnp.concatenate([x, y, x], axis=1), ((3, 2), (3, 1))),
    Row("concatenate_none", lambda x, y: fnp.concatenate([x, y], axis=None), ((3, 2), (2,))),
    Row("array_of_traced", lambda x, y: fnp.array([x, 2.0 * y, x * y]), ((), ())),
    Row("ravel", fnp.ravel, ((3, 2),)),
]

# indexing: ints, slices, None, Ellipsis, integer arrays (with repeats), boolean masks
INDICES = {
    "int": 1, "negative_int": -1, "slice": slice(1, None), "reverse": slice(None, None, -1),
    "none": None, "ellipsis_int": (Ellipsis, 0), "int_array_repeats": [0, 0, 2],
    "int_array_2d": np.array([[0, 1], [2, 2]]), "mixed": ([0, 2], slice(None)),
    "two_arrays": ([0, 2, 2], [1, 0, 1]), "bool_mask": np.array([True, False, True]),
    "newaxis_slice": (slice(None), None, 0),
}
ROWS += [Row(f"getitem[{k}]", lambda x, idx=idx: x[idx], ((3, 2),)) for k, idx in INDICES.items()]
ROWS += [
    Row("getitem_scalar_of_vector", lambda x: x[2], ((3,),)),
    # fnp.at(x) is x.at for plain NumPy arrays too, which check_grads evaluates f on
    Row("at_set", lambda x, v: fnp.at(x)[1].set(v), ((3, 2),  (2,))),
    Row("at_set_array_index", lambda x, v: fnp.at(x)[[0, 2]].set(v), ((3,), ())),
    Row("at_add_repeats", lambda x, v: fnp.at(x)[[0, 0, 2]].add(v), ((3,), (3,))),
    Row("at_add_mask", lambda x, v: fnp.at(x)[np.array([True, False, True])].add(v), ((3, 2), (2,))),
]

# compositions that exercise residuals of residuals at order 2
ROWS += [
    Row("softmax_loss", lambda z: fnp.log(fnp.sum(fnp.exp(z), axis=1)).sum() - z[:, 0].sum(), ((3, 2),)),
    Row("mlp", lambda x, w: fnp.tanh(x @ w).mean(axis=0), ((3, 2), (2, 4))),
    Row("normalize", lambda x: x / fnp.sqrt(fnp.sum(x * x)), ((3,),), ("nonzero",)),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_rule_matches_finite_differences_in_both_modes_to_order_2(row):
    check_grads(row.fn, row.args(), order=2, modes=("fwd", "rev"))


# Rows whose outputs are float64 whatever the inputs: a float64 constant takes part.
_PROMOTES = {"ndarray_times_traced", "ndarray_minus_traced", "list_operand", "stack_with_constant",
             "prod_with_a_zero", "prod_with_two_zeros", "list_exponent"}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_float32_in_float32_out(row):
    args = row.args(np.float32)
    out, f_vjp = vjp(row.fn, *args)
    expected_out = np.float64 if row.name in _PROMOTES else np.float32
    assert np.result_type(out) == expected_out, f"value of {row.id} is {np.result_type(out)}"
    ct = np.ones_like(out)
    for i, g in enumerate(f_vjp(ct)):
        assert np.result_type(g) == np.float32, f"cotangent of argument {i} is {np.result_type(g)}"
        assert np.shape(g) == np.shape(args[i])
    tangents = tuple(np.ones_like(a) for a in args)
    _, t_out = jvp(row.fn, args, tangents)
    assert np.result_type(t_out) == expected_out and np.shape(t_out) == np.shape(out)


# --- non-differentiable names: constants at every level ----------------------------------

NONDIFF = [fnp.sign, fnp.floor, fnp.ceil, fnp.round, fnp.trunc, fnp.zeros_like, fnp.ones_like,
           lambda x: (x > 0.3) * 1.0, lambda x: fnp.where(x > 0, 1.0, -1.0)]


@pytest.mark.parametrize("fn", NONDIFF)
def test_non_differentiable_names_have_zero_derivatives(fn):
    x = np.array([-1.3, 0.4, 2.6])
    np.testing.assert_array_equal(jacrev(lambda x: fn(x) * 1.0)(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(jacfwd(lambda x: fn(x) * 1.0)(x), np.zeros((3, 3)))
    # ... and they pass the value through as NumPy would
    np.testing.assert_array_equal(grad(lambda x: fnp.sum(fn(x) * x))(x), fn(x) * 1.0)


# --- conventions at kinks: JAX's ---------------------------------------------------------


def _derivatives(f, x, n, mode):
    """f', f'', ..., f^(n) at x, by nested grad (rev) or nested jvp (fwd)."""
    out = []
    for _ in range(n):
        f = grad(f) if mode == "rev" else (lambda g: lambda y: jvp(g, (y,), (1.0,))[1])(f)
        out.append(float(f(x)))
    return out


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_abs_has_slope_one_at_zero_and_no_curvature(mode):
    assert _derivatives(fnp.abs, 0.0, 3, mode) == [1.0, 0.0, 0.0]
    assert _derivatives(fnp.abs, -2.0, 2, mode) == [-1.0, 0.0]


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_ties_split_the_gradient_evenly(mode):
    x = np.array([1.0, 3.0, 3.0, -2.0])
    jac = jacrev if mode == "rev" else jacfwd
    np.testing.assert_array_equal(jac(fnp.max)(x), [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(jac(fnp.min)(np.array([2.0, 2.0, 2.0])), [1 / 3] * 3)
    np.testing.assert_array_equal(jac(lambda x: fnp.max(x, axis=1))(np.array([[1.0, 1.0], [0.0, 2.0]])),
                                  [[[0.5, 0.5], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]])
    # maximum(x, y) at x == y: half to each; a tie with a constant still gives x its half
    assert grad(lambda x, y: fnp.maximum(x, y), argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert grad(lambda x: fnp.minimum(x, 1.0))(1.0) == 0.5
    assert grad(lambda x: fnp.clip(x, 0.0, 1.0))(1.0) == 0.5  # at a bound, as in JAX


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("p, expected", [
    (0.0, [0.0, 0.0, 0.0, 0.0]),
    (1.0, [1.0, 0.0, 0.0, 0.0]),
    (2.0, [0.0, 2.0, 0.0, 0.0]),
    (3.0, [0.0, 0.0, 6.0, 0.0]),
])
def test_powers_are_exact_at_zero_to_every_order(mode, p, expected):
    derivs = _derivatives(lambda x: x**p, 0.0, 4, mode)
    assert derivs == expected
    assert not np.isnan(derivs).any()


def test_power_with_a_traced_exponent_at_a_zero_base():
    # d/dy 0**y = 0 (JAX's convention), not 0 * log(0) = nan; d/dx x**y at x = 0, y = 2 is 0.
    gx, gy = grad(lambda x, y: x**y, argnums=(0, 1))(0.0, 2.0)
    assert (gx, gy) == (0.0, 0.0)
    # where y is traced, the mixed partial d2/dxdy x**y = x**(y-1) (1 + y log x) is kept exact
    assert grad(grad(lambda x, y: x**y, 0), 1)(2.0, 1.0) == pytest.approx(1 + np.log(2.0))


def test_prod_is_exact_at_zeros():
    x = np.array([0.0, 2.0, 3.0])
    np.testing.assert_array_equal(grad(fnp.prod)(x), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(jacfwd(grad(fnp.prod))(x), [[0, 3, 2], [3, 0, 0], [2, 0, 0]])


# --- attributes, queries and operators ---------------------------------------------------


def test_attributes_inside_a_transform():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, T=x.T.shape,
                    fshape=fnp.shape(x), fndim=fnp.ndim(x), fsize=fnp.size(x), len=len(x))
        return fnp.sum(x)

    grad(f)(np.ones((3, 2), np.float32))
    assert seen == dict(shape=(3, 2), ndim=2, size=6, dtype=np.float32, T=(2, 3),
                        fshape=(3, 2), fndim=2, fsize=6, len=3)


def test_comparisons_give_plain_booleans_for_control_flow():
    def f(x):
        checks = [x > 0, x >= 0, x < 0, x <= 0, x == 1.5, x != 1.5]
        assert all(type(c) in (bool, np.bool_) for c in checks)
        return x * 2.0 if x > 0 else x

    assert grad(f)(1.5) == 2.0 and grad(f)(-1.5) == 1.0


def test_iterating_over_a_traced_array_yields_differentiable_rows():
    g = grad(lambda x: sum(r * r for r in x))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [2.0, 4.0, 6.0])


def test_inputs_are_never_mutated():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x.setflags(write=False)  # a write would raise
    v = np.array([9.0, 9.0])
    g = grad(lambda x, v: fnp.sum(x.at[1].set(v) ** 2) + fnp.sum(x.at[[0, 0]].add(v)), argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(x, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(v, [9.0, 9.0])
    np.testing.assert_array_equal(g[0], 2 * x * np.array([[1.0], [0.0], [1.0]]) + 1.0)
    np.testing.assert_array_equal(g[1], 2 * v + 2.0)


def test_astype_keeps_the_gradient_in_the_input_dtype():
    x = np.array([1.0, 2.0])
    g = grad(lambda x: fnp.sum(x.astype(np.float32) ** 2))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x)
    assert grad(lambda x: fnp.sum(x.astype(int) * x))(np.array([1.7, 2.2])).tolist() == [1.0, 2.0]


def test_python_scalars_keep_the_array_dtype():
    x = np.float32(2.0)
    assert grad(lambda x: 3.0 * x**2 + 1.0 / x)(x).dtype == np.float32
    assert grad(lambda x: fnp.sum(fnp.maximum(x, 0.5) * 2))(np.ones(3, np.float32)).dtype == np.float32


def test_numpy_reductions_on_traced_values_call_the_differentiable_methods():
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(grad(lambda x: np.sum(x * x))(x), 2 * x)
    np.testing.assert_array_equal(grad(lambda x: np.mean(x, keepdims=True))(x), [1 / 3] * 3)
    np.testing.assert_array_equal(grad(lambda x: np.prod(x))(x), [8.0, 4.0, 2.0])
    np.testing.assert_array_equal(grad(lambda x: np.max(x) + np.min(x, axis=0))(x), [1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match=r"sum\(\.\.\., out=\.\.\.\) cannot write"):
        grad(lambda x: np.sum(x, out=np.zeros(())))(x)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_python_number_inputs_follow_numpy_semantics_in_rules(mode):
    # As Python floats, 0.0 ** -2.0 and 1.0 / 0.0 raise ZeroDivisionError; as NumPy, inf.
    with np.errstate(divide="ignore"):
        assert _derivatives(lambda x: x**-1.0, 0.0, 1, mode) == [-np.inf]
        assert _derivatives(fnp.log, 0.0, 1, mode) == [np.inf]
