"""Copying and exporting the shown answer, or every answer about the document, as Markdown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication, QFileDialog, QMenu, QPushButton, QWidget

from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.errors import LongdocError
from desktop.reports import write_report
from desktop.ui import messages
from desktop.ui.export import answer_markdown, history_markdown


class AnswerExport(QObject):
    """The Copy and Export buttons' work, for the panel ``widget`` (dialogs' parent)."""

    def __init__(
        self,
        widget: QWidget,
        document: Callable[[], Document | None],
        shown: Callable[[], StoredAnswer | None],
        history: Callable[[], list[StoredAnswer]],
    ) -> None:
        super().__init__(widget)
        self._widget = widget
        self._document = document
        self._shown = shown
        self._history = history

    def answer_markdown(self) -> str | None:
        """The shown answer as Markdown, or None."""
        answer = self._shown()
        doc = self._document()
        if answer is None or doc is None:
            return None
        return answer_markdown(answer, doc.title, len(doc.pages))

    def history_markdown(self) -> str | None:
        """Every answer about the document as Markdown, or None."""
        doc = self._document()
        if doc is None:
            return None
        return history_markdown(doc.title, doc.path, self._history(), len(doc.pages))

    def copy(self) -> None:
        """Put the shown answer on the clipboard as Markdown."""
        text = self.answer_markdown()
        if text is not None:
            QApplication.clipboard().setText(text)
            messages.info("Copied the answer as Markdown.")

    def menu(self, button: QPushButton) -> None:
        """This answer or all of them, below the Export button."""
        menu = QMenu(self._widget)
        menu.addAction("This answer…", lambda: self.export(whole_history=False))
        menu.addAction("All questions about this document…", lambda: self.export(True))
        menu.exec(button.mapToGlobal(button.rect().bottomLeft()))

    def export(self, whole_history: bool) -> None:
        """Save the answer or the history as a Markdown file chosen by the user."""
        text = self.history_markdown() if whole_history else self.answer_markdown()
        doc = self._document()
        if text is None or doc is None:
            return
        stem = Path(doc.path).stem or "longdoc"
        suggested = f"{stem}-{'questions' if whole_history else 'answer'}.md"
        path, _ = QFileDialog.getSaveFileName(
            self._widget, "Export as Markdown", suggested, "Markdown (*.md)"
        )
        if not path:
            return
        try:
            write_report(Path(path), text)
        except LongdocError as exc:
            messages.error(f"Could not save the export: {exc}", self._widget, serious=True)
            return
        messages.info(f"Saved {path}.")
