"""``longdoc ask --follow-up`` / ``--thread ID``: the real CLI against the loopback server."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.cli import json_output, longdoc, one_error
from tests.support.sglang_server import FakeSGLang

FOUR_PAGES = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"


def ask(server: FakeSGLang, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return longdoc("ask", *args, home=home, server=server, api_key=API_KEY)


def ask_json(server: FakeSGLang, home: Path, *args: str) -> dict[str, Any]:
    return json_output(ask(server, home, *args, "--json"))


def test_follow_up_continues_the_thread_and_new_asks_start_one(
    sglang: FakeSGLang, home: Path
) -> None:
    doc = str(FOUR_PAGES)
    first = ask_json(sglang, home, doc, "What is this about?")
    assert isinstance(first["thread_id"], int)
    follow = ask_json(sglang, home, doc, "Which page says so?", "--follow-up")
    assert follow["thread_id"] == first["thread_id"]
    assert follow["from_cache"] is False
    messages = sglang.chat_bodies[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1:] == [
        {"role": "user", "content": "What is this about?"},
        {"role": "assistant", "content": first["answer"]},
        {"role": "user", "content": "Which page says so?"},
    ]
    # The document prefix came from the server's cache.
    assert follow["usage"]["cached_tokens"] >= 0.99 * follow["document"]["tokens"]
    end = sglang.prompts[0].index("</document>") + len("</document>")
    assert sglang.prompts[1][:end] == sglang.prompts[0][:end]

    fresh = ask_json(sglang, home, doc, "Who wrote it?")
    assert fresh["thread_id"] not in (None, first["thread_id"])
    assert [m["role"] for m in sglang.chat_bodies[-1]["messages"]] == ["system", "user"]
    # --follow-up now continues the newest thread; --thread ID the first one.
    ask_json(sglang, home, doc, "When?", "--follow-up")
    questions = [m["content"] for m in sglang.chat_bodies[-1]["messages"] if m["role"] == "user"]
    assert questions == ["Who wrote it?", "When?"]
    third = ask(sglang, home, doc, "And why?", "--thread", str(first["thread_id"]))
    assert third.returncode == 0, third.stderr
    assert f"Follow-up in thread {first['thread_id']} (turn 3)" in third.stderr
    assert f"(thread {first['thread_id']}: --follow-up asks a follow-up question)" in third.stderr
    questions = [m["content"] for m in sglang.chat_bodies[-1]["messages"] if m["role"] == "user"]
    assert questions == ["What is this about?", "Which page says so?", "And why?"]


def test_a_repeated_follow_up_comes_from_the_cache_only_after_the_same_turns(
    sglang: FakeSGLang, home: Path
) -> None:
    doc = str(FOUR_PAGES)
    ask_json(sglang, home, doc, "What is this about?")
    ask_json(sglang, home, doc, "Which page says so?", "--follow-up")
    sent = len(sglang.chat_bodies)
    # The same question without the thread is a different question.
    alone = ask_json(sglang, home, doc, "Which page says so?")
    assert alone["from_cache"] is False
    assert len(sglang.chat_bodies) == sent + 1
    # The same two turns again: both from the cache, no request.
    again = ask_json(sglang, home, doc, "What is this about?")
    repeat = ask_json(sglang, home, doc, "Which page says so?", "--follow-up")
    assert again["from_cache"] and repeat["from_cache"]
    assert repeat["thread_id"] == again["thread_id"]
    assert len(sglang.chat_bodies) == sent + 1


def test_thread_arguments_are_checked(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    doc = str(FOUR_PAGES)
    first = ask_json(sglang, home, doc, "What is this about?")
    missing = ask(sglang, home, doc, "Q?", "--thread", "9999")
    assert missing.returncode == 2
    assert "no thread 9999" in one_error(missing)
    other = tmp_path / "other.txt"
    other.write_text("Another document entirely.\n")
    wrong = ask(sglang, home, str(other), "Q?", "--thread", str(first["thread_id"]))
    assert wrong.returncode == 2
    assert "another document" in one_error(wrong)
    pages = ask(sglang, home, doc, "Q?", "--follow-up", "--pages", "1-2")
    assert pages.returncode == 2
    assert "keeps the thread's pages" in one_error(pages)
    both = ask(sglang, home, doc, "Q?", "--follow-up", "--thread", "1")
    assert both.returncode == 2
    before = len(sglang.chat_bodies)
    none_yet = ask_json(sglang, home, str(other), "Q?", "--follow-up")
    assert none_yet["thread_id"] != first["thread_id"]
    assert len(sglang.chat_bodies) == before + 1
    help_text = longdoc("ask", "--help", home=home).stdout
    assert "--follow-up" in help_text and "--thread ID" in help_text


def test_a_thread_that_no_longer_fits_exit_3_with_numbers(home: Path) -> None:
    doc = str(FOUR_PAGES)
    with FakeSGLang(api_key=API_KEY, context_length=8_000) as server:
        server.behaviour.update(answer_tokens=1_500)
        first = ask(server, home, doc, "Summarise", "--max-tokens", "2048")
        assert first.returncode == 0, first.stderr
        turns = 1
        while True:
            result = ask(server, home, doc, f"More {turns}", "--follow-up", "--max-tokens", "2048")
            if result.returncode != 0:
                break
            turns += 1
            assert turns < 10
        sent = len(server.chat_bodies)
        assert result.returncode == 3
        line = one_error(result)
        assert f"with its {turns} earlier turn" in line
        assert "context of 8,000 tokens" in line and "start a new thread" in line
        # Nothing was sent for the refused follow-up; a new thread works.
        assert len(server.chat_bodies) == sent
        fresh = ask(server, home, doc, "Summarise again", "--max-tokens", "2048")
        assert fresh.returncode == 0, fresh.stderr
