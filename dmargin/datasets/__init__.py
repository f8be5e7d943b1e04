"""Small real datasets shipped with dmargin for the demo, the docs and the tests.

Provenance: ``data/PROVENANCE.md``.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

_FILES = {"wdbc": "wdbc.tsv.gz", "heart": "heart_statlog.tsv.gz"}


def load_dataset(name: str) -> tuple[pd.DataFrame, pd.Series]:
    """Load a bundled dataset as ``(X, y)``.

    Parameters
    ----------
    name : {"wdbc", "heart"}
        ``"wdbc"``: Breast Cancer Wisconsin (Diagnostic), 569 x 30, labels
        0 = benign, 1 = malignant.  ``"heart"``: Statlog (Heart), 270 x 13.

    Returns
    -------
    X : pandas.DataFrame
        Features, with their names.
    y : pandas.Series
        Labels.

    Examples
    --------
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> X.shape
    (569, 30)
    """
    if name not in _FILES:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {sorted(_FILES)}.")
    with resources.files(__package__).joinpath("data", _FILES[name]).open("rb") as fh:
        frame = pd.read_csv(fh, sep="\t", compression="gzip")
    return frame.drop(columns="target"), frame["target"].rename("target")
