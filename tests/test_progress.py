"""Progress events: one per step of a fit's outer loop, complete at the end."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

import dmargin
from dmargin.progress import ProgressEvent, on_progress


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=80, n_features=6, n_informative=2, random_state=0)


FITS = [
    pytest.param(lambda: dmargin.IRelief(max_iter=50, tol=1e-3), "n_iter_", id="IRelief"),
    pytest.param(lambda: dmargin.Immigrate(max_iter=4), "n_iter_", id="Immigrate"),
    pytest.param(lambda: dmargin.BoostedImmigrate(n_estimators=3, max_iter=2), "n_estimators",
                 id="BIM"),
    pytest.param(lambda: dmargin.SBSMF(2, step=0.25, n_estimators=5), "n_iter_", id="SBSMF"),
    pytest.param(lambda: dmargin.LDMRFE(2, step=2), "n_iter_", id="LDMRFE"),
    pytest.param(lambda: dmargin.OnlineIRelief(n_passes=3, random_state=0), "n_passes_",
                 id="OnlineIRelief"),
]


@pytest.mark.parametrize("make,steps", FITS)
def test_one_event_per_step_and_a_final_one(make, steps, data):
    events = []
    with on_progress(events.append):
        est = make().fit(*data)
    n = getattr(est, steps)
    events = [e for e in events if not e.fraction]  # tile-level moves inside a step aside
    assert [e.done for e in events] == list(range(1, n + 1)) + [n]
    assert {e.estimator for e in events} == {type(est).__name__}  # inner fits stay silent
    assert events[-1].final and events[-1].total == n and events[-1].remaining == 0.0
    assert all(not e.final and e.total >= e.done for e in events[:-1])


def test_an_early_stop_completes_the_count(data):
    events = []
    with on_progress(events.append):
        est = dmargin.IRelief(max_iter=100, tol=1e-2).fit(*data)
    assert est.n_iter_ < 100 and events[-2].total == 100
    assert events[-1].total == events[-1].done == est.n_iter_


def test_no_record_is_made_without_a_listener(data, monkeypatch):
    """Progress costs nothing unless someone listens: no log record is built."""
    from dmargin import progress

    made = []
    monkeypatch.setattr(progress.logger, "debug", lambda *a, **k: made.append(a))
    dmargin.IRelief(max_iter=3, tol=0).fit(*data)
    assert made == []
    with on_progress(lambda event: None):
        dmargin.IRelief(max_iter=3, tol=0).fit(*data)
    assert len(made) == 4  # three steps and the final event


def test_remaining_time_from_the_pace():
    assert ProgressEvent("X", "step", 2, 10, 4.0).remaining == pytest.approx(16.0)
    assert ProgressEvent("X", "step", 0, 10, 0.1).remaining is None


def test_tqdm_bar_follows_the_fit(data, capsys):
    pytest.importorskip("tqdm")
    from dmargin.progress import tqdm_bar

    with tqdm_bar(file=__import__("sys").stderr, ascii=True):
        est = dmargin.IRelief(max_iter=4, tol=0).fit(*data)
    err = capsys.readouterr().err
    assert "IRelief" in err and "4/4" in err and np.all(np.isfinite(est.feature_importances_))


def test_a_long_iteration_reports_its_blocks(data, monkeypatch):
    """In-process, each anchor block of an iteration moves the fraction of the step."""
    from dmargin.engine import grid

    monkeypatch.setattr(grid, "TILE_BUDGET", 8 * 2 * 8 * 20)  # 20 anchor rows a block
    events = []
    with on_progress(events.append):
        est = dmargin.IRelief(max_iter=2, tol=0).fit(*data)
    inside = [e for e in events if e.fraction]
    assert len(inside) == 2 * 3  # 80 rows: 4 blocks, 3 moves before each step completes
    assert [e.fraction for e in inside[:3]] == [0.25, 0.5, 0.75]
    assert all(e.done == 0 for e in inside[:3]) and all(e.done == 1 for e in inside[3:])
    assert inside[0].remaining is not None and est.n_iter_ == 2
