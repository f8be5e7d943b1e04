"""Shared fixtures: small datasets with corner rows, and execution modes.

The suite needs only the repository: a test that opens a file beside it (a data
folder next to the clone, another checkout) fails at that ``open``, so a test can
never pass only where such a folder happens to sit.
"""

import os
import sys
import warnings
from pathlib import Path

import dask
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
_BESIDE, _INSIDE = str(REPO.parent) + os.sep, str(REPO) + os.sep


def _no_reads_beside_the_repository(event, args):
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(args[0]))
    if path.startswith(_BESIDE) and not path.startswith(_INSIDE):
        raise PermissionError(f"a test opened {path}, outside the repository; tests use "
                              "only what the repository holds (real data: tests/data/)")


sys.addaudithook(_no_reads_beside_the_repository)


def _with_corner_rows(X, y, rng):
    """Add a constant feature, a duplicated row, and shuffle (as pynndescent adds zero rows)."""
    X = np.column_stack([X, np.full(len(X), 0.5)])
    X = np.vstack([X, X[3]])
    y = np.append(y, y[3])
    order = rng.permutation(len(y))
    return X[order], y[order]


@pytest.fixture(scope="session")
def blobs_binary():
    """60 x 6 binary data: 2 informative features, 3 noise, 1 constant; one duplicate row."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    X = rng.normal(size=(60, 5))
    X[:, 0] += 2.0 * y
    X[:, 1] -= 1.5 * y
    return _with_corner_rows(X, y, rng)


@pytest.fixture(scope="session")
def blobs_multiclass():
    """4 classes (string labels) incl. a one-sample class; 7 features, 1 constant."""
    rng = np.random.default_rng(1)
    y = np.array(["a"] * 25 + ["b"] * 20 + ["c"] * 18 + ["d"])
    centres = {"a": [0, 0, 0], "b": [2.5, 0, 0], "c": [0, 2.5, 1], "d": [1, 1, 1]}
    X = np.column_stack([np.array([centres[c] for c in y]) + rng.normal(size=(len(y), 3)),
                         rng.normal(size=(len(y), 3))])
    return _with_corner_rows(X, y, rng)


@pytest.fixture(scope="session")
def blobs_regression():
    """60 x 6 with a continuous target: 2 informative features, 3 noise, 1 constant;
    one duplicate row."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 5))
    y = 1.5 * X[:, 0] - X[:, 1] ** 2 + 0.3 * rng.normal(size=60)
    return _with_corner_rows(X, y, rng)


def start_local_cluster(n_workers):
    """A LocalCluster of ``n_workers`` processes of one thread, no dashboard."""
    from distributed import LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                            dashboard_address=None)


@pytest.fixture(scope="session")
def local_cluster():
    """A LocalCluster of two worker processes (one thread each), shared by the session."""
    cluster = start_local_cluster(2)
    yield cluster
    cluster.close()


@pytest.fixture
def client(local_cluster):
    """A Client connected to :func:`local_cluster` (and the default scheduler meanwhile)."""
    from distributed import Client

    with Client(local_cluster) as c:
        yield c


@pytest.fixture
def threaded():
    """The threaded dask scheduler."""
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def stir_everywhere(monkeypatch):
    """STIR's p-values on any two-class data: the fit's check of where the law has
    been shown calibrated switched off, for tests of the law's arithmetic."""
    from dmargin import _relief, _surf

    for module in (_relief, _surf):
        monkeypatch.setattr(module, "uncalibrated", lambda *args, **kwargs: None)
