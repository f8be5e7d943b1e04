"""A sample of anchors, drawn where the rows are: stratified by class, only the
sampled rows (and a few more) come to the driver.

The rule: a fit's seed gives every row a 64-bit key, a hash of the seed and
the row's global index (:func:`row_keys`); class ``c`` contributes its
``share[c]`` rows of smallest key (``share``: :func:`_stratified_share`).
A key depends on the row's index alone, so the sample does not depend on how
the rows are cut into blocks, and a block can offer its candidates before the
class totals are known: every row whose key lies under a threshold set for
about twice the sample, and each class's few smallest keys.  That is the
*pool* (:func:`pool_chunk`), which the streamed fits draw in the same pass as
the scaling statistics (:mod:`dmargin.io._training`).  :func:`resolve_pool` reads
the sample off a pool when the pool is sure to hold it; when it is not (a
class far smaller than its share's odds), :func:`sample_anchors` draws the
same rows in two small passes: the smallest keys, then those rows.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import grid
from .execution import Anchors, Rows

#: The pool holds every row whose key is below ``(POOL_FACTOR m + 8 sqrt(m) + 16) / N``
#: of the key range: about twice the sample, so that each class's share is in it with
#: overwhelming odds (resolve_pool checks it).
POOL_FACTOR = 2.0
#: Each block also offers each of its labels' ``min(MAX_SMALLEST, budget // labels)``
#: smallest keys (at least one), ``budget`` the block's share of ``POOL_SMALLEST`` rows
#: and of ``POOL_SMALLEST_BYTES`` (wide rows): a class whose share is at most that is
#: in the pool whatever the odds.  Only a block of at most ``MAX_POOL_LABELS``
#: distinct labels offers them (else the threshold alone).
MAX_SMALLEST = 32
POOL_SMALLEST = 4096
POOL_SMALLEST_BYTES = 64 * 2**20
MAX_POOL_LABELS = 64
#: No pool whose threshold's rows would pass this many bytes (very wide rows): the
#: two small passes bring only the sample.
POOL_BYTES = 512 * 2**20

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


class Draw(NamedTuple):
    """A fit's draw of ``m`` anchors: its seed, and the anchors when the door
    drew them in its own pass (``None``: :func:`sample_anchors` draws them)."""

    m: int
    seed: int
    anchors: Anchors | None = None


def draw_seed(rng) -> int:
    """The seed of a fit's anchor keys: one draw from ``rng``."""
    return int(rng.integers(0, 2**63, dtype=np.int64))


def row_keys(seed: int, start: int, n: int) -> np.ndarray:
    """The keys of rows ``start .. start + n - 1``: splitmix64 of the seed and the
    global row index (uniform, independent 64-bit values)."""
    z = (np.arange(start, start + n, dtype=np.uint64) + np.uint64(1)) * _GOLDEN + np.uint64(seed)
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def pool_plan(m: int, n: int, n_blocks: int, n_features: int):
    """``(threshold, budget)`` of a pool for ``m`` of ``n`` rows of ``n_features``
    in ``n_blocks`` blocks (``budget``: a block's smallest keys over all its
    labels), or ``None`` when a pool would not be much smaller than the rows, or
    larger than :data:`POOL_BYTES`."""
    want = POOL_FACTOR * m + 8.0 * math.sqrt(m) + 16.0
    if want > n / 2 or want * 8 * n_features > POOL_BYTES:
        return None
    threshold = min(int(want / n * 2.0**64), 2**64 - 1)
    rows = min(POOL_SMALLEST, POOL_SMALLEST_BYTES // (8 * max(1, n_features)))
    return threshold, max(1, rows // max(1, n_blocks))


class Pool(NamedTuple):
    """A block's candidates: rows (float64, as read), labels, keys, global indices,
    and how many smallest keys of each of its labels are among them (``smallest``;
    0 when none were offered)."""

    X: np.ndarray
    labels: np.ndarray
    keys: np.ndarray
    index: np.ndarray
    smallest: int


def pool_chunk(X, labels, start, seed, threshold, budget) -> Pool:
    """The pool of one block: its rows with a key under ``threshold``, and each
    label's ``min(MAX_SMALLEST, budget // labels)`` smallest keys (when the block
    has at most :data:`MAX_POOL_LABELS` labels that sort).

    Never raises on odd labels: the scaling pass's label checks name them.
    """
    labels = np.asarray(labels)
    n = labels.shape[0]
    keys = row_keys(seed, start, n)
    take = keys < np.uint64(threshold)
    smallest = 0
    try:
        values, inverse = np.unique(labels, return_inverse=True)
    except TypeError:  # labels of mixed types: refused by the label checks
        values = None
    if values is not None and len(values) <= MAX_POOL_LABELS:
        smallest = max(1, min(MAX_SMALLEST, budget // max(1, len(values))))
        inverse = inverse.ravel()
        for v in range(len(values)):
            own = np.flatnonzero(inverse == v)
            if own.size > smallest:
                own = own[np.argpartition(keys[own], smallest - 1)[:smallest]]
            take[own] = True
    local = np.flatnonzero(take)
    return Pool(
        np.asarray(X[local], dtype=np.float64),
        labels[local],
        keys[local],
        local + start,
        smallest,
    )


def resolve_pool(pools, codes_of, totals, m, threshold, budget):
    """``(X, codes, index)`` of the sample from the blocks' pools (index sorted),
    or ``None`` when a class's share may lie outside them.

    ``codes_of(labels)`` gives the class codes of the pools' labels.  Class
    ``c``'s ``share[c]`` smallest keys are all in the pools when at least that
    many of its rows are under the threshold (every such row is there), or
    when every block offered at least its share of smallest keys of each class.
    """
    share = _stratified_share(totals, m)
    X = np.concatenate([p.X for p in pools])
    codes = codes_of(np.concatenate([p.labels for p in pools]))
    keys = np.concatenate([p.keys for p in pools])
    index = np.concatenate([p.index for p in pools])
    offered = min((p.smallest for p in pools), default=0)
    for c, s in enumerate(share):
        under = int(np.count_nonzero((codes == c) & (keys < np.uint64(threshold))))
        if s > under and s > offered:
            return None
    chosen = _pick(keys, index, codes, share)
    return X[chosen], codes[chosen], index[chosen]


def _pick(keys, index, codes, share):
    """Positions of each class ``c``'s ``share[c]`` smallest ``(key, index)``, in
    the order of ``index``."""
    chosen = [np.zeros(0, dtype=np.int64)]
    for c, s in enumerate(share):
        own = np.flatnonzero(codes == c)
        chosen.append(own[np.lexsort((index[own], keys[own]))[:s]])
    chosen = np.concatenate(chosen)
    return chosen[np.argsort(index[chosen], kind="stable")]


def _class_counts(X, codes, n_classes):
    return np.bincount(codes, minlength=n_classes)[None, :]


def _block_smallest(X, codes, start, seed, share):
    """Global indices, keys and codes of each class's ``share[c]`` smallest keys in
    a block (the rows stay)."""
    keys = row_keys(seed, start, codes.shape[0])
    local = _pick(keys, np.arange(codes.shape[0]), codes, share)
    return local + start, keys[local], codes[local]


def _take_rows(X, codes, start, local):
    return np.asarray(X[local], dtype=np.float64), codes[local], local + start


def sample_anchors(rows: Rows, n_anchors: int, rng=None, *, seed=None) -> Anchors:
    """``n_anchors`` rows drawn without replacement, stratified by class.

    Class ``c`` gets its share ``n_anchors * N_c / N`` (largest remainders;
    at least one row of every class when ``n_anchors`` allows); within a class
    the rows are uniform: those of smallest key (module docstring) under the
    seed drawn from ``rng`` (or given, ``seed``).  Passes over the row blocks:
    the class counts (unless ``rows.block_counts`` has them), then the pool;
    when the pool cannot tell, each block's smallest keys and then the rows.
    Only the pool's rows come to the driver.
    """
    seed = draw_seed(rng) if seed is None else int(seed)
    k = rows.n_classes
    g = grid.graph(rows, "anchor-counts")
    if rows.block_counts is not None and len(rows.block_counts) == len(g.candidates):
        counts = np.asarray(rows.block_counts, dtype=np.int64)
    else:
        per_block = grid.per_block(g, _class_counts, k, fields=2, tag="counts", tile=False)
        counts = np.asarray(grid.run(g, g.add("stack", np.concatenate, per_block)))
    totals = counts.sum(axis=0)
    plan = pool_plan(n_anchors, rows.n_samples, len(g.candidates), rows.n_features)
    if plan is not None:
        g = grid.graph(rows, "anchor-pool")
        parts = grid.per_block(g, pool_chunk, seed, *plan, fields=3, tag="pool", tile=False)
        pools = grid.run(g, g.add("pools", list, parts))
        found = resolve_pool(pools, lambda c: c, totals, n_anchors, *plan)
        if found is not None:
            return Anchors(*found)
    share = _stratified_share(totals, n_anchors)
    g = grid.graph(rows, "anchor-keys")
    parts = grid.per_block(g, _block_smallest, seed, share, fields=3, tag="keys", tile=False)
    index, keys, codes = grid.run(g, g.add("concat", _concat_rows, parts))
    index = index[_pick(keys, index, codes, share)]
    g = grid.graph(rows, "anchor-rows")
    parts = grid.picked(g, index, _take_rows)
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


__all__ = [
    "Draw",
    "draw_seed",
    "pool_chunk",
    "pool_plan",
    "resolve_pool",
    "row_keys",
    "sample_anchors",
]
