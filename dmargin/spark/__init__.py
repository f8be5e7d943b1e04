"""dmargin on Spark: fits on a Spark DataFrame, the tiles run as tasks on its
executors (``pip install 'dmargin[spark]'``).

- :func:`fit` -- any dmargin estimator on a DataFrame's numeric columns or
  MLlib vector column;
- :func:`local_session` -- a local ``SparkSession`` set up for dmargin.
"""

from ._fit import fit, local_session
from ._source import SparkInputError

__all__ = ["SparkInputError", "fit", "local_session"]
