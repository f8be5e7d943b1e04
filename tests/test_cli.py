"""``dmargin select`` as a user runs it: CSV and Parquet in, CSV/JSON out, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dmargin.cli import main


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    y = np.where(rng.random(120) < 0.5, "case", "control")
    X = rng.normal(size=(120, 5))
    X[:, 2] += 2.5 * (y == "case")
    return pd.DataFrame(X, columns=["a", "b", "signal", "d", "e"]).assign(status=y)


@pytest.fixture(scope="module")
def csv_file(frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_csv_to_csv_ranking(csv_file, tmp_path):
    out = tmp_path / "rank.csv"
    assert main(["select", str(csv_file), "--label", "status", "--out", str(out), "-q"]) == 0
    table = pd.read_csv(out)
    assert table["feature"].iloc[0] == "signal"
    assert list(table["rank"]) == [1, 2, 3, 4, 5]


def test_parquet_directory_immigrate_json_with_interactions(frame, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "table"
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        part = frame.iloc[rows]
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), folder / f"part-{i}.parquet")
    out = tmp_path / "rank.json"
    assert main(["select", str(folder), "--label", "status", "--method", "immigrate",
                 "--top", "3", "--out", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert [r["feature"] for r in doc["ranking"]][0] == "signal"
    assert len(doc["ranking"]) == 3 and len(doc["interactions"]) == 3
    assert {"feature_i", "feature_j", "weight"} <= set(doc["interactions"][0])


def test_plot_is_written(csv_file, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "w.png"
    assert main(["select", str(csv_file), "--label", "status", "--method", "immigrate",
                 "--plot", str(png), "--out", str(tmp_path / "r.csv"), "-q"]) == 0
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("argv, message", [
    (["select", "missing.csv", "--label", "y"], "no such file"),
    (["select", "{csv}", "--label", "nope"], "has no column 'nope'"),
    (["select", "{csv}", "--label", "status", "--out", "r.txt"], "use a .csv or .json"),
    (["select", "{csv}", "--label", "status", "--top", "0"], "--top must be a positive"),
    (["select", "{csv}", "--label", "a"], "not numeric"),
])
def test_user_errors_are_one_line(csv_file, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{csv}", str(csv_file)) for a in argv]
    assert main(argv + ["-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dmargin: error:") and "\n" not in err
    assert message.lower() in err.lower()


def test_installed_command_runs(csv_file, tmp_path):
    exe = Path(sys.executable).parent / "dmargin"
    if not exe.exists():
        pytest.skip("the dmargin command is installed by 'pip install -e .' (make test does it)")
    run = subprocess.run([str(exe), "select", str(csv_file), "--label", "status", "--top", "2"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "signal" in run.stdout and "done in" in run.stderr


@pytest.mark.parametrize("method", ["sbs-mf", "ldm-rfe"])
def test_elimination_methods_rank_the_signal_first(csv_file, tmp_path, method):
    out = tmp_path / "rank.csv"
    assert main(["select", str(csv_file), "--label", "status", "--method", method,
                 "--out", str(out), "-q"]) == 0
    table = pd.read_csv(out)
    assert table["feature"].iloc[0] == "signal"
    assert table["rfe_rank"].iloc[0] == 1


def test_progress_bar_on_stderr(csv_file, tmp_path, capsys):
    assert main(["select", str(csv_file), "--label", "status", "--method", "immigrate",
                 "--out", str(tmp_path / "r.csv")]) == 0
    err = capsys.readouterr().err
    assert "[" in err and "IMMIGRATE step" in err and "/<=10" in err and "done in" in err
