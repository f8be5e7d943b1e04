"""A new user's first fit: what is compiled, and that the numba cache is used.

The timing claim (first IRelief + ReliefF fit on the demo data from an empty
cache) lives in ``benchmarks/results/first_fit.json``, not here: a stopwatch in a
test fails under load.  The claims checked here: importing dmargin compiles and
loads nothing, the first fits compile two kernels, and a second process with the
same cache compiles nothing.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dmargin.engine.kernels import lse

REPO = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter: import, then the demo's two fits; prints what numba did.
_FIRST_FIT = textwrap.dedent("""
    import json, time
    import dmargin
    import importlib, pkgutil
    import dmargin.engine as engine
    mods = [importlib.import_module(m.name)
            for m in pkgutil.walk_packages(engine.__path__, "dmargin.engine.")]
    dispatchers = {f"{m.__name__}.{n}": d for m in mods
                   for n, d in vars(m).items() if hasattr(d, "py_func") and hasattr(d, "stats")}
    at_import = sorted(n for n, d in dispatchers.items() if d.signatures)
    from numba.core import event
    from dmargin.datasets import load_dataset
    X, y = load_dataset("wdbc")
    with event.install_recorder("numba:compile") as rec:
        t0 = time.perf_counter()
        dmargin.IRelief().fit(X, y)
        dmargin.ReliefF().fit(X, y)
        seconds = time.perf_counter() - t0
    compiled = sorted({f'{e.data["dispatcher"].py_func.__module__}.{e.data["dispatcher"].py_func.__qualname__}'
                       for _, e in rec.buffer})
    stats = {n: [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())]
             for n, d in dispatchers.items()}
    print(json.dumps({"seconds": seconds, "at_import": at_import, "compiled": compiled,
                      "stats": stats, "file": dmargin.__file__}))
""")


def _first_fit(env, cwd):
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_FIT],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


_USED = ("dmargin.engine.kernels.lse.lse_tile", "dmargin.engine.kernels.knn.all_pairs")


def _assert_warm(cold, warm):
    assert cold["at_import"] == [] and warm["at_import"] == []
    for name in _USED:
        assert cold["stats"][name] == [0, 1], (name, cold["stats"][name])
        assert warm["stats"][name] == [1, 0], (name, warm["stats"][name])
    assert warm["compiled"] == []
    assert all(misses == 0 for _, misses in warm["stats"].values()), warm["stats"]


@pytest.mark.slow
def test_first_fit_compiles_once_then_loads_from_the_cache(tmp_path):
    """Cold: the demo's fits compile their two kernels and helpers; warm: nothing compiles.

    Importing dmargin neither compiles nor loads a kernel (no dispatcher holds
    a signature after the import).
    """
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    cold = _first_fit(env, tmp_path)
    warm = _first_fit(env, tmp_path)
    # Two kernels of dmargin's (I-RELIEF's agg is numpy) and the k-nearest kernel's
    # helpers: its float32 tile, its pool and its lists' difference sums.
    assert {n for n in cold["compiled"] if n.startswith("dmargin.")} == {
        "dmargin.engine.kernels.lse._lse_tile",
        "dmargin.engine.kernels.knn._knn_all_pairs",
        "dmargin.engine.kernels.knn._pair_tile",
        "dmargin.engine.kernels.knn._flush",
        "dmargin.engine.kernels.knn._neighbour_sums",
        "dmargin.engine.kernels.distance.plain_tile",
    }
    # A small fit runs the serial twins only: no parallel kernel is compiled.
    assert not any(name.endswith("_parallel") for name in cold["compiled"]), cold["compiled"]
    _assert_warm(cold, warm)


def _read_only_mount_works(path):
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            f"mount --bind {path} {path} && mount -o remount,bind,ro {path}",
        ],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.slow
def test_read_only_install_caches_in_the_user_cache_dir(tmp_path):
    """A package directory nobody may write to: numba caches under ``~/.cache/numba``.

    dmargin sets no cache directory itself; numba falls back to the user's
    cache directory when ``__pycache__`` beside the modules is not writable,
    so a second process of a read-only install compiles nothing either.
    """
    site = tmp_path / "site"
    shutil.copytree(
        REPO / "dmargin",
        site / "dmargin",
        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"),
    )
    if not _read_only_mount_works(site):
        pytest.skip("needs a private read-only bind mount (unshare -m)")
    home = tmp_path / "home"
    home.mkdir()
    env = _env(HOME=str(home), PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    env.pop("XDG_CACHE_HOME", None)
    script = (
        f"mount --bind {site} {site} && mount -o remount,bind,ro {site} && "
        f'exec {sys.executable} -c "$FIRST_FIT"'
    )
    runs = []
    for _ in range(2):
        out = subprocess.run(
            ["unshare", "-m", "sh", "-c", script],
            env={**env, "FIRST_FIT": _FIRST_FIT},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["file"].startswith(str(site))
    assert not list(site.rglob("*.nbi"))
    assert list((home / ".cache" / "numba").rglob("lse._lse_tile-*.nbi"))
    _assert_warm(*runs)


def test_class_order_is_a_stable_sort_by_class():
    """The counting sort in ``class_order`` equals numpy's stable argsort."""
    rng = np.random.default_rng(3)
    for n, k in ((0, 2), (1, 1), (57, 4), (300, 3)):
        yc = rng.integers(0, k, n).astype(np.int64)
        if n:
            yc[yc == k - 1] = 0  # an empty last class
        order, starts = lse.class_order(yc, k)
        np.testing.assert_array_equal(order, np.argsort(yc, kind="mergesort"))
        np.testing.assert_array_equal(
            starts, np.concatenate([[0], np.cumsum(np.bincount(yc, minlength=k))])
        )


@pytest.mark.slow
def test_demo_mentions_compilation_only_when_it_compiled(tmp_path):
    """``python -m dmargin.demo``: the compile note on a cold cache, none on a warm one."""
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    lines = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-m", "dmargin.demo", "--no-cluster", "--top", "1"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        lines.append(
            next(line for line in out.stdout.splitlines() if line.startswith("In-process"))
        )
    assert "compiling the kernels on first use" in lines[0]
    assert "compil" not in lines[1], lines[1]
