"""The Relief family's per-anchor terms over hard neighbours (Robnik-Sikonja & Kononenko 2003).

Each ``*_agg`` turns an anchor block's merged top-k partial ``(dist, idx,
z)`` (:func:`dmargin.engine.knn_statistic`) into that block's share of the
score: Relief's nearest miss minus nearest hit, ReliefF's weighted means
(Weka), STIR's sums beside them, and the continuous-target rules of
skrebate's ReliefF and of RReliefF.
"""

from typing import NamedTuple

import numpy as np

from ..engine import merge


def _class_sums(dist, z, missing, squares=False):
    """Per anchor and class: the neighbours found ``(anchors, classes, 1)``, or
    per feature ``(anchors, classes, A)`` with ``missing`` (a difference with a
    missing side, NaN in ``z``, left out), the sums of their differences
    ``(anchors, classes, A)`` and, with ``squares``, of their squares."""
    found = np.isfinite(dist)[..., None]
    if missing:
        found = found & ~np.isnan(z)
        z = np.where(found, z, 0.0)
    elif not found.all():
        z = z * found
    second = np.einsum("ackf,ackf->acf", z, z) if squares else None
    return found.sum(axis=2), z.sum(axis=2), second


def _relieff_share(n_found, sums, ya, miss_prior):
    """:func:`relieff_agg` from :func:`_class_sums`."""
    weight = miss_prior[ya]  # (anchors, classes), zero on the own class (a copy)
    weight[np.arange(len(ya)), ya] = -1.0
    # No neighbour found: its sums are 0, and 0 / 1 is the 0 it scores.
    if n_found.shape[-1] == 1:  # one count per class: into the weights, not the sums
        return np.einsum("ac,acf->f", weight / np.maximum(n_found[..., 0], 1.0), sums)
    return np.einsum("ac,acf->f", weight, sums / np.maximum(n_found, 1.0))


def relieff_agg(dist, idx, z, ya, miss_prior, missing=False):
    """Anchor block's share of ReliefF's W (before the division by m).

    ``-sum_hits z / k_H + sum_{C != c} P(C)/(1-P(c)) sum_{misses of C} z / k_C``
    with ``k_H``, ``k_C`` the neighbours actually found (Weka).  ``missing``:
    a difference with a missing side (NaN in ``z``) is left out, and ``k_H``,
    ``k_C`` count per feature the neighbours scored on it (skrebate's rule).
    """
    n_found, sums, _ = _class_sums(dist, z, missing)
    return _relieff_share(n_found, sums, np.asarray(ya), miss_prior)


def relieff_class_share(n_found, sums, ya, miss_prior, missing=False):
    """:func:`relieff_agg` from the neighbours' differences already summed per anchor
    and class (``n_found``, ``sums``: :func:`_class_sums`' first two), where the
    engine sums them itself (:func:`dmargin.engine.knn_statistic`'s ``sums_agg``)."""
    return _relieff_share(n_found, sums, np.asarray(ya), miss_prior)


def stir_sums(n_found, first, second, ya):
    """Anchor block's sums for STIR's pseudo t-test (two classes), from
    :func:`_class_sums`.

    For hits (side 0) and misses (side 1), per feature:
    ``sum_a (1/k_a) sum_j d_aj``, ``sum_a (1/k_a) sum_j d_aj^2``, then the
    pair count ``sum_a k_a`` and the anchors with ``k_a > 0`` (per feature
    with missing values), ``k_a`` the neighbours found on that side (Le et
    al. 2019, eqs. 5-8).
    """
    n_features = first.shape[-1]
    inverse = np.divide(1.0, n_found, out=np.zeros(n_found.shape), where=n_found > 0)
    hit = (np.arange(first.shape[1])[None, :] == ya[:, None])[..., None]
    out = np.zeros((2, 4, n_features))
    for side, mask in enumerate((hit, ~hit)):
        w = inverse * mask  # (anchors, classes, 1 or A)
        out[side, 0] = (w * first).sum(axis=(0, 1))
        out[side, 1] = (w * second).sum(axis=(0, 1))
        pairs = n_found * mask
        out[side, 2] = pairs.sum(axis=(0, 1))
        out[side, 3] = (pairs.sum(axis=1) > 0).sum(axis=0)
    return out


def stir_pairs(dist, idx, ya, ia):
    """The anchor block's neighbour pairs, hits then misses, as codes
    ``anchor << 32 | neighbour`` (global row indices, below 2^31): what
    :func:`mutual_pairs` reads to find the pairs found from both of their rows."""
    found = np.isfinite(dist) & (idx >= 0)
    hit = np.arange(dist.shape[1])[None, :, None] == np.asarray(ya)[:, None, None]
    anchor = np.broadcast_to(np.asarray(ia, dtype=np.int64)[:, None, None], idx.shape)
    code = (anchor << 32) | idx
    return code[found & hit], code[found & ~hit]


def mutual_pairs(codes):
    """How many of the pair codes have their reverse among them: the neighbour
    slots whose pair was also found from its other row."""
    codes = np.sort(np.asarray(codes, dtype=np.int64))
    if not codes.size:
        return 0
    reverse = ((codes & 0xFFFFFFFF) << 32) | (codes >> 32)
    at = np.minimum(np.searchsorted(codes, reverse), codes.size - 1)
    return int((codes[at] == reverse).sum())


def stir_anchor_sums(n_found, sums, ya):
    """Anchor block's sums of its anchors' mean hit and miss differences, per
    feature, from :func:`_class_sums`: ``sum h_a``, ``sum m_a``, ``sum h_a m_a``
    and the anchors with both.  Their covariance is what two pairs of one
    anchor share (:func:`dmargin.relief._stir.shared_row_variance`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / n_found  # NaN where none found
    rows = np.arange(len(ya))
    hit, miss = means[rows, ya], means[rows, 1 - ya]  # two classes
    both = np.isfinite(hit) & np.isfinite(miss)
    hit, miss = np.where(both, hit, 0.0), np.where(both, miss, 0.0)
    return np.vstack(
        [hit.sum(axis=0), miss.sum(axis=0), (hit * miss).sum(axis=0), both.sum(axis=0)]
    )


#: Rows of STIR's neighbour graph beyond which ``trace(W^3)`` is estimated from a
#: sample of this many rows (:func:`pair_graph_sums`).
TRACE_ROWS = 1000


def _signed_edges(codes, sign):
    """Edges ``anchor -> neighbour`` of one side, weighted ``sign / k_a``."""
    anchor, neighbour = codes >> 32, codes & 0xFFFFFFFF
    _, inverse, per_anchor = np.unique(anchor, return_inverse=True, return_counts=True)
    return anchor, neighbour, sign / per_anchor[inverse]


class GraphSums(NamedTuple):
    """The entries of :func:`pair_graph_sums`' array (and of
    :func:`dmargin.relief._stir.graph_from_sums`'), by name: ``GraphSums(*graph)``."""

    #: ``sum C_i^2``.
    c2: float
    #: ``sum w_e^2``.
    w2: float
    #: ``sum C_i^3``.
    c3: float
    #: ``sum w_e^3``.
    w3: float
    #: ``sum w_e C_i C_j``.
    wcc: float
    #: ``sum w_e^2 (C_i + C_j)``.
    w2c: float
    #: ``trace(W^3)``.
    trace3: float
    #: ``sum w_e^4``.
    w4: float
    #: ``sum r_i^2``.
    r2: float
    #: ``sum_ij W_ij^2 (W^2)_ij``.
    side_twice: float
    #: ``trace(W^4)``.
    trace4: float


def pair_graph_sums(hit_codes, miss_codes):
    """Sums over STIR's neighbour graph that its score's variance, skewness and
    kurtosis take.

    A found pair is an edge of weight ``-1/k_a`` (a hit) or ``+1/k_a`` (a
    miss), ``k_a`` the pairs of its anchor on that side, so that the score is
    ``(1/m) sum_e w_e d_e``; the two findings of a pair found from both rows
    add up.  With ``W`` the symmetric matrix of the summed weights, ``C = W 1``
    its row sums and ``r_i = sum_j W_ij^2``, returns ``[sum C_i^2, sum w_e^2,
    sum C_i^3, sum w_e^3, sum w_e C_i C_j, sum w_e^2 (C_i + C_j), trace(W^3),
    sum w_e^4, sum r_i^2, sum_ij W_ij^2 (W^2)_ij, trace(W^4)]`` (:class:`GraphSums`),
    ``e`` over the distinct pairs ``{i, j}``.  The last three and ``trace(W^3)`` (six times
    the weighted triangles) are exact up to :data:`TRACE_ROWS` rows with an
    edge, beyond them the mean of their rows' terms over that many of them,
    drawn with a fixed seed, times their number (the trace measured within
    1.5 % on the kNN graphs of 2,000 and 8,000 rows, uniform and
    ``make_classification``).
    """
    from scipy import sparse

    edges = [
        _signed_edges(np.asarray(c, dtype=np.int64), sign)
        for c, sign in ((hit_codes, -1.0), (miss_codes, 1.0))
    ]
    src, dst, w = (np.concatenate(parts) for parts in zip(*edges))
    if not w.size:
        return np.zeros(11)
    ends = np.concatenate([src, dst])
    n = int(ends.max()) + 1
    if n > 4 * ends.size:  # a sample of anchors among many rows: number the rows met
        nodes, ends = np.unique(ends, return_inverse=True)
        n = nodes.size
    directed = sparse.csr_matrix((w, (ends[: w.size], ends[w.size :])), shape=(n, n))
    W = (directed + directed.T).tocsr()
    C = np.asarray(W.sum(axis=1)).ravel()
    squares = W.copy()
    squares.data = W.data**2
    r = np.asarray(squares.sum(axis=1)).ravel()
    upper = sparse.triu(W, k=1).tocoo()
    we, ci, cj = upper.data, C[upper.row], C[upper.col]
    met = np.flatnonzero(np.diff(W.indptr))  # rows with an edge
    rows = met
    if met.size > TRACE_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(met, TRACE_ROWS, replace=False))
    block = W[rows]
    walks = block @ W  # (W^2) of the rows
    scale = met.size / rows.size
    # Sums of .data: sparse sums, products and element-wise products leave no
    # duplicate entries, and summing the data skips the sort a .sum() makes.
    trace3 = float(walks.multiply(block).data.sum()) * scale
    side_twice = float(walks.multiply(squares[rows]).data.sum()) * scale
    trace4 = float(walks.data @ walks.data) * scale
    return np.array(
        [
            (C**2).sum(),
            (we**2).sum(),
            (C**3).sum(),
            (we**3).sum(),
            (we * ci * cj).sum(),
            (we**2 * (ci + cj)).sum(),
            trace3,
            (we**4).sum(),
            (r**2).sum(),
            side_twice,
            trace4,
        ]
    )


def stir_finish(merged):
    """The merged :func:`relieff_stir_agg` shares as ``(sums, counts, graph)``:
    per side (hits, misses) the pairs found and those also found from their
    other row, and :func:`pair_graph_sums`.  Runs where the shares were
    merged, so the codes never travel further."""
    sums, codes = merged
    counts = np.array([[c.size, mutual_pairs(c)] for c in codes], dtype=np.float64)
    return sums, counts, pair_graph_sums(*codes)


class StirShares(NamedTuple):
    """A merged STIR share (:func:`relieff_stir_agg`, or the SURF family's), by name."""

    #: The method's own score, before the division by the anchors.
    score: np.ndarray
    #: :func:`stir_sums`, ``(2, 4, A)``: hits and misses.
    sums: np.ndarray
    #: :func:`stir_anchor_sums`, ``(4, A)``.
    anchor_sums: np.ndarray


def stir_shares(total) -> StirShares:
    """The rows of a merged STIR share (one array, so that shares add) by name."""
    total = np.asarray(total, dtype=np.float64)
    return StirShares(total[0], total[1:9].reshape(2, 4, -1), total[9:])


def relieff_stir_agg(dist, idx, z, ya, ia, miss_prior, missing=False):
    """:func:`relieff_agg` (row 0), :func:`stir_sums` (rows 1-8) and
    :func:`stir_anchor_sums` (rows 9-12) in one array, and the block's
    :func:`stir_pairs`; merged with :func:`stir_combine`, then :func:`stir_finish`."""
    ya = np.asarray(ya)
    n_found, first, second = _class_sums(dist, z, missing, squares=True)
    sums = np.vstack(
        [
            _relieff_share(n_found, first, ya, miss_prior)[None, :],
            stir_sums(n_found, first, second, ya).reshape(8, -1),
            stir_anchor_sums(n_found, first, ya),
        ]
    )
    return sums, stir_pairs(dist, idx, ya, ia)


def stir_combine(parts):
    """Shares of :func:`relieff_stir_agg`: sums added, pair codes concatenated."""
    return (
        merge.add([p[0] for p in parts]),
        tuple(np.concatenate([p[1][side] for p in parts]) for side in range(2)),
    )


def relief_agg(dist, idx, z, ya):
    """Anchor block's share of Relief's z: nearest miss minus nearest hit (eq. 6)."""
    n_anchors, n_classes = dist.shape[:2]
    rows = np.arange(n_anchors)
    d1 = dist[..., 0].copy()
    i1 = np.where(idx[..., 0] < 0, np.iinfo(np.int64).max, idx[..., 0])
    hit = z[rows, ya, 0]  # zeros when the anchor's class has no other member
    d1[rows, ya] = np.inf
    # Nearest miss over all other classes; ties to the lower row index.
    order = np.lexsort((i1, d1), axis=-1)[:, 0]
    miss = z[rows, order, 0]
    return (miss - hit).sum(axis=0)


# ---------------------------------------------------------------------------
# Regression targets: the k nearest of every row in one class, split by the target
# ---------------------------------------------------------------------------
#
# The tiles are the hard-neighbour tiles with every candidate in one class:
# ``dist, idx`` are ``(anchors, 1, K)``, ``z`` is ``(anchors, 1, K, A)``, ordered
# by (distance, row index).  ``ia`` are the anchors' row indices and ``y`` the
# whole target (one copy in the graph): the neighbours' targets are ``y[idx]``.


def relieff_continuous_agg(dist, idx, z, ia, y, n_hits, n_misses, k, bound):
    """Anchor block's share of ReliefF's score for a continuous target (skrebate 0.8.4).

    A neighbour is a hit when ``|y_a - y_j| < bound`` (skrebate: the standard
    deviation of y, ddof=1), a miss otherwise; the anchor's ``k`` nearest hits
    and ``k`` nearest misses are the first of each kind among its ``K``
    nearest rows.  Its term is ``-sum_hits z / h + sum_misses z / m``, each
    part only when its count is positive; when fewer than ``k`` other rows
    are hits (``n_hits``, counted over all rows), skrebate's scan of the
    sorted distances reaches the anchor itself and counts it as one more hit
    (difference 0), so ``h`` is one more.  A difference that is NaN (a
    missing value, the general tile) is left out of its feature's sum and
    count, so a feature the anchor misses scores 0 (skrebate's
    ``compute_score``).

    An anchor whose ``K`` nearest rows hold fewer than ``min(k, n_hits)``
    hits or ``min(k, n_misses)`` misses is not scored: its row index comes
    back, to be scored again with a larger ``K``.  Returns ``(share,
    unresolved anchor rows)``.
    """
    j, z = idx[:, 0], z[:, 0]
    found = j >= 0
    dy = np.abs(y[ia][:, None] - y[np.where(found, j, 0)])
    hit = found & (dy < bound)
    miss = found & ~(dy < bound)
    hit &= np.cumsum(hit, axis=1) <= k
    miss &= np.cumsum(miss, axis=1) <= k
    resolved = (hit.sum(axis=1) >= np.minimum(k, n_hits)) & (
        miss.sum(axis=1) >= np.minimum(k, n_misses)
    )
    present = ~np.isnan(z)
    hit, miss = hit[..., None] & present, miss[..., None] & present  # (anchors, K, A)
    n_hit = hit.sum(axis=1) + (n_hits < k)[:, None]  # the anchor itself, as skrebate counts it
    n_miss = miss.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        hits = np.where(hit, z, 0.0).sum(axis=1) / n_hit
        misses = np.where(miss, z, 0.0).sum(axis=1) / n_miss
    term = np.where(n_miss > 0, misses, 0.0) - np.where(n_hit > 0, hits, 0.0)
    return term[resolved].sum(axis=0), np.asarray(ia)[~resolved]


class RReliefFSums(NamedTuple):
    """:func:`rrelieff_agg`'s shares, summed, by name (:func:`rrelieff_sums`)."""

    #: ``N_dC``.
    n_dc: float
    #: ``N_dA``, per feature.
    n_da: np.ndarray
    #: ``N_dC&dA``, per feature.
    n_dcda: np.ndarray


def rrelieff_sums(sums) -> RReliefFSums:
    """The summed :func:`rrelieff_agg` shares ``[N_dC, N_dA[:], N_dC&dA[:]]`` by name."""
    sums = np.asarray(sums)
    a = (sums.size - 1) // 2
    return RReliefFSums(sums[0], sums[1 : a + 1], sums[a + 1 :])


def rrelieff_agg(dist, idx, z, ia, y, span, influence):
    """Anchor block's sums of RReliefF (Robnik-Sikonja & Kononenko 2003, Fig. 3).

    ``[N_dC, N_dA[:], N_dC&dA[:]]`` over the block's anchors and their
    neighbours ``j`` (rank ``r``, 1 for the nearest): ``d(a, j) =
    influence[r] / sum_r' influence[r']`` over the neighbours found,
    ``diff(C) = |y_a - y_j| / span`` and ``diff(A) = z``:
    ``N_dC += diff(C) d``, ``N_dA += diff(A) d``, ``N_dC&dA += diff(C) diff(A) d``
    (read by :func:`rrelieff_sums`).
    """
    j, z = idx[:, 0], z[:, 0]
    found = j >= 0
    d = np.where(found, influence[None, : j.shape[1]], 0.0)
    total = d.sum(axis=1, keepdims=True)
    d = np.divide(d, total, out=np.zeros_like(d), where=total > 0)
    dc = np.abs(y[ia][:, None] - y[np.where(found, j, 0)]) / span
    return np.concatenate(
        [[np.sum(dc * d)], np.einsum("ak,akf->f", d, z), np.einsum("ak,akf->f", dc * d, z)]
    )
