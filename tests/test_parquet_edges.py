"""Parquet input at its edges: symbolic links, files that disagree on their
columns, files that break while being read, int64 beyond 2**53, and row
groups larger than memory should hold at once.

Nothing may be lost, read twice, hang, or come back silently wrong: each
case either reads exactly the rows pandas reads, or raises a ValueError that
names the file (and column or row group) and the fix.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs
import pyarrow.parquet as pq
import pytest

from dmargin.io._parquet import iter_parquet, read_parquet


def spark_dir(root, n=100):
    """``n`` rows as Spark writes them: ``part=`` dirs, ``_SUCCESS``, ``.crc`` files,
    a ``_temporary/`` leftover; returns the frame written."""
    frame = pd.DataFrame(
        {"rid": np.arange(n, dtype=np.int64), "f0": np.linspace(0, 1, n), "label": np.arange(n) % 2}
    )
    for part, rows in (("a", frame.iloc[: n // 2]), ("b", frame.iloc[n // 2 :])):
        d = root / f"part={part}"
        d.mkdir(parents=True)
        rows.to_parquet(d / "part-00000.snappy.parquet", index=False)
        (d / ".part-00000.snappy.parquet.crc").write_bytes(b"\x00crc")
    (root / "_SUCCESS").write_text("")
    (root / "_temporary" / "0").mkdir(parents=True)
    frame.to_parquet(root / "_temporary" / "0" / "part-attempt.parquet", index=False)
    return frame


def rids(X):
    return np.sort(np.asarray(X)[:, 0])


# ---------------------------------------------------------------------------
# Symbolic links
# ---------------------------------------------------------------------------


def test_spark_directory_reads_each_row_once(tmp_path):
    root = tmp_path / "out"
    frame = spark_dir(root)
    # Links under skipped names are never looked at, as Spark skips them.
    os.symlink(root, root / "part=a" / ".loop")
    os.symlink(root, root / "_loop")
    X, y = read_parquet(root, "label", ["rid", "f0"])
    assert X.shape == (100, 2)
    np.testing.assert_array_equal(rids(X.compute()), frame["rid"].to_numpy(float))


def test_symlink_loop_is_refused_naming_the_link(tmp_path):
    root = tmp_path / "out"
    spark_dir(root)
    os.symlink(root, root / "part=a" / "again")
    with pytest.raises(
        ValueError,
        match=r"part=a/again is a symbolic link to .*out, a "
        r"directory that contains the link: a loop.*Remove",
    ):
        read_parquet(root, "label", ["rid"])
    with pytest.raises(ValueError, match="a loop"):
        iter_parquet(root, "label", ["rid"])


def test_symlink_reaching_a_directory_twice_is_refused(tmp_path):
    root = tmp_path / "out"
    spark_dir(root)
    os.symlink(root / "part=b", root / "part=c")  # part=b's rows under a second name
    with pytest.raises(
        ValueError,
        match=r"part=c and .*part=b are the same .*reached "
        r"twice.*count its rows twice",
    ):
        read_parquet(root, "label", ["rid"])


def test_symlink_leaving_the_directory_is_refused(tmp_path):
    root = tmp_path / "out"
    spark_dir(root)
    elsewhere = tmp_path / "elsewhere.parquet"
    pd.DataFrame({"rid": [7], "f0": [0.5], "label": [1]}).to_parquet(elsewhere)
    os.symlink(elsewhere, root / "part=a" / "extra.parquet")
    with pytest.raises(
        ValueError,
        match=r"extra\.parquet is a symbolic link to "
        r".*elsewhere\.parquet, outside the directory .*out "
        r"being read.*pass .*elsewhere\.parquet itself",
    ):
        read_parquet(root, "label", ["rid"])


def test_links_inside_the_directory_and_to_the_root_are_followed(tmp_path):
    real = tmp_path / "real"
    frame = spark_dir(real)
    os.symlink(real, tmp_path / "alias")  # the path given may be a link
    (real / "part=a" / "part-00000.snappy.parquet").rename(real / "_stash.parquet")
    os.symlink(real / "_stash.parquet", real / "part=a" / "part-00000.snappy.parquet")
    X, _ = read_parquet(tmp_path / "alias", "label", ["rid"])
    np.testing.assert_array_equal(rids(X.compute()), frame["rid"].to_numpy(float))


def test_broken_link_and_pipe_are_refused(tmp_path):
    root = tmp_path / "out"
    spark_dir(root)
    os.symlink(tmp_path / "gone.parquet", root / "part=a" / "gone.parquet")
    with pytest.raises(
        ValueError,
        match=r"gone\.parquet is a symbolic link to .*which does "
        "not exist",
    ):
        read_parquet(root, "label", ["rid"])
    os.remove(root / "part=a" / "gone.parquet")
    os.mkfifo(root / "part=b" / "pipe")  # opening it would wait for a writer for ever
    with pytest.raises(ValueError, match=r"pipe is neither a regular file nor a directory"):
        read_parquet(root, "label", ["rid"])


def test_explicit_filesystem_is_listed_by_pyarrow_as_before(tmp_path):
    root = tmp_path / "out"
    frame = spark_dir(root)
    X, y = read_parquet(str(root), "label", ["rid", "f0"], filesystem=pyarrow.fs.LocalFileSystem())
    np.testing.assert_array_equal(rids(X.compute()), frame["rid"].to_numpy(float))


# ---------------------------------------------------------------------------
# Files that disagree on their columns
# ---------------------------------------------------------------------------


def two_files(tmp_path, first, second):
    d = tmp_path / "drift"
    d.mkdir(parents=True)
    pd.DataFrame(first).to_parquet(d / "1.parquet")
    pd.DataFrame(second).to_parquet(d / "2.parquet")
    return d


def test_file_missing_a_column_is_named(tmp_path):
    d = two_files(
        tmp_path, {"a": [1.0, 2.0], "b": [3.0, 4.0], "y": [0, 1]}, {"a": [5.0, 6.0], "y": [0, 1]}
    )
    with pytest.raises(
        ValueError,
        match=r"Column 'b' is in .*1\.parquet but not in "
        r".*2\.parquet\. Pass features=\[\.\.\.\] without 'b'",
    ):
        read_parquet(d, "y")
    with pytest.raises(
        ValueError,
        match=r"Column 'b' is in .*1\.parquet but not in "
        r".*2\.parquet\. Pass features=\[\.\.\.\] without 'b'",
    ):
        read_parquet(d, "y", ["a", "b"])
    X, _ = read_parquet(d, "y", ["a"])  # leaving it out is the fix
    assert sorted(X.compute()[:, 0]) == [1.0, 2.0, 5.0, 6.0]


def test_file_with_an_extra_column_is_named(tmp_path):
    d = two_files(
        tmp_path, {"a": [1.0, 2.0], "y": [0, 1]}, {"a": [5.0, 6.0], "b": [3.0, 4.0], "y": [0, 1]}
    )
    with pytest.raises(
        ValueError,
        match=r"Column 'b' is in .*2\.parquet but not in "
        r".*1\.parquet\..*rewrite .*1\.parquet",
    ):
        read_parquet(d, "y")
    X, _ = read_parquet(d, "y", ["a"])
    assert X.shape == (4, 1)


def test_string_in_one_file_number_in_another_is_named(tmp_path):
    d = two_files(
        tmp_path,
        {"a": [1.0, 2.0], "s": [1.5, 2.5], "y": [0, 1]},
        {"a": [5.0, 6.0], "s": ["u", "v"], "y": [0, 1]},
    )
    with pytest.raises(
        ValueError,
        match=r"Column 's' is double in .*1\.parquet but "
        r"(large_)?string in .*2\.parquet",
    ):
        read_parquet(d, "y", ["a", "s"])
    X, _ = read_parquet(d, "y", ["a"])  # a column not asked for may differ
    assert X.shape == (4, 1)


def test_label_missing_from_a_file_is_named(tmp_path):
    d = two_files(tmp_path, {"a": [1.0, 2.0], "y": [0, 1]}, {"a": [5.0, 6.0]})
    with pytest.raises(
        ValueError,
        match=r"Column 'y' is in .*1\.parquet but not in "
        r".*2\.parquet\. Rewrite .*2\.parquet with the label",
    ):
        read_parquet(d, "y")


def test_numeric_widths_unify_to_float64(tmp_path):
    d = two_files(
        tmp_path,
        {"a": np.array([1, 2], np.int32), "y": np.array([0, 1], np.int32)},
        {"a": np.array([2**40, 4], np.int64), "y": np.array([1, 0], np.int64)},
    )
    pd.DataFrame({"a": [0.5], "y": [1]}).to_parquet(d / "3.parquet")
    X, y = read_parquet(d, "y")
    assert X.compute()[:, 0].tolist() == [1.0, 2.0, 2.0**40, 4.0, 0.5]
    assert y.dtype == np.int64 and y.compute().tolist() == [0, 1, 1, 0, 1]


def test_int_label_in_one_file_float_in_another_reads_float(tmp_path):
    d = two_files(tmp_path, {"a": [1.0, 2.0], "y": [0, 1]}, {"a": [5.0, 6.0], "y": [1.0, 0.0]})
    _, y = read_parquet(d, "y")
    assert y.dtype == np.float64 and y.compute().tolist() == [0.0, 1.0, 1.0, 0.0]
    d2 = two_files(
        tmp_path / "s", {"a": [1.0, 2.0], "y": [0, 1]}, {"a": [5.0, 6.0], "y": ["no", "yes"]}
    )
    with pytest.raises(
        ValueError,
        match=r"Column 'y' is int64 in .*1\.parquet but "
        r"(large_)?string in .*2\.parquet",
    ):
        read_parquet(d2, "y")


# ---------------------------------------------------------------------------
# Files that break while being read
# ---------------------------------------------------------------------------


def two_row_groups(path):
    frame = pd.DataFrame(
        {"a": np.random.default_rng(0).normal(size=2000), "y": np.arange(2000) % 2}
    )
    frame.to_parquet(path, row_group_size=1000, compression="snappy")
    return frame


def test_corrupt_page_found_at_compute_names_file_and_row_group(tmp_path):
    path = tmp_path / "corrupt.parquet"
    two_row_groups(path)
    column = pq.ParquetFile(path).metadata.row_group(1).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    data = bytearray(path.read_bytes())
    data[start : start + 24] = b"\xff" * 24  # the page header: the footer stays readable
    path.write_bytes(bytes(data))
    X, y = read_parquet(path, "y")  # planning reads footers only
    assert X.chunks[0] == (1000, 1000)
    assert X.blocks[0].compute().shape == (1000, 1)
    pattern = (
        r"^.*corrupt\.parquet, row group 1: could not be read \(OSError: .*\)\. "
        r"Re-write or remove this file"
    )
    with pytest.raises(ValueError, match=pattern) as info:
        X.compute()
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(ValueError, match=pattern):
        list(iter_parquet(path, "y"))


def test_file_truncated_after_planning_names_file_and_row_group(tmp_path):
    path = tmp_path / "cut.parquet"
    two_row_groups(path)
    X, _ = read_parquet(path, "y")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(
        ValueError,
        match=r"cut\.parquet, row group [01]: could not be read.*"
        "Re-write or remove this file",
    ):
        X.compute()
    with pytest.raises(
        ValueError,
        match=r"cut\.parquet: not a readable Parquet file.*"
        "Re-write or remove this file",
    ):
        read_parquet(path, "y")


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def test_int64_beyond_2_53_reads_as_pandas_does(tmp_path):
    path = tmp_path / "big.parquet"
    values = np.array([2**60 + 1, -(2**62) - 3, 3], dtype=np.int64)
    pd.DataFrame({"a": values, "y": [0, 1, 0]}).to_parquet(path)
    X, _ = read_parquet(path, "y")
    want = pd.read_parquet(path)["a"].to_numpy(dtype=np.float64)
    np.testing.assert_array_equal(X.compute()[:, 0], want)
    assert X.compute()[0, 0] == float(2**60)
    np.testing.assert_array_equal(next(iter_parquet(path, "y"))[0][:, 0], want)


# ---------------------------------------------------------------------------
# Row groups larger than the chunk budget
# ---------------------------------------------------------------------------


@pytest.fixture
def one_group(tmp_path):
    rng = np.random.default_rng(3)
    n = 1000
    frame = pd.DataFrame(
        {
            "rid": np.arange(n, dtype=np.int64),
            "f0": rng.normal(size=n),
            "f1": rng.integers(-5, 5, n),
            "label": pd.array(
                np.where(rng.random(n) < 0.1, None, np.array(["x", "z"])[rng.integers(0, 2, n)]),
                dtype=object,
            ),
        }
    )
    path = tmp_path / "one.parquet"
    frame.to_parquet(path, row_group_size=n)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    return path, frame


def test_oversize_row_group_becomes_slices_equal_to_pandas(one_group):
    path, frame = one_group
    budget = 8 * 4 * 96  # 96 rows of three features and a label
    X, y = read_parquet(path, "label", missing_label="keep", chunk_bytes=budget)
    assert len(X.chunks[0]) == 11 and max(X.chunks[0]) <= 96 and X.chunks[0] == y.chunks[0]
    np.testing.assert_array_equal(X.compute(), frame[["rid", "f0", "f1"]].to_numpy(float))
    assert y.compute().tolist() == [None if pd.isna(v) else v for v in frame["label"]]
    X, _ = read_parquet(
        path, "label", missing_label="keep", chunk_bytes=budget, split_row_groups=False
    )  # one file over budget is still cut
    assert len(X.chunks[0]) == 11


def test_oversize_row_group_with_filters_and_dropped_labels(one_group):
    path, frame = one_group
    keep = frame[(frame["f0"] > 0) & frame["label"].notna()]
    for filters in ([("f0", ">", 0)], pc.field("f0") > 0):
        X, y = read_parquet(
            path, "label", ["rid"], filters=filters, missing_label="drop", chunk_bytes=8 * 2 * 100
        )
        assert sum(X.chunks[0]) == len(keep) and max(X.chunks[0]) <= 100
        np.testing.assert_array_equal(X.compute()[:, 0], keep["rid"].to_numpy(float))
        assert y.compute().tolist() == keep["label"].tolist()
        chunks = list(
            iter_parquet(
                path, "label", ["rid"], filters=filters, missing_label="drop", batch_rows=64
            )
        )
        assert [len(c[1]) for c in chunks[:-1]] == [64] * (len(chunks) - 1)
        np.testing.assert_array_equal(
            np.concatenate([c[0] for c in chunks])[:, 0], keep["rid"].to_numpy(float)
        )


def test_iter_parquet_chunks_of_an_oversize_row_group(one_group):
    path, frame = one_group
    sizes = [
        len(y)
        for _, y in iter_parquet(path, "label", missing_label="keep", chunk_bytes=8 * 4 * 300)
    ]
    assert sizes == [300, 300, 300, 100]
    got = list(iter_parquet(path, "label", missing_label="keep", batch_rows=128))
    assert [len(y) for _, y in got] == [128] * 7 + [104]
    np.testing.assert_array_equal(
        np.concatenate([x for x, _ in got]), frame[["rid", "f0", "f1"]].to_numpy(float)
    )


def test_chunk_bytes_must_be_positive(one_group):
    path, _ = one_group
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="chunk_bytes must be a positive integer"):
            read_parquet(path, "label", chunk_bytes=bad)


_MEASURE = textwrap.dedent("""
    import resource, sys
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    import dask, dask.array, pyarrow.compute, pyarrow.dataset
    from dmargin.io._parquet import iter_parquet, read_parquet

    path, small, how, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    dask.config.set(scheduler="sync")

    def run(p):
        if how == "read":
            X, _ = read_parquet(p, "label", chunk_bytes=n)
            for i in range(len(X.chunks[0])):
                X.blocks[i].compute()
            return max(X.chunks[0])
        return max(len(y) for _, y in iter_parquet(p, "label", batch_rows=n))

    run(small)  # one-time costs (thread pools, kernels) before the baseline
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = run(path)
    print(rows, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
""")


@pytest.mark.slow
def test_one_huge_row_group_is_read_in_bounded_memory(tmp_path):
    """3M rows x 8 float64 features (183 MiB decoded) in one row group: each
    read_parquet task and iter_parquet(batch_rows=100_000) hold about one
    chunk plus one read batch (the peak RSS growth of a fresh process, over
    a fixed overhead), where reading the row group whole costs 600+ MiB."""
    n, a = 3_000_000, 8
    rng = np.random.default_rng(0)
    path, small = tmp_path / "huge.parquet", tmp_path / "small.parquet"
    table = pa.table({**{f"f{j}": rng.random(n) for j in range(a)}, "label": np.arange(n) % 3})
    pq.write_table(table, path, row_group_size=n)
    pq.write_table(table.slice(0, 1000), small)
    del table
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    overhead = 128 * 2**20  # pyarrow: a dictionary page, a data page and a buffer per column

    def measure(how, size):
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(path), str(small), how, str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows, growth = map(int, out.stdout.split())
        return rows, growth

    budget = 16 * 2**20
    rows, growth = measure("read", budget)
    assert rows * (a + 1) * 8 <= budget
    assert growth < 3 * budget + overhead, growth / 2**20
    batch = 100_000
    rows, growth = measure("iter", batch)
    assert rows == batch
    assert growth < 3 * batch * (a + 1) * 8 + overhead, growth / 2**20
