"""The library follows other Longdoc processes: a CLI ``ingest`` or ``remove``, or a
batch into the same data directory, shows in the open window within about a second.

A cheap timer starts one background check at a time (``desktop.library.LibraryChanges``:
SQLite's ``data_version``, one pragma); the store is never queried on the UI thread.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer, Signal

from desktop.library import LibraryChanges
from desktop.session import DocumentSummary
from desktop.ui import tasks

log = logging.getLogger("longdoc.ui.library")

CHECK_MS = 1_000


class LibraryFollower(QObject):
    """Emits ``changed`` with the documents when another process changed them."""

    changed = Signal(list)  # list[DocumentSummary]

    def __init__(self, changes: LibraryChanges, parent: QObject, interval_ms: int = CHECK_MS):
        super().__init__(parent)
        self.changes = changes
        self._task: tasks.Task[list[DocumentSummary] | None] | None = None
        self._local = False  # this process changed the documents: list them next time
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    def start(self) -> None:
        """Check every ``interval_ms`` from now on."""
        self._timer.start()

    def stop(self) -> None:
        """No more checks (the window closes; the store is about to close)."""
        self._timer.stop()

    def local_change(self) -> None:
        """This process stored documents by another way than the library panel (a batch
        run in the app): the next check lists them (coalesced, at most once a check)."""
        self._local = True

    def check(self) -> None:
        """One check in the background, unless the last one is still running (a long
        write holds the store: the checks wait instead of piling up)."""
        if self._task is not None and not self._task.done:
            return
        force, self._local = self._local, False
        changes = self.changes
        self._task = tasks.run_call(
            lambda: changes.check(force),
            receiver=self,
            success=self._on_checked,
            failure=lambda exc: log.info("library check failed: %s", exc),
            name="library check",
        )

    def _on_checked(self, documents: list[DocumentSummary] | None) -> None:
        if documents is not None and self._timer.isActive():
            self.changed.emit(documents)
