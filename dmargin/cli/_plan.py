"""``dmargin select``'s checks before anything is read, and the fit's estimated cost.

:func:`check_command_line` turns what the user typed into a plan (the estimator with
its parameters checked, the columns, the result files, the scheduler address) or
a :class:`~dmargin.cli._io.UserError`; :func:`cost_lines` says what the fit will
cost and, when it is slow, names faster settings (and refuses a fit over
``ASK_SECONDS`` without ``--yes``).
"""

from __future__ import annotations

import os
from pathlib import Path

from .._cost import fit_cost, format_seconds
from ._io import (
    UserError,
    check_spark_data,
    check_target,
    is_remote,
    plot_format,
)
from ._parser import (
    ADVICE_SECONDS,
    ASK_SECONDS,
    DEFAULT_METHOD,
    METHODS,
    MIN_ANCHORS,
    SLOW_SECONDS,
    TUNING,
    WITH_INTERACTIONS,
    build_estimator,
    seeded_keys,
    settable,
    takers,
)
from ._scheduler import scheduler_address

_LABELS = {"out": "--out", "interactions": "the interactions file of --out", "plot": "--plot"}


def _flat(lists):
    return [name for names in lists or () for name in names]


def _check_columns(args):
    """``--features`` / ``--exclude`` as lists; what can be said without the data."""
    features, exclude = _flat(args.features), _flat(args.exclude)
    if args.features is not None and args.exclude is not None:
        raise UserError(
            "--features and --exclude are both given; list the features to use "
            "with --features, or the columns to leave out with --exclude."
        )
    if args.features is not None and not features:
        raise UserError("--features names no column; give COL,COL,... or leave it out.")
    if args.label in features:
        raise UserError(
            f"--features lists the label column {args.label!r}; a column is "
            "either the label or a feature, take it out of --features."
        )
    twice = sorted({f for f in features if features.count(f) > 1})
    if twice:
        raise UserError(
            f"--features lists {', '.join(map(repr, twice))} more than once; "
            "name each feature once."
        )
    return features or None, [c for c in exclude if c != args.label]


def _round_down(m):
    """``m`` to two significant digits, rounded down: 2437 -> 2400."""
    step = 10 ** max(0, len(str(m)) - 2)
    return m // step * step


def _fitting_anchors(est, n_rows, n_features, seconds=ADVICE_SECONDS):
    """``(m, FitCost)``: the most anchors whose fit is estimated within ``seconds``, or
    None (the method samples no anchors, has no estimate, or even few anchors take
    longer)."""
    from sklearn.base import clone

    key = settable(est).get("n_anchors")
    if key is None or n_rows - 1 < MIN_ANCHORS:
        return None

    def cost(m):
        return fit_cost(clone(est).set_params(**{key: m}), n_rows, n_features)

    low, high = MIN_ANCHORS, n_rows - 1
    first = cost(low)
    if first is None or first.seconds > seconds:
        return None
    while low < high:  # the estimate grows with m
        mid = (low + high + 1) // 2
        if cost(mid).seconds <= seconds:
            low = mid
        else:
            high = mid - 1
    m = max(MIN_ANCHORS, _round_down(low))
    return m, cost(m)


def _faster(est, n_rows, n_features):
    """``[(options, FitCost)]``: settings estimated to fit in about ``ADVICE_SECONDS``,
    the same method with fewer anchors first."""
    faster = []
    same = _fitting_anchors(est, n_rows, n_features)
    if same is not None:
        faster.append((f"--anchors {same[0]}", same[1]))
    if type(est).__name__ == "IRelief":
        name, params = METHODS["online-irelief"]
        other = fit_cost(build_estimator(name, params), n_rows, n_features)
        if other is not None and other.seconds <= ADVICE_SECONDS:
            faster.append(("--method online-irelief", other))
    if same is None and type(est).__name__ != "ReliefF":  # no anchors here: ReliefF's
        name, params = METHODS["relieff"]
        relieff = _fitting_anchors(build_estimator(name, params), n_rows, n_features)
        if relieff is not None:
            faster.append((f"--method relieff --anchors {relieff[0]}", relieff[1]))
    return faster


def cost_lines(est, n_rows, n_features, yes=False):
    """The fit's estimated cost and, when it is slow, the faster settings with theirs.

    Raises
    ------
    UserError
        The estimate is over ``ASK_SECONDS`` and ``yes`` is false: the message names
        the faster settings and ``--yes``.
    """
    cost = fit_cost(est, n_rows, n_features)
    if cost is None:
        return []
    lines = [f"estimated {cost} on this project's 2-core reference machine"]
    if cost.seconds <= SLOW_SECONDS:
        return lines
    faster = _faster(est, n_rows, n_features)
    if cost.seconds > ASK_SECONDS and not yes:
        if faster:
            options, other = faster[0]
            advice = (
                f"{options} would take {other}: pass {options}, or --yes to start this fit anyway."
            )
        else:
            advice = "pass --yes to start it anyway, or fit a sample of the rows."
        raise UserError(
            f"this fit of {type(est).__name__} on {n_rows:,} rows x {n_features:,} "
            f"features is estimated at {cost} on this project's 2-core reference "
            f"machine, over the {format_seconds(ASK_SECONDS)} a fit may take "
            f"without --yes; {advice}"
        )
    lines += [f"  faster: {options} ({other})" for options, other in faster]
    return lines


def _check_estimator(args):
    """The estimator of ``--method`` with the options given; its parameters checked."""
    from .._validation import check_params

    name, defaults = METHODS[args.method]
    est = build_estimator(name, defaults)
    keys = settable(est)
    params = dict.fromkeys(seeded_keys(est), args.random_state)
    for option, param in TUNING.items():
        value = getattr(args, param)
        if value is None:
            continue
        if param not in keys:
            raise UserError(
                f"{option} does not apply to --method {args.method}; it is a "
                f"parameter of --method {takers(param)}. Leave it out or "
                "change the method."
            )
        params[keys[param]] = value
    est.set_params(**params)
    try:
        check_params(est)
        if "estimator" in est.get_params(deep=False):
            check_params(est.estimator)
    except ValueError as exc:
        for option, param in TUNING.items():  # name the option the user typed
            if f"parameter {param}=" in str(exc):
                raise UserError(f"{option} {getattr(args, param)} is not valid: {exc}") from None
        raise UserError(str(exc)) from None
    return est


def row_ids(X):
    """Columns of an in-memory ``X`` that look like a row id: integers, all distinct, in
    order (a range, an export's index)."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame) or len(X) < 3:
        return []
    return [
        c
        for c in X.columns
        if pd.api.types.is_integer_dtype(X[c])
        and (X[c].is_monotonic_increasing or X[c].is_monotonic_decreasing)
        and X[c].is_unique
    ]


def check_command_line(args):
    """Check the whole command line; return the resolved outputs and scheduler address."""
    method_given = args.method is not None
    args.method = args.method or DEFAULT_METHOD
    if args.top is not None and args.top < 1:
        raise UserError("--top must be a positive number of features.")
    data = Path(args.data)
    if args.spark is not None and args.scheduler is not None:
        raise UserError(
            "--spark and --scheduler are both given; a fit runs on Spark "
            "(--spark MASTER) or on a Dask cluster (--scheduler ADDRESS), not both."
        )
    if args.spark is not None:
        check_spark_data(args.data)
    if not data.exists() and not (args.spark is not None and is_remote(args.data)):
        raise UserError(f"{args.data}: no such file or directory; check the DATA path.")
    plan = {
        "out": None,
        "interactions": None,
        "plot": None,
        "plot_format": None,
        "method_given": method_given,
    }
    plan["features"], plan["exclude"] = _check_columns(args)
    plan["estimator"] = _check_estimator(args)
    if args.out is not None:
        if args.out.suffix.lower() not in (".csv", ".json"):
            raise UserError(f"--out {args.out}: use a .csv or .json file name.")
        plan["out"] = check_target("--out", args.out, data, args.force)
        if args.out.suffix.lower() == ".csv" and args.method in WITH_INTERACTIONS:
            derived = args.out.with_name(args.out.stem + "_interactions.csv")
            plan["interactions"] = check_target("--out (interactions)", derived, data, args.force)
    if args.plot is not None:
        plan["plot_format"] = plot_format(args.plot)
        plan["plot"] = check_target("--plot", args.plot, data, args.force)
    written = [(k, plan[k]) for k in _LABELS if plan[k] is not None]
    for i, (first, a) in enumerate(written):
        for second, b in written[i + 1 :]:
            if a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)):
                raise UserError(
                    f"{_LABELS[first]} and {_LABELS[second]} name the same file "
                    f"{a}; give each its own path."
                )
    plan["scheduler"] = scheduler_address(args.scheduler)
    return plan
