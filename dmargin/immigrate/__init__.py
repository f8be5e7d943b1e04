"""IMMIGRATE: a weight matrix over features, its interactions and its classifier.

IMMIGRATE, IM4E-IMMIGRATE, boosted IMMIGRATE (BIM) and IM4E, with their eigen-update,
M-step and softmin classifier.  The public names are exported by :mod:`dmargin`.
"""
