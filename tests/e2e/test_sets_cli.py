"""``longdoc ask PATH PATH... QUESTION``: a set of documents, the real CLI and the test server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.documents import tokens
from tests.conftest import API_KEY
from tests.support.cli import json_output, longdoc, one_error
from tests.support.documents import three_kinds
from tests.support.sglang_server import FakeSGLang


@pytest.fixture
def docs(tmp_path: Path) -> list[str]:
    """A PDF with printed labels, a Word contract and a meeting transcript."""
    return [str(path) for path in three_kinds(tmp_path)]


ANSWER = (
    'Revenue grew: "Revenue rose to 12 million euros" [A p. 1]. '
    'Invoices: "Invoices are due within 30 days" [B § 4.2 ¶ 1]. '
    'Hiring: "We agree to revisit hiring in March" [C 00:41:12]. '
    'Misattributed: "Invoices are due within 30 days" [A p. 2].'
)


def ask(server: FakeSGLang, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return longdoc("ask", *args, "--no-think", home=home, server=server, api_key=API_KEY)


def ask_json(server: FakeSGLang, home: Path, *args: str) -> dict[str, Any]:
    return json_output(ask(server, home, *args, "--json"))


def test_a_set_of_three_kinds_is_asked_whole_and_checked_per_document(
    sglang: FakeSGLang, home: Path, docs: list[str]
) -> None:
    sglang.behaviour.answer_text = ANSWER
    data = ask_json(sglang, home, *docs, "What do they say?")
    [body] = sglang.chat_bodies
    system = body["messages"][0]["content"]
    heads = [system.index(f'<document id="{x}">') for x in "ABC"]
    assert heads == sorted(heads)
    a, b, c = system[heads[0] : heads[1]], system[heads[1] : heads[2]], system[heads[2] :]
    assert "Title: Annual report\n[Page i]\nPreface." in a and "[Page 2]\nOutlook." in a
    assert "[§ 4.2 ¶ 1] Invoices are due within 30 days." in b
    assert "[00:41:12] Alice: We agree to revisit hiring in March." in c
    assert body["messages"][-1] == {"role": "user", "content": "What do they say?"}

    assert [d["letter"] for d in data["documents"]] == ["A", "B", "C"]
    assert [d["path"] for d in data["documents"]] == docs
    assert data["document"]["sha256"] == data["documents"][0]["sha256"]
    cites = [(c["document"], c["status"], c["path"]) for c in data["citations"]]
    assert cites == [
        ("A", "verified", docs[0]),
        ("B", "verified", docs[1]),
        ("C", "verified", docs[2]),
        ("A", "other_document", docs[0]),
    ]
    assert data["citations"][3]["found_in"] == [{"document": "B", "pages": [4]}]
    assert data["citations"][0]["sha256"] == data["documents"][0]["sha256"]

    # The second question reuses the whole set from the server's cache.
    again = ask_json(sglang, home, *docs, "Anything else?")
    first_prompt = sglang.prompts[0]
    prefix = first_prompt[: first_prompt.rindex("<|im_start|>user\n")]
    assert again["usage"]["cached_tokens"] >= len(tokens.encode_with_special(prefix))
    # The same question again comes from the answer cache, with the same checks.
    cached = ask_json(sglang, home, *docs, "What do they say?")
    assert cached["from_cache"] and cached["citations"] == data["citations"]
    # Another order is another set.
    other = ask_json(sglang, home, docs[1], docs[0], docs[2], "What do they say?")
    assert not other["from_cache"]

    # Without --json, the misattributed quote is named with the document it is in.
    text = ask(sglang, home, *docs, "What do they say?")
    assert "not in that document; found in B p. § 4.2" in text.stdout


def test_follow_ups_on_a_set_keep_its_documents_and_ranges(
    sglang: FakeSGLang, home: Path, docs: list[str]
) -> None:
    first = ask_json(sglang, home, *docs[:2], "First?", "--pages", "A:1..2")
    follow = ask_json(sglang, home, *docs[:2], "And then?", "--follow-up")
    assert follow["thread_id"] == first["thread_id"]
    first_body, follow_body = sglang.chat_bodies
    # The earlier turn goes after the set, which stays a byte-identical prefix.
    assert follow_body["messages"][0] == first_body["messages"][0]
    assert follow_body["messages"][1]["content"] == first_body["messages"][1]["content"]
    assert follow_body["messages"][2]["role"] == "assistant"
    assert "of document A, pages 2-3 of 3" in first_body["messages"][1]["content"]
    by_id = ask_json(sglang, home, *docs[:2], "Third?", "--thread", str(first["thread_id"]))
    assert by_id["thread_id"] == first["thread_id"]
    assert len(sglang.chat_bodies[-1]["messages"]) == 6
    # Another range on a follow-up is refused; another set has no thread yet.
    refused = ask(sglang, home, *docs[:2], "Q?", "--follow-up", "--pages", "A:1")
    assert refused.returncode == 2
    assert "keeps the thread's pages" in one_error(refused)
    wrong = ask(sglang, home, docs[1], docs[0], "Q?", "--thread", str(first["thread_id"]))
    assert wrong.returncode == 2 and "other documents" in one_error(wrong)


def test_bad_sets_are_refused_before_anything_is_sent(
    sglang: FakeSGLang, home: Path, docs: list[str], tmp_path: Path
) -> None:
    cases = [
        ((docs[0], docs[1]), 2, "looks like a file: add a question"),
        ((docs[0], docs[1], docs[0], "Q?"), 2, "the same document is given twice (A and C)"),
        ((*docs, "Q?", "--pages", "D:1-2"), 2, "there is no document D"),
        ((*docs, "Q?", "--pages", "1-2"), 2, "each range names its document's letter"),
        ((*docs, "Q?", "--pages", "B:§ 9"), 2, "B ("),
        ((docs[0], str(tmp_path / "missing.pdf"), "Q?"), 3, "missing.pdf"),
    ]
    for args, code, words in cases:
        result = ask(sglang, home, *args)
        assert result.returncode == code, (args, result.stderr)
        assert words in one_error(result), args
    assert sglang.chat_bodies == []


@pytest.fixture
def small_server() -> Iterator[FakeSGLang]:
    with FakeSGLang(api_key=API_KEY, context_length=2800) as server:
        yield server


def test_a_set_too_large_names_each_documents_tokens(
    small_server: FakeSGLang, home: Path, docs: list[str]
) -> None:
    result = ask(small_server, home, *docs, "Q?")
    assert result.returncode == 3
    line = one_error(result)
    for letter, path in zip("ABC", docs, strict=True):
        assert f"{letter} {path} " in line
    assert "need" in line and "drop document B or C" in line
    assert small_server.chat_bodies == []
    # What it suggests fits.
    fits = ask(small_server, home, *docs[:2], "Q?")
    assert fits.returncode == 0, fits.stderr


def test_the_engines_own_too_long_400_about_a_set_names_each_documents_tokens(
    sglang: FakeSGLang, home: Path, docs: list[str]
) -> None:
    """A server whose real limit is below what it states refuses with its own 400: the set
    form of Longdoc's refusal (each document's tokens, exit 3), not document A's."""
    sglang.behaviour.update(
        fail_status=400,
        fail_times=None,
        fail_message="The input (9000 tokens) is longer than the model's context length"
        " (2800 tokens).",
    )
    result = ask(sglang, home, *docs, "Q?")
    assert result.returncode == 3
    line = one_error(result)
    assert line.startswith("Error: these 3 documents (")
    for letter, path in zip("ABC", docs, strict=True):
        assert f"{letter} {path} " in line
    assert "--pages 1-" not in line  # no range of document A alone
