"""Showing a batch of answer events: text deltas joined, each kind rendered once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop.answering.events import AnswerDelta, ReasoningDelta
from desktop.ui.answer_view import AnswerView


def show_batch(batch: list[Any], view: AnswerView, other: Callable[[Any], None]) -> int:
    """Render ``batch`` into ``view`` (``other`` takes the events that are not text, in
    order); the number of text deltas it held."""
    answer: list[str] = []
    reasoning: list[str] = []
    deltas = 0

    def flush() -> None:
        if reasoning:
            view.append_reasoning("".join(reasoning))
            reasoning.clear()
        if answer:
            view.append_answer("".join(answer))
            answer.clear()

    for event in batch:
        if isinstance(event, AnswerDelta):
            if reasoning:
                flush()
            answer.append(event.text)
            deltas += 1
        elif isinstance(event, ReasoningDelta):
            if answer:
                flush()
            reasoning.append(event.text)
            deltas += 1
        else:
            flush()
            other(event)
    flush()
    return deltas
