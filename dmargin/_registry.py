"""The public estimators, listed once.

Each entry names a class, the module that defines it, the section of the API
page that documents it, the command line's ``--method`` values that fit it
and the parameters an instance needs.  Everything that lists estimators reads
this list: ``dmargin`` exports each entry's class (``dmargin.__all__``), the
command line builds its ``--method`` table from it, the API page
(``docs/api.rst``, through ``docs/conf.py``) and its cost table are generated
from it at build time, and the tests take their lists from it (scikit-learn's
conformance checks, the execution-mode coverage, the cost model).  An
estimator added here is exported, documented, checked and covered; one
missing here is none of those.  ``docs/contributing/adding_an_estimator.md``
is the recipe.

A leaf: it names modules and imports no dmargin module at import time
(:func:`estimators` and :func:`example` read the classes from the package
when called), so any module may read it without an import cycle.
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

_NONE = MappingProxyType({})

#: The API page's sections of estimators, in the page's order: ``{key: title}``.
SECTIONS = {
    "relief": "The Relief family",
    "knockoffs": "The knockoff filter",
    "immigrate": "IMMIGRATE",
    "boosting": "Boosting margins",
    "ldm": "Margin distributions",
}


class Estimator(NamedTuple):
    """A public estimator.

    Attributes
    ----------
    name : str
        Its class name, exported by ``dmargin``.
    module : str
        The module that defines it, relative to the package (``"relief._relief"``).
    section : str
        Where the API page lists it: a key of :data:`SECTIONS`.
    methods : mapping
        The command line's ``--method`` values that fit it, each with the parameters it
        sets.
    params : mapping
        The parameters an instance needs (a wrapper's ``estimator``): what the
        command line's methods, the tests and the pages' cost table build it with.

    In ``methods`` and ``params`` a value that is the name of a registered estimator
    (TuRF's ``"estimator": "MultiSURF"``) stands for that estimator with its defaults.
    """

    name: str
    module: str
    section: str
    methods: Mapping[str, dict] = _NONE
    params: Mapping[str, object] = _NONE


#: Every public estimator, by family (the order of ``dmargin.__all__`` and of the API page).
ESTIMATORS = (
    # The Relief family
    Estimator("Relief", "relief._relief", "relief", {"relief": {}}),
    Estimator("ReliefF", "relief._relief", "relief", {"relieff": {}}),
    Estimator("RReliefF", "relief._regression", "relief", {"rrelieff": {}}),
    Estimator("IRelief", "irelief._irelief", "relief", {"irelief": {}}),
    Estimator(
        "OnlineIRelief", "irelief._online", "relief", {"online-irelief": {"reference_size": 2000}}
    ),
    Estimator("SURF", "surf._surf", "relief", {"surf": {}}),
    Estimator("SURFstar", "surf._surf", "relief", {"surfstar": {}}),
    Estimator("MultiSURF", "surf._surf", "relief", {"multisurf": {}}),
    Estimator("MultiSURFstar", "surf._surf", "relief", {"multisurfstar": {}}),
    Estimator("SWRF", "surf._swrf", "relief", {"swrf": {}}),
    Estimator("SWRFstar", "surf._swrf", "relief", {"swrfstar": {}}),
    Estimator("MultiSWRF", "surf._swrf", "relief", {"multiswrf": {}}),
    Estimator("MultiSWRFstar", "surf._swrf", "relief", {"multiswrfstar": {}}),
    Estimator("MultiSWRFDB", "surf._swrf", "relief", {"multiswrfdb": {}}),
    Estimator("MultiSWRFDBstar", "surf._swrf", "relief", {"multiswrfdbstar": {}}),
    Estimator("MuRelief", "relief._murelief", "relief", {"murelief": {}}),
    Estimator(
        "TuRF",
        "wrappers._turf",
        "relief",
        {"turf": {"estimator": "MultiSURF"}},
        {"estimator": "ReliefF"},
    ),
    Estimator(
        "Iter",
        "wrappers._iter",
        "relief",
        {"iter": {"estimator": "MultiSURF"}},
        {"estimator": "ReliefF"},
    ),
    Estimator(
        "VLS",
        "wrappers._vls",
        "relief",
        {"vls": {"estimator": "MultiSURF"}},
        {"estimator": "ReliefF"},
    ),
    Estimator("Simba", "relief._simba", "relief", {"simba": {}}),
    # The knockoff filter: features selected at a false discovery rate (the Python API)
    Estimator(
        "KnockoffSelector", "knockoffs._filter", "knockoffs", params={"estimator": "ReliefF"}
    ),
    # IMMIGRATE
    Estimator("Immigrate", "immigrate._immigrate", "immigrate", {"immigrate": {}}),
    Estimator("IM4E", "immigrate._im4e", "immigrate", {"im4e": {}}),
    Estimator("IM4EImmigrate", "immigrate._immigrate", "immigrate", {"im4e-immigrate": {}}),
    Estimator("BoostedImmigrate", "immigrate._boosted", "immigrate", {"bim": {}}),
    # Boosting
    Estimator("AdaBoostStumps", "boosting._boosting", "boosting", {"adaboost": {}}),
    Estimator("SBSMF", "boosting._boosting", "boosting", {"sbs-mf": {}}),
    Estimator("AdaBoostCR", "boosting._boosting", "boosting", {"adaboost-cr": {}}),
    Estimator("BDSFS", "boosting._boosting", "boosting", {"bdsfs": {}}),
    # LDM
    Estimator("LDM", "ldm._machine", "ldm"),  # a classifier; its feature ranking is LDMRFE's
    Estimator("LDMRFE", "ldm._rfe", "ldm", {"ldm-rfe": {}, "ldm-rfe-linear": {"kernel": "linear"}}),
    Estimator("SVMRFE", "ldm._rfe", "ldm", {"svm-rfe": {}}),
)


def estimator_names() -> tuple[str, ...]:
    """The public estimators' class names, in the order of :data:`ESTIMATORS`."""
    return tuple(entry.name for entry in ESTIMATORS)


def entry(name: str) -> Estimator:
    """The registry's entry of the estimator ``name``."""
    for registered in ESTIMATORS:
        if registered.name == name:
            return registered
    raise KeyError(f"{name!r} is not a registered estimator (dmargin/_registry.py lists them)")


def estimator_class(registered: Estimator) -> type:
    """The class an entry names, imported from its module (what ``dmargin`` exports)."""
    module = import_module(f"{__package__}.{registered.module}")
    return getattr(module, registered.name)


def estimators() -> list[tuple[str, type]]:
    """``[(name, class)]`` of every public estimator (as scikit-learn's
    ``all_estimators``), read from the ``dmargin`` package when asked."""
    package = import_module(__package__)
    return [(name, getattr(package, name)) for name in estimator_names()]


def build(name: str, params: Mapping[str, object] = _NONE):
    """The estimator ``name`` with ``params``, where a value that names a registered
    estimator is that estimator with its defaults."""
    package = import_module(__package__)
    known = set(estimator_names())
    resolved = {
        key: getattr(package, value)() if isinstance(value, str) and value in known else value
        for key, value in params.items()
    }
    return getattr(package, name)(**resolved)


def example(name: str, **params):
    """An instance of the estimator ``name``: its entry's ``params`` (what it needs),
    updated with ``params``.  What the tests and the pages' cost table build."""
    return build(name, {**entry(name).params, **params})


def cli_methods() -> dict[str, tuple[str, dict]]:
    """The command line's ``--method`` values: ``{method: (class name, parameters)}``."""
    return {
        method: (registered.name, dict(params))
        for registered in ESTIMATORS
        for method, params in registered.methods.items()
    }
