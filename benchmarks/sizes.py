"""Which estimator at which size: the N at which a fit takes a minute or an hour.

Not a measurement of its own: it turns what the other benchmarks measured into
sizes (results go to ``benchmarks/results/sizes.json``).

1. **This machine** (2 cores): ``dmargin.fit_cost`` -- each estimator's work
   from N, A, the anchors and the iterations, at the rates measured by
   ``bench_relief_speed.py``, ``bench_online_scale.py`` and
   ``bench_immigrate_speed.py`` -- solved for the N at which a fit takes one
   minute and one hour, at A = 50.
2. **100 workers**: the strong-scaling model of ``bench_strong_scaling.py``,
   ``T(P) = T_tiles / min(P, tiles) + T_fixed``: the 2-core time is spread over
   ``min(P, tiles)`` workers at the per-worker efficiency the 2-worker run
   measured (at most 1), ``tiles`` being the fit's tile tasks per pass, plus the fixed
   cost per task the model measured.  The rows are taken to come in blocks
   of ``N / 200`` rows (two per worker), at least 1,000 and at most the
   engine's block size (``engine.execution.rows_per_block``); a sample of
   anchors is one anchor block, so a sampled pass has one tile per block.
   IMMIGRATE's ``fit_cost`` is a one-core figure (its model), online
   I-RELIEF's too (a stream runs on one core, here and on a cluster); the
   others are 2-core figures, turned into one-core work with the 2-worker
   speed-up.
3. **Checked against the large runs**: where ``bench_large.py`` fitted the same
   setting at 10^6 or 10^7 rows on a 2-worker LocalCluster, its measured time
   beside the model's.

Usage::

    python benchmarks/sizes.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402

A = 50
WORKERS = 100
# (label, dmargin estimator, its parameters, bench_large key or None)
SETTINGS = [
    ("ReliefF() exact", "ReliefF", {}, None),
    ("ReliefF(n_anchors=1000)", "ReliefF", {"n_anchors": 1000}, "relieff"),
    ("IRelief(max_iter=10, tol=0) exact", "IRelief", {"max_iter": 10, "tol": 0}, None),
    (
        "IRelief(n_anchors=1000, max_iter=10, tol=0)",
        "IRelief",
        {"n_anchors": 1000, "max_iter": 10, "tol": 0},
        None,
    ),
    (
        "IRelief(n_anchors=1000, max_iter=3, tol=0)",
        "IRelief",
        {"n_anchors": 1000, "max_iter": 3, "tol": 0},
        "irelief",
    ),
    (
        "OnlineIRelief(reference_size=1000, n_passes=1)",
        "OnlineIRelief",
        {"reference_size": 1000, "n_passes": 1},
        "online",
    ),
    ("Immigrate() exact, 10 steps", "Immigrate", {}, None),
    ("Immigrate(n_anchors=500), 10 steps", "Immigrate", {"n_anchors": 500}, "immigrate"),
    ("MultiSURF() exact", "MultiSURF", {}, None),
    ("MultiSURF(n_anchors=1000)", "MultiSURF", {"n_anchors": 1000}, None),
    (
        "MultiSURF(n_anchors=1000, pvalues=True)",
        "MultiSURF",
        {"n_anchors": 1000, "pvalues": True},
        None,
    ),
    ('LDM(kernel="linear")', "LDM", {"kernel": "linear"}, "ldm_linear"),
    (
        'LDMRFE(n_features_to_select=10, kernel="linear")',
        "LDMRFE",
        {"n_features_to_select": 10, "kernel": "linear"},
        "ldm_rfe_linear",
    ),
]


def _seconds(est, n, cores=2, speedup=1.0):
    """``fit_cost``'s seconds on ``cores`` (1 or 2) of this machine."""
    import dmargin

    cost = dmargin.fit_cost(est, int(n), A)
    if cost is None:
        return None
    name = type(est).__name__
    if name == "OnlineIRelief":
        return cost.seconds  # one core's rate, and a stream runs on one core
    if name == "Immigrate":  # its model is one core's
        return cost.seconds / speedup if cores == 2 else cost.seconds
    return cost.seconds if cores == 2 else cost.seconds * speedup


def _tiles(est, n):
    """Tasks of one pass: tile tasks (pairs of blocks, or sample x blocks), or blocks."""
    from dmargin.engine.execution import rows_per_block

    block = min(rows_per_block(A, 2), max(1000, n / (2 * WORKERS)))
    candidates = max(1, -(-int(n) // int(block)))
    per_block = (
        type(est).__name__ in ("LDM", "LDMRFE", "SVMRFE")
        or getattr(est, "n_anchors", None) is not None
    )
    return candidates if per_block else candidates * candidates


def _passes(est, n):
    """Graphs a fit runs (each pays the fixed cost of its tasks)."""
    import dmargin

    name = type(est).__name__
    if name in ("LDM", "LDMRFE", "SVMRFE"):
        return dmargin.fit_cost(est, int(n), A).operations / (n * A)
    if name == "Immigrate":
        return 2 * est.max_iter
    if name in ("SURF", "SURFstar", "MultiSURF", "MultiSURFstar"):
        return 3 if getattr(est, "pvalues", False) else 2
    return getattr(est, "max_iter", 1)


def _on_workers(est, n, model):
    """Seconds on ``WORKERS`` workers: one core's work over min(P, tiles) workers."""
    one_worker = _seconds(est, n, 1, model["two_core_speedup"])
    if one_worker is None:
        return None
    if type(est).__name__ == "OnlineIRelief":
        return one_worker  # a sequential stream: more workers do not shorten it
    tiles = _tiles(est, n)
    return (
        one_worker / min(WORKERS, tiles) / model["efficiency"]
        + _passes(est, n) * tiles * model["fixed_s_per_task"]
    )


def _solve(fn, target, lo=1e2, hi=1e12):
    """The N (to 2 significant digits) with ``fn(N) = target``; fn grows with N."""
    if fn(hi) is None or fn(hi) < target:
        return None
    if fn(lo) > target:
        return lo
    for _ in range(200):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if fn(mid) < target else (lo, mid)
        if hi / lo < 1.001:
            break
    return float(f"{lo:.2g}")


def _measured(large, key):
    if large is None or key is None:
        return {}
    out = {}
    for r in large.get("runs", []):
        if r.get("estimator") == key and r.get("ok"):
            out[int(r["n"])] = r["fit_s"]
    return out


def main(argv=None):
    import dmargin

    parser = harness.options(__doc__, quick="the same (nothing is measured)", variant=False)
    harness.parse_args(parser, argv)
    scaling = harness.load_variant("strong_scaling")
    model_fit = scaling["model"]
    speedup = scaling["speedup_iteration"]
    model = {
        "two_core_speedup": speedup,
        "efficiency": model_fit["efficiency_2_workers"],
        "fixed_s_per_task": model_fit["fixed_ms_per_task"] / 1000,
    }
    # Every stored run of bench_large.py (its variants hold different N).
    variants = harness.load_results("large")["variants"].values()
    large = {"runs": [r for v in variants for r in v.get("runs", [])]} if variants else None
    rows, table = [], []
    for label, name, params, key in SETTINGS:
        est = getattr(dmargin, name)(**params)
        cost = dmargin.fit_cost(est, 10**6, A)
        row = {
            "setting": label,
            "formula": cost.formula.replace(
                f"{est.n_anchors}" if getattr(est, "n_anchors", None) else "\0", "m"
            ),
            "n_1_min": _solve(lambda n: _seconds(est, n, 2, speedup), 60),
            "n_1_h": _solve(lambda n: _seconds(est, n, 2, speedup), 3600),
            "n_1_h_100_workers": _solve(lambda n: _on_workers(est, n, model), 3600),
            "measured": {},
        }
        for n, seconds in sorted(_measured(large, key).items()):
            row["measured"][str(n)] = {
                "fit_s": seconds,
                "model_s": round(_seconds(est, n, 2, speedup), 1),
            }
        rows.append(row)
        checked = (
            "; ".join(
                f"N = {int(n):.0e}: {v['fit_s']:.0f} s (model {v['model_s']:.0f} s)"
                for n, v in row["measured"].items()
            )
            or "—"
        )
        table.append(
            [
                label,
                cost.formula,
                _fmt(row["n_1_min"]),
                _fmt(row["n_1_h"]),
                _fmt(row["n_1_h_100_workers"]),
                checked,
            ]
        )
    markdown = (
        f"A = {A} features, two classes. N for one minute and one hour on this 2-core machine "
        "from `dmargin.fit_cost` (the measured rates); on 100 workers from the strong-scaling "
        f"model (2-worker speed-up {speedup:.2f}, per-worker efficiency "
        f"{model['efficiency']:.2f}, {model_fit['fixed_ms_per_task']:.1f} ms per "
        "task; a fit has at most as many busy workers as tile tasks per pass). Last column: "
        "measured on a 2-worker LocalCluster reading Parquet (`bench_large.py`), against the "
        "model.\n\n"
        + harness.markdown_table(
            [
                "setting",
                "cost",
                "N in 1 min",
                "N in 1 h",
                "N in 1 h, 100 workers (model)",
                "measured (2 workers) vs model",
            ],
            table,
        )
    )
    out = {
        "benchmark": "sizes",
        "machine": harness.machine_info(["numpy", "numba", "dmargin"]),
        "revision": harness.git_revision(harness.REPO),
        "features": A,
        "model": model,
        "rows": rows,
        "markdown": markdown,
    }
    print(markdown)
    harness.write_variant("sizes", out)
    return 0


def _fmt(n):
    if n is None:
        return "—"
    if n >= 1e12:
        return "> 10^12"
    exponent = len(str(int(n))) - 1
    return f"{n / 10**exponent:.1f} x 10^{exponent}" if exponent >= 3 else f"{n:.0f}"


if __name__ == "__main__":
    sys.exit(main())
