"""`fgrad.scipy`: differentiable mirrors of SciPy functions. Needs SciPy (`pip install
"fgrad[scipy]"`); `import fgrad` works without it.

Submodules (each with SciPy's names and signatures): `special`, `stats`, `linalg`, `signal`,
`integrate`, `optimize`, `sparse`. They are imported when first used, so `import fgrad.scipy`
stays cheap.
"""

import importlib

try:
    import scipy as _scipy  # noqa: F401 (imported only to fail early without SciPy)
except ImportError as error:  # pragma: no cover - exercised in an environment without SciPy
    raise ImportError(
        "fgrad.scipy needs SciPy, which is not installed; install it with "
        "pip install 'fgrad[scipy]' (or pip install scipy)"
    ) from error

SUBMODULES = ("special", "stats", "linalg", "signal", "integrate", "optimize", "sparse")

__all__ = list(SUBMODULES)


def __getattr__(name):
    # `fgrad.scipy.stats` works after a plain `import fgrad.scipy`, as it does in SciPy.
    if name in SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(
        f"module 'fgrad.scipy' has no attribute {name!r}; its submodules are "
        f"{', '.join(SUBMODULES)}"
    )


def __dir__():
    return sorted(set(globals()) | set(SUBMODULES))
