"""Sphinx configuration of the mdsd_fast documentation.

Build (offline: no intersphinx, nothing fetched): ``python -m sphinx -W --keep-going -b html docs docs/_build/html``
with the ``docs`` extra installed. The API pages import the installed package (or ``PYTHONPATH=python`` with a built
core); the gallery runs ``examples/plot_*.py`` at build time.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import mdsd_fast

HERE = Path(__file__).resolve().parent

project = "mdsd_fast"
author = "mdsd_fast developers"
copyright = "mdsd_fast developers"
release = mdsd_fast.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]  # autosummary/class.rst: members inline, no second __init__
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/sg_execution_times.rst"]

# MyST: the pages stay plain Markdown. Heading anchors let pages link to a section (page.md#4-findings).
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 4

# The docstrings follow the numpy convention (ruff's pydocstyle "numpy").
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autosummary_generate = True
# Many parameter entries are one line, "name : description"; numpy-style parsing reads the description
# as the type, and Sphinx then tries each of its words as a class name. A word that names two
# attributes (``threads``: ReportConfig.threads and DraftTree.threads) is an ambiguous-reference
# warning, not an error in the docs; the pages render the same either way.
suppress_warnings = ["ref.python"]
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": False}


sphinx_gallery_conf = {
    "examples_dirs": [os.path.relpath(HERE.parent / "examples", HERE)],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",  # every plot_*.py runs at build time
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "write_computation_times": False,
}

html_theme = "furo"
html_title = "mdsd_fast"
html_static_path: list[str] = []
html_theme_options = {"navigation_with_keys": True}


def _drop_builtin_type_docs(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant without a doc comment of its own gets its type's docstring (dict's, tuple's) from
    autodoc; that text describes the builtin, not the constant, and is not valid reST: drop it."""
    if what not in ("data", "attribute") or not lines:
        return
    type_doc = inspect.getdoc(type(obj))
    if type_doc and lines[0].strip() == type_doc.splitlines()[0].strip():
        lines.clear()


def setup(app: Any) -> None:
    app.connect("autodoc-process-docstring", _drop_builtin_type_docs)
