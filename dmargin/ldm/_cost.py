"""What a fit of the linear LDM, LDMRFE and SVMRFE costs (:func:`dmargin.fit_cost`):
passes of the primal Newton solver over the rows.  The rates were measured on this
project's 2-core development machine (``dmargin._cost`` says how to read them)."""

from __future__ import annotations

from .._cost import FitCost, elimination_widths

#: Row-features per second of a pass of the linear LDM primal Newton solver (margins and
#: gradient, in-process, 2 threads): LDM(kernel="linear", solver="newton") on 10^6 x 50
#: Gaussian rows took 5.4 s for 54 Newton iterations and its Gram, band and check passes
#: (about 60 passes of N A); a LocalCluster of 2 workers on the same rows, 15 s.
LINEAR_RATE = 5.5e8
#: Passes of the linear LDM solver: Newton iterations over its smoothing stages and the
#: exact step (41-54 measured at 10^6 x 50, 20-60 on smaller data).
LDM_PASSES = 60
#: Row-feature-features per second of a squared-hinge SVM Newton pass (its Hessian, N A^2
#: over the active rows): 10^6 x 50 in 5.6 s for 5 passes.
SVM_RATE = 2.3e9
#: Newton iterations of the squared-hinge SVM (piecewise quadratic: 4-5 measured).
SVM_PASSES = 8


def linear_primal_cost(estimator, n_samples, n_features, *, svm=False, eliminates=False):
    """:func:`~dmargin.fit_cost` of the linear primal Newton solver (one machine per
    round): LDM's (``svm=False``) or the squared-hinge SVM's, once or in each elimination
    round; ``None`` unless the estimator uses that solver (``kernel="linear"``,
    ``solver`` other than "cd")."""
    if estimator.kernel != "linear" or getattr(estimator, "solver", "auto") == "cd":
        return None
    widths = elimination_widths(estimator, n_features) if eliminates else [float(n_features)]
    n = float(n_samples)
    if svm:
        ops = sum(n * a * (a + 1) for a in widths) * SVM_PASSES
        seconds = ops / SVM_RATE
        per = f"N A^2 x about {SVM_PASSES} Newton passes"
    else:
        ops = sum(n * a for a in widths) * LDM_PASSES
        seconds = ops / LINEAR_RATE
        per = f"N A x about {LDM_PASSES} Newton passes"
    rounds = f", {len(widths)} rounds on fewer features each" if eliminates else ""
    return FitCost(ops, seconds, f"{per}, linear primal{rounds}")
