"""Where tiles run: one task graph over row blocks, run in-process or by dask.

The only module of the engine that imports dask.  A statistic is written
once, as a :class:`Graph` of tasks over the row blocks of :class:`Rows`,
laid out by the grid runner (:mod:`dmargin.engine.grid`) -- tile tasks over
a *grid* of blocks, tree reductions (:meth:`Graph.tree`), small per-block
steps -- and the same graph runs two ways:

- **in-process** (numpy input, no active ``distributed.Client``): the rows
  are numpy; anchor blocks are cut from a memory budget and every candidate
  block is all rows, so a tile kernel sees all candidates in one call and
  threads inside (:func:`dmargin.engine._numba.pick`).  Kernels that cannot
  thread inside (the BLAS-bound quadratic ones) get their tasks spread over
  threads instead, level by level, so the sums never depend on timing.
- **dask** (dask input, or an active client): ``X`` is persisted once as row
  blocks; anchor and candidate blocks are those blocks; the graph's tasks
  run on the workers (serial kernels: dask runs one task per core) and only
  the small result comes back.

The grids: ``ordered`` (every anchor block against every candidate block),
``symmetric`` (unordered pairs ``I <= J`` of one block set, for statistics
symmetric in the pair), ``blocks`` (one task per row block), and new anchors
from the driver against every candidate block.

Tile sizes come from a memory budget (:data:`TILE_BUDGET` bytes for the
largest partial of one task), never from constants, and no array ever has
one axis per sample twice (no N x N).

In-process the tasks run in :mod:`dmargin.engine.local` (which also stops
them on Ctrl-C); on dask here.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .._cluster import check_worker_memory
from .._dask import (
    active_client,
    client_for,
    compute,
    is_dask_collection,
    persist_spread,
    persists_lazily,
)
from ..progress import step_fraction
from .local import (  # noqa: F401  (re-exported: where a graph's tiles look for a stop)
    FitInterrupted,
    count_interrupt,
    interrupt_count,
    run_local,
    stop_if_interrupted,
)

#: Bytes one tile's partial may take.
TILE_BUDGET = 64 * 2**20
#: Fan-in of the tree reductions.
SPLIT_EVERY = 4
#: Row blocks a numpy input is cut into when it is sent to a cluster.
TARGET_BLOCKS = 8
#: Least pair-features per tile task for numpy input sent to a cluster: each
#: task costs the scheduler about a millisecond, so small data gets fewer,
#: larger blocks (N = 200 is one block, not 64 tiny tiles).
MIN_TILE_WORK = 2.5e7


TILE_MARK = "tiletask"  # in the name of every tile task's key (:meth:`Graph.tile`)


def is_tile_key(key) -> bool:
    """Whether ``key`` names a :class:`Graph`'s tile (rows in, a partial out)."""
    name = key[0] if isinstance(key, tuple) else key
    return isinstance(name, str) and name.startswith("dmargin-") and f"-{TILE_MARK}" in name


def rows_per_block(n_features: int, n_classes: int, per_row_extra: int = 0) -> int:
    """Anchor rows per tile so that one (m, s, v) partial fits the budget."""
    per_row = 8 * (n_classes * (n_features + 2) + per_row_extra)
    return max(1, TILE_BUDGET // per_row)


@dataclass
class Rows:
    """Training rows as the engine sees them.

    ``X`` (N x A) and ``codes`` (N,) are numpy (in-process) or dask arrays
    with identical row blocks and a single column block (dask); ``bounds``
    are the blocks' ``(start, stop)``.  ``X`` is float64 for the pairwise
    statistics and bin codes for the histograms.
    """

    X: object
    codes: object
    n_classes: int
    on_dask: bool
    bounds: list = field(default_factory=list)
    #: Lazy dask rows read from their source by each graph (not persisted).
    streamed: bool = False
    #: Class counts per block (n_blocks x K) when known before any pass here.
    block_counts: np.ndarray | None = None
    #: The fit's anchor draw when the door made it (:class:`~sampling.Draw`), else None.
    draw: object = None

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]


def use_dask_for(X, use_dask=None) -> bool:
    """Dask when ``X`` is a dask collection or a client is active (``None``)."""
    if use_dask is None:
        return is_dask_collection(X) or active_client() is not None
    return use_dask


def prepare_rows(
    X,
    codes,
    n_classes: int,
    *,
    use_dask: bool | None = None,
    block=None,
    dtype=np.float64,
    max_rows=None,
    min_rows=None,
    per_row_bytes=None,
    what="A fit on",
    persist=True,
    block_counts=None,
    draw=None,
) -> Rows:
    """Put ``X`` and ``codes`` where the fit will read them, once.

    In-process: contiguous numpy.  Dask: persisted row blocks, each at most
    ``max_rows`` rows (default: the tile budget's anchor rows); dask input
    keeps its row chunks below that, numpy input sent to a cluster is cut
    into about :data:`TARGET_BLOCKS` blocks of at least ``min_rows`` rows
    (default: enough for :data:`MIN_TILE_WORK` per tile).  ``block(X_block) -> array``
    transforms every block where it lives (binning), giving ``dtype``.
    ``persist=False`` (dask) leaves the blocks lazy: a fit that reads every row
    once streams them from their source (a Parquet file) through its tasks,
    and the workers never hold all rows at once.  ``block_counts``: the class
    counts of the blocks of dask ``X``, kept when the blocks are.  ``draw``: the
    fit's anchor draw made at the door (:class:`~sampling.Draw`).  Without
    ``block``, ``dtype`` is the rows' (``float32`` rows for the kernels that
    read them, else ``float64``).
    """
    n, a = X.shape
    rows_dtype = dtype if block is None else np.float64
    if not use_dask_for(X, use_dask):
        X = np.ascontiguousarray(X, dtype=rows_dtype)
        X = X if block is None else block(X)
        return Rows(X, np.asarray(codes, dtype=np.int64), n_classes, False, [(0, n)], draw=draw)
    import dask.array as da

    cap = rows_per_block(a, n_classes) if max_rows is None else max_rows
    if is_dask_collection(X):
        # The cap bounds an anchor block's partials; streamed rows are only
        # candidates, and keep the blocks they come in (a Parquet row group).
        chunks = (
            X.chunks[0]
            if max(X.chunks[0]) <= cap or not persist
            else split_chunks(X.chunks[0], cap)
        )
    else:
        min_rows = math.sqrt(MIN_TILE_WORK / max(a, 1)) if min_rows is None else min_rows
        n_blocks = max(1, min(TARGET_BLOCKS, int(n // min_rows)))
        chunks = min(cap, max(1, math.ceil(n / n_blocks)))
    source_chunks = X.chunks[0] if is_dask_collection(X) else None
    X = da.asarray(X).astype(rows_dtype).rechunk((chunks, a))
    if block_counts is not None and X.chunks[0] != source_chunks:
        block_counts = None
    if block is not None:
        X = X.map_blocks(block, dtype=dtype)
    codes = da.asarray(codes).astype(np.int64).rechunk((X.chunks[0],))
    # A task holds its partial, an anchor and a candidate block (and the
    # candidate block's codes); the persisted rows are spread over the workers.
    item = np.dtype(dtype).itemsize
    row = a * item + 8 if per_row_bytes is None else per_row_bytes
    # A binning task holds one float block and its codes, a tile task its partial too.
    task = (0 if block is not None else TILE_BUDGET) + 3 * max(X.chunks[0]) * (a + 1) * 8
    check_worker_memory(
        client_for([X]), n * row if persist else 0, task, f"{what} {n} rows x {a} features"
    )
    if persist:
        X, codes = persist_spread(X, codes)
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).tolist()
    return Rows(
        X,
        codes,
        n_classes,
        True,
        list(itertools.pairwise(edges)),
        streamed=not persist,
        block_counts=block_counts,
        draw=draw,
    )


def split_chunks(chunks, cap):
    """Row chunks of at most ``cap`` rows, each block split into near-equal parts:
    no new block spans two old ones (on Spark, two partitions)."""
    out = []
    for c in chunks:
        parts = max(1, -(-int(c) // int(cap)))
        out += [c // parts + (i < c % parts) for i in range(parts)]
    return tuple(out)


def row_blocks(X) -> Rows:
    """``X`` (numpy or dask) as row blocks, without persisting it (one-pass reads)."""
    if not is_dask_collection(X):
        return Rows(np.asarray(X), None, 0, False, [(0, X.shape[0])])
    X = X.rechunk({1: -1})
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).tolist()
    return Rows(X, None, 0, True, list(itertools.pairwise(edges)))


@dataclass
class Anchors:
    """A sample of training rows scoring against all rows (``n_anchors``).

    ``X`` (m x A) and ``codes`` are numpy on the driver: small, placed in the
    graph of every iteration; ``index`` are the rows' global indices (a row
    never counts itself as its own neighbour).
    """

    X: np.ndarray
    codes: np.ndarray
    index: np.ndarray

    @property
    def n_samples(self):
        return self.X.shape[0]


def local_bounds(n, rows_per_task):
    """Anchor blocks of at most ``rows_per_task`` rows, nearly equal: tasks of
    one size share the workers evenly (1,000 anchors at most 800 a task are
    two tasks of 500, not of 800 and 200, which a second worker would wait on)."""
    step = max(1, int(rows_per_task))
    return [(int(a), int(b)) for a, b in split_bounds(n, -(-n // step))]


def split_bounds(n, parts):
    """``parts`` nearly equal blocks of ``range(n)``."""
    edges = np.linspace(0, n, min(n, parts) + 1).astype(int)
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


def task_token(*parts) -> str:
    """A hash of ``parts`` by content, as dask names its own tasks.

    Functions hash by reference when importable, else by value (a closure
    with its cells); arrays by their bytes (only small arrays reach a task:
    rows are passed by their keys); keys of tasks by key.  An argument dask
    cannot hash deterministically gets a random token: a key of its own that
    no other task can share.
    """
    from dask.base import tokenize

    return tokenize(*parts)


# ---------------------------------------------------------------------------
# Task bodies (module level so that they pickle by reference)
# ---------------------------------------------------------------------------


def _combine_task(combine, parts):
    return combine(parts)


def _slice(arr, start, stop):
    return arr[start:stop]


# ---------------------------------------------------------------------------
# The graph
# ---------------------------------------------------------------------------


class Graph:
    """Tasks over the row blocks of :class:`Rows`, run in-process or by dask.

    Tasks are dask-style tuples ``(fn, *args)``; an argument that is a key of
    the graph (or a list of keys) is replaced by its value.  A task's key is
    a hash of the task itself (:meth:`add`), never of a list of its inputs
    that someone keeps by hand.

    ``anchors`` are the anchor blocks (default: the rows' blocks; in-process,
    statistics pass budget-sized blocks), ``candidates`` the candidate blocks
    (in-process: all rows, one block).  ``sample`` (an :class:`Anchors`)
    makes the anchors that sample instead, cut into ``anchors`` blocks of
    its rows.
    """

    def __init__(self, rows: Rows, name: str, *, anchors=None, candidates=None, sample=None):
        self.rows = rows
        self.sample = sample
        self.local = not rows.on_dask
        # Readable only: a task's uniqueness comes from its own key (:meth:`add`).
        self.name = f"dmargin-{name}"
        self.dsk = {}
        self.anchors = rows.bounds if anchors is None else anchors
        self._tiles = set()
        self._sliced = {}
        if self.local:
            self.dsk[(f"{self.name}-X",)] = rows.X
            self.dsk[(f"{self.name}-codes",)] = rows.codes
            self._cand = [(0, rows.n_samples)] if candidates is None else candidates
        else:
            self._cand = rows.bounds

    # -- keys of the row blocks ------------------------------------------------
    @property
    def candidates(self):
        """``(start, stop)`` of the candidate blocks."""
        return self._cand

    def _rows_of(self, bounds):
        """Keys of the rows ``bounds`` in-process: all rows, or a slice task."""
        if bounds == (0, self.rows.n_samples):
            return (f"{self.name}-X",), (f"{self.name}-codes",)
        if bounds not in self._sliced:
            self._sliced[bounds] = (
                self.add("x", _slice, (f"{self.name}-X",), *bounds),
                self.add("y", _slice, (f"{self.name}-codes",), *bounds),
            )
        return self._sliced[bounds]

    def block(self, i):
        """Keys of candidate block ``i``: ``(X, codes, start)``."""
        if self.local:
            return (*self._rows_of(tuple(self._cand[i])), self._cand[i][0])
        codes = None if self.rows.codes is None else (self.rows.codes.name, i)  # row_blocks
        return (self.rows.X.name, i, 0), codes, self._cand[i][0]

    def anchor(self, i):
        """Anchor block ``i``: ``(X, codes, start)`` keys, or for a sample the
        rows themselves and their global indices."""
        if self.sample is not None:
            # Held once in the graph; every tile task of the block refers to it.
            s, e = self.anchors[i]
            return (
                self.hold("anchors", self.sample.X[s:e]),
                self.sample.codes[s:e],
                self.sample.index[s:e],
            )
        if self.local:
            return (*self._rows_of(tuple(self.anchors[i])), self.anchors[i][0])
        # On dask a row block, or a slice of one where the block's tiles would be long.
        start, stop = self.anchors[i]
        b = next(b for b, (s, e) in enumerate(self.rows.bounds) if s <= start < e)
        X, codes, first = self.block(b)
        if (start, stop) == tuple(self.rows.bounds[b]):
            return X, codes, first
        lo, hi = start - first, stop - first
        return (
            self.add("x", _slice, X, lo, hi),
            None if codes is None else self.add("y", _slice, codes, lo, hi),
            start,
        )

    # -- building ----------------------------------------------------------------
    def add(self, tag, *task):
        """Add a task ``(fn, *args)``; returns its key, derived from the task.

        The key hashes the function and every argument (arrays by value,
        keys of other tasks by key, so by what those compute in turn): two
        tasks that compute different things never share a key, on one
        scheduler across fits and threads, and two that compute the same
        thing always do.
        """
        key = (f"{self.name}-{tag}-{task_token(*task)}", 0)
        self.dsk[key] = task
        return key

    def hold(self, tag, value):
        """Place ``value`` (an array from the driver) in the graph once; returns
        its key, derived from the value, for the tasks that read it."""
        key = (f"{self.name}-{tag}-{task_token(value)}", 0)
        self.dsk[key] = value
        return key

    def tile(self, tag, *task):
        """Add a tile task: counted by the progress events, named as a tile."""
        key = self.add(f"{tag}-{TILE_MARK}", *task)
        self._tiles.add(key)
        return key

    def tree(self, keys, combine, tag="merge"):
        """Tree-reduce ``keys`` with ``combine(list) -> same kind`` (fan-in
        :data:`SPLIT_EVERY`, the same tree in both executions)."""
        keys = list(keys)
        while len(keys) > 1:
            keys = [
                self.add(tag, _combine_task, combine, keys[i : i + SPLIT_EVERY])
                if len(keys[i : i + SPLIT_EVERY]) > 1
                else keys[i]
                for i in range(0, len(keys), SPLIT_EVERY)
            ]
        return keys[0]

    def ordered(self):
        """``(i, j)`` for every anchor block ``i`` and candidate block ``j``."""
        return [(i, j) for i in range(len(self.anchors)) for j in range(len(self._cand))]

    def symmetric(self):
        """Unordered pairs ``i <= j`` of the candidate blocks."""
        n = len(self._cand)
        return [(i, j) for i in range(n) for j in range(i, n)]

    # -- running -----------------------------------------------------------------
    def compute(self, key, *, threads=1, keep=None, collections=()):
        """The value of ``key`` (numpy, small).

        ``threads`` (in-process only): run independent tasks on that many
        threads.  ``keep``: keys of per-block arrays to keep where they are
        (``(keys, chunks, dtype)``); returns ``(value, kept)`` with ``kept`` a
        numpy array (in-process) or a persisted dask array.  ``collections``:
        dask collections the graph reads besides the rows.
        """
        if self.local:
            wanted = {key} if keep is None else {key, *keep[0]}
            values = run_local(self.dsk, self._tiles, threads, wanted)
            if keep is None:
                return values[key]
            kept = (
                values[keep[0][0]]
                if len(keep[0]) == 1
                else np.concatenate([values[k] for k in keep[0]])
            )
            return values[key], kept
        try:
            return self._compute_dask(key, keep, collections)
        except KeyboardInterrupt:
            # dask's threads finish the tasks they hold: their tiles stop at the
            # next kernel call (a cluster's futures are cancelled by the wait).
            count_interrupt()
            raise

    def _compute_dask(self, key, keep, collections):
        import dask
        import dask.array as da
        from dask.delayed import Delayed
        from dask.highlevelgraph import HighLevelGraph

        deps = [c for c in (self.rows.X, self.rows.codes, *collections) if c is not None]
        # Layer and kept blocks are named from the keys they hold, as the tasks are.
        layer_name = f"{self.name}-{task_token(key, keep and keep[0])}"
        if keep is None:
            hlg = HighLevelGraph.from_collections(layer_name, self.dsk, dependencies=deps)
            with _TileProgress(self._tiles):
                return compute(
                    Delayed(key, hlg, layer=layer_name), what=f"dmargin graph {self.name}"
                )[0]
        keys, chunks, dtype = keep
        # The kept blocks get keys of their own dask array (name, i).
        kept_name = f"{layer_name}-kept"
        layer = {(kept_name, i): k for i, k in enumerate(keys)}
        hlg = HighLevelGraph.from_collections(layer_name, {**self.dsk, **layer}, dependencies=deps)
        arr = da.Array(hlg, kept_name, chunks=chunks, dtype=dtype)
        if persists_lazily():  # Spark: the kept blocks are recomputed where they are read
            return compute(Delayed(key, hlg, layer=layer_name), what=f"dmargin graph {self.name}")[
                0
            ], arr
        with _TileProgress(self._tiles):
            arr, value = dask.persist(
                arr, Delayed(key, hlg, layer=layer_name), optimize_graph=False
            )
        return compute(value, what=f"dmargin graph {self.name}")[0], arr


class _TileProgress:
    """Progress events as tile tasks finish under dask's local schedulers.

    (On a ``distributed`` cluster the dashboard shows the tasks; the fit's
    steps still come as events.)
    """

    def __init__(self, tiles):
        self.tiles, self.done, self.cb = tiles, 0, None

    def __enter__(self):
        from dask.callbacks import Callback

        if self.tiles:
            self.cb = Callback(posttask=self._posttask)
            self.cb.__enter__()
        return self

    def _posttask(self, key, result, dsk, state, worker_id):
        if key in self.tiles:
            self.done += 1
            step_fraction(self.done, len(self.tiles))

    def __exit__(self, *exc):
        if self.cb is not None:
            self.cb.__exit__(*exc)


# ---------------------------------------------------------------------------
# New rows (predictions): lazy row blocks, one task per block
# ---------------------------------------------------------------------------


def new_row_blocks(X, n_features, names=None, who="the estimator"):
    """Dask rows to predict as a dask array of one column block (lazy).

    A dask DataFrame keeps its partitions (row counts may stay unknown: each
    block is mapped on its own); its columns must be ``names`` when the fit
    saw names.  Only metadata is read here; each block is checked for
    non-finite values when it is computed (:func:`finite_rows`).
    """
    import dask.array as da

    if is_dask_collection(X) and hasattr(X, "columns"):
        columns = [str(c) for c in X.columns]
        if names is not None and columns != [str(c) for c in names]:
            raise ValueError(
                f"The dask DataFrame's columns {columns} are not the columns seen "
                f"in fit {list(names)}; select and order them as in fit."
            )
        X = X.to_dask_array()
    elif not isinstance(X, da.Array):
        raise TypeError(f"Expected a dask array or DataFrame, got {type(X).__name__}.")
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(
            f"X has shape {X.shape}, but {who} was fitted with {n_features} "
            "features (a 2-D array of that many columns is expected)."
        )
    X = X.rechunk({1: -1}) if X.numblocks[1] > 1 else X
    return X.map_blocks(finite_rows, dtype=np.float64)


def finite_rows(X):
    """A block of new rows as float64, or an error naming the first non-finite column."""
    X = np.asarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        bad = (~np.isfinite(X)).sum(axis=0)
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"X contains NaN or infinite values in column {j} ({int(bad[j])} rows "
            "of one block). Impute them (e.g. sklearn.impute.SimpleImputer in a "
            "Pipeline) or drop those rows before predicting."
        )
    return X


def map_row_blocks(fn, X, *args, y=None, n_cols=None, dtype=np.float64):
    """``fn(X_block[, y_block], *args)`` for every row block of a dask ``X``: lazy.

    The result has one row per row of ``X`` (``n_cols`` columns, or 1-D for
    ``None``); ``y`` (dask, 1-D) is read block by block beside ``X``.  Nothing
    is computed: this is a dask array over ``X``'s blocks, as dask-ml's
    ``ParallelPostFit`` returns.
    """
    import dask.array as da

    if y is not None:
        y = y if isinstance(y, da.Array) else y.to_dask_array()
        if y.numblocks[0] != X.numblocks[0] or (
            not any(math.isnan(c) for c in X.chunks[0] + y.chunks[0]) and y.chunks[0] != X.chunks[0]
        ):
            if any(math.isnan(c) for c in X.chunks[0] + y.chunks[0]):
                raise ValueError(
                    "X and y have row blocks of unknown, different sizes; build "
                    "them from one DataFrame, or call compute_chunk_sizes()."
                )
            y = y.rechunk((X.chunks[0],))
    meta = np.empty((0,) if n_cols is None else (0, 0), dtype=dtype)
    out, new = ("i", None) if n_cols is None else ("ik", {"k": n_cols})
    pairs = [X, "ij"] + ([] if y is None else [y, "i"])
    for a in args:
        pairs += [a, None]
    return da.blockwise(fn, out, *pairs, new_axes=new, concatenate=True, dtype=dtype, meta=meta)
