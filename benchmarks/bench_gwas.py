"""MultiSURF on GWAS-scale genotypes (skrebate issue 74's shape): time, memory, planted SNPs.

skrebate issue 74 reports 2,350 samples x 230,000 SNPs (3 classes) taking 32 hours on
64 vCPUs (VLS + MultiSURF).  What is measured (results go to
``benchmarks/results/gwas.json``, or ``benchmarks/results/quick/gwas.json`` with
``--quick``):

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

Usage::

    python benchmarks/bench_gwas.py             # 2,350 x 230,000 (several minutes)
    python benchmarks/bench_gwas.py --quick     # 2,350 x 5,000 (under a minute)
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


def measure(spec):
    import dmargin

    n, a = spec["n"], spec["a"]
    t0 = time.perf_counter()
    X, y, pair, marginal = make_gwas(n, a, spec["seed"])
    generate_s = time.perf_counter() - t0
    rss_data = harness.rss_mib()

    # Warm-up: both twins of the compact kernels compiled (the threaded ones too,
    # which a fit this small would not pick on its own).
    import dmargin.engine._numba as policy

    min_work, policy.PARALLEL_MIN_WORK = policy.PARALLEL_MIN_WORK, 0
    try:
        warm_s, _ = harness.timed(dmargin.MultiSURF().fit, X[:50, :200], y[:50])
        warm_s += harness.timed(dmargin.MultiSURF().fit, X[:50, :200], y[:50])[0]
    finally:
        policy.PARALLEL_MIN_WORK = min_work
    warm_s += harness.timed(dmargin.MultiSURF().fit, X[:50, :200], y[:50])[0]
    monitor = harness.CpuMonitor().start()
    with PeakSampler() as sampler:
        fit_s, est = harness.timed(dmargin.MultiSURF().fit, X, y)
    load = monitor.stop()
    scores = est.feature_importances_
    pair_ranks, marginal_ranks = ranks(scores, pair), ranks(scores, marginal)
    return {
        "n_samples": n, "n_features": a, "n_classes": N_CLASSES, "seed": spec["seed"],
        "class_counts": np.bincount(y, minlength=N_CLASSES).tolist(),
        "compact_dtype": str(est.compact_dtype_),
        "data_mib_uint8": round(X.nbytes / 2**20, 1),
        "data_mib_as_float64": round(8 * X.nbytes / 2**20, 1),
        "generate_s": round(generate_s, 2), "rss_after_data_mib": round(rss_data, 1),
        "warmup_fit_s": round(warm_s, 2), "fit_s": round(fit_s, 2),
        "peak_rss_fit_mib": round(sampler.peak / 2**20, 1), "rss_samples": sampler.samples,
        "peak_rss_process_mib": round(harness.peak_rss_mib(), 1),
        "pair_columns": [int(c) for c in pair], "pair_ranks": pair_ranks,
        "marginal_columns": [int(c) for c in marginal], "marginal_ranks": marginal_ranks,
        "marginal_in_top_20": int(sum(r <= N_MARGINAL for r in marginal_ranks)),
        "marginal_in_top_100": int(sum(r <= 100 for r in marginal_ranks)),
        "top_10_columns": [int(c) for c in np.argsort(-scores, kind="stable")[:10]],
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
    disturbed = (" ({}: other processes kept {} cores busy during the fit, 1-minute load {}; "
                 "the fit had {} of its {} threads' cores)").format(
        "disturbed" if out["disturbed"] else "quiet", r["other_cores_busy"], r["loadavg_1min"],
        r["own_cores_busy"], out["threads"])
    rows = [["MultiSURF()", f"{r['n_samples']:,} x {r['n_features']:,}", r["compact_dtype"],
             f"{r['data_mib_uint8']:,.0f} MiB (float64 {r['data_mib_as_float64']:,.0f})",
             r["fit_s"], r["warmup_fit_s"], f"{r['peak_rss_fit_mib']:,.0f}",
             f"{r['peak_rss_process_mib']:,.0f}", ", ".join(map(str, r["pair_ranks"])),
             f"{r['marginal_in_top_20']} / 20 (top 100: {r['marginal_in_top_100']})"]]
    table = harness.markdown_table(
        ["estimator", "N x A", "rows as", "data", "fit s", "warm-up (compile) s",
         "peak RSS in fit MiB", "peak RSS process MiB", "interacting pair ranks",
         "marginal SNPs in top 20"], rows)
    return (table + f"\n\nTarget under {TARGET_S:.0f} s: {'met' if t['time_met'] else 'missed'}; "
            f"under {TARGET_GB:g} GB peak: {'met' if t['memory_met'] else 'missed'}{disturbed}.")


def main(argv=None):
    parser = harness.options(__doc__, quick=f"{N:,} x {A_QUICK:,} SNPs", idle_wait=600,
                             attempts=1, worker=True)
    parser.add_argument("--snps", type=int, default=None, help="number of SNPs (default: "
                        f"{A:,}, {A_QUICK:,} with --quick)")
    args = harness.parse_args(parser, argv)
    if args.worker:
        harness.emit_result(measure(json.loads(args.worker)))
        return 0
    a = args.snps or (A_QUICK if args.quick else A)
    spec = {"n": N, "a": a, "seed": SEED}
    run = harness.launch(__file__, spec, threads=THREADS, timeout=3600, quiet_cores=1.0,
                         idle_wait=args.idle_wait, attempts=args.attempts)
    ok = run.get("ok", False) and "fit_s" in run
    peak_gb = run.get("peak_rss_process_mib", float("nan")) * 2**20 / 1e9
    out = {"benchmark": "gwas", "mode": "quick" if args.quick else "full",
           "machine": harness.machine_info(PACKAGES),
           "revision": harness.git_revision(harness.REPO),
           "threads": THREADS, "epistasis_weight": EPISTASIS_WEIGHT, "beta": BETA,
           "run": run,
           "disturbed": bool(ok and (run.get("other_cores_busy") or 0) >= 0.5),
           "targets": {"time_s": TARGET_S, "memory_gb": TARGET_GB,
                       "time_met": bool(ok and run["fit_s"] < TARGET_S),
                       "memory_met": bool(ok and peak_gb < TARGET_GB),
                       "peak_gb": round(peak_gb, 3) if ok else None,
                       "at_target_size": a == A}}
    out["markdown"] = render(out)
    print(out["markdown"])
    harness.write_variant("gwas", out, variant=args.variant, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
