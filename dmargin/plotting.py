"""Plots of fitted estimators (matplotlib is an optional dependency: ``dmargin[plot]``)."""

from __future__ import annotations

import numpy as np


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("Plotting needs matplotlib: pip install 'dmargin[plot]'.") from err
    return plt


def _feature_names(est, n):
    names = getattr(est, "feature_names_in_", None)
    if names is None:
        return [f"x{i}" for i in range(n)]
    return [str(v) for v in names]


def plot_weight_matrix(est, *, top=None, ax=None, cmap="viridis", annotate=None):
    """Heat map of an IMMIGRATE weight matrix with feature names (Zhao, Hong & Liu 2020).

    Parameters
    ----------
    est : fitted Immigrate, IM4EImmigrate or BoostedImmigrate
    top : int, default=None
        Show only the ``top`` features with the largest diagonal weights
        (rows and columns in that order); ``None`` shows all.
    ax : matplotlib Axes, default=None
    cmap : str, default="viridis"
    annotate : bool, default=None
        Write the weights in the cells; by default when at most 15 features
        are shown.

    Returns
    -------
    ax : matplotlib Axes
    """
    plt = _pyplot()
    W = np.asarray(est.weight_matrix_)
    features = getattr(est, "features_", np.arange(W.shape[0]))
    names = np.asarray(_feature_names(est, est.n_features_in_), dtype=object)[features]
    order = np.argsort(-np.diag(W), kind="stable")[: top or W.shape[0]]
    W, names = W[np.ix_(order, order)], names[order]
    if ax is None:
        size = 0.35 * len(order) + 2.5
        _, ax = plt.subplots(figsize=(size + 1.2, size))
    image = ax.imshow(W, cmap=cmap, vmin=0.0)
    ax.set_xticks(range(len(order)), names, rotation=90)
    ax.set_yticks(range(len(order)), names)
    ax.figure.colorbar(image, ax=ax, label="weight")
    ax.set_title("IMMIGRATE weight matrix", fontsize=10)
    if annotate if annotate is not None else len(order) <= 15:
        for i in range(len(order)):
            for j in range(len(order)):
                ax.text(
                    j,
                    i,
                    f"{W[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if W[i, j] < 0.6 * W.max() else "black",
                )
    return ax


def plot_feature_weights(est, *, top=20, ax=None):
    """Bar chart of the ``top`` feature weights of any fitted dmargin selector.

    Parameters
    ----------
    est : fitted estimator with ``feature_importances_``
    top : int, default=20
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes
    """
    plt = _pyplot()
    w = np.asarray(est.feature_importances_)
    names = np.asarray(_feature_names(est, w.size), dtype=object)
    order = np.argsort(-w, kind="stable")[:top]
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.3 * len(order) + 1.5))
    ax.barh(range(len(order)), w[order][::-1])
    ax.set_yticks(range(len(order)), names[order][::-1])
    ax.set_xlabel("weight")
    ax.set_title(f"{type(est).__name__}: top {len(order)} features")
    return ax
