"""Quotes in an answer are checked against the document; the line under the answer says so."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCharFormat
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from desktop.answering.citations import QuoteCheck, QuoteStatus
from desktop.documents.model import Page
from desktop.store.db import StoredAnswer
from desktop.ui.answer_view import quote_summary
from desktop.ui.ask_panel import QUOTE_CHECK_INLINE_CHARS
from desktop.ui.main_window import MainWindow
from desktop.ui.quote_marks import NOT_FOUND_COLOR
from tests.gui.conftest import GEOTOPO, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang

QUESTION = 'What do "the lecture notes of this course" say?'
# GeoTopo: page 2 is labelled "ii" (the preface), page 6 is labelled "3" (Definition 1).
ANSWER = (
    "The preface says: "
    '"Dieses Skript wurde im Wintersemester 2013/2014 von Martin Thoma geschrieben" [p. ii]. '
    'It defines: "Ein topologischer Raum ist ein Paar (X, T) bestehend aus einer Menge X" '
    '[p. 9]. It also claims "the moon is made of <b>green</b> cheese" [p. 4], and you asked '
    'about "the lecture notes of this course" [p. 1].'
)


def click_link(qtbot: QtBot, label: QLabel) -> None:
    """Click the first link in a label: hover along its first line until the cursor says
    there is a link under the mouse (a label does not expose where its links are)."""
    y = label.fontMetrics().height() // 2 + label.contentsMargins().top()
    for x in range(0, label.width(), 2):
        qtbot.mouseMove(label, QPoint(x, y))
        if label.cursor().shape() == Qt.CursorShape.PointingHandCursor:
            qtbot.mouseClick(label, Qt.MouseButton.LeftButton, pos=QPoint(x, y))
            return
    raise AssertionError(f"no link in {label.text()!r}")


def test_quotes_are_checked_and_a_misplaced_one_links_to_its_page(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    sglang.behaviour.update(answer_text=ANSWER)
    open_document(window, qtbot, GEOTOPO)
    assert window.document is not None
    # Long enough that the check runs in a worker: the line appears a moment later.
    assert sum(len(p.text) for p in window.document.pages) > QUOTE_CHECK_INLINE_CHARS
    wait_ready(window, qtbot)
    result = ask(window, qtbot, QUESTION)
    assert isinstance(result, StoredAnswer) and result.answer == ANSWER
    view = window.ask_panel.answer_view
    qtbot.waitUntil(lambda: view.quotes_label.isVisible(), timeout=5_000)
    line = view.quotes_label.text()
    # The quote restating the question is not counted: 1 not found, not 2.
    assert line.startswith("Quotes: 1 verified · 1 on another page (")
    assert line.endswith(' · <b style="color:#d64541">1 not found</b>')
    assert '<a href="longdoc-page:n=6">p. 3</a>' in line
    tooltip = view.quotes_label.toolTip()
    assert "the moon is made of &lt;b&gt;green&lt;/b&gt; cheese" in tooltip
    assert "<b>green" not in tooltip
    assert "lecture notes" not in tooltip

    # Each quote is marked where it stands in the answer.
    text = view.browser.toPlainText()
    assert 'geschrieben" [p. ii] ✓' in text
    assert 'bestehend aus einer Menge X" [p. 9] ⚠ on p. 3' in text
    assert 'green</b> cheese" [p. 4]  ✗ not found in the document' in text
    assert text.count("✓") == 1 and text.count("✗") == 1  # not the question's quote
    assert view.quote_marks_placed == 3
    document = view.browser.document()
    missing = document.find("✗ not found in the document")
    assert missing.charFormat().background().color() == NOT_FOUND_COLOR
    flagged = document.find("the moon is made of")
    assert flagged.charFormat().underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline
    elsewhere = document.find("p. 3", document.find("⚠").position())
    assert elsewhere.charFormat().anchorHref() == "longdoc-page:n=6"
    # Copy and export take the answer as written, without the marks.
    assert "✗" not in (window.ask_panel.current_answer_markdown() or "")

    # The page the misplaced quote is really on is one click away.
    window.doc_view.go_to_page(1)
    with qtbot.waitSignal(window.ask_panel.citation_clicked, timeout=3_000) as blocker:
        click_link(qtbot, view.quotes_label)
    assert blocker.args == [None, 6]
    qtbot.waitUntil(lambda: window.doc_view.current_page() == 6)
    assert window.doc_view.page_edit.text() == "3"

    # The same question again (in a new thread) comes from the cache, checked the same way.
    view.show_quote_checks(None, [])
    assert not view.quotes_label.isVisible()
    window.ask_panel.new_thread()
    again = ask(window, qtbot, QUESTION)
    assert isinstance(again, StoredAnswer) and again.id == result.id
    assert view.from_cache
    qtbot.waitUntil(lambda: view.quotes_label.text() == line, timeout=5_000)
    assert view.browser.toPlainText() == text  # marked once, the same way


def test_an_answer_without_quotes_has_no_quote_line(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    sglang.behaviour.update(answer_text="It is a lecture script on topology [p. 3].")
    open_document(window, qtbot, GEOTOPO)
    wait_ready(window, qtbot)
    ask(window, qtbot, "What is it?")
    view = window.ask_panel.answer_view
    qtbot.waitUntil(lambda: view.quote_checks is not None, timeout=5_000)
    assert view.quote_checks == []
    assert not view.quotes_label.isVisible()


def test_quote_summary_counts_pages_and_escapes_quotes() -> None:
    pages = [Page(n, label, "") for n, label in enumerate(["i", "1", "2", "<3>"], 1)]

    def check(status: QuoteStatus, found_on: int | None, quote: str = "q w e") -> QuoteCheck:
        return QuoteCheck(0, 1, quote, (2,), status, found_on)

    line, tooltip = quote_summary(
        [
            check(QuoteStatus.OTHER_PAGE, 4, 'a "<i>b</i>" c'),
            check(QuoteStatus.OTHER_PAGE, 3),
            check(QuoteStatus.OTHER_PAGE, 4),
        ],
        pages,
    )
    assert line == (
        'Quotes: 3 on other pages (<a href="longdoc-page:n=3">p. 2</a>, '
        '<a href="longdoc-page:n=4">p. &lt;3&gt;</a>)'
    )
    assert "a &quot;&lt;i&gt;b&lt;/i&gt;&quot; c" in tooltip
    assert "cited p. 1; it is on p. &lt;3&gt;" in tooltip
    assert quote_summary([], pages) == ("", "")
    line, _ = quote_summary([check(QuoteStatus.NOT_FOUND, None)], pages)
    assert line == 'Quotes: <b style="color:#d64541">1 not found</b>'
    line, tooltip = quote_summary([check(QuoteStatus.VERIFIED, 2)], pages)
    assert line == "Quotes: 1 verified"
    assert "found on the page it cites" in tooltip
