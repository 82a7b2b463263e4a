"""Stop always stops: against a server that never closes the stream, in every state."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.errors import Cancelled
from desktop.store.db import Store
from desktop.ui.main_window import MainWindow
from tests.gui.conftest import FOUR_PAGES, activate, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang

REPEATS = 4


def chat_rids(server: FakeSGLang) -> list[str]:
    """The request ids of every chat request the server received, in order."""
    return [
        str(r.body.get("rid"))
        for r in server.requests
        if r.path.endswith("/chat/completions") and isinstance(r.body, dict)
    ]


def aborted_rids(server: FakeSGLang) -> list[str]:
    """The request ids the client asked the server to abort."""
    return [
        str(r.body.get("rid"))
        for r in server.requests
        if r.path == "/abort_request" and isinstance(r.body, dict)
    ]


def reached(window: MainWindow, server: FakeSGLang, state: str, sent: int) -> Callable[[], bool]:
    """A predicate: the answer being asked has reached ``state``."""
    view = window.ask_panel.answer_view
    if state == "before headers":
        return lambda: len(chat_rids(server)) > sent
    if state == "reasoning":
        return lambda: bool(view.reasoning.toPlainText())
    return lambda: bool(view.writer.text)


@pytest.mark.parametrize(
    ("state", "stall_after", "thinking"),
    [("before headers", 0, True), ("reasoning", 3, True), ("answer", 3, False)],
)
def test_stop_gives_the_panel_back_and_aborts_in_every_state(
    qtbot: QtBot,
    window: MainWindow,
    sglang: FakeSGLang,
    store: Store,
    state: str,
    stall_after: int,
    thinking: bool,
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel
    panel.think_box.setChecked(thinking)
    # The server sends this much, then hangs with the connection open, deaf to aborts.
    sglang.behaviour.update(stall_after=stall_after, reasoning_tokens=40, answer_tokens=400)
    for attempt in range(REPEATS):
        sent = len(chat_rids(sglang))
        panel.question_edit.setPlainText(f"Question {attempt} about the whole thing?")
        with qtbot.waitSignal(panel.answer_finished, timeout=20_000) as blocker:
            qtbot.mouseClick(panel.ask_button, Qt.MouseButton.LeftButton)
            assert panel.busy
            assert not panel.ask_button.isEnabled()
            qtbot.waitUntil(reached(window, sglang, state, sent), timeout=20_000)
            assert panel.stop_button.isEnabled()
            qtbot.mouseClick(panel.stop_button, Qt.MouseButton.LeftButton)
        assert isinstance(blocker.args[0], Cancelled)
        # The panel is back: Ask is enabled, Stop is not, the answer says it stopped.
        qtbot.waitUntil(lambda: panel.ask_button.isEnabled() and not panel.busy)
        assert not panel.stop_button.isEnabled()
        assert panel.answer_view.notice_label.text().startswith("Stopped.")
        # The server was told to abort this very request, every time.
        rid = chat_rids(sglang)[-1]
        qtbot.waitUntil(lambda rid=rid: rid in aborted_rids(sglang), timeout=10_000)  # type: ignore[misc]
    assert len(chat_rids(sglang)) == REPEATS
    assert sorted(set(aborted_rids(sglang))) == sorted(chat_rids(sglang))
    # Every stopped answer ends up in the history as incomplete (the worker stores it).
    sha = window.document.sha256  # type: ignore[union-attr]
    qtbot.waitUntil(lambda: len(store.answers_for(sha)) == REPEATS, timeout=20_000)
    qtbot.waitUntil(
        lambda: all(a.status == "incomplete" for a in store.answers_for(sha)), timeout=20_000
    )
    qtbot.waitUntil(lambda: panel.history_list.count() == REPEATS, timeout=20_000)


def test_escape_stops_during_reasoning_and_a_new_question_streams_normally(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel
    sglang.behaviour.update(stall_after=3, reasoning_tokens=40)
    panel.question_edit.setPlainText("Will this hang?")
    activate(window, qtbot)  # Esc is a window shortcut: it reaches the active window only
    panel.question_edit.setFocus()
    with qtbot.waitSignal(panel.answer_finished, timeout=20_000):
        qtbot.keyClick(panel.question_edit, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: bool(panel.answer_view.reasoning.toPlainText()), timeout=20_000)
        qtbot.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: panel.ask_button.isEnabled())
    # The stopped request's late end must not leak into the next answer.
    sglang.behaviour.update(stall_after=None, token_delay_s=0.0)
    panel.question_edit.setPlainText("And now?")
    with qtbot.waitSignal(panel.answer_finished, timeout=30_000) as blocker:
        assert panel.ask()
    assert not isinstance(blocker.args[0], BaseException)
    assert panel.answer_view.question_label.text() == "And now?"
    assert panel.answer_view.notice_label.isHidden()
    assert panel.answer_view.writer.text.startswith("The document has 4 pages.")
