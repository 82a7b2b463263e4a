"""PDF text, printed page labels, outline and metadata through PDFium (pypdfium2).

PDFium rather than pypdf: on GeoTopo (117 pages, 1.8 MB) opening the file and reading the
text of every page takes 0.17-0.18 s with pypdfium2 5.15 against 2.8-3.0 s with pypdf 7.1
(~16x; medians on a 2-vCPU VM, bench/bench_ingest.py), and PDFium prints nothing on files
that make pypdf warn about fonts and xrefs (017 fails in both).
"""

from __future__ import annotations

import ctypes
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from desktop.documents.model import Document, OutlineEntry, Page
from desktop.documents.pdf_forms import (
    CHECKED,
    UNCHECKED,
    insert,
    locate,
    page_items,
    page_text,
    read_signatures,
    xfa_values,
)
from desktop.documents.pdf_spacing import looks_glued, restore_spaces
from desktop.documents.titles import choose_title
from desktop.errors import DocumentEmpty, DocumentEncrypted, DocumentUnreadable

# PDFium is not thread-safe: every call into it, including closing handles, happens
# under this one lock. Others who use pypdfium2 in this process must take it too.
PDFIUM_LOCK = threading.RLock()

EXTRACTOR_NAME = f"pdfium-{pdfium.PYPDFIUM_INFO.version}"

# Useless titles that some producers write into the metadata.
_JUNK_TITLES = {"untitled", "untitled document", "title", "document", "(anonymous)"}
# How many page numbers a warning lists before it says "...".
_WARN_LIST_MAX = 20

# C0/C1 controls except tab and newline, and the noncharacters U+FFFE/U+FFFF. PDFium
# emits \x02 (U+FFFE from get_text_range) where it joined a word hyphenated at the end of
# a line, and fonts without a Unicode map (TeX math delimiters) come out as raw control
# codes; neither is text a reader or the model can use.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]")
_TRAILING_SPACE = re.compile(r"[ \t\u00a0]+$", re.MULTILINE)

# How PDFium wants the file name: UTF-8; POSIX names that are not UTF-8 pass through
# as their original bytes (pypdfium2 does the same).
_PATH_ERRORS = "strict" if sys.platform.startswith("win32") else "surrogateescape"

# A page PDFium cannot load keeps its place with this text, so the model is told the page
# exists and was not read (as a text-only server's scanned pages are named unread).
UNREAD_PAGE = "(this page could not be read: it is damaged in the PDF)"
# The metadata key listing those pages ("3, 7"): what ask --json reports as unread.
UNREAD_KEY = "Unread pages"

# Far more pages than any context holds (a page costs at least a few tokens).
MAX_PAGES = 100_000

_OPEN_ERRORS = {
    pdfium_c.FPDF_ERR_FILE: "the file cannot be opened or read",
    pdfium_c.FPDF_ERR_FORMAT: "the file is not a PDF or is damaged beyond repair",
    pdfium_c.FPDF_ERR_SECURITY: "the PDF uses an unsupported encryption scheme",
    pdfium_c.FPDF_ERR_PAGE: "the PDF's page tree is damaged",
}


def clean_text(raw: str) -> str:
    """One page's text with ``\\n`` line ends, no control codes, no trailing spaces."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    # Spaces before a line end are rare: looking for them costs less than the regex's
    # try at every space of the page.
    if " \n" in text or "\t\n" in text or "\u00a0\n" in text:
        text = _TRAILING_SPACE.sub("", text)
    return text.strip()


def clean_field(raw: str) -> str:
    """A metadata value, title, label or bookmark: no control codes, one line, trimmed."""
    return " ".join(_CONTROL.sub("", raw).split())


def no_text_reason(n_pages: int, reads_images: bool | None = None) -> str:
    """Why a PDF without a text layer has no text, and what asking about it does.

    ``reads_images``: None when no server is in question (ingest's warning: its pages go
    as images to a server that reads them); False when the server asked reads no images
    (the refusal). OCR is the alternative, never the only way.
    """
    what = "the page is an image" if n_pages == 1 else f"all {n_pages} pages are images"
    if reads_images is False:
        return (
            f"no text could be extracted: {what} only (scanned?) and the server's model "
            "does not read images; use a server whose model reads images (Qwen3.5 does), "
            "or run it through OCR (e.g. ocrmypdf) and try again"
        )
    return (
        f"no text could be extracted: {what} only (scanned?); "
        f"{'it is sent as an image' if n_pages == 1 else 'they are sent as images'} to a "
        "server whose model "
        "reads images, otherwise run it through OCR (e.g. ocrmypdf) first"
    )


def extract_pdf(path: Path, data: bytes) -> Document:
    """Read a PDF into a Document (``sha256``, ``tokens`` and ``extractor`` left for ingest).

    Raises DocumentEncrypted when a password is needed, DocumentUnreadable when PDFium
    cannot parse the file, DocumentEmpty when it has no pages. A scan without any text
    layer is returned (every page in ``empty_pages``) with a warning saying so.
    """
    with PDFIUM_LOCK:
        pdf = _open(path, data)
        try:
            n_pages = len(pdf)
            # The form environment, only for documents with an AcroForm: its values are
            # read into the pages' text (see pdf_forms).
            pdf.init_forms()
            form = pdf.formenv.raw if pdf.formenv else None
            pages: list[Page] = []
            unread: list[int] = []
            for i in range(n_pages):
                text = _page_text(pdf, i, form)
                if text is None:
                    unread.append(i + 1)
                    text = UNREAD_PAGE
                pages.append(Page(number=i + 1, label=_page_label(pdf, i) or str(i + 1), text=text))
            xfa = xfa_values(pdf.raw) if form and not _has_field(pages) else []
            outline = _outline(pdf, n_pages)
            metadata = _metadata(pdf)
        except pdfium.PdfiumError as exc:
            raise DocumentUnreadable(path, f"the PDF is damaged ({_one_line(exc)})") from exc
        finally:
            pdf.close()

    if len(unread) == n_pages:
        raise DocumentUnreadable(path, "the PDF is damaged: none of its pages can be read")
    warnings = []
    if xfa:
        # Where each value appears is not known without an XFA renderer: all of them go
        # after the first page's text (which a dynamic form fills with "Please wait...").
        first = pages[0]
        pages[0] = Page(first.number, first.label, "\n".join([first.text, *xfa]).strip())
        warnings.append(
            f"the PDF is an XFA form: its {len(xfa)} filled-in values are listed after the "
            "first page's text, not where they appear"
        )
    empty = [p.number for p in pages if not p.text]
    if unread:
        warnings.append(unread_warning(unread, n_pages))
        metadata[UNREAD_KEY] = ", ".join(str(n) for n in unread)
    if len(empty) == n_pages:
        # Kept (the viewer can still show the scan) but unanswerable: asking refuses it
        # with this reason (see ingest.require_text).
        warnings.append(no_text_reason(n_pages))
    elif empty:
        warnings.append(_no_text_warning(empty, n_pages))
    return Document(
        sha256="",
        path=str(path),
        kind="pdf",
        title=_title(metadata, outline, pages, path),
        pages=pages,
        outline=outline,
        metadata=metadata,
        warnings=warnings,
    )


def _open(path: Path, data: bytes) -> pdfium.PdfDocument:
    """Open the file's bytes (its one read, see documents.source) with PDFium, turning its
    error codes into typed errors (caller holds the lock; ``data`` outlives the document)."""
    # Loaded through the raw API rather than PdfDocument(data): pypdfium2 reports a PDF
    # with zero pages as a load failure and then reads FPDF_GetLastError, which still
    # holds the code of an earlier, unrelated failure (it is only set when a load fails).
    # c_char_p points into the bytes object: no copy.
    handle = pdfium_c.FPDF_LoadMemDocument64(ctypes.c_char_p(data), len(data), None)
    if not handle:
        code = pdfium_c.FPDF_GetLastError()
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise DocumentEncrypted(
                path,
                "the PDF is encrypted and needs a password; remove the protection and try again",
            )
        raise DocumentUnreadable(path, _OPEN_ERRORS.get(code, "PDFium cannot read the file"))
    count = pdfium_c.FPDF_GetPageCount(handle)
    if count < 1:
        pdfium_c.FPDF_CloseDocument(handle)
        raise DocumentEmpty(path, "no text could be extracted: the PDF has no pages")
    if count > MAX_PAGES:
        # Each page is loaded to read it: a million tiny pages would take minutes and a
        # gigabyte before any budget could refuse them.
        pdfium_c.FPDF_CloseDocument(handle)
        raise DocumentUnreadable(
            path, f"the PDF has {count:,} pages; Longdoc reads at most {MAX_PAGES:,}"
        )
    return pdfium.PdfDocument(handle)


def _page_text(pdf: pdfium.PdfDocument, index: int, form: object | None) -> str | None:
    """The cleaned text of page ``index`` in PDFium's reading order, with its form values
    and comments in place; None when PDFium cannot load the page."""
    # The raw API rather than pdf[index], which also loads the form environment's view of
    # the page (FORM_OnAfterLoadPage): the field getters do without it (see pdf_forms),
    # and it costs a fifth of a form page's extraction.
    page = pdfium_c.FPDF_LoadPage(pdf.raw, index)
    if not page:
        return None
    try:
        textpage = pdfium_c.FPDFText_LoadPage(page)
        if not textpage:
            return None
        try:
            text = page_text(page, textpage)
            if looks_glued(text):
                text = restore_spaces(text, textpage)
            items = page_items(page, form)
            if not items:
                return clean_text(text)
            places = locate(text, textpage, items)
        finally:
            pdfium_c.FPDFText_ClosePage(textpage)
    finally:
        pdfium_c.FPDF_ClosePage(page)
    # Signatures are read by flattening the page in memory, which must happen while the
    # page is closed.
    items = read_signatures(pdf.raw, index, items)
    return clean_text(insert(text, items, places))


def _has_field(pages: list[Page]) -> bool:
    """Whether any page holds a form value read from a widget."""
    return any("[Field:" in p.text or CHECKED in p.text or UNCHECKED in p.text for p in pages)


# The page-label getter's buffer, reused (calls into PDFium happen under PDFIUM_LOCK).
_LABEL_BUFFER = ctypes.create_string_buffer(256)


def _page_label(pdf: pdfium.PdfDocument, index: int) -> str | None:
    """The printed label of page ``index`` ("iv", "A-3"), or None when the PDF has none."""
    # One call with room for any usual label: PDFium looks the label up in the number
    # tree on every call, and asking the size first doubled that.
    buffer = _LABEL_BUFFER
    size = pdfium_c.FPDF_GetPageLabel(pdf.raw, index, buffer, len(buffer))
    if size <= 2:  # 0: no label; 2: just the UTF-16 terminator
        return None
    if size > len(buffer):
        buffer = ctypes.create_string_buffer(size)
        pdfium_c.FPDF_GetPageLabel(pdf.raw, index, buffer, size)
    label = clean_field(buffer.raw[: size - 2].decode("utf-16-le", errors="replace"))
    return label or None


def _outline(pdf: pdfium.PdfDocument, n_pages: int) -> list[OutlineEntry]:
    """The bookmarks in document order, with 1-based target pages where they resolve."""
    entries = []
    for bookmark in pdf.get_toc():
        title = clean_field(bookmark.get_title())
        if not title:
            continue
        index = _bookmark_page_index(pdf, bookmark)
        page = index + 1 if index is not None and 0 <= index < n_pages else None
        entries.append(OutlineEntry(level=bookmark.level, title=title, page=page))
    return entries


def _bookmark_page_index(pdf: pdfium.PdfDocument, bookmark: pdfium.PdfBookmark) -> int | None:
    """The 0-based page a bookmark points to, through its /Dest or a GoTo action."""
    dest = pdfium_c.FPDFBookmark_GetDest(pdf.raw, bookmark.raw)
    if not dest:
        action = pdfium_c.FPDFBookmark_GetAction(bookmark.raw)
        if not action or pdfium_c.FPDFAction_GetType(action) != pdfium_c.PDFACTION_GOTO:
            return None
        dest = pdfium_c.FPDFAction_GetDest(pdf.raw, action)
        if not dest:
            return None
    index = int(pdfium_c.FPDFDest_GetDestPageIndex(pdf.raw, dest))
    return index if index >= 0 else None


def _metadata(pdf: pdfium.PdfDocument) -> dict[str, str]:
    """The Info dictionary's non-empty values (Title, Author, Producer, CreationDate...)."""
    result = {}
    for key, value in pdf.get_metadata_dict(skip_empty=True).items():
        # Producers leave NULs and other controls in these strings ("imagemagick-lzw\x00").
        value = clean_field(str(value))
        if value:
            result[str(key)] = value
    return result


# Lines that are Longdoc's marks for form values, comments and unread pages, not a title.
_MARKED_LINE = ("[Field:", "[Note", "[Text box", "[Signature", "☒", "☐", UNREAD_PAGE)


def _title(
    metadata: dict[str, str], outline: list[OutlineEntry], pages: list[Page], path: Path
) -> str:
    """Metadata title, else the first bookmark, else the first line of text, else the stem
    (each only if readable: see titles.choose_title)."""

    def candidates() -> Iterator[str]:
        title = metadata.get("Title", "")
        if title.lower() not in _JUNK_TITLES:
            yield title
        yield from (entry.title for entry in outline[:1])
        for page in pages:
            for line in page.text.splitlines():
                if line.strip() and not line.startswith(_MARKED_LINE):
                    yield line

    return choose_title(candidates(), clean_field(path.stem) or path.name)


def unread_warning(unread: list[int], n_pages: int) -> str:
    """ "page 3 could not be read" with how many of how many, for the ingest warning."""
    if len(unread) == 1:
        named = f"page {unread[0]} could not be read"
    else:
        shown = unread if len(unread) <= _WARN_LIST_MAX else unread[:_WARN_LIST_MAX]
        named = "pages " + ", ".join(str(n) for n in shown[:-1]) + f" and {shown[-1]}"
        if len(unread) > _WARN_LIST_MAX:
            named = "pages " + _number_list(unread)
        named += " could not be read"
    return (
        f"{named} (damaged; {len(unread)} of {n_pages} pages); the other pages were read, "
        "and questions are told these pages are missing"
    )


def unread_pages(metadata: dict[str, str]) -> list[int]:
    """The pages a PDF reader could not load, as stored in the document's metadata."""
    return [int(n) for n in metadata.get(UNREAD_KEY, "").split(",") if n.strip().isdigit()]


def _no_text_warning(empty: list[int], n_pages: int) -> str:
    """ "page 3 has no text" / "pages 3 and 7 have no text", with how many of how many."""
    if len(empty) == 1:
        return f"page {empty[0]} has no text (scanned or image-only; 1 of {n_pages} pages)"
    if len(empty) <= _WARN_LIST_MAX:
        named = ", ".join(str(n) for n in empty[:-1]) + f" and {empty[-1]}"
    else:
        named = _number_list(empty)
    return f"pages {named} have no text (scanned or image-only; {len(empty)} of {n_pages} pages)"


def _number_list(numbers: list[int]) -> str:
    """ "2, 5, 9", shortened with an ellipsis after a few dozen entries."""
    shown = ", ".join(str(n) for n in numbers[:_WARN_LIST_MAX])
    return shown + (", ..." if len(numbers) > _WARN_LIST_MAX else "")


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line, for a reason shown to the user."""
    return " ".join(str(exc).split()) or type(exc).__name__
