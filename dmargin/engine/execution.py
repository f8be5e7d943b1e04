"""Where tiles run: in-process, or as dask tasks over persisted row blocks.

The only module of the engine that imports dask.  An algorithm asks for one
statistic per iteration -- a sum over anchor blocks of an ``*_agg`` applied to
the merge over candidate blocks of a tile kernel -- and gets a small numpy
result back.  Two executions give the same numbers up to floating-point
reassociation:

- **in-process** (numpy input, no active ``distributed.Client``): one call of
  the threaded kernel per anchor block against all candidates; no graph.
- **dask** (dask input, or an active client): ``X`` is persisted once as row
  blocks; each iteration builds one graph of (anchor block x candidate
  block) tile tasks, tree-reduces the partials of each anchor block over the
  candidate blocks (``split_every``), aggregates each anchor block, and
  tree-reduces those to one small array computed back on the driver.

IMMIGRATE's quadratic statistic visits *pairs* of row blocks instead
(:func:`quad_statistic`): its distances are symmetric in the pair, so each
unordered pair is computed once for both of its anchors.

Tile sizes come from a memory budget (:data:`TILE_BUDGET` bytes for the
largest partial of one task), never from constants, and no array ever has
one axis per sample twice (no N x N).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .._compat import active_client, check_worker_memory, client_for, compute, is_dask_collection
from ..progress import step_fraction
from . import merge, tiles

#: Bytes one tile's partial may take.
TILE_BUDGET = 64 * 2**20
#: Fan-in of the tree reductions.
SPLIT_EVERY = 4
#: Row blocks a numpy input is cut into when it is sent to a cluster.
_TARGET_BLOCKS = 8
#: Least pair-features per tile task for numpy input sent to a cluster: each
#: task costs the scheduler about a millisecond, so small data gets fewer,
#: larger blocks (N = 200 is one block, not 64 tiny tiles).
_MIN_TILE_WORK = 2.5e7

def rows_per_block(n_features: int, n_classes: int, per_row_extra: int = 0) -> int:
    """Anchor rows per tile so that one (m, s, v) partial fits the budget."""
    per_row = 8 * (n_classes * (n_features + 2) + per_row_extra)
    return max(1, TILE_BUDGET // per_row)


@dataclass
class Rows:
    """Training rows as the engine sees them.

    ``X`` is float64 of shape (N, A) and ``codes`` int64 class codes; both are
    numpy (in-process) or dask arrays persisted with identical row blocks and
    a single column block (dask).
    """

    X: object
    codes: object
    n_classes: int
    on_dask: bool
    bounds: list = field(default_factory=list)

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]


def prepare_rows(X, codes, n_classes: int, *, use_dask: bool | None = None) -> Rows:
    """Persist ``X`` and ``codes`` once, blocked for the tile grid.

    ``use_dask=None`` picks dask when ``X`` is a dask array or a client is
    active.  Dask input keeps its row chunks unless one exceeds the budget.
    """
    if use_dask is None:
        use_dask = is_dask_collection(X) or active_client() is not None
    if not use_dask:
        return Rows(np.ascontiguousarray(X, dtype=np.float64), np.asarray(codes, dtype=np.int64),
                    n_classes, False, [(0, X.shape[0])])
    import dask
    import dask.array as da

    n, a = X.shape
    cap = rows_per_block(a, n_classes)
    if is_dask_collection(X):
        chunks = X.chunks[0]
        if max(chunks) > cap:
            chunks = cap
    else:
        min_rows = math.sqrt(_MIN_TILE_WORK / max(a, 1))
        n_blocks = max(1, min(_TARGET_BLOCKS, int(n // min_rows)))
        chunks = min(cap, max(1, math.ceil(n / n_blocks)))
    X = da.asarray(X).astype(np.float64).rechunk((chunks, a))
    codes = da.asarray(codes).astype(np.int64).rechunk((X.chunks[0],))
    # A tile task holds its partial, an anchor and a candidate block (and the
    # candidate block's codes); the persisted rows are spread over the workers.
    block = max(X.chunks[0]) * (a + 1) * 8
    check_worker_memory(client_for([X]), n * (a + 1) * 8, TILE_BUDGET + 3 * block,
                        f"A fit on {n} rows x {a} features")
    X, codes = dask.persist(X, codes)
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).tolist()
    return Rows(X, codes, n_classes, True, list(zip(edges[:-1], edges[1:])))


# ---------------------------------------------------------------------------
# Task bodies (module level so that they pickle by reference)
# ---------------------------------------------------------------------------


def _tile_task(kernel, Xa, start_a, Xc, yc, start_c, *params):
    ia = np.arange(start_a, start_a + Xa.shape[0])
    ic = np.arange(start_c, start_c + Xc.shape[0])
    return tiles.KERNELS[kernel][0](Xa, ia, Xc, yc, ic, *params)


def _call(fn, *args):
    return fn(*args)


def _sum(parts):
    return functools.reduce(np.add, parts)


def _combine_task(combine, parts):
    return combine(parts)


def _pad_v(partial):
    """(m, s) from the two-pass kernel as an (m, s, None) partial."""
    return partial[0], partial[1], None


# ---------------------------------------------------------------------------
# Graph construction
# ---------------------------------------------------------------------------


class _Graph:
    """A dict graph over the persisted row blocks of :class:`Rows`."""

    def __init__(self, rows: Rows, name: str, *token, split_every=SPLIT_EVERY):
        from dask.base import tokenize

        self.rows = rows
        # Same inputs, same keys (deterministic graphs, as dask's own reductions).
        self.name = f"dmargin-{name}-{tokenize(rows.X.name, rows.codes.name, *token)}"
        self.split_every = split_every
        self.dsk = {}
        self._n = itertools.count()

    def key(self, tag):
        return (f"{self.name}-{tag}", next(self._n))

    def add(self, tag, *task):
        k = self.key(tag)
        self.dsk[k] = task
        return k

    def tree(self, keys, combine, tag):
        """Tree-reduce ``keys`` with ``combine(list) -> same kind``."""
        keys = list(keys)
        while len(keys) > 1:
            keys = [
                self.add(tag, _combine_task, combine, keys[i : i + self.split_every])
                if len(keys[i : i + self.split_every]) > 1 else keys[i]
                for i in range(0, len(keys), self.split_every)
            ]
        return keys[0]

    def x(self, i):
        return (self.rows.X.name, i, 0)

    def y(self, i):
        return (self.rows.codes.name, i)

    def tile_row(self, kernel, i, params, tag):
        """Tile tasks of anchor block ``i`` against every candidate block."""
        start_a = self.rows.bounds[i][0]
        return [
            self.add(tag, _tile_task, kernel, self.x(i), start_a, self.x(j), self.y(j), start_c,
                     *params)
            for j, (start_c, _) in enumerate(self.rows.bounds)
        ]

    def compute(self, key):
        from dask.delayed import Delayed
        from dask.highlevelgraph import HighLevelGraph

        hlg = HighLevelGraph.from_collections(self.name, self.dsk,
                                              dependencies=[self.rows.X, self.rows.codes])
        return compute(Delayed(key, hlg, layer=self.name), what=f"dmargin graph {self.name}")[0]


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------


#: Below this many pair-features a tile runs on one thread: waking a thread
#: pool costs more than it saves on small work.
_PARALLEL_MIN_WORK = 5e7


def _kernel(name, work):
    serial, parallel = tiles.KERNELS[name]
    return parallel if work >= _PARALLEL_MIN_WORK else serial


def _local_blocks(rows: Rows, per_row: int):
    step = max(1, TILE_BUDGET // (8 * per_row))
    ic = np.arange(rows.n_samples)
    for start in range(0, rows.n_samples, step):
        stop = min(start + step, rows.n_samples)
        yield start, stop, np.arange(start, stop), ic


def lse_statistic(rows: Rows, w, sigma, agg, agg_args=(), anchor_weight=None, mode="auto",
                  split_every=SPLIT_EVERY):
    """``sum_I agg(merge_J lse_tile(I, J), y_I, weight_I, *agg_args)``.

    ``agg(m, s, v, ya, weight, *agg_args)`` returns a small array (the anchor
    block's share).  ``mode="two-pass"`` instead runs pass 1 (log-normalisers
    per anchor and class), ``agg`` must then be a coefficient function
    ``coef(m, s, ya, weight, *agg_args) -> (log_z, coef)`` and pass 2 sums the
    pair coefficients straight into the statistic -- for statistics too large
    to carry per anchor.  ``"auto"`` is the one-pass merge.
    """
    n, a, k = rows.n_samples, rows.n_features, rows.n_classes
    w = np.asarray(w, dtype=np.float64)
    weight = np.full(n, 1.0 / n) if anchor_weight is None else np.asarray(anchor_weight, float)
    two_pass = mode == "two-pass"
    if not rows.on_dask:
        total = 0.0
        blocks = list(_local_blocks(rows, k * (a + 2)))
        for b, (start, stop, ia, ic) in enumerate(blocks, 1):
            Xa, ya = rows.X[start:stop], rows.codes[start:stop]
            work = (stop - start) * n * a
            if two_pass:
                m, s = _kernel("logz", work)(Xa, ia, rows.X, rows.codes, ic, w, sigma, k)
                log_z, coef = agg(m, s, ya, weight[start:stop], *agg_args)
                part = _kernel("pair_sum", work)(Xa, ia, rows.X, rows.codes, ic, w, sigma,
                                                 log_z, coef)
            else:
                m, s, v = _kernel("lse", work)(Xa, ia, rows.X, rows.codes, ic, w, sigma, k)
                part = agg(m, s, v, ya, weight[start:stop], *agg_args)
            total = total + part
            step_fraction(b, len(blocks))
        return total

    g = _Graph(rows, "lse", w, sigma, agg.__name__, agg_args, weight, mode,
               split_every=split_every)
    shares = []
    for i, (start, stop) in enumerate(rows.bounds):
        wi = weight[start:stop]
        if two_pass:
            parts = [g.add("pad", _pad_v, t) for t in g.tile_row("logz", i, (w, sigma, k), "logz")]
            merged = g.tree(parts, merge.lse_combine, "merge")
            coef = g.add("coef", _coef_task, agg, merged, g.y(i), wi, agg_args)
            pair_keys = [
                g.add("pair", _pair_task, g.x(i), start, g.x(j), g.y(j), sc, w, sigma, coef)
                for j, (sc, _) in enumerate(rows.bounds)
            ]
            shares.append(g.tree(pair_keys, _sum, "sum"))
        else:
            merged = g.tree(g.tile_row("lse", i, (w, sigma, k), "tile"), merge.lse_combine, "merge")
            shares.append(g.add("agg", _agg_task, agg, merged, g.y(i), wi, agg_args))
    return g.compute(g.tree(shares, _sum, "total"))


def _agg_task(agg, partial, ya, weight, agg_args):
    m, s, v = partial
    return agg(m, s, v, ya, weight, *agg_args)


def _coef_task(agg, partial, ya, weight, agg_args):
    return agg(partial[0], partial[1], ya, weight, *agg_args)


def _pair_task(Xa, start_a, Xc, yc, start_c, w, sigma, coef):
    log_z, c = coef
    ia = np.arange(start_a, start_a + Xa.shape[0])
    ic = np.arange(start_c, start_c + Xc.shape[0])
    return tiles.pair_sum_tile(Xa, ia, Xc, yc, ic, w, sigma, log_z, c)


def knn_statistic(rows: Rows, n_neighbors: int, agg, agg_args=(), split_every=SPLIT_EVERY):
    """``sum_I agg(topk_J knn_tile(I, J), y_I, *agg_args)`` (hard neighbours)."""
    n, a, k = rows.n_samples, rows.n_features, rows.n_classes
    per_row = k * n_neighbors * (a + 2)
    if not rows.on_dask:
        total = 0.0
        blocks = list(_local_blocks(rows, per_row))
        for b, (start, stop, ia, ic) in enumerate(blocks, 1):
            knn = _kernel("knn", (stop - start) * n * a)
            d, idx, z = knn(rows.X[start:stop], ia, rows.X, rows.codes, ic, k, n_neighbors)
            total = total + agg(d, idx, z, rows.codes[start:stop], *agg_args)
            step_fraction(b, len(blocks))
        return total

    g = _Graph(rows, "knn", n_neighbors, agg.__name__, agg_args, split_every=split_every)
    shares = []
    for i in range(len(rows.bounds)):
        merged = g.tree(g.tile_row("knn", i, (k, n_neighbors), "tile"), merge.knn_combine,
                        "merge")
        shares.append(g.add("agg", _knn_agg_task, agg, merged, g.y(i), agg_args))
    return g.compute(g.tree(shares, _sum, "total"))


def _knn_agg_task(agg, partial, ya, agg_args):
    return agg(*partial, ya, *agg_args)


# ---------------------------------------------------------------------------
# Quadratic (IMMIGRATE) statistics and per-anchor partials for new points
# ---------------------------------------------------------------------------


def _n_threads():
    import numba

    return numba.get_num_threads()


def _split(n, parts):
    edges = np.linspace(0, n, min(n, parts) + 1).astype(int)
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _thread_map(fn, items):
    """``[fn(x) for x in items]``, on threads when there is more than one."""
    if len(items) == 1:
        return [fn(items[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(fn, items))


@functools.lru_cache(maxsize=1)
def _threadpool_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # finding the libraries once is the slow part


def _blas_single_thread():
    """One BLAS thread per kernel thread while the quadratic kernels run."""
    return _threadpool_controller().limit(limits=1, user_api="blas")


def quad_statistic(rows: Rows, U, lam, sigma, anchor_weight, coef, split_every=SPLIT_EVERY):
    """IMMIGRATE's E-step, two passes over unordered pairs: ``(Sigma, entropy)``.

    ``z`` and ``q`` are symmetric in the pair, so the row blocks are visited as
    pairs ``I <= J`` (:data:`tiles.WITHIN` on the diagonal, :data:`tiles.CROSS`
    off it), each pair's distances serving the anchors on both sides -- half
    the work of ordered (anchor block x candidate block) tiles.  Pass 1 merges
    the per-anchor softmax partials ``(m, s, u)`` of :func:`tiles.qlse_pairs`
    over the pairs an anchor block belongs to; ``coef(m, s, u, ya, weight,
    sigma) -> (log_z, coef, entropy)`` turns them into pair coefficients;
    pass 2 sums ``coef * z z^T`` over all pairs with :func:`tiles.sigma_pairs`.
    The A x A matrix is never carried per anchor.
    """
    U = np.ascontiguousarray(U, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    weight = np.asarray(anchor_weight, dtype=np.float64)
    if not rows.on_dask:
        with _blas_single_thread():
            return _quad_local(rows, U, lam, sigma, weight, coef)

    k = rows.n_classes
    g = _Graph(rows, "quad", U, lam, sigma, weight, coef.__name__, split_every=split_every)
    blocks = range(len(rows.bounds))
    pairs = [(i, j) for i in blocks for j in blocks if i <= j]
    tile = {
        (i, j): g.add("qlse", _qlse_pair_task, *_pair_args(g, i, j), U, lam, sigma, k)
        for i, j in pairs
    }
    coefs = []
    for i in blocks:
        sides = [g.add("side", _side, tile[min(i, j), max(i, j)], int(j < i)) for j in blocks]
        merged = g.tree(sides, merge.lse_combine, "merge")
        start, stop = rows.bounds[i]
        coefs.append(g.add("coef", _quad_coef_task, coef, merged, g.y(i), weight[start:stop],
                           sigma))
    parts = [g.add("sigma", _sigma_pair_task, *_pair_args(g, i, j), U, lam, sigma, coefs[i],
                   coefs[j]) for i, j in pairs]
    entropy = g.tree([g.add("entropy", _entropy_of, c) for c in coefs], _sum, "entropy")
    return g.compute(g.add("total", _call, _pair_of, g.tree(parts, _sum, "sum"), entropy))


def _pair_args(g: _Graph, i, j):
    (si, _), (sj, _) = g.rows.bounds[i], g.rows.bounds[j]
    return g.x(i), g.y(i), si, g.x(j), g.y(j), sj


def _pair_mode(Xp, start_p, Xq, start_q):
    ip = np.arange(start_p, start_p + Xp.shape[0])
    iq = np.arange(start_q, start_q + Xq.shape[0])
    return ip, iq, tiles.WITHIN if start_p == start_q else tiles.CROSS


def _qlse_pair(Xp, yp, start_p, Xq, yq, start_q, U, lam, sigma, n_classes, store):
    ip, iq, mode = _pair_mode(Xp, start_p, Xq, start_q)
    return tiles.qlse_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, n_classes, mode, store)


def _sigma_pair(Xp, yp, start_p, Xq, yq, start_q, U, lam, sigma, coef_p, coef_q, store):
    ip, iq, mode = _pair_mode(Xp, start_p, Xq, start_q)
    return tiles.sigma_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, coef_p[0], coef_p[1],
                             coef_q[0], coef_q[1], mode, store)


def _qlse_pair_task(*args):
    with _blas_single_thread():
        return _qlse_pair(*args, np.empty(0))


def _sigma_pair_task(*args):
    with _blas_single_thread():
        return _sigma_pair(*args, np.empty(0))


def _side(partials, side):
    """The ``(m, s, u)`` of the first (0) or second (1) row set of a pair."""
    return partials[3 * side: 3 * side + 3]


def _entropy_of(coef):
    return coef[2]


def _pair_of(a, b):
    return a, b


def _quad_coef_task(coef, partial, ya, weight, sigma):
    m, s, u = partial
    return coef(m, s, u, ya, weight, sigma)


#: Below about this much work per pass one thread beats waking a pool.
_THREADS_MIN_FLOPS = 1e9


def _quad_local(rows: Rows, U, lam, sigma, weight, coef):
    """In-process :func:`quad_statistic`: the same pairs of row blocks, on threads.

    One block (one ``WITHIN`` call per pass) unless the work pays for threads
    (~1 GFLOP per pass); then blocks of rows whose pairs are dealt to threads
    by a fixed greedy rule, so the sums do not depend on timing.  When every
    pair's distance fits :data:`TILE_BUDGET`, pass 1 stores them and pass 2
    reads them back instead of recomputing ``Z U``.
    """
    n, a = rows.n_samples, rows.n_features
    flops = n * n * a * (a + U.shape[1])
    n_threads = _n_threads() if flops > _THREADS_MIN_FLOPS else 1
    n_blocks = 1 if n_threads == 1 else min(4 * n_threads, max(1, n // tiles._SEG))
    bounds = _split(n, n_blocks)
    pairs = [(i, j) for i in range(len(bounds)) for j in range(i, len(bounds))]
    size = [tiles.n_pairs(bounds[i][1] - bounds[i][0], bounds[j][1] - bounds[j][0],
                          tiles.WITHIN if i == j else tiles.CROSS) for i, j in pairs]
    keep_q = 8 * sum(size) <= TILE_BUDGET
    stores = [np.empty(p if keep_q else 0) for p in size]
    share = _deal(size, n_threads)
    X, y = rows.X, rows.codes

    def args(p):
        (s0, s1), (t0, t1) = bounds[pairs[p][0]], bounds[pairs[p][1]]
        return X[s0:s1], y[s0:s1], s0, X[t0:t1], y[t0:t1], t0

    def on_threads(fn):
        """``{pair index: fn(pair index)}``, each thread running its share in order."""
        done = _thread_map(lambda mine: [(p, fn(p)) for p in mine], share)
        return dict(itertools.chain.from_iterable(done))

    tile = on_threads(lambda p: _qlse_pair(*args(p), U, lam, sigma, rows.n_classes, stores[p]))
    index = {pair: p for p, pair in enumerate(pairs)}
    merged = [
        merge.lse_combine([_side(tile[index[min(i, j), max(i, j)]], int(j < i))
                           for j in range(len(bounds))])
        for i in range(len(bounds))
    ]
    m, s, u = (np.concatenate(parts) for parts in zip(*merged))
    log_z, c, entropy = coef(m, s, u, y, weight, sigma)

    def pass2(p):
        (s0, s1), (t0, t1) = bounds[pairs[p][0]], bounds[pairs[p][1]]
        return _sigma_pair(*args(p), U, lam, sigma, (log_z[s0:s1], c[s0:s1]),
                           (log_z[t0:t1], c[t0:t1]), stores[p])

    parts = on_threads(pass2)
    return functools.reduce(np.add, [parts[p] for p in range(len(pairs))]), entropy


def _deal(costs, n_threads):
    """Indices of ``costs`` dealt to threads: largest first, to the least loaded."""
    load = [0] * n_threads
    share = [[] for _ in range(n_threads)]
    for p in sorted(range(len(costs)), key=lambda p: (-costs[p], p)):
        t = min(range(n_threads), key=lambda t: (load[t], t))
        share[t].append(p)
        load[t] += costs[p]
    return [s for s in share if s]


def anchor_partials(rows: Rows, kernel, Xa, ia, params, block=1024):
    """Per-anchor softmax partials of new anchors ``Xa`` against all training rows.

    ``ia`` are the anchors' global indices (a training row excludes itself;
    new points get negative indices).  Returns the merged partial of
    ``kernel`` ("lse" or "qlse") for every anchor -- small (anchors x classes
    [x features]) -- used for predictions and leave-one-out predictions.
    """
    Xa = np.ascontiguousarray(Xa, dtype=np.float64)
    ia = np.asarray(ia, dtype=np.int64)
    parts = []
    for start in range(0, Xa.shape[0], block):
        stop = min(start + block, Xa.shape[0])
        if not rows.on_dask:
            ic = np.arange(rows.n_samples)
            work = (stop - start) * rows.n_samples * rows.n_features
            with _blas_single_thread():
                parts.append(_kernel(kernel, work)(Xa[start:stop], ia[start:stop], rows.X,
                                                   rows.codes, ic, *params))
            continue
        g = _Graph(rows, f"{kernel}-new", Xa[start:stop], ia[start:stop], params)
        keys = [
            g.add("tile", _new_anchor_task, kernel, Xa[start:stop], ia[start:stop], g.x(j),
                  g.y(j), sc, params)
            for j, (sc, _) in enumerate(rows.bounds)
        ]
        parts.append(g.compute(g.tree(keys, merge.lse_combine, "merge")))
    return tuple(np.concatenate(items) for items in zip(*parts))


def _new_anchor_task(kernel, Xa, ia, Xc, yc, start_c, params):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    with _blas_single_thread():
        return tiles.KERNELS[kernel][0](Xa, ia, Xc, yc, ic, *params)
