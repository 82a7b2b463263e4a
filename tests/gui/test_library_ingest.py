"""Adding several files in the app reads them as ``longdoc ingest`` reads a folder: each
file read while a process of its own writes the one before."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop import library
from desktop.documents.ingest import extract_source
from desktop.documents.model import Document
from desktop.documents.source import Source
from desktop.ui.main_window import MainWindow


def _count(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def _files(folder: Path, count: int) -> list[Path]:
    paths = []
    for n in range(count):
        path = folder / f"note {n}.txt"
        path.write_text(f"Note {n}.\n\nThe fee for item {n} is {100 + n} EUR.\n", encoding="utf-8")
        paths.append(path)
    return paths


def test_added_files_are_read_while_the_one_before_is_written(
    window: MainWindow, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the database's write lock until the second file is being
    read: one file after the other, the first write would wait for it and fail."""
    db = window.session.store.path
    paths = _files(tmp_path, 4)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\nnot really a PDF")
    blocker = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    stored_when_read: list[int] = []
    lock = threading.Lock()

    def extract(source: Source) -> Document:
        with lock:  # the reading runs off the UI thread
            stored_when_read.append(_count(db))
            if len(stored_when_read) == 2:
                blocker.execute("ROLLBACK")
        return extract_source(source)

    monkeypatch.setattr(library, "extract_source", extract)
    lib = window.library
    try:
        with qtbot.waitSignal(lib.ingest_finished, timeout=60_000):
            window.add_paths([paths[0], paths[1], broken, paths[2], paths[3]])
    finally:
        blocker.close()
    assert stored_when_read[1] == 0  # the second file was read before the first was written
    assert {d.title for d in window.session.store.list_documents()} == {
        f"Note {n}." for n in range(4)
    }
    texts = lib.row_texts()
    assert any("broken.pdf" in t and "failed" in t for t in texts), texts
    qtbot.waitUntil(lambda: window.document is not None and window.document.title == "Note 3.")
    assert not lib.ingesting
    assert lib.progress_label.text() == ""


class _SlowChanges:
    """LibraryChanges whose listing is read when ``read`` is set and handed on later."""

    def __init__(self, listings: list[list[str]]) -> None:
        self.listings = listings
        self.release = threading.Event()

    def check(self) -> list[str]:
        self.release.wait(30)
        return self.listings.pop(0)

    list_now = check


def test_a_listing_read_before_a_document_was_added_here_is_dropped(qtbot: QtBot) -> None:
    """A check reads the store, a file read here comes in, then the check's (older)
    listing arrives: shown, it would take the new row away for a second. It is dropped,
    and the next check (forced) hands on a listing that has it."""
    from PySide6.QtCore import QObject

    from desktop.ui.library_follow import LibraryFollower

    owner = QObject()
    changes = _SlowChanges([["old"], ["old", "new"]])
    follower = LibraryFollower(changes, owner, interval_ms=60_000)  # type: ignore[arg-type]
    follower.start()
    seen: list[list[str]] = []
    follower.changed.connect(seen.append)
    follower.check()  # reads before "new" is stored
    follower.local_change()  # "new" is read here and shown
    changes.release.set()
    qtbot.waitUntil(lambda: follower._task is not None and follower._task.done)
    assert seen == []
    follower.check()
    qtbot.waitUntil(lambda: seen != [])
    assert seen == [["old", "new"]]
    follower.stop()
