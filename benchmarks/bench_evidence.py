"""Which features matter: the knockoff filter against permutation and STIR p-values on partial nulls.

The cells are those of ``benchmarks/_partial_nulls.py``: k informative features
among A, the others independent of y given them (a block of them correlated with
the informative ones in the correlated cells), and two real data sets with
uniform noise columns planted.  Every method fits the same draws; for each
method and cell the result (``benchmarks/results/evidence.json``, or
``benchmarks/results/quick/evidence.json`` with ``--quick``) holds, at q = 0.1
and q = 0.2:

* the FDR: the mean false-discovery proportion over the draws (a selection's
  share of null columns, 0 for an empty selection), with its 95 % interval
  (normal, on the mean: mean +- 1.96 standard errors) and whether it is at most
  q + 2 standard errors;
* the power: the mean share of the informative features selected (real data
  sets: the mean number of their own features selected, none known null).

The methods:

* ``KnockoffSelector(ReliefF())`` and ``KnockoffSelector(MultiSURF())``, Gaussian
  copula knockoffs (``knockoffs="independent"`` on the genotypes, whose SNPs are
  independent); both levels' selections come from one fit per draw (the statistic
  W thresholded at each q with ``knockoff_threshold``);
* ``KnockoffSelector(ReliefF(), knockoffs="gaussian")``, the textbook second-order
  Gaussian knockoffs on the raw features: valid only where the features are
  normal (column "knockoffs valid");
* ``ReliefF(n_permutations=B)`` p-values with Benjamini-Hochberg at q (B + 1 fits
  a draw: on three cells only, half of their draws);
* STIR: ``ReliefF(pvalues=True)`` and ``MultiSURF(pvalues=True)``, Benjamini-Hochberg
  at q on the p-values STIR computes; a fit that declines (a warning: outside the
  domain where its law has been shown calibrated) is counted, and its p-values are
  still computed (the same fit with the domain check off) so that the table says
  what a user who ignored the warning would have selected.

Usage::

    python benchmarks/bench_evidence.py --quick                  # a few tune draws a cell
    python benchmarks/bench_evidence.py --split tune --draws 20 --cells uniform
    python benchmarks/bench_evidence.py --split report --jobs 2 --variant report  # quoted
    python benchmarks/bench_evidence.py --variant report --render  # its tables, again

A construction that refuses a draw (the independence check of
``knockoffs="independent"`` rejects about one valid draw in a hundred, its level)
is counted and the cell goes on; one that refuses the first three draws refuses
the cell.  ``--replace-into VARIANT`` reruns a few (cell, method) pairs on the
same seeds into a stored variant, recording the command under ``"reruns"``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

# One thread a process (set before numpy loads): --jobs processes are the parallelism, and
# a threaded BLAS under other processes' load made the S solve many times slower.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from scipy.stats import false_discovery_control  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as harness  # noqa: E402
import _partial_nulls as nulls  # noqa: E402

DRAWS, DRAWS_QUICK = 200, 3
LEVELS = (0.1, 0.2)
PERMUTATIONS = 199
#: The cells (their names start so) where the permutation arm runs: B + 1 fits a draw.
PERMUTATION_CELLS = ("uniform, 1:1", "uniform, 1:4", "wdbc")
#: The permutation arm's share of a cell's draws (B + 1 fits each).
PERMUTATION_SHARE = 0.5
#: The cells of the derandomised arm (``n_draws`` knockoff draws aggregated by e-values).
DERANDOMISED_CELLS = ("uniform, 1:1", "correlated normal, rho 0.6")
DERANDOMISED_DRAWS = 5
#: A construction refusing this many first draws in a row refuses the cell.
REFUSED_FIRST = 3
#: Shapes whose marginals are normal: where the textbook Gaussian knockoffs are valid.
NORMAL_SHAPES = ("normal", "correlated")


def _inner(name, cell, seed, **params):
    """The estimator a method wraps; its ``random_state`` is the draw's ``seed``, so
    that a cell's sampled anchors are the same in every run."""
    import dmargin

    if cell.anchors is not None:
        params["n_anchors"] = cell.anchors
    return getattr(dmargin, name)(random_state=seed, **params)


def _construction(cell):
    return "independent" if cell.discrete else "copula"


def smatrix(cell):
    """knockpy's S of a cell: the default ``"mvr"``, but the closed-form equicorrelated S
    at A = 500, where mvr's solve takes seconds a draw."""
    return "equicorrelated" if cell.a >= 500 else "mvr"


def _validity(method, cell):
    """Whether a method's knockoffs are valid on a cell's null columns: ``"yes"`` or
    ``"no - why"``; ``"-"`` for p-values."""
    if "knockoffs" not in method:
        return "-"
    if "gaussian" in method:
        if cell.discrete:
            return "no - discrete"
        if cell.real or cell.shape not in NORMAL_SHAPES:
            return "no - marginal mismatch"
    return "yes"


def _knockoffs(name, knockoffs=None, n_draws=1, groups=None):
    def fit(cell, X, y, seed):
        import dmargin
        from dmargin.knockoffs._filter import knockoff_threshold

        sel = dmargin.KnockoffSelector(
            _inner(name, cell, seed),
            knockoffs=knockoffs or _construction(cell),
            smatrix=smatrix(cell),
            n_draws=n_draws,
            q=LEVELS[0],
            groups=groups,
            random_state=seed,
        ).fit(X, y)
        if n_draws > 1:  # e-BH at q = 0.1 only: the e-values depend on q
            return {LEVELS[0]: np.asarray(sel.selected_)}, {}
        W = np.asarray(sel.group_statistics_ if groups else sel.statistics_)
        out = {}
        for q in LEVELS:
            threshold = knockoff_threshold(W, q)
            chosen = np.flatnonzero(W >= threshold)  # groups: the members of those chosen
            out[q] = np.flatnonzero(np.isin(sel.groups_, chosen)) if groups else chosen
        assert np.array_equal(out[LEVELS[0]], np.sort(sel.selected_))  # one fit, both levels
        return out, {}

    return fit


@contextlib.contextmanager
def _domain_off():
    """STIR's p-values computed whatever its domain checks say (what a user ignoring
    the warning would get)."""
    from dmargin.relief import _relief
    from dmargin.surf import _surf

    saved = _relief.uncalibrated, _surf.uncalibrated
    _relief.uncalibrated = _surf.uncalibrated = lambda *args, **kwargs: None
    try:
        yield
    finally:
        _relief.uncalibrated, _surf.uncalibrated = saved


def _bh(pvalues):
    qvalues = false_discovery_control(np.asarray(pvalues, dtype=np.float64), method="bh")
    return {q: np.flatnonzero(qvalues <= q) for q in LEVELS}


def _stir(name):
    def fit(cell, X, y, seed):
        from dmargin import UncalibratedPValuesWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UncalibratedPValuesWarning)
            est = _inner(name, cell, seed, pvalues=True).fit(X, y)
        declined = any(issubclass(w.category, UncalibratedPValuesWarning) for w in caught)
        raw = _raw_pvalues(est)
        if raw is None:  # declined before STIR ran (outside its domain): run it anyway
            with _domain_off(), warnings.catch_warnings():
                warnings.simplefilter("ignore", UncalibratedPValuesWarning)
                est = _inner(name, cell, seed, pvalues=True).fit(X, y)
            raw = _raw_pvalues(est)
        if raw is None:
            raise RuntimeError(f"{name}: no STIR p-values even with the domain check off")
        return _bh(raw), {"declined": declined}

    return fit


def _raw_pvalues(est):
    """STIR's p-values of a fit, also where the fit declined them after computing them
    (an informative feature found), ``None`` where STIR did not run."""
    import importlib

    for module in ("dmargin._pvalues", "dmargin.relief._stir"):  # where the helper lives
        with contextlib.suppress(ImportError):
            raw_pvalues = getattr(importlib.import_module(module), "raw_pvalues", None)
            if raw_pvalues is not None:
                break
    raw = raw_pvalues(est)
    return None if raw is None else raw[1]


def _permutations(cell, X, y, seed):
    est = _inner("ReliefF", cell, seed, n_permutations=PERMUTATIONS).fit(X, y)
    return _bh(est.pvalues_), {}


#: name -> ``fit(cell, X, y, seed)`` returning ``({q: selected columns}, extras)``.
METHODS = {
    "ReliefF knockoffs": _knockoffs("ReliefF"),
    "MultiSURF knockoffs": _knockoffs("MultiSURF"),
    "ReliefF knockoffs (gaussian)": _knockoffs("ReliefF", "gaussian"),
    f"ReliefF knockoffs, {DERANDOMISED_DRAWS} draws (e-values)": _knockoffs(
        "ReliefF", n_draws=DERANDOMISED_DRAWS
    ),
    # Group knockoffs (groups="auto"): on the real cells, whose planted noise columns
    # correlate with nothing and stay groups of their own.
    "ReliefF group knockoffs": _knockoffs("ReliefF", groups="auto"),
    "MultiSURF group knockoffs": _knockoffs("MultiSURF", groups="auto"),
    f"ReliefF permutations (B = {PERMUTATIONS})": _permutations,
    "ReliefF STIR": _stir("ReliefF"),
    "MultiSURF STIR": _stir("MultiSURF"),
}


def _applies(method, cell):
    if "permutations" in method:
        return cell.name.startswith(PERMUTATION_CELLS)
    if "group" in method:
        return cell.real
    if "e-values" in method:
        return cell.name.startswith(DERANDOMISED_CELLS)
    if cell.a >= 500:  # the S solve at A = 500 is seconds a draw: the main arms only
        return method in ("ReliefF knockoffs", "ReliefF STIR")
    return True


def default_refusal(cell):
    """What ``KnockoffSelector(ReliefF())`` (``knockoffs="auto"``) says on a cell's data."""
    import dmargin

    X, y, _, _ = nulls.draw(cell, "tune", 0)
    try:
        dmargin.KnockoffSelector(dmargin.ReliefF(), random_state=0).fit(X, y)
    except ValueError as err:
        return str(err)
    return None


def run_cell(split, draws, cell, method, start=0):
    """``draws`` fits of ``method`` on draws of ``cell``: a row per level."""
    fit = METHODS[method]
    if "permutations" in method:
        draws = max(2, round(draws * PERMUTATION_SHARE))
    t0 = time.perf_counter()
    fdp = {q: [] for q in LEVELS}
    power = {q: [] for q in LEVELS}
    real_selected = {q: [] for q in LEVELS}
    declined = refused_draws = 0
    refused = None
    for i in range(start, start + draws):
        X, y, informative, null = nulls.draw(cell, split, i)
        try:
            selected, extras = fit(cell, X, y, nulls.seed_of(cell, split, i))
        except ValueError as err:  # a construction that refuses these data
            refused, refused_draws = str(err), refused_draws + 1
            if refused_draws == i - start + 1 >= REFUSED_FIRST:
                break  # refuses the cell's data, not a draw's: stop
            continue  # e.g. the independence check's level: a draw in a hundred
        declined += bool(extras.get("declined"))
        for q, chosen in selected.items():
            f, p = nulls.fdp_power(chosen, informative, null)
            fdp[q].append(f)
            if informative is None:
                real_selected[q].append(int(np.sum(~np.isin(chosen, null))))
            else:
                power[q].append(p)
    base = {
        "cell": cell.name,
        "method": method,
        "split": split,
        "first_draw": start,
        "knockoffs_valid": _validity(method, cell),
        "smatrix": smatrix(cell) if "knockoffs" in method else None,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if refused is not None and not any(fdp.values()):
        return [{**base, "draws": 0, "refused": refused}]
    if refused_draws:  # the draws a construction refused are not in the FDR
        base.update(refused_draws=refused_draws, refused_example=refused)
    rows = []
    for q in LEVELS:
        if not fdp[q]:
            continue
        f = np.asarray(fdp[q])
        se = float(f.std(ddof=1) / np.sqrt(f.size)) if f.size > 1 else float("nan")
        row = {
            **base,
            "q": q,
            "draws": int(f.size),
            "fdr": round(float(f.mean()), 4),
            "fdr_se": round(se, 4),
            "fdr_ci95": [
                round(float(f.mean()) - 1.96 * se, 4),
                round(float(f.mean()) + 1.96 * se, 4),
            ],
            "fdr_within_q_plus_2se": bool(f.mean() <= q + 2 * se),
            "share_of_draws_with_a_false_discovery": round(float(np.mean(f > 0)), 4),
        }
        if power[q]:
            row["power"] = round(float(np.mean(power[q])), 4)
        if real_selected[q]:
            row["real_features_selected"] = round(float(np.mean(real_selected[q])), 2)
        if "STIR" in method:
            row["declined"] = declined
        rows.append(row)
    print(
        {k: rows[0][k] for k in ("cell", "method", "fdr", "seconds")} if rows else base, flush=True
    )
    return rows


def _run_star(args):
    return run_cell(*args)


def _cost(cell, method):
    """A rough order of the tasks, longest first (for the process pool)."""
    fits = (
        PERMUTATIONS + 1
        if "permutations" in method
        else DERANDOMISED_DRAWS
        if "e-values" in method
        else 1
    )
    width = cell.a * (1 if "STIR" in method or "permutations" in method else 2)
    rows = cell.n if cell.anchors is None else cell.anchors
    return fits * cell.n * rows * width + (cell.a**3 * 50 if "knockoffs" in method else 0)


def battery(split, draws, only=None, methods=None, jobs=1, start=0):
    tasks = [
        (cell, method)
        for cell in nulls.cells()
        if not only or any(o in cell.name for o in only)
        for method in (methods or METHODS)
        if _applies(method, cell)
    ]
    tasks.sort(key=lambda t: -_cost(*t))
    args = [(split, draws, cell, method, start) for cell, method in tasks]
    if jobs <= 1:
        results = [run_cell(*a) for a in args]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        for var in harness.THREAD_VARS:  # the processes are the parallelism
            os.environ[var] = "1"
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_run_star, args))
    order = {c.name: i for i, c in enumerate(nulls.cells())}
    names = list(METHODS)
    rows = [r for rs in results for r in rs]
    rows.sort(key=lambda r: (order[r["cell"]], names.index(r["method"]), r.get("q", 0)))
    return rows


def _interval(r):
    return f"{r['fdr']:.3f} ({r['fdr_ci95'][0]:.3f}-{r['fdr_ci95'][1]:.3f})"


def render(rows):
    """The battery's table: a row per cell and method, both levels side by side."""
    out = []
    for (cell, method), group in _groups(rows).items():
        first = group[0]
        if "refused" in first:
            out.append(
                [
                    cell,
                    method,
                    first["knockoffs_valid"],
                    0,
                    "refused: " + _short(first["refused"]),
                    "",
                    "",
                    "",
                ]
            )
            continue
        by_q = {r["q"]: r for r in group}
        cells = []
        for q in LEVELS:
            r = by_q.get(q)
            if r is None:
                cells += ["-", "-"]
                continue
            mark = "" if r["fdr_within_q_plus_2se"] else " **over**"
            cells += [_interval(r) + mark, _power(r)]
        note = f"declined {first['declined']} of {first['draws']}" if "declined" in first else ""
        if first.get("refused_draws"):
            note = (
                f"refused {first['refused_draws']} of "
                f"{first['draws'] + first['refused_draws']} draws"
            )
        out.append([cell, method, first["knockoffs_valid"], first["draws"], *cells, note])
    return harness.markdown_table(
        [
            "cell",
            "method",
            "knockoffs valid",
            "draws",
            "FDR at q = 0.1 (95 % interval)",
            "power at q = 0.1",
            "FDR at q = 0.2 (95 % interval)",
            "power at q = 0.2",
            "notes",
        ],
        [r if len(r) == 9 else r + [""] * (9 - len(r)) for r in out],
    )


def _power(r):
    if "power" in r:
        return f"{r['power']:.3f}"
    if "real_features_selected" in r:
        return f"{r['real_features_selected']:.1f} real"
    return "-"


def _short(message):
    return message.split(". ")[0].replace("|", "/")


def _groups(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["cell"], r["method"]), []).append(r)
    return groups


def render_summary(rows):
    """Per method: the cells where its construction is valid, and in how many of them
    the FDR is at most q + 2 standard errors at each level."""
    out = [
        "| method | valid cells | FDR <= q + 2 SE at q = 0.1 | at q = 0.2 | "
        "highest FDR at q = 0.1 | at q = 0.2 |",
        "|---|---|---|---|---|---|",
    ]
    for method in METHODS:
        group = [
            r
            for r in rows
            if r["method"] == method and "fdr" in r and r["knockoffs_valid"] in ("yes", "-")
        ]
        if not group:
            continue
        cells = sorted({r["cell"] for r in group})
        line = [method, str(len(cells))]
        for q in LEVELS:
            at = [r for r in group if r["q"] == q]
            line.append(
                f"{sum(r['fdr_within_q_plus_2se'] for r in at)} of {len(at)}" if at else "-"
            )
        for q in LEVELS:
            at = [r for r in group if r["q"] == q]
            line.append(f"{max(r['fdr'] for r in at):.3f}" if at else "-")
        out.append("| " + " | ".join(line) + " |")
    return "\n".join(out)


def large(n_rows, n_features, informative=5, chunk=125_000):
    """``KnockoffSelector(ReliefF(n_anchors=500), q=0.2)`` on ``n_rows`` x ``n_features``
    uniform rows in dask (threaded), ``informative`` of them in the labels: the time of the
    knockoffs' own passes (marginals and correlation, then the draw, persisted) against the
    inner fit on ``2 A`` features and a plain ``ReliefF`` fit on the ``A`` features, the
    selection, the process's peak memory against the rows' size, and ``fit_cost``'s estimate."""
    import dask.array as da

    import dmargin

    X = (
        da.random.RandomState(0)
        .random_sample((n_rows, n_features), chunks=(chunk, n_features))
        .persist()
    )
    y = ((X[:, :informative] - 0.5).sum(axis=1) > 0).astype(np.int64).persist()
    peak_before = harness.peak_rss_mib()
    inner = dmargin.ReliefF(n_anchors=500, random_state=0)
    out = {
        "n_rows": n_rows,
        "n_features": n_features,
        "informative": informative,
        "rows_mib": round(n_rows * n_features * 8 / 2**20, 1),
    }
    t = time.perf_counter()
    sampler = dmargin.KnockoffSampler().fit(X)
    out["sampler_fit_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    augmented = sampler.augment(X, 0).persist()
    out["augment_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    dmargin.ReliefF(n_anchors=500, random_state=0).fit(augmented, y)
    out["inner_fit_s"] = round(time.perf_counter() - t, 2)
    del augmented
    t = time.perf_counter()
    dmargin.ReliefF(n_anchors=500, random_state=0).fit(X, y)
    out["plain_relieff_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    sel = dmargin.KnockoffSelector(inner, q=0.2, random_state=0).fit(X, y)
    out["selector_s"] = round(time.perf_counter() - t, 2)
    out["selector_over_plain"] = round(out["selector_s"] / out["plain_relieff_s"], 2)
    out["selected"] = sel.selected_.tolist()
    out["peak_rss_mib"] = round(harness.peak_rss_mib(), 1)
    out["peak_rss_before_mib"] = round(peak_before, 1)
    out["fit_cost_s"] = round(
        dmargin.fit_cost(dmargin.KnockoffSelector(inner), n_rows, n_features).seconds, 2
    )
    return out


def main(argv=None):
    parser = harness.options(__doc__, quick=f"{DRAWS_QUICK} tune draws a cell")
    parser.add_argument(
        "--split",
        choices=sorted(nulls.SPLITS),
        default="report",
        help="the seeds: 'tune' while building, 'report' for what is quoted",
    )
    parser.add_argument(
        "--draws",
        type=int,
        default=None,
        metavar="N",
        help=f"draws a cell (default {DRAWS}; {DRAWS_QUICK} with --quick)",
    )
    parser.add_argument(
        "--start", type=int, default=0, metavar="I", help="the draws I, I + 1, ... of each cell"
    )
    parser.add_argument(
        "--cells",
        nargs="*",
        default=None,
        metavar="TEXT",
        help="only the cells whose name holds one of these",
    )
    parser.add_argument(
        "--methods", nargs="*", choices=list(METHODS), default=None, help="only these methods"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help="run the (cell, method) pairs in J processes of one thread each",
    )
    parser.add_argument(
        "--replace-into",
        default=None,
        metavar="VARIANT",
        help="put this run's rows into VARIANT in place of its rows of the "
        "same cells and methods (a rerun of a few), and its command "
        "under the variant's 'reruns'",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="fit nothing: rewrite the stored variant's tables from its rows",
    )
    parser.add_argument(
        "--large",
        type=int,
        default=None,
        metavar="N",
        help="fit nothing of the battery: time the selector on N x 20 rows "
        "in dask (variant large-N)",
    )
    args = harness.parse_args(parser, argv)
    if args.large:
        out = {
            "benchmark": "evidence",
            "mode": "quick" if args.quick else "full",
            "machine": harness.machine_info(["numpy", "scipy", "knockpy", "dask", "dmargin"]),
            "revision": harness.git_revision(harness.REPO),
            "large": large(args.large, 20),
        }
        print(out["large"])
        harness.write_variant("evidence", out, variant=f"large-{args.large}", quick=args.quick)
        return 0
    if args.render:
        out = harness.load_variant("evidence", args.variant, quick=args.quick)
        out["markdown"] = render(out["battery"])
        out["summary_markdown"] = render_summary(out["battery"])
        import shlex

        saved, sys.argv = sys.argv, shlex.split(out["command"])[1:]  # keep the run's command
        try:
            harness.write_variant("evidence", out, variant=args.variant, quick=args.quick)
        finally:
            sys.argv = saved
        print(out["markdown"])
        return 0
    split = "tune" if args.quick else args.split
    draws = args.draws or (DRAWS_QUICK if args.quick else DRAWS)
    t0 = time.perf_counter()
    rows = battery(split, draws, args.cells, args.methods, args.jobs, args.start)
    genotypes = [
        c
        for c in nulls.cells()
        if c.discrete
        and (not args.cells or any(o in c.name for o in args.cells))
        and any("knockoffs" in m for m in (args.methods or METHODS))
    ]
    out = {
        "benchmark": "evidence",
        "mode": "quick" if args.quick else "full",
        "machine": harness.machine_info(["numpy", "scipy", "knockpy", "dmargin"]),
        "revision": harness.git_revision(harness.REPO),
        "split": split,
        "levels": list(LEVELS),
        "permutations": PERMUTATIONS,
        "wall_s": round(time.perf_counter() - t0, 1),
        "default_on_genotypes": {c.name: default_refusal(c) for c in genotypes},
        "battery": rows,
    }
    if args.replace_into:
        import shlex

        into = harness.load_variant("evidence", args.replace_into, quick=args.quick)
        done = {(r["cell"], r["method"]) for r in rows}
        kept = [r for r in into["battery"] if (r["cell"], r["method"]) not in done]
        order = {c.name: i for i, c in enumerate(nulls.cells())}
        names = list(METHODS)
        into["battery"] = sorted(
            kept + rows, key=lambda r: (order[r["cell"]], names.index(r["method"]), r.get("q", 0))
        )
        into.setdefault("reruns", []).append(shlex.join(["python", *sys.argv]))
        out, args.variant = into, args.replace_into
        saved, sys.argv = sys.argv, shlex.split(out["command"])[1:]  # keep the run's command
    out["markdown"] = render(out["battery"])
    out["summary_markdown"] = render_summary(out["battery"])
    print(out["markdown"])
    print(out["summary_markdown"])
    try:
        harness.write_variant("evidence", out, variant=args.variant, quick=args.quick)
    finally:
        if args.replace_into:
            sys.argv = saved
    return 0


if __name__ == "__main__":
    sys.exit(main())
