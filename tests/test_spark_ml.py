"""The pyspark.ml selector (``dmargin.spark.MarginSelector``): the scores of
``dmargin.spark.fit`` and of the in-process fit (1e-10), on numeric columns and
on dense and sparse vector columns; the three ways to select; ``transform``'s
slots and columns; save and load of the selector, of the model and of a
``Pipeline`` around them; a refit with one parameter changed; bad params.

The DataFrames keep the rows' order (``parallelize`` and ``coalesce`` do not
shuffle), so sampled anchors are the in-process fit's rows.
"""

import os

import numpy as np
import pandas as pd
import pytest

import dmargin

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'dmargin[spark]'")

from dmargin.spark import MarginSelector, MarginSelectorModel  # noqa: E402
from dmargin.spark import fit as spark_fit  # noqa: E402

N, P = 240, 6
NAMES = [f"f{j}" for j in range(P)]


def relieff(**params):
    return dmargin.ReliefF(**{"n_anchors": 60, "random_state": 0, **params})


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, P))
    X[np.abs(X) < 0.6] = 0.0  # zeros, so that sparse vectors are sparse
    y = (X[:, 0] + 0.7 * X[:, 3] - 0.4 * X[:, 5] > 0).astype(np.int64)
    return X, y


@pytest.fixture(scope="module")
def columns_df(spark, data):
    X, y = data
    pdf = pd.DataFrame(X, columns=NAMES)
    pdf["label"] = y
    return spark.createDataFrame(pdf).coalesce(3)


def vector_df(spark, data, sparse, partitions=3):
    from pyspark.ml.linalg import Vectors

    X, y = data

    def vec(row):
        if sparse:
            nz = np.flatnonzero(row)
            return Vectors.sparse(P, nz.tolist(), row[nz].tolist())
        return Vectors.dense(row.tolist())

    rows = [(vec(X[i]), int(y[i])) for i in range(len(y))]
    return spark.sparkContext.parallelize(rows, partitions).toDF(["features", "label"])


@pytest.fixture(scope="module")
def reference(data):
    X, y = data
    return relieff().fit(X, y)


@pytest.fixture(scope="module")
def top_two(columns_df):
    """A selector of the two best of the numeric columns, and its model."""
    selector = MarginSelector(estimator=relieff(), inputCols=NAMES, numTopFeatures=2)
    return selector, selector.fit(columns_df)


def collect_vectors(df, column):
    return np.array([row[column].toArray() for row in df.select(column).collect()])


# ---------------------------------------------------------------------------
# The same scores as dmargin.spark.fit and the in-process fit
# ---------------------------------------------------------------------------


@pytest.mark.spark
def test_input_cols_scores_equal_spark_fit_and_in_process(
    spark, data, columns_df, reference, top_two
):
    X, _ = data
    _, model = top_two
    plain = spark_fit(relieff(), columns_df, "label", features=NAMES)
    np.testing.assert_allclose(model.scores, plain.feature_importances_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.scores, reference.feature_importances_, rtol=0, atol=1e-10)
    top = sorted(np.argsort(-reference.feature_importances_, kind="stable")[:2].tolist())
    assert model.selectedFeatures == top
    assert model.featureNames == NAMES
    assert model.selectedFeatureNames == [NAMES[j] for j in top]
    assert model.estimator_.spark_stats_.tasks > 0
    # inputCols: the selected columns assembled into outputCol, the input columns kept.
    out = model.transform(columns_df)
    assert out.columns == NAMES + ["label", "selected"]
    np.testing.assert_array_equal(collect_vectors(out, "selected"), X[:, top])


@pytest.mark.spark
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_vector_column_scores_equal_in_process(spark, data, reference, sparse):
    from pyspark.ml.linalg import SparseVector

    X, _ = data
    df = vector_df(spark, data, sparse)
    model = MarginSelector(estimator=relieff(), featuresCol="features", numTopFeatures=3).fit(df)
    np.testing.assert_allclose(model.scores, reference.feature_importances_, rtol=0, atol=1e-10)
    top = sorted(np.argsort(-reference.feature_importances_, kind="stable")[:3].tolist())
    assert model.selectedFeatures == top
    # No names in the vector's metadata: the slots are named after the column.
    assert model.featureNames == [f"features[{j}]" for j in range(P)]
    out = model.transform(df)
    np.testing.assert_array_equal(collect_vectors(out, "selected"), X[:, top])
    first = out.select("selected").first()[0]
    assert isinstance(first, SparseVector) == sparse
    assert first.size == 3


# ---------------------------------------------------------------------------
# Selection: numTopFeatures, threshold, the estimator's own
# ---------------------------------------------------------------------------


@pytest.mark.spark
def test_threshold_and_the_estimators_own_selection(spark, columns_df, reference):
    scores = reference.feature_importances_
    cut = float(np.sort(scores)[-3])  # the third highest: three kept
    by_threshold = MarginSelector(estimator=relieff(), inputCols=NAMES, threshold=cut).fit(
        columns_df
    )
    assert by_threshold.selectedFeatures == np.flatnonzero(scores >= cut).tolist()
    assert len(by_threshold.selectedFeatures) == 3
    # Neither: the estimator's get_support(), here its two best.
    own = MarginSelector(estimator=relieff(n_features_to_select=2), inputCols=NAMES).fit(columns_df)
    assert own.selectedFeatures == sorted(np.argsort(-scores, kind="stable")[:2].tolist())
    assert own.selectedFeatures == np.flatnonzero(own.estimator_.get_support()).tolist()


@pytest.mark.spark
def test_an_elimination_selector_scores_minus_its_ranking(spark, data, columns_df):
    X, y = data
    make = lambda: dmargin.SBSMF(n_features_to_select=2, n_estimators=4)  # noqa: E731
    reference = make().fit(X, y)
    model = MarginSelector(estimator=make(), inputCols=NAMES).fit(columns_df)
    np.testing.assert_array_equal(model.scores, -reference.ranking_.astype(float))
    assert model.selectedFeatures == np.flatnonzero(reference.get_support()).tolist()


@pytest.mark.spark
def test_more_top_features_than_features_keeps_all_and_none_kept_warns(spark, columns_df):
    every = MarginSelector(estimator=relieff(), inputCols=NAMES, numTopFeatures=50).fit(columns_df)
    assert every.selectedFeatures == list(range(P))
    with pytest.warns(UserWarning, match="selected no feature"):
        none = MarginSelector(estimator=relieff(), inputCols=NAMES, threshold=1e6).fit(columns_df)
    assert none.selectedFeatures == [] and none.selectedFeatureNames == []
    row = none.transform(columns_df).select("selected").first()[0]
    assert row.size == 0


# ---------------------------------------------------------------------------
# Save and load; a Pipeline round trip
# ---------------------------------------------------------------------------


@pytest.mark.spark
def test_pipeline_round_trip(spark, columns_df, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.feature import VectorAssembler

    pipeline = Pipeline(
        stages=[
            VectorAssembler(inputCols=NAMES, outputCol="features"),
            MarginSelector(estimator=relieff(), featuresCol="features", numTopFeatures=3),
            LogisticRegression(featuresCol="selected", labelCol="label", maxIter=20),
        ]
    )
    pipeline.write().save(str(tmp_path / "pipeline"))
    loaded_pipeline = Pipeline.load(str(tmp_path / "pipeline"))
    assert loaded_pipeline.getStages()[1].getEstimator().get_params() == relieff().get_params()

    fitted = pipeline.fit(columns_df)
    selector = fitted.stages[1]
    # VectorAssembler names the vector's slots: the model reports the columns' names.
    assert selector.featureNames == NAMES
    assert len(selector.selectedFeatureNames) == 3
    fitted.write().save(str(tmp_path / "model"))
    loaded = PipelineModel.load(str(tmp_path / "model"))
    assert isinstance(loaded.stages[1], MarginSelectorModel)
    assert loaded.stages[1].selectedFeatures == selector.selectedFeatures

    columns = ["selected", "rawPrediction", "probability", "prediction"]
    before = fitted.transform(columns_df).select(columns).collect()
    after = loaded.transform(columns_df).select(columns).collect()
    assert after == before
    assert {row.prediction for row in before} <= {0.0, 1.0}


@pytest.mark.spark
def test_save_and_load_the_selector_and_the_model(spark, columns_df, top_two, tmp_path):
    turf = dmargin.TuRF(estimator=dmargin.MultiSURF(n_anchors=30), pct=0.5)
    selector = MarginSelector(
        estimator=turf, inputCols=NAMES, labelCol="label", outputCol="kept", threshold=0.01
    )
    selector.save(str(tmp_path / "selector"))
    back = MarginSelector.load(str(tmp_path / "selector"))
    assert back.uid == selector.uid
    assert (back.getInputCols(), back.getOutputCol(), back.getThreshold()) == (NAMES, "kept", 0.01)
    assert back.getFeaturesCol() is None and back.getNumTopFeatures() is None
    assert isinstance(back.getEstimator(), dmargin.TuRF)
    assert back.getEstimator().get_params(deep=True).keys() == turf.get_params(deep=True).keys()
    assert back.getEstimator().estimator.get_params() == turf.estimator.get_params()

    _, model = top_two
    model.write().save(str(tmp_path / "model"))
    loaded = MarginSelectorModel.load(str(tmp_path / "model"))
    assert (loaded.scores, loaded.selectedFeatures, loaded.featureNames) == (
        model.scores,
        model.selectedFeatures,
        model.featureNames,
    )
    assert loaded.estimator_ is None
    assert loaded.getEstimator().get_params() == relieff().get_params()
    assert loaded.transform(columns_df).collect() == model.transform(columns_df).collect()
    with pytest.raises(FileExistsError, match="write\\(\\).overwrite\\(\\)"):
        model.write().save(str(tmp_path / "model"))
    model.write().overwrite().save(str(tmp_path / "model"))
    with pytest.raises(ValueError, match="not a dmargin.spark.MarginSelector;"):
        MarginSelector.load(str(tmp_path / "model"))


@pytest.mark.spark
def test_an_estimator_that_cannot_be_saved_is_refused_before_writing(spark, tmp_path):
    selector = MarginSelector(
        estimator=dmargin.ReliefF(random_state=np.random.default_rng(0)), inputCols=NAMES
    )
    with pytest.raises(ValueError, match="ReliefF's parameter random_state=Generator"):
        selector.save(str(tmp_path / "selector"))
    assert not os.path.exists(tmp_path / "selector")


# ---------------------------------------------------------------------------
# A refit with one parameter changed
# ---------------------------------------------------------------------------


@pytest.mark.spark
def test_a_refit_with_one_parameter_changed_gives_the_other_result(
    spark, data, columns_df, reference, top_two
):
    X, y = data
    selector, first = top_two
    selector = selector.copy()
    other = selector.fit(columns_df, {selector.estimator: relieff(n_anchors=90)})
    expected = relieff(n_anchors=90).fit(X, y).feature_importances_
    np.testing.assert_allclose(other.scores, expected, rtol=0, atol=1e-10)
    assert np.max(np.abs(np.subtract(other.scores, first.scores))) > 1e-6
    # The selector's own estimator is unchanged and unfitted: the next fit is the first again.
    assert not hasattr(selector.getEstimator(), "feature_importances_")
    again = selector.setNumTopFeatures(4).fit(columns_df)
    np.testing.assert_allclose(again.scores, reference.feature_importances_, rtol=0, atol=1e-10)
    assert len(again.selectedFeatures) == 4 and len(first.selectedFeatures) == 2


# ---------------------------------------------------------------------------
# Bad params, and a model on the wrong input
# ---------------------------------------------------------------------------


def test_bad_params_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="either featuresCol .* or inputCols .*not both"):
        MarginSelector(featuresCol="features", inputCols=NAMES)
    with pytest.raises(ValueError, match="numTopFeatures must be at least 1, got 0"):
        MarginSelector(inputCols=NAMES, numTopFeatures=0)
    with pytest.raises(ValueError, match="either numTopFeatures or threshold"):
        MarginSelector(inputCols=NAMES, numTopFeatures=2, threshold=0.0)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        MarginSelector(inputCols=NAMES, threshold=float("nan"))
    from sklearn.feature_selection import SelectKBest

    with pytest.raises(ValueError, match="SelectKBest is not a dmargin estimator"):
        MarginSelector(inputCols=NAMES, estimator=SelectKBest())
    with pytest.raises(ValueError, match="ReliefF is a class; pass an instance"):
        MarginSelector(inputCols=NAMES, estimator=dmargin.ReliefF)
    with pytest.raises(ValueError, match="LDM selects no features.*LDMRFE"):
        MarginSelector(inputCols=NAMES, estimator=dmargin.LDM())
    selector = MarginSelector(inputCols=NAMES)
    with pytest.raises(ValueError, match="estimator=str is not a dmargin estimator"):
        selector.set(selector.estimator, "ReliefF")


@pytest.mark.spark
def test_neither_features_nor_input_cols_is_refused_at_fit(spark, columns_df):
    with pytest.raises(ValueError, match="give the features, as featuresCol=.* or inputCols="):
        MarginSelector().fit(columns_df)
    with pytest.raises(ValueError, match="inputCols is empty"):
        MarginSelector(inputCols=[]).fit(columns_df)
    # The DataFrame's own problems are dmargin.spark.fit's errors, naming the column.
    from pyspark.sql import functions as F

    from dmargin.spark import SparkInputError

    with pytest.raises(SparkInputError, match="'city' is string"):
        MarginSelector(inputCols=NAMES + ["city"]).fit(columns_df.withColumn("city", F.lit("a")))
    with pytest.raises(SparkInputError, match="no vector column 'features'"):
        MarginSelector(featuresCol="features").fit(columns_df)


@pytest.mark.spark
def test_a_model_on_the_wrong_input_says_what_differs(spark, data, columns_df):
    model = MarginSelectorModel(scores=[0.1] * P, selectedFeatures=[0, 2], featureNames=NAMES)
    model.setInputCols(NAMES)
    with pytest.raises(ValueError, match="already has a column 'f1'"):
        model.copy({model.outputCol: "f1"}).transform(columns_df)
    with pytest.raises(ValueError, match="no column 'f0'"):
        model.transform(columns_df.drop("f0"))
    from pyspark.ml.feature import VectorAssembler

    short = VectorAssembler(inputCols=NAMES[:4], outputCol="v").transform(columns_df)
    vector_model = MarginSelectorModel(
        scores=[0.1] * P, selectedFeatures=[0], featureNames=NAMES
    ).setFeaturesCol("v")
    with pytest.raises(ValueError, match="vectors of 4 features; the model was fitted on 6"):
        vector_model.transform(short)
    with pytest.raises(ValueError, match="holds no selection"):
        MarginSelectorModel().setInputCols(NAMES).transform(columns_df)


def test_an_estimator_round_trips_through_its_json():
    import json

    from dmargin.spark._ml import decode_estimator, encode_estimator

    est = dmargin.Iter(estimator=dmargin.MultiSURF(n_anchors=0.5, random_state=np.int64(3)))
    spec = json.loads(json.dumps(encode_estimator(est)))
    assert spec["class"] == "dmargin.Iter"
    back = decode_estimator(spec)
    assert type(back) is dmargin.Iter and type(back.estimator) is dmargin.MultiSURF
    assert back.estimator.get_params() == est.estimator.get_params()
    with pytest.raises(ValueError, match="class os.path is not a dmargin estimator"):
        decode_estimator({"class": "os.path", "params": {}})


def test_rank_absolute_ranks_the_scores_by_their_size():
    from dmargin.spark._ml import _select

    class Fitted:  # what selection reads of a fitted estimator
        rank_absolute = True

    scores = np.array([0.3, -0.9, 0.1, -0.2])
    assert _select(MarginSelector(inputCols=NAMES, numTopFeatures=2), Fitted(), scores) == [0, 1]
    assert _select(MarginSelector(inputCols=NAMES, threshold=0.2), Fitted(), scores) == [0, 1, 3]
    Fitted.rank_absolute = False
    assert _select(MarginSelector(inputCols=NAMES, numTopFeatures=2), Fitted(), scores) == [0, 2]
