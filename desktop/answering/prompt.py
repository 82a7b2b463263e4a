"""The prompt: fixed instructions and the document first, the question last.

Layout (why): the system message holds the instructions and the selected pages, the user
message holds the question (and, for a page range, a note saying which pages are shown).
Everything up to the end of the system turn is therefore byte-identical for every
question about the same pages, thinking on or off, question or summary, so SGLang's radix
cache reuses it; and since the range note sits in the user turn, pages 1..b of a range
are a byte-identical prefix of the whole document's prompt and any range shares the
instructions and the title line. The exact prompt size is the stored per-page counts
plus small counts of the instructions, the title and the user turn: asking about a stored
document never encodes the document again. Nothing here may depend on the time or the
history.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

# PageRange lives with the page-range grammar; re-exported for the prompt's callers.
from desktop.answering.pages import PageRange as PageRange
from desktop.answering.pages import describe
from desktop.documents import tokens
from desktop.documents.layout import (
    DOCUMENT_CLOSE,
    LAYOUT_VERSION,
    block_from_pieces,
    block_head,
    defuse,
    page_pieces,
    page_token_counts,
)
from desktop.documents.model import Document

if TYPE_CHECKING:
    from desktop.answering.sets import DocumentSet

# Bump whenever SYSTEM_PROMPT, the user turn or the layout changes: cached answers are
# keyed on it.
PROMPT_VERSION = f"3.{LAYOUT_VERSION}"

SYSTEM_PROMPT = """\
You are Longdoc, an assistant that answers questions about one document. The document's \
text follows between <document> and </document>; each page starts with a marker like \
[Page 12] that gives the page's printed label. When the question says that only some \
pages are shown, the other pages exist but you cannot see them.

Rules:
- Answer only from the document. If the document does not contain the answer, say so.
- Cite the pages you rely on right after each claim, in the form [p. 12] or [pp. 12-14], \
using the printed label from the page markers.
- When you quote, copy the words exactly, in double quotes, followed by the citation: \
"exact words" [p. 12].
- Answer in the language of the question. Use Markdown for structure."""

# A set of documents (see desktop/answering/sets.py). The instructions never name how many
# documents follow, so a set with a document appended keeps the earlier ones' prefix.
SET_PROMPT_VERSION = f"set1.{LAYOUT_VERSION}"

SET_SYSTEM_PROMPT = """\
You are Longdoc, an assistant that answers questions about several documents at once. Each \
document follows in its own block, between <document id="A"> and </document>, lettered A, B, \
C... in the order given, with its title. Inside a block each page starts with a marker like \
[Page 12] that gives the page's printed label; a Word file's paragraphs also carry anchors \
like [§ 4.2 ¶ 3] and a transcript's lines their time, like [00:41:12]. When the question says \
that only some pages of a document are shown, its other pages exist but you cannot see them.

Rules:
- Answer only from the documents. If they do not contain the answer, say so.
- Cite the document's letter and the pages you rely on right after each claim, in the form \
[A p. 12], [B pp. 12-14], [B § 4.2 ¶ 3] or [C 00:41:12], using the printed labels and anchors \
of that document.
- When you quote, copy the words exactly, in double quotes, followed by the citation of the \
document they come from: "exact words" [A p. 12].
- Answer in the language of the question. Use Markdown for structure."""

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"


def full_range(doc: Document) -> PageRange:
    """The range covering every page."""
    return PageRange(1, max(len(doc.pages), 1))


def is_whole(doc: Document, pages: PageRange) -> bool:
    """True when the range is the whole document."""
    return (pages.first, pages.last) == (1, max(len(doc.pages), 1))


def system_message(doc: Document, pages: PageRange) -> str:
    """Instructions plus the document's selected pages: the cacheable prefix."""
    pieces = page_pieces(doc.pages)[pages.first - 1 : pages.last]
    return f"{SYSTEM_PROMPT}\n\n{block_from_pieces(doc.title, pieces)}"


def range_note(doc: Document, pages: PageRange) -> str:
    """For a page range, the line that tells the model it sees an excerpt ("" for all pages)."""
    if is_whole(doc, pages):
        return ""
    # The model must know it sees an excerpt, or it will claim the rest does not exist.
    # The labels come from the document: defused like everything else it supplies.
    shown = defuse(describe(doc.pages, pages), inline=True)
    return f"(Only {shown} are shown. The other pages exist but are not included.)"


def user_message(doc: Document, pages: PageRange, question: str) -> str:
    """The user turn: the range note, if any, then the question."""
    text = defuse(question.strip())
    note = range_note(doc, pages)
    return f"{note}\n\n{text}" if note else text


def conversation(
    doc: Document,
    pages: PageRange,
    question: str,
    history: Sequence[dict[str, str]] = (),
) -> list[dict[str, str]]:
    """The messages after the system turn: a thread's earlier turns, then the question.

    The range note belongs to the first question of a conversation, as it was sent then,
    so a follow-up's earlier turns continue the first prompt byte for byte.
    """
    return _conversation(range_note(doc, pages), question, history)


def _conversation(
    note: str, question: str, history: Sequence[dict[str, str]]
) -> list[dict[str, str]]:
    """A conversation's messages with the range note on its first question."""
    turns = [dict(m) for m in history]
    if not turns:
        text = defuse(question.strip())
        return [{"role": "user", "content": f"{note}\n\n{text}" if note else text}]
    if note:
        turns[0]["content"] = f"{note}\n\n{turns[0]['content']}"
    return [*turns, {"role": "user", "content": defuse(question.strip())}]


def build_messages(
    doc: Document,
    pages: PageRange,
    question: str,
    history: Sequence[dict[str, str]] = (),
) -> list[dict[str, str]]:
    """The chat messages sent to the server; a thread's earlier turns go after the document."""
    return [
        {"role": "system", "content": system_message(doc, pages)},
        *conversation(doc, pages, question, history),
    ]


# What Qwen3.5's chat template writes for an image part (its <|image_pad|> stands for all
# of the image's patch tokens, which the server expands).
IMAGE_MARKUP = "<|vision_start|><|image_pad|><|vision_end|>"


def render_chat(messages: Sequence[Mapping[str, Any]], thinking: bool) -> str:
    """The text Qwen3.5's chat template renders for Longdoc's messages (system, user, and a
    thread's earlier assistant answers; content a string or text and image parts).

    Checked byte for byte against the real template (tests/unit/answering/test_chat_template.py).
    """
    out = []
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            content = "".join(
                IMAGE_MARKUP if part.get("type") == "image_url" else str(part.get("text", ""))
                for part in content
            )
        # The real template trims each message's content.
        out.append(f"{IM_START}{message['role']}\n{content.strip()}{IM_END}\n")
    out.append(f"{IM_START}assistant\n")
    out.append("<think>\n" if thinking else "<think>\n\n</think>\n\n")
    return "".join(out)


# Where every question's user turn starts: the cacheable prefix ends right after it.
USER_TURN_OPEN = f"{IM_START}user\n"


def cacheable_prefix(doc: Document, pages: PageRange) -> str:
    """The rendered prompt shared by every question about these pages, through the user
    turn's opening: what a warm-up sends, so the server keeps its state exactly there."""
    system = f"{IM_START}system\n{system_message(doc, pages)}{IM_END}\n"
    return system + USER_TURN_OPEN


@functools.lru_cache(maxsize=256)
def _head_tokens(title: str) -> int:
    """Tokens of the system turn before the first page (instructions, tag, title line)."""
    return len(
        tokens.encode_with_special(f"{IM_START}system\n{SYSTEM_PROMPT}\n\n{block_head(title)}")
    )


@functools.lru_cache(maxsize=1)
def _tail_tokens() -> int:
    """Tokens of the system turn after the last page."""
    return len(tokens.encode_with_special(f"{DOCUMENT_CLOSE}{IM_END}\n"))


def system_turn_tokens(doc: Document, pages: PageRange) -> int:
    """Exact tokens of the rendered system turn, from the per-page counts (no re-encoding)."""
    counts = page_token_counts(doc)
    return _head_tokens(doc.title) + sum(counts[pages.first - 1 : pages.last]) + _tail_tokens()


def prefix_tokens(doc: Document, pages: PageRange) -> int:
    """Exact tokens of :func:`cacheable_prefix`."""
    return system_turn_tokens(doc, pages) + len(tokens.encode_with_special(USER_TURN_OPEN))


def count_prompt_tokens(
    doc: Document,
    pages: PageRange,
    question: str,
    thinking: bool,
    history: Sequence[dict[str, str]] = (),
) -> int:
    """Exact prompt size as the server will tokenize it (template and earlier turns included).

    Encodes only the instructions, the title, the range note, earlier turns and the
    question; the document's part comes from ``doc.page_tokens`` (counted at ingestion and
    stored). Earlier turns are rendered as Qwen3.5's template renders turns before the last
    question: plain content, no reasoning (see desktop/answering/threads.py).
    """
    rest = render_chat(conversation(doc, pages, question, history), thinking)
    return system_turn_tokens(doc, pages) + len(tokens.encode_with_special(rest))


# --- a set of documents -------------------------------------------------------------------


def set_system_message(docset: DocumentSet) -> str:
    """Instructions plus every document's block, in order: a set's cacheable prefix."""
    blocks = []
    for m in docset.members:
        pieces = page_pieces(m.document.pages)[m.pages.first - 1 : m.pages.last]
        blocks.append(block_from_pieces(m.document.title, pieces, m.letter))
    return f"{SET_SYSTEM_PROMPT}\n\n" + "\n".join(blocks)


def set_range_note(docset: DocumentSet) -> str:
    """For documents asked about in part, the line naming what is shown ("" when all is)."""
    parts = [
        f"of document {m.letter}, {defuse(describe(m.document.pages, m.pages), inline=True)}"
        for m in docset.members
        if not m.whole
    ]
    if not parts:
        return ""
    shown = "; ".join(parts)
    return f"(Only some pages are shown: {shown}. The other pages exist but are not included.)"


def set_conversation(
    docset: DocumentSet, question: str, history: Sequence[dict[str, str]] = ()
) -> list[dict[str, str]]:
    """The messages after a set's system turn (earlier turns, then the question)."""
    return _conversation(set_range_note(docset), question, history)


def build_set_messages(
    docset: DocumentSet, question: str, history: Sequence[dict[str, str]] = ()
) -> list[dict[str, str]]:
    """The chat messages for a question about a set of documents."""
    return [
        {"role": "system", "content": set_system_message(docset)},
        *set_conversation(docset, question, history),
    ]


def set_cacheable_prefix(docset: DocumentSet) -> str:
    """The rendered prompt every question about the set shares, through the user turn."""
    return f"{IM_START}system\n{set_system_message(docset)}{IM_END}\n{USER_TURN_OPEN}"


@functools.lru_cache(maxsize=1)
def _set_instructions_tokens() -> int:
    """Tokens of a set's system turn before its first document (the instructions)."""
    return len(tokens.encode_with_special(f"{IM_START}system\n{SET_SYSTEM_PROMPT}\n\n"))


@functools.lru_cache(maxsize=256)
def _set_head_tokens(letter: str, title: str) -> int:
    """Tokens of the first document's block head (after the instructions' paragraph break)."""
    return len(tokens.encode_with_special(block_head(title, letter)))


@functools.lru_cache(maxsize=256)
def _joint_tokens(letter: str, title: str) -> int:
    """Tokens between one document's last page and the next one's first: close, open, title."""
    return len(tokens.encode_with_special(f"{DOCUMENT_CLOSE}\n{block_head(title, letter)}"))


def document_share(docset: DocumentSet, letter: str) -> int:
    """Tokens one document of the set takes in the prompt (its block), from stored counts."""
    member = docset.member(letter)
    assert member is not None
    counts = page_token_counts(member.document)
    pages = sum(counts[member.pages.first - 1 : member.pages.last])
    title = member.document.title
    if member is docset.members[0]:
        return _set_head_tokens(letter, title) + pages
    return _joint_tokens(letter, title) + pages


def set_system_turn_tokens(docset: DocumentSet) -> int:
    """Exact tokens of a set's rendered system turn, from the per-page counts (no re-encoding).

    Every joint (a head before ``[Page``, a close before ``<document``) falls where the
    pre-tokenizer always splits, so the sum is exact (tests/unit/answering/test_sets.py checks it).
    """
    shares = sum(document_share(docset, m.letter) for m in docset.members)
    return _set_instructions_tokens() + shares + _tail_tokens()


def set_prefix_tokens(docset: DocumentSet) -> int:
    """Exact tokens of :func:`set_cacheable_prefix`."""
    return set_system_turn_tokens(docset) + len(tokens.encode_with_special(USER_TURN_OPEN))


def count_set_prompt_tokens(
    docset: DocumentSet,
    question: str,
    thinking: bool,
    history: Sequence[dict[str, str]] = (),
) -> int:
    """Exact prompt size of a question about a set (template and earlier turns included)."""
    rest = render_chat(set_conversation(docset, question, history), thinking)
    return set_system_turn_tokens(docset) + len(tokens.encode_with_special(rest))
