"""Progress of a fit as structured events, for a terminal, a notebook or a log.

Every estimator's ``fit`` reports its outer loop -- I-RELIEF iterations,
online passes, IMMIGRATE steps, boosting rounds, elimination rounds -- as
:class:`ProgressEvent` records on the ``"dmargin.progress"`` logger (level
DEBUG, the event in the record's ``dmargin_progress`` attribute).  A fit
nested in another (BIM's IMMIGRATE learners, the IM4E prescreen) reports
through the outer one only, so counts are the outer loop's steps.  The last
event of a fit has ``final=True`` and ``done == total``: a fit that
converges early completes its bar.

Consumers never parse message text:

>>> from dmargin.progress import on_progress
>>> from sklearn.datasets import make_classification
>>> import dmargin
>>> X, y = make_classification(n_samples=60, n_features=4, random_state=0)
>>> events = []
>>> with on_progress(events.append):
...     _ = dmargin.IRelief(max_iter=5, tol=0).fit(X, y)
>>> [(e.done, e.total, e.final) for e in events][-2:]
[(5, 5, False), (5, 5, True)]

In a notebook, ``with dmargin.progress.tqdm_bar(): est.fit(X, y)`` shows a
tqdm bar (when tqdm is installed).
"""

from __future__ import annotations

import contextvars
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["ProgressEvent", "on_progress", "tqdm_bar"]

logger = logging.getLogger("dmargin.progress")
# The outermost fit's steps (None outside a fit): inner fits and the engine report to it.
_ACTIVE = contextvars.ContextVar("dmargin_progress_active", default=None)


@dataclass(frozen=True)
class ProgressEvent:
    """One step of a fit's outer loop.

    Attributes
    ----------
    estimator : str
        The class name of the estimator being fitted.
    unit : str
        What a step is ("iteration", "pass", "step", "round").
    done : int
        Steps finished.
    total : int
        Steps the fit will take at most (exact once ``final``).
    elapsed : float
        Seconds since the fit started.
    final : bool
        The fit ended (its last event; ``done == total``).
    fraction : float
        How much of the step in progress is done (tile blocks of a long
        in-process iteration), in [0, 1).
    """

    estimator: str
    unit: str
    done: int
    total: int
    elapsed: float
    final: bool = False
    fraction: float = 0.0

    @property
    def remaining(self) -> float | None:
        """Seconds left at the pace so far, if the total is reached (``None`` before any work)."""
        if self.final:
            return 0.0
        progressed = self.done + self.fraction
        if progressed <= 0:
            return None
        return self.elapsed / progressed * (self.total - progressed)


class _Steps:
    def __init__(self, estimator, unit, total, emit):
        self.estimator, self.unit, self.total, self.emit = estimator, unit, total, emit
        self.done, self.start = 0, time.perf_counter()

    def event(self, final=False, fraction=0.0):
        """The :class:`ProgressEvent` of the steps done so far."""
        total = self.done if final else max(self.total, self.done + (fraction > 0))
        return ProgressEvent(self.estimator, self.unit, self.done, total,
                             time.perf_counter() - self.start, final, fraction)

    def step(self, n=1):
        """Count ``n`` finished steps."""
        self.done += n
        if self.emit:
            _log(self.event())

    def grow(self, total):
        """A better bound on the total (e.g. an elimination schedule)."""
        self.total = total


def _log(event):
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: %d/%d %s%s", event.estimator, event.done, event.total, event.unit,
                     " (done)" if event.final else "", extra={"dmargin_progress": event})


@contextmanager
def fit_steps(estimator, unit, total):
    """The outer loop of ``estimator.fit``: ``steps.step()`` after each step.

    Inside another fit's loop nothing is reported (the outer fit counts).
    """
    outer = _ACTIVE.get() is None
    steps = _Steps(type(estimator).__name__, unit, int(total), emit=outer)
    token = _ACTIVE.set(steps if outer else _ACTIVE.get())
    try:
        yield steps
    finally:
        _ACTIVE.reset(token)
    if outer:
        _log(steps.event(final=True))


def step_fraction(done, total):
    """Within the current step, ``done`` of ``total`` pieces of work are finished.

    Called by the engine's in-process loops after each anchor block, so that
    a long iteration shows movement; nothing happens outside a fit or when
    nobody listens.
    """
    steps = _ACTIVE.get()
    if steps is not None and steps.emit and 0 < done < total \
            and logger.isEnabledFor(logging.DEBUG):
        _log(steps.event(fraction=done / total))


class _Handler(logging.Handler):
    def __init__(self, callback):
        super().__init__(logging.DEBUG)
        self.callback = callback

    def emit(self, record):
        event = getattr(record, "dmargin_progress", None)
        if event is not None:
            self.callback(event)


@contextmanager
def on_progress(callback):
    """Call ``callback(event)`` for every :class:`ProgressEvent` inside the block."""
    handler = _Handler(callback)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.DEBUG:
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@contextmanager
def tqdm_bar(**kwargs):
    """A tqdm bar (``tqdm.auto``: a widget in a notebook) that follows the fits inside."""
    try:
        from tqdm.auto import tqdm
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("tqdm_bar needs tqdm: pip install tqdm.") from exc
    bars = {}

    def update(event):
        bar = bars.get(event.estimator)
        if bar is None:
            bar = bars[event.estimator] = tqdm(total=event.total, desc=event.estimator,
                                               unit=event.unit, **kwargs)
        bar.total = event.total
        bar.n = event.done + event.fraction if event.fraction else event.done
        bar.refresh()
        if event.final:
            bar.close()
            del bars[event.estimator]

    with on_progress(update):
        yield
