"""MultiSURF and VLS + MultiSURF on GWAS-scale genotypes (skrebate issue 74's shape).

skrebate issue 74 reports 2,350 samples x 230,000 SNPs (3 classes) taking 32 hours on
64 vCPUs (VLS + MultiSURF, ``num_feature_subset=200, size_feature_subset=1000``).
What is measured (results go to ``benchmarks/results/gwas.json``, or
``benchmarks/results/quick/gwas.json`` with ``--quick``; ``--estimator multisurf``,
the default, stores variant ``default``, ``--estimator vls`` variant ``vls``):

1. Data, synthetic and GWAS-like, generated a block of SNPs at a time straight into
   a ``uint8`` matrix (never a float64 copy of it): N = 2,350 samples x A = 230,000
   SNPs (``--quick``: 5,000 SNPs), genotypes 0/1/2 drawn under Hardy-Weinberg
   equilibrium from minor allele frequencies uniform in [0.05, 0.5]; three classes.
   The class of a sample is drawn from a mixture (weight ``EPISTASIS_WEIGHT`` on the
   first part):

   - a planted pair of interacting SNPs (minor allele frequency 0.5 both): the
     class is 0 with probability 0.8 when ``g1 + g2`` is even and 1 with
     probability 0.8 when it is odd (0.1 for each other class): XOR-like, and
     with these frequencies neither SNP alone changes the class distribution
     (every genotype of one SNP leaves ``g1 + g2`` even with probability 1/2):
     a pure epistatic pair, as GAMETES' models;
   - 20 SNPs with marginal (additive) effects: class probabilities
     ``softmax(sum_k BETA (g_k - 2 maf_k) e_{c_k})``, SNP ``k`` pushing class
     ``k mod 3``.

   The 22 planted SNPs sit at random columns.
2. ``dmargin.MultiSURF()`` on it, in-process, in a fresh interpreter with 2 threads
   (``NUMBA_NUM_THREADS=2``) and an empty numba cache: a warm-up fit on 50 x 200 of
   the rows (the kernels' compilation, reported apart), then the timed fit on all
   rows.  The integer genotypes take the compact path (``compact_dtype_`` uint8:
   bit planes for the distances, bytes for the sums).  Recorded: the fit's wall
   time; the peak RSS of the process during the fit (psutil every 0.2 s) and over
   the whole run (``ru_maxrss``, data generation included); the data's bytes
   (uint8) against float64; the ranks (1 = best) of the 2 interacting SNPs and of
   the 20 marginal ones by ``feature_importances_``; the machine's load (the cores
   other processes kept busy during the fit, and the 1-minute load average).
3. The acceptance target: under 10 minutes and under 4 GB peak.

With ``--estimator vls``:

4. ``dmargin.VLS(dmargin.MultiSURF(), num_feature_subset=S, size_feature_subset=Z,
   random_state=74)`` on the same data, measured as in 2 (the warm-up also fits a
   small VLS); each measurement starts once other processes use under half a core
   (waiting up to ``--idle-wait`` s) and is repeated, up to ``--attempts`` runs,
   while they used more during it (``VLS_QUIET_CORES``).  Z = 1,000 SNPs per
   subset, the issue's ``size_feature_subset``; S = 2 x ceil(A / Z) = 460: the first
   230 subsets cut the shuffled SNPs into a partition (skrebate's ``make_subsets``),
   the other 230 are random draws, so a SNP sits in 2 subsets on average and the
   job does twice MultiSURF's pairwise work on all SNPs (plus 460 fits' fixed
   costs), within the target.  (The issue's 200 x 1,000 ran under an older ``VLSRelief``
   that did not need the subsets to cover every SNP; skrebate 0.8.4's ``VLS``
   and dmargin's refuse S x Z < A.)  A planted SNP's score is its best over the
   subsets that hold it; the interacting pair can only be found when both SNPs
   share a subset (with these S and Z a chance of about 2 x Z / A, under 1 %):
   recorded are the subsets holding each planted SNP, those holding both of the
   pair and, when there is one, the pair's ranks within the first of them
   (MultiSURF refitted on its columns, outside the timing).
5. The speed against skrebate 0.8.4, same run: ``skrebate.VLS(skrebate.MultiSURF(
   n_jobs=1), S', Z, random_state=74)`` on the first A' columns of the same data as
   float64 (skrebate's input), against ``dmargin.VLS`` with the same parameters on
   the same columns as uint8 and as float64; each in a fresh interpreter with one
   thread (the thread variables of ``harness.launch``), dmargin after its warm-up.
   The slice is not 1/20 of the SNPs (11,500): skrebate scores one (sample,
   feature) pair per Python call, 0.15-0.18 s per SNP per subset fit at N = 2,350
   here, so 1/20 with S' = 23 would take over an hour; A' = 2,000 SNPs (1/115)
   with S' = 4 = 2 x ceil(A' / Z) = S / 115 keeps S and Z's proportions and takes
   10-12 minutes (``--quick``: 100 SNPs, Z = 50, S' = 4).  Recorded: each
   fit's seconds, skrebate's over dmargin's, and ``max |w - w_skrebate|`` (the
   compact path computes skrebate's MultiSURF on genotypes exactly: expected
   below 1e-10).

Usage::

    python benchmarks/bench_gwas.py             # 2,350 x 230,000 (several minutes)
    python benchmarks/bench_gwas.py --quick     # 2,350 x 5,000 (under a minute)
    python benchmarks/bench_gwas.py --estimator vls          # VLS, skrebate slice (about 20 min)
    python benchmarks/bench_gwas.py --estimator vls --quick  # (about 2 minutes)
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402

N, A, A_QUICK = 2350, 230_000, 5_000
N_CLASSES = 3
N_MARGINAL = 20
#: Mixture weight of the epistatic part of the class model.
EPISTASIS_WEIGHT = 0.5
#: Log-odds per minor allele of a marginal SNP.
BETA = 1.0
THREADS = 2
SEED = 74
#: SNPs generated per block (a block's int64 draws are N x BLOCK x 8 bytes).
BLOCK = 4096
TARGET_S, TARGET_GB = 600.0, 4.0
SAMPLE_PERIOD_S = 0.2
PACKAGES = ["numpy", "numba", "psutil", "dmargin"]
#: VLS: SNPs per subset (the issue's ``size_feature_subset``; ``--quick`` too), and how
#: many times the subsets cover the SNPs (S = COVER x ceil(A / Z)).
VLS_SIZE, VLS_COVER = 1000, 2
#: The columns skrebate gets (from the first), and the subset size there.
SLICE_SNPS, SLICE_SNPS_QUICK = 2000, 100
SLICE_SIZE, SLICE_SIZE_QUICK = 1000, 50
#: Other processes' cores under which a VLS measurement starts and counts as quiet (the
#: default run's mark of a disturbed one): each of its threads has a core to itself.
VLS_QUIET_CORES = 0.5
#: The slice's fits, in a fresh interpreter each: (library, rows as).
SLICE_FITS = (("dmargin", "uint8"), ("dmargin", "float64"), ("skrebate", "float64"))
VLS_PACKAGES = [*PACKAGES, "skrebate"]


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def make_gwas(n=N, a=A, seed=SEED):
    """``(X, y, pair, marginal)``: uint8 genotypes (n x a), classes 0..2, the columns
    of the interacting pair and of the marginal SNPs."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, a), dtype=np.uint8)
    maf = rng.uniform(0.05, 0.5, a)
    planted = rng.choice(a, 2 + N_MARGINAL, replace=False)
    pair, marginal = planted[:2], planted[2:]
    maf[pair] = 0.5
    for f0 in range(0, a, BLOCK):
        f1 = min(f0 + BLOCK, a)
        X[:, f0:f1] = rng.binomial(2, maf[f0:f1], size=(n, f1 - f0))
    # Epistatic part: parity of g1 + g2 -> class 0 (even) or 1 (odd) with 0.8.
    odd = (X[:, pair[0]].astype(np.int64) + X[:, pair[1]]) % 2
    p_epi = np.where(odd[:, None] == 0, [0.8, 0.1, 0.1], [0.1, 0.8, 0.1])
    # Marginal part: additive log-odds, SNP k pushes class k mod 3.
    logits = np.zeros((n, N_CLASSES))
    for k, f in enumerate(marginal):
        logits[:, k % N_CLASSES] += BETA * (X[:, f] - 2 * maf[f])
    p_marg = np.exp(logits - logits.max(axis=1, keepdims=True))
    p_marg /= p_marg.sum(axis=1, keepdims=True)
    p = EPISTASIS_WEIGHT * p_epi + (1 - EPISTASIS_WEIGHT) * p_marg
    u = rng.random(n)[:, None]
    y = (u > np.cumsum(p, axis=1)).sum(axis=1)
    return X, np.minimum(y, N_CLASSES - 1), pair, marginal


def ranks(scores, columns):
    """1-based ranks of ``columns`` by descending score (ties: lower column first)."""
    order = np.argsort(-scores, kind="stable")
    position = np.empty(scores.size, dtype=np.int64)
    position[order] = np.arange(1, scores.size + 1)
    return [int(position[c]) for c in columns]


def vls_subsets(a, size, cover=VLS_COVER):
    """S: the subsets of ``size`` SNPs that cover ``a`` SNPs ``cover`` times over."""
    return cover * -(-a // size)


# --------------------------------------------------------------------------- #
# worker side (one fresh interpreter)
# --------------------------------------------------------------------------- #
class PeakSampler:
    """Peak RSS of this process every ``period`` s while entered."""

    def __init__(self, period=SAMPLE_PERIOD_S):
        import psutil

        self._proc = psutil.Process()
        self.peak, self.samples = 0, 0
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        self.peak = max(self.peak, self._proc.memory_info().rss)
        self.samples += 1

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self._period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def warm_up(X, y, vls=False):
    """Seconds of the warm-up fits on 50 x 200 of ``X`` (the kernels' compilation)."""
    import dmargin
    import dmargin.engine._numba as policy

    # Both twins of the compact kernels compiled (the threaded ones too, which a
    # fit this small would not pick on its own).
    small = X[:50, :200], y[:50]
    min_work, policy.PARALLEL_MIN_WORK = policy.PARALLEL_MIN_WORK, 0
    try:
        warm_s, _ = harness.timed(dmargin.MultiSURF().fit, *small)
        warm_s += harness.timed(dmargin.MultiSURF().fit, *small)[0]
    finally:
        policy.PARALLEL_MIN_WORK = min_work
    warm_s += harness.timed(dmargin.MultiSURF().fit, *small)[0]
    if vls:  # VLS's own steps (subsets, the score table) once
        make = dmargin.VLS(
            dmargin.MultiSURF(), num_feature_subset=4, size_feature_subset=100, random_state=SEED
        )
        warm_s += harness.timed(make.fit, *small)[0]
    return warm_s


def make_vls(library, spec):
    """The VLS of ``library`` with the spec's S and Z, around MultiSURF, seed 74."""
    params = {
        "num_feature_subset": spec["num_feature_subset"],
        "size_feature_subset": spec["size_feature_subset"],
        "random_state": SEED,
    }
    if library == "skrebate":
        import skrebate

        return skrebate.VLS(skrebate.MultiSURF(n_jobs=1), **params)
    import dmargin

    return dmargin.VLS(dmargin.MultiSURF(), **params)


def measure(spec):
    if spec.get("estimator") == "vls-slice":
        return measure_slice(spec)
    import dmargin

    vls = spec.get("estimator") == "vls"
    n, a = spec["n"], spec["a"]
    t0 = time.perf_counter()
    X, y, pair, marginal = make_gwas(n, a, spec["seed"])
    generate_s = time.perf_counter() - t0
    rss_data = harness.rss_mib()

    warm_s = warm_up(X, y, vls=vls)
    est = make_vls("dmargin", spec) if vls else dmargin.MultiSURF()
    monitor = harness.CpuMonitor().start()
    with PeakSampler() as sampler:
        fit_s, est = harness.timed(est.fit, X, y)
    load = monitor.stop()
    scores = est.feature_importances_
    pair_ranks, marginal_ranks = ranks(scores, pair), ranks(scores, marginal)
    # VLS keeps no fitted estimator: the first subset's fit again, for its rows' dtype.
    compact = dmargin.MultiSURF().fit(X[:, est.subsets_[0]], y) if vls else est
    result = {
        "n_samples": n,
        "n_features": a,
        "n_classes": N_CLASSES,
        "seed": spec["seed"],
        "class_counts": np.bincount(y, minlength=N_CLASSES).tolist(),
        "compact_dtype": str(compact.compact_dtype_),
        "data_mib_uint8": round(X.nbytes / 2**20, 1),
        "data_mib_as_float64": round(8 * X.nbytes / 2**20, 1),
        "generate_s": round(generate_s, 2),
        "rss_after_data_mib": round(rss_data, 1),
        "warmup_fit_s": round(warm_s, 2),
        "fit_s": round(fit_s, 2),
        "peak_rss_fit_mib": round(sampler.peak / 2**20, 1),
        "rss_samples": sampler.samples,
        "peak_rss_process_mib": round(harness.peak_rss_mib(), 1),
        "pair_columns": [int(c) for c in pair],
        "pair_ranks": pair_ranks,
        "marginal_columns": [int(c) for c in marginal],
        "marginal_ranks": marginal_ranks,
        "marginal_in_top_20": int(sum(r <= N_MARGINAL for r in marginal_ranks)),
        "marginal_in_top_100": int(sum(r <= 100 for r in marginal_ranks)),
        "top_10_columns": [int(c) for c in np.argsort(-scores, kind="stable")[:10]],
        **load,
    }
    if vls:
        result.update(vls_planted(est, X, y, pair, marginal))
    return result


def vls_planted(est, X, y, pair, marginal):
    """Where the planted SNPs fell among VLS's subsets (after the timed fit)."""
    import dmargin

    holds = [set(s.tolist()) for s in est.subsets_]
    shared = [k for k, s in enumerate(holds) if pair[0] in s and pair[1] in s]
    out = {
        "num_feature_subset": len(est.subsets_),
        "size_feature_subset": int(est.subsets_[0].size),
        "subsets_per_snp_mean": round(sum(map(len, holds)) / X.shape[1], 3),
        "pair_subset_counts": [sum(int(c) in s for s in holds) for c in pair],
        "marginal_subset_counts": [sum(int(c) in s for s in holds) for c in marginal],
        "pair_shared_subsets": shared,
        "pair_shared": bool(shared),
        "pair_ranks_in_shared_subset": None,
    }
    if shared:  # the pair's ranks among the first shared subset's SNPs alone
        cols = est.subsets_[shared[0]]
        alone = dmargin.MultiSURF().fit(X[:, cols], y).feature_importances_
        out["pair_ranks_in_shared_subset"] = ranks(
            alone, [int(np.flatnonzero(cols == c)[0]) for c in pair]
        )
    return out


def measure_slice(spec):
    """One VLS fit on the first ``spec["slice"]`` SNPs of the data, one library and dtype."""
    X, y, _, _ = make_gwas(spec["n"], spec["a"], spec["seed"])
    X = np.ascontiguousarray(X[:, : spec["slice"]])  # a copy: the full matrix is freed
    if spec["dtype"] == "float64":
        X = X.astype(np.float64)
    # skrebate has nothing to compile: only dmargin warms up.
    warm_s = warm_up(X, y, vls=True) if spec["library"] == "dmargin" else None
    est = make_vls(spec["library"], spec)
    monitor = harness.CpuMonitor().start()
    with PeakSampler() as sampler:
        fit_s, est = harness.timed(est.fit, X, y)
    load = monitor.stop()
    return {
        "library": spec["library"],
        "rows_as": str(X.dtype),
        "n_samples": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "warmup_fit_s": None if warm_s is None else round(warm_s, 2),
        "fit_s": round(fit_s, 2),
        "peak_rss_fit_mib": round(sampler.peak / 2**20, 1),
        # Every digit, for the agreement check; the parent drops them.
        "scores": np.asarray(est.feature_importances_, dtype=np.float64).tolist(),
        **load,
    }


# --------------------------------------------------------------------------- #
# parent side
# --------------------------------------------------------------------------- #
def render(out):
    r = out["run"]
    if not r.get("ok", True) or "fit_s" not in r:
        return f"failed: {r.get('error')}"
    t = out["targets"]
    disturbed = (
        " ({}: other processes kept {} cores busy during the fit, 1-minute load {}; "
        "the fit had {} of its {} threads' cores)"
    ).format(
        "disturbed" if out["disturbed"] else "quiet",
        r["other_cores_busy"],
        r["loadavg_1min"],
        r["own_cores_busy"],
        out["threads"],
    )
    vls = out.get("estimator") == "vls"
    name = (
        f"VLS(MultiSURF(), {r['num_feature_subset']} x {r['size_feature_subset']:,} SNPs)"
        if vls
        else "MultiSURF()"
    )
    rows = [
        [
            name,
            f"{r['n_samples']:,} x {r['n_features']:,}",
            r["compact_dtype"],
            f"{r['data_mib_uint8']:,.0f} MiB (float64 {r['data_mib_as_float64']:,.0f})",
            r["fit_s"],
            r["warmup_fit_s"],
            f"{r['peak_rss_fit_mib']:,.0f}",
            f"{r['peak_rss_process_mib']:,.0f}",
            ", ".join(map(str, r["pair_ranks"])),
            f"{r['marginal_in_top_20']} / 20 (top 100: {r['marginal_in_top_100']})",
        ]
    ]
    table = harness.markdown_table(
        [
            "estimator",
            "N x A",
            "rows as",
            "data",
            "fit s",
            "warm-up (compile) s",
            "peak RSS in fit MiB",
            "peak RSS process MiB",
            "interacting pair ranks",
            "marginal SNPs in top 20",
        ],
        rows,
    )
    text = (
        table + f"\n\nTarget under {TARGET_S:.0f} s: {'met' if t['time_met'] else 'missed'}; "
        f"under {TARGET_GB:g} GB peak: {'met' if t['memory_met'] else 'missed'}{disturbed}."
    )
    return text + (render_vls(out) if vls else "")


def render_vls(out):
    """The VLS run's subsets and the slice against skrebate, after the main table."""
    r, c = out["run"], out["vs_skrebate"]
    if r["pair_shared"]:
        ranks_in = ", ".join(map(str, r["pair_ranks_in_shared_subset"]))
        pair = (
            f"shared {len(r['pair_shared_subsets'])} of the {r['num_feature_subset']} "
            f"subsets (ranks {ranks_in} among the first one's SNPs)"
        )
    else:
        pair = f"shared none of the {r['num_feature_subset']} subsets"
    text = (
        f"\n\nEach SNP in {r['subsets_per_snp_mean']} subsets on average; the interacting "
        f"pair's SNPs sat in {r['pair_subset_counts'][0]} and {r['pair_subset_counts'][1]} "
        f"subsets and {pair}."
    )
    rows = []
    for fit in c["fits"]:
        ok = fit.get("ok") and "fit_s" in fit
        rows.append(
            [
                f"{fit['library']} VLS(MultiSURF())",
                fit.get("rows_as", fit["dtype"]),
                f"{c['n_samples']:,} x {c['n_features']:,}",
                f"{c['num_feature_subset']} x {c['size_feature_subset']:,}",
                fit["fit_s"] if ok else f"failed: {fit.get('error', '')[-80:]}",
                fit.get("warmup_fit_s"),
                f"{fit['skrebate_over_this']:.1f}x" if fit.get("skrebate_over_this") else None,
                f"{fit['max_abs_diff_vs_skrebate']:.1e}"
                if fit.get("max_abs_diff_vs_skrebate") is not None
                else None,
                fit.get("other_cores_busy"),
            ]
        )
    table = harness.markdown_table(
        [
            "library",
            "rows as",
            "N x A (first SNPs)",
            "subsets x SNPs",
            "fit s (1 thread)",
            "warm-up (compile) s",
            "skrebate's time over this",
            "max abs diff vs skrebate",
            "other processes' cores",
        ],
        rows,
    )
    return text + "\n\n" + table


def vls_slice(args, a, quick):
    """The VLS fits on the first SNPs of the ``a``, each in a fresh one-thread interpreter,
    and how they compare."""
    width = SLICE_SNPS_QUICK if quick else SLICE_SNPS
    size = SLICE_SIZE_QUICK if quick else SLICE_SIZE
    spec = {
        "n": N,
        "a": a,
        "seed": SEED,
        "estimator": "vls-slice",
        "slice": width,
        "num_feature_subset": vls_subsets(width, size),
        "size_feature_subset": size,
    }
    fits = []
    for library, dtype in SLICE_FITS:
        run = harness.launch(
            __file__,
            {**spec, "library": library, "dtype": dtype},
            threads=1,
            timeout=3600,
            quiet_cores=VLS_QUIET_CORES,
            idle_wait=args.idle_wait,
            attempts=args.attempts,
        )
        fits.append({"library": library, "dtype": dtype, **run})
    sk = next(f for f in fits if f["library"] == "skrebate")
    for fit in fits:  # a fit that failed has no scores
        if fit is not sk and "scores" in fit and "scores" in sk:
            diff = np.abs(np.subtract(fit["scores"], sk["scores"])).max()
            fit["max_abs_diff_vs_skrebate"] = float(diff)
            fit["skrebate_over_this"] = round(sk["fit_s"] / fit["fit_s"], 2)
    for fit in fits:
        fit.pop("scores", None)
    ok = [f for f in fits if f.get("ok") and "fit_s" in f]
    return {
        "n_samples": N,
        "n_features": width,
        "of_n_features": a,
        "num_feature_subset": spec["num_feature_subset"],
        "size_feature_subset": size,
        "threads": 1,
        "fits": fits,
        "disturbed": any((f.get("other_cores_busy") or 0) >= VLS_QUIET_CORES for f in ok),
        "note": f"the first {width:,} of the {a:,} SNPs (1/{a // width})"
        + (
            ""
            if quick
            else ", not 1/20: skrebate's VLS + MultiSURF on 1/20 (11,500 "
            "SNPs, 23 subsets of 1,000) would take over an hour here"
        ),
    }


def main(argv=None):
    parser = harness.options(
        __doc__, quick=f"{N:,} x {A_QUICK:,} SNPs", idle_wait=600, attempts=1, worker=True
    )
    parser.add_argument(
        "--snps",
        type=int,
        default=None,
        help=f"number of SNPs (default: {A:,}, {A_QUICK:,} with --quick)",
    )
    parser.add_argument(
        "--estimator",
        choices=("multisurf", "vls"),
        default="multisurf",
        help="MultiSURF() (default), or VLS + MultiSURF and the slice against "
        "skrebate (stored as variant vls unless --variant is given)",
    )
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.emit_result(measure(json.loads(args.worker)))
        return 0
    vls = args.estimator == "vls"
    variant = "vls" if vls and args.variant == "default" else args.variant
    a = args.snps or (A_QUICK if args.quick else A)
    spec = {"n": N, "a": a, "seed": SEED}
    if vls:
        spec.update(
            estimator="vls",
            num_feature_subset=vls_subsets(a, VLS_SIZE),
            size_feature_subset=VLS_SIZE,
        )
    run = harness.launch(
        __file__,
        spec,
        threads=THREADS,
        timeout=3600,
        quiet_cores=VLS_QUIET_CORES if vls else 1.0,
        idle_wait=args.idle_wait,
        attempts=args.attempts,
    )
    ok = run.get("ok", False) and "fit_s" in run
    peak_gb = run.get("peak_rss_process_mib", float("nan")) * 2**20 / 1e9
    out = {
        "benchmark": "gwas",
        "mode": "quick" if args.quick else "full",
        "machine": harness.machine_info(VLS_PACKAGES if vls else PACKAGES),
        "revision": harness.git_revision(harness.REPO),
        **({"estimator": "vls"} if vls else {}),
        "threads": THREADS,
        "epistasis_weight": EPISTASIS_WEIGHT,
        "beta": BETA,
        "run": run,
        "disturbed": bool(ok and (run.get("other_cores_busy") or 0) >= 0.5),
        "targets": {
            "time_s": TARGET_S,
            "memory_gb": TARGET_GB,
            "time_met": bool(ok and run["fit_s"] < TARGET_S),
            "memory_met": bool(ok and peak_gb < TARGET_GB),
            "peak_gb": round(peak_gb, 3) if ok else None,
            "at_target_size": a == A,
        },
    }
    if vls:
        out["vs_skrebate"] = vls_slice(args, a, args.quick)
    out["markdown"] = render(out)
    print(out["markdown"])
    harness.write_variant("gwas", out, variant=variant, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
