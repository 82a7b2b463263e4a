"""desktop.library.open_documents: a folder's files opened in order, each one's text
extracted while the one before it is written by a process of its own."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop import library
from desktop.documents.ingest import extract_source, sha256_file
from desktop.documents.model import Document
from desktop.documents.source import Source
from desktop.errors import DocumentError, DocumentUnreadable, StorageError
from desktop.library import Opened, open_document, open_documents
from desktop.search import search
from desktop.store.db import Store
from desktop.store.writer import DocumentWriter, WriterGone


def _files(folder: Path, count: int) -> list[Path]:
    paths = []
    for n in range(count):
        path = folder / f"doc{n}.txt"
        path.write_text(f"Document {n}.\n\nClause {n}: the fee is {100 + n} EUR.\n")
        paths.append(path)
    return paths


def _outcome(result: Opened | DocumentError) -> tuple[str, str, bool | str]:
    if isinstance(result, DocumentError):
        return ("error", str(result.path), type(result).__name__)
    return ("doc", str(result.path), result.reused)


def test_same_results_in_the_same_order_as_one_file_at_a_time(tmp_path: Path) -> None:
    paths = _files(tmp_path, 4)
    copy = tmp_path / "copy-of-doc1.txt"
    copy.write_bytes(paths[1].read_bytes())
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    missing = tmp_path / "missing.txt"
    folder_error = DocumentUnreadable(tmp_path / "nothing", "this folder holds no documents")
    items: list[Path | DocumentError] = [
        paths[0],
        paths[1],
        copy,  # the same bytes right after: reused, not written twice
        empty,
        paths[2],
        folder_error,
        missing,
        paths[3],
        paths[0],  # again: stored by this run
    ]
    one_by_one = Store(tmp_path / "a.db")
    pipelined = Store(tmp_path / "b.db")
    try:
        expected: list[tuple[str, str, bool | str]] = []
        for item in items:
            if isinstance(item, DocumentError):
                expected.append(("error", str(item.path), type(item).__name__))
                continue
            try:
                _doc, reused = open_document(item, one_by_one)
            except DocumentError as exc:
                expected.append(("error", str(exc.path), type(exc).__name__))
            else:
                expected.append(("doc", str(item), reused))
        got = [_outcome(r) for r in open_documents(items, pipelined)]
        assert got == expected
        assert [o for o in got if o[0] == "doc" and o[2]] == [
            ("doc", str(copy), True),
            ("doc", str(paths[0]), True),
        ]
        listed = sorted((d.sha256, d.title, d.tokens) for d in pipelined.list_documents())
        assert listed == sorted((d.sha256, d.title, d.tokens) for d in one_by_one.list_documents())
        assert len(listed) == 4
        # Written through the same statements: searchable at once.
        hits = search(pipelined, '"the fee is 102 EUR"').hits
        assert [(h.document.path, h.page) for h in hits] == [(str(paths[2].absolute()), 1)]
    finally:
        one_by_one.close()
        pipelined.close()


def test_the_next_file_is_extracted_while_the_previous_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database's write lock is held elsewhere until the second file's extraction
    starts: written one after the other, the first write would wait for it and fail."""
    paths = _files(tmp_path, 3)
    store = Store(tmp_path / "longdoc.db")
    blocker = sqlite3.connect(tmp_path / "longdoc.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process busy writing
    seen: list[tuple[Path, int]] = []

    def extract(source: Source) -> Document:
        seen.append((source.path, _stored_count(tmp_path)))
        if len(seen) == 2 and blocker.in_transaction:
            blocker.execute("ROLLBACK")
        return extract_source(source)

    monkeypatch.setattr(library, "extract_source", extract)  # what open_documents calls
    try:
        results = list(open_documents(paths, store))
        assert [r.path for r in results if isinstance(r, Opened)] == paths
        # The second file was being read while the first waited to be written.
        assert seen[1] == (paths[1], 0)
        assert _stored_count(tmp_path) == 3
    finally:
        blocker.close()
        store.close()


def _stored_count(folder: Path) -> int:
    with contextlib.closing(sqlite3.connect(folder / "longdoc.db")) as conn:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def _writers() -> list[int]:
    """This process's writing children still alive (zombies are reaped by then)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
            if int(fields[1]) == os.getpid() and b"desktop.store.writer" in cmdline:
                found.append(int(stat.parent.name))
    return found


def test_the_writer_dying_midway_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _files(tmp_path, 6)
    killed: list[int] = []

    class Dying(DocumentWriter):
        def confirm(self) -> None:
            super().confirm()
            if not killed:  # after the first document: as if the OOM killer took it
                killed.append(self.pid)
                os.kill(self.pid, signal.SIGKILL)  # our own child

    monkeypatch.setattr(library, "DocumentWriter", Dying)
    store = Store(tmp_path / "longdoc.db")
    try:
        results = list(open_documents(paths, store))
        assert killed
        assert [r.path for r in results if isinstance(r, Opened)] == paths
        assert _stored_count(tmp_path) == 6
        assert not _writers()
    finally:
        store.close()


def test_a_storage_error_ends_the_run_after_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also the writer that cannot start: the documents are written here instead."""
    paths = _files(tmp_path, 3)

    def no_writer(path: Path) -> DocumentWriter:
        raise WriterGone("cannot start the writing process (no more processes)")

    monkeypatch.setattr(library, "DocumentWriter", no_writer)
    store = Store(tmp_path / "longdoc.db")
    real_save = store.save_document
    saved: list[str] = []

    def save(doc: Document) -> None:
        if len(saved) == 1:
            raise StorageError(f"{tmp_path}: the disk is full; free some space")
        real_save(doc)
        saved.append(doc.sha256)

    monkeypatch.setattr(store, "save_document", save)
    got: list[Opened | DocumentError] = []
    try:
        results = open_documents(paths, store)
        got.append(next(results))
        with pytest.raises(StorageError, match="disk is full"):
            got.append(next(results))
        assert [r.path for r in got if isinstance(r, Opened)] == paths[:1]
        assert [d.sha256 for d in store.list_documents()] == saved
    finally:
        store.close()


def test_stopping_early_leaves_no_writer_behind(tmp_path: Path) -> None:
    paths = _files(tmp_path, 8)
    store = Store(tmp_path / "longdoc.db")
    try:
        results = open_documents(paths, store)
        first = next(results)
        assert isinstance(first, Opened) and first.path == paths[0]
        results.close()  # the caller stops (Ctrl+C, a cancelled batch)
        assert not _writers()
        # What was reported is stored, and what is stored has no gap: the files before
        # any one written were written too (the writer stops between documents).
        stored = {d.sha256 for d in store.list_documents()}
        assert first.doc.sha256 in stored
        order = [sha256_file(path) for path in paths]
        assert set(order[: len(stored)]) == stored
    finally:
        store.close()


def test_a_script_without_a_main_guard_is_not_run_again(tmp_path: Path) -> None:
    """The writing process starts no copy of the caller's main module (multiprocessing's
    spawn would: this script would run twice, the second time failing)."""
    paths = _files(tmp_path, 4)
    script = tmp_path / "ingest_script.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from desktop import library\n"
        "from desktop.library import open_documents\n"
        "def fell_back(self):\n"  # the writer must do the writing here
        "    raise SystemExit('the writing process failed')\n"
        "library._Saver._write_here = fell_back\n"
        "from desktop.store.db import Store\n"
        "print('started', flush=True)\n"
        f"store = Store(Path({str(tmp_path / 'longdoc.db')!r}))\n"
        f"for result in open_documents([Path(p) for p in {[str(p) for p in paths]!r}], store):\n"
        "    print(result.path.name, flush=True)\n"
        "store.close()\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["started", *[p.name for p in paths]]
    assert done.stderr == ""
    assert _stored_count(tmp_path) == 4


def test_what_the_writer_wrote_before_a_failure_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer commits two documents and fails on the third, with both confirmations
    still unread; writing the third here fails too (the disk is full): the two are
    reported, then the error, and nothing reported is missing or extra."""
    paths = _files(tmp_path, 5)
    db = tmp_path / "longdoc.db"

    class Failing:
        """A writer that commits on its own connection, as the child does."""

        def __init__(self, path: Path) -> None:
            self.own = Store(path)
            self.sent: list[Document] = []
            self.answers: list[bool] = []

        def send(self, doc: Document) -> None:
            self.sent.append(doc)
            if len(self.sent) <= 2:
                self.own.save_document(doc)
                self.answers.append(True)
            else:
                self.answers.append(False)

        def ready(self) -> bool:
            return len(self.sent) >= 3  # nothing to read until the third is sent

        def confirm(self) -> None:
            if not self.answers.pop(0):
                raise WriterGone("the writing process could not write a document")

        def close(self) -> None:
            self.own.close()

    monkeypatch.setattr(library, "DocumentWriter", Failing)
    monkeypatch.setattr(library, "WRITER_AHEAD", 3)
    store = Store(db)

    def full(doc: Document) -> None:
        raise StorageError(f"{db}: the disk is full; free some space")

    monkeypatch.setattr(store, "save_document", full)
    got: list[Opened | DocumentError] = []
    try:
        with pytest.raises(StorageError, match="disk is full"):
            _collect(open_documents(paths, store), got)
        assert [r.path for r in got if isinstance(r, Opened)] == paths[:2]
        assert _stored_count(tmp_path) == 2
    finally:
        store.close()


def _collect(results: Iterator[Opened | DocumentError], into: list[Opened | DocumentError]) -> None:
    """Each result appended to ``into`` as it comes (kept when the iteration raises)."""
    into.extend(results)
