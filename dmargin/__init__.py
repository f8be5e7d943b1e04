"""dmargin: margin-based feature selection, from a laptop to a Dask cluster.

The estimators are the registry's (``dmargin/_registry.py``): each entry's class is
imported from the module it names, in the registry's order, and listed in ``__all__``,
so that a registry line alone exports an estimator.

They are imported at once, in a loop, rather than on first access (a module
``__getattr__``): ``from dmargin import ReliefF``, ``dir(dmargin)``, pickles, the
doctests and the API pages meet the classes as module attributes, as with one import
line each; an estimator module that cannot be imported fails ``import dmargin`` itself,
not a later attribute access; and nothing is slower, since every estimator module was
imported before too.  Interactive completion (IPython, Jupyter, Jedi) reads the loaded
module and offers every estimator; a checker that reads the source without running it
does not see the loop's names, and finds them in the registry.
"""

from ._cost import FitCost, LongFitWarning, fit_cost
from ._pvalues import PValuesUnavailableError, UncalibratedPValuesWarning
from ._registry import ESTIMATORS, estimator_class
from .io._parquet import iter_parquet, read_parquet
from .knockoffs._sampler import KnockoffSampler

globals().update({entry.name: estimator_class(entry) for entry in ESTIMATORS})

__all__ = [entry.name for entry in ESTIMATORS] + [
    "KnockoffSampler",
    "UncalibratedPValuesWarning",
    "PValuesUnavailableError",
    "LongFitWarning",
    "FitCost",
    "fit_cost",
    "iter_parquet",
    "read_parquet",
]
__version__ = "0.1.0"
del ESTIMATORS, estimator_class  # the registry's, not the package's names
