"""Checkpoints as untrusted input, and saves that survive ``kill -9``.

``OnlineIRelief.load_state`` must turn every malformed file into one
ValueError that names the file (the numba kernels have no bounds checks, so
a wrong shape that got through would read or write out of bounds), and
``save_state`` must never leave a partial file at its path.
"""

import io
import json
import os
import random
import re
import select
import signal
import struct
import subprocess
import sys
import textwrap
import time
import zipfile
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmargin
from dmargin import OnlineIRelief

N_FEATURES = 5


def _stream(seed=0, n=300):
    rng = np.random.default_rng(seed)
    y = np.asarray(["no", "yes"])[rng.integers(0, 2, n)]
    X = rng.normal(size=(n, N_FEATURES))
    X[:, 1] += 2.0 * (y == "yes")
    return X, y


def _started(scale="minmax"):
    """A stream after one chunk, with a reference sample: every member is present."""
    X, y = _stream()
    est = OnlineIRelief(random_state=3, a=1.0, scale=scale)
    est.set_reference(X[:40], y[:40], index=np.arange(40))
    return est.partial_fit(X[:100], y[:100])


def _next_chunk():
    X, y = _stream()
    return X[100:160], y[100:160]


def _members(path):
    """Header dict and arrays of a good checkpoint (read with numpy: it is our own file)."""
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("header"))), arrays


def _write(path, header, arrays):
    text = header if isinstance(header, str) else json.dumps(header)
    np.savez(path, header=np.array(text), **arrays)  # pickles object arrays, as an attacker may


def _raw_zip(path, members, padding=0):
    """A zip of ``(name, data, method, crc, size)`` entries, written byte by byte
    (``padding`` zero bytes between the last member and the directory)."""
    out, central = bytearray(), bytearray()
    for name, data, method, crc, size in members:
        offset, encoded = len(out), name.encode()
        out += (
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(encoded),
                0,
            )
            + encoded
            + data
        )
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    out += bytes(padding)
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0
    )
    with open(path, "wb") as fh:
        fh.write(bytes(out + central + end))


def _deflate_bomb(good, path, n_values=2**28):
    """``good`` with ``nu.npy`` replaced by 2 GiB of deflated zeros (~2 MB on disk)."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": "<f8", "fortran_order": False, "shape": (n_values,)}
    )
    head = head.getvalue()
    mib = bytes(1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    # After a full flush the compressor forgets its history: the deflate
    # blocks of each MiB of zeros are the same bytes, so they are repeated.
    start = comp.compress(head) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(mib) + comp.flush(zlib.Z_FULL_FLUSH)
    n_mib = n_values * 8 >> 20
    data = start + block * n_mib + comp.compress(b"") + comp.flush()
    crc = zlib.crc32(head)
    for _ in range(n_mib):
        crc = zlib.crc32(mib, crc)
    members = []
    with zipfile.ZipFile(good) as zf:
        for info in zf.infolist():
            if info.filename == "nu.npy":
                members.append(
                    ("nu.npy", data, zipfile.ZIP_DEFLATED, crc, len(head) + n_values * 8)
                )
            else:
                raw = zf.read(info)
                members.append((info.filename, raw, 0, zlib.crc32(raw), len(raw)))
    _raw_zip(path, members)


def _build_corpus(good, directory):
    """``{file name: expected words}`` of malformed checkpoints made from ``good``."""
    header, arrays = _members(good)
    raw = open(good, "rb").read()
    corpus = {}

    def arrays_with(**changes):
        new = dict(arrays)
        for key, value in changes.items():
            if value is None:
                del new[key]
            else:
                new[key] = value
        return new

    def header_with(path=(), value=None, delete=False):
        new = json.loads(json.dumps(header))
        node = new
        for key in path[:-1]:
            node = node[key]
        if delete:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        return new

    def add(name, words, header_=None, arrays_=None, data=None):
        path = os.path.join(directory, name)
        if data is not None:
            with open(path, "wb") as fh:
                fh.write(data)
        else:
            _write(
                path, header if header_ is None else header_, arrays if arrays_ is None else arrays_
            )
        corpus[name] = words

    w, nu = arrays["w"], arrays["nu"]
    n_ref = arrays["ref_X"].shape[0]
    # wrong shapes, one array at a time
    add(
        "w_length_1.npz",
        "array 'w' has shape (1,), expected (5,)",
        arrays_=arrays_with(w=np.array([1.0])),
    )
    add("nu_length_3.npz", "array 'nu' has shape (3,)", arrays_=arrays_with(nu=nu[:3]))
    add(
        "ref_X_3_columns.npz",
        "array 'ref_X' has shape (40, 3)",
        arrays_=arrays_with(ref_X=arrays["ref_X"][:, :3].copy()),
    )
    add(
        "miss_prior_1x1.npz",
        "array 'miss_prior' has shape (1, 1)",
        arrays_=arrays_with(miss_prior=np.zeros((1, 1))),
    )
    add(
        "classes_3_labels.npz",
        "array 'classes' has shape (3,)",
        arrays_=arrays_with(classes=np.array(["a", "no", "yes"])),
    )
    add(
        "span_2d.npz",
        "array 'span' has shape (5, 1)",
        arrays_=arrays_with(span=arrays["span"][:, None].copy()),
    )
    add(
        "ref_codes_short.npz",
        "array 'ref_codes' has shape (39,)",
        arrays_=arrays_with(ref_codes=arrays["ref_codes"][:-1].copy()),
    )
    # wrong dtypes and object arrays
    add(
        "w_float32.npz",
        "array 'w' has dtype float32, expected float64",
        arrays_=arrays_with(w=w.astype(np.float32)),
    )
    add(
        "ref_codes_float.npz",
        "array 'ref_codes' has dtype float64, expected int64",
        arrays_=arrays_with(ref_codes=arrays["ref_codes"].astype(float)),
    )
    add("nu_object.npz", "object array", arrays_=arrays_with(nu=nu.astype(object)))
    add(
        "classes_object.npz",
        "object array",
        arrays_=arrays_with(classes=arrays["classes"].astype(object)),
    )
    add(
        "classes_complex.npz",
        "expected numeric or unicode labels",
        arrays_=arrays_with(classes=np.array([1 + 1j, 2 + 0j])),
    )
    # values
    add(
        "nu_nan.npz",
        "array 'nu' has NaN",
        arrays_=arrays_with(nu=np.where(nu == nu.max(), np.nan, nu)),
    )
    add("w_inf.npz", "array 'w' has NaN or infinite", arrays_=arrays_with(w=np.r_[np.inf, w[1:]]))
    add(
        "ref_X_nan.npz",
        "NaN values where the header counts 0 missing values",
        arrays_=arrays_with(
            ref_X=np.where(arrays["ref_X"] == arrays["ref_X"].max(), np.nan, arrays["ref_X"])
        ),
    )
    add(
        "ref_X_inf.npz",
        "array 'ref_X' has infinite",
        arrays_=arrays_with(ref_X=np.where(arrays["ref_X"] > 0.5, np.inf, arrays["ref_X"])),
    )
    add(
        "span_zero.npz",
        "array 'span' has values <= 0",
        arrays_=arrays_with(span=np.zeros(N_FEATURES)),
    )
    add(
        "ref_codes_7.npz",
        "'ref_codes' has class codes outside [0, 2)",
        arrays_=arrays_with(ref_codes=np.full(n_ref, 7, dtype=np.int64)),
    )
    add(
        "ref_codes_negative.npz",
        "outside [0, 2)",
        arrays_=arrays_with(ref_codes=np.r_[-1, arrays["ref_codes"][1:]]),
    )
    add(
        "miss_prior_inf.npz",
        "array 'miss_prior' has infinite values",
        arrays_=arrays_with(miss_prior=np.array([[0.0, np.inf], [1.0, 0.0]])),
    )
    add(
        "w_not_unit.npz",
        "array 'w' is not nu+ / ||nu+||",
        arrays_=arrays_with(w=np.ones(N_FEATURES)),
    )
    add(
        "classes_unsorted.npz",
        "not sorted and unique",
        arrays_=arrays_with(classes=arrays["classes"][::-1].copy()),
    )
    add(
        "ref_index_repeated.npz",
        "repeated stream positions",
        arrays_=arrays_with(ref_index=np.zeros(n_ref, dtype=np.int64)),
    )
    # members
    add("extra_member.npz", "unexpected member 'evil.npy'", arrays_=arrays_with(evil=np.zeros(3)))
    add("missing_w.npz", "missing ['w']", arrays_=arrays_with(w=None))
    add("no_header.npz", "no 'header' member", data=_npz_bytes({k: v for k, v in arrays.items()}))
    dup = os.path.join(directory, "duplicate_w.npz")
    with open(dup, "wb") as fh:
        fh.write(raw)
    with pytest.warns(UserWarning, match="Duplicate name"):
        with zipfile.ZipFile(dup, "a") as zf:
            zf.writestr("w.npy", _npy_bytes(w))
    corpus["duplicate_w.npz"] = "appears twice"
    # truncated, empty, not a zip
    for cut in (10, 200, len(raw) // 2, len(raw) - 1):
        add(f"truncated_{cut}.npz", "not a complete zip archive", data=raw[:cut])
    add("empty.npz", "the file is empty (0 bytes)", data=b"")
    add("not_a_zip.npz", "not a complete zip archive", data=b"col1,col2\n1,2\n" * 50)
    # header
    add("header_not_json.npz", "the header is not valid JSON", header_="{'format': 1")
    add("header_nested_1e5.npz", "nested too deeply", header_="[" * 100_000 + "]" * 100_000)
    add("header_a_list.npz", "the header is a JSON list", header_="[1, 2]")
    add(
        "header_float_array.npz",
        "the header is an array of dtype float64",
        data=_npz_bytes({"header": np.array(1.5), **arrays}),
    )
    add(
        "header_missing_n_steps.npz",
        "missing ['n_steps']",
        header_=header_with(("n_steps",), delete=True),
    )
    add(
        "header_format_v1.npz",
        "written by another version of dmargin",
        header_=header_with(("format",), "dmargin.OnlineIRelief/1"),
    )
    add(
        "header_format_other.npz",
        "not an OnlineIRelief state file",
        header_=header_with(("format",), "something else"),
    )
    add(
        "header_n_steps_string.npz",
        "header field 'n_steps' is '100', not int",
        header_=header_with(("n_steps",), "100"),
    )
    add(
        "header_n_steps_negative.npz",
        "header field 'n_steps' is -5",
        header_=header_with(("n_steps",), -5),
    )
    # more features than the members' bytes can hold: the header is wrong
    add(
        "header_n_features_9.npz",
        "its header's counts do not fit in the file: n_features 9",
        header_=header_with(("n_features",), 9),
    )
    add(
        "header_n_features_4.npz",
        "array 'nu' has shape (5,), expected (4,)",
        header_=header_with(("n_features",), 4),
    )
    add(
        "header_names_wrong_length.npz",
        "'feature_names_in' is not a list of 5 strings",
        header_=header_with(("feature_names_in",), ["a", "b"]),
    )
    add(
        "header_rng_unknown.npz",
        "names bit generator 'Evil'",
        header_=header_with(("rng", "bit_generator"), "Evil"),
    )
    add(
        "header_rng_bad_state.npz",
        "not a valid PCG64 state",
        header_=header_with(("rng", "state", "state"), "x"),
    )
    add(
        "header_unknown_param.npz",
        "unexpected ['evil']",
        header_=header_with(("params", "evil"), 1),
    )
    add(
        "header_scaled_mismatch.npz",
        "members do not match its header",
        header_=header_with(("scaled",), False),
    )
    # parameters, re-validated as the estimator validates them
    add(
        "param_sigma_0.npz",
        "parameter sigma=0 is not valid",
        header_=header_with(("params", "sigma"), 0),
    )
    add(
        "param_a_minus_10.npz",
        "parameter a=-10 is not valid",
        header_=header_with(("params", "a"), -10),
    )
    add(
        "param_sigma_nan.npz",
        "parameter sigma=nan is not valid",
        header_=header_with(("params", "sigma"), float("nan")),
    )
    # a 2 MB file that would expand to 2 GiB
    _deflate_bomb(good, os.path.join(directory, "deflate_bomb.npz"))
    corpus["deflate_bomb.npz"] = "zip bomb"
    # under the file-size allowance, but far more than the header's 5 features take
    _deflate_bomb(good, os.path.join(directory, "deflate_32mib_nu.npz"), n_values=2**22)
    corpus["deflate_32mib_nu.npz"] = "member 'nu' declares 33554560 bytes uncompressed"
    return corpus


def _npy_bytes(array):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    return buf.getvalue()


def _npz_bytes(arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    good = os.path.join(directory, "good.npz")
    _started().save_state(good)
    return directory, good, _build_corpus(good, str(directory))


def test_corpus_is_large_enough(corpus):
    assert len(corpus[2]) >= 25


def test_every_malformed_checkpoint_is_one_clear_value_error(corpus):
    directory, good, files = corpus
    OnlineIRelief.load_state(good)  # the source of the corpus itself loads
    for name, words in files.items():
        path = os.path.join(directory, name)
        with pytest.raises(ValueError, match=re.escape(path)) as info:
            OnlineIRelief.load_state(path)
        message = str(info.value)
        assert words in message, (name, message)
        assert "not written by OnlineIRelief.save_state" in message, (name, message)
        assert "restart the stream" in message, (name, message)


def test_the_message_points_at_the_previous_checkpoint(tmp_path):
    est = _started()
    path = tmp_path / "state.npz"
    est.save_state(path)
    est.partial_fit(*_next_chunk()).save_state(path)
    assert OnlineIRelief.load_state(f"{path}.prev").n_steps_ == 100
    with open(path, "r+b") as fh:  # a damaged disk block in the middle
        fh.seek(os.path.getsize(path) // 2)
        fh.write(b"\xff" * 16)
    with pytest.raises(
        ValueError, match=re.escape(f"resume from the previous checkpoint {path}.prev")
    ):
        OnlineIRelief.load_state(path)


# The same corpus in a child process: a crash (the old reader let a length-1
# ``w`` reach the kernel) fails this test instead of killing pytest; the
# deflate bomb's peak memory is measured there too.
_CHILD = textwrap.dedent("""
    import json, os, resource, sys
    import numpy as np
    from dmargin import OnlineIRelief

    directory, names = sys.argv[1], json.loads(sys.argv[2])
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 5)), np.asarray(["no", "yes"])[rng.integers(0, 2, 60)]
    OnlineIRelief.load_state(os.path.join(directory, "good.npz")).partial_fit(X, y)
    out = {}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        OnlineIRelief.load_state(os.path.join(directory, "deflate_bomb.npz"))
    except ValueError:
        pass
    out["bomb_peak_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    for name in names:
        try:
            est = OnlineIRelief.load_state(os.path.join(directory, name))
        except ValueError as exc:
            out[name] = "ValueError: " + str(exc)
            continue
        try:
            est.partial_fit(X, y)
        except Exception as exc:
            out[name] = f"loaded, partial_fit raised {type(exc).__name__}: {exc}"
        else:
            out[name] = "loaded, partial_fit gave " + repr(est.feature_importances_.tolist())
        print(json.dumps({name: out[name]}), flush=True)
    print(json.dumps(out))
""")


def _child_env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(dmargin.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.slow
def test_corpus_in_a_child_process_neither_crashes_nor_loads(corpus):
    directory, _, files = corpus
    names = sorted(files)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(directory), json.dumps(names)],
        capture_output=True,
        text=True,
        timeout=900,
        env=_child_env(),
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    loaded = {
        name: result
        for name, result in out.items()
        if name != "bomb_peak_kib" and not result.startswith("ValueError")
    }
    assert not loaded
    # The 2 GiB member is refused before anything is decompressed.
    assert out["bomb_peak_kib"] < 200 * 1024, out["bomb_peak_kib"]


# ---------------------------------------------------------------------------
# Bounded reads: neither the header's counts nor the zip directory's sizes
# decide how much is decompressed or allocated
# ---------------------------------------------------------------------------


def _zeros_stream(prefix, n_mib):
    """A raw deflate stream of ``prefix`` and ``n_mib`` MiB of zeros (about 1 KiB a MiB)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    # After a full flush the compressor forgets its history, so each MiB's blocks repeat.
    block = comp.compress(bytes(1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH)
    return start + block * n_mib + comp.compress(b"") + comp.flush()


def _with_header(raw_header, **changes):
    header = json.loads(str(np.load(io.BytesIO(raw_header))))
    header.update(changes)
    return _npy_bytes(np.array(json.dumps(header)))


def _lying_bomb(good, path, n_features, n_mib, declared=16 << 10):
    """``good`` with ``n_features`` in its header and ``nu.npy`` a ``n_mib`` MiB zip bomb.

    The bomb is a .npy preamble for ``n_features`` float64 values followed by
    ``n_mib`` MiB of deflated zeros, whose directory entry claims ``declared``
    bytes (with the CRC of those bytes, so that zipfile finds nothing wrong).
    """
    members = []
    with zipfile.ZipFile(good) as zf:
        for info in zf.infolist():
            raw = zf.read(info)
            if info.filename == "header.npy":
                raw = _with_header(raw, n_features=n_features)
            if info.filename == "nu.npy":
                head = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    head, {"descr": "<f8", "fortran_order": False, "shape": (n_features,)}
                )
                head = head.getvalue()
                first = (head + bytes(declared))[:declared]
                members.append(
                    (
                        "nu.npy",
                        _zeros_stream(head, n_mib),
                        zipfile.ZIP_DEFLATED,
                        zlib.crc32(first),
                        declared,
                    )
                )
            else:
                members.append((info.filename, raw, 0, zlib.crc32(raw), len(raw)))
    _raw_zip(path, members)


# A clean process: imports and numba compilation happen before the
# measurement, which is the peak resident size over the current one.
_BOMB_CHILD = textwrap.dedent("""
    import json, resource, sys
    from dmargin import OnlineIRelief

    def status_kib(field):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])

    def peak_kib_since_now():
        # Reset the kernel's high-water mark (Linux 4.0+); without it the
        # lifetime peak stands in, which can only overstate the growth.
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
        except OSError:
            return lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return lambda: status_kib("VmHWM")

    good, bomb, huge = sys.argv[1:]
    OnlineIRelief.load_state(good)
    out = {}
    for name, path in (("bomb", bomb), ("huge", huge)):
        if name == "huge":
            # Leave 256 MiB of address space: a reader that decompresses the
            # 400 MiB stream gets a MemoryError, a bounded one never notices.
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = status_kib("VmSize") * 1024 + (256 << 20)
            resource.setrlimit(resource.RLIMIT_AS,
                               (limit if hard == resource.RLIM_INFINITY else min(limit, hard),
                                hard))
        peak_kib = peak_kib_since_now()
        before = status_kib("VmRSS")
        try:
            OnlineIRelief.load_state(path)
            result = ["loaded", ""]
        except BaseException as exc:
            result = [type(exc).__name__, str(exc)]
        out[name] = result + [peak_kib() - before]
    print(json.dumps(out))
""")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_zip_bomb_member_under_a_lying_header_is_refused_in_little_memory(tmp_path):
    # A real checkpoint whose header claims 10**8 (then 10**9) features and whose
    # nu.npy is 400 MiB of deflated zeros (0.4 MB on disk) that claims 16 KiB.
    good, bomb, huge = (str(tmp_path / name) for name in ("good.npz", "bomb.npz", "huge.npz"))
    _started().save_state(good)
    _lying_bomb(good, bomb, n_features=10**8, n_mib=400)
    _lying_bomb(good, huge, n_features=10**9, n_mib=400)
    assert os.path.getsize(bomb) < 1 << 20
    proc = subprocess.run(
        [sys.executable, "-c", _BOMB_CHILD, good, bomb, huge],
        capture_output=True,
        text=True,
        timeout=900,
        env=_child_env(),
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [out[name][0] for name in ("bomb", "huge")] == ["ValueError"] * 2, out
    assert out["bomb"][2] < 100 * 1024, out  # KiB
    for name, path, count in (
        ("bomb", bomb, "n_features 100000000"),
        ("huge", huge, "n_features 1000000000"),
    ):
        message = out[name][1]
        assert message.startswith(path + ": its header's counts do not fit in the file"), message
        assert count in message and "member 'w.npy' holds at most" in message, message
        assert "restart the stream" in message, message


def test_a_member_that_inflates_past_its_declared_size_is_read_in_bounded_memory(tmp_path):
    # header.npy as its directory entry says (CRC included), then 400 MiB more of
    # deflated zeros: what is decompressed is bounded by the declared size, not by
    # the header's 64 MiB allowance or the stream.
    import tracemalloc

    good, path = tmp_path / "good.npz", str(tmp_path / "long.npz")
    _started().save_state(good)
    members = []
    with zipfile.ZipFile(good) as zf:
        for info in zf.infolist():
            raw = zf.read(info)
            data, method = (
                (_zeros_stream(raw, 400), zipfile.ZIP_DEFLATED)
                if info.filename == "header.npy"
                else (raw, 0)
            )
            members.append((info.filename, data, method, zlib.crc32(raw), len(raw)))
    _raw_zip(path, members)
    tracemalloc.start()
    try:
        est = OnlineIRelief.load_state(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    assert _state(est) == _state(OnlineIRelief.load_state(good))


def _padded_bomb(good, path, n_features, padding, inside=False):
    """``good`` (unscaled) with ``n_features`` in its header, ``nu`` and ``w`` deflated
    zeros (about 1 KiB a MiB) and ``padding`` bytes that make the file look large:
    after the members, or (``inside``) after the end of ``w``'s deflate stream, within
    its member's compressed bytes.  Either passes the rule "at most 4x the file"."""
    members = []
    with zipfile.ZipFile(good) as zf:
        for info in zf.infolist():
            raw = zf.read(info)
            if info.filename == "header.npy":
                raw = _with_header(raw, n_features=n_features)
            if info.filename in ("nu.npy", "w.npy"):
                head = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    head, {"descr": "<f8", "fortran_order": False, "shape": (n_features,)}
                )
                head = head.getvalue()
                n_mib = n_features * 8 >> 20
                zeros = bytes(n_features * 8 - (n_mib << 20))
                comp = zlib.compressobj(9, zlib.DEFLATED, -15)
                data = (
                    comp.compress(head)
                    + comp.flush(zlib.Z_FULL_FLUSH)
                    + (comp.compress(bytes(1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH)) * n_mib
                    + comp.compress(zeros)
                    + comp.flush()
                )
                crc = zlib.crc32(head)
                for _ in range(n_mib):
                    crc = zlib.crc32(bytes(1 << 20), crc)
                if inside and info.filename == "w.npy":
                    data += bytes(padding)
                members.append(
                    (
                        info.filename,
                        data,
                        zipfile.ZIP_DEFLATED,
                        zlib.crc32(zeros, crc),
                        len(head) + n_features * 8,
                    )
                )
            else:
                members.append((info.filename, raw, 0, zlib.crc32(raw), len(raw)))
    _raw_zip(path, members, padding=0 if inside else padding)


@pytest.mark.parametrize("inside", [False, True], ids=["after_members", "inside_w"])
def test_a_checkpoint_padded_to_look_large_is_refused_before_it_expands(
    tmp_path, decompressed, inside
):
    # 2 x 100 MB of zeros in about 200 KB of deflate, in a file padded to 60 MB so that
    # 4x its size covers them: what is decompressed stays within 4x the bytes actually
    # read (plus 64 MiB), not 4x the padding.
    good, path = tmp_path / "good.npz", str(tmp_path / "padded.npz")
    OnlineIRelief(random_state=0, scale=None).partial_fit(*_stream()).save_state(good)
    n_features, padding = 12_500_000, 60 << 20
    _padded_bomb(good, path, n_features, padding, inside=inside)
    size = os.path.getsize(path)
    assert 4 * size > 2 * 8 * n_features > 64 << 20  # the file-size rule let it through
    decompressed.clear()
    with pytest.raises(ValueError, match=re.escape(path)) as info:
        OnlineIRelief.load_state(path)
    message = str(info.value)
    assert "a zip bomb" in message and "restart the stream" in message, message
    arrays = sum(n for name, n in decompressed.items() if name != "header.npy")
    if inside:  # refused while w expands, once the bytes read no longer cover it
        assert "expands to more than 4x the" in message, message
        assert arrays < (64 << 20) + (16 << 20), decompressed
    else:  # refused from the directory: the members hold 200 KB, not 60 MB
        assert "compressed bytes in a file of" in message, message
        assert arrays < 64 << 10, decompressed


@pytest.fixture
def decompressed(monkeypatch):
    """Bytes zipfile decompressed per member name (every read goes through ``_read1``)."""
    counts = {}
    real = zipfile.ZipExtFile._read1

    def spy(self, n):
        data = real(self, n)
        counts[self.name] = counts.get(self.name, 0) + len(data)
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "_read1", spy)
    return counts


_N_LARGE = 2_500_000  # 20 MB of float64 a member


def _large_checkpoint(tmp_path, name, **arrays):
    """An unscaled checkpoint with ``_N_LARGE`` features, its arrays replaced by ``arrays``."""
    good = tmp_path / "small.npz"
    OnlineIRelief(random_state=0, scale=None).partial_fit(*_stream()).save_state(good)
    header, honest = _members(good)
    assert sorted(honest) == ["classes", "miss_prior", "nu", "w"]
    header["n_features"] = _N_LARGE
    path = str(tmp_path / name)
    _write(
        path,
        header,
        {
            "nu": np.zeros(_N_LARGE),
            "w": np.full(_N_LARGE, _N_LARGE**-0.5),
            "classes": honest["classes"],
            "miss_prior": honest["miss_prior"],
            **arrays,
        },
    )
    return path


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        (
            {"w": np.ones(20)},  # 288 bytes: the file cannot hold what the header counts
            "member 'w.npy' holds at most 288 of the 20000000 bytes of array 'w' (2500000,)",
        ),
        (
            {"w": np.ones(2 * _N_LARGE, dtype=np.float32)},  # the right size, the wrong dtype
            "array 'w' has dtype float32, expected float64",
        ),
        (
            {"w": np.ones((_N_LARGE // 2, 2))},
            "array 'w' has shape (1250000, 2), expected (2500000,)",
        ),
        (
            {"classes": np.array(["a", "no", "yes"])},
            "array 'classes' has shape (3,), expected (2,)",
        ),
        (
            {"nu": np.zeros((_N_LARGE // 2, 2))},  # the large member's own .npy header
            "array 'nu' has shape (1250000, 2), expected (2500000,)",
        ),
    ],
    ids=["w_288_bytes", "w_float32", "w_2d", "classes_3", "nu_2d"],
)
def test_a_wrong_member_is_refused_before_a_large_one_is_read(
    tmp_path, decompressed, arrays, words
):
    path = _large_checkpoint(tmp_path, "wrong.npz", **arrays)
    decompressed.clear()  # what np.load read while building the file
    with pytest.raises(ValueError, match=re.escape(path)) as info:
        OnlineIRelief.load_state(path)
    # No array's data was decompressed: at most a .npy preamble and zipfile's
    # 4 KiB minimum read from each member.
    assert decompressed.get("nu.npy", 0) < 64 << 10, decompressed
    assert all(n < 64 << 10 for name, n in decompressed.items() if name != "header.npy")
    assert words in str(info.value)
    assert "restart the stream" in str(info.value)


def test_a_large_honest_checkpoint_loads(tmp_path, decompressed):
    # The same layout with every member right is read (and each array once).
    path = _large_checkpoint(tmp_path, "honest.npz")
    decompressed.clear()
    est = OnlineIRelief.load_state(path)
    assert est.nu_.shape == (_N_LARGE,) and est.feature_importances_.flags.c_contiguous
    with zipfile.ZipFile(path) as zf:
        assert decompressed == {info.filename: info.file_size for info in zf.infolist()}


def test_header_counts_the_file_cannot_hold_are_refused_before_reading(tmp_path, decompressed):
    good = tmp_path / "good.npz"
    _started().save_state(good)
    header, arrays = _members(good)
    stored, deflated = str(tmp_path / "stored.npz"), str(tmp_path / "deflated.npz")
    _write(stored, dict(header, n_features=10**7), arrays)
    # The same with every member deflated: a deflated byte expands to at most 1032.
    with (
        zipfile.ZipFile(stored) as src,
        zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    for path in (stored, deflated):
        decompressed.clear()
        with pytest.raises(ValueError, match=re.escape(path)) as info:
            OnlineIRelief.load_state(path)
        assert set(decompressed) == {"header.npy"}, decompressed  # no array was opened
        message = str(info.value)
        assert "its header's counts do not fit in the file: n_features 10000000" in message
        assert f"in a file of {os.path.getsize(path)} bytes" in message
        assert "member 'nu.npy' holds at most" in message
        assert "restart the stream" in message


def test_an_honest_deflated_checkpoint_loads(tmp_path):
    # Compressing a checkpoint with a zip tool keeps it loadable.
    good, deflated = tmp_path / "good.npz", tmp_path / "deflated.npz"
    _started().save_state(good)
    with (
        zipfile.ZipFile(good) as src,
        zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    assert _state(OnlineIRelief.load_state(deflated)) == _state(OnlineIRelief.load_state(good))


# ---------------------------------------------------------------------------
# Fuzzing: a mutated checkpoint is refused, or resumes exactly like the original
# ---------------------------------------------------------------------------

_BASE = {}


def _base():
    """Bytes of a real checkpoint, its loaded state and the weights after the next chunk."""
    if not _BASE:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "base.npz")
            _started().save_state(path)
            _BASE["bytes"] = open(path, "rb").read()
            _BASE["header"], _BASE["arrays"] = _members(path)
            est = OnlineIRelief.load_state(path)
        _BASE["state"] = _state(est)
        _BASE["next_w"] = est.partial_fit(*_next_chunk()).feature_importances_.copy()
    return _BASE


def _state(est):
    # The whole resumable state, private parts included: a checkpoint must restore all of it.
    scaling = est._scale
    scaling = [scaling.offset, scaling.span, scaling.prescale] if scaling is not None else []
    arrays = [
        est.nu_,
        est.feature_importances_,
        est.classes_,
        est._miss_prior,
        *scaling,
        *(est._fixed_ref or ()),
    ]
    return (
        json.dumps(est.get_params(), sort_keys=True),
        est.n_steps_,
        list(getattr(est, "feature_names_in_", [])) or None,
        json.dumps(est._rng.bit_generator.state, sort_keys=True, default=str),
        [(a.dtype.str, a.shape, a.tobytes()) for a in arrays],
    )


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=4,
)
_HEADER_PATHS = [
    ("format",),
    ("params",),
    ("params", "sigma"),
    ("params", "a"),
    ("params", "scale"),
    ("params", "multiclass"),
    ("params", "random_state"),
    ("params", "n_passes"),
    ("params", "shuffle"),
    ("n_steps",),
    ("rng",),
    ("rng", "bit_generator"),
    ("rng", "state"),
    ("rng", "state", "state"),
    ("rng", "state", "inc"),
    ("rng", "has_uint32"),
    ("rng", "uinteger"),
    ("feature_names_in",),
    ("scaled",),
    ("reference",),
    ("n_features",),
    ("n_classes",),
    ("n_reference",),
]
_MEMBERS = [
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
    "junk",
]
_DTYPES = ["<f8", "<f4", "<i8", "<i4", "|u1", "|b1", "<U3", "<c16", "O", ">f8"]


@st.composite
def _mutations(draw):
    base = _base()
    data = base["bytes"]
    kind = draw(st.sampled_from(["flip", "truncate", "header", "array", "value", "drop"]))
    if kind == "flip":
        data = bytearray(data)
        for pos, mask in draw(
            st.lists(
                st.tuples(st.integers(0, len(data) - 1), st.integers(1, 255)),
                min_size=1,
                max_size=4,
            )
        ):
            data[pos] ^= mask
        return kind, bytes(data)
    if kind == "truncate":
        return kind, data[: draw(st.integers(0, len(data) - 1))]
    header = json.loads(json.dumps(base["header"]))
    arrays = dict(base["arrays"])
    if kind == "header":
        path = draw(st.sampled_from(_HEADER_PATHS))
        node = header
        for key in path[:-1]:
            node = node[key]
        if draw(st.booleans()) and len(path) > 1:
            del node[path[-1]]
        else:
            node[path[-1]] = draw(_JSON)
    elif kind == "array":
        name = draw(st.sampled_from(_MEMBERS))
        shape = tuple(draw(st.lists(st.integers(0, 6), max_size=3)))
        dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
        values = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).normal(size=shape) * 10
        arrays[name] = values.astype(dtype) if dtype.kind != "U" else values.astype(dtype)
    elif kind == "value":
        name = draw(st.sampled_from(_MEMBERS[:-1]))
        array = arrays[name].copy()
        if array.size:
            flat = array.reshape(-1)
            i = draw(st.integers(0, flat.size - 1))
            if array.dtype.kind == "f":
                flat[i] = draw(st.floats(allow_nan=True, allow_infinity=True))
            elif array.dtype.kind == "i":
                flat[i] = draw(st.integers(-(2**63), 2**63 - 1))
            else:
                flat[i] = draw(st.sampled_from(["no", "yes", "", "zzz"]))
        arrays[name] = array
    else:
        del arrays[draw(st.sampled_from(_MEMBERS[:-1]))]
    return kind, _npz_bytes({"header": np.array(json.dumps(header)), **arrays})


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_mutations())
def test_a_mutated_checkpoint_is_refused_or_resumes_exactly(mutation):
    import tempfile

    kind, data = mutation
    base = _base()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mutated.npz")
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            est = OnlineIRelief.load_state(path)
        except ValueError as exc:
            assert path in str(exc)
            assert "OnlineIRelief.save_state" in str(exc)
            return
    # Every check passed: the state is the original (a harmless change) or another
    # valid one, which resumes without error or with the stream's own clear errors.
    if _state(est) == base["state"]:
        est.partial_fit(*_next_chunk())
        np.testing.assert_array_equal(est.feature_importances_, base["next_w"])
        return
    try:
        est.partial_fit(*_next_chunk())
    except ValueError as exc:  # e.g. labels changed to ones the chunk does not have
        assert "labels" in str(exc), (kind, str(exc))
        return
    assert np.all(np.isfinite(est.feature_importances_))
    assert np.all(est.feature_importances_ >= 0)


# ---------------------------------------------------------------------------
# Saving: kill -9 at random moments
# ---------------------------------------------------------------------------


def _kill_stream():
    """A stream with a 3000-row reference (about 1 MB a save) and 20-row chunks."""
    rng = np.random.default_rng(7)
    n_features = 40
    R = rng.normal(size=(3000, n_features))
    yr = rng.integers(0, 2, 3000)
    chunks = []
    for _ in range(400):
        y = rng.integers(0, 2, 20)
        X = rng.normal(size=(20, n_features))
        X[:, 0] += y
        chunks.append((X, y))
    est = OnlineIRelief(random_state=1, a=1.0)
    est.set_reference(R, yr)
    est.partial_fit(*chunks[0], classes=[0, 1])
    return est, chunks


# The file-system calls of one save, in order (the first save has no previous
# file, so it makes only the first, the fourth and the fifth).
_SAVE_STEPS = (
    "fsync the new file",
    "link the current file",
    "rename it to .prev",
    "rename the new file onto the path",
    "fsync the directory",
)


def _saving_child(est, chunks, path, pause_at=None, notify=None):
    """In the forked child: resume and save after every chunk until killed.

    With ``pause_at``, the child stops before its ``pause_at``-th file-system
    call of the saves (counting ``os.fsync``, ``os.link`` and ``os.replace``),
    tells the parent through the pipe ``notify`` and waits to be killed there.
    """
    try:
        if pause_at is not None:
            calls = [0]

            def paused(real):
                def call(*args, **kwargs):
                    calls[0] += 1
                    if calls[0] == pause_at:
                        os.write(notify, b"k")
                        time.sleep(600)
                    return real(*args, **kwargs)

                return call

            for name in ("fsync", "link", "replace"):
                setattr(os, name, paused(getattr(os, name)))
        for chunk in chunks[1:]:
            est.partial_fit(*chunk)
            est.save_state(path)
    finally:
        os._exit(0)


def _check_after_kill(directory, path, chunks, weights):
    """What a kill leaves must load, equal the uninterrupted run and resume."""
    back = OnlineIRelief.load_state(path)
    n = back.n_steps_
    np.testing.assert_array_equal(back.feature_importances_, weights[n])
    if n + 20 in weights:
        back.partial_fit(*chunks[n // 20])
        np.testing.assert_array_equal(back.feature_importances_, weights[n + 20])
    prev = directory / "state.npz.prev"
    if prev.exists():
        older = OnlineIRelief.load_state(prev)
        assert older.n_steps_ in (n, n - 20)
        np.testing.assert_array_equal(older.feature_importances_, weights[older.n_steps_])
    return n


def _uninterrupted_weights(est, chunks):
    import copy

    ref, weights = copy.deepcopy(est), {20: est.feature_importances_.copy()}
    for k, chunk in enumerate(chunks[1:], start=2):
        ref.partial_fit(*chunk)
        weights[20 * k] = ref.feature_importances_.copy()
    return weights


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_9_at_random_moments_leaves_a_complete_checkpoint(tmp_path):
    est, chunks = _kill_stream()
    weights = _uninterrupted_weights(est, chunks)
    rng = random.Random(2024)
    mid_save = 0
    for trial in range(20):
        directory = tmp_path / f"trial{trial}"
        directory.mkdir()
        path = directory / "state.npz"
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            _saving_child(est, chunks, path)
        try:
            deadline = time.monotonic() + 30
            while not path.exists() and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(rng.uniform(0.0, 0.2))
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        mid_save += any(p.name.startswith(".") for p in directory.iterdir())
        _check_after_kill(directory, path, chunks, weights)
    # How many random kills land inside a save depends on the machine's load;
    # the test below kills inside every step of a save on purpose.
    print(f"{mid_save} of 20 kills landed during a save")


# The first save has no previous file to keep (no second and third step).
_KILL_POINTS = [
    (save, step) for save in (1, 2, 5) for step in range(5) if save > 1 or step not in (1, 2)
]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize(
    ("save", "step"),
    _KILL_POINTS,
    ids=[f"save {s}, before: {_SAVE_STEPS[k]}" for s, k in _KILL_POINTS],
)
def test_kill_9_inside_each_step_of_a_save_leaves_a_complete_checkpoint(tmp_path, save, step):
    est, chunks = _kill_stream()
    weights = _uninterrupted_weights(est, chunks[: save + 2])
    # The first save makes 3 of the calls (steps 0, 3 and 4), every later one all 5.
    calls_before = 0 if save == 1 else 3 + 5 * (save - 2)
    pause_at = calls_before + (step if save > 1 else {0: 0, 3: 1, 4: 2}[step]) + 1
    read, write = os.pipe()
    path = tmp_path / "state.npz"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(read)
        _saving_child(est, chunks, path, pause_at=pause_at, notify=write)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 60)
        assert ready and os.read(read, 1) == b"k", "the saving child never reached the step"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    renamed = step == 4  # killed before the last step: the new file is in place
    if save == 1 and not renamed:
        assert not path.exists() and len(leftovers) == 1, leftovers
        return
    # Killed before the rename: the temporary file is left behind, the path
    # holds the save before; after it: the new save, nothing left behind
    # but the staged link between the second and the third step.
    assert any(name.endswith(".tmp") for name in leftovers) == (not renamed), leftovers
    n = _check_after_kill(tmp_path, path, chunks, weights)
    assert n == 20 * (save + (1 if renamed else 0)), (n, leftovers)


def test_save_state_writes_nothing_for_a_state_load_state_would_refuse(tmp_path):
    est = _started()
    path = tmp_path / "s.npz"
    est.save_state(path)
    before = path.read_bytes()
    est.sigma = 0.0
    with pytest.raises(ValueError, match="sigma=0.0 is not valid"):
        est.save_state(path)
    est.sigma = 2.0
    est.nu_[0] = np.nan
    with pytest.raises(ValueError, match="nothing was written"):
        est.save_state(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.npz"]


@pytest.mark.parametrize("bit_generator", ["MT19937", "Philox", "SFC64", "PCG64DXSM"])
def test_any_numpy_bit_generator_round_trips(tmp_path, bit_generator):
    X, y = _stream()
    gen = np.random.Generator(getattr(np.random, bit_generator)(5))
    est = OnlineIRelief(random_state=gen).partial_fit(X[:100], y[:100])
    est.save_state(tmp_path / "s.npz")
    back = OnlineIRelief.load_state(tmp_path / "s.npz")
    est.partial_fit(X[100:], y[100:])
    back.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(back.feature_importances_, est.feature_importances_)


def test_a_stream_whose_first_chunk_has_one_class_round_trips(tmp_path):
    # Its class prior has a row of 0/0 (NaN) that the margin mode never reads.
    X, y = _stream()
    est = OnlineIRelief(random_state=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        est.partial_fit(X[y == "no"][:50], y[y == "no"][:50], classes=["no", "yes"])
    est.save_state(tmp_path / "s.npz")
    back = OnlineIRelief.load_state(tmp_path / "s.npz")
    est.partial_fit(X[:100], y[:100])
    back.partial_fit(X[:100], y[:100])
    np.testing.assert_array_equal(back.feature_importances_, est.feature_importances_)
