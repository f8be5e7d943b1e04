"""What a fit on Spark will cost: the in-process work, and what Spark adds.

A Spark fit runs the estimator's graphs in waves (:mod:`._scheduler`): its
layout, tasks and jobs, and the bytes of partials that come to the driver
follow from N, A, the partitions and the estimator's settings.  Two layouts:

- **sampled anchors** (``n_anchors``): the anchors are held in the graph and
  broadcast; each partition's tiles run where it is cached, one task per
  partition (grouped), and each partition returns its per-anchor partial;
- **exact** (every row an anchor): each pair of partitions is a task of their
  cartesian product, reading both cached blocks where they are -- no block
  passes through the driver, as it would if anchor blocks were broadcast in
  turn -- and every tile's partial (a row block's anchors against the other
  block) comes to the driver, where the partials merge: O(N P) values a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._cost import FitCost, anchor_count, format_seconds
from .._cost import fit_cost as _in_process_cost

#: Seconds Spark adds to each job of a fit (scheduling a wave's tasks on
#: local[2], reading the broadcast): 0.2-0.5 s measured on this project's 2-core
#: machine (``tests/test_spark.py`` fits of a few thousand rows).
JOB_S = 0.3
#: Jobs a fit runs before its own passes (reading the partitions, the class
#: and scaling summaries).
PREPARE_JOBS = 3
#: Row-features per second of the read that caches the partitions as float64
#: blocks (Arrow to numpy, pickled into Spark's cache).
READ_RATE = 5.0e7


@dataclass(frozen=True)
class SparkFitCost:
    """A Spark fit's estimate (:func:`fit_cost`).

    Attributes
    ----------
    compute : FitCost or None
        The fit's own work, as :func:`dmargin.fit_cost` says in-process (``None``
        for an estimator that states no cost).
    layout : str
        ``"sampled"`` (a task per partition, anchors broadcast), ``"exact"`` (a
        task per pair of partitions) or ``"partitions"`` (an estimator that is not
        pairwise: a task per partition; one that gathers rows to the driver, as
        Simba, adds their bytes).
    tasks_per_pass : int
        Tile tasks of one pass over the rows (before Spark groups them).
    jobs : int
        Spark jobs, about: the reading and summaries, then a job a pass (an
        exact pass: one over the partitions, one for each task of their pairs).
    bytes_to_driver : float
        Partials that come back to the driver over the fit, about.
    seconds : float
        The compute's seconds, plus the jobs' and the read's.
    """

    compute: FitCost | None
    layout: str
    tasks_per_pass: int
    jobs: int
    bytes_to_driver: float
    seconds: float

    def __str__(self):
        return (
            f"~{format_seconds(self.seconds)} on Spark ({self.layout}: "
            f"{self.tasks_per_pass} tile tasks a pass, {self.jobs} jobs, "
            f"~{_size(self.bytes_to_driver)} of partials to the driver)"
        )


def _size(n):
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def _passes(estimator):
    """Passes over the rows: a pairwise fit's iterations, boosting rounds, or one (a
    solver's own iterations, as LDM's ``max_iter``, run on the driver)."""
    names = ("max_iter", "n_estimators") if hasattr(estimator, "n_anchors") else ("n_estimators",)
    for name in names:
        value = getattr(estimator, name, None)
        if isinstance(value, int):
            return max(1, value)
    return 1


def fit_cost(estimator, n_samples, n_features, n_partitions, n_classes=2, n_cores=2):
    """What ``dmargin.spark.fit(estimator, df)`` will cost on ``n_partitions``
    partitions of ``n_samples x n_features`` rows (module docstring).

    The partials are counted as a pairwise fit's: per anchor, per class and per
    partition, ``n_neighbors`` neighbours of ``n_features + 2`` values (hard
    neighbours) or one (soft: I-RELIEF, IMMIGRATE).  An estimate, to within a
    factor of a few; ``spark_stats_`` of a fitted estimator says what it was.
    ``n_cores``: the executors' cores together (Spark's ``defaultParallelism``):
    an exact pass runs a job for each task of the pairs' product, whose side is
    about ``sqrt(2 n_cores)`` groups of partitions.

    Examples
    --------
    >>> import dmargin
    >>> from dmargin.spark import fit_cost
    >>> fit_cost(dmargin.ReliefF(n_anchors=1000), 10**7, 50, 40).layout
    'sampled'
    >>> fit_cost(dmargin.ReliefF(), 20_000, 50, 8).tasks_per_pass
    36
    """
    try:
        compute = _in_process_cost(estimator, n_samples, n_features)
    except (TypeError, ValueError, ArithmeticError):
        compute = None
    p = max(1, int(n_partitions))
    m = anchor_count(getattr(estimator, "n_anchors", None), n_samples)
    exact = m is None and hasattr(estimator, "n_anchors")
    passes = _passes(estimator)
    layout = "exact" if exact else "sampled" if hasattr(estimator, "n_anchors") else "partitions"
    tasks = p * (p + 1) // 2 if exact else p
    anchors = n_samples if m is None else m
    neighbours = getattr(estimator, "n_neighbors", 1)
    neighbours = neighbours if isinstance(neighbours, int) else 10
    partial = n_classes * neighbours * (n_features + 2) * 8.0
    driver = (
        anchors * p * partial * passes
        if hasattr(estimator, "n_anchors")
        else p * n_features * n_features * 8.0 * passes
    )
    side = min(p, math.isqrt(2 * max(1, int(n_cores)) - 1) + 1)
    jobs = PREPARE_JOBS + passes * ((1 + side * side) if exact else 1)
    seconds = (
        (0.0 if compute is None else compute.seconds)
        + jobs * JOB_S
        + n_samples * n_features / READ_RATE
    )
    return SparkFitCost(compute, layout, tasks, jobs, driver, seconds)
