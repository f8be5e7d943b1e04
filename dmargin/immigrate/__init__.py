"""IMMIGRATE: a weight matrix over features, its interactions and its classifier.

IMMIGRATE and IM4E-IMMIGRATE (``_immigrate``), boosted IMMIGRATE (``_boosted``), IM4E
(``_im4e``), the eigen-update and M-step (``_solver``) and what they share: sample weights,
the steps' history and the softmin classifier (``_softmin``).  The public names are exported
by :mod:`dmargin`.
"""
