"""Partial nulls: k informative features among A, the others null given them.

A *cell* fixes how the features look (their shape), the class balance, the
number of rows N, of features A and of informative features k; a *draw* is
one data set of a cell.  The labels depend on the first ``k`` columns only:
every other column is independent of y given those ``k`` ("X_j independent
of y given the other features" holds for it), though in the correlated cells
a block of null columns is correlated with the informative ones, so that a
marginal test is expected to flag them and a conditional one must not.

The signal is a latent logistic model of the informative features' normal
scores ``z`` (each feature's own law mapped to the standard normal law, so
that a shape changes the look of the features and not the signal's
strength): half the informative features enter as ``z``, half as
``(z^2 - 1) / sqrt(2)`` (a feature whose two tails point to the same class,
which a marginal mean test misses and Relief does not), ``s = strength *
sum(terms) / sqrt(k)``; class 1 is the ``minority * N`` rows of largest
``s + e`` with ``e`` logistic noise (fixed class sizes, as in
``benchmarks/_nulls.py``).  For genotypes the terms are the standardised
allele count and the heterozygote indicator.

The real cells are a data set's own rows and labels with ``PLANTED`` columns
of independent uniform noise added; only those columns are known nulls.

Seeds are split as in ``benchmarks/_nulls.py``: a draw's seed is derived from
the cell's name, the split (``tune`` while building, ``report`` for what is
quoted, never overlapping) and the draw's index.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
from scipy import stats

SPLITS = {"tune": 0, "report": 1}
#: Uniform noise columns planted into a real data set.
PLANTED = 20


@dataclass(frozen=True)
class Cell:
    """One setting of the partial-null battery."""

    shape: str = "uniform"
    #: Fraction of the rows in class 1.
    minority: float = 0.5
    n: int = 300
    a: int = 40
    k: int = 10
    #: For ``shape="correlated"``: the correlation of each of the ``k`` null columns
    #: that follow the informative ones with its informative partner (a marginal test
    #: flags them; they are null given the informative ones).
    rho: float = 0.0
    #: The latent model's strength (synthetic cells).
    strength: float = 6.0
    #: ``n_anchors`` of the inner estimators (``None``: every row).
    anchors: int | None = None

    @property
    def real(self):
        return self.shape in REAL

    @property
    def name(self):
        if self.real:
            return f"{self.shape} + {PLANTED} uniform noise columns"
        shape = f"correlated normal, rho {self.rho:g}" if self.shape == "correlated" else self.shape
        balance = f"1:{(1 - self.minority) / self.minority:.3g}"
        anchors = "" if self.anchors is None else f", {self.anchors:,} anchors"
        return f"{shape}, {balance}, N = {self.n:,}, A = {self.a}, k = {self.k}{anchors}"

    @property
    def discrete(self):
        return self.shape == "genotypes"


#: The real data sets: name -> loader of ``(X, y)`` (float rows, 0/1 labels).
REAL = ("wdbc", "pima")


def cells():
    """The battery (see the module docstring).  Ten informative features a cell: the
    knockoff+ filter selects nothing unless it can select at least ``1 / q`` features
    (ten at q = 0.1), so fewer would leave its power at zero by construction."""
    base = Cell()
    return [
        base,
        replace(base, shape="normal", n=1000, a=100),
        *(replace(base, shape="correlated", n=500, a=50, rho=r) for r in (0.3, 0.6, 0.8)),
        replace(base, shape="exponential"),
        replace(base, shape="lognormal"),
        replace(base, shape="t3"),
        replace(base, shape="genotypes", n=1000, a=50),
        replace(base, minority=0.2),
        replace(base, shape="normal", n=5000, a=50, strength=2.0, anchors=500),
        replace(base, shape="normal", n=1000, a=500),
        Cell(shape="wdbc"),
        Cell(shape="pima"),
    ]


def rng_of(cell: Cell, split: str, index: int):
    """The random stream of draw ``index`` of ``cell`` in ``split``."""
    key = int.from_bytes(hashlib.sha256(cell.name.encode()).digest()[:8], "little")
    return np.random.default_rng(np.random.SeedSequence([key, SPLITS[split], index]))


def seed_of(cell: Cell, split: str, index: int) -> int:
    """An integer seed for the draw's estimators (knockoff sampling), from the same key."""
    return int(rng_of(cell, split, index).integers(2**31 - 1))


def _features(cell: Cell, rng):
    """``(X, z)``: the rows and the informative columns' normal scores."""
    n, a, k = cell.n, cell.a, cell.k
    if cell.shape == "uniform":
        X = rng.random((n, a))
        return X, stats.norm.ppf(X[:, :k])
    if cell.shape == "normal":
        X = rng.standard_normal((n, a))
        return X, X[:, :k]
    if cell.shape == "correlated":
        X = rng.standard_normal((n, a))
        X[:, k : 2 * k] = cell.rho * X[:, :k] + np.sqrt(1 - cell.rho**2) * X[:, k : 2 * k]
        return X, X[:, :k]
    if cell.shape == "exponential":
        X = rng.exponential(size=(n, a))
        return X, stats.norm.ppf(-np.expm1(-X[:, :k]))
    if cell.shape == "lognormal":
        z = rng.standard_normal((n, a))
        return np.exp(z), z[:, :k]
    if cell.shape == "t3":
        X = rng.standard_t(3, (n, a))
        return X, stats.norm.ppf(stats.t.cdf(X[:, :k], 3))
    if cell.shape == "genotypes":
        maf = rng.uniform(0.05, 0.5, a)
        X = rng.binomial(2, maf, size=(n, a)).astype(np.float64)
        return X, None
    raise ValueError(f"unknown shape {cell.shape!r}")


def _terms(cell: Cell, X, z):
    k = cell.k
    half = (k + 1) // 2
    if cell.shape == "genotypes":
        p = X[:, :k].mean(axis=0) / 2
        additive = (X[:, :k] - 2 * p) / np.sqrt(np.maximum(2 * p * (1 - p), 1e-12))
        het = (X[:, :k] == 1) - 2 * p * (1 - p)
        het = het / np.sqrt(np.maximum(het.var(axis=0), 1e-12))
        return np.concatenate([additive[:, :half], het[:, half:]], axis=1)
    return np.concatenate([z[:, :half], (z[:, half:] ** 2 - 1) / np.sqrt(2)], axis=1)


def labels_from(score, minority, rng):
    """Class 1: the ``minority`` share of rows of largest ``score + e``, ``e`` logistic."""
    n = score.shape[0]
    latent = score + rng.logistic(size=n)
    y = np.zeros(n, dtype=np.int64)
    y[np.argsort(-latent, kind="stable")[: round(minority * n)]] = 1
    return y


@cache
def real_data(name: str):
    """A real data set's rows and 0/1 labels (read once a process)."""
    if name == "wdbc":
        from dmargin.datasets import load_dataset

        X, y = load_dataset("wdbc")
        X, y = X.to_numpy(dtype=np.float64), y.to_numpy()
    else:
        import _datasets

        ds = _datasets.load(name)
        X, y = ds.X, ds.y
    classes = np.unique(y)
    return np.asarray(X, dtype=np.float64), (y == classes[1]).astype(np.int64)


def draw(cell: Cell, split: str, index: int):
    """``(X, y, informative, null)`` of draw ``index`` of ``cell`` in ``split``:
    ``informative`` the columns y depends on (``None`` for a real set: unknown),
    ``null`` the columns known to be null given the others."""
    rng = rng_of(cell, split, index)
    if cell.real:
        X, y = real_data(cell.shape)
        noise = rng.random((X.shape[0], PLANTED))
        a = X.shape[1]
        return (np.hstack([X, noise]), y, None, np.arange(a, a + PLANTED))
    X, z = _features(cell, rng)
    score = cell.strength * _terms(cell, X, z).sum(axis=1) / np.sqrt(cell.k)
    y = labels_from(score, cell.minority, rng)
    return X, y, np.arange(cell.k), np.arange(cell.k, cell.a)


def fdp_power(selected, informative, null):
    """The false-discovery proportion (null columns among the selected, 0 when none is
    selected) and the power (share of the informative columns selected; ``None`` for a
    real set)."""
    selected = np.asarray(selected, dtype=np.int64)
    false = np.isin(selected, null).sum()
    fdp = false / max(1, selected.size)
    power = None if informative is None else float(np.isin(informative, selected).mean())
    return float(fdp), power
