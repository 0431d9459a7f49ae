"""fgrad.jit against eager fgrad, hand-written NumPy and JAX's jit: the loops users run.

    python benchmarks/bench_jit.py                   # fgrad and NumPy only
    /tmp/peers/bin/python benchmarks/bench_jit.py    # with JAX, if installed there
    python benchmarks/bench_jit.py --only hessian,mlp --rounds 21   # also: memory, odeint
    python benchmarks/bench_jit.py --check           # validate only, a few seconds

Workloads (`--only` takes their keys), with the bars of issue 33:

    hessian   Hessian of Rosenbrock on R^10                jit >= 10x faster than eager
    jacfwd    jacfwd of a quaternion rotation (R^4 -> R^3)  jit >= 6x faster than eager
    logreg    per-example gradients of logistic regression by vmap(grad), batch 1000, 10
              features                                     jit <= 2x hand-vectorised NumPy
    mlp       grad of the seed MLP (784-100-10, batch 100)  jit <= 1.05x the hand-written one
    chain     grad of a 200-op scalar chain                 jit no slower than eager
    chain10   the same chain on 10-element arrays           jit no slower than eager
    masked    grad of a least-squares loss over the targets that are not nan
              (mean(..., where=mask)), batch 256, 10 features   no bar: a record replays
              every mask (one path), against eager and NumPy by hand

Then `odeint`: the gradient of a pendulum's solution against the solve itself (bar: <= 3x),
and the same ratio for the method written in NumPy by hand.
For each workload: the time per call of every contender (median of interleaved rounds, one thread),
the same-round ratios, and the time to the first result (a fresh jit's first call, which
records; JAX jit's first call, which traces and compiles) against one eager call, and the
calls until the first replay: for most workloads the second call compiles the record into
Python and replays it; for jit(grad(f)) the first call records f alone (under grad), the
second records the gradient from f's record and the third compiles. Then the
peak memory (tracemalloc) of one gradient of a 100-layer tanh chain, eager and replayed.

Every contender's result is checked against eager fgrad's first (jit: bit for bit; JAX:
relative error at most 1e-10); the script exits with status 1 if any disagree.

Imports: NumPy, fgrad, the shared `timing.py` and `bench_peers.py`'s workload functions; JAX
only if it is installed.
"""

import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import argparse
import importlib.util
import sys
import time
import tracemalloc

import bench_peers as peers
import numpy as np

import fgrad
import fgrad.numpy as fnp

HAVE_JAX = importlib.util.find_spec("jax") is not None
if HAVE_JAX:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp


# --- the workloads, written once for fgrad.numpy and jax.numpy ------------------------------------


def rosenbrock(ns):
    return lambda x: ns.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quaternion_rotation(ns):
    def rotate(q):
        w, x, y, z = q[0], q[1], q[2], q[3]
        r = ns.stack(
            [
                ns.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)]),
                ns.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)]),
                ns.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]),
            ]
        )
        return r @ ns.array([1.0, 2.0, 3.0])

    return rotate


def logistic_loss(ns):
    return lambda w, xi, yi: ns.log1p(ns.exp(-yi * ns.dot(xi, w)))


def logistic_grads_by_hand(w, X, y):
    """Per-example gradients, vectorised: -y_i x_i sigmoid(-y_i x_i.w)."""
    m = -y * (X @ w)
    return (-y / (1.0 + np.exp(-m)))[:, None] * X


def masked_loss(ns):
    def loss(w, x, y):
        valid = ~ns.isnan(y)
        err = x @ w - ns.where(valid, y, 0.0)
        return ns.mean(err**2, where=valid)

    return loss


def masked_grad_by_hand(w, x, y):
    """The gradient of the mean squared error over the targets that are not nan."""
    valid = ~np.isnan(y)
    err = x @ w - np.where(valid, y, 0.0)
    return x.T @ np.where(valid, 2.0 * err / valid.sum(), 0.0)


class Workload:
    def __init__(self, key, title, eager, args, by_hand=None, jax_fun=None, jax_args=None):
        self.key, self.title = key, title
        self.eager, self.args = eager, args
        self.by_hand, self.jax_fun, self.jax_args = by_hand, jax_fun, jax_args


def workloads():
    rng = np.random.default_rng(0)
    out = []
    x10 = rng.normal(size=10)
    out.append(
        Workload(
            "hessian",
            "Hessian of Rosenbrock, R^10",
            fgrad.hessian(rosenbrock(fnp)),
            (x10,),
            jax_fun=HAVE_JAX and (lambda: jax.hessian(rosenbrock(jnp))),
        )
    )
    q = rng.normal(size=4)
    out.append(
        Workload(
            "jacfwd",
            "jacfwd of a quaternion rotation",
            fgrad.jacfwd(quaternion_rotation(fnp)),
            (q,),
            jax_fun=HAVE_JAX and (lambda: jax.jacfwd(quaternion_rotation(jnp))),
        )
    )
    w, X, y = rng.normal(size=10), rng.normal(size=(1000, 10)), np.sign(rng.normal(size=1000))
    out.append(
        Workload(
            "logreg",
            "per-example logistic regression gradients, vmap(grad), batch 1000",
            fgrad.vmap(fgrad.grad(logistic_loss(fnp)), in_axes=(None, 0, 0)),
            (w, X, y),
            by_hand=lambda: logistic_grads_by_hand(w, X, y),
            jax_fun=HAVE_JAX
            and (lambda: jax.vmap(jax.grad(logistic_loss(jnp)), in_axes=(None, 0, 0))),
        )
    )
    ws, Xm, I_y = peers.mlp_data((784, 100, 10), 100, seed=0)
    out.append(
        Workload(
            "mlp",
            "grad of the seed MLP, 784-100-10, batch 100",
            fgrad.grad(peers.mlp_loss(fnp)),
            (ws, Xm, I_y),
            by_hand=lambda: peers.mlp_grad_by_hand(ws, Xm, I_y),
            jax_fun=HAVE_JAX and (lambda: jax.grad(peers.mlp_loss(jnp))),
        )
    )
    out.append(
        Workload(
            "chain",
            "grad of a 200-op scalar chain",
            fgrad.grad(peers.chain(fnp, 200, reduce=False)),
            (0.3,),
            by_hand=lambda: peers.chain_grad_by_hand(0.3, 200),
            jax_fun=HAVE_JAX and (lambda: jax.grad(peers.chain(jnp, 200, reduce=False))),
        )
    )
    x = rng.normal(size=10)
    out.append(
        Workload(
            "chain10",
            "grad of a 200-op chain on 10-element arrays",
            fgrad.grad(peers.chain(fnp, 200, reduce=True)),
            (x,),
            by_hand=lambda: peers.chain_grad_by_hand(x, 200),
            jax_fun=HAVE_JAX and (lambda: jax.grad(peers.chain(jnp, 200, reduce=True))),
        )
    )
    wm, Xb, yb = rng.normal(size=10), rng.normal(size=(256, 10)), rng.normal(size=256)
    yb[rng.random(256) < 0.1] = np.nan
    out.append(
        Workload(
            "masked",
            "grad of a least-squares loss masked by the targets' nans, batch 256",
            fgrad.grad(masked_loss(fnp)),
            (wm, Xb, yb),
            by_hand=lambda: masked_grad_by_hand(wm, Xb, yb),
            jax_fun=HAVE_JAX and (lambda: jax.grad(masked_loss(jnp))),
        )
    )
    return out


# --- checks and timings ---------------------------------------------------------------------------


def leaves(tree):
    return fgrad.tree_util.tree_flatten(tree)[0]


def check(workload):
    """The jitted replay equals eager bit for bit; JAX (if here) to 1e-10. Returns problems."""
    problems = []
    want = workload.eager(*workload.args)
    jitted = fgrad.jit(workload.eager)
    for call in range(4):  # (jit(grad): records at the first two, replays from the third)
        got = jitted(*workload.args)
        for a, b in zip(leaves(want), leaves(got)):
            if np.asarray(a).tobytes() != np.asarray(b).tobytes():
                problems.append(f"{workload.key}: jit call {call} differs from eager")
    if workload.jax_fun:
        got = jax.jit(workload.jax_fun())(*workload.args)
        for a, b in zip(leaves(want), leaves(got)):
            err = np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(a), 1e-300)
            if err > 1e-10:
                problems.append(f"{workload.key}: JAX differs from fgrad by {err:.1e}")
    return problems


def first_call_seconds(make, args, repeats=5):
    """The median time of the first call of a freshly made function."""
    times = []
    for _ in range(repeats):
        fn = make()
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def first_call_ratios(workload, args, pairs=51):
    """Same-round ratios of a fresh jit's first, second and third calls to an eager call (one
    eager call and the three after one another in each of `pairs` rounds), and the four
    medians: the medians of 5 calls, each taken in a block of its own, moved by a fifth from
    run to run (logreg's ratio 1.22x to 1.64x); drift between rounds cancels out of each
    paired ratio."""
    eager, calls = [], [[], [], []]
    for _ in range(pairs):
        jitted = fgrad.jit(workload.eager)
        start = time.perf_counter()
        workload.eager(*args)
        eager.append(time.perf_counter() - start)
        for times in calls:
            # (a compiled record is compiled afresh, as for a program run for the first time:
            # fgrad keeps compiled sources, which a fresh jit of the same workload in the next
            # round would find)
            fgrad.jitting._CODE_CACHE.clear()
            start = time.perf_counter()
            jitted(*args)
            times.append(time.perf_counter() - start)
    return (
        [[c / e for c, e in zip(times, eager)] for times in calls],
        timing.quartiles(eager)[1],
        [timing.quartiles(times)[1] for times in calls],
    )


def run(workload, rounds, sample_time):
    args = workload.args
    jitted = fgrad.jit(workload.eager)
    for _ in range(3):  # (jit(grad): the third call compiles the record the second made)
        jitted(*args)
    contenders = {
        "fgrad eager": lambda: workload.eager(*args),
        "fgrad jit": lambda: jitted(*args),
    }
    if workload.by_hand is not None:
        contenders["numpy by hand"] = workload.by_hand
    if workload.jax_fun:
        jax_jitted = jax.jit(workload.jax_fun())
        jax_args = [jax.tree_util.tree_map(jnp.asarray, a) for a in args]

        def jax_call():
            return jax.block_until_ready(jax_jitted(*jax_args))

        jax_call()
        contenders["jax jit"] = jax_call
    times = timing.interleaved_times(contenders, rounds, sample_time)
    print(f"\n{workload.key}: {workload.title}")
    print(f"  {'contender':16s} {'us/call':>10s}   {'jit / this (same rounds)':>26s}")
    for name, samples in times.items():
        median = timing.quartiles(samples)[1] * 1e6
        ratio = timing.ratio_cell(timing.paired_ratios(times, "fgrad jit", name))
        print(f"  {name:16s} {median:10.1f}   {ratio}")
    (ratios, second_ratios, third_ratios), eager_first, (jit_first, jit_second, jit_third) = (
        first_call_ratios(workload, args)
    )
    line = (
        f"  first result: eager {eager_first * 1e6:.0f} us, fgrad jit {jit_first * 1e6:.0f} us; "
        f"jit / eager {timing.ratio_cell(ratios).strip()}"
    )
    if workload.jax_fun:
        jax_args = [jax.tree_util.tree_map(jnp.asarray, a) for a in args]
        jax_first = first_call_seconds(
            lambda: lambda *a: jax.block_until_ready(jax.jit(workload.jax_fun())(*a)),
            jax_args,
            repeats=3,
        )
        line += f", jax jit trace+compile {jax_first * 1e6:.0f} us"
    print(line)
    print(
        f"  second call: fgrad jit {jit_second * 1e6:.0f} us; / one eager call "
        f"{timing.ratio_cell(second_ratios).strip()}; third call: {jit_third * 1e6:.0f} us, "
        f"{timing.ratio_cell(third_ratios).strip()}"
    )


def tanh_chain_memory(layers=100, width=512, batch=64):
    """Peak traced NumPy memory of one gradient of a 100-layer tanh MLP, eager and replayed."""
    rng = np.random.default_rng(3)
    ws = [rng.normal(size=(width, width)) / np.sqrt(width) for _ in range(layers)]
    x = rng.normal(size=(batch, width))

    def loss(x, ws):
        for w in ws:
            x = fnp.tanh(x @ w)
        return fnp.sum(x)

    eager = fgrad.grad(loss)
    jitted = fgrad.jit(eager)
    jitted(x, ws)
    peaks = {}
    for name, fn in (("eager", eager), ("jit", jitted)):
        fn(x, ws)
        tracemalloc.start()
        fn(x, ws)
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(
        f"\npeak memory of one gradient of a {layers}-layer tanh MLP (width {width}, batch "
        f"{batch}), tracemalloc: eager {peaks['eager'] / 2**20:.1f} MiB, jit replay "
        f"{peaks['jit'] / 2**20:.1f} MiB ({peaks['jit'] / peaks['eager']:.2f}x)"
    )


def _solve_and_gradient(solve, gradient, rounds):
    """The median seconds of a call of each, in interleaved rounds, and the cell of their
    same-round ratios (gradient / solve)."""
    times = timing.interleaved_times({"solve": solve, "gradient": gradient}, rounds, 0.2)
    medians = (timing.quartiles(times[k])[1] for k in ("solve", "gradient"))
    return (*medians, timing.ratio_cell(timing.paired_ratios(times, "gradient", "solve")))


def _pendulum_by_hand(y0, t, b, c):
    """The pendulum's gradient written in NumPy by hand, by fgrad's method (SciPy's LSODA on
    the state and its sensitivities to b and c, at SciPy's default tolerances), with the
    plain solve as its `solve` attribute: what the bar's ratio is for NumPy code of the same
    method written by hand (each right-hand side a few array expressions)."""
    import scipy.integrate as si

    def rhs(y, s):
        return np.array([y[1], -b * y[1] - c * np.sin(y[0])])

    def sensitivities(v, s):  # v: y, then S[k, j] = dy_j / dp_k for p = (b, c)
        out = np.empty(6)
        sin, cos = np.sin(v[0]), np.cos(v[0])
        out[0], out[1] = v[1], -b * v[1] - c * sin
        S, dS = v[2:].reshape(2, 2), out[2:].reshape(2, 2)
        dS[:, 0] = S[:, 1]
        dS[:, 1] = -b * S[:, 1] - c * cos * S[:, 0]
        dS[0, 1] -= v[1]
        dS[1, 1] -= sin
        return out

    start = np.concatenate([y0, np.zeros(4)])

    def gradient():
        ys = si.odeint(rhs, y0, t)
        S = si.odeint(sensitivities, start, t)[:, 2:].reshape(-1, 2, 2)
        return np.sum(2.0 * ys[:, None, 0] * S[:, :, 0], axis=0)

    # CVODES's errconS=False, by tolerances: the sensitivities out of LSODA's (max-norm) error
    # test, one solve of state and sensitivities: the steps of the solve, a less accurate gradient
    loose = dict(atol=[1.49012e-8] * 2 + [1e300] * 4, rtol=[1.49012e-8] * 2 + [0.0] * 4)

    def without_error_test():
        v = si.odeint(sensitivities, start, t, **loose)
        return np.sum(2.0 * v[:, None, 0] * v[:, 2:].reshape(-1, 2, 2)[:, :, 0], axis=0)

    gradient.solve = lambda: np.sum(si.odeint(rhs, y0, t)[:, 0] ** 2)
    gradient.without_error_test = without_error_test
    return gradient


def pendulum(rounds=5):
    """The gradient of an odeint solution against the solve itself: odeint records its
    right-hand side and, for the gradient, the sensitivity system, and replays them at every
    step. Needs SciPy. With JAX installed, the same ratio for JAX's own odeint, jitted."""
    if importlib.util.find_spec("scipy") is None:
        print("\nodeint pendulum: SciPy not installed")
        return
    from fgrad.scipy.integrate import odeint

    def rhs(y, t, b, c):
        return fnp.stack([y[1], -b * y[1] - c * fnp.sin(y[0])])

    y0, t = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 10.0, 101)

    def loss(b, c):
        return fnp.sum(odeint(rhs, y0, t, args=(b, c))[:, 0] ** 2)

    gradient = fgrad.grad(loss, argnums=(0, 1))
    solve, grad, ratio = _solve_and_gradient(
        lambda: loss(0.25, 5.0), lambda: gradient(0.25, 5.0), rounds
    )
    print(
        f"\nodeint pendulum (2 states, 101 time points, 2 parameters): solve {solve * 1e3:.1f} "
        f"ms, gradient {grad * 1e3:.1f} ms; gradient / solve {ratio}"
    )
    by_hand = _pendulum_by_hand(y0, t, 0.25, 5.0)
    error = np.max(np.abs(np.subtract(by_hand(), gradient(0.25, 5.0))) / np.abs(by_hand()))
    if error > 1e-5:  # the same method at the same tolerance: equal to the solver's accuracy
        raise SystemExit(f"odeint pendulum: the gradient by hand differs by {error:.1e}")
    solve, grad, ratio = _solve_and_gradient(by_hand.solve, by_hand, rounds)
    print(
        f"  NumPy by hand (SciPy's odeint, the sensitivities written out): solve "
        f"{solve * 1e3:.2f} ms, gradient {grad * 1e3:.2f} ms; gradient / solve {ratio}"
    )
    solve, grad, ratio = _solve_and_gradient(by_hand.solve, by_hand.without_error_test, rounds)
    print(
        f"  the same, one solve with the sensitivities out of LSODA's error test (less "
        f"accurate): gradient {grad * 1e3:.2f} ms; gradient / solve {ratio}"
    )
    if HAVE_JAX:  # the same ratio for JAX's odeint (Dormand-Prince, its adjoint), both jitted
        from jax.experimental.ode import odeint as jax_odeint

        def jax_rhs(y, t, b, c):
            return jnp.stack([y[1], -b * y[1] - c * jnp.sin(y[0])])

        def jax_loss(b, c):
            return jnp.sum(jax_odeint(jax_rhs, jnp.asarray(y0), jnp.asarray(t), b, c)[:, 0] ** 2)

        jax_solve, jax_gradient = jax.jit(jax_loss), jax.jit(jax.grad(jax_loss, argnums=(0, 1)))
        solve, grad, ratio = _solve_and_gradient(
            lambda: jax_solve(0.25, 5.0).block_until_ready(),
            lambda: jax.block_until_ready(jax_gradient(0.25, 5.0)),
            rounds,
        )
        print(
            f"  jax jit (its odeint): solve {solve * 1e3:.2f} ms, gradient {grad * 1e3:.2f} ms; "
            f"gradient / solve {ratio}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated workload keys")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sample-time", type=float, default=0.05)
    parser.add_argument("--check", action="store_true", help="validate only")
    opts = parser.parse_args()
    chosen = workloads()
    if opts.only:
        keys = opts.only.split(",")
        chosen = [w for w in chosen if w.key in keys]
    problems = [p for w in chosen for p in check(w)]
    for p in problems:
        print("MISMATCH", p)
    if opts.check:
        print(f"checked {len(chosen)} workloads: {len(problems)} mismatches")
        return 1 if problems else 0
    print(f"fgrad {fgrad.__version__}, NumPy {np.__version__}", end="")
    print(f", JAX {jax.__version__}" if HAVE_JAX else ", JAX not installed", end="")
    print(f"; one thread: {PINNED}")
    for w in chosen:
        run(w, opts.rounds, opts.sample_time)
    if not opts.only or "memory" in opts.only.split(","):
        tanh_chain_memory()
    if not opts.only or "odeint" in opts.only.split(","):
        pendulum()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
