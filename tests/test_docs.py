"""The documentation: its API reference, its benchmark tables and its pages.

``make docs`` builds the site with Sphinx (warnings are errors); Sphinx is not
among the test dependencies, so what can be checked without it is checked here:
the API reference names every public name, the tables pasted from
``benchmarks/results/`` equal their JSON, every page is in the table of
contents, the README stays a front page whose pointers lead somewhere, and the
build fetches nothing from the network.  The pages' Python blocks run in
``tests/test_readme.py``.
"""

import importlib.util
import re
import runpy
from pathlib import Path

import pytest

import dmargin
import dmargin.datasets
import dmargin.plotting
import dmargin.progress
import dmargin.skrebate  # noqa: F401  (a submodule dmargin does not import)

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


def _report():
    spec = importlib.util.spec_from_file_location("docs_benchmarks_report",
                                                  REPO / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # puts benchmarks/ on sys.path, as every script does
    return module


def _api_entries():
    """The names listed under the autosummary directives of docs/api.rst."""
    text = (DOCS / "api.rst").read_text()
    entries = set()
    for block in re.findall(r"\.\. autosummary::\n((?:[ ]{3}.*\n|\n)+)", text):
        entries.update(line.strip() for line in block.splitlines()
                       if line.strip() and not line.strip().startswith(":"))
    return entries


def test_the_api_reference_lists_every_public_name():
    entries = _api_entries()
    public = set(dmargin.__all__)
    public |= {f"progress.{name}" for name in dmargin.progress.__all__}
    public |= {f"plotting.{name}" for name in dir(dmargin.plotting)
               if name.startswith("plot_")}
    public.add("datasets.load_dataset")
    public |= {f"skrebate.{name}" for name in dmargin.skrebate.__all__}
    assert public - entries == set(), "add these to docs/api.rst"
    for entry in entries:  # and nothing that does not exist
        obj = dmargin
        for part in entry.split("."):
            obj = getattr(obj, part)


def test_the_docs_tables_are_their_benchmark_results():
    report = _report()
    referenced = []
    for page in PAGES:
        text = page.read_text()
        referenced += report.tables(text)
        assert report.fill(text) == text, (f"{page.relative_to(REPO)}: a table differs from "
                                           "benchmarks/results/ (paste its markdown)")
    assert ("sizes", "default") in referenced
    assert ("stir", "battery-check") in referenced


def test_every_page_is_in_the_table_of_contents():
    index = (DOCS / "index.rst").read_text()
    listed = set(re.findall(r"^[ ]{3}(\S+)$", index, re.M))
    pages = {p.relative_to(DOCS).with_suffix("").as_posix() for p in PAGES}
    assert pages - listed == set(), "add these pages to a toctree of docs/index.rst"
    assert "api" in listed


def test_the_readme_is_a_front_page():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200, "the README is a front page: move material to docs/"
    assert "`make test` is the test command; `.ci/run` calls it" in text
    assert "make docs" in text and "benchmarks/README.md" in text


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_the_files_a_front_page_names_exist(name):
    text = (REPO / name).read_text()
    paths = set(re.findall(r"`((?:docs|benchmarks|deploy|examples|tests)/[\w./-]+\.\w+)`", text))
    paths |= set(re.findall(r"\]\(((?:docs|benchmarks|deploy)/[\w./-]+)\)", text))
    assert paths, name
    missing = sorted(p for p in paths if not (REPO / p).exists())
    assert not missing, f"{name} names files that do not exist: {missing}"


def test_the_build_fetches_nothing():
    # The machines that build the docs reach the package index and nothing else:
    # no intersphinx inventories, no remote images.
    conf = runpy.run_path(str(DOCS / "conf.py"))
    assert "sphinx.ext.intersphinx" not in conf["extensions"]
    assert not conf.get("intersphinx_mapping")


# The examples gallery: examples/plot_*.py run and draw their figures in the docs build
# (sphinx-gallery, ``make docs``: an example that raises fails the build).  Here, without
# Sphinx and in well under a second, each is checked for what would break it there.
EXAMPLES = sorted((REPO / "examples").glob("plot_*.py"))


def test_the_gallery_is_built_from_the_examples():
    conf = runpy.run_path(str(DOCS / "conf.py"))
    gallery = conf["sphinx_gallery_conf"]
    assert "sphinx_gallery.gen_gallery" in conf["extensions"]
    assert (DOCS / gallery["examples_dirs"]).resolve() == REPO / "examples"
    assert gallery["gallery_dirs"] == "auto_examples"
    assert re.search(r"^[ ]{3}auto_examples/index$", (DOCS / "index.rst").read_text(), re.M)
    assert "docs/auto_examples/" in (REPO / ".gitignore").read_text().split()  # a build product
    assert (REPO / "examples" / "GALLERY_HEADER.rst").exists()
    assert 4 <= len(EXAMPLES) <= 6


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_an_example_imports_what_exists_and_uses_bundled_data(path):
    import ast
    import importlib

    source = path.read_text()
    tree = ast.parse(source, filename=str(path))
    # sphinx-gallery's header: a docstring that opens with a title underlined by "="
    title, underline, *_ = ast.get_docstring(tree).splitlines()
    assert title and set(underline) == {"="} and len(underline) >= len(title), path.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{path.name}: {node.module}.{alias.name}"
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "dmargin"):
            assert hasattr(dmargin, node.attr), f"{path.name}: dmargin.{node.attr}"
    # data from the package only: nothing read from a path, nothing fetched
    assert "load_dataset(" in source
    assert not re.search(r"open\(|read_csv|read_parquet|fetch_|urlopen|https?://|\.\./", source)


def test_the_gallery_fetches_nothing():
    conf = runpy.run_path(str(DOCS / "conf.py"))
    gallery = conf["sphinx_gallery_conf"]
    assert not gallery.get("binder") and not gallery.get("jupyterlite")
    assert not gallery.get("reference_url")  # remote documentation to link code to
