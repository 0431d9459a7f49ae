"""Timing shared by the benchmark scripts: one thread, interleaved rounds, same-round ratios.

    import timing
    PINNED = __name__ == "__main__" and timing.pin_threads()   # before NumPy is imported
    times = timing.interleaved_times({"a": f, "b": g}, rounds=31, sample_time=0.05)
    q1, median, q3 = timing.quartiles(timing.paired_ratios(times, "a", "b"))

Imports: the standard library only (so that it can run before NumPy loads).
"""

import gc
import os
import statistics
import sys
import time

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
# XLA's CPU client: no Eigen thread pool, one intra-op thread.
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def pin_threads():
    """Ask BLAS, OpenMP and XLA for one thread each. They read this once, when they load, so
    it only works before NumPy is imported; returns whether it could."""
    if "numpy" in sys.modules:
        return False
    for var in THREAD_VARIABLES:
        os.environ[var] = "1"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + XLA_ONE_THREAD).strip()
    return True


def calls_per_sample(fn, sample_time):
    """How many calls of fn fill about `sample_time` seconds (after one warm-up call)."""
    fn()
    start = time.perf_counter()
    fn()
    one = time.perf_counter() - start
    return max(1, round(sample_time / max(one, 1e-9)))


def seconds_per_call(fn, number):
    """One sample: the mean time of `number` back-to-back calls. The collector runs before the
    sample (do not bill one contender for the garbage of the one before) and stays on during it
    (freeing what a library allocates is part of its cost)."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def interleaved_times(contenders, rounds, sample_time):
    """name -> its `rounds` samples; each round visits every contender once, in an order
    rotated from round to round, so drift in machine speed hits all of them alike."""
    numbers = {name: calls_per_sample(fn, sample_time) for name, fn in contenders.items()}
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(seconds_per_call(contenders[name], numbers[name]))
    return times


def paired_ratios(times, num, den):
    """The same-round ratios num / den: drift between rounds cancels out of each one."""
    return [a / b for a, b in zip(times[num], times[den])]


def quartiles(samples):
    """(first quartile, median, third quartile)."""
    if len(samples) == 1:
        return samples[0], samples[0], samples[0]
    q1, _median, q3 = statistics.quantiles(samples, n=4)
    return q1, statistics.median(samples), q3


def ratio_cell(ratios):
    q1, median, q3 = quartiles(ratios)
    return f"{median:9.2f}x    (IQR {q1:.2f}-{q3:.2f})"
