"""Parquet in: a file, a directory, or a Spark-written hive-partitioned directory.

Discovery.  A local directory is walked here, not by pyarrow, so that a
symbolic link can neither leave the directory nor reach a file twice
(pyarrow follows a link loop until the path is too long, reading the same
rows dozens of times -- or, with two loops, for ever).  The rules are Spark's:
names starting with ``_`` or ``.`` are not data (``_SUCCESS``, ``.crc``
checksums, ``_temporary/``), hive
``key=value`` directories become columns and ``__HIVE_DEFAULT_PARTITION__`` a
missing value.  The explicit file list then goes to :mod:`pyarrow.dataset`.
Remote paths (``s3://...`` or ``filesystem=``) are listed by pyarrow with the
same name rules; object stores have no links.

Planning.  Every file's footer is read once (a small thread pool): it gives
the columns, checked across files so that a column missing from a file, or
a string in one file and a number in another, is an error naming both
files, never NaN or a dropped column; and it gives the row counts, so the
arrays have known chunk sizes without reading any data.  Only when rows are
filtered (``filters`` or ``missing_label="drop"``) are the blocks read once
to count them, and kept in memory.

Reading.  Every row group becomes one dask task -- several, each reading only
its slice of rows, when its decoded block would exceed ``chunk_bytes`` --
that returns *both* the feature block and the label block.  X and y are two
views of those same tasks, so their rows cannot come apart (selecting X and
y as two projections of a dask DataFrame can let the optimiser partition
them differently, dask/dask#12411).  A task streams its rows from the file
in batches of at most ``_READ_ROWS`` rows without pre-buffering whole column
chunks, so it holds its block plus one read batch.  :func:`iter_parquet`
uses the same plan and the same batch reader.

``dask.dataframe.read_parquet`` is not used: it infers partition types file by
file and fails on a ``__HIVE_DEFAULT_PARTITION__`` directory ("No non-null
segments were available for field ...").
"""

from __future__ import annotations

import os

import numpy as np

from ._compat import compute

_MISSING = ("raise", "drop", "keep")
#: Default most bytes of one decoded block, float64 features plus label.
_CHUNK_BYTES = 64 * 2**20
#: Most rows, and about the most bytes (as float64), decoded at once.
_READ_ROWS = 65536
_READ_BYTES = 2 * 2**20
#: Read buffers, split over the columns read (64 KiB to 1 MiB each): without
#: them pyarrow loads whole column chunks, that is a whole row group.
_BUFFER_BYTES = 16 * 2**20
#: Footers read concurrently while planning (they are small, latency-bound reads).
_FOOTER_THREADS = 8
_NOT_DATA = ("_", ".")


# ---------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------


def _one_line(exc):
    """pyarrow's message on one line (it may end with a newline and a detail)."""
    return " ".join(str(exc).split()).rstrip(".")


def _unreadable(path, exc):
    return (f"{path}: not a readable Parquet file ({_one_line(exc)}). Re-write or remove "
            "this file (names starting with '_' or '.' are skipped as not data).")


def _dataset(source, first, **kw):
    """``pyarrow.dataset.dataset`` (which reads the first file's footer for the schema),
    its errors naming that file."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        return ds.dataset(source, format="parquet", **kw)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(_unreadable(first, exc)) from exc


def _inside(path, folder):
    return os.path.commonpath([path, folder]) == folder


def _check_entry(entry, real, real_folder, real_root, root, seen):
    """Refuse an entry whose real path leaves ``root``, is missing, or was reached before."""
    if entry.is_symlink():
        if not os.path.exists(real):
            raise ValueError(
                f"{entry.path} is a symbolic link to {real}, which does not exist. Remove the "
                "link, or point it at a Parquet file.")
        if not _inside(real, real_root):
            raise ValueError(
                f"{entry.path} is a symbolic link to {real}, outside the directory {root} being "
                "read. Links are followed only within that directory, so that a link cannot pull "
                f"in other data or loop: pass {real} itself, or copy the data into {root}.")
        if _inside(real_folder, real):
            raise ValueError(
                f"{entry.path} is a symbolic link to {real}, a directory that contains the link: "
                "a loop, which would read the same files again at every turn. Remove the link.")
    if real in seen:
        raise ValueError(
            f"{entry.path} and {seen[real]} are the same file or directory ({real}), reached "
            "twice through a symbolic link: reading both would count its rows twice (or loop "
            "for ever). Remove the link.")


def _data_files(root):
    """Data files under the local directory ``root``, sorted by path.

    Names starting with ``_`` or ``.`` are skipped.  A symbolic link is
    followed only when its real path is inside ``root`` and is not reached
    another way (ValueError otherwise, naming the link); a pipe, socket or
    device is an error rather than a read that may never end.
    """
    real_root = os.path.realpath(root)
    seen = {real_root: root}
    files, todo = [], [(root, real_root)]
    while todo:
        folder, real_folder = todo.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if entry.name.startswith(_NOT_DATA):
                continue
            real = (os.path.realpath(entry.path) if entry.is_symlink()
                    else os.path.join(real_folder, entry.name))
            _check_entry(entry, real, real_folder, real_root, root, seen)
            seen[real] = entry.path
            if entry.is_dir():
                todo.append((entry.path, real))
            elif entry.is_file():
                files.append(entry.path)
            else:
                raise ValueError(f"{entry.path} is neither a regular file nor a directory (a "
                                 f"pipe, socket or device); remove it from {root}.")
    return sorted(files)


def _discover(path, filesystem):
    """The :class:`pyarrow.dataset.Dataset` of ``path``: local directories walked by
    :func:`_data_files`, remote paths listed by pyarrow.  Its schema holds the
    first file's columns, then the partition columns."""
    import pyarrow.fs

    if filesystem is None and isinstance(path, (str, os.PathLike)) and "://" not in str(path):
        path = os.path.abspath(os.fspath(path))  # workers may run in another directory
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"Parquet path {path!r} does not exist. Check the path (relative paths are "
                "resolved against the current directory of the client process).")
        local = pyarrow.fs.LocalFileSystem()
        if os.path.isdir(path):
            files = _data_files(path)
            return _dataset(files, files[0] if files else path, partitioning="hive",
                            partition_base_dir=path, filesystem=local)
        if not os.path.isfile(path):
            raise ValueError(f"Parquet path {path!r} is neither a regular file nor a "
                             "directory (a pipe, socket or device).")
        return _dataset(path, path, filesystem=local)
    try:
        return _dataset(path, f"a file of {path}", partitioning="hive", filesystem=filesystem)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"Parquet path {path!r} does not exist ({e}). Check the "
                                "path and the filesystem / storage credentials.") from e


# ---------------------------------------------------------------------------
# Column checks across files
# ---------------------------------------------------------------------------


def _value_type(arrow_type):
    import pyarrow as pa

    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def _label_kind(arrow_type):
    """``"int"``, ``"float"``, ``"bool"`` or ``"str"`` for a label column's arrow type."""
    import pyarrow as pa

    t = _value_type(arrow_type)
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

    t = _value_type(arrow_type)
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t))


def _type_class(arrow_type, is_label):
    """What must agree across files: numbers (any width) / strings / ...; None for an
    all-null column, which agrees with anything."""
    import pyarrow as pa

    if pa.types.is_null(arrow_type):
        return None
    kind = _label_kind(arrow_type)
    if is_label and kind in ("int", "float"):
        return "number"  # an int label in one file, float in another: read as float
    if is_label and kind is not None:
        return kind
    if _is_numeric(arrow_type):
        return "number"
    return "string" if kind == "str" else str(_value_type(arrow_type))


def _footers(fragments):
    """``(physical schema, row groups)`` of every fragment, one footer read each."""
    import pyarrow as pa
    from concurrent.futures import ThreadPoolExecutor

    def one(fragment):
        try:
            fragment.ensure_complete_metadata()
            return fragment.physical_schema, fragment.row_groups
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(
                _unreadable(fragment.path, exc)) from exc

    if len(fragments) <= 1:
        return [one(f) for f in fragments]
    with ThreadPoolExecutor(min(_FOOTER_THREADS, len(fragments))) as pool:
        return list(pool.map(one, fragments))


def _partition_schema(dataset, fragments):
    """The hive partition columns of ``fragments`` and their inferred types.

    Taken from the fragments' partition expressions (a null partition is a
    key with value None): ``dataset.partitioning.schema`` can hold every
    column when no directory is ``key=value``.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    keys = set()
    for fragment in fragments:
        keys.update(ds.get_partition_keys(fragment.partition_expression))
    return pa.schema([f for f in dataset.schema if f.name in keys])


def _first_seen(paths, schemas, partition):
    """``{column: (path, type)}`` from the first file with a non-null type, in column order."""
    import pyarrow as pa

    first = {}
    for path, schema in zip(paths, schemas):
        for field in schema:
            if field.name in partition.names:
                continue
            seen = first.get(field.name)
            if seen is None or (pa.types.is_null(seen[1]) and not pa.types.is_null(field.type)):
                first[field.name] = (path, field.type)
    return first


def _check_files(paths, schemas, columns, first, label, features_given):
    """Every file has every column in ``columns``, with one kind of values."""
    for path, schema in zip(paths, schemas):
        names = set(schema.names)
        for c in columns:
            p0, t0 = first[c]
            if c not in names:
                if c == label:
                    fix = f"Rewrite {path} with the label column, or remove it from the directory."
                elif features_given:
                    fix = f"Pass features=[...] without {c!r}, or rewrite {path} with that column."
                else:
                    fix = (f"Pass features=[...] without {c!r} to leave it out, or rewrite "
                           f"{path} with that column.")
                raise ValueError(f"Column {c!r} is in {p0} but not in {path}. {fix}")
            t = schema.field(c).type
            k0, k = _type_class(t0, c == label), _type_class(t, c == label)
            if k is not None and k0 is not None and k != k0:
                raise ValueError(
                    f"Column {c!r} is {t0} in {p0} but {t} in {path}: a column must hold one "
                    f"kind of values in every file. Rewrite one of the two files with the "
                    f"other's type" + (" (or pass features=[...] without it)."
                                       if c != label else "."))


def _columns(dataset, footers, partition, label, features, partition_features=False,
             exclude=()):
    """Check the columns across files: ``(features, {column: arrow type}, label kind)``.

    Feature columns default to every column but the label and ``exclude``,
    in the first file's order; hive partition columns (last, as
    ``dataset.schema``) only with ``partition_features``.
    """
    import pyarrow as pa

    paths = [p for p, _ in footers]
    schemas = [s for _, s in footers] or [dataset.schema]
    paths = paths or ["the dataset"]
    first = _first_seen(paths, schemas, partition)
    types = {c: t for c, (_, t) in first.items()}
    types.update(zip(partition.names, partition.types))
    names = list(types)
    if label not in types:
        raise ValueError(f"Label column {label!r} is not in the Parquet dataset, whose columns "
                         f"are {names}. Pass label= one of them.")
    unknown = [c for c in exclude if c not in types]
    if unknown:
        raise ValueError(f"exclude= names columns {unknown} that are not in the Parquet "
                         f"dataset, whose columns are {names}.")
    # Excluded columns need not be in every file.
    features_given = features is not None or bool(exclude)
    if features is None:
        # A partition key (part=a/, date=2024-01-01/) says where Spark wrote a row,
        # not what was measured: a feature only when asked for.
        features = [n for n in names if n != label and n not in exclude
                    and (partition_features or n not in partition.names)]
    else:
        features = [str(f) for f in features]
        unknown = [f for f in features if f not in types]
        if unknown:
            raise ValueError(f"features= names columns {unknown} that are not in the Parquet "
                             f"dataset, whose columns are {names}.")
        if label in features:
            raise ValueError(f"The label column {label!r} is also listed in features; "
                             "remove it from features.")
    if not features:
        raise ValueError("No feature columns: the dataset has only the label column"
                         + (f" and the partition columns {partition.names} (pass "
                            "partition_features=True to use them)" if partition.names else "")
                         + ".")
    in_files = [c for c in features + [label] if c in first]
    _check_files(paths, schemas, in_files, first, label, features_given)
    kinds = {_label_kind(s.field(label).type) for s in schemas
             if label in s.names and not pa.types.is_null(s.field(label).type)}
    kinds = kinds or {_label_kind(types[label])}
    kind = "float" if kinds == {"int", "float"} else kinds.pop()
    if kind is None:
        raise ValueError(f"Label column {label!r} has type {types[label]}; use "
                         "integer, string, boolean or categorical class labels.")
    bad = [f for f in features if not _is_numeric(types[f])]
    if bad:
        raise ValueError(
            f"Feature columns {bad} are not numeric "
            f"({', '.join(str(types[f]) for f in bad)}). Pass features=[...] "
            "without them, or encode them as numbers before writing the Parquet data.")
    return features, types, kind


def _filter_columns(filters, types):
    """Columns a filter reads, besides features and label.

    Expressions do not list their fields, so every column whose name appears
    in the filter's text is read (a superset costs a little memory, never a
    wrong row), after checking that the filter applies to those columns.
    """
    import pyarrow as pa

    text = str(filters)
    cols = [c for c in types if c in text]
    try:
        pa.schema([(c, types[c]) for c in cols]).empty_table().filter(filters)
    except (pa.ArrowException, TypeError) as exc:
        raise ValueError(f"filters={text} cannot be applied to the Parquet dataset ({exc}). "
                         f"Filters compare columns of the dataset, {list(types)}, with values "
                         "of their type.") from exc
    return cols


def _label_dtype(kind, missing_label):
    if kind == "str":
        return np.dtype(object)
    if kind == "float" or (kind == "int" and missing_label == "keep"):
        return np.dtype(np.float64)  # NaN marks a kept missing label
    if kind == "bool" and missing_label == "keep":
        return np.dtype(object)
    return np.dtype(np.int64) if kind == "int" else np.dtype(bool)


# ---------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------


class _Spec:
    """What a block reader needs besides the file and its rows (shared by all blocks)."""

    __slots__ = ("filesystem", "features", "label", "y_dtype", "missing_label", "filter",
                 "columns", "partition", "chunk_rows", "read_rows", "buffer_bytes")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)

    def __dask_tokenize__(self):
        # Every field a reader uses; pyarrow's objects by their printed form, the
        # filesystem by its kind and root (its repr holds an address).
        fs = self.filesystem
        return tuple((k, (fs.type_name, getattr(fs, "base_path", None)) if k == "filesystem"
                      else getattr(self, k) if k in ("features", "columns")
                      else str(getattr(self, k))) for k in self.__slots__)


def _file_versions(spec, paths):
    """``(size, mtime_ns)`` of each file, so that a file re-written in place
    gets new task keys (``None`` where the filesystem does not say)."""
    import pyarrow as pa

    try:
        infos = spec.filesystem.get_file_info(sorted(set(paths)))
    except (pa.ArrowException, OSError):
        return {}
    return {i.path: (i.size, i.mtime_ns) for i in infos}


def _chunk_rows(chunk_bytes, n_features):
    if chunk_bytes is None:
        chunk_bytes = _CHUNK_BYTES
    if (isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, (int, np.integer))
            or chunk_bytes < 1):
        raise ValueError(f"chunk_bytes must be a positive integer (bytes) or None; "
                         f"got {chunk_bytes!r}.")
    return max(1, int(chunk_bytes) // (8 * (n_features + 1)))


def _plan(path, label, features, filters, missing_label, filesystem, chunk_bytes,
          partition_features=False, exclude=()):
    """Check the dataset and list its row groups: ``(spec, groups)``.

    ``groups`` holds ``(file path, row group id, partition expression, rows
    per the footer)`` for every non-empty row group in dataset order.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if missing_label not in _MISSING:
        raise ValueError(f"missing_label={missing_label!r} is not valid; it must be one of "
                         f"{', '.join(map(repr, _MISSING))}.")
    dataset = _discover(path, filesystem)
    if not dataset.files:
        raise ValueError(f"The Parquet dataset at {path!r} has no rows (no data files; names "
                         "starting with '_' or '.' such as _SUCCESS are not data).")
    if filters is not None and not hasattr(filters, "is_valid"):  # DNF list, not an Expression
        filters = pq.filters_to_expression(filters)
    try:  # partition filters skip whole files here
        fragments = list(dataset.get_fragments(filter=filters))
    except pa.ArrowException as exc:
        raise ValueError(f"filters={filters} cannot be applied to the Parquet dataset at "
                         f"{path!r} ({exc}).") from exc
    footers = _footers(fragments)
    partition = _partition_schema(dataset, fragments)
    features, types, kind = _columns(
        dataset, [(f.path, s) for f, (s, _) in zip(fragments, footers)], partition, label,
        features, partition_features, exclude)
    needed = features + [label]
    if filters is not None:
        needed += [c for c in _filter_columns(filters, types) if c not in needed]
    chunk_rows = _chunk_rows(chunk_bytes, len(features))
    spec = _Spec(filesystem=dataset.filesystem, features=features, label=label,
                 y_dtype=_label_dtype(kind, missing_label), missing_label=missing_label,
                 filter=filters, columns=[c for c in needed if c not in partition.names],
                 partition=pa.schema([partition.field(c) for c in needed
                                      if c in partition.names]),
                 chunk_rows=chunk_rows,
                 read_rows=min(_READ_ROWS, chunk_rows, _chunk_rows(_READ_BYTES, len(features))),
                 buffer_bytes=min(2**20, max(2**16, _BUFFER_BYTES // len(needed))))
    groups = [(f.path, g.id, f.partition_expression, g.num_rows)
              for f, (_, row_groups) in zip(fragments, footers) for g in row_groups
              if g.num_rows]
    if not groups:
        raise ValueError(f"The Parquet dataset at {path!r} has no rows"
                         + (" that pass the filters." if filters is not None else
                            " (no data files, or only empty ones; names starting with '_' or "
                            "'.' such as _SUCCESS are not data)."))
    return spec, groups


def _blocks(groups, chunk_rows, split_row_groups):
    """Dask blocks ``(path, [(group, start, stop), ...], partition expression, rows)``.

    One per row group, or per file (``split_row_groups=False``) when the file
    fits the budget; a row group of more than ``chunk_rows`` rows is cut
    into equal slices of at most ``chunk_rows``.
    """
    blocks = []
    if not split_row_groups:
        files = {}
        for p, g, e, n in groups:
            files.setdefault(p, [e, []])[1].append((g, n))
        for p, (e, gs) in files.items():
            total = sum(n for _, n in gs)
            if total <= chunk_rows:
                blocks.append((p, [(g, 0, n) for g, n in gs], e, total))
            else:
                blocks += _blocks([(p, g, e, n) for g, n in gs], chunk_rows, True)
        return blocks
    for p, g, e, n in groups:
        k = -(-n // chunk_rows)
        bounds = [n * i // k for i in range(k + 1)]
        blocks += [(p, [(g, a, b)], e, b - a) for a, b in zip(bounds[:-1], bounds[1:])]
    return blocks


# ---------------------------------------------------------------------------
# The block reader
# ---------------------------------------------------------------------------


def _decode(column):
    """A ChunkedArray with dictionary chunks as plain values."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        return pa.chunked_array([c.dictionary_decode() for c in column.chunks],
                                type=column.type.value_type)
    return column


def _slices(parquet_file, group, start, stop, columns, read_rows):
    """Tables of rows ``[start, stop)`` of one row group, at most ``read_rows`` at a time.

    Parquet cannot seek to a row: the rows before ``start`` are decoded and
    dropped batch by batch, so memory stays one batch.
    """
    import pyarrow as pa

    pos = 0
    for batch in parquet_file.iter_batches(batch_size=read_rows, row_groups=[group],
                                           columns=columns):
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
            table = table.append_column(field, pa.nulls(table.num_rows, field.type)
                                        if value is None else
                                        pa.repeat(pa.scalar(value, field.type), table.num_rows))
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
                "missing_label='keep' to get them as missing values.")
        if spec.missing_label == "drop":
            table = table.filter(pc.is_valid(labels))
            labels = _decode(table.column(spec.label))
    X = np.empty((table.num_rows, len(spec.features)), dtype=np.float64)
    for j, name in enumerate(spec.features):
        col = _decode(table.column(name))
        # Nulls become NaN (fit then asks for imputation); int64 beyond 2**53 rounds to
        # the nearest float64 as pandas does, where pyarrow's safe cast refuses.
        X[:, j] = pc.cast(col, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    if spec.y_dtype == object:
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
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    keys = ds.get_partition_keys(partition_expression) if len(spec.partition) else {}
    group = pieces[0][0]
    try:
        with spec.filesystem.open_input_file(path) as source:
            # pre_buffer would read whole column chunks (a row group) before decoding.
            parquet_file = pq.ParquetFile(source, pre_buffer=False,
                                           buffer_size=spec.buffer_bytes)
            have = set(parquet_file.schema_arrow.names)
            columns = [c for c in spec.columns if c in have]
            for group, start, stop in pieces:
                for table in _slices(parquet_file, group, start, stop, columns,
                                     spec.read_rows):
                    table = _with_partition(table, keys, spec.partition)
                    if spec.filter is not None:
                        table = table.filter(spec.filter)
                    yield _arrays(table, spec, f"{path}, row group {group}")
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(
            f"{path}, row group {group}: could not be read ({type(exc).__name__}: "
            f"{_one_line(exc)}). "
            "Re-write or remove this file (if it is on remote storage, check that every "
            "worker can read it).") from exc


def _read_block(spec, path, pieces, partition_expression, n_rows):
    """One dask block: ``(X float64 (n, A), y (n,))``, read into arrays sized by the footer."""
    X = np.empty((n_rows, len(spec.features)), dtype=np.float64)
    y = np.empty(n_rows, dtype=spec.y_dtype)
    k = 0
    for xb, yb in _batches(spec, path, pieces, partition_expression):
        X[k:k + len(yb)], y[k:k + len(yb)] = xb, yb
        k += len(yb)
    if k < n_rows:  # rows filtered out
        X, y = X[:k].copy(), y[:k].copy()
    return X, y


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------


def read_parquet(path, label, features=None, *, filters=None, missing_label="raise",
                 split_row_groups=True, filesystem=None, chunk_bytes=None,
                 partition_features=False, as_frame=False):
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
        DataFrame with ``as_frame=True``.
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
    """
    import dask
    import dask.array as da
    from dask.base import tokenize

    spec, groups = _plan(path, label, features, filters, missing_label, filesystem,
                         chunk_bytes, partition_features)
    blocks = _blocks(groups, spec.chunk_rows, split_row_groups)
    versions = _file_versions(spec, [p for p, *_ in blocks])
    # A block's key is a hash of everything its task reads, as dask's own.
    reads = [
        dask.delayed(_read_block, pure=True, nout=2)(
            spec, p, s, e, n, dask_key_name="dmargin-read-parquet-" + tokenize(
                _read_block, spec, p, s, str(e), n, versions.get(p)))
        for p, s, e, n in blocks
    ]
    lengths = [n for *_, n in blocks]
    if filters is not None or missing_label == "drop":
        reads = dask.persist(*reads, optimize_graph=False)  # see _compat.compute
        lengths = compute(*[dask.delayed(len)(r[1]) for r in reads],
                          what="the row counts after filtering")
        kept = [i for i, n in enumerate(lengths) if n]
        if not kept:
            raise ValueError(f"The Parquet dataset at {path!r} has no rows left after "
                             "filtering and dropping rows with missing labels.")
        reads, lengths = [reads[i] for i in kept], [lengths[i] for i in kept]
    a = len(spec.features)
    X = da.concatenate([da.from_delayed(r[0], shape=(n, a), dtype=np.float64)
                        for r, n in zip(reads, lengths)])
    y = da.concatenate([da.from_delayed(r[1], shape=(n,), dtype=spec.y_dtype)
                        for r, n in zip(reads, lengths)])
    if as_frame:
        import dask.dataframe as dd

        return (dd.from_dask_array(X, columns=list(spec.features)),
                dd.from_dask_array(y, columns=label))
    return X, y


def parquet_features(path, label, features=None, *, exclude=(), partition_features=False,
                     filesystem=None):
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
    spec, _ = _plan(path, label, features, None, "keep", filesystem, None, partition_features,
                    tuple(exclude))
    return list(spec.features)


def iter_parquet(path, label, features=None, *, filters=None, batch_rows=None,
                 missing_label="raise", filesystem=None, chunk_bytes=None,
                 partition_features=False):
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
    path, label, features, filters, missing_label, filesystem, partition_features
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
    spec, groups = _plan(path, label, features, filters, missing_label, filesystem,
                         chunk_bytes, partition_features)
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
                X[k:k + take], y[k:k + take] = xb[i:i + take], yb[i:i + take]
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
        raise ValueError(f"The Parquet dataset at {path!r} has no rows left after "
                         "filtering and dropping rows with missing labels.")
