"""The background-task helper: tied to its receiver's lifetime, and lets go of finished work."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from desktop.config import Settings
from desktop.documents.model import Document
from desktop.store.db import Store
from desktop.ui import messages, tasks
from desktop.ui.app import create_window
from desktop.ui.main_window import MainWindow
from desktop.ui.session import BudgetView
from tests.gui.conftest import FOUR_PAGES, open_document, wait_ready


def test_a_result_for_a_deleted_receiver_is_dropped(qtbot: QtBot) -> None:
    receiver = QWidget()
    gate = threading.Event()
    delivered: list[object] = []
    task = tasks.run_call(
        lambda: gate.wait(30) and "result",
        receiver=receiver,
        success=delivered.append,
        failure=delivered.append,
    )
    shiboken6.delete(receiver)  # the widget goes away while the job runs
    gate.set()
    qtbot.waitUntil(lambda: task.done, timeout=10_000)
    assert delivered == []


def test_events_and_errors_for_a_deleted_receiver_are_dropped(qtbot: QtBot) -> None:
    receiver = QObject()
    gate = threading.Event()
    seen: list[object] = []

    def stream(cancel: threading.Event) -> Any:
        yield 1
        gate.wait(30)
        yield 2
        raise RuntimeError("late failure")

    task = tasks.run_stream(
        stream, receiver=receiver, events=seen.extend, failure=seen.append, name="s"
    )
    qtbot.waitUntil(lambda: seen == [1], timeout=10_000)
    shiboken6.delete(receiver)
    gate.set()
    qtbot.waitUntil(lambda: task.done, timeout=10_000)
    assert seen == [1]
    assert messages.bus().history == []


def test_a_failure_without_a_handler_is_shown_to_the_user(qtbot: QtBot) -> None:
    receiver = QObject()

    def job() -> None:
        raise OSError("the disk is on fire")

    task = tasks.run_call(job, receiver=receiver, name="doomed")
    qtbot.waitUntil(lambda: task.done, timeout=10_000)
    [message] = messages.bus().history
    assert message.level is messages.Level.ERROR
    assert "the disk is on fire" in message.text


def test_finished_work_is_let_go(qtbot: QtBot) -> None:
    receiver = QObject()
    gc.collect()
    before = tasks.live_tasks()

    class Payload:
        """Something a job holds on to."""

    payloads: list[weakref.ref[Payload]] = []
    results: list[int] = []
    handles: list[weakref.ref[tasks.Task[int]]] = []
    # Many instant jobs: some end before QThreadPool.start() returns (the PySide race
    # that kept QRunnable wrappers, and what they held, alive for good).
    for i in range(500):
        payload = Payload()
        payloads.append(weakref.ref(payload))
        task = tasks.run_call(
            lambda payload=payload, i=i: i,  # type: ignore[misc]
            receiver=receiver,
            success=results.append,
        )
        handles.append(weakref.ref(task))
        del payload, task
    qtbot.waitUntil(lambda: len(results) == 500, timeout=30_000)
    assert tasks.wait_all(10_000)
    qtbot.waitUntil(lambda: not tasks.running_tasks(), timeout=10_000)
    gc.collect()
    assert sorted(results) == list(range(500))
    assert [p for p in payloads if p() is not None] == []
    assert [h for h in handles if h() is not None] == []
    assert tasks.live_tasks() == before


def test_closing_the_window_while_the_budget_is_counted_is_harmless(
    qtbot: QtBot, store: Store, settings: Settings
) -> None:
    # Not through make_window: this test deletes the window itself.
    window: MainWindow = create_window(settings, store, poll_ms=150)
    window.show()
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    gate = threading.Event()
    session = window.session
    original = session.budget

    def slow_budget(doc: Document, pages: object, question: str, thinking: bool) -> BudgetView:
        gate.wait(30)
        return original(doc, pages, question, thinking)  # type: ignore[arg-type]

    session.budget = slow_budget  # type: ignore[method-assign]
    window.ask_panel.refresh_budget()
    task = window.ask_panel._budget_task
    assert task is not None and not task.done
    bar = window.ask_panel.budget_bar
    window.close()
    shiboken6.delete(window)  # as when the test (or the app) drops the window
    assert not shiboken6.isValid(bar)
    gate.set()
    # Delivering the budget to the deleted bar raised in the slot (pytest-qt fails the
    # test on an exception in a Qt callback); now it is dropped.
    qtbot.waitUntil(lambda: task.done, timeout=20_000)


def test_the_window_factory_builds_the_tokenizer_before_the_window_shows(
    qtbot: QtBot, store: Store, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a window made through ``create_window`` but not ``app.run`` (the tests,
    the screenshots, the benches) left the tokenizer to the first count in a worker, which
    holds the GIL for 0.1-0.4 s while it builds it: a stall of the UI thread."""
    from desktop.documents import tokens

    monkeypatch.setattr(tokens, "_encoding", None)  # as in a process that never counted
    built_on: list[bool] = []
    build = tokens._new_encoding

    def spied(ranks: dict[bytes, int]) -> Any:
        built_on.append(threading.current_thread() is threading.main_thread())
        return build(ranks)

    monkeypatch.setattr(tokens, "_new_encoding", spied)
    window = create_window(settings, store, poll_ms=150)
    try:
        assert tokens.is_built()
        assert built_on == [True]
    finally:
        window.close()
        # Deleted now, on the UI thread: left to Python's garbage collector, a window is
        # destroyed during whatever test runs then (a segfault, seen once).
        shiboken6.delete(window)
