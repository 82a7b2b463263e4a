"""Typed events yielded while answering; the CLI and the GUI consume the same stream."""

from __future__ import annotations

from dataclasses import dataclass, field

from desktop.answers import StoredAnswer


@dataclass(frozen=True)
class Sent:
    """The request is on its way; the server now prefills ``prompt_tokens`` tokens."""

    prompt_tokens: int
    context_length: int
    max_tokens: int
    model: str
    first_page: int
    last_page: int
    page_count: int
    warnings: list[str] = field(default_factory=list)
    # Longdoc's own count, and the server's when it was asked to count (--check-tokens);
    # ``prompt_tokens`` is the larger, which the budget used.
    local_tokens: int = 0
    server_tokens: int | None = None
    # Pages of the range the answer cannot use (damaged, or scanned for a server that
    # reads no images), and the warnings about them that belong to the document.
    unread_pages: list[int] = field(default_factory=list)
    document_warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's thinking (``reasoning_content``)."""

    text: str


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of the answer (``content``)."""

    text: str


@dataclass(frozen=True)
class Usage:
    """Token usage reported by the server; ``cached_tokens`` is None when not reported."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True)
class Finished:
    """The stream ended normally."""

    finish_reason: str  # "stop" | "length" | "abort" | ...
    ttft_s: float | None
    total_s: float


@dataclass(frozen=True)
class Stored:
    """The final answer as saved (or found) in the store; always the last event."""

    answer: StoredAnswer
    from_cache: bool
    thread_id: int | None = None  # the thread the answer is a turn of (None: not a turn)


StreamEvent = ReasoningDelta | AnswerDelta | Usage | Finished
Event = Sent | StreamEvent | Stored
