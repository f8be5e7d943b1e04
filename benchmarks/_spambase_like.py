"""Spambase-like data: a synthetic stand-in with the shape and marginals of UCI spambase.

The speed comparisons against fast-select are quoted on spambase's kind of data (57
continuous features, most of them zero with long right tails).  No copy of spambase
is stored in this repository and the benchmarks run without a network, so
:func:`make_spambase_like` generates rows that imitate it -- it is NOT spambase, and
no figure measured on it is a claim about spambase itself.  What it imitates
(spambase: 4,601 e-mails, 1,813 of them spam):

- 48 ``word_freq_*`` and 6 ``char_freq_*`` columns, percentages of the words or
  characters of an e-mail: per column 30 % to 95 % zeros (drawn once per column),
  the rest lognormal with a long right tail, rounded to 2 decimals as spambase's;
- 3 capital-run-length columns, each >= 1 with a very long tail: the average run
  (a float, rounded to 3 decimals), the longest run and the total (integers);
- 39.4 % positive class (spam), the same share at every N;
- some columns shifted by class, as spambase's: the spam words (``remove``,
  ``free``, ``money``, ``000``, ``!``, ``$``, the capital runs, ...) are non-zero
  more often and larger in spam; the ham words (``hp``, ``george``, ``1999``, ...)
  the other way round.

A generator samples as many rows as asked (2,000, 4,000 and 8,000 here: more than
spambase's 4,601).  The rows are min-max scaled to [0, 1] once, float64 and
C-contiguous, as the other speed data, so every library gets the same matrix.
Every column has more than 10 distinct values at the sizes used (checked), so both
fast-select (``discrete_limit=10``) and dmargin's SURF family
(``discrete_threshold=10``) treat all 57 as continuous.
"""

from __future__ import annotations

import numpy as np

#: spambase's column names (the UCI documentation's order).
WORDS = (
    "make address all 3d our over remove internet order mail receive will people report "
    "addresses free business email you credit your font 000 money hp hpl george 650 lab labs "
    "telnet 857 data 415 85 technology 1999 parts pm direct cs meeting original project re "
    "edu table conference"
).split()
CHARS = (";", "(", "[", "!", "$", "#")
CAPITALS = ("average", "longest", "total")
NAMES = (
    [f"word_freq_{w}" for w in WORDS]
    + [f"char_freq_{c}" for c in CHARS]
    + [f"capital_run_length_{c}" for c in CAPITALS]
)
#: Columns more often non-zero and larger in spam, and in ham.
SPAM_WORDS = ("remove", "free", "business", "you", "your", "000", "money", "credit", "our", "over")
SPAM_CHARS = ("!", "$")
HAM_WORDS = ("hp", "hpl", "george", "650", "lab", "labs", "1999", "edu", "meeting", "re")
POSITIVE_SHARE = 0.394
#: The sizes the speed benchmarks use.
SIZES = (2000, 4000, 8000)
#: Fewer distinct values than this and fast-select / dmargin would call a column discrete.
DISCRETE_LIMIT = 10


def make_spambase_like(n_samples: int, seed: int = 0, scale: bool = True):
    """``(X, y)``: ``n_samples`` spambase-like rows (module docstring), and the labels.

    Parameters
    ----------
    n_samples : int
        Rows to draw.
    seed : int
        The column parameters and the rows both follow from it.
    scale : bool
        Min-max scale each column to [0, 1] (float64, C-contiguous), as the speed
        benchmarks feed every library.

    Returns
    -------
    X : ndarray of shape (n_samples, 57)
    y : ndarray of int64
        1 for the spam-like rows (``round(0.394 n_samples)`` of them), 0 else.

    Raises
    ------
    ValueError
        A column came out with 10 or fewer distinct values (too few rows for this
        generator: the libraries would call it discrete).
    """
    rng = np.random.default_rng(seed)
    n = int(n_samples)
    y = np.zeros(n, dtype=np.int64)
    y[: round(POSITIVE_SHARE * n)] = 1
    y = y[rng.permutation(n)]
    spam = y == 1

    columns = []
    frequencies = [(w, w in SPAM_WORDS, w in HAM_WORDS) for w in WORDS]
    frequencies += [(c, c in SPAM_CHARS, False) for c in CHARS]
    for _, spammy, hammy in frequencies:
        # the column's share of zeros; a shifted column has 0.25 fewer in one class, so
        # that its share over both classes stays within 30-95 % as well
        zeros = rng.uniform(0.45 if spammy or hammy else 0.30, 0.95)
        mu, sigma = rng.uniform(-1.5, 0.0), rng.uniform(0.7, 1.2)
        zero_p = np.full(n, zeros)
        shift = np.zeros(n)
        for flag, rows in ((spammy, spam), (hammy, ~spam)):
            if flag:  # more often non-zero and larger in these rows
                zero_p[rows] = zeros - 0.25
                shift[rows] = 0.8
        nonzero = rng.random(n) >= zero_p
        values = np.exp(rng.normal(mu + shift, sigma))
        columns.append(np.where(nonzero, np.minimum(np.round(values, 2), 100.0), 0.0))

    # capital runs: >= 1, very long tails, larger in spam
    lift = np.where(spam, 0.6, 0.0)
    average = 1.0 + np.exp(rng.normal(0.6 + lift, 1.0, n))
    longest = np.floor(np.exp(rng.normal(2.3 + 1.5 * lift, 1.3, n))) + 1.0
    total = longest + np.floor(np.exp(rng.normal(4.0 + 1.5 * lift, 1.4, n)))
    columns += [np.round(average, 3), longest, total]

    X = np.column_stack(columns)
    distinct = [len(np.unique(X[:, j])) for j in range(X.shape[1])]
    few = [(NAMES[j], d) for j, d in enumerate(distinct) if d <= DISCRETE_LIMIT]
    if few:
        raise ValueError(
            f"spambase-like columns with <= {DISCRETE_LIMIT} distinct values at N = {n}: "
            f"{few}; draw more rows"
        )
    return (minmax_scale(X) if scale else X), y


def minmax_scale(X: np.ndarray) -> np.ndarray:
    """Each column to [0, 1] (a constant column to 0), float64, C-contiguous."""
    low, high = X.min(axis=0), X.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return np.ascontiguousarray((X - low) / span, dtype=np.float64)


def describe(X: np.ndarray, y: np.ndarray) -> dict:
    """What the JSON records of the data: shape, positive share, zero shares, distinct values."""
    zeros = (X == X.min(axis=0)).mean(axis=0)
    distinct = [len(np.unique(X[:, j])) for j in range(X.shape[1])]
    return {
        "shape": list(X.shape),
        "positive_share": round(float(np.mean(y)), 4),
        "zero_share_min": round(float(zeros[:54].min()), 3),
        "zero_share_max": round(float(zeros[:54].max()), 3),
        "distinct_values_min": int(min(distinct)),
    }
