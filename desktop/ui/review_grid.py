"""The batch window's review grid: one row per document, one column per question.

It uses its width: the question columns share the table's width, each at least a quarter
of it (more questions than three or four scroll sideways); a header shows its question on up to two
lines, elided, with the whole question in its tooltip; cells wrap and rows grow to their
text; columns can be dragged wider (then they keep the user's width); Ctrl+C copies the
selected cells as tab-separated text, whole answers, ready for a spreadsheet.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication, QKeyEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

MIN_SHARE = 0.25  # of the table's width, for each question column
HEADER_LINES = 2
CELL_CHARS = 600  # shown in a cell; the whole answer is copied and opens on double-click
FULL_TEXT = Qt.ItemDataRole.UserRole + 1


def header_text(question: str, metrics: QFontMetrics, width: int) -> str:
    """``question`` in at most two lines of ``width`` pixels, the last elided."""
    lines: list[str] = []
    words = question.split()
    while words and len(lines) < HEADER_LINES - 1:
        line = words.pop(0)
        while words and metrics.horizontalAdvance(f"{line} {words[0]}") <= width:
            line = f"{line} {words.pop(0)}"
        lines.append(line)
    if words:
        rest = " ".join(words)
        lines.append(metrics.elidedText(rest, Qt.TextElideMode.ElideRight, width))
    return "\n".join(lines)


def tsv_field(text: str) -> str:
    """One cell as a spreadsheet reads tab-separated text: quoted if it holds a tab, a line
    break or a quote (quotes doubled)."""
    if any(c in text for c in '\t\n\r"'):
        return '"' + text.replace('"', '""') + '"'
    return text


class ReviewGrid(QTableWidget):
    """Documents by questions; see the module's docstring."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 0, parent)
        self.setObjectName("reviewGrid")
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setWordWrap(True)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setTabKeyNavigation(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setStretchLastSection(False)
        header.sectionResized.connect(self._on_section_resized)
        rows = self.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        rows.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.questions: list[str] = []
        self._fitting = False
        self._user_sized: set[int] = set()  # columns the user dragged: their width stays

    # --- contents ----------------------------------------------------------------------

    def prepare(self, questions: list[str], documents: list[str]) -> None:
        """An empty grid: one column per question, one row per document (by file name)."""
        self.clear()
        self.questions = list(questions)
        self._user_sized = set()
        self.setColumnCount(len(questions))
        self.setRowCount(len(documents) if questions else 0)
        for column, question in enumerate(questions):
            item = QTableWidgetItem(question)
            item.setToolTip(question)
            self.setHorizontalHeaderItem(column, item)
        if questions:
            self.setVerticalHeaderLabels(documents)
        self.fit_columns()

    def set_answer(self, row: int, column: int, text: str, flagged: bool) -> None:
        """A document's answer to a question (``flagged``: a quote did not check out)."""
        shown = text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
        item = QTableWidgetItem(("⚠ " if flagged else "") + shown)
        item.setData(FULL_TEXT, text)
        item.setToolTip("Double-click to read the answer and its citations.")
        item.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setItem(row, column, item)

    # --- widths ------------------------------------------------------------------------

    def fit_columns(self) -> None:
        """Share the width among the question columns, each at least a quarter of it;
        the headers' questions are wrapped and elided to their columns."""
        count = self.columnCount()
        if not count:
            return
        # A quarter of the whole table (document names included) at least; together they
        # fill what the document names leave.
        width = max(int(self.width() * MIN_SHARE) + 1, self.viewport().width() // count)
        self._fitting = True
        try:
            for column in range(count):
                if column not in self._user_sized:
                    self.setColumnWidth(column, width)
        finally:
            self._fitting = False
        self._update_headers()

    def _update_headers(self) -> None:
        metrics = self.horizontalHeader().fontMetrics()
        for column, question in enumerate(self.questions):
            item = self.horizontalHeaderItem(column)
            if item is not None:
                room = max(self.columnWidth(column) - 12, 20)
                item.setText(header_text(question, metrics, room))

    def _on_section_resized(self, column: int, _old: int, _new: int) -> None:
        if not self._fitting:
            self._user_sized.add(column)
            self._update_headers()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Columns follow the table's width (those the user sized keep theirs)."""
        super().resizeEvent(event)
        self.fit_columns()

    # --- copy --------------------------------------------------------------------------

    def selected_tsv(self) -> str:
        """The selected cells as tab-separated lines (whole answers; the rectangle the
        selection spans, cells not selected in it left empty)."""
        indexes = self.selectedIndexes()
        if not indexes:
            return ""
        rows = sorted({i.row() for i in indexes})
        columns = sorted({i.column() for i in indexes})
        chosen = {(i.row(), i.column()) for i in indexes}
        lines = []
        for row in rows:
            fields = []
            for column in columns:
                item = self.item(row, column)
                full = item.data(FULL_TEXT) if item is not None else None
                text = str(full) if full is not None else (item.text() if item else "")
                fields.append(tsv_field(text) if (row, column) in chosen else "")
            lines.append("\t".join(fields))
        return "\n".join(lines)

    def copy_selection(self) -> None:
        """Ctrl+C: the selected cells to the clipboard as tab-separated text."""
        text = self.selected_tsv()
        if text:
            QGuiApplication.clipboard().setText(text)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Ctrl+C copies the selection as tab-separated text (not only the current cell)."""
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_selection()
            event.accept()
            return
        super().keyPressEvent(event)
