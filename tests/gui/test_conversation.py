"""Follow-up questions in the app: the thread as a conversation, New thread, re-opening."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.answering.threads import Thread
from desktop.config import Settings, save_settings
from desktop.store.db import Store, StoredAnswer
from desktop.ui import tasks
from desktop.ui.main_window import MainWindow
from tests.conftest import API_KEY
from tests.gui.conftest import FOUR_PAGES, activate, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang


def last_messages(server: FakeSGLang) -> list[dict[str, Any]]:
    bodies = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    messages: list[dict[str, Any]] = bodies[-1]["messages"]
    return messages


def user_questions(server: FakeSGLang) -> list[str]:
    return [m["content"] for m in last_messages(server) if m["role"] == "user"]


FIRST, SECOND = "What is this document about?", "Which page says so?"


def two_turns(window: MainWindow, qtbot: QtBot) -> tuple[object, object]:
    """FOUR_PAGES open, the server ready, and a question and its follow-up answered."""
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    return ask(window, qtbot, FIRST), ask(window, qtbot, SECOND)


def test_follow_up_shows_the_conversation_and_new_thread_starts_afresh(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, store: Store
) -> None:
    panel = window.ask_panel
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    assert not panel.thread_view.isVisible()

    first = ask(window, qtbot, "What is this document about?")
    assert isinstance(first, StoredAnswer) and first.status == "complete"
    qtbot.waitUntil(lambda: panel.current_thread is not None)
    assert "1 question" in panel.thread_label.text()

    second = ask(window, qtbot, "Which page says so?")
    assert isinstance(second, StoredAnswer)
    # The model saw the first turn after the document; the user sees both turns.
    assert user_questions(sglang) == ["What is this document about?", "Which page says so?"]
    assert last_messages(sglang)[2] == {"role": "assistant", "content": first.answer}
    qtbot.waitUntil(lambda: "2 questions" in panel.thread_label.text())
    assert panel.thread_view.isVisible()
    earlier = panel.thread_view.toPlainText()
    assert "What is this document about?" in earlier
    assert first.answer.split(" See ")[0] in earlier
    assert "Which page says so?" not in earlier
    assert panel.answer_view.question_label.text() == "Which page says so?"
    assert panel.answer_view.browser.toPlainText().startswith("The document has 4 pages.")
    # The budget counts the earlier turns, and says so.
    qtbot.waitUntil(lambda: "+ earlier turns " in panel.budget_bar.label.text(), timeout=10_000)
    # Other pages belong to another thread: said at once, and nothing is sent.
    sent = len([r for r in sglang.requests if r.path.endswith("/chat/completions")])
    panel.pages_edit.setText("1-2")
    assert "start a New thread" in panel.pages_hint.text()
    panel.question_edit.setPlainText("And on pages 1-2?")
    assert not panel.ask()
    assert "start a new thread" in panel.answer_view.notice_label.text()
    assert len([r for r in sglang.requests if r.path.endswith("/chat/completions")]) == sent
    panel.pages_edit.clear()

    # New thread (the button): nothing of the conversation is shown or sent any more.
    qtbot.mouseClick(panel.new_thread_button, Qt.MouseButton.LeftButton)
    assert panel.current_thread is None
    assert not panel.thread_view.isVisible()
    assert panel.answer_view.answer is None
    assert "New thread" in panel.thread_label.text()
    third = ask(window, qtbot, "Who wrote it?")
    assert isinstance(third, StoredAnswer)
    assert user_questions(sglang) == ["Who wrote it?"]
    qtbot.waitUntil(lambda: panel.current_thread is not None)
    assert panel.current_thread is not None
    fresh = store.get_thread(panel.current_thread.id)
    assert fresh is not None and [t.id for t in fresh.turns] == [third.id]
    assert not panel.thread_view.isVisible()

    # The shortcut does the same (a window shortcut: the window must be the active one).
    activate(window, qtbot)
    panel.question_edit.setFocus()
    qtbot.keyClick(panel.question_edit, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: panel.current_thread is None)
    ask(window, qtbot, "And the date?")
    assert user_questions(sglang) == ["And the date?"]


def test_reopening_a_document_shows_its_last_thread_and_continues_it(
    qtbot: QtBot, make_window: Any, settings: Settings, sglang: FakeSGLang
) -> None:
    window = make_window(settings)
    two_turns(window, qtbot)
    qtbot.waitUntil(lambda: "2 questions" in window.ask_panel.thread_label.text())
    window.close()

    again = make_window(settings)
    panel = again.ask_panel
    open_document(again, qtbot, FOUR_PAGES)
    qtbot.waitUntil(lambda: panel.current_thread is not None, timeout=10_000)
    assert "2 questions" in panel.thread_label.text()
    assert "What is this document about?" in panel.thread_view.toPlainText()
    assert panel.answer_view.question_label.text() == "Which page says so?"
    wait_ready(again, qtbot)
    ask(again, qtbot, "And then?")
    assert user_questions(sglang) == [
        "What is this document about?",
        "Which page says so?",
        "And then?",
    ]


def test_a_thread_that_no_longer_fits_offers_a_new_thread(
    qtbot: QtBot, make_window: Any, home: Any
) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=8_000) as server:
        server.behaviour.update(answer_tokens=1_500)
        settings = Settings(
            endpoint=server.url, api_key=API_KEY, thinking=False, answer_reserve=2_048
        )
        save_settings(settings)
        window = make_window(settings)
        panel = window.ask_panel
        open_document(window, qtbot, FOUR_PAGES)
        wait_ready(window, qtbot)
        ask(window, qtbot, "Summarise.")
        ask(window, qtbot, "More.")
        sent = sum(r.path.endswith("/chat/completions") for r in server.requests)
        result = ask(window, qtbot, "And more?")
        assert not isinstance(result, StoredAnswer)
        assert sum(r.path.endswith("/chat/completions") for r in server.requests) == sent
        notice = panel.answer_view.notice_label.text()
        assert "no longer fits" in notice and "2 earlier turns" in notice
        assert "never dropped" in notice
        button = panel.answer_view.notice_button
        assert button.isVisible() and button.text() == "New thread"
        # The budget bar says the same, in numbers, without suggesting a page range.
        bar = panel.budget_bar
        qtbot.waitUntil(lambda: "thread no longer fits" in bar.label.text(), timeout=10_000)
        assert "Start a new thread" in bar.label.text()
        assert "page range" not in bar.label.text()
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        assert panel.current_thread is None
        qtbot.waitUntil(lambda: "earlier turns" not in bar.label.text(), timeout=10_000)
        assert bar.label.text().startswith("Document ")
        answered = ask(window, qtbot, "And more?")
        assert isinstance(answered, StoredAnswer) and answered.status == "complete"
        assert user_questions(server) == ["And more?"]


def test_ask_again_on_a_follow_up_asks_after_the_same_earlier_turns(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, store: Store
) -> None:
    panel = window.ask_panel
    first, second = two_turns(window, qtbot)
    assert isinstance(first, StoredAnswer) and isinstance(second, StoredAnswer)
    assert panel.current_thread is not None
    original = panel.current_thread.id
    with qtbot.waitSignal(panel.answer_finished, timeout=30_000) as blocker:
        qtbot.mouseClick(panel.answer_view.ask_again_button, Qt.MouseButton.LeftButton)
    again = blocker.args[0]
    assert isinstance(again, StoredAnswer) and again.id != second.id
    # The model saw the first turn only, not the answer being asked again.
    assert user_questions(sglang) == ["What is this document about?", "Which page says so?"]
    assert second.answer not in [m["content"] for m in last_messages(sglang)]
    # A branch: the original thread is kept as it was.
    assert panel.current_thread is not None and panel.current_thread.id != original
    assert [t.id for t in panel.current_thread.turns] == [first.id, again.id]
    kept = store.get_thread(original)
    assert kept is not None and [t.id for t in kept.turns] == [first.id, second.id]
    assert "What is this document about?" in panel.thread_view.toPlainText()


def test_an_answer_picked_from_the_history_is_followed_up(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, store: Store
) -> None:
    panel = window.ask_panel
    first, _ = two_turns(window, qtbot)
    qtbot.mouseClick(panel.new_thread_button, Qt.MouseButton.LeftButton)
    ask(window, qtbot, "Who wrote it?")
    qtbot.waitUntil(lambda: panel.history_list.count() == 3)
    # The oldest answer (last row: newest first): its thread up to it, shown and followed.
    item = panel.history_list.item(2)
    rect = panel.history_list.visualItemRect(item)
    qtbot.mouseClick(panel.history_list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert isinstance(first, StoredAnswer)
    assert panel.answer_view.question_label.text() == "What is this document about?"
    # Its thread is looked up off the UI thread.
    qtbot.waitUntil(
        lambda: panel.current_thread is not None and panel.current_thread.turns[-1].id == first.id
    )
    assert panel.current_thread is not None
    assert [t.id for t in panel.current_thread.turns] == [first.id]
    assert not panel.thread_view.isVisible()
    ask(window, qtbot, "Say more.")
    assert user_questions(sglang) == ["What is this document about?", "Say more."]


def test_a_picked_answer_s_thread_is_looked_up_off_the_ui_thread_and_a_stale_one_dropped(
    qtbot: QtBot, window: MainWindow, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: picking an answer from the history queried its thread on the UI thread.
    Now a worker does, and a lookup overtaken by a later pick is dropped."""
    panel = window.ask_panel
    first, second = two_turns(window, qtbot)
    assert isinstance(first, StoredAnswer) and isinstance(second, StoredAnswer)
    qtbot.mouseClick(panel.new_thread_button, Qt.MouseButton.LeftButton)
    ask(window, qtbot, "Who wrote it?")
    qtbot.waitUntil(lambda: panel.history_list.count() == 3)
    on_ui_thread: list[bool] = []
    gate = threading.Event()
    lookup = store.thread_with_answer

    def slow_lookup(answer_id: int) -> Thread | None:
        on_ui_thread.append(threading.current_thread() is threading.main_thread())
        if answer_id == first.id:
            gate.wait(5)  # the first pick's lookup ends after the second pick's
        return lookup(answer_id)

    monkeypatch.setattr(store, "thread_with_answer", slow_lookup)
    lookups: list[tasks.Task[Any]] = []
    run_call = tasks.run_call

    def recorded(job: Any, **kwargs: Any) -> tasks.Task[Any]:
        task = run_call(job, **kwargs)
        if kwargs.get("name") == "thread of an answer":
            lookups.append(task)
        return task

    monkeypatch.setattr(tasks, "run_call", recorded)
    panel.open_answer(first)
    panel.open_answer(second)  # the user picked again before the first lookup ended
    qtbot.waitUntil(
        lambda: panel.current_thread is not None and panel.current_thread.turns[-1].id == second.id
    )
    gate.set()
    qtbot.waitUntil(lambda: len(lookups) == 2 and all(t.done for t in lookups))
    assert on_ui_thread == [False, False]
    assert panel.answer_view.question_label.text() == SECOND
    assert panel.current_thread is not None
    assert [t.id for t in panel.current_thread.turns] == [first.id, second.id]
