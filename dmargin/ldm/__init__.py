"""The Large margin Distribution Machine and the eliminations it drives.

LDM (kernel and linear) as a classifier, LDM-RFE and SVM-RFE, and their solvers.  The
public names are exported by :mod:`dmargin`.
"""
