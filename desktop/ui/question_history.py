"""The questions asked about the open document, newest first: a compact selector."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPaintEvent, QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QListWidget,
    QListWidgetItem,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)

from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.ui import tasks
from desktop.ui.session import Session


class QuestionHistory(QComboBox):
    """One line ("3 questions about this document ▾") that drops down the list
    (``list``, objectName ``history``); ``picked`` gives the answer the user chose."""

    picked = Signal(object)  # StoredAnswer

    def __init__(
        self,
        session: Session,
        document: Callable[[], Document | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("questionSelector")
        self.session = session
        self._document = document  # the open one
        self._cleared = 0
        self.answers: list[StoredAnswer] = []
        self._doc: Document | None = None
        self.list = QListWidget()
        self.list.setObjectName("history")
        self.list.setWordWrap(True)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setModel(self.list.model())
        self.setView(self.list)
        # The closed selector shows a line, however long the question: it elides.
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(12)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Questions about this document")
        self.activated.connect(self._on_activated)
        # A row made current in code (or by a click on the list): the same as choosing it.
        self.list.currentItemChanged.connect(self._on_list_current_item_changed)
        self._update_placeholder()

    def reset(self, doc: Document | None) -> None:
        """Empty, titled for ``doc`` (or asking for a document)."""
        self._doc = doc
        self.answers = []
        self.list.clear()
        self._update_placeholder()

    def clearSelection(self) -> None:
        """No question chosen: the selector shows its count again."""
        self._cleared += 1  # a reload asked for before this selects nothing
        self.list.blockSignals(True)
        self.list.clearSelection()
        self.list.setCurrentRow(-1)
        self.list.blockSignals(False)
        self.setCurrentIndex(-1)
        self._update_placeholder()

    def setEnabled(self, enabled: bool) -> None:
        """The selector and its list (the panel disables both while an answer runs)."""
        super().setEnabled(enabled)
        self.list.setEnabled(enabled)

    def _update_placeholder(self) -> None:
        count = len(self.answers)
        if self._doc is None:
            text = "Open a document to ask about it"
        elif count == 0:
            text = "No questions about this document yet"
        else:
            text = f"{count} question{'s' if count != 1 else ''} about this document"
        self.setPlaceholderText(text)
        chosen = self.list.item(self.currentIndex())
        # The chosen question in full (the selector elides it); else what the list holds.
        self.setToolTip(chosen.toolTip() if chosen else f"{text}: choose one to see its answer")

    def refresh(self, select_id: int | None = None) -> None:
        """Reload the questions asked about the open document (off the UI thread), then
        choose ``select_id``'s."""
        doc = self._document()
        if doc is None:
            return
        store = self.session.store
        cleared = self._cleared

        def loaded(answers: list[StoredAnswer]) -> None:
            now = self._document()
            if now is not None and now.sha256 == doc.sha256:
                # A question asked meanwhile cleared the choice: it stays cleared.
                self._fill(answers, select_id if cleared == self._cleared else None)

        tasks.run_call(
            lambda: store.answers_for(doc.sha256),
            receiver=self,
            success=loaded,
            name="history",
        )

    def _fill(self, answers: list[StoredAnswer], select_id: int | None) -> None:
        self.answers = answers
        self.list.blockSignals(True)
        self.blockSignals(True)
        self.list.clear()
        selected = -1
        for answer in reversed(answers):  # newest first
            text = answer.question.strip().replace("\n", " ")
            if answer.status != "complete":
                text = f"{text}  ({answer.status})"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, answer.id)
            item.setToolTip(answer.question)
            self.list.addItem(item)
            if answer.id == select_id:
                selected = self.list.count() - 1
        self.list.setCurrentRow(selected)
        self.setCurrentIndex(selected)
        self.blockSignals(False)
        self.list.blockSignals(False)
        self._update_placeholder()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Folded, the list is the selector's size (it drops down to its rows when
        opened): nothing measures a list of 480 px that is not shown."""
        super().resizeEvent(event)
        if not self.list.isVisible():
            self.list.resize(event.size())

    def paintEvent(self, event: QPaintEvent) -> None:
        """The chosen question (or the count) elided with "…" where the panel is narrow:
        Qt's own combo box cuts the words off mid-letter."""
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        if self.currentIndex() < 0:
            option.palette.setBrush(QPalette.ColorRole.ButtonText, option.palette.placeholderText())
            option.currentText = self.placeholderText()
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox,
            option,
            QStyle.SubControl.SC_ComboBoxEditField,
            self,
        )
        option.currentText = self.fontMetrics().elidedText(
            option.currentText, Qt.TextElideMode.ElideRight, field.width()
        )
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def _pick_row(self, row: int) -> None:
        item = self.list.item(row)
        if item is None:
            return
        answer_id = item.data(Qt.ItemDataRole.UserRole)
        answer = next((a for a in self.answers if a.id == answer_id), None)
        if answer is not None:
            self._update_placeholder()
            self.picked.emit(answer)

    @Slot(int)
    def _on_activated(self, row: int) -> None:
        self._pick_row(row)

    @Slot(QListWidgetItem, QListWidgetItem)
    def _on_list_current_item_changed(
        self, current: QListWidgetItem | None, _previous: QListWidgetItem | None
    ) -> None:
        # While the list drops down, the row under the mouse is current: only a choice
        # (``activated``) counts then.
        if current is None or self.list.isVisible():
            return
        row = self.list.row(current)
        if row == self.currentIndex():
            return  # the selector syncing its list (as the popup opens), not a choice
        self.blockSignals(True)
        self.setCurrentIndex(row)
        self.blockSignals(False)
        self._pick_row(row)
