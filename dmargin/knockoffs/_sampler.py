"""Model-X knockoffs of a table's features, sampled where the rows are.

A knockoff copy ``F~`` of the features ``F`` is a second table that has the
same joint law as ``F`` and that swaps with it column by column without
changing that law, drawn without looking at the labels (Candès, Fan, Janson
and Lv 2018).  A feature statistic fitted on ``[F, F~]`` then treats a null
feature and its knockoff alike, which is what the knockoff filter
(:class:`dmargin.KnockoffSelector`) needs for its false-discovery control.

Three constructions (:class:`KnockoffSampler`'s ``knockoffs``):

- ``"copula"`` -- a Gaussian copula: each feature is mapped to its mid-rank
  empirical CDF ``U`` (learned from an evenly spaced sample of rows) and to
  normal scores ``Z = Phi^-1(U)``; second-order Gaussian knockoffs are drawn
  for ``Z`` (mean, scale and correlation of ``Z``, knockpy's S matrix) and
  mapped back by ``Phi``.  The statistic sees ``F = U`` and ``F~ = Phi(Z~)``:
  both near-uniform on the same range, so a statistic that scales each
  feature by its range cannot tell a feature from its knockoff.
- ``"gaussian"`` -- the textbook second-order Gaussian knockoffs of the raw
  features, ``F = X``.  Valid for Gaussian features; a uniform or skewed
  feature's Gaussian knockoff has another marginal law.
- ``"independent"`` -- each knockoff column an independent draw from that
  feature's empirical law in the sample (exact for discrete values such as
  0/1/2 genotypes).  Valid only for mutually independent features: the fit
  tests every pair's correlation and refuses when independence is rejected.

The noise is keyed by row position: rows ``[c 4096, (c + 1) 4096)`` draw
from ``np.random.default_rng([SALT, seed, c])``, so the same rows get the same
knockoffs however the rows are cut into blocks (numpy, threaded dask, a
cluster).  On dask input the correlation is a reduction over the row blocks
and the knockoffs are sampled block by block where the rows are: only the
fitted state (a few ``A x A`` matrices and the marginal sketch) travels in
the graph.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import t as student_t
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._dask import is_dask_array, is_dask_frame
from .._utils import make_rng
from .._validation import (
    ARRAY,
    NONE,
    RANDOM_STATE,
    Interval,
    Options,
    check_params,
    non_numeric_error,
)
from ..engine import Rows, block_reduce, map_row_blocks, rows_at
from ._groups import (
    GROUP_THRESHOLD,
    check_groups,
    cluster_groups,
    first_seen_labels,
    knockpy_groups,
)

#: Rows of one noise stream: rows ``[c CHUNK_ROWS, (c + 1) CHUNK_ROWS)`` draw from
#: ``np.random.default_rng([SALT, seed, c])``.
CHUNK_ROWS = 4096
#: First word of the noise's seeds: ``default_rng([seed, 0])`` is the stream of
#: ``default_rng(seed)`` (numpy's seeds ignore trailing zeros), which a user may
#: have drawn the data from; knockoff noise correlated with the data is no knockoff.
SALT = 0x6B6E6F63
#: The correlation's smallest eigenvalue is raised to this (shrinking towards I).
EIGEN_FLOOR = 1e-6
#: Family-wise level of the independence check (Bonferroni over the pairs).
INDEPENDENCE_LEVEL = 0.01
INSTALL = 'pip install "dmargin[knockoffs]"'


def _label(j, names):
    return repr(str(names[j])) if names is not None else str(j)


# ---------------------------------------------------------------------------
# The rows
# ---------------------------------------------------------------------------


def _numeric_frame(dtypes):
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    bad = [str(c) for c, t in dtypes.items() if not (is_numeric_dtype(t) or is_bool_dtype(t))]
    if bad:
        kinds = sorted({str(dtypes[c]) for c in dtypes.index if str(c) in bad})
        raise non_numeric_error(bad, f"dtype {', '.join(kinds)}")


def as_rows(X):
    """``(X, names)``: numpy float64 (numpy, pandas, lists) or a dask array of one
    column block with known row chunks (dask array or DataFrame)."""
    names = None
    if is_dask_frame(X):
        _numeric_frame(X.dtypes)
        names = np.asarray([str(c) for c in X.columns], dtype=object)
        X = X.astype("float64").to_dask_array(lengths=True)
    if is_dask_array(X):
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2-D array of shape (n_samples, n_features); got {X.ndim}-D."
            )
        if any(np.isnan(c) for c in X.chunks[0]):
            raise ValueError(
                "The dask array X has unknown chunk sizes along its rows: call "
                "X.compute_chunk_sizes() first, or pass the dask DataFrame."
            )
        if not (
            np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)
        ) or np.issubdtype(X.dtype, np.complexfloating):
            raise non_numeric_error(list(range(X.shape[1])), f"dtype {X.dtype}")
        X = X.astype(np.float64)
        return (X.rechunk({1: -1}) if X.numblocks[1] > 1 else X), names
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        _numeric_frame(X.dtypes)
        names = np.asarray([str(c) for c in X.columns], dtype=object)
        return X.to_numpy(dtype=np.float64, na_value=np.nan), names
    values = np.asarray(X)
    if values.ndim != 2:
        raise ValueError(
            f"Expected a 2-D array of shape (n_samples, n_features); got {values.ndim}-D."
        )
    try:
        if values.dtype.kind in "USc":
            raise TypeError
        return values.astype(np.float64), None
    except (TypeError, ValueError):
        raise non_numeric_error(list(range(values.shape[1])), f"dtype {values.dtype}") from None


def _not_finite(bad, names):
    j = int(np.flatnonzero(bad)[0])
    more = int((np.asarray(bad) > 0).sum()) - 1
    others = f" (and {more} more columns)" if more else ""
    return ValueError(
        f"Knockoffs need complete rows: column {_label(j, names)} has "
        f"{int(bad[j])} missing or infinite values{others}; impute or drop "
        "them before fitting."
    )


def _sample_rows(X, index):
    """The rows ``index`` (sorted) as numpy; on dask only those rows travel."""
    if not is_dask_array(X):
        return X[index]
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int).tolist()
    rows = Rows(X, None, 0, True, list(zip(edges[:-1], edges[1:])))
    return rows_at(rows, index).X


def evenly_spaced(n, size):
    """``size`` row positions spread evenly over ``range(n)`` (first and last included)."""
    return np.unique(np.linspace(0, n - 1, size).round().astype(np.int64))


# ---------------------------------------------------------------------------
# Block functions (module level: they pickle by reference)
# ---------------------------------------------------------------------------


def sketch(sample):
    """The mid-rank ECDF's knots of each column of ``sample``: ``(knots, mids, counts)``,
    ``knots[:counts[j], j]`` the distinct values of column ``j`` and ``mids`` their
    mid-ranks over the sample's size (``(#{s < x} + #{s == x} / 2) / n``)."""
    n, a = sample.shape
    knots, mids = np.zeros((n, a)), np.zeros((n, a))
    counts = np.zeros(a, dtype=np.int64)
    for j in range(a):
        x = np.sort(sample[:, j])
        values, first = np.unique(x, return_index=True)
        last = np.append(first[1:], n)
        k = values.size
        knots[:k, j], mids[:k, j], counts[j] = values, (first + last) / (2.0 * n), k
        knots[k:, j], mids[k:, j] = values[-1], mids[k - 1, j]
    return knots, mids, counts


def ecdf(X, knots, mids, counts):
    """The mid-rank ECDF of each column, linear between the knots, held at the ends:
    in (0, 1); exactly ``(rank - 1/2) / n`` for a value of the sample."""
    U = np.empty(X.shape)
    for j in range(X.shape[1]):
        k = counts[j]
        U[:, j] = np.interp(X[:, j], knots[:k, j], mids[:k, j])
    return U


def noise(seed, start, n, width, uniform=False):
    """Rows ``start .. start + n`` of the noise: ``width`` standard normal (or uniform)
    draws a row, chunk ``c`` of :data:`CHUNK_ROWS` rows from
    ``default_rng([SALT, seed, c])``."""
    out = np.empty((n, width))
    if n == 0 or width == 0:
        return out
    for c in range(start // CHUNK_ROWS, (start + n - 1) // CHUNK_ROWS + 1):
        lo, hi = max(start, c * CHUNK_ROWS), min(start + n, (c + 1) * CHUNK_ROWS)
        rng = np.random.default_rng([SALT, seed, c])
        draw = rng.random if uniform else rng.standard_normal
        # A stream's first rows are the same whatever is drawn after them.
        out[lo - start : hi - start] = draw((hi - c * CHUNK_ROWS, width))[lo - c * CHUNK_ROWS :]
    return out


def _finite_or_nan(X):
    X = np.array(X, dtype=np.float64)
    X[~np.isfinite(X)] = np.nan
    return X


def normal_scores(X, knots, mids, counts):
    """``Phi^-1`` of :func:`ecdf` (non-finite values stay NaN)."""
    X = _finite_or_nan(X)
    Z = ndtri(ecdf(X, knots, mids, counts))
    Z[np.isnan(X)] = np.nan
    return Z


def moments(Z, shift):
    """``(rows, non-finite per column, sum, cross-products)`` of ``Z - shift`` (the
    non-finite values left out), summed over blocks by :func:`add_moments`."""
    Z = np.asarray(Z, dtype=np.float64)
    bad = ~np.isfinite(Z)
    D = np.where(bad, 0.0, Z - shift)
    return np.array(Z.shape[0]), bad.sum(axis=0), D.sum(axis=0), D.T @ D


def add_moments(parts):
    return tuple(sum(p[i] for p in parts) for i in range(4))


def gaussian_knockoffs(Z, mean, scale, proj, factor, G):
    """Second-order Gaussian knockoffs of ``Z``: ``mu + sd (Zs (I - R^-1 S) + G C^T)``,
    ``Zs = (Z - mu) / sd``; ``proj = I - R^-1 S``, ``factor = C^T`` (:func:`knockoff_factors`)."""
    Zs = (Z - mean) / scale
    return mean + scale * (Zs @ proj + G @ factor)


def knockoff_block(X, index, kind, knots, mids, counts, mean, scale, proj, factor, cols, seed):
    """``[F, F~]`` of one block of rows (``index``: their positions)."""
    X = np.asarray(X, dtype=np.float64)
    n, a = X.shape
    bad = (~np.isfinite(X)).sum(axis=0)
    if bad.any():
        raise _not_finite(bad, None)
    start = int(index[0]) if n else 0
    if kind == "independent":
        u = noise(seed, start, n, a, uniform=True)
        pick = np.minimum((u * knots.shape[0]).astype(np.int64), knots.shape[0] - 1)
        return np.hstack([X, np.take_along_axis(knots, pick, axis=0)])
    F = ecdf(X, knots, mids, counts) if kind == "copula" else X
    Fk = F.copy()
    if len(cols):
        T = ndtri(F[:, cols]) if kind == "copula" else F[:, cols]
        Tk = gaussian_knockoffs(T, mean, scale, proj, factor, noise(seed, start, n, len(cols)))
        Fk[:, cols] = ndtr(Tk) if kind == "copula" else Tk
    return np.hstack([F, Fk])


# ---------------------------------------------------------------------------
# The fitted state's algebra
# ---------------------------------------------------------------------------


def floor_eigenvalues(R, floor=EIGEN_FLOOR):
    """``(R', lam)``: ``R' = (1 - lam) R + lam I`` with the least ``lam >= 0`` that
    makes the smallest eigenvalue at least ``floor`` (a correlation stays one)."""
    if R.shape[0] == 0:
        return R, 0.0
    low = float(np.linalg.eigvalsh(R)[0])
    if low >= floor:
        return R, 0.0
    lam = (floor - low) / (1.0 - low)
    return (1.0 - lam) * R + lam * np.eye(R.shape[0]), lam


def smatrix(R, method, groups=None):
    """knockpy's S for the correlation ``R`` (imported here: an optional dependency);
    block-diagonal by group for ``groups`` (knockpy's labels 1..G, or None)."""
    if R.shape[0] == 0:
        return np.zeros((0, 0))
    try:
        from knockpy.smatrix import compute_smatrix
    except ImportError:
        raise ImportError(
            f"Knockoffs need knockpy for their S matrix, an optional dependency: {INSTALL}"
        ) from None
    extra = {"dsdp_warning": False} if method == "sdp" else {}
    # knockpy's coordinate descent visits the features in an order drawn from numpy's
    # global generator: seeded here (and restored after) so that S is a function of R.
    state = np.random.get_state()
    np.random.seed(0)
    try:
        if groups is not None:
            extra["groups"] = np.asarray(groups)
            if method == "maxent":
                _group_maxent_solver()
        S = np.asarray(compute_smatrix(R, method=method, **extra), dtype=np.float64)
    finally:
        np.random.set_state(state)
    return (S + S.T) / 2


def _group_maxent_solver():
    """knockpy solves maxent for groups by gradient descent in PyTorch only."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError(
            "smatrix='maxent' with groups needs PyTorch (knockpy's group "
            "maxent solver runs on it): install torch, or use "
            "smatrix='mvr' (the default), 'sdp' or 'equicorrelated', which "
            "solve for groups without it."
        ) from None


def knockoff_factors(R, S):
    """``(I - R^-1 S, C)``: ``C`` the symmetric square root of ``2S - S R^-1 S``
    (unique, so any correct code finds the same knockoffs; tiny negative
    eigenvalues, from rounding or an S at the edge of validity, set to 0)."""
    a = R.shape[0]
    RiS = np.linalg.solve(R, S)
    V = 2 * S - S @ RiS
    vals, vecs = np.linalg.eigh((V + V.T) / 2)
    C = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T
    return np.eye(a) - RiS, (C + C.T) / 2


def _independence(R, n, names, cols):
    """Refuse correlated features (Bonferroni over the pairs at :data:`INDEPENDENCE_LEVEL`)."""
    k = R.shape[0]
    if k < 2 or n < 4:
        return
    iu = np.triu_indices(k, 1)
    r = np.clip(R[iu], -1 + 1e-15, 1 - 1e-15)
    t = np.abs(r) * np.sqrt((n - 2) / (1 - r * r))
    p = 2 * student_t.sf(t, n - 2)
    worst = int(np.argmin(p))
    if p[worst] * iu[0].size <= INDEPENDENCE_LEVEL:
        i, j = cols[iu[0][worst]], cols[iu[1][worst]]
        raise ValueError(
            f"knockoffs='independent' assumes mutually independent features, but columns "
            f"{_label(i, names)} and {_label(j, names)} are correlated (r = {r[worst]:.3f} "
            f"over N = {n} rows; independence rejected at level {INDEPENDENCE_LEVEL} over "
            f"the {iu[0].size} pairs).  Use knockoffs='copula' for continuous features, or "
            "prune correlated features (e.g. SNPs in linkage) first."
        )


def _seed(random_state):
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(make_rng(random_state).integers(2**63 - 1))


class KnockoffSampler(BaseEstimator):
    """Model-X knockoffs of numeric features, learned and sampled by row blocks.

    ``fit`` learns each feature's marginal law from an evenly spaced sample of
    rows and the features' correlation from every row; ``augment`` returns
    ``[F, F~]``, the features in the space the statistic sees and their
    knockoffs.  Used by :class:`dmargin.KnockoffSelector`.

    Parameters
    ----------
    knockoffs : {"auto", "copula", "gaussian", "independent"}, default="auto"
        The construction.  ``"copula"``: Gaussian knockoffs of the normal
        scores ``Phi^-1(U)`` of each feature's mid-rank ECDF ``U``, mapped back
        by ``Phi``: ``F = U``, ``F~ = Phi(Z~)`` (continuous features of any
        marginal law).  ``"gaussian"``: second-order Gaussian knockoffs of the
        raw features, ``F = X`` (valid for Gaussian features only).
        ``"independent"``: each knockoff column drawn from its feature's
        empirical law in the sample, ``F = X`` -- valid only when the features
        are mutually independent, which the fit tests.  ``"auto"``:
        ``"copula"``.  The first three refuse discrete features.
    smatrix : {"mvr", "maxent", "sdp", "equicorrelated"}, default="mvr"
        knockpy's method for the S matrix (minimum variance-based
        reconstructability, maximum entropy, SDP, or the closed-form
        equicorrelated one).
    sample_rows : int, default=10_000
        Evenly spaced rows that the marginal laws come from (all rows when
        there are at most this many: then ``U`` are the exact mid-ranks).
    discrete_threshold : int, default=10
        A column with 2 to this many distinct values in the sample (and
        fewer than the sampled rows) is discrete: refused by ``"copula"``,
        ``"gaussian"`` and ``"auto"``.
    groups : None, "auto" or array-like of shape (n_features,), default=None
        Group knockoffs (Dai & Barber, 2016): features of a group swap with
        their knockoffs together, so S is block-diagonal by group (knockpy's
        solvers with ``groups``) and a feature nearly copied by others in its
        group still gets a knockoff that differs from it.  ``None``: every
        feature its own group.  ``"auto"``: average-linkage clustering of the
        correlation above (normal scores for ``"copula"``) on ``1 - |r|``,
        groups merged while their average ``|r|`` is at least
        ``group_threshold``.  An array: one label per feature.
        ``"independent"`` knockoffs have no groups (``"auto"`` gives
        singletons; other groups are refused).
    group_threshold : float in [0, 1], default=0.7
        The average absolute correlation at which ``groups="auto"`` merges.

    Attributes
    ----------
    knockoffs_ : str
        The construction used.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has column names.
    n_samples_fit_ : int
        Rows seen by the fit (the correlation's).
    constant_ : ndarray of bool, shape (n_features_in_,)
        Columns of one value (in the sample, or of zero variance): their
        knockoff is the column itself, and they are left out of the
        correlation and of S.
    location_, scale_ : ndarray of shape (n_features_in_,)
        Mean and standard deviation of what the Gaussian step sees: the
        normal scores (``"copula"``) or the raw features.
    correlation_ : ndarray of shape (n_features_in_, n_features_in_)
        Their correlation over all rows, after the shrinkage below (constant
        columns: 1 on the diagonal, 0 elsewhere).
    shrinkage_ : float
        ``lam`` of ``(1 - lam) R + lam I``, the least shrinkage towards the
        identity that brings the smallest eigenvalue of the correlation to
        ``1e-6`` (0 unless it is singular: more features than rows,
        duplicated columns).
    smatrix_ : ndarray of shape (n_features_in_, n_features_in_)
        knockpy's S for that correlation (0 for constant columns),
        block-diagonal by group.
    groups_ : ndarray of int, shape (n_features_in_,)
        Each feature's group, 0..G-1 numbered by the group's first feature
        (``arange(n_features_in_)`` without groups; constant columns alone).
    n_groups_ : int
        G.

    Notes
    -----
    The knockoff law is ``Z~ = Z - Z R^-1 S + G C^T`` with ``C C^T = 2S - S
    R^-1 S`` (``C`` its symmetric square root, tiny negative eigenvalues
    clipped to 0) in standardised coordinates.  The noise ``G`` of rows
    ``[4096 c, 4096 (c + 1))`` comes from ``np.random.default_rng([0x6B6E6F63,
    seed, c])`` (the first word keeps it apart from ``default_rng(seed)``,
    which may have drawn the data): the same rows and seed give the same
    knockoffs under any chunking.  The mid-rank ECDF is linear between the
    sample's values and held at its ends beyond them.  knockpy's solvers are
    run with numpy's global generator seeded (and restored after), so that S,
    and the knockoffs, are a function of the data and the seed.

    On dask input, the sample of rows and the correlation's ``A x A`` sums
    come to the driver, S is computed there, and ``augment`` is a lazy dask
    array sampled block by block where the rows are.

    References
    ----------
    Candès, Fan, Janson and Lv (2018), "Panning for gold: model-X knockoffs for
    high dimensional controlled variable selection", JRSS B 80(3).

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import KnockoffSampler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.exponential(size=(200, 3))
    >>> sampler = KnockoffSampler().fit(X)
    >>> sampler.knockoffs_
    'copula'
    >>> sampler.augment(X, random_state=0).shape
    (200, 6)
    """

    _parameter_constraints = {
        "knockoffs": [Options(("auto", "copula", "gaussian", "independent"))],
        "smatrix": [Options(("mvr", "maxent", "sdp", "equicorrelated"))],
        "sample_rows": [Interval(numbers.Integral, 3, None)],
        "discrete_threshold": [Interval(numbers.Integral, 1, None)],
        "groups": [NONE, Options(("auto",)), ARRAY],
        "group_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
    }

    def __init__(
        self,
        knockoffs="auto",
        smatrix="mvr",
        sample_rows=10_000,
        discrete_threshold=10,
        groups=None,
        group_threshold=GROUP_THRESHOLD,
    ):
        self.knockoffs = knockoffs
        self.smatrix = smatrix
        self.sample_rows = sample_rows
        self.discrete_threshold = discrete_threshold
        self.groups = groups
        self.group_threshold = group_threshold

    def fit(self, X, y=None):
        """Learn the marginal laws, the correlation and the knockoff law.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
            Numeric, complete rows.
        y : ignored

        Returns
        -------
        self : KnockoffSampler
        """
        check_params(self)
        X, names = as_rows(X)
        n, a = X.shape
        if n < 3:
            raise ValueError(
                f"X has {n} rows: knockoffs need at least 3 rows to learn the features' law."
            )
        self.n_features_in_, self.n_samples_fit_ = a, n
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        kind = "copula" if self.knockoffs == "auto" else self.knockoffs
        sample = _finite_or_nan(_sample_rows(X, evenly_spaced(n, min(n, self.sample_rows))))
        if not is_dask_array(X):
            bad = (~np.isfinite(X)).sum(axis=0)
            if bad.any():
                raise _not_finite(bad, names)
        distinct = np.array([np.unique(c[~np.isnan(c)]).size for c in sample.T])
        self._refuse_discrete(kind, sample, distinct, names)
        knots, mids, counts = sketch(np.where(np.isnan(sample), 0.0, sample))
        if kind == "copula":
            state, T_sample = (knots, mids, counts), ndtri(ecdf(sample, knots, mids, counts))
            T = (
                normal_scores(X, *state)
                if not is_dask_array(X)
                else map_row_blocks(normal_scores, X, *state, n_cols=a)
            )
        else:
            T, T_sample = X, sample
        shift = np.nan_to_num(np.nanmean(T_sample, axis=0))
        rows, bad, total, cross = block_reduce(
            T, functools.partial(moments, shift=shift), add_moments, "the knockoffs' correlation"
        )
        if bad.any():
            raise _not_finite(bad, names)
        mean = total / rows
        cov = cross / rows - np.outer(mean, mean)
        scale = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        constant = (distinct <= 1) | (scale <= 1e-12 * np.maximum(1.0, np.abs(mean + shift)))
        cols = np.flatnonzero(~constant)
        R = cov[np.ix_(cols, cols)] / np.outer(scale[cols], scale[cols])
        np.fill_diagonal(R, 1.0)
        self.knockoffs_, self.constant_ = kind, constant
        self.location_, self.scale_ = mean + shift, np.where(constant, 0.0, scale)
        self.groups_ = self._groups(kind, R, cols, a)
        self.n_groups_ = int(self.groups_.max()) + 1 if a else 0
        if kind == "independent":
            _independence(R, n, names, cols)
            self.shrinkage_, S = 0.0, np.zeros_like(R)
            proj = factor = np.zeros((0, 0))
            self._state = (np.sort(sample, axis=0), None, None)
        else:
            R, self.shrinkage_ = floor_eigenvalues(R)
            S = smatrix(R, self.smatrix, knockpy_groups(self.groups_[cols]))
            proj, factor = knockoff_factors(R, S)
            self._state = (knots, mids, counts) if kind == "copula" else (None, None, None)
        self.correlation_, self.smatrix_ = np.eye(a), np.zeros((a, a))
        self.correlation_[np.ix_(cols, cols)], self.smatrix_[np.ix_(cols, cols)] = R, S
        self._gauss = (self.location_[cols], scale[cols], proj, factor, cols)
        return self

    def _groups(self, kind, R, cols, a):
        """The features' group labels, 0..G-1 by first member (singletons for None)."""
        if self.groups is None:
            return np.arange(a, dtype=np.int64)
        if isinstance(self.groups, str):
            if kind == "independent":  # independent features: no correlated groups
                return np.arange(a, dtype=np.int64)
            labels = np.arange(a, dtype=np.int64) + a  # constant columns stay alone
            labels[cols] = cluster_groups(R, float(self.group_threshold))
            return first_seen_labels(labels)
        labels = check_groups(self.groups, a)
        if kind == "independent" and np.unique(labels).size < a:
            raise ValueError(
                "knockoffs='independent' draws each feature's knockoff on its own, for "
                "mutually independent features: it has no groups of correlated features to "
                "swap together.  Use groups=None (or 'auto'), or knockoffs='copula' for "
                "correlated features."
            )
        return labels

    def _refuse_discrete(self, kind, sample, distinct, names):
        if kind == "independent":
            return
        # Few values, and repeated: a sample of 8 rows of 8 values says nothing.
        rows = (~np.isnan(sample)).sum(axis=0)
        discrete = np.flatnonzero(
            (distinct > 1) & (distinct <= self.discrete_threshold) & (distinct < rows)
        )
        if discrete.size == 0:
            return
        j = int(discrete[0])
        values = np.unique(sample[:, j][~np.isnan(sample[:, j])])
        shown = ", ".join(f"{v:g}" for v in values)
        more = f" (and {discrete.size - 1} more such columns)" if discrete.size > 1 else ""
        raise ValueError(
            f"Column {_label(j, names)} is discrete: {values.size} distinct values ({shown}) "
            f"in {sample.shape[0]} sampled rows{more}.  Gaussian and copula knockoffs "
            f"(knockoffs={self.knockoffs!r}) are not valid for discrete features such as "
            "0/1/2 genotypes.  Use knockoffs='independent' when the features are mutually "
            "independent (e.g. SNPs pruned for linkage; the fit tests it), or drop or "
            f"re-encode the column (discrete_threshold={self.discrete_threshold})."
        )

    def augment(self, X, random_state=None):
        """``[F, F~]``: the features as the statistic sees them and their knockoffs.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
            The rows to draw knockoffs for (usually those of ``fit``).
        random_state : int, numpy Generator or None, default=None
            The noise's seed: an int gives the same knockoffs on every run and
            under any chunking of the rows.

        Returns
        -------
        FF : ndarray or dask array of shape (n_samples, 2 * n_features_in_)
            float64; numpy for in-memory input, a lazy dask array with ``X``'s
            row blocks for dask input (sampled block by block where the rows
            are).
        """
        check_is_fitted(self, "knockoffs_")
        if not isinstance(
            random_state, (np.random.Generator, np.random.RandomState)
        ) and not RANDOM_STATE.accepts(random_state):
            raise ValueError(
                f"random_state={random_state!r} is not valid; it must be {RANDOM_STATE}."
            )
        X, names = as_rows(X)
        seen = getattr(self, "feature_names_in_", None)
        if names is not None and seen is not None and list(names) != list(seen):
            raise ValueError(
                f"X's columns {list(names)[:5]} are not the columns seen in fit "
                f"{list(seen)[:5]}: select and order them as in fit."
            )
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but the KnockoffSampler was "
                f"fitted with {self.n_features_in_} features."
            )
        args = (self.knockoffs_, *self._state, *self._gauss, _seed(random_state))
        if not is_dask_array(X):
            return knockoff_block(X, np.arange(min(1, X.shape[0])), *args)
        index = np.arange(X.shape[0], like=X)  # a lazy row index, cut as X's blocks
        return map_row_blocks(knockoff_block, X, *args, y=index, n_cols=2 * X.shape[1])

    def sample(self, X, random_state=None):
        """``(F, F~)``: :meth:`augment`'s two halves.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        random_state : int, numpy Generator or None, default=None

        Returns
        -------
        F, F_knockoff : ndarrays or dask arrays of shape (n_samples, n_features_in_)
        """
        FF = self.augment(X, random_state)
        a = self.n_features_in_
        return FF[:, :a], FF[:, a:]
