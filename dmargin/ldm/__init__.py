"""The Large margin Distribution Machine and the eliminations it drives.

LDM, kernel and linear (``_machine``), LDM-RFE and SVM-RFE (``_rfe``), and the solvers with
the decision values of the machines they fit (``_solvers``).  The public names are exported
by :mod:`dmargin`.
"""
