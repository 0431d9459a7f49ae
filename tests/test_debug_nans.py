"""debug_nans: the first nan or inf raises FloatingPointError naming the primitive, the kind of
value (forward, cotangent, tangent), your source line, and the masked-branch trap."""

import threading
import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import core, grad, jvp, vjp


@pytest.fixture(autouse=True)
def quiet_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def masked_sqrt(x):
    return fnp.sum(fnp.where(x > 0, fnp.sqrt(x), 0.0))  # the trap


def safe_sqrt(x):
    safe = fnp.where(x > 0, x, 1.0)
    return fnp.sum(fnp.where(x > 0, fnp.sqrt(safe), 0.0))


def raised(fn, *args):
    with fgrad.debug_nans(), pytest.raises(FloatingPointError) as info:
        fn(*args)
    return str(info.value)


def test_without_the_check_the_trap_gives_nan_silently_as_in_numpy():
    g = grad(masked_sqrt)(np.array([0.0, 4.0]))
    assert np.isnan(g[0]) and g[1] == 0.25


def test_the_masked_branch_trap_in_the_backward_pass_is_named_with_the_rewrite():
    msg = raised(grad(masked_sqrt), np.array([0.0, 4.0]))
    assert "bprop of sqrt" in msg and "cotangent" in msg
    assert "test_debug_nans.py line" in msg and "fnp.where(x > 0, fnp.sqrt(x), 0.0)" in msg
    assert "masked-branch trap" in msg and "safe = fnp.where(x > 0, x, 1.0)" in msg
    assert "index (0,)" in msg


def test_the_safe_rewrite_passes_the_check_with_the_right_gradient():
    x = np.array([0.0, 4.0, -1.0])
    with fgrad.debug_nans():
        g = grad(safe_sqrt)(x)
    np.testing.assert_array_equal(g, [0.0, 0.25, 0.0])


def test_the_trap_below_zero_is_caught_in_the_forward_pass():
    msg = raised(grad(masked_sqrt), np.array([-1.0, 4.0]))
    assert msg.startswith("debug_nans: sqrt computed nan in the forward pass")
    assert "sqrt(-1.0) = nan at index (0,)" in msg and "masked-branch trap" in msg


def test_a_forward_inf_names_the_primitive_the_line_and_the_input():
    def f(x):
        y = fnp.log(x)
        return fnp.sum(y)

    msg = raised(f, np.array([1.0, 0.0]))
    assert "log computed -inf in the forward pass" in msg
    assert "y = fnp.log(x)" in msg and "log(0.0) = -inf at index (1,)" in msg


def test_inf_can_be_let_through_while_nan_still_stops():
    with fgrad.debug_nans(inf=False):
        assert fnp.log(0.0) == -np.inf
    with fgrad.debug_nans(inf=False), pytest.raises(FloatingPointError, match="nan"):
        fnp.log(-1.0)


def test_the_trap_under_higher_order_names_the_operation_inside_the_bprop():
    def f(x):
        y = fnp.sqrt(x)
        return fnp.sum(fnp.where(x > 0, y, 0.0))

    msg = raised(grad(lambda s: grad(f)(fnp.stack([s, 0.0 * s]))[0]), 1.0)
    assert "bprop of sqrt" in msg and "inside its bprop" in msg
    assert "y = fnp.sqrt(x)" in msg and "masked-branch trap" in msg


def test_a_tangent_is_reported_as_a_tangent():
    msg = raised(lambda x: jvp(masked_sqrt, (x,), (np.ones(2),)), np.array([0.0, 4.0]))
    assert "forward-mode (jvp) rule of sqrt computed inf in a tangent" in msg
    assert "masked-branch trap" in msg


def test_a_non_finite_cotangent_passed_in_is_said_to_come_from_outside():
    _, pull = vjp(fnp.sin, np.array([1.0, 2.0]))
    msg = raised(pull, np.array([np.nan, 1.0]))
    assert "cotangent it was given was not finite already" in msg


def test_a_non_finite_input_is_said_to_come_from_outside():
    msg = raised(lambda x: fnp.sin(x) * 2.0, np.array([np.inf]))
    assert "sin computed nan" in msg and "not all finite already" in msg


def test_the_check_is_off_after_the_block_even_after_an_error_and_correct_answers_are_unchanged():
    with pytest.raises(FloatingPointError):
        with fgrad.debug_nans():
            grad(masked_sqrt)(np.array([0.0]))
    assert core.watch is None
    assert np.isnan(grad(masked_sqrt)(np.array([0.0]))[0])
    x = np.linspace(0.5, 2.0, 4)
    f = lambda x: fnp.sum(fnp.tanh(x) ** 3 / x)
    with fgrad.debug_nans():
        checked = (grad(f)(x), fgrad.hessian(f)(x), jvp(f, (x,), (x,))[1])
    plain = (grad(f)(x), fgrad.hessian(f)(x), jvp(f, (x,), (x,))[1])
    for a, b in zip(checked, plain):
        np.testing.assert_array_equal(a, b)


def test_the_global_switch_and_nesting():
    previous = fgrad.set_debug_nans(True)
    try:
        assert previous == (False, True)
        with pytest.raises(FloatingPointError):
            fnp.log(0.0)
        with fgrad.debug_nans(False):
            assert fnp.log(0.0) == -np.inf
        with pytest.raises(FloatingPointError):
            fnp.log(0.0)
    finally:
        fgrad.set_debug_nans(False)
    assert fnp.log(0.0) == -np.inf


def test_the_environment_variable_turns_it_on(tmp_path):
    import subprocess
    import sys

    code = (
        "import fgrad.numpy as fnp\ntry:\n    fnp.log(0.0)\n"
        "except FloatingPointError:\n    print('raised')"
    )
    env = {"FGRAD_DEBUG_NANS": "1", "PATH": "", "PYTHONWARNINGS": "ignore"}
    import os

    env = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "raised", out.stderr


def test_custom_rules_are_checked_too():
    @fgrad.custom_vjp
    def f(x):
        return fnp.sin(x)

    f.defvjp(lambda x: (fnp.sin(x), x), lambda x, ct: (ct / (x - x),))
    msg = raised(grad(f), 1.0)
    assert "cotangent" in msg


def test_threads_see_the_process_wide_setting():
    errors = []

    def work():
        try:
            fnp.log(0.0)
        except FloatingPointError:
            errors.append(True)

    with fgrad.debug_nans():
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert errors == [True]
