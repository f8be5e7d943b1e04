"""Where dmargin meets dask: "is this dask?", persist, and every compute.

With :mod:`dmargin._cluster` (the watchdog of a wait on a cluster, and the command
line's connection to a scheduler), the one place besides the engine, the Parquet
reader and the Spark backend that imports dask or distributed: the type tests
(:func:`is_dask_collection`, :func:`is_dask_array`, :func:`is_dask_frame`,
:func:`is_dask_series`), the few dask calls the data layer needs
(:func:`as_dask_array`, :func:`persist_spread`, :func:`persist_with_known_rows`,
:func:`from_pandas`, :func:`per_row_block`), the active client (:func:`active_client`,
:func:`client_for`) and the calls that bring values back (:func:`compute`,
:func:`gather`, :func:`map_calls`).

Every computation dmargin brings back from dask goes through :func:`compute`
(or :func:`gather` for one value).  Without a ``distributed.Client`` it is
``dask.compute``.  With one, it submits the graph and waits in short polls,
watching the cluster (:func:`dmargin._cluster.wait_watching`), so that a fit never
waits forever: a cluster without a running worker for ``dmargin.stall-timeout``
ends in :class:`~dmargin._cluster.ClusterStalledError`.
"""

from __future__ import annotations

import contextvars
import math
import sys
from contextlib import contextmanager

from ._cluster import route_ctrl_c, seceded, wait_watching


def is_dask_collection(x) -> bool:
    """Whether ``x`` is a dask collection (array, DataFrame, Delayed, ...)."""
    try:
        import dask
    except ImportError:  # pragma: no cover - dask is a dependency
        return False
    return dask.is_dask_collection(x)


def is_dask_array(x) -> bool:
    """Whether ``x`` is a dask array."""
    if not is_dask_collection(x):
        return False
    import dask.array as da

    return isinstance(x, da.Array)


def is_dask_frame(x) -> bool:
    """Whether ``x`` is a dask DataFrame."""
    if not is_dask_collection(x):
        return False
    import dask.dataframe as dd

    return isinstance(x, dd.DataFrame)


def is_dask_series(x) -> bool:
    """Whether ``x`` is a dask Series."""
    if not is_dask_collection(x):
        return False
    import dask.dataframe as dd

    return isinstance(x, dd.Series)


def as_dask_array(x):
    """``x`` as a dask array (numpy input in dask's default chunks)."""
    import dask.array as da

    return da.asarray(x)


def worker_addresses(collections) -> list | None:
    """The sorted addresses of the workers of the client ``collections`` compute
    on (empty with a local scheduler, ``None`` when its scheduler cannot be reached)."""
    client = client_for(collections)
    if client is None:
        return []
    try:
        return sorted(client.scheduler_info(n_workers=-1)["workers"])
    except Exception:  # an unreachable scheduler: the caller keeps its default
        return None


def _same(block):
    return block


#: Set while a fit runs on Spark (:mod:`dmargin.spark`): its row blocks live in
#: Spark's cache, and a persist leaves dask arrays lazy (dask's local persist would
#: compute them on the driver).
_LAZY_PERSIST = contextvars.ContextVar("dmargin_lazy_persist", default=False)


@contextmanager
def lazy_persist():
    """Within: :func:`persist_spread` and :func:`persist_with_known_rows` return
    their arrays unpersisted, recomputed from their source by each graph."""
    token = _LAZY_PERSIST.set(True)
    try:
        yield
    finally:
        _LAZY_PERSIST.reset(token)


def persists_lazily() -> bool:
    """Whether a persist leaves arrays lazy here (:func:`lazy_persist`)."""
    return _LAZY_PERSIST.get()


def persist_spread(*arrays):
    """Dask arrays of the same row blocks persisted in one call, block ``i`` of
    every array on worker ``i mod W``.

    Left alone, the scheduler puts a small array's blocks wherever a thread
    frees first, and a fit's tiles follow the blocks they read: under load, a
    small fit's blocks can all land on one worker.  Dealt in turn, the blocks
    (so the tiles, and the memory) are shared by every worker from the first
    graph on.  The placement is a loose restriction: a block whose worker has
    left goes to another.  Unoptimised, as every dmargin persist (see
    :func:`compute`).
    """
    import dask

    if persists_lazily():
        return tuple(arrays)
    workers = worker_addresses(arrays) or []
    if len(workers) > 1:

        def place(key):
            return [workers[key[1] % len(workers)]]

        with dask.annotate(workers=place, allow_other_workers=True):
            arrays = [a.map_blocks(_same, dtype=a.dtype) for a in arrays]
    return dask.persist(*arrays, optimize_graph=False)


def persist_with_known_rows(*arrays):
    """Dask arrays persisted in one call, with the row chunk sizes of their blocks.

    Arrays made from DataFrames have unknown row chunk sizes; the sizes are
    read from the persisted blocks instead of another pass over the source,
    and blocks the arrays share (X and y from one frame) are computed once.
    """
    import dask
    import dask.array as da

    if persists_lazily() and not any(math.isnan(c) for a in arrays for c in a.chunks[0]):
        return list(arrays)
    # Where the source's tasks ran: dealing these blocks out would move the rows of a
    # fit that only streams them (the engine deals its own rows, :func:`persist_spread`).
    arrays = dask.persist(*arrays, optimize_graph=False)  # as compute(): same keys, same tasks
    blocks = [a.to_delayed().ravel() for a in arrays]
    sizes = compute(
        *[dask.delayed(len)(b) for bs in blocks for b in bs], what="the partition lengths"
    )
    out, start = [], 0
    for a, bs in zip(arrays, blocks):
        rows = tuple(int(n) for n in sizes[start : start + len(bs)])
        start += len(bs)
        out.append(da.Array(a.dask, a.name, (rows,) + a.chunks[1:], dtype=a.dtype))
    return out


def from_pandas(data, npartitions):
    """A pandas DataFrame or Series as a dask one of ``npartitions`` partitions."""
    import dask.dataframe as dd

    return dd.from_pandas(data, npartitions=npartitions)


def active_client():
    """The active ``distributed.Client`` (``Client`` or ``client.as_current()``), or ``None``."""
    # No client can exist before distributed is imported; importing it only to
    # find none would cost a numpy-only fit a fifth of a second.
    distributed = sys.modules.get("distributed")
    if distributed is None or persists_lazily():  # a Spark fit: Spark runs its graphs
        return None
    try:
        distributed.get_worker()
        # Inside a task on a worker (a wrapper's fit, or the user's own task): the fit
        # runs in-process there, never as a graph submitted from within a task.
        return None
    except ValueError:
        pass
    try:
        return distributed.default_client()
    except ValueError:
        return None


def cancelled_on_worker() -> bool:
    """Whether this thread runs a task on a ``distributed`` worker that its client
    has cancelled (``False`` anywhere else): a tile then stops at its next kernel call."""
    worker = sys.modules.get("distributed.worker")  # a worker has imported it
    key = None if worker is None else getattr(worker.thread_state, "key", None)
    if key is None:
        return False
    try:
        task = worker.get_worker().state.tasks.get(key)
    except ValueError:  # not a worker's task thread
        return False
    return task is not None and task.state == "cancelled"


def client_for(collections):
    """The Client dask would compute ``collections`` on, or ``None`` (local schedulers)."""
    import dask.base

    collections = [c for c in collections if is_dask_collection(c)]
    if not collections:
        return None
    scheduler = dask.base.get_scheduler(collections=collections)
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover
        return None
    # A Client itself (current dask) or its bound ``get`` (older dask).
    owner = scheduler if isinstance(scheduler, Client) else getattr(scheduler, "__self__", None)
    return owner if isinstance(owner, Client) else None


def compute(*collections, what="a dmargin computation", optimize=False):
    """``dask.compute(*collections)``, with a bounded wait on a distributed cluster.

    Parameters
    ----------
    *collections : dask collections (or plain values, returned as they are)
    what : str
        What is computed, for the error message.
    optimize : bool, default=False
        dask's graph optimisation (fusing).  A fit computes the same source
        tasks in several graphs (a scaling pass, sampled anchors, then the
        tiles over rows that stream from a file); fused in one graph and not
        in the next, one key would name two different tasks, which the
        distributed scheduler cannot reconcile (a ``KeyError`` or lost
        dependencies).  Every dmargin computation and persist is therefore
        unoptimised, the same tasks under the same keys.

    Returns
    -------
    tuple
        The computed values, as ``dask.compute`` returns them.

    Raises
    ------
    ClusterStalledError
        No worker ran for ``dmargin.stall-timeout`` seconds while waiting.
    """
    import dask

    lazy = [i for i, c in enumerate(collections) if is_dask_collection(c)]
    todo = [collections[i] for i in lazy]
    if len({type(c) for c in todo}) > 1:
        # dask 2026.8 returns the results of mixed collection types (arrays and
        # Delayed) in the wrong order, locally and through Client.compute;
        # as Delayed objects they keep their order.
        todo = [dask.delayed(c) for c in todo]
    client = client_for(todo)
    if client is None:
        try:
            values = dask.compute(*todo, optimize_graph=optimize)
        except ValueError as exc:
            if not str(exc).startswith("Missing dependency"):
                raise
            raise RuntimeError(_UNREACHABLE.format(what=what)) from None
    else:
        values = _compute_on(client, todo, what, optimize)
    out = list(collections)
    for i, v in zip(lazy, values):
        out[i] = v
    return tuple(out)


#: A collection persisted on a Client, computed where that Client is not.
_UNREACHABLE = (
    "{what}: the dask input's blocks live on a distributed Client that this process "
    "cannot reach (a joblib 'loky' or multiprocessing worker, whose copy of the input "
    "names blocks it cannot fetch). Run the parallel fits on the cluster with "
    "joblib.parallel_backend('dask'), or use n_jobs=1 or joblib's 'threading' backend."
)


def _compute_on(client, todo, what, optimize=False):
    route_ctrl_c(client)
    futures = client.compute(todo, optimize_graph=optimize)
    try:
        with seceded():
            wait_watching(client, futures, what)
            return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def gather(x, what="a dmargin computation"):
    """``x`` computed if it is a dask collection, else ``x`` itself."""
    return compute(x, what=what)[0] if is_dask_collection(x) else x


def map_calls(fn, items, what="a dmargin computation"):
    """``[fn(*args) for args in items]``: in-process for in-memory arguments without a
    client, else one dask graph of a task per call, computed at once.

    On dask each call is a pure task (its key is a token of ``fn`` and its
    arguments, so a call with other arguments is another task); a dask
    collection among the arguments reaches its task as the computed value
    (a slice of columns as a numpy array), and only the calls' results come
    back to the client.  The wait is :func:`compute`'s.
    """
    items = [tuple(args) for args in items]
    if active_client() is None and not any(is_dask_collection(a) for args in items for a in args):
        return [fn(*args) for args in items]
    import dask
    from dask.base import tokenize

    calls = []
    for args in items:
        # A collection reaches the task as its blocks, whose keys come from their
        # content: dask.delayed would wrap it under a random "finalize" key, and two
        # fits' equal calls would be one key with two dependencies on the scheduler.
        kinds = tuple(_joiner(a) for a in args)
        parts = tuple(
            a
            if k is None
            else a.to_delayed(optimize_graph=False).tolist()
            if k == "array"
            else list(a.to_delayed(optimize_graph=False))
            for a, k in zip(args, kinds)
        )
        key = f"{getattr(fn, '__name__', 'call')}-{tokenize(fn, kinds, *parts)}"
        calls.append(dask.delayed(_call_joined, pure=True)(fn, kinds, *parts, dask_key_name=key))
    return list(compute(*calls, what=what))


def _joiner(value):
    """How a dask argument of :func:`map_calls` is joined from its blocks (``None``:
    not a dask collection)."""
    if is_dask_array(value):
        return "array"
    return "frame" if is_dask_collection(value) and hasattr(value, "to_delayed") else None


def _call_joined(fn, kinds, *args):
    """``fn(*args)`` with the blocks of each dask argument joined (a task body)."""
    import numpy as np
    import pandas as pd

    joined = [
        a if k is None else np.block(a) if k == "array" else pd.concat(a)
        for a, k in zip(args, kinds)
    ]
    return fn(*joined)


def run_with_client(fn, client):
    """``fn`` wrapped so that it sees ``client`` as the active one in any thread.

    ``client.as_current()`` holds only in the thread that entered it; a
    read-ahead thread would otherwise compute on the default scheduler.
    """
    if client is None:
        return fn

    def call(*args, **kwargs):
        with client.as_current():
            return fn(*args, **kwargs)

    return call


def distinct_values(y):
    """The distinct values of a dask array or Series as a numpy vector: only they come
    to the driver."""
    import numpy as np

    if hasattr(y, "unique"):  # dask Series
        return np.asarray(compute(y.unique(), what="the labels")[0])
    import dask.array as da

    return np.asarray(compute(da.unique(y), what="the labels")[0])


def per_row_block(fn, X, y, *args):
    """A lazy dask array of one object per row block of ``X`` (known row chunks):
    ``fn(rows, labels, start, *args)`` with the block's whole rows, its ``y`` and
    its first row's index, computed in whatever pass computes the array.

    One task a block, its start a constant in it: the task depends on the row
    block and its labels alone, so it runs where they are.
    """
    import dask.array as da
    import numpy as np
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    name = "dmargin-per-row-block-" + tokenize(fn, X.name, y.name, args)
    starts = np.concatenate([[0], np.cumsum(X.chunks[0][:-1])]).astype(np.int64).tolist()
    layer = {
        (name, i): (_one_object, fn, (X.name, i, 0), (y.name, i), start, *args)
        for i, start in enumerate(starts)
    }
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[X, y])
    return da.Array(graph, name, ((1,) * len(starts),), dtype=object, meta=np.empty(0, object))


def _one_object(fn, rows, labels, start, *args):
    import numpy as np

    out = np.empty(1, dtype=object)
    out[0] = fn(rows, labels, start, *args)
    return out
