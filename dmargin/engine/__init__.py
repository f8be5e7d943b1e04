"""The pairwise engine: tile kernels, their merges, and where they run.

By layer: :mod:`~dmargin.engine.kernels` (numba, arrays in and out, one
module per kernel family) under :mod:`~dmargin.engine._numba` (compile
flags and the one serial-or-threaded rule); :mod:`~dmargin.engine.merge`
(every combine and aggregate); :mod:`~dmargin.engine.statistics` (each
statistic written once as a task graph); :mod:`~dmargin.engine.execution`
(the graph, run in-process or on dask -- the only engine module that
imports dask); :mod:`~dmargin.engine.binning` (boosting's bin codes).

Algorithm modules import what they use from here, never from the engine's
submodules.
"""

# Numba's cache locator for the engine's kernels, registered before any kernel compiles.
from ._numba import EngineCacheLocator  # noqa: F401
from . import merge
from .binning import BinnedRows, bin_rows
from .execution import (Anchors, Rows, map_row_blocks, new_row_blocks, prepare_rows,
                        sample_anchors)
from .kernels.sequential import (ldm_dcd, ldm_dcd_linear, online_irelief_steps, simba_margins,
                                 simba_run)
from .permute import permuted_rows
from .statistics import (WeightedHistograms, anchor_partials, counts, hinge_band,
                         hinge_violations, knn_statistic, linear_gram, linear_loss,
                         lse_statistic, new_rows_softmin, quad_statistic, rbf_left_out_sums,
                         row_partials)

__all__ = [
    "Anchors", "BinnedRows", "Rows", "WeightedHistograms", "anchor_partials", "bin_rows", "counts",
    "hinge_band", "hinge_violations", "knn_statistic", "ldm_dcd", "ldm_dcd_linear",
    "linear_gram", "linear_loss", "lse_statistic", "map_row_blocks", "merge",
    "new_row_blocks", "new_rows_softmin", "online_irelief_steps", "permuted_rows", "prepare_rows",
    "quad_statistic", "rbf_left_out_sums", "row_partials", "sample_anchors", "simba_margins",
    "simba_run",
]

from .statistics import (FeatureKinds, column_summary, feature_kinds,  # noqa: E402
                         surf_statistic)  # (the SURF family, mixed and missing data)

__all__ += ["FeatureKinds", "column_summary", "feature_kinds", "surf_statistic"]
