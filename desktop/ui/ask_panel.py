"""Ask about the open document: a view of small parts (the questions selector and the
thread, the answer, the budget and the question form) and the run of an answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QCheckBox, QVBoxLayout, QWidget

from desktop.answering import conversation as rules
from desktop.answering.events import Sent, Stored
from desktop.answering.format import scope as page_scope
from desktop.answering.service import Question
from desktop.answering.threads import Thread
from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.errors import Cancelled, OtherPages, Remedy
from desktop.ui import messages, tasks
from desktop.ui.answer_export import AnswerExport
from desktop.ui.answer_failure import STOPPED, show_failure
from desktop.ui.answer_run import AnswerRun
from desktop.ui.answer_stream import show_batch
from desktop.ui.answer_view import AnswerView
from desktop.ui.ask_form import AskForm
from desktop.ui.ask_form import QuestionEdit as QuestionEdit
from desktop.ui.pages_budget import PagesBudget
from desktop.ui.question_history import QuestionHistory
from desktop.ui.quote_checks import QUOTE_CHECK_INLINE_CHARS as QUOTE_CHECK_INLINE_CHARS
from desktop.ui.quote_checks import QuoteChecks
from desktop.ui.session import BudgetView, Session
from desktop.ui.thread_flow import ThreadFlow
from desktop.ui.thread_selector import ThreadSelector
from desktop.ui.warm_up import WarmUp
from desktop.ui.wrapping_row import keep_lines


class AskPanel(QWidget):
    """The right-hand side of the window."""

    answer_started = Signal()
    answer_finished = Signal(object)  # StoredAnswer, or the exception that ended it
    citation_clicked = Signal(object, object)  # label, number
    quote_clicked = Signal(str, int)  # a checked quote and the page it is on
    server_start_requested = Signal()
    settings_requested = Signal()
    # The remedy "Check this workstation…" (Help ▸ Check this workstation) was chosen.
    workstation_check_requested = Signal()
    busy_changed = Signal(bool)

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.document: Document | None = None
        self._closed = False  # the window is closing: no more background counts
        self.run = AnswerRun(session, parent=self)
        self.run.succeeded.connect(self._on_answer_done)
        self.run.failed.connect(self._on_answer_failed)
        self.run.stale_ended.connect(self.refresh_history)
        self._unanswerable: str | None = None  # why the open document cannot be asked about
        # Warm-up: the server prefills the open document while nobody asks anything.
        self.warm_up = WarmUp(
            session,
            document=lambda: self.document,
            askable=lambda: self._unanswerable is None and not self.busy,
            pages=lambda: self.budget.pages(),
            parent=self,
        )
        self.tokens_received = 0  # answer and reasoning deltas in the current answer

        self.questions = QuestionHistory(session, lambda: self.document)
        self.questions.picked.connect(self._on_questions_picked)
        self.history_list = self.questions.list

        self.answer_view = AnswerView()
        self.answer_view.citation_clicked.connect(self.citation_clicked)
        self.answer_view.quote_clicked.connect(self.quote_clicked)
        self.answer_view.ask_again_requested.connect(self._on_answer_view_ask_again_requested)
        self.answer_view.copy_requested.connect(self.copy_answer)
        self.answer_view.export_requested.connect(
            lambda: self.exporter.menu(self.answer_view.export_button)
        )
        self.answer_view.action_requested.connect(self._on_answer_view_action_requested)
        self.quote_checks = QuoteChecks(lambda: self.document, self.answer_view, parent=self)
        self.exporter: AnswerExport = AnswerExport(
            self, lambda: self.document, lambda: self.answer_view.answer, lambda: self.history
        )

        self.conversation = ThreadSelector(self.questions, self.answer_view)
        self.conversation.new_thread_requested.connect(self.new_thread)
        self.conversation.citation_clicked.connect(self.citation_clicked)
        self.answer_view.answer_began.connect(self.conversation.room_for_answer)
        self.thread_label = self.conversation.label
        self.new_thread_button = self.conversation.new_button
        self.thread_view = self.conversation.view
        self.splitter = self.conversation.splitter  # the window keeps its sizes
        self.threads = ThreadFlow(
            session,
            self.conversation,
            self.answer_view,
            document=lambda: self.document,
            idle=lambda: not self.busy and not self._closed,
            shown=self.check_quotes,
            set_pages=self._set_pages_text,
            parent=self,
        )

        self.warm_label = self.warm_up.label

        self.budget: PagesBudget = PagesBudget(
            session,
            document=lambda: self.document,
            thread=lambda: self.current_thread,
            question=lambda: self.question_edit.toPlainText(),
            thinking=lambda: self.think_box.isChecked(),
            countable=lambda: not self._closed and self._unanswerable is None,
            parent=self,
        )
        self.budget_bar = self.budget.budget_bar
        self.target_label = self.budget.target_label
        self.pages_edit = self.budget.pages_edit
        self.pages_hint = self.budget.pages_hint
        self.suggest_button = self.budget.suggest_button
        self.form = AskForm(
            [self.budget_bar, self.target_label, self.warm_label],
            [self.pages_edit, self.suggest_button],
            self.pages_hint,
            session.settings.thinking,
        )
        self.question_edit: QuestionEdit = self.form.question_edit
        self.budget.suggestion_used.connect(self.question_edit.setFocus)

        self.think_box: QCheckBox = self.form.row.think_box
        self.ask_button = self.form.row.ask_button
        self.stop_button = self.form.row.stop_button
        self.stop_button.clicked.connect(self.stop)
        self.form.submitted.connect(self._on_form_submitted)
        self.question_edit.textChanged.connect(self.budget.schedule)
        self.think_box.toggled.connect(self.budget.schedule)

        # Help ▸ Check this workstation: the doctor dialog the window registered.
        self.workstation_check_requested.connect(messages.check_workstation)
        self.box = QVBoxLayout(self)
        self.box.setContentsMargins(6, 6, 6, 6)
        self.box.addWidget(self.conversation, 1)
        self.box.addWidget(self.form)

        self.set_document(None)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Never shorter than its parts' wrapped lines need (see ``keep_lines``)."""
        super().resizeEvent(event)
        keep_lines(self, self.box, event.size().width())

    # --- document -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """An answer is on its way."""
        return self.run.busy

    @property
    def _task(self) -> tasks.Task[None] | None:
        return self.run.task

    def set_document(self, doc: Document | None) -> None:
        """Ask about ``doc`` from now on (stops an answer about another document)."""
        if doc is not None and self.document is not None and doc.sha256 == self.document.sha256:
            return
        if self.busy:
            self.stop()
            messages.info("Stopped the answer: another document was opened.")
        self.cancel_warm_up()  # superseded by the document opened now
        self.document = doc
        self.quote_checks.reset()
        self.threads.set(None)
        if self.thread_view.turns:  # the earlier turns of the document shown before go
            self.conversation.show_turns([])
        self.answer_view.set_pages(doc.pages if doc is not None else [])
        self.questions.reset(doc)
        self.answer_view.reset()
        self.pages_edit.clear()
        self._unanswerable = self.session.unanswerable(doc) if doc is not None else None
        self.pages_edit.setEnabled(doc is not None)
        self._update_ask_button()
        self.budget.update_target()
        if doc is None:
            self.budget_bar.show_unknown("")
            return
        self.refresh_history()
        self.threads.load_last()  # as it was left
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
        self.form.set_askable(self.document is not None, self._unanswerable, self.busy)

    @property
    def history(self) -> list[StoredAnswer]:
        """The answers about the open document, oldest first."""
        return self.questions.answers

    def refresh_history(self, select_id: int | None = None) -> None:
        """Reload the questions asked about the document (off the UI thread)."""
        self.questions.refresh(select_id)

    def _on_questions_picked(self, answer: StoredAnswer) -> None:
        self.open_answer(answer)

    # --- budget and pages (desktop/ui/pages_budget.py) -----------------------------------

    @property
    def _budget_task(self) -> tasks.Task[BudgetView] | None:
        return self.budget.task

    def refresh_budget(self) -> None:
        """Recount the prompt against the server's context (off the UI thread)."""
        self.budget.refresh()

    # --- asking ---------------------------------------------------------------------------

    @Slot()
    def _on_form_submitted(self) -> None:
        self.ask()

    @Slot()
    def _on_answer_view_ask_again_requested(self) -> None:
        answer = self.answer_view.answer
        if answer is not None and self.document is not None:
            again = rules.ask_again(answer, self.current_thread, len(self.document.pages))
            self.form.fill(again.question, again.thinking)
            pages = again.pages
            self.pages_edit.setText("" if pages is None else f"{pages.first}-{pages.last}")
            self.threads.clear()  # the question shows the turns it is asked after
            self.threads.set(again.thread)
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
        text = self.form.question()
        if text is None:
            return False
        try:
            pages = self.budget.pages()
        except ValueError as exc:
            self.pages_hint.setText(str(exc))
            self.pages_edit.setFocus()
            return False
        thread = self.current_thread
        try:
            if thread is not None:
                rules.follow_up_pages(thread, pages, len(doc.pages))
        except OtherPages as exc:
            self.answer_view.fail(exc.in_app, exc.remedy)
            return False
        question = Question(doc, text, pages, self.think_box.isChecked(), use_cache, thread=thread)
        self.threads.asking(thread)
        scope = page_scope(pages.first, pages.last, doc.pages) if pages is not None else ""
        self.cancel_warm_up()  # the question prefills the document itself
        self.tokens_received = 0
        # A follow-up shows the previous answer once: as the thread's latest turn above.
        self.answer_view.start(text, scope, keep_previous=not (thread and thread.turns))
        self.question_edit.clear()  # asked: the box is ready for the next question
        self.questions.clearSelection()
        # Looked up at each batch: the UI benchmark wraps the handler.
        self.run.start(question, lambda batch: self._on_answer_events(batch))
        self._set_busy(True)
        self.answer_started.emit()
        return True

    def stop(self) -> None:
        """Stop the answer and give the panel back at once; the core stores what arrived
        as incomplete behind it (see ``AnswerRun.stop``)."""
        if not self.run.stop():
            return
        self._set_busy(False)
        self.answer_view.fail(STOPPED)
        self.answer_finished.emit(Cancelled())

    def _set_busy(self, busy: bool) -> None:
        self._update_ask_button()
        self.questions.setEnabled(not busy)
        self.new_thread_button.setEnabled(not busy and self.current_thread is not None)
        self.busy_changed.emit(busy)

    def _on_answer_events(self, batch: list[Any]) -> None:
        """A batch of events from the worker: text deltas are joined, rendered once."""
        self.tokens_received += show_batch(batch, self.answer_view, self._on_answer_event)

    def _on_answer_event(self, event: Any) -> None:
        # Usage and Finished: the stored answer carries the same figures.
        doc = self.document
        if isinstance(event, Sent):
            self.answer_view.on_sent(event, self.warm_up.prefill_guess(event, self.history))
        elif isinstance(event, Stored):
            self.warm_up.answered(event.answer, event.from_cache)
            self.answer_view.finish(event, len(doc.pages) if doc else 0)
            self.check_quotes(event.answer)
            self.session.learn([event.answer])
            self.refresh_history(select_id=event.answer.id)
            if event.thread_id is not None:
                # The turns the question was asked after: the core put exactly these before.
                asked = self.run.question.thread if self.run.question is not None else None
                self.threads.join(asked, event.thread_id, event.answer)

    @Slot()
    def _on_answer_done(self) -> None:
        self._set_busy(False)
        self.answer_finished.emit(self.answer_view.answer)

    @Slot(object)
    def _on_answer_failed(self, exc: BaseException) -> None:
        self._set_busy(False)
        question = self.run.question
        first = question.page_range().first if question else 1
        pages = self.document.pages if self.document else []
        managed = not self.session.settings.endpoint
        if show_failure(self.answer_view, exc, managed, pages, first):
            self.refresh_budget()  # too large: the budget says by how much, pick pages
            self.pages_edit.setFocus()
        self.refresh_history()
        self.answer_finished.emit(exc)

    # --- threads (follow-up questions) --------------------------------------------------

    @property
    def current_thread(self) -> Thread | None:
        """The conversation a question continues; None: the next question starts a thread."""
        return self.threads.current

    def open_answer(self, answer: StoredAnswer) -> None:
        """Show a stored answer about the open document and continue its thread (a search
        hit), as picking it from the history does."""
        if self.busy or self.document is None or answer.document_sha != self.document.sha256:
            return
        self.answer_view.show_answer(answer, len(self.document.pages))
        self.check_quotes(answer)
        self.threads.open_at(answer)

    def new_thread(self) -> None:
        """Start afresh: no earlier turns shown or sent; the next question opens a thread."""
        if self.busy or self.document is None:
            return
        self.threads.clear()
        self.answer_view.reset()
        self.questions.clearSelection()
        self.question_edit.setFocus()
        self.refresh_budget()

    def _set_pages_text(self, text: str) -> None:
        self.pages_edit.setText(text)
        self.refresh_budget()

    # --- quote checks -------------------------------------------------------------------

    def check_quotes(self, answer: StoredAnswer) -> None:
        """Check a complete answer's quotes against the pages; the line under the answer."""
        self.quote_checks.check(answer)

    @Slot(object)
    def _on_answer_view_action_requested(self, remedy: Remedy) -> None:
        act = {
            Remedy.START_SERVER: self.server_start_requested.emit,
            Remedy.OPEN_SETTINGS: self.settings_requested.emit,
            Remedy.NEW_THREAD: self.new_thread,
            Remedy.CHOOSE_PAGES: self.pages_edit.setFocus,
            Remedy.CHECK_WORKSTATION: self.workstation_check_requested.emit,
        }
        if (action := act.get(remedy)) is not None:
            action()

    # --- copy and export ----------------------------------------------------------------

    def current_answer_markdown(self) -> str | None:
        """The shown answer as Markdown, or None."""
        return self.exporter.answer_markdown()

    def history_as_markdown(self) -> str | None:
        """Every answer about the document as Markdown, or None."""
        return self.exporter.history_markdown()

    def copy_answer(self) -> None:
        """Put the shown answer on the clipboard as Markdown."""
        self.exporter.copy()

    def export(self, whole_history: bool) -> None:
        """Save the answer or the history as a Markdown file chosen by the user."""
        self.exporter.export(whole_history)

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        """Stop a running answer and wait until the core has stored it (window closing)."""
        # No count may start or draw into the closed window (the debounce timer included).
        self._closed = True
        self.budget.stop()
        self.cancel_warm_up()
        self.run.shutdown(timeout_ms)
