"""Compare two versions: both side by side, the list of changes, the model's explanation.

The comparison (desktop/compare/) runs off the UI thread, and so does the explanation's
request (one chat request with both versions whole as a set, A = old, B = new); the two
document views open their PDFs off the UI thread too, so two 400-page versions keep the
window responsive. Clicking a change shows it in both views, its changed words
highlighted (the inserted words in B, the deleted ones in A); the explanation streams in
beside the list, its quotes checked against their version and linked to them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.service import Question
from desktop.answers import CitationCheck
from desktop.compare.align import Change, ChangeKind, Comparison, compare_documents
from desktop.compare.explain import explain_question, versions
from desktop.compare.report import where
from desktop.documents.model import Document
from desktop.session import Session
from desktop.ui import tasks
from desktop.ui.document_view import DocumentView
from desktop.ui.set_answer import CitedAnswer

MARKS = {
    ChangeKind.ADDED: "+",
    ChangeKind.REMOVED: "−",
    ChangeKind.CHANGED: "~",
    ChangeKind.MOVED: "↷",
}


def short(title: str, limit: int = 60) -> str:
    """A title that fits above a view."""
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


def change_line(n: int, change: Change) -> str:
    """A change as the list shows it: number, kind, both anchors and its words."""
    if change.kind is ChangeKind.CHANGED:
        words = "; ".join(
            [*(f"−{w}" for w in change.deleted[:2]), *(f"+{w}" for w in change.inserted[:2])]
        )
    else:
        words = short(change.new_text or change.old_text, 70)  # the tooltip has it whole
    return f"{n}. {MARKS[change.kind]} {change.kind.value}  {where(change)}\n    {words}"


class CompareWindow(QWidget):
    """Two versions of a document and what changed between them."""

    def __init__(
        self,
        session: Session,
        old: Document,
        new: Document,
        parent: QWidget | None = None,
        *,
        explain: bool = True,
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("compareWindow")
        self.session = session
        self.old, self.new = old, new
        self.docset = versions(old, new)
        self.comparison: Comparison | None = None
        self._explain = explain
        self._task: tasks.Task[Any] | None = None
        self.setWindowTitle(f"Compare: {short(old.title)} → {short(new.title)} — Longdoc")

        self.old_view = DocumentView()
        self.old_view.setObjectName("compareOldView")
        self.new_view = DocumentView()
        self.new_view.setObjectName("compareNewView")
        self.old_label = QLabel(f"A (old): {short(old.title)}")
        self.new_label = QLabel(f"B (new): {short(new.title)}")
        self.status_label = QLabel("Comparing…")
        self.status_label.setObjectName("compareStatusLabel")
        self.change_list = QListWidget()
        self.change_list.setObjectName("changeList")
        # Each change wrapped at the list's width, not a sideways scroll bar that hid the
        # ends of the longer ones (the words that changed).
        self.change_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.change_list.setResizeMode(QListView.ResizeMode.Adjust)
        self.change_list.setWordWrap(True)
        self.change_list.currentRowChanged.connect(self._on_change_list_current_row_changed)
        self.explanation = CitedAnswer(self.open_citation, "explanationView", "compareQuotesLabel")
        self.explanation_view, self.quotes_label = self.explanation.browser, self.explanation.label
        self.quotes_label.setWordWrap(True)
        self.explain_button = QPushButton("Explain the changes")
        self.explain_button.setObjectName("explainButton")
        self.explain_button.setEnabled(False)
        self.explain_button.clicked.connect(self.explain)

        def column(label: QLabel, view: QWidget) -> QWidget:
            box = QWidget()
            layout = QVBoxLayout(box)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.addWidget(label)
            layout.addWidget(view, 1)
            return box

        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.status_label)
        side_layout.addWidget(self.change_list, 2)
        side_layout.addWidget(QLabel("Explanation"))
        side_layout.addWidget(self.explanation_view, 3)
        side_layout.addWidget(self.quotes_label)
        side_layout.addWidget(self.explain_button)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(column(self.old_label, self.old_view))
        self.splitter.addWidget(column(self.new_label, self.new_view))
        self.splitter.addWidget(side)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setStretchFactor(2, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(self.splitter)
        self.resize(1280, 760)
        self.splitter.setSizes([470, 470, 340])

        self.old_view.show_document(old)
        self.new_view.show_document(new)
        tasks.run_call(
            lambda: compare_documents(old, new),
            receiver=self,
            success=self._show_changes,
            name="compare",
        )

    def _show_changes(self, comparison: Comparison) -> None:
        self.comparison = comparison
        count = len(comparison.changes)
        self.status_label.setText(
            f"{count} changes" if count else "No changes: the two versions have the same text."
        )
        self.change_list.setUpdatesEnabled(False)
        for n, change in enumerate(comparison.changes, 1):
            item = QListWidgetItem(change_line(n, change))
            item.setToolTip(change.new_text or change.old_text)
            self.change_list.addItem(item)
        self.change_list.setUpdatesEnabled(True)
        self.explain_button.setEnabled(True)
        if self._explain:
            self.explain()

    @Slot(int)
    def _on_change_list_current_row_changed(self, row: int) -> None:
        if self.comparison is None or not 0 <= row < len(self.comparison.changes):
            return
        self.show_change(self.comparison.changes[row])

    def show_change(self, change: Change) -> None:
        """Both views at the change, its changed words highlighted where they stand."""
        if change.old:
            words = change.deleted[0] if change.deleted else change.old[0].text
            if not self.old_view.show_quote(change.old[0].page, words):
                self.old_view.go_to_page(change.old[0].page)
        if change.new:
            words = change.inserted[0] if change.inserted else change.new[0].text
            if not self.new_view.show_quote(change.new[0].page, words):
                self.new_view.go_to_page(change.new[0].page)

    # --- the explanation -------------------------------------------------------------------

    @Slot()
    def explain(self) -> None:
        """Ask the model to explain the changes (one request, both versions whole)."""
        if self.comparison is None or self._task is not None:
            return
        session = self.session
        question = Question(
            self.old,
            explain_question(self.comparison),
            thinking=session.settings.thinking,
            docset=self.docset,
        )
        question.quotes_in_question = True  # the change list quotes both versions
        self.explanation.restart()
        self.explanation_view.setPlainText("Asking the model…")
        self.explain_button.setEnabled(False)
        self._task = tasks.run_stream(
            lambda cancel: session.answerer().ask(question, cancel),
            receiver=self,
            events=self.explanation.show_events,
            success=lambda _: self._finish(),
            failure=self._on_failed,
            name="explain changes",
        )

    def _on_failed(self, exc: BaseException) -> None:
        self._finish()
        self.explanation_view.setPlainText(f"No explanation: {exc}")

    def _finish(self) -> None:
        self._task = None
        self.explain_button.setEnabled(True)

    @property
    def checks(self) -> list[CitationCheck]:
        """The explanation's checked citations (none before it is stored)."""
        return self.explanation.checks

    def open_citation(self, check: CitationCheck) -> None:
        """Show a cited passage in its version's view (A: left, B: right)."""
        view = self.old_view if check.document == "A" else self.new_view
        pages = check.found_on or check.pages
        if not pages:
            return
        if not (check.quote and view.show_quote(pages[0], check.quote)):
            view.go_to_page(pages[0])

    def closeEvent(self, event: Any) -> None:
        if self._task is not None:
            self._task.cancel()
        super().closeEvent(event)
