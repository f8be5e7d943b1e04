"""Speed of the estimators skrebate 0.8 added, dmargin's against skrebate's, in one run.

What is measured (results go to ``benchmarks/results/skrebate08_speed.json``):

1. Fit time at N = 2000 and 8000 samples and A = 50 features, one and two threads, of
   dmargin's and skrebate 0.8.4's (``n_features_to_select=10``, ``n_jobs=threads``) same
   estimators on the same data:

   - the SWRF family: ``SWRF``, ``SWRFstar``, ``MultiSWRF``, ``MultiSWRFstar``,
     ``MultiSWRFDB``, ``MultiSWRFDBstar`` (defaults);
   - ``MuRelief(n_neighbors=10)`` (on continuous data with k far below the class sizes
     neither skrebate's self-hit nor its tie order occurs: the scores agree);
   - ``Iter(MultiSURF(), max_iter=5)``: skrebate's default ``max_iter=10`` makes ten
     MultiSURF fits when the scores keep moving (here they do), about 9 minutes for
     skrebate at N = 8000 on one thread, so both libraries get 5 (the other parameters
     are the shared defaults);
   - ``VLS(MultiSURF(), num_feature_subset=12, size_feature_subset=5, random_state=0)``:
     skrebate's default 40 subsets of 5 features cost 40 MultiSURF fits, each about 20 s
     for skrebate at N = 8000 whatever the subset's width (its pure-Python neighbour
     search is O(N^2)), over 13 minutes; 12 subsets (the 10 that cover the 50 features,
     then 2 drawn at random) keep its fit near 4 minutes, the same subsets in both
     libraries (the same seed and draw).

   As in ``bench_surf_speed.py`` (both use ``_harness.speed_cells`` / ``fit_cell``):
   every (estimator, library, N, threads) cell runs in a fresh subprocess whose
   NUMBA/OMP/OPENBLAS/MKL thread variables are set to the thread count and whose numba
   cache directory is new and empty; one timed first fit (with the JIT compilation),
   then the best of up to 3 further fits.  skrebate (pure Python neighbour loops over a
   dense N x N matrix) fits once from N = 4000 on, and only at one thread from N = 4000
   on (its ``n_jobs`` parallelises the scoring only).  A skrebate fit longer than 3
   minutes is named in the JSON (``"skrebate_slow_cells"``).  Nothing is extrapolated:
   a cell that did not run is absent.
2. The machine's practical limit for pairwise work, in the same run and on the same
   data: ``bench_relief_speed.py``'s fused numba loop ``acc[i] += sum_j sum_k |x_ik -
   x_jk|`` over all ordered pairs at the largest N, best of 3 at one and two threads,
   in pair-features per second.  dmargin's steady fits at that N are quoted in the same
   unit and as a fraction of the float64 loop at the same thread count, a fit's
   pair-features being N*N*A for the SWRF family and MuRelief (whatever passes a fit
   makes: both make two over the pairs), N*N*A per iteration for Iter (``n_iter_``
   fits), and N*N times the features of all subsets for VLS (12 x 5: each subset fit
   sees only its own columns).
3. Agreement on the same data: the top-10 features of dmargin against skrebate's, and
   ``max |w - w_skrebate|`` (expected below 1e-10 on this continuous data).
4. A markdown summary (also stored in the JSON under ``"markdown"``): per estimator
   at N = 8000, one thread, skrebate / dmargin, the fraction of the fused loop and the
   weights' largest difference.

Data: ``sklearn.datasets.make_classification`` as in ``bench_relief_speed.py``
(5 informative of 50 features, 2 classes), min-max scaled to [0, 1] once, so both
libraries get the same float64 matrix.

Usage::

    python benchmarks/bench_skrebate08_speed.py           # full run: about 55 min on a
                                                          # quiet 2-core machine (22 of
                                                          # them skrebate's nine single
                                                          # fits at N = 8000, 14 its fits
                                                          # at N = 2000, 16 dmargin's 36
                                                          # cells); idle waits and reruns
                                                          # can double it on a busy one
    python benchmarks/bench_skrebate08_speed.py --quick   # N = 1000, 1 thread, one steady
                                                          # fit (10 min with the machine's
                                                          # two cores otherwise busy)

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

BENCHMARK = "skrebate08_speed"
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

MURELIEF_NEIGHBORS = 10
#: skrebate's default is 10 iterations: ten skrebate MultiSURF fits at N = 8000 (module docstring).
ITER_MAX = 5
#: skrebate's defaults are 40 subsets of 5 (module docstring); 10 subsets cover the 50 features.
VLS_SUBSETS = 12
VLS_SUBSET_SIZE = 5
VLS_SEED = 0

SWRF_FAMILY = ("SWRF", "SWRFstar", "MultiSWRF", "MultiSWRFstar", "MultiSWRFDB", "MultiSWRFDBstar")
ITER = "Iter(MultiSURF)"
VLS = "VLS(MultiSURF)"
LIBRARIES = ("dmargin", "skrebate")
_SK = "n_features_to_select=10, n_jobs=threads"
_VLS = (
    f"num_feature_subset={VLS_SUBSETS}, size_feature_subset={VLS_SUBSET_SIZE}, "
    f"random_state={VLS_SEED}"
)
#: The rows and who implements them: ``{estimator: {library: call}}`` (the calls are records;
#: ``build_estimator`` makes them).  skrebate 0.8.4's names, which dmargin's share.
ESTIMATORS = {
    **{
        name: {"dmargin": f"dmargin.{name}()", "skrebate": f"skrebate.{name}({_SK})"}
        for name in SWRF_FAMILY
    },
    "MuRelief": {
        "dmargin": f"dmargin.MuRelief(n_neighbors={MURELIEF_NEIGHBORS})",
        "skrebate": f"skrebate.MuRelief(n_neighbors={MURELIEF_NEIGHBORS}, {_SK})",
    },
    ITER: {
        "dmargin": f"dmargin.Iter(dmargin.MultiSURF(), max_iter={ITER_MAX})",
        "skrebate": f"skrebate.Iter(skrebate.MultiSURF({_SK}), max_iter={ITER_MAX})",
    },
    VLS: {
        "dmargin": f"dmargin.VLS(dmargin.MultiSURF(), {_VLS})",
        "skrebate": f"skrebate.VLS(skrebate.MultiSURF({_SK}), {_VLS})",
    },
}

INPUT_HANDLING = {
    "common": relief.INPUT_HANDLING["common"],
    "skrebate 0.8.4": (
        "ReliefF's fit: scipy pdist(cityblock) on a min-max normalised copy, squareform to a "
        "dense N x N float64 matrix (with Iter's weights: pdist's w).  SWRF family "
        "(baseswrf.py): SWRF's threshold and spread are that matrix's mean and standard "
        "deviation (zero diagonal included), the Multi variants' each row's over the other "
        "rows, found by a pure-Python loop per row; neighbour weights 2 / (1 + exp(-4 |d - t| "
        "/ s)) - 1 by numpy per row.  MuRelief (murelief.py): a pure-Python loop per row "
        "collects each class's distances and means, np.argsort of |d - mean| picks k per "
        "class.  Iter (iter.py): a deep copy of MultiSURF fitted max_iter times, the weights "
        "from the last scores.  VLS (vls.py): a deep copy of MultiSURF fitted on each subset's "
        "columns.  compute_score per instance and feature through joblib (n_jobs)."
    ),
    "dmargin": (
        "Public estimators (scale='minmax', discrete_threshold=10): float64, skrebate's "
        "semantics; two passes per anchor block over the same tiles (the distance moments or "
        "class means, then the neighbours), a symmetric grid so each pair's distance is "
        "computed once per pass; memory O(N A), no N x N array.  Iter: the wrapped MultiSURF "
        "refitted with feature_weights; VLS: MultiSURF on each subset's columns, one after the "
        "other in-process."
    ),
}


# --------------------------------------------------------------------------- #
# estimators (public APIs only)
# --------------------------------------------------------------------------- #
def build_estimator(library: str, name: str, threads: int):
    """A fresh, unfitted ``name`` of ``library`` (dmargin's threads come from the env)."""
    if library == "dmargin":
        import dmargin as lib

        inner = {}
    elif library == "skrebate":
        import skrebate as lib

        inner = {"n_features_to_select": TOP, "n_jobs": threads}
    else:
        raise ValueError(f"unknown library {library!r}")
    if name == "MuRelief":
        return lib.MuRelief(n_neighbors=MURELIEF_NEIGHBORS, **inner)
    if name == ITER:
        return lib.Iter(lib.MultiSURF(**inner), max_iter=ITER_MAX)
    if name == VLS:
        return lib.VLS(
            lib.MultiSURF(**inner),
            num_feature_subset=VLS_SUBSETS,
            size_feature_subset=VLS_SUBSET_SIZE,
            random_state=VLS_SEED,
        )
    return getattr(lib, name)(**inner)


def pair_features(name: str, n: int, result: dict) -> int | None:
    """A fit's pairwise work, in pair-features (module docstring, 2.)."""
    if name == ITER:
        return None if result.get("n_iter_") is None else n * n * A_SPEED * result["n_iter_"]
    if name == VLS:
        return n * n * VLS_SUBSETS * min(VLS_SUBSET_SIZE, A_SPEED)
    return n * n * A_SPEED


# --------------------------------------------------------------------------- #
# worker: one (estimator, library, N, threads) cell in a fresh subprocess
# --------------------------------------------------------------------------- #
def worker_fit(spec: dict) -> dict:
    X, y, informative = relief.make_data(spec["n"], spec["features"])
    result = harness.fit_cell(
        lambda: build_estimator(spec["library"], spec["estimator"], spec["threads"]),
        X,
        y,
        steady_repeats=spec["steady_repeats"],
        steady_budget_s=spec["steady_budget_s"],
        top=TOP,
        attributes=("n_iter_", "converged_"),
        memory=relief.memory_fields,
    )
    return {**result, "informative_columns": informative}


WORKERS = {"fit": worker_fit, "limit": relief.worker_limit}


# --------------------------------------------------------------------------- #
# parent
# --------------------------------------------------------------------------- #
def cells(ns, threads, steady_repeats):
    return harness.speed_cells(
        ns,
        ESTIMATORS,
        LIBRARIES,
        threads,
        key="estimator",
        features=A_SPEED,
        steady_repeats=steady_repeats,
        steady_budget_s=STEADY_BUDGET_S,
        peer_single_fit_from_n=SKREBATE_SINGLE_FIT_FROM_N,
        peer_one_thread_from_n=SKREBATE_ONE_THREAD_FROM_N,
    )


def run_limit(n: int, threads, repeats: int, args) -> list[dict]:
    specs = [
        {"kind": "limit", "n": n, "features": A_SPEED, "threads": t, "repeats": repeats}
        for t in threads
    ]
    return harness.launch_cells(
        __file__, specs, args, timeout=WORKER_TIMEOUT_S, quiet_cores=QUIET_BUSY_CORES
    )


def find(results, name, library, n, threads):
    return harness.find_cell(results, estimator=name, library=library, n=n, threads=threads)


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
                rows.append(
                    {
                        "estimator": name,
                        "n": n,
                        "threads": t,
                        "dmargin_s": dm,
                        "skrebate_s": sk,
                        "skrebate_over_dmargin": relief.ratio(sk, dm),
                    }
                )
    return rows


def limit_rows(results, limit, n, threads) -> list[dict]:
    """dmargin's steady fits at ``n`` in pair-features per second, against the fused loop."""
    rows = []
    for name in ESTIMATORS:
        for t in threads:
            r = find(results, name, "dmargin", n, t)
            seconds, work = relief.steady_time(r), r and pair_features(name, n, r)
            if seconds is None or work is None:
                continue
            rate, fused = work / seconds, limit_rate(limit, t)
            rows.append(
                {
                    "estimator": name,
                    "n": n,
                    "threads": t,
                    "pair_features_per_fit": work,
                    "pair_features_per_s": rate,
                    "fused_f64_pair_features_per_s": fused,
                    "fraction_of_fused_f64": relief.ratio(rate, fused),
                }
            )
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
                rows.append(
                    {
                        "estimator": name,
                        "n": n,
                        "threads": t,
                        "skrebate_threads": peer["spec"]["threads"],
                        "top10_common_skrebate": len(set(ours["top10"]) & set(peer["top10"])),
                        "max_abs_diff_vs_skrebate": float(
                            np.max(np.abs(np.asarray(ours["feature_importances"]) - w_sk))
                        ),
                        "max_abs_weight_skrebate": float(np.max(np.abs(w_sk))),
                        **({"n_iter_dmargin": ours["n_iter_"]} if "n_iter_" in ours else {}),
                    }
                )
    return rows


def summary(rows, limits, agree, results, n) -> dict:
    """The figures the READMEs quote: per estimator and as ranges, at the largest N, one
    thread (the weights' difference: over every N and thread count)."""
    at_n = [
        r
        for r in rows
        if r["n"] == n and r["threads"] == 1 and r["skrebate_over_dmargin"] is not None
    ]
    ratios = sorted(at_n, key=lambda r: r["skrebate_over_dmargin"])
    one_thread = [r for r in limits if r["threads"] == 1 and r["fraction_of_fused_f64"] is not None]
    fractions = sorted(
        r["fraction_of_fused_f64"] for r in limits if r["fraction_of_fused_f64"] is not None
    )
    diffs = {}
    for e in agree:
        diffs[e["estimator"]] = max(diffs.get(e["estimator"], 0.0), e["max_abs_diff_vs_skrebate"])
    slow = [
        f"{r['spec']['estimator']} N={r['spec']['n']} ({r['first_fit_s']:.0f} s)"
        for r in results
        if r.get("ok") and r["spec"]["library"] == "skrebate" and r["first_fit_s"] > SKREBATE_SLOW_S
    ]
    return {
        "at_n": n,
        "threads": 1,
        "estimators_with_skrebate_at_n": [r["estimator"] for r in at_n],
        "skrebate_over_dmargin": {r["estimator"]: r["skrebate_over_dmargin"] for r in at_n},
        "skrebate_over_dmargin_min": ratios[0]["skrebate_over_dmargin"] if ratios else None,
        "skrebate_over_dmargin_min_estimator": ratios[0]["estimator"] if ratios else None,
        "skrebate_over_dmargin_max": ratios[-1]["skrebate_over_dmargin"] if ratios else None,
        "skrebate_over_dmargin_max_estimator": ratios[-1]["estimator"] if ratios else None,
        "fraction_of_fused_f64": {r["estimator"]: r["fraction_of_fused_f64"] for r in one_thread},
        "fraction_of_fused_f64_min": fractions[0] if fractions else None,
        "fraction_of_fused_f64_max": fractions[-1] if fractions else None,
        "max_abs_diff_vs_skrebate_by_estimator": diffs,
        "max_abs_diff_vs_skrebate": max(diffs.values()) if diffs else None,
        "agreement_tolerance": AGREEMENT_TOLERANCE,
        "agree_within_tolerance": None if not diffs else max(diffs.values()) < AGREEMENT_TOLERANCE,
        "skrebate_slow_s": SKREBATE_SLOW_S,
        "skrebate_slow_cells": slow,
    }


def sci(value):
    return None if value is None else f"{value:.2g}"


def busy_line(results, limit) -> str:
    noisy = [
        f"{r['spec'].get('estimator', 'fused loop')} {r['spec'].get('library', '')} "
        f"N={r['spec']['n']} thr={r['spec']['threads']} ({r['other_cores_busy']})"
        for r in [*results, *limit]
        if r.get("ok")
        and r.get("other_cores_busy") is not None
        and r["other_cores_busy"] >= QUIET_BUSY_CORES
    ]
    if not noisy:
        return f"Other processes kept < {QUIET_BUSY_CORES} cores busy during every measurement."
    return (
        "Measurements disturbed by other processes (average cores they kept busy): "
        + "; ".join(" ".join(s.split()) for s in noisy)
        + ". Those numbers are pessimistic."
    )


def render_markdown(machine, results, limit, ns, threads, rows, limits, agree, summ) -> str:
    versions = machine["versions"]
    n = max(ns)
    parts = [
        f"{machine['cpu_model']}, {machine['logical_cores']} cores, numba {versions['numba']}, "
        f"dmargin {versions['dmargin']}, skrebate {versions['skrebate']}; "
        f"{machine['date'][:10]}.",
        f"#### Fit time of the estimators skrebate 0.8 added, A = {A_SPEED} (seconds: "
        "steady-state best, first fit with JIT in parentheses)",
        f"SWRF family with defaults; MuRelief `n_neighbors={MURELIEF_NEIGHBORS}`; Iter "
        f"`Iter(MultiSURF(), max_iter={ITER_MAX})` (skrebate's default 10 would make its fit at "
        f"N = 8000 about twice as long); VLS `VLS(MultiSURF(), {_VLS})` (skrebate's default "
        "40 subsets: more than three times as long). The same parameters in both libraries.",
    ]
    table = []
    for r in rows:
        dm, sk = (find(results, r["estimator"], lib, r["n"], r["threads"]) for lib in LIBRARIES)
        table.append(
            [
                r["estimator"],
                r["n"],
                r["threads"],
                harness.cell_label(dm),
                harness.cell_label(sk),
                relief.fmt_ratio(r["skrebate_over_dmargin"]),
            ]
        )
    parts.append(
        harness.markdown_table(
            ["estimator", "N", "thr", "dmargin", "skrebate", "skrebate / dmargin"], table
        )
    )
    parts.append(
        f"`*` a single fit (skrebate from N = {SKREBATE_SINGLE_FIT_FROM_N}, where it "
        "also runs at one thread only).  Ratios > 1: dmargin is faster."
    )
    if summ["skrebate_slow_cells"]:
        parts.append(
            f"skrebate fits longer than {SKREBATE_SLOW_S:.0f} s: "
            + "; ".join(summ["skrebate_slow_cells"])
            + "."
        )
    fused = "; ".join(
        f"{t} thread{'s' if t > 1 else ''}: {sci(limit_rate(limit, t))} pf/s "
        f"(float32 {sci(limit_rate(limit, t, 'float32'))})"
        for t in threads
    )
    parts.append(
        f"#### Against the machine's limit, N = {n}, A = {A_SPEED} "
        "(pf/s = a fit's pair-features / seconds)"
    )
    parts.append(
        f"Fused loop, float64: {fused}. A fit's pair-features: N*N*A; Iter's, N*N*A "
        f"per iteration (n_iter_ fits); VLS's, N*N times the {VLS_SUBSETS} x "
        f"{VLS_SUBSET_SIZE} features of its subsets."
    )
    parts.append(
        harness.markdown_table(
            [
                "estimator",
                "thr",
                "pair-features per fit",
                "dmargin pf/s",
                "fraction of the float64 fused loop",
            ],
            [
                [
                    r["estimator"],
                    r["threads"],
                    sci(r["pair_features_per_fit"]),
                    sci(r["pair_features_per_s"]),
                    relief.fmt_ratio(r["fraction_of_fused_f64"]),
                ]
                for r in limits
            ],
        )
    )
    parts.append(
        f"#### Agreement on the same data (top-{TOP} features in common with "
        "skrebate; largest |w - w_skrebate|)"
    )
    parts.append(
        harness.markdown_table(
            [
                "estimator",
                "N",
                "thr",
                "skrebate thr",
                "top-10 common",
                "dmargin - skrebate",
                "max |w skrebate|",
            ],
            [
                [
                    e["estimator"],
                    e["n"],
                    e["threads"],
                    e["skrebate_threads"],
                    e["top10_common_skrebate"],
                    sci(e["max_abs_diff_vs_skrebate"]),
                    sci(e["max_abs_weight_skrebate"]),
                ]
                for e in agree
            ],
        )
    )
    iters = sorted({e["n_iter_dmargin"] for e in agree if "n_iter_dmargin" in e})
    if iters:
        parts.append(
            f"Iter ran {', '.join(map(str, iters))} of its {ITER_MAX} iterations "
            "(dmargin's `n_iter_`; equal weights mean skrebate ran as many)."
        )
    parts.append(busy_line(results, limit))
    return "\n\n".join(parts)


def main(argv=None) -> int:
    parser = harness.options(
        __doc__,
        quick=f"N = {', '.join(map(str, N_QUICK))}, 1 thread, one steady fit",
        idle_wait=60.0,
        attempts=2,
        worker=True,
    )
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, WORKERS)
        return 0

    ns = N_QUICK if args.quick else N_FULL
    threads = (1,) if args.quick else THREADS
    steady_repeats = 1 if args.quick else STEADY_REPEATS
    limit_repeats = 1 if args.quick else LIMIT_REPEATS
    machine = harness.machine_info(
        ["dmargin", "numpy", "scipy", "scikit-learn", "numba", "llvmlite", "skrebate", "joblib"]
    )
    machine["dmargin_git"] = harness.git_revision(harness.REPO)

    results = harness.launch_cells(
        __file__,
        cells(ns, threads, steady_repeats),
        args,
        timeout=WORKER_TIMEOUT_S,
        quiet_cores=QUIET_BUSY_CORES,
    )
    limit = run_limit(max(ns), threads, limit_repeats, args)
    rows = speed_rows(results, ns, threads)
    limits = limit_rows(results, limit, max(ns), threads)
    agree = agreement(results, ns, threads)
    summ = summary(rows, limits, agree, results, max(ns))
    markdown = render_markdown(machine, results, limit, ns, threads, rows, limits, agree, summ)
    report = {
        "benchmark": BENCHMARK,
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "dataset": {
            "generator": "sklearn.datasets.make_classification",
            "arguments": relief.dataset_args("N", A_SPEED),
            "preprocessing": "per-column min-max scaling to [0, 1], float64, C-contiguous",
            "sizes": list(ns),
        },
        "estimators": ESTIMATORS,
        "protocol": {
            "subprocess_per_measurement": True,
            "thread_env_vars": list(harness.THREAD_VARS),
            "fresh_numba_cache_dir_per_subprocess": True,
            "steady_state": f"best of up to {steady_repeats} fits after the first, stopping "
            f"early once the repeats used {STEADY_BUDGET_S:.0f} s",
            "skrebate": f"a single fit, one thread only, from N = {SKREBATE_SINGLE_FIT_FROM_N}; "
            f"all {len(ESTIMATORS)} estimators at every N; a fit longer than "
            f"{SKREBATE_SLOW_S:.0f} s is listed in summary/skrebate_slow_cells",
            "parameters": f"Iter max_iter={ITER_MAX} (skrebate's default 10: about twice the "
            f"time at N = 8000); VLS {_VLS} (skrebate's default 40 subsets: "
            "more than three times the time); MuRelief "
            f"n_neighbors={MURELIEF_NEIGHBORS}; the same in both libraries",
            "limit": f"fused numba loop (benchmarks/_harness.py, parallel=True, fastmath=True) "
            f"at N = {max(ns)}, A = {A_SPEED}; warm-up on 256 rows, then best of "
            f"{limit_repeats}; dmargin's rate is a fit's pair-features (N*N*A; Iter: "
            "times n_iter_; VLS: N*N times the subsets' features) / its steady fit time",
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
    path = harness.write_variant(BENCHMARK, report, variant=args.variant, quick=args.quick)
    print(markdown)
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
