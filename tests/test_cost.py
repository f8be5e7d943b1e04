"""Cost before work: dmargin.fit_cost and what the CLI says before a fit starts."""

import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin import fit_cost


def test_exact_fits_grow_with_n_squared_sampled_ones_with_n():
    for make in (dmargin.ReliefF, dmargin.IRelief, dmargin.Immigrate, dmargin.IM4E):
        a, b = fit_cost(make(), 10_000, 50), fit_cost(make(), 20_000, 50)
        assert b.operations == pytest.approx(4 * a.operations)
        a, b = fit_cost(make(n_anchors=500), 10_000, 50), fit_cost(make(n_anchors=500), 20_000, 50)
        assert b.operations == pytest.approx(2 * a.operations)
        assert (
            fit_cost(make(n_anchors=500), 20_000, 50).seconds
            < fit_cost(make(), 20_000, 50).seconds / 10
        )


def test_counts_follow_the_settings():
    relieff = fit_cost(dmargin.ReliefF(n_anchors=0.01), 100_000, 40)
    assert relieff.operations == 1000 * 100_000 * 40 and "m = 1000" in relieff.formula
    irelief = fit_cost(dmargin.IRelief(max_iter=7), 1000, 10)
    assert irelief.operations == 1000**2 * 10 * 7 and "at most 7 iterations" in irelief.formula
    assert "x 7 iterations" in fit_cost(dmargin.IRelief(max_iter=7, tol=0), 1000, 10).formula
    online = fit_cost(dmargin.OnlineIRelief(reference_size=2000, n_passes=2), 10**7, 50)
    assert online.operations == 10**7 * 2000 * 50 * 2
    immigrate = fit_cost(dmargin.Immigrate(max_iter=10), 1000, 20)
    assert immigrate.operations == 1000**2 * 20**2 * 10
    # every row as anchor is the exact fit, and costs the same
    assert fit_cost(dmargin.ReliefF(n_anchors=5000), 1000, 8) == fit_cost(
        dmargin.ReliefF(), 1000, 8
    )
    assert fit_cost(dmargin.BDSFS(), 1000, 8) is None


def test_the_cli_says_the_cost_and_the_faster_setting_before_it_starts(
    tmp_path, capsys, monkeypatch
):
    from dmargin import cli

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.random((300, 5)), columns=list("abcde")).assign(
        label=rng.integers(0, 2, 300)
    )
    frame.to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.setattr(cli._plan, "SLOW_SECONDS", 0.0)  # as if 300 rows were 10^6
    assert (
        cli.main(
            [
                "select",
                str(tmp_path / "d.csv"),
                "--label",
                "label",
                "--method",
                "irelief",
                "--max-iter",
                "2",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    lines = err.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("estimated ~"))
    assert "N^2 A x at most 2 iterations" in lines[first]
    assert lines[first + 1].startswith("  faster: --anchors ")  # the same method first
    assert any(line.startswith("  faster: --method online-irelief") for line in lines)
    assert first < next(i for i, line in enumerate(lines) if "iterations" in line and "/" in line)


def test_linear_primal_solvers_cost_passes_over_the_rows():
    ldm = fit_cost(dmargin.LDM(kernel="linear"), 10**6, 50)
    assert ldm.operations == 10**6 * 50 * 60 and "Newton passes" in ldm.formula
    assert fit_cost(dmargin.LDM(kernel="linear"), 2 * 10**6, 50).operations == pytest.approx(
        2 * ldm.operations
    )  # linear in N, not N^2
    # RFE: one machine per round on the survivors, 50 -> 40 -> 30 -> 20 -> 10.
    rfe = fit_cost(dmargin.LDMRFE(10, step=10, kernel="linear"), 10**6, 50)
    assert rfe.operations == 10**6 * (50 + 40 + 30 + 20) * 60 and "4 rounds" in rfe.formula
    svm = fit_cost(dmargin.SVMRFE(10, step=10, kernel="linear"), 10**6, 50)
    assert svm.operations == 10**6 * sum(a * (a + 1) for a in (50, 40, 30, 20)) * 8
    # the in-memory solvers have no such model
    for est in (dmargin.LDM(), dmargin.LDM(kernel="linear", solver="cd"), dmargin.SVMRFE()):
        assert fit_cost(est, 1000, 8) is None


@pytest.mark.parametrize("name", ["SURF", "SURFstar", "MultiSURF", "MultiSURFstar"])
def test_the_surf_family_costs_pairs_of_rows(name):
    exact = fit_cost(getattr(dmargin, name)(), 8000, 50)
    sampled = fit_cost(getattr(dmargin, name)(n_anchors=1000), 80_000, 50)
    assert exact.operations == 8000**2 * 50 and "two passes" in exact.formula
    assert sampled.operations == 1000 * 80_000 * 50
    assert 0.1 < exact.seconds < 10  # about 0.66 s measured at this size
    if name == "MultiSURF":  # STIR's p-values: a third pass and the squares
        stir = fit_cost(dmargin.MultiSURF(pvalues=True), 8000, 50)
        assert stir.operations == exact.operations and "three passes" in stir.formula
        assert stir.seconds == pytest.approx(2 * exact.seconds)


def test_boosting_costs_rounds_of_passes_over_the_rows():
    """SBS-MF 50 -> 10 with "halving": 40 elimination rounds of 100 boosting rounds on
    50, 49, ..., 11 features (an upper bound); the row-features grow as N, the seconds
    linearly in N (plus a fixed cost a round)."""
    sel = fit_cost(dmargin.SBSMF(10, step="halving"), 10**6, 50)
    assert np.isfinite(sel.seconds) and sel.seconds > 0
    assert sel.operations == 100 * 10**6 * sum(range(11, 51))
    assert "40 elimination rounds" in sel.formula and "at most" in sel.formula
    big = fit_cost(dmargin.SBSMF(10, step="halving"), 10**7, 50)
    assert big.operations == pytest.approx(10 * sel.operations, rel=1e-12)
    mid = fit_cost(dmargin.SBSMF(10, step="halving"), 5.5 * 10**6, 50)
    assert mid.seconds == pytest.approx((sel.seconds + big.seconds) / 2, rel=1e-12)
    assert sel.seconds < big.seconds < 10 * sel.seconds
    one = fit_cost(dmargin.AdaBoostStumps(n_estimators=100), 10**7, 50)
    assert one.operations == 100 * 10**7 * 50 and one.seconds < big.seconds / 10
    assert 60 < one.seconds < 600  # one run of 100 rounds: 176 s measured at 10^7 x 50
    assert fit_cost(dmargin.AdaBoostCR(10, step=5), 10**6, 50).operations == 100 * 10**6 * sum(
        range(15, 51, 5)
    )


@pytest.mark.parametrize("name", ["ReliefF", "MultiSURF"])
def test_permutation_pvalues_cost_a_pass_each(name):
    # B permutations: B + 1 times the pairs, and B passes' fixed cost beyond them.
    one = dmargin.fit_cost(getattr(dmargin, name)(), 5000, 50)
    many = dmargin.fit_cost(getattr(dmargin, name)(n_permutations=99), 5000, 50)
    assert many.operations == 100 * one.operations
    assert many.seconds >= 100 * one.seconds and "x 100 (99 permutations)" in many.formula


# -- the wrappers: their fits' costs, composed ------------------------------------------


def test_iter_costs_max_iter_fits_of_its_estimator():
    inner = fit_cost(dmargin.ReliefF(), 10_000, 50)
    cost = fit_cost(dmargin.Iter(dmargin.ReliefF(), max_iter=7), 10_000, 50)
    assert cost.operations == pytest.approx(7 * inner.operations)
    assert cost.seconds == pytest.approx(7 * inner.seconds)
    assert "at most 7 fits" in cost.formula


def test_vls_costs_a_fit_per_subset_on_its_features():
    est = dmargin.VLS(dmargin.MultiSURF(), num_feature_subset=10**6, size_feature_subset=5)
    inner = fit_cost(dmargin.MultiSURF(), 2000, 5)
    cost = fit_cost(est, 2000, 1000)
    assert cost.operations == pytest.approx(10**6 * inner.operations)
    assert cost.seconds == pytest.approx(10**6 * inner.seconds) and cost.seconds > 3600
    # too few subsets to cover the features: as many as cover them
    few = fit_cost(
        dmargin.VLS(dmargin.MultiSURF(), num_feature_subset=3, size_feature_subset=5), 2000, 1000
    )
    assert few.operations == pytest.approx(200 * inner.operations)


def test_turf_costs_the_elimination_schedule():
    """1,000 features, pct=0.5, keep=100: skrebate's two rounds (1,000 and 500
    features), then the last fit on the 250 survivors."""
    est = dmargin.TuRF(dmargin.ReliefF(), pct=0.5, keep=100)
    cost = fit_cost(est, 5000, 1000)
    widths = [1000, 500, 250]
    assert cost.operations == pytest.approx(
        sum(fit_cost(dmargin.ReliefF(), 5000, a).operations for a in widths)
    )
    assert "3 fits on 1000 down to 250 features" in cost.formula


def test_the_wrappers_cost_the_fits_they_make():
    """The composed counts are the fits a run makes (its progress events count them)."""
    from dmargin.progress import on_progress

    rng = np.random.default_rng(0)
    X, y = rng.random((60, 12)), rng.integers(0, 2, 60)
    events = []
    with on_progress(events.append):
        turf = dmargin.TuRF(dmargin.ReliefF(), pct=0.5, keep=2).fit(X, y)
    widths = [12, 6, 3, 2]  # int(1 / 0.5) = 2 rounds... here stopped at keep
    assert events[-1].final and events[-1].estimator == "TuRF"
    cost = fit_cost(dmargin.TuRF(dmargin.ReliefF(), pct=0.5, keep=2), 60, 12)
    assert cost.operations == pytest.approx(
        sum(fit_cost(dmargin.ReliefF(), 60, a).operations for a in widths[: events[-1].done])
    )
    assert turf.n_iter_ + 1 == events[-1].done
    vls = dmargin.VLS(
        dmargin.ReliefF(), num_feature_subset=4, size_feature_subset=5, random_state=0
    ).fit(X, y)
    assert fit_cost(vls, 60, 12).operations == pytest.approx(
        len(vls.subsets_) * fit_cost(dmargin.ReliefF(), 60, 5).operations
    )


def test_a_wrapped_estimator_without_a_cost_gives_none():
    from sklearn.ensemble import RandomForestClassifier

    assert fit_cost(dmargin.TuRF(RandomForestClassifier()), 1000, 50) is None
    assert fit_cost(dmargin.Iter(dmargin.Simba()), 1000, 50) is None


# -- a long fit warns before it starts ---------------------------------------------------


def _never_computed(n, a, seen):
    import dask.array as da

    def mark(block):
        if block.size:  # (dask calls it once on an empty meta block)
            seen.append(block.shape)
        return block

    X = da.zeros((n, a), chunks=(100_000, a)).map_blocks(mark, dtype=float)
    y = (da.arange(n, chunks=100_000) % 2).map_blocks(mark, dtype=int)
    return X, y


@pytest.mark.parametrize(
    "make,cheaper",
    [
        (lambda: dmargin.IRelief(), "n_anchors=1000"),
        (lambda: dmargin.Immigrate(), "n_anchors=500"),
        (lambda: dmargin.VLS(dmargin.MultiSURF(), num_feature_subset=10**6), None),
        (lambda: dmargin.Iter(dmargin.ReliefF()), "estimator__n_anchors=1000"),
    ],
)
def test_a_long_fit_warns_from_the_shape_before_any_work(make, cheaper):
    """2e6 rows x 50 on dask, never computed: the estimate (hours) and the cheaper
    setting come as one LongFitWarning before the fit reads a row."""
    import warnings

    seen = []
    X, y = _never_computed(2_000_000, 50, seen)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dmargin.LongFitWarning)  # stop the fit there
        with pytest.raises(dmargin.LongFitWarning) as caught:
            make().fit(X, y)
    message = str(caught.value)
    assert seen == [] and " h (" in message and "2,000,000 x 50" in message
    if cheaper is not None:
        assert f"With {cheaper}: ~" in message
    assert issubclass(dmargin.LongFitWarning, UserWarning)


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.IRelief(max_iter=3, tol=0),
        lambda: dmargin.Iter(dmargin.ReliefF(), max_iter=3),
        lambda: dmargin.VLS(dmargin.ReliefF(), num_feature_subset=3, size_feature_subset=3),
        lambda: dmargin.TuRF(dmargin.ReliefF(), keep=2),
    ],
)
def test_the_warning_comes_once_per_fit_and_never_for_small_ones(make, monkeypatch):
    import warnings

    from dmargin import _cost

    rng = np.random.default_rng(0)
    X, y = rng.random((80, 6)), rng.integers(0, 2, 80)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dmargin.LongFitWarning)
        make().fit(X, y)  # small: silent
    monkeypatch.setattr(_cost, "LONG_FIT_SECONDS", 0.0)  # as if it were hours
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make().fit(X, y)
    long = [w for w in caught if issubclass(w.category, dmargin.LongFitWarning)]
    assert len(long) == 1 and long[0].filename == __file__  # the user's line
    with warnings.catch_warnings(record=True) as caught:  # silenced as any warning
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=dmargin.LongFitWarning)
        make().fit(X, y)
    assert not [w for w in caught if issubclass(w.category, dmargin.LongFitWarning)]


# -- the registry's cost table; each family's formula in its family -----------------------


def test_the_api_page_gives_the_cost_of_every_registered_estimator():
    import runpy
    from pathlib import Path

    from dmargin._registry import ESTIMATORS, example

    conf = runpy.run_path(str(Path(__file__).resolve().parents[1] / "docs" / "conf.py"))
    table = conf["cost_table"]()
    for entry in ESTIMATORS:
        row = f"   * - ``{example(entry.name)!r}``\n     - "
        assert table.count(row) == 1, entry.name
    n, a = conf["COST_TABLE_SIZE"]
    said = str(fit_cost(dmargin.ReliefF(), n, a))
    assert f"   * - ``ReliefF()``\n     - {said}\n" in table


def test_the_core_holds_no_familys_formula():
    """``dmargin/_cost.py`` is the generic part; a family's formula and rates live in its
    subpackage's ``_cost.py``, beside the estimators that call it."""
    from dmargin import _cost

    formulas = [n for n in vars(_cost) if n.endswith("_cost") and n not in ("fit_cost",)]
    assert formulas == ["repeated_cost"]  # a wrapper's fits, any family's
    assert not [n for n in vars(_cost) if n.endswith("_RATE")]
