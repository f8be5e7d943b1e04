"""What every fit uses and nothing else defines: the package's logger, a timer,
random generators and the stack level that points a warning at the user's call.

A leaf: it imports nothing from dmargin, so any module can import it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
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


def user_stacklevel():
    """``stacklevel`` for a ``warnings.warn`` in the caller that points at the
    first frame outside dmargin: the user's call, however deep the fit path."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
