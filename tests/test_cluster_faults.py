"""Cluster faults end, with a message that says what happened and how to resume.

- every worker killed mid-fit: :class:`dmargin._cluster.ClusterStalledError`
  within ``dmargin.stall-timeout``; a refit on new workers gives the
  in-process result;
- worker memory limits below what the fit holds: an error before anything is
  submitted, naming the memory needed;
- a read-ahead thread computes on the client made current by
  ``client.as_current()``.
"""

import threading
import time
import warnings

import dask
import dask.array as da
import numpy as np
import pytest

from dmargin import IRelief, OnlineIRelief

# _stall_message: the paused-workers text needs a scheduler state no test cluster reaches
from dmargin._cluster import ClusterStalledError, WorkerMemoryError, _stall_message, stall_timeout

from .test_live_cluster import CliCluster, connect, start_cli_cluster, start_worker
from .test_modes import assert_estimator_equal

pytestmark = pytest.mark.cluster


def _data(n=1200, a=40, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, a))
    X[:, :3] += y[:, None]
    return X, y


def test_default_stall_timeout_is_at_most_a_minute():
    assert stall_timeout() == 60.0
    with dask.config.set({"dmargin.stall-timeout": "5s"}):
        assert stall_timeout() == 5.0


def test_all_workers_lost_ends_with_a_clear_error_and_a_refit_resumes(tmp_path):
    X, y = _data()
    make = lambda: IRelief(max_iter=300, tol=0, sigma=2.0)  # noqa: E731 - longer than the test
    with CliCluster(tmp_path) as cluster:
        sched_file = start_cli_cluster(cluster)
        with connect(sched_file, 2) as client, dask.config.set({"dmargin.stall-timeout": "4s"}):
            Xd, yd = da.from_array(X, chunks=(200, 40)), da.from_array(y, chunks=200)
            outcome = {}

            def fit():
                try:
                    with client.as_current(), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        make().fit(Xd, yd)
                    outcome["error"] = None
                except Exception as exc:  # noqa: BLE001 - inspected below
                    outcome["error"] = exc

            thread = threading.Thread(target=fit, daemon=True)
            thread.start()
            deadline = time.monotonic() + 60
            while not any(
                "dmargin-lse" in str(k) for keys in client.processing().values() for k in keys
            ):
                assert thread.is_alive() and time.monotonic() < deadline, outcome
                time.sleep(0.01)
            for name in ("w0", "w1"):
                cluster.procs[name].kill()
                cluster.procs[name].wait(10)
            thread.join(60)
            assert not thread.is_alive(), "the fit still waits 60 s after its workers died"
            error = outcome["error"]
            assert isinstance(error, ClusterStalledError), repr(error)
            assert "were lost" in str(error) and "call fit again" in str(error)
            assert "none joined within 4 s" in str(error)  # the configured stall timeout ended it

            # The documented way to resume: start workers, fit again.
            for name in ("w0", "w1"):
                cluster.procs.pop(name)
                start_worker(cluster, sched_file, name)
            client.wait_for_workers(2, timeout=60)
            with client.as_current():
                again = IRelief(max_iter=5, tol=0).fit(Xd, yd)
            assert_estimator_equal(IRelief(max_iter=5, tol=0).fit(X, y), again)


def test_worker_memory_too_small_is_refused_before_submitting():
    from distributed import Client, LocalCluster

    X, y = _data(n=60_000, a=80)  # 38 MiB of rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            memory_limit="40MiB",
            dashboard_address=None,
        )
    with cluster, Client(cluster) as client:
        with pytest.raises(WorkerMemoryError, match=r"needs about .* memory limit is 40\.0 MiB"):
            IRelief(max_iter=2).fit(X, y)
        n_tasks = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        assert n_tasks == 0, "tasks were submitted before the memory check"


def test_stump_bins_too_large_are_refused_before_submitting():
    from distributed import Client, LocalCluster

    from dmargin import SBSMF

    X, y = _data(n=200_000, a=60)  # 11 MiB of uint8 bins, 91 MiB of float blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            memory_limit="12MiB",
            dashboard_address=None,
        )
    with cluster, Client(cluster) as client:
        with pytest.raises(WorkerMemoryError, match="Binning 200000 rows x 60 features"):
            SBSMF(5, n_estimators=5).fit(X, y)
        assert client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0


def test_read_ahead_thread_sees_the_current_client(local_cluster, blobs_binary):
    """``OnlineIRelief.fit`` on dask input under ``as_current()`` (not the default client)."""
    from distributed import Client, get_task_stream

    X, y = blobs_binary
    make = lambda: OnlineIRelief(random_state=0, block_size=16, n_passes=2)  # noqa: E731
    local = make().fit(X, y)
    with Client(local_cluster, set_as_default=False) as client:
        # Persisted on the cluster: only that client can compute these blocks.
        Xd, yd = client.persist(
            [da.from_array(X, chunks=(16, X.shape[1])), da.from_array(y, chunks=16)]
        )
        with client.as_current(), get_task_stream(client) as stream:
            remote = make().fit(Xd, yd)
    assert_estimator_equal(local, remote)
    assert stream.data, "no task ran on the cluster"


def test_paused_workers_message_names_the_memory():
    class FakeClient:
        class scheduler:  # noqa: N801 - mimics client.scheduler.address
            address = "tcp://10.0.0.1:8786"

    workers = {
        "tcp://a": {"status": "paused", "memory_limit": 2**30},
        "tcp://b": {"status": "paused", "memory_limit": 2**30},
    }
    text = _stall_message(FakeClient, workers, "IRelief.fit", 60.0)
    assert "paused" in text and "1.0 GiB" in text and "--memory-limit" in text
    assert "were lost" in _stall_message(FakeClient, {}, "x", 60.0)
    assert "did not answer" in _stall_message(FakeClient, None, "x", 60.0)


def _slow(seconds):
    time.sleep(seconds)
    return np.ones(3)


def test_a_wait_that_timed_out_leaves_no_result_on_the_workers(client):
    """A wait polls ``distributed.wait`` with a timeout; each timeout's traceback
    once held the futures in a cycle, so that the results stayed on the workers
    until Python's cyclic collector ran, and an identical refit was handed them
    instead of running (a refit's time measured nothing)."""
    import gc

    from dmargin._dask import compute

    task = dask.delayed(_slow, pure=True)(0.5)
    enabled = gc.isenabled()
    gc.disable()
    try:
        with dask.config.set({"dmargin.stall-timeout": "0.25s"}):  # polls every 0.05 s
            (value,) = compute(task)
        assert value.tolist() == [1.0, 1.0, 1.0]
        deadline = time.monotonic() + 5
        while any(client.has_what().values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(client.has_what().values()), client.has_what()
    finally:
        if enabled:
            gc.enable()
