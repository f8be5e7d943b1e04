"""Meta-estimators around any dmargin weight estimator.

TuRF, Iter and VLS.  The public names are exported by :mod:`dmargin`.
"""
