"""Model-X knockoffs: features selected at a false discovery rate.

The knockoff sampler (``_sampler``), its groups of near-copied features (``_groups``) and the
filter around any estimator with feature importances (``_filter``).  The public names are
exported by :mod:`dmargin`.
"""
