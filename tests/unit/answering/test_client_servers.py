"""The client against servers that are not SGLang, behind proxies, and the larger count."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from desktop.answering.budget import ContextLimits
from desktop.answering.client import ChatClient
from desktop.answering.events import AnswerDelta, Event, Sent, Stored
from desktop.answering.prompt import count_prompt_tokens, full_range
from desktop.answering.service import (
    STATED_BY_PROFILE,
    STATED_BY_SETTINGS,
    Answerer,
    Endpoint,
    Question,
    resolve_endpoint,
)
from desktop.cli.common import managed_server
from desktop.config import ConfigError, Settings, load_settings, save_settings, with_overrides
from desktop.errors import ContextUnknown, DocumentTooLarge, NoServerConfigured, ServerError
from desktop.net import is_loopback
from desktop.store.db import Store
from server_manager import probe
from tests.conftest import API_KEY, make_document
from tests.support.recording_proxy import RecordingProxy
from tests.support.sglang_server import FakeSGLang

PAGES = [
    ("1", "Definitions. Services means the consulting described in Annex A."),
    ("2", "Term. The agreement runs for 24 months from the effective date."),
]
SGLANG_FIELDS = ("rid", "separate_reasoning", "chat_template_kwargs")


def chat_bodies(server: FakeSGLang) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def ask(answerer: Answerer, question: Question) -> list[Event]:
    try:
        return list(answerer.ask(question))
    finally:
        answerer.close()


# --- servers that are not SGLang ----------------------------------------------------


def test_the_strict_test_server_is_strict() -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        models = httpx2.get(f"{server.url}/v1/models", headers=headers).json()
        assert "max_model_len" not in models["data"][0]
        body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "rid": "x"}
        reply = httpx2.post(f"{server.url}/v1/chat/completions", json=body, headers=headers)
        assert reply.status_code == 422
        assert reply.json()["detail"][0]["loc"] == ["body", "rid"]


def test_a_strict_server_answers_with_a_stated_context(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        endpoint = Endpoint(server.url, API_KEY, context_length=32_768, stated_by="test")
        events = ask(Answerer(store, endpoint, Settings()), Question(make_document(PAGES), "Q?"))
        assert isinstance(events[-1], Stored) and events[-1].answer.status == "complete"
        sent = next(e for e in events if isinstance(e, Sent))
        assert sent.context_length == 32_768
        [body] = chat_bodies(server)
        assert not set(SGLANG_FIELDS) & set(body)


def test_no_thinking_on_an_unknown_server_uses_openais_own_switch(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        endpoint = Endpoint(server.url, API_KEY, context_length=32_768)
        doc = make_document(PAGES)
        events = ask(Answerer(store, endpoint, Settings()), Question(doc, "Q?", thinking=False))
        assert isinstance(events[-1], Stored) and not events[-1].answer.reasoning
        [body] = chat_bodies(server)
        assert body["reasoning_effort"] == "none"


def test_an_unknown_context_names_the_setting(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        answerer = Answerer(store, Endpoint(server.url, API_KEY), Settings())
        with pytest.raises(ContextUnknown) as info:
            ask(answerer, Question(make_document(PAGES), "Q?"))
        text = str(info.value)
        assert server.url in text
        for setting in ("--context-length", "LONGDOC_CONTEXT_LENGTH", "context_length"):
            assert setting in text
        assert info.value.exit_code == 2
        assert chat_bodies(server) == []


@pytest.mark.parametrize(
    ("reported", "stated", "context", "stated_by"),
    [(40_000, 32_768, 32_768, "mine"), (32_768, 100_000, 32_768, ""), (32_768, 0, 32_768, "")],
)
def test_the_smaller_context_wins(
    store: Store, reported: int, stated: int, context: int, stated_by: str
) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=reported) as server:
        endpoint = Endpoint(server.url, API_KEY, context_length=stated, stated_by="mine")
        answerer = Answerer(store, endpoint, Settings())
        try:
            limits = answerer.limits()
        finally:
            answerer.close()
        assert limits == ContextLimits(context, server.max_req_input_len, stated_by)


@pytest.mark.parametrize("flavor", ["new", "old"])
def test_sglang_is_found_by_its_server_info(store: Store, flavor: str) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=32_768, flavor=flavor) as server:
        doc = make_document(PAGES)
        ask(Answerer(store, Endpoint(server.url, API_KEY), Settings()), Question(doc, "Q?"))
        [body] = chat_bodies(server)
        assert set(SGLANG_FIELDS) <= set(body)


def test_a_managed_vllm_gets_only_the_template_switch(store: Store) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=32_768, flavor="openai") as server:
        endpoint = Endpoint(server.url, API_KEY, managed=True, engine="vllm")
        ask(
            Answerer(store, endpoint, Settings()),
            Question(make_document(PAGES), "Q?", thinking=False),
        )
        [body] = chat_bodies(server)
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert "rid" not in body and "separate_reasoning" not in body


# --- where the context length and the server come from -------------------------------


def test_context_length_precedence(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_settings(Settings(context_length=65_536))
    assert load_settings().context_length == 65_536
    monkeypatch.setenv("LONGDOC_CONTEXT_LENGTH", "40_000")
    assert load_settings().context_length == 40_000  # environment over the file
    assert with_overrides(load_settings(), context_length=32_768).context_length == 32_768
    monkeypatch.setenv("LONGDOC_CONTEXT_LENGTH", "lots")
    with pytest.raises(ConfigError, match="LONGDOC_CONTEXT_LENGTH='lots' is not a number"):
        load_settings()


def test_the_external_profile_states_a_context_last(home: Path) -> None:
    (home / "profiles").mkdir()
    (home / "profiles" / "external.toml").write_text(
        'url = "http://127.0.0.1:1"\napi_key = "k"\ncontext_length = 16384\n'
    )
    settings = Settings(profile="external")
    endpoint = resolve_endpoint(settings, managed_server(settings))
    assert (endpoint.context_length, endpoint.stated_by) == (16_384, STATED_BY_PROFILE)
    settings = Settings(profile="external", context_length=8_192)
    endpoint = resolve_endpoint(settings, managed_server(settings))
    assert (endpoint.context_length, endpoint.stated_by) == (8_192, STATED_BY_SETTINGS)


def test_no_server_is_a_typed_error(home: Path) -> None:
    with pytest.raises(NoServerConfigured, match="No server configured"):
        resolve_endpoint(Settings(), managed_server(Settings()))


# --- the larger count -------------------------------------------------------------------


def test_the_budget_uses_the_servers_larger_count(sglang: FakeSGLang, store: Store) -> None:
    doc = make_document(PAGES)
    local = count_prompt_tokens(doc, full_range(doc), "Q?", True)
    sglang.behaviour.update(tokenize_extra=500)
    question = Question(doc, "Q?", check_tokens=True)
    events = ask(Answerer(store, Endpoint(sglang.url, API_KEY), Settings()), question)
    sent = next(e for e in events if isinstance(e, Sent))
    assert (sent.local_tokens, sent.server_tokens) == (local, local + 500)
    assert sent.prompt_tokens == local + 500


def test_a_larger_server_count_can_refuse(store: Store) -> None:
    doc = make_document(PAGES)
    local = count_prompt_tokens(doc, full_range(doc), "Q?", True)
    # Fits by Longdoc's count (with the minimum reserve), not by the server's.
    with FakeSGLang(api_key=API_KEY, context_length=local + 2_048 + 100) as server:
        server.behaviour.update(tokenize_extra=200)
        answerer = Answerer(store, Endpoint(server.url, API_KEY), Settings())
        with pytest.raises(DocumentTooLarge) as info:
            ask(answerer, Question(doc, "Q?", check_tokens=True))
        assert info.value.needed == local + 200
        assert chat_bodies(server) == []
        # Without the check the local count decides, and it fits.
        events = ask(
            Answerer(store, Endpoint(server.url, API_KEY), Settings()), Question(doc, "Q?")
        )
        assert isinstance(events[-1], Stored)


# --- nothing streamed is lost ---------------------------------------------------------


def test_partial_answers_reach_the_store_while_streaming(sglang: FakeSGLang, store: Store) -> None:
    sglang.behaviour.update(token_delay_s=0.02, answer_tokens=2_000)
    answerer = Answerer(store, Endpoint(sglang.url, API_KEY), Settings())
    events = answerer.ask(Question(make_document(PAGES), "Long?"))
    received = ""
    started = time.monotonic()
    try:
        for event in events:
            if isinstance(event, AnswerDelta):
                received += event.text
            # Past the flush interval, the row holds what had arrived a moment ago.
            if received and time.monotonic() - started > 1.5:
                [row] = store.answers_for(make_document(PAGES).sha256)
                if row.answer:
                    break
        assert row.status == "running"
        assert row.answer and received.startswith(row.answer)
    finally:
        events.close()
        answerer.close()


# --- proxies ----------------------------------------------------------------------------------


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingProxy]:
    recording = RecordingProxy()
    for var in ("http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(var, recording.url)
    for var in ("no_proxy", "NO_PROXY", "HTTP_PROXY", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    yield recording
    recording.close()


def test_loopback_never_goes_through_a_proxy(
    proxy: RecordingProxy, sglang: FakeSGLang, store: Store
) -> None:
    events = ask(
        Answerer(store, Endpoint(sglang.url, API_KEY), Settings()),
        Question(make_document(PAGES), "Through a proxy?"),
    )
    assert isinstance(events[-1], Stored)
    assert probe.get(f"{sglang.url}/v1/models", API_KEY).status == 200
    localhost = sglang.url.replace("127.0.0.1", "localhost")
    client = ChatClient(localhost, API_KEY)
    try:
        assert client.models()
    finally:
        client.close()
    assert proxy.requests == []


def test_other_endpoints_follow_the_environment(proxy: RecordingProxy) -> None:
    client = ChatClient("http://models.example.invalid:30000", API_KEY)
    try:
        with pytest.raises(ServerError):
            client.models()  # the proxy's 502
    finally:
        client.close()
    assert probe.get("http://models.example.invalid:30000/health").status == 502
    paths = [path for _, path, _ in proxy.requests]
    assert "http://models.example.invalid:30000/v1/models" in paths
    assert "http://models.example.invalid:30000/health" in paths


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:30000", True),
        ("http://127.8.9.10", True),
        ("http://localhost:1/v1", True),
        ("http://[::1]:30000", True),
        ("https://gpu-box:30000", False),
        ("http://10.0.0.2", False),
        ("http://[::1", False),
    ],
)
def test_what_counts_as_loopback(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_selftest_skips_by_a_stated_context(store: Store) -> None:
    from desktop.selftest import run_selftest

    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        endpoint = Endpoint(server.url, API_KEY, context_length=16_384, stated_by="test")
        answerer = Answerer(store, endpoint, Settings())
        try:
            report = run_selftest(answerer, [64_000], endpoint=server.url, seed=1)
        finally:
            answerer.close()
    assert report.context_length == 16_384
    assert [r.status for r in report.lengths] == ["skipped"]
    assert chat_bodies(server) == []
