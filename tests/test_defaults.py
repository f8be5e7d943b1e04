"""What a new user meets first: default estimators on the bundled data fit without a
word; the words that are said (a wide-data hint, a clamped ``n_features_to_select``)
are said once and say what happened."""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import dmargin
from dmargin.datasets import load_dataset
from dmargin.immigrate import _immigrate

BUNDLED = ["wdbc", "heart"]

# Every estimator with its defaults, except where a default makes the fit take tens of
# seconds on wdbc: there the same code path runs with fewer rounds.
DEFAULTS = [
    pytest.param(dmargin.Immigrate, id="Immigrate"),
    pytest.param(dmargin.IM4E, id="IM4E"),
    pytest.param(dmargin.IM4EImmigrate, id="IM4EImmigrate"),
    pytest.param(lambda: dmargin.BoostedImmigrate(n_estimators=10), id="BoostedImmigrate"),
    pytest.param(dmargin.IRelief, id="IRelief"),
    pytest.param(dmargin.OnlineIRelief, id="OnlineIRelief"),
    pytest.param(dmargin.Relief, id="Relief"),
    pytest.param(dmargin.ReliefF, id="ReliefF"),
    pytest.param(dmargin.Simba, id="Simba"),
    pytest.param(dmargin.AdaBoostStumps, id="AdaBoostStumps"),
    pytest.param(dmargin.SBSMF, id="SBSMF"),
    pytest.param(dmargin.AdaBoostCR, id="AdaBoostCR"),
    pytest.param(dmargin.BDSFS, id="BDSFS"),
    pytest.param(dmargin.LDM, id="LDM"),
    pytest.param(dmargin.SVMRFE, id="SVMRFE"),
    pytest.param(lambda: dmargin.LDMRFE(step=0.5), id="LDMRFE"),
]


@pytest.fixture(scope="module", params=BUNDLED)
def bundled(request):
    return load_dataset(request.param)


@pytest.mark.parametrize("make", DEFAULTS)
def test_defaults_on_bundled_data_fit_without_any_warning(make, bundled):
    X, y = bundled
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make().fit(X, y)


@pytest.mark.parametrize("make", [dmargin.Immigrate, dmargin.IM4E, dmargin.IM4EImmigrate])
def test_immigrate_family_runs_max_iter_steps_by_default(make, bundled):
    """tol=0: the paper's fixed 10 steps, history kept; no early stop, no warning."""
    X, y = bundled
    est = make().fit(X, y)
    assert est.tol == 0 and est.max_iter == 10
    assert est.n_iter_ == 10 and len(est.history_) == 10
    assert np.all(np.isfinite(est.history_["cost"])) and np.all(est.history_["change"] >= 0)


def test_immigrate_tol_opts_in_to_the_convergence_check():
    """tol > 0: early stop once W settles, and a ConvergenceWarning only then when it does not."""
    X, y = load_dataset("heart")
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=10 steps"):
        est = dmargin.Immigrate(tol=1e-4).fit(X, y)  # W keeps moving on heart
    assert est.n_iter_ == 10 and est.history_["change"][-1] >= 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loose = dmargin.Immigrate(tol=10.0).fit(X, y)  # ||W - W'||_F <= 2 < 10: one step
    assert loose.n_iter_ == 1


# --- the wide-data hint ---------------------------------------------------------------


def _wide(n, a, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, a))
    y = np.repeat([0, 1], n // 2)
    X[:, 0] += 2.0 * y
    return X, y


def test_wide_data_hint_names_im4e_immigrate_and_the_estimate():
    """More than 1000 features: one UserWarning, before the fit, pointing to IM4EImmigrate."""
    X, y = _wide(20, 1001)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dmargin.Immigrate(max_iter=1).fit(X, y)
    hints = [w for w in caught if "IM4EImmigrate" in str(w.message)]
    assert len(caught) == len(hints) == 1
    assert hints[0].category is UserWarning
    assert hints[0].filename == __file__  # points at the caller
    message = str(hints[0].message)
    assert "Immigrate on 20 x 1001 costs about N^2 A^2" in message
    assert "max_iter=1" in message and " s for " in message
    assert "prescreens features with IM4E" in message


def test_wide_data_hint_on_estimated_time(monkeypatch):
    """Few features but an estimate over a minute (here: a 10,000 times slower machine)."""
    X, y = load_dataset("heart")
    from dmargin import _cost
    from dmargin.immigrate import _cost as rates

    monkeypatch.setattr(rates, "PAIR_RATE", rates.PAIR_RATE / 1e4)
    monkeypatch.setattr(rates, "EIGH_RATE", rates.EIGH_RATE / 1e4)
    seconds = rates.immigrate_seconds(270, 13, 10)
    assert seconds > _immigrate._WIDE_SECONDS  # the warning's threshold
    estimate = re.escape(_cost.format_seconds(seconds))
    with pytest.warns(
        UserWarning,
        match=rf"Immigrate on 270 x 13 .* ~{estimate} for "
        r"max_iter=10 .* IM4EImmigrate",
    ):
        dmargin.Immigrate().fit(X, y)


def test_cost_model_flags_the_reported_case_and_not_the_bundled_data():
    """50 x 5000 took 417 s: the model says minutes; the bundled sets: well under one."""
    assert 200 < dmargin.fit_cost(dmargin.Immigrate(), 50, 5000).seconds < 2000
    for name in BUNDLED:
        X, _ = load_dataset(name)
        seconds = dmargin.fit_cost(dmargin.Immigrate(), *X.shape).seconds
        assert seconds < _immigrate._WIDE_SECONDS / 10  # the warning's threshold


def test_no_wide_data_hint_from_im4e_immigrate():
    """IM4EImmigrate is the remedy: its inner IMMIGRATE fit does not point to itself."""
    X, y = _wide(20, 1001)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = dmargin.IM4EImmigrate(max_iter=2, threshold=1e-3).fit(X, y)
    assert 0 in est.features_


# --- n_features_to_select beyond the number of features ---------------------------------


CLAMPED = [
    pytest.param(lambda: dmargin.Immigrate(n_features_to_select=100, max_iter=2), id="Immigrate"),
    pytest.param(lambda: dmargin.ReliefF(n_features_to_select=100), id="ReliefF"),
    pytest.param(lambda: dmargin.IRelief(n_features_to_select=100), id="IRelief"),
    pytest.param(
        lambda: dmargin.AdaBoostStumps(n_features_to_select=100, n_estimators=5),
        id="AdaBoostStumps",
    ),
    pytest.param(lambda: dmargin.SBSMF(n_features_to_select=100, n_estimators=5), id="SBSMF"),
    pytest.param(lambda: dmargin.BDSFS(n_features_to_select=100), id="BDSFS"),
    pytest.param(lambda: dmargin.LDMRFE(n_features_to_select=100), id="LDMRFE"),
    pytest.param(lambda: dmargin.SVMRFE(n_features_to_select=100), id="SVMRFE"),
]


@pytest.mark.parametrize("make", CLAMPED)
def test_n_features_to_select_beyond_the_features_warns_once_and_keeps_all(make):
    X, y = load_dataset("wdbc")
    est = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
        Xt = est.transform(X)
        est.transform(X)
    assert [str(w.message) for w in caught] == [
        "n_features_to_select=100 exceeds the 30 features; all 30 are kept."
    ]
    assert caught[0].category is UserWarning and caught[0].filename == __file__
    assert Xt.shape == (569, 30) and est.get_support().all()


def test_n_features_to_select_within_the_features_is_quiet():
    X, y = load_dataset("wdbc")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in (30, 0.5):
            dmargin.ReliefF(n_features_to_select=k).fit(X, y).transform(X)
