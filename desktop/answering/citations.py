"""Page citations in answers, and quotes checked against the document's text.

The one citation grammar (``find_citations``) and label index (``PageIndex``) that the CLI,
the answer view and the document view share. The model cites printed labels (see the
prompt): ``[p. 12]``, ``[p 12]``, ``[P. 12]``, ``[page 12]``, ``[pp. 3-5]``, ``[pp. 3, 7]``,
``[p. iv]``, ``[p. A-2]`` (an annex page, not "page A"), ``[p. 1 (#5)]`` (repeated labels),
and bare anchors: a transcript's moment ``[00:41:12]``, a Word paragraph ``[§ 4.2 ¶ 3]``.
Labels resolve case-insensitively. In an answer about a set of documents each citation
starts with the document's letter: ``[A p. 12]``, ``[B pp. 3-5]``, ``[B § 4.2 ¶ 3]``,
``[C 00:41:12]``; the same grammar reads both forms.

A quoted passage (``"..."`` right before a citation) is looked up in the document: verified
on a cited page, found on another page, or not found. Matching forgives what extraction
does to text (line breaks, hyphenation, ligatures, curly quotes, repeated spaces, Unicode
compatibility forms) but the words must be contiguous and in order, so a "quote" stitched
from scattered words is never verified.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from desktop.answering.pages import AnchorResolver, LabelIndex
from desktop.documents.anchors import anchor_resolver
from desktop.documents.model import Document, Page

__all__ = [  # CitationCheck and QuoteStatus live with the answer model (desktop.answers)
    "CHECK_VERSION",
    "CITATION_PATTERN",
    "CheckedCitations",
    "CitationCheck",
    "CitationRef",
    "PageIndex",
    "QuoteCheck",
    "QuoteStatus",
    "answer_checks",
    "as_quote_checks",
    "check_answer",
    "check_citations",
    "check_set_answer",
    "check_set_citations",
    "current_checks",
    "find_citations",
    "index_for",
    "normalize",
    "normalize_words",
    "set_answer_checks",
    "set_indexes",
]
from desktop.answers import CheckedCitations, CitationCheck, QuoteStatus, StoredAnswer

if TYPE_CHECKING:
    from desktop.answering.sets import DocumentSet

# One label: no spaces or brackets, optionally "(#n)" for a repeated label.
_LABEL = r"[^\s\[\](),;]{1,24}(?:\s*\(#\d{1,6}\))?"
_PART = rf"{_LABEL}(?:\s*(?:-|–|—|\.\.|to)\s*{_LABEL})?"
_BODY = rf"{_PART}(?:\s*(?:,|;|&|and)\s*{_PART})*"
# Regex source of one citation, with no capturing groups: the Markdown writer embeds it.
# Bare anchors, one each: a transcript moment [00:41:12], a Word paragraph [§ 4.2 ¶ 3].
_ANCHOR = (
    r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
    r"|§\s*[\w.-]{1,20}(?:\s*,?\s*¶\s*\d{1,6})?|¶\s*\d{1,6}"
)
_UNLETTERED = rf"(?:(?i:pages?|pp?)(?:\.\s*|\s+){_BODY}|{_ANCHOR})"
# A document's letter (a set's citations): "[B p. 4]", "[C 00:41:12]", also "[B, p. 4]".
_LETTER = r"[A-Z](?:\s+|,\s*)"
CITATION_PATTERN = rf"\[(?:{_LETTER})?{_UNLETTERED}\]"
_CITATION = re.compile(CITATION_PATTERN)
_LETTERED = re.compile(rf"\[(?P<letter>[A-Z])(?:\s+|,\s*)(?={_UNLETTERED}\]$)")
_PREFIX = re.compile(r"\[(?:pages?|pp?)(?:\.\s*|\s+)", re.IGNORECASE)
_LIST_SEPARATOR = re.compile(r"\s*(?:,|;|&|\band\b)\s*")
_QUOTE = re.compile(r"[\"“„«](?P<text>[^\"“”„«»\n]{1,600})[\"”“»]")
# What may stand between a quote and its citation: '"..." [p. 3]', '"...", [p. 3]'.
_GAP = re.compile(r"^[\s,.;:(–—-]{0,4}$")
MIN_QUOTE_WORDS = 3
# Bump when matching changes: citations stored with older answers are checked again.
CHECK_VERSION = 1


@dataclass(frozen=True)
class CitationPart:
    """One label or range inside a citation (``12``, ``3-5``, ``A-2``) at ``start:end``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class CitationRef:
    """A citation at ``start:end`` of a text; ``label`` is what it cites (``3, 7``)."""

    start: int
    end: int
    text: str
    label: str
    parts: tuple[CitationPart, ...]
    document: str | None = None  # the letter of the document cited, in a set's answer


def find_citations(text: str) -> list[CitationRef]:
    """Every citation in a text, with the span of each cited label for links."""
    refs = []
    for match in _CITATION.finditer(text):
        whole = match.group(0)
        lettered = _LETTERED.match(whole)
        # A set's letter is skipped: the rest reads as an unlettered citation.
        skip = lettered.end() - 1 if lettered else 0
        inner = "[" + whole[skip + 1 :]
        prefix = _PREFIX.match(inner)
        offset = (prefix.end() if prefix else 1) + skip
        body_start = match.start() + offset
        body = whole[offset:-1]
        bounds = [0]
        if prefix:  # a bare anchor is one part even with a comma: [§ 4.2, ¶ 3]
            for separator in _LIST_SEPARATOR.finditer(body):
                bounds += [separator.start(), separator.end()]
        bounds.append(len(body))
        parts = []
        for a, b in zip(bounds[::2], bounds[1::2], strict=True):
            piece = body[a:b]
            a += len(piece) - len(piece.lstrip())
            b -= len(piece) - len(piece.rstrip())
            if b > a:
                parts.append(CitationPart(body_start + a, body_start + b, body[a:b]))
        letter = lettered["letter"] if lettered else None
        refs.append(
            CitationRef(match.start(), match.end(), whole, body.strip(), tuple(parts), letter)
        )
    return refs


# Punctuation outside ASCII that extraction and models swap freely: word separators.
_SEPARATORS = "“”‘’„‚«»‹›–—―…•·\u00a0\u2009\u202f\u2007\u3000"
# A hyphen, with a line break after it: a word split at a line end. Hyphens go entirely, so
# "agree-\nment" = "agreement" and "well-\nknown" = "well-known" = "wellknown".
_HYPHEN_BREAK = re.compile(r"-[ \t]*\r?\n[ \t]*")
_SPACES = re.compile(rb"  +")
# Bytes: ASCII letters and digits (lower-cased), UTF-8 bytes of other letters and NUL stay;
# ASCII punctuation and whitespace become spaces.
_BYTE_TABLE = bytes(
    (b | 0x20 if 65 <= b <= 90 else b) if (chr(b).isalnum() or b >= 128 or b == 0) else 32
    for b in range(256)
)


def normalize(text: str) -> bytes:
    """Text as lower-case words separated by single spaces (UTF-8), forgiving PDF noise."""
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)  # ligatures (ﬁ) and full-width forms
    return _words(text).strip()


def _words(text: str) -> bytes:
    """``normalize`` after NFKC; NUL survives (it separates pages in the index).

    Written for speed (a million characters in about 20 ms): whole-text str.replace and
    bytes.translate run in C, where a regex over every word or a loop per page would not.
    """
    text = text.casefold()
    if not text.isascii():
        text = text.replace("\u00ad", "").replace("\u200b", "").replace("\u2010", "-")
        for separator in _SEPARATORS:
            if separator in text:
                text = text.replace(separator, " ")
    if "-" in text:
        text = _HYPHEN_BREAK.sub("", text).replace("-", "")
    data = text.encode("utf-8", "replace").translate(_BYTE_TABLE)
    return _SPACES.sub(b" ", data)


def normalize_words(text: str) -> str:
    """The words ``normalize`` keeps, as text."""
    return normalize(text).decode("utf-8", "replace")


class PageIndex(LabelIndex):
    """Labels (see ``LabelIndex``) plus the normalised text of every page, built once."""

    def __init__(self, pages: Sequence[Page], anchors: AnchorResolver | None = None) -> None:
        super().__init__(pages, anchors)
        self._text: bytes | None = None
        self._starts: list[int] = []
        self._lock = threading.Lock()

    def _build(self) -> bytes:
        with self._lock:
            if self._text is None:
                texts = []
                for page in self.pages:
                    text = page.text.replace("\x00", " ")
                    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
                        text = unicodedata.normalize("NFKC", text)
                    texts.append(text)
                # All pages at once, NUL between them: one pass of each step, not one a page.
                chunks = [chunk.strip() for chunk in _words("\x00".join(texts)).split(b"\x00")]
                # " page1 page2 ... ": one string, so a quote may run over a page break.
                starts = []
                offset = 0
                for chunk in chunks:
                    starts.append(offset)
                    offset += len(chunk) + 1
                self._starts = starts
                self._text = b" " + b" ".join(chunks) + b" "
            return self._text

    def find(self, quote: str, limit: int = 64) -> tuple[int, ...]:
        """The pages a passage is on (contiguous words, in order), in document order."""
        needle = normalize(quote)
        if not needle:
            return ()
        text = self._build()
        pattern = b" " + needle + b" "
        found: list[int] = []
        position = text.find(pattern)
        while position >= 0 and limit > 0:
            first = bisect_right(self._starts, position) - 1
            last = bisect_right(self._starts, position + len(pattern) - 2) - 1
            for i in range(max(first, 0), last + 1):
                number = self.pages[i].number
                if number not in found:
                    found.append(number)
            position = text.find(pattern, position + 1)
            limit -= 1
        return tuple(found)

    def locate(self, number: int, quote: str) -> tuple[int, int] | None:
        """Where a passage stands in a page's own text, ``(start, end)``, for highlighting.

        Matched as ``find`` matches (the span runs from its first word's first character
        to its last word's last); None when the page does not hold all of it.
        """
        page = self._by_number.get(number)
        return None if page is None else locate_in(page.text, quote)

    def pages_for(self, ref: CitationRef) -> tuple[int, ...]:
        """The pages a citation names, in the order cited, each once."""
        pages: list[int] = []
        for part in ref.parts:
            pages.extend(n for n in self.resolve_range(part.text) if n not in pages)
        return tuple(pages)


def locate_in(text: str, quote: str, *, spaces: bool = True) -> tuple[int, int] | None:
    """Where ``quote`` stands in ``text`` (``(start, end)``, as ``PageIndex.locate``).

    ``spaces=False`` matches whatever the spaces: for a PDF's own characters where its
    words run together (the stored text had its spaces restored, pdf_spacing.py)."""
    needle = normalize(quote)
    if not needle:
        return None
    data, starts, ends = _mapped_words(text)
    if spaces:
        position = (b" " + data + b" ").find(b" " + needle + b" ")
        if position < 0:
            return None
        return starts[position], ends[position + len(needle) - 1]
    kept = [i for i, byte in enumerate(data) if byte != 32]
    compact = needle.replace(b" ", b"")
    position = bytes(data[i] for i in kept).find(compact)
    if position < 0:
        return None
    return starts[kept[position]], ends[kept[position + len(compact) - 1]]


def _mapped_words(text: str) -> tuple[bytes, list[int], list[int]]:
    """``normalize(text)`` built piece by piece, with the source span of every byte.

    Slow (a Python loop) but only ever run on one page, when a quote is shown.
    """
    out = bytearray()
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        start = i
        i += 1
        while i < n and unicodedata.combining(text[i]):
            i += 1  # a letter with its combining marks composes as one (a + ̈ = ä)
        piece = text[start:i]
        if piece == "-":
            following = _HYPHEN_BREAK.match(text, start)
            i = following.end() if following else i
            continue
        if piece in ("\u00ad", "\u200b"):
            continue
        if piece.isascii():
            # Most characters: NFKC and the separators (none ASCII) change nothing; this
            # halves the time on a long page (the Compare window highlights one per click).
            piece = piece.lower().replace("-", "")
        else:
            piece = unicodedata.normalize("NFKC", piece).casefold().replace("-", "")
            for separator in _SEPARATORS:
                piece = piece.replace(separator, " ")
        for byte in piece.encode("utf-8", "replace").translate(_BYTE_TABLE):
            if byte == 32 and (not out or out[-1] == 32):
                continue
            out.append(byte)
            starts.append(start)
            ends.append(i)
    while out and out[-1] == 32:
        out.pop()
        starts.pop()
        ends.pop()
    return bytes(out), starts, ends


_cache: OrderedDict[tuple[str, int, int], PageIndex] = OrderedDict()
_cache_lock = threading.Lock()
CACHED_INDEXES = 4


def index_for(doc: Document, first: int = 1, last: int | None = None) -> PageIndex:
    """The index of a document's pages ``first..last``, built once and kept (a few)."""
    last = len(doc.pages) if last is None else last
    key = (doc.sha256, first, last)
    with _cache_lock:
        index = _cache.get(key)
        if index is not None:
            _cache.move_to_end(key)
            return index
    pages = doc.select(first, last) if key[1:] != (1, len(doc.pages)) else doc.pages
    index = PageIndex(pages, anchor_resolver(doc.kind, pages))
    with _cache_lock:
        _cache[key] = index
        while len(_cache) > CACHED_INDEXES:
            _cache.popitem(last=False)
    return index


def check_citations(answer: str, index: PageIndex, question: str = "") -> list[CitationCheck]:
    """Every citation in an answer and every quoted passage, checked, in answer order.

    A quote is a passage of at least ``MIN_QUOTE_WORDS`` words in double quotes; one that
    restates the question is not a claim about the document and is left out. A quote
    right before a citation is checked against the cited pages; a quote without one is
    verified if it is anywhere in the document.
    """
    checks = [
        _check(index, quote, ref, index.pages_for(ref) if ref is not None else ())
        for quote, ref in _pair(answer, question)
    ]
    checks.sort(key=lambda c: c.start)
    return checks


def _pair(answer: str, question: str) -> list[tuple[re.Match[str] | None, CitationRef | None]]:
    """Each citation with the quote right before it (if any), then the quotes left over."""
    asked = b" " + normalize(question) + b" " if question.strip() else b""
    quotes = []
    for match in _QUOTE.finditer(answer):
        words = normalize(match["text"])
        if words.count(b" ") + 1 < MIN_QUOTE_WORDS:
            continue
        if asked and b" " + words + b" " in asked:
            continue
        quotes.append(match)
    pairs: list[tuple[re.Match[str] | None, CitationRef | None]] = []
    used: set[int] = set()
    ending = {q.end(): q for q in quotes}
    for ref in find_citations(answer):
        quote = next(
            (
                ending[end]
                for end in range(ref.start, max(ref.start - 5, -1), -1)
                if end in ending and _GAP.match(answer[end : ref.start])
            ),
            None,
        )
        if quote is not None:
            used.add(quote.start())
        pairs.append((quote, ref))
    pairs.extend((q, None) for q in quotes if q.start() not in used)
    return pairs


def check_set_citations(
    answer: str, indexes: dict[str, PageIndex], question: str = ""
) -> list[CitationCheck]:
    """A set's answer checked: each quote against the pages of the document it cites.

    ``indexes`` maps each document's letter to its index, in set order. A quote found in
    another document of the set than the one cited is ``other_document`` (``found_in``
    says where); a citation without a letter counts only where its pages hold the quote;
    a quote without a citation is verified if it is in any document.
    """
    checks = []
    for quote, ref in _pair(answer, question):
        found_in = tuple(
            (letter, found)
            for letter, index in indexes.items()
            if quote is not None and (found := index.find(quote["text"]))
        )
        letter = ref.document if ref is not None else None
        if ref is not None and letter is None:
            letter = _unlettered_document(ref, quote, indexes, found_in)
        index = indexes.get(letter) if letter is not None else None
        pages = index.pages_for(ref) if index is not None and ref is not None else ()
        found = index.find(quote["text"]) if index is not None and quote is not None else ()
        status = _status(quote, ref, found, pages)
        if quote is not None and found_in and not found:
            if ref is None:
                status, letter, found = QuoteStatus.VERIFIED, found_in[0][0], found_in[0][1]
            else:
                status = QuoteStatus.OTHER_DOCUMENT
        entry = _entry(quote, ref, pages, status, found)
        checks.append(replace(entry, document=letter, found_in=found_in or None, in_set=True))
    checks.sort(key=lambda c: c.start)
    return checks


def _unlettered_document(
    ref: CitationRef,
    quote: re.Match[str] | None,
    indexes: dict[str, PageIndex],
    found_in: tuple[tuple[str, tuple[int, ...]], ...],
) -> str | None:
    """The document a citation without a letter can only mean, if any: the one whose cited
    pages hold the quote, or (unquoted) the only one where its label names a page."""
    if quote is not None:
        for letter, found in found_in:
            if set(found) & set(indexes[letter].pages_for(ref)):
                return letter
        return None
    named = [letter for letter, index in indexes.items() if index.pages_for(ref)]
    return named[0] if len(named) == 1 else None


def _status(
    quote: re.Match[str] | None,
    ref: CitationRef | None,
    found: tuple[int, ...],
    pages: tuple[int, ...],
) -> QuoteStatus:
    """What a quote's pages and the cited pages say."""
    if quote is None:
        return QuoteStatus.UNQUOTED
    if not found:
        return QuoteStatus.NOT_FOUND
    if ref is None or set(found) & set(pages):
        return QuoteStatus.VERIFIED  # a quote without a citation only has to exist
    return QuoteStatus.OTHER_PAGE


def _check(
    index: PageIndex, quote: re.Match[str] | None, ref: CitationRef | None, pages: tuple[int, ...]
) -> CitationCheck:
    """One entry: a citation with or without its quote, or a quote without a citation."""
    found = index.find(quote["text"]) if quote is not None else ()
    return _entry(quote, ref, pages, _status(quote, ref, found, pages), found)


def _entry(
    quote: re.Match[str] | None,
    ref: CitationRef | None,
    pages: tuple[int, ...],
    status: QuoteStatus,
    found: tuple[int, ...],
) -> CitationCheck:
    start = quote.start() if quote is not None else (ref.start if ref else 0)
    return CitationCheck(
        start=start,
        end=ref.end if ref is not None else (quote.end() if quote is not None else start),
        cite_start=ref.start if ref is not None else None,
        cite_end=ref.end if ref is not None else None,
        quote_start=quote.start() if quote is not None else None,
        quote_end=quote.end() if quote is not None else None,
        label=ref.label if ref is not None else "",
        pages=pages,
        quote=quote["text"] if quote is not None else None,
        status=status,
        found_on=found or None,
    )


@dataclass(frozen=True)
class QuoteCheck:
    """A quoted passage, the pages it cites, and where (if anywhere) it really is."""

    start: int
    end: int
    quote: str
    cited: tuple[int, ...]
    status: QuoteStatus
    found_on: int | None


def as_quote_checks(checks: Sequence[CitationCheck]) -> list[QuoteCheck]:
    """The checks that have a quote, in the form of the app's quote line."""
    return [
        QuoteCheck(
            c.start,
            c.quote_end if c.quote_end is not None else c.end,
            c.quote,
            c.pages,
            c.status,
            _first_found(c),
        )
        for c in checks
        if c.quote is not None
    ]


def _first_found(check: CitationCheck) -> int | None:
    if not check.found_on:
        return None
    cited = [n for n in check.found_on if n in check.pages]
    return (cited or list(check.found_on))[0]


def check_answer(
    text: str, doc: Document, first: int, last: int, question: str = ""
) -> CheckedCitations:
    """An answer's citations checked against pages ``first..last`` of the document."""
    checks = check_citations(text, index_for(doc, first, last), question)
    return CheckedCitations(CHECK_VERSION, tuple(checks))


def current_checks(answer: StoredAnswer, doc: Document) -> CheckedCitations:
    """An answer's checked citations: as stored with it, else (checked by an older
    matcher, or never) checked now. Writes nothing: ``Answerer.ask`` stores them."""
    saved = answer.citations
    if saved is not None and saved.version == CHECK_VERSION:
        return saved
    return check_answer(answer.answer, doc, answer.first_page, answer.last_page, answer.question)


def answer_checks(answer: StoredAnswer, doc: Document) -> list[CitationCheck]:
    """``current_checks`` as a list."""
    return list(current_checks(answer, doc).items)


def set_indexes(docset: DocumentSet) -> dict[str, PageIndex]:
    """Each document's index over its asked pages, by letter, in set order."""
    return {m.letter: index_for(m.document, m.pages.first, m.pages.last) for m in docset.members}


def check_set_answer(text: str, docset: DocumentSet, question: str = "") -> CheckedCitations:
    """A set's answer's citations checked against each document's asked pages."""
    return CheckedCitations(
        CHECK_VERSION, tuple(check_set_citations(text, set_indexes(docset), question))
    )


def current_set_checks(answer: StoredAnswer, docset: DocumentSet) -> CheckedCitations:
    """``current_checks`` for a set's answer (writes nothing: ``Answerer.ask`` stores them)."""
    saved = answer.citations
    if saved is not None and saved.version == CHECK_VERSION:
        return saved
    return check_set_answer(answer.answer, docset, answer.question)


def set_answer_checks(answer: StoredAnswer, docset: DocumentSet) -> list[CitationCheck]:
    """``current_set_checks`` as a list."""
    return list(current_set_checks(answer, docset).items)
