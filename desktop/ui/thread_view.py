"""The earlier turns of a thread, shown as a conversation above the current answer."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QUrl, Signal, Slot
from PySide6.QtWidgets import QTextBrowser, QWidget

from desktop.answers import StoredAnswer
from desktop.ui.markdown_stream import parse_citation_href
from desktop.ui.markdown_writer import MarkdownWriter


def conversation_markdown(turns: Sequence[StoredAnswer]) -> str:
    """Each earlier question (quoted, bold) followed by its answer, turns ruled apart."""
    parts: list[str] = []
    for turn in turns:
        question = " ".join(turn.question.split())
        parts.append(f"> **{question}**\n\n{turn.answer.strip()}")
    return "\n\n---\n\n".join(parts) + "\n"


class ThreadView(QTextBrowser):
    """Read-only conversation; its only links are page citations, as in the answer."""

    citation_clicked = Signal(object, object)  # label: str | None, number: int | None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("thread")
        # Never let Qt follow a link: only citations act (see AnswerView).
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._on_anchor_clicked)
        # Drawn at once (frame_s=0): the whole text is known, nothing streams.
        self.writer = MarkdownWriter(self.document(), self.palette(), frame_s=0)
        self.turns: list[StoredAnswer] = []
        self.hide()

    def show_turns(self, turns: Sequence[StoredAnswer]) -> None:
        """Show these earlier turns (hidden when there are none), scrolled to the latest."""
        self.turns = list(turns)
        if not self.turns:
            self.writer.clear()
            self.hide()
            return
        self.writer.set_text(conversation_markdown(self.turns))
        self.show()
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    @Slot(QUrl)
    def _on_anchor_clicked(self, url: QUrl) -> None:
        label, number = parse_citation_href(url.toString())
        if label is not None or number is not None:
            self.citation_clicked.emit(label, number)
