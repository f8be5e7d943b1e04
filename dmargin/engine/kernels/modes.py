"""Pair modes: which pairs of rows a kernel visits for a block ``P`` against ``Q``.

The symmetric kernels (IMMIGRATE's quadratic distances, the SURF family's
passes) take one of three modes, so that a symmetric grid of blocks computes
every distance once instead of twice:

``ORDERED``
    the rows of ``P`` are anchors against the candidates ``Q`` (new rows, a
    sample of anchors, leave-one-out): every ordered pair, only ``P`` gets
    partials; a candidate with the anchor's global index is the anchor itself
    and is skipped.
``CROSS``
    ``P`` and ``Q`` are disjoint row sets: every pair once, serving both rows.
``WITHIN``
    ``P`` is ``Q``: each unordered pair ``i < j`` once, serving both rows.
"""

import numpy as np

ORDERED, CROSS, WITHIN = 0, 1, 2


def block_pair(Xp, start_p, Xq, start_q):
    """The global row indices of two row blocks of a symmetric grid and their mode
    (``WITHIN`` for a block against itself, else ``CROSS``)."""
    ip = np.arange(start_p, start_p + Xp.shape[0])
    iq = np.arange(start_q, start_q + Xq.shape[0])
    return ip, iq, WITHIN if start_p == start_q else CROSS
