"""The server's output in a size-capped rotating file, and reading it back (or following it)."""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

MAX_BYTES = 5 * 1024 * 1024
BACKUP_COUNT = 3
REDACTED = "[redacted]"


def redactor(*secrets: str) -> Callable[[str], str]:
    """A function that blanks every occurrence of the secrets in a line."""
    words = [s for s in secrets if s]

    def redact(line: str) -> str:
        for word in words:
            line = line.replace(word, REDACTED)
        return line

    return redact


class ServerLog:
    """Appends server output lines to ``server.log``, rotating at 5 MB and keeping 3 old files."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES, backups: int = BACKUP_COUNT) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A private logger (not under "longdoc") so server output never reaches the app's
        # handlers; RotatingFileHandler does the size cap and the renaming.
        self._logger = logging.Logger(f"longdoc.server.output.{id(self)}")
        self._handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger.addHandler(self._handler)
        self._logger.propagate = False

    def write(self, line: str) -> None:
        """One line of server output (without its newline)."""
        self._logger.info(line)

    def close(self) -> None:
        """Flush and close the file."""
        self._logger.removeHandler(self._handler)
        self._handler.close()


def log_files(path: Path, backups: int = BACKUP_COUNT) -> list[Path]:
    """Existing log files, oldest first."""
    older = [path.with_name(f"{path.name}.{n}") for n in range(backups, 0, -1)]
    return [p for p in [*older, path] if p.exists()]


def read_lines(
    path: Path,
    follow: bool = False,
    stop: threading.Event | None = None,
    poll_s: float = 0.2,
    secrets: tuple[str, ...] = (),
) -> Iterator[str]:
    """Every stored line, oldest first; with ``follow``, then new lines as they arrive.

    ``secrets`` are blanked in every line (logs written by an older Longdoc may hold them).
    """
    redact = redactor(*secrets)
    return (redact(line) for line in _read_lines(path, follow, stop, poll_s))


def _read_lines(
    path: Path, follow: bool, stop: threading.Event | None, poll_s: float
) -> Iterator[str]:
    files = log_files(path)
    for old in files[:-1]:
        with old.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                yield line.rstrip("\n")
    if not follow:
        if files and files[-1] == path:
            with path.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    yield line.rstrip("\n")
        return
    yield from _follow(path, stop or threading.Event(), poll_s)


def _follow(path: Path, stop: threading.Event, poll_s: float) -> Iterator[str]:
    """Tail ``path`` across rotations (a new inode or a shorter file means it rotated)."""
    fh = None
    inode = -1
    partial = ""
    try:
        while not stop.is_set():
            if fh is None:
                try:
                    fh = path.open(encoding="utf-8", errors="replace")
                    inode = os.fstat(fh.fileno()).st_ino
                except FileNotFoundError:
                    time.sleep(poll_s)
                    continue
            chunk = fh.readline()
            if chunk:
                partial += chunk
                if partial.endswith("\n"):
                    yield partial.rstrip("\n")
                    partial = ""
                continue
            try:
                st = path.stat()
                rotated = st.st_ino != inode or st.st_size < fh.tell()
            except FileNotFoundError:
                rotated = True
            if rotated:
                fh.close()
                fh = None
                continue
            stop.wait(poll_s)
    finally:
        if fh is not None:
            fh.close()
