"""Extracted text as the app shows it: a rule per page, speakers and times, cited lines selected.

Transcripts and Word documents carry an anchor before each line (``[00:41:12] Alice:``,
``[§ 4.2 ¶ 3]``); this view knows the line of every anchor, so a citation scrolls to the
moment or paragraph it names and selects that line, not just the top of its page. The
text stays plain (QPlainTextEdit): nothing in a document is interpreted as markup, and
styling (dim anchors, bold speakers and headings) is painted by a syntax highlighter.
"""

from __future__ import annotations

import bisect
import re

from PySide6.QtGui import QFont, QPalette, QSyntaxHighlighter, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from desktop.documents.anchors import ANCHORED_KINDS, anchor_key
from desktop.documents.docx import page_for_anchor
from desktop.documents.model import Document
from desktop.documents.transcript import parse_line, parse_time

NO_TEXT = "(no text on this page)"
_ANCHOR = re.compile(r"^\[([^\[\]\n]{1,60})\] ")
_HEADING = re.compile(r"^\[[^\]]+\] (#{1,6}) ")


def page_rule(label: str, number: int) -> str:
    """The line drawn above a page: its label, and its index when that differs."""
    return f"── Page {label} ──" if label == str(number) else f"── Page {label} (#{number}) ──"


class _Highlighter(QSyntaxHighlighter):
    """Dims anchors and page rules, makes speakers and Word headings bold."""

    def __init__(self, view: DocumentText) -> None:
        super().__init__(view.document())
        self.kind = ""
        dim = view.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.PlaceholderText)
        self.dim = QTextCharFormat()
        self.dim.setForeground(dim)
        self.bold = QTextCharFormat()
        self.bold.setFontWeight(QFont.Weight.Bold)

    def highlightBlock(self, text: str) -> None:
        """Format one line (Qt calls this lazily for the lines it lays out)."""
        if text.startswith("── Page "):
            self.setFormat(0, len(text), self.dim)
            return
        if self.kind not in ANCHORED_KINDS:
            return
        anchor = _ANCHOR.match(text)
        if not anchor:
            return
        self.setFormat(0, anchor.end(), self.dim)
        if self.kind == "transcript":
            line = parse_line(text)
            if line is not None and line.speaker:
                self.setFormat(anchor.end(), len(line.speaker) + 1, self.bold)
        elif _HEADING.match(text):
            self.setFormat(anchor.end(), len(text) - anchor.end(), self.bold)


class DocumentText(QPlainTextEdit):
    """Read-only text of a document; knows where each page and each line anchor starts."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setObjectName("documentText")
        self.kind = ""
        self.page_blocks: list[int] = []  # block number of each page's rule
        self._anchor_blocks: dict[str, int] = {}
        self._times: list[tuple[float, int]] = []  # transcript: (seconds, block), sorted
        self._document: Document | None = None
        self._highlighter = _Highlighter(self)

    def show_document(self, doc: Document) -> None:
        """Lay out ``doc``'s pages, each under a rule, and index the anchors of its lines."""
        self._document = doc
        self.kind = doc.kind
        self._highlighter.kind = doc.kind
        self.page_blocks = []
        self._anchor_blocks = {}
        self._times = []
        anchored = doc.kind in ANCHORED_KINDS
        lines: list[str] = []
        for page in doc.pages:
            self.page_blocks.append(len(lines))
            lines.append(page_rule(page.label, page.number))
            body = page.text.rstrip("\n") or NO_TEXT
            for line in body.split("\n"):
                if anchored:
                    self._index_line(line, len(lines))
                lines.append(line)
            lines.append("")
        self._times.sort()
        self.setPlainText("\n".join(lines))

    def _index_line(self, line: str, block: int) -> None:
        match = _ANCHOR.match(line)
        if not match:
            return
        self._anchor_blocks.setdefault(anchor_key(match.group(1)), block)
        if self.kind == "transcript":
            seconds = parse_time(match.group(1))
            if seconds is not None:
                self._times.append((seconds, block))

    def clear_document(self) -> None:
        """Nothing shown."""
        self._document = None
        self.kind = ""
        self._highlighter.kind = ""
        self.page_blocks = []
        self._anchor_blocks = {}
        self._times = []
        self.clear()

    def block_for_anchor(self, anchor: str) -> int | None:
        """The line a cited anchor names: the exact line, the moment's line, or its page."""
        if self._document is None or self.kind not in ANCHORED_KINDS:
            return None
        block = self._anchor_blocks.get(anchor_key(anchor))
        if block is not None:
            return block
        if self.kind == "transcript":
            seconds = parse_time(anchor.strip())
            if seconds is None or not self._times:
                return None
            # The last line said at or before that moment (the first line for earlier ones).
            at = bisect.bisect_right(self._times, (seconds, float("inf"))) - 1
            return self._times[max(at, 0)][1]
        number = page_for_anchor(self._document.pages, anchor)
        return self.page_blocks[number - 1] if number is not None else None

    def page_of_block(self, block: int) -> int:
        """The 1-based page a line belongs to."""
        return max(bisect.bisect_right(self.page_blocks, block), 1)

    def select_block(self, block: int) -> None:
        """Select a whole line and scroll it into the middle of the view."""
        found = self.document().findBlockByNumber(block)
        cursor = QTextCursor(found)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)
        self.centerCursor()

    def selected_text(self) -> str:
        """The selected text, with Qt's paragraph separators as newlines."""
        return self.textCursor().selectedText().replace("\u2029", "\n")
