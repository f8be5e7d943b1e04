"""Ctrl-C stops a fit at once: in-process, on dask's threads, on a LocalCluster, from the CLI.

Each test starts a fit in a child process, sends it SIGINT as a terminal's
Ctrl-C does (to its whole process group) while a pass runs, and checks that
the child ends soon, with no ``SystemError`` from inside a numba kernel and
no chained traceback, that the estimator is left unfitted, and that the
command line exits with 130 after one line.

The bound on the time is the point of these tests (a tile stops after its
running kernel call); it is generous, as the machine may be busy.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from dmargin._interrupt import forget_fit, is_interrupt

pytestmark = pytest.mark.slow

#: Seconds from the signal until ``fit`` returns (the issue asks for 2 s of the
#: whole process; on a busy two-core machine a kernel call takes longer)...
RETURNS = 3.0
#: ... and until the child has ended (the interpreter's own shutdown; a
#: LocalCluster's close takes seconds more, also after a fit that finished).
BOUND = 15.0

# The child: kernels compiled (or loaded from numba's cache) on a small fit
# first, so that the signal lands in a pass and not in a compilation.
_FIT = textwrap.dedent("""
    import sys, time
    import numpy as np
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted
    from dmargin import IRelief


    def main(mode):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(12000, 30)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
        if mode != "numpy":
            import dask.array as da
            X = da.from_array(X, chunks=(3000, 30)); y = da.from_array(y, chunks=3000)
        if mode == "cluster":
            # As the README writes it: the with-block closes the workers before the
            # scheduler, also on Ctrl-C (a cluster left to the interpreter's exit may
            # close its scheduler under a worker's heartbeat, and distributed logs that).
            from distributed import Client, LocalCluster
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster):
                return fit(X, y)
        return fit(X, y)


    def fit(X, y):
        IRelief(max_iter=1, tol=0).fit(X[:2000], y[:2000])
        est = IRelief(max_iter=1, tol=0).fit(X[:1000], y[:1000])  # a refit is interrupted
        est.set_params(max_iter=50)
        print("fitting", flush=True)
        start = time.monotonic()
        try:
            est.fit(X, y)
        except KeyboardInterrupt:
            print("returned at", repr(time.time()))
            try:
                check_is_fitted(est)
                print("half-fitted:", sorted(k for k in vars(est) if k.endswith("_")))
            except NotFittedError:
                print("unfitted")
            sys.stdout.flush()
            sys.exit(3)
        print("finished in", time.monotonic() - start, "s", flush=True)


    if __name__ == "__main__":
        main(sys.argv[1])
""")


def _interrupt(cmd, tmp_path, wait_for, after=3.0, group=True, stream="stdout"):
    """Run ``cmd``; SIGINT its process group ``after`` seconds after it prints
    ``wait_for`` on ``stream``; ``(return code, seconds from the signal until fit
    returned, seconds until the exit, stdout, stderr)``."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    child = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        lines = []
        for line in getattr(child, stream):
            lines.append(line)
            if wait_for in line:
                break
        else:
            out, err = child.communicate(timeout=60)
            pytest.fail(f"the fit did not start: {''.join(lines)}{out}{err}")
        time.sleep(after)
        assert child.poll() is None, "the fit ended before the signal: make it longer"
        sent_at = time.time()
        (os.killpg if group else os.kill)(child.pid, signal.SIGINT)
        sent = time.monotonic()
        out, err = child.communicate(timeout=300)
        seconds = time.monotonic() - sent
        if stream == "stdout":
            out = "".join(lines) + out
        else:
            err = "".join(lines) + err
        returned = [
            float(line.split()[-1]) - sent_at
            for line in out.splitlines()
            if line.startswith("returned at")
        ]
        return child.returncode, (returned or [None])[0], seconds, out, err
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def _check_stopped(name, code, returned, seconds, out, err, bound=BOUND):
    _check_quiet(err)
    assert code == 3 and "unfitted" in out, (code, out, err)
    print(
        f"{name}: fit returned {returned:.2f} s and the process ended {seconds:.2f} s after SIGINT"
    )
    assert returned < RETURNS, f"{name}: fit returned {returned:.1f} s after SIGINT"
    assert seconds < bound, f"{name}: {seconds:.1f} s from SIGINT to the end"


# One log record of distributed's own teardown, not of the fit: a worker whose
# heartbeat is in flight while LocalCluster closes the scheduler logs it with its
# traceback (dask/distributed#7105, open; also after a fit that finished).
_TEARDOWN = "distributed.worker - ERROR - Failed to communicate with scheduler during heartbeat."
_RECORD = re.compile(r"^(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - )", re.MULTILINE)
_FRAME = re.compile(r'^\s*File "([^"]+)", line', re.MULTILINE)


def _teardown_record(record):
    frames = _FRAME.findall(record)
    return (
        _TEARDOWN in record.partition("\n")[0]
        and record.rstrip().endswith("Stream is closed")
        and "KeyboardInterrupt" not in record
        and all(re.search(r"site-packages/(distributed|tornado)/", f) for f in frames)
    )


def _without_teardown(err):
    """``err`` less distributed's heartbeat record at close: its traceback ends
    in the closed stream, and every frame of it is distributed's or tornado's."""
    return "".join(r for r in _RECORD.split(err) if not _teardown_record(r))


def test_only_the_teardown_record_is_discounted():
    frame = '  File "/env/lib/python3.11/site-packages/{}.py", line 1, in f\n    f()\n'
    record = (
        f"2026-12-02 10:18:31,031 - {_TEARDOWN}\nTraceback (most recent call last):\n"
        + frame.format("distributed/worker")
        + frame.format("tornado/iostream")
        + "distributed.comm.core.CommClosedError: in <TCP (closed)>: Stream is closed\n"
    )
    before = "fitting\n"
    after = "2026-12-02 10:18:32,000 - distributed.nanny - INFO - Closing Nanny\n"
    assert _without_teardown(before + record + after) == before + after
    ours = record.replace("tornado/iostream", "dmargin/engine/tiles")
    assert _without_teardown(ours) == ours
    followed = record + "Traceback (most recent call last):\nKeyboardInterrupt\n"
    assert _without_teardown(followed) == followed


def _check_quiet(err):
    assert "SystemError" not in err, err
    assert "During handling of the above exception" not in err, err
    assert "The above exception was the direct cause" not in err, err


@pytest.mark.parametrize("mode", ["numpy", "dask"])
def test_ctrl_c_stops_a_fit(tmp_path, mode):
    (tmp_path / "fit.py").write_text(_FIT)
    code, returned, seconds, out, err = _interrupt(
        [sys.executable, "fit.py", mode], tmp_path, "fitting"
    )
    _check_stopped(mode, code, returned, seconds, out, err)


@pytest.mark.cluster
def test_ctrl_c_stops_a_fit_on_a_local_cluster(tmp_path):
    (tmp_path / "fit.py").write_text(_FIT)
    # To the whole process group, as a terminal does: the cluster's worker processes
    # leave Ctrl-C to the client, which stops the fit (no worker's traceback).
    code, returned, seconds, out, err = _interrupt(
        [sys.executable, "fit.py", "cluster"], tmp_path, "fitting"
    )
    ours = _without_teardown(err)
    assert "Traceback" not in ours and "KeyboardInterrupt" not in ours, err
    _check_stopped("cluster", code, returned, seconds, out, ours, bound=2 * BOUND)


def test_ctrl_c_ends_the_command_with_one_line_and_130(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 30))
    header = ",".join([f"f{j}" for j in range(30)] + ["label"])
    rows = np.column_stack([X, (X[:, 0] + X[:, 1] > 0).astype(int)])
    np.savetxt(
        tmp_path / "data.csv",
        rows,
        delimiter=",",
        header=header,
        comments="",
        fmt=["%.6f"] * 30 + ["%d"],
    )
    # The kernels compiled or loaded first, by a short run of the same command.
    (tmp_path / "small.csv").write_text(
        "\n".join((tmp_path / "data.csv").read_text().splitlines()[:2001]) + "\n"
    )
    cli = [
        sys.executable,
        "-c",
        "import sys; from dmargin.cli import main; sys.exit(main())",
        "select",
    ]
    warm = subprocess.run(
        cli + ["small.csv", "--label", "label", "--method", "irelief", "--max-iter", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert warm.returncode == 0, warm.stderr
    # The command says on stderr what it fits, then starts.
    code, _, seconds, out, err = _interrupt(
        [*cli, "data.csv", "--label", "label", "--method", "irelief", "--max-iter", "50"],
        tmp_path,
        "fitting",
        stream="stderr",
    )
    print(f"cli: ended {seconds:.2f} s after SIGINT; stderr: {err!r}")
    _check_quiet(err)
    assert "Traceback" not in err, err
    assert code == 130, (code, err)
    assert err.strip().splitlines()[-1] == "dmargin: interrupted", err
    assert seconds < BOUND, f"cli: {seconds:.1f} s from SIGINT to the end"


def test_an_interrupt_inside_a_kernel_is_an_interrupt():
    # numba turns a KeyboardInterrupt inside a threaded kernel into a SystemError.
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("returned a result with an exception set")  # noqa: B904
    except SystemError as exc:
        assert is_interrupt(exc)
    assert not is_interrupt(SystemError("other"))
    assert not is_interrupt(ValueError("x"))


def test_an_interrupted_fit_leaves_the_estimator_unfitted(monkeypatch):
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from dmargin import IRelief, ReliefF
    from dmargin.engine import execution

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    for est in (IRelief(max_iter=3), ReliefF()):
        est.fit(X, y)

        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        with monkeypatch.context() as m:
            m.setattr(execution, "run_local", interrupted)
            with pytest.raises(KeyboardInterrupt) as info:
                est.fit(X, y)
        assert info.value.__context__ is None
        with pytest.raises(NotFittedError):
            check_is_fitted(est)
        assert est.fit(X, y).feature_importances_.shape == (4,)


def test_forget_fit_keeps_the_parameters():
    from dmargin import ReliefF

    est = ReliefF(n_neighbors=3)
    est.fit(np.random.default_rng(0).normal(size=(30, 3)), np.arange(30) % 2)
    forget_fit(est)
    assert est.get_params()["n_neighbors"] == 3
    assert not [k for k in vars(est) if k.endswith("_")]


def test_a_notebooks_interrupt_stops_a_fit():
    # "Interrupt kernel" sends the kernel SIGINT while the cell runs on its main thread.
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        setup = kc.execute_interactive(
            textwrap.dedent("""
            import numpy as np
            from dmargin import IRelief
            from sklearn.utils.validation import check_is_fitted
            rng = np.random.default_rng(0)
            X = rng.normal(size=(12000, 30)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
            IRelief(max_iter=1, tol=0).fit(X[:2000], y[:2000])
            est = IRelief(max_iter=1, tol=0).fit(X[:1000], y[:1000]).set_params(max_iter=50)
        """),
            timeout=600,
            output_hook=lambda msg: None,
        )
        assert setup["content"]["status"] == "ok", setup["content"]
        msg_id = kc.execute("print('fitting', flush=True); est.fit(X, y)")
        # A busy machine may start the cell late: interrupt once the fit has begun.
        while True:
            msg = kc.get_iopub_msg(timeout=600)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "stream"
                and "fitting" in msg["content"]["text"]
            ):
                break
        time.sleep(3.0)
        km.interrupt_kernel()
        sent = time.monotonic()
        reply = kc.get_shell_msg(timeout=120)
        seconds = time.monotonic() - sent
        assert reply["parent_header"]["msg_id"] == msg_id
        content = reply["content"]
        assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt", content
        _check_quiet("\n".join(content["traceback"]))
        assert seconds < RETURNS, f"the cell ended {seconds:.1f} s after the interrupt"
        check = kc.execute_interactive(
            "check_is_fitted(est)", timeout=60, output_hook=lambda msg: None
        )
        assert check["content"]["ename"] == "NotFittedError", check["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _checks_until_stopped(marker):
    from dmargin.engine import execution

    count = execution.interrupt_count()
    for _ in range(1200):  # a minute at most
        time.sleep(0.05)
        try:
            execution.stop_if_interrupted(count)
        except execution.FitInterrupted:
            open(marker, "w").close()
            return "stopped"
    return "ran to the end"


@pytest.mark.cluster
def test_a_cancelled_task_stops_on_its_worker(tmp_path, client):
    # The client's interrupt cancels the fit's futures; a tile running on a worker
    # stops at its next kernel call instead of running to its end.
    marker = tmp_path / "stopped"
    future = client.submit(_checks_until_stopped, str(marker), pure=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
        future.key in keys for keys in client.processing().values()
    ):
        time.sleep(0.05)
    time.sleep(0.5)
    future.cancel()
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the cancelled task ran on"


_SIMBA = textwrap.dedent("""
    import sys, time
    import numpy as np
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted
    from dmargin import Simba

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12000, 30)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
    # The twins the fit runs compiled first: the scores' threaded one from 1,000 rows.
    Simba(n_starts=1).fit(X[:1000], y[:1000])
    est = Simba(n_starts=1).fit(X[:300], y[:300]).set_params(n_starts=5)
    print("fitting", flush=True)
    try:
        est.fit(X, y)
    except KeyboardInterrupt:
        print("returned at", repr(time.time()))
        try:
            check_is_fitted(est)
            print("half-fitted")
        except NotFittedError:
            print("unfitted")
        sys.stdout.flush()
        sys.exit(3)
""")


def test_ctrl_c_stops_a_sequential_fit(tmp_path):
    # Simba's walk is one numba loop on the driver's thread: it runs in short calls.
    (tmp_path / "fit.py").write_text(_SIMBA)
    code, returned, seconds, out, err = _interrupt([sys.executable, "fit.py"], tmp_path, "fitting")
    _check_stopped("simba", code, returned, seconds, out, err)


def _fits(make, X, y):
    return [make().fit(X, y).feature_importances_ for make in make]


@pytest.mark.parametrize("missing", [False, True])
def test_tiles_in_short_calls_give_the_same_weights(monkeypatch, missing):
    # A tile's anchors run in slices (one anchor a call here): each anchor's partial
    # is its own, so the weights are equal, bit for bit.
    from dmargin import IRelief, MuRelief, ReliefF, RReliefF
    from dmargin.engine import neighbours

    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 5))
    X[:, 4] = rng.integers(0, 3, size=90)  # a discrete feature: the general kernels
    target = X[:, 0] + 0.1 * rng.normal(size=90)
    if missing:
        X[rng.random(X.shape) < 0.05] = np.nan
    y = (X[:, 0] + 0.5 * rng.normal(size=90) > 0).astype(int)
    makers = [
        lambda: IRelief(max_iter=3),
        lambda: ReliefF(n_neighbors=4),
        lambda: MuRelief(n_neighbors=4),
    ]
    if not missing:
        makers.append(lambda: IRelief(max_iter=3, discrete_threshold=0))
    regression = lambda: RReliefF(n_neighbors=4).fit(Xt, target).feature_importances_
    Xt = np.nan_to_num(X)  # RReliefF takes no missing values
    whole = _fits(makers, X, y) + [regression()]
    monkeypatch.setattr(neighbours, "CALL_WORK", 1.0)
    monkeypatch.setattr(neighbours, "CALL_ANCHORS", 1)
    for a, b in zip(whole, _fits(makers, X, y) + [regression()]):
        np.testing.assert_array_equal(a, b)


def test_sequential_walks_in_short_calls_give_the_same_weights(monkeypatch):
    from dmargin import OnlineIRelief, Simba
    from dmargin.engine.kernels import sequential
    from dmargin.irelief import _online

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    makers = [
        lambda: Simba(n_starts=2, random_state=0),
        lambda: OnlineIRelief(n_passes=2, random_state=0),
    ]
    whole = _fits(makers, X, y)
    monkeypatch.setattr(sequential, "SIMBA_CALL_WORK", 1.0)  # one step a call
    monkeypatch.setattr(_online, "_CALL_WORK", 1.0)  # 64 anchors a call
    for a, b in zip(whole, _fits(makers, X, y)):
        np.testing.assert_array_equal(a, b)


def test_a_run_after_an_interrupted_one_starts_afresh():
    from dmargin.engine import execution

    def stop():
        raise KeyboardInterrupt

    before = execution.interrupt_count()
    with pytest.raises(KeyboardInterrupt):
        execution.run_local({("a",): (stop,), ("b",): (abs, -2)}, set(), 1)
    assert execution.interrupt_count() == before + 1
    with pytest.raises(execution.FitInterrupted):
        execution.stop_if_interrupted(before)
    assert execution.run_local({("b",): (abs, -2)}, set(), 1)[("b",)] == 2
