"""fgrad against hand-written NumPy, autograd, PyTorch (eager, CPU) and JAX (eager and jit).

    /tmp/peers/bin/python benchmarks/bench_peers.py              # everything, about 15 min
    /tmp/peers/bin/python benchmarks/bench_peers.py --quick      # small sizes, few rounds
    /tmp/peers/bin/python benchmarks/bench_peers.py --only chain,mlp --repeats 51
    python benchmarks/bench_peers.py --check --quick             # validate only (no peers needed)
    python benchmarks/bench_peers.py --profile chain             # + a cProfile of fgrad

The peers are never dependencies of fgrad: install them into a scratch venv (README.md). A peer
that is not installed is reported as "not installed" and its rows are left out.

Workloads (`--only` takes their keys):

    chain      grad of a 200-op scalar chain, y = tanh(cos(sin(y))) * 1.5 + x, 40 times
    chain10    the same chain on 10-element arrays, then a sum (us per op)
    mlp        the seed MLP softmax loss, 784-100-10, batch 100, grad w.r.t. both weights
    mlp_large  the same loss on a 784-1024-1024-10 relu MLP, batch 512
    hessian    Hessian of f(x) = sum(tanh(A x)) + sum(x^4) / 4, x in R^50
    hvp        Hessian-vector product (jvp of grad) of f(x) = sum(tanh(x)^2) + sum(sin(x))^2 / 2,
               x in R^10000, against one gradient of the same f
    tanh6      the 6th derivative of tanh at 0.3 by nested grad (1 to 5 are validated too)
    tanh20     derivatives 1, 2, 4, 8, 12, 16, 20 of tanh at 0.3 by Taylor mode (fgrad.derivative,
               jax.experimental.jet), and 1, 2, 4, 8 by fgrad's nested grad
    nth_derivative  the 6th derivative of exp(sin x) cos(x^2) / (1 + x^2) at 0.7: Taylor mode
               against nested grad
    laplacian  the Laplacian of a tanh MLP R^50 -> R (hidden 64-64): fgrad.laplacian (collapsed
               Taylor mode) against the trace of each library's hessian
    jacrev     jacrev of f(x) = tanh(A x) * x, R^100 -> R^100
    jacfwd     jacfwd of the same f
    per_example         per-example gradients of the seed MLP loss (784-100-10, batch 128):
                        vmap(grad) of one example's loss; autograd (no vmap) loops over grad
    per_example_logreg  per-example gradients of logistic regression (10 features, batch 1000)
    branch     vmap of a function with one `if` on each 16-element row (batch 256): half the
               rows taking each branch, against every row taking the first (fgrad only)
    chain20k   the 10-element chain with 20,000 ops: time, and peak memory of one gradient
    deep_mlp   peak memory of a 100-layer tanh MLP (width 512, batch 64): forward only, the
               gradient w.r.t. the input, and w.r.t. the weights and the input

Every contender's result is first checked against the hand-written NumPy one (same shapes,
relative error in norm at most 1e-6; 1e-10 for fgrad's Laplacian and Hessian trace); the
script exits with status 1 if any disagree.

Time: all contenders of a workload run in one process, in interleaved rounds (each round times
each contender once, in a rotated order); BLAS, OpenMP, XLA and torch use one thread. The table
gives each contender's median and quartiles, and the medians (with quartiles) of the
same-round ratios to autograd and to hand-written NumPy.

Memory: one fresh process per (workload, contender), which imports only its own library, makes
one warm-up call, then measures one call twice: the peak RSS above the RSS before the call
(`rss`: every library; Linux's VmHWM, reset through /proc/self/clear_refs) and, for the
libraries that allocate through NumPy (fgrad, autograd, by hand), tracemalloc's peak (`tm`:
exact and deterministic; it does not see torch's or XLA's allocator). Ratios compare the same
measure.

Imports: NumPy, fgrad and the shared `timing.py`; each peer only if it is installed.
"""

import argparse
import cProfile
import gc
import importlib.metadata
import json
import math
import os
import platform
import pstats
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

# Pin threads only when this file is the script being run: importing it (the smoke test does)
# must not touch the caller's environment.
PINNED = __name__ == "__main__" and timing.pin_threads()

import numpy as np

import fgrad
import fgrad.numpy as fnp

RTOL = 1e-6
MIB = 2.0**20
LIBS = {  # key -> label, in the table's order
    "fgrad": "fgrad",
    "numpy": "numpy (by hand)",
    "autograd": "autograd",
    "torch": "torch (eager)",
    "jax": "jax (eager)",
    "jax.jit": "jax (jit)",
}
BY_HAND = LIBS["numpy"]
TRACEMALLOC_LIBS = ("fgrad", "numpy", "autograd")  # allocate through NumPy
INSTALL = (
    "install the peers into a scratch venv (from the repository root):\n"
    "    python -m venv /tmp/peers && /tmp/peers/bin/pip install autograd jax torch -e .\n"
    "    /tmp/peers/bin/python benchmarks/bench_peers.py"
)

# --- the peers, imported on first use -------------------------------------------------------

_peers = {}
MISSING = {}  # peer -> why it could not be imported


def peer(name):
    """The module of peer `name` ("autograd", "torch", "jax"), or None if it is not installed."""
    if name not in _peers:
        try:
            if name == "torch":
                import torch

                torch.set_num_threads(1)
                try:
                    torch.set_num_interop_threads(1)
                except RuntimeError:  # already set, or work already started
                    pass
                torch.set_default_dtype(torch.float64)
                _peers[name] = torch
            elif name == "jax":
                import jax

                jax.config.update("jax_enable_x64", True)  # float64, as NumPy
                jax.config.update("jax_platforms", "cpu")
                _peers[name] = jax
            else:
                _peers[name] = importlib.import_module(name)
        except ImportError as error:
            _peers[name] = None
            MISSING[name] = str(error)
    return _peers[name]


def available(lib):
    return lib in ("fgrad", "numpy") or peer(lib.split(".")[0]) is not None


def version(lib):
    if lib in ("fgrad", "numpy"):
        return {"fgrad": fgrad.__version__, "numpy": np.__version__}[lib]
    return importlib.metadata.version(lib) if available(lib) else "not installed"


class TorchNumpy:
    """The few NumPy spellings the workloads use, for torch tensors."""

    def __getattr__(self, name):
        return getattr(peer("torch"), name)

    @staticmethod
    def sum(x, axis=None):
        return x.sum() if axis is None else x.sum(dim=axis)

    @staticmethod
    def maximum(x, c):
        return peer("torch").clamp_min(x, c)


def namespace(lib):
    """The NumPy-like namespace a library's user writes against."""
    if lib == "fgrad":
        return fnp
    if lib == "autograd":
        return importlib.import_module("autograd.numpy")
    if lib == "torch":
        return TorchNumpy()
    return importlib.import_module("jax.numpy")


def tensor(lib, x, requires_grad=False):
    """x (a NumPy value) as the library's input."""
    if lib == "torch":
        return peer("torch").tensor(x, requires_grad=requires_grad)
    if lib.startswith("jax"):
        return peer("jax").numpy.asarray(x)
    return x


def jax_transform(lib, fun):
    """jax.jit(fun) for "jax.jit", fun for "jax"; either way the result is waited for."""
    jax = peer("jax")
    run = jax.jit(fun) if lib == "jax.jit" else fun
    return lambda *args: jax.block_until_ready(run(*args))


# --- workloads ----------------------------------------------------------------------------


@dataclass
class Contender:
    lib: str
    fn: object  # zero-argument callable returning the result
    want: object  # the hand-written result it must match
    task: str = ""  # a second task of the same workload ("gradient", "forward", ...)
    checks: list = field(default_factory=list)  # more (fn, want, what) to validate, untimed
    rtol: float = RTOL  # for its result and its checks

    @property
    def label(self):
        return LIBS[self.lib] + (f", {self.task}" if self.task else "")


@dataclass
class Bar:
    num: str  # contender label
    den: str | None  # contender label; None: `limit` is a time in seconds, not a ratio
    limit: float
    measure: str = "time"  # or "tm", "rss"
    strict: bool = False  # num < limit * den rather than <=

    def text(self):
        sign = "<" if self.strict else "<="
        if self.den is None:
            return f"{self.num} {sign} {self.shown(self.limit)}"
        return f"{self.num} / {self.den} {sign} {self.limit:g}x"

    def shown(self, figure):
        """A ratio, or for an absolute bar a time (seconds) in ms or us."""
        if self.den is not None:
            return f"{figure:.2f}x"
        return f"{figure * 1e3:.3g} ms" if figure >= 1e-3 else f"{figure * 1e6:.3g} us"

    def met(self, ratio):
        return ratio < self.limit if self.strict else ratio <= self.limit


@dataclass
class Workload:
    key: str
    title: str
    contenders: list
    per: int = 1  # divide a call's time by this (ops per call)
    unit: str = "ms"  # "us/op" or "ms"
    bars: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # contenders left out, and why
    memory: bool = False  # measured in fresh processes, not timed
    timed: bool = True


@dataclass(frozen=True)
class Sizes:
    chain: int = 200
    long_chain: int = 20_000
    large_mlp: tuple = (784, 1024, 1024, 10)
    large_batch: int = 512
    hessian_dim: int = 50
    hvp_dim: int = 10_000
    jac_dim: int = 100
    example_batch: int = 128
    logreg_batch: int = 1000
    branch_batch: int = 256
    deep_layers: int = 100
    deep_width: int = 512
    deep_batch: int = 64
    laplacian_dim: int = 50
    laplacian_width: int = 64


FULL = Sizes()
QUICK = Sizes(
    chain=50,
    long_chain=2_000,
    large_mlp=(784, 256, 256, 10),
    large_batch=64,
    hessian_dim=10,
    hvp_dim=1_000,
    jac_dim=20,
    example_batch=16,
    logreg_batch=100,
    branch_batch=32,
    deep_layers=10,
    deep_width=128,
    deep_batch=16,
    laplacian_dim=10,
    laplacian_width=16,
)


def contenders_of(makers, libs, notes):
    """Build each library's contenders with makers[lib]() (a Contender or a list of them);
    a library that is missing or has no such transform gets a note instead."""
    out = []
    for lib in libs:
        if lib not in makers:
            continue
        if not available(lib):
            notes.append(f"{LIBS[lib]}: not installed")
            continue
        made = makers[lib]()
        if isinstance(made, str):  # the reason this library is left out
            notes.append(f"{LIBS[lib]}: {made}")
            continue
        out.extend(made if isinstance(made, list) else [made])
    return out


# chain, chain10, chain20k: y = tanh(cos(sin(y))) * 1.5 + x, repeated; 5 ops a block

BLOCK_OPS = 5


def chain(ns, ops, reduce):
    def f(x):
        y = x
        for _ in range(ops // BLOCK_OPS):
            y = ns.tanh(ns.cos(ns.sin(y))) * 1.5 + x
        return ns.sum(y) if reduce else y

    return f


def chain_grad_by_hand(x, ops):
    """Forward keeps the residuals, backward multiplies them in reverse; `+ x` sends the
    running cotangent to x at every block. The same NumPy calls the libraries make."""
    residuals = []
    y = x
    for _ in range(ops // BLOCK_OPS):
        s = np.sin(y)
        t = np.tanh(np.cos(s))
        residuals.append((y, s, t))
        y = t * 1.5 + x
    ct, dx = np.ones_like(x), np.zeros_like(x)
    for y, s, t in reversed(residuals):
        dx = dx + ct
        ct = ct * 1.5 * (1.0 - t * t) * -np.sin(s) * np.cos(y)
    return dx + ct


def chain_workload(key, title, x, ops, libs, bars, skip=()):
    reduce = np.ndim(x) > 0
    want = chain_grad_by_hand(x, ops)
    notes = []

    def grad_of(lib):
        f = chain(namespace(lib), ops, reduce)
        if lib == "fgrad":
            g = fgrad.grad(f)
            return lambda: g(x)
        if lib == "autograd":
            g = peer("autograd").grad(f)
            return lambda: g(x)
        if lib == "torch":
            torch = peer("torch")
            xt = tensor(lib, x, requires_grad=True)
            return lambda: torch.autograd.grad(f(xt), xt)[0]
        g = jax_transform(lib, peer("jax").grad(f))
        xj = tensor(lib, x)
        return lambda: g(xj)

    def maker(lib):
        return skip[lib] if lib in skip else Contender(lib, grad_of(lib), want)

    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: Contender("numpy", lambda: chain_grad_by_hand(x, ops), want)
    return Workload(
        key,
        title,
        contenders_of(makers, libs, notes),
        per=ops,
        unit="us/op",
        bars=bars,
        notes=notes,
    )


# mlp, mlp_large: Z = relu(...relu(X @ W1)...) @ WL, loss = mean(logsumexp(Z) - <I_y, Z>)


def mlp_data(dims, batch, seed):
    rng = np.random.default_rng(seed)
    ws = tuple(rng.standard_normal((m, n)) / np.sqrt(m) for m, n in zip(dims[:-1], dims[1:]))
    X = rng.standard_normal((batch, dims[0]))
    I_y = np.eye(dims[-1])[rng.integers(0, dims[-1], size=batch)]
    return ws, X, I_y


def mlp_loss(ns):
    def loss(ws, X, I_y):
        Z = X
        for W in ws[:-1]:
            Z = ns.maximum(Z @ W, 0.0)
        Z = Z @ ws[-1]
        log_partition = ns.sum(ns.log(ns.sum(ns.exp(Z), axis=1)))
        return (log_partition - ns.sum(I_y * Z)) / X.shape[0]

    return loss


def mlp_grad_by_hand(ws, X, I_y):
    """Only the forward quantities the backward needs (not the loss), then the backward: the
    floor any AD library can reach."""
    hs, masks = [X], []
    for W in ws[:-1]:
        A = hs[-1] @ W
        masks.append(A > 0)
        hs.append(np.maximum(A, 0.0))
    E = np.exp(hs[-1] @ ws[-1])
    d = (E / E.sum(axis=1, keepdims=True) - I_y) / X.shape[0]
    grads = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        grads[i] = hs[i].T @ d
        if i:
            d = (d @ ws[i].T) * masks[i - 1]
    return tuple(grads)


def mlp_workload(key, title, dims, batch, libs, bars, seed):
    ws, X, I_y = mlp_data(dims, batch, seed)
    want = mlp_grad_by_hand(ws, X, I_y)
    notes = []

    def grad_of(lib):
        loss = mlp_loss(namespace(lib))
        if lib == "fgrad":
            g = fgrad.grad(loss)
            return lambda: g(ws, X, I_y)
        if lib == "autograd":
            g = peer("autograd").grad(loss)
            return lambda: g(ws, X, I_y)
        if lib == "torch":
            torch = peer("torch")
            wt = [tensor(lib, w, requires_grad=True) for w in ws]
            Xt, It = tensor(lib, X), tensor(lib, I_y)
            return lambda: torch.autograd.grad(loss(wt, Xt, It), wt)
        g = jax_transform(lib, peer("jax").grad(loss))
        args = [tuple(tensor(lib, w) for w in ws), tensor(lib, X), tensor(lib, I_y)]
        return lambda: g(*args)

    makers = {
        lib: (lambda lib=lib: Contender(lib, grad_of(lib), want)) for lib in LIBS if lib != "numpy"
    }
    makers["numpy"] = lambda: Contender("numpy", lambda: mlp_grad_by_hand(ws, X, I_y), want)
    return Workload(key, title, contenders_of(makers, libs, notes), bars=bars, notes=notes)


# hessian: f(x) = sum(tanh(A x)) + sum(x^4) / 4


def hessian_workload(n, libs):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    t = np.tanh(A @ x)

    def by_hand():
        t = np.tanh(A @ x)
        return A.T @ ((-2.0 * t * (1.0 - t * t))[:, None] * A) + np.diag(3.0 * x * x)

    want = by_hand()
    del t

    def f_of(ns, A):
        return lambda x: ns.sum(ns.tanh(A @ x)) + 0.25 * ns.sum(x**4)

    def maker(lib):
        f = f_of(namespace(lib), tensor(lib, A))
        xl = tensor(lib, x)
        if lib == "fgrad":
            h = fgrad.hessian(f)
        elif lib == "autograd":
            h = peer("autograd").hessian(f)
        elif lib == "torch":
            h = peer("torch").func.hessian(f)
        else:
            h = jax_transform(lib, peer("jax").hessian(f))
        return Contender(lib, lambda: h(xl), want)

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: Contender("numpy", by_hand, want)
    return Workload(
        "hessian",
        f"Hessian, f: R^{n} -> R (jacfwd of jacrev)",
        contenders_of(makers, libs, notes),
        notes=notes,
    )


# hvp: f(x) = sum(tanh(x)^2) + sum(sin(x))^2 / 2; H v by jvp of grad, and one gradient


def hvp_workload(n, libs):
    rng = np.random.default_rng(6)
    x, v = rng.standard_normal(n), rng.standard_normal(n)

    def f_of(ns):
        return lambda x: ns.sum(ns.tanh(x) ** 2) + 0.5 * ns.sum(ns.sin(x)) ** 2

    def grad_by_hand():
        t, c = np.tanh(x), np.cos(x)
        return 2.0 * t * (1.0 - t * t) + np.sum(np.sin(x)) * c

    def hvp_by_hand():
        t, s, c = np.tanh(x), np.sin(x), np.cos(x)
        return (2.0 - 6.0 * t * t) * (1.0 - t * t) * v + c * (c @ v) - np.sum(s) * s * v

    want_hvp, want_grad = hvp_by_hand(), grad_by_hand()

    def maker(lib):
        f = f_of(namespace(lib))
        xl, vl = tensor(lib, x), tensor(lib, v)
        if lib == "fgrad":
            g = fgrad.grad(f)
            hvp = lambda: fgrad.jvp(g, (xl,), (vl,))[1]
        elif lib == "autograd":  # no jvp of grad in autograd: its reverse-over-reverse HVP
            g = peer("autograd").grad(f)
            hvp_fn = peer("autograd").hessian_tensor_product(f)
            hvp = lambda: hvp_fn(xl, vl)
        elif lib == "torch":
            func = peer("torch").func
            g = func.grad(f)
            hvp = lambda: func.jvp(g, (xl,), (vl,))[1]
        else:
            jax = peer("jax")
            g = jax_transform(lib, jax.grad(f))
            hvp_fn = jax_transform(lib, lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
            hvp = lambda: hvp_fn(xl, vl)
        return [
            Contender(lib, hvp, want_hvp),
            Contender(lib, lambda: g(xl), want_grad, task="gradient"),
        ]

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: [
        Contender("numpy", hvp_by_hand, want_hvp),
        Contender("numpy", grad_by_hand, want_grad, task="gradient"),
    ]
    return Workload(
        "hvp",
        f"Hessian-vector product (jvp of grad), R^{n}",
        contenders_of(makers, libs, notes),
        notes=notes,
        bars=[Bar("fgrad", "fgrad, gradient", 2.5)],
    )


# tanh6: d^k/dx^k tanh(x) at a scalar by nested grad, k = 1..6


def tanh_derivatives_by_hand(x, order):
    """d^k tanh / dx^k = p_k(tanh x), with p_0(t) = t and p_{k+1} = p_k'(t) (1 - t^2)."""
    p = np.polynomial.Polynomial([0.0, 1.0])
    one_minus_t2 = np.polynomial.Polynomial([1.0, 0.0, -1.0])
    for _ in range(order):
        p = p.deriv() * one_minus_t2
    return p(np.tanh(x))


def tanh_workload(order, libs):
    x = 0.3
    wants = [tanh_derivatives_by_hand(x, k) for k in range(order + 1)]

    def nth(lib, k):
        return nested_grad(lib, namespace(lib).tanh, k, x)

    def maker(lib):
        checks = [(nth(lib, k), wants[k], f"derivative {k}") for k in range(1, order)]
        return Contender(lib, nth(lib, order), wants[order], checks=checks)

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: Contender(
        "numpy", lambda: tanh_derivatives_by_hand(x, order), wants[order]
    )
    return Workload(
        "tanh6",
        f"derivative {order} of tanh at a scalar, nested grad",
        contenders_of(makers, libs, notes),
        unit="us",
        notes=notes,
        bars=[Bar("fgrad", "autograd", 0.2)],
    )


# tanh20, nth_derivative, laplacian: Taylor mode (fgrad.derivative, fgrad.laplacian)

TAYLOR_ORDERS = (1, 2, 4, 8, 12, 16, 20)
NESTED_ORDERS = (1, 2, 4, 8)  # nested grad beyond 8 costs seconds (about 3x per order)


def tanh_taylor_by_hand(x, order):
    """d^order tanh / dx^order at x by Taylor mode written out in floats: the normalized
    coefficients y_k of y(t) = tanh(x + t) satisfy y' = 1 - y^2, so k y_k = [1 - y^2]_(k-1)."""
    y = [math.tanh(x)]
    for k in range(1, order + 1):
        m = k - 1
        square = sum(y[i] * y[m - i] for i in range(m + 1))
        y.append(((1.0 if m == 0 else 0.0) - square) / k)
    return y[order] * math.factorial(order)


def taylor_derivative(lib, f, order, x):
    """A zero-argument callable: the order-th derivative of f: R -> R at x by Taylor mode,
    `fgrad.derivative` or `jax.experimental.jet` (eager or under jit)."""
    if lib == "fgrad":
        derivative = fgrad.derivative(f, order)
        return lambda: derivative(x)
    jnp = peer("jax").numpy
    jet = importlib.import_module("jax.experimental.jet").jet

    def derivative(x):
        terms = (jnp.ones_like(x),) + tuple(jnp.zeros_like(x) for _ in range(order - 1))
        return jet(f, (x,), (terms,))[1][-1]

    run, xj = jax_transform(lib, derivative), tensor(lib, x)
    return lambda: run(xj)


def nested_grad(lib, f, order, x):
    """A zero-argument callable: the order-th derivative of f at x by nested grad."""
    if lib == "torch":
        torch = peer("torch")
        xt = tensor(lib, x, requires_grad=True)

        def derivative():
            y = f(xt)
            for _ in range(order):
                (y,) = torch.autograd.grad(y, xt, create_graph=True)
            return y

        return derivative
    grad = fgrad.grad if lib == "fgrad" else peer(lib.split(".")[0]).grad
    for _ in range(order):
        f = grad(f)
    if lib.startswith("jax"):
        f = jax_transform(lib, f)
    xl = tensor(lib, x)
    return lambda: f(xl)


def taylor_tanh_workload(libs):
    x = 0.3
    wants = {k: tanh_derivatives_by_hand(x, k) for k in TAYLOR_ORDERS + NESTED_ORDERS}

    def maker(lib):
        out = []
        for k in TAYLOR_ORDERS:
            if lib == "numpy":
                fn = lambda k=k: tanh_taylor_by_hand(x, k)
            else:
                fn = taylor_derivative(lib, namespace(lib).tanh, k, x)
            out.append(Contender(lib, fn, wants[k], task=f"order {k}"))
        if lib == "fgrad":
            out += [
                Contender(lib, nested_grad(lib, fnp.tanh, k, x), wants[k], task=f"nested grad {k}")
                for k in NESTED_ORDERS
            ]
        return out

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in ("numpy", "fgrad", "jax", "jax.jit")}
    contenders = contenders_of(makers, libs, notes)
    notes.append(
        "order k: fgrad.derivative(tanh, k); jax: jax.experimental.jet; by hand: the "
        "recurrence k y_k = [1 - y^2]_(k-1) in floats. nested grad k: fgrad.grad k times "
        "(autograd, torch and JAX's nested grad: see tanh6)"
    )
    top, low = f"fgrad, order {TAYLOR_ORDERS[-1]}", f"fgrad, order {TAYLOR_ORDERS[0]}"
    return Workload(
        "tanh20",
        f"derivatives {', '.join(map(str, TAYLOR_ORDERS))} of tanh at a scalar, Taylor mode",
        contenders,
        unit="us",
        notes=notes,
        bars=[Bar(top, None, 1e-3), Bar(top, low, 20.0)],
    )


# nth_derivative: d^6/dx^6 of exp(sin x) cos(x^2) / (1 + x^2)

NTH_ORDER = 6


def nth_derivative_function(ns):
    return lambda x: ns.exp(ns.sin(x)) * ns.cos(x * x) / (1.0 + x * x)


def _series_product(a, b):
    return [sum(a[j] * b[k - j] for j in range(k + 1)) for k in range(len(a))]


def _series_quotient(a, b):
    z = []
    for k in range(len(a)):
        z.append((a[k] - sum(b[j] * z[k - j] for j in range(1, k + 1))) / b[0])
    return z


def _series_exp(a):
    e = [math.exp(a[0])]
    for k in range(1, len(a)):
        e.append(sum(j * a[j] * e[k - j] for j in range(1, k + 1)) / k)
    return e


def _series_sin_cos(a):
    s, c = [math.sin(a[0])], [math.cos(a[0])]
    for k in range(1, len(a)):
        s.append(sum(j * a[j] * c[k - j] for j in range(1, k + 1)) / k)
        c.append(-sum(j * a[j] * s[k - j] for j in range(1, k + 1)) / k)
    return s, c


def nth_derivative_by_hand(x, order):
    """Taylor mode written out: the normalized series of each intermediate of
    exp(sin u) cos(u^2) / (1 + u^2) along u = x + t, in floats."""
    u = [x, 1.0] + [0.0] * (order - 1)
    u2 = _series_product(u, u)
    numerator = _series_product(_series_exp(_series_sin_cos(u)[0]), _series_sin_cos(u2)[1])
    h = _series_quotient(numerator, [1.0 + u2[0]] + u2[1:])
    return h[order] * math.factorial(order)


def nth_derivative_workload(libs):
    x, order = 0.7, NTH_ORDER
    wants = [nth_derivative_by_hand(x, k) for k in range(order + 1)]

    def maker(lib):
        if lib == "numpy":
            return Contender(lib, lambda: nth_derivative_by_hand(x, order), wants[-1], "taylor")
        f = nth_derivative_function(namespace(lib))
        out = []
        if lib in ("fgrad", "jax", "jax.jit"):
            checks = [
                (taylor_derivative(lib, f, k, x), wants[k], f"derivative {k}")
                for k in range(1, order)
            ]
            taylor = taylor_derivative(lib, f, order, x)
            out.append(Contender(lib, taylor, wants[-1], "taylor", checks))
        if lib != "jax":  # eager JAX takes about 1.4 s a call
            out.append(Contender(lib, nested_grad(lib, f, order, x), wants[-1], "nested grad"))
        return out

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS}
    contenders = contenders_of(makers, libs, notes)
    if "jax" in libs and available("jax"):
        notes.append("jax (eager), nested grad: left out, about 1.4 s a call")
    if "fgrad" in libs:
        f = nth_derivative_function(fnp)
        nested = nth_derivative_function(fnp)
        for _ in range(order):
            nested = fgrad.grad(nested)
        counts = [len(fgrad.make_graph(g)(x)) for g in (nested, fgrad.derivative(f, order))]
        notes.append(
            f"fgrad's primitive applications (make_graph): nested grad {counts[0]}, "
            f"taylor {counts[1]}"
        )
    notes.append("taylor: fgrad.derivative, jax.experimental.jet, by hand in floats")
    return Workload(
        "nth_derivative",
        f"derivative {order} of exp(sin x) cos(x^2) / (1 + x^2) at a scalar",
        contenders,
        unit="us",
        notes=notes,
        bars=[Bar("fgrad, taylor", "fgrad, nested grad", 0.1)],
    )


# laplacian: trace of the Hessian of a tanh MLP R^D -> R, two hidden layers


def laplacian_data(dim, width, seed=12):
    rng = np.random.default_rng(seed)
    params = (
        rng.standard_normal((width, dim)) / np.sqrt(dim),
        0.1 * rng.standard_normal(width),
        rng.standard_normal((width, width)) / np.sqrt(width),
        0.1 * rng.standard_normal(width),
        rng.standard_normal(width) / np.sqrt(width),
    )
    return params, rng.standard_normal(dim)


def laplacian_mlp(ns, params):
    W1, b1, W2, b2, w3 = params

    def f(x):
        h = ns.tanh(W1 @ x + b1)
        h = ns.tanh(W2 @ h + b2)
        return w3 @ h

    return f


def laplacian_by_hand(params, x):
    """The forward Laplacian written out: each layer's Jacobian J w.r.t. x and Laplacian L;
    tanh maps (J, L) of its input z to (t' J, t' L + t'' sum_i J[:, i]^2)."""
    W1, b1, W2, b2, w3 = params
    t1 = np.tanh(W1 @ x + b1)
    d1 = 1.0 - t1 * t1
    J1 = d1[:, None] * W1
    L1 = -2.0 * t1 * d1 * np.sum(W1 * W1, axis=1)
    t2 = np.tanh(W2 @ t1 + b2)
    d2 = 1.0 - t2 * t2
    Jz = W2 @ J1
    L2 = d2 * (W2 @ L1) - 2.0 * t2 * d2 * np.sum(Jz * Jz, axis=1)
    return w3 @ L2


def laplacian_workload(dim, width, libs):
    params, x = laplacian_data(dim, width)
    want = laplacian_by_hand(params, x)
    tight = 1e-10  # the bar: the Laplacian equals the Hessian's trace to 1e-10

    def maker(lib):
        ns = namespace(lib)
        f = laplacian_mlp(ns, tuple(tensor(lib, p) for p in params))
        xl = tensor(lib, x)
        if lib == "fgrad":
            lap, hessian = fgrad.laplacian(f), fgrad.hessian(f)
            trace = lambda: fnp.trace(hessian(xl))
            against = (lambda: lap(xl), trace(), "against fgrad's hessian trace")
            return [
                Contender(lib, lambda: lap(xl), want, "laplacian", [against], tight),
                Contender(lib, trace, want, "hessian trace", rtol=tight),
            ]
        if lib == "autograd":
            hessian = peer("autograd").hessian(f)
            return Contender(lib, lambda: ns.trace(hessian(xl)), want, "hessian trace")
        if lib == "torch":
            hessian = peer("torch").func.hessian(f)
            return Contender(lib, lambda: ns.trace(hessian(xl)), want, "hessian trace")
        jax = peer("jax")
        jet = importlib.import_module("jax.experimental.jet").jet

        def by_jet(x):  # D series of order 2, one per basis direction, summed
            def second(v):
                return jet(f, (x,), ((v, ns.zeros_like(v)),))[1][1]

            return ns.sum(jax.vmap(second)(ns.eye(x.shape[0], dtype=x.dtype)))

        trace = jax_transform(lib, lambda x: ns.trace(jax.hessian(f)(x)))
        lap = jax_transform(lib, by_jet)
        return [
            Contender(lib, lambda: lap(xl), want, "laplacian"),
            Contender(lib, lambda: trace(xl), want, "hessian trace"),
        ]

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: Contender(
        "numpy", lambda: laplacian_by_hand(params, x), want, "laplacian"
    )
    contenders = contenders_of(makers, libs, notes)
    notes.append(
        "laplacian: fgrad.laplacian (collapsed Taylor mode); jax: vmap of jax.experimental.jet "
        "over the basis, order 2, summed (JAX has no Laplacian); by hand: the forward Laplacian. "
        "hessian trace: trace of each library's hessian"
    )
    return Workload(
        "laplacian",
        f"Laplacian of a tanh MLP R^{dim} -> R, hidden {width}-{width}",
        contenders,
        notes=notes,
        bars=[
            Bar("fgrad, laplacian", "fgrad, hessian trace", 0.5),
            Bar("fgrad, laplacian", "jax (eager), hessian trace", 1.0, strict=True),
        ],
    )


# jacrev, jacfwd: f(x) = tanh(A x) * x, R^n -> R^n


def jacobian_workload(mode, n, libs):
    rng = np.random.default_rng(7)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)

    def by_hand():
        t = np.tanh(A @ x)
        J = ((1.0 - t * t) * x)[:, None] * A
        J[np.diag_indices(n)] += t
        return J

    want = by_hand()

    def maker(lib):
        ns = namespace(lib)
        Al, xl = tensor(lib, A), tensor(lib, x)

        def f(x):
            return ns.tanh(Al @ x) * x

        if lib == "fgrad":
            jac = getattr(fgrad, mode)(f)
        elif lib == "autograd":
            if mode == "jacfwd":
                return "no forward-mode Jacobian"
            jac = peer("autograd").jacobian(f)
        elif lib == "torch":
            jac = getattr(peer("torch").func, mode)(f)
        else:
            jac = jax_transform(lib, getattr(peer("jax"), mode)(f))
        return Contender(lib, lambda: jac(xl), want)

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: Contender("numpy", by_hand, want)
    bars = [Bar("fgrad", "autograd", 0.08)] if mode == "jacrev" else []  # issue 15
    return Workload(
        mode,
        f"{mode}, f: R^{n} -> R^{n}",
        contenders_of(makers, libs, notes),
        notes=notes,
        bars=bars,
    )


# per_example, per_example_logreg: per-example gradients, vmap(grad(loss of one example))


def per_example_workload(key, title, loss_of, data, by_hand, libs, bars):
    """`loss_of(ns)(params, x, y)` is the loss of one example; `data` is (params, X, Y) with
    the examples along axis 0 of X and Y; `by_hand` gives every example's gradient w.r.t.
    params, stacked along axis 0 of each leaf."""
    params, X, Y = data
    want = by_hand(params, X, Y)
    notes = []

    def maker(lib):
        loss = loss_of(namespace(lib))
        if lib == "fgrad":
            g = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0, 0))
            return Contender(lib, lambda: g(params, X, Y), want)
        if lib == "autograd":  # no vmap: a Python loop of grad, the gradients stacked
            g = peer("autograd").grad(loss)

            def loop():
                per_row = [g(params, x, y) for x, y in zip(X, Y)]
                return tuple(np.stack(leaf) for leaf in zip(*per_row))

            return Contender(lib, loop, want)
        args = (tuple(tensor(lib, p) for p in params), tensor(lib, X), tensor(lib, Y))
        if lib == "torch":
            func = peer("torch").func
            g = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
        else:
            jax = peer("jax")
            g = jax_transform(lib, jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
        return Contender(lib, lambda: g(*args), want)

    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: Contender("numpy", lambda: by_hand(params, X, Y), want)
    contenders = contenders_of(makers, libs, notes)
    if any(c.lib == "autograd" for c in contenders):
        notes.append(f"{LIBS['autograd']}: a Python loop of grad over the examples (no vmap)")
    return Workload(key, title, contenders, bars=bars, notes=notes)


def mlp_example_loss(ns):
    """The seed MLP loss of one example x (features) with one-hot label i_y."""

    def loss(ws, x, i_y):
        z = x
        for W in ws[:-1]:
            z = ns.maximum(z @ W, 0.0)
        z = z @ ws[-1]
        return ns.log(ns.sum(ns.exp(z))) - ns.sum(i_y * z)

    return loss


def mlp_per_example_by_hand(ws, X, I_y):
    """mlp_grad_by_hand without the mean, each weight gradient an outer product per example."""
    hs, masks = [X], []
    for W in ws[:-1]:
        A = hs[-1] @ W
        masks.append(A > 0)
        hs.append(np.maximum(A, 0.0))
    E = np.exp(hs[-1] @ ws[-1])
    d = E / E.sum(axis=1, keepdims=True) - I_y
    grads = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        grads[i] = np.einsum("bi,bj->bij", hs[i], d)
        if i:
            d = (d @ ws[i].T) * masks[i - 1]
    return tuple(grads)


def logreg_data(features, batch, seed):
    rng = np.random.default_rng(seed)
    params = (rng.standard_normal(features) / np.sqrt(features), np.array(0.1))
    X = rng.standard_normal((batch, features))
    y = rng.choice([-1.0, 1.0], size=batch)
    return params, X, y


def logreg_loss(ns):
    """The logistic loss log(1 + exp(-y (x . w + b))) of one example, y in {-1, 1}."""

    def loss(params, x, y):
        w, b = params
        return ns.log1p(ns.exp(-y * (x @ w + b)))

    return loss


def logreg_per_example_by_hand(params, X, y):
    w, b = params
    e = np.exp(-y * (X @ w + b))
    dz = -y * e / (1.0 + e)
    return dz[:, None] * X, dz


# branch: vmap of a function with one data-dependent `if` on each row


def branch_workload(batch, libs):
    """One `if` on a batched row: rows that disagree make vmap split the batch and run the
    function once per group. Timed on a batch where half the rows take each branch and on the
    same rows with their signs set so that every row takes the first branch (tanh is odd, so
    flipping a row's sign flips its branch and keeps its work)."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((batch, 16))
    sign = np.sign(np.tanh(X).sum(axis=1))
    half = np.where(rng.permutation(batch) < batch // 2, 1.0, -1.0)
    inputs = {"rows disagree": X * (sign * half)[:, None], "rows agree": X * sign[:, None]}

    def f(x):
        y = fnp.tanh(x)
        if fnp.sum(y) > 0:
            return y * x
        return fnp.sin(y) + x

    def by_hand(X):
        y = np.tanh(X)
        first = y.sum(axis=1) > 0
        return np.where(first[:, None], y * X, np.sin(y) + X)

    fv = fgrad.vmap(f)
    contenders = []
    for task, x in inputs.items():
        want = by_hand(x)
        contenders.append(Contender("numpy", lambda x=x: by_hand(x), want, task=task))
        contenders.append(Contender("fgrad", lambda x=x: fv(x), want, task=task))
    notes = ["JAX and torch.func raise on an `if` that reads a batched value: fgrad only"]
    return Workload(
        "branch",
        f"vmap of a function with one data-dependent if, rows of 16, batch {batch}",
        [c for c in contenders if c.lib in libs],
        bars=[Bar("fgrad, rows disagree", "fgrad, rows agree", 3.0)],
        notes=notes,
    )


# deep_mlp: 100 layers h <- tanh(h @ W_i), loss 0.5 * sum(h^2)


def deep_mlp_workload(sizes, libs):
    rng = np.random.default_rng(0)
    n, width, batch = sizes.deep_layers, sizes.deep_width, sizes.deep_batch
    ws = [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(n)]
    x = rng.standard_normal((batch, width))

    def forward_by_hand():
        h = x
        for w in ws:
            h = np.tanh(h @ w)
        return 0.5 * np.sum(h * h)

    def grad_by_hand(wrt_weights):
        """Keeps the layer outputs, frees each once the backward pass has used it."""
        hs = [x]
        for w in ws:
            hs.append(np.tanh(hs[-1] @ w))
        out = hs.pop()
        ct = out
        g_ws = []
        for w in reversed(ws):
            da = ct * (1.0 - out * out)
            out = hs.pop()
            if wrt_weights:
                g_ws.append(out.T @ da)
            ct = da @ w.T
        return (g_ws[::-1], ct) if wrt_weights else ct

    want_loss = forward_by_hand()
    want_input = grad_by_hand(False)
    want_both = grad_by_hand(True)

    def maker(lib):
        ns = namespace(lib)

        def loss(ws, x):
            h = x
            for w in ws:
                h = ns.tanh(h @ w)
            return 0.5 * ns.sum(h * h)

        wl, xl = [tensor(lib, w) for w in ws], tensor(lib, x)
        if lib == "fgrad":
            g_in, g_both = fgrad.grad(loss, argnums=1), fgrad.grad(loss, argnums=(0, 1))
            forward = lambda: loss(wl, xl)
        elif lib == "autograd":
            ag = peer("autograd")
            g_in, g_both = ag.grad(loss, 1), ag.grad(loss, (0, 1))
            forward = lambda: loss(wl, xl)
        elif lib == "torch":
            torch = peer("torch")
            wt = [tensor(lib, w, requires_grad=True) for w in ws]
            xt = tensor(lib, x, requires_grad=True)

            def forward():
                with torch.no_grad():
                    return loss(wl, xl)

            def g_in(_, __):
                return torch.autograd.grad(loss(wl, xt), xt)[0]

            def g_both(_, __):
                gs = torch.autograd.grad(loss(wt, xt), wt + [xt])
                return list(gs[:-1]), gs[-1]
        else:
            jax = peer("jax")
            g_in = jax_transform(lib, jax.grad(loss, 1))
            g_both = jax_transform(lib, jax.grad(loss, (0, 1)))
            forward_fn = jax_transform(lib, loss)
            forward = lambda: forward_fn(wl, xl)
        return [
            Contender(lib, forward, want_loss, task="forward"),
            Contender(lib, lambda: g_in(wl, xl), want_input, task="grad input"),
            Contender(lib, lambda: g_both(wl, xl), want_both, task="grad all"),
        ]

    notes = []
    makers = {lib: (lambda lib=lib: maker(lib)) for lib in LIBS if lib != "numpy"}
    makers["numpy"] = lambda: [
        Contender("numpy", forward_by_hand, want_loss, task="forward"),
        Contender("numpy", lambda: grad_by_hand(False), want_input, task="grad input"),
        Contender("numpy", lambda: grad_by_hand(True), want_both, task="grad all"),
    ]
    bars = [
        Bar("fgrad, grad input", "numpy (by hand), grad input", 1.10, "tm"),
        Bar("fgrad, grad all", "numpy (by hand), grad all", 1.10, "tm"),
    ]
    return Workload(
        "deep_mlp",
        f"{n}-layer tanh MLP, width {width}, batch {batch}: peak memory",
        contenders_of(makers, libs, notes),
        notes=notes,
        bars=bars,
        memory=True,
        timed=False,
    )


def workloads(sizes=FULL, libs=tuple(LIBS), only=None):
    """key -> Workload, built only for the keys in `only` (all if None)."""
    x10 = np.random.default_rng(3).uniform(0.1, 0.5, size=10)
    long_chain_skip = {
        "jax.jit": "left out: compiling 20,000 unrolled ops takes minutes",
        "jax": "left out: about 10 s a call in eager mode",
    }
    builders = {
        "chain": lambda: chain_workload(
            "chain",
            f"grad, {sizes.chain}-op scalar chain",
            0.3,
            sizes.chain,
            libs,
            # issues 15 and 18: no regression from 0.20x autograd (scalar), 0.27x (10-element)
            [Bar("fgrad", "autograd", 0.2), Bar("fgrad", "torch (eager)", 1.0, strict=True)],
        ),
        "chain10": lambda: chain_workload(
            "chain10",
            f"grad, {sizes.chain}-op chain on 10-element arrays",
            x10,
            sizes.chain,
            libs,
            [Bar("fgrad", "autograd", 0.27), Bar("fgrad", "torch (eager)", 1.0, strict=True)],
        ),
        "mlp": lambda: mlp_workload(
            "mlp",
            "grad, seed MLP softmax loss 784-100-10, batch 100",
            (784, 100, 10),
            100,
            libs,
            [Bar("fgrad", BY_HAND, 1.2)],  # issues 15 and 18 (1.4 before them)
            4,
        ),
        "mlp_large": lambda: mlp_workload(
            "mlp_large",
            f"grad, MLP {'-'.join(map(str, sizes.large_mlp))}, batch {sizes.large_batch}",
            sizes.large_mlp,
            sizes.large_batch,
            libs,
            [Bar("fgrad", BY_HAND, 1.08)],
            8,
        ),
        "hessian": lambda: hessian_workload(sizes.hessian_dim, libs),
        "hvp": lambda: hvp_workload(sizes.hvp_dim, libs),
        "tanh6": lambda: tanh_workload(6, libs),
        "tanh20": lambda: taylor_tanh_workload(libs),
        "nth_derivative": lambda: nth_derivative_workload(libs),
        "laplacian": lambda: laplacian_workload(sizes.laplacian_dim, sizes.laplacian_width, libs),
        "jacrev": lambda: jacobian_workload("jacrev", sizes.jac_dim, libs),
        "jacfwd": lambda: jacobian_workload("jacfwd", sizes.jac_dim, libs),
        "per_example": lambda: per_example_workload(
            "per_example",
            f"per-example grads (vmap of grad), seed MLP 784-100-10, batch {sizes.example_batch}",
            mlp_example_loss,
            mlp_data((784, 100, 10), sizes.example_batch, 4),
            mlp_per_example_by_hand,
            libs,
            [Bar("fgrad", BY_HAND, 1.5)],
        ),
        "per_example_logreg": lambda: per_example_workload(
            "per_example_logreg",
            f"per-example grads (vmap of grad), logistic regression, 10 features, "
            f"batch {sizes.logreg_batch}",
            logreg_loss,
            logreg_data(10, sizes.logreg_batch, 10),
            logreg_per_example_by_hand,
            libs,
            [Bar("fgrad", BY_HAND, 3.0)],
        ),
        "branch": lambda: branch_workload(sizes.branch_batch, libs),
        "chain20k": lambda: chain20k_workload(sizes, x10, libs, long_chain_skip),
        "deep_mlp": lambda: deep_mlp_workload(sizes, libs),
    }
    keys = list(builders) if only is None else only
    return {key: builders[key]() for key in keys}


def chain20k_workload(sizes, x10, libs, skip):
    w = chain_workload(
        "chain20k",
        f"grad, {sizes.long_chain}-op chain on 10-element arrays",
        x10,
        sizes.long_chain,
        libs,
        [
            Bar("fgrad", "autograd", 0.35),
            Bar("fgrad", "autograd", 1.0, "tm"),
            Bar("fgrad", "autograd", 1.0, "rss"),
        ],
        skip=skip,
    )
    w.memory = True
    return w


WORKLOAD_KEYS = (
    "chain",
    "chain10",
    "mlp",
    "mlp_large",
    "hessian",
    "hvp",
    "tanh6",
    "tanh20",
    "nth_derivative",
    "laplacian",
    "jacrev",
    "jacfwd",
    "per_example",
    "per_example_logreg",
    "branch",
    "chain20k",
    "deep_mlp",
)


# --- validation ---------------------------------------------------------------------------


def arrays(result):
    """A result (an array, a number, a tensor, or nested tuples/lists of them) as NumPy arrays."""
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in arrays(r)]
    if hasattr(result, "detach"):  # a torch tensor
        result = result.detach().numpy()
    return [np.asarray(result, dtype=float)]


def mismatch(got, want, rtol=RTOL):
    """Why `got` differs from `want`, or None if they agree to rtol (relative, in norm)."""
    got, want = arrays(got), arrays(want)
    if len(got) != len(want):
        return f"returned {len(got)} arrays, not {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:  # broadcasting in the error below would hide this
            return f"array {i} has shape {g.shape}, not {w.shape}"
        err = float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-300))
        if not err <= rtol:  # `not <=` also catches nan
            return f"array {i} differs by {err:.2e} (relative, in norm)"
    return None


def validate(chosen):
    """Run every contender (and its extra checks) once against the hand-written result.
    Returns the disagreements, one message each (empty when all agree)."""
    problems = []
    for workload in chosen:
        for c in workload.contenders:
            for fn, want, what in [(c.fn, c.want, "")] + c.checks:
                try:
                    why = mismatch(fn(), want, c.rtol)
                except Exception as error:  # a failure is reported like a disagreement
                    why = f"raised {type(error).__name__}: {error}"
                if why is not None:
                    where = f" ({what})" if what else ""
                    problems.append(f"{workload.key}: {c.label}{where} {why}")
    return problems


# --- memory: one fresh process per (workload, contender) ----------------------------------


def _status_kib(field_name):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def memory_here(workload, label):
    """In this process: {"rss": peak RSS above the RSS before the call, "tm": tracemalloc's
    peak or None}, in bytes, for one call of the contender `label` after a warm-up call."""
    (c,) = [c for c in workload.contenders if c.label == label]
    c.fn()  # warm-up: first-call allocations (caches, lazy imports, jit) are not the cost
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets VmHWM, the peak RSS, to the current RSS
    before = _status_kib("VmRSS")
    result = c.fn()
    rss = (_status_kib("VmHWM") - before) * 1024
    del result
    gc.collect()
    tm = None
    if c.lib in TRACEMALLOC_LIBS:
        tracemalloc.start()
        try:
            c.fn()
            tm = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return {"rss": rss, "tm": tm}


def memory_in_fresh_process(key, label, lib, quick):
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--memory-child",
        key,
        label,
        "--libs",
        lib,
    ] + (["--quick"] if quick else [])
    # Large arrays get their own mappings, returned to the system when freed, so that RSS
    # follows what is alive (glibc's threshold otherwise adapts to the allocation pattern).
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if run.returncode != 0:
        raise RuntimeError(f"the memory child for {key}, {label} failed:\n{run.stdout}{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


# --- reporting ----------------------------------------------------------------------------


def header(args):
    threads = (
        "one thread (BLAS, OpenMP, XLA, torch)"
        if PINNED
        else "threads NOT pinned (NumPy loaded first)"
    )
    libs = ", ".join(
        f"{LIBS[lib]} {version(lib.split('.')[0])}" for lib in args.libs if lib != "jax.jit"
    )
    mode = "quick" if args.quick else "full"
    return (
        f"{libs} | Python {platform.python_version()} | {os.cpu_count()} CPUs | {threads}"
        f"\n{mode} sizes | {args.repeats} interleaved rounds | sample {args.sample_time} s"
    )


KEY_WIDTH = max(map(len, WORKLOAD_KEYS))
COLUMNS = (
    f"{'workload':{KEY_WIDTH}} {'contender':30} {'median':>13} {'IQR':>17}  "
    f"{'x autograd (IQR)':>21}  {'x numpy (IQR)':>21}  bar"
)


def ratio_text(values, den_values):
    if den_values is None or not all(den_values):
        return f"{'':21}" if den_values is None else f"{'n/a (0)':>9}{'':12}"
    q1, med, q3 = timing.quartiles([a / b for a, b in zip(values, den_values)])
    if q1 == q3:
        return f"{med:>8.2f}x{'':12}"
    return f"{med:>8.2f}x ({q1:.2f}-{q3:.2f})".ljust(21)


def value_text(value, unit):
    if unit == "MiB":
        return f"{value / MIB:9.1f} MiB"
    scale = 1e6 if unit.startswith("us") else 1e3
    return f"{value * scale:9.2f} {unit}"


def den_label(label, lib):
    """The label of the same task by another library."""
    _, _, task = label.partition(", ")
    return LIBS[lib] + (f", {task}" if task else "")


def rows(workload, samples, measure):
    """Table lines for one measure ("time", "tm", "rss") of a workload; samples: label -> list."""
    unit = "MiB" if measure != "time" else workload.unit
    scale = 1 / workload.per if measure == "time" else 1
    lines, verdicts = [], []
    name = workload.key if measure == "time" else f"{workload.key} [{measure}]"
    for label, values in samples.items():
        q1, med, q3 = timing.quartiles([v * scale for v in values])
        iqr = (
            f"{value_text(q1, unit).split()[0]}-{value_text(q3, unit).split()[0]}"
            if measure == "time"
            else ""
        )
        cells = [
            ratio_text(values, samples.get(den_label(label, lib))) for lib in ("autograd", "numpy")
        ]
        bar_texts = []
        for bar in workload.bars:
            if bar.measure != measure or bar.num != label:
                continue
            if bar.den is None:  # an absolute time: the median call
                ratio = timing.quartiles(values)[1]
                against = ""
            elif bar.den in samples:
                ratio = timing.quartiles(timing.paired_ratios(samples, bar.num, bar.den))[1]
                against = f" {bar.den.split(' (')[0]}"
            else:
                continue
            verdict = "met" if bar.met(ratio) else "NOT met"
            limit = bar.shown(bar.limit).replace(" ", "")
            bar_texts.append(
                f"<{'' if bar.strict else '='}{limit}{against}: {bar.shown(ratio)} {verdict}"
            )
            verdicts.append((workload.key, measure, bar, ratio, verdict))
        lines.append(
            f"{name:{KEY_WIDTH}} {label:30} {value_text(med, unit):>13} {iqr:>17}  "
            f"{cells[0]}  {cells[1]}  {'; '.join(bar_texts)}".rstrip()
        )
        name = ""
    return lines, verdicts


def missing_bars(workload, measures):
    """Bars whose contenders were not measured (a peer not installed)."""
    return [
        (workload.key, bar.measure, bar, None, "n/a (not measured)")
        for bar in workload.bars
        if bar.measure in measures
    ]


# --- profiling ----------------------------------------------------------------------------


def profile(workload, seconds=2.0, top=30):
    """cProfile of fgrad on one workload (each of its tasks): the functions with the most time
    of their own."""
    for c in workload.contenders:
        if c.lib != "fgrad":
            continue
        calls = timing.calls_per_sample(c.fn, seconds)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            c.fn()
        profiler.disable()
        print(
            f"\nProfile of {c.label} on {workload.key}, {calls} calls (tottime: own time; "
            "cumtime: with callees; cProfile inflates small calls)"
        )
        pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(top)


# --- main ---------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, 5 rounds of 0.01 s samples (unless given)",
    )
    parser.add_argument("--repeats", type=int, help="interleaved rounds (default 21; quick 5)")
    parser.add_argument(
        "--sample-time", type=float, help="seconds per timing sample (default 0.05; quick 0.01)"
    )
    parser.add_argument("--only", help=f"comma-separated workloads of: {', '.join(WORKLOAD_KEYS)}")
    parser.add_argument(
        "--libs",
        default=",".join(LIBS),
        help=f"comma-separated contenders of: {', '.join(LIBS)} (default all)",
    )
    parser.add_argument("--check", action="store_true", help="only validate; no timing, no memory")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory processes")
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        choices=WORKLOAD_KEYS,
        help="after the table, a cProfile of fgrad on this workload",
    )
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (5 if args.quick else 21)
    args.sample_time = (
        args.sample_time if args.sample_time is not None else (0.01 if args.quick else 0.05)
    )
    args.only = args.only.split(",") if args.only else list(WORKLOAD_KEYS)
    args.libs = args.libs.split(",")
    for name, given, allowed in (("--only", args.only, WORKLOAD_KEYS), ("--libs", args.libs, LIBS)):
        unknown = [g for g in given if g not in allowed]
        if unknown:
            parser.error(f"{name}: unknown {unknown}; choose from {', '.join(allowed)}")
    if "numpy" not in args.libs:
        args.libs.insert(0, "numpy")  # the reference
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (the table reports quartiles)")
    return args


def main(argv=None):
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.memory_child:
        key, label = args.memory_child
        print(json.dumps(memory_here(workloads(sizes, args.libs, [key])[key], label)))
        return 0
    print(header(args))
    chosen = workloads(sizes, args.libs, args.only)
    problems = validate(chosen.values())
    if problems:
        print("Results disagree; nothing was measured:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    for name, why in MISSING.items():
        print(f"{name}: not installed ({why})")
    if MISSING:
        print(INSTALL)
    print(
        f"every result agrees with {BY_HAND} to {RTOL:g} (relative, in norm): "
        + ", ".join(f"{w.key} ({len(w.contenders)})" for w in chosen.values())
    )
    tighter = [
        f"{w.key}: {c.label} to {c.rtol:g}"
        for w in chosen.values()
        for c in w.contenders
        if c.rtol < RTOL
    ]
    if tighter:
        print("(and to a tighter tolerance, with their extra checks: " + "; ".join(tighter) + ")")
    if args.check:
        for key in args.profile:
            profile(chosen[key])
        return 0
    table, verdicts = [COLUMNS], []
    for workload in chosen.values():
        if workload.timed:
            fns = {c.label: c.fn for c in workload.contenders}
            times = timing.interleaved_times(fns, args.repeats, args.sample_time)
            lines, found = rows(workload, times, "time")
            table += lines
            verdicts += found or missing_bars(workload, ["time"])
            print(*lines, sep="\n", flush=True)  # progress; the full table comes at the end
        if workload.memory and not args.no_memory:
            figures = {
                c.label: memory_in_fresh_process(workload.key, c.label, c.lib, args.quick)
                for c in workload.contenders
            }
            for measure in ("tm", "rss"):
                samples = {
                    label: [fig[measure]]
                    for label, fig in figures.items()
                    if fig[measure] is not None
                }
                lines, found = rows(workload, samples, measure)
                table += lines
                verdicts += found
            print(*table[-len(figures) * 2 :], sep="\n", flush=True)
        for note in workload.notes:
            table.append(f"{'':{KEY_WIDTH}} ({note})")
    print("\n" + "\n".join(table))
    print("\nBars (median of same-round ratios; tm = tracemalloc peak, rss = peak RSS delta):")
    for key, measure, bar, ratio, verdict in verdicts:
        shown = bar.shown(ratio) if ratio is not None else "-"
        print(f"  {key:{KEY_WIDTH}} {measure:5} {bar.text():52} {shown:>8}  {verdict}")
    for key in args.profile:
        profile(chosen[key])
    return 0


if __name__ == "__main__":
    sys.exit(main())
