"""One task per row block: boosting's weighted histograms, the linear machines'
sums, and plain block reductions (:func:`grid.per_block`).

- :class:`WeightedHistograms` -- boosting rounds, the sample weights kept
  where the blocks are;
- :func:`linear_gram`, :func:`linear_loss`, :func:`hinge_band`,
  :func:`hinge_violations` -- linear machines in the primal (LDM, the
  squared-hinge SVM): sums over the row blocks, a d-vector or a d x d matrix
  back whatever the number of rows;
- :func:`block_reduce` -- ``combine`` of ``fn`` over the blocks.
"""

from __future__ import annotations

import numpy as np

from . import grid, merge
from ._numba import n_threads, pick
from .execution import Rows
from .kernels import hist


def _update_task(bins, y, stumps, class_weight, w):
    """The block's weights after ``stumps``, in order (from the class weights the first round)."""
    if w is None:
        w = class_weight[y]
    for stump in stumps:
        w = hist.update_weights(w, bins, y, stump)
    return w


def _hist_task(bins, y, threads, features, n_bins, w):
    kernel = pick(hist.TWINS, bins.shape[0] * features.size, hist.COST, threads=threads)
    return kernel(bins, y, w, features, n_bins)


class WeightedHistograms:
    """Per-round weighted class histograms over :class:`~dmargin.engine.binning.BinnedRows`.

    The initial weight of a sample is ``class_weight[y]``.

    ``histogram(features, stump)`` first applies the previous round's
    ``stump = (feature, split, polarity, alpha, Z)`` to the weights where they
    live (one task per row block; ``Z`` is known on the driver from the
    previous histogram), then returns the ``(len(features), max bins, 2)``
    sums.  No N-vector passes through the driver, the graph has the same
    size every round, and the new weights stay with the row blocks.

    ``replay``: stumps of earlier rounds that the first ``histogram`` applies,
    in order, before its own ``stump`` (a committee resumed: the same
    multiplications as round by round, so the same weights).
    """

    def __init__(self, binned, class_weight, replay=()):
        self.binned = binned
        self.n_bins = int(binned.n_bins.max())
        self.class_weight = np.asarray(class_weight, dtype=np.float64)
        self.w = None
        self._replay = tuple(replay)

    def histogram(self, features, stump=None):
        rows = self.binned.rows
        features = np.ascontiguousarray(features, dtype=np.int64)
        stumps = (*self._replay, *(() if stump is None else (stump,)))
        self._replay = ()
        g = grid.graph(rows, "hist")
        # The weights of block j: this round's numpy array, or the kept dask block.
        w = self.w
        before = (lambda j: (w,)) if g.local or w is None else (lambda j: ((w.name, j),))
        w_keys = grid.per_block(
            g,
            _update_task,
            stumps,
            self.class_weight,
            fields=2,
            each=before,
            tag="weights",
            tile=False,
        )
        parts = grid.per_block(
            g, _hist_task, g.local, features, self.n_bins, fields=2, each=lambda j: (w_keys[j],)
        )
        chunks = (tuple(e - s for s, e in g.candidates),)
        extra = [] if g.local or w is None else [w]
        out, self.w = grid.run(
            g, g.tree(parts, merge.add, "sum"), keep=(w_keys, chunks, np.float64), collections=extra
        )
        return np.asarray(out)

    def weights(self):
        """The current weights as numpy (for tests; gathers N floats)."""
        from .._dask import gather

        return np.asarray(gather(self.w, what="the boosting weights"))


def counts(binned, features=None):
    """Unweighted class counts per bin (one pass), ``(A, max bins, 2)``."""
    features = np.arange(binned.n_features) if features is None else features
    return WeightedHistograms(binned, np.ones(2)).histogram(features)


def block_reduce(X, fn, combine, what):
    """``combine([fn(block) for block in row blocks of X])`` as a tree, for numpy or dask ``X``.

    (Used for column summaries such as the distinct values of the binning.)
    """
    from .execution import row_blocks

    g = grid.graph(row_blocks(X), what)
    return grid.run(g, g.tree(grid.per_block(g, fn, tile=False), combine))


# ---------------------------------------------------------------------------
# Linear machines in the primal: sums over row blocks (LDM, squared-hinge SVM)
# ---------------------------------------------------------------------------


def machine_rows(X, codes, cols, pair, intercept=0.0):
    """``z_i = y_i [x_i[cols], intercept]`` for the rows of one binary machine.

    ``pair = (a, b)``: rows of class code ``b`` are +1, of ``a`` -1, others
    left out; ``intercept`` > 0 appends that constant column (LinearSVC's
    ``intercept_scaling``).
    """
    a, b = pair
    sel = (codes == a) | (codes == b)
    y = np.where(codes[sel] == b, 1.0, -1.0)
    Z = X[np.ix_(sel, cols)] if sel.size else np.empty((0, len(cols)))
    if intercept:
        Z = np.column_stack([Z, np.full(Z.shape[0], float(intercept))])
    return Z * y[:, None]


def _add_tuples(parts):
    return tuple(merge.add(list(items)) for items in zip(*parts))


def _gram_block(X, codes, cols, pairs, intercept):
    out = []
    for pair in pairs:
        Z = machine_rows(X, codes, cols, pair, intercept)
        out.append((float(Z.shape[0]), Z.sum(axis=0), Z.T @ Z))
    return tuple(np.array(items) for items in zip(*out))


def _run_blocks(g, task, *args):
    parts = grid.per_block(g, task, *args, fields=2)
    # BLAS on one thread in each task: the blocks are the parallelism.
    return grid.run(
        g,
        g.tree(parts, _add_tuples, "sum"),
        blas_limit=True,
        threads=n_threads() if g.local and len(parts) > 1 else 1,
    )


def linear_gram(rows: Rows, cols, pairs, intercept=0.0):
    """Per machine ``(m_p, sum_i z_i, Z^T Z)`` over its rows (``z_i`` of :func:`machine_rows`).

    One pass; arrays of shape ``(P,)``, ``(P, d)`` and ``(P, d, d)`` with
    ``d = len(cols)`` (+1 with an intercept column).
    """
    cols = np.asarray(cols, dtype=np.int64)
    pairs = [tuple(int(c) for c in p) for p in pairs]
    g = grid.graph(rows, "linear-gram", candidates=grid.linear_blocks(rows))
    return _run_blocks(g, _gram_block, cols, pairs, intercept)


def _margins(X, codes, cols, pair, w, intercept):
    """``(y, rows, u)`` of one machine: labels, its rows (a mask, or None for
    all) and ``u = [x_cols, intercept] . w``, without copying the block."""
    a, b = pair
    sel = (codes == a) | (codes == b)
    rows = None if sel.all() else sel
    Xs = X if rows is None else X[rows]
    full = np.zeros(X.shape[1])
    full[cols] = w[: len(cols)]
    u = Xs @ full
    if intercept:
        u += intercept * w[-1]
    return np.where(codes[sel] == b, 1.0, -1.0), rows, u


def _loss_block(X, codes, cols, pair, intercept, w, loss, mu, hessian):
    y, rows, u = _margins(X, codes, cols, pair, w, intercept)
    t = 1.0 - y * u
    if loss == "squared_hinge":
        a = np.maximum(t, 0.0)
        f, d, active, h = float(a @ a), 2.0 * a, t > 0, 2.0
    else:  # the hinge, smoothed to a Huber loss below mu (exact hinge at and above it)
        f = float(np.sum(np.where(t >= mu, t - mu / 2, np.where(t > 0, t * t / (2 * mu), 0.0))))
        d = np.clip(t / mu, 0.0, 1.0)
        active, h = (t > 0) & (t < mu), 1.0 / mu
    Xs = X if rows is None else X[rows]
    yd = y * d
    g = -(Xs.T @ yd)[cols]
    if intercept:
        g = np.append(g, -intercept * yd.sum())
    if not hessian:
        return f, g
    Za = machine_rows(
        Xs[active],
        codes[rows][active] if rows is not None else codes[active],
        cols,
        pair,
        intercept,
    )
    return f, g, h * (Za.T @ Za)


def linear_loss(rows: Rows, cols, pair, w, *, loss, mu=1.0, intercept=0.0, hessian=False):
    """``sum_i l(1 - z_i . w)`` of one machine, its gradient and (generalised) Hessian.

    ``loss="squared_hinge"``: ``l(t) = max(0, t)^2``; ``"huber"``: the hinge
    ``max(0, t)`` smoothed below ``mu`` (``t^2 / (2 mu)`` on ``(0, mu)``,
    ``t - mu / 2`` above).  One pass over the row blocks where they live;
    returns ``(f, grad)`` or ``(f, grad, H)`` -- a scalar, a d-vector and a
    d x d matrix, whatever the number of rows.
    """
    cols = np.asarray(cols, dtype=np.int64)
    w = np.asarray(w, dtype=np.float64)
    pair = tuple(int(c) for c in pair)
    g = grid.graph(rows, "linear-loss", candidates=grid.linear_blocks(rows))
    return _run_blocks(g, _loss_block, cols, pair, intercept, w, loss, mu, hessian)


def _band_block(X, codes, cols, pair, w, low, high, cap, intercept):
    y, rows, u = _margins(X, codes, cols, pair, w, intercept)
    t = 1.0 - y * u
    upper = t >= high
    band = (t > low) & ~upper
    n_band = int(band.sum())
    Xs = X if rows is None else X[rows]
    up = (Xs[upper].T @ y[upper])[cols]
    if intercept:
        up = np.append(up, intercept * y[upper].sum())
    if n_band > cap:
        return up, np.empty((0, up.size)), np.array([n_band])
    Zb = machine_rows(Xs[band], np.where(y[band] > 0, pair[1], pair[0]), cols, pair, intercept)
    return up, Zb, np.array([n_band])


def _band_combine(parts):
    return (
        merge.add([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        merge.add([p[2] for p in parts]),
    )


def _violations_block(X, codes, cols, pair, w_old, w_new, low, high, tol, intercept):
    y, _, u_old = _margins(X, codes, cols, pair, w_old, intercept)
    _, _, u_new = _margins(X, codes, cols, pair, w_new, intercept)
    t_old, t_new = 1.0 - y * u_old, 1.0 - y * u_new
    # Rows held at the bound C need margin <= 1, rows at 0 margin >= 1 (to tol).
    return (
        np.array(
            [np.sum((t_old >= high) & (t_new < -tol)) + np.sum((t_old <= low) & (t_new > tol))]
        ),
    )


def hinge_band(rows: Rows, cols, pair, w, low, high, cap, intercept=0.0):
    """For the exact hinge solution: rows by ``t = 1 - z . w`` of one machine.

    Returns ``(sum of z over t >= high, the rows z with low < t < high, their
    count)``; the band rows come back only when the whole band holds at most
    ``cap`` rows in every block (else an empty array and the count): a
    few rows, never the data.  ``z`` as :func:`machine_rows` (with the
    ``intercept`` column when it is not 0).
    """
    cols = np.asarray(cols, dtype=np.int64)
    pair = tuple(int(c) for c in pair)
    w = np.asarray(w, dtype=np.float64)
    g = grid.graph(rows, "hinge-band", candidates=grid.linear_blocks(rows))
    parts = grid.per_block(g, _band_block, cols, pair, w, low, high, cap, intercept, fields=2)
    return grid.run(g, g.tree(parts, _band_combine, "sum"))


def hinge_violations(rows: Rows, cols, pair, w_old, w_new, low, high, tol, intercept=0.0):
    """Rows whose bound (by ``w_old``'s band) ``w_new`` violates by more than ``tol``."""
    cols = np.asarray(cols, dtype=np.int64)
    pair = tuple(int(c) for c in pair)
    g = grid.graph(rows, "hinge-kkt", candidates=grid.linear_blocks(rows))
    return int(
        _run_blocks(
            g,
            _violations_block,
            cols,
            pair,
            np.asarray(w_old, float),
            np.asarray(w_new, float),
            low,
            high,
            tol,
            intercept,
        )[0][0]
    )


__all__ = [
    "WeightedHistograms",
    "block_reduce",
    "counts",
    "hinge_band",
    "hinge_violations",
    "linear_gram",
    "linear_loss",
    "machine_rows",
]
