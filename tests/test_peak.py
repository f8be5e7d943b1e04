"""The benchmarks' measuring tools: the machine's peak, the spambase-like rows, the rounds.

``benchmarks/_peak.py`` measures the most Manhattan pair-features per second one core
reaches (the reference every kernel's rate is quoted against), ``_harness.machine_info``
records it once per run, ``_spambase_like.py`` generates the speed comparisons' data and
``_harness.interleaved_rounds`` times estimators against each other.  Sizes here are
tiny: a test checks what they return, never a speed.
"""

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    """A module of ``benchmarks/``, imported as the scripts import it (by its bare name)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


peak = _load("_peak")
harness = _load("_harness")
spambase = _load("_spambase_like")


def test_measure_peak_names_its_blocking_and_rates_in_both_precisions():
    found = peak.measure_peak(features=(9, 16), rows=64, repeats=1, blockings=list(peak.BLOCKINGS))
    for dtype in ("float32", "float64"):
        entry = found[dtype]
        assert entry["pair_features_per_s"] > 0
        assert entry["blocking"] in peak.BLOCKINGS and entry["features"] in (9, 16)
        assert set(entry["by_width"]) == {"9", "16"}
        rates = [r for width in entry["by_width"].values() for r in width.values()]
        assert len(rates) == 2 * len(peak.BLOCKINGS) and min(rates) > 0
        assert entry["pair_features_per_s"] == max(rates)
    assert found["rows"] == 64 and found["repeats"] == 1
    for dtype in ("float32", "float64"):
        two = found[dtype]["two_cores"]
        # the fastest steady blocking, on two threads at once and one after the other
        steady = {
            (name, int(width)): rate
            for width, rates in found[dtype]["by_width"].items()
            for name, rate in rates.items()
            if name in peak.TWO_CORE_BLOCKINGS
        }
        assert (two["blocking"], two["features"]) == max(steady, key=steady.get)
        assert two["pair_features_per_s"] > 0 and two["one_core_pair_features_per_s"] > 0
        assert two["scaling"] == pytest.approx(
            two["pair_features_per_s"] / two["one_core_pair_features_per_s"]
        )


def test_two_cores_run_the_blocking_on_two_threads_at_once(monkeypatch):
    import threading

    seen = []
    layout, call = peak.BLOCKINGS["tile4x4"]

    def watched(A, B, out):
        seen.append(threading.get_ident())
        call(A, B, out)

    monkeypatch.setitem(peak.BLOCKINGS, "tile4x4", (layout, watched))
    two = peak.measure_two_cores("tile4x4", 12, "float64", rows=32, repeats=2)
    # 2 warm-up calls, then per repeat 2 threads at once and 2 calls on this thread
    assert len(seen) == 2 + 2 * 4
    assert len(set(seen) - {threading.get_ident()}) == 2
    assert two["scaling"] > 0


def test_two_cores_raise_a_failed_call_instead_of_waiting(monkeypatch):
    import threading

    layout, call = peak.BLOCKINGS["tile4x4"]
    calls = []

    def fails_on_a_thread(A, B, out):
        calls.append(1)
        if len(calls) > 2 and threading.current_thread() is not threading.main_thread():
            raise FloatingPointError("kernel failed")
        call(A, B, out)

    monkeypatch.setitem(peak.BLOCKINGS, "tile4x4", (layout, fails_on_a_thread))
    before = threading.active_count()
    with pytest.raises(FloatingPointError, match="kernel failed"):
        peak.measure_two_cores("tile4x4", 12, "float64", rows=32, repeats=2)
    assert threading.active_count() == before  # both threads joined


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(peak.BLOCKINGS))
def test_every_blocking_computes_the_manhattan_distances(name, dtype):
    rng = np.random.default_rng(3)
    XA, XB = rng.random((16, 11)).astype(dtype), rng.random((24, 11)).astype(dtype)
    layout, call = peak.BLOCKINGS[name]
    A, B = peak._operands(XA, XB, layout, dtype)
    out = np.full((16, 24), np.nan, dtype=dtype)
    call(A, B, out)
    expected = np.abs(XA[:, None, :].astype(float) - XB[None, :, :]).sum(axis=2)
    np.testing.assert_allclose(out, expected, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_measure_peak_refuses_rows_the_tiles_cannot_cover_and_unknown_blockings():
    with pytest.raises(ValueError, match="multiple of 8"):
        peak.measure_peak(rows=60)
    with pytest.raises(ValueError, match="unknown blockings"):
        peak.measure_peak(rows=64, blockings=["strawman"])


def test_machine_info_records_the_peak_measured_once_per_run(monkeypatch):
    calls = []

    def fake(quick=False, timeout=600.0):
        calls.append(quick)
        return {"ok": True, "float32": {"pair_features_per_s": 2e10}, "float64": {}}

    monkeypatch.setattr(peak, "measure_in_subprocess", fake)
    monkeypatch.setattr(harness, "_PEAK", None)
    monkeypatch.delenv(harness.PEAK_ENV, raising=False)
    first = harness.machine_info(["numpy"], quick=True)
    second = harness.machine_info(["numpy"])
    assert calls == [True]
    assert (
        first["peak"] == second["peak"] and first["peak"]["float32"]["pair_features_per_s"] == 2e10
    )
    # the subprocesses a benchmark starts inherit it through the environment
    assert json.loads(harness.os.environ[harness.PEAK_ENV]) == first["peak"]
    monkeypatch.setattr(harness, "_PEAK", None)
    assert harness.machine_info([])["peak"] == first["peak"] and calls == [True]
    assert "peak" not in harness.machine_info([], peak=False)


def test_peak_fraction_is_the_rate_over_the_threads_peak():
    found = {"float32": {"pair_features_per_s": 2e10}, "float64": {"pair_features_per_s": 1e10}}
    assert harness.peak_fraction(1.5e10, found) == pytest.approx(0.75)
    assert harness.peak_fraction(1.5e10, found, "float64", threads=2) == pytest.approx(0.75)
    assert harness.peak_fraction(None, found) is None
    assert harness.peak_fraction(1e9, {"ok": False, "error": "timeout"}) is None


@pytest.mark.parametrize("n", spambase.SIZES)
def test_spambase_like_rows_have_spambase_shape_and_are_continuous(n):
    X, y = spambase.make_spambase_like(n)
    assert X.shape == (n, 57) and X.dtype == np.float64 and X.flags.c_contiguous
    assert X.min() == 0.0 and X.max() == 1.0
    assert y.sum() == round(0.394 * n)
    raw, _ = spambase.make_spambase_like(n, scale=False)
    zeros = (raw[:, :54] == 0).mean(axis=0)
    assert zeros.min() > 0.25 and zeros.max() < 0.97
    assert (raw[:, 54:] >= 1).all() and (raw[:, 55:] == np.round(raw[:, 55:])).all()
    assert min(len(np.unique(X[:, j])) for j in range(57)) > spambase.DISCRETE_LIMIT
    # the same rows for the same seed, so every library and round fits the same matrix
    np.testing.assert_array_equal(spambase.make_spambase_like(n)[0], X)


def test_spambase_like_refuses_too_few_rows_for_continuous_columns():
    with pytest.raises(ValueError, match="distinct values"):
        spambase.make_spambase_like(40)


class _Clock:
    """An estimator that records the order it was fitted in."""

    log: list = []

    def __init__(self, name):
        self.name = name

    def fit(self, X, y):
        self.log.append(self.name)
        self.feature_importances_ = np.arange(X.shape[1], dtype=float)
        return self


def test_interleaved_rounds_warm_up_each_then_alternate_who_goes_first():
    _Clock.log = []
    X, y = np.zeros((4, 3)), np.zeros(4)
    out = harness.interleaved_rounds(
        {"a": lambda: _Clock("a"), "b": lambda: _Clock("b")}, X, y, rounds=3
    )
    assert _Clock.log == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert out["order"] == [["a", "b"], ["b", "a"], ["a", "b"]]
    for name in ("a", "b"):
        assert len(out[name]["times_s"]) == 3
        assert out[name]["best_s"] == min(out[name]["times_s"])
        assert out[name]["top10"] == [2, 1, 0]


relief_speed = _load("bench_relief_speed")


def test_rounds_targets_flag_each_size_against_its_target():
    rounds = {
        "ok": True,
        "rows": [
            {"n": 2000, "fast_select_over_dmargin": 2.4},
            {"n": 8000, "fast_select_over_dmargin": 3.2},
        ],
    }
    goals = relief_speed.rounds_targets(rounds, "ReliefF")
    assert goals["relieff_rounds_ratio_8000"] == 3.2 and goals["relieff_rounds_met_8000"] is True
    assert goals["relieff_rounds_ratio_2000"] == 2.4 and goals["relieff_rounds_met_2000"] is False
    failed = relief_speed.rounds_targets({"ok": False, "error": "x"}, "MultiSURF")
    assert failed["multisurf_rounds_met_8000"] is None
    assert "FAILED" in relief_speed.rounds_markdown({"ok": False, "error": "x"}, "ReliefF", "R")


def test_kernel_targets_judge_the_pair_feature_kernels_only():
    found = {"float32": {"pair_features_per_s": 1e10}, "float64": {"pair_features_per_s": 5e9}}
    rows = [
        {"estimator": "ReliefF", "pair_features_per_s": 7e9},
        {"estimator": "MultiSURF", "pair_features_per_s": 5e9},
        {"estimator": "Immigrate, one step", "pair_features_per_s": 3e10},
        {"estimator": relief_speed.STIR_HELPER_ROWS[1], "pair_features_per_s": 1e9},
    ]
    relief_speed.with_peak_fractions(rows, found, "pair_features_per_s")
    assert rows[0]["fraction_of_peak_float32"] == pytest.approx(0.7)
    assert rows[0]["fraction_of_peak_float64"] == pytest.approx(1.4)
    assert "fraction_of_peak_float32" not in rows[2]  # outer-product terms, not pair-features
    goals = relief_speed.kernels_targets({"ok": True, "rows": rows})
    assert goals["kernel_fraction_f32_min"] == pytest.approx(0.5)
    assert goals["kernel_fraction_f32_max"] == pytest.approx(0.7)
    assert goals["kernels_below_target"] == ["MultiSURF"] and goals["kernels_all_met"] is False


def test_git_revision_is_dirty_for_code_not_for_results_an_earlier_run_wrote(tmp_path):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = tmp_path / "repo"
    (repo / "benchmarks" / "results").mkdir(parents=True)
    (repo / "code.py").write_text("x = 1\n")
    (repo / "benchmarks" / "results" / "r.json").write_text("{}\n")

    def git(*args):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    assert harness.git_revision(repo)["dirty"] is False
    (repo / "benchmarks" / "results" / "r.json").write_text('{"a": 1}\n')
    assert harness.git_revision(repo)["dirty"] is False
    (repo / "code.py").write_text("x = 2\n")
    assert harness.git_revision(repo)["dirty"] is True


def test_relief_speed_puts_the_machines_two_core_scaling_beside_its_threads_target():
    relief = _load("bench_relief_speed")
    spec = {"method": "dmargin.ReliefF", "n": 8000}
    speed = [
        {"spec": {**spec, "threads": t}, "threads": t, "ok": True, "steady_best_s": s}
        for t, s in ((1, 0.2), (2, 0.11))
    ]
    two = {"scaling": 1.81, "blocking": "tile8x2_pad", "features": 64}
    found = {"float32": {"two_cores": two}, "float64": {}}
    goals = relief.targets(speed, [], None, 8000, found)
    assert goals["machine_two_cores_float32"] == 1.81 and goals["relieff_threads_met"] is False
    row = [r for r in relief.targets_rows(goals)[1] if "2 threads" in r[0]][0]
    assert "= 1.8182 (" in row[1] and "two cores at once: 1.81x one core" in row[1]
    # a run without the figure says nothing of it
    goals = relief.targets(speed, [], None, 8000, None)
    row = [r for r in relief.targets_rows(goals)[1] if "2 threads" in r[0]][0]
    assert "two cores" not in row[1]
