"""The files in ``deploy/``, checked without a container engine.

Compose and Kubernetes files are parsed and checked for what the cluster
needs (health check, memory limits that match the workers' ``--memory-limit``,
shared volumes, ``dask`` command lines that the real CLI accepts); the
compose services' command lines and the TLS set-up are run as real processes
on loopback, and a fit goes through them.  The security defaults are
checked too: what compose publishes, the image's user, base digest and pins,
the per-role certificates, and the Kubernetes security contexts, network
policies and TLS secrets.
"""

import ast
import asyncio
import importlib.metadata
import importlib.util
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import dask.config
import numpy as np
import pytest
import yaml
from dask.utils import parse_bytes
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from dmargin.irelief._irelief import IRelief

try:
    from . import test_live_cluster as live
except ImportError:
    import test_live_cluster as live

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
REPO = DEPLOY.parent


def load(name):
    return yaml.safe_load((DEPLOY / name).read_text())


def flat_config(config, prefix=""):
    """A nested dask config as dotted keys (``dask.config.set`` replaces nested dicts whole)."""
    out = {}
    for k, v in config.items():
        out.update(flat_config(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def load_all(name):
    """The documents of a multi-document YAML file, by kind (one of each but NetworkPolicy)."""
    docs = {}
    for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
        docs.setdefault(doc["kind"], []).append(doc)
    return docs


def compose_bytes(text):
    """Compose's memory units (binary: "4g" is 4 GiB, as docker's RAMInBytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", str(text).strip().lower())
    assert m, f"unreadable compose memory {text!r}"
    return int(float(m[1]) * 1024 ** "bkmgt".index(m[2] or "b"))


def _wait_healthy(cluster, health_argv):
    """Run the compose health check until it passes (the scheduler is up)."""
    for _ in range(100):
        ok = subprocess.run(health_argv, capture_output=True, timeout=10, check=False)
        if ok.returncode == 0:
            return
        assert cluster.procs["scheduler"].poll() is None, cluster.log("scheduler")
        time.sleep(0.2)
    raise AssertionError(ok.stderr.decode())


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
    assert services["notebook"]["command"][:2] == ["jupyter", "lab"]


def _published(service):
    """``[(host_ip, host_port, container_port)]`` of a compose service's ``ports``."""
    out = []
    for entry in service.get("ports", []):
        parts = str(entry).split(":")
        assert len(parts) in (2, 3) and "-" not in entry, f"unexpected ports entry {entry!r}"
        out.append(("" if len(parts) == 2 else parts[0], int(parts[-2]), int(parts[-1])))
    return out


def test_compose_publishes_on_loopback_only():
    """No TLS in compose.yaml: the scheduler, dashboard and notebook reach loopback only."""
    services = load("compose.yaml")["services"]
    published = {name: _published(svc) for name, svc in services.items()}
    assert published == {
        "scheduler": [("127.0.0.1", 8786, 8786), ("127.0.0.1", 8787, 8787)],
        "worker": [],
        "notebook": [("127.0.0.1", 8888, 8888)],
    }
    for name, svc in services.items():
        assert svc["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in svc["security_opt"], name


def make_certs(out, *san):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: make-certs.sh needs it")
    subprocess.run(
        ["bash", str(DEPLOY / "tls/make-certs.sh"), str(out), *san],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return out


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The output directory of make-certs.sh (one CA, a key per role)."""
    return make_certs(tmp_path_factory.mktemp("tls") / "certs")


def in_role_dir(argv, certs, role):
    """``argv`` with the container's /certs (the role's directory) at ``certs/role``."""
    return [str(a).replace("/certs/", f"{certs / role}/") for a in argv]


def test_compose_tls_variant(certs):
    """compose.tls.yaml: the scheduler port published only because every peer needs a
    certificate; each service mounts only its own role's directory."""
    services = load("compose.tls.yaml")["services"]
    assert set(services) == {"scheduler", "worker", "notebook"}
    published = {name: _published(svc) for name, svc in services.items()}
    assert published == {
        "scheduler": [("", 8786, 8786), ("127.0.0.1", 8787, 8787)],  # dashboard: no auth
        "worker": [],
        "notebook": [("127.0.0.1", 8888, 8888)],
    }
    roles = {"scheduler": "scheduler", "worker": "worker", "notebook": "client"}
    for name, svc in services.items():
        role = roles[name]
        mounts = {v.removesuffix(":ro").rsplit(":", 1)[1]: v for v in svc["volumes"]}
        mount = mounts["/certs"]
        assert re.fullmatch(rf"\$\{{DMARGIN_CERTS:\?[^}}]+\}}/{role}:/certs:ro", mount), mount
        assert mounts["/etc/dask/dask-tls.yaml"] == "./tls/dask-tls.yaml:/etc/dask/dask-tls.yaml:ro"
        assert not any("ca-private" in v for v in svc["volumes"])
        assert svc["cap_drop"] == ["ALL"], name
    # The real parsers (they insist that the files exist: the role's directory has them).
    for name in ("scheduler", "worker"):
        params = check_dask_cli(in_role_dir(services[name]["command"], certs, name))
        d = certs / name
        assert (params["tls_ca_file"], params["tls_cert"], params["tls_key"]) == (
            f"{d}/ca.pem",
            f"{d}/{name}.pem",
            f"{d}/{name}-key.pem",
        )
        if name == "scheduler":
            assert params["protocol"] == "tls"
        else:
            assert params["scheduler"] == "tls://scheduler:8786"
    assert services["notebook"]["environment"]["DASK_SCHEDULER_ADDRESS"] == "tls://scheduler:8786"
    # dask-tls.yaml: encryption required, and each role's entry names its own files.
    tls = yaml.safe_load((DEPLOY / "tls/dask-tls.yaml").read_text())["distributed"]["comm"]
    assert tls["require-encryption"] is True and tls["default-scheme"] == "tls"
    for role, files in ROLE_FILES.items():
        entry = tls["tls"][role]
        assert {tls["tls"]["ca-file"], entry["cert"], entry["key"]} == {
            f"/certs/{f}" for f in files
        }


def _loopback(argv, ports, certs=None):
    """A compose command line with the container's host names and ports on loopback
    (and the container's ``/certs`` at ``certs``)."""
    out = []
    for arg in argv:
        for scheme in ("tcp", "tls"):
            arg = str(arg).replace(
                f"{scheme}://scheduler:8786", f"{scheme}://127.0.0.1:{ports['comm']}"
            )
        if certs is not None and arg.startswith("/certs/"):
            arg = str(certs / arg[len("/certs/") :])
        arg = {
            "0.0.0.0": "127.0.0.1",
            "8786": str(ports["comm"]),
            ":8787": f"127.0.0.1:{ports['http']}",
            ":8788": ":0",
        }.get(arg, arg)
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
        _wait_healthy(cluster, _loopback(health, ports))
        with Client(
            f"tcp://127.0.0.1:{ports['comm']}", timeout="30s", set_as_default=False
        ) as client:
            client.wait_for_workers(2, timeout=60)
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
            assert [w["nthreads"] for w in workers] == [1, 1]
            assert {w["memory_limit"] for w in workers} == {parse_bytes("4GiB")}
            X, y = blobs_binary
            with client.as_current():
                remote = IRelief(max_iter=3, tol=0).fit(X, y)
    local = IRelief(max_iter=3, tol=0).fit(X, y)
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )


# ---------------------------------------------------------------------------
# The image: user, base digest, pinned packages, numba cache
# ---------------------------------------------------------------------------


def _dockerfile_stages():
    """``{stage: (parent, [instructions])}`` of deploy/Dockerfile (continuation lines joined)."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    stages, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"FROM (\S+) AS (\S+)", line)
        if m:
            current = m[2]
            stages[current] = (m[1], [])
        elif current is not None:
            stages[current][1].append(line)
    return text, stages


def _effective(stages, stage, keyword):
    """The last ``keyword`` instruction in ``stage`` or in the stages it derives from."""
    parent, lines = stages[stage]
    found = [line.split(None, 1)[1] for line in lines if line.split()[0] == keyword]
    if found:
        return found[-1]
    return _effective(stages, parent, keyword) if parent in stages else None


def test_dockerfile_hardening():
    text, stages = _dockerfile_stages()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.MULTILINE))
    uid = args["DMARGIN_UID"]
    assert uid.isdigit() and int(uid) >= 1000
    # Base image by digest, not by tag alone.
    base = stages["base"][0]
    base = args[base[2:-1]] if base.startswith("${") else base
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", base), base
    assert "imagetools inspect" in text  # how to refresh the digest
    # The images that run (worker, notebook) run as the fixed non-root uid.
    for stage in ("worker", "notebook"):
        user = _effective(stages, stage, "USER")
        assert user in (f"{uid}:{uid}", "${DMARGIN_UID}:${DMARGIN_UID}"), (stage, user)
    assert re.search(r"useradd [^\n]*--uid \"?\$DMARGIN_UID", text)
    # Every pip install is constrained by the pinned file.
    installs = re.findall(r"pip install [^\n&]*", text)
    assert len(installs) >= 3
    for cmd in installs:
        assert "-c /opt/dmargin/constraints.txt" in cmd, cmd
    assert "COPY deploy/constraints.txt /opt/dmargin/constraints.txt" in text
    assert "--no-build-isolation" in text  # no unpinned build backend either
    # The numba cache: the service user's own, mode 0700, never world-writable.
    cache = re.search(r"NUMBA_CACHE_DIR=(\S+)", text)[1]
    base_lines = " ".join(stages["base"][1])
    assert re.search(r'chown "?\$DMARGIN_UID:\$DMARGIN_UID"? "?\$NUMBA_CACHE_DIR', base_lines)
    assert re.search(r'chmod 0?700 "?\$NUMBA_CACHE_DIR', base_lines)
    assert cache == "/opt/numba-cache"
    assert not re.search(r"chmod [^\n]*(a\+r?w|o\+r?w|777|666)", text), "world-writable path"
    # The kernels are compiled after switching to the service user.
    lines = stages["base"][1]
    user_at = max(i for i, line in enumerate(lines) if line.startswith("USER "))
    warm_at = max(i for i, line in enumerate(lines) if "IRelief().fit" in line)
    assert warm_at > user_at


def _pins(name):
    pins = {}
    for line in (DEPLOY / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9._-]+)==([0-9][0-9A-Za-z.+!-]*)", line)
            assert m, f"{name}: not an exact pin: {line!r}"
            pins[canonicalize_name(m[1])] = m[2]
    return pins


def _runtime_closure():
    """Names of dmargin's runtime dependencies and theirs, as installed (CPython, Linux)."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    seen, todo = {}, [(Requirement(d), "") for d in deps]
    while todo:
        req, extra = todo.pop()
        env = {"extra": extra, "sys_platform": "linux", "platform_system": "Linux"}
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        for e in [""] + sorted(req.extras):
            if (name, e) in seen:
                continue
            seen[name, e] = True
            for sub in importlib.metadata.distribution(name).requires or []:
                todo.append((Requirement(sub), e))
    return {name for name, _ in seen}, deps


def test_constraints_pin_the_runtime_closure():
    pins = _pins("constraints.txt")
    closure, deps = _runtime_closure()
    assert closure - set(pins) == set(), "dependencies without a pin in deploy/constraints.txt"
    assert set(pins) - closure == {"setuptools"}, "pins of packages dmargin does not need"
    for dep in map(Requirement, deps):  # the pins satisfy pyproject.toml
        assert dep.specifier.contains(pins[canonicalize_name(dep.name)]), dep
    pyproject = pytest.importorskip("tomllib").loads((REPO / "pyproject.toml").read_text())
    build = pyproject["build-system"]
    for dep in map(Requirement, build["requires"]):
        assert dep.specifier.contains(pins[canonicalize_name(dep.name)]), dep
    # The notebook's pins add JupyterLab's closure without contradicting these.
    notebook = _pins("constraints-notebook.txt")
    assert "jupyterlab" in notebook and not set(notebook) & set(pins)


# ---------------------------------------------------------------------------
# Kubernetes (dask-kubernetes operator)
# ---------------------------------------------------------------------------


def _containers(pod_spec):
    return {c["name"]: c for c in pod_spec["containers"]}


ROLE_FILES = {
    role: {"ca.pem", f"{role}.pem", f"{role}-key.pem"} for role in ("scheduler", "worker", "client")
}


def _check_pod_security(pod_spec, what):
    """Non-root, no privilege escalation, no capabilities, read-only root, tmp in an emptyDir."""
    pod = pod_spec["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 10001, what
    assert pod["fsGroup"] == 10001 and pod["seccompProfile"]["type"] == "RuntimeDefault", what
    assert pod_spec["automountServiceAccountToken"] is False, what
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    for c in pod_spec.get("initContainers", []) + pod_spec["containers"]:
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001, (what, c["name"])
        assert sc["allowPrivilegeEscalation"] is False, (what, c["name"])
        assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
        assert sc["readOnlyRootFilesystem"] is True, (what, c["name"])
        assert not sc.get("privileged", False)
        mounts = {m["mountPath"]: volumes[m["name"]] for m in c.get("volumeMounts", [])}
        env = {e["name"]: e["value"] for e in c.get("env", [])}
        if c in pod_spec["containers"]:
            assert "emptyDir" in mounts["/tmp"], (what, c["name"])
            # numba must be able to write its cache: an emptyDir, not the read-only root.
            cache = env["NUMBA_CACHE_DIR"]
            assert any(
                cache.startswith(path + "/") and "emptyDir" in vol for path, vol in mounts.items()
            ), (what, cache)
    return volumes


def _check_tls_container(container, volumes, role):
    """The role's Secret at /certs, and distributed's config (from env) pointing into it."""
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/certs"]["readOnly"] is True
    secret = volumes[mounts["/certs"]["name"]]["secret"]
    assert secret["secretName"] == f"dmargin-tls-{role}"
    assert secret["defaultMode"] == 0o440  # readable through fsGroup, not by others
    env = {e["name"]: e["value"] for e in container["env"] if e["name"].startswith("DASK_")}
    with dask.config.set(flat_config(dask.config.collect_env(env))):
        from distributed.security import Security

        sec = Security()
        assert sec.require_encryption is True
        assert dask.config.get("distributed.comm.default-scheme") == "tls"
    files = {sec.tls_ca_file, getattr(sec, f"tls_{role}_cert"), getattr(sec, f"tls_{role}_key")}
    assert {os.path.dirname(f) for f in files} == {"/certs"}
    # The files make-certs.sh puts in the role's directory (the Secret's keys).
    assert {os.path.basename(f) for f in files} == ROLE_FILES[role]
    others = {"scheduler", "worker", "client"} - {role}
    assert not [k for k in env if any(f"__TLS__{o.upper()}__" in k for o in others)]


def _check_cluster_spec(spec, name):
    worker = _containers(spec["worker"]["spec"])["worker"]
    sched = _containers(spec["scheduler"]["spec"])["scheduler"]
    assert spec["worker"]["replicas"] >= 1
    wparams = check_dask_cli(worker["args"])
    assert wparams["nthreads"] == 1 and wparams["name"] == "$(DASK_WORKER_NAME)"
    # The operator's DASK_SCHEDULER_ADDRESS is tcp://: the tls:// address is given.
    assert wparams["scheduler"] == f"tls://{name}-scheduler:8786"
    limit = worker["resources"]["limits"]["memory"]
    assert parse_bytes(wparams["memory_limit"]) == parse_bytes(limit + "B")  # 8Gi -> 8GiB
    assert check_dask_cli(sched["args"])["protocol"] == "tls"
    ports = {p["name"]: p["containerPort"] for p in sched["ports"]}
    assert ports == {"tcp-comm": 8786, "http-dashboard": 8787}
    assert sched["readinessProbe"]["httpGet"] == {"port": "http-dashboard", "path": "/health"}
    service = spec["scheduler"]["service"]
    assert service["selector"] == {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}
    assert service["type"] == "ClusterIP"
    assert {p["targetPort"] for p in service["ports"]} == set(ports)
    for role, pod in (("worker", spec["worker"]["spec"]), ("scheduler", spec["scheduler"]["spec"])):
        volumes = _check_pod_security(pod, f"{name} {role}")
        _check_tls_container(_containers(pod)[role], volumes, role)
    # The workers start with the kernels compiled into the image.
    init = spec["worker"]["spec"]["initContainers"][0]
    assert "/opt/numba-cache/." in init["command"][-1]
    assert _containers(spec["worker"]["spec"])["worker"]["env"][-1]["value"] in init["command"][-1]


def _selects(selector, labels):
    """Whether a Kubernetes label selector matches ``labels``."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        assert expr["operator"] == "In"
        if labels.get(expr["key"]) not in expr["values"]:
            return False
    return True


def _check_network_policies(policies, name, clients):
    """Scheduler port: this cluster's workers and clients only; dashboard: the operator only."""

    def pod(component, cluster=name):
        return {"dask.org/cluster-name": cluster, "dask.org/component": component}

    def allowed(target, port, peer, namespace="same"):
        """Whether some policy selecting ``target`` lets ``peer`` (labels) reach ``port``."""
        selecting = [p for p in policies if _selects(p["spec"]["podSelector"], target)]
        assert selecting, f"no NetworkPolicy selects {target}"
        for policy in selecting:
            assert policy["spec"]["policyTypes"] == ["Ingress"]
            for rule in policy["spec"]["ingress"]:
                assert rule.get("from"), "a rule without 'from' admits everyone"
                ports = {p["port"] for p in rule.get("ports", [])}
                if ports and port not in ports:
                    continue
                for source in rule["from"]:
                    assert "ipBlock" not in source
                    ns = source.get("namespaceSelector")
                    if ns is None:
                        if namespace == "same" and _selects(source["podSelector"], peer):
                            return True
                    elif namespace != "same" and _selects(
                        ns, {"kubernetes.io/metadata.name": namespace}
                    ):
                        return True
        return False

    sched, worker = pod("scheduler"), pod("worker")
    clients = [pod(c) for c in clients]
    strangers = [pod("worker", "other-cluster"), {"app": "anything"}]
    for peer in clients + [worker]:
        assert allowed(sched, 8786, peer), peer
    for peer in strangers + [sched]:
        assert not allowed(sched, 8786, peer), peer
    for peer in strangers + clients + [worker]:
        assert not allowed(sched, 8787, peer), peer  # the dashboard is not exposed
    assert allowed(sched, 8787, {}, namespace="dask-operator")  # it scales down through it
    assert not allowed(sched, 8786, {}, namespace="dask-operator")
    assert not allowed(sched, 8787, {}, namespace="default")
    for peer in [worker, sched]:
        assert allowed(worker, 40000, peer), peer
    for peer in strangers + clients:
        assert not allowed(worker, 40000, peer), peer


def test_daskcluster_manifest():
    docs = load_all("kubernetes/daskcluster.yaml")
    assert set(docs) == {"DaskCluster", "NetworkPolicy"}
    (doc,) = docs["DaskCluster"]
    assert (doc["apiVersion"], doc["kind"]) == ("kubernetes.dask.org/v1", "DaskCluster")
    _check_cluster_spec(doc["spec"], doc["metadata"]["name"])
    sched = _containers(doc["spec"]["scheduler"]["spec"])["scheduler"]
    assert sched["livenessProbe"]["httpGet"]["path"] == "/health"
    _check_network_policies(docs["NetworkPolicy"], doc["metadata"]["name"], ["client"])


def test_daskjob_manifest():
    docs = load_all("kubernetes/daskjob.yaml")
    assert set(docs) == {"DaskJob", "NetworkPolicy"}
    (doc,) = docs["DaskJob"]
    assert (doc["apiVersion"], doc["kind"]) == ("kubernetes.dask.org/v1", "DaskJob")
    assert {"job", "cluster"} <= set(doc["spec"])  # required by the CRD
    _check_cluster_spec(doc["spec"]["cluster"]["spec"], doc["metadata"]["name"])
    job = doc["spec"]["job"]["spec"]
    assert job["restartPolicy"] == "Never"
    volumes = _check_pod_security(job, "job")
    container = _containers(job)["job"]
    _check_tls_container(container, volumes, "client")
    args = container["args"]
    assert args[:2] == ["python", "-c"]
    compile(args[2], "daskjob", "exec")  # the job's script is valid Python
    # The operator sets DASK_SCHEDULER_ADDRESS to tcp://...: the script uses tls://.
    assert 'os.environ["DASK_SCHEDULER_ADDRESS"].replace("tcp://", "tls://", 1)' in args[2]
    _check_network_policies(docs["NetworkPolicy"], doc["metadata"]["name"], ["job-runner"])


def test_operator_helm_values():
    values = load("kubernetes/operator-values.yaml")
    assert values["rbac"]["create"] is True
    assert set(values["resources"]) == {"requests", "limits"}
    assert values["podSecurityContext"]["runAsNonRoot"] is True
    sc = values["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]


# ---------------------------------------------------------------------------
# SLURM
# ---------------------------------------------------------------------------


def _dashboard_on_every_interface(params):
    """Whether a parsed ``dask scheduler`` / ``dask worker`` command line serves its
    dashboard (no authentication) on all interfaces; a worker's default ``:0`` does."""
    if not params.get("dashboard", True):
        return False
    host = str(params["dashboard_address"]).rsplit(":", 1)[0].strip("[]")
    return host not in ("127.0.0.1", "localhost", "::1")


def _cluster_py():
    """deploy/slurm/cluster.py as a module (dask-jobqueue is imported only when used)."""
    spec = importlib.util.spec_from_file_location("slurm_cluster", DEPLOY / "slurm/cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _slurm_module():
    pytest.importorskip(
        "dask_jobqueue",
        reason="dask-jobqueue is not installed: it renders "
        "the SLURM job script (pip install dask-jobqueue)",
    )
    return _cluster_py()


def test_slurm_job_script(monkeypatch):
    module = _slurm_module()
    monkeypatch.delenv("DMARGIN_CERTS", raising=False)
    with pytest.raises(RuntimeError, match="make-certs.sh"):  # no plain TCP by accident
        module.make_cluster(account="proj")
    with module.make_cluster(account="proj", insecure=True) as cluster:
        script = cluster.job_script()
        assert cluster.scheduler_spec["options"]["dashboard_address"] == "127.0.0.1:8787"
    assert "#SBATCH --mem=8G" in script and "#SBATCH -p compute" in script
    assert "#SBATCH -A proj" in script and "#SBATCH -t 02:00:00" in script
    assert "export OMP_NUM_THREADS=1" in script and "umask 077" in script
    worker_line = next(line for line in script.splitlines() if "dask_worker" in line)
    assert "--nthreads 1" in worker_line and "--memory-limit 8.00GiB" in worker_line
    assert "--local-directory $TMPDIR" in worker_line
    args = worker_line.split("distributed.cli.dask_worker", 1)[1].split()
    assert not _dashboard_on_every_interface(check_dask_cli(["dask", "worker", *args]))


def test_slurm_job_script_tls(certs):
    """With make-certs.sh's directory: tls://, and the workers get the worker key only."""
    module = _slurm_module()
    with module.make_cluster(certs=certs, account="proj") as cluster:
        script = cluster.job_script()
        assert cluster.scheduler_address.startswith("tls://")
        sec = cluster.security
    assert sec.require_encryption is True
    for role in ("scheduler", "worker", "client"):
        assert getattr(sec, f"tls_{role}_key") == str(certs / role / f"{role}-key.pem")
    worker_line = next(line for line in script.splitlines() if "dask_worker" in line)
    assert "tls://" in worker_line and "--protocol tls://" in worker_line
    assert f"--tls-cert {certs}/worker/worker.pem" in worker_line
    assert f"--tls-key {certs}/worker/worker-key.pem" in worker_line
    assert "scheduler-key" not in script and "client-key" not in script


def test_slurm_sbatch_script(tmp_path, certs):
    path = DEPLOY / "slurm/dmargin-cluster.sbatch"
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    assert "umask 077" in text
    python = text.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    compile(python, "sbatch", "exec")
    assert 'tls_client_cert=f"{certs}/client/client.pem"' in python
    # Run the script with an srun that records its command lines (and writes the
    # scheduler file) and a python that does nothing; check them with the real parsers.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(
        "#!/usr/bin/env bash\n"
        "while [[ $1 == --* ]]; do shift; done\n"
        'printf \'%s\\0\' "$@" >> "$SRUN_LOG.$2"\n'
        'if [ "$2" = scheduler ]; then echo \'{"address": "x"}\' > "$4"; fi\n'
    )
    (bin_dir / "python").write_text("#!/usr/bin/env bash\ncat > /dev/null\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)

    def run(**env):
        base = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "SLURM_NTASKS": "3",
            "SLURM_SUBMIT_DIR": str(tmp_path),
            "SLURM_JOB_ID": "7",
            "SRUN_LOG": str(tmp_path / "srun"),
        }
        return subprocess.run(
            ["bash", str(path), "/data", "label"],
            env={**base, **env},
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
        )

    refused = run()
    assert refused.returncode == 2 and "make-certs.sh" in refused.stderr
    done = run(DMARGIN_CERTS=str(certs))
    assert done.returncode == 0, done.stderr
    sched_file = tmp_path / "scheduler-7.json"
    assert sched_file.stat().st_mode & 0o077 == 0  # umask 077
    argv = {
        role: (tmp_path / f"srun.{role}").read_text().split("\0")[:-1]
        for role in ("scheduler", "worker")
    }
    sched = check_dask_cli(argv["scheduler"])
    assert sched["protocol"] == "tls" and sched["dashboard_address"] == "127.0.0.1:8787"
    worker = check_dask_cli(argv["worker"])
    assert worker["nthreads"] == 1 and worker["scheduler_file"] == str(sched_file)
    assert not _dashboard_on_every_interface(worker)
    assert not _dashboard_on_every_interface(sched)
    for role, params in (("scheduler", sched), ("worker", worker)):
        assert (params["tls_ca_file"], params["tls_cert"], params["tls_key"]) == (
            f"{certs}/{role}/ca.pem",
            f"{certs}/{role}/{role}.pem",
            f"{certs}/{role}/{role}-key.pem",
        )
    for f in tmp_path.glob("srun.*"):
        f.unlink()
    insecure = run(DMARGIN_INSECURE="1")
    assert insecure.returncode == 0, insecure.stderr
    assert "--tls-cert" not in (tmp_path / "srun.worker").read_text()


SBATCH = DEPLOY / "slurm/dmargin-cluster.sbatch"


def _sbatch_python():
    """The client script the sbatch job runs (its here-document)."""
    return SBATCH.read_text().split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]


def _wait_for_workers_calls(source):
    """The ``wait_for_workers(...)`` calls of a Python source."""
    return [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "wait_for_workers"
    ]


def test_slurm_waits_all_have_a_timeout():
    """No start-up wait may idle to the walltime: every shell loop of the sbatch script
    checks a deadline, every wait_for_workers is given a timeout."""
    text = SBATCH.read_text().split("<<'PY'\n", 1)[0]
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    loops = re.findall(r"\b(?:while|until)\b.*?\bdone\b", code, re.DOTALL)
    assert loops
    for loop in loops:
        assert "deadline" in loop and "START_TIMEOUT" in text, loop
    for name, source in (
        ("sbatch", _sbatch_python()),
        ("cluster.py", (DEPLOY / "slurm/cluster.py").read_text()),
    ):
        calls = _wait_for_workers_calls(source)
        assert calls, name
        for call in calls:
            assert "timeout" in {k.arg for k in call.keywords}, f"{name}: no timeout"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("scheduler", ["never-writes-its-file", "exits-at-once"])
def test_slurm_sbatch_gives_up_on_a_scheduler_that_does_not_start(tmp_path, scheduler):
    """A scheduler that never writes its file: the job fails after DMARGIN_START_TIMEOUT,
    names the step and the scheduler's log, and kills the scheduler step; one that exits
    at once fails it at once (the hang guard is shorter than the timeout there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    body = "exec sleep 60" if scheduler == "never-writes-its-file" else "exit 1"
    (bin_dir / "srun").write_text(
        "#!/usr/bin/env bash\n"
        "while [[ $1 == --* ]]; do shift; done\n"
        'printf \'%s\\0\' "$@" >> "$SRUN_LOG.$2"\n'
        f'if [ "$2" = scheduler ]; then echo $$ > "$SRUN_LOG.pid"; {body}; fi\n'
    )
    (bin_dir / "python").write_text('#!/usr/bin/env bash\ntouch "$SRUN_LOG.python"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    timeout = "2" if scheduler == "never-writes-its-file" else "300"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SLURM_NTASKS": "3",
        "SLURM_SUBMIT_DIR": str(tmp_path),
        "SLURM_JOB_ID": "8",
        "SRUN_LOG": str(tmp_path / "srun"),
        "DMARGIN_INSECURE": "1",
        "DMARGIN_START_TIMEOUT": timeout,
    }
    run = subprocess.run(
        ["bash", str(SBATCH), "/data", "label"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert run.returncode != 0
    sched_log = tmp_path / "scheduler-8.log"
    assert "scheduler" in run.stderr and str(sched_log) in run.stderr, run.stderr
    if scheduler == "never-writes-its-file":
        assert "within 2 s (DMARGIN_START_TIMEOUT)" in run.stderr
    else:
        assert "exited" in run.stderr
    assert not (tmp_path / "srun.worker").exists()  # no worker step, no fit
    assert not (tmp_path / "srun.python").exists()
    pid = int((tmp_path / "srun.pid").read_text())
    for _ in range(50):  # the scheduler step is killed (a bounded wait for it to go)
        if not _alive(pid):
            break
        time.sleep(0.1)
    assert not _alive(pid)


def test_slurm_sbatch_rejects_a_bad_start_timeout(tmp_path):
    run = subprocess.run(
        ["bash", str(SBATCH), "/data", "label"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
        env={
            "PATH": "/usr/bin:/bin",
            "DMARGIN_INSECURE": "1",
            "SLURM_SUBMIT_DIR": str(tmp_path),
            "DMARGIN_START_TIMEOUT": "5m",
        },
    )
    assert run.returncode == 2 and "DMARGIN_START_TIMEOUT=5m" in run.stderr


@pytest.fixture
def scheduler_without_workers(tmp_path):
    """A real scheduler on loopback that no worker joins, and its scheduler file."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        sched_file = tmp_path / "scheduler.json"
        sched_file.write_text(f'{{"address": "{cluster.scheduler_address}"}}')
        yield cluster, sched_file


@pytest.mark.cluster
def test_slurm_sbatch_client_gives_up_on_workers_that_do_not_come(
    tmp_path, scheduler_without_workers
):
    """The sbatch job's client script, run for real against a scheduler that no worker
    joins: it fails after the start timeout, saying how many came and where the logs are."""
    _, sched_file = scheduler_without_workers
    env = {k: v for k, v in os.environ.items() if k != "DMARGIN_CERTS"}
    run = subprocess.run(
        [
            sys.executable,
            "-",
            str(sched_file),
            "/data",
            "label",
            "2",
            "1",
            "sched.log",
            "workers.log",
        ],
        input=_sbatch_python(),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert run.returncode != 0
    assert "0 of 2 workers joined within 1 s (DMARGIN_START_TIMEOUT)" in run.stderr, run.stderr
    assert "workers.log" in run.stderr and "sched.log" in run.stderr


@pytest.mark.cluster
@pytest.mark.timeout(300)  # the hang guard: without a timeout main would wait for ever
def test_slurm_cluster_main_gives_up_on_jobs_that_do_not_start(monkeypatch, tmp_path):
    """cluster.py's main with jobs that never start: SystemExit after DMARGIN_START_TIMEOUT
    naming how many workers came, and the cluster (the jobs) closed on the way out."""
    from distributed import LocalCluster

    module = _cluster_py()
    made = []

    class Queued(LocalCluster):
        """A cluster whose jobs stay in the queue."""

        def scale(self, n=0, jobs=0, **kwargs):
            pass

    def make_cluster():
        made.append(Queued(n_workers=0, processes=False, dashboard_address="127.0.0.1:0"))
        return made[-1]

    monkeypatch.setattr(module, "make_cluster", make_cluster)
    monkeypatch.setenv("DMARGIN_START_TIMEOUT", "1")
    with pytest.raises(
        SystemExit,
        match=r"0 of 2 workers joined within 1 s "
        r"\(DMARGIN_START_TIMEOUT\)",
    ):
        module.main(str(tmp_path / "no-data"), "label", 2)
    assert made[0].status.name == "closed"
    monkeypatch.setenv("DMARGIN_START_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DMARGIN_START_TIMEOUT=soon"):
        module.main(str(tmp_path / "no-data"), "label", 2)


# ---------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------


async def _handshake(address, **connection_args):
    from distributed.comm import connect

    comm = await connect(address, timeout="2s", **connection_args)
    await comm.close()


def _public_key(cert):
    out = subprocess.run(
        ["openssl", "x509", "-in", cert, "-noout", "-pubkey"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def test_make_certs_one_key_per_role(tmp_path):
    out = make_certs(tmp_path / "certs", "DNS:scheduler.example.org")
    ca_dir = out / "ca-private"
    assert {p.name for p in out.iterdir()} == {"ca-private", "scheduler", "worker", "client"}
    assert {p.name for p in ca_dir.iterdir()} == {"ca.pem", "ca-key.pem"}
    assert ca_dir.stat().st_mode & 0o777 == 0o700
    keys = {}
    for role, files in ROLE_FILES.items():
        assert {p.name for p in (out / role).iterdir()} == files  # nothing else mounted
        key = out / role / f"{role}-key.pem"
        assert key.stat().st_mode & 0o777 == 0o600, key
        keys[role] = key.read_bytes()
        cert = out / role / f"{role}.pem"
        subprocess.run(
            ["openssl", "verify", "-CAfile", ca_dir / "ca.pem", cert],
            check=True,
            capture_output=True,
        )
        assert _public_key(cert) != _public_key(ca_dir / "ca.pem")
        assert (out / role / "ca.pem").read_bytes() == (ca_dir / "ca.pem").read_bytes()
    assert (ca_dir / "ca-key.pem").stat().st_mode & 0o777 == 0o600
    keys["ca"] = (ca_dir / "ca-key.pem").read_bytes()
    assert len(set(keys.values())) == 4, "roles share a key"
    assert len({_public_key(out / r / f"{r}.pem") for r in ROLE_FILES}) == 3
    # The CA key is nowhere but ca-private/.
    for path in out.rglob("*"):
        if path.is_file() and path.parent != ca_dir:
            assert path.read_bytes() != keys["ca"], path
    # A client certificate cannot pose as the scheduler or a worker (TLS server).
    purpose = ["openssl", "verify", "-purpose", "sslserver", "-CAfile", ca_dir / "ca.pem"]
    assert subprocess.run([*purpose, out / "client/client.pem"], capture_output=True).returncode
    for role in ("scheduler", "worker"):
        subprocess.run([*purpose, out / role / f"{role}.pem"], check=True, capture_output=True)
    san = subprocess.run(
        [
            "openssl",
            "x509",
            "-in",
            out / "scheduler/scheduler.pem",
            "-noout",
            "-ext",
            "subjectAltName",
        ],
        capture_output=True,
        text=True,
    ).stdout
    assert "DNS:scheduler.example.org" in san and "DNS:scheduler," in san
    # Run again: new role keys, the same CA.
    make_certs(out)
    assert (ca_dir / "ca-key.pem").read_bytes() == keys["ca"]
    assert (out / "worker/worker-key.pem").read_bytes() != keys["worker"]


def _role_config(tmp_path, certs, role):
    """A dask config directory holding deploy/tls/dask-tls.yaml, with /certs mounted from
    ``certs/role`` only (as compose.tls.yaml mounts it)."""
    config = tmp_path / f"dask-config-{role}"
    config.mkdir()
    (config / "tls.yaml").write_text(
        (DEPLOY / "tls/dask-tls.yaml").read_text().replace("/certs/", f"{certs / role}/")
    )
    return config


@pytest.mark.cluster
def test_tls_cluster_runs_a_fit(tmp_path, certs, blobs_binary):
    """compose.tls.yaml's scheduler and worker, run for real with their own certificates;
    a client with the client certificate fits through them, clients without one are refused."""
    from distributed import Client
    from distributed.security import Security

    services = load("compose.tls.yaml")["services"]
    ports = {"comm": free_port(), "http": free_port()}
    health = services["scheduler"]["healthcheck"]["test"][1:]
    with live.CliCluster(tmp_path) as cluster:
        for name in ("scheduler", "worker"):
            # Each process sees dask-tls.yaml and only its own role's directory.
            cluster.env = dict(cluster.env, DASK_CONFIG=str(_role_config(tmp_path, certs, name)))
            cluster.start(_loopback(services[name]["command"], ports, certs / name), name)
        _wait_healthy(cluster, _loopback(health, ports))
        address = f"tls://127.0.0.1:{ports['comm']}"
        # The client's settings from dask-tls.yaml, pointing at the client directory.
        client_config = yaml.safe_load(
            (_role_config(tmp_path, certs, "client") / "tls.yaml").read_text()
        )
        with dask.config.set(flat_config(client_config)):
            security = Security()
        assert security.tls_client_cert == str(certs / "client/client.pem")
        assert security.require_encryption is True
        with Client(address, security=security, timeout="30s", set_as_default=False) as client:
            client.wait_for_workers(1, timeout=60)
            worker_addr = next(iter(client.scheduler_info()["workers"]))
            assert worker_addr.startswith("tls://"), worker_addr
            X, y = blobs_binary
            with client.as_current():
                remote = IRelief(max_iter=3, tol=0).fit(X, y)

        # Refused: no client certificate, a certificate of another CA, and plain TCP.
        rogue = make_certs(tmp_path / "rogue")
        no_cert = ssl.create_default_context(cafile=str(certs / "client/ca.pem"))
        no_cert.check_hostname = False
        wrong_ca = Security(
            tls_ca_file=str(certs / "client/ca.pem"),
            tls_client_cert=str(rogue / "client/client.pem"),
            tls_client_key=str(rogue / "client/client-key.pem"),
            require_encryption=True,
        )
        for addr, args in [
            (address, {"ssl_context": no_cert}),
            (address, wrong_ca.get_connection_args("client")),
            (address.replace("tls://", "tcp://"), {}),
        ]:
            with pytest.raises((OSError, TimeoutError)):
                asyncio.run(_handshake(addr, **args))
        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=wrong_ca, timeout="2s", set_as_default=False)
        assert cluster.procs["scheduler"].poll() is None  # still serving the others
    local = IRelief(max_iter=3, tol=0).fit(X, y)
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
