"""The benchmark results: one JSON per benchmark, its runs keyed by variant.

``benchmarks/README.md``'s tables are filled from those variants
(``benchmarks/report.py``); a script stores its run as one variant and leaves
the others as they are (``benchmarks/_harness.py::write_variant``).
"""

import importlib.util
import json
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# A one-off measurement no script rewrites (dmargin/_immigrate.py and docs/methods.md cite
# it by name).
ONE_OFF = {"immigrate_cost_rate.json"}


def _load(name):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load("report")  # puts benchmarks/ on sys.path, as every script does
harness = report.harness


def test_every_results_file_holds_its_runs_by_variant():
    paths = sorted(p for p in (BENCHMARKS / "results").glob("*.json") if p.name not in ONE_OFF)
    assert paths
    for path in paths:
        doc = json.loads(path.read_text())
        assert set(doc) == {"benchmark", "variants"}, path.name
        assert doc["benchmark"] == path.stem
        assert doc["variants"] and all(isinstance(v, dict) for v in doc["variants"].values()), (
            path.name
        )


def test_every_readme_table_is_its_variants_markdown():
    text = report.README.read_text()
    references = report.tables(text)
    assert ("sbsmf", "speed") in references and ("relief_speed", "default") in references
    for benchmark, variant in references:
        assert harness.load_variant(benchmark, variant)["markdown"].strip()
    assert report.fill(text) == text, "run python benchmarks/report.py"


def test_write_variant_replaces_its_variant_and_keeps_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    monkeypatch.setattr(harness, "QUICK_RESULTS", tmp_path / "quick")
    path = harness.write_variant("demo", {"markdown": "a"})
    harness.write_variant("demo", {"markdown": "b", "x": 1}, variant="grid5")
    harness.write_variant("demo", {"markdown": "c"})
    harness.write_variant("demo", {"markdown": "q"}, quick=True)
    doc = json.loads(path.read_text())
    assert list(doc["variants"]) == ["default", "grid5"]
    assert doc["variants"]["default"]["markdown"] == "c"
    assert doc["variants"]["grid5"]["x"] == 1 and "command" in doc["variants"]["grid5"]
    assert harness.load_variant("demo", "default", quick=True)["markdown"] == "q"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "demo.json",
        "quick",
    ]  # no temporary file left


def test_gametes_stop_at_is_the_next_time_the_clock_reads_it():
    """``bench_gametes --stop-at HH:MM`` (UTC): later today, or tomorrow when that time
    of day has passed (a run started at 23:30 with ``--stop-at 00:25`` runs ~55 min,
    it does not stop before its first file); a malformed time is one line."""
    import datetime as dt

    import pytest

    gametes = _load("bench_gametes")
    now = dt.datetime(2026, 11, 30, 23, 30, 5, tzinfo=dt.timezone.utc)
    after_midnight = gametes.stop_deadline("00:25", now=now) - now.timestamp()
    assert after_midnight == 55 * 60 - 5
    assert gametes.stop_deadline("23:45", now=now) - now.timestamp() == 15 * 60 - 5
    with pytest.raises(SystemExit, match="'25' is not a time HH:MM"):
        gametes.stop_deadline("25", now=now)
