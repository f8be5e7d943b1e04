"""``dmargin select``: rank the features of a Parquet or CSV file from the shell.

::

    dmargin select DATA --label COL --method irelief [--scheduler ADDRESS]
                   [--top K] [--out FILE.csv|FILE.json] [--plot FILE.png] [--force]

Parquet (a file, a directory, a Spark-written partitioned directory) is read
lazily with :func:`dmargin.read_parquet`; CSV with pandas.  With
``--scheduler`` the fit runs on that Dask cluster; otherwise in this process.
The ranking (and, for IMMIGRATE, the top interactions, in
``<stem>_interactions.csv`` beside a CSV ``--out``) goes to ``--out`` as CSV
or JSON, or to the terminal.

Nothing is lost, nothing hangs:

- Every user error ends with one line on stderr (``dmargin: error: ...``)
  and exit status 2.  The command line is checked before the data is read
  and the fit starts: ``--top`` positive; DATA exists; ``--out`` is ``.csv``
  or ``.json``, ``--plot`` a format matplotlib writes (and matplotlib is
  installed); their directories exist and are writable; a scheduler file
  exists and names an address.
- An input is never overwritten: ``--out``, its ``_interactions.csv`` and
  ``--plot`` may not be DATA (also through a symlink or a hard link) nor lie
  inside a DATA directory, not even with ``--force``; they must be distinct
  files.  An existing output is replaced only with ``--force``.
- Outputs are written to a temporary file in the target directory and moved
  over the target with :func:`os.replace`, so an interrupted or failed write
  leaves the previous file intact.
- A scheduler that does not answer (a ``tcp://`` address, or the address in
  a scheduler file) ends the command within about 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ._compat import ClusterStalledError, WorkerMemoryError
import pandas as pd

METHODS = {
    "irelief": ("IRelief", {}),
    "online-irelief": ("OnlineIRelief", {"reference_size": 2000}),
    "relieff": ("ReliefF", {}),
    "immigrate": ("Immigrate", {}),
    "im4e-immigrate": ("IM4EImmigrate", {}),
    "bim": ("BoostedImmigrate", {}),
    "sbs-mf": ("SBSMF", {}),
    "ldm-rfe": ("LDMRFE", {}),
}
# Methods whose fit sets ``interactions_``: with a CSV --out they also write
# ``<stem>_interactions.csv``, which is checked like --out before the fit.
_WITH_INTERACTIONS = {"immigrate", "im4e-immigrate", "bim"}
# How long a scheduler may take to answer before the command gives up.
_CONNECT_TIMEOUT = "10s"


class UserError(Exception):
    """A problem with the command line or the data: reported in one line."""


def _parser():
    parser = argparse.ArgumentParser(prog="dmargin", description="Margin-based feature selection.")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser(
        "select", help="rank the features of a data set",
        description="Rank the features of DATA (Parquet or CSV) by LABEL.",
        epilog="The options are checked before the data is read. --out and --plot never "
               "overwrite the input (nor a file inside an input directory), not even with "
               "--force. Errors are one line on stderr and exit status 2.")
    sel.add_argument("data", help="a .parquet file or directory, or a .csv file")
    sel.add_argument("--label", required=True, help="the label column")
    sel.add_argument("--method", choices=sorted(METHODS), default="irelief")
    sel.add_argument("--scheduler", metavar="ADDRESS",
                     help="a Dask scheduler (tcp://host:8786, or a scheduler file .json); "
                          "gives up after 10 s without an answer")
    sel.add_argument("--top", type=int, default=None, metavar="K", help="keep the K best features")
    sel.add_argument("--out", type=Path, metavar="FILE",
                     help="write the ranking to FILE (.csv or .json; IMMIGRATE with .csv also "
                          "writes FILE_interactions.csv)")
    sel.add_argument("--plot", type=Path, metavar="FILE",
                     help="save a weight plot (IMMIGRATE: the W heat map); the suffix "
                          "(.png, .pdf, .svg, ...) picks the format")
    sel.add_argument("--force", action="store_true",
                     help="replace existing --out/--plot files (never the input)")
    sel.add_argument("--random-state", type=int, default=0)
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


def _check(args):
    """Check the whole command line; return the resolved outputs and scheduler address."""
    if args.top is not None and args.top < 1:
        raise UserError("--top must be a positive number of features.")
    data = Path(args.data)
    if not data.exists():
        raise UserError(f"{args.data}: no such file or directory; check the DATA path.")
    plan = {"out": None, "interactions": None, "plot": None, "plot_format": None}
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
    written = [(k, p) for k, p in plan.items() if k != "plot_format" and p is not None]
    for i, (first, a) in enumerate(written):
        for second, b in written[i + 1:]:
            if a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)):
                raise UserError(f"{_LABELS[first]} and {_LABELS[second]} name the same file "
                                f"{a}; give each its own path.")
    plan["scheduler"] = _scheduler_address(args.scheduler)
    return plan


# -- reading, fitting, writing --------------------------------------------------------


def _read(path: str, label: str, use_dask: bool):
    p = Path(path)
    if p.suffix.lower() == ".csv":
        try:
            frame = pd.read_csv(p)
        except (OSError, ValueError) as exc:  # ParserError, UnicodeDecodeError, EmptyDataError
            raise UserError(f"{path}: not a readable CSV file ({exc}).") from None
        if label not in frame.columns:
            raise UserError(f"{path} has no column {label!r}; columns are "
                            f"{list(frame.columns)[:20]}. Pass --label with one of them.")
        return frame.drop(columns=[label]), frame[label].to_numpy()
    from ._parquet import _discover, read_parquet

    try:
        X, y = read_parquet(p, label)
        # read_parquet's feature order: every column of the schema but the label.
        names = [n for n in _discover(p, None).schema.names if n != label]
        if not use_dask:
            import dask

            X, y = dask.compute(X, y)
            return pd.DataFrame(X, columns=names), y
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: {exc}") from None
    return X, y


def _client(address, given):
    """A Client of the scheduler at ``address`` (``given`` is what the user typed)."""
    if address is None:
        return None
    from distributed import Client

    try:
        return Client(address, timeout=_CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        via = f" (from {given})" if given != address else ""
        raise UserError(f"cannot reach the Dask scheduler at {address}{via}: {exc}. Start one "
                        "with 'dask scheduler' or check the address.") from None


def _estimator(method, random_state):
    import dmargin

    name, defaults = METHODS[method]
    cls = getattr(dmargin, name, None)
    if cls is None:
        raise UserError(f"--method {method} is not available in this version of dmargin.")
    params = dict(defaults)
    if "random_state" in cls().get_params():
        params["random_state"] = random_state
    return cls(**params)


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
    if hasattr(est, "ranking_"):
        table["rfe_rank"] = np.asarray(est.ranking_)[order]
    return table


# The unit of work each method logs once per step (``dmargin._base.timer``),
# and how many of them a fit takes at most.
_UNITS = {
    "IRelief": ("I-RELIEF iteration", lambda est, a: est.max_iter),
    "OnlineIRelief": ("online I-RELIEF pass", lambda est, a: est.n_passes),
    "ReliefF": ("ReliefF", lambda est, a: 1),
    "Immigrate": ("IMMIGRATE step", lambda est, a: est.max_iter),
    "IM4EImmigrate": ("IM", lambda est, a: 2 * est.max_iter),
    "BoostedImmigrate": ("IMMIGRATE step", lambda est, a: est.n_estimators * est.max_iter),
    "SBSMF": ("SBSMF: boosting", lambda est, a: a),
    "LDMRFE": ("RFE round", lambda est, a: a),
}


class _Progress(logging.Handler):
    """A one-line progress bar on stderr, advanced by the estimator's step log records."""

    def __init__(self, est, n_features, width=30):
        super().__init__(logging.DEBUG)
        self.unit, total = _UNITS.get(type(est).__name__, ("", lambda e, a: 0))
        self.total = max(1, int(total(est, n_features)))
        self.done = 0
        self.width = width
        self.start = time.perf_counter()

    def emit(self, record):
        if not self.unit or not record.getMessage().startswith(self.unit):
            return
        self.done += 1
        filled = min(self.width, self.width * self.done // self.total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/<="
                         f"{self.total} {self.unit.split(':')[0].strip()} "
                         f"{time.perf_counter() - self.start:.1f} s")
        sys.stderr.flush()

    def close(self):
        if self.done:
            sys.stderr.write("\n")
        super().close()


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
        X, y = _read(args.data, args.label, use_dask=client is not None)
        names = np.asarray(getattr(X, "columns", [f"x{j}" for j in range(X.shape[1])]),
                           dtype=object)
        est = _estimator(args.method, args.random_state)
        if not args.quiet:
            print(f"fitting {type(est).__name__} on {X.shape[0]} rows x {X.shape[1]} features"
                  + (f" on {args.scheduler}" if client is not None else ""), file=sys.stderr)
        start = time.perf_counter()
        log = logging.getLogger("dmargin")
        progress = None if args.quiet else _Progress(est, X.shape[1])
        if progress is not None:
            log.addHandler(progress)
            level = log.level
            log.setLevel(logging.DEBUG)
        try:
            est.fit(X, y)
        except (ValueError, TypeError) as exc:  # the estimators' messages name problem and fix
            raise UserError(str(exc)) from None
        except (ClusterStalledError, WorkerMemoryError) as exc:  # say what to do themselves
            raise UserError(str(exc)) from None
        except OSError as exc:  # a Parquet file gone mid-fit, a lost scheduler connection
            raise UserError(f"the fit stopped: {exc}") from None
        finally:
            if progress is not None:
                log.removeHandler(progress)
                log.setLevel(level)
                progress.close()
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


def main(argv=None):
    """Run ``dmargin``; return the exit status (0, or 2 after a one-line error)."""
    args = _parser().parse_args(argv)
    try:
        return select(args)
    except UserError as exc:
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"dmargin: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
