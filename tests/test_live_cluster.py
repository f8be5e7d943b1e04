"""A real cluster started from the command line, as a user or a deployment would.

``dask scheduler`` and two ``dask worker`` processes (one thread each) on
loopback, found through a scheduler file; fits through
``Client(scheduler_file=...)`` must equal the in-process fits to 1e-10 and
their tile tasks must have run on the workers.  One test kills a worker
while it runs tile tasks: the fit must finish with the same result.

The helpers here (:class:`CliCluster`) are reused by ``test_deploy.py``.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

from dmargin import LDMRFE, SBSMF
from dmargin.immigrate._immigrate import Immigrate
from dmargin.io._parquet import read_parquet
from dmargin.irelief._irelief import IRelief
from dmargin.relief._relief import ReliefF

from .test_modes import assert_estimator_equal

DASK = Path(sys.executable).parent / "dask"
REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.cluster


def _env():
    env = dict(os.environ)
    # Workers import the dmargin under test; one thread per process each.
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NUMBA_NUM_THREADS="1",
        DASK_DISTRIBUTED__ADMIN__TICK__LIMIT="10s",
    )
    return env


class CliCluster:
    """Processes started from command lines; always terminated on exit.

    ``CliCluster(tmp).start(argv, name)`` launches one process with its
    output in ``tmp/name.log``; leaving the ``with`` block sends SIGTERM,
    then SIGKILL after a grace period, to every process still running.
    """

    def __init__(self, workdir, env=None):
        self.workdir = Path(workdir)
        self.env = _env() if env is None else env
        self.procs = {}

    def start(self, argv, name):
        with open(self.workdir / f"{name}.log", "wb") as log:  # the child keeps its own fd
            proc = subprocess.Popen(
                [str(a) for a in argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=self.env,
                start_new_session=True,
            )
        self.procs[name] = proc
        return proc

    def log(self, name):
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    def wait_for_file(self, path, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not Path(path).exists() or Path(path).stat().st_size == 0:
            dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
            if dead:
                raise RuntimeError(
                    f"processes exited early {dead}:\n"
                    + "\n".join(self.log(n)[-2000:] for n in dead)
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not appear within {timeout} s")
            time.sleep(0.05)
        time.sleep(0.1)  # the file is written in one go, but let the writer close it

    def close(self, grace=5.0):
        """Workers before the scheduler (they exit cleanly while it still answers)."""
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def start_cli_cluster(cluster, n_workers=2, nanny=False, extra=()):
    """``dask scheduler`` + ``n_workers`` ``dask worker`` on loopback, free ports."""
    sched_file = cluster.workdir / "scheduler.json"
    cluster.start(
        [
            DASK,
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            sched_file,
            *extra,
        ],
        "scheduler",
    )
    cluster.wait_for_file(sched_file)
    for i in range(n_workers):
        start_worker(cluster, sched_file, f"w{i}", nanny, extra)
    return sched_file


def start_worker(cluster, sched_file, name, nanny=False, extra=()):
    """One ``dask worker`` (no nanny: the process handle is the worker itself)."""
    return cluster.start(
        [
            DASK,
            "worker",
            "--scheduler-file",
            sched_file,
            "--host",
            "127.0.0.1",
            "--nthreads",
            "1",
            "--name",
            name,
            "--no-dashboard",
            "--nanny" if nanny else "--no-nanny",
            "--death-timeout",
            "60",
            "--local-directory",
            cluster.workdir / name,
            *extra,
        ],
        name,
    )


def connect(sched_file, n_workers, **kwargs):
    from distributed import Client

    kwargs.setdefault("set_as_default", False)  # in-process fits stay in-process
    client = Client(scheduler_file=str(sched_file), timeout="30s", **kwargs)
    client.wait_for_workers(n_workers, timeout=60)
    return client


def worker_addresses(client):
    """``{name: address}`` of the connected workers."""
    return {w["name"]: addr for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()}


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """``(cluster, client)``: a scheduler and two workers started by the ``dask`` command."""
    with CliCluster(tmp_path_factory.mktemp("cli-cluster")) as cluster:
        sched_file = start_cli_cluster(cluster)
        with connect(sched_file, 2) as client:
            yield cluster, client


@pytest.fixture
def cli_client(cli):
    return cli[1]


def as_dask(X, y, rows=16):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


ESTIMATORS = [
    pytest.param(lambda: IRelief(max_iter=5, tol=0), id="IRelief"),
    pytest.param(lambda: ReliefF(n_neighbors=4), id="ReliefF"),
    pytest.param(lambda: Immigrate(max_iter=3, tol=0), id="Immigrate"),
]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_cli_cluster_equals_in_process(make, blobs_multiclass, cli_client):
    from distributed import get_task_stream

    X, y = blobs_multiclass
    local = make().fit(X, y)  # in-process: the client is not the default here
    workers = set(worker_addresses(cli_client).values())
    with cli_client.as_current(), get_task_stream(cli_client) as stream:
        remote = make().fit(*as_dask(X, y))
    assert_estimator_equal(local, remote)
    tile_workers = {t["worker"] for t in stream.data if "dmargin-" in str(t["key"])}
    # On the workers, not in this process.  Which workers is the scheduler's choice: under
    # load it may keep a short fit's blocks (and so its tiles) on one of them.
    assert tile_workers and tile_workers <= workers, (
        f"tile tasks ran on {tile_workers}, not on the workers {workers}"
    )


def test_parquet_read_by_the_workers(tmp_path, blobs_binary, cli_client):
    """The workers open the Parquet files themselves (absolute paths)."""
    import pandas as pd
    from distributed import get_task_stream

    X, y = blobs_binary
    pd.DataFrame(X).rename(columns=str).assign(label=y).to_parquet(
        tmp_path / "d.parquet", row_group_size=10
    )
    local = IRelief(max_iter=4, tol=0).fit(X, y)
    with cli_client.as_current(), get_task_stream(cli_client) as stream:
        Xd, yd = read_parquet(tmp_path / "d.parquet", "label")
        remote = IRelief(max_iter=4, tol=0).fit(Xd, yd)
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
    readers = {t["worker"] for t in stream.data if "read-parquet" in str(t["key"])}
    assert readers and readers <= set(worker_addresses(cli_client).values())


def test_fit_survives_a_killed_worker(cli):
    """SIGKILL a worker while it runs tile tasks; the scheduler reruns its work.

    Uses the module's warm workers (the kernels are loaded) and starts a
    replacement worker afterwards, so the cluster is whole again.
    """
    from distributed import get_task_stream

    cluster, client = cli
    rng = np.random.default_rng(5)
    n, a = 1200, 40
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, a))
    X[:, :3] += y[:, None]
    make = lambda: IRelief(max_iter=20, tol=0, sigma=2.0)
    Xd, yd = da.from_array(X, chunks=(200, a)), da.from_array(y, chunks=200)
    victim = worker_addresses(client)["w1"]
    result, error = {}, []

    def fit():
        try:
            with client.as_current():
                result["est"] = make().fit(Xd, yd)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            error.append(e)

    with get_task_stream(client) as stream:
        thread = threading.Thread(target=fit)
        thread.start()
        deadline = time.monotonic() + 60
        while True:  # until the victim is seen running tile tasks
            busy = client.processing(workers=[victim]).get(victim, ())
            if any("dmargin-lse" in str(k) for k in busy):
                break
            assert thread.is_alive() and time.monotonic() < deadline, (
                "the fit ended before tile tasks were seen on the victim"
            )
            time.sleep(0.005)
        cluster.procs["w1"].kill()
        cluster.procs["w1"].wait(10)
        thread.join(120)
    assert not thread.is_alive(), "the fit did not finish after the worker died"
    assert not error, error
    survivors = set(worker_addresses(client).values())
    assert victim not in survivors and len(survivors) == 1
    after = {t["worker"] for t in stream.data if "dmargin-lse" in str(t["key"])}
    assert survivors <= after
    assert_estimator_equal(make().fit(X, y), result["est"])
    # A replacement, for any test that runs later in this module.
    cluster.procs.pop("w1")
    start_worker(cluster, cluster.workdir / "scheduler.json", "w1")
    client.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: SBSMF(2, n_estimators=20), id="SBSMF"),
        pytest.param(lambda: LDMRFE(2), id="LDMRFE"),
    ],
)
def test_cli_cluster_eliminations_equal_in_process(make, blobs_binary, cli_client):
    """SBS-MF's stump histograms and LDM-RFE's S(j) pass on the command-line cluster."""
    from distributed import get_task_stream

    X, y = blobs_binary
    local = make().fit(X, y)
    workers = set(worker_addresses(cli_client).values())
    with cli_client.as_current(), get_task_stream(cli_client) as stream:
        remote = make().fit(*as_dask(X, y))
    np.testing.assert_array_equal(remote.ranking_, local.ranking_)
    np.testing.assert_array_equal(remote.support_, local.support_)
    tile_workers = {t["worker"] for t in stream.data if "dmargin-" in str(t["key"])}
    assert tile_workers and tile_workers <= workers, (
        f"tasks ran on {tile_workers}, not on the workers {workers}"
    )
