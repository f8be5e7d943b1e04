"""The suite itself: the guard against reading beside the repository, and its timeouts.

A clone in a home folder sits beside everything the interpreter reads (``~/venv``,
``~/.pyenv``, ``~/.local``, ``~/.config/dask``); the guard of ``tests/conftest.py``
lets those through and still refuses a data folder or another checkout there.
"""

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

_PROBE = """
import os
import sys
from pathlib import Path

import pytest

HOME = Path(os.environ["HOME"])


def test_what_the_interpreter_reads_opens():
    import beside_venv_module  # a module in the venv beside the clone, reading its data

    assert beside_venv_module.DATA == "venv data"
    assert "home =" in Path(sys.prefix, "pyvenv.cfg").read_text()
    assert HOME.joinpath(".pyenv", "versions", "3", "lib", "pdb.py").read_text() == "# pdb"
    assert HOME.joinpath(".config", "dask", "dask.yaml").read_text() == "{}"
    assert HOME.joinpath(".bashrc").read_text() == "# rc"


def test_the_repository_opens():
    assert "pytest" in Path(__file__).resolve().parents[1].joinpath("pyproject.toml").read_text()


@pytest.mark.parametrize("beside", ["shared/data/x.csv", "other-checkout/tests/data/x.csv",
                                    "notes.txt", "shared/missing.csv"])
def test_a_file_beside_the_clone_is_refused(beside):
    with pytest.raises(PermissionError, match="outside the repository"):
        open(HOME / beside)
"""


def _make_home(home):
    """``home`` as a user's: the clone's test setup, a venv, hidden folders, data beside."""
    clone = home / "dmargin"
    (clone / "tests").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", clone)
    shutil.copy(REPO / "tests" / "conftest.py", clone / "tests")
    (clone / "tests" / "test_probe.py").write_text(_PROBE)
    venv = home / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    packages = next(venv.glob("lib/python*/site-packages"))
    # This interpreter's packages (pytest, numpy, dask), reached from the new venv.
    (packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (packages / "beside_venv_data.txt").write_text("venv data")
    (packages / "beside_venv_module.py").write_text(
        "import os\nDATA = open(os.path.join(os.path.dirname(__file__), "
        "'beside_venv_data.txt')).read()\n"
    )
    for name, text in {
        ".pyenv/versions/3/lib/pdb.py": "# pdb",
        ".config/dask/dask.yaml": "{}",
        ".bashrc": "# rc",
        "shared/data/x.csv": "a,b\n1,2\n",
        "other-checkout/tests/data/x.csv": "a\n1\n",
        "notes.txt": "notes",
    }.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    return clone, venv


@pytest.mark.slow
def test_a_clone_beside_its_venv_runs_and_refuses_data_beside(tmp_path):
    """The suite runs from ``~/dmargin`` with ``~/venv``, ``~/.pyenv`` and ``~/.config``
    beside it, and a file in ``~/shared``, another checkout or ``~`` itself is refused."""
    home = tmp_path / "home"
    clone, venv = _make_home(home)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "DASK_CONFIG")
    }
    run = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_probe.py",
        ],
        cwd=clone,
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "6 passed" in run.stdout, run.stdout[-2000:]


def test_timeouts_catch_hangs_not_a_loaded_machine():
    """A test's timeout is a hang guard: a loaded 2-core machine compiling numba
    kernels takes minutes, so the suite's limit is half an hour and no test lowers it
    to a few minutes."""
    pytest_options = (REPO / "pyproject.toml").read_text().split("[tool.pytest.ini_options]")[1]
    assert int(re.search(r"^timeout\s*=\s*(\d+)", pytest_options, re.M)[1]) >= 1800
    mark = re.compile(r"mark\.timeout\((\d+(?:\.\d*)?)")
    for path in sorted((REPO / "tests").glob("test_*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for seconds in mark.findall(line):
                assert float(seconds) >= 300, f"{path.name}:{number}: {line.strip()}"
