"""The SURF family's statistic: distance moments, then the neighbours within thresholds.

Two passes over the same grid (a symmetric one for every row as an anchor,
:func:`grid.symmetric`; an ordered one for a sample of anchors), and for
STIR a third over the neighbour graph; :func:`compact_threshold_statistic` runs
the same passes in-process on compact (``uint8``) rows, a block of anchors
against every row, without a float64 copy of the rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import grid, merge
from ._numba import n_threads, pick
from .device import threshold_twins
from .execution import Rows
from .features import FeatureKinds
from .kernels import compact, distance, surf
from .kernels import graph as stir_graph
from .kernels.modes import block_pair

#: The kernels' stand-in for "no target" (class labels): never read.
_NO_TARGET = np.empty(0)


def _target_at(target, index):
    """The rows' targets (``target`` is held once in the graph), or the stand-in."""
    return _NO_TARGET if target is None else np.ascontiguousarray(target[index])


# -- the passes' own sums: thresholds' moments, STIR's graph -------------------------


def moment_total(moments):
    """``(sum_a (count_a + 1), sum_a sum_j d_aj, sum_a sum_j d_aj^2)``: the cells of
    the anchors' rows of the full distance matrix (its zero diagonal included, as
    skrebate's mean) and their distance sum and sum of squares."""
    cols = surf.moment_columns(moments)
    return np.array([np.sum(cols.count + 1.0), np.sum(cols.total), np.sum(cols.squares)])


def graph_finders(P, ya, thresholds, n_features):
    """Each anchor's entry for STIR's graph pass (:mod:`.kernels.surf`, pass 3):
    ``(near, 1 / h, 1 / m)`` from its thresholds and the hits and misses of
    pass 2 (two classes; ``0`` for a side with none)."""
    counts = P[:, surf.NEAR, :, surf.score_columns(n_features).counts.start]
    rows = np.arange(len(ya))
    ya = np.asarray(ya)
    hits, misses = counts[rows, ya], counts[rows, 1 - ya]
    near = np.where(np.isnan(thresholds.near), -np.inf, thresholds.near)
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
    cols = stir_graph.graph_columns(G)
    c, r = cols.w, cols.w2
    return np.array(
        [
            c @ c,
            (c * c) @ c,
            0.5 * r.sum(),
            0.5 * cols.w3.sum(),
            cols.mutual_hits.sum(),
            cols.mutual_misses.sum(),
            r @ r,
        ]
    )


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
    return np.array(
        [
            0.5 * cv @ W @ cv,
            cv @ squares @ v,
            float(np.einsum("ij,ji->", walks, Wv)),
            0.5 * v @ (squares * squares) @ v,
            # (Wv W)_ij = walks_ij / v_j: no second product
            float(np.einsum("i,ij,ij->", v, squares, walks)),
            float(np.einsum("ij,ji->", walks, walks)),
        ]
    )


# -- tiles of the symmetric grid (every row an anchor) ------------------------------


def _pair_moments(Xp, yp, start_p, Xq, yq, start_q, dm, dw, kind, device):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    gpu = threshold_twins(device)
    moments_pairs = surf.moments_pairs if gpu is None else gpu.moments_pairs_cuda
    return moments_pairs(Xp, ip, Xq, iq, dm, dw, kind, mode)


def _pair_score(
    Xp, yp, start_p, Xq, yq, start_q, n_classes, n_sets, how, target, device, thr_p, thr_q
):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    tp, tq = _target_at(target, ip), _target_at(target, iq)
    gpu = threshold_twins(device)
    score_pairs = surf.score_pairs if gpu is None else gpu.score_pairs_cuda
    return score_pairs(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq)


def _pair_graph(Xp, yp, start_p, Xq, yq, start_q, dm, dw, kind, fp, fq):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    return stir_graph.graph_pairs(Xp, ip, yp, Xq, iq, yq, dm, dw, kind, mode, fp, fq)


# -- tiles of the ordered grid (a sample of anchors) --------------------------------


def _moments_tile(Xa, ya, ia, Xc, yc, start_c, threads, dm, dw, kind, device):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    gpu = threshold_twins(device)
    kernel = (
        pick(surf.MOMENTS_TWINS, Xa.shape[0] * Xc.shape[0] * Xc.shape[1], threads=threads)
        if gpu is None
        else gpu.moments_tile_cuda
    )
    return kernel(Xa, ia, Xc, ic, dm, dw, kind)


def _score_tile(Xa, ya, ia, Xc, yc, start_c, threads, n_classes, n_sets, how, target, device, thr):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    gpu = threshold_twins(device)
    kernel = (
        pick(surf.SCORE_TWINS, Xa.shape[0] * Xc.shape[0] * Xc.shape[1], threads=threads)
        if gpu is None
        else gpu.score_tile_cuda
    )
    ta, tc = _target_at(target, ia), _target_at(target, ic)
    return kernel(Xa, ia, Xc, yc, ic, n_classes, n_sets, how, thr, ta, tc)


def _graph_tile(Xa, ya, ia, Xc, yc, start_c, threads, dm, dw, kind, fa, fc):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    kernel = pick(stir_graph.GRAPH_TWINS, Xa.shape[0] * Xc.shape[0] * Xc.shape[1], threads=threads)
    parts = n_threads() if kernel is stir_graph.GRAPH_TWINS[1] else 1
    return kernel(Xa, ia, ya, Xc, ic, yc, dm, dw, kind, fa, fc, parts)


# -- steps between the passes ---------------------------------------------------------


def _thresholds_task(thresholds, moments, total, far):
    return surf.Thresholds(*thresholds(moments, total, far))


def _agg_task(agg, partial, ya, agg_args):
    return agg(partial, ya, *agg_args)


def _as_tuple(*values):
    return values


def _candidate_finders(start, stop, anchor_index, anchor_finders):
    """Finder entries of the rows ``[start, stop)``: the anchors' own, nothing elsewhere."""
    out = outside_finders(stop - start)
    inside = (anchor_index >= start) & (anchor_index < stop)
    out[anchor_index[inside] - start] = np.concatenate(anchor_finders)[inside]
    return out


def _with_anchor_sides(G, start, anchor_index, anchor_parts):
    """A candidate block's pass-3 partials plus those its anchors got as anchors."""
    G = G.copy()
    inside = (anchor_index >= start) & (anchor_index < start + G.shape[0])
    G[anchor_index[inside] - start] += np.concatenate(anchor_parts)[inside]
    return G


def _picked_graph_rows(X, codes, start, local, finders, G):
    return (
        np.asarray(X[local], dtype=np.float64),
        np.asarray(codes)[local],
        finders[local],
        stir_graph.graph_columns(G).w[local],
    )


def _sample_graph_task(parts, v, dm, dw, kind):
    X, y, finders, C = (np.concatenate(items) for items in zip(*parts))
    D = surf.distance_matrix(X, X, dm, dw, kind)
    return sample_graph_sums(D, y, finders, C, v)


def _graph_sums(g, G, finders, sample, dm, dw, kind):
    """Keys of the graph's exact sums (:func:`graph_row_sums`, from every
    candidate block's pass-3 partials ``G``) and of the sample's
    (:func:`sample_graph_sums`; ``sample``: sorted row indices and
    their weights)."""
    index, v = sample
    exact = g.tree([g.add("graph-sums", graph_row_sums, Gb) for Gb in G], merge.add, "graph-total")
    parts = grid.picked(
        g, index, _picked_graph_rows, each=lambda b: (finders[b], G[b]), tag="graph-take"
    )
    sampled = g.add("graph-sample", _sample_graph_task, parts, v, dm, dw, kind)
    return exact, sampled


def threshold_statistic(
    rows: Rows,
    thresholds,
    agg,
    agg_args=(),
    *,
    far=False,
    kinds=None,
    anchors=None,
    target=None,
    bound=0.0,
    graph_sample=None,
    soft=False,
    device="cpu",
):
    """``sum_I agg(pass2_I(thresholds(pass1_I, total)), y_I, *agg_args)``, two passes.

    Pass 1 merges each anchor block's distance moments ``(count, sum d, sum
    d^2)`` over the candidate blocks (:func:`surf.moments_pairs`); the
    moments of all anchor blocks add up to ``total`` (one tiny tree);
    ``thresholds(moments, total, far) -> (near, far, spread)`` gives each
    anchor's thresholds (``far=False``: no far set, ``+inf``) and, with
    ``soft=True`` (the SWRF family's weighted neighbours), the spread of their
    weights (else an empty array: every neighbour weighs 1;
    :func:`surf.score_pairs`).  Pass 2 runs over the
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
    sampled)``: :func:`graph_row_sums` over every row and
    :func:`sample_graph_sums` of the sample.

    ``device``: ``"cuda"`` runs passes 1 and 2 on the GPU
    (:mod:`~dmargin.engine.kernels.cuda_surf`; the caller checked that one is
    usable): continuous rows, class labels, neighbours weighing 1, no graph.
    """
    a = rows.n_features
    k = 2 if target is not None else rows.n_classes  # the partials' classes
    n_sets = 2 if far else 1
    if kinds is None:
        kinds = FeatureKinds.continuous(a)
    dm, dw, rp, kind = kinds.params
    squares = graph_sample is not None
    if soft:  # weighted sums, counts and weight sums
        per_row = n_sets * k * (3 * a if kind == distance.MISSING else a + 2)
    else:
        per_row = n_sets * k * (2 * a if kind == distance.MISSING else a + 1) + (
            k * a if squares else 0
        )
    if target is None:
        bound = 0.0
    elif not bound > 0:
        raise ValueError(f"bound must be positive with a target; got {bound}.")
    how = surf.Scoring(dm, dw, rp, kind, bound, squares)
    gpu = threshold_twins(device)
    if gpu is not None and (not gpu.plain_scoring(how, soft) or graph_sample is not None):
        raise ValueError(
            f"device={device!r} runs the SURF family's passes on continuous features "
            "without missing values, with class labels, neighbours weighing 1 and no "
            "neighbour graph (STIR's p-values): fit with device='cpu'."
        )
    common = (thresholds, agg, agg_args, far, how, n_sets, per_row, target, graph_sample, device)
    if anchors is not None:
        return _sampled(rows, anchors, *common)
    n = rows.n_samples
    threads, blocks = grid.threaded_blocks(rows, n * n * a / 2, per_thread=2, per_row=per_row)
    g = grid.graph(rows, "surf", candidates=blocks)
    n_blocks = len(g.candidates)
    target = grid.hold_target(g, target)
    # Pass 1: per-anchor distance moments, then the thresholds.
    moments = grid.symmetric(g, _pair_moments, dm, dw, kind, device, tag="moments")
    merged = grid.sides(g, moments, merge.add)
    total = g.tree([g.add("total", moment_total, m) for m in merged], merge.add, "moment-total")
    thr = [g.add("thresholds", _thresholds_task, thresholds, m, total, far) for m in merged]
    # Pass 2: the neighbours within the thresholds, over the same pairs.
    scores = grid.symmetric(
        g,
        _pair_score,
        rows.n_classes,
        n_sets,
        how,
        target,
        device,
        each=lambda i, j: (thr[i], thr[j]),
        tag="score",
    )
    P = grid.sides(g, scores, merge.add)
    shares = [g.add("agg", _agg_task, agg, P[i], g.block(i)[1], agg_args) for i in range(n_blocks)]
    result = g.tree(shares, merge.add, "total")
    if squares:
        # Pass 3: STIR's graph, from every row's thresholds and counts.
        found = [
            g.add("finders", graph_finders, P[i], g.block(i)[1], thr[i], a) for i in range(n_blocks)
        ]
        graph = grid.symmetric(
            g, _pair_graph, dm, dw, kind, each=lambda i, j: (found[i], found[j]), tag="graph"
        )
        G = grid.sides(g, graph, merge.add)
        result = g.add(
            "stir", _as_tuple, result, *_graph_sums(g, G, found, graph_sample, dm, dw, kind)
        )
    return grid.run(g, result, threads=threads)


def _sampled(
    rows: Rows,
    anchors,
    thresholds,
    agg,
    agg_args,
    far,
    how,
    n_sets,
    per_row,
    target,
    graph_sample,
    device,
):
    """:func:`threshold_statistic` for a sample of anchors: ordered tiles (sample x all rows)."""
    k = rows.n_classes
    dm, dw, kind, squares = how.dm, how.dw, how.kind, how.squares
    g = grid.graph(rows, "surf-anchors", per_row=per_row, sample=anchors)
    target = grid.hold_target(g, target)
    n_anchor = len(g.anchors)
    merged = grid.ordered(
        g, _moments_tile, g.local, dm, dw, kind, device, combine=merge.add, tag="moments"
    )
    total = g.tree([g.add("total", moment_total, m) for m in merged], merge.add, "moment-total")
    thr = [g.add("thresholds", _thresholds_task, thresholds, m, total, far) for m in merged]
    P = grid.ordered(
        g,
        _score_tile,
        g.local,
        k,
        n_sets,
        how,
        target,
        device,
        each=lambda i: (thr[i],),
        combine=merge.add,
        tag="score",
    )
    shares = [g.add("agg", _agg_task, agg, P[i], g.anchor(i)[1], agg_args) for i in range(n_anchor)]
    result = g.tree(shares, merge.add, "total")
    if squares:
        found = [
            g.add("finders", graph_finders, P[i], g.anchor(i)[1], thr[i], rows.n_features)
            for i in range(n_anchor)
        ]
        # Pass 3: anchors against every row; each row's partials, anchors or not.
        index = np.asarray(anchors.index, dtype=np.int64)
        cand = [
            g.add("finders-rows", _candidate_finders, start, stop, index, found)
            for start, stop in g.candidates
        ]
        tiles = grid.ordered_tiles(
            g,
            _graph_tile,
            g.local,
            dm,
            dw,
            kind,
            each=lambda i, j: (found[i], cand[j]),
            tag="graph",
        )
        n_cand = len(g.candidates)
        own = [
            g.tree([g.add("side", _side, tiles[i, j], 0) for j in range(n_cand)], merge.add)
            for i in range(n_anchor)
        ]
        G = [
            g.add(
                "graph-rows",
                _with_anchor_sides,
                g.tree([g.add("side", _side, tiles[i, j], 1) for i in range(n_anchor)], merge.add),
                start,
                index,
                own,
            )
            for j, (start, _) in enumerate(g.candidates)
        ]
        result = g.add(
            "stir", _as_tuple, result, *_graph_sums(g, G, cand, graph_sample, dm, dw, kind)
        )
    return grid.run(g, result)


def _side(pair, side):
    return pair[side]


#: Bytes of one tile of pass-2 partials on compact rows (anchors x sets x
#: classes x (A + 1) float64), turned into scores before the next tile.
COMPACT_TILE_BYTES = 256 * 2**20


def compact_threshold_statistic(
    rows: Rows, thresholds, agg, agg_args=(), *, far=False, anchors=None, graph_sample=None
):
    """:func:`threshold_statistic` on compact rows, in-process: ``rows.X`` ``uint8``,
    every feature discrete (the distance is the mismatch count), nothing missing.

    The same passes and the same partials as the float64 kernels with every
    feature discrete (equal exactly: the distances and the sums are
    integers), laid over blocks of anchors by the grid runner, each block
    against every row: the distances from bit planes of ``X``
    (:func:`.kernels.distance.mismatches`), held once in the graph, and the
    sums from its bytes, never a float64 copy of ``X``.  Pass 1 gives every
    anchor's moments, pass 2 a block of anchors' partials at a time (blocks
    of :data:`COMPACT_TILE_BYTES`), each reduced by ``agg`` as it is
    merged.  Memory: ``X``, its bit planes (``bits / 8`` of ``X``) and a
    block's partials.  ``anchors``: an :class:`~execution.Anchors` sample,
    or ``None`` for every row.  ``graph_sample``: STIR's graph pass too, as
    :func:`threshold_statistic`'s (the differences being 0 or 1, pass 2
    needs no squares).
    """
    X = np.ascontiguousarray(rows.X)
    n, a = X.shape
    k = rows.n_classes
    n_sets = 2 if far else 1
    n_bits = max(1, int(X.max()).bit_length()) if X.size else 1
    per_row = n_sets * k * (a + 1)
    g = grid.graph(
        rows,
        "surf-compact",
        sample=anchors,
        anchor_rows=max(1, COMPACT_TILE_BYTES // (8 * per_row)),
    )
    planes = g.hold("planes", distance.pack_planes(X, n_bits))
    # Pass 1: every anchor's distance moments, then the thresholds.
    moments = grid.ordered(
        g, _compact_moments_tile, planes, n_bits, combine=merge.add, tag="moments"
    )
    total = g.tree([g.add("total", moment_total, m) for m in moments], merge.add, "moment-total")
    thr = [g.add("thresholds", _thresholds_task, thresholds, m, total, far) for m in moments]
    # Pass 2: the neighbours within the thresholds, a block of anchors at a time,
    # each block's partials reduced by agg and added to the last block's.
    stir = graph_sample is not None
    last = grid.chained(
        g,
        _compact_score_tile,
        planes,
        k,
        n_sets,
        agg,
        agg_args,
        stir,
        each=lambda i: (thr[i],),
        tag="score",
    )
    result = g.add("share", _chain_share, last)
    if stir:
        # Pass 3: STIR's graph (a pair-feature of the mismatch count, as pass 1).
        index = [
            g.add("index", _anchor_index, b[2], b[1])
            for b in (g.anchor(i) for i in range(len(g.anchors)))
        ]
        found = g.add("finders", _finder_rows, n, index, g.add("finder", _chain_finders, last))
        X_all, codes_all, _ = g.block(0)
        result = g.add(
            "stir",
            _compact_graph,
            result,
            planes,
            index,
            codes_all,
            found,
            X_all,
            n_bits,
            graph_sample,
        )
    return grid.run(g, result)


def _anchor_index(start_or_index, ya):
    """A block's anchors as global row indices (a sample's, or a run of rows)."""
    if isinstance(start_or_index, (int, np.integer)):
        return np.arange(start_or_index, start_or_index + len(ya), dtype=np.int64)
    return np.asarray(start_or_index, dtype=np.int64)


def _compact_moments_tile(Xa, ya, ia, Xc, yc, start_c, planes, n_bits):
    index = _anchor_index(ia, ya)
    # A pair-feature costs n_bits / 64 of a word operation.
    kernel = pick(
        compact.COMPACT_MOMENTS_TWINS, index.size * Xc.shape[0] * Xc.shape[1], cost=n_bits / 64
    )
    return kernel(planes, index)


def _compact_score_tile(
    Xa, ya, ia, Xc, yc, start_c, planes, n_classes, n_sets, agg, agg_args, stir, thr, previous
):
    """``(share, [finders per block])`` of the blocks of anchors so far: the last
    blocks' plus this one's against every row."""
    index = _anchor_index(ia, ya)
    kernel = pick(compact.COMPACT_SCORE_TWINS, index.size * Xc.shape[0] * Xc.shape[1])
    P = kernel(
        Xc,
        planes,
        np.ascontiguousarray(yc, dtype=np.int64),
        index,
        n_classes,
        n_sets,
        thr.near,
        thr.far,
    )
    ya = np.asarray(ya)
    share = agg(P, ya, *agg_args)
    found = [graph_finders(P, ya, thr, Xc.shape[1])] if stir else []
    if previous is None:
        return _Chain(share, found)
    return _Chain(previous.share + share, previous.finders + found)


class _Chain(NamedTuple):
    """The blocks of anchors so far of :func:`_compact_score_tile`."""

    #: Their shares, added.
    share: object
    #: Their finder entries, one array per block (STIR).
    finders: list


def _chain_share(chain):
    return chain.share


def _chain_finders(chain):
    return chain.finders


def _finder_rows(n_rows, index, finders):
    """Every row's finder entry: the anchors' own, nothing elsewhere."""
    out = outside_finders(n_rows)
    for idx, part in zip(index, finders):
        out[idx] = part
    return out


def _compact_graph(total, planes, index, codes, found, X, n_bits, graph_sample):
    """Pass 3 on compact rows: the graph's exact row sums and the sample's sums."""
    index = np.concatenate(index)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    kernel = pick(
        compact.COMPACT_GRAPH_TWINS, index.size * X.shape[0] * X.shape[1], cost=n_bits / 64
    )
    parts = n_threads() if kernel is compact.COMPACT_GRAPH_TWINS[1] else 1
    G = kernel(planes, index, codes, found, parts)
    sample, v = graph_sample
    D = compact.compact_distance_matrix(distance.pack_planes(X[sample], n_bits))
    return (
        total,
        graph_row_sums(G),
        sample_graph_sums(
            D, codes[sample], found[sample], stir_graph.graph_columns(G).w[sample], v
        ),
    )


__all__ = [
    "COMPACT_TILE_BYTES",
    "compact_threshold_statistic",
    "graph_finders",
    "graph_row_sums",
    "moment_total",
    "outside_finders",
    "sample_graph_sums",
    "threshold_statistic",
]
