"""The files in ``deploy/``, checked without a container engine.

Compose and Kubernetes files are parsed and checked for what the cluster
needs (health check, memory limits that match the workers' ``--memory-limit``,
shared volumes, ``dask`` command lines that the real CLI accepts); the
compose services' command lines and the TLS set-up are run as real processes
on loopback, and a fit goes through them.
"""

import asyncio
import importlib.util
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from dask.utils import parse_bytes

from dmargin._relief import IRelief

try:
    from . import test_live_cluster as live
except ImportError:
    import test_live_cluster as live

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
REPO = DEPLOY.parent


def load(name):
    return yaml.safe_load((DEPLOY / name).read_text())


def compose_bytes(text):
    """Compose's memory units (binary: "4g" is 4 GiB, as docker's RAMInBytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", str(text).strip().lower())
    assert m, f"unreadable compose memory {text!r}"
    return int(float(m[1]) * 1024 ** "bkmgt".index(m[2] or "b"))


def option(argv, name):
    """The value after ``name`` in a command line."""
    return argv[argv.index(name) + 1]


def check_dask_cli(argv):
    """The real ``dask scheduler`` / ``dask worker`` parsers accept ``argv``."""
    assert argv[0] == "dask" and argv[1] in ("scheduler", "worker"), argv
    if argv[1] == "worker":
        from distributed.cli.dask_worker import main
    else:
        from distributed.cli.dask_scheduler import main
    return main.make_context(f"dask {argv[1]}", list(argv[2:])).params


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# Compose
# ---------------------------------------------------------------------------


def test_compose_file_structure():
    compose = load("compose.yaml")
    services = compose["services"]
    assert set(services) == {"scheduler", "worker", "notebook"}
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM ghcr\.io/dask/dask:", dockerfile, re.MULTILINE)
    for name, svc in services.items():
        assert svc.get("image") and svc.get("command"), name
        build = svc["build"]
        context = (DEPLOY / build["context"]).resolve()
        assert context == REPO and (context / build["dockerfile"]).is_file()
        assert re.search(rf"^FROM \S+ AS {build['target']}$", dockerfile, re.MULTILINE), name
        assert "data:/data" in svc["volumes"], f"{name} does not mount the shared volume"
    assert "data" in compose["volumes"]
    for src in re.findall(r"^COPY (?:--\S+ )*(.+) \S+$", dockerfile, re.MULTILINE):
        for path in src.split():
            assert (REPO / path).exists(), f"Dockerfile copies missing {path}"

    sched, worker = services["scheduler"], services["worker"]
    params = check_dask_cli(sched["command"])
    assert params["port"] == "8786" or params["port"] == 8786
    health = sched["healthcheck"]
    assert health["test"][0] == "CMD" and any("/health" in t for t in health["test"])
    assert {"interval", "timeout", "retries"} <= set(health)
    assert worker["depends_on"]["scheduler"]["condition"] == "service_healthy"
    assert services["notebook"]["depends_on"]["scheduler"]["condition"] == "service_healthy"

    wparams = check_dask_cli(worker["command"])
    assert wparams["nthreads"] == 1
    assert worker["command"][2] == "tcp://scheduler:8786"
    limits = worker["deploy"]["resources"]["limits"]
    assert worker["deploy"]["replicas"] >= 2
    # Dask spills and pauses against its own limit: it must equal the container's.
    assert parse_bytes(wparams["memory_limit"]) == compose_bytes(limits["memory"])
    assert float(limits["cpus"]) == 1.0
    # No token in the file: it must come from the environment.
    token = services["notebook"]["environment"]["JUPYTER_TOKEN"]
    assert token.startswith("${JUPYTER_TOKEN:?")


def _loopback(argv, ports):
    """A compose command line with the container's host names and ports on loopback."""
    out = []
    for arg in argv:
        arg = str(arg).replace("tcp://scheduler:8786", f"tcp://127.0.0.1:{ports['comm']}")
        arg = {"0.0.0.0": "127.0.0.1", "8786": str(ports["comm"]),
               ":8787": f"127.0.0.1:{ports['http']}", ":8788": ":0"}.get(arg, arg)
        out.append(arg.replace("localhost:8787", f"127.0.0.1:{ports['http']}"))
    if out[0] == "dask":
        out[0] = str(live.DASK)
    elif out[0] == "python":
        out[0] = sys.executable
    return out


@pytest.mark.cluster
def test_compose_commands_run_on_loopback(tmp_path, blobs_binary):
    """The scheduler and worker commands of compose.yaml, run for real."""
    from distributed import Client

    services = load("compose.yaml")["services"]
    ports = {"comm": free_port(), "http": free_port()}
    health = services["scheduler"]["healthcheck"]["test"][1:]
    with live.CliCluster(tmp_path) as cluster:
        cluster.start(_loopback(services["scheduler"]["command"], ports), "scheduler")
        for i in range(2):  # two replicas
            cluster.start(_loopback(services["worker"]["command"], ports), f"worker{i}")
        # The health check passes once the scheduler is up.
        for _ in range(100):
            ok = subprocess.run(_loopback(health, ports), capture_output=True, timeout=10,
                                check=False)
            if ok.returncode == 0:
                break
            assert cluster.procs["scheduler"].poll() is None, cluster.log("scheduler")
            time.sleep(0.2)
        assert ok.returncode == 0, ok.stderr.decode()
        with Client(f"tcp://127.0.0.1:{ports['comm']}", timeout="30s",
                    set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
            assert [w["nthreads"] for w in workers] == [1, 1]
            assert {w["memory_limit"] for w in workers} == {parse_bytes("4GiB")}
            X, y = blobs_binary
            with client.as_current():
                remote = IRelief(max_iter=3, tol=0).fit(X, y)
    local = IRelief(max_iter=3, tol=0).fit(X, y)
    np.testing.assert_allclose(remote.feature_importances_, local.feature_importances_,
                               rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------
# Kubernetes (dask-kubernetes operator)
# ---------------------------------------------------------------------------


def _containers(pod_spec):
    return {c["name"]: c for c in pod_spec["containers"]}


def _check_cluster_spec(spec, name):
    worker = _containers(spec["worker"]["spec"])["worker"]
    sched = _containers(spec["scheduler"]["spec"])["scheduler"]
    assert spec["worker"]["replicas"] >= 1
    wparams = check_dask_cli(worker["args"])
    assert wparams["nthreads"] == 1 and wparams["name"] == "$(DASK_WORKER_NAME)"
    limit = worker["resources"]["limits"]["memory"]
    assert parse_bytes(wparams["memory_limit"]) == parse_bytes(limit + "B")  # 8Gi -> 8GiB
    check_dask_cli(sched["args"])
    ports = {p["name"]: p["containerPort"] for p in sched["ports"]}
    assert ports == {"tcp-comm": 8786, "http-dashboard": 8787}
    assert sched["readinessProbe"]["httpGet"] == {"port": "http-dashboard", "path": "/health"}
    service = spec["scheduler"]["service"]
    assert service["selector"] == {"dask.org/cluster-name": name,
                                   "dask.org/component": "scheduler"}
    assert {p["targetPort"] for p in service["ports"]} == set(ports)


def test_daskcluster_manifest():
    doc = load("kubernetes/daskcluster.yaml")
    assert (doc["apiVersion"], doc["kind"]) == ("kubernetes.dask.org/v1", "DaskCluster")
    _check_cluster_spec(doc["spec"], doc["metadata"]["name"])
    sched = _containers(doc["spec"]["scheduler"]["spec"])["scheduler"]
    assert sched["livenessProbe"]["httpGet"]["path"] == "/health"


def test_daskjob_manifest():
    doc = load("kubernetes/daskjob.yaml")
    assert (doc["apiVersion"], doc["kind"]) == ("kubernetes.dask.org/v1", "DaskJob")
    assert {"job", "cluster"} <= set(doc["spec"])  # required by the CRD
    _check_cluster_spec(doc["spec"]["cluster"]["spec"], doc["metadata"]["name"])
    job = doc["spec"]["job"]["spec"]
    assert job["restartPolicy"] == "Never"
    args = _containers(job)["job"]["args"]
    assert args[:2] == ["python", "-c"]
    compile(args[2], "daskjob", "exec")  # the job's script is valid Python
    assert "Client()" in args[2]  # the operator sets DASK_SCHEDULER_ADDRESS


def test_operator_helm_values():
    values = load("kubernetes/operator-values.yaml")
    assert values["rbac"]["create"] is True
    assert set(values["resources"]) == {"requests", "limits"}


# ---------------------------------------------------------------------------
# SLURM
# ---------------------------------------------------------------------------


def test_slurm_job_script():
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed: it renders "
                        "the SLURM job script (pip install dask-jobqueue)")
    spec = importlib.util.spec_from_file_location("slurm_cluster", DEPLOY / "slurm/cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with module.make_cluster(account="proj") as cluster:
        script = cluster.job_script()
    assert "#SBATCH --mem=8G" in script and "#SBATCH -p compute" in script
    assert "#SBATCH -A proj" in script and "#SBATCH -t 02:00:00" in script
    assert "export OMP_NUM_THREADS=1" in script
    worker_line = next(line for line in script.splitlines() if "dask_worker" in line)
    assert "--nthreads 1" in worker_line and "--memory-limit 8.00GiB" in worker_line
    assert "--local-directory $TMPDIR" in worker_line


def test_slurm_sbatch_script():
    path = DEPLOY / "slurm/dmargin-cluster.sbatch"
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    assert "dask scheduler --scheduler-file" in text
    assert "dask worker --scheduler-file" in text and "--nthreads 1" in text
    python = text.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    compile(python, "sbatch", "exec")


# ---------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------


async def _handshake(address, **connection_args):
    from distributed.comm import connect

    comm = await connect(address, timeout="3s", **connection_args)
    await comm.close()


@pytest.mark.cluster
def test_tls_cluster_runs_a_fit(tmp_path, blobs_binary):
    """Certificates from make-certs.sh; scheduler by CLI flags, worker by the config file."""
    from distributed.security import Security

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: make-certs.sh needs it")
    certs = tmp_path / "certs"
    subprocess.run(["bash", str(DEPLOY / "tls/make-certs.sh"), str(certs)], check=True,
                   capture_output=True, timeout=120)
    ca, cert, key = certs / "ca.pem", certs / "node.pem", certs / "node-key.pem"
    subprocess.run(["openssl", "verify", "-CAfile", ca, cert], check=True, capture_output=True)
    # The worker reads deploy/tls/dask-tls.yaml, pointed at these certificates.
    config = tmp_path / "dask-config"
    config.mkdir()
    (config / "tls.yaml").write_text(
        (DEPLOY / "tls/dask-tls.yaml").read_text().replace("/certs/", f"{certs}/"))
    env = live._env()
    env["DASK_CONFIG"] = str(config)
    sched_file = tmp_path / "scheduler.json"
    with live.CliCluster(tmp_path, env=env) as cluster:
        cluster.start([live.DASK, "scheduler", "--protocol", "tls", "--host", "127.0.0.1",
                       "--port", "0", "--no-dashboard", "--tls-ca-file", ca, "--tls-cert", cert,
                       "--tls-key", key, "--scheduler-file", sched_file], "scheduler")
        cluster.wait_for_file(sched_file)
        live.start_worker(cluster, sched_file, "w0")
        security = Security(tls_ca_file=str(ca), tls_client_cert=str(cert),
                            tls_client_key=str(key), require_encryption=True)
        with live.connect(sched_file, 1, security=security) as client:
            assert client.scheduler.address.startswith("tls://")
            worker_addr = next(iter(client.scheduler_info()["workers"]))
            assert worker_addr.startswith("tls://"), worker_addr
            X, y = blobs_binary
            with client.as_current():
                remote = IRelief(max_iter=3, tol=0).fit(X, y)
            address = client.scheduler.address
        # Without a client certificate, or over plain TCP, nobody gets in.
        no_cert = ssl.create_default_context(cafile=str(ca))
        no_cert.check_hostname = False
        for addr, args in [(address, {"ssl_context": no_cert}),
                           (address.replace("tls://", "tcp://"), {})]:
            with pytest.raises((OSError, TimeoutError)):
                asyncio.run(_handshake(addr, **args))
    local = IRelief(max_iter=3, tol=0).fit(X, y)
    np.testing.assert_allclose(remote.feature_importances_, local.feature_importances_,
                               rtol=0, atol=1e-10)
