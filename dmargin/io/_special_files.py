"""Paths that must be regular files: a save's target, a checkpoint to read.

A save renames a new file onto its target, which would replace a device node
(``/dev/full`` as root), a FIFO or a socket instead of writing into it; a read
of a FIFO with no writer blocks ``open`` for ever.  Both are refused with a
``ValueError`` naming the path and what it is.
"""

from __future__ import annotations

import os
import stat


def refuse_special_file(path):
    """Raise ``ValueError`` if ``path`` exists and is not a regular file.

    An atomic save renames a new regular file onto ``path``: onto a device
    (``/dev/full``), a FIFO, a socket or a directory that would replace the
    node itself (as root, a device node), never write into it.  A symbolic
    link is followed: a link to a regular file is replaced as before.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{path} exists and is {_kind(mode)}, not a regular file: a save "
            "replaces its target with a new file, which would remove it; "
            "give the path of a regular file (or of none yet)"
        )


def _kind(mode):
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def open_regular(path):
    """``path`` opened for reading in binary, refused unless it is a regular file.

    Opened without blocking, then checked on the open descriptor: a FIFO
    with no writer would block ``open`` for ever, a device would be read
    without end.  Raises ``ValueError`` naming the file and what it is.
    """
    name = os.fspath(path)
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(
                f"{name} is {_kind(mode)}, not a regular file; give the path of a file"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
