"""Online I-RELIEF: one anchor at a time, streamed, for very large N.

Sun (2007), section 5.  The rows stream in blocks
(``fit``) or chunks (``partial_fit``) and each anchor's step runs on the
driver in the engine's online kernel; the stream's state -- weights, running
average, frozen scaling, reference rows, random generator -- is saved and
resumed exactly through :mod:`dmargin.irelief._checkpoint`.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._base import N_FEATURES_TO_SELECT, WeightSelector, miss_priors
from .._capabilities import Capabilities
from .._dask import compute
from .._start import Stream, start_fit
from .._utils import make_rng, timer
from .._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Options, check_params, check_X_y
from ..engine import (
    MASKED,
    MISSING,
    block_reduce,
    merge,
    online_irelief_steps,
    online_irelief_steps_general,
)
from ..io._training import Scaling, iter_row_blocks
from ..progress import fit_steps
from ._checkpoint import read_online_state
from ._checkpoint_write import write_online_state
from ._cost import online_cost

_SCALE = [Options(("minmax",)), NONE]


#: Pair-features of one call of the sequential kernel at most (a fraction of a second).
_CALL_WORK = 1e8


class OnlineIRelief(WeightSelector):
    """Online I-RELIEF: one anchor at a time, for very large N (Sun 2007, section 5).

    Each step computes one sample's expected margin vector ``pi`` against the
    candidate set with the current weights, then
    ``nu <- nu + eta (pi - nu)``, ``eta = 1 / (a t + 1)``, ``w = nu+ / ||nu+||``.
    Cost O(passes x N x M x A) for M candidates instead of O(N^2 A) per
    batch iteration.

    Visiting order: the rows are cut into consecutive blocks of
    ``block_size`` rows; ``rng = np.random.default_rng(random_state)`` is made
    once per ``fit`` (after drawing the reference sample, if any); every pass
    visits the blocks in order and, within a block, the rows in the order
    ``rng.permutation(len(block))`` (or in row order when ``shuffle=False``).
    The order does not depend on how the input is chunked, so numpy and dask
    inputs give the same weights.  For dask input (e.g. from
    :func:`dmargin.read_parquet`) ``fit`` computes one dask block at a time
    (the next one is read while the current one is streamed) and holds only
    those blocks and the reference rows: with ``reference_size=M`` memory is
    O((M + chunk) x n_features), not O(N).

    Streams that do not fit a single ``fit`` call (many files, data arriving
    over time) go through ``partial_fit``, one chunk per call, e.g. the row
    groups of :func:`dmargin.iter_parquet`; :meth:`set_reference` holds one
    bounded, seeded candidate sample across the chunks, and
    :meth:`save_state` / :meth:`load_state` resume such a stream exactly.

    Parameters
    ----------
    sigma : float, default=2.0
        Kernel width.
    a : float, default=10.0
        Learning-rate constant in ``eta = 1 / (a t + 1)``.
    n_passes : int, default=3
        Passes over the data in ``fit``.
    tol : float, default=1e-3
        Stop after a pass when ``||w - w_previous_pass||_2 < tol`` (0 runs all
        passes).
    multiclass : {"margin", "relieff"}, default="margin"
        As :class:`IRelief`: ``"margin"`` is I-RELIEF-2, ``"relieff"``
        I-RELIEF-1; identical for two classes.
    outliers : bool, default=True
        As :class:`IRelief`: weight each anchor's step by the probability
        that it is not an outlier.
    discrete_threshold : int, default=0
        A feature with at most this many distinct values (missing values not
        counted) is discrete: a difference of 0 or 1 (:class:`IRelief`'s
        rule).  In ``fit`` counted over all training rows (one more pass
        when positive); in ``partial_fit`` over the first chunk, then frozen
        as the ranges.  ``0``: every feature continuous.
    scale : {"minmax"} or None, default="minmax"
        In ``fit`` the ranges come from all training rows; in
        ``partial_fit`` from the first chunk, then frozen.
    reference_size : int or None, default=None
        Candidates for every anchor: ``None`` uses all training rows (of the
        chunk, in ``partial_fit``); an int draws that many rows once, without
        replacement, seeded by ``random_state``.  :meth:`set_reference` fixes
        one candidate set for all ``partial_fit`` calls instead.  With
        ``None`` every row is a candidate and is gathered to the driver (dask
        input too): set an int for data larger than memory.
    block_size : int, default=10000
        Rows per streamed block (fixes the visiting order, see above).
    shuffle : bool, default=True
        Shuffle the rows within each block on every pass.
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive weight, an
        int the top ones, a float that fraction.
    random_state : int, Generator or None, default=None
        Seeds the shuffles within blocks and the draw of ``reference_size``
        rows.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The weights ``w`` after the last step.
    nu_ : ndarray of shape (n_features,)
        The running average ``nu``.
    discrete_features_ : ndarray of shape (n_features,), dtype=bool
        The features treated as discrete (``discrete_threshold``).
    n_steps_ : int
        Steps taken (samples visited) so far.
    n_passes_ : int
        Passes run by ``fit``.
    history_ : ndarray of shape (n_passes_,)
        Change of ``w`` over each pass.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Notes
    -----
    Missing values (NaN) follow :class:`IRelief`'s rule (skrebate's, with
    probabilities for counts): a pair's distance is the weighted sum over the
    features present in both rows times ``A / n_present``, and each step's
    expected hit and miss differences are taken per feature over the
    candidates that have it.  With ``scale="minmax"`` the frozen ranges are
    those of the values present.  Infinite values are refused.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dmargin import OnlineIRelief
    >>> X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    >>> OnlineIRelief(random_state=0).fit(X, y).feature_importances_.shape
    (6,)
    """

    #: The rows stream through the driver, a block at a time; NaN are missing values.
    _capabilities = Capabilities(allow_nan=True, engine_rows=False)
    _parameter_constraints = {
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "a": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_passes": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "multiclass": [Options(("margin", "relieff"))],
        "outliers": [BOOLEAN],
        "discrete_threshold": [Interval(numbers.Integral, 0, None)],
        "scale": _SCALE,
        "reference_size": [NONE, Interval(numbers.Integral, 2, None)],
        "block_size": [Interval(numbers.Integral, 1, None)],
        "shuffle": [BOOLEAN],
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        *,
        sigma=2.0,
        a=10.0,
        n_passes=3,
        tol=1e-3,
        multiclass="margin",
        outliers=True,
        discrete_threshold=0,
        scale="minmax",
        reference_size=None,
        block_size=10_000,
        shuffle=True,
        n_features_to_select=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.a = a
        self.n_passes = n_passes
        self.tol = tol
        self.multiclass = multiclass
        self.outliers = outliers
        self.discrete_threshold = discrete_threshold
        self.scale = scale
        self.reference_size = reference_size
        self.block_size = block_size
        self.shuffle = shuffle
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    def _start(self, n_features, classes, counts):
        self.classes_ = np.asarray(classes)
        self._miss_prior = miss_priors(counts)
        self.feature_importances_ = np.full(n_features, 1.0 / n_features)
        self.nu_ = np.zeros(n_features)
        self.n_steps_ = 0

    def _steps(self, Xa, start, ya, order, ref):
        """Visit ``Xa[order]``; ``start`` is the position of ``Xa[0]`` (self-exclusion)."""
        Xc, yc, ic = ref
        ia = np.arange(start, start + Xa.shape[0], dtype=np.int64)
        dm = self.discrete_features_
        if np.isnan(Xa).any() or np.isnan(Xc).any():
            # IRelief's missing-value rule; on complete rows it is the MASKED step.
            kernel, tail = online_irelief_steps_general, (dm, MISSING)
        elif dm.any():
            kernel, tail = online_irelief_steps_general, (dm, MASKED)
        else:
            kernel, tail = online_irelief_steps, ()
        # The anchors in calls of about _CALL_WORK pair-features (each call sorts
        # the candidates once): Ctrl-C reaches the driver between calls.
        step = max(64, int(_CALL_WORK // max(1, Xc.size)))
        for s in range(0, order.shape[0], step):
            self.n_steps_ = kernel(
                Xa,
                ia,
                ya,
                order[s : s + step],
                Xc,
                yc,
                ic,
                self.feature_importances_,
                self.nu_,
                self.n_steps_,
                float(self.a),
                float(self.sigma),
                self.multiclass == "margin",
                self._miss_prior,
                bool(self.outliers),
                *tail,
            )

    def _detect_discrete(self, X):
        """Features with at most ``discrete_threshold`` distinct values (NaN not counted)."""
        cap = self.discrete_threshold
        if cap == 0:
            return np.zeros(X.shape[1], dtype=np.bool_)
        uniques = block_reduce(
            X,
            functools.partial(merge.column_summary_chunk, cap=cap),
            merge.column_summary_combine,
            "distinct-values",
        )[0]
        return np.array([u is not None and u.size <= cap for u in uniques], dtype=np.bool_)

    def _reference(self, X, codes, rng):
        """Candidate rows ``(Xc, yc, global index)``, sorted by index."""
        n = X.shape[0]
        if self.reference_size is None or self.reference_size >= n:
            idx = np.arange(n)
            Xc, yc = X, codes
        else:
            idx = np.sort(rng.choice(n, size=self.reference_size, replace=False))
            Xc, yc = X[idx], codes[idx]
        Xc, yc = compute(Xc, yc, what="the reference rows")
        return np.ascontiguousarray(Xc, dtype=np.float64), np.asarray(yc, np.int64), idx

    def fit(self, X, y):
        """Stream ``n_passes`` passes over the rows.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : OnlineIRelief
        """
        data = start_fit(self, X, y).data
        self._scale = data.scaling
        self.discrete_features_ = self._detect_discrete(data.X)
        self._fixed_ref = None  # a set_reference sample belongs to partial_fit streams
        rng = make_rng(self.random_state)
        ref = self._reference(data.X, data.codes, rng)
        self._start(data.X.shape[1], data.classes, data.counts)
        n = data.X.shape[0]
        bounds = [(s, min(s + self.block_size, n)) for s in range(0, n, self.block_size)]
        history = []
        with fit_steps(self, "pass", self.n_passes) as steps:
            for p in range(self.n_passes):
                w_before = self.feature_importances_.copy()
                with timer("online I-RELIEF pass %d", p + 1):
                    for start, Xa, ya in iter_row_blocks(data.X, data.codes, bounds):
                        order = (
                            rng.permutation(Xa.shape[0]) if self.shuffle else np.arange(Xa.shape[0])
                        )
                        self._steps(Xa, start, ya, order, ref)
                history.append(np.linalg.norm(self.feature_importances_ - w_before))
                steps.step()
                if history[-1] < self.tol:
                    break
        self.history_ = np.asarray(history)
        self.n_passes_ = len(history)
        self._rng = rng  # partial_fit after fit continues the same stream
        return self

    def partial_fit(self, X, y, classes=None):
        """One pass over one chunk of rows, continuing the stream.

        Candidates are the rows fixed by :meth:`set_reference` if it was
        called, otherwise the chunk's own rows (or ``reference_size`` of
        them).  On the first call, ``classes`` lists every label the stream
        will contain (default: the labels of this chunk), and with
        ``scale="minmax"`` the feature ranges of this chunk are frozen.
        The chunk's rows take the stream positions ``n_steps_ ...
        n_steps_ + len(chunk) - 1`` (before the call); an anchor is never its
        own candidate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None

        Returns
        -------
        self : OnlineIRelief
        """
        first = not hasattr(self, "nu_")
        # The first chunk fixes the classes and the scaling; a later one is checked
        # against them (and may be a single row, the tail of a stream).
        data = start_fit(
            self,
            X,
            y,
            stream=Stream(
                first, classes if first else self.classes_, None if first else self._scale
            ),
        ).data
        X, codes = data.X, data.codes
        if first:
            self._start(X.shape[1], data.classes, data.counts)
            self._scale = data.scaling
            self.discrete_features_ = self._detect_discrete(X)  # frozen, as the ranges
            self._rng = make_rng(self.random_state)
            pending = getattr(self, "_pending_ref", None)
            self._pending_ref = None
            self._fixed_ref = None if pending is None else self._encode_reference(*pending)
        position = self.n_steps_
        ref = getattr(self, "_fixed_ref", None)
        if ref is None:
            Xc, yc, ic = self._reference(X, codes, self._rng)
            ref = (Xc, yc, ic + position)
        order = self._rng.permutation(X.shape[0]) if self.shuffle else np.arange(X.shape[0])
        self._steps(np.ascontiguousarray(X), position, codes, order, ref)
        return self

    def set_reference(self, X, y, *, index=None):
        """Use the rows ``X, y`` as the candidates of every following ``partial_fit``.

        One bounded candidate set held across the chunks of a stream -- for
        instance ``reference_size`` rows sampled from a Parquet dataset while
        its row groups are streamed with :func:`dmargin.iter_parquet`.  Each
        step then costs O(M x n_features) for M reference rows, whatever the
        chunk size, and the weights do not depend on how the stream is cut
        into chunks (only on the visiting order).  The rows are scaled with
        the stream's frozen ranges (those of the first chunk) and kept as
        float64; :meth:`save_state` stores them.  Call it before the first
        ``partial_fit`` or between calls; ``fit`` discards it (it draws its
        own sample, ``reference_size``).

        Parameters
        ----------
        X : array-like or dask array of shape (M, n_features)
            Reference rows in the stream's raw units (dask input is computed).
        y : array-like of shape (M,)
            Their labels; every label must be one of the stream's classes
            (pass ``classes=`` to the first ``partial_fit`` when the first
            chunk lacks some).
        index : array-like of int of shape (M,), default=None
            Positions of these rows in the stream, when they are also
            streamed (positions count the rows given to ``partial_fit``,
            starting at 0; see :meth:`partial_fit`): an anchor is then not its
            own candidate, exactly as in ``fit``.  ``None``: the rows are not
            stream rows and none is ever excluded.

        Returns
        -------
        self : OnlineIRelief
        """
        X, y = compute(X, y, what="the reference rows")
        started = hasattr(self, "nu_")
        X, y = check_X_y(self, X, y, reset=not started, allow_nan=True)
        if index is not None:
            index = np.asarray(index)
            if (
                index.shape != (X.shape[0],)
                or index.dtype.kind not in "iu"
                or np.any(index < 0)
                or np.unique(index).size != index.size
            ):
                raise ValueError(
                    f"index must be {X.shape[0]} distinct nonnegative integer "
                    "stream positions, one per reference row; pass index=None "
                    "when the reference rows are not part of the stream."
                )
            index = index.astype(np.int64)
        if started:
            self._fixed_ref = self._encode_reference(X, y, index)
        else:
            self._pending_ref = (X, y, index)
        return self

    def _encode_reference(self, X, y, index):
        """Scaled float64 rows, class codes and stream positions of a reference sample."""
        if X.shape[1] != self.nu_.shape[0]:
            raise ValueError(
                f"The reference rows have {X.shape[1]} features but the stream "
                f"has {self.nu_.shape[0]}; use the same feature columns."
            )
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if unknown.size:
            raise ValueError(
                f"The reference rows have labels {unknown.tolist()} that are not "
                f"among the stream's classes {self.classes_.tolist()}; pass "
                "classes= with every label on the first partial_fit call."
            )
        X = np.asarray(X, dtype=np.float64)
        if self._scale is not None:
            X = self._scale.apply(X)
        # Rows that are not stream rows get negative positions: never an anchor's own.
        ic = -1 - np.arange(X.shape[0], dtype=np.int64) if index is None else index
        return (np.ascontiguousarray(X), np.searchsorted(self.classes_, y).astype(np.int64), ic)

    # -- state on disk: arrays in an .npz, everything else as JSON in it; no pickle --

    _STATE_FORMAT = "dmargin.OnlineIRelief/3"

    def save_state(self, path):
        """Write the stream's state to ``path`` (an ``.npz`` file, no pickle).

        Weights, running average, step count, classes, the frozen scaling, the
        random generator's state, the :meth:`set_reference` rows (scaled, with
        their class codes and positions) and the parameters: :meth:`load_state`
        followed by the same ``partial_fit`` calls gives exactly the weights
        an uninterrupted stream would.

        The write is atomic: the file goes to a temporary name in the same
        directory, is flushed to disk and renamed onto ``path``, so ``path``
        always holds a complete checkpoint, even when the process is killed
        during the save.  The checkpoint it replaces is kept as
        ``path + ".prev"``.  Load ``path``; ``path + ".prev"`` is the fallback
        should ``path`` ever fail to load (its error message says so).

        Parameters
        ----------
        path : str or path-like

        Raises
        ------
        ValueError
            The parameters or the state are not valid (nothing is written).
        """
        check_is_fitted(self, "nu_")
        check_params(self)  # a checkpoint that load_state would refuse is not written
        params = self.get_params()
        if not (params["random_state"] is None or isinstance(params["random_state"], int)):
            params["random_state"] = None  # the generator's state below is what matters
        scaling = self._scale
        ref = getattr(self, "_fixed_ref", None)
        header = {
            "format": self._STATE_FORMAT,
            "params": params,
            "n_steps": int(self.n_steps_),
            "rng": self._rng.bit_generator.state,
            "feature_names_in": None
            if not hasattr(self, "feature_names_in_")
            else [str(c) for c in self.feature_names_in_],
            "scaled": scaling is not None,
            "reference": ref is not None,
            # The counts fix every array's shape before the reader touches one.
            "n_features": int(self.nu_.shape[0]),
            "n_classes": int(len(self.classes_)),
            "n_reference": 0 if ref is None else int(ref[0].shape[0]),
            "discrete": bool(self.discrete_features_.any()),
            "reference_missing": 0 if ref is None else int(np.isnan(ref[0]).sum()),
        }
        arrays = {
            "nu": self.nu_,
            "w": self.feature_importances_,
            "classes": _plain_array(self.classes_),
            "miss_prior": self._miss_prior,
        }
        if scaling is not None:
            arrays.update(
                {
                    key: np.asarray(getattr(scaling, key), dtype=np.float64)
                    for key in ("offset", "span", "prescale")
                }
            )
        if ref is not None:
            arrays.update(zip(("ref_X", "ref_codes", "ref_index"), ref))
        if header["discrete"]:
            arrays["discrete"] = self.discrete_features_.astype(np.int64)
        write_online_state(path, header, arrays, type(self))

    @classmethod
    def load_state(cls, path):
        """An estimator resumed from :meth:`save_state`'s file, ready for ``partial_fit``.

        The file is read as untrusted input: its layout, every array's dtype
        and shape, the values the stream relies on and the parameters are
        checked before anything is used.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        estimator : OnlineIRelief

        Raises
        ------
        ValueError
            The file is damaged, crafted, or not an OnlineIRelief checkpoint of
            this version; the message names the file, the problem and the
            checkpoint to fall back on.
        """
        header, f, est, rng = read_online_state(path, cls, cls._STATE_FORMAT)
        return est._resume(header, f, rng)

    def _resume(self, header, f, rng):
        """This estimator in the checked state ``header, f, rng`` of a checkpoint."""
        self.nu_ = f["nu"]
        self.feature_importances_ = f["w"]
        self.classes_ = f["classes"]
        self._miss_prior = f["miss_prior"]
        self._scale = Scaling(f["offset"], f["span"], f["prescale"]) if header["scaled"] else None
        self._fixed_ref = (
            (f["ref_X"], f["ref_codes"], f["ref_index"]) if header["reference"] else None
        )
        self.n_steps_ = header["n_steps"]
        self.n_features_in_ = header["n_features"]
        self.discrete_features_ = (
            f["discrete"].astype(np.bool_)
            if header["discrete"]
            else np.zeros(header["n_features"], dtype=np.bool_)
        )
        if header["feature_names_in"] is not None:
            self.feature_names_in_ = np.asarray(header["feature_names_in"], dtype=object)
        self._rng = rng
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: every row against the reference rows, per pass."""
        return online_cost(self, n_samples, n_features)


def _plain_array(values):
    """Labels as a numeric or unicode array (``np.load`` without pickle cannot read objects)."""
    values = np.asarray(values)
    return values.astype(str) if values.dtype == object else values
