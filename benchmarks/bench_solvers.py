"""Implicit differentiation through `fgrad.scipy.optimize.minimize` against the solve itself
and against differentiating an unrolled solver (issue 36's optimize bar).

    python benchmarks/bench_solvers.py            # the figures, about a minute
    python benchmarks/bench_solvers.py --check    # only check the values, fewer rounds

Workload: L2-regularised logistic regression, 100 weights, 400 examples; the weight of the
L2 term, exp(log_lam), is the parameter. The solution w*(log_lam) is found by SciPy's
L-BFGS-B (fgrad supplies the gradient); the hypergradient d/d log_lam of a validation loss at
w* is computed by the implicit function theorem (one conjugate-gradient solve with
Hessian-vector products, one mixed second derivative), never through the iterations.

- solve: `minimize` on plain values (the cost of the solve itself).
- implicit: `grad` of the validation loss through `minimize`: the solve plus the implicit
  derivative (bar: <= 2x the solve).
- unrolled: `grad` through 100 steps of gradient descent written in fgrad operations (the
  alternative that differentiates the iterations); its step count is fixed, so its solution
  is not the minimizer: it is the cost that is compared, not the value.

Before timing, the implicit hypergradient is checked against central differences of the
whole solve (relative 1e-5); the script exits with status 1 if they disagree. Timing is
interleaved (`timing.py`), one BLAS thread; ratios are medians of same-round ratios with
quartiles.

Imports: NumPy, SciPy and fgrad.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

PINNED = __name__ == "__main__" and timing.pin_threads()

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy.optimize import minimize

N_FEATURES, N_TRAIN, N_VAL, STEPS = 100, 400, 200, 100
rng = np.random.default_rng(0)
W_TRUE = rng.standard_normal(N_FEATURES) / np.sqrt(N_FEATURES)
X_TRAIN = rng.standard_normal((N_TRAIN, N_FEATURES))
Y_TRAIN = (rng.uniform(size=N_TRAIN) < 1 / (1 + np.exp(-X_TRAIN @ W_TRUE * 4))).astype(float)
X_VAL = rng.standard_normal((N_VAL, N_FEATURES))
Y_VAL = (rng.uniform(size=N_VAL) < 1 / (1 + np.exp(-X_VAL @ W_TRUE * 4))).astype(float)
OPTIONS = {"gtol": 1e-9, "ftol": 1e-14, "maxiter": 1000}


def logistic_loss(w, x, y):
    z = x @ w
    return fnp.mean(fnp.logaddexp(0.0, z) - y * z)


def training_loss(w, log_lam):
    return logistic_loss(w, X_TRAIN, Y_TRAIN) + 0.5 * fnp.exp(log_lam) * fnp.sum(w**2)


def solve(log_lam):
    return minimize(
        training_loss, np.zeros(N_FEATURES), args=(log_lam,), method="L-BFGS-B", options=OPTIONS
    )


def validation_loss(log_lam):
    return logistic_loss(solve(log_lam).x, X_VAL, Y_VAL)


def unrolled_validation_loss(log_lam, lr=2.0):
    w = fnp.zeros(N_FEATURES)
    step = fgrad.grad(training_loss)
    for _ in range(STEPS):
        w = w - lr * step(w, log_lam)
    return logistic_loss(w, X_VAL, Y_VAL)


def check(log_lam):
    """The implicit hypergradient against central differences of the whole solve."""
    g = float(fgrad.grad(validation_loss)(log_lam))
    h = 1e-4
    fd = (float(validation_loss(log_lam + h)) - float(validation_loss(log_lam - h))) / (2 * h)
    ok = abs(g - fd) <= 1e-5 * abs(fd)
    res = solve(log_lam)
    print(
        f"implicit hypergradient {g:.10g}, central differences of the solve {fd:.10g} "
        f"({'agree' if ok else 'DISAGREE'} to 1e-5); L-BFGS-B: {res.nit} iterations, "
        f"{res.nfev} evaluations"
    )
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="check the values, fewer rounds")
    opts = parser.parse_args()
    log_lam = np.log(1e-2)
    if not check(log_lam):
        sys.exit(1)
    contenders = {
        "solve": lambda: solve(log_lam),
        "implicit": lambda: fgrad.grad(validation_loss)(log_lam),
        "unrolled": lambda: fgrad.grad(unrolled_validation_loss)(log_lam),
    }
    rounds = 3 if opts.check else 9
    times = timing.interleaved_times(contenders, rounds=rounds, sample_time=0.2)
    print(f"one BLAS thread: {PINNED}; medians of {rounds} interleaved rounds")
    for name in contenders:
        print(f"  {name:9s} {np.median(times[name]) * 1e3:9.1f} ms")
    print("same-run ratios:")
    implicit = timing.ratio_cell(timing.paired_ratios(times, "implicit", "solve"))
    unrolled = timing.ratio_cell(timing.paired_ratios(times, "unrolled", "implicit"))
    print(f"  implicit gradient / solve            {implicit}   (bar <= 2x)")
    print(f"  unrolled (100 GD steps) / implicit   {unrolled}")


if __name__ == "__main__":
    main()
