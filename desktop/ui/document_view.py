"""The document: PDFs rendered by QtPdf, other documents as read-only text with page anchors.

Both views navigate by page number and by printed label (the labels the citations use),
zoom (PDF) and find text with every hit highlighted. Text is shown in a QPlainTextEdit, so
nothing in a document is ever interpreted as markup.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPoint, QPointF, Qt, QThread, Signal, Slot
from PySide6.QtGui import QPalette, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtPdf import QPdfDocument, QPdfSearchModel
from PySide6.QtPdfWidgets import QPdfView
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QStackedWidget,
    QStyle,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.citations import PageIndex
from desktop.documents.anchors import anchor_resolver
from desktop.documents.model import Document
from desktop.ui import tasks
from desktop.ui.pdf_view import PdfPages
from desktop.ui.text_view import DocumentText

MAX_HIGHLIGHTS = 2_000  # more hits than this are counted, not all painted
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
        self._hits: list[QTextCursor] = []
        self._hit = -1
        self._load_id = 0  # the PDF load in flight; older loads are dropped
        self._pending_page = 1  # where to go once the PDF is loaded
        self._quote_page = 0  # a quote being highlighted: its page, until the search finds it

        self.prev_button = self._tool(QStyle.StandardPixmap.SP_ArrowBack, "Previous page")
        self.prev_button.clicked.connect(self.previous_page)
        self.next_button = self._tool(QStyle.StandardPixmap.SP_ArrowForward, "Next page")
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
        self.find_edit = QLineEdit()
        self.find_edit.setPlaceholderText("Find in document (Ctrl+F)")
        self.find_edit.setClearButtonEnabled(True)
        self.find_edit.returnPressed.connect(self.find_next)
        self.find_edit.textChanged.connect(self._on_find_edit_text_changed)
        self.find_prev_button = self._tool(QStyle.StandardPixmap.SP_ArrowUp, "Previous hit")
        self.find_prev_button.clicked.connect(self.find_previous)
        self.find_next_button = self._tool(QStyle.StandardPixmap.SP_ArrowDown, "Next hit")
        self.find_next_button.clicked.connect(self.find_next)
        self.hits_label = QLabel()

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
        self.search = QPdfSearchModel(self)
        self.search.setDocument(self.pdf)
        self.pdf_view.setSearchModel(self.search)
        self.search.rowsInserted.connect(self._on_search_rows_inserted)
        self.search.modelReset.connect(self._on_search_rows_inserted)
        self.pdf_view.pageNavigator().currentPageChanged.connect(
            self._on_navigator_current_page_changed
        )

        self.text_view = DocumentText(self)
        self.text_view.verticalScrollBar().valueChanged.connect(self._on_text_scrolled)

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

    def _tool(self, icon: QStyle.StandardPixmap, tip: str) -> QToolButton:
        button = QToolButton()
        button.setIcon(self.style().standardIcon(icon))
        button.setToolTip(tip)
        button.setAutoRaise(True)
        return button

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
                lambda: _load_pdf(path, ui_thread),
                receiver=self,
                success=lambda pdf: self._on_pdf_loaded(load_id, doc, pdf),
                failure=lambda _exc: self._on_pdf_loaded(load_id, doc, None),
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

    def _on_pdf_loaded(self, load_id: int, doc: Document, pdf: QPdfDocument | None) -> None:
        if load_id != self._load_id or self.document is not doc:
            if pdf is not None:
                pdf.deleteLater()  # another document was opened meanwhile
            return
        if pdf is None:  # QtPdf cannot open what PDFium extracted: show the text
            self._show_text(doc)
            return
        self._set_pdf(pdf)
        self.stack.setCurrentIndex(1)
        self.pdf_view.setZoomMode(QPdfView.ZoomMode.FitToWidth)
        self._set_zoomable(True)
        page = self._pending_page
        self._current = 0
        self.go_to_page(page)
        if self._quote_page:  # a quote clicked while the PDF was opening
            self.search.setSearchString(self.find_edit.text())

    def _set_pdf(self, pdf: QPdfDocument) -> None:
        """Show ``pdf`` in the view and the search: a new QPdfDocument per document, since
        QPdfView keeps rendered page images per page number, and a render still in flight
        for the previous file would otherwise land as the new file's page."""
        old = self.pdf
        pdf.setParent(self)
        self.pdf = pdf
        self.pdf_view.setDocument(pdf)
        self.search.setDocument(pdf)
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
        """Show page ``number`` with ``quote`` highlighted on it; False if it is not there.

        A PDF highlights through the search model: QtPdf searches PDFium's text line by
        line, so the search is for the longest line of the passage as the page's own text
        has it (``PageIndex.locate`` finds it through hyphens, ligatures and line breaks),
        and the result on that page becomes the current one. Text is selected.
        """
        if self._index is None or self.document is None or not 1 <= number <= self.page_count():
            return False
        span = self._index.locate(number, quote)
        if span is None:
            return False
        fragment = quote_fragment(self.document.pages[number - 1].text[span[0] : span[1]])
        self.go_to_page(number)
        if self.mode == "text":
            start = self.text_view.document().findBlockByNumber(self._anchors[number - 1])
            found = self.text_view.document().find(fragment, start.position())
            if not found.isNull():
                self.text_view.setTextCursor(found)
                self.text_view.ensureCursorVisible()
            return True
        self.find_edit.setText(fragment)  # the find bar says what is highlighted
        self.find_edit.setCursorPosition(0)  # from the quote's first words
        self._quote_page = number
        self._on_search_rows_inserted()
        return True

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

    # --- find ---------------------------------------------------------------------------------

    def focus_find(self) -> None:
        """Put the cursor in the find box."""
        self.find_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.find_edit.selectAll()

    def hit_count(self) -> int:
        """How many hits the current search has."""
        if self.mode == "pdf":
            return self.search.rowCount(QModelIndex())
        return len(self._hits)

    @Slot(str)
    def _on_find_edit_text_changed(self, text: str) -> None:
        self._hit = -1
        self._quote_page = 0
        if self.mode == "pdf":
            self.search.setSearchString(text)
            self._on_search_rows_inserted()
        elif self.mode == "text":
            self._find_in_text(text)

    def _find_in_text(self, text: str) -> None:
        self._hits = []
        selections: list[QTextEdit.ExtraSelection] = []
        if text:
            doc = self.text_view.document()
            cursor = doc.find(text, 0)
            highlight = QTextCharFormat()
            highlight.setBackground(self.palette().color(QPalette.ColorRole.Highlight))
            highlight.setForeground(self.palette().color(QPalette.ColorRole.HighlightedText))
            while not cursor.isNull():
                self._hits.append(cursor)
                if len(selections) < MAX_HIGHLIGHTS:
                    selection = QTextEdit.ExtraSelection()
                    selection.cursor = cursor
                    selection.format = highlight
                    selections.append(selection)
                cursor = doc.find(text, cursor, QTextDocument.FindFlag(0))
        self.text_view.setExtraSelections(selections)
        self._show_hits()

    @Slot()
    def _on_search_rows_inserted(self) -> None:
        if self._quote_page and self.mode == "pdf":
            self._highlight_quote_result()
        self._show_hits()

    def _highlight_quote_result(self) -> None:
        """Make the first hit on the quoted page the current (highlighted) one, in view."""
        for row in range(self.search.rowCount(QModelIndex())):
            link = self.search.resultAtIndex(row)
            if link.page() == self._quote_page - 1:
                self._quote_page = 0
                self._hit = row
                self.pdf_view.setCurrentSearchResultIndex(row)
                self.pdf_view.pageNavigator().jump(link)
                return

    def _show_hits(self) -> None:
        if not self.find_edit.text():
            self.hits_label.clear()
            return
        count = self.hit_count()
        where = f"{self._hit + 1} of {count}" if self._hit >= 0 else f"{count} found"
        self.hits_label.setText(where if count else "not found")

    def find_next(self) -> None:
        """The next hit, wrapping around."""
        self._step_hit(+1)

    def find_previous(self) -> None:
        """The previous hit, wrapping around."""
        self._step_hit(-1)

    def _step_hit(self, step: int) -> None:
        count = self.hit_count()
        if not count:
            self._show_hits()
            return
        self._hit = (self._hit + step) % count
        if self.mode == "pdf":
            self.pdf_view.setCurrentSearchResultIndex(self._hit)
            link = self.search.resultAtIndex(self._hit)
            self.pdf_view.pageNavigator().jump(link)
            self._set_current(link.page() + 1)
        else:
            cursor = self._hits[self._hit]
            self.text_view.setTextCursor(cursor)
            self.text_view.ensureCursorVisible()
        self._show_hits()


def quote_fragment(passage: str, limit: int = 80) -> str:
    """The longest line of a passage (without a line-end hyphen), at most ``limit``
    characters cut at a word: what QtPdf's search can find on the page."""
    lines = [line.strip().removesuffix("-").strip() for line in passage.splitlines()]
    best = max(lines, key=len, default="")
    if len(best) > limit:
        cut = best.rfind(" ", 0, limit)
        best = best[: cut if cut > limit // 2 else limit]
    return best


def _load_pdf(path: Path, ui_thread: QThread) -> QPdfDocument | None:
    """Open a PDF in a worker and hand the QPdfDocument to the UI thread (None: cannot)."""
    pdf = QPdfDocument()
    if pdf.load(str(path)) != QPdfDocument.Error.None_:
        return None
    pdf.moveToThread(ui_thread)  # a QObject moves only from its own thread
    return pdf
