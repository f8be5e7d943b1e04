"""The SURF family's thresholds and per-anchor terms (skrebate 0.8.4's semantics).

``*_thresholds`` give each anchor its near (and far) threshold from the
distance moments of pass 1; ``*_agg`` turn an anchor block's pass-2 partial
into its share of the score (:func:`dmargin.engine.threshold_statistic`).
"""

import numpy as np

from ..engine import FAR, NEAR, columns_of, moment_columns
from ..relief._terms import stir_anchor_sums, stir_sums

# ---------------------------------------------------------------------------
# SURF, SURF*, MultiSURF, MultiSURF* (skrebate 0.8.4's semantics)
# ---------------------------------------------------------------------------
#
# Pass 1 partials are per-anchor moments ``(count, sum d, sum d^2)``
# (:func:`dmargin.engine.kernels.surf.moments_pairs`), pass 2 partials the
# per-anchor, per-set, per-class sums ``P[a, s, c, :A]`` of the differences
# and the neighbour counts ``P[a, s, c, A]``; both merge with :func:`add`.

#: How the far set (``P[:, FAR]``) enters the score: not at all (SURF,
#: MultiSURF); SURF*'s near scoring of the far set, subtracted; MultiSURF*'s
#: far scoring (``1 - diff``), added.
FAR_NONE, FAR_SUBTRACT, FAR_SIMILARITY = 0, 1, 2


def surf_thresholds(moments, total, far):
    """SURF's one threshold for every anchor: the mean of the distance matrix.

    ``mean = sum_{a, j != a} d_aj / (m N)`` over the anchors' rows (skrebate:
    the mean of the full N x N matrix, zeros on the diagonal included).
    Returns ``(near, far, no spread)``: near ``d < mean``; far (SURF*) ``d >
    mean``, or ``+inf`` (no far set).
    """
    cells = moment_columns(total)
    mean = cells.total / cells.count
    n = moments.shape[0]
    return np.full(n, mean), np.full(n, mean if far else np.inf), _HARD


def multisurf_thresholds(moments, total, far):
    """MultiSURF's thresholds per anchor: ``mu_a -+ sigma_a / 2``.

    ``mu_a`` and ``sigma_a`` are the mean and the standard deviation (ddof 0,
    as ``np.std``) of the anchor's distances to every other row.  Near:
    ``d < mu - sigma / 2``; far (MultiSURF*): ``d > mu + sigma / 2``, else
    ``+inf`` (no far set).  An anchor with no other row gets ``nan``
    thresholds (no neighbours).
    """
    mu, sigma = _anchor_moments(moments)
    half = sigma / 2.0
    return mu - half, (mu + half) if far else np.full(mu.shape, np.inf), _HARD


#: The thresholds' spread of a hard neighbour set: none (every neighbour weighs 1).
_HARD = np.empty(0)


def _anchor_moments(moments):
    """Each anchor's mean and standard deviation (ddof 0) of its distances to the
    other rows (``nan`` without any)."""
    count, s1, s2 = moment_columns(moments)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = s1 / count
        sigma = np.sqrt(np.maximum(s2 / count - mu * mu, 0.0))
    return mu, sigma


# ---------------------------------------------------------------------------
# The SWRF family (skrebate 0.8.4's baseswrf.py): weighted neighbours
# ---------------------------------------------------------------------------
#
# A neighbour at distance d of a set with threshold t weighs
# ``tanh(2 |d - t| / s)`` (:func:`dmargin.engine.kernels.surf.soft_weight`):
# 0 at the threshold, 1 far from it.  Pass-2 partials are ``P[a, s, c, :A]``
# the weighted difference sums, ``P[a, s, c, A]`` the neighbour count and
# ``P[a, s, c, A + 1]`` the weight sum (with missing values a count and a
# weight sum per feature: ``A:2A`` and ``2A:3A``).


def swrf_thresholds(moments, total, far):
    """SWRF's one threshold and spread: the mean and the standard deviation (ddof 0)
    of the distance matrix (its zero diagonal included, as skrebate's)."""
    count, s1, s2 = total
    mean = s1 / count
    sd = np.sqrt(max(s2 / count - mean * mean, 0.0))
    n = moments.shape[0]
    return np.full(n, mean), np.full(n, mean if far else np.inf), np.full(n, sd)


def multiswrf_thresholds(moments, total, far):
    """MultiSWRF's threshold and spread per anchor: the mean ``mu_a`` and the
    standard deviation ``sigma_a`` of its distances (near ``d < mu_a``, far
    ``d > mu_a``)."""
    mu, sigma = _anchor_moments(moments)
    return mu, mu if far else np.full(mu.shape, np.inf), sigma


def multiswrfdb_thresholds(moments, total, far):
    """MultiSWRFDB's dead band per anchor: near ``d < mu_a - sigma_a / 2``, far
    ``d > mu_a + sigma_a / 2``, each neighbour weighed from its edge; spread ``sigma_a``."""
    near, far_edge, _ = multisurf_thresholds(moments, total, far)
    return near, far_edge, _anchor_moments(moments)[1]


def swrf_agg(P, ya, far, missing, discrete):
    """Anchor block's share of an SWRF-family score (before the division by m).

    Near set: skrebate's scoring (:func:`surf_terms`) of the weighted
    difference sums with the neighbour counts (``baseswrf.py``: the weights
    enter the sums, not the counts).  Far set (the starred variants), added:
    the same scoring of the similarities, ``sum (1 - w diff)`` for a
    continuous feature and ``sum w (1 - diff)`` for a discrete one
    (skrebate's two far rules).
    """
    c = columns_of(P.shape[-1], missing, soft=True)

    def scored(S, sums):
        return surf_terms(np.concatenate([sums, S[..., c.counts]], axis=-1), ya, missing)

    near = P[:, NEAR]
    terms = scored(near, near[..., c.sums])
    if far:
        S = P[:, FAR]
        sims = np.where(discrete, S[..., c.weights], S[..., c.counts]) - S[..., c.sums]
        terms = terms + scored(S, sims)
    return terms.sum(axis=0)


def surf_terms(P, ya, missing=False):
    """Per-anchor scores of one neighbour set: skrebate's ``compute_score`` (near).

    ``P`` is ``(anchors, classes, A + 1)`` (difference sums, counts).  For the
    anchor of class ``y`` with ``h`` hits (sum ``H``) and ``m`` misses, of which
    ``m_c`` of class ``c`` (sum ``M_c``), among ``K`` classes:

    ``sum_{c != y} M_c (m_c / m) (K - 1) / m - H / h``

    each part only when its count is positive (no neighbours: 0).  For two
    classes this is skrebate's binary ``M / m - H / h``.  ``missing``: ``P`` is
    ``(anchors, classes, 2 A)`` with a count per feature (the neighbours whose
    difference on that feature is not missing), and every count above is
    that feature's, as skrebate's.
    """
    if missing:
        return _surf_terms_per_feature(P, ya)
    n_anchors, n_classes, width = P.shape
    rows = np.arange(n_anchors)
    c = columns_of(width)
    counts, sums = P[..., c.counts.start], P[..., c.sums]
    n_hit = counts[rows, ya]
    n_miss = counts.sum(axis=1) - n_hit
    own = np.arange(n_classes)[None, :] == np.asarray(ya)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(own, 0.0, counts / n_miss[:, None] * (n_classes - 1))
        miss = np.einsum("ac,acf->af", share, sums) / n_miss[:, None]
        hit = -sums[rows, ya] / n_hit[:, None]
    miss = np.where(n_miss[:, None] > 0, miss, 0.0)
    hit = np.where(n_hit[:, None] > 0, hit, 0.0)
    return miss + hit


def _surf_terms_per_feature(P, ya):
    """:func:`surf_terms` with a neighbour count per feature."""
    n_anchors, n_classes, width = P.shape
    c = columns_of(width, missing=True)
    rows = np.arange(n_anchors)
    sums, counts = P[..., c.sums], P[..., c.counts]
    n_hit = counts[rows, ya]  # (anchors, A)
    n_miss = counts.sum(axis=1) - n_hit
    own = (np.arange(n_classes)[None, :] == np.asarray(ya)[:, None])[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(own, 0.0, counts / n_miss[:, None, :] * (n_classes - 1))
        miss = (share * sums).sum(axis=1) / n_miss
        hit = -sums[rows, ya] / n_hit
    return np.where(n_miss > 0, miss, 0.0) + np.where(n_hit > 0, hit, 0.0)


def surf_agg(P, ya, far_rule, missing=False):
    """Anchor block's share of the SURF-family score (before the division by m).

    ``P`` is ``(anchors, sets, classes, A + 1)`` (``2 A`` with ``missing``:
    a count per feature); the near set scores as :func:`surf_terms`; the far
    set (``far_rule``): SURF* subtracts the same scoring of its far set
    (skrebate's ``SURFstar_compute_scores``); MultiSURF* adds it with every
    difference replaced by ``1 - diff`` (``compute_score(near=False)``).
    """
    terms = surf_terms(P[:, NEAR], ya, missing)
    if far_rule == FAR_SUBTRACT:
        terms = terms - surf_terms(P[:, FAR], ya, missing)
    elif far_rule == FAR_SIMILARITY:
        far = P[:, FAR].copy()
        c = columns_of(far.shape[-1], missing)
        far[..., c.sums] = far[..., c.counts] - far[..., c.sums]  # 1 - diff, summed
        terms = terms + surf_terms(far, ya, missing)
    return terms.sum(axis=0)


def surf_stir_agg(P, ya, far_rule, missing=False, squares=True):
    """:func:`surf_agg` (row 0), :func:`stir_sums` (rows 1-8) and
    :func:`stir_anchor_sums` (rows 9-12) of the near set, two classes, as
    :func:`relieff_stir_agg`'s.  ``P`` carries the squared differences after
    the sums and counts (``A + 1 + A`` columns, ``3 A`` with ``missing``);
    ``squares=False``: it does not, the differences being 0 or 1 (compact
    rows), so that they are their own squares."""
    c = columns_of(P.shape[-1], missing, squares=squares)
    near = P[:, NEAR]
    counts = near[..., c.counts]
    first = near[..., c.sums]
    second = near[..., c.squares] if squares else first
    ya = np.asarray(ya)
    share = surf_agg(P[..., : c.counts.stop], ya, far_rule, missing)
    return np.vstack(
        [
            share[None, :],
            stir_sums(counts, first, second, ya).reshape(8, -1),
            stir_anchor_sums(counts, first, ya),
        ]
    )
