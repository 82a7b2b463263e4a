"""Page citations in answers, and quotes checked against the document's text.

The model cites pages as ``[p. 12]`` or ``[pp. 12-14]`` (printed labels, see the prompt).
Each citation is resolved to page numbers; each quoted passage (``"..."`` followed by a
citation) is looked up in the cited pages' text, allowing for PDF noise (hyphenation at line
ends, ligatures, curly quotes, spacing) but requiring the words to be contiguous, so a "quote"
stitched from scattered words is not verified.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from desktop.documents.model import Page

# [p. 12], [p 12], [page 12], [pp. 12-14], [pp. 12–14], [p. iv (#5)], [p. 3, 7]
CITATION = re.compile(r"\[(?:pages?\s+|pp?\.\s*|pp?\s+)(?P<body>[^\[\]\n]{1,60}?)\]", re.IGNORECASE)
_INDEXED = re.compile(r"^(?P<label>.+?)\s*\(#(?P<number>\d+)\)$")
QUOTE = re.compile(r"[\"“„«](?P<text>[^\"“”„«»\n]{8,600})[\"”“»]")
MIN_QUOTE_WORDS = 3


@dataclass(frozen=True)
class Citation:
    """A citation at ``start:end`` of the answer, resolved to 1-based page numbers."""

    start: int
    end: int
    text: str
    pages: tuple[int, ...]

    @property
    def first_page(self) -> int | None:
        """The page a click should show."""
        return self.pages[0] if self.pages else None


class QuoteStatus(Enum):
    """What checking a quote found."""

    VERIFIED = "verified"
    OTHER_PAGE = "found on another page"
    NOT_FOUND = "not found"


@dataclass(frozen=True)
class QuoteCheck:
    """A quoted passage, the pages it cites, and where (if anywhere) it really is."""

    start: int
    end: int
    quote: str
    cited: tuple[int, ...]
    status: QuoteStatus
    found_on: int | None


class PageIndex:
    """Label lookup and normalised page text for one document's pages."""

    def __init__(self, pages: Sequence[Page]) -> None:
        self.pages = list(pages)
        self._by_label: dict[str, list[int]] = {}
        for page in self.pages:
            self._by_label.setdefault(_label_key(page.label), []).append(page.number)
        self._numbers = [p.number for p in self.pages]
        self._words: dict[int, str] = {}

    def resolve(self, label: str) -> int | None:
        """The page number for a printed label (or ``label (#n)``); None if unknown."""
        label = label.strip()
        indexed = _INDEXED.match(label)
        if indexed:
            number = int(indexed["number"])
            return number if number in self._numbers else None
        numbers = self._by_label.get(_label_key(label))
        return numbers[0] if numbers else None

    def span(self, first: str, last: str) -> tuple[int, ...]:
        """Page numbers from one label to another, inclusive, in document order."""
        a, b = self.resolve(first), self.resolve(last)
        if a is None or b is None:
            return tuple(n for n in (a, b) if n is not None)
        if b < a:
            a, b = b, a
        return tuple(n for n in self._numbers if a <= n <= b)

    def words(self, number: int) -> str:
        """A page's text as normalised words joined by single spaces (cached)."""
        if number not in self._words:
            page = next((p for p in self.pages if p.number == number), None)
            self._words[number] = normalize_words(page.text) if page else ""
        return self._words[number]


def _label_key(label: str) -> str:
    return label.strip().casefold()


def normalize_words(text: str) -> str:
    """Lower-case words only, robust to PDF extraction noise."""
    text = unicodedata.normalize("NFKC", text)  # ligatures (ﬁ) and full-width forms
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)  # hyphenated line breaks
    text = text.replace("\u200b", "").replace("\u00ad", "")
    words = re.findall(r"\w+", text.casefold())
    return " ".join(words)


def find_citations(answer: str, index: PageIndex) -> list[Citation]:
    """Every page citation in an answer, with the pages it resolves to."""
    result = []
    for match in CITATION.finditer(answer):
        pages: list[int] = []
        for part in re.split(r"\s*[,;]\s*", match["body"].strip()):
            bounds = re.split(r"\s*[-–—]\s*", part, maxsplit=1)
            if len(bounds) == 2 and bounds[0] and bounds[1]:
                found = index.span(bounds[0], bounds[1])
            else:
                number = index.resolve(part)
                found = (number,) if number is not None else ()
            pages.extend(n for n in found if n not in pages)
        result.append(Citation(match.start(), match.end(), match.group(0), tuple(pages)))
    return result


def check_quotes(answer: str, index: PageIndex) -> list[QuoteCheck]:
    """Check every quoted passage that is followed by a citation (or long enough alone)."""
    citations = find_citations(answer, index)
    checks = []
    for match in QUOTE.finditer(answer):
        words = normalize_words(match["text"])
        if len(words.split()) < MIN_QUOTE_WORDS:
            continue
        following = next((c for c in citations if 0 <= c.start - match.end() <= 3), None)
        cited = following.pages if following else ()
        status, found_on = QuoteStatus.NOT_FOUND, None
        hit = next((n for n in cited if _contains(index.words(n), words)), None)
        if hit is not None:
            status, found_on = QuoteStatus.VERIFIED, hit
        else:
            other = next(
                (p.number for p in index.pages if _contains(index.words(p.number), words)), None
            )
            if other is not None:
                status, found_on = QuoteStatus.OTHER_PAGE, other
                if not cited:
                    status = QuoteStatus.VERIFIED  # uncited but real
        checks.append(
            QuoteCheck(match.start(), match.end(), match["text"], cited, status, found_on)
        )
    return checks


def check_answer_quotes(answer: str, question: str, index: PageIndex) -> list[QuoteCheck]:
    """The answer's quote checks, minus quotes that restate the question.

    Quoting the question back is not a claim about the document.
    """
    asked = normalize_words(question)
    return [
        c for c in check_quotes(answer, index) if not _contains(asked, normalize_words(c.quote))
    ]


def _contains(haystack: str, needle: str) -> bool:
    """Whole-word containment of one normalised word sequence in another."""
    return f" {needle} " in f" {haystack} "
