"""The library's files being read: a queue, worked through in runs off the UI thread.

Each run takes what is queued at its start and reads it as ``longdoc ingest`` reads a
folder (``desktop.library.open_documents``): each file read while a process of its own
writes the one before, so a folder's search index costs no time on a spare core. Files
added meanwhile wait for the next run. Qt-side only: the reading is the core's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel

from desktop.documents.model import Document
from desktop.errors import DocumentError, plural
from desktop.library import Opened, open_documents
from desktop.session import Store
from desktop.ui import messages, tasks


class IngestQueue(QObject):
    """Files to read into the library, in the order given, with a progress line."""

    # A file's row: (path, state "queued" | "reading" | "failed", text, tooltip).
    status_changed = Signal(object, str, str, str)
    document_read = Signal(object, object, bool)  # path, Document, came from the store
    finished = Signal()  # nothing left to read

    def __init__(self, store: Store, progress: QLabel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.progress = progress
        self._queue: list[Path] = []
        self._run: list[Path] = []  # the files of the run going on, not reported yet
        self._current: Path | None = None  # the file being read
        self._done = 0
        self._total = 0

    @property
    def busy(self) -> bool:
        """Files are being read or wait to be."""
        return self._current is not None or bool(self._queue)

    def enqueue(self, files: list[Path]) -> None:
        """Read ``files`` after those queued before."""
        for path in files:
            self._queue.append(path)
            self.status_changed.emit(path, "queued", "waiting", str(path))
        self._total += len(files)
        self._next()

    def _next(self) -> None:
        if self._current is not None:
            return
        if not self._queue:
            self.progress.clear()
            self._done = self._total = 0
            self.finished.emit()
            return
        run, self._queue = self._queue, []
        self._run = list(run)
        self._show_reading(run[0])
        store = self.store

        def start(cancel: threading.Event) -> Iterator[Opened | DocumentError]:
            with contextlib.closing(open_documents(run, store)) as results:
                for result in results:
                    yield result
                    if cancel.is_set():  # the window closes: the writes in hand finish
                        return

        tasks.run_stream(
            start,
            receiver=self,
            events=self._on_results,
            success=self._on_run_done,
            failure=self._on_run_failed,
            name="ingest",
        )

    def _show_reading(self, path: Path) -> None:
        self._current = path
        self.status_changed.emit(path, "reading", "reading…", str(path))
        self.progress.setText(f"Reading {self._done + 1} of {self._total}: {path.name}")

    def _on_results(self, results: list[Opened | DocumentError]) -> None:
        """Files of the run read (or refused), in the order they were queued."""
        for result in results:
            path = self._run.pop(0)
            self._done += 1
            if isinstance(result, DocumentError):
                self._failed(path, result.reason, result)
                messages.error(result)
            else:
                self._read(path, result.doc, result.reused)
        if self._run:
            self._show_reading(self._run[0])

    def _read(self, path: Path, doc: Document, reused: bool) -> None:
        if doc.warnings:
            messages.warning(f"{path.name}: {'; '.join(doc.warnings)}")
        elif not reused:
            messages.info(
                f"Read {path.name}: {plural(len(doc.pages), 'page')}, "
                f"{plural(doc.tokens, 'token')}."
            )
        self.document_read.emit(path, doc, reused)

    def _failed(self, path: Path, reason: str, exc: BaseException) -> None:
        self.status_changed.emit(path, "failed", f"failed: {reason}", messages.describe(exc))

    def _on_run_done(self, _: None) -> None:
        self._current = None
        self._next()

    def _on_run_failed(self, exc: BaseException) -> None:
        """The run stopped (the database cannot be written): the files it did not reach
        say so, the error is shown once, and what was queued since goes on."""
        for path in self._run:
            self._done += 1
            self._failed(path, messages.describe(exc), exc)
        self._run = []
        messages.error(exc)
        self._current = None
        self._next()
