"""Turn a file into a Document: pick the extractor, hash the bytes, count the prompt tokens."""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import zlib
from pathlib import Path

# PDFium, the tokenizer and the Word and transcript readers are imported by the functions
# that use them: reopening a stored document needs none, and should start at once.
from desktop.documents.model import Document
from desktop.documents.source import (
    MAGIC_WINDOW,
    NOT_REGULAR,
    PDF_MAGIC,
    Source,
    check_file,
    check_pdf_streams,
    os_reason,
    read_source,
)
from desktop.documents.text import MARKDOWN_SUFFIXES, TEXT_SUFFIXES
from desktop.errors import DocumentEmpty, DocumentError, DocumentUnreadable, UsageError, one_line

# Part of every Document's ``extractor`` string: bump it whenever extraction or cleaning
# changes its output, so cached documents from the old code are extracted again.
# 2: .vtt/.srt are transcripts and .docx Word documents (before: text, or refused).
# 3: PDF titles, metadata, labels and bookmarks without control characters; per-page
#    prompt token counts.
# 4: PDF form values and annotations in the page text, unloadable pages kept.
# 5: glued PDF words spaced, WebVTT cue boundaries, Word imported parts, form fields,
#    symbols, list overrides, headers of empty bodies; readable titles.
# 6: PDF form values drawn only in appearances, widgets outside the AcroForm, numbered
#    radio states by their /Opt entry, combo export values.
EXTRACTOR_VERSION = 6

PDF_SUFFIX = ".pdf"


def _named_suffixes() -> frozenset[str]:
    """Suffixes whose reader is chosen by name even when the bytes start like a PDF."""
    from desktop.documents.docx import DOCX_SUFFIXES
    from desktop.documents.transcript import TRANSCRIPT_SUFFIXES

    return TEXT_SUFFIXES | MARKDOWN_SUFFIXES | TRANSCRIPT_SUFFIXES | DOCX_SUFFIXES


def __getattr__(name: str) -> frozenset[str]:
    """``SUPPORTED_SUFFIXES``, made on first use (it loads the Word and transcript readers)."""
    if name == "SUPPORTED_SUFFIXES":
        value = frozenset({PDF_SUFFIX}) | _named_suffixes()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a regular file's bytes, read in 1 MiB chunks; anything else is refused.

    For finding a stored document by content; extraction hashes its own single read."""
    check_file(path)
    digest = hashlib.sha256()
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the check, open() still
        # returns at once instead of waiting for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise DocumentUnreadable(path, NOT_REGULAR)
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise DocumentUnreadable(path, os_reason(exc)) from exc
    return digest.hexdigest()


def read(path: Path) -> Source:
    """The file read once, within its kind's size limit, with the SHA-256 of those bytes."""
    return read_source(Path(path).expanduser(), _named_suffixes())


def extract(path: Path) -> Document:
    """Read ``path`` once and extract it completely (see ``extract_source``)."""
    return extract_source(read(path))


# What a reader may raise on a hostile file besides its own typed errors: absurd numbers
# (a 400-digit hour), damaged compressed parts, nesting past Python's stack.
_READER_FAILURES = (
    ValueError,
    ArithmeticError,
    LookupError,
    RecursionError,
    EOFError,
    MemoryError,
    zlib.error,
    struct.error,
)


def extract_source(source: Source) -> Document:
    """Extract a document from the bytes of its one read; its ``sha256`` is theirs.

    Raises DocumentUnreadable (damaged, binary, values no reader can use), DocumentEncrypted
    or DocumentEmpty; the message names the file as it was given. Never anything else for
    a bad file: in a batch or a folder, that file fails alone.
    """
    from desktop.documents.docx import DOCX_SUFFIXES, extract_docx
    from desktop.documents.layout import measure
    from desktop.documents.pdf import EXTRACTOR_NAME, extract_pdf
    from desktop.documents.text import extract_text
    from desktop.documents.transcript import TRANSCRIPT_SUFFIXES, extract_transcript

    path, data = source.path, source.data
    suffix = path.suffix.lower()
    # The suffix decides for known types (a Markdown note may quote "%PDF-1.7"); the
    # header decides for the rest (a PDF saved as "download" or "report.bin").
    head = data[:MAGIC_WINDOW]
    is_pdf = suffix == PDF_SUFFIX or (suffix not in _named_suffixes() and PDF_MAGIC in head)
    try:
        if is_pdf:
            check_pdf_streams(path, data)
            doc = extract_pdf(path, data)
            doc.extractor = f"{EXTRACTOR_NAME}/{EXTRACTOR_VERSION}"
        elif suffix in TRANSCRIPT_SUFFIXES:
            doc = extract_transcript(path, data)
            doc.extractor = f"transcript/{EXTRACTOR_VERSION}"
        elif suffix in DOCX_SUFFIXES:
            doc = extract_docx(path, data)
            doc.extractor = f"docx/{EXTRACTOR_VERSION}"
        else:
            doc = extract_text(path, data)
            doc.extractor = f"text/{EXTRACTOR_VERSION}"
    except DocumentError:
        raise
    except _READER_FAILURES as exc:
        detail = one_line(str(exc))[:200] or type(exc).__name__
        raise DocumentUnreadable(
            path, f"the file is damaged or holds values Longdoc cannot read ({detail})"
        ) from exc

    doc.sha256 = source.sha256
    doc.path = storable_path(path)
    doc.title = _storable(doc.title)
    doc.size_bytes = source.size
    measure(doc)
    return doc


def storable_path(path: Path) -> str:
    """The absolute path as stored: not symlink-resolved, so it reads as the user gave it."""
    return _storable(str(Path(path).expanduser().absolute()))


def _storable(text: str) -> str:
    """``text`` with bytes that were not UTF-8 (surrogate escapes) written as ``\\xNN``.

    SQLite and JSON cannot hold lone surrogates; a file named in Latin-1 would otherwise
    fail to store or to send.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def count_range_tokens(doc: Document, first: int, last: int) -> int:
    """Exact prompt tokens of pages ``first..last`` (1-based, inclusive) laid out as a block."""
    n = len(doc.pages)
    if not 1 <= first <= last <= n:
        raise UsageError(f"page range {first}-{last} is not within the document's pages 1-{n}")
    from desktop.documents import tokens
    from desktop.documents.layout import DOCUMENT_CLOSE, block_head, page_token_counts

    counts = page_token_counts(doc)
    head, tail = tokens.count(block_head(doc.title)), tokens.count(DOCUMENT_CLOSE)
    return head + sum(counts[first - 1 : last]) + tail


def require_text(doc: Document, first: int = 1, last: int | None = None) -> None:
    """Raise DocumentEmpty when the pages ``first..last`` hold no text at all (asked of a
    server whose model reads no images: one that reads them gets scanned pages as images)."""
    pages = doc.select(first, last if last is not None else len(doc.pages))
    if any(p.text.strip() for p in pages):
        return
    if len(pages) == len(doc.pages) and doc.kind == "pdf":
        from desktop.documents.pdf import no_text_reason

        raise DocumentEmpty(doc.path, no_text_reason(len(doc.pages), reads_images=False))
    last = last if last is not None else len(doc.pages)
    which = f"page {first} holds" if first == last else f"pages {first}-{last} hold"
    raise DocumentEmpty(doc.path, f"{which} no text (images only?); choose other pages")
