"""Streamed Markdown into a QTextDocument, safely and incrementally.

``MarkdownWriter`` renders streamed Markdown into a QTextDocument incrementally: finished
blocks are written once; only the unfinished block is replaced on each update, and a long
unfinished paragraph is committed in clean pieces so an update costs about the size of
the new text, never the size of the whole answer. Updates are drawn at most once per frame
(``FRAME_S``): text arriving sooner waits for a single-shot timer, and ``finish`` draws
whatever is left at once. Text goes in through ``QTextCursor``
with character formats, never through an HTML parser, so nothing in an answer can become
markup or a link; the only anchors are page citations (``longdoc-page:``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtGui import (
    QFont,
    QFontDatabase,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFrameFormat,
    QTextLength,
    QTextTableFormat,
)
from PySide6.QtWidgets import QScrollBar

from desktop.ui.markdown_stream import (
    PAGE_SCHEME,
    Block,
    Span,
    block_kind,
    close_open,
    inline,
    paragraph_source,
    parse_block,
    safe_cut,
    split_first,
)

# Re-render at most this many characters of an unfinished paragraph before committing.
COMMIT_AT = 240
# A streamed paragraph longer than this continues in a new block (see _write_paragraph).
SPLIT_AT = 1_500
# A paragraph with unbalanced markup (a stray "*") is cut at a space anyway past this.
FORCE_AT = 2_000
# Streamed text is drawn at most once per this many seconds (a 60 Hz frame).
FRAME_S = 0.016

# Answer typography: line height in percent of the font's, space after a paragraph (px).
LINE_HEIGHT_PCT = 145
PARAGRAPH_SPACING = 10
PROPORTIONAL = QTextBlockFormat.LineHeightTypes.ProportionalHeight.value

_LEADING_BLANK_LINES = re.compile(r"(?:[ \t]*\n)+")
_HEADING_SCALE = {1: 1.45, 2: 1.3, 3: 1.15, 4: 1.05, 5: 1.0, 6: 1.0}


class MarkdownWriter:
    """Streams Markdown into a QTextDocument; see the module docstring."""

    def __init__(
        self,
        document: QTextDocument,
        palette: QPalette,
        follow: QScrollBar | None = None,
        frame_s: float = FRAME_S,
    ) -> None:
        self.document = document
        # No undo history for a read-only view: it would keep every replaced tail.
        document.setUndoRedoEnabled(False)
        self.palette = palette
        # Kept at the bottom after each draw if it was at the bottom before (the view's).
        self.follow = follow
        # 0 draws on every append (tests of the incremental writing itself).
        self.frame_s = frame_s
        # When the last draw happened; the bench replays a stream on its recorded clock.
        self.clock: Callable[[], float] = time.monotonic
        self._formats: dict[Span, QTextCharFormat] = {}
        self.tail_renders = 0  # how often the unfinished block was rendered (bench, tests)
        self.draws = 0  # how often streamed text was drawn (bench, tests)
        self._last_draw = float("-inf")
        self._frame_timer = QTimer()
        self._frame_timer.setSingleShot(True)
        self._frame_timer.timeout.connect(self._on_frame_timer_timeout)
        self.clear()

    def clear(self) -> None:
        """Empty the document and the state."""
        self._frame_timer.stop()
        self.document.clear()
        self._pending = ""  # text after the last finished block (no leading blank lines)
        self._finished_end = 0  # document position where finished content ends
        self._committed = 0  # characters of the unfinished paragraph written for good
        self._inline_pos: int | None = None  # document position after those characters
        self._scan_from = 0  # in _pending: where lines have not been checked yet
        self._text: list[str] = []
        self._length = 0
        self._fresh = True  # the document's first block is still unused
        # The unfinished block as last written, so a longer version only adds the new end.
        self._tail_signature: tuple[str, int, str] | None = None
        self._tail_spans: list[Span] = []

    @property
    def text(self) -> str:
        """All Markdown received so far."""
        return "".join(self._text)

    @property
    def has_text(self) -> bool:
        """Anything received yet (cheap, unlike ``text``)."""
        return self._length > 0

    @property
    def waiting(self) -> bool:
        """Text has arrived that is not drawn yet (the next frame draws it)."""
        return self._frame_timer.isActive()

    def append(self, delta: str) -> None:
        """Add streamed text; write what is finished, re-render only the unfinished block.

        Drawn now if the last draw is a frame ago, else by the frame timer: a stream
        sending a batch every few milliseconds costs one draw per frame, not per batch.
        """
        if not delta:
            return
        self._text.append(delta)
        self._length += len(delta)
        self._pending += delta
        wait = self._last_draw + self.frame_s - self.clock()
        if wait <= 0:
            self._draw(final=False)
        elif not self._frame_timer.isActive():
            self._frame_timer.start(max(1, round(wait * 1000)))

    def finish(self) -> None:
        """The stream ended: everything pending is final (drawn at once)."""
        self._draw(final=True)

    def _on_frame_timer_timeout(self) -> None:
        self._draw(final=False)

    def _draw(self, final: bool) -> None:
        self._frame_timer.stop()
        self._last_draw = self.clock()
        self.draws += 1
        bar = self.follow
        at_bottom = bar is not None and bar.value() >= bar.maximum() - 4
        self._flush(final)
        if bar is not None and at_bottom:
            bar.setValue(bar.maximum())

    def set_text(self, text: str) -> None:
        """Show a whole stored answer."""
        self.clear()
        self._text.append(text)
        self._length = len(text)
        self._pending = text
        self._flush(final=True)

    # --- internals ------------------------------------------------------------------
    # Every step below costs about the size of the unfinished block's uncommitted part,
    # never the size of the answer: that is what keeps a 20,000-token answer smooth.

    def _strip_blank_lines(self) -> None:
        match = _LEADING_BLANK_LINES.match(self._pending)
        if match is not None and match.end():
            self._pending = self._pending[match.end() :]
            self._scan_from = 0

    def _split(self, final: bool) -> tuple[str, str] | None:
        """Is the first pending block complete? For a committed paragraph, only the lines
        not checked yet are looked at (a paragraph can only end at a new line)."""
        if self._inline_pos is None:
            return split_first(self._pending, final)
        start = self._pending.rfind("\n", 0, self._scan_from) + 1
        # "x" stands for the paragraph's first line: the rules for what ends a paragraph
        # depend only on its kind and on the lines after it.
        split = split_first("x\n" + self._pending[start:], final)
        if split is None:
            return None
        block, rest = split
        return self._pending[:start] + block[2:], rest

    def _flush(self, final: bool) -> None:
        # One edit block per update: Qt lays the document out once at its end instead of
        # after every insertion (measured: most of the rendering cost before this).
        cursor = QTextCursor(self.document)
        cursor.beginEditBlock()
        try:
            self._flush_edits(final)
        finally:
            cursor.endEditBlock()

    def _flush_edits(self, final: bool) -> None:
        self._strip_blank_lines()
        while True:
            split = self._split(final)
            if split is None:
                break
            block, self._pending = split
            self._write(block, finished=True)
            self._strip_blank_lines()
        self._scan_from = len(self._pending)
        if not final and self._pending and not self._pending.isspace():
            self._write(self._pending, finished=False)
        elif self._inline_pos is None:
            self._remove_from(self._finished_end)

    def _cursor_at_end(self) -> QTextCursor:
        cursor = QTextCursor(self.document)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _remove_from(self, position: int) -> None:
        if position == 0:
            self._fresh = True
        cursor = QTextCursor(self.document)
        end = self.document.characterCount() - 1
        if position >= end:
            return
        cursor.setPosition(position)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()

    def _write(self, text: str, finished: bool) -> None:
        if self._inline_pos is not None or (
            block_kind(text) == "paragraph" and (len(text) > COMMIT_AT or finished)
        ):
            self._write_paragraph(text, finished)
        else:
            if not finished and block_kind(text) in ("paragraph", "heading", "item", "quote"):
                # An unfinished phrase shows its format, not a raw "**" (close_open).
                text = close_open(text)
            block = parse_block(text)
            signature = (block.kind, block.level, block.marker)
            if (
                not finished
                and block.kind in ("paragraph", "heading", "item", "quote")
                and signature == self._tail_signature
                and self._extend_tail(block.spans)
            ):
                return
            self.tail_renders += 1
            self._remove_from(self._finished_end)
            self._write_block(block)
            self._tail_signature = signature if block.kind != "table" else None
            self._tail_spans = list(block.spans)
        if finished:
            self._finished_end = self.document.characterCount() - 1
            self._committed = 0
            self._inline_pos = None
            self._tail_signature = None

    def _extend_tail(self, spans: list[Span]) -> bool:
        """Append to the unfinished block when the new spans only extend the old ones (the
        usual case: a few more words); False when something earlier changed."""
        old = self._tail_spans
        if len(spans) < len(old) or not old:
            return False
        last = len(old) - 1
        if spans[:last] != old[:last]:
            return False
        grown, before = spans[last], old[last]
        if (grown.bold, grown.italic, grown.code, grown.href) != (
            before.bold,
            before.italic,
            before.code,
            before.href,
        ) or not grown.text.startswith(before.text):
            return False
        if grown.href is not None and grown.text != before.text:
            return False  # a link's text and target change together: write it again
        base = self._tail_base()
        cursor = self._cursor_at_end()
        cursor.insertText(grown.text[len(before.text) :], self._char_format(grown, base))
        self._write_spans(cursor, spans[last + 1 :], base)
        self._tail_spans = list(spans)
        return True

    def _tail_base(self) -> QTextCharFormat | None:
        """The block-level character format the unfinished block's spans sit on."""
        kind = self._tail_signature[0] if self._tail_signature else "paragraph"
        if kind in ("paragraph", "item"):
            return None
        return self._base_format(kind, self._tail_signature[1] if self._tail_signature else 0)

    def _write_paragraph(self, text: str, finished: bool) -> None:
        """Write a paragraph, committing clean prefixes so re-rendering stays short."""
        if self._inline_pos is None:
            self._remove_from(self._finished_end)
            cursor = self._start_block(self._block_format("paragraph"), QTextCharFormat())
            self._inline_pos = cursor.position()
        else:
            self._remove_from(self._inline_pos)
        rest = paragraph_source(text[self._committed :])
        if not finished and len(rest) > COMMIT_AT:
            cut = safe_cut(rest, 0)
            if cut == 0 and len(rest) > FORCE_AT:
                cut = rest.rfind(" ", 0, len(rest) - 1) + 1
            if cut > 0:
                cursor = self._cursor_at_end()
                self._write_spans(cursor, inline(rest[:cut]))
                if cursor.position() - cursor.block().position() > SPLIT_AT:
                    # Qt lays out a whole block again on every change: a paragraph of
                    # thousands of characters made each token cost its full length.
                    # Long paragraphs continue in a new block at a clean point.
                    cursor.insertBlock(self._block_format("paragraph"), QTextCharFormat())
                self._inline_pos = cursor.position()
                self._committed += cut
                rest = rest[cut:]
        self.tail_renders += 1
        self._write_spans(self._cursor_at_end(), inline(rest if finished else close_open(rest)))

    def _start_block(self, block: QTextBlockFormat, char: QTextCharFormat) -> QTextCursor:
        cursor = self._cursor_at_end()
        if self._fresh:
            self._fresh = False
            cursor.setBlockFormat(block)
            cursor.setBlockCharFormat(char)
            cursor.setCharFormat(char)
        else:
            cursor.insertBlock(block, char)
        return cursor

    def _block_format(self, kind: str, level: int = 0) -> QTextBlockFormat:
        fmt = QTextBlockFormat()
        fmt.setTopMargin(4 if kind == "paragraph" else 0)  # room after a list, too
        fmt.setBottomMargin(PARAGRAPH_SPACING)
        if kind != "code":
            # Reading text, not code: lines spaced like a book page, not a terminal.
            fmt.setLineHeight(LINE_HEIGHT_PCT, PROPORTIONAL)
        if kind == "heading":
            fmt.setHeadingLevel(level)
            fmt.setTopMargin(14)
            fmt.setBottomMargin(6)
        elif kind == "item":
            fmt.setLeftMargin(22 + 20 * level)
            fmt.setTextIndent(-14)
            fmt.setBottomMargin(4)
        elif kind == "quote":
            fmt.setLeftMargin(18)
        elif kind == "code":
            fmt.setLeftMargin(8)
            fmt.setBottomMargin(0)
            fmt.setNonBreakableLines(True)
            fmt.setBackground(self.palette.color(QPalette.ColorRole.AlternateBase))
        return fmt

    def _char_format(self, span: Span, base: QTextCharFormat | None = None) -> QTextCharFormat:
        if base is None:
            key = Span("", span.bold, span.italic, span.code, span.href)
            cached = self._formats.get(key)
            if cached is None:
                cached = self._formats[key] = self._make_format(span, None)
                if len(self._formats) > 512:
                    self._formats.clear()
            return cached
        return self._make_format(span, base)

    def _make_format(self, span: Span, base: QTextCharFormat | None) -> QTextCharFormat:
        fmt = QTextCharFormat(base) if base is not None else QTextCharFormat()
        if span.bold:
            fmt.setFontWeight(QFont.Weight.Bold)
        if span.italic:
            fmt.setFontItalic(True)
        if span.code:
            fmt.setFontFamilies(_fixed_families())
        if span.href is not None and span.href.startswith(f"{PAGE_SCHEME}:"):
            fmt.setAnchor(True)
            fmt.setAnchorHref(span.href)
            fmt.setForeground(self.palette.color(QPalette.ColorRole.Link))
            fmt.setFontUnderline(True)
        return fmt

    def _write_spans(
        self, cursor: QTextCursor, spans: list[Span], base: QTextCharFormat | None = None
    ) -> None:
        for span in spans:
            cursor.insertText(span.text, self._char_format(span, base))

    def _base_format(self, kind: str, level: int = 0) -> QTextCharFormat:
        base = QTextCharFormat()
        if kind == "heading":
            base.setFontWeight(QFont.Weight.Bold)
            size = self.document.defaultFont().pointSizeF()
            if size > 0:
                base.setFontPointSize(size * _HEADING_SCALE.get(level, 1.0))
        elif kind == "quote":
            base.setFontItalic(True)
            base.setForeground(self.palette.color(QPalette.ColorRole.PlaceholderText))
        return base

    def _write_block(self, block: Block) -> None:
        base = QTextCharFormat()
        if block.kind == "heading":
            base = self._base_format("heading", block.level)
            cursor = self._start_block(self._block_format("heading", block.level), base)
            self._write_spans(cursor, block.spans, base)
        elif block.kind == "item":
            cursor = self._start_block(self._block_format("item", block.level), base)
            cursor.insertText(f"{block.marker}\u2002", base)
            self._write_spans(cursor, block.spans)
        elif block.kind == "quote":
            base = self._base_format("quote")
            cursor = self._start_block(self._block_format("quote"), base)
            self._write_spans(cursor, block.spans, base)
        elif block.kind == "code":
            base.setFontFamilies(_fixed_families())
            for i, line in enumerate(block.code.split("\n") or [""]):
                fmt = self._block_format("code")
                if i == 0:
                    fmt.setTopMargin(4)
                cursor = self._start_block(fmt, base)
                cursor.insertText(line, base)
        elif block.kind == "rule":
            fmt = self._block_format("paragraph")
            fmt.setProperty(
                QTextFormat.Property.BlockTrailingHorizontalRulerWidth,
                QTextLength(QTextLength.Type.PercentageLength, 100),
            )
            self._start_block(fmt, base)
        elif block.kind == "table":
            self._write_table(block)
        else:
            cursor = self._start_block(self._block_format("paragraph"), base)
            self._write_spans(cursor, block.spans)

    def _write_table(self, block: Block) -> None:
        cursor = self._start_block(self._block_format("paragraph"), QTextCharFormat())
        rows = len(block.rows)
        cols = max((len(r) for r in block.rows), default=0)
        if not rows or not cols:
            return
        fmt = QTextTableFormat()
        fmt.setBorder(1)
        fmt.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        fmt.setBorderBrush(self.palette.color(QPalette.ColorRole.Mid))
        fmt.setCellPadding(4)
        fmt.setCellSpacing(0)
        table = cursor.insertTable(rows, cols, fmt)
        for r, row in enumerate(block.rows):
            for c, cell in enumerate(row):
                head = QTextCharFormat()
                if r == 0:
                    head.setFontWeight(QFont.Weight.Bold)
                self._write_spans(table.cellAt(r, c).firstCursorPosition(), cell, head)


def _fixed_families() -> list[str]:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).families()
