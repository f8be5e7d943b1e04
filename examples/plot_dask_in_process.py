"""
A dask-array fit agrees with numpy
==================================

The same estimator takes numpy arrays and dask arrays. On dask input the rows
are cut into (anchor block x candidate block) tiles that run as dask tasks --
here on the threaded scheduler in this process, no cluster -- and only the
small per-iteration results come back. The weights are the in-memory ones, to
rounding.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

import dmargin
from dmargin.datasets import load_dataset

X, y = load_dataset("wdbc")
X_np, y_np = X.to_numpy(), y.to_numpy()
X_dask = da.from_array(X_np, chunks=(150, -1))  # 4 row blocks, every feature in each
y_dask = da.from_array(y_np, chunks=150)

in_memory = dmargin.IRelief().fit(X_np, y_np)
on_dask = dmargin.IRelief().fit(X_dask, y_dask)
print(
    f"row blocks: {X_dask.numblocks[0]}; iterations: numpy {in_memory.n_iter_}, "
    f"dask {on_dask.n_iter_}"
)

# %%
# Per feature, the two weights side by side and their difference:

diff = on_dask.feature_importances_ - in_memory.feature_importances_
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
left.scatter(in_memory.feature_importances_, on_dask.feature_importances_)
left.set_xlabel("IRelief weight, numpy input")
left.set_ylabel("IRelief weight, dask input")
right.bar(range(diff.size), diff)
right.set_xlabel("feature")
right.set_ylabel("dask - numpy")
plt.show()

print(f"largest difference: {np.abs(diff).max():.1e}")

# %%
# The differences are at floating-point rounding (the sums are merged in another
# order): far below any difference between features. The test suite holds every
# estimator to 1e-10 between in-process, threaded dask and a two-process
# ``LocalCluster`` (``tests/test_modes.py``).
