"""The document: PDFs rendered by QtPdf, other documents as read-only text with page anchors.

Both views navigate by page number and by printed label (the labels the citations use)
and zoom (PDF). Its parts: the find bar (``find_bar.FindBar``: every hit highlighted, Enter
steps through them) and a checked quote highlighted whole (``quote_highlight``). Text is
shown in a QPlainTextEdit, so nothing in a document is ever interpreted as markup.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt, QThread, Signal, Slot
from PySide6.QtGui import QPalette, QTextCursor
from PySide6.QtPdf import QPdfDocument
from PySide6.QtPdfWidgets import QPdfView
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QStackedWidget,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.citations import PageIndex
from desktop.documents.anchors import anchor_resolver
from desktop.documents.ingest import sha256_file
from desktop.documents.model import Document
from desktop.ui import tasks
from desktop.ui.find_bar import FindBar, tool_button
from desktop.ui.pdf_view import PdfPages
from desktop.ui.quote_highlight import QuoteHighlighter
from desktop.ui.text_view import DocumentText

ZOOM_STEP = 1.2


class DocumentView(QWidget):
    """Shows one document; emits ``page_changed`` with the 1-based page number."""

    page_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document: Document | None = None
        self._index: PageIndex | None = None  # printed labels, as citations resolve them
        self._anchors: list[int] = []  # text view: block number of each page heading
        self._current = 0
        self._load_id = 0  # the PDF load in flight; older loads are dropped
        self._pending_page = 1  # where to go once the PDF is loaded

        self.prev_button = tool_button(self, QStyle.StandardPixmap.SP_ArrowBack, "Previous page")
        self.prev_button.clicked.connect(self.previous_page)
        self.next_button = tool_button(self, QStyle.StandardPixmap.SP_ArrowForward, "Next page")
        self.next_button.clicked.connect(self.next_page)
        self.page_edit = QLineEdit()
        self.page_edit.setToolTip("Go to a page: its printed label (iv, 12) or #number")
        self.page_edit.setMaximumWidth(80)
        self.page_edit.returnPressed.connect(self._on_page_edit_return_pressed)
        self.page_count_label = QLabel()
        self.zoom_out_button = QToolButton()
        self.zoom_out_button.setText("−")
        self.zoom_out_button.setToolTip("Zoom out (Ctrl+-)")
        self.zoom_out_button.clicked.connect(self.zoom_out)
        self.zoom_in_button = QToolButton()
        self.zoom_in_button.setText("+")
        self.zoom_in_button.setToolTip("Zoom in (Ctrl++)")
        self.zoom_in_button.clicked.connect(self.zoom_in)
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Fit the page width")
        self.fit_button.clicked.connect(self.fit_width)
        self.empty_label = QLabel(
            "Drop a PDF, Word, transcript, text or Markdown file here\n"
            "or open one with File ▸ Open (Ctrl+O)."
        )
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setObjectName("emptyState")
        self.empty_label.setTextFormat(Qt.TextFormat.PlainText)
        font = self.empty_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3 if font.pointSizeF() > 0 else 12)
        self.empty_label.setFont(font)
        self.empty_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)

        self.loading_label = QLabel()
        self.loading_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.loading_label.setTextFormat(Qt.TextFormat.PlainText)
        self.loading_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)

        # One QPdfDocument per document shown (see _set_pdf); this one is the empty start.
        self.pdf = QPdfDocument(self)
        self.pdf_view = PdfPages(self)
        self.pdf_view.setDocument(self.pdf)
        self.pdf_view.setPageMode(QPdfView.PageMode.MultiPage)
        self.pdf_view.pageNavigator().currentPageChanged.connect(
            self._on_navigator_current_page_changed
        )

        self.text_view = DocumentText(self)
        self.text_view.verticalScrollBar().valueChanged.connect(self._on_text_scrolled)

        self.finder = FindBar(
            self, self.pdf_view, self.text_view, lambda: self.mode, self._set_current
        )
        self.finder.set_document(self.pdf)
        self.search = self.finder.search  # the names scripts and tests use
        self.find_edit = self.finder.edit
        self.find_prev_button = self.finder.prev_button
        self.find_next_button = self.finder.next_button
        self.hits_label = self.finder.hits_label
        self.quotes = QuoteHighlighter(self)

        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.prev_button)
        bar.addWidget(self.page_edit)
        bar.addWidget(self.page_count_label)
        bar.addWidget(self.next_button)
        bar.addSpacing(12)
        bar.addWidget(self.zoom_out_button)
        bar.addWidget(self.zoom_in_button)
        bar.addWidget(self.fit_button)
        bar.addStretch(1)
        bar.addWidget(self.find_edit, 2)
        bar.addWidget(self.find_prev_button)
        bar.addWidget(self.find_next_button)
        bar.addWidget(self.hits_label)
        self.toolbar = QWidget()
        self.toolbar.setLayout(bar)

        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_label)
        self.stack.addWidget(self.pdf_view)
        self.stack.addWidget(self.text_view)
        self.stack.addWidget(self.loading_label)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toolbar)
        # What extraction could not read (damaged pages, parts not read), above the page.
        self.warnings_label = QLabel()
        self.warnings_label.setObjectName("documentWarnings")
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setTextFormat(Qt.TextFormat.PlainText)
        self.warnings_label.setVisible(False)
        layout.addWidget(self.warnings_label)
        layout.addWidget(self.stack, 1)
        self.clear()

    # --- showing -------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """ "empty", "pdf", "text" or "loading" (a PDF being opened off the UI thread)."""
        return {0: "empty", 1: "pdf", 2: "text", 3: "loading"}[self.stack.currentIndex()]

    def clear(self) -> None:
        """The empty state."""
        self.document = None
        self._index = None
        self._current = 0
        self._load_id += 1  # a PDF still loading is dropped when it arrives
        self.quotes.clear()
        self._set_pdf(QPdfDocument(self))
        self.text_view.clear_document()
        self.stack.setCurrentIndex(0)
        self.toolbar.setEnabled(False)
        self.toolbar.setVisible(False)  # the empty state is just the invitation to drop
        self.warnings_label.clear()
        self.warnings_label.setVisible(False)
        self.page_edit.clear()
        self.page_count_label.clear()
        self.hits_label.clear()

    def show_document(self, doc: Document) -> None:
        """Show ``doc``: the PDF itself when the file is there, else its extracted text."""
        if self.document is not None and self.document.sha256 == doc.sha256:
            return
        self.clear()
        self.document = doc
        self._index = PageIndex(doc.pages, anchor_resolver(doc.kind, doc.pages))
        path = Path(doc.path)
        self.toolbar.setEnabled(True)
        self.toolbar.setVisible(True)
        if doc.warnings:
            self.warnings_label.setText("\n".join(f"Warning: {w}" for w in doc.warnings))
            self.warnings_label.setVisible(True)
        self.page_count_label.setText(f"of {len(doc.pages)}")
        self._current = 0
        self._pending_page = 1
        if doc.kind == "pdf" and path.is_file():
            # PDFium parses the file and lays out every page: 60-150 ms for a big PDF,
            # so it happens in a worker; the view shows "Opening…" until then.
            self._load_id += 1
            load_id = self._load_id
            self.loading_label.setText(f"Opening {path.name}…")
            self.stack.setCurrentIndex(3)
            self._set_zoomable(False)
            self._set_current(1)
            ui_thread = self.thread()
            tasks.run_call(
                lambda: _load_pdf(path, doc.sha256, ui_thread),
                receiver=self,
                success=lambda pdf: self._on_pdf_loaded(load_id, doc, pdf),
                failure=lambda exc: self._on_pdf_loaded(load_id, doc, exc),
                name="open pdf",
            )
            return
        self._show_text(doc)

    def _show_text(self, doc: Document) -> None:
        self._fill_text(doc)
        self.stack.setCurrentIndex(2)
        self._set_zoomable(False)
        page = self._pending_page
        self._current = 0
        self.go_to_page(page)
        self.finder.restart()

    def _on_pdf_loaded(
        self, load_id: int, doc: Document, pdf: QPdfDocument | BaseException | None
    ) -> None:
        if load_id != self._load_id or self.document is not doc:
            if isinstance(pdf, QPdfDocument):
                pdf.deleteLater()  # another document was opened meanwhile
            return
        if isinstance(pdf, FileChanged):
            lines = [self.warnings_label.text(), f"Warning: {pdf}"]
            self.warnings_label.setText("\n".join(line for line in lines if line))
            self.warnings_label.setVisible(True)
        if not isinstance(pdf, QPdfDocument):  # QtPdf cannot open what PDFium extracted,
            self._show_text(doc)  # or the file is another now: the text as extracted
            return
        self._set_pdf(pdf)
        self.stack.setCurrentIndex(1)
        self.pdf_view.setZoomMode(QPdfView.ZoomMode.FitToWidth)
        self._set_zoomable(True)
        page = self._pending_page
        self._current = 0
        self.go_to_page(page)
        self.finder.restart()  # words typed while the PDF was opening
        self.quotes.loaded()  # a quote clicked meanwhile

    def _set_pdf(self, pdf: QPdfDocument) -> None:
        """Show ``pdf`` in the view and the search: a new QPdfDocument per document, since
        QPdfView keeps rendered page images per page number, and a render still in flight
        for the previous file would otherwise land as the new file's page."""
        old = self.pdf
        pdf.setParent(self)
        self.pdf = pdf
        self.pdf_view.setDocument(pdf)
        self.finder.set_document(pdf)
        if old is not pdf:
            old.close()
            old.deleteLater()

    def _set_zoomable(self, on: bool) -> None:
        self.zoom_in_button.setEnabled(on)
        self.zoom_out_button.setEnabled(on)
        self.fit_button.setEnabled(on)

    def _fill_text(self, doc: Document) -> None:
        """The extracted text with a rule per page; remembers where each page starts."""
        self.text_view.show_document(doc)
        self._anchors = self.text_view.page_blocks

    # --- navigation -----------------------------------------------------------------------

    def page_count(self) -> int:
        """Pages in the shown document (0 when empty)."""
        return len(self.document.pages) if self.document else 0

    def current_page(self) -> int:
        """1-based number of the page shown (0 when empty)."""
        return self._current

    def number_for_label(self, label: str) -> int | None:
        """The page a printed label, a cited range (its first page), ``#n`` or a number names."""
        pages = self._index.resolve_range(label) if self._index is not None else ()
        if pages:
            return pages[0]
        label = label.strip()
        if label.isdigit() and 1 <= int(label) <= self.page_count():
            return int(label)  # typed in the page box: a page without that label, by position
        return None

    def go_to_citation(self, label: str | None, number: int | None) -> bool:
        """Show the page a citation names; False if there is no such page.

        In a transcript or Word document the cited line itself (a moment, a paragraph) is
        scrolled into view and selected.
        """
        self.quotes.clear()
        block = self.text_view.block_for_anchor(label) if label and self.mode == "text" else None
        if block is not None:
            self.text_view.select_block(block)
            self._set_current(self.text_view.page_of_block(block))
            return True
        target = number if number is not None else self.number_for_label(label or "")
        if target is None or not 1 <= target <= self.page_count():
            return False
        self.go_to_page(target)
        return True

    def show_quote(self, number: int, quote: str) -> bool:
        """Show page ``number``, then ``quote`` highlighted on it, whole, once found off the
        UI thread (``quotes.shown`` says whether it was); False if there is no such page.

        A PDF paints the quote's characters where the rendered page has them, also over
        line breaks and onto the next page; text selects it. The find box is left alone.
        """
        return self.quotes.show(number, quote)

    def highlighted_quote(self) -> str:
        """The characters of the quote highlighted now, as the page has them ("": none)."""
        return self.quotes.text()

    def go_to_page(self, number: int) -> None:
        """Show page ``number`` (1-based, clamped)."""
        count = self.page_count()
        if not count:
            return
        number = max(1, min(number, count))
        if self.mode == "loading":
            self._pending_page = number
        elif self.mode == "pdf":
            navigator = self.pdf_view.pageNavigator()
            navigator.jump(number - 1, QPointF(), navigator.currentZoom())
        elif self.mode == "text":
            block = self.text_view.document().findBlockByNumber(self._anchors[number - 1])
            cursor = QTextCursor(block)
            # Scroll past the page first, then back, so the heading lands at the top.
            self.text_view.moveCursor(QTextCursor.MoveOperation.End)
            self.text_view.setTextCursor(cursor)
            self.text_view.ensureCursorVisible()
        self._set_current(number)

    def next_page(self) -> None:
        """One page on."""
        self.go_to_page(self._current + 1)

    def previous_page(self) -> None:
        """One page back."""
        self.go_to_page(self._current - 1)

    def _set_current(self, number: int) -> None:
        if number == self._current or self.document is None:
            return
        self._current = number
        page = self.document.pages[number - 1]
        self.page_edit.setText(page.label)
        self.prev_button.setEnabled(number > 1)
        self.next_button.setEnabled(number < self.page_count())
        self.page_changed.emit(number)

    @Slot()
    def _on_page_edit_return_pressed(self) -> None:
        number = self.number_for_label(self.page_edit.text())
        if number is None:
            self.page_edit.selectAll()
            self.hits_label.setText(f"No page {self.page_edit.text().strip()!r}")
            return
        self.go_to_page(number)

    @Slot(int)
    def _on_navigator_current_page_changed(self, index: int) -> None:
        if self.mode == "pdf":
            self._set_current(index + 1)

    @Slot(int)
    def _on_text_scrolled(self, _value: int) -> None:
        if self.mode != "text" or not self._anchors:
            return
        top = self.text_view.cursorForPosition(QPoint(0, 0)).blockNumber()
        # The last page whose heading is at or above the top line.
        lo, hi = 0, len(self._anchors) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._anchors[mid] <= top:
                lo = mid
            else:
                hi = mid - 1
        self._set_current(lo + 1)

    # --- zoom -------------------------------------------------------------------------------

    def zoom_in(self) -> None:
        """Larger."""
        self._zoom(self.pdf_view.zoomFactor() * ZOOM_STEP)

    def zoom_out(self) -> None:
        """Smaller."""
        self._zoom(self.pdf_view.zoomFactor() / ZOOM_STEP)

    def _zoom(self, factor: float) -> None:
        if self.mode != "pdf":
            return
        self.pdf_view.setZoomMode(QPdfView.ZoomMode.Custom)
        self.pdf_view.setZoomFactor(max(0.1, min(factor, 8.0)))

    def fit_width(self) -> None:
        """Page width = view width."""
        self.pdf_view.setZoomMode(QPdfView.ZoomMode.FitToWidth)

    # --- find (find_bar.FindBar) ---------------------------------------------------------------

    def focus_find(self) -> None:
        """Put the cursor in the find box."""
        self.find_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.find_edit.selectAll()

    def hit_count(self) -> int:
        """How many hits the current search has."""
        return self.finder.hit_count()

    def find_next(self) -> None:
        """The next hit, wrapping around."""
        self.finder.find_next()

    def find_previous(self) -> None:
        """The previous hit, wrapping around."""
        self.finder.find_previous()


class FileChanged(Exception):
    """The file is no longer the one the document was extracted from."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path.name} has changed since it was added; its text as read then is shown "
            "(add the file again to read the new version)."
        )


def _load_pdf(path: Path, sha256: str, ui_thread: QThread) -> QPdfDocument | None:
    """Open a PDF in a worker and hand the QPdfDocument to the UI thread (None: cannot).

    Only the bytes extracted (``sha256``): pages of another version would not match the
    citations and quotes, and QtPdf's own PDFium never returns from loading some damaged
    files (unreadablemetadata.pdf) that extraction refuses.
    """
    if sha256_file(path) != sha256:
        raise FileChanged(path)
    pdf = QPdfDocument()
    if pdf.load(str(path)) != QPdfDocument.Error.None_:
        return None
    pdf.moveToThread(ui_thread)  # a QObject moves only from its own thread
    return pdf
