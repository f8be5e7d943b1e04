"""The SURF and SWRF families: neighbours within a distance threshold.

SURF, SURF*, MultiSURF and MultiSURF* with skrebate's semantics (``_surf``), their
thresholds and per-anchor terms (``_terms``), and the sigmoid-weighted SWRF variants
(``_swrf``).  The public names are exported by :mod:`dmargin`.
"""
