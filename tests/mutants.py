"""Proof that the quick suite still catches wrong derivatives: deliberate defects, one at a time.

    python tests/mutants.py                 # every mutant (about 20 s each when caught)
    python tests/mutants.py --rotate 5      # 5 of them, chosen by today's date (.ci/run)
    python tests/mutants.py --only sin-vjp-sign,unbroadcast-lead-axis
    python tests/mutants.py --list          # the mutants, without running anything
    python tests/mutants.py --markdown      # the results as the table of docs/mutation.md

Each mutant is a small textual patch of one source file of the package: a sign flipped, a
factor of 2, a transpose forgotten, a wrong axis in an unbroadcast, a batching rule on the
wrong axis, a Taylor coefficient off by one order, a dtype widened. The package and its tests
are copied once to a temporary directory; each patch is applied there (never to the working
tree), the quick suite runs against it with `-x`, the rule-level tables first, and the file is
restored. A mutant is caught when a test fails (pytest's exit code 1); it survives when the
suite passes, and is broken (a defect of this list, not of the suite) when its text is not in
the file exactly once or pytest stops for another reason. The exit code is 1 unless every
mutant run was caught.

Importing this module does nothing (pytest's --doctest-modules imports it).
"""

import argparse
import datetime
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]

# The tables that check rules, in the order a defect in a rule is most quickly found: the
# gradient table (reverse and forward to order 2, float32), Taylor mode, vmap, Jacobians, the
# values, Dask; then everything else.
FIRST = [
    "tests/test_gradtable.py",
    "tests/test_taylor_table.py",
    "tests/test_vmap_table.py",
    "tests/test_jacobians.py",
    "tests/test_values.py",
    "tests/test_dask_table.py",
]


@dataclass
class Mutant:
    name: str
    path: str  # relative to the repository
    old: str  # must occur exactly once in the file
    new: str
    what: str  # the kind of defect and where


E, U = "fgrad/numpy/elementwise.py", "fgrad/numpy/ufuncs.py"
S, R = "fgrad/numpy/shaping.py", "fgrad/numpy/reductions.py"
L, P = "fgrad/numpy/linalg.py", "fgrad/numpy/products.py"
T, ST = "fgrad/taylor.py", "fgrad/numpy/statistics.py"
F = "fgrad/numpy/fft.py"

MUTANTS = [
    # --- reverse rules: signs, factors, formulas ---
    Mutant(
        "sin-derivative-sign",
        E,
        'defunary(_np.sin, "cos(x)"',
        'defunary(_np.sin, "-cos(x)"',
        "sign flipped: sin's derivative (its reverse and forward rules, made from it)",
    ),
    Mutant(
        "cos-derivative-sign",
        E,
        'defunary(_np.cos, "-sin(x)"',
        'defunary(_np.cos, "sin(x)"',
        "sign flipped: cos's derivative",
    ),
    Mutant(
        "tanh-derivative-formula",
        E,
        'defunary(_np.tanh, "1.0 - ans * ans"',
        'defunary(_np.tanh, "1.0 - ans"',
        "wrong formula: tanh's derivative uses 1 - y for 1 - y^2",
    ),
    Mutant(
        "log-derivative-inverse",
        E,
        'defunary(_np.log, "1.0 / x"',
        'defunary(_np.log, "x"',
        "wrong formula: log's derivative is x for 1 / x",
    ),
    Mutant(
        "sqrt-factor-2",
        E,
        "lambda ans, x: 0.5 / ans), _np.sqrt)",
        "lambda ans, x: 1.0 / ans), _np.sqrt)",
        "factor of 2: sqrt's derivative (both modes, from one slope)",
    ),
    Mutant(
        "tan-slope-sign",
        E,
        "lambda ans, x: 1.0 + ans * ans), _np.tan)",
        "lambda ans, x: 1.0 - ans * ans), _np.tan)",
        "sign flipped: tan's slope 1 + y^2",
    ),
    Mutant(
        "log1p-slope-shift",
        E,
        "lambda ans, x: 1.0 / (1.0 + x)), _np.log1p)",
        "lambda ans, x: 1.0 / (1.0 - x)), _np.log1p)",
        "sign flipped: log1p's slope",
    ),
    Mutant(
        "subtract-vjp-broadcast-sign",
        E,
        "return lambda ct: unbroadcast(-ct, like)",
        "return lambda ct: unbroadcast(ct, like)",
        "sign flipped: subtract's bprop for y, only where y is broadcast",
    ),
    Mutant(
        "multiply-vjp-broadcast-factor-2",
        E,
        "return lambda ct: unbroadcast(ct * y, like)",
        "return lambda ct: unbroadcast(2 * ct * y, like)",
        "factor of 2: multiply's bprop for x, only where x is broadcast",
    ),
    Mutant(
        "divide-vjp-y-sign",
        E,
        "return lambda ct: unbroadcast(-(ct * ans / y), like)",
        "return lambda ct: unbroadcast(ct * ans / y, like)",
        "sign flipped: divide's bprop for the divisor",
    ),
    Mutant(
        "maximum-y-weight",
        E,
        "_chooser(_np.maximum, _np.greater, _np.greater)",
        "_chooser(_np.maximum, _np.greater, _np.less)",
        "wrong selection: maximum sends y's gradient where y loses",
    ),
    Mutant(
        "power-dy-residual",
        E,
        "    return ans * log(x)\n",
        "    return x * log(x)\n",
        "wrong residual: d(x**y)/dy uses x for x**y",
    ),
    Mutant(
        "hypot-slope-swapped",
        U,
        "lambda ans, x, y: _hypot_slope(ans, y),",
        "lambda ans, x, y: _hypot_slope(ans, x),",
        "wrong argument: hypot's slope for y is x's",
    ),
    Mutant(
        "arctan2-sign",
        U,
        "lambda ans, y, x: negative(_over_r_squared(y, y, x)),",
        "lambda ans, y, x: _over_r_squared(y, y, x),",
        "sign flipped: arctan2's slope in x",
    ),
    # --- forward rules ---
    Mutant(
        "inlined-jvp-factor-2",
        "fgrad/primitive.py",
        "return t * ({expression})",
        "return 2.0 * t * ({expression})",
        "factor of 2: the forward rules made from a derivative expression (sin, cos, exp, ...)",
    ),
    Mutant(
        "exp-derivative-residual",
        E,
        'defunary(_np.exp, "ans"',
        'defunary(_np.exp, "x"',
        "wrong residual: exp's derivative uses x for exp(x)",
    ),
    Mutant(
        "subtract-jvp-sign",
        E,
        "lambda t, ans, x, y: broadcast_like(negative(t), ans)),",
        "lambda t, ans, x, y: broadcast_like(t, ans)),",
        "sign flipped: subtract's forward rule for y",
    ),
    Mutant(
        "divide-jvp-x",
        E,
        "lambda t, ans, x, y: broadcast_like(t / y, ans),",
        "lambda t, ans, x, y: broadcast_like(t * y, ans),",
        "wrong formula: divide's forward rule for x",
    ),
    # --- unbroadcasting, axes, transposes ---
    Mutant(
        "unbroadcast-lead-axis",
        S,
        "axes = tuple(range(lead)) + tuple(",
        "axes = tuple(range(lead + 1)) + tuple(",
        "wrong axis in an unbroadcast: one leading axis too many summed",
    ),
    Mutant(
        "unbroadcast-length-1-axis",
        S,
        "lead + i for i, n in enumerate(x_shape) if n == 1 and ct_shape[lead + i] != 1",
        "i for i, n in enumerate(x_shape) if n == 1 and ct_shape[lead + i] != 1",
        "wrong axis in an unbroadcast: length-1 axes summed without the leading offset",
    ),
    Mutant(
        "transpose-vjp-not-inverted",
        S,
        "inverse = tuple(_np.argsort(axes))",
        "inverse = tuple(axes)",
        "transpose's bprop applies the permutation instead of its inverse",
    ),
    Mutant(
        "max-vjp-axis",
        R,
        "return lambda ct: reshape(ct, kept) * weights",
        "return lambda ct: ct * weights",
        "wrong axis: max's bprop broadcasts the cotangent without its reduced axes",
    ),
    Mutant(
        "prod-vjp-sum",
        R,
        "product = w * others",
        "product = w + others",
        "wrong formula: prod's derivative adds the other factors",
    ),
    Mutant(
        "cumsum-vjp-direction",
        ST,
        "lambda ct: _cumsum_p(ct, axis=axis, reverse=not reverse),",
        "lambda ct: _cumsum_p(ct, axis=axis, reverse=reverse),",
        "wrong direction: cumsum's bprop accumulates forwards",
    ),
    Mutant(
        "inv-vjp-transpose",
        L,
        "vjp=lambda ans, x: lambda ct: -_matmul(_mT(ans), _matmul(ct, _mT(ans))),",
        "vjp=lambda ans, x: lambda ct: -_matmul(ans, _matmul(ct, _mT(ans))),",
        "transpose forgotten: inv's bprop",
    ),
    Mutant(
        "solve-vjp-b-transpose",
        L,
        "return lambda ct: unbroadcast(_solve_p(_mT(a), ct), like)",
        "return lambda ct: unbroadcast(_solve_p(a, ct), like)",
        "transpose forgotten: solve's bprop for b",
    ),
    Mutant(
        "eigh-vjp-transpose",
        L,
        "return lambda ct: _matmul(_conj(v) * expand_dims(ct, -2), _mT(v))",
        "return lambda ct: _matmul(_conj(v) * expand_dims(ct, -2), v)",
        "transpose forgotten: eigvalsh's bprop",
    ),
    Mutant(
        "svdvals-vjp-axis",
        L,
        "return lambda ct: _conj(_matmul(u * expand_dims(ct, -2), vh))",
        "return lambda ct: _conj(_matmul(u * expand_dims(ct, -1), vh))",
        "wrong axis: svdvals' bprop scales U's rows instead of its columns",
    ),
    Mutant(
        "det-vjp-factor-2",
        L,
        "return lambda ct: expand_dims(expand_dims(ct, -1), -1) * adj_t",
        "return lambda ct: expand_dims(expand_dims(ct, -1), -1) * adj_t * 2.0",
        "factor of 2: det's bprop",
    ),
    Mutant(
        "norm-vjp-factor-2",
        L,
        "return lambda ct: reshape(ct, kept) * slope",
        "return lambda ct: reshape(ct, kept) * (2.0 * slope)",
        "factor of 2: norm's bprop",
    ),
    # --- dtypes ---
    Mutant(
        "astype-vjp-dtype",
        S,
        "return lambda ct: _astype_p(ct, dtype=x_dtype)",
        "return lambda ct: ct",
        "dtype widened: astype's bprop keeps the output's dtype",
    ),
    Mutant(
        "unbroadcast-dtype",
        S,
        "ct = _astype_p(ct, dtype=x_dtype)  # complex to real",
        "ct = ct  # complex to real",
        "dtype widened: unbroadcast no longer casts back to the input's dtype",
    ),
    Mutant(
        "abs-slope-float64",
        E,
        "return _weights(_np.where(mask_values(x) >= 0, 1, -1), _dtype_of(ans))",
        "return _weights(_np.where(mask_values(x) >= 0, 1, -1), _np.dtype(_np.float64))",
        "dtype widened: abs's slope is float64 for every input",
    ),
    # --- batching rules ---
    Mutant(
        "elementwise-batch-out-axis",
        E,
        "        return _with_dim(bind(prim, aligned, params), 0)\n",
        "        return _with_dim(bind(prim, aligned, params), dims[0])\n",
        "batching rule on the wrong axis: elementwise, after moving the batch axis to the front",
    ),
    Mutant(
        "reduction-batch-axis",
        R,
        "axis=tuple(a + 1 for a in axis), **params), 0",
        "axis=tuple(a for a in axis), **params), 0",
        "batching rule on the wrong axis: max, min and prod reduce without the batch offset",
    ),
    Mutant(
        "sum-batch-axis",
        S,
        "shifted = tuple(a + 1 for a in axes) if isinstance(axis, tuple) else axes[0] + 1",
        "shifted = tuple(a + 1 for a in axes) if isinstance(axis, tuple) else axes[0]",
        "batching rule on the wrong axis: a reduction over one axis forgets the batch offset",
    ),
    Mutant(
        "cumsum-batch-axis",
        ST,
        "return prim(x, axis=batched_axis(axis, d), **params), d",
        "return prim(x, axis=axis, **params), d",
        "batching rule on the wrong axis: cumsum and cumprod scan the unshifted axis",
    ),
    Mutant(
        "fft-batch-out-axis",
        F,
        "return prim(x, axis=batched_axis(axis, d), **params), d",
        "return prim(x, axis=batched_axis(axis, d), **params), 0",
        "batching rule on the wrong axis: the FFTs report the batch axis in front",
    ),
    Mutant(
        "einsum-batch-letter",
        P,
        'batched = ",".join(terms) + "->" + letter + out',
        'batched = ",".join(terms) + "->" + out + letter',
        "batching rule on the wrong axis: einsum puts the batch axis last, reports it first",
    ),
    # --- Dask: a rule that reads a lazy value computes it behind the user's back ---
    Mutant(
        "mask-read-on-dask",
        E,
        "return holds_batch(mask) or is_foreign_array(innermost(mask)) or bool(mask.any())",
        "return holds_batch(mask) or bool(mask.any())",
        "a rule's mask of a Dask array is read (computed) instead of taken to hold",
    ),
    # --- jit: a replay under an outer transform ---
    Mutant(
        "jit-stop-gradient-same-slot",
        "fgrad/core.py",
        "return level.process(stop_gradient_p, (x,), _NO_PARAMS)  # type: ignore[arg-type]",
        "return Box(constant_of(x.value), level, x.aux)",
        "stop_gradient of a recorded value is the value's own slot: the replays of grad(jit f) "
        "differentiate through it",
    ),
    Mutant(
        "jit-index-template-identity",
        "fgrad/numpy/shaping.py",
        "return type(other) is _Slot and other.i == self.i",
        "return other is self",
        "two runs of one path make index templates that compare unequal: jit takes a second "
        "path of a function gathering by computed indices for hidden state, and runs it eagerly",
    ),
    Mutant(
        "jit-dtype-guard",
        "fgrad/staging.py",
        "return (tuple(shape_of(v)), dtype_of(v))",
        "return (tuple(shape_of(v)), None)",
        "a record guards the shape but not the dtype of a result real or complex by the values: "
        "jit(grad) of sqrtm replays a complex case through a real record (a complex gradient)",
    ),
    # --- Taylor rules ---
    Mutant(
        "exp-taylor-order",
        T,
        "exp_rule = _cached_slope_rule(lambda y, m: y[m])",
        "exp_rule = _cached_slope_rule(lambda y, m: y[max(m - 1, 0)])",
        "Taylor coefficient off by one order: exp's slope series",
    ),
    Mutant(
        "integrate-weight",
        T,
        "term = scaled_product(xj, dj, j / k)",
        "term = scaled_product(xj, dj, j / (k + 1))",
        "Taylor coefficient: the integral of a slope series weighs by j / (k + 1)",
    ),
    Mutant(
        "sine-pair-sign",
        T,
        "cs.append(c if sign > 0 or c is None else -c)",
        "cs.append(c)",
        "sign flipped: cos's Taylor coefficients (cos' = +sin)",
    ),
    Mutant(
        "log-taylor-order",
        T,
        "xk - total / k)",
        "xk - total / (k - 1))",
        "Taylor coefficient off by one order: log's recurrence",
    ),
    Mutant(
        "sqrt-taylor-factor-2",
        T,
        "twice = y[0] + y[0]",
        "twice = y[0]",
        "factor of 2: sqrt's Taylor recurrence",
    ),
    Mutant(
        "bilinear-taylor-last-term",
        T,
        "            for j in range(k + 1):\n                if xs[j]",
        "            for j in range(k):\n                if xs[j]",
        "Taylor coefficient: products (matmul, convolutions) drop the x_k y_0 term",
    ),
    Mutant(
        "power-taylor-coefficient",
        T,
        "(((a * j - (k - j)) / k) * u[j])",
        "(((a * j - k) / k) * u[j])",
        "Taylor coefficient: x**a's recurrence",
    ),
    # --- sparse forward accumulation (sparse_jacobian's first call) ---
    Mutant(
        "accumulation-square-one-partial",
        "fgrad/accumulation.py",
        "partials[k] = (q, e + d)",
        "partials[k] = (q, d)",
        "a partial derivative dropped: x * x accumulates one factor's derivative, not both",
    ),
    Mutant(
        "accumulation-move-off-by-one",
        "fgrad/sparsity.py",
        "return _np.asarray(prim.impl(*args, **params)).ravel() - 1",
        "return _np.asarray(prim.impl(*args, **params)).ravel() - 1 + (prim.name == 'roll')",
        "a move takes the next row: roll's element numbers off by one (detection's and the "
        "accumulation's rule)",
    ),
]


def _copy(dest):
    """The repository's files that the suite reads, without version control or builds."""
    ignore = shutil.ignore_patterns(
        ".git", "_build", "__pycache__", ".pytest_cache", "*.egg-info", ".ruff_cache"
    )
    shutil.copytree(ROOT, dest, ignore=ignore)


def _env():
    env = dict(os.environ)
    env.pop("FGRAD_FULL", None)  # the quick suite, whatever the caller's shell says
    env.pop("FGRAD_ROWS", None)
    return env


def _pytest(copy):
    """The quick suite's command, in one process (-x stops at the first failure), the rule
    tables first. Every file is named: pytest merges a directory argument with the files named
    before it and collects in the directory's order."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    if _has_xdist():
        command += ["-n", "0"]
    rest = sorted(str(p.relative_to(copy)) for p in (copy / "tests").glob("test_*.py"))
    return command + FIRST + [p for p in rest if p not in FIRST] + ["fgrad"]


def _has_xdist():
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


def _first_failure(output):
    match = re.search(r"^(?:FAILED|ERROR) (\S+)", output, flags=re.M)
    return match.group(1) if match else ""


def run(mutant, copy, timeout):
    """(outcome, seconds, the first failing test or the reason) of one mutant."""
    target = copy / mutant.path
    original = target.read_text()
    if original.count(mutant.old) != 1:
        return "broken", 0.0, f"its text occurs {original.count(mutant.old)} times in the file"
    target.write_text(original.replace(mutant.old, mutant.new))
    start = time.monotonic()
    try:
        done = subprocess.run(
            _pytest(copy),
            cwd=copy,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "broken", time.monotonic() - start, f"no result in {timeout} s"
    finally:
        target.write_text(original)
    seconds = time.monotonic() - start
    output = done.stdout + done.stderr
    if done.returncode == 0:
        return "SURVIVED", seconds, "the quick suite passed"
    if done.returncode == 1:
        return "caught", seconds, _first_failure(output)
    tail = output.strip().splitlines()[-1:] or ["(no output)"]
    return "broken", seconds, f"pytest exit code {done.returncode}: {tail[0]}"


def rotation(n, day=None):
    """n mutants chosen by the date: consecutive days take consecutive blocks of the list, so
    every mutant runs within len(MUTANTS) / n days."""
    day = (day or datetime.date.today()).toordinal()
    start = day * n % len(MUTANTS)
    return [MUTANTS[(start + i) % len(MUTANTS)] for i in range(min(n, len(MUTANTS)))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated mutant names")
    parser.add_argument("--rotate", type=int, help="run this many, chosen by today's date")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per mutant")
    args = parser.parse_args(argv)

    names = [m.name for m in MUTANTS]
    assert len(set(names)) == len(names), "two mutants share a name"
    chosen = MUTANTS
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"no mutant named {unknown}; --list shows them")
        chosen = [m for m in MUTANTS if m.name in wanted]
    elif args.rotate:
        chosen = rotation(args.rotate)
    if args.list:
        for m in chosen:
            print(f"{m.name:34} {m.path:28} {m.what}")
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="fgrad-mutants-") as tmp:
        copy = pathlib.Path(tmp) / "repo"
        _copy(copy)
        where = subprocess.run(
            [sys.executable, "-c", "import fgrad; print(fgrad.__file__)"],
            cwd=copy,
            env=_env(),
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not where.startswith(str(copy)):
            sys.exit(f"the copy's tests would import fgrad from {where}, not from {copy}")
        print(f"{len(chosen)} mutants, each against the quick suite in {copy}", flush=True)
        for m in chosen:
            outcome, seconds, detail = run(m, copy, args.timeout)
            results.append((m, outcome, seconds, detail))
            print(f"{outcome:8} {seconds:6.1f} s  {m.name}: {detail}", flush=True)
    caught = sum(outcome == "caught" for _, outcome, _, _ in results)
    print(f"{caught} of {len(results)} caught")
    if args.markdown:
        print("\n| mutant | file | defect | caught by | seconds |")
        print("|---|---|---|---|---|")
        for m, outcome, seconds, detail in results:
            by = f"`{detail}`" if outcome == "caught" else f"**{outcome}**: {detail}"
            print(f"| `{m.name}` | `{m.path}` | {m.what} | {by} | {seconds:.0f} |")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
