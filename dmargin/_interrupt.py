"""A fit stopped by Ctrl-C leaves its estimator unfitted, and says so plainly.

Every estimator's ``fit`` is wrapped once, where its class is defined
(:class:`UnfittedOnInterrupt`): a ``KeyboardInterrupt`` -- Ctrl-C in a
terminal, a notebook's "interrupt kernel" -- removes the learned attributes
(the names ending in ``_`` that :func:`sklearn.utils.validation.check_is_fitted`
looks for), so an interrupted refit keeps no mix of the old fit's attributes
and the new one's, and is re-raised as it came.  The engine stops the fit's
tiles (:mod:`dmargin.engine.execution`).
"""

from __future__ import annotations

import functools


def is_interrupt(exc) -> bool:
    """Whether ``exc`` is a ``KeyboardInterrupt``, or an error raised because one
    landed inside compiled code (numba's ``SystemError`` "returned a result with
    an exception set", whose context is the interrupt)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        if not isinstance(exc, SystemError):
            return False
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def forget_fit(estimator):
    """Remove what ``fit`` learned: every attribute whose name ends in ``_``."""
    for name in [n for n in vars(estimator) if n.endswith("_") and not n.startswith("__")]:
        delattr(estimator, name)


def _unfitted_on_interrupt(fit):
    @functools.wraps(fit)
    def wrapped(self, *args, **kwargs):
        try:
            return fit(self, *args, **kwargs)
        except BaseException as exc:
            if not is_interrupt(exc):
                raise
            forget_fit(self)
            if isinstance(exc, KeyboardInterrupt):
                raise
        # Outside the handler: the interrupt alone, not the SystemError around it.
        raise KeyboardInterrupt

    wrapped.unfitted_on_interrupt = True
    return wrapped


class UnfittedOnInterrupt:
    """Mixin: a ``KeyboardInterrupt`` during ``fit`` leaves the estimator unfitted."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if callable(fit) and not getattr(fit, "unfitted_on_interrupt", False):
            cls.fit = _unfitted_on_interrupt(fit)
