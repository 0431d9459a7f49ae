"""Logistic regression on a data set several times larger than the memory of a Dask cluster,
trained with `fgrad.value_and_grad` and gradient descent.

    python benchmarks/bench_out_of_core.py                       # 2.1 GB of data, 2 x 256 MiB
    python benchmarks/bench_out_of_core.py --rows 2000000 --steps 3   # a quick look

The data set (X: rows x features, float64; y: +-1 labels) is written once to disk, chunk by
chunk, as a stack of .npy files (`dask.array.to_npy_stack`), and read back lazily
(`from_npy_stack`, each chunk loaded when a task needs it, not memory-mapped, so a worker's
resident memory counts what it holds). A `dask.distributed.LocalCluster` of `--workers`
processes with `--memory-limit` each runs every step: fgrad traces the loss and its gradient
with Dask arrays (nothing is computed while it traces), then the cluster computes the loss and
the gradient together, with Dask's progress bar. The whole data set is never in memory at once.

Printed: the data set's size against the cluster's memory, the time per step, each worker's
peak resident memory during training (Linux's VmHWM, reset before the first step), and, on a
slice of the data that fits in memory, the gradient's task count and time on the cluster
against the same gradient written by hand in `dask.array`, and the time of the gradient by
fgrad on NumPy arrays and by hand-written NumPy, with the gradients' agreement (they must
agree to 1e-10 relative).

Imports: NumPy, fgrad, dask, distributed.
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp


def loss(w, X, y):
    """The mean logistic loss of the linear model w on (X, y), y in {-1, 1}."""
    return fnp.mean(fnp.logaddexp(0.0, -y * (X @ w)))


def grad_by_hand(w, X, y):
    """The gradient of `loss` in NumPy: what the slice's comparison measures against."""
    z = -y * (X @ w)
    return X.T @ (-y * (1.0 / (1.0 + np.exp(-z)))) / len(y)


def write_data(directory, rows, features, chunk_rows, seed):
    """The data set on disk, written chunk by chunk (never whole in memory)."""
    import dask.array as da

    directory.mkdir(parents=True, exist_ok=True)
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, features), chunks=(chunk_rows, features))
    w_true = np.linspace(-1.0, 1.0, features)
    noise = rng.standard_normal(rows, chunks=chunk_rows)
    y = da.where(X @ w_true + noise > 0, 1.0, -1.0)
    da.to_npy_stack(directory / "X", X, axis=0)
    da.to_npy_stack(directory / "y", y, axis=0)


def reset_peak():
    """Reset this process's peak resident memory (VmHWM) to what it holds now (Linux)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss():
    """This process's peak resident memory since the last reset, in bytes (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=24_000_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="256MiB", help="per worker")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--learning-rate", type=float, default=1.0)
    parser.add_argument("--slice-rows", type=int, default=1_000_000)
    parser.add_argument("--dir", default="/tmp/fgrad-out-of-core")
    args = parser.parse_args(argv)

    import dask.array as da
    from dask.utils import format_bytes, parse_bytes
    from distributed import Client, LocalCluster, progress

    directory = pathlib.Path(args.dir) / f"{args.rows}x{args.features}-{args.chunk_rows}"
    data_bytes = args.rows * (args.features + 1) * 8
    memory = args.workers * parse_bytes(args.memory_limit)
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            memory_limit=args.memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        if not (directory / "y" / "info").exists():
            print(f"writing the data set to {directory} ...", flush=True)
            start = time.perf_counter()
            write_data(directory, args.rows, args.features, args.chunk_rows, seed=0)
            print(f"  written in {time.perf_counter() - start:.1f} s")
        X = da.from_npy_stack(directory / "X", mmap_mode=None)
        y = da.from_npy_stack(directory / "y", mmap_mode=None)
        print(
            f"data set: X {X.shape} + y, {format_bytes(data_bytes)} in {X.npartitions} chunks "
            f"of {format_bytes(X.nbytes // X.npartitions)}; cluster: {args.workers} workers "
            f"x {args.memory_limit} = {format_bytes(memory)} "
            f"(the data is {data_bytes / memory:.1f}x the cluster's memory)"
        )

        client.run(reset_peak)
        w = np.zeros(args.features)
        value_and_grad = fgrad.value_and_grad(loss)
        step_times = []
        for step in range(args.steps):
            start = time.perf_counter()
            value, g = value_and_grad(w, X, y)  # traced: nothing is computed yet
            futures = client.compute([value, g])
            progress(futures)
            value, g = client.gather(futures)
            print()
            w = w - args.learning_rate * g
            step_times.append(time.perf_counter() - start)
            print(
                f"step {step}: loss {float(value):.6f}, |grad| {np.linalg.norm(g):.3e}, "
                f"{step_times[-1]:.1f} s",
                flush=True,
            )
        peaks = client.run(peak_rss)
        print(
            f"time per step: median {statistics.median(step_times):.2f} s "
            f"({format_bytes(data_bytes / min(step_times))}/s at best)"
        )
        for address, peak in sorted(peaks.items()):
            print(
                f"peak resident memory of worker {address}: {format_bytes(peak)} "
                f"(limit {args.memory_limit}; the data set is {format_bytes(data_bytes)})"
            )
        worst = max(peaks.values())

        # a slice that fits in memory (here, not in a worker): the same gradient from NumPy
        chunks = max(1, min(args.slice_rows, args.rows) // args.chunk_rows)
        n = chunks * args.chunk_rows
        X_slice, y_slice = X[:n], y[:n]
        start = time.perf_counter()
        g_dask = client.compute(value_and_grad(w, X_slice, y_slice)[1]).result()
        t_dask = time.perf_counter() - start
        # the same gradient written by hand in dask.array: its graph and its time on the cluster
        g_lazy = fgrad.grad(loss)(w, X_slice, y_slice)
        g_hand_lazy = grad_by_hand(w, X_slice, y_slice)
        start = time.perf_counter()
        client.compute(g_hand_lazy).result()
        t_dask_hand = time.perf_counter() - start
        print(
            f"the gradient's Dask graph on the slice: {len(g_lazy.__dask_graph__())} tasks "
            f"(written by hand in dask.array: {len(g_hand_lazy.__dask_graph__())}); on the "
            f"cluster {t_dask * 1e3:.0f} ms with the loss, by hand {t_dask_hand * 1e3:.0f} ms "
            "without"
        )
        Xn = np.concatenate([np.load(directory / "X" / f"{i}.npy") for i in range(chunks)])
        yn = np.concatenate([np.load(directory / "y" / f"{i}.npy") for i in range(chunks)])
        start = time.perf_counter()
        g_fgrad = value_and_grad(w, Xn, yn)[1]
        t_fgrad = time.perf_counter() - start
        start = time.perf_counter()
        g_hand = grad_by_hand(w, Xn, yn)
        t_hand = time.perf_counter() - start
        err_dask = np.linalg.norm(g_dask - g_fgrad) / np.linalg.norm(g_fgrad)
        err_hand = np.linalg.norm(g_hand - g_fgrad) / np.linalg.norm(g_fgrad)
        print(
            f"on a slice of {n} rows ({format_bytes(Xn.nbytes + yn.nbytes)}, in memory): "
            f"fgrad on Dask (cluster) {t_dask * 1e3:.0f} ms, fgrad on NumPy "
            f"{t_fgrad * 1e3:.0f} ms, NumPy by hand {t_hand * 1e3:.0f} ms "
            f"(fgrad/NumPy by hand {t_fgrad / t_hand:.2f}x); gradients agree to "
            f"{max(err_dask, err_hand):.1e} (relative)"
        )
    ok = err_dask <= 1e-10 and err_hand <= 1e-10 and worst < data_bytes
    if not ok:
        print("FAILED: the gradients disagree, or a worker held the whole data set")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
