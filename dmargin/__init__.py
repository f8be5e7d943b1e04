"""dmargin: margin-based feature selection, from a laptop to a Dask cluster."""

from .boosting._boosting import BDSFS, SBSMF, AdaBoostCR, AdaBoostStumps
from ._cost import FitCost, LongFitWarning, fit_cost
from .knockoffs._filter import KnockoffSelector
from .knockoffs._sampler import KnockoffSampler
from .immigrate._boosted import BoostedImmigrate
from .immigrate._immigrate import IM4E, IM4EImmigrate, Immigrate
from .ldm._machine import LDM
from .ldm._rfe import LDMRFE, SVMRFE
from .irelief._online import OnlineIRelief
from .io._parquet import iter_parquet, read_parquet
from ._registry import estimator_names
from .relief._regression import RReliefF
from .irelief._irelief import IRelief
from .relief._relief import Relief, ReliefF
from .relief._simba import Simba
from ._pvalues import PValuesUnavailableError, UncalibratedPValuesWarning
from .surf._surf import SURF, MultiSURF, MultiSURFstar, SURFstar
from .surf._swrf import SWRF, MultiSWRF, MultiSWRFDB, MultiSWRFDBstar, MultiSWRFstar, SWRFstar
from .wrappers._turf import TuRF
from .relief._murelief import MuRelief
from .wrappers._iter import Iter
from .wrappers._vls import VLS

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
