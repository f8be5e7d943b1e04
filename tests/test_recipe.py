"""The recipe for a new Relief variant (``docs/contributing/adding_an_estimator.md``): followed
in this file alone, then made public in three files.

A ReliefF whose neighbours weigh by their rank: the ``i``-th nearest of a
class counts ``1 / (i + 1)`` instead of ReliefF's ``1 / k``.  Its only code is a
per-anchor term and a subclass naming it; the engine, the execution modes,
sampled anchors, ``fit_cost`` and the scikit-learn API come with the subclass.
Nothing outside this file knows it.

Made public (the last section), the same variant is three files: its module, its
line in ``dmargin/_registry.py`` and its test.  The registry line exports it, puts
it on the API page and in its cost table, and enters it in the execution-mode
coverage and scikit-learn's checks.
"""

import filecmp
import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dmargin
from tests import reference as ref

K = 4


def rank_weighted_agg(dist, idx, z, ya, miss_prior, missing=False):
    """An anchor block's share: ReliefF's term with the neighbours of each class
    averaged with weights ``1 / (rank + 1)`` over those found.

    ``dist``, ``idx``: ``(anchors, classes, k)``, nearest first (``inf`` where a
    class has fewer rows); ``z``: their differences, ``(anchors, classes, k, A)``
    (NaN where a value is missing, with ``missing``).
    """
    found = np.isfinite(dist)[..., None] & ~np.isnan(z)
    rank = 1.0 / (1.0 + np.arange(dist.shape[-1]))[None, None, :, None] * found
    total = rank.sum(axis=2)
    mean = np.divide(
        (rank * np.where(found, z, 0.0)).sum(axis=2),
        total,
        out=np.zeros(total.shape[:2] + z.shape[-1:]),
        where=total > 0,
    )
    ya = np.asarray(ya)
    weight = miss_prior[ya].copy()  # (anchors, classes), zero on the own class
    weight[np.arange(len(ya)), ya] = -1.0
    return np.einsum("ac,acf->f", weight, mean)


class RankWeightedReliefF(dmargin.ReliefF):
    """ReliefF with the ``i``-th nearest neighbour of a class weighted ``1 / (i + 1)``."""

    _agg = staticmethod(rank_weighted_agg)


def brute_force(X, y, k, anchors=None):
    """The same score, one anchor at a time over every other row (numpy only)."""
    Xs = ref.minmax_scale(X)
    classes, codes = np.unique(y, return_inverse=True)
    priors = np.bincount(codes) / len(codes)
    visited = range(len(y)) if anchors is None else anchors
    W = np.zeros(X.shape[1])
    for a in visited:
        d = np.abs(Xs - Xs[a]).sum(axis=1)
        for c in range(len(classes)):
            members = [j for j in np.flatnonzero(codes == c) if j != a]
            nearest = sorted(members, key=lambda j: (d[j], j))[:k]
            if not nearest:
                continue
            w = 1.0 / (1.0 + np.arange(len(nearest)))
            mean = (w[:, None] * np.abs(Xs[nearest] - Xs[a])).sum(axis=0) / w.sum()
            if c == codes[a]:
                W -= mean
            else:
                W += priors[c] / (1.0 - priors[codes[a]]) * mean
    return W / len(visited)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.random((90, 6))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.2 * rng.random(90) > 0.9, "b", "a")
    y[:12] = "c"  # three classes, one small
    return X, y


def test_it_is_not_relieff(data):
    X, y = data
    ours = RankWeightedReliefF(n_neighbors=K).fit(X, y).feature_importances_
    theirs = dmargin.ReliefF(n_neighbors=K).fit(X, y).feature_importances_
    assert np.abs(ours - theirs).max() > 1e-3


def test_exact_equals_the_brute_force(data):
    X, y = data
    est = RankWeightedReliefF(n_neighbors=K).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, brute_force(X, y, K), rtol=0, atol=1e-10)


def test_sampled_anchors_equal_the_brute_force_over_them(data):
    X, y = data
    est = RankWeightedReliefF(n_neighbors=K, n_anchors=30, random_state=1).fit(X, y)
    assert est.anchor_indices_.size == 30
    np.testing.assert_allclose(
        est.feature_importances_, brute_force(X, y, K, est.anchor_indices_), rtol=0, atol=1e-10
    )


@pytest.mark.cluster
@pytest.mark.parametrize("n_anchors", [None, 30])
def test_a_two_process_cluster_equals_in_process(data, n_anchors, local_cluster):
    import dask.array as da
    from distributed import Client, get_task_stream

    X, y = data

    def make():
        return RankWeightedReliefF(n_neighbors=K, n_anchors=n_anchors, random_state=1)

    local = make().fit(X, y)
    Xd, yd = da.from_array(X, chunks=(30, -1)), da.from_array(y, chunks=30)
    with Client(local_cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        with get_task_stream(client) as stream:
            remote = make().fit(Xd, yd)
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
    ran = {t["worker"] for t in stream.data if str(t["key"]).find("dmargin-") >= 0}
    assert ran and ran <= workers  # the engine's tasks ran on the workers


def test_fit_cost_knows_it(data):
    X, _ = data
    cost = dmargin.fit_cost(RankWeightedReliefF(n_neighbors=K), *X.shape)
    assert cost == dmargin.fit_cost(dmargin.ReliefF(n_neighbors=K), *X.shape)


def test_pvalues_say_the_law_is_relieffs(data):
    X, y = data
    binary = y != "c"
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="other than ReliefF's"):
        est = RankWeightedReliefF(n_neighbors=K, pvalues=True).fit(X[binary], y[binary])
    assert not hasattr(est, "pvalues_")


@parametrize_with_checks([RankWeightedReliefF(n_neighbors=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- The variant made public: its module, its registry line, its test -------------------------

REPO = Path(__file__).resolve().parents[1]
#: What a contributor writes: the module and the test, whole, and one registry line.
VARIANT_MODULE = "dmargin/relief/_rank_weighted.py"
VARIANT_TEST = "tests/test_rank_weighted.py"
REGISTRY = "dmargin/_registry.py"
REGISTRY_LINE = '    Estimator("RankWeightedReliefF", "relief._rank_weighted", "relief"),\n'
#: The line it goes after (the registry's order is the API page's).
AFTER = '    Estimator("MuRelief", "relief._murelief", "relief", {"murelief": {}}),\n'

MODULE_TEXT = '''"""ReliefF with the neighbours of a class weighted by their rank."""

import numpy as np

from ._relief import ReliefF


def rank_weighted_agg(dist, idx, z, ya, miss_prior, missing=False):
    """An anchor block's share: ReliefF's term, the ``i``-th nearest of a class weighted
    ``1 / (i + 1)`` among those found."""
    found = np.isfinite(dist)[..., None] & ~np.isnan(z)
    rank = 1.0 / (1.0 + np.arange(dist.shape[-1]))[None, None, :, None] * found
    total = rank.sum(axis=2)
    mean = np.divide(
        (rank * np.where(found, z, 0.0)).sum(axis=2),
        total,
        out=np.zeros(total.shape[:2] + z.shape[-1:]),
        where=total > 0,
    )
    ya = np.asarray(ya)
    weight = miss_prior[ya].copy()
    weight[np.arange(len(ya)), ya] = -1.0
    return np.einsum("ac,acf->f", weight, mean)


class RankWeightedReliefF(ReliefF):
    __doc__ = "ReliefF with the i-th nearest neighbour of a class weighted 1 / (i + 1)." + (
        ReliefF.__doc__.split("\\n", 1)[1]  # its parameters and attributes are ReliefF's
    )

    _agg = staticmethod(rank_weighted_agg)
'''

TEST_TEXT = '''"""RankWeightedReliefF against its brute force (tests/test_recipe.py's)."""

import numpy as np

import dmargin
from tests.test_recipe import brute_force


def test_exact_equals_the_brute_force():
    rng = np.random.default_rng(5)
    X, y = rng.random((60, 5)), rng.integers(0, 3, 60)
    est = dmargin.RankWeightedReliefF(n_neighbors=4).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, brute_force(X, y, 4), atol=1e-10)
'''

#: What the registry feeds, asked of the copy of the package (printed as JSON).
PROBE = """
import json, runpy
import dmargin
from dmargin import cli
from tests import test_modes, test_sklearn

api = runpy.run_path("docs/conf.py")
page = api["expand_registry"](open("docs/api.rst").read())
print(json.dumps({
    "exported": dmargin.RankWeightedReliefF.__module__,
    "all": "RankWeightedReliefF" in dmargin.__all__,
    "modes": [p.id for p in test_modes.CASES if p.id.startswith("RankWeighted")],
    "sklearn": [type(e).__name__ for e in test_sklearn.ESTIMATORS].count("RankWeightedReliefF"),
    "api_page": page.count("   RankWeightedReliefF\\n"),
    "cost_table": page.count("``RankWeightedReliefF()``"),
    "cli": [m for m, (name, _) in cli.METHODS.items() if name == "RankWeightedReliefF"],
}))
"""
#: The suite's tests that read the registry, run on the copy with the variant in it.
REGISTRY_TESTS = [
    "tests/test_registry.py",
    "tests/test_docs.py::test_the_api_reference_lists_every_public_name",
    "tests/test_docs.py::test_every_estimator_parameter_is_documented",
    "tests/test_bad_input.py::test_public_lists_every_estimator",
    "tests/test_cli_methods.py::test_every_ranking_estimator_is_a_cli_method",
    "tests/test_cli_spark.py::test_the_spark_page_has_a_row_for_every_public_estimator",
]


def _copy_of_the_project(root):
    """dmargin/, tests/ and what the registry's readers read, under ``root`` (the
    compiled kernels' caches come along, with the sources' times)."""
    for folder in ("dmargin", "tests"):
        shutil.copytree(
            REPO / folder, root / folder, ignore=shutil.ignore_patterns(".pytest_cache")
        )
    (root / "docs").mkdir()
    for name in ("conf.py", "api.rst", "spark.md", "command_line.md"):
        shutil.copy2(REPO / "docs" / name, root / "docs" / name)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")


def _changed(root):
    """The files of ``root`` that differ from the project's, or are new."""
    changed = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_dir() or "__pycache__" in relative.parts or path.suffix in (".nbi", ".nbc"):
            continue
        original = REPO / relative
        if not original.exists() or not filecmp.cmp(path, original, shallow=False):
            changed.append(relative.as_posix())
    return changed


@pytest.mark.slow
def test_a_public_variant_is_three_files(tmp_path):
    _copy_of_the_project(tmp_path)
    (tmp_path / VARIANT_MODULE).write_text(MODULE_TEXT)
    (tmp_path / VARIANT_TEST).write_text(TEST_TEXT)
    registry = (tmp_path / REGISTRY).read_text()
    assert registry.count(AFTER) == 1
    (tmp_path / REGISTRY).write_text(registry.replace(AFTER, AFTER + REGISTRY_LINE))

    changed = _changed(tmp_path)
    assert changed == sorted([REGISTRY, VARIANT_MODULE, VARIANT_TEST])
    assert len(changed) <= 3

    env = {**os.environ, "PYTHONPATH": str(tmp_path), "OMP_NUM_THREADS": "1"}
    run = functools.partial(
        subprocess.run, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    probe = run([sys.executable, "-c", textwrap.dedent(PROBE)], timeout=600)
    assert probe.returncode == 0, probe.stderr[-3000:]
    seen = json.loads(probe.stdout.splitlines()[-1])
    assert seen["exported"] == "dmargin.relief._rank_weighted"  # the copy's, not this tree's
    assert seen["all"]
    assert seen["modes"] == ["RankWeightedReliefF"]  # threaded dask and a LocalCluster
    assert seen["sklearn"] == 1
    assert seen["api_page"] == 1 and seen["cost_table"] == 1
    assert seen["cli"] == []  # a --method is its registry line's choice

    tests = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not cluster"]
        + [VARIANT_TEST, *REGISTRY_TESTS],
        timeout=900,
    )
    assert tests.returncode == 0, tests.stdout[-5000:]
