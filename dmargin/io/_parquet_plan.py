"""What a Parquet dataset holds, and the blocks :mod:`dmargin.io._parquet` reads it in.

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
arrays have known chunk sizes without reading any data.  :func:`plan_dataset`
returns what every block reader needs (the columns, the label type, the
filter, the read sizes) and the non-empty row groups, which
:func:`plan_blocks` cuts into blocks.  No data is read here.
"""

from __future__ import annotations

import os

import numpy as np

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


def one_line(exc):
    """pyarrow's message on one line (it may end with a newline and a detail)."""
    return " ".join(str(exc).split()).rstrip(".")


def _unreadable(path, exc):
    return (
        f"{path}: not a readable Parquet file ({one_line(exc)}). Re-write or remove "
        "this file (names starting with '_' or '.' are skipped as not data)."
    )


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
                "link, or point it at a Parquet file."
            )
        if not _inside(real, real_root):
            raise ValueError(
                f"{entry.path} is a symbolic link to {real}, outside the directory {root} being "
                "read. Links are followed only within that directory, so that a link cannot pull "
                f"in other data or loop: pass {real} itself, or copy the data into {root}."
            )
        if _inside(real_folder, real):
            raise ValueError(
                f"{entry.path} is a symbolic link to {real}, a directory that contains the link: "
                "a loop, which would read the same files again at every turn. Remove the link."
            )
    if real in seen:
        raise ValueError(
            f"{entry.path} and {seen[real]} are the same file or directory ({real}), reached "
            "twice through a symbolic link: reading both would count its rows twice (or loop "
            "for ever). Remove the link."
        )


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
            real = (
                os.path.realpath(entry.path)
                if entry.is_symlink()
                else os.path.join(real_folder, entry.name)
            )
            _check_entry(entry, real, real_folder, real_root, root, seen)
            seen[real] = entry.path
            if entry.is_dir():
                todo.append((entry.path, real))
            elif entry.is_file():
                files.append(entry.path)
            else:
                raise ValueError(
                    f"{entry.path} is neither a regular file nor a directory (a "
                    f"pipe, socket or device); remove it from {root}."
                )
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
                "resolved against the current directory of the client process)."
            )
        local = pyarrow.fs.LocalFileSystem()
        if os.path.isdir(path):
            files = _data_files(path)
            return _dataset(
                files,
                files[0] if files else path,
                partitioning="hive",
                partition_base_dir=path,
                filesystem=local,
            )
        if not os.path.isfile(path):
            raise ValueError(
                f"Parquet path {path!r} is neither a regular file nor a "
                "directory (a pipe, socket or device)."
            )
        return _dataset(path, path, filesystem=local)
    try:
        return _dataset(path, f"a file of {path}", partitioning="hive", filesystem=filesystem)
    except FileNotFoundError as e:
        raise FileNotFoundError(
            f"Parquet path {path!r} does not exist ({e}). Check the "
            "path and the filesystem / storage credentials."
        ) from e


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
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_decimal(t)
    )


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
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    def one(fragment):
        try:
            fragment.ensure_complete_metadata()
            return fragment.physical_schema, fragment.row_groups
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(_unreadable(fragment.path, exc)) from exc

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
                    fix = (
                        f"Pass features=[...] without {c!r} to leave it out, or rewrite "
                        f"{path} with that column."
                    )
                raise ValueError(f"Column {c!r} is in {p0} but not in {path}. {fix}")
            t = schema.field(c).type
            k0, k = _type_class(t0, c == label), _type_class(t, c == label)
            if k is not None and k0 is not None and k != k0:
                raise ValueError(
                    f"Column {c!r} is {t0} in {p0} but {t} in {path}: a column must hold one "
                    f"kind of values in every file. Rewrite one of the two files with the "
                    f"other's type"
                    + (" (or pass features=[...] without it)." if c != label else ".")
                )


def _columns(dataset, footers, partition, label, features, partition_features=False, exclude=()):
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
        raise ValueError(
            f"Label column {label!r} is not in the Parquet dataset, whose columns "
            f"are {names}. Pass label= one of them."
        )
    unknown = [c for c in exclude if c not in types]
    if unknown:
        raise ValueError(
            f"exclude= names columns {unknown} that are not in the Parquet "
            f"dataset, whose columns are {names}. Correct exclude= (names are "
            "case-sensitive)."
        )
    # Excluded columns need not be in every file.
    features_given = features is not None or bool(exclude)
    if features is None:
        # A partition key (part=a/, date=2024-01-01/) says where Spark wrote a row,
        # not what was measured: a feature only when asked for.
        features = [
            n
            for n in names
            if n != label and n not in exclude and (partition_features or n not in partition.names)
        ]
    else:
        features = [str(f) for f in features]
        unknown = [f for f in features if f not in types]
        if unknown:
            raise ValueError(
                f"features= names columns {unknown} that are not in the Parquet "
                f"dataset, whose columns are {names}."
            )
        if label in features:
            raise ValueError(
                f"The label column {label!r} is also listed in features; remove it from features."
            )
    if not features:
        raise ValueError(
            "No feature columns: the dataset has only the label column"
            + (
                f" and the partition columns {partition.names} (pass "
                "partition_features=True to use them)"
                if partition.names
                else ""
            )
            + "."
        )
    in_files = [c for c in features + [label] if c in first]
    _check_files(paths, schemas, in_files, first, label, features_given)
    kinds = {
        _label_kind(s.field(label).type)
        for s in schemas
        if label in s.names and not pa.types.is_null(s.field(label).type)
    }
    kinds = kinds or {_label_kind(types[label])}
    kind = "float" if kinds == {"int", "float"} else kinds.pop()
    if kind is None:
        raise ValueError(
            f"Label column {label!r} has type {types[label]}; use "
            "integer, string, boolean or categorical class labels."
        )
    bad = [f for f in features if not _is_numeric(types[f])]
    if bad:
        raise ValueError(
            f"Feature columns {bad} are not numeric "
            f"({', '.join(str(types[f]) for f in bad)}). Pass features=[...] "
            "without them, or encode them as numbers before writing the Parquet data."
        )
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
        raise ValueError(
            f"filters={text} cannot be applied to the Parquet dataset ({exc}). "
            f"Filters compare columns of the dataset, {list(types)}, with values "
            "of their type."
        ) from exc
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

    __slots__ = (
        "filesystem",
        "features",
        "label",
        "y_dtype",
        "missing_label",
        "filter",
        "columns",
        "partition",
        "chunk_rows",
        "read_rows",
        "buffer_bytes",
    )

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)

    def __dask_tokenize__(self):
        # Every field a reader uses; pyarrow's objects by their printed form, the
        # filesystem by its kind and root (its repr holds an address).
        fs = self.filesystem
        return tuple(
            (
                k,
                (fs.type_name, getattr(fs, "base_path", None))
                if k == "filesystem"
                else getattr(self, k)
                if k in ("features", "columns")
                else str(getattr(self, k)),
            )
            for k in self.__slots__
        )


def file_versions(spec, paths):
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
    if (
        isinstance(chunk_bytes, bool)
        or not isinstance(chunk_bytes, (int, np.integer))
        or chunk_bytes < 1
    ):
        raise ValueError(
            f"chunk_bytes must be a positive integer (bytes) or None; got {chunk_bytes!r}."
        )
    return max(1, int(chunk_bytes) // (8 * (n_features + 1)))


def _exclude_names(exclude, features):
    """``exclude=`` as a tuple of column names (one name may be given as a string)."""
    if exclude is None:
        return ()
    if isinstance(exclude, str):
        exclude = (exclude,)
    try:
        exclude = tuple(exclude)
    except TypeError:
        raise ValueError(f"exclude= must be a list of column names; got {exclude!r}.") from None
    bad = [c for c in exclude if not isinstance(c, str)]
    if bad:
        raise ValueError(f"exclude= must list column names (strings); got {bad}.")
    if exclude and features is not None:
        raise ValueError(
            "features= and exclude= are both given; list the feature columns "
            "in features=, or the columns to leave out in exclude=, not both."
        )
    return exclude


def plan_dataset(
    path,
    label,
    features,
    filters,
    missing_label,
    filesystem,
    chunk_bytes,
    partition_features=False,
    exclude=(),
):
    """Check the dataset and list its row groups: ``(spec, groups)``.

    ``groups`` holds ``(file path, row group id, partition expression, rows
    per the footer)`` for every non-empty row group in dataset order.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if missing_label not in _MISSING:
        raise ValueError(
            f"missing_label={missing_label!r} is not valid; it must be one of "
            f"{', '.join(map(repr, _MISSING))}."
        )
    exclude = _exclude_names(exclude, features)
    dataset = _discover(path, filesystem)
    if not dataset.files:
        raise ValueError(
            f"The Parquet dataset at {path!r} has no rows (no data files; names "
            "starting with '_' or '.' such as _SUCCESS are not data)."
        )
    if filters is not None and not hasattr(filters, "is_valid"):  # DNF list, not an Expression
        filters = pq.filters_to_expression(filters)
    try:  # partition filters skip whole files here
        fragments = list(dataset.get_fragments(filter=filters))
    except pa.ArrowException as exc:
        raise ValueError(
            f"filters={filters} cannot be applied to the Parquet dataset at {path!r} ({exc})."
        ) from exc
    footers = _footers(fragments)
    partition = _partition_schema(dataset, fragments)
    features, types, kind = _columns(
        dataset,
        [(f.path, s) for f, (s, _) in zip(fragments, footers)],
        partition,
        label,
        features,
        partition_features,
        exclude,
    )
    needed = features + [label]
    if filters is not None:
        needed += [c for c in _filter_columns(filters, types) if c not in needed]
    chunk_rows = _chunk_rows(chunk_bytes, len(features))
    spec = _Spec(
        filesystem=dataset.filesystem,
        features=features,
        label=label,
        y_dtype=_label_dtype(kind, missing_label),
        missing_label=missing_label,
        filter=filters,
        columns=[c for c in needed if c not in partition.names],
        partition=pa.schema([partition.field(c) for c in needed if c in partition.names]),
        chunk_rows=chunk_rows,
        read_rows=min(_READ_ROWS, chunk_rows, _chunk_rows(_READ_BYTES, len(features))),
        buffer_bytes=min(2**20, max(2**16, _BUFFER_BYTES // len(needed))),
    )
    groups = [
        (f.path, g.id, f.partition_expression, g.num_rows)
        for f, (_, row_groups) in zip(fragments, footers)
        for g in row_groups
        if g.num_rows
    ]
    if not groups:
        raise ValueError(
            f"The Parquet dataset at {path!r} has no rows"
            + (
                " that pass the filters."
                if filters is not None
                else " (no data files, or only empty ones; names starting with '_' or "
                "'.' such as _SUCCESS are not data)."
            )
        )
    return spec, groups


def plan_blocks(groups, chunk_rows, split_row_groups):
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
                blocks += plan_blocks([(p, g, e, n) for g, n in gs], chunk_rows, True)
        return blocks
    for p, g, e, n in groups:
        k = -(-n // chunk_rows)
        bounds = [n * i // k for i in range(k + 1)]
        blocks += [(p, [(g, a, b)], e, b - a) for a, b in zip(bounds[:-1], bounds[1:])]
    return blocks
