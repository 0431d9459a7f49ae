"""Deterministic costs of one call: instructions and simulated cache misses, counted by valgrind's
cachegrind, for fgrad and the hand-written NumPy of `bench_peers.py`'s workloads.

Same-run timing ratios move by a point or two between runs on a shared machine, and a change
to the core worth a few hundred bytecodes per gradient hides in that noise. Cachegrind counts
the instructions a process executes and simulates its caches: the same binary, inputs and hash
seed give the same counts, whatever else the machine is doing. On a workload with large arrays
fgrad's extra cost over the hand-written code is only in part instructions: the large
operations evict the interpreter's code and objects from the caches, and each Python-level step
misses them again, so the misses are printed beside the instructions.

    python benchmarks/count_instructions.py                        # mlp, 10 calls: about 2 min
    python benchmarks/count_instructions.py --only mlp,per_example_logreg --calls 20

Each contender runs in two child processes under cachegrind, one making `--calls` calls and one
making none (imports, data, the warm-up calls); their difference divided by `--calls` is the
cost of one call. The last-level cache is simulated at one core's L2 (`--ll`, 2 MiB), where the
interpreter's data goes when large arrays pass through; the first-level caches are the machine's.
Needs valgrind (Debian's package `valgrind`); no peer library.

The instruction and I1 counts are steady to 0.1% across changes. The last-level data misses
are exact for one tree but depend on where the large arrays land in memory, which any change
to the loaded code moves: the hand-written gradient's own count has moved by 8% from one
commit of fgrad to the next. Compare them within one run (fgrad against by hand), not across
commits.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing

if __name__ == "__main__":
    timing.pin_threads()  # before NumPy: one BLAS thread, as bench_peers times it

import bench_peers  # after the threads are pinned

# cachegrind's summary lines, and the names this script prints them under
_COUNTS = {
    "I   refs": "instructions",
    "I1  misses": "I1 misses",
    "D1  misses": "D1 misses",
    "LLi misses": "LL misses (code)",
    "LLd misses": "LL misses (data)",
}
_SUMMARY = re.compile(r"==\d+== (" + "|".join(map(re.escape, _COUNTS)) + r"):\s+([\d,]+)")
WARM_UP = 3


def parse_summary(stderr):
    """{count name: total} from cachegrind's summary on stderr."""
    found = {_COUNTS[k]: int(v.replace(",", "")) for k, v in _SUMMARY.findall(stderr)}
    missing = [name for name in _COUNTS.values() if name not in found]
    if missing:
        raise RuntimeError(f"cachegrind printed no {', '.join(missing)}:\n{stderr[-2000:]}")
    return found


def contender(key, label):
    (workload,) = bench_peers.workloads(libs=("fgrad", "numpy"), only=[key]).values()
    (c,) = [c for c in workload.contenders if c.label == label]
    return c


def child(key, label, calls):
    fn = contender(key, label).fn
    for _ in range(WARM_UP + calls):
        fn()


def _command(key, label, calls, ll):
    return [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        f"--LL={ll}",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        key,
        label,
        str(calls),
    ]


def per_call(key, label, calls, ll):
    """{count name: per call} of one contender: its two children run side by side."""
    env = dict(os.environ, PYTHONHASHSEED="0")  # dict and set layouts, hence counts, repeat
    runs = [
        subprocess.Popen(
            _command(key, label, n, ll),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in (calls, 0)
    ]
    totals = []
    for run in runs:
        _, stderr = run.communicate()
        if run.returncode != 0:
            raise RuntimeError(f"the child for {key}, {label} failed:\n{stderr[-2000:]}")
        totals.append(parse_summary(stderr))
    with_calls, without = totals
    return {name: (with_calls[name] - without[name]) / calls for name in _COUNTS.values()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="mlp", help="comma-separated bench_peers workloads")
    parser.add_argument("--calls", type=int, default=10, help="calls counted (default 10)")
    parser.add_argument("--ll", default="2097152,16,64", help="simulated last-level cache")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        key, label, calls = args.child
        child(key, label, int(calls))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 1
    names = list(_COUNTS.values())
    print(f"per call, {args.calls} calls after {WARM_UP} warm-up calls; LL simulated as {args.ll}")
    print(f"{'workload':20s} {'contender':32s}" + "".join(f"{n:>18s}" for n in names))
    for key in args.only.split(","):
        (workload,) = bench_peers.workloads(libs=("fgrad", "numpy"), only=[key]).values()
        counts = {}
        for c in workload.contenders:
            counts[c.label] = per_call(key, c.label, args.calls, args.ll)
            row = "".join(f"{counts[c.label][n]:18,.0f}" for n in names)
            print(f"{key:20s} {c.label:32s}{row}")
        hand = bench_peers.LIBS["numpy"]
        for label, own in counts.items():
            if label != hand:
                extra = "".join(f"{own[n] - counts[hand][n]:18,.0f}" for n in names)
                print(f"{key:20s} {label + ' - by hand':32s}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
