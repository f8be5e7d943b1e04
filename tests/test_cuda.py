"""The GPU tiles without a GPU: numba's CUDA simulator, the import, the refusal.

The simulator runs the CUDA kernels on the CPU; it is chosen when
``numba.cuda`` is first imported, so each check runs in a fresh process
(``tests/_cuda_sim.py``, which holds the checks and says what each covers).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmargin

ROOT = Path(__file__).resolve().parents[1]
SIM = Path(__file__).with_name("_cuda_sim.py")
CHECKS = [
    "tile_shapes",
    "kth_bound",
    "ties",
    "overflow",
    "small_classes",
    "relieff_weights",
    "relieff_dask",
    "general_tile",
    "relieff_general",
    "surf_passes",
    "surf_weights",
    "refused",
]


def _python(code_or_args, simulator):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    args = code_or_args if isinstance(code_or_args, list) else ["-c", code_or_args]
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("check", CHECKS)
def test_gpu_kernels_in_the_simulator_equal_the_cpu(check):
    out = _python([str(SIM), check], simulator=True)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_the_checks_are_all_run():
    source = SIM.read_text()
    defined = [line[4:].split("(")[0] for line in source.splitlines() if line.startswith("def ")]
    assert sorted(c for c in defined if not c.startswith("_")) == sorted(CHECKS)


def test_numba_cuda_imports_where_numpy_lacks_row_stack():
    """numba-cuda 0.30 fails to import on numpy 2.5, which removed ``np.row_stack``;
    dmargin puts the alias back before it imports numba.cuda."""
    code = (
        "import numpy as np, dmargin\n"
        "if hasattr(np, 'row_stack'): del np.row_stack\n"
        "from dmargin.engine.kernels import cuda_knn\n"
        "assert np.row_stack is np.vstack\n"
        "print(cuda_knn.KERNEL.source)\n"
    )
    out = _python(code, simulator=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "knn_tile_cuda" in out.stdout


def test_no_gpu_is_one_clear_line_and_dmargin_does_not_import_numba_cuda():
    code = (
        "import sys, numpy as np, dmargin\n"
        "X = np.random.default_rng(0).random((20, 3)); y = np.arange(20) % 2\n"
        "dmargin.ReliefF().fit(X, y)\n"
        "assert 'numba.cuda' not in sys.modules, 'imported by a CPU fit'\n"
        "usable, why = dmargin.engine.cuda_status()\n"
        "if usable: print('GPU'); raise SystemExit\n"
        "try:\n"
        "    dmargin.ReliefF(device='cuda').fit(X, y)\n"
        "except RuntimeError as exc:\n"
        "    print(repr(str(exc)))\n"
    )
    out = _python(code, simulator=False)
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.strip() == "GPU":
        pytest.skip("this machine has a usable CUDA GPU")
    message = out.stdout.strip()
    assert "ReliefF(device='cuda'): no CUDA GPU is usable here" in message
    assert "device='cpu'" in message and "\\n" not in message


def test_an_unknown_device_is_refused_by_name():
    X = np.random.default_rng(0).random((10, 2))
    with pytest.raises(
        ValueError, match="device='gpu' is not valid; it must be one of 'cpu', 'cuda'"
    ):
        dmargin.ReliefF(device="gpu").fit(X, np.arange(10) % 2)
