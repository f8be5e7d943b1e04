"""Every task key comes from everything the task computes.

A distributed scheduler hands a graph's task the result of any task it
still holds under the same key: two fits on one client (one after another,
or at once from threads) that build equal keys for different work silently
share results.  The audit here records every graph the engine builds while
the public estimators fit dask input, then re-runs each graph-building call
with its arguments as recorded and with one argument changed at a time --
the arguments enumerated from the function's signature, so that an argument
added later is changed too -- and asserts:

- equal arguments, equal keys (results may be reused, correctly);
- no key of one run names a different task in the other: a task whose
  function or any argument differs (arrays by value, other tasks by key) has
  a key of its own, so every task that reads a changed argument, directly or
  through another task, gets a new key.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import sys
from collections import defaultdict

import cloudpickle
import dask
import dask.array as da
import numpy as np
import pytest

import dmargin
from dmargin.engine import blocks, execution, features, neighbours, quadratic, sampling, thresholds
from dmargin.engine.execution import Graph, Rows

from .test_modes import CASES, on_dask

# ---------------------------------------------------------------------------
# What builds graphs
# ---------------------------------------------------------------------------


def _builders():
    """Public engine functions that build a :class:`Graph` (or call one that does)."""
    out = {}
    for module in (execution, neighbours, thresholds, quadratic, blocks, features, sampling):
        for name, fn in vars(module).items():
            if (
                inspect.isfunction(fn)
                and not name.startswith("_")
                and fn.__module__ == module.__name__
            ):
                source = inspect.getsource(fn)
                if (
                    "Graph(" in source
                    or "grid.graph(" in source
                    or any(
                        f"{other}(" in source for other in ("column_summary", "WeightedHistograms")
                    )
                ):
                    out[name] = fn
    return out


BUILDERS = _builders()
#: ``counts`` is one :class:`WeightedHistograms` round: audited as that class.
AUDITED = sorted(set(BUILDERS) - {"counts"}) + ["WeightedHistograms"]


def histogram_rounds(binned, class_weight, replay, features, stump):
    """:class:`WeightedHistograms` as a fit uses it: a first round, then a round
    after ``stump`` (the parameters of its constructor and of ``histogram``)."""
    h = blocks.WeightedHistograms(binned, class_weight, replay)
    h.histogram(features)
    return h.histogram(features, stump)


def _snapshot(value):
    """A copy of what a call read, safe from later in-place updates."""
    if isinstance(value, (np.ndarray, np.random.Generator)):
        return copy.deepcopy(value)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_snapshot(v) for v in value)
    return value


class Recorder:
    """The graph-building calls of a fit, as ``(name, fn, BoundArguments)``."""

    def __init__(self):
        self.calls = []

    def wrap(self, name, fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for k, v in bound.arguments.items():
                bound.arguments[k] = _snapshot(v)
            self.calls.append((name, fn, bound))
            return fn(*args, **kwargs)

        return wrapper

    def install(self, monkeypatch):
        """Replace each builder wherever a ``dmargin`` module holds it."""
        targets = {id(fn): self.wrap(name, fn) for name, fn in BUILDERS.items()}
        for modname, module in list(sys.modules.items()):
            if modname == "dmargin" or modname.startswith("dmargin."):
                for attr, value in list(vars(module).items()):
                    if inspect.isfunction(value) and id(value) in targets:
                        monkeypatch.setattr(module, attr, targets[id(value)])
        cls = blocks.WeightedHistograms
        init, histogram = cls.__init__, cls.histogram
        recorder = self

        def record_init(h, binned, class_weight, replay=()):
            h._audit = (
                binned,
                _snapshot(np.asarray(class_weight, dtype=np.float64)),
                tuple(replay),
            )
            init(h, binned, class_weight, replay)

        def record_histogram(h, features, stump=None):
            if stump is not None and getattr(h, "_audit", None) is not None:
                bound = inspect.signature(histogram_rounds).bind(
                    *h._audit, _snapshot(np.asarray(features)), _snapshot(stump)
                )
                recorder.calls.append(("WeightedHistograms", histogram_rounds, bound))
                h._audit = None
            return histogram(h, features, stump)

        monkeypatch.setattr(cls, "__init__", record_init)
        monkeypatch.setattr(cls, "histogram", record_histogram)


def graphs_of(fn, bound, replay=None):
    """Every graph ``fn(*bound)`` builds, merged as ``{key: task}``, and the
    values of its computes.

    ``replay``: the values of a run with other arguments, handed back in
    order instead of computing (the graphs are only built: a changed
    argument need not be one the kernels can run on).
    """
    graphs, values = [], []
    compute = Graph.compute

    def recording(self, key, **kw):
        graphs.append(dict(self.dsk))
        if replay is not None:
            if len(graphs) > len(replay):
                raise _Replayed
            return replay[len(graphs) - 1]
        values.append(compute(self, key, **kw))
        return values[-1]

    Graph.compute = recording
    bound = copy.copy(bound)  # each run draws from its own copy of a generator
    bound.arguments = {
        k: copy.deepcopy(v) if isinstance(v, np.random.Generator) else v
        for k, v in bound.arguments.items()
    }
    try:
        fn(*bound.args, **bound.kwargs)
    except _Replayed:
        pass
    finally:
        Graph.compute = compute
    merged = {}
    for g in graphs:
        merged.update(g)
    return merged, values


class _Replayed(Exception):
    """A changed call that builds more graphs than the call it replays."""


# ---------------------------------------------------------------------------
# Changing one argument
# ---------------------------------------------------------------------------


def _add(block, value):
    return block + value


def _swap_codes(block, n_classes):
    block = block.copy()
    if block.size:
        block[0] = (block[0] + 1) % max(n_classes, 2)
    return block


def variants(value, depth=0):
    """Copies of ``value`` each changed in one place, of the same type and
    shape (so that the call stays valid where it can)."""
    if depth > 3:
        return []
    if value is None or isinstance(value, str):
        return []
    if isinstance(value, (bool, np.bool_)):
        return [not value]
    if isinstance(value, (int, np.integer)):
        return [value + 1]
    if isinstance(value, (float, np.floating)):
        return [float(value) * 1.25 + 0.5]
    if isinstance(value, np.ndarray):
        if value.size == 0 or value.dtype == object:
            return []
        out = value.copy()
        flat = out.reshape(-1)
        if out.dtype == np.bool_:
            flat[0] = not flat[0]
        elif out.dtype.kind in "iu":
            other = flat[flat != flat[0]]
            flat[0] = other[0] if other.size else flat[0] + 1
        else:
            flat[0] = flat[0] * 1.25 + 0.5 if np.isfinite(flat[0]) else 0.5
        return [out]
    if isinstance(value, np.random.Generator):
        return [np.random.default_rng(12345)]
    if isinstance(value, da.Array):
        return [value.map_blocks(_add, 0.5, dtype=value.dtype)]
    if isinstance(value, Rows):
        if not value.on_dask:
            return []
        out = [dataclasses.replace(value, X=value.X.map_blocks(_add, 1, dtype=value.X.dtype))]
        if value.codes is not None:
            out.append(
                dataclasses.replace(
                    value,
                    codes=value.codes.map_blocks(
                        _swap_codes, value.n_classes, dtype=value.codes.dtype
                    ),
                )
            )
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = []
        for f in dataclasses.fields(value):
            for v in variants(getattr(value, f.name), depth + 1)[:1]:
                out.append(dataclasses.replace(value, **{f.name: v}))
        return out
    if isinstance(value, (tuple, list)):
        out = []
        for i, item in enumerate(value):
            for v in variants(item, depth + 1)[:1]:
                items = list(value)
                items[i] = v
                out.append(type(value)(*items) if hasattr(value, "_fields") else type(value)(items))
        return out
    if callable(value) and not isinstance(value, type):

        def changed(*args, **kwargs):  # same values, another function
            return value(*args, **kwargs)

        return [changed]
    return []


# ---------------------------------------------------------------------------
# Comparing tasks
# ---------------------------------------------------------------------------


def same(a, b):
    """Whether two task entries compute the same thing (keys by key)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype == object:
            return all(same(u, v) for u, v in zip(a.ravel(), b.ravel()))
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(u, v) for u, v in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, da.Array):
        return a.name == b.name
    if callable(a):
        try:
            return cloudpickle.dumps(a) == cloudpickle.dumps(b)
        except Exception:
            return False
    try:
        return bool(a == b)
    except Exception:
        return cloudpickle.dumps(a) == cloudpickle.dumps(b)


def collisions(g1, g2):
    """Keys present in both graphs that name different tasks."""
    return [k for k in g1.keys() & g2.keys() if not same(g1[k], g2[k])]


# ---------------------------------------------------------------------------
# The fits whose graph-building calls are audited
# ---------------------------------------------------------------------------

_EXTRA = [
    (lambda: dmargin.ReliefF(n_neighbors=4, n_anchors=40, random_state=0), "blobs_multiclass"),
    (
        lambda: dmargin.ReliefF(n_neighbors=4, n_anchors=40, random_state=1, pvalues=True),
        "blobs_binary",
    ),
    (lambda: dmargin.IRelief(max_iter=3, n_anchors=40, random_state=0), "blobs_binary"),
    (lambda: dmargin.MultiSURF(pvalues=True), "blobs_binary"),
    (lambda: dmargin.MultiSURF(n_anchors=40, pvalues=True, random_state=0), "blobs_binary"),
    (lambda: dmargin.RReliefF(n_neighbors=6, n_anchors=40, random_state=0), "blobs_regression"),
    (lambda: dmargin.Immigrate(max_iter=3, n_anchors=40, random_state=0), "blobs_binary"),
    (lambda: dmargin.IM4E(max_iter=3, n_anchors=40, random_state=0), "blobs_binary"),
    (
        lambda: dmargin.LDMRFE(
            n_features_to_select=2, step=2, kernel="linear", solver="newton", random_state=0
        ),
        "blobs_binary",
    ),
    (
        lambda: dmargin.SVMRFE(
            n_features_to_select=2, step=2, kernel="linear", solver="newton", random_state=0
        ),
        "blobs_binary",
    ),
    (
        lambda: dmargin.OnlineIRelief(n_passes=1, discrete_threshold=10, random_state=0),
        "blobs_binary",
    ),
    (lambda: dmargin.ReliefF(n_neighbors=12), "blobs_regression"),  # a second pass
]


#: Genotype-like rows stay bytes in-process (the compact SURF path): numpy input.
_COMPACT = [
    lambda: dmargin.MultiSURF(pvalues=True),
    lambda: dmargin.MultiSURFstar(n_anchors=40, random_state=0),
]


def _genotypes(n=90, a=7, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, a)).astype(np.uint8)
    return X, (X[:, 0] + X[:, 1] + rng.integers(0, 2, n) > 2).astype(np.int64)


def _fits():
    for p in CASES:
        make, _, (dataset, kind), _ = p.values
        yield p.id, make, dataset, kind
    for i, (make, dataset) in enumerate(_EXTRA):
        yield f"extra-{i}", make, dataset, "array"
    for i, make in enumerate(_COMPACT):
        yield f"compact-{i}", make, "genotypes", "numpy"


@pytest.fixture(scope="module")
def recorded(request):
    """The graph-building calls of every fit, grouped by builder (first few)."""
    mp = pytest.MonkeyPatch()
    recorder = Recorder()
    recorder.install(mp)
    # STIR's p-values on any data (tests/conftest.py's stir_everywhere): their keys too.
    for module in (dmargin.relief._relief, dmargin.surf._surf):
        mp.setattr(module, "uncalibrated", lambda *args, **kwargs: None)
    try:
        with dask.config.set(scheduler="threads"):
            for _, make, dataset, kind in _fits():
                X, y = _genotypes() if kind == "numpy" else on_dask(request, dataset, kind)
                est = make().fit(X, y)
                assert kind != "numpy" or est.compact_dtype_ == np.uint8
                if hasattr(est, "predict") and not isinstance(est, dmargin.TuRF):
                    est.predict(X)
                    # and new rows from the driver
                    est.predict(X.head(5) if hasattr(X, "head") else X[:5].compute())
    finally:
        mp.undo()
    by_builder = defaultdict(list)
    for name, fn, bound in recorder.calls:
        # One call per distinct set of given (non-None) arguments.
        shape = frozenset(k for k, v in bound.arguments.items() if v is not None)
        if all(s != shape for s, _, _ in by_builder[name]):
            by_builder[name].append((shape, fn, bound))
    return by_builder


def test_every_builder_is_exercised(recorded):
    """The fits above reach every graph-building function of the engine."""
    missing = set(AUDITED) - set(recorded)
    assert not missing, f"no fit calls {sorted(missing)}: add a fit that does"


def _audit(fn, bound):
    """``(problems, changed)`` for one recorded call."""
    problems, changed = [], 0
    with dask.config.set({"scheduler": "threads", "tokenize.ensure-deterministic": True}):
        base, values = graphs_of(fn, bound)
        again, _ = graphs_of(fn, bound)
        if base.keys() != again.keys():
            problems.append("equal arguments gave different keys")
        for name in bound.arguments:
            for i, value in enumerate(variants(bound.arguments[name])):
                other = copy.copy(bound)
                other.arguments = dict(bound.arguments)
                other.arguments[name] = value
                try:
                    graph, _ = graphs_of(fn, other, replay=values)
                except Exception:  # the changed value is not valid for this call
                    continue
                bad = collisions(base, graph)
                if bad:
                    problems.append(
                        f"{name} (variant {i}): {len(bad)} keys shared by different "
                        f"tasks, e.g. {bad[0]}"
                    )
                changed += base.keys() != graph.keys()
    return problems, changed


@pytest.mark.slow
@pytest.mark.parametrize("builder", AUDITED)
def test_keys_come_from_everything_a_task_computes(recorded, builder):
    calls = recorded.get(builder)
    if not calls:
        pytest.fail(f"no fit calls {builder}")
    problems, changed = [], 0
    for _, fn, bound in calls:
        p, c = _audit(fn, bound)
        problems += p
        changed += c
    assert not problems, f"{builder}: " + "; ".join(problems)
    assert changed, f"{builder}: no changed argument changed any key"


# ---------------------------------------------------------------------------
# The Parquet readers' tasks
# ---------------------------------------------------------------------------


def test_parquet_block_keys_follow_the_file_and_the_reader(tmp_path):
    """A block's key names everything its task reads: the same file read the
    same way, the same keys; a file re-written in place, or other columns,
    other keys."""
    import os

    import pandas as pd

    path = tmp_path / "rows.parquet"
    frame = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    frame.to_parquet(path)
    X1, y1 = dmargin.read_parquet(path, label="y")
    X2, _ = dmargin.read_parquet(path, label="y")
    assert X1.name == X2.name and set(X1.dask) == set(X2.dask)
    Xa, _ = dmargin.read_parquet(path, label="y", features=["a"])
    assert not set(Xa.dask) & set(X1.dask)
    stat = os.stat(path)
    frame.assign(a=frame["a"] * 10).to_parquet(path)  # same size, new values
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    X3, _ = dmargin.read_parquet(path, label="y")
    assert not set(X3.dask) & set(X1.dask)
    new = frame.assign(a=frame["a"] * 10)[["a", "b"]].to_numpy()
    np.testing.assert_array_equal(np.sort(X3.compute(), axis=None), np.sort(new, axis=None))
