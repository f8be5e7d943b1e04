"""How partials merge: the generic ``*_combine`` steps.

Like dask's ``mean_chunk / mean_combine / mean_agg`` trios: a tile kernel in
:mod:`dmargin.engine.kernels` is the chunk step; a ``*_combine`` here merges
partials of the same anchors over disjoint candidate blocks (associative, so
dask can tree-reduce them); the algorithm's ``*_agg`` (in its own module:
``dmargin.relief._terms``, ``dmargin.surf._terms``, or for the soft-neighbour
methods :mod:`dmargin.engine.kernels.terms`, which their online kernel
shares) turns the merged partial of an anchor block into that block's share.
"""

import numpy as np

from .kernels.knn import NearestPartial
from .kernels.lse import SoftPartial


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
    parts = [SoftPartial(*p) for p in parts]
    m = parts[0].m
    for p in parts[1:]:
        m = np.maximum(m, p.m)
    s = 0.0
    v = None
    for p in parts:
        # exp(-inf - -inf) would be nan: an empty class stays empty.
        r = np.where(np.isneginf(p.m), 0.0, np.exp(p.m - np.where(np.isneginf(m), 0.0, m)))
        s = s + p.s * r
        if p.v is not None:
            term = p.v * (r if p.v.ndim == r.ndim else r[..., None])
            v = term if v is None else v + term
    return SoftPartial(m, s, v)


# ---------------------------------------------------------------------------
# Hard nearest neighbours: top-k partials (dist, idx, z)
# ---------------------------------------------------------------------------


def knn_combine(parts):
    """Merge top-k partials ``(dist, idx, z)``: keep the k smallest (dist, idx)."""
    parts = [NearestPartial(*p) for p in parts]
    k = parts[0].dist.shape[-1]
    dist = np.concatenate([p.dist for p in parts], axis=-1)
    idx = np.concatenate([p.idx for p in parts], axis=-1)
    z = np.concatenate([p.z for p in parts], axis=-2)
    # Unfilled slots (idx -1, dist inf) must sort last among equal distances.
    key_idx = np.where(idx < 0, np.iinfo(np.int64).max, idx)
    order = np.lexsort((key_idx, dist), axis=-1)[..., :k]
    return NearestPartial(
        np.take_along_axis(dist, order, axis=-1),
        np.take_along_axis(idx, order, axis=-1),
        np.take_along_axis(z, order[..., None], axis=-2),
    )


def column_summary_chunk(X, cap):
    """A row block's per-column summary ``(distinct values, n, mean, M2, cap)``;
    a column with more than ``cap`` distinct values keeps ``None``.  NaN is no
    value: ``n`` counts the values per column when the block has any."""
    X = np.asarray(X, dtype=np.float64)  # float32 rows: the same statistics as float64's
    missing = np.isnan(X)
    any_missing = missing.any()
    if any_missing:
        n = (~missing).sum(axis=0).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, np.nansum(X, axis=0) / n, 0.0)
        m2 = np.nansum((X - mean) ** 2, axis=0)
    else:
        n = X.shape[0]
        mean = X.mean(axis=0) if n else np.zeros(X.shape[1])
        m2 = ((X - mean) ** 2).sum(axis=0)
    # A continuous column shows more than ``cap`` values in its first rows: a
    # column is sorted whole only when no head of 8^k times ``_HEAD`` rows decides
    # (a column of mostly zeros may show few values in its first rows only).
    decided = np.zeros(X.shape[1], dtype=np.bool_)
    rows = _HEAD
    while not any_missing and rows < X.shape[0] and not decided.all():
        todo = np.flatnonzero(~decided)
        head = np.sort(X[:rows, todo], axis=0)
        decided[todo] = 1 + (head[1:] != head[:-1]).sum(axis=0) > cap
        rows *= 8
    uniques = []
    for j in range(X.shape[1]):
        if decided[j]:
            uniques.append(None)
            continue
        col = X[:, j]
        u = np.unique(col[~missing[:, j]] if any_missing else col)
        uniques.append(u if u.size <= cap else None)
    return uniques, n, mean, m2, cap


#: Rows of a column looked at first by :func:`column_summary_chunk`.
_HEAD = 128


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


def add_and_concat(parts):
    """Merge ``(vector, indices)`` shares: the vectors add, the indices concatenate."""
    return (add([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
