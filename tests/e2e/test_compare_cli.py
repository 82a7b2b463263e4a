"""``longdoc compare OLD NEW``: the real CLI, with and without the test server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import API_KEY
from tests.support.cli import longdoc, one_error
from tests.support.contracts import contract_pair, lay_out
from tests.support.pdf_maker import write_pdf
from tests.support.sglang_server import FakeSGLang


@pytest.fixture
def versions(tmp_path: Path) -> tuple[str, str]:
    old, new, _ = contract_pair(24, changes=1)
    a = lay_out(old, 90, 40, hyphenate=False, footer=False)
    b = lay_out(new, 72, 30, hyphenate=True, footer=True)
    draft = write_pdf(tmp_path / "draft.pdf", [p.split("\n") for p in a], title="Draft")
    signed = write_pdf(tmp_path / "signed.pdf", [p.split("\n") for p in b], title="Signed")
    return str(draft), str(signed)


def test_compare_json_lists_the_planted_changes_without_a_server(
    home: Path, versions: tuple[str, str]
) -> None:
    result = longdoc("compare", *versions, "--json", "--no-explain", home=home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["old"]["path"] == versions[0] and data["new"]["path"] == versions[1]
    kinds = sorted(c["kind"] for c in data["changes"])
    assert kinds == ["added", "changed", "moved", "removed"]
    changed = next(c for c in data["changes"] if c["kind"] == "changed")
    assert changed["old_anchor"].startswith("A p. ") and changed["new_anchor"].startswith("B p. ")
    assert data["explanation"] is None and data["citations"] == []
    # The same file twice is refused; the same text in another layout is no change.
    same = longdoc("compare", versions[0], versions[0], home=home)
    assert same.returncode == 2 and "same document" in one_error(same)
    missing = longdoc("compare", versions[0], home=home)
    assert missing.returncode == 2


def test_without_a_server_the_changes_come_first_then_one_error(
    home: Path, versions: tuple[str, str]
) -> None:
    result = longdoc("compare", *versions, "--endpoint", "http://127.0.0.1:9", home=home)
    assert result.returncode == 4
    assert "4 changes:" in result.stdout and "moved A p." in result.stdout
    one_error(result)


def test_the_explanation_is_one_request_with_both_versions_and_the_change_list(
    sglang: FakeSGLang, home: Path, versions: tuple[str, str], tmp_path: Path
) -> None:
    plain = longdoc("compare", *versions, "--json", "--no-explain", home=home)
    changed = next(c for c in json.loads(plain.stdout)["changes"] if c["kind"] == "changed")
    old_page = changed["old_anchor"].split(" ¶")[0]  # "A p. 2"
    new_page = changed["new_anchor"].split(" ¶")[0]
    words = changed["new_text"].split()
    at = words.index(changed["inserted"][0])
    new_words = " ".join(words[at - 3 : at + 2])  # only in B
    sglang.behaviour.answer_text = (
        f'It was "{" ".join(changed["old_text"].split()[:6])}" [{old_page}] and now '
        f'"{new_words}" [{new_page}]; misquoted: "{new_words}" [{old_page}] and '
        f'"nothing of the sort here" [{new_page}].'
    )
    out = tmp_path / "redline.json"
    result = longdoc(
        "compare",
        *versions,
        "--json",
        "--out",
        str(out),
        "--endpoint",
        sglang.url,
        "--api-key",
        API_KEY,
        home=home,
    )
    assert result.returncode == 0, result.stderr
    [chat] = [r.body for r in sglang.requests if r.path.endswith("/chat/completions")]
    system = chat["messages"][0]["content"]
    assert system.index('<document id="A">\nTitle: Draft') < system.index('<document id="B">')
    question = chat["messages"][-1]["content"]
    assert "Changes:\n1. " in question and "moved A p." in question
    data = json.loads(out.read_text())
    assert data["explanation"].startswith("It was")
    statuses = [c["status"] for c in data["citations"]]
    # Each quote checked against its version: the new words are not in A's pages.
    assert statuses == ["verified", "verified", "other_document", "not_found"], data["explanation"]
    assert data["citations"][2]["found_in"][0]["document"] == "B"
    assert {c["path"] for c in data["citations"]} <= set(versions)
