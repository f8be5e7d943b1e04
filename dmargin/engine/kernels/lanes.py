"""A neighbour list compacted sixteen candidates a step: the vector compress numba does not emit.

The SURF family's pass 2 (:mod:`.surf`) turns a row of distances into the
positions of the candidates on one side of a threshold, in order.  Written as
a loop (``out[m] = t; m += d[t] < edge``) every candidate costs a dependent
store and add: LLVM does not vectorise a compaction.  :func:`compress16`
writes the same positions with one ``llvm.masked.compressstore`` per sixteen
candidates (``vpcompressq`` where the CPU has AVX-512; LLVM lowers it to
scalar stores elsewhere, with the same result), and :func:`compact` runs it
over a range, the last few candidates one at a time.  The positions and
their order are exactly the scalar loop's: tests compare the two.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from .._numba import inline

#: Candidates per step.
LANES = 16


def _splat(builder, value, vector_type):
    """``value`` in every lane of ``vector_type``."""
    one = builder.insert_element(
        ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0)
    )
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
    return builder.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined), zeros)


def _lanes_at(context, builder, array_type, array, start):
    """The ``LANES`` elements of a contiguous 1-D ``array`` from ``start``, as a vector."""
    data = context.make_array(array_type)(context, builder, array).data
    element = context.get_data_type(array_type.dtype)
    pointer = builder.bitcast(
        builder.gep(data, [start]), ir.VectorType(element, LANES).as_pointer()
    )
    return builder.load(pointer, align=1)


def _check_contiguous(**arrays):
    """The vector loads and the store read and write memory directly: contiguous 1-D
    arrays of float distances, int64 positions and ids, and booleans only."""
    dtypes = {"drow": (types.float32, types.float64), "ids": (types.int64,), "out": (types.int64,)}
    for name, array in arrays.items():
        allowed = dtypes.get(name, (types.boolean,))
        if not (
            isinstance(array, types.Array)
            and array.ndim == 1
            and array.layout == "C"
            and array.dtype in allowed
        ):
            raise TypingError(f"compress16: {name} must be a contiguous 1-D array of {allowed}")


def _store_compressed(context, builder, out_type, out, m, t, mask):
    """Write the positions ``t + lane`` of the lanes set in ``mask`` to ``out[m:]``, in
    order; returns ``m`` plus their number."""
    vector = ir.VectorType(ir.IntType(64), LANES)
    positions = builder.add(_splat(builder, t, vector), ir.Constant(vector, list(range(LANES))))
    data = context.make_array(out_type)(context, builder, out).data
    target = builder.gep(data, [m])
    fnty = ir.FunctionType(ir.VoidType(), [vector, target.type, mask.type])
    compress = cgutils.get_or_insert_function(
        builder.module, fnty, f"llvm.masked.compressstore.v{LANES}i64"
    )
    builder.call(compress, [positions, target, mask])
    count = builder.ctpop(builder.bitcast(mask, ir.IntType(LANES)))
    return builder.add(m, builder.zext(count, ir.IntType(64)))


def _count(builder, mask):
    """The number of lanes set in ``mask``, int64."""
    return builder.zext(builder.ctpop(builder.bitcast(mask, ir.IntType(LANES))), ir.IntType(64))


def _compress(context, builder, signature, args, masks):
    """The codegen of both intrinsics: ``args`` start ``drow, t, edge, certain, above``,
    ``masks`` adds the lanes' other conditions; returns ``(m, unsure)``."""
    drow_type, out_type = signature.args[0], signature.args[-2]
    drow_v, t_v, edge_v, certain_v, above_v = args[:5]
    out_v, m_v = args[-2:]
    mask = _side_mask(context, builder, drow_type, drow_v, t_v, edge_v, above_v)
    mask = masks(mask)
    sure = _side_mask(context, builder, drow_type, drow_v, t_v, certain_v, above_v)
    unsure = _count(builder, builder.and_(mask, builder.not_(sure)))
    m = _store_compressed(context, builder, out_type, out_v, m_v, t_v, mask)
    return context.make_tuple(builder, signature.return_type, [m, unsure])


def _side_mask(context, builder, drow_type, drow, t, edge, above):
    """Lanes ``t..t+15`` of ``drow`` below ``edge`` (``above`` false) or above it, compared
    in float64 as the scalar ``drow[t] < edge`` (a float32 value widened, exactly); a
    NaN distance is on neither side."""
    values = _lanes_at(context, builder, drow_type, drow, t)
    wide = ir.VectorType(ir.DoubleType(), LANES)
    if values.type != wide:
        values = builder.fpext(values, wide)
    level = _splat(builder, edge, wide)
    below = builder.fcmp_ordered("<", values, level)
    over = builder.fcmp_ordered(">", values, level)
    return builder.select(above, over, below)


_STEP = types.UniTuple(types.int64, 2)


@intrinsic
def compress16(typingctx, drow, t, edge, certain, above, out, m):
    """Of candidates ``t .. t+15``, those with ``drow[t'] < edge`` (``above``: ``> edge``),
    their positions ``t'`` written to ``out[m:]`` in order.  Returns ``m`` plus their
    number, and how many of them are not also on that side of ``certain`` (a
    float32 distance's band of doubt: ``certain == edge`` for none).  ``drow``
    (float32 or float64) must hold 16 values from ``t``, ``out`` (int64) room for
    16 from ``m``."""
    _check_contiguous(drow=drow, out=out)
    scalar = (types.int64, types.float64, types.float64, types.boolean)
    sig = _STEP(drow, *scalar, out, types.int64)

    def codegen(context, builder, signature, args):
        return _compress(context, builder, signature, args, lambda mask: mask)

    return sig, codegen


@intrinsic
def compress16_masked(typingctx, drow, t, edge, certain, above, ids, self_idx, keep, out, m):
    """:func:`compress16` of the candidates with ``keep[t']`` and ``ids[t'] != self_idx``
    only (``ids`` int64 and ``keep`` boolean, 16 values from ``t``)."""
    _check_contiguous(drow=drow, ids=ids, keep=keep, out=out)
    scalar = (types.int64, types.float64, types.float64, types.boolean)
    sig = _STEP(drow, *scalar, ids, types.int64, keep, out, types.int64)

    def codegen(context, builder, signature, args):
        t_v, ids_v, self_v, keep_v = args[1], args[5], args[6], args[7]

        def masks(mask):
            own = _lanes_at(context, builder, signature.args[5], ids_v, t_v)
            others = builder.icmp_signed("!=", own, _splat(builder, self_v, own.type))
            kept = _lanes_at(context, builder, signature.args[7], keep_v, t_v)
            kept = builder.icmp_unsigned("!=", kept, ir.Constant(kept.type, None))
            return builder.and_(mask, builder.and_(others, kept))

        return _compress(context, builder, signature, args, masks)

    return sig, codegen


@inline
def compact(drow, t0, t1, s, edge, certain, masked, self_idx, ids, keep, out):
    """``out[:m]`` = the ``t`` in ``[t0, t1)`` whose distance ``drow[t]`` puts them in
    set ``s`` (0: ``d < edge``, 1: ``d > edge``), in order; returns ``m`` and how
    many of them are not on that side of ``certain`` as well (the float32
    distances to recheck: ``certain == edge`` for float64 ones).  ``masked``:
    only those with ``keep[t]``, and not the candidate with ``ids[t] ==
    self_idx`` (the anchor itself, ORDERED mode).

    Sixteen candidates a step (:func:`compress16`), then the rest one at a
    time, branch-free (every ``t`` is written, the count moves by the test),
    so the loop costs the same whatever the neighbours' pattern.
    """
    m, unsure = 0, 0
    t = t0
    above = s != 0
    if masked:
        while t + LANES <= t1:
            m, more = compress16_masked(drow, t, edge, certain, above, ids, self_idx, keep, out, m)
            unsure += more
            t += LANES
    else:
        while t + LANES <= t1:
            m, more = compress16(drow, t, edge, certain, above, out, m)
            unsure += more
            t += LANES
    for u in range(t, t1):
        d = drow[u]
        inside = d > edge if above else d < edge
        if masked:
            inside = inside & (ids[u] != self_idx) & keep[u]
        out[m] = u
        m += inside
        unsure += inside & ((d <= certain) if above else (d >= certain))
    return m, unsure
