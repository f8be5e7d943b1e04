"""Brute-force numpy references of what skrebate 0.8.4 computes for SWRF, SWRF*,
MultiSWRF, MultiSWRF*, MultiSWRFDB, MultiSWRFDB*, MuRelief and the Iter and VLS wrappers.

Transcribed line by line from skrebate 0.8.4 (``relieff.py`` for the feature kinds, the
label kind and the distance array; ``scoring_utils.py`` for the distances with missing
values, the ramp and ReliefF's scoring; ``baseswrf.py`` for the SWRF family and its
instance-weighted scoring; ``murelief.py``; ``iter.py``; ``vls.py``).  Loops over
anchors, an N x N distance array: a test reference, not an implementation.  Imports
nothing from dmargin.  Line numbers below are skrebate 0.8.4's (``file.py:line``).
Parameter names are skrebate 0.8.4's: ``categorical_threshold`` (older skrebate and
the rest of dmargin: ``discrete_threshold``), ``categorical_features``,
``multiclass_threshold``, ``label_type``, ``n_neighbors``, ``weight_final_scores``,
``rank_absolute``; ``weights`` is ``fit(X, y, weights=...)``.  Every estimator returns
``Fit(feature_importances_, top_features_)``.

Shared definitions (all estimators)
-----------------------------------

* **Feature kind** (``relieff.py:325-364``): feature f is discrete when it has at most
  ``categorical_threshold`` distinct non-NaN values (or is listed in
  ``categorical_features``), else continuous with ``span_f = max - min`` and
  ``sd_f = np.std`` (ddof 0) over its non-NaN values.  The data are ``mixed`` when
  both kinds occur.
* **Label kind** (``relieff.py:148-180``): binary when y has 2 distinct values, else
  multiclass up to ``multiclass_threshold`` values, else continuous (``label_type``
  overrides).  Continuous target: ``j`` is a hit of ``i`` iff
  ``|y_i - y_j| < labels_std`` (strict), ``labels_std = np.std(y, ddof=1)``.
* **Distance** d(i, j) (``relieff.py:366-499``, ``scoring_utils.py:30-156``), with
  ``x~ = (x - min) / span`` for continuous features, ``p``/``p_d`` features/discrete:

  ==================  ===============================================================
  no NaN, no weights  discrete only: ``#mismatch / p``; continuous only:
                      ``sum_f |x~_if - x~_jf|``; mixed:
                      ``(#mismatch_d / p_d) * p + sum_{f cont} |x~_if - x~_jf|``
  no NaN, weights w   discrete only: ``sum_f w_f [x_if != x_jf] / sum_f w_f``;
                      continuous only: ``sum_f w_f |x~_if - x~_jf|``; mixed: ValueError
  NaN, no weights     over the features both rows have (``O``):
                      ``(#mismatch_O + sum_{O cont} |x_if - x_jf| / span_f) / |O|``
                      (NaN when ``O`` is empty)
  NaN, weights w      pure data only: ``(sum_O w_f diff_f / sum_O w_f) / |O|``
  ==================  ===============================================================

* **Feature difference** ``diff_f(i, j)`` (``scoring_utils.py:158-186``): discrete
  ``[x_if != x_jf]``; continuous ``|x_if - x_jf| / span_f``, except in mixed data
  where it is 1 when ``|x_if - x_jf| > sd_f`` (the "ramp").
* **One anchor's score of feature f from a neighbour set S with instance weights
  v_j** (``baseswrf.py:320-668``; ReliefF's ``scoring_utils.py:188-516`` is the case
  v = 1): 0 if ``x_if`` is NaN; otherwise drop the j in S with ``x_jf`` NaN, split the
  rest into hits H (same class / ``|dy| < labels_std``) and misses M, and with the
  *unweighted* counts ``h = |H|``, ``m = |M|``:

  - near set, binary or continuous target:
    ``( -sum_H v_j diff_f / h + sum_M v_j diff_f / m ) / N``
    (a term is dropped when its count is 0; 0 when both are);
  - near set, multiclass: per miss class c with ``m_c`` members and
    ``S_c = sum_{M_c} v_j diff_f``, ``m = sum_c m_c``, K classes:
    ``( sum_c S_c (m_c / m) (K - 1) / m  -  sum_H v_j diff_f / h ) / N``;
  - far set (the "*" variants): the same with ``v_j diff_f`` replaced by
    ``v_j [x_jf == x_if]`` for a discrete f and by ``1 - v_j diff_f`` for a
    continuous f (summed as ``count - sum v_j diff_f``).

  With ``weights`` and ``weight_final_scores=True`` each anchor's term of feature f is
  multiplied by ``weights[f]``.  The scores are the sum of the anchors' terms.
* **top_features_** (``relieff.py:262-266``): ``np.argsort(s)[::-1]``, of ``|s|`` with
  ``rank_absolute=True``.

The estimators (per anchor i; every row j != i is a candidate)
--------------------------------------------------------------

The sigmoid weight of a neighbour at distance d around a centre c with spread s is
``g(d; c, s) = 2 / (1 + exp(-4 |d - c| / s)) - 1 = tanh(2 |d - c| / s)`` (s = 1 when
0), in [0, 1): 0 at the centre, 1 far from it (``baseswrf.py:12-43``).

* **SWRF** (``baseswrf.py:256-281``): mu, sd = mean and std (ddof 0) of the *stored*
  distance array, all N^2 cells (see accident 1); near = {j : d_ij < mu}, weights
  ``g(d_ij; mu, sd)``; near-set score.
* **SWRF\\*** : SWRF plus far = {j : d_ij > mu}, weights ``g(d_ij; mu, sd)``, far-set
  score added (``baseswrf.py:282-316``, ``684-703``).
* **MultiSWRF** (``baseswrf.py:195-220``): mu_i, sd_i = mean and std (ddof 0) of
  d_ij over j != i; near = {d_ij < mu_i}, weights ``g(d_ij; mu_i, sd_i)``.
* **MultiSWRF\\*** : plus far = {d_ij > mu_i}, weights ``g(d_ij; mu_i, sd_i)``.
* **MultiSWRFDB** (``baseswrf.py:121-155``): near = {d_ij < mu_i - sd_i/2}, weights
  ``g(d_ij; mu_i - sd_i/2, sd_i)`` (0 at the dead band's edge, 1 far inside).
* **MultiSWRFDB\\*** : plus far = {d_ij > mu_i + sd_i/2}, weights
  ``g(d_ij; mu_i + sd_i/2, sd_i)``.
* **MuRelief** (``murelief.py:44-236``): per candidate class c (hits/misses by
  ``labels_std`` for a continuous target) the mean distance ``mu_ic`` of the anchor
  to the rows j != i of class c; key ``a_ij = |d_ij - mu_i,c(j)|`` (``a_ii = 0``);
  walk the rows by ``np.argsort(a)[::-1]`` and take the first ``n_neighbors`` hits and
  the first ``n_neighbors`` misses (per miss class if multiclass) -- the anchor itself
  included (accident 9); ReliefF's near-set score with v = 1.
  ``n_neighbors`` float: ``int(n_neighbors * N * 0.5)`` (``relieff.py:143-145``).
* **Iter** (``iter.py:32-111``): s0 = fit(X, y); w1 = T(s0); s1 = fit(X, y, weights=w1);
  for t >= 2: ``w_t = w_{t-1} + beta (T(s_{t-1}) - w_{t-1})`` (Widrow-Hoff),
  ``s_t = fit(X, y, weights=w_t)``; at most ``max_iter`` fits, stopping after s_t when
  every ``|C_{t-1} - s_t| < convergence_threshold``; the result is the last s.
  T(s): negatives to 0, the rest divided by max(s) (all 0 when max(s) == 0); with
  ``rank_absolute`` T(s) = ``|s| / max|s|``.  C_{t-1} = T(s_{t-1}) (accident 12), or
  s_{t-1} with ``rank_absolute``.
* **VLS** (``vls.py:170-275``): ``random.seed(random_state)``; shuffle the feature
  indices, cut them into ``size_feature_subset`` chunks, pad the leftover chunk with
  ``random.choice`` draws not already in it, then ``random.sample`` further subsets up
  to ``num_feature_subset``; fit the inner estimator on each ``X[:, subset]`` (with
  ``weights[subset]``); a feature's score is its largest over the subsets that hold it
  (largest ``|s|`` with its sign, ``+`` on a tie, with ``rank_absolute``).

Accidents of skrebate 0.8.4 (reproduced here)
---------------------------------------------

1. **SWRF's global mean counts the zero cells** (``baseswrf.py:712-719``): mu and sd are
   taken over the whole N x N stored array, its N zero diagonal cells included; and with
   any NaN in X the array is stored lower-triangular (``scoring_utils.py:45``, zeros on
   and above the diagonal), so mu is about half the mean pair distance and sd is
   inflated: with missing values SWRF's "near" set nearly vanishes (80 GAMETES rows:
   57 % of the pairs near without NaN, 2.5 % with 10 % NaN cells; wpbc with 4 NaN
   cells: 3.8 %) and SWRF* is mostly its far term.  The same rounding caveat as
   accident 14 applies to this mu.
2. **Counts are unweighted** (``baseswrf.py:369-370, 426-434``): the instance weights
   v_j enter the sums but h and m count neighbours, so a neighbour near the threshold
   (v ~ 0) still dilutes the average.
3. **The far term is inconsistent between feature kinds** (``baseswrf.py:414-421``):
   continuous ``sum (1 - v_j diff)``, discrete ``sum v_j (1 - diff)``; a weight-0 far
   neighbour contributes 1 for a continuous feature and 0 for a discrete one.
4. **Multiclass miss weights are neighbourhood frequencies** (``baseswrf.py:563-565``):
   ``(m_c / m) (K - 1) / m``, not ReliefF's priors P(c) / (1 - P(y_i)); ``mcmap``'s
   priors (themselves (n_c - 1) / N, ``relieff.py:312-321``) are used only for its keys.
5. **Distance scale depends on missingness** (``relieff.py:389-399`` vs
   ``scoring_utils.py:84``): without NaN the distance is a sum over features (mixed:
   each discrete mismatch counts ``p / p_d``), with any NaN in X it is the mean over
   the pair's observed features, for every pair; continuous differences are unscaled
   by ``p`` in one case and divided by ``|O|`` in the other.
6. **Feature weights double-normalised with NaN** (``scoring_utils.py:140-150``): the
   weighted mean over observed features is divided again by ``|O|``; without NaN a
   weighted continuous distance is not normalised at all (``relieff.py:476``).
7. **Weights fail on mixed data** (``relieff.py:469``, ``scoring_utils.py:140``): the
   full-length weight vector is given to the discrete (or continuous) sub-array:
   ValueError (reproduced).  Weights given as a list are silently ignored
   (``relieff.py:122-133``: the list branch sits inside ``isinstance(..., ndarray)``).
8. **labels_std uses the wrong threshold** (``relieff.py:179``): ``labels_std`` is set
   only when y has more than ``categorical_threshold`` (not ``multiclass_threshold``)
   distinct values; a target forced ``label_type='continuous'`` with fewer values has
   labels_std = 0: no hits at all.
9. **MuRelief can pick the anchor itself** (``murelief.py:102, 121-124``): the anchor's
   key is 0 and it is walked like any row; when fewer than ``n_neighbors`` other hits
   exist (default 100 >= class size on small data: always) it is taken as a hit with
   diff 0, adding 1 to h.  A continuous target with labels_std = 0 makes it a miss.
10. **MuRelief takes NaN distances first** (``murelief.py:124, 132``): a pair with no
    observed feature in common has key NaN, which ``argsort(...)[::-1]`` puts first:
    such rows are the "most extreme" neighbours.  The class means use ``nanmean``.
11. **Ties follow numpy's unstable argsort, reversed** (``murelief.py:132``,
    ``relieff.py:266``): equal keys / equal scores are taken in the reversed order of
    ``np.argsort``'s default kind (not by index); reproduced by calling it the same way
    on bit-identical keys (distances are built with skrebate's arithmetic for that).
12. **Iter's convergence test compares against transformed weights**
    (``iter.py:56-58, 68-72, 101-111``): ``transform_weights`` rescales the previous
    scores in place, so ``has_converged`` compares the new scores with T(s_{t-1}) (in
    [0, 1]), not with s_{t-1}; with ``rank_absolute`` it compares with s_{t-1}.  NaN
    differences count as converged (``>=`` is False).  The first weighted fit has no
    Widrow-Hoff step (w1 = T(s0)).
13. **VLS** (``vls.py:187, 201-204, 261-269``): the inner estimator sees only the subset,
    so feature kinds, the mixed-data ramp, the mixed distance factor and SWRF's global
    mean are per subset; a feature absent from a subset is -inf (0 with
    ``rank_absolute``) there; ``size_feature_subset`` is clipped to p on the instance.
14. **Strict thresholds** (``baseswrf.py:141, 173, 207, 234, 268, 295``): a row at
    exactly the threshold is neither near nor far; with discrete features (distances
    k/p) the mean can equal a distance up to rounding, so which side it falls on
    depends on ``np.mean``'s summation order (kept here: same call, same order).
15. **Integer X** (``relieff.py:382-383``): ``x[:, idx] = x[:, idx] / diff`` stores into
    an integer copy: truncated normalised values (the ``_iter`` variant raises).  This
    reference takes float X only.
16. **A constant feature switches the whole data to "mixed"** (``relieff.py:338-340``,
    ``scoring_utils.py:174``): one distinct value <= ``categorical_threshold`` makes it
    discrete, so otherwise continuous data become mixed: every continuous feature's
    difference gets the ramp (1 beyond one sd) and the distance the ``p / p_d`` factor.
    A continuous feature declared through ``categorical_features`` with one value has
    span 0: 0/0.
17. **State kept between fits** (``relieff.py:145``, ``vls.py:187``): a float
    ``n_neighbors`` is replaced on the instance by the integer, so a refit on other
    data keeps the old k; VLS stores the clipped subset size likewise.  Multiclass
    neighbour search counts the anchor's own class among the miss classes, which never
    fill, so it never stops early (``relieff.py:592, 607``, ``murelief.py:156, 177``:
    harmless).

On the engine
-------------

Every quantity is a per-pair function of skrebate's distance and the feature
differences; no estimator needs the N x N matrix.  All seven scores are invariant to
one positive factor common to every distance (thresholds, ``|d - mu| / sd`` and
MuRelief's key order scale with it), so the global ``/ p`` and ``/ sum w`` of the
no-NaN distances may be dropped; the per-pair ``/ |O|`` with NaN and the mixed
``p / p_d`` may not.  Per estimator:

* **SWRF, SWRF\\***: pass 1, a reduction over the pairs j < i to three scalars:
  the count, sum and centred second moment of the non-NaN d_ij (Chan's merge of
  ``(n, mean, M2)``, as dask's ``moment_chunk`` / ``moment_combine``), then, on the
  driver, the zero cells of accident 1 merged in as one more partial ``(z, 0, 0)``.
  Without NaN in X each pair counts twice (full array) and z = N; with NaN once (lower
  triangle) and z = N(N+1)/2.  mean and ``sqrt(M2 / n)`` are mu and sd.  Pass 2,
  anchor blocks x all rows: per pair d, its side (``d < mu`` near, ``d > mu`` far),
  ``v = tanh(2|d - mu| / sd)``, and per anchor, per class (hit, each miss class), per
  feature: the number of neighbours with the feature observed, ``sum v diff`` and, for
  the far side, ``sum v`` (discrete far term ``sum v - sum v diff``; continuous
  ``count - sum v diff``).  These (anchor block x classes x A) partials add over
  candidate blocks; the per-anchor normalisation (division by the counts, the
  multiclass factor, 1/N) is the agg, then a sum over anchors.  Two passes, no N x N.
* **MultiSWRF(\\*), MultiSWRFDB(\\*)**: pass 1 is MultiSURF's: per anchor ``(n, mean, M2)``
  of d_ij over j != i (NaN skipped), merged over candidate blocks; gives mu_i, sd_i
  and the DB thresholds ``mu_i -/+ sd_i / 2``.  Pass 2 as SWRF with per-anchor centres.
  Two passes.  Knife edge (accident 14): on discrete data mu_i can equal a distance
  k/p; to agree with skrebate the merge must round as ``np.mean`` does, or the engine
  compares ``sum_j k_ij`` with ``(N-1) k`` in integers and documents the difference.
* **MuRelief**: pass 1, per anchor and per class, the count and sum of d_ij (j != i):
  the class means mu_ic.  Pass 2, the keys ``a_ij = |d_ij - mu_i,c(j)|``: without ties
  a per-anchor, per-class top-``n_neighbors`` merge (k largest keys, associative)
  gives each class's cut key; pass 3 scores the rows above the cut (counts and
  ``sum diff`` per class and feature, as ReliefF).  Ties at the cut (common on discrete
  data) are broken by numpy's argsort order of the anchor's whole key row, so an exact
  match needs the anchor's row of N keys (B x N memory per anchor block, never N x N)
  sorted with ``np.argsort(a)[::-1]``.  The anchor itself (key 0) and NaN keys (taken
  first) must be candidates.  When ``n_neighbors`` >= every class size, everything is
  selected and one pass suffices.
* **Iter**: a driver loop of weighted fits (weights broadcast, the weighted distance in
  the tile), T and Widrow-Hoff in numpy -- like I-RELIEF's loop.
* **VLS**: a driver loop over subsets, or one pass computing every subset's distance in
  the tile (per-feature differences times a subsets x A 0/1 matrix, with the
  per-subset normalisation of accident 13), then each subset's estimator passes.
"""

import random
from collections import namedtuple

import numpy as np

Fit = namedtuple("Fit", ["feature_importances_", "top_features_"])

SWRF_VARIANTS = ("SWRF", "SWRFstar", "MultiSWRF", "MultiSWRFstar", "MultiSWRFDB", "MultiSWRFDBstar")


# ----------------------------------------------------------------------------------
# Data description: feature kinds, label kind (relieff.py:106-215, 306-364)


class _Data:
    """What skrebate's ``fit`` derives from (X, y) before the distances."""

    def __init__(
        self, X, y, categorical_features, categorical_threshold, multiclass_threshold, label_type
    ):
        X = np.asarray(X)
        if not np.issubdtype(X.dtype, np.floating):
            raise TypeError("float X only (skrebate truncates integer X: accident 15)")
        self.X, self.y = X, np.asarray(y)
        self.n, self.p = X.shape
        self.nan = np.isnan(X)
        self.has_missing = bool(self.nan.sum() > 0)

        self.discrete = np.zeros(self.p, dtype=bool)
        self.span = np.zeros(self.p)
        self.minimum = np.zeros(self.p)
        self.sd = np.zeros(self.p)
        for f in range(self.p):
            z = X[:, f]
            if self.has_missing:
                z = z[~np.isnan(z)]
            if categorical_features is None:
                discrete = len(np.unique(z)) <= categorical_threshold
            else:
                discrete = f in categorical_features
            if discrete:
                self.discrete[f] = True
            else:
                self.minimum[f] = np.min(z)
                self.span[f] = np.max(z) - np.min(z)
                self.sd[f] = np.std(z)
        if self.discrete.all():
            self.data_type = "categorical"
        elif not self.discrete.any():
            self.data_type = "continuous"
        else:
            self.data_type = "mixed"

        labels = list(set(self.y))
        if len(labels) == 1:
            raise ValueError("All labels are of the same class.")
        if label_type:
            if label_type not in ("binary", "multiclass", "continuous"):
                raise ValueError(f"Invalid label_type {label_type!r}")
            if label_type == "binary" and len(labels) != 2:
                raise ValueError("label_type 'binary' with other than 2 labels")
            self.class_type = label_type
        elif len(labels) == 2:
            self.class_type = "binary"
        elif len(labels) <= multiclass_threshold:
            self.class_type = "multiclass"
        else:
            self.class_type = "continuous"
        # accident 8: categorical_threshold, not multiclass_threshold
        self.labels_std = np.std(self.y, ddof=1) if len(labels) > categorical_threshold else 0.0
        # mcmap's keys, in order of first appearance (relieff.py:312-318)
        self.classes = list(dict.fromkeys(self.y.tolist()))

    def is_hit(self, i, js):
        """Hits of anchor i among rows js (boolean array)."""
        if self.class_type == "continuous":
            return np.abs(self.y[i] - self.y[js]) < self.labels_std
        return self.y[js] == self.y[i]


# ----------------------------------------------------------------------------------
# Distances (relieff.py:366-499, scoring_utils.py:30-156)


def distance_array(data, weights=None, weighted_mean=False):
    """skrebate's stored distance array and whether it holds NaN.

    Without NaN in X: full and symmetric, zero diagonal.  With NaN: the lower triangle
    (``D[i, j]`` for ``j < i``), zeros on and above the diagonal (accident 1).
    """
    X, n, p, disc = data.X, data.n, data.p, data.discrete
    cont = ~disc
    if weights is not None and data.data_type == "mixed":  # accident 7
        raise ValueError("skrebate: feature weights with mixed discrete/continuous data")
    D = np.zeros((n, n))
    if not data.has_missing:
        Xn = X.copy()  # pre_normalize: x -= min; x = x / span (relieff.py:373-386)
        Xn[:, cont] = (X[:, cont] - data.minimum[cont]) / data.span[cont]
        p_d = disc.sum()
        for i in range(n):
            for j in range(i):
                if weights is None:
                    if data.data_type == "categorical":
                        d = np.count_nonzero(X[i] != X[j]) / p
                    elif data.data_type == "continuous":
                        d = np.sum(np.abs(Xn[i] - Xn[j]))
                    else:
                        hamming = np.count_nonzero(X[i, disc] != X[j, disc]) / p_d
                        d = hamming * p + np.sum(np.abs(Xn[i, cont] - Xn[j, cont]))
                elif data.data_type == "categorical":
                    d = np.sum(weights * (X[i] != X[j])) / np.sum(weights)
                else:
                    d = np.sum(weights * np.abs(Xn[i] - Xn[j]))
                D[i, j] = D[j, i] = d
        return D, False

    for i in range(n):
        for j in range(i):
            both = ~data.nan[i] & ~data.nan[j]
            od, oc = both & disc, both & cont
            n_observed = np.count_nonzero(both)
            dc = np.abs(X[i, oc] - X[j, oc]) / data.span[oc]
            if weights is None:
                d = np.count_nonzero(X[i, od] != X[j, od]) + np.sum(dc)
            else:
                d = 0.0
                if od.any():
                    mismatch = (X[i, od] != X[j, od]).astype(float)
                    d += np.dot(mismatch, weights[od]) / np.sum(weights[od])
                if oc.any():
                    d += np.dot(dc, weights[oc]) / np.sum(weights[oc])
            if weighted_mean and weights is not None:  # accident 6 fixed: no second division
                D[i, j] = d if n_observed else np.nan
            else:
                D[i, j] = d / n_observed if n_observed else np.nan
    return D, bool(np.isnan(D).any())


def _pair_lookup(D):
    """``P[i, j] = D[max(i, j), min(i, j)]``: skrebate's ``locator`` (baseswrf.py:107-110)."""
    lower = np.arange(len(D))[:, None] >= np.arange(len(D))[None, :]
    return np.where(lower, D, D.T)


def _mean_std(values, has_nan):
    if has_nan:
        return np.nanmean(values), np.nanstd(values)
    return np.mean(values), np.std(values)


# ----------------------------------------------------------------------------------
# Scoring of one anchor, one feature, one neighbour set (baseswrf.py:320-668)


def feature_difference(data, i, js, f):
    """``diff_f(i, j)`` for rows js: 0/1 mismatch, or skrebate's ramp (scoring_utils.py:158)."""
    if data.discrete[f]:
        return (data.X[js, f] != data.X[i, f]).astype(float)
    raw = np.abs(data.X[i, f] - data.X[js, f])
    if data.data_type == "mixed":
        return np.where(raw > data.sd[f], 1.0, raw / data.span[f])
    return raw / data.span[f]


def _neighbour_terms(data, i, js, v, f, near):
    """Per neighbour, what it adds: ``v diff`` (near), ``v [equal]`` (far, discrete)."""
    diff = feature_difference(data, i, js, f)
    if near or not data.discrete[f]:
        return v * diff
    return v * (data.X[js, f] == data.X[i, f])


def anchor_score(data, i, nn, v, f, near=True):
    """One anchor's term for feature f from neighbours ``nn`` with instance weights v."""
    if data.nan[i, f]:
        return 0.0
    keep = ~data.nan[nn, f]
    js, vs = nn[keep], v[keep]
    hit = data.is_hit(i, js)
    term = _neighbour_terms(data, i, js, vs, f, near)
    far_continuous = not near and not data.discrete[f]
    h = np.count_nonzero(hit)

    def group_sum(mask):
        count = np.count_nonzero(mask)
        total = term[mask].sum()
        return count - total if far_continuous else total  # accident 3

    if data.class_type != "multiclass":
        m = np.count_nonzero(~hit)
        hit_part = -group_sum(hit) / h if h else 0.0
        miss_part = group_sum(~hit) / m if m else 0.0
        if not h and not m:
            return 0.0
        return (hit_part + miss_part) / data.n

    others = [c for c in data.classes if c != data.y[i]]
    counts = {c: np.count_nonzero(data.y[js] == c) for c in others}
    m = sum(counts.values())
    if not h and not m:
        return 0.0
    score = 0.0
    if m:
        for c in others:  # accident 4
            score += group_sum(data.y[js] == c) * (counts[c] / m) * len(others)
        score /= m
    if h:
        score += -group_sum(hit) / h
    return score / data.n


def _top_features(scores, rank_absolute):
    key = np.absolute(scores) if rank_absolute else scores
    return np.argsort(key)[::-1]


def _add(scores, f, term, weights, weight_final_scores):
    if weights is not None and weight_final_scores:
        term = weights[f] * term
    scores[f] += term


# ----------------------------------------------------------------------------------
# The SWRF family (baseswrf.py)


def sigmoid_weight(d, centre, spread):
    """``2 / (1 + exp(-4 |d - centre| / spread)) - 1`` (baseswrf.py:12-20; spread 0 -> 1)."""
    spread = spread if spread != 0 else 1.0
    return 2.0 / (1.0 + np.exp(np.clip(-np.abs(d - centre) * (4.0 / spread), -50, 50))) - 1.0


def deadband_weight(d, edge, spread):
    """baseswrf.py:33-43: the same curve around a dead-band edge, no clip (spread <= 0 -> 1)."""
    scale = 4.0 / (spread if spread > 0 else 1.0)
    return 2.0 / (1.0 + np.exp(scale * (-np.abs(d - edge)))) - 1.0


def swrf_family(
    X,
    y,
    variant,
    *,
    weights=None,
    categorical_features=None,
    categorical_threshold=10,
    multiclass_threshold=10,
    label_type=None,
    weight_final_scores=False,
    rank_absolute=False,
    whole_matrix=False,
    anchors=None,
    exact_means=False,
    weighted_mean=False,
):
    """Scores of ``variant`` in ``SWRF_VARIANTS``, as skrebate's ``BaseSWRF``.

    Two departures from skrebate, off by default, for dmargin's documented
    differences: ``whole_matrix=True`` takes SWRF's global mean and deviation
    over the whole symmetric distance matrix (its NaN cells left out) instead
    of the stored array (accident 1 with missing values); ``anchors`` (row
    indices) scores those rows only, the global mean and deviation over their
    rows of the matrix, and scales the sum by ``N / len(anchors)``;
    ``weighted_mean=True``: with NaN and weights, a pair's distance is the
    weighted mean over its observed features (accident 6 fixed);
    ``exact_means=True``, on discrete data without NaN or weights, compares a
    distance ``k / p`` with a mean threshold in integers (``k * cells <
    sum k``) instead of with ``np.mean``'s rounded mean (accident 14).
    """
    if variant not in SWRF_VARIANTS:
        raise KeyError(variant)
    data = _Data(
        X, y, categorical_features, categorical_threshold, multiclass_threshold, label_type
    )
    if weights is not None and not isinstance(weights, np.ndarray):
        weights = None  # accident 7: a list is ignored
    D, has_nan = distance_array(data, weights, weighted_mean)
    pair = _pair_lookup(D)
    star = variant.endswith("star")
    visited = range(data.n) if anchors is None else anchors
    if whole_matrix or anchors is not None:
        global_mu, global_sd = _mean_std(pair[list(visited)].ravel(), has_nan)
    else:  # accident 1: over every stored cell
        global_mu, global_sd = _mean_std(np.concatenate(list(D)), has_nan)

    exact = (
        exact_means and data.data_type == "categorical" and not data.has_missing and weights is None
    )
    if exact:
        K = np.rint(pair * data.p).astype(np.int64)  # mismatch counts
        global_k = (K[list(visited)].sum(), len(visited) * data.n)

    scores = np.zeros(data.p)
    for i in visited:
        others = np.array([j for j in range(data.n) if j != i])
        d = pair[i, others]
        if exact and not variant.startswith("MultiSWRFDB"):
            k = K[i, others]
            total, cells = (k.sum(), len(k)) if variant.startswith("Multi") else global_k
            mu, sd = _mean_std(d, False) if variant.startswith("Multi") else (global_mu, global_sd)
            below, above = k * cells < total, k * cells > total
            near, far = others[below], others[above]
            v_near = sigmoid_weight(d[below], mu, sd)
            v_far = sigmoid_weight(d[above], mu, sd)
        elif variant.startswith("MultiSWRFDB"):
            mu, sd = _mean_std(d, has_nan)
            near_edge, far_edge = mu - sd / 2.0, mu + sd / 2.0
            near, far = others[d < near_edge], others[d > far_edge]
            v_near = deadband_weight(d[d < near_edge], near_edge, sd)
            v_far = deadband_weight(d[d > far_edge], far_edge, sd)
        else:
            if variant.startswith("Multi"):
                mu, sd = _mean_std(d, has_nan)
            else:
                mu, sd = global_mu, global_sd
            near, far = others[d < mu], others[d > mu]
            v_near = sigmoid_weight(d[d < mu], mu, sd)
            v_far = sigmoid_weight(d[d > mu], mu, sd)
        for f in range(data.p):
            if len(near) > 0:
                _add(
                    scores, f, anchor_score(data, i, near, v_near, f), weights, weight_final_scores
                )
            if star and len(far) > 0:
                _add(
                    scores,
                    f,
                    anchor_score(data, i, far, v_far, f, near=False),
                    weights,
                    weight_final_scores,
                )
    if anchors is not None:
        scores = scores * data.n / len(anchors)
    return Fit(scores, _top_features(scores, rank_absolute))


def swrf(X, y, **kwargs):
    """skrebate ``SWRF``."""
    return swrf_family(X, y, "SWRF", **kwargs)


def swrf_star(X, y, **kwargs):
    """skrebate ``SWRFstar``."""
    return swrf_family(X, y, "SWRFstar", **kwargs)


def multiswrf(X, y, **kwargs):
    """skrebate ``MultiSWRF``."""
    return swrf_family(X, y, "MultiSWRF", **kwargs)


def multiswrf_star(X, y, **kwargs):
    """skrebate ``MultiSWRFstar``."""
    return swrf_family(X, y, "MultiSWRFstar", **kwargs)


def multiswrfdb(X, y, **kwargs):
    """skrebate ``MultiSWRFDB``."""
    return swrf_family(X, y, "MultiSWRFDB", **kwargs)


def multiswrfdb_star(X, y, **kwargs):
    """skrebate ``MultiSWRFDBstar``."""
    return swrf_family(X, y, "MultiSWRFDBstar", **kwargs)


# ----------------------------------------------------------------------------------
# MuRelief (murelief.py)


def murelief_neighbours(data, pair, has_nan, i, n_neighbors, fixed=False):
    """The rows MuRelief scores anchor i with (murelief.py:44-213).

    ``fixed=True``: dmargin's rule instead of accidents 9-11 -- the anchor is no
    candidate, a row at distance NaN is never chosen, the rows of a group are
    taken by decreasing key ``|n_g d - s_g|`` (``n_g``, ``s_g``: the group's
    count and distance sum; in integer mismatch counts on discrete data), ties
    to the lower row index.
    """
    others = np.array([j for j in range(data.n) if j != i])
    d = pair[i, others]
    if fixed:
        return _murelief_fixed(data, others, d, i, n_neighbors)
    if data.class_type == "continuous":
        group = np.where(np.abs(data.y[i] - data.y[others]) < data.labels_std, 1, 0)
    else:
        group = data.y[others]
    key = np.zeros(data.n)  # the anchor keeps 0 (accident 9)
    for g in dict.fromkeys(group.tolist()):
        members = group == g
        mean = np.nanmean(d[members]) if has_nan else np.mean(d[members])
        key[others[members]] = np.abs(d[members] - mean)

    chosen, hits = [], 0
    misses = dict.fromkeys(data.classes, 0) if data.class_type == "multiclass" else {None: 0}
    for j in np.argsort(key)[::-1]:  # accidents 10, 11
        if data.is_hit(i, np.array([j]))[0]:
            if hits < n_neighbors:
                chosen.append(j)
                hits += 1
        else:
            label = data.y[j] if data.class_type == "multiclass" else None
            if misses[label] < n_neighbors:
                chosen.append(j)
                misses[label] += 1
        # multiclass: the anchor's own class never fills, so this never stops early
        if hits >= n_neighbors and all(v >= n_neighbors for v in misses.values()):
            break
    return np.array(chosen)


def _murelief_fixed(data, others, d, i, n_neighbors):
    exact = data.data_type == "categorical" and not data.has_missing
    if data.class_type == "continuous":
        group = np.where(np.abs(data.y[i] - data.y[others]) < data.labels_std, 1, 0)
    else:
        group = data.y[others]
    chosen = []
    for g in dict.fromkeys(group.tolist()):
        members = (group == g) & ~np.isnan(d)
        dg = d[members]
        if exact:  # mismatch counts
            dg = np.rint(dg * data.p).astype(np.int64)
        key = np.abs(len(dg) * dg - dg.sum())
        rows = others[members]
        order = sorted(range(len(rows)), key=lambda t: (-key[t], rows[t]))
        chosen.extend(rows[t] for t in order[:n_neighbors])
    return np.array(sorted(chosen), dtype=np.int64)


def murelief(
    X,
    y,
    *,
    n_neighbors=100,
    weights=None,
    categorical_features=None,
    categorical_threshold=10,
    multiclass_threshold=10,
    label_type=None,
    weight_final_scores=False,
    rank_absolute=False,
    fixed=False,
    anchors=None,
):
    """skrebate ``MuRelief``; ``fixed=True``: dmargin's rule instead of accidents 6 and
    9-11 (:func:`murelief_neighbours`); ``anchors``: those rows only, the sum scaled by
    ``N / len(anchors)``."""
    data = _Data(
        X, y, categorical_features, categorical_threshold, multiclass_threshold, label_type
    )
    if isinstance(n_neighbors, float):
        n_neighbors = int(n_neighbors * data.n * 0.5)
    if weights is not None and not isinstance(weights, np.ndarray):
        weights = None
    D, has_nan = distance_array(data, weights, weighted_mean=fixed)
    pair = _pair_lookup(D)
    scores = np.zeros(data.p)
    visited = range(data.n) if anchors is None else anchors
    for i in visited:
        nn = murelief_neighbours(data, pair, has_nan, i, n_neighbors, fixed)
        ones = np.ones(len(nn))
        for f in range(data.p):
            _add(scores, f, anchor_score(data, i, nn, ones, f), weights, weight_final_scores)
    if anchors is not None:
        scores = scores * data.n / len(anchors)
    return Fit(scores, _top_features(scores, rank_absolute))


# ----------------------------------------------------------------------------------
# The wrappers (iter.py, vls.py).  ``scorer(X, y, weights=None)`` returns a Fit.


def _transform(scores):
    """iter.py:101-111: negatives to 0, the rest over max(s) (max taken first)."""
    top = np.max(scores)
    return np.array([0.0 if s < 0 or top == 0 else s / top for s in scores])


def iter_relief(
    scorer, X, y, *, max_iter=10, convergence_threshold=0.0001, beta=0.1, rank_absolute=False
):
    """skrebate ``Iter`` around the estimator ``scorer`` stands for (iter.py:32-89)."""

    def to_weights(scores):
        if rank_absolute:
            return np.absolute(scores) / np.max(np.absolute(scores))
        return _transform(scores)

    last = last_weights = None
    for t in range(max_iter):
        if t == 0:
            last = scorer(X, y).feature_importances_
            continue
        new = to_weights(last)
        weights = new if t == 1 else last_weights + beta * (new - last_weights)
        scores = scorer(X, y, weights=weights).feature_importances_
        compared = last if rank_absolute else new  # accident 12
        if not np.any(np.abs(compared - scores) >= convergence_threshold):
            last = scores
            break
        last_weights, last = weights, scores
    return Fit(last, _top_features(last, rank_absolute))


def vls_subsets(n_features, num_feature_subset=40, size_feature_subset=5, random_state=None):
    """The feature subsets of skrebate's ``VLS.make_subsets`` (vls.py:242-275)."""
    rng = random.Random(random_state) if random_state is not None else random
    size = min(size_feature_subset, n_features)
    if num_feature_subset * size < n_features:
        raise ValueError("num_feature_subset * size_feature_subset must be >= n_features")
    indices = list(range(n_features))
    rng.shuffle(indices)
    subsets = [indices[k : k + size] for k in range(0, n_features, size)]
    leftover = subsets.pop() if len(subsets[-1]) < size else []
    if leftover:
        while len(leftover) < size:
            candidate = rng.choice(indices)
            if candidate not in leftover:
                leftover.append(candidate)
        subsets.append(leftover)
    for _ in range(num_feature_subset - len(subsets)):
        subsets.append(rng.sample(indices, size))
    return subsets


def vls(
    scorer,
    X,
    y,
    *,
    num_feature_subset=40,
    size_feature_subset=5,
    random_state=None,
    rank_absolute=False,
    weights=None,
):
    """skrebate ``VLS`` around the estimator ``scorer`` stands for (vls.py:170-237)."""
    p = X.shape[1]
    subsets = vls_subsets(p, num_feature_subset, size_feature_subset, random_state)
    table = np.full((len(subsets), p), 0.0 if rank_absolute else -np.inf)
    for row, subset in enumerate(subsets):
        sub_weights = None if weights is None else weights[subset]
        table[row, subset] = scorer(X[:, subset], y, weights=sub_weights).feature_importances_
    if rank_absolute:
        largest = np.max(np.absolute(table), axis=0)
        scores = np.array([m if m in table[:, f] else -m for f, m in enumerate(largest)])
    else:
        scores = table.max(axis=0)
    return Fit(scores, _top_features(scores, rank_absolute))
