"""The door of every ``fit`` and ``partial_fit``: parameters, data, target,
scaling and the engine's rows, once.

Every fit path goes through :func:`start_fit`, so bad input gets the same
message whichever estimator or method it is given to.  What an estimator
takes is declared on its class, not passed by its ``fit``: one
:class:`~dmargin._capabilities.Capabilities` (``allow_nan``, ``targets``,
``target_rule``, ``binary``, ``distances``, ``engine_rows``, ``keep_float32``,
``compact_rows``, ``one_pass``; :mod:`dmargin._capabilities` says what each
means and its default), read here through
:func:`~dmargin._capabilities.capabilities`.

A fit that takes feature weights in its distance (``fit(X, y,
feature_weights=w)``, the Relief family) hands them to the door too: it
checks them against ``X`` and returns them as float64 (:class:`FitStart`);
weighted rows never take the compact path (its distance counts mismatches).

The input's kind is settled here: what leaves the door is numpy or dask
arrays of rows, class codes and (for a continuous target) the target's values,
in :class:`FitStart`.
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple

import numpy as np

from ._capabilities import capabilities
from ._cost import anchor_count, fit_started
from ._dask import compute, is_dask_collection, persist_with_known_rows
from ._utils import make_rng, warn
from ._validation import (
    check_binary,
    check_params,
    check_X_y,
    integer_input,
    is_continuous,
    target_values,
)
from .engine import (
    MASKED,
    Anchors,
    Draw,
    FeatureKinds,
    Rows,
    compact_distinct,
    draw_seed,
    feature_kinds,
    prepare_rows,
    resolve_pool,
    rows_per_block,
    split_chunks,
)
from .io._training import Scaling, TrainingData, encode_labels, prepare_training_data


class Stream(NamedTuple):
    """A chunk of a stream (``partial_fit``): computed at the door and checked
    as numpy.  The first chunk (``first``) records the features and learns the
    classes (``classes``: every label the stream will hold, or ``None``) and
    the scaling; a later one is checked against them (and may be one row)."""

    first: bool
    classes: np.ndarray | None = None
    scaling: Scaling | None = None


class FitStart(NamedTuple):
    """What the door hands a fit."""

    #: Scaled rows, class codes, classes, counts, scaling, missing values per feature.
    data: TrainingData
    #: The engine's rows (``None`` unless the estimator's capabilities say ``engine_rows``).
    rows: Rows | None
    #: A continuous target (float64, numpy) or ``None`` for class labels.
    target: np.ndarray | None
    #: Feature kinds, when the door had to learn them (compact rows), else ``None``.
    kinds: FeatureKinds | None
    #: The checked feature weights of the distance (float64, one per feature) or ``None``.
    feature_weights: np.ndarray | None = None


def start_fit(estimator, X, y, *, stream: Stream | None = None, feature_weights=None) -> FitStart:
    """Check the parameters, the data and the target; scale; lay out the rows.

    Parameters
    ----------
    estimator : dmargin estimator
        Checked against its ``_parameter_constraints``; its ``scale``
        parameter, if it has one, picks the scaling; its declarations
        (module docstring) say what it takes.
    X, y : the data as given to the fit
    stream : Stream or None, default=None
        A chunk of a stream (``partial_fit``) instead of a whole fit.
    feature_weights : array-like of shape (n_features,) or None, default=None
        The fit's feature weights in the distance, as given by the user.

    Returns
    -------
    FitStart
    """
    check_params(estimator)
    # The cost before work (a warning for a long fit) from the shape alone, or, when the
    # input does not say it (a list, unknown dask rows), from the rows the door made.
    shape = _known_shape(X) if stream is None else None
    if shape is not None:
        fit_started(estimator, *shape)
    compact = capabilities(estimator).compact(estimator) and feature_weights is None
    start = _start(estimator, X, y, stream, compact=compact)
    if stream is None and shape is None and _known_shape(start.data.X) is not None:
        fit_started(estimator, *_known_shape(start.data.X))
    if stream is None:
        _warn_single_row_classes(estimator, start.data)
    if stream is None or stream.first:
        _warn_n_features_to_select(estimator, start.data.X.shape[1])
    if feature_weights is not None:
        start = start._replace(
            feature_weights=_checked_feature_weights(
                estimator, feature_weights, start.data.X.shape[1]
            )
        )
    return start


def _known_shape(X):
    """``(rows, features)`` when ``X`` states both as integers without computing, else
    ``None``."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return None
    if all(isinstance(s, numbers.Integral) for s in shape):
        return int(shape[0]), int(shape[1])
    return None


def _checked_feature_weights(estimator, weights, n_features):
    """``weights`` as float64, one finite non-negative value per feature, not all 0,
    divided by the largest: only their ratios count (a distance's scale does not move
    the nearest neighbours, and ``1e-200 * w`` or ``1e300 * w`` neither underflows nor
    overflows in the distances and thresholds)."""
    name = type(estimator).__name__
    if is_dask_collection(weights):
        weights = compute(weights, what="the feature weights")[0]
    try:
        raw = np.asarray(weights)
        if raw.dtype.kind in "USa" or (
            raw.dtype == object and any(isinstance(v, (str, bytes)) for v in raw.ravel())
        ):
            raise ValueError(
                "text is refused even when it parses as numbers, as in X: "
                "convert the weights to floats"
            )
        w = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name}.fit: feature_weights must be numbers, one per feature; "
            f"got {type(weights).__name__} ({exc})."
        ) from None
    if w.ndim != 1 or w.size != n_features:
        raise ValueError(
            f"{name}.fit: feature_weights has shape {w.shape}; X has "
            f"{n_features} features: give one weight per feature, in the "
            "columns' order."
        )
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        first = int(bad[0])
        raise ValueError(
            f"{name}.fit: feature_weights[{first}] is {float(w[first])!r}; "
            "the weights must be finite and non-negative."
        )
    if not w.any():
        raise ValueError(
            f"{name}.fit: feature_weights are all 0, so every distance would "
            "be 0; give at least one feature a positive weight."
        )
    return w / w.max()


def _warn_single_row_classes(estimator, data):
    """A ``UserWarning`` when every class of the labels has one row (an id column
    passed as ``y``): no row has a hit, so a margin compares misses with nothing and
    the scores measure no class structure."""
    counts = np.asarray(data.counts)
    if data.target is None and counts.size >= 2 and counts.max() == 1:
        warn(
            f"{type(estimator).__name__}: every class has a single row (y has {counts.size} "
            "distinct labels for as many rows), so no row has a hit and the scores measure "
            "nothing; y looks like an id column. Pass the class labels as y, or a numeric "
            "target as floats.",
            UserWarning,
        )


def _start(estimator, X, y, stream, compact):
    reset = stream is None or stream.first
    if stream is not None:  # the driver processes a chunk whole
        X, y = compute(X, y, what=f"the rows given to {type(estimator).__name__}")
    given = X, y
    declared = capabilities(estimator)
    allow_nan = declared.allow_nan
    float32 = declared.keep_float32
    # The target's kind: a continuous target is decided here for a target in
    # memory, and in the data's one pass for a dask one (whose values travel to
    # the driver only if it is continuous).
    targets, rule = declared.targets, declared.target_rule
    continuous = False
    labels_typed = False  # type_of_target has said "not continuous"
    if rule is not None and stream is None:
        continuous = bool(rule(estimator, y))
        if continuous:  # a continuous target's values come to the driver, as below
            y = target_values(
                estimator, compute(y, what="the target")[0] if is_dask_collection(y) else y
            )
    elif "classes" not in targets:  # any numeric y is a target (computed: N floats)
        continuous = True
        y = target_values(
            estimator, compute(y, what="the target")[0] if is_dask_collection(y) else y
        )
    elif "continuous" in targets and stream is None:
        continuous = None if is_dask_collection(y) else is_continuous(y)
        labels_typed = continuous is False
        if continuous:
            y = target_values(estimator, y)
    float32 = float32 and continuous is not True  # a continuous target's rows: float64
    compact = (
        compact and continuous is not True and estimator.discrete_threshold > 0 and integer_input(X)
    )
    X, y = check_X_y(
        estimator,
        X,
        y,
        reset=reset,
        min_samples=2 if reset else 1,
        allow_nan=allow_nan,
        keep_integers=compact,
        keep_float32=float32,
        continuous=bool(continuous),
        labels_typed=labels_typed,
    )
    request = _anchor_request(estimator, X, declared) if stream is None and not compact else None
    data = prepare_training_data(
        X,
        y,
        getattr(estimator, "scale", None),
        distances=declared.distances,
        names=getattr(estimator, "feature_names_in_", None),
        classes=None if stream is None else stream.classes,
        scaling=None if stream is None else stream.scaling,
        allow_nan=allow_nan,
        compact=compact,
        keep_float32=float32,
        continuous=continuous,
        anchor_pool=request,
    )
    if continuous is None and data.target is not None:  # found continuous in the pass
        data.target = target_values(estimator, data.target)
    why = declared.binary
    if why is not None:
        check_binary(estimator, data.classes, why)
    if data.X.dtype == np.uint8:
        rows, kinds = _compact_rows(data, estimator.discrete_threshold)
        if rows is not None:
            return FitStart(data, rows, None, kinds)
        # Bytes, but not every feature discrete: the float rows (one more pass on dask).
        return _start(estimator, *given, stream, compact=False)
    if not declared.engine_rows:
        return FitStart(data, None, data.target, None)
    once = declared.streams(estimator, data.target is not None)
    stream_rows = (
        once and anchor_count(getattr(estimator, "n_anchors", None), data.X.shape[0]) is not None
    )
    rows = prepare_rows(
        data.X,
        data.codes,
        len(data.classes),
        persist=not stream_rows,
        block_counts=data.block_counts,
        dtype=np.float32 if data.X.dtype == np.float32 else np.float64,
        draw=None if request is None else _drawn(data, *request, pooled=stream_rows),
    )
    return FitStart(data, rows, data.target, None)


def _anchor_request(estimator, X, declared):
    """``(m, seed)`` when a fit on dask rows would stream them past a sample of
    ``m`` anchors: the seed is drawn here, once, and the scaling pass draws each
    block's pool too (the sample then needs no pass of its own), else ``None``."""
    shape = _known_shape(X)
    if not is_dask_collection(X) or shape is None or not declared.engine_rows:
        return None
    if not (declared.streams(estimator, False) or declared.streams(estimator, True)):
        return None
    m = anchor_count(getattr(estimator, "n_anchors", None), shape[0])
    return None if m is None else (m, draw_seed(make_rng(estimator.random_state)))


def _drawn(data, m, seed, pooled):
    """The fit's :class:`~dmargin.engine.Draw`: its anchors read off the blocks'
    pools (scaled as the rows are, bit for bit) when the rows stream and the pools
    hold the sample, else its seed alone."""
    if not pooled or data.pool is None:
        return Draw(m, seed)
    plan, pools = data.pool
    if data.target is not None:  # one class: the target's values are no labels
        codes_of = lambda labels: np.zeros(len(labels), dtype=np.int64)  # noqa: E731
    else:
        codes_of = functools.partial(encode_labels, classes=data.classes)
    found = resolve_pool(pools, codes_of, data.counts, m, *plan)
    if found is None:
        return Draw(m, seed)
    raw, codes, index = found
    X = raw if data.scaling is None else data.scaling.apply(raw)
    return Draw(
        m, seed, Anchors(np.asarray(X, dtype=data.X.dtype).astype(np.float64), codes, index)
    )


def _warn_n_features_to_select(estimator, n_features):
    """At fit time, once: a ``UserWarning`` when an integer ``n_features_to_select``
    exceeds the number of features (selection then keeps all of them).

    Called by the door rather than by ``_get_support_mask``, which runs on
    every ``transform`` and would repeat it.
    """
    k = getattr(estimator, "n_features_to_select", None)
    if (
        isinstance(k, numbers.Integral)
        and isinstance(n_features, numbers.Integral)
        and k > n_features
    ):
        warn(
            f"n_features_to_select={k} exceeds the {n_features} features; all "
            f"{n_features} are kept.",
            UserWarning,
        )


# ---------------------------------------------------------------------------
# Compact rows: genotype-like bytes
# ---------------------------------------------------------------------------


def _compact_rows(data, discrete_threshold):
    """``(rows, kinds)`` of ``uint8`` rows whose every feature is discrete (at
    most ``discrete_threshold`` distinct values), or ``(None, None)``.

    Numpy rows stay the user's bytes (converted once when wider); dask
    blocks are converted one by one where they live, and persisted as bytes.
    """
    n, a = data.X.shape
    k = len(data.classes)
    if is_dask_collection(data.X):
        rows = _dask_compact_rows(data, k)
        kinds = feature_kinds(rows, discrete_threshold)
        return (rows, kinds) if kinds.discrete.all() else (None, None)
    # Values 0..v take at most v + 1 distinct values: genotypes need no count.
    top = int(data.X.max()) if data.X.size else 0
    if top + 1 > discrete_threshold and np.any(
        compact_distinct(data.X, discrete_threshold) > discrete_threshold
    ):
        return None, None
    rows = Rows(np.ascontiguousarray(data.X), data.codes, k, False, [(0, n)])
    kinds = FeatureKinds(
        np.ones(a, dtype=np.bool_), 1.0, np.full(a, np.inf), np.zeros(a, dtype=np.int64), MASKED
    )
    return rows, kinds


def _dask_compact_rows(data, n_classes):
    """Persisted ``uint8`` row blocks (at most the tile budget's anchor rows each)."""
    X, a = data.X, data.X.shape[1]
    cap = rows_per_block(a, n_classes)
    source = X.chunks[0]
    X = X.rechunk((source if max(source) <= cap else split_chunks(source, cap), a))
    X, codes = persist_with_known_rows(X, data.codes.rechunk((X.chunks[0],)))
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).tolist()
    counts = data.block_counts if X.chunks[0] == source else None
    return Rows(X, codes, n_classes, True, list(zip(edges[:-1], edges[1:])), block_counts=counts)
