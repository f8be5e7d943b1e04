"""Where a fit's tiles run: the CPU (numba) or a CUDA GPU (numba.cuda).

A fit asks for a GPU with ``device="cuda"`` on the estimators that have one
(the scikit-learn-style parameter XGBoost and LightGBM use too): the grid,
the merges and the per-anchor terms stay as they are, and only the tile
kernel changes.  ``numba.cuda`` is imported on that first request, not
with dmargin: it takes a second, and where no toolkit is installed it is
never needed.

On a machine without a usable GPU the request fails at once with one line
saying why (no driver, no device, numba.cuda failing to import), not with a
traceback from inside numba.  ``NUMBA_ENABLE_CUDASIM=1`` runs the GPU
kernels in numba's simulator on the CPU (slow: for tests on small data).
"""

import functools

from ._numba import restore_numpy_aliases

#: The values of an estimator's ``device``.
DEVICES = ("cpu", "cuda")


@functools.lru_cache(maxsize=1)
def cuda_status():
    """``(usable, why)``: whether CUDA kernels can run here, and if not, why not."""
    restore_numpy_aliases()
    try:
        from numba import config, cuda
    except Exception as exc:  # an import error of numba.cuda's, whatever its kind
        return False, f"numba.cuda failed to import ({type(exc).__name__}: {exc})"
    if getattr(config, "ENABLE_CUDASIM", 0):
        return True, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        if cuda.is_available():
            return True, cuda.get_current_device().name.decode(errors="replace")
        return False, "numba.cuda finds no CUDA driver or GPU (numba.cuda.is_available() is False)"
    except Exception as exc:
        return False, f"numba.cuda could not reach a GPU ({type(exc).__name__}: {exc})"


def check_device(who, device):
    """Raise a one-line error when ``device`` is ``"cuda"`` and no GPU is usable."""
    if device != "cuda":
        return
    usable, why = cuda_status()
    if not usable:
        raise RuntimeError(
            f"{who}(device='cuda'): no CUDA GPU is usable here: {why}. Fit with "
            "device='cpu' (the default), or on a machine with an NVIDIA GPU, its "
            "driver and numba-cuda installed."
        )


def on_device(kernel, device):
    """The twin of the CPU tile ``kernel`` that runs on ``device`` (itself on the CPU)."""
    if device == "cpu":
        return kernel
    from .kernels import cuda_knn, knn

    twins = {knn.KERNEL: cuda_knn.KERNEL, knn.GENERAL_KERNEL: cuda_knn.GENERAL}
    if kernel not in twins:
        raise ValueError(f"the tile {kernel.source[1]} has no twin on device={device!r}")
    return twins[kernel]


def threshold_twins(device):
    """The GPU twins of the SURF family's passes (:mod:`.kernels.cuda_surf`), or
    ``None`` on the CPU."""
    if device == "cpu":
        return None
    from .kernels import cuda_surf

    return cuda_surf
