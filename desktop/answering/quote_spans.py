"""Where a checked quote stands, whole, for the viewer to highlight it (run off the UI thread).

A quote is found as citations match it (``citations.locate_in``: through hyphens at line
ends, ligatures, line breaks and case), on its page or running over a page break onto the
next page (or from the previous one). In stored text a span is character offsets
(``text_spans``); in a PDF it is the rectangles of PDFium's own characters
(``pdf_spans``), in points from the page's top-left corner as QtPdf lays pages out, so the
viewer paints the quote where the rendered page has it. Qt-free.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop.answering.citations import locate_in
from desktop.documents.model import Page

Rect = tuple[float, float, float, float]  # x, y from the top, width, height (points)

_OPEN_PDFS = 4  # PDFs kept open for the next quote (the Compare window shows two)


@dataclass(frozen=True)
class Span:
    """Part of a quote on one page: ``text[start:end]`` of page ``number`` (1-based)."""

    number: int
    start: int
    end: int
    text: str = ""  # the characters it covers
    rects: tuple[Rect, ...] = field(default=())  # in a PDF: where its characters are


def spans_in(
    text_of: Callable[[int], str], count: int, number: int, quote: str, *, spaces: bool = True
) -> list[Span]:
    """``quote`` on page ``number`` of ``count`` pages, or over a break with a neighbour
    (``text_of(n)`` gives a page's text); [] when it is not there. ``spaces=False``: see
    ``locate_in``."""
    if not 1 <= number <= count or not quote.strip():
        return []
    here = text_of(number)
    found = locate_in(here, quote, spaces=spaces)
    if found is not None:
        return [Span(number, *found, here[found[0] : found[1]])]
    for first in (number, number - 1):  # over the end of this page, or onto it
        if not 1 <= first < count:
            continue
        head = text_of(first) if first != number else here
        tail = text_of(first + 1) if first + 1 != number else here
        found = locate_in(head + "\n" + tail, quote, spaces=spaces)
        if found is None:
            continue
        start, end = found
        cut = len(head) + 1
        if end <= len(head) or start >= cut:
            continue  # wholly on the neighbour: not on the cited page
        last = len(head.rstrip())
        return [
            Span(first, start, last, head[start:last]),
            Span(first + 1, 0, end - cut, tail[: end - cut]),
        ]
    return []


def text_spans(pages: Sequence[Page], number: int, quote: str) -> list[Span]:
    """``spans_in`` the stored text of ``pages``."""
    return spans_in(lambda n: pages[n - 1].text, len(pages), number, quote)


# --- PDFs -----------------------------------------------------------------------------------

_lock = threading.Lock()
_open: OrderedDict[tuple[str, int, int], object] = OrderedDict()


def pdf_spans(path: Path, number: int, quote: str) -> list[Span]:
    """``spans_in`` PDFium's own text of the PDF at ``path``, each span with its rectangles.

    Run in a worker: it opens the file (kept open for the next quote) and reads one or two
    pages' characters under pypdfium2's lock."""
    import pypdfium2.raw as pdfium_c

    from desktop.documents.pdf import PDFIUM_LOCK

    with PDFIUM_LOCK:
        pdf = _document(path)
        count = len(pdf)  # type: ignore[arg-type]
        pages: dict[int, tuple[object, object, str]] = {}

        def text_of(n: int) -> str:
            if n not in pages:
                page = pdfium_c.FPDF_LoadPage(pdf.raw, n - 1)  # type: ignore[attr-defined]
                textpage = pdfium_c.FPDFText_LoadPage(page)
                pages[n] = (page, textpage, _characters(textpage))
            return pages[n][2]

        try:
            # PDFium's words may run together where the stored text has spaces restored.
            spans = spans_in(text_of, count, number, quote) or spans_in(
                text_of, count, number, quote, spaces=False
            )
            return [
                dataclasses.replace(s, rects=_rects(*pages[s.number][:2], s.start, s.end))
                for s in spans
            ]
        finally:
            for page, textpage, _ in pages.values():
                pdfium_c.FPDFText_ClosePage(textpage)
                pdfium_c.FPDF_ClosePage(page)


def _document(path: Path) -> object:
    """The open pypdfium2 document for ``path`` (caller holds PDFIUM_LOCK)."""
    import pypdfium2 as pdfium

    stat = os.stat(path)
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _lock:
        pdf = _open.pop(key, None)
        if pdf is None:
            pdf = pdfium.PdfDocument(str(path))
        _open[key] = pdf
        while len(_open) > _OPEN_PDFS:
            _open.popitem(last=False)[1].close()  # type: ignore[attr-defined]
        return pdf


def _characters(textpage: object) -> str:
    """The page's characters one per PDFium index (its own text may not align with them):
    a line-end hyphen PDFium marks as 0x02 is a hyphen."""
    import pypdfium2.raw as pdfium_c

    count = max(int(pdfium_c.FPDFText_CountChars(textpage)), 0)
    chars = []
    for i in range(count):
        code = int(pdfium_c.FPDFText_GetUnicode(textpage, i))
        chars.append("-" if code == 2 else chr(code) if 32 <= code < 0x110000 else " ")
    return "".join(chars)


def _rects(page: object, textpage: object, start: int, end: int) -> tuple[Rect, ...]:
    """Where characters ``start..end`` are, from the page's top-left corner (as QtPdf's
    ``QPdfSelection`` gives them)."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    height = float(pdfium_c.FPDF_GetPageHeightF(page))
    rects = []
    left, top, right, bottom = (ctypes.c_double() for _ in range(4))
    for i in range(int(pdfium_c.FPDFText_CountRects(textpage, start, end - start))):
        if pdfium_c.FPDFText_GetRect(textpage, i, left, top, right, bottom):
            rects.append(
                (left.value, height - top.value, right.value - left.value, top.value - bottom.value)
            )
    return tuple(rects)
