"""The library: every ingested document, files being read, and files that failed.

The list is a table model over plain rows that computes each cell when the view asks for
it (only the rows on screen), and changes in one batch: a new context length is one
``dataChanged`` for the whole "Fits" column, a listing is one reset, an ingested document
is one inserted row. Filtering is done in the model too (no proxy re-checking every row).
So nothing on the UI thread is per row beyond a list scan (bench/bench_library.py).
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QIcon, QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.budget import ContextLimits, document_budget, explain_limit
from desktop.documents.model import Document
from desktop.errors import plural
from desktop.library import LibraryChanges, expand_paths
from desktop.session import DocumentSummary, Store
from desktop.ui import messages, tasks
from desktop.ui.library_follow import LibraryFollower
from desktop.ui.library_ingest import IngestQueue
from desktop.ui.search_results import SearchResults
from desktop.ui.session import image_only, unanswerable_reason

log = logging.getLogger("longdoc.ui.library")

COLUMNS = ("Title", "Pages", "Tokens", "Fits")
TOKENS_COLUMN = 2
FITS_COLUMN = 3
TITLE_CHARS = 18  # the least a title keeps before the Tokens column makes way
SHA_ROLE = Qt.ItemDataRole.UserRole + 1
STATE_ROLE = Qt.ItemDataRole.UserRole + 2  # "ready" | "queued" | "reading" | "failed"

_Index = QModelIndex | QPersistentModelIndex


@dataclass
class StatusRow:
    """A file being read, waiting, or that failed (not a document yet)."""

    path: str
    state: str  # "queued" | "reading" | "failed"
    text: str
    tip: str


Row = DocumentSummary | StatusRow


def summary_of(doc: Document, opened_at: float = 0.0) -> DocumentSummary:
    """A library row for a document just read (no second trip to the store)."""
    return DocumentSummary(
        sha256=doc.sha256,
        path=doc.path,
        title=doc.title,
        kind=doc.kind,
        pages=len(doc.pages),
        tokens=doc.tokens,
        chars=doc.chars,
        empty_pages=len(doc.empty_pages),
        opened_at=opened_at,
        warnings=tuple(doc.warnings),
    )


def _title(row: Row) -> str:
    if isinstance(row, StatusRow):
        return f"{os.path.basename(row.path)} — {row.text}"
    return row.title or os.path.basename(row.path)


@dataclass(frozen=True)
class FitRule:
    """What the "Fits" column depends on: the server's limits (None: not known yet), the
    answer's reserve, thinking, and whether the server's model reads images (None: not
    known yet)."""

    limits: ContextLimits | None = None
    reserve: int = 0
    thinking: bool = True
    reads_images: bool | None = None


class LibraryModel(QAbstractTableModel):
    """Status rows first (newest first), then documents, most recently opened first."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []
        self._shown: list[Row] | None = None  # the filtered rows; None = all
        self._filter = ""
        self._filter_keys: dict[int, str] = {}  # id(row) -> lower-case title and file name
        self._shas: set[str] = set()  # the documents listed (a new one needs no search)
        self.fit_rule = FitRule()
        self._icons: dict[str, QIcon] = {}
        self._placeholder: Any = None

    # --- what the view reads ---------------------------------------------------------

    def _visible(self) -> list[Row]:
        return self._rows if self._shown is None else self._shown

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._visible())

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def row_at(self, row: int) -> Row | None:
        """The row shown at ``row``."""
        visible = self._visible()
        return visible[row] if 0 <= row < len(visible) else None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        row = self.row_at(index.row()) if index.isValid() else None
        if row is None:
            return None
        column = index.column()
        if role == SHA_ROLE:
            return row.sha256 if isinstance(row, DocumentSummary) else None
        if role == STATE_ROLE:
            return row.state if isinstance(row, StatusRow) else "ready"
        if isinstance(row, StatusRow):
            return self._status_data(row, column, role)
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return _title(row)
            if column == 1:
                return f"{row.pages:,}"
            if column == 2:
                return f"{row.tokens:,}"
            return self.fits(row)[0]
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == 0:
                # The whole title (the cell may elide it), the path, and what extraction
                # could not read (damaged pages, parts).
                size = f"{plural(row.pages, 'page')}, {plural(row.tokens, 'token')}"
                warnings = [f"Warning: {w}" for w in row.warnings]
                lines = [_title(row), row.path, size, *warnings]
                return "\n".join(lines)
            if column == 1 and row.empty_pages:
                return f"{plural(row.empty_pages, 'page')} without text (scanned?)"
            if column == FITS_COLUMN:
                return self.fits(row)[1]
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (1, 2):
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        if role == Qt.ItemDataRole.DecorationRole and column == 0:
            return self._icons.get("warning" if row.warnings else "ready")
        return None

    def _status_data(self, row: StatusRow, column: int, role: int) -> Any:
        if column != 0:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return _title(row)
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.tip
        if role == Qt.ItemDataRole.DecorationRole:
            return self._icons.get(row.state)
        if role == Qt.ItemDataRole.ForegroundRole and row.state != "failed":
            return self._placeholder
        return None

    def fits(self, row: DocumentSummary) -> tuple[str, str]:
        """The "Fits" cell and its tooltip for a document."""
        rule = self.fit_rule
        reason = unanswerable_reason(row.kind, row.pages, row.empty_pages, rule.reads_images)
        if reason is not None:
            return "✗ no text", f"Cannot be asked about: {reason}"
        if image_only(row.kind, row.pages, row.empty_pages):
            # Its pages go as images (the core's rule); what they cost is counted when asked.
            if rule.reads_images:
                return (
                    "images",
                    "Its pages are images: asked about as images, which the server reads",
                )
            return "images", (
                "Its pages are images: asked about as images if the server's model reads "
                "them, otherwise run it through OCR (e.g. ocrmypdf)"
            )
        if rule.limits is None:
            return "", "The server's context length is not known yet"
        # The budget bar's figure for the whole document with the question box empty.
        budget = document_budget(row.tokens, rule.limits, rule.reserve, thinking=rule.thinking)
        if budget.fits:
            return "✓", f"Fits the context of {rule.limits.context_length:,} tokens"
        return (
            f"✗ +{budget.overflow:,}",
            f"{budget.overflow:,} tokens too many: {explain_limit(budget)}; ask about a page range",
        )

    def widest(self) -> tuple[str, str, str]:
        """The longest Pages, Tokens and Fits texts the documents have: one plain pass over
        the rows (no cell formatted, no budget but the largest document's), as the columns
        are sized from these on every change (bench/bench_library.py)."""
        pages = 0
        largest: DocumentSummary | None = None
        scans = False  # a PDF with no text layer: "images", or "✗ no text"
        for row in self._rows:
            if isinstance(row, DocumentSummary):
                pages = max(pages, row.pages)
                if largest is None or row.tokens > largest.tokens:
                    largest = row
                scans = scans or row.empty_pages >= row.pages
        if largest is None:
            return "", "", ""
        scan = "✗ no text" if self.fit_rule.reads_images is False else "images"
        fits = [self.fits(largest)[0], *([scan] if scans else [])]
        return f"{pages:,}", f"{largest.tokens:,}", max(fits, key=len)

    # --- changes, each in one batch ----------------------------------------------------

    def set_style(self, icons: dict[str, QIcon], placeholder: Any) -> None:
        """Icons per state and the dim colour of rows not ready (from the widget's style)."""
        self._icons = icons
        self._placeholder = placeholder

    def set_fit_rule(self, rule: FitRule) -> None:
        """New server limits (or settings): one change signal for the whole "Fits" column."""
        self.fit_rule = rule
        count = self.rowCount()
        if count:
            self.dataChanged.emit(
                self.index(0, FITS_COLUMN),
                self.index(count - 1, FITS_COLUMN),
                [Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole],
            )

    def lists(self, summaries: list[DocumentSummary]) -> bool:
        """True when these are the documents shown now, in order: a listing that follows
        this process's own change (a file read here) then needs no reset, which would
        drop a selection of several rows. (A row read here has no ``opened_at``.)"""
        mine = [r for r in self._rows if isinstance(r, DocumentSummary)]
        return len(mine) == len(summaries) and all(
            a == b or (a.sha256 == b.sha256 and replace(a, opened_at=b.opened_at) == b)
            for a, b in zip(mine, summaries, strict=True)
        )

    def set_documents(self, summaries: list[DocumentSummary]) -> None:
        """Replace the documents (status rows stay): one reset."""
        self.beginResetModel()
        status = [r for r in self._rows if isinstance(r, StatusRow)]
        self._rows = status + list(summaries)
        self._shas = {s.sha256 for s in summaries}
        self._filter_keys = {}
        self._refilter()
        self.endResetModel()

    def put_document(self, summary: DocumentSummary) -> None:
        """Add (or move to the top of the documents) one document: one inserted row."""
        self.remove_document(summary.sha256)
        first_doc = next(
            (i for i, r in enumerate(self._rows) if isinstance(r, DocumentSummary)),
            len(self._rows),
        )
        self._insert(first_doc, summary)

    def put_status(self, row: StatusRow) -> None:
        """Show a file's state at the top (replacing its earlier status row)."""
        self.remove_status(row.path)
        self._insert(0, row)

    def remove_status(self, path: str) -> None:
        """Drop a file's status row, if any (they are all at the top: no full scan)."""
        for i, row in enumerate(self._rows):
            if not isinstance(row, StatusRow):
                return
            if row.path == path:
                self._remove_at(i)
                return

    def remove_document(self, sha: str) -> None:
        """Drop a document's row."""
        if sha in self._shas:  # usually a new document: no search through the list
            self._remove_where(lambda r: isinstance(r, DocumentSummary) and r.sha256 == sha)

    def _insert(self, position: int, row: Row) -> None:
        if isinstance(row, DocumentSummary):
            self._shas.add(row.sha256)
        shown = self._shown
        if shown is None:
            self.beginInsertRows(QModelIndex(), position, position)
            self._rows.insert(position, row)
            self.endInsertRows()
            return
        self._rows.insert(position, row)
        if self._matches(row):
            # Where it lands among the shown rows: after every shown row before it.
            before = set(map(id, self._rows[:position]))
            at = sum(1 for r in shown if id(r) in before)
            self.beginInsertRows(QModelIndex(), at, at)
            shown.insert(at, row)
            self.endInsertRows()

    def _remove_where(self, match: Any) -> None:
        i = next((j for j, r in enumerate(self._rows) if match(r)), None)
        if i is not None:
            self._remove_at(i)

    def _remove_at(self, i: int) -> None:
        row = self._rows[i]
        if isinstance(row, DocumentSummary):
            self._shas.discard(row.sha256)
        shown = self._shown
        visible = self._rows if shown is None else shown
        at = next((j for j, r in enumerate(visible) if r is row), None)
        if at is not None:
            self.beginRemoveRows(QModelIndex(), at, at)
        del self._rows[i]
        if shown is not None and at is not None:
            del shown[at]
        self._filter_keys.pop(id(row), None)
        if at is not None:
            self.endRemoveRows()

    # --- filter ------------------------------------------------------------------------

    def set_filter(self, text: str) -> None:
        """Show only rows whose title or file name contains ``text`` (any case)."""
        self.beginResetModel()
        self._filter = text.strip().lower()
        self._refilter()
        self.endResetModel()

    def _refilter(self) -> None:
        self._shown = None if not self._filter else [r for r in self._rows if self._matches(r)]

    def _matches(self, row: Row) -> bool:
        if not self._filter:
            return True
        key = self._filter_keys.get(id(row))
        if key is None:
            title = row.title if isinstance(row, DocumentSummary) else ""
            key = f"{title}\n{row.path.rpartition(os.sep)[2]}".lower()
            self._filter_keys[id(row)] = key
        return self._filter in key

    # --- lookups -----------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Rows of any kind, shown or filtered out."""
        return len(self._rows)

    def find(self, sha: str) -> int | None:
        """The shown row of a document."""
        for i, row in enumerate(self._visible()):
            if isinstance(row, DocumentSummary) and row.sha256 == sha:
                return i
        return None

    def summary(self, sha: str) -> DocumentSummary | None:
        """A document's row, shown or not."""
        return next(
            (r for r in self._rows if isinstance(r, DocumentSummary) and r.sha256 == sha), None
        )


class LibraryPanel(QWidget):
    """Lists documents; reads new files in the background, one after another."""

    document_selected = Signal(str)  # sha256
    document_opened = Signal(object)  # Document, just read or found in the store
    ingest_finished = Signal()
    # Several documents selected: ask about them as a set, or compare two (sha256s, in
    # library order).
    set_ask_requested = Signal(list)
    compare_requested = Signal(str, str)
    # Remove here took a document out of the store: its sha256 and title as listed.
    document_removed = Signal(str, str)

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._open_after: Path | None = None  # the last file added: opened once read

        self.model = LibraryModel(self)
        style = self.style()
        self.model.set_style(
            {
                "ready": style.standardIcon(QStyle.StandardPixmap.SP_FileIcon),
                "queued": style.standardIcon(QStyle.StandardPixmap.SP_FileIcon),
                "reading": style.standardIcon(QStyle.StandardPixmap.SP_BrowserReload),
                "failed": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning),
                # A stored document that extraction could not read completely.
                "warning": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxInformation),
            },
            self.palette().placeholderText(),
        )

        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Search titles, pages and answers")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self._on_filter_edit_text_changed)
        # Pages and answers that say it, under the titles (desktop/ui/search_results.py).
        self.search_results = SearchResults(store)
        self.filter_edit.textChanged.connect(self.search_results.set_query)
        self.filter_edit.returnPressed.connect(self.search_results.run_now)
        self.ingest_finished.connect(self.search_results.refresh)  # new pages may say it

        # A table view, not a tree: QTreeView lays out every row on each reset or insert
        # (asking the model about each one: ~50 ms of Python calls at 10,000 documents);
        # a table with fixed row heights asks only about the rows on screen.
        self.view = QTableView()
        self.view.setObjectName("library")
        self.view.setModel(self.model)
        self.view.setShowGrid(False)
        self.view.setWordWrap(False)
        self.view.setAlternatingRowColors(True)
        # Extended: Ctrl/Shift-click selects several documents to ask about (or compare).
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._on_view_custom_context_menu_requested)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        rows = self.view.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.view.horizontalHeader()
        header.setHighlightSections(False)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        # Title stretches; the others fit their contents, measured from the widest texts
        # the model has (LibraryModel.widest), not by ResizeToContents: that formats up to
        # 1,000 rows (through the Python model) on every change. A width the user drags
        # holds until the next change of the list.
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)  # one fit per event-loop turn of changes
        self._fit_timer.timeout.connect(self.fit_columns)
        for change in (
            self.model.modelReset,
            self.model.rowsInserted,
            self.model.rowsRemoved,
            self.model.dataChanged,
        ):
            change.connect(self._fit_timer.start)
        self.fit_columns()
        # Tab moves between widgets, not through the cells (18 presses stayed in here).
        self.view.setTabKeyNavigation(False)
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_row_changed)
        self.view.selectionModel().selectionChanged.connect(self._update_set_button)

        self.empty_label = QLabel("No documents yet.\nDrop files or folders here.")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setTextFormat(Qt.TextFormat.PlainText)
        self.empty_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)

        self.add_button = QPushButton("Add…")
        self.add_button.setToolTip("Add documents (Ctrl+O)")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Forget the selected document and its answers")
        self.remove_button.clicked.connect(self.remove_selected)
        self.progress_label = QLabel()
        self.progress_label.setTextFormat(Qt.TextFormat.PlainText)
        self.ingest = IngestQueue(store, self.progress_label, self)
        self.ingest.status_changed.connect(self._on_ingest_status_changed)
        self.ingest.document_read.connect(self._on_ingest_document_read)
        self.ingest.finished.connect(self.ingest_finished)

        self.set_ask_button = QPushButton()
        self.set_ask_button.setObjectName("askAboutTheseButton")
        self.set_ask_button.setVisible(False)
        self.set_ask_button.clicked.connect(self._on_set_ask_button_clicked)

        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.search_results, 2)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self.progress_label)
        layout.addWidget(self.set_ask_button)
        layout.addLayout(buttons)
        self._update_empty()
        # Tab order: search, the list, its search hits, then the buttons under them.
        chain = [
            self.filter_edit,
            self.view,
            self.search_results,
            self.set_ask_button,
            self.add_button,
            self.remove_button,
        ]
        for first, second in itertools.pairwise(chain):
            QWidget.setTabOrder(first, second)

        # Documents another Longdoc process adds or removes show here too.
        self.changes = LibraryChanges(store)
        self.follower = LibraryFollower(self.changes, self)
        self.follower.changed.connect(self.set_documents)
        self.follower.changed.connect(self.search_results.refresh)  # new pages may say it
        self.follower.start()

    # --- rows -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the list from the store (off the UI thread)."""
        tasks.run_call(
            self.changes.list_now,
            receiver=self,
            success=self._on_documents_listed,
            name="list documents",
        )

    def fit_columns(self) -> None:
        """Pages, Tokens and Fits as wide as their widest text (or header); Title the rest.
        In a narrow library the Tokens column goes (the title's tooltip has the count)
        rather than leave the titles a few letters."""
        cells = self.view.fontMetrics()
        header = self.view.horizontalHeader()
        labels = header.fontMetrics()
        pad = 2 * self.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 12
        widths = {}
        for column, text in zip((1, 2, 3), self.model.widest(), strict=True):
            width = max(cells.horizontalAdvance(text), labels.horizontalAdvance(COLUMNS[column]))
            widths[column] = width + pad
            header.resizeSection(column, widths[column])
        room = self.view.viewport().width() - sum(widths.values())
        self.view.setColumnHidden(TOKENS_COLUMN, room < cells.averageCharWidth() * TITLE_CHARS)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Narrower or wider: the columns fit again (Tokens shown only where it has room)."""
        super().resizeEvent(event)
        self._fit_timer.start()

    def _on_documents_listed(self, summaries: list[DocumentSummary]) -> None:
        self.set_documents(summaries)

    def set_documents(self, summaries: list[DocumentSummary]) -> None:
        """Show these documents (keeping the selection and the rows of files being read)."""
        if self.model.lists(summaries):
            return
        selected = self.selected_sha()
        self.view.selectionModel().blockSignals(True)  # the same document stays selected
        self.model.set_documents(summaries)
        if selected:
            self.select(selected)
        self.view.selectionModel().blockSignals(False)
        self._update_empty()

    def set_context(
        self,
        limits: ContextLimits | None,
        reserve: int,
        thinking: bool = True,
        reads_images: bool | None = None,
    ) -> None:
        """The server's limits (or the settings) changed: recompute the "fits" column."""
        self.model.set_fit_rule(FitRule(limits, reserve, thinking, reads_images))

    def fits_text(self, sha: str) -> str | None:
        """The "fits" cell of a document (tests)."""
        summary = self.model.summary(sha)
        return None if summary is None else self.model.fits(summary)[0]

    def fits_tip(self, sha: str) -> str | None:
        """The "fits" cell's tooltip (tests)."""
        summary = self.model.summary(sha)
        return None if summary is None else self.model.fits(summary)[1]

    def _status_row(self, path: Path, state: str, text: str, tip: str) -> None:
        self.model.put_status(StatusRow(str(path), state, text, tip))
        self._update_empty()

    def row_texts(self) -> list[str]:
        """The titles as shown, top to bottom (tests)."""
        return [self.model.index(r, 0).data() for r in range(self.model.rowCount())]

    def _update_empty(self) -> None:
        empty = self.model.total == 0
        self.empty_label.setVisible(empty)
        self.view.setVisible(not empty)
        self.filter_edit.setVisible(not empty)
        self.remove_button.setEnabled(not empty)

    @Slot(str)
    def _on_filter_edit_text_changed(self, text: str) -> None:
        selected = self.selected_sha()
        self.view.selectionModel().blockSignals(True)
        self.model.set_filter(text)
        if selected:
            self.select(selected)
        self.view.selectionModel().blockSignals(False)

    # --- selection ----------------------------------------------------------------------

    def selected_sha(self) -> str | None:
        """The selected document, if it is a ready one."""
        index = self.view.currentIndex()
        if not index.isValid():
            return None
        sha = index.siblingAtColumn(0).data(SHA_ROLE)
        return str(sha) if sha else None

    def selected_shas(self) -> list[str]:
        """Every selected ready document, in library order."""
        rows = sorted(i.row() for i in self.view.selectionModel().selectedRows())
        shas = [self.model.index(r, 0).data(SHA_ROLE) for r in rows]
        return [str(s) for s in shas if s]

    @Slot()
    def _update_set_button(self) -> None:
        count = len(self.selected_shas())
        self.set_ask_button.setText(f"Ask about these {count} documents")
        self.set_ask_button.setVisible(count >= 2)

    @Slot()
    def _on_set_ask_button_clicked(self) -> None:
        shas = self.selected_shas()
        if len(shas) >= 2:
            self.set_ask_requested.emit(shas)

    @Slot(QPoint)
    def _on_view_custom_context_menu_requested(self, position: QPoint) -> None:
        shas = self.selected_shas()
        if len(shas) < 2:
            return
        menu = QMenu(self)
        menu.addAction(f"Ask about these {len(shas)} documents", self._on_set_ask_button_clicked)
        compare = menu.addAction(
            "Compare these two versions…", lambda: self.compare_requested.emit(*shas[:2])
        )
        compare.setEnabled(len(shas) == 2)
        menu.popup(self.view.viewport().mapToGlobal(position))

    def select(self, sha: str) -> None:
        """Select a document's row (and show it)."""
        row = self.model.find(sha)
        if row is None:
            return
        index = self.model.index(row, 0)
        self.view.setCurrentIndex(index)
        self.view.scrollTo(index)

    @Slot()
    def _on_view_current_row_changed(self) -> None:
        sha = self.selected_sha()
        if sha:
            self.document_selected.emit(sha)

    def remove_selected(self) -> None:
        """Forget the selected document (or drop a failed row)."""
        index = self.view.currentIndex()
        row = self.model.row_at(index.row()) if index.isValid() else None
        if row is None:
            return
        if isinstance(row, StatusRow):
            if row.state == "failed":
                self.model.remove_status(row.path)
                self._update_empty()
            return
        sha, title = row.sha256, _title(row)
        store = self.store

        def removed(_: None) -> None:
            self.model.remove_document(sha)
            self._update_empty()
            self.search_results.refresh()  # its hits are gone from the index too
            self.follower.local_change()
            self.document_removed.emit(sha, title)

        tasks.run_call(
            lambda: store.remove_document(sha), receiver=self, success=removed, name="remove"
        )

    # --- ingesting ----------------------------------------------------------------------

    @property
    def ingesting(self) -> bool:
        """Files are being read."""
        return self.ingest.busy

    def add_paths(self, paths: list[Path]) -> None:
        """Read files (and the documents inside folders) in the background."""
        if not paths:
            return
        tasks.run_call(
            lambda: expand_paths([Path(p) for p in paths]),
            receiver=self,
            success=self._enqueue,
            name="expand",
        )

    def _enqueue(self, files: list[Path]) -> None:
        if not files:
            messages.warning("No PDF, Word, transcript, text or Markdown files there.")
            return
        self._open_after = files[-1]
        self.ingest.enqueue(files)

    def _on_ingest_status_changed(self, path: Path, state: str, text: str, tip: str) -> None:
        self._status_row(path, state, text, tip)

    def _on_ingest_document_read(self, path: Path, doc: Document, reused: bool) -> None:
        self.model.remove_status(str(path))
        # One row in, not the whole list again (that cost seconds at 2,000 documents).
        self.model.put_document(summary_of(doc))
        self._update_empty()
        self.follower.local_change()  # the next check compares with a listing that has it
        if path == self._open_after:
            self.document_opened.emit(doc)
