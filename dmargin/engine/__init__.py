"""The pairwise engine: tile kernels, the grids they run on, and where they run.

By layer, bottom up:

- :mod:`~dmargin.engine.kernels` -- numba, arrays in and out, one module per
  kernel family, under :mod:`~dmargin.engine._numba` (compile flags and the
  one serial-or-threaded rule);
- :mod:`~dmargin.engine.merge` -- the generic combines of partials (an
  algorithm's own per-anchor terms live with it; the soft-neighbour ones in
  :mod:`~dmargin.engine.kernels.terms`, which the online kernel shares);
- :mod:`~dmargin.engine.grid` -- the runner: every statistic's tasks laid
  over the row blocks (ordered, symmetric, one per block), the block and
  thread policy;
- the statistics, by family: :mod:`~dmargin.engine.neighbours` (soft and
  hard neighbours), :mod:`~dmargin.engine.thresholds` (the SURF family),
  :mod:`~dmargin.engine.quadratic` (IMMIGRATE, LDM-RFE's kernel sums),
  :mod:`~dmargin.engine.blocks` (histograms, linear machines),
  :mod:`~dmargin.engine.features` (what each feature is),
  :mod:`~dmargin.engine.sampling` (a sample of anchors);
- :mod:`~dmargin.engine.device` -- where the tiles run (the CPU, or a CUDA
  GPU for the kernels that have a GPU twin);
- :mod:`~dmargin.engine.execution` -- the graph, run in-process or on dask
  (the only engine module that imports dask);
- :mod:`~dmargin.engine.binning` (boosting's bin codes).

Algorithm modules import what they use from here, never from the engine's
submodules (``tests/test_layout.py``).
"""

# Numba's cache locator for the engine's kernels, registered before any kernel compiles.
from ._numba import EngineCacheLocator  # noqa: F401, I001
from . import merge
from ._numba import TileKernel
from .binning import BinnedRows, bin_rows
from .blocks import (
    WeightedHistograms,
    block_reduce,
    counts,
    hinge_band,
    hinge_violations,
    linear_gram,
    linear_loss,
)
from .execution import (
    Anchors,
    Rows,
    is_tile_key,
    map_row_blocks,
    new_row_blocks,
    prepare_rows,
    rows_per_block,
    split_chunks,
)
from .device import DEVICES, check_device, cuda_status
from .features import FeatureKinds, column_summary, compact_distinct, feature_kinds
from .kernels.distance import MASKED, MISSING, PLAIN, scored_differences
from .kernels.surf import FAR, NEAR, columns_of, moment_columns
from .kernels.lse import KERNEL as LSE_KERNEL
from .kernels.quad import KERNEL as QLSE_KERNEL
from .kernels.sequential import (
    ldm_dcd,
    ldm_dcd_linear,
    online_irelief_steps,
    online_irelief_steps_general,
    simba_margins,
    simba_run,
)
from .kernels.terms import im4e_agg, im4e_share, irelief_agg, irelief_agg_missing, softmin_coef
from .neighbours import (
    anchor_partials,
    knn_statistic,
    knn_target_statistic,
    lse_statistic,
    new_rows_softmin,
    row_partials,
    rows_at,
    summary_of_rows_at,
)
from .permute import permuted_rows
from .quadratic import quad_statistic, rbf_left_out_sums
from .sampling import Draw, draw_seed, pool_chunk, pool_plan, resolve_pool, sample_anchors
from .thresholds import compact_threshold_statistic, threshold_statistic

__all__ = [
    "LSE_KERNEL",
    "FAR",
    "MASKED",
    "MISSING",
    "PLAIN",
    "NEAR",
    "columns_of",
    "QLSE_KERNEL",
    "Anchors",
    "DEVICES",
    "BinnedRows",
    "FeatureKinds",
    "Rows",
    "TileKernel",
    "WeightedHistograms",
    "anchor_partials",
    "bin_rows",
    "block_reduce",
    "check_device",
    "column_summary",
    "compact_distinct",
    "compact_threshold_statistic",
    "counts",
    "cuda_status",
    "feature_kinds",
    "hinge_band",
    "hinge_violations",
    "im4e_agg",
    "im4e_share",
    "irelief_agg",
    "irelief_agg_missing",
    "is_tile_key",
    "knn_statistic",
    "knn_target_statistic",
    "ldm_dcd",
    "ldm_dcd_linear",
    "linear_gram",
    "linear_loss",
    "lse_statistic",
    "map_row_blocks",
    "merge",
    "moment_columns",
    "new_row_blocks",
    "new_rows_softmin",
    "online_irelief_steps",
    "online_irelief_steps_general",
    "permuted_rows",
    "prepare_rows",
    "quad_statistic",
    "rbf_left_out_sums",
    "row_partials",
    "rows_at",
    "rows_per_block",
    "sample_anchors",
    "Draw",
    "draw_seed",
    "pool_chunk",
    "pool_plan",
    "resolve_pool",
    "scored_differences",
    "simba_margins",
    "simba_run",
    "softmin_coef",
    "split_chunks",
    "summary_of_rows_at",
    "threshold_statistic",
]
