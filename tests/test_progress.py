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
    pytest.param(
        lambda: dmargin.BoostedImmigrate(n_estimators=3, max_iter=2), "n_estimators", id="BIM"
    ),
    pytest.param(lambda: dmargin.SBSMF(2, step=0.25, n_estimators=5), "n_iter_", id="SBSMF"),
    pytest.param(lambda: dmargin.LDMRFE(2, step=2), "n_iter_", id="LDMRFE"),
    pytest.param(
        lambda: dmargin.OnlineIRelief(n_passes=3, random_state=0), "n_passes_", id="OnlineIRelief"
    ),
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


# -- progress early and often on a big exact fit ---------------------------------------


def test_a_big_exact_pass_is_cut_into_tiles_of_seconds():
    """200,000 x 41 exact I-RELIEF in-process: the memory budget alone made 3 anchor
    blocks, so the first move of an iteration came after a third of it (minutes)."""
    from dmargin.engine import grid
    from dmargin.engine.execution import Rows

    n, a = 200_000, 41
    rows = Rows(
        np.broadcast_to(np.zeros(1), (n, a)), np.zeros(n, dtype=np.int64), 2, False, [(0, n)]
    )
    g = grid.graph(rows, "lse", per_row=2 * (a + 2))
    sizes = [stop - start for start, stop in g.anchors]
    assert len(sizes) >= 100 and sum(sizes) == n
    assert max(sizes) * n * a <= max(grid.TILE_WORK, grid.MIN_TILE_ANCHORS * n * a)
    small = Rows(
        np.broadcast_to(np.zeros(1), (300, a)), np.zeros(300, dtype=np.int64), 2, False, [(0, 300)]
    )
    assert len(grid.graph(small, "lse", per_row=2 * (a + 2)).anchors) == 1  # small: one tile


def test_a_big_dask_row_block_is_cut_into_tiles_of_seconds():
    """On dask the anchor blocks were the row blocks: 100,000-row blocks made tiles of
    minutes.  Now slices of them, within their block, in order."""
    import dask.array as da

    from dmargin.engine import grid
    from dmargin.engine.execution import Rows

    n, a = 200_000, 41
    X = da.zeros((n, a), chunks=(100_000, a))
    rows = Rows(
        X, da.zeros(n, chunks=100_000, dtype=np.int64), 2, True, [(0, 100_000), (100_000, n)]
    )
    g = grid.graph(rows, "lse", per_row=2 * (a + 2))
    assert len(g.anchors) >= 100 and g.anchors[0][0] == 0 and g.anchors[-1][1] == n
    assert all(e == s for (_, e), (s, _) in zip(g.anchors, g.anchors[1:]))
    assert not any(s < 100_000 < e for s, e in g.anchors)  # never across two blocks
    assert all((e - s) * 100_000 * a <= grid.TILE_WORK for s, e in g.anchors)


def test_a_sample_on_many_dask_row_blocks_is_one_tile_per_block():
    """1,000 sampled anchors against 100,000 x 51 dask rows in 10 blocks were two tiles
    a block (at most 784 anchors each), and the second tile of a block often ran on
    the other worker, its 40 MB block copied there.  Now one tile a block; with
    fewer blocks than :data:`grid.MIN_ROW_BLOCKS` the anchors still make the tasks."""
    import dask.array as da

    from dmargin.engine import grid
    from dmargin.engine.execution import Anchors, Rows

    a, m = 51, 1000
    sample = Anchors(np.zeros((m, a)), np.zeros(m, dtype=np.int64), np.arange(m))

    def anchor_blocks(n_blocks):
        n = n_blocks * 100_000
        bounds = [(s, s + 100_000) for s in range(0, n, 100_000)]
        X = da.zeros((n, a), chunks=(100_000, a))
        rows = Rows(X, da.zeros(n, chunks=100_000, dtype=np.int64), 2, True, bounds)
        return grid.graph(rows, "knn", per_row=2 * 10 * (a + 2), sample=sample).anchors

    assert anchor_blocks(10) == [(0, m)]
    assert anchor_blocks(grid.MIN_ROW_BLOCKS) == [(0, m)]
    assert anchor_blocks(grid.MIN_ROW_BLOCKS - 1) == [(0, 500), (500, m)]


def test_a_sample_in_one_tile_a_block_changes_no_result(monkeypatch):
    """ReliefF and I-RELIEF with sampled anchors on 8 dask row blocks: the same
    scores whether each block's anchors are one tile or cut into four."""
    import dask
    import dask.array as da

    from dmargin.engine import grid

    X, y = make_classification(n_samples=1600, n_features=8, random_state=2)
    X, y = da.from_array(X, chunks=(200, 8)), da.from_array(y, chunks=200)
    fits = {
        "relieff": lambda: dmargin.ReliefF(n_anchors=400, random_state=0),
        "irelief": lambda: dmargin.IRelief(n_anchors=400, max_iter=3, tol=0, random_state=0),
    }
    with dask.config.set(scheduler="threads"):
        whole = {k: f().fit(X, y).feature_importances_ for k, f in fits.items()}
        blocks = []
        graph = grid.graph

        def counted(*args, **kwargs):
            g = graph(*args, **kwargs)
            blocks.append(len(g.anchors))
            return g

        monkeypatch.setattr(grid, "graph", counted)
        monkeypatch.setattr(grid, "DASK_SAMPLE_TILE_WORK", 100 * 200 * 8)
        monkeypatch.setattr(grid, "MIN_TILE_ANCHORS", 1)
        cut = {k: f().fit(X, y).feature_importances_ for k, f in fits.items()}
    assert blocks and min(blocks) == 4  # 400 anchors in blocks of 100
    for k in fits:
        assert np.abs(cut[k] - whole[k]).max() < 1e-12, k


@pytest.mark.parametrize("scheduler", ["in-process", "threads"])
def test_cut_tiles_change_no_result(monkeypatch, scheduler):
    """The same scores from long tiles and from their slices (in-process and on dask)."""
    import dask
    import dask.array as da

    from dmargin.engine import grid

    X, y = make_classification(n_samples=1200, n_features=8, random_state=1)
    if scheduler == "threads":
        X, y = da.from_array(X, chunks=(600, 8)), da.from_array(y, chunks=600)
    with dask.config.set(scheduler="threads"):
        whole = dmargin.IRelief(max_iter=3, tol=0).fit(X, y).feature_importances_
        knn = dmargin.ReliefF().fit(X, y).feature_importances_
        monkeypatch.setattr(grid, "TILE_WORK", 150 * 1200 * 8)
        monkeypatch.setattr(grid, "MIN_TILE_ANCHORS", 1)
        events = []
        with on_progress(events.append):
            cut = dmargin.IRelief(max_iter=3, tol=0).fit(X, y).feature_importances_
        assert np.abs(cut - whole).max() < 1e-12
        assert np.abs(dmargin.ReliefF().fit(X, y).feature_importances_ - knn).max() < 1e-12
    first = [e.fraction for e in events if e.done == 0]
    assert len(first) >= 7  # 8 (in-process) or 16 (2 row blocks, 4 slices each x 2) tiles


def test_the_first_move_comes_before_the_first_iteration_ends(monkeypatch):
    """Tiles bounded by their work (scaled down here): the first event of a multi-block
    exact fit is a fraction of its first iteration."""
    from dmargin.engine import grid

    X, y = make_classification(n_samples=2000, n_features=10, random_state=0)
    monkeypatch.setattr(grid, "TILE_WORK", 500 * 2000 * 10)
    monkeypatch.setattr(grid, "MIN_TILE_ANCHORS", 1)
    events = []
    with on_progress(events.append):
        dmargin.IRelief(max_iter=1, tol=0).fit(X, y)
    assert events[0].done == 0 and events[0].fraction == 0.25
    assert [e.fraction for e in events[:3]] == [0.25, 0.5, 0.75]
    assert events[3].done == 1 and not events[3].fraction  # then the iteration ends


def test_a_tile_is_reported_before_the_next_one_runs(monkeypatch):
    """The engine reports each tile as it finishes, not the level's tiles together
    at its end: the second tile waits until the first one's fraction has arrived."""
    import threading

    from dmargin.engine import grid, neighbours

    X, y = make_classification(n_samples=2000, n_features=10, random_state=0)
    monkeypatch.setattr(grid, "TILE_WORK", 500 * 2000 * 10)
    monkeypatch.setattr(grid, "MIN_TILE_ANCHORS", 1)
    reported, started, late = threading.Event(), [], []
    tile = neighbours.tile

    def waiting_tile(*args):
        started.append(1)
        if len(started) == 2 and not reported.wait(timeout=20):
            late.append("the first tile was not reported before the second ran")
        return tile(*args)

    monkeypatch.setattr(neighbours, "tile", waiting_tile)
    with on_progress(lambda e: e.fraction and reported.set()):
        dmargin.IRelief(max_iter=1, tol=0).fit(X, y)
    assert len(started) == 4 and late == []


def test_the_cli_bar_shows_the_first_move_at_once():
    import io

    from dmargin.cli import _Bar

    out = io.StringIO()
    bar = _Bar(out)
    bar(ProgressEvent("IRelief", "iteration", 0, 50, 1.5, fraction=0.01))
    bar(ProgressEvent("IRelief", "iteration", 0, 50, 3.0, fraction=0.02))  # within 10 s
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "0/<=50 iterations (+1% of the next)" in lines[0]


# -- time left from the measured convergence -------------------------------------------


def test_expected_steps_follow_a_geometric_decay():
    from dmargin.progress import expected_steps

    # 1, 0.5, 0.25: ratio 0.5; 0.25 -> below 1e-3 after ceil(log2(250)) = 8 more steps.
    assert expected_steps([1.0, 0.5, 0.25], 1e-3, 3, 100) == 11
    assert expected_steps([1.0, 0.5, 0.25], 1e-3, 3, 5) == 5  # never past the cap
    assert expected_steps([1.0], 1e-3, 1, 100) is None  # one change: no rate yet
    assert expected_steps([1.0, 0.5], 0.0, 2, 100) is None  # tol=0: every iteration runs
    assert expected_steps([0.5, 0.6], 1e-3, 2, 100) is None  # not converging
    assert expected_steps([0.5, 1e-4], 1e-3, 2, 100) == 2  # below tol: it stops here


def test_time_left_comes_from_the_convergence_not_the_cap(data):
    """I-RELIEF converging in a few iterations of 100: after its second iteration the
    time left counts to the expected stop, far below the cap's."""
    events = []
    with on_progress(events.append):
        est = dmargin.IRelief(max_iter=100, tol=1e-3).fit(*data)
    assert est.n_iter_ < 20
    steps = [e for e in events if not e.fraction and not e.final and e.done >= 2]
    assert steps and all(e.expected is not None and e.expected < 30 for e in steps)
    for e in steps:
        at_the_cap = e.elapsed / e.done * (e.total - e.done)
        assert e.total == 100 and e.remaining < at_the_cap / 3
    first = next(e for e in events if not e.fraction)
    assert first.expected is None  # one change says nothing: the cap
    assert first.remaining == pytest.approx(first.elapsed * 99)


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.IM4E(max_iter=100, tol=1e-4),
        lambda: dmargin.Immigrate(max_iter=100, tol=1e-4),
    ],
    ids=["IM4E", "Immigrate"],
)
def test_the_other_converging_fits_report_it_too(data, make):
    events = []
    with on_progress(events.append):
        est = make().fit(*data)
    steps = [e for e in events if not e.fraction and not e.final]
    n = est.n_iter_
    assert 3 <= n < 100 and steps[0].expected is None
    assert all(e.expected is not None for e in steps[1:])
    # from a quarter of the way on, the expected count is within half of the real one
    assert all(abs(e.expected - n) <= n / 2 for e in steps[1:] if e.done >= n / 4)


# -- the notebook bar by default --------------------------------------------------------


def _fake_cost(seconds):
    from dmargin import FitCost

    return lambda estimator, n, a: FitCost(1.0, seconds, "mocked")


@pytest.mark.parametrize("seconds,shown", [(3600.0, True), (5.0, False)])
def test_a_notebook_draws_a_bar_for_a_long_fit_only(data, capsys, monkeypatch, seconds, shown):
    pytest.importorskip("tqdm")
    from dmargin import _cost, progress

    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(_cost, "fit_cost", _fake_cost(seconds))
    monkeypatch.setattr(_cost, "LONG_FIT_SECONDS", float("inf"))
    dmargin.IRelief(max_iter=3, tol=0).fit(*data)
    err = capsys.readouterr().err
    assert ("IRelief" in err and "3/3" in err) == shown


def test_the_notebook_bar_has_an_off_switch(data, capsys, monkeypatch):
    pytest.importorskip("tqdm")
    from dmargin import _cost, progress

    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(_cost, "fit_cost", _fake_cost(3600.0))
    monkeypatch.setattr(_cost, "LONG_FIT_SECONDS", float("inf"))
    before = progress.set_auto_bar(False)
    try:
        dmargin.IRelief(max_iter=3, tol=0).fit(*data)
    finally:
        progress.set_auto_bar(before)
    assert "IRelief" not in capsys.readouterr().err
    # outside a notebook: no bar either
    monkeypatch.setattr(progress, "in_notebook", lambda: False)
    dmargin.IRelief(max_iter=3, tol=0).fit(*data)
    assert "IRelief" not in capsys.readouterr().err


def test_the_environment_variable_turns_the_default_off():
    import subprocess
    import sys

    code = "import dmargin.progress as p; print(p.set_auto_bar(True))"
    env = {**__import__("os").environ, "DMARGIN_PROGRESS": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_notebook_detection_outside_a_kernel():
    from dmargin.progress import in_notebook

    assert in_notebook() is False


@pytest.mark.slow
def test_a_real_kernel_is_a_notebook_and_draws_the_bar(tmp_path):
    """In a Jupyter kernel (nbclient): detected, and a fit estimated long draws its bar
    by itself; a short one draws nothing."""
    pytest.importorskip("tqdm")
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    cells = [
        "import dmargin, dmargin._cost as cost\n"
        "from dmargin.progress import in_notebook\n"
        "from sklearn.datasets import make_classification\n"
        "X, y = make_classification(n_samples=60, n_features=4, random_state=0)\n"
        "print('notebook:', in_notebook())",
        "_ = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)",  # estimated at well under 30 s
        "cost.fit_cost = lambda est, n, a: dmargin.FitCost(1.0, 3600.0, 'as if an hour')\n"
        "cost.LONG_FIT_SECONDS = float('inf')\n"
        "_ = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()

    def shown(cell):
        return "".join(o.get("text", "") + str(o.get("data", {})) for o in cell.get("outputs", []))

    assert "notebook: True" in shown(nb.cells[0])
    assert "IRelief" not in shown(nb.cells[1])
    assert "IRelief" in shown(nb.cells[2]) and "3/3" in shown(nb.cells[2])


def test_without_tqdm_a_notebook_fit_draws_nothing(data, monkeypatch, capsys):
    import sys

    from dmargin import _cost, progress

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(_cost, "fit_cost", _fake_cost(3600.0))
    monkeypatch.setattr(_cost, "LONG_FIT_SECONDS", float("inf"))
    est = dmargin.IRelief(max_iter=3, tol=0).fit(*data)
    assert est.n_iter_ == 3 and "IRelief" not in capsys.readouterr().err
