"""A Spark DataFrame as dmargin's rows: its partitions, read as Arrow, become
the row blocks of dask arrays whose every task runs on Spark's executors.

One pass over the DataFrame (a ``mapInArrow`` job) turns each partition's
Arrow batches into one float64 block of features and its labels, cached on
the executors (``MEMORY_AND_DISK``), and counts what a fit must know first:
the rows of each partition, missing and infinite values per feature, null
labels and the sizes of the vectors.  Bad input is refused there, naming the
column, before any fit starts; nothing of the rows comes to the driver.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass

import numpy as np

from ._scheduler import RunStats, read_block, register, release
from ._watch import run_job, stopped

#: Spark's numeric types a feature column may have (booleans read as 0/1).
_NUMERIC = (
    "ByteType",
    "ShortType",
    "IntegerType",
    "LongType",
    "FloatType",
    "DoubleType",
    "DecimalType",
    "BooleanType",
)


class SparkInputError(ValueError):
    """A Spark DataFrame dmargin cannot fit on: the message names the column and the fix."""


@dataclass
class SparkData:
    """The dask arrays of a DataFrame's rows and labels, and their Spark source."""

    X: object
    y: object
    names: list
    token: str
    blocks: object
    partition_rows: list
    stats: RunStats

    @property
    def n_samples(self):
        return int(sum(self.partition_rows))

    def release(self):
        """Unpersist the cached blocks and forget the source (a stopped
        SparkContext has dropped them already)."""
        release(self.token)
        if stopped(self.blocks.context) is None:
            self.blocks.unpersist()


def _type_name(dtype):
    return type(dtype).__name__


def feature_columns(df, label, features=None, features_col=None):
    """``(columns, vector)``: the feature columns to read, checked against the schema
    (no job), and whether they are one MLlib vector column."""
    schema = {f.name: f.dataType for f in df.schema.fields}
    if label not in schema:
        raise SparkInputError(
            f"The DataFrame has no label column {label!r} (its columns: "
            f"{sorted(schema)}); pass label=<the name of the class column>."
        )
    if features is not None and features_col is not None:
        raise SparkInputError(
            "Give either the numeric feature columns (features / inputCols) "
            "or one vector column (features_col / featuresCol), not both."
        )
    if features_col is not None:
        if features_col not in schema:
            raise SparkInputError(
                f"The DataFrame has no vector column {features_col!r} (its "
                f"columns: {sorted(schema)})."
            )
        if _type_name(schema[features_col]) != "VectorUDT":
            raise SparkInputError(
                f"Column {features_col!r} is {schema[features_col].simpleString()}, not an "
                "MLlib vector; assemble numeric columns into one with "
                "pyspark.ml.feature.VectorAssembler, or pass them as features=[...]."
            )
        return [features_col], True
    columns = [c for c in schema if c != label] if features is None else list(features)
    if not columns:
        raise SparkInputError(f"The DataFrame has no feature column besides the label {label!r}.")
    for c in columns:
        if c not in schema:
            raise SparkInputError(
                f"The DataFrame has no feature column {c!r} (its columns: {sorted(schema)})."
            )
        if c == label:
            raise SparkInputError(
                f"The label column {label!r} is among the features; leave it out of features=[...]."
            )
        kind = _type_name(schema[c])
        if kind == "VectorUDT":
            raise SparkInputError(
                f"Column {c!r} is an MLlib vector: pass it alone as "
                f"features_col={c!r} (featuresCol), not among numeric columns."
            )
        if kind not in _NUMERIC:
            raise SparkInputError(
                f"Feature column {c!r} is {schema[c].simpleString()}, not numeric; dmargin "
                "measures distances between numbers. Encode it (pyspark.ml.feature."
                "StringIndexer, then OneHotEncoder) or leave it out with features=[...]."
            )
    return columns, False


def _dense(column, n):
    """An MLlib vector column of an Arrow batch as a dense float64 matrix; sizes
    checked by the caller from the returned per-row sizes."""
    import pyarrow as pa

    if column.null_count:
        return None, None, column.null_count
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kinds = column.field("type").to_numpy(zero_copy_only=False)
    values = column.field("values")
    lengths = np.diff(values.offsets.to_numpy())
    declared = column.field("size").to_numpy(zero_copy_only=False)
    sizes = np.where(kinds == 1, lengths, np.nan_to_num(declared.astype(np.float64), nan=-1))
    sizes = sizes.astype(np.int64)
    width = int(sizes.max()) if n else 0
    X = np.zeros((n, max(width, 0)), dtype=np.float64)
    flat = values.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    rows = np.repeat(np.arange(n), lengths)
    starts = np.repeat(values.offsets.to_numpy()[:-1], lengths)
    cols = np.arange(flat.size) - starts
    sparse = np.repeat(kinds == 0, lengths)
    if sparse.any():
        cols[sparse] = column.field("indices").flatten().to_numpy(zero_copy_only=False)
    X[rows, cols] = flat
    return X, sizes, 0


def _encoder(columns, vector, label):
    """The ``mapInArrow`` function: each Arrow batch as one ``(X, y, stats)`` (:func:`_pack`)."""

    def encode(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        for batch in batches:
            n = batch.num_rows
            stats = {"rows": n, "null_labels": batch.column(label).null_count}
            if vector:
                X, sizes, nulls = _dense(batch.column(columns[0]), n)
                stats["null_vectors"] = nulls
                if X is None:
                    X = np.zeros((n, 0))
                    sizes = np.zeros(0, dtype=np.int64)
                stats["sizes"] = (int(sizes.min()), int(sizes.max())) if sizes.size else None
            else:
                X = np.empty((n, len(columns)), dtype=np.float64)
                for j, c in enumerate(columns):
                    col = batch.column(c)
                    X[:, j] = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
            stats["missing"] = np.isnan(X).sum(axis=0)
            stats["infinite"] = np.isinf(X).sum(axis=0)
            y = batch.column(label).to_numpy(zero_copy_only=False)
            yield pa.RecordBatch.from_pydict(
                {"block": [_pack(X, y, stats)]}, schema=pa.schema([("block", pa.binary())])
            )

    return encode


def _pack(X, y, stats):
    """``(X, y, stats)`` as the bytes of an ``.npz`` (no pickle): text labels as
    unicode, the counts as arrays."""
    if y.dtype == object:  # text labels (a null, counted in the stats, as "")
        y = np.array(["" if v is None else str(v) for v in y], dtype=str)
    sizes = stats.get("sizes")
    arrays = {
        "X": X,
        "y": y,
        "rows": stats["rows"],
        "null_labels": stats["null_labels"],
        "null_vectors": stats.get("null_vectors", 0),
        "sizes": np.asarray(sizes if sizes else (), dtype=np.int64),
        "missing": stats["missing"],
        "infinite": stats["infinite"],
    }
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _unpack(data):
    """:func:`_pack`'s ``(X, y, stats)``, read without pickle."""
    with np.load(io.BytesIO(data), allow_pickle=False) as f:
        stats = {
            "rows": int(f["rows"]),
            "null_labels": int(f["null_labels"]),
            "null_vectors": int(f["null_vectors"]),
            "missing": f["missing"],
            "infinite": f["infinite"],
        }
        if f["sizes"].size:
            stats["sizes"] = tuple(int(v) for v in f["sizes"])
        return f["X"], f["y"], stats


def _join(partition, records):
    """A partition's batches as one record ``(partition, X, y, stats)``."""
    parts = [_unpack(r[0]) for r in records]
    if not parts:
        return [(partition, None, None, {"rows": 0, "null_labels": 0})]
    widths = {p[0].shape[1] for p in parts if p[0].shape[0]}
    if len(widths) > 1:  # vectors of other sizes in another batch: reported by the stats
        width = max(widths)
        parts = [(np.pad(X, ((0, 0), (0, width - X.shape[1]))), y, s) for X, y, s in parts]
    X = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
    y = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    stats = {
        "rows": sum(p[2]["rows"] for p in parts),
        "null_labels": sum(p[2]["null_labels"] for p in parts),
    }
    for key in ("missing", "infinite", "null_vectors"):
        found = [p[2][key] for p in parts if key in p[2] and np.size(p[2][key])]
        if found:
            stats[key] = (
                sum(found)
                if key == "null_vectors"
                else np.sum([np.pad(f, (0, X.shape[1] - np.size(f))) for f in found], axis=0)
            )
    sizes = [p[2]["sizes"] for p in parts if p[2].get("sizes")]
    if sizes:
        stats["sizes"] = (min(s[0] for s in sizes), max(s[1] for s in sizes))
    return [(partition, np.ascontiguousarray(X, dtype=np.float64), y, stats)]


def _all_stats(records):
    return [_stats(record) for record in records]


def _stats(record):
    _, X, y, stats = record
    out = dict(stats)
    out["y_kind"] = None if y is None else y.dtype.kind
    return out


def read_spark(
    df, label, *, features=None, features_col=None, allow_nan=False, who="dmargin"
) -> SparkData:
    """The rows and labels of ``df`` as Spark-backed dask arrays (module docstring).

    Raises :class:`SparkInputError` for null labels, missing features (unless
    ``allow_nan``), infinite values, vectors of several sizes, or no rows.
    """
    import dask.array as da
    from dask._task_spec import Task
    from dask.highlevelgraph import HighLevelGraph
    from pyspark import StorageLevel

    columns, vector = feature_columns(df, label, features, features_col)
    frame = df.select(*columns, label)
    encoded = frame.mapInArrow(_encoder(columns, vector, label), "block binary")
    blocks = encoded.rdd.mapPartitionsWithIndex(_join, preservesPartitioning=True)
    blocks = blocks.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        stats = run_job(blocks.context, blocks, _all_stats, "the reading of the DataFrame")
        names = _check(stats, columns, vector, label, allow_nan, who)
    except BaseException:
        if stopped(blocks.context) is None:
            blocks.unpersist()
        raise
    rows = [s["rows"] for s in stats]
    token = f"spark-{uuid.uuid4().hex}"
    run = RunStats()
    register(token, blocks, len(rows), run)
    used = [p for p, n in enumerate(rows) if n]
    a = len(names)
    kinds = {s["y_kind"] for s in stats if s["rows"]}
    y_dtype = (
        np.dtype(np.float64)
        if kinds <= {"f"}
        else np.dtype(np.int64)
        if kinds <= {"i", "u", "b"}
        else np.dtype(object)
    )
    xname, yname = f"spark-rows-{token}", f"spark-labels-{token}"
    xgraph = {
        (xname, b, 0): Task((xname, b, 0), read_block, token, p, "X") for b, p in enumerate(used)
    }
    ygraph = {(yname, b): Task((yname, b), read_block, token, p, "y") for b, p in enumerate(used)}
    chunks = tuple(rows[p] for p in used)
    X = da.Array(
        HighLevelGraph.from_collections(xname, xgraph, dependencies=()),
        xname,
        chunks=(chunks, (a,)),
        dtype=np.float64,
    )
    y = da.Array(
        HighLevelGraph.from_collections(yname, ygraph, dependencies=()),
        yname,
        chunks=(chunks,),
        dtype=y_dtype,
    )
    return SparkData(X, y, names, token, blocks, rows, run)


def _features(n):
    return "1 feature" if n == 1 else f"{n} features"


def _check(stats, columns, vector, label, allow_nan, who):
    """The feature names, or a :class:`SparkInputError` naming the bad column."""
    n = sum(s["rows"] for s in stats)
    if n == 0:
        raise SparkInputError(f"{who}: the DataFrame has no rows.")
    nulls = sum(s["null_labels"] for s in stats)
    if nulls:
        raise SparkInputError(
            f"{who}: the label column {label!r} has {nulls} null values of {n} rows; drop "
            f"those rows (df.dropna(subset=[{label!r}])) or give them a class."
        )
    if vector:
        bad = sum(s.get("null_vectors", 0) for s in stats)
        if bad:
            raise SparkInputError(
                f"{who}: the vector column {columns[0]!r} has {bad} null "
                "vectors; drop those rows or fill them."
            )
        sizes = [s["sizes"] for s in stats if s.get("sizes")]
        low, high = min(s[0] for s in sizes), max(s[1] for s in sizes)
        if low != high:
            raise SparkInputError(
                f"{who}: the vector column {columns[0]!r} holds vectors of sizes {low} to "
                f"{high}; every row needs the same features. Rebuild it with one "
                "VectorAssembler over the same columns."
            )
        names = [f"{columns[0]}[{j}]" for j in range(high)]
    else:
        names = list(columns)
    width = len(names)

    def total(key):
        found = [
            np.pad(s[key], (0, width - np.size(s[key]))) for s in stats if s["rows"] and key in s
        ]
        return np.sum(found, axis=0) if found else np.zeros(width)

    infinite, missing = total("infinite"), total("missing")
    if infinite.any():
        j = int(np.flatnonzero(infinite)[0])
        raise SparkInputError(
            f"{who}: feature {names[j]!r} has {int(infinite[j])} infinite "
            "values; replace or drop them."
        )
    if missing.any() and not allow_nan:
        j = int(np.flatnonzero(missing)[0])
        raise SparkInputError(
            f"{who}: feature {names[j]!r} has {int(missing[j])} null or NaN values (of {n} "
            f"rows; {_features(int((missing > 0).sum()))} have some). Fill them "
            "(pyspark.ml.feature.Imputer, df.fillna) or drop those rows (df.dropna())."
        )
    return names
