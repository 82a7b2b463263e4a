"""Several documents in the app: "Ask about these N documents" and the Compare window."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from desktop.answering.citations import normalize_words
from desktop.compare.align import ChangeKind
from desktop.ui.compare_window import CompareWindow
from desktop.ui.main_window import MainWindow
from desktop.ui.set_window import SetAskWindow
from tests.gui.test_asking import anchor_position
from tests.gui.test_quote_highlight import highlighted_text
from tests.support.contracts import contract_pair, lay_out
from tests.support.documents import three_kinds
from tests.support.pdf_maker import write_pdf
from tests.support.sglang_server import FakeSGLang

# {pdf}, {docx}, {vtt}: the letters the set gave each kind (library order).
ANSWER = (
    'Revenue: "Revenue rose to 12 million euros" [{pdf} p. 1]. '
    'Payment: "Invoices are due within 30 days" [{docx} § 4.2 ¶ 1]. '
    'Hiring: "We agree to revisit hiring in March" [{vtt} 00:41:12]. '
    'Misattributed: "Invoices are due within 30 days" [{pdf} p. 2].'
)


def screenshot(widget: object, name: str) -> None:
    """Save a PNG where LONGDOC_SCREENSHOTS says (to look at), if it says."""
    folder = os.environ.get("LONGDOC_SCREENSHOTS")
    if folder:
        widget.grab().save(str(Path(folder) / name))  # type: ignore[attr-defined]


def click_href(qtbot: QtBot, browser: object, href: str) -> None:
    cursor = QTextCursor(browser.document())  # type: ignore[attr-defined]
    cursor.setPosition(anchor_position(browser, href))
    point: QPoint = browser.cursorRect(cursor).center()  # type: ignore[attr-defined]
    qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=point)  # type: ignore[attr-defined]


def test_ask_about_these_documents_end_to_end(
    window: MainWindow, qtbot: QtBot, sglang: FakeSGLang, tmp_path: Path
) -> None:
    paths = three_kinds(tmp_path)
    window.add_paths(paths)
    library = window.library
    qtbot.waitUntil(lambda: library.model.total == 3 and not library.ingesting, timeout=30_000)
    assert not library.set_ask_button.isVisible()
    library.view.selectAll()
    assert library.set_ask_button.text() == "Ask about these 3 documents"
    assert library.set_ask_button.isVisible()
    qtbot.mouseClick(library.set_ask_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(window.several.windows) == 1, timeout=10_000)
    [set_window] = window.several.windows
    assert isinstance(set_window, SetAskWindow)
    letters = {m.letter: m.document for m in set_window.docset.members}
    text = set_window.asking_label.text()
    for letter, doc in letters.items():
        assert f"{letter} {doc.title}" in text
    qtbot.waitUntil(lambda: len(set_window.share_bar.shares) == 3, timeout=20_000)
    assert "fits" in set_window.budget_label.text()
    assert [s[0] for s in set_window.share_bar.shares] == ["A", "B", "C"]

    kinds = {m.document.kind: m.letter for m in set_window.docset.members}
    sglang.behaviour.answer_text = ANSWER.format(
        pdf=kinds["pdf"], docx=kinds["docx"], vtt=kinds["transcript"]
    )
    set_window.question_edit.setPlainText("What do they say?")
    qtbot.mouseClick(set_window.ask_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: set_window.quotes_label.text().startswith("Quotes:"), timeout=30_000)
    assert set_window.quotes_label.text() == "Quotes: 3 ✓ verified, 1 ⚠ elsewhere, 0 ✗ not found."
    [chat] = [r.body for r in sglang.requests if r.path.endswith("/chat/completions")]
    assert '<document id="C">' in chat["messages"][0]["content"]
    screenshot(set_window, "12-ask-about-these-documents.png")

    # The Word contract's citation opens it in the main window, the quoted line selected.
    b = letters[kinds["docx"]]
    click_href(qtbot, set_window.answer_view, "cite:1")
    qtbot.waitUntil(
        lambda: window.document is not None and window.document.sha256 == b.sha256, timeout=10_000
    )
    qtbot.waitUntil(
        lambda: (
            "Invoices are due within 30 days"
            in window.doc_view.text_view.textCursor().selectedText()
        ),
        timeout=10_000,
    )
    # The misattributed quote opens where it really is (the contract), not the cited PDF.
    window.show_document(letters[kinds["pdf"]])
    click_href(qtbot, set_window.answer_view, "cite:3")
    qtbot.waitUntil(lambda: window.document is not None and window.document.sha256 == b.sha256)


def test_compare_window_end_to_end(
    window: MainWindow, qtbot: QtBot, sglang: FakeSGLang, tmp_path: Path
) -> None:
    old, new, _ = contract_pair(24, changes=1)
    a = lay_out(old, 90, 40, hyphenate=False, footer=False)
    b = lay_out(new, 72, 30, hyphenate=True, footer=True)
    draft = write_pdf(tmp_path / "draft.pdf", [p.split("\n") for p in a], title="Draft")
    signed = write_pdf(tmp_path / "signed.pdf", [p.split("\n") for p in b], title="Signed")
    sglang.behaviour.answer_text = "Clause amounts changed; see the list [B p. 1]."
    window.several.compare_paths(draft, signed)
    qtbot.waitUntil(lambda: len(window.several.windows) == 1, timeout=30_000)
    [compare] = window.several.windows
    assert isinstance(compare, CompareWindow)
    qtbot.waitUntil(lambda: compare.change_list.count() == 4, timeout=30_000)
    assert compare.status_label.text() == "4 changes"
    # Each change wraps at the list's width: no sideways scrolling to read one.
    changes = compare.change_list

    def widest() -> int:
        return max(changes.visualItemRect(changes.item(r)).right() for r in range(4))

    qtbot.waitUntil(lambda: 0 < widest() < changes.viewport().width())
    assert changes.horizontalScrollBar().maximum() == 0
    # The explanation: one chat request with both versions whole and the change list.
    qtbot.waitUntil(lambda: compare.quotes_label.text() != "", timeout=30_000)
    [chat] = [r.body for r in sglang.requests if r.path.endswith("/chat/completions")]
    system = chat["messages"][0]["content"]
    assert '<document id="A">\nTitle: Draft' in system and '<document id="B">' in system
    assert "Changes:\n1. " in chat["messages"][-1]["content"]
    assert "Clause amounts changed" in compare.explanation_view.toPlainText()

    # Clicking the changed amount: both views go there, the changed words highlighted.
    assert compare.comparison is not None
    row = next(i for i, c in enumerate(compare.comparison.changes) if c.kind is ChangeKind.CHANGED)
    change = compare.comparison.changes[row]
    qtbot.waitUntil(lambda: compare.new_view.page_count() == len(b), timeout=20_000)
    qtbot.waitUntil(lambda: compare.old_view.page_count() == len(a), timeout=20_000)
    compare.change_list.setCurrentRow(row)
    qtbot.waitUntil(lambda: compare.new_view.current_page() == change.new[0].page, timeout=10_000)
    assert compare.old_view.current_page() == change.old[0].page
    # The changed words are highlighted where they stand; the find boxes are left alone.
    for view, words in (
        (compare.new_view, change.inserted[0]),
        (compare.old_view, change.deleted[0]),
    ):
        qtbot.waitUntil(lambda view=view: bool(view.quotes.spans), timeout=10_000)
        assert highlighted_text(view) == normalize_words(words)
        assert view.find_edit.text() == ""
    screenshot(compare, "13-compare.png")

    # The explanation's citation ([B p. 1]) opens the new version at its page 1.
    assert len(b) > 1
    compare.new_view.go_to_page(len(b))
    click_href(qtbot, compare.explanation_view, "cite:0")
    qtbot.waitUntil(lambda: compare.new_view.current_page() == 1, timeout=10_000)
