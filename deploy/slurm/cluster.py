"""dmargin on a SLURM cluster through dask-jobqueue.

Each SLURM job is one dask worker process with one thread (a dmargin tile
task already fills a core) and a memory limit equal to the job's ``--mem``.
Run this file on a login node (it hosts the scheduler and the client)::

    python deploy/slurm/cluster.py /shared/train_parquet label 8

The data path must be on a filesystem the compute nodes mount.
"""

from __future__ import annotations

import sys

#: SLURMCluster arguments; edit queue/account/walltime for your site.
CLUSTER_KWARGS = dict(
    cores=1,  # threads per worker process
    processes=1,  # worker processes per job
    memory="8GiB",  # --mem of each job and the worker's --memory-limit
    walltime="02:00:00",
    queue="compute",
    account=None,
    # Node-local scratch for spilled data, not the shared filesystem.
    local_directory="$TMPDIR",
    job_script_prologue=[
        "export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1",
        # "source /path/to/venv/bin/activate",  # the same environment as here
    ],
    job_extra_directives=[],
    # interface="ib0",  # the fast network, if the nodes have one
)


def make_cluster(**overrides):
    """A ``dask_jobqueue.SLURMCluster`` with :data:`CLUSTER_KWARGS` (plus overrides)."""
    from dask_jobqueue import SLURMCluster

    return SLURMCluster(**{**CLUSTER_KWARGS, **overrides})


def main(path, label, n_jobs):
    from distributed import Client

    import dmargin

    with make_cluster() as cluster, Client(cluster) as client:
        cluster.scale(jobs=n_jobs)
        client.wait_for_workers(n_jobs)
        X, y = dmargin.read_parquet(path, label, missing_label="drop")
        est = dmargin.IRelief().fit(X, y)
        for j in est.feature_importances_.argsort()[::-1][:20]:
            print(j, est.feature_importances_[j])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
