"""``dmargin select --scheduler`` pointed at something that is not a Dask scheduler.

Each case runs the command as a user does, in a process of its own: it must
end with one line on stderr naming the address, and exit status 2 -- no hang
(the subprocess timeout fails the test), no traceback, no thread left that
keeps the process alive.  The peers are local: a port that accepts and never
answers (a dashboard port, a proxy), an HTTP server answering 400 to
anything, and ``tls://`` without this client's TLS settings.
"""

import os
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin.cli import main

# The hang guard only; a connection attempt gives up after about 10 s.
HANG_GUARD = 300
# Long enough for any test here, short enough that a forgotten peer goes away.
PEER_LIFETIME = 120.0


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    path = tmp_path_factory.mktemp("cli-scheduler") / "v.csv"
    frame.assign(label=np.arange(40) % 2).to_csv(path, index=False)
    return path


@pytest.fixture
def silent_port():
    """A loopback port that accepts TCP connections, holds them and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()
    held = []

    def accept():
        end = time.monotonic() + PEER_LIFETIME
        while not stop.is_set() and time.monotonic() < end:
            try:
                held.append(server.accept()[0])
            except OSError:  # the accept timeout: look at the clock again
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


class _BadRequest(socketserver.BaseRequestHandler):
    """An HTTP server's answer to bytes that are not a request it knows: 400, then close."""

    def handle(self):
        self.request.settimeout(5)
        try:
            self.request.recv(65536)
        except OSError:
            pass
        self.request.sendall(
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 11\r\nConnection: close\r\n\r\nBad Request"
        )


@pytest.fixture
def http_400_port():
    """A loopback HTTP server that answers 400 to anything."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _BadRequest)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
    )
    thread.start()
    timer = threading.Timer(PEER_LIFETIME, server.shutdown)
    timer.start()
    yield server.server_address[1]
    timer.cancel()
    server.shutdown()
    server.server_close()
    thread.join(5)


def _env(**extra):
    """This environment without dask settings, running the dmargin this test imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    source = str(Path(dmargin.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    return {**env, **extra}


def _run(csv_file, address, cwd, **env):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "dmargin.cli",
            "select",
            str(csv_file),
            "--label",
            "label",
            "-q",
            "--scheduler",
            address,
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        cwd=cwd,
        env=_env(**env),
    )


def _assert_one_line_error(run, address):
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("dmargin: error:") and run.stderr.count("\n") == 1, run.stderr
    assert address in run.stderr
    assert run.stdout == ""


@pytest.mark.parametrize(
    "kind, message",
    [
        ("silent", "no Dask scheduler answered within 10 s"),
        (
            "http-400",
            "does not speak Dask's protocol: it is an HTTP server (it answers "
            "'HTTP/1.1 400 Bad Request')",
        ),
        ("tls-without-settings", "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT"),
    ],
)
def test_not_a_scheduler_is_one_line_and_exit_2(
    csv_file, tmp_path, silent_port, http_400_port, kind, message
):
    """A silent port (the CLI used to wait forever), an HTTP 400 (a 43-line traceback
    ending in a 3 EiB ArrayMemoryError), tls:// without TLS settings (a TypeError)."""
    address = {
        "silent": f"tcp://127.0.0.1:{silent_port}",
        "http-400": f"tcp://127.0.0.1:{http_400_port}",
        "tls-without-settings": f"tls://127.0.0.1:{silent_port}",
    }[kind]
    run = _run(csv_file, address, tmp_path)
    _assert_one_line_error(run, address)
    assert message in run.stderr
    assert "MemoryError" not in run.stderr  # how the decoder broke is not what answered
    assert "check" in run.stderr or "give" in run.stderr  # says what to do


def test_scheduler_file_naming_a_silent_port(csv_file, tmp_path, silent_port):
    """The address read from a scheduler file gets the same deadline; both are named."""
    address = f"tcp://127.0.0.1:{silent_port}"
    sched_file = tmp_path / "scheduler.json"
    sched_file.write_text(f'{{"address": "{address}"}}')
    run = _run(csv_file, str(sched_file), tmp_path)
    _assert_one_line_error(run, address)
    assert str(sched_file) in run.stderr and "within 10 s" in run.stderr


def test_missing_tls_certificate_is_named(csv_file, tmp_path, silent_port):
    """TLS settings that name a file which does not exist: that file, not an ssl error."""
    missing = tmp_path / "client.pem"
    address = f"tls://127.0.0.1:{silent_port}"
    run = _run(
        csv_file,
        address,
        tmp_path,
        DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(missing),
        DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(missing),
        DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=str(missing),
    )
    _assert_one_line_error(run, address)
    assert f"{missing} does not exist" in run.stderr


@pytest.mark.cluster
@pytest.mark.parametrize("kind", ["http-dashboard-link", "worker"])
def test_wrong_dask_address_is_one_line(csv_file, capsys, local_cluster, kind):
    """The dashboard's http:// link, or a worker's address, instead of the scheduler's."""
    if kind == "worker":
        address = next(iter(local_cluster.scheduler_info["workers"]))
    else:
        address = "http://127.0.0.1:8787/status"
    assert main(["select", str(csv_file), "--label", "label", "-q", "--scheduler", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmargin: error:") and err.count("\n") == 1, err
    assert address in err
    assert (
        "is a Dask worker, not the scheduler"
        if kind == "worker"
        else "unknown address scheme 'http'"
    ) in err


@pytest.mark.cluster
def test_tls_scheduler_with_settings_from_the_environment(csv_file, tmp_path):
    """The probe and the Client use the TLS settings of the dask config: a fit runs."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: make-certs.sh needs it")
    from distributed import LocalCluster
    from distributed.security import Security

    certs = tmp_path / "certs"
    deploy = Path(__file__).resolve().parents[1] / "deploy"
    subprocess.run(
        ["bash", str(deploy / "tls/make-certs.sh"), str(certs)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    role = {
        r: (str(certs / r / f"{r}.pem"), str(certs / r / f"{r}-key.pem"))
        for r in ("scheduler", "worker", "client")
    }
    security = Security(
        tls_ca_file=str(certs / "scheduler/ca.pem"),
        tls_scheduler_cert=role["scheduler"][0],
        tls_scheduler_key=role["scheduler"][1],
        tls_worker_cert=role["worker"][0],
        tls_worker_key=role["worker"][1],
        tls_client_cert=role["client"][0],
        tls_client_key=role["client"][1],
        require_encryption=True,
    )
    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tls://",
        host="127.0.0.1",
        security=security,
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        out = tmp_path / "rank.csv"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "dmargin.cli",
                "select",
                str(csv_file),
                "--label",
                "label",
                "-q",
                "--scheduler",
                cluster.scheduler_address,
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD * 2,
            cwd=tmp_path,
            env=_env(
                DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(certs / "client/ca.pem"),
                DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(certs / "client/client.pem"),
                DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=str(certs / "client/client-key.pem"),
            ),
        )
    assert run.returncode == 0, run.stderr
    assert sorted(pd.read_csv(out)["feature"]) == ["a", "b", "c"]
