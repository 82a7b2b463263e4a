"""How a document's pages are laid out in the prompt, with an anchor before each page.

This text is the cacheable prefix: it must depend only on the pages, never on the time,
the question or settings, so every question about the same pages shares it byte for byte.

The block is built from pieces that always meet at a pre-tokenizer boundary (right after a
newline that is followed by ``[`` or ``<``), so its exact token count is the sum of the
pieces' counts: the head (``<document>`` and the title line), one piece per page (anchor,
text, newline) and the tail (``</document>``). A page range is the head, the pages of the
range and the tail: pages 1..b of any prompt are a byte-identical prefix of the whole
document's, and the per-page counts stored at ingestion give any range's count without
encoding the document again (tests/unit/documents/test_layout.py proves the sums exact).

Everything from a document or its metadata (page text, page labels, titles, outline
entries, file names, speaker names) goes through :func:`defuse` before it reaches the
prompt: nothing a document says can end a chat turn, fake a page anchor or close the
document block.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from desktop.documents.model import Document, Page

# Bump whenever the block's bytes change for the same pages: stored per-page counts and
# cached answers are keyed on it.
LAYOUT_VERSION = "2"

DOCUMENT_OPEN = "<document>"
DOCUMENT_CLOSE = "</document>"
NO_TEXT = "(no text on this page)"
UNTITLED = "(untitled)"

# A page label longer than this is not a printed page number: cut it (with an ellipsis).
LABEL_MAX = 40
TITLE_MAX = 200

_ZWSP = "\u200b"

# Qwen3.5's special tokens written out as text (e.g. "<|im_end|>", "<think>"), and the
# block's own tags. A server's Hugging Face tokenizer would read the former inside a
# document as real control tokens (a document could end the system turn or fake a reply),
# and a "</document>" line would end the app's block early. A zero-width space after "<"
# keeps them visible but ordinary, and makes our token count agree with the server's.
_TAG_LOOKALIKE = re.compile(
    r"<(?=\|[a-z_0-9]+\|>|/?(?:think|tool_call|tool_response|tts_pad|tts_text_\w+)>"
    r"|\s*/?\s*document\b)",
    re.IGNORECASE,
)
# A line that looks like a page anchor: a document must not fake another page.
_ANCHOR_LOOKALIKE = re.compile(r"^(\s*)\[(?=\s*page\b)", re.IGNORECASE | re.MULTILINE)
# Looked for first: a search that starts at each "[" only, where the one above tries every
# line start (a filled form's page has "[Field: ...]" on most lines: 20 us a page).
_BRACKET_PAGE = re.compile(r"\[\s*page\b", re.IGNORECASE)
# C0/C1 controls except tab and newline, and the noncharacters U+FFFE/U+FFFF.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]")
# What may not appear inside an anchor or a one-line field: brackets end the anchor.
_INLINE_BRACKETS = str.maketrans({"[": "(", "]": ")"})


def defuse(text: str, *, inline: bool = False) -> str:
    """Make document-supplied text safe to put into the prompt; the one place that does it.

    Drops control characters, defuses special-token and ``<document>`` look-alikes and lines
    that look like page anchors. With ``inline`` (labels, titles, outline entries, file and
    speaker names) the result is also one line with no square brackets, so it cannot break
    the ``[Page …]`` anchor or the title line.
    """
    text = _CONTROL.sub("", text) if not text.isprintable() else text
    if inline:
        text = " ".join(text.split()).translate(_INLINE_BRACKETS)
    elif "[" in text and _BRACKET_PAGE.search(text):
        text = _ANCHOR_LOOKALIKE.sub(r"\1[" + _ZWSP, text)
    if "<" in text:
        text = _TAG_LOOKALIKE.sub("<" + _ZWSP, text)
    return text


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def prompt_label(label: str) -> str:
    """A page label as the anchor shows it (defused, one line, at most LABEL_MAX chars)."""
    return _shorten(defuse(label, inline=True), LABEL_MAX) or "?"


def ambiguous_labels(pages: Sequence[Page]) -> set[str]:
    """Labels printed on more than one page: their anchors also carry the page index."""
    counts = Counter(p.label for p in pages)
    return {label for label, n in counts.items() if n > 1}


def anchor(page: Page, ambiguous: bool = False) -> str:
    """The marker put before a page: its printed label, plus the index when labels repeat."""
    label = prompt_label(page.label)
    if ambiguous:
        return f"[Page {label} (#{page.number})]"
    return f"[Page {label}]"


def block_head(title: str, letter: str = "") -> str:
    """The block's opening: the tag and the title line (ends with a newline).

    A document of a set carries its letter in the tag, ``<document id="B">``.
    """
    shown = _shorten(defuse(title, inline=True), TITLE_MAX) or UNTITLED
    tag = f'<document id="{letter}">' if letter else DOCUMENT_OPEN
    return f"{tag}\nTitle: {shown}\n"


def page_piece(page: Page, ambiguous: bool = False) -> str:
    """One page as laid out: anchor line, defused text, newline."""
    text = defuse(page.text.strip()).strip()
    return f"{anchor(page, ambiguous)}\n{text or NO_TEXT}\n"


def page_pieces(pages: Sequence[Page]) -> list[str]:
    """Every page's piece; label ambiguity is judged over ``pages`` (the whole document)."""
    repeated = ambiguous_labels(pages)
    return [page_piece(p, p.label in repeated) for p in pages]


def block_from_pieces(title: str, pieces: Sequence[str], letter: str = "") -> str:
    """The block for some pages' pieces (a range is a slice of the document's pieces)."""
    return block_head(title, letter) + "".join(pieces) + DOCUMENT_CLOSE


def document_block(title: str, pages: Sequence[Page]) -> str:
    """The whole document as one block: title line, then every page behind its anchor."""
    return block_from_pieces(title, page_pieces(pages))


def measure(doc: Document) -> None:
    """Count the document's block exactly: one count per page piece, and their total."""
    from desktop.documents import tokens  # lazy: the vocabulary loads only to count

    doc.page_tokens = tokens.count_many(page_pieces(doc.pages))
    doc.tokens = (
        tokens.count(block_head(doc.title)) + sum(doc.page_tokens) + tokens.count(DOCUMENT_CLOSE)
    )
    doc.layout_version = LAYOUT_VERSION


def counts_current(doc: Document) -> bool:
    """True when ``doc.page_tokens`` were counted for this layout (e.g. loaded from the store)."""
    return doc.layout_version == LAYOUT_VERSION and len(doc.page_tokens) == len(doc.pages)


def page_token_counts(doc: Document) -> list[int]:
    """Per-page token counts, counted now only if the document has none for this layout."""
    if not counts_current(doc):
        measure(doc)
    return doc.page_tokens
