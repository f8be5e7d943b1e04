"""Bin edges and bin codes: features binned once per boosting fit.

As in scikit-learn's ``HistGradientBoosting``:

- **bin edges** are found once: a feature with at most ``max_bins`` distinct
  values gets one bin per value (edges at the midpoints, so the stump search
  is exact); beyond that, edges are the midpoints of ``max_bins`` quantiles of
  a subsample of at most :data:`SUBSAMPLE` rows (sklearn's rule).
- **bin codes** (uint8 up to 256 bins, else uint16) are computed once and
  kept like :func:`~dmargin.engine.execution.prepare_rows` keeps rows: numpy
  in-process, persisted dask blocks when the input is dask or a client is
  active.  Blocks are column-major, so the histogram kernel walks each
  feature's codes contiguously.

A bin ``b`` holds the values ``x`` with ``edges[b-1] < x <= edges[b]``; the
stump split after bin ``b`` is the threshold ``edges[b]`` (``x > edges[b]``
goes right), so the codes and the raw-value rule ``x > theta`` agree.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .._dask import gather, persist_spread, worker_addresses
from .blocks import block_reduce
from .execution import Rows, prepare_rows, use_dask_for

#: Rows used to place quantile bin edges (as sklearn's ``subsample``).
SUBSAMPLE = 200_000
#: Rows per dask block of bin codes at most.
MAX_BLOCK_ROWS = 1_000_000
#: Blocks of bin codes per worker at least, when small input blocks are merged.
BLOCKS_PER_WORKER = 4


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
            full = block_reduce(
                X,
                functools.partial(_block_uniques, columns=cand, cap=max_bins),
                functools.partial(_merge_uniques, cap=max_bins),
                "uniques",
            )
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


def _bin_block(X, edges, dtype):
    out = np.empty(X.shape, dtype=dtype, order="F")
    for j, e in enumerate(edges):
        out[:, j] = np.searchsorted(e, X[:, j], side="left")
    return out


@dataclass
class BinnedRows:
    """Bin codes, 0/1 labels and the thresholds of every split.

    ``rows`` holds the bin codes (N x A, uint8/uint16) and the labels
    (int64) as :class:`~dmargin.engine.execution.Rows`: numpy, or persisted
    dask arrays with the same row blocks.
    """

    rows: Rows
    edges: list
    exact: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def n_features(self):
        return self.rows.n_features

    @property
    def n_bins(self):
        """Bins of each feature (``len(edges) + 1``)."""
        return np.array([len(e) + 1 for e in self.edges], dtype=np.int64)

    def threshold(self, feature, split):
        return float(self.edges[feature][split])


def bin_rows(X, y, max_bins, rng, *, use_dask=None) -> BinnedRows:
    """Find the edges and bin ``X`` once; ``y`` holds class codes 0/1."""
    use_dask = use_dask_for(X, use_dask)
    edges, exact = find_bin_edges(X, max_bins, rng)
    dtype = np.uint8 if max(len(e) for e in edges) < 256 else np.uint16
    # Held on the workers: the bins, the labels and the boosting weights.
    per_row = X.shape[1] * np.dtype(dtype).itemsize + 16
    rows = prepare_rows(
        X,
        y,
        2,
        use_dask=use_dask,
        block=functools.partial(_bin_block, edges=edges, dtype=dtype),
        dtype=dtype,
        max_rows=MAX_BLOCK_ROWS,
        min_rows=1,
        per_row_bytes=per_row,
        what="Binning",
    )
    return BinnedRows(_merge_blocks(rows), edges, exact)


def _n_workers(rows):
    workers = worker_addresses([rows.X])
    return None if workers is None else max(1, len(workers))


def _merge_blocks(rows: Rows) -> Rows:
    """Persisted bin codes in fewer, larger blocks (consecutive ones merged).

    Every boosting round is one graph over the blocks: a Parquet file's row
    groups (100,000 rows) would make hundreds of small tasks a round, whose
    scheduling costs more than their histograms.  Blocks grow up to
    :data:`MAX_BLOCK_ROWS` rows while every worker keeps
    :data:`BLOCKS_PER_WORKER` of them; the rows keep their order, so every
    sum is over the same rows.
    """
    if not rows.on_dask or rows.streamed:
        return rows
    n_workers = _n_workers(rows)
    sizes = [e - s for s, e in rows.bounds]
    if n_workers is None or len(sizes) <= BLOCKS_PER_WORKER * n_workers:
        return rows
    per = max(1, min(len(sizes) // (BLOCKS_PER_WORKER * n_workers), MAX_BLOCK_ROWS // max(sizes)))
    if per == 1:
        return rows
    chunks = tuple(sum(sizes[i : i + per]) for i in range(0, len(sizes), per))
    X = rows.X.rechunk((chunks, rows.X.shape[1])).map_blocks(np.asfortranarray, dtype=rows.X.dtype)
    X, codes = persist_spread(X, rows.codes.rechunk((chunks,)))
    edges = np.concatenate([[0], np.cumsum(chunks)]).tolist()
    return Rows(X, codes, rows.n_classes, True, list(zip(edges[:-1], edges[1:])))
