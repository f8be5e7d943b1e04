"""Brute-force references of SURF, SURF*, MultiSURF and MultiSURF* (plain numpy, O(N^2 A)).

Written from skrebate 0.8.4 (``relieff.py`` for the distances and the feature
kinds, ``surf*.py`` / ``multisurf*.py`` for the neighbourhoods,
``scoring_utils.compute_score`` for the scores), as loops over anchors and
neighbours that read like that code.  Imports nothing from dmargin.

``anchors`` restricts the scoring to those rows (each against all rows); the
SURF threshold is then the mean of those rows of the distance matrix and the
sum is divided by their number instead of N.

``bound`` makes ``y`` a continuous target (skrebate's continuous endpoint): a
neighbour ``j`` of anchor ``i`` is a hit when ``|y_i - y_j| < bound``, a miss
otherwise, and the scoring is the two-class one with those hits and misses.
"""

import numpy as np


def feature_kinds(X, discrete_threshold=10):
    """``(discrete, span, std)`` per feature, as skrebate's ``_get_attribute_info``."""
    discrete = np.array([np.unique(X[:, f]).size <= discrete_threshold for f in range(X.shape[1])])
    span = X.max(axis=0) - X.min(axis=0)
    # A constant feature (discrete unless discrete_threshold = 0) differs by 0.
    return discrete, np.where(span > 0, span, 1.0), X.std(axis=0)


def distance_matrix_row(X, i, discrete, span):
    """``d(i, j)`` for every row ``j``: Manhattan over ``|dx| / span`` (continuous) and
    the Hamming count of the discrete features times ``A / A_discrete`` when both kinds
    are present (skrebate's ``d_dist * num_attributes + c_dist``)."""
    n, n_features = X.shape
    n_disc = discrete.sum()
    mixed = 0 < n_disc < n_features
    weight = n_features / n_disc if mixed else 1.0
    row = np.zeros(n)
    for j in range(n):
        d = 0.0
        for f in range(n_features):
            if discrete[f]:
                d += weight * float(X[i, f] != X[j, f])
            else:
                d += abs(X[i, f] - X[j, f]) / span[f]
        row[j] = d
    return row


def score_diff(X, i, j, f, discrete, span, std, mixed):
    """skrebate's ``ramp_vec`` (continuous) or the 0/1 mismatch (discrete)."""
    if discrete[f]:
        return float(X[i, f] != X[j, f])
    raw = abs(X[i, f] - X[j, f])
    if mixed and raw > std[f]:
        return 1.0
    return raw / span[f]


def compute_score(X, codes, n_classes, i, neighbours, f, discrete, span, std, mixed, near=True):
    """One anchor's, one feature's score from one neighbour set, before the 1/N."""
    hits = [j for j in neighbours if codes[j] == codes[i]]
    misses = {
        c: [j for j in neighbours if codes[j] == c] for c in range(n_classes) if c != codes[i]
    }
    count_hit = len(hits)
    count_miss = sum(len(v) for v in misses.values())
    if count_hit == 0 and count_miss == 0:
        return 0.0

    def diff(j):
        value = score_diff(X, i, j, f, discrete, span, std, mixed)
        return value if near else 1.0 - value

    diff_hit = -sum(diff(j) for j in hits)
    score = 0.0
    if count_miss > 0:
        for members in misses.values():
            score += sum(diff(j) for j in members) * (len(members) / count_miss) * len(misses)
        score /= count_miss
    if count_hit > 0:
        score += diff_hit / count_hit
    return score


def surf_family(X, y, variant, *, discrete_threshold=10, anchors=None, bound=None):
    """Scores of ``variant`` in {"SURF", "SURFstar", "MultiSURF", "MultiSURFstar"}."""
    X = np.asarray(X, dtype=np.float64)
    n, n_features = X.shape
    if bound is None:
        classes, codes = np.unique(y, return_inverse=True)
        n_classes = classes.size
    discrete, span, std = feature_kinds(X, discrete_threshold)
    mixed = bool(discrete.any() and not discrete.all())
    anchors = np.arange(n) if anchors is None else np.asarray(anchors)
    rows = {i: distance_matrix_row(X, i, discrete, span) for i in anchors}

    if variant in ("SURF", "SURFstar"):
        mean = sum(rows[i].sum() for i in anchors) / (len(anchors) * n)
        near_t = {i: mean for i in anchors}
        far_t = {i: mean for i in anchors}
    else:
        near_t, far_t = {}, {}
        for i in anchors:
            others = np.delete(rows[i], i)
            mu, sd = others.mean(), others.std()
            near_t[i], far_t[i] = mu - sd / 2.0, mu + sd / 2.0

    scores = np.zeros(n_features)
    for i in anchors:
        others = [j for j in range(n) if j != i]
        near = [j for j in others if rows[i][j] < near_t[i]]
        far = [j for j in others if rows[i][j] > far_t[i]] if variant.endswith("star") else []
        if bound is not None:  # class 0: the anchor's hits (itself included), 1: its misses
            codes = np.array([0 if abs(y[i] - y[j]) < bound else 1 for j in range(n)])
            n_classes = 2
        for f in range(n_features):
            args = (X, codes, n_classes, i)
            kinds = (discrete, span, std, mixed)
            if near:
                scores[f] += compute_score(*args, near, f, *kinds)
            if far and variant == "SURFstar":
                scores[f] -= compute_score(*args, far, f, *kinds)
            elif far:
                scores[f] += compute_score(*args, far, f, *kinds, near=False)
    return scores / len(anchors)
