"""How a document's pages are laid out in the prompt, with an anchor before each page.

This text is the cacheable prefix: it must depend only on the pages, never on the time,
the question or settings, so every question about the same pages shares it byte for byte.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from desktop.documents.model import Page

DOCUMENT_OPEN = "<document>"
DOCUMENT_CLOSE = "</document>"


# Qwen3.5's special tokens written out as text (e.g. "<|im_end|>", "<think>"). A server's
# Hugging Face tokenizer would read them inside a document as real control tokens: a
# document could end the system turn or fake a reply. A zero-width space after "<" keeps
# them visible but ordinary, and makes our token count agree with the server's.
_SPECIAL_LOOKALIKE = re.compile(
    r"<(?=\|[a-z_0-9]+\|>|/?(?:think|tool_call|tool_response|tts_pad|tts_text_\w+)>)"
)


def neutralize(text: str) -> str:
    """Defuse special-token look-alikes in document text."""
    return _SPECIAL_LOOKALIKE.sub("<\u200b", text) if "<" in text else text


def anchor(page: Page, ambiguous: bool = False) -> str:
    """The marker put before a page: its printed label, plus the index when labels repeat."""
    if ambiguous:
        return f"[Page {page.label} (#{page.number})]"
    return f"[Page {page.label}]"


def document_block(title: str, pages: Sequence[Page]) -> str:
    """The whole document as one block: title line, then every page behind its anchor."""
    counts = Counter(p.label for p in pages)
    parts = [DOCUMENT_OPEN, f"Title: {neutralize(title)}" if title else "Title: (untitled)"]
    for page in pages:
        parts.append(anchor(page, counts[page.label] > 1))
        text = neutralize(page.text.strip())
        parts.append(text if text else "(no text on this page)")
    parts.append(DOCUMENT_CLOSE)
    return "\n".join(parts)
