"""Groups of features for group knockoffs.

Dai & Barber, "The knockoff filter for FDR control in group-sparse and
multitask regression", ICML 2016; Spector & Janson, "Powerful knockoffs via
minimizing reconstructability", Annals of Statistics 2022 (MVR and maxent S
matrices for groups).

A feature nearly copied by others (wdbc's radius, perimeter and area) has a
knockoff that is nearly the feature itself: its statistic carries no signal.
Group knockoffs swap a whole group of correlated features with its knockoff
group at once, so S is block-diagonal by group and only the groups, not the
features inside one, must be told apart from their knockoffs.  The null tested
becomes "the group is independent of y given the other groups".
"""

from __future__ import annotations

import numpy as np

#: Default ``group_threshold``: features whose (average-linkage) absolute
#: correlation is at least this share a group.
GROUP_THRESHOLD = 0.7


def first_seen_labels(labels):
    """``labels`` renumbered 0..G-1 in the order of each group's first feature."""
    _, first, inverse = np.unique(np.asarray(labels), return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    return order[inverse.ravel()].astype(np.int64)


def cluster_groups(R, threshold):
    """Average-linkage clustering of the features on ``1 - |R|``, cut so that groups
    merge while their average absolute correlation is at least ``threshold``.

    Parameters
    ----------
    R : ndarray of shape (k, k)
        A correlation matrix.
    threshold : float in [0, 1]

    Returns
    -------
    labels : ndarray of int, shape (k,)
        0..G-1, numbered by each group's first feature.
    """
    k = R.shape[0]
    if k < 2:
        return np.zeros(k, dtype=np.int64)
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    D = 1.0 - np.abs(np.asarray(R, dtype=np.float64))
    D = np.clip((D + D.T) / 2, 0.0, 1.0)
    np.fill_diagonal(D, 0.0)
    tree = linkage(squareform(D, checks=False), method="average")
    # A merge at distance d joins groups whose average |r| is 1 - d; fcluster keeps
    # merges at d <= t, and the 1e-12 keeps an average of exactly `threshold` in.
    return first_seen_labels(fcluster(tree, t=1.0 - threshold + 1e-12, criterion="distance"))


def check_groups(groups, n_features):
    """User-given group labels as 0..G-1 (numbered by each group's first feature)."""
    labels = np.asarray(groups)
    if labels.ndim != 1 or labels.shape[0] != n_features:
        raise ValueError(
            f"groups has shape {labels.shape}; one label per feature expected, "
            f"shape ({n_features},), or groups='auto' or None."
        )
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError(
            "groups holds missing or infinite labels: give every feature a "
            "group label (features with the same label form a group)."
        )
    try:
        return first_seen_labels(labels)
    except TypeError:
        raise ValueError(
            "groups must hold labels of one type, integers or strings "
            "(features with the same label form a group), or be 'auto' or "
            "None."
        ) from None


def group_sums(W, groups, n_groups):
    """``W_g = sum_{j in g} W_j`` along the last axis: antisymmetric under a group swap."""
    W = np.asarray(W, dtype=np.float64)
    out = np.zeros(W.shape[:-1] + (n_groups,))
    np.add.at(out, (..., groups), W)
    return out


def knockpy_groups(labels):
    """knockpy's group labels (1..G, numbered as given) for the features ``labels``
    (a subset of 0..G-1), or ``None`` when every group is a single feature."""
    labels = np.asarray(labels)
    if np.unique(labels).size == labels.size:
        return None
    return first_seen_labels(labels) + 1
