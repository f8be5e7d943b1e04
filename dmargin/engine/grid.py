"""The grid runner: how a statistic's tasks are laid over the row blocks.

A statistic says what its tiles compute and how their results merge; this
module lays the tasks out and decides the blocks and the threads.  The
grids (:mod:`dmargin.engine.execution` runs them, in-process or on dask):

- :func:`ordered` -- every anchor block against every candidate block, the
  tiles of an anchor block merged into its partial (soft and hard
  neighbours, a sample of anchors, new rows);
- :func:`symmetric` and :func:`sides` -- unordered pairs ``I <= J`` of the
  row blocks, each pair's tile serving the rows of both blocks (statistics
  symmetric in the pair: IMMIGRATE's, the SURF family's);
- :func:`per_block` -- one task per row block (histograms, linear machines,
  column summaries);
- :func:`chained` -- in-process, blocks of anchors in turn against every
  row, each tile adding to the last (the compact SURF rows).

Every task's key is a hash of the task itself (:meth:`Graph.add`): a
statistic never names a task by hand.  The block policy lives here too:
:func:`graph` cuts in-process anchor blocks from :data:`TILE_BUDGET`;
:func:`threaded_blocks` decides, in-process, whether a kernel that cannot
thread inside gets its tasks spread over threads; :func:`run` keeps BLAS to
one thread where the tasks themselves are the parallelism.
"""

from __future__ import annotations

import numpy as np

from ._numba import blas_single_thread, n_threads, use_threads
from .execution import TILE_BUDGET, Graph, Rows, local_bounds, split_bounds

#: In-process rows per task of the one-task-per-block passes (BLAS on each,
#: threads across).
LINEAR_BLOCK_ROWS = 65536
#: In-process pair-features of an ordered grid's tile at most (about a second of a
#: kernel on two threads): a pass over many rows reports its progress between tiles
#: every second or so, not once per memory budget's worth of anchors (minutes).
TILE_WORK = 4e9
#: The fewest anchors of such a tile (the kernels' threads share them in groups).
MIN_TILE_ANCHORS = 512
#: On dask, a sample's tile against a row block may do this much (seconds of one
#: core): 1,000 anchors against 100,000 x 51 rows are one tile, not two.  A row
#: block then feeds one task, and its rows are never copied to a second worker
#: for the other half of the anchors.
DASK_SAMPLE_TILE_WORK = 10 * TILE_WORK
#: Row blocks of the fewest such passes: with fewer, the sample's anchor blocks
#: are what runs in parallel, cut by :data:`TILE_WORK`.
MIN_ROW_BLOCKS = 8


def graph(
    rows: Rows,
    name: str,
    *,
    per_row=None,
    sample=None,
    candidates=None,
    anchor_rows=None,
    local_budget=TILE_BUDGET,
) -> Graph:
    """A :class:`Graph` over ``rows`` for one statistic.

    ``per_row``: the float64 values one anchor's partial holds; in-process
    the anchor blocks are cut so that a block's partial fits
    :data:`TILE_BUDGET` and its tile's pairs :data:`TILE_WORK` (on dask they
    are the row blocks, each cut by :data:`TILE_WORK` when its tiles would
    be longer).  ``sample`` (an
    :class:`~execution.Anchors`): that sample is the anchors, cut by the
    same budget (or into blocks of ``anchor_rows``); on dask over at least
    :data:`MIN_ROW_BLOCKS` row blocks, by :data:`DASK_SAMPLE_TILE_WORK`.  ``candidates``:
    in-process candidate blocks (default: all rows, one block).
    ``local_budget``: the bytes of an in-process block's partial, when less
    than :data:`TILE_BUDGET`.
    """
    anchors = None
    if anchor_rows is None and per_row is not None:
        budget = TILE_BUDGET if rows.on_dask else min(TILE_BUDGET, local_budget)
        anchor_rows = budget // (8 * per_row)
        # A tile's work bounded too (TILE_WORK), against the widest candidate block.
        blocks = rows.bounds if rows.on_dask else candidates or [(0, rows.n_samples)]
        widest = max((stop - start for start, stop in blocks), default=0)
        work = TILE_WORK
        if rows.on_dask and sample is not None and len(rows.bounds) >= MIN_ROW_BLOCKS:
            work = DASK_SAMPLE_TILE_WORK
        anchor_rows = min(
            anchor_rows, max(MIN_TILE_ANCHORS, int(work // max(1, widest * rows.n_features)))
        )
        if rows.on_dask and sample is None and rows.bounds:  # slices of the row blocks
            anchors = [
                (start + s, start + e)
                for start, stop in rows.bounds
                for s, e in local_bounds(stop - start, anchor_rows)
            ]
    if anchor_rows is not None and (sample is not None or not rows.on_dask):
        n = rows.n_samples if sample is None else sample.n_samples
        anchors = local_bounds(n, anchor_rows)
    return Graph(rows, name, anchors=anchors, candidates=candidates, sample=sample)


def threaded_blocks(rows: Rows, work, cost=1.0, *, per_thread=4, most=None, per_row=None):
    """In-process ``(threads, candidate blocks)`` for kernels that do not thread inside.

    When ``work`` (pair-features times ``cost``, :func:`_numba.use_threads`)
    pays for threads, the rows are cut into ``per_thread`` blocks a thread
    (at most ``most``), whose tasks run on threads level by level; else one
    block.  ``per_row``: float64 values a row's partial holds -- no block
    may exceed :data:`TILE_BUDGET`.  On dask: ``(1, None)``, the row blocks.
    """
    if rows.on_dask:
        return 1, None
    n = rows.n_samples
    threads = n_threads() if use_threads(work, cost) else 1
    parts = per_thread * threads if threads > 1 else 1
    if most is not None:
        parts = min(parts, most)
    if per_row is not None:
        parts = max(parts, -(-n // max(1, TILE_BUDGET // (8 * per_row))))
    return threads, split_bounds(n, parts)


def linear_blocks(rows: Rows):
    """Row blocks of a one-task-per-block pass: the dask blocks, or in-process
    slices of at most :data:`LINEAR_BLOCK_ROWS` rows."""
    if rows.on_dask:
        return None
    return split_bounds(rows.n_samples, max(1, -(-rows.n_samples // LINEAR_BLOCK_ROWS)))


def _extra(each, *index):
    return () if each is None else tuple(each(*index))


def ordered(g: Graph, tile, *args, combine, each=None, anchors=None, tag="tile"):
    """The merged partial of every anchor block: keys, one per anchor block.

    Anchor block ``i`` against candidate block ``j`` is the tile task
    ``tile(Xa, ya, ia, Xc, yc, start_c, *args, *each(i))``: ``ia`` the
    block's first row (every row an anchor) or a sample's row indices;
    ``each(i)`` adds the keys of anchor block ``i``'s earlier steps.  The
    tiles of an anchor block merge with ``combine`` (a tree).  ``anchors``:
    other anchor blocks than the graph's (new rows), as the argument tuples
    that replace ``(Xa, ya, ia)``.
    """
    anchors = [g.anchor(i) for i in range(len(g.anchors))] if anchors is None else anchors
    n_cand = len(g.candidates)
    return [
        g.tree(
            [
                g.tile(tag, tile, *anchor, *g.block(j), *args, *_extra(each, i))
                for j in range(n_cand)
            ],
            combine,
        )
        for i, anchor in enumerate(anchors)
    ]


def chained(g: Graph, tile, *args, each=None, tag="tile"):
    """The anchor blocks in turn against the one candidate block (in-process:
    every row), each tile given the previous tile's value (``None`` first):
    a running reduction that holds one block's partials at a time, for
    kernels that thread inside.  Returns the last tile's key.

    ``tile(Xa, ya, ia, Xc, yc, start_c, *args, *each(i), previous)``.
    """
    if len(g.candidates) != 1:
        raise ValueError("a chain of tiles runs against a single candidate block")
    previous = None
    for i in range(len(g.anchors)):
        previous = g.tile(tag, tile, *g.anchor(i), *g.block(0), *args, *_extra(each, i), previous)
    return previous


def ordered_tiles(g: Graph, tile, *args, each=None, tag="tile"):
    """The tile tasks of :func:`ordered`, unmerged: ``{(i, j): key}``
    (``each(i, j)``: the extra arguments of the tile ``(i, j)``)."""
    return {
        (i, j): g.tile(tag, tile, *g.anchor(i), *g.block(j), *args, *_extra(each, i, j))
        for i in range(len(g.anchors))
        for j in range(len(g.candidates))
    }


def symmetric(g: Graph, tile, *args, each=None, tag="tile"):
    """Tile tasks over unordered pairs ``i <= j`` of the row blocks: ``{(i, j): key}``.

    ``tile(Xp, yp, start_p, Xq, yq, start_q, *args, *each(i, j))``; a tile
    returns both blocks' partials (:func:`sides`) or one value for the pair.
    """
    return {
        (i, j): g.tile(tag, tile, *g.block(i), *g.block(j), *args, *_extra(each, i, j))
        for i, j in g.symmetric()
    }


def _side(pair, side):
    return pair[side]


def sides(g: Graph, tiles, combine, *, take=_side):
    """Per row block: its side of every pair it is in, merged with ``combine``.

    ``take(pair, side)`` is a pair tile's partial of its first (0) or second
    (1) block (default ``pair[side]``; the diagonal pair's kernel folds both
    of its sides into the first).
    """
    n = len(g.candidates)
    return [
        g.tree(
            [g.add("side", take, tiles[min(i, j), max(i, j)], int(j < i)) for j in range(n)],
            combine,
        )
        for i in range(n)
    ]


def per_block(g: Graph, task, *args, fields=1, each=None, tag="block", tile=True):
    """``task(*block_j[:fields], *args, *each(j))`` for every candidate block ``j``: keys.

    ``fields``: 1 the rows, 2 the rows and their class codes, 3 also the
    block's first row.  ``tile``: count the tasks as tiles (progress).
    """
    add = g.tile if tile else g.add
    return [
        add(tag, task, *g.block(j)[:fields], *args, *_extra(each, j))
        for j in range(len(g.candidates))
    ]


def picked(g: Graph, index, task, *args, each=None, tag="take"):
    """``task(X_b, codes_b, start_b, local, *args, *each(b))`` for every candidate
    block ``b`` holding some of the rows ``index`` (sorted global indices),
    ``local`` their indices in the block: keys (only those rows travel)."""
    keys = []
    for b, (start, stop) in enumerate(g.candidates):
        local = index[(index >= start) & (index < stop)] - start
        if local.size:
            keys.append(g.add(tag, task, *g.block(b), local, *args, *_extra(each, b)))
    return keys


def hold_target(g: Graph, target):
    """A per-row target as one key of the graph, held once (``None`` stays ``None``)."""
    if target is None:
        return None
    return g.hold("target", np.ascontiguousarray(target, dtype=np.float64))


def run(g: Graph, key, *, threads=1, blas_limit=False, keep=None, collections=()):
    """The value of ``key`` (:meth:`Graph.compute`).

    ``blas_limit``: in-process, BLAS runs on one thread for the whole graph
    (the tasks, or the kernels, are the parallelism); on dask each task that
    calls BLAS limits itself.
    """
    if g.local and blas_limit:
        with blas_single_thread():
            return g.compute(key, threads=threads, keep=keep, collections=collections)
    return g.compute(key, threads=threads, keep=keep, collections=collections)


__all__ = [
    "LINEAR_BLOCK_ROWS",
    "chained",
    "graph",
    "hold_target",
    "linear_blocks",
    "ordered",
    "ordered_tiles",
    "per_block",
    "picked",
    "run",
    "sides",
    "symmetric",
    "threaded_blocks",
]
