"""Writing a report the user named (``--out``, the app's export): checked first, never replaced.

The one rule for every file Longdoc writes where the user points it:

* checked before any work (``check_output``): a folder, a missing folder, a socket or a
  file nobody may write is one ``Error:`` line (exit 2) before a question is asked;
* a symlink is written through to its target (the link stays a link);
* anything that is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is written in
  place, never replaced: renaming over ``/dev/null`` as root would make it a regular file;
* a regular file is replaced atomically (temporary file in the same folder, fsync, rename),
  keeping the old file's permissions, so a reader never sees half a report.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from desktop.errors import StorageError, UsageError, one_line

# OWASP's CSV injection rule: a spreadsheet reads a cell starting with one of these as a
# formula (=HYPERLINK(...) sends other cells' contents to a server when clicked).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A CSV cell that no spreadsheet runs as a formula: such text gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(rows: Iterable[Sequence[object]]) -> str:
    """Rows as CSV text, every cell through ``csv_cell`` (the one CSV writer)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return buffer.getvalue()


def _shown(path: Path) -> str:
    return one_line(str(path))


def _stat(path: Path) -> os.stat_result | None:
    """What ``path`` names, symlinks followed (/dev/stdout's /proc link too); None if nothing."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def check_output(path: Path) -> None:
    """Raise UsageError (exit 2) unless a report can be written to ``path``.

    Called before any document is read or question asked, so a typo in ``--out`` costs
    nothing. Symlinks are followed: what counts is the file they name.
    """
    path = Path(path).expanduser()
    try:
        info = _stat(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(f"{_shown(path)}: cannot write the report here ({reason}).") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{_shown(path)}: is a folder; give --out a file name in it.")
        if stat.S_ISSOCK(info.st_mode):
            raise UsageError(f"{_shown(path)}: is a socket, not a file; give --out a file.")
        if not os.access(path, os.W_OK):
            raise UsageError(
                f"{_shown(path)}: permission denied: the report cannot be written there; "
                "choose another --out."
            )
        return
    # Nothing there yet (or a dangling symlink): the file is made in the target's folder.
    parent = Path(os.path.realpath(path)).parent
    if not parent.is_dir():
        raise UsageError(
            f"{_shown(path)}: the folder {_shown(parent)} does not exist; create it first."
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(
            f"{_shown(path)}: permission denied: no new file can be made in {_shown(parent)}; "
            "choose another --out."
        )


def write_report(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` by the rules above; StorageError (exit 1) if the write fails.

    ``check_output`` runs again first (UsageError): the path may have changed meanwhile.
    """
    path = Path(path).expanduser()
    check_output(path)
    data = text.encode("utf-8")
    try:
        info = _stat(path)
        if info is not None and not stat.S_ISREG(info.st_mode):
            # Opened by the name given: the kernel follows /dev/stdout's /proc link, which
            # no path resolution can.
            _write_in_place(path, path, data)
            return
        target = Path(os.path.realpath(path))
        if info is not None and not os.access(target.parent, os.W_OK | os.X_OK):
            # A writable file in a folder we may not add to: no temporary file possible.
            _write_in_place(path, target, data, truncate=True)
        else:
            _replace(target, data, info)
    except OSError as exc:
        raise StorageError(f"{_shown(path)}: cannot write the report ({exc.strerror}).") from exc


def _write_in_place(path: Path, target: Path, data: bytes, truncate: bool = False) -> None:
    """Write into the existing file (device, FIFO, or a regular file we may only write)."""
    flags = os.O_WRONLY | (os.O_TRUNC if truncate else 0)
    try:
        # O_NONBLOCK first: a FIFO nobody reads fails at once (ENXIO) instead of hanging.
        fd = os.open(target, flags | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise StorageError(
                f"{_shown(path)}: no program is reading this pipe; the report was not written."
            ) from exc
        raise
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


def _replace(target: Path, data: bytes, old: os.stat_result | None) -> None:
    """Temporary file beside ``target``, fsync, rename over it (a regular file or none)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o600
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            if old is not None:
                os.fchmod(fd, mode)  # the umask may have narrowed it
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
