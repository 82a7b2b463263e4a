"""How a document's pages are laid out in the prompt, with an anchor before each page.

This text is the cacheable prefix: it must depend only on the pages, never on the time,
the question or settings, so every question about the same pages shares it byte for byte.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from desktop.documents.model import Page

DOCUMENT_OPEN = "<document>"
DOCUMENT_CLOSE = "</document>"


def anchor(page: Page, ambiguous: bool = False) -> str:
    """The marker put before a page: its printed label, plus the index when labels repeat."""
    if ambiguous:
        return f"[Page {page.label} (#{page.number})]"
    return f"[Page {page.label}]"


def document_block(title: str, pages: Sequence[Page]) -> str:
    """The whole document as one block: title line, then every page behind its anchor."""
    counts = Counter(p.label for p in pages)
    parts = [DOCUMENT_OPEN, f"Title: {title}" if title else "Title: (untitled)"]
    for page in pages:
        parts.append(anchor(page, counts[page.label] > 1))
        text = page.text.strip()
        parts.append(text if text else "(no text on this page)")
    parts.append(DOCUMENT_CLOSE)
    return "\n".join(parts)
