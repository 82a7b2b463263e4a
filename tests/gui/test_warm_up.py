"""Warm-up: the open document is prefilled while the server is idle; a question or another
document supersedes it; the panel says when the document is ready for questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from desktop.config import Settings
from desktop.store.db import StoredAnswer
from desktop.ui.main_window import MainWindow
from tests.gui.conftest import FOUR_PAGES, GEOTOPO, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang


def questions(server: FakeSGLang) -> int:
    """Chat requests that carry a real question (a warm-up asks for one token only)."""
    return sum(
        1
        for r in server.requests
        if r.path.endswith("/chat/completions")
        and isinstance(r.body, dict)
        and r.body.get("max_tokens") != 1
    )


def warm_ups(server: FakeSGLang) -> int:
    """Requests that only prefill: one-token chats, or the raw-prompt routes."""
    return sum(
        1
        for r in server.requests
        if r.path in ("/generate", "/v1/completions")
        or (
            r.path.endswith("/chat/completions")
            and isinstance(r.body, dict)
            and r.body.get("max_tokens") == 1
        )
    )


def warm_window(make_window: Any, settings: Settings) -> MainWindow:
    window: MainWindow = make_window(settings)
    window.ask_panel.warm_up_enabled = True
    return window


def test_an_opened_document_is_warmed_and_the_first_question_hits_the_cache(
    qtbot: QtBot, make_window: Any, settings: Settings, sglang: FakeSGLang
) -> None:
    window = warm_window(make_window, settings)
    open_document(window, qtbot, FOUR_PAGES)
    label = window.ask_panel.warm_label
    qtbot.waitUntil(lambda: label.text().startswith("Ready for questions"), timeout=20_000)
    assert label.isVisible()
    assert window.document is not None and window.document.title in label.text()
    assert warm_ups(sglang) == 1
    assert questions(sglang) == 0
    wait_ready(window, qtbot)
    guesses: list[Any] = []
    view = window.ask_panel.answer_view
    original = view.on_sent
    view.on_sent = lambda sent, guess: (guesses.append(guess), original(sent, guess))[1]  # type: ignore[method-assign]
    answer = ask(window, qtbot, "What does it say?")
    assert isinstance(answer, StoredAnswer)
    # The wait is estimated for the question alone: the document is already read.
    [guess] = guesses
    assert guess.uncached_tokens <= 256 < guess.prompt_tokens
    # The document was in the server's cache before the first question arrived.
    assert answer.cached_tokens is not None and answer.cached_tokens > 500
    assert not label.isVisible()
    assert warm_ups(sglang) == 1  # not warmed again while it is held


def test_a_question_or_another_document_cancels_the_warm_up(
    qtbot: QtBot, make_window: Any, settings: Settings, sglang: FakeSGLang, tmp_path: Path
) -> None:
    # A slow prefill: neither warm-up can finish before it is cancelled, however busy the
    # machine (GeoTopo's would take an hour, the 4-page PDF's minutes).
    sglang.behaviour.update(prefill_tokens_per_s=20)
    window = warm_window(make_window, settings)
    panel = window.ask_panel
    open_document(window, qtbot, GEOTOPO)
    qtbot.waitUntil(lambda: panel.warming, timeout=20_000)
    assert panel.warm_label.text().startswith("Reading ")
    qtbot.waitUntil(lambda: warm_ups(sglang) == 1, timeout=10_000)
    # Another document: the first warm-up is cancelled (the server drops it).
    open_document(window, qtbot, FOUR_PAGES)
    qtbot.waitUntil(lambda: len(sglang.aborted_rids) == 1, timeout=10_000)
    # The second one starts; asking a question cancels it in turn.
    qtbot.waitUntil(lambda: warm_ups(sglang) == 2, timeout=10_000)
    # (The indicator may say "busy" now: the server is reading the warm-up.)
    qtbot.waitUntil(lambda: panel.budget_bar.view is not None, timeout=20_000)
    # Only once the server paces that warm-up's prefill may the pace be lifted for the
    # question (else the warm-up could finish before it is cancelled).
    qtbot.waitUntil(lambda: sglang.metrics.slow_prefills == 1, timeout=10_000)
    sglang.behaviour.update(prefill_tokens_per_s=None)
    panel.question_edit.setPlainText("Quick, what is this?")
    with qtbot.waitSignal(panel.answer_finished, timeout=30_000) as blocker:
        assert panel.ask()
        assert not panel.warm_label.isVisible()
    assert isinstance(blocker.args[0], StoredAnswer)
    qtbot.waitUntil(lambda: not panel.warming, timeout=10_000)
    qtbot.waitUntil(lambda: len(sglang.aborted_rids) >= 2, timeout=10_000)
    assert questions(sglang) == 1


def test_the_ready_line_ends_with_one_full_stop() -> None:
    """Regression: a title ending with a full stop (a text file's first line) read
    "...the server holds 1. Scope. The Supplier ... in the schedule.." in the screenshots."""
    from desktop.ui.warm_up import ready_line
    from tests.conftest import make_document

    doc = make_document([("1", "text")], title="1. Scope. Widgets as listed in the schedule.")
    assert ready_line(doc).endswith("in the schedule.") and not ready_line(doc).endswith("..")
    assert ready_line(make_document([("1", "text")], title="A title")).endswith("A title.")
