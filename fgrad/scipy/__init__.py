"""`fgrad.scipy`: differentiable mirrors of SciPy functions. Needs SciPy (`pip install
"fgrad[scipy]"`); `import fgrad` works without it.
"""

try:
    import scipy as _scipy  # noqa: F401  (only to fail early, with a message that helps)
except ImportError as error:  # pragma: no cover - exercised in an environment without SciPy
    raise ImportError(
        "fgrad.scipy needs SciPy, which is not installed; install it with "
        "pip install 'fgrad[scipy]' (or pip install scipy)"
    ) from error

from . import special  # noqa: E402

__all__ = ["special"]
