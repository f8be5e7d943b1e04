"""The same fits on Spark and on dask, on this machine, on the same Parquet files, in one run.

What is measured (results go to ``benchmarks/results/spark.json``, or
``benchmarks/results/quick/spark.json`` with ``--quick``):

1. Data: ``N x 50`` rows of ``_synthetic`` (two classes, 10 informative
   features, 40 noise features) written once per N to Parquet in row groups of
   100,000 rows into a cache directory (``--data-dir``; default
   ``<temp dir>/dmargin_bench_data``, shared with ``bench_large.py``), for
   N = 10^6 and 10^7 (``--rows``); ``--quick`` 10^4 rows in row groups of 2,500.
   The exact fit reads a file of 20,000 rows (2,000 with ``--quick``) in row
   groups of 2,500 (250).
2. For each N and each backend, one fresh driver subprocess (so that the
   backends' processes and peaks do not mix), one thread per worker process
   (``NUMBA_NUM_THREADS=1``), both backends on the machine's two cores:

   - **Spark**: ``dmargin.spark.local_session("local[2]", spark_driver_memory=...)``
     (``--driver-memory``, default 10g: in local mode the executor is the
     driver's JVM, which caches the row blocks), then per fit
     ``dmargin.spark.fit(est, spark.read.parquet(path), label="label")``;
     Spark's own partitioning of the file (``spark.sql.files.maxPartitionBytes``,
     128 MiB unless ``--spark-max-partition-mib``).
   - **dask**: a ``distributed.LocalCluster`` of 2 worker processes x 1 thread,
     then per fit ``X, y = dmargin.read_parquet(path, label="label")`` (one block
     per row group) and ``est.fit(X, y)``.

   Each subprocess first warms up (a small fit of each estimator: the worker
   processes compile or load the numba kernels), then measures the backend's
   fixed costs -- the latency of a trivial job (Spark: a two-partition
   ``count``; dask: a ``submit``), and a tiny fit (``ReliefF(n_anchors=50)`` on
   500 x 5 rows in two partitions) with, on Spark, the seconds per wave (one
   wave is one Spark job) and the read pass apart -- then times the fits:
   ``ReliefF(n_anchors=1000, random_state=0)`` and
   ``MultiSURF(n_anchors=1000, random_state=0)``, the median of ``--repeats``
   fits (3 at 10^6, 1 at 10^7; 1 with ``--quick``), each timed from the read
   call (lazy on both) to the fitted estimator.  The exact ``ReliefF()`` runs
   once, last, in a subprocess of its own per backend (Spark's exact fit runs
   its tiles on pairs of partitions; both backends read the exact file in
   about 8 blocks).

   Peak RSS during each fit, psutil every 0.2 s: the driver (this Python
   process); dask's worker processes; Spark's JVM (driver and executor in local
   mode) and its ``pyspark.daemon`` Python workers (each, and their sum at one
   sample).  ``spark_stats_`` of the last fit: waves (Spark jobs), executor
   tasks, bytes of partials that came to the driver, seconds in waves.
3. Agreement: the largest difference of ``feature_importances_`` between the
   Spark and the dask fit of the same N and estimator (both read the file's
   rows in its order, so the anchors are the same rows), and the informative
   features among each fit's top 10.
4. The goal: Spark within 1.5x of dask at 10^7 rows (reported, whatever the
   measured ratio is).

The machine's load average is stored before and after each subprocess (the
development machine is shared).  A backend that fails (memory at 10^7) is
recorded with its error.  The results file is written after each subprocess, so
a long run keeps what it measured; ``--add`` adds a run's fits to the stored
variant (replacing the same backend, N and estimator) instead of starting anew.

Usage::

    python benchmarks/bench_spark.py --quick            # 10^4 rows, exact at 2,000 (a minute or two)
    python benchmarks/bench_spark.py                    # 10^6 and 10^7 rows (half an hour and more)
    python benchmarks/bench_spark.py --rows 1000000     # one size
    python benchmarks/bench_spark.py --rows 10000000 --estimators multisurf --no-exact --add
    python benchmarks/bench_spark.py --render           # the stored run's markdown again
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
import _synthetic as synthetic  # noqa: E402

A = synthetic.A
TOP = synthetic.N_INFORMATIVE
ROWS_FULL = (1_000_000, 10_000_000)
ROWS_QUICK = (10_000,)
ROW_GROUP_FULL, ROW_GROUP_QUICK = 100_000, 2_500
EXACT_N_FULL, EXACT_N_QUICK = 20_000, 2_000
EXACT_BLOCKS = 8
BACKENDS = ("dask", "spark")
WORKERS = 2
TIMEOUT_FULL_S, TIMEOUT_QUICK_S = 3 * 3600, 900
SAMPLE_PERIOD_S = 0.2
GOAL_RATIO = 1.5
GOAL_N = 10_000_000
PACKAGES = ["numpy", "numba", "dask", "distributed", "pyarrow", "pyspark", "psutil", "dmargin"]

#: (label, constructor, parameters)
ESTIMATORS = {
    "relieff": ("ReliefF(n_anchors=1000)", "ReliefF", {"n_anchors": 1000, "random_state": 0}),
    "multisurf": ("MultiSURF(n_anchors=1000)", "MultiSURF", {"n_anchors": 1000, "random_state": 0}),
    "relieff_exact": ("ReliefF() exact", "ReliefF", {}),
}


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def build(key):
    import dmargin

    _, name, params = ESTIMATORS[key]
    return getattr(dmargin, name)(**params)


# --------------------------------------------------------------------------- #
# worker side: one backend, one subprocess
# --------------------------------------------------------------------------- #
class PeakSampler:
    """Peak RSS per role (``{role: callable -> pids}``), every ``period`` s; a role's
    peak of the sum over its processes at one sample too."""

    def __init__(self, roles, period=SAMPLE_PERIOD_S):
        import psutil

        self._psutil = psutil
        self._roles = roles
        self.peak = {role: 0 for role in roles}  # the largest single process
        self.peak_sum = {role: 0 for role in roles}  # the largest sum at one sample
        self.pids = {role: set() for role in roles}  # every process seen in the role
        self.samples = 0
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        for role, pids in self._roles.items():
            total = 0
            for pid in pids():
                try:
                    rss = self._psutil.Process(pid).memory_info().rss
                except self._psutil.Error:  # exited meanwhile
                    continue
                total += rss
                self.pids[role].add(pid)
                self.peak[role] = max(self.peak[role], rss)
            self.peak_sum[role] = max(self.peak_sum[role], total)
        self.samples += 1

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self._period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()

    def summary(self):
        mib = lambda b: round(b / 2**20, 1)  # noqa: E731
        return {
            "peak_rss_mib": {r: mib(v) for r, v in self.peak.items()},
            "peak_rss_sum_mib": {r: mib(v) for r, v in self.peak_sum.items()},
            "processes_seen": {r: len(v) for r, v in self.pids.items()},
            "rss_samples": self.samples,
        }


def _descendants():
    import psutil

    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _spark_roles():
    """Spark's processes under this driver: the JVM and its Python workers."""
    import psutil

    def jvm():
        return [p.pid for p in _descendants() if _name(p) == "java"]

    def python_workers():
        out = []
        for p in _descendants():
            try:
                if _name(p).startswith("python") and "pyspark" in " ".join(p.cmdline()):
                    out.append(p.pid)
            except psutil.Error:
                pass
        return out

    return {"driver": lambda: [os.getpid()], "jvm": jvm, "python_workers": python_workers}


def _spark_code():
    """What this process runs of ``dmargin.spark``: the commit and a digest of its files (the
    working tree may hold changes not yet committed)."""
    import hashlib

    import dmargin.spark

    folder = Path(dmargin.spark.__file__).parent
    digest = hashlib.sha1(b"".join(p.read_bytes() for p in sorted(folder.glob("*.py"))))
    return {"commit": harness.git_revision(harness.REPO)["commit"], "sha1": digest.hexdigest()[:12]}


def _name(proc):
    try:
        return proc.name()
    except Exception:
        return ""


def _tiny_frame(n, a, seed=7):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, a))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    return X, y


def _stats_dict(stats):
    if stats is None:
        return None
    waves = [list(w) for w in stats.waves]
    return {
        "waves": len(waves),
        "jobs_field": stats.jobs,
        "tasks": stats.tasks,
        "single_partition_tasks": sum(w[0] for w in waves),
        "pair_tasks": sum(w[1] for w in waves),
        "bytes_to_driver": stats.bytes_to_driver,
        "largest_result": stats.largest_result,
        "seconds_in_waves": round(stats.seconds, 3),
        "wave_shapes": waves[:200],
    }


class SparkBackend:
    name = "spark"

    def __init__(self, spec):
        import dmargin.spark

        start = time.perf_counter()
        conf = {"spark.driver.memory": spec["driver_memory"], **spec.get("spark_conf", {})}
        self.spark = dmargin.spark.local_session(f"local[{WORKERS}]", **conf)
        self.start_s = round(time.perf_counter() - start, 2)
        self.roles = _spark_roles()
        self.code = _spark_code()
        jvm = [p for p in _descendants() if _name(p) == "java"]
        xmx = [a for p in jvm for a in p.cmdline() if a.startswith("-Xmx")]
        self.info = {
            "session_start_s": self.start_s,
            "master": f"local[{WORKERS}]",
            "driver_memory": spec["driver_memory"],
            "jvm_xmx": xmx,
            "conf": conf,
            "dmargin_spark_code": self.code,
            "default_max_partition_bytes": self.spark.conf.get("spark.sql.files.maxPartitionBytes"),
        }
        self._default_split = self.spark.conf.get("spark.sql.files.maxPartitionBytes")
        if spec.get("max_partition_mib"):
            self._default_split = f"{int(spec['max_partition_mib'] * 2**20)}b"
            self.spark.conf.set("spark.sql.files.maxPartitionBytes", self._default_split)

    def frame(self, X, y, partitions):
        import pandas as pd

        pdf = pd.DataFrame(X, columns=[f"f{j:02d}" for j in range(X.shape[1])])
        pdf["label"] = y
        return self.spark.createDataFrame(pdf).coalesce(partitions)

    def fit_frame(self, est, df):
        import dmargin.spark

        return dmargin.spark.fit(est, df, label="label")

    def fit_path(self, est, path, split_bytes=None):
        self.spark.conf.set(
            "spark.sql.files.maxPartitionBytes",
            f"{split_bytes}b" if split_bytes else self._default_split,
        )
        df = self.spark.read.parquet(path)
        return self.fit_frame(est, df), None

    def partitions(self, path, split_bytes=None):
        self.spark.conf.set(
            "spark.sql.files.maxPartitionBytes",
            f"{split_bytes}b" if split_bytes else self._default_split,
        )
        return self.spark.read.parquet(path).rdd.getNumPartitions()

    def trivial_job(self):
        self.spark.sparkContext.parallelize(range(WORKERS), WORKERS).map(lambda v: v + 1).count()

    def close(self):
        self.spark.stop()


class DaskBackend:
    name = "dask"

    def __init__(self, spec):
        from distributed import Client, LocalCluster

        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.cluster = LocalCluster(
                n_workers=WORKERS,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                memory_limit=spec["memory_limit"],
            )
        self.client = Client(self.cluster)
        self.start_s = round(time.perf_counter() - start, 2)
        pids = list(self.client.run(os.getpid).values())
        self.roles = {"driver": lambda: [os.getpid()], "workers": lambda: pids}
        self.info = {
            "cluster_start_s": self.start_s,
            "workers": WORKERS,
            "threads_per_worker": 1,
            "memory_limit_mib": spec["memory_limit"] // 2**20,
        }

    def frame(self, X, y, partitions):
        import dask.array as da

        rows = -(-X.shape[0] // partitions)
        return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)

    def fit_frame(self, est, df):
        return est.fit(*df)

    def fit_path(self, est, path, split_bytes=None):
        import dmargin

        X, y = dmargin.read_parquet(path, label="label")
        return est.fit(X, y), X.numblocks[0]

    def partitions(self, path, split_bytes=None):
        import dmargin

        return dmargin.read_parquet(path, label="label")[0].numblocks[0]

    def trivial_job(self):
        self.client.submit(abs, -1, pure=False).result()

    def close(self):
        self.client.close()
        self.cluster.close()


def _median(values):
    return round(statistics.median(values), 3) if values else None


def fixed_costs(backend):
    """The latency of a trivial job and a tiny fit's cost (module docstring)."""
    import dmargin

    trivial = []
    for _ in range(5):
        start = time.perf_counter()
        backend.trivial_job()
        trivial.append(time.perf_counter() - start)
    X, y = _tiny_frame(500, 5)
    df = backend.frame(X, y, 2)
    fits, per_wave, read_pass, waves = [], [], [], None
    for _ in range(3):
        start = time.perf_counter()
        est = backend.fit_frame(dmargin.ReliefF(n_anchors=50, random_state=0), df)
        seconds = time.perf_counter() - start
        fits.append(seconds)
        stats = getattr(est, "spark_stats_", None)
        if stats is not None and stats.waves:
            waves = len(stats.waves)
            per_wave.append(stats.seconds / len(stats.waves))
            read_pass.append(seconds - stats.seconds)
    out = {
        "trivial_job_s": [round(t, 4) for t in trivial],
        "trivial_job_median_s": _median(trivial),
        "tiny_fit": "ReliefF(n_anchors=50) on 500 x 5 rows, 2 partitions",
        "tiny_fit_s": [round(t, 3) for t in fits],
        "tiny_fit_median_s": _median(fits),
    }
    if waves is not None:
        out.update(
            tiny_fit_waves=waves, seconds_per_wave=_median(per_wave), read_pass_s=_median(read_pass)
        )
    return out


def warm_up(backend):
    """A small fit of each estimator: the worker processes compile or load the kernels."""
    import dmargin

    start = time.perf_counter()
    X, y = _tiny_frame(2_000, A, seed=3)
    df = backend.frame(X, y, WORKERS * 2)
    backend.fit_frame(dmargin.ReliefF(n_anchors=100, random_state=0), df)
    backend.fit_frame(dmargin.MultiSURF(n_anchors=100, random_state=0), df)
    X, y = _tiny_frame(400, A, seed=4)
    backend.fit_frame(dmargin.ReliefF(), backend.frame(X, y, WORKERS * 2))
    return round(time.perf_counter() - start, 2)


def run_job(backend, job):
    """``job["repeats"]`` timed fits of one estimator on one Parquet file."""
    import numpy as np

    _, informative, _ = synthetic.layout(synthetic.SEED)
    out = {
        "estimator": job["estimator"],
        "label": ESTIMATORS[job["estimator"]][0],
        "n": job["n"],
        "backend": backend.name,
        "repeats": job["repeats"],
    }
    try:
        out["partitions"] = backend.partitions(job["path"], job.get("split_bytes"))
    except Exception as exc:
        out["partitions_error"] = f"{type(exc).__name__}: {exc}"[:300]
    times, peaks, cpu, est = [], [], [], None
    try:
        for _ in range(job["repeats"]):
            monitor = harness.CpuMonitor().start()
            with PeakSampler(backend.roles) as sampler:
                start = time.perf_counter()
                est, _ = backend.fit_path(
                    build(job["estimator"]), job["path"], job.get("split_bytes")
                )
                times.append(time.perf_counter() - start)
            cpu.append(monitor.stop())
            peaks.append(sampler.summary())
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        # the head says why (a Java stack trace follows Spark's reason)
        out.update(
            ok=False, error=text if len(text) <= 2000 else f"{text[:1500]} ... {text[-400:]}"
        )
    else:
        out["ok"] = True
    out["fit_s_each"] = [round(t, 3) for t in times]
    out["fit_s"] = _median(times)
    out["cpu_during_fit"] = cpu
    if peaks:
        roles = peaks[0]["peak_rss_mib"]
        out["peak_rss_mib"] = {r: max(p["peak_rss_mib"][r] for p in peaks) for r in roles}
        out["peak_rss_sum_mib"] = {r: max(p["peak_rss_sum_mib"][r] for p in peaks) for r in roles}
        out["processes_seen"] = [p["processes_seen"] for p in peaks]
    if est is not None and out["ok"]:
        w = np.asarray(est.feature_importances_, dtype=np.float64)
        top = sorted(int(i) for i in np.argsort(-w, kind="stable")[:TOP])
        out.update(
            weights=[float(v) for v in w],
            top10=top,
            informative_in_top10=len(set(top) & set(informative)),
        )
        out["spark_stats"] = _stats_dict(getattr(est, "spark_stats_", None))
    return out


def worker(spec):
    """One backend in this process: warm-up, fixed costs, then ``spec["jobs"]``."""
    out = {"backend": spec["backend"], "loadavg_before": list(os.getloadavg())}
    backend = (SparkBackend if spec["backend"] == "spark" else DaskBackend)(spec)
    try:
        out["setup"] = backend.info
        out["warmup_s"] = warm_up(backend)
        out["fixed_costs"] = fixed_costs(backend)
        out["jobs"] = []
        for job in spec["jobs"]:
            result = run_job(backend, job)
            log(
                f"{backend.name} {job['estimator']} n={job['n']}: "
                + (f"{result['fit_s']} s" if result.get("ok") else f"FAILED {result.get('error')}")
            )
            out["jobs"].append(result)
    finally:
        backend.close()
    out["loadavg_after"] = list(os.getloadavg())
    out["ok"] = True
    return out


# --------------------------------------------------------------------------- #
# parent side
# --------------------------------------------------------------------------- #
def run_measurement(spec, timeout):
    """``python bench_spark.py --worker SPEC`` in a new process group (killed whole on
    timeout: the driver, its JVM or cluster, their workers); its result dict."""
    env = harness.thread_env(1, fresh_numba_cache=False)  # 1 thread per worker process
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    # stderr is read in a thread and echoed, so the per-job lines show while it runs;
    # stdout in another (``communicate`` would read stderr too, and close it under the echo).
    lines, out = [], []

    def pump():
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("[bench]"):
                print(line, end="", file=sys.stderr, flush=True)

    readers = [
        threading.Thread(target=pump, daemon=True),
        threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        return {
            "ok": False,
            "timeout": True,
            "error": f"timeout after {timeout:.0f} s",
            "subprocess_wall_s": round(time.perf_counter() - start, 1),
        }
    wall = time.perf_counter() - start
    for reader in readers:  # the pipes close when the last process holding them ends
        reader.join(5)
    _kill_group(proc)  # leftovers (a Python worker, a JVM that did not stop)
    for reader in readers:
        reader.join(5)
    stdout = "".join(out)
    for line in reversed(stdout.splitlines()):
        if line.startswith(harness.RESULT_PREFIX):
            result = json.loads(line[len(harness.RESULT_PREFIX) :])
            result["subprocess_wall_s"] = round(wall, 1)
            return result
    tail = [ln.rstrip() for ln in lines if "WARN" not in ln][-12:]
    return {
        "ok": False,
        "error": "\n".join(tail),
        "returncode": proc.returncode,
        "subprocess_wall_s": round(wall, 1),
    }


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def memory_limit_bytes():
    """dask's per-worker limit, as ``bench_large.py``: 40 % of the memory each, at most 8 GiB."""
    import psutil

    return int(min(8 * 2**30, 0.8 * psutil.virtual_memory().total / WORKERS))


def compare(out):
    """Spark against dask for each (N, estimator): ratio and agreement."""
    import numpy as np

    rows = []
    jobs = [j for w in out["workers"] if w.get("ok") for j in w["jobs"]]
    keys = sorted(
        {(j["n"], j["estimator"]) for j in jobs}, key=lambda k: (k[1] == "relieff_exact", k)
    )
    for n, key in keys:
        by = {j["backend"]: j for j in jobs if j["n"] == n and j["estimator"] == key}
        d, s = by.get("dask"), by.get("spark")
        row = {
            "n": n,
            "estimator": key,
            "label": ESTIMATORS[key][0],
            "dask_fit_s": d and d.get("fit_s"),
            "spark_fit_s": s and s.get("fit_s"),
            "dask_ok": bool(d and d.get("ok")),
            "spark_ok": bool(s and s.get("ok")),
        }
        if row["dask_ok"] and row["spark_ok"]:
            row["ratio_spark_over_dask"] = round(s["fit_s"] / d["fit_s"], 3)
            wd, ws = np.asarray(d["weights"]), np.asarray(s["weights"])
            row["max_abs_weight_diff"] = float(np.max(np.abs(wd - ws)))
            row["max_abs_weight"] = float(np.max(np.abs(wd)))
            row["same_top10"] = d["top10"] == s["top10"]
        st = (s or {}).get("spark_stats")
        if row["spark_ok"] and st and s["repeats"] == 1:
            # the waves (the fit's graphs as Spark jobs) apart from the rest: chiefly the read
            # pass that caches the partitions as float64 blocks
            row["spark_seconds_in_waves"] = st["seconds_in_waves"]
            row["spark_seconds_outside_waves"] = round(s["fit_s"] - st["seconds_in_waves"], 3)
        rows.append(row)
    return rows


def targets(out, quick):
    n = ROWS_QUICK[0] if quick else GOAL_N
    rows = []
    for key in ("relieff", "multisurf"):
        c = next((r for r in out["comparison"] if r["n"] == n and r["estimator"] == key), None)
        row = {
            "target": f"Spark within {GOAL_RATIO}x of dask, {ESTIMATORS[key][0]} at N = {n:.0e}",
            "estimator": key,
            "n": n,
        }
        if c is None:
            row.update(met=None, measured="not run at this N")
        elif "ratio_spark_over_dask" not in c:
            row.update(
                met=False,
                measured=f"not measured on both (dask ok: {c['dask_ok']}, Spark ok: "
                f"{c['spark_ok']})",
            )
        else:
            row.update(
                met=c["ratio_spark_over_dask"] <= GOAL_RATIO,
                measured=f"{c['ratio_spark_over_dask']}x ({c['spark_fit_s']} s / "
                f"{c['dask_fit_s']} s)",
            )
        rows.append(row)
    return rows


def _mib(v):
    return None if v is None else round(v)


def _reason(error):
    """The line of an error that says why (Spark's reason, not its stack trace)."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    why = next(
        (ln for ln in lines if "Exception:" in ln or "Error:" in ln), lines[0] if lines else ""
    )
    return why[:400]


def render(out):
    """The markdown for benchmarks/README.md."""
    m = out["machine"]
    v = m.get("versions", {})
    parts = [
        f"{' '.join(m['cpu_model'].split()[:2])}, {m['logical_cores']} cores, "
        f"{m.get('memory_total_gib')} GiB; dmargin {v.get('dmargin')}, pyspark {v.get('pyspark')}, "
        f"dask {v.get('dask')}, distributed {v.get('distributed')}, numba {v.get('numba')}; "
        f"{m['date'][:10]}. Spark `local[{WORKERS}]` (driver memory {out['driver_memory']}) "
        f"against a LocalCluster of {WORKERS} worker processes x 1 thread, one numba thread "
        f"per worker on both; the same Parquet files ({A} features, {TOP} informative). Fit s: "
        "from the lazy read to the fitted estimator, the median of "
        + ", ".join(
            f"{r} fit{'s' if r > 1 else ''} at N = {n:,}"
            for n, r in sorted(
                {(j["n"], j["repeats"]) for w in out["workers"] if w.get("ok") for j in w["jobs"]}
            )
        )
        + (" (quick run)." if out["mode"] == "quick" else ".")
    ]
    jobs = {
        (j["backend"], j["n"], j["estimator"]): j
        for w in out["workers"]
        if w.get("ok")
        for j in w["jobs"]
    }
    rows = []
    for c in out["comparison"]:
        d = jobs.get(("dask", c["n"], c["estimator"])) or {}
        s = jobs.get(("spark", c["n"], c["estimator"])) or {}
        st = s.get("spark_stats") or {}
        dpeak, speak, ssum = (
            d.get("peak_rss_mib") or {},
            s.get("peak_rss_mib") or {},
            s.get("peak_rss_sum_mib") or {},
        )
        diff = c.get("max_abs_weight_diff")
        rows.append(
            [
                f"{c['n']:.0e}" if c["n"] >= 10**5 else f"{c['n']:,}",
                c["label"],
                c["dask_fit_s"] if c["dask_ok"] else ("FAILED" if d else None),
                c["spark_fit_s"] if c["spark_ok"] else ("FAILED" if s else None),
                c.get("ratio_spark_over_dask"),
                f"{c['spark_seconds_in_waves']:.1f} / {c['spark_seconds_outside_waves']:.1f}"
                if "spark_seconds_in_waves" in c
                else None,
                f"{d.get('partitions', '—')} / {s.get('partitions', '—')}",
                f"{st.get('waves')} / {st.get('single_partition_tasks')} + {st.get('pair_tasks')}"
                if st
                else None,
                f"{st['bytes_to_driver'] / 2**20:.2f}" if st else None,
                None if diff is None else f"{diff:.1e}",
                _mib(dpeak.get("workers")),
                _mib(speak.get("jvm")),
                _mib(speak.get("python_workers")),
                _mib(ssum.get("python_workers")),
                f"{_mib(dpeak.get('driver')) or '—'} / {_mib(speak.get('driver')) or '—'}",
                f"{d.get('informative_in_top10', '—')} / {s.get('informative_in_top10', '—')}",
            ]
        )
    parts.append(
        harness.markdown_table(
            [
                "N",
                "estimator",
                "dask s",
                "Spark s",
                "Spark / dask",
                "Spark s: waves / read pass and driver",
                "blocks: dask / Spark",
                "Spark waves / tasks (one + pair)",
                "Spark MiB to driver",
                "max abs diff of weights",
                "dask worker peak MiB",
                "Spark JVM peak MiB",
                "Spark Python worker peak MiB",
                "Spark Python workers together MiB",
                "driver peak MiB: dask / Spark",
                "informative in top 10: dask / Spark",
            ],
            rows,
        )
    )
    fixed = []
    for w in out["workers"]:
        if not w.get("ok"):
            continue
        f = w["fixed_costs"]
        n = max(j["n"] for j in w["jobs"])
        start = w["setup"].get("session_start_s", w["setup"].get("cluster_start_s"))
        fixed.append(
            [
                w["backend"],
                f"{n:.0e}" if n >= 10**5 else f"{n:,}",
                start,
                w["warmup_s"],
                f["trivial_job_median_s"],
                f["tiny_fit_median_s"],
                f.get("tiny_fit_waves"),
                f.get("seconds_per_wave"),
                f.get("read_pass_s"),
                f"{w['loadavg_before'][0]:.2f} / {w['loadavg_after'][0]:.2f}",
            ]
        )
    parts.append(
        harness.markdown_table(
            [
                "backend",
                "subprocess of N",
                "start s",
                "warm-up s",
                "trivial job s",
                "tiny fit s",
                "tiny fit waves",
                "s per wave",
                "read pass s",
                "load average before / after",
            ],
            fixed,
        )
    )
    parts.append(
        "Fixed costs, measured in each subprocess after its warm-up: a trivial job (Spark: "
        "`count` of a two-partition RDD; dask: one `submit`), the median of 5; a tiny fit "
        "(`ReliefF(n_anchors=50)` on 500 x 5 rows in two partitions), the median of 3; on "
        "Spark its seconds per wave (one wave is one Spark job: the broadcast of the "
        "wave's plan and `runJob`) and its read pass (the `mapInArrow` job that caches the "
        "partitions as float64 blocks and checks them), apart. Peaks: psutil every 0.2 s "
        "during the fits; in local mode Spark's executor is the driver's JVM, which holds "
        "the cached blocks, and its tasks run in `pyspark.daemon` Python workers. "
        "Spark s, waves / read pass and driver: the seconds of the fit's Spark jobs "
        "(`spark_stats_`) and the rest, chiefly the read pass (a single fit). "
        "Max abs diff of weights: Spark's `feature_importances_` against dask's."
    )
    failed = [
        f"{w.get('backend', w.get('spec', {}).get('backend'))} subprocess: "
        f"{str(w.get('error'))[-300:]}"
        for w in out["workers"]
        if not w.get("ok")
    ]
    failed += [
        f"{j['backend']} {j['label']} at N = {j['n']}: {_reason(j['error'])}"
        for w in out["workers"]
        if w.get("ok")
        for j in w["jobs"]
        if not j.get("ok")
    ]
    if failed:
        parts.append("Failed: " + "; ".join(failed) + ".")
    notes = [r["note"] for r in out.get("runs", []) if r.get("note")]
    if notes:
        parts.append("Notes: " + " ".join(notes))
    if out.get("targets"):
        parts.append(
            harness.markdown_table(
                ["target", "measured", "met"],
                [
                    [t["target"], t["measured"], {True: "yes", False: "NO", None: "—"}[t["met"]]]
                    for t in out["targets"]
                ],
            )
        )
        if out["mode"] == "quick":
            parts.append(f"Quick run: the goal evaluated at N = {ROWS_QUICK[0]:,}, not at 10^7.")
    return "\n\n".join(parts)


def main(argv=None):
    parser = harness.options(
        __doc__.split("\n\n")[0],
        worker=True,
        quick="10^4 rows in row groups of 2,500, the exact fit at 2,000 rows, "
        "one fit each; results in results/quick/",
    )
    parser.add_argument(
        "--rows",
        type=int,
        nargs="+",
        metavar="N",
        help="the sizes (default 1000000 10000000; --quick 10000)",
    )
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="K",
        help="fits per estimator below 10^7 rows (default 3; 1 with --quick; always 1 at 10^7)",
    )
    parser.add_argument(
        "--estimators",
        nargs="*",
        choices=("relieff", "multisurf"),
        default=["relieff", "multisurf"],
        help="the sampled fits (default both; none: the exact fit only)",
    )
    parser.add_argument(
        "--spark-conf",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="more settings of the Spark session (spark.driver.maxResultSize=4g)",
    )
    parser.add_argument("--no-exact", action="store_true", help="skip the exact ReliefF()")
    parser.add_argument(
        "--add",
        action="store_true",
        help="add this run's measurements to the stored variant (replacing those of "
        "the same backend, N and estimator) instead of starting it anew",
    )
    parser.add_argument(
        "--driver-memory", default=None, help="spark.driver.memory (default 10g; 2g with --quick)"
    )
    parser.add_argument(
        "--spark-max-partition-mib",
        type=float,
        default=None,
        metavar="MIB",
        help="spark.sql.files.maxPartitionBytes for the large files (default: Spark's, 128 MiB)",
    )
    parser.add_argument("--data-dir", default=None, help="the Parquet cache directory")
    parser.add_argument(
        "--note",
        default=None,
        help="a line about the run, shown under the tables (with --add it replaces "
        "the stored notes)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per subprocess (default 3 h; 15 min with --quick)",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="print the stored run's markdown (of --variant, --quick) and exit",
    )
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, {"backend": worker})
        return 0
    if args.render:
        print(render(harness.load_variant("spark", args.variant, quick=args.quick)))
        return 0

    rows = sorted(args.rows or (ROWS_QUICK if args.quick else ROWS_FULL))
    row_group = ROW_GROUP_QUICK if args.quick else ROW_GROUP_FULL
    exact_n = EXACT_N_QUICK if args.quick else EXACT_N_FULL
    repeats = max(1, args.repeats or (1 if args.quick else 3))
    driver_memory = args.driver_memory or ("2g" if args.quick else "10g")
    timeout = args.timeout or (TIMEOUT_QUICK_S if args.quick else TIMEOUT_FULL_S)

    cache = Path(args.data_dir) if args.data_dir else synthetic.default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    disk = shutil.disk_usage(cache)
    need = {n: n * (A + 1) * 8 * 1.05 for n in rows}  # snappy barely shrinks Gaussian floats
    short = [
        n
        for n in rows
        if need[n] > disk.free * 0.8
        and not (cache / f"rows_{n}_seed{synthetic.SEED}_rg{row_group}.parquet").exists()
    ]
    data, skipped = {}, []
    for n in rows:
        if n in short:
            skipped.append(
                {
                    "n": n,
                    "reason": f"disk: {disk.free / 2**30:.1f} GiB free in {cache}, "
                    f"the file needs about {need[n] / 2**30:.1f} GiB",
                }
            )
            log(f"skip N = {n}: {skipped[-1]['reason']}")
            continue
        data[n] = synthetic.cached_parquet(n, cache, row_group=row_group, log=log)
    exact = None
    if not args.no_exact:
        exact_group = exact_n // EXACT_BLOCKS
        exact = synthetic.cached_parquet(exact_n, cache, row_group=exact_group, log=log)
        exact_split = exact["bytes"] // EXACT_BLOCKS + 1  # about one row group per Spark partition

    out = {
        "benchmark": "spark",
        "mode": "quick" if args.quick else "full",
        "machine": harness.machine_info(PACKAGES),
        "revision": harness.git_revision(harness.REPO),
        "loadavg_before": list(os.getloadavg()),
        "disk_free_gib": round(disk.free / 2**30, 1),
        "driver_memory": driver_memory,
        "dataset": {
            "features": A,
            "informative": TOP,
            "row_group": row_group,
            "seed": synthetic.SEED,
            "generator": synthetic.GENERATOR,
            "informative_columns": synthetic.layout()[1],
            "files": {
                str(n): {k: d[k] for k in ("path", "bytes", "written", "write_s")}
                for n, d in data.items()
            },
            "exact_file": None
            if exact is None
            else {
                "n": exact_n,
                "row_group": exact_n // EXACT_BLOCKS,
                **{k: exact[k] for k in ("path", "bytes", "written", "write_s")},
            },
        },
        "rows": rows,
        "skipped": skipped,
        "workers": [],
        "complete": False,
    }
    out["runs"] = [
        {k: out[k] for k in ("revision", "loadavg_before", "rows")}
        | {"command": " ".join(sys.argv[1:]), "date": out["machine"]["date"], "note": args.note}
    ]
    kept = []
    if args.add:
        try:
            stored = harness.load_variant("spark", args.variant, quick=args.quick)
        except KeyError:
            stored = None
        if stored is not None:
            kept = stored["workers"]
            if args.note:  # a new note replaces the stored ones
                stored["runs"] = [
                    {k: v for k, v in r.items() if k != "note"} for r in stored.get("runs", [])
                ]
            out["runs"] = stored.get("runs", []) + out["runs"]
            out["rows"] = sorted(set(stored.get("rows", [])) | set(rows))
            out["skipped"] = stored.get("skipped", []) + skipped
            out["loadavg_before"] = stored.get("loadavg_before", out["loadavg_before"])
            out["dataset"]["files"] = {**stored["dataset"]["files"], **out["dataset"]["files"]}
            out["dataset"]["exact_file"] = (
                out["dataset"]["exact_file"] or stored["dataset"]["exact_file"]
            )
    memory_limit = memory_limit_bytes()
    plan = [
        (
            n,
            [
                {
                    "estimator": key,
                    "n": n,
                    "path": data[n]["path"],
                    "repeats": 1 if n >= GOAL_N else repeats,
                }
                for key in args.estimators
            ],
        )
        for n in sorted(data)
    ]
    if (
        exact is not None
    ):  # last, in subprocesses of its own: its pair tiles are the slowest to plan
        plan.append(
            (
                exact_n,
                [
                    {
                        "estimator": "relieff_exact",
                        "n": exact_n,
                        "path": exact["path"],
                        "repeats": 1,
                        "split_bytes": exact_split,
                    }
                ],
            )
        )
    for n, jobs in plan:
        if not jobs:
            continue
        for backend in args.backends:
            spec = {
                "kind": "backend",
                "backend": backend,
                "jobs": jobs,
                "driver_memory": driver_memory,
                "memory_limit": memory_limit,
                "max_partition_mib": args.spark_max_partition_mib,
                "spark_conf": dict(kv.split("=", 1) for kv in args.spark_conf),
            }
            log(f"{backend}, N = {n}: {', '.join(j['estimator'] for j in jobs)} ...")
            result = run_measurement(spec, timeout)
            result.setdefault("backend", backend)
            result.setdefault("spec", spec)
            if not result.get("ok"):
                log(f"  FAILED: {str(result.get('error'))[-600:]}")
            out["workers"].append(result)
            path = save(out, kept, args)  # after each subprocess: a long run keeps what it measured

    out["complete"] = True
    path = save(out, kept, args)
    print(out["markdown"])
    log(f"results in {path}")
    return 0


def _done(worker):
    return {(worker.get("backend"), j["n"], j["estimator"]) for j in worker.get("jobs", [])} or {
        (worker.get("backend"), j["n"], j["estimator"])
        for j in worker.get("spec", {}).get("jobs", [])
    }


def save(out, kept, args):
    """Write the variant: the stored workers ``kept`` (``--add``) that this run did not
    measure again, then this run's."""
    new = set().union(*map(_done, out["workers"])) if out["workers"] else set()
    doc = dict(out)
    doc["workers"] = []
    for w in kept:  # a stored subprocess keeps the fits this run did not measure again
        if w.get("ok"):
            w = {
                **w,
                "jobs": [j for j in w["jobs"] if (w["backend"], j["n"], j["estimator"]) not in new],
            }
        if w.get("jobs") if w.get("ok") else not (_done(w) & new):
            doc["workers"].append(w)
    doc["workers"] += out["workers"]
    doc["loadavg_after"] = list(os.getloadavg())
    doc["comparison"] = compare(doc)
    doc["targets"] = targets(doc, args.quick)
    doc["markdown"] = render(doc)
    out["markdown"] = doc["markdown"]
    return harness.write_variant("spark", doc, variant=args.variant, quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
