"""README's table of conventions at kinks shows what the code computes (fgrad/conventions.py)."""

import re

from fgrad import conventions


def _readme_rows():
    text = conventions.README.read_text()
    block = text.split(conventions.BEGIN)[1].split(conventions.END)[0]
    rows = [line for line in block.strip().splitlines()[2:]]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_readme_table_matches_the_code():
    rows = _readme_rows()
    assert len(rows) == len(conventions.CASES)
    for row, case, ours in zip(rows, conventions.CASES, conventions.fgrad_values()):
        assert row[0] == f"`{case[0]}`"
        assert row[1] == ours, (
            f"README says fgrad gives {row[1]} for {case[0]}; the code gives {ours}"
        )
        assert row[2] == case[3], f"README's JAX value for {case[0]} differs from the recorded one"


def test_the_table_prints_without_jax():
    text = conventions.table(([c[3] for c in conventions.CASES], "recorded"))
    assert re.search(r"\| `abs'\(0\)` \| 1 \| 1 \|", text)
