"""A Spark output directory, end to end, as a new user meets it.

String hive partition key (``part=a/``), several files per partition,
``_SUCCESS`` and ``.crc`` files, rows without a label: the CLI and the Python
API, in-process and on a two-worker cluster, give the same ranking with the
real column names, and the partition key is never a feature.
"""

import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin.cli import main

pytestmark = pytest.mark.cluster

FEATURES = ["age", "dose", "marker_a", "marker_b", "noise"]


@pytest.fixture(scope="module")
def spark_dir(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 240
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "age": rng.normal(50, 10, n),
            "dose": rng.normal(size=n) + 1.5 * y,  # informative
            "marker_a": rng.normal(size=n) - 1.0 * y,  # informative
            "marker_b": rng.normal(size=n),
            "noise": rng.uniform(size=n),
            "label": np.where(y == 1, "case", "control").astype(object),
        }
    )
    frame.loc[[3, 77, 150], "label"] = None  # rows Spark wrote without a label
    root = tmp_path_factory.mktemp("spark") / "out.parquet"
    for part, rows in (("a", slice(0, 130)), ("b", slice(130, n))):
        chunk = frame.iloc[rows]
        folder = root / f"part={part}"
        folder.mkdir(parents=True)
        for i, piece in enumerate(np.array_split(np.arange(len(chunk)), 3)):
            name = f"part-0000{i}-4f2a.c000.snappy.parquet"
            chunk.iloc[piece].to_parquet(folder / name, index=False, row_group_size=25)
            (folder / f".{name}.crc").write_bytes(b"\x00crc")
    (root / "_SUCCESS").write_bytes(b"")
    return root, frame.dropna(subset=["label"])


def _cli_ranking(capsys, tmp_path, root, *extra):
    out = tmp_path / f"ranking{len(extra)}.csv"
    code = main(
        [
            "select",
            str(root),
            "--label",
            "label",
            "--method",
            "relieff",
            "--missing-label",
            "drop",
            "--out",
            str(out),
            "-q",
            *extra,
        ]
    )
    assert code == 0, capsys.readouterr().err
    return pd.read_csv(out)


def test_spark_directory_same_ranking_everywhere_with_real_names(
    spark_dir, local_cluster, capsys, tmp_path
):
    from distributed import Client

    root, clean = spark_dir
    expected = dmargin.ReliefF().fit(clean[FEATURES], clean["label"])

    X, y = dmargin.read_parquet(root, "label", missing_label="drop", as_frame=True)
    assert list(X.columns) == FEATURES  # no 'part'
    in_process = dmargin.ReliefF().fit(X, y)
    with Client(local_cluster) as client:
        workers = set(client.scheduler_info(n_workers=-1)["workers"])
        from distributed import get_task_stream

        with get_task_stream(client) as stream:
            on_cluster = dmargin.ReliefF().fit(X, y)
        assert {t["worker"] for t in stream.data} == workers
    for est in (in_process, on_cluster):
        assert list(est.feature_names_in_) == FEATURES
        np.testing.assert_allclose(
            est.feature_importances_, expected.feature_importances_, atol=1e-12
        )

    table = _cli_ranking(capsys, tmp_path, root)
    remote = _cli_ranking(capsys, tmp_path, root, "--scheduler", local_cluster.scheduler_address)
    order = [FEATURES[j] for j in np.argsort(-expected.feature_importances_, kind="stable")]
    assert table["feature"].tolist() == order == remote["feature"].tolist()
    assert "part" not in table["feature"].tolist()
    np.testing.assert_allclose(table["score"], remote["score"], atol=1e-12)
    assert set(order[:2]) == {"dose", "marker_a"}


def test_read_parquet_arrays_keep_the_schema_names(spark_dir, local_cluster):
    """The arrays read_parquet returns by default carry the schema's names to the
    fitted estimator, in-process and on a cluster; an array made from them does not."""
    from distributed import Client

    root, clean = spark_dir
    X, y = dmargin.read_parquet(root, "label", missing_label="drop")
    assert list(X.feature_names) == FEATURES
    expected = dmargin.IRelief(n_features_to_select=2).fit(clean[FEATURES], clean["label"])
    in_process = dmargin.IRelief(n_features_to_select=2).fit(X, y)
    with Client(local_cluster):
        on_cluster = dmargin.IRelief(n_features_to_select=2).fit(X, y)
    for est in (in_process, on_cluster):
        assert list(est.feature_names_in_) == FEATURES
        assert list(est.get_feature_names_out()) == list(expected.get_feature_names_out())
    assert set(expected.get_feature_names_out()) == {"dose", "marker_a"}
    sliced = dmargin.IRelief(n_features_to_select=2).fit(X[:, :4], y)
    assert not hasattr(sliced, "feature_names_in_")
    assert list(sliced.get_feature_names_out()) == ["x1", "x2"]
