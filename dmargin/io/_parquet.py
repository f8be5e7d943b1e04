"""Parquet in: a file, a directory, or a Spark-written hive-partitioned directory.

The dataset is found, its columns checked across files and its row groups
listed from the footers by :mod:`dmargin.io._parquet_plan` (Spark's naming
rules, symbolic links kept inside the directory, no data read).  Only when
rows are filtered (``filters`` or ``missing_label="drop"``) are the blocks
read once to count them, and kept in memory.

Reading.  Every row group becomes one dask task -- several, each reading only
its slice of rows, when its decoded block would exceed ``chunk_bytes`` --
that returns *both* the feature block and the label block.  X and y are two
views of those same tasks, so their rows cannot come apart (selecting X and
y as two projections of a dask DataFrame can let the optimiser partition
them differently, dask/dask#12411).  A task streams its rows from the file
in batches of at most 65536 rows (``_READ_ROWS``) without pre-buffering whole column
chunks, so it holds its block plus one read batch.  :func:`iter_parquet`
uses the same plan and the same batch reader.

``dask.dataframe.read_parquet`` is not used: it infers partition types file by
file and fails on a ``__HIVE_DEFAULT_PARTITION__`` directory ("No non-null
segments were available for field ...").
"""

from __future__ import annotations

from operator import getitem

import numpy as np

from .._dask import compute
from ._parquet_plan import file_versions, one_line, plan_blocks, plan_dataset

# ---------------------------------------------------------------------------
# The block reader
# ---------------------------------------------------------------------------


def _decode(column):
    """A ChunkedArray with dictionary chunks as plain values."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        return pa.chunked_array(
            [c.dictionary_decode() for c in column.chunks], type=column.type.value_type
        )
    return column


def _slices(parquet_file, group, start, stop, columns, read_rows):
    """Tables of rows ``[start, stop)`` of one row group, at most ``read_rows`` at a time.

    Parquet cannot seek to a row: the rows before ``start`` are decoded and
    dropped batch by batch, so memory stays one batch.
    """
    import pyarrow as pa

    pos = 0
    for batch in parquet_file.iter_batches(
        batch_size=read_rows, row_groups=[group], columns=columns
    ):
        end = pos + batch.num_rows
        if end > start:
            lo, hi = max(start - pos, 0), min(stop, end) - pos
            yield pa.Table.from_batches([batch.slice(lo, hi - lo)])
        pos = end
        if pos >= stop:
            break


def _with_partition(table, keys, partition):
    """Add the partition columns a read needs, constant over a file."""
    import pyarrow as pa

    for field in partition:
        if field.name not in table.column_names:
            value = keys.get(field.name)
            table = table.append_column(
                field,
                pa.nulls(table.num_rows, field.type)
                if value is None
                else pa.repeat(pa.scalar(value, field.type), table.num_rows),
            )
    return table


def _arrays(table, spec, where):
    """``(X float64 (n, A), y (n,))`` of one table, rows with a missing label handled."""
    import pyarrow as pa
    import pyarrow.compute as pc

    labels = _decode(table.column(spec.label))
    if labels.null_count:
        if spec.missing_label == "raise":
            raise ValueError(
                f"{where}: {labels.null_count} rows have no value in the label column "
                f"{spec.label!r}. Pass missing_label='drop' to read_parquet to skip them, or "
                "missing_label='keep' to get them as missing values."
            )
        if spec.missing_label == "drop":
            table = table.filter(pc.is_valid(labels))
            labels = _decode(table.column(spec.label))
    X = np.empty((table.num_rows, len(spec.features)), dtype=np.float64)
    for j, name in enumerate(spec.features):
        col = _decode(table.column(name))
        # Nulls become NaN (fit then asks for imputation); int64 beyond 2**53 rounds to
        # the nearest float64 as pandas does, where pyarrow's safe cast refuses.
        X[:, j] = pc.cast(col, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    if spec.y_dtype.kind == "O":
        y = np.empty(table.num_rows, dtype=object)
        y[:] = labels.to_pylist()  # Python str / None, as pandas' object columns
    elif spec.y_dtype == np.float64:
        y = pc.cast(labels, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    else:
        y = labels.to_numpy(zero_copy_only=False).astype(spec.y_dtype)
    return X, y


def _batches(spec, path, pieces, partition_expression):
    """Yield ``(X, y)`` for rows ``[start, stop)`` of each ``(group, start, stop)`` of one
    file, one read batch at a time, filtered.

    Raises
    ------
    ValueError
        Any pyarrow or OS error while reading (a corrupt page, a truncated or
        vanished file), as ``"<path>, row group <g>: ..."`` with the fix; the
        original error is its ``__cause__``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = {}
    if len(spec.partition):
        # pyarrow.dataset takes a worker a fifth of a second to import: only for partitions.
        import pyarrow.dataset as ds

        keys = ds.get_partition_keys(partition_expression)
    group = pieces[0][0]
    try:
        with spec.filesystem.open_input_file(path) as source:
            # pre_buffer would read whole column chunks (a row group) before decoding.
            parquet_file = pq.ParquetFile(source, pre_buffer=False, buffer_size=spec.buffer_bytes)
            have = set(parquet_file.schema_arrow.names)
            columns = [c for c in spec.columns if c in have]
            for group, start, stop in pieces:
                for table in _slices(parquet_file, group, start, stop, columns, spec.read_rows):
                    table = _with_partition(table, keys, spec.partition)
                    if spec.filter is not None:
                        table = table.filter(spec.filter)
                    yield _arrays(table, spec, f"{path}, row group {group}")
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(
            f"{path}, row group {group}: could not be read ({type(exc).__name__}: "
            f"{one_line(exc)}). "
            "Re-write or remove this file (if it is on remote storage, check that every "
            "worker can read it)."
        ) from exc


def _read_block(spec, path, pieces, partition_expression, n_rows):
    """One dask block: ``(X float64 (n, A), y (n,))``, read into arrays sized by the footer."""
    X = np.empty((n_rows, len(spec.features)), dtype=np.float64)
    y = np.empty(n_rows, dtype=spec.y_dtype)
    k = 0
    for xb, yb in _batches(spec, path, pieces, partition_expression):
        X[k : k + len(yb)], y[k : k + len(yb)] = xb, yb
        k += len(yb)
    if k < n_rows:  # rows filtered out
        X, y = X[:k].copy(), y[:k].copy()
    return X, y


def _view(reads, lengths, item, tail, dtype, prefix):
    """A dask array whose block ``i`` is item ``item`` of read task ``i``.

    One ``getitem`` task a block, straight on the read: ``da.from_delayed`` and
    ``da.concatenate`` would add two more a block to each of X and y (7 tasks a
    block for both, against 3), which a cluster schedules one by one in every
    pass over the rows.
    """
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    name = prefix + tokenize([r.key for r in reads], item)
    zeros = (0,) * len(tail)
    layer = {(name, i, *zeros): (getitem, r.key, item) for i, r in enumerate(reads)}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=reads)
    chunks = (tuple(int(n) for n in lengths), *((t,) for t in tail))
    return da.Array(graph, name, chunks, dtype=dtype)


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------


def read_parquet(
    path,
    label,
    features=None,
    *,
    exclude=None,
    filters=None,
    missing_label="raise",
    split_row_groups=True,
    filesystem=None,
    chunk_bytes=None,
    partition_features=False,
    as_frame=False,
):
    """Read features and labels from Parquet as dask arrays with known chunks.

    Parameters
    ----------
    path : str or path-like
        A Parquet file, or a directory of them -- also a Spark-written one:
        ``_SUCCESS`` and other names starting with ``_`` or ``.`` (``.crc``
        files, ``_temporary/``) are skipped, hive directories ``key=value/``
        become columns named ``key``, and ``key=__HIVE_DEFAULT_PARTITION__``
        comes back as a missing value.  In a local directory a symbolic link
        is followed only if its target is inside the directory and not
        reached another way; a link leaving the directory, a link loop, or
        a file reached twice is a ValueError naming the link.
    label : str
        Name of the label column (may be a partition column).  Integer,
        float, boolean, string and categorical (dictionary) labels are
        accepted; string and categorical labels come back as an object
        array of ``str``.
    features : list of str, default=None
        Feature columns in this order.  ``None`` takes every column but the
        label and the hive partition columns, in the first file's column
        order; every file must then have the same columns.  They must be numeric or
        boolean; nulls become NaN (``fit`` then asks for imputation) and
        int64 values beyond 2**53 round to the nearest float64, as pandas.
    exclude : str or list of str, default=None
        With ``features=None``: columns that are not features, left out of
        the default -- a row id, a timestamp, a second target.  An integer
        id column is otherwise read as a feature like any other.  Each name
        must be a column of the dataset (a ValueError lists the columns);
        excluded columns need not be in every file.  Not with ``features``.
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
        One block per row group (``True``) or per file (``False``; a file
        larger than ``chunk_bytes`` is still split by row group).
    filesystem : pyarrow.fs.FileSystem, default=None
        For remote storage; ``None`` infers it from ``path`` (``s3://``, ...).
    chunk_bytes : int, default=None
        Most bytes of one decoded block (rows x (features + 1) x 8); ``None``
        is 64 MiB.  A larger row group becomes several blocks of equal rows,
        each task reading only its slice.
    partition_features : bool, default=False
        With ``features=None``, also use the numeric hive partition columns
        (``year=2024/``) as features.  A partition key says where a row was
        written, rarely what was measured, so by default it is left out;
        naming it in ``features`` uses it too.
    as_frame : bool, default=False
        Return a dask DataFrame (columns named as in the files) and a dask
        Series (named ``label``) over the same tasks, instead of arrays: the
        feature names then reach every fitted estimator
        (``feature_names_in_``, ``get_feature_names_out``, ``interactions_``)
        on any scheduler.  A fit persists such a frame once and counts its
        rows on the persisted blocks; for a stream larger than the cluster's
        memory (``OnlineIRelief`` with ``reference_size``) keep the arrays.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features), float64
        One row block per row group (or slice of one), sizes known; a dask
        DataFrame with ``as_frame=True``.  The array carries the schema's
        column names as ``X.feature_names``: an estimator fitted on it
        reports them (``feature_names_in_``, ``get_feature_names_out``,
        ``interactions_``) as it does for a DataFrame.  An array made from it
        (a slice, ``rechunk``, ``persist``) is a new array without them.
    y : dask.array.Array of shape (n_samples,)
        Same row blocks as ``X``, computed by the same tasks; a dask Series
        with ``as_frame=True``.

    Raises
    ------
    ValueError
        When planning: a column missing from some file or holding strings in
        one file and numbers in another (naming both files and the column),
        a file whose footer cannot be read, a symbolic link as above.  When
        a block is computed: any read error (corrupt page, truncated or
        vanished file), as ``"<file>, row group <g>: could not be read
        (...). Re-write or remove this file ..."`` with pyarrow's error as
        ``__cause__``; a missing label with ``missing_label="raise"``.

    Notes
    -----
    Without ``filters`` and with ``missing_label`` other than ``"drop"``
    nothing is read before ``fit``: the chunk sizes come from the Parquet
    footers.  Otherwise the blocks are read once to count their rows and are
    persisted (in cluster memory under an active ``distributed.Client``).
    Every worker must reach ``path`` (a shared or remote filesystem).  A
    task holds its block plus one read batch of at most 65536 rows; the
    slices of an oversize row group each decode the rows before their start
    again (Parquet cannot seek to a row), which costs time, not memory.

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
    >>> read_parquet(path, label="y", chunk_bytes=48)[0].chunks[0]  # 2 rows of 3 x 8 bytes
    (1, 2)
    >>> read_parquet(path, label="y", exclude=["b"])[0].feature_names.tolist()
    ['a']
    """
    import dask
    from dask.base import tokenize

    spec, groups = plan_dataset(
        path,
        label,
        features,
        filters,
        missing_label,
        filesystem,
        chunk_bytes,
        partition_features,
        exclude,
    )
    blocks = plan_blocks(groups, spec.chunk_rows, split_row_groups)
    versions = file_versions(spec, [p for p, *_ in blocks])
    # A block's key is a hash of everything its task reads, as dask's own.
    reads = [
        dask.delayed(_read_block, pure=True, nout=2)(
            spec,
            p,
            s,
            e,
            n,
            dask_key_name="dmargin-read-parquet-"
            + tokenize(_read_block, spec, p, s, str(e), n, versions.get(p)),
        )
        for p, s, e, n in blocks
    ]
    lengths = [n for *_, n in blocks]
    if filters is not None or missing_label == "drop":
        reads = dask.persist(*reads, optimize_graph=False)  # see _compat.compute
        lengths = compute(
            *[dask.delayed(len)(r[1]) for r in reads], what="the row counts after filtering"
        )
        kept = [i for i, n in enumerate(lengths) if n]
        if not kept:
            raise ValueError(
                f"The Parquet dataset at {path!r} has no rows left after "
                "filtering and dropping rows with missing labels."
            )
        reads, lengths = [reads[i] for i in kept], [lengths[i] for i in kept]
    X = _view(reads, lengths, 0, (len(spec.features),), np.float64, "dmargin-parquet-X-")
    y = _view(reads, lengths, 1, (), spec.y_dtype, "dmargin-parquet-y-")
    if as_frame:
        import dask.dataframe as dd

        return (
            dd.from_dask_array(X, columns=list(spec.features)),
            dd.from_dask_array(y, columns=label),
        )
    # The schema's names travel with the array to the estimators fitted on it.
    X.feature_names = np.asarray(spec.features, dtype=object)
    return X, y


def parquet_features(
    path, label, features=None, *, exclude=(), partition_features=False, filesystem=None
):
    """The feature columns :func:`read_parquet` reads, in its order, checked.

    Parameters
    ----------
    path, label, features, partition_features, filesystem
        As in :func:`read_parquet`.
    exclude : sequence of str, default=()
        With ``features=None``: columns to leave out of the default
        (identifiers, timestamps); each must be a column of the dataset.

    Returns
    -------
    names : list of str
        Pass them as ``features=`` to read :func:`read_parquet` in this order.
    """
    spec, _ = plan_dataset(
        path, label, features, None, "keep", filesystem, None, partition_features, exclude
    )
    return list(spec.features)


def iter_parquet(
    path,
    label,
    features=None,
    *,
    exclude=None,
    filters=None,
    batch_rows=None,
    missing_label="raise",
    filesystem=None,
    chunk_bytes=None,
    partition_features=False,
):
    """Iterate over a Parquet dataset as ``(X, y)`` numpy chunks, one read at a time.

    For streaming a dataset larger than memory through
    ``OnlineIRelief.partial_fit``: only the chunk being filled and one read
    batch (at most 65536 rows) are held, whatever the row group size.  The
    dataset, the column checks and the batch reader are those of
    :func:`read_parquet`, so the rows come in the same order and with the
    same values and label types as ``read_parquet(...)[0].compute()``.
    Filtering and dropping rows cost nothing extra here: each row group is
    read once, as it is yielded.

    Parameters
    ----------
    path, label, features, exclude, filters, missing_label, filesystem, partition_features
        As in :func:`read_parquet`.
    batch_rows : int, default=None
        Rows per chunk: ``None`` yields one chunk per row group (a row group
        larger than ``chunk_bytes`` in chunks of at most that size; row
        groups left empty by ``filters`` or dropped labels are skipped); an
        int regroups the rows into chunks of exactly that many rows (the
        last one may be shorter).
    chunk_bytes : int, default=None
        As in :func:`read_parquet` (64 MiB); bounds the chunks when
        ``batch_rows`` is None.

    Yields
    ------
    X : ndarray of shape (n_chunk, n_features), float64
    y : ndarray of shape (n_chunk,)

    Raises
    ------
    ValueError
        As :func:`read_parquet`, before anything is read; while reading, a
        read error naming the file and row group; and, at the end, when no
        row passed ``filters`` and ``missing_label``.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from dmargin.io._parquet import iter_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "train.parquet")
    >>> pd.DataFrame({"a": [0.1, 0.9, 0.2], "y": [0, 1, 0]}).to_parquet(path)
    >>> [(X.shape, y.tolist()) for X, y in iter_parquet(path, "y", batch_rows=2)]
    [((2, 1), [0, 1]), ((1, 1), [0])]
    >>> [y.tolist() for _, y in iter_parquet(path, "y", filters=[("a", "<", 0.5)])]
    [[0, 0]]
    """
    if batch_rows is not None and (
        isinstance(batch_rows, bool)
        or not isinstance(batch_rows, (int, np.integer))
        or batch_rows < 1
    ):
        raise ValueError(f"batch_rows must be a positive integer or None; got {batch_rows!r}.")
    # Checked here, when iter_parquet is called, not at the first next().
    spec, groups = plan_dataset(
        path,
        label,
        features,
        filters,
        missing_label,
        filesystem,
        chunk_bytes,
        partition_features,
        exclude,
    )
    return _iter_blocks(path, spec, groups, batch_rows)


def _iter_blocks(path, spec, groups, batch_rows):
    """Stream every row group once, copying its read batches into chunks of ``size`` rows.

    A chunk is allocated for at most the rows still to come per the footers
    (exactly those for unfiltered data), and handed out as it fills.
    """
    size = batch_rows or spec.chunk_rows
    rest = sum(n for *_, n in groups)  # rows of the row groups not yet started
    X = y = None
    k = cap = n_seen = 0

    def chunk():
        return (X, y) if k == cap else (X[:k].copy(), y[:k].copy())

    for p, g, e, n in groups:
        rest -= n
        got = 0  # rows of this group received: n - got bounds the rows it still holds
        for xb, yb in _batches(spec, p, [(g, 0, n)], e):
            i = 0
            while i < len(yb):
                if X is None:
                    cap = min(size, n - got + (rest if batch_rows else 0))
                    X = np.empty((cap, len(spec.features)), dtype=np.float64)
                    y = np.empty(cap, dtype=spec.y_dtype)
                take = min(cap - k, len(yb) - i)
                X[k : k + take], y[k : k + take] = xb[i : i + take], yb[i : i + take]
                k, i, got = k + take, i + take, got + take
                if k == cap:
                    yield chunk()
                    X = y = None
                    k = 0
        n_seen += got
        if k and batch_rows is None:  # one chunk per row group
            yield chunk()
            X = y = None
            k = 0
    if k:
        yield chunk()
    if not n_seen:
        raise ValueError(
            f"The Parquet dataset at {path!r} has no rows left after "
            "filtering and dropping rows with missing labels."
        )
