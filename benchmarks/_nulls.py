"""Null data for calibrating p-values: labels independent of the features.

A *cell* fixes how the features look (their shape), how the classes are
balanced, the number of rows N, the number of neighbours k and whether
anchors are sampled; a *draw* is one data set of a cell.  The cells vary one
axis at a time from a base (uniform features, balanced classes, N = 300,
A = 50, k = 10, every row an anchor) and add the combinations a user meets
most (skewed features with unbalanced classes, genotypes with a rare
outcome).

Seeds are split: ``split="tune"`` draws come from one stream of seeds, the
ones used while building a law, ``split="report"`` from another that no
tuning ever reads.  A draw's seed is derived from the cell's name, the
split and the draw's index, so adding a cell changes no other cell's data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

A = 50
#: What each split's seeds start from (never overlapping).  ``check``: seeds read by no
#: decision at all (the first ``report`` run moved two bounds of the domain).
#: ``confirm``: 3,000 draws a cell, enough to tell an FDR of 0.05 from 0.06 (its
#: standard error there is 0.004), run once on the domain that ``check`` saw.
SPLITS = {"tune": 0, "report": 1, "check": 2, "confirm": 3}


@dataclass(frozen=True)
class Cell:
    """One setting of the null battery."""

    shape: str = "uniform"
    #: Fraction of the rows in the first class (``None``: three classes, 1:1:1).
    minority: float | None = 0.5
    n: int = 300
    k: int = 10
    #: Sampled anchors as a fraction of N (``None``: every row).
    anchors: float | None = None

    @property
    def name(self):
        balance = (
            "3 classes" if self.minority is None else f"1:{(1 - self.minority) / self.minority:.3g}"
        )
        anchors = "" if self.anchors is None else f", anchors {self.anchors:g} N"
        return f"{self.shape}, {balance}, N = {self.n}, k = {self.k}{anchors}"


SHAPES = (
    "uniform",
    "normal",
    "heavy-tailed",
    "skewed",
    "genotypes",
    "mixed",
    "correlated blocks",
    "logistic",
)


def cells():
    """The battery: the base, each axis varied alone, and the common combinations."""
    base = Cell()
    out = [base]
    out += [replace(base, shape=s) for s in SHAPES[1:]]
    out += [replace(base, minority=m) for m in (0.45, 0.4, 0.25, 0.1)]
    out += [replace(base, n=n) for n in (100, 1000, 5000)]
    out += [replace(base, k=k) for k in (5, 50)]
    out += [replace(base, n=1000, k=100)]
    out += [replace(base, n=1000, anchors=0.2)]
    out += [
        replace(base, shape="skewed", minority=0.25),
        replace(base, shape="genotypes", minority=0.1),
        replace(base, shape="heavy-tailed", minority=0.25, n=1000),
    ]
    return out


def _rng(cell: Cell, split: str, index: int):
    key = int.from_bytes(hashlib.sha256(cell.name.encode()).digest()[:8], "little")
    return np.random.default_rng(np.random.SeedSequence([key, SPLITS[split], index]))


def features(shape: str, n: int, rng) -> np.ndarray:
    """``n`` rows of ``A`` features of the given shape (no link to any label)."""
    if shape == "uniform":
        return rng.random((n, A))
    if shape == "normal":
        return rng.standard_normal((n, A))
    if shape == "logistic":  # a little heavier-tailed than the normal law (kurtosis 1.2)
        return rng.logistic(size=(n, A))
    if shape == "heavy-tailed":  # Student's t, 3 degrees of freedom
        return rng.standard_t(3, (n, A))
    if shape == "skewed":  # like counts or expression: exponential
        return rng.exponential(size=(n, A))
    if shape == "genotypes":  # 0/1/2 under Hardy-Weinberg, minor allele frequency 0.05-0.5
        maf = rng.uniform(0.05, 0.5, A)
        return rng.binomial(2, maf, size=(n, A)).astype(np.float64)
    if shape == "mixed":
        X = rng.standard_normal((n, A))
        X[:, ::2] = rng.binomial(2, 0.3, size=(n, (A + 1) // 2))
        return X
    if shape == "correlated blocks":  # blocks of 5 features, correlation 0.7 within
        z = rng.standard_normal((n, A // 5, 1))
        return (np.sqrt(0.7) * z + np.sqrt(0.3) * rng.standard_normal((n, A // 5, 5))).reshape(n, A)
    raise ValueError(f"unknown shape {shape!r}")


def labels(minority: float | None, n: int, rng) -> np.ndarray:
    """Labels of fixed class sizes in a random order (``None``: three classes)."""
    if minority is None:
        y = np.arange(n) % 3
    else:
        y = (np.arange(n) < round(minority * n)).astype(np.int64)
    return rng.permutation(y)


def draw(cell: Cell, split: str, index: int):
    """``(X, y)`` of draw ``index`` of ``cell`` in ``split``."""
    rng = _rng(cell, split, index)
    return features(cell.shape, cell.n, rng), labels(cell.minority, cell.n, rng)
