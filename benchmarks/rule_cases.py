"""What `bench_forward_rules.py` and `bench_taylor_rules.py` share: the test matrices, how a
key names its primitives, the comparison of two results, and the timing of a rule against
the one it stands in for.

A key is a primitive's module (after `fgrad.`) and name, as `"numpy.linalg.inv"`.

Imports: NumPy, fgrad and the shared `timing.py`.
"""

import contextlib
import importlib

import numpy as np
import timing

import fgrad
from fgrad.core import Primitive

RNG = np.random.default_rng(0)
N = 6
A = RNG.normal(size=(N, N)) + N * np.eye(N)  # well conditioned
SPD = A @ A.T + N * np.eye(N)
UPPER = np.triu(A)
B = RNG.normal(size=N)
OFF = RNG.uniform(-1.0, 1.0, N - 1)
DIAGONAL = RNG.uniform(3.0, 4.0, N)  # with OFF: a diagonally dominant tridiagonal matrix
V = RNG.uniform(0.5, 2.0, size=10)  # positive: products, quotients, logs stay well away from 0


def tridiagonal(d):
    """The sparse tridiagonal matrix with diagonal `d` and `OFF` beside it."""
    import fgrad.scipy.sparse as fsp

    return fsp.diags([d, OFF, OFF], [0, 1, -1])


def banded(diagonal):
    """`tridiagonal`'s bands as `scipy.linalg.solve_banded` takes them, with `diagonal`."""
    import fgrad.numpy as fnp

    return fnp.stack([np.r_[0.0, OFF], diagonal, np.r_[OFF, 0.0]])


def primitives_of(key):
    """The primitives a key names: those called `name` in module `fgrad.<module>` (an
    operator's twin, `x / y` beside `divide`, shares its rules and its name)."""
    module_name, _, name = key.rpartition(".")
    module = importlib.import_module(f"fgrad.{module_name}")
    found = {}
    for v in list(vars(module).values()):
        v = getattr(v, "primitive", v)
        if isinstance(v, Primitive) and v.name == name:
            found[id(v)] = v
    if not found:
        raise LookupError(f"{key}: no primitive named {name!r} in fgrad.{module_name}")
    return list(found.values())


def assert_close(got, want, key, what, rtol=1e-10):
    """Every leaf of `got` within `rtol` of `want`'s, relative to the larger of 1 and the
    largest entry."""
    pairs = zip(fgrad.tree_util.tree_flatten(got)[0], fgrad.tree_util.tree_flatten(want)[0])
    for g, w in pairs:
        g, w = np.asarray(g), np.asarray(w)
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        err = float(np.max(np.abs(g - w))) / scale if w.size else 0.0
        assert err <= rtol, f"{key}: {what} differs by {err:.1e}"


def time_against(keys, call_of, taken_away, other, rounds):
    """For each key, `call_of(key)` (a call through the primitive's own rule) against the same
    call with its rule taken away (`taken_away(primitives)`, a context manager), interleaved
    in the same rounds: the medians and the same-round ratio, printed."""
    print(f"{'primitive':44s} {'own us':>9s} {other + ' us':>14s}   {other} / own")
    for key in keys:
        prims, call = primitives_of(key), call_of(key)

        def without(call=call, prims=prims):
            with taken_away(prims):
                return call()

        times = timing.interleaved_times({"own": call, other: without}, rounds, 0.05)
        own, theirs = (timing.quartiles(times[k])[1] for k in ("own", other))
        ratio = timing.ratio_cell(timing.paired_ratios(times, other, "own"))
        print(f"{key:44s} {own * 1e6:9.1f} {theirs * 1e6:14.1f}   {ratio}")


def both_ways(key, call, taken_away):
    """`call()` through the key's primitives' own rules, and with them taken away."""
    prims = primitives_of(key)
    own = call()
    with taken_away(prims):
        other = call()
    return own, other


@contextlib.contextmanager
def attributes_cleared(prims, names):
    """The attributes `names` of `prims` set to None for the duration."""
    saved = [(p, [getattr(p, n) for n in names]) for p in prims]
    try:
        for p in prims:
            for n in names:
                setattr(p, n, None)
        yield
    finally:
        for p, values in saved:
            for n, v in zip(names, values):
                setattr(p, n, v)
