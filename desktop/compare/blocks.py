"""A document as a sequence of comparable blocks, each with its anchor, for ``compare``.

A block is what a reader points at: a paragraph, a list item or numbered clause, a table
row, a transcript line, a Word paragraph behind its ``[§ 4.2 ¶ 3]`` anchor. Blocks are
cut from the document's text as a whole, not page by page, so a paragraph that a page
break splits is still one block, and its words are compared after the layout is undone:
line breaks inside a paragraph are spaces, a word hyphenated at a line end is one word,
runs of spaces are one, ligatures and other compatibility forms are their letters, and a
line that is only a page number (a running footer like ``- 4 -`` or ``Page 4 of 9``) is
not text. What remains, the words and their punctuation and case, is what a change is.

Paragraphs are compared sentence by sentence (each sentence a unit under the paragraph's
anchor), so a changed amount in a paragraph of a page is one changed sentence, not one
changed page, and a sentence moved elsewhere is seen as moved. The key also drops what
only one kind of file writes: Markdown's and the Word reader's heading marks (``## ``),
bullets, emphasis marks, table pipes and separator rows, the Word reader's ``Table:``
line, and curly against straight quotes; so a PDF and a Word file of the same text compare
equal.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from desktop.documents.model import Document

# Where a new block starts at the beginning of a line (besides a blank line):
# a Word or transcript anchor, a table row, a Markdown heading, a list item or a numbered
# clause ("4.2 ", "12. ", "(a) ", "- ", "• ").
_BLOCK_START = re.compile(
    r"^(?:\[(?:§|¶|\d{1,2}:\d{2})|\||#{1,6}\s|[-•*–]\s|\(?[0-9]{1,3}[a-z]?(?:\.[0-9]{1,3})*[.)]\s"
    r"|\(?[a-z]\)\s|(?:Article|Section|Clause|ARTICLE|SECTION)\s+\d)"
)
# A line that only numbers the page: "4", "- 4 -", "Page 4", "Page 4 of 9", "iv".
_PAGE_NUMBER_LINE = re.compile(
    r"^\s*(?:[-–—]\s*)?(?:page\s+)?(?:\d{1,5}|[ivxlcdm]{1,8})(?:\s*(?:of|/)\s*\d{1,5})?"
    r"(?:\s*[-–—])?\s*$",
    re.IGNORECASE,
)
# A Word or transcript anchor at a block's start: kept as the block's anchor, not its text.
_LEADING_ANCHOR = re.compile(r"^\[(?P<anchor>(?:§|¶|\d{1,2}:\d{2})[^\]]{0,40})\]\s*")
# A sentence ends at . ! ? (or ;) followed by a space and a capital, digit, quote or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\"“'(\[§])")
_HYPHEN_BREAK = re.compile(r"(?<=\w)-\n(?=[a-z])")
_SPACES = re.compile(r"\s+")
# A piece shorter than this ("12. Delivery.") stays with the sentence after it.
MIN_SENTENCE_CHARS = 40
_MARKUP_PREFIX = re.compile(r"^(?:#{1,6}\s+|[-•*–]\s+|>\s+)+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_READER_MARKERS = {"Table:"}
# Typography that PDF producers and word processors change on their own: curly quotes.
_TYPOGRAPHY = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"'})


@dataclass(frozen=True)
class Block:
    """One unit of comparison: its text as read and the anchor where it stands.

    ``page`` is the 1-based page it starts on, ``anchor`` how a reader finds it
    (``p. 4 ¶ 2``, ``§ 4.2 ¶ 3``, ``00:41:12``), ``paragraph`` the block's ordinal in the
    document (sentences of one paragraph share it), ``key`` the text with the layout
    undone: two blocks are the same when their keys are.
    """

    page: int
    anchor: str
    paragraph: int
    text: str
    key: str


def flatten(text: str) -> str:
    """Text with the layout undone: line-end hyphenation joined, whitespace one space, NFKC."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").replace("\u200b", "")
    if "-\n" in text:
        text = _HYPHEN_BREAK.sub("", text)
    return _SPACES.sub(" ", text).strip()


def _lines(doc: Document) -> Iterator[tuple[int, str, str]]:
    """Every line of the document with its page number and label; "" marks a paragraph break."""
    for page in doc.pages:
        lines = page.text.split("\n")
        # Running page numbers at a page's top or bottom are not text.
        while lines and _PAGE_NUMBER_LINE.match(lines[-1]):
            lines.pop()
        while lines and _PAGE_NUMBER_LINE.match(lines[0]):
            lines.pop(0)
        for line in lines:
            yield page.number, page.label, line


def _paragraphs(doc: Document) -> Iterator[tuple[int, str, str]]:
    """(page, page label, raw text) of each paragraph, in reading order across pages."""
    current: list[str] = []
    start: tuple[int, str] = (1, "1")
    for number, label, line in _lines(doc):
        stripped = line.strip()
        if not stripped or _BLOCK_START.match(stripped):
            if current:
                yield (*start, "\n".join(current))
                current = []
            if not stripped:
                continue
        if not current:
            start = (number, label)
        current.append(stripped)
    if current:
        yield (*start, "\n".join(current))


def blocks(doc: Document) -> list[Block]:
    """The document's blocks in reading order (see the module's docstring)."""
    out: list[Block] = []
    per_page: dict[int, int] = {}
    for ordinal, (number, label, raw) in enumerate(_paragraphs(doc)):
        text = flatten(raw)
        if not text:
            continue
        per_page[number] = per_page.get(number, 0) + 1
        found = _LEADING_ANCHOR.match(text)
        if found:
            anchor = found["anchor"].strip()
            text = text[found.end() :]
        elif doc.kind == "docx" or doc.kind == "transcript":
            anchor = label
        else:
            anchor = f"p. {label} ¶ {per_page[number]}"
        if _TABLE_RULE.match(text) or text in _READER_MARKERS:
            continue
        if text.startswith("Table:") and doc.kind == "docx":
            text = text.removeprefix("Table:").strip()
        for piece in sentences(text):
            key = comparable(piece)
            if key:
                out.append(Block(number, anchor, ordinal, piece, key))
    return out


def comparable(text: str) -> str:
    """The key of a block's text: without the markup only some kinds of file write."""
    key = _MARKUP_PREFIX.sub("", text)
    if "|" in key:
        key = " ".join(cell.strip() for cell in key.split("|") if cell.strip())
    return _SPACES.sub(" ", _EMPHASIS.sub("", key.translate(_TYPOGRAPHY))).strip()


def sentences(text: str) -> list[str]:
    """A paragraph's sentences; a piece too short to stand alone (a clause number,
    "12. Delivery.") stays with the sentence after it."""
    out: list[str] = []
    carry = ""
    for piece in _SENTENCE_END.split(text):
        piece = f"{carry} {piece}" if carry else piece
        if len(piece) < MIN_SENTENCE_CHARS:
            carry = piece
            continue
        carry = ""
        out.append(piece)
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out
