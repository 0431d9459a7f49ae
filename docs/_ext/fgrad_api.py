"""The Sphinx extension that writes fgrad's generated pages and completes the mirrors' entries.

At the start of every build (`builder-inited`) it writes, from the code:

- `api/generated/<module>.md`: one API page per public module, with an entry for every public
  name and, for the NumPy and SciPy mirrors, the coverage table (`fgrad_coverage`);
- `api/generated/guide_modules.md`: the modules the guides point to (`GUIDE_MODULES`);
- `_generated/conventions.md`: the conventions table, computed by `fgrad.conventions`;
- `_generated/*.svg`: `make_graph` pictures for the page on the K transform;
- `notebooks/*.ipynb`: copies of the committed notebooks (myst-nb renders their stored
  outputs; nothing is executed).

While autodoc reads a mirror's docstring (`autodoc-process-docstring`) it appends what the
code knows about the name: its derivative status, its kind (`fgrad.numpy._mirror`), the
conventions table's rows about it, a link to the NumPy or SciPy original (whose prose is
never copied), and, for a name whose docstring has no example of its own, the checked
example from `fgrad_examples`.

All generated files are ignored by git; deleting them is always safe.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import shutil
import types

import fgrad_coverage as coverage
import fgrad_examples

from fgrad.numpy._mirror import kind_of

# What each kind of fgrad.numpy's names says (fgrad/numpy/_mirror.py declares them)
KIND_TEXT = {
    "ufunc": "an elementwise ufunc with NumPy's ufunc signature",
    "gufunc": "a ufunc over core dimensions, broadcast over the others",
    "reduction": "reduces along its axes",
    "shape": "moves, selects or combines entries, without arithmetic",
    "creation": "makes a new array from its parameters",
    "function": "computed in fgrad operations",
    "constant": "NumPy's own function on plain values, or a question about an array",
}

DOCS = pathlib.Path(__file__).resolve().parents[1]
ROOT = DOCS.parent

# fgrad's own API, grouped as the pages present it; a public name in no group lands in "More".
TOP_LEVEL_GROUPS = [
    (
        "Transforms",
        [
            "grad",
            "value_and_grad",
            "vjp",
            "jvp",
            "linearize",
            "jacfwd",
            "jacrev",
            "hessian",
            "vmap",
        ],
    ),
    ("Taylor mode", ["jet", "derivative", "laplacian"]),
    (
        "Your own rules, memory, the backward pass",
        [
            "primitive",
            "custom_vjp",
            "custom_jvp",
            "checkpoint",
            "remat",
            "tap_cotangent",
            "stop_gradient",
        ],
    ),
    ("Recording and replay", ["jit", "make_record"]),
    (
        "Sparse derivatives",
        ["jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian"],
    ),
    ("Solvers with implicit derivatives", ["custom_root", "custom_linear_solve"]),
    ("A look inside, and debugging", ["make_graph", "debug_nans", "set_debug_nans"]),
]

# (page, module, title): the order of the API reference.
PAGES = [
    ("fgrad", "fgrad", "fgrad: the transforms"),
    ("fgrad.numpy", "fgrad.numpy", "fgrad.numpy"),
    ("fgrad.numpy.linalg", "fgrad.numpy.linalg", "fgrad.numpy.linalg"),
    ("fgrad.numpy.fft", "fgrad.numpy.fft", "fgrad.numpy.fft"),
    ("fgrad.scipy.special", "fgrad.scipy.special", "fgrad.scipy.special"),
    ("fgrad.scipy.stats", "fgrad.scipy.stats", "fgrad.scipy.stats"),
    ("fgrad.scipy.linalg", "fgrad.scipy.linalg", "fgrad.scipy.linalg"),
    ("fgrad.scipy.signal", "fgrad.scipy.signal", "fgrad.scipy.signal"),
    ("fgrad.scipy.integrate", "fgrad.scipy.integrate", "fgrad.scipy.integrate"),
    ("fgrad.tree_util", "fgrad.tree_util", "fgrad.tree_util"),
    ("fgrad.test_util", "fgrad.test_util", "fgrad.test_util"),
]

# Modules that are not the API you differentiate with, but that the README and the guides send
# readers to: an error to catch, the detection and colouring the sparse page describes, the
# script behind the conventions table. Each gets its docstring and the names pointed to.
GUIDE_MODULES = [
    ("fgrad.protocols", ["DispatchError"]),
    ("fgrad.sparsity", ["SparsityLevel", "dense_reasons"]),
    ("fgrad.coloring", None),  # None: every name of its __all__
    ("fgrad.accumulation", None),
    ("fgrad.conventions", []),
]

MIRRORS = {m.module: m for m in coverage.MIRRORS}


def _write(path: pathlib.Path, text: str) -> None:
    """Write only what changed, so Sphinx rebuilds only pages whose source changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _rst(lines: list[str]) -> str:
    return "```{eval-rst}\n" + "\n".join(lines) + "\n```\n"


def _entry(module, qualified: str, name: str) -> list[str]:
    """The reST directive that documents one public name."""
    obj = getattr(module, name)
    ours = (getattr(obj, "__module__", None) or "").startswith("fgrad")
    if inspect.isclass(obj) and ours:
        return [f".. autoclass:: {qualified}", "   :members:", ""]
    numpys = (getattr(obj, "__module__", None) or "").startswith("numpy")
    if callable(obj) and (ours or (inspect.isfunction(obj) and not numpys)):
        return [f".. autofunction:: {qualified}", ""]
    # NumPy's own objects (constants, types, constructors of constant arrays) and fgrad's
    # non-function objects (r_, c_): described here, NumPy's prose is not copied.
    if ours:
        text = inspect.getdoc(type(obj)) or ""
    else:
        text = (
            f"NumPy's own `numpy.{name}`, re-exported unchanged: a constant, a type, a query of "
            "dtypes or shapes, or a constructor of constant arrays."
        )
    signature = coverage.signature_text(obj) if callable(obj) else ""
    kind = "function" if callable(obj) and signature else "data"
    module_name, _, short = qualified.rpartition(".")
    lines = [f".. py:{kind}:: {short}{signature}", f"   :module: {module_name}", ""]
    lines += ["   " + line for line in text.splitlines()] + [""]
    lines += ["   " + line for line in _status_lines(module.__name__, name, obj)] + [""]
    return lines


def _kind_text(kind: str, obj) -> str:
    """What the kind says, but for the ufuncs kept bare for speed (sin, cos, tanh, exp, log,
    negative), whose signature is `(x)`: saying they take NumPy's keywords would be wrong."""
    params = coverage.signature_text(obj)
    if kind == "ufunc" and params and "out" not in params and "**" not in params:
        return "an elementwise ufunc without NumPy's ufunc keywords: a bare primitive, for speed"
    return KIND_TEXT[kind]


def _status_lines(module_name: str, name: str, obj) -> list[str]:
    """What the code knows about a mirror's name: derivative status, conventions, original."""
    mirror = MIRRORS.get(module_name) or MIRRORS.get(module_name.rsplit(".", 1)[0])
    if mirror is None:
        return []
    status, why = coverage.status_of(obj, module_name, name)
    lines = []
    if status == coverage.DIFFERENTIABLE:
        lines.append(
            "**Derivative:** differentiable in both modes (`grad`, `jvp`, `vmap`, `jet`, ...), "
            "to any order."
        )
    else:
        reason = {"declared": "declared without a derivative", "NumPy's own": "NumPy's own"}
        lines.append(
            "**Derivative:** none; the result is a constant at every level "
            f"({reason.get(why, why)})."
        )
    kind = kind_of(obj)
    if kind is not None and module_name.startswith("fgrad.numpy"):
        lines.append("")
        lines.append(f"**Kind:** {kind} ({_kind_text(kind, obj)}).")
    rows = coverage.conventions_of(name)
    if rows:
        lines.append("")
        lines.append(
            "**Conventions** (see :doc:`/guarantees`): "
            + "; ".join(f"``{what}``" + (f": {why}" if why else "") for what, why in rows)
            + "."
        )
    if mirror.module == "fgrad.scipy.stats":
        dist = module_name.rsplit(".", 1)[1]
        reference = f"scipy.stats.{dist}"
        shown = f"{reference}.{name}"
    else:
        reference = shown = f"{mirror.original}.{name}"
    theirs = getattr(importlib.import_module(mirror.original), name, None)
    # NumPy documents its functions on pages of their own, its types and constants not
    has_page = callable(theirs) and not isinstance(theirs, type)
    if has_page or mirror.module == "fgrad.scipy.stats":
        lines.append("")
        lines.append(
            f"**Original:** `{shown} <{coverage.reference_url(reference)}>`_, "
            "whose signature and values this follows."
        )
    return lines


def _mirror_page(page: str, module_name: str, title: str) -> str:
    module = importlib.import_module(module_name)
    parts = [f"# {title}\n", _rst([f".. automodule:: {module_name}", "   :no-members:", ""])]
    mirror = MIRRORS.get(module_name)
    if mirror is not None:
        parts.append("## Which names are differentiable\n")
        parts.append(
            "Generated from the code at every build: each public name of "
            f"`{mirror.original}` and of `{module_name}`, with what fgrad does with it.\n"
        )
        summary, table = coverage.markdown(mirror, page).split("\n\n", 1)
        parts.append(summary + "\n")
        parts.append(":::{table}\n:class: fgrad-coverage\n\n" + table + ":::\n")
    if module_name == "fgrad.scipy.stats":
        for dist in module.__all__:
            sub = getattr(module, dist)
            parts.append(f"## {dist}\n")
            directives = [f".. automodule:: {sub.__name__}", "   :no-members:", ""]
            for name in sub.__all__:
                directives += _entry(sub, f"{sub.__name__}.{name}", name)
            parts.append(_rst(directives))
        return "\n".join(parts)
    names = [
        n
        for n in module.__all__
        if not isinstance(getattr(module, n), types.ModuleType) and not n.startswith("_")
    ]
    if module_name == "fgrad":
        groups = [(g, [n for n in members if n in names]) for g, members in TOP_LEVEL_GROUPS]
        grouped = {n for _, members in groups for n in members}
        rest = [n for n in names if n not in grouped]
        if rest:
            groups.append(("More", rest))
    else:
        groups = [("Functions" if mirror else "Names", names)]
    for heading, members in groups:
        parts.append(f"## {heading}\n")
        directives = []
        for name in members:
            directives += _entry(module, f"{module_name}.{name}", name)
        if "make_graph" in members:  # what make_graph returns, reachable only through it
            directives += [".. autoclass:: fgrad.graph.Graph", "   :members:", ""]
        parts.append(_rst(directives))
    return "\n".join(parts)


def _guide_modules_page() -> str:
    parts = [
        "# Modules the guides refer to\n",
        "Not the functions you differentiate with: what the README and the guides point to, "
        "an error to catch, and the machinery the page on sparse derivatives describes.\n",
    ]
    for module_name, names in GUIDE_MODULES:
        module = importlib.import_module(module_name)
        directives = [f".. automodule:: {module_name}", "   :no-members:", ""]
        for name in module.__all__ if names is None else names:
            directives += _entry(module, f"{module_name}.{name}", name)
        parts += [f"## {module_name}\n", _rst(directives)]
    return "\n".join(parts)


def api_pages() -> dict[str, str]:
    """The generated API pages: file name -> text."""
    pages = {f"{page}.md": _mirror_page(page, module, title) for page, module, title in PAGES}
    pages["guide_modules.md"] = _guide_modules_page()
    return pages


def write_api_pages() -> None:
    for name, text in api_pages().items():
        _write(DOCS / "api" / "generated" / name, text)


def write_conventions() -> None:
    from fgrad import conventions

    _write(DOCS / "_generated" / "conventions.md", conventions.table() + "\n")


def write_graphs() -> None:
    """The pictures of the K transform's page: f, grad(f) and grad(grad(f)) as make_graph
    draws them, with their sizes."""
    from graph_example import f

    import fgrad

    sizes = []
    for label, fn in [
        ("f", f),
        ("grad_f", fgrad.grad(f)),
        ("grad_grad_f", fgrad.grad(fgrad.grad(f))),
    ]:
        graph = fgrad.make_graph(fn)(1.0)
        _write(DOCS / "_generated" / f"{label}.svg", graph.to_svg())
        _write(DOCS / "_generated" / f"{label}.txt", str(graph) + "\n")
        sizes.append(f"| `{label.replace('_f', '(f)').replace('_', '(')}` | {len(graph)} |")
    _write(
        DOCS / "_generated" / "graph_sizes.md",
        "| function | primitive applications |\n|---|---|\n" + "\n".join(sizes) + "\n",
    )


def copy_notebooks() -> None:
    """notebooks/*.ipynb into docs/notebooks/, where the notebook pages' glob finds them."""
    target = DOCS / "notebooks"
    target.mkdir(exist_ok=True)
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        copy = target / notebook.name
        if not copy.exists() or copy.read_bytes() != notebook.read_bytes():
            shutil.copyfile(notebook, copy)


# A page includes a section of README.md with a line `<!-- readme: Section title -->`: the
# README stays the one place its text is written.
_README_MARKER = re.compile(r"^<!-- readme: (.+?) -->$", re.M)
_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")


def readme_section(title: str) -> str:
    """The section of README.md under `## title`, its links fitted to the site: notebooks
    stay links (they are pages here), links into the repository become their text."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {title}\n") + len(f"\n## {title}\n")
    end = text.find("\n## ", start)
    section = text[start : end if end != -1 else len(text)]

    def fit(match):
        label, target = match.groups()
        if target.startswith(("http://", "https://", "notebooks/", "#")):
            return match.group(0)
        return label

    section = section.replace("the conventions table below", "the conventions table")
    return _LINK.sub(fit, section).strip() + "\n"


def on_source_read(app, docname, source) -> None:
    source[0] = _README_MARKER.sub(lambda m: readme_section(m.group(1)), source[0])


def pages_with_readme_sections(app, env, added, changed, removed) -> list[str]:
    """Sphinx cannot see that README.md changed: read the pages that include it every time."""
    return [
        str(path.relative_to(DOCS).with_suffix(""))
        for path in DOCS.glob("*.md")
        if _README_MARKER.search(path.read_text())
    ]


def on_builder_inited(app) -> None:
    write_api_pages()
    write_conventions()
    write_graphs()
    copy_notebooks()


_CODE = re.compile(r"(``.*?``|`[^`]*`)")


def _escape_bars(line: str) -> str:
    """fgrad's docstrings write |x| for an absolute value, which reST reads as a substitution:
    escape bars in prose (outside `code` and doctest lines)."""
    if "|" not in line or line.lstrip().startswith((">>>", "...")):
        return line
    parts = _CODE.split(line)
    return "".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def on_process_docstring(app, what, name, obj, options, lines) -> None:
    """Make fgrad's plain-text docstrings safe reST, and complete a mirror's entry with what
    the code knows about it."""
    if not name.startswith("fgrad"):
        return
    in_example = False
    for i, line in enumerate(lines):
        in_example = line.lstrip().startswith(">>>") or (in_example and line.strip() != "")
        if not in_example:
            lines[i] = _escape_bars(line)
    module_name, _, short = name.rpartition(".")
    if not (module_name.startswith("fgrad.numpy") or module_name.startswith("fgrad.scipy")):
        return
    if what not in ("function", "class", "data"):
        return
    if type(obj).__module__ == "fgrad.core":
        # a Primitive object's docstring is its class's, not the name's
        lines[:] = []
    lines.append("")
    lines.extend(_status_lines(module_name, short, obj))
    if not any(line.lstrip().startswith(">>>") for line in lines):
        example = fgrad_examples.EXAMPLES.get(f"{module_name}.{short}")
        if example:
            lines += ["", ".. rubric:: Example", ""] + example.splitlines()
    lines.append("")


def on_process_signature(app, what, name, obj, options, signature, return_annotation):
    """A Primitive object (fgrad.numpy.add, matmul, ...) takes `*args, **params`: show the
    signature of the NumPy function it mirrors, which it follows."""
    if type(obj).__module__ != "fgrad.core" or not name.startswith("fgrad.numpy."):
        return None
    original = getattr(importlib.import_module("numpy"), name.rpartition(".")[2], None)
    shown = coverage.signature_text(original) if original is not None else ""
    return (shown, return_annotation) if shown else None


def setup(app):
    app.connect("builder-inited", on_builder_inited)
    app.connect("autodoc-process-docstring", on_process_docstring)
    app.connect("source-read", on_source_read)
    app.connect("env-get-outdated", pages_with_readme_sections)
    app.connect("autodoc-process-signature", on_process_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
