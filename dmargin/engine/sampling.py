"""A sample of anchors, drawn where the rows are: stratified by class, only the
sampled rows come to the driver."""

from __future__ import annotations

import numpy as np

from . import grid
from .execution import Anchors, Rows


def _class_counts(X, codes, n_classes):
    return np.bincount(codes, minlength=n_classes)[None, :]


def _take_rows(X, codes, start, picks):
    """Rows of one block at the per-class positions ``picks[c]`` (ranks in class ``c``)."""
    out = [np.flatnonzero(codes == c)[ranks] for c, ranks in enumerate(picks)]
    local = np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)
    return np.asarray(X[local], dtype=np.float64), codes[local], local + start


def sample_anchors(rows: Rows, n_anchors: int, rng) -> Anchors:
    """``n_anchors`` rows drawn without replacement, stratified by class.

    Class ``c`` gets its share ``n_anchors * N_c / N`` (largest remainders;
    at least one row of every class when ``n_anchors`` allows); within a class
    the rows are uniform.  Two small passes over the row blocks: the class
    counts per block (unless ``rows.block_counts`` has them), then each block
    picks its rows; only the ``n_anchors`` rows come to the driver.
    """
    k = rows.n_classes
    g = grid.graph(rows, "anchor-counts")
    if rows.block_counts is not None and len(rows.block_counts) == len(g.candidates):
        counts = np.asarray(rows.block_counts, dtype=np.int64)
    else:
        per_block = grid.per_block(g, _class_counts, k, fields=2, tag="counts", tile=False)
        counts = np.asarray(grid.run(g, g.add("stack", np.concatenate, per_block)))
    totals = counts.sum(axis=0)
    share = _stratified_share(totals, n_anchors)
    ranks = [np.sort(rng.choice(int(totals[c]), int(share[c]), replace=False)) for c in range(k)]
    cum = np.vstack([np.zeros(k, dtype=np.int64), np.cumsum(counts, axis=0)])
    g = grid.graph(rows, "anchor-rows")

    def picks(b):  # block b's rows: the ranks of each class that fall in it
        return (
            [r[(r >= cum[b, c]) & (r < cum[b + 1, c])] - cum[b, c] for c, r in enumerate(ranks)],
        )

    parts = grid.per_block(g, _take_rows, fields=3, each=picks, tag="take", tile=False)
    X, codes, index = grid.run(g, g.add("concat", _concat_rows, parts))
    return Anchors(X, codes, index)


def _concat_rows(parts):
    return tuple(np.concatenate(items) for items in zip(*parts))


def _stratified_share(totals, m):
    """Rows per class: proportional to ``totals``, summing to ``m``, every
    present class at least one while ``m`` allows (largest remainders)."""
    totals = np.asarray(totals, dtype=np.int64)
    present = totals > 0
    m = int(min(m, totals.sum()))
    least = np.zeros_like(totals)
    if m >= present.sum():
        least[present] = 1
    exact = totals / totals.sum() * m
    share = np.minimum(np.maximum(least, np.floor(exact).astype(np.int64)), totals)
    while share.sum() > m:  # the ones given to tiny classes come out of the largest
        share[np.argmax(np.where(share > least, share - exact, -np.inf))] -= 1
    rest = exact - share
    while share.sum() < m:
        room = np.where(share < totals, rest, -np.inf)
        c = int(np.argmax(room))
        share[c] += 1
        rest[c] -= 1
    return share


__all__ = ["sample_anchors"]
