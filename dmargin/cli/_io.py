"""What ``dmargin select`` reads and writes.

The DATA file (CSV, TSV or text with pandas, anything else as Parquet; its columns
checked against the header or schema before the rows are read), the result
files (checked before the fit: never the input, each its own path; written
atomically) and, with ``--spark``, the SparkSession and the DATA read by Spark.
Every failure here is a :class:`UserError`, one line that names the problem and
the fix; :mod:`dmargin.cli` decides when each step runs (the Dask scheduler is
reached by :mod:`dmargin.cli._scheduler`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from .._cluster import ClusterStalledError
from .._dask import compute
from ..spark._watch import SparkStoppedError, run_action

# Text files by suffix (before an optional compression suffix, which pandas infers):
# their separator; None: sniffed by pandas.  Anything else is read as Parquet.
_TEXT = {".csv": ",", ".tsv": "\t", ".txt": None}
_COMPRESSION = ("", ".gz", ".bz2", ".xz", ".zip", ".zst")
# How to add matplotlib, for an install from a clone (the README's) and from an index.
PLOT_INSTALL = (
    "pip install '.[plot]' in the dmargin clone, or pip install 'dmargin[plot]' "
    "where dmargin came from a package index"
)


class UserError(Exception):
    """A problem with the command line or the data: reported in one line."""


# -- the result files, checked before anything is read ---------------------------------


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


def check_target(option: str, path: Path, data: Path, force: bool) -> str:
    """Check that ``path`` may be written; return its resolved real path."""
    real = os.path.realpath(path)
    clash = _input_clash(real, data)
    if clash:
        raise UserError(
            f"{option} {path} {clash}; choose another path (an input is never "
            "overwritten, not even with --force)."
        )
    if os.path.isdir(real):
        raise UserError(f"{option} {path} is a directory; give a file name inside it.")
    if os.path.exists(real) and not os.path.isfile(real):
        # The atomic rename would replace the node itself (a device, as root), even with --force.
        raise UserError(
            f"{option} {path} is not a regular file (a device, a FIFO or a "
            "socket); give the path of a file."
        )
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise UserError(
            f"{option} {path}: no such directory {folder}; create it first or choose another path."
        )
    if os.path.lexists(path) and not force:
        raise UserError(f"{option} {path} exists; pass --force to replace it.")
    try:  # os.access says yes to root even on a read-only file system: try it
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UserError(
            f"{option} {path}: cannot write in {folder} ({exc.strerror}); "
            "choose a writable directory."
        ) from None
    return real


def plot_format(path: Path) -> str:
    """The image format ``--plot`` names by its suffix, one matplotlib writes."""
    fmt = path.suffix.lower().lstrip(".")
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError(f"--plot needs matplotlib: {PLOT_INSTALL} (or leave out --plot).") from None
    known = Figure().canvas.get_supported_filetypes()
    if not fmt:
        raise UserError(
            f"--plot {path}: name the image format with a suffix, one of "
            f"{', '.join('.' + k for k in sorted(known))}."
        )
    if fmt not in known:
        raise UserError(
            f"--plot {path}: matplotlib cannot write .{fmt}; use one of "
            f"{', '.join('.' + k for k in sorted(known))}."
        )
    return fmt


# -- the DATA file ---------------------------------------------------------------------


def _separator(path: Path):
    """``(True, separator)`` for a text file by its suffix, ``(False, None)`` for Parquet."""
    name = path.name.lower()
    for compression in _COMPRESSION:
        stem = name[: len(name) - len(compression)] if compression else name
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
        raise UserError(
            f"{where} has no column {label!r}; columns are {list(columns)[:20]}. "
            "Pass --label with one of them."
        )
    for option, given in (("--features", features), ("--exclude", exclude)):
        unknown = [c for c in given or () if c not in columns]
        if unknown:
            raise UserError(
                f"{option}: {where} has no column "
                f"{', '.join(map(repr, unknown))}; columns are "
                f"{list(columns)[:20]}. Correct {option}."
            )
    if features is not None:
        return list(features)
    default = [c for c in columns if c != label] if default is None else default
    names = [c for c in default if c not in exclude]
    if not names:
        raise UserError(
            f"{where}: no feature column is left besides the label {label!r}"
            + (" and --exclude" if exclude else "")
            + "; check --label and "
            "--exclude."
        )
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
    text_columns = [
        c
        for c in names
        if not (pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c]))
    ]
    if text_columns:
        raise UserError(
            f"{where}: feature columns {text_columns} are not numeric; leave them "
            f"out with --exclude {','.join(text_columns)}, or encode them as "
            "numbers."
        )
    missing = y.isna().to_numpy()
    if missing.any() and missing_label == "raise":
        raise UserError(
            f"{where}: {int(missing.sum())} rows have no value in the label "
            f"column {label!r} (the first on line {int(np.argmax(missing)) + 2}); "
            "pass --missing-label drop to leave them out, or fill them in."
        )
    if missing.any() and missing_label == "drop":
        X, y = X[~missing], y[~missing]
    return X, y.to_numpy(), names


def read_data(
    path: str,
    label: str,
    use_dask: bool,
    features=None,
    exclude=(),
    missing_label="raise",
    sized=None,
):
    """``(X, y, feature names)``: pandas/numpy, or dask arrays for Parquet with ``use_dask``.

    ``sized(n_rows, n_features)``, when given, is called once the shape is known: for
    Parquet from the footers, before the rows are read (so that a fit refused for its
    size costs no reading); for a text file after it is read.
    """
    p = Path(path)
    text, sep = _separator(p)
    if text:
        X, y, names = _read_text(p, sep, label, features, exclude, missing_label)
        if sized is not None:
            sized(*X.shape)
        return X, y, names
    from ..io._parquet import parquet_features, read_parquet

    try:
        # One check of the columns across files (label, --features, --exclude, partition
        # keys, drift between files) gives the names, in read_parquet's order.
        names = parquet_features(str(p), label, features, exclude=tuple(exclude or ()))
        X, y = read_parquet(str(p), label, features=names, missing_label=missing_label)
        if sized is not None:
            sized(*X.shape)
        if not use_dask:
            X, y = compute(X, y, what=f"the rows of {p}")
            X = pd.DataFrame(X, columns=names)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        message = str(exc)
        raise UserError(message if str(p) in message else f"{p}: {message}") from None
    return X, y, names


# -- Spark -----------------------------------------------------------------------------

SPARK_INSTALL = "pip install 'dmargin[spark]'"
# Spark's numeric SQL types (DataFrame.dtypes' names): the features a Spark fit reads.
_SPARK_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "boolean")
# Compressed text Spark reads itself (Hadoop's codecs); others are refused before it starts.
_SPARK_COMPRESSION = ("", ".gz", ".bz2")


def is_remote(path: str) -> bool:
    """A DATA path only Spark can open (``hdfs://``, ``s3a://``, ``dbfs:/``), not a file here."""
    scheme, sep, _ = path.partition(":")
    return (
        bool(sep)
        and len(scheme) > 1
        and scheme.replace("+", "").isalnum()
        and scheme.lower() != "file"
        and not Path(path).exists()
    )


def spark_failure(exc) -> str | None:
    """One line saying why Spark or its JVM failed (``exc`` raised by pyspark or py4j),
    or None for any other exception."""
    if not type(exc).__module__.startswith(("pyspark", "py4j")):
        return None
    text = str(getattr(exc, "getMessage", lambda: "")() or exc).strip() or type(exc).__name__
    return text.splitlines()[0].strip()


# Spark's log for the local sessions the command starts: nothing, from the JVM's start
# on (its errors reach the user as the command's one line); the two loggers named keep
# Spark's shell from announcing its default log level.
_SPARK_LOG4J = """rootLogger.level = off
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %m%n
logger.shell.name = org.apache.spark.api.python.PythonGatewayServer
logger.shell.level = off
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = off
"""


def _quiet_local_session(master):
    """:func:`dmargin.spark.local_session` whose JVM logs nothing (a cancelled job's
    task errors on Ctrl-C included)."""
    from ..spark import local_session

    with tempfile.TemporaryDirectory(prefix="dmargin-spark-") as folder:
        config = Path(folder) / "log4j2.properties"
        config.write_text(_SPARK_LOG4J)
        # Read once, when the JVM starts: the file may go afterwards.
        session = local_session(
            master,
            **{"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={config.as_uri()}"},
        )
    session.sparkContext.setLogLevel("OFF")
    return session


def spark_session(master: str):
    """``(session, started)``: the SparkSession ``--spark MASTER`` fits on.

    The process's active session (a notebook's, a test's) is used as it is;
    otherwise one is started: :func:`dmargin.spark.local_session` for a
    ``local[...]`` master, else a session of that master (its executors' Python
    is the cluster's, ``PYSPARK_PYTHON`` or ``spark.pyspark.python``).
    ``started``: this command started it, and stops it at the end.
    """
    import shutil
    import warnings

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise UserError(
            f"--spark needs pyspark, which is not installed: {SPARK_INSTALL} "
            "(Spark also needs Java 17 or newer)."
        ) from None
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise UserError(
            "--spark needs Java 17 or newer, and there is no java on PATH and no "
            "JAVA_HOME; install a JDK (Debian: apt install openjdk-17-jre-headless) "
            "or set JAVA_HOME."
        )
    try:
        if master == "local" or master.startswith("local["):
            return _quiet_local_session(master), True
        session = (
            SparkSession.builder.master(master)
            .appName("dmargin")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        return session, True
    except Exception as exc:
        why = spark_failure(exc)
        if why is None and not isinstance(exc, (OSError, RuntimeError, ValueError)):
            raise
        raise UserError(
            f"--spark {master}: Spark did not start ({why or exc}); check the "
            "master URL and that Java 17 or newer runs (java -version)."
        ) from None


def check_spark_data(path: str):
    """What can be said of DATA for ``--spark`` before Spark starts: a text file is
    plain, .gz or .bz2 (what Spark reads itself), a .txt file's separator can be
    sniffed here."""
    text, sep = _separator(Path(path))
    if not text:
        return
    name = path.lower()
    if not any(name.endswith(s + c) for s in _TEXT for c in _SPARK_COMPRESSION):
        raise UserError(
            f"{path}: Spark reads text files plain, .gz or .bz2; decompress it, "
            "or leave out --spark."
        )
    if sep is None and is_remote(path):
        raise UserError(
            f"{path}: the separator of a .txt file is not known on Spark; name the "
            "file .csv or .tsv."
        )


def _spark_frame(session, path: str):
    """DATA read by Spark: a CSV/TSV/text file with its header and inferred types, or
    Parquet (a file, a directory, Spark's own output); and whether it is text."""
    text, sep = _separator(Path(path))
    if not text:
        return session.read.parquet(path), False
    if sep is None:  # .txt: the separator pandas would sniff, from the header line
        import bz2
        import csv
        import gzip

        opener = {".gz": gzip.open, ".bz2": bz2.open}.get(Path(path).suffix.lower(), open)
        try:
            with opener(path, "rt", newline="") as handle:
                sep = csv.Sniffer().sniff(handle.readline()).delimiter
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise UserError(f"{path}: not a readable text file ({exc}).") from None
    return session.read.csv(path, header=True, inferSchema=True, sep=sep), True


def read_spark_data(
    session, path: str, label: str, features=None, exclude=(), missing_label="raise", sized=None
):
    """``(df, n_rows, feature names)``: DATA as a Spark DataFrame for
    :func:`dmargin.spark.fit`; the features chosen as :func:`read_data` chooses them.

    A local Parquet file or directory has its columns checked from its footers, as
    without Spark (partition keys are not features); otherwise from Spark's schema.
    ``missing_label="drop"`` filters the rows without a label; ``"raise"`` leaves
    them to the fit, which refuses them.  ``sized(n_rows, n_features)`` is called
    with the count of the rows (one Spark job) before the fit.
    """
    where = str(path)
    try:
        df, text = _spark_frame(session, path)
        if not text and not is_remote(path):
            from ..io._parquet import parquet_features

            try:
                names = parquet_features(path, label, features, exclude=tuple(exclude or ()))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                message = str(exc)
                raise UserError(message if where in message else f"{where}: {message}") from None
        else:
            names = _feature_names(df.columns, label, features, exclude, where)
        kinds = dict(df.dtypes)
        text_columns = [c for c in names if not kinds[c].startswith(_SPARK_NUMERIC)]
        if text_columns:
            raise UserError(
                f"{where}: feature columns {text_columns} are not numeric; leave "
                f"them out with --exclude {','.join(text_columns)}, or encode them "
                "as numbers."
            )
        if missing_label == "drop":
            from pyspark.sql import functions as F

            kept = F.col(label).isNotNull()
            if kinds[label] in ("float", "double"):
                kept = kept & ~F.isnan(F.col(label))
            df = df.filter(kept)
        n_rows = run_action(df.sparkSession.sparkContext, df.count, f"counting the rows of {where}")
    except (ClusterStalledError, SparkStoppedError) as exc:  # say what to do themselves
        raise UserError(str(exc)) from None
    except Exception as exc:
        why = spark_failure(exc)
        if why is None:
            raise
        raise UserError(f"{where}: Spark cannot read it ({why}).") from None
    if sized is not None:
        sized(n_rows, len(names))
    return df, n_rows, names


# -- the results -----------------------------------------------------------------------


def ranking_table(est, names):
    """The fitted ``est``'s features best first: rank, name, index, score (and the
    p- and q-values of the global null, the elimination rank, when the fit has them)."""
    if hasattr(est, "ranking_"):
        # Elimination order (SBS-MF, LDM-RFE): rank 1 = kept longest; within a round (and
        # among the kept features) the higher criterion at elimination first.
        # TuRF's importances rank its tiers of removed features like ranking_.
        rank = np.asarray(est.ranking_)
        score = np.asarray(
            getattr(est, "elimination_scores_", getattr(est, "feature_importances_", -rank)),
            dtype=float,
        )
        order = np.lexsort((-np.nan_to_num(score, nan=-np.inf), rank))
    else:
        score = np.asarray(est.feature_importances_, dtype=float)
        order = np.argsort(-score, kind="stable")
    table = pd.DataFrame(
        {
            "rank": np.arange(1, len(order) + 1),
            "feature": names[order],
            "index": order,
            "score": score[order],
        }
    )
    # A fit without p-values raises PValuesUnavailableError (an AttributeError) on reading.
    for attribute, column in (("pvalues_", "pvalue"), ("qvalues_", "qvalue")):
        if getattr(est, attribute, None) is not None:
            table[column] = np.asarray(getattr(est, attribute))[order]
    if hasattr(est, "ranking_"):
        table["rfe_rank"] = np.asarray(est.ranking_)[order]
    return table


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


def write_results(table, interactions, plan, given: Path | None):
    """The ranking (and IMMIGRATE's interactions) to the terminal, or to the checked
    ``--out`` paths of ``plan`` as CSV or JSON."""
    if given is None:
        print(table.to_string(index=False))
        if interactions is not None:
            print("\ntop interactions:")
            print(interactions.to_string(index=False))
        return
    if given.suffix.lower() == ".csv":
        _replace(plan["out"], lambda fh: table.to_csv(fh, index=False))
        if interactions is not None:
            if plan["interactions"] is None:  # the CLI's _WITH_INTERACTIONS is out of date
                raise RuntimeError(f"unchecked interactions output for {given}")
            _replace(plan["interactions"], lambda fh: interactions.to_csv(fh, index=False))
    else:
        doc = {"ranking": table.to_dict(orient="records")}
        if interactions is not None:
            doc["interactions"] = interactions.to_dict(orient="records")
        _replace(plan["out"], lambda fh: fh.write(json.dumps(doc, indent=2, default=float)))


def save_plot(est, plan):
    """The fitted weights (IMMIGRATE: the W heat map) to the checked ``--plot`` path."""
    import matplotlib

    matplotlib.use("Agg")
    from .. import plotting

    if hasattr(est, "weight_matrix_"):
        ax = plotting.plot_weight_matrix(est)
    else:
        ax = plotting.plot_feature_weights(est)
    try:
        _replace(
            plan["plot"],
            lambda fh: ax.figure.savefig(fh, format=plan["plot_format"], bbox_inches="tight"),
            binary=True,
        )
    finally:
        ax.figure.clf()
        import matplotlib.pyplot as plt

        plt.close(ax.figure)
