"""The library's search field: page and answer hits, opening them, off the UI thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop import search
from desktop.library import open_document
from desktop.search import Hit
from desktop.store.db import AnswerKey, Store
from desktop.ui import tasks
from desktop.ui.main_window import MainWindow
from desktop.ui.search_results import SearchResults
from tests.gui.conftest import GEOTOPO, current_result_page

# GeoTopo: "Hausdorff-Raum" is on physical page 12 only (printed label 9).
PHRASE = "Hausdorff-Raum"


def store_answer(store: Store, sha: str, pages: int) -> tuple[int, int]:
    """A complete answer about ``sha`` in a thread of its own: (answer id, thread id)."""
    key = AnswerKey(sha, "Which spaces are separated?", "m", "v1", False, 1, pages, 100)
    answer_id = store.start_answer(key)
    text = "Every metric space is a Hausdorff space."
    store.finish_answer(answer_id, status="complete", answer=text, reasoning="")
    return answer_id, store.add_turn(None, sha, 1, pages, answer_id)


def click(qtbot: QtBot, results: SearchResults, hit: Hit) -> None:
    item = results.item_for(hit)
    assert item is not None
    rect = results.tree.visualItemRect(item)
    with qtbot.waitSignal(results.hit_activated, timeout=3_000):
        qtbot.mouseClick(results.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_typing_lists_page_and_answer_hits_and_clicking_opens_them(
    qtbot: QtBot, window: MainWindow, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, _ = open_document(GEOTOPO, store)
    answer_id, thread_id = store_answer(store, doc.sha256, len(doc.pages))
    threads: list[threading.Thread] = []
    real = search.search

    def recorded(*args: Any, **kwargs: Any) -> search.SearchResult:
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "search", recorded)
    window.library.refresh()
    qtbot.waitUntil(lambda: window.library.model.total == 1, timeout=10_000)
    results = window.library.search_results
    qtbot.keyClicks(window.library.filter_edit, f'"{PHRASE}" OR metric')
    qtbot.waitUntil(lambda: results.result is not None and bool(results.hits()), timeout=10_000)
    assert threads and all(t is not threading.main_thread() for t in threads)
    hits = results.hits()
    pages = [h for h in hits if h.kind == "page"]
    answers = [h for h in hits if h.kind == "answer"]
    assert {h.document.sha256 for h in hits} == {doc.sha256}
    assert [(a.answer_id, a.thread_id) for a in answers] == [(answer_id, thread_id)]
    page = next(h for h in pages if h.page == 12)
    assert page.label == "9" and "⟦Hausdorff-Raum⟧" in page.snippet
    assert results.tree.topLevelItem(0).text(0) == doc.title  # hits under their document
    # The title filter keeps working beside it.
    assert window.library.row_texts() == []  # no title says that

    click(qtbot, results, page)
    qtbot.waitUntil(lambda: window.document is not None, timeout=10_000)
    qtbot.waitUntil(lambda: current_result_page(window) == 12, timeout=15_000)
    assert window.doc_view.find_edit.text() == PHRASE  # the match is what is highlighted
    assert window.doc_view.page_edit.text() == "9"

    click(qtbot, results, answers[0])
    panel = window.ask_panel
    qtbot.waitUntil(
        lambda: panel.current_thread is not None and panel.current_thread.id == thread_id,
        timeout=10_000,
    )
    assert panel.answer_view.answer is not None and panel.answer_view.answer.id == answer_id


def test_stale_results_are_dropped(
    qtbot: QtBot, window: MainWindow, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_document(GEOTOPO, store)
    release = threading.Event()
    started = threading.Event()
    real = search.search

    def slow_for_first(store: Store, query: str, **kwargs: Any) -> search.SearchResult:
        if query == "Topologie":
            started.set()
            release.wait(10)
        return real(store, query, **kwargs)

    monkeypatch.setattr(search, "search", slow_for_first)
    results = window.library.search_results
    window.library.filter_edit.setText("Topologie")
    results.run_now()
    qtbot.waitUntil(started.is_set, timeout=5_000)
    window.library.filter_edit.setText(PHRASE)
    results.run_now()
    qtbot.waitUntil(lambda: results.result is not None, timeout=10_000)
    assert results.result is not None and results.result.query == PHRASE
    release.set()
    qtbot.waitUntil(lambda: not [t for t in tasks.running_tasks() if t.name == "search"])
    assert results.result.query == PHRASE  # the slow first query did not replace it
    assert {h.page for h in results.hits()} == {12}


def test_a_query_without_words_shows_a_hint_and_clearing_hides_the_hits(
    qtbot: QtBot, window: MainWindow, store: Store
) -> None:
    open_document(GEOTOPO, store)
    results = window.library.search_results
    window.library.filter_edit.setText('"')
    results.run_now()
    qtbot.waitUntil(lambda: results.hint.isVisible() and "no words" in results.hint.text())
    window.library.filter_edit.setText("Hausdorff")
    results.run_now()
    qtbot.waitUntil(lambda: bool(results.hits()), timeout=10_000)
    window.library.filter_edit.clear()
    assert not results.isVisible() and results.hits() == []


def test_removing_a_document_takes_its_hits_off_the_list(
    qtbot: QtBot, window: MainWindow, store: Store
) -> None:
    doc, _ = open_document(GEOTOPO, store)
    window.library.refresh()
    qtbot.waitUntil(lambda: window.library.model.total == 1, timeout=10_000)
    results = window.library.search_results
    window.library.filter_edit.setText("Topologie")  # in the title and on its pages
    results.run_now()
    qtbot.waitUntil(lambda: bool(results.hits()), timeout=10_000)
    window.library.select(doc.sha256)
    window.library.remove_selected()
    qtbot.waitUntil(lambda: window.library.model.total == 0, timeout=10_000)
    qtbot.waitUntil(lambda: results.hits() == [] and "No page" in results.hint.text())
