"""One list of the public estimators (``dmargin/_registry.py``), and everything that
must agree with it: the package's exports, the command line's methods, the cost
model, the conformance checks and the execution-mode coverage."""

import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import dmargin
from dmargin import cli
from dmargin._registry import (
    ESTIMATORS,
    SECTIONS,
    cli_methods,
    estimator_names,
    estimators,
    example,
)

NAMES = estimator_names()


def test_names_are_unique():
    assert len(NAMES) == len(set(NAMES))
    methods = [m for entry in ESTIMATORS for m in entry.methods]
    assert len(methods) == len(set(methods))


def test_the_package_exports_exactly_the_registered_estimators():
    exported = {
        name
        for name, obj in vars(dmargin).items()
        if isinstance(obj, type) and issubclass(obj, BaseEstimator)
    }
    # (KnockoffSampler draws knockoffs for KnockoffSelector: it selects no features.)
    assert exported - {"KnockoffSampler"} == set(NAMES)  # an import without a registry entry
    assert set(NAMES) <= set(dmargin.__all__)
    for name, cls in estimators():  # a registry entry without an import fails here
        assert cls is getattr(dmargin, name) and cls.__name__ == name
    for entry in ESTIMATORS:  # each entry names the module that defines its class
        assert getattr(dmargin, entry.name).__module__ == f"dmargin.{entry.module}", entry


def test_every_entry_is_in_a_section_of_the_api_page():
    assert {entry.section for entry in ESTIMATORS} <= set(SECTIONS)
    # docs/conf.py puts each section's estimators where docs/api.rst asks, under its title.
    page = (Path(__file__).resolve().parents[1] / "docs" / "api.rst").read_text()
    asked = re.findall(r"^\.\. dmargin-estimators:: (\w+)$", page, re.MULTILINE)
    assert asked == list(SECTIONS)
    for key, title in SECTIONS.items():
        heading = page.index(f"\n{title}\n{'-' * len(title)}\n")
        assert page.index(f".. dmargin-estimators:: {key}\n") > heading, key


def test_every_registered_estimator_is_covered_in_every_execution_mode():
    # test_modes runs each estimator in-process, threaded and on a cluster; its own
    # list of them must name the registry's (a new estimator cannot be left out).
    from tests.test_modes import CASES, COVERED

    assert COVERED == set(NAMES)
    assert {type(p.values[0]()).__name__ for p in CASES} == set(NAMES)


def test_every_registered_estimator_is_conformance_checked():
    from tests.test_sklearn import CHECK_PARAMS
    from tests.test_sklearn import ESTIMATORS as CHECKED

    assert tuple(type(est).__name__ for est in CHECKED) == NAMES
    assert set(CHECK_PARAMS) <= set(NAMES)  # no settings for an estimator that is gone


def test_the_cli_methods_are_the_registrys():
    assert cli.METHODS == cli_methods()
    for method, (name, params) in cli.METHODS.items():
        assert name in NAMES, method
        inner = {k: getattr(dmargin, v)() for k, v in params.items() if v in NAMES}
        assert set(params) <= set(getattr(dmargin, name)(**inner).get_params()), method


@pytest.mark.parametrize("name", NAMES)
def test_every_estimator_states_its_cost(name):
    """``fit_cost`` asks the estimator; one that does not answer is this failure, never a
    silent ``None``.  The answer is its own family's (defined in its own module, or by
    the registered estimator it is a variant of), not a default inherited from a
    shared base."""
    cls = getattr(dmargin, name)
    owner = next((k for k in cls.__mro__ if "_fit_cost" in vars(k)), None)
    assert owner is not None, f"{name} has no _fit_cost method"
    assert owner.__module__ == cls.__module__ or owner is getattr(dmargin, owner.__name__, None), (
        f"{name} inherits _fit_cost from {owner.__qualname__}"
    )
    cost = dmargin.fit_cost(example(name), 1000, 10)
    assert cost is None or isinstance(cost, dmargin.FitCost)


def test_fit_cost_refuses_what_is_not_a_dmargin_estimator():
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(TypeError, match="LogisticRegression states no cost"):
        dmargin.fit_cost(LogisticRegression(), 1000, 10)
