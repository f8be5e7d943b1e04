"""Spark as the scheduler of dmargin's dask graphs.

A fit on a Spark DataFrame runs the same dask graphs as a fit on dask
arrays: the estimator is given dask arrays whose row blocks are the
DataFrame's partitions (:mod:`dmargin.spark._source`), and every graph it
computes reaches :func:`spark_get` (dask's ``scheduler=`` hook) instead of
dask's threads or a ``distributed`` cluster.

:func:`spark_get` never brings rows to the driver.  Each task's *footprint*
is the set of partitions its value is made from, counted through the values
not yet on the driver.  The graph runs in waves:

- every task of empty footprint (merges of partials, the driver's small
  steps) runs on the driver;
- every task of one partition ``{p}`` (a block's conversions, its tiles
  against the anchors held in the graph) runs on the executor task of
  partition ``p``, and so does every task of a pair ``{p, q}`` (a tile of
  two row blocks: exact fits), in a task of the partitions' cartesian
  product, which reads both cached blocks where they are;
- of those, only the values that a task of three or more partitions reads
  (the partials a merge sums), or that the caller wants, come back; a task
  that reads both rows and a value not merged yet (the second pass of a
  statistic, given the first pass's merged result) waits for that value, then
  runs where its rows are.

So the tiles' partials come to the driver, the rows never do; a block's
chain of tasks is recomputed from its cached partition by each wave that
needs it, as dask recomputes an unpersisted array.  One wave is one Spark
job; a fit's iteration is one graph, so one or two jobs.
"""

from __future__ import annotations

import math
import pickle
import threading
import time
from dataclasses import dataclass, field

from ..engine import is_tile_key
from ._watch import run_job, stopped, stopped_error

#: Cached row blocks of the live sources, by token (driver side).
_SOURCES: dict = {}
_lock = threading.Lock()


def read_block(token, partition, field_name):
    """The leaf task of a Spark-backed dask array: partition ``partition``'s
    ``field_name`` ("X" or "y").  Its value is set by the executor that holds
    the partition; called anywhere else it is an error."""
    raise RuntimeError(
        "The rows of a Spark DataFrame are read on Spark's executors: this dask array "
        "comes from dmargin.spark and computes only inside dmargin.spark.fit (its Spark "
        "source has been released, or it was computed on another scheduler)."
    )


class PartialsTooLargeError(MemoryError):
    """The partials of a Spark job exceed the driver's result limit."""


@dataclass
class RunStats:
    """What the graphs of one source cost: Spark jobs, executor tasks, bytes of
    results that came to the driver, and the largest result of one task."""

    jobs: int = 0
    tasks: int = 0
    bytes_to_driver: int = 0
    largest_result: int = 0
    seconds: float = 0.0
    waves: list = field(default_factory=list)


def register(token, blocks, n_partitions, stats):
    """Make ``blocks`` (a cached RDD of one ``(X, y)`` record per partition) the rows
    of the leaves named ``token``."""
    with _lock:
        _SOURCES[token] = (blocks, n_partitions, stats)


def release(token):
    """Forget a source (its cache is the caller's to unpersist)."""
    with _lock:
        _SOURCES.pop(token, None)


def _leaf(node):
    from dask._task_spec import Task

    if isinstance(node, Task) and node.func is read_block:
        return node.args
    return None


def spark_get(dsk, keys, **kwargs):
    """dask's ``get``: the values of ``keys`` (a flat list), the graph run in waves
    on the Spark executors of its source (module docstring)."""
    from dask._task_spec import convert_legacy_graph

    if hasattr(dsk, "__dask_graph__"):
        dsk = dsk.__dask_graph__()
    graph = convert_legacy_graph(dict(dsk))
    wanted = list(keys)
    needed = _ancestors(graph, wanted)
    graph = {k: graph[k] for k in needed}
    leaves = {k: args for k, node in graph.items() if (args := _leaf(node)) is not None}
    tokens = {args[0] for args in leaves.values()}
    if len(tokens) > 1:
        raise ValueError(
            "One dmargin computation reads two Spark DataFrames; fit on one "
            "DataFrame (join them in Spark first)."
        )
    values = {}
    if tokens:
        token = tokens.pop()
        with _lock:
            if token not in _SOURCES:
                read_block(*next(iter(leaves.values())))
            source = _SOURCES[token]
    else:
        source = None
    order = _topological(graph)
    consumers = {k: [] for k in graph}
    for k, node in graph.items():
        for d in node.dependencies:
            if d in consumers:
                consumers[d].append(k)
    want = set(wanted)
    while not want <= values.keys():
        fp = _footprints(graph, order, values, leaves)
        ready = [k for k in order if k not in values and not fp[k]]
        if ready:  # the driver's steps, in order
            for k in ready:
                values[k] = graph[k](values)
            continue
        # A task runs on an executor if its rows are one partition's, or two for a
        # tile of the engine (an exact fit's pair of blocks); a merge of two partitions'
        # partials runs on the driver, not in a task that would recompute both.  Only
        # what the driver can merge next comes back: the inputs of a merge all of whose
        # inputs run on executors.  A task that also reads an unmerged value (a second
        # pass over the rows, given the first pass's merged statistic) waits: once that
        # value is on the driver, it runs where its rows are.
        remote = {
            k
            for k in order
            if k not in values and (len(fp[k]) == 1 or (len(fp[k]) == 2 and is_tile_key(k)))
        }
        merges = {
            k
            for k in order
            if k not in values
            and fp[k]
            and k not in remote
            and all(d in remote for d in graph[k].dependencies if fp.get(d))
        }
        exports = {k for k in remote if k in want or any(u in merges for u in consumers[k])}
        values.update(_run_wave(graph, order, values, fp, exports, source))
    return [values[k] for k in wanted]


def _ancestors(graph, keys):
    seen, stack = set(), [k for k in keys if k in graph]
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        stack.extend(d for d in graph[k].dependencies if d in graph and d not in seen)
    return seen


def _topological(graph):
    """The keys of ``graph``, every task after its dependencies."""
    order, state = [], {}
    for root in graph:
        if root in state:
            continue
        stack = [(root, iter(graph[root].dependencies))]
        state[root] = 1
        while stack:
            k, deps = stack[-1]
            d = next((d for d in deps if d in graph and d not in state), None)
            if d is None:
                stack.pop()
                order.append(k)
                state[k] = 2
            else:
                state[d] = 1
                stack.append((d, iter(graph[d].dependencies)))
    return order


def _footprints(graph, order, values, leaves):
    """``{key: frozenset of partitions}`` through the values not on the driver."""
    fp = {}
    empty = frozenset()
    for k in order:
        if k in values:
            fp[k] = empty
        elif k in leaves:
            fp[k] = frozenset([leaves[k][1]])
        else:
            out = empty
            for d in graph[k].dependencies:
                if d in fp:
                    out = out | fp[d]
            fp[k] = out
    return fp


def _run_wave(graph, order, values, fp, exports, source):
    """One wave: the ``exports`` of one partition or of one pair of partitions, each
    computed where its partitions are (a job for the partitions, one for the
    pairs); returns their values."""
    if source is None:
        raise RuntimeError("dmargin's Spark scheduler found rows but no Spark source.")
    blocks, n_parts, stats = source
    by_part = {}
    for k in exports:
        by_part.setdefault(tuple(sorted(fp[k])), []).append(k)
    remaining = {k: graph[k] for k in graph if k not in values}
    plans, shared = {}, {}
    for parts, keys in by_part.items():
        tasks = _ancestors(remaining, keys)
        inputs = {d for k in tasks for d in graph[k].dependencies if d in values}
        for d in inputs:
            shared[d] = values[d]
        plans[parts] = ([graph[k] for k in order if k in tasks], sorted(inputs, key=str), keys)
    singles = [p for p in plans if len(p) == 1]
    pairs = [p for p in plans if len(p) == 2]
    sc = blocks.context
    started = time.perf_counter()
    try:
        broadcast = sc.broadcast((plans, shared))
    except Exception:
        error = stopped_error(sc, "the broadcast of a fit's state")
        if error is None:
            raise
        raise error from None
    results = []
    try:
        if singles:
            grouped = _grouped(blocks, n_parts, 2 * sc.defaultParallelism)
            results += _run_job(
                sc, grouped, _single_runner(broadcast), f"{len(singles)} row blocks"
            )
        if pairs:
            side = _grouped(blocks, n_parts, math.isqrt(2 * sc.defaultParallelism - 1) + 1)
            product = side.cartesian(side)
            # A job a task: the partials of an exact pass are O(N) a partition, and
            # Spark bounds a job's results (spark.driver.maxResultSize), not the fit's.
            for task in range(product.getNumPartitions()):
                results += _run_job(
                    sc,
                    product,
                    _pair_runner(broadcast),
                    f"{len(pairs)} pairs of row blocks",
                    [task],
                )
    finally:
        if stopped(sc) is None:  # else nothing to free, and the call would fail
            broadcast.unpersist()
    out = {}
    for part_values, nbytes in results:
        out.update(part_values)
        stats.bytes_to_driver += nbytes
        stats.largest_result = max(stats.largest_result, nbytes)
    stats.jobs += bool(singles) + (product.getNumPartitions() if pairs else 0)
    stats.tasks += len(singles) + len(pairs)
    stats.seconds += time.perf_counter() - started
    stats.waves.append((len(singles), len(pairs)))
    return out


def _grouped(blocks, n_parts, groups):
    """``blocks`` in at most ``groups`` Spark tasks, each running the plans of several
    partitions in turn (no shuffle): a task costs Spark tens of milliseconds, a
    small partition's tiles less."""
    return blocks if groups >= n_parts else blocks.coalesce(max(1, groups))


def _run_job(sc, rdd, runner, what, partitions=None):
    """``runner`` on ``partitions`` of ``rdd`` (default: all) as one job of its own
    job group, its wait bounded and Ctrl-C cancelling it (:func:`run_job`).
    Returns the results of every task, flat."""
    try:
        return run_job(sc, rdd, runner, f"tiles over {what}", partitions)
    except Exception as exc:
        if "maxResultSize" in str(exc):
            limit = sc.getConf().get("spark.driver.maxResultSize", "1g")
            raise PartialsTooLargeError(
                f"The partials of one Spark job of this fit ({what}) exceed "
                f"spark.driver.maxResultSize ({limit}). An exact fit brings each tile's "
                "partials to the driver, O(N) values a partition: fit a sample of "
                "anchors (n_anchors=1000; dmargin.spark.fit_cost compares the two), or "
                "raise spark.driver.maxResultSize and the driver's memory."
            ) from None
        raise


def _execute(plan, shared, blocks):
    """Run one plan on an executor: ``blocks`` are ``{partition: record}``, a record
    ``(partition, X, y, stats)``."""
    from dask._task_spec import execute_graph

    nodes, inputs, keys = plan
    cache = {k: shared[k] for k in inputs}
    for node in nodes:
        args = _leaf(node)
        if args is not None:
            record = blocks[args[1]]
            cache[node.key] = record[1] if args[2] == "X" else record[2]
    todo = {node.key: node for node in nodes if node.key not in cache}
    done = execute_graph(todo, cache=cache, keys=set(keys))
    result = {k: done[k] for k in keys}
    return result, len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def _single_runner(broadcast):
    def run(records):
        plans, shared = broadcast.value
        # Every record is read: a Python worker that leaves input unread is not reused.
        for record in records:
            plan = plans.get((record[0],))
            if plan is not None:
                yield _execute(plan, shared, {record[0]: record})

    return run


def _pair_runner(broadcast):
    def run(records):
        plans, shared = broadcast.value
        for first, second in records:
            # Each unordered pair once: the product holds (p, q) and (q, p).
            plan = plans.get((first[0], second[0])) if first[0] < second[0] else None
            if plan is not None:
                yield _execute(plan, shared, {first[0]: first, second[0]: second})

    return run
