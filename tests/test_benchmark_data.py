"""The benchmarks' real data: not shipped, so a missing file is one line, not a traceback.

The line names the file, where it comes from and the command that fetches it, and the
script exits with 77, which ``make bench`` reports as skipped.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
READERS = [
    "bench_gametes",
    "bench_immigrate_accuracy",
    "bench_interactions",
    "bench_irelief_accuracy",
    "bench_ldm_rfe",
    "bench_sbsmf",
]


@pytest.fixture
def datasets(monkeypatch, tmp_path):
    """``benchmarks/_datasets.py`` with ``DMARGIN_DATA`` an empty folder."""
    monkeypatch.setenv("DMARGIN_DATA", str(tmp_path / "empty"))
    spec = importlib.util.spec_from_file_location("_bench_datasets", BENCH / "_datasets.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_missing_file_ends_the_loader_in_one_line(datasets, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        datasets.load("heart")
    assert info.value.code == datasets.SKIPPED == 77
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    path = tmp_path / "empty" / "heart" / "heart_statlog.tsv.gz"
    url = (
        "https://github.com/EpistasisLab/pmlb/raw/0820182add20998ed3f88b30efd273107286c695/"
        "datasets/heart_statlog/heart_statlog.tsv.gz"
    )
    assert f"skipped: no data file {path} (DMARGIN_DATA)" in err, err
    assert f"get it with: curl -fL --create-dirs -o {path} {url}" in err, err


def test_every_file_the_benchmarks_read_names_its_origin(datasets):
    quoted = re.compile(r"\"([a-z0-9-]+/[A-Za-z0-9_ .-]+\.(?:tsv\.gz|mat|csv|csv\.gz|rda|data))\"")
    registry = (BENCH / "_datasets.py").read_text().split("# registry")[1]
    files = set(quoted.findall(registry)).union(
        *(quoted.findall((BENCH / f"{name}.py").read_text()) for name in READERS)
    )
    assert len(files) >= 25, files
    for rel in sorted(files) + ["gametes/x.tsv.gz", "rebate-benchmark/core2way"]:
        url, what = datasets.source(rel)
        assert (url or "").startswith("https://github.com/") or "github.com" in what, (rel, what)


@pytest.mark.slow
def test_a_benchmark_without_its_data_is_skipped_in_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run = subprocess.run(
        [sys.executable, str(BENCH / "bench_sbsmf.py"), "--quick"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DMARGIN_DATA": str(empty)},
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert run.returncode == 77, (run.returncode, run.stderr[-3000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench_sbsmf: skipped: no data file "), lines
    assert "mushroom.tsv.gz" in lines[0] and "curl -fL" in lines[0], lines
