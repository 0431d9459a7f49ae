"""`python -m fgrad.demo`, the README's first command, runs and every number matches."""

import subprocess
import sys


def test_demo_runs_and_all_results_match():
    run = subprocess.run(
        [sys.executable, "-m", "fgrad.demo"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "All results match their closed forms." in run.stdout
    assert "MISMATCH" not in run.stdout
    assert "1.37758" in run.stdout  # seed 000's printed gradient
