"""fgrad: functional automatic differentiation for Python on NumPy.

Write a function with `fgrad.numpy` (a mirror of NumPy) and transform it:

>>> import fgrad, fgrad.numpy as fnp
>>> f = lambda x: fnp.sin(x) * x
>>> float(fgrad.grad(f)(0.0)), float(fgrad.grad(fgrad.grad(f))(0.0))
(0.0, 2.0)

Public names only; the layers underneath are `core` (levels, boxes, the K transform),
`primitive` (registering operations with their rules), `numpy` (the mirror), `api` (the
transforms), `custom` (your own rules, checkpointing, a tap on the backward pass) and
`test_util` (numerical gradient checks), `graph` (`make_graph`: a look inside a computation),
`sparsity` (which inputs each value depends on), `coloring` and `sparse` (sparse Jacobians
and Hessians, which load SciPy when first called).
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
from .sparse import hessian_sparsity, jacobian_sparsity, sparse_hessian, sparse_jacobian
from .vmapping import vmap

# The only place the version is written: pyproject.toml reads this literal when it builds
# (a dynamic version), so `import fgrad` stays free of importlib.metadata.
__version__ = "0.1.0"

__all__ = [
    "checkpoint",
    "custom_jvp",
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
