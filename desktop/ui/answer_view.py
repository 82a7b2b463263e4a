"""One answer on screen: waiting line, live reasoning, the answer as Markdown, its figures.

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

import html
import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from PySide6.QtCore import Qt, QTimer, QUrl, Signal, Slot
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
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollBar,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.citations import (
    QuoteCheck,
    QuoteStatus,
)
from desktop.answering.events import Sent, Stored
from desktop.documents.model import Page
from desktop.store.db import StoredAnswer
from desktop.ui.markdown_stream import (
    PAGE_SCHEME,
    Block,
    Span,
    block_kind,
    citation_href,
    inline,
    paragraph_source,
    parse_block,
    parse_citation_href,
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
        self._write_spans(self._cursor_at_end(), inline(rest))

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
        fmt.setBottomMargin(6)
        if kind == "heading":
            fmt.setHeadingLevel(level)
            fmt.setTopMargin(10)
            fmt.setBottomMargin(4)
        elif kind == "item":
            fmt.setLeftMargin(20 + 18 * level)
            fmt.setTextIndent(-14)
            fmt.setBottomMargin(3)
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


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def ago(timestamp: float, now: float | None = None) -> str:
    """ "just now", "5 minutes ago", "3 days ago"."""
    delta = (now or time.time()) - timestamp
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if delta >= size:
            n = int(delta // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def answer_figures(answer: StoredAnswer) -> str:
    """The line under an answer: model, tokens, server cache, first token, speed."""
    parts: list[str] = []
    if answer.model:
        parts.append(answer.model)
    if answer.prompt_tokens is not None:
        prompt = f"{answer.prompt_tokens:,} prompt tokens"
        if answer.cached_tokens:
            prompt = (
                f"{answer.cached_tokens:,} of {answer.prompt_tokens:,} prompt tokens "
                "from the server's cache"
            )
        parts.append(prompt)
    if answer.completion_tokens is not None:
        parts.append(f"{answer.completion_tokens:,} tokens generated")
    if answer.ttft_s is not None:
        parts.append(f"first token after {answer.ttft_s:.1f} s")
    if answer.completion_tokens and answer.total_s and answer.ttft_s is not None:
        gen_s = answer.total_s - answer.ttft_s
        if gen_s > 0:
            parts.append(f"{answer.completion_tokens / gen_s:,.1f} tokens/s")
    return " · ".join(parts)


def answer_scope(answer: StoredAnswer, page_count: int) -> str:
    """ "About pages 1-120 of 300" when the answer covers part of the document."""
    if page_count and (answer.first_page, answer.last_page) != (1, page_count):
        return f"About pages {answer.first_page}-{answer.last_page} of {page_count} only"
    return ""


def _short(quote: str, limit: int = 120) -> str:
    quote = " ".join(quote.split())
    return quote if len(quote) <= limit else quote[: limit - 1].rstrip() + "…"


def quote_summary(checks: Sequence[QuoteCheck], pages: Sequence[Page]) -> tuple[str, str]:
    """The line under an answer and its tooltip, both rich text with every quote escaped:
    "Quotes: 2 verified · 1 on another page (p. 14) · 1 not found". The page a misplaced
    quote is really on is a ``longdoc-page:`` link; the quotes not found are listed in the
    tooltip. ``("", "")`` when the answer quotes nothing."""
    if not checks:
        return "", ""

    def label(number: int) -> str:
        return pages[number - 1].label if 0 < number <= len(pages) else f"#{number}"

    def cited(check: QuoteCheck) -> str:
        if not check.cited:
            return "no page cited"
        return "cited p. " + ", ".join(html.escape(label(n)) for n in check.cited)

    verified = [c for c in checks if c.status is QuoteStatus.VERIFIED]
    elsewhere = [c for c in checks if c.status is QuoteStatus.OTHER_PAGE and c.found_on is not None]
    missing = [c for c in checks if c not in verified and c not in elsewhere]
    parts: list[str] = []
    if verified:
        parts.append(f"{len(verified)} verified")
    if elsewhere:
        found = sorted({c.found_on for c in elsewhere if c.found_on is not None})
        links = ", ".join(
            f'<a href="{citation_href(label(n), n)}">p. {html.escape(label(n))}</a>' for n in found
        )
        where = "another page" if len(elsewhere) == 1 else "other pages"
        parts.append(f"{len(elsewhere)} on {where} ({links})")
    if missing:
        parts.append(f"{len(missing)} not found")
    line = "Quotes: " + " · ".join(parts)
    notes: list[str] = []
    if missing:
        items = "".join(f"<li>“{html.escape(_short(c.quote))}” ({cited(c)})</li>" for c in missing)
        notes.append(f"<p><b>Not found in the document:</b></p><ul>{items}</ul>")
    if elsewhere:
        items = "".join(
            f"<li>“{html.escape(_short(c.quote))}” ({cited(c)}; it is on "
            f"p. {html.escape(label(c.found_on or 0))})</li>"
            for c in elsewhere
        )
        notes.append(f"<p><b>Not on the page cited:</b></p><ul>{items}</ul>")
    if not notes:
        notes.append("<p>Every quote was found on the page it cites.</p>")
    return line, "".join(notes)


class AnswerView(QWidget):
    """The answer area of the ask panel (the question, waiting, reasoning, answer, figures)."""

    citation_clicked = Signal(object, object)  # label: str | None, number: int | None
    ask_again_requested = Signal()
    copy_requested = Signal()
    export_requested = Signal()
    action_requested = Signal(str)  # the notice's action, e.g. "start-server"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("answerView")
        self.question_label = QLabel()
        self.question_label.setTextFormat(Qt.TextFormat.PlainText)
        self.question_label.setWordWrap(True)
        font = self.question_label.font()
        font.setBold(True)
        self.question_label.setFont(font)
        self.scope_label = QLabel()
        self.scope_label.setTextFormat(Qt.TextFormat.PlainText)
        self.scope_label.setWordWrap(True)
        self.waiting_label = QLabel()
        self.waiting_label.setTextFormat(Qt.TextFormat.PlainText)
        self.waiting_label.setWordWrap(True)
        self.waiting_label.setObjectName("waitingLabel")
        self.notice_label = QLabel()
        self.notice_label.setTextFormat(Qt.TextFormat.PlainText)
        self.notice_label.setWordWrap(True)
        self.notice_button = QPushButton()
        self.notice_button.clicked.connect(self._on_notice_button_clicked)
        self._notice_action = ""

        self.reasoning_toggle = QToolButton()
        self.reasoning_toggle.setCheckable(True)
        self.reasoning_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.reasoning_toggle.setAutoRaise(True)
        self.reasoning_toggle.toggled.connect(self._on_reasoning_toggle_toggled)
        self.reasoning = QPlainTextEdit()
        self.reasoning.setReadOnly(True)
        self.reasoning.setMaximumHeight(140)
        self.reasoning.setObjectName("reasoning")

        self.browser = QTextBrowser()
        self.browser.setObjectName("answer")
        # Never let Qt follow a link: only our citations act, in _on_browser_anchor_clicked.
        self.browser.setOpenLinks(False)
        self.browser.setOpenExternalLinks(False)
        self.browser.anchorClicked.connect(self._on_browser_anchor_clicked)
        self.browser.setPlaceholderText(
            "Ask a question about the document; the answer appears here."
        )
        self.writer = MarkdownWriter(
            self.browser.document(), self.palette(), follow=self.browser.verticalScrollBar()
        )

        self.figures_label = QLabel()
        self.figures_label.setTextFormat(Qt.TextFormat.PlainText)
        self.figures_label.setWordWrap(True)
        self.figures_label.setObjectName("answerFigures")
        # Rich text made only by quote_summary (every quote escaped); its only links are
        # pages, handled in _on_quotes_label_link_activated, never opened by Qt.
        self.quotes_label = QLabel()
        self.quotes_label.setObjectName("quoteChecks")
        self.quotes_label.setTextFormat(Qt.TextFormat.RichText)
        self.quotes_label.setWordWrap(True)
        self.quotes_label.setOpenExternalLinks(False)
        self.quotes_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self.quotes_label.linkActivated.connect(self._on_quotes_label_link_activated)
        self.quote_checks: list[QuoteCheck] | None = None
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

        notice = QHBoxLayout()
        notice.addWidget(self.notice_label, 1)
        notice.addWidget(self.notice_button)
        footer = QHBoxLayout()
        footer.addStretch(1)
        footer.addWidget(self.ask_again_button)
        footer.addWidget(self.copy_button)
        footer.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.question_label)
        layout.addWidget(self.scope_label)
        layout.addWidget(self.waiting_label)
        layout.addLayout(notice)
        layout.addWidget(self.reasoning_toggle)
        layout.addWidget(self.reasoning)
        layout.addWidget(self.browser, 1)
        layout.addWidget(self.figures_label)
        layout.addWidget(self.quotes_label)
        layout.addLayout(footer)

        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._started = 0.0
        self._prompt_tokens: int | None = None
        self._estimate_s: float | None = None
        self._first_token = False
        self._reasoning_chars = 0
        self.answer: StoredAnswer | None = None
        self.reset()

    # --- states ----------------------------------------------------------------------

    def reset(self) -> None:
        """Nothing shown: the empty state."""
        self._timer.stop()
        self.answer = None
        self.question_label.hide()
        self.scope_label.hide()
        self.waiting_label.hide()
        self.clear_notice()
        self.reasoning.clear()
        self._reasoning_chars = 0
        self.reasoning_toggle.hide()
        self.reasoning.hide()
        self.writer.clear()
        self.figures_label.clear()
        self.show_quote_checks(None, [])
        for button in (self.ask_again_button, self.copy_button, self.export_button):
            button.hide()

    def start(self, question: str, scope: str) -> None:
        """A question was asked: show it and start the waiting clock."""
        self.reset()
        self._show_question(question, scope)
        self._started = time.monotonic()
        self._prompt_tokens = None
        self._estimate_s = None
        self._first_token = False
        self.waiting_label.setText("Checking the answer cache and counting tokens…")
        self.waiting_label.show()
        self._timer.start()

    def _show_question(self, question: str, scope: str) -> None:
        self.question_label.setText(question)
        self.question_label.show()
        self.scope_label.setText(scope)
        self.scope_label.setVisible(bool(scope))

    def on_sent(self, sent: Sent, estimate_s: float | None) -> None:
        """The request is on its way: the server reads the document now."""
        self._prompt_tokens = sent.prompt_tokens
        self._estimate_s = estimate_s
        self._started_prefill = time.monotonic()
        if sent.warnings:
            self.show_notice(" ".join(sent.warnings))
        self._on_timer_timeout()

    def append_reasoning(self, text: str) -> None:
        """Live thinking (plain text; appended, never re-rendered)."""
        self._on_first_token()
        if not self.reasoning_toggle.isVisible():
            self.reasoning_toggle.show()
            self.reasoning_toggle.setChecked(True)
            self.reasoning.setVisible(True)
        cursor = self.reasoning.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        self._reasoning_chars += len(text)
        bar = self.reasoning.verticalScrollBar()
        bar.setValue(bar.maximum())
        self._update_toggle_text(live=True)

    def append_answer(self, text: str) -> None:
        """Live answer text (Markdown)."""
        self._on_first_token()
        if self.reasoning_toggle.isChecked() and not self.writer.has_text:
            # The answer begins: fold the thinking away so the answer has the room.
            self.reasoning_toggle.setChecked(False)
        self.writer.append(text)  # drawn now or at the next frame; keeps following the end

    def _on_first_token(self) -> None:
        if not self._first_token:
            self._first_token = True
            self.waiting_label.hide()
            self._timer.stop()

    def finish(self, stored: Stored, page_count: int) -> None:
        """The answer is stored (streamed to the end, or found in the cache)."""
        self._timer.stop()
        self.waiting_label.hide()
        if stored.from_cache:
            self.show_answer(stored.answer, page_count, from_cache=True)
            return
        self.writer.finish()
        self.answer = stored.answer
        self._show_footer(stored.answer, page_count, from_cache=False)

    def fail(self, text: str, action: str = "", action_text: str = "") -> None:
        """The answer stopped or could not start: say why, keep what arrived."""
        self._timer.stop()
        self.waiting_label.hide()
        self.writer.finish()
        self.show_notice(text, action, action_text)

    def show_answer(self, answer: StoredAnswer, page_count: int, from_cache: bool = False) -> None:
        """Show a stored answer at once (history, cache hit)."""
        self.reset()
        self.answer = answer
        self._show_question(answer.question, answer_scope(answer, page_count))
        if answer.reasoning:
            self.reasoning.setPlainText(answer.reasoning)
            self._reasoning_chars = len(answer.reasoning)
            self.reasoning_toggle.show()
            self.reasoning_toggle.setChecked(False)
            self._update_toggle_text(live=False)
        self.writer.set_text(answer.answer)
        if answer.status != "complete":
            why = f" ({answer.error})" if answer.error else ""
            self.show_notice(f"This answer is {answer.status}{why}.")
        self._show_footer(answer, page_count, from_cache)

    def _show_footer(self, answer: StoredAnswer, page_count: int, from_cache: bool) -> None:
        figures = answer_figures(answer)
        if from_cache:
            figures = f"From cache, asked {ago(answer.created_at)}. {figures}"
        else:
            when = datetime.fromtimestamp(answer.created_at).strftime("%Y-%m-%d %H:%M")
            figures = f"{figures} · {when}" if figures else when
        scope = answer_scope(answer, page_count)
        self.scope_label.setText(scope)
        self.scope_label.setVisible(bool(scope))
        self.figures_label.setText(figures)
        self.ask_again_button.setVisible(True)
        self.copy_button.setVisible(True)
        self.export_button.setVisible(True)
        self._update_toggle_text(live=False)

    def show_quote_checks(self, checks: list[QuoteCheck] | None, pages: Sequence[Page]) -> None:
        """The quote line under the answer (hidden for None or no quotes)."""
        self.quote_checks = checks
        line, tooltip = quote_summary(checks or [], pages)
        self.quotes_label.setText(line)
        self.quotes_label.setToolTip(tooltip)
        self.quotes_label.setVisible(bool(line))

    def show_notice(self, text: str, action: str = "", action_text: str = "") -> None:
        """A line above the answer (warnings, errors), with an optional action button."""
        self.notice_label.setText(text)
        self.notice_label.show()
        self._notice_action = action
        self.notice_button.setText(action_text)
        self.notice_button.setVisible(bool(action))

    def clear_notice(self) -> None:
        """Hide the notice line."""
        self.notice_label.hide()
        self.notice_button.hide()
        self._notice_action = ""

    # --- slots ---------------------------------------------------------------------------

    @Slot()
    def _on_timer_timeout(self) -> None:
        elapsed = time.monotonic() - self._started
        if self._prompt_tokens is None:
            text = f"Checking the answer cache and counting tokens… {_duration(elapsed)}"
        else:
            text = f"Reading the document ({self._prompt_tokens:,} tokens)… {_duration(elapsed)}"
            if self._estimate_s is not None:
                left = self._estimate_s - elapsed
                if left > 1:
                    text += f" · about {_duration(left)} left"
                else:
                    text += " · taking longer than the last questions; still working"
        self.waiting_label.setText(text)

    @Slot(bool)
    def _on_reasoning_toggle_toggled(self, checked: bool) -> None:
        self.reasoning.setVisible(checked)
        self._update_toggle_text(live=self._timer.isActive() or self.answer is None)

    def _update_toggle_text(self, live: bool) -> None:
        arrow = "▾" if self.reasoning_toggle.isChecked() else "▸"
        words = "Thinking…" if live and self.answer is None else "Reasoning"
        self.reasoning_toggle.setText(f"{arrow} {words} ({self._reasoning_chars:,} characters)")

    @Slot(QUrl)
    def _on_browser_anchor_clicked(self, url: QUrl) -> None:
        label, number = parse_citation_href(url.toString())
        if label is not None or number is not None:
            self.citation_clicked.emit(label, number)
        # Anything else is ignored on purpose: answers may not open files or web pages.

    @Slot(str)
    def _on_quotes_label_link_activated(self, href: str) -> None:
        label, number = parse_citation_href(href)
        if label is not None or number is not None:
            self.citation_clicked.emit(label, number)

    @Slot()
    def _on_notice_button_clicked(self) -> None:
        if self._notice_action:
            self.action_requested.emit(self._notice_action)
