"""Escaping of answers and documents; document views, find, library states, layout memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QUrl
from PySide6.QtGui import QTextDocument
from pytestqt.qtbot import QtBot

from desktop.config import data_dir
from desktop.store.db import StoredAnswer
from desktop.ui.main_window import MainWindow
from desktop.ui.quote_marks import unmarked_text
from tests.gui.conftest import (
    ENCRYPTED,
    FOUR_PAGES,
    GEOTOPO,
    ask,
    open_as_text,
    open_document,
    wait_ready,
)
from tests.support.sglang_server import FakeSGLang

MALICIOUS = (
    "# Title <b>bold?</b>\n\n"
    '<script>alert("x")</script> and <a href="file:///etc/passwd">passwd</a> '
    '<img src="file:///etc/passwd"> [click](http://evil.example/) '
    "[p. 2] **fine** `<i>code</i>`\n\n"
    "- <style>body{display:none}</style> item\n"
)


def anchors(doc: QTextDocument) -> list[str]:
    """Every link target in a rich-text document."""
    found: list[str] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isAnchor() or fmt.anchorHref():
                found.append(fmt.anchorHref())
            it += 1
        block = block.next()
    return found


def test_a_malicious_answer_is_shown_as_text_with_only_page_links(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    sglang.behaviour.update(answer_text=MALICIOUS, token_delay_s=0.001)
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    result = ask(window, qtbot, "Be evil.")
    assert isinstance(result, StoredAnswer)
    browser = window.ask_panel.answer_view.browser
    # The answer's own text (the core reads ")</script> and <a href=" as a quote, which
    # gets a "not found" mark after it).
    text = unmarked_text(browser.document())
    assert '<script>alert("x")</script>' in text
    assert '<a href="file:///etc/passwd">passwd</a>' in text
    assert '<img src="file:///etc/passwd">' in text
    assert "click (http://evil.example/)" in text
    assert "<i>code</i>" in text
    assert "<style>body{display:none}</style> item" in text
    assert anchors(browser.document()) == ["longdoc-page:l=2"]
    # Following anything else does nothing; the page link works.
    browser.anchorClicked.emit(QUrl("file:///etc/passwd"))
    assert window.doc_view.current_page() == 1
    browser.anchorClicked.emit(QUrl("longdoc-page:l=2"))
    assert window.doc_view.current_page() == 2
    # The same holds for the answer shown again from the history.
    window.ask_panel.history_list.setCurrentRow(0)
    assert anchors(browser.document()) == ["longdoc-page:l=2"]


def test_document_text_is_shown_escaped_with_page_anchors(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "evil.md"
    path.write_text(
        "# Chapter <script>alert(1)</script>\n\n"
        + "Some <b>markup</b> and a [link](file:///etc/passwd).\n\n" * 400,
        encoding="utf-8",
    )
    text = open_as_text(window, qtbot, path)
    view = window.doc_view
    assert "<script>alert(1)</script>" in text
    assert "Some <b>markup</b> and a [link](file:///etc/passwd)." in text
    assert view.page_count() >= 1
    assert view.current_page() == 1


def test_pdf_navigation_by_label_and_number_zoom_and_find(qtbot: QtBot, window: MainWindow) -> None:
    open_document(window, qtbot, GEOTOPO)
    view = window.doc_view
    qtbot.waitUntil(lambda: view.mode == "pdf")
    # GeoTopo's front matter is labelled i, ii, iii; page "1" is the fourth page.
    assert view.number_for_label("iii") == 3
    assert view.number_for_label("1") == 4
    assert view.number_for_label("#1") == 1
    view.page_edit.setText("1")
    view.page_edit.returnPressed.emit()
    assert view.current_page() == 4
    view.next_page()
    assert view.current_page() == 5
    assert view.page_edit.text() == "2"
    view.previous_page()
    assert view.current_page() == 4
    assert view.go_to_citation("ii", None)
    assert view.current_page() == 2
    assert not view.go_to_citation("999", None)
    before = view.pdf_view.zoomFactor()
    view.zoom_in()
    assert view.pdf_view.zoomFactor() > before
    view.fit_width()
    view.find_edit.setText("Topologie")
    qtbot.waitUntil(lambda: view.hit_count() > 5, timeout=15_000)
    view.find_next()
    assert view.hits_label.text().startswith("1 of ")
    assert view.pdf_view.currentSearchResultIndex() == 0


def test_text_find_highlights_every_hit(qtbot: QtBot, window: MainWindow, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("alpha beta\n" * 30 + "gamma alpha\n", encoding="utf-8")
    open_document(window, qtbot, path)
    view = window.doc_view
    view.find_edit.setText("alpha")
    assert view.hit_count() == 31
    assert len(view.text_view.extraSelections()) == 31
    view.find_next()
    view.find_next()
    assert view.hits_label.text() == "2 of 31"


def test_a_file_that_cannot_be_read_shows_its_reason(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    window.add_paths([ENCRYPTED])
    qtbot.waitUntil(lambda: any("failed:" in t for t in window.library.row_texts()), timeout=15_000)
    [row] = [t for t in window.library.row_texts() if "failed:" in t]
    assert row.startswith(f"{ENCRYPTED.name} — failed: ")
    assert "password" in row.lower()
    assert "password" in window.message_label.text().lower()


def test_folders_are_added_with_every_document_inside(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("first file", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# second file", encoding="utf-8")
    (tmp_path / "ignored.bin").write_bytes(b"\0\1")
    window.add_paths([tmp_path])
    qtbot.waitUntil(
        lambda: sorted(window.library.row_texts()) == ["first file", "second file"],
        timeout=15_000,
    )
    window.library.filter_edit.setText("second")
    assert window.library.row_texts() == ["second file"]
    window.library.filter_edit.setText("A.TXT")  # file names match too, in any case
    assert window.library.row_texts() == ["first file"]


def test_layout_is_remembered(qtbot: QtBot, make_window: object, settings: object) -> None:
    first: MainWindow = make_window(settings)  # type: ignore[operator]
    # Fit the (small) offscreen screen, or restoring the geometry would shrink the window.
    screen = first.screen().availableGeometry()
    first.resize(screen.width() - 40, screen.height() - 60)
    qtbot.waitUntil(lambda: first.width() == screen.width() - 40)
    total = sum(first.splitter.sizes())
    # An unusual layout: the library takes half the width (beside the first-run view; a
    # layout that leaves it nothing is not kept: test_first_sight.py).
    first.splitter.setSizes([total // 2, 0, 0, total - total // 2])
    wanted = [size / total for size in first.splitter.sizes()]
    first.close()
    stored = QSettings(str(data_dir() / "ui.ini"), QSettings.Format.IniFormat)
    assert stored.contains("window/geometry")
    assert stored.contains("splitters/main")
    second: MainWindow = make_window(settings)  # type: ignore[operator]
    qtbot.waitUntil(lambda: second.width() == first.width())

    def proportions() -> list[float]:
        return [size / sum(second.splitter.sizes()) for size in second.splitter.sizes()]

    # The splitters are restored on a later turn of the event loop: wait for it.
    qtbot.waitUntil(lambda: proportions() == pytest.approx(wanted, abs=0.05))
