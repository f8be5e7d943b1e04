"""Weighted class histograms of binned features: the stump search of boosting.

AdaBoost with decision stumps (SBS-MF, AdaBoost-CR, BDSFS; ``ALGORITHMS.md``
section 8) needs, every round, the sample-weighted class sums of every
feature at every candidate threshold.  As in scikit-learn's
``HistGradientBoosting``, features are binned once per fit and each round is
a reduction of per-row-block ``(features x bins x 2)`` histograms:

- **bin edges** are found once: a feature with at most ``max_bins`` distinct
  values gets one bin per value (edges at the midpoints, so the stump search
  is exact); beyond that, edges are the midpoints of ``max_bins`` quantiles of
  a subsample of at most :data:`SUBSAMPLE` rows (sklearn's rule).
- **bin codes** (uint8 up to 256 bins, else uint16) are computed once and
  kept like :func:`~dmargin.engine.execution.prepare_rows` keeps rows: numpy
  in-process, persisted dask blocks when the input is dask or a client is
  active.  Blocks are column-major, so the kernel walks each feature's codes
  contiguously.
- **sample weights live with the blocks.**  Each round's graph first updates
  every weight block from the previous round's stump, ``D <- D exp(-alpha y
  h(x)) / Z`` (one blockwise task, ``Z`` known on the driver from the
  histogram), then histograms the updated blocks and tree-reduces them; the
  new weights stay persisted on the workers for the next round.  No N-vector
  passes through the driver, the graph has the same size every round, and
  only the small histogram comes back.

A bin ``b`` holds the values ``x`` with ``edges[b-1] < x <= edges[b]``; the
stump split after bin ``b`` is the threshold ``edges[b]`` (``x > edges[b]``
goes right), so the codes and the raw-value rule ``x > theta`` agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba
import numpy as np

from . import tiles
from .._compat import (active_client, check_worker_memory, client_for, compute, gather,
                       is_dask_collection)
from .execution import SPLIT_EVERY, Rows, _Graph

#: Rows used to place quantile bin edges (as sklearn's ``subsample``).
SUBSAMPLE = 200_000
#: Below this many (row, feature) updates the histogram runs on one thread.
_PARALLEL_MIN_WORK = 2e6
#: Row blocks a numpy input is cut into when it is sent to a cluster.
_TARGET_BLOCKS = 8
#: Rows per dask block of bin codes at most.
_MAX_BLOCK_ROWS = 1_000_000


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


#: Rows per sub-block of the histogram: the sub-block's weights and labels
#: stay in cache while every feature's codes stream past them.
_HIST_ROWS = 4096
#: Row partitions (fixed by the data's shape), each with its own histogram
#: summed in order, so the result does not depend on the thread count; small
#: blocks keep one.
_HIST_PARTS = 8
#: Bytes of partition histograms at most (fewer partitions for wide data).
_HIST_PART_BYTES = 8 * 2**20


@tiles._jit
def _histogram(bins, y, w, features, n_bins):
    """``out[k, b, c] = sum_i w_i [bins[i, features[k]] == b] [y_i == c]``."""
    n = bins.shape[0]
    n_feat = features.shape[0]
    n_parts = max(1, min(_HIST_PARTS, n // (4 * _HIST_ROWS),
                         _HIST_PART_BYTES // (16 * n_feat * n_bins + 1)))
    parts = np.zeros((n_parts, n_feat, n_bins, 2))
    for p in numba.prange(n_parts):
        r0 = p * n // n_parts
        r1 = (p + 1) * n // n_parts
        for s0 in range(r0, r1, _HIST_ROWS):
            s1 = min(s0 + _HIST_ROWS, r1)
            for k in range(n_feat):
                j = features[k]
                for i in range(s0, s1):
                    parts[p, k, bins[i, j], y[i]] += w[i]
    out = np.zeros((n_feat, n_bins, 2))
    for p in range(n_parts):
        out += parts[p]
    return out


@numba.njit(cache=True, nogil=True)
def _reweight(w, codes, y, split, polarity, shrink, grow):
    """``w_i * shrink`` where the stump is right on row ``i``, ``* grow`` where wrong."""
    out = np.empty_like(w)
    for i in range(w.shape[0]):
        right = (codes[i] > split) == (polarity * (2 * y[i] - 1) > 0)
        out[i] = w[i] * (shrink if right else grow)
    return out


def update_weights(w, bins, y, stump):
    """``w exp(-alpha y h(x)) / Z`` for ``stump = (feature, split, polarity, alpha, Z)``.

    ``stump=None`` returns ``w`` (the first round).  ``y h`` is +-1, so two
    factors serve every row (one pass, no exponential per row).
    """
    if stump is None:
        return w
    feature, split, polarity, alpha, z = stump
    return _reweight(w, bins[:, feature], y, split, int(polarity), math.exp(-alpha) / z,
                     math.exp(alpha) / z)


def _take(y, values):
    return values[y]


def _hist_task(bins, y, w, features, n_bins):
    return _histogram[0](bins, y, w, features, n_bins)


def _sum(parts):
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


# ---------------------------------------------------------------------------
# Bin edges and codes
# ---------------------------------------------------------------------------


def _subsample_rows(n, rng):
    if n <= SUBSAMPLE:
        return None
    return np.sort(rng.choice(n, SUBSAMPLE, replace=False))


def _quantile_edges(col, max_bins):
    q = np.linspace(0, 100, max_bins + 1)[1:-1]
    edges = np.unique(np.percentile(col, q, method="midpoint"))
    # An edge at the maximum would leave an empty last bin; drop it.
    return edges[edges < col.max()]


def _exact_edges(values):
    return (values[:-1] + values[1:]) / 2.0


def _block_uniques(X, columns, cap):
    """Distinct values of each listed column, or ``None`` past ``cap``."""
    out = []
    for j in columns:
        u = np.unique(X[:, j])
        out.append(u if u.size <= cap else None)
    return out


def _merge_uniques(parts, cap=None):
    merged = []
    for cols in zip(*parts):
        if any(c is None for c in cols):
            merged.append(None)
            continue
        u = np.unique(np.concatenate(cols))
        merged.append(u if cap is None or u.size <= cap else None)
    return merged


def find_bin_edges(X, max_bins, rng):
    """Per-feature thresholds (strictly increasing) and whether each is exact.

    ``X`` is numpy or dask.  The subsample decides quickly which features
    have more than ``max_bins`` values; only the others are counted exactly
    over all rows (one reduction over blocks for dask input).
    """
    n, a = X.shape
    idx = _subsample_rows(n, rng)
    if idx is None:
        sample = np.asarray(gather(X, what="the stump bin edges"))
    else:
        sample = np.asarray(gather(X[idx], what="the stump bin edges"))
    uniq = _block_uniques(sample, range(a), max_bins)
    if idx is not None:  # the sample may miss values: count candidates on all rows
        cand = [j for j in range(a) if uniq[j] is not None]
        if cand:
            if is_dask_collection(X):
                import dask

                blocks = X.to_delayed().ravel()
                parts = [dask.delayed(_block_uniques)(b, cand, max_bins) for b in blocks]
                full = compute(_tree_delayed(parts, max_bins), what="the stump bin edges")[0]
            else:
                full = _block_uniques(X, cand, max_bins)
            for j, u in zip(cand, full):
                uniq[j] = u
    edges, exact = [], np.zeros(a, dtype=bool)
    for j in range(a):
        if uniq[j] is not None:
            edges.append(_exact_edges(uniq[j]))
            exact[j] = True
        else:
            edges.append(_quantile_edges(sample[:, j], max_bins))
    return edges, exact


def _tree_delayed(parts, cap):
    import dask

    while len(parts) > 1:
        parts = [dask.delayed(_merge_uniques)(parts[i:i + SPLIT_EVERY], cap)
                 if len(parts[i:i + SPLIT_EVERY]) > 1 else parts[i]
                 for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


def _bin_block(X, edges, dtype):
    out = np.empty(X.shape, dtype=dtype, order="F")
    for j, e in enumerate(edges):
        out[:, j] = np.searchsorted(e, X[:, j], side="left")
    return out


@dataclass
class BinnedRows:
    """Bin codes, 0/1 labels and the thresholds of every split.

    ``bins`` (N x A, uint8/uint16) and ``y`` (int64) are numpy or persisted
    dask arrays with the same row blocks (``rows`` wraps them for
    :class:`~dmargin.engine.execution._Graph`).
    """

    bins: object
    y: object
    edges: list
    exact: np.ndarray
    on_dask: bool
    bounds: list = field(default_factory=list)

    @property
    def n_samples(self):
        return self.bins.shape[0]

    @property
    def n_features(self):
        return self.bins.shape[1]

    @property
    def n_bins(self):
        """Bins of each feature (``len(edges) + 1``)."""
        return np.array([len(e) + 1 for e in self.edges], dtype=np.int64)

    @property
    def rows(self):
        return Rows(self.bins, self.y, 2, self.on_dask, self.bounds)

    def threshold(self, feature, split):
        return float(self.edges[feature][split])


def bin_rows(X, y, max_bins, rng, *, use_dask=None) -> BinnedRows:
    """Find the edges and bin ``X`` once; ``y`` holds class codes 0/1."""
    if use_dask is None:
        use_dask = is_dask_collection(X) or active_client() is not None
    edges, exact = find_bin_edges(X, max_bins, rng)
    dtype = np.uint8 if max(len(e) for e in edges) < 256 else np.uint16
    if not use_dask:
        X = np.asarray(X, dtype=np.float64)
        return BinnedRows(_bin_block(X, edges, dtype), np.asarray(y, dtype=np.int64), edges,
                          exact, False, [(0, X.shape[0])])
    import dask
    import dask.array as da

    n, a = X.shape
    if is_dask_collection(X):
        chunks = X.chunks[0] if max(X.chunks[0]) <= _MAX_BLOCK_ROWS else _MAX_BLOCK_ROWS
    else:
        chunks = min(_MAX_BLOCK_ROWS, max(1, -(-n // _TARGET_BLOCKS)))
    X = da.asarray(X).astype(np.float64).rechunk((chunks, a))
    bins = X.map_blocks(_bin_block, edges, dtype, dtype=dtype)
    y = da.asarray(y).astype(np.int64).rechunk((X.chunks[0],))
    # Held on the workers: the bins, the labels and the boosting weights; a task
    # reads one float block to bin it.
    per_row = a * np.dtype(dtype).itemsize + 16
    check_worker_memory(client_for([bins]), n * per_row, max(X.chunks[0]) * (a * 8 + per_row),
                        f"Binning {n} rows x {a} features")
    bins, y = dask.persist(bins, y)
    cuts = np.concatenate([[0], np.cumsum(bins.chunks[0])]).tolist()
    return BinnedRows(bins, y, edges, exact, True, list(zip(cuts[:-1], cuts[1:])))


# ---------------------------------------------------------------------------
# Rounds
# ---------------------------------------------------------------------------


class WeightedHistograms:
    """Per-round weighted class histograms over :class:`BinnedRows`.

    The initial weight of a sample is ``class_weight[y]``.

    ``histogram(features, stump)`` first applies the previous round's
    ``stump = (feature, split, polarity, alpha, Z)`` to the weights (where
    they live), then returns the ``(len(features), max bins, 2)`` sums.
    """

    def __init__(self, binned: BinnedRows, class_weight, split_every=SPLIT_EVERY):
        self.binned = binned
        self.split_every = split_every
        self.n_bins = int(binned.n_bins.max())
        class_weight = np.asarray(class_weight, dtype=np.float64)
        if not binned.on_dask:
            self.w = class_weight[binned.y]
            return
        # Initial weights from the labels where they live (no N floats shipped).
        self.w = binned.y.map_blocks(_take, class_weight, dtype=np.float64).persist()

    def histogram(self, features, stump=None):
        b = self.binned
        features = np.ascontiguousarray(features, dtype=np.int64)
        if not b.on_dask:
            self.w = update_weights(self.w, b.bins, b.y, stump)
            work = b.n_samples * features.size
            kernel = _histogram[1] if work >= _PARALLEL_MIN_WORK else _histogram[0]
            return kernel(b.bins, b.y, self.w, features, self.n_bins)
        return self._dask_round(features, stump)

    def _dask_round(self, features, stump):
        import dask
        import dask.array as da
        from dask.delayed import Delayed
        from dask.highlevelgraph import HighLevelGraph

        b = self.binned
        g = _Graph(b.rows, "hist", self.w.name, features, stump, split_every=self.split_every)
        w_name = f"dmargin-weights-{g.name.rsplit('-', 1)[-1]}"
        w_dsk, parts = {}, []
        for i in range(len(b.bounds)):
            w_dsk[(w_name, i)] = (update_weights, (self.w.name, i), g.x(i), g.y(i), stump)
            parts.append(g.add("block", _hist_task, g.x(i), g.y(i), (w_name, i), features,
                               self.n_bins))
        total = g.tree(parts, _sum, "sum")
        w_graph = HighLevelGraph.from_collections(w_name, w_dsk,
                                                  dependencies=[self.w, b.bins, b.y])
        w_new = da.Array(w_graph, w_name, chunks=self.w.chunks, dtype=np.float64)
        hist_graph = HighLevelGraph.from_collections(g.name, g.dsk,
                                                     dependencies=[w_new, b.bins, b.y])
        w_new, hist = dask.persist(w_new, Delayed(total, hist_graph, layer=g.name))
        self.w = w_new
        return np.asarray(gather(hist, what="a boosting round's histograms"))

    def weights(self):
        """The current weights as numpy (for tests; gathers N floats)."""
        return np.asarray(gather(self.w, what="the boosting weights"))


def counts(binned: BinnedRows, features=None):
    """Unweighted class counts per bin (one pass), ``(A, max bins, 2)``."""
    features = np.arange(binned.n_features) if features is None else features
    hist = WeightedHistograms(binned, np.ones(2))
    return hist.histogram(features)
