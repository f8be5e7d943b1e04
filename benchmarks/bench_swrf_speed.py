"""Speed of dmargin's SWRF family against skrebate and the machine's limit, in one run.

What is measured (results go to ``benchmarks/results/swrf_speed.json``):

1. Fit time of ``dmargin.SWRF``, ``SWRFstar``, ``MultiSWRF``, ``MultiSWRFstar``,
   ``MultiSWRFDB`` and ``MultiSWRFDBstar`` (defaults) at N = 2000 and 8000 samples and
   A = 50 features, one and two threads, against skrebate 0.8.4's classes of the same
   names (``n_features_to_select=10``, ``n_jobs=threads``), on the same data.  As in
   ``bench_surf_speed.py``: every (estimator, library, N, threads) cell runs in a fresh
   subprocess whose NUMBA/OMP/OPENBLAS/MKL thread variables are set to the thread count
   and whose numba cache directory is new and empty; one timed first fit (with the JIT
   compilation), then the best of up to 3 further fits.  skrebate (pure Python
   neighbour loops over a dense N x N matrix) fits once from N = 4000 on, and only at
   one thread from N = 4000 on (its ``n_jobs`` parallelises the scoring only).  A
   skrebate fit longer than 3 minutes is named in the JSON (``"skrebate_slow_cells"``).
   Nothing is extrapolated: a cell that did not run is absent.
2. The machine's practical limit for pairwise work, in the same run and on the same
   data: ``bench_relief_speed.py``'s fused numba loop ``acc[i] += sum_j sum_k |x_ik -
   x_jk|`` over all ordered pairs at the largest N, best of 3 at one and two threads,
   in pair-features per second (N*N*A / s).  dmargin's steady fits at that N are quoted
   in the same unit (N*N*A / fit seconds, whatever passes a fit makes: the SWRF family
   makes two over the pairs, the distance moments and the weighted neighbours) and as
   a fraction of the float64 loop at the same thread count.
3. Agreement on the same data: the top-10 features of dmargin against skrebate's, and
   ``max |w - w_skrebate|`` (expected below 1e-10 on this continuous data).
4. A markdown summary (also stored in the JSON under ``"markdown"``).

Data: ``sklearn.datasets.make_classification`` as in ``bench_relief_speed.py``
(5 informative of 50 features, 2 classes), min-max scaled to [0, 1] once, so both
libraries get the same float64 matrix.

Usage::

    python benchmarks/bench_swrf_speed.py            # full run (about 30 min on a quiet
                                                     # 2-core machine, 12 of them skrebate's
                                                     # six fits at N = 8000)
    python benchmarks/bench_swrf_speed.py --quick    # N = 1000, 1 thread, one steady fit

Before each measurement the full run waits up to 60 s for a quiet machine and runs a
disturbed measurement again (``--idle-wait S``, ``--attempts K``); the summary names
the measurements other processes disturbed all the same.

Only public APIs are used.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
import bench_relief_speed as relief  # noqa: E402  (the same data, worker helpers and limit)
import bench_surf_speed as surf  # noqa: E402  (the same cells' labels and top-k ranking)

N_FULL = (2000, 8000)
N_QUICK = (1000,)
THREADS = (1, 2)
A_SPEED = 50
TOP = 10
STEADY_REPEATS = 3
STEADY_BUDGET_S = 120.0
SKREBATE_SINGLE_FIT_FROM_N = 4000
SKREBATE_ONE_THREAD_FROM_N = 4000
SKREBATE_SLOW_S = 180.0  # a skrebate fit longer than this is named in the JSON
LIMIT_REPEATS = 3
WORKER_TIMEOUT_S = 2400.0
QUIET_BUSY_CORES = 0.3
AGREEMENT_TOLERANCE = 1e-10

#: skrebate 0.8.4's names, which dmargin's estimators share.
ESTIMATORS = ("SWRF", "SWRFstar", "MultiSWRF", "MultiSWRFstar", "MultiSWRFDB",
              "MultiSWRFDBstar")
LIBRARIES = ("dmargin", "skrebate")

INPUT_HANDLING = {
    "common": relief.INPUT_HANDLING["common"],
    "skrebate 0.8.4": (
        "baseswrf.py on ReliefF's fit: scipy pdist(cityblock) on a min-max normalised copy, "
        "squareform to a dense N x N float64 matrix; SWRF's threshold and spread are that "
        "matrix's mean and standard deviation (zero diagonal included), the Multi variants' "
        "each row's over the other rows, found by a pure-Python loop per row; neighbour "
        "weights 2 / (1 + exp(-4 |d - t| / s)) - 1 by numpy per row; compute_score per "
        "instance and feature through joblib (n_jobs)."),
    "dmargin": (
        "Public estimators with defaults (scale='minmax', discrete_threshold=10): float64, "
        "skrebate's semantics; the SURF family's statistic with weighted neighbours, two "
        "passes per anchor block over the same tiles (distance moments, then the weighted "
        "neighbours), a symmetric grid so each pair's distance is computed once per pass; "
        "memory O(N A), no N x N array."),
}


# --------------------------------------------------------------------------- #
# estimators (public APIs only)
# --------------------------------------------------------------------------- #
def build_estimator(library: str, name: str, threads: int):
    """A fresh, unfitted ``name`` of ``library`` (dmargin's threads come from the env)."""
    if library == "dmargin":
        import dmargin

        return getattr(dmargin, name)()
    if library == "skrebate":
        import skrebate

        return getattr(skrebate, name)(n_features_to_select=TOP, n_jobs=threads)
    raise ValueError(f"unknown library {library!r}")


# --------------------------------------------------------------------------- #
# worker: one (estimator, library, N, threads) cell in a fresh subprocess
# --------------------------------------------------------------------------- #
def worker_fit(spec: dict) -> dict:
    library, name, threads = spec["library"], spec["estimator"], spec["threads"]
    X, y, informative = relief.make_data(spec["n"], spec["features"])
    digest = relief.array_digest(X)
    build_estimator(library, name, threads)  # import the library now
    rss_before, peak_before = harness.rss_mib(), harness.peak_rss_mib()
    monitor = harness.CpuMonitor().start()
    first_s, est = harness.timed(build_estimator(library, name, threads).fit, X, y)
    steady = []
    while len(steady) < spec["steady_repeats"] and sum(steady) < spec["steady_budget_s"]:
        seconds, est = harness.timed(build_estimator(library, name, threads).fit, X, y)
        steady.append(seconds)
    cpu = monitor.stop()
    scores = np.asarray(est.feature_importances_, dtype=np.float64)
    return {
        "first_fit_s": round(first_s, 4),
        "steady_fits_s": [round(s, 4) for s in steady],
        "steady_best_s": round(min(steady), 4) if steady else None,
        "top10": surf.top_features(scores, TOP),
        "informative_columns": informative,
        "feature_importances": [float(v) for v in scores],
        "input_unchanged": relief.array_digest(X) == digest,
        "cpu_during_fits": cpu,
        **relief.memory_fields(rss_before, peak_before),
    }


WORKERS = {"fit": worker_fit, "limit": relief.worker_limit}


# --------------------------------------------------------------------------- #
# parent
# --------------------------------------------------------------------------- #
def cells(ns, threads, steady_repeats):
    for n in ns:
        for name in ESTIMATORS:
            for library in LIBRARIES:
                for t in threads:
                    if library == "skrebate" and n >= SKREBATE_ONE_THREAD_FROM_N and t > 1:
                        continue
                    single = library == "skrebate" and n >= SKREBATE_SINGLE_FIT_FROM_N
                    yield {"kind": "fit", "estimator": name, "library": library, "n": n,
                           "features": A_SPEED, "threads": t,
                           "steady_repeats": 0 if single else steady_repeats,
                           "steady_budget_s": STEADY_BUDGET_S}


def launch(spec: dict, args) -> dict:
    return harness.launch(__file__, spec, threads=spec["threads"], timeout=WORKER_TIMEOUT_S,
                          quiet_cores=QUIET_BUSY_CORES, idle_wait=args.idle_wait,
                          attempts=args.attempts)


def run_limit(n: int, threads, repeats: int, args) -> list[dict]:
    return [launch({"kind": "limit", "n": n, "features": A_SPEED, "threads": t,
                    "repeats": repeats}, args) for t in threads]


def find(results, name, library, n, threads):
    for r in results:
        s = r["spec"]
        if (s["estimator"], s["library"], s["n"], s["threads"]) == (name, library, n, threads):
            return r if r.get("ok") else None
    return None


def limit_rate(limit, threads, dtype="float64"):
    """The fused loop's pair-features per second at ``threads``, or None."""
    for r in limit:
        if r.get("ok") and r["spec"]["threads"] == threads:
            return r[dtype]["pair_features_per_s"]
    return None


def speed_rows(results, ns, threads) -> list[dict]:
    """Per estimator, N and thread count: both times and skrebate / dmargin.

    skrebate runs at one thread only from N = 4000 on; its ratio is then given at one
    thread only (as in ``bench_surf_speed.py``).
    """
    rows = []
    for name in ESTIMATORS:
        for n in ns:
            for t in threads:
                dm = relief.steady_time(find(results, name, "dmargin", n, t))
                sk = relief.steady_time(find(results, name, "skrebate", n, t))
                if dm is None and sk is None:
                    continue
                rows.append({"estimator": name, "n": n, "threads": t, "dmargin_s": dm,
                             "skrebate_s": sk, "skrebate_over_dmargin": relief.ratio(sk, dm)})
    return rows


def limit_rows(results, limit, n, threads) -> list[dict]:
    """dmargin's steady fits at ``n`` in pair-features per second, against the fused loop."""
    rows = []
    for name in ESTIMATORS:
        for t in threads:
            seconds = relief.steady_time(find(results, name, "dmargin", n, t))
            if seconds is None:
                continue
            rate, fused = n * n * A_SPEED / seconds, limit_rate(limit, t)
            rows.append({"estimator": name, "n": n, "threads": t,
                         "pair_features_per_s": rate, "fused_f64_pair_features_per_s": fused,
                         "fraction_of_fused_f64": relief.ratio(rate, fused)})
    return rows


def agreement(results, ns, threads) -> list[dict]:
    """Per estimator, N and thread count: top-10 overlap and weight difference to skrebate."""
    rows = []
    for n in ns:
        for t in threads:
            for name in ESTIMATORS:
                ours, peer = (find(results, name, lib, n, t) for lib in LIBRARIES)
                peer = peer or find(results, name, "skrebate", n, 1)
                if ours is None or peer is None:
                    continue
                w_sk = np.asarray(peer["feature_importances"])
                rows.append({
                    "estimator": name, "n": n, "threads": t,
                    "skrebate_threads": peer["spec"]["threads"],
                    "top10_common_skrebate": len(set(ours["top10"]) & set(peer["top10"])),
                    "max_abs_diff_vs_skrebate": float(
                        np.max(np.abs(np.asarray(ours["feature_importances"]) - w_sk))),
                    "max_abs_weight_skrebate": float(np.max(np.abs(w_sk))),
                })
    return rows


def summary(rows, limits, agree, results, n) -> dict:
    """The figures the READMEs quote: the ranges at the largest N, one thread."""
    at_n = [r for r in rows if r["n"] == n and r["threads"] == 1
            and r["skrebate_over_dmargin"] is not None]
    ratios = sorted(at_n, key=lambda r: r["skrebate_over_dmargin"])
    fractions = sorted(r["fraction_of_fused_f64"] for r in limits
                       if r["fraction_of_fused_f64"] is not None)
    diffs = [e["max_abs_diff_vs_skrebate"] for e in agree]
    slow = [f"{r['spec']['estimator']} N={r['spec']['n']} ({r['first_fit_s']:.0f} s)"
            for r in results if r.get("ok") and r["spec"]["library"] == "skrebate"
            and r["first_fit_s"] > SKREBATE_SLOW_S]
    return {
        "at_n": n,
        "threads": 1,
        "estimators_with_skrebate_at_n": [r["estimator"] for r in at_n],
        "skrebate_over_dmargin_min": ratios[0]["skrebate_over_dmargin"] if ratios else None,
        "skrebate_over_dmargin_min_estimator": ratios[0]["estimator"] if ratios else None,
        "skrebate_over_dmargin_max": ratios[-1]["skrebate_over_dmargin"] if ratios else None,
        "skrebate_over_dmargin_max_estimator": ratios[-1]["estimator"] if ratios else None,
        "fraction_of_fused_f64_min": fractions[0] if fractions else None,
        "fraction_of_fused_f64_max": fractions[-1] if fractions else None,
        "max_abs_diff_vs_skrebate": max(diffs) if diffs else None,
        "agreement_tolerance": AGREEMENT_TOLERANCE,
        "agree_within_tolerance": None if not diffs else max(diffs) < AGREEMENT_TOLERANCE,
        "skrebate_slow_s": SKREBATE_SLOW_S,
        "skrebate_slow_cells": slow,
    }


def sci(value):
    return None if value is None else f"{value:.2g}"


def busy_line(results, limit) -> str:
    noisy = [f"{r['spec'].get('estimator', 'fused loop')} {r['spec'].get('library', '')} "
             f"N={r['spec']['n']} thr={r['spec']['threads']} ({r['other_cores_busy']})"
             for r in [*results, *limit] if r.get("ok") and r.get("other_cores_busy") is not None
             and r["other_cores_busy"] >= QUIET_BUSY_CORES]
    if not noisy:
        return (f"Other processes kept < {QUIET_BUSY_CORES} cores busy during every "
                "measurement.")
    return ("Measurements disturbed by other processes (average cores they kept busy): "
            + "; ".join(" ".join(s.split()) for s in noisy) + ". Those numbers are pessimistic.")


def render_markdown(machine, results, limit, ns, threads, rows, limits, agree, summ) -> str:
    versions = machine["versions"]
    parts = [
        f"{machine['cpu_model']}, {machine['logical_cores']} cores, numba {versions['numba']}, "
        f"dmargin {versions['dmargin']}, skrebate {versions['skrebate']}; "
        f"{machine['date'][:10]}.",
        f"#### SWRF family fit time, A = {A_SPEED} (seconds: steady-state best, first fit "
        "with JIT in parentheses)",
    ]
    table = []
    for r in rows:
        dm, sk = (find(results, r["estimator"], lib, r["n"], r["threads"]) for lib in LIBRARIES)
        table.append([r["estimator"], r["n"], r["threads"], surf.cell_label(dm),
                      surf.cell_label(sk), relief.fmt_ratio(r["skrebate_over_dmargin"])])
    parts.append(harness.markdown_table(
        ["estimator", "N", "thr", "dmargin", "skrebate", "skrebate / dmargin"], table))
    parts.append(f"`*` a single fit (skrebate from N = {SKREBATE_SINGLE_FIT_FROM_N}, where it "
                 "also runs at one thread only).  Ratios > 1: dmargin is faster.")
    if summ["skrebate_slow_cells"]:
        parts.append(f"skrebate fits longer than {SKREBATE_SLOW_S:.0f} s: "
                     + "; ".join(summ["skrebate_slow_cells"]) + ".")
    n = max(ns)
    fused = "; ".join(f"{t} thread{'s' if t > 1 else ''}: {sci(limit_rate(limit, t))} pf/s "
                      f"(float32 {sci(limit_rate(limit, t, 'float32'))})" for t in threads)
    parts.append(f"#### Against the machine's limit, N = {n}, A = {A_SPEED} "
                 "(pf/s = N*N*A / seconds)")
    parts.append(f"Fused loop, float64: {fused}.")
    parts.append(harness.markdown_table(
        ["estimator", "thr", "dmargin pf/s", "fraction of the float64 fused loop"],
        [[r["estimator"], r["threads"], sci(r["pair_features_per_s"]),
          relief.fmt_ratio(r["fraction_of_fused_f64"])] for r in limits]))
    parts.append(f"#### Agreement on the same data (top-{TOP} features in common with "
                 "skrebate; largest |w - w_skrebate|)")
    parts.append(harness.markdown_table(
        ["estimator", "N", "thr", "skrebate thr", "top-10 common", "dmargin - skrebate",
         "max |w skrebate|"],
        [[e["estimator"], e["n"], e["threads"], e["skrebate_threads"],
          e["top10_common_skrebate"], sci(e["max_abs_diff_vs_skrebate"]),
          sci(e["max_abs_weight_skrebate"])] for e in agree]))
    parts.append(busy_line(results, limit))
    return "\n\n".join(parts)


def main(argv=None) -> int:
    parser = harness.options(__doc__, quick=f"N = {', '.join(map(str, N_QUICK))}, 1 thread, "
                                            "one steady fit", idle_wait=60.0, attempts=2,
                             worker=True)
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, WORKERS)
        return 0

    ns = N_QUICK if args.quick else N_FULL
    threads = (1,) if args.quick else THREADS
    steady_repeats = 1 if args.quick else STEADY_REPEATS
    limit_repeats = 1 if args.quick else LIMIT_REPEATS
    machine = harness.machine_info(["dmargin", "numpy", "scipy", "scikit-learn", "numba",
                                    "llvmlite", "skrebate", "joblib"])
    machine["dmargin_git"] = harness.git_revision(harness.REPO)

    results = [launch(spec, args) for spec in cells(ns, threads, steady_repeats)]
    limit = run_limit(max(ns), threads, limit_repeats, args)
    rows = speed_rows(results, ns, threads)
    limits = limit_rows(results, limit, max(ns), threads)
    agree = agreement(results, ns, threads)
    summ = summary(rows, limits, agree, results, max(ns))
    markdown = render_markdown(machine, results, limit, ns, threads, rows, limits, agree, summ)
    report = {
        "benchmark": "swrf_speed",
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "dataset": {
            "generator": "sklearn.datasets.make_classification",
            "arguments": relief.dataset_args("N", A_SPEED),
            "preprocessing": "per-column min-max scaling to [0, 1], float64, C-contiguous",
            "sizes": list(ns),
        },
        "protocol": {
            "subprocess_per_measurement": True,
            "thread_env_vars": list(harness.THREAD_VARS),
            "fresh_numba_cache_dir_per_subprocess": True,
            "steady_state": f"best of up to {steady_repeats} fits after the first, stopping "
                            f"early once the repeats used {STEADY_BUDGET_S:.0f} s",
            "skrebate": f"a single fit, one thread only, from N = {SKREBATE_SINGLE_FIT_FROM_N}; "
                        f"all {len(ESTIMATORS)} estimators at every N; a fit longer than "
                        f"{SKREBATE_SLOW_S:.0f} s is listed in summary/skrebate_slow_cells",
            "limit": f"fused numba loop (benchmarks/_harness.py, parallel=True, fastmath=True) "
                     f"at N = {max(ns)}, A = {A_SPEED}; warm-up on 256 rows, then best of "
                     f"{limit_repeats}; dmargin's rate is N*N*A / its steady fit time",
            "contention": f"before each measurement wait up to {args.idle_wait:.0f} s until "
                          f"other processes use < {QUIET_BUSY_CORES} cores; a disturbed "
                          f"measurement is run up to {args.attempts} times, the least "
                          "disturbed kept",
        },
        "input_handling": INPUT_HANDLING,
        "speed": results,
        "limit": limit,
        "ratios": rows,
        "limit_fractions": limits,
        "agreement": agree,
        "summary": summ,
        "markdown": markdown,
    }
    path = harness.write_variant("swrf_speed", report, variant=args.variant, quick=args.quick)
    print(markdown)
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
