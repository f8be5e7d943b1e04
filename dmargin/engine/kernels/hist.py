"""Weighted class histograms of bin codes, and the boosting weight update.

``out[k, b, c] = sum_i w_i [bins[i, features[k]] == b] [y_i == c]``: the
stump search of AdaBoost (SBS-MF, AdaBoost-CR, BDSFS; Alshawabkeh et al.
2012), as in scikit-learn's ``HistGradientBoosting``.
"""

import math

import numba
import numpy as np

from .._numba import strict, twins

#: Rows per sub-block of the histogram: the sub-block's weights and labels
#: stay in cache while every feature's codes stream past them.
_HIST_ROWS = 4096
#: Row partitions (fixed by the number of rows), each with its own histogram
#: summed in order, so the result depends neither on the thread count nor on
#: which other features are searched; small blocks keep one.
_HIST_PARTS = 8
#: Bytes of partition histograms at most: wide data is searched a group of
#: features at a time (the sums of a feature are the same in any group).
_HIST_PART_BYTES = 8 * 2**20


def _histogram(bins, y, w, features, n_bins):
    """``out[k, b, c] = sum_i w_i [bins[i, features[k]] == b] [y_i == c]``."""
    n = bins.shape[0]
    n_feat = features.shape[0]
    n_parts = max(1, min(_HIST_PARTS, n // (4 * _HIST_ROWS)))
    group = max(1, min(n_feat, _HIST_PART_BYTES // (16 * n_parts * n_bins + 1)))
    out = np.zeros((n_feat, n_bins, 2))
    for g0 in range(0, n_feat, group):
        g1 = min(g0 + group, n_feat)
        parts = np.zeros((n_parts, g1 - g0, 2 * n_bins))  # (bin, class) as 2 b + c
        for p in numba.prange(n_parts):
            r0 = p * n // n_parts
            r1 = (p + 1) * n // n_parts
            for s0 in range(r0, r1, _HIST_ROWS):
                s1 = min(s0 + _HIST_ROWS, r1)
                k = g0
                # Four features a sweep: four independent sums in flight, and each
                # feature still adds its rows in order (the same bits as one at a time).
                while k + 4 <= g1:
                    c0, c1 = bins[:, features[k]], bins[:, features[k + 1]]
                    c2, c3 = bins[:, features[k + 2]], bins[:, features[k + 3]]
                    h0, h1 = parts[p, k - g0], parts[p, k + 1 - g0]
                    h2, h3 = parts[p, k + 2 - g0], parts[p, k + 3 - g0]
                    for i in range(s0, s1):
                        c = y[i]
                        wi = w[i]
                        h0[2 * np.intp(c0[i]) + c] += wi
                        h1[2 * np.intp(c1[i]) + c] += wi
                        h2[2 * np.intp(c2[i]) + c] += wi
                        h3[2 * np.intp(c3[i]) + c] += wi
                    k += 4
                while k < g1:
                    c0, h0 = bins[:, features[k]], parts[p, k - g0]
                    for i in range(s0, s1):
                        h0[2 * np.intp(c0[i]) + y[i]] += w[i]
                    k += 1
        for p in range(n_parts):
            out[g0:g1] += parts[p].reshape(g1 - g0, n_bins, 2)
    return out


@strict
def _reweight(w, codes, y, split, polarity, shrink, grow):
    """``w_i * shrink`` where the stump is right on row ``i``, ``* grow`` where wrong."""
    out = np.empty_like(w)
    for i in range(w.shape[0]):
        right = (codes[i] > split) == (polarity * (2 * y[i] - 1) > 0)
        out[i] = w[i] * (shrink if right else grow)
    return out


def update_weights(w, bins, y, stump):
    """``w exp(-alpha y h(x)) / Z`` for ``stump = (feature, split, polarity, alpha, Z)``.

    ``stump=None`` returns ``w`` (the first round).  ``y h`` is +-1, so two
    factors serve every row (one pass, no exponential per row).
    """
    if stump is None:
        return w
    feature, split, polarity, alpha, z = stump
    return _reweight(
        w, bins[:, feature], y, split, int(polarity), math.exp(-alpha) / z, math.exp(alpha) / z
    )


#: A row-feature update costs about 25 of the Relief kernels' pair-feature steps.
COST = 25.0
TWINS = twins(_histogram)
