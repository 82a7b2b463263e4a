"""Typed events yielded by the streaming client; the CLI and the GUI consume the same stream."""

from __future__ import annotations

from dataclasses import dataclass


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
class Waiting:
    """Sent once the request is accepted and again while waiting for the first token."""

    elapsed_s: float
    prompt_tokens: int


@dataclass(frozen=True)
class Finished:
    """The stream ended normally."""

    finish_reason: str  # "stop" | "length" | "abort" | ...
    ttft_s: float | None
    total_s: float


Event = ReasoningDelta | AnswerDelta | Usage | Waiting | Finished
