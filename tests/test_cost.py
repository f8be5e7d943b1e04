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
        assert fit_cost(make(n_anchors=500), 20_000, 50).seconds < \
            fit_cost(make(), 20_000, 50).seconds / 10


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
    assert fit_cost(dmargin.ReliefF(n_anchors=5000), 1000, 8) == fit_cost(dmargin.ReliefF(), 1000,
                                                                           8)
    assert fit_cost(dmargin.BDSFS(), 1000, 8) is None


def test_the_cli_says_the_cost_and_the_faster_setting_before_it_starts(tmp_path, capsys,
                                                                         monkeypatch):
    from dmargin import cli

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.random((300, 5)), columns=list("abcde")).assign(
        label=rng.integers(0, 2, 300))
    frame.to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.setattr(cli, "_SLOW_SECONDS", 0.0)  # as if 300 rows were 10^6
    assert cli.main(["select", str(tmp_path / "d.csv"), "--label", "label", "--method",
                     "irelief", "--max-iter", "2"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("estimated ~"))
    assert "N^2 A x at most 2 iterations" in lines[first]
    assert lines[first + 1].startswith("  faster: --method online-irelief")  # 300 < 1000 anchors
    assert first < next(i for i, line in enumerate(lines) if "iterations" in line and "/" in line)


def test_linear_primal_solvers_cost_passes_over_the_rows():
    ldm = fit_cost(dmargin.LDM(kernel="linear"), 10**6, 50)
    assert ldm.operations == 10**6 * 50 * 60 and "Newton passes" in ldm.formula
    assert fit_cost(dmargin.LDM(kernel="linear"), 2 * 10**6, 50).operations == \
        pytest.approx(2 * ldm.operations)  # linear in N, not N^2
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
    assert fit_cost(dmargin.AdaBoostCR(10, step=5), 10**6, 50).operations == \
        100 * 10**6 * sum(range(15, 51, 5))


@pytest.mark.parametrize("name", ["ReliefF", "MultiSURF"])
def test_permutation_pvalues_cost_a_pass_each(name):
    # B permutations: B + 1 times the pairs, and B passes' fixed cost beyond them.
    one = dmargin.fit_cost(getattr(dmargin, name)(), 5000, 50)
    many = dmargin.fit_cost(getattr(dmargin, name)(n_permutations=99), 5000, 50)
    assert many.operations == 100 * one.operations
    assert many.seconds >= 100 * one.seconds and "x 100 (99 permutations)" in many.formula
