"""The real ``longdoc`` program on transcripts and Word files: ingest, ask, cite, refuse."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from desktop.documents.anchors import AnchorIndex
from desktop.documents.model import Document
from desktop.store.db import Store
from tests.e2e.test_cli import ask, assert_one_error_line, longdoc
from tests.support.documents import contract_docx, meeting_srt, meeting_vtt
from tests.support.sglang_server import FakeSGLang

TIMESTAMP = re.compile(r"\[(\d{1,2}:\d\d:\d\d)\]")
SECTION = re.compile(r"\[(§[^\]]+|¶[^\]]+)\]")


def stored(home: Path) -> Document:
    """The one document the CLI stored in ``home``."""
    store = Store(home / "longdoc.db")
    try:
        [summary] = store.list_documents()
        doc = store.load_document(summary.sha256)
    finally:
        store.close()
    assert doc is not None
    return doc


def system_prompt(server: FakeSGLang) -> str:
    """The system message of the first question the server was asked."""
    bodies = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    return str(bodies[0]["messages"][0]["content"])


def asked(
    server: FakeSGLang, home: Path, path: Path, question: str, answer: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    """``longdoc ask`` about ``path`` (no thinking) while the model answers ``answer``."""
    server.behaviour.update(answer_text=answer)
    result = ask(server, home, str(path), question, "--no-think", *flags)
    assert result.returncode == 0, result.stderr
    return result


def citations(result: subprocess.CompletedProcess[str]) -> list[tuple[str, list[int], str]]:
    """Each citation of an ``ask --json`` answer: its label, pages and check status."""
    return [(c["label"], c["pages"], c["status"]) for c in json.loads(result.stdout)["citations"]]


def test_ask_about_a_vtt_meeting_with_timestamp_citations(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    """The model sees speakers and timestamps; the timestamps it cites resolve to pages."""
    path = meeting_vtt(tmp_path / "budget.vtt")
    result = asked(
        sglang,
        home,
        path,
        "What happened to travel costs?",
        'Bob reported that "Travel is up twelve percent" [00:01:00]; Carol '
        "then halved the conference budget [00:05:13], and hiring waits for March [00:41:12].",
    )
    assert "Travel is up twelve percent" in result.stdout
    assert "Unverified" not in result.stdout + result.stderr  # the quote is in the transcript
    cited = ask(sglang, home, str(path), "What happened to travel costs?", "--json")
    assert citations(cited) == [
        ("00:01:00", [1], "verified"),
        ("00:05:13", [2], "unquoted"),
        ("00:41:12", [3], "unquoted"),
    ]

    prompt = system_prompt(sglang)
    assert "[Page 00:00:01]\n[00:00:01] Alice: Welcome everyone, thanks for coming." in prompt
    assert "[00:01:00] Bob: Travel is up twelve percent." in prompt
    assert "[Page 00:41:12]\n[00:41:12] Alice: We agree to revisit hiring in March." in prompt

    doc = stored(home)
    assert doc.kind == "transcript"
    assert [p.label for p in doc.pages] == ["00:00:01", "00:05:12", "00:41:12"]
    index = AnchorIndex(doc.pages, doc.kind)
    cited = TIMESTAMP.findall(result.stdout)
    assert [index.resolve(stamp) for stamp in cited] == [1, 2, 3]


def test_invented_quote_in_a_transcript_is_flagged(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    path = meeting_vtt(tmp_path / "budget.vtt")
    answer = 'Alice said "we doubled the budget overnight" [00:00:01].'
    result = asked(sglang, home, path, "Budget?", answer, "--json")
    assert json.loads(result.stdout)["citations"][0]["quote"] == "we doubled the budget overnight"
    assert citations(result) == [("00:00:01", [1], "not_found")]


def test_ask_about_an_srt(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    """An SRT with a BOM and CRLF: speakers from "Name:" lines, cited moments resolve."""
    path = meeting_srt(tmp_path / "episode.srt")
    answer = 'Mulder says "The truth is out there" [00:06:10] and the case closes [00:41:14].'
    data = json.loads(asked(sglang, home, path, "What does Mulder say?", answer, "--json").stdout)
    assert data["document"]["pages"] == 3
    prompt = system_prompt(sglang)
    assert "[00:06:10] Fox Mulder: The truth is out there, somewhere." in prompt
    assert "\ufeff" not in prompt
    doc = stored(home)
    index = AnchorIndex(doc.pages, doc.kind)
    assert [index.resolve(s) for s in TIMESTAMP.findall(data["answer"])] == [2, 3]


def test_ask_about_a_word_document(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    """Headings, list and table reach the model in order; § ¶ citations resolve."""
    path = contract_docx(tmp_path / "contract.docx")
    result = asked(
        sglang,
        home,
        path,
        "When are invoices due?",
        'Payment: "Invoices are due within 30 days" [§ 4.2 ¶ 1]; a widget costs '
        "10 EUR [§ 4.2 ¶ 4]; either party may terminate [§ 3 ¶ 1].",
    )
    assert "Unverified" not in result.stdout + result.stderr
    prompt = system_prompt(sglang)
    assert "Title: Supply agreement" in prompt
    assert "[Page § 4.2]\n[§ 4.2] ### 4.2 Payment terms\n" in prompt
    assert "[§ 4.2 ¶ 2] 1. Send the invoice\n[§ 4.2 ¶ 3] 2. Pay the invoice\n" in prompt
    assert "| Widget | 10 EUR |" in prompt
    assert prompt.index("[§ 1 ¶ 2] - Goods are widgets") < prompt.index("[§ 4.2]")
    doc = stored(home)
    index = AnchorIndex(doc.pages, doc.kind)
    assert [index.resolve(a) for a in SECTION.findall(result.stdout)] == [4, 4, 5]
    cited = ask(sglang, home, str(path), "When are invoices due?", "--no-think", "--json")
    assert citations(cited) == [
        ("§ 4.2 ¶ 1", [4], "verified"),
        ("§ 4.2 ¶ 4", [4], "unquoted"),
        ("§ 3 ¶ 1", [5], "unquoted"),
    ]


def test_folder_ingest_finds_transcripts_and_word_files(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "meetings"
    (folder / "q2").mkdir(parents=True)
    meeting_vtt(folder / "budget.vtt")
    meeting_srt(folder / "q2" / "episode.srt")
    contract_docx(folder / "contract.docx")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    result = longdoc("ingest", str(folder), "--json", home=home)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(Path(r["path"]).name, r["kind"], r["pages"]) for r in rows] == [
        ("budget.vtt", "transcript", 3),
        ("contract.docx", "docx", 5),
        ("episode.srt", "transcript", 3),
    ]


def test_empty_and_broken_files_are_one_error_line_exit_3(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.vtt"
    empty.write_bytes(b"")
    header_only = tmp_path / "header.vtt"
    header_only.write_text("WEBVTT\n\n", encoding="utf-8")
    locked = tmp_path / "locked.docx"
    locked.write_bytes(
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512 + "EncryptedPackage".encode("utf-16-le")
    )
    broken = tmp_path / "broken.docx"
    broken.write_bytes(contract_docx(tmp_path / "ok.docx").read_bytes()[:2000])
    expected = {
        empty: "the file is empty (0 bytes)",
        header_only: "no text could be extracted: the WebVTT file has no cues",
        locked: "the Word document is password-protected",
        broken: "the Word document is damaged",
    }
    for path, reason in expected.items():
        result = longdoc("ingest", str(path), home=home)
        assert result.returncode == 3, (path, result.stderr)
        line = assert_one_error_line(result.stderr)
        assert line.startswith(f"Error: {path}: {reason}"), line
