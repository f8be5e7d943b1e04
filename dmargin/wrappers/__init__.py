"""Meta-estimators around any dmargin weight estimator.

TuRF (``_turf``), Iter (``_iter``) and VLS (``_vls``).  The public names are exported by
:mod:`dmargin`.
"""
