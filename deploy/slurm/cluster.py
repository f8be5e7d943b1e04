"""dmargin on a SLURM cluster through dask-jobqueue, with mutual TLS.

Each SLURM job is one dask worker process with one thread (a dmargin tile
task already fills a core) and a memory limit equal to the job's ``--mem``.
Run this file on a login node (it hosts the scheduler and the client)::

    deploy/tls/make-certs.sh ~/.dmargin-certs      # once; a directory only you can read
    DMARGIN_CERTS=~/.dmargin-certs python deploy/slurm/cluster.py /shared/train_parquet label 8

The scheduler listens on the login node, where every user of the cluster can
reach it, and a connection to it is a remote shell on every worker; so it
speaks TLS only and admits only certificates of your CA: the scheduler, the
workers and this client each use their own from ``make-certs.sh``'s output
(the workers read theirs from the shared filesystem; keep the CA key,
``ca-private/``, elsewhere).  Without certificates :func:`make_cluster` refuses
unless given ``insecure=True`` (plain TCP: only on a network no one else uses).
The dashboard listens on the login node's loopback only
(``ssh -L 8787:127.0.0.1:8787 login-node``); the workers serve none.

:func:`main` waits ``DMARGIN_START_TIMEOUT`` seconds (300) for all the
workers' jobs to start, then fails and cancels them, instead of holding the
scheduler until the walltime while the jobs wait in the queue or fail.

The data path must be on a filesystem the compute nodes mount.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

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
        "umask 077",
        # "source /path/to/venv/bin/activate",  # the same environment as here
    ],
    job_extra_directives=[],
    # The dashboard has no authentication: loopback of the login node only.
    scheduler_options={"dashboard_address": "127.0.0.1:8787"},
    # A worker's dashboard would listen on every interface of its compute node, where on
    # loopback no one could reach it; the scheduler's shows every worker anyway.
    worker_extra_args=["--no-dashboard"],
    # interface="ib0",  # the fast network, if the nodes have one (workers and scheduler)
)


def security_from_certs(certs):
    """A ``Security`` with each role's own certificate from ``make-certs.sh OUT_DIR``."""
    from distributed.security import Security

    certs = Path(certs).expanduser()
    role = {
        r: (str(certs / r / f"{r}.pem"), str(certs / r / f"{r}-key.pem"))
        for r in ("scheduler", "worker", "client")
    }
    for cert, key in role.values():
        if not (Path(cert).is_file() and Path(key).is_file()):
            raise FileNotFoundError(f"{cert} / {key} missing: run deploy/tls/make-certs.sh {certs}")
    return Security(
        tls_ca_file=str(certs / "scheduler" / "ca.pem"),
        tls_scheduler_cert=role["scheduler"][0],
        tls_scheduler_key=role["scheduler"][1],
        tls_worker_cert=role["worker"][0],
        tls_worker_key=role["worker"][1],
        tls_client_cert=role["client"][0],
        tls_client_key=role["client"][1],
        require_encryption=True,
    )


def make_cluster(certs=None, insecure=False, **overrides):
    """A ``dask_jobqueue.SLURMCluster`` with :data:`CLUSTER_KWARGS` (plus overrides).

    ``certs`` (default: ``$DMARGIN_CERTS``) is the output directory of
    ``deploy/tls/make-certs.sh``; without it, ``insecure=True`` must be given.
    """
    from dask_jobqueue import SLURMCluster

    certs = certs or os.environ.get("DMARGIN_CERTS")
    kwargs = dict(CLUSTER_KWARGS)
    if certs:
        kwargs.update(protocol="tls://", security=security_from_certs(certs))
    elif not insecure:
        raise RuntimeError(
            "no TLS certificates: run deploy/tls/make-certs.sh DIR and set "
            "DMARGIN_CERTS=DIR (or pass insecure=True on a network only you use)"
        )
    return SLURMCluster(**{**kwargs, **overrides})


def start_timeout():
    """Seconds the workers' jobs may take to start: ``$DMARGIN_START_TIMEOUT``, else 300."""
    text = os.environ.get("DMARGIN_START_TIMEOUT", "300")
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"DMARGIN_START_TIMEOUT={text}: give a positive number of seconds")
    return seconds


def main(path, label, n_jobs):
    """Fit IRelief on ``n_jobs`` one-worker jobs; exit with a message if they do not start."""
    from distributed import Client

    import dmargin

    timeout = start_timeout()
    with make_cluster() as cluster, Client(cluster) as client:
        cluster.scale(jobs=n_jobs)
        try:
            client.wait_for_workers(n_jobs, timeout=timeout)
        except TimeoutError:  # leaving the with-block cancels the jobs
            joined = len(client.scheduler_info(n_workers=-1)["workers"])
            raise SystemExit(
                f"{joined} of {n_jobs} workers joined within {timeout:g} s "
                "(DMARGIN_START_TIMEOUT): see 'squeue --me' for jobs still "
                "queued and the jobs' slurm-*.out for failed ones"
            ) from None
        X, y = dmargin.read_parquet(path, label, missing_label="drop")
        est = dmargin.IRelief().fit(X, y)
        for j in est.feature_importances_.argsort()[::-1][:20]:
            print(j, est.feature_importances_[j])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
