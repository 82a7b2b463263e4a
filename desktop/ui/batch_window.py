"""Tools ▸ Batch…: summaries or a review grid over folders, with a live table and a report.

The work is ``desktop.batch.Batch``, the same as ``longdoc summarize`` / ``longdoc review``;
this window only picks its inputs, shows its events and writes its report.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from desktop.batch import (
    DEFAULT_STYLE,
    STYLES,
    Batch,
    BatchEvent,
    BatchItem,
    BatchReport,
    Cell,
    Job,
    collect,
    default_concurrency,
    load_style,
    report_format,
)
from desktop.errors import LongdocError
from desktop.reports import write_report
from desktop.ui import messages, tasks
from desktop.ui.review_grid import ReviewGrid
from desktop.ui.session import Session

_STATE_TEXT = {
    "pending": "waiting",
    "running": "reading…",
    "done": "done",
    "failed": "failed",
    "skipped": "skipped",
    "cancelled": "cancelled",
}


class _Relay(QObject):
    """Carries batch events from worker threads to the UI thread (queued signal)."""

    event_posted = Signal(object)


class BatchWindow(QDialog):
    """Pick files and a job, run it, watch each document, open the report or the grid.

    Closing the window only hides it: the run goes on and Tools ▸ Batch shows it again;
    Cancel stops it, and so does quitting the app.
    """

    citation_opened = Signal(str, str)  # document path, page label
    documents_stored = Signal()  # a document was read into the library (not one known)

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Batch: summaries and review grids")
        self.resize(1100, 760)
        self.session = session
        self.report: BatchReport | None = None
        self.running = False
        self._cancel = threading.Event()
        self._rows: dict[str, int] = {}
        self._relay = _Relay()
        self._relay.event_posted.connect(self._on_relay_event_posted)
        self._build()

    # --- layout ------------------------------------------------------------------------

    def _build(self) -> None:
        self.paths_list = QListWidget()
        self.paths_list.setMaximumHeight(84)
        add_files = QPushButton("Add &files…")
        add_files.clicked.connect(self._on_add_files_clicked)
        add_folder = QPushButton("Add f&older…")
        add_folder.clicked.connect(self._on_add_folder_clicked)
        remove = QPushButton("&Remove")
        remove.clicked.connect(self._on_remove_clicked)
        path_buttons = QVBoxLayout()
        for button in (add_files, add_folder, remove):
            path_buttons.addWidget(button)
        path_buttons.addStretch(1)
        paths_row = QHBoxLayout()
        paths_row.addWidget(self.paths_list, 1)
        paths_row.addLayout(path_buttons)

        self.summary_radio = QRadioButton("&Summary, style:")
        self.question_radio = QRadioButton("One &question:")
        self.review_radio = QRadioButton("Review &grid, one question per line:")
        self.summary_radio.setChecked(True)
        group = QButtonGroup(self)
        for radio in (self.summary_radio, self.question_radio, self.review_radio):
            group.addButton(radio)
        self.style_combo = QComboBox()
        self.style_combo.addItems([*STYLES, "template file…"])
        self.style_combo.setCurrentText(DEFAULT_STYLE)
        self.style_combo.activated.connect(self._on_style_combo_activated)
        self.template_path = ""
        self.question_edit = QLineEdit()
        self.question_edit.setPlaceholderText("e.g. Who are the parties and what is the term?")
        self.questions_edit = QPlainTextEdit()
        self.questions_edit.setPlaceholderText(
            "What is the governing law?\nIs there a change-of-control clause?"
        )
        self.questions_edit.setMaximumHeight(80)
        self.think_check = QCheckBox("Let the model &reason first (slower)")
        self.concurrency_spin = QSpinBox()
        self.concurrency_spin.setRange(0, 64)
        self.concurrency_spin.setSpecialValueText("the server's own")
        form = QFormLayout()
        form.addRow(self.summary_radio, self.style_combo)
        form.addRow(self.question_radio, self.question_edit)
        form.addRow(self.review_radio, self.questions_edit)
        form.addRow("Requests at once:", self.concurrency_spin)
        form.addRow("", self.think_check)

        self.start_button = QPushButton("&Start")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.report_button = QPushButton("Save and open the &report…")
        self.report_button.setEnabled(False)
        self.report_button.clicked.connect(self._on_report_button_clicked)
        self.progress = QProgressBar()
        self.progress.setFormat("%v of %m")
        self.status_label = QLabel("Add files or folders, choose the job, then Start.")
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        buttons.addWidget(self.report_button)

        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Document", "State", "Time", "Details"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(self._on_table_cell_double_clicked)
        self.grid = ReviewGrid()
        self.grid.cellDoubleClicked.connect(self._on_grid_cell_double_clicked)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table, "Documents")
        self.tabs.addTab(self.grid, "Review grid")

        inputs = QWidget()
        top = QVBoxLayout(inputs)
        top.setContentsMargins(0, 0, 0, 0)
        top.addLayout(paths_row)
        top.addLayout(form)
        top.addLayout(buttons)
        top.addWidget(self.status_label)
        # The results take what the form does not need; the user can move the line.
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("batchSplitter")
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(inputs)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.splitter)
        QShortcut(QKeySequence("Ctrl+Return"), self, self.start)

    # --- inputs --------------------------------------------------------------------------

    def add_paths(self, paths: list[Path]) -> None:
        """Add files or folders to the batch."""
        present = {self.paths_list.item(i).text() for i in range(self.paths_list.count())}
        for path in paths:
            if str(path) not in present:
                self.paths_list.addItem(str(path))

    def paths(self) -> list[Path]:
        """The files and folders listed."""
        return [Path(self.paths_list.item(i).text()) for i in range(self.paths_list.count())]

    @Slot()
    def _on_add_files_clicked(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add documents")
        self.add_paths([Path(f) for f in files])

    @Slot()
    def _on_add_folder_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder")
        if folder:
            self.add_paths([Path(folder)])

    @Slot()
    def _on_remove_clicked(self) -> None:
        for item in self.paths_list.selectedItems():
            self.paths_list.takeItem(self.paths_list.row(item))

    @Slot(int)
    def _on_style_combo_activated(self, index: int) -> None:
        if self.style_combo.itemText(index) != "template file…":
            return
        chosen, _ = QFileDialog.getOpenFileName(self, "Summary template", "", "Text (*.md *.txt)")
        if chosen:
            self.template_path = chosen
            self.style_combo.setItemText(index, f"template: {Path(chosen).name}")
        else:
            self.style_combo.setCurrentText(DEFAULT_STYLE)

    def job(self) -> Job:
        """The job the form describes; raises LongdocError with what is missing."""
        thinking = self.think_check.isChecked()
        if self.review_radio.isChecked():
            lines = self.questions_edit.toPlainText().splitlines()
            questions = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
            if not questions:
                raise _FormError("Write the review questions, one per line.")
            return Job("review", questions, thinking=thinking)
        if self.question_radio.isChecked():
            question = self.question_edit.text().strip()
            if not question:
                raise _FormError("Write the question to ask of every document.")
            return Job("summary", [question], style="question", thinking=thinking)
        style = self.style_combo.currentText()
        if style.startswith("template"):
            style = self.template_path
        return Job("summary", [load_style(style)], style=Path(style).name, thinking=thinking)

    # --- running -------------------------------------------------------------------------

    @Slot()
    def start(self) -> None:
        """Start the batch in the background."""
        if self.running:
            return
        try:
            job = self.job()
            files = collect(self.paths())
            if not files:
                raise _FormError("Add the files or folders to work on.")
        except LongdocError as exc:
            self.status_label.setText(str(exc))
            return
        self._cancel = threading.Event()
        self.report = None
        self._fill_table(files)
        self._prepare_grid(job, files)
        self.progress.setRange(0, len(files))
        self.progress.setValue(0)
        self._set_running(True)
        self.status_label.setText("Connecting to the server…")
        session, cancel, relay = self.session, self._cancel, self._relay
        wanted = self.concurrency_spin.value()

        def work() -> BatchReport:
            answerer = session.answerer()
            concurrency = wanted or default_concurrency(answerer.client.server_info())
            batch = Batch(
                files,
                session.store,
                answerer,
                job,
                concurrency=concurrency,
                listener=relay.event_posted.emit,
                cancel=cancel,
            )
            return batch.run()

        self._started = time.monotonic()
        tasks.run_call(
            work,
            receiver=self,
            success=self._on_batch_done,
            failure=self._on_batch_failed,
            name="batch",
        )

    @Slot()
    def cancel(self) -> None:
        """Stop asking; answers in flight end as incomplete, finished ones are kept."""
        if self.running:
            self._cancel.set()
            self.cancel_button.setEnabled(False)
            self.status_label.setText("Cancelling: waiting for the requests in flight to stop…")

    def _set_running(self, running: bool) -> None:
        self.running = running
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.report_button.setEnabled(not running and self.report is not None)

    def _fill_table(self, files: list[Path]) -> None:
        self.table.setRowCount(len(files))
        self._rows = {}
        for row, path in enumerate(files):
            self._rows[str(path)] = row
            self.table.setItem(row, 0, QTableWidgetItem(path.name))
            self._cell(row, 0).setToolTip(str(path))
            self.table.setItem(row, 1, QTableWidgetItem(_STATE_TEXT["pending"]))
            self.table.setItem(row, 2, QTableWidgetItem(""))
            self.table.setItem(row, 3, QTableWidgetItem(""))

    def _cell(self, row: int, column: int) -> QTableWidgetItem:
        item = self.table.item(row, column)
        if item is None:  # every cell is created in _fill_table
            item = QTableWidgetItem("")
            self.table.setItem(row, column, item)
        return item

    def _prepare_grid(self, job: Job, files: list[Path]) -> None:
        review = job.kind == "review"
        self.tabs.setTabEnabled(1, review)
        self.grid.prepare(job.questions if review else [], [p.name for p in files])
        # A review's results are the grid: show it (the documents' states are a tab away).
        self.tabs.setCurrentWidget(self.grid if review else self.table)

    @Slot(object)
    def _on_relay_event_posted(self, event: BatchEvent) -> None:
        if event.event == "finished":
            return
        row = self._rows.get(event.path)
        item = event.item
        if row is None or item is None:
            return
        self._cell(row, 1).setText(_STATE_TEXT.get(item.status, item.status))
        if event.event == "started":
            return
        if item.status not in ("skipped", "failed"):
            self.documents_stored.emit()  # read into the library (or found there)
        if item.status == "done" and item.from_cache:
            self._cell(row, 2).setText("earlier")
        elif item.status != "skipped":
            self._cell(row, 2).setText(f"{item.seconds:.1f} s")
        details = item.error or _preview(item)
        self._cell(row, 3).setText(details)
        self._cell(row, 3).setToolTip(html.escape(details))
        if item.status in ("failed", "cancelled"):
            font = self._cell(row, 1).font()
            font.setBold(True)
            self._cell(row, 1).setFont(font)
        self._fill_grid_row(row, item)
        self.progress.setValue(self.progress.value() + 1)
        self.status_label.setText(f"{self.progress.value()} of {self.progress.maximum()} finished.")

    def _fill_grid_row(self, row: int, item: BatchItem) -> None:
        if self.grid.columnCount() == 0:
            return
        for column in range(self.grid.columnCount()):
            cell = item.cells[column] if column < len(item.cells) else None
            text = cell.answer.strip() if cell and cell.status == "done" else item.error
            flagged = sum(
                c.get("status") in ("other_page", "not_found")
                for c in (cell.citations if cell else [])
            )
            self.grid.set_answer(row, column, text, bool(flagged))

    def _on_batch_done(self, report: BatchReport) -> None:
        self.report = report
        self._set_running(False)
        counts = report.counts()
        parts = [f"{n} {status}" for status, n in counts.items()]
        seconds = time.monotonic() - self._started
        self.status_label.setText(f"Finished in {seconds:.0f} s: {', '.join(parts)}.")
        self.report_button.setEnabled(True)

    def _on_batch_failed(self, exc: BaseException) -> None:
        self._set_running(False)
        message = str(exc) if isinstance(exc, LongdocError) else f"The batch failed: {exc}"
        self.status_label.setText(message)
        messages.error(message)

    # --- results -------------------------------------------------------------------------

    def _item_for(self, row: int) -> BatchItem | None:
        if self.report is None or not 0 <= row < len(self.report.items):
            return None
        return self.report.items[row]

    @Slot(int, int)
    def _on_table_cell_double_clicked(self, row: int, _column: int) -> None:
        item = self._item_for(row)
        if item is not None and item.cells:
            self.show_answer(item, item.cells[0])

    @Slot(int, int)
    def _on_grid_cell_double_clicked(self, row: int, column: int) -> None:
        item = self._item_for(row)
        if item is not None and column < len(item.cells):
            self.show_answer(item, item.cells[column])

    def show_answer(self, item: BatchItem, cell: Cell) -> QDialog:
        """The answer with its citations as links that open the cited page."""
        return answer_dialog(self, item, cell, self.citation_opened.emit)

    @Slot()
    def _on_report_button_clicked(self) -> None:
        if self.report is None:
            return
        kind = "review" if self.report.kind == "review" else "summaries"
        default = f"{kind}-{time.strftime('%Y%m%d-%H%M')}.{'csv' if kind == 'review' else 'md'}"
        chosen, _ = QFileDialog.getSaveFileName(
            self, "Save the report", default, "Markdown (*.md);;JSON (*.json);;CSV grid (*.csv)"
        )
        if chosen:
            self.save_report(Path(chosen), open_it=True)

    def save_report(self, path: Path, open_it: bool = False) -> Path:
        """Write the report (format from the suffix) atomically; optionally open it."""
        assert self.report is not None
        try:
            write_report(path, self.report.render(report_format(path, None)))
        except LongdocError as exc:
            messages.error(str(exc))
            return path
        if open_it and not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            not_opened(self, path)
        return path

    def shutdown(self) -> None:
        """The app is quitting: stop the run (finished answers are kept) and close."""
        self._cancel.set()
        self.close()


def answer_dialog(
    parent: QWidget, item: BatchItem, cell: Cell, open_citation: Callable[[str, str], None]
) -> QDialog:
    """A batch answer with its citations as links; a link calls ``open_citation(path,
    label)``."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(f"{item.title or Path(item.path).name}: {cell.question[:60]}")
    dialog.resize(720, 520)
    view = QTextBrowser()
    view.setOpenLinks(False)
    parts = [f"<h3>{html.escape(cell.question)}</h3>", f"<p>{_linked(cell)}</p>"]
    view.setHtml("".join(parts))
    path = item.path
    view.anchorClicked.connect(
        lambda url: open_citation(path, QUrl.fromPercentEncoding(url.path().encode()))
    )
    layout = QVBoxLayout(dialog)
    layout.addWidget(view)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog


def not_opened(parent: QWidget, path: Path) -> None:
    """No application opened a saved report (no opener installed, or none for the type):
    say where it is, instead of failing silently."""
    text = f"Saved the report to {path}, but no application here opens it; open it from there."
    messages.warning(text)
    box = QMessageBox(QMessageBox.Icon.Information, "Report saved", text, parent=parent)
    box.setObjectName("reportNotOpened")
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()


class _FormError(LongdocError):
    """Something the form still needs."""


def _preview(item: BatchItem) -> str:
    if not item.cells or not item.cells[0].answer:
        return ""
    text = " ".join(item.cells[0].answer.split())
    return text[:160] + ("…" if len(text) > 160 else "")


def _linked(cell: Cell) -> str:
    """The answer, escaped, each citation a link to its page and its quote check after it."""
    from desktop.answering.citations import find_citations

    answer = cell.answer
    refs = find_citations(answer)
    statuses = [str(c.get("status", "")) for c in cell.citations]
    out: list[str] = []
    at = 0
    for n, ref in enumerate(refs):
        out.append(html.escape(answer[at : ref.start]))
        inner = []
        cursor = ref.start
        for part in ref.parts:
            inner.append(html.escape(answer[cursor : part.start]))
            inner.append(
                f'<a href="page:{html.escape(part.text, quote=True)}">'
                f"{html.escape(answer[part.start : part.end])}</a>"
            )
            cursor = part.end
        inner.append(html.escape(answer[cursor : ref.end]))
        out.append("".join(inner))
        status = statuses[n] if n < len(statuses) else ""
        mark = {"not_found": " ✗ quote not found", "other_page": " ⚠ quote on another page"}
        if status in mark:
            out.append(f"<b>{html.escape(mark[status])}</b>")
        at = ref.end
    out.append(html.escape(answer[at:]))
    return "".join(out).replace("\n", "<br>")
