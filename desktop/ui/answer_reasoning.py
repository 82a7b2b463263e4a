"""The model's reasoning under an answer: a fold ("▸ Reasoning (1,234 characters)")."""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

REASONING_LINES = 7  # the open fold's height: enough to follow, the answer keeps the room


class ReasoningFold(QWidget):
    """The toggle and the text; live while the model thinks, folded once it answers."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.setAutoRaise(True)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setMaximumHeight(self.text.fontMetrics().lineSpacing() * REASONING_LINES)
        self.text.setObjectName("reasoning")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toggle)
        layout.addWidget(self.text)
        self.chars = 0
        self.live = False  # the model is thinking now
        self.clear()

    def clear(self) -> None:
        """No reasoning: everything hidden."""
        self.text.clear()
        self.chars = 0
        self.live = False
        self.toggle.hide()
        self.text.hide()
        self.hide()

    def set_text(self, text: str) -> None:
        """A stored answer's reasoning, folded."""
        self.live = False
        self.text.setPlainText(text)
        self.chars = len(text)
        self.show()
        self.toggle.show()
        self.toggle.setChecked(False)
        self.update_label()

    def append(self, text: str) -> None:
        """Live thinking (plain text; appended, never re-rendered), unfolded."""
        self.live = True
        if not self.toggle.isVisible():
            self.show()
            self.toggle.show()
            self.toggle.setChecked(True)
            self.text.setVisible(True)
        cursor = self.text.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        self.chars += len(text)
        bar = self.text.verticalScrollBar()
        bar.setValue(bar.maximum())
        self.update_label()

    def fold(self) -> None:
        """The answer begins: the thinking folds away so the answer has the room."""
        self.live = False
        if self.toggle.isChecked():
            self.toggle.setChecked(False)
        self.update_label()

    def flip(self) -> None:
        """Show or fold it (Ctrl+T); nothing when there is none."""
        if self.toggle.isVisible():
            self.toggle.toggle()

    @Slot(bool)
    def _on_toggle_toggled(self, checked: bool) -> None:
        self.text.setVisible(checked)
        self.update_label()

    def update_label(self) -> None:
        """The toggle's words: "Thinking…" while live, then "Reasoning"."""
        arrow = "▾" if self.toggle.isChecked() else "▸"
        words = "Thinking…" if self.live else "Reasoning"
        self.toggle.setText(f"{arrow} {words} ({self.chars:,} characters)")
