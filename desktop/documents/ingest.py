"""Turn a file into a Document: pick the extractor, hash the bytes, count the prompt tokens."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

# PDFium, the tokenizer and the Word and transcript readers are imported by the functions
# that use them: reopening a stored document needs none, and should start at once.
from desktop.documents.model import Document
from desktop.documents.text import MARKDOWN_SUFFIXES, TEXT_SUFFIXES
from desktop.errors import DocumentEmpty, DocumentUnreadable, UsageError

# Part of every Document's ``extractor`` string: bump it whenever extraction or cleaning
# changes its output, so cached documents from the old code are extracted again.
# 2: .vtt/.srt are transcripts and .docx Word documents (before: text, or refused).
# 3: PDF titles, metadata, labels and bookmarks without control characters; per-page
#    prompt token counts.
# 4: PDF form values and annotations in the page text, unloadable pages kept.
EXTRACTOR_VERSION = 4

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


PDF_MAGIC = b"%PDF-"
# PDF readers accept the header anywhere in the first KiB (some generators prepend junk).
_MAGIC_WINDOW = 1024
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a regular file's bytes, read in 1 MiB chunks; anything else is refused."""
    check_file(path)
    digest = hashlib.sha256()
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the check, open() still
        # returns at once instead of waiting for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise DocumentUnreadable(path, NOT_REGULAR)
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise DocumentUnreadable(path, _os_reason(exc)) from exc
    return digest.hexdigest()


def extract(path: Path, sha256: str | None = None) -> Document:
    """Extract ``path`` completely; ``sha256`` skips hashing when the caller already knows it.

    Raises DocumentUnreadable (missing, folder, FIFO or device, no permission, corrupt,
    binary), DocumentEncrypted or DocumentEmpty; the message names the file as it was given.
    """
    from desktop.documents.docx import DOCX_SUFFIXES, extract_docx
    from desktop.documents.layout import measure
    from desktop.documents.pdf import EXTRACTOR_NAME, extract_pdf
    from desktop.documents.text import extract_text
    from desktop.documents.transcript import TRANSCRIPT_SUFFIXES, extract_transcript

    path = Path(path).expanduser()
    size = check_file(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(_MAGIC_WINDOW)
    except OSError as exc:
        raise DocumentUnreadable(path, _os_reason(exc)) from exc

    suffix = path.suffix.lower()
    # The suffix decides for known types (a Markdown note may quote "%PDF-1.7"); the
    # header decides for the rest (a PDF saved as "download" or "report.bin").
    is_pdf = suffix == PDF_SUFFIX or (suffix not in _named_suffixes() and PDF_MAGIC in head)
    if is_pdf:
        doc = extract_pdf(path)
        doc.extractor = f"{EXTRACTOR_NAME}/{EXTRACTOR_VERSION}"
        digest = sha256 or sha256_file(path)
    else:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DocumentUnreadable(path, _os_reason(exc)) from exc
        if suffix in TRANSCRIPT_SUFFIXES:
            doc = extract_transcript(path, data)
            doc.extractor = f"transcript/{EXTRACTOR_VERSION}"
        elif suffix in DOCX_SUFFIXES:
            doc = extract_docx(path, data)
            doc.extractor = f"docx/{EXTRACTOR_VERSION}"
        else:
            doc = extract_text(path, data)
            doc.extractor = f"text/{EXTRACTOR_VERSION}"
        digest = sha256 or hashlib.sha256(data).hexdigest()

    doc.sha256 = digest
    doc.path = storable_path(path)
    doc.title = _storable(doc.title)
    doc.size_bytes = size
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


NOT_REGULAR = "this is not a regular file (a pipe, socket or device); give a document file"


def check_file(path: Path) -> int:
    """The size of a readable regular file, or the typed error saying why it is not one.

    Checked before anything is opened: reading a FIFO blocks forever, /dev/zero never ends.
    """
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise DocumentUnreadable(path, "the file does not exist") from exc
    except OSError as exc:
        raise DocumentUnreadable(path, _os_reason(exc)) from exc
    if stat.S_ISDIR(info.st_mode):
        raise DocumentUnreadable(path, "this is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise DocumentUnreadable(path, NOT_REGULAR)
    if not os.access(path, os.R_OK):
        raise DocumentUnreadable(path, "permission denied: the file cannot be read")
    if info.st_size == 0:
        raise DocumentEmpty(path, "the file is empty (0 bytes)")
    return info.st_size


def _os_reason(exc: OSError) -> str:
    """One sentence for an OSError, without the path (DocumentError adds it)."""
    if isinstance(exc, PermissionError):
        return "permission denied: the file cannot be read"
    if isinstance(exc, FileNotFoundError):
        return "the file does not exist"
    if isinstance(exc, IsADirectoryError):
        return "this is a folder, not a file"
    return f"the file cannot be read ({exc.strerror or type(exc).__name__})"


def require_text(doc: Document, first: int = 1, last: int | None = None) -> None:
    """Raise DocumentEmpty when the pages ``first..last`` hold no text at all."""
    pages = doc.select(first, last if last is not None else len(doc.pages))
    if any(p.text.strip() for p in pages):
        return
    if len(pages) == len(doc.pages) and doc.kind == "pdf":
        from desktop.documents.pdf import no_text_reason

        raise DocumentEmpty(doc.path, no_text_reason(len(doc.pages)))
    last = last if last is not None else len(doc.pages)
    which = f"page {first} holds" if first == last else f"pages {first}-{last} hold"
    raise DocumentEmpty(doc.path, f"{which} no text (images only?); choose other pages")
