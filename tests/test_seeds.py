"""The worked examples of the source documents (../shared/seeds), with their printed numbers."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jacrev, jvp, value_and_grad, vjp
from fgrad.test_util import check_grads


def seed000(x1, x2):
    return fnp.sin(x1) + x1 * x2


def test_seed000_scalar_example():
    g1, g2 = grad(seed000, argnums=(0, 1))(0.5, 0.5)
    assert g1 == pytest.approx(1.37758256, abs=1e-8)  # cos(0.5) + 0.5
    assert g2 == pytest.approx(0.5)


def test_seed000_vector_example_matches_the_printed_numbers():
    x1 = np.array([0.0140, 0.5773, 0.0469])
    x2 = np.array([0.3232, 0.4903, 0.9395])
    ct = np.array([0.4948, 0.8746, 0.7076])
    _, f_vjp = vjp(seed000, x1, x2)
    g1, g2 = f_vjp(ct)
    np.testing.assert_allclose(g1, [0.65467087, 1.16167806, 1.37161212], rtol=1e-7)
    np.testing.assert_allclose(g2, [0.0069272, 0.50490658, 0.03318644], rtol=1e-6)
    np.testing.assert_allclose(g1, ct * (np.cos(x1) + x2))  # the closed form
    np.testing.assert_allclose(g2, ct * x1)


def seed001(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.sin(x2)


def test_seed001_forward_mode():
    y, dy_dx1 = jvp(seed001, (2.0, 5.0), (1.0, 0.0))
    assert y == pytest.approx(np.log(2.0) + 10.0 - np.sin(5.0))
    assert dy_dx1 == pytest.approx(1 / 2.0 + 5.0)  # 5.5
    _, dy_dx2 = jvp(seed001, (2.0, 5.0), (0.0, 1.0))
    assert dy_dx2 == pytest.approx(2.0 - np.cos(5.0))


def test_seed001_reverse_mode_agrees_with_forward():
    g1, g2 = grad(seed001, argnums=(0, 1))(2.0, 5.0)
    assert g1 == pytest.approx(5.5)
    assert g2 == pytest.approx(2.0 - np.cos(5.0))  # 1.71634
    check_grads(seed001, (2.0, 5.0), order=2)


def test_seed002_needle_graph_example():
    f = lambda v1: (fnp.exp(v1) + 1) * fnp.exp(v1)
    assert f(0.0) == 2.0
    assert grad(f)(0.0) == pytest.approx(3.0)  # 2 e^{2v} + e^v at 0
    assert grad(grad(f))(0.0) == pytest.approx(5.0)  # 4 e^{2v} + e^v at 0


def test_seed003_pytorch_autograd_examples():
    z = lambda x, y: 2 * (x**2 + y)
    gx, gy = grad(z, argnums=(0, 1))(3.0, 4.0)
    assert (gx, gy) == (pytest.approx(12.0), pytest.approx(2.0))  # 4x, 2
    M = lambda a, b: 3 * a**3 - b**2
    a, b = np.array([2.0, 3.0]), np.array([6.0, 4.0])
    _, f_vjp = vjp(M, a, b)
    ga, gb = f_vjp(np.ones(2))  # Q.backward(gradient=ones)
    np.testing.assert_allclose(ga, 9 * a**2)  # [36, 81]
    np.testing.assert_allclose(gb, -2 * b)  # [-12, -8]
    np.testing.assert_allclose(jacfwd(M)(a, b), np.diag(9 * a**2))


def softmax_loss(Z, I_y):
    """Seed 004's loss: (log(sum(exp(Z), axis=1)).sum() - (I_y * Z).sum()) / batch."""
    return (fnp.log(fnp.exp(Z).sum(axis=1)).sum() - (I_y * Z).sum()) / Z.shape[0]


def _one_hot(y, k):
    I_y = np.zeros((y.size, k))
    I_y[np.arange(y.size), y] = 1
    return I_y


def test_seed004_softmax_loss_gradient_is_softmax_minus_one_hot_over_batch():
    rng = np.random.default_rng(4)
    Z = rng.standard_normal((8, 5))
    I_y = _one_hot(rng.integers(0, 5, 8), 5)
    g = grad(softmax_loss)(Z, I_y)
    softmax = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, (softmax - I_y) / 8, rtol=1e-12)
    check_grads(lambda Z: softmax_loss(Z, I_y), (Z,), order=2)


def test_seed004_two_layer_mlp_epoch_reduces_the_loss():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 12))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)
    I_y = _one_hot(y, 3)
    params = {"W1": rng.standard_normal((12, 16)) / 4, "W2": rng.standard_normal((16, 3)) / 4}

    def loss(p, X, I_y):
        Z = fnp.maximum(X @ p["W1"], 0.0) @ p["W2"]
        return softmax_loss(Z, I_y)

    before = loss(params, X, I_y)
    for _ in range(10):  # nn_epoch: minibatches of 50, SGD
        for i in range(0, 200, 50):
            _value, g = value_and_grad(loss)(params, X[i : i + 50], I_y[i : i + 50])
            params = fgrad.tree_util.tree_map(lambda w, d: w - 0.5 * d, params, g)
    assert loss(params, X, I_y) < 0.5 * before
    Z = np.maximum(X @ params["W1"], 0) @ params["W2"]
    assert (Z.argmax(axis=1) == y).mean() > 0.85
    # Forward vs reverse Jacobian of the hidden layer, as a cross-mode check.
    h = lambda W1: fnp.tanh(X[:4] @ W1)
    np.testing.assert_allclose(jacfwd(h)(params["W1"]), jacrev(h)(params["W1"]), atol=1e-12)
