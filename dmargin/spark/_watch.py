"""The wait on a Spark job, bounded.

``SparkContext.runJob`` waits for its job with no limit: a job that no
executor runs (none left, none with the resources a task asks for), or whose
result never reaches Python, keeps the driver waiting forever.
:func:`run_action` (any call that runs one job, such as the command line's
``df.count()``) and :func:`run_job` run the job from a thread of their own,
with the caller's local properties (scheduler pool, job description), and
watch it through Spark's status tracker while they wait:

- the SparkContext stopped, or its JVM gone -> :class:`SparkStoppedError` at
  once, in place of the NullPointerException or refused connection that the
  next call into Spark would raise;
- no executor (a cluster's all lost, or none granted), the job ended on Spark
  and its result not in Python, or the job never submitted, for
  ``dmargin.stall-timeout`` (the dask config value a wait on a ``distributed``
  cluster honours, default 60 s) -> the job group is cancelled and
  :class:`dmargin._cluster.ClusterStalledError` says which.

A job waiting its turn on a busy cluster is not a stall.  A task that Spark
shows running but that never ends (a deadlocked worker) is Spark's to end
(``spark.task.reaper.*``, ``spark.speculation``): its state is not visible
from the driver.
"""

from __future__ import annotations

import itertools
import logging
import time

from .._cluster import ClusterStalledError, stall_timeout

logger = logging.getLogger("dmargin")

_job_ids = itertools.count()

#: Spark's states of a job that has ended (``JobExecutionStatus``).
_ENDED = ("SUCCEEDED", "FAILED")


class SparkStoppedError(RuntimeError):
    """The SparkContext stopped (or its JVM exited) during a fit."""


def next_group():
    """A job group of its own for the next Spark job of a fit."""
    return f"dmargin-{next(_job_ids)}"


def stopped(sc):
    """Why ``sc`` can run no more jobs (stopped, its JVM gone), or ``None``."""
    try:
        jsc = sc._jsc
        if jsc is None or jsc.sc().isStopped():
            return "the SparkContext was stopped"
    except Exception as exc:  # py4j: the gateway's connection refused or closed
        return f"the Spark driver's JVM does not answer ({type(exc).__name__}: {exc})"
    return None


def stopped_error(sc, what):
    """The :class:`SparkStoppedError` for a call into ``sc`` that failed during
    ``what``, or ``None`` if ``sc`` is alive (the failure is another's)."""
    reason = stopped(sc)
    if reason is None:
        return None
    return SparkStoppedError(
        f"{reason} during {what}: the fit did not finish and the estimator is left as it "
        "was. Start a SparkSession again (dmargin.spark.local_session() for a local one) "
        "and call fit again; a Spark driver stopped by the cluster manager is often out "
        "of memory: see the driver's log, and spark.driver.memory."
    )


def run_job(sc, rdd, runner, what, partitions=None):
    """``sc.runJob(rdd, runner, partitions)``, its wait bounded (:func:`run_action`)."""
    return run_action(sc, lambda: sc.runJob(rdd, runner, partitions), what)


def run_action(sc, action, what):
    """``action()`` (a call that runs one Spark job: ``runJob``, ``df.count()``) in a
    job group of its own, waited on with a bound (module docstring).  A
    ``KeyboardInterrupt`` cancels the group, with its running tasks interrupted, so
    no executor keeps computing a fit that was stopped."""
    from pyspark import InheritableThread

    group = next_group()
    box = {}

    def run():
        sc.setJobGroup(group, f"dmargin: {what}", interruptOnCancel=True)
        try:
            box["value"] = action()
        except BaseException as exc:
            box["error"] = exc

    # Inheritable: the job runs with the caller's local properties.
    thread = InheritableThread(target=run, name=f"dmargin {group}", daemon=True)
    thread.start()
    try:
        _watch(sc, group, thread, what)
    except BaseException as exc:
        _cancel(sc, group)
        if isinstance(exc, KeyboardInterrupt):  # the cancelled job ends its thread soon
            thread.join(5.0)
        raise  # a stalled job's thread may never end: a daemon, it is left behind
    if "error" in box:
        error = stopped_error(sc, what)
        if error is not None:
            raise error from None
        raise box["error"]
    return box["value"]


def _cancel(sc, group):
    if stopped(sc) is None:
        try:
            sc.cancelJobGroup(group)
        except Exception:  # stopped meanwhile: nothing left to cancel
            pass


def _watch(sc, group, thread, what):
    """Return when ``thread`` ends; raise if Spark cannot finish its job."""
    timeout = stall_timeout()
    poll = max(0.05, min(1.0, timeout / 5))
    since, last, warned = None, None, False
    while True:
        thread.join(poll)
        if not thread.is_alive():
            return
        error = stopped_error(sc, what)
        if error is not None:
            raise error
        state = _state(sc, group)
        if state is None:
            since, last = None, None
            continue
        now = time.monotonic()
        if state != last:
            since, last, warned = now, state, False
        elif not warned and now - since > timeout / 4:
            warned = True  # a state seen once may be Spark's status store lagging
            logger.warning(
                "dmargin: %s during %s; waiting up to %.0f s (dmargin.stall-timeout).",
                state,
                what,
                timeout,
            )
        if now - since > timeout:
            raise ClusterStalledError(_message(sc, state, what, timeout))


def _state(sc, group):
    """What keeps the group's job from finishing, or ``None`` while it can.

    Not read: a stage's active tasks.  Spark's status store counts a task
    once its start event is processed, and a local master's first tasks
    (Python workers starting) showed none for seconds while they ran."""
    tracker = sc.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
    if not jobs:
        return "the Spark job has not been submitted"
    if all(info is not None and info.status in _ENDED for info in jobs):
        return "the Spark job ended and its result has not reached Python"
    if not sc.master.startswith("local") and _executors(sc) == 0:
        return "Spark has no executor"
    return None


def _executors(sc):
    """Executors besides the driver (its block manager is one of the list)."""
    return max(0, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)


def _message(sc, state, what, timeout):
    where = (
        f"the local master {sc.master}"
        if sc.master.startswith("local")
        else f"Spark's master {sc.master} has {_executors(sc)} executor(s) besides the driver"
    )
    return (
        f"{state[0].upper()}{state[1:]} for {timeout:.0f} s during {what}; {where}. "
        "The job group was cancelled and the estimator is left as it was. Check that "
        "executors are up (the cluster manager gives them the cores and memory asked "
        "for), and the executors' and driver's logs (one out of memory), then call fit "
        "again; to wait longer, dask.config.set({'dmargin.stall-timeout': '10m'})."
    )
