"""Sphinx configuration of dmargin's documentation (``make docs``)."""

import ast
import re
from pathlib import Path

import dmargin
from dmargin._registry import ESTIMATORS, SECTIONS, example

project = "dmargin"
copyright = "the dmargin developers"
author = "the dmargin developers"
version = release = dmargin.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
# No intersphinx: the builds run without network access beyond the package index,
# so no remote inventory can be fetched.

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
#: The registry's estimators for autosummary to generate pages of (see ``write_registry_list``).
REGISTRY_LIST = "generated/registry_estimators.rst"
exclude_patterns = ["_build", REGISTRY_LIST]
templates_path = ["_templates"]

# The API reference: one generated page per public name (docs/api.rst); the estimators'
# lists are the registry's (``fill_api_page``).
autosummary_generate = ["api.rst", REGISTRY_LIST]
autodoc_typehints = "none"  # the numpydoc sections give the types
# A class page documents its methods, those of dmargin's base classes included
# (``skip_scikit_learn_methods`` below leaves out scikit-learn's); numpydoc's own
# member tables would list them a second time.
autodoc_default_options = {"members": True, "inherited-members": True}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False  # its aliases link into numpy's and Python's inventories

# The examples gallery: every ``examples/plot_*.py`` runs at each build and its
# figures are drawn into ``docs/auto_examples/`` (a build product, git-ignored).
# The scripts use the datasets bundled with the package only; nothing here fetches
# anything (no binder, no JupyterLite, no remote links). An example that fails
# fails the build. No execution-times page: it loads scripts from CDNs, and each
# example's page states its own running time.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "write_computation_times": False,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "binder": {},
    "jupyterlite": {},
    "reset_modules": ("matplotlib",),
    "show_memory": False,
}

# The user guide is Markdown (MyST): tables and fenced code as in the README, and
# the ``<!-- not run: REASON -->`` markers that tests/test_readme.py reads.
myst_heading_anchors = 3
highlight_language = "none"  # a fenced block without a language is plain text

html_theme = "pydata_sphinx_theme"
html_title = f"dmargin {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
# The wide tables of the methods and benchmark pages: the article takes the page's
# width and a table wider still scrolls in its own box (docs/_static/dmargin.css).
html_static_path = ["_static"]
html_css_files = ["dmargin.css"]


def _pages_without_sub_pages():
    """The Markdown pages (the user guide, the contributor pages): none has a toctree."""
    here = Path(__file__).resolve().parent
    return sorted(
        page.relative_to(here).with_suffix("").as_posix()
        for page in here.rglob("*.md")
        if "_build" not in page.parts and "toctree" not in page.read_text()
    )


# The theme's primary sidebar lists the sub-pages of a page's section ("Section
# Navigation"); a page that has none would show that title over an empty box, so
# such pages have no primary sidebar (the top bar links every page).  The API
# reference and the gallery keep theirs: they have sub-pages.
html_sidebars = {page: [] for page in _pages_without_sub_pages()}


def skip_scikit_learn_methods(app, what, name, obj, skip, options):
    """Leave out the methods scikit-learn gives every estimator.

    A class page documents dmargin's methods, its own and those its dmargin base
    classes give it.  The methods that come from scikit-learn's mixins
    (``get_params``, ``set_output``, ``fit_transform``, ``score``, ...) and the
    metadata-routing methods it generates on every estimator class
    (``set_fit_request``, ...) carry scikit-learn's docstrings, which point into
    its user guide and glossary: pages this site does not hold and, with no
    intersphinx, cannot link to.  scikit-learn documents them.
    """
    if what == "class":
        if name.startswith("set_") and name.endswith("_request"):
            return True
        module = getattr(obj, "__module__", None) or ""
        if module.split(".")[0] == "sklearn":
            return True
    return skip


#: A name that ends in an underscore, as the fitted attributes do.
_FITTED_NAME = re.compile(r"(?<![`\w])([A-Za-z]\w*_)(?![`\w])")
#: A numpydoc field: ``name : type`` in a Parameters, Returns or Attributes section.
_FIELD = re.compile(r"^(\s*[\w*][\w*, ]* : )(.+)$")


def literal_fitted_names_in_types(app, what, name, obj, options, lines):
    """Write the fitted attributes named in a field's type as code.

    A type such as ``ndarray of shape (n_features_in_,)`` is reStructuredText, in
    which ``n_features_in_`` is a reference to a link target (an error: there is
    none).  scikit-learn writes such names between backticks in its docstrings;
    this hook does the same for dmargin's while they are written without them.  It
    changes the type of a ``name : type`` line only, and only names ending in ``_``.
    """
    for i, line in enumerate(lines):
        field = _FIELD.match(line)
        if field:
            lines[i] = field[1] + _FITTED_NAME.sub(r"``\1``", field[2])


# -- The API page's estimators, from the registry ----------------------------------------
#
# ``docs/api.rst`` names no estimator: ``.. dmargin-estimators:: SECTION`` stands for the
# registry's estimators of that section (``dmargin/_registry.py``) and
# ``.. dmargin-cost-table::`` for their costs, so that an estimator added to the registry
# is documented without an edit here or there.

_ESTIMATORS_HERE = re.compile(r"^\.\. dmargin-estimators:: (\w+)[ \t]*$", re.MULTILINE)
_COST_TABLE_HERE = re.compile(r"^\.\. dmargin-cost-table::[ \t]*$", re.MULTILINE)
#: The size the cost table is computed at.
COST_TABLE_SIZE = (100_000, 50)


def estimator_list(section, toctree="generated/"):
    """An autosummary of the registry's estimators of ``section`` (a key of ``SECTIONS``)."""
    if section not in SECTIONS:
        raise ValueError(f"docs/api.rst: no section {section!r}; the registry has {list(SECTIONS)}")
    names = [entry.name for entry in ESTIMATORS if entry.section == section]
    lines = [".. autosummary::", f"   :toctree: {toctree}", "   :template: class.rst", ""]
    return "\n".join(lines + [f"   {name}" for name in names]) + "\n"


def cost_table():
    """A table of what ``dmargin.fit_cost`` says of each registered estimator, as the
    registry builds it, at :data:`COST_TABLE_SIZE`."""
    n, a = COST_TABLE_SIZE
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - estimator",
        f"     - ``fit_cost(estimator, {n:_}, {a})``",
    ]
    for entry in ESTIMATORS:
        est = example(entry.name)
        cost = dmargin.fit_cost(est, n, a)
        said = "``None``: no model of its cost" if cost is None else str(cost).replace("*", r"\*")
        lines += [f"   * - ``{est!r}``", f"     - {said}"]
    return "\n".join(lines) + "\n"


def expand_registry(text):
    """``text`` (docs/api.rst) with the registry's lists and cost table in place."""
    text = _ESTIMATORS_HERE.sub(lambda m: estimator_list(m[1]), text)
    return _COST_TABLE_HERE.sub(lambda m: cost_table(), text)


def fill_api_page(app, docname, source):
    if docname == "api":
        source[0] = expand_registry(source[0])


def write_registry_list(app):
    """Write :data:`REGISTRY_LIST` for autosummary: it generates the class pages from the
    files on disk, before any page is read (and so before ``fill_api_page``)."""
    path = Path(app.srcdir) / REGISTRY_LIST
    path.parent.mkdir(parents=True, exist_ok=True)
    lists = [estimator_list(section, toctree=".") for section in SECTIONS]
    path.write_text("\n".join([".. currentmodule:: dmargin\n", *lists]))


#: Where docs/contributing/layout.md takes the package's tree.
_LAYOUT_HERE = re.compile(r"^<!-- dmargin-layout-tree -->[ \t]*$", re.MULTILINE)
PACKAGE = Path(dmargin.__file__).resolve().parent


def module_summary(path):
    """The first sentence of a module's docstring, as plain text."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    sentence = re.match(r"(.+?\.)(?:\s|$)", paragraph)
    text = sentence.group(1) if sentence else paragraph
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", text).replace("``", "")


def layout_tree(folder=PACKAGE, depth=0):
    """``[(indent, name, summary)]`` of the package: its modules, then its subpackages
    (a subpackage's line is its ``__init__.py``'s), each folder's modules indented."""
    rows = []
    for path in sorted(folder.glob("*.py")):
        if not (path.name == "__init__.py" and depth):
            rows.append(("  " * depth, path.name, module_summary(path)))
    for sub in sorted(p for p in folder.iterdir() if (p / "__init__.py").exists()):
        rows.append(("  " * depth, sub.name + "/", module_summary(sub / "__init__.py")))
        rows += layout_tree(sub, depth + 1)
    return rows


def layout_block():
    """The package's tree as a text block, each line the module's own first sentence."""
    rows = layout_tree()
    width = max(len(indent + name) for indent, name, _ in rows) + 2
    lines = [f"  {(indent + name).ljust(width)}{summary}" for indent, name, summary in rows]
    return "```text\ndmargin/\n" + "\n".join(lines) + "\n```\n"


def fill_layout_page(app, docname, source):
    if docname == "contributing/layout":
        source[0] = _LAYOUT_HERE.sub(lambda m: layout_block(), source[0])


def setup(app):
    app.connect("source-read", fill_layout_page)
    # Before autosummary's own handler (priority 500) reads the files.
    app.connect("builder-inited", write_registry_list, priority=400)
    app.connect("source-read", fill_api_page)
    app.connect("autodoc-skip-member", skip_scikit_learn_methods)
    # Before numpydoc's own handler (priority 500), on the docstring as written.
    app.connect("autodoc-process-docstring", literal_fitted_names_in_types, priority=400)
