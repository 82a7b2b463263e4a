"""A checked quote shown whole: found off the UI thread, then painted (PDF) or selected (text).

The quote is looked for in a worker (``desktop.answering.quote_spans``: the page's text, or
PDFium's own characters and their rectangles for a PDF), over line breaks and a page
break; the UI thread only paints the rectangles or selects the span, so a click in the
Compare window on two 400-page PDFs does not stall (QtPdf's search model searched every
page on the UI thread). A newer quote drops an older one's result, and nothing reaches a
view that is gone (``tasks.run_call``'s receiver). The find box is left alone.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QRectF, Signal
from PySide6.QtGui import QTextCursor

from desktop.answering.quote_spans import Span, pdf_spans, text_spans
from desktop.documents.model import Document
from desktop.ui import tasks

if TYPE_CHECKING:
    from desktop.ui.document_view import DocumentView

log = logging.getLogger("longdoc.ui.quote")


def _utf16(text: str) -> int:
    """Qt's length of ``text`` (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


class QuoteHighlighter(QObject):
    """Shows a quote on its page, highlighted whole, in a DocumentView."""

    shown = Signal(bool)  # after each quote: found and highlighted, or not

    def __init__(self, view: DocumentView) -> None:
        super().__init__(view)
        self._view = view
        self._request = 0
        self._pending: tuple[int, Document, list[Span]] | None = None  # PDF still loading
        self.spans: list[Span] = []  # what is highlighted now

    def show(self, number: int, quote: str) -> bool:
        """Go to page ``number`` and highlight ``quote`` there once found; False if there
        is no such page."""
        view = self._view
        doc = view.document
        if doc is None or not 1 <= number <= view.page_count():
            return False
        self.clear()
        self._request += 1
        request = self._request
        view.go_to_page(number)
        path = Path(doc.path)
        in_pdf = view.mode in ("pdf", "loading")
        pages = doc.pages

        def locate() -> list[Span]:
            return pdf_spans(path, number, quote) if in_pdf else text_spans(pages, number, quote)

        def failed(exc: BaseException) -> None:
            log.warning("could not locate a quote on page %d: %s", number, exc)
            self._found(request, doc, number, quote, in_pdf, [])

        tasks.run_call(
            locate,
            receiver=self,
            success=lambda spans: self._found(request, doc, number, quote, in_pdf, spans),
            failure=failed,
            name="locate quote",
        )
        return True

    def text(self) -> str:
        """The characters highlighted, page by page ("" when none)."""
        return "\n".join(s.text for s in self.spans)

    def clear(self) -> None:
        """No quote highlighted (and a result still on its way dropped)."""
        self._request += 1
        self._pending = None
        self.spans = []
        self._view.pdf_view.set_highlight([])

    def loaded(self) -> None:
        """The PDF finished opening: highlight what was found meanwhile."""
        if self._pending is not None:
            request, doc, spans = self._pending
            self._pending = None
            self._apply(request, doc, spans)

    def _found(
        self,
        request: int,
        doc: Document,
        number: int,
        quote: str,
        in_pdf: bool,
        spans: list[Span],
    ) -> None:
        view = self._view
        if request != self._request or view.document is not doc:
            return  # another quote or document since
        if in_pdf and view.mode == "text":
            self.show(number, quote)  # QtPdf could not open the file: look in the text
            return
        if view.mode == "loading":
            self._pending = (request, doc, spans)
            return
        self._apply(request, doc, spans)

    def _apply(self, request: int, doc: Document, spans: list[Span]) -> None:
        view = self._view
        self.spans = spans
        if spans and view.mode == "pdf":
            view.pdf_view.set_highlight(
                [(s.number - 1, [QRectF(*rect) for rect in s.rects]) for s in spans]
            )
            view.pdf_view.scroll_to_highlight()
        elif spans and view.mode == "text":
            text = view.text_view
            start = self._position(doc, spans[0].number, spans[0].start)
            cursor = QTextCursor(text.document())
            cursor.setPosition(start)
            cursor.setPosition(
                self._position(doc, spans[-1].number, spans[-1].end),
                QTextCursor.MoveMode.KeepAnchor,
            )
            text.setTextCursor(cursor)
            text.ensureCursorVisible()
        self.shown.emit(bool(spans))

    def _position(self, doc: Document, number: int, offset: int) -> int:
        """The text view's position of character ``offset`` of page ``number``'s text."""
        text = self._view.text_view
        block = text.document().findBlockByNumber(text.page_blocks[number - 1] + 1)
        return block.position() + _utf16(doc.pages[number - 1].text[:offset])
