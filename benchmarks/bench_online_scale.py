"""Online I-RELIEF over 10^6 and 10^7 Parquet rows with a bounded reference sample.

What is measured (results go to ``benchmarks/results/online_scale.json``, or
``benchmarks/results/quick/online_scale.json`` with ``--quick``):

1. Data: for each N, ``N x 50`` rows written by this script to Parquet in a
   temporary directory, in row groups of ``ROW_GROUP`` rows generated one at a
   time (never all rows in memory).  Two classes, two Gaussian clusters
   (sd 1) per class on 10 informative features, as ``make_classification``
   without its random rotation, but with centroids ``-/+ (0.5 + U[0, 1])``
   per feature for class 0 / 1, so that each informative feature separates
   the classes on its own; 40 N(0, 1) noise features; columns shuffled by a
   fixed permutation.
2. One pass of online I-RELIEF: ``dmargin.read_parquet`` -> dask X, y (one
   block per row group), ``OnlineIRelief(reference_size=M, n_passes=1, tol=0)
   .fit``, in a fresh subprocess with 2 threads.  Wall time of the fit, of its
   streamed pass (from dmargin's DEBUG timing line) and of what comes before
   it (the scaling pass and the reference sample), rows per second, peak RSS (psutil, sampled every
   0.1 s, and ``ru_maxrss``), whether the 10 informative columns are the top
   10, and the pass's pair-feature rate ``N * M * A / pass seconds`` (each pair
   feature is touched twice: a distance, then a weighted absolute difference).
3. The machine's fused-loop limit measured in the same run (the loop of
   ``bench_relief_speed.py``, N = 4000, A = 50, 1 and 2 threads).  The online
   stream is sequential (each step needs the previous weights) and runs on one
   core; the limit at 1 thread is the fair comparison.
4. How the weights move with M (500, 2000, 10000) on the 10^6 set: Pearson
   correlation and top-10 overlap with batch ``IRelief`` on a 5,000-row
   subsample and with the M = 10,000 pass.

Usage::

    python benchmarks/bench_online_scale.py                 # 10^6 and 10^7 rows + M sweep
    python benchmarks/bench_online_scale.py --quick         # 10^5 rows, M sweep 200/500/1000
    python benchmarks/bench_online_scale.py --rows 1000000  # chosen sizes
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
from _synthetic import (  # noqa: E402
    GENERATOR,
    N_INFORMATIVE,
    ROW_GROUP,
    SEED,
    A,
    layout,
    make_batch,
    write_parquet,
)

M_MAIN = 2_000
M_SWEEP = (500, 2_000, 10_000)
SUBSAMPLE = 5_000
SUBSAMPLE_QUICK = 2_000
WORKER_TIMEOUT_S = 3 * 3600


# --------------------------------------------------------------------------- #
# workers (fresh subprocesses)
# --------------------------------------------------------------------------- #
class RssSampler:
    """Peak RSS of this process (and children) sampled every ``period`` seconds."""

    def __init__(self, period=0.1):
        import psutil

        self._proc, self._period, self.peak = psutil.Process(), period, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            rss = self._proc.memory_info().rss
            for child in self._proc.children(recursive=True):
                try:
                    rss += child.memory_info().rss
                except Exception:
                    pass
            self.peak = max(self.peak, rss)
            self._stop.wait(self._period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def worker_online(spec):
    import dmargin
    from dmargin import OnlineIRelief

    # JIT warm-up on a few rows, so the pass is timed without compilation
    Xw, yw = make_batch(0, 300)
    OnlineIRelief(reference_size=50, n_passes=1, tol=0).fit(Xw, yw)

    timings = harness.StepLog.attach()
    n, m = spec["n"], spec["m"]
    rss_before = harness.rss_mib()
    monitor = harness.CpuMonitor().start()
    with RssSampler() as rss:
        start = time.perf_counter()
        X, y = dmargin.read_parquet(spec["path"], "label")
        est = OnlineIRelief(
            reference_size=m, n_passes=1, tol=0, block_size=spec["block_size"], random_state=SEED
        ).fit(X, y)
        wall = time.perf_counter() - start
    cpu = monitor.stop()
    pass_s = timings.seconds("online I-RELIEF pass 1")[0]
    w = est.feature_importances_
    top = [int(i) for i in np.argsort(-w, kind="stable")[:N_INFORMATIVE]]
    _, informative, _ = layout()
    return {
        "n": n,
        "m": m,
        "fit_s": round(wall, 2),
        "pass_s": round(pass_s, 2),
        "before_pass_s": round(wall - pass_s, 2),
        "rows_per_s": round(n / wall, 1),
        "pair_features_per_s": n * m * A / pass_s,
        "peak_rss_mib_sampled": round(rss.peak / 2**20, 1),
        "peak_rss_mib_maxrss": round(harness.peak_rss_mib(), 1),
        "rss_before_mib": round(rss_before, 1),
        "top10": top,
        "informative": informative,
        "top10_is_informative": sorted(top) == informative,
        "weights": [float(v) for v in w],
        "cpu_during_fit": cpu,
    }


def worker_batch(spec):
    """Batch I-RELIEF on the first ``SUBSAMPLE`` rows (a random sample: rows are i.i.d.)."""
    from dmargin import IRelief

    X, y = make_batch(0, spec["n"])
    est = IRelief(max_iter=100, tol=1e-4).fit(X, y)
    return {"weights": [float(v) for v in est.feature_importances_], "n_iter": int(est.n_iter_)}


def worker_limit(spec):
    import numba

    X, _ = make_batch(0, spec["n"])
    X = np.ascontiguousarray((X - X.min(0)) / (X.max(0) - X.min(0)))
    harness.fused_abs_diff(X[:256], np.zeros(256))
    best = min(harness.timed(harness.fused_abs_diff, X, np.zeros(len(X)))[0] for _ in range(3))
    return {
        "threads": numba.get_num_threads(),
        "n": spec["n"],
        "best_s": round(best, 4),
        "pair_features_per_s": spec["n"] ** 2 * A / best,
    }


WORKERS = {"online": worker_online, "batch": worker_batch, "limit": worker_limit}


def launch(spec, args, threads=2):
    return harness.launch(
        __file__,
        spec,
        threads=threads,
        timeout=WORKER_TIMEOUT_S,
        quiet_cores=1.0,
        idle_wait=args.idle_wait,
    )


# --------------------------------------------------------------------------- #
# parent
# --------------------------------------------------------------------------- #
def _overlap(a, b, k=N_INFORMATIVE):
    return len(set(np.argsort(-np.asarray(a))[:k]) & set(np.argsort(-np.asarray(b))[:k]))


def _corr(a, b):
    return round(float(np.corrcoef(a, b)[0, 1]), 4)


def sci(v):
    return None if v is None else f"{v:.3g}"


def main(argv=None):
    parser = harness.options(
        __doc__,
        quick="10^5 rows; M sweep 200/500/1000; batch IRelief on 2,000 rows",
        idle_wait=30.0,
        worker=True,
    )
    parser.add_argument("--rows", type=int, nargs="+", help="row counts (default 10^6 10^7)")
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, WORKERS)
        return 0

    rows = args.rows or ([100_000] if args.quick else [1_000_000, 10_000_000])
    sweep = (200, 500, 1_000) if args.quick else M_SWEEP
    m_main = 500 if args.quick else M_MAIN
    row_group = 10_000 if args.quick else ROW_GROUP
    tmp = tempfile.mkdtemp(prefix="dmargin_online_scale_")
    out = {
        "benchmark": "online_scale",
        "mode": "quick" if args.quick else "full",
        "machine": harness.machine_info(["numpy", "numba", "dask", "pyarrow", "dmargin"]),
        "revision": harness.git_revision(harness.REPO),
        "dataset": {
            "features": A,
            "informative": N_INFORMATIVE,
            "row_group": row_group,
            "generator": GENERATOR,
            "informative_columns": layout()[1],
        },
        "limit": [
            launch({"kind": "limit", "n": 2000 if args.quick else 4000}, args, threads=t)
            for t in (1, 2)
        ],
        "passes": [],
        "sweep": {},
    }
    try:
        sweep_n = min(rows) if args.quick else 1_000_000
        for n in sorted(set(rows) | {sweep_n}):
            path = os.path.join(tmp, f"rows_{n}.parquet")
            t0 = time.perf_counter()
            size = write_parquet(path, n, row_group)
            print(
                f"[bench] wrote {n} rows ({size / 2**20:.0f} MiB) in {time.perf_counter() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            ms = sorted(set(sweep) | {m_main}) if n == sweep_n else [m_main]
            results = {
                m: launch(
                    {"kind": "online", "n": n, "m": m, "path": path, "block_size": 10_000}, args
                )
                for m in ms
            }
            for m, r in results.items():
                r["parquet_mib"] = round(size / 2**20, 1)
                if m == m_main and n in rows:
                    out["passes"].append(r)
            if n == sweep_n:
                subsample = min(SUBSAMPLE_QUICK if args.quick else SUBSAMPLE, n)
                batch = launch({"kind": "batch", "n": subsample}, args)
                top_m = max(ms)
                out["sweep"] = {
                    "n": n,
                    "batch_subsample": subsample,
                    "batch_n_iter": batch.get("n_iter"),
                    "rows": [
                        {
                            "m": m,
                            "pass_s": r.get("pass_s"),
                            "corr_batch": _corr(r["weights"], batch["weights"]),
                            "top10_overlap_batch": _overlap(r["weights"], batch["weights"]),
                            f"corr_m{top_m}": _corr(r["weights"], results[top_m]["weights"]),
                            f"top10_overlap_m{top_m}": _overlap(
                                r["weights"], results[top_m]["weights"]
                            ),
                            "top10_is_informative": r.get("top10_is_informative"),
                        }
                        for m, r in results.items()
                        if r.get("ok")
                    ],
                }
            os.remove(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    out["markdown"] = render(out, m_main)
    harness.write_variant("online_scale", out, variant=args.variant, quick=args.quick)
    print(out["markdown"])
    return 0


def render(out, m_main):
    lim = {r.get("threads"): r.get("pair_features_per_s") for r in out["limit"] if r.get("ok")}
    rows = []
    for r in out["passes"]:
        if not r.get("ok"):
            rows.append([r.get("spec", {}).get("n"), m_main, "FAILED"] + [None] * 8)
            continue
        rows.append(
            [
                f"{r['n']:.0e}",
                r["m"],
                r["fit_s"],
                r["pass_s"],
                f"{r['rows_per_s']:.3g}",
                r["peak_rss_mib_sampled"],
                "yes" if r["top10_is_informative"] else "NO",
                sci(r["pair_features_per_s"]),
                f"{r['pair_features_per_s'] / lim[1]:.2f}" if lim.get(1) else None,
                r["cpu_during_fit"]["other_cores_busy"],
            ]
        )
    parts = [
        harness.markdown_table(
            [
                "N",
                "M",
                "fit s",
                "pass s",
                "rows/s",
                "peak RSS MiB",
                "top 10 = informative",
                "pass pf/s",
                "of 1-thread fused limit",
                "other cores busy",
            ],
            rows,
        )
    ]
    parts.append(
        f"Fused-loop limit in the same run: {sci(lim.get(1))} pf/s at 1 thread, "
        f"{sci(lim.get(2))} at 2 (pf = pair-features; the online stream is sequential, "
        "one core)."
    )
    sw = out.get("sweep")
    if sw:
        keys = [
            k for k in sw["rows"][0] if k.startswith("corr_m") or k.startswith("top10_overlap_m")
        ]
        parts.append(
            f"How the weights move with M (N = {sw['n']:.0e}; batch IRelief on "
            f"{sw['batch_subsample']} rows):"
        )
        parts.append(
            harness.markdown_table(
                [
                    "M",
                    "pass s",
                    "corr with batch",
                    "top-10 overlap with batch",
                    *keys,
                    "top 10 = informative",
                ],
                [
                    [
                        r["m"],
                        r["pass_s"],
                        r["corr_batch"],
                        r["top10_overlap_batch"],
                        *[r[k] for k in keys],
                        "yes" if r["top10_is_informative"] else "NO",
                    ]
                    for r in sw["rows"]
                ],
            )
        )
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
