"""Each derivative is written once, except in the declared speed table.

A primitive has a reverse rule; forward mode transposes it unless the primitive has a forward
rule of its own. Such a rule is declared (`fgrad.primitive.register_rules`'s `forward=`) as
"derived" (a builder made both rules from one derivative), "linear" (the operation itself on
the tangents) or "speed" (the derivative written again by hand). The speed ones are measured
by `benchmarks/bench_forward_rules.py`, against forward mode by transposition, and checked
here to agree with it.
"""

import functools
import importlib.util
import pathlib
import sys

import pytest
from gradtable import all_primitives

from fgrad.primitive import FORWARD_RULE_KINDS, forward_rules

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_forward_rules.py"


def _with_forward_rule():
    return sorted(
        ((module, p) for module, p in all_primitives() if _has_forward_rule(p)),
        key=lambda mp: (mp[0], mp[1].name),
    )


def _has_forward_rule(p):
    jvps = getattr(p, "jvps", None)
    return getattr(p, "jvp", None) is not None or (
        jvps is not None and any(j is not None for j in jvps)
    )


def test_every_forward_rule_says_why_it_is_written():
    undeclared = [f"{m}.{p.name}" for m, p in _with_forward_rule() if p not in forward_rules]
    assert not undeclared, (
        "primitives with a forward rule of their own that do not say why (register_rules's "
        f"forward=, one of {sorted(FORWARD_RULE_KINDS)}): {undeclared}"
    )


@functools.cache
def _bench():
    """The benchmark script as a module (it imports its sibling `timing`)."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        spec = importlib.util.spec_from_file_location("bench_forward_rules", BENCH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    return module


def test_the_benchmark_measures_every_hand_written_forward_rule():
    speed = {
        f"{m.removeprefix('fgrad.')}.{p.name}"
        for m, p in _with_forward_rule()
        if forward_rules.get(p) == "speed"
    }
    cases = set(_bench().CASES)
    assert speed - cases == set(), f"hand-written forward rules not measured: {speed - cases}"
    assert cases - speed == set(), f"measured, but not declared for speed: {cases - speed}"


@pytest.mark.parametrize("name", sorted(_bench().CASES))
def test_a_hand_written_forward_rule_agrees_with_the_transposed_reverse_rule(name):
    bench = _bench()
    hand, transposed = bench.both_ways(name)
    bench.assert_close(hand, transposed, name)
