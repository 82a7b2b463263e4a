"""Stored answers made by hand, for tests of what shows or uses them (no store, no server)."""

from __future__ import annotations

from typing import Any

from desktop.answering import AnswerKey, AnswerStatus, StoredAnswer

# The figures an answer may lack (a failed or cached one): none unless a test gives them.
_FIGURES = ("error", "prompt_tokens", "completion_tokens", "cached_tokens", "ttft_s", "total_s")


def stored_answer(answer_id: int = 1, key: AnswerKey | None = None, **given: Any) -> StoredAnswer:
    """A complete answer ``A<id>`` to ``key`` (by default "Q?" about pages 1-3 of "sha"),
    with no figures; ``given`` sets any other field."""
    key = key or AnswerKey("sha", "Q?", "m", "1", False, 1, 3, 100)
    fields: dict[str, Any] = {
        **key.key_values(),
        **dict.fromkeys(_FIGURES),
        "id": answer_id,
        "answer": f"A{answer_id}",
        "reasoning": "",
        "finish_reason": "stop",
        "status": AnswerStatus.COMPLETE,
        "created_at": 0.0,
    }
    return StoredAnswer(**{**fields, **given})
