"""The one prediction over dask blocks (``dmargin/_predict.py``) and its callers.

AdaBoost, LDM and the IMMIGRATE family check new rows and map their rule over
dask blocks through the same helpers: the same checks, lazy or gathered as
asked, and an unfitted estimator refused before its fitted state is read.
"""

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import dmargin
from dmargin._predict import check_new_rows, new_dask_rows, predict_blocks

N, A = 60, 4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], N // 2)
    X = rng.normal(size=(N, A))
    X[:, 1] += 2.0 * y
    return X, y


@pytest.fixture(scope="module")
def stumps(data):
    return dmargin.AdaBoostStumps(n_estimators=5).fit(*data)


def _decision(X, stumps):
    return stumps.decision(X)


def _signed(X, y, stumps):
    return np.where(np.asarray(y) == 1, 1.0, -1.0) * stumps.decision(X)


def test_check_new_rows_checks_and_scales(stumps, data):
    X, _ = data

    class Shift:
        def apply(self, X):
            return X + 1.0

    np.testing.assert_array_equal(check_new_rows(stumps, X, fitted="estimator_weights_"), X)
    np.testing.assert_array_equal(check_new_rows(stumps, X, scaling=Shift()), X + 1.0)
    with pytest.raises(ValueError, match="expecting 4 features"):
        check_new_rows(stumps, X[:, :3])
    with pytest.raises(NotFittedError):
        check_new_rows(dmargin.AdaBoostStumps(), X, fitted="estimator_weights_")


def test_new_dask_rows_reads_metadata_only(data):
    X, y = data
    names = [f"f{j}" for j in range(A)]
    est = dmargin.AdaBoostStumps(n_estimators=5).fit(pd.DataFrame(X, columns=names), y)
    frame = dd.from_pandas(pd.DataFrame(X, columns=names), npartitions=3)
    rows = new_dask_rows(est, frame)
    assert isinstance(rows, da.Array) and rows.numblocks == (3, 1)
    with pytest.raises(ValueError, match="not the columns seen in fit"):
        new_dask_rows(est, frame[names[::-1]])
    with pytest.raises(ValueError, match="fitted with 4 features"):
        new_dask_rows(est, da.from_array(X[:, :3], chunks=20))


def test_predict_blocks_is_lazy_or_gathered(stumps, data):
    X, y = data
    Xd = da.from_array(X, chunks=(20, A))
    lazy = predict_blocks(stumps, _decision, Xd, stumps._stumps, fitted="estimator_weights_")
    assert isinstance(lazy, da.Array) and lazy.numblocks == (3,)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(lazy.compute(), stumps.decision_function(X))
        # numpy rows beside dask labels: put on dask beside y's blocks, then gathered
        got = predict_blocks(
            stumps,
            _signed,
            X,
            stumps._stumps,
            y=da.from_array(y, chunks=20),
            gather_as="the signed votes",
        )
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, np.where(y == 1, 1.0, -1.0) * stumps.decision_function(X))


@pytest.mark.parametrize(
    "call",
    [
        lambda X, y: dmargin.AdaBoostStumps().decision_function(X),
        lambda X, y: dmargin.AdaBoostStumps().margins(X.compute(), y),
        lambda X, y: dmargin.AdaBoostStumps().feature_margins(X.compute(), y),
        lambda X, y: dmargin.LDM().decision_function(X),
        lambda X, y: dmargin.Immigrate().predict(X),
        lambda X, y: dmargin.BoostedImmigrate().predict(X),
    ],
    ids=[
        "AdaBoost-decision",
        "AdaBoost-margins",
        "AdaBoost-feature-margins",
        "LDM-decision",
        "Immigrate-predict",
        "BIM-predict",
    ],
)
def test_unfitted_estimators_are_refused_on_dask_rows(data, call):
    X, y = data
    with pytest.raises(NotFittedError):
        call(da.from_array(X, chunks=(20, A)), da.from_array(y, chunks=20))
