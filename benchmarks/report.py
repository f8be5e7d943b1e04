"""Fill the benchmark tables of benchmarks/README.md from the JSON in ``benchmarks/results/``.

Each table in benchmarks/README.md sits between ``<!-- table: NAME -->`` and
``<!-- /table -->``.  NAME is ``BENCHMARK`` or ``BENCHMARK/VARIANT``: the
``"markdown"`` field of that variant (``default`` when none is named) of
``benchmarks/results/BENCHMARK.json`` is pasted in (``BENCHMARK/VARIANT#FIELD``:
that field instead).  The project's README and the documentation's pages
(``docs/**/*.md``) quote some of the same tables, marked the same way, and are
filled too.  Run after a benchmark:

    python benchmarks/report.py            # rewrite the tables
    python benchmarks/report.py --check    # exit 1 if a table differs from its JSON
"""

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402

README = harness.HERE / "README.md"
#: Every file whose tables are filled: this folder's README, the project's, then the
#: documentation's pages.
PAGES = [README, harness.HERE.parent / "README.md",
         *sorted(p for p in (harness.HERE.parent / "docs").rglob("*.md") if "_build" not in p.parts)]
PATTERN = re.compile(r"(<!-- table: (\S+) -->\n)(.*?)(<!-- /table -->)", re.S)


def tables(text: str) -> list[tuple[str, str]]:
    """``(benchmark, variant)`` of every table in ``text``, in order."""
    return [_reference(m.group(2))[:2] for m in PATTERN.finditer(text)]


def _reference(name: str) -> tuple[str, str, str]:
    name, _, field = name.partition("#")
    benchmark, _, variant = name.partition("/")
    return benchmark, variant or "default", field or "markdown"


def fill(text: str) -> str:
    """``text`` with every table replaced by its variant's ``"markdown"`` (missing ones kept)."""

    def table(match):
        benchmark, variant, field = _reference(match.group(2))
        try:
            markdown = harness.load_variant(benchmark, variant)[field].strip()
        except KeyError:
            return match.group(0)
        return f"{match.group(1)}{markdown}\n{match.group(4)}"

    return PATTERN.sub(table, text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a table differs from its JSON")
    args = parser.parse_args(argv)
    stale = []
    for page in PAGES:
        text = page.read_text()
        filled = fill(text)
        if filled != text:
            stale.append(page)
            if not args.check:
                page.write_text(filled)
    if args.check and stale:
        for page in stale:
            print(f"{page}: tables differ from benchmarks/results/; run python benchmarks/report.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
