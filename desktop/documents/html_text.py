"""The paragraphs of an HTML fragment (a Word document's imported HTML part), in order.

Parsed with the standard library's ``html.parser``: it knows no DTDs, so nothing in the
part can declare or expand entities (only HTML's own character references are read).
Scripts, styles and comments are dropped; headings keep their level; a table row
becomes ``| a | b |``.
"""

from __future__ import annotations

from html.parser import HTMLParser

_BLOCKS = frozenset(
    {
        "p",
        "div",
        "li",
        "dt",
        "dd",
        "blockquote",
        "pre",
        "section",
        "article",
        "header",
        "footer",
        "address",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "tr",
        "table",
        "ul",
        "ol",
        "dl",
        "br",
        "hr",
        "title",
        "caption",
        "figcaption",
    }
)
_SKIPPED = frozenset({"script", "style", "head", "template", "noscript", "object", "iframe"})
_HEADINGS = {f"h{n}": n - 1 for n in range(1, 7)}


class _Paragraphs(HTMLParser):
    """Collects (heading level or None, text) per block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int | None, str]] = []
        self.parts: list[str] = []
        self.cells: list[str] | None = None
        self.heading: int | None = None
        self.skipping = 0

    def flush(self) -> None:
        text = " ".join("".join(self.parts).split())
        self.parts = []
        if self.cells is not None:
            if text:
                self.cells.append(text)
            return
        if text:
            self.found.append((self.heading, text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skipping += 1
        elif tag in ("td", "th"):
            self.flush()
        elif tag == "tr":
            self.flush()
            self.cells = []
        elif tag in _BLOCKS:
            self.flush()
            self.heading = _HEADINGS.get(tag)
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.parts.append(f" {alt} ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag in ("td", "th"):
            self.flush()
        elif tag == "tr":
            self.flush()
            row, self.cells = self.cells or [], None
            if row:
                self.found.append(
                    (None, "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
                )
        elif tag in _BLOCKS:
            self.flush()
            self.heading = None

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_paragraphs(html: str) -> list[tuple[int | None, str]]:
    """(heading level 0-5 or None, text) of every block of ``html`` with text."""
    parser = _Paragraphs()
    parser.feed(html)
    parser.close()
    parser.flush()
    if parser.cells:
        parser.found.append((None, "| " + " | ".join(parser.cells) + " |"))
    return parser.found
