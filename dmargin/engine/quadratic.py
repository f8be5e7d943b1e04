"""Statistics symmetric in the pair, over a symmetric grid: IMMIGRATE's E-step and
LDM-RFE's kernel sums.

Each unordered pair of row blocks ``I <= J`` is one tile (:func:`grid.symmetric`)
whose distances serve the rows of both blocks: half the work of ordered tiles.
The kernels here are BLAS-bound and cannot thread inside: in-process their
tasks run on threads instead (:func:`grid.threaded_blocks`), under one BLAS
thread.
"""

from __future__ import annotations

import numpy as np

from . import grid, merge
from ._numba import blas_single_thread, pick
from .execution import TILE_BUDGET, Rows
from .kernels import quad, rbf
from .kernels.modes import CROSS, ORDERED, WITHIN, block_pair
from .kernels.terms import PairCoefficients


def _in_blas_limit(limit, fn, *args):
    if limit:
        with blas_single_thread():
            return fn(*args)
    return fn(*args)


# ---------------------------------------------------------------------------
# IMMIGRATE's quadratic statistic (two passes)
# ---------------------------------------------------------------------------


def _qlse_pair(Xp, yp, start_p, Xq, yq, start_q, limit_blas, U, lam, sigma, n_classes, store):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    return _in_blas_limit(
        limit_blas, quad.qlse_pairs, Xp, ip, yp, Xq, iq, yq, U, lam, sigma, n_classes, mode, store
    )


def _sigma_pair(Xp, yp, start_p, Xq, yq, start_q, limit_blas, U, lam, sigma, coef_p, coef_q, store):
    ip, iq, mode = block_pair(Xp, start_p, Xq, start_q)
    return _in_blas_limit(
        limit_blas,
        quad.sigma_pairs,
        Xp,
        ip,
        yp,
        Xq,
        iq,
        yq,
        U,
        lam,
        sigma,
        coef_p.log_z,
        coef_p.coef,
        coef_q.log_z,
        coef_q.coef,
        mode,
        store,
    )


def _quad_coef_task(coef, partial, ya, weight, sigma):
    return PairCoefficients(*coef(partial.m, partial.s, partial.v, ya, weight, sigma))


def _entropy_of(coef):
    return coef.entropy


def _pair_of(a, b):
    return a, b


def _qlse_ordered(Xa, ya, ia, Xc, yc, start_c, limit_blas, U, lam, sigma, n_classes):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    pairs = _in_blas_limit(
        limit_blas,
        quad.qlse_pairs,
        Xa,
        ia,
        ya,
        Xc,
        ic,
        yc,
        U,
        lam,
        sigma,
        n_classes,
        ORDERED,
        np.empty(0),
    )
    return quad.pair_side(pairs, 0)


def _sigma_ordered(Xa, ya, ia, Xc, yc, start_c, limit_blas, U, lam, sigma, coef):
    ic = np.arange(start_c, start_c + Xc.shape[0])
    log_z, c = coef.log_z, coef.coef
    # The candidates carry no coefficient in the ORDERED mode: empty stand-ins.
    return _in_blas_limit(
        limit_blas,
        quad.sigma_pairs,
        Xa,
        ia,
        ya,
        Xc,
        ic,
        yc,
        U,
        lam,
        sigma,
        log_z,
        c,
        log_z[:0],
        c[:0],
        ORDERED,
        np.empty(0),
    )


def _quad_sampled(rows: Rows, U, lam, sigma, weight, coef, anchors):
    """:func:`quad_statistic` for a sample of anchors: ordered tiles (sample x all rows)."""
    n, a, k = rows.n_samples, rows.n_features, rows.n_classes
    threads, blocks = grid.threaded_blocks(
        rows, anchors.n_samples * n * a * (a + U.shape[1]), quad.KERNEL.cost
    )
    g = grid.graph(rows, "quad-anchors", per_row=k * (a + 3), sample=anchors, candidates=blocks)
    limit = not g.local
    merged = grid.ordered(
        g, _qlse_ordered, limit, U, lam, sigma, k, combine=merge.lse_combine, tag="qlse"
    )
    coefs = [
        g.add("coef", _quad_coef_task, coef, merged[i], g.anchor(i)[1], weight[start:stop], sigma)
        for i, (start, stop) in enumerate(g.anchors)
    ]
    parts = grid.ordered_tiles(
        g, _sigma_ordered, limit, U, lam, sigma, each=lambda i, j: (coefs[i],), tag="sigma"
    )
    return _sigma_and_entropy(g, list(parts.values()), coefs, threads)


def _sigma_and_entropy(g, parts, coefs, threads):
    """Sum the Sigma parts and the anchor blocks' entropies; in-process under one BLAS limit."""
    entropy = g.tree([g.add("entropy", _entropy_of, c) for c in coefs], merge.add, "entropy")
    key = g.add("total", _pair_of, g.tree(parts, merge.add, "sum"), entropy)
    return grid.run(g, key, threads=threads, blas_limit=True)


def quad_statistic(rows: Rows, U, lam, sigma, anchor_weight, coef, anchors=None):
    """IMMIGRATE's E-step, two passes over unordered pairs: ``(Sigma, entropy)``.

    ``z`` and ``q`` are symmetric in the pair, so the row blocks are visited as
    pairs ``I <= J`` (``WITHIN`` on the diagonal, ``CROSS``
    off it), each pair's distances serving the anchors on both sides -- half
    the work of ordered tiles.  Pass 1 merges the per-anchor softmax partials
    ``(m, s, u)`` of :func:`quad.qlse_pairs` over the pairs an anchor block
    belongs to; ``coef(m, s, u, ya, weight, sigma) -> (log_z, coef,
    entropy)`` turns them into pair coefficients; pass 2 sums ``coef * z
    z^T`` over all pairs with :func:`quad.sigma_pairs`.  The A x A matrix is
    never carried per anchor.

    In-process the kernels cannot thread inside (BLAS does the work): one
    block, unless the work pays for threads (:func:`_numba.use_threads`);
    then blocks whose pairs run on threads.  When every pair's distances fit
    :data:`TILE_BUDGET`, pass 1 stores them and pass 2 reads them back
    instead of recomputing ``Z U``.

    ``anchors``: an :class:`~execution.Anchors` sample scoring against all
    rows (ordered tiles: a pair serves its anchor only); ``anchor_weight``
    then holds one weight per sampled anchor.
    """
    U = np.ascontiguousarray(U, dtype=np.float64)
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    weight = np.asarray(anchor_weight, dtype=np.float64)
    if anchors is not None:
        return _quad_sampled(rows, U, lam, sigma, weight, coef, anchors)
    n, a, k = rows.n_samples, rows.n_features, rows.n_classes
    threads, blocks = grid.threaded_blocks(
        rows, n * n * a * (a + U.shape[1]), quad.KERNEL.cost, most=max(1, n // quad.SEG)
    )
    g = grid.graph(rows, "quad", candidates=blocks)
    bounds = g.candidates
    pairs = g.symmetric()
    size = [
        quad.n_pairs(
            bounds[i][1] - bounds[i][0], bounds[j][1] - bounds[j][0], WITHIN if i == j else CROSS
        )
        for i, j in pairs
    ]
    keep_q = g.local and 8 * sum(size) <= TILE_BUDGET
    stores = {p: np.empty(s if keep_q else 0) for p, s in zip(pairs, size)}
    limit = not g.local  # in-process, the whole computation runs under one limit
    tiles = grid.symmetric(
        g, _qlse_pair, limit, U, lam, sigma, k, each=lambda i, j: (stores[i, j],), tag="qlse"
    )
    merged = grid.sides(g, tiles, merge.lse_combine, take=quad.pair_side)
    coefs = [
        g.add("coef", _quad_coef_task, coef, merged[i], g.block(i)[1], weight[start:stop], sigma)
        for i, (start, stop) in enumerate(bounds)
    ]
    parts = grid.symmetric(
        g,
        _sigma_pair,
        limit,
        U,
        lam,
        sigma,
        each=lambda i, j: (coefs[i], coefs[j], stores[i, j]),
        tag="sigma",
    )
    return _sigma_and_entropy(g, list(parts.values()), coefs, threads)


# ---------------------------------------------------------------------------
# LDM-RFE's left-out kernel sums
# ---------------------------------------------------------------------------


def _rbf_pair(Xp, yp, start_p, Xq, yq, start_q, threads, cols, gamma, Cp, Cq, same):
    Zp = rbf.scaled_columns(Xp, cols, gamma)
    with blas_single_thread():  # the sub-tiles' GEMMs run inside the kernel
        if threads:  # in-process: all rows, anchor chunks on threads
            n = Zp.shape[0]
            kernel = pick(rbf.TWINS, n * n * (len(cols) + 1) / 2, rbf.COST)
            chunks = 1 if kernel is rbf.TWINS[0] else max(2, min(64, n // 64))
            return kernel(Zp, Cp, chunks, rbf.squarings(Zp))
        Zq = rbf.scaled_columns(Xq, cols, gamma)
        return rbf.rbf_block_pair(Zp, Cp, Zq, Cq, same, rbf.squarings(Zp, Zq))


def rbf_left_out_sums(rows: Rows, coef, cols, gamma):
    """``[alpha^T K(-j) alpha for j in cols] + [alpha^T K alpha]``, summed over machines.

    Parameters
    ----------
    rows : Rows
        The training rows (all features), numpy or persisted dask blocks.
    coef : ndarray of shape (n_samples, n_machines)
        Each binary machine's kernel coefficients (labels absorbed), zero
        on rows a machine did not train on.
    cols : ndarray of int
        The surviving features; the kernel is over these columns only.
    gamma : float
        RBF width, ``k(u, v) = exp(-gamma ||u - v||^2)``.

    Returns
    -------
    sums : ndarray of shape (len(cols) + 1,)
    """
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.int64)
    gamma = float(gamma)
    g = grid.graph(rows, "kernel-sums")
    bounds = g.candidates

    def machine_coefs(i, j):
        (si, ti), (sj, tj) = bounds[i], bounds[j]
        return coef[si:ti], coef[sj:tj], i == j

    parts = grid.symmetric(g, _rbf_pair, g.local, cols, gamma, each=machine_coefs, tag="pair")
    return grid.run(g, g.tree(list(parts.values()), merge.add, "total"))


__all__ = ["quad_statistic", "rbf_left_out_sums"]
