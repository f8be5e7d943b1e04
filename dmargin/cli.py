"""``dmargin select``: rank the features of a Parquet or CSV file from the shell.

::

    dmargin select DATA --label COL --method irelief [--scheduler ADDRESS]
                   [--top K] [--out FILE.csv|FILE.json] [--plot FILE.png]

Parquet (a file, a directory, a Spark-written partitioned directory) is read
lazily with :func:`dmargin.read_parquet`; CSV with pandas.  With
``--scheduler`` the fit runs on that Dask cluster; otherwise in this process.
The ranking (and, for IMMIGRATE, the top interactions) goes to ``--out`` as
CSV or JSON, or to the terminal.  Every user error ends with one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
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


class UserError(Exception):
    """A problem with the command line or the data: reported in one line."""


def _parser():
    parser = argparse.ArgumentParser(prog="dmargin", description="Margin-based feature selection.")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser("select", help="rank the features of a data set",
                         description="Rank the features of DATA (Parquet or CSV) by LABEL.")
    sel.add_argument("data", help="a .parquet file or directory, or a .csv file")
    sel.add_argument("--label", required=True, help="the label column")
    sel.add_argument("--method", choices=sorted(METHODS), default="irelief")
    sel.add_argument("--scheduler", metavar="ADDRESS",
                     help="a Dask scheduler (tcp://host:8786, or a scheduler file .json)")
    sel.add_argument("--top", type=int, default=None, metavar="K", help="keep the K best features")
    sel.add_argument("--out", type=Path, help="write the ranking to FILE (.csv or .json)")
    sel.add_argument("--plot", type=Path, help="save a weight plot (IMMIGRATE: the W heat map)")
    sel.add_argument("--random-state", type=int, default=0)
    sel.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return parser


def _read(path: str, label: str, use_dask: bool):
    p = Path(path)
    if not p.exists():
        raise UserError(f"{path}: no such file or directory.")
    if p.suffix.lower() == ".csv":
        try:
            frame = pd.read_csv(p)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: not a readable CSV file ({exc}).") from None
        if label not in frame.columns:
            raise UserError(f"{path} has no column {label!r}; columns are "
                            f"{list(frame.columns)[:20]}. Pass --label with one of them.")
        return frame.drop(columns=[label]), frame[label].to_numpy()
    from ._parquet import _discover, read_parquet

    try:
        X, y = read_parquet(p, label)
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(str(exc)) from None
    # read_parquet's feature order: every column of the schema but the label.
    names = [n for n in _discover(p, None).schema.names if n != label]
    if not use_dask:
        import dask

        X, y = dask.compute(X, y)
        return pd.DataFrame(X, columns=names), y
    return X, y


def _client(address):
    if address is None:
        return None
    from distributed import Client

    try:
        if address.endswith(".json"):
            return Client(scheduler_file=address, timeout="10s")
        return Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise UserError(f"cannot reach the Dask scheduler at {address}: {exc}. Start one with "
                        "'dask scheduler' or check the address.") from None


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
    if hasattr(est, "ranking_"):  # elimination order (SBS-MF, LDM-RFE): rank 1 = kept longest
        score = -np.asarray(est.ranking_, dtype=float)
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


def _write(table, interactions, out: Path | None):
    if out is None:
        print(table.to_string(index=False))
        if interactions is not None:
            print("\ntop interactions:")
            print(interactions.to_string(index=False))
        return
    suffix = out.suffix.lower()
    if suffix == ".csv":
        table.to_csv(out, index=False)
        if interactions is not None:
            interactions.to_csv(out.with_name(out.stem + "_interactions.csv"), index=False)
    elif suffix == ".json":
        doc = {"ranking": table.to_dict(orient="records")}
        if interactions is not None:
            doc["interactions"] = interactions.to_dict(orient="records")
        out.write_text(json.dumps(doc, indent=2, default=float))
    else:
        raise UserError(f"--out {out}: use a .csv or .json file name.")


def _plot(est, path: Path):
    try:
        from . import plotting
    except ImportError:  # pragma: no cover - matplotlib missing
        raise UserError("--plot needs matplotlib: pip install 'dmargin[plot]'.") from None
    import matplotlib

    matplotlib.use("Agg")
    if hasattr(est, "weight_matrix_"):
        ax = plotting.plot_weight_matrix(est)
    else:
        ax = plotting.plot_feature_weights(est)
    ax.figure.savefig(path, bbox_inches="tight")


def select(args):
    if args.top is not None and args.top < 1:
        raise UserError("--top must be a positive number of features.")
    client = _client(args.scheduler)
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
        except ValueError as exc:  # the estimators' messages name the problem and the fix
            raise UserError(str(exc)) from None
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
    _write(table, interactions, args.out)
    if args.plot is not None:
        _plot(est, args.plot)
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return select(args)
    except UserError as exc:
        print(f"dmargin: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
