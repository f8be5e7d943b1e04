"""Tiles of the SURF family (SURF, SURF*, MultiSURF, MultiSURF*): two passes over the same pairs.

Pure numba kernels over a pair of row sets ``p`` (anchors) and ``q``
(candidates); they take arrays and scalars only.

Notation (Robnik-Sikonja & Kononenko 2003; skrebate 0.8.4's ``relieff.py``):
for rows ``a`` and ``j`` the feature difference is

.. math::
    \\mathrm{diff}_f(a, j) = |x_{af} - x_{jf}| \\ \\text{(continuous)}, \\qquad
    [x_{af} \\ne x_{jf}] \\ \\text{(discrete: } dm_f = 1)

and the distance ``d_aj = sum_f w_f diff_f(a, j)`` with ``w_f = 1`` for a
continuous feature and ``w_f = dw`` for a discrete one (skrebate's mixed
data weigh a discrete mismatch ``A / A_discrete``).  Scoring may *ramp* a
continuous difference (skrebate's mixed data): a difference above
``ramp_f`` counts 1 (``ramp_f = inf``: no ramp).

- **Pass 1** (:func:`moments_pairs`, :data:`MOMENTS_TWINS`): per anchor the
  moments ``(count, sum d, sum d^2)`` over every candidate other than itself.
- **Pass 2** (:func:`score_pairs`, :data:`SCORE_TWINS`): per anchor, per
  neighbour set ``s`` (0: near, ``d < near_a``; 1: far, ``d > far_a``) and
  per class ``c`` of the candidate, the sum of the (scoring) differences in
  ``P[a, s, c, :A]`` and the neighbour count in ``P[a, s, c, A]``; with
  missing values (``MISSING``) a count per feature in ``P[a, s, c, A:2A]``
  (the neighbours scored on it).  A continuous target (``bound > 0``, every
  row in class 0) classes each pair instead: ``c = 0`` (a hit) when
  ``|t_a - t_j| < bound``, ``c = 1`` (a miss) otherwise (skrebate's
  continuous endpoint); the test is symmetric, so both sides of a pair
  agree.

Differences and distances are :mod:`.distance`'s (``PLAIN``, ``MASKED``,
``MISSING``).

Partials over disjoint candidate sets add (:func:`dmargin.engine.merge.add`).

Pair modes, as IMMIGRATE's quadratic kernels (:mod:`.modes`): ``ORDERED``,
``WITHIN`` and ``CROSS``.  ``d`` is symmetric, so a symmetric grid of blocks
computes every distance once per pass instead of twice.

Layout: the pairs are visited in sub-tiles of :data:`TILE` x :data:`TILE`
rows (pass 2: :data:`SCORE_TILE`).  A sub-tile's distances are computed
vectorised over its candidates (transposed to features by rows), four
anchors by two features a sweep (:func:`.distance.plain_tile`: each load of
two candidate features serves four anchors, each load and store of an
anchor's running row two features), then folded into the moments (pass 1)
or into neighbour lists (pass 2).  Pass 2 first sorts both row sets by class, so that a row's
neighbours of one class are one vector compaction (:mod:`.lanes`) of a range of
positions, summed four rows per sweep (:mod:`.surf_rows`).

Exact in float64: every distance is the same sum over the features, two at
a time in order, in every pass, mode and either order of the pair
(:func:`.distance.plain_tile`, :func:`.distance.plain_distance`), and the
neighbour tests are strict (``<``, ``>``) as skrebate's.  Pass 1 sums every
distance and its square, so it measures them in float64.  Pass 2 only
decides sides of thresholds: on ``PLAIN`` rows, every neighbour weighing 1,
it measures its sub-tiles in float32 (:func:`.distance.plain_tile` on float32 rows,
twice the pairs a vector), compacts the candidates whose float32 distance is
within the error bound (:func:`.distance.float32_band`) of the set's
side, and places those within the bound of the threshold by their float64
distance (:func:`~.surf_rows.recheck`): the neighbours are the float64 distances' own.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from .._numba import bare, helper, inline, twins
from .distance import MASKED, MISSING, PLAIN, plain_tile, tile_distances, transpose
from .lanes import compact
from .lse import by_class, class_order, filled
from .modes import CROSS, ORDERED, WITHIN
from .surf_rows import add_rows, add_rows_soft, recheck, threshold_band, value_scale

#: Rows of each side per sub-tile: its distances, the transposed candidates and
#: both sides' partials stay in the L1/L2 caches.
TILE = 128
#: Pass 2's sub-tiles: larger, as each row's neighbour lists cost a setup per
#: sub-tile and its float32 distances take half the bytes.
SCORE_TILE = 256
__all__ = ["MASKED", "MISSING", "PLAIN"]  # the difference kinds (:mod:`.distance`)

# -- the kernels' argument bundles (named tuples: numba passes them as one argument) --


class Scoring(NamedTuple):
    """How pass 2 scores a pair: the distance (:mod:`.distance`'s ``dm``, ``dw``,
    ``ramp``, ``kind``: ``FeatureKinds.params``), a continuous target's
    ``bound`` (``0``: class labels) and whether the squared differences are
    summed too (STIR)."""

    dm: np.ndarray
    dw: float
    ramp: np.ndarray
    kind: int
    bound: float
    squares: bool


class _Side(NamedTuple):
    """One row set of a pair in pass 2, sorted by class."""

    X: np.ndarray
    ids: np.ndarray
    #: Class ``c`` holds rows ``starts[c]:starts[c + 1]``.
    starts: np.ndarray
    near: np.ndarray
    far: np.ndarray
    spread: np.ndarray
    #: The rows' targets (``bound > 0``), else not read.
    target: np.ndarray


class _Candidates(NamedTuple):
    """The candidates of one row's neighbours: a range of a :class:`_Side` from ``first``."""

    X: np.ndarray
    ids: np.ndarray
    target: np.ndarray
    starts: np.ndarray
    first: int


class _Scratch(NamedTuple):
    """A sub-tile's buffers: compacted positions, masks, weights."""

    rows: np.ndarray
    keep: np.ndarray
    wts: np.ndarray


# -- the partials by name (read outside this module by these names only) -------------


class MomentColumns(NamedTuple):
    """Pass 1's partials ``M`` (:func:`moments_pairs`), ``(rows, 3)``, by column."""

    #: The other rows at a distance.
    count: np.ndarray
    #: ``sum_j d_aj``.
    total: np.ndarray
    #: ``sum_j d_aj^2``.
    squares: np.ndarray


def moment_columns(M) -> MomentColumns:
    """The columns of pass-1 partials ``M`` (or of their totals, one row) by name."""
    return MomentColumns(M[..., 0], M[..., 1], M[..., 2])


class Thresholds(NamedTuple):
    """Each anchor's thresholds of pass 2 (:func:`score_pairs`): near ``d < near``, far
    ``d > far`` (``+inf``: no far set) and the spread of the SWRF family's weights
    (empty: every neighbour weighs 1)."""

    near: np.ndarray
    far: np.ndarray
    spread: np.ndarray


#: The neighbour sets of pass 2's partials ``P[row, set, class, column]``.
NEAR, FAR = 0, 1


class ScoreColumns(NamedTuple):
    """Pass 2's columns (the last axis of ``P``) by name, as slices."""

    #: The (weighted) difference sums, one per feature.
    sums: slice
    #: The neighbour count, or one per feature (missing values).
    counts: slice
    #: The SWRF family's weight sums, one or one per feature (else empty).
    weights: slice
    #: STIR's squared difference sums, one per feature (else empty).
    squares: slice


def score_columns(n_features, missing=False, squares=False, soft=False) -> ScoreColumns:
    """Where each of pass 2's sums lies in a partial of :func:`partial_width` columns."""
    a = n_features
    counts = slice(a, 2 * a) if missing else slice(a, a + 1)
    end = counts.stop
    weights = slice(end, end + (a if missing else 1)) if soft else slice(end, end)
    end = weights.stop
    return ScoreColumns(slice(0, a), counts, weights, slice(end, end + a if squares else end))


def columns_of(width, missing=False, squares=False, soft=False) -> ScoreColumns:
    """:func:`score_columns` of a partial (or a neighbour set of one) ``width`` columns wide."""
    per_feature = 1 + missing + (soft and missing) + squares
    fixed = (not missing) + (soft and not missing)
    return score_columns((width - fixed) // per_feature, missing, squares, soft)


@inline
def partial_width(n_features, kind, squares, soft=False):
    """Per-row partial length of pass 2: difference sums and one neighbour count
    (``A + 1``), or a count per feature (``MISSING``: ``2 A``); ``A`` more for
    the squared differences (``squares``).  ``soft`` (weighted neighbours):
    the weight sum after the count (``A + 2``; ``MISSING``: ``3 A``)."""
    if soft:
        return 3 * n_features if kind == MISSING else n_features + 2
    base = 2 * n_features if kind == MISSING else n_features + 1
    return base + n_features if squares else base


@inline
def soft_weight(d, centre, spread):
    """The SWRF family's weight of a neighbour at distance ``d``:
    ``tanh(2 |d - centre| / spread)`` (skrebate's ``2 / (1 + exp(-4 |d - c| / s)) - 1``),
    0 at the centre, 1 far from it; a zero ``spread`` counts as 1."""
    return math.tanh(2.0 * abs(d - centre) / (spread if spread > 0.0 else 1.0))


# ---------------------------------------------------------------------------
# Pass 1: distance moments
# ---------------------------------------------------------------------------


@helper
def moments_pairs(Xp, ip, Xq, iq, dm, dw, kind, mode):
    """Per-row moments ``(count, sum d, sum d^2)`` of both row sets of a pair.

    .. math:: M_a = \\left(\\sum_{j \\ne a} 1, \\sum_{j \\ne a} d_{aj},
              \\sum_{j \\ne a} d_{aj}^2\\right)

    Returns ``(Mp, Mq)``; ``Mq`` is empty in the ``ORDERED`` mode and is
    ``Mp`` itself in the ``WITHIN`` mode (one block: read side 0 only).
    """
    n_p, n_q = Xp.shape[0], Xq.shape[0]
    Mp = filled((n_p, 3), 0.0)
    # WITHIN: both rows of a pair are in ``Mp`` (the pair is one block).
    Mq = Mp if mode == WITHIN else filled((n_q if mode == CROSS else 0, 3), 0.0)
    XT = np.empty((Xq.shape[1], TILE))
    D = np.empty((TILE, TILE))
    cols = np.empty((3, TILE))
    cnt = np.empty(TILE)
    for q0 in range(0, n_q, TILE):
        q1 = min(q0 + TILE, n_q)
        transpose(Xq, q0, q1, XT)
        for p0 in range(0, min(n_p, q1) if mode == WITHIN else n_p, TILE):
            p1 = min(p0 + TILE, n_p)
            tile_distances(Xp, p0, p1, XT, q1 - q0, dm, dw, kind, D, cnt)
            _fold_moments(D, p0, p1, q0, q1, ip, iq, mode, kind, Mp, Mq, cols)
    return Mp, Mq


@bare
def _fold_moments(D, p0, p1, q0, q1, ip, iq, mode, kind, Mp, Mq, cols):
    """Add a sub-tile's distances to the rows' moments (``cols``: scratch ``(3, TILE)``
    for the candidates' column sums).  ``MISSING``: a NaN distance (no
    feature in common) is left out, as skrebate's ``nanmean``/``nanstd``."""
    same = p0 == q0 and mode == WITHIN
    nq = q1 - q0
    cols[:, :nq] = 0.0
    for a in range(p0, p1):
        row = D[a - p0]
        t0 = a - q0 + 1 if same else 0
        s1, s2 = 0.0, 0.0
        if kind == MISSING:
            count = 0.0
            for t in range(t0, nq):
                d = row[t]
                if d == d and (mode != ORDERED or iq[q0 + t] != ip[a]):
                    s1 += d
                    s2 += d * d
                    count += 1.0
                    cols[0, t] += 1.0
                    cols[1, t] += d
                    cols[2, t] += d * d
        else:
            for t in range(t0, nq):
                d = row[t]
                s1 += d
                s2 += d * d
                cols[1, t] += d
                cols[2, t] += d * d
            count = float(nq - t0)
            if mode == ORDERED:  # the anchor itself (distance 0) does not count
                for t in range(nq):
                    if iq[q0 + t] == ip[a]:
                        count -= 1.0
        Mp[a, 0] += count
        Mp[a, 1] += s1
        Mp[a, 2] += s2
    if mode == ORDERED:
        return
    for t in range(nq):
        if kind == MISSING:
            Mq[q0 + t, 0] += cols[0, t]
        else:
            # rows p0..p1 before candidate t: all of them, or those above the diagonal
            Mq[q0 + t, 0] += float(min(p1, q0 + t) - p0) if same else float(p1 - p0)
        Mq[q0 + t, 1] += cols[1, t]
        Mq[q0 + t, 2] += cols[2, t]


def _moments_tile(Xa, ia, Xc, ic, dm, dw, kind):
    """Pass 1 for anchors against candidates (``ORDERED``), threads over anchor sub-tiles."""
    n_a = Xa.shape[0]
    M = filled((n_a, 3), 0.0)
    n_tiles = (n_a + TILE - 1) // TILE
    for i in numba.prange(n_tiles):
        p0 = i * TILE
        p1 = min(p0 + TILE, n_a)
        XT = np.empty((Xc.shape[1], TILE))
        D = np.empty((TILE, TILE))
        cols = np.empty((3, TILE))
        cnt = np.empty(TILE)
        for q0 in range(0, Xc.shape[0], TILE):
            q1 = min(q0 + TILE, Xc.shape[0])
            transpose(Xc, q0, q1, XT)
            tile_distances(Xa, p0, p1, XT, q1 - q0, dm, dw, kind, D, cnt)
            _fold_moments(D, p0, p1, q0, q1, ia, ic, ORDERED, kind, M, M, cols)
    return M


# ---------------------------------------------------------------------------
# Pass 2: neighbours within the thresholds, scored
# ---------------------------------------------------------------------------


@inline
def _score_row(x, drow, t0, t1, lim, self_idx, ta, cand, how, P, buf):
    """One row's neighbours among the class-sorted candidates ``cand.first + [t0, t1)``
    (:class:`_Candidates`), added to ``P[set, class]``: per set and class, one
    compaction over that class's positions, then one sum (:func:`~.surf_rows.add_rows`).
    ``lim``: the row's ``(near, far, spread, scale)``; ``scale >= 0``: ``drow`` holds
    the float32 distances of ``PLAIN`` rows whose values are at most ``scale`` in
    magnitude, within ``eps`` (:func:`~.surf_rows.threshold_band`) of the float64
    ones near a threshold: the candidates within ``eps`` of the set's side are
    compacted, counting those within ``eps`` of the threshold; where there are any,
    those the float32 value cannot place are placed by their float64 distance
    (:func:`~.surf_rows.recheck`);
    ``spread >= 0`` (the SWRF
    family): each neighbour weighs :func:`soft_weight` of its distance around
    the set's threshold (:func:`~.surf_rows.add_rows_soft`, ``buf.wts`` its buffer);
    ``spread < 0``: every neighbour weighs 1.

    ``how.bound > 0`` (a continuous target ``ta`` of the row, ``cand.target``
    of the others; every row in sort class 0): the classes are the hits
    ``|ta - to[t]| < bound`` and the misses, ``buf.keep[0]`` and
    ``buf.keep[1]``; otherwise ``buf.keep[0]`` is all true.
    """
    near, far, spread, scale = lim
    rows, keep, wts = buf
    Xo, ids, to, starts, o0 = cand
    dm, dw, ramp, kind, bound, squares = how
    n_sets, n_classes = P.shape[0], P.shape[1]
    split = bound > 0.0
    masked = split or self_idx >= 0
    if split:
        for t in range(t0, t1):
            hit = abs(ta - to[t]) < bound
            keep[0, t] = hit
            keep[1, t] = not hit
    for s in range(n_sets):
        for c in range(n_classes):
            sort_class = 0 if split else c
            lo = max(t0, starts[sort_class] - o0)
            hi = min(t1, starts[sort_class + 1] - o0)
            if lo >= hi:
                continue
            thr = near if s == 0 else far
            eps = threshold_band(scale, x.shape[0], thr) if scale >= 0.0 else 0.0
            mask = keep[c if split else 0]
            edge = thr + eps if s == 0 else thr - eps
            certain = thr - eps if s == 0 else thr + eps
            m, unsure = compact(drow, lo, hi, s, edge, certain, masked, self_idx, ids, mask, rows)
            if unsure:
                m = recheck(x, Xo, o0, drow, rows, m, s, thr, eps)
            if m:
                if spread >= 0.0:
                    centre = near if s == 0 else far
                    for r in range(m):
                        wts[r] = soft_weight(drow[rows[r]], centre, spread)
                for r in range(m):
                    rows[r] += o0
                if spread >= 0.0:
                    add_rows_soft(x, Xo, rows, wts, m, dm, ramp, kind, P[s, c])
                else:
                    add_rows(x, Xo, rows, m, dm, ramp, kind, P[s, c], squares)


@bare
def _fold_scores(D, DT, p, q, p0, p1, q0, q1, how, mode, Pp, Pq, buf, scale):
    """Add a sub-tile's neighbours to both sides' partials: ``p`` and ``q`` are the
    two row sets (:class:`_Side`, sorted by class), ``how`` the scoring
    (:class:`Scoring`), ``buf`` the scratch (:class:`_Scratch`).  The
    candidates' side reads the transposed distances ``DT``; both sides run
    the same code (one copy to compile: the sides' fields are unified one by
    one, as two named tuples of different array types would not be).  ``scale``:
    the rows' largest magnitude for float32 distances, -1 for float64 ones
    (:func:`_score_row`)."""
    same = p0 == q0 and mode == WITHIN
    if mode != ORDERED:
        for a0 in range(0, p1 - p0, 8):  # eight rows of D a sweep: whole lines of DT
            for t in range(q1 - q0):
                for a in range(a0, min(a0 + 8, p1 - p0)):
                    DT[t, a] = D[a, t]
    soft = p.spread.shape[0] > 0
    for side in range(1 if mode == ORDERED else 2):
        if side == 0:  # anchors p against candidates q
            M, X, i0, i1, near, far, spread, P, T = (
                D,
                p.X,
                p0,
                p1,
                p.near,
                p.far,
                p.spread,
                Pp,
                p.target,
            )
            Xo, ids, o0, o1, starts, To = q.X, q.ids, q0, q1, q.starts, q.target
        else:  # candidates q against anchors p
            M, X, i0, i1, near, far, spread, P, T = (
                DT,
                q.X,
                q0,
                q1,
                q.near,
                q.far,
                q.spread,
                Pq,
                q.target,
            )
            Xo, ids, o0, o1, starts, To = p.X, p.ids, p0, p1, p.starts, p.target
        cand = _Candidates(Xo, ids[o0:o1], To[o0:o1], starts, o0)
        for i in range(i0, i1):
            # Each unordered pair of the diagonal sub-tile once: j > a.
            if same:
                t0, t1 = (i - o0 + 1, o1 - o0) if side == 0 else (0, min(o1, i) - o0)
            else:
                t0, t1 = 0, o1 - o0
            self_idx = p.ids[i] if mode == ORDERED else -1
            ta = T[i] if how.bound > 0.0 else 0.0
            lim = (near[i], far[i], spread[i] if soft else -1.0, scale)
            _score_row(X[i], M[i - i0], t0, t1, lim, self_idx, ta, cand, how, P[i], buf)


@inline
def _unsort(P, order):
    """Partials of class-sorted rows back in the rows' order."""
    n = P.shape[0]
    width = P.size // n if n else 0
    flat = P.reshape((n, width))
    out = np.empty(P.size).reshape((n, width))
    for r in range(n):
        # Element by element: the array statement compiles numba's
        # shape-mismatch error path (seconds) on first use.
        for k in range(width):
            out[order[r], k] = flat[r, k]
    return out.reshape(P.shape)


@inline
def partial_classes(n_classes, bound):
    """Classes of the pass-2 partials: the rows' classes, or hit and miss
    (``bound > 0``, a continuous target)."""
    return 2 if bound > 0.0 else n_classes


@inline
def _scratch(bound):
    """A sub-tile's :class:`_Scratch`; the compaction's per-candidate masks are hits
    and misses (``bound > 0``), else all true."""
    keep = np.empty(2 * SCORE_TILE, dtype=np.bool_).reshape((2, SCORE_TILE))
    keep[:] = bound <= 0.0
    return _Scratch(np.empty(SCORE_TILE, dtype=np.int64), keep, np.empty(SCORE_TILE))


@inline
def _float32_decides(how, soft):
    """Whether pass 2 measures its distances in float32 and rechecks the undecided in
    float64: ``PLAIN`` rows, every neighbour weighing 1 (the SWRF family's weights
    need each neighbour's float64 distance)."""
    return how.kind == PLAIN and not soft


def score_pairs(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq):
    """Per-row neighbour partials ``P[row, set, class, :A+1]`` of both row sets of a pair.

    .. math:: P_{as c} = \\sum_{j \\ne a:\\, j \\in s(a),\\, y_j = c}
              (\\mathrm{diff}(a, j), 1)

    with ``s(a)`` the near set ``d_aj < near_a`` (``s = 0``) or, when
    ``n_sets == 2``, the far set ``d_aj > far_a`` (``s = 1``).  With
    ``bound > 0`` the rows' targets ``tp``, ``tq`` class each pair instead
    (``c = 0`` when ``|t_a - t_j| < bound``, else 1; ``n_classes == 1``);
    otherwise ``tp``, ``tq`` are not read.  ``how``: the distance and what
    is summed (:class:`Scoring`; ``how.squares``: the squared differences
    too, :func:`partial_width`).  ``thr_p``, ``thr_q``: the rows'
    :class:`Thresholds`; a non-empty ``spread`` (the SWRF family): each neighbour weighs
    :func:`soft_weight` of its distance around its set's threshold with
    its row's spread, and the partials carry the weighted difference sums,
    the counts and the weight sums (:func:`~.surf_rows.add_rows_soft`).
    Returns ``(Pp, Pq)``; ``Pq`` is empty in the ``ORDERED`` mode and ``Pp``
    itself in the ``WITHIN`` mode.

    Both row sets are first sorted by class (stable), so that a row's
    neighbours of one class are one compaction of one range of positions.
    ``PLAIN`` rows whose neighbours weigh 1 (and whose values float32 holds)
    are measured in float32 and rechecked (:func:`_score_pairs32`), the
    others in float64 (:func:`_score_pairs64`): two kernels, so that a fit
    compiles the one it runs.
    """
    scale = max(abs(float(X.max(initial=0.0))) + abs(float(X.min(initial=0.0))) for X in (Xp, Xq))
    plain = how.kind == PLAIN and thr_p.spread.shape[0] == 0 and scale < 1e30
    kernel = _score_pairs32 if plain else _score_pairs64
    return kernel(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq)


@inline
def _sorted_sides(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq):
    """:func:`score_pairs`' two row sets sorted by class (:class:`_Side`), their
    partials and the orders: ``(p, q, Pp, Pq, order_p, order_q)``."""
    n_features = Xp.shape[1]
    split = how.bound > 0.0
    Xps, ips, sp = by_class(Xp, yp, ip, n_classes)
    order_p = class_order(yp, n_classes)[0]
    near_ps, far_ps = thr_p.near[order_p], thr_p.far[order_p]
    soft = thr_p.spread.shape[0] > 0
    spread_ps = thr_p.spread[order_p] if soft else thr_p.spread
    tps = tp[order_p] if split else tp
    if mode == WITHIN:
        Xqs, iqs, sq, order_q, near_qs, far_qs, tqs = Xps, ips, sp, order_p, near_ps, far_ps, tps
        spread_qs = spread_ps
    else:
        Xqs, iqs, sq = by_class(Xq, yq, iq, n_classes)
        order_q = class_order(yq, n_classes)[0]
        near_qs, far_qs = thr_q.near[order_q], thr_q.far[order_q]
        spread_qs = thr_q.spread[order_q] if soft else thr_q.spread
        tqs = tq[order_q] if split else tq
    n_p, n_q = Xps.shape[0], Xqs.shape[0]
    width = partial_width(n_features, how.kind, how.squares, soft)
    n_out = partial_classes(n_classes, how.bound)
    Pp = filled((n_p, n_sets, n_out, width), 0.0)
    Pq = Pp if mode == WITHIN else filled((n_q if mode == CROSS else 0, n_sets, n_out, width), 0.0)
    p = _Side(Xps, ips, sp, near_ps, far_ps, spread_ps, tps)
    q = _Side(Xqs, iqs, sq, near_qs, far_qs, spread_qs, tqs)
    return p, q, Pp, Pq, order_p, order_q


@inline
def _in_row_order(Pp, Pq, order_p, order_q, mode):
    """:func:`score_pairs`' partials back in the rows' order."""
    Pp_out = _unsort(Pp, order_p)
    if mode == WITHIN:
        return Pp_out, Pp_out
    return Pp_out, _unsort(Pq, order_q) if mode == CROSS else Pq


@helper
def _score_pairs64(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq):
    """:func:`score_pairs` in float64 (every kind, weighted neighbours)."""
    sides = _sorted_sides(
        Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq
    )
    p, q, Pp, Pq, order_p, order_q = sides
    n_features, n_p, n_q = p.X.shape[1], p.X.shape[0], q.X.shape[0]
    XT = np.empty((n_features, SCORE_TILE))
    D, DT = np.empty((SCORE_TILE, SCORE_TILE)), np.empty((SCORE_TILE, SCORE_TILE))
    cnt = np.empty(SCORE_TILE)
    buf = _scratch(how.bound)
    for q0 in range(0, n_q, SCORE_TILE):
        q1 = min(q0 + SCORE_TILE, n_q)
        transpose(q.X, q0, q1, XT)
        for p0 in range(0, min(n_p, q1) if mode == WITHIN else n_p, SCORE_TILE):
            p1 = min(p0 + SCORE_TILE, n_p)
            tile_distances(p.X, p0, p1, XT, q1 - q0, how.dm, how.dw, how.kind, D, cnt)
            _fold_scores(D, DT, p, q, p0, p1, q0, q1, how, mode, Pp, Pq, buf, -1.0)
    return _in_row_order(Pp, Pq, order_p, order_q, mode)


@helper
def _score_pairs32(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq):
    """:func:`score_pairs` of ``PLAIN`` rows whose neighbours weigh 1: float32
    sub-tiles, the candidates within their error bound of a threshold placed
    by their float64 distance (:func:`~.surf_rows.recheck`)."""
    sides = _sorted_sides(
        Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq
    )
    p, q, Pp, Pq, order_p, order_q = sides
    n_features, n_p, n_q = p.X.shape[1], p.X.shape[0], q.X.shape[0]
    scale = value_scale(p.X, q.X)
    Xps32 = p.X.astype(np.float32)
    XT32 = np.empty((n_features, SCORE_TILE), dtype=np.float32)
    D32 = np.empty((SCORE_TILE, SCORE_TILE), dtype=np.float32)
    DT32 = np.empty((SCORE_TILE, SCORE_TILE), dtype=np.float32)
    buf = _scratch(how.bound)
    for q0 in range(0, n_q, SCORE_TILE):
        q1 = min(q0 + SCORE_TILE, n_q)
        transpose(q.X, q0, q1, XT32)
        for p0 in range(0, min(n_p, q1) if mode == WITHIN else n_p, SCORE_TILE):
            p1 = min(p0 + SCORE_TILE, n_p)
            plain_tile(Xps32, p0, p1, XT32, 0, q1 - q0, D32)
            _fold_scores(D32, DT32, p, q, p0, p1, q0, q1, how, mode, Pp, Pq, buf, scale)
    return _in_row_order(Pp, Pq, order_p, order_q, mode)


def _score_tile(Xa, ia, Xc, yc, ic, n_classes, n_sets, how, thr, ta, tc):
    """Pass 2 for anchors against candidates (``ORDERED``), threads over anchor sub-tiles
    (``how``, ``thr``, ``ta``, ``tc``: :func:`score_pairs`')."""
    n_a, n_features = Xa.shape
    Xcs, ics, sc = by_class(Xc, yc, ic, n_classes)
    tcs = tc[class_order(yc, n_classes)[0]] if how.bound > 0.0 else tc
    soft = thr.spread.shape[0] > 0
    width = partial_width(n_features, how.kind, how.squares, soft)
    P = filled((n_a, n_sets, partial_classes(n_classes, how.bound), width), 0.0)
    # (ORDERED: the candidates' side is not scored; no class starts of anchors.)
    p = _Side(Xa, ia, sc, thr.near, thr.far, thr.spread, ta)
    q = _Side(Xcs, ics, sc, thr.near, thr.far, thr.spread, tcs)
    n_tiles = (n_a + SCORE_TILE - 1) // SCORE_TILE
    for i in numba.prange(n_tiles):
        _anchor_tile_scores(i * SCORE_TILE, min((i + 1) * SCORE_TILE, n_a), p, q, how, P)
    return P


@helper
def _anchor_tile_scores(p0, p1, p, q, how, P):
    """:func:`_score_tile`'s anchors ``[p0, p1)`` against every candidate: a function of
    its own, whose body numba's parallel analysis does not read (it fails on it)."""
    n_features = p.X.shape[1]
    decides = _float32_decides(how, p.spread.shape[0] > 0)
    scale = value_scale(p.X[p0:p1], q.X) if decides else np.inf
    fast = scale < np.inf
    Xa32 = p.X[p0:p1].astype(np.float32) if fast else np.empty((0, n_features), dtype=np.float32)
    XT, XT32 = (
        np.empty((n_features, SCORE_TILE)),
        np.empty((n_features, SCORE_TILE), dtype=np.float32),
    )
    D, D32 = (
        np.empty((SCORE_TILE, SCORE_TILE)),
        np.empty((SCORE_TILE, SCORE_TILE), dtype=np.float32),
    )
    cnt = np.empty(SCORE_TILE)
    buf = _scratch(how.bound)
    for q0 in range(0, q.X.shape[0], SCORE_TILE):
        q1 = min(q0 + SCORE_TILE, q.X.shape[0])
        if fast:
            transpose(q.X, q0, q1, XT32)
            plain_tile(Xa32, 0, p1 - p0, XT32, 0, q1 - q0, D32)
            _fold_scores(D32, D32, p, q, p0, p1, q0, q1, how, ORDERED, P, P, buf, scale)
        else:
            transpose(q.X, q0, q1, XT)
            tile_distances(p.X, p0, p1, XT, q1 - q0, how.dm, how.dw, how.kind, D, cnt)
            _fold_scores(D, D, p, q, p0, p1, q0, q1, how, ORDERED, P, P, buf, -1.0)


@helper
def distance_matrix(Xp, Xq, dm, dw, kind):
    """``D[a, j] = d(Xp[a], Xq[j])``: the same distances as every pass (STIR's
    sample of rows, a few hundred of them)."""
    n_p, n_q = Xp.shape[0], Xq.shape[0]
    out = np.empty((n_p, n_q))
    XT = np.empty((Xq.shape[1], TILE))
    D = np.empty((TILE, TILE))
    cnt = np.empty(TILE)
    for q0 in range(0, n_q, TILE):
        q1 = min(q0 + TILE, n_q)
        transpose(Xq, q0, q1, XT)
        for p0 in range(0, n_p, TILE):
            p1 = min(p0 + TILE, n_p)
            tile_distances(Xp, p0, p1, XT, q1 - q0, dm, dw, kind, D, cnt)
            out[p0:p1, q0:q1] = D[: p1 - p0, : q1 - q0]
    return out


MOMENTS_TWINS = twins(_moments_tile)
SCORE_TWINS = twins(_score_tile)
