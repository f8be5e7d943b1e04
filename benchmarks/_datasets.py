"""Loaders for the benchmark datasets (a data folder beside the repository, not shipped).

Every loader returns a :class:`Dataset` with a float64 feature matrix and integer labels
``0..C-1`` (original label values kept in ``classes``).  Nothing is ever downloaded: the files
are byte-for-byte copies of public files (or conversions of one), each named with its origin
in :data:`SOURCES` and in ``benchmarks/README.md`` ("Data").

The data directory is, in order: the ``DMARGIN_DATA`` environment variable, else
``<repo>/../shared/data`` (the layout used on developer machines and in CI).  A file that is
not there ends the benchmark with one line -- the file, where it comes from, the command that
fetches it -- and exit status :data:`SKIPPED` (77), which ``make bench`` reports as skipped.

Usage::

    from _datasets import load, names   # benchmarks/ on sys.path, as every script has it
    ds = load("heart")
    ds.X, ds.y, ds.feature_names, ds.notes
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io

__all__ = [
    "Dataset",
    "SKIPPED",
    "SOURCES",
    "data_dir",
    "data_path",
    "load",
    "names",
    "load_pmlb",
    "load_raetsch",
    "load_skf_mat",
    "source",
]

#: Exit status of a benchmark whose data is missing (automake's "skipped").
SKIPPED = 77

_GH = "https://github.com/{repo}/raw/{commit}/{path}"
_PMLB = (
    "EpistasisLab/pmlb",
    "0820182add20998ed3f88b30efd273107286c695",
    "datasets/{stem}/{name}",
    "PMLB",
)
_SKF = (
    "jundongl/scikit-feature",
    "48cffad4e88ff4b9d2f1c7baffb314d1b3303792",
    "skfeature/data/{name}",
    "scikit-feature",
)
_RAE = (
    "Devn913/AGMR_entropy_sparse",
    "7d5f7cfd8ca4c0f7130bfda3201084db5c093174",
    "twin_datasets/{raetsch}",
    "Raetsch's IDA benchmark",
)
_DMA = (
    "ramhiser/datamicroarray",
    "a95f6f68ed3debf48ee54f198435fa12aa655b16",
    "data/{name}",
    "R package datamicroarray",
)
_DERIVED_CSV = (
    "{name} (https://github.com/ramhiser/datamicroarray/raw/"
    "a95f6f68ed3debf48ee54f198435fa12aa655b16/data/{name}): its x with y as a last "
    "column y, as CSV (rdata.read_rda(FILE)[NAME], see benchmarks/README.md)"
)

#: Where each file of the data folder comes from: relative path -> (repository, commit, path in
#: it, collection), or a note for a folder or a derived file.  Files not listed take their
#: collection from their suffix (``*.tsv.gz``: PMLB, ``*_raetsch.mat``: IDA, ``*.mat``:
#: scikit-feature, ``*.RData``: datamicroarray).
SOURCES = {
    "breast-cancer/wpbc.data": (
        "Gsaab514/GeorgeSaab397p1",
        "dbf81ee8",
        "CancerData/wpbc.data",
        "UCI wpbc mirror",
    ),
    "breast-cancer/dataR2.csv": (
        "machezero/Breast-Cancer-Classification",
        "2cf1d3994ba1e9f9301bb0a2f02c17e38c31a71a",
        "dataR2.csv",
        "UCI Breast Cancer Coimbra mirror",
    ),
    "parkinsons/parkinsons.data": (
        "Phindulo60/Adaptive-Computation-and-Machine-Learning",
        "1f20daf4",
        "parkinsons.data",
        "UCI parkinsons mirror",
    ),
    "parkinsons/park.rda": (
        "RuzhangZhao/Immigrate",
        "b86fe759ee2cbc1a7e76c436d63e73d3a4dd0839",
        "data/park.rda",
        "the IMMIGRATE authors' R package",
    ),
    "wholesale-customers/Wholesale customers data.csv": (
        "k-ishwari/Cluster-Formation-of-Wholesale-Customer-Data",
        "398a5564",
        "Wholesale customers data.csv",
        "UCI wholesale customers mirror",
    ),
    "cryotherapy/Cryotherapy.csv": "derived from Cryotherapy.xlsx of vatsalkgor/DMML @ ce8bdce6 "
    "(https://github.com/vatsalkgor/DMML/raw/ce8bdce6/"
    "Cryotherapy.xlsx): its one sheet as CSV",
    "prostate-ge/singh.csv.gz": "derived from " + _DERIVED_CSV.format(name="singh.RData"),
    "breast-west/west.csv.gz": "derived from " + _DERIVED_CSV.format(name="west.RData"),
    "colon/alon.csv.gz": "derived from " + _DERIVED_CSV.format(name="alon.RData"),
    "gametes": "the data/ folder of EpistasisLab/scikit-rebate @ 1679885 "
    "(git clone https://github.com/EpistasisLab/scikit-rebate; copy its data/ "
    "files here)",
    "rebate-benchmark": "EpistasisLab/rebate-benchmark @ 374d2a69d531bff468e2de0c857d5bb9c645010d "
    "(git clone https://github.com/EpistasisLab/rebate-benchmark; copy its "
    "benchmark-data/Simulated_Benchmark_Archive/GAMETES_2.2_dev_peter_"
    "core2wayEpistasis_Datasets_Loc_2_Qnt_2_Pop_100000 folder here as "
    "core2way)",
}


def data_dir() -> Path:
    env = os.environ.get("DMARGIN_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def source(relpath: str) -> tuple[str | None, str]:
    """``(url, what)``: where the file ``relpath`` of the data folder comes from.

    ``url`` is None for a folder or a derived file; ``what`` then says how to make it.
    """
    top = relpath.split("/")[0]
    entry = SOURCES.get(relpath, SOURCES.get(top))
    name = relpath.rsplit("/", 1)[-1]
    if entry is None:
        if name.endswith(".tsv.gz"):
            entry = _PMLB
        elif name.endswith("_raetsch.mat"):
            entry = _RAE
        elif name.endswith(".mat"):
            entry = _SKF
        elif name.endswith(".RData"):
            entry = _DMA
        else:
            return None, "not recorded: see benchmarks/README.md (Data)"
    if isinstance(entry, str):
        return None, entry
    repo, commit, path, collection = entry
    path = path.format(
        name=name, stem=name[: -len(".tsv.gz")], raetsch=name.replace("_raetsch", "")
    )
    return _GH.format(repo=repo, commit=commit, path=path), f"{collection}, {repo} @ {commit[:8]}"


def missing(relpath: str, what: str = "data file"):
    """End the benchmark: one line naming the file, its origin and how to get it."""
    path = data_dir() / relpath
    url, origin = source(relpath)
    get = (
        f"get it with: curl -fL --create-dirs -o {shlex.quote(str(path))} {shlex.quote(url)}"
        if url
        else f"it is {origin}"
    )
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "benchmark"
    where = (
        "(DMARGIN_DATA)"
        if os.environ.get("DMARGIN_DATA")
        else "(the data folder beside the repository; DMARGIN_DATA names another)"
    )
    print(
        f"{script}: skipped: no {what} {path} {where}; "
        f"{f'from {origin}, {url}; ' if url else ''}{get}",
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(SKIPPED)


def data_path(relpath: str, folder: bool = False) -> Path:
    """``data_dir() / relpath``, or the benchmark ends with :func:`missing`'s one line."""
    path = data_dir() / relpath
    if not (path.is_dir() if folder else path.is_file()):
        missing(relpath, "data folder" if folder else "data file")
    return path


@dataclass
class Dataset:
    name: str
    X: np.ndarray  # (n, p) float64
    y: np.ndarray  # (n,) int64, values 0..C-1
    feature_names: list[str]
    classes: np.ndarray  # original label values, index = encoded label
    source: str  # path relative to the data directory
    notes: list[str] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def class_counts(self) -> dict:
        vals, cnt = np.unique(self.y, return_counts=True)
        return {str(self.classes[v]): int(c) for v, c in zip(vals, cnt)}

    def constant_features(self) -> list[str]:
        """Names of features that take a single value over the whole file."""
        const = np.ptp(self.X, axis=0) == 0
        return [n for n, c in zip(self.feature_names, const) if c]


def _encode(y_raw) -> tuple[np.ndarray, np.ndarray]:
    classes, y = np.unique(np.asarray(y_raw).ravel(), return_inverse=True)
    return y.astype(np.int64), classes


# ------------------------------------------------------------------------------------------
# format readers


def load_pmlb(relpath: str, name: str | None = None, label: str = "target") -> Dataset:
    """PMLB ``*.tsv.gz``: tab-separated, header row, label column ``target``.

    The label is usually the last column; ``wine_recognition`` has it first, which is handled
    because the column is looked up by name.
    """
    path = data_path(relpath)
    df = pd.read_csv(path, sep="\t")
    if label not in df.columns:
        raise ValueError(f"{path}: no label column {label!r}")
    y, classes = _encode(df[label].to_numpy())
    Xdf = df.drop(columns=[label])
    X = Xdf.to_numpy(dtype=np.float64)
    if np.isnan(X).any():
        raise ValueError(f"{path}: missing values in features")
    return Dataset(
        name=name or Path(relpath).name.split(".")[0],
        X=X,
        y=y,
        feature_names=[str(c) for c in Xdf.columns],
        classes=classes,
        source=relpath,
    )


def load_raetsch(relpath: str, name: str | None = None) -> Dataset:
    """Rätsch IDA benchmark ``*_raetsch.mat``: ``data`` (n x p), ``target`` (n x 1, -1/+1).

    Some files store ``data`` as uint8 (flare-solar); it is cast to float64.  The 100
    train/test split indices of the IDA benchmark are NOT in these files.
    """
    path = data_path(relpath)
    m = scipy.io.loadmat(path)
    X = np.asarray(m["data"], dtype=np.float64)
    y, classes = _encode(m["target"])
    return Dataset(
        name=name or Path(relpath).stem,
        X=X,
        y=y,
        feature_names=[f"f{j}" for j in range(X.shape[1])],
        classes=classes,
        source=relpath,
    )


def load_skf_mat(relpath: str, name: str | None = None) -> Dataset:
    """scikit-feature ``*.mat``: ``X`` (n x p), ``Y`` (n x 1)."""
    path = data_path(relpath)
    m = scipy.io.loadmat(path)
    X = np.asarray(m["X"], dtype=np.float64)
    y, classes = _encode(m["Y"])
    return Dataset(
        name=name or Path(relpath).stem,
        X=X,
        y=y,
        feature_names=[f"f{j}" for j in range(X.shape[1])],
        classes=classes,
        source=relpath,
    )


# ------------------------------------------------------------------------------------------
# registry: the datasets used by the I-RELIEF paper (Sun 2007, Table 1) and a few others.


def _heart() -> Dataset:
    ds = load_pmlb("heart/heart_statlog.tsv.gz", "heart")
    ds.notes.append(
        "PMLB heart_statlog (UCI Statlog heart, 270 x 13); categorical columns integer-coded"
    )
    return ds


def _pima() -> Dataset:
    ds = load_pmlb("pima/pima.tsv.gz", "diabetes")
    ds.notes.append(
        "PMLB pima (Pima Indians diabetes, 768 x 8) = the paper's 'diabetics'; "
        "zeros that stand for missing values are kept as in the file"
    )
    return ds


def _thyroid() -> Dataset:
    ds = load_raetsch("thyroid/thyroid_raetsch.mat", "thyroid")
    ds.notes.append("Rätsch IDA 'thyroid' (binary, 215 x 5; -1: 150, +1: 65)")
    return ds


def _flare() -> Dataset:
    ds = load_raetsch("flare/flare_solar_raetsch.mat", "flare-solar")
    ds.notes.append(
        "Rätsch IDA 'flare-solar' (binary, 1066 x 9, integer-coded categorical features stored as "
        "uint8; many duplicate rows)"
    )
    return ds


def _segmentation() -> Dataset:
    ds = load_pmlb("segmentation/segmentation.tsv.gz", "segmentation")
    const = ds.constant_features()
    ds.notes.append("PMLB segmentation (UCI image segmentation, 2310 x 19, 7 classes of 330)")
    if const:
        ds.notes.append(f"constant feature(s) in the whole file: {const} (kept; scaled to 0)")
    return ds


def _yeast() -> Dataset:
    ds = load_pmlb("yeast/yeast.tsv.gz", "yeast")
    ds.notes.append(
        "PMLB yeast has 1479 rows and 9 classes: PMLB dropped class ERL (5 rows) from the 1484-row "
        "UCI set, which has 10 classes (as in the paper's Table 1)"
    )
    return ds


def _wine() -> Dataset:
    ds = load_pmlb("wine/wine_recognition.tsv.gz", "wine")
    ds.notes.append("label column 'target' is the FIRST column in this file")
    return ds


_REGISTRY: dict[str, Callable[[], Dataset]] = {
    "heart": _heart,
    "diabetes": _pima,
    "thyroid": _thyroid,
    "flare-solar": _flare,
    "segmentation": _segmentation,
    "yeast": _yeast,
    "wine": _wine,
    "breast-w": lambda: load_pmlb("breast-cancer/breast_w.tsv.gz", "breast-w"),
    "wdbc": lambda: load_pmlb("breast-cancer/wdbc.tsv.gz", "wdbc"),
    "glass": lambda: load_pmlb("glass/glass.tsv.gz", "glass"),
    "ecoli": lambda: load_pmlb("ecoli/ecoli.tsv.gz", "ecoli"),
    "new-thyroid": lambda: load_pmlb("thyroid/new_thyroid.tsv.gz", "new-thyroid"),
    "image": lambda: load_raetsch("segmentation/image_raetsch.mat", "image"),
    "colon": lambda: load_skf_mat("colon/colon.mat", "colon"),
}

ALIASES = {
    "pima": "diabetes",
    "diabetics": "diabetes",
    "flare": "flare-solar",
    "segment": "segmentation",
}


def names() -> list[str]:
    return list(_REGISTRY)


def load(name: str) -> Dataset:
    key = ALIASES.get(name, name)
    if key not in _REGISTRY:
        raise KeyError(f"unknown dataset {name!r}; known: {names()}")
    return _REGISTRY[key]()


if __name__ == "__main__":  # quick inventory
    for n in names():
        d = load(n)
        print(f"{n:14s} {d.X.shape!s:12s} classes={d.class_counts()} const={d.constant_features()}")
