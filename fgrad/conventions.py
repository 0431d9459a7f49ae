"""What fgrad's rules give at kinks and singular points, beside what JAX gives.

    python -m fgrad.conventions            # print the table (JAX's column needs jax installed)
    python -m fgrad.conventions --readme   # rewrite the table in README.md

A derivative at a point where the function is not differentiable is a choice. fgrad makes
JAX's choice where JAX gives a number, and a finite, documented one where JAX gives nan. Each
case below computes fgrad's value from the code; JAX's value is computed too when jax is
installed (never a dependency of fgrad), and is otherwise the one recorded here from
jax 0.10.2 with float64 enabled. `tests/test_conventions.py` checks that README.md shows what
the code computes.

Imports: `fgrad` (the public API) and, if installed, `jax`.
"""

from __future__ import annotations

import pathlib
import sys
from typing import TYPE_CHECKING

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, jacfwd

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# (what, fgrad's value as a function, JAX's value as a function of (jax, jnp), JAX's value as
# recorded, why fgrad gives what it gives)
CASES = [
    (
        "abs'(0)",
        lambda: grad(fnp.abs)(0.0),
        lambda jax, jnp: jax.grad(jnp.abs)(0.0),
        "1",
        "JAX's choice: the slope of x >= 0",
    ),
    (
        "abs''(0)",
        lambda: grad(grad(fnp.abs))(0.0),
        lambda jax, jnp: jax.grad(jax.grad(jnp.abs))(0.0),
        "0",
        "",
    ),
    (
        "grad max([1, 3, 3])",
        lambda: grad(fnp.max)(np.array([1.0, 3.0, 3.0])),
        lambda jax, jnp: jax.grad(jnp.max)(jnp.array([1.0, 3.0, 3.0])),
        "[0, 0.5, 0.5]",
        "ties share the gradient evenly",
    ),
    (
        "d/dx maximum(x, 1) at x = 1",
        lambda: grad(lambda x: fnp.maximum(x, 1.0))(1.0),
        lambda jax, jnp: jax.grad(lambda x: jnp.maximum(x, 1.0))(1.0),
        "0.5",
        "a tie splits",
    ),
    (
        "d/dx clip(x, 0, 1) at x = 1",
        lambda: grad(lambda x: fnp.clip(x, 0.0, 1.0))(1.0),
        lambda jax, jnp: jax.grad(lambda x: jnp.clip(x, 0.0, 1.0))(1.0),
        "0.5",
        "clip is minimum(maximum(x, lo), hi)",
    ),
    (
        "d^k/dx^k x**2.0 at 0, k = 1, 2, 3",
        lambda: _nested(lambda x: x**2.0, 0.0, 3),
        lambda jax, jnp: _jax_nested(jax, lambda x: x**2.0, 0.0, 3),
        "[0, 2, nan]",
        "exact to every order: a constant exponent's zero is guarded",
    ),
    (
        "d/dx x**0.0 at 0",
        lambda: grad(lambda x: x**0.0)(0.0),
        lambda jax, jnp: jax.grad(lambda x: x**0.0)(0.0),
        "nan",
        "0 * 0**-1 is guarded too",
    ),
    (
        "d/dy 0**y at y = 2",
        lambda: grad(lambda y: 0.0**y)(2.0),
        lambda jax, jnp: jax.grad(lambda y: 0.0**y)(2.0),
        "0",
        "x**y log x taken as 0 at x = 0",
    ),
    (
        "sqrt'(0)",
        lambda: _quiet(grad(fnp.sqrt), 0.0),
        lambda jax, jnp: jax.grad(jnp.sqrt)(0.0),
        "inf",
        "the true one-sided limit",
    ),
    (
        "grad prod([0, 2, 3])",
        lambda: grad(fnp.prod)(np.array([0.0, 2.0, 3.0])),
        lambda jax, jnp: jax.grad(jnp.prod)(jnp.array([0.0, 2.0, 3.0])),
        "[6, 0, 0]",
        "the product of the others, without division",
    ),
    (
        "jacfwd(prod)([inf, 2, 3])",
        lambda: _quiet(jacfwd(fnp.prod), np.array([np.inf, 2.0, 3.0])),
        lambda jax, jnp: jax.jacfwd(jnp.prod)(jnp.array([jnp.inf, 2.0, 3.0])),
        "[nan, nan, nan]",
        "a zero tangent gives 0 against an infinite product of the others",
    ),
    (
        "jacfwd(sqrt)([0, 1])",
        lambda: _quiet(jacfwd(fnp.sqrt), np.array([0.0, 1.0])),
        lambda jax, jnp: jax.jacfwd(jnp.sqrt)(jnp.array([0.0, 1.0])),
        "[inf, nan, 0, 0.5]",
        "a one-hot tangent's 0 times sqrt'(0) = inf (0 * inf); jacrev has it at [1, 0]",
    ),
    (
        "d/dx where(x > 0, sqrt(x), 0) at 0",
        lambda: _quiet(grad(lambda x: fnp.where(x > 0, fnp.sqrt(x), 0.0)), 0.0),
        lambda jax, jnp: jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0))(0.0),
        "nan",
        "the masked branch still runs (0 * inf); guard its input too",
    ),
    (
        "grad norm(x) at x = 0",
        lambda: grad(fnp.linalg.norm)(np.zeros(2)),
        lambda jax, jnp: jax.grad(jnp.linalg.norm)(jnp.zeros(2)),
        "[nan, nan]",
        "0 is a subgradient (the minimum)",
    ),
    (
        "grad std(x) at x = [1, 1, 1]",
        lambda: grad(fnp.std)(np.ones(3)),
        lambda jax, jnp: jax.grad(jnp.std)(jnp.ones(3)),
        "[nan, nan, nan]",
        "0 is a subgradient (the minimum)",
    ),
    (
        "grad median([1, 1, 1])",
        lambda: grad(fnp.median)(np.ones(3)),
        lambda jax, jnp: jax.grad(jnp.median)(jnp.ones(3)),
        "[0, 1, 0]",
        "the gradient of the sorted order statistic",
    ),
    (
        "grad cumprod([0, 2, 3])[-1]",
        lambda: grad(lambda x: fnp.cumprod(x)[-1])(np.array([0.0, 2.0, 3.0])),
        lambda jax, jnp: jax.grad(lambda x: jnp.cumprod(x)[-1])(jnp.array([0.0, 2.0, 3.0])),
        "[6, 0, 0]",
        "products of the others, no division",
    ),
    (
        "sinc''(0)",
        lambda: grad(grad(fnp.sinc))(0.0),
        lambda jax, jnp: jax.grad(jax.grad(jnp.sinc))(0.0),
        "-3.28987",
        "-pi^2 / 3",
    ),
    (
        "grad hypot at (0, 0)",
        lambda: np.array(grad(fnp.hypot, argnums=(0, 1))(0.0, 0.0)),
        lambda jax, jnp: np.array(jax.grad(jnp.hypot, argnums=(0, 1))(0.0, 0.0)),
        "[0.5, 0.5]",
        "0 is a subgradient (the minimum)",
    ),
    (
        "grad arctan2 at (0, 0)",
        lambda: _quiet(lambda: np.array(grad(fnp.arctan2, argnums=(0, 1))(0.0, 0.0))),
        lambda jax, jnp: np.array(jax.grad(jnp.arctan2, argnums=(0, 1))(0.0, 0.0)),
        "[nan, nan]",
        "no direction-independent answer",
    ),
    (
        "d/dy xlogy(0, y) at y = 0",
        lambda: _quiet(grad(_special("xlogy"), argnums=1), 0.0, 0.0),
        lambda jax, jnp: _jax_special(jax, "xlogy", 1)(0.0, 0.0),
        "nan",
        "x log y is 0 along x = 0",
    ),
    (
        "grad logsumexp([0, -inf])",
        lambda: _quiet(grad(_special("logsumexp")), np.array([0.0, -np.inf])),
        lambda jax, jnp: _jax_special(jax, "logsumexp", 0)(jnp.array([0.0, -jnp.inf])),
        "[1, 0]",
        "",
    ),
    (
        "grad of eigh's eigenvectors at a repeated eigenvalue",
        lambda: _quiet(grad(lambda a: fnp.sum(fnp.linalg.eigh(a)[1][:, 0])), np.eye(2)),
        lambda jax, jnp: jax.grad(lambda a: jnp.sum(jnp.linalg.eigh(a)[1][:, 0]))(jnp.eye(2)),
        "[nan, nan, nan, nan]",
        "as JAX: the eigenvectors of a tie have no derivative",
    ),
    (
        "grad eigvalsh(a)[1] at a = [[0, 7], [1, 0]]",
        lambda: grad(lambda a: fnp.linalg.eigvalsh(a)[1])(np.array([[0.0, 7.0], [1.0, 0.0]])),
        lambda jax, jnp: jax.grad(lambda a: jnp.linalg.eigvalsh(a)[1])(
            jnp.array([[0.0, 7.0], [1.0, 0.0]])
        ),
        "[0.5, 0.5, 0.5, 0.5]",
        "NumPy's function: it reads the lower triangle (eigenvalue 1; JAX's (a + a^H)/2 gives 4)",
    ),
    (
        "grad abs(z)**2 at 1+2j",
        lambda: grad(lambda z: fnp.abs(z) ** 2)(1 + 2j),
        lambda jax, jnp: jax.grad(lambda z: jnp.abs(z) ** 2)(1 + 2j),
        "(2-4j)",
        "JAX's convention; PyTorch gives the conjugate",
    ),
    (
        "grad abs(z) at 0j",
        lambda: grad(fnp.abs)(0j),
        lambda jax, jnp: jax.grad(jnp.abs)(0j),
        "0j",
        "a subgradient",
    ),
    (
        "hessian of abs(x + 1j y)**2 at 0",
        lambda: _hessian_of_abs_squared(fgrad),
        lambda jax, jnp: _hessian_of_abs_squared(jax, jnp),
        "[0, 0, 0, 0]",
        "follows from abs' at 0j = 0, though abs(z)**2 is smooth (exact: 2 I); write "
        "real(z)**2 + imag(z)**2",
    ),
]


def _hessian_of_abs_squared(lib, np_=fnp):
    f = lambda v: np_.abs(v[0] + 1j * v[1]) ** 2  # noqa: E731
    return lib.hessian(f)(np.zeros(2))


def _special(name):
    import fgrad.scipy.special

    return getattr(fgrad.scipy.special, name)


def _jax_special(jax, name, argnum):
    import jax.scipy.special

    return jax.grad(getattr(jax.scipy.special, name), argnums=argnum)


def _nested(f, x, n):
    out = []
    for _ in range(n):
        f = grad(f)
        out.append(f(x))
    return np.array(out)


def _jax_nested(jax, f, x, n):
    out = []
    for _ in range(n):
        f = jax.grad(f)
        out.append(f(x))
    return np.array(out)


def _quiet(f, *args):
    with np.errstate(all="ignore"):
        return f(*args)


def show(value: ArrayLike) -> str:
    """A short, stable text for a value: 6 significant digits, no dtype noise."""
    v = np.asarray(value)
    if np.iscomplexobj(v):
        return str(complex(v)) if v.ndim == 0 else np.array2string(v, precision=6, separator=", ")
    if v.ndim == 0:
        return f"{float(v):.6g}"
    return "[" + ", ".join(f"{float(a):.6g}" for a in v.ravel()) + "]"


def fgrad_values() -> list[str]:
    return [show(fn()) for _, fn, _, _, _ in CASES]


def jax_values() -> tuple[list[str], str]:
    """JAX's column: computed if jax is installed (float64 enabled), else as recorded."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return [recorded for _, _, _, recorded, _ in CASES], "recorded from jax 0.10.2"
    jax.config.update("jax_enable_x64", True)
    values = []
    for _, _, jax_fn, _, _ in CASES:
        with np.errstate(all="ignore"):
            values.append(show(jax_fn(jax, jnp)))
    return values, f"computed with jax {jax.__version__}"


def table(jax_column: tuple[list[str], str] | None = None) -> str:
    jax_vals, source = jax_column or jax_values()
    lines = [
        f"| at | fgrad | JAX ({source}) | why |",
        "|---|---|---|---|",
    ]
    for (what, _, _, _, why), ours, theirs in zip(CASES, fgrad_values(), jax_vals):
        lines.append(f"| `{what}` | {ours} | {theirs} | {why} |")
    return "\n".join(lines)


BEGIN, END = "<!-- conventions: begin -->", "<!-- conventions: end -->"
README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def write_readme(path: pathlib.Path = README) -> None:
    text = path.read_text()
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    path.write_text(f"{head}{BEGIN}\n{table()}\n{END}{tail}")


if __name__ == "__main__":
    if "--readme" in sys.argv:
        write_readme()
        print(f"wrote the conventions table into {README}")
    else:
        print(table())
