"""Under an answer: its figures (grey), its quote checks, and Ask again, Copy, Export;
above it, the badge of a saved answer (no server call)."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QPalette, QTextDocument
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from desktop.answering.format import ago
from desktop.ui.wrapping_row import WrappingRow, unsqueezable

SAVED_BADGE_NAME = "Saved answer, no server call"


class SavedBadge(QLabel):
    """A saved answer shown again from Longdoc's own answer cache: nothing went to the
    server. A pill in the selection colours, above the answer and away from the grey
    figures line (whose "from the server's cache" is the server's prompt cache)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("savedAnswerBadge")
        self.setAccessibleName(SAVED_BADGE_NAME)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Preferred)
        # Sizes in em: they follow the platform's font.
        self.setStyleSheet(
            "#savedAnswerBadge { background: palette(highlight); color: palette(highlighted-text);"
            " border-radius: 0.4em; padding: 0.1em 0.6em; }"
        )
        font = self.font()
        font.setBold(True)
        self.setFont(font)
        self.hide()

    def sizeHint(self) -> QSize:
        """One line where the panel has the room (a wrapping label's own hint is narrower
        than its words); it wraps only where it must."""
        hint = super().sizeHint()
        margins = self.contentsMargins()
        metrics = self.fontMetrics()
        one_line = metrics.horizontalAdvance(self.text()) + metrics.averageCharWidth()
        return QSize(one_line + margins.left() + margins.right(), hint.height())

    def show_for(self, created_at: float) -> None:
        """Shown for an answer saved at ``created_at``."""
        self.setText(f"{SAVED_BADGE_NAME} · asked {ago(created_at)}")
        self.setAccessibleDescription(
            f"From cache: this answer was saved when it was asked {ago(created_at)}; "
            "nothing was sent to the server"
        )
        self.setToolTip(
            "From Longdoc's answer cache: the same question about the same pages was "
            f"answered {ago(created_at)}, so nothing was sent to the server. "
            "Ask again sends it."
        )
        self.show()


class AnswerFooter(QWidget):
    """The figures line, the quote checks line and the answer's buttons."""

    ask_again_requested = Signal()
    copy_requested = Signal()
    export_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.figures_label = QLabel()
        self.figures_label.setTextFormat(Qt.TextFormat.PlainText)
        self.figures_label.setWordWrap(True)
        self.figures_label.setObjectName("answerFigures")
        self.figures_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        # Rich text made only by quote_summary (every quote escaped); its only links are
        # pages, handled by the answer view, never opened by Qt.
        self.quotes_label = QLabel()
        self.quotes_label.setObjectName("quoteChecks")
        self.quotes_label.setTextFormat(Qt.TextFormat.RichText)
        self.quotes_label.setWordWrap(True)
        self.quotes_label.setOpenExternalLinks(False)
        self.quotes_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self.ask_again_button = QPushButton("Ask again")
        self.ask_again_button.setToolTip(
            "Send the question to the server instead of using the cache"
        )
        self.ask_again_button.clicked.connect(self.ask_again_requested)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the answer as Markdown")
        self.copy_button.clicked.connect(self.copy_requested)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Save the answer or the whole history as Markdown")
        self.export_button.clicked.connect(self.export_requested)
        quotes = QHBoxLayout()
        quotes.addWidget(self.quotes_label, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for button in self.buttons():
            buttons.addWidget(unsqueezable(button), 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.figures_label)
        self.row = WrappingRow(quotes, buttons, self._quotes_width)
        layout.addWidget(self.row)

    def _quotes_width(self) -> int:
        """The quote checks on one line (their links stay on the first line)."""
        plain = QTextDocument()
        plain.setHtml(self.quotes_label.text())
        return self.quotes_label.fontMetrics().horizontalAdvance(plain.toPlainText()) + 4

    def buttons(self) -> tuple[QPushButton, ...]:
        """Ask again, Copy, Export."""
        return (self.ask_again_button, self.copy_button, self.export_button)

    def clear(self) -> None:
        """No answer: no figures, no buttons."""
        self.figures_label.clear()
        for button in self.buttons():
            button.hide()

    def show_figures(self, figures: str) -> None:
        """An answer is shown: its figures and the buttons."""
        self.figures_label.setText(figures)
        for button in self.buttons():
            button.show()
