"""Checkpoint files, written atomically.

- :func:`write_atomic`: a save never leaves a partial file at ``path``
  (temporary file in the same directory, ``fsync``, ``os.replace``,
  ``fsync`` of the directory) and keeps the file it replaces as
  ``path + ".prev"``;
- :func:`write_online_state`: an :class:`~dmargin.OnlineIRelief` state, checked
  as the reader (:mod:`dmargin.irelief._checkpoint`) would check it before
  anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil

import numpy as np

from ..io._special_files import refuse_special_file
from ._checkpoint import HEADER, array_specs, check_layout, previous_path
from ._online_state import Problem, check_online_state


def write_atomic(path, write):
    """Write a file with ``write(fh)`` so that ``path`` always holds a complete file.

    The bytes go to a temporary file in the same directory (same file
    system, so the rename is atomic), which is flushed and ``fsync``-ed;
    the current ``path``, if any, is hard-linked (copied where links are
    not supported) to ``path + ".prev"``; the temporary file is renamed
    onto ``path`` with ``os.replace`` and the directory is ``fsync``-ed.
    A process killed at any moment leaves ``path`` either as it was or
    complete and new (and possibly a stray ``.<name>.*.tmp`` file, safe to
    delete); ``path + ".prev"`` holds the save before the last one.

    Parameters
    ----------
    path : str or path-like
    write : callable
        ``write(fh)`` writes the whole content to the binary file ``fh``.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    refuse_special_file(path)
    tmp = _unique_sibling(path, "tmp")
    # O_EXCL: never write through someone else's file; 0o666 lets the umask
    # decide the permissions, as a plain open() would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        refuse_special_file(path)  # again: it may have appeared meanwhile
        _keep_previous(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _unique_sibling(path, kind):
    head, name = os.path.split(path)
    return os.path.join(head, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.{kind}")


def _keep_previous(path):
    """Make ``path + ".prev"`` the current ``path`` (``path`` itself stays in place)."""
    if not os.path.isfile(path):
        return
    staged = _unique_sibling(path, "prev")
    try:
        try:
            os.link(path, staged)  # no copy: the replaced file's blocks live on as .prev
        except OSError:
            shutil.copyfile(path, staged)
            with open(staged, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(staged, previous_path(path))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise


def _fsync_directory(directory):
    """Make the renames durable where the file system allows it.

    Best effort: the new file is complete and in place already; some file
    systems (and Windows) cannot sync a directory.
    """
    if not hasattr(os, "O_DIRECTORY"):
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_online_state(path, header, arrays, estimator_cls):
    """Check an OnlineIRelief state as :func:`read_online_state` would, then write it.

    A state the reader would refuse is not written (``path`` and its
    ``.prev`` stay as they were): a checkpoint that cannot be resumed is
    worse than none.  Arrays in ``header`` (a bit generator's state) are
    stored as lists.

    Raises
    ------
    ValueError
        The state breaks one of the checks; nothing was written.
    """
    try:
        specs = array_specs(header)
        if set(specs) != set(arrays):
            raise Problem(f"arrays {sorted(arrays)} do not match the header's {sorted(specs)}")
        for key, (dtype, shape, _, why) in specs.items():
            check_layout(key, arrays[key].dtype, arrays[key].shape, dtype, shape, why)
        check_online_state(header, arrays, estimator_cls)
    except Problem as exc:
        raise ValueError(
            f"{estimator_cls.__name__}.save_state: the stream's state is not "
            f"valid ({exc}); nothing was written to {os.fspath(path)}."
        ) from exc.__cause__
    text = json.dumps(header, allow_nan=False, default=_json_default)
    write_atomic(path, lambda fh: np.savez(fh, **{HEADER: np.array(text)}, **arrays))


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be stored in a checkpoint header")
