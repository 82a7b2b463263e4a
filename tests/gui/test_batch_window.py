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
