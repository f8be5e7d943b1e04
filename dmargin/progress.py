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
tqdm bar (when tqdm is installed).  Without it, a fit in a Jupyter kernel whose
estimated cost (:func:`dmargin.fit_cost`) is at least :data:`AUTO_BAR_SECONDS`
draws a ``tqdm.auto`` bar of its own; shorter fits stay silent.  The switch is
:func:`set_auto_bar` (``set_auto_bar(False)`` for the session) or the
environment variable ``DMARGIN_PROGRESS=0`` (read when this module is imported).
Without tqdm there is no bar.

An iterative fit that stops once its change falls below ``tol`` (I-RELIEF,
IM4E) reports the change of each step: :attr:`ProgressEvent.expected` is the
number of steps its measured convergence points to, and
:attr:`ProgressEvent.remaining` counts to that instead of ``max_iter``.

A fit whose estimated cost exceeds ten minutes gives one
:class:`dmargin.LongFitWarning` before its work starts, with the estimate and a
cheaper setting when there is one (``warnings.filterwarnings("ignore",
category=dmargin.LongFitWarning)`` silences it).
"""

from __future__ import annotations

import contextvars
import logging
import math
import os
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

__all__ = ["ProgressEvent", "on_progress", "tqdm_bar", "set_auto_bar"]

logger = logging.getLogger("dmargin.progress")
# The outermost fit's steps (None outside a fit): inner fits and the engine report to it.
_ACTIVE = contextvars.ContextVar("dmargin_progress_active", default=None)
# ``(id(estimator), seconds)``: the estimate of the outermost fit whose door has just
# been passed, for its steps to pick up (the notebook bar).
_ESTIMATE = contextvars.ContextVar("dmargin_progress_estimate", default=None)

#: Seconds of estimated cost from which a fit in a notebook draws a bar by default.
AUTO_BAR_SECONDS = 30.0
#: Changes of a converging fit the rate of convergence is measured over.
_RATE_WINDOW = 4
_auto_bar = os.environ.get("DMARGIN_PROGRESS", "1").strip().lower() not in (
    "0",
    "false",
    "no",
    "off",
)


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
        iteration), in [0, 1).
    expected : int or None
        The steps the fit is expected to take from its measured convergence,
        or ``None`` when nothing points below ``total``.  A fit that stops
        once a step's change falls below ``tol`` (I-RELIEF, IM4E) fits the
        geometric decay of its last changes (at least two): with ratio ``r``
        between successive changes and last change ``c``, it stops after
        about ``log(tol / c) / log(r)`` more steps, at most ``total``.
    """

    estimator: str
    unit: str
    done: int
    total: int
    elapsed: float
    final: bool = False
    fraction: float = 0.0
    expected: int | None = None

    @property
    def remaining(self) -> float | None:
        """Seconds left at the pace so far (``None`` before any work): to ``expected``
        steps when the convergence says how many, else to ``total``."""
        if self.final:
            return 0.0
        progressed = self.done + self.fraction
        if progressed <= 0:
            return None
        target = self.total if self.expected is None else self.expected
        return self.elapsed / progressed * max(target - progressed, 0.0)


def expected_steps(changes, tol, done, total):
    """The steps a fit that stops below ``tol`` will take, from its ``changes`` so far.

    ``None`` when they do not say (fewer than two, no ``tol``, not decreasing).
    """
    if not tol or tol <= 0 or len(changes) < 2:
        return None
    recent = [float(c) for c in changes[-_RATE_WINDOW:]]
    if not all(math.isfinite(c) and c > 0 for c in recent):
        return None
    rate = (recent[-1] / recent[0]) ** (1.0 / (len(recent) - 1))
    if recent[-1] < tol:
        return done
    if not 0.0 < rate < 1.0:
        return None
    return int(min(total, done + math.ceil(math.log(tol / recent[-1]) / math.log(rate))))


class _Steps:
    def __init__(self, estimator, unit, total, emit):
        self.estimator, self.unit, self.total, self.emit = estimator, unit, total, emit
        self.done, self.start = 0, time.perf_counter()
        self.changes, self.expected = [], None

    def event(self, final=False, fraction=0.0):
        """The :class:`ProgressEvent` of the steps done so far."""
        total = self.done if final else max(self.total, self.done + (fraction > 0))
        expected = (
            None
            if final or self.expected is None
            else max(self.expected, self.done + (fraction > 0))
        )
        return ProgressEvent(
            self.estimator,
            self.unit,
            self.done,
            total,
            time.perf_counter() - self.start,
            final,
            fraction,
            expected,
        )

    def step(self, n=1, *, change=None, tol=None):
        """Count ``n`` finished steps; ``change``: the last step's change, which
        stops the fit once below ``tol`` (:attr:`ProgressEvent.expected`)."""
        self.done += n
        if change is not None:
            self.changes.append(change)
            self.expected = expected_steps(self.changes, tol, self.done, self.total)
        if self.emit:
            _log(self.event())


def _log(event):
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "%s: %d/%d %s%s",
            event.estimator,
            event.done,
            event.total,
            event.unit,
            " (done)" if event.final else "",
            extra={"dmargin_progress": event},
        )


@contextmanager
def fit_steps(estimator, unit, total):
    """The outer loop of ``estimator.fit``: ``steps.step()`` after each step.

    Inside another fit's loop nothing is reported (the outer fit counts).  The
    outermost fit draws a notebook bar when its door estimated it long
    (:func:`expect_seconds`, :data:`AUTO_BAR_SECONDS`).
    """
    outer = _ACTIVE.get() is None
    steps = _Steps(type(estimator).__name__, unit, int(total), emit=outer)
    with _notebook_bar(estimator) if outer else nullcontext():
        token = _ACTIVE.set(steps if outer else _ACTIVE.get())
        try:
            yield steps
        finally:
            _ACTIVE.reset(token)
        if outer:
            _log(steps.event(final=True))


@contextmanager
def inner_fits():
    """Fits inside the block are parts of the fit in progress (a wrapper's fits of
    its estimator, in any thread or task): they report nothing and never warn."""
    if _ACTIVE.get() is not None:
        yield
        return
    token = _ACTIVE.set(_Steps("", "", 0, emit=False))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def in_fit():
    """Whether a fit is in progress in this context (the fit starting now is inside
    another: a wrapper's, or a nested learner's)."""
    return _ACTIVE.get() is not None


def expect_seconds(estimator, seconds):
    """The outermost fit of ``estimator`` starting now is estimated at ``seconds``
    (``None``: unknown), for its notebook bar (:data:`AUTO_BAR_SECONDS`)."""
    _ESTIMATE.set(None if seconds is None else (id(estimator), float(seconds)))


def set_auto_bar(enabled=True):
    """Whether a notebook fit estimated at :data:`AUTO_BAR_SECONDS` or more draws a
    ``tqdm.auto`` bar by itself (on by default; ``DMARGIN_PROGRESS=0`` in the
    environment turns the default off).  Returns the previous setting.

    Examples
    --------
    >>> from dmargin.progress import set_auto_bar
    >>> before = set_auto_bar(False)   # no automatic bars in this session
    >>> _ = set_auto_bar(before)
    """
    global _auto_bar
    before, _auto_bar = _auto_bar, bool(enabled)
    return before


def in_notebook():
    """Whether this process is a Jupyter kernel (an IPython kernel with a front end)."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipykernel needs IPython
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _listened():
    """Whether someone already follows progress (an :func:`on_progress` block)."""
    return any(isinstance(h, _Handler) for h in logger.handlers)


def _notebook_bar(estimator):
    """The automatic bar of a long notebook fit, or nothing."""
    estimate = _ESTIMATE.get()
    if estimate is None or estimate[0] != id(estimator):
        return nullcontext()
    _ESTIMATE.set(None)
    if not (_auto_bar and estimate[1] >= AUTO_BAR_SECONDS and in_notebook()) or _listened():
        return nullcontext()
    try:
        import tqdm.auto  # noqa: F401
    except ImportError:  # no tqdm: no bar, as promised
        return nullcontext()
    return tqdm_bar()


def step_fraction(done, total):
    """Within the current step, ``done`` of ``total`` pieces of work are finished.

    Called by the engine's in-process loops after each anchor block, so that
    a long iteration shows movement; nothing happens outside a fit or when
    nobody listens.
    """
    steps = _ACTIVE.get()
    if steps is not None and steps.emit and 0 < done < total and logger.isEnabledFor(logging.DEBUG):
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
            bar = bars[event.estimator] = tqdm(
                total=event.total, desc=event.estimator, unit=event.unit, **kwargs
            )
        bar.total = event.total if event.expected is None else event.expected
        bar.n = event.done + event.fraction if event.fraction else event.done
        bar.refresh()
        if event.final:
            bar.close()
            del bars[event.estimator]

    try:
        with on_progress(update):
            yield
    finally:  # a fit that raised leaves no bar open
        for bar in bars.values():
            bar.close()
