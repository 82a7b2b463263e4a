"""Where the question is typed: the box, the pages row, Think, Stop and Ask."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.ui import messages
from desktop.ui.wrapping_row import WrappingRow, keep_lines, unsqueezable

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


class AskForm(QWidget):
    """The lines ``above`` it (budget, target, warm-up), the question box, the pages row,
    Think, Stop and Ask (``submitted``: Enter in the box or the Ask button)."""

    submitted = Signal()

    def __init__(
        self,
        above: list[QWidget],
        pages: list[QWidget],
        hint: QWidget,
        thinking: bool,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.question_edit = question_edit()
        self.question_edit.submitted.connect(self.submitted)
        self.row = AskRow(pages, hint, thinking)
        self.row.ask_button.clicked.connect(self.submitted)
        self.box = QVBoxLayout(self)
        self.box.setContentsMargins(0, 0, 0, 0)
        for widget in (*above, self.question_edit, self.row):
            self.box.addWidget(widget)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Never shorter than its wrapped lines need at this width: the window's minimum
        height follows (Qt's own minimum counts a wrapping label as one line)."""
        super().resizeEvent(event)
        keep_lines(self, self.box, event.size().width())

    def set_askable(self, open_: bool, reason: str | None, busy: bool) -> None:
        """Typing needs an open document; Ask also one that can be asked about (else
        ``reason`` is in its tooltip) and no answer running."""
        self.question_edit.setEnabled(open_)
        self.row.think_box.setEnabled(open_)
        self.row.ask_button.setEnabled(open_ and reason is None and not busy)
        self.row.ask_button.setToolTip(f"Cannot ask: {reason}" if reason else ASK_TIP)
        self.row.stop_button.setEnabled(busy)

    def fill(self, question: str, thinking: bool) -> None:
        """The box and Think as they were for a question asked before (Ask again)."""
        self.question_edit.setPlainText(question)
        self.row.think_box.setChecked(thinking)

    def question(self) -> str | None:
        """The question typed, or None (the box focused, the user told to type one)."""
        text = self.question_edit.toPlainText().strip()
        if not text:
            self.question_edit.setFocus()
            messages.info("Type a question first.")
            return None
        return text
