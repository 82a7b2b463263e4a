"""The document viewer's find bar: every hit highlighted, Enter and the arrows step through.

A PDF is searched by QtPdf's search model, which finds its hits a page at a time as the
event loop turns: Enter pressed before the first hit has arrived is kept and carried out
when it does, so Enter always goes to the first hit, then the next (after a second the
rest of the document is searched at once, so a word that is nowhere says "not found").
Text is searched at once (QTextDocument.find).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QObject, QTimer, Slot
from PySide6.QtGui import QPalette, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtPdf import QPdfDocument, QPdfSearchModel
from PySide6.QtWidgets import QLabel, QLineEdit, QStyle, QTextEdit, QToolButton, QWidget

from desktop.ui.pdf_view import PdfPages
from desktop.ui.text_view import DocumentText

MAX_HIGHLIGHTS = 2_000  # more hits than this are counted, not all painted
PENDING_MS = 1_000  # how long Enter waits for QtPdf's first hit before searching the rest


def tool_button(owner: QWidget, icon: QStyle.StandardPixmap, tip: str) -> QToolButton:
    """A flat toolbar button with a standard icon."""
    button = QToolButton()
    button.setIcon(owner.style().standardIcon(icon))
    button.setToolTip(tip)
    button.setAutoRaise(True)
    return button


class FindBar(QObject):
    """The find box, its arrows and hit count, over a PDF view and a text view."""

    def __init__(
        self,
        owner: QWidget,
        pdf_view: PdfPages,
        text_view: DocumentText,
        mode: Callable[[], str],
        reached: Callable[[int], None],
    ) -> None:
        super().__init__(owner)
        self._owner = owner
        self._pdf_view = pdf_view
        self._text_view = text_view
        self._mode = mode  # the view's mode: "pdf", "text"...
        self._reached = reached  # a hit's page (1-based) is shown
        self._hits: list[QTextCursor] = []
        self._hit = -1
        self._pending = 0  # a step asked for before the PDF's first hit arrived

        self.edit = QLineEdit()
        self.edit.setPlaceholderText("Find in document (Ctrl+F)")
        self.edit.setClearButtonEnabled(True)
        self.edit.returnPressed.connect(self.find_next)
        self.edit.textChanged.connect(self._on_edit_text_changed)
        self.prev_button = tool_button(owner, QStyle.StandardPixmap.SP_ArrowUp, "Previous hit")
        self.prev_button.clicked.connect(self.find_previous)
        self.next_button = tool_button(owner, QStyle.StandardPixmap.SP_ArrowDown, "Next hit")
        self.next_button.clicked.connect(self.find_next)
        self.hits_label = QLabel()

        self.search = QPdfSearchModel(self)
        pdf_view.setSearchModel(self.search)
        self.search.rowsInserted.connect(self._on_search_rows_inserted)
        self.search.modelReset.connect(self._on_search_rows_inserted)

    def set_document(self, pdf: QPdfDocument) -> None:
        """Search this PDF."""
        self.search.setDocument(pdf)

    def restart(self) -> None:
        """Search the shown document for what the box holds (a document was just shown)."""
        self._on_edit_text_changed(self.edit.text())

    def hit_count(self) -> int:
        """How many hits the current search has (so far, in a PDF)."""
        if self._mode() == "pdf":
            return self.search.rowCount(QModelIndex())
        return len(self._hits)

    def find_next(self) -> None:
        """The next hit (the first one after new words), wrapping around."""
        self._step(+1)

    def find_previous(self) -> None:
        """The previous hit, wrapping around."""
        self._step(-1)

    @Slot(str)
    def _on_edit_text_changed(self, text: str) -> None:
        self._hit = -1
        self._pending = 0
        if self._mode() == "pdf":
            self.search.setSearchString(text)
            self._show_hits()
        elif self._mode() == "text":
            self._find_in_text(text)

    def _find_in_text(self, text: str) -> None:
        self._hits = []
        selections: list[QTextEdit.ExtraSelection] = []
        if text:
            doc = self._text_view.document()
            cursor = doc.find(text, 0)
            palette = self._owner.palette()
            highlight = QTextCharFormat()
            highlight.setBackground(palette.color(QPalette.ColorRole.Highlight))
            highlight.setForeground(palette.color(QPalette.ColorRole.HighlightedText))
            while not cursor.isNull():
                self._hits.append(cursor)
                if len(selections) < MAX_HIGHLIGHTS:
                    selection = QTextEdit.ExtraSelection()
                    selection.cursor = cursor
                    selection.format = highlight
                    selections.append(selection)
                cursor = doc.find(text, cursor, QTextDocument.FindFlag(0))
        self._text_view.setExtraSelections(selections)
        self._show_hits()

    @Slot()
    def _on_search_rows_inserted(self) -> None:
        if self._pending and self.hit_count():
            step, self._pending = self._pending, 0
            self._step(step)  # Enter was pressed before the first hit arrived
            return
        self._show_hits()

    def _settle(self, text: str) -> None:
        """Still waiting for the first hit of ``text``: search the pages left now."""
        if not self._pending or self.edit.text() != text or self._mode() != "pdf":
            return
        if self.search.resultAtIndex(0).page() < 0:  # searches on until a hit, or the end
            self._pending = 0
        self._on_search_rows_inserted()

    def _show_hits(self) -> None:
        if not self.edit.text():
            self.hits_label.clear()
            return
        count = self.hit_count()
        if self._pending and not count:
            self.hits_label.setText("searching…")
            return
        where = f"{self._hit + 1} of {count}" if self._hit >= 0 else f"{count} found"
        self.hits_label.setText(where if count else "not found")

    def _step(self, step: int) -> None:
        count = self.hit_count()
        if not count:
            # QtPdf may not have reached the first hit yet: go there when it does (or,
            # a second on, search the rest at once: then "not found" is known).
            self._pending = step if self._mode() == "pdf" and self.edit.text() else 0
            if self._pending:
                text = self.edit.text()
                QTimer.singleShot(PENDING_MS, self, lambda: self._settle(text))
            self._show_hits()
            return
        self._hit = (self._hit + step) % count
        if self._mode() == "pdf":
            self._pdf_view.setCurrentSearchResultIndex(self._hit)
            link = self.search.resultAtIndex(self._hit)
            self._pdf_view.pageNavigator().jump(link)
            self._reached(link.page() + 1)
        else:
            cursor = self._hits[self._hit]
            self._text_view.setTextCursor(cursor)
            self._text_view.ensureCursorVisible()
        self._show_hits()
