"""``docs/contributing/layout.md`` shows the package as it is.

Its tree is written at each documentation build from the first sentence of each
module's docstring (``docs/conf.py``: ``layout_block``), so a module added, split or
moved appears there without an edit to the page.  Checked here: every module has
that sentence, the tree lists every module and subpackage, and the page keeps the
marker the build fills.
"""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "contributing" / "layout.md"
MODULES = sorted(p for p in (REPO / "dmargin").rglob("*.py") if "__pycache__" not in p.parts)


def _conf():
    spec = importlib.util.spec_from_file_location("docs_conf_layout", REPO / "docs" / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_module_says_what_it_holds_in_one_sentence(path):
    summary = _conf().module_summary(path)
    where = path.relative_to(REPO).as_posix()
    assert summary, f"{where} has no docstring: its first sentence is its line in layout.md"
    assert summary.endswith("."), f"{where}: end the docstring's first sentence with a period"
    assert len(summary) <= 160, f"{where}: its first sentence runs to {len(summary)} characters"


def test_the_tree_lists_every_module_and_subpackage():
    conf = _conf()
    block = conf.layout_block()
    listed, stack = set(), []
    for line in block.splitlines()[2:-1]:
        name = line[2:].split()[0]
        depth = (len(line[2:]) - len(line[2:].lstrip())) // 2
        stack = stack[:depth]
        listed.add("dmargin/" + "".join(stack) + name)
        if name.endswith("/"):
            stack.append(name)
    on_disk = set()
    for path in MODULES:
        rel = path.relative_to(REPO).as_posix()
        if path.name == "__init__.py" and path.parent.name != "dmargin":
            on_disk.add(rel.removesuffix("__init__.py"))
        else:
            on_disk.add(rel)
    assert listed == on_disk


def test_the_page_keeps_the_marker_the_build_fills():
    text = PAGE.read_text()
    assert text.count("\n<!-- dmargin-layout-tree -->\n") == 1
    filled = _conf()._LAYOUT_HERE.sub(lambda m: _conf().layout_block(), text)
    assert "  relief/" in filled and "_relief.py" in filled
