"""Page ranges and printed page labels: one grammar for ``--pages``, the app and refusals.

Grammar (``parse_range``):

* ``1-120``, ``5-``, ``-10``, ``7``: physical pages, counted from 1 (digits only);
* ``iv..xii``, ``A-1..A-9``, ``iv..``: a range of printed labels, inclusive, with ``..``;
* ``A-2``, ``iv``: a single printed label names that page.

Digits with a dash are always physical: a label that looks like that (``1-2`` in a manual
numbered by chapter) is named as a one-label range, ``1-2..1-2``. Labels match
case-insensitively (``IV`` is ``iv``); ``#12`` is physical page 12 anywhere a label goes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from desktop.documents.model import Page

_PHYSICAL = re.compile(r"^(\d*)\s*[-–]\s*(\d*)$")
_NUMBER = re.compile(r"^#?(\d+)$")
_INDEXED = re.compile(r"^(?:(?P<label>.*?)\s*)?\(?#(?P<number>\d+)\)?$")
# A range separator inside a citation: "12-14", "12–14", "iv..xii", "3 to 5".
_SEPARATOR = re.compile(r"\s*(?:\.\.|–|—|-|\bto\b)\s*")
_SIGN_SPACE = re.compile(r"\s*,?\s*([§¶])\s*")
_TIMESTAMP = re.compile(r"^(?:(\d{1,2}):)?(\d{1,2}):(\d{2})(?:[.,]\d+)?")


@dataclass(frozen=True)
class PageRange:
    """An inclusive range of 1-based page numbers."""

    first: int
    last: int

    def describe(self, page_count: int) -> str:
        """Human words, e.g. "pages 1-120 of 300"."""
        if self.first == 1 and self.last == page_count:
            return f"all {page_count} pages"
        return f"pages {self.first}-{self.last} of {page_count}"


class PageRangeError(ValueError):
    """A page range that names no pages; the message says which and what exists."""


def label_key(label: str) -> str:
    """The form labels are compared in: NFKC, case-folded, single spaces, no spaces around
    § and ¶ (``§ 4.2, ¶ 3`` matches ``§4.2 ¶3``)."""
    key = " ".join(unicodedata.normalize("NFKC", label).casefold().split())
    return _SIGN_SPACE.sub(r"\1", key) if ("§" in key or "¶" in key) else key


def _seconds(label: str) -> int | None:
    match = _TIMESTAMP.match(label.strip())
    if not match:
        return None
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


# Finds the page of an anchor that is not a page label (a Word paragraph inside a section).
AnchorResolver = Callable[[str], int | None]


class LabelIndex:
    """Printed label -> page number for one document's pages (or a selection of them).

    ``anchors`` resolves what labels do not: the anchors a document kind puts inside its
    pages (a Word paragraph ``§ 4.2 ¶ 3`` on the page labelled ``§ 4.2``).
    """

    def __init__(self, pages: Sequence[Page], anchors: AnchorResolver | None = None) -> None:
        self.pages = list(pages)
        self._anchors = anchors
        self._by_number = {p.number: p for p in self.pages}
        self._by_label: dict[str, int] = {}
        for page in self.pages:
            self._by_label.setdefault(label_key(page.label), page.number)
        self._positions = {p.number: i for i, p in enumerate(self.pages)}
        # Transcript sections are labelled by their start time; a cited moment inside one
        # resolves to it.
        times = [(_seconds(p.label), p.number) for p in self.pages]
        self._times = sorted((s, n) for s, n in times if s is not None)

    def label_of(self, number: int) -> str:
        """The printed label of a page number, or ``#n`` if there is no such page."""
        page = self._by_number.get(number)
        return page.label if page else f"#{number}"

    def resolve(self, label: str) -> int | None:
        """The page a printed label names (``iv``, ``A-2``, ``#5``, ``1 (#5)``), or None."""
        text = label.strip()
        indexed = _INDEXED.match(text)
        if indexed:
            number = int(indexed["number"])
            return number if number in self._by_number else None
        found = self._by_label.get(label_key(text))
        if found is not None:
            return found
        if self._anchors is not None:
            found = self._anchors(text)
            if found is not None and found in self._by_number:
                return found
        seconds = _seconds(text) if self._times else None
        if seconds is not None and seconds >= self._times[0][0]:
            return [n for s, n in self._times if s <= seconds][-1]
        return None

    def span(self, first: int, last: int) -> tuple[int, ...]:
        """Page numbers from one page to another, inclusive, in document order."""
        a, b = self._positions[first], self._positions[last]
        if b < a:
            a, b = b, a
        return tuple(p.number for p in self.pages[a : b + 1])

    def resolve_range(self, text: str) -> tuple[int, ...]:
        """The pages a citation part names: one label (``A-2``) or a range (``3-5``, ``iv..x``).

        A whole label wins over a range, so ``A-2`` is the page labelled A-2, not A to 2.
        The empty tuple means nothing matched; a range with one unknown end gives the other
        (but never a hyphenated label's first half).
        """
        single = self.resolve(text)
        if single is not None:
            return (single,)
        ends: tuple[int, ...] = ()
        # Unambiguous separators first, then hyphens at each position ("A-1-A-3").
        splits = sorted(_SEPARATOR.finditer(text), key=lambda m: m.group(0).strip() == "-")
        for match in splits:
            left, right = text[: match.start()].strip(), text[match.end() :].strip()
            if not left or not right:
                continue
            a, b = self.resolve(left), self.resolve(right)
            if a is not None and b is not None:
                return self.span(a, b)
            # "110-125" past the end still names 110; "A-9" is no page, not annex page "A".
            hyphen = match.group(0).strip() == "-"
            if hyphen and not (left.isdigit() and right.isdigit()):
                continue
            if not ends and (a is not None or b is not None):
                ends = tuple(n for n in (a, b) if n is not None)
        return ends


def _labels_hint(index: LabelIndex) -> str:
    if not index.pages:
        return "the document has no pages"
    first, last = index.pages[0], index.pages[-1]
    if first.label == str(first.number) and last.label == str(last.number):
        return f"pages run from 1 to {len(index.pages)}"
    return (
        f"{len(index.pages)} pages, printed labels {first.label} to {last.label}; "
        f"physical pages are 1-{len(index.pages)}"
    )


def parse_range(text: str, pages: Sequence[Page] | LabelIndex) -> PageRange:
    """Parse a page range in the grammar above; raise PageRangeError naming what exists."""
    index = pages if isinstance(pages, LabelIndex) else LabelIndex(pages)
    raw = text.strip()
    count = len(index.pages)
    if not raw:
        raise PageRangeError(f"page range {text!r} is empty ({_labels_hint(index)})")
    physical = _PHYSICAL.match(raw)
    number = _NUMBER.match(raw)
    if number or (physical and (physical[1] or physical[2])):
        if number:
            first = last = int(number[1])
        else:
            assert physical is not None
            first = int(physical[1]) if physical[1] else 1
            last = int(physical[2]) if physical[2] else count
        if first < 1 or last < first:
            raise PageRangeError(
                f"page range {text!r} is empty or starts before page 1 ({_labels_hint(index)})"
            )
        if first > count:
            raise PageRangeError(
                f"page range {text!r} starts after the last page ({_labels_hint(index)})"
            )
        return PageRange(first, min(last, count))
    if ".." in raw:
        left, right = (part.strip() for part in raw.split("..", 1))
        a = index.pages[0].number if not left and index.pages else _label(index, left, text)
        b = index.pages[-1].number if not right and index.pages else _label(index, right, text)
        if index.span(a, b)[0] != a:
            raise PageRangeError(
                f"page range {text!r} runs backwards: {left} comes after {right} "
                f"({_labels_hint(index)})"
            )
        return PageRange(a, b)
    page = _label(index, raw, text)
    return PageRange(page, page)


def _label(index: LabelIndex, label: str, text: str) -> int:
    number = index.resolve(label)
    if number is None:
        raise PageRangeError(
            f"page range {text!r}: no page is labelled {label!r} ({_labels_hint(index)}); "
            "use 1-120 for physical pages or iv..xii for printed labels"
        )
    return number


def format_range(
    pages: Sequence[Page] | LabelIndex, first: int, last: int, *, labels: bool = False
) -> str:
    """A range in the grammar above that ``parse_range`` reads back as ``first``-``last``.

    Physical numbers by default (``1-120``, what the CLI suggests); with ``labels``, printed
    labels (``iv..xii``, ``A-2``) when they name those pages unambiguously.
    """
    index = pages if isinstance(pages, LabelIndex) else LabelIndex(pages)
    physical = f"{first}-{last}"
    if not labels:
        return physical
    a, b = index.label_of(first), index.label_of(last)
    if index.resolve(a) != first or index.resolve(b) != last or ".." in a + b:
        return physical
    text = a if first == last else f"{a}..{b}"
    try:
        parsed = parse_range(text, index)
    except PageRangeError:
        return physical
    return text if parsed == PageRange(first, last) else f"{a}..{b}"


def describe(pages: Sequence[Page] | LabelIndex, selected: PageRange) -> str:
    """Which pages a range covers, for people and the prompt: "pages 4-12 of 300 (iv to xii)"."""
    index = pages if isinstance(pages, LabelIndex) else LabelIndex(pages)
    count = len(index.pages)
    if selected.first == 1 and selected.last == count:
        return f"all {count} pages"
    a, b = index.label_of(selected.first), index.label_of(selected.last)
    where = f"page {selected.first}" if selected.first == selected.last else None
    where = where or f"pages {selected.first}-{selected.last}"
    text = f"{where} of {count}"
    if (a, b) != (str(selected.first), str(selected.last)):
        text += f" (printed {a})" if selected.first == selected.last else f" (printed {a} to {b})"
    return text
