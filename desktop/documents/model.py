"""The document model every other part works with: pages with printed labels and text."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Page:
    """One page (or transcript section): 1-based ``number``, printed ``label``, extracted text."""

    number: int
    label: str
    text: str


@dataclass(frozen=True)
class OutlineEntry:
    """A bookmark from the PDF outline: nesting ``level`` (0 = top), title, 1-based page."""

    level: int
    title: str
    page: int | None


@dataclass
class Document:
    """An extracted document, identified by the SHA-256 of its bytes."""

    sha256: str
    path: str
    kind: str  # "pdf" | "text" | "markdown"
    title: str
    pages: list[Page]
    outline: list[OutlineEntry] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extractor: str = ""
    tokens: int = 0  # exact Qwen3.5 token count of the document as laid out in the prompt
    size_bytes: int = 0
    # Exact tokens of each page's piece of the prompt block (see documents.layout), valid
    # for ``layout_version``: a page range's prompt is counted from these, never re-encoded.
    page_tokens: list[int] = field(default_factory=list)
    layout_version: str = ""

    @property
    def chars(self) -> int:
        """Characters of extracted text over all pages."""
        return sum(len(p.text) for p in self.pages)

    @property
    def empty_pages(self) -> list[int]:
        """Page numbers without any text (image-only or blank pages)."""
        return [p.number for p in self.pages if not p.text.strip()]

    def select(self, first: int, last: int) -> list[Page]:
        """Pages ``first..last`` inclusive (1-based numbers)."""
        return [p for p in self.pages if first <= p.number <= last]
