"""
IMMIGRATE's weight matrix and its top interaction
=================================================

IMMIGRATE learns a symmetric, nonnegative weight *matrix* ``W``: the distance
between two rows is ``z^T W z`` with ``z = |x - x'|``, so an off-diagonal entry
``W[i, j]`` weighs features ``i`` and ``j`` together. This fits it on the bundled
Statlog (Heart) data (270 rows, 13 features) with the defaults: features
standardised, 10 steps from the identity.
"""

import matplotlib.pyplot as plt
import numpy as np

import dmargin
from dmargin.datasets import load_dataset
from dmargin.plotting import plot_weight_matrix

X, y = load_dataset("heart")
est = dmargin.Immigrate().fit(X, y)
print(f"W is {est.weight_matrix_.shape[0]} x {est.weight_matrix_.shape[1]}, {est.n_iter_} steps")

# %%
# :func:`dmargin.plotting.plot_weight_matrix` draws ``W`` with the features in the
# order of their diagonal weight (``feature_importances_``). A box marks the
# largest off-diagonal entry, the first row of ``interactions_``.

top = 8
fig, ax = plt.subplots(figsize=(6.5, 5.5), layout="constrained")
plot_weight_matrix(est, top=top, ax=ax)
order = list(np.argsort(-np.diag(est.weight_matrix_), kind="stable")[:top])
first = est.interactions_.iloc[0]
if first["i"] in order and first["j"] in order:  # both features are among those shown
    r, c = order.index(first["i"]), order.index(first["j"])
    for a, b in ((r, c), (c, r)):
        ax.add_patch(plt.Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
plt.show()

# %%
# ``interactions_`` lists every pair ``i < j`` by ``W[i, j]``, with the features'
# names:

print(est.interactions_.head().to_string(index=False))

# %%
# Off-diagonal weight is not only interaction: ``z`` is nonnegative, so ``W[i, j]``
# is positive even for independent features. Compare the pairs with each other,
# not with zero. ``history_`` has the paper's cost after each step and the change
# of ``W`` (IMMIGRATE's update need not settle; it runs ``max_iter`` steps):

print(np.round(est.history_["change"], 4))
