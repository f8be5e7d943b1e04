"""dmargin on Spark: fits on a Spark DataFrame, the tiles run as tasks on its
executors (``pip install 'dmargin[spark]'``).

- :func:`fit` -- any dmargin estimator on a DataFrame's numeric columns or
  MLlib vector column;
- :func:`local_session` -- a local ``SparkSession`` set up for dmargin;
- :func:`fit_cost` -- what a fit will cost on Spark: its layout (a task per
  partition, or per pair of partitions for an exact fit), jobs, and the
  partials that come to the driver;
- :class:`MarginSelector` -- the ``pyspark.ml`` selector (``featuresCol`` or
  ``inputCols`` in, the selected features as a vector out), and its
  :class:`MarginSelectorModel`, stages of a ``pyspark.ml.Pipeline``.
"""

from ._cost import SparkFitCost, fit_cost
from ._fit import fit, local_session
from ._scheduler import PartialsTooLargeError
from ._source import SparkInputError
from ._watch import SparkStoppedError

__all__ = [
    "MarginSelector",
    "MarginSelectorModel",
    "PartialsTooLargeError",
    "SparkFitCost",
    "SparkInputError",
    "SparkStoppedError",
    "fit",
    "fit_cost",
    "local_session",
]

#: Defined with pyspark's classes, so imported on first use: ``import dmargin.spark``
#: needs no pyspark.
_ML_STAGES = ("MarginSelector", "MarginSelectorModel")


def __getattr__(name):
    if name in _ML_STAGES:
        from ._ml import MarginSelector, MarginSelectorModel

        return MarginSelector if name == "MarginSelector" else MarginSelectorModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
