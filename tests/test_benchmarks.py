"""benchmarks/bench_core.py still runs and still checks its gradients; nothing here is timed."""

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_core.py"


def load_bench_core():
    spec = importlib.util.spec_from_file_location("bench_core", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_mode_validates_every_contender_and_times_nothing():
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "gradients agree with numpy (by hand)" in run.stdout
    assert "median time" not in run.stdout


def test_validation_catches_a_gradient_that_is_slightly_wrong():
    bench = load_bench_core()
    workload = bench.mlp_workload()
    right = workload.contenders["fgrad"]
    workload.contenders["fgrad"] = lambda: tuple(g * (1 + 1e-5) for g in right())
    workload.contenders["transposed"] = lambda: tuple(np.asarray(g).T for g in right())
    problems = bench.validate([workload])
    assert len(problems) == 2, problems
    assert "fgrad gradient 0 differs by 1.00e-05" in problems[0]
    assert "transposed gradient 0 has shape (100, 784)" in problems[1]
    assert bench.validate() == []
