"""Data in: labels to class codes, feature scaling in one pass, rows streamed in blocks.

Works on numpy or dask arrays.  For dask input, the scaling statistics, the
finite-value check and the label summary are one computation -- no extra
eager pass over the data -- and the labels get the same checks as numpy
labels (missing values, a continuous target, a single class).

Scaling never overflows: a feature whose values come near the float limit
(``|x| > 2**480``, about 3e144) is first divided by a power of two, so that
ranges, means and variances stay finite; every other feature is scaled
exactly as ``(x - offset) / span``, bit for bit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .._dask import (
    as_dask_array,
    client_for,
    compute,
    is_dask_collection,
    per_row_block,
    run_with_client,
)
from .._validation import (
    check_classes,
    check_known_labels,
    check_label_values,
    check_one_label_type,
    missing_label_mask,
    missing_labels_error,
    not_finite_error,
)
from ..engine import pool_chunk, pool_plan

#: Features with a value above 2**_SAFE_EXPONENT in magnitude are pre-scaled by
#: a power of two: squares and sums of up to 2**40 rows then stay finite.
_SAFE_EXPONENT = 480
#: Without scaling, squared distances overflow past this magnitude.
_UNSCALED_LIMIT = 1e150


@dataclass(frozen=True)
class Scaling:
    """Per-feature scaling ``(X / prescale - offset) / span``.

    ``prescale`` is a power of two (1 for every feature whose values stay
    below ``2**480`` in magnitude), so it loses no precision; constant
    features get ``span = 1`` and map to 0.
    """

    offset: np.ndarray
    span: np.ndarray
    prescale: np.ndarray

    def apply(self, X):
        """Scale numpy or dask rows of shape (n, n_features)."""
        if not isinstance(X, np.ndarray) and getattr(X, "numblocks", (0, 0))[1:] == (1,):
            # One task and one new array a row block, not a subtraction's and a
            # division's apart (the same operations, so the same bits).
            dtype = np.result_type(X.dtype, self.offset.dtype)
            return X.map_blocks(
                _scaled_block,
                self.offset,
                self.span,
                self.prescale,
                dtype=dtype,
                meta=np.empty((0, 0), dtype=dtype),
                token="dmargin-scale",
            )
        if np.any(self.prescale != 1.0):
            X = X / self.prescale
        scaled = X - self.offset
        if isinstance(scaled, np.ndarray):  # one new array, not two (each faulted in)
            return np.divide(scaled, self.span, out=scaled)
        return scaled / self.span


def _scaled_block(X, offset, span, prescale):
    """:meth:`Scaling.apply` of one numpy block of rows."""
    return Scaling(offset, span, prescale).apply(X)


@dataclass
class TrainingData:
    """Scaled rows, integer class codes and what was learned on the way."""

    X: object  # float64 (uint8 for compact rows), numpy or dask
    codes: object  # int64 in 0..K-1, numpy or dask
    classes: np.ndarray
    counts: np.ndarray
    scaling: Scaling | None
    #: Missing values (NaN) per feature: only estimators that take them get any.
    missing: np.ndarray | None = None
    #: Dask rows: class counts per row block (n_blocks x K), from the scaling
    #: pass, so that drawing a stratified sample needs no pass of its own.
    block_counts: np.ndarray | None = None
    #: A continuous target (float64, numpy; the rows are then one class), or None.
    target: np.ndarray | None = None
    #: Dask rows: ``(plan, pools)``, the anchor pool of every block drawn in the
    #: scaling pass (:func:`dmargin.engine.sampling.pool_chunk`), when asked for.
    pool: tuple | None = None


def _prescale(lo, hi):
    """Powers of two that bring each feature's largest magnitude under 2**_SAFE_EXPONENT."""
    top = np.maximum(np.abs(lo), np.abs(hi))
    _, exponent = np.frexp(top)
    return np.ldexp(1.0, np.maximum(exponent - _SAFE_EXPONENT, 0))


def _make_scaling(scale, stats, prescale):
    """:class:`Scaling` from the statistics of ``X / prescale``."""
    if scale == "minmax":
        offset, span = stats["min"] / prescale, stats["max"] / prescale - stats["min"] / prescale
    else:  # "standard"
        offset, span = stats["mean"], np.sqrt(stats["var"])
    span = np.where(span > 0, span, 1.0)  # a constant feature maps to 0
    return Scaling(np.asarray(offset, dtype=np.float64), span, prescale)


def _check_unscaled(lo, hi):
    top = max(float(np.max(np.abs(lo), initial=0.0)), float(np.max(np.abs(hi), initial=0.0)))
    if top > _UNSCALED_LIMIT:
        j = int(np.argmax(np.maximum(np.abs(lo), np.abs(hi))))
        raise ValueError(
            f"Feature {j} has values of magnitude {top:.3g}; without scaling, squared "
            "distances overflow past 1e150. Use the estimator's scaling (scale='minmax' or "
            "'standard') or rescale the feature before fitting."
        )


def numpy_scaling(X, scale, *, distances=True, missing=False):
    """:class:`Scaling` of an in-memory ``X`` (``None`` for ``scale=None``).

    ``distances`` (the estimator computes distances between rows): without
    scaling, values whose squares overflow are refused.  ``missing``: ``X``
    has NaN (missing values), left out of the statistics.
    """
    if missing:
        X = np.where(np.isnan(X), np.nanmean(X, axis=0), X)  # NaN-free, same min and max
    lo, hi = X.min(axis=0), X.max(axis=0)
    if scale is None:
        if distances:
            _check_unscaled(lo, hi)
        return None
    prescale = _prescale(lo, hi)
    stats = {"min": lo, "max": hi}
    if scale == "standard":
        Xp = X / prescale if np.any(prescale != 1.0) else X
        stats.update(mean=Xp.mean(axis=0), var=Xp.var(axis=0))
    return _make_scaling(scale, stats, prescale)


def encode_labels(y, classes):
    """Class codes of labels ``y`` among the sorted ``classes``."""
    return np.searchsorted(classes, y).astype(np.int64)


def prepare_training_data(
    X,
    y,
    scale,
    *,
    distances=True,
    names=None,
    classes=None,
    scaling=None,
    allow_nan=False,
    compact=False,
    keep_float32=False,
    continuous=False,
    anchor_pool=None,
) -> TrainingData:
    """Encode labels, check values, scale features (``None``, "minmax", "standard").

    ``distances=False`` for estimators that never compute distances between
    rows (decision stumps), which take any finite values unscaled.  ``names``
    (the feature names, if any) go into the error for non-finite values.
    ``classes``: the classes the labels must be among (a stream's, fixed by
    its first chunk), instead of those of ``y``; ``scaling``: a fixed
    :class:`Scaling` (a stream's frozen ranges) instead of one learned from X.
    ``allow_nan``: NaN are missing values (counted per feature in
    ``missing``, left out of the scaling statistics, kept NaN when scaled).
    ``compact``: integer ``X`` whose values all lie in ``[0, 255]`` stays
    bytes, unscaled (``uint8``; dask blocks converted one by one where they
    live); any other ``X`` (or a continuous target) takes the float path,
    from the same pass.  ``keep_float32``: ``float32`` ``X`` gives ``float32``
    rows, scaled in float64 and rounded once (numpy in blocks of rows, dask
    per block), for class labels (a continuous target's rows are float64).  ``continuous``: ``y`` is a continuous target (``True``:
    numpy, already checked), may be one (``None``: a dask ``y`` of floats,
    decided from its values in the same pass), or holds class labels
    (``False``).  A continuous target puts every row in one class and comes
    back as ``target``.  ``anchor_pool``: ``(m, seed)`` of a fit that will sample
    ``m`` anchors from streamed dask rows: the same pass draws each block's pool
    (``pool``), so that the sample needs no pass of its own.
    """
    if classes is not None:
        classes = np.unique(np.asarray(classes))
        check_classes(classes, None)
    if is_dask_collection(X) or is_dask_collection(y):
        return _prepare_dask(
            X,
            y,
            scale,
            distances,
            names,
            classes,
            scaling,
            allow_nan,
            compact,
            keep_float32,
            continuous,
            anchor_pool,
        )
    target = np.asarray(y, dtype=np.float64) if continuous else None
    as_bytes = _as_compact(np.asarray(X)) if compact and target is None else None
    compact = as_bytes is not None
    if compact:
        X = as_bytes
        missing = np.zeros(X.shape[1], dtype=np.int64)
    else:
        single = keep_float32 and np.asarray(X).dtype == np.float32
        X = np.asarray(X, dtype=np.float32 if single else np.float64)
        missing = np.isnan(X).sum(axis=0) if allow_nan else None
    # A column with no value has no range to learn (a later chunk of a stream may).
    if missing is not None and scaling is None and X.shape[0] and np.any(missing == X.shape[0]):
        j = int(np.argmax(missing == X.shape[0]))
        label = repr(names[j]) if names is not None else str(j)
        raise ValueError(
            f"Feature {label} has no value (every row is missing it); drop "
            "that column before fitting."
        )
    if target is not None:  # every row in one class: hits and misses come from the target
        classes, codes = np.zeros(1, dtype=np.int64), np.zeros(X.shape[0], dtype=np.int64)
        counts = np.array([X.shape[0]], dtype=np.int64)
    elif classes is None:
        classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
        check_classes(classes, counts)
        codes = codes.astype(np.int64)
    else:
        check_known_labels(np.unique(y), classes)
        codes = encode_labels(y, classes)
        counts = np.bincount(codes, minlength=len(classes))
    if compact:  # bytes of discrete values: a mismatch needs no scaling
        return TrainingData(X, codes, classes, counts, None, missing)
    if scaling is None:
        scaling = numpy_scaling(
            X, scale, distances=distances, missing=missing is not None and bool(missing.any())
        )
    if scaling is not None:
        X = _scaled_float32(X, scaling) if X.dtype == np.float32 else scaling.apply(X)
    return TrainingData(X, codes, classes, counts, scaling, missing, target=target)


def _scaled_float32(X, scaling, block=65536):
    """``scaling.apply(X)`` of float32 rows, computed in float64 a block of rows
    at a time and rounded to float32 (no float64 copy of ``X``)."""
    out = np.empty(X.shape, dtype=np.float32)
    for start in range(0, X.shape[0], block):
        out[start : start + block] = scaling.apply(X[start : start + block].astype(np.float64))
    return out


#: The largest value the compact rows hold (a byte).
COMPACT_MAX = 255


def _as_compact(X):
    """Integer or boolean ``X`` with every value in ``[0, 255]`` as ``uint8`` (no copy
    when it already is), else ``None``."""
    if X.dtype.kind not in "biu" or X.ndim != 2:
        return None
    if X.dtype == np.uint8 or X.dtype == np.bool_:
        return X.view(np.uint8) if X.dtype == np.bool_ else X
    if X.size and (X.min() < 0 or X.max() > COMPACT_MAX):
        return None
    return X.astype(np.uint8)


# ---------------------------------------------------------------------------
# Streaming: row blocks to the driver, one dask block at a time
# ---------------------------------------------------------------------------


def iter_row_blocks(X, codes, bounds):
    """Yield ``(start, X[start:stop], codes[start:stop])`` as numpy for each bound.

    A dask ``X`` is computed one dask block at a time -- each block once per
    pass, however many ``bounds`` it spans -- and the next block is computed
    in a background thread while the caller streams the current one (the
    online kernel releases the GIL).  Only the blocks that overlap the
    current bound are held.
    """
    if not is_dask_collection(X):
        for start, stop in bounds:
            yield (
                start,
                np.ascontiguousarray(X[start:stop], dtype=np.float64),
                np.asarray(codes[start:stop], dtype=np.int64),
            )
        return
    from concurrent.futures import ThreadPoolExecutor

    if codes.chunks[0] != X.chunks[0]:
        codes = codes.rechunk((X.chunks[0],))
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])])
    n_blocks = len(X.chunks[0])

    # The read-ahead thread computes on the caller's client (``as_current`` is per thread).
    @functools.partial(run_with_client, client=client_for([X]))
    def load(i):
        xb, yb = compute(X.blocks[i], codes.blocks[i], what="a streamed block")
        return (
            int(edges[i]),
            int(edges[i + 1]),
            np.asarray(xb, dtype=np.float64),
            np.asarray(yb, dtype=np.int64),
        )

    with ThreadPoolExecutor(max_workers=1) as pool:
        nxt, future, held = 0, None, []
        if n_blocks:
            future, nxt = pool.submit(load, 0), 1
        for start, stop in bounds:
            while not held or held[-1][1] < stop:
                held.append(future.result())
                future = pool.submit(load, nxt) if nxt < n_blocks else None
                nxt += 1
            held = [h for h in held if h[1] > start]
            parts = [
                (h[2][max(start - h[0], 0) : stop - h[0]], h[3][max(start - h[0], 0) : stop - h[0]])
                for h in held
                if h[0] < stop
            ]
            if len(parts) == 1:
                Xa, ya = parts[0]
            else:
                Xa = np.concatenate([p[0] for p in parts])
                ya = np.concatenate([p[1] for p in parts])
            yield start, np.ascontiguousarray(Xa), np.ascontiguousarray(ya)


# ---------------------------------------------------------------------------
# Dask: one pass for finiteness, ranges, moments and the label summary
# ---------------------------------------------------------------------------


def _label_summary_chunk(y, continuous=False):
    """``{"values", "counts", "missing"}`` of one block of labels.

    ``missing`` counts NaN/None/pd.NA labels; the distinct values go to the
    driver, which runs the same target-type check on them as on numpy labels.
    ``continuous``: a block of finite floats of which one is not an integer
    is a piece of a continuous target (``type_of_target``'s rule): its values
    come back whole, in order, as ``"target"`` (the target is needed on the
    driver), and no distinct values.
    """
    y = np.asarray(y)
    if continuous and y.dtype.kind == "f" and y.size:
        with np.errstate(invalid="ignore"):
            if np.isfinite(y).all() and np.any(y != np.floor(y)):
                return {
                    "values": y[:0],
                    "counts": np.zeros(0, dtype=np.int64),
                    "missing": 0,
                    "target": y.astype(np.float64),
                }
    missing = missing_label_mask(y)
    kept = y[~missing]
    check_one_label_type(kept)
    values, counts = np.unique(kept, return_counts=True)
    return {"values": values, "counts": counts, "missing": int(missing.sum())}


def _label_summary_combine(parts):
    """Merge block summaries (associative: a tree of them gives the same result)."""
    parts = list(parts)
    values = np.concatenate([p["values"] for p in parts])
    counts = np.concatenate([p["counts"] for p in parts])
    check_one_label_type(values)
    merged, inverse = np.unique(values, return_inverse=True)
    return {
        "values": merged,
        "counts": np.bincount(inverse.ravel(), weights=counts, minlength=len(merged)).astype(
            np.int64
        ),
        "missing": sum(p["missing"] for p in parts),
    }


def _statistics_chunk(X, labels, start, allow_nan, continuous, pool_args):
    """One row block's part of the scaling pass, from one read of its rows.

    ``{"bad", "missing", "lo", "hi", "labels", "pool"}``: per column, the count
    of values that are not finite (``allow_nan``: infinite) and of NaN
    (``allow_nan`` only, else ``None``), the minimum and maximum (``allow_nan``:
    of the values that are not NaN; +-inf where none is); the block's
    :func:`_label_summary_chunk`; and with ``pool_args`` (seed, threshold,
    budget) its anchor pool (:func:`~dmargin.engine.pool_chunk`).

    The counts of values that are not finite take a pass only when the block
    has one: a NaN or an infinity shows in the minimum or the maximum.
    """
    X = np.asarray(X, dtype=np.float64)
    if allow_nan:
        missing = np.isnan(X).sum(axis=0)
        lo = np.fmin.reduce(X, axis=0, initial=np.inf)  # fmin: NaN left out
        hi = np.fmax.reduce(X, axis=0, initial=-np.inf)
        unsure = (lo == -np.inf) | (hi == np.inf)
    else:
        missing = None
        lo = X.min(axis=0, initial=np.inf)
        hi = X.max(axis=0, initial=-np.inf)
        unsure = ~(np.isfinite(lo) & np.isfinite(hi))
    bad = np.zeros(X.shape[1], dtype=np.int64)
    if unsure.any():
        wrong = np.isinf(X[:, unsure]) if allow_nan else ~np.isfinite(X[:, unsure])
        bad[unsure] = wrong.sum(axis=0)
    return {
        "bad": bad,
        "missing": missing,
        "lo": lo,
        "hi": hi,
        "labels": _label_summary_chunk(labels, continuous),
        "pool": None if pool_args is None else pool_chunk(X, labels, start, *pool_args),
    }


def _combine_statistics(parts, n, allow_nan):
    """``(bad, missing, lo, hi)`` over the blocks' :func:`_statistics_chunk`;
    a column with no value (all NaN) has NaN for its minimum and maximum."""
    bad = np.sum([p["bad"] for p in parts], axis=0)
    lo = np.fmin.reduce([p["lo"] for p in parts], axis=0)
    hi = np.fmax.reduce([p["hi"] for p in parts], axis=0)
    if not allow_nan:
        return bad, None, lo, hi
    missing = np.sum([p["missing"] for p in parts], axis=0)
    empty = missing == n
    lo[empty], hi[empty] = np.nan, np.nan
    return bad, missing, lo, hi


def _continuous_target(y, summaries):
    """The whole target from the blocks' summaries, or ``None`` (class labels).

    A block whose values are all integers (rare in a continuous target) sent
    only its distinct values: those blocks alone are read again.
    """
    if not any("target" in part for part in summaries):
        return None
    if sum(part["missing"] for part in summaries):
        return None  # the label checks name the missing values
    wanted = [b for b, part in enumerate(summaries) if "target" not in part]
    more = (
        dict(
            zip(
                wanted,
                compute(*[y.blocks[b] for b in wanted], what="the target's integer-valued blocks"),
            )
        )
        if wanted
        else {}
    )
    return np.concatenate(
        [
            summaries[b]["target"] if b not in more else np.asarray(more[b], dtype=np.float64)
            for b in range(len(summaries))
        ]
    )


def _prepare_dask(
    X,
    y,
    scale,
    distances,
    names,
    classes,
    scaling,
    allow_nan=False,
    compact=False,
    keep_float32=False,
    continuous=False,
    anchor_pool=None,
) -> TrainingData:
    source = as_dask_array(X)
    out_dtype = np.float32 if keep_float32 and source.dtype == np.float32 else np.float64
    compact = compact and source.dtype.kind in "biu"
    X = source.astype(np.float64)  # lazily, per block: the statistics' pass only
    # A continuous target decided by the door is in memory (numpy); None: decided here.
    target = np.asarray(y, dtype=np.float64) if continuous is True else None
    y = as_dask_array(y)
    if X.chunks[0] != y.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    # min/max also for "standard": they size the pre-scaling of huge features.
    moments = scale == "standard" and scaling is None
    plan = None
    if anchor_pool is not None and not compact:
        plan = _pool_plan(X, anchor_pool[0])
    pool_args = None if plan is None else (anchor_pool[1], *plan)
    # One task a row block for everything but the moments: its rows are read once.
    parts, mean, var = compute(
        per_row_block(_statistics_chunk, X, y, allow_nan, continuous is None, pool_args),
        _moment(X, "mean", allow_nan) if moments else None,
        _moment(X, "var", allow_nan) if moments else None,
        what="the scaling statistics",
    )
    bad, missing, lo, hi = _combine_statistics(parts, X.shape[0], allow_nan)
    summaries = [part["labels"] for part in parts]
    pools = None if plan is None else [part["pool"] for part in parts]
    if continuous is None:
        target = _continuous_target(y, summaries)
    labels = _label_summary_combine(summaries)
    if np.any(bad):
        raise not_finite_error(bad, names, allow_nan)
    pool = None if pools is None else (plan, list(pools))
    if missing is not None and scaling is None and np.any(missing == X.shape[0]):
        j = int(np.argmax(missing == X.shape[0]))
        label = repr(names[j]) if names is not None else str(j)
        raise ValueError(
            f"Feature {label} has no value (every row is missing it); drop "
            "that column before fitting."
        )
    if target is not None:  # every row in one class: hits and misses come from the target
        classes = np.zeros(1, dtype=np.int64)
        counts = np.array([X.shape[0]], dtype=np.int64)
        block_counts = np.asarray(X.chunks[0], dtype=np.int64)[:, None]
        codes = y.map_blocks(_zero_codes, dtype=np.int64)
        data = _dask_rows(
            source,
            X,
            codes,
            classes,
            counts,
            block_counts,
            scale,
            scaling,
            distances,
            missing,
            lo,
            hi,
            mean,
            var,
            np.float64,
            False,
            target,
        )
        data.pool = pool
        return data
    if labels["missing"]:
        raise missing_labels_error(labels["missing"])
    check_label_values(labels["values"])
    if classes is None:
        classes, counts = labels["values"], labels["counts"]
        check_classes(classes, counts)
    else:
        check_known_labels(labels["values"], classes)
        counts = np.zeros(len(classes), dtype=np.int64)
        counts[encode_labels(labels["values"], classes)] = labels["counts"]
    block_counts = np.zeros((len(summaries), len(classes)), dtype=np.int64)
    for b, part in enumerate(summaries):
        if len(part["values"]):
            block_counts[b, encode_labels(part["values"], classes)] = part["counts"]
    codes = y.map_blocks(encode_labels, classes=classes, dtype=np.int64)
    data = _dask_rows(
        source,
        X,
        codes,
        classes,
        counts,
        block_counts,
        scale,
        scaling,
        distances,
        missing,
        lo,
        hi,
        mean,
        var,
        out_dtype,
        compact,
    )
    data.pool = pool
    return data


def _pool_plan(X, m):
    """The anchor pool's plan (:func:`~dmargin.engine.pool_plan`), or ``None``
    when the row counts are unknown or a pool would be most rows."""
    if any(math.isnan(c) for c in X.chunks[0]):
        return None
    return pool_plan(m, X.shape[0], X.numblocks[0], X.shape[1])


def _moment(X, which, allow_nan):
    # numpy's nan-reductions dispatch to dask's on a dask array, lazily.
    if allow_nan:
        return np.nanmean(X, axis=0) if which == "mean" else np.nanvar(X, axis=0)
    return X.mean(axis=0) if which == "mean" else X.var(axis=0)


def _zero_codes(block):
    return np.zeros(len(block), dtype=np.int64)


def _dask_rows(
    source,
    X,
    codes,
    classes,
    counts,
    block_counts,
    scale,
    scaling,
    distances,
    missing,
    lo,
    hi,
    mean,
    var,
    out_dtype,
    compact,
    target=None,
) -> TrainingData:
    """The dask rows from the statistics of their one pass: bytes (``compact``
    and every value within ``[0, 255]``), or scaled floats."""
    if compact and not np.any(lo < 0) and not np.any(hi > COMPACT_MAX):
        return TrainingData(
            source.astype(np.uint8),
            codes,
            classes,
            counts,
            None,
            np.zeros(X.shape[1], dtype=np.int64),
            block_counts,
        )
    if scaling is not None:
        return TrainingData(
            scaling.apply(X).astype(out_dtype),
            codes,
            classes,
            counts,
            scaling,
            missing,
            block_counts,
            target,
        )
    if scale is None:
        if distances:
            _check_unscaled(lo, hi)
        return TrainingData(
            X.astype(out_dtype), codes, classes, counts, None, missing, block_counts, target
        )
    prescale = _prescale(lo, hi)
    if scale == "standard" and np.any(prescale != 1.0):
        # Moments of near-limit features overflowed: one more pass on X / prescale.
        mean, var = compute(
            (X / prescale).mean(axis=0), (X / prescale).var(axis=0), what="the scaling statistics"
        )
    scaling = _make_scaling(scale, {"min": lo, "max": hi, "mean": mean, "var": var}, prescale)
    return TrainingData(
        scaling.apply(X).astype(out_dtype),
        codes,
        classes,
        counts,
        scaling,
        missing,
        block_counts,
        target,
    )
