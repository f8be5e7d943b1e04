"""Fill the benchmark tables of benchmarks/README.md from the JSON in ``benchmarks/results/``.

Each table in benchmarks/README.md sits between ``<!-- table: NAME -->`` and
``<!-- /table -->``; NAME is a results file (without ``.json``) whose
``"markdown"`` field is pasted in.  Run after a benchmark:

    python benchmarks/report.py
"""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"(<!-- table: (\S+) -->\n)(.*?)(<!-- /table -->)", re.S)


def main():
    readme = ROOT / "benchmarks" / "README.md"
    text = readme.read_text()

    def fill(match):
        path = ROOT / "benchmarks" / "results" / f"{match.group(2)}.json"
        if not path.exists():
            return match.group(0)
        table = json.loads(path.read_text())["markdown"].strip()
        return f"{match.group(1)}{table}\n{match.group(4)}"

    readme.write_text(PATTERN.sub(fill, text))


if __name__ == "__main__":
    main()
