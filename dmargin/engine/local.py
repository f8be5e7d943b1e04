"""Running a graph in-process: its tasks level by level on threads, and Ctrl-C.

:meth:`dmargin.engine.execution.Graph.compute` hands an in-process graph to
:func:`run_local`.  The main thread only waits while worker threads run the
tasks, so a ``KeyboardInterrupt`` reaches it at once (inside a numba kernel it
would become a ``SystemError``); the queued tasks are cancelled and a running
tile stops at its next kernel call (:func:`stop_if_interrupted`), as do the
tiles on dask's threads and, on a cluster, the tasks of the cancelled futures.
No dask here: this module runs plain dicts of tasks.
"""

from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .._dask import cancelled_on_worker
from ..progress import step_fraction
from ._numba import n_threads, set_threads


class FitInterrupted(RuntimeError):
    """A tile stopped because a ``KeyboardInterrupt`` stopped a run of this process."""


# Bumped by every KeyboardInterrupt that stops a run: a tile running on another
# thread (in-process or dask's threads) compares it between kernel calls.
_interrupts = [0]


def interrupt_count() -> int:
    """How many runs a ``KeyboardInterrupt`` has stopped in this process so far."""
    return _interrupts[0]


def stop_if_interrupted(count):
    """Raise :class:`FitInterrupted` if a run was interrupted since ``count``
    (:func:`interrupt_count` when the caller started), or if this is a task on a
    ``distributed`` worker that its client cancelled."""
    if _interrupts[0] != count or cancelled_on_worker():
        raise FitInterrupted("stopped: a KeyboardInterrupt interrupted a fit of this process")


def count_interrupt():
    """Record that a ``KeyboardInterrupt`` stopped a run (tiles compare the count)."""
    _interrupts[0] += 1


def _resolve(arg, values):
    if type(arg) is tuple and arg and type(arg[0]) is str:
        try:
            return values[arg]
        except (KeyError, TypeError):
            return arg
    if type(arg) is list:
        return [_resolve(a, values) for a in arg]
    return arg


def run_local(dsk, tiles, threads, wanted=None):
    """Run a graph in-process: tasks level by level, each level on threads.

    A task's level is one more than its deepest dependency's, so a level's
    tasks are independent; their values do not depend on the order they ran.
    With ``wanted`` (keys), a value is dropped once every task that reads it
    has run, unless wanted: a chain of tasks (:func:`grid.chained`) then
    holds one link at a time.
    """
    values, level, readers = {}, {}, {}
    for key, task in dsk.items():
        if type(task) is not tuple or not callable(task[0]):
            values[key] = task
            level[key] = 0
            continue
        deps = set(_keys_in(task[1:], dsk))
        for a in deps:
            readers[a] = readers.get(a, 0) + 1
        level[key] = 1 + max((level[a] for a in deps), default=0)
    by_level = {}
    for key, lv in level.items():
        if key not in values:
            by_level.setdefault(lv, []).append(key)
    n_tiles, done = len(tiles), 0
    pool, in_pool = _local_pool(threads)
    # Read once: numba's getter is a foreign call that gives up the GIL, and taking it
    # back waits for a worker thread's Python (up to the switch interval, per task).
    numba_threads = n_threads()

    def run(key):
        fn, *args = dsk[key]
        return fn(*(_resolve(a, values) for a in args))

    try:
        for lv in sorted(by_level):
            keys = by_level[lv]
            if in_pool or (pool and len(keys) > 1):
                results = _results(
                    [pool.submit(_in_context(run, key, numba_threads)) for key in keys]
                )
            else:
                results = map(run, keys)
            for key, value in zip(keys, results):
                values[key] = value
                if key in tiles:
                    done += 1
                    step_fraction(done, n_tiles)
            if wanted is not None:
                for key in keys:
                    for a in set(_keys_in(dsk[key][1:], dsk)):
                        readers[a] -= 1
                        if not readers[a] and a not in wanted:
                            del values[a]
    except BaseException as exc:
        if pool:
            # Queued tasks never start; a running tile stops at its next kernel
            # call (it sees the interrupt), and nothing waits for it here.
            if isinstance(exc, KeyboardInterrupt):
                count_interrupt()
            pool.shutdown(wait=False, cancel_futures=True)
            if pool is _MAIN_POOL.get(os.getpid()):
                _MAIN_POOL.clear()
            pool = None
        raise
    finally:
        if pool and pool is not _MAIN_POOL.get(os.getpid()):
            pool.shutdown()
    return values


# The main thread's one worker thread, kept from run to run (starting a thread per
# graph would cost small fits about a millisecond each); by process, as a forked
# child has not the thread.
_MAIN_POOL = {}


def _local_pool(threads):
    """The threads of an in-process run, and whether every task runs on them.

    On the main thread every task runs on a worker thread while the main
    thread waits, so that a ``KeyboardInterrupt`` (Ctrl-C, a notebook's
    interrupt) reaches the wait at once, not after a kernel call returns
    (numba would turn it into a ``SystemError``).
    """
    in_pool = threading.current_thread() is threading.main_thread()
    workers = threads if threads > 1 else int(in_pool)
    if workers == 1 and in_pool:
        pid = os.getpid()
        if pid not in _MAIN_POOL:
            _MAIN_POOL.clear()
            _MAIN_POOL[pid] = ThreadPoolExecutor(1, thread_name_prefix="dmargin")
        return _MAIN_POOL[pid], in_pool
    return (ThreadPoolExecutor(workers, thread_name_prefix="dmargin") if workers else None, in_pool)


def _in_context(run, key, numba_threads):
    """``run(key)`` in the caller's context (its progress, numpy's error state)
    and with its number of numba threads."""
    context = contextvars.copy_context()

    def call():
        set_threads(numba_threads)
        return context.run(run, key)

    return call


def _results(futures):
    # ``Future.result`` waits on a lock, which a signal interrupts at once.  One at a
    # time, as each is wanted: a tile's progress is reported as soon as it is done.
    return (f.result() for f in futures)


def _keys_in(args, dsk):
    for a in args:
        if type(a) is list:
            yield from _keys_in(a, dsk)
        elif type(a) is tuple and a and type(a[0]) is str:
            try:
                if a in dsk:
                    yield a
            except TypeError:
                pass


__all__ = [
    "FitInterrupted",
    "count_interrupt",
    "interrupt_count",
    "run_local",
    "stop_if_interrupted",
]
