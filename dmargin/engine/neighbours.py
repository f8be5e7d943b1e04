"""Soft and hard neighbours: the ordered-grid statistics.

Each is a kernel family's tiles over an ordered grid (:func:`grid.ordered`),
merged per anchor block with its ``*_combine`` and reduced there by the
algorithm's ``agg``; only the small result comes back.

- :func:`lse_statistic` -- soft neighbours (I-RELIEF, IM4E);
- :func:`knn_statistic` -- hard neighbours (Relief, ReliefF), and
  :func:`knn_target_statistic` for a regression target;
- :func:`anchor_partials` -- new anchors from the driver against all rows;
- :func:`row_partials` -- every row left out of its own candidates;
- :func:`new_rows_softmin` -- new rows against the training rows where
  both live (IMMIGRATE's prediction rule);
- :func:`rows_at` and :func:`summary_of_rows_at` -- a few rows, or a summary
  of them, from where they are.
"""

from __future__ import annotations

import numpy as np

from . import grid, merge
from ._numba import TileKernel, blas_single_thread, n_threads
from .device import on_device
from .execution import TILE_BUDGET, Anchors, Rows
from .features import FeatureKinds
from .kernels import distance, knn, lse
from .local import interrupt_count, stop_if_interrupted

#: Pair-features of one kernel call at most: between calls a tile stops if a
#: ``KeyboardInterrupt`` stopped its run.  A call of the soft tile (an exp per
#: pair) takes about 0.3 s on two threads.  Each call costs a pass over the
#: candidates and a wait for its slowest thread: ReliefF on 8,000 x 100 took
#: 30 % longer in calls of 1e8 and 20 % in calls of 1e9 than in one call.
CALL_WORK = 1e9
#: The fewest anchors of one call, per numba thread: each call sorts the
#: candidates by class once (about one pass over them).
CALL_ANCHORS = 256
#: In-process bytes of an anchor block's k-nearest partial (its neighbours'
#: difference rows).  The C allocator serves a block under 32 MiB from memory
#: freed by the block before; a larger one is mapped fresh, and its first
#: writes fault page by page (45 ms for 8,000 anchors x 2 classes x 10
#: neighbours x 57 features, as long as the distances themselves).
NEAREST_BYTES = 16 * 2**20
#: The same with the tiles on a GPU (``device="cuda"``): each call sends the
#: candidates to the device and sorts them by class, so an anchor block is as
#: large as :data:`TILE_BUDGET` allows.
GPU_NEAREST_BYTES = TILE_BUDGET
#: The most pair-features of one in-process call of :data:`knn.ALL_PAIRS` (about a
#: second on one core); a larger fit runs the anchor blocks in calls of
#: :data:`CALL_WORK`, between which an interrupted run stops.
ALL_PAIRS_WORK = 1e10
#: The general k-nearest tile's ``centres`` when candidates rank by distance.
_BY_DISTANCE = np.empty((0, 0, 2))
#: The general tiles' ``target`` for class labels.
_NO_TARGET = np.empty(0)


def tile(Xa, ya, start_a, Xc, yc, start_c, kernel: TileKernel, threads, *params):
    """The ordered grid's tile task: ``kernel(Xa, ia, Xc, yc, ic, *params)``.

    ``kernel`` (a :class:`~dmargin.engine._numba.TileKernel`) is the object
    itself: its twin is picked by the tile's work and its cost (``threads``:
    in-process, where a kernel may thread inside); a BLAS kernel runs under
    one BLAS thread on dask's tasks; any other runs in calls between which
    an interrupted run stops (:func:`_in_calls`).
    """
    # A block of rows starts at ``start_a``; a sample (or new anchors) carries its indices.
    ia = np.asarray(start_a) if np.ndim(start_a) else np.arange(start_a, start_a + Xa.shape[0])
    ic = np.arange(start_c, start_c + Xc.shape[0])
    work = Xa.shape[0] * Xc.shape[0] * Xc.shape[1]
    twin = kernel.pick(work, threads=threads)
    if kernel.blas and not threads:
        with blas_single_thread():  # the tasks are the parallelism
            out = twin(Xa, ia, Xc, yc, ic, *params)
    elif kernel.blas:
        out = twin(Xa, ia, Xc, yc, ic, *params)
    else:
        least = CALL_ANCHORS * (n_threads() if kernel.is_threaded(twin) else 1)
        steps = work * kernel.cost / kernel.speed
        out = _in_calls(twin, Xa, ia, Xc, yc, ic, params, steps, least)
    return out if kernel.partial is None else kernel.partial(*out)


def _in_calls(kernel, Xa, ia, Xc, yc, ic, params, work, least):
    """``kernel(Xa, ia, Xc, yc, ic, *params)`` over slices of at least ``least``
    anchors, each at most :data:`CALL_WORK` otherwise: an interrupted run stops
    after the running slice.  Each anchor's partial is its own, so the slices'
    partials stack."""
    n = Xa.shape[0]
    step = max(least, int(n * CALL_WORK / max(work, 1.0)))
    if n <= step:
        return kernel(Xa, ia, Xc, yc, ic, *params)
    # The ranked tiles' class moments are per anchor (anchors x classes x 2): sliced too.
    mine = [isinstance(p, np.ndarray) and p.ndim == 3 and p.shape[0] == n for p in params]
    count, parts = interrupt_count(), []
    for s in range(0, n, step):
        these = [p[s : s + step] if m else p for p, m in zip(params, mine)]
        parts.append(kernel(Xa[s : s + step], ia[s : s + step], Xc, yc, ic, *these))
        stop_if_interrupted(count)
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate(items) for items in zip(*parts))
    return np.concatenate(parts)


# ---------------------------------------------------------------------------
# Every row (or a sample) as an anchor
# ---------------------------------------------------------------------------


def _agg_task(agg, partial, ya, weight, agg_args):
    return agg(partial.m, partial.s, partial.v, ya, weight, *agg_args)


def lse_statistic(
    rows: Rows, w, sigma, agg, agg_args=(), anchor_weight=None, anchors=None, kinds=None
):
    """``sum_I agg(merge_J lse_tile(I, J), y_I, weight_I, *agg_args)``.

    ``agg(m, s, v, ya, weight, *agg_args)`` returns a small array (the anchor
    block's share); ``anchor_weight`` defaults to ``1 / N`` per anchor
    (``1 / m`` for a sample).  ``anchors``: an :class:`~execution.Anchors`
    sample scoring against all rows instead of every row.  ``kinds``: the
    :class:`~dmargin.engine.features.FeatureKinds` of the rows; discrete
    features or missing values run the general kernel
    (:data:`lse.GENERAL_KERNEL`, whose ``v`` has ``2 A`` entries per class
    with missing values).
    """
    a, k = rows.n_features, rows.n_classes
    n = rows.n_samples if anchors is None else anchors.n_samples
    w = np.asarray(w, dtype=np.float64)
    weight = np.full(n, 1.0 / n) if anchor_weight is None else np.asarray(anchor_weight, float)
    kernel, params, width = lse.KERNEL, (w, sigma, k), a
    if kinds is not None and kinds.kind != distance.PLAIN:
        kernel, params = lse.GENERAL_KERNEL, (w, sigma, k, kinds.discrete, kinds.kind)
        width = 2 * a if kinds.kind == distance.MISSING else a
    g = grid.graph(rows, "lse", per_row=k * (width + 2), sample=anchors)
    merged = grid.ordered(g, tile, kernel, g.local, *params, combine=merge.lse_combine)
    shares = [
        g.add("agg", _agg_task, agg, merged[i], g.anchor(i)[1], weight[start:stop], agg_args)
        for i, (start, stop) in enumerate(g.anchors)
    ]
    return grid.run(g, g.tree(shares, merge.add, "total"))


def _knn_agg_task(agg, partial, ya, first, agg_args):
    if first is None:
        return agg(*partial, ya, *agg_args)
    # The anchors' global row indices: a sample's own, or a block's from its start.
    ia = np.asarray(first) if np.ndim(first) else np.arange(first, first + len(ya))
    return agg(*partial, ya, ia, *agg_args)


def _nearest_share(Xa, ya, start_a, Xc, yc, start_c, kernel, agg, anchor_index, agg_args, *params):
    """In-process: an anchor block's k-nearest tile against every row, then its ``agg``
    (``params``: the kernel's, a key among them resolved by the runner)."""
    partial = tile(Xa, ya, start_a, Xc, yc, start_c, kernel, True, *params)
    return _knn_agg_task(agg, partial, ya, start_a if anchor_index else None, agg_args)


def _all_pairs_fit(g, anchors, n_classes, n_neighbors, sums=False):
    """Whether :data:`knn.ALL_PAIRS` serves this graph: in-process, every row an
    anchor and a candidate, its pools and lists (or, with ``sums``, every row's
    class sums) within :data:`TILE_BUDGET` and its work within
    :data:`ALL_PAIRS_WORK` (one call: an interrupt waits for it)."""
    if not g.local or anchors is not None or len(g.candidates) != 1:
        return False
    n, k, a = g.rows.n_samples, n_neighbors, g.rows.n_features
    # Per row and class: its pool (float32 and int64), limit, count and lists (distance,
    # index, position; and the lists returned); per row its copies (sorted, float32 twice).
    per_row = n_classes * (12 * (k + 2) + 16 + 40 * k) + 16 * a
    if sums:
        per_row += n_classes * 8 * (a + 1)
    return n * per_row <= TILE_BUDGET and n * n * a <= ALL_PAIRS_WORK


def _all_pairs(Xc, yc, start_c, n_classes, n_neighbors, sums=False):
    """Every row's k-nearest lists ``(dist, idx)``; with ``sums``, every row's
    :data:`knn.NEIGHBOUR_SUMS` ``(found, sums)`` from them instead (one call for
    all the rows: a threaded call from a task's thread costs a parallel region's
    start, which one call an anchor block would pay again for each)."""
    ids = np.arange(start_c, start_c + Xc.shape[0])
    work = Xc.shape[0] ** 2 * Xc.shape[1]
    twin = knn.ALL_PAIRS.pick(work, threads=True)
    threads = n_threads() if knn.ALL_PAIRS.is_threaded(twin) else 1
    dist, idx = twin(Xc, ids, yc, n_classes, n_neighbors, threads)
    if not sums:
        return dist, idx
    return knn.NEIGHBOUR_SUMS.pick(work)(Xc, Xc, idx, start_c)


def _share_from_lists(
    lists, Xa, ya, start_a, Xc, yc, start_c, agg, anchor_index, agg_args, sums_agg
):
    """An anchor block's share from every row's k-nearest lists: its rows of the
    lists, their difference rows taken from the candidates, then ``agg``; or,
    with ``sums_agg``, its rows of every row's class sums (``lists`` are those)."""
    stop = start_a + Xa.shape[0]
    if sums_agg is not None:
        found, sums = lists
        return sums_agg(found[start_a:stop], sums[start_a:stop], ya, *agg_args)
    dist, idx = lists
    dist, idx = dist[start_a:stop], idx[start_a:stop]
    partial = knn.NearestPartial(dist, idx, knn.neighbour_differences(Xa, Xc, idx, start_c))
    return _knn_agg_task(agg, partial, ya, start_a if anchor_index else None, agg_args)


def knn_statistic(
    rows: Rows,
    n_neighbors: int,
    agg,
    agg_args=(),
    anchors=None,
    kinds=None,
    combine=merge.add,
    finish=None,
    anchor_index=False,
    ranked=False,
    target=None,
    bound=0.0,
    device="cpu",
    sums_agg=None,
):
    """``combine_I agg(topk_J knn_tile(I, J), y_I, *agg_args)`` (hard neighbours).

    ``anchors``: an :class:`~execution.Anchors` sample instead of every row.
    ``kinds``: the :class:`~dmargin.engine.features.FeatureKinds` of the rows;
    discrete features or missing values run the general kernel
    (:data:`knn.GENERAL_KERNEL`), whose ``z`` are the scored differences (NaN
    where a value is missing).  ``combine``: how the anchor blocks' shares
    merge (a sum by default); ``finish``: a last step on the merged value,
    where it was merged (a worker), so that only its result comes back.
    ``anchor_index``: ``agg`` also gets the anchors' global row indices
    (after ``y_I``).  ``ranked``: a first pass over the same tiles gives each
    anchor the count and distance sum of every class's other rows, and the
    candidates of a class then rank by how far their distance lies from the
    class's mean distance, farthest first (MuRelief; ``dist`` holds
    ``-|n_c d - s_c|``).  ``target`` (every row in one class): each anchor's
    candidates are two classes, its hits (``|y_a - y_j| < bound``, class 0,
    every anchor's own) and its misses (skrebate's continuous endpoint).
    ``device``: ``"cuda"`` runs the tiles on the GPU
    (:mod:`~dmargin.engine.kernels.cuda_knn`; the caller checked that one is
    usable), the same lists; not with ``ranked`` or ``target``.
    ``sums_agg``: ``agg`` from the neighbours' differences summed per anchor and
    class, ``sums_agg(found, sums, y_I, *agg_args)`` (``(anchors, classes, 1)``
    and ``(anchors, classes, A)``), the same share; where every row's lists are
    made in process at once, the engine sums the differences without writing
    them out (``N k A`` floats per class).
    """
    a, k = rows.n_features, rows.n_classes
    kernel, params = knn.KERNEL, (k, n_neighbors)
    if target is not None and k != 1:
        raise ValueError("a target needs every row in one class")
    general = ranked or target is not None
    if general or (kinds is not None and kinds.kind != distance.PLAIN):
        if device != "cpu" and general:
            raise ValueError(
                f"device={device!r} ranks candidates by distance among class labels; "
                "this statistic ranks by a target or by class means: fit with device='cpu'."
            )
        kinds = kinds if kinds is not None else FeatureKinds.continuous(a)
        kernel, params = knn.GENERAL_KERNEL, (k, n_neighbors, *kinds.params)
    per_row = max(k, 2) * n_neighbors * (a + 2)
    # A GPU call costs a copy of the candidates to the device: fewer, larger anchor blocks.
    budget = NEAREST_BYTES if device == "cpu" else GPU_NEAREST_BYTES
    g = grid.graph(rows, "knn", per_row=per_row, sample=anchors, local_budget=budget)
    tail = (_NO_TARGET, 0.0) if target is None else (grid.hold_target(g, target), float(bound))
    if ranked:
        centres = grid.ordered(
            g,
            tile,
            knn.CLASS_MOMENTS_KERNEL,
            g.local,
            k,
            *kinds.params[:2],
            kinds.kind,
            *tail,
            combine=merge.add,
            tag="class-moments",
        )
        merged = grid.ordered(
            g,
            tile,
            kernel,
            g.local,
            *params,
            combine=merge.knn_combine,
            each=lambda i: (centres[i], *tail),
        )
    else:
        if kernel is knn.GENERAL_KERNEL:
            params = (*params, _BY_DISTANCE, *tail)
        kernel = on_device(kernel, device)
        sums_agg = None if anchor_index else sums_agg
        if kernel is knn.KERNEL and _all_pairs_fit(
            g, anchors, k, n_neighbors, sums_agg is not None
        ):
            # Every pair measured once for both its rows, then each block's share.
            (lists,) = grid.per_block(
                g,
                _all_pairs,
                k,
                n_neighbors,
                sums_agg is not None,
                fields=3,
                tag="nearest-pairs" if sums_agg is None else "nearest-sums",
            )
            shares = [
                g.add(
                    "agg",
                    _share_from_lists,
                    lists,
                    *g.anchor(i),
                    *g.block(0),
                    agg,
                    anchor_index,
                    agg_args,
                    sums_agg,
                )
                for i in range(len(g.anchors))
            ]
            total = g.tree(shares, combine, "total")
            return grid.run(g, total if finish is None else g.add("finish", finish, total))
        if g.local and len(g.candidates) == 1:
            # Tile and agg in one task: a block's partial is freed before the next is made.
            shares = grid.ordered(
                g,
                _nearest_share,
                kernel,
                agg,
                anchor_index,
                agg_args,
                *params,
                combine=merge.add,
                tag="nearest",
            )
            total = g.tree(shares, combine, "total")
            return grid.run(g, total if finish is None else g.add("finish", finish, total))
        merged = grid.ordered(g, tile, kernel, g.local, *params, combine=merge.knn_combine)
    shares = []
    for i in range(len(g.anchors)):
        _, codes, first = g.anchor(i)
        shares.append(
            g.add(
                "agg",
                _knn_agg_task,
                agg,
                merged[i],
                codes,
                first if anchor_index else None,
                agg_args,
            )
        )
    total = g.tree(shares, combine, "total")
    return grid.run(g, total if finish is None else g.add("finish", finish, total))


def _target_agg_task(agg, partial, ia, y, per_anchor, agg_args):
    return agg(*partial, ia, y, *per_anchor, *agg_args)


def knn_target_statistic(
    rows: Rows,
    y,
    n_neighbors: int,
    agg,
    agg_args=(),
    per_anchor=(),
    anchors=None,
    combine=merge.add,
    kinds=None,
):
    """``combine_I agg(topk_J knn_tile(I, J), rows_I, y, per_anchor_I, *agg_args)``: hard
    neighbours for a regression target.

    Every candidate is in one class (``rows.n_classes == 1``): the tiles give
    each anchor its ``n_neighbors`` nearest rows in (distance, row index)
    order.  ``agg`` gets the anchors' row indices, the whole target ``y``
    (held once in the graph: a neighbour's target is ``y[idx]``) and its
    slice of each ``per_anchor`` array (one value per anchor, in the order of
    the anchors).  ``kinds``: as :func:`knn_statistic`.
    """
    kernel, params = knn.KERNEL, (1, n_neighbors)
    if kinds is not None and kinds.kind != distance.PLAIN:
        kernel = knn.GENERAL_KERNEL
        params = (1, n_neighbors, *kinds.params, _BY_DISTANCE, _NO_TARGET, 0.0)
    g = grid.graph(rows, "knn-target", per_row=n_neighbors * (rows.n_features + 2), sample=anchors)
    target = grid.hold_target(g, y)
    merged = grid.ordered(g, tile, kernel, g.local, *params, combine=merge.knn_combine)
    shares = []
    for i, (start, stop) in enumerate(g.anchors):
        ia = np.arange(start, stop) if anchors is None else anchors.index[start:stop]
        shares.append(
            g.add(
                "agg",
                _target_agg_task,
                agg,
                merged[i],
                ia,
                target,
                tuple(p[start:stop] for p in per_anchor),
                agg_args,
            )
        )
    return grid.run(g, g.tree(shares, combine, "total"))


# ---------------------------------------------------------------------------
# New anchors from the driver (predictions, leave-one-out)
# ---------------------------------------------------------------------------


def _concat_partials(parts):
    return type(parts[0])(*(np.concatenate(items) for items in zip(*parts)))


def anchor_partials(rows: Rows, kernel, Xa, ia, params, block=1024):
    """Per-anchor softmax partials of new anchors ``Xa`` against all training rows.

    ``ia`` are the anchors' global indices (a training row excludes itself;
    new points get negative indices).  Returns the merged partial of
    ``kernel`` (a :class:`~dmargin.engine._numba.TileKernel` of ``(m, s, v)``
    partials: :data:`LSE_KERNEL`, :data:`QLSE_KERNEL`) for every anchor -- small (anchors x classes
    [x features]) -- used for predictions and leave-one-out predictions.
    """
    Xa = np.ascontiguousarray(Xa, dtype=np.float64)
    ia = np.asarray(ia, dtype=np.int64)
    new = Anchors(Xa, np.zeros(ia.size, dtype=np.int64), ia)
    g = grid.graph(rows, "new-anchors", sample=new, anchor_rows=block)
    merged = grid.ordered(g, tile, kernel, g.local, *params, combine=merge.lse_combine)
    return grid.run(g, g.add("concat", _concat_partials, merged), blas_limit=kernel.blas)


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
    g = grid.graph(rows, "left-out-rows", per_row=k * (a + 2))
    merged = grid.ordered(g, tile, kernel, g.local, *params, combine=merge.lse_combine)
    blocks = [g.add("reduce", _reduce_task, reduce, m) for m in merged]
    return grid.run(g, g.add("concat", np.concatenate, blocks), blas_limit=kernel.blas)


def _new_rows_tile(Xa, Xc, yc, start_c, kernel, params):
    # New points get negative indices: never a training row's own.
    return tile(Xa, None, -1 - np.arange(Xa.shape[0]), Xc, yc, start_c, kernel, False, *params)


def _softmin_task(partial, weights):
    s = partial.s
    num = partial.v if weights is None else partial.v @ weights
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
        rows = prepare_rows(
            rows.X, rows.codes, rows.n_classes, use_dask=True, what="Predictions against"
        )
    g = grid.graph(rows, "predict")
    new = [(g.add("new", prepare, (X_new.name, i, 0)),) for i in range(X_new.numblocks[0])]
    merged = grid.ordered(g, _new_rows_tile, kernel, params, combine=merge.lse_combine, anchors=new)
    parts = [g.add("softmin", _softmin_task, m, weights) for m in merged]
    return grid.run(g, g.add("concat", np.concatenate, parts), collections=[X_new])


# ---------------------------------------------------------------------------
# A few rows from where they are
# ---------------------------------------------------------------------------


def _picked(X, codes, start, local):
    return np.asarray(X[local], dtype=np.float64), local + start


def _stack_picked(parts):
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def rows_at(rows: Rows, index) -> Anchors:
    """The rows ``index`` (sorted global indices) as :class:`~execution.Anchors`
    of one class: only those rows travel to the driver."""
    index = np.asarray(index, dtype=np.int64)
    if not rows.on_dask:
        return Anchors(np.ascontiguousarray(rows.X[index]), np.zeros(index.size, np.int64), index)
    g = grid.graph(rows, "rows-at")
    X, picked = grid.run(g, g.add("concat", _stack_picked, grid.picked(g, index, _picked)))
    return Anchors(X, np.zeros(picked.size, np.int64), picked)


def _apply_to_picked(parts, fn, args):
    return fn(_stack_picked(parts)[0], *args)


def summary_of_rows_at(rows: Rows, index, fn, *args):
    """``fn(X[index], *args)`` (``index`` sorted global row indices), computed
    where the rows are: only its result comes to the driver."""
    index = np.asarray(index, dtype=np.int64)
    if not rows.on_dask:
        return fn(np.asarray(rows.X[index], dtype=np.float64), *args)
    g = grid.graph(rows, "summary-of-rows-at")
    return grid.run(g, g.add("summary", _apply_to_picked, grid.picked(g, index, _picked), fn, args))


__all__ = [
    "CALL_WORK",
    "anchor_partials",
    "knn_statistic",
    "knn_target_statistic",
    "lse_statistic",
    "new_rows_softmin",
    "row_partials",
    "rows_at",
    "summary_of_rows_at",
    "tile",
]
