"""The SURF and SWRF families: neighbours within a distance threshold.

SURF, SURF*, MultiSURF and MultiSURF* with skrebate's semantics, and the SWRF variants,
whose neighbours weigh by their distance to the threshold.  The public names are exported
by :mod:`dmargin`.
"""
