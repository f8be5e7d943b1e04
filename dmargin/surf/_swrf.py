"""The SWRF family: SURF's neighbourhoods with every neighbour weighed by how far it lies from the threshold.

skrebate 0.8.4's ``SWRF``, ``SWRFstar``, ``MultiSWRF``, ``MultiSWRFstar``,
``MultiSWRFDB`` and ``MultiSWRFDBstar`` (``baseswrf.py``).  Where SURF and
MultiSURF count a neighbour or not, an SWRF estimator weighs a neighbour at
distance ``d`` from a set with threshold ``t`` by

.. math:: v(d) = \\tanh\\left(\\frac{2 |d - t|}{s}\\right)
          = \\frac{2}{1 + e^{-4 |d - t| / s}} - 1,

0 at the threshold and near 1 beyond a spread ``s`` of it: the rows that are
barely neighbours barely count.  The thresholds and spreads:

==================  ===============================  ==========================
estimator           near ``d <``, far ``d >``        spread ``s``
==================  ===============================  ==========================
SWRF, SWRF*         the mean of the distance matrix  its standard deviation
MultiSWRF(*)        the anchor's mean distance       the anchor's deviation
MultiSWRFDB(*)      ``mu_a -/+ sigma_a / 2``         ``sigma_a``
==================  ===============================  ==========================

The starred variants add the far set's similarities, as MultiSURF*.  Each
fit is the SURF family's statistic (:func:`dmargin.engine.threshold_statistic`)
with weighted neighbours: the distance moments, then the weighted sums.
"""

from __future__ import annotations

from dataclasses import replace

from .._capabilities import capabilities
from ..engine import MISSING
from ._cost import swrf_cost
from ._docstrings import SURF_NOTES, SURF_PARAMS
from ._surf import ThresholdSelector
from ._terms import (
    FAR_NONE,
    FAR_SIMILARITY,
    multiswrf_thresholds,
    multiswrfdb_thresholds,
    swrf_agg,
    swrf_thresholds,
)


class _SoftThresholdSelector(ThresholdSelector):
    """The SWRF family: the SURF family's statistic with weighted neighbours."""

    #: The float64 rows only: the weights are not integers, genotypes gain nothing.
    _capabilities = replace(capabilities(ThresholdSelector), keep_float32=False, compact_rows=False)
    _agg = staticmethod(swrf_agg)
    _soft = True

    def _agg_args(self, kinds):
        return self._far_rule != FAR_NONE, kinds.kind == MISSING, kinds.discrete

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost` of the SWRF family: two passes over the pairs."""
        return swrf_cost(self, n_samples, n_features, self._far_rule != FAR_NONE)


_SCORING = """
    Scoring follows skrebate's ``baseswrf.py``: a neighbour's difference
    enters the sums times its weight ``v``, while the counts ``h`` and
    ``m_c`` of the SURF family's formula (Notes) count the neighbours
    unweighted.  The far set (starred variants) scores the similarities,
    ``sum (1 - v diff)`` over the far neighbours for a continuous feature
    and ``sum v (1 - diff)`` for a discrete one, with the same counts, and
    is added.  Differences from skrebate: with missing values skrebate keeps
    only the lower triangle of the distance matrix, so SWRF's mean and
    deviation there are of a matrix half zeros (near sets nearly vanish);
    here they are the whole matrix's, as for SURF.  SWRF's mean and
    deviation include the matrix's zero diagonal, as skrebate's.  The rows
    are float64 (genotypes take no compact path).
"""


def _doc(summary, body, see_also, references, name):
    return (
        summary
        + body
        + SURF_PARAMS.format(
            sample_note="",
            range_note=" and set (near, far)" if name.endswith("star") else "",
            pvalues_param="",
            pvalues_attrs="",
        )
        + see_also
        + SURF_NOTES
        + _SCORING
        + references
        + f"""
    Examples
    --------
    >>> from dmargin import {name}
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> {name}(n_features_to_select=5).fit(X, y).transform(X).shape
    (569, 5)
    """
    )


_REFERENCE = """
    References
    ----------
    scikit-rebate (skrebate) 0.8.4, EpistasisLab, module ``baseswrf.py``:
    the definition these scores reproduce.
"""


class SWRF(_SoftThresholdSelector):
    __doc__ = _doc(
        """SWRF: SURF's neighbours, each weighed by its distance below the mean distance.
""",
        """
    One threshold for all anchors, the mean of the N x N distance matrix
    (as ``SURF``); a neighbour strictly closer weighs ``tanh(2 (mu - d) /
    sd)``, ``sd`` the matrix's standard deviation (skrebate 0.8.4's ``SWRF``).
""",
        """
    See Also
    --------
    SURF : the same neighbours, unweighted.
    SWRFstar : also the far rows.
    MultiSWRF : a threshold per anchor.
""",
        _REFERENCE,
        "SWRF",
    )
    _thresholds = staticmethod(swrf_thresholds)


class SWRFstar(_SoftThresholdSelector):
    __doc__ = _doc(
        """SWRF*: SWRF plus the far rows' similarities, weighed by their distance above the mean.
""",
        """
    With SWRF's threshold and spread, rows strictly farther than the mean
    distance are far and weigh ``tanh(2 (d - mu) / sd)``; their
    similarities are scored and added (skrebate 0.8.4's ``SWRFstar``).
""",
        """
    See Also
    --------
    SWRF, SURFstar, MultiSWRFstar
""",
        _REFERENCE,
        "SWRFstar",
    )
    _thresholds = staticmethod(swrf_thresholds)
    _far_rule = FAR_SIMILARITY


class MultiSWRF(_SoftThresholdSelector):
    __doc__ = _doc(
        """MultiSWRF: each anchor's rows closer than its mean distance, weighed by how much closer.
""",
        """
    Each anchor's threshold is its mean distance to the other rows
    ``mu_a`` and its spread their standard deviation ``sigma_a`` (ddof 0);
    a row strictly closer weighs ``tanh(2 (mu_a - d) / sigma_a)``
    (skrebate 0.8.4's ``MultiSWRF``).
""",
        """
    See Also
    --------
    MultiSURF : a dead band and unweighted neighbours.
    MultiSWRFstar : also the far rows.
    MultiSWRFDB : MultiSURF's dead band, weighed.
""",
        _REFERENCE,
        "MultiSWRF",
    )
    _thresholds = staticmethod(multiswrf_thresholds)


class MultiSWRFstar(_SoftThresholdSelector):
    __doc__ = _doc(
        """MultiSWRF*: MultiSWRF plus the far rows' similarities.
""",
        """
    Rows strictly farther than the anchor's mean distance are far and
    weigh ``tanh(2 (d - mu_a) / sigma_a)``; their similarities are scored
    and added (skrebate 0.8.4's ``MultiSWRFstar``).
""",
        """
    See Also
    --------
    MultiSWRF, MultiSURFstar
""",
        _REFERENCE,
        "MultiSWRFstar",
    )
    _thresholds = staticmethod(multiswrf_thresholds)
    _far_rule = FAR_SIMILARITY


class MultiSWRFDB(_SoftThresholdSelector):
    __doc__ = _doc(
        """MultiSWRFDB: MultiSURF's neighbours (its dead band), weighed from the band's edge.
""",
        """
    Near rows are those strictly closer than ``mu_a - sigma_a / 2``
    (MultiSURF's), each weighing ``tanh(2 (mu_a - sigma_a / 2 - d) /
    sigma_a)`` (skrebate 0.8.4's ``MultiSWRFDB``).
""",
        """
    See Also
    --------
    MultiSURF : the same neighbours, unweighted.
    MultiSWRFDBstar : also the far rows beyond the band.
""",
        _REFERENCE,
        "MultiSWRFDB",
    )
    _thresholds = staticmethod(multiswrfdb_thresholds)


class MultiSWRFDBstar(_SoftThresholdSelector):
    __doc__ = _doc(
        """MultiSWRFDB*: MultiSWRFDB plus the far rows beyond the dead band.
""",
        """
    Rows strictly farther than ``mu_a + sigma_a / 2`` are far, weigh
    ``tanh(2 (d - mu_a - sigma_a / 2) / sigma_a)``, and their similarities
    are scored and added (skrebate 0.8.4's ``MultiSWRFDBstar``).
""",
        """
    See Also
    --------
    MultiSWRFDB, MultiSURFstar
""",
        _REFERENCE,
        "MultiSWRFDBstar",
    )
    _thresholds = staticmethod(multiswrfdb_thresholds)
    _far_rule = FAR_SIMILARITY
