"""Sphinx configuration of fgrad's documentation.

    pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html

The API pages, the coverage tables and the graph pictures are generated from the code at every
build (docs/_ext/fgrad_api.py); the notebooks are copied from notebooks/ and rendered from their
stored outputs, never executed. These sources are written into docs/ (api/generated/,
_generated/, notebooks/; see docs/.gitignore) whatever the output folder is: build a copy of the
checkout to leave it untouched (docs/install.md, "Building this site").
"""

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # this checkout's fgrad, even without an install
sys.path.insert(0, str(DOCS / "_ext"))

import fgrad  # noqa: E402

project = "fgrad"
author = "the fgrad authors"
copyright = "the fgrad authors"
release = version = fgrad.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_nb",
    "fgrad_api",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
root_doc = "index"

# Docstrings are NumPy style, read by napoleon; `name` in a docstring is a cross-reference
# where fgrad documents that name, and plain code otherwise.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
default_role = "py:obj"
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_inherit_docstrings = False
add_module_names = False
toc_object_entries = False  # the pages list hundreds of functions; the sidebar stays short

# The notebooks are committed with their outputs: render those, never run them.
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "pydata_sphinx_theme"
html_title = f"fgrad {release}"
html_static_path = ["_static"]
html_css_files = ["fgrad.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "secondary_sidebar_items": ["page-toc"],
}
# Pages without sections of their own get the full width (an empty "Section Navigation"
# column otherwise); the API pages and the notebooks keep their section's navigation.
_SINGLE_PAGES = ["index", "install", "tour", "k_transform", "guarantees", "from_jax"]
html_sidebars = {"**": ["sidebar-nav-bs"]} | {
    page: [] for page in _SINGLE_PAGES + ["from_autograd"]
}
