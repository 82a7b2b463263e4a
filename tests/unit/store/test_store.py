"""The SQLite store: documents round-trip, answer cache rules, migrations, concurrency."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from desktop.store.db import AnswerKey, Store
from desktop.store.migrations import MIGRATIONS
from tests.conftest import make_document


def key(sha: str, question: str = "What is it?", model: str = "m") -> AnswerKey:
    return AnswerKey(sha, question, model, "1", True, 1, 3, 16_384)


def test_document_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    doc = make_document([("i", "Roman one"), ("ii", ""), ("1", "Arabic one")])
    store.save_document(doc)
    loaded = store.load_document(doc.sha256)
    assert loaded is not None
    assert loaded.pages == doc.pages
    assert loaded.tokens == doc.tokens
    assert loaded.empty_pages == [2]
    [summary] = store.list_documents()
    assert (summary.pages, summary.empty_pages, summary.title) == (3, 1, "Test document")
    store.remove_document(doc.sha256)
    assert store.load_document(doc.sha256) is None


def test_wal_mode_and_migrations_recorded(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    applied = [m.name for m in MIGRATIONS.applied(store.db)]
    assert applied[0] == "m001_documents_and_answers"
    assert applied == [m.name for m in MIGRATIONS._migrations]  # every one, in order
    assert {"m002_threads_of_turns", "m003_page_token_counts", "m004_endpoint_models"} <= set(
        applied
    )
    store.close()
    # Opening again applies nothing twice.
    again = Store(tmp_path / "db.sqlite")
    assert MIGRATIONS.pending(again.db) == []


def test_only_complete_answers_are_cache_hits(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    k = key("abc")
    stopped = store.start_answer(k)
    store.finish_answer(stopped, status="incomplete", answer="half", reasoning="")
    assert store.find_answer(k) is None
    done = store.start_answer(k)
    store.finish_answer(
        done,
        status="complete",
        answer="full",
        reasoning="r",
        finish_reason="stop",
        prompt_tokens=10,
        cached_tokens=4,
    )
    hit = store.find_answer(key("abc", "  what IS   it? "))
    assert hit is not None
    assert (hit.answer, hit.cached_tokens) == ("full", 4)
    assert store.find_answer(key("abc", model="other")) is None
    assert store.find_answer(key("abc", model="")) is not None  # any model, offline
    assert [a.status for a in store.answers_for("abc")] == ["incomplete", "complete"]


def test_answers_of_dead_processes_become_incomplete(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    mine = store.start_answer(key("abc"), {"pid": os.getpid()})
    # Above Linux's largest pid_max (2**22), so no process can have it.
    orphan = store.start_answer(key("abc", "other"), {"pid": 2**22 + 12345})
    assert store.mark_orphaned() == 1
    assert store.get_answer(mine).status == "running"  # type: ignore[union-attr]
    assert store.get_answer(orphan).status == "incomplete"  # type: ignore[union-attr]
    store.close()
    # Opening the store cleans up too.
    leftover = Store(tmp_path / "db.sqlite")
    assert leftover.get_answer(orphan).error == "interrupted"  # type: ignore[union-attr]


def _writer(path: str, worker: int, count: int) -> None:
    store = Store(Path(path))
    for i in range(count):
        answer_id = store.start_answer(key(f"doc{worker}", f"question {i}"))
        store.finish_answer(answer_id, status="complete", answer=f"{worker}/{i}", reasoning="")
    store.close()


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    Store(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), w, 150)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = Store(path)
    assert len(store.answers_for("doc0")) == 150
    assert len(store.answers_for("doc1")) == 150
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_full_disk_is_a_storage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop.errors import StorageError

    store = Store(tmp_path / "db.sqlite")
    # SQLITE_FULL from a real tiny volume is not available here; cap the file size instead.
    used = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {used + 4}")
    doc = make_document([(str(i), "x" * 4000) for i in range(1, 40)])
    with pytest.raises(StorageError, match="disk is full"):
        store.save_document(doc)
    assert store.load_document(doc.sha256) is None  # the transaction rolled back


def test_unwritable_location_is_a_storage_error(tmp_path: Path) -> None:
    from desktop.errors import StorageError

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StorageError, match="cannot open the database"):
        Store(blocker / "db.sqlite")
    assert sqlite3.sqlite_version
