"""``dmargin select --spark MASTER``: the same ranking, in the same format, as the
command without Spark, from a Parquet file, a Spark-written directory and a CSV file;
its one-line errors.

The in-process runs use the test session's SparkSession (the command uses the
active session of its process); a few runs start their own in a subprocess, as a
user's shell does.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin import cli
from dmargin.cli import main

pytestmark = [
    pytest.mark.spark,
    # pyspark's own notice about pandas 3 (createDataFrame from pandas)
    pytest.mark.filterwarnings("ignore::FutureWarning:pyspark"),
]


@pytest.fixture(scope="module")
def frame():
    """300 rows: two informative features of five, integer labels, an id column."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 5))
    y = (X[:, 1] + 0.6 * X[:, 3] + 0.3 * rng.normal(size=300) > 0).astype(np.int64)
    return pd.DataFrame(X, columns=["a", "b", "c", "d", "e"]).assign(
        y=y, id=np.arange(300) * 7 % 300
    )


@pytest.fixture(scope="module")
def parquet_file(frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_spark") / "data.parquet"
    frame.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def csv_file(frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_spark") / "data.csv"
    frame.to_csv(path, index=False)
    return path


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert err.startswith("dmargin: error: ") and "\n" not in err, err
    return err


def _ranking(path):
    if str(path).endswith(".json"):
        return pd.DataFrame(json.loads(path.read_text())["ranking"])
    return pd.read_csv(path)


def _same_ranking(spark_out, plain_out, atol=1e-10):
    """The two outputs: the same columns, features and order; scores to ``atol``."""
    a, b = _ranking(spark_out), _ranking(plain_out)
    assert list(a.columns) == list(b.columns)
    assert list(a["feature"]) == list(b["feature"]) and list(a["index"]) == list(b["index"])
    np.testing.assert_allclose(a["score"], b["score"], rtol=0, atol=atol)


def _both(data, tmp_path, *options, suffix=".json"):
    """The command on ``data`` with ``--spark`` (the active session) and without."""
    spark_out, plain_out = tmp_path / f"spark{suffix}", tmp_path / f"plain{suffix}"
    base = ["select", str(data), "--label", "y", "-q", *options]
    assert main(base + ["--spark", "local[2]", "--out", str(spark_out)]) == 0
    assert main(base + ["--out", str(plain_out)]) == 0
    return spark_out, plain_out


# -- the same ranking ------------------------------------------------------------------


def test_parquet_file_on_spark_equals_the_command_without_it(spark, parquet_file, tmp_path, capsys):
    spark_out, plain_out = _both(parquet_file, tmp_path, "--exclude", "id")
    _same_ranking(spark_out, plain_out)
    # The session the test process holds is used, and left running.
    assert spark.range(3).count() == 3
    # CSV output: the same header and rows.
    spark_csv, plain_csv = _both(
        parquet_file, tmp_path, "--exclude", "id", "--top", "3", suffix=".csv"
    )
    _same_ranking(spark_csv, plain_csv)
    assert spark_csv.read_text().splitlines()[0] == plain_csv.read_text().splitlines()[0]
    assert len(_ranking(spark_csv)) == 3


def test_sampled_anchors_on_spark_are_the_rows_the_command_samples(spark, parquet_file, tmp_path):
    # One small Parquet file is one partition in file order: the same anchors.
    spark_out, plain_out = _both(
        parquet_file,
        tmp_path,
        "--features",
        "a,b,c,d,e",
        "--method",
        "multisurf",
        "--anchors",
        "40",
        "--random-state",
        "3",
    )
    _same_ranking(spark_out, plain_out)


def test_progress_says_spark_and_its_master(spark, parquet_file, tmp_path, capsys):
    assert (
        main(
            [
                "select",
                str(parquet_file),
                "--label",
                "y",
                "--exclude",
                "id",
                "--spark",
                "local[2]",
                "--top",
                "2",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert (
        f"fitting ReliefF on 300 rows x 5 features on Spark {spark.sparkContext.master}"
        in captured.err
    )
    assert captured.out.splitlines()[0].split() == ["rank", "feature", "index", "score"]


def test_spark_written_directory_equals_the_command_without_spark(spark, frame, tmp_path):
    """A directory of part files, ``_SUCCESS`` and ``.crc`` files, as Spark writes it."""
    folder = tmp_path / "table"
    spark.createDataFrame(frame).repartition(3).write.parquet(str(folder))
    assert (folder / "_SUCCESS").exists()
    assert len(list(folder.glob("part-*.parquet"))) == 3
    # Exact ReliefF: every pair of rows, so the same scores in any row order.
    spark_out, plain_out = _both(folder, tmp_path, "--exclude", "id")
    _same_ranking(spark_out, plain_out)


def test_csv_on_spark_equals_the_command_without_it(spark, csv_file, tmp_path):
    spark_out, plain_out = _both(
        csv_file, tmp_path, "--features", "e,a,b,d", "--method", "irelief", "--max-iter", "5"
    )
    _same_ranking(spark_out, plain_out)
    assert list(_ranking(spark_out).sort_values("index")["feature"]) == ["e", "a", "b", "d"]


def test_rows_without_a_label_are_named_or_dropped(spark, frame, tmp_path, capsys):
    data = frame.astype({"y": "float64"})
    data.loc[[5, 77], "y"] = np.nan
    path = tmp_path / "holes.csv"
    data.to_csv(path, index=False)
    base = ["select", str(path), "--label", "y", "--exclude", "id", "-q", "--spark", "local[2]"]
    assert main(base) == 2
    err = _one_line(capsys)
    assert "'y'" in err and "2 null" in err and "--missing-label drop" in err
    spark_out, plain_out = _both(path, tmp_path, "--exclude", "id", "--missing-label", "drop")
    _same_ranking(spark_out, plain_out)


# -- errors: one line, before Spark when they can ----------------------------------------


def test_spark_and_scheduler_together_are_refused(parquet_file, capsys):
    assert (
        main(
            [
                "select",
                str(parquet_file),
                "--label",
                "y",
                "--spark",
                "local[2]",
                "--scheduler",
                "tcp://127.0.0.1:8786",
            ]
        )
        == 2
    )
    assert "--spark and --scheduler" in _one_line(capsys)


@pytest.mark.parametrize("name", ["data.csv.zip", "data.csv.xz"])
def test_text_spark_cannot_read_is_refused_before_it_starts(name, tmp_path, capsys, monkeypatch):
    (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr(cli, "spark_session", lambda master: pytest.fail("Spark started"))
    assert main(["select", str(tmp_path / name), "--label", "y", "--spark", "local[2]"]) == 2
    assert ".gz or .bz2" in _one_line(capsys)


def test_columns_are_checked_as_without_spark(spark, parquet_file, csv_file, tmp_path, capsys):
    for data in (parquet_file, csv_file):
        for extra in (["--features", "a,zz"], ["--label", "nope"]):
            argv = ["select", str(data), "--label", "y", *extra, "-q"]
            assert main(argv) == 2
            plain = _one_line(capsys)
            assert main(argv + ["--spark", "local[2]"]) == 2
            assert _one_line(capsys) == plain
    text = pd.read_csv(csv_file).assign(site="x")
    text.to_csv(tmp_path / "site.csv", index=False)
    assert (
        main(["select", str(tmp_path / "site.csv"), "--label", "y", "-q", "--spark", "local[2]"])
        == 2
    )
    assert "not numeric" in (err := _one_line(capsys)) and "--exclude site" in err


def test_a_long_fit_on_spark_is_refused_before_the_fit(spark, tmp_path, monkeypatch, capsys):
    """40,000 x 20 (counted by Spark): exact I-RELIEF is estimated over ten minutes."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40_000, 20))
    path = tmp_path / "long.parquet"
    pd.DataFrame(X, columns=[f"f{i}" for i in range(20)]).assign(
        y=(X[:, 0] > 0).astype(np.int64)
    ).to_parquet(path)
    monkeypatch.setattr(cli, "_spark_fit", lambda *a: pytest.fail("the fit started"))
    assert (
        main(
            [
                "select",
                str(path),
                "--label",
                "y",
                "--method",
                "irelief",
                "-q",
                "--spark",
                "local[2]",
            ]
        )
        == 2
    )
    err = _one_line(capsys)
    assert "40,000 rows x 20 features" in err and "--yes" in err and "--anchors" in err


def _on_local_spark(path):
    return ["select", str(path), "--label", "y", "--exclude", "id", "-q", "--spark", "local[2]"]


def test_a_spark_driver_stopped_under_the_fit_is_one_line(spark, parquet_file, monkeypatch, capsys):
    from dmargin.spark import SparkStoppedError

    def stopped(*args):
        raise SparkStoppedError("the SparkContext was stopped during tiles over 2 row blocks: ...")

    monkeypatch.setattr(cli, "_spark_fit", stopped)
    assert main(_on_local_spark(parquet_file)) == 2
    err = _one_line(capsys)
    assert err.startswith("dmargin: error: the SparkContext was stopped during tiles"), err


def test_a_spark_read_that_never_runs_is_one_line_after_the_stall_timeout(
    spark, parquet_file, monkeypatch, capsys
):
    import threading

    import dask

    release = threading.Event()
    frame_class = type(spark.range(1))  # pyspark's classic DataFrame
    monkeypatch.setattr(frame_class, "count", lambda self: release.wait(60))  # no job submitted
    monkeypatch.setattr(cli, "_spark_fit", lambda *a: pytest.fail("the fit started"))
    try:
        with dask.config.set({"dmargin.stall-timeout": "1s"}):
            assert main(_on_local_spark(parquet_file)) == 2
    finally:
        release.set()
    err = _one_line(capsys)
    assert "the spark job has not been submitted for 1 s during counting the rows" in err.lower()
    assert "stall-timeout" in err


# -- in a process of its own -------------------------------------------------------------


def _run(args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "dmargin.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_the_command_starts_its_own_local_spark(spark, parquet_file, tmp_path):
    # (the fixture: skipped as the other Spark tests where Java or pyspark is missing)
    out, plain = tmp_path / "spark.json", tmp_path / "plain.json"
    run = _run(
        [
            "select",
            str(parquet_file),
            "--label",
            "y",
            "--exclude",
            "id",
            "--spark",
            "local[2]",
            "--out",
            str(out),
        ]
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "on Spark local[2]" in run.stderr and "Traceback" not in run.stderr
    # Spark's own log stays out of the command's output (the JVM's start included).
    assert "Setting default log level" not in run.stderr and " WARN " not in run.stderr
    assert (
        main(
            [
                "select",
                str(parquet_file),
                "--label",
                "y",
                "--exclude",
                "id",
                "-q",
                "--out",
                str(plain),
            ]
        )
        == 0
    )
    assert out.read_text() == plain.read_text()


def test_ctrl_c_cancels_the_spark_fit_with_one_line_and_130(spark, tmp_path):
    """SIGINT to the command's process group, as a terminal's Ctrl-C: the Spark jobs
    are cancelled, the command says so in one line, writes nothing, and leaves no
    process of its own behind (the JVM, its Python workers)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 20))
    pd.DataFrame(X, columns=[f"f{j}" for j in range(20)]).assign(
        y=(X[:, 0] + X[:, 1] > 0).astype(np.int64)
    ).to_parquet(tmp_path / "data.parquet")
    out = tmp_path / "ranking.csv"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dmargin.cli",
            "select",
            "data.parquet",
            "--label",
            "y",
            "--method",
            "irelief",
            "--max-iter",
            "50",
            "--spark",
            "local[2]",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        for line in child.stderr:
            if "fitting IRelief" in line:
                break
        else:
            pytest.fail(f"the fit did not start: {child.communicate(timeout=60)}")
        time.sleep(5)  # into the fit's jobs
        assert child.poll() is None, "the fit ended before the signal: make it longer"
        os.killpg(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=300)
        assert child.returncode == 130, err
        assert err.strip().splitlines()[-1] == "dmargin: interrupted", err
        assert "Traceback" not in err and "Exception" not in err, err
        assert not out.exists()
        for _ in range(600):  # a hang guard, not a time bound: the group's last process
            try:
                os.killpg(child.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            pytest.fail("a process of the command outlived it")
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def test_without_pyspark_the_error_names_the_install_line(parquet_file):
    code = (
        "import sys; sys.modules['pyspark'] = None; from dmargin.cli import main; "
        f"sys.exit(main(['select', {str(parquet_file)!r}, '--label', 'y', "
        "'--spark', 'local[2]']))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [run.stderr.strip()]
    assert "pip install 'dmargin[spark]'" in run.stderr


def test_without_java_the_error_says_so(parquet_file, tmp_path):
    pytest.importorskip("pyspark")
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java there
    run = _run(["select", str(parquet_file), "--label", "y", "--spark", "local[2]"], env=env)
    assert run.returncode == 2
    assert run.stderr.strip().startswith("dmargin: error: --spark needs Java 17")
    assert len(run.stderr.strip().splitlines()) == 1
    assert dmargin.__version__  # the package imported without Spark


def test_a_url_is_data_only_with_spark(capsys):
    from dmargin.cli._io import is_remote

    assert is_remote("hdfs:///data/events") and is_remote("s3a://bucket/table/")
    assert is_remote("dbfs:/mnt/table") and not is_remote("file:///tmp/x.parquet")
    assert not is_remote("C:/data/x.parquet") and not is_remote("data.parquet")
    assert main(["select", "s3a://bucket/table/", "--label", "y"]) == 2
    assert "no such file" in _one_line(capsys)


def test_the_spark_page_has_a_row_for_every_public_estimator():
    from pathlib import Path

    from dmargin._registry import ESTIMATORS

    text = (Path(__file__).resolve().parents[1] / "docs" / "spark.md").read_text()
    rows = {m.group(1) for m in re.finditer(r"^\| `(\w+)` \|", text, re.M)}
    public = {e.name for e in ESTIMATORS}
    assert rows <= public
    # A variant (a subclass of an estimator with a row) runs on Spark as that estimator.
    unlisted = [n for n in public if not {k.__name__ for k in getattr(dmargin, n).__mro__} & rows]
    assert not unlisted, f"docs/spark.md has no row for {unlisted}"
