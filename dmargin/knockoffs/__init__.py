"""Model-X knockoffs: features selected at a false discovery rate.

The knockoff sampler, groups of near-copied features, and the knockoff filter around any
estimator with feature importances.  The public names are exported by :mod:`dmargin`.
"""
