"""The shortcuts the core and the rules take for speed give the same gradients as the general path.

Binary elementwise rules decide at forward time (`shaping.unbroadcast_meta`) that an input
needs no unbroadcast; multiply's rules use `*` after making a list operand an array; sum's
bprop broadcasts directly when the summed axes lead. The unary functions and the operators
reach a level through `bind_one` and `bind_two`, which skip `bind`'s scan of the arguments;
the backward pass drops each tape entry as it reads it. Each case here is one a shortcut must
get right: dtypes that differ only in promotion, weakly typed Python numbers, lists, axes that
do not lead, boxes of exited levels, nested levels, and a pass run twice.
"""

import re

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.numpy.shaping import meta, unbroadcast_meta
from fgrad.reverse import ReverseLevel, backward_pass


def test_unbroadcast_meta_is_none_only_for_the_same_shape_and_dtype():
    x = np.ones(3)
    assert unbroadcast_meta(x, np.ones(3)) is None
    assert unbroadcast_meta(x, np.ones((2, 3))) == meta(x)  # broadcast: sum back
    assert unbroadcast_meta(x.astype(np.float32), np.ones(3)) == meta(x.astype(np.float32))
    assert unbroadcast_meta(2.0, np.float64(1.0)) == ((), None)  # a Python number: general path
    assert unbroadcast_meta(np.float64(2.0), np.float64(1.0)) is None
    assert unbroadcast_meta(np.float32(2.0), np.float64(1.0)) == ((), np.dtype(np.float32))
    assert unbroadcast_meta(np.float64(2.0), np.ones(3)) == ((), np.dtype(np.float64))


@pytest.mark.parametrize(
    "op", [fnp.add, fnp.subtract, fnp.multiply, fnp.divide, fnp.maximum, fnp.minimum]
)
def test_float32_input_keeps_float32_gradient_next_to_float64(op):
    x32 = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    y64 = np.float64(2.0)  # NumPy 2: a float64 scalar promotes the result to float64
    gx = fgrad.grad(lambda x: fnp.sum(op(x, y64)))(x32)
    gy = fgrad.grad(lambda y: fnp.sum(op(x32, y)))(y64)
    assert gx.dtype == np.float32 and gx.shape == (3,)
    assert np.asarray(gy).dtype == np.float64 and np.shape(gy) == ()


@pytest.mark.parametrize("op", [fnp.add, fnp.subtract, fnp.multiply, fnp.divide])
def test_python_number_operand_keeps_the_array_dtype(op):
    x32 = np.array([0.5, 1.5], dtype=np.float32)
    assert fgrad.grad(lambda x: fnp.sum(op(x, 3.0)))(x32).dtype == np.float32
    assert fgrad.grad(lambda x: fnp.sum(op(3.0, x)))(x32).dtype == np.float32


def test_multiply_by_a_list_is_a_product_for_a_scalar_input():
    # the cotangent of a 0-d result is a NumPy scalar, and numpy.float64 * list would repeat
    g = fgrad.grad(lambda x: fnp.sum(fnp.multiply(x, [1.0, 2.0])))(np.float64(3.0))
    assert float(g) == 3.0
    g = fgrad.grad(lambda y: fnp.sum(fnp.multiply([1.0, 2.0], y)))(np.float64(3.0))
    assert float(g) == 3.0
    g = fgrad.grad(lambda x: fnp.multiply(x, (2.0,))[0])(np.float64(3.0))
    assert float(g) == 2.0


def test_same_shape_binary_rules_to_second_order():
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.1, 0.4, -0.7])
    f = lambda x, y: fnp.sum(fnp.sin(x * y - x / (y + 3.0)) + fnp.maximum(x, y) + (x - y) ** 2)
    fgrad.test_util.check_grads(f, (x, y), order=2)


@pytest.mark.parametrize("axis", [None, 0, (0, 1), 1, (1, 2), -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_gradient_for_leading_and_other_axes(axis, keepdims):
    x = np.arange(24.0).reshape(2, 3, 4) / 10
    w = np.sin(np.arange(24.0)).reshape(2, 3, 4)
    f = lambda x: fnp.sum(fnp.sum(x * w, axis=axis, keepdims=keepdims) ** 2)
    fgrad.test_util.check_grads(f, (x,), order=2)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sum(x, axis=axis, keepdims=keepdims)))(x)
    np.testing.assert_array_equal(g, np.ones_like(x))


@pytest.mark.parametrize("axes", [(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 3, 1), (3, 1, 0, 2)])
@pytest.mark.parametrize("axis", [None, 0, 2, (0, 3)])
def test_sum_gradient_spreads_back_whatever_the_layout_of_the_sum(axes, axis):
    # A sum of a transposed array is laid out in the input's order (NumPy's "K"), which may be
    # neither C's nor Fortran's; a cotangent laid out as the sum is (np.cos(out) keeps its
    # layout) must still spread back to x's shape (inside, a read-only view; what the caller
    # gets is an array of its own, which it may write into)
    x = np.sin(np.arange(120.0)).reshape(2, 3, 4, 5)
    f = lambda x: fnp.sum(fnp.transpose(x, axes), axis=axis)
    out, f_vjp = fgrad.vjp(f, x)
    ct = np.cos(out)
    (g,) = f_vjp(ct)
    kept = np.expand_dims(ct, axis) if axis is not None else ct
    want = np.transpose(np.broadcast_to(kept, np.transpose(x, axes).shape), np.argsort(axes))
    np.testing.assert_array_equal(g, want)
    assert g.shape == x.shape and g.dtype == x.dtype and g.flags.writeable
    fgrad.test_util.check_grads(lambda x: fnp.sum(fnp.sin(f(x))), (x,), order=2)


def test_sum_rule_refuses_a_cotangent_of_another_shape_laid_out_alike():
    # a (5,) cotangent has the strides of the (3,) sum: the view must not read 3 of its 5
    from fgrad.numpy.shaping import _sum_vjp

    x = np.ones((3, 4))
    bprop = _sum_vjp(np.add.reduce(x, 1), x, (1,), False)
    np.testing.assert_array_equal(bprop(np.arange(3.0)), np.arange(3.0)[:, None] * x)
    with pytest.raises(ValueError):
        bprop(np.arange(5.0))


@pytest.mark.parametrize(
    "dx, dy",
    [
        ("float64", "float64"),
        ("float32", "float64"),
        ("float32", "float32"),
        ("complex128", "float64"),
    ],
)
def test_matrix_product_gradients_keep_each_input_dtype(dx, dy):
    x = (np.arange(6.0).reshape(2, 3) / 7).astype(dx)
    y = (np.arange(12.0).reshape(3, 4) / 5 - 1).astype(dy)
    loss = lambda x, y: fnp.sum(fnp.real(fnp.sin(x @ y)))
    gx, gy = fgrad.grad(loss, argnums=(0, 1))(x, y)
    ct = np.cos(x @ y)
    assert gx.dtype == x.dtype and gy.dtype == y.dtype
    assert gx.shape == x.shape and gy.shape == y.shape
    tol = 1e-5 if "float32" in (dx, dy) else 1e-13
    np.testing.assert_allclose(gx, (ct @ y.T).astype(dx), rtol=tol)
    want_y = x.T @ ct
    np.testing.assert_allclose(gy, want_y.real if dy == "float64" else want_y, rtol=tol)


def test_relu_ties_split_evenly_with_a_float_or_an_array_threshold():
    x = np.array([-1.0, 0.0, 2.0])
    g = fgrad.grad(lambda x: fnp.sum(fnp.maximum(x, 0.0)))(x)
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0])
    g = fgrad.grad(lambda x: fnp.sum(fnp.maximum(np.zeros(3), x)))(x)
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0])
    g = fgrad.grad(lambda x: fnp.sum(fnp.minimum(x, 0.0) * 2.0))(x)
    np.testing.assert_array_equal(g, [2.0, 1.0, 0.0])


@pytest.mark.parametrize(
    "f, error",
    [
        (lambda x: (x, x), "returned tuple"),
        (lambda x: "x", "value of type str"),
        (lambda x: x * np.ones(2), "shape (2,)"),
    ],
)
def test_grad_names_an_output_that_is_not_a_scalar(f, error):
    with pytest.raises(TypeError, match=re.escape(error)):
        fgrad.grad(f)(1.0)


def test_value_and_grad_of_an_output_that_does_not_depend_on_the_input():
    value, g = fgrad.value_and_grad(lambda x, y: 3.0 * y, argnums=0)(np.ones(2), np.float64(2.0))
    assert value == 6.0
    np.testing.assert_array_equal(g, np.zeros(2))
    outer = fgrad.grad(lambda y: fgrad.grad(lambda x: fnp.sum(x) * 0.0 + y * y)(np.ones(2))[0])
    assert float(outer(2.0)) == 0.0


def _box_of_an_exited_level(value):
    with ReverseLevel() as level:
        box = level.new_input(np.float64(value))
    return box  # its level has exited: it is just its value


def test_a_box_of_an_exited_level_is_its_value_for_unary_functions_and_operators():
    old = _box_of_an_exited_level(2.0)
    assert float(fgrad.grad(lambda x: x * old)(3.0)) == 2.0
    assert float(fgrad.grad(lambda x: old * x)(3.0)) == 2.0
    assert float(fgrad.grad(lambda x: old - x)(3.0)) == -1.0
    assert float(fnp.sin(old)) == np.sin(2.0)
    assert float(old + old) == 4.0


def test_a_list_holding_a_traced_value_is_an_array_for_unary_functions_and_operators():
    x0 = 0.7
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin([x, 2.0 * x])))(x0)
    assert np.isclose(g, np.cos(x0) + 2.0 * np.cos(2.0 * x0))
    g = fgrad.grad(lambda x: fnp.sum(x * [x, 1.0]))(x0)  # x^2 + x
    assert np.isclose(g, 2.0 * x0 + 1.0)
    g = fgrad.grad(lambda x: fnp.sum([x, 3.0] - x))(x0)  # (x - x) + (3 - x)
    assert np.isclose(g, -1.0)


def test_operators_between_levels_in_either_order():
    # the inner level's box and the outer level's: the inner (deeper) level processes first
    def inner(x):
        return fgrad.grad(lambda y: y * x + x * y * y)(1.5)  # x + 3x = 4x

    assert np.isclose(fgrad.grad(lambda x: inner(x) * x)(2.0), 16.0)  # d(4x^2) = 8x
    assert np.isclose(fgrad.grad(lambda x: x * inner(x))(2.0), 16.0)
    assert np.isclose(
        fgrad.grad(fgrad.grad(lambda x: fnp.sin(x) * x))(0.4), 2 * np.cos(0.4) - 0.4 * np.sin(0.4)
    )


def test_a_reused_tape_gives_the_same_cotangents_and_a_consumed_one_refuses():
    x = np.array([0.2, -0.5])
    _out, pull = fgrad.vjp(lambda x: fnp.sin(x) * x + x, x)
    first, second = pull(np.ones(2))[0], pull(np.ones(2))[0]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, np.cos(x) * x + np.sin(x) + 1.0)
    with ReverseLevel() as level:
        y = fnp.sin(level.new_input(np.float64(0.3)))
    backward_pass(level, [(y.aux, np.float64(1.0))], consume=True)
    with pytest.raises(RuntimeError, match="already run"):
        backward_pass(level, [(y.aux, np.float64(1.0))])


def test_the_unary_functions_carry_their_primitive():
    from fgrad.core import Primitive

    for fn in (fnp.sin, fnp.exp, fnp.negative, fnp.arcsinh):
        assert isinstance(fn.primitive, Primitive) and fn.__name__ == fn.primitive.name
    with pytest.raises(TypeError, match="keyword arguments"):
        fgrad.grad(lambda x: np.sin(x, dtype=np.float32))(1.0)
