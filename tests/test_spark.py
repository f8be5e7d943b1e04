"""Same answer on Spark: every public estimator fitted on a Spark DataFrame
(``dmargin.spark.fit``) equals its in-process fit.

The estimators and the comparison are :mod:`test_modes`'s: every public
fitted attribute, floats to ``1e-10`` absolute, everything else exactly.
The DataFrames keep the in-process rows' order (a row-number column, range
partitions sorted within), so sampled anchors are the same rows whatever the
partitioning; their partitions are 1, 3 and 17, the features numeric columns
or one MLlib vector column (every estimator on 3 partitions of numeric columns;
one of each kind of fit also on 1 partition and on 17 of a vector column).
"""

import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin.spark import SparkInputError
from dmargin.spark import fit as spark_fit

from .test_modes import CASES, assert_estimator_equal, frames

pytestmark = [pytest.mark.spark]

ROW = "__row"


def spark_frame(spark, X, y, partitions, vector=False, label="label"):
    """``(X, y)`` as a Spark DataFrame of ``partitions`` range partitions in row order;
    ``vector``: the features as one MLlib vector column ``features``."""
    pdf = pd.DataFrame(
        np.asarray(X, dtype=np.float64), columns=[f"f{j}" for j in range(np.shape(X)[1])]
    )
    pdf[label] = np.asarray(y)
    pdf[ROW] = np.arange(len(pdf))
    df = spark.createDataFrame(pdf).repartitionByRange(partitions, ROW).sortWithinPartitions(ROW)
    if vector:
        from pyspark.ml.feature import VectorAssembler

        df = (
            VectorAssembler(inputCols=list(pdf.columns[:-2]), outputCol="features")
            .transform(df)
            .select("features", label, ROW)
        )
    return df


def fit_on_spark(est, df, vector=False, label="label"):
    if vector:
        return spark_fit(est, df, label=label, features_col="features")
    features = [c for c in df.columns if c not in (label, ROW)]
    return spark_fit(est, df, label=label, features=features)


def _cases():
    for p in CASES:
        make, datasets, _, _ = p.values
        yield pytest.param(make, datasets[-1], id=p.id)


def _data(request, dataset):
    X, y = frames(request, dataset)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def _strip_spark(est):
    """The fitted attributes a numpy fit has too (``feature_names_in_`` and
    ``spark_stats_`` come from the DataFrame)."""
    for name in ("spark_stats_", "feature_names_in_"):
        est.__dict__.pop(name, None)
    return est


@pytest.mark.parametrize("make, dataset", list(_cases()))
def test_every_estimator_on_spark_equals_in_process(spark, request, make, dataset):
    X, y = _data(request, dataset)
    reference = make().fit(X, y)
    got = fit_on_spark(make(), spark_frame(spark, X, y, 3))
    assert got.spark_stats_.tasks > 0, "no task ran on Spark's executors"
    assert list(got.feature_names_in_) == [f"f{j}" for j in range(X.shape[1])]
    assert_estimator_equal(_strip_spark(got), reference)


PARTITIONING = [
    pytest.param(
        lambda: dmargin.ReliefF(n_neighbors=4, n_anchors=60, random_state=3), id="ReliefF-anchors"
    ),
    pytest.param(lambda: dmargin.ReliefF(n_neighbors=4), id="ReliefF-exact"),
    pytest.param(lambda: dmargin.IRelief(max_iter=4, tol=0), id="IRelief"),
    pytest.param(lambda: dmargin.MultiSURF(), id="MultiSURF"),
    pytest.param(lambda: dmargin.SBSMF(n_features_to_select=4, step=4, n_estimators=4), id="SBSMF"),
]


@pytest.mark.parametrize(
    "partitions, vector", [(1, False), (17, True)], ids=["1-columns", "17-vector"]
)
@pytest.mark.parametrize("make", PARTITIONING)
def test_partitions_and_vector_column_change_nothing(spark, blobs_binary, make, partitions, vector):
    X, y = blobs_binary
    reference = make().fit(X, y)
    got = fit_on_spark(make(), spark_frame(spark, X, y, partitions, vector=vector), vector=vector)
    column = "features[{}]" if vector else "f{}"
    assert list(got.feature_names_in_) == [column.format(j) for j in range(X.shape[1])]
    assert_estimator_equal(_strip_spark(got), reference)


# ---------------------------------------------------------------------------
# Bad input: one clear line naming the column, before any fit
# ---------------------------------------------------------------------------


def _frame(spark, rows, schema, partitions=2):
    return spark.createDataFrame(rows, schema).coalesce(partitions)


def test_null_labels_are_refused_naming_the_column(spark):
    rows = [(float(i), None if i == 3 else i % 2) for i in range(20)]
    df = _frame(spark, rows, "x double, cls int")
    with pytest.raises(SparkInputError, match=r"label column 'cls' has 1 null values.*dropna"):
        spark_fit(dmargin.ReliefF(), df, label="cls")


def test_null_features_are_refused_or_missing_values_where_the_estimator_takes_them(spark):
    rows = [(float(i), None if i in (2, 5) else float(i % 3), i % 2) for i in range(30)]
    df = _frame(spark, rows, "a double, b double, y int")
    with pytest.raises(SparkInputError, match=r"feature 'b' has 2 null or NaN values"):
        spark_fit(dmargin.Immigrate(max_iter=2), df, label="y")
    X = np.array([[r[0], np.nan if r[1] is None else r[1]] for r in rows])
    y = np.array([r[2] for r in rows])
    reference = dmargin.ReliefF(n_neighbors=3).fit(X, y)  # ReliefF takes missing values
    got = spark_fit(dmargin.ReliefF(n_neighbors=3), df, label="y")
    np.testing.assert_allclose(
        got.feature_importances_, reference.feature_importances_, rtol=0, atol=1e-10
    )


def test_string_and_vector_columns_among_features_are_refused(spark):
    rows = [(float(i), "a" if i % 2 else "b", i % 2) for i in range(10)]
    df = _frame(spark, rows, "x double, city string, y int")
    with pytest.raises(SparkInputError, match=r"'city' is string, not numeric.*StringIndexer"):
        spark_fit(dmargin.ReliefF(), df, label="y")
    with pytest.raises(SparkInputError, match=r"no label column 'label'"):
        spark_fit(dmargin.ReliefF(), df)
    with pytest.raises(SparkInputError, match=r"'x' is double, not an MLlib vector"):
        spark_fit(dmargin.ReliefF(), df, label="y", features_col="x")


def test_a_vector_column_of_mixed_sizes_is_refused(spark):
    from pyspark.ml.linalg import Vectors

    rows = [
        (Vectors.dense([1.0, 2.0, float(i)]) if i != 4 else Vectors.sparse(4, [0], [1.0]), i % 2)
        for i in range(12)
    ]
    df = spark.createDataFrame(rows, ["features", "y"])
    with pytest.raises(SparkInputError, match=r"'features' holds vectors of sizes 3 to 4"):
        spark_fit(dmargin.ReliefF(), df, label="y", features_col="features")


def test_infinite_values_and_no_rows_are_refused(spark):
    rows = [(float(i), float("inf") if i == 1 else 1.0, i % 2) for i in range(10)]
    df = _frame(spark, rows, "a double, b double, y int")
    with pytest.raises(SparkInputError, match=r"feature 'b' has 1 infinite values"):
        spark_fit(dmargin.ReliefF(), df, label="y")
    with pytest.raises(SparkInputError, match=r"has no rows"):
        spark_fit(dmargin.ReliefF(), df.limit(0), label="y")


def test_a_label_of_one_class_gets_the_estimators_error(spark):
    df = _frame(
        spark, [(float(i), float(i * i), 1) for i in range(10)], "a double, b double, y int"
    )
    with pytest.raises(ValueError, match="class") as info:
        spark_fit(dmargin.ReliefF(), df, label="y")
    assert "Traceback" not in str(info.value)


def test_empty_partitions_and_200_partitions(spark, blobs_binary):
    from pyspark.sql import functions as F

    X, y = blobs_binary

    def anchors():
        return dmargin.ReliefF(n_neighbors=4, n_anchors=30, random_state=0)

    df = spark_frame(spark, X, y, 200)
    assert df.rdd.getNumPartitions() > 60  # range bounds from a sample: some may merge
    got = fit_on_spark(anchors(), df)
    np.testing.assert_allclose(
        got.feature_importances_, anchors().fit(X, y).feature_importances_, rtol=0, atol=1e-10
    )
    keep = (np.arange(len(y)) < 16) | (np.arange(len(y)) >= 40)
    # Checkpointed first: the filter is not pushed below the range partitioning.
    holes = (
        spark_frame(spark, X, y, 8).localCheckpoint().filter((F.col(ROW) < 16) | (F.col(ROW) >= 40))
    )
    assert 0 in holes.rdd.glom().map(len).collect()
    got = fit_on_spark(anchors(), holes)
    np.testing.assert_allclose(
        got.feature_importances_,
        anchors().fit(X[keep], y[keep]).feature_importances_,
        rtol=0,
        atol=1e-10,
    )


# ---------------------------------------------------------------------------
# A refit never reads an earlier fit's state
# ---------------------------------------------------------------------------


def test_a_refit_with_one_parameter_changed_gives_the_other_result(spark, blobs_binary):
    X, y = blobs_binary
    df = spark_frame(spark, X, y, 3)
    for params in (
        {"n_neighbors": 4},
        {"n_neighbors": 7},
        {"n_neighbors": 4, "n_anchors": 20, "random_state": 0},
        {"n_neighbors": 4, "n_anchors": 20, "random_state": 1},
    ):
        got = fit_on_spark(dmargin.ReliefF(**params), df).feature_importances_
        np.testing.assert_allclose(
            got,
            dmargin.ReliefF(**params).fit(X, y).feature_importances_,
            rtol=0,
            atol=1e-10,
            err_msg=str(params),
        )
    first = fit_on_spark(dmargin.IRelief(max_iter=3, tol=0, sigma=1.0), df).feature_importances_
    other = fit_on_spark(dmargin.IRelief(max_iter=3, tol=0, sigma=2.0), df).feature_importances_
    assert np.abs(first - other).max() > 1e-6
    np.testing.assert_allclose(
        other,
        dmargin.IRelief(max_iter=3, tol=0, sigma=2.0).fit(X, y).feature_importances_,
        rtol=0,
        atol=1e-10,
    )


# ---------------------------------------------------------------------------
# Failures: a killed Python worker, Ctrl-C on the driver, a driver-side limit
# ---------------------------------------------------------------------------


def _spark_workers():
    """The Python worker processes of this process's Spark (forked by pyspark.daemon)."""
    psutil = pytest.importorskip("psutil")
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if (
                "pyspark.daemon" in " ".join(proc.cmdline())
                and proc.parent() is not None
                and "pyspark.daemon" in " ".join(proc.parent().cmdline())
            ):
                out.append(proc)
        except psutil.Error:
            pass
    return out


def _failed_tasks(sc, groups):
    tracker = sc.statusTracker()
    failed = 0
    for group in groups:
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info else ():
                stage_info = tracker.getStageInfo(stage)
                failed += stage_info.numFailedTasks if stage_info else 0
    return failed


def test_a_python_worker_killed_mid_job_is_retried_with_the_same_result(spark, monkeypatch):
    import threading

    import psutil

    from dmargin.spark import _scheduler, _watch

    rng = np.random.default_rng(5)
    # A pair of partitions' tile long enough (seconds) to be caught inside it: an
    # I-RELIEF iteration's soft tile (a k-nearest tile of these rows takes a quarter
    # of a second, over before a worker is seen busy).
    X = rng.normal(size=(40_000, 16))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)

    def make():
        return dmargin.IRelief(max_iter=1, tol=0)

    reference = make().fit(X, y)
    df = spark_frame(spark, X, y, 2).cache()
    df.count()
    undisturbed = fit_on_spark(make(), df).feature_importances_
    killed = []

    pairs = threading.Event()
    run_job = _scheduler._run_job

    def run_job_seen(sc, rdd, runner, what, *args):
        if "pairs" in what:
            pairs.set()
        return run_job(sc, rdd, runner, what, *args)

    monkeypatch.setattr(_scheduler, "_run_job", run_job_seen)

    def kill_a_busy_worker(stop):
        while not pairs.wait(0.1):  # the exact fit's job of pairs of partitions
            if stop.is_set():
                return
        while not stop.is_set() and not killed:
            workers = _spark_workers()
            for proc in workers:
                try:
                    proc.cpu_percent(None)
                except psutil.Error:
                    pass
            stop.wait(0.3)
            for proc in workers:
                try:
                    if proc.cpu_percent(None) > 50:  # inside a tile
                        proc.kill()
                        killed.append(proc.pid)
                        return
                except psutil.Error:
                    pass

    first_group = next(_watch._job_ids)
    stop = threading.Event()
    killer = threading.Thread(target=kill_a_busy_worker, args=(stop,))
    killer.start()
    try:
        got = fit_on_spark(make(), df)
    finally:
        stop.set()
        killer.join()
        df.unpersist()
    last_group = next(_watch._job_ids)
    assert killed, "no Python worker was busy long enough to be killed"
    groups = [f"dmargin-{i}" for i in range(first_group, last_group)]
    np.testing.assert_array_equal(got.feature_importances_, undisturbed)  # bit for bit
    np.testing.assert_allclose(
        got.feature_importances_, reference.feature_importances_, rtol=0, atol=1e-10
    )
    if not _failed_tasks(spark.sparkContext, groups):
        # Seen in some runs, alone and in the suite: the worker killed was busy, yet no
        # task of the fit's job groups is recorded as failed.  The weights above hold.
        pytest.xfail("the killed worker's task is not recorded as failed in the fit's groups")


_INTERRUPTED_FIT = """
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np, psutil, dmargin
from dmargin.spark import fit, local_session

spark = local_session("local[2]")
rng = np.random.default_rng(0)
X = rng.normal(size=(40_000, 10)); y = (X[:, 0] > 0).astype(int)
import pandas as pd
pdf = pd.DataFrame(X, columns=[f"f{j}" for j in range(10)]); pdf["label"] = y
df = spark.createDataFrame(pdf).repartition(2).cache(); df.count()
fit(dmargin.ReliefF(n_anchors=10, random_state=0), df)  # workers up, kernels compiled
print("fitting", flush=True)
try:
    fit(dmargin.ReliefF(), df)
    print(json.dumps({"interrupted": False}), flush=True)
    sys.exit(0)
except KeyboardInterrupt:
    stopped = time.monotonic()

def busy():
    n = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "pyspark.daemon" in " ".join(proc.cmdline()) and proc.cpu_percent(0.5) > 20:
                n += 1
        except psutil.Error:
            pass
    return n

while busy() and time.monotonic() - stopped < 60:
    pass
print(json.dumps({"interrupted": True, "idle_after": time.monotonic() - stopped,
                  "active_jobs": list(spark.sparkContext.statusTracker().getActiveJobsIds())}),
      flush=True)
"""


def test_ctrl_c_on_the_driver_cancels_the_job_and_no_executor_keeps_computing(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "interrupted_fit.py"
    script.write_text(_INTERRUPTED_FIT)
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "fitting"
        time.sleep(4)  # inside the exact fit's tiles
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
    finally:
        proc.kill()
    result = json.loads(out.strip().splitlines()[-1])
    assert result["interrupted"], "the exact fit ended before the interrupt"
    assert result["active_jobs"] == []
    assert result["idle_after"] < 30, result


_DRIVER_LIMIT = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np, dmargin
from pyspark.sql import functions as F
from dmargin.spark import fit, local_session

spark = local_session("local[2]", **{"spark.driver.maxResultSize": "1m"})
n, a = 200_000, 10
cols = [((F.col("id") * (7919 + 104729 * j)) % 1000 / 1000.0).alias(f"f{j}") for j in range(a)]
df = spark.range(n, numPartitions=4).select(*cols, (F.col("id") % 3 == 0).cast("int").alias("label"))
try:
    df.collect()
    collected = True
except Exception as exc:
    collected = "maxResultSize" not in str(exc)
est = fit(dmargin.ReliefF(n_neighbors=5, n_anchors=100, random_state=0), df)
ids = np.arange(n)
X = np.column_stack([((ids * (7919 + 104729 * j)) % 1000) / 1000.0 for j in range(a)])
y = (ids % 3 == 0).astype(int)
ref = dmargin.ReliefF(n_neighbors=5, n_anchors=100, random_state=0).fit(X, y)
from dmargin.spark import PartialsTooLargeError
try:  # exact: every tile's partials come back, over the limit
    fit(dmargin.ReliefF(n_neighbors=5), df.limit(20_000).repartition(4))
    too_large = "no error"
except PartialsTooLargeError as exc:
    too_large = str(exc)
print(json.dumps({"collected": collected, "rows_bytes": X.nbytes, "too_large": too_large,
                  "to_driver": est.spark_stats_.bytes_to_driver,
                  "diff": float(np.abs(est.feature_importances_ - ref.feature_importances_).max())}))
"""


def test_no_rows_come_to_the_driver_a_1_mb_result_limit_holds(tmp_path):
    """A sampled fit of 16 MB of rows stays under a 1 MB driver limit (which stops a
    collect() of the rows); an exact fit over it says how to fit instead."""
    import json
    import subprocess
    import sys

    script = tmp_path / "driver_limit.py"
    script.write_text(_DRIVER_LIMIT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["collected"] is False, "the 16 MB DataFrame passed the 1 MB limit"
    assert result["to_driver"] < 2**20 < result["rows_bytes"], result
    assert result["diff"] <= 1e-10, result
    assert "spark.driver.maxResultSize (1m)" in result["too_large"], result
    assert "n_anchors=1000" in result["too_large"], result


# ---------------------------------------------------------------------------
# The cost model tells the layouts apart, and its partials match a fit's
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, layout",
    [
        (lambda: dmargin.ReliefF(n_anchors=100, random_state=0), "sampled"),
        (lambda: dmargin.ReliefF(), "exact"),
        (lambda: dmargin.IRelief(max_iter=3, tol=0), "exact"),
    ],
    ids=["ReliefF-anchors", "ReliefF-exact", "IRelief-exact"],
)
def test_fit_cost_tells_the_layouts_apart_and_counts_the_partials(spark, make, layout):
    from dmargin.spark import fit_cost

    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 10))
    y = (X[:, 0] > 0).astype(int)
    cost = fit_cost(make(), 2000, 10, 4)
    assert cost.layout == layout
    assert cost.tasks_per_pass == (10 if layout == "exact" else 4)
    assert layout in str(cost) and "to the driver" in str(cost)
    got = fit_on_spark(make(), spark_frame(spark, X, y, 4)).spark_stats_
    assert cost.bytes_to_driver / 3 < got.bytes_to_driver < 3 * cost.bytes_to_driver, (
        got.bytes_to_driver,
        cost.bytes_to_driver,
    )
    assert got.jobs <= cost.jobs + 2


def test_text_labels_cross_without_pickle_and_equal_in_process(spark):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.where(X[:, 0] > 0, "yes", "no")
    pdf = pd.DataFrame(X, columns=list("abcd"))
    pdf["label"] = y
    got = spark_fit(dmargin.ReliefF(n_neighbors=5), spark.createDataFrame(pdf))
    reference = dmargin.ReliefF(n_neighbors=5).fit(X, y)
    assert list(got.classes_) == ["no", "yes"]
    np.testing.assert_allclose(
        got.feature_importances_, reference.feature_importances_, rtol=0, atol=1e-10
    )
