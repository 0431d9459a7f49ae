"""fgrad at work: worked examples of first and second derivatives in both modes, a table of
higher-order derivatives, Taylor mode, the transforms side by side, and a derivative recorded
once and replayed (`jit`). Run
`python -m fgrad.demo`.

Every number printed is checked against a closed form; the demo exits non-zero if one is off.
"""

import sys
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad, vjp

_failures = []


def check(label, got, expected, tol=1e-9):
    ok = np.allclose(got, expected, rtol=tol, atol=tol)
    if not ok:
        _failures.append(label)
    mark = "ok" if ok else "MISMATCH"
    print(f"  {label:<50} {_fmt(got):<30} expected {_fmt(expected):<26} {mark}")


def _fmt(v):
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    a = np.asarray(v, dtype=float)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    text = np.array2string(
        a, precision=5, separator=", ", suppress_small=True, max_line_width=10**6
    )
    return " ".join(text.split())  # a matrix on one line keeps the table readable


def heading(text):
    print(f"\n{text}\n{'-' * len(text)}")


def worked_examples():
    heading("A gradient, and a vjp on vectors: f(x1, x2) = sin(x1) + x1*x2")
    f = lambda x1, x2: fnp.sin(x1) + x1 * x2
    check("grad f at (0.5, 0.5)", grad(f, argnums=(0, 1))(0.5, 0.5), (np.cos(0.5) + 0.5, 0.5))
    x1 = np.array([0.0140, 0.5773, 0.0469])
    x2 = np.array([0.3232, 0.4903, 0.9395])
    ct = np.array([0.4948, 0.8746, 0.7076])
    g1, g2 = vjp(f, x1, x2)[1](ct)
    check(
        "vjp, vector ct: d/dx1 = ct * (cos x1 + x2)",
        g1,
        [0.65467087, 1.16167806, 1.37161212],
    )
    check(
        "vjp, vector ct: d/dx2 = ct * x1",
        g2,
        [0.0069272, 0.50490658, 0.03318644],
        1e-6,
    )

    heading("Forward and reverse mode on one function: y = ln(x1) + x1*x2 - sin(x2) at (2, 5)")
    y = lambda x1, x2: fnp.log(x1) + x1 * x2 - fnp.sin(x2)
    value, dy_dx1 = jvp(y, (2.0, 5.0), (1.0, 0.0))
    check("value", value, np.log(2) + 10 - np.sin(5))
    check("forward mode: dy/dx1 (one jvp)", dy_dx1, 5.5)
    check(
        "reverse mode: (dy/dx1, dy/dx2) (one vjp)",
        grad(y, argnums=(0, 1))(2.0, 5.0),
        (5.5, 2 - np.cos(5)),
    )

    heading("A second derivative by nesting grad: y = (exp(v1) + 1) * exp(v1)")
    y2 = lambda v1: (fnp.exp(v1) + 1) * fnp.exp(v1)
    check("dy/dv1 at 0", grad(y2)(0.0), 3.0)
    check("d2y/dv1^2 at 0", grad(grad(y2))(0.0), 5.0)

    heading("Polynomials, and a vjp with a cotangent of ones: z = 2(x^2 + y), Q = 3a^3 - b^2")
    check(
        "grad z at (3, 4) = (4x, 2)",
        grad(lambda x, y: 2 * (x**2 + y), argnums=(0, 1))(3.0, 4.0),
        (12.0, 2.0),
    )
    a, b = np.array([2.0, 3.0]), np.array([6.0, 4.0])
    ga, gb = vjp(lambda a, b: 3 * a**3 - b**2, a, b)[1](np.ones(2))
    check("vjp(Q)(ones): dQ/da = 9a^2", ga, 9 * a**2)
    check("vjp(Q)(ones): dQ/db = -2b", gb, -2 * b)

    heading("A softmax cross-entropy loss: its gradient is (softmax(Z) - I_y) / batch")
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((4, 3))
    I_y = np.eye(3)[[0, 2, 1, 2]]
    loss = lambda Z: (fnp.log(fnp.exp(Z).sum(axis=1)).sum() - (I_y * Z).sum()) / Z.shape[0]
    softmax = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    check(
        "max |grad - (softmax - I_y)/4|",
        np.abs(grad(loss)(Z) - (softmax - I_y) / 4).max(),
        0.0,
        1e-12,
    )


def tanh_derivative_polynomials(n):
    """P_0..P_n with d^k tanh/dx^k = P_k(tanh x): P_0 = t, P_{k+1} = P_k' (1 - t^2)."""
    P = np.polynomial.Polynomial
    polys = [P([0, 1])]
    for _ in range(n):
        polys.append(polys[-1].deriv() * P([1, 0, -1]))
    return polys


def higher_order_table():
    heading("Higher-order derivatives by nesting grad (forward mode agrees)")
    polys = tanh_derivative_polynomials(6)
    x = 0.5
    heads = (
        "d^k tanh(x)/dx^k at 0.5",
        "closed form",
        "forward mode",
        "d^k sin at 0.5",
        "d^k x**2.0 at 0",
    )
    widths = (24, 14, 14, 14, 16)
    print(f"  {'k':>2}  " + "  ".join(f"{h:>{w}}" for h, w in zip(heads, widths)))
    rev, fwd, sin_k, sq_k = fnp.tanh, fnp.tanh, fnp.sin, lambda x: x**2.0
    for k in range(1, 7):
        rev, sin_k, sq_k = grad(rev), grad(sin_k), grad(sq_k)
        fwd = (lambda f: lambda x: jvp(f, (x,), (1.0,))[1])(fwd)
        r, closed, fw = float(rev(x)), polys[k](np.tanh(x)), float(fwd(x))
        s, q = float(sin_k(x)), float(sq_k(0.0))
        if not (np.isclose(r, closed, rtol=1e-10) and np.isclose(fw, closed, rtol=1e-10)):
            _failures.append(f"tanh derivative {k}")
        if not np.isclose(s, np.sin(x + k * np.pi / 2)) or q != (2.0 if k == 2 else 0.0):
            _failures.append(f"sin / x**2 derivative {k}")
        print(f"  {k:>2}  {r:>24.12f}  {closed:>14.8f}  {fw:>14.8f}  {s:>14.6f}  {q:>16g}")


def taylor_mode():
    heading("Taylor mode: the 20th derivative in one pass, a Laplacian without a Hessian")
    polys = tanh_derivative_polynomials(20)
    for k in (6, 10, 20):
        closed = polys[k](np.tanh(0.5))
        check(f"derivative(tanh, {k})(0.5)", fgrad.derivative(fnp.tanh, k)(0.5), closed, 1e-10)
    _, terms = fgrad.jet(lambda x: fnp.exp(fnp.sin(x)), (0.0,), ((1.0, 0.0, 0.0, 0.0),))
    check("jet of exp(sin x) at 0: derivatives 1, 1, 0, -3", terms, [1.0, 1.0, 0.0, -3.0])
    W = np.array([[1.0, -0.5, 0.2], [0.3, 0.8, -1.0]])
    f = lambda x: fnp.sum(fnp.tanh(W @ x))
    x = np.array([0.1, -0.2, 0.3])
    t = np.tanh(W @ x)
    check(
        "laplacian(sum tanh(W x)): -2 t (1 - t^2) |W_i|^2",
        fgrad.laplacian(f)(x),
        np.sum(-2 * t * (1 - t * t) * np.sum(W * W, axis=1)),
    )


def transforms_tour():
    heading("No perturbation confusion, closures over outer values")
    check("grad(x * grad(x + y)(1))(1)", grad(lambda x: x * grad(lambda y: x + y)(1.0))(1.0), 1.0)
    check(
        "grad(grad(y * (x - y))(x))(1)", grad(lambda x: grad(lambda y: y * (x - y))(x))(1.0), -1.0
    )

    heading("Jacobians and Hessians: forward and reverse mode agree")
    A = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    f = lambda x: fnp.tanh(A @ x)
    x = np.array([0.3, -0.2])
    J = jacrev(f)(x)
    check("jacrev(f) == jacfwd(f), f = tanh(A x)", J, jacfwd(f)(x), 1e-12)
    check("jacrev(f) closed form (1 - tanh^2) A", J, (1 - np.tanh(A @ x) ** 2)[:, None] * A)
    rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    check(
        "hessian(rosenbrock) at (1, 1)",
        hessian(rosen)(np.ones(2)),
        [[802.0, -400.0], [-400.0, 200.0]],
    )
    _out, f_jvp = linearize(lambda x: fnp.sin(x) * x, 1.0)
    check(
        "linearize: f once, f_jvp(2) = 2 (sin 1 + cos 1)", f_jvp(2.0), 2 * (np.sin(1) + np.cos(1))
    )

    heading("Python control flow: a data-dependent while loop (Newton's sqrt)")

    def newton_sqrt(a):
        y = a
        while fnp.abs(y * y - a) > 1e-12:
            y = 0.5 * (y + a / y)
        return y

    check("d/da sqrt(a) at 2 through the loop", grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0))

    heading("Pytrees and value_and_grad: one step of a tiny model")
    params = {"w": np.array([0.5, -0.3]), "b": 0.1}
    X, y = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([1.0, 0.0])
    mse = lambda p: fnp.mean((X @ p["w"] + p["b"] - y) ** 2)
    value, g = value_and_grad(mse)(params)
    r = X @ params["w"] + params["b"] - y
    check("loss", value, np.mean(r**2))
    check("d loss / d w", g["w"], X.T @ r)
    check("d loss / d b", g["b"], r.sum())

    heading("A primitive of your own: a stable logsumexp with a hand-written bprop")

    @fgrad.primitive
    def logsumexp(x):
        m = fnp.max(x)
        ans = m + fnp.log(fnp.sum(fnp.exp(x - m)))
        return ans, lambda ct: (ct * fnp.exp(x - ans),)

    big = np.array([1000.0, 1000.0, 0.0])
    check("grad logsumexp([1000, 1000, 0]) (no overflow)", grad(logsumexp)(big), [0.5, 0.5, 0.0])
    check(
        "its Hessian, forward mode from the bprop",
        hessian(logsumexp)(np.zeros(2)),
        [[0.25, -0.25], [-0.25, 0.25]],
    )


def record_and_replay():
    heading("Record once, replay: fgrad.jit")
    rosenbrock = lambda x: fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    eager = hessian(rosenbrock)
    jitted = fgrad.jit(eager)  # the first call records, later calls replay NumPy calls
    x = np.linspace(-1.0, 1.0, 10)
    closed = np.diag(np.r_[1200 * x[:-1] ** 2 - 400 * x[1:] + 2, 0.0] + np.r_[0.0, [200.0] * 9])
    closed += np.diag(-400 * x[:-1], 1) + np.diag(-400 * x[:-1], -1)
    check("hessian(rosenbrock), R^10: first call (recorded)", jitted(x)[0, :2], closed[0, :2])
    same = np.array_equal(jitted(x + 0.5), eager(x + 0.5))
    check("replayed at another x: equal to eager, bit for bit", float(same), 1.0, 0)
    timings = {}
    for name, fn in (("eager", eager), ("jit", jitted)):
        start = time.perf_counter()
        for _ in range(50):
            fn(x)
        timings[name] = (time.perf_counter() - start) / 50
    print(
        f"  per call: eager {timings['eager'] * 1e6:.0f} us, replayed {timings['jit'] * 1e6:.0f}"
        f" us ({timings['eager'] / timings['jit']:.0f}x)"
    )
    branch = fgrad.jit(lambda x: x if x > 0 else -x)  # a branch on a value is guarded
    check("jit(|x|) at 2.0, then at -3.0 (a new path)", [branch(2.0), branch(-3.0)], [2.0, 3.0])


def main():
    print(
        f"fgrad {fgrad.__version__}: functional automatic differentiation on NumPy {np.__version__}"
    )
    worked_examples()
    higher_order_table()
    taylor_mode()
    transforms_tour()
    record_and_replay()
    print()
    if _failures:
        print(f"{len(_failures)} result(s) did not match: {', '.join(_failures)}")
        return 1
    print("All results match their closed forms.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
