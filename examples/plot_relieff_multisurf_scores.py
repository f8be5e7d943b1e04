"""
ReliefF and MultiSURF scores on the breast-cancer data
=======================================================

ReliefF scores each feature by how much it differs between a row and its ``k``
nearest misses (rows of the other class) against its ``k`` nearest hits (rows of
its own class); MultiSURF uses, for each row, every neighbour within a radius
set by that row's own distances instead of a fixed ``k``. Both run here on the
bundled Breast Cancer Wisconsin (Diagnostic) data: 569 rows, 30 features,
0 = benign, 1 = malignant.
"""

import matplotlib.pyplot as plt
from scipy.stats import spearmanr

import dmargin
from dmargin.datasets import load_dataset
from dmargin.plotting import plot_feature_weights

X, y = load_dataset("wdbc")
relieff = dmargin.ReliefF(n_neighbors=10).fit(X, y)
multisurf = dmargin.MultiSURF().fit(X, y)

# %%
# ``feature_importances_`` holds each estimator's scores, one per feature, on its
# own scale (ReliefF's in [-1, 1]; MultiSURF's on skrebate's scale), so each gets
# its own axis. :func:`dmargin.plotting.plot_feature_weights` draws the top ones.

fig, axes = plt.subplots(1, 2, figsize=(10, 5), layout="constrained")
plot_feature_weights(relieff, top=12, ax=axes[0])
plot_feature_weights(multisurf, top=12, ax=axes[1])
plt.show()

# %%
# The two agree on what matters: the size features (radius, perimeter, area) and
# the concave points lead both rankings, above all their "worst" values (the
# columns ending in 3; 1 is the mean over a sample's cell nuclei). Their rank
# correlation over all 30 features, and the top five they share:

rho = spearmanr(relieff.feature_importances_, multisurf.feature_importances_).statistic
top5 = set(X.columns[relieff.feature_importances_.argsort()[::-1][:5]])
both = top5 & set(X.columns[multisurf.feature_importances_.argsort()[::-1][:5]])
print(f"Spearman rank correlation: {rho:.3f}; top 5 in common: {sorted(both)}")
