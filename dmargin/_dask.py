"""Where dmargin meets dask: "is this dask?", and every wait on a cluster.

The one place besides the engine and the Parquet reader that imports dask or
distributed: the type tests (:func:`is_dask_collection`,
:func:`is_dask_array`, :func:`is_dask_frame`, :func:`is_dask_series`), the
few dask calls the data layer needs (:func:`as_dask_array`,
:func:`persist_with_known_rows`, :func:`from_pandas`, :func:`local_cluster`),
the waits, and the command line's connection to a scheduler (:func:`client_security`,
:func:`ask_identity`, :func:`open_client`).

Every computation dmargin brings back from dask goes through :func:`compute`
(or :func:`gather` for one value).  Without a ``distributed.Client`` it is
``dask.compute``.  With one, it submits the graph and waits in short polls,
watching the cluster, so that a fit never waits forever:

- all workers gone (killed, preempted, scaled to zero) and none back within
  the stall timeout -> :class:`ClusterStalledError` naming the scheduler and
  how to resume;
- every worker paused at its memory limit for as long -> the same error,
  with the memory numbers;
- the scheduler unreachable for as long -> the same error.

The timeout is the dask config value ``dmargin.stall-timeout`` (default
60 s), e.g. ``dask.config.set({"dmargin.stall-timeout": "10m"})``.
:func:`check_worker_memory` compares the workers' memory limits with what a
fit will hold before anything is submitted.
"""

from __future__ import annotations

import contextvars
import logging
import math
import os
import socket
import sys
import time
import weakref
from contextlib import contextmanager

logger = logging.getLogger("dmargin")

#: Default of the ``dmargin.stall-timeout`` config value.
STALL_TIMEOUT = "60s"
#: Fraction of a worker's memory limit at which distributed pauses it.
_PAUSE_FRACTION = 0.8


class ClusterStalledError(RuntimeError):
    """The cluster could not run dmargin's tasks: no running worker for too long."""


class WorkerMemoryError(MemoryError):
    """The workers' memory limits are below what a fit holds."""


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


@contextmanager
def local_cluster(n_workers, close_timeout=60):
    """A ``LocalCluster`` of ``n_workers`` single-threaded processes and its Client.

    Quiet: the scheduler's HTTP server takes a free local port (not 8787, which
    another cluster may hold: distributed warns), and on the way out each worker
    process gets ``close_timeout`` seconds to exit (distributed's 4 s, on a
    loaded machine, ends in "Worker process still alive after 4.0 seconds,
    killing").
    """
    import asyncio

    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
    ) as cluster:
        with Client(cluster) as client:
            yield client

        async def close_workers():
            await asyncio.gather(
                *(worker.close(timeout=close_timeout) for worker in list(cluster.workers.values()))
            )

        cluster.sync(close_workers)


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


def stall_timeout() -> float:
    """Seconds without a running worker before a wait on the cluster gives up."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("dmargin.stall-timeout", STALL_TIMEOUT)))


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
    _terminal_interrupt_to_the_client(client)
    futures = client.compute(todo, optimize_graph=optimize)
    try:
        with _seceded():
            _wait(client, futures, what)
            return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


_INTERRUPT_ROUTED = weakref.WeakSet()


def _terminal_interrupt_to_the_client(client):
    """A terminal's Ctrl-C reaches the whole process group, so also the worker
    processes of a ``LocalCluster`` this process started: each would print
    distributed's own ``KeyboardInterrupt`` traceback as it dies under a fit
    that the client stops and cancels anyway (dask/distributed issue 1925).  Those
    workers -- children of this process, on this host -- leave Ctrl-C to it; they
    still close with the cluster.  Sent once per client, without waiting."""
    if client in _INTERRUPT_ROUTED:
        return
    _INTERRUPT_ROUTED.add(client)
    try:
        client.run(
            _leave_ctrl_c_to_the_parent,
            os.getpid(),
            socket.gethostname(),
            wait=False,
            on_error="ignore",
        )
    except Exception:  # a closing client: nothing to route
        pass


async def _leave_ctrl_c_to_the_parent(parent_pid, host):
    # A coroutine: distributed runs it in the worker's event loop without a reply.
    import signal
    import threading

    if (
        os.getppid() == parent_pid
        and socket.gethostname() == host
        and threading.current_thread() is threading.main_thread()
    ):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _seceded():
    """Inside a task on a worker (a fit in a ``joblib`` dask-backend task): its thread
    leaves the worker's pool while it waits on the graph it submitted, and rejoins
    after.  A thread held through that wait is a thread the graph's own tasks cannot
    have: two single-thread workers each waiting in a fit would wait forever."""
    try:
        from distributed import get_worker, rejoin, secede

        get_worker()
        secede()
    except (ImportError, ValueError):  # the client's own process: nothing to leave
        yield
        return
    except Exception:  # a worker's thread that runs no task (client.run): none either
        yield
        return
    try:
        yield
    finally:
        rejoin()


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


def _workers(client):
    """``{address: info}`` of the scheduler's workers, or ``None`` if it does not answer."""
    try:
        # A worker's client (a fit inside a task) answers its empty cache first.
        return (
            client.scheduler_info(n_workers=-1)["workers"]
            or client.scheduler_info(n_workers=-1)["workers"]
        )
    except Exception:  # a dead or unreachable scheduler: OSError, CommClosedError, ...
        return None


def _wait(client, futures, what):
    from distributed import wait

    timeout = stall_timeout()
    poll = max(0.05, min(1.0, timeout / 5))
    stalled_since, workers = None, {}
    while True:
        try:
            wait(futures, timeout=poll)
            return
        except TimeoutError:
            pass
        workers = _workers(client)
        if workers and any(w.get("status") == "running" for w in workers.values()):
            stalled_since = None
            continue
        now = time.monotonic()
        if stalled_since is None:
            stalled_since = now
            logger.warning(
                "dmargin: no running Dask worker for %s; waiting up to %.0f s "
                "(dmargin.stall-timeout).",
                what,
                timeout,
            )
        elif now - stalled_since > timeout:
            raise ClusterStalledError(_stall_message(client, workers, what, timeout))


def _stall_message(client, workers, what, timeout):
    address = getattr(client.scheduler, "address", "the scheduler")
    resume = (
        "Fitted state is not lost on the client: call fit again once the cluster is "
        "healthy (persisted rows are recomputed from their source); an "
        "OnlineIRelief stream resumes from its last save_state checkpoint with "
        "OnlineIRelief.load_state. To wait longer, set "
        "dask.config.set({'dmargin.stall-timeout': '10m'})."
    )
    if workers is None:
        return (
            f"The Dask scheduler at {address} did not answer for {timeout:.0f} s during "
            f"{what}; the computation was cancelled. Check the scheduler process. {resume}"
        )
    if not workers:
        return (
            f"All Dask workers of the scheduler at {address} were lost during {what}, and "
            f"none joined within {timeout:.0f} s; the computation was cancelled. Start "
            f"workers again (dask worker {address}). {resume}"
        )
    limits = sorted({w.get("memory_limit") or 0 for w in workers.values()})
    return (
        f"Every Dask worker of the scheduler at {address} is paused ("
        f"{', '.join(sorted({str(w.get('status')) for w in workers.values()}))}) and none "
        f"ran for {timeout:.0f} s during {what}; the computation was cancelled. Paused "
        f"workers have reached {_PAUSE_FRACTION:.0%} of their memory limit "
        f"({', '.join(_size(b) for b in limits)}): start workers with a larger "
        f"--memory-limit, or more workers. {resume}"
    )


def _size(n):
    if not n:
        return "no limit"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def check_worker_memory(client, persisted_bytes, task_bytes, what):
    """Refuse to submit a fit the workers cannot hold.

    The fit persists ``persisted_bytes`` spread over the workers and runs
    tasks that each hold up to ``task_bytes``, one per worker thread.  Each
    worker's share must stay under the fraction of its memory limit at which
    distributed pauses it; otherwise the fit would wait on paused workers.

    Parameters
    ----------
    client : distributed.Client or None
    persisted_bytes : float
    task_bytes : float
    what : str

    Raises
    ------
    WorkerMemoryError
        Naming the memory a worker needs and the limit it has.
    """
    if client is None:
        return
    workers = _workers(client)
    if not workers:
        return  # nothing to compare against; the stall watchdog covers a cluster with none
    limited = {a: w for a, w in workers.items() if w.get("memory_limit")}
    if len(limited) < len(workers):
        return  # a worker without a limit can take what the others cannot
    total_limit = sum(w["memory_limit"] for w in limited.values())
    worst = None
    for address, w in limited.items():
        share = persisted_bytes * w["memory_limit"] / total_limit
        need = share + w.get("nthreads", 1) * task_bytes
        usable = _PAUSE_FRACTION * w["memory_limit"]
        if need > usable and (worst is None or need - usable > worst[0] - worst[1]):
            worst = (need, usable, address, w["memory_limit"])
    if worst is None:
        return
    need, usable, address, limit = worst
    total_need = persisted_bytes + sum(w.get("nthreads", 1) for w in limited.values()) * task_bytes
    raise WorkerMemoryError(
        f"{what} needs about {_size(need)} on worker {address}, whose memory limit is "
        f"{_size(limit)} (distributed pauses a worker at {_PAUSE_FRACTION:.0%} of it, "
        f"{_size(usable)}); the fit was not started. The data take {_size(persisted_bytes)} "
        f"spread over {len(limited)} workers plus {_size(task_bytes)} per running task: give the "
        f"workers about {_size(total_need / _PAUSE_FRACTION)} of memory limits in all "
        "(--memory-limit, or more workers), or fit fewer rows (a sample, or OnlineIRelief "
        "with reference_size for a streaming fit)."
    )


def distinct_values(y):
    """The distinct values of a dask array or Series as a numpy vector: only they come
    to the driver."""
    import numpy as np

    if hasattr(y, "unique"):  # dask Series
        return np.asarray(compute(y.unique(), what="the labels")[0])
    import dask.array as da

    return np.asarray(compute(da.unique(y), what="the labels")[0])


# -- the command line's scheduler (dmargin select --scheduler) -----------------------------


def parse_duration(text) -> float:
    """Seconds of a dask duration such as ``"10s"``."""
    from dask.utils import parse_timedelta

    return parse_timedelta(text)


def check_comm_scheme(address):
    """Raise ValueError when distributed has no transport for ``address``'s scheme
    (``http://``, a typo)."""
    from distributed.comm import parse_address
    from distributed.comm.registry import get_backend

    get_backend(parse_address(address)[0])


def client_security(address):
    """``(Security, connection arguments)`` of a Client of ``address``, from the dask config.

    Raises
    ------
    FileNotFoundError
        A CA file, client certificate or key named in the config does not exist.
    OSError, ValueError, ImportError
        Settings distributed cannot use (a bad certificate, a missing loader).
    """
    import os

    import dask.config
    from distributed.security import Security
    from distributed.utils import import_term

    loader = dask.config.get("distributed.client.security-loader", None)
    security = (import_term(loader)({"address": address}) if loader else None) or Security()
    for what, path in (
        ("CA file", security.tls_ca_file),
        ("client certificate", security.tls_client_cert),
        ("client key", security.tls_client_key),
    ):
        if path and "\n" not in path and not os.path.isfile(path):  # else PEM text
            raise FileNotFoundError(f"the {what} {path} does not exist")
    return security, security.get_connection_args("client")


def ask_identity(address, connection_args, seconds):
    """The reply of the server at ``address`` to ``identity``, within ``seconds``.

    distributed bounds the TCP connect but not the handshake read after it, so a
    port that accepts and never speaks (a dashboard, a proxy) hangs ``Client()``.
    Here the exchange runs on its own event loop in a daemon thread, under
    :func:`asyncio.wait_for`, and the thread is given up after the deadline (a
    daemon thread does not keep the process alive).

    Raises
    ------
    TimeoutError
        Nothing answered in time.
    Exception
        Whatever the exchange raised: OSError when nothing listens or the peer
        hangs up, and any other error for a reply that is not a Dask message (an
        HTTP status line read as a frame length asks numpy for exabytes).
    """
    import asyncio
    import threading

    from distributed.comm import connect

    async def ask():
        comm = await connect(address, timeout=seconds, **connection_args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome = {}

    def run():
        try:
            outcome["reply"] = asyncio.run(asyncio.wait_for(ask(), seconds))
        except BaseException as exc:  # MemoryError included: handed to the main thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="dmargin-scheduler-probe", daemon=True)
    thread.start()
    thread.join(seconds + 2)  # the backstop, should the loop not end at its deadline
    if thread.is_alive():
        raise TimeoutError
    if "error" in outcome:
        raise outcome["error"]
    return outcome["reply"]


def open_client(address, timeout, security):
    """A ``distributed.Client`` of the scheduler at ``address``."""
    from distributed import Client

    return Client(address, timeout=timeout, security=security)
