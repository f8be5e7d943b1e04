"""Fill the benchmark tables and figures of the READMEs and the docs from ``benchmarks/results/``.

Each table in benchmarks/README.md sits between ``<!-- table: NAME -->`` and
``<!-- /table -->``.  NAME is ``BENCHMARK`` or ``BENCHMARK/VARIANT``: the
``"markdown"`` field of that variant (``default`` when none is named) of
``benchmarks/results/BENCHMARK.json`` is pasted in (``BENCHMARK/VARIANT#FIELD``:
that field instead).  The project's README and the documentation's pages
(``docs/**/*.md``) quote some of the same tables, marked the same way, and are
filled too.

A single figure in prose sits, on one line and after a word, between
``<!-- figure: NAME -->`` and ``<!-- /figure -->``, for example::

    about <!-- figure: first_fit.wall_s -->2 s<!-- /figure -->

NAME is a key of ``FIGURES`` in ``benchmarks/figures.py``, the one registry of
quoted figures: each holds an expression, a format and a one-line description.
The value pasted between the markers is the expression's value given to the format.
The marker follows a word on its line: a line that starts with ``<!--`` is an HTML
block in Markdown, which would end the paragraph.

An expression is a reference ``BENCHMARK[/VARIANT]#PATH`` -- PATH walks into the
variant's JSON, its steps separated by ``/``: a key, a list index, or
``key=value`` (several joined by ``&``) for the first list item that has those
values; a reference with spaces is quoted, as in a shell -- or a simple
derivation: references and numbers joined by ``+``, ``-``, ``*``, ``/`` and
parentheses, each apart (spaces around them): ``a#x / a#y`` is a ratio of two
fields, ``a#p * 100`` a share in percent, ``( a#f * a#n + b#f * b#n ) / ( a#n + b#n )``
a rate pooled over two runs, ``min ( a#x , a#y , a#z )`` the low end of a range.
The format is a Python format string given the value (``{:.0f} s``, ``{:.2f}x``,
``{:,.0f} MiB``).  A results file without variants (a one-off measurement) is its
own ``default`` variant.

Measured figures in the prose of the project's README and of the docs' pages
must sit in such markers: :func:`loose_figures` finds a number with a unit of
measurement (``x``, ``s``, ``ms``, ``min``, ``h``, ``MiB``, ``GiB``, ``MB``,
``GB``, ``%``) outside code, tables filled from JSON and figure markers; the
phrases in :data:`NOT_MEASURED` (settings and limits, not measurements) are the
only exceptions.  Run after a benchmark:

    python benchmarks/report.py              # rewrite the tables and figures
    python benchmarks/report.py --check      # exit 1 if one differs from its JSON, a
                                             # figure in the prose has no marker, a marker
                                             # names no figure or a figure is quoted nowhere
    python benchmarks/report.py --machines   # the quoted tables and figures measured on
                                             # another machine than most results
    python benchmarks/report.py --against REV   # each quoted ratio against its value in
                                                # the results of git revision REV
"""

import argparse
import ast
import collections
import contextlib
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness
import figures as registry

README = harness.HERE / "README.md"
#: The pages whose prose quotes figures: the project's README and the documentation's pages.
FIGURE_PAGES = [
    harness.HERE.parent / "README.md",
    *sorted(p for p in (harness.HERE.parent / "docs").rglob("*.md") if "_build" not in p.parts),
]
#: Every file whose tables and figures are filled: this folder's README, then the above.
PAGES = [README, *FIGURE_PAGES]
PATTERN = re.compile(r"(<!-- table: (\S+) -->\n)(.*?)(<!-- /table -->)", re.DOTALL)
#: A figure's name: ``family.what_it_is``, lower case, digits and underscores.
NAME = r"[a-z0-9_]+(?:\.[a-z0-9_]+)+"
FIGURE = re.compile(rf"(<!-- figure: ({NAME}) -->)(.*?)(<!-- /figure -->)")
#: The longest a marker may be, its value and closing marker included.
MAX_MARKER = 80


def tables(text: str) -> list[tuple[str, str]]:
    """``(benchmark, variant)`` of every table in ``text``, in order."""
    return [_reference(m.group(2))[:2] for m in PATTERN.finditer(text)]


def figure_names(text: str) -> list[str]:
    """The name of every figure marker in ``text``, in order."""
    return [m.group(2) for m in FIGURE.finditer(text)]


def lookup(name: str) -> "registry.Figure":
    """The registry's figure ``name``; ``KeyError`` naming the fix when there is none."""
    try:
        return registry.FIGURES[name]
    except KeyError:
        raise KeyError(
            f"figure {name!r} is not in benchmarks/figures.py: add it to FIGURES there "
            "(expression, format, description) or fix the marker's name"
        ) from None


def references(expression: str) -> list[str]:
    """The references ``BENCHMARK[/VARIANT]#PATH`` of an expression, in order."""
    return [token for token in shlex.split(expression) if "#" in token]


def figures(text: str) -> list[tuple[str, str]]:
    """``(benchmark, variant)`` of every reference of every figure in ``text``, in order."""
    return [
        _reference(token)[:2]
        for name in figure_names(text)
        for token in references(lookup(name).expression)
    ]


def _reference(name: str) -> tuple[str, str, str]:
    name, _, field = name.partition("#")
    benchmark, _, variant = name.partition("/")
    return benchmark, variant or "default", field or "markdown"


def load(benchmark: str, variant: str = "default") -> dict:
    """A variant's result; a results file without variants (a one-off) is its own
    ``default`` variant.  ``KeyError`` when there is no such variant."""
    doc = harness.load_results(benchmark)
    if "variants" in doc and (doc["variants"] or variant != "default"):
        return doc["variants"][variant]
    if variant == "default" and harness.results_file(benchmark).exists():
        return doc
    raise KeyError(f"{benchmark}/{variant}")


def value(reference: str):
    """The value at ``BENCHMARK[/VARIANT]#PATH`` (module docstring)."""
    benchmark, variant, path = _reference(reference)
    node = load(benchmark, variant)
    for step in path.split("/"):
        if isinstance(node, list):
            if "=" in step:
                wanted = [condition.partition("=")[::2] for condition in step.split("&")]
                node = next(
                    item for item in node if all(str(item.get(key)) == want for key, want in wanted)
                )
            else:
                node = node[int(step)]
        else:
            node = node[step]
    return node


#: The functions an expression may call.
_CALLS = {"min": min, "max": max}


def evaluate(expression: str) -> float:
    """A figure's EXPRESSION: references and numbers joined by ``+ - * /``,
    parentheses, ``min ( ... , ... )`` and ``max ( ... , ... )``, each token apart
    (spaces around every operator, parenthesis and comma)."""
    tokens = shlex.split(expression)
    refs = {f"_r{i}": token for i, token in enumerate(tokens) if "#" in token}
    names = {token: name for name, token in refs.items()}
    source = " ".join(names.get(token, token) for token in tokens)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        tree = None
    allowed = (
        ast.Expression,
        ast.BinOp,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.Div,
        ast.Name,
        ast.Load,
        ast.Constant,
        ast.UnaryOp,
        ast.USub,
        ast.Call,
    )
    if (
        tree is None
        or not all(isinstance(node, allowed) for node in ast.walk(tree))
        or any(
            (isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)))
            or (isinstance(node, ast.Name) and node.id not in refs and node.id not in _CALLS)
            or (
                isinstance(node, ast.Call)
                and (
                    not isinstance(node.func, ast.Name)
                    or node.func.id not in _CALLS
                    or node.keywords
                )
            )
            for node in ast.walk(tree)
        )
    ):
        raise ValueError(
            f"figure expression {expression!r}: references and numbers joined "
            "by ' + ', ' - ', ' * ', ' / ', parentheses, min ( ... , ... ) and "
            "max ( ... , ... )"
        )
    values = {name: value(token) for name, token in refs.items()}
    return eval(compile(tree, "<figure>", "eval"), {"__builtins__": {}}, {**_CALLS, **values})


def render(expression: str, fmt: str) -> str:
    """The text a figure marker holds: ``fmt`` formatted with the expression's value."""
    try:
        return fmt.format(evaluate(expression))
    except (KeyError, IndexError, StopIteration, TypeError, AttributeError) as err:
        raise KeyError(
            f"figure {expression!r}: not in benchmarks/results/ ({type(err).__name__}: {err})"
        ) from None


def fill(text: str) -> str:
    """``text`` with every table replaced by its variant's ``"markdown"`` (missing ones
    kept) and every figure by its value (a name not in the registry, or a value not in
    the JSON, raises ``KeyError``)."""

    def table(match):
        benchmark, variant, field = _reference(match.group(2))
        try:
            markdown = load(benchmark, variant)[field].strip()
        except KeyError:
            return match.group(0)
        return f"{match.group(1)}{markdown}\n{match.group(4)}"

    def figure(match):
        found = lookup(match.group(2))
        return f"{match.group(1)}{render(found.expression, found.format)}{match.group(4)}"

    return FIGURE.sub(figure, PATTERN.sub(table, text))


# --------------------------------------------------------------------------- #
# Figures in the prose without a marker
# --------------------------------------------------------------------------- #
#: Numbers with a unit that are not measurements: settings, limits and sizes of test
#: inputs.  ``(page, phrase, reason)``; the phrase is matched with any whitespace
#: between its words, and each must still be on its page (tests/test_figures.py).
NOT_MEASURED = [
    ("docs/clusters.md", "(default 60 s)", "the default of the dmargin.stall-timeout setting"),
    (
        "docs/clusters.md",
        "(default 64 MiB of float64 rows)",
        "the default of read_parquet's chunk_bytes",
    ),
    (
        "docs/command_line.md",
        "within about 10 s",
        "the command line's timeout for reaching a scheduler",
    ),
    (
        "docs/bad_input.md",
        "within about 10 s",
        "the command line's timeout for reaching a scheduler",
    ),
    (
        "docs/bad_input.md",
        "a 2 MB archive declaring 2 GiB",
        "the sizes of a crafted test file (tests/test_checkpoint.py)",
    ),
    (
        "docs/large_data.md",
        "(4,096 rows and 64 MiB over all blocks and classes at most)",
        "the anchor pool's bound on its smallest keys (engine/sampling.py)",
    ),
    (
        "docs/large_data.md",
        "when the pool would pass 512 MiB",
        "the anchor pool's largest size (engine/sampling.py, POOL_BYTES)",
    ),
    (
        "docs/pvalues.md",
        "at least 45 % of the rows",
        "the bound of STIR's calibrated domain (dmargin/_stir.py, MIN_CLASS_SHARE)",
    ),
]
_NUMBER = r"(?<![\w.,^/=+-])\d[\d,]*(?:\.\d+)?(?:\s?-\s?\d[\d,]*(?:\.\d+)?)?"
#: A number followed by a unit of measurement; a ratio's ``x`` only written against the
#: number (``25x``, ``1.80x``), never ``50 x 5,000`` (a shape).
LOOSE = re.compile(
    _NUMBER + r"(?:x|\s?(?:[mµu]s|s|min|h|[KMGT]i?B|%|seconds|minutes|hours)"
    r"|\s(?:times)\s(?:faster|slower|as))(?![\w])"
)
_SKIPPED = [
    re.compile(
        r"^(```|~~~).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE
    ),  # fenced code: output of the code
    PATTERN,  # tables filled from the JSON
    FIGURE,  # figures filled from the JSON
    re.compile(r"<!--.*?-->", re.DOTALL),  # other comments
    re.compile(r"(`+).+?\1", re.DOTALL),  # inline code: names, settings
    re.compile(r"\]\([^)]*\)"),  # link targets
]


def _blank(match):
    return re.sub(r"[^\n]", " ", match.group(0))  # keep the line numbers


def not_measured(page: str) -> list[tuple[str, str]]:
    """``(phrase, reason)`` of :data:`NOT_MEASURED` for ``page`` (a path from the repository)."""
    return [(phrase, reason) for p, phrase, reason in NOT_MEASURED if p == page]


def _phrase(phrase: str) -> re.Pattern:
    return re.compile(r"\s+".join(map(re.escape, phrase.split())))


def loose_figures(text: str, allowed=()) -> list[tuple[int, str]]:
    """``(line, figure)`` of every number with a unit outside code, filled tables and
    figure markers, and outside the ``allowed`` phrases."""
    for pattern in [*_SKIPPED, *map(_phrase, allowed)]:
        text = pattern.sub(_blank, text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in LOOSE.finditer(text)]


def page_name(page: Path) -> str:
    return page.relative_to(harness.REPO).as_posix()


def check_prose(pages=FIGURE_PAGES) -> list[str]:
    """One line per loose figure in ``pages``, and per phrase of :data:`NOT_MEASURED`
    no longer on its page."""
    problems = []
    for page in pages:
        name, text = page_name(page), page.read_text()
        allowed = [phrase for phrase, _ in not_measured(name)]
        problems += [
            f"{name}:{line}: {figure!r} is not in a <!-- figure: NAME --> marker"
            for line, figure in loose_figures(text, allowed)
        ]
        problems += [
            f"{name}: NOT_MEASURED phrase {phrase!r} is not on the page"
            for phrase in allowed
            if not _phrase(phrase).search(text)
        ]
    return problems


def check_markers(pages=PAGES) -> list[str]:
    """One line per broken figure marker in ``pages`` (:func:`marker_problems`), per
    malformed entry of the registry and per registry entry that no page quotes."""
    problems, quoted = [], set()
    for page in pages:
        name, text = page_name(page), page.read_text()
        problems += [f"{name}:{problem}" for problem in marker_problems(text)]
        quoted.update(figure_names(text))
    problems += [f"benchmarks/figures.py: {problem}" for problem in registry_problems()]
    problems += [
        f"benchmarks/figures.py: figure {name!r} is quoted on no page; remove it from "
        "FIGURES or quote it"
        for name in registry.FIGURES
        if name not in quoted
    ]
    return problems


def registry_problems() -> list[str]:
    """Entries of ``benchmarks/figures.py`` that a marker could not quote or a reader
    could not follow: a name that is not ``family.what_it_is``, a format without a
    ``{}`` field, a description that is not one short line."""
    problems = []
    for name, found in registry.FIGURES.items():
        if not re.fullmatch(NAME, name):
            problems.append(f"{name!r}: a name is family.what_it_is (a-z, 0-9, _)")
        if "{" not in found.format:
            problems.append(f"{name!r}: the format {found.format!r} has no {{}} field")
        if not 10 <= len(found.description) <= 100 or "\n" in found.description:
            problems.append(f"{name!r}: the description is one line of 10-100 characters")
    return problems


def marker_problems(text: str) -> list[str]:
    """``LINE: problem`` for each figure marker that would not be filled, would break
    the page, names no figure of the registry or runs over :data:`MAX_MARKER`
    characters (code, where a marker may be shown as an example, aside)."""
    for pattern in (_SKIPPED[0], _SKIPPED[4]):  # fenced and inline code
        text = pattern.sub(_blank, text)

    def line(match):
        return text.count("\n", 0, match.start()) + 1

    problems = []
    filled = {line(m) for m in FIGURE.finditer(text)}
    problems += [
        f"{line(m)}: a figure marker that is not <!-- figure: NAME -->VALUE<!-- /figure --> "
        "on one line, NAME a key of FIGURES in benchmarks/figures.py"
        for m in re.finditer(r"<!-- figure:", text)
        if line(m) not in filled
    ]
    # CommonMark reads a line that starts with "<!--" as an HTML block: the paragraph
    # would end before the figure.
    problems += [
        f"{line(m)}: a figure marker starts the line (it would end the paragraph); "
        "move a word before it"
        for m in re.finditer(r"^[ \t]*<!-- figure:", text, re.MULTILINE)
    ]
    for m in FIGURE.finditer(text):
        if m.group(2) not in registry.FIGURES:
            problems.append(
                f"{line(m)}: figure {m.group(2)!r} is not in benchmarks/figures.py; add it "
                "to FIGURES there or fix the name"
            )
        if len(m.group(0)) > MAX_MARKER:
            problems.append(
                f"{line(m)}: the marker of {m.group(2)!r} is {len(m.group(0))} characters, "
                f"over {MAX_MARKER}; give the figure a shorter name"
            )
    return problems


# --------------------------------------------------------------------------- #
# Machines
# --------------------------------------------------------------------------- #
def machine(benchmark: str, variant: str = "default") -> str:
    """The CPU model a variant was measured on (its ``machine``'s ``cpu_model``, or the
    ``machine`` text of a one-off)."""
    found = load(benchmark, variant).get("machine")
    if isinstance(found, dict):
        return str(found.get("cpu_model"))
    return str(found)


def machines(pages=PAGES) -> list[tuple[str, str, str, str]]:
    """``(page, kind, benchmark/variant, cpu)`` of every quoted table and figure whose
    variant's machine differs from the one most of the quoted results were measured on."""
    quoted = []
    for page in pages:
        text = page.read_text()
        for kind, refs in (("table", tables(text)), ("figure", figures(text))):
            for benchmark, variant in dict.fromkeys(refs):
                try:
                    cpu = machine(benchmark, variant)
                except KeyError:
                    cpu = "no results yet"
                quoted.append((page_name(page), kind, f"{benchmark}/{variant}", cpu))
    counts = collections.Counter(cpu for *_, cpu in quoted)
    usual = counts.most_common(1)[0][0] if counts else None
    return [row for row in quoted if row[3] != usual]


# --------------------------------------------------------------------------- #
# Runs compared
# --------------------------------------------------------------------------- #
#: How far a re-run ratio on the same machine may move from the last run's.
TOLERANCE = 0.05


@contextlib.contextmanager
def results_at(revision: str):
    """``benchmarks/results/`` as git ``revision`` has it, in place of the working tree's
    while the block runs (a benchmark the revision lacks has no results there)."""
    listed = subprocess.run(
        ["git", "-C", str(harness.REPO), "ls-tree", "--name-only", revision, "benchmarks/results/"],
        capture_output=True,
        text=True,
    )
    if listed.returncode:
        raise ValueError(f"git revision {revision!r}: {listed.stderr.strip()}")
    saved = harness.RESULTS
    with tempfile.TemporaryDirectory() as folder:
        for name in listed.stdout.split():
            if name.endswith(".json"):
                shown = subprocess.run(
                    ["git", "-C", str(harness.REPO), "show", f"{revision}:{name}"],
                    capture_output=True,
                    check=True,
                )
                (Path(folder) / Path(name).name).write_bytes(shown.stdout)
        harness.RESULTS = Path(folder)
        try:
            yield
        finally:
            harness.RESULTS = saved


def _runs(expression: str) -> dict:
    """``{benchmark/variant: (its JSON, its CPU)}`` of an expression's references;
    a variant the results lack is left out."""
    runs = {}
    for token in references(expression):
        benchmark, variant, _ = _reference(token)
        try:
            runs[f"{benchmark}/{variant}"] = (load(benchmark, variant), machine(benchmark, variant))
        except KeyError:
            pass
    return runs


def compare(revision: str, tolerance: float = TOLERANCE) -> list[dict]:
    """Every quoted ratio (a figure whose format ends in ``x``) now and in the results of
    git ``revision``.  ``status``: ``"not re-run"`` (every run it reads is the same),
    ``"other machine"`` (a re-run on another CPU: no comparison), ``"new"`` (the
    revision cannot give it), ``"within"`` or ``"moved"`` (by more than
    ``tolerance``, relative, on the same CPU)."""
    ratios = {name: found for name, found in registry.FIGURES.items() if found.format.endswith("x")}
    then = {}
    with results_at(revision):
        for name, found in ratios.items():
            try:
                then[name] = (evaluate(found.expression), _runs(found.expression))
            except (KeyError, IndexError, StopIteration, TypeError, AttributeError):
                pass
    rows = []
    for name, found in ratios.items():
        now, runs = evaluate(found.expression), _runs(found.expression)
        row = {"figure": name, "now": now, "then": None, "change": None}
        if name not in then:
            row["status"] = "new"
        else:
            row["then"], old = then[name]
            rerun = [run for run, (result, _) in runs.items() if old.get(run, (None,))[0] != result]
            if not rerun:
                row["status"] = "not re-run"
            elif any(old.get(run, (None, None))[1] != runs[run][1] for run in rerun):
                row["status"] = "other machine"
            else:
                row["change"] = now / row["then"] - 1 if row["then"] else float("inf")
                row["status"] = "within" if abs(row["change"]) <= tolerance else "moved"
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a table or figure differs from its JSON, a "
        "figure in the prose has no marker, a marker names no figure of "
        "benchmarks/figures.py or a figure there is quoted nowhere",
    )
    parser.add_argument(
        "--machines",
        action="store_true",
        help="list the quoted tables and figures measured on another machine than most results",
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="each quoted ratio now and in the results of git revision REV; exit 1 when "
        f"one re-run on the same machine moved by more than {TOLERANCE:.0%}",
    )
    args = parser.parse_args(argv)
    if args.against:
        rows = compare(args.against)
        for row in rows:
            then = "-" if row["then"] is None else f"{row['then']:.3f}"
            change = "" if row["change"] is None else f"{row['change']:+.1%}"
            print(f"{row['figure']:55s} {then:>8s} {row['now']:8.3f} {change:>7s}  {row['status']}")
        return 1 if any(row["status"] == "moved" for row in rows) else 0
    if args.machines:
        for row in machines():
            print("  ".join(row))
        return 0
    problems = []
    for page in PAGES:
        text = page.read_text()
        try:
            filled = fill(text)
        except KeyError as err:
            problems.append(f"{page_name(page)}: {err.args[0]}")
            continue
        if filled != text:
            if args.check:
                problems.append(
                    f"{page_name(page)}: tables or figures differ from benchmarks/results/; "
                    "run python benchmarks/report.py"
                )
            else:
                page.write_text(filled)
    if args.check:
        problems += check_prose() + check_markers()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
