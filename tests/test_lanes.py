"""Pass 2's neighbour lists: the vector compaction and the float32 band around a threshold.

:func:`dmargin.engine.kernels.lanes.compact` must give the positions the scalar
loop gives, in its order, for every length, dtype, mask and NaN; and
:func:`~dmargin.engine.kernels.distance.float32_band` must bound how far a
float32 distance lies from the float64 one, or pass 2 would place a candidate
near a threshold on the wrong side without rechecking it.
"""

import numba
import numpy as np
import pytest

from dmargin.engine.kernels import surf
from dmargin.engine.kernels.distance import PLAIN, float32_band, plain_tile, transpose
from dmargin.engine.kernels.lanes import LANES, compact
from dmargin.engine.kernels.modes import ORDERED, WITHIN


@numba.njit
def _compact(drow, t0, t1, s, edge, certain, masked, self_idx, ids, keep, out):
    return compact(drow, t0, t1, s, edge, certain, masked, self_idx, ids, keep, out)


def _scalar(drow, t0, t1, s, edge, certain, masked, self_idx, ids, keep):
    """The compaction as a plain loop: positions in order, and how many are unsure."""
    out, unsure = [], 0
    for t in range(t0, t1):
        d = float(drow[t])
        inside = d > edge if s else d < edge
        if masked:
            inside = inside and ids[t] != self_idx and keep[t]
        if inside:
            out.append(t)
            unsure += (d <= certain) if s else (d >= certain)
    return out, unsure


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("masked", (False, True))
def test_compaction_is_the_scalar_loop(dtype, masked):
    rng = np.random.default_rng(7)
    n = 3 * LANES + 5
    for trial in range(60):
        drow = rng.random(n).astype(dtype)
        drow[rng.integers(0, n, 3)] = np.nan
        drow[rng.integers(0, n, 4)] = drow[0]  # ties with an edge placed at a value
        ids = rng.permutation(n).astype(np.int64)
        keep = rng.random(n) < 0.7
        t0, t1 = sorted(rng.integers(0, n + 1, 2))
        s = trial % 2
        edge = float(drow[0]) if trial % 3 == 0 else float(rng.random())
        # an edge float32 does not hold: compared in float64, as the scalar loop
        edge += 1e-12 if trial % 5 == 0 else 0.0
        certain = edge - 0.05 if s == 0 else edge + 0.05
        self_idx = int(ids[t0]) if t0 < n else -1
        out = np.full(n, -1, dtype=np.int64)
        m, unsure = _compact(drow, t0, t1, s, edge, certain, masked, self_idx, ids, keep, out)
        expected, expected_unsure = _scalar(
            drow, t0, t1, s, edge, certain, masked, self_idx, ids, keep
        )
        assert out[:m].tolist() == expected
        assert unsure == expected_unsure


def test_compaction_of_every_candidate_and_of_none():
    drow = np.linspace(0.0, 1.0, 4 * LANES)
    out = np.empty(drow.size, dtype=np.int64)
    ids, keep = np.arange(drow.size), np.ones(drow.size, dtype=bool)
    m, unsure = _compact(drow, 0, drow.size, 0, 2.0, 2.0, False, -1, ids, keep, out)
    assert (m, unsure) == (drow.size, 0) and np.array_equal(out, np.arange(drow.size))
    m, unsure = _compact(drow, 0, drow.size, 1, 2.0, 2.0, False, -1, ids, keep, out)
    assert (m, unsure) == (0, 0)


@numba.njit
def _float32_distances(X, Y):
    D = np.empty((X.shape[0], Y.shape[0]), dtype=np.float32)
    XT = np.empty((Y.shape[1], Y.shape[0]), dtype=np.float32)
    transpose(Y, 0, Y.shape[0], XT)
    plain_tile(X.astype(np.float32), 0, X.shape[0], XT, 0, Y.shape[0], D)
    return D


@pytest.mark.parametrize("n_features", (1, 2, 9, 57, 300))
@pytest.mark.parametrize("scale", (1e-3, 1.0, 1e6))
def test_the_band_bounds_the_float32_distance(n_features, scale):
    """Against the exact distance (the sum of exactly rounded long-double
    differences is within a few long-double units): every pair's float32
    distance is inside :func:`float32_band` of its own distance, on values of
    mixed signs and magnitudes and on rows that are mostly zeros."""
    rng = np.random.default_rng(n_features)
    X = rng.standard_normal((64, n_features)) * np.exp(rng.uniform(-8, 0, (64, n_features)))
    X[::3] *= rng.random(X[::3].shape) < 0.1
    X *= scale / np.abs(X).max()
    D32 = _float32_distances(X, X).astype(np.float64)
    exact = np.abs(X.astype(np.longdouble)[:, None] - X.astype(np.longdouble)[None]).sum(-1)
    band = np.vectorize(lambda d: float32_band(scale, n_features, d))(exact.astype(np.float64))
    assert np.all(np.abs(D32 - exact) <= band)
    # the band is no wider than the bound for every distance, at the largest distance
    assert float32_band(scale, n_features, 2 * n_features * scale) <= (
        2.0 * 2.0**-24 * scale * (4 * n_features + 2 * n_features**2)
    )


@pytest.mark.parametrize("mode", ("within", "ordered"))
def test_thresholds_a_float32_unit_from_a_distance_place_it_as_float64(mode):
    """Thresholds a few float32 units above and below a candidate's distance: the
    float32 distance alone would misplace some of them; pass 2 places every one
    as the float64 distances do."""
    n, n_features = 96, 57
    rng = np.random.default_rng(11)
    X = rng.random((n, n_features)) * (rng.random((n, n_features)) < 0.4)
    y = rng.integers(0, 2, n)
    dm, dw = np.zeros(n_features, dtype=np.bool_), np.ones(n_features)
    D = surf.distance_matrix(X, X, dm, dw, PLAIN)
    D32 = _float32_distances(X, X).astype(np.float64)
    offsets = np.array([-30, -3, -1, -0.5, 0.5, 1, 3, 30]) * 2.0**-24
    near, far = np.empty(n), np.empty(n)
    for a in range(n):
        j = (a + 1 + rng.integers(0, n - 1)) % n
        near[a] = D[a, j] * (1 + offsets[a % offsets.size])
        far[a] = D[a, (j + 7) % n] * (1 - offsets[(a + 3) % offsets.size])
    misplaced = ((D32 < near[:, None]) != (D < near[:, None])) | (
        (D32 > far[:, None]) != (D > far[:, None])
    )
    assert misplaced.any()  # the test reaches what the recheck is for
    expected = np.zeros((n, 2, 2))
    for a in range(n):
        other = np.arange(n) != a
        for c in (0, 1):
            sel = other & (y == c)
            expected[a, 0, c] = np.count_nonzero(D[a, sel] < near[a])
            expected[a, 1, c] = np.count_nonzero(D[a, sel] > far[a])
    how = surf.Scoring(dm, dw, np.full(n_features, np.inf), PLAIN, 0.0, False)
    thr = surf.Thresholds(near, far, np.empty(0))
    ids, none = np.arange(n), np.empty(0)
    count = surf.score_columns(n_features).counts.start
    if mode == "within":
        P, _ = surf.score_pairs(X, ids, y, X, ids, y, 2, 2, how, thr, thr, WITHIN, none, none)
        assert np.array_equal(P[..., count], expected)
        return
    for kernel in surf.SCORE_TWINS:
        P = kernel(X, ids, X, y, ids, 2, 2, how, thr, none, none)
        assert np.array_equal(P[..., count], expected)
    P, _ = surf.score_pairs(X, ids, y, X, ids, y, 2, 2, how, thr, thr, ORDERED, none, none)
    assert np.array_equal(P[..., count], expected)
