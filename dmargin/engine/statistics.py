"""The statistics an algorithm asks for, each written once as a task graph.

An algorithm asks for one statistic per iteration and gets a small numpy
result back; :mod:`dmargin.engine.execution` runs the graph in-process or on
dask.  Each statistic is a kernel family's tiles over a grid of row blocks,
merged with its ``*_combine`` and reduced with its ``*_agg``
(:mod:`dmargin.engine.merge`):

- :func:`lse_statistic` -- soft neighbours (I-RELIEF, IM4E): ordered grid;
- :func:`knn_statistic` -- hard neighbours (Relief, ReliefF): ordered grid;
- :func:`quad_statistic` -- IMMIGRATE's E-step: symmetric grid, two passes;
- :func:`anchor_partials` -- new anchors from the driver against all rows;
- :func:`rbf_left_out_sums` -- LDM-RFE's kernel sums: symmetric grid;
- :class:`WeightedHistograms` -- boosting rounds: one task per row block,
  the sample weights kept where the blocks are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import merge
from ._numba import blas_single_thread, n_threads, pick, use_threads
from .execution import TILE_BUDGET, Anchors, Graph, Rows, local_bounds, split_bounds
from .kernels import distance, hist, knn, lse, quad, rbf, surf
from .kernels.modes import CROSS, ORDERED, WITHIN, block_pair

#: The tile kernels by name: ``(serial, threaded)`` twins.
KERNELS = {"lse": lse.TWINS, "lse-general": lse.GENERAL_TWINS, "knn": knn.TWINS,
           "knn-general": knn.GENERAL_TWINS, "qlse": quad.TWINS}
#: Cost of one step of each family relative to a pair-feature of ``lse``:
#: the quadratic kernels count flops (BLAS: fast per flop).
_COST = {"lse": 1.0, "lse-general": 2.0, "knn": 1.0, "knn-general": 2.0, "qlse": 0.05}


def _anchors(rows: Rows, per_row: int, sample=None):
    """Anchor blocks: in-process from the tile budget, on dask the row blocks;
    a sample of anchors is cut by the budget in both."""
    if sample is not None:
        return local_bounds(sample.n_samples, TILE_BUDGET // (8 * per_row))
    if rows.on_dask:
        return None
    return local_bounds(rows.n_samples, TILE_BUDGET // (8 * per_row))


def _tile(name, threads, Xa, start_a, Xc, yc, start_c, *params):
    # A block of rows starts at ``start_a``; a sample carries its indices.
    ia = np.asarray(start_a) if np.ndim(start_a) else np.arange(start_a, start_a + Xa.shape[0])
    ic = np.arange(start_c, start_c + Xc.shape[0])
    work = Xa.shape[0] * Xc.shape[0] * Xc.shape[1]
    kernel = pick(KERNELS[name], work, _COST[name], threads=threads)
    return kernel(Xa, ia, Xc, yc, ic, *params)


def _tiles(g: Graph, name, i, params):
    """Tile tasks of anchor block ``i`` against every candidate block."""
    xa, _, sa = g.anchor(i)
    return [g.tile("tile", _tile, name, g.local, xa, sa, *g.block(j), *params)
            for j in range(len(g.candidates))]


def _sum(parts):
    return merge.add(parts)


# ---------------------------------------------------------------------------
# Soft and hard neighbours (ordered grid)
# ---------------------------------------------------------------------------


def _agg_task(agg, partial, ya, weight, agg_args):
    m, s, v = partial
    return agg(m, s, v, ya, weight, *agg_args)


def lse_statistic(rows: Rows, w, sigma, agg, agg_args=(), anchor_weight=None, anchors=None,
                  kinds=None):
    """``sum_I agg(merge_J lse_tile(I, J), y_I, weight_I, *agg_args)``.

    ``agg(m, s, v, ya, weight, *agg_args)`` returns a small array (the anchor
    block's share); ``anchor_weight`` defaults to ``1 / N`` per anchor
    (``1 / m`` for a sample).  ``anchors``: an :class:`~execution.Anchors`
    sample scoring against all rows instead of every row.  ``kinds``: the
    :class:`FeatureKinds` of the rows; discrete features or missing values
    run the general kernel (:data:`lse.GENERAL_TWINS`, whose ``v`` has ``2 A``
    entries per class with missing values).
    """
    a, k = rows.n_features, rows.n_classes
    n = rows.n_samples if anchors is None else anchors.n_samples
    w = np.asarray(w, dtype=np.float64)
    weight = np.full(n, 1.0 / n) if anchor_weight is None else np.asarray(anchor_weight, float)
    name, params, width = "lse", (w, sigma, k), a
    if kinds is not None and kinds.kind != distance.PLAIN:
        name, params = "lse-general", (w, sigma, k, kinds.discrete, kinds.kind)
        width = 2 * a if kinds.kind == distance.MISSING else a
    g = Graph(rows, name, anchors=_anchors(rows, k * (width + 2), anchors), sample=anchors)
    shares = []
    for i, (start, stop) in enumerate(g.anchors):
        merged = g.tree(_tiles(g, name, i, params), merge.lse_combine)
        shares.append(g.add("agg", _agg_task, agg, merged, g.anchor(i)[1], weight[start:stop],
                            agg_args))
    return g.compute(g.tree(shares, _sum, "total"))


def _knn_agg_task(agg, partial, ya, first, agg_args):
    if first is None:
        return agg(*partial, ya, *agg_args)
    # The anchors' global row indices: a sample's own, or a block's from its start.
    ia = np.asarray(first) if np.ndim(first) else np.arange(first, first + len(ya))
    return agg(*partial, ya, ia, *agg_args)


def knn_statistic(rows: Rows, n_neighbors: int, agg, agg_args=(), anchors=None, kinds=None,
                  combine=merge.add, finish=None, anchor_index=False):
    """``combine_I agg(topk_J knn_tile(I, J), y_I, *agg_args)`` (hard neighbours).

    ``anchors``: an :class:`~execution.Anchors` sample instead of every row.
    ``kinds``: the :class:`FeatureKinds` of the rows; discrete features or
    missing values run the general kernel (:data:`knn.GENERAL_TWINS`), whose
    ``z`` are the scored differences (NaN where a value is missing).
    ``combine``: how the anchor blocks' shares merge (a sum by default);
    ``finish``: a last step on the merged value, where it was merged (a
    worker), so that only its result comes back.  ``anchor_index``: ``agg``
    also gets the anchors' global row indices (after ``y_I``).
    """
    a, k = rows.n_features, rows.n_classes
    name, params = "knn", (k, n_neighbors)
    if kinds is not None and kinds.kind != distance.PLAIN:
        name, params = "knn-general", (k, n_neighbors, *kinds.params)
    g = Graph(rows, name, anchors=_anchors(rows, k * n_neighbors * (a + 2), anchors), sample=anchors)
    shares = []
    for i in range(len(g.anchors)):
        merged = g.tree(_tiles(g, name, i, params), merge.knn_combine)
        _, codes, first = g.anchor(i)
        shares.append(g.add("agg", _knn_agg_task, agg, merged, codes,
                            first if anchor_index else None, agg_args))
    total = g.tree(shares, combine, "total")
    return g.compute(total if finish is None else g.add("finish", finish, total))


def _target_agg_task(agg, partial, ia, y, per_anchor, agg_args):
    return agg(*partial, ia, y, *per_anchor, *agg_args)


def knn_target_statistic(rows: Rows, y, n_neighbors: int, agg, agg_args=(), per_anchor=(),
                         anchors=None, combine=merge.add, kinds=None):
    """``combine_I agg(topk_J knn_tile(I, J), rows_I, y, per_anchor_I, *agg_args)``: hard
    neighbours for a regression target.

    Every candidate is in one class (``rows.n_classes == 1``): the tiles give
    each anchor its ``n_neighbors`` nearest rows in (distance, row index)
    order.  ``agg`` gets the anchors' row indices, the whole target ``y``
    (held once in the graph: a neighbour's target is ``y[idx]``) and its
    slice of each ``per_anchor`` array (one value per anchor, in the order of
    the anchors).  ``kinds``: as :func:`knn_statistic`.
    """
    index = None if anchors is None else anchors.index
    name, params = "knn", (1, n_neighbors)
    if kinds is not None and kinds.kind != distance.PLAIN:
        name, params = "knn-general", (1, n_neighbors, *kinds.params)
    g = Graph(rows, "knn-target", anchors=_anchors(rows, n_neighbors * (rows.n_features + 2), anchors),
              sample=anchors)
    target = _hold_target(g, y)
    shares = []
    for i, (start, stop) in enumerate(g.anchors):
        merged = g.tree(_tiles(g, name, i, params), merge.knn_combine)
        ia = np.arange(start, stop) if anchors is None else anchors.index[start:stop]
        shares.append(g.add("agg", _target_agg_task, agg, merged, ia, target,
                            tuple(p[start:stop] for p in per_anchor), agg_args))
    return g.compute(g.tree(shares, combine, "total"))


def _picked(X, start, local):
    return np.asarray(X[local], dtype=np.float64), local + start


def _stack_picked(parts):
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _picked_parts(g: Graph, index):
    parts = []
    for b, (start, stop) in enumerate(g.candidates):
        local = index[(index >= start) & (index < stop)] - start
        if local.size:
            parts.append(g.add("take", _picked, g.block(b)[0], start, local))
    return g.add("concat", _stack_picked, parts)


def rows_at(rows: Rows, index) -> Anchors:
    """The rows ``index`` (sorted global indices) as :class:`~execution.Anchors`
    of one class: only those rows travel to the driver."""
    index = np.asarray(index, dtype=np.int64)
    if not rows.on_dask:
        return Anchors(np.ascontiguousarray(rows.X[index]), np.zeros(index.size, np.int64), index)
    g = Graph(rows, "rows-at")
    X, picked = g.compute(_picked_parts(g, index))
    return Anchors(X, np.zeros(picked.size, np.int64), picked)


def _apply_to_picked(picked, fn, args):
    return fn(picked[0], *args)


def summary_of_rows_at(rows: Rows, index, fn, *args):
    """``fn(X[index], *args)`` (``index`` sorted global row indices), computed
    where the rows are: only its result comes to the driver."""
    index = np.asarray(index, dtype=np.int64)
    if not rows.on_dask:
        return fn(np.asarray(rows.X[index], dtype=np.float64), *args)
    g = Graph(rows, "summary-of-rows-at")
    return g.compute(g.add("summary", _apply_to_picked, _picked_parts(g, index), fn, args))


# ---------------------------------------------------------------------------
# New anchors from the driver (predictions, leave-one-out)
# ---------------------------------------------------------------------------


def _concat_partials(parts):
    return tuple(np.concatenate(items) for items in zip(*parts))


def _new_tile(name, threads, Xa, ia, Xc, yc, start_c, params):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    work = Xa.shape[0] * Xc.shape[0] * Xc.shape[1]
    kernel = pick(KERNELS[name], work, _COST[name], threads=threads)
    if name == "qlse" and not threads:
        with blas_single_thread():
            return kernel(Xa, ia, Xc, yc, ic, *params)
    return kernel(Xa, ia, Xc, yc, ic, *params)


def anchor_partials(rows: Rows, kernel, Xa, ia, params, block=1024):
    """Per-anchor softmax partials of new anchors ``Xa`` against all training rows.

    ``ia`` are the anchors' global indices (a training row excludes itself;
    new points get negative indices).  Returns the merged partial of
    ``kernel`` ("lse" or "qlse") for every anchor -- small (anchors x classes
    [x features]) -- used for predictions and leave-one-out predictions.
    """
    Xa = np.ascontiguousarray(Xa, dtype=np.float64)
    ia = np.asarray(ia, dtype=np.int64)
    g = Graph(rows, f"{kernel}-new")
    merged = []
    for start in range(0, Xa.shape[0], block):
        stop = min(start + block, Xa.shape[0])
        keys = [g.tile("tile", _new_tile, kernel, g.local, Xa[start:stop], ia[start:stop],
                       *g.block(j), params) for j in range(len(g.candidates))]
        merged.append(g.tree(keys, merge.lse_combine))
    key = g.add("concat", _concat_partials, merged)
    if g.local and kernel == "qlse":
        with blas_single_thread():
            return g.compute(key)
    return g.compute(key)


def _reduce_task(reduce, partial):
    return reduce(*partial)


def row_partials(rows: Rows, kernel, params, reduce):
    """``concat_I reduce(merge_J tile(I, J))``: every training row as an anchor, left out
    of its own candidates (leave-one-out), reduced where its block is.

    ``reduce(m, s, v)`` turns an anchor block's merged partial into one small
    value per anchor (e.g. the predicted class); only those come back, never
    the rows.
    """
    a, k = rows.n_features, rows.n_classes
    g = Graph(rows, f"{kernel}-rows", anchors=_anchors(rows, k * (a + 2)))
    blocks = []
    for i in range(len(g.anchors)):
        merged = g.tree(_tiles(g, kernel, i, params), merge.lse_combine)
        blocks.append(g.add("reduce", _reduce_task, reduce, merged))
    key = g.add("concat", np.concatenate, blocks)
    if g.local and kernel == "qlse":
        with blas_single_thread():
            return g.compute(key)
    return g.compute(key)


# ---------------------------------------------------------------------------
# IMMIGRATE's quadratic statistic (symmetric grid, two passes)
# ---------------------------------------------------------------------------


def _qlse_pair(limit_blas, Xp, yp, start_p, Xq, yq, start_q, U, lam, sigma, n_classes, store):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    if limit_blas:
        with blas_single_thread():
            return quad.qlse_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, n_classes, mode, store)
    return quad.qlse_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, n_classes, mode, store)


def _sigma_pair(limit_blas, Xp, yp, start_p, Xq, yq, start_q, U, lam, sigma, coef_p, coef_q,
                store):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    args = (Xp, ip, yp, Xq, iq, yq, U, lam, sigma, coef_p[0], coef_p[1], coef_q[0], coef_q[1],
            mode, store)
    if limit_blas:
        with blas_single_thread():
            return quad.sigma_pairs(*args)
    return quad.sigma_pairs(*args)


def _side(partials, side):
    """The ``(m, s, u)`` of the first (0) or second (1) row set of a pair."""
    return partials[3 * side: 3 * side + 3]


def _quad_coef_task(coef, partial, ya, weight, sigma):
    m, s, u = partial
    return coef(m, s, u, ya, weight, sigma)


def _entropy_of(coef):
    return coef[2]


def _pair_of(a, b):
    return a, b


def _qlse_ordered(Xa, ya, ia, Xc, yc, start_c, U, lam, sigma, n_classes):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    return quad.qlse_pairs(Xa, ia, ya, Xc, ic, yc, U, lam, sigma, n_classes, ORDERED,
                           np.empty(0))[:3]


def _sigma_ordered(Xa, ya, ia, Xc, yc, start_c, U, lam, sigma, coef):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    log_z, c = coef[0], coef[1]
    # The candidates carry no coefficient in the ORDERED mode: empty stand-ins.
    return quad.sigma_pairs(Xa, ia, ya, Xc, ic, yc, U, lam, sigma, log_z, c, log_z[:0], c[:0],
                            ORDERED, np.empty(0))


def _quad_sampled(rows: Rows, U, lam, sigma, weight, coef, anchors):
    """:func:`quad_statistic` for a sample of anchors: ordered tiles (sample x all rows)."""
    n, a, k = rows.n_samples, rows.n_features, rows.n_classes
    threads, blocks = 1, None
    if not rows.on_dask:
        if use_threads(anchors.n_samples * n * a * (a + U.shape[1]), _COST["qlse"]):
            threads = n_threads()
            blocks = split_bounds(n, 4 * threads)
    g = Graph(rows, "quad-anchors", anchors=_anchors(rows, k * (a + 3), anchors), sample=anchors, candidates=blocks)
    limit = not g.local
    parts, coefs = [], []
    for i, (start, stop) in enumerate(g.anchors):
        xa, ya, ia = g.anchor(i)
        tiles = [g.tile("qlse", _in_blas_limit, limit, _qlse_ordered, xa, ya, ia, *g.block(j),
                        U, lam, sigma, k) for j in range(len(g.candidates))]
        merged = g.tree(tiles, merge.lse_combine)
        coefs.append(g.add("coef", _quad_coef_task, coef, merged, ya, weight[start:stop], sigma))
        parts += [g.tile("sigma", _in_blas_limit, limit, _sigma_ordered, xa, ya, ia, *g.block(j),
                         U, lam, sigma, coefs[-1]) for j in range(len(g.candidates))]
    return _sigma_and_entropy(g, parts, coefs, threads)


def _sigma_and_entropy(g: Graph, parts, coefs, threads):
    """Sum the Sigma parts and the anchor blocks' entropies; in-process under one BLAS limit."""
    entropy = g.tree([g.add("entropy", _entropy_of, c) for c in coefs], _sum, "entropy")
    key = g.add("total", _pair_of, g.tree(parts, _sum, "sum"), entropy)
    if g.local:
        with blas_single_thread():
            return g.compute(key, threads=threads)
    return g.compute(key)


def _in_blas_limit(limit, fn, *args):
    if limit:
        with blas_single_thread():
            return fn(*args)
    return fn(*args)


def quad_statistic(rows: Rows, U, lam, sigma, anchor_weight, coef, anchors=None):
    """IMMIGRATE's E-step, two passes over unordered pairs: ``(Sigma, entropy)``.

    ``z`` and ``q`` are symmetric in the pair, so the row blocks are visited as
    pairs ``I <= J`` (``WITHIN`` on the diagonal, ``CROSS``
    off it), each pair's distances serving the anchors on both sides -- half
    the work of ordered tiles.  Pass 1 merges the per-anchor softmax partials
    ``(m, s, u)`` of :func:`quad.qlse_pairs` over the pairs an anchor block
    belongs to; ``coef(m, s, u, ya, weight, sigma) -> (log_z, coef,
    entropy)`` turns them into pair coefficients; pass 2 sums ``coef * z
    z^T`` over all pairs with :func:`quad.sigma_pairs`.  The A x A matrix is
    never carried per anchor.

    In-process the kernels cannot thread inside (BLAS does the work): one
    block, unless the work pays for threads (:func:`_numba.use_threads`);
    then blocks whose pairs run on threads.  When every pair's distances fit
    :data:`TILE_BUDGET`, pass 1 stores them and pass 2 reads them back
    instead of recomputing ``Z U``.

    ``anchors``: an :class:`~execution.Anchors` sample scoring against all
    rows (ordered tiles: a pair serves its anchor only); ``anchor_weight``
    then holds one weight per sampled anchor.
    """
    U = np.ascontiguousarray(U, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    weight = np.asarray(anchor_weight, dtype=np.float64)
    if anchors is not None:
        return _quad_sampled(rows, U, lam, sigma, weight, coef, anchors)
    n, a, k = rows.n_samples, rows.n_features, rows.n_classes
    threads, blocks = 1, None
    if not rows.on_dask:
        if use_threads(n * n * a * (a + U.shape[1]), _COST["qlse"]):
            threads = n_threads()
        n_blocks = 1 if threads == 1 else min(4 * threads, max(1, n // quad.SEG))
        blocks = split_bounds(n, n_blocks)
    g = Graph(rows, "quad", candidates=blocks)
    bounds = g.candidates
    pairs = g.symmetric()
    size = [quad.n_pairs(bounds[i][1] - bounds[i][0], bounds[j][1] - bounds[j][0],
                         WITHIN if i == j else CROSS) for i, j in pairs]
    keep_q = g.local and 8 * sum(size) <= TILE_BUDGET
    stores = {p: np.empty(s if keep_q else 0) for p, s in zip(pairs, size)}
    limit = not g.local  # in-process, the whole computation runs under one limit
    tile = {(i, j): g.tile("qlse", _qlse_pair, limit, *g.block(i), *g.block(j), U, lam, sigma,
                           k, stores[i, j]) for i, j in pairs}
    coefs = []
    for i, (start, stop) in enumerate(bounds):
        sides = [g.add("side", _side, tile[min(i, j), max(i, j)], int(j < i))
                 for j in range(len(bounds))]
        merged = g.tree(sides, merge.lse_combine)
        coefs.append(g.add("coef", _quad_coef_task, coef, merged, g.block(i)[1],
                           weight[start:stop], sigma))
    parts = [g.tile("sigma", _sigma_pair, limit, *g.block(i), *g.block(j), U, lam, sigma,
                    coefs[i], coefs[j], stores[i, j]) for i, j in pairs]
    return _sigma_and_entropy(g, parts, coefs, threads)


# ---------------------------------------------------------------------------
# LDM-RFE's left-out kernel sums (symmetric grid)
# ---------------------------------------------------------------------------


def _rbf_pair(threads, Xp, Cp, Xq, Cq, cols, gamma, same):
    Zp = rbf.scaled_columns(Xp, cols, gamma)
    with blas_single_thread():  # the sub-tiles' GEMMs run inside the kernel
        if threads:  # in-process: all rows, anchor chunks on threads
            n = Zp.shape[0]
            kernel = pick(rbf.TWINS, n * n * (len(cols) + 1) / 2, rbf.COST)
            chunks = 1 if kernel is rbf.TWINS[0] else max(2, min(64, n // 64))
            return kernel(Zp, Cp, chunks, rbf.squarings(Zp))
        Zq = rbf.scaled_columns(Xq, cols, gamma)
        return rbf.rbf_block_pair(Zp, Cp, Zq, Cq, same, rbf.squarings(Zp, Zq))


def rbf_left_out_sums(rows: Rows, coef, cols, gamma):
    """``[alpha^T K(-j) alpha for j in cols] + [alpha^T K alpha]``, summed over machines.

    Parameters
    ----------
    rows : Rows
        The training rows (all features), numpy or persisted dask blocks.
    coef : ndarray of shape (n_samples, n_machines)
        Each binary machine's kernel coefficients (labels absorbed), zero
        on rows a machine did not train on.
    cols : ndarray of int
        The surviving features; the kernel is over these columns only.
    gamma : float
        RBF width, ``k(u, v) = exp(-gamma ||u - v||^2)``.

    Returns
    -------
    sums : ndarray of shape (len(cols) + 1,)
    """
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.int64)
    gamma = float(gamma)
    g = Graph(rows, "kernel-sums")
    bounds = g.candidates
    parts = []
    for i, j in g.symmetric():
        (si, ti), (sj, tj) = bounds[i], bounds[j]
        parts.append(g.tile("pair", _rbf_pair, g.local, g.block(i)[0], coef[si:ti],
                            g.block(j)[0], coef[sj:tj], cols, gamma, i == j))
    return g.compute(g.tree(parts, _sum, "total"))


# ---------------------------------------------------------------------------
# Boosting rounds: weighted histograms, one task per row block
# ---------------------------------------------------------------------------


def _update_task(w, bins, y, stumps, class_weight):
    """The block's weights after ``stumps``, in order (from the class weights the first round)."""
    if w is None:
        w = class_weight[y]
    for stump in stumps:
        w = hist.update_weights(w, bins, y, stump)
    return w


def _hist_task(threads, bins, y, w, features, n_bins):
    kernel = pick(hist.TWINS, bins.shape[0] * features.size, hist.COST, threads=threads)
    return kernel(bins, y, w, features, n_bins)


class WeightedHistograms:
    """Per-round weighted class histograms over :class:`~dmargin.engine.binning.BinnedRows`.

    The initial weight of a sample is ``class_weight[y]``.

    ``histogram(features, stump)`` first applies the previous round's
    ``stump = (feature, split, polarity, alpha, Z)`` to the weights where they
    live (one task per row block; ``Z`` is known on the driver from the
    previous histogram), then returns the ``(len(features), max bins, 2)``
    sums.  No N-vector passes through the driver, the graph has the same
    size every round, and the new weights stay with the row blocks.

    ``replay``: stumps of earlier rounds that the first ``histogram`` applies,
    in order, before its own ``stump`` (a committee resumed: the same
    multiplications as round by round, so the same weights).
    """

    def __init__(self, binned, class_weight, replay=()):
        self.binned = binned
        self.n_bins = int(binned.n_bins.max())
        self.class_weight = np.asarray(class_weight, dtype=np.float64)
        self.w = None
        self._replay = tuple(replay)

    def histogram(self, features, stump=None):
        rows = self.binned.rows
        features = np.ascontiguousarray(features, dtype=np.int64)
        stumps = (*self._replay, *(() if stump is None else (stump,)))
        self._replay = ()
        g = Graph(rows, "hist")
        w_keys, parts = [], []
        for i in range(len(g.candidates)):
            bins, y, _ = g.block(i)
            w_i = self.w if g.local else None if self.w is None else (self.w.name, i)
            w_keys.append(g.add("weights", _update_task, w_i, bins, y, stumps, self.class_weight))
            parts.append(g.tile("block", _hist_task, g.local, bins, y, w_keys[-1], features,
                                self.n_bins))
        chunks = (tuple(e - s for s, e in g.candidates),)
        extra = [] if g.local or self.w is None else [self.w]
        out, self.w = g.compute(g.tree(parts, _sum, "sum"), keep=(w_keys, chunks, np.float64),
                                collections=extra)
        return np.asarray(out)

    def weights(self):
        """The current weights as numpy (for tests; gathers N floats)."""
        from .._compat import gather

        return np.asarray(gather(self.w, what="the boosting weights"))


def counts(binned, features=None):
    """Unweighted class counts per bin (one pass), ``(A, max bins, 2)``."""
    features = np.arange(binned.n_features) if features is None else features
    return WeightedHistograms(binned, np.ones(2)).histogram(features)


def block_reduce(X, fn, combine, what):
    """``combine([fn(block) for block in row blocks of X])`` as a tree, for numpy or dask ``X``.

    (Used for column summaries such as the distinct values of the binning.)
    """
    from .execution import row_blocks

    rows = row_blocks(X)
    g = Graph(rows, what)
    keys = [g.add("block", fn, g.block(i)[0]) for i in range(len(g.candidates))]
    return g.compute(g.tree(keys, combine))


# ---------------------------------------------------------------------------
# New rows against the training rows where they live (IMMIGRATE's rule)
# ---------------------------------------------------------------------------


def _new_rows_tile(name, Xa, Xc, yc, start_c, params):
    # New points get negative indices: never a training row's own.
    return _new_tile(name, False, Xa, -1 - np.arange(Xa.shape[0]), Xc, yc, start_c, params)


def _softmin_task(partial, weights):
    m, s, v = partial
    num = v if weights is None else v @ weights
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, num / np.where(s > 0, s, 1.0), np.inf)


def new_rows_softmin(rows: Rows, kernel, params, X_new, prepare, weights=None):
    """Expected distance of every new row to each class, computed where both live.

    ``X_new`` is a dask array of new rows (one column block; lazy);
    ``prepare(block) -> float64 rows`` (checks and scaling) runs on each of
    its blocks, whose tiles against every training block merge as in
    :func:`anchor_partials`; each new block is reduced to its ``(rows,
    classes)`` expected distances ``sum_k a_k dist_k`` (``v`` of the partial,
    times ``weights`` when given, over ``s``; ``inf`` for a class with no
    candidate).  Only those come back: neither the new rows nor the
    training rows reach the driver.  In-process training rows are placed
    on the scheduler first (the same rows, as row blocks).
    """
    from .execution import prepare_rows

    if not rows.on_dask:
        rows = prepare_rows(rows.X, rows.codes, rows.n_classes, use_dask=True,
                            what="Predictions against")
    g = Graph(rows, f"{kernel}-predict")
    parts = []
    for i in range(X_new.numblocks[0]):
        xa = g.add("new", prepare, (X_new.name, i, 0))
        tiles = [g.tile("tile", _new_rows_tile, kernel, xa, *g.block(j), params)
                 for j in range(len(g.candidates))]
        parts.append(g.add("softmin", _softmin_task, g.tree(tiles, merge.lse_combine), weights))
    return g.compute(g.add("concat", np.concatenate, parts), collections=[X_new])


# ---------------------------------------------------------------------------
# Linear machines in the primal: sums over row blocks (LDM, squared-hinge SVM)
# ---------------------------------------------------------------------------


def machine_rows(X, codes, cols, pair, intercept=0.0):
    """``z_i = y_i [x_i[cols], intercept]`` for the rows of one binary machine.

    ``pair = (a, b)``: rows of class code ``b`` are +1, of ``a`` -1, others
    left out; ``intercept`` > 0 appends that constant column (LinearSVC's
    ``intercept_scaling``).
    """
    a, b = pair
    sel = (codes == a) | (codes == b)
    y = np.where(codes[sel] == b, 1.0, -1.0)
    Z = X[np.ix_(sel, cols)] if sel.size else np.empty((0, len(cols)))
    if intercept:
        Z = np.column_stack([Z, np.full(Z.shape[0], float(intercept))])
    return Z * y[:, None]


def _add_tuples(parts):
    return tuple(merge.add(list(items)) for items in zip(*parts))


def _gram_block(X, codes, cols, pairs, intercept):
    out = []
    for pair in pairs:
        Z = machine_rows(X, codes, cols, pair, intercept)
        out.append((float(Z.shape[0]), Z.sum(axis=0), Z.T @ Z))
    return tuple(np.array(items) for items in zip(*out))


def _linear_blocks(rows: Rows):
    """Row blocks of a linear pass: the dask blocks, or in-process slices of
    at most :data:`LINEAR_BLOCK_ROWS` rows (BLAS on each, threads across)."""
    if rows.on_dask:
        return None
    return split_bounds(rows.n_samples, max(1, -(-rows.n_samples // LINEAR_BLOCK_ROWS)))


#: In-process rows per task of the linear passes.
LINEAR_BLOCK_ROWS = 65536


def _run_blocks(g: Graph, task, *args):
    parts = [g.tile("block", task, *g.block(i)[:2], *args) for i in range(len(g.candidates))]
    key = g.tree(parts, _add_tuples, "sum")
    if g.local:
        with blas_single_thread():
            return g.compute(key, threads=n_threads() if len(parts) > 1 else 1)
    return g.compute(key)


def linear_gram(rows: Rows, cols, pairs, intercept=0.0):
    """Per machine ``(m_p, sum_i z_i, Z^T Z)`` over its rows (``z_i`` of :func:`machine_rows`).

    One pass; arrays of shape ``(P,)``, ``(P, d)`` and ``(P, d, d)`` with
    ``d = len(cols)`` (+1 with an intercept column).
    """
    cols = np.asarray(cols, dtype=np.int64)
    pairs = [tuple(int(c) for c in p) for p in pairs]
    g = Graph(rows, "linear-gram", candidates=_linear_blocks(rows))
    return _run_blocks(g, _gram_block, cols, pairs, intercept)


def _margins(X, codes, cols, pair, w, intercept):
    """``(y, rows, u)`` of one machine: labels, its rows (a mask, or None for
    all) and ``u = [x_cols, intercept] . w``, without copying the block."""
    a, b = pair
    sel = (codes == a) | (codes == b)
    rows = None if sel.all() else sel
    Xs = X if rows is None else X[rows]
    full = np.zeros(X.shape[1])
    full[cols] = w[:len(cols)]
    u = Xs @ full
    if intercept:
        u += intercept * w[-1]
    return np.where(codes[sel] == b, 1.0, -1.0), rows, u


def _loss_block(X, codes, cols, pair, intercept, w, loss, mu, hessian):
    y, rows, u = _margins(X, codes, cols, pair, w, intercept)
    t = 1.0 - y * u
    if loss == "squared_hinge":
        a = np.maximum(t, 0.0)
        f, d, active, h = float(a @ a), 2.0 * a, t > 0, 2.0
    else:  # the hinge, smoothed to a Huber loss below mu (exact hinge at and above it)
        f = float(np.sum(np.where(t >= mu, t - mu / 2, np.where(t > 0, t * t / (2 * mu), 0.0))))
        d = np.clip(t / mu, 0.0, 1.0)
        active, h = (t > 0) & (t < mu), 1.0 / mu
    Xs = X if rows is None else X[rows]
    yd = y * d
    g = -(Xs.T @ yd)[cols]
    if intercept:
        g = np.append(g, -intercept * yd.sum())
    if not hessian:
        return f, g
    Za = machine_rows(Xs[active], codes[rows][active] if rows is not None else codes[active],
                      cols, pair, intercept)
    return f, g, h * (Za.T @ Za)


def linear_loss(rows: Rows, cols, pair, w, *, loss, mu=1.0, intercept=0.0, hessian=False):
    """``sum_i l(1 - z_i . w)`` of one machine, its gradient and (generalised) Hessian.

    ``loss="squared_hinge"``: ``l(t) = max(0, t)^2``; ``"huber"``: the hinge
    ``max(0, t)`` smoothed below ``mu`` (``t^2 / (2 mu)`` on ``(0, mu)``,
    ``t - mu / 2`` above).  One pass over the row blocks where they live;
    returns ``(f, grad)`` or ``(f, grad, H)`` -- a scalar, a d-vector and a
    d x d matrix, whatever the number of rows.
    """
    cols = np.asarray(cols, dtype=np.int64)
    w = np.asarray(w, dtype=np.float64)
    pair = tuple(int(c) for c in pair)
    g = Graph(rows, "linear-loss", candidates=_linear_blocks(rows))
    return _run_blocks(g, _loss_block, cols, pair, intercept, w, loss, mu, hessian)


def _band_block(X, codes, cols, pair, w, low, high, cap, intercept):
    y, rows, u = _margins(X, codes, cols, pair, w, intercept)
    t = 1.0 - y * u
    upper = t >= high
    band = (t > low) & ~upper
    n_band = int(band.sum())
    Xs = X if rows is None else X[rows]
    up = (Xs[upper].T @ y[upper])[cols]
    if intercept:
        up = np.append(up, intercept * y[upper].sum())
    if n_band > cap:
        return up, np.empty((0, up.size)), np.array([n_band])
    Zb = machine_rows(Xs[band], np.where(y[band] > 0, pair[1], pair[0]), cols, pair, intercept)
    return up, Zb, np.array([n_band])


def _band_combine(parts):
    return (merge.add([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            merge.add([p[2] for p in parts]))


def _violations_block(X, codes, cols, pair, w_old, w_new, low, high, tol, intercept):
    y, _, u_old = _margins(X, codes, cols, pair, w_old, intercept)
    _, _, u_new = _margins(X, codes, cols, pair, w_new, intercept)
    t_old, t_new = 1.0 - y * u_old, 1.0 - y * u_new
    # Rows held at the bound C need margin <= 1, rows at 0 margin >= 1 (to tol).
    return (np.array([np.sum((t_old >= high) & (t_new < -tol))
                      + np.sum((t_old <= low) & (t_new > tol))]),)


def hinge_band(rows: Rows, cols, pair, w, low, high, cap, intercept=0.0):
    """For the exact hinge solution: rows by ``t = 1 - z . w`` of one machine.

    Returns ``(sum of z over t >= high, the rows z with low < t < high, their
    count)``; the band rows come back only when the whole band holds at most
    ``cap`` rows in every block (else an empty array and the count): a
    few rows, never the data.  ``z`` as :func:`machine_rows` (with the
    ``intercept`` column when it is not 0).
    """
    cols = np.asarray(cols, dtype=np.int64)
    pair = tuple(int(c) for c in pair)
    w = np.asarray(w, dtype=np.float64)
    g = Graph(rows, "hinge-band", candidates=_linear_blocks(rows))
    parts = [g.tile("block", _band_block, *g.block(i)[:2], cols, pair, w, low, high, cap,
                    intercept)
             for i in range(len(g.candidates))]
    return g.compute(g.tree(parts, _band_combine, "sum"))


def hinge_violations(rows: Rows, cols, pair, w_old, w_new, low, high, tol, intercept=0.0):
    """Rows whose bound (by ``w_old``'s band) ``w_new`` violates by more than ``tol``."""
    cols = np.asarray(cols, dtype=np.int64)
    pair = tuple(int(c) for c in pair)
    g = Graph(rows, "hinge-kkt", candidates=_linear_blocks(rows))
    return int(_run_blocks(g, _violations_block, cols, pair, np.asarray(w_old, float),
                           np.asarray(w_new, float), low, high, tol, intercept)[0][0])


__all__ = ["KERNELS", "WeightedHistograms", "anchor_partials", "block_reduce", "counts",
           "hinge_band", "hinge_violations", "knn_statistic", "linear_gram", "linear_loss",
           "lse_statistic", "machine_rows", "new_rows_softmin", "quad_statistic",
           "rbf_left_out_sums", "row_partials"]


# ---------------------------------------------------------------------------
# SURF family: distance moments, then neighbours within thresholds
# ---------------------------------------------------------------------------


def _surf_pair_moments(Xp, start_p, Xq, start_q, dm, dw, kind):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    return surf.moments_pairs(Xp, ip, Xq, iq, dm, dw, kind, mode)


#: The kernels' stand-in for "no target" (class labels): never read.
_NO_TARGET = np.empty(0)


def _target_at(target, index):
    """The rows' targets (``target`` is held once in the graph), or the stand-in."""
    return _NO_TARGET if target is None else np.ascontiguousarray(target[index])


def _surf_pair_score(Xp, yp, start_p, Xq, yq, start_q, n_classes, n_sets, dm, dw, ramp, kind,
                     thr_p, thr_q, target, bound, squares):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    return surf.score_pairs(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, dm, dw, ramp, kind,
                            thr_p[0], thr_p[1], thr_q[0], thr_q[1], mode,
                            _target_at(target, ip), _target_at(target, iq), bound, squares)


def _surf_pair_graph(Xp, yp, start_p, Xq, yq, start_q, dm, dw, kind, fp, fq):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    return surf.graph_pairs(Xp, ip, yp, Xq, iq, yq, dm, dw, kind, mode, fp, fq)


def _surf_graph_tile(threads, Xa, ya, ia, Xc, yc, start_c, dm, dw, kind, fa, fc):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    kernel = pick(surf.GRAPH_TWINS, Xa.shape[0] * Xc.shape[0] * Xc.shape[1], threads=threads)
    parts = n_threads() if kernel is surf.GRAPH_TWINS[1] else 1
    return kernel(Xa, ia, ya, Xc, ic, yc, dm, dw, kind, fa, fc, parts)


def _candidate_finders(start, stop, anchor_index, anchor_finders):
    """Finder entries of the rows ``[start, stop)``: the anchors' own, nothing elsewhere."""
    out = merge.outside_finders(stop - start)
    inside = (anchor_index >= start) & (anchor_index < stop)
    out[anchor_index[inside] - start] = np.concatenate(anchor_finders)[inside]
    return out


def _with_anchor_sides(G, start, anchor_index, anchor_parts):
    """A candidate block's pass-3 partials plus those its anchors got as anchors."""
    G = G.copy()
    inside = (anchor_index >= start) & (anchor_index < start + G.shape[0])
    G[anchor_index[inside] - start] += np.concatenate(anchor_parts)[inside]
    return G


def _picked_graph_rows(X, codes, finders, G, local):
    return (np.asarray(X[local], dtype=np.float64), np.asarray(codes)[local], finders[local],
            G[local, 0])


def _sample_graph_task(parts, v, dm, dw, kind):
    X, y, finders, C = (np.concatenate(items) for items in zip(*parts))
    D = surf.distance_matrix(X, X, dm, dw, kind)
    return merge.sample_graph_sums(D, y, finders, C, v)


def _stir_graph(g: Graph, G, finders, sample, dm, dw, kind):
    """Keys of the graph's exact sums (:func:`merge.graph_row_sums`, from every
    candidate block's pass-3 partials ``G``) and of the sample's
    (:func:`merge.sample_graph_sums`; ``sample``: sorted row indices and
    their weights)."""
    index, v = sample
    exact = g.tree([g.add("graph-sums", merge.graph_row_sums, Gb) for Gb in G], merge.add,
                   "graph-total")
    parts = []
    for b, (start, stop) in enumerate(g.candidates):
        local = index[(index >= start) & (index < stop)] - start
        if local.size:
            X, codes, _ = g.block(b)
            parts.append(g.add("graph-take", _picked_graph_rows, X, codes, finders[b], G[b],
                               local))
    sampled = g.add("graph-sample", _sample_graph_task, parts, v, dm, dw, kind)
    return exact, sampled


def _surf_moments_tile(threads, Xa, ia, Xc, start_c, dm, dw, kind):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    kernel = pick(surf.MOMENTS_TWINS, Xa.shape[0] * Xc.shape[0] * Xc.shape[1], threads=threads)
    return kernel(Xa, ia, Xc, ic, dm, dw, kind)


def _surf_score_tile(threads, Xa, ia, Xc, yc, start_c, n_classes, n_sets, dm, dw, ramp, kind,
                     thr, target, bound, squares):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    kernel = pick(surf.SCORE_TWINS, Xa.shape[0] * Xc.shape[0] * Xc.shape[1], threads=threads)
    return kernel(Xa, ia, Xc, yc, ic, n_classes, n_sets, dm, dw, ramp, kind, thr[0], thr[1],
                  _target_at(target, ia), _target_at(target, ic), bound, squares)


def _surf_thresholds_task(thresholds, moments, total, far):
    return thresholds(moments, total, far)


def _surf_agg_task(agg, partial, ya, agg_args):
    return agg(partial, ya, *agg_args)


def _surf_side(pair, side):
    return pair[side]


def surf_statistic(rows: Rows, thresholds, agg, agg_args=(), *, far=False, kinds=None,
                   anchors=None, target=None, bound=0.0, graph_sample=None):
    """``sum_I agg(pass2_I(thresholds(pass1_I, total)), y_I, *agg_args)``, two passes.

    Pass 1 merges each anchor block's distance moments ``(count, sum d, sum
    d^2)`` over the candidate blocks (:func:`surf.moments_pairs`); the
    moments of all anchor blocks add up to ``total`` (one tiny tree);
    ``thresholds(moments, total, far) -> (near, far)`` gives each anchor's
    thresholds (``far=False``: no far set, ``+inf``).  Pass 2 runs over the
    same tiles and merges each anchor's neighbour sums and counts per set
    and class (:func:`surf.score_pairs`); ``agg(P, y, *agg_args)`` turns an
    anchor block's merged partial into its share.  Per-anchor partials are
    ``(anchors, sets, classes, A + 1)``: no N x N array exists.

    Every row as an anchor: a symmetric grid (unordered pairs of row blocks,
    each distance computed once per pass for both of its rows).  ``anchors``
    (an :class:`~execution.Anchors` sample): ordered tiles, sample x all rows.

    ``kinds`` (:class:`FeatureKinds`, default every feature continuous):
    discrete features, their weight in the distances, the ramps of scored
    continuous differences and missing values (:mod:`.kernels.distance`);
    with missing values the partials carry a neighbour count per feature,
    ``(anchors, sets, classes, 2 A)``.

    ``target`` (a continuous target, every row in one class) with ``bound >
    0``: the two classes of the partials are each anchor's hits, ``|y_a -
    y_j| < bound``, and its misses (skrebate's continuous endpoint), and
    ``agg`` gets class 0 as every anchor's own.  The target is held once in
    the graph (8 bytes a row); each tile reads its rows' values.

    ``graph_sample`` (STIR, two classes): ``(index, v)``, sorted row indices
    and their inverse chances of being drawn.  Pass 2 then also sums the
    squared differences, and a third pass over the same tiles sums STIR's
    neighbour graph (:mod:`.kernels.surf`); returns ``(total, exact,
    sampled)``: :func:`merge.graph_row_sums` over every row and
    :func:`merge.sample_graph_sums` of the sample.
    """
    a = rows.n_features
    k = 2 if target is not None else rows.n_classes  # the partials' classes
    n_sets = 2 if far else 1
    if kinds is None:
        kinds = FeatureKinds.continuous(a)
    dm, dw, rp, kind = kinds.params
    squares = graph_sample is not None
    per_row = n_sets * k * (2 * a if kind == distance.MISSING else a + 1) + (k * a if squares
                                                                            else 0)
    common = (thresholds, agg, agg_args, far, dm, dw, rp, kind, n_sets, per_row)
    if target is None:
        bound = 0.0
    elif not bound > 0:
        raise ValueError(f"bound must be positive with a target; got {bound}.")
    if anchors is not None:
        return _surf_sampled(rows, anchors, *common, target, bound, graph_sample)
    n = rows.n_samples
    threads, blocks = 1, None
    if not rows.on_dask:
        if use_threads(n * n * a / 2):
            threads = n_threads()
        cap = max(1, TILE_BUDGET // (8 * per_row))
        blocks = split_bounds(n, max(-(-n // cap), 2 * threads if threads > 1 else 1))
    g = Graph(rows, "surf", candidates=blocks)
    n_blocks, pairs = len(g.candidates), g.symmetric()
    target = _hold_target(g, target)

    def sides(tiles, i):
        # The diagonal pair's kernel folds both of its sides into side 0.
        return [g.add("side", _surf_side, tiles[min(i, j), max(i, j)], int(j < i))
                for j in range(n_blocks)]

    # Pass 1: per-anchor distance moments, then the thresholds.
    moments = {(i, j): g.tile("moments", _surf_pair_moments, g.block(i)[0], g.block(i)[2],
                              g.block(j)[0], g.block(j)[2], dm, dw, kind) for i, j in pairs}
    merged = [g.tree(sides(moments, i), merge.add) for i in range(n_blocks)]
    total = g.tree([g.add("total", merge.surf_moment_total, m) for m in merged], merge.add,
                   "moment-total")
    thr = [g.add("thresholds", _surf_thresholds_task, thresholds, m, total, far) for m in merged]
    # Pass 2: the neighbours within the thresholds, over the same pairs.
    scores = {(i, j): g.tile("score", _surf_pair_score, *g.block(i), *g.block(j),
                             rows.n_classes, n_sets, dm, dw, rp, kind, thr[i], thr[j], target,
                             bound, squares) for i, j in pairs}
    P = [g.tree(sides(scores, i), merge.add) for i in range(n_blocks)]
    shares = [g.add("agg", _surf_agg_task, agg, P[i], g.block(i)[1], agg_args)
              for i in range(n_blocks)]
    result = g.tree(shares, _sum, "total")
    if squares:
        # Pass 3: STIR's graph, from every row's thresholds and counts.
        found = [g.add("finders", merge.surf_finders, P[i], g.block(i)[1], thr[i], a)
                 for i in range(n_blocks)]
        graph = {(i, j): g.tile("graph", _surf_pair_graph, *g.block(i), *g.block(j), dm, dw,
                                kind, found[i], found[j]) for i, j in pairs}
        G = [g.tree(sides(graph, i), merge.add) for i in range(n_blocks)]
        result = g.add("stir", _as_tuple, result,
                       *_stir_graph(g, G, found, graph_sample, dm, dw, kind))
    return g.compute(result, threads=threads)


def _as_tuple(*values):
    return values


def _hold_target(g: Graph, target):
    """``target`` as one key of the graph (``None`` stays ``None``)."""
    if target is None:
        return None
    return g.hold("target", np.ascontiguousarray(target, dtype=np.float64))


def _surf_sampled(rows: Rows, anchors, thresholds, agg, agg_args, far, dm, dw, rp, kind, n_sets,
                  per_row, target, bound, graph_sample):
    """:func:`surf_statistic` for a sample of anchors: ordered tiles (sample x all rows)."""
    k = rows.n_classes
    squares = graph_sample is not None
    g = Graph(rows, "surf-anchors", anchors=_anchors(rows, per_row, anchors), sample=anchors)
    target = _hold_target(g, target)
    n_cand = len(g.candidates)
    merged = []
    for i in range(len(g.anchors)):
        xa, _, ia = g.anchor(i)
        merged.append(g.tree([g.tile("moments", _surf_moments_tile, g.local, xa, ia,
                                     g.block(j)[0], g.block(j)[2], dm, dw, kind)
                              for j in range(n_cand)], merge.add))
    total = g.tree([g.add("total", merge.surf_moment_total, m) for m in merged], merge.add,
                   "moment-total")
    shares, found = [], []
    for i in range(len(g.anchors)):
        xa, ya, ia = g.anchor(i)
        thr = g.add("thresholds", _surf_thresholds_task, thresholds, merged[i], total, far)
        tiles = [g.tile("score", _surf_score_tile, g.local, xa, ia, *g.block(j), k, n_sets, dm, dw,
                        rp, kind, thr, target, bound, squares) for j in range(n_cand)]
        P = g.tree(tiles, merge.add)
        shares.append(g.add("agg", _surf_agg_task, agg, P, ya, agg_args))
        if squares:
            found.append(g.add("finders", merge.surf_finders, P, ya, thr, rows.n_features))
    result = g.tree(shares, _sum, "total")
    if squares:
        # Pass 3: anchors against every row; each row's partials, anchors or not.
        index = np.asarray(anchors.index, dtype=np.int64)
        cand = [g.add("finders-rows", _candidate_finders, start, stop, index, found)
                for start, stop in g.candidates]
        tiles = {(i, j): g.tile("graph", _surf_graph_tile, g.local, *g.anchor(i), *g.block(j),
                                dm, dw, kind, found[i], cand[j])
                 for i in range(len(g.anchors)) for j in range(n_cand)}
        own = [g.tree([g.add("side", _surf_side, tiles[i, j], 0) for j in range(n_cand)],
                      merge.add) for i in range(len(g.anchors))]
        G = [g.add("graph-rows", _with_anchor_sides,
                   g.tree([g.add("side", _surf_side, tiles[i, j], 1)
                           for i in range(len(g.anchors))], merge.add),
                   start, index, own) for j, (start, _) in enumerate(g.candidates)]
        result = g.add("stir", _as_tuple, result,
                       *_stir_graph(g, G, cand, graph_sample, dm, dw, kind))
    return g.compute(result)


#: Bytes of one tile of pass-2 partials on compact rows (anchors x sets x
#: classes x (A + 1) float64), turned into scores before the next tile.
COMPACT_TILE_BYTES = 256 * 2**20


def surf_compact_statistic(X, codes, n_classes, thresholds, agg, agg_args=(), *, far=False,
                           anchors=None, graph_sample=None):
    """:func:`surf_statistic` on compact rows, in-process: ``X`` ``uint8``, every
    feature discrete (the distance is the mismatch count), nothing missing.

    The same two passes and the same partials as the float64 kernels with
    every feature discrete (equal exactly: the distances and the sums are
    integers), on bit planes of ``X`` for the distances
    (:func:`.kernels.distance.mismatches`) and on its bytes for the sums,
    never a float64 copy of ``X``: pass 1 gives every anchor's moments,
    pass 2 one tile of anchors at a time (:data:`COMPACT_TILE_BYTES`),
    each tile's partials reduced by ``agg`` at once.  Memory: ``X``, its bit
    planes (``bits / 8`` of ``X``) and one tile.  ``anchors``: an
    :class:`~execution.Anchors` sample, or ``None`` for every row.
    ``graph_sample``: STIR's graph pass too, as :func:`surf_statistic`'s (the
    differences being 0 or 1, pass 2 needs no squares).
    """
    n, a = X.shape
    X = np.ascontiguousarray(X)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n_sets = 2 if far else 1
    n_bits = max(1, int(X.max()).bit_length()) if X.size else 1
    planes = distance.pack_planes(X, n_bits)
    index = np.arange(n, dtype=np.int64) if anchors is None else \
        np.asarray(anchors.index, dtype=np.int64)
    m = index.size
    # A pair-feature costs n_bits / 64 of a word operation in pass 1.
    moments = pick(surf.COMPACT_MOMENTS_TWINS, m * n * a, cost=n_bits / 64)(planes, index)
    near, far_thr = thresholds(moments, merge.surf_moment_total(moments), far)
    per_anchor = 8 * n_sets * n_classes * (a + 1)
    tile = max(1, min(m, COMPACT_TILE_BYTES // per_anchor))
    total = 0.0
    found = merge.outside_finders(n) if graph_sample is not None else None
    for t0 in range(0, m, tile):
        sel = slice(t0, t0 + tile)
        kernel = pick(surf.COMPACT_SCORE_TWINS, (min(m, t0 + tile) - t0) * n * a)
        P = kernel(X, planes, codes, index[sel], n_classes, n_sets, near[sel], far_thr[sel])
        total = total + agg(P, codes[index[sel]], *agg_args)
        if found is not None:
            found[index[sel]] = merge.surf_finders(P, codes[index[sel]],
                                                   (near[sel], far_thr[sel]), a)
    if graph_sample is None:
        return total
    # Pass 3: STIR's graph (a pair-feature of the mismatch count, as pass 1).
    kernel = pick(surf.COMPACT_GRAPH_TWINS, m * n * a, cost=n_bits / 64)
    parts = n_threads() if kernel is surf.COMPACT_GRAPH_TWINS[1] else 1
    G = kernel(planes, index, codes, found, parts)
    sample, v = graph_sample
    D = surf.compact_distance_matrix(distance.pack_planes(X[sample], n_bits))
    return total, merge.graph_row_sums(G), merge.sample_graph_sums(D, codes[sample],
                                                                    found[sample],
                                                                    G[sample, 0], v)


def compact_distinct(X, cap: int, block: int = 4096):
    """Per feature of ``uint8`` rows: the number of distinct values, ``cap + 1``
    for more than ``cap`` (:func:`column_summary`'s count without a float copy:
    columns sorted ``block`` at a time)."""
    n, a = X.shape
    out = np.zeros(a, dtype=np.int64)
    for f0 in range(0, a, block):
        chunk = np.sort(X[:, f0:f0 + block], axis=0)
        out[f0:f0 + block] = 1 + (chunk[1:] != chunk[:-1]).sum(axis=0) if n else 0
    return np.minimum(out, cap + 1)


def column_summary(rows: Rows, cap: int):
    """Per feature: the number of distinct values (``cap + 1`` for more than
    ``cap``), the standard deviation (ddof 0) and the number of missing
    values, in one pass over the row blocks; NaN is no value (skrebate's
    ``_get_attribute_info``)."""
    g = Graph(rows, "column-summary")
    keys = [g.add("block", merge.column_summary_chunk, g.block(i)[0], cap)
            for i in range(len(g.candidates))]
    uniques, n, mean, m2, _ = g.compute(g.tree(keys, merge.column_summary_combine))
    distinct = np.array([cap + 1 if u is None else u.size for u in uniques], dtype=np.int64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), distinct.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(np.asarray(m2) / n)
    return distinct, std, (rows.n_samples - n).astype(np.int64)


@dataclass(frozen=True)
class FeatureKinds:
    """How the Relief family's distance treats each feature (:mod:`.kernels.distance`).

    ``discrete`` (bool per feature): a difference of 0 or 1; ``weight``: a
    discrete mismatch's weight in the distance (skrebate's mixed data without
    missing values: ``A / A_discrete``, else 1); ``ramp`` (per feature,
    ``inf`` for none): a scored continuous difference above it counts 1
    (skrebate's mixed data; the distances never ramp); ``missing``: missing
    values per feature; ``kind``: ``PLAIN``, ``MASKED`` or ``MISSING``.
    """

    discrete: np.ndarray
    weight: float
    ramp: np.ndarray
    missing: np.ndarray
    kind: int

    @classmethod
    def continuous(cls, n_features):
        """Every feature continuous, nothing missing: the plain kernels."""
        return cls(np.zeros(n_features, dtype=np.bool_), 1.0, np.full(n_features, np.inf),
                   np.zeros(n_features, dtype=np.int64), distance.PLAIN)

    @property
    def params(self):
        """``(dm, dw, ramp, kind)`` as the kernels take them."""
        return self.discrete, self.weight, self.ramp, self.kind


def feature_kinds(rows: Rows, discrete_threshold: int, *, ramps=True, mixed_weight=True,
                  missing=None):
    """:class:`FeatureKinds` by skrebate 0.8.4's rules (``relieff.py``).

    A feature with at most ``discrete_threshold`` distinct values (missing
    values not counted) is discrete.  When discrete and continuous features
    mix, a discrete mismatch weighs ``A / A_discrete`` in the distance (not
    with missing values, whose distance is a mean over the features present)
    and, with ``ramps``, a scored continuous difference above the feature's
    standard deviation counts 1.  ``mixed_weight=False``: a discrete mismatch
    always weighs 1 (I-RELIEF, whose learned weights scale every feature).
    ``discrete_threshold=0`` with ``missing``
    (per-feature counts already known, e.g. from the scaling pass) all zero
    is the plain path: no pass over the rows.
    """
    a = rows.n_features
    if discrete_threshold == 0 and missing is not None and not np.any(missing):
        return FeatureKinds.continuous(a)
    distinct, std, missing = column_summary(rows, discrete_threshold)
    empty = np.flatnonzero(missing >= rows.n_samples)
    if empty.size:
        raise ValueError(f"Feature {int(empty[0])} has no value (every row is missing it); "
                         "drop that column before fitting.")
    discrete = distinct <= discrete_threshold
    mixed = bool(discrete.any() and not discrete.all())
    has_nan = bool(missing.any())
    ramp = np.where(~discrete & mixed, std, np.inf) if ramps else np.full(a, np.inf)
    weight = discrete.size / discrete.sum() if mixed and not has_nan and mixed_weight else 1.0
    if has_nan:
        kind = distance.MISSING
    elif discrete.any() or np.isfinite(ramp).any():
        kind = distance.MASKED
    else:
        kind = distance.PLAIN
    return FeatureKinds(discrete, float(weight), ramp, missing, kind)


__all__ += ["FeatureKinds", "column_summary", "compact_distinct", "feature_kinds",
            "surf_compact_statistic", "surf_statistic"]

__all__ += ["knn_target_statistic", "rows_at"]
