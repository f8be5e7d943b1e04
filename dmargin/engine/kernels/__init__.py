"""Numba kernels, one module per family; they take arrays and scalars only.

``modes`` (which pairs a symmetric kernel visits), ``distance`` (the Relief
family's one difference and distance, inlined by the others), ``lse`` (soft
neighbours, I-RELIEF/IM4E), ``knn`` (hard neighbours, Relief/ReliefF),
``surf`` (the SURF family's two passes), ``quad`` (IMMIGRATE's quadratic
distances), ``rbf`` (LDM's left-out kernel sums), ``hist`` (boosting's
weighted histograms) and ``sequential`` (online I-RELIEF, Simba, LDM's
solvers).
"""
