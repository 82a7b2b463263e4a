"""The context budget bar: document + instructions/question + answer reserve vs the context."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from desktop.answering.budget import explain_limit, suggest_pages
from desktop.answering.pages import describe
from desktop.documents.model import Page
from desktop.ui.session import BudgetView

# The one colour not taken from the palette: "over budget" must read as an alarm in light
# and dark themes alike, and no palette role means that. Mid-saturation red works on both.
OVER_COLOR = QColor(214, 69, 65)


class _Bar(QWidget):
    """The painted bar itself."""

    def __init__(self) -> None:
        super().__init__()
        self.segments: list[tuple[float, QColor]] = []
        self.over = False
        self.setMinimumHeight(10)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(200, 10)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        palette = self.palette()
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Base))
        painter.drawRoundedRect(rect, 3, 3)
        x = rect.left()
        painter.setPen(Qt.PenStyle.NoPen)
        for fraction, color in self.segments:
            width = rect.width() * max(0.0, min(fraction, 1.0))
            if width <= 0:
                continue
            painter.setBrush(color)
            painter.drawRect(QRectF(x, rect.top(), min(width, rect.right() - x), rect.height()))
            x += width
            if x >= rect.right():
                break
        painter.end()


class BudgetBar(QWidget):
    """Shows how the prompt fits the server's context; says by how much it does not."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = _Bar()
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setObjectName("budgetLabel")
        self.view: BudgetView | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self.show_unknown("")

    @property
    def over_budget(self) -> bool:
        """True when the last figures did not fit."""
        return self.view is not None and not self.view.budget.fits

    def show_unknown(self, why: str) -> None:
        """No figures (no document, or the server's context length is unknown)."""
        self.view = None
        self.bar.segments = []
        self.bar.hide()  # an empty outline would look like a broken widget
        self.label.setText(why)
        self.label.setVisible(bool(why))

    def show_budget(self, view: BudgetView, pages: Sequence[Page] = ()) -> None:
        """Draw the figures; ``pages`` (the document's) name the range by printed labels."""
        self.view = view
        b = view.budget
        context = max(b.context_length, 1)
        palette = self.palette()
        doc = view.document_tokens
        rest = b.prompt_tokens - doc
        highlight = palette.color(QPalette.ColorRole.Highlight)
        prompt_color = palette.color(QPalette.ColorRole.Link)
        reserve_color = palette.color(QPalette.ColorRole.Mid)
        if b.fits:
            reserve = b.max_tokens
            self.bar.segments = [
                (doc / context, highlight),
                (rest / context, prompt_color),
                (reserve / context, reserve_color),
            ]
            free = b.context_length - b.prompt_tokens - reserve
            turns = f"earlier turns {view.thread_tokens:,} + " if view.thread_tokens else ""
            text = (
                f"Document {doc:,} + {turns}instructions and question "
                f"{rest - view.thread_tokens:,} + answer reserve "
                f"{reserve:,} = {b.prompt_tokens + reserve:,} of {b.context_length:,} tokens"
                f" ({free:,} free)."
            )
            if b.warnings:
                text += " " + " ".join(b.warnings)
        elif view.thread_tokens and b.prompt_tokens - view.thread_tokens <= b.prompt_limit:
            # Only the conversation is too long: a page range would not help, a new thread does.
            self.bar.segments = [(1.0, OVER_COLOR)]
            text = (
                f"This thread no longer fits: with its earlier turns ({view.thread_tokens:,} "
                f"tokens) the prompt needs {b.prompt_tokens:,} tokens, but {explain_limit(b)}. "
                "Start a new thread (Ctrl+N)."
            )
        else:
            self.bar.segments = [(1.0, OVER_COLOR)]
            # Printed labels, as the viewer and the citations name pages.
            scope = (
                describe(pages, view.pages)
                if len(pages) == view.page_count
                else view.pages.describe(view.page_count)
            )
            text = (
                f"Over budget by {b.overflow:,} tokens: {scope} need {b.prompt_tokens:,} "
                f"prompt tokens, but {explain_limit(b)}. "
                + (
                    "Choose a page range."
                    if suggest_pages(view.pages, b) is not None
                    else "One page cannot be split: the server needs a longer context."
                )
            )
        self.bar.show()
        self.bar.update()
        self.label.setText(text)
        self.label.setVisible(True)
