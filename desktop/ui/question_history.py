"""The questions asked about the open document, newest first (the "history" list)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.ui import tasks
from desktop.ui.session import Session


class QuestionHistory(QWidget):
    """The title and the list; ``picked`` gives the answer the user chose."""

    picked = Signal(object)  # StoredAnswer

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.answers: list[StoredAnswer] = []
        self.list = QListWidget()
        self.list.setObjectName("history")
        self.list.setWordWrap(True)
        self.list.currentItemChanged.connect(self._on_list_current_item_changed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel("Questions about this document")
        layout.addWidget(self.title)
        layout.addWidget(self.list)

    def clear(self, doc: Document | None) -> None:
        """Empty, titled for ``doc`` (or asking for a document)."""
        self.answers = []
        self.list.clear()
        self.title.setText(
            "Questions about this document" if doc else "Open a document to ask about it"
        )

    def refresh(self, doc: Document, still_open: Callable[[], bool], select_id: int | None) -> None:
        """Reload the questions asked about ``doc`` (off the UI thread)."""
        store = self.session.store

        def loaded(answers: list[StoredAnswer]) -> None:
            if still_open():
                self._fill(answers, select_id)

        tasks.run_call(
            lambda: store.answers_for(doc.sha256),
            receiver=self,
            success=loaded,
            name="history",
        )

    def _fill(self, answers: list[StoredAnswer], select_id: int | None) -> None:
        self.answers = answers
        self.list.blockSignals(True)
        self.list.clear()
        for answer in reversed(answers):  # newest first
            text = answer.question.strip().replace("\n", " ")
            if answer.status != "complete":
                text = f"{text}  ({answer.status})"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, answer.id)
            item.setToolTip(answer.question)
            self.list.addItem(item)
            if answer.id == select_id:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    @Slot(QListWidgetItem, QListWidgetItem)
    def _on_list_current_item_changed(
        self, current: QListWidgetItem | None, _previous: QListWidgetItem | None
    ) -> None:
        if current is None:
            return
        answer_id = current.data(Qt.ItemDataRole.UserRole)
        answer = next((a for a in self.answers if a.id == answer_id), None)
        if answer is not None:
            self.picked.emit(answer)
