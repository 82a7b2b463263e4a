"""Answers in tests: answerers on the test server (closed after each test), and stored
answers made by hand for tests of what shows or uses them."""

from __future__ import annotations

from typing import Any

from desktop.answering import AnswerKey, AnswerStatus, StoredAnswer
from desktop.answering.service import Answerer, Endpoint
from desktop.config import Settings
from desktop.store.db import Store
from tests.support.sglang_server import FakeSGLang

# Every answerer answerer_for made, closed after its test (an autouse fixture of
# tests/support/fixtures.py does it): an HTTP client left open is a socket the garbage
# collector closes later, with a ResourceWarning in whatever test runs then.
_OPEN: list[Answerer] = []


def answerer_for(
    server: FakeSGLang, store: Store, *, served: str = "", **settings: Any
) -> Answerer:
    """An answerer on ``server`` with its key, asking for the model ``served`` ("": the
    server's first), with default settings but for ``settings``."""
    endpoint = Endpoint(server.url, server.api_key or "", served)
    answerer = Answerer(store, endpoint, Settings(**settings))
    _OPEN.append(answerer)
    return answerer


def close_answerers() -> None:
    """Close the answerers ``answerer_for`` made."""
    while _OPEN:
        _OPEN.pop().close()


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
