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

from desktop.answering.pages import PageRange
from desktop.answering.sets import SET_KEY_PREFIX, DocumentSet, Member
from desktop.answers import StoredAnswer
from desktop.answers import Thread as Thread  # re-exported for the answering code's callers
from desktop.documents.layout import defuse
from desktop.errors import UsageError


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


def thread_pages(thread: Thread, asked: PageRange | None, page_count: int) -> PageRange:
    """The pages a follow-up is about (``conversation.follow_up_pages``, the one rule)."""
    from desktop.answering.conversation import follow_up_pages

    return follow_up_pages(thread, asked, page_count)


def set_thread_key(docset: DocumentSet) -> str:
    """What a set's threads are stored under: its documents in order (not their ranges), so
    ``--follow-up`` finds the last thread on the same documents; the ranges stay the first
    turn's (see ``set_thread_ranges``)."""
    return SET_KEY_PREFIX + hashlib.sha256(docset.order_key.encode()).hexdigest()


def set_thread_ranges(thread: Thread) -> dict[str, tuple[int, int]]:
    """The pages each document of a set's thread is about, by letter (from its first turn)."""
    spec = thread.turns[0].extra.get("set", []) if thread.turns else []
    return {str(m["letter"]): (int(m["first"]), int(m["last"])) for m in spec}


def keep_set_ranges(thread: Thread, docset: DocumentSet, asked: bool) -> DocumentSet:
    """A follow-up's set: the thread's ranges; other ranges given (``asked``) are refused."""
    ranges = set_thread_ranges(thread)
    members = []
    for m in docset.members:
        first, last = ranges.get(m.letter, (m.pages.first, m.pages.last))
        pages = PageRange(first, last)
        if asked and pages != m.pages:
            raise UsageError(
                f"Thread {thread.id} is about {pages.describe(len(m.document.pages))} of "
                f"{m.letter}; a follow-up keeps the thread's pages. Ask without "
                "--follow-up/--thread to start a new thread about other pages."
            )
        members.append(Member(m.letter, m.document, pages))
    return DocumentSet(tuple(members))
