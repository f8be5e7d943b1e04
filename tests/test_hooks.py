"""Every fit path honours a family's hooks (:mod:`dmargin._hooks`).

For each family a variant changes its per-anchor term: the stock term plus 1
per anchor, so that the variant's scores are the stock estimator's plus 1 on
every path, and its permutation p-values the stock ones (the null's fits shift
with the observed fit).  A path that fell back on the family's own term would
give the stock scores, or p-values near ``1 / (B + 1)``.  SBS-MF's hook is the
name of its criterion: the variant naming AdaBoost-CR's is AdaBoost-CR.  Each
(family, path) of :data:`dmargin._hooks.PATHS` is a test; where a path does not
apply to a family the test is skipped with the reason ``_hooks`` gives.
"""

import numbers
import warnings
from importlib import import_module

import dask
import dask.array as da
import numpy as np
import pytest

import dmargin
import dmargin.skrebate as dsk
from dmargin import PValuesUnavailableError, UncalibratedPValuesWarning
from dmargin._hooks import FAMILIES, PATHS, family
from dmargin._pvalues import PValues
from dmargin._validation import BOOLEAN, Interval
from dmargin.relief._murelief import murelief_agg
from dmargin.relief._terms import relieff_agg, relieff_continuous_agg
from dmargin.surf._terms import surf_agg, swrf_agg

N, A = 80, 6
ATOL = 1e-10


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.random((N, A))
    score = X[:, 0] + 0.4 * X[:, 1] + 0.3 * rng.random(N)
    y = (score > np.median(score)).astype(int)  # two balanced classes (STIR's domain)
    target = score + 0.01 * rng.random(N)  # floats: a continuous target
    G = rng.integers(0, 3, size=(N, 8))  # genotypes: bytes
    yg = ((G[:, 0] == 2) ^ (G[:, 1] == 0) ^ (rng.random(N) < 0.1)).astype(int)
    return {"X": X, "y": y, "target": target, "G": G, "yg": yg}


# ---------------------------------------------------------------------------
# The variants: the stock term plus 1 per anchor
# ---------------------------------------------------------------------------


def _plus_one(agg, anchors_at):
    """``agg`` plus 1 for every anchor of the block (``anchors_at``: the argument that
    has one entry per anchor)."""

    def shifted(*args):
        return agg(*args) + len(args[anchors_at])

    return staticmethod(shifted)


def _continuous_plus_one(*args):
    """ReliefF's continuous term plus 1 for every anchor it resolves."""
    share, rest = relieff_continuous_agg(*args)
    return share + (len(args[3]) - len(rest)), rest


class PValuedMultiSWRF(PValues, dmargin.MultiSWRF):
    """A SWRF variant that takes the SURF family's p-value parameters (the next variant)."""

    _parameter_constraints = {
        **dmargin.MultiSWRF._parameter_constraints,
        "pvalues": [BOOLEAN],
        "n_permutations": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(
        self,
        *,
        discrete_threshold=10,
        scale="minmax",
        n_anchors=None,
        pvalues=False,
        n_permutations=0,
        n_features_to_select=None,
        rank_absolute=False,
        random_state=None,
        device="cpu",
    ):
        super().__init__(
            discrete_threshold=discrete_threshold,
            scale=scale,
            n_anchors=n_anchors,
            n_features_to_select=n_features_to_select,
            rank_absolute=rank_absolute,
            random_state=random_state,
            device=device,
        )
        self.pvalues = pvalues
        self.n_permutations = n_permutations


class ShiftedReliefF(dmargin.ReliefF):
    _agg = _plus_one(relieff_agg, 3)
    _continuous_agg = staticmethod(_continuous_plus_one)


class ClassTermOnlyReliefF(dmargin.ReliefF):
    """A variant for class labels only: no term of its own for a continuous target."""

    _agg = _plus_one(relieff_agg, 3)


class ShiftedMultiSURF(dmargin.MultiSURF):
    _agg = _plus_one(surf_agg, 1)


class ShiftedMultiSWRF(PValuedMultiSWRF):
    _agg = _plus_one(swrf_agg, 1)


class ShiftedMuRelief(dmargin.MuRelief):
    _agg = _plus_one(murelief_agg, 3)


class ShiftedSkrebateMultiSURF(dsk.MultiSURF):
    _agg = _plus_one(surf_agg, 1)


class NamedCriterion(dmargin.SBSMF):
    """SBS-MF eliminating by AdaBoost-CR's criterion."""

    _criterion = "contribution_ratios"


#: family -> (stock class, variant, parameters of every fit)
CASES = {
    "ReliefF": (dmargin.ReliefF, ShiftedReliefF, {"n_neighbors": 5}),
    "SURF": (dmargin.MultiSURF, ShiftedMultiSURF, {}),
    "SWRF": (PValuedMultiSWRF, ShiftedMultiSWRF, {}),
    "MuRelief": (dmargin.MuRelief, ShiftedMuRelief, {"n_neighbors": 10}),
    "skrebate": (dsk.MultiSURF, ShiftedSkrebateMultiSURF, {}),
    "SBS-MF": (dmargin.AdaBoostCR, NamedCriterion, {"n_features_to_select": 2, "n_estimators": 5}),
}


def _fit(cls, params, X, y, **more):
    return cls(**params, **more).fit(X, y)


def _shifted(stock, variant):
    np.testing.assert_allclose(
        variant.feature_importances_, stock.feature_importances_ + 1.0, rtol=0, atol=ATOL
    )


# ---------------------------------------------------------------------------
# The paths
# ---------------------------------------------------------------------------


def path_classes(name, data):
    stock, variant, params = CASES[name]
    X, y = data["X"], data["y"]
    if name == "SBS-MF":
        want, got = _fit(stock, params, X, y), _fit(variant, params, X, y)
        np.testing.assert_array_equal(got.ranking_, want.ranking_)
        np.testing.assert_allclose(got.elimination_scores_[0], want.elimination_scores_[0])
        return
    _shifted(_fit(stock, params, X, y), _fit(variant, params, X, y))


def path_continuous(name, data):
    stock, variant, params = CASES[name]
    X, t = data["X"], data["target"]
    got = _fit(variant, params, X, t)
    assert got.target_type_ == "continuous"
    _shifted(_fit(stock, params, X, t), got)
    if name == "ReliefF":  # a class-label term alone is refused, not replaced by ReliefF's
        with pytest.raises(ValueError, match="_continuous_agg"):
            _fit(ClassTermOnlyReliefF, params, X, t)
        _shifted(
            _fit(stock, params, X, data["y"]), _fit(ClassTermOnlyReliefF, params, X, data["y"])
        )


def path_permutations(name, data):
    stock, variant, params = CASES[name]
    X, y = data["X"], data["y"]
    more = {"n_permutations": 9, "random_state": 0}
    want, got = _fit(stock, params, X, y, **more), _fit(variant, params, X, y, **more)
    _shifted(want, got)
    np.testing.assert_array_equal(got.pvalues_, want.pvalues_)
    if name == "ReliefF":  # and on a continuous target
        t = data["target"]
        want, got = _fit(stock, params, X, t, **more), _fit(variant, params, X, t, **more)
        _shifted(want, got)
        np.testing.assert_array_equal(got.pvalues_, want.pvalues_)


def path_stir(name, data):
    stock, variant, params = CASES[name]
    X, y = data["X"], data["y"]
    with pytest.warns(UncalibratedPValuesWarning, match="per-anchor term"):
        got = _fit(variant, params, X, y, pvalues=True)
    with pytest.raises(PValuesUnavailableError):
        _ = got.pvalues_
    _shifted(_fit(stock, params, X, y), got)


def path_anchors(name, data):
    stock, variant, params = CASES[name]
    X, y = data["X"], data["y"]
    more = {"n_anchors": 30, "random_state": 0}
    want, got = _fit(stock, params, X, y, **more), _fit(variant, params, X, y, **more)
    np.testing.assert_array_equal(got.anchor_indices_, want.anchor_indices_)
    _shifted(want, got)


def path_dask(name, data):
    stock, variant, params = CASES[name]
    X, y = data["X"], data["y"]
    Xd, yd = da.from_array(X, chunks=(25, -1)), da.from_array(y, chunks=25)
    with dask.config.set(scheduler="threads"):
        got = _fit(variant, params, Xd, yd)
    if name == "SBS-MF":
        np.testing.assert_array_equal(got.ranking_, _fit(stock, params, X, y).ranking_)
        return
    _shifted(_fit(stock, params, X, y), got)


def path_compact(name, data):
    stock, variant, params = CASES[name]
    G, y = data["G"], data["yg"]
    want, got = _fit(stock, params, G, y), _fit(variant, params, G, y)
    assert got.compact_dtype_ == np.uint8
    _shifted(want, got)


PATH_CHECKS = {
    "classes": path_classes,
    "continuous": path_continuous,
    "permutations": path_permutations,
    "stir": path_stir,
    "anchors": path_anchors,
    "dask": path_dask,
    "compact": path_compact,
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
def test_every_path_reads_the_changed_hook(name, path, data, stir_everywhere):
    why = family(name).not_applicable.get(path)
    if why is not None:
        pytest.skip(f"{name} has no {path} path: {why}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a tiny fit's notes, not the checks'
        warnings.simplefilter("always", UncalibratedPValuesWarning)
        PATH_CHECKS[path](name, data)


# ---------------------------------------------------------------------------
# The table itself
# ---------------------------------------------------------------------------


def test_every_family_names_every_path_once():
    for entry in FAMILIES:
        honoured, missing = set(entry.honoured), set(entry.not_applicable)
        assert not honoured & missing, (entry.name, honoured & missing)
        assert honoured | missing == set(PATHS), (entry.name, set(PATHS) - honoured - missing)
    assert set(PATH_CHECKS) == set(PATHS)
    assert [f.name for f in FAMILIES] == list(CASES), "a family without a variant here"


@pytest.mark.parametrize("entry", FAMILIES, ids=lambda f: f.name)
def test_each_hook_is_an_attribute_of_its_base(entry):
    module, name = entry.base.split(":")
    base = getattr(import_module(module), name)
    for hook in entry.hooks:
        assert hasattr(base, hook.name), f"{entry.base} has no hook {hook.name}"
    stock, variant, _ = CASES[entry.name]
    assert issubclass(variant, base) or issubclass(stock, base)


def test_a_soft_surf_variant_never_takes_the_compact_rows():
    """The compact kernels count neighbours: a SURF subclass that weighs them (``_soft``)
    without declaring anything else reads float rows."""
    from dmargin._capabilities import capabilities
    from dmargin.surf._terms import multiswrf_thresholds

    class SoftMultiSURF(dmargin.MultiSURF):
        _soft = True
        _agg = staticmethod(swrf_agg)
        _agg_args = dmargin.MultiSWRF._agg_args
        _thresholds = staticmethod(multiswrf_thresholds)

    assert capabilities(dmargin.MultiSURF).compact(dmargin.MultiSURF())
    assert not capabilities(SoftMultiSURF).compact(SoftMultiSURF())
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(80, 6))
    y = (X[:, 0] + rng.integers(0, 2, size=80) > 1).astype(int)
    est = SoftMultiSURF().fit(X, y)
    # On the compact path the weighted partials were read as counted ones: one score short.
    assert est.compact_dtype_ is None and est.feature_importances_.shape == (6,)
