"""What each feature is: distinct values, spread and missing values, in one pass,
and how the Relief family's distance treats it (:class:`FeatureKinds`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import grid, merge
from .execution import Rows
from .kernels import distance


def compact_distinct(X, cap: int, block: int = 4096):
    """Per feature of ``uint8`` rows: the number of distinct values, ``cap + 1``
    for more than ``cap`` (:func:`column_summary`'s count without a float copy:
    columns sorted ``block`` at a time)."""
    n, a = X.shape
    out = np.zeros(a, dtype=np.int64)
    for f0 in range(0, a, block):
        chunk = np.sort(X[:, f0 : f0 + block], axis=0)
        out[f0 : f0 + block] = 1 + (chunk[1:] != chunk[:-1]).sum(axis=0) if n else 0
    return np.minimum(out, cap + 1)


def column_summary(rows: Rows, cap: int):
    """Per feature: the number of distinct values (``cap + 1`` for more than
    ``cap``), the standard deviation (ddof 0) and the number of missing
    values, in one pass over the row blocks; NaN is no value (skrebate's
    ``_get_attribute_info``)."""
    g = grid.graph(rows, "column-summary")
    keys = grid.per_block(g, merge.column_summary_chunk, cap, tile=False)
    uniques, n, mean, m2, _ = grid.run(g, g.tree(keys, merge.column_summary_combine))
    distinct = np.array([cap + 1 if u is None else u.size for u in uniques], dtype=np.int64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), distinct.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(np.asarray(m2) / n)
    return distinct, std, (rows.n_samples - n).astype(np.int64)


@dataclass(frozen=True)
class FeatureKinds:
    """How the Relief family's distance treats each feature (:mod:`.kernels.distance`).

    ``discrete`` (bool per feature): a difference of 0 or 1; ``weight``: a
    discrete mismatch's weight in the distance (skrebate's mixed data without
    missing values: ``A / A_discrete``, else 1); ``ramp`` (per feature,
    ``inf`` for none): a scored continuous difference above it counts 1
    (skrebate's mixed data; the distances never ramp); ``missing``: missing
    values per feature; ``kind``: ``PLAIN``, ``MASKED`` or ``MISSING``;
    ``scale``: the user's feature weights in the distance (``None``: all 1;
    see :meth:`weighted`).
    """

    discrete: np.ndarray
    weight: float
    ramp: np.ndarray
    missing: np.ndarray
    kind: int
    scale: np.ndarray | None = None

    @classmethod
    def continuous(cls, n_features):
        """Every feature continuous, nothing missing: the plain kernels."""
        return cls(
            np.zeros(n_features, dtype=np.bool_),
            1.0,
            np.full(n_features, np.inf),
            np.zeros(n_features, dtype=np.int64),
            distance.PLAIN,
        )

    def weighted(self, scale):
        """These kinds with feature ``f``'s difference weighing ``scale[f]`` more in
        the distance (``None``: unchanged).  Weighted plain data take the
        ``MASKED`` kernels (the plain ones have no weight to read)."""
        if scale is None:
            return self
        kind = distance.MASKED if self.kind == distance.PLAIN else self.kind
        return FeatureKinds(
            self.discrete,
            self.weight,
            self.ramp,
            self.missing,
            kind,
            np.asarray(scale, dtype=np.float64),
        )

    @property
    def params(self):
        """``(dm, dw, ramp, kind)`` as the kernels take them: ``dw`` per feature, a
        discrete mismatch's :attr:`weight` (1 for a continuous difference)
        times :attr:`scale`."""
        dw = np.where(self.discrete, self.weight, 1.0)
        return self.discrete, dw if self.scale is None else dw * self.scale, self.ramp, self.kind


def feature_kinds(
    rows: Rows,
    discrete_threshold: int,
    *,
    ramps=True,
    mixed_weight=True,
    missing=None,
    discrete=None,
):
    """:class:`FeatureKinds` by skrebate 0.8.4's rules (``relieff.py``).

    A feature with at most ``discrete_threshold`` distinct values (missing
    values not counted) is discrete.  When discrete and continuous features
    mix, a discrete mismatch weighs ``A / A_discrete`` in the distance (not
    with missing values, whose distance is a mean over the features present)
    and, with ``ramps``, a scored continuous difference above the feature's
    standard deviation counts 1.  ``mixed_weight=False``: a discrete mismatch
    always weighs 1 (I-RELIEF, whose learned weights scale every feature).
    ``discrete_threshold=0`` with ``missing``
    (per-feature counts already known, e.g. from the scaling pass) all zero
    is the plain path: no pass over the rows.  ``discrete``: a boolean mask
    of the discrete features, declared instead of counted (skrebate's
    ``categorical_features``).
    """
    a = rows.n_features
    if discrete is None and discrete_threshold == 0 and missing is not None and not np.any(missing):
        return FeatureKinds.continuous(a)
    cap = discrete_threshold if discrete is None else 0  # a declared kind needs no count
    distinct, std, missing = column_summary(rows, cap)
    empty = np.flatnonzero(missing >= rows.n_samples)
    if empty.size:
        raise ValueError(
            f"Feature {int(empty[0])} has no value (every row is missing it); "
            "drop that column before fitting."
        )
    discrete = (
        distinct <= discrete_threshold if discrete is None else np.asarray(discrete, dtype=np.bool_)
    )
    mixed = bool(discrete.any() and not discrete.all())
    has_nan = bool(missing.any())
    ramp = np.where(~discrete & mixed, std, np.inf) if ramps else np.full(a, np.inf)
    weight = discrete.size / discrete.sum() if mixed and not has_nan and mixed_weight else 1.0
    if has_nan:
        kind = distance.MISSING
    elif discrete.any() or np.isfinite(ramp).any():
        kind = distance.MASKED
    else:
        kind = distance.PLAIN
    return FeatureKinds(discrete, float(weight), ramp, missing, kind)


__all__ = ["FeatureKinds", "column_summary", "compact_distinct", "feature_kinds"]
