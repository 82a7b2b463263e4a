"""Warm-up scheduling: the server prefills the open document while nobody asks anything."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel

from desktop.answering.events import Sent
from desktop.answering.prefill import PrefillGuess
from desktop.answering.prompt import PageRange
from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.errors import Cancelled
from desktop.ui import tasks
from desktop.ui.session import Session

log = logging.getLogger("longdoc.ui.ask")

# A document opened is warmed after this pause (not for each one flicked past).
WARM_UP_DELAY_MS = 700

WarmKey = tuple[str, str, int, int]  # endpoint, document sha, first page, last page


def doc_name(doc: Document) -> str:
    """The document as the warm-up line names it."""
    return doc.title or Path(doc.path).name


def ready_line(doc: Document) -> str:
    """The line once the server holds ``doc``: one full stop, even after a title that ends
    with its own (a text file's first line: "...listed in the schedule..")."""
    name = doc_name(doc)
    return f"Ready for questions: the server holds {name}{'' if name.endswith('.') else '.'}"


class WarmUp(QObject):
    """When to warm which pages, what the server holds, and the line that says so.

    The panel tells it the document (``document``), whether a question may use the server
    now (``askable``: answerable and no answer running) and the chosen pages (``pages``,
    raising ValueError for a range that does not parse)."""

    def __init__(
        self,
        session: Session,
        document: Callable[[], Document | None],
        askable: Callable[[], bool],
        pages: Callable[[], PageRange | None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self._document = document
        self._askable = askable
        self._pages = pages
        self.enabled = True
        self.server_ready = False  # the server is up and idle (the window tells us)
        self._task: tasks.Task[object] | None = None
        self._cancel: threading.Event | None = None
        self._warmed: set[WarmKey] = set()  # what the server holds
        self.label = QLabel()
        self.label.setObjectName("warmState")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.label.hide()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(WARM_UP_DELAY_MS)
        self._timer.timeout.connect(self.start)

    @property
    def warming(self) -> bool:
        """A warm-up is running."""
        return self._task is not None and not self._task.done

    def schedule(self) -> None:
        """Warm the open document after a pause (restarted by each document opened)."""
        self._timer.start()

    def _key(self, doc: Document, pages: PageRange | None) -> WarmKey:
        first, last = (pages.first, pages.last) if pages else (1, max(len(doc.pages), 1))
        return (self.session.settings.endpoint or "managed", doc.sha256, first, last)

    def holds(self, doc: Document, pages: PageRange | None) -> bool:
        """Has the server read these pages of ``doc`` (a warm-up or an answer)?"""
        return self._key(doc, pages) in self._warmed

    def remember(self, doc: Document, pages: PageRange | None) -> None:
        """An answer was prefilled from these pages: the server holds them now."""
        self._warmed.add(self._key(doc, pages))

    def prefill_guess(self, sent: Sent, history: list[StoredAnswer]) -> PrefillGuess:
        """How long the server will read ``sent``'s prompt (after a warm-up of these
        pages, only the question)."""
        doc = self._document()
        warm = doc is not None and self.holds(doc, PageRange(sent.first_page, sent.last_page))
        return self.session.prefill_guess(sent, history, warm=warm)

    def answered(self, answer: StoredAnswer, from_cache: bool) -> None:
        """An answer was stored: unless it came from the answer cache, the server read
        its pages and holds them now."""
        doc = self._document()
        if doc is not None and not from_cache:
            self.remember(doc, PageRange(answer.first_page, answer.last_page))

    def _pages_or_none(self) -> PageRange | None:
        try:
            return self._pages()
        except ValueError:
            return None

    def set_server_state(self, state: str) -> None:
        """The server's state (ready, busy, starting, stopped, failed): warm the open
        document when it is ready and idle; a server that went away has forgotten it all."""
        self.server_ready = state == "ready"
        if state in ("stopped", "starting", "failed"):
            self._warmed.clear()
        doc = self._document()
        if (
            self.server_ready
            and doc is not None
            and not self.holds(doc, self._pages_or_none())
            and not self.warming
            and not self._timer.isActive()
        ):
            self._timer.start()

    @Slot()
    def start(self) -> None:
        """Have the server read the open document now, so the first question starts at once.

        Only while nothing else is asked (the server is idle, no answer runs); a question
        or another document cancels it. Nothing is shown if it fails: it is only a head
        start, and the question itself says what is wrong."""
        doc = self._document()
        if (
            not self.enabled
            or not self.server_ready
            or doc is None
            or not self._askable()
            or self.warming
        ):
            return
        session = self.session
        try:
            pages = self._pages()
        except ValueError:
            return
        key = self._key(doc, pages)
        if key in self._warmed:
            self._show(ready_line(doc))
            return
        cancel = threading.Event()
        self._cancel = cancel
        self._show(
            f"Reading {doc_name(doc)} into the server's cache, so the first question "
            "starts at once…"
        )

        def done(_result: object) -> None:
            self._warmed.add(key)
            if self._document() is doc and self._askable():
                self._show(ready_line(doc))

        def failed(exc: BaseException) -> None:
            if not isinstance(exc, Cancelled):
                log.info("warming %s up failed: %s", doc.path, exc)
            if self._document() is doc and self._cancel is cancel:
                self.label.hide()

        self._task = tasks.run_call(
            lambda: session.answerer().prewarm(doc, pages, cancel),
            receiver=self,
            success=done,
            failure=failed,
            name="warm up",
        )

    def cancel(self) -> None:
        """Stop a warm-up (a question is asked, or another document opened)."""
        self._timer.stop()
        if self._cancel is not None:
            self._cancel.set()
            self._cancel = None
        self.label.hide()

    def _show(self, text: str) -> None:
        self.label.setText(text)
        self.label.show()
