"""Ask about the open document: question box, budget, page range, history, the answer."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.answering import conversation
from desktop.answering.budget import suggest_pages
from desktop.answering.citations import QuoteCheck
from desktop.answering.events import AnswerDelta, Finished, ReasoningDelta, Sent, Stored, Usage
from desktop.answering.format import scope as page_scope
from desktop.answering.pages import describe, format_range, parse_range
from desktop.answering.prompt import PageRange
from desktop.answering.service import Question
from desktop.answering.threads import Thread, history_messages
from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.errors import (
    Cancelled,
    DocumentTooLarge,
    LongdocError,
    OtherPages,
    Remedy,
    ServerSetupError,
    ServerUnavailable,
    ThreadTooLong,
    remedy_for,
)
from desktop.reports import write_report
from desktop.ui import messages, quote_marks, tasks
from desktop.ui.answer_view import AnswerView
from desktop.ui.budget_bar import BudgetBar
from desktop.ui.export import answer_markdown, history_markdown
from desktop.ui.session import BudgetView, Session, document_unanswerable
from desktop.ui.thread_view import ThreadView
from desktop.ui.warm_up import WarmUp

log = logging.getLogger("longdoc.ui.ask")

BUDGET_DEBOUNCE_MS = 400
# Quotes are checked on the UI thread for up to this much page text (~15 ms) and answer
# text (a long answer has many quotes: 400 cost ~25 ms), else in a worker.
QUOTE_CHECK_INLINE_CHARS = 100_000
QUOTE_CHECK_INLINE_ANSWER_CHARS = 8_000


class QuestionEdit(QPlainTextEdit):
    """Enter asks, Shift+Enter breaks the line."""

    submitted = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class AskPanel(QWidget):
    """The right-hand side of the window."""

    answer_started = Signal()
    answer_finished = Signal(object)  # StoredAnswer, or the exception that ended it
    citation_clicked = Signal(object, object)  # label, number
    quote_clicked = Signal(str, int)  # a checked quote and the page it is on
    server_start_requested = Signal()
    settings_requested = Signal()
    busy_changed = Signal(bool)

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.document: Document | None = None
        self.history: list[StoredAnswer] = []
        # The conversation a question continues; None: the next question starts a thread.
        self.current_thread: Thread | None = None
        self._closed = False  # the window is closing: no more background counts
        self._task: tasks.Task[None] | None = None
        # Tasks stopped by the user: the panel is given back at once, they end behind it.
        self._stopped: set[tasks.Task[None]] = set()
        self._question: Question | None = None
        self._unanswerable: str | None = None  # why the open document cannot be asked about
        # Warm-up: the server prefills the open document while nobody asks anything.
        self.warm_up = WarmUp(
            session,
            document=lambda: self.document,
            askable=lambda: self._unanswerable is None and not self.busy,
            pages=self._pages,
            parent=self,
        )
        self._budget_task: tasks.Task[BudgetView] | None = None
        self._budget_dirty = False
        self.tokens_received = 0  # answer and reasoning deltas in the current answer
        self._suggested = ""
        # The open document's pages, indexed for quote checks (normalised text is cached).
        self._page_chars = 0

        self.history_list = QListWidget()
        self.history_list.setObjectName("history")
        self.history_list.setWordWrap(True)
        self.history_list.currentItemChanged.connect(self._on_history_current_item_changed)
        history_box = QWidget()
        history_layout = QVBoxLayout(history_box)
        history_layout.setContentsMargins(0, 0, 0, 0)
        self.history_title = QLabel("Questions about this document")
        history_layout.addWidget(self.history_title)
        history_layout.addWidget(self.history_list)

        self.answer_view = AnswerView()
        self.answer_view.citation_clicked.connect(self.citation_clicked)
        self.answer_view.quote_clicked.connect(self.quote_clicked)
        self.answer_view.ask_again_requested.connect(self._on_answer_view_ask_again_requested)
        self.answer_view.copy_requested.connect(self.copy_answer)
        self.answer_view.export_requested.connect(self._on_answer_view_export_requested)
        self.answer_view.action_requested.connect(self._on_answer_view_action_requested)

        self.conversation = self._make_conversation()

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("askSplitter")
        self.splitter.addWidget(history_box)
        self.splitter.addWidget(self.conversation)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 4)
        self.splitter.setChildrenCollapsible(False)

        self.budget_bar = BudgetBar()
        # Which document (and pages) the question goes to, always in view.
        self.target_label = QLabel()
        self.target_label.setObjectName("askTarget")
        self.target_label.setTextFormat(Qt.TextFormat.PlainText)
        self.target_label.setWordWrap(True)
        self.warm_label = self.warm_up.label
        self.question_edit = QuestionEdit()
        self.question_edit.setObjectName("question")
        self.question_edit.setPlaceholderText(
            "Ask about the whole document… (Enter asks, Shift+Enter for a new line)"
        )
        self.question_edit.setTabChangesFocus(True)
        self.question_edit.submitted.connect(self.ask)
        self.question_edit.textChanged.connect(self._schedule_budget)
        metrics = self.question_edit.fontMetrics()
        self.question_edit.setFixedHeight(metrics.lineSpacing() * 3 + 14)

        self.pages_edit = QLineEdit()
        self.pages_edit.setObjectName("pages")
        self.pages_edit.setPlaceholderText("all pages")
        self.pages_edit.setToolTip(
            "Ask about a page range only: 1-120 (physical page numbers), iv..xii (printed "
            "labels, as the viewer shows them) or a single label such as A-2"
        )
        self.pages_edit.setMinimumWidth(80)  # "3-100", "iv..xii" stay readable beside a hint
        self.pages_edit.setMaximumWidth(110)
        self.pages_edit.textChanged.connect(self._on_pages_edit_text_changed)
        self.pages_hint = QLabel()
        self.pages_hint.setTextFormat(Qt.TextFormat.PlainText)
        self.pages_hint.setWordWrap(True)  # a long hint wraps instead of squeezing the box
        self.suggest_button = QPushButton()
        self.suggest_button.hide()
        self.suggest_button.clicked.connect(self._on_suggest_button_clicked)
        self.think_box = QCheckBox("Think")
        self.think_box.setToolTip("Let the model reason before answering (slower, often better)")
        self.think_box.setChecked(session.settings.thinking)
        self.think_box.toggled.connect(self._schedule_budget)
        self.ask_button = QPushButton("Ask")
        self.ask_button.setDefault(True)
        self.ask_button.setToolTip("Ask (Enter, or Ctrl+Enter anywhere)")
        self.ask_button.clicked.connect(self._on_ask_button_clicked)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the answer (Esc); what arrived is kept")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)

        row = QHBoxLayout()
        row.addWidget(QLabel("Pages:"))
        row.addWidget(self.pages_edit)
        row.addWidget(self.suggest_button)
        row.addWidget(self.pages_hint, 1)
        row.addWidget(self.think_box)
        row.addWidget(self.stop_button)
        row.addWidget(self.ask_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.splitter, 1)
        layout.addWidget(self.budget_bar)
        layout.addWidget(self.target_label)
        layout.addWidget(self.warm_label)
        layout.addWidget(self.question_edit)
        layout.addLayout(row)

        self._budget_timer = QTimer(self)
        self._budget_timer.setSingleShot(True)
        self._budget_timer.setInterval(BUDGET_DEBOUNCE_MS)
        self._budget_timer.timeout.connect(self.refresh_budget)
        self.set_document(None)

    # --- document -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """An answer is on its way."""
        return self._task is not None and not self._task.done

    def set_document(self, doc: Document | None) -> None:
        """Ask about ``doc`` from now on (stops an answer about another document)."""
        if doc is not None and self.document is not None and doc.sha256 == self.document.sha256:
            return
        if self.busy:
            self.stop()
            messages.info("Stopped the answer: another document was opened.")
        self.cancel_warm_up()  # superseded by the document opened now
        self.document = doc
        self._page_chars = 0
        self._set_thread(None)
        self.answer_view.set_pages(doc.pages if doc is not None else [])
        self.history = []
        self.history_list.clear()
        self.answer_view.reset()
        self.pages_edit.clear()
        self._unanswerable = document_unanswerable(doc) if doc is not None else None
        enabled = doc is not None
        for widget in (self.question_edit, self.pages_edit, self.think_box):
            widget.setEnabled(enabled)
        self._update_ask_button()
        self._update_target()
        self.history_title.setText(
            "Questions about this document" if doc else "Open a document to ask about it"
        )
        if doc is None:
            self.budget_bar.show_unknown("")
            return
        self.refresh_history()
        self.load_last_thread()
        if self._unanswerable is not None:
            self.budget_bar.show_unknown(f"Cannot ask about this document: {self._unanswerable}.")
            return
        self.refresh_budget()
        self.warm_up.schedule()

    # --- warm-up (desktop/ui/warm_up.py) ------------------------------------------------

    @property
    def warm_up_enabled(self) -> bool:
        """Warm the open document up while the server is idle."""
        return self.warm_up.enabled

    @warm_up_enabled.setter
    def warm_up_enabled(self, enabled: bool) -> None:
        self.warm_up.enabled = enabled

    @property
    def server_ready(self) -> bool:
        """The server is up and idle (the window tells us)."""
        return self.warm_up.server_ready

    @property
    def warming(self) -> bool:
        """A warm-up is running."""
        return self.warm_up.warming

    def set_server_state(self, state: str) -> None:
        """The server's state (ready, busy, starting, stopped, failed)."""
        self.warm_up.set_server_state(state)

    def cancel_warm_up(self) -> None:
        """Stop a warm-up (a question is asked, or another document opened)."""
        self.warm_up.cancel()

    def _update_ask_button(self) -> None:
        """Ask is enabled when a document that has text is open and no answer is running."""
        reason = self._unanswerable
        self.ask_button.setEnabled(self.document is not None and reason is None and not self.busy)
        self.ask_button.setToolTip(
            f"Cannot ask: {reason}" if reason else "Ask (Enter, or Ctrl+Enter anywhere)"
        )

    def _update_target(self) -> None:
        """Name the document and the pages the question goes to."""
        doc = self.document
        if doc is None:
            self.target_label.setText("")
            self.target_label.hide()
            return
        count = len(doc.pages)
        try:
            pages = self._pages()
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

    def refresh_history(self, select_id: int | None = None) -> None:
        """Reload the questions asked about the document (off the UI thread)."""
        doc = self.document
        if doc is None:
            return
        store = self.session.store

        def loaded(answers: list[StoredAnswer]) -> None:
            if self.document is None or self.document.sha256 != doc.sha256:
                return
            self._fill_history(answers, select_id)

        tasks.run_call(
            lambda: store.answers_for(doc.sha256),
            receiver=self,
            success=loaded,
            name="history",
        )

    def _fill_history(self, answers: list[StoredAnswer], select_id: int | None) -> None:
        self.history = answers
        self.history_list.blockSignals(True)
        self.history_list.clear()
        for answer in reversed(answers):  # newest first
            text = answer.question.strip().replace("\n", " ")
            if answer.status != "complete":
                text = f"{text}  ({answer.status})"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, answer.id)
            item.setToolTip(answer.question)
            self.history_list.addItem(item)
            if answer.id == select_id:
                self.history_list.setCurrentItem(item)
        self.history_list.blockSignals(False)

    @Slot(QListWidgetItem, QListWidgetItem)
    def _on_history_current_item_changed(
        self, current: QListWidgetItem | None, _previous: QListWidgetItem | None
    ) -> None:
        if current is None or self.busy or self.document is None:
            return
        answer_id = current.data(Qt.ItemDataRole.UserRole)
        answer = next((a for a in self.history if a.id == answer_id), None)
        if answer is not None:
            self.answer_view.show_answer(answer, len(self.document.pages))
            self.check_quotes(answer)
            self._open_thread_at(answer)

    # --- budget ---------------------------------------------------------------------------

    @Slot()
    def _schedule_budget(self) -> None:
        self._budget_timer.start()

    def refresh_budget(self) -> None:
        """Recount the prompt against the server's context (off the UI thread)."""
        doc = self.document
        if doc is None or self._closed or self._unanswerable is not None:
            return
        if self._budget_task is not None and not self._budget_task.done:
            self._budget_dirty = True
            return
        try:
            pages = self._pages()
        except ValueError:
            return
        question = self.question_edit.toPlainText()
        thinking = self.think_box.isChecked()
        session = self.session
        history = (
            history_messages(self.current_thread.turns) if self.current_thread is not None else []
        )
        if self.current_thread is not None:
            pages = PageRange(self.current_thread.first_page, self.current_thread.last_page)

        def done(view: BudgetView) -> None:
            if self.document is doc:
                self._show_budget(view)

        def failed(exc: BaseException) -> None:
            if self.document is doc:
                self.budget_bar.show_unknown(f"Context budget unknown: {messages.describe(exc)}")

        self._budget_task = tasks.run_call(
            lambda: session.budget(doc, pages, question, thinking, history),
            receiver=self,
            success=done,
            failure=failed,
            name="budget",
        )
        self._budget_task.finished.connect(self._on_budget_task_finished)

    @Slot()
    def _on_budget_task_finished(self) -> None:
        if self._budget_dirty:
            self._budget_dirty = False
            self.refresh_budget()

    def _show_budget(self, view: BudgetView) -> None:
        doc_pages = self.document.pages if self.document is not None else []
        self.budget_bar.show_budget(view, doc_pages)
        suggestion = suggest_pages(view.pages, view.budget)
        if suggestion is None or self.document is None:  # fits, or one page: nothing to cut
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
        self.question_edit.setFocus()

    def _pages(self) -> PageRange | None:
        """The chosen range; None for the whole document. Raises ValueError."""
        text = self.pages_edit.text().strip()
        if not text or self.document is None or text.lower() == "all":
            return None
        return parse_range(text, self.document.pages)

    @Slot(str)
    def _on_pages_edit_text_changed(self, _text: str) -> None:
        try:
            pages = self._pages()
        except ValueError as exc:
            self.pages_hint.setText(str(exc))
            return
        if pages is None or self.document is None:
            self.pages_hint.clear()
        else:
            # "Asking about: ..." above names the pages (with printed labels): the hint
            # beside the box only says what is wrong.
            hint = ""
            thread = self.current_thread
            if thread is not None and thread.turns and not conversation.covers(thread, pages):
                hint = "Not this thread's pages: start a New thread to ask about them"
            self.pages_hint.setText(hint)
        self._update_target()
        self._schedule_budget()

    # --- asking ---------------------------------------------------------------------------

    @Slot()
    def _on_ask_button_clicked(self) -> None:
        self.ask()

    @Slot()
    def _on_answer_view_ask_again_requested(self) -> None:
        answer = self.answer_view.answer
        if answer is not None and self.document is not None:
            again = conversation.ask_again(answer, self.current_thread, len(self.document.pages))
            self.question_edit.setPlainText(again.question)
            pages = again.pages
            self.pages_edit.setText("" if pages is None else f"{pages.first}-{pages.last}")
            self.think_box.setChecked(again.thinking)
            self._set_thread(again.thread)
            if again.thread is None:
                self.thread_view.show_turns([])
        self.ask(use_cache=False)

    def ask(self, use_cache: bool = True) -> bool:
        """Ask the question in the box; False (with the reason shown) if it cannot be."""
        if self.busy:
            return False
        doc = self.document
        if doc is None:
            messages.info("Open a document first.")
            return False
        if self._unanswerable is not None:
            messages.warning(f"Cannot ask about {Path(doc.path).name}: {self._unanswerable}.")
            return False
        text = self.question_edit.toPlainText().strip()
        if not text:
            self.question_edit.setFocus()
            messages.info("Type a question first.")
            return False
        try:
            pages = self._pages()
        except ValueError as exc:
            self.pages_hint.setText(str(exc))
            self.pages_edit.setFocus()
            return False
        thread = self.current_thread
        try:
            if thread is not None:
                conversation.follow_up_pages(thread, pages, len(doc.pages))
        except OtherPages as exc:
            self.answer_view.fail(exc.in_app, exc.remedy)
            return False
        question = Question(doc, text, pages, self.think_box.isChecked(), use_cache, thread=thread)
        self.thread_view.show_turns(thread.turns if thread is not None else [])
        scope = page_scope(pages.first, pages.last, doc.pages) if pages is not None else ""
        self.cancel_warm_up()  # the question prefills the document itself
        self._question = question
        self.tokens_received = 0
        self.answer_view.start(text, scope)
        self.history_list.clearSelection()
        session = self.session
        task = tasks.run_stream(
            lambda cancel: session.answerer().ask(question, cancel),
            receiver=self,
            # Once stopped, what still arrives is stored by the core, not shown.
            events=lambda batch: self._on_answer_events(batch) if task is self._task else None,
            success=lambda _: self._on_answer_done(task),
            failure=lambda exc: self._on_answer_failed(task, exc),
            name="answer",
        )
        self._task = task
        self._set_busy(True)
        self.answer_started.emit()
        return True

    def stop(self) -> None:
        """Stop the answer and give the panel back at once.

        The request is cancelled (the connection shut down, the server told to abort) and
        the core stores what arrived as incomplete behind the panel; nothing waits for it.
        """
        task = self._task
        if task is None or task.done:
            return
        task.cancel()
        self._task = None
        self._stopped.add(task)
        task.finished.connect(lambda: self._stopped.discard(task))
        self._set_busy(False)
        self.answer_view.fail("Stopped. What arrived is kept in the history as incomplete.")
        self.answer_finished.emit(Cancelled())

    def _set_busy(self, busy: bool) -> None:
        self._update_ask_button()
        self.stop_button.setEnabled(busy)
        self.history_list.setEnabled(not busy)
        self.new_thread_button.setEnabled(not busy and self.current_thread is not None)
        self.busy_changed.emit(busy)

    def _on_answer_events(self, batch: list[Any]) -> None:
        """A batch of events from the worker: text deltas are joined, rendered once."""
        answer: list[str] = []
        reasoning: list[str] = []

        def flush() -> None:
            if reasoning:
                self.answer_view.append_reasoning("".join(reasoning))
                reasoning.clear()
            if answer:
                self.answer_view.append_answer("".join(answer))
                answer.clear()

        for event in batch:
            if isinstance(event, AnswerDelta):
                if reasoning:
                    flush()
                answer.append(event.text)
                self.tokens_received += 1
            elif isinstance(event, ReasoningDelta):
                if answer:
                    flush()
                reasoning.append(event.text)
                self.tokens_received += 1
            else:
                flush()
                self._on_answer_event(event)
        flush()

    def _on_answer_event(self, event: Any) -> None:
        doc = self.document
        if isinstance(event, Sent):
            # After a warm-up of these pages the server reads only the question.
            pages = PageRange(event.first_page, event.last_page)
            warm = doc is not None and self.warm_up.holds(doc, pages)
            self.answer_view.on_sent(
                event, self.session.prefill_guess(event, self.history, warm=warm)
            )
        elif isinstance(event, Stored):
            if doc is not None and not event.from_cache:
                answer = event.answer  # the server holds these pages now
                pages = PageRange(answer.first_page, answer.last_page)
                self.warm_up.remember(doc, pages)
            self.answer_view.finish(event, len(doc.pages) if doc else 0)
            self.check_quotes(event.answer)
            self.session.learn([event.answer])
            self.refresh_history(select_id=event.answer.id)
            if event.thread_id is not None:
                self._join_thread(event.thread_id, event.answer)
        elif isinstance(event, Usage | Finished):
            pass  # the stored answer carries the same figures

    def _on_answer_done(self, task: tasks.Task[None]) -> None:
        if task is not self._task:  # stopped by the user, then it finished anyway
            self.refresh_history()
            return
        self._task = None
        self._set_busy(False)
        answer = self.answer_view.answer
        self.answer_finished.emit(answer)

    def _on_answer_failed(self, task: tasks.Task[None], exc: BaseException) -> None:
        if task is not self._task:  # stopped: the panel was given back already
            self.refresh_history()
            return
        self._task = None
        self._set_busy(False)
        managed = not self.session.settings.endpoint
        if isinstance(exc, Cancelled):
            self.answer_view.fail("Stopped. What arrived is kept in the history as incomplete.")
        elif isinstance(exc, DocumentTooLarge):
            first = self._question.page_range().first if self._question else 1
            pages = self.document.pages if self.document else []
            self.answer_view.fail(messages.too_large(exc, pages, first))
            self.refresh_budget()
            self.pages_edit.setFocus()
        elif isinstance(exc, ThreadTooLong | ServerUnavailable | ServerSetupError):
            # The core's words and remedy: a new thread; start the managed server (or,
            # for another server, the settings); a wrong setting in the settings.
            self.answer_view.fail(exc.in_app, remedy_for(exc, managed))
        elif isinstance(exc, LongdocError):
            self.answer_view.fail(str(exc))
            messages.error(exc)
        else:
            self.answer_view.fail(messages.describe(exc))
            messages.error(exc, self, serious=True)
        self.refresh_history()
        self.answer_finished.emit(exc)

    # --- threads (follow-up questions) --------------------------------------------------

    def _make_conversation(self) -> QWidget:
        """The thread's header (with New thread), its earlier turns, the current answer."""
        self.thread_label = QLabel()
        self.thread_label.setObjectName("threadLabel")
        self.thread_label.setTextFormat(Qt.TextFormat.PlainText)
        self.new_thread_button = QPushButton("New thread")
        self.new_thread_button.setObjectName("newThread")
        self.new_thread_button.setToolTip(
            "Start a new conversation: the next question is asked without the earlier ones (Ctrl+N)"
        )
        self.new_thread_button.clicked.connect(self._on_new_thread_button_clicked)
        self.thread_view = ThreadView()
        self.thread_view.citation_clicked.connect(self.citation_clicked)
        header = QHBoxLayout()
        header.addWidget(self.thread_label, 1)
        header.addWidget(self.new_thread_button)
        inner = QSplitter(Qt.Orientation.Vertical)
        inner.setObjectName("threadSplitter")
        inner.addWidget(self.thread_view)
        inner.addWidget(self.answer_view)
        inner.setStretchFactor(0, 2)
        inner.setStretchFactor(1, 3)
        inner.setChildrenCollapsible(False)
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(inner, 1)
        return box

    def _set_thread(self, thread: Thread | None) -> None:
        self.current_thread = thread
        turns = len(thread.turns) if thread is not None else 0
        if thread is None or not turns:
            self.thread_label.setText("New thread: the next question starts a conversation")
        else:
            self.thread_label.setText(
                f"Thread of {turns} question{'s' if turns != 1 else ''}: "
                "the next question follows up"
            )
        self.new_thread_button.setEnabled(thread is not None and not self.busy)

    def _show_thread(self, thread: Thread) -> None:
        """A loaded thread: earlier turns above, the latest one as the current answer."""
        doc = self.document
        self._set_thread(thread)
        if doc is None or not thread.turns:
            self.thread_view.show_turns([])
            return
        *earlier, latest = thread.turns
        self.thread_view.show_turns(earlier)
        if self.answer_view.answer is None or self.answer_view.answer.id != latest.id:
            self.answer_view.show_answer(latest, len(doc.pages))
            self.check_quotes(latest)
        whole = (thread.first_page, thread.last_page) == (1, len(doc.pages))
        self.pages_edit.setText("" if whole else f"{thread.first_page}-{thread.last_page}")
        self.refresh_budget()

    def load_last_thread(self) -> None:
        """Show the document's last thread, as it was left (off the UI thread)."""
        doc = self.document
        if doc is None:
            return
        store = self.session.store

        def loaded(thread: Thread | None) -> None:
            # Still this document, and nothing asked or started meanwhile?
            idle = not self.busy and not self._closed and self.current_thread is None
            if self.document is doc and idle and thread:
                self._show_thread(thread)

        tasks.run_call(
            lambda: store.last_thread(doc.sha256),
            receiver=self,
            success=loaded,
            name="last thread",
        )

    def _join_thread(self, thread_id: int, answer: StoredAnswer) -> None:
        """The answer became the thread's latest turn (as the core stored it): show it at
        once, so a question typed right after it follows up."""
        # The turns the question was asked after: the core put exactly these before it.
        asked = self._question.thread if self._question is not None else None
        self._show_thread(conversation.with_turn(asked, thread_id, answer))

    def open_answer(self, answer: StoredAnswer) -> None:
        """Show a stored answer about the open document and continue its thread (a search
        hit), as picking it from the history does."""
        if self.busy or self.document is None or answer.document_sha != self.document.sha256:
            return
        self.answer_view.show_answer(answer, len(self.document.pages))
        self.check_quotes(answer)
        self._open_thread_at(answer)

    def _open_thread_at(self, answer: StoredAnswer) -> None:
        """An answer picked from the history: its thread up to it, so the next question
        follows up on what is shown (after later turns, the core starts a branch)."""
        thread = self.current_thread
        if thread is not None and thread.turns and thread.turns[-1].id == answer.id:
            return
        found = self.session.store.thread_with_answer(answer.id)  # one indexed query
        if found is None:
            return  # not a turn (stopped or failed): the conversation stays as it was
        self._show_thread(conversation.up_to(found, answer.id))

    @Slot()
    def _on_new_thread_button_clicked(self) -> None:
        self.new_thread()

    def new_thread(self) -> None:
        """Start afresh: no earlier turns shown or sent; the next question opens a thread."""
        if self.busy or self.document is None:
            return
        self._set_thread(None)
        self.thread_view.show_turns([])
        self.answer_view.reset()
        self.history_list.clearSelection()
        self.question_edit.setFocus()
        self.refresh_budget()

    # --- quote checks -------------------------------------------------------------------

    def check_quotes(self, answer: StoredAnswer) -> None:
        """Check a complete answer's quotes against the pages; the line under the answer.

        Pure Python over the page texts: at once for a short document, in a worker for a
        long one (the first check normalises every page's text)."""
        doc = self.document
        if doc is None or answer.status != "complete" or not answer.answer:
            return
        if not self._page_chars:
            self._page_chars = sum(len(p.text) for p in doc.pages)

        def job() -> list[QuoteCheck]:
            # As the CLI does: the checks the core stored with the answer.
            return quote_marks.check_quotes(answer, doc)

        def show(checks: list[QuoteCheck]) -> None:
            # Still the same answer about the same document on screen?
            shown = self.answer_view.answer
            if self.document is doc and shown is not None and shown.id == answer.id:
                self.answer_view.show_quote_checks(checks, doc.pages)

        if answer.citations is not None or (  # stored with the answer: read at once
            self._page_chars <= QUOTE_CHECK_INLINE_CHARS
            and len(answer.answer) <= QUOTE_CHECK_INLINE_ANSWER_CHARS
        ):
            show(job())
        else:
            tasks.run_call(
                job,
                receiver=self,
                success=show,
                failure=lambda exc: log.warning("checking quotes failed: %s", exc),
                name="check quotes",
            )

    @Slot(object)
    def _on_answer_view_action_requested(self, remedy: Remedy) -> None:
        if remedy is Remedy.START_SERVER:
            self.server_start_requested.emit()
        elif remedy is Remedy.OPEN_SETTINGS:
            self.settings_requested.emit()
        elif remedy is Remedy.NEW_THREAD:
            self.new_thread()
        elif remedy is Remedy.CHOOSE_PAGES:
            self.pages_edit.setFocus()

    # --- copy and export ----------------------------------------------------------------

    def current_answer_markdown(self) -> str | None:
        """The shown answer as Markdown, or None."""
        answer = self.answer_view.answer
        doc = self.document
        if answer is None or doc is None:
            return None
        return answer_markdown(answer, doc.title, len(doc.pages))

    def history_as_markdown(self) -> str | None:
        """Every answer about the document as Markdown, or None."""
        doc = self.document
        if doc is None:
            return None
        return history_markdown(doc.title, doc.path, self.history, len(doc.pages))

    def copy_answer(self) -> None:
        """Put the shown answer on the clipboard as Markdown."""
        text = self.current_answer_markdown()
        if text is not None:
            QApplication.clipboard().setText(text)
            messages.info("Copied the answer as Markdown.")

    @Slot()
    def _on_answer_view_export_requested(self) -> None:
        menu = QMenu(self)
        menu.addAction("This answer…", lambda: self.export(whole_history=False))
        menu.addAction("All questions about this document…", lambda: self.export(True))
        menu.exec(
            self.answer_view.export_button.mapToGlobal(
                self.answer_view.export_button.rect().bottomLeft()
            )
        )

    def export(self, whole_history: bool) -> None:
        """Save the answer or the history as a Markdown file chosen by the user."""
        text = self.history_as_markdown() if whole_history else self.current_answer_markdown()
        if text is None or self.document is None:
            return
        stem = Path(self.document.path).stem or "longdoc"
        suggested = f"{stem}-{'questions' if whole_history else 'answer'}.md"
        path, _ = QFileDialog.getSaveFileName(
            self, "Export as Markdown", suggested, "Markdown (*.md)"
        )
        if not path:
            return
        try:
            write_report(Path(path), text)
        except LongdocError as exc:
            messages.error(f"Could not save the export: {exc}", self, serious=True)
            return
        messages.info(f"Saved {path}.")

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        """Stop a running answer and wait until the core has stored it (window closing)."""
        # No count may start or draw into the closed window (the debounce timer included).
        self._closed = True
        self._budget_timer.stop()
        if self._budget_task is not None:
            self._budget_task.detach()
            self._budget_dirty = False
        self.cancel_warm_up()
        running = [t for t in (self._task, *self._stopped) if t is not None and not t.done]
        for task in running:
            task.cancel()
            task.detach()
        self._task = None
        if running:
            tasks.wait_all(timeout_ms)
