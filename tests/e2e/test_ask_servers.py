"""The real ``longdoc`` program against other servers, proxies, a SIGKILL and a bad batch."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from desktop.store.db import Store
from tests.conftest import API_KEY
from tests.e2e.test_cli import (
    FOUR_PAGES,
    GEOTOPO,
    LONGDOC,
    ask,
    assert_one_error_line,
    chats,
    environment,
)
from tests.support.recording_proxy import RecordingProxy
from tests.support.sglang_server import FakeSGLang


def test_strict_openai_server_with_a_stated_context(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        refused = ask(server, home, str(FOUR_PAGES), "Q?")
        assert refused.returncode == 2
        line = assert_one_error_line(refused.stderr)
        assert "does not report its context length" in line and "--context-length" in line
        assert chats(server) == 0

        answered = ask(server, home, str(FOUR_PAGES), "Q?", "--context-length", "32768", "--json")
        assert answered.returncode == 0, answered.stderr
        assert json.loads(answered.stdout)["finish_reason"] == "stop"
        env = {"LONGDOC_CONTEXT_LENGTH": "32768"}
        again = ask(server, home, str(FOUR_PAGES), "Other?", env=env)
        assert again.returncode == 0, again.stderr


def test_a_one_page_refusal_names_the_binding_limit(home: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo.txt"
    memo.write_text("The supplier shall deliver on time. " * 80, encoding="utf-8")
    # The KV pool, not the context, caps the prompt: max_req_input_len = 500.
    with FakeSGLang(api_key=API_KEY, context_length=262_144, max_total_num_tokens=506) as server:
        result = ask(server, home, str(memo), "Q?")
    assert result.returncode == 3
    line = assert_one_error_line(result.stderr)
    assert "the server accepts at most 500 prompt tokens (max_req_input_len" in line
    assert "262,144 tokens leaves" not in line
    assert "--pages" not in line and "single page cannot be split" in line


def test_check_tokens_uses_the_larger_count(sglang: FakeSGLang, home: Path) -> None:
    sglang.behaviour.update(tokenize_extra=1_000)
    result = ask(sglang, home, str(FOUR_PAGES), "Count?", "--check-tokens", "--json")
    assert result.returncode == 0, result.stderr
    prompt = json.loads(result.stdout)["usage"]["prompt_tokens"]
    said = f"{prompt:,} tokens by Longdoc's count but {prompt + 1_000:,} by the server's"
    assert said in result.stderr and "the budget uses the larger" in result.stderr
    # It does: the answer's room is what the context leaves after the larger count.
    with FakeSGLang(api_key=API_KEY, context_length=prompt + 1_000 + 5_000) as server:
        server.behaviour.update(tokenize_extra=1_000)
        again = ask(server, home, str(FOUR_PAGES), "Count?", "--check-tokens", "--no-cache")
        assert again.returncode == 0, again.stderr
        [body] = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
        assert body["max_tokens"] == 4_999  # by Longdoc's count alone it would be 5,999


def test_check_tokens_refuses_by_the_servers_count(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as probe_server:
        plain = ask(probe_server, home, str(GEOTOPO), "Count?", "--json")
        prompt = json.loads(plain.stdout)["usage"]["prompt_tokens"]
    # Fits by Longdoc's count with the minimum answer reserve, not by the server's.
    with FakeSGLang(api_key=API_KEY, context_length=prompt + 2_048 + 50) as server:
        server.behaviour.update(tokenize_extra=100)
        result = ask(server, home, str(GEOTOPO), "Count?", "--check-tokens", "--no-cache")
        assert result.returncode == 3
        assert f"needs {prompt + 100:,} prompt tokens" in assert_one_error_line(result.stderr)
        assert chats(server) == 0


def test_no_proxy_for_loopback(sglang: FakeSGLang, home: Path) -> None:
    proxy = RecordingProxy()
    try:
        env = {"http_proxy": proxy.url, "HTTPS_PROXY": proxy.url, "ALL_PROXY": proxy.url}
        result = ask(sglang, home, str(FOUR_PAGES), "Proxied?", env=env)
    finally:
        proxy.close()
    assert result.returncode == 0, result.stderr
    assert proxy.requests == []


def _stored_answer(db: Path) -> str:
    """The answer column of the only answer, read without opening a Store (no side effects)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute("SELECT answer FROM answers").fetchone()
    except sqlite3.Error:
        return ""
    return str(row[0]) if row else ""


def test_sigkill_mid_answer_keeps_the_partial_text(sglang: FakeSGLang, home: Path) -> None:
    sglang.behaviour.update(token_delay_s=0.02, answer_tokens=5_000)
    args = [*LONGDOC, "ask", str(FOUR_PAGES), "Slow?", "--endpoint", sglang.url]
    proc = subprocess.Popen(
        [*args, "--api-key", API_KEY],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(home),
    )
    db = home / "longdoc.db"
    deadline = time.monotonic() + 120
    while not _stored_answer(db):  # the first flush, about a second into the answer
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no partial answer was ever stored"
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    printed, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    store = Store(db)  # notices the dead process's row
    try:
        [doc] = store.list_documents()
        [answer] = store.answers_for(doc.sha256)
    finally:
        store.close()
    assert answer.status == "incomplete"
    assert answer.answer and printed.startswith(answer.answer)

    # Never served from the cache: asking again goes to the server.
    sglang.behaviour.update(token_delay_s=0.0, answer_tokens=None)
    before = chats(sglang)
    again = ask(sglang, home, str(FOUR_PAGES), "Slow?", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["from_cache"] is False
    assert chats(sglang) == before + 1


def test_summarize_stops_at_once_without_a_context_length(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as server:
        result = subprocess.run(
            [*LONGDOC, "summarize", str(FOUR_PAGES), str(GEOTOPO), "--endpoint", server.url],
            capture_output=True,
            text=True,
            timeout=120,
            env=environment(home, {"LONGDOC_API_KEY": API_KEY}),
        )
        assert result.returncode == 2, result.stderr  # a setting, not two failed documents
        assert "--context-length" in assert_one_error_line(result.stderr)
        assert chats(server) == 0
