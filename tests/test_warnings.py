"""Every warning dmargin raises names the user's line, whatever lies between.

A warning raised deep in a fit (I-RELIEF's ``ConvergenceWarning``, the door's
``UserWarning``) is reported at the user's call: a plain fit, the same estimator
inside TuRF, Iter or VLS, inside a scikit-learn ``Pipeline`` or cross-validation.
All go through ``dmargin._utils.warn`` (``tests/test_layout.py`` checks that no
module calls ``warnings.warn`` itself).
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from dmargin import VLS, IRelief, Iter, ReliefF, TuRF
from dmargin._utils import user_stacklevel, warn


def _data(n=40, a=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, a))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _unconverged():
    return IRelief(max_iter=1, tol=1e-12)


def _here():
    """The line after the caller's: where the fit under test is called."""
    return inspect.currentframe().f_back.f_lineno + 1


def _reported(category, fit, text="I-RELIEF did not converge"):
    """``(filename, lineno)`` of each ``category`` warning saying ``text`` that
    ``fit()`` raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    found = [
        (w.filename, w.lineno)
        for w in caught
        if issubclass(w.category, category) and text in str(w.message)
    ]
    assert found, f"no {category.__name__} saying {text!r} was raised"
    return found


def test_a_plain_fit_warns_at_the_users_line():
    X, y = _data()
    line = _here()
    found = _reported(ConvergenceWarning, lambda: _unconverged().fit(X, y))
    assert set(found) == {(__file__, line)}


WRAPPERS = {
    "TuRF": lambda est: TuRF(est, pct=0.5, keep=2),
    "Iter": lambda est: Iter(est, max_iter=2),
    "VLS": lambda est: VLS(est, num_feature_subset=2, size_feature_subset=3, random_state=0),
}


@pytest.mark.parametrize("wrapper", ["TuRF", "VLS"])
def test_a_wrapped_estimator_warns_at_the_users_line(wrapper):
    X, y = _data()
    selector = WRAPPERS[wrapper](_unconverged())  # Iter takes no IRelief: the test below
    line = _here()
    found = _reported(ConvergenceWarning, lambda: selector.fit(X, y))
    assert set(found) == {(__file__, line)}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_a_warning_of_the_door_inside_a_wrapper_is_at_the_users_line(wrapper):
    # Every class with one row: the inner ReliefF's fit door warns.
    X = np.random.default_rng(1).normal(size=(6, 4))
    y = np.arange(6)
    selector = WRAPPERS[wrapper](ReliefF(n_neighbors=1))
    line = _here()
    found = _reported(UserWarning, lambda: selector.fit(X, y), "every class has a single row")
    assert set(found) == {(__file__, line)}


def test_inside_scikit_learns_meta_estimators_the_users_line():
    X, y = _data()
    pipe = make_pipeline(_unconverged(), LinearSVC())
    line = _here()
    found = _reported(ConvergenceWarning, lambda: pipe.fit(X, y))
    assert set(found) == {(__file__, line)}
    line = _here()
    found = _reported(ConvergenceWarning, lambda: cross_val_score(pipe, X, y, cv=2))
    assert {f for f in found if f[0] == __file__} == {(__file__, line)}
    assert all(f[0] == __file__ for f in found), found


def test_outside_dmargin_the_caller_itself_is_the_user():
    lines = []

    def call():
        lines.append(inspect.currentframe().f_lineno + 1)
        warn("plain", UserWarning)

    assert _reported(UserWarning, call, "plain") == [(__file__, lines[0])]
    assert user_stacklevel() == 1  # this frame


@pytest.mark.spark
def test_a_spark_stage_warns_at_the_users_line_also_inside_a_pyspark_pipeline(spark):
    # pyspark.ml's Estimator.fit calls the stage's _fit; a Pipeline adds its own frames.
    import pandas as pd
    from pyspark.ml import Pipeline

    from dmargin.spark import MarginSelector

    X, y = _data(n=60, a=4)
    names = [f"f{j}" for j in range(X.shape[1])]
    df = spark.createDataFrame(pd.DataFrame(X, columns=names).assign(label=y))
    stage = MarginSelector(estimator=ReliefF(), inputCols=names, threshold=1e6)
    text = "selected no feature"
    line = _here()
    assert set(_reported(UserWarning, lambda: stage.fit(df), text)) == {(__file__, line)}
    pipeline = Pipeline(stages=[stage])
    line = _here()
    assert set(_reported(UserWarning, lambda: pipeline.fit(df), text)) == {(__file__, line)}
