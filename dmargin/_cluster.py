"""The cluster's watchdog, and the command line's connection to a scheduler.

A fit's wait on a ``distributed.Client`` (:func:`wait_watching`, called by
:func:`dmargin._dask.compute`) polls the scheduler, so that a fit never waits forever:

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

Also here: the demo's :func:`local_cluster`, and what ``dmargin select --scheduler``
needs to reach a scheduler within a bounded time (:func:`client_security`,
:func:`ask_identity`, :func:`open_client`).  With :mod:`dmargin._dask`, the only
modules outside the engine, the Parquet reader and the Spark backend that import
dask or distributed.
"""

from __future__ import annotations

import logging
import os
import socket
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


def stall_timeout() -> float:
    """Seconds without a running worker before a wait on the cluster gives up."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("dmargin.stall-timeout", STALL_TIMEOUT)))


_INTERRUPT_ROUTED = weakref.WeakSet()


def route_ctrl_c(client):
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
def seceded():
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


def wait_watching(client, futures, what):
    from distributed import wait

    timeout = stall_timeout()
    poll = max(0.05, min(1.0, timeout / 5))
    stalled_since, workers = None, {}
    while True:
        try:
            wait(futures, timeout=poll)
            return
        except TimeoutError as exc:
            _drop_frames(exc)
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


def _drop_frames(exc):
    """Clear the tracebacks of ``exc`` and the exceptions behind it.

    ``distributed.wait`` raises its timeout from frames that hold the futures,
    and the traceback closes a cycle through them that only the cyclic
    collector frees.  Until it runs, the results stay on the workers, and a
    refit whose tasks have the same keys is handed them instead of running.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__


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
