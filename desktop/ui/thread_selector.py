"""The conversation a question continues: the questions selector, the thread's header
(with New thread), and its earlier turns above the current answer."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.threads import Thread
from desktop.answers import StoredAnswer
from desktop.ui.thread_view import ThreadView
from desktop.ui.wrapping_row import keep_lines

# The earlier turns' share of the room once the current answer is shown: the answer is
# the centre of the column (issue 21: at least 45% of the panel and 15 lines in view).
EARLIER_SHARE = 0.1
# While a follow-up waits for its first words, the previous answer has the room to read.
WAITING_SHARE = 0.6
EARLIER_MIN_LINES = 2
ANSWER_MIN_LINES = 8


class ThreadSelector(QWidget):
    """Which thread the next question continues (``current``; None: it starts one), above
    the current answer (``answer_view``, placed under the earlier turns in ``splitter``)."""

    new_thread_requested = Signal()
    citation_clicked = Signal(object, object)  # label, number (in an earlier turn)

    def __init__(
        self, questions: QWidget, answer_view: QWidget, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        # The conversation a question continues; None: the next question starts a thread.
        self.current: Thread | None = None
        self.label = QLabel()
        self.label.setObjectName("threadLabel")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.new_button = QPushButton("New thread")
        self.new_button.setObjectName("newThread")
        self.new_button.setToolTip(
            "Start a new conversation: the next question is asked without the earlier ones (Ctrl+N)"
        )
        self.new_button.clicked.connect(self.new_thread_requested)
        self.view = ThreadView()
        self.view.citation_clicked.connect(self.citation_clicked)
        header = QHBoxLayout()
        header.addWidget(questions, 1)
        header.addWidget(self.new_button)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("askSplitter")
        self.splitter.addWidget(self.view)
        # Where the window is too short for the answer's lines (its minimum size), they
        # scroll as one instead of being drawn over each other.
        self.answer_area = QScrollArea()
        self.answer_area.setObjectName("answerArea")
        self.answer_area.setWidget(answer_view)
        self.answer_area.setWidgetResizable(True)
        self.answer_area.setFrameShape(QFrame.Shape.NoFrame)
        self.answer_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.splitter.addWidget(self.answer_area)
        # However short the window, a few lines of each stay in view.
        lines = self.view.fontMetrics().lineSpacing()
        self.view.setMinimumHeight(lines * EARLIER_MIN_LINES + 2 * self.view.frameWidth())
        self.answer_area.setMinimumHeight(lines * ANSWER_MIN_LINES)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 5)
        self.splitter.setChildrenCollapsible(False)
        self.box = QVBoxLayout(self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.addLayout(header)
        self.box.addWidget(self.label)
        self.box.addWidget(self.splitter, 1)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """The thread's line may wrap: never shorter than it and the splitter need."""
        super().resizeEvent(event)
        lines = self.label.heightForWidth(event.size().width())
        if lines > 0 and lines != self.label.minimumHeight():
            self.label.setMinimumHeight(lines)
        keep_lines(self, self.box, event.size().width())

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
        # Its lines are its minimum (resizeEvent): the panel lays this part out by
        # minimums, not by the preferred sizes a wrapping label (QLabel sets this flag
        # again with each text) would pull in from the splitter.
        policy = self.label.sizePolicy()
        policy.setHeightForWidth(False)
        self.label.setSizePolicy(policy)
        self.label.setMinimumHeight(self.label.heightForWidth(self.width()))
        self.new_button.setEnabled(thread is not None and not busy)

    def show_turns(self, turns: list[StoredAnswer]) -> None:
        """The earlier turns, above the current answer."""
        self.view.show_turns(turns)

    def room_for_earlier(self, share: float) -> None:
        """Give the earlier turns ``share`` of the splitter (no more than they fill)."""
        total = sum(self.splitter.sizes())
        if not self.view.isVisibleTo(self) or total <= 0:
            return
        needed = round(self.view.document().size().height()) + 2 * self.view.frameWidth()
        earlier = max(1, min(round(total * share), needed))
        self.splitter.setSizes([earlier, total - earlier])

    def room_for_answer(self) -> None:
        """The current answer is shown: it takes the room, the earlier turns a strip."""
        self.room_for_earlier(EARLIER_SHARE)

    def room_while_waiting(self) -> None:
        """A follow-up was asked: the previous answer (the latest turn) has room to read."""
        self.room_for_earlier(WAITING_SHARE)
