"""PDF extraction against the shared corpus: text, labels, outline, typed failures, speed."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

import pypdf
import pypdfium2 as pdfium
import pytest
from pypdf.constants import PageLabelStyle

from desktop.documents import extract, sha256_file, tokens
from desktop.documents.ingest import EXTRACTOR_VERSION, count_range_tokens, require_text
from desktop.documents.layout import document_block
from desktop.documents.pdf import clean_text
from desktop.errors import (
    DocumentEmpty,
    DocumentEncrypted,
    DocumentError,
    DocumentUnreadable,
    UsageError,
)
from tests.unit.conftest import CORPUS

ALL_PDFS = sorted(CORPUS.rglob("*.pdf"))
GEOTOPO = "009-pdflatex-geotopo/GeoTopo-komprimiert.pdf"
FOUR_PAGES = "004-pdflatex-4-pages/pdflatex-4-pages.pdf"
IMAGES_ONLY = "007-imagemagick-images/imagemagick-images.pdf"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff\r]")


def _listed_pages(corpus: Path) -> dict[str, int]:
    """Page counts by relative path, from the corpus's files.json."""
    data = json.loads((corpus / "files.json").read_text(encoding="utf-8"))
    return {entry["path"]: entry["pages"] for entry in data["data"]}


def test_corpus_is_complete(corpus: Path) -> None:
    """The corpus is there and every PDF on disk is described in files.json."""
    listed = _listed_pages(corpus)
    assert len(ALL_PDFS) >= 25
    for pdf in ALL_PDFS:
        assert pdf.relative_to(corpus).as_posix() in listed


@pytest.mark.timeout(30)
@pytest.mark.parametrize("pdf", ALL_PDFS, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_corpus_pdf_extracts_or_fails_cleanly(
    pdf: Path, corpus: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each file gives a full Document or one typed error naming it, silently."""
    try:
        doc = extract(pdf)
    except DocumentError as exc:
        error: DocumentError | None = exc
    else:
        error = None
    if error is not None:
        assert error.path == pdf
        assert str(error).startswith(f"{pdf}: ")
        assert "\n" not in str(error)
    else:
        assert len(doc.pages) == _listed_pages(corpus)[pdf.relative_to(corpus).as_posix()]
        assert [p.number for p in doc.pages] == list(range(1, len(doc.pages) + 1))
        assert all(p.label for p in doc.pages)
        assert all(not _CONTROL.search(p.text) for p in doc.pages)
        assert doc.title
        assert doc.kind == "pdf"
        assert doc.sha256 == hashlib.sha256(pdf.read_bytes()).hexdigest()
        assert doc.size_bytes == pdf.stat().st_size
        assert doc.path == str(pdf)
        assert doc.extractor == f"pdfium-{pdfium.PYPDFIUM_INFO.version}/{EXTRACTOR_VERSION}"
        assert doc.tokens == len(tokens.encode(document_block(doc.title, doc.pages)))
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")  # PDFium and pypdfium2 print nothing


def test_password_protected_pdf(corpus: Path) -> None:
    """005 needs a password: DocumentEncrypted with advice."""
    path = corpus / "005-libreoffice-writer-password/libreoffice-writer-password.pdf"
    with pytest.raises(DocumentEncrypted, match="encrypted and needs a password") as info:
        extract(path)
    assert info.value.path == path
    assert info.value.exit_code == 3


def test_broken_pdf_is_unreadable(corpus: Path) -> None:
    """017's cross-reference table is broken beyond what PDFium (or pypdf) can repair."""
    path = corpus / "017-unreadable-meta-data/unreadablemetadata.pdf"
    with pytest.raises(DocumentUnreadable) as info:
        extract(path)
    assert str(info.value) == f"{path}: the file is not a PDF or is damaged beyond repair"


@pytest.mark.parametrize(
    ("name", "pages"),
    [
        (IMAGES_ONLY, 6),
        ("007-imagemagick-images/imagemagick-lzw.pdf", 1),
        ("019-grayscale-image/grayscale-image.pdf", 1),
        ("023-cmyk-image/cmyk-image.pdf", 1),
    ],
)
def test_image_only_pdfs_are_kept_but_cannot_be_asked(corpus: Path, name: str, pages: int) -> None:
    """Scans without a text layer are kept (every page empty) and refused when asked."""
    doc = extract(corpus / name)
    assert doc.empty_pages == list(range(1, pages + 1))
    what = f"all {pages} pages are images" if pages > 1 else "the page is an image"
    # Issue 21 item 7: sent as images to a server that reads them; OCR only the alternative.
    sent = "they are sent as images" if pages > 1 else "it is sent as an image"
    assert doc.warnings == [
        f"no text could be extracted: {what} only (scanned?); {sent} to a "
        "server whose model reads images, otherwise run it through OCR (e.g. ocrmypdf) first"
    ]
    # Asked of a server that reads no images (the only case the core calls require_text).
    with pytest.raises(DocumentEmpty, match=r"\(scanned\?\) and the server's model does not "):
        require_text(doc)


def _combine(sources: list[tuple[Path, int]], target: Path) -> Path:
    """A new PDF made of (file, page index) pairs, written with PDFium."""
    out = pdfium.PdfDocument.new()
    for source, index in sources:
        src = pdfium.PdfDocument(source)
        out.import_pages(src, [index])
        src.close()
    with target.open("wb") as fh:
        out.save(fh)
    out.close()
    return target


def test_image_only_pages_inside_a_text_pdf(corpus: Path, tmp_path: Path) -> None:
    """Pages without text are kept empty, listed in empty_pages and in a warning."""
    text_pdf, image_pdf = corpus / FOUR_PAGES, corpus / IMAGES_ONLY
    path = _combine(
        [(text_pdf, 0), (image_pdf, 0), (text_pdf, 1), (image_pdf, 1), (text_pdf, 2)],
        tmp_path / "mixed.pdf",
    )
    doc = extract(path)
    assert len(doc.pages) == 5
    assert doc.empty_pages == [2, 4]
    assert doc.pages[1].text == ""
    assert doc.warnings == ["pages 2 and 4 have no text (scanned or image-only; 2 of 5 pages)"]
    assert "[Page 2]\n(no text on this page)" in document_block(doc.title, doc.pages)


def test_geotopo(corpus: Path) -> None:
    """117 pages, metadata title, roman front-matter labels, a nested outline."""
    doc = extract(corpus / GEOTOPO)
    assert len(doc.pages) == 117
    assert doc.title == "Geometrie und Topologie"
    assert doc.metadata["Author"] == "Martin Thoma"
    assert doc.metadata["Title"] == "Geometrie und Topologie"
    assert doc.metadata["CreationDate"].startswith("D:2016")
    assert [p.label for p in doc.pages[:5]] == ["i", "ii", "iii", "1", "2"]
    assert doc.outline[0].title == "1 Topologische Grundbegriffe"
    assert doc.outline[0].level == 0
    assert doc.outline[1].level == 1
    assert all(e.page is not None and 1 <= e.page <= 117 for e in doc.outline)
    page = doc.outline[1].page
    assert page is not None
    assert "Topologische Räume" in doc.pages[page - 1].text
    # PDFium's hyphenation marker is gone and the words are joined.
    assert "Übungsaufgaben" in doc.pages[1].text
    assert 60_000 < doc.tokens < 70_000
    assert doc.empty_pages == []


def test_page_labels_written_by_pypdf(corpus: Path, tmp_path: Path) -> None:
    """Custom labels (roman, prefixed decimal) come through as printed."""
    path = tmp_path / "labels.pdf"
    writer = pypdf.PdfWriter(clone_from=corpus / FOUR_PAGES)
    writer.set_page_label(0, 1, PageLabelStyle.LOWERCASE_ROMAN)
    writer.set_page_label(2, 3, PageLabelStyle.DECIMAL, prefix="A-", start=7)
    writer.write(path)
    doc = extract(path)
    assert [p.label for p in doc.pages] == ["i", "ii", "A-7", "A-8"]
    assert "[Page A-7]" in document_block(doc.title, doc.pages)


def test_pages_without_labels_use_numbers(corpus: Path) -> None:
    """A PDF without a label tree gets "1", "2", ... as labels."""
    doc = extract(corpus / FOUR_PAGES)
    assert [p.label for p in doc.pages] == ["1", "2", "3", "4"]


def test_outline_flat_and_nested(corpus: Path) -> None:
    """006 has a flat outline, 014 a nested one; pages are 1-based."""
    flat = extract(corpus / "006-pdflatex-outline/pdflatex-outline.pdf")
    assert [(e.level, e.title) for e in flat.outline[:3]] == [(0, "Foo"), (0, "Bar"), (0, "Baz")]
    assert flat.outline[0].page == 2  # the printed table of contents says "1 Foo 2"
    assert flat.title == "Foo"  # no metadata title: the first bookmark
    nested = extract(corpus / "014-outlines/mistitled_outlines_example.pdf")
    assert [(e.level, e.title) for e in nested.outline[:3]] == [
        (0, "First"),
        (1, "Second"),
        (1, "Third"),
    ]


def test_arabic_text(corpus: Path) -> None:
    """015's Arabic text is extracted as Arabic letters."""
    doc = extract(corpus / "015-arabic/habibi.pdf")
    assert re.search("[\u0600-\u06ff]{3,}", doc.pages[0].text)
    assert doc.tokens > 0


def test_zero_page_pdf_is_empty(tmp_path: Path) -> None:
    """A valid PDF without pages is DocumentEmpty, also right after another failure."""
    path = tmp_path / "zero.pdf"
    pypdf.PdfWriter().write(path)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n")
    with pytest.raises(DocumentUnreadable):
        extract(broken)
    with pytest.raises(DocumentEmpty, match="has no pages"):
        extract(path)


def test_truncated_pdf(corpus: Path, tmp_path: Path) -> None:
    """Half a PDF (interrupted download) is unreadable, with the path in the message."""
    data = (corpus / FOUR_PAGES).read_bytes()
    path = tmp_path / "half.pdf"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DocumentUnreadable, match=r"half\.pdf: the file is not a PDF"):
        extract(path)


def test_pdf_suffix_on_other_content(tmp_path: Path) -> None:
    """A .pdf that is really text goes to PDFium (by suffix) and is unreadable."""
    path = tmp_path / "notes.pdf"
    path.write_text("just some notes\n", encoding="utf-8")
    with pytest.raises(DocumentUnreadable, match="not a PDF"):
        extract(path)


def test_pdf_magic_without_pdf_suffix(corpus: Path, tmp_path: Path) -> None:
    """A PDF saved without its suffix is still read as a PDF (by its %PDF- header)."""
    path = tmp_path / "download"
    path.write_bytes((corpus / FOUR_PAGES).read_bytes())
    doc = extract(path)
    assert doc.kind == "pdf"
    assert len(doc.pages) == 4


def test_concurrent_extraction_is_consistent(corpus: Path) -> None:
    """Extractions on several threads (PDFium under one lock) give identical results."""
    expected = extract(corpus / GEOTOPO)
    results: list[object] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(extract(corpus / GEOTOPO))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == [expected] * 4


def test_count_range_tokens(corpus: Path) -> None:
    """A page range is counted as its own document block; bad ranges are usage errors."""
    doc = extract(corpus / GEOTOPO)
    assert count_range_tokens(doc, 1, 117) == doc.tokens
    part = count_range_tokens(doc, 4, 10)
    assert part == tokens.count(document_block(doc.title, doc.pages[3:10]))
    assert 0 < part < doc.tokens
    with pytest.raises(UsageError, match="10-4"):
        count_range_tokens(doc, 10, 4)
    with pytest.raises(UsageError, match="pages 1-117"):
        count_range_tokens(doc, 1, 118)


def test_sha256_given_by_caller_is_used(corpus: Path) -> None:
    """A known hash skips hashing (the library passes the one it looked up)."""
    path = corpus / FOUR_PAGES
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert extract(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_clean_text() -> None:
    """CRLF to LF, trailing spaces and control codes go, hyphenation markers join words."""
    raw = "Übungsauf\x02gaben  \r\nline two\t\r\n\x0c\x04 x\ufffey \r\n\r\n"
    assert clean_text(raw) == "Übungsaufgaben\nline two\n xy"
