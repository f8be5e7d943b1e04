"""Every Python block of the README and of the documentation runs as pasted.

Each ```` ```python ```` block of ``README.md``, of the pages under ``docs/``
(the user guide and the contributor pages, Markdown), of ``CONTRIBUTING.md``
and of ``deploy/README.md`` is written to a script of its own and run in a
fresh interpreter in an empty directory, so a block that uses a name it does
not define, a file that does not exist, or a cluster without a ``__main__``
guard fails here as it would for a reader.  Blocks that need a deployed
cluster (``deploy/README.md``) or data outside the repository carry an HTML
comment ``<!-- not run: REASON -->`` on the line before them; any other block
there is run too.  The README has no such block: all of its blocks run.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(?:<!-- not run: (?P<reason>[^>]+) -->\n)?```python\n(?P<code>.*?)```", re.S)
#: The documentation pages, as paths relative to the repository.
DOCS = sorted(
    p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md") if "_build" not in p.parts
)


def blocks(name):
    text = (REPO / name).read_text()
    return [(name, i, m["code"], m["reason"]) for i, m in enumerate(BLOCK.finditer(text), 1)]


CASES = [
    case
    for name in ["README.md", *DOCS, "CONTRIBUTING.md", "deploy/README.md"]
    for case in blocks(name)
]


def test_the_readme_has_python_blocks():
    assert len(blocks("README.md")) >= 4
    assert all(reason is None for *_, reason in blocks("README.md")), (
        "every block of the main README must run"
    )


def test_the_docs_pages_have_python_blocks():
    # The user guide's examples are run here too: a page list that came back
    # empty (a moved folder) would leave them unchecked.
    assert "docs/getting_started.md" in DOCS
    assert sum(len(blocks(name)) for name in DOCS) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("name,index,code,reason", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_readme_block_runs_as_pasted(name, index, code, reason, tmp_path):
    if reason is not None:
        pytest.skip(reason.strip())
    script = tmp_path / "block.py"
    script.write_text(code)
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
        timeout=900,
    )
    assert run.returncode == 0, f"{name} block {index} failed:\n{code}\n{run.stderr[-3000:]}"
