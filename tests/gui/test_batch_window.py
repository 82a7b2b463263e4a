"""Tools ▸ Batch: a review grid over a folder, driven as a user would, to the cited page."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QTextBrowser

from desktop.ui.main_window import MainWindow
from tests.gui.conftest import ENCRYPTED, FOUR_PAGES
from tests.support.sglang_server import FakeSGLang


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "deal"
    folder.mkdir()
    shutil.copy(FOUR_PAGES, folder)
    shutil.copy(ENCRYPTED, folder)
    (folder / "memo.md").write_text("# Memo\n\nThe fee is 300 EUR per day, due in 30 days.\n")
    (folder / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return folder


def test_review_grid_runs_and_a_cell_opens_the_cited_page(
    window: MainWindow, qtbot: object, tmp_path: Path, sglang: FakeSGLang
) -> None:
    batch = window.show_batch_window()
    batch.add_paths([_folder(tmp_path)])
    batch.review_radio.setChecked(True)
    batch.questions_edit.setPlainText("What is the fee?\nWhen is it due?")
    qtbot.mouseClick(batch.start_button, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert batch.running and not batch.start_button.isEnabled()
    qtbot.waitUntil(lambda: batch.report is not None, timeout=120_000)  # type: ignore[attr-defined]
    assert batch.start_button.isEnabled() and not batch.cancel_button.isEnabled()
    states = {batch.table.item(r, 0).text(): batch.table.item(r, 1).text() for r in range(4)}
    assert states == {
        "libreoffice-writer-password.pdf": "failed",
        "memo.md": "done",
        "pdflatex-4-pages.pdf": "done",
        "picture.png": "skipped",
    }
    assert "encrypted" in batch.table.item(0, 3).text()
    # One grid cell per document and question; the finished ones hold their answers.
    assert batch.grid.rowCount() == 4 and batch.grid.columnCount() == 2
    assert "The document has" in batch.grid.item(2, 1).text()
    assert batch.status_label.text().startswith("Finished")
    # The report, written as the grid.
    out = batch.save_report(tmp_path / "grid.csv")
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert len(rows) == 5 and rows[0][-2:] == ["What is the fee?", "When is it due?"]
    # A cell opens the answer; its citation opens the document at that page.
    dialog = batch.show_answer(batch.report.items[2], batch.report.items[2].cells[0])
    view = dialog.findChild(QTextBrowser)
    assert "[p. 1]" in view.toPlainText()
    view.anchorClicked.emit(QUrl("page:4"))
    qtbot.waitUntil(  # type: ignore[attr-defined]
        lambda: (
            window.document is not None and window.document.path.endswith("pdflatex-4-pages.pdf")
        ),
        timeout=30_000,
    )
    qtbot.waitUntil(lambda: window.doc_view.current_page() == 4, timeout=10_000)  # type: ignore[attr-defined]


def test_cancel_stops_the_run_and_keeps_what_finished(
    window: MainWindow, qtbot: object, tmp_path: Path, sglang: FakeSGLang
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(6):
        (folder / f"d{n}.md").write_text(f"# D{n}\n\nText number {n} about fees.\n")
    sglang.behaviour.update(token_delay_s=0.05)
    batch = window.show_batch_window()
    batch.add_paths([folder])
    batch.concurrency_spin.setValue(1)
    batch.start()
    qtbot.waitUntil(lambda: batch.progress.value() >= 1, timeout=60_000)  # type: ignore[attr-defined]
    qtbot.mouseClick(batch.cancel_button, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: batch.report is not None, timeout=60_000)  # type: ignore[attr-defined]
    counts = batch.report.counts()
    assert counts.get("done", 0) >= 1 and counts.get("cancelled", 0) >= 1
    assert batch.start_button.isEnabled()


def test_the_form_says_what_is_missing(window: MainWindow) -> None:
    batch = window.show_batch_window()
    batch.start()
    assert "Add the files" in batch.status_label.text() and not batch.running
    batch.add_paths([Path("/nonexistent")])
    batch.review_radio.setChecked(True)
    batch.start()
    assert "review questions" in batch.status_label.text() and not batch.running


def test_the_review_grid_uses_its_width_wraps_and_copies(
    window: MainWindow, qtbot: object, tmp_path: Path, sglang: FakeSGLang
) -> None:
    """Issue 21 item 8: ~85 px question columns with clipped headers and most of the table
    empty; now each question column has at least a quarter of the table (the header wraps,
    elided, with the question whole in its tooltip), cells wrap, columns can be dragged,
    and Ctrl+C copies the selected cells as tab-separated text."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QHeaderView

    questions = [
        "What is the fee, and how is it computed for each day of work under this agreement?",
        "When is it due, counted from which date, and what happens when it is paid late?",
    ]
    batch = window.show_batch_window()
    batch.add_paths([_folder(tmp_path)])
    batch.review_radio.setChecked(True)
    batch.questions_edit.setPlainText("\n".join(questions))
    batch.start()
    grid = batch.grid
    assert batch.tabs.currentWidget() is grid  # a review shows its grid
    qtbot.waitUntil(lambda: batch.report is not None, timeout=120_000)  # type: ignore[attr-defined]
    room = grid.viewport().width()
    for column, question in enumerate(questions):
        assert grid.columnWidth(column) >= grid.width() / 4, f"{column}: {grid.columnWidth(column)}"
        header = grid.horizontalHeaderItem(column)
        assert header.toolTip() == question
        assert header.text().replace("\n", " ").rstrip("…") in question
        resize_mode = grid.horizontalHeader().sectionResizeMode(column)
        assert resize_mode == QHeaderView.ResizeMode.Interactive
    # Together the columns fill the table: no wide empty strip right of them.
    assert sum(grid.columnWidth(c) for c in range(2)) >= room - 4
    # Cells wrap: a long answer's row is several lines high.
    assert grid.wordWrap()
    assert grid.rowHeight(2) > 2 * grid.fontMetrics().height()
    # Ctrl+C: the selected cells as TSV, whole answers (quoted when they hold a tab/newline).
    grid.setFocus()
    grid.clearSelection()
    for row in (1, 2):
        for column in (0, 1):
            grid.item(row, column).setSelected(True)
    qtbot.keyClick(grid, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)  # type: ignore[attr-defined]
    text = QGuiApplication.clipboard().text()
    rows = list(csv.reader(io.StringIO(text), delimiter="\t"))  # as a spreadsheet reads it
    answers = batch.report.items[2].cells  # type: ignore[union-attr]
    assert len(rows) == 2 and len(rows[0]) == 2
    assert rows[1] == [answers[0].answer.strip(), answers[1].answer.strip()]


def test_a_report_no_application_opens_is_named_to_the_user(
    window: MainWindow, qtbot: object, tmp_path: Path, sglang: FakeSGLang, monkeypatch: object
) -> None:
    """ "Save and open the report" with no opener (xdg-open missing): it said nothing but a
    line on stderr; now the user is told where the report was saved."""
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWidgets import QMessageBox

    opened: list[QUrl] = []

    def no_opener(url: QUrl) -> bool:
        opened.append(url)
        return False

    monkeypatch.setattr(QDesktopServices, "openUrl", no_opener)  # type: ignore[attr-defined]
    batch = window.show_batch_window()
    batch.add_paths([FOUR_PAGES])
    batch.start()
    qtbot.waitUntil(lambda: batch.report is not None, timeout=120_000)  # type: ignore[attr-defined]
    path = batch.save_report(tmp_path / "summaries.md", open_it=True)
    assert path.is_file() and opened
    box = batch.findChild(QMessageBox, "reportNotOpened")
    assert box is not None and box.isVisible()
    assert str(path) in box.text()
    assert str(path) in window.message_label.text()


def test_documents_a_batch_reads_appear_in_the_library(
    window: MainWindow, qtbot: object, tmp_path: Path, sglang: FakeSGLang
) -> None:
    """Issue 21 item 6: what a batch read showed in the library only after a restart. The
    app's own batch writes through the app's connection (SQLite's data_version does not
    count it), so the batch window tells the library."""
    assert window.library.row_texts() == []
    batch = window.show_batch_window()
    batch.add_paths([_folder(tmp_path)])
    batch.question_radio.setChecked(True)
    batch.question_edit.setText("What is the fee?")
    batch.start()
    qtbot.waitUntil(lambda: batch.report is not None, timeout=120_000)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: len(window.library.row_texts()) == 2, timeout=10_000)  # type: ignore[attr-defined]
    assert "Memo" in window.library.row_texts()
