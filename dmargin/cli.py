"""``dmargin select``: rank the features of a Parquet, CSV or TSV file from the shell.

::

    dmargin select DATA --label COL --method irelief [--scheduler ADDRESS]
                   [--features COL,... | --exclude COL,...] [--missing-label drop|keep|raise]
                   [--sigma S] [--max-iter N] [--n-neighbors K] [--anchors M]
                   [--random-state SEED]
                   [--top K] [--out FILE.csv|FILE.json] [--plot FILE.png] [--force]
    dmargin --version

``.csv``, ``.tsv`` and ``.txt`` files (also compressed: ``.csv.gz``, ...)
are read with pandas; anything else as Parquet (a file, a directory, a
Spark-written partitioned directory), lazily with
:func:`dmargin.read_parquet`.  With ``--scheduler`` the fit runs on that Dask
cluster (its dashboard link is printed); otherwise in this process.  The
ranking (and, for IMMIGRATE, the top interactions, in
``<stem>_interactions.csv`` beside a CSV ``--out``) goes to ``--out`` as CSV
or JSON, or to the terminal.  For SBS-MF and LDM-RFE the ``score`` is the
criterion a feature had when it was eliminated (``elimination_scores_``) and
``rfe_rank`` its elimination rank.

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
import json
import os
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ._compat import ClusterStalledError, WorkerMemoryError, compute
from ._cost import fit_cost
from .progress import on_progress

METHODS = {
    "irelief": ("IRelief", {}),
    "online-irelief": ("OnlineIRelief", {"reference_size": 2000}),
    "relieff": ("ReliefF", {}),
    "rrelieff": ("RReliefF", {}),
    "surf": ("SURF", {}),
    "multisurf": ("MultiSURF", {}),
    "immigrate": ("Immigrate", {}),
    "im4e-immigrate": ("IM4EImmigrate", {}),
    "bim": ("BoostedImmigrate", {}),
    "sbs-mf": ("SBSMF", {}),
    "ldm-rfe": ("LDMRFE", {}),
    "ldm-rfe-linear": ("LDMRFE", {"kernel": "linear"}),
}
# Methods whose fit sets ``interactions_``: with a CSV --out they also write
# ``<stem>_interactions.csv``, which is checked like --out before the fit.
_WITH_INTERACTIONS = {"immigrate", "im4e-immigrate", "bim"}
# How long a scheduler may take to answer before the command gives up.
_CONNECT_TIMEOUT = "10s"
# Above this estimate the command names a faster setting before it starts.
_SLOW_SECONDS = 60.0
# The sample the advice proposes: the Relief literature's m (Weka's -M) of about 1,000.
_ADVICE_ANCHORS = {"IRelief": 1000, "ReliefF": 1000, "RReliefF": 1000, "Immigrate": 500}
# Estimator parameters settable from the command line: option -> parameter.
_TUNING = {"--sigma": "sigma", "--max-iter": "max_iter", "--n-neighbors": "n_neighbors",
           "--anchors": "n_anchors", "--pvalues": "pvalues",
           "--permutations": "n_permutations"}
# Text files by suffix (before an optional compression suffix, which pandas infers):
# their separator; None: sniffed by pandas.  Anything else is read as Parquet.
_TEXT = {".csv": ",", ".tsv": "\t", ".txt": None}
_COMPRESSION = ("", ".gz", ".bz2", ".xz", ".zip", ".zst")


def _count_or_fraction(text):
    """``--anchors``: a count (``1000``) or a fraction of the rows (``0.01``)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither a number of rows (1000) nor a fraction (0.01)") from None


class UserError(Exception):
    """A problem with the command line or the data: reported in one line."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error."""

    def error(self, message):
        self.exit(2, f"dmargin: error: {message} (see '{self.prog} --help').\n")


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dmargin")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from . import __version__

        return __version__


def _names(text):
    """``--features a,b --features c`` -> ``["a", "b"]`` then ``["c"]`` (empty ones dropped)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _parser():
    parser = _Parser(prog="dmargin", description="Margin-based feature selection.")
    parser.add_argument("--version", action="version", version=f"dmargin {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser(
        "select", help="rank the features of a data set",
        description="Rank the features of DATA (Parquet, CSV or TSV) by LABEL.",
        epilog="The options are checked before the data is read. --out and --plot never "
               "overwrite the input (nor a file inside an input directory), not even with "
               "--force. Errors are one line on stderr and exit status 2.")
    sel.add_argument("data", help="a Parquet file or directory (also Spark output), or a "
                                  ".csv, .tsv or .txt file (also .gz, .bz2, .xz, .zip, .zst)")
    sel.add_argument("--label", required=True, help="the label column")
    sel.add_argument("--method", choices=sorted(METHODS), default="irelief")
    sel.add_argument("--features", type=_names, action="append", metavar="COL,COL,...",
                     help="the feature columns, in this order (repeatable); default: every "
                          "column but the label")
    sel.add_argument("--exclude", type=_names, action="append", metavar="COL,COL,...",
                     help="columns that are not features, e.g. an id (repeatable)")
    sel.add_argument("--missing-label", choices=("raise", "drop", "keep"), default="raise",
                     help="rows without a label: stop with an error (raise, the default), "
                          "leave them out (drop), or pass them on (keep)")
    sel.add_argument("--sigma", type=float, default=None,
                     help="kernel width (irelief, online-irelief, immigrate, im4e-immigrate)")
    sel.add_argument("--max-iter", type=int, default=None, metavar="N",
                     help="iteration limit (irelief, immigrate, im4e-immigrate, bim, ldm-rfe)")
    sel.add_argument("--n-neighbors", type=int, default=None, metavar="K",
                     help="nearest hits and misses per row (relieff)")
    sel.add_argument("--anchors", type=_count_or_fraction, default=None, metavar="M",
                     dest="n_anchors",
                     help="score M sampled rows (or a fraction, e.g. 0.01) against all rows "
                          "instead of every row: O(M N) instead of O(N^2) (relieff, irelief, "
                          "immigrate)")
    sel.add_argument("--pvalues", action="store_const", const=True, default=None,
                     help="STIR's p-values and q-values in the ranking (relieff, multisurf; "
                          "two classes), where STIR has been shown calibrated; elsewhere a "
                          "warning says why and names --permutations")
    sel.add_argument("--permutations", type=int, default=None, metavar="B",
                     dest="n_permutations",
                     help="permutation p-values and q-values from B more passes with the "
                          "labels permuted, exact on any data; B + 1 >= features / 0.05 "
                          "for a discovery at q = 0.05 to be possible (relieff, multisurf)")
    sel.add_argument("--scheduler", metavar="ADDRESS",
                     help="a Dask scheduler (tcp://host:8786, or a scheduler file .json); "
                          "gives up after 10 s without an answer. tls:// takes this client's "
                          "certificates from the dask config (DASK_DISTRIBUTED__COMM__TLS__"
                          "CA_FILE, ...__CLIENT__CERT, ...__CLIENT__KEY)")
    sel.add_argument("--top", type=int, default=None, metavar="K", help="keep the K best features")
    sel.add_argument("--out", type=Path, metavar="FILE",
                     help="write the ranking to FILE (.csv or .json; IMMIGRATE with .csv also "
                          "writes FILE_interactions.csv)")
    sel.add_argument("--plot", type=Path, metavar="FILE",
                     help="save a weight plot (IMMIGRATE: the W heat map); the suffix "
                          "(.png, .pdf, .svg, ...) picks the format")
    sel.add_argument("--force", action="store_true",
                     help="replace existing --out/--plot files (never the input)")
    sel.add_argument("--random-state", type=int, default=0, metavar="SEED")
    sel.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return parser


# -- checks before anything is read ----------------------------------------------------


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def _input_clash(real: str, data: Path) -> str | None:
    """How the output path ``real`` (resolved) would overwrite the input, or None."""
    data_real = os.path.realpath(data)
    if real == data_real:
        return "is the input file"
    if data.is_dir() and _inside(real, data_real):
        return f"is inside the input directory {data}"
    if not os.path.exists(real):
        return None
    if os.path.samefile(real, data):  # a hard link (or bind mount) of the input
        return "is the input file (another link to it)"
    if data.is_dir() and os.stat(real).st_nlink > 1:
        # A hard link to a file of the input directory; only then is the walk needed.
        target = os.stat(real)
        for root, _, files in os.walk(data_real):
            for name in files:
                st = os.stat(os.path.join(root, name))
                if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                    return f"is a link to {os.path.join(root, name)}, inside the input"
    return None


def _check_target(option: str, path: Path, data: Path, force: bool) -> str:
    """Check that ``path`` may be written; return its resolved real path."""
    real = os.path.realpath(path)
    clash = _input_clash(real, data)
    if clash:
        raise UserError(f"{option} {path} {clash}; choose another path (an input is never "
                        "overwritten, not even with --force).")
    if os.path.isdir(real):
        raise UserError(f"{option} {path} is a directory; give a file name inside it.")
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise UserError(f"{option} {path}: no such directory {folder}; create it first or "
                        "choose another path.")
    if os.path.lexists(path) and not force:
        raise UserError(f"{option} {path} exists; pass --force to replace it.")
    try:  # os.access says yes to root even on a read-only file system: try it
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UserError(f"{option} {path}: cannot write in {folder} ({exc.strerror}); "
                        "choose a writable directory.") from None
    return real


def _plot_format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install 'dmargin[plot]' "
                        "(or leave out --plot).") from None
    known = Figure().canvas.get_supported_filetypes()
    if not fmt:
        raise UserError(f"--plot {path}: name the image format with a suffix, one of "
                        f"{', '.join('.' + k for k in sorted(known))}.")
    if fmt not in known:
        raise UserError(f"--plot {path}: matplotlib cannot write .{fmt}; use one of "
                        f"{', '.join('.' + k for k in sorted(known))}.")
    return fmt


def _scheduler_address(address: str | None) -> str | None:
    """The address to connect to; a ``.json`` address is a scheduler file, read here.

    distributed would poll for a missing scheduler file forever, and fails with
    a bare AssertionError on one without an address.
    """
    if address is None or not address.endswith(".json"):
        return address
    path = Path(address)
    if not path.is_file():
        raise UserError(f"--scheduler {address}: no such file. A scheduler file is written by "
                        f"'dask scheduler --scheduler-file {address}'; start the scheduler first "
                        "or pass its tcp:// address.")
    for attempt in range(10):  # the scheduler may be writing it right now
        try:
            found = json.loads(path.read_text()).get("address")
        except (ValueError, AttributeError):
            found = None
        except OSError as exc:
            raise UserError(f"--scheduler {address}: cannot read it ({exc.strerror}).") from None
        if isinstance(found, str) and found:
            return found
        time.sleep(0.1)
    raise UserError(f"--scheduler {address} is not a Dask scheduler file (no JSON 'address' "
                    "entry); pass the file 'dask scheduler --scheduler-file' wrote, or a "
                    "tcp:// address.")


_LABELS = {"out": "--out", "interactions": "the interactions file of --out", "plot": "--plot"}


def _flat(lists):
    return [name for names in lists or () for name in names]


def _check_columns(args):
    """``--features`` / ``--exclude`` as lists; what can be said without the data."""
    features, exclude = _flat(args.features), _flat(args.exclude)
    if args.features is not None and args.exclude is not None:
        raise UserError("--features and --exclude are both given; list the features to use "
                        "with --features, or the columns to leave out with --exclude.")
    if args.features is not None and not features:
        raise UserError("--features names no column; give COL,COL,... or leave it out.")
    if args.label in features:
        raise UserError(f"--features lists the label column {args.label!r}; a column is "
                        "either the label or a feature, take it out of --features.")
    twice = sorted({f for f in features if features.count(f) > 1})
    if twice:
        raise UserError(f"--features lists {', '.join(map(repr, twice))} more than once; "
                        "name each feature once.")
    return features or None, [c for c in exclude if c != args.label]


def _cost_lines(est, n_rows, n_features):
    """The fit's estimated cost and, when it is slow, the faster settings with theirs."""
    cost = fit_cost(est, n_rows, n_features)
    if cost is None:
        return []
    lines = [f"estimated {cost} on this project's 2-core reference machine"]
    if cost.seconds <= _SLOW_SECONDS:
        return lines
    faster = []
    m = _ADVICE_ANCHORS.get(type(est).__name__)
    if m is not None and est.n_anchors is None and m < n_rows:
        faster.append((f"--anchors {m}", fit_cost(est.set_params(n_anchors=m), n_rows,
                                                    n_features)))
        est.set_params(n_anchors=None)
    if type(est).__name__ == "IRelief":
        import dmargin

        name, params = METHODS["online-irelief"]
        faster.append(("--method online-irelief",
                       fit_cost(getattr(dmargin, name)(**params), n_rows, n_features)))
    for option, other in faster:
        lines.append(f"  faster: {option} ({other})")
    return lines


def _check_estimator(args):
    """The estimator of ``--method`` with the options given; its parameters checked."""
    import dmargin

    from ._validation import check_params

    name, defaults = METHODS[args.method]
    cls = getattr(dmargin, name, None)
    if cls is None:
        raise UserError(f"--method {args.method} is not available in this version of dmargin.")
    params = dict(defaults)
    accepted = cls().get_params()
    if "random_state" in accepted:
        params["random_state"] = args.random_state
    for option, param in _TUNING.items():
        value = getattr(args, param)
        if value is None:
            continue
        if param not in accepted:
            takers = [m for m, (n, _) in sorted(METHODS.items())
                      if hasattr(dmargin, n) and param in getattr(dmargin, n)().get_params()]
            raise UserError(f"{option} does not apply to --method {args.method}; it is a "
                            f"parameter of --method {', '.join(takers)}. Leave it out or "
                            "change the method.")
        params[param] = value
    est = cls(**params)
    try:
        check_params(est)
    except ValueError as exc:
        for option, param in _TUNING.items():  # name the option the user typed
            if f"parameter {param}=" in str(exc):
                raise UserError(f"{option} {getattr(args, param)} is not valid: {exc}") from None
        raise UserError(str(exc)) from None
    return est


def _check(args):
    """Check the whole command line; return the resolved outputs and scheduler address."""
    if args.top is not None and args.top < 1:
        raise UserError("--top must be a positive number of features.")
    data = Path(args.data)
    if not data.exists():
        raise UserError(f"{args.data}: no such file or directory; check the DATA path.")
    plan = {"out": None, "interactions": None, "plot": None, "plot_format": None}
    plan["features"], plan["exclude"] = _check_columns(args)
    plan["estimator"] = _check_estimator(args)
    if args.out is not None:
        if args.out.suffix.lower() not in (".csv", ".json"):
            raise UserError(f"--out {args.out}: use a .csv or .json file name.")
        plan["out"] = _check_target("--out", args.out, data, args.force)
        if args.out.suffix.lower() == ".csv" and args.method in _WITH_INTERACTIONS:
            derived = args.out.with_name(args.out.stem + "_interactions.csv")
            plan["interactions"] = _check_target("--out (interactions)", derived, data,
                                                 args.force)
    if args.plot is not None:
        plan["plot_format"] = _plot_format(args.plot)
        plan["plot"] = _check_target("--plot", args.plot, data, args.force)
    written = [(k, plan[k]) for k in _LABELS if plan[k] is not None]
    for i, (first, a) in enumerate(written):
        for second, b in written[i + 1:]:
            if a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)):
                raise UserError(f"{_LABELS[first]} and {_LABELS[second]} name the same file "
                                f"{a}; give each its own path.")
    plan["scheduler"] = _scheduler_address(args.scheduler)
    return plan


# -- reading, fitting, writing --------------------------------------------------------


def _separator(path: Path):
    """``(True, separator)`` for a text file by its suffix, ``(False, None)`` for Parquet."""
    name = path.name.lower()
    for compression in _COMPRESSION:
        stem = name[:len(name) - len(compression)] if compression else name
        if name.endswith(compression):
            for suffix, sep in _TEXT.items():
                if stem.endswith(suffix):
                    return True, sep
    return False, None


def _feature_names(columns, label, features, exclude, where, default=None):
    """The feature columns of data whose columns are ``columns``; unknown names refused.

    ``default``: the features when none are named (every column but the label).
    """
    if label not in columns:
        raise UserError(f"{where} has no column {label!r}; columns are {list(columns)[:20]}. "
                        "Pass --label with one of them.")
    for option, given in (("--features", features), ("--exclude", exclude)):
        unknown = [c for c in given or () if c not in columns]
        if unknown:
            raise UserError(f"{option}: {where} has no column "
                            f"{', '.join(map(repr, unknown))}; columns are "
                            f"{list(columns)[:20]}. Correct {option}.")
    if features is not None:
        return list(features)
    default = [c for c in columns if c != label] if default is None else default
    names = [c for c in default if c not in exclude]
    if not names:
        raise UserError(f"{where}: no feature column is left besides the label {label!r}"
                        + (" and --exclude" if exclude else "") + "; check --label and "
                        "--exclude.")
    return names


def _read_text(path, sep, label, features, exclude, missing_label):
    where = str(path)
    options = {"sep": sep} if sep else {"sep": None, "engine": "python"}
    try:
        # The header first: column errors before the rows are read.
        columns = [str(c) for c in pd.read_csv(path, nrows=0, **options).columns]
        names = _feature_names(columns, label, features, exclude, where)
        frame = pd.read_csv(path, usecols=[*names, label], **options)
    except (OSError, ValueError) as exc:  # ParserError, UnicodeDecodeError, EmptyDataError
        kind = {",": "CSV", "\t": "TSV"}.get(sep, "text")
        raise UserError(f"{where}: not a readable {kind} file ({exc}).") from None
    X, y = frame[names], frame[label]
    text_columns = [c for c in names if not (pd.api.types.is_numeric_dtype(X[c])
                                             or pd.api.types.is_bool_dtype(X[c]))]
    if text_columns:
        raise UserError(f"{where}: feature columns {text_columns} are not numeric; leave them "
                        f"out with --exclude {','.join(text_columns)}, or encode them as "
                        "numbers.")
    missing = y.isna().to_numpy()
    if missing.any() and missing_label == "raise":
        raise UserError(f"{where}: {int(missing.sum())} rows have no value in the label "
                        f"column {label!r} (the first on line {int(np.argmax(missing)) + 2}); "
                        "pass --missing-label drop to leave them out, or fill them in.")
    if missing.any() and missing_label == "drop":
        X, y = X[~missing], y[~missing]
    return X, y.to_numpy(), names


def _read(path: str, label: str, use_dask: bool, features=None, exclude=(),
          missing_label="raise"):
    """``(X, y, feature names)``: pandas/numpy, or dask arrays for Parquet with ``use_dask``."""
    p = Path(path)
    text, sep = _separator(p)
    if text:
        return _read_text(p, sep, label, features, exclude, missing_label)
    from ._parquet import parquet_features, read_parquet

    try:
        # One check of the columns across files (label, --features, --exclude, partition
        # keys, drift between files) gives the names, in read_parquet's order.
        names = parquet_features(str(p), label, features, exclude=tuple(exclude or ()))
        X, y = read_parquet(str(p), label, features=names, missing_label=missing_label)
        if not use_dask:
            X, y = compute(X, y, what=f"the rows of {p}")
            X = pd.DataFrame(X, columns=names)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        message = str(exc)
        raise UserError(message if str(p) in message else f"{p}: {message}") from None
    return X, y, names


# What a wrong --scheduler usually is instead of the scheduler's port.
_ADDRESS_HINT = ("check that it is the scheduler's address (tcp://host:8786 by default), not "
                 "the dashboard's (8787) nor another service's")
# The dask settings a tls:// scheduler needs from this client (Security reads them).
_TLS_HINT = ("give this client's TLS settings in the dask config: the environment variables "
             "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT "
             "and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY, or distributed.comm.tls in a dask "
             "config file (like deploy/tls/dask-tls.yaml)")


def _security(address, where):
    """The ``Security`` a Client of ``address`` uses, and its connection arguments.

    Built here, and given to the Client, so that the probe and the Client agree; a
    ``tls://`` address without this client's certificates would otherwise end in
    distributed's TypeError.
    """
    import dask.config
    from distributed.security import Security
    from distributed.utils import import_term

    try:
        loader = dask.config.get("distributed.client.security-loader", None)
        security = (import_term(loader)({"address": address}) if loader else None) or Security()
        for what, path in (("CA file", security.tls_ca_file),
                           ("client certificate", security.tls_client_cert),
                           ("client key", security.tls_client_key)):
            if path and "\n" not in path and not os.path.isfile(path):  # else PEM text
                raise FileNotFoundError(f"the {what} {path} does not exist")
        args = security.get_connection_args("client")
    except (OSError, ValueError, ImportError) as exc:  # a missing or bad certificate file
        raise UserError(f"cannot reach the Dask scheduler at {where}: its TLS settings are "
                        f"not usable ({exc}); {_TLS_HINT}.") from None
    if address.startswith(("tls://", "wss://")) and args["ssl_context"] is None:
        raise UserError(f"cannot reach the Dask scheduler at {where}: a {address.split(':')[0]}"
                        f":// scheduler needs this client's TLS settings (a CA file, a client "
                        f"certificate and its key) and none are set; {_TLS_HINT}.")
    return security, args


def _ask_identity(address, connection_args, seconds):
    """The reply of the server at ``address`` to ``identity``, within ``seconds``.

    distributed bounds the TCP connect but not the handshake read after it, so a
    port that accepts and never speaks (a dashboard, a proxy) hangs ``Client()``.
    Here the exchange runs on its own event loop in a daemon thread, under
    :func:`asyncio.wait_for`, and the thread is given up after the deadline (a
    daemon thread does not keep the process alive).

    Raises
    ------
    TimeoutError
        Nothing answered in time.
    Exception
        Whatever the exchange raised: OSError when nothing listens or the peer
        hangs up, and any other error for a reply that is not a Dask message (an
        HTTP status line read as a frame length asks numpy for exabytes).
    """
    import asyncio
    import threading

    from distributed.comm import connect

    async def ask():
        comm = await connect(address, timeout=seconds, **connection_args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome = {}

    def run():
        try:
            outcome["reply"] = asyncio.run(asyncio.wait_for(ask(), seconds))
        except BaseException as exc:  # MemoryError included: handed to the main thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="dmargin-scheduler-probe", daemon=True)
    thread.start()
    thread.join(seconds + 2)  # the backstop, should the loop not end at its deadline
    if thread.is_alive():
        raise TimeoutError
    if "error" in outcome:
        raise outcome["error"]
    return outcome["reply"]


def _client(address, given):
    """A Client of the scheduler at ``address`` (``given`` is what the user typed).

    A :class:`UserError` within about ``_CONNECT_TIMEOUT`` unless a Dask
    scheduler answers there: nothing listening, a silent port, a service that
    is not Dask, a worker, a ``tls://`` address without TLS settings.
    """
    if address is None:
        return None
    from dask.utils import parse_timedelta
    from distributed import Client
    from distributed.comm import parse_address
    from distributed.comm.registry import get_backend

    where = address + (f" (from {given})" if given != address else "")
    try:
        get_backend(parse_address(address)[0])
    except ValueError as exc:  # http://... (the dashboard's link) or a typo
        raise UserError(f"cannot reach the Dask scheduler at {where}: {exc}; "
                        f"{_ADDRESS_HINT}.") from None
    security, args = _security(address, where)
    seconds = parse_timedelta(_CONNECT_TIMEOUT)
    try:
        reply = _ask_identity(address, args, seconds)
    except TimeoutError:
        raise UserError(f"cannot reach the Dask scheduler at {where}: no Dask scheduler "
                        f"answered within {seconds:g} s; {_ADDRESS_HINT}.") from None
    except OSError as exc:  # refused, unreachable, hung up (CommClosedError), TLS refused
        raise UserError(f"cannot reach the Dask scheduler at {where}: {exc}. Start one with "
                        f"'dask scheduler' or {_ADDRESS_HINT}.") from None
    except RuntimeError as exc:  # e.g. tcp:// while the config requires encryption
        raise UserError(f"cannot reach the Dask scheduler at {where}: {exc}.") from None
    except Exception as exc:  # a reply that is not a Dask message: anything can break
        raise UserError(f"cannot reach the Dask scheduler at {where}: what answered there "
                        f"does not speak Dask's protocol ({type(exc).__name__}); "
                        f"{_ADDRESS_HINT}.") from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind in ("Worker", "Nanny"):
        raise UserError(f"{where} is a Dask {kind.lower()}, not the scheduler; pass the "
                        "scheduler's address (the one the workers were given).")
    if kind is None:
        raise UserError(f"cannot reach the Dask scheduler at {where}: what answered there is "
                        f"not a Dask scheduler; {_ADDRESS_HINT}.")
    try:
        return Client(address, timeout=_CONNECT_TIMEOUT, security=security)
    except (OSError, TimeoutError, ValueError, RuntimeError) as exc:  # gone since the probe
        raise UserError(f"cannot reach the Dask scheduler at {where}: {exc}. Start one with "
                        "'dask scheduler' or check the address.") from None


def _dashboard(client):
    """The dashboard URL of ``client``'s scheduler, or None when it serves none."""
    try:
        return client.dashboard_link or None
    except (KeyError, AttributeError, TypeError, ValueError, OSError):
        return None


def _ranking(est, names):
    if hasattr(est, "ranking_"):
        # Elimination order (SBS-MF, LDM-RFE): rank 1 = kept longest; within a round (and
        # among the kept features) the higher criterion at elimination first.
        rank = np.asarray(est.ranking_)
        score = np.asarray(getattr(est, "elimination_scores_", -rank), dtype=float)
        order = np.lexsort((-np.nan_to_num(score, nan=-np.inf), rank))
    else:
        score = np.asarray(est.feature_importances_, dtype=float)
        order = np.argsort(-score, kind="stable")
    table = pd.DataFrame({"rank": np.arange(1, len(order) + 1), "feature": names[order],
                          "index": order, "score": score[order]})
    for attribute, column in (("pvalues_", "pvalue"), ("qvalues_", "qvalue")):  # STIR's
        if getattr(est, attribute, None) is not None:
            table[column] = np.asarray(getattr(est, attribute))[order]
    if hasattr(est, "ranking_"):
        table["rfe_rank"] = np.asarray(est.ranking_)[order]
    return table


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
        self.shown = 0.0

    def __call__(self, event):
        if event.fraction and not self.tty and event.elapsed - self.shown < 10.0:
            return  # inside a step: a plain log gets a line every 10 s at most
        self.shown = event.elapsed
        filled = int(self.width * (event.done + event.fraction) / max(event.total, 1))
        unit = event.unit + ("es" if event.unit.endswith("s") else "s")
        left = event.remaining
        inside = f" (+{event.fraction:.0%} of the next)" if event.fraction else ""
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {event.done}/"
                f"{'' if event.final else '<='}{event.total} {unit}{inside}, "
                f"{event.elapsed:.1f} s"
                + ("" if event.final or left is None else f", about {left:.0f} s left"))
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


def _file_mode(path: str) -> int:
    """The permissions a plain ``open(path, "w")`` would give (mkstemp makes 0600)."""
    if os.path.exists(path):
        return os.stat(path).st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _replace(path: str, write, binary=False):
    """Write ``path`` atomically: a temporary file beside it, then :func:`os.replace`.

    A kill or a failure mid-write leaves the previous file as it was.
    """
    folder, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        # newline="": pandas writes its own line endings into file objects.
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"newline": ""})) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write(table, interactions, plan, given: Path | None):
    if given is None:
        print(table.to_string(index=False))
        if interactions is not None:
            print("\ntop interactions:")
            print(interactions.to_string(index=False))
        return
    if given.suffix.lower() == ".csv":
        _replace(plan["out"], lambda fh: table.to_csv(fh, index=False))
        if interactions is not None:
            if plan["interactions"] is None:  # _WITH_INTERACTIONS is out of date
                raise RuntimeError(f"unchecked interactions output for {given}")
            _replace(plan["interactions"], lambda fh: interactions.to_csv(fh, index=False))
    else:
        doc = {"ranking": table.to_dict(orient="records")}
        if interactions is not None:
            doc["interactions"] = interactions.to_dict(orient="records")
        _replace(plan["out"], lambda fh: fh.write(json.dumps(doc, indent=2, default=float)))


def _plot(est, plan):
    import matplotlib

    matplotlib.use("Agg")
    from . import plotting

    if hasattr(est, "weight_matrix_"):
        ax = plotting.plot_weight_matrix(est)
    else:
        ax = plotting.plot_feature_weights(est)
    try:
        _replace(plan["plot"], lambda fh: ax.figure.savefig(fh, format=plan["plot_format"],
                                                            bbox_inches="tight"), binary=True)
    finally:
        ax.figure.clf()
        import matplotlib.pyplot as plt

        plt.close(ax.figure)


def select(args):
    plan = _check(args)  # everything the user typed, before reading or connecting
    client = _client(plan["scheduler"], args.scheduler)
    try:
        if client is not None and not args.quiet:
            link = _dashboard(client)
            if link:
                print(f"dashboard: {link}", file=sys.stderr)
        X, y, names = _read(args.data, args.label, use_dask=client is not None,
                            features=plan["features"], exclude=plan["exclude"],
                            missing_label=args.missing_label)
        names = np.asarray(names, dtype=object)
        est = plan["estimator"]
        if not args.quiet:
            print(f"fitting {type(est).__name__} on {X.shape[0]} rows x {X.shape[1]} features"
                  + (f" on {args.scheduler}" if client is not None else ""), file=sys.stderr)
            for line in _cost_lines(est, *X.shape):
                print(line, file=sys.stderr)
        start = time.perf_counter()
        bar = None if args.quiet else _Bar()
        try:
            # Warnings wait until the bar is done, each then on a line of its own.
            with warnings.catch_warnings(record=True) as caught, \
                    (on_progress(bar) if bar is not None else contextlib.nullcontext()):
                warnings.simplefilter("default")
                est.fit(X, y)
        except (ValueError, TypeError) as exc:  # the estimators' messages name problem and fix
            raise UserError(str(exc)) from None
        except (ClusterStalledError, WorkerMemoryError) as exc:  # say what to do themselves
            raise UserError(str(exc)) from None
        except OSError as exc:  # a Parquet file gone mid-fit, a lost scheduler connection
            raise UserError(f"the fit stopped: {exc}") from None
        finally:
            if bar is not None:
                bar.close()
        for message in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught):
            print(f"warning: {message}", file=sys.stderr)
        if not args.quiet:
            print(f"done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    finally:
        if client is not None:
            client.close()
    table = _ranking(est, names)
    if args.top is not None:
        table = table.head(args.top)
    interactions = None
    if hasattr(est, "interactions_"):
        interactions = est.interactions_.head(args.top or 10)
    try:
        _write(table, interactions, plan, args.out)
        if args.plot is not None:
            _plot(est, plan)
    except OSError as exc:
        raise UserError(f"cannot write {exc.filename or 'the output'}: "
                        f"{exc.strerror or exc}; any previous file there is intact.") from None
    return 0


def _excluding(match):
    what = match.group(2)
    if what.startswith(("'", '"')):
        return f"{match.group(1)}ass --exclude {what[1:-1]} to leave it out"
    return f"{'L' if match.group(1) == 'P' else 'l'}eave {what} out with --exclude"


def _cli_words(message):
    """The library's advice (``missing_label='drop'``, ``features=[...]``) in options."""
    message = re.sub(r"read_parquet\(\.\.\., missing_label=(['\"])(\w+)\1\)",
                     r"--missing-label \2", message)
    message = re.sub(r"missing_label=(['\"])(\w+)\1( to read_parquet)?", r"--missing-label \2",
                     message)
    message = re.sub(r"([Pp])ass features=\[\.\.\.\] without ('[^']*'|\"[^\"]*\"|them|it)"
                     r"( to leave it out)?", _excluding, message)
    message = message.replace("features=[...]", "--features or --exclude")
    for name in ("features", "exclude", "label"):  # parameter names as the options
        message = re.sub(rf"(?<![\w-]){name}=(?!\[)", f"--{name} ", message)
    return message


def main(argv=None):
    """Run ``dmargin``; return the exit status (0, or 2 after a one-line error)."""
    args = _parser().parse_args(argv)
    try:
        return select(args)
    except UserError as exc:
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"dmargin: error: {_cli_words(message)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
