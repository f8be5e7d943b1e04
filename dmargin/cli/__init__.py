"""``dmargin select``: rank the features of a Parquet, CSV or TSV file from the shell.

::

    dmargin select DATA --label COL [--method relieff] [--scheduler ADDRESS]
                   [--features COL,... | --exclude COL,...] [--missing-label drop|keep|raise]
                   [--spark MASTER] [--sigma S] [--max-iter N] [--n-neighbors K] [--anchors M]
                   [--random-state SEED]
                   [--top K] [--out FILE.csv|FILE.json] [--plot FILE.png] [--force]
                   [--yes] [-q]
    dmargin --version

``.csv``, ``.tsv`` and ``.txt`` files (also compressed: ``.csv.gz``, ...)
are read with pandas; anything else as Parquet (a file, a directory, a
Spark-written partitioned directory), lazily with
:func:`dmargin.read_parquet`.  With ``--scheduler`` the fit runs on that Dask
cluster (its dashboard link is printed); with ``--spark MASTER`` (``local[2]``,
``spark://host:7077``, ``yarn``) Spark reads DATA and the fit runs on its
executors (:func:`dmargin.spark.fit`; the process's active SparkSession is used
when there is one); otherwise in this process.  The
ranking (and, for IMMIGRATE, the top interactions, in
``<stem>_interactions.csv`` beside a CSV ``--out``) goes to ``--out`` as CSV
or JSON, or to the terminal.  For SBS-MF and LDM-RFE the ``score`` is the
criterion a feature had when it was eliminated (``elimination_scores_``) and
``rfe_rank`` its elimination rank.

The default method is ReliefF (one pass over the pairs of rows, the cheapest
exact ranking); beyond 100,000 rows it scores 1,000 sampled anchor rows against
all rows.  A fit estimated (:func:`dmargin.fit_cost`) at over 10 minutes is
refused without ``--yes``, and the message names the same method with an
``--anchors`` count that fits in about two minutes, with its estimate.

Nothing is lost, nothing hangs:

- Every user error ends with one line on stderr (``dmargin: error: ...``)
  and exit status 2.  The command line is checked before the data is read
  and the fit starts: ``--top`` positive; DATA exists; ``--sigma``,
  ``--max-iter``, ``--n-neighbors``, ``--anchors`` are parameters of the method
  and valid;
  ``--features`` and ``--exclude`` not both, nor the label; ``--out`` is ``.csv``
  or ``.json``, ``--plot`` a format matplotlib writes (and matplotlib is
  installed); their directories exist and are writable; a scheduler file
  exists and names an address.  The columns (label, ``--features``,
  ``--exclude``) are checked against the header or schema before the rows
  are read.
- An input is never overwritten: ``--out``, its ``_interactions.csv`` and
  ``--plot`` may not be DATA (also through a symlink or a hard link) nor lie
  inside a DATA directory, not even with ``--force``; they must be distinct
  files.  An existing output is replaced only with ``--force``.
- Outputs are written to a temporary file in the target directory and moved
  over the target with :func:`os.replace`, so an interrupted or failed write
  leaves the previous file intact.
- A ``--scheduler`` where no Dask scheduler answers (the address given, or the
  one in a scheduler file) ends the command within about 10 s: nothing
  listening, a port that accepts connections but never answers (a dashboard,
  a proxy), another service, a worker.  A ``tls://`` scheduler needs this
  client's TLS settings in the dask config (``DASK_DISTRIBUTED__COMM__TLS__CA_FILE``,
  ``DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT`` and ``..._CLIENT__KEY``, or a
  dask config file); without them the command stops at once.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._io import (
    UserError,
    check_spark_data,
    check_target,
    connect,
    dashboard_link,
    is_remote,
    plot_format,
    ranking_table,
    read_data,
    read_spark_data,
    save_plot,
    scheduler_address,
    spark_failure,
    spark_session,
    write_results,
)
from .._dask import ClusterStalledError, WorkerMemoryError
from .._cost import LongFitWarning, fit_cost, format_seconds
from .._interrupt import is_interrupt
from .._registry import cli_methods, estimator_names
from ..progress import on_progress

#: ``--method`` -> (estimator, the parameters it sets): the registry's (TuRF, Iter and
#: VLS around MultiSURF).
METHODS = cli_methods()
# Methods whose fit sets ``interactions_``: with a CSV --out they also write
# ``<stem>_interactions.csv``, which is checked like --out before the fit.
_WITH_INTERACTIONS = {"immigrate", "im4e-immigrate", "bim"}
#: ``--method`` when none is given: one pass over the pairs of rows (the cheapest exact
#: ranking; I-RELIEF and IMMIGRATE repeat such passes tens of times).
DEFAULT_METHOD = "relieff"
# Beyond this many rows the default method scores a sample of anchor rows: the
# Relief literature's m (Weka's -M) of about 1,000, in seconds up to ~10^7 rows.
_EXACT_ROWS = 100_000
_DEFAULT_ANCHORS = 1000
# Above this estimate the command names a faster setting before it starts.
_SLOW_SECONDS = 60.0
# Above this estimate the command refuses to start without --yes.
_ASK_SECONDS = 600.0
# The faster settings it names fit in this time (by the same estimate).
_ADVICE_SECONDS = 120.0
# Fewer anchors than this are not proposed: the weights would be mostly noise.
_MIN_ANCHORS = 100
# Estimator parameters settable from the command line: option -> parameter.
_TUNING = {
    "--sigma": "sigma",
    "--max-iter": "max_iter",
    "--n-neighbors": "n_neighbors",
    "--anchors": "n_anchors",
    "--pvalues": "pvalues",
    "--permutations": "n_permutations",
}


def _count_or_fraction(text):
    """``--anchors``: a count (``1000``) or a fraction of the rows (``0.01``)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither a number of rows (1000) nor a fraction (0.01)"
            ) from None


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error."""

    def error(self, message):
        self.exit(2, f"dmargin: error: {message} (see '{self.prog} --help').\n")


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dmargin")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from .. import __version__

        return __version__


def _names(text):
    """``--features a,b --features c`` -> ``["a", "b"]`` then ``["c"]`` (empty ones dropped)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _parser():
    parser = _Parser(prog="dmargin", description="Margin-based feature selection.")
    parser.add_argument("--version", action="version", version=f"dmargin {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser(
        "select",
        help="rank the features of a data set",
        description="Rank the features of DATA (Parquet, CSV or TSV) by LABEL.",
        epilog="The options are checked before the data is read. --out and --plot never "
        "overwrite the input (nor a file inside an input directory), not even with "
        "--force. Errors are one line on stderr and exit status 2.",
    )
    sel.add_argument(
        "data",
        help="a Parquet file or directory (also Spark output), or a "
        ".csv, .tsv or .txt file (also .gz, .bz2, .xz, .zip, .zst)",
    )
    sel.add_argument("--label", required=True, help="the label column")
    sel.add_argument(
        "--method",
        choices=sorted(METHODS),
        default=None,
        metavar="METHOD",
        help=f"the estimator, one of {', '.join(sorted(METHODS))}. Default: "
        f"{DEFAULT_METHOD} (ReliefF), the cheapest exact ranking: one pass "
        "over the pairs of rows, where irelief and immigrate repeat such "
        f"passes tens of times; beyond {_EXACT_ROWS:,} rows it scores "
        f"{_DEFAULT_ANCHORS:,} sampled anchor rows against all rows "
        f"(--anchors {_DEFAULT_ANCHORS}), so that it ends in seconds to "
        "minutes on any number of rows (give --method relieff for every "
        "row). turf, iter and vls wrap MultiSURF",
    )
    sel.add_argument(
        "--features",
        type=_names,
        action="append",
        metavar="COL,COL,...",
        help="the feature columns, in this order (repeatable); default: every column but the label",
    )
    sel.add_argument(
        "--exclude",
        type=_names,
        action="append",
        metavar="COL,COL,...",
        help="columns that are not features, e.g. an id (repeatable)",
    )
    sel.add_argument(
        "--missing-label",
        choices=("raise", "drop", "keep"),
        default="raise",
        help="rows without a label: stop with an error (raise, the default), "
        "leave them out (drop), or pass them on (keep)",
    )
    sel.add_argument("--sigma", type=float, default=None, help=f"kernel width ({_takers('sigma')})")
    sel.add_argument(
        "--max-iter",
        type=int,
        default=None,
        metavar="N",
        help=f"iteration limit ({_takers('max_iter')})",
    )
    sel.add_argument(
        "--n-neighbors",
        type=int,
        default=None,
        metavar="K",
        help=f"nearest hits and misses per row ({_takers('n_neighbors')})",
    )
    sel.add_argument(
        "--anchors",
        type=_count_or_fraction,
        default=None,
        metavar="M",
        dest="n_anchors",
        help="score M sampled rows (or a fraction, e.g. 0.01) against all rows "
        "instead of every row: O(M N) instead of O(N^2) "
        f"({_takers('n_anchors')})",
    )
    sel.add_argument(
        "--pvalues",
        action="store_const",
        const=True,
        default=None,
        help="STIR's p-values and q-values of the global null (no feature "
        "related to the labels) in the ranking (relieff, multisurf; two "
        "classes), where STIR has been shown calibrated and no feature "
        "carries signal; elsewhere a warning says why and names "
        "--permutations. Not which features matter: for that, "
        "dmargin.KnockoffSelector in Python",
    )
    sel.add_argument(
        "--permutations",
        type=int,
        default=None,
        metavar="B",
        dest="n_permutations",
        help="permutation p-values and q-values of the global null (no feature "
        "related to the labels) from B more passes with the labels "
        "permuted, exact on any data, not per-feature evidence when other "
        "features carry the signal; B + 1 >= features / 0.05 for a "
        "discovery at q = 0.05 to be possible "
        f"({_takers('n_permutations')})",
    )
    sel.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a Dask scheduler (tcp://host:8786, or a scheduler file .json); "
        "gives up after 10 s without an answer. tls:// takes this client's "
        "certificates from the dask config (DASK_DISTRIBUTED__COMM__TLS__"
        "CA_FILE, ...__CLIENT__CERT, ...__CLIENT__KEY)",
    )
    sel.add_argument(
        "--spark",
        metavar="MASTER",
        help="read DATA with Spark and fit on its executors: local[2], "
        "spark://host:7077, yarn, k8s://...; DATA may then be a URL Spark "
        "reads (hdfs://, s3a://). Needs pip install 'dmargin[spark]' and "
        "Java 17+",
    )
    sel.add_argument("--top", type=int, default=None, metavar="K", help="keep the K best features")
    sel.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the ranking to FILE (.csv or .json; IMMIGRATE with .csv also "
        "writes FILE_interactions.csv)",
    )
    sel.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="save a weight plot (IMMIGRATE: the W heat map); the suffix "
        "(.png, .pdf, .svg, ...) picks the format",
    )
    sel.add_argument(
        "--force", action="store_true", help="replace existing --out/--plot files (never the input)"
    )
    sel.add_argument(
        "--random-state",
        type=int,
        default=0,
        metavar="SEED",
        help="seed of the random choices (sampled --anchors, --permutations, "
        "random starts); default 0: the same command gives the same "
        "ranking",
    )
    sel.add_argument(
        "--yes",
        action="store_true",
        help=f"start a fit estimated at over {format_seconds(_ASK_SECONDS)}; "
        "without it such a fit is refused, and the message names an "
        "--anchors setting that fits in minutes",
    )
    sel.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return parser


# -- checks before anything is read ----------------------------------------------------


_LABELS = {"out": "--out", "interactions": "the interactions file of --out", "plot": "--plot"}


def _flat(lists):
    return [name for names in lists or () for name in names]


def _check_columns(args):
    """``--features`` / ``--exclude`` as lists; what can be said without the data."""
    features, exclude = _flat(args.features), _flat(args.exclude)
    if args.features is not None and args.exclude is not None:
        raise UserError(
            "--features and --exclude are both given; list the features to use "
            "with --features, or the columns to leave out with --exclude."
        )
    if args.features is not None and not features:
        raise UserError("--features names no column; give COL,COL,... or leave it out.")
    if args.label in features:
        raise UserError(
            f"--features lists the label column {args.label!r}; a column is "
            "either the label or a feature, take it out of --features."
        )
    twice = sorted({f for f in features if features.count(f) > 1})
    if twice:
        raise UserError(
            f"--features lists {', '.join(map(repr, twice))} more than once; "
            "name each feature once."
        )
    return features or None, [c for c in exclude if c != args.label]


def _build(name, params):
    """The registry's estimator ``name`` with ``params`` (a registered class name as a
    value is that estimator with its defaults: TuRF's inner estimator)."""
    import dmargin

    known = set(estimator_names())
    params = {
        key: getattr(dmargin, value)() if isinstance(value, str) and value in known else value
        for key, value in params.items()
    }
    return getattr(dmargin, name)(**params)  # the registry's estimators are all exported


def _settable(est):
    """``{parameter: key}``: what the options may set on ``est``; for a wrapper (TuRF,
    Iter, VLS) also its inner estimator's anchors (``estimator__n_anchors``)."""
    own = est.get_params(deep=False)
    keys = {param: param for param in own}
    if "estimator" in own and "n_anchors" in own["estimator"].get_params(deep=False):
        keys.setdefault("n_anchors", "estimator__n_anchors")
    return keys


def _seeded(est):
    """The ``random_state`` keys of ``est`` and of a wrapper's inner estimator."""
    params = est.get_params(deep=True)
    return [key for key in ("random_state", "estimator__random_state") if key in params]


@functools.lru_cache(maxsize=None)
def _takers(param):
    """The ``--method`` values an option setting ``param`` applies to, as text."""
    return ", ".join(m for m, (n, d) in sorted(METHODS.items()) if param in _settable(_build(n, d)))


def _round_down(m):
    """``m`` to two significant digits, rounded down: 2437 -> 2400."""
    step = 10 ** max(0, len(str(m)) - 2)
    return m // step * step


def _fitting_anchors(est, n_rows, n_features, seconds=_ADVICE_SECONDS):
    """``(m, FitCost)``: the most anchors whose fit is estimated within ``seconds``, or
    None (the method samples no anchors, has no estimate, or even few anchors take
    longer)."""
    from sklearn.base import clone

    key = _settable(est).get("n_anchors")
    if key is None or n_rows - 1 < _MIN_ANCHORS:
        return None

    def cost(m):
        return fit_cost(clone(est).set_params(**{key: m}), n_rows, n_features)

    low, high = _MIN_ANCHORS, n_rows - 1
    first = cost(low)
    if first is None or first.seconds > seconds:
        return None
    while low < high:  # the estimate grows with m
        mid = (low + high + 1) // 2
        if cost(mid).seconds <= seconds:
            low = mid
        else:
            high = mid - 1
    m = max(_MIN_ANCHORS, _round_down(low))
    return m, cost(m)


def _faster(est, n_rows, n_features):
    """``[(options, FitCost)]``: settings estimated to fit in about ``_ADVICE_SECONDS``,
    the same method with fewer anchors first."""
    faster = []
    same = _fitting_anchors(est, n_rows, n_features)
    if same is not None:
        faster.append((f"--anchors {same[0]}", same[1]))
    if type(est).__name__ == "IRelief":
        name, params = METHODS["online-irelief"]
        other = fit_cost(_build(name, params), n_rows, n_features)
        if other is not None and other.seconds <= _ADVICE_SECONDS:
            faster.append(("--method online-irelief", other))
    if same is None and type(est).__name__ != "ReliefF":  # no anchors here: ReliefF's
        name, params = METHODS["relieff"]
        relieff = _fitting_anchors(_build(name, params), n_rows, n_features)
        if relieff is not None:
            faster.append((f"--method relieff --anchors {relieff[0]}", relieff[1]))
    return faster


def _cost_lines(est, n_rows, n_features, yes=False):
    """The fit's estimated cost and, when it is slow, the faster settings with theirs.

    Raises
    ------
    UserError
        The estimate is over ``_ASK_SECONDS`` and ``yes`` is false: the message names
        the faster settings and ``--yes``.
    """
    cost = fit_cost(est, n_rows, n_features)
    if cost is None:
        return []
    lines = [f"estimated {cost} on this project's 2-core reference machine"]
    if cost.seconds <= _SLOW_SECONDS:
        return lines
    faster = _faster(est, n_rows, n_features)
    if cost.seconds > _ASK_SECONDS and not yes:
        if faster:
            options, other = faster[0]
            advice = (
                f"{options} would take {other}: pass {options}, or --yes to start this fit anyway."
            )
        else:
            advice = "pass --yes to start it anyway, or fit a sample of the rows."
        raise UserError(
            f"this fit of {type(est).__name__} on {n_rows:,} rows x {n_features:,} "
            f"features is estimated at {cost} on this project's 2-core reference "
            f"machine, over the {format_seconds(_ASK_SECONDS)} a fit may take "
            f"without --yes; {advice}"
        )
    lines += [f"  faster: {options} ({other})" for options, other in faster]
    return lines


def _check_estimator(args):
    """The estimator of ``--method`` with the options given; its parameters checked."""
    from .._validation import check_params

    name, defaults = METHODS[args.method]
    est = _build(name, defaults)
    keys = _settable(est)
    params = dict.fromkeys(_seeded(est), args.random_state)
    for option, param in _TUNING.items():
        value = getattr(args, param)
        if value is None:
            continue
        if param not in keys:
            raise UserError(
                f"{option} does not apply to --method {args.method}; it is a "
                f"parameter of --method {_takers(param)}. Leave it out or "
                "change the method."
            )
        params[keys[param]] = value
    est.set_params(**params)
    try:
        check_params(est)
        if "estimator" in est.get_params(deep=False):
            check_params(est.estimator)
    except ValueError as exc:
        for option, param in _TUNING.items():  # name the option the user typed
            if f"parameter {param}=" in str(exc):
                raise UserError(f"{option} {getattr(args, param)} is not valid: {exc}") from None
        raise UserError(str(exc)) from None
    return est


def _row_ids(X):
    """Columns of an in-memory ``X`` that look like a row id: integers, all distinct, in
    order (a range, an export's index)."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame) or len(X) < 3:
        return []
    return [
        c
        for c in X.columns
        if pd.api.types.is_integer_dtype(X[c])
        and (X[c].is_monotonic_increasing or X[c].is_monotonic_decreasing)
        and X[c].is_unique
    ]


def _check(args):
    """Check the whole command line; return the resolved outputs and scheduler address."""
    method_given = args.method is not None
    args.method = args.method or DEFAULT_METHOD
    if args.top is not None and args.top < 1:
        raise UserError("--top must be a positive number of features.")
    data = Path(args.data)
    if args.spark is not None and args.scheduler is not None:
        raise UserError(
            "--spark and --scheduler are both given; a fit runs on Spark "
            "(--spark MASTER) or on a Dask cluster (--scheduler ADDRESS), not both."
        )
    if args.spark is not None:
        check_spark_data(args.data)
    if not data.exists() and not (args.spark is not None and is_remote(args.data)):
        raise UserError(f"{args.data}: no such file or directory; check the DATA path.")
    plan = {
        "out": None,
        "interactions": None,
        "plot": None,
        "plot_format": None,
        "method_given": method_given,
    }
    plan["features"], plan["exclude"] = _check_columns(args)
    plan["estimator"] = _check_estimator(args)
    if args.out is not None:
        if args.out.suffix.lower() not in (".csv", ".json"):
            raise UserError(f"--out {args.out}: use a .csv or .json file name.")
        plan["out"] = check_target("--out", args.out, data, args.force)
        if args.out.suffix.lower() == ".csv" and args.method in _WITH_INTERACTIONS:
            derived = args.out.with_name(args.out.stem + "_interactions.csv")
            plan["interactions"] = check_target("--out (interactions)", derived, data, args.force)
    if args.plot is not None:
        plan["plot_format"] = plot_format(args.plot)
        plan["plot"] = check_target("--plot", args.plot, data, args.force)
    written = [(k, plan[k]) for k in _LABELS if plan[k] is not None]
    for i, (first, a) in enumerate(written):
        for second, b in written[i + 1 :]:
            if a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)):
                raise UserError(
                    f"{_LABELS[first]} and {_LABELS[second]} name the same file "
                    f"{a}; give each its own path."
                )
    plan["scheduler"] = scheduler_address(args.scheduler)
    return plan


# -- fitting ---------------------------------------------------------------------------


class _Bar:
    """A fit's progress on stderr, from :mod:`dmargin.progress` events.

    On a terminal one line redrawn in place; otherwise (a log file, CI) one
    plain line per step, so redirected output has no carriage returns.
    """

    def __init__(self, stream=None, width=30):
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.open = False
        self.shown = float("-inf")  # the first move inside a step shows at once

    def __call__(self, event):
        if event.fraction and not self.tty and event.elapsed - self.shown < 10.0:
            return  # inside a step: a plain log gets a line every 10 s at most
        self.shown = event.elapsed
        filled = int(self.width * (event.done + event.fraction) / max(event.total, 1))
        unit = event.unit + ("es" if event.unit.endswith("s") else "s")
        left = event.remaining
        inside = f" (+{event.fraction:.0%} of the next)" if event.fraction else ""
        line = (
            f"[{'#' * filled}{'.' * (self.width - filled)}] {event.done}/"
            f"{'' if event.final else '<='}{event.total} {unit}{inside}, "
            f"{event.elapsed:.1f} s"
            + (
                ""
                if event.final or left is None
                # To the cap ("at most") until the fit's convergence says how many steps.
                else f", {'about' if event.expected is not None else 'at most'} {left:.0f} s left"
            )
        )
        if self.tty:
            self.stream.write("\r" + line + ("\n" if event.final else ""))
            self.open = not event.final
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self):
        if self.open:
            self.stream.write("\n")
            self.open = False


def select(args):
    plan = _check(args)  # everything the user typed, before reading or connecting
    client = connect(plan["scheduler"], args.scheduler)
    spark, started = spark_session(args.spark) if args.spark is not None else (None, False)
    # py4j and pyspark log to Python's root logger, on Ctrl-C too (pyspark's own SIGINT
    # handler cancels the jobs mid-call): the command's one line says what happened.
    root, level = logging.getLogger(), logging.getLogger().level
    if started:
        root.setLevel(logging.CRITICAL)
    try:
        if client is not None and not args.quiet:
            link = dashboard_link(client)
            if link:
                print(f"dashboard: {link}", file=sys.stderr)
        est = plan["estimator"]
        lines = []

        def sized(n_rows, n_features):  # before Parquet rows are read: a refusal is quick
            if not plan["method_given"] and args.n_anchors is None and n_rows > _EXACT_ROWS:
                est.set_params(n_anchors=_DEFAULT_ANCHORS)
                lines.append(
                    f"{n_rows:,} rows, more than {_EXACT_ROWS:,}: the default method "
                    f"scores {_DEFAULT_ANCHORS:,} sampled anchor rows against all "
                    f"rows (--anchors {_DEFAULT_ANCHORS}); give --method "
                    f"{DEFAULT_METHOD} for every row"
                )
            lines.extend(_cost_lines(est, n_rows, n_features, yes=args.yes))

        columns = dict(
            features=plan["features"],
            exclude=plan["exclude"],
            missing_label=args.missing_label,
            sized=sized,
        )
        if spark is not None:
            X, n_rows, names = read_spark_data(spark, args.data, args.label, **columns)
            shape, where = (n_rows, len(names)), f" on Spark {spark.sparkContext.master}"
        else:
            X, y, names = read_data(args.data, args.label, use_dask=client is not None, **columns)
            shape, where = X.shape, (f" on {args.scheduler}" if client is not None else "")
        names = np.asarray(names, dtype=object)
        for c in _row_ids(X):  # a warning, shown with -q too
            print(
                f"warning: column {c!r} looks like a row id (distinct integers in order) and "
                f"is used as a feature; leave it out with --exclude {c}",
                file=sys.stderr,
            )
        if not args.quiet:
            print(
                f"fitting {type(est).__name__} on {shape[0]} rows x {shape[1]} features" + where,
                file=sys.stderr,
            )
            for line in lines:
                print(line, file=sys.stderr)
        start = time.perf_counter()
        bar = None if args.quiet else _Bar()
        try:
            # Warnings wait until the bar is done, each then on a line of its own.
            with (
                warnings.catch_warnings(record=True) as caught,
                on_progress(bar) if bar is not None else contextlib.nullcontext(),
            ):
                warnings.simplefilter("default")
                # The estimate and its faster settings are printed above, and a fit over
                # _ASK_SECONDS started only with --yes: the library's warning would repeat them.
                warnings.simplefilter("ignore", LongFitWarning)
                if spark is not None:
                    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
                    _spark_fit(est, X, args.label, list(names))
                else:
                    est.fit(X, y)
        except (ValueError, TypeError) as exc:  # the estimators' messages name problem and fix
            raise UserError(_spark_words(str(exc), args.label)) from None
        except (ClusterStalledError, WorkerMemoryError) as exc:  # say what to do themselves
            raise UserError(str(exc)) from None
        except OSError as exc:  # a Parquet file gone mid-fit, a lost scheduler connection
            raise UserError(f"the fit stopped: {exc}") from None
        except Exception as exc:  # a Spark job that failed (its tasks retried first)
            if spark_failure(exc) is None:
                raise
            raise UserError(f"the fit stopped on Spark: {spark_failure(exc)}") from None
        finally:
            if bar is not None:
                bar.close()
        for message in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught):
            print(f"warning: {message}", file=sys.stderr)
        if not args.quiet:
            print(f"done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    except BaseException as exc:
        if started and is_interrupt(exc):  # the jobs are cancelled: stop once they are gone
            _settle(spark)
        raise
    finally:
        if client is not None:
            client.close()
        if started:
            spark.stop()
        root.setLevel(level)
    table = ranking_table(est, names)
    if args.top is not None:
        table = table.head(args.top)
    interactions = None
    if hasattr(est, "interactions_"):
        interactions = est.interactions_.head(args.top or 10)
    try:
        write_results(table, interactions, plan, args.out)
        if args.plot is not None:
            save_plot(est, plan)
    except OSError as exc:
        raise UserError(
            f"cannot write {exc.filename or 'the output'}: "
            f"{exc.strerror or exc}; any previous file there is intact."
        ) from None
    return 0


def _settle(spark, seconds=10.0):
    """Wait (a while at most) until ``spark`` runs no job: a session stopped under its
    cancelled jobs prints the JVM's errors of their tasks."""
    tracker = spark.sparkContext.statusTracker()
    end = time.monotonic() + seconds
    while tracker.getActiveJobsIds() and time.monotonic() < end:
        time.sleep(0.1)


def _spark_fit(est, df, label, features):
    from ..spark import fit

    fit(est, df, label=label, features=features)


def _spark_words(message, label):
    """A Spark fit's advice for null labels as the option that drops them."""
    return re.sub(
        rf"drop those rows \(df\.dropna\(subset=\[{re.escape(repr(label))}\]\)\)",
        "pass --missing-label drop to leave those rows out",
        message,
    )


def _excluding(match):
    what = match.group(2)
    if what.startswith(("'", '"')):
        return f"{match.group(1)}ass --exclude {what[1:-1]} to leave it out"
    return f"{'L' if match.group(1) == 'P' else 'l'}eave {what} out with --exclude"


def _cli_words(message):
    """The library's advice (``missing_label='drop'``, ``features=[...]``) in options."""
    message = re.sub(
        r"read_parquet\(\.\.\., missing_label=(['\"])(\w+)\1\)", r"--missing-label \2", message
    )
    message = re.sub(
        r"missing_label=(['\"])(\w+)\1( to read_parquet)?", r"--missing-label \2", message
    )
    message = re.sub(
        r"([Pp])ass features=\[\.\.\.\] without ('[^']*'|\"[^\"]*\"|them|it)"
        r"( to leave it out)?",
        _excluding,
        message,
    )
    message = message.replace("features=[...]", "--features or --exclude")
    for name in ("features", "exclude", "label"):  # parameter names as the options
        # Only the bare parameter ("Pass label= one of them"), never a value or a path
        # (a hive folder .../label=1/...).
        message = re.sub(rf"(?<![^\s(]){name}=(?=\s|$)", f"--{name}", message)
    return message


def main(argv=None):
    """Run ``dmargin``; return the exit status (0; 2 after a one-line error; 130,
    as a shell's, after Ctrl-C)."""
    try:
        args = _parser().parse_args(argv)
        return select(args)
    except UserError as exc:
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"dmargin: error: {_cli_words(message)}", file=sys.stderr)
        return 2
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
    print("dmargin: interrupted", file=sys.stderr)
    return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
