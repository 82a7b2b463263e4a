"""The prompt: fixed instructions and the whole document first, the question last.

Layout (why): the system message holds the instructions and the document, the user
message holds only the question. Everything up to the end of the document is therefore
byte-identical for every question about the same pages, so SGLang's radix cache can reuse
it; and the split falls on a special token (``<|im_end|>``), so the exact token count of
the prompt is the cached count of the system part plus a small count of the question.
Nothing here may depend on the time, the question or the history.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

# PageRange lives with the page-range grammar; re-exported for the prompt's callers.
from desktop.answering.pages import PageRange as PageRange
from desktop.documents import tokens
from desktop.documents.layout import document_block, neutralize
from desktop.documents.model import Document

# Bump whenever SYSTEM_PROMPT or the layout changes: cached answers are keyed on it.
PROMPT_VERSION = "1"

SYSTEM_PROMPT = """\
You are Longdoc, an assistant that answers questions about one document. The complete \
document follows between <document> and </document>; each page starts with a marker like \
[Page 12] that gives the page's printed label.

Rules:
- Answer only from the document. If the document does not contain the answer, say so.
- Cite the pages you rely on right after each claim, in the form [p. 12] or [pp. 12-14], \
using the printed label from the page markers.
- When you quote, copy the words exactly, in double quotes, followed by the citation: \
"exact words" [p. 12].
- Answer in the language of the question. Use Markdown for structure."""

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"


def full_range(doc: Document) -> PageRange:
    """The range covering every page."""
    return PageRange(1, max(len(doc.pages), 1))


def system_message(doc: Document, pages: PageRange) -> str:
    """Instructions plus the document's selected pages: the cacheable prefix."""
    selected = doc.select(pages.first, pages.last)
    title = doc.title
    if (pages.first, pages.last) != (1, len(doc.pages)):
        # The model must know it sees an excerpt, or it will claim the rest does not exist.
        title = f"{title} (excerpt: {pages.describe(len(doc.pages))})"
    return f"{SYSTEM_PROMPT}\n\n{document_block(title, selected)}"


def build_messages(
    doc: Document,
    pages: PageRange,
    question: str,
    history: Sequence[dict[str, str]] = (),
) -> list[dict[str, str]]:
    """The chat messages sent to the server; a thread's earlier turns go after the document."""
    return [
        {"role": "system", "content": system_message(doc, pages)},
        *history,
        {"role": "user", "content": neutralize(question.strip())},
    ]


def render_chat(messages: list[dict[str, str]], thinking: bool) -> str:
    """The text the Qwen3.5 chat template renders for plain system/user messages."""
    # The real template trims each message's content.
    out = [f"{IM_START}{m['role']}\n{m['content'].strip()}{IM_END}\n" for m in messages]
    out.append(f"{IM_START}assistant\n")
    out.append("<think>\n" if thinking else "<think>\n\n</think>\n\n")
    return "".join(out)


_prefix_counts: dict[tuple[str, int, int, str], int] = {}
_prefix_lock = threading.Lock()


def count_prompt_tokens(
    doc: Document,
    pages: PageRange,
    question: str,
    thinking: bool,
    history: Sequence[dict[str, str]] = (),
) -> int:
    """Exact prompt size as the server will tokenize it (template and earlier turns included)."""
    key = (doc.sha256, pages.first, pages.last, PROMPT_VERSION)
    with _prefix_lock:
        prefix = _prefix_counts.get(key)
    if prefix is None:
        system = render_chat([{"role": "system", "content": system_message(doc, pages)}], True)
        # render_chat appends a generation prompt; count only the system turn.
        system_turn = system[: system.rindex(f"{IM_START}assistant\n")]
        prefix = len(tokens.encode_with_special(system_turn))
        with _prefix_lock:
            _prefix_counts[key] = prefix
    # Earlier turns are rendered as Qwen3.5's template renders turns before the last
    # question: plain content, no reasoning (see desktop/answering/threads.py).
    rest = render_chat(
        [*history, {"role": "user", "content": neutralize(question.strip())}], thinking
    )
    return prefix + len(tokens.encode_with_special(rest))
