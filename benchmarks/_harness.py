"""Small shared helpers for the benchmark scripts in this folder.

Parent side:
    ``run_worker``   run ``python <script> <args>`` in a fresh subprocess with the
                     thread-count environment variables set, and return the JSON
                     result the worker printed.
    ``machine_info`` CPU model, core count, library versions, numba threading
                     layer, date.
    ``wait_until_quiet``  on a shared machine, wait (bounded) until other
                     processes leave the cores alone.
    ``write_json``, ``markdown_table``.

Worker side:
    ``emit_result``  print the worker's result as one marked JSON line.
    ``CpuMonitor``   cores used by this process and by everything else while
                     something was measured.
    ``rss_mib``, ``peak_rss_mib``, ``timed``.

Only the standard library is needed at import time; numpy/numba/psutil are
imported lazily where they are used.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
RESULT_PREFIX = "@@BENCH_RESULT@@ "


# --------------------------------------------------------------------------- #
# parent side
# --------------------------------------------------------------------------- #
def thread_env(threads: int, fresh_numba_cache: bool = True) -> dict:
    """Environment for a worker limited to ``threads`` threads.

    With ``fresh_numba_cache`` the worker gets an empty ``NUMBA_CACHE_DIR``, so a
    library using ``@njit(cache=True)`` really compiles in its first call instead
    of loading what an earlier subprocess wrote: every "first fit" is a cold JIT.
    """
    env = os.environ.copy()
    for var in THREAD_VARS:
        env[var] = str(threads)
    if fresh_numba_cache:
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_numba_cache_")
    return env


def run_worker(script: str | Path, args: list[str], threads: int, timeout: float) -> dict:
    """Run one measurement in a fresh interpreter and return its result dict.

    The worker must print exactly one line starting with ``RESULT_PREFIX``
    (see ``emit_result``).  Failures and timeouts come back as
    ``{"ok": False, "error": ...}`` so one broken measurement never stops a run.
    """
    cmd = [sys.executable, str(script), *args]
    env = thread_env(threads)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f} s", "threads": threads}
    finally:
        _remove_tree(env["NUMBA_CACHE_DIR"])
    wall = time.perf_counter() - start

    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX):])
            result["subprocess_wall_s"] = round(wall, 3)
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
    return {"ok": False, "error": "\n".join(tail), "returncode": proc.returncode, "threads": threads}


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def numba_threading_layer() -> str:
    """Name of the threading layer numba picks here (needs one parallel call)."""
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def _touch(x):
        total = 0.0
        for i in numba.prange(x.shape[0]):
            total += x[i]
        return total

    _touch(np.ones(4))
    return numba.threading_layer()


def git_revision(repo: Path) -> dict:
    def _git(*args):
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None

    return {"commit": _git("rev-parse", "HEAD"), "dirty": bool(_git("status", "--porcelain"))}


def machine_info(packages: list[str]) -> dict:
    """Hardware, software and date facts to store next to the numbers."""
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_total_gib": _memory_total_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numba_threading_layer": numba_threading_layer(),
        "versions": {name: package_version(name) for name in packages},
    }


def _memory_total_gib() -> float | None:
    try:
        import psutil

        return round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        return None


def write_json(path: str | Path, obj: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")
    return path


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """GitHub-style table; ``None`` cells print as an em dash."""

    def cell(value):
        return "—" if value is None else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# worker side
# --------------------------------------------------------------------------- #
def emit_result(result: dict) -> None:
    """Print the worker's result for ``run_worker`` to pick up."""
    result.setdefault("ok", True)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def rss_mib() -> float:
    """Current resident set size of this process, MiB."""
    with open("/proc/self/statm") as fh:
        resident_pages = int(fh.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident set size so far (``ru_maxrss`` is KiB on Linux), MiB."""
    return resource.getrusage(who).ru_maxrss / 1024


class CpuMonitor:
    """How busy the machine was while this process measured something.

    ``start()`` then ``stop()`` returns, over that interval: the wall time, the
    cores this process (and its live children, e.g. joblib workers) kept busy on
    average, and the cores everything else on the machine kept busy on average
    (``other_cores_busy``; near 0 on a quiet machine).  Needs psutil.
    """

    def start(self) -> "CpuMonitor":
        import psutil

        self._proc = psutil.Process()
        self._t0 = time.perf_counter()
        self._sys0 = _system_busy_s()
        self._own0 = self._own_cpu_s()
        return self

    def stop(self) -> dict:
        wall = time.perf_counter() - self._t0
        system = _system_busy_s() - self._sys0
        own = self._own_cpu_s() - self._own0
        return {
            "wall_s": round(wall, 3),
            "own_cores_busy": round(own / wall, 2) if wall > 0 else None,
            "other_cores_busy": round(max(system - own, 0.0) / wall, 2) if wall > 0 else None,
            "loadavg_1min": round(os.getloadavg()[0], 2),
        }

    def _own_cpu_s(self) -> float:
        total = _cpu_s(self._proc)
        for child in self._proc.children(recursive=True):
            try:
                total += _cpu_s(child)
            except Exception:  # child exited meanwhile
                pass
        return total


def _cpu_s(proc) -> float:
    t = proc.cpu_times()
    return t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)


def _system_busy_s() -> float:
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def machine_busy_cores(seconds: float = 1.0) -> float:
    """Cores kept busy by anything on the machine over the next ``seconds``."""
    start = _system_busy_s()
    time.sleep(seconds)
    return (_system_busy_s() - start) / seconds


def wait_until_quiet(max_busy_cores: float, max_wait_s: float, poll_s: float = 5.0) -> dict:
    """Wait (at most ``max_wait_s``) until other processes use < ``max_busy_cores``.

    Returns how long it waited and the last reading, to be stored with the result.
    """
    waited = 0.0
    busy = machine_busy_cores()
    while busy >= max_busy_cores and waited < max_wait_s:
        time.sleep(poll_s)
        waited += poll_s + 1.0
        busy = machine_busy_cores()
    return {"waited_s": round(waited, 1), "busy_cores_at_launch": round(busy, 2)}


def timed(fn, *args, **kwargs):
    """Return ``(seconds, fn(*args, **kwargs))``."""
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


class StepLog(logging.Handler):
    """The dmargin logger's step records (``"... took X s"``) while attached.

    ``StepLog.attach()`` adds one to the ``dmargin`` logger at DEBUG level;
    ``seconds(prefix)`` lists the durations of the steps whose message starts
    with ``prefix`` (e.g. ``"I-RELIEF iteration"``).
    """

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    @classmethod
    def attach(cls):
        log = logging.getLogger("dmargin")
        handler = cls()
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)
        return handler

    def seconds(self, prefix):
        return [float(m.split(" took ")[1].split()[0]) for m in self.lines
                if m.startswith(prefix) and " took " in m]
