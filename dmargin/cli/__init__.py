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

import contextlib
import logging
import re
import sys
import time
import warnings

import numpy as np

from .._cluster import ClusterStalledError, WorkerMemoryError
from .._cost import LongFitWarning
from .._interrupt import is_interrupt
from ..progress import on_progress
from ._io import (
    UserError,
    ranking_table,
    read_data,
    read_spark_data,
    save_plot,
    spark_failure,
    spark_session,
    write_results,
)
from ._parser import DEFAULT_ANCHORS, DEFAULT_METHOD, EXACT_ROWS, METHODS, build_parser
from ._plan import check_command_line, cost_lines, row_ids
from ._scheduler import connect, dashboard_link

__all__ = ["DEFAULT_METHOD", "METHODS", "UserError", "main", "select"]


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
    plan = check_command_line(args)  # everything the user typed, before reading or connecting
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
            if not plan["method_given"] and args.n_anchors is None and n_rows > EXACT_ROWS:
                est.set_params(n_anchors=DEFAULT_ANCHORS)
                lines.append(
                    f"{n_rows:,} rows, more than {EXACT_ROWS:,}: the default method "
                    f"scores {DEFAULT_ANCHORS:,} sampled anchor rows against all "
                    f"rows (--anchors {DEFAULT_ANCHORS}); give --method "
                    f"{DEFAULT_METHOD} for every row"
                )
            lines.extend(cost_lines(est, n_rows, n_features, yes=args.yes))

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
        for c in row_ids(X):  # a warning, shown with -q too
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
                # ASK_SECONDS started only with --yes: the library's warning would repeat them.
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
            from ..spark import SparkStoppedError

            if isinstance(exc, SparkStoppedError):  # says what to do itself
                raise UserError(str(exc)) from None
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
        args = build_parser().parse_args(argv)
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
