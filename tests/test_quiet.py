"""What a new user sees besides the results: no warning that is not about them.

- ``make demo``'s cluster (``_cluster.local_cluster``) neither warns that port 8787 is
  taken nor kills its workers after distributed's 4 s when they are slow to exit (a
  loaded machine): "Worker process still alive after 4.0 seconds, killing".
- ``pip install`` prints no setuptools deprecation block: ``project.license`` is an
  SPDX string (setuptools >= 77).
"""

import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A cluster as the demo starts it, with port 8787 taken and workers that need 6 s
# to close (a plugin's teardown): what a loaded machine does to the demo.
_CLUSTER = textwrap.dedent("""
    import time

    from distributed.diagnostics.plugin import WorkerPlugin

    from dmargin._cluster import local_cluster


    class SlowToClose(WorkerPlugin):
        def teardown(self, worker):
            time.sleep(6)


    with local_cluster(n_workers=2) as client:
        client.register_plugin(SlowToClose())
        print("sum", client.submit(sum, [1, 2]).result())
""")


@pytest.mark.slow
@pytest.mark.cluster
def test_the_demo_cluster_closes_quietly(tmp_path):
    taken = socket.socket()
    try:
        taken.bind(("", 8787))
        taken.listen()
    except OSError:  # already taken by something else: the same situation
        pass
    try:
        run = subprocess.run(
            [sys.executable, "-c", _CLUSTER],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
        )
    finally:
        taken.close()
    assert run.returncode == 0, run.stderr[-3000:]
    assert "sum 3" in run.stdout
    assert "still alive" not in run.stderr, run.stderr[-3000:]
    assert "already in use" not in run.stderr, run.stderr[-3000:]


def test_the_license_is_an_spdx_string():
    text = (REPO / "pyproject.toml").read_text()
    project = text.split("[project]")[1].split("\n[")[0]
    assert re.search(r'^license = "BSD-3-Clause"$', project, re.M), project
    requires = re.search(r"^requires = \[(.*)\]", text, re.M)[1]
    version = re.search(r'"setuptools>=(\d+)', requires)
    assert version and int(version[1]) >= 77, requires  # SPDX license strings: setuptools 77
