"""What a valid :class:`~dmargin.OnlineIRelief` state is.

The values the online kernel relies on (finite, in range, the invariants of the weights) and the
parameters, checked on a checkpoint read back (:mod:`dmargin.irelief._checkpoint`) and
before a save."""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_params

_MAX_STEPS = 2**62  # the kernel counts steps in int64
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


class Problem(Exception):
    """One thing wrong with a checkpoint (turned into a ValueError naming the file)."""


def short(exc, limit=300):
    """``str(exc)``, cut at ``limit`` characters."""
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."


def check_online_state(header, arrays, estimator_cls):
    """Check the values of an OnlineIRelief state; ``(estimator, rng)`` from it.

    ``header`` and ``arrays`` have the layout :func:`_array_specs` describes
    (dtypes and shapes already checked).  Raises ``Problem``.
    """
    n_features = header["n_features"]
    nu, w = arrays["nu"], arrays["w"]
    for key in ("nu", "w", "offset", "span", "prescale"):
        if key in arrays and not np.all(np.isfinite(arrays[key])):
            raise Problem(f"array {key!r} has NaN or infinite values")
    # Reference rows may miss values (NaN, OnlineIRelief's missing-value rule): exactly
    # as many as the header counts, so that damaged bytes read as NaN are still caught.
    if "ref_X" in arrays:
        ref_X = arrays["ref_X"]
        if np.any(np.isinf(ref_X)):
            raise Problem("array 'ref_X' has infinite values")
        n_nan = int(np.isnan(ref_X).sum())
        if n_nan != header["reference_missing"]:
            raise Problem(
                f"array 'ref_X' has {n_nan} NaN values where the header counts "
                f"{header['reference_missing']} missing values"
            )
    if "discrete" in arrays and not np.all((arrays["discrete"] == 0) | (arrays["discrete"] == 1)):
        raise Problem("array 'discrete' has values other than 0 and 1")
    _check_weights(nu, w, header["n_steps"])
    if "span" in arrays and not np.all(arrays["span"] > 0):
        raise Problem("array 'span' has values <= 0 (feature ranges are positive)")
    if "prescale" in arrays and not np.all(
        (arrays["prescale"] >= 1) & (np.frexp(arrays["prescale"])[0] == 0.5)
    ):
        raise Problem("array 'prescale' has values that are not powers of two >= 1")
    classes = arrays["classes"]
    if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
        raise Problem("array 'classes' has NaN or infinite labels")
    if not np.all(classes[1:] > classes[:-1]):
        raise Problem(
            "array 'classes' is not sorted and unique (labels are found by binary search)"
        )
    _check_miss_prior(arrays["miss_prior"])
    if "ref_codes" in arrays:
        codes = arrays["ref_codes"]
        if codes.size and (codes.min() < 0 or codes.max() >= classes.shape[0]):
            raise Problem(f"array 'ref_codes' has class codes outside [0, {classes.shape[0]})")
        if np.unique(arrays["ref_index"]).size != codes.size:
            raise Problem("array 'ref_index' has repeated stream positions")
    n_steps = header["n_steps"]
    if not 0 <= n_steps < _MAX_STEPS:
        raise Problem(f"header field 'n_steps' is {n_steps}, not a step count")
    names = header["feature_names_in"]
    if names is not None and (
        len(names) != n_features or not all(isinstance(s, str) for s in names)
    ):
        raise Problem(f"header field 'feature_names_in' is not a list of {n_features} strings")
    estimator = _estimator(header["params"], estimator_cls)
    if header["scaled"] != (estimator.scale is not None):
        raise Problem(
            f"header field 'scaled' is {header['scaled']} but the parameter "
            f"scale is {estimator.scale!r}"
        )
    return estimator, _generator(header["rng"])


def _check_weights(nu, w, n_steps):
    """``w = nu+ / ||nu+||`` after every step that left ``nu+`` nonzero (the kernel's rule)."""
    if np.any(w < 0):
        raise Problem("array 'w' has negative weights")
    uniform = np.full(w.shape, 1.0 / w.shape[0])
    if n_steps == 0:
        if np.any(nu != 0) or not np.array_equal(w, uniform):
            raise Problem("no step was taken (n_steps 0) but 'nu' is not zero or 'w' not uniform")
        return
    pos = np.maximum(nu, 0.0)
    with np.errstate(over="ignore"):
        sq = float(np.sum(pos * pos))
    if 0.0 < sq < math.inf:
        if not np.allclose(w, pos / math.sqrt(sq), rtol=1e-9, atol=1e-12):
            raise Problem("array 'w' is not nu+ / ||nu+|| (the weights every step leaves)")
    elif sq == 0.0 and not (abs(np.linalg.norm(w) - 1.0) <= 1e-6 or np.array_equal(w, uniform)):
        raise Problem("array 'w' is neither unit-norm nor the initial uniform weights")


def _check_miss_prior(prior):
    """``P(c) / (1 - P(y))`` (rows sum to 1, zero diagonal).

    A row of NaN is what the prior holds for a class that was the only one in
    the first chunk (``0 / 0``); every other row then puts all its mass on
    that class.
    """
    if np.any(np.isinf(prior)) or np.any(np.diag(prior) != 0):
        raise Problem("array 'miss_prior' has infinite values or a nonzero diagonal")
    off = ~np.eye(prior.shape[0], dtype=bool)
    nan_rows = [y for y in range(prior.shape[0]) if np.isnan(prior[y][off[y]]).all()]
    for y, row in enumerate(prior):
        if y in nan_rows:
            continue
        if np.any(np.isnan(row)) or np.any(row < 0) or abs(row.sum() - 1.0) > 1e-9:
            raise Problem(
                f"array 'miss_prior' row {y} is not a distribution over the other classes"
            )
        if nan_rows and (len(nan_rows) > 1 or row[nan_rows[0]] != 1.0):
            raise Problem("array 'miss_prior' has a NaN row that no stream produces")


def _estimator(params, estimator_cls):
    expected = set(estimator_cls().get_params())
    if set(params) != expected:
        raise Problem(
            f"header field 'params' has the wrong names: missing "
            f"{sorted(expected - set(params))}, unexpected "
            f"{sorted(map(str, set(params) - expected))[:10]}"
        )
    estimator = estimator_cls(**params)
    try:
        check_params(estimator)
    except ValueError as exc:
        raise Problem(f"its parameters are not valid ({short(exc)})") from exc
    return estimator


def _generator(state):
    """The stream's numpy Generator; the bit generator's own setter checks the state."""
    name = state.get("bit_generator")
    if name not in _BIT_GENERATORS:
        raise Problem(
            f"header field 'rng' names bit generator {short(repr(name), 80)}, not "
            f"one of {', '.join(_BIT_GENERATORS)}"
        )
    bit_generator = getattr(np.random, name)()
    try:
        bit_generator.state = state
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
        raise Problem(
            f"header field 'rng' is not a valid {name} state "
            f"({type(exc).__name__}: {short(exc, 120)})"
        ) from exc
    return np.random.Generator(bit_generator)
