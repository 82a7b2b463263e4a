"""What an answer is: its cache key, its status, its checked citations, and threads of them.

Plain values, no I/O and no Qt. They sit below both the store (which turns rows into them)
and the answering package (which makes them), so the layers stay one-way: documents and
these values -> store -> answering -> batch -> cli/ui. Their public home is
``desktop.answering`` (``from desktop.answering import StoredAnswer``), which re-exports
them; ``desktop.store.db`` and ``desktop.answering.citations`` re-export the names that
used to live there.

An answer is about an ordered set of documents: ``documents`` is a tuple, and a question
about one document is a set of one (``document_sha`` is the first, the store's column).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from typing import Any


class AnswerStatus(StrEnum):
    """Where an answer stands; the values are the store's ``answers.status`` strings.

    Only ``COMPLETE`` answers are turns of a thread and answer-cache hits. ``TRUNCATED``:
    the server stopped at the token limit (``finish_reason`` "length"), perhaps while the
    model was still reasoning, so the answer part may be empty.
    """

    RUNNING = "running"
    COMPLETE = "complete"
    TRUNCATED = "truncated"
    INCOMPLETE = "incomplete"  # stopped, interrupted, or the server aborted it
    FAILED = "failed"


class QuoteStatus(Enum):
    """What checking a citation found; the values are the strings ``ask --json`` prints."""

    VERIFIED = "verified"
    OTHER_PAGE = "other_page"
    NOT_FOUND = "not_found"
    UNQUOTED = "unquoted"
    OTHER_DOCUMENT = "other_document"  # a set's answer: the quote is in another document


@dataclass(frozen=True)
class CitationCheck:
    """A citation and the quote before it (either may be absent), and what checking found.

    ``start:end`` spans both in the answer; ``pages`` are the cited pages (empty when the
    label names no page, or for a quote without a citation); ``found_on`` are the pages
    the quote is on (None when unquoted or not found).
    """

    start: int
    end: int
    cite_start: int | None
    cite_end: int | None
    quote_start: int | None
    quote_end: int | None
    label: str
    pages: tuple[int, ...]
    quote: str | None
    status: QuoteStatus
    found_on: tuple[int, ...] | None
    # In a set's answer: the letter of the document the citation names (or the quote was
    # found in, for a quote without one), and every document the quote is in, with pages.
    document: str | None = None
    found_in: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    in_set: bool = False  # checked against a set: the JSON carries document and found_in

    def to_json(self) -> dict[str, Any]:
        """What ``ask --json`` prints: ``{"pages", "label", "quote", "status", "found_on"}``,
        and in a set's answer ``"document"`` (its letter) and ``"found_in"``."""
        data: dict[str, Any] = {
            "pages": list(self.pages),
            "label": self.label,
            "quote": self.quote,
            "status": self.status.value,
            "found_on": list(self.found_on) if self.found_on is not None else None,
        }
        if self.in_set:
            data["document"] = self.document
            data["found_in"] = self.found_in_json()
        return data

    def to_stored(self) -> dict[str, Any]:
        """The form kept in the answer's ``extra`` JSON (spans, then what was found)."""
        spans = ("start", "end", "cite_start", "cite_end", "quote_start", "quote_end")
        return {**{name: getattr(self, name) for name in spans}, **self.to_json()}

    def found_in_json(self) -> list[dict[str, Any]] | None:
        """``found_in`` as JSON: ``[{"document", "pages"}]`` (None when not found)."""
        if self.found_in is None:
            return None
        return [{"document": d, "pages": list(p)} for d, p in self.found_in]

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> CitationCheck:
        """Read back what ``to_stored`` wrote."""
        found = data.get("found_on")
        found_in = data.get("found_in")
        return cls(
            start=int(data["start"]),
            end=int(data["end"]),
            cite_start=data.get("cite_start"),
            cite_end=data.get("cite_end"),
            quote_start=data.get("quote_start"),
            quote_end=data.get("quote_end"),
            label=str(data.get("label", "")),
            pages=tuple(int(n) for n in data.get("pages", [])),
            quote=data.get("quote"),
            status=QuoteStatus(data["status"]),
            found_on=tuple(int(n) for n in found) if found is not None else None,
            document=data.get("document"),
            in_set="document" in data,
            found_in=(
                None
                if found_in is None
                else tuple(
                    (str(f["document"]), tuple(int(n) for n in f["pages"])) for f in found_in
                )
            ),
        )


@dataclass(frozen=True)
class CheckedCitations:
    """An answer's citations as checked by version ``version`` of the quote matcher."""

    version: int
    items: tuple[CitationCheck, ...]

    def to_stored(self) -> dict[str, Any]:
        """The ``extra["citations"]`` JSON form."""
        return {"version": self.version, "items": [c.to_stored() for c in self.items]}

    @classmethod
    def from_stored(cls, data: object) -> CheckedCitations | None:
        """What ``to_stored`` wrote; None when it is missing or not readable."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                int(data["version"]),
                tuple(CitationCheck.from_stored(item) for item in data["items"]),
            )
        except (KeyError, TypeError, ValueError):
            return None  # written by something else: checked again when needed


@dataclass(frozen=True)
class AnswerKey:
    """What makes two questions the same for the answer cache."""

    document_sha: str  # the first (for one document: the only) document asked about
    question: str
    model: str
    prompt_version: str
    thinking: bool
    first_page: int
    last_page: int
    max_tokens: int
    history: str = ""  # digest of the thread's earlier turns ("" = a first question)
    more_documents: tuple[str, ...] = ()  # a set's further documents, in order

    @property
    def documents(self) -> tuple[str, ...]:
        """Every document asked about, in order (a set of one for a single document)."""
        return (self.document_sha, *self.more_documents)

    @property
    def normalized_question(self) -> str:
        """Whitespace- and case-insensitive form, so "What is X?" == "what is  x?"."""
        return " ".join(self.question.split()).casefold()

    def key_values(self) -> dict[str, Any]:
        """The key's own fields by name (a ``StoredAnswer`` is built from them)."""
        return {f.name: getattr(self, f.name) for f in fields(AnswerKey)}


@dataclass(frozen=True, kw_only=True)
class StoredAnswer(AnswerKey):
    """One answer row, complete or not: its key (what was asked) and what came back."""

    id: int
    answer: str
    reasoning: str
    finish_reason: str | None
    status: AnswerStatus
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    ttft_s: float | None
    total_s: float | None
    created_at: float
    extra: dict[str, Any] = field(default_factory=dict)  # endpoint, pid, ... as stored
    citations: CheckedCitations | None = None  # None: not checked (yet)

    @property
    def key(self) -> AnswerKey:
        """What was asked: the answer-cache key it was stored under."""
        return AnswerKey(**self.key_values())

    @property
    def complete(self) -> bool:
        """Only complete answers are served from the cache and are turns of a thread."""
        return self.status is AnswerStatus.COMPLETE

    @property
    def truncated(self) -> bool:
        """The answer was cut at the token limit (``--max-tokens``)."""
        return self.status is AnswerStatus.TRUNCATED


@dataclass(frozen=True)
class Thread:
    """A conversation about one document's pages (or a set's): its complete answers,
    oldest first."""

    id: int
    document_sha: str
    first_page: int
    last_page: int
    turns: list[StoredAnswer] = field(default_factory=list)
    created_at: float = 0.0
    updated_at: float = 0.0
    more_documents: tuple[str, ...] = ()

    @property
    def documents(self) -> tuple[str, ...]:
        """Every document the thread is about, in order."""
        return (self.document_sha, *self.more_documents)
