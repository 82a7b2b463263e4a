"""Where the question is typed: the box, the pages row, Think, Stop and Ask."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QWidget

from desktop.ui.wrapping_row import WrappingRow, unsqueezable

QUESTION_LINES = 2  # the box's height; a longer question scrolls inside it
ASK_TIP = "Ask (Enter, or Ctrl+Enter anywhere)"


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


class AskRow(WrappingRow):
    """The pages box (with its suggestion and hint), then Think, Stop and Ask: one row
    where they fit, two where the panel is narrow."""

    def __init__(
        self, pages: list[QWidget], hint: QWidget, thinking: bool, parent: QWidget | None = None
    ) -> None:
        self.think_box = QCheckBox("Think")
        self.think_box.setToolTip("Let the model reason before answering (slower, often better)")
        self.think_box.setChecked(thinking)
        self.ask_button = QPushButton("Ask")
        self.ask_button.setDefault(True)
        self.ask_button.setToolTip(ASK_TIP)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the answer (Esc); what arrived is kept")
        self.stop_button.setEnabled(False)
        self.pages_label = QLabel("Pages:")
        pages_row = QHBoxLayout()
        pages_row.addWidget(self.pages_label)
        for widget in pages:
            pages_row.addWidget(widget)
        pages_row.addWidget(hint, 1)
        buttons_row = QHBoxLayout()
        buttons_row.addStretch(1)
        for widget in (self.think_box, self.stop_button, self.ask_button):
            buttons_row.addWidget(unsqueezable(widget))
        super().__init__(pages_row, buttons_row, parent=parent)


def question_edit() -> QuestionEdit:
    """The question box: a few lines high (by the platform's font), Tab leaves it."""
    edit = QuestionEdit()
    edit.setObjectName("question")
    edit.setPlaceholderText(
        "Ask about the whole document… (Enter asks, Shift+Enter for a new line)"
    )
    edit.setTabChangesFocus(True)
    metrics = edit.fontMetrics()
    margins = edit.contentsMargins()
    frame = 2 * edit.frameWidth() + margins.top() + margins.bottom()
    document = 2 * edit.document().documentMargin()
    edit.setFixedHeight(round(metrics.lineSpacing() * QUESTION_LINES + frame + document))
    return edit
