"""The ``dmargin`` command's options, and the defaults they name.

:func:`build_parser` is the argument parser of ``dmargin select``; the constants
are the policy the command applies and its help states: the methods (the
registry's), the default method and when it samples anchors, and when a fit's
estimated cost is shown, asked about or refused.  :func:`build_estimator`,
:func:`settable` and :func:`takers` say which method an option applies to.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from .._cost import format_seconds
from .._registry import build, cli_methods

#: ``--method`` -> (estimator, the parameters it sets): the registry's (TuRF, Iter and
#: VLS around MultiSURF).
METHODS = cli_methods()
#: Methods whose fit sets ``interactions_``: with a CSV --out they also write
#: ``<stem>_interactions.csv``, which is checked like --out before the fit.
WITH_INTERACTIONS = {"immigrate", "im4e-immigrate", "bim"}
#: ``--method`` when none is given: one pass over the pairs of rows (the cheapest exact
#: ranking; I-RELIEF and IMMIGRATE repeat such passes tens of times).
DEFAULT_METHOD = "relieff"
# Beyond this many rows the default method scores a sample of anchor rows: the
# Relief literature's m (Weka's -M) of about 1,000, in seconds up to ~10^7 rows.
EXACT_ROWS = 100_000
DEFAULT_ANCHORS = 1000
# Above this estimate the command names a faster setting before it starts.
SLOW_SECONDS = 60.0
# Above this estimate the command refuses to start without --yes.
ASK_SECONDS = 600.0
# The faster settings it names fit in this time (by the same estimate).
ADVICE_SECONDS = 120.0
# Fewer anchors than this are not proposed: the weights would be mostly noise.
MIN_ANCHORS = 100
# Estimator parameters settable from the command line: option -> parameter.
TUNING = {
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


def build_estimator(name, params):
    """The registry's estimator ``name`` with ``params`` (a registered class name as a
    value is that estimator with its defaults: TuRF's inner estimator)."""
    return build(name, params)


def settable(est):
    """``{parameter: key}``: what the options may set on ``est``; for a wrapper (TuRF,
    Iter, VLS) also its inner estimator's anchors (``estimator__n_anchors``)."""
    own = est.get_params(deep=False)
    keys = {param: param for param in own}
    if "estimator" in own and "n_anchors" in own["estimator"].get_params(deep=False):
        keys.setdefault("n_anchors", "estimator__n_anchors")
    return keys


def seeded_keys(est):
    """The ``random_state`` keys of ``est`` and of a wrapper's inner estimator."""
    params = est.get_params(deep=True)
    return [key for key in ("random_state", "estimator__random_state") if key in params]


@functools.cache
def takers(param):
    """The ``--method`` values an option setting ``param`` applies to, as text."""
    return ", ".join(
        m for m, (n, d) in sorted(METHODS.items()) if param in settable(build_estimator(n, d))
    )


def build_parser():
    """The ``dmargin`` command's argument parser."""
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
        f"passes tens of times; beyond {EXACT_ROWS:,} rows it scores "
        f"{DEFAULT_ANCHORS:,} sampled anchor rows against all rows "
        f"(--anchors {DEFAULT_ANCHORS}), so that it ends in seconds to "
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
    sel.add_argument("--sigma", type=float, default=None, help=f"kernel width ({takers('sigma')})")
    sel.add_argument(
        "--max-iter",
        type=int,
        default=None,
        metavar="N",
        help=f"iteration limit ({takers('max_iter')})",
    )
    sel.add_argument(
        "--n-neighbors",
        type=int,
        default=None,
        metavar="K",
        help=f"nearest hits and misses per row ({takers('n_neighbors')})",
    )
    sel.add_argument(
        "--anchors",
        type=_count_or_fraction,
        default=None,
        metavar="M",
        dest="n_anchors",
        help="score M sampled rows (or a fraction, e.g. 0.01) against all rows "
        "instead of every row: O(M N) instead of O(N^2) "
        f"({takers('n_anchors')})",
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
        f"({takers('n_permutations')})",
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
        help=f"start a fit estimated at over {format_seconds(ASK_SECONDS)}; "
        "without it such a fit is refused, and the message names an "
        "--anchors setting that fits in minutes",
    )
    sel.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return parser
