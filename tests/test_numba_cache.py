"""Numba's on-disk cache never serves a kernel compiled from other sources.

Numba keys a cached kernel by its own source file; its machine code also
holds constants and inlined helpers from other files.  The engine stamps
its kernels' cache entries with the hash of every engine source, so a
change anywhere in the engine recompiles them.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dmargin

#: ``quad._term`` takes ``e^x``, or 0 below ``EXP_FLOOR`` (a constant of
#: ``_numba.py``, compiled into the kernel of ``kernels/quad.py``).
PROBE = "from dmargin.engine.kernels import quad; print(repr(quad._term(1.0, -1.0, -5.0, 0.0)))"


def _run(root):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(root)
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip())


@pytest.mark.slow
def test_a_constant_changed_in_another_file_recompiles(tmp_path):
    package = Path(dmargin.__file__).parent
    shutil.copytree(package, tmp_path / "dmargin", ignore=shutil.ignore_patterns("__pycache__"))
    assert _run(tmp_path) == pytest.approx(6.737946999085467e-3)  # e^-5, compiled and cached
    cached = list((tmp_path / "dmargin" / "engine" / "kernels" / "__pycache__").glob("quad.*"))
    assert cached, "the kernel was not cached beside its module"
    numba_py = tmp_path / "dmargin" / "engine" / "_numba.py"
    source = numba_py.read_text()
    assert "EXP_FLOOR = -700.0" in source
    numba_py.write_text(source.replace("EXP_FLOOR = -700.0", "EXP_FLOOR = -1.0"))
    # quad.py is unchanged: numba's own stamp would load the code compiled with -700.
    assert _run(tmp_path) == 0.0


UNCACHABLE = """
import numba

from ._numba import helper


@helper
def threads_now():
    return numba.get_num_threads()  # a pointer into numba's runtime: not cachable
"""


def test_an_engine_kernel_numba_cannot_cache_warns_and_runs(tmp_path):
    """Numba refuses to cache a kernel that holds a dynamic global and says so in a
    warning that names the kernel's file: the engine's cache locator must give it that
    file, not fail the fit with an ``AttributeError``."""
    package = Path(dmargin.__file__).parent
    shutil.copytree(package, tmp_path / "dmargin", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "dmargin" / "engine" / "_uncachable.py").write_text(UNCACHABLE)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c",
         "from dmargin.engine import _uncachable; print(_uncachable.threads_now())"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 1
    assert "Cannot cache compiled function" in out.stderr
    assert "_uncachable.py" in out.stderr
