"""Plots render, with names and values where the user expects them."""

import numpy as np
import pytest

import dmargin
from dmargin.datasets import load_dataset

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_weight_matrix_heat_map(tmp_path):
    from dmargin.plotting import plot_weight_matrix

    X, y = load_dataset("heart")
    est = dmargin.Immigrate().fit(X, y)
    ax = plot_weight_matrix(est, top=6)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    top6 = list(X.columns[np.argsort(-np.diag(est.weight_matrix_), kind="stable")[:6]])
    assert labels == top6
    shown = ax.images[0].get_array()
    assert shown.shape == (6, 6) and np.isclose(shown[0, 0], np.diag(est.weight_matrix_).max())
    ax.figure.savefig(tmp_path / "w.png")
    assert (tmp_path / "w.png").stat().st_size > 1000


def test_feature_weight_bars():
    from dmargin.plotting import plot_feature_weights

    X, y = load_dataset("wdbc")
    est = dmargin.ReliefF().fit(X, y)
    ax = plot_feature_weights(est, top=5)
    assert len(ax.patches) == 5
    assert ax.get_yticklabels()[-1].get_text() == X.columns[np.argmax(est.feature_importances_)]
