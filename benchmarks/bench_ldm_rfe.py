"""LDM-RFE: the paper's accuracy protocol on Hill-Valley, and its speed.

Accuracy (Ou, Wang, Pang & Coghill, ICSAI 2017, section IV): features min-max scaled to [0, 1] over
the whole file; a stratified 2/3 - 1/3 train/test split; four rankings computed on
the training part -- LDM-RFE (RBF, C = 0.1, lambda1 = lambda2 = 1, the paper's
settings as far as the text is legible), kernel SVM-RFE (RBF SVC, C = 0.1), the
t-test (|t| of Welch's test) and PCA (components up to 97 % cumulative variance;
feature score = sum over kept components of explained-variance ratio x |loading|);
then an RBF SVC (scikit-learn defaults) trained on the top-n features and scored
on the test part.  Data: ``hill-valley/Hill_Valley_with_noise.tsv.gz`` and (full
run only) ``Hill_Valley_without_noise.tsv.gz`` (PMLB: the UCI training and test
files together, 1212 x 100; the paper used one 606-row file, which one is not
said).  The paper reports its results as curves only (Fig. 6), no numbers, so
there is nothing to print beside ours.

Speed, same run:

* score step: ``S(j)`` for every feature of 1,000 rows x 100 features (random data,
  random coefficients) by one blocked pass over row pairs
  (:func:`dmargin.engine.rbf_left_out_sums`) against recomputing an
  RBF kernel matrix per feature (scikit-learn's ``rbf_kernel``, BLAS-based, and
  SciPy's ``cdist``), at one thread and at all cores.  Acceptance: >= 20x.
* whole elimination on the Hill-Valley training part: ``LDMRFE``, ``SVMRFE`` and
  scikit-learn's ``RFE(SVC(kernel="linear"))``, same step.

Usage::

    python benchmarks/bench_ldm_rfe.py            # 3 splits, step 1 (~5-8 min on 2 cores)
    python benchmarks/bench_ldm_rfe.py --quick    # 1 split, step 10, baselines extrapolated
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
from _datasets import data_path, load_pmlb  # noqa: E402

DATA = "hill-valley/Hill_Valley_with_noise.tsv.gz"
DATA_FULL = (DATA, "hill-valley/Hill_Valley_without_noise.tsv.gz")
TOP_N = (1, 2, 5, 10, 20, 30, 50, 75, 100)
PAPER = {"C": 0.1, "lambda1": 1.0, "lambda2": 1.0}
QUIET_BUSY_CORES = 0.3


# ---------------------------------------------------------------------------
# Rankings
# ---------------------------------------------------------------------------


def order_from_ranking(ranking, tie_scores):
    """Feature order, best first: by ``ranking_``, ties by the last scores seen (higher first)."""
    return np.lexsort((-tie_scores, ranking))


def rfe_order(est, n_features):
    """Best-first order from an RFE run; features removed together are ordered by
    their score in the round that removed them."""
    last = np.full(n_features, np.inf)
    for cols, scores in est.scores_:
        last[cols] = scores
    return order_from_ranking(est.ranking_, last)


def rank_ldm_rfe(X, y, step, seed):
    from dmargin import LDMRFE

    est = LDMRFE(n_features_to_select=1, step=step, scale=None, random_state=seed, **PAPER)
    with warnings.catch_warnings():
        # LDM's descent may stop at max_iter in some rounds; the count of such
        # warnings is recorded by the whole-elimination run (``whole_rfe``).
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return rfe_order(est, X.shape[1])


def rank_svm_rfe(X, y, step, seed):
    from dmargin import SVMRFE

    est = SVMRFE(n_features_to_select=1, step=step, C=PAPER["C"], scale=None, random_state=seed)
    return rfe_order(est.fit(X, y), X.shape[1])


def rank_ttest(X, y, step, seed):
    from scipy.stats import ttest_ind

    t = ttest_ind(X[y == 0], X[y == 1], equal_var=False).statistic
    return np.argsort(-np.nan_to_num(np.abs(t)), kind="stable")


def rank_pca(X, y, step, seed):
    from sklearn.decomposition import PCA

    pca = PCA(n_components=0.97, svd_solver="full").fit(X)
    score = pca.explained_variance_ratio_ @ np.abs(pca.components_)
    return np.argsort(-score, kind="stable")


RANKERS = {"LDM-RFE": rank_ldm_rfe, "SVM-RFE": rank_svm_rfe, "t-test": rank_ttest, "PCA": rank_pca}


def accuracy(quick, path):
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    data = load_pmlb(path, "hill-valley")
    lo, hi = data.X.min(axis=0), data.X.max(axis=0)
    X = (data.X - lo) / np.where(hi > lo, hi - lo, 1.0)  # the paper scales the whole file
    y = data.y
    seeds = [0] if quick else [0, 1, 2]
    step = 10 if quick else 1
    curves = {name: [] for name in RANKERS}
    seconds = {name: [] for name in RANKERS}
    for seed in seeds:
        Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=2 / 3, stratify=y, random_state=seed)
        for name, rank in RANKERS.items():
            t, order = harness.timed(rank, Xtr, ytr, step, seed)
            seconds[name].append(round(t, 2))
            accs = []
            for n in TOP_N:
                keep = order[:n]
                accs.append(float(SVC().fit(Xtr[:, keep], ytr).score(Xte[:, keep], yte)))
            curves[name].append(accs)
            print(
                f"[bench] {Path(path).name} split {seed} {name:8s} {t:6.1f} s  "
                + " ".join(f"{a:.3f}" for a in accs),
                file=sys.stderr,
                flush=True,
            )
    return {
        "data": path,
        "rows": int(X.shape[0]),
        "features": int(X.shape[1]),
        "class_counts": data.class_counts(),
        "splits": seeds,
        "rfe_step": step,
        "top_n": list(TOP_N),
        "settings": {
            "LDM-RFE": PAPER,
            "SVM-RFE": {"C": PAPER["C"]},
            "evaluation": "SVC() on the top-n features",
        },
        "accuracy": {k: np.mean(v, axis=0).round(4).tolist() for k, v in curves.items()},
        "accuracy_per_split": curves,
        "ranking_seconds": seconds,
    }


# ---------------------------------------------------------------------------
# Speed
# ---------------------------------------------------------------------------


def _per_feature_sklearn(X, c, gamma, features):
    from sklearn.metrics.pairwise import rbf_kernel

    for j in features:
        Xj = np.delete(X, j, axis=1)
        c @ rbf_kernel(Xj, gamma=gamma) @ c


def _per_feature_cdist(X, c, gamma, features):
    from scipy.spatial.distance import cdist

    for j in features:
        Xj = np.delete(X, j, axis=1)
        c @ np.exp(-gamma * cdist(Xj, Xj, "sqeuclidean")) @ c


def score_step(quick):
    import numba
    from threadpoolctl import threadpool_limits

    from dmargin.engine import prepare_rows, rbf_left_out_sums

    rng = np.random.default_rng(0)
    n, a, gamma = 1000, 100, 0.1
    X, c = rng.random((n, a)), rng.normal(size=n)
    rows = prepare_rows(X, np.zeros(n, dtype=np.int64), 2, use_dask=False)
    rbf_left_out_sums(rows, c[:, None], np.arange(a), gamma)  # compile
    measured = max(1, a // 50) if quick else a  # baselines: features actually timed
    all_threads = numba.config.NUMBA_NUM_THREADS
    out = []
    for threads in sorted({1, all_threads}):
        numba.set_num_threads(threads)
        with threadpool_limits(threads):
            ours = min(
                harness.timed(rbf_left_out_sums, rows, c[:, None], np.arange(a), gamma)[0]
                for _ in range(3)
            )
            base = {}
            for name, fn in (
                ("sklearn rbf_kernel per feature", _per_feature_sklearn),
                ("scipy cdist per feature", _per_feature_cdist),
            ):
                t, _ = harness.timed(fn, X, c, gamma, range(measured))
                base[name] = t * a / measured
        out.append(
            {
                "threads": threads,
                "kernel_sums_s": round(ours, 4),
                **{k: round(v, 3) for k, v in base.items()},
                "speedup_vs_sklearn": round(base["sklearn rbf_kernel per feature"] / ours, 1),
                "speedup_vs_cdist": round(base["scipy cdist per feature"] / ours, 1),
                "baseline_features_timed": measured,
            }
        )
        print(
            f"[bench] score step, {threads} thread(s): ours {ours:.3f} s, "
            + ", ".join(f"{k} {v:.2f} s" for k, v in base.items()),
            file=sys.stderr,
            flush=True,
        )
    numba.set_num_threads(all_threads)
    check = rbf_left_out_sums(rows, c[:, None], np.arange(3), gamma)
    from sklearn.metrics.pairwise import rbf_kernel

    brute = [c @ rbf_kernel(np.delete(X[:, :3], j, axis=1), gamma=gamma) @ c for j in range(3)]
    rel = float(np.max(np.abs(check[:-1] - brute) / np.abs(brute)))
    return {
        "rows": n,
        "features": a,
        "gamma": gamma,
        "results": out,
        "max_rel_diff_vs_brute_force_3_features": rel,
    }


def whole_rfe(quick):
    from sklearn.feature_selection import RFE
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    from dmargin import LDMRFE, SVMRFE

    data = load_pmlb(DATA, "hill-valley")
    Xtr, _, ytr, _ = train_test_split(
        data.X, data.y, train_size=2 / 3, stratify=data.y, random_state=0
    )
    lo, hi = Xtr.min(axis=0), Xtr.max(axis=0)
    Xtr = (Xtr - lo) / np.where(hi > lo, hi - lo, 1.0)
    step = 10 if quick else 1
    runs = {
        "dmargin LDMRFE (rbf)": lambda: LDMRFE(step=step, scale=None, random_state=0, **PAPER),
        "dmargin SVMRFE (rbf)": lambda: SVMRFE(step=step, C=0.1, scale=None, random_state=0),
        "dmargin LDMRFE (linear)": lambda: LDMRFE(
            step=step, kernel="linear", scale=None, random_state=0, **PAPER
        ),
        'sklearn RFE(SVC(kernel="linear"))': lambda: RFE(
            SVC(kernel="linear", C=0.1), n_features_to_select=1, step=step
        ),
    }
    out = []
    for name, make in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make().fit(Xtr[:60, :12], ytr[:60])  # load compiled kernels outside the timing
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t, est = harness.timed(lambda make=make: make().fit(Xtr, ytr))
        out.append(
            {
                "method": name,
                "seconds": round(t, 2),
                "rounds": int(est.ranking_.max()) - 1,
                "warnings": sorted(
                    {f"{w.category.__name__}: {str(w.message)[:100]}" for w in caught}
                ),
            }
        )
        print(f"[bench] whole RFE {name}: {t:.2f} s", file=sys.stderr, flush=True)
    return {"rows": int(Xtr.shape[0]), "features": int(Xtr.shape[1]), "step": step, "results": out}


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def render(accs, speed, rfe, cpu) -> str:
    parts = []
    for acc in accs:
        headers = ["top n features"] + [str(n) for n in acc["top_n"]]
        rows = [[name] + [f"{v:.3f}" for v in vals] for name, vals in acc["accuracy"].items()]
        parts += [
            (
                f"**{Path(acc['data']).name.split('.')[0]}: SVC test accuracy on the top-n "
                f"features** ({acc['rows']} rows x {acc['features']}, stratified 2/3 - 1/3, mean "
                f"of {len(acc['splits'])} split(s), RFE step {acc['rfe_step']}). The paper shows "
                "this as a curve (Fig. 6) without numbers."
            ),
            harness.markdown_table(headers, rows),
        ]
    sh = [
        "threads",
        "S(j) one pass (s)",
        "rbf_kernel per feature (s)",
        "cdist per feature (s)",
        "speed-up vs rbf_kernel",
        "vs cdist",
    ]
    srows = [
        [
            r["threads"],
            r["kernel_sums_s"],
            r["sklearn rbf_kernel per feature"],
            r["scipy cdist per feature"],
            f"{r['speedup_vs_sklearn']}x",
            f"{r['speedup_vs_cdist']}x",
        ]
        for r in speed["results"]
    ]
    parts += [
        (
            f"**Score step**, {speed['rows']} rows x {speed['features']} features: all S(j) "
            "in one pass vs a kernel matrix per feature (max relative difference to brute "
            f"force {speed['max_rel_diff_vs_brute_force_3_features']:.1e})."
        ),
        harness.markdown_table(sh, srows),
    ]
    rrows = [[r["method"], r["seconds"]] for r in rfe["results"]]
    parts += [
        (
            f"**Whole elimination** on the Hill-Valley training part ({rfe['rows']} x "
            f"{rfe['features']}, step {rfe['step']}, to 1 feature)."
        ),
        harness.markdown_table(["method", "seconds"], rrows),
        (
            f"Other processes kept {cpu['other_cores_busy']} cores busy on average during "
            f"the run (load average {cpu['loadavg_1min']}); timings on a busy machine are "
            "upper bounds."
        ),
    ]
    return "\n\n".join(parts)


def main(argv=None) -> int:
    parser = harness.options(
        __doc__,
        quick="1 split, RFE step 10, the per-feature baselines timed on 2 of the "
        "100 features and extrapolated",
        idle_wait=15.0,
    )
    args = harness.parse_args(parser, argv)
    for path in (DATA,) if args.quick else DATA_FULL:  # before the timings, not after them
        data_path(path)

    start = time.perf_counter()
    machine = harness.machine_info(["dmargin", "numpy", "scipy", "scikit-learn", "numba"])
    machine["dmargin_git"] = harness.git_revision(harness.REPO)
    quiet = harness.wait_until_quiet(QUIET_BUSY_CORES, args.idle_wait)
    monitor = harness.CpuMonitor().start()
    speed = score_step(args.quick)
    rfe = whole_rfe(args.quick)
    accs = [accuracy(args.quick, path) for path in ((DATA,) if args.quick else DATA_FULL)]
    cpu = monitor.stop()
    markdown = render(accs, speed, rfe, cpu)
    report = {
        "benchmark": "ldm_rfe",
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "launch": quiet,
        "cpu_during_run": cpu,
        "score_step": speed,
        "whole_rfe": rfe,
        "paper_protocol": accs,
        "paper_numbers": None,
        "total_wall_s": round(time.perf_counter() - start, 1),
        "markdown": markdown,
    }
    path = harness.write_variant("ldm_rfe", report, variant=args.variant, quick=args.quick)
    print(markdown)
    print(f"\nwritten: {path} ({report['total_wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
