"""What an estimator accepts and needs, declared once on its class.

Each estimator class holds one :class:`Capabilities` as ``_capabilities``; a
subclass inherits its parent's or declares its own, usually derived with
``dataclasses.replace``::

    class MyReliefF(ReliefF):
        _capabilities = replace(capabilities(ReliefF), targets=("classes",))

The door of every fit (:func:`dmargin._start.start_fit`) reads it, as do
``__sklearn_tags__`` (:func:`sklearn_tags`) and the Spark reader.  No other
module reads the attribute: they call :func:`capabilities`
(``tests/test_layout.py`` checks it).

A leaf: it imports nothing from dmargin, so any module may import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """What an estimator's ``fit`` accepts and what it needs from the door.

    Three fields may depend on the instance: ``target_rule`` is a function,
    and ``compact_rows`` and ``one_pass`` are a bool or a function of the
    estimator (its parameters), called by the door at fit time.

    Attributes
    ----------
    allow_nan : bool, default=False
        NaN in ``X`` are missing values it handles (infinite values are still
        refused); also ``__sklearn_tags__().input_tags.allow_nan``.
    targets : tuple of {"classes", "continuous"}, default=("classes",)
        The targets it takes: class labels and/or a continuous target (a float
        target, not all integers, as ``type_of_target`` says).  Without
        ``"classes"`` any numeric ``y`` is a target.
    target_rule : callable or None, default=None
        ``rule(estimator, y) -> bool``: whether ``y`` (as given) is a
        continuous target, instead of ``type_of_target`` (skrebate's rules, in
        :mod:`dmargin.skrebate`).
    binary : str or None, default=None
        Why it needs exactly two classes (the error for other ``y`` says it).
    distances : bool, default=True
        It computes distances between rows: without scaling, values whose
        squares overflow are refused.
    engine_rows : bool, default=True
        The rows are laid out for the engine (persisted once for dask input).
    keep_float32 : bool, default=False
        ``float32`` ``X`` gives ``float32`` rows (with class labels).
    compact_rows : bool or callable, default=False
        Integer ``X`` of discrete features within ``[0, 255]`` stays bytes
        (genotypes); the estimator has a ``discrete_threshold``.  A callable
        is ``compact_rows(estimator) -> bool``.
    one_pass : bool or callable, default=False
        With a sample of anchors its fit reads the rows once after the door's
        pass (which draws the anchors too): dask rows stream from their source
        instead of being persisted.  A callable is
        ``one_pass(estimator, continuous) -> bool`` (a fit that depends on the
        target's kind or on its parameters).
    """

    allow_nan: bool = False
    targets: tuple[str, ...] = ("classes",)
    target_rule: Callable | None = None
    binary: str | None = None
    distances: bool = True
    engine_rows: bool = True
    keep_float32: bool = False
    compact_rows: bool | Callable = False
    one_pass: bool | Callable = False

    def __post_init__(self):
        unknown = set(self.targets) - {"classes", "continuous"}
        if not self.targets or unknown:
            raise ValueError(
                f"Capabilities(targets={self.targets!r}): give 'classes' and/or 'continuous'."
            )

    def compact(self, estimator) -> bool:
        """Whether ``estimator`` keeps genotype-like integer rows as bytes."""
        rule = self.compact_rows
        return bool(rule(estimator) if callable(rule) else rule)

    def streams(self, estimator, continuous) -> bool:
        """Whether ``estimator``'s fit (on a continuous target or not) reads the
        rows once when it samples anchors."""
        rule = self.one_pass
        return bool(rule(estimator, continuous) if callable(rule) else rule)


#: What an estimator that declares nothing takes.
DEFAULT = Capabilities()


def capabilities(estimator) -> Capabilities:
    """The :class:`Capabilities` of an estimator or an estimator class."""
    declared = getattr(estimator, "_capabilities", DEFAULT)
    if not isinstance(declared, Capabilities):
        raise TypeError(
            f"{getattr(estimator, '__name__', type(estimator).__name__)}._capabilities is "
            f"{type(declared).__name__}; declare a dmargin Capabilities object."
        )
    return declared


def sklearn_tags(estimator, tags):
    """``tags`` (scikit-learn's ``Tags``) filled from ``estimator``'s capabilities:
    whether it takes NaN, and a classifier needing two classes is not multiclass."""
    declared = capabilities(estimator)
    tags.input_tags.allow_nan = declared.allow_nan
    tags.target_tags.required = True
    if declared.binary is not None and tags.classifier_tags is not None:
        tags.classifier_tags.multi_class = False
    return tags
