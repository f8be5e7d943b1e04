"""Label permutations for permutation tests, the same for any row blocking.

A permutation of N labels is drawn without moving a row: the rows are cut
into fixed segments of :data:`SEGMENT` rows (whatever the blocks), the driver
draws how many labels of each class every segment receives (sequential
multivariate hypergeometric draws from the class counts), and each segment
shuffles its labels with its own seed.  Every arrangement of the labels is
equally likely, as for a uniform permutation; a block (numpy or dask) builds
its rows' labels from the segments it overlaps, so the labels do not depend
on how the rows are blocked, and nothing but the per-segment counts leaves
the driver.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

#: Rows per segment.
SEGMENT = 2**16


def segment_counts(counts, n_samples, rng):
    """``(n_segments, n_classes)``: the labels of each class each segment receives."""
    left = np.asarray(counts, dtype=np.int64).copy()
    sizes = np.diff(np.append(np.arange(0, n_samples, SEGMENT), n_samples))
    out = np.empty((sizes.size, left.size), dtype=np.int64)
    for s, size in enumerate(sizes):
        out[s] = rng.multivariate_hypergeometric(left, int(size)) if left.sum() > size else left
        left -= out[s]
    return out


def _segment(per_segment, seed, s):
    labels = np.repeat(np.arange(per_segment.shape[1]), per_segment[s])
    np.random.default_rng([seed, s]).shuffle(labels)
    return labels


def labels_of(per_segment, seed, start, stop):
    """The permuted labels of rows ``start:stop``."""
    first, last = start // SEGMENT, (stop - 1) // SEGMENT if stop > start else start // SEGMENT
    if stop <= start:
        return np.zeros(0, dtype=np.int64)
    parts = np.concatenate([_segment(per_segment, seed, s) for s in range(first, last + 1)])
    return parts[start - first * SEGMENT : stop - first * SEGMENT]


def _block(codes, per_segment, seed, block_info=None):
    start, stop = block_info[0]["array-location"][0]
    return labels_of(per_segment, seed, start, stop)


def permuted_codes(codes, counts, rng):
    """``codes`` (numpy or dask, int64) with its labels permuted.

    Returns the permuted codes (same type and blocks as ``codes``) and
    ``(per_segment, seed)``, from which :func:`labels_of` gives the labels of
    any rows (the anchors') on the driver.
    """
    n = codes.shape[0]
    per_segment = segment_counts(counts, n, rng)
    seed = int(rng.integers(2**63))
    if isinstance(codes, np.ndarray):
        return labels_of(per_segment, seed, 0, n), (per_segment, seed)
    return codes.map_blocks(_block, per_segment, seed, dtype=np.int64), (per_segment, seed)


def block_counts(per_segment, seed, bounds):
    """``(n_blocks, n_classes)``: the permuted labels' class counts in each block
    ``(start, stop)`` of ``bounds``, on the driver (whole segments from their
    counts, only the segments a block cuts are drawn)."""
    k = per_segment.shape[1]
    cum = np.vstack([np.zeros(k, dtype=np.int64), np.cumsum(per_segment, axis=0)])
    out = np.zeros((len(bounds), k), dtype=np.int64)
    for b, (start, stop) in enumerate(bounds):
        first, last = -(-start // SEGMENT), stop // SEGMENT  # whole segments inside
        if first < last:
            out[b] = cum[last] - cum[first]
            ends = [(start, first * SEGMENT), (last * SEGMENT, stop)]
        else:
            ends = [(start, stop)]
        for lo, hi in ends:
            if hi > lo:
                out[b] += np.bincount(labels_of(per_segment, seed, lo, hi), minlength=k)
    return out


def permuted_rows(rows, counts, rng):
    """``rows`` with their labels permuted (:func:`permuted_codes`); the same
    ``X`` (persisted dask blocks stay where they are).  The blocks' class
    counts are the permuted labels': a sample of anchors trusts them."""
    codes, (per_segment, seed) = permuted_codes(rows.codes, counts, rng)
    known = block_counts(per_segment, seed, rows.bounds) if rows.on_dask else None
    return replace(rows, codes=codes, block_counts=known, draw=None)  # a draw of its own
