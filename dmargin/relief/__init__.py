"""The Relief family: Relief, ReliefF, RReliefF, MuRelief, Simba and STIR p-values.

Driver loops over hard neighbours (``_relief``), their per-anchor terms (``_terms``),
continuous targets (``_regression``), multi-label MuRelief (``_murelief``), Simba
(``_simba``) and STIR, the law of a Relief score under its neighbour graph (``_stir``).
The public names are exported by :mod:`dmargin`.
"""
