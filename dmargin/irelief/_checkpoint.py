"""Checkpoint files: their format, and the reader that takes them as untrusted input.

A checkpoint of :class:`dmargin.OnlineIRelief` (``save_state`` /
``load_state``) is an uncompressed zip of ``.npy`` members as
:func:`numpy.savez` writes it: ``header`` -- a JSON document in a 0-d
unicode array -- and the stream's arrays.  This module holds the format
(:func:`array_specs`: the members and shapes a header implies) and
:func:`read_online_state`, the reader; :mod:`dmargin.irelief._checkpoint_write`
writes the files, atomically.

The reader trusts nothing in the file, neither the header's counts nor the zip
directory's sizes, and allocates nothing large before both agree with each other
and with the file:

0. the path: a regular file, opened without blocking (a FIFO or a device
   is refused, never waited on);
1. the zip directory: known member names, compressed sizes that fit in
   the file, uncompressed sizes that the compressed bytes can produce
   and that stay within a small multiple of the members' compressed
   bytes (no zip bombs; bytes outside the members, padding, count for
   nothing);
2. the header (a bounded read), then its counts against the file: the
   arrays the counts imply must fit in the members' compressed bytes
   (see ``_DEFLATE_MAX_RATIO``), so a header that claims a billion
   features in a small file is refused before any array is read;
3. the ``.npy`` preamble of every member (dtype, shape, order), against
   the header and against the member's declared size;
4. the arrays' bytes, smallest member first, each streamed in bounded
   chunks into an array of the checked shape (never more bytes than the
   checked size, whatever the member's deflate stream would expand to,
   and never more than a small multiple of the bytes read from the file
   so far: a deflate stream that ends early inside its member's bytes
   is refused as it expands);
5. every value the online kernel relies on (finite, in range, the
   invariants of the weights) and the parameters (through the
   estimator's own checks): :mod:`dmargin.irelief._online_state`.

The numba kernels have no bounds checks, so a shape that slipped through
would read or write out of bounds; every problem is instead one
``ValueError`` naming the file, the member and the problem.  Members are
read with :mod:`zipfile` and :mod:`numpy.lib.format`, not
:func:`numpy.load`, which allocates whatever shape a member declares
before reading it.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import struct
import zipfile
import zlib

import numpy as np

from ..io._special_files import open_regular
from ._online_state import Problem, check_online_state, short

#: Suffix of the copy of the checkpoint a save replaced.
PREVIOUS_SUFFIX = ".prev"

#: The member holding the JSON header.
HEADER = "header"
# Bytes of the header member (JSON as UTF-32: 4 bytes a character; feature
# names dominate) and of the labels array: far above any real checkpoint.
_MAX_HEADER_BYTES = 64 << 20
_MAX_CLASSES_BYTES = 64 << 20
# The .npy preamble (magic, version, dict, padding) in front of each array;
# numpy itself refuses headers over 10000 bytes.
_NPY_PREAMBLE = 16 << 10
# dmargin writes stored (uncompressed) members, so the members' sizes add
# up to about their compressed sizes.  More than this many times the
# members' compressed bytes (beyond a small allowance) is a compressed
# archive that would expand in memory -- a zip bomb -- and is refused
# before anything is decompressed; bytes that no member holds (a file
# padded to look large) do not count.  While reading, the bytes
# decompressed stay within the same multiple of the bytes read.
_MAX_EXPANSION = 4
_EXPANSION_ALLOWANCE = 64 << 20
# The most a deflate stream can expand: one length/distance pair copies at
# most 258 bytes and takes at least 2 bits (a 1-bit length code, a 1-bit
# distance code), so a compressed byte yields at most 4 * 258 bytes.  A
# member's compressed size (bounded by the file's) times this (times 1 for
# a stored member) bounds every array the header may claim: an honest
# checkpoint always fits it, a header whose counts the file cannot hold
# is refused before anything of that size is allocated.
_DEFLATE_MAX_RATIO = 1032
# Members are streamed in pieces of this size: what a lying deflate stream
# can make the reader decompress at once.
_CHUNK = 1 << 20
_NPY_MAGIC = b"\x93NUMPY"
# What ``zipfile`` / ``numpy.lib.format`` / ``json`` raise on bytes that are
# not what they should be: turned into the one ValueError below.
_READ_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    OSError,
    ValueError,
    KeyError,
    OverflowError,
    RecursionError,
    UnicodeDecodeError,
    NotImplementedError,
    struct.error,
    zlib.error,
)


def previous_path(path):
    """Where a save keeps the file it replaced: ``path + ".prev"``
    (:func:`dmargin.irelief._checkpoint_write.write_atomic`)."""
    return os.fspath(path) + PREVIOUS_SUFFIX


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def read_online_state(path, estimator_cls, expected_format):
    """Read and check an :class:`~dmargin.OnlineIRelief` checkpoint.

    Parameters
    ----------
    path : str or path-like
    estimator_cls : type
        The estimator class; its parameters are re-checked with
        :func:`dmargin._validation.check_params`.
    expected_format : str
        The header's ``format`` string this version writes.

    Returns
    -------
    header : dict
        The checked header.
    arrays : dict of str to ndarray
        The checked arrays (C-contiguous, writable copies).
    estimator : estimator_cls
        A new estimator with the header's parameters.
    rng : numpy.random.Generator
        The stream's generator, in its saved state.

    Raises
    ------
    ValueError
        Anything wrong with the file, in one message naming the file, the
        problem and what to do; ``path`` is not a regular file (a FIFO, a
        device, a directory).
    FileNotFoundError, PermissionError
        ``path`` cannot be opened.
    """
    name = os.fspath(path)
    with open_regular(name) as fh:  # a missing file is the caller's error, not the file's
        try:
            header, arrays = _read_npz(fh, expected_format)
            state = check_online_state(header, arrays, estimator_cls)
        except Problem as exc:
            raise ValueError(_message(name, str(exc))) from exc.__cause__
        except _READ_ERRORS as exc:
            problem = f"it cannot be read ({type(exc).__name__}: {short(exc)})"
            raise ValueError(_message(name, problem)) from exc
    return (header, arrays) + state


def _message(name, problem):
    prev = previous_path(name)
    if not name.endswith(PREVIOUS_SUFFIX) and os.path.isfile(prev):
        fix = f"resume from the previous checkpoint {prev} (OnlineIRelief.load_state({prev!r}))"
    else:
        fix = "restart the stream from its beginning (there is no earlier checkpoint)"
    return (
        f"{name}: {problem}. The file is damaged or was not written by "
        f"OnlineIRelief.save_state; {fix}."
    )


def _read_npz(fh, expected_format):
    """The header and the arrays of a checkpoint, each checked before it is built."""
    size = os.fstat(fh.fileno()).st_size
    if size == 0:
        raise Problem("the file is empty (0 bytes): a save was interrupted or the disk was full")
    fh = _Counted(fh)
    try:
        archive = zipfile.ZipFile(fh)
    except zipfile.BadZipFile as exc:
        raise Problem(
            f"it is not a complete zip archive ({exc}): truncated, or not an .npz file at all"
        ) from exc
    with archive, contextlib.ExitStack() as streams:
        members = _check_directory(archive.infolist(), size)
        if HEADER not in members:
            raise Problem("it has no 'header' member")
        header = _read_header(archive, members[HEADER], expected_format)
        specs = array_specs(header)
        missing = sorted(set(specs) - set(members))
        extra = sorted(set(members) - set(specs) - {HEADER})
        if missing or extra:
            raise Problem(
                f"its members do not match its header: missing {missing}, unexpected {extra}"
            )
        # Every size first: nothing is decompressed when the header's counts or a
        # member's declared size are more than the file can hold or the header allows.
        _check_counts(header, specs, members, size)
        for key, (_, shape, limit, why) in specs.items():
            declared = members[key].file_size
            if declared > limit:
                raise Problem(
                    f"member {key!r} declares {declared} bytes uncompressed but "
                    f"an array of shape {shape} ({why}) takes at most {limit}"
                )
        # Then every .npy preamble (a few hundred bytes each): all dtypes and shapes are
        # checked against the header before the bytes of any array are read.
        opened, layouts = {}, {}
        for key, spec in specs.items():
            info = members[key]
            with _member_errors(info):
                opened[key] = streams.enter_context(archive.open(info))
                layouts[key] = _read_preamble(opened[key], info, key, *spec)
        # Smallest first: a large member is read only after the smaller ones.
        arrays = {}
        for key in sorted(specs, key=lambda k: members[k].file_size):
            with _member_errors(members[key]):
                arrays[key] = _read_data(opened[key], members[key], *layouts[key], fh)
    return header, {key: arrays[key] for key in specs}


class _Counted:
    """A binary file that counts the bytes read from it and those decompressed from them.

    :meth:`spend` is told each piece of array data a member yields and
    refuses more than ``_MAX_EXPANSION`` times the bytes read so far (beyond
    ``_EXPANSION_ALLOWANCE``): a deflate stream that ends early inside its
    member's declared bytes (the rest padding) passes the directory's checks
    but cannot expand past that bound.
    """

    def __init__(self, fh):
        self._fh, self.read_bytes, self.decompressed = fh, 0, 0

    def read(self, n=-1):
        data = self._fh.read(n)
        self.read_bytes += len(data)
        return data

    def seek(self, offset, whence=os.SEEK_SET):
        return self._fh.seek(offset, whence)

    def tell(self):
        return self._fh.tell()

    def seekable(self):
        return True

    def fileno(self):
        return self._fh.fileno()

    def spend(self, n, info):
        self.decompressed += n
        limit = max(_MAX_EXPANSION * self.read_bytes, _EXPANSION_ALLOWANCE)
        if self.decompressed > limit:
            raise Problem(
                f"member {info.filename!r} expands to more than {_MAX_EXPANSION}x "
                f"the {self.read_bytes} bytes read from the file (plus "
                f"{_EXPANSION_ALLOWANCE >> 20} MiB): a compressed archive that "
                "would expand in memory (a zip bomb), refused while decompressing"
            )


def _check_directory(infos, size):
    """Member name -> ZipInfo, after checking names, compression and declared sizes.

    Compressed sizes must fit in the file (together: members that share
    bytes are how overlapping zip bombs expand), and uncompressed sizes must
    be what the compressed bytes can produce.
    """
    members = {}
    total = compressed = 0
    for info in infos:
        key = info.filename[:-4] if info.filename.endswith(".npy") else None
        if key not in _KNOWN_MEMBERS:
            raise Problem(f"it has an unexpected member {info.filename!r}")
        if key in members:
            raise Problem(f"member {info.filename!r} appears twice")
        if info.flag_bits & 0x1:
            raise Problem(f"member {info.filename!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise Problem(
                f"member {info.filename!r} uses compression method "
                f"{info.compress_type} (save_state writes uncompressed members)"
            )
        if info.compress_size > size:
            raise Problem(
                f"member {info.filename!r} declares {info.compress_size} "
                f"compressed bytes in a file of {size} bytes"
            )
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise Problem(
                f"member {info.filename!r} is stored uncompressed but declares "
                f"{info.file_size} bytes of content in {info.compress_size}"
            )
        if info.file_size > _capacity(info):
            raise Problem(
                f"member {info.filename!r} declares {info.file_size} bytes "
                f"uncompressed from {info.compress_size} deflated bytes, more "
                f"than deflate can expand them to ({_DEFLATE_MAX_RATIO}x)"
            )
        members[key] = info
        total += info.file_size
        compressed += info.compress_size
    if compressed > size:
        raise Problem(
            f"its members declare {compressed} compressed bytes in a file of "
            f"{size} bytes: members that overlap (a zip bomb)"
        )
    # The members' own bytes, not the file's size: padding outside them buys nothing.
    limit = max(_MAX_EXPANSION * compressed, _EXPANSION_ALLOWANCE)
    if total > limit:
        raise Problem(
            f"its members declare {total} bytes uncompressed from {compressed} "
            f"compressed bytes in a file of {size} bytes (more than "
            f"{_MAX_EXPANSION}x plus {_EXPANSION_ALLOWANCE >> 20} MiB): a "
            "compressed archive that would expand in memory (a zip bomb), "
            "refused before decompressing"
        )
    return members


def _capacity(info):
    """The most bytes a member's compressed bytes can decompress to."""
    ratio = 1 if info.compress_type == zipfile.ZIP_STORED else _DEFLATE_MAX_RATIO
    return info.compress_size * ratio


def _check_counts(header, specs, members, size):
    """Refuse header counts whose arrays the file's members cannot hold.

    Checked before any member but the header is read, so that no array of
    the counts' size is allocated for a file that cannot hold it.
    """
    needed, short = 0, []
    for key, (dtype, shape, _, _) in specs.items():
        # Labels take at least a byte each, whatever their dtype.
        need = math.prod(shape) * (1 if dtype is None else dtype.itemsize)
        needed += need
        if need > _capacity(members[key]):
            short.append(
                f"member {members[key].filename!r} holds at most "
                f"{_capacity(members[key])} of the {need} bytes of array {key!r} "
                f"{shape}"
            )
    capacity = sum(_capacity(members[key]) for key in specs)
    if needed > capacity:
        counts = ", ".join(
            f"{key} {header[key]}" for key in ("n_features", "n_classes", "n_reference")
        )
        raise Problem(
            f"its header's counts do not fit in the file: {counts} make its "
            f"arrays at least {needed} bytes, more than the {capacity} its "
            f"members can hold in a file of {size} bytes (a stored member holds "
            f"its size, a deflated one at most {_DEFLATE_MAX_RATIO}x its size); "
            f"{'; '.join(short[:3])}{'; ...' if len(short) > 3 else ''}"
        )


@contextlib.contextmanager
def _member_errors(info):
    """What zipfile / numpy raise while reading a member, as a problem naming it."""
    try:
        yield
    except _READ_ERRORS as exc:
        raise Problem(
            f"member {info.filename!r} cannot be read ({type(exc).__name__}: {short(exc)})"
        ) from exc


def _read_upto(stream, n):
    """At most ``n`` bytes of ``stream``, decompressed ``_CHUNK`` bytes at a time."""
    parts, got = [], 0
    while got < n:
        part = stream.read(min(_CHUNK, n - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _read_member(archive, info, limit):
    """The whole content of a small member (at most ``limit`` bytes)."""
    if info.file_size > limit:
        raise Problem(
            f"member {info.filename!r} declares {info.file_size} bytes "
            f"uncompressed, more than the {limit} allowed"
        )
    # Neither the directory nor the deflate stream is trusted: at most the smaller
    # of the two sizes (and one byte to tell a longer member) is decompressed.
    with _member_errors(info), archive.open(info) as member:
        data = _read_upto(member, min(limit, info.file_size) + 1)
    if len(data) != info.file_size:
        raise Problem(
            f"member {info.filename!r} has {len(data)} bytes, its directory "
            f"entry says {info.file_size}"
        )
    return data


def _read_preamble(stream, info, key, dtype, shape, limit, why):
    """``(shape, fortran_order, dtype)`` of a member's ``.npy`` preamble, checked.

    Reads only the preamble (at most ``_NPY_PREAMBLE`` bytes) and leaves
    ``stream`` at the first byte of the array's data, whose size must be
    what the member declares.
    """
    start = _read_exact(stream, info, len(_NPY_MAGIC) + 2, "its .npy magic string")
    if start[: len(_NPY_MAGIC)] != _NPY_MAGIC:
        raise Problem(
            f"member {info.filename!r} is not a .npy array (it does not start "
            "with the .npy magic string)"
        )
    version = tuple(start[len(_NPY_MAGIC) :])
    if version not in ((1, 0), (2, 0)):
        raise Problem(f"array {key!r} is in .npy format version {version}, not 1.0 or 2.0")
    length_format = "<H" if version == (1, 0) else "<I"
    raw_length = _read_exact(stream, info, struct.calcsize(length_format), "its .npy header length")
    length = struct.unpack(length_format, raw_length)[0]
    if len(start) + len(raw_length) + length > _NPY_PREAMBLE:
        raise Problem(
            f"array {key!r} has a .npy header of {length} bytes, more than "
            f"the {_NPY_PREAMBLE} numpy ever writes"
        )
    preamble = start + raw_length + _read_exact(stream, info, length, "its .npy header")
    got_shape, fortran, got_dtype, offset = _npy_preamble(preamble, key)
    check_layout(key, got_dtype, got_shape, dtype, shape, why)
    size = offset + math.prod(shape) * got_dtype.itemsize
    if info.file_size != size:
        raise Problem(
            f"member {info.filename!r} declares {info.file_size} bytes "
            f"uncompressed but its .npy header ({got_dtype}, shape {got_shape}) "
            f"makes it {size}"
        )
    return shape, fortran, got_dtype


def _read_exact(stream, info, n, what):
    """Exactly ``n`` bytes of ``stream`` (``what`` they are, for the message)."""
    data = _read_upto(stream, n)
    if len(data) != n:
        raise Problem(f"member {info.filename!r} ends after {len(data)} bytes, inside {what}")
    return data


def _read_data(stream, info, shape, fortran, dtype, counted):
    """The array whose checked preamble was just read, streamed into place.

    Called only after every check: the array allocated here is exactly the
    member's declared size, which the directory checks bound by the
    members' bytes; its pages are written only as ``counted`` allows.
    """
    out = np.empty(shape[::-1] if fortran else shape, dtype=dtype)
    view = memoryview(out.reshape(-1).view(np.uint8))
    got = 0
    while got < len(view):
        part = stream.read(min(_CHUNK, len(view) - got))
        if not part:
            raise Problem(
                f"member {info.filename!r} ends after {got} of its {len(view)} bytes of array data"
            )
        counted.spend(len(part), info)
        view[got : got + len(part)] = part
        got += len(part)
    if stream.read(1):
        raise Problem(f"member {info.filename!r} is longer than its directory entry says")
    return np.ascontiguousarray(out.T if fortran else out)


def _npy_preamble(data, key):
    """``(shape, fortran_order, dtype, offset of the data)`` of a ``.npy`` member."""
    buf = io.BytesIO(data)
    version = np.lib.format.read_magic(buf)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
    else:
        raise Problem(f"array {key!r} is in .npy format version {version}, not 1.0 or 2.0")
    if dtype.hasobject:
        raise Problem(
            f"array {key!r} is an object array (pickled Python objects), which "
            "save_state never writes and load_state does not unpickle"
        )
    return shape, fortran, dtype, buf.tell()


def _read_header(archive, info, expected_format):
    data = _read_member(archive, info, _MAX_HEADER_BYTES)
    shape, _, dtype, start = _npy_preamble(data, HEADER)
    if shape != () or dtype.kind != "U" or not dtype.isnative or dtype.itemsize == 0:
        raise Problem(
            f"the header is an array of dtype {dtype} and shape {shape}, not one JSON string"
        )
    if len(data) - start != dtype.itemsize:
        raise Problem(
            f"the header has {len(data) - start} bytes of text, its dtype "
            f"{dtype} says {dtype.itemsize}"
        )
    text = str(np.frombuffer(data, dtype=dtype, count=1, offset=start)[0])
    try:
        header = json.loads(text)
    except RecursionError as exc:
        raise Problem("the header JSON is nested too deeply") from exc
    except ValueError as exc:  # JSONDecodeError, and ints over Python's digit limit
        raise Problem(f"the header is not valid JSON ({short(exc, 120)})") from exc
    if not isinstance(header, dict):
        raise Problem(f"the header is a JSON {type(header).__name__}, not an object")
    fmt = header.get("format")
    if fmt != expected_format:
        older = isinstance(fmt, str) and fmt.startswith(expected_format.rsplit("/", 1)[0] + "/")
        hint = (
            (
                ": written by another version of dmargin; load it with that version or "
                "restart the stream"
            )
            if older
            else ""
        )
        raise Problem(
            f"it is not an OnlineIRelief state file of this version "
            f"(format {short(repr(fmt), 80)}, expected {expected_format!r}){hint}"
        )
    return header


# Header keys and their JSON types (bool is not an int here).
_HEADER_KEYS = {
    "format": str,
    "params": dict,
    "n_steps": int,
    "rng": dict,
    "feature_names_in": (list,),
    "scaled": bool,
    "reference": bool,
    "n_features": int,
    "n_classes": int,
    "n_reference": int,
    "discrete": bool,
    "reference_missing": int,
}
_KNOWN_MEMBERS = {
    HEADER,
    "nu",
    "w",
    "classes",
    "miss_prior",
    "offset",
    "span",
    "prescale",
    "ref_X",
    "ref_codes",
    "ref_index",
    "discrete",
}
_F8 = np.dtype(np.float64)
_I8 = np.dtype(np.int64)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def array_specs(header):
    """Member -> (dtype or None for the labels, exact shape, byte limit, why), from the header."""
    keys = set(header)
    if keys != set(_HEADER_KEYS):
        raise Problem(
            f"the header's keys are wrong: missing {sorted(set(_HEADER_KEYS) - keys)}, "
            f"unexpected {sorted(keys - set(_HEADER_KEYS))[:10]}"
        )
    for key, kind in _HEADER_KEYS.items():
        value = header[key]
        if key == "feature_names_in":
            ok = value is None or isinstance(value, list)
        elif kind is int:
            ok = _is_int(value)
        else:
            ok = isinstance(value, kind)
        if not ok:
            raise Problem(
                f"header field {key!r} is {short(repr(value), 80)}, not "
                f"{'a list or null' if key == 'feature_names_in' else kind.__name__}"
            )
    n_features, n_classes, n_ref = header["n_features"], header["n_classes"], header["n_reference"]
    if n_features < 1:
        raise Problem(f"header field 'n_features' is {n_features}, not a positive count")
    if n_classes < 2:
        raise Problem(f"header field 'n_classes' is {n_classes}; a stream has at least 2")
    if header["reference"] != (n_ref >= 1) or n_ref < 0:
        raise Problem(
            f"header field 'n_reference' is {n_ref} with 'reference' {header['reference']}"
        )
    a, k, m = (f"n_features {n_features}", f"n_classes {n_classes}", f"n_reference {n_ref}")
    specs = {
        "nu": (_F8, (n_features,), a),
        "w": (_F8, (n_features,), a),
        "classes": (None, (n_classes,), k),
        "miss_prior": (_F8, (n_classes, n_classes), k),
    }
    if header["scaled"]:
        specs.update({key: (_F8, (n_features,), a) for key in ("offset", "span", "prescale")})
    if header["reference"]:
        specs.update(
            ref_X=(_F8, (n_ref, n_features), f"{m}, {a}"),
            ref_codes=(_I8, (n_ref,), m),
            ref_index=(_I8, (n_ref,), m),
        )
    if header["discrete"]:
        specs.update(discrete=(_I8, (n_features,), a))
    return {
        key: (
            dtype,
            shape,
            _MAX_CLASSES_BYTES
            if dtype is None
            else _NPY_PREAMBLE + math.prod(shape) * dtype.itemsize,
            f"{note} in the header",
        )
        for key, (dtype, shape, note) in specs.items()
    }


def check_layout(key, got_dtype, got_shape, dtype, shape, why):
    if dtype is None:  # labels: numbers, or unicode strings
        if got_dtype.kind not in "biufU" or not got_dtype.isnative or got_dtype.itemsize == 0:
            raise Problem(
                f"array {key!r} has dtype {got_dtype}, expected numeric or unicode labels"
            )
    elif got_dtype != dtype:
        raise Problem(f"array {key!r} has dtype {got_dtype}, expected {dtype}")
    if got_shape != shape:
        raise Problem(f"array {key!r} has shape {got_shape}, expected {shape} ({why})")
