"""Accuracy benchmark: dmargin.Immigrate / BoostedImmigrate / IM4E / IM4EImmigrate against
Zhao, Hong & Liu, "IMMIGRATE: A Margin-Based Feature Selection Method with Interaction Terms"
(Entropy 22(3), 2020), section 4.2, Tables 1-3.

Protocol (the paper's, reduced where noted to fit a ~35 min budget on 2 shared cores; every reduction is
also written to the JSON under "protocol"):

UCI sets (Table 2 / Table 3)
* Multiclass sets: only the two largest classes (paper §4.2.2).
* Outer CV: stratified 10-fold, repeated ``--reps`` times (paper: 10 repetitions, i.e. 100
  trials).  Seeds: outer split of repetition r uses ``seed + r``.
* Normalisation (paper §4: "all continuous features are normalized with mean zero and unit
  variance"): continuous columns are standardised with the training fold's mean / sd; the
  columns the UCI attribute descriptions list as categorical (nominal, binary, ordered codes)
  keep their integer codes (``CATEGORICAL`` below).  Inside the internal CV each inner
  training part is normalised with its own statistics.  ``--normalise all`` standardises every
  column instead.  The estimators then run with ``scale=None``; 1NN sees the same features.
* IMMIGRATE (IGT): ``Immigrate(sigma, max_iter=10, prune=None | 1/A)``.  sigma and pruning are
  chosen per outer fold by an INTERNAL stratified ``--inner-folds``-fold CV (default 10, the
  fold count the paper uses everywhere else; paper: internal CV, number of folds
  not stated) over sigma in {4, 2, 1, 0.5, 0.25, 0.125} x prune in {off, 1/A}; best mean
  internal accuracy, ties broken by the first grid point (prune off before on, sigma
  descending).  The paper halves sigma from 4 "until it is not larger than 0.2": the halving
  stops at 0.125, which is tried; ``--sigmas 4 2 1 0.5 0.25`` is the reading without it.
  Every inner fit is scored with the prediction rule (eq. 3.18) at each sigma of the grid
  (``prediction_sigma``; no refit needed), which gives four IGT columns from one internal CV:
  eq. 3.18 at the fitted sigma (dmargin's default), the R package's rule (sigma = 1 at
  prediction), the rule chosen between those two, and the prediction sigma chosen over the
  grid like the fitting sigma (the authors' R and MATLAB ``predict`` take their own sigma,
  default 1, separate from the fitting sigma).
* Ceiling: every grid point is also fitted on the outer training part and scored on the test
  fold at every prediction sigma; the best cell of the trial means is an optimistic bound (it
  is picked with the test folds) that tells a protocol gap from a data or implementation one.
* IM4E (IM4): ``IM4E(sigma)``, sigma chosen by the same internal CV over the sigma grid.
* BIM: ``BoostedImmigrate(n_estimators=E, sigma_max=4, sigma_min=0.2, max_iter=5)``, no tuning
  (the paper fixes the schedule); E and the number of repetitions are given by
  ``--bim-estimators`` / ``--bim-reps`` (paper: T = 100, 10 repetitions).
* 1NN: Euclidean 1-nearest neighbour on features standardised with the training fold's mean/sd.

Microarray sets (Table 1)
* IM4E (IM4) and IM4E-IMMIGRATE (EGT, threshold 2/A = library default), sigma = 1 fixed (no
  internal CV: reduction), stratified 10-fold CV, ``--micro-reps`` repetitions (paper: 10), plus
  1NN.  Fit time per fold is recorded.

Usage::

    python benchmarks/bench_immigrate_accuracy.py            # full run (~40 min on 2 cores)
    python benchmarks/bench_immigrate_accuracy.py --quick    # smoke test (2 small sets, 1 rep)
    # one UCI set, no microarray sets (BCW-Coimbra: UCI Breast Cancer Coimbra, 116 x 9, the
    # size the paper's Table 4 gives for BCW; scored against the paper's BCW row)
    python benchmarks/bench_immigrate_accuracy.py --datasets BCW-Coimbra --micro \
        --variant bcw_coimbra
    # split noise: the same protocol on other outer / inner splits, IGT only (repetition r
    # uses seed + r, so a second seed must be at least --reps away to share no split)
    python benchmarks/bench_immigrate_accuracy.py --seed 20250601 --bim-reps 0 --micro \
        --variant seed2

Output: ``benchmarks/results/immigrate_accuracy.json`` (``--quick``: ``benchmarks/results/quick/``).
"""

from __future__ import annotations

import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import collections
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
from _datasets import Dataset, _encode, data_path, load_pmlb, load_skf_mat  # noqa: E402

# "we gradually decrease sigma from sigma_0 = 4 by half each time until it is not larger than 0.2"
# (paper §4.2): the halving stops at the first value not larger than 0.2, which is tried too.
SIGMA_GRID = [4.0, 2.0, 1.0, 0.5, 0.25, 0.125]

# --------------------------------------------------------------------------------------------
# Paper numbers, transcribed from a text export of the paper (rows copied verbatim below and
# parsed, so the column alignment is the paper's).
# --------------------------------------------------------------------------------------------
TABLE2_HEADER = "SV1 SV2 LAS DT NBC RBF 1NN 3NN LMN REL RFF SIM LFE LDA SOD hIN IM4 IGT"
TABLE2_ROWS = {
    "BCW": "61.4 66.6 71.4 70.5 62.4 56.9 68.2 72.2 69.5 66.4 67.1 67.7 67.1 73.9 65.2 71.8 66.4 74.5",
    "CRY": "72.9 90.6 87.4 85.3 84.4 89.7 89.1 85.4 87.8 73.8 77.2 79.7 86.0 88.6 86.0 87.9 86.2 89.8",
    "CUS": "86.5 88.9 89.6 89.6 89.5 86.8 86.5 88.7 88.8 82.1 84.7 84.3 86.4 90.3 90.8 90.3 87.5 90.1",
    "ECO": "92.9 96.9 98.6 98.6 97.8 94.6 96.0 97.8 97.8 89.0 90.7 91.2 93.1 99.0 97.9 98.7 97.5 98.2",
    "GLA": "64.2 76.7 72.3 79.4 69.5 73.0 81.1 78.1 79.4 64.1 63.5 67.1 81.2 72.0 75.3 75.0 78.0 87.5",
    "HMS": "63.8 64.5 67.7 72.5 67.2 66.8 66.0 69.3 71.2 65.3 66.0 65.7 64.9 69.0 67.4 69.4 66.6 69.2",
    "LYM": "83.6 81.5 85.2 75.2 83.6 71.1 77.2 82.8 86.6 64.9 71.0 70.4 79.6 85.2 79.3 84.8 83.3 87.2",
    "MON": "74.4 91.7 75.0 86.4 74.0 68.2 75.1 84.4 84.9 61.4 61.8 65.0 64.8 74.4 91.9 97.2 75.6 99.5",
    "PAR": "72.7 72.5 77.1 84.8 74.1 71.5 94.6 91.4 91.8 87.3 90.3 84.6 94.0 85.6 88.2 89.5 83.2 93.8",
    "PID": "65.6 73.1 74.7 74.3 71.2 70.3 70.3 73.5 74.0 64.8 68.0 67.0 67.8 74.5 75.7 74.1 72.1 74.7",
    "STA": "69.8 71.6 70.8 68.9 71.0 69.5 67.8 70.8 71.3 59.7 64.0 63.0 66.7 71.3 71.8 69.2 70.8 75.9",
    "WIN": "98.3 99.3 98.6 93.1 97.3 97.2 96.4 96.6 96.5 87.2 95.0 95.0 93.8 99.7 92.9 98.9 98.2 99.0",
}
TABLE3_HEADER = "ADB RF XGB BIM"
TABLE3_ROWS = {
    "BCW": "78.2 78.6 78.6 78.3",
    "CRY": "90.4 92.9 89.9 91.5",
    "CUS": "90.8 91.1 91.4 91.0",
    "ECO": "98.0 98.9 98.2 98.6",
    "GLA": "85.0 87.0 87.9 86.8",
    "HMS": "65.8 72.1 70.0 72.0",
    "LYM": "84.8 87.0 87.4 88.1",
    "MON": "98.4 95.8 99.1 99.7",
    "PAR": "90.5 91.0 91.9 93.2",
    "PID": "73.5 76.0 75.1 76.2",
    "STA": "69.0 71.3 69.5 74.1",
    "WIN": "97.5 99.1 98.2 99.1",
}
TABLE1_HEADER = "SV1 SV2 LAS DT NBC 1NN 3NN SOD RF XGB IM4 EGT B4G"
TABLE1_ROWS = {
    "COL": "73.7 82.0 80.6 69.2 71.1 72.1 77.9 78.1 82.6 79.5 84.3 78.6 82.5",
    "BRE": "76.0 88.7 91.4 76.4 69.4 83.0 73.6 82.6 86.3 87.3 88.1 90.2 91.5",
    "PRO": "71.3 69.9 87.9 86.4 68.0 83.2 82.7 83.2 91.8 90.5 88.0 89.5 89.7",
}
# Paper Table 4 (Appendix A): features x instances the authors report.
TABLE4 = {
    "BCW": (9, 116),
    "CRY": (6, 90),
    "CUS": (7, 440),
    "ECO": (5, 220),
    "GLA": (9, 146),
    "HMS": (3, 306),
    "LYM": (16, 142),
    "MON": (6, 432),
    "PAR": (22, 194),
    "PID": (8, 768),
    "STA": (12, 256),
    "WIN": (13, 130),
    "COL": (2000, 62),
    "BRE": (24481, 78),
    "PRO": (12600, 136),
}
TRANSCRIPTION_NOTES = [
    "Tables transcribed from a text export of the paper (Entropy 2020); numeric cells of the "
    "rows used here are intact (one dataset per line, cell counts match the headers: checked at run time).",
    "Garbling in the export: the Table 1/2/3 (W,T,L) rows carry a stray footnote marker "
    "'W,T,L{}^{1}'; CRO/ELE/WAV carry '{}^{*}' (large-scale sets, not run here); Table 2's "
    "hierNet column is spelled 'hIN'. None of these affect the numbers used.",
    "B4G (boosted IM4E-IMMIGRATE) exists only in Table 1 (microarray); there is no UCI B4G or "
    "UCI EGT column. BIM exists only in Table 3 (UCI).",
]


def paper_row(header: str, row: str) -> dict:
    cols, vals = header.split(), row.split()
    assert len(cols) == len(vals), (header, row)
    return {c: float(v) for c, v in zip(cols, vals)}


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def _two_largest(ds: Dataset) -> Dataset:
    vals, cnt = np.unique(ds.y, return_counts=True)
    if len(vals) <= 2:
        return ds
    keep_codes = vals[np.argsort(-cnt, kind="stable")[:2]]
    mask = np.isin(ds.y, keep_codes)
    y, cls = _encode(ds.classes[ds.y[mask]])
    ds2 = Dataset(ds.name, ds.X[mask], y, ds.feature_names, cls, ds.source, list(ds.notes))
    ds2.notes.append(
        f"two largest classes kept (paper §4.2.2): {[str(c) for c in cls]}, "
        f"{mask.sum()} of {len(mask)} rows"
    )
    return ds2


def _from_frame(df: pd.DataFrame, label: str, name: str, source: str) -> Dataset:
    y, classes = _encode(df[label].to_numpy())
    Xdf = df.drop(columns=[label])
    return Dataset(
        name, Xdf.to_numpy(dtype=np.float64), y, [str(c) for c in Xdf.columns], classes, source
    )


def load_bcw() -> Dataset:
    rel = "breast-cancer/wpbc.data"
    df = pd.read_csv(data_path(rel), header=None, na_values="?")
    n0 = len(df)
    df = df.dropna()
    df = df.drop(columns=[0, 2])  # ID, Time (recurrence / disease-free time: outcome-related)
    ds = _from_frame(df.rename(columns={1: "outcome"}), "outcome", "BCW", rel)
    ds.notes += [
        f"UCI wpbc (Breast Cancer Wisconsin Prognostic): dropped ID and Time columns and the "
        f"{n0 - len(df)} rows with '?' in lymph-node status -> {ds.X.shape[0]} x {ds.X.shape[1]}",
        "the paper's Table 4 gives BCW as 116 x 9, which matches UCI Breast Cancer Coimbra "
        "(116 x 9), not wpbc (198 x 33): the paper probably used a different data set than its "
        "label says; Coimbra is run as BCW-Coimbra",
    ]
    return ds


def load_bcw_coimbra() -> Dataset:
    rel = "breast-cancer/dataR2.csv"
    df = pd.read_csv(data_path(rel), encoding="utf-8-sig")  # CRLF, byte-order mark
    ds = _from_frame(df, "Classification", "BCW-Coimbra", rel)
    ds.notes.append(
        "UCI Breast Cancer Coimbra (dataR2.csv), 116 x 9, label Classification (1 healthy, "
        "2 patient), every feature continuous: the size the paper's Table 4 gives for BCW, so "
        "scored against the paper's BCW row"
    )
    return ds


def load_cry() -> Dataset:
    rel = "cryotherapy/Cryotherapy.csv"
    ds = _from_frame(pd.read_csv(data_path(rel)), "Result_of_Treatment", "CRY", rel)
    ds.notes.append("derived CSV of the UCI xlsx; 90 x 6")
    return ds


def load_cus() -> Dataset:
    rel = "wholesale-customers/Wholesale customers data.csv"
    df = pd.read_csv(data_path(rel)).drop(columns=["CustomerID"])
    ds = _from_frame(df, "Channel", "CUS", rel)
    ds.notes.append(
        "label Channel; mirror's CustomerID dropped; Region kept as a feature (7 features)"
    )
    return ds


def load_eco() -> Dataset:
    ds = _two_largest(load_pmlb("ecoli/ecoli.tsv.gz", "ECO"))
    keep = [j for j, n in enumerate(ds.feature_names) if n not in ("lip", "chg")]
    ds.X = ds.X[:, keep]
    ds.feature_names = [ds.feature_names[j] for j in keep]
    ds.notes.append(
        "PMLB ecoli; binary features lip and chg dropped (chg is constant and lip nearly so on "
        "the two classes kept) to match the paper's 5 features (Table 4: 5 x 220)"
    )
    return ds


def load_gla() -> Dataset:
    return _two_largest(load_pmlb("glass/glass.tsv.gz", "GLA"))


def load_hms() -> Dataset:
    return load_pmlb("haberman/haberman.tsv.gz", "HMS")


def load_lym() -> Dataset:
    ds = _two_largest(load_pmlb("lymphography/lymphography.tsv.gz", "LYM"))
    ds.notes.append(
        "PMLB lymphography has 18 features; the paper's Table 4 says 16 (which two "
        "were dropped is not stated; none is constant on the two classes) -> all 18 kept"
    )
    return ds


def load_mon() -> Dataset:
    ds = load_pmlb("monks/monk1.tsv.gz", "MON")
    _, idx = np.unique(np.column_stack([ds.X, ds.y]), axis=0, return_index=True)
    idx = np.sort(idx)
    n0 = ds.X.shape[0]
    ds.X, ds.y = ds.X[idx], ds.y[idx]
    ds.notes.append(
        f"MONK-1 (PMLB monk1 = train+test, {n0} rows) deduplicated to its {len(idx)} distinct "
        "rows = the full 432-row UCI monks-1 test set (paper Table 4: 6 x 432). MONK-1 rather "
        "than -2/-3: the paper's linear baselines (LAS 75.0, LDA 74.4, NBC 74.0) sit at 75 %, "
        "the accuracy of the best rule linear in one-hot features on MONK-1 ('a5 = 1'); on "
        "MONK-2 the majority class alone gives 67 % and MONK-3 is ~97 % linearly separable"
    )
    return ds


def load_par() -> Dataset:
    try:
        import rdata
    except ImportError:
        return _load_par_uci()
    rel = "parkinsons/park.rda"
    park = rdata.conversion.convert(rdata.parser.parse_file(data_path(rel)))["park"]
    X = np.asarray(park["xx"], dtype=np.float64)
    y, classes = _encode(np.asarray(park["yy"]))
    ds = Dataset("PAR", X, y, [f"x{j}" for j in range(X.shape[1])], classes, rel)
    ds.notes.append(
        f"the authors' own copy (park.rda from their R package), {X.shape[0]} x {X.shape[1]}, "
        "already standardised by them (we standardise again on each training fold)"
    )
    return ds


def _load_par_uci() -> Dataset:
    rel = "parkinsons/parkinsons.data"
    df = pd.read_csv(data_path(rel)).drop(columns=["name"])
    ds = _from_frame(df, "status", "PAR", rel)
    ds.notes.append(
        "UCI parkinsons.data 195 x 22 ('name' dropped): the authors' 194-row park.rda needs the "
        "'rdata' package (bench extra), not installed"
    )
    return ds


def load_pid() -> Dataset:
    return load_pmlb("pima/pima.tsv.gz", "PID")


def load_sta() -> Dataset:
    ds = load_pmlb("heart/heart_statlog.tsv.gz", "STA")
    ds.notes.append("PMLB heart_statlog 270 x 13; the paper's Table 4 says 256 x 12 (unexplained)")
    return ds


def load_win() -> Dataset:
    return _two_largest(load_pmlb("wine/wine_recognition.tsv.gz", "WIN"))


# Columns the UCI attribute descriptions give as categorical (nominal, binary or ordered codes);
# the paper standardises only the continuous ones.  Counts (HMS nodes, CRY Number_of_Warts, BCW
# lymph-node status, STA number_of_major_vessels, listed as "real" by UCI) count as continuous.
CATEGORICAL = {
    "CRY": ["sex", "Type"],
    "CUS": ["Region"],
    "LYM": "all",  # every lymphography attribute is a coded category or a binned count
    "MON": "all",  # six nominal attributes
    "STA": [
        "sex",
        "chest",
        "fasting_blood_sugar",
        "resting_electrocardiographic_results",
        "exercise_induced_angina",
        "slope",
        "thal",
    ],  # UCI: binary 2,6,9; nominal 3,7,13; ordered 11
}


def categorical_columns(name: str, ds: Dataset) -> list[int]:
    cat = CATEGORICAL.get(name, [])
    if cat == "all":
        return list(range(ds.X.shape[1]))
    missing = set(cat) - set(ds.feature_names)
    assert not missing, (name, missing)
    return [ds.feature_names.index(c) for c in cat]


def normalise(Xtr, Xte, categorical, mode="continuous"):
    """Standardise the continuous columns with the training fold's mean and sd (constants -> 0);
    categorical columns keep their codes unless ``mode == "all"``; ``mode == "none"`` leaves both."""
    from sklearn.preprocessing import StandardScaler

    if mode == "none":
        return Xtr, Xte
    cont = np.ones(Xtr.shape[1], bool)
    if mode == "continuous":
        cont[categorical] = False
    if not cont.any():
        return Xtr, Xte
    sc = StandardScaler().fit(Xtr[:, cont])
    Xtr, Xte = Xtr.copy(), Xte.copy()
    Xtr[:, cont] = sc.transform(Xtr[:, cont])
    Xte[:, cont] = sc.transform(Xte[:, cont])
    return Xtr, Xte


UCI = {
    "BCW": load_bcw,
    "BCW-Coimbra": load_bcw_coimbra,
    "CRY": load_cry,
    "CUS": load_cus,
    "ECO": load_eco,
    "GLA": load_gla,
    "HMS": load_hms,
    "LYM": load_lym,
    "MON": load_mon,
    "PAR": load_par,
    "PID": load_pid,
    "STA": load_sta,
    "WIN": load_win,
}


def load_col() -> Dataset:
    ds = load_skf_mat("colon/colon.mat", "COL")
    ds.notes.append("Alon colon, scikit-feature colon.mat, 62 x 2000 (same as the paper's COL)")
    return ds


def _csv_last(rel: str, name: str) -> Dataset:
    df = pd.read_csv(data_path(rel))
    label = df.columns[-1]
    return _from_frame(df, label, name, rel)


def load_pro() -> Dataset:
    ds = _csv_last("prostate-ge/singh.csv.gz", "PRO")
    ds.notes.append(
        "Singh prostate, datamicroarray singh (derived CSV) 102 x 12600; the paper's "
        "Table 4 says 136 x 12600 (probably training + independent test set)"
    )
    return ds


def load_bre() -> Dataset:
    ds = _csv_last("breast-west/west.csv.gz", "BRE*")
    ds.notes.append(
        "STAND-IN: West et al. 2001 breast ER status, 49 x 7129 (datamicroarray west). "
        "The paper's BRE is van't Veer 2002, 78 x 24481 - a different study; numbers "
        "are not directly comparable"
    )
    return ds


MICRO = {"COL": load_col, "PRO": load_pro, "BRE": load_bre}

# Our sets scored against a paper row of another name: the Coimbra copy stands for the paper's
# BCW (its Table 4 size), beside the wpbc copy its name points to.
PAPER_NAME = {"BCW-Coimbra": "BCW"}


def paper_name(name: str) -> str:
    return PAPER_NAME.get(name, name.rstrip("*"))


def matches_table4(name: str, ds: Dataset) -> bool:
    """Whether our copy has the paper's size (Table 4: features x instances)."""
    return TABLE4[paper_name(name)] == (ds.X.shape[1], ds.X.shape[0])


# --------------------------------------------------------------------------------------------
# worker tasks
# --------------------------------------------------------------------------------------------
def _warn_key(w) -> str:
    """Warning class and message with numbers replaced by '#', so counts aggregate."""
    import re

    msg = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", str(w.message))[:200]
    return f"{w.category.__name__}: {msg}"


def _acc(est, X, y) -> float:
    pred = est.predict(X)
    return float(np.mean(pred == y))


def _choose(scores, order_first=None):
    """Index of the best internal-CV score; ties go to ``order_first`` candidates (in order),
    then to the first index."""
    best = scores.max()
    if order_first is not None:
        for i in order_first:
            if scores[i] == best:
                return i
    return int(np.argmax(scores))


def uci_fold_task(
    name,
    loader,
    rep,
    fold,
    seed,
    do_igt,
    bim_estimators,
    folds=10,
    inner=10,
    normalisation="continuous",
    scope="fold",
    init="identity",
    sigmas=tuple(SIGMA_GRID),
    ceiling=True,
):
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier

    import dmargin

    ds = loader()
    X, y = ds.X, ds.y
    A = X.shape[1]
    sigmas = list(sigmas)
    outer = StratifiedKFold(folds, shuffle=True, random_state=seed + rep)
    tr, te = list(outer.split(X, y))[fold]
    cat = categorical_columns(name, ds)
    if scope == "whole":
        # normalised once with the whole set's statistics (before any split), as a data set
        # stored standardised would be; the folds then see these values as they are
        X = normalise(X, X[:1], cat, normalisation)[0]
        normalisation = "none"
    # init="random": one seeded W0 per outer fold, shared by its inner and final fits
    igt_init = {"init": init, "random_state": seed + 1000 * rep + fold}
    Xtr, Xte = normalise(X[tr], X[te], cat, normalisation)
    ytr, yte = y[tr], y[te]
    out = {
        "dataset": name,
        "rep": rep,
        "fold": fold,
        "errors": [],
        "warnings": collections.Counter(),
    }
    with warnings.catch_warnings(record=True) as wlog:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        if do_igt:
            knn = KNeighborsClassifier(1).fit(Xtr, ytr)
            out["1NN"] = float(np.mean(knn.predict(Xte) == yte))
            # Internal CV: IGT over (fit sigma, prune) x prediction sigma, IM4 over sigma.
            inner_cv = StratifiedKFold(inner, shuffle=True, random_state=seed + 1000 * rep + fold)
            grid_igt = [(s, p) for p in (None, 1.0 / A) for s in sigmas]
            S = np.zeros((len(grid_igt), len(sigmas)))  # S[fit point, prediction sigma]
            sc_im4 = np.zeros(len(sigmas))
            for itr, iva in inner_cv.split(Xtr, ytr):
                # normalised again with the inner training rows' statistics: nested, no leak
                Xi, Xv = normalise(X[tr][itr], X[tr][iva], cat, normalisation)
                yi, yv = ytr[itr], ytr[iva]
                for g, (s, p) in enumerate(grid_igt):
                    try:
                        m = dmargin.Immigrate(
                            sigma=s, prune=p, max_iter=10, scale=None, **igt_init
                        ).fit(Xi, yi)
                        for k, sp in enumerate(sigmas):
                            S[g, k] += _acc(m.set_params(prediction_sigma=sp), Xv, yv)
                    except Exception as exc:  # recorded, grid point scores 0 for this fold
                        out["errors"].append(f"IGT inner sigma={s} prune={p}: {exc!r}")
                for g, s in enumerate(sigmas):
                    try:
                        m = dmargin.IM4E(sigma=s, scale=None).fit(Xi, yi)
                        sc_im4[g] += _acc(m, Xv, yv)
                    except Exception as exc:
                        out["errors"].append(f"IM4 inner sigma={s}: {exc!r}")
            own = [sigmas.index(s) for s, _ in grid_igt]  # eq. 3.18: predict at the fitted sigma
            sc_own = S[np.arange(len(grid_igt)), own]
            sc_r = S[:, sigmas.index(1.0)]  # the R package: sigma = 1 at prediction
            g_own, g_r = _choose(sc_own), _choose(sc_r)
            flat = S.ravel()
            g_d, k_d = divmod(
                _choose(flat, [g * S.shape[1] + own[g] for g in range(len(grid_igt))]), S.shape[1]
            )
            choices = {"IGT": (g_own, None), "IGT_R": (g_r, 1.0), "IGT_D": (g_d, sigmas[k_d])}
            fits = {}
            t1 = time.perf_counter()
            for key, (g, sp) in choices.items():
                s, p = grid_igt[g]
                try:
                    if (
                        g not in fits
                    ):  # W does not depend on the prediction sigma: one fit per point
                        fits[g] = dmargin.Immigrate(
                            sigma=s, prune=p, max_iter=10, scale=None, **igt_init
                        ).fit(Xtr, ytr)
                    out[key] = _acc(fits[g].set_params(prediction_sigma=sp), Xte, yte)
                except Exception as exc:
                    out["errors"].append(f"{key} final sigma={s} prune={p}: {exc!r}")
            out["IGT_refit_s"] = time.perf_counter() - t1
            if ceiling:
                # Every grid point on the outer training part, scored on the test fold at every
                # prediction sigma: averaged over the trials, the best cell is what a fixed
                # grid point picked with the test folds would score (optimistic by design).
                T = np.full(S.shape, np.nan)
                for g, (s, p) in enumerate(grid_igt):
                    try:
                        if g not in fits:
                            fits[g] = dmargin.Immigrate(
                                sigma=s, prune=p, max_iter=10, scale=None, **igt_init
                            ).fit(Xtr, ytr)
                        for k, sp in enumerate(sigmas):
                            T[g, k] = _acc(fits[g].set_params(prediction_sigma=sp), Xte, yte)
                    except Exception as exc:
                        out["errors"].append(f"ceiling sigma={s} prune={p}: {exc!r}")
                out["IGT_grid_test"] = T.tolist()
            if g_own in fits:
                out["IGT_n_iter"] = int(fits[g_own].n_iter_)
                if not np.all(np.isfinite(fits[g_own].weight_matrix_)):
                    out["errors"].append("IGT: non-finite weight matrix")
            s, p = grid_igt[g_own]
            out["IGT_choice"] = {"sigma": s, "prune": p is not None}
            s, p = grid_igt[g_d]
            out["IGT_D_choice"] = {
                "sigma": s,
                "prune": p is not None,
                "prediction_sigma": sigmas[k_d],
            }
            # The rule (eq. 3.18 or R) as one more hyperparameter; ties go to eq. 3.18.
            use_r = sc_r.max() > sc_own.max()
            out["IGT_CV"] = out.get("IGT_R") if use_r else out.get("IGT")
            out["IGT_CV_rule"] = "R" if use_r else "eq. 3.18"
            s4 = sigmas[int(np.argmax(sc_im4))]
            try:
                m = dmargin.IM4E(sigma=s4, scale=None).fit(Xtr, ytr)
                out["IM4"] = _acc(m, Xte, yte)
            except Exception as exc:
                out["errors"].append(f"IM4 final sigma={s4}: {exc!r}")
            out["IM4_sigma"] = s4
            out["igt_task_s"] = time.perf_counter() - t0
        if bim_estimators:
            t2 = time.perf_counter()
            try:
                m = dmargin.BoostedImmigrate(
                    n_estimators=bim_estimators,
                    sigma_max=4.0,
                    sigma_min=0.2,
                    max_iter=5,
                    scale=None,
                ).fit(Xtr, ytr)
                out["BIM"] = _acc(m, Xte, yte)
                n_kept = getattr(m, "estimators_", None)
                out["BIM_n_learners"] = None if n_kept is None else len(n_kept)
            except Exception as exc:
                out["errors"].append(f"BIM: {exc!r}\n{traceback.format_exc(limit=3)}")
            out["BIM_fit_s"] = time.perf_counter() - t2
    for w in wlog:
        out["warnings"][_warn_key(w)] += 1
    out["warnings"] = dict(out["warnings"])
    return out


def micro_fold_task(name, loader, rep, fold, seed, folds=10):
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler

    import dmargin

    ds = loader()
    X, y = ds.X, ds.y
    outer = StratifiedKFold(folds, shuffle=True, random_state=seed + rep)
    tr, te = list(outer.split(X, y))[fold]
    Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    out = {
        "dataset": name,
        "rep": rep,
        "fold": fold,
        "errors": [],
        "warnings": collections.Counter(),
    }
    with warnings.catch_warnings(record=True) as wlog:
        warnings.simplefilter("always")
        sc = StandardScaler().fit(Xtr)
        knn = KNeighborsClassifier(1).fit(np.nan_to_num(sc.transform(Xtr)), ytr)
        out["1NN"] = float(np.mean(knn.predict(np.nan_to_num(sc.transform(Xte))) == yte))
        for key, make in (
            ("IM4", lambda: dmargin.IM4E(sigma=1.0)),
            ("EGT", lambda: dmargin.IM4EImmigrate(sigma=1.0, max_iter=10)),
        ):
            t = time.perf_counter()
            try:
                m = make().fit(Xtr, ytr)
                out[f"{key}_fit_s"] = time.perf_counter() - t
                out[key] = _acc(m, Xte, yte)
                if key == "EGT":
                    out["EGT_n_kept"] = int(m.weight_matrix_.shape[0])
            except Exception as exc:
                out[f"{key}_fit_s"] = time.perf_counter() - t
                out["errors"].append(f"{key}: {exc!r}")
    for w in wlog:
        out["warnings"][_warn_key(w)] += 1
    out["warnings"] = dict(out["warnings"])
    return out


# --------------------------------------------------------------------------------------------
# aggregation
# --------------------------------------------------------------------------------------------
def _stats(vals):
    v = np.asarray([x for x in vals if x is not None], dtype=float)
    if v.size == 0:
        return None
    return {
        "mean": round(100 * v.mean(), 2),
        "std": round(100 * v.std(ddof=1), 2) if v.size > 1 else None,
        "trials": int(v.size),
    }


def _sd_of_mean(vals, reps):
    by_rep = collections.defaultdict(list)
    for v, r in zip(vals, reps):
        if v is not None:
            by_rep[r].append(v)
    means = [100 * np.mean(v) for v in by_rep.values()]
    return round(float(np.std(means, ddof=1) / np.sqrt(len(means))), 2) if len(means) > 1 else None


def _merge_warn(results):
    c = collections.Counter()
    for r in results:
        c.update(r["warnings"])
    return dict(c)


def _ceiling(grids, sigmas):
    """Mean test accuracy of every (fit sigma, prune, prediction sigma) cell over the trials, and
    the best cell overall and on eq. 3.18's diagonal (prediction sigma = fitted sigma)."""
    if not grids:
        return None
    M = 100 * np.nanmean(np.asarray(grids, float), axis=0)  # [fit point, prediction sigma]
    points = [(s, p) for p in ("off", "on") for s in sigmas]

    def cell(g, k):
        return {
            "mean": round(float(M[g, k]), 2),
            "sigma": points[g][0],
            "prune": points[g][1],
            "prediction_sigma": sigmas[k],
        }

    g, k = np.unravel_index(np.nanargmax(M), M.shape)
    own = np.array([M[g2, sigmas.index(s)] for g2, (s, _) in enumerate(points)])
    g2 = int(np.nanargmax(own))
    return {
        "best": cell(int(g), int(k)),
        "best_eq_3_18": cell(g2, sigmas.index(points[g2][0])),
        "trials": len(grids),
        "grid_mean": {
            f"sigma={s},prune={p}": [round(float(v), 2) for v in M[i]]
            for i, (s, p) in enumerate(points)
        },
        "prediction_sigmas": list(sigmas),
    }


def summarise_uci(name, ds, results, args):
    paper = paper_row(TABLE2_HEADER, TABLE2_ROWS[paper_name(name)])
    paper3 = paper_row(TABLE3_HEADER, TABLE3_ROWS[paper_name(name)])
    igt_rows = [r for r in results if "igt_task_s" in r]
    bim_rows = [r for r in results if "BIM_fit_s" in r]
    ours = {
        "IGT": _stats([r.get("IGT") for r in igt_rows]),
        "IGT_R": _stats([r.get("IGT_R") for r in igt_rows]),
        "IGT_CV": _stats([r.get("IGT_CV") for r in igt_rows]),
        "IGT_D": _stats([r.get("IGT_D") for r in igt_rows]),
        "IM4": _stats([r.get("IM4") for r in igt_rows]),
        "1NN": _stats([r.get("1NN") for r in igt_rows]),
        "BIM": _stats([r.get("BIM") for r in bim_rows]),
    }
    choices = collections.Counter(
        f"sigma={r['IGT_choice']['sigma']},prune={'on' if r['IGT_choice']['prune'] else 'off'}"
        for r in igt_rows
    )
    ceiling = _ceiling([r["IGT_grid_test"] for r in igt_rows if "IGT_grid_test" in r], args.sigmas)
    gap = None if ours["IGT"] is None else round(ours["IGT"]["mean"] - paper["IGT"], 2)
    return {
        "n": int(ds.X.shape[0]),
        "A": int(ds.X.shape[1]),
        "classes_used": {str(k): v for k, v in ds.class_counts().items()},
        "source": ds.source,
        "data_notes": ds.notes,
        "categorical_columns": [ds.feature_names[j] for j in categorical_columns(name, ds)],
        "paper_row": paper_name(name),
        "paper_table4_features_x_instances": TABLE4[paper_name(name)],
        "matches_table4_size": matches_table4(name, ds),
        "protocol_run": {
            "IGT/IM4/1NN": f"{args.reps} x stratified 10-fold CV ({len(igt_rows)} trials); "
            f"internal stratified {args.inner_folds}-fold CV: IGT over sigma {args.sigmas} x prune "
            f"{{off, 1/A}}, IM4 over sigma {args.sigmas}; max_iter=10",
            "BIM": f"{args.bim_reps} x stratified 10-fold CV ({len(bim_rows)} trials); "
            f"n_estimators={args.bim_estimators}, sigma 4 -> 0.2, max_iter=5, no tuning",
        },
        "ours": ours,
        "paper": {
            "IGT": paper["IGT"],
            "BIM": paper3["BIM"],
            "IM4": paper["IM4"],
            "1NN": paper["1NN"],
            "EGT": None,
            "B4G": None,
        },
        "paper_table2_full_row": paper,
        "paper_table3_full_row": paper3,
        "diff_IGT_ours_minus_paper": gap,
        "diff_IGT_R_rule_ours_minus_paper": None
        if ours["IGT_R"] is None
        else round(ours["IGT_R"]["mean"] - paper["IGT"], 2),
        "diff_IGT_CV_rule_ours_minus_paper": None
        if ours["IGT_CV"] is None
        else round(ours["IGT_CV"]["mean"] - paper["IGT"], 2),
        "IGT_CV_rule_choices": dict(collections.Counter(r.get("IGT_CV_rule") for r in igt_rows)),
        "diff_IGT_D_ours_minus_paper": None
        if ours["IGT_D"] is None
        else round(ours["IGT_D"]["mean"] - paper["IGT"], 2),
        "IGT_D_choices": dict(
            collections.Counter(
                "sigma={sigma},prune={p},prediction_sigma={prediction_sigma}".format(
                    p="on" if r["IGT_D_choice"]["prune"] else "off", **r["IGT_D_choice"]
                )
                for r in igt_rows
                if "IGT_D_choice" in r
            )
        ),
        "diff_BIM_ours_minus_paper": None
        if ours["BIM"] is None
        else round(ours["BIM"]["mean"] - paper3["BIM"], 2),
        "IGT_hyperparameter_choices": dict(choices),
        "IGT_ceiling": ceiling,
        # sd of the 10x10-fold mean from the splits: the spread of the repetition means / sqrt(reps)
        "sd_of_mean_over_repetitions": {
            k: _sd_of_mean([r.get(k) for r in igt_rows], [r["rep"] for r in igt_rows])
            for k in ("IGT_D", "IGT", "1NN")
        },
        "IGT_n_iter_mean": round(float(np.mean([r.get("IGT_n_iter", np.nan) for r in igt_rows])), 2)
        if igt_rows
        else None,
        "time_s": {
            "igt_im4_1nn_task_mean": round(float(np.mean([r["igt_task_s"] for r in igt_rows])), 2)
            if igt_rows
            else None,
            "bim_fit_mean": round(float(np.mean([r["BIM_fit_s"] for r in bim_rows])), 2)
            if bim_rows
            else None,
        },
        "per_trial_accuracy": {
            k: [None if r.get(k) is None else round(r[k], 4) for r in rows]
            for k, rows in (
                ("IGT", igt_rows),
                ("IGT_R", igt_rows),
                ("IGT_CV", igt_rows),
                ("IGT_D", igt_rows),
                ("IM4", igt_rows),
                ("1NN", igt_rows),
                ("BIM", bim_rows),
            )
        },
        "errors": [e for r in results for e in r["errors"]],
        "warnings": _merge_warn(results),
    }


def summarise_micro(name, ds, results, args):
    paper = paper_row(TABLE1_HEADER, TABLE1_ROWS[name.rstrip("*")])
    ours = {k: _stats([r.get(k) for r in results]) for k in ("IM4", "EGT", "1NN")}
    return {
        "n": int(ds.X.shape[0]),
        "A": int(ds.X.shape[1]),
        "classes_used": {str(k): v for k, v in ds.class_counts().items()},
        "source": ds.source,
        "data_notes": ds.notes,
        "paper_table4_features_x_instances": TABLE4[name.rstrip("*")],
        "protocol_run": f"{args.micro_reps} x stratified 10-fold CV ({len(results)} trials); IM4E(sigma=1) and "
        "IM4EImmigrate(sigma=1, threshold=2/A default, max_iter=10); no internal CV",
        "ours": ours,
        "paper": {
            "IM4": paper["IM4"],
            "EGT": paper["EGT"],
            "B4G": paper["B4G"],
            "1NN": paper["1NN"],
            "IGT": None,
            "BIM": None,
        },
        "paper_table1_full_row": paper,
        "diff_EGT_ours_minus_paper": None
        if ours["EGT"] is None
        else round(ours["EGT"]["mean"] - paper["EGT"], 2),
        "diff_IM4_ours_minus_paper": None
        if ours["IM4"] is None
        else round(ours["IM4"]["mean"] - paper["IM4"], 2),
        "fit_time_per_fold_s": {
            k: {"mean": round(float(np.mean(v)), 2), "max": round(float(np.max(v)), 2)}
            for k in ("IM4", "EGT")
            if (v := [r[f"{k}_fit_s"] for r in results if f"{k}_fit_s" in r])
        },
        "EGT_features_kept_mean": round(
            float(np.mean([r["EGT_n_kept"] for r in results if "EGT_n_kept" in r])), 1
        )
        if any("EGT_n_kept" in r for r in results)
        else None,
        "errors": [e for r in results for e in r["errors"]],
        "warnings": _merge_warn(results),
    }


REASONS = {
    "BCW": "different data: the paper's BCW is 116 x 9 (= UCI Breast Cancer Coimbra per its Table 4, run as "
    "BCW-Coimbra), this row is wpbc 194 x 32",
    "STA": "different copy: paper 256 x 12, ours Statlog heart 270 x 13",
    "PAR": "the authors' own 194-row copy (park.rda); the remaining gap is protocol or implementation",
    "LYM": "different copy: paper 16 features, ours 18 (every one a coded category, kept as codes)",
    "MON": "six nominal attributes, kept as codes; IMMIGRATE's update does not converge on MONK-1 (W cycles, "
    "ConvergenceWarning), and eq. 3.18 at the fitted sigma loses ~12 points against a prediction sigma "
    "below the fitted one (columns 'eq. 3.18 at fitted sigma' and 'IGT ours')",
    "ECO": "feature subset/class merge (two largest classes, 5 features) may differ slightly from the paper's",
}


def _fmt(s):
    return (
        None
        if s is None
        else f"{s['mean']:.1f} ± {s['std']:.1f}"
        if s.get("std") is not None
        else f"{s['mean']:.1f}"
    )


def build_markdown(uci, micro, args):
    def delta(d, key):
        g = d[key]
        return None if g is None else f"{g:+.1f}"

    rows = []
    for name, d in uci.items():
        o, p = d["ours"], d["paper"]
        ceil = d.get("IGT_ceiling")
        rows.append(
            [
                name,
                d["n"],
                d["A"],
                p["IGT"],
                _fmt(o["IGT_D"]),
                delta(d, "diff_IGT_D_ours_minus_paper"),
                None if ceil is None else f"{ceil['best']['mean']:.1f}",
                _fmt(o["IGT"]),
                delta(d, "diff_IGT_ours_minus_paper"),
                _fmt(o["IGT_R"]),
                _fmt(o["IGT_CV"]),
                _fmt(o["BIM"]),
                p["BIM"],
                _fmt(o["IM4"]),
                p["IM4"],
                _fmt(o["1NN"]),
                p["1NN"],
            ]
        )
    norm = (
        "continuous features standardised, categorical codes kept"
        if args.normalise == "continuous"
        else "every feature standardised"
    )
    md = [
        f"UCI sets (Tables 2-3; two largest classes; {norm}; IGT/IM4/1NN {args.reps}x10-fold CV, "
        f"BIM {args.bim_reps}x10-fold with T={args.bim_estimators}; accuracy %, mean ± sd over folds):",
        "",
        harness.markdown_table(
            [
                "data",
                "n",
                "A",
                "IGT paper",
                "IGT ours",
                "Δ",
                "ceiling",
                "IGT ours, eq. 3.18 at fitted σ",
                "Δ",
                "R rule",
                "rule by CV",
                "BIM ours",
                "BIM paper",
                "IM4 ours",
                "IM4 paper",
                "1NN ours",
                "1NN paper",
            ],
            rows,
        ),
        "",
        "IGT ours: sigma, pruning and the prediction sigma of eq. 3.18 chosen per outer fold by one "
        "internal CV (the verdict column). Eq. 3.18 at fitted σ: the prediction sigma tied to the "
        "fitted one (dmargin's default, `prediction_sigma=None`). Ceiling: the best single grid "
        "point (fit sigma, pruning, prediction sigma) picked with the test folds themselves, an "
        "optimistic bound no internal CV can be expected to reach. R rule: sigma = 1 at prediction, "
        "as the authors' R package does by default (`prediction_sigma=1.0`). Rule by CV: the "
        "internal CV picks between those two (ties to eq. 3.18). All four come from the same inner "
        "fits; W does not depend on the prediction sigma.",
    ]
    if micro:
        mrows = []
        for name, d in micro.items():
            o, p = d["ours"], d["paper"]
            ft = d["fit_time_per_fold_s"].get("EGT", {})
            mrows.append(
                [
                    name,
                    d["n"],
                    d["A"],
                    _fmt(o["EGT"]),
                    p["EGT"],
                    _fmt(o["IM4"]),
                    p["IM4"],
                    p["B4G"],
                    _fmt(o["1NN"]),
                    p["1NN"],
                    ft.get("mean"),
                ]
            )
        md += [
            "",
            f"Microarray sets (Table 1; {args.micro_reps}x10-fold CV, sigma = 1 fixed):",
            "",
            harness.markdown_table(
                [
                    "data",
                    "n",
                    "A",
                    "EGT ours",
                    "EGT paper",
                    "IM4 ours",
                    "IM4 paper",
                    "B4G paper",
                    "1NN ours",
                    "1NN paper",
                    "EGT fit s/fold",
                ],
                mrows,
            ),
        ]
    notes = []
    for name, d in uci.items():
        g = d["diff_IGT_D_ours_minus_paper"]
        if g is not None and abs(g) > 1.0:
            notes.append(f"- {name} (Δ {g:+.1f}): {gap_reason(name, d, args)}")
    if notes:
        md += ["", "IGT gaps over 1 point, most plausible reasons:", *notes]
    return "\n".join(md)


def gap_reason(name, d, args):
    parts = []
    if name in REASONS:
        parts.append(REASONS[name])
    o = d["ours"]
    g = d["diff_IGT_D_ours_minus_paper"]
    sd = d.get("sd_of_mean_over_repetitions", {}).get("IGT_D")
    if sd:
        # the paper's mean is taken to carry the same split noise as ours
        z = abs(g) / (np.sqrt(2) * sd)
        parts.append(
            f"{'within' if z < 2 else 'beyond'} split noise: {z:.1f} sd of the difference of two "
            f"10x10-fold means (sd of our mean {sd:.2f}, from its repetition means)"
        )
    ceil = d.get("IGT_ceiling")
    if ceil is not None and ceil["best"]["mean"] < d["paper"]["IGT"]:
        b = ceil["best"]
        parts.append(
            f"even the best single grid point picked with the test folds scores {b['mean']:.1f} "
            f"(sigma {b['sigma']}, pruning {b['prune']}, prediction sigma {b['prediction_sigma']})"
            + (
                ": no choice of sigma, pruning or prediction sigma comes within a point of the paper "
                "on these data"
                if b["mean"] < d["paper"]["IGT"] - 1.0
                else ", below the paper's mean"
            )
        )
    # 1NN as a probe of data/protocol differences: if our 1NN is also off, the data copy differs
    p1, o1 = d["paper"]["1NN"], o["1NN"]["mean"] if o["1NN"] else None
    if o1 is not None and abs(o1 - p1) > 2:
        parts.append(
            f"our 1NN also differs from the paper's by {o1 - p1:+.1f}, pointing to data/split differences "
            "rather than the IMMIGRATE implementation"
        )
    elif o1 is not None:
        parts.append(
            f"our 1NN matches the paper's within {abs(o1 - p1):.1f} points, so the data agree; the gap is "
            f"protocol (the {args.inner_folds}-fold internal CV and its ties, the splits) or implementation"
        )
    return "; ".join(parts)


# --------------------------------------------------------------------------------------------
def main(argv=None):
    ap = harness.options(__doc__, quick="CRY and HMS, 1 repetition, BIM T=5, COL only")
    ap.add_argument(
        "--reps", type=int, default=10, help="repetitions of 10-fold CV for IGT/IM4/1NN"
    )
    ap.add_argument("--inner-folds", type=int, default=10, help="folds of the internal CV")
    ap.add_argument("--bim-reps", type=int, default=2)
    ap.add_argument("--bim-estimators", type=int, default=100)
    ap.add_argument("--micro-reps", type=int, default=1)
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--micro", nargs="*", default=None)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument(
        "--normalise",
        choices=("continuous", "all"),
        default="continuous",
        help="standardise the continuous features only (the paper) or every feature",
    )
    ap.add_argument(
        "--scope",
        choices=("fold", "whole"),
        default="fold",
        help="normalise with each training part's statistics (default) or once with the whole set's",
    )
    ap.add_argument(
        "--init",
        choices=("identity", "random"),
        default="identity",
        help="IMMIGRATE's initial W: the R package's I/sqrt(A) or a seeded random one (paper text)",
    )
    ap.add_argument(
        "--sigmas",
        type=float,
        nargs="+",
        default=SIGMA_GRID,
        help="sigma grid of the internal CV (fitting and prediction)",
    )
    ap.add_argument("--n-jobs", type=int, default=2)
    args = harness.parse_args(ap, argv)
    if 1.0 not in args.sigmas:
        ap.error("--sigmas must contain 1 (the R package's rule predicts at sigma = 1)")
    if args.quick:
        args.reps, args.bim_reps, args.bim_estimators, args.micro_reps = 1, 1, 5, 1
        args.datasets = args.datasets or ["CRY", "HMS"]
        args.micro = args.micro if args.micro is not None else ["COL"]
    uci_names = args.datasets or list(UCI)
    micro_names = args.micro if args.micro is not None else list(MICRO)

    from joblib import Parallel, delayed

    tasks = []
    # microarray first (long tasks), then UCI; within UCI the expensive sets first
    for name in micro_names:
        for rep in range(args.micro_reps):
            for fold in range(10):
                tasks.append(
                    ("micro", delayed(micro_fold_task)(name, MICRO[name], rep, fold, args.seed))
                )
    order = sorted(uci_names, key=lambda n: -UCI[n]().X.shape[0])
    for name in order:
        for rep in range(max(args.reps, args.bim_reps)):
            for fold in range(10):
                do_igt = rep < args.reps
                bim = args.bim_estimators if rep < args.bim_reps else 0
                tasks.append(
                    (
                        "uci",
                        delayed(uci_fold_task)(
                            name,
                            UCI[name],
                            rep,
                            fold,
                            args.seed,
                            do_igt,
                            bim,
                            inner=args.inner_folds,
                            normalisation=args.normalise,
                            scope=args.scope,
                            init=args.init,
                            sigmas=tuple(args.sigmas),
                        ),
                    )
                )
    print(f"{len(tasks)} tasks on {args.n_jobs} processes", flush=True)
    t0 = time.perf_counter()
    res = Parallel(n_jobs=args.n_jobs, verbose=5)(t for _, t in tasks)
    wall = time.perf_counter() - t0

    uci, micro = {}, {}
    for name in uci_names:
        uci[name] = summarise_uci(
            name,
            UCI[name](),
            [
                r
                for r in res
                if r["dataset"] == name
                and "BIM_fit_s" in r
                or r["dataset"] == name
                and "igt_task_s" in r
            ],
            args,
        )
    for name in micro_names:
        micro[name] = summarise_micro(
            name,
            MICRO[name](),
            [r for r in res if r["dataset"] == name and ("EGT" in r or "IM4_fit_s" in r)],
            args,
        )
    shares = {}
    for col, key in (
        ("prediction sigma by CV", "diff_IGT_D_ours_minus_paper"),
        ("eq. 3.18 at the fitted sigma", "diff_IGT_ours_minus_paper"),
        ("R rule", "diff_IGT_R_rule_ours_minus_paper"),
        ("rule by CV", "diff_IGT_CV_rule_ours_minus_paper"),
    ):
        gaps = [d[key] for d in uci.values() if d[key] is not None]
        within = int(sum(g >= -1.0 for g in gaps))
        shares[col] = {
            "count": within,
            "of": len(gaps),
            "share": round(within / len(gaps), 3) if gaps else None,
        }
    # The verdict over the sets whose copy has the paper's size (Table 4): a gap on another copy
    # (wpbc for BCW, Statlog heart for STA, 18-feature LYM) says nothing about the implementation.
    same = {
        n: d["diff_IGT_D_ours_minus_paper"]
        for n, d in uci.items()
        if d["matches_table4_size"] and d["diff_IGT_D_ours_minus_paper"] is not None
    }
    share_same = {
        "count": int(sum(g >= -1.0 for g in same.values())),
        "of": len(same),
        "sets": sorted(same),
        "column": "prediction sigma by CV",
    }
    md = build_markdown(uci, micro, args)
    result = {
        "benchmark": "immigrate_accuracy",
        "paper": "Zhao, Hong & Liu, IMMIGRATE, Entropy 22(3) 2020, §4.2, Tables 1-3",
        "quick": args.quick,
        "dmargin_git": harness.git_revision(harness.REPO),
        "machine": harness.machine_info(
            ["dmargin", "numpy", "scipy", "scikit-learn", "pandas", "numba", "joblib"]
        ),
        "wall_time_s": round(wall, 1),
        "n_jobs": args.n_jobs,
        "seed": args.seed,
        "protocol": {
            "paper": "10 x 10-fold CV (100 trials); sigma by internal CV, halving from 4 'until it is not "
            "larger than 0.2' (4, 2, 1, 0.5, 0.25 and the 0.125 where the halving stops); "
            "pruning at 1/A on/off by internal CV; 10 steps; BIM T=100, sigma 4 -> 0.2; EGT threshold 2/A",
            "ours_uci": f"IGT/IM4/1NN: {args.reps} x stratified 10-fold CV; internal stratified "
            f"{args.inner_folds}-fold CV "
            f"(grid IGT: {len(args.sigmas)} sigma {args.sigmas} x prune off/on(1/A) = "
            f"{2 * len(args.sigmas)} fits, each scored at {len(args.sigmas)} prediction sigmas; "
            f"IM4: {len(args.sigmas)} sigma); normalisation: {args.normalise} "
            f"({'per training part' if args.scope == 'fold' else 'once on the whole set'}); "
            f"initial W: {args.init}; "
            f"ties -> first grid point (prune off first, sigma descending); Immigrate(max_iter=10, "
            f"tol=0 library default: exactly 10 steps, as the paper; IM4E likewise)",
            "ours_bim": f"BoostedImmigrate(n_estimators={args.bim_estimators}, sigma_max=4, sigma_min=0.2, max_iter=5) "
            f"on {args.bim_reps} x 10-fold (the first {args.bim_reps} of the IGT repetitions, same splits)",
            "ours_micro": f"IM4E(sigma=1), IM4EImmigrate(sigma=1, threshold=2/A, max_iter=10): {args.micro_reps} x "
            "stratified 10-fold CV, no internal CV for sigma",
            "reductions": [
                f"UCI IGT/IM4/1NN: {args.reps} repetitions of 10-fold CV instead of 10 (fewer trials: wider error bars)",
                *(
                    []
                    if args.inner_folds == 10
                    else [
                        f"internal CV: {args.inner_folds}-fold (paper does not state the fold count)"
                    ]
                ),
                f"BIM: {args.bim_reps} repetitions instead of 10; T = {args.bim_estimators}"
                + ("" if args.bim_estimators == 100 else " instead of 100"),
                f"microarray: {args.micro_reps} repetition(s) instead of 10; sigma fixed at 1 (no internal CV); "
                "B4G (boosted EGT) not run",
                "outer folds stratified (paper: unstated)",
                "UCI sets not run (not shared): IMM, ION, SMR, URB, USE, CRO, ELE, WAV; microarray GLI, ELO; "
                "BRE replaced by a different study (West 2001)",
            ],
        },
        "paper_transcription_notes": TRANSCRIPTION_NOTES,
        "uci": uci,
        "microarray": micro,
        "uci_share_within_1pt_of_paper_IGT_or_better": shares,
        "uci_share_within_1pt_table4_size_match": share_same,
        "markdown": md
        + (
            "\n\nUCI sets with IGT within 1.0 point of the paper or better: "
            + "; ".join(f"{c['count']} of {c['of']} ({col})" for col, c in shares.items())
            + f"; over the sets of the paper's size (Table 4): {share_same['count']} of {share_same['of']} "
            "(prediction sigma by CV)."
            if uci
            else ""
        ),
    }
    out = harness.write_variant(
        "immigrate_accuracy", result, variant=args.variant, quick=args.quick
    )
    print(result["markdown"])
    print(f"wall {wall:.0f} s -> {out}")


if __name__ == "__main__":
    main()
