"""The Relief family: Relief, ReliefF, RReliefF, MuRelief, Simba and STIR p-values.

Hard neighbours and their per-anchor terms, continuous targets, and STIR, the law of a
Relief score under its neighbour graph.  The public names are exported by :mod:`dmargin`.
"""
