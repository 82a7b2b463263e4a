"""Where an anchor the model cites lives: ``[00:41:12]``, ``[§ 4.2 ¶ 3]`` or a page label.

Transcripts and Word documents put an anchor before every line or paragraph (see
``transcript.py`` and ``docx.py``); a page's label is the anchor of its first line. The
citation code resolves what the model wrote inside the brackets with ``AnchorIndex``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from desktop.documents.docx import page_for_anchor
from desktop.documents.model import Page
from desktop.documents.transcript import page_for_time, parse_time

# Kinds whose page text carries line anchors. A PDF's "[1] Smith et al." is a reference,
# not an anchor, so PDFs and plain text resolve by page label only.
ANCHORED_KINDS = frozenset({"transcript", "docx"})
_LINE_ANCHOR = re.compile(r"^\[([^\[\]\n]{1,60})\] ", re.MULTILINE)


def anchor_key(text: str) -> str:
    """Spacing, commas and brackets ignored, case folded: ``[§4.2, ¶3]`` == ``§ 4.2 ¶ 3``."""
    return re.sub(r"[\s,\[\]]+", "", text).casefold()


class AnchorIndex:
    """Anchor -> page number for one document's pages."""

    def __init__(self, pages: Sequence[Page], kind: str) -> None:
        self.pages = list(pages)
        self.kind = kind
        self._pages: dict[str, int] = {}
        for page in self.pages:
            self._pages.setdefault(anchor_key(page.label), page.number)
            if kind in ANCHORED_KINDS:
                for match in _LINE_ANCHOR.finditer(page.text):
                    self._pages.setdefault(anchor_key(match.group(1)), page.number)

    def resolve(self, anchor: str) -> int | None:
        """The page holding ``anchor``; a transcript moment between lines finds its page."""
        found = self._pages.get(anchor_key(anchor))
        if found is not None:
            return found
        if self.kind == "transcript" and parse_time(anchor.strip()) is not None:
            return page_for_time(self.pages, anchor.strip())
        if self.kind == "docx":
            return page_for_anchor(self.pages, anchor)
        return None


def anchor_resolver(kind: str, pages: Sequence[Page]) -> Callable[[str], int | None] | None:
    """For ``LabelIndex``: finds the page of an anchor inside pages, for kinds that have them."""
    if kind not in ANCHORED_KINDS:
        return None
    return AnchorIndex(pages, kind).resolve
