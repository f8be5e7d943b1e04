"""Speed and memory benchmark of dmargin's Relief estimators against their peers.

What is measured (all in one run; results go to ``benchmarks/results/relief_speed.json``):

1. Fit time of ReliefF (k = 10 neighbours) at N = 1000, 2000, 4000, 8000 samples and
   A = 50 features for ``dmargin.ReliefF``, skrebate 0.8.4 ``ReliefF`` and
   fast-select ``ReliefF(backend="cpu")``, plus ``dmargin.IRelief()`` with its
   defaults (its ``n_iter_`` is recorded).  Every (method, N, threads) cell runs in
   a fresh subprocess whose NUMBA/OMP/OPENBLAS/MKL thread variables are set to
   1 or 2 (skrebate and fast-select also get ``n_jobs=threads``) and whose numba
   cache directory is new and empty.  Inside it: one timed first fit (includes the
   JIT compilation), then the best of up to 3 further fits (steady state), each on a
   fresh estimator.  Resident memory before fitting and the peak (``ru_maxrss``)
   after the fits are recorded.  The top-5 features (argsort of
   ``feature_importances_``, descending) at the largest N are compared across methods
   and with the truly informative columns.
2. The machine's practical limit for pairwise work: a plain fused numba loop
   ``acc[i] += sum_j sum_k |x_ik - x_jk|`` over all ordered pairs (N = 8000, A = 50),
   timed after warm-up at 1 and 2 threads, in pair-features per second
   (N*N*A / s).  Next to it, ``dmargin.IRelief(max_iter=1, tol=0)`` and
   ``max_iter=2`` fits on the same data: the whole 1-iteration fit and the
   per-iteration cost (difference of the two) in the same unit and as a fraction of
   the fused loop.
3. Memory at scale: ``dmargin.IRelief(max_iter=2, tol=0)`` on N = 50,000, A = 20 in
   a subprocess using all cores: wall time and peak RSS (target: < 2 GB).
4. Interleaved rounds against fast-select (one fresh process, one thread, the
   spambase-like rows of ``_spambase_like.py`` at N = 2000, 4000, 8000, A = 57):
   ``dmargin.ReliefF(n_neighbors=10, pvalues=False)`` and fast-select's
   ``ReliefF(n_neighbors=10, backend="cpu", n_jobs=1)``, one warm-up fit each, then
   5 rounds fitting both (who goes first alternating); the best of 5 each and
   fast-select's over dmargin's (targets: 3.0x at N = 8000, 2.5x at N = 2000).
5. Kernel rates in a fit (one fresh process, one thread, N = 8000, A = 57): every
   Relief-family estimator's ``dmargin.fit_cost(...).operations`` over its best fit,
   as a share of the machine's float32 and float64 peak (target: 60 % of float32).
6. The machine's peak (``_peak.py``: Manhattan pair-features per second on one core,
   float32 and float64, the best blocking), measured once with ``machine_info``;
   every speed table quotes dmargin's rate as a share of it.
7. A markdown summary (also stored in the JSON under ``"markdown"``).

Data: ``sklearn.datasets.make_classification`` (arguments in ``dataset_args``),
min-max scaled to [0, 1] once, so every library gets the same already-normalised
float64 matrix (their own normalisation is then a no-op up to rounding); the rounds
and the kernel rates use the spambase-like rows (a synthetic stand-in for UCI
spambase, which is not stored here; ``_spambase_like.py`` says what it imitates).

Usage::

    python benchmarks/bench_relief_speed.py            # full run (~10 min on a quiet 2-core machine)
    python benchmarks/bench_relief_speed.py --quick    # fits at N = 1000, 1 thread, one steady
                                                       # fit; limit at N = 2000, scale at N = 5000;
                                                       # rounds and kernel rates at N = 2000

Only the public API of dmargin is used (its estimators and ``dmargin.fit_cost``).
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
import _spambase_like as spambase  # noqa: E402

N_FULL = (1000, 2000, 4000, 8000)
N_QUICK = (1000,)
N_LIMIT_QUICK = 2000
N_SCALE_QUICK = 5000
THREADS = (1, 2)
SPEED_THREADS_QUICK = (1,)
A_SPEED = 50
N_LIMIT, A_LIMIT = 8000, 50
N_SCALE, A_SCALE = 50_000, 20
N_NEIGHBORS = 10

STEADY_REPEATS = 3
STEADY_BUDGET_S = 120.0  # stop the steady repeats early once they have used this much
SKREBATE_SINGLE_FIT_FROM_N = 4000  # skrebate: only the first fit from this N on
WORKER_TIMEOUT_S = 1800.0
MEMORY_LIMIT_MIB = 2e9 / 2**20  # "2 GB" read strictly: 2*10^9 bytes = 1907 MiB
QUIET_BUSY_CORES = 0.3  # "quiet machine": everything else together uses less than this

# Project targets
TARGET_SKREBATE_SPEEDUP = 30.0
TARGET_ESTEP_FRACTION = 0.30
#: dmargin ReliefF's steady fit on 1 thread over 2 threads, at the largest N.
TARGET_THREADS_SPEEDUP = 1.9

# Interleaved rounds against fast-select and the kernels' rates in a fit: one thread, one
# fresh process each, spambase-like data (57 features; _spambase_like.py).
N_ROUNDS, N_ROUNDS_QUICK = (2000, 4000, 8000), (2000,)
ROUNDS, ROUNDS_QUICK = 5, 2
N_KERNELS, N_KERNELS_QUICK = 8000, 2000
#: IMMIGRATE's step costs N^2 A^2: its row is measured at this N (one step about 1.5 s).
N_KERNELS_IMMIGRATE = 2000
KERNEL_REPEATS, KERNEL_REPEATS_QUICK = 3, 1
#: fast-select's time over dmargin's in the interleaved rounds, by N (ReliefF and MultiSURF).
TARGET_ROUNDS_RATIO = {8000: 3.0, 2000: 2.5}
#: Each Relief-family kernel's rate in a fit against the float32 peak of one core.
TARGET_PEAK_FRACTION = 0.60

SPEED_METHODS = ("dmargin.ReliefF", "skrebate.ReliefF", "fast_select.ReliefF", "dmargin.IRelief")

INPUT_HANDLING = {
    "common": (
        "All methods receive the same float64 C-contiguous X, min-max scaled to [0, 1] "
        "per column by this script, and integer labels y in {0, 1}."
    ),
    "skrebate.ReliefF 0.8.4": (
        "Uses X as given (no cast). Columns with <= categorical_threshold=10 distinct values "
        "count as categorical; here all 50 are continuous. Neighbour distances: scipy "
        "pdist(cityblock) on a min-max normalised copy (pre_normalize on X[:, cidx]; the input "
        "is not modified), expanded with squareform to a dense N x N float64 matrix "
        "(512 MB at N=8000). Neighbours: for each instance a pure-Python loop over all N "
        "distances, np.argsort (unstable quicksort, so ties at the k-th neighbour are broken "
        "arbitrarily), first k hits and k misses. Score per feature: (mean over misses - mean "
        "over hits) of |dx|/(max-min), divided by N, i.e. standard ReliefF with equal k for "
        "hits and misses. n_jobs>1 only parallelises the per-instance scoring through joblib "
        "(loky worker processes, whose memory is not in this process's ru_maxrss); the "
        "O(N^2) neighbour search stays serial in the parent."
    ),
    "fast_select.ReliefF 0.3.0": (
        "validate_data (float64 kept), discrete mask (<= discrete_limit=10 distinct values; "
        "none here), continuous columns min-max normalised in float64 then copied to float32. "
        "Distances and scores are computed on the fly in float32 inside one numba prange "
        "kernel (no N x N matrix). k nearest hits/misses kept in a sorted insertion buffer "
        "with strict '<', so among equal distances the lower sample index wins. Binary miss "
        "weight p_c/(1-p_i) = 1, so the score formula equals skrebate's. n_jobs sets the "
        "numba thread count (must be <= NUMBA_NUM_THREADS)."
    ),
    "dmargin": (
        "Per the public docstrings: ReliefF and IRelief default to scale='minmax' (each feature "
        "scaled to [0, 1] over the training data, Weka's diff = |dx|/(max-min)) and work in float64. "
        "ReliefF: k nearest hits and, per other class, k nearest misses under the Manhattan "
        "distance, misses weighted P(C)/(1-P(c)), sums divided by neighbours found and by N; ties "
        "at equal distance go to the lower row index. IRelief: soft neighbours exp(-d/sigma) under "
        "the current weighted Manhattan distance, memory O(N A) (no N x N matrix)."
    ),
}


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def dataset_args(n_samples: int, n_features: int) -> dict:
    """Exact ``make_classification`` arguments used for every data set here."""
    return {
        "n_samples": n_samples,
        "n_features": n_features,
        "n_informative": 5,
        "n_redundant": 0,
        "n_repeated": 0,
        "n_classes": 2,
        "n_clusters_per_class": 2,
        "flip_y": 0.01,
        "class_sep": 1.0,
        "shuffle": True,
        "random_state": 0,
    }


def make_data(n_samples: int, n_features: int):
    """Return ``(X, y, informative_columns)`` with X min-max scaled to [0, 1]."""
    from sklearn.datasets import make_classification

    bunch = make_classification(**dataset_args(n_samples, n_features), return_X_y=False)
    informative = [i for i, kind in enumerate(bunch.feature_info) if kind == "informative"]
    return minmax_scale(bunch.X), bunch.y, informative


def minmax_scale(X: np.ndarray) -> np.ndarray:
    low, high = X.min(axis=0), X.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return np.ascontiguousarray((X - low) / span, dtype=np.float64)


def array_digest(X: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest()


# --------------------------------------------------------------------------- #
# estimators (public APIs only)
# --------------------------------------------------------------------------- #
def build_estimator(method: str, threads: int, params: dict | None = None):
    """A fresh, unfitted estimator for ``method``; ``params`` override defaults."""
    params = dict(params or {})
    if method == "dmargin.ReliefF":
        import dmargin

        return dmargin.ReliefF(**{"n_neighbors": N_NEIGHBORS, **params})
    if method == "dmargin.IRelief":
        import dmargin

        return dmargin.IRelief(**params)
    if method == "skrebate.ReliefF":
        import skrebate

        defaults = {"n_neighbors": N_NEIGHBORS, "n_features_to_select": 5, "n_jobs": threads}
        return skrebate.ReliefF(**{**defaults, **params})
    if method == "fast_select.ReliefF":
        import fast_select

        defaults = {
            "n_neighbors": N_NEIGHBORS,
            "n_features_to_select": 5,
            "backend": "cpu",
            "n_jobs": threads,
        }
        return fast_select.ReliefF(**{**defaults, **params})
    raise ValueError(f"unknown method {method!r}")


def irelief(**params):
    """A fresh ``dmargin.IRelief`` (threads come from NUMBA_NUM_THREADS)."""
    return build_estimator("dmargin.IRelief", threads=0, params=params)


def top_features(estimator, k: int = 5) -> list[int]:
    scores = np.asarray(estimator.feature_importances_, dtype=np.float64)
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


# --------------------------------------------------------------------------- #
# workers: each runs in its own subprocess and emits one JSON result
# --------------------------------------------------------------------------- #
def memory_fields(rss_before: float, peak_before: float) -> dict:
    peak_after = harness.peak_rss_mib()
    return {
        "rss_before_fit_mib": round(rss_before, 1),
        "peak_rss_before_fit_mib": round(peak_before, 1),
        "peak_rss_mib": round(peak_after, 1),
        "peak_increment_mib": round(peak_after - rss_before, 1),
        "children_rss_mib": round(children_rss_mib(), 1),
    }


def children_rss_mib() -> float:
    """RSS of live child processes (joblib/loky workers), which ru_maxrss misses."""
    import psutil

    return sum(c.memory_info().rss for c in psutil.Process().children(recursive=True)) / 2**20


def worker_fit(spec: dict) -> dict:
    """Time a first fit and the best of a few steady-state fits of one method."""
    method, threads = spec["method"], spec["threads"]
    X, y, informative = make_data(spec["n"], spec["features"])
    digest = array_digest(X)
    build_estimator(method, threads, spec.get("params"))  # import the library now

    rss_before, peak_before = harness.rss_mib(), harness.peak_rss_mib()
    monitor = harness.CpuMonitor().start()
    first_s, est = harness.timed(build_estimator(method, threads, spec.get("params")).fit, X, y)
    steady, n_iters = [], [getattr(est, "n_iter_", None)]
    while len(steady) < spec["steady_repeats"] and sum(steady) < spec["steady_budget_s"]:
        seconds, est = harness.timed(build_estimator(method, threads, spec.get("params")).fit, X, y)
        steady.append(seconds)
        n_iters.append(getattr(est, "n_iter_", None))
    cpu = monitor.stop()

    result = {
        "first_fit_s": round(first_s, 4),
        "steady_fits_s": [round(s, 4) for s in steady],
        "steady_best_s": round(min(steady), 4) if steady else None,
        "n_iter": n_iters,
        "top5": top_features(est),
        "informative_columns": informative,
        "input_unchanged": array_digest(X) == digest,
        "cpu_during_fits": cpu,
    }
    if spec.get("keep_importances"):
        result["feature_importances"] = [float(v) for v in est.feature_importances_]
    result.update(memory_fields(rss_before, peak_before))
    return result


def worker_limit(spec: dict) -> dict:
    """Fused abs-difference loop rate, float64 (reference) and float32."""
    import numba

    X, _, _ = make_data(spec["n"], spec["features"])
    n, a = X.shape
    out = {"numba_threads": numba.get_num_threads()}
    for name, dtype in (("float64", np.float64), ("float32", np.float32)):
        Xd = np.ascontiguousarray(X, dtype=dtype)
        harness.fused_abs_diff(Xd[:256], np.zeros(256, dtype=dtype))  # JIT warm-up
        monitor = harness.CpuMonitor().start()
        times = []
        for _ in range(spec["repeats"]):
            seconds, _ = harness.timed(harness.fused_abs_diff, Xd, np.zeros(n, dtype=dtype))
            times.append(seconds)
        best = min(times)
        out[name] = {
            "times_s": [round(t, 4) for t in times],
            "best_s": round(best, 4),
            "pair_features_per_s": n * n * a / best,
            "cpu_during_runs": monitor.stop(),
        }
    out["numba_threading_layer"] = numba.threading_layer()
    return out


def worker_estep(spec: dict) -> dict:
    """Whole ``IRelief(max_iter=1)`` fit, ``max_iter=2`` fit and their difference."""
    X, y, _ = make_data(spec["n"], spec["features"])
    n, a = X.shape
    first_s, _ = harness.timed(irelief(max_iter=1, tol=0).fit, X, y)  # includes the JIT
    out = {"first_fit_max_iter_1_s": round(first_s, 4)}
    monitor = harness.CpuMonitor().start()
    for iters in (1, 2):
        times, n_iter = [], None
        for _ in range(spec["repeats"]):
            seconds, est = harness.timed(irelief(max_iter=iters, tol=0).fit, X, y)
            times.append(seconds)
            n_iter = getattr(est, "n_iter_", None)
        out[f"max_iter_{iters}"] = {
            "times_s": [round(t, 4) for t in times],
            "best_s": round(min(times), 4),
            "n_iter_": n_iter,
        }
    out["cpu_during_fits"] = monitor.stop()
    one, two = out["max_iter_1"]["best_s"], out["max_iter_2"]["best_s"]
    per_iter = two - one
    out["per_iteration_s"] = round(per_iter, 4)
    out["whole_fit_pair_features_per_s"] = n * n * a / one
    out["per_iteration_pair_features_per_s"] = n * n * a / per_iter if per_iter > 0 else None
    return out


def worker_scale(spec: dict) -> dict:
    """One ``IRelief(max_iter=2, tol=0)`` fit at large N: wall time and peak RSS."""
    X, y, informative = make_data(spec["n"], spec["features"])
    irelief()  # import dmargin now
    rss_before, peak_before = harness.rss_mib(), harness.peak_rss_mib()
    monitor = harness.CpuMonitor().start()
    seconds, est = harness.timed(irelief(max_iter=2, tol=0).fit, X, y)
    out = {
        "fit_s": round(seconds, 3),
        "n_iter_": getattr(est, "n_iter_", None),
        "top5": top_features(est),
        "informative_columns": informative,
    }
    out["cpu_during_fit"] = monitor.stop()
    out.update(memory_fields(rss_before, peak_before))
    out["under_limit"] = out["peak_rss_mib"] < MEMORY_LIMIT_MIB
    return out


def round_builds(pair: str) -> dict:
    """``{"dmargin": build, "fast-select": build}``: the two estimators the interleaved
    rounds of ``pair`` ("ReliefF" or "MultiSURF") compare, each at one thread.

    dmargin's ReliefF is given ``pvalues=False`` (its default) by name: the peers compute
    weights only."""
    import fast_select

    import dmargin

    peer = {"n_features_to_select": 10, "backend": "cpu", "n_jobs": 1}
    if pair == "ReliefF":
        return {
            "dmargin": lambda: dmargin.ReliefF(n_neighbors=N_NEIGHBORS, pvalues=False),
            "fast-select": lambda: fast_select.ReliefF(n_neighbors=N_NEIGHBORS, **peer),
        }
    if pair == "MultiSURF":
        return {
            "dmargin": lambda: dmargin.MultiSURF(),
            "fast-select": lambda: fast_select.MultiSURF(**peer),
        }
    raise ValueError(f"unknown pair {pair!r}")


def worker_rounds(spec: dict) -> dict:
    """dmargin against fast-select in interleaved rounds (``harness.interleaved_rounds``),
    one process, on the spambase-like rows at each N of ``spec["ns"]``."""
    import numba

    import dmargin

    rows = []
    for n in spec["ns"]:
        X, y = spambase.make_spambase_like(n)
        builds = round_builds(spec["pair"])
        monitor = harness.CpuMonitor().start()
        timing = harness.interleaved_rounds(builds, X, y, spec["rounds"])
        cpu = monitor.stop()
        dm, fs = timing["dmargin"], timing["fast-select"]
        w_dm, w_fs = (np.asarray(t.pop("feature_importances")) for t in (dm, fs))
        ops = dmargin.fit_cost(builds["dmargin"](), n, X.shape[1]).operations
        rows.append(
            {
                "n": n,
                "features": X.shape[1],
                "data": spambase.describe(X, y),
                "dmargin": dm,
                "fast-select": fs,
                "order": timing["order"],
                "fast_select_over_dmargin": ratio(fs["best_s"], dm["best_s"]),
                "dmargin_operations": ops,
                "dmargin_pair_features_per_s": ratio(ops, dm["best_s"]),
                "top10_common": len(set(dm["top10"]) & set(fs["top10"])),
                "max_abs_diff_weights": float(np.max(np.abs(w_dm - w_fs))),
                "max_abs_weight": float(np.max(np.abs(w_dm))),
                "cpu_during_rounds": cpu,
            }
        )
    return {
        "pair": spec["pair"],
        "rows": rows,
        "numba_threads": numba.get_num_threads(),
        "other_cores_busy": max(r["cpu_during_rounds"]["other_cores_busy"] or 0 for r in rows),
    }


#: The kernels' rates in a fit: ``(row, estimator, parameters, target)``; the target is
#: "class" (the spambase-like labels), "continuous" (:func:`continuous_target`) or
#: "balanced" (uniform rows with :func:`balanced_labels`: STIR's p-values are returned, and
#: its pass run, only where its law is calibrated, classes of at least 45 % and features of
#: skewness under 1; spambase's are not).
KERNEL_ROWS = (
    ("ReliefF", "ReliefF", {"n_neighbors": N_NEIGHBORS}, "class"),
    ("RReliefF", "RReliefF", {}, "continuous"),
    ("MuRelief", "MuRelief", {}, "class"),
    ("SURF", "SURF", {}, "class"),
    ("SURF*", "SURFstar", {}, "class"),
    ("MultiSURF", "MultiSURF", {}, "class"),
    ("MultiSURF*", "MultiSURFstar", {}, "class"),
    ("SWRF", "SWRF", {}, "class"),
    ("SWRF*", "SWRFstar", {}, "class"),
    ("MultiSWRF", "MultiSWRF", {}, "class"),
    ("MultiSWRF*", "MultiSWRFstar", {}, "class"),
    ("MultiSURF, uniform rows", "MultiSURF", {}, "balanced"),
    ("MultiSURF(pvalues=True), uniform rows", "MultiSURF", {"pvalues": True}, "balanced"),
    ("IRelief, one iteration", "IRelief", {"max_iter": 1, "tol": 0}, "class"),
    ("Immigrate, one step", "Immigrate", {"max_iter": 1}, "class"),
)
#: The row whose time less MultiSURF's is STIR's pass (its third, over the same pairs).
STIR_ROW = "STIR's pass (MultiSURF(pvalues=True) - MultiSURF(), uniform rows)"
#: Rows whose operations are not pair-features: no share of the Manhattan peak.
NOT_PAIR_FEATURES = ("Immigrate, one step",)
#: Rows measured for STIR's pass only (the whole fit with p-values is not one kernel): not
#: judged against the target.
STIR_HELPER_ROWS = ("MultiSURF, uniform rows", "MultiSURF(pvalues=True), uniform rows")


def balanced_labels(n: int, seed: int = 0) -> np.ndarray:
    """Labels with exactly ``n // 2`` ones, in random order (STIR's pass runs on them)."""
    y = np.zeros(n, dtype=np.int64)
    y[: n // 2] = 1
    return y[np.random.default_rng(seed).permutation(n)]


def kernel_data(n: int, kind: str):
    """``(X, {target: y})`` of the kernel rates: the spambase-like rows with their labels and
    :func:`continuous_target`, or ("uniform") uniform [0, 1) rows of the same width with
    :func:`balanced_labels`, where STIR's law is calibrated and its pass runs."""
    if kind == "uniform":
        X = np.random.default_rng(1).random((n, len(spambase.NAMES)))
        return X, {"balanced": balanced_labels(n)}
    X, y = spambase.make_spambase_like(n)
    return X, {"class": y, "continuous": continuous_target(X)}


def continuous_target(X: np.ndarray, seed: int = 0) -> np.ndarray:
    """RReliefF's target on the spambase-like rows: the first ten columns' sum plus noise."""
    rng = np.random.default_rng(seed)
    return X[:, :10].sum(axis=1) + rng.normal(0.0, 0.05, X.shape[0])


def worker_kernels(spec: dict) -> dict:
    """Each Relief-family estimator's rate in a fit: ``fit_cost(...).operations`` over the
    best of ``spec["repeats"]`` fits after a warm-up, one thread, spambase-like rows."""
    import numba

    import dmargin

    data = {}
    rows = []
    for label, name, params, target in KERNEL_ROWS:
        n = N_KERNELS_IMMIGRATE if name == "Immigrate" else spec["n"]
        kind = "uniform" if target == "balanced" else "spambase-like"
        if (n, kind) not in data:
            data[n, kind] = kernel_data(n, kind)
        X, targets_of = data[n, kind]
        build = functools.partial(getattr(dmargin, name), **params)
        target_y = targets_of[target]
        first_s, _ = harness.timed(build().fit, X, target_y)
        monitor = harness.CpuMonitor().start()
        times = [harness.timed(build().fit, X, target_y)[0] for _ in range(spec["repeats"])]
        cpu = monitor.stop()
        cost = dmargin.fit_cost(build(), n, X.shape[1])
        best = min(times)
        rows.append(
            {
                "estimator": label,
                "n": n,
                "features": X.shape[1],
                "data": kind,
                "first_fit_s": round(first_s, 4),
                "times_s": [round(t, 5) for t in times],
                "best_s": best,
                "operations": cost.operations,
                "formula": cost.formula,
                "pair_features_per_s": cost.operations / best,
                "cpu_during_fits": cpu,
            }
        )
    stir = next(r for r in rows if r["estimator"] == "MultiSURF(pvalues=True), uniform rows")
    plain = next(r for r in rows if r["estimator"] == "MultiSURF, uniform rows")
    extra = stir["best_s"] - plain["best_s"]
    ops = plain["operations"] / 2  # one of the family's two passes over the unordered pairs
    rows.append(
        {
            "estimator": STIR_ROW,
            "n": plain["n"],
            "features": plain["features"],
            "best_s": extra,
            "operations": ops,
            "data": "uniform",
            "formula": "N^2 A / 2, one pass over the unordered pairs",
            "pair_features_per_s": ops / extra if extra > 0 else None,
        }
    )
    return {
        "rows": rows,
        "numba_threads": numba.get_num_threads(),
        "other_cores_busy": max(
            r["cpu_during_fits"]["other_cores_busy"] or 0 for r in rows if "cpu_during_fits" in r
        ),
    }


WORKERS = {
    "fit": worker_fit,
    "limit": worker_limit,
    "estep": worker_estep,
    "scale": worker_scale,
    "rounds": worker_rounds,
    "kernels": worker_kernels,
}


# --------------------------------------------------------------------------- #
# parent: schedule the subprocesses
# --------------------------------------------------------------------------- #
def fit_spec(method: str, n: int, threads: int, largest_n: int, steady_repeats: int) -> dict:
    single = method == "skrebate.ReliefF" and n >= SKREBATE_SINGLE_FIT_FROM_N
    return {
        "kind": "fit",
        "method": method,
        "n": n,
        "features": A_SPEED,
        "threads": threads,
        "steady_repeats": 0 if single else steady_repeats,
        "steady_budget_s": STEADY_BUDGET_S,
        "keep_importances": n == largest_n,
    }


def launch(spec: dict, args) -> dict:
    """One measurement in a fresh subprocess, on a machine as quiet as ``args`` asks."""
    return harness.launch(
        __file__,
        spec,
        threads=spec["threads"],
        timeout=WORKER_TIMEOUT_S,
        quiet_cores=QUIET_BUSY_CORES,
        idle_wait=args.idle_wait,
        attempts=args.attempts,
    )


def run_speed(ns, threads, steady_repeats: int, args) -> list[dict]:
    return [
        launch(fit_spec(m, n, t, max(ns), steady_repeats), args)
        for n in ns
        for m in SPEED_METHODS
        for t in threads
    ]


def speed_threads(speed: list[dict]) -> list[int]:
    """The thread counts the speed fits ran at."""
    return sorted({r["spec"]["threads"] for r in speed})


def run_limit(n: int, repeats: int, args) -> list[dict]:
    results = []
    for threads in THREADS:
        base = {"n": n, "features": A_LIMIT, "threads": threads, "repeats": repeats}
        results.append(
            {
                "fused": launch({"kind": "limit", **base}, args),
                "estep": launch({"kind": "estep", **base}, args),
            }
        )
    return results


def run_scale(n: int, args) -> dict:
    return launch({"kind": "scale", "n": n, "features": A_SCALE, "threads": max(THREADS)}, args)


def run_rounds(script, pair: str, ns, rounds: int, args) -> dict:
    """``pair``'s interleaved rounds in one fresh one-thread subprocess of ``script``."""
    spec = {"kind": "rounds", "pair": pair, "ns": list(ns), "rounds": rounds, "threads": 1}
    return harness.launch(
        script,
        spec,
        threads=1,
        timeout=WORKER_TIMEOUT_S,
        quiet_cores=QUIET_BUSY_CORES,
        idle_wait=args.idle_wait,
        attempts=args.attempts,
    )


def run_kernels(n: int, repeats: int, args) -> dict:
    return launch({"kind": "kernels", "n": n, "repeats": repeats, "threads": 1}, args)


def with_peak_fractions(rows: list[dict], peak: dict, rate_key: str) -> list[dict]:
    """``rows`` with ``fraction_of_peak_float32`` / ``_float64``: each row's ``rate_key``
    (pair-features/s on one thread) over the one-core peak (none for the rows of
    :data:`NOT_PAIR_FEATURES`)."""
    for row in rows:
        if row.get("estimator") in NOT_PAIR_FEATURES:
            continue
        for dtype in ("float32", "float64"):
            row[f"fraction_of_peak_{dtype}"] = harness.peak_fraction(row.get(rate_key), peak, dtype)
    return rows


def rounds_targets(rounds: dict, pair: str) -> dict:
    """``<pair>_rounds_ratio_<N>`` and ``<pair>_rounds_met_<N>`` for the target sizes, and
    the ratio at every N measured (``<pair>_rounds_ratio_<N>``)."""
    key = pair.lower()
    out = {}
    rows = rounds.get("rows", []) if rounds.get("ok") else []
    for row in rows:
        out[f"{key}_rounds_ratio_{row['n']}"] = row["fast_select_over_dmargin"]
    for n, target in TARGET_ROUNDS_RATIO.items():
        value = out.get(f"{key}_rounds_ratio_{n}")
        out[f"{key}_rounds_target_{n}"] = target
        out[f"{key}_rounds_met_{n}"] = None if value is None else value >= target
    return out


def kernels_targets(kernels: dict) -> dict:
    """The lowest and highest kernel share of the float32 peak, and whether each row is
    over :data:`TARGET_PEAK_FRACTION`."""
    rows = kernels.get("rows", []) if kernels.get("ok") else []
    shares = {
        r["estimator"]: r.get("fraction_of_peak_float32")
        for r in rows
        if r.get("fraction_of_peak_float32") is not None and judged(r)
    }
    return {
        "kernel_fraction_f32_min": min(shares.values(), default=None),
        "kernel_fraction_f32_max": max(shares.values(), default=None),
        "kernel_fraction_f32_target": TARGET_PEAK_FRACTION,
        "kernels_below_target": sorted(k for k, v in shares.items() if v < TARGET_PEAK_FRACTION),
        "kernels_all_met": None if not shares else min(shares.values()) >= TARGET_PEAK_FRACTION,
    }


def judged(row: dict) -> bool:
    """Whether a kernel row counts for :data:`TARGET_PEAK_FRACTION`."""
    return row["estimator"] not in NOT_PAIR_FEATURES + STIR_HELPER_ROWS


def pct(value) -> str | None:
    return None if value is None else f"{value:.0%}"


def peak_line(peak: dict) -> str:
    """The machine's peak as the markdown states it."""
    if not peak or not peak.get("ok", True) or "float32" not in peak:
        return f"The machine's peak was not measured ({(peak or {}).get('error', 'no entry')})."
    f32, f64 = peak["float32"], peak["float64"]
    return (
        f"Machine's peak, one core (`benchmarks/_peak.py`: Manhattan distances between two "
        f"blocks of {peak['rows']:,} rows, the best of {len(f32['by_width'][str(f32['features'])])} "
        f"blockings and widths {', '.join(f32['by_width'])}): float32 "
        f"{f32['pair_features_per_s']:.3g} pair-features/s ({f32['blocking']}, A = "
        f"{f32['features']}), float64 {f64['pair_features_per_s']:.3g} ({f64['blocking']}, "
        f"A = {f64['features']})." + _two_cores_text(f32, f64)
    )


def _two_cores_text(f32, f64) -> str:
    if "two_cores" not in f32 or "two_cores" not in f64:
        return ""
    a, b = f32["two_cores"], f64["two_cores"]
    return (
        f" On two cores at once: float32 {a['scaling']:.2f}x one core ({a['blocking']}, "
        f"A = {a['features']}), float64 {b['scaling']:.2f}x ({b['blocking']}, A = {b['features']})."
    )


def rounds_markdown(rounds: dict, pair: str, label: str) -> str:
    """The interleaved rounds' table of ``pair``."""
    title = (
        f"#### {pair} against fast-select 0.3.0, interleaved rounds (one process, one thread, "
        f"spambase-like data, A = 57)"
    )
    if not rounds.get("ok"):
        return f"{title}\n\nFAILED: {rounds.get('error', '')[-300:]}"
    rows = []
    for r in rounds["rows"]:
        target = TARGET_ROUNDS_RATIO.get(r["n"])
        met = (
            None if target is None else ("yes" if r["fast_select_over_dmargin"] >= target else "NO")
        )
        rows.append(
            [
                f"{r['n']:,}",
                f"{r['dmargin']['best_s']:.3g}",
                f"{r['fast-select']['best_s']:.3g}",
                f"{r['fast_select_over_dmargin']:.2f}x",
                None if target is None else f">= {target:g}x",
                met,
                sci(r["dmargin_pair_features_per_s"]),
                pct(r.get("fraction_of_peak_float32")),
                pct(r.get("fraction_of_peak_float64")),
                r["top10_common"],
            ]
        )
    n_rounds = len(rounds["rows"][0]["dmargin"]["times_s"]) if rounds["rows"] else 0
    headers = [
        "N",
        f"dmargin {label} s",
        f"fast-select {pair} s",
        "fast-select / dmargin",
        "target",
        "met",
        "dmargin pf/s",
        "of f32 peak",
        "of f64 peak",
        "top-10 common",
    ]
    note = (
        f"Best of {n_rounds} rounds after a warm-up fit of each; each round fits both on fresh "
        "estimators, who goes first alternating.  pf/s: `dmargin.fit_cost(...).operations` "
        "over dmargin's best fit; the peak is one core's."
    )
    return "\n\n".join([title, harness.markdown_table(headers, rows), note])


def kernels_markdown(kernels: dict) -> str:
    """The table "Kernel rates in a fit"."""
    if not kernels.get("ok"):
        return f"#### Kernel rates in a fit\n\nFAILED: {kernels.get('error', '')[-300:]}"
    n = kernels["spec"]["n"]
    title = f"#### Kernel rates in a fit (one thread, N = {n:,}, A = 57)"
    rows = [
        [
            r["estimator"],
            f"{r['n']:,}",
            f"{r['best_s']:.3g}",
            sci(r["operations"]),
            sci(r["pair_features_per_s"]),
            pct(r.get("fraction_of_peak_float32")),
            pct(r.get("fraction_of_peak_float64")),
            None
            if r.get("fraction_of_peak_float32") is None or not judged(r)
            else ("yes" if r["fraction_of_peak_float32"] >= TARGET_PEAK_FRACTION else "NO"),
        ]
        for r in kernels["rows"]
    ]
    headers = [
        "estimator",
        "N",
        "best fit s",
        "operations",
        "rate /s",
        "of f32 peak",
        "of f64 peak",
        f">= {TARGET_PEAK_FRACTION:.0%} of f32 peak",
    ]
    caption = (
        "Spambase-like rows (`_spambase_like.py`), one fresh one-thread process, a warm-up fit "
        f"then the best of {kernels['spec']['repeats']}.  operations: `dmargin.fit_cost`'s "
        "pair-features (one `|x_ak - x_jk|` added to a distance): N^2 A for ReliefF, RReliefF "
        "(continuous target: the first ten columns' sum plus noise) and I-RELIEF's iteration "
        "(every ordered pair once); the SURF and SWRF families' two passes over the unordered "
        "pairs together N^2 A, MuRelief's two passes N^2 A; STIR's pass N^2 A / 2, its time "
        "MultiSURF(pvalues=True)'s less MultiSURF()'s on uniform [0, 1) rows of the same shape "
        "with 1:1 labels (STIR's pass runs only where its law is calibrated: classes of 45 % or "
        "more, features of skewness under 1; not on these rows); IMMIGRATE: N^2 A^2 "
        "outer-product terms of its step (multiply-adds, not pair-features: no share of the "
        f"Manhattan peak), at N = {N_KERNELS_IMMIGRATE:,}.  The two MultiSURF rows on uniform "
        "rows only time STIR's pass and are not judged.  The whole fit is "
        "timed, so a rate is the kernel's in a fit, with the fit's other work counted against it."
    )
    return "\n\n".join([title, harness.markdown_table(headers, rows), caption])


# --------------------------------------------------------------------------- #
# summary
# --------------------------------------------------------------------------- #
def fmt_s(seconds) -> str | None:
    if seconds is None:
        return None
    return f"{seconds:.3g}"


def fmt_ratio(value) -> str | None:
    return None if value is None else f"{value:.3g}"


def steady_time(result: dict | None):
    """Steady-state time; for a run with no repeats (skrebate, large N) the single fit."""
    if not result or not result.get("ok"):
        return None
    return (
        result["steady_best_s"]
        if result.get("steady_best_s") is not None
        else result["first_fit_s"]
    )


def lookup(results: list[dict], method: str, n: int, threads: int) -> dict | None:
    for r in results:
        s = r["spec"]
        if s.get("method") == method and s.get("n") == n and s.get("threads") == threads:
            return r
    return None


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def speed_rows(speed: list[dict], ns, peak: dict | None = None) -> tuple[list[str], list[list]]:
    headers = [
        "N",
        "thr",
        "dmargin ReliefF s (first)",
        "skrebate s",
        "fast-select s (first)",
        "dmargin IRelief s (first) [n_iter]",
        "skrebate / dmargin",
        "fast-select / dmargin",
        "dmargin ReliefF of f32 peak",
    ]
    rows = []
    for n in ns:
        for t in speed_threads(speed):
            dm, sk, fs, ir = (lookup(speed, m, n, t) for m in SPEED_METHODS)
            dm_s, sk_s, fs_s = (steady_time(r) for r in (dm, sk, fs))
            rows.append(
                [
                    n,
                    t,
                    with_first(dm),
                    sk_label(sk),
                    with_first(fs),
                    with_first(ir) and f"{with_first(ir)} [{n_iter_label(ir)}]",
                    fmt_ratio(ratio(sk_s, dm_s)),
                    fmt_ratio(ratio(fs_s, dm_s)),
                    pct(peak_share("dmargin.ReliefF", n, A_SPEED, dm_s, t, peak)),
                ]
            )
    return headers, rows


def peak_share(method: str, n: int, features: int, seconds, threads: int, peak: dict | None):
    """A dmargin fit's rate (``fit_cost(...).operations / seconds``) over ``threads`` times the
    one-core float32 peak; ``None`` when either is unknown."""
    if seconds is None or not seconds > 0:
        return None
    import dmargin

    cost = dmargin.fit_cost(build_estimator(method, threads), n, features)
    if cost is None:
        return None
    return harness.peak_fraction(cost.operations / seconds, peak, "float32", threads)


def with_first(result) -> str | None:
    if not result or not result.get("ok"):
        return None
    return f"{fmt_s(steady_time(result))} ({fmt_s(result['first_fit_s'])})"


def sk_label(result) -> str | None:
    if not result or not result.get("ok"):
        return None
    suffix = "" if result.get("steady_best_s") is not None else "*"
    return f"{fmt_s(steady_time(result))}{suffix}"


def n_iter_label(result) -> str:
    iters = {i for i in result.get("n_iter", []) if i is not None}
    return ",".join(str(i) for i in sorted(iters)) or "?"


def limit_rows(limit: list[dict]) -> tuple[list[str], list[list]]:
    headers = [
        "thr",
        "fused loop f64 (pf/s)",
        "fused loop f32 (pf/s)",
        "IRelief max_iter=1 s",
        "max_iter=2 s",
        "per-iter s",
        "E-step pf/s (whole / per-iter)",
        "fraction of f64 limit (whole / per-iter)",
    ]
    rows = []
    for entry in limit:
        fused, estep = entry["fused"], entry["estep"]
        f64 = fused["float64"]["pair_features_per_s"] if fused.get("ok") else None
        f32 = fused["float32"]["pair_features_per_s"] if fused.get("ok") else None
        if estep.get("ok"):
            whole, per = (
                estep["whole_fit_pair_features_per_s"],
                estep["per_iteration_pair_features_per_s"],
            )
            cells = [
                fmt_s(estep["max_iter_1"]["best_s"]),
                fmt_s(estep["max_iter_2"]["best_s"]),
                fmt_s(estep["per_iteration_s"]),
                f"{sci(whole)} / {sci(per)}",
                f"{fmt_ratio(ratio(whole, f64))} / {fmt_ratio(ratio(per, f64))}",
            ]
        else:
            cells = [None] * 5
        rows.append([fused["spec"]["threads"], sci(f64), sci(f32), *cells])
    return headers, rows


def memory_rows(speed: list[dict], n: int) -> tuple[list[str], list[list]]:
    headers = [
        "method",
        "thr",
        "RSS before fit MiB",
        "peak RSS MiB",
        "increment MiB",
        "live child processes MiB",
    ]
    rows = []
    for method in SPEED_METHODS:
        for t in speed_threads(speed):
            r = lookup(speed, method, n, t)
            if r and r.get("ok"):
                rows.append(
                    [
                        method,
                        t,
                        r["rss_before_fit_mib"],
                        r["peak_rss_mib"],
                        r["peak_increment_mib"],
                        r["children_rss_mib"] or None,
                    ]
                )
    return headers, rows


def sci(value) -> str | None:
    return None if value is None else f"{value:.3g}"


def scale_rows(scale: dict | None) -> tuple[list[str], list[list]]:
    headers = [
        "N",
        "A",
        "thr",
        "IRelief(max_iter=2) fit s",
        "wall s (subprocess)",
        "RSS before MiB",
        "peak RSS MiB",
        "< 2 GB",
    ]
    if not scale:
        return headers, []
    if not scale.get("ok"):
        return headers, [
            [
                scale["spec"]["n"],
                A_SCALE,
                scale["spec"]["threads"],
                "FAILED",
                None,
                None,
                None,
                None,
            ]
        ]
    return headers, [
        [
            scale["spec"]["n"],
            A_SCALE,
            scale["threads"],
            fmt_s(scale["fit_s"]),
            fmt_s(scale["subprocess_wall_s"]),
            scale["rss_before_fit_mib"],
            scale["peak_rss_mib"],
            "yes" if scale["under_limit"] else "NO",
        ]
    ]


def top5_summary(speed: list[dict], n: int) -> dict:
    """Top-5 sets of every method at size ``n`` (1 thread) and whether they agree."""
    sets, informative = {}, None
    for method in SPEED_METHODS:
        r = lookup(speed, method, n, THREADS[0])
        if r and r.get("ok"):
            sets[method] = r["top5"]
            informative = r["informative_columns"]
    distinct = {frozenset(v) for v in sets.values()}
    return {
        "n": n,
        "threads": THREADS[0],
        "top5": sets,
        "informative_columns": informative,
        "all_methods_agree": len(distinct) == 1 if sets else None,
        "matches_informative": {m: sorted(v) == sorted(informative or []) for m, v in sets.items()},
        "same_top5_at_both_thread_counts": {
            m: _same_top5_across_threads(speed, m, n) for m in SPEED_METHODS
        },
        "relieff_weights_vs_skrebate": relieff_weight_agreement(speed, n),
    }


def relieff_weight_agreement(speed: list[dict], n: int) -> dict:
    """Max |w - w_skrebate| and correlation for the ReliefF methods (same formula)."""

    def weights(method):
        r = lookup(speed, method, n, THREADS[0])
        return (
            np.asarray(r["feature_importances"])
            if r and r.get("ok") and "feature_importances" in r
            else None
        )

    reference = weights("skrebate.ReliefF")
    out = {}
    for method in ("dmargin.ReliefF", "fast_select.ReliefF"):
        w = weights(method)
        if w is None or reference is None:
            continue
        out[method] = {
            "max_abs_diff": float(np.max(np.abs(w - reference))),
            "max_abs_weight": float(np.max(np.abs(reference))),
            "pearson_r": float(np.corrcoef(w, reference)[0, 1]),
        }
    return out


def _same_top5_across_threads(speed, method, n):
    tops = [lookup(speed, method, n, t) for t in speed_threads(speed)]
    if len(tops) < 2 or not all(r and r.get("ok") for r in tops):
        return None
    return len({tuple(r["top5"]) for r in tops}) == 1


def targets(speed, limit, scale, largest_n, peak=None) -> dict:
    dm = steady_time(lookup(speed, "dmargin.ReliefF", largest_n, 1))
    dm_first = (lookup(speed, "dmargin.ReliefF", largest_n, 1) or {}).get("first_fit_s")
    sk = steady_time(lookup(speed, "skrebate.ReliefF", largest_n, 1))
    fs = steady_time(lookup(speed, "fast_select.ReliefF", largest_n, 1))
    out = {
        "at_n": largest_n,
        "skrebate_over_dmargin_steady": ratio(sk, dm),
        "skrebate_over_dmargin_first_fit": ratio(sk, dm_first),
        "relieff_at_most_1_30_of_skrebate": None
        if ratio(sk, dm) is None
        else ratio(sk, dm) >= TARGET_SKREBATE_SPEEDUP,
        "fast_select_over_dmargin_steady": ratio(fs, dm),
        "relieff_no_slower_than_fast_select": None if dm is None or fs is None else dm <= fs,
    }
    dm_two = steady_time(lookup(speed, "dmargin.ReliefF", largest_n, 2))
    if dm_two is not None:
        out["relieff_two_threads_over_one"] = ratio(dm, dm_two)
        speedup = out["relieff_two_threads_over_one"]
        out["relieff_threads_met"] = None if speedup is None else speedup >= TARGET_THREADS_SPEEDUP
        # What two cores give float32 distance work on this machine (the fit's tiles)
        two = ((peak or {}).get("float32") or {}).get("two_cores")
        if two:
            out["machine_two_cores_float32"] = two["scaling"]
            out["machine_two_cores_blocking"] = two["blocking"]
    for entry in limit:
        t, fused, estep = entry["fused"]["spec"]["threads"], entry["fused"], entry["estep"]
        if fused.get("ok") and estep.get("ok"):
            f64 = fused["float64"]["pair_features_per_s"]
            per = ratio(estep["per_iteration_pair_features_per_s"], f64)
            whole = ratio(estep["whole_fit_pair_features_per_s"], f64)
            out[f"estep_fraction_per_iter_{t}thr"] = per
            out[f"estep_fraction_whole_fit_{t}thr"] = whole
            out[f"estep_at_least_30pct_{t}thr"] = per is not None and per >= TARGET_ESTEP_FRACTION
    if scale is not None:
        out["scale_n"] = scale["spec"]["n"]
        out["scale_peak_rss_mib"] = scale.get("peak_rss_mib")
        out["scale_under_2gb"] = scale.get("under_limit") if scale.get("ok") else None
    return out


def render_markdown(
    machine, speed, limit, scale, ns, top5, goals, rounds=None, kernels=None
) -> str:
    versions = machine["versions"]
    parts = [
        f"{machine['cpu_model']}, {machine['logical_cores']} cores, numba {versions['numba']} "
        f"({machine['numba_threading_layer']} threading layer), dmargin {versions['dmargin']}, "
        f"skrebate {versions['skrebate']}, fast-select {versions['fast-select']}; {machine['date'][:10]}.",
    ]
    parts += [
        f"#### ReliefF / IRelief fit time, A = {A_SPEED}, k = {N_NEIGHBORS} (steady-state best, first fit with JIT in parentheses)"
    ]
    parts.append(harness.markdown_table(*speed_rows(speed, ns, machine.get("peak"))))
    parts.append(
        f"`*` skrebate at N >= {SKREBATE_SINGLE_FIT_FROM_N}: a single fit (no JIT in skrebate). "
        "Ratios use steady-state times; > 1 means dmargin is faster.  Of f32 peak: "
        "`dmargin.fit_cost(...).operations` (N^2 A) over the steady fit, against the thread "
        "count times one core's float32 peak (below)."
    )
    parts.append(peak_line(machine.get("peak")))
    for pair, label in (("ReliefF", "ReliefF(n_neighbors=10, pvalues=False)"),):
        if rounds is not None:
            parts.append(rounds_markdown(rounds, pair, label))
    if kernels is not None:
        parts.append(kernels_markdown(kernels))
    parts.append(
        f"#### Pairwise limit, N = {limit[0]['fused']['spec']['n']}, A = {A_LIMIT} (pf/s = N*N*A / seconds)"
    )
    parts.append(harness.markdown_table(*limit_rows(limit)))
    parts.append(
        f"#### Memory of the fits at N = {max(ns)}, A = {A_SPEED} (peak includes JIT compilation)"
    )
    parts.append(harness.markdown_table(*memory_rows(speed, max(ns))))
    if scale is not None:
        parts.append("#### Memory at scale")
        parts.append(harness.markdown_table(*scale_rows(scale)))
    parts.append(
        f"#### Top-5 features at N = {top5['n']} (1 thread); informative columns: {top5['informative_columns']}"
    )
    parts.append(
        harness.markdown_table(
            ["method", "top-5", "= informative set"],
            [
                [m, v, "yes" if top5["matches_informative"][m] else "no"]
                for m, v in top5["top5"].items()
            ],
        )
    )
    parts.append(f"All methods agree on the top-5 set: {top5['all_methods_agree']}")
    parts.append("#### Targets")
    parts.append(harness.markdown_table(*targets_rows(goals)))
    parts.append(contention_note(speed, limit, scale, (rounds, kernels)))
    return "\n\n".join(parts)


def busy_readings(speed, limit, scale, extra=()):
    """``(label, other_cores_busy)`` for every measurement that ran (``extra``: more results)."""
    results = list(speed) + [r for entry in limit for r in (entry["fused"], entry["estep"])]
    results += [scale] if scale else []
    results += [r for r in extra if r]
    return [(_label(r["spec"]), r["other_cores_busy"]) for r in results if r.get("ok")]


def _rounds_label(spec: dict) -> str:
    return f"{spec.get('pair', 'kernel rates')} N={spec.get('ns', spec.get('n'))} thr=1"


def _label(spec: dict) -> str:
    if spec["kind"] in ("rounds", "kernels"):
        return _rounds_label(spec)
    name = spec.get(
        "method",
        {"limit": "fused loop", "estep": "IRelief E-step", "scale": "IRelief"}.get(spec["kind"]),
    )
    return f"{name} N={spec['n']} thr={spec['threads']}"


def contention_note(speed, limit, scale, extra=()) -> str:
    readings = busy_readings(speed, limit, scale, extra)
    noisy = [
        f"{label} ({busy})"
        for label, busy in readings
        if busy is not None and busy >= QUIET_BUSY_CORES
    ]
    worst = max((b for _, b in readings if b is not None), default=None)
    if not noisy:
        return f"Other processes kept < {QUIET_BUSY_CORES} cores busy during every measurement (max {worst})."
    return (
        f"Other processes kept >= {QUIET_BUSY_CORES} cores busy (average over the timed fits) during: "
        + "; ".join(noisy)
        + ". Those numbers are pessimistic."
    )


def targets_rows(goals: dict) -> tuple[list[str], list[list]]:
    def met(flag):
        return None if flag is None else ("yes" if flag else "NO")

    n = goals["at_n"]
    rows = [
        [
            f"dmargin ReliefF <= 1/{TARGET_SKREBATE_SPEEDUP:.0f} of skrebate (N={n}, 1 thr)",
            f"skrebate / dmargin = {fmt_ratio(goals['skrebate_over_dmargin_steady'])}",
            met(goals["relieff_at_most_1_30_of_skrebate"]),
        ],
        [
            f"dmargin ReliefF no slower than fast-select steady state (N={n}, 1 thr)",
            f"fast-select / dmargin = {fmt_ratio(goals['fast_select_over_dmargin_steady'])}",
            met(goals["relieff_no_slower_than_fast_select"]),
        ],
    ]
    if "relieff_threads_met" in goals:
        rows.append(
            [
                f"dmargin ReliefF on 2 threads >= {TARGET_THREADS_SPEEDUP:g}x 1 thread (N={n})",
                # four decimals: 1.8997 must not read as a met 1.9
                f"1 thr / 2 thr = {goals['relieff_two_threads_over_one']:.4f}"
                + (
                    f" (this machine's float32 tile on two cores at once: "
                    f"{goals['machine_two_cores_float32']:.2f}x one core)"
                    if goals.get("machine_two_cores_float32")
                    else ""
                ),
                met(goals["relieff_threads_met"]),
            ]
        )
    for t in THREADS:
        if f"estep_fraction_per_iter_{t}thr" in goals:
            rows.append(
                [
                    f"I-RELIEF E-step >= {TARGET_ESTEP_FRACTION:.0%} of the fused f64 loop ({t} thr)",
                    f"{fmt_ratio(goals[f'estep_fraction_per_iter_{t}thr'])} per iteration, "
                    f"{fmt_ratio(goals[f'estep_fraction_whole_fit_{t}thr'])} whole max_iter=1 fit",
                    met(goals[f"estep_at_least_30pct_{t}thr"]),
                ]
            )
    for n, target in TARGET_ROUNDS_RATIO.items():
        if f"relieff_rounds_met_{n}" in goals:
            rows.append(
                [
                    f"dmargin ReliefF >= {target:g}x fast-select, interleaved rounds, "
                    f"spambase-like N={n:,}, 1 thr",
                    f"fast-select / dmargin = {fmt_ratio(goals.get(f'relieff_rounds_ratio_{n}'))}",
                    met(goals[f"relieff_rounds_met_{n}"]),
                ]
            )
    if "kernels_all_met" in goals:
        below = ", ".join(goals["kernels_below_target"]) or "none"
        rows.append(
            [
                f"every Relief-family kernel >= {TARGET_PEAK_FRACTION:.0%} of the f32 peak in a fit",
                f"{pct(goals['kernel_fraction_f32_min'])} to "
                f"{pct(goals['kernel_fraction_f32_max'])}; below: {below}",
                met(goals["kernels_all_met"]),
            ]
        )
    if "scale_under_2gb" in goals:
        rows.append(
            [
                f"IRelief(max_iter=2) peak RSS < 2 GB at N={goals['scale_n']:,}, A={A_SCALE}",
                f"{goals['scale_peak_rss_mib']} MiB",
                met(goals["scale_under_2gb"]),
            ]
        )
    return ["target", "measured", "met"], rows


# --------------------------------------------------------------------------- #
# main
# --------------------------------------------------------------------------- #
def main(argv=None) -> int:
    parser = harness.options(
        __doc__,
        quick=f"fits at N = {', '.join(map(str, N_QUICK))} and 1 thread, one "
        f"steady fit; limit at N = {N_LIMIT_QUICK}, scale run at "
        f"N = {N_SCALE_QUICK:,}",
        idle_wait=60.0,
        attempts=2,
        worker=True,
    )
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.serve_worker(args.worker, WORKERS)
        return 0

    ns = N_QUICK if args.quick else N_FULL
    steady_repeats, limit_repeats = (1, 1) if args.quick else (STEADY_REPEATS, 3)
    n_limit = N_LIMIT_QUICK if args.quick else N_LIMIT
    n_scale = N_SCALE_QUICK if args.quick else N_SCALE
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

    peak = machine["peak"]
    rounds = run_rounds(
        __file__,
        "ReliefF",
        N_ROUNDS_QUICK if args.quick else N_ROUNDS,
        ROUNDS_QUICK if args.quick else ROUNDS,
        args,
    )
    if rounds.get("ok"):
        with_peak_fractions(rounds["rows"], peak, "dmargin_pair_features_per_s")
    kernels = run_kernels(
        N_KERNELS_QUICK if args.quick else N_KERNELS,
        KERNEL_REPEATS_QUICK if args.quick else KERNEL_REPEATS,
        args,
    )
    if kernels.get("ok"):
        with_peak_fractions(kernels["rows"], peak, "pair_features_per_s")
    speed = run_speed(ns, SPEED_THREADS_QUICK if args.quick else THREADS, steady_repeats, args)
    limit = run_limit(n_limit, limit_repeats, args)
    scale = run_scale(n_scale, args)

    top5 = top5_summary(speed, max(ns))
    goals = targets(speed, limit, scale, max(ns), peak)
    goals.update(rounds_targets(rounds, "ReliefF"))
    goals.update(kernels_targets(kernels))
    markdown = render_markdown(machine, speed, limit, scale, ns, top5, goals, rounds, kernels)

    report = {
        "benchmark": "relief_speed",
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "dataset": {
            "generator": "sklearn.datasets.make_classification",
            "arguments": dataset_args("N", A_SPEED),
            "preprocessing": "per-column min-max scaling to [0, 1], float64, C-contiguous",
            "sizes": {"speed": list(ns), "limit": [n_limit, A_LIMIT], "scale": [n_scale, A_SCALE]},
        },
        "protocol": {
            "subprocess_per_measurement": True,
            "thread_env_vars": list(harness.THREAD_VARS),
            "fresh_numba_cache_dir_per_subprocess": True,
            "steady_state": f"best of up to {steady_repeats} fits after the first, stopping early once "
            f"the repeats used {STEADY_BUDGET_S:.0f} s",
            "skrebate_single_fit_from_n": SKREBATE_SINGLE_FIT_FROM_N,
            "memory": "rss_before_fit from /proc/self/statm after imports and data; peak_rss from "
            "getrusage(RUSAGE_SELF).ru_maxrss after the fits; children_rss = live worker processes",
            "estep": f"IRelief(max_iter=1, tol=0) and (max_iter=2, tol=0), best of {limit_repeats} each after "
            "a warm-up fit; per-iteration = difference",
            "fused_loop": "prange over i, per pair sum_k |x_ik - x_jk| in X's dtype, njit(parallel=True, "
            f"fastmath=True); warm-up on 256 rows, then best of {limit_repeats}; float64 is the "
            "reference",
            "contention": f"before each measurement wait up to {args.idle_wait:.0f} s until other processes "
            f"use < {QUIET_BUSY_CORES} cores; other_cores_busy = average cores used by other "
            f"processes during the timed part; a disturbed measurement is run up to "
            f"{args.attempts} times, the least disturbed kept",
            "memory_limit_mib": round(MEMORY_LIMIT_MIB, 1),
        },
        "input_handling": INPUT_HANDLING,
        "spambase_like": {
            "generator": "benchmarks/_spambase_like.py: make_spambase_like(N, seed=0), a "
            "synthetic stand-in for UCI spambase (no copy here): 57 continuous features, "
            "39.4 % positive",
            "preprocessing": "per-column min-max scaling to [0, 1], float64, C-contiguous",
            "rounds_sizes": rounds["spec"]["ns"],
            "kernels_size": kernels["spec"]["n"],
        },
        "rounds": rounds,
        "kernels": kernels,
        "speed": speed,
        "limit": limit,
        "scale": scale,
        "top5": top5,
        "targets": goals,
        "markdown": markdown,
    }
    path = harness.write_variant("relief_speed", report, variant=args.variant, quick=args.quick)
    print(markdown)
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
