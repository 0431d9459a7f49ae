"""Errors show the user's code first: an exception leaving a transform carries no frame of
fgrad's files but the boundary's own, unless FGRAD_TRACEBACK_FILTERING=off."""

import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import boundary, core, provenance

FGRAD_DIR = os.path.dirname(fgrad.__file__)


def _frames(e):
    return [f.filename for f in traceback.extract_tb(e.__traceback__)]


def _fgrad_frames(e):
    return [f for f in _frames(e) if f.startswith(FGRAD_DIR)]


def _inverse_of_a_vector(x):
    return fnp.sum(fnp.linalg.inv(x))  # raises inside fgrad.numpy.linalg


CALLS = {
    "grad": lambda: fgrad.grad(_inverse_of_a_vector)(np.ones(3)),
    "vjp": lambda: fgrad.vjp(_inverse_of_a_vector, np.ones(3)),
    "jvp": lambda: fgrad.jvp(_inverse_of_a_vector, (np.ones(3),), (np.ones(3),)),
    "jacrev": lambda: fgrad.jacrev(_inverse_of_a_vector)(np.ones(3)),
    "hessian": lambda: fgrad.hessian(_inverse_of_a_vector)(np.ones(3)),
    "grad of grad": lambda: fgrad.grad(fgrad.grad(lambda x: _inverse_of_a_vector(x * x)))(1.0),
    "checkpoint": lambda: fgrad.grad(fgrad.checkpoint(_inverse_of_a_vector))(np.ones(3)),
    "make_graph": lambda: fgrad.make_graph(_inverse_of_a_vector)(np.ones(3)),
    "bad argument": lambda: fgrad.grad(lambda x: x)(np.arange(3)),
    "jit": lambda: fgrad.jit(_inverse_of_a_vector)(np.ones(3)),
    "make_record": lambda: fgrad.make_record(_inverse_of_a_vector)(np.ones(3)),
}
# the frame each keeps: the boundary's; jit's call is a method of its own (no wrapper)
KEPT = {"jit": fgrad.jitting.__file__}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_fgrad_frames_are_hidden_but_the_boundary_and_the_users_are_kept(name):
    with pytest.raises((ValueError, TypeError)) as info:
        CALLS[name]()
    e = info.value
    assert _fgrad_frames(e) == [KEPT.get(name, boundary.__file__)], _frames(e)
    assert _frames(e)[0] == __file__  # the user's line that called the transform comes first
    if name != "bad argument":
        assert _frames(e)[-1] == __file__  # ... and the user's line that raised comes last
        assert "argument 'a' has shape" in str(e)
    assert any("FGRAD_TRACEBACK_FILTERING=off" in n for n in e.__notes__)


def test_an_error_of_a_jit_replay_shows_the_users_code():
    """A replay that raises (inv of a singular matrix) runs the function eagerly, which raises
    from the user's line; jit's tracebacks kept 9 of fgrad's frames."""

    def inverse(a):
        return fnp.linalg.inv(a)  # raises on a singular matrix

    jitted = fgrad.jit(inverse)
    for _ in range(3):  # recorded, then replayed, then compiled
        jitted(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError) as info:
        jitted(np.zeros((2, 2)))
    assert _fgrad_frames(info.value) == [fgrad.jitting.__file__], _frames(info.value)
    frames = _frames(info.value)  # the call, the function's line, then NumPy's that raised
    assert frames[0] == __file__ and frames.count(__file__) == 2, frames


def test_an_exception_of_the_users_own_code_keeps_its_frames():
    def f(x):
        raise KeyError("mine")

    with pytest.raises(KeyError) as info:
        fgrad.grad(f)(1.0)
    assert _frames(info.value)[-1] == __file__ and info.value.args == ("mine",)


def test_the_switch_shows_every_frame():
    code = (
        "import numpy as np, fgrad, fgrad.numpy as fnp\n"
        "fgrad.grad(lambda x: fnp.sum(fnp.linalg.inv(x)))(np.ones(3))\n"
    )
    env = dict(os.environ, FGRAD_TRACEBACK_FILTERING="off")
    full = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    ).stderr
    env["FGRAD_TRACEBACK_FILTERING"] = "on"
    short = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    ).stderr
    assert full.count(FGRAD_DIR) > 3 and "linalg.py" in full and "api.py" in full
    assert short.count(FGRAD_DIR) == 1 and "boundary.py" in short
    assert "LinAlgError" in short and "FGRAD_TRACEBACK_FILTERING=off" in short


def test_a_failed_transform_leaves_no_watched_phase_behind():
    class Quiet(provenance.Watcher):
        pass

    with provenance.watching(Quiet()):
        with pytest.raises(ValueError):
            fgrad.grad(lambda x: fnp.sum(fgrad.checkpoint(_inverse_of_a_vector)(x)))(np.ones(3))
        assert core.phases() == []


def test_out_given_to_an_arithmetic_primitive_never_writes_into_the_users_array():
    arr = np.zeros(2)
    with pytest.raises(
        TypeError,
        match=r"fgrad.numpy.add was called on a traced value with "
        r"the keyword argument\(s\) out",
    ):
        fgrad.grad(lambda x: fnp.sum(fnp.add(x, 1.0, out=arr)))(np.ones(2))
    assert not arr.any()  # NumPy would have written 2.0 into it before any rule ran
    with pytest.raises(TypeError, match="dtype"):
        fgrad.grad(lambda x: fnp.sum(fnp.multiply(x, 2.0, dtype=np.float32)))(np.ones(2))
    # plain values: NumPy's own ufunc, with its keywords
    out = np.zeros(2)
    assert fnp.multiply(np.ones(2), 2.0, out=out) is out and out.tolist() == [2.0, 2.0]
    assert fnp.multiply(np.ones(2), 2.0, dtype=np.float32).dtype == np.float32


def test_the_users_own_valueerror_raised_from_fgrads_error_is_kept():
    """A ValueError the user raises from fgrad's TypeError (`raise ValueError(...) from e`)
    left grad, vmap and jit as fgrad's TypeError, its cause: only NumPy's "setting an array
    element with a sequence", which hides fgrad's error, is to be replaced."""

    def f(x):
        try:
            x[0] = 0.0  # refused on a traced array
        except TypeError as e:
            raise ValueError("f: bad input") from e
        return x

    for transform in (fgrad.jit, fgrad.vmap, lambda f: fgrad.grad(lambda x: fnp.sum(f(x)))):
        with pytest.raises(ValueError, match="f: bad input"):
            transform(f)(np.ones((2, 2)))
    with pytest.raises(TypeError):  # NumPy's own ValueError over fgrad's is still replaced

        def g(x):
            out = np.zeros(2)
            out[0] = x
            return out

        fgrad.grad(lambda x: fnp.sum(g(x)))(1.0)


def test_an_array_likes_own_valueerror_is_not_taken_for_a_shape_error():
    """An operand whose __array__ raised a ValueError gave "Cannot interpret ... as a data
    type" from matmul and reshape's new messages (probe EL #2); NumPy keeps the user's."""

    class Broken:
        shape = (4, 2)

        def __array__(self, dtype=None, copy=None):
            raise ValueError("backend: connection lost")

    a = np.ones((3, 4))
    for call in (
        lambda: fnp.matmul(a, Broken()),
        lambda: fgrad.grad(lambda x: fnp.sum(x @ Broken()))(a),
        lambda: fnp.reshape(Broken(), (3,)),
    ):
        with pytest.raises(ValueError, match="connection lost"):
            call()
