"""The library: every ingested document, files being read, and files that failed."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal, Slot
from PySide6.QtGui import QPalette, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QStyle,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.budget import plan_budget
from desktop.documents.model import Document
from desktop.errors import DocumentError, plural
from desktop.library import expand_paths, open_document
from desktop.store.db import DocumentSummary, Store
from desktop.ui import messages, tasks

log = logging.getLogger("longdoc.ui.library")

# Tokens the instructions and a question add to the document (the exact figure is in the
# budget bar; this is for the library's at-a-glance "fits" column).
PROMPT_OVERHEAD = 300

COLUMNS = ("Title", "Pages", "Tokens", "Fits")
SHA_ROLE = Qt.ItemDataRole.UserRole + 1
STATE_ROLE = Qt.ItemDataRole.UserRole + 2  # "ready" | "queued" | "reading" | "failed"
TOKENS_ROLE = Qt.ItemDataRole.UserRole + 3
PATH_ROLE = Qt.ItemDataRole.UserRole + 4
FILTER_ROLE = Qt.ItemDataRole.UserRole + 5  # title and file name, for the filter box


class LibraryPanel(QWidget):
    """Lists documents; reads new files in the background, one after another."""

    document_selected = Signal(str)  # sha256
    document_opened = Signal(object)  # Document, just read or found in the store
    ingest_finished = Signal()

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._context: int | None = None
        self._reserve = 0
        self._queue: list[Path] = []
        self._current: Path | None = None
        self._done = 0
        self._total = 0
        self._open_after: Path | None = None

        self.model = QStandardItemModel(0, len(COLUMNS), self)
        self.model.setHorizontalHeaderLabels(list(COLUMNS))
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterKeyColumn(0)
        self.proxy.setFilterRole(FILTER_ROLE)

        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter documents")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.proxy.setFilterFixedString)

        self.view = QTreeView()
        self.view.setObjectName("library")
        self.view.setModel(self.proxy)
        self.view.setRootIsDecorated(False)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_row_changed)

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

        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self.progress_label)
        layout.addLayout(buttons)
        self._update_empty()

    # --- rows -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the list from the store (off the UI thread)."""
        tasks.run_call(
            self.store.list_documents,
            success=self._on_documents_listed,
            failure=messages.error,
            name="list documents",
        )

    def _on_documents_listed(self, summaries: list[DocumentSummary]) -> None:
        selected = self.selected_sha()
        # Keep rows of files being read or that failed; replace the documents.
        for row in reversed(range(self.model.rowCount())):
            if self.model.item(row, 0).data(STATE_ROLE) == "ready":
                self.model.removeRow(row)
        for i, summary in enumerate(summaries):
            self.model.insertRow(i, self._row(summary))
        if selected:
            self.select(selected)
        self._update_empty()

    def _row(self, s: DocumentSummary) -> list[QStandardItem]:
        title = QStandardItem(s.title or Path(s.path).name)
        title.setToolTip(s.path)
        title.setData(s.sha256, SHA_ROLE)
        title.setData("ready", STATE_ROLE)
        title.setData(s.tokens, TOKENS_ROLE)
        title.setData(s.path, PATH_ROLE)
        title.setData(f"{title.text()} {Path(s.path).name}", FILTER_ROLE)
        title.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_FileIcon))
        pages = QStandardItem(f"{s.pages:,}")
        pages.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if s.empty_pages:
            pages.setToolTip(f"{plural(s.empty_pages, 'page')} without text (scanned?)")
        tokens = QStandardItem(f"{s.tokens:,}")
        tokens.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        fits = QStandardItem()
        self._set_fits(fits, s.tokens)
        return [title, pages, tokens, fits]

    def _set_fits(self, item: QStandardItem, tokens: int) -> None:
        if self._context is None:
            item.setText("")
            item.setToolTip("The server's context length is not known yet")
            return
        budget = plan_budget(tokens + PROMPT_OVERHEAD, self._context, self._reserve)
        if budget.fits:
            item.setText("✓")
            item.setToolTip(f"Fits the context of {self._context:,} tokens")
        else:
            item.setText(f"✗ +{budget.overflow:,}")
            item.setToolTip(
                f"About {budget.overflow:,} tokens too many for the context of "
                f"{self._context:,}: ask about a page range"
            )

    def set_context(self, context_length: int | None, reserve: int) -> None:
        """The server's context length changed: recompute the "fits" column."""
        self._context = context_length
        self._reserve = reserve
        for row in range(self.model.rowCount()):
            title = self.model.item(row, 0)
            if title.data(STATE_ROLE) == "ready":
                self._set_fits(self.model.item(row, 3), int(title.data(TOKENS_ROLE)))

    def fits_text(self, sha: str) -> str | None:
        """The "fits" cell of a document (tests)."""
        row = self._find_row(SHA_ROLE, sha)
        return None if row is None else self.model.item(row, 3).text()

    def _find_row(self, role: int, value: str) -> int | None:
        for row in range(self.model.rowCount()):
            if self.model.item(row, 0).data(role) == value:
                return row
        return None

    def _status_row(self, path: Path, state: str, text: str, tip: str) -> None:
        row = self._find_row(PATH_ROLE, str(path))
        if row is not None and self.model.item(row, 0).data(STATE_ROLE) != "ready":
            self.model.removeRow(row)
        title = QStandardItem(f"{path.name} — {text}")
        title.setData(state, STATE_ROLE)
        title.setData(str(path), PATH_ROLE)
        title.setData(path.name, FILTER_ROLE)
        title.setToolTip(tip)
        icon = {
            "failed": QStyle.StandardPixmap.SP_MessageBoxWarning,
            "reading": QStyle.StandardPixmap.SP_BrowserReload,
        }.get(state, QStyle.StandardPixmap.SP_FileIcon)
        title.setIcon(self.style().standardIcon(icon))
        if state != "failed":
            title.setForeground(self.palette().placeholderText())
        self.model.insertRow(0, [title, QStandardItem(), QStandardItem(), QStandardItem()])
        self._update_empty()

    def row_texts(self) -> list[str]:
        """The titles as shown, top to bottom (tests)."""
        return [self.proxy.index(r, 0).data() for r in range(self.proxy.rowCount())]

    def _update_empty(self) -> None:
        empty = self.model.rowCount() == 0
        self.empty_label.setVisible(empty)
        self.view.setVisible(not empty)
        self.filter_edit.setVisible(not empty)
        self.remove_button.setEnabled(not empty)

    # --- selection ----------------------------------------------------------------------

    def selected_sha(self) -> str | None:
        """The selected document, if it is a ready one."""
        index = self.view.currentIndex()
        if not index.isValid():
            return None
        sha = index.siblingAtColumn(0).data(SHA_ROLE)
        return str(sha) if sha else None

    def select(self, sha: str) -> None:
        """Select a document's row."""
        row = self._find_row(SHA_ROLE, sha)
        if row is None:
            return
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if index.isValid():
            self.view.setCurrentIndex(index)

    @Slot()
    def _on_view_current_row_changed(self) -> None:
        sha = self.selected_sha()
        if sha:
            self.document_selected.emit(sha)

    def remove_selected(self) -> None:
        """Forget the selected document (or drop a failed row)."""
        index = self.view.currentIndex()
        if not index.isValid():
            return
        source = self.proxy.mapToSource(index.siblingAtColumn(0))
        item = self.model.itemFromIndex(source)
        sha = item.data(SHA_ROLE)
        if item.data(STATE_ROLE) != "ready" or not sha:
            if item.data(STATE_ROLE) == "failed":
                self.model.removeRow(source.row())
                self._update_empty()
            return
        store = self.store
        tasks.run_call(
            lambda: store.remove_document(str(sha)),
            success=lambda _: self.refresh(),
            failure=messages.error,
            name="remove",
        )

    # --- ingesting ----------------------------------------------------------------------

    @property
    def ingesting(self) -> bool:
        """Files are being read."""
        return self._current is not None or bool(self._queue)

    def add_paths(self, paths: list[Path]) -> None:
        """Read files (and the documents inside folders) in the background."""
        if not paths:
            return
        tasks.run_call(
            lambda: expand_paths([Path(p) for p in paths]),
            success=self._enqueue,
            failure=messages.error,
            name="expand",
        )

    def _enqueue(self, files: list[Path]) -> None:
        if not files:
            messages.warning("No PDF, Word, transcript, text or Markdown files there.")
            return
        for path in files:
            self._queue.append(path)
            self._status_row(path, "queued", "waiting", str(path))
        self._total += len(files)
        self._open_after = files[-1]
        self._next()

    def _next(self) -> None:
        if self._current is not None:
            return
        if not self._queue:
            self.progress_label.clear()
            self._done = self._total = 0
            self.ingest_finished.emit()
            return
        path = self._queue.pop(0)
        self._current = path
        self._status_row(path, "reading", "reading…", str(path))
        self.progress_label.setText(f"Reading {self._done + 1} of {self._total}: {path.name}")
        store = self.store
        tasks.run_call(
            lambda: open_document(path, store),
            success=lambda result: self._on_ingested(path, result),
            failure=lambda exc: self._on_ingest_failed(path, exc),
            name="ingest",
        )

    def _on_ingested(self, path: Path, result: tuple[Document, bool]) -> None:
        doc, reused = result
        self._finish_one(path)
        row = self._find_row(PATH_ROLE, str(path))
        if row is not None:
            self.model.removeRow(row)
        if doc.warnings:
            messages.warning(f"{path.name}: {'; '.join(doc.warnings)}")
        elif not reused:
            messages.info(
                f"Read {path.name}: {plural(len(doc.pages), 'page')}, "
                f"{plural(doc.tokens, 'token')}."
            )
        if path == self._open_after:
            self.document_opened.emit(doc)
        self.refresh()
        self._next()

    def _on_ingest_failed(self, path: Path, exc: BaseException) -> None:
        self._finish_one(path)
        reason = exc.reason if isinstance(exc, DocumentError) else messages.describe(exc)
        self._status_row(path, "failed", f"failed: {reason}", messages.describe(exc))
        messages.error(exc)
        self._next()

    def _finish_one(self, path: Path) -> None:
        self._current = None
        self._done += 1
