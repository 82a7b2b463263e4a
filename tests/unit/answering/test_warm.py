"""Warm-up, range caching, counts from the store and cache hits without a server call."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from desktop.answering.events import Event, Stored, Usage
from desktop.answering.prompt import (
    PageRange,
    cacheable_prefix,
    prefix_tokens,
    system_turn_tokens,
)
from desktop.answering.service import Question
from desktop.documents import tokens
from desktop.documents.model import Document
from desktop.errors import Cancelled
from desktop.store.db import Store
from tests.conftest import API_KEY, make_document
from tests.support.answers import answerer_for
from tests.support.sglang_server import FakeSGLang

PAGES = [("1", "Duty 1 is to pay."), ("2", "Duty 2 is to deliver.")]


def forty_pages() -> Document:
    return make_document(
        [
            (str(i), f"Page {i}. The clause on page {i} sets out duty number {i}. " * 12)
            for i in range(1, 41)
        ]
    )


@pytest.fixture
def hybrid() -> Iterator[FakeSGLang]:
    """A server whose cache, like Qwen3.5's hybrid layers, resumes only at kept states."""
    with FakeSGLang(api_key=API_KEY, context_length=262_144, hybrid_cache=True) as server:
        yield server


def usage_of(events: list[Event]) -> Usage:
    return next(e for e in events if isinstance(e, Usage))


def paths(server: FakeSGLang) -> list[str]:
    return [r.path for r in server.requests]


def test_warm_up_ends_exactly_at_the_cacheable_prefix(hybrid: FakeSGLang, store: Store) -> None:
    doc = forty_pages()
    answerer = answerer_for(hybrid, store)
    warmed = answerer.prewarm(doc)
    assert warmed.route == "generate"
    assert warmed.cached_tokens == 0 and not warmed.was_warm
    assert warmed.prefix_tokens == warmed.prompt_tokens == prefix_tokens(doc, PageRange(1, 40))
    [generate] = [r for r in hybrid.requests if r.path == "/generate"]
    assert generate.body["text"] == cacheable_prefix(doc, PageRange(1, 40))
    assert "/v1/chat/completions" not in paths(hybrid)
    assert store.answers_for(doc.sha256) == []  # a warm-up answers nothing
    for thinking in (True, False):
        events = list(answerer.ask(Question(doc, f"Duty {thinking}?", thinking=thinking)))
        # The whole prefix is reused even though the server keeps states only at ends.
        assert usage_of(events).cached_tokens == warmed.prefix_tokens


def test_warming_a_warm_document_says_so(sglang: FakeSGLang, store: Store) -> None:
    doc = forty_pages()
    answerer = answerer_for(sglang, store)
    assert not answerer.prewarm(doc).was_warm
    assert answerer.prewarm(doc).was_warm


def test_a_chat_warm_up_would_leave_the_state_behind(hybrid: FakeSGLang, store: Store) -> None:
    # Why the raw route matters: the same warm-up as a chat request ends after the
    # generation prompt, so a hybrid model cannot resume at the end of the document.
    doc = forty_pages()
    answerer = answerer_for(hybrid, store)
    answerer._routes = []  # a server without /generate and /v1/completions
    warmed = answerer.prewarm(doc)
    assert warmed.route == "chat"
    events = list(answerer.ask(Question(doc, "Duty?")))
    assert (usage_of(events).cached_tokens or 0) < warmed.prefix_tokens // 2


def test_generic_server_is_warmed_through_completions(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", context_length=262_144) as server:
        doc = forty_pages()
        warmed = answerer_for(server, store).prewarm(doc)
        assert warmed.route == "completions"
        # A plain OpenAI server is recognised once and never asked SGLang's routes.
        assert "/generate" not in paths(server)
        assert [p for p in paths(server) if p == "/v1/models"] == ["/v1/models"]
        [completion] = [r for r in server.requests if r.path == "/v1/completions"]
        assert completion.body["prompt"] == cacheable_prefix(doc, PageRange(1, 40))
        assert completion.body["max_tokens"] == 1


def test_warm_up_can_be_cancelled_mid_prefill(hybrid: FakeSGLang, store: Store) -> None:
    hybrid.behaviour.update(prefill_tokens_per_s=500)  # ~30 s for this document
    doc = forty_pages()
    answerer = answerer_for(hybrid, store)
    answerer.model()
    cancel = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            answerer.prewarm(doc, cancel=cancel)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    while not any(r.path == "/generate" for r in hybrid.requests):
        worker.join(0.02)
    cancel.set()
    worker.join(10)
    assert not worker.is_alive()
    assert len(failure) == 1 and isinstance(failure[0], Cancelled)
    [generate] = [r for r in hybrid.requests if r.path == "/generate"]
    rid = generate.body["rid"]
    while rid not in hybrid.aborted_rids:  # the server dropped it, not finished it
        worker.join(0.02)
    assert rid not in hybrid.completed_rids


def test_range_after_whole_document_is_almost_all_cached(sglang: FakeSGLang, store: Store) -> None:
    doc = forty_pages()
    answerer = answerer_for(sglang, store)
    list(answerer.ask(Question(doc, "What are the duties?")))
    events = list(answerer.ask(Question(doc, "What are the duties?", pages=PageRange(1, 39))))
    cached = usage_of(events).cached_tokens
    range_tokens = sum(doc.page_tokens[:39])
    assert cached is not None and cached >= 0.99 * range_tokens
    # The range is another prefix: warmed before its first question, so exactly the
    # range's cacheable prefix came from the cache (more than the whole document's
    # question left: everything up to the end of page 39).
    tail = len(tokens.encode_with_special("</document><|im_end|>\n"))
    assert cached >= system_turn_tokens(doc, PageRange(1, 39)) - tail
    assert cached == prefix_tokens(doc, PageRange(1, 39))


def test_asking_about_a_stored_document_never_encodes_it(
    sglang: FakeSGLang, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = forty_pages()
    store.save_document(doc)
    stored = store.load_document(doc.sha256)
    assert stored is not None and stored.page_tokens == doc.page_tokens
    longest: list[int] = [0]
    real = tokens.normalize

    def spy(text: str) -> str:  # every text goes through it before it is encoded
        longest[0] = max(longest[0], len(text))
        return real(text)

    monkeypatch.setattr(tokens, "normalize", spy)
    events = list(answerer_for(sglang, store).ask(Question(stored, "What is duty 7?")))
    assert isinstance(events[-1], Stored)
    document_chars = sum(len(p.text) for p in stored.pages)
    assert 0 < longest[0] < 5_000 < document_chars


def test_old_stored_document_is_counted_once_and_the_counts_kept(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = forty_pages()
    expected = list(doc.page_tokens)
    doc.page_tokens, doc.layout_version = [], ""  # as stored before per-page counts
    store.save_document(doc)
    loaded = store.load_document(doc.sha256)
    assert loaded is not None and loaded.page_tokens == []
    list(answerer_for(sglang, store).ask(Question(loaded, "Duty?")))
    again = store.load_document(doc.sha256)
    assert again is not None and again.page_tokens == expected


def test_cache_hit_needs_no_server_call_once_the_model_is_known(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = make_document(PAGES)
    list(answerer_for(sglang, store).ask(Question(doc, "What is duty 1?")))
    before = len(sglang.requests)
    # A new process (new Answerer) with no model configured: the remembered model serves.
    events = list(answerer_for(sglang, store).ask(Question(doc, "what is duty 1?")))
    assert len(events) == 1 and isinstance(events[0], Stored) and events[0].from_cache
    assert len(sglang.requests) == before  # not /v1/models, not /server_info
