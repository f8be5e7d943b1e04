"""The pairwise engine: tile kernels, their merges, and where they run.

Algorithm modules import what they use from here, never from the engine's
submodules: the layout under this package may change, these names do not.
"""

from . import merge
from .execution import Rows, prepare_rows
from .histograms import BinnedRows, WeightedHistograms, bin_rows, counts
from .kernel_sums import ldm_dcd, ldm_dcd_linear, rbf_left_out_sums
from .online import online_irelief_steps, simba_margins, simba_run
from .execution import anchor_partials, knn_statistic, lse_statistic, quad_statistic

__all__ = [
    "BinnedRows", "Rows", "WeightedHistograms", "anchor_partials", "bin_rows", "counts",
    "knn_statistic", "ldm_dcd", "ldm_dcd_linear", "lse_statistic", "merge",
    "online_irelief_steps", "prepare_rows", "quad_statistic", "rbf_left_out_sums",
    "simba_margins", "simba_run",
]
