"""Tests of the fake SGLang server itself, over real HTTP on loopback."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sglang_server import (
    IM_END_ID,
    Behaviour,
    FakeSGLang,
    encode,
    render_chat,
)
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT = (
    "<document>\nTitle: Field notes\n"
    "[Page i]\nThe quick brown fox jumps over the lazy dog near the river bank.\n"
    "[Page 1]\nSecond page text.\n"
    "[Page 1 (#3)]\nA page whose label repeats.\n"
    "[Page 7]\nLast page.\n</document>"
)
SYSTEM = "Answer from the document only. Cite pages as [p. label]."

Response = tuple[int, dict[str, str], bytes]
MakeServer = Callable[..., FakeSGLang]


def messages(question: str = "What is it about?", document: str = DOCUMENT) -> list[dict[str, str]]:
    """System + user messages laid out like the app's prompt."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{document}\n\n{question}"},
    ]


def call(
    server: FakeSGLang,
    method: str,
    path: str,
    body: Any = None,
    *,
    key: str | None = None,
    raw: bytes | None = None,
) -> Response:
    """One request; returns (status, lower-cased headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def call_json(server: FakeSGLang, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    """A request expected to answer 200 JSON."""
    status, _, data = call(server, method, path, body, **kw)
    assert status == 200, data
    return json.loads(data)


def stream(server: FakeSGLang, body: dict[str, Any], key: str | None = None) -> list[str]:
    """POST a streaming chat request; the ``data:`` payloads in order."""
    status, headers, data = call(
        server, "POST", "/v1/chat/completions", {**body, "stream": True}, key=key
    )
    assert status == 200, data
    assert headers["content-type"].startswith("text/event-stream")
    return [line[6:] for line in data.decode().split("\n") if line.startswith("data: ")]


def chunks(events: list[str]) -> list[dict[str, Any]]:
    """The JSON events (everything but ``[DONE]``)."""
    return [json.loads(e) for e in events if e != "[DONE]"]


def text_of(parsed: list[dict[str, Any]], key: str) -> str:
    """Concatenated ``delta[key]`` of the choice chunks."""
    return "".join(c["choices"][0]["delta"].get(key) or "" for c in parsed if c.get("choices"))


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@pytest.fixture
def make_server() -> Iterator[MakeServer]:
    """Factory of started servers, all stopped at teardown."""
    servers: list[FakeSGLang] = []

    def make(**kwargs: Any) -> FakeSGLang:
        server = FakeSGLang(**kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def server(make_server: MakeServer) -> FakeSGLang:
    """A ready 0.5.23-flavored server without an API key."""
    return make_server()


# ----- health, models, info ----------------------------------------------------------------


def test_health_is_503_during_startup_then_200(make_server: MakeServer) -> None:
    server = make_server(startup_delay=0.4)
    for path in ("/health", "/health_generate", "/ready"):
        status, headers, data = call(server, "GET", path)
        assert (status, data, headers["content-length"]) == (503, b"", "0")
    server.wait_ready(5)
    for path in ("/health", "/health_generate", "/ready"):
        assert call(server, "GET", path)[:3:2] == (200, b"")
    server.behaviour.ready = False
    assert call(server, "GET", "/health")[0] == 503


def test_ready_only_exists_in_new_flavor(make_server: MakeServer) -> None:
    old = make_server(flavor="old")
    assert call(old, "GET", "/ready")[0] == 404
    assert call(old, "GET", "/health")[0] == 200


def test_models_list_and_one_model(make_server: MakeServer) -> None:
    server = make_server(context_length=131072)
    listing = call_json(server, "GET", "/v1/models")
    assert listing["object"] == "list"
    card = listing["data"][0]
    assert card["id"] == "Qwen/Qwen3.5-35B-A3B"
    assert card["owned_by"] == "sglang"
    assert card["parent"] is None
    assert card["max_model_len"] == 131072
    assert call_json(server, "GET", "/v1/models/Qwen/Qwen3.5-35B-A3B") == card
    status, _, data = call(server, "GET", "/v1/models/nope")
    assert status == 404
    assert json.loads(data) == {
        "error": {
            "message": "The model 'nope' does not exist",
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        }
    }


def test_model_info_and_server_info_by_flavor(make_server: MakeServer) -> None:
    new = make_server(context_length=200_000)
    old = make_server(flavor="old")
    info_new = call_json(new, "GET", "/model_info")
    info_old = call_json(old, "GET", "/model_info")
    assert info_new["served_model_name"] == "Qwen/Qwen3.5-35B-A3B"
    assert "served_model_name" not in info_old
    assert "reasoning_parser" not in info_old
    assert "context_length" not in info_new
    server_new = call_json(new, "GET", "/server_info")
    assert server_new["context_length"] == 200_000
    assert server_new["max_total_num_tokens"] == 1_000_000
    assert server_new["max_req_input_len"] == 200_000 - 1 - 5
    assert "last_gen_throughput" in server_new["internal_states"][0]
    assert server_new["version"] == "0.5.23"
    server_old = call_json(old, "GET", "/server_info")
    assert server_old["version"] == "0.5.9"
    assert server_old["context_length"] is None  # not passed on the command line


def test_unknown_path_and_bad_json(server: FakeSGLang) -> None:
    status, _, data = call(server, "GET", "/nope")
    assert (status, json.loads(data)) == (404, {"detail": "Not Found"})
    status, headers, data = call(server, "POST", "/v1/chat/completions", raw=b"{not json")
    assert status == 400
    assert headers["content-length"] == str(len(data))
    assert json.loads(data)["object"] == "error"


# ----- auth --------------------------------------------------------------------------------


def test_api_key_required_except_health_ready_metrics(make_server: MakeServer) -> None:
    server = make_server(api_key="K")
    for method, path in (
        ("GET", "/v1/models"),
        ("GET", "/server_info"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/nope"),
    ):
        status, _, data = call(server, method, path, {})
        assert (status, json.loads(data)) == (401, {"error": "Unauthorized"}), path
    assert call(server, "GET", "/v1/models", key="wrong")[0] == 401
    assert call(server, "GET", "/v1/models", key="K")[0] == 200
    for path in ("/health", "/health_generate", "/ready", "/metrics"):
        assert call(server, "GET", path)[0] == 200, path


# ----- tokenize ----------------------------------------------------------------------------


def test_tokenize_prompt_list_and_messages(server: FakeSGLang) -> None:
    one = call_json(server, "POST", "/v1/tokenize", {"prompt": "Hello world"})
    assert one == {"tokens": encode("Hello world"), "count": 2, "max_model_len": 262144}
    many = call_json(server, "POST", "/v1/tokenize", {"prompt": ["a b", "<|im_start|>"]})
    assert many["count"] == [2, 1]
    assert many["tokens"][1] == [248045]
    chat = call_json(
        server,
        "POST",
        "/v1/tokenize",
        {"messages": messages(), "chat_template_kwargs": {"enable_thinking": False}},
    )
    expected = encode(render_chat(messages(), enable_thinking=False))
    assert chat["tokens"] == expected
    assert chat["count"] == len(expected)
    text = call_json(server, "POST", "/v1/detokenize", {"tokens": one["tokens"]})
    assert text == {"text": "Hello world"}


def test_tokenize_messages_rejected_by_old_flavor(make_server: MakeServer) -> None:
    old = make_server(flavor="old")
    status, _, data = call(old, "POST", "/v1/tokenize", {"messages": messages()})
    assert status == 400
    assert json.loads(data)["code"] == 400


def test_chat_template_matches_qwen35() -> None:
    rendered = render_chat(
        [{"role": "system", "content": " S \n"}, {"role": "user", "content": "Q"}]
    )
    assert rendered == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n"
    )
    history = render_chat(
        [
            {"role": "user", "content": "Q1"},
            {"role": "assistant", "content": "<think>\nr\n</think>\n\nA1"},
            {"role": "user", "content": "Q2"},
        ],
        enable_thinking=False,
    )
    assert history == (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
        "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


# ----- chat completions --------------------------------------------------------------------


def test_new_flavor_stream_shape_and_answer(server: FakeSGLang) -> None:
    events = stream(
        server,
        {
            "model": "m",
            "messages": messages(),
            "rid": "r1",
            "stream_options": {"include_usage": True},
        },
    )
    assert events[-1] == "[DONE]"
    parsed = chunks(events)
    first = parsed[0]
    assert first["id"] == "r1"
    assert first["object"] == "chat.completion.chunk"
    assert "usage" not in first
    assert first["choices"][0]["delta"] == {
        "reasoning_content": None,
        "role": "assistant",
        "content": "",
    }
    assert all("reasoning_content" in c["choices"][0]["delta"] for c in parsed[:-1])
    reasoning = text_of(parsed, "reasoning_content")
    answer = text_of(parsed, "content")
    assert "The user asks" in reasoning
    assert answer.index("The document") > -1
    assert answer == (
        'The document has 4 pages. The question was: "What is it about?". '
        'See [p. i] and [p. 7]. It opens with "The quick brown fox jumps over the lazy" [p. i].'
    )
    finish = parsed[-2]["choices"][0]
    assert finish["delta"] == {"reasoning_content": None}
    assert (finish["finish_reason"], finish["matched_stop"]) == ("stop", IM_END_ID)
    usage_chunk = parsed[-1]
    assert usage_chunk["choices"] == []
    usage = usage_chunk["usage"]
    prompt = render_chat(messages())
    assert server.prompts[-1] == prompt
    assert usage["prompt_tokens"] == len(encode(prompt))
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0}
    assert usage["completion_tokens_details"] == {"reasoning_tokens": usage["reasoning_tokens"]}
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert server.requests[-1].body["rid"] == "r1"
    wait_for(lambda: server.completed_rids == ["r1"])  # recorded after the last write


def test_thinking_off_streams_only_content(server: FakeSGLang) -> None:
    server.behaviour.answer_tokens = 50
    events = stream(
        server,
        {
            "messages": messages(),
            "stream_options": {"include_usage": True},
            "chat_template_kwargs": {"enable_thinking": False},
        },
    )
    parsed = chunks(events)
    assert len(parsed[0]["id"]) == 32
    assert text_of(parsed, "reasoning_content") == ""
    assert len(encode(text_of(parsed, "content"), special=False)) == 50
    assert server.prompts[-1].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    usage = parsed[-1]["usage"]
    assert usage["completion_tokens"] == 51  # answer + <|im_end|>
    assert usage["completion_tokens_details"] is None


def test_cache_report_off_gives_null_details(make_server: MakeServer) -> None:
    server = make_server(enable_cache_report=False)
    body = call_json(server, "POST", "/v1/chat/completions", {"messages": messages()})
    assert body["usage"]["prompt_tokens_details"] is None
    assert body["object"] == "chat.completion"
    message = body["choices"][0]["message"]
    assert message["content"].startswith("The document has 4 pages.")
    assert message["reasoning_content"].startswith("The user asks")


def test_old_flavor_stream_shape(make_server: MakeServer) -> None:
    server = make_server(flavor="old")
    parsed = chunks(
        stream(server, {"messages": messages(), "stream_options": {"include_usage": True}})
    )
    assert parsed[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
        "reasoning_content": None,
    }
    assert parsed[0]["usage"] is None
    assert set(parsed[3]["choices"][0]["delta"]) == {"role", "content", "reasoning_content"}
    usage = parsed[-1]["usage"]
    assert "completion_tokens_details" not in usage
    assert usage["reasoning_tokens"] > 0


def test_openai_flavor_differences(make_server: MakeServer) -> None:
    server = make_server(flavor="openai")
    events = stream(server, {"messages": messages(), "stream_options": {"include_usage": True}})
    assert events[-1] != "[DONE]"
    parsed = chunks(events)
    assert parsed[0]["id"].startswith("chatcmpl-")
    assert all("reasoning_content" not in c["choices"][0]["delta"] for c in parsed[:-1])
    assert "x_fake_server" in parsed[0]
    assert set(parsed[-1]["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert call(server, "GET", "/server_info")[0] == 404
    status, _, data = call(server, "POST", "/v1/chat/completions", {"messages": []})
    assert status == 400
    assert set(json.loads(data)) == {"detail"}


def test_max_tokens_cuts_with_length(server: FakeSGLang) -> None:
    body = call_json(
        server,
        "POST",
        "/v1/chat/completions",
        {
            "messages": messages(),
            "max_tokens": 5,
            "chat_template_kwargs": {"enable_thinking": False},
        },
    )
    choice = body["choices"][0]
    assert (choice["finish_reason"], choice["matched_stop"]) == ("length", None)
    assert body["usage"]["completion_tokens"] == 5


# ----- context length ----------------------------------------------------------------------


def test_context_length_errors_new_flavor(make_server: MakeServer) -> None:
    server = make_server(context_length=64)
    n = len(encode(render_chat(messages())))
    for stream_flag in (False, True):
        status, _, data = call(
            server, "POST", "/v1/chat/completions", {"messages": messages(), "stream": stream_flag}
        )
        assert status == 400
        assert json.loads(data) == {
            "object": "error",
            "message": f"The input ({n} tokens) is longer than the model's context length "
            "(64 tokens).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    short = [{"role": "user", "content": "Hi"}]
    m = len(encode(render_chat(short)))
    status, _, data = call(
        server,
        "POST",
        "/v1/chat/completions",
        {"messages": short, "max_tokens": 60, "stream": True},
    )
    assert status == 400
    assert json.loads(data)["message"] == (
        "Requested token count exceeds the model's maximum context length of 64 tokens. You "
        f"requested a total of {m + 60} tokens: {m} tokens from the input messages and 60 tokens "
        "for the completion. Please reduce the number of tokens in the input messages or the "
        "completion to fit within the limit."
    )


def test_context_length_error_old_flavor_stream_is_sse(make_server: MakeServer) -> None:
    server = make_server(flavor="old", context_length=64)
    events = stream(server, {"messages": messages()})
    assert events[-1] == "[DONE]"
    error = json.loads(events[0])["error"]
    assert error["message"].startswith("The input (")
    assert (error["type"], error["code"]) == ("BadRequestError", 400)


def test_context_length_error_openai_flavor(make_server: MakeServer) -> None:
    server = make_server(flavor="openai", context_length=64)
    status, _, data = call(
        server, "POST", "/v1/chat/completions", {"messages": messages(), "stream": True}
    )
    assert status == 400
    assert json.loads(data)["detail"].startswith("The input (")


# ----- injected failures -------------------------------------------------------------------


def test_midstream_error_old_flavor(make_server: MakeServer) -> None:
    server = make_server(flavor="old")
    server.behaviour.midstream_error_after = 3
    events = stream(
        server, {"messages": messages(), "chat_template_kwargs": {"enable_thinking": False}}
    )
    assert events[-1] == "[DONE]"
    parsed = chunks(events)
    assert "error" in parsed[-1]
    assert parsed[-1]["error"]["type"] == "BAD_REQUEST"
    assert text_of(parsed[:-1], "content") == "The document has"


def test_fail_status_applies_once(server: FakeSGLang) -> None:
    server.behaviour.update(fail_status=503, fail_message="busy")
    status, _, data = call(server, "POST", "/v1/chat/completions", {"messages": messages()})
    assert status == 503
    assert json.loads(data)["message"] == "busy"
    assert call(server, "POST", "/v1/chat/completions", {"messages": messages()})[0] == 200
    server.behaviour.update(fail_status=401)
    status, _, data = call(server, "POST", "/v1/chat/completions", {"messages": messages()})
    assert (status, json.loads(data)) == (401, {"error": "Unauthorized"})


def test_drop_done_and_disconnect_after(server: FakeSGLang) -> None:
    server.behaviour.drop_done = True
    events = stream(server, {"messages": messages()})
    assert events[-1] != "[DONE]"
    assert chunks(events)[-1]["choices"][0]["finish_reason"] == "stop"
    server.behaviour.update(drop_done=False, disconnect_after=4)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(
            "POST",
            "/v1/chat/completions",
            body=json.dumps({"messages": messages(), "stream": True}),
        )
        resp = conn.getresponse()
        assert resp.status == 200
        with pytest.raises(http.client.IncompleteRead):
            resp.read()
    finally:
        conn.close()
    wait_for(lambda: len(server.aborted_rids) == 1)


def test_behaviour_over_http(server: FakeSGLang) -> None:
    state = call_json(server, "POST", "/_test/behaviour", {"answer_tokens": 7, "drop_done": True})
    assert state["answer_tokens"] == 7
    assert server.behaviour.drop_done is True
    status, _, _ = call(server, "POST", "/_test/behaviour", {"no_such_field": 1})
    assert status == 400
    call_json(server, "POST", "/_test/behaviour", {"startup_delay": 5})
    assert call(server, "GET", "/health")[0] == 503
    assert call_json(server, "GET", "/_test/state")["ready"] is False


def test_behaviour_reset_and_snapshot() -> None:
    behaviour = Behaviour(token_delay_s=0.5)
    behaviour.reset()
    assert behaviour.snapshot()["token_delay_s"] == 0.0
    behaviour.update(fail_status=500, fail_times=2)
    assert behaviour.consume_failure() == (500, None)
    assert behaviour.consume_failure() == (500, None)
    assert behaviour.consume_failure() is None


# ----- abort and disconnects ---------------------------------------------------------------


def test_abort_request_ends_stream_with_abort(server: FakeSGLang) -> None:
    server.behaviour.token_delay_s = 0.01
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(
            "POST",
            "/v1/chat/completions",
            body=json.dumps({"messages": messages(), "stream": True, "rid": "victim"}),
        )
        resp = conn.getresponse()
        resp.readline()  # first event arrives: the request is running
        assert call(server, "POST", "/abort_request", {"rid": "victim"})[:3:2] == (200, b"")
        events = [ln[6:] for ln in resp.read().decode().split("\n") if ln.startswith("data: ")]
    finally:
        conn.close()
    assert events[-1] == "[DONE]"
    finish = json.loads(events[-2])["choices"][0]
    assert (finish["finish_reason"], finish["matched_stop"]) == ("abort", None)
    wait_for(lambda: server.aborted_rids == ["victim"])  # recorded after the last write


def test_client_disconnect_stops_generation(
    server: FakeSGLang, capfd: pytest.CaptureFixture[str]
) -> None:
    server.behaviour.update(token_delay_s=0.01, answer_tokens=2000)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request(
        "POST",
        "/v1/chat/completions",
        body=json.dumps({"messages": messages(), "stream": True, "rid": "gone"}),
    )
    resp = conn.getresponse()
    resp.readline()
    resp.close()
    conn.close()
    wait_for(lambda: server.aborted_rids == ["gone"])
    assert "Traceback" not in capfd.readouterr().err
    assert call(server, "GET", "/health")[0] == 200


# ----- prefix cache and metrics ------------------------------------------------------------


@pytest.mark.parametrize("granularity", [1, 64])
def test_prefix_cache_reports_shared_prefix(make_server: MakeServer, granularity: int) -> None:
    server = make_server(cache_granularity=granularity)
    long_document = DOCUMENT.replace("Second page text.", "Second page text. " * 300)
    first, second = messages("First?", long_document), messages("Second?", long_document)
    shared = common_prefix(encode(render_chat(first)), encode(render_chat(second)))
    assert shared > 1000
    off = {"chat_template_kwargs": {"enable_thinking": False}}
    call_json(server, "POST", "/v1/chat/completions", {"messages": first, **off})
    body = call_json(server, "POST", "/v1/chat/completions", {"messages": second, **off})
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == (
        shared - shared % granularity
    )
    # As in SGLang, a flush is refused (400) while a request is still running; the last
    # one is accounted as finished only after its response was written.
    flushed: list[bytes] = []

    def flush() -> bool:
        status, _, text = call(server, "POST", "/flush_cache")
        flushed.append(text)
        return status == 200

    wait_for(flush)
    assert flushed[-1].startswith(b"Cache flushed.")
    again = call_json(server, "POST", "/v1/chat/completions", {"messages": second, **off})
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_metrics_text(server: FakeSGLang) -> None:
    off = {"chat_template_kwargs": {"enable_thinking": False}}
    call_json(server, "POST", "/v1/chat/completions", {"messages": messages(), **off})
    body = call_json(server, "POST", "/v1/chat/completions", {"messages": messages(), **off})
    status, headers, data = call(server, "GET", "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain")
    values: dict[str, float] = {}
    for line in data.decode().splitlines():
        if line and not line.startswith("#"):
            name_labels, value = line.rsplit(" ", 1)
            assert 'model_name="Qwen/Qwen3.5-35B-A3B"' in name_labels
            values[name_labels.split("{")[0]] = float(value)
    prompt_tokens = body["usage"]["prompt_tokens"]
    cached = body["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached == prompt_tokens - 1  # identical prompt: all but the last token
    assert values["sglang:prompt_tokens_total"] == 2 * prompt_tokens
    assert values["sglang:cached_tokens_total"] == cached
    assert values["sglang:num_requests_total"] == 2
    assert values["sglang:generation_tokens_total"] == 2 * body["usage"]["completion_tokens"]
    assert values["sglang:cache_hit_rate"] == pytest.approx(cached / (2 * prompt_tokens))
    assert values["sglang:context_len"] == 262144
    assert values["sglang:max_total_num_tokens"] == 1_000_000
    for name in ("num_running_reqs", "num_queue_reqs", "gen_throughput", "token_usage"):
        assert f"sglang:{name}" in values


def test_prefill_speed_delays_response(server: FakeSGLang) -> None:
    server.behaviour.prefill_tokens_per_s = 1000.0
    started = time.monotonic()
    body = call_json(server, "POST", "/v1/chat/completions", {"messages": messages()})
    assert time.monotonic() - started >= body["usage"]["prompt_tokens"] / 1000.0 * 0.9


# ----- the command line ----------------------------------------------------------------------


def _launch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.sglang_server", "--port", "0", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_cli_startup_lines_and_sigterm() -> None:
    proc = _launch("--startup-delay", "0.7", "--log-stages", "--api-key", "K")
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(7)]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    expected = [
        "Load weight begin.",
        "Load weight end.",
        "Mamba Cache is allocated.",
        "Memory pool end.",
        "max_total_num_tokens=",
        "Uvicorn running on http://",
        "The server is fired up and ready to roll!",
    ]
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith("[20"), line
        assert line.split("] ", 1)[1].startswith(start), line
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_cli_exit_after_crashes_with_code_1() -> None:
    proc = _launch("--exit-after", "0.3")
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 1
    assert "Received sigquit from a child process" in out


# --- raw prompts and the hybrid cache -------------------------------------------------


def test_generate_and_completions_take_raw_prompts(make_server: MakeServer) -> None:
    server = make_server()
    prompt = render_chat(messages(), add_generation_prompt=False)
    data = call_json(
        server,
        "POST",
        "/generate",
        {"text": prompt, "sampling_params": {"max_new_tokens": 1}, "rid": "warm-1"},
    )
    meta = data["meta_info"]
    assert meta["id"] == "warm-1"
    assert meta["prompt_tokens"] == len(encode(prompt))
    assert meta["completion_tokens"] == 1 and meta["cached_tokens"] == 0
    assert meta["finish_reason"]["type"] == "length"
    assert server.prompts[-1] == prompt  # no chat template added
    again = call_json(
        server, "POST", "/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": 2}
    )
    assert again["object"] == "text_completion"
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == len(encode(prompt)) - 1
    assert again["usage"]["completion_tokens"] == 2
    openai = make_server(flavor="openai")
    status, _, _ = call(openai, "POST", "/generate", {"text": prompt})
    assert status == 404  # SGLang's native API only


def test_hybrid_cache_resumes_only_at_kept_states(make_server: MakeServer) -> None:
    server = make_server(hybrid_cache=True, chunked_prefill_size=64)
    base = render_chat(messages(), add_generation_prompt=False)
    longer = base + "<|im_start|>user\nAnd then?<|im_end|>\n"
    n = len(encode(base))
    call_json(server, "POST", "/generate", {"text": base, "sampling_params": {"max_new_tokens": 1}})
    # Extending the earlier prompt resumes exactly where it ended.
    first = call_json(server, "POST", "/generate", {"text": longer})["meta_info"]
    assert first["cached_tokens"] == n
    # Leaving it earlier falls back to the last chunk boundary before the fork.
    fork = base[: len(base) // 2] + " something else entirely"
    forked = call_json(server, "POST", "/generate", {"text": fork})["meta_info"]
    assert forked["cached_tokens"] % 64 == 0 and forked["cached_tokens"] < n // 2 + 64
