"""
Exact scores against sampled anchors
====================================

An exact fit compares every row with every other (N^2 pairs). With
``n_anchors=m``, m rows drawn once (stratified by class, seeded by
``random_state``) are each scored against all N rows: m N pairs. How close do the
weights come? ReliefF on the Breast Cancer Wisconsin data (N = 569), exact and
with 50 and 200 anchors.
"""

import matplotlib.pyplot as plt
import numpy as np

import dmargin
from dmargin.datasets import load_dataset

X, y = load_dataset("wdbc")
exact = dmargin.ReliefF().fit(X, y).feature_importances_
sampled = {m: dmargin.ReliefF(n_anchors=m, random_state=0).fit(X, y) for m in (50, 200)}

fig, ax = plt.subplots(figsize=(5, 5), layout="constrained")
for m, est in sampled.items():
    ax.scatter(exact, est.feature_importances_, label=f"n_anchors = {m}", alpha=0.8)
lims = [min(exact.min(), 0), exact.max() * 1.05]
ax.plot(lims, lims, color="gray", lw=1)
ax.set_xlabel("exact ReliefF weight")
ax.set_ylabel("weight from sampled anchors")
ax.legend()
plt.show()

# %%
# Each point is a feature. The sample's weights scatter around the exact ones,
# less with more anchors; ``anchor_indices_`` says which rows were drawn. Largest
# difference and overlap of the top 10:

top10 = set(np.argsort(-exact)[:10])
for m, est in sampled.items():
    w = est.feature_importances_
    print(
        f"m = {m}: {est.anchor_indices_.size} anchors, "
        f"max |difference| {np.abs(w - exact).max():.4f}, "
        f"top 10 in common {len(top10 & set(np.argsort(-w)[:10]))}"
    )
