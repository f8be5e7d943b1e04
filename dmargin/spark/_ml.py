"""``dmargin.spark.MarginSelector``: a dmargin estimator as a ``pyspark.ml``
feature selector.

The selector reads an MLlib vector column (``featuresCol``) or numeric columns
(``inputCols``), fits its dmargin estimator with :func:`dmargin.spark.fit` (the
tiles on the executors, only partials on the driver), and returns a
:class:`MarginSelectorModel` whose ``transform`` writes the selected features
as a vector column, so that a classifier can follow it in a
``pyspark.ml.Pipeline``.

Both stages save and load as other Spark ML stages.  Everything a stage holds
goes into the one metadata file Spark writes for it (the params, the wrapped
estimator as its class and ``get_params()``, and for a model its scores,
selection and names), through Spark's own writer, which commits the file
under its final name only once it is whole.  What cannot be written (an
estimator parameter that is not a plain value) is refused before anything is
written.
"""

from __future__ import annotations

import importlib
import numbers

import numpy as np
from sklearn.base import clone

try:
    from pyspark import keyword_only
    from pyspark.ml import Estimator, Model
    from pyspark.ml.param import Param, Params, TypeConverters
    from pyspark.ml.param.shared import HasInputCols, HasLabelCol, HasOutputCol
    from pyspark.ml.util import (
        DefaultParamsReader,
        DefaultParamsWriter,
        MLReadable,
        MLReader,
        MLWritable,
        MLWriter,
    )
except ImportError as exc:  # pragma: no cover - the spark extra is missing
    raise ImportError(
        "dmargin.spark.MarginSelector needs pyspark: pip install 'dmargin[spark]'"
    ) from exc

from .._registry import estimators
from .._utils import warn
from ._fit import fit as spark_fit

#: The estimator a selector fits when given none.
DEFAULT_ESTIMATOR = "dmargin.ReliefF(n_anchors=1000)"


def _default_estimator():
    from .. import ReliefF

    return ReliefF(n_anchors=1000)


def _dmargin_classes():
    return tuple(cls for _, cls in estimators())


# ---------------------------------------------------------------------------
# Params: each value checked when it is set, the pairs that exclude each other
# when the selector is built and again at fit
# ---------------------------------------------------------------------------


def _to_estimator(value):
    if value is None:
        return None
    if isinstance(value, type):
        raise ValueError(
            f"estimator={value.__name__} is a class; pass an instance, such as {value.__name__}()."
        )
    if not isinstance(value, _dmargin_classes()):
        raise ValueError(
            f"estimator={type(value).__name__} is not a dmargin estimator; pass "
            f"one of dmargin's, such as {DEFAULT_ESTIMATOR}."
        )
    if not hasattr(value, "get_support"):
        raise ValueError(
            f"estimator={type(value).__name__} selects no features (it has no "
            "get_support); pass a selector, such as dmargin.LDMRFE() for LDM's "
            "ranking."
        )
    return value


def _to_top(value):
    if value is None:
        return None
    value = TypeConverters.toInt(value)
    if value < 1:
        raise ValueError(
            f"numTopFeatures must be at least 1, got {value}; leave it unset to "
            "keep the estimator's own selection."
        )
    return value


def _to_threshold(value):
    if value is None:
        return None
    value = TypeConverters.toFloat(value)
    if not np.isfinite(value):
        raise ValueError(f"threshold must be a finite number, got {value}.")
    return value


class _MarginSelectorParams(HasInputCols, HasLabelCol, HasOutputCol):
    """The params of :class:`MarginSelector` and :class:`MarginSelectorModel`.

    ``featuresCol`` is declared here rather than through pyspark's
    ``HasFeaturesCol``, whose default (``"features"``) would make "neither
    featuresCol nor inputCols" impossible to tell from a choice.
    """

    estimator = Param(
        Params._dummy(),
        "estimator",
        f"the dmargin estimator to fit (None: {DEFAULT_ESTIMATOR})",
        typeConverter=_to_estimator,
    )
    featuresCol = Param(
        Params._dummy(),
        "featuresCol",
        "an MLlib vector column of the features (or inputCols)",
        typeConverter=TypeConverters.toString,
    )
    numTopFeatures = Param(
        Params._dummy(),
        "numTopFeatures",
        "keep this many features of the highest scores",
        typeConverter=_to_top,
    )
    threshold = Param(
        Params._dummy(),
        "threshold",
        "keep the features whose score is at least this",
        typeConverter=_to_threshold,
    )

    def __init__(self):
        super().__init__()
        self._setDefault(outputCol="selected")

    def _value(self, param):
        """The param's value, ``None`` when it is unset or set to ``None``."""
        return self.getOrDefault(param) if self.isDefined(param) else None

    def getEstimator(self):
        """The dmargin estimator to fit (``None``: ``ReliefF(n_anchors=1000)``)."""
        return self._value(self.estimator)

    def getFeaturesCol(self):
        """The vector column of the features, or ``None`` (``inputCols`` is used)."""
        return self._value(self.featuresCol)

    def getInputCols(self):
        """The numeric feature columns, or ``None`` (``featuresCol`` is used)."""
        return self._value(self.inputCols)

    def getNumTopFeatures(self):
        """How many features to keep, or ``None``."""
        return self._value(self.numTopFeatures)

    def getThreshold(self):
        """The lowest score kept, or ``None``."""
        return self._value(self.threshold)

    def _check_exclusive(self):
        if self.getFeaturesCol() is not None and self.getInputCols() is not None:
            raise ValueError(
                f"{type(self).__name__}: give either featuresCol (a vector column) "
                "or inputCols (numeric columns), not both."
            )
        if self.getNumTopFeatures() is not None and self.getThreshold() is not None:
            raise ValueError(
                f"{type(self).__name__}: give either numTopFeatures or threshold, "
                "not both (neither keeps the estimator's own selection)."
            )

    def _columns(self):
        """``(inputCols, featuresCol)``, exactly one of them given."""
        self._check_exclusive()
        features, vector = self.getInputCols(), self.getFeaturesCol()
        if features is None and vector is None:
            raise ValueError(
                f"{type(self).__name__}: give the features, as featuresCol=<an "
                "MLlib vector column> or inputCols=[<numeric columns>]."
            )
        if features is not None and not features:
            raise ValueError(
                f"{type(self).__name__}: inputCols is empty; name at least one numeric column."
            )
        return features, vector

    def setEstimator(self, value):
        """Set the dmargin estimator to fit."""
        return self._set(estimator=value)

    def setFeaturesCol(self, value):
        """Set the vector column of the features."""
        return self._set(featuresCol=value)

    def setInputCols(self, value):
        """Set the numeric feature columns."""
        return self._set(inputCols=value)

    def setLabelCol(self, value):
        """Set the label column."""
        return self._set(labelCol=value)

    def setOutputCol(self, value):
        """Set the output vector column."""
        return self._set(outputCol=value)

    def setNumTopFeatures(self, value):
        """Set how many features to keep."""
        return self._set(numTopFeatures=value)

    def setThreshold(self, value):
        """Set the lowest score kept."""
        return self._set(threshold=value)


# ---------------------------------------------------------------------------
# The estimator as JSON: its class and get_params(), nested estimators alike
# ---------------------------------------------------------------------------


def _class_path(cls):
    import dmargin

    if getattr(dmargin, cls.__name__, None) is cls:
        return f"dmargin.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def encode_estimator(estimator):
    """``{"class": ..., "params": ...}`` of a dmargin estimator, JSON of plain values.

    Raises
    ------
    ValueError
        A parameter that is not a number, a string, a bool, ``None``, a
        list, tuple, dict or numeric array of those, or a dmargin estimator:
        the message names the parameter.
    """
    name = type(estimator).__name__
    params = {
        key: _encode(value, f"{name}'s parameter {key}")
        for key, value in estimator.get_params(deep=False).items()
    }
    return {"class": _class_path(type(estimator)), "params": params}


def _encode(value, where):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, where) for v in value]}
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k, where), _encode(v, where)] for k, v in value.items()]}
    if isinstance(value, _dmargin_classes()):
        return {"__estimator__": encode_estimator(value)}
    raise ValueError(
        f"{where}={value!r} cannot be saved: a saved stage holds numbers, strings, "
        "lists, dicts, numeric arrays and dmargin estimators only (pass, e.g., "
        "random_state as an int)."
    )


def decode_estimator(spec):
    """The dmargin estimator :func:`encode_estimator` wrote, unfitted."""
    path = spec["class"]
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"The saved estimator's class {path} cannot be imported here ({exc}); "
            "install the dmargin (or module) it was saved with."
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, _dmargin_classes())):
        raise ValueError(f"The saved estimator's class {path} is not a dmargin estimator.")
    return cls(**{key: _decode(value) for key, value in spec["params"].items()})


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        return np.asarray(value["__ndarray__"], dtype=np.dtype(value["dtype"]))
    if "__tuple__" in value:
        return tuple(_decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {_decode(k): _decode(v) for k, v in value["__dict__"]}
    return decode_estimator(value["__estimator__"])


# ---------------------------------------------------------------------------
# Save and load: Spark's metadata file, with the estimator encoded
# ---------------------------------------------------------------------------


class _StageWriter(MLWriter):
    """Writes a stage's params, its estimator and (a model) its data as Spark's
    metadata file of the stage."""

    def __init__(self, instance):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path):
        if not self.shouldOverwrite and _exists(self.sparkSession, path):
            raise FileExistsError(
                f"{path} already exists; save with write().overwrite().save(path) to replace it."
            )
        stage = self.instance
        # Everything is encoded before the one write: a refused value leaves nothing.
        params = {p.name: value for p, value in stage._paramMap.items()}
        if params.get("estimator") is not None:
            params["estimator"] = encode_estimator(params["estimator"])
        DefaultParamsWriter.saveMetadata(
            stage, path, self.sparkSession, extraMetadata=stage._saved_data(), paramMap=params
        )


def _exists(spark, path):
    """Whether ``path`` exists on its file system (Hadoop's, as Spark's own writers ask)."""
    try:
        jvm, conf = spark.sparkContext._jvm, spark.sparkContext._jsc.hadoopConfiguration()
    except AttributeError:  # Spark Connect: no JVM here, Spark's write refuses instead
        return False
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hpath.getFileSystem(conf).exists(hpath))


class _StageReader(MLReader):
    """Reads what :class:`_StageWriter` wrote into a new stage of the same uid."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path):
        metadata = DefaultParamsReader.loadMetadata(path, self.sparkSession)
        expected = f"{self.cls.__module__}.{self.cls.__name__}"
        if metadata["class"] != expected:
            raise ValueError(
                f"{path} holds a {metadata['class']}, not a {expected}; load it "
                "with its own class (pyspark.ml.PipelineModel.load for a fitted "
                "pipeline)."
            )
        params = dict(metadata["paramMap"])
        if params.get("estimator") is not None:
            params["estimator"] = decode_estimator(params["estimator"])
        instance = self.cls()
        instance._resetUid(metadata["uid"])
        DefaultParamsReader.getAndSetParams(instance, {**metadata, "paramMap": params})
        instance._restore(metadata)
        return instance


class _Persisted(MLReadable, MLWritable):
    def write(self):
        """An ``MLWriter`` of this stage: ``write().save(path)``, ``.overwrite()``."""
        return _StageWriter(self)

    @classmethod
    def read(cls):
        """An ``MLReader`` of this class: ``read().load(path)``."""
        return _StageReader(cls)

    def _saved_data(self):
        return None

    def _restore(self, metadata):
        pass


# ---------------------------------------------------------------------------
# The stages
# ---------------------------------------------------------------------------


class MarginSelector(Estimator, _MarginSelectorParams, _Persisted):
    """A dmargin estimator as a ``pyspark.ml`` feature selector.

    ``fit(df)`` fits the wrapped estimator on the DataFrame's executors
    (:func:`dmargin.spark.fit`) and returns a :class:`MarginSelectorModel`
    whose ``transform`` adds the selected features as the vector column
    ``outputCol``.  A stage of a ``pyspark.ml.Pipeline``: it saves and loads
    as other Spark ML stages.

    Parameters
    ----------
    estimator : dmargin estimator or None, default=None
        Any dmargin selector (not fitted: each fit fits a clone of it).
        ``None``: ``dmargin.ReliefF(n_anchors=1000)``, a sampled fit that
        scales with the rows (exact below a thousand rows).
    featuresCol : str or None, default=None
        An MLlib vector column (dense or sparse vectors of one size).
    inputCols : list of str or None, default=None
        Numeric columns.  Exactly one of ``featuresCol`` and ``inputCols``.
    labelCol : str, default="label"
        The class (for the regression estimators, target) column.
    outputCol : str, default="selected"
        The vector column ``transform`` adds.
    numTopFeatures : int or None, default=None
        Keep this many features of the highest scores (every feature when
        there are fewer; ties go to the lower index).
    threshold : float or None, default=None
        Keep the features whose score is at least this.  With neither
        ``numTopFeatures`` nor ``threshold``, the estimator's own selection
        is kept (its ``get_support()``: for the weighting estimators the
        positive weights, or its ``n_features_to_select``).  The scores are
        ranked as the estimator ranks them: by absolute value when it has
        ``rank_absolute=True``.

    See Also
    --------
    dmargin.spark.fit : the plain call, an estimator fitted on a DataFrame.

    Notes
    -----
    The scores are the estimator's ``feature_importances_``; the
    elimination selectors (``SBSMF``, ``AdaBoostCR``, ``BDSFS``,
    ``LDMRFE``, ``SVMRFE``), which rank rather than weigh, score minus
    their ``ranking_`` (so that higher is better, as for the weights).

    A saved selector holds its estimator as the class and its
    ``get_params()``; a parameter that is not a plain value (a
    ``numpy.random.Generator`` as ``random_state``) is refused at save.

    Examples
    --------
    >>> import dmargin
    >>> from dmargin.spark import MarginSelector
    >>> selector = MarginSelector(estimator=dmargin.MultiSURF(n_anchors=1000),
    ...                           featuresCol="features", numTopFeatures=10)  # doctest: +SKIP
    >>> model = selector.fit(df)                                            # doctest: +SKIP
    >>> model.selectedFeatureNames                                          # doctest: +SKIP
    >>> model.transform(df).select("selected")                              # doctest: +SKIP
    """

    @keyword_only
    def __init__(
        self,
        *,
        estimator=None,
        featuresCol=None,
        inputCols=None,
        labelCol="label",
        outputCol="selected",
        numTopFeatures=None,
        threshold=None,
    ):
        super().__init__()
        self.setParams(**self._input_kwargs)

    @keyword_only
    def setParams(
        self,
        *,
        estimator=None,
        featuresCol=None,
        inputCols=None,
        labelCol="label",
        outputCol="selected",
        numTopFeatures=None,
        threshold=None,
    ):
        """Set the params given (by keyword); returns the selector."""
        self._set(**self._input_kwargs)
        self._check_exclusive()
        return self

    def _fit(self, dataset):
        features, vector = self._columns()
        template = self.getEstimator()
        estimator = _default_estimator() if template is None else clone(template)
        spark_fit(estimator, dataset, self.getLabelCol(), features=features, features_col=vector)
        scores = _scores(estimator)
        names = None if vector is None else _slot_names(dataset, vector, scores.size)
        if names is None:
            names = [str(n) for n in estimator.feature_names_in_]
        selected = _select(self, estimator, scores)
        if not selected:
            warn(
                f"{type(estimator).__name__} selected no feature: transform will "
                "write empty vectors; set numTopFeatures or a lower threshold.",
                UserWarning,
                skip=("pyspark",),
            )
        model = MarginSelectorModel(
            scores=scores.tolist(), selectedFeatures=selected, featureNames=names
        )
        model.estimator_ = estimator
        return self._copyValues(model)


class MarginSelectorModel(Model, _MarginSelectorParams, _Persisted):
    """The selection of a fitted :class:`MarginSelector`.

    Parameters
    ----------
    scores : list of float or None
        One score per feature.
    selectedFeatures : list of int or None
        The indices of the selected features.
    featureNames : list of str or None
        Every feature's name.

    Attributes
    ----------
    scores : list of float
        The estimator's ``feature_importances_`` (minus its ``ranking_`` for
        the elimination selectors).
    selectedFeatures : list of int
        The selected features' indices, ascending.
    featureNames : list of str
        The features' names: the input columns, or for a vector column the
        names its metadata gives its slots (``VectorAssembler`` writes its
        input columns' names there), otherwise ``"<column>[j]"``.
    selectedFeatureNames : list of str
        The selected features' names.
    estimator_ : dmargin estimator or None
        The fitted estimator (with its ``spark_stats_``); ``None`` in a
        loaded model: a saved model keeps the scores and the selection, and
        the estimator unfitted as the ``estimator`` param.

    Notes
    -----
    ``transform`` adds ``outputCol``, a vector of the selected features in
    ascending index order: with ``featuresCol``, the selected slots of that
    vector (``pyspark.ml.feature.VectorSlicer``: sparse stays sparse); with
    ``inputCols``, the selected columns assembled
    (``pyspark.ml.feature.VectorAssembler``).  The input columns stay.
    """

    def __init__(self, scores=None, selectedFeatures=None, featureNames=None):
        super().__init__()
        self.scores = None if scores is None else [float(s) for s in scores]
        self.selectedFeatures = (
            None if selectedFeatures is None else sorted(int(i) for i in selectedFeatures)
        )
        self.featureNames = None if featureNames is None else [str(n) for n in featureNames]
        self.estimator_ = None

    @property
    def selectedFeatureNames(self):
        """The selected features' names."""
        return [self.featureNames[i] for i in self.selectedFeatures]

    def _transform(self, dataset):
        if self.selectedFeatures is None:
            raise ValueError(
                "This MarginSelectorModel holds no selection; fit a MarginSelector "
                "or load a saved model."
            )
        features, vector = self._columns()
        out = self.getOutputCol()
        if out in dataset.columns:
            raise ValueError(
                f"The DataFrame already has a column {out!r}; set outputCol to a new name."
            )
        if vector is not None:
            _check_vector(dataset, vector, len(self.featureNames))
        else:
            missing = [c for c in self.featureNames if c not in dataset.columns]
            if missing:
                raise ValueError(
                    f"The DataFrame has no column {missing[0]!r} of the features "
                    f"fitted (inputCols: {self.featureNames})."
                )
        if not self.selectedFeatures:
            return _with_empty_vectors(dataset, out)
        if vector is not None:
            from pyspark.ml.feature import VectorSlicer

            stage = VectorSlicer(inputCol=vector, outputCol=out, indices=self.selectedFeatures)
        else:
            from pyspark.ml.feature import VectorAssembler

            stage = VectorAssembler(inputCols=self.selectedFeatureNames, outputCol=out)
        return stage.transform(dataset)

    def _saved_data(self):
        return {
            "dmargin": {
                "scores": self.scores,
                "selectedFeatures": self.selectedFeatures,
                "featureNames": self.featureNames,
            }
        }

    def _restore(self, metadata):
        data = metadata["dmargin"]
        self.scores = [float(s) for s in data["scores"]]
        self.selectedFeatures = [int(i) for i in data["selectedFeatures"]]
        self.featureNames = [str(n) for n in data["featureNames"]]


# The stages are dmargin.spark's (the name saved stages carry), wherever the code lives.
MarginSelector.__module__ = MarginSelectorModel.__module__ = "dmargin.spark"


# ---------------------------------------------------------------------------
# Scores, selection, names
# ---------------------------------------------------------------------------


def _scores(estimator):
    weights = getattr(estimator, "feature_importances_", None)
    if weights is None:
        return -np.asarray(estimator.ranking_, dtype=np.float64)
    return np.asarray(weights, dtype=np.float64)


def _select(params, estimator, scores):
    """The sorted indices kept: ``numTopFeatures``, ``threshold``, or the estimator's own."""
    key = np.abs(scores) if getattr(estimator, "rank_absolute", False) else scores
    top, threshold = params.getNumTopFeatures(), params.getThreshold()
    if top is not None:
        picked = np.argsort(-key, kind="stable")[:top]  # NaN scores last
    elif threshold is not None:
        picked = np.flatnonzero(key >= threshold)
    else:
        picked = np.flatnonzero(estimator.get_support())
    return sorted(int(i) for i in picked)


def _slot_names(df, column, n):
    """The names a vector column's ML attributes give its ``n`` slots, or ``None``."""
    attrs = df.schema[column].metadata.get("ml_attr", {}).get("attrs", {})
    names = {
        a["idx"]: a["name"] for group in attrs.values() for a in group if "idx" in a and "name" in a
    }
    if sorted(names) != list(range(n)):
        return None
    return [str(names[j]) for j in range(n)]


def _check_vector(df, column, n):
    """The column is a vector column, of ``n`` slots where its metadata says its size."""
    if column not in df.columns:
        raise ValueError(
            f"The DataFrame has no vector column {column!r} (its columns: {df.columns})."
        )
    meta = df.schema[column].metadata.get("ml_attr", {})
    size = meta.get("num_attrs")
    if size is not None and int(size) != n:
        raise ValueError(
            f"Column {column!r} holds vectors of {size} features; the model was fitted on {n}."
        )


def _with_empty_vectors(df, out):
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    return df.withColumn(out, array_to_vector(F.array().cast("array<double>")))
