"""The answering core against the SGLang-compatible server on loopback (no mocks)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from desktop.answering.client import ChatClient, first_token_timeout
from desktop.answering.events import AnswerDelta, Event, ReasoningDelta, Sent, Stored, Usage
from desktop.answering.prompt import PageRange, count_prompt_tokens
from desktop.answering.service import Answerer, Endpoint, Question
from desktop.config import Settings
from desktop.errors import (
    AuthenticationFailed,
    Cancelled,
    ContextTooLong,
    DocumentTooLarge,
    ServerError,
    ServerLoading,
    ServerUnreachable,
    StreamBroken,
)
from desktop.store.db import Store
from tests.conftest import API_KEY, make_document
from tests.support.answers import answerer_for
from tests.support.documents import CONTRACT_PAGES as PAGES
from tests.support.sglang_server import FakeSGLang
from tests.support.waiting import wait_for


def chat_requests(server: FakeSGLang) -> list[dict[str, object]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def run(answerer: Answerer, question: Question) -> list[Event]:
    return list(answerer.ask(question))


def test_whole_document_reaches_the_model_in_order(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES)
    events = run(answerer_for(sglang, store), Question(doc, "Who are the parties?"))
    [body] = chat_requests(sglang)
    system = body["messages"][0]["content"]  # type: ignore[index]
    positions = [system.index(f"[Page {label}]\n{text}") for label, text in PAGES]
    assert positions == sorted(positions)
    assert body["messages"][1] == {"role": "user", "content": "Who are the parties?"}  # type: ignore[index]
    answer = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert "[p. i]" in answer
    assert any(isinstance(e, ReasoningDelta) for e in events)
    stored = events[-1]
    assert isinstance(stored, Stored)
    assert not stored.from_cache
    assert stored.answer.status == "complete"
    assert stored.answer.answer == answer


def test_local_prompt_count_matches_the_server(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES)
    for thinking in (True, False):
        events = run(answerer_for(sglang, store), Question(doc, "Term?", thinking=thinking))
        sent = next(e for e in events if isinstance(e, Sent))
        usage = next(e for e in events if isinstance(e, Usage))
        assert sent.prompt_tokens == usage.prompt_tokens
        assert sent.prompt_tokens == count_prompt_tokens(doc, PageRange(1, 5), "Term?", thinking)


def test_second_question_reuses_the_document_prefix(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES * 40)
    answerer = answerer_for(sglang, store)
    first = run(answerer, Question(doc, "What is the term?"))
    second = run(answerer, Question(doc, "What is the liability cap?"))
    a, b = chat_requests(sglang)
    assert a["messages"][0] == b["messages"][0]  # type: ignore[index]
    # The rendered prompts agree byte for byte through the end of the document (the
    # prompt before them is the warm-up's: exactly the cacheable prefix, sent raw).
    warm, one, two = sglang.prompts
    end = one.index("</document>") + len("</document>")
    assert one[:end] == two[:end] and one.startswith(warm)
    cached_first = next(e for e in first if isinstance(e, Usage)).cached_tokens
    usage = next(e for e in second if isinstance(e, Usage))
    # Warmed before the first question: both reuse the document.
    assert cached_first is not None and cached_first >= doc.tokens
    assert usage.cached_tokens is not None
    assert usage.cached_tokens >= doc.tokens
    stored = second[-1]
    assert isinstance(stored, Stored)
    assert stored.answer.cached_tokens == usage.cached_tokens


def test_repeated_question_comes_from_the_cache_without_a_request(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = make_document(PAGES)
    answerer = answerer_for(sglang, store, model="Qwen/Qwen3.5-35B-A3B")
    first = run(answerer, Question(doc, "What is the term?"))
    before = len(sglang.requests)
    again = run(answerer, Question(doc, "what is the  term?"))
    assert len(sglang.requests) == before  # not even /v1/models
    assert len(again) == 1
    hit = again[0]
    assert isinstance(hit, Stored)
    assert hit.from_cache
    assert isinstance(first[-1], Stored)
    assert hit.answer.id == first[-1].answer.id
    # Other settings are other questions.
    run(answerer, Question(doc, "What is the term?", thinking=False))
    run(answerer, Question(doc, "What is the term?", use_cache=False))
    assert len(chat_requests(sglang)) == 3


def test_cache_serves_answers_when_the_server_is_down(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES)
    run(answerer_for(sglang, store), Question(doc, "What is the term?"))
    url = sglang.url
    sglang.stop()
    offline = Answerer(store, Endpoint(url, API_KEY), Settings())
    [hit] = list(offline.ask(Question(doc, "What is the term?")))
    assert isinstance(hit, Stored)
    assert hit.from_cache
    with pytest.raises(ServerUnreachable):
        list(offline.ask(Question(doc, "Another question?")))


def test_oversized_document_is_refused_before_sending(store: Store) -> None:
    doc = make_document([(str(i), "clause " * 400) for i in range(1, 21)])
    with FakeSGLang(api_key=API_KEY, context_length=8_192) as server:
        with pytest.raises(DocumentTooLarge) as info:
            run(answerer_for(server, store), Question(doc, "Summarise"))
        assert chat_requests(server) == []
        err = info.value
        assert err.context == 8_192
        assert err.needed > err.available
        assert "--pages 1-" in str(err)
        # The suggested range does fit.
        end = int(str(err).rsplit("--pages 1-", 1)[1])
        events = run(
            answerer_for(server, store), Question(doc, "Summarise", pages=PageRange(1, end))
        )
        [body] = chat_requests(server)
        system = body["messages"][0]["content"]  # type: ignore[index]
        assert f"[Page {end}]" in system
        assert f"[Page {end + 1}]" not in system
        # The excerpt note sits in the user turn, so the system turn stays a prefix.
        assert f"Only pages 1-{end} of 20 are shown" in body["messages"][1]["content"]  # type: ignore[index]
        assert isinstance(events[-1], Stored)


def test_reserve_shrinks_to_fit_with_a_warning(store: Store) -> None:
    doc = make_document([(str(i), "clause " * 400) for i in range(1, 6)])
    with FakeSGLang(api_key=API_KEY, context_length=doc.tokens + 5_000) as server:
        events = run(answerer_for(server, store), Question(doc, "Summarise"))
        sent = next(e for e in events if isinstance(e, Sent))
        assert 2_048 <= sent.max_tokens < 16_384
        assert "reduced" in sent.warnings[0]
        [body] = chat_requests(server)
        assert body["max_tokens"] == sent.max_tokens


@pytest.mark.slow
def test_240k_token_document_fits_262k_context(sglang: FakeSGLang, store: Store) -> None:
    words = "The contractor shall deliver the services described herein. "
    page = words * 120  # ~1,200 tokens
    doc = make_document([(str(i), f"{i}. {page}") for i in range(1, 221)])
    assert 230_000 < doc.tokens < 250_000
    events = run(answerer_for(sglang, store), Question(doc, "What is delivered?"))
    sent = next(e for e in events if isinstance(e, Sent))
    assert sent.max_tokens == 16_384
    assert isinstance(events[-1], Stored)
    assert events[-1].answer.prompt_tokens == sent.prompt_tokens


def test_cancel_stores_an_incomplete_answer_that_is_not_reused(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = make_document(PAGES)
    sglang.behaviour.update(token_delay_s=0.02, answer_tokens=400)
    answerer = answerer_for(sglang, store)
    cancel = threading.Event()
    received: list[str] = []

    def consume() -> None:
        for event in answerer.ask(Question(doc, "Long answer please"), cancel):
            if isinstance(event, AnswerDelta):
                received.append(event.text)
                if len(received) == 5:
                    cancel.set()

    with pytest.raises(Cancelled):
        consume()
    [stored] = store.answers_for(doc.sha256)
    assert stored.status == "incomplete"
    assert stored.answer == "".join(received)
    sglang.behaviour.update(token_delay_s=0.0, answer_tokens=None)
    events = run(answerer, Question(doc, "Long answer please"))
    assert isinstance(events[-1], Stored)
    assert not events[-1].from_cache
    assert len(chat_requests(sglang)) == 2


def test_cancel_during_prefill_closes_the_stream(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES * 20)
    # A "prefill" that outlasts the test (hours at 1 token/s): only a real stop ends the
    # read; if cancelling did not unblock it, pytest-timeout fails the test.
    answerer = answerer_for(sglang, store)
    answerer.prewarm(doc)  # warm already: the question's own prefill is the one stopped
    wait_for(lambda: bool(sglang.completed_rids))  # noted just after its answer was sent
    warm_up = list(sglang.completed_rids)
    sglang.behaviour.update(prefill_tokens_per_s=1)
    cancel = threading.Event()

    def cancel_once_sent() -> None:
        # Stop once the server has the question, i.e. while it is (silently) prefilling.
        wait_for(lambda: any(r.path.endswith("/chat/completions") for r in sglang.requests))
        cancel.set()

    threading.Thread(target=cancel_once_sent, daemon=True).start()
    with pytest.raises(Cancelled):
        list(answerer.ask(Question(doc, "Anything?"), cancel))
    [stored] = store.answers_for(doc.sha256)
    assert stored.status == "incomplete"
    assert wait_for(lambda: bool(sglang.aborted_rids))  # the server dropped the request too
    assert sglang.completed_rids == warm_up  # ended by the stop, not by the prefill finishing


# --- errors: one typed exception and one sentence each --------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stream_once(client: ChatClient, content: str = "[Page 1]\nhello\nQuestion?") -> str:
    stream = client.stream(
        [{"role": "user", "content": content}],
        model="m",
        max_tokens=50,
        thinking=False,
        first_token_timeout_s=30,
    )
    return "".join(e.text for e in stream if isinstance(e, AnswerDelta))


def test_connection_refused_is_reported_at_once() -> None:
    client = ChatClient(f"http://127.0.0.1:{free_port()}", API_KEY)
    with pytest.raises(ServerUnreachable, match=r"Cannot reach the server at http://127\.0\.0\.1"):
        client.models()
    with pytest.raises(ServerUnreachable):
        stream_once(client)


def test_wrong_key(sglang: FakeSGLang) -> None:
    with pytest.raises(AuthenticationFailed, match="refused the API key"):
        ChatClient(sglang.url, "wrong").models()


def test_loading_server(sglang: FakeSGLang) -> None:
    sglang.behaviour.update(fail_status=503)
    with pytest.raises(ServerLoading, match="still loading"):
        stream_once(ChatClient(sglang.url, API_KEY))


@pytest.mark.parametrize("status", [500, 502])
def test_server_errors(sglang: FakeSGLang, status: int) -> None:
    sglang.behaviour.update(fail_status=status, fail_message="boom inside")
    with pytest.raises(ServerError, match=f"answered {status}: boom inside"):
        stream_once(ChatClient(sglang.url, API_KEY))


@pytest.mark.parametrize("flavor", ["new", "old", "openai"])
def test_context_too_long_in_every_shape(flavor: str) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=64, flavor=flavor) as server:
        client = ChatClient(server.url, API_KEY)
        with pytest.raises(ContextTooLong, match=r"too long: .*context length"):
            stream_once(client, "[Page 1]\n" + "word " * 200 + "\nQuestion?")


def test_error_event_in_the_middle_of_a_stream(sglang: FakeSGLang) -> None:
    sglang.behaviour.update(midstream_error_after=3)
    with pytest.raises(StreamBroken, match="broke off the answer"):
        stream_once(ChatClient(sglang.url, API_KEY))


def test_stream_that_stops_without_an_end(sglang: FakeSGLang) -> None:
    sglang.behaviour.update(disconnect_after=4)
    with pytest.raises(StreamBroken):
        stream_once(ChatClient(sglang.url, API_KEY))


def test_openai_compatible_server_without_done_is_accepted() -> None:
    with FakeSGLang(api_key=API_KEY, context_length=32_768, flavor="openai") as server:
        server.behaviour.update(drop_done=True)
        text = stream_once(ChatClient(server.url, API_KEY))
        assert "[p. 1]" in text


def test_old_sglang_with_reasoning(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=32_768, flavor="old") as server:
        events = run(answerer_for(server, store), Question(make_document(PAGES), "Parties?"))
        assert any(isinstance(e, ReasoningDelta) for e in events)
        usage = next(e for e in events if isinstance(e, Usage))
        assert usage.cached_tokens is not None  # 0.5.9 reports it too


def test_first_token_timeout_allows_a_long_prefill(sglang: FakeSGLang) -> None:
    # 250K tokens on a slow GPU (400 tokens/s) need over ten minutes before the first token.
    assert first_token_timeout(250_000, 400) > 625
    assert first_token_timeout(1_000, 400) >= 60
    stream = ChatClient(sglang.url, API_KEY).stream(
        [{"role": "user", "content": "hi"}],
        model="m",
        max_tokens=5,
        thinking=False,
        first_token_timeout_s=first_token_timeout(250_000, 400),
    )
    assert stream._http.timeout.read == first_token_timeout(250_000, 400)
    assert stream._http.timeout.connect == 5.0  # a dead server is still reported at once


def test_slow_prefill_is_waited_for(store: Store) -> None:
    # A generic server (no warm-up before the question): the question's own prefill.
    server = FakeSGLang(api_key=API_KEY, flavor="openai").start()
    server.behaviour.update(prefill_tokens_per_s=400)  # a few seconds of silence
    doc = make_document(PAGES * 4)
    started = time.monotonic()
    with server:
        events = run(answerer_for(server, store), Question(doc, "Slow?"))
    assert time.monotonic() - started > 1.0
    assert isinstance(events[-1], Stored)
    assert events[-1].answer.ttft_s is not None and events[-1].answer.ttft_s > 1.0
