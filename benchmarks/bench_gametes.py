"""The Relief authors' own benchmark: the GAMETES pure 2-way epistasis core (Urbanowicz et al. 2018).

Data: ``rebate-benchmark/`` of the shared data (``--data``; see its README.md): 20 SNPs
(0/1/2), N in {200, 400, 800, 1600}, heritability h in {0.05, 0.1, 0.2, 0.4}, two models
(EDM-1, EDM-2), 30 replicates each: 32 configurations, 960 files.  Target ``Class`` (0/1);
the predictive SNPs ``M0P0`` and ``M0P1`` form a pure 2-way interaction (no main effect),
the 18 others are noise.

Measured per file and method: each feature's rank by the method's scores (1 = largest; a
feature tied with others takes the worst rank of its group, so a tie never counts as a
success), and from those, per configuration, the paper's measure -- *detection*, the share of
the 30 replicates in which both ``M0P0`` and ``M0P1`` score above every noise feature -- and
the mean rank of the worse-ranked of the two (2 when detected).

Methods (``METHODS``: name, factory, how to rank; a new estimator is one line): dmargin's
``ReliefF`` (k = 10 and k = 100), ``SURF``, ``SURFstar``, ``MultiSURF``, ``MultiSURFstar``,
the SWRF family (``SWRF``, ``SWRFstar``, ``MultiSWRF``, ``MultiSWRFstar``, ``MultiSWRFDB``,
``MultiSWRFDBstar``), ``MuRelief`` (``n_neighbors=100``, the default of both libraries, and
``n_neighbors=10`` as ReliefF's first row),
``TuRF(MultiSURF(), pct=0.5)``, ``IRelief`` and ``Immigrate``, the last ranked two ways: by
the diagonal of its weight matrix (``feature_importances_``) and by each feature's largest
off-diagonal entry; for it *interaction detection* is the share of replicates whose largest
off-diagonal entry pairs ``M0P0`` with ``M0P1``.  Library defaults
except: ``ReliefF`` gets ``discrete_threshold=10`` (skrebate's default
``categorical_threshold``, the setting of the paper's runs; dmargin's default 0 is Weka's
numeric treatment), and TuRF removes half the surviving features per round (skrebate's
default ``pct=0.5``; with 20 features and skrebate's ``num_scores_to_return=100`` that is
one elimination round, then a fit on the 10 survivors).  Each estimator gets the file's
integer genotypes as they are read.

Beside them, skrebate 0.8.4's ``ReliefF`` (k = 10, 100), ``SURF``, ``SURFstar``,
``MultiSURF``, ``MultiSURFstar``, its six SWRF classes, ``MuRelief`` and
``TURF(MultiSURF(), pct=0.5)`` on the same files (``--skrebate-replicates R``: replicates 1..R
of every configuration; skrebate is much slower), with, per method, the largest absolute
difference between dmargin's and skrebate's scores over the files where both ran, and the
number of files on which they differ by more than 1e-10.  For the SWRF family each file is
also searched for skrebate's knife edge (``knife_edges``): an (anchor, row) pair whose
distance lies exactly at the anchor's threshold, in integer mismatch counts (``k * cells ==
sum k`` for a mean; for MultiSWRFDB's dead band ``mu -/+ sigma / 2``, the same test squared).
skrebate compares the distance with its threshold in floating point (``np.mean``'s rounding),
which may put such a row in a set it scores; dmargin compares exactly and scores it in
neither.  Per file: the pairs, and those skrebate scores (``knife_edge_pairs``,
``knife_edge_scored``); per method, how many of the files over 1e-10 a scored pair explains.
skrebate's ``MuRelief`` departs from dmargin's rule in three ways (it walks the anchor as its
own candidate hit, orders rows of equal key by an unstable sort, and compares the key ``|d -
mean|`` in floating point, where dmargin compares ``|n_c K - S_c|`` in mismatch counts); after
its timed fit on each file it is refitted with them undone one at a time
(``murelief_departures``), and the comparison counts, for skrebate as run and for each refit,
the files within 1e-10 of dmargin and those where detection agrees.

Every fit is timed alone (``time.perf_counter`` around ``fit``) in worker processes of one
thread each (``--jobs J`` of them side by side); a worker first fits every method once on
the first file it is given, untimed (numba's compilation; reported apart).  ``--stop-at
HH:MM`` (UTC) stops handing out files at that time and stores what finished with
``complete: false``.

Usage::

    python benchmarks/bench_gametes.py --jobs 2                          # all 960 files, skrebate on all
    python benchmarks/bench_gametes.py --jobs 2 --skrebate-replicates 10 # skrebate on replicates 1..10
    python benchmarks/bench_gametes.py --quick                           # 4 files, every method
    python benchmarks/bench_gametes.py --first-replicate 4 --replicates 8 --variant reps-4-8  # a slice
    python benchmarks/bench_gametes.py --rerender --variant NAME         # the table again, no fits
    python benchmarks/bench_gametes.py --merge --methods "SWRF,SWRF*"    # add methods to a variant

``--methods A,B,...`` runs only the named methods (``METHODS``' names).  ``--merge`` runs them
on the files of the stored ``--variant`` (skrebate on the files where it ran there) and adds
their results to it, leaving the other methods' results as they were: a method added later
needs no re-run of the others.  The variant records each merge (``merged``: its methods,
command, commit, date, CPU load and time).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shlex
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
from _datasets import data_dir, missing  # noqa: E402

BENCHMARK = "gametes"
PREDICTIVE = ("M0P0", "M0P1")
TARGET = "Class"
SIZES = (200, 400, 800, 1600)
HERITABILITIES = (0.05, 0.1, 0.2, 0.4)
MODELS = ("EDM-1", "EDM-2")
REPLICATES = 30
FILE_RE = re.compile(r"a_20s_(\d+)her_([\d.]+)__maf_0\.2_(EDM-\d)_(\d+)\.txt\.gz$")
QUICK_FILES = [
    (200, 0.4, "EDM-1", 1),
    (1600, 0.4, "EDM-1", 1),
    (1600, 0.05, "EDM-2", 1),
    (400, 0.2, "EDM-2", 2),
]
#: Scores within this of skrebate's count as equal (dmargin's design tolerance).
AGREE = 1e-10
PACKAGES = ["dmargin", "numpy", "numba", "pandas", "scikit-learn", "skrebate"]


# --------------------------------------------------------------------------- #
# methods
# --------------------------------------------------------------------------- #
def _diagonal(est) -> np.ndarray:
    return np.asarray(est.feature_importances_, dtype=np.float64)


def _largest_offdiagonal(est) -> np.ndarray:
    """Each feature's largest off-diagonal entry of IMMIGRATE's weight matrix."""
    W = np.array(est.weight_matrix_, dtype=np.float64)
    np.fill_diagonal(W, -np.inf)
    return W.max(axis=1)


def _dm(name, **params):
    def make():
        import dmargin

        return getattr(dmargin, name)(**params)

    return make


def _dm_turf():
    import dmargin

    return dmargin.TuRF(dmargin.MultiSURF(), pct=0.5, keep=100)


def _sk(name, **params):
    def make():
        import skrebate

        return getattr(skrebate, name)(**params)

    return make


def _sk_turf():
    import skrebate

    return skrebate.TURF(skrebate.MultiSURF(), pct=0.5, num_scores_to_return=100)


class Method(NamedTuple):
    name: str
    make: Callable  # () -> unfitted estimator; rows with the same factory share one fit
    rank: Callable = _diagonal  # fitted estimator -> one score per feature (larger = better)
    skrebate: Callable | None = None  # () -> skrebate's twin, compared score for score


_immigrate = _dm("Immigrate")
METHODS = [
    Method(
        "ReliefF k=10",
        _dm("ReliefF", n_neighbors=10, discrete_threshold=10),
        _diagonal,
        _sk("ReliefF", n_neighbors=10),
    ),
    Method(
        "ReliefF k=100",
        _dm("ReliefF", n_neighbors=100, discrete_threshold=10),
        _diagonal,
        _sk("ReliefF", n_neighbors=100),
    ),
    Method("SURF", _dm("SURF"), _diagonal, _sk("SURF")),
    Method("SURF*", _dm("SURFstar"), _diagonal, _sk("SURFstar")),
    Method("MultiSURF", _dm("MultiSURF"), _diagonal, _sk("MultiSURF")),
    Method("MultiSURF*", _dm("MultiSURFstar"), _diagonal, _sk("MultiSURFstar")),
    Method("SWRF", _dm("SWRF"), _diagonal, _sk("SWRF")),
    Method("SWRF*", _dm("SWRFstar"), _diagonal, _sk("SWRFstar")),
    Method("MultiSWRF", _dm("MultiSWRF"), _diagonal, _sk("MultiSWRF")),
    Method("MultiSWRF*", _dm("MultiSWRFstar"), _diagonal, _sk("MultiSWRFstar")),
    Method("MultiSWRFDB", _dm("MultiSWRFDB"), _diagonal, _sk("MultiSWRFDB")),
    Method("MultiSWRFDB*", _dm("MultiSWRFDBstar"), _diagonal, _sk("MultiSWRFDBstar")),
    Method(
        "MuRelief", _dm("MuRelief", n_neighbors=100), _diagonal, _sk("MuRelief", n_neighbors=100)
    ),
    Method(
        "MuRelief k=10", _dm("MuRelief", n_neighbors=10), _diagonal, _sk("MuRelief", n_neighbors=10)
    ),
    Method("TuRF(MultiSURF)", _dm_turf, _diagonal, _sk_turf),
    Method("I-RELIEF", _dm("IRelief")),
    Method("IMMIGRATE diag", _immigrate, _diagonal),
    Method("IMMIGRATE off-diag", _immigrate, _largest_offdiagonal),
]
#: The IMMIGRATE rows whose top pair is checked (interaction detection).
PAIR_METHODS = ("IMMIGRATE off-diag",)
#: The SWRF rows' thresholds (``knife_edge_pairs``): the matrix's mean, the anchor's mean, or
#: the anchor's dead band; and whether the far side is used.
KNIFE_EDGE = {
    "SWRF": ("matrix", False),
    "SWRF*": ("matrix", True),
    "MultiSWRF": ("anchor", False),
    "MultiSWRF*": ("anchor", True),
    "MultiSWRFDB": ("band", False),
    "MultiSWRFDB*": ("band", True),
}


def select(names: list[str] | None) -> list[Method]:
    """The rows of ``METHODS`` named in ``names`` (all of them for ``None``), in their order."""
    if names is None:
        return list(METHODS)
    unknown = set(names) - {m.name for m in METHODS}
    if unknown:
        raise SystemExit(
            f"bench_gametes: unknown method(s) {sorted(unknown)}; the methods: "
            + ", ".join(m.name for m in METHODS)
        )
    return [m for m in METHODS if m.name in names]


def pair_distances(X) -> tuple[np.ndarray, np.ndarray]:
    """Each pair of rows' number of mismatched SNPs ``K`` and skrebate's distance ``D`` (the
    same ``pdist(X, "hamming")`` call on the same floats: ``K / 20`` to rounding)."""
    from scipy.spatial.distance import pdist, squareform

    X = np.asarray(X)
    K = np.zeros((len(X), len(X)), dtype=np.int64)
    for col in X.T:
        K += col[:, None] != col[None, :]
    return K, squareform(pdist(X.astype(np.float64), metric="hamming"))


def knife_edges(K: np.ndarray, D: np.ndarray, name: str) -> tuple[int, int]:
    """(anchor, row) pairs of an SWRF row at exactly a threshold; how many skrebate scores.

    Exactly, in integers: for a mean of ``cells`` distances summing to ``S``, a row ``k``
    mismatches away is on it when ``k * cells == S`` (SWRF: the N x N matrix, its zero diagonal
    included, as skrebate's mean; MultiSWRF: the anchor's N - 1 others).  For MultiSWRFDB's
    edges ``mu -/+ sigma / 2`` (``c = N - 1`` others, sums ``S``, ``Q`` of ``k`` and ``k^2``):
    ``4 (S - c k)^2 == c Q - S^2``, ``S - c k`` of the edge's sign; the far edge only for the
    starred variant.  The second count: the pairs skrebate's own floating-point comparison
    (``baseswrf.py``: ``d < t`` near, ``d > t`` far, ``t`` from ``np.mean`` and ``np.std`` of
    the anchor's distances in its order, or of the matrix's rows concatenated) puts in a set
    the method scores, where an exact comparison puts them in none.
    """
    kind, far = KNIFE_EDGE[name]
    n = len(K)
    others = ~np.eye(n, dtype=bool)
    if kind == "matrix":
        edge = (K * (n * n) == K.sum()) & others
        near_t = far_t = np.concatenate([np.array(row) for row in D]).mean()
    else:
        c = n - 1
        S = K.sum(axis=1, keepdims=True)  # the diagonal is 0
        rows = [D[i][others[i]] for i in range(n)]  # skrebate's dist_vect: j != i, in order
        mu = np.array([[np.mean(r)] for r in rows])
        if kind == "anchor":
            edge = (K * c == S) & others
            near_t = far_t = mu
        else:
            half = np.array([[np.std(r) / 2.0] for r in rows])
            gap = S - c * K  # c (mu - k)
            on = (4 * gap * gap == c * (K * K).sum(axis=1, keepdims=True) - S * S) & others
            edge = (on & (gap >= 0)) | ((on & (gap <= 0)) if far else False)
            near_t, far_t = mu - half, mu + half
    scored = edge & ((D < near_t) | ((D > far_t) if far else False))
    return int(edge.sum()), int(scored.sum())


#: skrebate's MuRelief refitted with its departures from dmargin's rule undone one at a time,
#: each step on top of the ones before (``murelief_departures``).
MURELIEF_STEPS = ("no_self", "no_self_stable", "dmargin_order")


def murelief_departures(make: Callable, X, y, predictive: list[int]) -> dict:
    """skrebate's MuRelief on one file, refitted without its departures from dmargin's rule.

    skrebate (``murelief.py``, ``_find_neighbors``) walks ``np.argsort(key)[::-1]``, the key
    ``|d - mean of the row's class|``, and takes each class's first ``n_neighbors`` rows.  Its
    ``argsort`` is replaced, step by step: ``no_self`` -- the anchor (key 0, walked as a
    candidate hit) leaves the candidates, the order otherwise skrebate's; ``no_self_stable``
    -- rows of equal key lowest row first (a stable sort on skrebate's floating-point key);
    ``dmargin_order`` -- the key compared exactly, ``|n_c K - S_c|`` in mismatch counts ``K``
    (``n_c``, ``S_c``: the count and sum of the anchor's class-``c`` others), dmargin's rule:
    two rows whose distances lie symmetrically about the mean tie exactly, where skrebate's
    floating-point mean breaks the tie by its rounding.  Discrete data only (GAMETES: skrebate's
    distance is ``K / 20``).  Returns each step's scores and ranks, and how many anchors the
    unpatched walk took as their own hit (the walk reaches the anchor before its class's
    other rows have filled the hits).
    """
    import types

    import skrebate.murelief as sk_murelief

    Xf = X.to_numpy(np.float64)
    p = Xf.shape[1]
    walk = sk_murelief.MuRelief._find_neighbors
    state = {"own_hits": 0}

    def order(key):
        est, inst, step = state["est"], state["inst"], state["step"]
        key = np.asarray(key)
        if step == "no_self":
            o = np.argsort(key)  # skrebate's own sort, walked reversed
            walked = o[::-1]
            ahead = walked[: int(np.flatnonzero(walked == inst)[0])]
            state["own_hits"] += int(np.sum(est._y[ahead] == est._y[inst]) < est.n_neighbors)
            return o[o != inst]
        if step == "dmargin_order":
            K = np.rint(np.asarray(est._distance_array[inst]) * p).astype(np.int64)
            exact = np.zeros(len(K), dtype=np.int64)
            for c in np.unique(est._y):
                rows = est._y == c
                rows[inst] = False
                n, S = int(rows.sum()), int(K[rows].sum())
                exact[rows] = np.abs(n * K[rows] - S)
                # the same key as skrebate's, to rounding: only its ties are decided differently
                assert np.allclose(exact[rows] / (n * p), key[rows], rtol=0, atol=1e-12)
            key = exact
        o = np.argsort(-key, kind="stable")[::-1]  # skrebate reverses it: largest key, lowest row
        return o[o != inst]

    def find(self, inst):
        state["est"], state["inst"] = self, inst
        return walk(self, inst)

    patched = types.SimpleNamespace(
        **{k: getattr(np, k) for k in dir(np) if not k.startswith("__")}
    )
    patched.argsort = order
    scores = {}
    try:
        sk_murelief.np = patched
        sk_murelief.MuRelief._find_neighbors = find
        for step in MURELIEF_STEPS:
            state["step"] = step
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scores[step] = np.asarray(make().fit(Xf, y).feature_importances_, dtype=np.float64)
    finally:
        sk_murelief.np = np
        sk_murelief.MuRelief._find_neighbors = walk
    return {
        "anchors_own_hit": state["own_hits"],
        "rows": len(y),
        "scores": {k: v.tolist() for k, v in scores.items()},
        "ranks": {k: [int(ranks_of(v)[i]) for i in predictive] for k, v in scores.items()},
    }


#: skrebate rows refitted without their departures from dmargin's rule, after the timed fit.
DEPARTURES = {"MuRelief": murelief_departures, "MuRelief k=10": murelief_departures}


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def default_data() -> Path:
    return data_dir() / "rebate-benchmark"


def find_files(root: Path) -> list[dict]:
    """Every GAMETES file under ``root``: ``{"path", "file", "N", "h", "model", "rep"}``."""
    core = root / "core2way"
    if not core.is_dir() and root == default_data():
        missing("rebate-benchmark/core2way", "data folder")  # one line, exit status 77
    if not core.is_dir():
        raise SystemExit(
            f"bench_gametes: no GAMETES data at {core}.  The benchmark reads the shared data's "
            "rebate-benchmark/ folder (see its README.md): pass --data DIR, or set DMARGIN_DATA to "
            "the shared data directory (default: <repo>/../shared/data)."
        )
    files = []
    for path in sorted(core.rglob("*.txt.gz")):
        m = FILE_RE.search(path.name)
        if m:
            files.append(
                {
                    "path": str(path),
                    "file": str(path.relative_to(root)),
                    "N": int(m.group(1)),
                    "h": float(m.group(2)),
                    "model": m.group(3),
                    "rep": int(m.group(4)),
                }
            )
    return files


def load(path: str):
    import pandas as pd

    df = pd.read_csv(path, sep="\t")
    y = df.pop(TARGET).to_numpy()
    return df, y


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """Rank of each feature, 1 = largest; a tie takes the worst rank of its group."""
    return np.array([int(np.sum(scores >= s)) for s in scores])


# --------------------------------------------------------------------------- #
# worker side
# --------------------------------------------------------------------------- #
_WARM = {}


def _warm_up(engine: str, X, y, methods: list[Method]) -> float:
    """Fit every method of ``engine`` once, untimed, on the worker's first file (numba's
    compilation)."""
    if engine in _WARM:
        return 0.0
    start = time.perf_counter()
    makes = [m.make if engine == "dmargin" else m.skrebate for m in methods]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in {id(mk): mk for mk in makes if mk is not None}.values():
            make().fit(X if engine == "dmargin" else X.to_numpy(np.float64), y)
    _WARM[engine] = time.perf_counter() - start
    return _WARM[engine]


def run_file(engine: str, info: dict, names: list[str] | None = None) -> dict:
    """Fit every method of ``engine`` (``dmargin`` or ``skrebate``) on one file (the methods
    in ``names`` only, when given)."""
    X, y = load(info["path"])
    methods = select(names)
    warm = _warm_up(engine, X, y, methods)
    cols = list(X.columns)
    pi = [cols.index(c) for c in PREDICTIVE]
    fits, out = {}, {}
    pairs = None  # the knife-edge test's distances, computed once a file
    for m in methods:
        make = m.make if engine == "dmargin" else m.skrebate
        if make is None:
            continue
        if id(make) not in fits:
            est = make()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start, cpu0 = time.perf_counter(), time.process_time()
                est.fit(X if engine == "dmargin" else X.to_numpy(np.float64), y)
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
            fits[id(make)] = (est, seconds, cpu, sorted({w.category.__name__ for w in caught}))
        est, seconds, cpu, caught = fits[id(make)]
        scores = m.rank(est)
        r = ranks_of(scores)
        res = {
            "ranks": [int(r[i]) for i in pi],
            "fit_s": seconds,
            "cpu_s": cpu,
            "warnings": caught,
            "scores": scores.tolist(),
        }
        if m.name in PAIR_METHODS:
            W = np.array(est.weight_matrix_, dtype=np.float64)
            iu, ju = np.triu_indices(W.shape[0], k=1)
            off = W[iu, ju]
            a, b = sorted(pi)
            pair = off[(iu == a) & (ju == b)][0]
            top = int(np.argmax(off))
            res["top_pair"] = [cols[iu[top]], cols[ju[top]]]
            res["pair_rank"] = int(np.sum(off >= pair))  # of 190; ties: worst rank
            res["pair_detected"] = bool(res["pair_rank"] == 1)
        if engine == "skrebate" and m.name in KNIFE_EDGE:  # after the timed fit
            pairs = pair_distances(X) if pairs is None else pairs
            res["knife_edge_pairs"], res["knife_edge_scored"] = knife_edges(*pairs, m.name)
        if engine == "skrebate" and m.name in DEPARTURES:  # after the timed fit
            res["departures"] = DEPARTURES[m.name](m.skrebate, X, y, pi)
        out[m.name] = res
    return {
        "engine": engine,
        "file": info["file"],
        "warm_up_s": warm,
        "methods": out,
        "pid": os.getpid(),
    }


# --------------------------------------------------------------------------- #
# parent side: summaries and the table
# --------------------------------------------------------------------------- #
def config_key(f: dict) -> str:
    return f"N={f['N']} h={f['h']:g} {f['model']}"


def summarise(files: list[dict], runs: dict, engine: str, names: list[str]) -> dict:
    """Per configuration and method: files, detection share, mean worse rank."""
    out = {}
    for f in files:
        run = runs.get((engine, f["file"]))
        if run is None:
            continue
        cfg = out.setdefault(
            config_key(f), {"N": f["N"], "h": f["h"], "model": f["model"], "methods": {}}
        )
        for name in names:
            res = run["methods"].get(name)
            if res is None:
                continue
            s = cfg["methods"].setdefault(name, {"files": 0, "detected": 0, "worse_rank_sum": 0})
            worse = max(res["ranks"])
            s["files"] += 1
            s["detected"] += int(worse <= 2)
            s["worse_rank_sum"] += worse
            if "pair_detected" in res:
                s["pair_detected"] = s.get("pair_detected", 0) + int(res["pair_detected"])
    for cfg in out.values():
        for s in cfg["methods"].values():
            s["detection"] = round(s["detected"] / s["files"], 4)
            s["mean_worse_rank"] = round(s.pop("worse_rank_sum") / s["files"], 3)
            if "pair_detected" in s:
                s["interaction_detection"] = round(s["pair_detected"] / s["files"], 4)
    return out


def overall(summary: dict, names: list[str], where=lambda cfg: True) -> dict:
    tot = {}
    for cfg in summary.values():
        if not where(cfg):
            continue
        for name in names:
            s = cfg["methods"].get(name)
            if s is None:
                continue
            t = tot.setdefault(
                name, {"files": 0, "detected": 0, "rank_sum": 0.0, "pair_detected": 0}
            )
            t["files"] += s["files"]
            t["detected"] += s["detected"]
            t["rank_sum"] += s["mean_worse_rank"] * s["files"]
            t["pair_detected"] += s.get("pair_detected", 0)
    return {
        name: {
            "files": t["files"],
            "detection": round(t["detected"] / t["files"], 4),
            "mean_worse_rank": round(t["rank_sum"] / t["files"], 3),
            **(
                {"interaction_detection": round(t["pair_detected"] / t["files"], 4)}
                if name in PAIR_METHODS
                else {}
            ),
        }
        for name, t in tot.items()
        if t["files"]
    }


def compare_skrebate(files: list[dict], runs: dict, names: list[str] | None = None) -> dict:
    """Per skrebate-defined method (of ``names``, default all): files where both ran, largest
    |dmargin - skrebate|, where.

    For the SWRF rows also (``knife_edges``): the files holding a knife-edge pair, those where
    skrebate scores one, the files over the tolerance that it explains (skrebate scores one
    there) and those where it scores one yet the scores agree; and every file over the
    tolerance with its difference and knife-edge pairs.
    """
    out = {}
    for m in select(names):
        if m.skrebate is None:
            continue
        c = {
            "files": 0,
            "max_abs_diff": 0.0,
            "files_over_1e-10": 0,
            "worst_file": None,
            "detected_dmargin": 0,
            "detected_skrebate": 0,
            "fit_s_dmargin": 0.0,
            "fit_s_skrebate": 0.0,
            "cpu_s_dmargin": 0.0,
            "cpu_s_skrebate": 0.0,
        }
        if m.name in DEPARTURES:
            c["departures"] = {
                "anchors_own_hit": 0,
                "anchors": 0,
                "own_hit_files": 0,
                "steps": {
                    step: {
                        "files": 0,
                        "files_within_1e-10": 0,
                        "max_abs_diff": 0.0,
                        "detection_agrees": 0,
                        "files_over_1e-10_by_N": {},
                    }
                    for step in ("as_run", *MURELIEF_STEPS)
                },
            }
        if m.name in KNIFE_EDGE:
            c.update(
                {
                    "knife_edge_files": 0,
                    "knife_edge_scored_files": 0,
                    "files_over_1e-10_knife_edge": 0,
                    "files_within_1e-10_knife_edge": 0,
                    "over_1e-10": [],
                }
            )
        for f in files:
            d, s = runs.get(("dmargin", f["file"])), runs.get(("skrebate", f["file"]))
            if d is None or s is None:
                continue
            d, s = d["methods"][m.name], s["methods"][m.name]
            diff = float(np.max(np.abs(np.subtract(d["scores"], s["scores"]))))
            c["files"] += 1
            c["files_over_1e-10"] += int(diff > AGREE)
            if m.name in KNIFE_EDGE:
                edge, scored = s["knife_edge_pairs"], s["knife_edge_scored"]
                c["knife_edge_files"] += int(edge > 0)
                c["knife_edge_scored_files"] += int(scored > 0)
                c[
                    "files_over_1e-10_knife_edge"
                    if diff > AGREE
                    else "files_within_1e-10_knife_edge"
                ] += int(scored > 0)
                if diff > AGREE:
                    c["over_1e-10"].append(
                        {
                            "file": f["file"],
                            "max_abs_diff": diff,
                            "knife_edge_pairs": edge,
                            "knife_edge_scored": scored,
                        }
                    )
            if m.name in DEPARTURES:
                _add_departures(c, f, d, s)
            c["detected_dmargin"] += int(max(d["ranks"]) <= 2)
            c["detected_skrebate"] += int(max(s["ranks"]) <= 2)
            c["fit_s_dmargin"] += d["fit_s"]
            c["fit_s_skrebate"] += s["fit_s"]
            c["cpu_s_dmargin"] += d["cpu_s"]
            c["cpu_s_skrebate"] += s["cpu_s"]
            if diff >= c["max_abs_diff"] and c["files"]:
                c["max_abs_diff"] = diff
                c["worst_file"] = {
                    "file": f["file"],
                    "dmargin_scores": d["scores"],
                    "skrebate_scores": s["scores"],
                    "dmargin_ranks": d["ranks"],
                    "skrebate_ranks": s["ranks"],
                }
        c["fit_s_dmargin"] = round(c["fit_s_dmargin"], 3)
        c["fit_s_skrebate"] = round(c["fit_s_skrebate"], 3)
        c["cpu_s_dmargin"] = round(c["cpu_s_dmargin"], 3)
        c["cpu_s_skrebate"] = round(c["cpu_s_skrebate"], 3)
        out[m.name] = c
    return out


def _add_departures(c: dict, f: dict, d: dict, s: dict) -> None:
    """One file's share of a row's ``departures``: skrebate as run and each refit of
    ``murelief_departures`` against dmargin (scores to ``AGREE``, detection)."""
    dep, refit = c["departures"], s["departures"]
    dep["anchors_own_hit"] += refit["anchors_own_hit"]
    dep["anchors"] += refit["rows"]
    dep["own_hit_files"] += int(refit["anchors_own_hit"] > 0)
    detected = max(d["ranks"]) <= 2
    refits = [(k, refit["scores"][k], refit["ranks"][k]) for k in MURELIEF_STEPS]
    for step, scores, ranks in [("as_run", s["scores"], s["ranks"]), *refits]:
        e = dep["steps"][step]
        diff = float(np.max(np.abs(np.subtract(d["scores"], scores))))
        e["files"] += 1
        e["files_within_1e-10"] += int(diff <= AGREE)
        e["max_abs_diff"] = max(e["max_abs_diff"], diff)
        e["detection_agrees"] += int((max(ranks) <= 2) == detected)
        if diff > AGREE:
            by_n = e["files_over_1e-10_by_N"]
            by_n[str(f["N"])] = by_n.get(str(f["N"]), 0) + 1


def explain_relieff(comparison: dict, root: Path) -> dict:
    """Refit skrebate's ReliefF on each ReliefF row's worst file without its two known departures.

    skrebate (``ReliefF._find_neighbors``) walks ``np.argsort`` of the distances, an unstable
    sort, so rows tied at the k-th neighbour's distance enter in an arbitrary order (dmargin:
    lower row first); and the anchor itself sits last at distance ``sys.maxsize`` and counts as
    a hit when its class has fewer than k other rows.  Each difference is measured again with a
    stable argsort, then also with the anchor dropped from its own neighbours.
    """
    import types

    import skrebate
    import skrebate.relieff as sk_relieff

    out = {}
    for m in METHODS:
        c = comparison.get(m.name)
        # ReliefF itself: skrebate's SURF and SWRF classes derive from it with their own search
        if not (
            c
            and c["worst_file"]
            and c["max_abs_diff"] > AGREE
            and m.skrebate is not None
            and type(m.skrebate()) is skrebate.ReliefF
        ):
            continue
        X, y = load(str(root / c["worst_file"]["file"]))
        Xf = X.to_numpy(np.float64)
        d = np.asarray(c["worst_file"]["dmargin_scores"])
        stable = types.SimpleNamespace(
            **{k: getattr(np, k) for k in dir(np) if not k.startswith("__")}
        )
        stable.argsort = lambda a, *args, **kw: np.argsort(a, kind="stable")
        find = sk_relieff.ReliefF._find_neighbors
        own = [0]

        def without_self(self, inst):
            nn = find(self, inst)
            own[0] += int(np.any(nn == inst))
            return nn[nn != inst]

        res = {"file": c["worst_file"]["file"], "as_run": c["max_abs_diff"]}
        try:
            sk_relieff.np = stable
            res["stable_argsort"] = float(
                np.max(np.abs(d - m.skrebate().fit(Xf, y).feature_importances_))
            )
            sk_relieff.ReliefF._find_neighbors = without_self
            res["stable_argsort_no_self_hit"] = float(
                np.max(np.abs(d - m.skrebate().fit(Xf, y).feature_importances_))
            )
            res["anchors_own_neighbour"] = own[0]
            res["rows"] = len(y)
        finally:
            sk_relieff.np = np
            sk_relieff.ReliefF._find_neighbors = find
        out[m.name] = res
    return out


def timings(runs: dict, engine: str) -> dict:
    """Per method: fits, total fit seconds, and mean seconds per fit at each N."""
    out = {}
    for (eng, file), run in runs.items():
        if eng != engine:
            continue
        n = int(FILE_RE.search(file).group(1))
        for name, res in run["methods"].items():
            t = out.setdefault(name, {"fits": 0, "total_s": 0.0, "cpu_s": 0.0, "by_N": {}})
            t["fits"] += 1
            t["total_s"] += res["fit_s"]
            t["cpu_s"] += res["cpu_s"]
            b = t["by_N"].setdefault(str(n), [0, 0.0])
            b[0] += 1
            b[1] += res["fit_s"]
    for t in out.values():
        t["total_s"] = round(t["total_s"], 3)
        t["cpu_s"] = round(t["cpu_s"], 3)
        t["mean_s_by_N"] = {
            n: round(s / k, 4)
            for n, (k, s) in sorted(t.pop("by_N").items(), key=lambda kv: int(kv[0]))
        }
    return out


def _pct(x):
    return None if x is None else f"{100 * x:.0f}"


def render(report: dict) -> str:
    names = [m.name for m in METHODS]
    summary = report["summary"]
    headers = ["N", "h", "model", *names, "IMMIGRATE pair"]
    rows = []
    for n in SIZES:
        for h in HERITABILITIES:
            for model in MODELS:
                cfg = summary.get(f"N={n} h={h:g} {model}")
                if cfg is None:
                    continue
                ms = cfg["methods"]
                rows.append(
                    [
                        n,
                        f"{h:g}",
                        model,
                        *[_pct(ms[k]["detection"]) if k in ms else None for k in names],
                        _pct(ms.get(PAIR_METHODS[0], {}).get("interaction_detection")),
                    ]
                )
    for label, where in [
        ("all", lambda c: True),
        ("N=1600, h=0.4", lambda c: c["N"] == 1600 and c["h"] == 0.4),
    ]:
        tot = overall(summary, names, where)
        if tot:
            rows.append(
                [
                    f"**{label}**",
                    "",
                    "",
                    *[_pct(tot[k]["detection"]) if k in tot else None for k in names],
                    _pct(tot.get(PAIR_METHODS[0], {}).get("interaction_detection")),
                ]
            )
    tot = overall(summary, names)
    rows.append(
        [
            "mean worse rank (all)",
            "",
            "",
            *[tot[k]["mean_worse_rank"] if k in tot else None for k in names],
            None,
        ]
    )
    tm = report["timing"]["dmargin"]
    rows.append(
        [
            "fit CPU s (all files)",
            "",
            "",
            *[tm[k]["cpu_s"] if k in tm else None for k in names],
            None,
        ]
    )
    m = report["machine"]
    cpu = report["cpu"]
    head = (
        f"{' '.join(m['cpu_model'].split()[:2])}, {m['logical_cores']} cores; dmargin {m['versions']['dmargin']} "
        f"(commit {m['dmargin_git']['commit'][:7]}), skrebate {m['versions']['skrebate']}; {m['date'][:10]}. "
        "GAMETES pure 2-way epistasis core of Urbanowicz et al. 2018 "
        f"({report['files_done']['dmargin']} of {report['files_total']} files; 20 SNPs, predictive "
        "`M0P0`, `M0P1`, 30 replicates a configuration). Detection: % of the replicates in which both "
        "predictive SNPs score above all 18 noise SNPs (ties count as failures)."
    )
    notes = [
        "ReliefF with `discrete_threshold=10` (skrebate's default, the paper's setting); TuRF: "
        "`TuRF(MultiSURF(), pct=0.5)` (one elimination round to 10 features, then a fit on them); "
        "MuRelief: `n_neighbors=100` (both libraries' default) and 10; every other estimator with its "
        "defaults. IMMIGRATE diag: ranked by the diagonal of W; off-diag: each "
        "feature by its largest off-diagonal entry of W; IMMIGRATE pair: % of replicates whose largest "
        "off-diagonal entry is (`M0P0`, `M0P1`). Mean worse rank: the rank of the worse-ranked of the two "
        "(2 = detected, 20 = last). Fit CPU s: the sum over the files of each fit's CPU time (`time.process_time`; "
        "wall times are in the JSON), one thread a fit "
        f"({report['jobs']} fits side by side; other processes kept {cpu['other_cores_busy']} of the "
        f"{m['logical_cores']} cores busy on average during the run, which inflates the wall times more than "
        "the CPU times); "
        "IMMIGRATE's two rows are one fit.",
    ]
    notes += [_render_merge(merge) for merge in report.get("merged", [])]
    sk_text = render_skrebate(report)
    if sk_text:
        notes.append(sk_text)
    if not report["complete"]:
        notes.append(
            f"**Incomplete run** (stopped to leave the machine quiet): {coverage(report)}."
        )
    return "\n\n".join([head, harness.markdown_table(headers, rows), *notes])


def _render_merge(merge: dict) -> str:
    """The note on methods added to the variant by a later run (``--merge``)."""
    m, cpu = merge["machine"], merge["cpu"]
    git = m["dmargin_git"]
    state = {True: ", the package edited", False: ", the package as committed"}.get(
        git.get("package_dirty"), ""
    )
    return (
        f"{', '.join(merge['methods'])}: added by a later run on the same files "
        f"(dmargin commit {git['commit'][:7]}{state}, skrebate {m['versions']['skrebate']}; "
        f"{m['date'][:10]}; {merge['jobs']} fits side by side, other processes kept "
        f"{cpu['other_cores_busy']} of the {m['logical_cores']} cores busy on average; "
        "`merged` in the JSON)."
    )


def coverage(report: dict) -> str:
    """Which replicates each engine finished for every configuration."""
    n_cfg = len(SIZES) * len(HERITABILITIES) * len(MODELS)
    parts = []
    for engine in ("dmargin", "skrebate"):
        done = {}
        for f in report["per_file"]:
            if engine in f:
                done[f["rep"]] = done.get(f["rep"], 0) + 1
        full = 0
        while done.get(full + 1, 0) == n_cfg:
            full += 1
        extra = sum(k for r, k in done.items() if r > full)
        parts.append(
            f"{engine} {sum(done.values())} files, replicates 1-{full} of every configuration"
            + (f" and {extra} files of the next" if extra else "")
        )
    return "; ".join(parts)


def render_skrebate(report: dict) -> str | None:
    """The comparison with skrebate: a row per skrebate-defined method, then ReliefF's departures."""
    m, sk = report["machine"], report["skrebate"]
    if not any(c["files"] for c in sk["comparison"].values()):
        return None
    reps = sorted({f["rep"] for f in report["per_file"] if "skrebate" in f})
    span = (
        f"replicate {reps[0]}"
        if len(reps) == 1
        else f"replicates {reps[0]}-{reps[-1]}"
        if reps == list(range(reps[0], reps[-1] + 1))
        else "replicates " + ", ".join(map(str, reps))
    )
    rows = []
    for name, c in sk["comparison"].items():
        if not c["files"]:
            continue
        rows.append(
            [
                name,
                c["files"],
                _pct(c["detected_dmargin"] / c["files"]),
                _pct(c["detected_skrebate"] / c["files"]),
                f"{c['max_abs_diff']:.2g}",
                c["files_over_1e-10"],
                c["cpu_s_dmargin"],
                c["cpu_s_skrebate"],
                f"{c['cpu_s_skrebate'] / c['cpu_s_dmargin']:.0f}x" if c["cpu_s_dmargin"] else None,
            ]
        )
    text = (
        f"Against skrebate {m['versions']['skrebate']} on the same files "
        f"({span} of every configuration{'' if len(reps) == REPLICATES else ', not all 30'}; "
        f"{report['files_done']['skrebate']} files), the same parameters:\n\n"
        + harness.markdown_table(
            [
                "method",
                "files",
                "detection dmargin %",
                "detection skrebate %",
                "max abs score diff",
                "files > 1e-10",
                "dmargin fit CPU s",
                "skrebate fit CPU s",
                "ratio",
            ],
            rows,
        )
    )
    edges = {name: c for name, c in sk["comparison"].items() if c["files"] and "over_1e-10" in c}
    if edges:
        text += (
            "\n\nKnife edges (an anchor and a row whose distance, in mismatched SNPs, is "
            "exactly the anchor's threshold: the mean distance, for MultiSWRFDB an edge of "
            "its dead band; skrebate compares with its threshold in floating point, which "
            "may put the row in a set it scores, dmargin compares exactly and scores it in "
            "neither): " + "; ".join(_render_edges(name, c) for name, c in edges.items()) + "."
        )
    for name, c in sk["comparison"].items():
        if c["files"] and "departures" in c:
            text += "\n\n" + _render_departures(name, c)
    for name, e in sk["relieff_departures"].items():
        text += (
            f"\n\n{name}: the largest difference ({e['as_run']:.2g}, `{e['file'].split('/')[-1]}`) is "
            f"{e['stable_argsort']:.2g} with skrebate's neighbour search on a stable argsort (rows tied at "
            "the k-th neighbour's distance taken lowest row first, as dmargin does; skrebate's default sort "
            f"takes them in an arbitrary order) and {e['stable_argsort_no_self_hit']:.2g} when skrebate "
            f"also never counts the anchor as its own hit ({e['anchors_own_neighbour']} of {e['rows']} "
            "anchors did: skrebate appends the anchor, at distance `sys.maxsize`, as a hit when its class "
            "has fewer than k other rows; dmargin divides by the hits found)."
        )
    return text


def _render_departures(name: str, c: dict) -> str:
    """A MuRelief row's departures: skrebate as run, then refitted without each
    (``murelief_departures``), against dmargin on every file both ran."""
    dep = c["departures"]
    steps = dep["steps"]

    def step(key):
        e = steps[key]
        by_n = ", ".join(
            f"{k} at N = {n}"
            for n, k in sorted(e["files_over_1e-10_by_N"].items(), key=lambda kv: int(kv[0]))
        )
        return (
            f"{e['files_within_1e-10']} of {e['files']} files within 1e-10 of dmargin "
            f"(largest difference {e['max_abs_diff']:.2g}{'; over: ' + by_n if by_n else ''}), "
            f"detection as dmargin's on {e['detection_agrees']}"
        )

    return (
        f"{name}: skrebate as run has {step('as_run')}. It departs from dmargin's rule in "
        "three ways, undone one after the other in refits of skrebate (its `np.argsort` "
        "replaced in `murelief.py`): (1) it walks the anchor itself as a candidate hit of "
        "key 0 and takes it when it comes before n_neighbors hits, as it always does when its "
        "class has no more than n_neighbors other rows "
        f"({dep['anchors_own_hit']} of {dep['anchors']} anchors, on {dep['own_hit_files']} "
        f"file{'' if dep['own_hit_files'] == 1 else 's'}); without it: {step('no_self')}. "
        "(2) It orders rows of equal key by numpy's unstable sort; with them taken lowest row "
        f"first, as dmargin takes them: {step('no_self_stable')}. (3) It compares the keys "
        "|d - mean| in floating point, so two rows whose distances lie symmetrically about "
        "the class's mean, an exact tie in mismatch counts, are ordered by the mean's "
        "rounding; with the key compared exactly (|n_c K - S_c| in mismatch counts, dmargin's "
        f"rule): {step('dmargin_order')}."
    )


def _render_edges(name: str, c: dict) -> str:
    """One SWRF row's knife edges: files holding one, scored by skrebate, over 1e-10."""
    n = c["knife_edge_files"]
    if not n:
        text = f"{name} in no file"
    else:
        text = (
            f"{name} in {n} file{'s' if n > 1 else ''}, scored by skrebate in "
            f"{c['knife_edge_scored_files']}"
        )
    if c["files_over_1e-10"]:
        text += (
            f" (among them {c['files_over_1e-10_knife_edge']} of its "
            f"{c['files_over_1e-10']} files > 1e-10)"
        )
    if c["files_within_1e-10_knife_edge"]:
        text += f" ({c['files_within_1e-10_knife_edge']} of the scored files agree to 1e-10)"
    return text


# --------------------------------------------------------------------------- #
# main
# --------------------------------------------------------------------------- #
def _init_worker():
    for var in harness.THREAD_VARS:
        os.environ[var] = "1"


class Run(NamedTuple):
    """What ``run_tasks`` measured."""

    runs: dict  # (engine, file) -> run_file's result
    warm: dict  # engine -> the workers' warm-up seconds
    failures: list
    stopped: bool
    cpu: dict  # CpuMonitor over the whole run


def run_tasks(
    tasks: list[tuple[str, dict]], jobs: int, deadline: float | None, names: list[str] | None
) -> Run:
    """``run_file`` on every ``(engine, file)`` of ``tasks``, ``jobs`` worker processes side
    by side; no new file after ``deadline`` (``time.time()``)."""
    start = time.perf_counter()
    monitor = harness.CpuMonitor().start()
    runs, warm, failures = {}, {}, []
    pending, queue = {}, list(tasks)
    stopped = False
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=get_context("spawn"), initializer=_init_worker
    ) as pool:
        while queue or pending:
            while queue and len(pending) < 2 * jobs and not stopped:
                if deadline is not None and time.time() >= deadline:
                    stopped = True
                    break
                engine, f = queue.pop(0)
                pending[pool.submit(run_file, engine, f, names)] = (engine, f)
            if not pending:
                break
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                engine, f = pending.pop(fut)
                try:
                    run = fut.result()
                except Exception as exc:  # one broken file never stops the run
                    failures.append(
                        {"engine": engine, "file": f["file"], "error": repr(exc)[-400:]}
                    )
                    print(
                        f"[bench] {engine} {f['file']} FAILED: {exc!r}", file=sys.stderr, flush=True
                    )
                    continue
                runs[(engine, f["file"])] = run
                if run["warm_up_s"]:
                    warm.setdefault(engine, []).append(round(run["warm_up_s"], 3))
                ok = sum(max(r["ranks"]) <= 2 for r in run["methods"].values())
                print(
                    f"[bench] {len(runs)}/{len(tasks)} {engine:8s} {config_key(f)} "
                    f"rep {f['rep']:2d}: {ok}/{len(run['methods'])} detect "
                    f"({time.perf_counter() - start:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    return Run(runs, warm, failures, stopped, monitor.stop())


def _stored(res: dict) -> dict:
    """One fit's entry in ``per_file`` (ranks and times; the scores are in the comparison)."""
    return {
        "ranks": res["ranks"],
        "fit_s": round(res["fit_s"], 4),
        "cpu_s": round(res["cpu_s"], 4),
        **({"warnings": res["warnings"]} if res["warnings"] else {}),
        **{
            k: res[k]
            for k in ("top_pair", "pair_rank", "knife_edge_pairs", "knife_edge_scored")
            if k in res
        },
        **(
            {"departures": {k: v for k, v in res["departures"].items() if k != "scores"}}
            if "departures" in res
            else {}
        ),
    }


def _missing(tasks: list, run: Run, stop_at: str | None) -> str | None:
    missing = [f"{e} {f['file']}" for e, f in tasks if (e, f["file"]) not in run.runs]
    if not missing:
        return None
    return (
        f"{len(missing)} of {len(tasks)} file runs not done"
        + (f" (stopped at {stop_at} UTC)" if run.stopped else "")
        + ": "
        + "; ".join(missing[:20])
        + (" ..." if len(missing) > 20 else "")
    )


def _machine() -> dict:
    """``machine_info``, with the commit of the dmargin the fits import (a clean clone of a
    commit, put first on ``PYTHONPATH``, measures that commit while the tree is edited)."""
    import dmargin

    package = Path(dmargin.__file__).resolve().parent
    machine = harness.machine_info(PACKAGES)
    machine["dmargin_git"] = harness.git_revision(package.parent)
    # the benchmark's own files may be edited; whether the package itself was
    status = subprocess.run(
        ["git", "-C", str(package.parent), "status", "--porcelain", "--", package.name],
        capture_output=True,
        text=True,
    )
    machine["dmargin_git"]["package_dirty"] = (
        bool(status.stdout.strip()) if status.returncode == 0 else None
    )
    machine["dmargin_module"] = str(package)
    return machine


def build_report(
    args,
    root: Path,
    files: list,
    sk_files: list,
    tasks: list,
    run: Run,
    names: list[str] | None,
    machine: dict,
    wall: float,
) -> dict:
    """The variant of a run of the methods ``names`` (``None``: every method)."""
    runs = run.runs
    done_files = {e: sum(1 for (eng, _) in runs if eng == e) for e in ("dmargin", "skrebate")}
    missing = _missing(tasks, run, args.stop_at)
    methods = select(names)
    names = [m.name for m in methods]
    sk_names = [m.name for m in methods if m.skrebate]
    per_file = []
    for f in files:
        entry = {k: f[k] for k in ("file", "N", "h", "model", "rep")}
        for engine in ("dmargin", "skrebate"):
            r = runs.get((engine, f["file"]))
            if r is not None:
                entry[engine] = {name: _stored(res) for name, res in r["methods"].items()}
        per_file.append(entry)
    summary = summarise(files, runs, "dmargin", names)
    comparison = compare_skrebate(files, runs, names)
    return {
        "benchmark": BENCHMARK,
        "mode": "quick" if args.quick else "full",
        "complete": not missing and not run.failures,
        "missing": missing,
        "failures": run.failures,
        "machine": machine,
        "data": {
            "root": str(root),
            "files": len(files),
            "predictive": list(PREDICTIVE),
            "target": TARGET,
            "source": "EpistasisLab/rebate-benchmark 374d2a6, GAMETES_2.2 core 2-way epistasis",
        },
        "jobs": args.jobs,
        "threads_per_fit": 1,
        "methods": _methods_info(methods),
        "rank_rule": "1 = largest score; a tie takes the worst rank of its group; detected = worse "
        "of the two predictive ranks <= 2",
        "files_total": len(files),
        "files_done": done_files,
        "warm_up_s": run.warm,
        "cpu": run.cpu,
        "summary": summary,
        "overall": overall(summary, names),
        "n1600_h0.4": overall(summary, names, lambda c: c["N"] == 1600 and c["h"] == 0.4),
        "timing": {"dmargin": timings(runs, "dmargin"), "skrebate": timings(runs, "skrebate")},
        "skrebate": {
            "replicates": min(args.skrebate_replicates, REPLICATES),
            "files_requested": len(sk_files),
            "summary": summarise(files, runs, "skrebate", sk_names),
            "comparison": comparison,
            "relieff_departures": explain_relieff(comparison, root),
            "tolerance": AGREE,
        },
        "per_file": per_file,
        "total_wall_s": round(wall, 1),
    }


def _methods_info(methods) -> dict:
    return {
        m.name: {"rank": m.rank.__name__.strip("_"), "skrebate": m.skrebate is not None}
        for m in methods
    }


def _in_order(d: dict) -> dict:
    """``d`` (keyed by method names) in ``METHODS``' order, so the tables' order holds."""
    order = {m.name: i for i, m in enumerate(METHODS)}
    return dict(sorted(d.items(), key=lambda kv: order.get(kv[0], len(order))))


def merge_report(
    stored: dict,
    args,
    root: Path,
    files: list,
    tasks: list,
    run: Run,
    names: list[str],
    machine: dict,
    wall: float,
) -> dict:
    """``stored`` with the methods ``names`` measured again by ``run`` (the others kept)."""
    report = dict(stored)
    runs = run.runs
    report.setdefault("run_command", report.get("command"))  # write_variant records its own
    for entry in report["per_file"]:
        for engine in ("dmargin", "skrebate"):
            r = runs.get((engine, entry["file"]))
            if r is not None:
                entry[engine] = _in_order(
                    {
                        **entry.get(engine, {}),
                        **{name: _stored(res) for name, res in r["methods"].items()},
                    }
                )

    def merged(old: dict, engine: str, sk_only: bool) -> dict:
        new = summarise(
            files, runs, engine, [n for n in names if not sk_only or select([n])[0].skrebate]
        )
        for key, cfg in new.items():
            target = old.setdefault(key, {**cfg, "methods": {}})
            target["methods"] = _in_order({**target["methods"], **cfg["methods"]})
        return old

    summary = merged(report["summary"], "dmargin", False)
    all_names = [m.name for m in METHODS]
    report["summary"] = summary
    report["overall"] = overall(summary, all_names)
    report["n1600_h0.4"] = overall(summary, all_names, lambda c: c["N"] == 1600 and c["h"] == 0.4)
    report["methods"] = _in_order({**report["methods"], **_methods_info(select(names))})
    report["timing"] = {
        e: _in_order({**report["timing"][e], **timings(runs, e)}) for e in ("dmargin", "skrebate")
    }
    sk = report["skrebate"]
    sk["summary"] = merged(sk["summary"], "skrebate", True)
    sk["comparison"] = _in_order({**sk["comparison"], **compare_skrebate(files, runs, names)})
    missing = _missing(tasks, run, args.stop_at)
    report["merged"] = [
        *stored.get("merged", []),
        {
            "methods": names,
            "complete": not missing and not run.failures,
            "missing": missing,
            "failures": run.failures,
            "files_done": {
                e: sum(1 for (eng, _) in runs if eng == e) for e in ("dmargin", "skrebate")
            },
            "machine": machine,
            "jobs": args.jobs,
            "warm_up_s": run.warm,
            "cpu": run.cpu,
            "total_wall_s": round(wall, 1),
            "command": shlex.join(["python", "benchmarks/bench_gametes.py", *sys.argv[1:]]),
        },
    ]
    report["complete"] = stored["complete"] and report["merged"][-1]["complete"]
    return report


def stop_deadline(hh_mm: str, now=None) -> float:
    """The POSIX time of the next ``HH:MM`` UTC after ``now``: a time of day already
    past today is tomorrow's (a run started at 23:30 with ``--stop-at 00:25``)."""
    try:
        hh, mm = map(int, hh_mm.split(":"))
        now = now or _dt.datetime.now(_dt.timezone.utc)
        at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    except ValueError:
        raise SystemExit(f"bench_gametes: --stop-at {hh_mm!r} is not a time HH:MM (UTC)") from None
    if at <= now:
        at += _dt.timedelta(days=1)
    return at.timestamp()


def main(argv=None) -> int:
    parser = harness.options(__doc__, quick="4 files (N 200-1600), every method, skrebate too")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help="the rebate-benchmark folder (default: <shared data>/"
        "rebate-benchmark, i.e. ../shared/data/rebate-benchmark beside the "
        "repository or $DMARGIN_DATA)",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, metavar="J", help="worker processes (default 2)"
    )
    parser.add_argument(
        "--replicates",
        type=int,
        default=REPLICATES,
        metavar="R",
        help="run replicates 1..R of each configuration (default 30: all)",
    )
    parser.add_argument(
        "--first-replicate",
        type=int,
        default=1,
        metavar="F",
        help="start at replicate F (with --replicates R: replicates F..R; default 1)",
    )
    parser.add_argument(
        "--skrebate-replicates",
        type=int,
        default=REPLICATES,
        metavar="R",
        help="run skrebate on replicates 1..R of each configuration (default 30: all; 0: none)",
    )
    parser.add_argument(
        "--methods",
        default=None,
        metavar="A,B,...",
        help="run only these methods (names as in the table, comma-separated; default: all)",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="run --methods on the files of the stored --variant (skrebate where "
        "it ran there) and add them to it, the other methods' results kept",
    )
    parser.add_argument(
        "--stop-at",
        default=None,
        metavar="HH:MM",
        help="UTC time after which no new file is started; what finished is stored "
        "with complete: false",
    )
    parser.add_argument(
        "--rerender",
        action="store_true",
        help="recompute the markdown of the stored --variant from its JSON (no fits)",
    )
    args = harness.parse_args(parser, argv)
    names = None if args.methods is None else [n.strip() for n in args.methods.split(",")]
    if names is not None:
        select(names)  # an unknown name stops here, before any fit
    if args.merge and names is None:
        parser.error("--merge needs --methods (the methods to add)")
    if args.rerender:
        report = harness.load_variant(BENCHMARK, args.variant, args.quick)
        # write_variant records this command
        report.setdefault("run_command", report.get("command"))
        report["markdown"] = render(report)
        report["skrebate_markdown"] = render_skrebate(report)
        harness.write_variant(BENCHMARK, report, variant=args.variant, quick=args.quick)
        print(report["markdown"])
        return 0
    root = args.data or default_data()
    files = find_files(root)
    if args.merge:
        # the stored variant's files, skrebate where it ran there: the new rows sit beside the old
        stored = harness.load_variant(BENCHMARK, args.variant, args.quick)
        entries = {f["file"]: f for f in stored["per_file"]}
        files = [f for f in files if f["file"] in entries]
        sk_files = [f for f in files if "skrebate" in entries[f["file"]]]
        if len(files) != len(entries):
            raise SystemExit(
                f"bench_gametes: {len(entries) - len(files)} of the variant's files "
                f"are not under {root}"
            )
    else:
        if args.quick:
            want = set(QUICK_FILES)
            files = [f for f in files if (f["N"], f["h"], f["model"], f["rep"]) in want]
        files = [f for f in files if args.first_replicate <= f["rep"] <= args.replicates]
        sk_files = [f for f in files if f["rep"] <= args.skrebate_replicates]
    if not files:
        raise SystemExit(f"bench_gametes: no GAMETES file found under {root}")
    if names is not None and not any(m.skrebate for m in select(names)):
        sk_files = []
    deadline = None if args.stop_at is None else stop_deadline(args.stop_at)

    # replicate by replicate (a run stopped early has every configuration, with fewer replicates),
    # the largest files of a replicate first; dmargin before skrebate
    def order(f):
        return f["rep"], -f["N"], f["h"], f["model"]

    tasks = [("dmargin", f) for f in sorted(files, key=order)]
    tasks += [("skrebate", f) for f in sorted(sk_files, key=order)]

    start = time.perf_counter()
    machine = _machine()
    run = run_tasks(tasks, args.jobs, deadline, names)
    wall = time.perf_counter() - start
    if args.merge:
        report = merge_report(stored, args, root, files, tasks, run, names, machine, wall)
    else:
        report = build_report(args, root, files, sk_files, tasks, run, names, machine, wall)
    report["markdown"] = render(report)
    report["skrebate_markdown"] = render_skrebate(report)
    # an unfinished run never replaces a finished one: it is stored beside it
    variant = args.variant if report["complete"] else f"{args.variant}-incomplete"
    path = harness.write_variant(BENCHMARK, report, variant=variant, quick=args.quick)
    print(report["markdown"])
    print(f"\nwritten: {path}, variant {variant} ({wall:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
