"""Shared helpers of the benchmark scripts in this folder.

Every script runs as ``python benchmarks/bench_<name>.py [--quick]`` and imports
this module (and ``_datasets`` when it reads the shared data) with the same two
lines::

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _harness as harness  # noqa: E402

Command line (``options``, ``parse_args``): the options every script shares --
``--quick`` (small sizes, one repeat, no waiting for a quiet machine; results in
``results/quick/``), ``--variant NAME`` (the key of the run in the benchmark's
results file), ``--idle-wait`` and ``--attempts`` where a script waits for a quiet
machine, and the hidden ``--worker SPEC`` of scripts that measure in fresh
subprocesses.

Parent side:
    ``launch``       wait (bounded) for a quiet machine, run one measurement in a
                     fresh subprocess (``run_worker``), repeat it while other
                     processes disturbed it.
    ``run_worker``   run ``python <script> <args>`` in a fresh subprocess with the
                     thread-count environment variables set, and return the JSON
                     result the worker printed.
    ``machine_info`` CPU model, core count, library versions, numba threading
                     layer, date, and the machine's peak for pair-features
                     (``machine_peak``: ``_peak.py``, once per run).
    ``wait_until_quiet``  on a shared machine, wait (bounded) until other
                     processes leave the cores alone.
    ``write_variant``  store a run as one variant of ``results/<benchmark>.json``
                     (``{"benchmark": ..., "variants": {"default": ..., ...}}``;
                     ``results/quick/`` for ``--quick``), atomically.
    ``markdown_table``.

Speed cells (one estimator of one library at one N and thread count, each in a
fresh subprocess; ``bench_surf_speed.py``, ``bench_skrebate08_speed.py``):
    ``speed_cells``  the specs of a comparison (the slow peer fits once, at one
                     thread, from a size on); ``launch_cells`` runs them;
    ``fit_cell``     the worker's measurement: a first fit with JIT, then the
                     best of a few steady fits;
    ``interleaved_rounds``  several estimators in one process, a warm-up fit
                     each, then rounds fitting each once, the order alternating;
    ``find_cell``, ``cell_label``, ``top_features`` read the results.

Worker side:
    ``serve_worker`` run the measurement a ``--worker SPEC`` names and print its
                     result (``emit_result``) for ``run_worker`` to pick up.
    ``CpuMonitor``   cores used by this process and by everything else while
                     something was measured.
    ``fused_abs_diff``  the machine's limit for pairwise work: a plain fused
                     numba loop over all ordered pairs of rows.
    ``rss_mib``, ``peak_rss_mib``, ``timed``, ``StepLog``.

Only the standard library is needed at import time; numpy/numba/psutil are
imported lazily where they are used.
"""

from __future__ import annotations

import argparse
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

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
#: Where ``--quick`` runs write (git-ignored): a quick run never replaces a full result.
QUICK_RESULTS = RESULTS / "quick"

THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
RESULT_PREFIX = "@@BENCH_RESULT@@ "


# --------------------------------------------------------------------------- #
# command line
# --------------------------------------------------------------------------- #
def options(
    doc: str,
    *,
    quick: str,
    idle_wait: float | None = None,
    attempts: int | None = None,
    worker: bool = False,
    variant: bool = True,
) -> argparse.ArgumentParser:
    """The parser with the options the benchmark scripts share; add the script's own to it.

    ``--quick`` (help text ``quick``): small sizes and one repeat, the same code
    paths and comparisons as the full run; its result goes to ``results/quick/``.
    ``--variant NAME`` (unless ``variant=False``): the key the run is stored
    under in the benchmark's results file (``write_variant``; default
    ``default``), so a rerun with other options sits beside the main one
    instead of replacing it.  ``idle_wait`` / ``attempts`` (the full
    run's defaults) add ``--idle-wait S`` / ``--attempts K``; a quick run neither
    waits for a quiet machine nor repeats a disturbed measurement unless they are
    given.  ``worker`` adds the hidden ``--worker SPEC`` of the measurement
    subprocesses (``launch``, ``serve_worker``).  Read them with ``parse_args``.
    """
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=quick)
    if variant:
        parser.add_argument(
            "--variant",
            default="default",
            metavar="NAME",
            help="store the run under this key of the benchmark's results file, beside "
            "the other variants (default: default)",
        )
    full = {}
    if idle_wait is not None:
        parser.add_argument(
            "--idle-wait",
            type=float,
            default=None,
            metavar="S",
            help="before each measurement wait up to S seconds for a quiet machine "
            f"(default {idle_wait:g}; 0 with --quick)",
        )
        full["idle_wait"] = idle_wait
    if attempts is not None:
        parser.add_argument(
            "--attempts",
            type=int,
            default=None,
            metavar="K",
            help="run a measurement disturbed by other processes up to K times in all, "
            f"keeping the least disturbed run (default {attempts}; 1 with --quick)",
        )
        full["attempts"] = attempts
    if worker:
        parser.add_argument("--worker", metavar="SPEC", help=argparse.SUPPRESS)
    parser.full_run_defaults = full
    return parser


def parse_args(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Parse; ``--idle-wait`` / ``--attempts`` not given: 0 / 1 with ``--quick``, else the full defaults."""
    args = parser.parse_args(argv)
    quick_values = {"idle_wait": 0.0, "attempts": 1}
    for name, full in getattr(parser, "full_run_defaults", {}).items():
        if getattr(args, name) is None:
            setattr(args, name, quick_values[name] if args.quick else full)
    return args


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


def run_worker(
    script: str | Path,
    args: list[str],
    threads: int,
    timeout: float,
    *,
    env: dict | None = None,
    python: str = sys.executable,
    cwd: str | None = None,
) -> dict:
    """Run one measurement in a fresh interpreter and return its result dict.

    The worker must print exactly one line starting with ``RESULT_PREFIX``
    (see ``emit_result``).  Failures and timeouts come back as
    ``{"ok": False, "error": ...}`` so one broken measurement never stops a run.
    Without ``env`` the worker gets ``thread_env(threads)`` (its own empty numba
    cache, removed afterwards); with ``env`` it gets exactly that environment.
    """
    cmd = [python, str(script), *args]
    own_env = env is None
    if own_env:
        env = thread_env(threads)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f} s", "threads": threads}
    finally:
        if own_env:
            _remove_tree(env["NUMBA_CACHE_DIR"])
    wall = time.perf_counter() - start

    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
            result["subprocess_wall_s"] = round(wall, 3)
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
    return {
        "ok": False,
        "error": "\n".join(tail),
        "returncode": proc.returncode,
        "threads": threads,
    }


def launch(
    script: str | Path,
    spec: dict,
    *,
    threads: int,
    timeout: float,
    quiet_cores: float = 0.3,
    idle_wait: float = 0.0,
    attempts: int = 1,
) -> dict:
    """One measurement ``spec`` in a fresh subprocess of ``script`` (``--worker SPEC``).

    Before each run wait (at most ``idle_wait`` s) until other processes use
    fewer than ``quiet_cores`` cores.  When they kept that many busy during the
    measurement (the worker's ``other_cores_busy``), run it again, up to
    ``attempts`` runs in all, and keep the least disturbed run.  The result
    carries ``spec``, ``launch`` (the wait), ``attempt`` and ``attempts``.
    """
    label = " ".join(
        f"{k}={v}" for k, v in spec.items() if isinstance(v, (int, float, str)) and k != "path"
    )
    best = None
    for attempt in range(1, max(attempts, 1) + 1):
        quiet = wait_until_quiet(quiet_cores, idle_wait)
        print(
            f"[bench] {label} #{attempt} (busy at launch: {quiet['busy_cores_at_launch']} cores) ...",
            file=sys.stderr,
            flush=True,
        )
        result = run_worker(script, ["--worker", json.dumps(spec)], threads, timeout)
        result.setdefault("spec", spec)
        result.update(launch=quiet, attempt=attempt)
        busy = result.get("other_cores_busy")
        status = (
            f"ok, others busy {busy} cores"
            if result.get("ok")
            else f"FAILED: {result.get('error', '')[-400:]}"
        )
        print(
            f"[bench]   {status} ({result.get('subprocess_wall_s', '?')} s)",
            file=sys.stderr,
            flush=True,
        )
        if best is None or _less_disturbed(result, best):
            best = result
        if not result.get("ok") or busy is None or busy < quiet_cores:
            break
    best["attempts"] = attempt
    return best


def _less_disturbed(new: dict, old: dict) -> bool:
    if not old.get("ok"):
        return bool(new.get("ok"))
    return bool(new.get("ok")) and (new.get("other_cores_busy") or 0) < (
        old.get("other_cores_busy") or 0
    )


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's model name, with its family, model and widest vector extension where
    ``/proc/cpuinfo`` has them: virtual machines often name only the vendor's line
    ("AMD EPYC"), which two generations of different speed share."""
    try:
        fields = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if not key and fields:
                break  # the first processor's block is enough
            fields.setdefault(key, value.strip())
    except OSError:
        fields = {}
    name = fields.get("model name") or platform.processor() or "unknown"
    flags = set(fields.get("flags", "").split())
    vector = next(
        (label for flag, label in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags), None
    )
    detail = (
        [f"family {fields['cpu family']} model {fields['model']}"] if "cpu family" in fields else []
    )
    detail += [vector] if vector else []
    return f"{name} ({', '.join(detail)})" if detail else name


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

    # Results an earlier run wrote are not a change to the code measured.
    status = _git("status", "--porcelain", "--", ".", ":(exclude)benchmarks/results")
    return {"commit": _git("rev-parse", "HEAD"), "dirty": bool(status)}


def machine_info(packages: list[str], *, peak: bool = True, quick: bool | None = None) -> dict:
    """Hardware, software and date facts to store next to the numbers.

    With ``peak`` (the default) the entry ``"peak"`` holds the machine's peak for
    Manhattan pair-features on one core, float32 and float64 (``machine_peak``):
    what every kernel's rate is quoted against.  ``quick`` (default: ``--quick``
    on the command line) measures it with fewer repeats.
    """
    info = {
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
    if peak:
        info["peak"] = machine_peak("--quick" in sys.argv[1:] if quick is None else quick)
    return info


#: The environment variable through which a benchmark hands its measured peak to the
#: subprocesses it starts (they inherit it and measure nothing again).
PEAK_ENV = "DMARGIN_BENCH_PEAK"
_PEAK = None


def machine_peak(quick: bool = False) -> dict:
    """The machine's peak for Manhattan pair-features (``_peak.measure_in_subprocess``),
    measured once per run: cached in this process and handed to its subprocesses
    through :data:`PEAK_ENV`.

    A full run (``quick`` false) first waits up to :data:`PEAK_IDLE_WAIT_S` for a quiet
    machine, and measures again (up to :data:`PEAK_ATTEMPTS` in all, keeping the fastest)
    when other processes kept a core busy meanwhile.

    ``{"float32": {"pair_features_per_s", "blocking", "features", "by_width"},
    "float64": {...}, "rows", "repeats", "launch", "other_cores_busy", ...}``, or
    ``{"ok": False, "error"}``.
    """
    global _PEAK
    if _PEAK is None and os.environ.get(PEAK_ENV):
        _PEAK = json.loads(os.environ[PEAK_ENV])
    if _PEAK is None:
        if str(HERE) not in sys.path:
            sys.path.insert(0, str(HERE))
        import _peak

        for _ in range(1 if quick else PEAK_ATTEMPTS):
            quiet = wait_until_quiet(0.3, 0.0 if quick else PEAK_IDLE_WAIT_S)
            print(
                f"[bench] measuring the machine's peak (one core; busy at launch: "
                f"{quiet['busy_cores_at_launch']} cores) ...",
                file=sys.stderr,
                flush=True,
            )
            monitor = CpuMonitor().start()
            found = _peak.measure_in_subprocess(quick=quick)
            found.update(launch=quiet, other_cores_busy=monitor.stop()["other_cores_busy"])
            if _PEAK is None or (found.get("ok") and _faster(found, _PEAK)):
                _PEAK = found  # another process can only have slowed a run: keep the fastest
            if found.get("ok") and (found["other_cores_busy"] or 0) < 0.3:
                break
        if _PEAK.get("ok"):
            os.environ[PEAK_ENV] = json.dumps(_PEAK)
    return _PEAK


#: A full run waits up to this long for a quiet machine before measuring the peak, and
#: measures it up to this many times while other processes kept a core busy.
PEAK_IDLE_WAIT_S = 60.0
PEAK_ATTEMPTS = 2


def _faster(new: dict, old: dict) -> bool:
    if not old.get("ok"):
        return True
    return new["float32"]["pair_features_per_s"] > old["float32"]["pair_features_per_s"]


def peak_rate(peak: dict | None, dtype: str = "float32") -> float | None:
    """The ``dtype`` peak in pair-features per second, or ``None`` when it was not measured."""
    if not peak or not peak.get("ok", True) or dtype not in peak:
        return None
    return peak[dtype]["pair_features_per_s"]


def peak_fraction(rate, peak: dict | None, dtype: str = "float32", threads: int = 1):
    """``rate`` (pair-features/s on ``threads`` threads) over ``threads`` times the one-core
    ``dtype`` peak, or ``None`` when either is unknown."""
    top = peak_rate(peak, dtype)
    return None if rate is None or top is None else rate / (threads * top)


def _memory_total_gib() -> float | None:
    try:
        import psutil

        return round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        return None


# --------------------------------------------------------------------------- #
# results: one JSON per benchmark, its runs keyed by variant
# --------------------------------------------------------------------------- #
def results_file(benchmark: str, quick: bool = False) -> Path:
    """``results/<benchmark>.json``, or ``results/quick/<benchmark>.json`` for ``--quick`` runs."""
    return (QUICK_RESULTS if quick else RESULTS) / f"{benchmark}.json"


def load_results(benchmark: str, quick: bool = False) -> dict:
    """``{"benchmark": name, "variants": {variant: result, ...}}`` (no variant yet: an empty dict)."""
    path = results_file(benchmark, quick)
    if not path.exists():
        return {"benchmark": benchmark, "variants": {}}
    return json.loads(path.read_text())


def load_variant(benchmark: str, variant: str = "default", quick: bool = False) -> dict:
    """One variant's result; ``KeyError`` when that variant was never written."""
    return load_results(benchmark, quick)["variants"][variant]


def write_variant(
    benchmark: str, result: dict, *, variant: str = "default", quick: bool = False
) -> Path:
    """Store ``result`` as ``variant`` of the benchmark's results file; the other variants stay.

    Read-modify-write under an exclusive lock on the results folder (two runs
    finishing together both keep their variant), written to a temporary file
    in the same folder and moved over the old one with ``os.replace`` (a reader
    sees the old file or the new one, never half of one).  The result records
    the command line that produced it (``"command"``).
    """
    import fcntl
    import shlex

    path = results_file(benchmark, quick)
    path.parent.mkdir(parents=True, exist_ok=True)
    script = Path(sys.argv[0]).resolve()
    script = script.relative_to(REPO) if script.is_relative_to(REPO) else script
    result = {**result, "command": shlex.join(["python", str(script), *sys.argv[1:]])}
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        doc = load_results(benchmark, quick)
        doc["variants"][variant] = result
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
        ) as tmp:
            try:
                tmp.write(dumps(doc))
            except BaseException:
                os.unlink(tmp.name)
                raise
        os.replace(tmp.name, path)
    finally:
        os.close(folder)  # releases the lock
    return path


#: A results file larger than this indented is written without indentation.
MAX_INDENTED_BYTES = 2 * 2**20


def dumps(obj) -> str:
    """JSON text as the results files hold it (numpy scalars and arrays as plain numbers and lists)."""
    text = json.dumps(obj, indent=2, default=_json_default) + "\n"
    if len(text) > MAX_INDENTED_BYTES:  # per-file detail (gametes.json): kept compact
        text = json.dumps(obj, separators=(",", ":"), default=_json_default) + "\n"
    return text


def _json_default(obj):
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


# --------------------------------------------------------------------------- #
# speed cells: one estimator of one library at one (N, threads), in a fresh subprocess
# --------------------------------------------------------------------------- #
def speed_cells(
    ns,
    table: dict,
    libraries,
    threads,
    *,
    key: str,
    features: int,
    steady_repeats: int,
    steady_budget_s: float,
    peer: str = "skrebate",
    peer_single_fit_from_n: int = 4000,
    peer_one_thread_from_n: int = 4000,
):
    """The ``--worker`` specs of a speed comparison, one per cell.

    Parameters
    ----------
    ns, threads : iterables of int
        The sizes and thread counts.
    table : dict
        ``{name: {library: method}}``: who implements each row; a library
        missing from a row has no cell there.
    libraries : iterable of str
        The libraries, in the order their cells run.
    key : str
        The spec's key for the row's name (``"algorithm"``, ``"estimator"``).
    features, steady_repeats, steady_budget_s
        Copied into each spec for ``fit_cell``.
    peer, peer_single_fit_from_n, peer_one_thread_from_n
        The slow peer (pure-Python loops over a dense N x N matrix) fits once
        from ``peer_single_fit_from_n`` rows on, and at one thread only from
        ``peer_one_thread_from_n`` on (its ``n_jobs`` parallelises the scoring
        only).

    Yields
    ------
    dict
        ``{"kind": "fit", key: name, "library", "method", "n", "features",
        "threads", "steady_repeats", "steady_budget_s"}``.
    """
    for n in ns:
        for name, methods in table.items():
            for library in libraries:
                if library not in methods:
                    continue
                for t in threads:
                    if library == peer and n >= peer_one_thread_from_n and t > 1:
                        continue
                    single = library == peer and n >= peer_single_fit_from_n
                    yield {
                        "kind": "fit",
                        key: name,
                        "library": library,
                        "method": methods[library],
                        "n": n,
                        "features": features,
                        "threads": t,
                        "steady_repeats": 0 if single else steady_repeats,
                        "steady_budget_s": steady_budget_s,
                    }


def launch_cells(
    script: str | Path, specs, args: argparse.Namespace, *, timeout: float, quiet_cores: float
) -> list[dict]:
    """``launch`` every spec of ``specs`` in turn, each at its own ``threads``, with the
    run's ``--idle-wait`` and ``--attempts``."""
    return [
        launch(
            script,
            spec,
            threads=spec["threads"],
            timeout=timeout,
            quiet_cores=quiet_cores,
            idle_wait=args.idle_wait,
            attempts=args.attempts,
        )
        for spec in specs
    ]


def fit_cell(
    build,
    X,
    y,
    *,
    steady_repeats: int,
    steady_budget_s: float,
    top: int = 10,
    attributes=(),
    memory=None,
) -> dict:
    """Worker side of a speed cell: time one estimator's fits in this fresh process.

    One timed first fit (with any JIT compilation: the process's numba cache is
    empty), then the best of up to ``steady_repeats`` further fits, stopping early
    once they used ``steady_budget_s``.

    Parameters
    ----------
    build : callable
        ``() -> estimator``, a fresh unfitted one per fit.
    X, y : array-like
        The data, the same for every library.
    top : int
        How many of the highest-scoring features to list (``"top<k>"``).
    attributes : iterable of str
        Fitted attributes of the last fit to report (``n_iter_``), where present.
    memory : callable or None
        ``(rss_before_mib, peak_rss_before_mib) -> dict`` of memory readings,
        called after the fits.

    Returns
    -------
    dict
        ``first_fit_s``, ``steady_fits_s``, ``steady_best_s`` (None without
        repeats), the last fit's ``feature_importances`` and ``top<k>``,
        ``input_unchanged`` (X's bytes after the fits), ``cpu_during_fits``
        (``CpuMonitor``), the ``attributes``, and ``memory``'s readings.
    """
    import hashlib

    import numpy as np

    def digest():
        return hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest()

    before = digest()
    build()  # import the library before anything is measured
    rss_before, peak_before = rss_mib(), peak_rss_mib()
    monitor = CpuMonitor().start()
    first_s, est = timed(build().fit, X, y)
    steady = []
    while len(steady) < steady_repeats and sum(steady) < steady_budget_s:
        seconds, est = timed(build().fit, X, y)
        steady.append(seconds)
    cpu = monitor.stop()
    scores = np.asarray(est.feature_importances_, dtype=np.float64)
    result = {
        "first_fit_s": round(first_s, 4),
        "steady_fits_s": [round(s, 4) for s in steady],
        "steady_best_s": round(min(steady), 4) if steady else None,
        f"top{top}": top_features(scores, top),
        "feature_importances": [float(v) for v in scores],
        "input_unchanged": digest() == before,
        "cpu_during_fits": cpu,
    }
    result.update({name: _plain(getattr(est, name)) for name in attributes if hasattr(est, name)})
    if memory is not None:
        result.update(memory(rss_before, peak_before))
    return result


def interleaved_rounds(builds: dict, X, y, rounds: int) -> dict:
    """Time several estimators against each other in this process, in interleaved rounds.

    One warm-up fit of each (any JIT compilation), then ``rounds`` rounds, each
    fitting every estimator once on a fresh instance, in the order of ``builds``
    in the even rounds and the reverse order in the odd ones (who goes first
    alternates, so a drift of the machine's speed falls on all alike).  Compare
    the best fits: noise only ever adds time.

    Parameters
    ----------
    builds : dict
        ``{name: () -> estimator}``.
    X, y : array-like
        The data, the same for every estimator.
    rounds : int

    Returns
    -------
    dict
        ``{name: {"warmup_s", "times_s", "best_s", "top10", "feature_importances"}}``
        and ``"order"``: the names in the order each round fitted them.
    """
    import numpy as np

    out = {name: {"times_s": []} for name in builds}
    for name, build in builds.items():
        seconds, est = timed(build().fit, X, y)
        out[name]["warmup_s"] = round(seconds, 4)
    names, orders, last = list(builds), [], {}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        orders.append(order)
        for name in order:
            seconds, last[name] = timed(builds[name]().fit, X, y)
            out[name]["times_s"].append(round(seconds, 5))
    for name in names:
        times = out[name]["times_s"]
        out[name]["best_s"] = min(times) if times else None
        scores = np.asarray(last[name].feature_importances_, dtype=np.float64)
        out[name]["top10"] = top_features(scores, 10)
        out[name]["feature_importances"] = [float(v) for v in scores]
    out["order"] = orders
    return out


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def top_features(scores, k: int = 10) -> list[int]:
    """The ``k`` highest-scoring features, ties to the lower index."""
    import numpy as np

    return [int(i) for i in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:k]]


def find_cell(results: list[dict], **match) -> dict | None:
    """The first successful result whose spec has the values ``match``; None when there is
    none (the cell did not run, or failed)."""
    for r in results:
        if all(r["spec"].get(k) == v for k, v in match.items()):
            return r if r.get("ok") else None
    return None


def cell_label(result: dict | None) -> str | None:
    """A cell's seconds as the speed tables print them: ``steady (first)``, or ``first*`` for a
    single fit."""
    if result is None:
        return None
    first = f"{result['first_fit_s']:.3g}"
    if result.get("steady_best_s") is None:
        return f"{first}*"
    return f"{result['steady_best_s']:.3g} ({first})"


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
def serve_worker(spec_json: str, workers: dict) -> None:
    """Worker side of ``launch``: run ``workers[spec["kind"]](spec)`` and emit its result.

    The result is emitted with the ``spec``, its ``threads`` and
    ``other_cores_busy``, the largest such reading anywhere in the result (how
    much other processes disturbed the measurement).  scikit-learn's
    ``ConvergenceWarning`` is silenced: fits with ``tol=0`` stop at ``max_iter``
    on purpose.
    """
    import warnings

    try:
        from sklearn.exceptions import ConvergenceWarning

        warnings.filterwarnings("ignore", category=ConvergenceWarning)
    except ImportError:
        pass
    spec = json.loads(spec_json)
    result = workers[spec["kind"]](spec)
    busy = list(find_key(result, "other_cores_busy"))
    result["other_cores_busy"] = max(busy) if busy else None
    head = {"spec": spec, **({"threads": spec["threads"]} if "threads" in spec else {})}
    emit_result({**head, **result})


def find_key(obj, key):
    """Every non-None value stored under ``key`` anywhere in nested dicts."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key and v is not None:
                yield v
            else:
                yield from find_key(v, key)


def fused_abs_diff(X, acc) -> None:
    """``acc[i] += sum_j sum_k |X[i, k] - X[j, k]|`` over all ordered pairs of rows.

    The machine's practical limit for pairwise work: one plain fused numba loop
    (``prange`` over i, accumulation in X's dtype, ``fastmath``), against which
    the engine's rates are quoted.  Compiled on first use.
    """
    _compiled_fused_abs_diff()(X, acc)


_FUSED = None


def _compiled_fused_abs_diff():
    global _FUSED
    if _FUSED is None:
        from numba import njit, prange

        @njit(parallel=True, fastmath=True)
        def kernel(X, acc):
            n, a = X.shape
            zero = X.dtype.type(0)  # accumulate in X's own precision
            for i in prange(n):
                xi = X[i]
                total = acc[i]
                for j in range(n):
                    xj = X[j]
                    pair = zero
                    for k in range(a):
                        pair += abs(xi[k] - xj[k])
                    total += pair
                acc[i] = total

        _FUSED = kernel
    return _FUSED


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

    def start(self) -> CpuMonitor:
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

    ``StepLog.attach()`` adds one to the ``dmargin`` logger at DEBUG level
    (``detach()`` undoes it); ``seconds(prefix)`` lists the durations of the
    steps whose message starts with ``prefix`` (e.g. ``"I-RELIEF iteration"``),
    ``times(prefix)`` when each of them was logged (``time.time()``, to the
    microsecond, where the logged duration has milliseconds only).
    """

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines, self.created = [], []
        self._level = logging.NOTSET

    def emit(self, record):
        self.lines.append(record.getMessage())
        self.created.append(record.created)

    @classmethod
    def attach(cls):
        log = logging.getLogger("dmargin")
        handler = cls()
        handler._level = log.level
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)
        return handler

    def detach(self):
        log = logging.getLogger("dmargin")
        log.removeHandler(self)
        log.setLevel(self._level)

    def clear(self):
        self.lines.clear()
        self.created.clear()

    def seconds(self, prefix):
        return [
            float(m.split(" took ")[1].split()[0])
            for m in self.lines
            if m.startswith(prefix) and " took " in m
        ]

    def times(self, prefix):
        return [t for t, m in zip(self.created, self.lines) if m.startswith(prefix)]
