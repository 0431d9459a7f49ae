"""Checked examples for the mirrors' names whose docstrings have none of their own.

    python docs/_ext/fgrad_examples.py --write   # (re)generate docs/_ext/examples.json

For each such name the generator tries a few small inputs (vectors, a positive definite
matrix, a pair of vectors, ...) until the function runs on one, with a finite value and, for a
differentiable name, `check_grads` passing to order 2 in both modes. The example shows the
value, the gradient of its sum and the `check_grads` call; its printed outputs are recorded
once, here, and `tests/test_docs.py` runs every example as a doctest, so a change in a value or
a derivative fails a test until the examples are regenerated on purpose.

Imports: `fgrad`, NumPy, SciPy (for the SciPy mirrors), `fgrad_coverage`.
"""

from __future__ import annotations

import doctest
import importlib
import json
import pathlib
import re
import sys

import fgrad_coverage as coverage
import numpy as np

STORE = pathlib.Path(__file__).with_name("examples.json")
EXAMPLES: dict[str, str] = json.loads(STORE.read_text()) if STORE.exists() else {}

# How an example spells each mirror module, and the import that makes it so.
SPELLING = {
    "fgrad.numpy": ("fnp", "import numpy as np, fgrad, fgrad.numpy as fnp"),
    "fgrad.numpy.linalg": ("fnp.linalg", "import numpy as np, fgrad, fgrad.numpy as fnp"),
    "fgrad.numpy.fft": ("fnp.fft", "import numpy as np, fgrad, fgrad.numpy as fnp"),
    "fgrad.scipy.special": (
        "special",
        "import numpy as np, fgrad, fgrad.numpy as fnp\n>>> from fgrad.scipy import special",
    ),
    "fgrad.scipy.linalg": (
        "linalg",
        "import numpy as np, fgrad, fgrad.numpy as fnp\n>>> from fgrad.scipy import linalg",
    ),
    "fgrad.scipy.signal": (
        "signal",
        "import numpy as np, fgrad, fgrad.numpy as fnp\n>>> from fgrad.scipy import signal",
    ),
    "fgrad.scipy.integrate": (
        "integrate",
        "import numpy as np, fgrad, fgrad.numpy as fnp\n>>> from fgrad.scipy import integrate",
    ),
}

# Inputs tried in order: (the assignments shown, the call's arguments). Names x, y, a, b are
# float inputs and are differentiated; literals are constants.
VECTOR = "x = np.array([0.3, 0.6])"
POSITIVE = "x = np.array([1.5, 2.5])"
PAIR = "x, y = np.array([0.3, 0.6]), np.array([1.5, 2.5])"
LONG = "x = np.array([0.3, 1.2, 0.7, 2.0])"
MATRIX = "a = np.array([[2.0, 0.5], [0.5, 1.0]])"
MATRICES = "a, b = np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([[1.0, -0.3], [0.2, 0.8]])"
SYSTEM = "a, b = np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([1.0, 2.0])"
BOOLS = "x = np.array([True, False])"
TRIPLE = "x, y = np.array([0.3, 0.6, 1.2]), np.array([1.5, 2.5, -0.5])"
PROBABILITIES = "x, y = np.array([1.5, 2.5]), np.array([0.3, 0.6])"
SIMPLEX = "x, y = np.array([0.2, 0.3, 0.5]), np.array([1.5, 2.5, 2.0])"
BANDED = "a, b = np.array([[0.0, 0.5, 0.5], [2.0, 1.0, 3.0], [0.5, 0.5, 0.0]]), np.ones(3)"
CANDIDATES = [
    (VECTOR, "x"),
    (POSITIVE, "x"),
    (PAIR, "x, y"),
    (LONG, "x"),
    (PAIR, "[x, y]"),
    (MATRIX, "a"),
    (SYSTEM, "a, b"),
    (MATRICES, "a, b"),
    (LONG, "x, 2"),
    (MATRIX, "a, 2"),
    (MATRIX, "a, 1"),
    (TRIPLE, "x, y"),
    (PROBABILITIES, "x, y"),
    (SIMPLEX, "x, y"),
    ("y = np.array([1.5, 2.5, 2.0])", "np.array([0.2, 0.3, 0.5]), y"),  # x on the simplex
    (VECTOR, "x, 1.5, 2.5"),
    (VECTOR, "x, np.complex128"),
    (MATRICES, "a, b, a"),
    (SYSTEM, "linalg.cho_factor(a), b"),
    (SYSTEM, "linalg.lu_factor(a), b"),
    (BANDED, "(1, 1), a, b"),
    (LONG, "x, (2, 2)"),
    (PAIR, "x, y, 0.5"),
    (PAIR, "0.5, x, y"),
    (POSITIVE, "x, 1.5"),
    (POSITIVE, "x, 1.5, 2.5"),
    (POSITIVE, "1.5, x"),
    (POSITIVE, "1, x"),
    (POSITIVE, "2, x"),
    (PAIR, "x, y, y"),
    (MATRIX, "a, 0, 1"),
    (VECTOR, "x, (3, 2)"),
    (VECTOR, "x, np.float32"),
    (LONG, "x, 1, 5.0"),
    (VECTOR, "[x > 0.5], [x]"),
    (BOOLS, "x"),
    ("", "3"),
    ("", "(2, 2)"),
    ("", "4, 0.5"),
    ("a = np.ones((2, 2, 4))", "a, 2"),
]


def _floats(arguments: str) -> list[str]:
    return [v for v in ("x", "y", "a", "b") if re.search(rf"\b{v}\b", arguments)]


def _first_float(call: str, value) -> tuple[str, object]:
    """The call indexed down to its first output (a factorization's first factor)."""
    while isinstance(value, tuple | list) and value:
        call, value = f"{call}[0]", value[0]
    return call, value


def _loss(call: str, value) -> str | None:
    """A real scalar of the call's value to take the gradient of, or None for no float."""
    call, value = _first_float(call, value)
    value = np.asarray(value)
    if np.iscomplexobj(value):
        return f"fnp.sum(fnp.abs({call}) ** 2)"
    if not np.issubdtype(value.dtype, np.floating):
        return None
    return f"fnp.sum({call})" if value.ndim else call


def _run(lines: list[str]) -> list[str] | None:
    """Run doctest source lines; their outputs, or None if any raised or gave a non-finite."""
    namespace: dict = {}
    outputs = []
    for line in lines:
        try:
            try:
                code = compile(line, "<example>", "eval")
            except SyntaxError:
                exec(compile(line, "<example>", "exec"), namespace)
                outputs.append("")
                continue
            with np.errstate(all="ignore"):
                value = eval(code, namespace)
        except Exception:
            return None
        if value is not None:
            leaves = value if isinstance(value, tuple | list) else (value,)
            for leaf in leaves:
                a = np.asarray(leaf)
                if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
                    return None
        # doctest reads a blank line as the end of the output (NumPy prints one between the
        # blocks of a 3-d array)
        shown = "" if value is None else repr(value)
        lines_shown = [line or "<BLANKLINE>" for line in shown.split("\n")] if shown else []
        outputs.append("\n".join(lines_shown))
    return outputs


def _spelling(module_name: str) -> tuple[str, str]:
    """How an example names the module, and the imports it starts with."""
    if module_name.startswith("fgrad.scipy.stats."):
        dist = module_name.rsplit(".", 1)[1]
        imports = "import numpy as np, fgrad, fgrad.numpy as fnp"
        return dist, f"{imports}\n>>> from fgrad.scipy.stats import {dist}"
    return SPELLING[module_name]


# Functions whose values are the memory's old contents: their examples print the shape
UNINITIALIZED = frozenset({"empty", "empty_like"})


def example_for(module_name: str, name: str) -> str | None:
    spelled, imports = _spelling(module_name)
    module = importlib.import_module(module_name)
    status, _ = coverage.status_of(getattr(module, name), module_name, name)
    candidates = CANDIDATES
    if module_name.endswith(".linalg"):  # matrices first: a list of vectors reads badly there
        candidates = sorted(CANDIDATES, key=lambda c: c[0] not in (MATRIX, SYSTEM, MATRICES))
    for setup, arguments in candidates:
        call = f"{spelled}.{name}({arguments})"
        if name in UNINITIALIZED:  # what it prints is whatever the memory held
            call += ".shape"
        setup_lines = [setup] if setup else []
        probe = _run([imports.replace("\n>>> ", "\n"), *setup_lines, call])
        if probe is None:
            continue
        namespace: dict = {}
        exec(imports.replace("\n>>> ", "\n") + "\n" + setup, namespace)
        inputs = {k: v.copy() for k, v in namespace.items() if isinstance(v, np.ndarray)}
        value = eval(call, namespace)
        if any(not np.array_equal(namespace[k], v) for k, v in inputs.items()):
            continue  # the call wrote into an input (NumPy's `out` given positionally)
        lines = [imports, *setup_lines, call]
        floats = _floats(arguments)
        if status == coverage.DIFFERENTIABLE:
            loss = _loss(call, value)
            if loss is None or not floats:
                continue
            params = ", ".join(floats)
            argnums = "" if len(floats) == 1 else f", argnums={tuple(range(len(floats)))}"
            lines.append(f"fgrad.grad(lambda {params}: {loss}{argnums})({params})")
            checked_call, _ = _first_float(call, value)
            if arguments == params and checked_call == call:
                checked = f"{spelled}.{name}"
            else:
                checked = f"lambda {params}: {checked_call}"
            packed = f"({params},)" if len(floats) == 1 else f"({params})"
            lines.append(f"fgrad.test_util.check_grads({checked}, {packed}, order=2)")
        outputs = _run([line.replace("\n>>> ", "\n") for line in lines])
        if outputs is None:
            continue
        text = []
        for line, output in zip(lines, outputs):
            text.append(f">>> {line}")
            if output:
                text.append(output)
        return "\n".join(text)
    return None


def _has_own_example(obj) -> bool:
    return ">>>" in (getattr(obj, "__doc__", None) or "") and type(obj).__module__ != "fgrad.core"


def generate() -> tuple[dict[str, str], list[str]]:
    """(examples by qualified name, names no candidate input fits)."""
    examples, without = {}, []
    modules = []
    for mirror in coverage.MIRRORS:
        if not coverage.available(mirror):
            continue
        module = importlib.import_module(mirror.module)
        if mirror.module == "fgrad.scipy.stats":
            modules += [getattr(module, dist) for dist in module.__all__]
        else:
            modules.append(module)
    for module in modules:
        for name in coverage.mirror_names(module):
            obj = getattr(module, name)
            if not callable(obj) or isinstance(obj, type) or _has_own_example(obj):
                continue
            if not (getattr(obj, "__module__", None) or "").startswith("fgrad"):
                continue  # NumPy's own constructors: documented as NumPy's
            example = example_for(module.__name__, name)
            if example is None:
                without.append(f"{module.__name__}.{name}")
            else:
                examples[f"{module.__name__}.{name}"] = example
    return examples, without


class NumericChecker(doctest.OutputChecker):
    """Doctest's checker, with numbers compared to a relative 1e-7 (the last printed digits
    of a float may differ between BLAS builds; the text around them must not)."""

    NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        if self.NUMBER.sub("#", want) != self.NUMBER.sub("#", got):
            return False
        wanted = [float(v) for v in self.NUMBER.findall(want)]
        found = [float(v) for v in self.NUMBER.findall(got)]
        return len(wanted) == len(found) and np.allclose(wanted, found, rtol=1e-7, atol=1e-12)


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit(__doc__)
    examples, without = generate()
    STORE.write_text(json.dumps(examples, indent=1, sort_keys=True) + "\n")
    print(f"{len(examples)} examples written to {STORE}; no example for {len(without)}:")
    print(" ".join(without))
