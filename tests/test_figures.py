"""Every figure the README and the docs quote is its benchmark JSON's.

A measured figure in the prose of ``README.md`` or of a page under ``docs/`` sits in
a ``<!-- figure: EXPRESSION FORMAT -->VALUE<!-- /figure -->`` marker, which
``python benchmarks/report.py`` fills from ``benchmarks/results/`` as it fills the
tables (its docstring has the syntax).  These tests check that every such value is
what report.py would write, that no number with a unit of measurement stands in the
prose outside a marker (settings and limits aside: ``report.NOT_MEASURED``, each with
its reason), and -- on altered copies of the pages -- that the checks fail when
they should.
"""

import json
import re
from pathlib import Path

import pytest

from tests.test_docs import _report

REPO = Path(__file__).resolve().parents[1]


report = _report()  # benchmarks/report.py, loaded as tests/test_docs.py loads it
PAGES = {report.page_name(page): page for page in report.FIGURE_PAGES}


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
        r"(<!-- figure: surf_speed#targets/multisurf_skrebate_over_dmargin "
        r"[^>]*-->)(\d+)x(<!-- /figure -->)",
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
    assert [figure for _, figure in report.loose_figures(unmarked)] == ["2 s", "4 s"]
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
    good = "about <!-- figure: a#b {:.0f} s -->2 s<!-- /figure --> here\n"
    assert report.marker_problems(good) == []
    at_line_start = "about\n<!-- figure: a#b {:.0f} s -->2 s<!-- /figure --> here\n"
    assert any("starts the line" in p for p in report.marker_problems(at_line_start))
    unclosed = "about <!-- figure: a#b {:.0f} s -->2 s here\n"
    assert any("not <!-- figure:" in p for p in report.marker_problems(unclosed))
    shown = "write `<!-- figure: BENCHMARK#PATH FORMAT -->` before the value\n"
    assert report.marker_problems(shown) == []  # in code: an example, not a marker


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
def test_expressions(results, expression, fmt, expected):
    assert report.render(expression, fmt) == expected
    marker = f"<!-- figure: {expression} {fmt} -->"
    text = f"it took {marker}?<!-- /figure --> here"
    assert report.fill(text) == f"it took {marker}{expected}<!-- /figure --> here"


@pytest.mark.parametrize(
    "expression", ["demo#c", "demo/none#a", "demo#rows/5/t", "demo#rows/n=7/t", "missing#a"]
)
def test_a_figure_the_json_does_not_hold_fails(results, expression):
    with pytest.raises(KeyError, match="not in benchmarks/results"):
        report.fill(f"it took <!-- figure: {expression} {{:.0f}} s -->3 s<!-- /figure -->")


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
