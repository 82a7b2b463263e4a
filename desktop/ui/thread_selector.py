"""The conversation a question continues: its header (with New thread) and earlier turns."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from desktop.answering.threads import Thread
from desktop.answers import StoredAnswer
from desktop.ui.thread_view import ThreadView


class ThreadSelector(QWidget):
    """Which thread the next question continues (``current``; None: it starts one), above
    the current answer (``answer_view``, placed under the earlier turns)."""

    new_thread_requested = Signal()
    citation_clicked = Signal(object, object)  # label, number (in an earlier turn)

    def __init__(self, answer_view: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # The conversation a question continues; None: the next question starts a thread.
        self.current: Thread | None = None
        self.label = QLabel()
        self.label.setObjectName("threadLabel")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.new_button = QPushButton("New thread")
        self.new_button.setObjectName("newThread")
        self.new_button.setToolTip(
            "Start a new conversation: the next question is asked without the earlier ones (Ctrl+N)"
        )
        self.new_button.clicked.connect(self.new_thread_requested)
        self.view = ThreadView()
        self.view.citation_clicked.connect(self.citation_clicked)
        header = QHBoxLayout()
        header.addWidget(self.label, 1)
        header.addWidget(self.new_button)
        inner = QSplitter(Qt.Orientation.Vertical)
        inner.setObjectName("threadSplitter")
        inner.addWidget(self.view)
        inner.addWidget(answer_view)
        inner.setStretchFactor(0, 2)
        inner.setStretchFactor(1, 3)
        inner.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(inner, 1)

    def set_thread(self, thread: Thread | None, busy: bool) -> None:
        """Continue ``thread`` from now on (None: the next question starts one)."""
        self.current = thread
        turns = len(thread.turns) if thread is not None else 0
        if thread is None or not turns:
            self.label.setText("New thread: the next question starts a conversation")
        else:
            self.label.setText(
                f"Thread of {turns} question{'s' if turns != 1 else ''}: "
                "the next question follows up"
            )
        self.new_button.setEnabled(thread is not None and not busy)

    def show_turns(self, turns: list[StoredAnswer]) -> None:
        """The earlier turns, above the current answer."""
        self.view.show_turns(turns)
