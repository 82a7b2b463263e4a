"""Ask about these N documents: a set (A, B, C... in library order) in one question.

Its own window beside the main one, so the single-document ask panel stays as it is: the
"Asking about" line names the documents with their letters, the budget bar shows each
document's share of the context, the answer streams in, and a citation opens the cited
document in the main window at the cited page with the quote highlighted
(``citation_opened``). Counting, asking and checking run off the UI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QRectF, Qt, Signal, Slot
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.budget import plan_budget
from desktop.answering.prompt import document_share
from desktop.answering.service import Question
from desktop.answering.sets import DocumentSet, build_set
from desktop.answers import CitationCheck, StoredAnswer
from desktop.documents.model import Document
from desktop.session import Session
from desktop.ui import messages, tasks
from desktop.ui.set_answer import CitedAnswer

# One colour per letter (cycled), light enough for black text on it.
SHARE_COLORS = ["#90caf9", "#a5d6a7", "#ffcc80", "#ce93d8", "#80cbc4", "#ef9a9a"]


class ShareBar(QWidget):
    """The context as a bar: each document's share in its colour, the rest free."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("setShareBar")
        self.setMinimumHeight(14)
        self.shares: list[tuple[str, int]] = []
        self.total = 0

    def set_shares(self, shares: Sequence[tuple[str, int]], total: int) -> None:
        """Each letter's tokens, against ``total`` (the prompt limit)."""
        self.shares, self.total = list(shares), total
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        painter.setPen(self.palette().mid().color())
        painter.drawRect(rect)
        if self.total <= 0:
            return
        x = rect.left()
        for i, (letter, tokens) in enumerate(self.shares):
            # At least a few pixels each, so a small document's share still shows.
            width = max(4.0, rect.width() * min(tokens / self.total, 1.0))
            box = QRectF(x, rect.top(), width, rect.height())
            painter.fillRect(box, QColor(SHARE_COLORS[i % len(SHARE_COLORS)]))
            if width > 12:
                painter.setPen(Qt.GlobalColor.black)
                painter.drawText(box, Qt.AlignmentFlag.AlignCenter, letter)
            x += width
        painter.end()


def asking_about(docset: DocumentSet) -> str:
    """The "Asking about" line: every document with its letter."""
    named = "; ".join(f"{m.letter} {m.document.title or m.document.path}" for m in docset.members)
    return f"Asking about {len(docset)} documents: {named}"


class SetAskWindow(QWidget):
    """Questions about a set of documents."""

    # sha256 of the cited document, page number (0: none), quote ("" if none), label
    citation_opened = Signal(str, int, str, str)

    def __init__(
        self, session: Session, documents: Sequence[Document], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("setAskWindow")
        self.session = session
        self.docset = build_set(list(documents))
        self.setWindowTitle(f"Ask about these {len(self.docset)} documents — Longdoc")
        self._task: tasks.Task[Any] | None = None

        self.asking_label = QLabel(asking_about(self.docset))
        self.asking_label.setObjectName("askingAboutLabel")
        self.asking_label.setWordWrap(True)
        self.asking_label.setTextFormat(Qt.TextFormat.PlainText)
        self.share_bar = ShareBar()
        self.budget_label = QLabel("Counting…")
        self.budget_label.setObjectName("setBudgetLabel")
        self.budget_label.setWordWrap(True)
        self.question_edit = QPlainTextEdit()
        self.question_edit.setObjectName("setQuestionEdit")
        self.question_edit.setPlaceholderText("Ask about all of these documents at once")
        self.question_edit.setMaximumHeight(80)
        self.ask_button = QPushButton("Ask")
        self.ask_button.setObjectName("setAskButton")
        self.ask_button.clicked.connect(self.ask)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop)
        self.cited_answer = CitedAnswer(self.open_citation, "setAnswerView", "setQuotesLabel")
        self.answer_view, self.quotes_label = self.cited_answer.browser, self.cited_answer.label

        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.ask_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.asking_label)
        layout.addWidget(self.share_bar)
        layout.addWidget(self.budget_label)
        layout.addWidget(self.answer_view, 1)
        layout.addWidget(self.quotes_label)
        layout.addWidget(self.question_edit)
        layout.addLayout(buttons)
        self.resize(620, 640)
        self.count()

    # --- the budget ------------------------------------------------------------------

    def count(self) -> None:
        """Count the set against the server's context, off the UI thread."""
        session, docset = self.session, self.docset
        thinking = session.settings.thinking

        def work() -> tuple[list[tuple[str, int]], int, int, bool]:
            answerer = session.answerer()
            limits = answerer.limits()
            _, prompt, _ = answerer.set_prompt(docset, "", thinking)
            budget = plan_budget(prompt, limits, session.settings.answer_reserve)
            shares = [(m.letter, document_share(docset, m.letter)) for m in docset.members]
            return shares, prompt, budget.prompt_limit, budget.fits

        def failed(exc: BaseException) -> None:
            self.budget_label.setText(f"Not counted against the server: {exc}")

        tasks.run_call(
            work, receiver=self, success=self._show_budget, failure=failed, name="set budget"
        )

    def _show_budget(self, counted: tuple[list[tuple[str, int]], int, int, bool]) -> None:
        shares, prompt, limit, fits = counted
        self.share_bar.set_shares(shares, limit)
        each = ", ".join(f"{letter} {tokens:,}" for letter, tokens in shares)
        verdict = "fits" if fits else f"does not fit: {prompt - limit:,} tokens too many"
        self.budget_label.setText(
            f"{each} tokens; {prompt:,} of {limit:,} with the instructions: {verdict}"
        )

    # --- asking ------------------------------------------------------------------------

    @Slot()
    def ask(self) -> None:
        """Ask the question about the whole set."""
        text = self.question_edit.toPlainText().strip()
        if not text or self._task is not None:
            return
        session = self.session
        question = Question(
            self.docset.members[0].document,
            text,
            thinking=session.settings.thinking,
            docset=self.docset,
        )
        self.cited_answer.restart()
        self.answer_view.clear()
        self.quotes_label.clear()
        self.ask_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self._task = tasks.run_stream(
            lambda cancel: session.answerer().ask(question, cancel),
            receiver=self,
            events=self.cited_answer.show_events,
            success=self._on_done,
            failure=self._on_failed,
            name="ask a set",
        )

    def show_answer(self, answer: StoredAnswer) -> None:
        """A stored answer about this set (opened from a search hit), its quotes linked."""
        if self._task is not None:
            return
        self.question_edit.setPlainText(answer.question)
        self.cited_answer.show_stored(answer)

    @Slot()
    def stop(self) -> None:
        """Stop the answer at once (what arrived is kept, as incomplete)."""
        if self._task is not None:
            self._task.cancel()

    def _on_done(self, _: None) -> None:
        self._finish()

    def _on_failed(self, exc: BaseException) -> None:
        self._finish()
        self.quotes_label.setText(f"Not answered: {exc}")
        messages.warning(str(exc))

    def _finish(self) -> None:
        self._task = None
        self.ask_button.setEnabled(True)
        self.stop_button.setEnabled(False)

    @property
    def checks(self) -> list[CitationCheck]:
        """The answer's checked citations (none before it is stored)."""
        return self.cited_answer.checks

    def open_citation(self, check: CitationCheck) -> None:
        """Open the cited document at the cited page, the quote highlighted if it is there."""
        letter = check.document
        if check.found_in and check.status.value == "other_document":
            letter = check.found_in[0][0]  # where the quote really is
        member = self.docset.member(letter or "")
        if member is None:
            messages.warning("The answer cites a document that is not in this set.")
            return
        pages = check.found_on or check.pages
        if check.found_in and letter != check.document:
            pages = check.found_in[0][1]
        number = pages[0] if pages else 0
        self.citation_opened.emit(member.document.sha256, number, check.quote or "", check.label)
