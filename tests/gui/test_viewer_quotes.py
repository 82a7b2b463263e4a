"""The document viewer: a quote highlighted whole (lines, page breaks), off the UI thread;
Enter in the find box goes to the first hit (issue 21 item 5, issue 17); only the PDF the
document was extracted from is opened."""

from __future__ import annotations

import itertools
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.answering import quote_spans
from desktop.answering.citations import normalize_words
from desktop.documents.ingest import extract
from desktop.documents.model import Document
from desktop.ui import quote_highlight, tasks
from desktop.ui.document_view import DocumentView
from desktop.ui.main_window import MainWindow
from tests.gui.conftest import FOUR_PAGES, GEOTOPO, open_document
from tests.gui.test_quote_highlight import assert_rects_are_qtpdfs, highlighted_text


@pytest.fixture(scope="module")
def geotopo() -> Document:
    return extract(GEOTOPO)


@pytest.fixture
def view(qtbot: QtBot) -> DocumentView:
    widget = DocumentView()
    qtbot.addWidget(widget)
    widget.resize(900, 1000)
    widget.show()
    return widget


def shown(qtbot: QtBot, view: DocumentView, doc: Document) -> None:
    view.show_document(doc)
    qtbot.waitUntil(lambda: view.mode in ("pdf", "text"), timeout=20_000)


def line_break_quote(doc: Document, number: int) -> str:
    """The end of one line and the start of the next on page ``number`` (no hyphen)."""
    lines = doc.pages[number - 1].text.split("\n")
    for first, second in itertools.pairwise(lines):
        a, b = first.split(), second.split()
        if len(a) >= 6 and len(b) >= 6 and not first.rstrip().endswith("-"):
            return " ".join(a[-4:] + b[:4])
    raise AssertionError("no two long lines")


def page_break_quote(doc: Document, number: int) -> str:
    """The last words of page ``number`` and the first of the next."""
    return " ".join(doc.pages[number - 1].text.split()[-5:] + doc.pages[number].text.split()[:5])


def show_and_wait(qtbot: QtBot, view: DocumentView, number: int, quote: str) -> None:
    with qtbot.waitSignal(view.quotes.shown, timeout=15_000) as blocker:
        assert view.show_quote(number, quote)
    assert blocker.args == [True]


def test_a_pdf_quote_over_a_line_break_is_highlighted_whole(
    qtbot: QtBot, view: DocumentView, geotopo: Document
) -> None:
    shown(qtbot, view, geotopo)
    quote = line_break_quote(geotopo, 6)
    show_and_wait(qtbot, view, 6, quote)
    [span] = view.quotes.spans
    assert span.number == 6 and view.current_page() == 6
    assert highlighted_text(view) == normalize_words(quote)
    assert normalize_words(view.highlighted_quote()) == normalize_words(quote)
    assert len({round(y) for _, y, _, _ in span.rects}) >= 2  # two lines
    assert_rects_are_qtpdfs(view)
    assert view.find_edit.text() == ""


def test_a_pdf_quote_over_a_page_break_is_highlighted_on_both_pages(
    qtbot: QtBot, view: DocumentView, geotopo: Document
) -> None:
    shown(qtbot, view, geotopo)
    quote = page_break_quote(geotopo, 6)
    show_and_wait(qtbot, view, 7, quote)  # cited to the page it ends on
    assert [s.number for s in view.quotes.spans] == [6, 7]
    assert highlighted_text(view) == normalize_words(quote)
    assert_rects_are_qtpdfs(view)


def test_a_text_quote_over_a_line_and_a_page_break_is_selected_whole(
    qtbot: QtBot, view: DocumentView, tmp_path: Path
) -> None:
    path = tmp_path / "minutes.txt"
    first = "The board met on Tuesday.\nIt approved the budget for\nthe coming year after debate."
    path.write_text(f"{first}\fThe chair closed the meeting at noon.\n")
    doc = extract(path)
    shown(qtbot, view, doc)
    assert view.mode == "text"
    show_and_wait(qtbot, view, 1, "approved the budget for the coming year")
    assert view.text_view.selected_text() == "approved the budget for\nthe coming year"
    show_and_wait(qtbot, view, 1, "after debate. The chair closed")
    assert [s.number for s in view.quotes.spans] == [1, 2]
    selected = view.text_view.selected_text()
    assert selected.startswith("after debate.") and selected.endswith("The chair closed")
    assert view.find_edit.text() == ""


def test_a_quote_not_on_its_page_highlights_nothing(
    qtbot: QtBot, view: DocumentView, geotopo: Document
) -> None:
    shown(qtbot, view, geotopo)
    with qtbot.waitSignal(view.quotes.shown, timeout=15_000) as blocker:
        assert view.show_quote(3, "words that are on no page of this document at all")
    assert blocker.args == [False] and view.quotes.spans == [] and view.current_page() == 3
    assert not view.show_quote(999, "anything")


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> dict[str, threading.Event]:
    """pdf_spans held back for quotes starting with "SLOW" until released."""
    events = {"started": threading.Event(), "release": threading.Event()}
    real = quote_spans.pdf_spans

    def slow(path: Path, number: int, quote: str) -> list[quote_spans.Span]:
        if quote.startswith("SLOW"):
            events["started"].set()
            events["release"].wait(10)
            quote = quote.removeprefix("SLOW ")
        return real(path, number, quote)

    monkeypatch.setattr(quote_highlight, "pdf_spans", slow)
    return events


def test_the_search_runs_off_the_ui_thread_and_a_stale_result_is_dropped(
    qtbot: QtBot, view: DocumentView, geotopo: Document, held: dict[str, threading.Event]
) -> None:
    shown(qtbot, view, geotopo)
    assert view.show_quote(6, "SLOW " + line_break_quote(geotopo, 6))
    assert held["started"].wait(10)  # the UI thread is free while it runs
    later = page_break_quote(geotopo, 6)
    show_and_wait(qtbot, view, 7, later)
    held["release"].set()
    qtbot.waitUntil(lambda: not [t for t in tasks.running_tasks() if t.name == "locate quote"])
    assert [s.number for s in view.quotes.spans] == [6, 7]  # the older quote did not win
    assert highlighted_text(view) == normalize_words(later)


def test_a_result_never_reaches_a_deleted_view(
    qtbot: QtBot, geotopo: Document, held: dict[str, threading.Event]
) -> None:
    view = DocumentView()
    view.show()
    shown(qtbot, view, geotopo)
    applied: list[Any] = []
    view.quotes.shown.connect(applied.append)
    assert view.show_quote(6, "SLOW " + line_break_quote(geotopo, 6))
    assert held["started"].wait(10)
    view.deleteLater()
    qtbot.waitUntil(lambda: not shiboken6.isValid(view), timeout=5_000)
    held["release"].set()
    qtbot.waitUntil(lambda: not [t for t in tasks.running_tasks() if t.name == "locate quote"])
    assert applied == []


# --- on a real display --------------------------------------------------------------------


def _dark(image: QImage, rect: QRect) -> int:
    """Pixels in ``rect`` dark enough to be ink."""
    count = 0
    for x in range(rect.left(), rect.right() + 1):
        for y in range(rect.top(), rect.bottom() + 1):
            if QColor(image.pixel(x, y)).lightness() < 120:
                count += 1
    return count


def _grab_rendered(qtbot: QtBot, view: DocumentView, rects: list[QRect]) -> QImage:
    """The viewport without the highlight once its pages are drawn: QPdfView paints a blank
    page until its render thread delivers the image (slow under load)."""
    pdf_view = view.pdf_view
    highlight, pdf_view.highlight = pdf_view.highlight, []
    grabbed: list[QImage] = []

    def rendered() -> bool:
        pdf_view.viewport().repaint()
        grabbed[:] = [pdf_view.viewport().grab().toImage()]
        return all(_dark(grabbed[0], r) > 0 for r in rects if r.width() >= 6)

    try:
        qtbot.waitUntil(rendered, timeout=10_000)
    finally:
        pdf_view.highlight = highlight
    return grabbed[0]


def assert_painted_over_ink(qtbot: QtBot, view: DocumentView) -> None:
    """Each painted rectangle covers ink of the page as rendered, and paints over it."""
    pdf_view = view.pdf_view
    for _ in range(20):
        QApplication.processEvents()
    offset = QPoint(pdf_view.horizontalScrollBar().value(), pdf_view.verticalScrollBar().value())
    rects = [r.toAlignedRect().translated(-offset) for r in pdf_view.highlight_rects()]
    highlight = pdf_view.highlight
    plain = _grab_rendered(qtbot, view, rects)
    pdf_view.set_highlight(highlight)
    pdf_view.viewport().repaint()
    painted = pdf_view.viewport().grab().toImage()
    assert rects and all(plain.rect().contains(r) for r in rects)
    for rect in rects:
        if rect.width() < 6:
            continue  # a lone punctuation mark
        assert _dark(plain, rect) > rect.width() * rect.height() * 0.05, rect
        assert _dark(painted, rect) >= _dark(plain, rect) * 0.5  # the ink still shows
    assert any(painted.pixel(r.center()) != plain.pixel(r.center()) for r in rects)
    assert rects[-1].top() > rects[0].bottom()  # two lines


@pytest.mark.xvfb
def test_the_highlight_is_painted_over_the_quotes_own_characters(
    qtbot: QtBot, view: DocumentView, geotopo: Document
) -> None:
    """The pages are where PdfPages.page_rect says, fitted to the width and zoomed: the
    painted rectangles cover the quote's ink (a wrong scale or offset does not)."""
    shown(qtbot, view, geotopo)
    show_and_wait(qtbot, view, 6, line_break_quote(geotopo, 6))
    assert_painted_over_ink(qtbot, view)
    view.zoom_in()
    view.zoom_in()
    view.pdf_view.scroll_to_highlight()
    view.pdf_view.horizontalScrollBar().setValue(0)
    assert_painted_over_ink(qtbot, view)


@pytest.mark.xvfb
def test_enter_in_the_find_box_goes_to_the_first_hit_then_the_next(
    qtbot: QtBot, window: MainWindow
) -> None:
    """Regression (issue 21 item 5): Enter pressed before QtPdf's search had found a hit did
    nothing; now it goes to the first hit when it arrives, then on to the next."""
    open_document(window, qtbot, GEOTOPO)
    view = window.doc_view
    qtbot.waitUntil(lambda: view.mode == "pdf", timeout=20_000)
    view.focus_find()
    qtbot.keyClicks(view.find_edit, "Hausdorff")
    qtbot.keyClick(view.find_edit, Qt.Key.Key_Return)  # at once: no hit found yet
    qtbot.waitUntil(lambda: view.pdf_view.currentSearchResultIndex() == 0, timeout=15_000)
    first = view.search.resultAtIndex(0).page() + 1
    qtbot.waitUntil(lambda: view.current_page() == first, timeout=5_000)
    assert first > 1 and view.hits_label.text().startswith("1 of ")
    qtbot.waitUntil(lambda: view.hit_count() > 1, timeout=15_000)
    qtbot.keyClick(view.find_edit, Qt.Key.Key_Return)
    assert view.pdf_view.currentSearchResultIndex() == 1
    assert view.hits_label.text().startswith("2 of ")


def test_enter_on_a_word_that_is_nowhere_says_not_found(
    qtbot: QtBot, view: DocumentView, geotopo: Document
) -> None:
    """Enter waits for QtPdf's first hit, but not for ever."""
    shown(qtbot, view, geotopo)
    view.find_edit.setText("Zyzzyvaquux")
    view.find_next()  # at once
    assert view.hits_label.text() in ("searching…", "not found")
    qtbot.waitUntil(lambda: view.hits_label.text() == "not found", timeout=10_000)
    assert view.pdf_view.currentSearchResultIndex() == -1


def test_the_file_as_added_is_shown_as_a_pdf(
    qtbot: QtBot, view: DocumentView, tmp_path: Path
) -> None:
    copy = tmp_path / "paper.pdf"
    shutil.copyfile(FOUR_PAGES, copy)
    view.show_document(extract(copy))
    qtbot.waitUntil(lambda: view.mode == "pdf", timeout=20_000)
    assert view.pdf.pageCount() == 4 and not view.warnings_label.isVisibleTo(view)


def test_a_file_changed_since_it_was_added_shows_the_text_as_extracted(
    qtbot: QtBot, view: DocumentView, tmp_path: Path
) -> None:
    """Regression: the viewer rendered whatever the path held now (another version's pages
    under the stored text's citations and quotes); now its stored text, and it says why."""
    copy = tmp_path / "paper.pdf"
    shutil.copyfile(FOUR_PAGES, copy)
    doc = extract(copy)
    shutil.copyfile(GEOTOPO, copy)  # a new version saved under the same name
    view.show_document(doc)
    qtbot.waitUntil(lambda: view.mode != "loading", timeout=20_000)
    assert view.mode == "text"
    assert view.pdf.pageCount() == 0  # QtPdf never loaded the new file
    assert view.warnings_label.isVisibleTo(view)
    assert "paper.pdf has changed since it was added" in view.warnings_label.text()
    assert doc.pages[1].text.split()[0] in view.text_view.toPlainText()
    view.go_to_page(3)
    assert view.current_page() == 3
