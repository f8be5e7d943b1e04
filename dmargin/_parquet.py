"""Parquet in: a file, a directory, or a Spark-written hive-partitioned directory.

The dataset is discovered once with :mod:`pyarrow.dataset` (which skips
``_SUCCESS`` and other ``_``/``.`` files, reads hive ``key=value`` directories
and maps ``__HIVE_DEFAULT_PARTITION__`` to a missing value), then every row
group (or file) becomes one dask task that returns *both* the feature block
and the label block.  X and y are two views of those same tasks, so their
rows cannot come apart (selecting X and y as two projections of a dask
DataFrame can let the optimiser partition them differently, dask/dask#12411).

Row counts come from the Parquet footers, so the arrays have known chunk
sizes without reading any data; only when rows are filtered (``filters`` or
``missing_label="drop"``) are the blocks read once to count them, and kept in
memory.

``dask.dataframe.read_parquet`` is not used: it infers partition types file by
file and fails on a ``__HIVE_DEFAULT_PARTITION__`` directory ("No non-null
segments were available for field ...").
"""

from __future__ import annotations

import os

import numpy as np

_MISSING = ("raise", "drop", "keep")


def _label_kind(arrow_type):
    """``"int"``, ``"float"``, ``"bool"`` or ``"str"`` for a label column's arrow type."""
    import pyarrow as pa

    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "str"
    return None


def _is_numeric(arrow_type):
    import pyarrow as pa

    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t))


def _label_dtype(kind, missing_label):
    if kind == "str":
        return np.dtype(object)
    if kind == "float" or (kind == "int" and missing_label == "keep"):
        return np.dtype(np.float64)  # NaN marks a kept missing label
    if kind == "bool" and missing_label == "keep":
        return np.dtype(object)
    return np.dtype(np.int64) if kind == "int" else np.dtype(bool)


def _decode(column):
    """A ChunkedArray with dictionary chunks as plain values."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        return pa.chunked_array([c.dictionary_decode() for c in column.chunks],
                                type=column.type.value_type)
    return column


def _read_block(path, row_groups, filesystem, schema, partition_expression, filter_,
                features, label, label_dtype, missing_label):
    """Read one row group (or file): ``(X float64 (n, A), y (n,))`` from ONE table."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    fragment = ds.ParquetFileFormat().make_fragment(
        path, filesystem=filesystem, partition_expression=partition_expression,
        row_groups=row_groups)
    table = fragment.to_table(schema=schema, columns=list(features) + [label], filter=filter_)
    labels = _decode(table.column(label))
    if labels.null_count:
        if missing_label == "raise":
            raise ValueError(
                f"{labels.null_count} rows of {path} have no value in the label column "
                f"{label!r}. Pass missing_label='drop' to read_parquet to skip them, or "
                "missing_label='keep' to get them as missing values.")
        if missing_label == "drop":
            table = table.filter(pc.is_valid(labels))
            labels = _decode(table.column(label))
    X = np.empty((table.num_rows, len(features)), dtype=np.float64)
    for j, name in enumerate(features):
        col = _decode(table.column(name))
        # Nulls become NaN; fit then asks for imputation rather than guessing.
        X[:, j] = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
    if label_dtype == object:
        y = np.empty(table.num_rows, dtype=object)
        y[:] = labels.to_pylist()  # Python str / None, as pandas' object columns
    elif label_dtype == np.float64:
        y = pc.cast(labels, pa.float64()).to_numpy(zero_copy_only=False)
    else:
        y = labels.to_numpy(zero_copy_only=False).astype(label_dtype)
    return X, y


def _discover(path, filesystem):
    import pyarrow.dataset as ds

    if filesystem is None and isinstance(path, (str, os.PathLike)) and "://" not in str(path):
        path = os.path.abspath(os.fspath(path))  # workers may run in another directory
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"Parquet path {path!r} does not exist. Check the path (relative paths are "
                "resolved against the current directory of the client process).")
    try:
        return ds.dataset(path, format="parquet", partitioning="hive", filesystem=filesystem)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"Parquet path {path!r} does not exist ({e}). Check the "
                                "path and the filesystem / storage credentials.") from e


def _plan(path, label, features, filters, missing_label, split_row_groups, filesystem):
    """Check the dataset and list its blocks: ``(dataset, features, filters, y_dtype, blocks)``.

    ``blocks`` holds ``(file path, row group ids, partition expression, rows
    per the footers)`` for every row group (or file) that can hold rows.
    """
    import pyarrow.parquet as pq

    if missing_label not in _MISSING:
        raise ValueError(f"missing_label={missing_label!r} is not valid; it must be one of "
                         f"{', '.join(map(repr, _MISSING))}.")
    dataset = _discover(path, filesystem)
    if not dataset.files:
        raise ValueError(f"The Parquet dataset at {path!r} has no rows (no data files; names "
                         "starting with '_' or '.' such as _SUCCESS are not data).")
    schema = dataset.schema
    names = list(schema.names)
    if label not in names:
        raise ValueError(f"Label column {label!r} is not in the Parquet dataset, whose columns "
                         f"are {names}. Pass label= one of them.")
    kind = _label_kind(schema.field(label).type)
    if kind is None:
        raise ValueError(f"Label column {label!r} has type {schema.field(label).type}; use "
                         "integer, string, boolean or categorical class labels.")
    if features is None:
        features = [n for n in names if n != label]
    else:
        features = [str(f) for f in features]
        unknown = [f for f in features if f not in names]
        if unknown:
            raise ValueError(f"Feature columns {unknown} are not in the Parquet dataset, whose "
                             f"columns are {names}.")
        if label in features:
            raise ValueError(f"The label column {label!r} is also listed in features; "
                             "remove it from features.")
    if not features:
        raise ValueError("No feature columns: the dataset has only the label column.")
    bad = [f for f in features if not _is_numeric(schema.field(f).type)]
    if bad:
        raise ValueError(
            f"Feature columns {bad} are not numeric "
            f"({', '.join(str(schema.field(f).type) for f in bad)}). Pass features=[...] "
            "without them, or encode them as numbers before writing the Parquet data.")
    if filters is not None and not hasattr(filters, "is_valid"):  # DNF list, not an Expression
        filters = pq.filters_to_expression(filters)

    # Plan: one block per row group (or file), row counts from the footers.
    blocks = []
    for fragment in dataset.get_fragments(filter=filters):
        fragment.ensure_complete_metadata()
        groups = fragment.row_groups
        units = [[g] for g in groups] if split_row_groups else [groups]
        for unit in units:
            n = sum(g.num_rows for g in unit)
            if n or filters is not None:
                blocks.append((fragment.path, [g.id for g in unit],
                               fragment.partition_expression, n))
    if not blocks:
        raise ValueError(f"The Parquet dataset at {path!r} has no rows"
                         + (" that pass the filters." if filters is not None else
                            " (no data files, or only empty ones; names starting with '_' or "
                            "'.' such as _SUCCESS are not data)."))
    return dataset, features, filters, _label_dtype(kind, missing_label), blocks


def read_parquet(path, label, features=None, *, filters=None, missing_label="raise",
                 split_row_groups=True, filesystem=None):
    """Read features and labels from Parquet as dask arrays with known chunks.

    Parameters
    ----------
    path : str or path-like
        A Parquet file, or a directory of them -- also a Spark-written one:
        ``_SUCCESS`` and other files starting with ``_`` or ``.`` are skipped,
        hive directories ``key=value/`` become columns named ``key``, and
        ``key=__HIVE_DEFAULT_PARTITION__`` comes back as a missing value.
    label : str
        Name of the label column (may be a partition column).  Integer,
        float, boolean, string and categorical (dictionary) labels are
        accepted; string and categorical labels come back as an object
        array of ``str``.
    features : list of str, default=None
        Feature columns in this order.  ``None`` takes every column but the
        label, in the dataset's column order (partition columns last).  They
        must be numeric or boolean; nulls become NaN (``fit`` then asks for
        imputation).
    filters : pyarrow.compute.Expression or list of tuples, default=None
        Row filter, as ``pyarrow.parquet.read_table``'s ``filters`` (DNF
        tuples such as ``[("part", "==", "a")]``).  Partition filters skip
        whole directories.
    missing_label : {"raise", "drop", "keep"}, default="raise"
        Rows whose label is missing: ``"raise"`` a ValueError when the block
        is read, ``"drop"`` them, or ``"keep"`` them as ``None`` (string
        labels) or NaN (numeric labels; integer labels then come back as
        float64).
    split_row_groups : bool, default=True
        One block per row group (``True``) or per file (``False``).
    filesystem : pyarrow.fs.FileSystem, default=None
        For remote storage; ``None`` infers it from ``path`` (``s3://``, ...).

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features), float64
        One row block per row group, sizes known.
    y : dask.array.Array of shape (n_samples,)
        Same row blocks as ``X``, computed by the same tasks.

    Notes
    -----
    Without ``filters`` and with ``missing_label`` other than ``"drop"``
    nothing is read before ``fit``: the chunk sizes come from the Parquet
    footers.  Otherwise the blocks are read once to count their rows and are
    persisted (in cluster memory under an active ``distributed.Client``).
    Every worker must reach ``path`` (a shared or remote filesystem).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from dmargin import read_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "train.parquet")
    >>> pd.DataFrame({"a": [0.1, 0.9, 0.2], "b": [1, 2, 3],
    ...               "y": ["no", "yes", "no"]}).to_parquet(path)
    >>> X, y = read_parquet(path, label="y")
    >>> X.shape, X.chunks[0], y.compute().tolist()
    ((3, 2), (3,), ['no', 'yes', 'no'])
    """
    import dask
    import dask.array as da
    from dask.base import tokenize

    dataset, features, filters, y_dtype, blocks = _plan(
        path, label, features, filters, missing_label, split_row_groups, filesystem)
    schema = dataset.schema
    token = tokenize(str(path), [(p, g, str(e)) for p, g, e, _ in blocks], str(schema),
                     str(filters), features, label, missing_label)
    reads = [
        dask.delayed(_read_block, pure=True, nout=2)(
            p, g, dataset.filesystem, schema, e, filters, features, label, y_dtype,
            missing_label, dask_key_name=f"dmargin-read-parquet-{token}-{i}")
        for i, (p, g, e, _) in enumerate(blocks)
    ]
    lengths = [n for *_, n in blocks]
    if filters is not None or missing_label == "drop":
        reads = dask.persist(*reads)
        lengths = dask.compute(*[dask.delayed(len)(r[1]) for r in reads])
        kept = [i for i, n in enumerate(lengths) if n]
        if not kept:
            raise ValueError(f"The Parquet dataset at {path!r} has no rows left after "
                             "filtering and dropping rows with missing labels.")
        reads, lengths = [reads[i] for i in kept], [lengths[i] for i in kept]
    a = len(features)
    X = da.concatenate([da.from_delayed(r[0], shape=(n, a), dtype=np.float64)
                        for r, n in zip(reads, lengths)])
    y = da.concatenate([da.from_delayed(r[1], shape=(n,), dtype=y_dtype)
                        for r, n in zip(reads, lengths)])
    return X, y


def iter_parquet(path, label, features=None, *, filters=None, batch_rows=None,
                 missing_label="raise", filesystem=None):
    """Iterate over a Parquet dataset as ``(X, y)`` numpy chunks, one read at a time.

    For streaming a dataset larger than memory through
    ``OnlineIRelief.partial_fit``: only the row group being read (and the
    rows of an unfinished ``batch_rows`` chunk) are held.  The dataset, the
    column checks and the block reader are those of :func:`read_parquet`, so
    the rows come in the same order and with the same values and label
    types as ``read_parquet(...)[0].compute()``.  Filtering and dropping
    rows cost nothing extra here: each row group is read once, as it is
    yielded.

    Parameters
    ----------
    path, label, features, filters, missing_label, filesystem
        As in :func:`read_parquet`.
    batch_rows : int, default=None
        Rows per chunk: ``None`` yields one chunk per row group (row groups
        left empty by ``filters`` or dropped labels are skipped); an int
        regroups the rows into chunks of exactly that many rows (the last
        one may be shorter).

    Yields
    ------
    X : ndarray of shape (n_chunk, n_features), float64
    y : ndarray of shape (n_chunk,)

    Raises
    ------
    ValueError
        As :func:`read_parquet`, before anything is read; and, at the end,
        when no row passed ``filters`` and ``missing_label``.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from dmargin._parquet import iter_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "train.parquet")
    >>> pd.DataFrame({"a": [0.1, 0.9, 0.2], "y": [0, 1, 0]}).to_parquet(path)
    >>> [(X.shape, y.tolist()) for X, y in iter_parquet(path, "y", batch_rows=2)]
    [((2, 1), [0, 1]), ((1, 1), [0])]
    >>> [y.tolist() for _, y in iter_parquet(path, "y", filters=[("a", "<", 0.5)])]
    [[0, 0]]
    """
    if batch_rows is not None and (isinstance(batch_rows, bool) or not
                                   isinstance(batch_rows, (int, np.integer)) or batch_rows < 1):
        raise ValueError(f"batch_rows must be a positive integer or None; got {batch_rows!r}.")
    # Checked here, when iter_parquet is called, not at the first next().
    plan = _plan(path, label, features, filters, missing_label, True, filesystem)
    return _iter_blocks(path, label, plan, missing_label, batch_rows)


def _iter_blocks(path, label, plan, missing_label, batch_rows):
    dataset, features, filters, y_dtype, blocks = plan

    def reads():
        for p, g, e, _ in blocks:
            xb, yb = _read_block(p, g, dataset.filesystem, dataset.schema, e, filters,
                                 features, label, y_dtype, missing_label)
            if len(yb):
                yield xb, yb

    held, n_held, n_seen = [], 0, 0
    for xb, yb in reads():
        n_seen += len(yb)
        if batch_rows is None:
            yield xb, yb
            continue
        held.append((xb, yb))
        n_held += xb.shape[0]
        if n_held < batch_rows:
            continue
        xs = np.concatenate([h[0] for h in held]) if len(held) > 1 else xb
        ys = np.concatenate([h[1] for h in held]) if len(held) > 1 else yb
        cut = n_held - n_held % batch_rows
        for s in range(0, cut, batch_rows):
            yield xs[s:s + batch_rows], ys[s:s + batch_rows]
        held, n_held = [(xs[cut:], ys[cut:])], n_held - cut
    if n_held:
        yield np.concatenate([h[0] for h in held]), np.concatenate([h[1] for h in held])
    if not n_seen:
        raise ValueError(f"The Parquet dataset at {path!r} has no rows left after "
                         "filtering and dropping rows with missing labels.")
