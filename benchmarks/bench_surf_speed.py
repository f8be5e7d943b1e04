"""Speed of dmargin's SURF family against fast-select and skrebate, in one run.

What is measured (results go to ``benchmarks/results/surf_speed.json``):

1. Fit time of ``dmargin.MultiSURF``, ``MultiSURFstar``, ``SURF`` and ``ReliefF``
   (k = 10; its two-class fit includes STIR's p-values, and a row "ReliefF,
   weights only" has ``pvalues=False``; a row "MultiSURF, p-values" has
   ``pvalues=True``) at N = 2000, 4000, 8000 samples and A = 50 features, one and two
   threads, against fast-select 0.3.0's ``MultiSURF``, ``MultiSURF(use_star=True)``,
   ``SURF`` and ``ReliefF`` (``backend="cpu"``) and skrebate 0.8.4's ``MultiSURF``,
   ``MultiSURFstar``, ``SURF`` and ``ReliefF``.  Every (method, N, threads) cell runs
   in a fresh subprocess whose NUMBA/OMP/OPENBLAS/MKL thread variables are set to
   the thread count (fast-select and skrebate also get ``n_jobs=threads``) and
   whose numba cache directory is new and empty: one timed first fit (with the JIT
   compilation), then the best of up to 3 further fits (``_harness.speed_cells`` and
   ``fit_cell``, shared with ``bench_skrebate08_speed.py``).  skrebate (pure Python
   neighbour loops over a dense N x N matrix) fits once from N = 4000 on, and only
   at one thread from N = 4000 on (its ``n_jobs`` parallelises the scoring only).
   Nothing is extrapolated: a cell that did not run is absent.
2. Agreement on the same data: the top-10 features of every method against
   dmargin's (same algorithm), and ``max |w - w_skrebate|`` for dmargin and
   fast-select (skrebate defines the semantics; fast-select computes in float32).
3. Interleaved rounds (``bench_relief_speed.worker_rounds``: one fresh process, one
   thread, the spambase-like rows of ``_spambase_like.py`` at N = 2000, 4000, 8000,
   A = 57): ``dmargin.MultiSURF()`` and fast-select's ``MultiSURF(backend="cpu",
   n_jobs=1)``, a warm-up fit each, then 5 rounds fitting both, who goes first
   alternating; the best of 5 each and their ratio.
4. The machine's peak (``_peak.py``, in ``machine_info``): every dmargin cell's rate
   (``dmargin.fit_cost(...).operations`` over its steady fit) as a share of it.
5. A markdown summary (also stored in the JSON under ``"markdown"``), with the
   project's targets: MultiSURF at N = 8000, A = 50, one thread at least 2x
   fast-select and 30x skrebate; in the interleaved rounds at least 3.0x fast-select
   at N = 8000 and 2.5x at N = 2000.

Data: ``sklearn.datasets.make_classification`` as in ``bench_relief_speed.py``
(5 informative of 50 features, 2 classes), min-max scaled to [0, 1] once, so
every library gets the same float64 matrix.

Usage::

    python benchmarks/bench_surf_speed.py            # full run (about 20 min on a quiet 2-core machine)
    python benchmarks/bench_surf_speed.py --quick    # N = 1000, 1 thread, one steady fit;
                                                     # rounds at N = 2000, 2 rounds

Only public APIs are used.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
import bench_relief_speed as relief  # noqa: E402  (the same data and the same worker helpers)

N_FULL = (2000, 4000, 8000)
N_QUICK = (1000,)
THREADS = (1, 2)
A_SPEED = 50
N_NEIGHBORS = 10
TOP = 10
STEADY_REPEATS = 3
STEADY_BUDGET_S = 120.0
SKREBATE_SINGLE_FIT_FROM_N = 4000
SKREBATE_ONE_THREAD_FROM_N = 4000
WORKER_TIMEOUT_S = 2400.0
QUIET_BUSY_CORES = 0.3

# Project targets (MultiSURF, N = 8000, A = 50, one thread)
TARGET_FAST_SELECT_SPEEDUP = 2.0
TARGET_SKREBATE_SPEEDUP = 30.0

#: The algorithms and who implements them: ``{algorithm: {library: method}}``.
ALGORITHMS = {
    "MultiSURF": {
        "dmargin": "dmargin.MultiSURF",
        "fast-select": "fast_select.MultiSURF",
        "skrebate": "skrebate.MultiSURF",
    },
    "MultiSURF*": {
        "dmargin": "dmargin.MultiSURFstar",
        "fast-select": "fast_select.MultiSURFstar",
        "skrebate": "skrebate.MultiSURFstar",
    },
    "SURF": {
        "dmargin": "dmargin.SURF",
        "fast-select": "fast_select.SURF",
        "skrebate": "skrebate.SURF",
    },
    "ReliefF": {
        "dmargin": "dmargin.ReliefF",
        "fast-select": "fast_select.ReliefF",
        "skrebate": "skrebate.ReliefF",
    },
    # What the p-values cost: dmargin's ReliefF without STIR's extras (the peers
    # compute weights only), and MultiSURF with STIR's (a third pass).
    "ReliefF, weights only": {
        "dmargin": "dmargin.ReliefF+weights",
        "fast-select": "fast_select.ReliefF",
    },
    "MultiSURF, p-values": {"dmargin": "dmargin.MultiSURF+pvalues"},
}
LIBRARIES = ("dmargin", "fast-select", "skrebate")

INPUT_HANDLING = {
    "common": relief.INPUT_HANDLING["common"],
    "skrebate 0.8.4": (
        "Distances: scipy pdist(cityblock) on a min-max normalised copy, squareform to a dense "
        "N x N float64 matrix; SURF's threshold is its mean (zero diagonal included), "
        "MultiSURF's per row mean - std/2 over the other rows; neighbour lists built by "
        "pure-Python loops; compute_score per instance and feature.  ReliefF: k = 10 hits and "
        "misses from np.argsort of each row."
    ),
    "fast-select 0.3.0": (
        "Continuous columns min-max normalised, then float32.  MultiSURF: one numba prange kernel "
        "per row, distances to all rows into a per-thread buffer, mean and std from sums, then "
        "near (and with use_star far) neighbours scored; its docstring does not claim identity "
        "with the published MultiSURF*, the agreement table shows how close it comes to "
        "skrebate's.  SURF: its own class (the paper's binary SURF).  ReliefF: k = 10 as in bench_relief_speed.py."
    ),
    "dmargin": (
        "Public estimators with defaults (scale='minmax', discrete_threshold=10): float64, "
        "skrebate's semantics; two passes per anchor block over the same tiles (distance "
        "moments, then neighbours within the thresholds), a symmetric grid so each pair's "
        "distance is computed once per pass; memory O(N A), no N x N array."
    ),
}


# --------------------------------------------------------------------------- #
# estimators (public APIs only)
# --------------------------------------------------------------------------- #
def build_estimator(method: str, threads: int):
    """A fresh, unfitted estimator for ``method``."""
    library, name = method.split(".")
    if library == "dmargin":
        import dmargin

        if name == "ReliefF+weights":
            return dmargin.ReliefF(n_neighbors=N_NEIGHBORS, pvalues=False)
        if name == "MultiSURF+pvalues":
            return dmargin.MultiSURF(pvalues=True)
        return (
            dmargin.ReliefF(n_neighbors=N_NEIGHBORS)
            if name == "ReliefF"
            else getattr(dmargin, name)()
        )
    if library == "skrebate":
        import skrebate

        extra = {"n_neighbors": N_NEIGHBORS} if name == "ReliefF" else {}
        return getattr(skrebate, name)(n_features_to_select=TOP, n_jobs=threads, **extra)
    if library == "fast_select":
        import fast_select

        common = {"n_features_to_select": TOP, "backend": "cpu", "n_jobs": threads}
        if name == "MultiSURFstar":
            return fast_select.MultiSURF(use_star=True, **common)
        if name == "ReliefF":
            return fast_select.ReliefF(n_neighbors=N_NEIGHBORS, **common)
        return getattr(fast_select, name)(**common)
    raise ValueError(f"unknown method {method!r}")


# --------------------------------------------------------------------------- #
# worker: one (method, N, threads) cell in a fresh subprocess
# --------------------------------------------------------------------------- #
def worker_fit(spec: dict) -> dict:
    X, y, informative = relief.make_data(spec["n"], spec["features"])
    result = harness.fit_cell(
        lambda: build_estimator(spec["method"], spec["threads"]),
        X,
        y,
        steady_repeats=spec["steady_repeats"],
        steady_budget_s=spec["steady_budget_s"],
        top=TOP,
        memory=relief.memory_fields,
    )
    return {**result, "informative_columns": informative}


WORKERS = {"fit": worker_fit, "rounds": relief.worker_rounds}


# --------------------------------------------------------------------------- #
# parent
# --------------------------------------------------------------------------- #
def cells(ns, threads, steady_repeats):
    return harness.speed_cells(
        ns,
        ALGORITHMS,
        LIBRARIES,
        threads,
        key="algorithm",
        features=A_SPEED,
        steady_repeats=steady_repeats,
        steady_budget_s=STEADY_BUDGET_S,
        peer_single_fit_from_n=SKREBATE_SINGLE_FIT_FROM_N,
        peer_one_thread_from_n=SKREBATE_ONE_THREAD_FROM_N,
    )


def steady_time(result):
    return relief.steady_time(result)


def find(results, algorithm, library, n, threads):
    return harness.find_cell(results, algorithm=algorithm, library=library, n=n, threads=threads)


def agreement(results, ns, threads) -> list[dict]:
    """Per algorithm, N and thread count: top-10 overlap with dmargin and weight differences."""
    rows = []
    for n in ns:
        for t in threads:
            for algorithm in ALGORITHMS:
                ours = find(results, algorithm, "dmargin", n, t)
                if ours is None:
                    continue
                entry = {"algorithm": algorithm, "n": n, "threads": t}
                peer_sk = find(results, algorithm, "skrebate", n, 1)
                for library in ("fast-select", "skrebate"):
                    peer = find(results, algorithm, library, n, t if library != "skrebate" else 1)
                    if peer is not None:
                        entry[f"top10_common_{library}"] = len(
                            set(ours["top10"]) & set(peer["top10"])
                        )
                if peer_sk is not None:
                    w_sk = np.asarray(peer_sk["feature_importances"])
                    for library in ("dmargin", "fast-select"):
                        r = find(results, algorithm, library, n, t)
                        if r is not None:
                            entry[f"max_abs_diff_vs_skrebate_{library}"] = float(
                                np.max(np.abs(np.asarray(r["feature_importances"]) - w_sk))
                            )
                    entry["max_abs_weight_skrebate"] = float(np.max(np.abs(w_sk)))
                rows.append(entry)
    return rows


def targets(results, n) -> dict:
    dm = steady_time(find(results, "MultiSURF", "dmargin", n, 1))
    fs = steady_time(find(results, "MultiSURF", "fast-select", n, 1))
    sk = steady_time(find(results, "MultiSURF", "skrebate", n, 1))
    fs_over = relief.ratio(fs, dm)
    sk_over = relief.ratio(sk, dm)
    return {
        "at_n": n,
        "multisurf_fast_select_over_dmargin": fs_over,
        "multisurf_at_least_2x_fast_select": None
        if fs_over is None
        else fs_over >= TARGET_FAST_SELECT_SPEEDUP,
        "multisurf_skrebate_over_dmargin": sk_over,
        "multisurf_at_least_30x_skrebate": None
        if sk_over is None
        else sk_over >= TARGET_SKREBATE_SPEEDUP,
    }


def peak_share(result, method: str, n: int, threads: int, peak) -> float | None:
    """dmargin's cell's rate (``fit_cost(...).operations`` over its steady fit) over
    ``threads`` times the one-core float32 peak."""
    if result is None:
        return None
    import dmargin

    cost = dmargin.fit_cost(build_estimator(method, threads), n, A_SPEED)
    seconds = steady_time(result)
    if cost is None or not seconds:
        return None
    return harness.peak_fraction(cost.operations / seconds, peak, "float32", threads)


def render_markdown(machine, results, ns, threads, agree, goals, rounds=None) -> str:
    versions = machine["versions"]
    peak = machine.get("peak")
    parts = [
        f"{machine['cpu_model']}, {machine['logical_cores']} cores, numba {versions['numba']}, "
        f"dmargin {versions['dmargin']}, skrebate {versions['skrebate']}, fast-select "
        f"{versions['fast-select']}; {machine['date'][:10]}.",
        f"#### SURF family and ReliefF fit time, A = {A_SPEED} (seconds: steady-state best, first "
        "fit with JIT in parentheses)",
    ]
    headers = [
        "algorithm",
        "N",
        "thr",
        "dmargin",
        "fast-select",
        "skrebate",
        "fast-select / dmargin",
        "skrebate / dmargin",
        "dmargin of f32 peak",
    ]
    rows = []
    for algorithm in ALGORITHMS:
        for n in ns:
            for t in threads:
                dm, fs, sk = (find(results, algorithm, lib, n, t) for lib in LIBRARIES)
                if dm is None and fs is None and sk is None:
                    continue
                rows.append(
                    [
                        algorithm,
                        n,
                        t,
                        harness.cell_label(dm),
                        harness.cell_label(fs),
                        harness.cell_label(sk),
                        relief.fmt_ratio(relief.ratio(steady_time(fs), steady_time(dm))),
                        relief.fmt_ratio(relief.ratio(steady_time(sk), steady_time(dm))),
                        relief.pct(peak_share(dm, ALGORITHMS[algorithm]["dmargin"], n, t, peak)),
                    ]
                )
    parts.append(harness.markdown_table(headers, rows))
    parts.append(
        f"`*` a single fit (skrebate from N = {SKREBATE_SINGLE_FIT_FROM_N}, where it also "
        "runs at one thread only).  Ratios > 1: dmargin is faster.  Of f32 peak: "
        "`dmargin.fit_cost(...).operations` (N^2 A: the two passes over the unordered pairs) "
        "over the steady fit, against the thread count times one core's float32 peak (below)."
    )
    parts.append(relief.peak_line(peak))
    if rounds is not None:
        parts.append(relief.rounds_markdown(rounds, "MultiSURF", "MultiSURF()"))
    parts.append(
        f"#### Agreement on the same data (top-{TOP} features in common with dmargin; "
        "largest |w - w_skrebate|)"
    )
    a_rows = [
        [
            e["algorithm"],
            e["n"],
            e["threads"],
            e.get("top10_common_fast-select"),
            e.get("top10_common_skrebate"),
            _sci(e.get("max_abs_diff_vs_skrebate_dmargin")),
            _sci(e.get("max_abs_diff_vs_skrebate_fast-select")),
            _sci(e.get("max_abs_weight_skrebate")),
        ]
        for e in agree
    ]
    parts.append(
        harness.markdown_table(
            [
                "algorithm",
                "N",
                "thr",
                "top-10 common: fast-select",
                "top-10 common: skrebate",
                "dmargin - skrebate",
                "fast-select - skrebate",
                "max |w skrebate|",
            ],
            a_rows,
        )
    )
    parts.append("#### Targets (MultiSURF, one thread)")
    met = {True: "yes", False: "NO", None: None}
    parts.append(
        harness.markdown_table(
            ["target", "measured", "met"],
            [
                [
                    f"dmargin >= {TARGET_FAST_SELECT_SPEEDUP:g}x fast-select at N = {goals['at_n']}",
                    relief.fmt_ratio(goals["multisurf_fast_select_over_dmargin"]),
                    met[goals["multisurf_at_least_2x_fast_select"]],
                ],
                [
                    f"dmargin >= {TARGET_SKREBATE_SPEEDUP:g}x skrebate at N = {goals['at_n']}",
                    relief.fmt_ratio(goals["multisurf_skrebate_over_dmargin"]),
                    met[goals["multisurf_at_least_30x_skrebate"]],
                ],
                *[
                    [
                        f"dmargin >= {target:g}x fast-select, interleaved rounds, spambase-like "
                        f"N = {n:,}",
                        relief.fmt_ratio(goals.get(f"multisurf_rounds_ratio_{n}")),
                        met[goals.get(f"multisurf_rounds_met_{n}")],
                    ]
                    for n, target in relief.TARGET_ROUNDS_RATIO.items()
                    if f"multisurf_rounds_met_{n}" in goals
                ],
            ],
        )
    )
    busy = [(r["spec"], r.get("other_cores_busy")) for r in results if r.get("ok")]
    noisy = [
        f"{s['method']} N={s['n']} thr={s['threads']} ({b})"
        for s, b in busy
        if b is not None and b >= QUIET_BUSY_CORES
    ]
    if rounds is not None and rounds.get("ok") and rounds.get("other_cores_busy") is not None:
        if rounds["other_cores_busy"] >= QUIET_BUSY_CORES:
            noisy.append(f"interleaved rounds ({rounds['other_cores_busy']})")
    parts.append(
        "Other processes kept < 0.3 cores busy during every measurement."
        if not noisy
        else "Measurements disturbed by other processes (average cores they kept busy): "
        + "; ".join(noisy)
        + ". Those numbers are pessimistic."
    )
    return "\n\n".join(parts)


def _sci(value):
    return None if value is None else f"{value:.2g}"


def main(argv=None) -> int:
    parser = harness.options(
        __doc__,
        quick=f"N = {', '.join(map(str, N_QUICK))}, 1 thread, one steady fit",
        idle_wait=60.0,
        attempts=2,
        worker=True,
    )
    parser.add_argument(
        "--rounds-only",
        action="store_true",
        help="only the interleaved rounds against fast-select (store it under its own "
        "--variant: the cells and their tables are absent)",
    )
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, WORKERS)
        return 0

    ns = N_QUICK if args.quick else N_FULL
    threads = (1,) if args.quick else THREADS
    steady_repeats = 1 if args.quick else STEADY_REPEATS
    machine = harness.machine_info(
        [
            "dmargin",
            "numpy",
            "scipy",
            "scikit-learn",
            "numba",
            "llvmlite",
            "skrebate",
            "fast-select",
            "joblib",
        ]
    )
    machine["dmargin_git"] = harness.git_revision(harness.REPO)

    rounds = relief.run_rounds(
        __file__,
        "MultiSURF",
        relief.N_ROUNDS_QUICK if args.quick else relief.N_ROUNDS,
        relief.ROUNDS_QUICK if args.quick else relief.ROUNDS,
        args,
    )
    if rounds.get("ok"):
        relief.with_peak_fractions(rounds["rows"], machine["peak"], "dmargin_pair_features_per_s")
    specs = [] if args.rounds_only else list(cells(ns, threads, steady_repeats))
    results = harness.launch_cells(
        __file__, specs, args, timeout=WORKER_TIMEOUT_S, quiet_cores=QUIET_BUSY_CORES
    )
    agree = agreement(results, ns, threads)
    goals = targets(results, max(ns))
    goals.update(relief.rounds_targets(rounds, "MultiSURF"))
    markdown = render_markdown(machine, results, ns, threads, agree, goals, rounds)
    report = {
        "benchmark": "surf_speed",
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
            "steady_state": f"best of up to {steady_repeats} fits after the first, stopping early "
            f"once the repeats used {STEADY_BUDGET_S:.0f} s",
            "skrebate": f"a single fit, one thread only, from N = {SKREBATE_SINGLE_FIT_FROM_N}",
            "contention": f"before each measurement wait up to {args.idle_wait:.0f} s until other "
            f"processes use < {QUIET_BUSY_CORES} cores; a disturbed measurement is "
            f"run up to {args.attempts} times, the least disturbed kept",
        },
        "input_handling": INPUT_HANDLING,
        "spambase_like": {
            "generator": "benchmarks/_spambase_like.py: make_spambase_like(N, seed=0), a "
            "synthetic stand-in for UCI spambase (no copy here): 57 continuous features, "
            "39.4 % positive",
            "preprocessing": "per-column min-max scaling to [0, 1], float64, C-contiguous",
            "rounds_sizes": rounds["spec"]["ns"],
        },
        "rounds": rounds,
        "speed": results,
        "agreement": agree,
        "targets": goals,
        "markdown": markdown,
    }
    path = harness.write_variant("surf_speed", report, variant=args.variant, quick=args.quick)
    print(markdown)
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
