"""The one atomic writer: every file the harness writes whole goes through `write_text` / `write_bytes`.

A file is written to a temporary file with a unique name in the same directory (`tempfile.mkstemp`, so two
writers of the same path, e.g. two trials filling the base-eval cache, never share a temp file), flushed
and fsynced, then renamed over the target (`os.replace`, atomic on POSIX): a reader sees the old file or
the new one, never half of one, and a writer killed or out of disk leaves the target untouched and no
temp file behind. Appends (results.tsv rows, logs, metrics) are not whole-file writes and do not use it.

A target that exists and is not a regular file (a directory, `/dev/full`, a named pipe) is refused with an
OSError naming it before anything is written: renaming over it would replace a device node or fail late.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path


def check_target(path: Path) -> None:
    """Raise OSError if `path` cannot be (re)placed by a regular file: it exists as something else, or its
    parent is not a directory. Nothing is written."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise OSError(errno.EEXIST, f"exists and is {kind} (give a file path)", str(path))
    if path.parent.exists() and not path.parent.is_dir():
        raise OSError(errno.ENOTDIR, f"{path.parent} is not a directory", str(path))


def write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` atomically by `data` (see the module docstring); raises OSError with the filename.

    `mode`: the new file's permissions (default: the replaced file's, or 0o644)."""
    path = Path(path)
    check_target(path)
    if mode is None:
        mode = stat.S_IMODE(os.stat(path).st_mode) if path.exists() else 0o644
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:  # a missing or read-only directory, no space for an inode
        raise OSError(e.errno, e.strerror or str(e), str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        with suppress(OSError):
            os.unlink(tmp)
        if e.filename is None or e.filename == tmp:  # name the file the caller asked for, not the temp
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        raise
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str, mode: int | None = None) -> None:
    """`write_bytes` of `text` encoded as UTF-8."""
    write_bytes(path, text.encode("utf-8"), mode)
