"""Parquet input: single files, directories, Spark-written hive-partitioned directories.

Reference: the pandas frame that was written.  Rows are matched through a
row-id column, so the checks hold whatever order the files are listed in.
"""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from dmargin.io._parquet import iter_parquet, parquet_features, read_parquet
from dmargin.irelief._irelief import IRelief
from dmargin.relief._relief import Relief


def spark_like(tmp_path, frame, partition_cols, rows_per_group=7):
    """Write ``frame`` as Spark does: hive dirs, snappy, ``_SUCCESS``, ``.crc`` files."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema = pa.schema([table.schema.field(c) for c in partition_cols])
    root = tmp_path / "spark_out"
    ds.write_dataset(
        table,
        root,
        format="parquet",
        partitioning=ds.partitioning(schema, flavor="hive"),
        file_options=ds.ParquetFileFormat().make_write_options(compression="snappy"),
        basename_template="part-00000-{i}.c000.snappy.parquet",
        min_rows_per_group=rows_per_group,
        max_rows_per_group=rows_per_group,
    )
    (root / "_SUCCESS").write_text("")
    for f in list(root.rglob("*.parquet")):  # Spark's checksum files
        (f.parent / f".{f.name}.crc").write_bytes(b"\x00crc")
    return root


@pytest.fixture
def frame():
    """50 rows: row id, two float features, an int feature, string label, a
    partition key with nulls (-> __HIVE_DEFAULT_PARTITION__)."""
    rng = np.random.default_rng(7)
    n = 50
    part = np.array(["north", "south", None], dtype=object)[rng.integers(0, 3, n)]
    return pd.DataFrame(
        {
            "rid": np.arange(n, dtype=np.int64),
            "f0": rng.normal(size=n),
            "f1": rng.normal(size=n),
            "count": rng.integers(0, 9, n),
            "label": np.array(["spam", "ham"], dtype=object)[rng.integers(0, 2, n)],
            "region": part,
        }
    )


def by_rid(X, rid_col=0):
    X = np.asarray(X)
    return np.argsort(X[:, rid_col])


def test_spark_directory_rows_stay_aligned(tmp_path, frame):
    root = spark_like(tmp_path, frame, ["region"])
    assert (root / "region=__HIVE_DEFAULT_PARTITION__").is_dir()
    X, y = read_parquet(root, "label", ["rid", "f0", "f1", "count"])
    # Known chunks straight from the footers: one block per row group.
    assert not any(np.isnan(c) for c in X.chunks[0])
    assert X.chunks[0] == y.chunks[0] and sum(X.chunks[0]) == len(frame)
    assert len(X.chunks[0]) > 3 and max(X.chunks[0]) <= 7
    Xv, yv = X.compute(), y.compute()
    order = by_rid(Xv)
    ref = frame.sort_values("rid")
    np.testing.assert_array_equal(Xv[order], ref[["rid", "f0", "f1", "count"]].to_numpy(float))
    assert yv.dtype == object and yv[order].tolist() == ref["label"].tolist()


def test_null_partition_comes_back_missing(tmp_path, frame):
    root = spark_like(tmp_path, frame, ["region"])
    X, y = read_parquet(root, "region", ["rid"], missing_label="keep")
    order = by_rid(X.compute())
    got = y.compute()[order].tolist()
    want = [None if pd.isna(v) else v for v in frame.sort_values("rid")["region"]]
    assert got == want and None in got


def test_label_in_a_partition_column(tmp_path, frame):
    root = spark_like(tmp_path, frame, ["region"])
    X, y = read_parquet(root, "region", ["rid", "f0"], missing_label="drop")
    keep = frame[frame["region"].notna()].sort_values("rid")
    assert X.chunks[0] == y.chunks[0] and sum(X.chunks[0]) == len(keep)
    Xv, yv = X.compute(), y.compute()
    order = by_rid(Xv)
    np.testing.assert_array_equal(Xv[order], keep[["rid", "f0"]].to_numpy(float))
    assert yv[order].tolist() == keep["region"].tolist()
    # The default refuses to guess, and says how to choose.
    X, y = read_parquet(root, "region", ["rid"])
    with pytest.raises(
        ValueError, match="no value in the label column 'region'.*missing_label='drop'"
    ):
        y.compute()


def test_numeric_partition_as_feature_and_filters(tmp_path, frame):
    frame = frame.assign(
        year=np.where(frame["rid"] % 4 == 0, np.nan, 2020 + frame["rid"] % 3)
    ).astype({"year": "Int64"})
    root = spark_like(tmp_path, frame.drop(columns="region"), ["year"])
    # features=None: every column but the label and the partition key...
    X, _ = read_parquet(root, "label")
    assert X.shape[1] == 4
    # ...which is a feature when asked for.
    X, y = read_parquet(root, "label", partition_features=True)
    Xv = X.compute()
    order = by_rid(Xv)
    ref = frame.sort_values("rid")
    np.testing.assert_array_equal(
        Xv[order][:, :4], ref[["rid", "f0", "f1", "count"]].to_numpy(float)
    )
    assert y.compute()[order].tolist() == ref["label"].tolist()
    year = Xv[order][:, 4]
    np.testing.assert_array_equal(year, ref["year"].to_numpy(float, na_value=np.nan))
    assert np.isnan(year).sum() == (frame["rid"] % 4 == 0).sum()
    # A partition filter skips directories; chunk sizes are counted, still known.
    X, _ = read_parquet(root, "label", ["rid"], filters=[("year", "==", 2021)])
    want = ref[ref["year"] == 2021]
    assert sum(X.chunks[0]) == len(want)
    np.testing.assert_array_equal(np.sort(X.compute()[:, 0]), want["rid"].to_numpy(float))


@pytest.mark.parametrize("kind", ["string", "categorical", "int"])
def test_single_file_label_types(tmp_path, frame, kind):
    label = {
        "string": frame["label"],
        "categorical": frame["label"].astype("category"),
        "int": (frame["label"] == "spam").astype(np.int64),
    }[kind]
    df = frame[["rid", "f0"]].assign(target=label)
    path = tmp_path / "one.parquet"
    df.to_parquet(path, row_group_size=16)
    if kind == "categorical":
        assert pa.types.is_dictionary(pq.read_schema(path).field("target").type)
    X, y = read_parquet(path, "target")
    assert X.chunks[0] == (16, 16, 16, 2)
    np.testing.assert_array_equal(X.compute(), df[["rid", "f0"]].to_numpy(float))
    if kind == "int":
        assert y.dtype == np.int64
    else:
        assert y.dtype == object
    np.testing.assert_array_equal(y.compute(), label.to_numpy().astype(y.dtype))
    X, _ = read_parquet(path, "target", split_row_groups=False)
    assert X.chunks[0] == (50,)


def test_irelief_on_parquet_equals_numpy(tmp_path, blobs_multiclass, threaded):
    X, y = blobs_multiclass
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
    df.to_parquet(tmp_path / "train.parquet", row_group_size=13)
    Xd, yd = read_parquet(tmp_path / "train.parquet", "y")
    assert Xd.chunks[0] == (13,) * 5
    local = IRelief(max_iter=5, tol=0).fit(X, y)
    remote = IRelief(max_iter=5, tol=0).fit(Xd, yd)
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
    np.testing.assert_array_equal(remote.classes_, local.classes_)


def test_missing_feature_values_reach_fit_as_a_clear_error(tmp_path, frame, threaded):
    df = frame[["f0", "f1", "label"]].copy()
    df.loc[3, "f1"] = np.nan
    df.to_parquet(tmp_path / "nan.parquet")
    X, y = read_parquet(tmp_path / "nan.parquet", "label")
    assert np.isnan(X.compute()[3, 1])
    with pytest.raises(ValueError, match="NaN or infinite.*Impute"):
        Relief().fit(X, y)
    # The Relief family's missing-value rule (tests/test_missing.py) takes them.
    assert np.all(np.isfinite(IRelief(max_iter=2, tol=0).fit(X, y).feature_importances_))


def test_errors_name_the_fix(tmp_path, frame):
    path = tmp_path / "f.parquet"
    frame.to_parquet(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_parquet(tmp_path / "nowhere", "label")
    with pytest.raises(ValueError, match=r"Label column 'target' is not in .*Pass label="):
        read_parquet(path, "target")
    with pytest.raises(ValueError, match=r"\['region'\] are not numeric.*Pass features="):
        read_parquet(path, "label")
    with pytest.raises(ValueError, match=r"features= names columns \['nope'\] that are not in"):
        read_parquet(path, "label", ["f0", "nope"])
    with pytest.raises(ValueError, match="also listed in features"):
        read_parquet(path, "label", ["f0", "label"])
    with pytest.raises(ValueError, match="missing_label="):
        read_parquet(path, "label", ["f0"], missing_label="ignore")
    with pytest.raises(ValueError, match="no rows that pass the filters|no rows left"):
        read_parquet(path, "label", ["f0"], filters=[("f0", ">", 1e9)])
    # Empty: only Spark's marker file, or a file with zero rows.
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_SUCCESS").write_text("")
    with pytest.raises(ValueError, match="has no rows.*_SUCCESS"):
        read_parquet(empty, "label")
    frame.iloc[:0].to_parquet(empty / "zero.parquet")
    with pytest.raises(ValueError, match="has no rows"):
        read_parquet(empty, "label", ["f0"])
    frame.assign(when=pd.Timestamp("2020-01-01")).to_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="use integer, string"):
        read_parquet(tmp_path / "t.parquet", "when", ["f0"])


def test_string_partition_key_is_not_a_feature(tmp_path, frame):
    """Spark's ``part=a/`` directories: the key is no feature, and no error asks for one."""
    root = spark_like(
        tmp_path,
        frame.drop(columns="region").assign(part=np.where(frame["rid"] % 2 == 0, "a", "b")),
        ["part"],
    )
    X, y = read_parquet(root, "label")
    assert X.shape[1] == 4
    assert parquet_features(root, "label") == ["rid", "f0", "f1", "count"]
    Xi = np.concatenate([x for x, _ in iter_parquet(root, "label")])
    assert Xi.shape[1] == 4
    with pytest.raises(ValueError, match=r"Feature columns \['part'\] are not numeric"):
        read_parquet(root, "label", partition_features=True)


def _count_reads(monkeypatch):
    """How often each Parquet block is read (in this process: local schedulers)."""
    import collections

    from dmargin.io import _parquet

    # _read_block is the one place a Parquet block is read: counting its calls counts reads
    counts, original = collections.Counter(), _parquet._read_block

    def spy(spec, path, pieces, *rest):
        counts[(path, str(pieces))] += 1
        return original(spec, path, pieces, *rest)

    monkeypatch.setattr(_parquet, "_read_block", spy)
    return counts


@pytest.mark.parametrize("mode", ["threads", "cluster"])
def test_as_frame_carries_the_names_and_reads_as_often_as_arrays(
    tmp_path, frame, mode, request, monkeypatch
):
    """Names reach the fitted estimator on every scheduler; a batch fit reads each
    block twice either way (the scaling pass, then the persisted rows)."""
    import dask

    import dmargin

    root = spark_like(tmp_path, frame.drop(columns="region"), [])
    names = ["f0", "f1", "count"]
    reads = _count_reads(monkeypatch)  # before read_parquet: its tasks hold the reader
    X, y = read_parquet(root, "label", names, as_frame=True)
    assert list(X.columns) == names and y.name == "label"
    if mode == "threads":
        with dask.config.set(scheduler="threads"):
            est = dmargin.ReliefF(n_neighbors=3).fit(X, y)
            frame_reads = dict(reads)
            reads.clear()
            ref = dmargin.ReliefF(n_neighbors=3).fit(*read_parquet(root, "label", names))
        assert set(frame_reads.values()) == {2} and set(reads.values()) == {2}
    else:
        request.getfixturevalue("client")
        est = dmargin.ReliefF(n_neighbors=3).fit(X, y)
        with dask.config.set(scheduler="threads"):
            ref = dmargin.ReliefF(n_neighbors=3).fit(*read_parquet(root, "label", names))
    assert list(est.feature_names_in_) == names
    np.testing.assert_allclose(est.feature_importances_, ref.feature_importances_, atol=1e-12)
    est.set_params(n_features_to_select=2)
    assert set(est.get_feature_names_out()) <= set(names)


def test_parquet_features_leaves_out_excluded_columns(tmp_path, frame):
    root = spark_like(tmp_path, frame.drop(columns="region"), [])
    assert parquet_features(root, "label", exclude=["rid"]) == ["f0", "f1", "count"]
    with pytest.raises(ValueError, match=r"exclude= names columns \['nope'\]"):
        parquet_features(root, "label", exclude=["nope"])


def test_read_parquet_exclude_leaves_an_id_column_out(tmp_path, frame):
    root = spark_like(tmp_path, frame, ["region"])
    X, y = read_parquet(root, "label", exclude=["rid"])
    assert X.feature_names.tolist() == ["f0", "f1", "count"]
    rows = X.compute()
    full = read_parquet(root, "label")[0].compute()  # rid first, then the same columns
    np.testing.assert_array_equal(rows, full[:, 1:])
    np.testing.assert_array_equal(y.compute(), read_parquet(root, "label")[1].compute())
    assert read_parquet(root, "label", exclude="rid")[0].feature_names.tolist() == [
        "f0",
        "f1",
        "count",
    ]  # one name as a string
    Xf, _ = read_parquet(root, "label", exclude=["rid"], as_frame=True)
    assert list(Xf.columns) == ["f0", "f1", "count"]
    chunks = list(iter_parquet(root, "label", exclude=["rid", "count"]))
    assert all(X.shape[1] == 2 for X, _ in chunks)


def test_read_parquet_exclude_names_an_unknown_column_and_lists_the_columns(tmp_path, frame):
    root = spark_like(tmp_path, frame, ["region"])
    with pytest.raises(
        ValueError,
        match=r"exclude= names columns \['row_id'\] that are not "
        r"in the Parquet dataset, whose columns are "
        r"\['rid', 'f0', 'f1', 'count', 'label', 'region'\]",
    ):
        read_parquet(root, "label", exclude=["row_id"])
    with pytest.raises(ValueError, match="features= and exclude= are both given"):
        read_parquet(root, "label", features=["f0"], exclude=["rid"])
    with pytest.raises(ValueError, match=r"exclude= must list column names \(strings\)"):
        read_parquet(root, "label", exclude=[0])


@pytest.mark.parametrize("filters", [None, [("count", ">", 2)]])
def test_x_and_y_are_one_getitem_a_block_on_the_shared_read(tmp_path, frame, filters):
    """Each block of X and of y is one task on its read, and both read the same task:
    no from-value or concatenate tasks for a cluster to schedule in every pass."""
    root = spark_like(tmp_path, frame.drop(columns="region"), [], rows_per_group=7)
    X, y = read_parquet(root, "label", ["rid", "f0", "count"], filters=filters)
    n_blocks = X.numblocks[0]
    assert n_blocks > 1 and y.numblocks == (n_blocks,)
    x_graph, y_graph = dict(X.__dask_graph__()), dict(y.__dask_graph__())
    reads = {k for k in x_graph if isinstance(k, str) and k.startswith("dmargin-read-parquet-")}
    assert len(reads) == n_blocks and len(x_graph) == len(y_graph) == 2 * n_blocks
    assert reads == {k for k in y_graph if k in reads}
    # the rows are those of the file, in both
    expected = frame if filters is None else frame[frame["count"] > 2]
    got = np.asarray(X)
    order = np.argsort(got[:, 0])
    np.testing.assert_array_equal(got[order, 0], np.sort(expected["rid"].to_numpy()))
    labels = dict(zip(expected["rid"], expected["label"]))
    assert [labels[r] for r in got[order, 0]] == list(np.asarray(y)[order])
    # a refit's arrays get the same keys, another selection other keys
    again = read_parquet(root, "label", ["rid", "f0", "count"], filters=filters)[0]
    other = read_parquet(root, "label", ["rid", "f1", "count"], filters=filters)[0]
    assert again.name == X.name and other.name != X.name
