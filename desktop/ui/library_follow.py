"""The library follows other Longdoc processes: a CLI ``ingest`` or ``remove``, or a
batch into the same data directory, shows in the open window within about a second.

A cheap timer starts one background check at a time (``desktop.library.LibraryChanges``:
SQLite's ``data_version``, one pragma); the store is never queried on the UI thread.

Each check is numbered when it starts, and the listing a check hands on says which check
read it (``listed_by``): a document known to be stored before check N started and absent
from N's listing was removed (by another process or this one), whereas an older listing may
simply predate it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

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
        self._local_after = 0  # checks started up to this one read before such a change
        self.started = 0  # checks started so far (the number of the latest)
        self.listed_by = 0  # the check whose listing ``changed`` carries (while emitted)
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
        """This process stored or removed documents (a file read, Remove, a batch run in
        the app): the next check lists them and hands the listing on (coalesced, at most
        once a check). ``data_version`` does not count this process's own writes, so
        without this the next look would compare with a listing from before them, and a
        document read here, then removed by ``longdoc remove``, would look unchanged.
        A check already running may have read the store before the change: its listing
        is dropped (it would take the new rows away until the next one)."""
        self._local = True
        self._local_after = self.started

    def check(self) -> None:
        """One check in the background, unless the last one is still running (a long
        write holds the store: the checks wait instead of piling up)."""
        if self._task is not None and not self._task.done:
            return
        force, self._local = self._local, False
        changes = self.changes
        self.started += 1
        number = self.started
        # Forced: the listing whatever it is (``list_now``), as the model may differ from
        # the last listing by this process's own changes.
        job: Callable[[], list[DocumentSummary] | None] = (
            changes.list_now if force else changes.check
        )
        self._task = tasks.run_call(
            job,
            receiver=self,
            success=lambda documents: self._on_checked(number, documents),
            failure=lambda exc: log.info("library check failed: %s", exc),
            name="library check",
        )

    def _on_checked(self, number: int, documents: list[DocumentSummary] | None) -> None:
        if number <= self._local_after:  # read before a change made here: the next lists
            return
        if documents is not None and self._timer.isActive():
            self.listed_by = number
            self.changed.emit(documents)
