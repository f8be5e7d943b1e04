"""How close are sampled anchors (``n_anchors=m``) to the exact fit, and how much faster?

``dmargin.ReliefF``, ``dmargin.IRelief`` and ``dmargin.Immigrate`` take ``n_anchors=m``:
``m`` anchors drawn once per fit, stratified by class and seeded by ``random_state``,
each scored against all N rows (O(m N A) instead of O(N^2 A) per pass).  This script
measures what that costs in accuracy (results go to ``benchmarks/results/anchors.json``,
or ``benchmarks/results/quick/anchors.json`` with ``--quick``).

Data: ``sklearn.datasets.make_classification(n_samples=N, n_features=50,
n_informative=10, n_redundant=0, shuffle=False, random_state=0)`` -- the informative
features are columns 0-9 -- with the rows put in a random order (fixed seed; the
columns stay in place), since unshuffled rows come sorted by class.

For each (estimator, N), in a fresh subprocess with 2 threads (thread variables set,
empty numba cache), after a JIT warm-up of both the exact and the sampled path on
500 rows: the exact fit (``n_anchors=None``) once, then ``n_anchors=m`` for every m
and seed.  Recorded per sampled fit, against the exact fit of the same estimator
and data:

* ReliefF (``n_neighbors=10``) and IRelief (its defaults): the Pearson correlation
  of ``feature_importances_`` with the exact weights, the overlap of the top 10
  with the exact top 10, and how many of the top 10 are informative;
* Immigrate (``max_iter=10``, its defaults otherwise): the same on the diagonal of
  ``weight_matrix_``, plus the overlap of the top 20 off-diagonal interactions
  (``interactions_``, pairs i < j ranked by weight) with the exact top 20 and the
  correlation of the whole upper triangle of W;
* the wall time of each fit and the speed-up, exact time / sampled time (median over
  the seeds), with the cores other processes kept busy meanwhile.

ReliefF and IRelief at N = 20,000 and 50,000, Immigrate at N = 20,000 only (N =
10,000 when a one-step fit at 5,000 rows predicts that its exact fit would take over
``IMMIGRATE_EXACT_LIMIT_S``; the choice is stored); A = 50; m = 250, 500, 1,000,
2,000, 5,000 with seeds 0, 1, 2.  The acceptance figure: at N = 50,000 with
m >= 2,000, the weights' correlation with the exact fit for ReliefF and IRelief
(target >= 0.99); Immigrate's is reported as it is.

Usage::

    python benchmarks/bench_anchors.py            # full run (21 min on a quiet 2-core machine)
    python benchmarks/bench_anchors.py --quick    # N = 5,000, m = 250 and 1,000, one seed
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402

A = 50
N_INFORMATIVE = 10
TOP_K = 10
TOP_PAIRS = 20
THREADS = 2
ROW_ORDER_SEED = 1

N_FULL = (20_000, 50_000)
N_QUICK = (5_000,)
M_FULL = (250, 500, 1_000, 2_000, 5_000)
M_QUICK = (250, 1_000)
SEEDS_FULL = (0, 1, 2)
SEEDS_QUICK = (0,)
IMMIGRATE_N_FULL, IMMIGRATE_N_FALLBACK = 20_000, 10_000
IMMIGRATE_MAX_ITER = 10
IMMIGRATE_EXACT_LIMIT_S = 20 * 60.0
IMMIGRATE_PROBE_N = 5_000
#: JIT warm-up sizes: each kernel has a serial and a threaded twin, chosen by the amount of
#: work, so both the exact and the sampled path are run once small and once large enough
#: for the threaded twin (N = 2000, m = 500: 5e7 pair-features and more).
WARMUP = ((500, 100), (2_000, 500))
#: Fits shorter than this give no meaningful reading of the other processes' CPU use.
BUSY_MIN_S = 0.5

TARGET_N, TARGET_M, TARGET_CORR = 50_000, 2_000, 0.99
METHODS = ("ReliefF", "IRelief", "Immigrate")
QUIET_BUSY_CORES = 0.3
WORKER_TIMEOUT_S = 3 * 3600.0


# --------------------------------------------------------------------------- #
# data and estimators
# --------------------------------------------------------------------------- #
def dataset_args(n: int) -> dict:
    """The exact ``make_classification`` arguments (informative features = columns 0-9)."""
    return {
        "n_samples": n,
        "n_features": A,
        "n_informative": N_INFORMATIVE,
        "n_redundant": 0,
        "shuffle": False,
        "random_state": 0,
    }


def make_data(n: int):
    from sklearn.datasets import make_classification

    X, y = make_classification(**dataset_args(n))
    order = np.random.default_rng(ROW_ORDER_SEED).permutation(n)  # rows only; columns stay
    return np.ascontiguousarray(X[order]), y[order]


def build(method: str, n_anchors=None, random_state=None, max_iter=None):
    import dmargin

    if method == "ReliefF":
        return dmargin.ReliefF(n_neighbors=10, n_anchors=n_anchors, random_state=random_state)
    if method == "IRelief":
        return dmargin.IRelief(n_anchors=n_anchors, random_state=random_state)
    if method == "Immigrate":
        return dmargin.Immigrate(
            max_iter=max_iter or IMMIGRATE_MAX_ITER, n_anchors=n_anchors, random_state=random_state
        )
    raise ValueError(f"unknown method {method!r}")


def top(values, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-np.asarray(values), kind="stable")[:k]]


def top_pairs(est, k: int = TOP_PAIRS) -> list[list[int]]:
    head = est.interactions_.head(k)
    return [[int(i), int(j)] for i, j in zip(head["i"], head["j"])]


def pearson(a, b) -> float:
    return float(np.corrcoef(np.asarray(a, dtype=float), np.asarray(b, dtype=float))[0, 1])


def summary(est, method: str) -> dict:
    """What is compared with the exact fit: weights (diagonal of W), top 10, top pairs."""
    w = np.asarray(est.feature_importances_, dtype=float)
    out = {
        "weights": w,
        "top10": top(w, TOP_K),
        "informative_in_top10": sum(1 for i in top(w, TOP_K) if i < N_INFORMATIVE),
        "n_iter": int(getattr(est, "n_iter_", 0)) or None,
    }
    if method == "Immigrate":
        W = np.asarray(est.weight_matrix_)
        out["diag_is_importances"] = bool(np.allclose(np.diag(W), w))
        out["upper"] = W[np.triu_indices(W.shape[0], k=1)]
        out["top_pairs"] = top_pairs(est)
    return out


def compare(sampled: dict, exact: dict, method: str) -> dict:
    out = {
        "corr": round(pearson(sampled["weights"], exact["weights"]), 6),
        "top10_overlap": len(set(sampled["top10"]) & set(exact["top10"])),
        "informative_in_top10": sampled["informative_in_top10"],
    }
    if method == "Immigrate":
        out["corr_upper"] = round(pearson(sampled["upper"], exact["upper"]), 6)
        out["top_pairs_overlap"] = len(
            {tuple(p) for p in sampled["top_pairs"]} & {tuple(p) for p in exact["top_pairs"]}
        )
    return out


# --------------------------------------------------------------------------- #
# worker: one (estimator, N) in its own subprocess
# --------------------------------------------------------------------------- #
def timed_fit(est, X, y):
    monitor = harness.CpuMonitor().start()
    seconds, est = harness.timed(est.fit, X, y)
    return round(seconds, 3), est, monitor.stop()


def worker_anchors(spec: dict) -> dict:
    import numba

    method, n = spec["method"], spec["n"]
    warnings.filterwarnings("ignore", category=UserWarning)  # Immigrate's fit-time hint
    # JIT warm-up of both paths and both twins of each kernel, so no timed fit compiles
    for n_warm, m_warm in WARMUP:
        Xw, yw = make_data(n_warm)
        build(method, max_iter=2).fit(Xw, yw)
        build(method, n_anchors=m_warm, random_state=0, max_iter=2).fit(Xw, yw)

    whole = harness.CpuMonitor().start()
    X, y = make_data(n)
    exact_s, est, cpu = timed_fit(build(method), X, y)
    exact = summary(est, method)
    print(f"[bench]   {method} N={n} exact: {exact_s} s", file=sys.stderr, flush=True)
    result = {
        "method": method,
        "n": n,
        "features": A,
        "numba_threads": numba.get_num_threads(),
        "exact": {
            "fit_s": exact_s,
            "n_iter": exact["n_iter"],
            "cpu": cpu,
            "weights": [round(float(v), 8) for v in exact["weights"]],
            "top10": exact["top10"],
            "informative_in_top10": exact["informative_in_top10"],
            **({"top_pairs": exact["top_pairs"]} if method == "Immigrate" else {}),
        },
        "sampled": [],
    }
    for m in spec["ms"]:
        for seed in spec["seeds"]:
            seconds, est, cpu = timed_fit(build(method, n_anchors=m, random_state=seed), X, y)
            anchors = getattr(est, "anchor_indices_", None)
            sampled = summary(est, method)
            row = {
                "m": m,
                "seed": seed,
                "fit_s": seconds,
                "n_iter": sampled["n_iter"],
                "anchors_used": None if anchors is None else int(len(anchors)),
                "speedup": round(exact_s / seconds, 2) if seconds > 0 else None,
                **compare(sampled, exact, method),
                "cpu": cpu,
            }
            result["sampled"].append(row)
            print(
                f"[bench]   {method} N={n} m={m} seed={seed}: {seconds} s, corr {row['corr']:.4f}",
                file=sys.stderr,
                flush=True,
            )
    result["cpu_whole_run"] = whole.stop()
    return result


def worker_probe(spec: dict) -> dict:
    """One Immigrate step at ``IMMIGRATE_PROBE_N`` rows (after a warm-up): the exact fit's time at N."""
    warnings.filterwarnings("ignore", category=UserWarning)
    for n_warm, _ in WARMUP:
        build("Immigrate", max_iter=1).fit(*make_data(n_warm))
    X, y = make_data(IMMIGRATE_PROBE_N)
    seconds, _ = harness.timed(build("Immigrate", max_iter=1).fit, X, y)
    predicted = seconds * IMMIGRATE_MAX_ITER * (spec["n"] / IMMIGRATE_PROBE_N) ** 2
    return {
        "probe_n": IMMIGRATE_PROBE_N,
        "one_step_s": round(seconds, 3),
        "predicted_exact_s": round(predicted, 1),
    }


WORKERS = {"anchors": worker_anchors, "probe": worker_probe}


# --------------------------------------------------------------------------- #
# parent
# --------------------------------------------------------------------------- #
def launch(spec: dict, args) -> dict:
    return harness.launch(
        __file__,
        spec,
        threads=THREADS,
        timeout=WORKER_TIMEOUT_S,
        quiet_cores=QUIET_BUSY_CORES,
        idle_wait=args.idle_wait,
        attempts=args.attempts,
    )


def immigrate_n(args) -> dict:
    if args.quick:
        return {"n": N_QUICK[0], "reason": "--quick"}
    probe = launch({"kind": "probe", "n": IMMIGRATE_N_FULL}, args)
    predicted = probe.get("predicted_exact_s") if probe.get("ok") else None
    if predicted is not None and predicted <= IMMIGRATE_EXACT_LIMIT_S:
        return {
            "n": IMMIGRATE_N_FULL,
            "probe": probe,
            "reason": f"exact fit predicted at {predicted:.0f} s <= {IMMIGRATE_EXACT_LIMIT_S:.0f} s",
        }
    return {
        "n": IMMIGRATE_N_FALLBACK,
        "probe": probe,
        "reason": f"exact fit at N={IMMIGRATE_N_FULL} predicted at {predicted} s "
        f"> {IMMIGRATE_EXACT_LIMIT_S:.0f} s: measured at N={IMMIGRATE_N_FALLBACK}",
    }


def aggregate(run: dict) -> list[dict]:
    """Per m: min / mean / max over seeds of each figure, median sampled time and speed-up."""
    rows = []
    by_m = {}
    for r in run["sampled"]:
        by_m.setdefault(r["m"], []).append(r)
    for m, rs in sorted(by_m.items()):
        row = {
            "m": m,
            "seeds": len(rs),
            "fit_s_median": round(float(np.median([r["fit_s"] for r in rs])), 3),
        }
        row["speedup_median"] = round(run["exact"]["fit_s"] / row["fit_s_median"], 2)
        keys = ["corr", "top10_overlap", "informative_in_top10"]
        if run["method"] == "Immigrate":
            keys += ["corr_upper", "top_pairs_overlap"]
        for key in keys:
            values = [r[key] for r in rs]
            row[key] = {
                "min": min(values),
                "mean": round(float(np.mean(values)), 6),
                "max": max(values),
            }
        row["n_iter"] = sorted({r["n_iter"] for r in rs if r["n_iter"] is not None})
        row["other_cores_busy_max"] = busy_max(rs)
        rows.append(row)
    return rows


def acceptance(runs: list[dict], quick: bool) -> dict:
    n_target = N_QUICK[0] if quick else TARGET_N
    m_target = max(M_QUICK) if quick else TARGET_M
    out = {"n": n_target, "m_at_least": m_target, "target_corr": TARGET_CORR}
    for run in runs:
        if not run.get("ok"):
            continue
        method = run["method"]
        if method in ("ReliefF", "IRelief") and run["n"] != n_target:
            continue
        values = [r["corr"] for r in run["sampled"] if r["m"] >= m_target]
        if not values:
            continue
        entry = {
            "n": run["n"],
            "min_corr": min(values),
            "mean_corr": round(float(np.mean(values)), 6),
            "fits": len(values),
        }
        if method != "Immigrate":
            entry["met"] = min(values) >= TARGET_CORR
        else:
            entry["min_corr_upper"] = min(
                r["corr_upper"] for r in run["sampled"] if r["m"] >= m_target
            )
        out[method] = entry
    return out


def busy_max(fits: list[dict]):
    """Most cores other processes kept busy during one of ``fits`` (those lasting >= BUSY_MIN_S)."""
    values = [
        f["cpu"]["other_cores_busy"]
        for f in fits
        if f["fit_s"] >= BUSY_MIN_S and f["cpu"]["other_cores_busy"] is not None
    ]
    return max(values) if values else None


def fmt_corr(stats: dict) -> str:
    return f"{stats['min']:.4f} / {stats['mean']:.4f}"


def fmt_count(stats: dict) -> str:
    return f"{stats['min']} / {stats['mean']:.3g}"


def iters(values) -> str:
    values = [v for v in values if v is not None]
    return ",".join(str(v) for v in values) if values else "—"


def render(out: dict) -> str:
    seeds = len(out["protocol"]["seeds"])
    parts = [
        f"{out['machine']['cpu_model']}, {out['machine']['logical_cores']} cores, "
        f"{THREADS} threads per fit, numba {out['machine']['versions']['numba']}, "
        f"dmargin {out['machine']['versions']['dmargin']}; {out['machine']['date'][:10]}. "
        f"`make_classification` data, A = {A}, informative features 0-9; {seeds} seed(s) per m. "
        "Cells `min / mean` over the seeds; times: the median sampled fit, speed-up = exact "
        "time / that."
    ]
    rows = []
    for run in out["runs"]:
        if run["method"] == "Immigrate":
            continue
        if not run.get("ok"):
            rows.append([run["spec"]["method"], run["spec"]["n"], "FAILED"] + [None] * 7)
            continue
        ex = run["exact"]
        rows.append(
            [
                run["method"],
                run["n"],
                "all (exact)",
                "1",
                f"{TOP_K} / {TOP_K}",
                f"{ex['informative_in_top10']}",
                ex["fit_s"],
                "1",
                iters([ex["n_iter"]]),
                busy_max([ex]),
            ]
        )
        for r in run["summary"]:
            rows.append(
                [
                    run["method"],
                    run["n"],
                    r["m"],
                    fmt_corr(r["corr"]),
                    fmt_count(r["top10_overlap"]),
                    fmt_count(r["informative_in_top10"]),
                    r["fit_s_median"],
                    f"{r['speedup_median']:.3g}",
                    iters(r["n_iter"]),
                    r["other_cores_busy_max"],
                ]
            )
    parts.append(
        "#### ReliefF (k = 10) and IRelief (defaults): sampled anchors against the exact fit"
    )
    parts.append(
        harness.markdown_table(
            [
                "estimator",
                "N",
                "m",
                "corr with exact",
                "top-10 overlap",
                "informative in top 10",
                "fit s",
                "speed-up",
                "n_iter",
                "other cores busy",
            ],
            rows,
        )
    )

    imm = [run for run in out["runs"] if run["method"] == "Immigrate"]
    if imm:
        run = imm[0]
        parts.append(
            f"#### Immigrate (max_iter = {IMMIGRATE_MAX_ITER}): diagonal of W and its interactions"
        )
        rows = []
        if run.get("ok"):
            ex = run["exact"]
            rows.append(
                [
                    run["n"],
                    "all (exact)",
                    "1",
                    f"{TOP_K} / {TOP_K}",
                    f"{ex['informative_in_top10']}",
                    f"{TOP_PAIRS} / {TOP_PAIRS}",
                    "1",
                    ex["fit_s"],
                    "1",
                    busy_max([ex]),
                ]
            )
            for r in run["summary"]:
                rows.append(
                    [
                        run["n"],
                        r["m"],
                        fmt_corr(r["corr"]),
                        fmt_count(r["top10_overlap"]),
                        fmt_count(r["informative_in_top10"]),
                        fmt_count(r["top_pairs_overlap"]),
                        fmt_corr(r["corr_upper"]),
                        r["fit_s_median"],
                        f"{r['speedup_median']:.3g}",
                        r["other_cores_busy_max"],
                    ]
                )
        else:
            rows.append([run["spec"]["n"], "FAILED"] + [None] * 8)
        parts.append(
            harness.markdown_table(
                [
                    "N",
                    "m",
                    "corr of diag(W)",
                    "top-10 overlap (diag)",
                    "informative in top 10",
                    f"top-{TOP_PAIRS} interactions overlap",
                    "corr of W (i < j)",
                    "fit s",
                    "speed-up",
                    "other cores busy",
                ],
                rows,
            )
        )
        parts.append(f"Immigrate's N: {out['immigrate_n']['n']} ({out['immigrate_n']['reason']}).")

    acc = out["acceptance"]
    rows = []
    for method in METHODS:
        if method not in acc:
            continue
        e = acc[method]
        what = f"{method}, N = {e['n']}, m >= {acc['m_at_least']}: corr with the exact weights"
        if method == "Immigrate":
            rows.append(
                [
                    what + " (diagonal of W)",
                    f"min {e['min_corr']:.4f}, mean {e['mean_corr']:.4f} "
                    f"({e['fits']} fits); whole W: min {e['min_corr_upper']:.4f}",
                    "(reported)",
                ]
            )
        else:
            rows.append(
                [
                    what + f" >= {TARGET_CORR}",
                    f"min {e['min_corr']:.4f}, mean {e['mean_corr']:.4f} ({e['fits']} fits)",
                    "yes" if e["met"] else "NO",
                ]
            )
    parts.append("#### Target")
    parts.append(harness.markdown_table(["target", "measured", "met"], rows))
    ok = [run for run in out["runs"] if run.get("ok")]
    if ok:
        worst = max((busy_max([run["exact"], *run["sampled"]]) or 0.0) for run in ok)
        mean = np.mean([run["cpu_whole_run"]["other_cores_busy"] for run in ok])
        parts.append(
            f"Other processes kept {mean:.2f} cores busy on average over the runs, at most "
            f"{worst} during one fit of {BUSY_MIN_S} s or more (column 'other cores busy': "
            "the most during one such fit of that row; shorter fits give no reading). Times "
            "on a busy machine are upper bounds; the correlations and overlaps do not depend "
            "on it."
        )
    return "\n\n".join(parts)


def main(argv=None) -> int:
    parser = harness.options(
        __doc__,
        quick=f"N = {N_QUICK[0]:,}, m = {', '.join(map(str, M_QUICK))}, one seed",
        idle_wait=30.0,
        attempts=1,
        worker=True,
    )
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, WORKERS)
        return 0

    start = time.perf_counter()
    ns = N_QUICK if args.quick else N_FULL
    ms = M_QUICK if args.quick else M_FULL
    seeds = SEEDS_QUICK if args.quick else SEEDS_FULL
    machine = harness.machine_info(["dmargin", "numpy", "scikit-learn", "numba"])
    machine["dmargin_git"] = harness.git_revision(harness.REPO)

    choice = immigrate_n(args)
    plan = [(method, n) for method in ("ReliefF", "IRelief") for n in ns] + [
        ("Immigrate", choice["n"])
    ]
    runs = []
    for method, n in plan:
        run = launch(
            {
                "kind": "anchors",
                "method": method,
                "n": n,
                "ms": [m for m in ms if m < n],
                "seeds": list(seeds),
            },
            args,
        )
        if run.get("ok"):
            run["summary"] = aggregate(run)
        else:
            run.setdefault("method", method)
            run.setdefault("n", n)
        runs.append(run)

    out = {
        "benchmark": "anchors",
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "dataset": {
            "generator": "sklearn.datasets.make_classification",
            "arguments": dataset_args("N"),
            "rows": f"permuted with numpy.random.default_rng({ROW_ORDER_SEED}).permutation(N); "
            "columns unchanged",
            "informative_columns": list(range(N_INFORMATIVE)),
        },
        "protocol": {
            "estimators": {
                "ReliefF": "dmargin.ReliefF(n_neighbors=10)",
                "IRelief": "dmargin.IRelief()",
                "Immigrate": f"dmargin.Immigrate(max_iter={IMMIGRATE_MAX_ITER})",
            },
            "sizes": {"ReliefF": list(ns), "IRelief": list(ns), "Immigrate": [choice["n"]]},
            "n_anchors": list(ms),
            "seeds": list(seeds),
            "threads": THREADS,
            "subprocess": "one per (estimator, N), thread variables set, empty numba cache; JIT warm-up "
            "of the exact and the sampled path first, (N, m) = "
            + ", ".join(f"({n}, {m})" for n, m in WARMUP)
            + " (serial and threaded twins)",
            "corr": "Pearson correlation of feature_importances_ (Immigrate: the diagonal of W) with the "
            "exact fit's; corr_upper: of W's upper triangle (i < j)",
            "overlaps": f"top-{TOP_K} features, top-{TOP_PAIRS} interactions (interactions_, pairs i < j)",
            "speedup": "exact fit time / median sampled fit time over the seeds (whole fit, scaling included)",
            "idle_wait_s": args.idle_wait,
        },
        "immigrate_n": choice,
        "runs": runs,
    }
    out["acceptance"] = acceptance(runs, args.quick)
    out["total_wall_s"] = round(time.perf_counter() - start, 1)
    out["markdown"] = render(out)
    path = harness.write_variant("anchors", out, variant=args.variant, quick=args.quick)
    print(out["markdown"])
    print(f"\nwritten: {path} (total {out['total_wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
