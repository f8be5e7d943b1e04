"""What every fit uses and nothing else defines: the package's logger, a timer,
random generators and :func:`warn`, which points a warning at the user's call.

A leaf: it imports nothing from dmargin, so any module can import it.
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from contextlib import contextmanager

import numpy as np

logger = logging.getLogger("dmargin")


@contextmanager
def timer(message, *args):
    """Log how long the block took, at DEBUG level (like dask-ml's ``_timer``)."""
    start = time.perf_counter()
    yield
    logger.debug(message + " took %.3f s", *args, time.perf_counter() - start)


def make_rng(random_state) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a RandomState."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32 - 1))
    return np.random.default_rng(random_state)


#: Packages whose frames lie between the user and dmargin: scikit-learn's
#: meta-estimators (``Pipeline``, ``GridSearchCV``, ``cross_val_score``) and joblib.
_BETWEEN = ("sklearn", "joblib")


def user_stacklevel(skip=()):
    """``stacklevel`` for a ``warnings.warn`` in the caller that points at the
    user's call: the first frame outside dmargin, scikit-learn and joblib (and the
    packages ``skip``), however deep the fit path and however many wrappers (TuRF,
    Iter, VLS, a ``Pipeline``) lie between.  Where no such frame exists (a fit in a
    joblib worker process), the first frame outside dmargin."""
    frame, level, outside = sys._getframe(1), 1, None
    while frame is not None:
        top = (frame.f_globals.get("__name__") or "").split(".", 1)[0]
        if top != "dmargin":
            outside = outside or level
            if top not in _BETWEEN and top not in skip:
                return level
        frame, level = frame.f_back, level + 1
    return outside or level


def warn(message, category=UserWarning, skip=()):
    """``warnings.warn(message, category)`` reported at the user's line.

    Every warning dmargin raises goes through here (``tests/test_layout.py``
    checks it): the warning names the user's call (:func:`user_stacklevel`), never
    a line of dmargin, whichever estimator or wrapper raised it.

    Parameters
    ----------
    message : str
    category : type of Warning, default=UserWarning
    skip : tuple of str, default=()
        Other top-level packages whose frames lie between the user and dmargin
        (``"pyspark"``: pyspark.ml's ``fit`` calls the stage's ``_fit``).
    """
    # user_stacklevel counts from its caller: this function's frame is level 1.
    warnings.warn(message, category, stacklevel=user_stacklevel(skip))
