"""Quote checks where the quotes stand: a mark after each quote in the rendered answer.

The one place the answer view talks to the core's quote checker and citation grammar
(``desktop.answering.citations``): ``check_quotes`` runs it, ``status_of`` reads its
statuses (``verified``, ``other_page``, ``not_found``, ``unquoted``) by name so a change
of the enum's values does not reach the widgets. ``mark_quotes`` then writes, after each
checked quote, "✓", "⚠ on p. 14" (a link to the page it is really on) or a red
"✗ not found" that cannot be missed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont, QPalette, QTextCharFormat, QTextCursor, QTextDocument

from desktop.answering.citations import QuoteCheck, answer_checks, as_quote_checks
from desktop.answering.format import page_label, short_quote
from desktop.answers import StoredAnswer
from desktop.documents.model import Document, Page
from desktop.ui.markdown_stream import citation_href

# Not palette roles: "verified", "elsewhere" and "not found" must read the same in light
# and dark themes, and no role means any of them. Mid-saturation tones work on both.
VERIFIED_COLOR = QColor(46, 160, 67)
ELSEWHERE_COLOR = QColor(201, 122, 22)
NOT_FOUND_COLOR = QColor(214, 69, 65)
NOT_FOUND_TEXT = QColor(255, 255, 255)

# Set on every character of a mark, so the answer's own text can be told apart.
MARK_PROPERTY = QTextCharFormat.Property.UserProperty + 1

# What may stand between a quote and its mark: the closing quotation mark, then a citation.
_AFTER_QUOTE = re.compile(r"[\"”“»]?(?:\s{0,3}\[[^\[\]\n]{1,80}\])?")
# Enough of a quote to find it again in the rendered text (Markdown inside a quote may
# render differently; the start of a quote rarely has any).
_FIND_CHARS = 40


@dataclass(frozen=True)
class QuoteMark:
    """A checked quote as the view shows it."""

    quote: str
    status: str  # "verified" | "other_page" | "not_found" | "unquoted"
    cited: tuple[int, ...]
    found_on: int | None


def status_of(check: QuoteCheck) -> str:
    """The check's status as a plain name (``QuoteStatus.OTHER_PAGE`` -> "other_page")."""
    return check.status.name.lower()


def check_quotes(answer: StoredAnswer, doc: Document) -> list[QuoteCheck]:
    """The core's quote checks for an answer, as the CLI shows them (as stored with the
    answer; checked again only when an older matcher stored them, and then blocking: run
    it off the UI thread for a long document)."""
    return as_quote_checks(answer_checks(answer, doc))


def marks_for(checks: Sequence[QuoteCheck]) -> list[QuoteMark]:
    """The view's marks for the core's checks."""
    return [QuoteMark(c.quote, status_of(c), tuple(c.cited), c.found_on) for c in checks]


@dataclass(frozen=True)
class PlacedMark:
    """A mark written into the rendered answer: the quote, its citation and the mark
    span ``start:end`` there (so a click on the citation or the mark finds its quote)."""

    start: int
    end: int
    mark: QuoteMark


def mark_quotes(
    document: QTextDocument, marks: Sequence[QuoteMark], pages: Sequence[Page]
) -> list[PlacedMark]:
    """Write a mark after each quote found in the rendered answer; the marks written.

    Quotes are looked for in order, each after the previous one, so the same words quoted
    twice get a mark each. Only formats go in (no HTML); the only link is a page.
    """
    placed: list[PlacedMark] = []
    position = 0
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    try:
        for mark in marks:
            if mark.status == "unquoted":
                continue
            needle = " ".join(mark.quote.split())[:_FIND_CHARS]
            found = document.find(needle, position)
            if found.isNull():
                continue
            start = found.selectionStart()
            end = _quote_end(document, found.selectionStart(), mark.quote)
            after = _text_after(document, end)
            tail = _AFTER_QUOTE.match(after)
            insert_at = end + (tail.end() if tail else 0)
            if mark.status == "not_found":
                _flag_quote(document, start, end)
            position = _write_mark(document, insert_at, mark, pages)
            placed.append(PlacedMark(start, position, mark))
    finally:
        cursor.endEditBlock()
    return placed


def _quote_end(document: QTextDocument, start: int, quote: str) -> int:
    """Where the quote's text ends in the document (it may span a streamed block split)."""
    whole = document.find(" ".join(quote.split()), start)
    if not whole.isNull() and whole.selectionStart() == start:
        return whole.selectionEnd()
    # Rendered differently (Markdown inside, a block split): up to the closing mark.
    text = _text_after(document, start, len(quote) + 40)
    for closing in ("”", '"', "»"):
        at = text.find(closing, 1)
        if at > 0:
            return start + at
    return start + min(len(quote), len(text))


def _text_after(document: QTextDocument, position: int, length: int = 120) -> str:
    cursor = QTextCursor(document)
    cursor.setPosition(position)
    end = min(position + length, document.characterCount() - 1)
    cursor.setPosition(max(end, position), QTextCursor.MoveMode.KeepAnchor)
    # Paragraph separators as spaces: a mark never looks past its own block anyway.
    return cursor.selectedText().replace("\u2029", "\n")


def _flag_quote(document: QTextDocument, start: int, end: int) -> None:
    """A quote that is not in the document: red wavy underline and a pale red ground."""
    cursor = QTextCursor(document)
    cursor.setPosition(start)
    cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
    fmt = QTextCharFormat()
    fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
    fmt.setUnderlineColor(NOT_FOUND_COLOR)
    ground = QColor(NOT_FOUND_COLOR)
    ground.setAlpha(40)
    fmt.setBackground(ground)
    fmt.setToolTip("Not found in the document: check this quote before relying on it.")
    cursor.mergeCharFormat(fmt)


def _write_mark(
    document: QTextDocument, position: int, mark: QuoteMark, pages: Sequence[Page]
) -> int:
    """Insert the mark at ``position``; the position after it."""
    cursor = QTextCursor(document)
    cursor.setPosition(position)
    base = QTextCharFormat()
    base.setFontWeight(QFont.Weight.Bold)
    base.setProperty(MARK_PROPERTY, True)
    cited = ", ".join(page_label(pages, n) for n in mark.cited) or "no page"
    if mark.status == "verified":
        fmt = QTextCharFormat(base)
        fmt.setForeground(VERIFIED_COLOR)
        where = page_label(pages, mark.found_on) if mark.found_on else cited
        fmt.setToolTip(f"Quote verified: it is on p. {where}.")
        cursor.insertText("\u00a0✓", fmt)
    elif mark.status == "other_page" and mark.found_on is not None:
        label = page_label(pages, mark.found_on)
        fmt = QTextCharFormat(base)
        fmt.setForeground(ELSEWHERE_COLOR)
        tip = f"This quote is not on p. {cited}, which the answer cites; it is on p. {label}."
        fmt.setToolTip(tip)
        cursor.insertText("\u00a0⚠ on ", fmt)
        link = QTextCharFormat(fmt)
        link.setAnchor(True)
        link.setAnchorHref(citation_href(label, mark.found_on))
        link.setFontUnderline(True)
        cursor.insertText(f"p. {label}", link)
    else:
        fmt = QTextCharFormat(base)
        fmt.setForeground(NOT_FOUND_TEXT)
        fmt.setBackground(NOT_FOUND_COLOR)
        fmt.setToolTip(
            f"“{short_quote(mark.quote, 80)}” is not in the document (cited: p. {cited}). "
            "The model may have paraphrased or invented it."
        )
        cursor.insertText("\u00a0", base)
        cursor.insertText("\u00a0✗ not found in the document\u00a0", fmt)
    # What follows the mark keeps its own format, not the mark's.
    cursor.setCharFormat(QTextCharFormat())
    return cursor.position()


def mark_color(status: str, palette: QPalette) -> QColor:
    """The colour that stands for a status (the summary line uses the same)."""
    return {
        "verified": VERIFIED_COLOR,
        "other_page": ELSEWHERE_COLOR,
        "not_found": NOT_FOUND_COLOR,
    }.get(status, palette.color(QPalette.ColorRole.Text))


def unmarked_text(document: QTextDocument) -> str:
    """The document's plain text without the quote marks (what the answer itself says)."""
    parts: list[str] = []
    block = document.begin()
    while block.isValid():
        if parts:
            parts.append("\n")
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if not fragment.charFormat().boolProperty(MARK_PROPERTY):
                parts.append(fragment.text())
            it += 1
        block = block.next()
    return "".join(parts).replace("\u00a0", " ")
