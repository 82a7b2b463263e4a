"""Follow-up questions: a thread of earlier turns about one document (and page range).

The earlier turns go into the prompt *after* the document, as user and assistant messages,
so the instructions and the document stay a byte-identical prefix that the server's cache
reuses. Earlier answers are sent without their reasoning: Qwen3.5's chat template drops the
reasoning of assistant turns before the last question anyway, and sending it would only cost
tokens the template throws away. Only complete answers are turns; a stopped or failed answer
is not part of the conversation (asking again continues where the last complete turn ended).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from desktop.answers import StoredAnswer
from desktop.answers import Thread as Thread  # re-exported for the answering code's callers
from desktop.documents.layout import defuse


def history_messages(turns: Sequence[StoredAnswer]) -> list[dict[str, str]]:
    """Earlier turns as chat messages: each question, then its answer without reasoning."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        # Defused like the question: an answer quoting "<|im_end|>" must not end its turn.
        messages.append({"role": "user", "content": defuse(turn.question.strip())})
        messages.append({"role": "assistant", "content": defuse(turn.answer.strip())})
    return messages


def history_key(turns: Sequence[StoredAnswer]) -> str:
    """The answer-cache key part for the earlier turns ("" for a first question)."""
    if not turns:
        return ""
    pairs = [[t.question.strip(), t.answer.strip()] for t in turns]
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()
