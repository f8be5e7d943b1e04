"""dmargin: margin-based feature selection, from a laptop to a Dask cluster."""

from ._boosting import BDSFS, SBSMF, AdaBoostCR, AdaBoostStumps
from ._cost import FitCost, LongFitWarning, fit_cost
from ._knockoff_filter import KnockoffSelector
from ._knockoffs import KnockoffSampler
from ._immigrate import IM4E, BoostedImmigrate, IM4EImmigrate, Immigrate
from ._ldm import LDM, LDMRFE, SVMRFE
from ._online import OnlineIRelief
from ._parquet import iter_parquet, read_parquet
from ._registry import estimator_names
from ._regression import RReliefF
from ._relief import IRelief, Relief, ReliefF
from ._simba import Simba
from ._pvalues import PValuesUnavailableError, UncalibratedPValuesWarning
from ._surf import SURF, MultiSURF, MultiSURFstar, SURFstar
from ._swrf import SWRF, MultiSWRF, MultiSWRFDB, MultiSWRFDBstar, MultiSWRFstar, SWRFstar
from ._turf import TuRF
from ._murelief import MuRelief
from ._iter import Iter
from ._vls import VLS

# The estimators are the registry's (imported above by name, so that tools and readers see
# them; tests/test_registry.py checks that the two agree).
__all__ = list(estimator_names()) + [
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
