"""The documentation: its API reference, its benchmark tables and its pages.

``make docs`` builds the site with Sphinx (warnings are errors); Sphinx is not
among the test dependencies, so what can be checked without it is checked here:
the API reference names every public name, the tables pasted from
``benchmarks/results/`` equal their JSON, every page is in the table of
contents, the README stays a front page whose pointers lead somewhere, and the
build fetches nothing from the network.  What a reader meets is checked too: no
docstring, comment or page cites a file outside the repository, none sells the
p-values as per-feature evidence, every API summary is a whole sentence, every
estimator parameter is described, wide tables scroll, no page shows an empty
sidebar, the front page opens with an example and a figure, and no prose line of a
page runs over 200 characters.  The pages' Python blocks run in
``tests/test_readme.py``.
"""

import importlib.util
import inspect
import re
import runpy
import textwrap
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
    spec = importlib.util.spec_from_file_location(
        "docs_benchmarks_report", REPO / "benchmarks" / "report.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # puts benchmarks/ on sys.path, as every script does
    return module


def _api_entries():
    """The names listed under the autosummary directives of docs/api.rst, with the
    registry's estimators put in by docs/conf.py."""
    text = runpy.run_path(str(DOCS / "conf.py"))["expand_registry"]((DOCS / "api.rst").read_text())
    entries = set()
    for block in re.findall(r"\.\. autosummary::\n((?:[ ]{3}.*\n|\n)+)", text):
        entries.update(
            line.strip()
            for line in block.splitlines()
            if line.strip() and not line.strip().startswith(":")
        )
    return entries


def test_the_api_reference_lists_every_public_name():
    entries = _api_entries()
    public = set(dmargin.__all__)
    public |= {f"progress.{name}" for name in dmargin.progress.__all__}
    public |= {f"plotting.{name}" for name in dir(dmargin.plotting) if name.startswith("plot_")}
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
        assert report.fill(text) == text, (
            f"{page.relative_to(REPO)}: a table differs from "
            "benchmarks/results/ (paste its markdown)"
        )
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
    assert len(text.splitlines()) <= 220, "the README is a front page: move material to docs/"
    assert "`make test` is the test command; `.ci/run` calls it" in text
    assert "make docs" in text and "benchmarks/README.md" in text


#: The longest a line of a page's prose may be (MyST joins a paragraph's lines, so a
#: paragraph rewrapped reads the same).
MAX_PROSE_LINE = 200


def prose_lines(text: str) -> list[tuple[int, str]]:
    """``(number, line)`` of every prose line of a Markdown page: fenced code (MyST's
    directives among it), Markdown tables and the tables report.py pastes aside."""
    out, fence, pasted = [], None, False
    for number, line in enumerate(text.splitlines(), 1):
        opened = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            fence = None if opened and opened.group(1).startswith(fence) else fence
        elif opened:
            fence = opened.group(1)
        elif line.startswith(("<!-- table:", "<!-- /table -->")):
            pasted = line.startswith("<!-- table:")
        elif not pasted and not line.lstrip().startswith("|"):
            out.append((number, line))
    return out


@pytest.mark.parametrize(
    "page", [REPO / "README.md", *PAGES], ids=lambda p: p.relative_to(REPO).as_posix()
)
def test_no_prose_line_is_over_200_characters(page):
    long = [
        f"{page.relative_to(REPO)}:{n}: {len(line)} characters"
        for n, line in prose_lines(page.read_text())
        if len(line) > MAX_PROSE_LINE
    ]
    assert not long, "rewrap these paragraphs (the page renders the same):\n" + "\n".join(long)


def test_prose_lines_leave_code_and_tables_aside():
    text = (
        "A paragraph.\n```python\nx = 1  # " + "a" * 300 + "\n```\n| " + "b" * 300 + " |\n"
        "<!-- table: bench -->\n" + "c" * 300 + "\n<!-- /table -->\n" + "d" * 201 + "\n"
    )
    assert [n for n, _ in prose_lines(text)] == [1, 9]
    assert [len(line) for _, line in prose_lines(text)] == [12, 201]


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
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "dmargin"
        ):
            assert hasattr(dmargin, node.attr), f"{path.name}: dmargin.{node.attr}"
    # data from the package only: nothing read from a path, nothing fetched
    assert "load_dataset(" in source
    assert not re.search(r"open\(|read_csv|read_parquet|fetch_|urlopen|https?://|\.\./", source)


def test_the_gallery_fetches_nothing():
    conf = runpy.run_path(str(DOCS / "conf.py"))
    gallery = conf["sphinx_gallery_conf"]
    assert not gallery.get("binder") and not gallery.get("jupyterlite")
    assert not gallery.get("reference_url")  # remote documentation to link code to


# What the reader of the site can open: a docstring, a comment or a page that cites
# a file kept outside the repository (the authors' notes, the papers' text) sends
# the reader nowhere.  The papers are cited by author, year and equation instead.
OUTSIDE = re.compile(
    r"ALGORITHMS\.md|DESIGN\.md|STYLE\.md|papers/|\.\.[/]shared|"
    r"iterative_relief\.txt|immigrate\.txt|ldm_rfe\.txt|sbs_mf_boosting"
)


def _sources():
    files = sorted((REPO / "dmargin").rglob("*.py")) + sorted((REPO / "examples").glob("*.py"))
    files += PAGES + sorted(DOCS.glob("*.rst")) + [DOCS / "conf.py"]
    files += sorted((DOCS / "_templates").rglob("*.rst"))
    files += [REPO / "README.md", REPO / "CONTRIBUTING.md"]
    return files


# The tests' references and the benchmarks are read too (a reference's docstring
# is where a reader checks an equation), all but this file, which holds the
# patterns.  The benchmarks read the data sets the repository does not ship from the
# data folder beside the clone (or DMARGIN_DATA): naming it reads data, it cites nothing.
DATA_FOLDER = re.compile(r"\.\.[/]shared[/]data\b")


def _tests_and_benchmarks():
    files = [p for p in sorted((REPO / "tests").glob("*.py")) if p.name != Path(__file__).name]
    files += sorted((REPO / "benchmarks").glob("*.py")) + [REPO / "benchmarks" / "README.md"]
    return files


def test_no_docstring_comment_or_page_cites_a_file_outside_the_repository():
    places = []
    benchmarks = REPO / "benchmarks"
    for path in _sources() + _tests_and_benchmarks():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            read = DATA_FOLDER.sub("", line) if path.parent == benchmarks else line
            if OUTSIDE.search(read):
                places.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not places, (
        "cite the paper (authors, year, equation) or a page of docs/ "
        "instead of a file outside the repository:\n" + "\n".join(places)
    )


def test_the_pvalues_are_not_sold_as_per_feature_evidence():
    # Both kinds of p-value test the global null (no feature related to the
    # labels); with informative features present, noise features pass q = 0.05
    # far more often than 5 % of the discoveries.  No page or docstring promises
    # per-feature false discovery control.
    claims = re.compile(r"FDR-controlled|features with FDR|\(false discovery rate\)", re.I)
    places = [
        f"{path.relative_to(REPO)}:{number}"
        for path in _sources()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if claims.search(line)
    ]
    assert not places, places
    for name in ["README.md", "docs/pvalues.md"]:
        text = " ".join((REPO / name).read_text().split())
        assert "global null" in text and "not per-feature evidence" in text, name
    for estimator in [dmargin.ReliefF, dmargin.MultiSURF]:
        assert "global null" in " ".join(estimator.__doc__.split()), estimator.__name__


def _public_objects():
    """Every name the API reference lists, and the methods their pages show."""
    objects = {name: getattr(dmargin, name) for name in dmargin.__all__}
    objects |= {f"progress.{n}": getattr(dmargin.progress, n) for n in dmargin.progress.__all__}
    objects |= {
        f"plotting.{n}": getattr(dmargin.plotting, n)
        for n in dir(dmargin.plotting)
        if n.startswith("plot_")
    }
    objects |= {f"skrebate.{n}": getattr(dmargin.skrebate, n) for n in dmargin.skrebate.__all__}
    objects["datasets.load_dataset"] = dmargin.datasets.load_dataset
    for name, obj in list(objects.items()):
        if isinstance(obj, type):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member) and member.__doc__:
                    objects[f"{name}.{attr}"] = member
    return objects


#: What autosummary keeps when a summary's first period ends an abbreviation of
#: these (Sphinx's own list); any other "X. " ends the sentence there.
_KNOWN = ("et al.", "e.g.", "i.e.")
_ABBREVIATION = re.compile(
    r"\b(eqs?|equ?|sec|secs|fig|figs|ch|cf|vs|approx|resp|ref|no|"
    r"al|pp?|vol|ed)\.$",
    re.I,
)


def _first_sentence(doc):
    """The summary autosummary shows: the first paragraph up to its first period."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentences = re.split(r"\.\s+", paragraph)
    for i in range(len(sentences)):
        summary = ". ".join(sentences[: i + 1]).rstrip(".") + "."
        if not summary.endswith(_KNOWN):
            return summary
    return paragraph


def test_every_api_summary_is_a_whole_sentence():
    # autosummary cuts a summary at its first ". ": "(Sun, 2007, Sec." and
    # "(iterative_relief.txt eq." were what the API tables showed.
    cut = []
    for name, obj in _public_objects().items():
        doc = inspect.getdoc(obj)
        if not doc:
            continue
        summary = _first_sentence(doc)
        balanced = all(summary.count(a) == summary.count(b) for a, b in ["()", "[]", "{}"])
        if not balanced or _ABBREVIATION.search(summary) or summary.count("``") % 2:
            cut.append(f"{name}: {summary!r}")
    assert not cut, (
        "the first sentence of these docstrings is cut at an abbreviation "
        "(write 'equation 6', 'section 5'):\n" + "\n".join(cut)
    )


def _parameters_section(doc):
    """``{name: description}`` of a numpydoc Parameters section."""
    lines = doc.splitlines()
    try:
        start = next(
            i
            for i, line in enumerate(lines[:-1])
            if line.strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"}
        )
    except StopIteration:
        return {}
    entries, current = {}, None
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}:
            break  # the next section
        if line and not line[0].isspace():
            names = line.split(" : ")[0]
            current = [n.strip().lstrip("*") for n in names.split(",")]
            for n in current:
                entries[n] = ""
        elif current and line.strip():
            for n in current:
                entries[n] += line.strip() + " "
    return entries


def test_every_estimator_parameter_is_documented():
    from sklearn.base import BaseEstimator

    undocumented = []
    for name in dmargin.__all__:
        cls = getattr(dmargin, name)
        if not (isinstance(cls, type) and issubclass(cls, BaseEstimator)):
            continue
        described = _parameters_section(inspect.getdoc(cls))
        for parameter in inspect.signature(cls.__init__).parameters:
            if parameter != "self" and not described.get(parameter, "").strip():
                undocumented.append(f"{name}({parameter})")
    # dmargin.skrebate's classes take skrebate's parameters, described once in the
    # module's docstring (or their own).
    for name in dmargin.skrebate.__all__:
        cls = getattr(dmargin.skrebate, name)
        text = (dmargin.skrebate.__doc__ or "") + (cls.__doc__ or "")
        for parameter in inspect.signature(cls.__init__).parameters:
            if parameter != "self" and f"``{parameter}``" not in text:
                undocumented.append(f"skrebate.{name}({parameter})")
    assert not undocumented, (
        "describe these parameters in the class docstring's "
        "Parameters section:\n" + "\n".join(undocumented)
    )


def test_wide_tables_scroll_instead_of_being_clipped():
    # The methods table (a column of full signatures) ran past the article's right
    # edge at 1,920 px: the site's stylesheet lets a table scroll in its own box
    # and wraps long code in its cells.
    conf = runpy.run_path(str(DOCS / "conf.py"))
    assert "_static" in conf["html_static_path"]
    css_files = conf["html_css_files"]
    assert css_files and all((DOCS / "_static" / css).exists() for css in css_files)
    css = " ".join((DOCS / "_static" / css_files[0]).read_text().split())
    assert "overflow-x: auto" in css and "table" in css


def test_a_page_without_sub_pages_has_no_empty_section_navigation():
    # pydata-sphinx-theme's primary sidebar lists a page's sub-pages; a user-guide
    # page has none, so its "Section Navigation" was an empty box on every page.
    conf = runpy.run_path(str(DOCS / "conf.py"))
    sidebars = conf["html_sidebars"]
    index = (DOCS / "index.rst").read_text()
    for page in PAGES:
        docname = page.relative_to(DOCS).with_suffix("").as_posix()
        if "toctree" not in page.read_text():
            assert sidebars.get(docname) == [], docname
    assert "api" not in sidebars  # the API reference has its generated pages
    assert "toctree" in index


def _front_page_blocks():
    text = (DOCS / "index.rst").read_text()
    return [
        textwrap.dedent(block)
        for block in re.findall(r"^\.\. code-block:: python\n\n((?:[ ]{3,}.*\n|\n)+)", text, re.M)
    ]


def test_the_front_page_shows_an_example_and_a_figure():
    text = (DOCS / "index.rst").read_text()
    assert _front_page_blocks(), "docs/index.rst: a first example"
    images = re.findall(r"^\.\. (?:image|figure):: (\S+)", text, re.M)
    assert images, "docs/index.rst: a figure"
    gallery = {p.stem for p in EXAMPLES}
    for image in images:
        # a figure the gallery draws at each build (docs/auto_examples/, not
        # committed) or a file of docs/
        drawn = re.fullmatch(r"auto_examples/images/sphx_glr_(plot_\w+?)_\d{3}\.png", image)
        assert (drawn and drawn[1] in gallery) or (DOCS / image).exists(), image


@pytest.mark.slow
def test_the_front_page_example_runs_as_pasted(tmp_path):
    import subprocess
    import sys

    blocks = _front_page_blocks()
    assert blocks, "docs/index.rst: a first example"
    for block in blocks:
        script = tmp_path / "block.py"
        script.write_text(block)
        env = {
            "MPLBACKEND": "Agg",
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "OMP_NUM_THREADS": "1",
        }
        run = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert run.returncode == 0, f"docs/index.rst:\n{block}\n{run.stderr[-3000:]}"


def test_every_table_row_has_its_header_cells():
    # A "|" inside a code span of a Markdown table ends the cell there ("tanh(2
    # |d - t| / s)" split the SWRF row of docs/methods.md): write abs() or "\|".
    broken = []
    for page in PAGES + [REPO / "README.md"]:
        lines = page.read_text().splitlines()
        header = None
        for number, line in enumerate(lines, 1):
            if not line.startswith("|"):
                header = None
                continue
            cells = len(re.findall(r"(?<!\\)\|", line))
            if header is None:
                header = cells
            elif cells != header:
                broken.append(f"{page.relative_to(REPO)}:{number}")
    assert not broken, broken


_PROBE = """<script>window.addEventListener("load", function () {
  var scrolled = [], cut = 0;
  document.querySelectorAll(".bd-article table").forEach(function (table) {
    var box = table.parentElement;
    if (box.scrollWidth > box.clientWidth) scrolled.push(box.scrollWidth - box.clientWidth);
  });
  document.querySelectorAll(".bd-article td, .bd-article th").forEach(function (cell) {
    cut = Math.max(cut, cell.scrollWidth - cell.clientWidth);
  });
  var nav = document.querySelector("nav.bd-docs-nav .bd-toc-item");
  document.body.setAttribute("data-probe", JSON.stringify({
    scrolled: scrolled, cut: cut, empty_nav: nav !== null && nav.children.length === 0}));
});</script></body>"""


@pytest.mark.slow
def test_the_built_pages_in_a_browser_at_1920_px(tmp_path):
    # What a reader sees, where a browser and a build are at hand (after
    # ``make docs``; CI builds the docs after the tests, so there this skips): at
    # 1,920 px no table needs a horizontal scroll or cuts a cell, and no page shows
    # an empty "Section Navigation".
    import json
    import shutil
    import subprocess

    html = DOCS / "_build" / "html"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None or not (html / "methods.html").exists():
        pytest.skip("needs chromium and a built site (make docs)")
    pages = [html / (p.relative_to(DOCS).with_suffix(".html")) for p in PAGES]
    problems = []
    for page in [*pages, html / "api.html"]:
        probe = page.with_name(f"_probe_{page.name}")  # beside it: the same relative links
        probe.write_text(page.read_text().replace("</body>", _PROBE))
        try:
            run = subprocess.run(
                [
                    browser,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--window-size=1920,1080",
                    "--virtual-time-budget=5000",
                    f"--user-data-dir={tmp_path}",
                    "--dump-dom",
                    probe.as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            probe.unlink()
        found = re.search(r'data-probe="([^"]*)"', run.stdout)
        assert found, f"{page.name}: the browser returned no measurement\n{run.stderr[-2000:]}"
        seen = json.loads(found[1].replace("&quot;", '"'))
        if seen["scrolled"] or seen["cut"] > 1 or seen["empty_nav"]:
            problems.append(f"{page.relative_to(html)}: {seen}")
    assert not problems, problems
