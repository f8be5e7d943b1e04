"""The layering the package promises, checked on its source.

- dask and distributed are imported only by the dask adapter (``_dask.py``: "is
  this dask?", persist and compute; ``_cluster.py``: the wait on a cluster and the
  command line's ``Client``), ``engine/execution.py`` (where graphs run),
  ``io/_parquet.py`` (reading) and the Spark backend's scheduler, source and fit
  (``spark/``: dask graphs run on Spark) -- by an import statement, by name
  (``importlib.import_module``, ``__import__``) or from ``sys.modules``;
- no module imports another module's underscored name;
- the algorithm modules hold the papers' driver loops only: no numba;
- outside the engine, the engine is reached through its public names
  (``dmargin.engine``), never its submodules;
- a statistic's graph is laid out by the grid runner (``engine/grid.py``):
  no other module adds tile tasks or builds a :class:`Graph`;
- the engine's generic floors (merge, grid, the statistics) hold no function
  named after an algorithm: an algorithm's per-anchor terms live with it;
- no module is over 700 lines: a module that grows past that holds two things;
- every fit enters by one door (``_start.start_fit``), which alone prepares a
  fit's data;
- no import cycle, and ``_utils`` is a leaf.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dmargin"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
DASK_ALLOWED = {
    "_dask.py",
    "_cluster.py",
    "engine/execution.py",
    "io/_parquet.py",
    "spark/_scheduler.py",
    "spark/_source.py",
    "spark/_fit.py",
}


def _name(path):
    return path.relative_to(PACKAGE).as_posix()


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                yield node.module or "", alias.name, node.lineno, node.level


def _is_dask(name):
    return isinstance(name, str) and name.split(".")[0] in ("dask", "distributed")


def _dask_by_name(tree):
    """``(line, name)`` of each dask module reached without an import statement:
    ``importlib.import_module("dask.config")``, ``__import__("distributed")``,
    ``sys.modules["distributed"]`` or ``sys.modules.get("distributed")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name, func = node.args[0].value, node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            on_modules = isinstance(func, ast.Attribute) and ast.unparse(func.value).endswith(
                "modules"
            )
            if _is_dask(name) and (
                called in ("import_module", "__import__", "find_spec", "importorskip") or on_modules
            ):
                yield node.lineno, name
        elif (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value).endswith("modules")
            and isinstance(node.slice, ast.Constant)
            and _is_dask(node.slice.value)
        ):
            yield node.lineno, node.slice.value


def _dask_uses(source):
    tree = ast.parse(source)
    found = [
        f"line {item[2]}: {item[0]}"
        for item in _imports(tree)
        if _is_dask(item[0]) and (len(item) == 3 or item[3] == 0)
    ]
    return found + [f"line {line}: {name} (by name)" for line, name in _dask_by_name(tree)]


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_dask_is_imported_only_where_graphs_run(path):
    found = _dask_uses(path.read_text())
    if _name(path) not in DASK_ALLOWED:
        assert not found, f"{_name(path)} imports dask (use dmargin._dask): {found}"


@pytest.mark.parametrize(
    "line",
    [
        "import dask.config",
        "from distributed import Client",
        "importlib.import_module('dask.config')",
        "import_module('distributed')",
        "__import__('distributed')",
        "sys.modules.get('distributed')",
        "sys.modules['distributed.worker']",
        "importlib.util.find_spec('dask')",
    ],
)
def test_the_dask_rule_sees_every_form_of_import(line):
    assert _dask_uses(line), line
    assert not _dask_uses(line.replace("dask", "numpy").replace("distributed", "numpy"))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_imports_another_modules_private_name(path):
    tree = ast.parse(path.read_text())
    bad = [
        f"line {item[2]}: from {item[0]} import {item[1]}"
        for item in _imports(tree)
        if len(item) == 4
        and item[3] > 0
        and item[1].startswith("_")
        and not item[1].startswith("__")
    ]
    # Attribute access on an imported module: ``module._name``.
    modules = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
        for alias in node.names
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            bad.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert not bad, f"{_name(path)} reaches into another module: {bad}"


def _own_warnings(source):
    """Lines where a module raises a warning itself: ``warnings.warn``, ``warn_explicit``,
    an import of either from ``warnings``, or a ``stacklevel=`` of its own."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "warnings":
            bad += [
                f"line {node.lineno}: from warnings import {a.name}"
                for a in node.names
                if a.name in ("warn", "warn_explicit")
            ]
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if func in ("warnings.warn", "warnings.warn_explicit") or any(
                k.arg == "stacklevel" for k in node.keywords
            ):
                bad.append(f"line {node.lineno}: {func}(...)")
    return bad


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_every_warning_goes_through_the_one_helper(path):
    # dmargin._utils.warn points a warning at the user's line whatever lies between
    # (a wrapper, a Pipeline); a stacklevel of one's own points inside dmargin.
    if _name(path) == "_utils.py":
        return
    bad = _own_warnings(path.read_text())
    assert not bad, f"{_name(path)} warns by itself (use dmargin._utils.warn): {bad}"


def test_the_warning_rule_sees_every_form():
    for line in (
        "warnings.warn('x', UserWarning, stacklevel=2)",
        "warnings.warn('x')",
        "from warnings import warn",
        "warn('x', UserWarning, stacklevel=user_stacklevel())",
    ):
        assert _own_warnings(line), line
    assert not _own_warnings("warn('x', UserWarning)")


#: Outside the engine, only these may import numba (``demo.py``: numba's compile
#: events, to show what a first fit costs).
NUMBA_OUTSIDE_THE_ENGINE = {"demo.py"}
ALGORITHM_MODULES = [
    _name(p)
    for p in MODULES
    if "engine" not in p.relative_to(PACKAGE).parts
    and _name(p) not in NUMBA_OUTSIDE_THE_ENGINE | DASK_ALLOWED
]


@pytest.mark.parametrize("name", ALGORITHM_MODULES)
def test_algorithm_modules_hold_no_kernels_and_no_gathers(name):
    source = (PACKAGE / name).read_text()
    tree = ast.parse(source)
    assert not [i for i in _imports(tree) if i[0].split(".")[0] == "numba"], name
    calls = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("compute", "persist")
    ]
    assert not calls, f"{name} computes dask collections itself (lines {calls}): use _dask.gather"


OUTSIDE_THE_ENGINE = [p for p in MODULES if "engine" not in p.relative_to(PACKAGE).parts]


@pytest.mark.parametrize("path", OUTSIDE_THE_ENGINE, ids=_name)
def test_the_engine_is_reached_through_its_public_names(path):
    import dmargin.engine

    bad = []
    for item in _imports(ast.parse(path.read_text())):
        module = item[0]
        relative = len(item) == 4 and item[3] > 0
        # ``from .engine.x import``, ``from ..engine.x import``, ``import dmargin.engine.x``
        if (relative and module.startswith("engine.")) or module.startswith("dmargin.engine."):
            bad.append(f"line {item[2]}: {module}")
        elif (relative and module == "engine") or module == "dmargin.engine":
            if item[1] is not None and item[1] not in dmargin.engine.__all__:
                bad.append(f"line {item[2]}: {item[1]} is not in dmargin.engine.__all__")
    assert not bad, f"{_name(path)} reaches into the engine: {bad}"


ENGINE_FLOORS = [p for p in MODULES if p.parent == PACKAGE / "engine"]


@pytest.mark.parametrize("path", ENGINE_FLOORS, ids=_name)
def test_graphs_are_laid_out_by_the_grid_runner(path):
    if _name(path) in ("engine/grid.py", "engine/execution.py"):
        return
    tree = ast.parse(path.read_text())
    bad = [
        f"line {node.lineno}: {ast.unparse(node.func)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "Graph")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "tile")
        )
    ]
    bad += [
        f"line {node.lineno}: .dsk"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "dsk"
    ]
    assert not bad, f"{_name(path)} builds graph tasks by hand (use engine.grid): {bad}"


ALGORITHM_NAMES = ("relief", "surf", "stir", "immigrate", "im4e", "simba", "ldm", "boost", "sbs")


@pytest.mark.parametrize("path", ENGINE_FLOORS, ids=_name)
def test_the_engine_floors_hold_no_algorithm_named_function(path):
    # The kernels (``engine/kernels``) are per family by nature; the floors above them
    # serve any algorithm.
    tree = ast.parse(path.read_text())
    bad = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and any(a in node.name.lower() for a in ALGORITHM_NAMES)
    ]
    assert not bad, f"{_name(path)} holds an algorithm's own functions: {bad}"


MAX_LINES = 700


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_is_over_the_size_cap(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, (
        f"{_name(path)} has {lines} lines (> {MAX_LINES}): split it where it holds two things"
    )


def test_no_test_reads_beside_the_repository(tmp_path):
    # conftest's audit hook: a file beside the clone cannot be opened, existing or not.
    from tests.conftest import REPO

    with pytest.raises(PermissionError, match="outside the repository"):
        open(REPO.parent / "beside-the-clone.txt")  # (existing or not: refused first)
    (tmp_path / "ok.txt").write_text("fine")  # elsewhere: as usual
    assert (tmp_path / "ok.txt").read_text() == "fine"
    for path in (REPO / "tests").glob("*.py"):
        assert "parents[" + "2]" not in path.read_text(), path.name  # the folder above


def test_pair_modes_are_defined_once():
    # The symmetric kernels and the engine read one definition of ORDERED, CROSS, WITHIN.
    from dmargin.engine.kernels import modes, quad, surf

    for kernels in (quad, surf):
        assert (kernels.ORDERED, kernels.CROSS, kernels.WITHIN) == (
            modes.ORDERED,
            modes.CROSS,
            modes.WITHIN,
        )
    import re

    assignment = re.compile(r"^(ORDERED|CROSS|WITHIN)\b[^=\n]*=(?!=)", re.M)
    for path in Path(modes.__file__).parent.parent.rglob("*.py"):
        if path.name != "modes.py":
            assert not assignment.search(path.read_text()), path


def _import_graph():
    """dmargin's modules and the dmargin modules each imports, anywhere in it
    (function-level imports included: a lazy import still closes a cycle)."""
    root = Path(__file__).resolve().parents[1] / "dmargin"
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                edges.update(s for s in (subs or [target]) if s in modules and s != name)
        graph[name] = edges
    return graph


def test_no_import_cycle():
    graph, state, cycles = _import_graph(), {}, []

    def visit(module, stack):
        state[module] = "open"
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                cycles.append(" -> ".join(stack[stack.index(other) :] + [module, other]))
            elif other not in state:
                visit(other, stack + [module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not cycles, cycles


def test_utils_is_a_leaf():
    assert _import_graph()["dmargin._utils"] == set()


def test_no_test_asserts_a_wall_clock_bound():
    # Speed lives in benchmarks: a stopwatch in a test fails on a loaded machine.  A hang
    # is caught by a timeout (pytest-timeout, subprocess, join) and an event asserted.
    import re

    stopwatch = re.compile(
        r"assert[^\n]*((perf_counter|monotonic|time\.time)\(\)\s*-|"
        r"\belapsed\s*<)"
    )
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        for line in path.read_text().splitlines():
            assert not stopwatch.search(line), f"{path.name}: {line.strip()}"


#: Where rows are checked that are not a fit's data: OnlineIRelief's reference rows.
CHECKED_ELSEWHERE = {"irelief/_online.py": 1}


def test_every_fit_enters_by_the_one_door():
    """Only ``_start.py`` prepares a fit's data (``prepare_training_data``) and checks
    it (``check_X_y``); what an estimator takes it declares on its class."""
    calls = {}
    for path in MODULES:
        if _name(path) in ("_start.py", "io/_training.py", "_validation.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("prepare_training_data", "check_X_y")
            ):
                calls.setdefault(_name(path), []).append(f"line {node.lineno}: {node.func.id}")
    extra = {
        name: found
        for name, found in calls.items()
        if len(found) > CHECKED_ELSEWHERE.get(name, 0)
        or any("prepare_training_data" in f for f in found)
    }
    assert not extra, f"fit data prepared outside dmargin._start.start_fit: {extra}"


# ---------------------------------------------------------------------------
# Partials by name
# ---------------------------------------------------------------------------

#: What the engine and the families call a tile's partial, a merge of partials or the
#: sums a statistic returns (``P`` pass 2's neighbour sums, ``G`` STIR's graph pass,
#: ``moments`` pass 1's or STIR's difference moments, ``graph`` STIR's graph sums,
#: ``coef`` IMMIGRATE's pair coefficients, ``thr`` the thresholds, ...).
PARTIAL_NAMES = {
    "P",
    "G",
    "M",
    "coef",
    "coefs",
    "graph",
    "merged",
    "moments",
    "partial",
    "partials",
    "previous",
    "shares",
    "thr",
    "thresholds",
}
#: Calls that return partials or a statistic's sums: whatever a variable bound to
#: one of them is named, it is a partial too.
PARTIAL_PRODUCERS = {
    "anchor_partials",
    "compact_threshold_statistic",
    "graph_from_sums",
    "graph_pairs",
    "graph_row_sums",
    "knn_statistic",
    "knn_target_statistic",
    "lse_statistic",
    "moment_total",
    "moments_pairs",
    "pair_graph_sums",
    "pair_moments",
    "qlse_pairs",
    "quad_statistic",
    "relieff_stir_agg",
    "sample_graph_sums",
    "sample_moments",
    "score_pairs",
    "sigma_pairs",
    "stir_finish",
    "surf_stir_agg",
    "threshold_statistic",
}


def _bound_to_producers(tree):
    """Names assigned (or unpacked) from a call of a :data:`PARTIAL_PRODUCERS` function,
    also through another call (``np.asarray(knn_statistic(...))``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            called = {
                call.func.attr
                if isinstance(call.func, ast.Attribute)
                else getattr(call.func, "id", "")
                for call in ast.walk(node.value)
                if isinstance(call, ast.Call)
            }
            if called & PARTIAL_PRODUCERS:
                for target in node.targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            names.add(name.id)
    return names


def _positional(index):
    """Whether a subscript's index holds a number: ``[7]``, ``[:, 0]``, ``[1:9]``, ``[3 * s]``."""
    return any(
        isinstance(n, ast.Constant) and type(n.value) is int and not isinstance(n.value, bool)
        for n in ast.walk(index)
    )


@pytest.mark.parametrize(
    "path", [p for p in MODULES if "kernels" not in p.relative_to(PACKAGE).parts], ids=_name
)
def test_no_positional_index_into_a_partial_outside_its_kernel_module(path):
    """A tile's partial, a merge's and a statistic's sums are read by the names their
    kernel module (``engine/kernels/``) or their producer defines next to them --
    named tuples, named columns (:func:`dmargin.engine.kernels.surf.moment_columns`,
    ``NEAR``/``FAR``) -- never by position: ``graph[7]``, ``moments[:, 0]``,
    ``total[1:9]`` break silently when a kernel's layout changes.  Caught: a
    subscript holding a number of a variable named as a partial
    (:data:`PARTIAL_NAMES`) or bound to a call of a producer
    (:data:`PARTIAL_PRODUCERS`); a column count in a slice (``P[..., :a]``) is a
    name, and shapes (``P.shape[-1]``) are not partials."""
    tree = ast.parse(path.read_text())
    partials = PARTIAL_NAMES | _bound_to_producers(tree)
    bad = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in partials
        and _positional(node.slice)
    ]
    assert not bad, f"{_name(path)} reads partials by position: {bad}"


#: The private declarations one ``Capabilities`` object replaced: no class declares them
#: and no module reads them.
RETIRED_DECLARATIONS = {
    "_allow_nan",
    "_targets",
    "_target_rule",
    "_binary",
    "_distances",
    "_engine_rows",
    "_keep_float32",
    "_compact_rows",
    "_one_pass",
}


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_capabilities_are_read_by_the_door_alone(path):
    """An estimator declares what it takes in one ``Capabilities`` (``_capabilities``);
    only ``_capabilities.py`` reads that attribute (the door, the tags and the Spark
    reader call ``capabilities(estimator)``), and no private capability attribute is
    declared or read anywhere, as an attribute or by its name in a string (``getattr``)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        read = None
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            read = node.attr
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            read = node.args[1].value
        elif isinstance(node, ast.Constant) and node.value in RETIRED_DECLARATIONS:
            read = node.value  # declared(est, "_allow_nan"), a table of names
        if read in RETIRED_DECLARATIONS or (
            read == "_capabilities" and _name(path) != "_capabilities.py"
        ):
            bad.append(f"line {node.lineno}: reads {read}")
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = (
                    [t for t in item.targets if isinstance(t, ast.Name)]
                    if isinstance(item, ast.Assign)
                    else []
                )
                named = [t.id for t in targets] + (
                    [item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
                )
                bad += [
                    f"line {item.lineno}: {node.name} declares {name}"
                    for name in named
                    if name in RETIRED_DECLARATIONS
                ]
    assert not bad, f"{_name(path)}: a capability outside its one object: {bad}"
