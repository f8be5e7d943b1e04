"""The synthetic classification data of the large-N benchmarks, written to Parquet.

``N x 50`` rows, two classes, two Gaussian clusters (sd 1) per class on 10
informative features, as ``make_classification`` without its random rotation,
but with centroids ``-/+ (0.5 + U[0, 1])`` per feature for class 0 / 1, so that
each informative feature separates the classes on its own; 40 N(0, 1) noise
features; columns shuffled by a fixed permutation (``layout``).  Row ``i`` has
the same values however the rows are batched (``make_batch``), so a file is
written row group by row group, never all rows in memory (``write_parquet``).

``cached_parquet`` writes the file once per N into a cache directory and reuses
it while its manifest (N, seed, row group, row count) says it is complete.

Used by ``bench_online_scale.py`` and ``bench_large.py``; imported as
``_harness`` is, with the benchmarks folder on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

A = 50
N_INFORMATIVE = 10
ROW_GROUP = 100_000
SEED = 0
#: Bumped whenever the generator's output changes, so that old caches are rewritten.
GENERATOR_VERSION = 1
GENERATOR = (
    "2 classes x 2 Gaussian clusters (sd 1), centroids -/+(0.5 + U[0,1]) on 10 "
    "informative features, 40 N(0,1) noise features, columns permuted (seed 0)"
)


def layout(seed=SEED):
    """Column permutation, informative columns and the four cluster centroids."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(A)
    informative = sorted(int(c) for c in np.flatnonzero(perm < N_INFORMATIVE))
    # Clusters 0, 1 are class 0, clusters 2, 3 class 1; on every informative
    # feature the two classes' centroids lie on opposite sides of 0 (each
    # feature separates the classes on its own, by 1 to 3 noise sd).
    magnitude = 0.5 + rng.random((2, N_INFORMATIVE))
    centroids = np.vstack([-magnitude, magnitude])
    return perm, informative, centroids


def make_batch(start, n, seed=SEED):
    """Rows ``start .. start + n - 1``: the same values however the rows are batched."""
    perm, _, centroids = layout(seed)
    rng = np.random.default_rng([seed, start])
    cluster = rng.integers(0, 4, n)
    X = rng.normal(size=(n, A))
    X[:, :N_INFORMATIVE] += centroids[cluster]
    return X[:, perm], cluster // 2  # column j is generated feature perm[j]


def write_parquet(path, n, row_group=ROW_GROUP, seed=SEED):
    """Write rows ``0 .. n - 1`` to ``path`` (columns ``f00 .. f49``, ``label``); its size in bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [f"f{j:02d}" for j in range(A)]
    schema = pa.schema([(c, pa.float64()) for c in names] + [("label", pa.int64())])
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for start in range(0, n, row_group):
            X, y = make_batch(start, min(row_group, n - start), seed)
            writer.write_table(
                pa.table({**{c: X[:, j] for j, c in enumerate(names)}, "label": y}, schema=schema),
                row_group_size=row_group,
            )
    return os.path.getsize(path)


def default_cache_dir() -> Path:
    """``<system temp dir>/dmargin_bench_data``."""
    return Path(tempfile.gettempdir()) / "dmargin_bench_data"


def _manifest(n, seed, row_group):
    return {
        "rows": int(n),
        "seed": int(seed),
        "row_group": int(row_group),
        "features": A,
        "informative": N_INFORMATIVE,
        "generator_version": GENERATOR_VERSION,
    }


def _complete(path: Path, manifest_path: Path, expected: dict) -> bool:
    """The file is there, its manifest matches, and its footer counts the rows."""
    if not (path.is_file() and manifest_path.is_file()):
        return False
    try:
        found = json.loads(manifest_path.read_text())
        if any(found.get(k) != v for k, v in expected.items()):
            return False
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(path).metadata
        return meta.num_rows == expected["rows"] and found.get("bytes") == path.stat().st_size
    except Exception:  # unreadable manifest or file: write it again
        return False


def cached_parquet(n, cache_dir=None, *, seed=SEED, row_group=ROW_GROUP, log=None) -> dict:
    """The Parquet file of ``n`` rows in ``cache_dir``, written first if missing or incomplete.

    The file is written under a temporary name in the same directory and renamed
    when complete; the manifest (``rows_<n>.json``: N, seed, row group, row count,
    bytes) is written the same way after it, so a file with a matching manifest is
    complete.  Returns ``{"path", "bytes", "written", "write_s", "manifest"}``.
    """
    import time

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    stem = f"rows_{n}_seed{seed}_rg{row_group}"
    path, manifest_path = cache_dir / f"{stem}.parquet", cache_dir / f"{stem}.json"
    expected = _manifest(n, seed, row_group)
    if _complete(path, manifest_path, expected):
        return {
            "path": str(path),
            "bytes": path.stat().st_size,
            "written": False,
            "write_s": 0.0,
            "manifest": json.loads(manifest_path.read_text()),
        }

    start = time.perf_counter()
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=f".{stem}.", suffix=".parquet.tmp")
    os.close(fd)
    try:
        size = write_parquet(tmp, n, row_group, seed)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    manifest = {**expected, "bytes": size}
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=f".{stem}.", suffix=".json.tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(manifest, fh, indent=2)
    os.replace(tmp, manifest_path)
    seconds = time.perf_counter() - start
    if log is not None:
        log(f"wrote {n} rows ({size / 2**20:.0f} MiB) to {path} in {seconds:.0f} s")
    return {
        "path": str(path),
        "bytes": size,
        "written": True,
        "write_s": round(seconds, 1),
        "manifest": manifest,
    }
