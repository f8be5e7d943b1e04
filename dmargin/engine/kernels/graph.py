"""STIR's neighbour graph over the SURF family's pairs: pass 3 (two classes).

With every anchor's neighbours counted (pass 2, :mod:`.surf`), a pair ``{a, j}``
is an edge of weight ``W_aj = w_aj + w_ja``: ``w_aj = -1 / h_a`` when ``a`` finds
``j`` as a hit (same class), ``+1 / m_a`` as a miss, 0 when it does not find it
(``h_a``, ``m_a``: ``a``'s hits and misses).  A row's *finder* entry is
``(near_a, 1 / h_a, 1 / m_a)``; a row that is not an anchor has ``near = -inf``
and finds nothing.  Per row the pass sums ``G`` (:class:`GraphColumns`): the row
sums ``C_a = sum_j W_aj`` of the graph, each edge's powers once at each of its
ends, and the pairs found from both rows, by side
(:func:`dmargin.engine.thresholds.graph_row_sums`).  The distances, sub-tiles
and pair modes are pass 1's and 2's (:mod:`.surf`).
"""

from typing import NamedTuple

import numba
import numpy as np

from .._numba import helper, inline, twins
from .distance import tile_distances, transpose
from .lse import filled
from .modes import ORDERED, WITHIN
from .surf import TILE

#: Columns of the pass-3 partials.
GRAPH_WIDTH = 5


@inline
def graph_row(row, t0, t1, j0, ya, ia, fa, yq, iq, fq, ordered, cols, Ga):
    """One row's pairs with the candidates ``j0 + t``, ``t`` in ``[t0, t1)`` at
    distances ``row[t]`` (``fa``: the row's finder entry, ``fq``: the
    candidates', transposed to ``(3, n)``): the row's sums added to ``Ga``, each candidate's to
    ``cols[:, t]``.  Branch-free over the candidates (every pair adds, a pair
    neither row finds adds 0).  ``ordered``: the row itself is skipped, and a
    candidate that is an anchor (finite ``near``) is taken only from the row of
    lower index, so each pair counts once."""
    near_a, hit_a, miss_a = fa[0], -fa[1], fa[2]
    near_q, hit_q, miss_q = fq[0], fq[1], fq[2]
    s0, s1, s2, s3, s4 = 0.0, 0.0, 0.0, 0.0, 0.0
    for t in range(t0, t1):
        # Every value loaded unconditionally and tested with & and |: the
        # loop stays free of branches, so the compiler vectorises it.
        j = j0 + t
        d, near, hit_j, miss_j = row[t], near_q[j], -hit_q[j], miss_q[j]
        same = yq[j] == ya
        found_a = d < near_a
        found_j = d < near
        if ordered:  # (a loop invariant: the compiler takes it out of the loop)
            i = iq[j]
            keep = (i != ia) & ((near == -np.inf) | (i > ia))
            found_a = found_a & keep
            found_j = found_j & keep
        w = ((hit_a if same else miss_a) if found_a else 0.0) + (
            (hit_j if same else miss_j) if found_j else 0.0
        )
        w2 = w * w
        w3 = w2 * w
        mutual = 1.0 if found_a & found_j else 0.0
        hit = mutual if same else 0.0
        miss = mutual - hit
        s0 += w
        s1 += w2
        s2 += w3
        s3 += hit
        s4 += miss
        cols[0, t] += w
        cols[1, t] += w2
        cols[2, t] += w3
        cols[3, t] += hit
        cols[4, t] += miss
    Ga[0] += s0
    Ga[1] += s1
    Ga[2] += s2
    Ga[3] += s3
    Ga[4] += s4


@inline
def _fold_graph(D, p0, p1, q0, q1, ip, iq, yp, yq, fp, fq, mode, Gp, Gq, cols):
    """Add a sub-tile's pairs to both sides' graph partials (``fp``, ``fq``: finder
    entries transposed, ``(3, n)``; ``cols``: scratch ``(GRAPH_WIDTH, TILE)`` for
    the candidates' sums)."""
    same = p0 == q0 and mode == WITHIN
    nq = q1 - q0
    cols[:, :nq] = 0.0
    for a in range(p0, p1):
        t0 = a - q0 + 1 if same else 0
        graph_row(
            D[a - p0], t0, nq, q0, yp[a], ip[a], fp[:, a], yq, iq, fq, mode == ORDERED, cols, Gp[a]
        )
    for t in range(nq):
        for k in range(GRAPH_WIDTH):
            Gq[q0 + t, k] += cols[k, t]


@helper
def graph_pairs(Xp, ip, yp, Xq, iq, yq, dm, dw, kind, mode, fp, fq):
    """Per-row graph partials ``(n, GRAPH_WIDTH)`` of both row sets of a pair
    (``fp``, ``fq``: the rows' finder entries).  Returns ``(Gp, Gq)``; ``Gq``
    is ``Gp`` itself in the ``WITHIN`` mode."""
    n_p, n_q = Xp.shape[0], Xq.shape[0]
    Gp = filled((n_p, GRAPH_WIDTH), 0.0)
    Gq = Gp if mode == WITHIN else filled((n_q, GRAPH_WIDTH), 0.0)
    fp, fq = np.ascontiguousarray(fp.T), np.ascontiguousarray(fq.T)
    XT = np.empty((Xq.shape[1], TILE))
    D = np.empty((TILE, TILE))
    cnt = np.empty(TILE)
    cols = np.empty((GRAPH_WIDTH, TILE))
    for q0 in range(0, n_q, TILE):
        q1 = min(q0 + TILE, n_q)
        transpose(Xq, q0, q1, XT)
        for p0 in range(0, min(n_p, q1) if mode == WITHIN else n_p, TILE):
            p1 = min(p0 + TILE, n_p)
            tile_distances(Xp, p0, p1, XT, q1 - q0, dm, dw, kind, D, cnt)
            _fold_graph(D, p0, p1, q0, q1, ip, iq, yp, yq, fp, fq, mode, Gp, Gq, cols)
    return Gp, Gq


def _graph_tile(Xa, ia, ya, Xc, ic, yc, dm, dw, kind, fa, fc, n_parts):
    """Pass 3 for a sample of anchors against candidates (``ORDERED``): both sides'
    partials ``(Ga, Gc)``, ``n_parts`` threads over anchor sub-tiles, each adding
    its candidates' partials into its own copy."""
    n_a, n_c = Xa.shape[0], Xc.shape[0]
    n_tiles = (n_a + TILE - 1) // TILE
    n_parts = max(1, min(n_tiles, n_parts))
    fa, fc = np.ascontiguousarray(fa.T), np.ascontiguousarray(fc.T)
    Ga = filled((n_a, GRAPH_WIDTH), 0.0)
    Gc = filled((n_parts, n_c, GRAPH_WIDTH), 0.0)
    for part in numba.prange(n_parts):
        XT = np.empty((Xc.shape[1], TILE))
        D = np.empty((TILE, TILE))
        cnt = np.empty(TILE)
        cols = np.empty((GRAPH_WIDTH, TILE))
        for i in range(part, n_tiles, n_parts):
            p0 = i * TILE
            p1 = min(p0 + TILE, n_a)
            for q0 in range(0, n_c, TILE):
                q1 = min(q0 + TILE, n_c)
                transpose(Xc, q0, q1, XT)
                tile_distances(Xa, p0, p1, XT, q1 - q0, dm, dw, kind, D, cnt)
                _fold_graph(D, p0, p1, q0, q1, ia, ic, ya, yc, fa, fc, ORDERED, Ga, Gc[part], cols)
    return Ga, Gc.sum(axis=0)


class GraphColumns(NamedTuple):
    """Pass 3's partials ``G``, ``(rows, GRAPH_WIDTH)``, by column."""

    #: ``sum_j W_aj``: the row sum ``C_a``.
    w: np.ndarray
    #: ``sum_j W_aj^2``.
    w2: np.ndarray
    #: ``sum_j W_aj^3``.
    w3: np.ndarray
    #: Pairs of the same class found from both rows.
    mutual_hits: np.ndarray
    #: Pairs of two classes found from both rows.
    mutual_misses: np.ndarray


def graph_columns(G) -> GraphColumns:
    """The columns of pass-3 partials ``G`` by name."""
    return GraphColumns(*(G[..., k] for k in range(GRAPH_WIDTH)))


GRAPH_TWINS = twins(_graph_tile)
