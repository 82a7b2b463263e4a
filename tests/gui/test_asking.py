"""Open a PDF, ask, watch the answer stream, follow citations, stop, cache, page ranges."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, Qt, QTimer, QUrl
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from desktop.answering.format import page_span
from desktop.answering.pages import parse_range
from desktop.config import Settings
from desktop.errors import Cancelled
from desktop.store.db import Store, StoredAnswer
from desktop.ui.ask_panel import AskPanel
from desktop.ui.main_window import MainWindow
from desktop.ui.quote_marks import unmarked_text
from tests.conftest import API_KEY
from tests.gui.conftest import FOUR_PAGES, GEOTOPO, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang


def chat_requests(server: FakeSGLang) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


def test_answer_streams_token_by_token(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, store: Store
) -> None:
    # How long the UI thread may stall while streaming is a timing goal: it is measured in
    # bench/bench_ui_stream.py, not asserted here (the suite runs on busy machines).
    sglang.behaviour.update(token_delay_s=0.01, answer_tokens=150, reasoning_tokens=40)
    open_document(window, qtbot, FOUR_PAGES)
    qtbot.waitUntil(lambda: window.doc_view.mode == "pdf")
    assert window.doc_view.page_count() == 4
    wait_ready(window, qtbot)

    # The answer on screen is sampled each time the UI thread gets a batch of tokens.
    lengths: list[int] = []
    sampler = QTimer()
    sampler.setInterval(15)
    sampler.timeout.connect(lambda: lengths.append(len(window.ask_panel.answer_view.writer.text)))
    sampler.start()
    result = ask(window, qtbot, "What does the document say?")
    sampler.stop()

    assert isinstance(result, StoredAnswer)
    assert result.status == "complete"
    growth = sorted(set(lengths))
    assert len(growth) >= 10, f"the answer did not grow gradually: {growth}"
    view = window.ask_panel.answer_view
    assert view.browser.toPlainText().startswith("The document has 4 pages.")
    assert "Qwen/Qwen3.5-35B-A3B" in view.figures_label.text()
    assert "tokens/s" in view.figures_label.text()
    assert view.reasoning.toPlainText().startswith("The user asks")
    # The answer is in the store and in the history list.
    stored = store.answers_for(result.document_sha)
    assert [a.status for a in stored] == ["complete"]
    qtbot.waitUntil(lambda: window.ask_panel.history_list.count() == 1)


def anchor_position(view: object, href: str) -> int:
    """The document position of the first anchor with ``href`` in a QTextBrowser."""
    doc = view.document()  # type: ignore[attr-defined]
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().anchorHref() == href:
                return int(fragment.position()) + 1
            it += 1
        block = block.next()
    raise AssertionError(f"no anchor {href!r}")


def test_clicking_a_citation_shows_that_page(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    ask(window, qtbot, "Where does it end?")
    assert window.doc_view.current_page() == 1
    browser = window.ask_panel.answer_view.browser
    position = anchor_position(browser, "longdoc-page:l=4")
    cursor = QTextCursor(browser.document())
    cursor.setPosition(position)
    point: QPoint = browser.cursorRect(cursor).center()
    with qtbot.waitSignal(window.ask_panel.citation_clicked, timeout=3_000):
        qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: window.doc_view.current_page() == 4)
    assert window.doc_view.page_edit.text() == "4"


def long_answer_asked(
    window: MainWindow, qtbot: QtBot, sglang: FakeSGLang, question: str
) -> AskPanel:
    """FOUR_PAGES open and ready, a slow 2,000-token answer set up, ``question`` typed."""
    sglang.behaviour.update(token_delay_s=0.03, answer_tokens=2_000)
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel
    panel.question_edit.setPlainText(question)
    return panel


def test_stop_keeps_a_partial_answer_as_incomplete(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, store: Store
) -> None:
    panel = long_answer_asked(window, qtbot, sglang, "Tell me everything.")
    with qtbot.waitSignal(panel.answer_finished, timeout=20_000) as blocker:
        panel.ask()
        qtbot.waitUntil(lambda: len(panel.answer_view.writer.text) > 40, timeout=15_000)
        assert panel.stop_button.isEnabled()
        qtbot.mouseClick(panel.stop_button, Qt.MouseButton.LeftButton)
    assert isinstance(blocker.args[0], Cancelled)
    assert not panel.busy
    assert "Stopped" in panel.answer_view.notice_label.text()
    qtbot.waitUntil(lambda: panel.history_list.count() == 1)
    [stored] = store.answers_for(window.document.sha256)  # type: ignore[union-attr]
    assert stored.status == "incomplete"
    assert stored.answer and len(stored.answer) < 2_000
    assert panel.answer_view.writer.text.startswith(stored.answer[:40])
    assert "(incomplete)" in panel.history_list.item(0).text()


def test_a_repeated_question_comes_from_the_cache_at_once(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    first = ask(window, qtbot, "What is on page 2?")
    assert isinstance(first, StoredAnswer)
    sent = chat_requests(sglang)
    # In a new thread: after the first answer, the same words would be a follow-up.
    qtbot.mouseClick(window.ask_panel.new_thread_button, Qt.MouseButton.LeftButton)
    second = ask(window, qtbot, "what is on  page 2?")
    assert isinstance(second, StoredAnswer)
    assert second.id == first.id
    assert chat_requests(sglang) == sent, "a cached answer must not reach the server"
    view = window.ask_panel.answer_view
    assert view.from_cache and "asked just now" in view.saved_badge.text()
    # The answer as written (its verified quote has a mark where it stands).
    assert unmarked_text(view.browser.document()) == first.answer
    # "Ask again" goes to the server and makes a new answer.
    with qtbot.waitSignal(window.ask_panel.answer_finished, timeout=30_000) as blocker:
        qtbot.mouseClick(view.ask_again_button, Qt.MouseButton.LeftButton)
    assert isinstance(blocker.args[0], StoredAnswer)
    assert blocker.args[0].id != first.id
    assert chat_requests(sglang) == sent + 1


def test_over_budget_then_a_page_range_is_asked_about_alone(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=40_000) as small:
        settings = Settings(endpoint=small.url, api_key=API_KEY, answer_reserve=4_096)
        window: MainWindow = make_window(settings)  # type: ignore[operator]
        open_document(window, qtbot, GEOTOPO)
        wait_ready(window, qtbot)
        panel = window.ask_panel
        bar = panel.budget_bar
        assert bar.over_budget
        assert bar.label.text().startswith("Over budget by ")
        assert panel.suggest_button.isVisible()
        qtbot.waitUntil(lambda: window.library.fits_text(window.document.sha256).startswith("✗"))  # type: ignore[union-attr]

        # Asking the whole document is refused before anything is sent.
        before = chat_requests(small)
        ask(window, qtbot, "Summarise it.")
        assert chat_requests(small) == before
        notice = panel.answer_view.notice_label.text()
        assert notice.startswith("Not sent: the question needs")
        assert "--pages" not in notice  # the app's words, not the command line's

        # A range still too long is named in printed labels, as the viewer names pages.
        doc = window.document
        assert doc is not None
        panel.pages_edit.setText("1-116")
        qtbot.waitUntil(lambda: bar.view is not None and bar.view.pages.last == 116)
        assert bar.over_budget
        assert f"pages 1-116 of 117 (printed i to {doc.pages[115].label}) need" in bar.label.text()

        # The suggestion is in printed labels too, and the box reads it as it reads typing.
        button = panel.suggest_button.text()
        assert button.startswith("Use pages i..")
        # Clicked once laid out: the longer budget line above it takes more lines, and
        # until the panel's layout has run again the row under it may be squeezed (a
        # 0-1 pixel high button, which a click at its middle can miss).
        suggest = panel.suggest_button
        qtbot.waitUntil(lambda: suggest.height() >= suggest.sizeHint().height())
        qtbot.mouseClick(panel.suggest_button, Qt.MouseButton.LeftButton)
        chosen = panel.pages_edit.text()
        assert button == f"Use pages {chosen}"
        picked = parse_range(chosen, doc.pages)
        first, last = picked.first, picked.last
        assert first == 1 and 1 < last < 117
        assert chosen == f"i..{doc.pages[last - 1].label}"
        assert panel.pages_hint.text() == ""  # nothing wrong with it
        printed = chosen.replace("..", " to ")
        assert panel.target_label.text().endswith(f"pages 1-{last} of 117 (printed {printed})")
        qtbot.waitUntil(lambda: bar.view is not None and bar.view.pages.last == last)
        qtbot.waitUntil(lambda: not bar.over_budget, timeout=20_000)
        result = ask(window, qtbot, "Summarise these pages.")
        assert isinstance(result, StoredAnswer)
        assert (result.first_page, result.last_page) == (1, last)
        prompt = small.prompts[-1]
        doc = window.document
        assert doc is not None
        assert f"[Page {doc.pages[last - 1].label}" in prompt
        assert f"[Page {doc.pages[last].label}]" not in prompt
        assert f"[Page {doc.pages[-1].label}]" not in prompt
        scope = panel.answer_view.scope_label
        assert scope.isVisible()
        # In the document's printed labels, with the positions when they differ.
        assert scope.text() == f"About {page_span(1, last, doc.pages)} only"
        assert f"to {doc.pages[last - 1].label})" in scope.text()


def test_history_shows_each_answer_and_exports_markdown(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    ask(window, qtbot, "First question?")
    ask(window, qtbot, "Second question?")
    panel = window.ask_panel
    qtbot.waitUntil(lambda: panel.history_list.count() == 2)
    assert panel.history_list.item(0).text() == "Second question?"
    panel.history_list.setCurrentRow(1)
    assert panel.answer_view.question_label.text() == "First question?"
    assert '"First question?"' in panel.answer_view.browser.toPlainText()
    markdown = panel.history_as_markdown()
    assert markdown is not None
    assert markdown.index("## First question?") < markdown.index("## Second question?")
    assert "[p. 4]" in markdown
    single = panel.current_answer_markdown()
    assert single is not None and single.startswith("## First question?")


def test_not_ready_server_explains_and_offers_settings(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    server = FakeSGLang(api_key=API_KEY, context_length=262_144).start()
    window: MainWindow = make_window(Settings(endpoint=server.url, api_key=API_KEY))  # type: ignore[operator]
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    server.stop()
    result = ask(window, qtbot, "Anyone there?")
    assert not isinstance(result, StoredAnswer)
    view = window.ask_panel.answer_view
    assert view.notice_label.text().startswith("The server is not ready: ")
    assert view.notice_button.isVisible()
    assert view.notice_button.text() == "Settings…"


def test_quitting_during_an_answer_stores_it_incomplete(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, store: Store
) -> None:
    panel = long_answer_asked(window, qtbot, sglang, "A long answer, please.")
    panel.ask()
    qtbot.waitUntil(lambda: len(panel.answer_view.writer.text) > 20, timeout=15_000)
    sha = window.document.sha256  # type: ignore[union-attr]
    window.close()
    [stored] = store.answers_for(sha)
    assert stored.status == "incomplete"
    assert stored.answer


def test_enter_asks_and_shift_enter_breaks_the_line(qtbot: QtBot, window: MainWindow) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    edit = window.ask_panel.question_edit
    edit.setFocus()
    qtbot.keyClicks(edit, "Line one")
    qtbot.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(edit, "line two")
    assert edit.toPlainText() == "Line one\nline two"
    assert not window.ask_panel.busy
    with qtbot.waitSignal(window.ask_panel.answer_finished, timeout=30_000):
        qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert window.ask_panel.answer_view.question_label.text() == "Line one\nline two"


def test_foreign_links_do_nothing(qtbot: QtBot, window: MainWindow) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    view = window.ask_panel.answer_view
    with qtbot.assertNotEmitted(view.citation_clicked):
        view.browser.anchorClicked.emit(QUrl("file:///etc/passwd"))
        view.browser.anchorClicked.emit(QUrl("http://example.com/"))
    with qtbot.waitSignal(view.citation_clicked) as blocker:
        view.browser.anchorClicked.emit(QUrl("longdoc-page:n=3"))
    assert blocker.args == [None, 3]
