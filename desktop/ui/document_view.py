"""The document: PDFs rendered by QtPdf, other documents as read-only text with page anchors.

Both views navigate by page number and by printed label (the labels the citations use),
zoom (PDF) and find text with every hit highlighted. Text is shown in a QPlainTextEdit, so
nothing in a document is ever interpreted as markup.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPoint, QPointF, Qt, Signal, Slot
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

        self.pdf = QPdfDocument(self)
        self.pdf_view = QPdfView(self)
        self.pdf_view.setDocument(self.pdf)
        self.pdf_view.setPageMode(QPdfView.PageMode.MultiPage)
        self.pdf_view.setZoomMode(QPdfView.ZoomMode.FitToWidth)
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

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toolbar)
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
        """ "empty", "pdf" or "text"."""
        return {0: "empty", 1: "pdf", 2: "text"}[self.stack.currentIndex()]

    def clear(self) -> None:
        """The empty state."""
        self.document = None
        self._index = None
        self._current = 0
        self.pdf.close()
        self.text_view.clear_document()
        self.stack.setCurrentIndex(0)
        self.toolbar.setEnabled(False)
        self.toolbar.setVisible(False)  # the empty state is just the invitation to drop
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
        pdf_ok = (
            doc.kind == "pdf"
            and path.is_file()
            and self.pdf.load(str(path)) == QPdfDocument.Error.None_
        )
        if pdf_ok:
            self.stack.setCurrentIndex(1)
            self.pdf_view.setZoomMode(QPdfView.ZoomMode.FitToWidth)
        else:
            self._fill_text(doc)
            self.stack.setCurrentIndex(2)
        self.toolbar.setEnabled(True)
        self.toolbar.setVisible(True)
        self.zoom_in_button.setEnabled(pdf_ok)
        self.zoom_out_button.setEnabled(pdf_ok)
        self.fit_button.setEnabled(pdf_ok)
        self.page_count_label.setText(f"of {len(doc.pages)}")
        self._current = 0
        self.go_to_page(1)

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

    def go_to_page(self, number: int) -> None:
        """Show page ``number`` (1-based, clamped)."""
        count = self.page_count()
        if not count:
            return
        number = max(1, min(number, count))
        if self.mode == "pdf":
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
        self._show_hits()

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
