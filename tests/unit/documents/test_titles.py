"""Titles: unreadable candidates skipped, no soft hyphens or line breaks, never "Notes"."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from desktop.documents import extract
from desktop.documents.titles import choose_title, clean_title, readable
from tests.support.pdf_maker import write_pdf

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


@pytest.mark.parametrize(
    "junk",
    [
        "\ue000\ue001\uf8ff",  # private use
        "\ufffd\ufffd",  # replacement characters
        "\u00ad\u00ad",  # soft hyphens
        "\u200b\u200e\u2060",  # invisible (format) characters
        "\u0301\u0308",  # combining marks alone
        "\x01\x02",  # controls
        "\U000f0000",  # supplementary private use
    ],
)
def test_unreadable_candidates_are_skipped(junk: str) -> None:
    assert not readable(junk)
    assert choose_title([junk, "Real title"], "file") == "Real title"
    assert choose_title([junk], "file-name") == "file-name"


def test_titles_are_one_line_without_soft_hyphens() -> None:
    assert clean_title("Con\u00adtract\nof  sale\r\n2024") == "Contract of sale 2024"
    assert clean_title("\u200bTitle\u200e") == "Title"
    assert choose_title(["Notes", "FOOTNOTES", "endnotes", "Lease"], "x") == "Lease"
    assert len(choose_title(["word " * 100], "x")) <= 120
    assert choose_title(["Café\u0301 ok"], "x") == "Café\u0301 ok"  # combining marks with text


def test_pdf_metadata_title_of_private_use_falls_back_to_text(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "t.pdf", [["Annual report 2024", "body"]], title="\ufffd\ufffd")
    assert extract(path).title == "Annual report 2024"


def test_pdf_title_of_soft_hyphens_only_falls_back_to_file_name(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "scan-0042.pdf", [[]], title="\u00ad\u00ad")
    assert extract(path).title == "scan-0042"


def test_text_title_skips_unreadable_first_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("\ue000\ue001\n\u00adMeeting minutes\n", encoding="utf-8")
    assert extract(path).title == "Meeting minutes"


def test_word_document_with_only_footnotes_is_not_titled_notes(tmp_path: Path) -> None:
    path = tmp_path / "memo.docx"
    rels = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rF" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/footnotes" Target="footnotes.xml"/></Relationships>'
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        z.writestr("word/_rels/document.xml.rels", rels)
        z.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>Pay on time.</w:t></w:r>'
            '<w:r><w:footnoteReference w:id="1"/></w:r></w:p></w:body></w:document>',
        )
        z.writestr(
            "word/footnotes.xml",
            f'<w:footnotes xmlns:w="{W}"><w:footnote w:id="1"><w:p><w:r><w:t>See clause 4.'
            "</w:t></w:r></w:p></w:footnote></w:footnotes>",
        )
    doc = extract(path)
    assert doc.title == "Pay on time."  # the first paragraph, without its note mark


def test_transcript_title_of_invisible_characters_uses_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "standup.vtt"
    path.write_text("WEBVTT \u200b\u00ad\n\n00:00:01.000 --> 00:00:02.000\nhi\n", encoding="utf-8")
    assert extract(path).title == "standup"
