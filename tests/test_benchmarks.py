"""The benchmarks still run and still check their gradients; nothing here is timed."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPT = BENCHMARKS / "bench_peers.py"
CHECKPOINT_SCRIPT = BENCHMARKS / "bench_checkpoint.py"


@pytest.fixture(autouse=True)
def child_processes_import_this_tree(monkeypatch):
    """The scripts run in (and start) child processes: they import this tree's fgrad, whether
    or not fgrad is installed, and not another copy that is."""
    paths = [str(BENCHMARKS.parent), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(script, *args, timeout=60):
    """Run a benchmark script in a child Python, its output captured as text."""
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout
    )


def test_check_mode_validates_every_workload_and_measures_nothing():
    run = run_script(SCRIPT, "--check", "--quick", "--libs", "fgrad")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "every result agrees with numpy (by hand) to 1e-06" in run.stdout
    for key in (
        "chain",
        "mlp_large",
        "hvp",
        "tanh6",
        "tanh20",
        "nth_derivative",
        "laplacian",
        "jacfwd",
        "per_example",
        "per_example_logreg",
        "branch",
        "chain20k",
        "deep_mlp",
    ):
        assert f"{key} (" in run.stdout
    assert "x autograd" not in run.stdout and "Bars" not in run.stdout
    assert "laplacian: fgrad, laplacian to 1e-10" in run.stdout


def test_validation_catches_a_result_that_is_slightly_wrong():
    bench = load(SCRIPT)
    workload = bench.workloads(bench.QUICK, ("fgrad", "numpy"), ["mlp"])["mlp"]
    right = workload.contenders[0].fn
    assert workload.contenders[0].label == "fgrad"
    workload.contenders[0].fn = lambda: tuple(g * (1 + 1e-5) for g in right())
    workload.contenders.append(
        bench.Contender(
            "fgrad",
            lambda: tuple(np.asarray(g).T for g in right()),
            workload.contenders[1].want,
            task="transposed",
        )
    )
    problems = bench.validate([workload])
    assert len(problems) == 2, problems
    assert "mlp: fgrad array 0 differs by 1.00e-05" in problems[0]
    assert "fgrad, transposed array 0 has shape (100, 784)" in problems[1]


def test_laplacian_is_held_to_1e_10_and_against_fgrads_hessian_trace():
    bench = load(SCRIPT)
    workload = bench.workloads(bench.QUICK, ("fgrad", "numpy"), ["laplacian"])["laplacian"]
    assert bench.validate([workload]) == []
    (lap,) = [c for c in workload.contenders if c.label == "fgrad, laplacian"]
    ((laplacian, trace, what),) = lap.checks
    assert what == "against fgrad's hessian trace"
    off = bench.mismatch(laplacian(), trace * (1 + 1e-9), lap.rtol)  # within 1e-6, not 1e-10
    assert off == "array 0 differs by 1.00e-09 (relative, in norm)"
    right = lap.fn
    lap.fn = lambda: right() * (1 + 1e-9)
    problems = bench.validate([workload])
    assert problems == [
        "laplacian: fgrad, laplacian array 0 differs by 1.00e-09 (relative, in norm)"
    ]


def test_an_absolute_bar_compares_the_median_call_with_a_time():
    bench = load(SCRIPT)
    bars = [bench.Bar("fgrad, order 20", None, 1e-3), bench.Bar("fgrad, order 2", None, 1e-3)]
    workload = bench.Workload("tanh20", "", [], unit="us", bars=bars)
    samples = {"fgrad, order 20": [4e-4, 5e-4, 9e-4], "fgrad, order 2": [2e-3, 1.5e-3, 1e-3]}
    lines, verdicts = bench.rows(workload, samples, "time")
    assert [(v[3], v[4]) for v in verdicts] == [(5e-4, "met"), (1.5e-3, "NOT met")]
    assert lines[0].endswith("<=1ms: 500 us met")
    assert lines[1].endswith("<=1ms: 1.5 ms NOT met")
    assert bars[0].text() == "fgrad, order 20 <= 1 ms"


def test_memory_child_reports_tracemalloc_and_rss_for_fgrad():
    bench = load(SCRIPT)
    fig = bench.memory_in_fresh_process("deep_mlp", "fgrad, grad input", "fgrad", quick=True)
    sizes = bench.QUICK
    layer = 8 * sizes.deep_batch * sizes.deep_width
    assert layer <= fig["tm"] < 4 * sizes.deep_layers * layer  # residuals of every layer, at most
    assert fig["rss"] >= 0


def test_checkpoint_benchmark_check_mode_validates_and_measures_nothing():
    run = run_script(CHECKPOINT_SCRIPT, "--check")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "gradients agree: checkpointed == unchecked to 1e-12" in run.stdout
    assert "Memory" not in run.stdout and "median per call" not in run.stdout


def test_checkpoint_benchmark_memory_child_reports_consistent_figures():
    bench = load(CHECKPOINT_SCRIPT)
    sizes = bench.Sizes(layers=4, width=32, batch=16, every=2)
    fig = bench.memory_in_fresh_process(sizes.checkpointed, sizes, "both")
    assert fig["result"] == 8 * (4 * 32 * 32 + 16 * 32)  # the weights' and input's gradients
    assert fig["net"] == fig["peak"] - fig["result"]
    assert 0 < fig["kept"] < fig["peak"]


def test_checkpoint_benchmark_difference_sees_a_slightly_wrong_gradient():
    bench = load(CHECKPOINT_SCRIPT)
    sizes = bench.TINY
    ws, x = bench.data(sizes)
    right = bench.contenders(sizes)[bench.PLAIN](ws, x)
    wrong = ([g * (1 + 1e-9) for g in right[0]], right[1])
    assert 0.9e-9 < bench.difference(wrong, right) < 1.1e-9  # above the 1e-12 bar
    misplaced = ([right[1]] + right[0][1:], right[1])
    assert bench.difference(misplaced, right) == "array 0 has shape (3, 8), not (8, 8)"
    assert bench.difference(right[1], right) == "returned 1 arrays, not 7"
    assert bench.validate(sizes)[0] == []


def test_instruction_counts_read_cachegrinds_summary():
    counts = load(BENCHMARKS / "count_instructions.py")
    summary = (
        "==7== I   refs:      9,478,863\n"
        "==7== I1  misses:       10,083\n"
        "==7== LLi misses:        1,468\n"
        "==7== D1  misses:      315,326  (     200,000 rd   +     115,326 wr)\n"
        "==7== LLd misses:       34,596  (      20,000 rd   +      14,596 wr)\n"
    )
    assert counts.parse_summary(summary) == {
        "instructions": 9_478_863,
        "I1 misses": 10_083,
        "LL misses (code)": 1_468,
        "D1 misses": 315_326,
        "LL misses (data)": 34_596,
    }
    without_i1 = "".join(line for line in summary.splitlines(True) if "I1" not in line)
    with pytest.raises(RuntimeError, match="cachegrind printed no I1 misses"):
        counts.parse_summary(without_i1)


def test_instruction_count_child_runs_the_contender_it_names():
    script = BENCHMARKS / "count_instructions.py"
    run = run_script(script, "--child", "chain", "fgrad", "1", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    run = run_script(script, "--child", "chain", "no such contender", "1", timeout=120)
    assert run.returncode != 0 and "ValueError" in run.stderr


def test_the_minimal_closure_tape_gives_the_hand_written_gradient():
    floor = load(BENCHMARKS / "bench_floor.py")
    bench = load(SCRIPT)
    ws, X, I_y = bench.mlp_data((7, 5, 3), 4, 0)
    got = floor.minimal_grad(ws, X, I_y)
    want = bench.mlp_grad_by_hand(ws, X, I_y)
    assert len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_jit_benchmark_check_mode_compares_replays_with_eager_bit_for_bit():
    run = run_script(BENCHMARKS / "bench_jit.py", "--check")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "checked 7 workloads: 0 mismatches" in run.stdout
    assert "us/call" not in run.stdout  # nothing timed


def test_jit_benchmark_check_sees_a_replay_that_differs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # its imports: timing, bench_peers
    bench = load(BENCHMARKS / "bench_jit.py")
    workload = next(w for w in bench.workloads() if w.key == "hessian")
    eager = workload.eager
    calls = []

    def drifting(*args):  # right on the first call (check's eager one), 1 ulp off afterwards
        calls.append(1)
        return eager(*args) * (1.0 + (len(calls) > 1) * 2.0**-52)

    workload.eager = drifting
    problems = bench.check(workload)
    assert problems and "differs from eager" in problems[0]


def test_sparse_benchmark_check_mode_runs():
    pytest.importorskip("scipy", reason="fgrad.sparse needs SciPy (an optional extra)")
    run = run_script(BENCHMARKS / "bench_sparse.py", "--check")
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_pendulum_gradient_by_hand_agrees_with_fgrads_odeint(monkeypatch):
    # the NumPy reference of the odeint bar: the same method (sensitivities by LSODA), written
    # out; its gradient must be the pendulum's, to the solver's accuracy, and its solve the loss
    pytest.importorskip("scipy", reason="the odeint workload needs SciPy (an optional extra)")
    import fgrad
    import fgrad.numpy as fnp
    from fgrad.scipy.integrate import odeint

    monkeypatch.syspath_prepend(str(BENCHMARKS))  # its imports: timing, bench_peers
    bench = load(BENCHMARKS / "bench_jit.py")
    y0, t = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 10.0, 101)
    by_hand = bench._pendulum_by_hand(y0, t, 0.25, 5.0)

    def loss(b, c):
        rhs = lambda y, s, b, c: fnp.stack([y[1], -b * y[1] - c * fnp.sin(y[0])])
        return fnp.sum(odeint(rhs, y0, t, args=(b, c))[:, 0] ** 2)

    np.testing.assert_allclose(by_hand(), fgrad.grad(loss, argnums=(0, 1))(0.25, 5.0), rtol=1e-5)
    np.testing.assert_allclose(by_hand.solve(), loss(0.25, 5.0), rtol=1e-7)
