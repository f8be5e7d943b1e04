"""Does IMMIGRATE find a pure 2-way epistatic pair?  GAMETES files, IMMIGRATE vs IM4E vs I-RELIEF.

Data: the GAMETES epistasis files in ``<data>/gametes/`` (1600 rows, 20 SNP-like features,
18 noise ``N0..N17`` and 2 predictive ones; see that folder's README.md).  Used:

* ``20atts``: predictive ``P1, P2``, binary.
* ``missing_values``: predictive ``M0P0, M0P1``, binary, 9.7 % of the cells ``NA`` in
  1384 of the 1600 rows.  Dropping those rows would leave 216, so the main entry imputes
  each feature's NA with that column's most frequent value (mode over the whole file,
  labels not used); a second entry "missing (rows with NA dropped)" shows the 216-row
  alternative.
* ``mixed_attribute``: 9 continuous features (incl. both predictive ones), binary.
* ``3Class``: three classes.
* ``continuous_endpoint`` is skipped: its label is continuous, there are no classes.

Methods, all with their library defaults (no tuning to these files):
``dmargin.Immigrate()`` (sigma = 1), plus ``Immigrate(sigma=s)`` for s in 4, 2, 0.5
(the paper tunes sigma; sigma = 1 is the default row), ``dmargin.IM4E()`` and
``dmargin.IRelief()``.  Each estimator gets the raw feature matrix (their own default
scaling applies: standardisation for IMMIGRATE/IM4E, min-max for I-RELIEF).

Reported per file and method: the rank of each predictive feature by
``feature_importances_`` (1 = largest; ties: the best rank of the tied group, tie
size noted), and for IMMIGRATE the rank of the true pair among the 190 off-diagonal
entries of ``weight_matrix_`` (``interactions_`` order; ties likewise), the pair's
weight and the largest off-diagonal weight.  A random ranking puts a feature at 10.5
and a pair at 95.5 on average.

Usage::

    python benchmarks/bench_interactions.py            # all files (~1-3 min on 2 cores)
    python benchmarks/bench_interactions.py --quick    # 20atts file, Immigrate default + IM4E + IRelief
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
from _datasets import data_path  # noqa: E402

GAMETES = "gametes"
SIGMAS = (4.0, 2.0, 1.0, 0.5)
QUIET_BUSY_CORES = 0.3

FILES = [
    # key, file name, predictive columns, NA handling
    ("20atts", "GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz", ("P1", "P2"), None),
    (
        "missing (NA imputed: column mode)",
        "GAMETES_Epistasis_2-Way_missing_values_0.1_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
        ("M0P0", "M0P1"),
        "mode",
    ),
    (
        "missing (rows with NA dropped)",
        "GAMETES_Epistasis_2-Way_missing_values_0.1_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
        ("M0P0", "M0P1"),
        "drop",
    ),
    (
        "mixed attributes",
        "GAMETES_Epistasis_2-Way_mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
        ("M0P0", "M0P1"),
        None,
    ),
    ("3 classes", "3Class_Datasets_Loc_2_01.txt", ("M0P0", "M0P1"), None),
]
SKIPPED = {
    "GAMETES_Epistasis_2-Way_continuous_endpoint_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz": "continuous label (no classes); the margin methods here need classes",
}


def load_gametes(fname: str, na: str | None):
    path = data_path(f"{GAMETES}/{fname}")
    df = pd.read_csv(path, sep="\t")
    label = next(c for c in ("class", "Class") if c in df.columns)
    y = df[label].to_numpy()
    Xdf = df.drop(columns=[label])
    info = {"file": f"{GAMETES}/{fname}", "label_column": label, "rows_in_file": int(len(df))}
    n_na_rows = int(Xdf.isna().any(axis=1).sum())
    info["rows_with_na"] = n_na_rows
    if na == "mode":
        info["na_cells_imputed"] = int(Xdf.isna().sum().sum())
        Xdf = Xdf.fillna(Xdf.mode(dropna=True).iloc[0])
    elif na == "drop":
        keep = ~Xdf.isna().any(axis=1).to_numpy()
        Xdf, y = Xdf[keep], y[keep]
    assert not Xdf.isna().any().any()
    info["rows_used"] = int(len(Xdf))
    info["class_counts"] = {str(k): int(v) for k, v in zip(*np.unique(y, return_counts=True))}
    return Xdf.astype(np.float64), y, info


def rank_of(scores: np.ndarray, idx: int) -> dict:
    """Rank 1 = largest; ties get the best rank of the group (and its size)."""
    v = scores[idx]
    return {"rank": int(np.sum(scores > v)) + 1, "tied_with": int(np.sum(scores == v)) - 1}


def methods(quick: bool):
    import dmargin

    out = [
        (
            f"IMMIGRATE sigma={s:g}" + (" (default)" if s == 1.0 else ""),
            "immigrate",
            lambda s=s: dmargin.Immigrate(sigma=s),
        )
        for s in SIGMAS
        if not quick or s == 1.0
    ]
    out.append(("IM4E (default)", "im4e", lambda: dmargin.IM4E()))
    out.append(("I-RELIEF (default)", "irelief", lambda: dmargin.IRelief()))
    return out


def evaluate(key, fname, predictive, na, quick) -> dict:
    X, y, info = load_gametes(fname, na)
    cols = list(X.columns)
    pi = [cols.index(c) for c in predictive]
    entry = {
        "dataset": key,
        **info,
        "n_features": len(cols),
        "predictive": list(predictive),
        "predictive_index": pi,
        "results": [],
    }
    for label, family, make in methods(quick):
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = make().fit(X, y)
        seconds = time.perf_counter() - t0
        imp = np.asarray(est.feature_importances_, dtype=np.float64)
        res = {
            "method": label,
            "params": {
                k: v
                for k, v in est.get_params().items()
                if k in ("sigma", "max_iter", "tol", "scale")
            },
            "fit_s": round(seconds, 3),
            "n_iter_": int(getattr(est, "n_iter_", -1)),
            "feature_ranks": {c: rank_of(imp, i) for c, i in zip(predictive, pi)},
            "top5_features": [cols[i] for i in np.argsort(-imp, kind="stable")[:5]],
            "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught}),
        }
        if family == "immigrate":
            W = est.weight_matrix_
            iu, ju = np.triu_indices(W.shape[0], k=1)
            off = W[iu, ju]
            a, b = sorted(pi)
            pos = int(np.nonzero((iu == a) & (ju == b))[0][0])
            table = est.interactions_
            res["pair_rank"] = rank_of(off, pos)
            res["pair_rank_in_interactions_table"] = (
                int(np.nonzero(((table["i"] == a) & (table["j"] == b)).to_numpy())[0][0]) + 1
            )
            res["n_pairs"] = int(off.size)
            res["pair_weight"] = round(float(W[a, b]), 5)
            res["max_offdiag_weight"] = round(float(off.max()), 5)
            res["zero_offdiag_entries"] = int(np.sum(off == 0))
            res["top3_pairs"] = [
                [str(r.feature_i), str(r.feature_j), round(float(r.weight), 5)]
                for r in table.head(3).itertuples()
            ]
        entry["results"].append(res)
        print(
            f"[bench] {key:36s} {label:28s} ranks "
            f"{[res['feature_ranks'][c]['rank'] for c in predictive]} pair {res.get('pair_rank')} "
            f"({seconds:.2f} s)",
            file=sys.stderr,
            flush=True,
        )
    return entry


def fmt_rank(r: dict) -> str:
    if not r["tied_with"]:
        return f"{r['rank']}"
    return f"{r['rank']}-{r['rank'] + r['tied_with']} ({r['tied_with'] + 1} tied)"


def render(entries) -> str:
    headers = [
        "data",
        "method",
        "rank of P1 / P2 (of 20)",
        "pair rank (of 190)",
        "pair weight / max off-diag",
        "top-3 features",
        "steps",
    ]
    rows = []
    for e in entries:
        p1, p2 = e["predictive"]
        for r in e["results"]:
            pair = fmt_rank(r["pair_rank"]) if "pair_rank" in r else None
            w = (
                f"{r['pair_weight']:.3g} / {r['max_offdiag_weight']:.3g}"
                if "pair_weight" in r
                else None
            )
            rows.append(
                [
                    e["dataset"],
                    r["method"],
                    f"{fmt_rank(r['feature_ranks'][p1])} / {fmt_rank(r['feature_ranks'][p2])}",
                    pair,
                    w,
                    ", ".join(r["top5_features"][:3]),
                    r["n_iter_"],
                ]
            )
    notes = [
        "GAMETES pure 2-way epistasis, 1600 rows x 20 features (2 predictive: `P1, P2` in 20atts, "
        "`M0P0, M0P1` elsewhere). Ranks: 1 = highest weight (IMMIGRATE: diagonal of W); "
        "a tie shows the range of ranks the tied group covers. Random expectation: 10.5 for a feature, "
        "95.5 for the pair. All estimators with library defaults; IMMIGRATE also at sigma 4, 2, 0.5.",
        "Missing-values file: NA imputed with each column's mode (whole file, labels unused); "
        "the 'rows with NA dropped' entry keeps only the 216 complete rows. "
        "Continuous-endpoint file skipped (no classes).",
    ]
    return "\n\n".join([harness.markdown_table(headers, rows)] + notes)


def main(argv=None) -> int:
    parser = harness.options(
        __doc__,
        quick="the 20atts file; IMMIGRATE at its default sigma, IM4E, I-RELIEF",
        idle_wait=15.0,
    )
    args = harness.parse_args(parser, argv)

    start = time.perf_counter()
    machine = harness.machine_info(["dmargin", "numpy", "scipy", "scikit-learn", "numba", "pandas"])
    machine["dmargin_git"] = harness.git_revision(harness.REPO)
    quiet = harness.wait_until_quiet(QUIET_BUSY_CORES, args.idle_wait)
    monitor = harness.CpuMonitor().start()
    files = FILES[:1] if args.quick else FILES
    entries = [evaluate(key, fname, pred, na, args.quick) for key, fname, pred, na in files]
    cpu = monitor.stop()
    markdown = render(entries)
    report = {
        "benchmark": "interactions",
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "launch": quiet,
        "cpu_during_fits": cpu,
        "skipped": SKIPPED,
        "sigmas": list(SIGMAS),
        "datasets": entries,
        "total_wall_s": round(time.perf_counter() - start, 1),
        "markdown": markdown,
    }
    path = harness.write_variant("interactions", report, variant=args.variant, quick=args.quick)
    print(markdown)
    print(f"\nwritten: {path} ({report['total_wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
