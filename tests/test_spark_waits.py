"""Every wait on Spark is bounded and says what happened.

A job whose result never reaches Python, or that is never submitted, ends in
``ClusterStalledError`` after ``dmargin.stall-timeout``; a cluster without
executors for as long is read the same way (a fake context: a local master
always has its driver's executor); a SparkContext stopped, or its JVM killed,
under a fit ends in one ``SparkStoppedError`` naming it, not in a
NullPointerException or a refused connection from the cleanup.
"""

import json
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import dask
import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin._cluster import ClusterStalledError
from dmargin.spark import _watch
from dmargin.spark import fit as spark_fit

pytestmark = [pytest.mark.spark]


def _frame(spark, n=400, a=6, partitions=2):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, a))
    pdf = pd.DataFrame(X, columns=[f"f{j}" for j in range(a)])
    pdf["label"] = (X[:, 0] > 0).astype(int)
    return spark.createDataFrame(pdf).repartition(partitions)


@pytest.fixture
def stuck(spark, monkeypatch):
    """``sc.runJob`` replaced: ``stuck(after_job)`` makes the next call run the job
    (or not) and then wait until the test ends, as a driver whose result is lost."""
    sc = spark.sparkContext
    release = threading.Event()
    real = sc.runJob

    def install(after_job):
        def run_job(rdd, runner, partitions=None, *args):
            if after_job:
                real(rdd, runner, partitions, *args)
            release.wait(120)
            raise RuntimeError("released by the test")

        monkeypatch.setattr(sc, "runJob", run_job)

    yield install
    release.set()


@pytest.mark.parametrize(
    "after_job, state",
    [
        (True, "the spark job ended and its result has not reached python"),
        (False, "the spark job has not been submitted"),
    ],
)
def test_a_job_that_does_not_come_back_ends_in_a_stall_error(spark, stuck, after_job, state):
    df = _frame(spark)
    stuck(after_job)
    started = time.monotonic()
    with dask.config.set({"dmargin.stall-timeout": "2s"}):
        with pytest.raises(ClusterStalledError) as info:
            spark_fit(dmargin.ReliefF(n_neighbors=5), df)
    seconds = time.monotonic() - started
    message = str(info.value).lower()
    assert state in message and "for 2 s" in message and "stall-timeout" in message, message
    assert "the local master local[2,3]" in message
    assert seconds < 30, seconds


def test_a_fit_after_a_stall_error_runs_on_the_same_session(spark, stuck, monkeypatch):
    df = _frame(spark)
    stuck(True)
    with dask.config.set({"dmargin.stall-timeout": "1s"}):
        with pytest.raises(ClusterStalledError):
            spark_fit(dmargin.ReliefF(n_neighbors=5), df)
    monkeypatch.undo()  # the real runJob again
    X = df.toPandas()
    got = spark_fit(dmargin.ReliefF(n_neighbors=5), df)
    ref = dmargin.ReliefF(n_neighbors=5).fit(X.drop(columns="label").to_numpy(), X["label"])
    np.testing.assert_allclose(got.feature_importances_, ref.feature_importances_, atol=1e-10)


class _FakeContext:
    """A SparkContext as the watchdog reads it: its master, the group's jobs and
    their states, its executors besides the driver."""

    def __init__(self, master, jobs, executors):
        self.master = master
        tracker = SimpleNamespace(
            getJobIdsForGroup=lambda group: list(jobs),
            getJobInfo=lambda job: SimpleNamespace(status=jobs[job]),
        )
        self.statusTracker = lambda: tracker
        status = SimpleNamespace(size=lambda: executors + 1)
        context = SimpleNamespace(getExecutorMemoryStatus=lambda: status)
        self._jsc = SimpleNamespace(sc=lambda: context)


@pytest.mark.parametrize(
    "master, jobs, executors, state",
    [
        ("local[2]", {}, 0, "the Spark job has not been submitted"),
        ("local[2]", {0: "RUNNING"}, 0, None),
        ("local[2]", {0: "UNKNOWN"}, 0, None),
        ("local[2]", {0: "SUCCEEDED"}, 0, "the Spark job ended and its result has not"),
        ("local[2]", {0: "SUCCEEDED", 1: "FAILED"}, 0, "the Spark job ended"),
        ("local[2]", {0: "SUCCEEDED", 1: "RUNNING"}, 0, None),
        ("yarn", {0: "RUNNING"}, 0, "Spark has no executor"),
        ("yarn", {0: "RUNNING"}, 3, None),
        ("spark://head:7077", {0: "SUCCEEDED"}, 3, "the Spark job ended"),
    ],
)
def test_the_watchdog_reads_what_keeps_a_job_from_finishing(master, jobs, executors, state):
    got = _watch._state(_FakeContext(master, jobs, executors), "dmargin-0")
    assert (got is None) if state is None else got.startswith(state), got


def test_a_stall_message_on_a_cluster_counts_its_executors():
    sc = _FakeContext("spark://head:7077", {0: "RUNNING"}, 0)
    message = _watch._message(sc, "Spark has no executor", "tiles over x", 60)
    assert message.startswith("Spark has no executor for 60 s during tiles over x")
    assert "spark://head:7077 has 0 executor(s) besides the driver" in message
    assert "call fit again" in message and "'dmargin.stall-timeout': '10m'" in message


_STOPPED = """
import json, sys, threading, time, warnings
warnings.simplefilter("ignore")
import numpy as np, pandas as pd, psutil, dmargin
from dmargin.spark import fit, local_session

spark = local_session("local[2]")
rng = np.random.default_rng(5)
X = rng.normal(size=(40_000, 16)); y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
pdf = pd.DataFrame(X, columns=[f"f{j}" for j in range(16)]); pdf["label"] = y
df = spark.createDataFrame(pdf).repartition(2).cache(); df.count()
fit(dmargin.IRelief(max_iter=1, tol=0), df.limit(2000))  # workers up, kernels compiled
est = dmargin.IRelief(max_iter=50, tol=0)


def stop():
    time.sleep(4)  # inside the exact fit's tiles
    if sys.argv[1] == "stop":
        spark.sparkContext.stop()
    else:
        for proc in psutil.Process().children(recursive=True):
            if "java" in proc.name():
                proc.kill()


threading.Thread(target=stop, daemon=True).start()
started = time.monotonic()
try:
    fit(est, df)
    out = {"raised": None}
except BaseException as exc:
    out = {"raised": f"{type(exc).__module__}.{type(exc).__name__}", "message": str(exc)}
out["seconds"] = time.monotonic() - started
out["fitted"] = hasattr(est, "feature_importances_")
print(json.dumps(out), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_a_spark_driver_stopped_under_a_fit_gets_one_clear_error(tmp_path, how):
    pytest.importorskip("psutil")
    script = tmp_path / "stopped.py"
    script.write_text(_STOPPED)
    done = subprocess.run(
        [sys.executable, str(script), how], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["raised"] == "dmargin.spark._watch.SparkStoppedError", out
    reason = "was stopped" if how == "stop" else "JVM does not answer"
    assert reason in out["message"] and "call fit again" in out["message"], out
    assert not out["fitted"]
    assert out["seconds"] < 60, out
