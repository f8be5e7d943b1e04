"""IMMIGRATE, IM4E, IM4E-IMMIGRATE and BIM: properties, paper claims, modes, bad input.

Brute-force equality with the reference semantics lives in
``test_immigrate_reference.py``; here: what W must satisfy, the paper's
synthetic interaction experiment (Zhao, Hong & Liu 2020, section 4.1), execution
modes, and behaviour on odd input.
"""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.model_selection import train_test_split

import dmargin
from dmargin.datasets import load_dataset


def as_dask(X, y, rows=23):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def crossed_gaussians(noise, seed=0):
    """Section 4.1: two correlated Gaussians separated along x2 - x1, plus crossed noise."""
    rng = np.random.default_rng(seed)
    cov, noise_cov = np.array([[1, 0.5], [0.5, 1]]), np.array([[8, 4], [4, 8]])
    k = int(round(noise * 100))
    X = np.vstack(
        [
            rng.multivariate_normal([4, 2], cov, 100 - k),
            rng.multivariate_normal([8, -2], noise_cov, k),
            rng.multivariate_normal([6, 0], cov, 100 - k),
            rng.multivariate_normal([2, 4], noise_cov, k),
        ]
    )
    return X, np.repeat([0, 1], 100)


@pytest.fixture(scope="module")
def heart_split():
    X, y = load_dataset("heart")
    return train_test_split(X, y, train_size=2 / 3, stratify=y, random_state=0)


@pytest.mark.parametrize("init", ["identity", "random", "array"])
@pytest.mark.parametrize("prune", [None, 0.05])
def test_weight_matrix_is_symmetric_nonnegative_unit_norm(blobs_multiclass, init, prune):
    X, y = blobs_multiclass
    start = (
        np.abs(np.random.default_rng(0).normal(size=(X.shape[1],) * 2)) if init == "array" else init
    )
    est = dmargin.Immigrate(init=start, prune=prune, random_state=1).fit(X, y)
    W = est.weight_matrix_
    np.testing.assert_allclose(W, W.T, atol=1e-15)
    assert np.all(W >= 0) and np.isfinite(W).all()
    assert np.isclose(np.linalg.norm(W), 1.0)
    np.testing.assert_array_equal(est.feature_importances_, np.diag(W))
    assert est.history_.dtype.names == ("cost", "change") and len(est.history_) == est.n_iter_
    if prune is not None and est.n_iter_ >= 5:
        assert np.all((W == 0) | (W >= prune))


def test_interactions_table(blobs_binary):
    X, y = blobs_binary
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"g{i}" for i in range(X.shape[1])])
    est = dmargin.Immigrate().fit(frame, y)
    table = est.interactions_
    assert len(table) == X.shape[1] * (X.shape[1] - 1) // 2
    assert np.all(np.diff(table["weight"]) <= 0)
    row = table.iloc[0]
    assert row["weight"] == est.weight_matrix_[row["i"], row["j"]]
    assert row["feature_i"] == f"g{row['i']}" and row["i"] < row["j"]


@pytest.mark.parametrize("seed", [0, 1])
def test_interaction_weight_is_learned_and_stable_under_noise(seed):
    """Section 4.1, Figure 3: W[0, 1] is learned and stays stable from 0% to 50% noise."""
    w01 = [
        dmargin.Immigrate().fit(*crossed_gaussians(noise, seed)).weight_matrix_[0, 1]
        for noise in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    ]
    assert min(w01) > 0.25
    assert max(w01) - min(w01) < 0.1


def test_prediction_rule(heart_split):
    Xtr, Xte, ytr, yte = heart_split
    est = dmargin.Immigrate().fit(Xtr, ytr)
    proba = est.predict_proba(Xte)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    pred = est.predict(Xte)
    np.testing.assert_array_equal(pred, est.classes_[np.argmax(proba, axis=1)])
    np.testing.assert_array_equal(pred, est.classes_[(est.decision_function(Xte) > 0).astype(int)])
    assert est.score(Xte, yte) > 0.7


def test_boosting_is_at_least_as_accurate_as_one_learner(heart_split):
    """Section 3.5: BIM on a held-out split of Statlog heart."""
    Xtr, Xte, ytr, yte = heart_split
    single = dmargin.Immigrate().fit(Xtr, ytr).score(Xte, yte)
    boosted = dmargin.BoostedImmigrate(n_estimators=30).fit(Xtr, ytr)
    assert boosted.score(Xte, yte) >= single
    assert len(boosted.estimators_) == len(boosted.estimator_weights_) >= 2
    assert np.all(boosted.estimator_weights_ > 0)
    kept_errors = boosted.estimator_errors_[
        (boosted.estimator_errors_ > 0) & (boosted.estimator_errors_ < 0.5)
    ]
    assert kept_errors.size == len(boosted.estimators_)


def test_im4e_weights_and_prescreen(blobs_multiclass):
    X, y = blobs_multiclass
    w = dmargin.IM4E().fit(X, y).feature_importances_
    assert np.all(w >= 0) and np.isclose(w.sum(), 1.0)
    simplex = dmargin.IM4E(weight_update="simplex", lam=0.5).fit(X, y).feature_importances_
    assert np.all(simplex >= 0) and np.isclose(simplex.sum(), 1.0)
    est = dmargin.IM4EImmigrate().fit(X, y)
    kept = np.flatnonzero(est.im4e_weights_ > 2 / X.shape[1])
    np.testing.assert_array_equal(est.features_, kept)
    assert est.weight_matrix_.shape == (est.features_.size,) * 2
    assert np.all(est.feature_importances_[np.setdiff1d(np.arange(X.shape[1]), est.features_)] == 0)
    assert set(est.interactions_["i"]) | set(est.interactions_["j"]) <= set(est.features_)
    assert est.predict(X).shape == (len(y),)


def test_im4e_immigrate_at_microarray_width():
    """Thousands of features, tens of rows: prescreen keeps a few, fit stays small."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3000))
    y = np.repeat([0, 1], 30)
    X[:, :5] += 1.5 * y[:, None]
    est = dmargin.IM4EImmigrate().fit(X, y)
    assert 2 <= est.features_.size < X.shape[1] // 4
    assert set(range(5)) <= set(est.features_)
    assert est.weight_matrix_.shape == (est.features_.size,) * 2


# --- execution modes ----------------------------------------------------------------

FAMILY = [
    pytest.param(lambda: dmargin.Immigrate(tol=0, max_iter=4), id="Immigrate"),
    pytest.param(
        lambda: dmargin.Immigrate(tol=0, max_iter=4, prune=0.05, sigma=0.5), id="Immigrate-pruned"
    ),
    pytest.param(lambda: dmargin.IM4E(tol=0, max_iter=4), id="IM4E"),
    pytest.param(lambda: dmargin.IM4EImmigrate(max_iter=3, threshold=0.1), id="IM4E-IMMIGRATE"),
    pytest.param(lambda: dmargin.BoostedImmigrate(n_estimators=3, max_iter=2), id="BIM"),
]


def _quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return est.fit(X, y)


def _compare(local, remote, X):
    for name in ("weight_matrix_", "feature_importances_", "history_", "estimator_weights_"):
        if hasattr(local, name):
            a, b = getattr(local, name), getattr(remote, name)
            if a.dtype.names:
                a, b = a.view(np.float64), b.view(np.float64)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10, err_msg=name)
    np.testing.assert_array_equal(local.predict(X), remote.predict(X))


@pytest.mark.parametrize("make", FAMILY)
def test_threaded_dask_equals_in_process(make, blobs_multiclass, threaded):
    X, y = blobs_multiclass
    _compare(_quiet_fit(make(), X, y), _quiet_fit(make(), *as_dask(X, y)), X)


@pytest.mark.cluster
@pytest.mark.parametrize("make", FAMILY)
def test_cluster_equals_in_process(make, blobs_multiclass, client):
    from distributed import get_task_stream

    X, y = blobs_multiclass
    local = _quiet_fit(make(), X, y)
    with get_task_stream(client) as stream:
        remote = _quiet_fit(make(), *as_dask(X, y))
    _compare(local, remote, X)
    tile_workers = {t["worker"] for t in stream.data if "dmargin-" in str(t["key"])}
    assert tile_workers == set(client.scheduler_info()["workers"])


# --- odd and bad input --------------------------------------------------------------


def test_one_sample_class_and_constant_feature_give_finite_results(blobs_multiclass):
    X, y = blobs_multiclass  # has a one-sample class "d" and a constant feature
    for est in (dmargin.Immigrate(), dmargin.IM4E(), dmargin.IM4EImmigrate()):
        est.fit(X, y)
        assert np.all(np.isfinite(est.feature_importances_))
        assert np.all(np.isfinite(est.history_["cost"]))
        assert np.all(np.isfinite(est.predict_proba(X)))
    W = dmargin.Immigrate().fit(X, y).weight_matrix_
    const = np.flatnonzero(np.ptp(X, axis=0) == 0)[0]
    assert np.all(W[const] == 0)


def test_no_negative_eigenvalue_keeps_previous_w():
    """Every nearest neighbour a miss, hits far apart: Sigma is positive semidefinite."""
    X = np.array([[0.0], [0.1], [10.0], [10.1]])
    y = np.array([0, 1, 0, 1])
    with pytest.warns(RuntimeWarning, match="no negative eigenvalue.*keeping the previous W"):
        est = dmargin.Immigrate(scale=None).fit(X, y)
    assert est.n_iter_ == 0 and est.weight_matrix_[0, 0] == 1.0


def test_far_apart_points_do_not_underflow():
    """exp(-q / sigma) underflows for every pair; log-sum-exp keeps W and costs finite."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) * 1e3
    y = np.repeat([0, 1, 2], 10)
    est = dmargin.Immigrate(scale=None, sigma=0.01).fit(X, y)
    assert np.all(np.isfinite(est.weight_matrix_)) and np.all(np.isfinite(est.history_["cost"]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"init": np.ones((2, 2))}, "init must be a finite nonnegative 4 x 4 matrix"),
        ({"init": -np.ones((4, 4))}, "nonnegative"),
        ({"sigma": 0}, "sigma=0"),
        ({"prune": -1.0}, "prune=-1.0"),
        ({"scale": "minmax"}, "scale='minmax'"),
    ],
)
def test_bad_parameters(params, match):
    X = np.random.default_rng(0).normal(size=(20, 4))
    with pytest.raises(ValueError, match=match):
        dmargin.Immigrate(**params).fit(X, np.repeat([0, 1], 10))


def test_bad_sample_weight():
    X = np.random.default_rng(0).normal(size=(20, 4))
    y = np.repeat([0, 1], 10)
    for bad in (np.ones(19), -np.ones(20), np.zeros(20), np.full(20, np.nan)):
        with pytest.raises(ValueError, match="sample_weight must be 20 finite nonnegative"):
            dmargin.Immigrate().fit(X, y, sample_weight=bad)


def test_predict_checks_width(blobs_binary):
    X, y = blobs_binary
    est = dmargin.Immigrate().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])


def test_dask_predict_input(blobs_binary, threaded):
    X, y = blobs_binary
    est = dmargin.Immigrate().fit(X, y)
    np.testing.assert_array_equal(est.predict(da.from_array(X, chunks=20)), est.predict(X))
