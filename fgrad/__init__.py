"""fgrad: functional automatic differentiation for Python on NumPy.

Write a function with `fgrad.numpy` (a mirror of NumPy) and transform it:

>>> import fgrad, fgrad.numpy as fnp
>>> f = lambda x: fnp.sin(x) * x
>>> float(fgrad.grad(f)(0.0)), float(fgrad.grad(fgrad.grad(f))(0.0))
(0.0, 2.0)

Public names only; the layers underneath are `core` (levels, boxes, the K transform),
`primitive` (registering operations with their rules), `numpy` (the mirror), `api` (the
transforms), `custom` (your own rules, checkpointing, a tap on the backward pass), `solve`
(`custom_root`, `custom_linear_solve`: implicit differentiation) and
`test_util` (numerical gradient checks), `graph` (`make_graph`: a look inside a computation),
`staging` and `jitting` (`jit`: record once, replay), `sparsity` (which inputs each value
depends on), `coloring` and `sparse` (sparse Jacobians and Hessians, which load SciPy when
first called). `fgrad.scipy` (SciPy's functions; needs SciPy) is imported on first use, as
`fgrad.scipy.special`.
"""

from . import numpy, test_util, tree_util
from .api import (
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
)
from .custom import checkpoint, custom_jvp, custom_vjp, remat, tap_cotangent
from .debug import debug_nans, set_debug_nans
from .graph import make_graph
from .jets import derivative, jet, laplacian
from .jitting import jit, make_record
from .primitive import primitive
from .solve import custom_linear_solve, custom_root
from .sparse import hessian_sparsity, jacobian_sparsity, sparse_hessian, sparse_jacobian
from .vmapping import vmap

# The only place the version is written: pyproject.toml reads this literal when it builds
# (a dynamic version), so `import fgrad` stays free of importlib.metadata.
__version__ = "0.1.0"

# Subpackages that `import fgrad` does not load, each imported on first attribute access (as
# `jax.scipy` is after `import jax`), so that `import fgrad` needs NumPy alone.
_LAZY_SUBPACKAGES = ("scipy",)


def __getattr__(name):
    if name in _LAZY_SUBPACKAGES:
        import importlib

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ImportError as error:
            # An AttributeError, as the protocol asks (`hasattr(fgrad, "scipy")` is then False
            # rather than an exception), carrying the install hint of the ImportError.
            raise AttributeError(f"fgrad.{name} is unavailable: {error}") from error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES))


__all__ = [
    "checkpoint",
    "custom_jvp",
    "custom_linear_solve",
    "custom_root",
    "custom_vjp",
    "debug_nans",
    "derivative",
    "grad",
    "hessian",
    "hessian_sparsity",
    "jacfwd",
    "jacobian_sparsity",
    "jacrev",
    "jet",
    "jit",
    "jvp",
    "laplacian",
    "linearize",
    "make_graph",
    "make_record",
    "numpy",
    "primitive",
    "remat",
    "set_debug_nans",
    "sparse_hessian",
    "sparse_jacobian",
    "stop_gradient",
    "tap_cotangent",
    "test_util",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]
