"""Deep, wide and concurrent use (issue 7): a 100,000-op chain in both modes, grad nested 8
deep against closed forms, a function of 10,000 inputs in a dict, and 8 threads running
different nested transforms at once, each compared with the single-threaded result."""

import math
import sys
import threading
import time

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad import (
    checkpoint,
    custom_jvp,
    custom_vjp,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    tap_cotangent,
    value_and_grad,
    vjp,
    vmap,
)
from fgrad.core import _state

N_CHAIN = 100_000


# --- deep -----------------------------------------------------------------------------------------


def _chain(x):
    """x * a**N with N multiplications plus N additions of zero: 2N primitive applications."""
    a = 1.0 + 1e-6
    for _ in range(N_CHAIN):
        x = x * a + 0.0
    return x


@pytest.mark.parametrize("mode", ["grad", "jvp", "vjp"])
def test_a_100000_op_chain(mode):
    x = np.array([1.0, 2.0])
    t0 = time.perf_counter()
    want = (1.0 + 1e-6) ** N_CHAIN  # about e**0.1
    if mode == "grad":
        got = grad(lambda x: fnp.sum(_chain(x)))(x)
    elif mode == "jvp":
        got = jvp(_chain, (x,), (np.ones(2),))[1]
    else:
        got = vjp(_chain, x)[1](np.ones(2))[0]
    np.testing.assert_allclose(got, [want, want], rtol=1e-9)
    assert time.perf_counter() - t0 < 10.0
    assert _state.stack == []


def test_a_100000_op_chain_of_nonlinear_ops_against_a_hand_written_derivative():
    n = N_CHAIN // 2

    def f(x):
        for _ in range(n):
            x = fnp.sin(x) + 0.5 * x
        return x

    x = 0.7
    value, d = x, 1.0
    for _ in range(n):  # the chain rule by hand
        d *= math.cos(value) + 0.5
        value = math.sin(value) + 0.5 * value
    got_value, got = value_and_grad(f)(x)
    assert got_value == pytest.approx(value, rel=1e-12)
    assert got == pytest.approx(d, rel=1e-9)
    assert jvp(f, (x,), (1.0,))[1] == pytest.approx(d, rel=1e-9)


def _nest(f, n, mode):
    for _ in range(n):
        if mode == "grad":
            f = grad(f)
        else:
            f = (lambda g: lambda x: jvp(g, (x,), (1.0,))[1])(f)
    return f


@pytest.mark.parametrize("mode", ["grad", "jvp", "alternating"])
def test_nested_8_deep_against_closed_forms(mode):
    x = 0.7

    def nest(f):
        if mode != "alternating":
            return _nest(f, 8, mode)
        for k in range(8):
            f = _nest(f, 1, "grad" if k % 2 else "jvp")
        return f

    # x**10: 10!/2! x**2
    assert nest(lambda x: x**10)(x) == pytest.approx(1814400.0 * x**2, rel=1e-12)
    # sin: the 8th derivative is sin
    assert nest(fnp.sin)(x) == pytest.approx(math.sin(x), rel=1e-12)
    # exp(2x): 2**8 exp(2x)
    assert nest(lambda x: fnp.exp(2.0 * x))(x) == pytest.approx(256 * math.exp(2 * x), rel=1e-12)
    # 1/(1-x) = sum x**k: the 8th derivative is 8! / (1-x)**9
    assert nest(lambda x: 1.0 / (1.0 - x))(0.5) == pytest.approx(40320 * 2.0**9, rel=1e-12)
    assert _state.stack == []


def test_tanh_8th_derivative_against_its_polynomial():
    # d^n/dx^n tanh = P_n(tanh): P_0 = t, P_{n+1} = P_n'(t) (1 - t**2)
    p = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(8):
        p = p.deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0])
    x = 0.3
    got = _nest(fnp.tanh, 8, "grad")(x)
    assert got == pytest.approx(p(math.tanh(x)), rel=1e-9)


def test_a_function_of_10000_inputs_in_a_dict():
    n = 10_000
    rng = np.random.default_rng(0)
    keys = [f"w{i:05d}" for i in range(n)]
    params = {k: float(v) for k, v in zip(keys, rng.normal(size=n))}
    weights = {k: float(v) for k, v in zip(keys, rng.uniform(1.0, 2.0, size=n))}

    def loss(p):
        return sum(weights[k] * p[k] ** 2 for k in keys)  # one product per input

    t0 = time.perf_counter()
    g = grad(loss)(params)
    assert time.perf_counter() - t0 < 10.0
    assert isinstance(g, dict) and list(g) == sorted(keys)
    got = np.array([g[k] for k in keys])
    want = np.array([2 * weights[k] * params[k] for k in keys])
    np.testing.assert_allclose(got, want, rtol=1e-14)

    # the same through one stacked array, and in forward mode along one direction
    def loss_stacked(p):
        v = fnp.stack([p[k] for k in keys])
        return fnp.sum(np.array([weights[k] for k in keys]) * v**2)

    g2 = grad(loss_stacked)(params)
    np.testing.assert_allclose([g2[k] for k in keys], want, rtol=1e-14)
    tangent = {k: 1.0 for k in keys}
    assert jvp(loss_stacked, (params,), (tangent,))[1] == pytest.approx(want.sum(), rel=1e-12)


def test_a_wide_hessian():
    # f = sum_i sin(x_i) x_{n-1-i}: the diagonal is -sin(x_i) x_{n-1-i}, the anti-diagonal
    # cos(x_i) + cos(x_{n-1-i}) (n even, so the two never meet)
    n = 60
    x = np.linspace(0.1, 1.0, n)
    h = hessian(lambda x: fnp.sum(fnp.sin(x) * x[::-1]))(x)
    want = np.diag(-np.sin(x) * x[::-1])
    want[np.arange(n), np.arange(n)[::-1]] = np.cos(x) + np.cos(x[::-1])
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-14)


# --- concurrent -----------------------------------------------------------------------------------

_cv = custom_vjp(lambda x: fnp.sin(x) * x)
_cv.defvjp(lambda x: (fnp.sin(x) * x, x), lambda x, ct: (ct * (fnp.cos(x) * x + fnp.sin(x)),))

_cj = custom_jvp(lambda x: fnp.tanh(x))
_cj.defjvp(lambda p, t: (fnp.tanh(p[0]), (1.0 - fnp.tanh(p[0]) ** 2) * t[0]))

_block = checkpoint(lambda x: fnp.tanh(fnp.sin(x) * 1.5))


def _loss(x):
    return fnp.sum(fnp.tanh(x) ** 3 * fnp.exp(-x))


_X = np.linspace(-0.8, 0.9, 5)

JOBS = {
    "grad of grad": lambda: grad(lambda x: fnp.sum(grad(_loss)(x) ** 2))(_X),
    "jvp of grad": lambda: jvp(grad(_loss), (_X,), (np.ones(5),)),
    "jacrev": lambda: jacrev(lambda x: fnp.sin(x) * fnp.sum(x))(_X),
    "hessian": lambda: hessian(_loss)(_X),
    "custom_vjp, hessian": lambda: hessian(lambda x: fnp.sum(_cv(x)))(_X),
    "checkpoint, grad of grad": lambda: grad(
        lambda x: fnp.sum(grad(lambda x: fnp.sum(_block(x)))(x) ** 2)
    )(_X),
    "custom_jvp and tap, jacfwd of grad": lambda: jacfwd(
        grad(lambda x: fnp.sum(tap_cotangent(_cj(x), lambda ct: ct * 2.0) ** 2))
    )(_X),
    "linearize of jacrev": lambda: linearize(jacrev(_loss), _X)[1](np.ones(5)),
}


def _flat(result):
    from fgrad.tree_util import tree_leaves

    return [np.asarray(v) for v in tree_leaves(result)]


def test_8_threads_running_different_nested_transforms_at_once():
    assert len(JOBS) == 8
    reference = {name: _flat(job()) for name, job in JOBS.items()}
    repeats = 40
    barrier = threading.Barrier(len(JOBS))
    results, errors = {name: [] for name in JOBS}, []

    def worker(name, job):
        try:
            barrier.wait()
            for _ in range(repeats):
                results[name].append(_flat(job()))
                assert _state.stack == []  # this thread's own stack
        except BaseException as e:  # reported below, in the main thread
            errors.append((name, repr(e)))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, in the middle of traces
    try:
        threads = [threading.Thread(target=worker, args=item) for item in JOBS.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    for name in JOBS:
        assert len(results[name]) == repeats, name
        for got in results[name]:
            assert len(got) == len(reference[name])
            for a, b in zip(got, reference[name]):
                np.testing.assert_array_equal(a, b, err_msg=name)  # bit-identical
    assert _state.stack == []


def test_threads_sharing_one_vjp_function():
    """A vjp function made in one thread and called in 8 at once: calls do not interfere."""
    _out, f_vjp = vjp(lambda x: fnp.sin(x) * fnp.exp(x), _X)
    cts = [np.full(5, float(k)) for k in range(8)]
    want = [f_vjp(ct)[0] for ct in cts]
    got = [None] * 8
    barrier = threading.Barrier(8)

    def worker(k):
        barrier.wait()
        for _ in range(20):
            got[k] = f_vjp(cts[k])[0]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for k in range(8):
        np.testing.assert_array_equal(got[k], want[k])


def test_8_threads_splitting_vmap_batches_at_once():
    """Each thread's vmap splits its batch at a branch (the run going on with one group, NumPy's
    warnings off meanwhile): the results are the loop's, and every thread's NumPy settings are
    as they were."""
    x = np.random.default_rng(0).normal(size=(32, 5))

    def f(r):
        return fnp.sum(fnp.tanh(r) ** 2) if fnp.sum(r) > 0 else fnp.sum(fnp.sin(r))

    want = np.stack([grad(f)(r) for r in x])
    failures = []

    def worker():
        before = np.geterr()
        for _ in range(10):
            if not np.allclose(vmap(grad(f))(x), want, rtol=1e-14):
                failures.append("a wrong value")
        if np.geterr() != before:
            failures.append("NumPy's error settings changed")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
