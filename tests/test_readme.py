"""The README's Python blocks run as written, in order, in one namespace."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert abs(namespace["value"] - 1.0) < 1e-12  # the pytree example's loss at zero params


def test_readme_starts_with_the_two_commands_ci_runs():
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    assert 'pip install -e ".[dev]" && python -m fgrad.demo' in first_block
    assert 'pip install -e ".[dev]" && python -m pytest' in first_block
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install -e ".[dev]" && python -m pytest' in ci
