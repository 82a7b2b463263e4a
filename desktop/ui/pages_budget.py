"""The pages box (with its hint and suggestion), the context budget and the target line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QLabel, QLineEdit, QPushButton

from desktop.answering.budget import suggest_pages
from desktop.answering.conversation import covers as thread_covers  # the core's rule
from desktop.answering.pages import describe, format_range, parse_range
from desktop.answering.prompt import PageRange
from desktop.answering.threads import Thread, history_messages
from desktop.documents.model import Document
from desktop.ui import messages, tasks
from desktop.ui.budget_bar import BudgetBar
from desktop.ui.session import BudgetView, Session

BUDGET_DEBOUNCE_MS = 400


class PagesBudget(QObject):
    """Which pages the question goes to and whether it fits the server's context.

    The panel tells it the document, the thread a question continues, the question and
    Think, and whether counting may run at all (``countable``: an answerable document in
    a window that is not closing)."""

    suggestion_used = Signal()  # the pages box took the suggested range

    def __init__(
        self,
        session: Session,
        document: Callable[[], Document | None],
        thread: Callable[[], Thread | None],
        question: Callable[[], str],
        thinking: Callable[[], bool],
        countable: Callable[[], bool],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self._document = document
        self._thread = thread
        self._question = question
        self._thinking = thinking
        self._countable = countable
        self.task: tasks.Task[BudgetView] | None = None
        self._dirty = False
        self._suggested = ""
        self.budget_bar = BudgetBar()
        # Which document (and pages) the question goes to, always in view.
        self.target_label = QLabel()
        self.target_label.setObjectName("askTarget")
        self.target_label.setTextFormat(Qt.TextFormat.PlainText)
        self.target_label.setWordWrap(True)
        self.pages_edit = QLineEdit()
        self.pages_edit.setObjectName("pages")
        self.pages_edit.setPlaceholderText("all pages")
        self.pages_edit.setToolTip(
            "Ask about a page range only: 1-120 (physical page numbers), iv..xii (printed "
            "labels, as the viewer shows them) or a single label such as A-2"
        )
        # "3-100", "iv..xii" stay readable beside a hint, in the platform's font.
        chars = self.pages_edit.fontMetrics().averageCharWidth()
        self.pages_edit.setMinimumWidth(chars * 13)
        self.pages_edit.setMaximumWidth(chars * 18)
        self.pages_edit.textChanged.connect(self._on_pages_edit_text_changed)
        self.pages_hint = QLabel()
        self.pages_hint.setTextFormat(Qt.TextFormat.PlainText)
        self.pages_hint.setWordWrap(True)  # a long hint wraps instead of squeezing the box
        self.suggest_button = QPushButton()
        self.suggest_button.hide()
        self.suggest_button.clicked.connect(self._on_suggest_button_clicked)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(BUDGET_DEBOUNCE_MS)
        self._timer.timeout.connect(self.refresh)

    def pages(self) -> PageRange | None:
        """The chosen range; None for the whole document. Raises ValueError."""
        text = self.pages_edit.text().strip()
        doc = self._document()
        if not text or doc is None or text.lower() == "all":
            return None
        return parse_range(text, doc.pages)

    def update_target(self) -> None:
        """Name the document and the pages the question goes to."""
        doc = self._document()
        if doc is None:
            self.target_label.setText("")
            self.target_label.hide()
            return
        count = len(doc.pages)
        try:
            pages = self.pages()
        except ValueError:
            pages = None
        if pages is None or (pages.first, pages.last) == (1, count):
            scope = f"all {count:,} pages" if count != 1 else "its 1 page"
        else:
            scope = describe(doc.pages, pages)  # with printed labels, as the viewer shows
        title = doc.title or Path(doc.path).name
        self.target_label.setText(f"Asking about: {title} — {scope}")
        self.target_label.setToolTip(doc.path)
        self.target_label.show()

    @Slot()
    def schedule(self) -> None:
        """Recount after a pause (restarted by each key typed)."""
        self._timer.start()

    @Slot()
    def refresh(self) -> None:
        """Recount the prompt against the server's context (off the UI thread)."""
        doc = self._document()
        if doc is None or not self._countable():
            return
        if self.task is not None and not self.task.done:
            self._dirty = True
            return
        try:
            pages = self.pages()
        except ValueError:
            return
        question = self._question()
        thinking = self._thinking()
        session = self.session
        thread = self._thread()
        history = history_messages(thread.turns) if thread is not None else []
        if thread is not None:
            pages = PageRange(thread.first_page, thread.last_page)

        def done(view: BudgetView) -> None:
            if self._document() is doc:
                self._show(view)

        def failed(exc: BaseException) -> None:
            if self._document() is doc:
                self.budget_bar.show_unknown(f"Context budget unknown: {messages.describe(exc)}")

        self.task = tasks.run_call(
            lambda: session.budget(doc, pages, question, thinking, history),
            receiver=self,
            success=done,
            failure=failed,
            name="budget",
        )
        self.task.finished.connect(self._on_task_finished)

    def stop(self) -> None:
        """No count may start or draw any more (the window is closing)."""
        self._timer.stop()
        if self.task is not None:
            self.task.detach()
            self._dirty = False

    @Slot()
    def _on_task_finished(self) -> None:
        if self._dirty:
            self._dirty = False
            self.refresh()

    def _show(self, view: BudgetView) -> None:
        doc = self._document()
        doc_pages = doc.pages if doc is not None else []
        self.budget_bar.show_budget(view, doc_pages)
        suggestion = suggest_pages(view.pages, view.budget)
        if suggestion is None or doc is None:  # fits, or one page: nothing to cut
            self.suggest_button.hide()
            return
        first, last = suggestion.first, suggestion.last
        # In printed labels (what the viewer shows), in the grammar the page box reads.
        self._suggested = format_range(doc_pages, first, last, labels=True)
        self.suggest_button.setText(f"Use pages {self._suggested}")
        if len(doc_pages) == view.page_count:
            self.suggest_button.setToolTip(
                f"Ask about {describe(doc_pages, PageRange(first, last))}"
            )
        self.suggest_button.show()

    @Slot()
    def _on_suggest_button_clicked(self) -> None:
        self.pages_edit.setText(self._suggested)
        self.suggestion_used.emit()

    @Slot(str)
    def _on_pages_edit_text_changed(self, _text: str) -> None:
        try:
            pages = self.pages()
        except ValueError as exc:
            self.pages_hint.setText(str(exc))
            return
        if pages is None or self._document() is None:
            self.pages_hint.clear()
        else:
            # "Asking about: ..." above names the pages (with printed labels): the hint
            # beside the box only says what is wrong.
            hint = ""
            thread = self._thread()
            if thread is not None and thread.turns and not thread_covers(thread, pages):
                hint = "Not this thread's pages: start a New thread to ask about them"
            self.pages_hint.setText(hint)
        self.update_target()
        self.schedule()
