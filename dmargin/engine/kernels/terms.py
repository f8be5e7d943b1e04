"""Per-anchor terms of the soft-neighbour methods, from merged ``(m, s, v)`` partials.

I-RELIEF's hit/miss probabilities and margin term (Sun 2007, equations 8-12),
IMMIGRATE's pair coefficients and IM4E's share (Zhao, Hong & Liu 2020): the
``*_agg`` of :func:`dmargin.engine.lse_statistic` and
:func:`dmargin.engine.quad_statistic`.  Numba, because the online kernel
(:mod:`.sequential`) calls the same per-anchor term inside its loop; the
batch agg codes the equations over a whole block, and a test holds the two
equal.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from .lse import filled

# ---------------------------------------------------------------------------
# I-RELIEF (Sun 2007, equations 8-12)
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
        log_all = hi + np.log(
            np.exp(np.where(ok, log_h - hi, 0.0)) + np.exp(np.where(ok, log_m - hi, 0.0))
        )
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
        irelief_anchor_term_missing(m[a], s[a], v[a], ya[a], pooled, miss_prior, outliers, term)
        for k in range(n_features):
            out[k] += weight[a] * term[k]
    return out


# ---------------------------------------------------------------------------
# IMMIGRATE and IM4E (Zhao, Hong & Liu 2020; Bei & Hong 2015)
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


class PairCoefficients(NamedTuple):
    """:func:`softmin_coef`'s result for an anchor block, by name."""

    #: Per anchor and class, the log-normaliser of its hits' or misses' softmax.
    log_z: np.ndarray
    #: Per anchor and class, ``+D_n`` (hits), ``-D_n`` (misses) or 0.
    coef: np.ndarray
    #: The block's share of the entropy term.
    entropy: float


class Im4eShare(NamedTuple):
    """:func:`im4e_agg`'s share, by name."""

    #: ``sum_n D_n (mbar_n - hbar_n)``, per feature.
    margin: np.ndarray
    #: The entropy term.
    entropy: float


def im4e_share(out) -> Im4eShare:
    """The summed :func:`im4e_agg` shares ``[margin..., entropy]`` by name."""
    return Im4eShare(out[:-1], out[-1])


@numba.njit(cache=True, nogil=True)
def softmin_coef(m, s, u, ya, weight, sigma):
    """IMMIGRATE's E-step for an anchor block: ``(log_z, coef, entropy)``.

    Hits get ``coef = +D_n`` (alpha), pooled misses ``coef = -D_n`` (beta),
    so that pass 2 sums ``Sigma = sum_n D_n (sum_H alpha z z^T - sum_M beta z z^T)``.
    The entropy term of the cost (eq. 3.5 / 3.19) is
    ``sum_n D_n (sum_H alpha log alpha - sum_M beta log beta)`` with
    ``sum_j p_j log p_j = sum_j p_j l_j - LSE`` and ``l = -q / sigma`` from the
    scalar partials ``u`` (the entropy of Zhao, Hong & Liu 2020, equation 3.5).
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
