"""The recipe for a new tile kernel (``docs/contributing/how_it_works.md``): the kernel,
its statistic and its test -- here all three in this one file, nothing registered.

A tile kernel is a numba function ``kernel(Xa, ia, Xc, yc, ic, *params)`` of an
anchor block against a candidate block (``ia``, ``ic`` their global row indices:
a row is never its own candidate), compiled as a :class:`dmargin.engine.TileKernel`
that carries its serial and threaded twins, the cost of a step and the named
tuple its partials are read as.  Its statistic hands the object itself to the grid
runner (:func:`dmargin.engine.grid.ordered` with the generic tile task
:func:`dmargin.engine.neighbours.tile`), merges the tiles' partials and reduces
each anchor block where it is: no table of kernels by name, no cost table, no
special case.  Here: per class, the rows within an L1 ``radius`` of each anchor and
their distances, summed over the anchors -- run in-process (threaded kernel) and
on threaded dask (row blocks, serial kernel), against brute-force numpy to 1e-10.
"""

import ast
import inspect
import textwrap
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np
import pytest

import dmargin.engine
from dmargin.engine import TileKernel, grid, merge, neighbours, prepare_rows

# -- 1. the kernel: arrays in, a named partial out ---------------------------------------


class Ball(NamedTuple):
    """Per anchor and class of the candidates ``(anchors, classes)``."""

    #: The candidates within the radius.
    count: np.ndarray
    #: Their distances, summed.
    total: np.ndarray


def _ball_tile(Xa, ia, Xc, yc, ic, n_classes, radius):
    n_a, n_features = Xa.shape
    count = np.zeros((n_a, n_classes))
    total = np.zeros((n_a, n_classes))
    for a in numba.prange(n_a):
        for j in range(Xc.shape[0]):
            if ic[j] == ia[a]:
                continue
            d = 0.0
            for f in range(n_features):
                d += abs(Xa[a, f] - Xc[j, f])
            if d < radius:
                count[a, yc[j]] += 1.0
                total[a, yc[j]] += d
    return count, total


BALL = TileKernel.compile(_ball_tile, cost=1.0, partial=Ball)


# -- 2. its statistic: the grid runner, a merge, a reduction ---------------------------


def ball_combine(parts):
    """Partials of one anchor block over disjoint candidate blocks add."""
    return Ball(
        merge.add([p.count for p in parts]),
        merge.add([p.total for p in parts]),
    )


def _per_class(partial):
    return np.stack([partial.count.sum(axis=0), partial.total.sum(axis=0)])


def ball_statistic(rows, radius):
    """``(2, classes)``: per class, the (anchor, row) pairs within ``radius`` and
    their distances' sum, every row an anchor."""
    k = rows.n_classes
    g = grid.graph(rows, "ball", per_row=2 * k)
    merged = grid.ordered(g, neighbours.tile, BALL, g.local, k, float(radius), combine=ball_combine)
    shares = [g.add("per-class", _per_class, m) for m in merged]
    return grid.run(g, g.tree(shares, merge.add, "total"))


# -- 3. its test ---------------------------------------------------------------------


def _brute(X, y, k, radius):
    D = np.abs(X[:, None, :] - X[None, :, :]).sum(axis=2)
    np.fill_diagonal(D, np.inf)
    within = D < radius
    out = np.zeros((2, k))
    for c in range(k):
        out[0, c] = within[:, y == c].sum()
        out[1, c] = np.where(within, D, 0.0)[:, y == c].sum()
    return out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.random((90, 5))
    y = rng.integers(0, 3, 90)
    return X, y, 3, 1.6


def test_the_new_kernel_runs_in_process_against_brute_force(data, monkeypatch):
    X, y, k, radius = data
    want = _brute(X, y, k, radius)
    # One anchor block, then several (a budget of 7 anchors a block).
    np.testing.assert_allclose(ball_statistic(prepare_rows(X, y, k), radius), want, rtol=1e-10)
    monkeypatch.setattr(grid, "TILE_BUDGET", 7 * 8 * 2 * k)
    got = ball_statistic(prepare_rows(X, y, k), radius)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # The threaded twin, as a large in-process tile would pick it.
    Xc = np.ascontiguousarray(X)
    ia = np.arange(90)
    for twin in (BALL.serial, BALL.threaded):
        count, total = twin(Xc, ia, Xc, y, ia, k, radius)
        np.testing.assert_allclose(_per_class(Ball(count, total)), want, rtol=1e-10)


@pytest.mark.parametrize("block", [11, 30, 90])
def test_the_new_kernel_runs_on_threaded_dask_against_brute_force(data, block):
    import dask
    import dask.array as da

    X, y, k, radius = data
    with dask.config.set(scheduler="threads"):
        rows = prepare_rows(da.from_array(X, chunks=(block, -1)), da.from_array(y, chunks=block), k)
        got = ball_statistic(rows, radius)
    np.testing.assert_allclose(got, _brute(X, y, k, radius), rtol=1e-10)


def _is_kernel(value):
    twins = isinstance(value, tuple) and any(hasattr(v, "py_func") for v in value)
    return isinstance(value, TileKernel) or twins


#: Where a new tile kernel lives: its kernel module, its statistic's module, its test.
MOST_FILES = 3


def test_a_new_kernel_is_three_files_at_most_and_registers_nothing():
    # The recipe's pieces and the files they are in: this one (in the library, the
    # kernel goes to engine/kernels/<family>.py, its statistic to engine/<family>.py).
    pieces = (Ball, _ball_tile, BALL.serial.py_func, ball_combine, ball_statistic, _brute)
    files = {Path(inspect.getsourcefile(p)) for p in pieces}
    assert files == {Path(__file__)} and len(files) <= MOST_FILES
    # Nothing in the engine keys kernels or their costs by name: no module-level table
    # holds a kernel, and the generic tile reads everything from the object it gets.
    for module in (dmargin.engine.neighbours, dmargin.engine.quadratic, dmargin.engine.thresholds):
        for name, value in vars(module).items():
            if isinstance(value, dict):
                assert not any(_is_kernel(v) for v in value.values()), (
                    f"{module.__name__}.{name} is a table of kernels"
                )
    tree = ast.parse(textwrap.dedent(inspect.getsource(neighbours.tile)))
    named = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Compare)
        and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in n.comparators)
    ]
    assert not named, f"the tile task special-cases kernels by name: {named}"
    # The kernel is reached by this file only.
    assert all(v is not BALL for m in (neighbours, grid) for v in vars(m).values())
