"""tests/mutants.py stays runnable: each deliberate defect still applies to the source as it is
now (its text occurs exactly once in its file, and the patch changes it), so CI's rotating
subset never reports a mutant as broken because a rule was rewritten. Whether the quick suite
catches them is the script's own run (docs/mutation.md)."""

import datetime

import mutants
import pytest


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=[m.name for m in mutants.MUTANTS])
def test_the_mutant_applies_to_the_source_as_it_is(mutant):
    text = (mutants.ROOT / mutant.path).read_text()
    assert text.count(mutant.old) == 1, (
        f"{mutant.name}: its text occurs {text.count(mutant.old)} times in {mutant.path}; "
        "rewrite the mutant for the new source (tests/mutants.py)"
    )
    assert mutant.new != mutant.old


def test_there_are_at_least_40_and_their_names_are_distinct():
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) >= 40 and len(set(names)) == len(names)


def test_the_rotation_takes_every_mutant_within_a_cycle_of_days():
    n = 5
    days = -(-len(mutants.MUTANTS) // n)
    start = datetime.date(2026, 1, 1)
    seen = set()
    for k in range(days):
        chosen = mutants.rotation(n, start + datetime.timedelta(days=k))
        assert len(chosen) == n
        seen |= {m.name for m in chosen}
    assert seen == {m.name for m in mutants.MUTANTS}
