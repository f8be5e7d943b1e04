"""``dmargin.spark.fit``: any dmargin estimator fitted on a Spark DataFrame,
its tiles run as tasks on the DataFrame's executors."""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from .._capabilities import capabilities
from ._scheduler import spark_get
from ._source import read_spark


@contextlib.contextmanager
def on_spark(data):
    """Within: dmargin's dask graphs run on ``data``'s Spark executors."""
    import dask

    from .._dask import lazy_persist

    with dask.config.set(scheduler=spark_get), lazy_persist():
        yield


def fit(estimator, df, label="label", *, features=None, features_col=None):
    """Fit ``estimator`` on a Spark DataFrame; returns the fitted estimator.

    The rows stay on Spark's executors: each partition is read once as Arrow
    and cached there as a block of float64 rows, and every tile of the fit
    runs as a Spark task over its blocks (one partition, or a pair of them
    for exact fits), with the small state of the fit (anchors, weights)
    broadcast; only the tiles' partials come back to the driver, which
    merges them with the combines the in-process and dask fits use.  The
    result equals the in-process fit on the same rows, in the DataFrame's
    row order, to rounding.

    Parameters
    ----------
    estimator : dmargin estimator
        Any estimator of ``dmargin`` (the documentation's Spark page says
        how each runs on Spark: what its tasks compute, what comes back).
    df : pyspark.sql.DataFrame
        The training rows.
    label : str, default="label"
        The class (or, for the regression estimators, target) column.
    features : list of str or None, default=None
        Numeric feature columns (default: every column but ``label``).
    features_col : str or None, default=None
        One MLlib vector column (dense or sparse vectors of one size) instead
        of ``features``; its features are named ``"<column>[j]"``.

    Returns
    -------
    estimator
        Fitted, with ``feature_names_in_`` the feature columns' names and
        ``spark_stats_`` what the fit cost on Spark (jobs, executor tasks,
        bytes of partials that came to the driver).

    Raises
    ------
    dmargin.spark.SparkInputError
        The DataFrame cannot be fitted (a null label, a missing or infinite
        feature value, a string feature, vectors of several sizes, no rows):
        the message names the column and the fix.
    """
    who = type(estimator).__name__
    data = read_spark(
        df,
        label,
        features=features,
        features_col=features_col,
        allow_nan=capabilities(estimator).allow_nan,
        who=who,
    )
    try:
        with on_spark(data):
            estimator.fit(data.X, data.y)
    finally:
        data.release()
    estimator.feature_names_in_ = np.asarray(data.names, dtype=object)
    estimator.spark_stats_ = data.stats
    return estimator


def local_session(master="local[2]", **conf):
    """A local ``SparkSession`` for dmargin: its Python workers run this
    interpreter (so they import this dmargin and its numba), no web UI, Spark's
    log at ERROR.

    ``conf``: more Spark settings, by their names: ``local_session("local[4]",
    **{"spark.driver.memory": "8g"})``; a name without dots has its underscores
    read as dots (``spark_driver_memory="8g"``).
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName("dmargin")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "8")
    )
    for key, value in conf.items():
        builder = builder.config(key.replace("_", ".") if "." not in key else key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
