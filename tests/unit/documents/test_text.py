"""Text and Markdown extraction: encodings, binary rejection, sections, titles, outline."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from desktop.documents import SUPPORTED_SUFFIXES, extract, tokens
from desktop.documents.ingest import EXTRACTOR_VERSION
from desktop.documents.layout import document_block
from desktop.documents.text import SECTION_CHARS, SECTION_HARD_CHARS, split_sections
from desktop.errors import DocumentEmpty, DocumentUnreadable


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    """A file in tmp_path with the given bytes (str is written as UTF-8)."""
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _paragraphs(n: int, size: int = 300) -> str:
    """``n`` numbered paragraphs of about ``size`` characters, blank lines between."""
    return "\n\n".join(
        f"Paragraph {i}. " + ("lorem ipsum dolor " * (size // 18)).strip() for i in range(n)
    )


def test_supported_suffixes() -> None:
    """The file dialog's list: PDF, text, Markdown, Word and transcripts."""
    assert {
        ".pdf",
        ".txt",
        ".text",
        ".log",
        ".md",
        ".markdown",
        ".docx",
        ".docm",
        ".vtt",
        ".srt",
    } == SUPPORTED_SUFFIXES


def test_plain_utf8_file(tmp_path: Path) -> None:
    """A small UTF-8 file is one page with a first-line title and exact tokens."""
    path = _write(tmp_path, "notes.txt", "\n\n  Shopping list: Äpfel, 梨  \r\nmilk\n")
    doc = extract(path)
    assert doc.kind == "text"
    assert doc.title == "Shopping list: Äpfel, 梨"
    assert [(p.number, p.label) for p in doc.pages] == [(1, "1")]
    assert doc.pages[0].text == "  Shopping list: Äpfel, 梨  \nmilk"
    assert doc.metadata == {"Encoding": "utf-8"}
    assert doc.warnings == []
    assert doc.extractor == f"text/{EXTRACTOR_VERSION}"
    assert doc.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert doc.size_bytes == path.stat().st_size
    assert Path(doc.path).is_absolute()
    assert doc.tokens == len(tokens.encode(document_block(doc.title, doc.pages)))


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("\ufeffBOM text ü".encode(), "utf-8"),
        ("\ufeffLittle endian ü 中".encode("utf-16-le"), "utf-16"),
        ("\ufeffBig endian ü 中".encode("utf-16-be"), "utf-16"),
    ],
)
def test_unicode_with_bom(tmp_path: Path, data: bytes, encoding: str) -> None:
    """BOMs select the encoding and do not end up in the text."""
    doc = extract(_write(tmp_path, "bom.txt", data))
    assert doc.metadata["Encoding"] == encoding
    assert not doc.pages[0].text.startswith("\ufeff")
    assert "ü" in doc.pages[0].text
    assert doc.warnings == []


def test_cp1252_fallback_warns(tmp_path: Path) -> None:
    """Windows text that is not UTF-8 is read as cp1252 (curly quotes, euro) with a warning."""
    doc = extract(_write(tmp_path, "win.txt", "“Größe” kostet 5 €".encode("cp1252")))
    assert doc.pages[0].text == "“Größe” kostet 5 €"
    assert doc.metadata["Encoding"] == "cp1252"
    assert doc.warnings == ["not valid UTF-8; read as cp1252, so some characters may be wrong"]


def test_latin1_last_resort(tmp_path: Path) -> None:
    """Bytes cp1252 leaves undefined (0x81) still decode, as latin-1."""
    doc = extract(_write(tmp_path, "odd.txt", b"caf\xe9 \x81 ok"))
    assert doc.metadata["Encoding"] == "latin-1"
    assert doc.pages[0].text.startswith("café")
    assert "latin-1" in doc.warnings[0]


@pytest.mark.parametrize("name", ["image.txt", "archive.zip", "data"])
def test_binary_files_are_rejected(tmp_path: Path, name: str) -> None:
    """NUL bytes mean binary: DocumentUnreadable naming the file, whatever its suffix."""
    path = _write(tmp_path, name, b"PK\x03\x04\x00\x00binary\x00stuff")
    with pytest.raises(DocumentUnreadable, match="binary file, not text") as info:
        extract(path)
    assert info.value.path == path


def test_empty_and_blank_files(tmp_path: Path) -> None:
    """0 bytes and whitespace-only files are DocumentEmpty."""
    with pytest.raises(DocumentEmpty, match=r"empty \(0 bytes\)"):
        extract(_write(tmp_path, "empty.txt", b""))
    with pytest.raises(DocumentEmpty, match="only whitespace"):
        extract(_write(tmp_path, "blank.md", " \n\n\t\r\n"))
    with pytest.raises(DocumentEmpty):
        extract(_write(tmp_path, "empty.pdf", b""))


def test_missing_file_directory_and_fifo(tmp_path: Path) -> None:
    """Paths that are not readable regular files fail with a reason, never block."""
    with pytest.raises(DocumentUnreadable, match="does not exist") as info:
        extract(tmp_path / "nope.txt")
    assert str(tmp_path / "nope.txt") in str(info.value)
    with pytest.raises(DocumentUnreadable, match="folder, not a file"):
        extract(tmp_path)
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(DocumentUnreadable, match="not a regular file"):
        extract(fifo)


def test_relative_path_becomes_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents remember where they came from as an absolute path."""
    _write(tmp_path, "rel.txt", "hello")
    monkeypatch.chdir(tmp_path)
    assert extract(Path("rel.txt")).path == str(tmp_path / "rel.txt")


def test_form_feeds_are_pages(tmp_path: Path) -> None:
    """Form feeds split pages; blank pages stay; a final form feed opens no page."""
    doc = extract(_write(tmp_path, "printout.txt", "one\n\fsecond page\n\f\f\nfourth\n\f\n"))
    assert [(p.number, p.label, p.text) for p in doc.pages] == [
        (1, "1", "one"),
        (2, "2", "second page"),
        (3, "3", ""),
        (4, "4", "fourth"),
    ]
    assert doc.empty_pages == [3]


def test_long_text_splits_at_blank_lines(tmp_path: Path) -> None:
    """Sections of about 4,000 chars, cut at paragraph breaks, lose no line."""
    source = _paragraphs(100)
    doc = extract(_write(tmp_path, "long.txt", source))
    assert len(doc.pages) == pytest.approx(len(source) / SECTION_CHARS, abs=2)
    assert [p.label for p in doc.pages] == [str(i) for i in range(1, len(doc.pages) + 1)]
    for page in doc.pages[:-1]:
        assert SECTION_CHARS <= len(page.text) + 1 < SECTION_CHARS + 400
        assert page.text.startswith("Paragraph ")
    assert "\n\n".join(p.text for p in doc.pages) == source


def test_text_without_blank_lines_splits_between_lines() -> None:
    """A log with no paragraphs is cut between lines at the hard limit, never mid-line."""
    lines = [f"2024-01-01 12:00:{i % 60:02d} INFO request {i} handled in 3 ms" for i in range(2000)]
    sections = split_sections(lines)
    assert len(sections) > 1
    assert [line for section in sections for line in section] == lines
    assert all(sum(len(line) + 1 for line in s) <= SECTION_HARD_CHARS for s in sections)


def test_one_huge_line_is_not_cut() -> None:
    """A line longer than a section stays whole."""
    line = "x" * (3 * SECTION_HARD_CHARS)
    assert split_sections(["a", line, "b"]) == [["a"], [line], ["b"]]


def test_title_is_trimmed(tmp_path: Path) -> None:
    """Titles come from the first non-empty line, at most 120 chars."""
    doc = extract(_write(tmp_path, "t.log", "\n   " + "word " * 100))
    assert doc.title == ("word " * 24).strip()[:120]
    assert len(doc.title) <= 120


def test_unknown_suffix_text_is_text(tmp_path: Path) -> None:
    """Text with another suffix (.csv, .py) is read as plain text."""
    doc = extract(_write(tmp_path, "table.csv", "a,b\n1,2\n"))
    assert doc.kind == "text"
    assert doc.title == "a,b"


def test_text_mentioning_the_pdf_header_stays_text(tmp_path: Path) -> None:
    """A Markdown note quoting "%PDF-1.7" is Markdown, not a broken PDF."""
    doc = extract(_write(tmp_path, "pdf-notes.md", "# PDF headers\n\nThey start with %PDF-1.7.\n"))
    assert doc.kind == "markdown"
    assert doc.title == "PDF headers"


MARKDOWN = """---
layout: post
---
Intro line before any heading.

# The Guide

Some text.

## Install

```bash
# not a heading
pip install thing
```

Setext title
------------

### Deep ###
"""


def test_markdown_title_and_outline(tmp_path: Path) -> None:
    """First `#` heading is the title; headings outside code fences form the outline."""
    doc = extract(_write(tmp_path, "guide.md", MARKDOWN))
    assert doc.kind == "markdown"
    assert doc.title == "The Guide"
    assert [(e.level, e.title, e.page) for e in doc.outline] == [
        (0, "The Guide", 1),
        (1, "Install", 1),
        (1, "Setext title", 1),
        (2, "Deep", 1),
    ]


def test_markdown_front_matter_title(tmp_path: Path) -> None:
    """A YAML front-matter title wins over headings."""
    doc = extract(_write(tmp_path, "post.markdown", '---\ntitle: "My Post"\n---\n# Heading\n'))
    assert doc.title == "My Post"
    assert [e.title for e in doc.outline] == ["Heading"]


def test_markdown_without_h1_uses_first_line(tmp_path: Path) -> None:
    """Without a top heading the first line (minus its #s) is the title."""
    doc = extract(_write(tmp_path, "notes.md", "## Minutes\n\ntext\n"))
    assert doc.title == "Minutes"
    assert doc.outline[0].level == 1


def test_markdown_outline_pages(tmp_path: Path) -> None:
    """Headings point at the section they fall in."""
    source = "\n\n".join(f"# Chapter {c}\n\n{_paragraphs(20)}" for c in range(1, 4))
    doc = extract(_write(tmp_path, "book.md", source))
    assert len(doc.pages) > 3
    for entry in doc.outline:
        assert entry.page is not None
        assert f"# {entry.title}" in doc.pages[entry.page - 1].text
    assert [e.title for e in doc.outline] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    assert doc.outline[0].page == 1
