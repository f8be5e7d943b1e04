"""Loaders for the shared benchmark datasets (``shared/data`` beside the repository).

Every loader returns a :class:`Dataset` with a float64 feature matrix and integer labels
``0..C-1`` (original label values kept in ``classes``).  Nothing is ever downloaded: the files
are the byte-for-byte copies described in ``shared/data/README.md``.

The data directory is, in order: the ``DMARGIN_DATA`` environment variable, else
``<repo>/../shared/data`` (the layout used on developer machines and in CI).

Usage::

    from _datasets import load, names   # benchmarks/ on sys.path, as every script has it
    ds = load("heart")
    ds.X, ds.y, ds.feature_names, ds.notes
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import scipy.io

__all__ = ["Dataset", "data_dir", "load", "names", "load_pmlb", "load_raetsch", "load_skf_mat"]


def data_dir() -> Path:
    env = os.environ.get("DMARGIN_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


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
    path = data_dir() / relpath
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
    path = data_dir() / relpath
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
    path = data_dir() / relpath
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
    ds.notes.append("PMLB heart_statlog (UCI Statlog heart, 270 x 13); categorical columns integer-coded")
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

ALIASES = {"pima": "diabetes", "diabetics": "diabetes", "flare": "flare-solar", "segment": "segmentation"}


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
