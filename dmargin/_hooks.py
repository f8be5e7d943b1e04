"""The family hooks: what a variant's subclass changes, and the fit paths that read it.

A variant of a family is a subclass that changes one of the family's hooks
(class attributes of its base).  Every fit path of the family reads the
subclass's hook, or refuses the fit with an error or a warning that says
why; no path falls back on the family's own term in silence.
``tests/test_hooks.py`` fits a changed subclass of each family on each path
of :data:`PATHS` and checks it, and says why where a path does not apply.

What an estimator accepts and needs from the door is not a hook but its
capabilities (:mod:`dmargin._capabilities`).  The estimators not listed here
(Relief, RReliefF, IRelief, OnlineIRelief, Simba, IMMIGRATE and its
variants, LDM, the wrappers and the knockoff filter) have no hooks: each is
one paper's algorithm, and the wrappers fit the estimator they are given,
with its hooks.

A leaf: it imports nothing from dmargin (the bases are named by their module
and class), so any module may import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

#: The fit paths, each a way a fit reaches its family's per-anchor terms.
PATHS = MappingProxyType(
    {
        "classes": "class labels, every row an anchor, numpy rows",
        "continuous": "a continuous target",
        "permutations": "permutation p-values (n_permutations=B): the B fits of the null",
        "stir": "STIR's p-values (pvalues=True)",
        "anchors": "a sample of anchors (n_anchors=m)",
        "dask": "dask rows (the engine's graphs, any scheduler)",
        "compact": "genotype bytes (integer X within [0, 255], capabilities.compact_rows)",
    }
)


@dataclass(frozen=True)
class Hook:
    """A class attribute a variant may change, and what it is."""

    name: str
    meaning: str


@dataclass(frozen=True)
class Family:
    """A family's base class, its hooks, and how each fit path treats them.

    ``honoured`` maps a path to how the path treats a changed hook (it reads
    it, or refuses); ``not_applicable`` maps a path to why the family has no
    such path.  Together they name every path of :data:`PATHS` once.
    """

    name: str
    #: ``"module:Class"``, the base whose subclasses change the hooks.
    base: str
    hooks: tuple[Hook, ...]
    honoured: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    not_applicable: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))


def _paths(**entries):
    return MappingProxyType(entries)


_READ = "reads the hooks"

FAMILIES = (
    Family(
        "ReliefF",
        "dmargin.relief._relief:ReliefF",
        (
            Hook(
                "_agg",
                "the per-anchor term for class labels, ``agg(dist, idx, z, ya, miss_prior, "
                "missing) -> (A,)``: an anchor block's share of the score from its k nearest "
                "rows of each class",
            ),
            Hook(
                "_continuous_agg",
                "the per-anchor term for a continuous target, ``agg(dist, idx, z, ia, y, "
                "n_hits, n_misses, k, bound) -> (share, unresolved anchor rows)``",
            ),
        ),
        honoured=_paths(
            classes=_READ,
            continuous="reads _continuous_agg; a class whose _agg is changed and whose "
            "_continuous_agg is ReliefF's is refused on a continuous target (ValueError)",
            permutations="the null's fits read the same hooks as the observed fit",
            stir="a changed _agg gets no STIR p-values (STIR's law is that of ReliefF's own "
            "term): UncalibratedPValuesWarning, the scores of the changed term",
            anchors=_READ,
            dask=_READ,
        ),
        not_applicable=_paths(
            compact="ReliefF's capabilities take no genotype bytes: integer X is fitted as floats"
        ),
    ),
    Family(
        "SURF",
        "dmargin.surf._surf:ThresholdSelector",
        (
            Hook(
                "_thresholds",
                "``thresholds(moments, total, far) -> (near, far, spread)``: each anchor's "
                "thresholds from the distance moments of the first pass",
            ),
            Hook(
                "_far_rule",
                "how the far set enters the score: FAR_NONE, FAR_SUBTRACT (SURF*), "
                "FAR_SIMILARITY (MultiSURF*)",
            ),
            Hook(
                "_agg",
                "the per-anchor term, ``agg(P, ya, *agg_args) -> (A,)``: an anchor block's "
                "share of the score from its second-pass partials",
            ),
            Hook("_agg_args", "``_agg_args(kinds) -> tuple``: the arguments of _agg after (P, ya)"),
            Hook(
                "_soft",
                "whether the neighbours are weighed by their distance from the threshold (the "
                "SWRF family); a soft variant declares compact_rows=False (the compact kernels "
                "count neighbours)",
            ),
        ),
        honoured=_paths(
            classes=_READ,
            continuous=_READ,
            permutations="the null's fits read the same hooks as the observed fit",
            stir="a changed _agg or a soft variant gets no STIR p-values (STIR's law is that "
            "of MultiSURF's own term): UncalibratedPValuesWarning, the scores of the changed "
            "term",
            anchors=_READ,
            dask=_READ,
            compact=_READ,
        ),
    ),
    Family(
        "SWRF",
        "dmargin.surf._swrf:_SoftThresholdSelector",
        (),  # the SURF family's hooks, with _soft=True and swrf_agg
        honoured=_paths(
            classes=_READ,
            continuous=_READ,
            permutations="the null's fits read the same hooks (a variant that takes "
            "n_permutations)",
            stir="no STIR p-values for weighed neighbours: UncalibratedPValuesWarning (a "
            "variant that takes pvalues)",
            anchors=_READ,
            dask=_READ,
        ),
        not_applicable=_paths(
            compact="the SWRF family's capabilities take no genotype bytes (the weights are "
            "not integers)"
        ),
    ),
    Family(
        "MuRelief",
        "dmargin.relief._murelief:MuRelief",
        (
            Hook(
                "_ranked",
                "True: the rows farthest from their class's mean distance (MuRelief); False: "
                "the nearest (skrebate's ReliefF)",
            ),
            Hook(
                "_agg",
                "the per-anchor term, ``agg(dist, idx, z, ya) -> (A,)``: an anchor block's "
                "share from its chosen rows of each class",
            ),
        ),
        honoured=_paths(classes=_READ, continuous=_READ, anchors=_READ, dask=_READ),
        not_applicable=_paths(
            permutations="MuRelief takes no p-values",
            stir="MuRelief takes no p-values",
            compact="MuRelief's capabilities take no genotype bytes: integer X is fitted as floats",
        ),
    ),
    Family(
        "skrebate",
        "dmargin.skrebate:_SkrebateRelief",
        (),  # the hooks of the dmargin class each one stands on, through skrebate's fit
        honoured=_paths(classes=_READ, continuous=_READ, dask=_READ, compact=_READ),
        not_applicable=_paths(
            permutations="skrebate's classes take no p-values",
            stir="skrebate's classes take no p-values",
            anchors="skrebate's classes score every row (n_anchors=None)",
        ),
    ),
    Family(
        "SBS-MF",
        "dmargin.boosting._boosting:_BackwardSelector",
        (
            Hook(
                "_criterion",
                "the name of the committee's per-feature criterion that backward elimination "
                "removes the smallest of: 'margin_fractions' (SBS-MF), 'contribution_ratios' "
                "(AdaBoost-CR)",
            ),
        ),
        honoured=_paths(classes=_READ, dask=_READ),
        not_applicable=_paths(
            continuous="two classes only (the paper's margins)",
            permutations="no p-values",
            stir="no p-values",
            anchors="boosting reads every row",
            compact="stumps read binned values, never distances: no compact rows",
        ),
    ),
)


def family(name) -> Family:
    """The :class:`Family` of ``name``."""
    for entry in FAMILIES:
        if entry.name == name:
            return entry
    raise KeyError(f"no family {name!r}; the families are {[f.name for f in FAMILIES]}")
