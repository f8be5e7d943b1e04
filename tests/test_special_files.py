"""Paths that are not regular files: a FIFO, a device, a socket.

``OnlineIRelief.load_state`` on a FIFO with no writer blocked in ``open`` for
ever; ``save_state`` (and the command line's ``--out --force``) renamed a new
file onto the path, which as root replaced a device node such as ``/dev/full``.
Each is refused with one ``ValueError`` (the command line: one line, exit 2)
naming the path and what it is.
"""

import os
import socket
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

from dmargin import OnlineIRelief

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")


def _stream(n=200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += y
    return X, y


def _fitted():
    return OnlineIRelief(random_state=0).partial_fit(*_stream())


def _release(fifo):
    """Wake a reader blocked in ``open`` of ``fifo``: open its other end and close it."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # nobody is waiting on it
        pass


def test_load_state_of_a_fifo_is_refused_at_once(tmp_path):
    fifo = str(tmp_path / "state.npz")
    os.mkfifo(fifo)
    outcome = []

    def load():
        try:
            OnlineIRelief.load_state(fifo)
            outcome.append("loaded")
        except Exception as exc:  # noqa: BLE001 - the test reports whatever it is
            outcome.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(120)  # a hang guard: the refusal takes microseconds
    blocked = reader.is_alive()
    _release(fifo)
    reader.join(10)
    assert not blocked, "load_state blocked in open() of a FIFO"
    assert len(outcome) == 1 and isinstance(outcome[0], ValueError), outcome
    message = str(outcome[0])
    assert message.startswith(fifo) and "a FIFO (named pipe), not a regular file" in message


def test_load_state_of_a_directory_is_one_value_error(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a regular file"):
        OnlineIRelief.load_state(tmp_path)


def test_load_state_of_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        OnlineIRelief.load_state(tmp_path / "none.npz")


def _unix_socket(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    return server


@pytest.mark.parametrize("kind", ["fifo", "socket", "link_to_device"])
def test_save_state_never_replaces_a_special_file(tmp_path, kind):
    target = tmp_path / "state.npz"
    keep = None
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        keep = _unix_socket(str(target))
    else:
        target.symlink_to(os.devnull)
    before = os.lstat(target)
    try:
        with pytest.raises(ValueError) as info:
            _fitted().save_state(target)
    finally:
        if keep is not None:
            keep.close()
    message = str(info.value)
    assert message.startswith(str(target)) and "not a regular file" in message, message
    after = os.lstat(target)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode)
    assert after.st_ino == before.st_ino
    # Nothing else was left behind: no temporary file, no .prev.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.npz"]


def test_save_state_still_replaces_a_regular_file_and_a_link_to_one(tmp_path):
    first = tmp_path / "a.npz"
    _fitted().save_state(first)
    link = tmp_path / "link.npz"
    link.symlink_to(first)
    est = _fitted().partial_fit(*_stream(seed=1))
    est.save_state(first)
    est.save_state(link)
    assert OnlineIRelief.load_state(link).n_steps_ == est.n_steps_


def test_cli_out_onto_a_fifo_is_refused_even_with_force(tmp_path):
    X, y = _stream(60)
    data = tmp_path / "d.csv"
    data.write_text(
        "a,b,c,d,label\n"
        + "\n".join(",".join(map(str, [*row, label])) for row, label in zip(X, y))
        + "\n"
    )
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "dmargin.cli",
                "select",
                str(data),
                "--label",
                "label",
                "--out",
                str(fifo),
                "--force",
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        _release(fifo)
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a regular file" in lines[0], run.stderr[-2000:]
