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
    pdf = pd.DataFrame(np.asarray(X, dtype=np.float64),
                       columns=[f"f{j}" for j in range(np.shape(X)[1])])
    pdf[label] = np.asarray(y)
    pdf[ROW] = np.arange(len(pdf))
    df = spark.createDataFrame(pdf).repartitionByRange(partitions, ROW).sortWithinPartitions(ROW)
    if vector:
        from pyspark.ml.feature import VectorAssembler

        df = VectorAssembler(inputCols=list(pdf.columns[:-2]), outputCol="features") \
            .transform(df).select("features", label, ROW)
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
    pytest.param(lambda: dmargin.ReliefF(n_neighbors=4, n_anchors=60, random_state=3),
                 id="ReliefF-anchors"),
    pytest.param(lambda: dmargin.ReliefF(n_neighbors=4), id="ReliefF-exact"),
    pytest.param(lambda: dmargin.IRelief(max_iter=4, tol=0), id="IRelief"),
    pytest.param(lambda: dmargin.MultiSURF(), id="MultiSURF"),
    pytest.param(lambda: dmargin.SBSMF(n_features_to_select=4, step=4, n_estimators=4),
                 id="SBSMF"),
]


@pytest.mark.parametrize("partitions, vector", [(1, False), (17, True)],
                         ids=["1-columns", "17-vector"])
@pytest.mark.parametrize("make", PARTITIONING)
def test_partitions_and_vector_column_change_nothing(spark, blobs_binary, make, partitions,
                                                     vector):
    X, y = blobs_binary
    reference = make().fit(X, y)
    got = fit_on_spark(make(), spark_frame(spark, X, y, partitions, vector=vector),
                       vector=vector)
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
    np.testing.assert_allclose(got.feature_importances_, reference.feature_importances_,
                               rtol=0, atol=1e-10)


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

    rows = [(Vectors.dense([1.0, 2.0, float(i)]) if i != 4 else Vectors.sparse(4, [0], [1.0]),
             i % 2) for i in range(12)]
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
    df = _frame(spark, [(float(i), float(i * i), 1) for i in range(10)], "a double, b double, y int")
    with pytest.raises(ValueError, match="class") as info:
        spark_fit(dmargin.ReliefF(), df, label="y")
    assert "Traceback" not in str(info.value)


def test_empty_partitions_and_200_partitions(spark, blobs_binary):
    X, y = blobs_binary
    reference = dmargin.ReliefF(n_neighbors=4, n_anchors=30, random_state=0).fit(X, y)
    df = spark_frame(spark, X, y, 200)
    assert df.rdd.getNumPartitions() > 60  # range bounds from a sample: some may merge
    empty = spark_frame(spark, X, y, 4).union(
        spark.createDataFrame([], spark_frame(spark, X, y, 1).schema).repartition(3))
    assert any(n == 0 for n in empty.rdd.glom().map(len).collect())
    for frame in (df, empty):
        got = fit_on_spark(dmargin.ReliefF(n_neighbors=4, n_anchors=30, random_state=0), frame)
        np.testing.assert_allclose(got.feature_importances_, reference.feature_importances_,
                                   rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------
# A refit never reads an earlier fit's state
# ---------------------------------------------------------------------------


def test_a_refit_with_one_parameter_changed_gives_the_other_result(spark, blobs_binary):
    X, y = blobs_binary
    df = spark_frame(spark, X, y, 3)
    for params in ({"n_neighbors": 4}, {"n_neighbors": 7}, {"n_neighbors": 4, "n_anchors": 20,
                                                            "random_state": 0},
                   {"n_neighbors": 4, "n_anchors": 20, "random_state": 1}):
        got = fit_on_spark(dmargin.ReliefF(**params), df).feature_importances_
        np.testing.assert_allclose(got, dmargin.ReliefF(**params).fit(X, y).feature_importances_,
                                   rtol=0, atol=1e-10, err_msg=str(params))
    first = fit_on_spark(dmargin.IRelief(max_iter=3, tol=0, sigma=1.0), df).feature_importances_
    other = fit_on_spark(dmargin.IRelief(max_iter=3, tol=0, sigma=2.0), df).feature_importances_
    assert np.abs(first - other).max() > 1e-6
    np.testing.assert_allclose(
        other, dmargin.IRelief(max_iter=3, tol=0, sigma=2.0).fit(X, y).feature_importances_,
        rtol=0, atol=1e-10)
