"""The public estimators, listed once.

``dmargin.__all__``, the command line's ``--method`` table and the tests
(scikit-learn's conformance checks, the execution-mode coverage, the cost
model's) read this list, so an estimator added here is exported, checked and
covered, and one missing here fails those tests.

A leaf: it names the estimators and imports no dmargin module at import time
(:func:`estimators` reads the classes from the package when called), so any
module may read it without an import cycle, wherever the classes move.
Registering each class from its own definition, through ``__init_subclass__``
on the shared base, would also register the private family bases and every
subclass a user or a test defines, and the list would be complete only once
every estimator module had been imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import MappingProxyType
from typing import NamedTuple


class Estimator(NamedTuple):
    """A public estimator: its class name (exported by ``dmargin``) and the command
    line's ``--method`` values that fit it, each with the parameters it sets (a value
    that is the name of a registered estimator, such as TuRF's ``estimator``, stands
    for that estimator with its defaults)."""

    name: str
    methods: Mapping[str, dict] = MappingProxyType({})


#: Every public estimator, by family (the order of ``dmargin.__all__``).
ESTIMATORS = (
    # The Relief family
    Estimator("Relief", {"relief": {}}),
    Estimator("ReliefF", {"relieff": {}}),
    Estimator("RReliefF", {"rrelieff": {}}),
    Estimator("IRelief", {"irelief": {}}),
    Estimator("OnlineIRelief", {"online-irelief": {"reference_size": 2000}}),
    Estimator("SURF", {"surf": {}}),
    Estimator("SURFstar", {"surfstar": {}}),
    Estimator("MultiSURF", {"multisurf": {}}),
    Estimator("MultiSURFstar", {"multisurfstar": {}}),
    Estimator("SWRF", {"swrf": {}}),
    Estimator("SWRFstar", {"swrfstar": {}}),
    Estimator("MultiSWRF", {"multiswrf": {}}),
    Estimator("MultiSWRFstar", {"multiswrfstar": {}}),
    Estimator("MultiSWRFDB", {"multiswrfdb": {}}),
    Estimator("MultiSWRFDBstar", {"multiswrfdbstar": {}}),
    Estimator("MuRelief", {"murelief": {}}),
    Estimator("TuRF", {"turf": {"estimator": "MultiSURF"}}),
    Estimator("Iter", {"iter": {"estimator": "MultiSURF"}}),
    Estimator("VLS", {"vls": {"estimator": "MultiSURF"}}),
    Estimator("Simba", {"simba": {}}),
    # The knockoff filter: features selected at a false discovery rate (the Python API)
    Estimator("KnockoffSelector"),
    # IMMIGRATE
    Estimator("Immigrate", {"immigrate": {}}),
    Estimator("IM4E", {"im4e": {}}),
    Estimator("IM4EImmigrate", {"im4e-immigrate": {}}),
    Estimator("BoostedImmigrate", {"bim": {}}),
    # Boosting
    Estimator("AdaBoostStumps", {"adaboost": {}}),
    Estimator("SBSMF", {"sbs-mf": {}}),
    Estimator("AdaBoostCR", {"adaboost-cr": {}}),
    Estimator("BDSFS", {"bdsfs": {}}),
    # LDM
    Estimator("LDM"),  # a classifier; its feature ranking is LDMRFE's
    Estimator("LDMRFE", {"ldm-rfe": {}, "ldm-rfe-linear": {"kernel": "linear"}}),
    Estimator("SVMRFE", {"svm-rfe": {}}),
)


def estimator_names() -> tuple[str, ...]:
    """The public estimators' class names, in the order of :data:`ESTIMATORS`."""
    return tuple(entry.name for entry in ESTIMATORS)


def estimators() -> list[tuple[str, type]]:
    """``[(name, class)]`` of every public estimator (as scikit-learn's
    ``all_estimators``), read from the ``dmargin`` package when asked."""
    package = import_module(__package__)
    return [(name, getattr(package, name)) for name in estimator_names()]


def cli_methods() -> dict[str, tuple[str, dict]]:
    """The command line's ``--method`` values: ``{method: (class name, parameters)}``."""
    return {
        method: (entry.name, dict(params))
        for entry in ESTIMATORS
        for method, params in entry.methods.items()
    }
