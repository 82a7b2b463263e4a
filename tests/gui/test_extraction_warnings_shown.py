"""The app shows what extraction could not read: in the library row and above the page."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.ui.main_window import MainWindow
from tests.gui.conftest import open_document
from tests.support.pdf_maker import FormPage, TextLine, write_form_pdf


def test_a_damaged_page_is_named_in_the_row_and_the_document_header(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    pdf = write_form_pdf(
        tmp_path / "damaged.pdf",
        [FormPage(lines=[TextLine(72, 700, "Readable page")]), FormPage(broken=True)],
    )
    open_document(window, qtbot, pdf)
    label = window.doc_view.warnings_label
    assert not label.isHidden()
    assert "page 2 could not be read" in label.text()
    model = window.library.model
    rows = [model.index(r, 0) for r in range(model.rowCount())]
    [row] = [i for i in rows if "damaged.pdf" in (i.data(Qt.ItemDataRole.ToolTipRole) or "")]
    assert "Warning: page 2 could not be read" in row.data(Qt.ItemDataRole.ToolTipRole)
    # A document without warnings hides the line again.
    clean = write_form_pdf(tmp_path / "clean.pdf", [FormPage(lines=[TextLine(72, 700, "Fine")])])
    open_document(window, qtbot, clean)
    assert label.isHidden()
