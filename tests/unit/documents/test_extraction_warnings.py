"""Extraction warnings reach the user once per document and command: ingest, ask, --json."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import longdoc
from tests.support.pdf_maker import FormPage, TextLine, write_form_pdf
from tests.support.sglang_server import FakeSGLang
from tests.unit.answering.test_answer_core import cli_ask


def _damaged_and_blank(tmp_path: Path) -> Path:
    """Page 2 cannot be loaded, page 3 has no text (scanned)."""
    return write_form_pdf(
        tmp_path / "report.pdf",
        [
            FormPage(lines=[TextLine(72, 700, "The fee is 40 euros per month.")]),
            FormPage(broken=True),
            FormPage(),
            FormPage(lines=[TextLine(72, 700, "Signed in Madrid.")]),
        ],
    )


def test_ingest_json_and_plain_name_the_damaged_and_blank_pages(tmp_path: Path) -> None:
    pdf = _damaged_and_blank(tmp_path)
    data = json.loads(longdoc("ingest", str(pdf), "--json", home=tmp_path).stdout)
    assert any("page 2 could not be read" in w for w in data["warnings"])
    assert any("page 3 has no text" in w for w in data["warnings"])
    plain = longdoc("ingest", str(pdf), home=tmp_path)
    warnings = [ln for ln in plain.stderr.splitlines() if ln.startswith("Warning:")]
    assert len(warnings) == 2


def test_ask_json_has_the_documents_warnings_and_unread_pages(
    sglang: FakeSGLang, tmp_path: Path
) -> None:
    sglang.behaviour.update(image_understanding=False)
    pdf = _damaged_and_blank(tmp_path)
    result = cli_ask(tmp_path, sglang, str(pdf), "What is the fee?", "--no-think", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)["document"]
    assert document["unread_pages"] == [2, 3]
    warnings = document["warnings"]
    assert sum("page 2 could not be read" in w for w in warnings) == 1
    assert sum("does not read images" in w for w in warnings) == 1
    # A cached answer reports the same document fields (the damaged page; the scanned
    # page's note needs the server's say).
    again = cli_ask(tmp_path, sglang, str(pdf), "What is the fee?", "--no-think", "--json")
    cached = json.loads(again.stdout)
    assert cached["from_cache"] is True
    assert 2 in cached["document"]["unread_pages"]


def test_plain_ask_prints_each_extraction_warning_once(sglang: FakeSGLang, tmp_path: Path) -> None:
    sglang.behaviour.update(image_understanding=False)
    pdf = _damaged_and_blank(tmp_path)
    result = cli_ask(tmp_path, sglang, str(pdf), "What is the fee?", "--no-think")
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("Warning:")]
    assert sum("page 2 could not be read" in ln for ln in lines) == 1
    assert sum("page 3 has no text" in ln for ln in lines) == 1
    assert sum("does not read images" in ln for ln in lines) == 1
