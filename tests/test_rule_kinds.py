"""Each derivative is written once, except in the declared speed tables.

A primitive has a reverse rule. Forward mode transposes it unless the primitive has a forward
rule of its own, and `jet` derives Taylor coefficients from the forward rule unless it has a
Taylor rule of its own. Each such rule says what it is (`fgrad.primitive.register_rules`'s
`forward=` and `taylor_kind=`): "linear" (the operation itself on tangents or coefficients),
"derived" (made from the one derivative) or "speed" (the derivative written again by hand, or
a hand recurrence). The speed ones are measured by `benchmarks/bench_forward_rules.py` and
`benchmarks/bench_taylor_rules.py` against the rule they stand in for; the forward ones are
checked here to agree with the transposed reverse rule (the Taylor ones are, with every
direct Taylor rule, in tests/test_taylor_rules.py).
"""

import functools
import importlib.util
import pathlib
import sys

import pytest
from gradtable import all_primitives

from fgrad import taylor
from fgrad.primitive import FORWARD_RULE_KINDS, TAYLOR_RULE_KINDS, forward_rules, taylor_kinds

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@functools.cache
def _bench(name):
    """A benchmark script as a module (the scripts import their siblings)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def _key(module, prim):
    return f"{module.removeprefix('fgrad.')}.{prim.name}"


def _has_forward_rule(p):
    jvps = getattr(p, "jvps", None)
    return getattr(p, "jvp", None) is not None or (
        jvps is not None and any(j is not None for j in jvps)
    )


def _forward_kinds():
    return {(m, p): forward_rules.get(p) for m, p in all_primitives() if _has_forward_rule(p)}


def _taylor_kinds():
    return {
        (m, p): taylor_kinds.get(p) or getattr(taylor.rules[p], "kind", None)
        for m, p in all_primitives()
        if p in taylor.rules
    }


@pytest.mark.parametrize(
    "kinds, what, allowed",
    [
        (_forward_kinds, "a forward rule (register_rules's forward=)", FORWARD_RULE_KINDS),
        (_taylor_kinds, "a Taylor rule (register_rules's taylor_kind=)", TAYLOR_RULE_KINDS),
    ],
    ids=["forward", "taylor"],
)
def test_every_rule_of_its_own_says_what_it_is(kinds, what, allowed):
    found = kinds()
    undeclared = sorted(_key(m, p) for (m, p), kind in found.items() if kind not in allowed)
    assert not undeclared, f"primitives with {what} that do not say what it is: {undeclared}"


@pytest.mark.parametrize(
    "kinds, script",
    [(_forward_kinds, "bench_forward_rules"), (_taylor_kinds, "bench_taylor_rules")],
    ids=["forward", "taylor"],
)
def test_the_benchmark_measures_every_rule_written_for_speed(kinds, script):
    speed = {_key(m, p) for (m, p), kind in kinds().items() if kind == "speed"}
    cases = set(_bench(script).CASES)
    assert speed - cases == set(), f"written for speed, not measured by {script}: {speed - cases}"
    assert cases - speed == set(), f"measured by {script}, not declared for speed: {cases - speed}"


@pytest.mark.parametrize("key", _bench("bench_forward_rules").CASES)
def test_a_hand_written_forward_rule_agrees_with_the_transposed_reverse_rule(key):
    bench = _bench("bench_forward_rules")
    hand, transposed = bench.both_ways(key)
    bench.assert_close(hand, transposed, key, "the hand-written forward rule")


# Each Taylor recurrence is checked against the general rule, with every other direct Taylor
# rule, in tests/test_taylor_rules.py.
