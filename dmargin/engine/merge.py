"""Partials and how they merge: ``*_combine`` and ``*_agg`` per partial.

Like dask's ``mean_chunk / mean_combine / mean_agg`` trios: a tile kernel in
:mod:`dmargin.engine.kernels` is the chunk step; ``*_combine`` merges partials
of the same anchors over disjoint candidate blocks (associative, so dask can
tree-reduce them); ``*_agg`` turns the merged partial of an anchor block into
that block's share of the statistic.  Plain numpy, plus small numba helpers
the online kernels call per anchor (I-RELIEF's batch agg codes the same
equations over a whole block in numpy; a test holds the two equal).
"""

import math

import numba
import numpy as np

from .kernels.lse import filled

def add(parts):
    """Sum of partials that simply add (histograms, kernel sums, shares), in order."""
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


# ---------------------------------------------------------------------------
# Log-sum-exp partials (m, s, v)
# ---------------------------------------------------------------------------


def lse_combine(parts):
    """Merge ``(m, s, v)`` partials of the same anchors (split-K softmax).

    ``m = max(m1, m2); s = s1 e^(m1-m) + s2 e^(m2-m); v likewise`` -- exact.
    ``v`` is a vector per anchor and class (I-RELIEF), a scalar per anchor
    and class (IMMIGRATE's expected distance), or ``None`` (``(m, s)`` only).
    """
    m = parts[0][0]
    for p in parts[1:]:
        m = np.maximum(m, p[0])
    s = 0.0
    v = None
    for p in parts:
        # exp(-inf - -inf) would be nan: an empty class stays empty.
        r = np.where(np.isneginf(p[0]), 0.0, np.exp(p[0] - np.where(np.isneginf(m), 0.0, m)))
        s = s + p[1] * r
        if p[2] is not None:
            term = p[2] * (r if p[2].ndim == r.ndim else r[..., None])
            v = term if v is None else v + term
    return m, s, v


# ---------------------------------------------------------------------------
# I-RELIEF (ALGORITHMS.md section 5)
# ---------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True, inline="always")
def _irelief_coef(m, s, y, pooled, miss_prior, outliers, log_z, coef):
    """Per-anchor log-normalisers and signed multipliers for I-RELIEF.

    For the anchor of class ``y`` with class partials ``m[c], s[c]``, fill
    ``log_z[c]`` (the log-sum-exp over the candidate set class ``c`` belongs
    to) and ``coef[c]`` such that the anchor's term of eq. (12) is
    ``sum_c coef[c] * sum_{j in c} exp(l_j - log_z[c]) z_j``:

    - hits (``c == y``): ``log_z = LSE_H``, ``coef = -gamma`` (eq. 9);
    - ``pooled`` (I-RELIEF-2): one softmax over all misses,
      ``log_z = LSE_M``, ``coef = gamma`` (eq. 8);
    - otherwise (I-RELIEF-1): per-class softmaxes weighted by
      ``miss_prior[y, c] = P(c) / (1 - P(y))``, renormalised over the
      classes that have candidates;
    - ``gamma = exp(LSE_H - LSE_all)`` (eq. 10) with outlier handling, else 1.

    Returns ``False`` when the anchor has no misses among the candidates (it
    then contributes nothing).  A class with no candidate keeps ``coef = 0``.
    """
    n_classes = m.shape[0]
    log_z[:] = -np.inf
    coef[:] = 0.0
    log_h = m[y] + math.log(s[y]) if s[y] > 0.0 else -np.inf
    mx = -np.inf
    for c in range(n_classes):
        if c != y and s[c] > 0.0 and m[c] > mx:
            mx = m[c]
    if mx == -np.inf:
        return False
    tot = 0.0
    for c in range(n_classes):
        if c != y and s[c] > 0.0:
            tot += s[c] * math.exp(m[c] - mx)
    log_m = mx + math.log(tot)
    if outliers:
        if log_h == -np.inf:
            return True  # no hits: gamma = 0, the anchor is treated as an outlier
        hi = max(log_h, log_m)
        log_all = hi + math.log(math.exp(log_h - hi) + math.exp(log_m - hi))
        gamma = math.exp(log_h - log_all)
    else:
        gamma = 1.0
    if log_h > -np.inf:
        log_z[y] = log_h
        coef[y] = -gamma
    if pooled:
        for c in range(n_classes):
            if c != y and s[c] > 0.0:
                log_z[c] = log_m
                coef[c] = gamma
    else:
        norm = 0.0
        for c in range(n_classes):
            if c != y and s[c] > 0.0:
                norm += miss_prior[y, c]
        for c in range(n_classes):
            if c != y and s[c] > 0.0:
                log_z[c] = m[c] + math.log(s[c])
                coef[c] = gamma * miss_prior[y, c] / norm
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def irelief_anchor_term(m, s, v, y, pooled, miss_prior, outliers, out):
    """Add one anchor's ``gamma (mbar - hbar)`` to ``out`` from its (m, s, v)."""
    n_classes = m.shape[0]
    log_z = np.empty(n_classes)
    coef = np.empty(n_classes)
    if not _irelief_coef(m, s, y, pooled, miss_prior, outliers, log_z, coef):
        return
    for c in range(n_classes):
        if coef[c] != 0.0:
            r = coef[c] * math.exp(m[c] - log_z[c])
            # ``out += r * v[c]`` as a loop (same operations): the array form
            # compiles numba's shape-mismatch error path on first use.
            for k in range(out.shape[0]):
                out[k] += r * v[c, k]


def irelief_coefs(m, s, ya, pooled, miss_prior, outliers):
    """:func:`_irelief_coef` for every anchor at once (numpy): ``(log_z, coef)``, each
    ``(anchors, classes)``; an anchor with no misses among the candidates, or
    an outlier without hits, has ``coef = 0``.

    The batch agg is a reduction over whole anchor blocks, so it needs no
    compiled loop (and no compilation on a first fit); the online kernel keeps
    the per-anchor numba helper.  ``tests/test_engine.py`` holds the two equal.
    """
    n_anchors, n_classes = m.shape
    rows = np.arange(n_anchors)
    present = s > 0.0
    with np.errstate(divide="ignore"):
        log_s = np.log(np.where(present, s, 0.0))
    lc = np.where(present, m + log_s, -np.inf)  # log of each class's sum
    is_hit = np.zeros((n_anchors, n_classes), dtype=bool)
    is_hit[rows, ya] = True
    misses = present & ~is_hit
    log_h = lc[rows, ya]
    mx = np.max(np.where(misses, m, -np.inf), axis=1)
    has_miss = mx > -np.inf
    mx_safe = np.where(has_miss, mx, 0.0)
    tot = np.sum(s * np.exp(np.where(misses, m - mx_safe[:, None], -np.inf)), axis=1)
    with np.errstate(divide="ignore"):
        log_m = np.where(has_miss, mx_safe + np.log(np.where(has_miss, tot, 1.0)), -np.inf)
    if outliers:
        hits = log_h > -np.inf
        ok = hits & has_miss
        hi = np.where(ok, np.maximum(log_h, log_m), 0.0)
        log_all = hi + np.log(np.exp(np.where(ok, log_h - hi, 0.0))
                              + np.exp(np.where(ok, log_m - hi, 0.0)))
        gamma = np.where(ok, np.exp(np.where(ok, log_h - log_all, 0.0)), 0.0)
    else:
        gamma = np.ones(n_anchors)
    # Without misses ``misses`` is empty and the hit is left out: ``coef`` stays 0.
    log_z = np.full((n_anchors, n_classes), -np.inf)
    coef = np.zeros((n_anchors, n_classes))
    hit_ok = has_miss & (log_h > -np.inf)
    log_z[rows[hit_ok], ya[hit_ok]] = log_h[hit_ok]
    coef[rows[hit_ok], ya[hit_ok]] = -gamma[hit_ok]
    if pooled:
        log_z = np.where(misses, log_m[:, None], log_z)
        coef = np.where(misses, gamma[:, None], coef)
    else:
        prior = np.where(misses, miss_prior[ya], 0.0)
        norm = prior.sum(axis=1)
        safe = np.where(norm > 0.0, norm, 1.0)[:, None]
        log_z = np.where(misses, lc, log_z)
        coef = np.where(misses, gamma[:, None] * prior / safe, coef)
    return log_z, coef


def irelief_agg(m, s, v, ya, weight, pooled, miss_prior, outliers):
    """Anchor block's share of eq. (12): ``sum_a weight_a gamma_a (mbar_a - hbar_a)``."""
    log_z, coef = irelief_coefs(m, s, ya, pooled, miss_prior, outliers)
    used = coef != 0.0
    r = np.zeros_like(coef)
    r[used] = coef[used] * np.exp(m[used] - log_z[used])
    return np.einsum("a,ac,ack->k", weight, r, v)


@numba.njit(cache=True, nogil=True)
def irelief_anchor_term_missing(m, s, v, y, pooled, miss_prior, outliers, out):
    """:func:`irelief_anchor_term` with missing values: ``v[c]`` is ``(sums, masses)``
    of length ``2 A`` (:func:`dmargin.engine.kernels.lse.lse_anchor_general`).

    Each expectation is taken per feature over the neighbours that have it:
    ``hbar_f = sum_j p_j z_jf [f present] / sum_j p_j [f present]`` over the
    hits, ``mbar_f`` likewise over the misses (each miss class for
    I-RELIEF-1), 0 where no neighbour has the feature (skrebate's rule for
    ReliefF's counts, with probabilities for counts).  ``gamma`` is
    unchanged: it comes from the distances.
    """
    n_classes = m.shape[0]
    a = out.shape[0]
    log_z = np.empty(n_classes)
    coef = np.empty(n_classes)
    if not _irelief_coef(m, s, y, pooled, miss_prior, outliers, log_z, coef):
        return
    for c in range(n_classes):
        if coef[c] == 0.0:
            continue
        r = math.exp(m[c] - log_z[c])
        for k in range(a):
            # The mass of the neighbours that have feature k, in c's softmax set.
            mass = 0.0
            if c != y and pooled:
                for c2 in range(n_classes):
                    if c2 != y and s[c2] > 0.0:
                        mass += math.exp(m[c2] - log_z[c]) * v[c2, a + k]
            else:
                mass = r * v[c, a + k]
            if mass > 0.0:
                out[k] += coef[c] * r * v[c, k] / mass


@numba.njit(cache=True, nogil=True)
def irelief_agg_missing(m, s, v, ya, weight, pooled, miss_prior, outliers):
    """:func:`irelief_agg` with missing values (:func:`irelief_anchor_term_missing`)."""
    n_features = v.shape[2] // 2
    out = filled((n_features,), 0.0)
    term = np.empty(n_features)
    for a in range(m.shape[0]):
        if weight[a] == 0.0:
            continue
        term[:] = 0.0
        irelief_anchor_term_missing(m[a], s[a], v[a], ya[a], pooled, miss_prior, outliers,
                                    term)
        for k in range(n_features):
            out[k] += weight[a] * term[k]
    return out


# ---------------------------------------------------------------------------
# IMMIGRATE and IM4E (ALGORITHMS.md sections 2 and 3)
# ---------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _hit_miss(m, s, y):
    """``(LSE_H, LSE_M)`` of one anchor from its class partials (misses pooled)."""
    log_h = m[y] + math.log(s[y]) if s[y] > 0.0 else -np.inf
    mx = -np.inf
    for c in range(m.shape[0]):
        if c != y and s[c] > 0.0 and m[c] > mx:
            mx = m[c]
    if mx == -np.inf:
        return log_h, -np.inf
    tot = 0.0
    for c in range(m.shape[0]):
        if c != y and s[c] > 0.0:
            tot += s[c] * math.exp(m[c] - mx)
    return log_h, mx + math.log(tot)


@numba.njit(cache=True, nogil=True)
def softmin_coef(m, s, u, ya, weight, sigma):
    """IMMIGRATE's E-step for an anchor block: ``(log_z, coef, entropy)``.

    Hits get ``coef = +D_n`` (alpha), pooled misses ``coef = -D_n`` (beta),
    so that pass 2 sums ``Sigma = sum_n D_n (sum_H alpha z z^T - sum_M beta z z^T)``.
    The entropy term of the cost (eq. 3.5 / 3.19) is
    ``sum_n D_n (sum_H alpha log alpha - sum_M beta log beta)`` with
    ``sum_j p_j log p_j = sum_j p_j l_j - LSE`` and ``l = -q / sigma`` from the
    scalar partials ``u`` (``ALGORITHMS.md`` section 2).
    """
    n_anchors, n_classes = m.shape
    log_z = filled((n_anchors, n_classes), -np.inf)
    coef = filled((n_anchors, n_classes), 0.0)
    entropy = 0.0
    for a in range(n_anchors):
        if weight[a] == 0.0:
            continue
        y = ya[a]
        log_h, log_m = _hit_miss(m[a], s[a], y)
        if log_h > -np.inf:
            log_z[a, y] = log_h
            coef[a, y] = weight[a]
            # sum_H alpha q = u_y / s_y
            entropy += weight[a] * (-(u[a, y] / s[a, y]) / sigma - log_h)
        if log_m > -np.inf:
            # sum_M beta q as a ratio of sums shifted by the largest miss class's
            # max, not by log_m: e^(m - log_m) of two large logits would carry
            # the rounding of log_m (~1e-11 at |m| ~ 1e5) into E[q] / sigma.
            top = -np.inf
            for c in range(n_classes):
                if c != y and s[a, c] > 0.0:
                    top = max(top, m[a, c])
            num = 0.0
            den = 0.0
            for c in range(n_classes):
                if c != y and s[a, c] > 0.0:
                    log_z[a, c] = log_m
                    coef[a, c] = -weight[a]
                    r = math.exp(m[a, c] - top)
                    num += u[a, c] * r
                    den += s[a, c] * r
            entropy -= weight[a] * (-(num / den) / sigma - log_m)
    return log_z, coef, entropy


@numba.njit(cache=True, nogil=True)
def im4e_agg(m, s, v, ya, weight, w, sigma):
    """IM4E's E-step share: ``[sum_n D_n (mbar_n - hbar_n), entropy]``.

    Like I-RELIEF's eq. (12) without the outlier factor and the 1/N; the
    entropy uses ``sum_j e_j d_j = w . v`` (``d = w^T z``).
    """
    n_anchors, n_classes, n_features = v.shape
    out = np.zeros(n_features + 1)
    for a in range(n_anchors):
        if weight[a] == 0.0:
            continue
        y = ya[a]
        log_h, log_m = _hit_miss(m[a], s[a], y)
        if log_m == -np.inf:
            continue
        if log_h > -np.inf:
            r = weight[a] / s[a, y]
            out[:n_features] -= r * v[a, y]
            out[n_features] += weight[a] * (-(w @ v[a, y]) / s[a, y] / sigma - log_h)
        expected = 0.0
        for c in range(n_classes):
            if c != y and s[a, c] > 0.0:
                r = math.exp(m[a, c] - log_m)
                out[:n_features] += weight[a] * r * v[a, c]
                expected += r * (w @ v[a, c])
        out[n_features] -= weight[a] * (-expected / sigma - log_m)
    return out


# ---------------------------------------------------------------------------
# Hard nearest neighbours (ReliefF / Relief, ALGORITHMS.md section 6)
# ---------------------------------------------------------------------------


def knn_combine(parts):
    """Merge top-k partials ``(dist, idx, z)``: keep the k smallest (dist, idx)."""
    k = parts[0][0].shape[-1]
    dist = np.concatenate([p[0] for p in parts], axis=-1)
    idx = np.concatenate([p[1] for p in parts], axis=-1)
    z = np.concatenate([p[2] for p in parts], axis=-2)
    # Unfilled slots (idx -1, dist inf) must sort last among equal distances.
    key_idx = np.where(idx < 0, np.iinfo(np.int64).max, idx)
    order = np.lexsort((key_idx, dist), axis=-1)[..., :k]
    return (
        np.take_along_axis(dist, order, axis=-1),
        np.take_along_axis(idx, order, axis=-1),
        np.take_along_axis(z, order[..., None], axis=-2),
    )


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
    per_class = np.divide(sums, n_found, out=np.zeros_like(sums), where=n_found > 0)
    weight = miss_prior[ya].copy()  # (anchors, classes), zero on the own class
    weight[np.arange(len(ya)), ya] = -1.0
    return np.einsum("ac,acf->f", weight, per_class)


def relieff_agg(dist, idx, z, ya, miss_prior, missing=False):
    """Anchor block's share of ReliefF's W (before the division by m).

    ``-sum_hits z / k_H + sum_{C != c} P(C)/(1-P(c)) sum_{misses of C} z / k_C``
    with ``k_H``, ``k_C`` the neighbours actually found (Weka).  ``missing``:
    a difference with a missing side (NaN in ``z``) is left out, and ``k_H``,
    ``k_C`` count per feature the neighbours scored on it (skrebate's rule).
    """
    n_found, sums, _ = _class_sums(dist, z, missing)
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
    anchor share (:func:`dmargin._stir.shared_row_variance`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / n_found  # NaN where none found
    rows = np.arange(len(ya))
    hit, miss = means[rows, ya], means[rows, 1 - ya]  # two classes
    both = np.isfinite(hit) & np.isfinite(miss)
    hit, miss = np.where(both, hit, 0.0), np.where(both, miss, 0.0)
    return np.vstack([hit.sum(axis=0), miss.sum(axis=0), (hit * miss).sum(axis=0),
                      both.sum(axis=0)])


#: Rows of STIR's neighbour graph beyond which ``trace(W^3)`` is estimated from a
#: sample of this many rows (:func:`pair_graph_sums`).
TRACE_ROWS = 1000


def _signed_edges(codes, sign):
    """Edges ``anchor -> neighbour`` of one side, weighted ``sign / k_a``."""
    anchor, neighbour = codes >> 32, codes & 0xFFFFFFFF
    _, inverse, per_anchor = np.unique(anchor, return_inverse=True, return_counts=True)
    return anchor, neighbour, sign / per_anchor[inverse]


def pair_graph_sums(hit_codes, miss_codes):
    """Sums over STIR's neighbour graph that its score's variance, skewness and
    kurtosis take.

    A found pair is an edge of weight ``-1/k_a`` (a hit) or ``+1/k_a`` (a
    miss), ``k_a`` the pairs of its anchor on that side, so that the score is
    ``(1/m) sum_e w_e d_e``; the two findings of a pair found from both rows
    add up.  With ``W`` the symmetric matrix of the summed weights, ``C = W 1``
    its row sums and ``r_i = sum_j W_ij^2``, returns ``[sum C_i^2, sum w_e^2,
    sum C_i^3, sum w_e^3, sum w_e C_i C_j, sum w_e^2 (C_i + C_j), trace(W^3),
    sum w_e^4, sum r_i^2, sum_ij W_ij^2 (W^2)_ij, trace(W^4)]``, ``e`` over the
    distinct pairs ``{i, j}``.  The last three and ``trace(W^3)`` (six times
    the weighted triangles) are exact up to :data:`TRACE_ROWS` rows with an
    edge, beyond them the mean of their rows' terms over that many of them,
    drawn with a fixed seed, times their number (the trace measured within
    1.5 % on the kNN graphs of 2,000 and 8,000 rows, uniform and
    ``make_classification``).
    """
    from scipy import sparse

    edges = [_signed_edges(np.asarray(c, dtype=np.int64), sign)
             for c, sign in ((hit_codes, -1.0), (miss_codes, 1.0))]
    src, dst, w = (np.concatenate(parts) for parts in zip(*edges))
    if not w.size:
        return np.zeros(11)
    ends = np.concatenate([src, dst])
    n = int(ends.max()) + 1
    if n > 4 * ends.size:  # a sample of anchors among many rows: number the rows met
        nodes, ends = np.unique(ends, return_inverse=True)
        n = nodes.size
    directed = sparse.csr_matrix((w, (ends[:w.size], ends[w.size:])), shape=(n, n))
    W = (directed + directed.T).tocsr()
    C = np.asarray(W.sum(axis=1)).ravel()
    squares = W.copy()
    squares.data = W.data ** 2
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
    return np.array([(C ** 2).sum(), (we ** 2).sum(), (C ** 3).sum(), (we ** 3).sum(),
                     (we * ci * cj).sum(), (we ** 2 * (ci + cj)).sum(), trace3, (we ** 4).sum(),
                     (r ** 2).sum(), side_twice, trace4])


def stir_finish(merged):
    """The merged :func:`relieff_stir_agg` shares as ``(sums, counts, graph)``:
    per side (hits, misses) the pairs found and those also found from their
    other row, and :func:`pair_graph_sums`.  Runs where the shares were
    merged, so the codes never travel further."""
    sums, codes = merged
    counts = np.array([[c.size, mutual_pairs(c)] for c in codes], dtype=np.float64)
    return sums, counts, pair_graph_sums(*codes)


def relieff_stir_agg(dist, idx, z, ya, ia, miss_prior, missing=False):
    """:func:`relieff_agg` (row 0), :func:`stir_sums` (rows 1-8) and
    :func:`stir_anchor_sums` (rows 9-12) in one array, and the block's
    :func:`stir_pairs`; merged with :func:`stir_combine`, then :func:`stir_finish`."""
    ya = np.asarray(ya)
    n_found, first, second = _class_sums(dist, z, missing, squares=True)
    sums = np.vstack([_relieff_share(n_found, first, ya, miss_prior)[None, :],
                      stir_sums(n_found, first, second, ya).reshape(8, -1),
                      stir_anchor_sums(n_found, first, ya)])
    return sums, stir_pairs(dist, idx, ya, ia)


def stir_combine(parts):
    """Shares of :func:`relieff_stir_agg`: sums added, pair codes concatenated."""
    return (add([p[0] for p in parts]),
            tuple(np.concatenate([p[1][side] for p in parts]) for side in range(2)))


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
# SURF, SURF*, MultiSURF, MultiSURF* (skrebate 0.8.4's semantics)
# ---------------------------------------------------------------------------
#
# Pass 1 partials are per-anchor moments ``(count, sum d, sum d^2)``
# (:func:`dmargin.engine.kernels.surf.moments_pairs`), pass 2 partials the
# per-anchor, per-set, per-class sums ``P[a, s, c, :A]`` of the differences
# and the neighbour counts ``P[a, s, c, A]``; both merge with :func:`add`.

#: How the far set (``P[:, 1]``) enters the score: not at all (SURF,
#: MultiSURF); SURF*'s near scoring of the far set, subtracted; MultiSURF*'s
#: far scoring (``1 - diff``), added.
FAR_NONE, FAR_SUBTRACT, FAR_SIMILARITY = 0, 1, 2


def surf_moment_total(moments):
    """``(sum_a (count_a + 1), sum_a sum_j d_aj)``: the pairs of the anchors' rows of
    the full distance matrix (its zero diagonal included, as skrebate's mean) and
    their distance sum."""
    return np.array([np.sum(moments[:, 0] + 1.0), np.sum(moments[:, 1])])


def surf_thresholds(moments, total, far):
    """SURF's one threshold for every anchor: the mean of the distance matrix.

    ``mean = sum_{a, j != a} d_aj / (m N)`` over the anchors' rows (skrebate:
    the mean of the full N x N matrix, zeros on the diagonal included).
    Returns ``(near, far)``: near ``d < mean``; far (SURF*) ``d > mean``, or
    ``+inf`` (no far set).
    """
    mean = total[1] / total[0]
    n = moments.shape[0]
    return np.full(n, mean), np.full(n, mean if far else np.inf)


def multisurf_thresholds(moments, total, far):
    """MultiSURF's thresholds per anchor: ``mu_a -+ sigma_a / 2``.

    ``mu_a`` and ``sigma_a`` are the mean and the standard deviation (ddof 0,
    as ``np.std``) of the anchor's distances to every other row.  Near:
    ``d < mu - sigma / 2``; far (MultiSURF*): ``d > mu + sigma / 2``, else
    ``+inf`` (no far set).  An anchor with no other row gets ``nan``
    thresholds (no neighbours).
    """
    count, s1, s2 = moments[:, 0], moments[:, 1], moments[:, 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = s1 / count
        sigma = np.sqrt(np.maximum(s2 / count - mu * mu, 0.0))
    half = sigma / 2.0
    return mu - half, (mu + half) if far else np.full(mu.shape, np.inf)


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
    counts, sums = P[..., -1], P[..., :-1]
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
    a = width // 2
    rows = np.arange(n_anchors)
    sums, counts = P[..., :a], P[..., a:]
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
    terms = surf_terms(P[:, 0], ya, missing)
    if far_rule == FAR_SUBTRACT:
        terms = terms - surf_terms(P[:, 1], ya, missing)
    elif far_rule == FAR_SIMILARITY:
        far = P[:, 1].copy()
        if missing:
            a = far.shape[-1] // 2
            far[..., :a] = far[..., a:] - far[..., :a]
        else:
            far[..., :-1] = far[..., -1:] - far[..., :-1]
        terms = terms + surf_terms(far, ya, missing)
    return terms.sum(axis=0)


def surf_stir_agg(P, ya, far_rule, missing=False, squares=True):
    """:func:`surf_agg` (row 0), :func:`stir_sums` (rows 1-8) and
    :func:`stir_anchor_sums` (rows 9-12) of the near set, two classes, as
    :func:`relieff_stir_agg`'s.  ``P`` carries the squared differences after
    the sums and counts (``A + 1 + A`` columns, ``3 A`` with ``missing``);
    ``squares=False``: it does not, the differences being 0 or 1 (compact
    rows), so that they are their own squares."""
    width = P.shape[-1]
    a = (width // 3 if missing else (width - 1) // 2) if squares else (
        width // 2 if missing else width - 1)
    base = 2 * a if missing else a + 1
    near = P[:, 0]
    counts = near[..., a:2 * a] if missing else near[..., a:a + 1]
    first = near[..., :a]
    second = near[..., base:] if squares else first
    ya = np.asarray(ya)
    share = surf_agg(P[..., :base], ya, far_rule, missing)
    return np.vstack([share[None, :], stir_sums(counts, first, second, ya).reshape(8, -1),
                      stir_anchor_sums(counts, first, ya)])


def surf_finders(P, ya, thresholds, n_features):
    """Each anchor's entry for STIR's graph pass (:mod:`.kernels.surf`, pass 3):
    ``(near, 1 / h, 1 / m)`` from its thresholds and the hits and misses of
    pass 2 (two classes; ``0`` for a side with none)."""
    counts = P[:, 0, :, n_features]
    rows = np.arange(len(ya))
    ya = np.asarray(ya)
    hits, misses = counts[rows, ya], counts[rows, 1 - ya]
    near = np.where(np.isnan(thresholds[0]), -np.inf, thresholds[0])
    return np.column_stack([near, _inverse(hits), _inverse(misses)])


def _inverse(count):
    return np.divide(1.0, count, out=np.zeros(count.shape), where=count > 0)


def outside_finders(n_rows):
    """Finder entries of rows that are not anchors: they find nothing."""
    out = np.zeros((n_rows, 3))
    out[:, 0] = -np.inf
    return out


def graph_row_sums(G):
    """A block of pass-3 partials ``G`` (:mod:`.kernels.surf`) as the graph's sums:
    ``[sum C^2, sum C^3, sum_e W_e^2, sum_e W_e^3, mutual hit slots, mutual miss
    slots, sum r^2]`` (each edge's powers were added at both of its ends;
    ``r_i = sum_j W_ij^2``)."""
    c, r = G[:, 0], G[:, 1]
    return np.array([c @ c, (c * c) @ c, 0.5 * r.sum(), 0.5 * G[:, 2].sum(),
                     G[:, 3].sum(), G[:, 4].sum(), r @ r])


def sample_graph_sums(D, y, finders, C, v):
    """The graph sums STIR takes over pairs and triangles, from a sample of rows.

    ``D``: the sample's distances, ``y`` its classes, ``finders`` its finder
    entries, ``C`` its rows' exact row sums ``C_i`` (pass 3) and ``v`` the
    inverse of each row's chance of being drawn.  Returns Horvitz-Thompson
    estimates of ``[sum_e W_e C_i C_j, sum_e W_e^2 (C_i + C_j), trace(W^3),
    sum_e W_e^4, sum_ij W_ij^2 (W^2)_ij, trace(W^4)]`` (:func:`pair_graph_sums`'
    terms): each pair ``(i, j)`` of the sample weighs ``v_i v_j``, each
    triangle ``v_i v_j v_l``, each closed walk of four ``v_i v_j v_l v_o``.
    Exact when the sample is every row (``v = 1``); otherwise biased by the
    draw without replacement, ``v_i v_j`` for ``N (N - 1) / (R (R - 1))``: a
    factor ``1 - O(1 / R)`` (0.3 % on triangles at ``R = 1000``).
    """
    found = D < finders[:, :1]
    np.fill_diagonal(found, False)
    same = y[:, None] == y[None, :]
    w = np.where(found, np.where(same, -finders[:, 1:2], finders[:, 2:3]), 0.0)
    W = w + w.T
    cv = C * v
    Wv = W * v[None, :]
    walks = Wv @ Wv
    squares = W * W
    return np.array([0.5 * cv @ W @ cv, cv @ squares @ v, float(np.einsum("ij,ji->", walks, Wv)),
                     0.5 * v @ (squares * squares) @ v,
                     # (Wv W)_ij = walks_ij / v_j: no second product
                     float(np.einsum("i,ij,ij->", v, squares, walks)),
                     float(np.einsum("ij,ji->", walks, walks))])


def column_summary_chunk(X, cap):
    """A row block's per-column summary ``(distinct values, n, mean, M2, cap)``;
    a column with more than ``cap`` distinct values keeps ``None``.  NaN is no
    value: ``n`` counts the values per column when the block has any."""
    X = np.asarray(X, dtype=np.float64)  # float32 rows: the same statistics as float64's
    missing = np.isnan(X)
    if missing.any():
        n = (~missing).sum(axis=0).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, np.nansum(X, axis=0) / n, 0.0)
        m2 = np.nansum((X - mean) ** 2, axis=0)
    else:
        n = X.shape[0]
        mean = X.mean(axis=0) if n else np.zeros(X.shape[1])
        m2 = ((X - mean) ** 2).sum(axis=0)
    uniques = []
    for j in range(X.shape[1]):
        col = X[:, j]
        u = np.unique(col[~missing[:, j]] if missing.any() else col)
        uniques.append(u if u.size <= cap else None)
    return uniques, n, mean, m2, cap


def column_summary_combine(parts):
    """Merge :func:`column_summary_chunk` partials: unions of the distinct values
    (``None`` once past the cap) and Chan's exact merge of ``(n, mean, M2)``, as
    dask's ``moment_combine`` (``n`` per column where values are missing)."""
    uniques, n, mean, m2, cap = parts[0]
    for p in parts[1:]:
        merged = []
        for u, v in zip(uniques, p[0]):
            w = None if u is None or v is None else np.union1d(u, v)
            merged.append(w if w is not None and w.size <= cap else None)
        uniques = merged
        n2, mean2, m22 = p[1], p[2], p[3]
        total = n + n2
        if np.ndim(total):  # per column: some have no value yet
            delta = mean2 - mean
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(total > 0, n2 / total, 0.0)
                cross = np.where(total > 0, n * n2 / total, 0.0)
            mean = mean + delta * share
            m2 = m2 + m22 + delta * delta * cross
        elif total:
            delta = mean2 - mean
            mean = mean + delta * (n2 / total)
            m2 = m2 + m22 + delta * delta * (n * n2 / total)
        n = total
    return uniques, n, mean, m2, cap


# ---------------------------------------------------------------------------
# Regression targets: the k nearest of every row in one class, split by the target
# ---------------------------------------------------------------------------
#
# The tiles are the hard-neighbour tiles with every candidate in one class:
# ``dist, idx`` are ``(anchors, 1, K)``, ``z`` is ``(anchors, 1, K, A)``, ordered
# by (distance, row index).  ``ia`` are the anchors' row indices and ``y`` the
# whole target (one copy in the graph): the neighbours' targets are ``y[idx]``.


def add_and_concat(parts):
    """Merge ``(vector, indices)`` shares: the vectors add, the indices concatenate."""
    return (add([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


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
    resolved = ((hit.sum(axis=1) >= np.minimum(k, n_hits))
                & (miss.sum(axis=1) >= np.minimum(k, n_misses)))
    present = ~np.isnan(z)
    hit, miss = hit[..., None] & present, miss[..., None] & present  # (anchors, K, A)
    n_hit = hit.sum(axis=1) + (n_hits < k)[:, None]  # the anchor itself, as skrebate counts it
    n_miss = miss.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        hits = np.where(hit, z, 0.0).sum(axis=1) / n_hit
        misses = np.where(miss, z, 0.0).sum(axis=1) / n_miss
    term = np.where(n_miss > 0, misses, 0.0) - np.where(n_hit > 0, hits, 0.0)
    return term[resolved].sum(axis=0), np.asarray(ia)[~resolved]


def rrelieff_agg(dist, idx, z, ia, y, span, influence):
    """Anchor block's sums of RReliefF (Robnik-Sikonja & Kononenko 2003, Fig. 3).

    ``[N_dC, N_dA[:], N_dC&dA[:]]`` over the block's anchors and their
    neighbours ``j`` (rank ``r``, 1 for the nearest): ``d(a, j) =
    influence[r] / sum_r' influence[r']`` over the neighbours found,
    ``diff(C) = |y_a - y_j| / span`` and ``diff(A) = z``:
    ``N_dC += diff(C) d``, ``N_dA += diff(A) d``, ``N_dC&dA += diff(C) diff(A) d``.
    """
    j, z = idx[:, 0], z[:, 0]
    found = j >= 0
    d = np.where(found, influence[None, : j.shape[1]], 0.0)
    total = d.sum(axis=1, keepdims=True)
    d = np.divide(d, total, out=np.zeros_like(d), where=total > 0)
    dc = np.abs(y[ia][:, None] - y[np.where(found, j, 0)]) / span
    return np.concatenate([[np.sum(dc * d)], np.einsum("ak,akf->f", d, z),
                           np.einsum("ak,akf->f", dc * d, z)])
