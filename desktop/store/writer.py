"""Documents written to the store by a process of its own, while this one reads the next.

Writing a document is mostly SQLite building its pages' search index (~0.3 ms a 4,000-
character page); extracting one is mostly Python (~0.5 ms a page of plain text). Done one
after the other, the index made ``longdoc ingest`` of a folder of text files ~1.5x slower.
A writer *thread* overlapped almost nothing: SQLite releases the GIL while it works, but the
writer takes it back several times a document (each statement, the trigger's CJK check)
and waits for the extracting thread each time. A child process with its own connection to
the same database has no GIL to share: with a core to spare, the index costs next to no
time (bench/bench_search.py).

The child is a plain ``python -c`` (not ``multiprocessing``, whose spawn would run the
caller's main module again in it), in a session of its own (Ctrl+C is the caller's to handle), its
output discarded; the two talk over a pipe each way. It only ever receives extracted
``Document`` objects, never a file's bytes, so no reader runs in it. Whatever goes wrong
with it (it cannot start, a write fails, it dies), the caller still holds every document it
has not confirmed and writes them itself, where a failure raises the usual ``StorageError``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from desktop.documents.model import Document

STOP_WAIT_S = 30.0  # a document being written when the caller stops: let it finish
# The child's whole program: its import path is the caller's (as multiprocessing does it),
# then ``serve``. Its environment is the caller's too (PYTHONHOME, PYTHONDONTWRITEBYTECODE).
_CHILD = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "receive = Connection(int(sys.argv[1]), writable=False)\n"
    "sys.path[:] = receive.recv()\n"
    "from desktop.store.writer import serve\n"
    "serve(receive, Connection(int(sys.argv[2]), readable=False))\n"
)


class WriterGone(Exception):
    """The writing process could not take or confirm a document: write it in-process."""


class DocumentWriter:
    """A child process that saves documents to the store at ``db_path``, in order.

    ``send`` hands it a document; ``confirm`` waits for the oldest unconfirmed one to be
    committed. After the first ``WriterGone`` the writer is finished: close it.
    """

    def __init__(self, db_path: Path) -> None:
        if getattr(sys, "frozen", False) or not sys.executable:
            # The one-folder build: its executable is not a Python to run ``-c`` with.
            raise WriterGone("no Python to run the writing process with")
        # Here, not at the top: ~20 ms of imports that `longdoc ingest` of a stored file,
        # or `search --document`, should not pay.
        import subprocess
        from multiprocessing.connection import Connection

        to_child, from_child = os.pipe(), os.pipe()  # (read end, write end) each
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(to_child[0]), str(from_child[1])],
                pass_fds=(to_child[0], from_child[1]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (*to_child, *from_child):
                os.close(fd)
            raise WriterGone(f"cannot start the writing process ({exc})") from exc
        os.close(to_child[0])
        os.close(from_child[1])
        self._send = Connection(to_child[1], readable=False)
        self._receive = Connection(from_child[0], writable=False)
        try:
            self._put(list(sys.path))
            self._put(str(db_path))
        except WriterGone:
            self.close()
            raise

    def _put(self, value: object) -> None:
        try:
            self._send.send(value)
        except Exception as exc:  # a broken pipe, or a value pickle cannot take (too deep)
            raise WriterGone(f"the writing process did not take it ({exc})") from exc

    def send(self, doc: Document) -> None:
        """Queue ``doc`` to be written (blocks while the child is busy with an earlier one)."""
        self._put(doc)

    def ready(self) -> bool:
        """True when a confirmation (or the child's end) is waiting: ``confirm`` won't block."""
        try:
            return self._receive.poll()
        except (OSError, ValueError):
            return True  # confirm() will say it is gone

    def confirm(self) -> None:
        """Wait until the oldest document sent is committed."""
        try:
            written = self._receive.recv()
        except Exception as exc:  # its end of the pipe closed, or garbage on it
            raise WriterGone("the writing process stopped") from exc
        if written is not True:
            raise WriterGone("the writing process could not write a document")

    @property
    def pid(self) -> int:
        return self._process.pid

    def close(self) -> None:
        """Let the child finish what it was sent, then make sure it has exited."""
        from subprocess import TimeoutExpired

        with contextlib.suppress(OSError, ValueError):
            self._send.send(None)
        self._send.close()
        try:
            self._process.wait(STOP_WAIT_S)
        except TimeoutExpired:
            self._process.kill()  # our own child, by its handle: safe to stop
            self._process.wait()
        self._receive.close()


def serve(receive: Connection, send: Connection) -> None:
    """The child: open the store named first, save each document received and answer
    True, until None, the pipe's end or a failure (answered False)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store = None
    try:
        from desktop.store.db import Store

        store = Store(Path(receive.recv()))
        while True:
            doc = receive.recv()
            if doc is None:
                return
            store.save_document(doc)
            send.send(True)
    except EOFError:  # the caller is gone
        return
    except BaseException:  # whatever it was, the caller writes the document itself
        with contextlib.suppress(OSError, ValueError):
            send.send(False)
    finally:
        if store is not None:
            store.close()
        receive.close()
        send.close()
