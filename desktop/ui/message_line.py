"""The status bar's message line and the message history behind it.

Every note, warning and error posted on the message bus shows in the status line (notes
fade, warnings and errors stay) and is kept in a history the user can open; the button
beside the line counts the warnings and errors not seen yet.
"""

from __future__ import annotations

import time
from datetime import datetime

from PySide6.QtCore import QObject, Qt, QTimer, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QPlainTextEdit,
    QStatusBar,
    QToolButton,
    QWidget,
)

from desktop.ui import messages
from desktop.ui.help import lay_out_closable

INFO_TIMEOUT_MS = 6_000
MESSAGE_LOG_SIZE = 500


class MessagesDialog(QDialog):
    """The message history, newest last, as plain text (never interpreted as markup)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Longdoc messages")
        self.setObjectName("messagesDialog")
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setObjectName("messageLog")
        lay_out_closable(self, self.view, self.close, (640, 360))

    def show_log(self, log: list[tuple[float, messages.Message]]) -> None:
        """Show these messages."""
        lines = [
            f"{datetime.fromtimestamp(at).strftime('%H:%M:%S')}  "
            f"{message.level.value.upper():7}  {message.text}"
            for at, message in log
        ]
        self.view.setPlainText("\n".join(lines) if lines else "No messages yet.")
        bar = self.view.verticalScrollBar()
        bar.setValue(bar.maximum())

    def text(self) -> str:
        """What the history shows (tests)."""
        return self.view.toPlainText()


class MessageLine(QObject):
    """The last message in the status bar, and the history of all of them."""

    def __init__(self, bar: QStatusBar, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setObjectName("messageLabel")
        bar.addWidget(self.label, 1)  # the button goes after the window's own widgets
        # Every message stays readable here (the status line shows only the last one).
        self.log: list[tuple[float, messages.Message]] = []
        self._unseen = 0  # warnings and errors since the history was last opened
        self.button = QToolButton()
        self.button.setObjectName("messagesButton")
        self.button.setAutoRaise(True)
        self.button.setToolTip("Message history (Ctrl+Shift+M)")
        self.button.clicked.connect(self.show_history)
        self.dialog: MessagesDialog | None = None
        self._update_button()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.label.clear)

    @Slot(object)
    def post(self, message: messages.Message) -> None:
        """Show a message and keep it in the history."""
        self.log.append((time.time(), message))
        del self.log[:-MESSAGE_LOG_SIZE]
        if message.level is not messages.Level.INFO:
            self._unseen += 1
        self._update_button()
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.show_log(self.log)
        # One line in the status bar (a list of start-up problems would make it grow to
        # several lines and push the window's layout); the whole text is the tooltip and
        # stays in the history.
        first, _, rest = message.text.partition("\n")
        self.label.setText(first if not rest else f"{first.rstrip(':')} (see the history)")
        self.label.setToolTip(message.text if rest else "")
        role = (
            QPalette.ColorRole.WindowText
            if message.level is messages.Level.INFO
            else QPalette.ColorRole.Link
        )
        self.label.setForegroundRole(role)
        font = self.label.font()
        font.setBold(message.level is messages.Level.ERROR)
        self.label.setFont(font)
        # Errors stay until the next message; notes fade.
        if message.level is messages.Level.INFO:
            self._timer.start(INFO_TIMEOUT_MS)
        else:
            self._timer.stop()

    def _update_button(self) -> None:
        unseen = self._unseen
        self.button.setText(f"Messages ({unseen} new)" if unseen else "Messages")

    def show_history(self) -> MessagesDialog:
        """The message history: every note, warning and error of this session."""
        if self.dialog is None:
            self.dialog = MessagesDialog(self._window)
        self.dialog.show_log(self.log)
        self.dialog.show()
        self.dialog.raise_()
        self._unseen = 0
        self._update_button()
        return self.dialog
