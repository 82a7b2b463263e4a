"""A set of documents asked about together: lettered A, B, C... in the order given.

The letter is how the prompt, the citations (``[B p. 4]``), ``ask --json`` and the app name
a document of a set. A set is identified by its ordered documents and their page ranges
(``key``): the answer cache and threads of a set are keyed on it, as a single document's
are keyed on its sha256.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

from desktop.answering.pages import PageRange, parse_range
from desktop.documents.model import Document
from desktop.errors import UsageError, display_path

LETTERS = string.ascii_uppercase
MAX_DOCUMENTS = len(LETTERS)
# "--pages B:iv..xii": a letter and a colon, then the page-range grammar.
_LETTERED_RANGE = re.compile(r"^(?P<letter>[A-Z]):(?P<range>.*)$", re.DOTALL)
# Keys of sets start with this, so they never collide with a document's sha256.
SET_KEY_PREFIX = "set:"


@dataclass(frozen=True)
class Member:
    """One document of a set: its letter and the pages asked about."""

    letter: str
    document: Document
    pages: PageRange

    @property
    def whole(self) -> bool:
        """True when every page is asked about."""
        return (self.pages.first, self.pages.last) == (1, max(len(self.document.pages), 1))


@dataclass(frozen=True)
class DocumentSet:
    """Two or more documents, in order, each with its letter and page range."""

    members: tuple[Member, ...]

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for member in self.members:
            earlier = seen.get(member.document.sha256)
            if earlier is not None:
                raise UsageError(
                    f"{display_path(member.document.path)}: the same document is given twice "
                    f"({earlier} and {member.letter}); give each document once."
                )
            seen[member.document.sha256] = member.letter

    def __len__(self) -> int:
        return len(self.members)

    def member(self, letter: str) -> Member | None:
        """The member with this letter, if any."""
        return next((m for m in self.members if m.letter == letter), None)

    @property
    def documents(self) -> list[Document]:
        """The documents, in order."""
        return [m.document for m in self.members]

    @property
    def order_key(self) -> str:
        """The ordered documents alone (what ``--follow-up`` looks a set's threads up by)."""
        return ",".join(m.document.sha256 for m in self.members)

    @property
    def key(self) -> str:
        """The set's identity for the answer cache and threads: documents, order, ranges."""
        spec = [[m.document.sha256, m.pages.first, m.pages.last] for m in self.members]
        digest = hashlib.sha256(json.dumps(spec).encode()).hexdigest()
        return SET_KEY_PREFIX + digest

    @property
    def page_count(self) -> int:
        """Pages asked about over all documents."""
        return sum(m.pages.last - m.pages.first + 1 for m in self.members)

    def spec(self) -> list[dict[str, object]]:
        """What the store keeps to rebuild the set: each document's sha256 and range."""
        return [
            {
                "letter": m.letter,
                "sha256": m.document.sha256,
                "first": m.pages.first,
                "last": m.pages.last,
            }
            for m in self.members
        ]


def is_set_key(key: str) -> bool:
    """True for a set's key (as stored in ``document_sha`` columns)."""
    return key.startswith(SET_KEY_PREFIX)


def split_ranges(ranges: Sequence[str], count: int) -> dict[str, str]:
    """``--pages`` values of a set by letter: each must be ``X:RANGE`` naming a document.

    Raises UsageError for a bare range, a letter past the set, or a letter given twice.
    """
    by_letter: dict[str, str] = {}
    letters = LETTERS[:count]
    for text in ranges:
        match = _LETTERED_RANGE.match(text.strip())
        if match is None:
            raise UsageError(
                f"--pages {text}: with several documents each range names its document's "
                f"letter, e.g. --pages A:1-40 --pages B:iv..xii (documents are {_span(letters)})."
            )
        letter = match["letter"]
        if letter not in letters:
            raise UsageError(
                f"--pages {text}: there is no document {letter}; the set has "
                f"{count} documents, {_span(letters)}."
            )
        if letter in by_letter:
            raise UsageError(f"--pages {text}: document {letter} already has a range.")
        by_letter[letter] = match["range"]
    return by_letter


def _span(letters: str) -> str:
    return f"{letters[0]} to {letters[-1]}" if len(letters) > 2 else " and ".join(letters)


def build_set(documents: Sequence[Document], ranges: Sequence[str] = ()) -> DocumentSet:
    """The set of ``documents`` in order, with ``--pages X:RANGE`` ranges applied."""
    if len(documents) > MAX_DOCUMENTS:
        raise UsageError(
            f"A set holds at most {MAX_DOCUMENTS} documents (A to Z); {len(documents)} were given."
        )
    by_letter = split_ranges(ranges, len(documents))
    members = []
    for letter, doc in zip(LETTERS, documents, strict=False):
        text = by_letter.get(letter)
        if text is None:
            pages = PageRange(1, max(len(doc.pages), 1))
        else:
            try:
                pages = parse_range(text, doc.pages)
            except ValueError as exc:
                raise UsageError(f"{letter} ({display_path(doc.path)}): {exc}") from None
        members.append(Member(letter, doc, pages))
    return DocumentSet(tuple(members))


def restore_set(spec: Sequence[dict[str, object]], documents: dict[str, Document]) -> DocumentSet:
    """A set rebuilt from its stored ``spec`` and the documents by sha256."""
    members = []
    for item in spec:
        doc = documents[str(item["sha256"])]
        first, last = item["first"], item["last"]
        assert isinstance(first, int) and isinstance(last, int)
        members.append(Member(str(item["letter"]), doc, PageRange(first, last)))
    return DocumentSet(tuple(members))
