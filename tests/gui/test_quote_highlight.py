"""Clicking a checked quote's citation shows its page with the quoted passage highlighted whole.

The quote is found off the UI thread; a PDF paints PDFium's characters of the whole
passage (over line breaks and a page break), text selects it; the find box is left alone.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from desktop.answering.citations import normalize_words
from desktop.ui.answer_view import AnswerView
from desktop.ui.document_view import DocumentView
from desktop.ui.main_window import MainWindow
from tests.gui.conftest import GEOTOPO, ask, open_document, wait_ready
from tests.gui.test_asking import anchor_position
from tests.gui.test_quotes import click_link
from tests.support.sglang_server import FakeSGLang

# GeoTopo: page 2 is labelled "ii" (the preface), page 6 is labelled "3" (Definition 1,
# whose sentence runs over a line break there).
VERIFIED = "Dieses Skript wurde im Wintersemester 2013/2014 von Martin Thoma geschrieben"
MISPLACED = "Ein topologischer Raum ist ein Paar (X, T) bestehend aus einer Menge X"
ANSWER = f'The preface: "{VERIFIED}" [p. ii]. Also: "{MISPLACED}" [p. 9].'


def click_anchor(qtbot: QtBot, window: MainWindow, href: str) -> None:
    """Click the link ``href`` in the answer with the mouse."""
    browser = window.ask_panel.answer_view.browser
    cursor = QTextCursor(browser.document())
    cursor.setPosition(anchor_position(browser, href))
    point: QPoint = browser.cursorRect(cursor).center()
    with qtbot.waitSignal(window.ask_panel.quote_clicked, timeout=3_000):
        qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=point)


def highlighted_text(view: DocumentView) -> str:
    """The words the quote highlight covers: QtPdf's own characters at the highlighted
    indices (a PDF), or the text view's selection."""
    if view.mode == "text":
        return normalize_words(view.text_view.selected_text())
    parts = [
        view.pdf.getSelectionAtIndex(s.number - 1, s.start, s.end - s.start).text()
        for s in view.quotes.spans
    ]
    return normalize_words(" ".join(parts))


def assert_rects_are_qtpdfs(view: DocumentView) -> None:
    """The painted rectangles are where QtPdf itself has those characters."""
    for span in view.quotes.spans:
        selection = view.pdf.getSelectionAtIndex(span.number - 1, span.start, span.end - span.start)
        theirs = [polygon.boundingRect() for polygon in selection.bounds()]
        assert len(theirs) == len(span.rects) > 0
        for (x, y, w, h), rect in zip(span.rects, theirs, strict=True):
            assert abs(x - rect.x()) < 1 and abs(y - rect.y()) < 1
            assert abs(w - rect.width()) < 1 and abs(h - rect.height()) < 1


def ask_about_geotopo(qtbot: QtBot, window: MainWindow, sglang: FakeSGLang) -> AnswerView:
    """Open the GeoTopo PDF and ask; the answer view once its two quote marks are placed."""
    sglang.behaviour.update(answer_text=ANSWER)
    open_document(window, qtbot, GEOTOPO)
    qtbot.waitUntil(lambda: window.doc_view.mode == "pdf", timeout=10_000)
    wait_ready(window, qtbot)
    ask(window, qtbot, "Who wrote it?")
    view = window.ask_panel.answer_view
    qtbot.waitUntil(lambda: view.quote_marks_placed == 2, timeout=10_000)
    return view


def test_clicking_a_verified_citation_highlights_the_quote_on_its_page(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    view = ask_about_geotopo(qtbot, window, sglang)
    doc_view = window.doc_view
    assert doc_view.current_page() == 1 and doc_view.hit_count() == 0

    click_anchor(qtbot, window, "longdoc-page:l=ii")
    qtbot.waitUntil(lambda: bool(doc_view.quotes.spans), timeout=10_000)
    assert doc_view.current_page() == 2 and doc_view.page_edit.text() == "ii"
    # The whole quote is highlighted, where QtPdf has its characters; the find box is empty.
    assert highlighted_text(doc_view) == normalize_words(VERIFIED)
    assert_rects_are_qtpdfs(doc_view)
    assert doc_view.find_edit.text() == "" and doc_view.hit_count() == 0

    # The misplaced quote's "on p. 3" mark opens physical page 6 with the passage there.
    click_anchor(qtbot, window, "longdoc-page:n=6")
    qtbot.waitUntil(
        lambda: doc_view.quotes.spans[:1] != [] and doc_view.quotes.spans[0].number == 6,
        timeout=10_000,
    )
    assert doc_view.page_edit.text() == "3"
    assert highlighted_text(doc_view) == normalize_words(MISPLACED)
    assert doc_view.find_edit.text() == ""

    # So does the "p. 3" link in the line under the answer.
    doc_view.go_to_page(1)
    with qtbot.waitSignal(window.ask_panel.quote_clicked, timeout=3_000) as blocker:
        click_link(qtbot, view.quotes_label)
    assert blocker.args == [MISPLACED, 6]
    qtbot.waitUntil(
        lambda: doc_view.current_page() == 6 and bool(doc_view.quotes.spans), timeout=10_000
    )


def test_a_citation_whose_quote_is_elsewhere_highlights_nothing(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    view = ask_about_geotopo(qtbot, window, sglang)
    browser = view.browser
    cursor = QTextCursor(browser.document())
    cursor.setPosition(anchor_position(browser, "longdoc-page:l=9"))
    point: QPoint = browser.cursorRect(cursor).center()
    with (
        qtbot.assertNotEmitted(window.ask_panel.quote_clicked),
        qtbot.waitSignal(window.ask_panel.citation_clicked, timeout=3_000),
    ):
        qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: window.doc_view.page_edit.text() == "9")
    assert window.doc_view.find_edit.text() == ""


def test_in_a_text_document_the_quoted_passage_is_selected(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    quote = "the committee approved the travel budget of twelve thousand euros"
    filler = "Nothing of note happened on this page.\n" * 40
    path.write_text(f"{filler}\f{filler}The chair reported that {quote} after a long debate.\n")
    sglang.behaviour.update(answer_text=f'It says "{quote}" [p. 2].')
    open_document(window, qtbot, path)
    assert window.doc_view.mode == "text"
    wait_ready(window, qtbot)
    ask(window, qtbot, "What was approved?")
    qtbot.waitUntil(lambda: window.ask_panel.answer_view.quote_marks_placed == 1)
    click_anchor(qtbot, window, "longdoc-page:l=2")
    text_view = window.doc_view.text_view
    qtbot.waitUntil(lambda: text_view.textCursor().selectedText() == quote)
    assert window.doc_view.current_page() == 2
