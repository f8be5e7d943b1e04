"""The SURF family's distances are one sum, bit for bit, wherever they are computed.

The plain distance sums the features two at a time, in order
(``(|x_0 - v_0| + |x_1 - v_1|) + (|x_2 - v_2| + |x_3 - v_3|) + ...``): the
sub-tile of four anchors by two features, the anchors after its last sweep of
four, the scalar distance, both orders of a pair, and every pass that decides a
side of a threshold must agree exactly (``==``), or a pair at a threshold is a
neighbour in one pass and not in another.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from dmargin.engine.kernels import graph, surf
from dmargin.engine.kernels.distance import PLAIN, plain_distance
from dmargin.engine.kernels.modes import CROSS, WITHIN

FEATURES = (1, 2, 3, 8, 57)
ROWS = (1, 2, 3, 4, 5, 7, 9, 13, 131)


def paired_sum(Xp, Xq):
    """The plain distances in numpy, features summed two at a time in order."""
    z = np.abs(Xp[:, None, :] - Xq[None, :, :])
    acc = np.zeros(z.shape[:2])
    n_features = z.shape[2]
    for f in range(0, n_features - 1, 2):
        acc = acc + (z[..., f] + z[..., f + 1])
    if n_features % 2:
        acc = acc + z[..., n_features - 1]
    return acc


def plain_params(n_features):
    return np.zeros(n_features, dtype=np.bool_), np.ones(n_features), PLAIN


def rows(n, n_features, seed):
    """Uniform values, some rows repeated and some on a coarse grid (exact ties)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, n_features))
    if n > 4:
        X[1] = X[0]
        X[3] = np.round(X[3] * 4) / 4
        X[4] = np.round(X[4] * 4) / 4
    return X


@pytest.mark.parametrize("n_features", FEATURES)
@pytest.mark.parametrize("n_p", ROWS)
def test_tile_is_the_paired_sum(n_p, n_features):
    Xp = rows(n_p, n_features, n_p)
    Xq = rows(29, n_features, 100 + n_p)
    dm, dw, kind = plain_params(n_features)
    D = surf.distance_matrix(Xp, Xq, dm, dw, kind)
    expected = paired_sum(Xp, Xq)
    assert np.array_equal(D, expected)
    # Each row alone, and shifted by one to three rows: the same row in the
    # sweeps of four and after them.
    for shift in range(1, 4):
        if shift < n_p:
            assert np.array_equal(surf.distance_matrix(Xp[shift:], Xq, dm, dw, kind), D[shift:])
    assert np.array_equal(surf.distance_matrix(Xp[-1:], Xq, dm, dw, kind), D[-1:])
    # Either order of every pair.
    assert np.array_equal(surf.distance_matrix(Xq, Xp, dm, dw, kind).T, D)
    scalar = np.array([[plain_distance(a, b) for b in Xq] for a in Xp])
    assert np.array_equal(scalar, D)


@pytest.mark.parametrize("n_features", FEATURES)
def test_tile_of_float32_rows_is_the_paired_sum_of_their_values(n_features):
    Xp = rows(11, n_features, 7).astype(np.float32)
    Xq = rows(6, n_features, 8)
    dm, dw, kind = plain_params(n_features)
    D = surf.distance_matrix(Xp, Xq, dm, dw, kind)
    assert np.array_equal(D, paired_sum(Xp.astype(np.float64), Xq))


def _tied_thresholds(D, rng):
    """Each row's near and far thresholds exactly at its distance to two other rows."""
    n = D.shape[0]
    near = np.empty(n)
    far = np.empty(n)
    for a in range(n):
        others = np.delete(np.arange(n), a)
        near[a] = D[a, rng.choice(others)]
        far[a] = D[a, rng.choice(others)]
    return near, far


def _expected_counts(D, y, near, far, n_classes, exclude_self=True):
    """``(rows, 2 sets, classes)`` neighbour counts from the distances themselves."""
    n = D.shape[0]
    out = np.zeros((n, 2, n_classes))
    for a in range(n):
        keep = np.ones(D.shape[1], dtype=bool)
        if exclude_self:
            keep[a] = False
        for c in range(n_classes):
            sel = keep & (y == c)
            out[a, 0, c] = np.count_nonzero(D[a, sel] < near[a])
            out[a, 1, c] = np.count_nonzero(D[a, sel] > far[a])
    return out


@pytest.mark.parametrize("n_features", (3, 8, 57))
@pytest.mark.parametrize("n", (5, 13, 300))
def test_pass_two_decides_ties_as_the_distances(n, n_features):
    """Thresholds exactly at a distance: pass 2 (every pair mode) finds the
    neighbours that the distances themselves put strictly inside."""
    rng = np.random.default_rng(n + n_features)
    X = rows(n, n_features, n * n_features)
    y = rng.integers(0, 2, n)
    dm, dw, kind = plain_params(n_features)
    D = surf.distance_matrix(X, X, dm, dw, kind)
    assert np.array_equal(D, D.T)
    near, far = _tied_thresholds(D, rng)
    expected = _expected_counts(D, y, near, far, 2)
    how = surf.Scoring(dm, dw, np.full(n_features, np.inf), kind, 0.0, False)
    thr = surf.Thresholds(near, far, np.empty(0))
    ids = np.arange(n)
    none = np.empty(0)
    count = surf.score_columns(n_features).counts.start

    P, _ = surf.score_pairs(X, ids, y, X, ids, y, 2, 2, how, thr, thr, WITHIN, none, none)
    assert np.array_equal(P[..., count], expected)

    # Two disjoint blocks (CROSS) and the diagonal blocks (WITHIN) add up to the same.
    h = n // 2
    lo, hi = slice(0, h), slice(h, n)
    tl, th = surf.Thresholds(near[lo], far[lo], none), surf.Thresholds(near[hi], far[hi], none)
    args = (2, 2, how)
    Pl, Ph = surf.score_pairs(
        X[lo], ids[lo], y[lo], X[hi], ids[hi], y[hi], *args, tl, th, CROSS, none, none
    )
    Pll, _ = surf.score_pairs(
        X[lo], ids[lo], y[lo], X[lo], ids[lo], y[lo], *args, tl, tl, WITHIN, none, none
    )
    Phh, _ = surf.score_pairs(
        X[hi], ids[hi], y[hi], X[hi], ids[hi], y[hi], *args, th, th, WITHIN, none, none
    )
    counts = np.concatenate([Pl + Pll, Ph + Phh])[..., count]
    assert np.array_equal(counts, expected)

    # A sample of anchors against every row (ORDERED), serial and threaded twins.
    anchors = np.sort(rng.choice(n, size=max(1, n // 3), replace=False))
    ta = surf.Thresholds(near[anchors], far[anchors], none)
    for kernel in surf.SCORE_TWINS:
        Pa = kernel(X[anchors], anchors, X, y, ids, 2, 2, how, ta, none, none)
        assert np.array_equal(Pa[..., count], expected[anchors])


@pytest.mark.parametrize("n", (13, 300))
def test_graph_pass_decides_ties_as_the_distances(n):
    """STIR's graph pass (pass 3) finds a pair from a row exactly when its
    distance is strictly below the row's threshold."""
    n_features = 57
    rng = np.random.default_rng(n)
    X = rows(n, n_features, n)
    y = rng.integers(0, 2, n)
    dm, dw, kind = plain_params(n_features)
    D = surf.distance_matrix(X, X, dm, dw, kind)
    near, _ = _tied_thresholds(D, rng)
    finders = np.column_stack([near, np.ones(n), np.ones(n)])
    ids = np.arange(n)
    G, _ = graph.graph_pairs(X, ids, y, X, ids, y, dm, dw, kind, WITHIN, finders, finders)
    found = (D < near[:, None]) & ~np.eye(n, dtype=bool)
    mutual = found & found.T
    same = y[:, None] == y[None, :]
    columns = graph.graph_columns(G)
    assert np.array_equal(columns.mutual_hits, (mutual & same).sum(axis=1).astype(float))
    assert np.array_equal(columns.mutual_misses, (mutual & ~same).sum(axis=1).astype(float))
    sign = np.where(same, -1.0, 1.0)
    assert np.array_equal(columns.w, (sign * (found * 1.0 + found.T)).sum(axis=1))
    # A sample of anchors (ORDERED); a pair of two anchors counts from the lower one.
    anchors = np.sort(rng.choice(n, size=n // 3, replace=False))
    outside = np.column_stack([np.full(n, -np.inf), np.ones(n), np.ones(n)])
    outside[anchors] = finders[anchors]
    a = anchors[:, None]
    keep = (ids != a) & (np.isinf(outside[:, 0]) | (ids > a))
    d = D[anchors]
    w = sign[anchors] * (((d < near[anchors, None]) & keep) * 1.0 + ((d < outside[:, 0]) & keep))
    for kernel in graph.GRAPH_TWINS:
        Ga, _ = kernel(
            X[anchors], anchors, y[anchors], X, ids, y, dm, dw, kind, finders[anchors], outside, 2
        )
        assert np.array_equal(graph.graph_columns(Ga).w, w.sum(axis=1))


_FAST_CALLER_FIRST = """
import numba
import os
import subprocess
import sys

import numpy as np
from dmargin.engine.kernels.distance import plain_distance


@numba.njit(fastmath={"reassoc", "contract", "arcp"})
def pairs(X, Y):
    out = np.empty((X.shape[0], Y.shape[0]))
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            out[i, j] = plain_distance(X[i], Y[j])
    return out


rng = np.random.default_rng(0)
X, Y = rng.random((40, 57)), rng.random((30, 57))
z = np.abs(X[:, None, :] - Y[None, :, :])
expected = np.zeros((40, 30))
for f in range(0, 56, 2):
    expected = expected + (z[..., f] + z[..., f + 1])
expected = expected + z[..., 56]
print(np.array_equal(pairs(X, Y), expected))
"""


def test_plain_distance_is_exact_when_a_fast_math_kernel_compiles_it_first(tmp_path):
    """A kernel that must not be reassociated says ``fastmath=False``: left unset,
    numba would compile it with the fast-math flags of the first kernel calling it."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", _FAST_CALLER_FIRST], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("scale", (1e-3, 1e35))
def test_pass_two_on_rows_float32_cannot_hold_or_barely_separates(scale):
    """Rows beyond float32's range are measured in float64 only, tiny ones with a
    proportionate bound: the neighbours are the float64 distances' either way."""
    n, n_features = 40, 9
    rng = np.random.default_rng(3)
    X = rows(n, n_features, 5) * scale
    y = rng.integers(0, 2, n)
    dm, dw, kind = plain_params(n_features)
    D = surf.distance_matrix(X, X, dm, dw, kind)
    near, far = _tied_thresholds(D, rng)
    how = surf.Scoring(dm, dw, np.full(n_features, np.inf), kind, 0.0, False)
    thr = surf.Thresholds(near, far, np.empty(0))
    ids, none = np.arange(n), np.empty(0)
    P, _ = surf.score_pairs(X, ids, y, X, ids, y, 2, 2, how, thr, thr, WITHIN, none, none)
    count = surf.score_columns(n_features).counts.start
    assert np.array_equal(P[..., count], _expected_counts(D, y, near, far, 2))
