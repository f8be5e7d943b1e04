"""Every figure the README and the docs quote is its benchmark JSON's.

A measured figure in the prose of ``README.md`` or of a page under ``docs/`` sits in
a ``<!-- figure: NAME -->VALUE<!-- /figure -->`` marker.  NAME is a key of the one
registry of quoted figures, ``benchmarks/figures.py``, which holds its expression
(references into ``benchmarks/results/`` and arithmetic), its format and a line saying
what it is; ``python benchmarks/report.py`` fills the markers from it as it fills the
tables (its docstring has the syntax).  These tests check that every such value is
what report.py would write, that every marker names a registered figure and every
registered figure is quoted, that no marker runs over 80 characters, that no number
with a unit of measurement stands in the prose outside a marker (settings and limits
aside: ``report.NOT_MEASURED``, each with its reason), and -- on altered copies of the
pages and of the registry -- that the checks fail when they should.
"""

import json
import re
from pathlib import Path

import pytest

from tests.test_docs import _report

REPO = Path(__file__).resolve().parents[1]


report = _report()  # benchmarks/report.py, loaded as tests/test_docs.py loads it
PAGES = {report.page_name(page): page for page in report.FIGURE_PAGES}
#: Every page whose markers are filled: the above and benchmarks/README.md.
ALL_PAGES = {report.page_name(page): page for page in report.PAGES}
Figure = report.registry.Figure


# --------------------------------------------------------------------------- #
# The pages as they are
# --------------------------------------------------------------------------- #
def test_the_figure_pages_are_the_readme_and_the_docs():
    assert "README.md" in PAGES and "docs/getting_started.md" in PAGES
    assert "benchmarks/README.md" not in PAGES  # its tables are filled, its prose not checked


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_figure_is_what_report_py_writes(name):
    text = PAGES[name].read_text()
    assert report.fill(text) == text, (
        f"{name}: a figure or table differs from "
        "benchmarks/results/; run python benchmarks/report.py"
    )


def test_the_figures_are_quoted_from_the_json():
    quoted = [ref for page in PAGES.values() for ref in report.figures(page.read_text())]
    assert len(quoted) >= 15
    assert ("first_fit", "default") in quoted and ("surf_speed", "default") in quoted
    for benchmark, variant in set(quoted):
        assert report.load(benchmark, variant)


def test_no_figure_in_the_prose_is_outside_a_marker():
    problems = report.check_prose()
    assert not problems, "\n".join(problems)


def test_every_marker_names_a_figure_and_every_figure_is_quoted():
    problems = report.check_markers()
    assert not problems, "\n".join(problems)
    quoted = {name for page in ALL_PAGES.values() for name in report.figure_names(page.read_text())}
    assert quoted == set(report.registry.FIGURES)
    assert len(quoted) >= 80


@pytest.mark.parametrize("name", sorted(ALL_PAGES))
def test_every_marker_is_a_name_of_at_most_80_characters(name):
    text = ALL_PAGES[name].read_text()
    for code in (report._SKIPPED[0], report._SKIPPED[4]):  # an example in code is no marker
        text = code.sub(report._blank, text)
    markers = [m.group(0) for m in report.FIGURE.finditer(text)]
    assert text.count("<!-- figure:") == len(markers)  # every marker is a named one
    too_long = [marker for marker in markers if len(marker) > report.MAX_MARKER == 80]
    assert not too_long, too_long


def test_every_figure_says_what_it_is():
    assert report.registry_problems() == []
    for name, figure in report.registry.FIGURES.items():
        assert re.fullmatch(r"[a-z0-9_]+\.[a-z0-9_]+", name), name  # family.what_it_is
        assert report.references(figure.expression), name  # it quotes the JSON
        assert figure.description and "{" in figure.format, name


def test_the_exceptions_are_few_and_give_their_reason():
    assert len(report.NOT_MEASURED) <= 8
    for page, phrase, reason in report.NOT_MEASURED:
        assert page in PAGES and phrase and len(reason) > 20
        # each exception holds a number with a unit (else it would not be needed)
        assert report.LOOSE.search(phrase), phrase


# --------------------------------------------------------------------------- #
# The checks fail on altered copies of the pages
# --------------------------------------------------------------------------- #
def test_an_altered_figure_is_caught_and_restored():
    text = PAGES["docs/relief_peers.md"].read_text()
    marker = re.search(
        r"(<!-- figure: surf\.multisurf_over_skrebate -->)(\d+)x(<!-- /figure -->)",
        text,
    )
    assert marker, "the page quotes MultiSURF's ratio to skrebate in a figure marker"
    other = str(int(marker.group(2)) + 7)
    altered = text.replace(marker.group(0), f"{marker.group(1)}{other}x{marker.group(3)}")
    assert altered != text and report.fill(altered) != altered
    assert report.fill(altered) == text  # report.py writes the JSON's value back


def test_a_changed_json_value_is_caught(tmp_path, monkeypatch):
    # The same page against a results file whose value moved: the page is stale.
    text = PAGES["docs/getting_started.md"].read_text()
    doc = report.harness.load_results("first_fit")
    doc["variants"]["default"]["targets"]["first_fit_wall_s"] = 7.4
    monkeypatch.setattr(report.harness, "RESULTS", tmp_path)
    (tmp_path / "first_fit.json").write_text(json.dumps(doc))
    filled = report.fill(text)
    assert filled != text and "-->7 s<!-- /figure -->" in filled


def test_a_figure_without_a_marker_is_caught():
    text = PAGES["docs/getting_started.md"].read_text()
    assert report.loose_figures(text) == []
    unmarked = re.sub(r"<!-- figure: [^>]*-->(.*?)<!-- /figure -->", r"\1", text)
    marked = re.findall(r"<!-- figure: [^>]*-->(.*?)<!-- /figure -->", text)
    assert len(marked) == 2  # the first fit's times, whatever the last run measured
    assert [figure for _, figure in report.loose_figures(unmarked)] == marked
    added = text.replace(
        "## A first fit\n",
        "## A first fit\n\nIt is about 25x faster, 1.80x on 2 workers, "
        "7 s, 30 ms or 0.5 h with 516 MiB (2 GiB, 4.3 GB) at 65 %.\n",
    )
    found = [figure for _, figure in report.loose_figures(added)]
    assert found == ["25x", "1.80x", "7 s", "30 ms", "0.5 h", "516 MiB", "2 GiB", "4.3 GB", "65 %"]


def test_parameters_shapes_and_code_are_not_figures():
    text = """
With k = 10 neighbours, N = 2,000 rows, 10^6 rows and more, 50 x 5,000 or
2,350 x 230,000 SNPs, classes 1:1.5, q = 0.05, 3-10 iterations, a 2-core machine,
uint8 and float64 rows, a tolerance of 1e-10, N^2 A per pass, 4 of 10 features and
`max_iter=100` or `dask.config.set({"dmargin.stall-timeout": "10m"})`,
see [the page](benchmarks/results/2x.md).

```python
print(dmargin.fit_cost(dmargin.IRelief(), 200_000, 41))   # ~13.4 h
```

<!-- table: sizes -->
| N = 1e+06: 7 s (model 6 s) | 95 % |
<!-- /table -->
<!-- a comment with 12 s -->
"""
    assert report.loose_figures(text) == []


def test_an_exception_is_exempt_only_where_it_is_listed():
    text = "Every wait is bounded (default 60 s) -- the stall timeout.\n"
    assert [f for _, f in report.loose_figures(text)] == ["60 s"]
    assert report.loose_figures(text, ["(default 60 s)"]) == []
    assert [f for _, f in report.loose_figures(text, ["(default 90 s)"])] == ["60 s"]


def test_broken_markers_are_caught():
    good = "about <!-- figure: first_fit.wall_s -->2 s<!-- /figure --> here\n"
    assert report.marker_problems(good) == []
    at_line_start = "about\n<!-- figure: first_fit.wall_s -->2 s<!-- /figure --> here\n"
    assert any("starts the line" in p for p in report.marker_problems(at_line_start))
    unclosed = "about <!-- figure: first_fit.wall_s -->2 s here\n"
    assert any("not <!-- figure:" in p for p in report.marker_problems(unclosed))
    shown = "write `<!-- figure: family.what_it_is -->` before the value\n"
    assert report.marker_problems(shown) == []  # in code: an example, not a marker


def test_an_expression_in_a_page_is_refused():
    # The expression lives in benchmarks/figures.py, never in the page.
    inline = (
        "about <!-- figure: first_fit#targets/first_fit_wall_s {:.0f} s -->2 s<!-- /figure -->\n"
    )
    assert report.figure_names(inline) == []
    problems = report.marker_problems(inline)
    assert problems and "NAME a key of FIGURES in benchmarks/figures.py" in problems[0]


def test_a_name_not_in_the_registry_is_caught(tmp_path):
    text = "about <!-- figure: first_fit.wal_s -->2 s<!-- /figure --> here\n"
    assert any("'first_fit.wal_s' is not in benchmarks/figures.py" in p
               for p in report.marker_problems(text))  # fmt: skip
    with pytest.raises(KeyError, match="not in benchmarks/figures.py: add it to FIGURES"):
        report.fill(text)
    page = tmp_path / "page.md"
    page.write_text(text)
    report.harness.REPO, saved = tmp_path, report.harness.REPO
    try:
        assert any("first_fit.wal_s" in p for p in report.check_markers([page]))
    finally:
        report.harness.REPO = saved


def test_a_figure_no_page_quotes_is_caught(monkeypatch):
    extra = Figure("first_fit#targets/first_fit_wall_s", "{:.1f} s", "the first fit, to a tenth")
    monkeypatch.setitem(report.registry.FIGURES, "first_fit.wall_s_tenths", extra)
    problems = report.check_markers()
    dead = (
        "benchmarks/figures.py: figure 'first_fit.wall_s_tenths' is quoted on no page; "
        "remove it from FIGURES or quote it"
    )
    assert problems == [dead]


def test_a_long_marker_and_a_malformed_entry_are_caught(monkeypatch):
    name = "first_fit.the_wall_time_of_the_first_fit_after_installing"
    monkeypatch.setitem(report.registry.FIGURES, name, report.registry.FIGURES["first_fit.wall_s"])
    text = f"about <!-- figure: {name} -->2 s<!-- /figure --> here\n"
    assert any("over 80; give the figure a shorter name" in p for p in report.marker_problems(text))
    monkeypatch.setitem(report.registry.FIGURES, "Wall", Figure("a#b", "%d", "short"))
    assert report.registry_problems() == [
        "'Wall': a name is family.what_it_is (a-z, 0-9, _)",
        "'Wall': the format '%d' has no {} field",
        "'Wall': the description is one line of 10-100 characters",
    ]


def test_check_exits_1_on_a_problem_and_0_on_the_pages(monkeypatch, capsys):
    assert report.main(["--check"]) == 0
    monkeypatch.setitem(report.registry.FIGURES, "first_fit.unused", Figure("a#b", "{}", "x" * 20))
    assert report.main(["--check"]) == 1
    assert "'first_fit.unused' is quoted on no page" in capsys.readouterr().out


# --------------------------------------------------------------------------- #
# The marker's expressions
# --------------------------------------------------------------------------- #
@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(report.harness, "RESULTS", tmp_path)
    demo = {
        "benchmark": "demo",
        "variants": {
            "default": {
                "a": 3.0,
                "b": 1.5,
                "machine": {"cpu_model": "Intel"},
                "rows": [{"n": 10, "t": 2.0, "kind": "x y"}, {"n": 100, "t": 7.3}],
            },
            "other": {"a": 6.0, "machine": {"cpu_model": "AMD"}},
        },
    }
    (tmp_path / "demo.json").write_text(json.dumps(demo))
    (tmp_path / "oneoff.json").write_text(json.dumps({"benchmark": "oneoff", "x": 0.25}))
    return tmp_path


@pytest.mark.parametrize(
    "expression,fmt,expected",
    [
        ("demo#a", "{:.0f} s", "3 s"),
        ("demo/other#a", "{:.1f} s", "6.0 s"),
        ("demo#a / demo#b", "{:.2f}x", "2.00x"),  # a ratio of two fields
        ("demo/other#a / demo#a", "{:.1f}x", "2.0x"),  # across variants
        ("demo#rows/1/t", "{:.1f} s", "7.3 s"),  # a list index
        ("demo#rows/n=100/t", "{:.1f} s", "7.3 s"),  # a list item by its values
        ('"demo#rows/kind=x y&n=10/t"', "{:.0f} s", "2 s"),  # quoted, two conditions
        ("oneoff#x * 100", "{:.0f} %", "25 %"),  # a one-off file, a percentage
        ("demo#rows/0/t * 1024 / 2", "{:,.0f} MiB", "1,024 MiB"),
        ("( demo#a * 1 + demo#b * 3 ) / ( 1 + 3 )", "{:.3f}", "1.875"),  # a pooled rate
        ("demo#a - demo#b * 2", "{:g}", "0"),  # the usual precedence
        ("max ( demo#a , demo#b , demo/other#a )", "{:g}", "6"),  # the ends of a range
        ("min ( demo#a , demo#rows/0/t ) * 2", "{:g}", "4"),
    ],
)
def test_expressions(results, monkeypatch, expression, fmt, expected):
    assert report.render(expression, fmt) == expected
    monkeypatch.setattr(report.registry, "FIGURES", {"demo.it": Figure(expression, fmt, "a test")})
    marker = "<!-- figure: demo.it -->"
    text = f"it took {marker}?<!-- /figure --> here"
    assert report.fill(text) == f"it took {marker}{expected}<!-- /figure --> here"


@pytest.mark.parametrize(
    "expression", ["demo#c", "demo/none#a", "demo#rows/5/t", "demo#rows/n=7/t", "missing#a"]
)
def test_a_figure_the_json_does_not_hold_fails(results, monkeypatch, expression):
    figure = Figure(expression, "{:.0f} s", "a test")
    monkeypatch.setattr(report.registry, "FIGURES", {"demo.it": figure})
    with pytest.raises(KeyError, match="not in benchmarks/results"):
        report.fill("it took <!-- figure: demo.it -->3 s<!-- /figure -->")


@pytest.mark.parametrize(
    "expression",
    [
        "demo#a ** demo#b",
        "demo#a +",
        "__import__('os')",
        "'text'",
        "demo#a ( 2 )",
        "sum ( demo#a , 1 )",
        "max ( demo#a , key = 1 )",
    ],
)
def test_a_malformed_expression_fails(results, expression):
    with pytest.raises(ValueError, match="references and numbers joined"):
        report.render(expression, "{}")


def test_the_machine_of_a_variant(results):
    assert report.machine("demo") == "Intel" and report.machine("demo", "other") == "AMD"


# --------------------------------------------------------------------------- #
# A run against the last one
# --------------------------------------------------------------------------- #
def test_ratios_are_compared_with_a_revisions_run(tmp_path, monkeypatch):
    """``report.py --against REV``: a ratio re-run on the same CPU is judged against
    REV's value; one not re-run, re-run elsewhere or new is only labelled."""
    import subprocess

    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)

    def write(**variants):
        doc = {"benchmark": "demo", "variants": variants}
        (results / "demo.json").write_text(json.dumps(doc))

    def run(t, cpu, date):
        return {"t": t, "machine": {"cpu_model": cpu, "date": date}}

    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    write(
        same=run(2.0, "Xeon", "1"),
        near=run(2.0, "Xeon", "1"),
        far=run(2.0, "Xeon", "1"),
        moved=run(2.0, "Xeon", "1"),
    )
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first run"], check=True)
    write(
        same=run(2.0, "Xeon", "1"),  # not re-run
        near=run(2.08, "Xeon", "2"),  # +4 %
        far=run(3.0, "EPYC", "2"),  # another machine
        moved=run(1.8, "Xeon", "2"),  # -10 %
        fresh=run(1.0, "Xeon", "2"),  # not in the revision
    )
    figures = {
        f"demo.{v}": Figure(f"demo/{v}#t", "{:.2f}x", "a test ratio")
        for v in ("same", "near", "far", "moved", "fresh")
    }
    figures["demo.seconds"] = Figure("demo/moved#t", "{:.1f} s", "not a ratio")
    monkeypatch.setattr(report.registry, "FIGURES", figures)
    monkeypatch.setattr(report.harness, "REPO", tmp_path)
    monkeypatch.setattr(report.harness, "RESULTS", results)
    rows = {row["figure"]: row for row in report.compare("HEAD")}
    assert set(rows) == {f"demo.{v}" for v in ("same", "near", "far", "moved", "fresh")}
    assert [rows[f"demo.{v}"]["status"] for v in ("same", "near", "far", "moved", "fresh")] == [
        "not re-run",
        "within",
        "other machine",
        "moved",
        "new",
    ]
    assert rows["demo.near"]["change"] == pytest.approx(0.04)
    assert rows["demo.moved"]["then"] == 2.0 and rows["demo.moved"]["now"] == 1.8
    assert report.harness.RESULTS == results  # the working tree's results are back
    assert report.main(["--against", "HEAD"]) == 1  # one moved
    with pytest.raises(ValueError, match="no-such-revision"):
        report.compare("no-such-revision")
