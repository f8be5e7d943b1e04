"""The machine's peak for Manhattan pair-features: what every Relief-family kernel is judged against.

A pair-feature is one ``|x_ak - x_jk|`` added to the pair's distance.  The peak is
the most pair-features per second that a plain numba loop reaches on ONE core,
float32 and float64, computing every distance between two blocks of ``rows``
rows (each pair's distance written out, as a kernel's tile needs it), over the
best of several blockings:

``rows``          row-major pairs, the features innermost: one reduction per pair.
``tile4x4``       a register tile of 4 anchors x 4 candidates, the features
                  innermost and contiguous: 16 accumulators, vectorised along the
                  features (both operands row-major).
``tile4x4_pad``   the same on rows padded with zero columns to a multiple of 16
                  features (a zmm of float32), counting only the real features.
``tile8x2_pad``   8 anchors x 2 candidates, padded as above.
``t4_b256``       candidates transposed (``XT[f, t]``), 4 anchors a sweep,
                  vectorised over a block of 256 candidates whose 4 accumulator
                  rows stay in L1.
``t8_b256``       the same with 8 anchors a sweep.
``t8_b128``, ``t8_b512``  8 anchors, candidate blocks of 128 and 512 (``--all``
                  only: never ahead of ``t8_b256`` here).

On the 2-core AMD EPYC (AVX-512) this project measures on, the register tiles win
by far in both precisions (about 1.8e10 float32 and 1.15e10 float64 pair-features/s
at A = 64); the transposed sweeps reach half of that or less, and the row-major
reduction falls behind at widths that are not a multiple of the vector.

Beside the one-core peak, the fastest blocking of :data:`TWO_CORE_BLOCKINGS` also
runs on two cores at once (:func:`measure_two_cores`): how much two threads can
gain on this machine when they share nothing but the hardware.  A fit's speed-up
from 2 threads is judged beside that figure.

Every loop is ``@njit(fastmath={"reassoc", "contract", "arcp"})``, as the engine's
kernels, serial, accumulating in the data's own precision.  :func:`measure_peak`
runs them in this process (it must be a one-thread one: numba's serial kernels use
one core whatever ``NUMBA_NUM_THREADS`` says, but the BLAS and the caller's threads
should be quiet); :func:`measure_in_subprocess` runs ``python benchmarks/_peak.py``
in a fresh interpreter with every thread variable at 1 and returns its result,
which is how ``_harness.machine_info`` records it beside every benchmark.

Usage::

    python benchmarks/_peak.py            # the table, then the JSON
    python benchmarks/_peak.py --quick    # fewer repeats
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

FASTMATH = {"reassoc", "contract", "arcp"}
#: What the peak is measured on, by default: the spambase-like width and a zmm-friendly one.
FEATURES = (57, 64)
ROWS = 2048
REPEATS = 5
#: The widths a padded blocking rounds its rows up to (a zmm of float32 / float64).
PAD = {"float32": 16, "float64": 8}
RESULT_PREFIX = "@@PEAK@@ "


# --------------------------------------------------------------------------- #
# the blockings: each writes out[i, j] = sum_k |XA[i, k] - XB[j, k]|
# --------------------------------------------------------------------------- #
@njit(fastmath=FASTMATH, cache=True, nogil=True, boundscheck=False)
def rows_kernel(XA, XB, out):
    na, a = XA.shape
    nb = XB.shape[0]
    zero = out.dtype.type(0)
    for i in range(na):
        xa = XA[i]
        for j in range(nb):
            xb = XB[j]
            s = zero
            for k in range(a):
                s += abs(xa[k] - xb[k])
            out[i, j] = s


@njit(fastmath=FASTMATH, cache=True, nogil=True, boundscheck=False)
def tile4x4_kernel(XA, XB, out):
    """4 anchors x 4 candidates, 16 accumulators vectorised along the features.

    ``XA.shape[0]`` and ``XB.shape[0]`` are multiples of 4 (the caller's blocks)."""
    na, a = XA.shape
    nb = XB.shape[0]
    zero = out.dtype.type(0)
    for i in range(0, na, 4):
        a0, a1, a2, a3 = XA[i], XA[i + 1], XA[i + 2], XA[i + 3]
        for j in range(0, nb, 4):
            b0, b1, b2, b3 = XB[j], XB[j + 1], XB[j + 2], XB[j + 3]
            s00 = s01 = s02 = s03 = zero
            s10 = s11 = s12 = s13 = zero
            s20 = s21 = s22 = s23 = zero
            s30 = s31 = s32 = s33 = zero
            for k in range(a):
                x0, x1, x2, x3 = a0[k], a1[k], a2[k], a3[k]
                y0, y1, y2, y3 = b0[k], b1[k], b2[k], b3[k]
                s00 += abs(x0 - y0)
                s01 += abs(x0 - y1)
                s02 += abs(x0 - y2)
                s03 += abs(x0 - y3)
                s10 += abs(x1 - y0)
                s11 += abs(x1 - y1)
                s12 += abs(x1 - y2)
                s13 += abs(x1 - y3)
                s20 += abs(x2 - y0)
                s21 += abs(x2 - y1)
                s22 += abs(x2 - y2)
                s23 += abs(x2 - y3)
                s30 += abs(x3 - y0)
                s31 += abs(x3 - y1)
                s32 += abs(x3 - y2)
                s33 += abs(x3 - y3)
            out[i, j], out[i, j + 1], out[i, j + 2], out[i, j + 3] = s00, s01, s02, s03
            out[i + 1, j], out[i + 1, j + 1], out[i + 1, j + 2], out[i + 1, j + 3] = (
                s10,
                s11,
                s12,
                s13,
            )
            out[i + 2, j], out[i + 2, j + 1], out[i + 2, j + 2], out[i + 2, j + 3] = (
                s20,
                s21,
                s22,
                s23,
            )
            out[i + 3, j], out[i + 3, j + 1], out[i + 3, j + 2], out[i + 3, j + 3] = (
                s30,
                s31,
                s32,
                s33,
            )


@njit(fastmath=FASTMATH, cache=True, nogil=True, boundscheck=False)
def tile8x2_kernel(XA, XB, out):
    """8 anchors x 2 candidates, 16 accumulators vectorised along the features.

    ``XA.shape[0]`` is a multiple of 8, ``XB.shape[0]`` of 2."""
    na, a = XA.shape
    nb = XB.shape[0]
    zero = out.dtype.type(0)
    for i in range(0, na, 8):
        a0, a1, a2, a3 = XA[i], XA[i + 1], XA[i + 2], XA[i + 3]
        a4, a5, a6, a7 = XA[i + 4], XA[i + 5], XA[i + 6], XA[i + 7]
        for j in range(0, nb, 2):
            b0, b1 = XB[j], XB[j + 1]
            s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = zero
            s40 = s41 = s50 = s51 = s60 = s61 = s70 = s71 = zero
            for k in range(a):
                y0, y1 = b0[k], b1[k]
                x0, x1, x2, x3 = a0[k], a1[k], a2[k], a3[k]
                x4, x5, x6, x7 = a4[k], a5[k], a6[k], a7[k]
                s00 += abs(x0 - y0)
                s01 += abs(x0 - y1)
                s10 += abs(x1 - y0)
                s11 += abs(x1 - y1)
                s20 += abs(x2 - y0)
                s21 += abs(x2 - y1)
                s30 += abs(x3 - y0)
                s31 += abs(x3 - y1)
                s40 += abs(x4 - y0)
                s41 += abs(x4 - y1)
                s50 += abs(x5 - y0)
                s51 += abs(x5 - y1)
                s60 += abs(x6 - y0)
                s61 += abs(x6 - y1)
                s70 += abs(x7 - y0)
                s71 += abs(x7 - y1)
            out[i, j], out[i, j + 1] = s00, s01
            out[i + 1, j], out[i + 1, j + 1] = s10, s11
            out[i + 2, j], out[i + 2, j + 1] = s20, s21
            out[i + 3, j], out[i + 3, j + 1] = s30, s31
            out[i + 4, j], out[i + 4, j + 1] = s40, s41
            out[i + 5, j], out[i + 5, j + 1] = s50, s51
            out[i + 6, j], out[i + 6, j + 1] = s60, s61
            out[i + 7, j], out[i + 7, j + 1] = s70, s71


@njit(fastmath=FASTMATH, cache=True, nogil=True, boundscheck=False)
def transposed4_kernel(XA, XT, out, block):
    """Candidates transposed (``XT[f, t]``), 4 anchors a sweep over a block of candidates.

    ``XA.shape[0]`` is a multiple of 4; the 4 rows of ``out`` a sweep adds to are the
    block's accumulators (``block`` candidates: 4 KiB of float32 at 256)."""
    na, a = XA.shape
    nb = XT.shape[1]
    zero = out.dtype.type(0)
    for j0 in range(0, nb, block):
        j1 = min(j0 + block, nb)
        for i in range(0, na, 4):
            o0, o1, o2, o3 = out[i, j0:j1], out[i + 1, j0:j1], out[i + 2, j0:j1], out[i + 3, j0:j1]
            for t in range(j1 - j0):
                o0[t] = zero
                o1[t] = zero
                o2[t] = zero
                o3[t] = zero
            for k in range(a):
                x0, x1, x2, x3 = XA[i, k], XA[i + 1, k], XA[i + 2, k], XA[i + 3, k]
                xt = XT[k, j0:j1]
                for t in range(j1 - j0):
                    y = xt[t]
                    o0[t] += abs(x0 - y)
                    o1[t] += abs(x1 - y)
                    o2[t] += abs(x2 - y)
                    o3[t] += abs(x3 - y)


@njit(fastmath=FASTMATH, cache=True, nogil=True, boundscheck=False)
def transposed4x2_kernel(XA, XT, out, block):
    """As :func:`transposed4_kernel`, two features a sweep: each sweep adds
    ``|x0 - y| + |x1 - u|`` to each of 4 accumulator rows, half their loads and
    stores per pair-feature.  The accumulators are one compact scratch block
    (4 rows of ``block``), copied to ``out`` after the sweep, as the engine's
    ``tile_distances32`` keeps a group's distances: rows of ``out`` itself lie
    8 KiB apart and would share cache sets."""
    na, a = XA.shape
    nb = XT.shape[1]
    acc = np.zeros((4, block), dtype=out.dtype)
    for j0 in range(0, nb, block):
        w = min(block, nb - j0)
        for i in range(0, na, 4):
            o0, o1, o2, o3 = acc[0], acc[1], acc[2], acc[3]
            for t in range(w):
                o0[t] = 0
                o1[t] = 0
                o2[t] = 0
                o3[t] = 0
            k = 0
            while k + 2 <= a:
                x0, x1, x2, x3 = XA[i, k], XA[i + 1, k], XA[i + 2, k], XA[i + 3, k]
                v0, v1, v2, v3 = XA[i, k + 1], XA[i + 1, k + 1], XA[i + 2, k + 1], XA[i + 3, k + 1]
                xt, ut = XT[k, j0 : j0 + w], XT[k + 1, j0 : j0 + w]
                for t in range(w):
                    y, u = xt[t], ut[t]
                    o0[t] += abs(x0 - y) + abs(v0 - u)
                    o1[t] += abs(x1 - y) + abs(v1 - u)
                    o2[t] += abs(x2 - y) + abs(v2 - u)
                    o3[t] += abs(x3 - y) + abs(v3 - u)
                k += 2
            if k < a:
                x0, x1, x2, x3 = XA[i, k], XA[i + 1, k], XA[i + 2, k], XA[i + 3, k]
                xt = XT[k, j0 : j0 + w]
                for t in range(w):
                    y = xt[t]
                    o0[t] += abs(x0 - y)
                    o1[t] += abs(x1 - y)
                    o2[t] += abs(x2 - y)
                    o3[t] += abs(x3 - y)
            for r in range(4):
                for t in range(w):
                    out[i + r, j0 + t] = acc[r, t]


@njit(fastmath=FASTMATH, cache=True, nogil=True, boundscheck=False)
def transposed8_kernel(XA, XT, out, block):
    """As :func:`transposed4_kernel` with 8 anchors a sweep (``XA.shape[0]`` a multiple of 8).

    The 8 accumulator rows are one scratch array (8 rows of ``out`` as separate slices
    make too many possible overlaps for LLVM to vectorise the sweep: 2-3x slower)."""
    na, a = XA.shape
    nb = XT.shape[1]
    acc = np.zeros((8, block), dtype=out.dtype)
    for j0 in range(0, nb, block):
        w = min(block, nb - j0)
        for i in range(0, na, 8):
            acc[:] = 0
            for k in range(a):
                x0, x1, x2, x3 = XA[i, k], XA[i + 1, k], XA[i + 2, k], XA[i + 3, k]
                x4, x5, x6, x7 = XA[i + 4, k], XA[i + 5, k], XA[i + 6, k], XA[i + 7, k]
                for t in range(w):
                    y = XT[k, j0 + t]
                    acc[0, t] += abs(x0 - y)
                    acc[1, t] += abs(x1 - y)
                    acc[2, t] += abs(x2 - y)
                    acc[3, t] += abs(x3 - y)
                    acc[4, t] += abs(x4 - y)
                    acc[5, t] += abs(x5 - y)
                    acc[6, t] += abs(x6 - y)
                    acc[7, t] += abs(x7 - y)
            for r in range(8):
                for t in range(w):
                    out[i + r, j0 + t] = acc[r, t]


# --------------------------------------------------------------------------- #
# the blockings by name: how each lays out its operands, and its call
# --------------------------------------------------------------------------- #
def _padded(X, dtype):
    width = -(-X.shape[1] // PAD[dtype]) * PAD[dtype]
    out = np.zeros((X.shape[0], width), dtype=X.dtype)
    out[:, : X.shape[1]] = X
    return out


#: ``name: (layout of the candidates, call)``; layouts: "rows", "padded", "transposed".
BLOCKINGS = {
    "rows": ("rows", lambda A, B, out: rows_kernel(A, B, out)),
    "tile4x4": ("rows", lambda A, B, out: tile4x4_kernel(A, B, out)),
    "tile4x4_pad": ("padded", lambda A, B, out: tile4x4_kernel(A, B, out)),
    "tile8x2_pad": ("padded", lambda A, B, out: tile8x2_kernel(A, B, out)),
    "t4_b256": ("transposed", lambda A, T, out: transposed4_kernel(A, T, out, 256)),
    "t4x2_b128": ("transposed", lambda A, T, out: transposed4x2_kernel(A, T, out, 128)),
    "t4x2_b256": ("transposed", lambda A, T, out: transposed4x2_kernel(A, T, out, 256)),
    "t8_b128": ("transposed", lambda A, T, out: transposed8_kernel(A, T, out, 128)),
    "t8_b256": ("transposed", lambda A, T, out: transposed8_kernel(A, T, out, 256)),
    "t8_b512": ("transposed", lambda A, T, out: transposed8_kernel(A, T, out, 512)),
}
#: The blockings measured beside every benchmark (:data:`BLOCKINGS` less the candidate
#: blocks that never led).
DEFAULT_BLOCKINGS = (
    "rows",
    "tile4x4",
    "tile4x4_pad",
    "tile8x2_pad",
    "t4_b256",
    "t4x2_b128",
    "t8_b256",
)


#: The blockings :func:`measure_two_cores` picks from: those whose speed does not hang
#: on where the allocator put ``out``.  ``t4_b256`` adds into 4 rows of ``out`` 8 KiB
#: apart, and its rate swings by 2x from one allocation to the next (1e10 to 2e10
#: float32 pair-features/s on the 2-core AMD EPYC with AVX2).
TWO_CORE_BLOCKINGS = ("tile4x4", "tile4x4_pad", "tile8x2_pad", "t4x2_b128", "t8_b256")


def _operands(XA, XB, layout, dtype):
    if layout == "padded":
        return _padded(XA, dtype), _padded(XB, dtype)
    if layout == "transposed":
        return XA, np.ascontiguousarray(XB.T)
    return XA, XB


def measure_peak(
    features=FEATURES, rows: int = ROWS, repeats: int = REPEATS, blockings=None, seed: int = 0
) -> dict:
    """Pair-features per second of every blocking, float32 and float64, in this process.

    Parameters
    ----------
    features : iterable of int
        The widths measured (each blocking at each width).
    rows : int
        Rows of each block (anchors and candidates); a multiple of 8.
    repeats : int
        Timed calls of each blocking after a warm-up call; the best counts.
    blockings : iterable of str or None
        Names of :data:`BLOCKINGS` (``None``: :data:`DEFAULT_BLOCKINGS`).
    seed : int
        Of the uniform [0, 1) data.

    Returns
    -------
    dict
        ``{"float32": {...}, "float64": {...}, "rows", "features", "repeats",
        "numba_threads", "seconds"}``; per dtype ``pair_features_per_s`` (the best
        over blockings and widths: the peak), ``blocking`` and ``features`` (who won),
        ``by_width`` (``{width: {blocking: pair-features/s}}``) and ``two_cores``
        (the fastest of :data:`TWO_CORE_BLOCKINGS` measured, on two cores at once:
        :func:`measure_two_cores`).  A distance is
        counted at the real width, never at a padded one; every blocking's distances
        are checked against the first's.
    """
    import numba

    if rows % 8:
        raise ValueError(f"rows must be a multiple of 8 (the tiles' anchors); got {rows}")
    names = list(DEFAULT_BLOCKINGS if blockings is None else blockings)
    unknown = [n for n in names if n not in BLOCKINGS]
    if unknown:
        raise ValueError(f"unknown blockings {unknown}; known: {sorted(BLOCKINGS)}")
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    result = {
        "rows": rows,
        "features": list(features),
        "repeats": repeats,
        "numba_threads": numba.get_num_threads(),
        "fastmath": sorted(FASTMATH),
    }
    for dtype in ("float32", "float64"):
        by_width = {}
        for a in features:
            XA = rng.random((rows, a)).astype(dtype)
            XB = rng.random((rows, a)).astype(dtype)
            reference = None
            rates = {}
            for name in names:
                layout, call = BLOCKINGS[name]
                A, B = _operands(XA, XB, layout, dtype)
                out = np.empty((rows, rows), dtype=dtype)
                call(A, B, out)  # compile (or load from the cache) and warm up
                if reference is None:
                    reference = out.copy()
                elif not np.allclose(out, reference, rtol=1e-4 if dtype == "float32" else 1e-10):
                    raise AssertionError(f"blocking {name} computes other distances")
                best = min(_timed(call, A, B, out) for _ in range(repeats))
                rates[name] = rows * rows * a / best
            by_width[str(a)] = rates
        width, name = max(
            ((w, n) for w in by_width for n in by_width[w]), key=lambda wn: by_width[wn[0]][wn[1]]
        )
        result[dtype] = {
            "pair_features_per_s": by_width[width][name],
            "blocking": name,
            "features": int(width),
            "by_width": by_width,
        }
    for dtype in ("float32", "float64"):
        by_width = result[dtype]["by_width"]
        steady = [(w, n) for w in by_width for n in by_width[w] if n in TWO_CORE_BLOCKINGS]
        if steady:
            width, name = max(steady, key=lambda wn: by_width[wn[0]][wn[1]])
            result[dtype]["two_cores"] = measure_two_cores(
                name, int(width), dtype, rows, repeats, seed
            )
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def measure_two_cores(name, a, dtype, rows=ROWS, repeats=REPEATS, seed=0) -> dict:
    """A blocking on two cores at once: what a fit on 2 threads can expect.

    Two Python threads each call the blocking (a ``nogil`` kernel) on operands of
    their own, released together; a round's time is the later thread's.  Beside it,
    the same calls one after the other on one thread, interleaved with the rounds,
    so that a drift of the host's speed shows in both.  ``scaling`` is the one-core
    time of the two calls over the two-core round's (2.0 when the cores share
    nothing: caches, memory bandwidth or a physical core behind two virtual ones).
    """
    import threading

    rng = np.random.default_rng(seed + 1)
    layout, call = BLOCKINGS[name]
    jobs = []
    for _ in range(2):
        A, B = _operands(
            rng.random((rows, a)).astype(dtype), rng.random((rows, a)).astype(dtype), layout, dtype
        )
        jobs.append((A, B, np.empty((rows, rows), dtype=dtype)))
    for job in jobs:
        call(*job)
    # A timeout, and an abort on a failed call: an error never leaves a barrier waiting.
    go, done = threading.Barrier(3, timeout=600), threading.Barrier(3, timeout=600)
    errors = []

    def worker(job):
        try:
            while True:
                go.wait()
                call(*job)
                done.wait()
        except threading.BrokenBarrierError:
            return  # released (the rounds are over) or another thread failed
        except BaseException as exc:
            errors.append(exc)
            go.abort()
            done.abort()

    threads = [threading.Thread(target=worker, args=(job,), daemon=True) for job in jobs]
    for t in threads:
        t.start()
    both, one = [], []
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            go.wait()
            done.wait()
            both.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for job in jobs:
                call(*job)
            one.append(time.perf_counter() - t0)
    except threading.BrokenBarrierError:
        if errors:
            raise errors[0] from None
        raise
    finally:
        go.abort()  # the threads wait at go: released, they return
        for t in threads:
            t.join()
    return {
        "pair_features_per_s": 2 * rows * rows * a / min(both),
        "one_core_pair_features_per_s": 2 * rows * rows * a / min(one),
        "scaling": min(one) / min(both),
        "blocking": name,
        "features": int(a),
    }


def _timed(call, A, B, out) -> float:
    t0 = time.perf_counter()
    call(A, B, out)
    return time.perf_counter() - t0


THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def measure_in_subprocess(quick: bool = False, timeout: float = 600.0) -> dict:
    """:func:`measure_peak` in a fresh interpreter with every thread variable at 1.

    The kernels are cached (``cache=True``, beside this file), so only the first run
    on a machine compiles them.  A failure comes back as ``{"ok": False, "error": ...}``.
    """
    env = os.environ.copy()
    env.update({var: "1" for var in THREAD_VARS})
    cmd = [sys.executable, str(Path(__file__).resolve()), "--json", *(["--quick"] if quick else [])]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return {"ok": True, **json.loads(line[len(RESULT_PREFIX) :])}
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
    return {"ok": False, "error": "\n".join(tail), "returncode": proc.returncode}


def markdown(peak: dict) -> str:
    """The peak and every blocking's rate, one table per dtype."""
    lines = []
    for dtype in ("float32", "float64"):
        entry = peak[dtype]
        widths = list(entry["by_width"])
        lines.append(
            f"{dtype}: peak {entry['pair_features_per_s']:.3g} pair-features/s "
            f"({entry['blocking']}, A = {entry['features']})"
        )
        two = entry.get("two_cores")
        if two:
            lines.append(
                f"on two cores at once: {two['pair_features_per_s']:.3g} pair-features/s, "
                f"{two['scaling']:.2f}x one core"
            )
        lines.append("| blocking | " + " | ".join(f"A = {w}" for w in widths) + " |")
        lines.append("|---|" + "---|" * len(widths))
        for name in entry["by_width"][widths[0]]:
            cells = [f"{entry['by_width'][w][name]:.3g}" for w in widths]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 repeats instead of 5")
    parser.add_argument("--json", action="store_true", help="print only the JSON result line")
    parser.add_argument("--all", action="store_true", help="every blocking of BLOCKINGS")
    args = parser.parse_args(argv)
    peak = measure_peak(
        repeats=2 if args.quick else REPEATS, blockings=list(BLOCKINGS) if args.all else None
    )
    if not args.json:
        print(markdown(peak))
    print(RESULT_PREFIX + json.dumps(peak), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
