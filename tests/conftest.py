"""Shared fixtures: small datasets with corner rows, and execution modes.

The suite needs only the repository: a test that opens a file beside it (in a
data folder next to the clone, another checkout) fails at that ``open``, so a
test can never pass only where such a folder happens to sit.  What the
interpreter reads is not data and stays open to it wherever it lives, even beside
the clone (a home folder holding the clone, ``~/venv``, ``~/miniconda3``): its
prefixes, ``sys.path``, the folders of imported modules, the temporary folder,
configuration and cache folders (``~/Library`` on macOS, ``%APPDATA%``), and every
hidden entry (``~/.pyenv``, ``~/.local``, ``~/.config``, ...).
"""

import os
import site
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path

import dask
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _absolute(path):
    return os.path.normcase(os.path.abspath(os.fsdecode(path)))


def _spellings(paths):
    """Each path as given and with its links resolved (tests open either)."""
    out = set()
    for path in paths:
        if path:
            out.update({_absolute(path), _absolute(os.path.realpath(os.fsdecode(path)))})
    return out


def _interpreter_roots():
    """The folders the interpreter, its packages and their caches read from."""
    env = (
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONUSERBASE",
        "PYTHONPYCACHEPREFIX",
        "DASK_CONFIG",
        "NUMBA_CACHE_DIR",
        "MPLCONFIGDIR",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "JUPYTER_RUNTIME_DIR",
        "IPYTHONDIR",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        "TMPDIR",
        "TEMP",
        "TMP",
        "APPDATA",
        "LOCALAPPDATA",
    )
    roots = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(sys.executable),
        tempfile.gettempdir(),
        site.USER_BASE,
        site.getusersitepackages(),
        *site.getsitepackages(),
        *sysconfig.get_paths().values(),
        *(os.environ.get(name) for name in env),
        os.path.join(os.path.expanduser("~"), "Library"),
    ]  # macOS caches and settings
    return _spellings(p for p in roots if isinstance(p, (str, bytes, os.PathLike)))


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class _Guard:
    """The audit hook: refuse an ``open`` of a file beside the repository.

    Beside means ``<parent>/<name>`` or under it, where ``<name>`` is a visible
    entry that is not the repository; anything the interpreter reads (see the
    module docstring) is let through even there.
    """

    def __init__(self, repo):
        # A clone at the top of the file system has the whole system beside it.
        parent = Path(repo).parent
        self.parents = set() if parent.parent == parent else _spellings([parent])
        self.repos = _spellings([repo])
        # A folder above the parent (``/tmp`` for a clone in a temporary folder) would
        # let everything through: the parent itself (a clone in ``/tmp``) does.
        self.roots = {
            root
            for root in _interpreter_roots()
            if not any(_within(p, root) and p != root for p in self.parents)
        }

    def beside(self, path):
        """The entry beside the repository that ``path`` is or lies in, or None."""
        for parent in self.parents:
            prefix = parent.rstrip(os.sep) + os.sep
            if path.startswith(prefix):
                entry = prefix + path[len(prefix) :].partition(os.sep)[0]
                if (
                    entry != prefix
                    and not os.path.basename(entry).startswith(".")
                    and entry not in self.repos
                ):
                    return entry
        return None

    def allowed(self, path):
        """Whether the interpreter reads ``path`` (looked up only for a path beside)."""
        if any(_within(path, root) for root in self.roots):
            return True
        roots = _spellings(p for p in sys.path if isinstance(p, str) and p)
        for module in list(sys.modules.values()):
            # The module's own dict: a module-level __getattr__ could open files here.
            spec = getattr(module, "__dict__", {}).get("__spec__")
            origin = getattr(spec, "origin", None)
            if isinstance(origin, str) and os.path.isabs(origin):
                roots.add(_absolute(os.path.dirname(origin)))
            for folder in getattr(spec, "submodule_search_locations", None) or ():
                if isinstance(folder, str):
                    roots.add(_absolute(folder))
        # A script run from the folder above (its sys.path entry) opens nothing beside.
        return any(
            _within(path, root)
            for root in roots
            if not any(_within(parent, root) for parent in self.parents)
        )

    def __call__(self, event, args):
        if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = _absolute(args[0])
        entry = self.beside(path)
        if entry is not None and not self.allowed(path):
            raise PermissionError(
                f"a test opened {path}, outside the repository ({entry} is beside it); "
                "tests use only what the repository holds (real data: tests/data/)"
            )


sys.addaudithook(_Guard(REPO))


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
    X = np.column_stack(
        [
            np.array([centres[c] for c in y]) + rng.normal(size=(len(y), 3)),
            rng.normal(size=(len(y), 3)),
        ]
    )
    return _with_corner_rows(X, y, rng)


@pytest.fixture(scope="session")
def blobs_regression():
    """60 x 6 with a continuous target: 2 informative features, 3 noise, 1 constant;
    one duplicate row."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 5))
    y = 1.5 * X[:, 0] - X[:, 1] ** 2 + 0.3 * rng.normal(size=60)
    return _with_corner_rows(X, y, rng)


@pytest.fixture(scope="session")
def status_frame():
    """120 rows, 5 features (``signal`` informative), string labels in ``status``:
    the command line's data."""
    import pandas as pd

    rng = np.random.default_rng(0)
    y = np.where(rng.random(120) < 0.5, "case", "control")
    X = rng.normal(size=(120, 5))
    X[:, 2] += 2.5 * (y == "case")
    return pd.DataFrame(X, columns=["a", "b", "signal", "d", "e"]).assign(status=y)


@pytest.fixture(scope="session")
def status_csv(status_frame, tmp_path_factory):
    """:func:`status_frame` as a CSV file."""
    path = tmp_path_factory.mktemp("cli") / "data.csv"
    status_frame.to_csv(path, index=False)
    return path


def start_local_cluster(n_workers):
    """A LocalCluster of ``n_workers`` processes of one thread, no dashboard."""
    from distributed import LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        )


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


def _spark_missing():
    """Why a local SparkSession cannot start here, or ``None``."""
    import shutil

    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed: pip install 'dmargin[spark]' (or the test extra)"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime: install Java 17 or newer (Debian: apt install openjdk-17-jre)"
    return None


@pytest.fixture(scope="session")
def spark():
    """A local SparkSession of two cores (``local[2,3]``: a failed task is retried,
    as on a cluster), shared by the session; a clear skip without Java or pyspark."""
    missing = _spark_missing()
    if missing:
        pytest.skip(missing)
    from dmargin.spark import local_session

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = local_session("local[2,3]")
    yield session
    session.stop()


@pytest.fixture
def threaded():
    """The threaded dask scheduler."""
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def stir_everywhere(monkeypatch):
    """STIR's p-values on any two-class data: the fit's check of where the law has
    been shown calibrated, and its decline once a feature carries signal, switched
    off, for tests of the law's arithmetic."""
    from dmargin import _pvalues
    from dmargin.relief import _relief
    from dmargin.surf import _surf

    for module in (_relief, _surf):
        monkeypatch.setattr(module, "uncalibrated", lambda *args, **kwargs: None)
    monkeypatch.setattr(_pvalues, "signal_found", lambda *args, **kwargs: None)
