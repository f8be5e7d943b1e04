"""STIR p-values of ReliefF and MultiSURF: calibration on null data and power on GAMETES.

What is measured (results go to ``benchmarks/results/stir.json``, or
``benchmarks/results/quick/stir.json`` with ``--quick``):

1. Null calibration: ``DRAWS`` data sets whose labels carry no information --
   ``make_classification``-style rows (N = 300, A = 50, uniform features)
   with labels drawn at random, and the wdbc rows (569 x 30) with their labels
   permuted -- fitted with ``ReliefF(n_neighbors=k)`` for k = 10 and k = 50
   and with ``MultiSURF(pvalues=True)`` (its neighbourhoods: about a third of
   the rows).
   Recorded: the Kolmogorov-Smirnov test of all the p-values against the
   uniform distribution, the fraction of p-values under 0.05 (nominal 0.05),
   and the false discovery rate at q = 0.05 over the draws (under a complete
   null every discovery is false: the FDR is the fraction of draws with any
   q-value under 0.05).
2. Power on GAMETES (pure 2-way epistasis, 1600 x 20, two predictive SNPs):
   the ranks of the two SNPs by p-value and their q-values, STIR with k = 10
   and 100 and on MultiSURF, permutations with k = 10 and B = 999 (the smallest permutation
   p-value is 1 / (B + 1), and Benjamini-Hochberg over A = 20 features needs
   about A / 0.05 permutations to declare anything at q = 0.05).

STIR's pseudo t-test (Le et al. 2019) treats the hit and miss pairs as
independent samples; they are not (a pair is often found from both of its
rows, pairs share rows, and the neighbour graph's triangles skew the score).
dmargin reads the same statistic against the variance, skewness and kurtosis
that the neighbour graph implies (``dmargin/_stir.py``); the rows "STIR, the
paper's test" fit the same draws with every found pair counted as an
independent draw and no skewness or kurtosis, to measure what the model does
to the p-values.
"uniform" draws its labels at random (binomial), "uniform, balanced"
permutes 150 of each class.  The FDR comes with its 95 % (Wilson) interval:
with 100 draws it is about +-0.045 wide around 0.05.

Usage::

    python benchmarks/bench_stir.py            # 100 null draws per setting
    python benchmarks/bench_stir.py --quick    # 20 draws
    python benchmarks/bench_stir.py --battery report --draws 400 --variant battery-report
    python benchmarks/bench_stir.py --power --variant power   # planted signal, GAMETES

``--battery`` runs the null battery of ``benchmarks/_nulls.py`` (cells of
feature shape, class balance, N, k and sampled anchors; ``tune`` and
``report`` seeds kept apart) and records, for each cell and method, how many
draws the fit declined (a warning: outside where STIR's law has been shown
calibrated) and, over the others, the shares of p-values under 0.05 and
0.001, the Kolmogorov-Smirnov p-value and the FDR at q = 0.05 with its
interval.  ``--power`` plants 5 informative features among 50 (N = 300 and
2,000) and reports each method's power and FDR at q = 0.05.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402

from dmargin import UncalibratedPValuesWarning  # noqa: E402
from dmargin._pvalues import raw_pvalues  # noqa: E402

DRAWS, DRAWS_QUICK = 100, 20
_SPLITS = ("tune", "report", "check", "confirm")
PERMUTATIONS = 99
LEVEL = 0.05


def _pvalues(est):
    """``(t, p, q)`` of a fit: its p-values, or STIR's raw ones where the check of
    signal declined them (the battery measures the law itself: a null draw whose
    p-values make a discovery is declined by that check, and must count); ``None``
    where the fit computed none (outside the domain).  ``t`` is ``None`` for
    permutation p-values."""
    if hasattr(est, "pvalues_"):
        return getattr(est, "t_statistics_", None), est.pvalues_, est.qvalues_
    raw = raw_pvalues(est)
    if raw is None:
        return None
    return raw[0], raw[1], stats.false_discovery_control(raw[1], method="bh")


GAMETES = (
    harness.REPO.parent
    / "shared"
    / "data"
    / "gametes"
    / "GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz"
)


def _null_sets(kind, draws, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "wdbc":
        from dmargin.datasets import load_dataset

        X, y = load_dataset("wdbc")
        X, y = X.to_numpy(), y.to_numpy()
    for _ in range(draws):
        if kind == "uniform":
            yield rng.random((300, 50)), rng.integers(0, 2, 300)
        elif kind == "uniform, balanced":
            yield rng.random((300, 50)), rng.permutation(np.repeat([0, 1], 150))
        else:
            yield X, rng.permutation(y)


@contextlib.contextmanager
def _papers_test():
    """STIR as the paper tests it: every found pair an independent draw, no skewness."""
    from dmargin.relief import _stir
    from dmargin.relief import _terms as relief_terms
    from dmargin.surf import _surf

    def no_mutual_pairs(exact, sampled, found):
        pairs, graph = _stir.graph_from_sums(exact, sampled, found)
        pairs[:, 1] = 0
        return pairs, graph

    saved = (
        relief_terms.mutual_pairs,
        _stir.shared_row_variance,
        _stir.skewness,
        _stir.kurtosis,
        _surf.graph_from_sums,
    )
    relief_terms.mutual_pairs = lambda codes: 0
    _surf.graph_from_sums = no_mutual_pairs
    _stir.shared_row_variance = lambda *args: 0.0
    _stir.skewness = _stir.kurtosis = lambda *args: 0.0
    try:
        yield
    finally:
        (
            relief_terms.mutual_pairs,
            _stir.shared_row_variance,
            _stir.skewness,
            _stir.kurtosis,
            _surf.graph_from_sums,
        ) = saved


#: The terms of dmargin's law that ``--ablate`` switches off, one at a time.
TERMS = ("mutual-pairs", "shared-row-covariance", "skewness", "kurtosis")


@contextlib.contextmanager
def _ablated(terms):
    """dmargin's law with ``terms`` switched off: a pair found from both rows counted
    twice, no covariance of pairs sharing a row, no skewness (Student's t alone, or
    Johnson's SU law of the kurtosis), no kurtosis (the Pearson III law of the skewness)."""
    from dmargin.relief import _stir
    from dmargin.relief import _terms as relief_terms
    from dmargin.surf import _surf

    def no_mutual_pairs(exact, sampled, found):
        pairs, graph = graph_from_sums(exact, sampled, found)
        pairs[:, 1] = 0
        return pairs, graph

    graph_from_sums = _stir.graph_from_sums
    saved = (
        relief_terms.mutual_pairs,
        _surf.graph_from_sums,
        _stir.shared_row_variance,
        _stir.skewness,
        _stir.kurtosis,
    )
    if "mutual-pairs" in terms:
        relief_terms.mutual_pairs = lambda codes: 0
        _surf.graph_from_sums = no_mutual_pairs
    if "shared-row-covariance" in terms:
        _stir.shared_row_variance = lambda *args: 0.0
    if "skewness" in terms:
        _stir.skewness = lambda *args: 0.0
    if "kurtosis" in terms:
        _stir.kurtosis = lambda *args: None
    try:
        yield
    finally:
        (
            relief_terms.mutual_pairs,
            _surf.graph_from_sums,
            _stir.shared_row_variance,
            _stir.skewness,
            _stir.kurtosis,
        ) = saved


def _wilson(successes, n, z=1.96):
    """95 % Wilson interval of a binomial proportion."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(float(centre - half), 4), round(float(centre + half), 4)]


def _estimator(k, permutations, random_state):
    """``ReliefF(n_neighbors=k)``, or ``MultiSURF(pvalues=True)`` for ``k=None``."""
    import dmargin

    if k is None:
        return dmargin.MultiSURF(pvalues=True, discrete_threshold=0)
    return dmargin.ReliefF(
        n_neighbors=k,
        n_permutations=permutations,
        pvalues=not permutations,
        random_state=random_state,
    )


def calibration(kind, k, draws, permutations=0, papers_n=False):
    pvalues, any_discovery, imbalance, mean_t = [], [], [], []
    scores, variances = [], []  # the model's variance against the scores' own over the draws
    with _papers_test() if papers_n else contextlib.nullcontext():
        declined = 0
        for i, (X, y) in enumerate(_null_sets(kind, draws)):
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always", UncalibratedPValuesWarning)
                est = _estimator(k, permutations, i).fit(X, y)
            found = _pvalues(est)
            if found is None:  # binomial labels beyond 45:55: declined
                declined += 1
                continue
            t, p, q = found
            if t is not None and not permutations:
                with np.errstate(invalid="ignore", divide="ignore"):
                    scores.append(est.feature_importances_)
                    variances.append((est.feature_importances_ / t) ** 2)
            pvalues.append(p)
            any_discovery.append(bool((q <= LEVEL).any()))
            imbalance.append(abs(float(np.mean(y == y[0])) - 0.5))
            mean_t.append(float(np.mean(t)) if t is not None else np.nan)
    p = np.concatenate(pvalues)
    if permutations:
        p = p - np.random.default_rng(1).random(p.size) / (permutations + 1)
    ks = stats.kstest(p, "uniform")
    return {
        "data": kind,
        "estimator": "ReliefF" if k is not None else "MultiSURF",
        "n_neighbors": k,
        "draws": draws,
        "declined": declined,
        "pvalues": int(p.size),
        "method": (
            f"permutation (B = {permutations})"
            if permutations
            else "STIR, the paper's test"
            if papers_n
            else "STIR"
        ),
        "ks_statistic": round(float(ks.statistic), 4),
        "ks_pvalue": float(ks.pvalue),
        "uniform_at_0.01": bool(ks.pvalue > 0.01),
        "fraction_under_0.05": round(float(np.mean(p < LEVEL)), 4),
        "fraction_under_0.01": round(float(np.mean(p < 0.01)), 5),
        "fraction_under_0.001": round(float(np.mean(p < 0.001)), 5),
        "fdr_at_q_0.05": round(float(np.mean(any_discovery)), 4),
        "fdr_ci95": _wilson(int(np.sum(any_discovery)), len(any_discovery)),
        "fdr_controlled": bool(np.mean(any_discovery) <= LEVEL),
        **_variance_ratio(scores, variances),
        **_by_imbalance(np.array(imbalance), np.array(mean_t), np.array(any_discovery)),
    }


def _variance_ratio(scores, variances):
    """Per feature, the variance of its score over the draws against the mean of the
    variance STIR gave it (t = score / sqrt(variance)): 1 when the standard error is
    right; the median and range over the features."""
    if not scores:
        return {}
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.var(scores, axis=0) / np.nanmean(variances, axis=0)
    ratio = ratio[np.isfinite(ratio)]
    return {
        "score_variance_over_model": {
            "median": round(float(np.median(ratio)), 3),
            "min": round(float(ratio.min()), 3),
            "max": round(float(ratio.max()), 3),
        }
    }


def _by_imbalance(imbalance, mean_t, any_discovery):
    """Whether a draw's discoveries follow its class imbalance: the Spearman correlation
    of the imbalance with the draw's mean t, and the FDR of each half by imbalance."""
    if np.all(np.isnan(mean_t)) or np.ptp(imbalance) == 0:
        return {}
    more = imbalance > np.median(imbalance)
    return {
        "mean_t_vs_imbalance_spearman": round(float(stats.spearmanr(imbalance, mean_t)[0]), 3),
        "fdr_less_imbalanced_half": round(float(np.mean(any_discovery[~more])), 4),
        "fdr_more_imbalanced_half": round(float(np.mean(any_discovery[more])), 4),
    }


def power(k, permutations=0):
    import pandas as pd

    import dmargin

    frame = pd.read_csv(GAMETES, sep="\t")
    X, y = frame.drop(columns="class"), frame["class"]
    est = (
        dmargin.MultiSURF(pvalues=not permutations, n_permutations=permutations, random_state=0)
        if k is None
        else dmargin.ReliefF(
            n_neighbors=k, pvalues=not permutations, n_permutations=permutations, random_state=0
        )
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UncalibratedPValuesWarning)
        est.fit(X, y)
    found = _pvalues(est)
    if found is None:  # outside STIR's calibrated domain
        return {
            "estimator": type(est).__name__,
            "n_neighbors": k,
            "n_permutations": permutations,
            "warned": str(caught[0].message),
        }
    _, p, qvalues = found
    order = list(X.columns[np.argsort(p, kind="stable")])
    return {
        "estimator": "ReliefF" if k is not None else "MultiSURF",
        "n_neighbors": k,
        "n_permutations": permutations,
        "ranks": {s: order.index(s) + 1 for s in ("P1", "P2")},
        "qvalues": {s: float(qvalues[list(X.columns).index(s)]) for s in ("P1", "P2")},
        "other_discoveries": int(
            sum(q < LEVEL for c, q in zip(X.columns, qvalues) if c not in ("P1", "P2"))
        ),
    }


#: The planted-signal benchmark: informative features among A = 50 uniform ones
#: (inside both methods' STIR domain), class 1 shifted by ``PLANTED_SHIFT`` standard
#: deviations on each.
PLANTED_INFORMATIVE, PLANTED_SHIFT = 5, 0.3


def _planted(n, seed):
    rng = np.random.default_rng([7, n, seed])
    X = rng.random((n, 50))
    y = rng.permutation(np.repeat([0, 1], n // 2))
    X[:, :PLANTED_INFORMATIVE] += PLANTED_SHIFT * np.sqrt(1 / 12) * y[:, None]
    return X, y


def planted_power(n, method, draws, permutations=0):
    """Power and FDR at q = 0.05: the share of the informative features found and of
    the discoveries that are false, averaged over ``draws`` data sets."""
    import dmargin

    found, false_share, warned = [], [], 0
    for i in range(draws):
        X, y = _planted(n, i)
        est = getattr(dmargin, method)(
            pvalues=not permutations, n_permutations=permutations, random_state=i
        )
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always", UncalibratedPValuesWarning)
            est.fit(X, y)
        found = _pvalues(est)  # raw: the fit declines STIR's per-feature p-values here
        if found is None:
            warned += 1
            continue
        hits = found[2] <= LEVEL
        found.append(hits[:PLANTED_INFORMATIVE].mean())
        false_share.append(hits[PLANTED_INFORMATIVE:].sum() / max(1, hits.sum()))
    return {
        "n": n,
        "method": f"{method} " + (f"permutations (B = {permutations})" if permutations else "STIR"),
        "draws": draws,
        "warned": warned,
        "power_at_q_0.05": round(float(np.mean(found)), 3),
        "fdr_at_q_0.05": round(float(np.mean(false_share)), 3),
    }


def render_power(rows):
    return harness.markdown_table(
        ["N", "p-values", "draws", "power at q = 0.05", "FDR at q = 0.05"],
        [[r["n"], r["method"], r["draws"], r["power_at_q_0.05"], r["fdr_at_q_0.05"]] for r in rows],
    )


def _summary(p, any_discovery):
    """What a cell's p-values say: the shares at or under 0.05 and 0.001 (a test at
    level a rejects at p <= a: permutation p-values sit on a grid of 1 / (B + 1)),
    Kolmogorov-Smirnov against the uniform law, the FDR at q = 0.05 with its 95 %
    interval."""
    ks = stats.kstest(p, "uniform")
    return {
        "pvalues": int(p.size),
        "fraction_under_0.05": round(float(np.mean(p <= LEVEL)), 4),
        "fraction_under_0.001": round(float(np.mean(p <= 0.001)), 5),
        "ks_pvalue": float(ks.pvalue),
        "fdr_at_q_0.05": round(float(np.mean(any_discovery)), 4),
        "fdr_ci95": _wilson(int(np.sum(any_discovery)), len(any_discovery)),
    }


#: The p-values the battery checks: name -> ``make(cell, seed)``, an unfitted estimator.
BATTERY_METHODS = {
    "ReliefF STIR": lambda cell, seed: _battery_estimator("ReliefF", cell, seed),
    "MultiSURF STIR": lambda cell, seed: _battery_estimator("MultiSURF", cell, seed),
    # Exact by construction: the share under 0.05 is 1 / 20 whatever the data (and
    # with B = 19 no q-value reaches 0.05 among 50 features).
    "ReliefF permutations (B = 19)": lambda cell, seed: _battery_estimator(
        "ReliefF", cell, seed, 19
    ),
    "MultiSURF permutations (B = 19)": lambda cell, seed: _battery_estimator(
        "MultiSURF", cell, seed, 19
    ),
}
#: What ``--battery`` runs unless ``--methods`` says otherwise.
DEFAULT_METHODS = ("ReliefF STIR", "MultiSURF STIR")


def _battery_estimator(name, cell, seed, permutations=0):
    import dmargin

    anchors = None if cell.anchors is None else cell.anchors
    if name == "ReliefF":
        return dmargin.ReliefF(
            n_neighbors=cell.k,
            n_anchors=anchors,
            pvalues=not permutations,
            n_permutations=permutations,
            random_state=seed,
        )
    return dmargin.MultiSURF(
        n_anchors=anchors, pvalues=not permutations, n_permutations=permutations, random_state=seed
    )


def _applies(method, cell):
    if cell.minority is None and "STIR" in method:  # STIR is for two classes
        return False
    # MultiSURF has no k: its cells are the base's other axes.
    return not (method.startswith("MultiSURF") and cell.k != 10)


def battery(split, draws, only=None, ablate=(), start=0, methods=DEFAULT_METHODS, jobs=1):
    """Every cell of :func:`_nulls.cells` for every method of :data:`BATTERY_METHODS`
    (``ablate``: with those terms of the law switched off, :func:`_ablated`), the
    (cell, method) pairs spread over ``jobs`` processes of one thread each."""
    import _nulls

    tasks = [
        (cell, method)
        for cell in _nulls.cells()
        if not only or any(o in cell.name for o in only)
        for method in methods
        if _applies(method, cell)
    ]
    args = [(split, draws, cell, method, tuple(ablate), start) for cell, method in tasks]
    if jobs <= 1:
        return [_battery_row(*a) for a in args]
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    os.environ["NUMBA_NUM_THREADS"] = "1"  # the processes are the parallelism
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_battery_row_star, args))


def _battery_row_star(args):
    return _battery_row(*args)


def _battery_row(split, draws, cell, method, ablate=(), start=0):
    """One row of the battery: ``draws`` fits of ``method`` on null draws of ``cell``."""
    import _nulls

    make = BATTERY_METHODS[method]
    pvalues, any_discovery, warned = [], [], 0
    with _ablated(ablate):
        for i in range(start, start + draws):
            X, y = _nulls.draw(cell, split, i)
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always", UncalibratedPValuesWarning)
                est = make(cell, i).fit(X, y)
            found = _pvalues(est)
            if found is None:
                warned += 1  # no p-values: the fit said they are not vouched for
                continue
            pvalues.append(found[1])
            any_discovery.append(bool((found[2] <= LEVEL).any()))
    row = {
        "cell": cell.name,
        "method": method,
        "split": split,
        "draws": draws,
        "first_draw": start,
        "terms_off": list(ablate),
        "warned": warned,
    }
    if pvalues:
        row.update(_summary(np.concatenate(pvalues), any_discovery))
        row["calibrated"] = bool(
            0.04 <= row["fraction_under_0.05"] <= 0.06 and row["fdr_at_q_0.05"] <= 0.06
        )
    print(row, flush=True)
    return row


def render_battery(rows):
    def cells(r):
        if "pvalues" not in r:
            return ["-"] * 4 + ["warned on every draw"]
        return [
            r["fraction_under_0.05"],
            r["fraction_under_0.001"],
            f"{r['ks_pvalue']:.2g}",
            f"{r['fdr_at_q_0.05']} ({r['fdr_ci95'][0]}-{r['fdr_ci95'][1]})",
            "yes" if r["calibrated"] else "no",
        ]

    return harness.markdown_table(
        [
            "null cell",
            "p-values",
            "draws",
            "warned",
            "p < 0.05",
            "p < 0.001",
            "KS p-value",
            "FDR at q = 0.05 (95 % interval)",
            "calibrated",
        ],
        [[r["cell"], r["method"], r["draws"], r.get("warned", 0), *cells(r)] for r in rows],
    )


def render_battery_summary(rows):
    """Per method, over the cells where it returned p-values: how many cells, the
    ranges of the share under 0.05 and of the FDR, and the cells within the
    bounds (share 0.04-0.06, FDR at most 0.06)."""
    out = [
        "| p-values | cells with p-values | draws with p-values | p < 0.05 | "
        "FDR at q = 0.05 | cells within 0.04-0.06 and FDR <= 0.06 |",
        "|---|---|---|---|---|---|",
    ]
    for method in dict.fromkeys(r["method"] for r in rows):
        done = [r for r in rows if r["method"] == method and "pvalues" in r]
        if not done:
            continue
        share = [r["fraction_under_0.05"] for r in done]
        fdr = [r["fdr_at_q_0.05"] for r in done]
        within = sum(bool(r["calibrated"]) for r in done)
        drawn = sum(r["draws"] - r["warned"] for r in done)
        out.append(
            f"| {method} | {len(done)} | {drawn:,} | {min(share):.4f}-{max(share):.4f} "
            f"| {min(fdr):.4f}-{max(fdr):.4f} | {within} of {len(done)} |"
        )
    return "\n".join(out)


def _ratio_cell(ratio):
    if not ratio:
        return "-"
    return f"{ratio['median']} ({ratio['min']}-{ratio['max']})"


def render(out):
    rows = [
        [
            c["method"],
            c.get("estimator", "ReliefF"),
            c["data"],
            "-" if c["n_neighbors"] is None else c["n_neighbors"],
            f"{c['draws']} ({c['declined']} declined)" if c.get("declined") else c["draws"],
            c["ks_statistic"],
            f"{c['ks_pvalue']:.2g}",
            c["fraction_under_0.05"],
            c["fraction_under_0.001"],
            f"{c['fdr_at_q_0.05']} ({c['fdr_ci95'][0]}-{c['fdr_ci95'][1]})",
            _ratio_cell(c.get("score_variance_over_model")),
        ]
        for c in out["calibration"]
    ]
    table = harness.markdown_table(
        [
            "p-values",
            "estimator",
            "null data",
            "k",
            "draws",
            "KS statistic",
            "KS p-value",
            "p < 0.05 (nominal 0.05)",
            "p < 0.001 (nominal 0.001)",
            "FDR at q = 0.05 (95 % interval)",
            "score variance / STIR's (median, range)",
        ],
        rows,
    )
    if not out["power"]:
        return table
    return table + "\n\n" + render_gametes(out["power"])


def render_gametes(power):
    def one(g):
        name = f"{'STIR' if not g['n_permutations'] else 'permutations'}, " + (
            f"ReliefF k = {g['n_neighbors']}" if g["n_neighbors"] is not None else "MultiSURF"
        )
        if "warned" in g:
            return f"{name}: no p-values (genotypes: outside STIR's calibrated domain)"
        return (
            f"{name}: P1, P2 ranked {g['ranks']['P1']} and {g['ranks']['P2']} by p-value "
            f"(q = {g['qvalues']['P1']:.2g}, {g['qvalues']['P2']:.2g}), "
            f"{g['other_discoveries']} other discoveries"
        )

    return "GAMETES (1600 x 20, pure 2-way epistasis): " + "; ".join(one(g) for g in power) + "."


def main(argv=None):
    parser = harness.options(__doc__, quick=f"{DRAWS_QUICK} null draws per setting")
    parser.add_argument(
        "--draws",
        type=int,
        default=None,
        metavar="N",
        help=f"null draws per setting (default {DRAWS}; {DRAWS_QUICK} with --quick)",
    )
    parser.add_argument(
        "--null-only",
        action="store_true",
        help="only dmargin's STIR on the two uniform nulls, ReliefF at k = 10 and "
        "MultiSURF (with --draws, to narrow the FDR's sampling error)",
    )
    parser.add_argument(
        "--battery",
        choices=sorted(_SPLITS),
        default=None,
        help="the null battery (benchmarks/_nulls.py) on the seeds of this "
        "split: 'tune' while building a law, 'report' for what is quoted",
    )
    parser.add_argument(
        "--cells",
        nargs="*",
        default=None,
        metavar="TEXT",
        help="with --battery: only the cells whose name holds one of these",
    )
    parser.add_argument(
        "--methods",
        nargs="*",
        choices=sorted(BATTERY_METHODS),
        default=DEFAULT_METHODS,
        help="with --battery: the p-values to check (default: STIR's)",
    )
    parser.add_argument(
        "--start",
        type=int,
        default=0,
        metavar="I",
        help="with --battery: the draws I, I + 1, ... of each cell (more draws "
        "of the same seeds' stream without repeating any)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help="with --battery: run the cells in J processes of one thread each",
    )
    parser.add_argument(
        "--ablate",
        nargs="*",
        choices=TERMS,
        default=(),
        help="with --battery: switch these terms of dmargin's law off",
    )
    parser.add_argument(
        "--power",
        action="store_true",
        help="the planted-signal benchmark (5 informative uniform features "
        "among 50, "
        "N = 300 and 2,000) and the GAMETES SNPs by permutation p-values",
    )
    args = harness.parse_args(parser, argv)
    draws = args.draws or (DRAWS_QUICK if args.quick else DRAWS)
    if args.power:
        scale = 0.2 if args.quick else 1.0
        rows = [
            planted_power(n, method, max(2, int(d * scale)), b)
            for n, method, d, b in (
                (300, "ReliefF", 200, 0),
                (300, "MultiSURF", 200, 0),
                (2000, "ReliefF", 100, 0),
                (2000, "MultiSURF", 100, 0),
                (300, "ReliefF", 10, 999),
                (300, "MultiSURF", 10, 999),
            )
        ]
        gametes = [power(10, 999), power(None, 999)] if GAMETES.exists() else []
        out = {
            "benchmark": "stir",
            "mode": "quick" if args.quick else "full",
            "machine": harness.machine_info(["numpy", "scipy", "dmargin"]),
            "revision": harness.git_revision(harness.REPO),
            "planted": rows,
            "power": gametes,
        }
        out["markdown"] = render_power(rows) + ("\n\n" + render_gametes(gametes) if gametes else "")
        print(out["markdown"])
        harness.write_variant("stir", out, variant=args.variant, quick=args.quick)
        return 0
    if args.battery:
        rows = battery(
            args.battery, draws, args.cells, tuple(args.ablate), args.start, args.methods, args.jobs
        )
        out = {
            "benchmark": "stir",
            "mode": "quick" if args.quick else "full",
            "machine": harness.machine_info(["numpy", "scipy", "dmargin"]),
            "revision": harness.git_revision(harness.REPO),
            "battery": rows,
        }
        out["markdown"] = render_battery(rows)
        out["summary_markdown"] = render_battery_summary(rows)
        print(out["markdown"])
        print(out["summary_markdown"])
        harness.write_variant("stir", out, variant=args.variant, quick=args.quick)
        return 0
    if args.null_only:
        calib = [
            calibration(kind, k, draws)
            for k in (10, None)
            for kind in ("uniform", "uniform, balanced")
        ]
        gametes = []
    else:
        calib = [
            calibration(kind, k, draws, papers_n=papers_n)
            for papers_n in (False, True)
            for kind in ("uniform", "uniform, balanced")  # (wdbc: outside STIR's domain)
            for k in (10, 50, None)
        ] + [calibration(kind, 10, draws, PERMUTATIONS) for kind in ("uniform", "wdbc")]
        gametes = [power(k) for k in (10, 100, None)] + [power(10, 999)] if GAMETES.exists() else []
    out = {
        "benchmark": "stir",
        "mode": "quick" if args.quick else "full",
        "machine": harness.machine_info(["numpy", "scipy", "dmargin"]),
        "revision": harness.git_revision(harness.REPO),
        "calibration": calib,
        "power": gametes,
    }
    out["markdown"] = render(out)
    print(out["markdown"])
    harness.write_variant("stir", out, variant=args.variant, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
