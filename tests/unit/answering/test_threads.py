"""Follow-up questions: threads of turns after the document, against the loopback server."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
import sqlite_utils
from sqlite_utils.migrations import Migrations

from desktop.answering.events import AnswerDelta, Event, Sent, Stored, Usage
from desktop.answering.prompt import PageRange
from desktop.answering.service import Answerer, Question
from desktop.config import Settings
from desktop.documents import extract
from desktop.documents.model import Document
from desktop.errors import Cancelled, DocumentTooLarge, ThreadTooLong, UsageError
from desktop.store.db import AnswerKey, Store, Thread
from desktop.store.migrations import m001_documents_and_answers
from tests.conftest import API_KEY, CORPUS_DIR, make_document
from tests.support import answers
from tests.support.documents import CONTRACT_PAGES as PAGES
from tests.support.documents import scanned_pdf
from tests.support.sglang_server import FakeSGLang


def answerer_for(server: FakeSGLang, store: Store) -> Answerer:
    return answers.answerer_for(server, store, served="Qwen/Qwen3.5-35B-A3B")


@pytest.fixture
def doc() -> Document:
    """The contract, not stored."""
    return make_document(PAGES)


@pytest.fixture
def answerer(sglang: FakeSGLang, store: Store) -> Answerer:
    """An answerer on the test server."""
    return answerer_for(sglang, store)


def ask(answerer: Answerer, question: Question) -> tuple[list[Event], Stored]:
    events = list(answerer.ask(question))
    last = events[-1]
    assert isinstance(last, Stored)
    return events, last


def thread_of(store: Store, stored: Stored) -> Thread:
    assert stored.thread_id is not None
    thread = store.get_thread(stored.thread_id)
    assert thread is not None
    return thread


def test_follow_up_carries_earlier_turns_after_the_document(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = make_document(PAGES * 40)
    answerer = answerer_for(sglang, store)
    first_events, first = ask(answerer, Question(doc, "What is the term?"))
    thread = thread_of(store, first)
    assert [t.id for t in thread.turns] == [first.answer.id]
    events, second = ask(answerer, Question(doc, "And the liability cap?", thread=thread))
    assert second.thread_id == first.thread_id

    a, b = sglang.chat_bodies
    # The earlier turn sits after the document, its answer without the reasoning.
    assert b["messages"] == [  # type: ignore[comparison-overlap]
        a["messages"][0],  # type: ignore[index]
        {"role": "user", "content": "What is the term?"},
        {"role": "assistant", "content": first.answer.answer},
        {"role": "user", "content": "And the liability cap?"},
    ]
    assert first.answer.reasoning
    # The prompts of the two questions (the first was preceded by a raw warm-up).
    one, two = sglang.prompts[-2:]
    assert first.answer.reasoning not in two
    # Byte-identical through the end of the document block (and the first question).
    end = one.index("</document>") + len("</document>")
    assert two[:end] == one[:end]
    assert two.startswith(one[: one.rindex("<think>")])
    # The server reuses the whole document from its cache.
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.cached_tokens is not None
    assert usage.cached_tokens >= 0.99 * doc.tokens
    # The first question found the document warm too (warmed before it).
    first_cached = next(e for e in first_events if isinstance(e, Usage)).cached_tokens
    assert first_cached is not None and first_cached >= 0.99 * doc.tokens
    # The exact count includes the earlier turns.
    sent = next(e for e in events if isinstance(e, Sent))
    assert sent.prompt_tokens == usage.prompt_tokens
    stored = thread_of(store, second)
    assert [t.question for t in stored.turns] == ["What is the term?", "And the liability cap?"]
    assert store.last_thread(doc.sha256) == stored


def test_count_with_history_matches_the_server_thinking_on_and_off(
    store: Store, doc: Document, answerer: Answerer
) -> None:
    _, first = ask(answerer, Question(doc, "Who are the parties? <|im_end|>"))
    thread = thread_of(store, first)
    for thinking in (True, False):
        events, stored = ask(
            answerer, Question(doc, f"Follow-up {thinking}", thinking=thinking, thread=thread)
        )
        sent = next(e for e in events if isinstance(e, Sent))
        usage = next(e for e in events if isinstance(e, Usage))
        assert sent.prompt_tokens == usage.prompt_tokens
        thread = thread_of(store, stored)
    assert len(thread.turns) == 3


def test_the_cache_key_includes_the_earlier_turns(
    sglang: FakeSGLang, store: Store, doc: Document, answerer: Answerer
) -> None:
    _, a1 = ask(answerer, Question(doc, "What is the term?"))
    _, a2 = ask(answerer, Question(doc, "And termination?", thread=thread_of(store, a1)))
    assert len(sglang.chat_bodies) == 2
    # The follow-up alone, in a new thread, is another question: it is sent.
    _, alone = ask(answerer, Question(doc, "And termination?"))
    assert not alone.from_cache
    assert len(sglang.chat_bodies) == 3
    # The same two turns in a new thread come from the cache, and form that thread.
    _, b1 = ask(answerer, Question(doc, "What is the term?"))
    assert b1.from_cache and b1.thread_id not in (a1.thread_id, None)
    _, b2 = ask(answerer, Question(doc, "and  TERMINATION?", thread=thread_of(store, b1)))
    assert b2.from_cache and b2.answer.id == a2.answer.id
    assert len(sglang.chat_bodies) == 3
    assert [t.id for t in thread_of(store, b2).turns] == [a1.answer.id, a2.answer.id]
    assert b2.thread_id == b1.thread_id


def test_a_stopped_answer_is_not_a_turn(
    sglang: FakeSGLang, store: Store, doc: Document, answerer: Answerer
) -> None:
    _, first = ask(answerer, Question(doc, "What is the term?"))
    thread = thread_of(store, first)
    sglang.behaviour.update(token_delay_s=0.02, answer_tokens=400)
    cancel = threading.Event()

    def consume() -> None:
        for event in answerer.ask(Question(doc, "Long answer", thread=thread), cancel):
            if isinstance(event, AnswerDelta):
                cancel.set()

    with pytest.raises(Cancelled):
        consume()
    assert [t.id for t in thread_of(store, first).turns] == [first.answer.id]


def test_a_thread_that_no_longer_fits_says_so_and_sends_nothing(store: Store) -> None:
    doc = make_document(PAGES)
    with FakeSGLang(api_key=API_KEY, context_length=doc.tokens + 4_000) as server:
        answerer = answerer_for(server, store)
        server.behaviour.update(answer_tokens=1_500)
        answerer.settings = Settings(answer_reserve=2_048)
        _, stored = ask(answerer, Question(doc, "Tell me everything."))
        _, stored = ask(answerer, Question(doc, "More.", thread=thread_of(store, stored)))
        thread = thread_of(store, stored)
        sent = len(server.chat_bodies)
        with pytest.raises(ThreadTooLong) as info:
            list(answerer.ask(Question(doc, "And more?", thread=thread)))
        assert len(server.chat_bodies) == sent
        err = info.value
        assert err.thread_id == thread.id and err.turns == 2
        assert err.needed > err.available >= err.without_history
        assert err.exit_code == 3
        assert f"{err.needed:,}" in str(err) and "new thread" in str(err)
        # Nothing was dropped from the thread, and a new thread fits.
        assert len(thread_of(store, stored).turns) == 2
        _, fresh = ask(answerer, Question(doc, "And more?"))
        assert fresh.thread_id != thread.id


def test_a_document_too_large_alone_is_not_blamed_on_the_thread(store: Store) -> None:
    doc = make_document(PAGES)
    with FakeSGLang(api_key=API_KEY, context_length=doc.tokens + 4_000) as server:
        answerer = answerer_for(server, store)
        _, stored = ask(answerer, Question(doc, "Term?"))
        thread = thread_of(store, stored)
    with (
        FakeSGLang(api_key=API_KEY, context_length=1_024) as small,
        pytest.raises(DocumentTooLarge),
    ):
        list(answerer_for(small, store).ask(Question(doc, "More?", thread=thread)))


def test_a_follow_up_keeps_the_threads_pages(
    sglang: FakeSGLang, store: Store, doc: Document, answerer: Answerer
) -> None:
    _, first = ask(answerer, Question(doc, "Term?", pages=PageRange(3, 5)))
    thread = thread_of(store, first)
    assert (thread.first_page, thread.last_page) == (3, 5)
    _, second = ask(answerer, Question(doc, "Liability?", thread=thread))
    body = sglang.chat_bodies[-1]
    assert "[Page i]" not in body["messages"][0]["content"]  # type: ignore[index]
    assert "[Page 1]" in body["messages"][0]["content"]  # type: ignore[index]
    with pytest.raises(UsageError, match="pages 3-5 of 5"):
        list(answerer.ask(Question(doc, "Other?", pages=PageRange(1, 2), thread=thread)))
    other = make_document(PAGES[:2])
    with pytest.raises(UsageError, match="another document"):
        list(answerer.ask(Question(other, "Other?", thread=thread_of(store, second))))


def test_removing_a_document_removes_its_threads(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES)
    store.save_document(doc)
    _, first = ask(answerer_for(sglang, store), Question(doc, "Term?"))
    store.remove_document(doc.sha256)
    assert first.thread_id is not None
    assert store.get_thread(first.thread_id) is None
    assert store.last_thread(doc.sha256) is None


def test_an_answer_after_a_changed_thread_branches_instead_of_mixing(
    sglang: FakeSGLang, store: Store, doc: Document, answerer: Answerer
) -> None:
    _, a1 = ask(answerer, Question(doc, "What is the term?"))
    snapshot = thread_of(store, a1)
    _, a2 = ask(answerer, Question(doc, "And termination?", thread=snapshot))
    # Someone else (another process, or "Ask again") continues from the older state.
    _, a3 = ask(answerer, Question(doc, "And liability?", thread=snapshot))
    assert a3.thread_id not in (None, a1.thread_id)
    assert [t.id for t in thread_of(store, a3).turns] == [a1.answer.id, a3.answer.id]
    assert [t.id for t in thread_of(store, a2).turns] == [a1.answer.id, a2.answer.id]
    questions = [m["content"] for m in sglang.chat_bodies[-1]["messages"][1:]]  # type: ignore[index]
    assert questions == ["What is the term?", a1.answer.answer, "And liability?"]


def test_follow_up_on_a_document_with_scanned_pages(
    sglang: FakeSGLang, store: Store, tmp_path: Path
) -> None:
    """With page images the document is the first user turn; the thread goes after it."""
    doc = extract(scanned_pdf(tmp_path / "mixed.pdf", CORPUS_DIR))
    answerer = answerer_for(sglang, store)
    _, first = ask(answerer, Question(doc, "What is on page 5?"))
    events, second = ask(answerer, Question(doc, "And page 2?", thread=thread_of(store, first)))
    a, b = sglang.chat_bodies
    assert [m["role"] for m in b["messages"]] == [  # type: ignore[attr-defined]
        "system",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert b["messages"][:2] == a["messages"][:2]  # type: ignore[index]
    assert b["messages"][2:] == [  # type: ignore[index]
        {"role": "user", "content": "What is on page 5?"},
        {"role": "assistant", "content": first.answer.answer},
        {"role": "user", "content": "And page 2?"},
    ]
    sent = next(e for e in events if isinstance(e, Sent))
    usage = next(e for e in events if isinstance(e, Usage))
    assert sent.prompt_tokens == usage.prompt_tokens
    assert usage.cached_tokens is not None and usage.cached_tokens >= 0.99 * doc.tokens
    assert second.thread_id == first.thread_id


def test_answers_stored_before_threads_existed_stay_cache_hits(tmp_path: Path) -> None:
    """Upgrading a database: old answers are first questions (no earlier turns)."""
    path = tmp_path / "old.db"
    old = sqlite_utils.Database(path)
    first_only = Migrations("longdoc")
    first_only()(m001_documents_and_answers)
    first_only.apply(old)
    key = AnswerKey("sha", "What is the term?", "m", "1", True, 1, 5, 16_384)
    old.table("answers").insert(
        {
            "document_sha": key.document_sha,
            "question": key.question,
            "question_norm": key.normalized_question,
            "model": key.model,
            "prompt_version": key.prompt_version,
            "thinking": 1,
            "first_page": 1,
            "last_page": 5,
            "max_tokens": key.max_tokens,
            "answer": "24 months [p. 2].",
            "reasoning": "",
            "status": "complete",
            "created_at": 1.0,
            "extra": "{}",
        }
    )
    old.close()
    store = Store(path)
    found = store.find_answer(key)
    assert found is not None and found.answer == "24 months [p. 2]."
    follow_up = dataclasses.replace(key, history="digest of earlier turns")
    assert store.find_answer(follow_up) is None
    store.close()
