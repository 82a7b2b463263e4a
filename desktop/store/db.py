"""SQLite store: documents with their pages, and every answer.

One file in the data directory, WAL mode so the GUI and CLI can use it at once, a busy
timeout so concurrent writers wait instead of failing, and schema changes as registered
migrations applied on open. Queries are plain ``sqlite3``: sqlite-utils (50 ms to import)
is loaded only for migrations and for ``Store.db``.

The database and its ``-wal``/``-shm`` files are created owner-only (0600): SQLite gives the
journal files the database file's mode.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop.answers import (
    AnswerKey,
    AnswerStatus,
    CheckedCitations,
    StoredAnswer,
    Thread,
)
from desktop.documents.model import Document, OutlineEntry, Page
from desktop.errors import DatabaseDamaged, StorageError, display_path
from desktop.processes import pid_alive
from desktop.store import fts
from desktop.store.migrations import MIGRATIONS

if TYPE_CHECKING:
    import sqlite_utils

# The answer model lives in desktop.answers (below the store); these names stay importable
# from here, where scripts found them.
__all__ = [
    "AnswerKey",
    "AnswerStatus",
    "CheckedCitations",
    "DocumentSummary",
    "EndpointModel",
    "NewTurn",
    "Store",
    "StoredAnswer",
    "Thread",
    "damage",
    "set_aside",
]

BUSY_TIMEOUT_MS = 15_000


@dataclass(frozen=True)
class DocumentSummary:
    """A library row: enough to list a document without loading its pages."""

    sha256: str
    path: str
    title: str
    kind: str
    pages: int
    tokens: int
    chars: int
    empty_pages: int
    opened_at: float
    # The extraction warnings (damaged pages, unread parts...), for the library row.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class NewTurn:
    """Where a complete answer goes as a thread's next turn (see ``Store.add_turn``)."""

    thread_id: int | None  # None: a new thread
    document_sha: str
    first_page: int
    last_page: int
    after: tuple[int, ...] = ()  # the answer ids of the turns it was asked after


@dataclass(frozen=True)
class EndpointModel:
    """The model an endpoint served, and its context length if reported."""

    url: str
    model: str
    context_length: int | None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# SQLite's words for a file that is not a database or has damaged pages.
_DAMAGED = ("malformed", "not a database", "file is encrypted")


def _translate(path: Path, exc: sqlite3.Error) -> StorageError:
    """The StorageError for a SQLite failure: damaged, full, or anything else."""
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and any(word in text for word in _DAMAGED):
        return DatabaseDamaged(path, text)
    if "full" in text:
        return StorageError(
            f"{display_path(path)}: the disk is full; free some space and try again"
        )
    return StorageError(f"{display_path(path)}: {text}")


class LazyDatabase:
    """``execute`` straight on the connection; sqlite-utils' helpers (``table``...) on demand.

    Reading a stored document must not pay 50 ms for importing sqlite-utils.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._full: sqlite_utils.Database | None = None

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        """Run one statement on the connection."""
        if parameters is None:
            return self.conn.execute(sql)
        return self.conn.execute(sql, parameters)

    def __getattr__(self, name: str) -> Any:
        if self._full is None:
            import sqlite_utils

            self._full = sqlite_utils.Database(self.conn)
        return getattr(self._full, name)


def read_only_reason(folder: Path) -> str | None:
    """Why Longdoc cannot write in ``folder`` (an existing data directory), or None.

    The one wording for the store and for doctor: what is wrong, and the fix.
    """
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    try:
        read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_fs = False
    if read_only_fs:
        what, fix = "is on a read-only file system", "remount it read-write"
    else:
        what, fix = "is not writable by you", f"run `chmod u+w {folder}` (or fix its owner)"
    return (
        f"the data directory {display_path(folder)} {what}, and Longdoc keeps its database "
        f"there: {fix}, or set LONGDOC_HOME to a folder you can write"
    )


def _create_private(path: Path) -> None:
    """Create the database file owner-only before SQLite does (it would use the umask)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class Store:
    """Thread-safe access to the Longdoc database; one connection guarded by a lock."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        if self.path.parent.is_dir():
            reason = read_only_reason(self.path.parent)
            if reason is not None:
                raise StorageError(reason[0].upper() + reason[1:] + ".")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _create_private(self.path)
            # Autocommit mode: transactions are explicit (see _transaction) so a save is
            # one transaction, never split by a library's own commit.
            self.conn = sqlite3.connect(
                str(self.path),
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
                isolation_level=None,
            )
        except OSError as exc:
            raise StorageError(
                f"{display_path(self.path)}: cannot open the database ({exc.strerror or exc})"
            ) from exc
        except sqlite3.Error as exc:
            raise StorageError(
                f"{display_path(self.path)}: cannot open the database ({exc})"
            ) from exc
        try:
            with self._write():
                self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                self._enable_wal()
                self.conn.execute("PRAGMA foreign_keys = ON")
                self.conn.execute("PRAGMA synchronous = NORMAL")
                fts.register(self.conn)  # before the search index's triggers can fire
                MIGRATIONS.apply(self.conn)
            # A process killed mid-answer leaves a 'running' row behind; it is incomplete.
            self.mark_orphaned()
        except BaseException:
            self.conn.close()
            raise

    def _enable_wal(self) -> None:
        """Switch to WAL; on a brand-new file other processes may hold it for a moment."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                # Changing the journal mode needs an exclusive lock, and SQLite reports
                # "locked" here without calling the busy handler.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @cached_property
    def db(self) -> LazyDatabase:
        """The connection as a ``sqlite_utils.Database`` (loaded only if its helpers are used)."""
        return LazyDatabase(self.conn)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self.conn.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """The connection for a read, with SQLite failures as StorageError."""
        with self._lock:
            try:
                yield self.conn
            except sqlite3.Error as exc:
                raise _translate(self.path, exc) from exc

    @contextmanager
    def _write(self) -> Iterator[None]:
        """Serialise writers in this process and turn SQLite failures into StorageError."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise _translate(self.path, exc) from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: all of it lands or none of it does."""
        with self._write():
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                # SQLite may already have rolled back itself (e.g. on SQLITE_FULL).
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: it moves when another connection (another
        Longdoc process: ``longdoc ingest``, a batch) commits, never for this one's writes.
        Cheap in WAL mode (the shared-memory index, no read of the database file)."""
        with self._read() as conn:
            return int(conn.execute("PRAGMA data_version").fetchone()[0])

    # --- documents -----------------------------------------------------------------

    def save_document(self, doc: Document) -> None:
        """Insert or replace a document and its pages in one transaction."""
        now = time.time()
        row = {
            "sha256": doc.sha256,
            "path": doc.path,
            "kind": doc.kind,
            "title": doc.title,
            "page_count": len(doc.pages),
            "tokens": doc.tokens,
            "chars": doc.chars,
            "empty_pages": len(doc.empty_pages),
            "size_bytes": doc.size_bytes,
            "extractor": doc.extractor,
            "metadata": _json(doc.metadata),
            "outline": _json([[o.level, o.title, o.page] for o in doc.outline]),
            "warnings": _json(doc.warnings),
            "created_at": now,
            "opened_at": now,
            "layout_version": doc.layout_version,
        }
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._transaction() as conn:
            conn.execute("DELETE FROM pages WHERE sha256 = ?", [doc.sha256])
            conn.execute(
                f"INSERT OR REPLACE INTO documents ({columns}) VALUES ({marks})", list(row.values())
            )
            counts: list[int | None] = list(doc.page_tokens)
            if len(counts) != len(doc.pages):
                counts = [None] * len(doc.pages)
            _insert_pages(
                conn,
                [
                    (doc.sha256, p.number, p.label, p.text, n)
                    for p, n in zip(doc.pages, counts, strict=True)
                ],
            )

    def load_document(self, sha256: str) -> Document | None:
        """The stored document with its pages, or None."""
        with self._read() as conn:
            row = _one(conn, "SELECT * FROM documents WHERE sha256 = ?", [sha256])
            if row is None:
                return None
            page_rows = conn.execute(
                "SELECT number, label, text, tokens FROM pages WHERE sha256 = ? ORDER BY number",
                [sha256],
            ).fetchall()
        pages = [Page(r[0], r[1], r[2]) for r in page_rows]
        counts = [r[3] for r in page_rows]
        complete = all(isinstance(n, int) for n in counts)
        return Document(
            sha256=row["sha256"],
            path=row["path"],
            kind=row["kind"],
            title=row["title"],
            pages=pages,
            outline=[OutlineEntry(o[0], o[1], o[2]) for o in json.loads(row["outline"])],
            metadata=json.loads(row["metadata"]),
            warnings=json.loads(row["warnings"]),
            extractor=row["extractor"],
            tokens=row["tokens"],
            size_bytes=row["size_bytes"],
            page_tokens=counts if complete else [],
            layout_version=(row.get("layout_version") or "") if complete else "",
        )

    def save_page_tokens(self, doc: Document) -> None:
        """Store per-page counts made after the document was saved (a new layout version)."""
        with self._transaction() as conn:
            _save_page_tokens(conn, doc)

    # --- endpoints -----------------------------------------------------------------

    def remember_model(self, url: str, model: str, context_length: int | None) -> None:
        """Note the model an endpoint served (so a cache hit needs no server call next time)."""
        with self._write():
            _remember_model(self.conn, EndpointModel(url, model, context_length))

    def remembered_model(self, url: str) -> str | None:
        """The model ``url`` served last time, if known."""
        with self._read() as conn:
            row = conn.execute("SELECT model FROM endpoint_models WHERE url = ?", [url]).fetchone()
        return str(row[0]) if row and row[0] else None

    def touch_document(self, sha256: str, path: str) -> None:
        """Record that a document was opened again (possibly from a new path)."""
        with self._write():
            self.conn.execute(
                "UPDATE documents SET opened_at = ?, path = ? WHERE sha256 = ?",
                [time.time(), path, sha256],
            )

    def list_documents(self) -> list[DocumentSummary]:
        """Every stored document, most recently opened first."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT sha256, path, title, kind, page_count, tokens, chars, empty_pages,"
                " opened_at, warnings FROM documents ORDER BY opened_at DESC"
            ).fetchall()
        return [_summary_of(r) for r in rows]

    def document_summary(self, sha256: str) -> DocumentSummary | None:
        """One library row by hash, or None."""
        return self._summary("sha256", sha256)

    def document_at(self, path: str) -> DocumentSummary | None:
        """The library row stored under ``path`` (as ``storable_path`` makes it), or None."""
        return self._summary("path", path)

    def _summary(self, column: str, value: str) -> DocumentSummary | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT sha256, path, title, kind, page_count, tokens, chars, empty_pages,"
                f" opened_at, warnings FROM documents WHERE {column} = ?"
                " ORDER BY opened_at DESC LIMIT 1",
                [value],
            ).fetchone()
        return _summary_of(row) if row else None

    def remove_document(self, sha256: str) -> None:
        """Forget a document, its pages and its answers (the search index follows: triggers).

        The one removal: the app's Remove and ``longdoc remove`` both call it.
        """
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM thread_turns WHERE thread_id IN"
                " (SELECT id FROM threads WHERE document_sha = ?)",
                [sha256],
            )
            conn.execute("DELETE FROM threads WHERE document_sha = ?", [sha256])
            conn.execute("DELETE FROM answers WHERE document_sha = ?", [sha256])
            conn.execute("DELETE FROM pages WHERE sha256 = ?", [sha256])
            conn.execute("DELETE FROM documents WHERE sha256 = ?", [sha256])

    # --- answers -------------------------------------------------------------------

    def find_answer(self, key: AnswerKey) -> StoredAnswer | None:
        """The newest complete answer for exactly this question and settings (never a
        truncated, stopped or failed one).

        An empty ``key.model`` matches any model: used when the server is down and the
        model name cannot be asked, so cached answers stay readable offline.
        """
        where = (
            "document_sha = ? AND question_norm = ? AND prompt_version = ? AND thinking = ?"
            " AND first_page = ? AND last_page = ? AND max_tokens = ? AND status = 'complete'"
            " AND history = ?"
            # A set's answer (its further documents in extra) never answers one document.
            " AND coalesce(json_extract(extra, '$.more_documents'), '[]') = ?"
        )
        args: list[Any] = [
            key.document_sha,
            key.normalized_question,
            key.prompt_version,
            int(key.thinking),
            key.first_page,
            key.last_page,
            key.max_tokens,
            key.history,
            json.dumps(list(key.more_documents), separators=(",", ":")),
        ]
        if key.model:
            where += " AND model = ?"
            args.append(key.model)
        with self._read() as conn:
            row = _one(
                conn, f"SELECT * FROM answers WHERE {where} ORDER BY created_at DESC LIMIT 1", args
            )
        return _answer(row) if row else None

    def start_answer(
        self,
        key: AnswerKey,
        extra: dict[str, Any] | None = None,
        *,
        created_at: float | None = None,
        seen: EndpointModel | None = None,
        counted: tuple[Document, ...] = (),
    ) -> int:
        """Record a question being asked; it stays 'running' until finished.

        In the same transaction: the model the endpoint served (``seen``) and page counts
        made for documents stored by an older layout (``counted``), which the reads that
        found them (the cache lookup, the budget) do not write themselves.
        """
        more = {"more_documents": list(key.more_documents)} if key.more_documents else {}
        row = {
            "document_sha": key.document_sha,
            "question": key.question,
            "question_norm": key.normalized_question,
            "model": key.model,
            "prompt_version": key.prompt_version,
            "thinking": int(key.thinking),
            "first_page": key.first_page,
            "last_page": key.last_page,
            "max_tokens": key.max_tokens,
            "history": key.history,
            "answer": "",
            "reasoning": "",
            "status": AnswerStatus.RUNNING.value,
            "created_at": time.time() if created_at is None else created_at,
            "extra": _json((extra or {}) | more),
        }
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._transaction() as conn:
            if seen is not None:
                _remember_model(conn, seen)
            for doc in counted:
                _save_page_tokens(conn, doc)
            cursor = conn.execute(
                f"INSERT INTO answers ({columns}) VALUES ({marks})", list(row.values())
            )
            return int(cursor.lastrowid or 0)

    def finish_answer(
        self,
        answer_id: int,
        *,
        status: str,
        answer: str,
        reasoning: str,
        finish_reason: str | None = None,
        error: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cached_tokens: int | None = None,
        ttft_s: float | None = None,
        total_s: float | None = None,
        citations: CheckedCitations | None = None,
        turn: NewTurn | None = None,
    ) -> int | None:
        """Store the outcome, its checked citations and its thread turn in one transaction.

        ``status`` is complete, truncated, incomplete (stopped) or failed; only a complete
        answer may become a ``turn``. Returns the thread's id (None: not a turn).
        """
        final = AnswerStatus(status)
        if final is AnswerStatus.RUNNING:
            raise ValueError(f"bad answer status {status!r}")
        if turn is not None and final is not AnswerStatus.COMPLETE:
            raise ValueError(f"a {final.value} answer is not a turn of a thread")
        values = {
            "status": final.value,
            "answer": answer,
            "reasoning": reasoning,
            "finish_reason": finish_reason,
            "error": error,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "cached_tokens": cached_tokens,
            "ttft_s": ttft_s,
            "total_s": total_s,
        }
        assignments = ", ".join(f"{column} = ?" for column in values)
        with self._transaction() as conn:
            conn.execute(
                f"UPDATE answers SET {assignments} WHERE id = ?", [*values.values(), answer_id]
            )
            if citations is not None:
                _merge_extra(conn, answer_id, {"citations": citations.to_stored()})
            return None if turn is None else _add_turn(conn, turn, answer_id)

    def save_progress(self, answer_id: int, answer: str, reasoning: str) -> None:
        """Keep what has streamed so far of a running answer (it stays 'running')."""
        with self._write():
            self.db.execute(
                "UPDATE answers SET answer = ?, reasoning = ? WHERE id = ? AND status = 'running'",
                [answer, reasoning, answer_id],
            )

    def update_answer_extra(self, answer_id: int, values: dict[str, Any]) -> None:
        """Merge ``values`` into an answer's ``extra`` JSON (e.g. its checked citations)."""
        with self._transaction() as conn:
            _merge_extra(conn, answer_id, values)

    def get_answer(self, answer_id: int) -> StoredAnswer | None:
        """One answer by id."""
        with self._read() as conn:
            row = _one(conn, "SELECT * FROM answers WHERE id = ?", [answer_id])
        return _answer(row) if row else None

    def answers_for(self, sha256: str) -> list[StoredAnswer]:
        """Every answer about a document, oldest first."""
        with self._read() as conn:
            cursor = conn.execute(
                "SELECT * FROM answers WHERE document_sha = ? ORDER BY id", [sha256]
            )
            rows = [_row(cursor, r) for r in cursor.fetchall()]
        return [_answer(r) for r in rows]

    def mark_orphaned(self) -> int:
        """Answers left 'running' by a process that has died become 'incomplete'."""
        with self._read() as conn:
            rows = conn.execute("SELECT id, extra FROM answers WHERE status = 'running'").fetchall()
        dead = [row[0] for row in rows if not pid_alive(json.loads(row[1] or "{}").get("pid"))]
        if dead:
            with self._write():
                self.conn.execute(
                    "UPDATE answers SET status = 'incomplete', error = 'interrupted'"
                    f" WHERE status = 'running' AND id IN ({', '.join('?' * len(dead))})",
                    dead,
                )
        return len(dead)

    # --- threads (follow-up questions) ----------------------------------------------

    def add_turn(
        self,
        thread_id: int | None,
        document_sha: str,
        first_page: int,
        last_page: int,
        answer_id: int,
        after: list[int] | None = None,
        *,
        citations: CheckedCitations | None = None,
    ) -> int:
        """Append a complete answer to a thread; returns the thread's id.

        ``after`` is the answer ids of the turns the answer was given after. When the thread
        has changed since (another process followed up, or "Ask again" on an earlier turn),
        the answer starts a new thread holding those turns and then this one, so a thread's
        turns are always exactly what each of its answers saw. A new thread is made when
        ``thread_id`` is None too. ``citations`` (checked again, e.g. by a newer matcher)
        are stored with the answer in the same transaction.
        """
        turn = NewTurn(thread_id, document_sha, first_page, last_page, tuple(after or ()))
        with self._transaction() as conn:
            if citations is not None:
                _merge_extra(conn, answer_id, {"citations": citations.to_stored()})
            return _add_turn(conn, turn, answer_id)

    def get_thread(self, thread_id: int) -> Thread | None:
        """A thread with its turns, oldest first."""
        with self._lock:
            row = self.db.execute(
                "SELECT id, document_sha, first_page, last_page, created_at, updated_at"
                " FROM threads WHERE id = ?",
                [thread_id],
            ).fetchone()
            if row is None:
                return None
            cursor = self.db.execute(
                "SELECT answers.* FROM thread_turns JOIN answers ON answers.id ="
                " thread_turns.answer_id WHERE thread_id = ? ORDER BY turn",
                [thread_id],
            )
            columns = [c[0] for c in cursor.description]
            turns = [_answer(dict(zip(columns, r, strict=True))) for r in cursor.fetchall()]
        more = turns[0].more_documents if turns else ()
        return Thread(row[0], row[1], row[2], row[3], turns, row[4], row[5], more)

    def thread_with_answer(self, answer_id: int) -> Thread | None:
        """The most recently continued thread an answer is a turn of, if any."""
        return self._first_thread(
            "SELECT threads.id FROM thread_turns JOIN threads ON threads.id ="
            " thread_turns.thread_id WHERE answer_id = ?"
            " ORDER BY threads.updated_at DESC, threads.id DESC LIMIT 1",
            answer_id,
        )

    def last_thread(self, document_sha: str) -> Thread | None:
        """The thread about a document that was added to last, if any."""
        return self._first_thread(
            "SELECT id FROM threads WHERE document_sha = ? ORDER BY updated_at DESC, id DESC"
            " LIMIT 1",
            document_sha,
        )

    def _first_thread(self, query: str, value: int | str) -> Thread | None:
        """The thread whose id ``query`` (one ``?``, bound to ``value``) selects, if any."""
        with self._lock:
            row = self.db.execute(query, [value]).fetchone()
        return self.get_thread(row[0]) if row else None


# Pages a statement inserts: 5 parameters each stays under 999, the limit of SQLite before
# 3.32.
PAGES_PER_STATEMENT = 128


def _insert_pages(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert pages a statement per ``PAGES_PER_STATEMENT``, not a statement per page.

    FTS5 writes the index entries it holds as a new segment at the start of every
    statement in the transaction (the trigger makes each insert a statement with a
    savepoint): a statement per page left a segment per page, four times the segments and
    the merging of one statement per document (measured: 232 against 211 µs a page of
    ~3,900 characters, no index 20 µs).
    """
    for start in range(0, len(rows), PAGES_PER_STATEMENT):
        chunk = rows[start : start + PAGES_PER_STATEMENT]
        conn.execute(
            "INSERT INTO pages (sha256, number, label, text, tokens) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk)),
            [value for row in chunk for value in row],
        )


def _save_page_tokens(conn: sqlite3.Connection, doc: Document) -> None:
    if len(doc.page_tokens) != len(doc.pages):
        raise ValueError("page_tokens does not match the pages")
    conn.executemany(
        "UPDATE pages SET tokens = ? WHERE sha256 = ? AND number = ?",
        [(n, doc.sha256, p.number) for p, n in zip(doc.pages, doc.page_tokens, strict=True)],
    )
    conn.execute(
        "UPDATE documents SET layout_version = ?, tokens = ? WHERE sha256 = ?",
        [doc.layout_version, doc.tokens, doc.sha256],
    )


def _remember_model(conn: sqlite3.Connection, seen: EndpointModel) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO endpoint_models (url, model, context_length, updated_at)"
        " VALUES (?, ?, ?, ?)",
        [seen.url, seen.model, seen.context_length, time.time()],
    )


def _merge_extra(conn: sqlite3.Connection, answer_id: int, values: dict[str, Any]) -> None:
    row = conn.execute("SELECT extra FROM answers WHERE id = ?", [answer_id]).fetchone()
    if row is None:
        return
    extra = json.loads(row[0] or "{}") | values
    conn.execute("UPDATE answers SET extra = ? WHERE id = ?", [_json(extra), answer_id])


def _add_turn(conn: sqlite3.Connection, turn: NewTurn, answer_id: int) -> int:
    """``Store.add_turn`` inside the caller's transaction."""
    now = time.time()
    thread_id = turn.thread_id
    earlier = list(turn.after)
    if thread_id is not None:
        current = [
            r[0]
            for r in conn.execute(
                "SELECT answer_id FROM thread_turns WHERE thread_id = ? ORDER BY turn",
                [thread_id],
            )
        ]
        if current != earlier:
            thread_id = None
    if thread_id is None:
        cursor = conn.execute(
            "INSERT INTO threads (document_sha, first_page, last_page, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?)",
            [turn.document_sha, turn.first_page, turn.last_page, now, now],
        )
        thread_id = int(cursor.lastrowid or 0)
        conn.executemany(
            "INSERT INTO thread_turns (thread_id, turn, answer_id) VALUES (?, ?, ?)",
            [(thread_id, n, answer) for n, answer in enumerate(earlier)],
        )
    else:
        conn.execute("UPDATE threads SET updated_at = ? WHERE id = ?", [now, thread_id])
    conn.execute(
        "INSERT INTO thread_turns (thread_id, turn, answer_id) VALUES (?, ?, ?)",
        [thread_id, len(earlier), answer_id],
    )
    return thread_id


def _row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> dict[str, Any]:
    return {d[0]: v for d, v in zip(cursor.description, values, strict=True)}


def _one(conn: sqlite3.Connection, sql: str, args: list[Any]) -> dict[str, Any] | None:
    """The first row of a query as a dict, or None."""
    cursor = conn.execute(sql, args)
    values = cursor.fetchone()
    return None if values is None else _row(cursor, values)


def _answer(row: dict[str, Any]) -> StoredAnswer:
    """A row as the typed answer: its checked citations and set out of ``extra``."""
    extra = json.loads(row["extra"] or "{}")
    citations = CheckedCitations.from_stored(extra.pop("citations", None))
    more = tuple(str(sha) for sha in extra.pop("more_documents", None) or ())
    return StoredAnswer(
        **{name: row[name] for name in _ANSWER_COLUMNS},
        thinking=bool(row["thinking"]),
        status=AnswerStatus(row["status"]),
        extra=extra,
        citations=citations,
        more_documents=more,
        history=row.get("history") or "",
    )


# The answer's fields that are its row's columns as stored; the others are converted above.
_ANSWER_COLUMNS = tuple(
    f.name
    for f in fields(StoredAnswer)
    if f.name not in {"thinking", "status", "extra", "citations", "more_documents", "history"}
)


# --- a damaged database ----------------------------------------------------------------


def sqlite_uri(path: Path, mode: str = "ro") -> str:
    """The ``file:`` URI of ``path``, percent-encoded: a ``%41``, ``#`` or ``?`` in a folder
    name would otherwise be read as an escape, a fragment or the query."""
    return f"{Path(path).absolute().as_uri()}?mode={mode}"


def damage(path: Path) -> str | None:
    """What SQLite finds wrong with the database at ``path``, or None when it is sound."""
    # In a folder we cannot write, SQLite cannot make the -shm file a WAL database needs
    # even to read: opened immutable, the check reads the file as it is.
    mode = "ro" if os.access(path.parent, os.W_OK) else "ro&immutable=1"
    try:
        conn = sqlite3.connect(sqlite_uri(path, mode), uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    problems = [str(r[0]) for r in rows if r[0] != "ok"]
    return "; ".join(problems[:3]) or None


def other_user(path: Path) -> tuple[int, str] | None:
    """(pid, command line) of another process that has the database (or its WAL) open.

    Read from /proc: only processes this user may inspect, which are the ones that can
    write a private data directory anyway. None when none does (or on a system without
    /proc).
    """
    targets = {str(Path(f"{path}{suffix}").resolve()) for suffix in ("", "-wal", "-shm")}
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in targets:
                    return pid, _command_line(pid)
            except OSError:
                continue
    return None


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            words = fh.read().split(b"\0")
    except OSError:
        return "?"
    return " ".join(w.decode("utf-8", "backslashreplace") for w in words if w)[:120] or "?"


def set_aside(path: Path) -> Path:
    """Rename the database and its ``-wal``/``-shm`` files to ``<name>.damaged-<time>``.

    Nothing is deleted: the moved files can still be opened together (SQLite finds the
    journal by name) for recovery, e.g. with ``sqlite3 FILE .recover``.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    for suffix in ("-wal", "-shm", ""):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(Path(f"{target}{suffix}"))
    return target


def _summary_of(row: Sequence[Any]) -> DocumentSummary:
    """A library row from ``SELECT ..., opened_at, warnings`` (warnings stored as JSON)."""
    try:
        warnings = json.loads(row[9] or "[]")
    except ValueError:
        warnings = []
    notes = tuple(str(w) for w in warnings) if isinstance(warnings, list) else ()
    sha256, path, title, kind, pages, tokens, chars, empty_pages, opened_at = row[:9]
    return DocumentSummary(
        sha256, path, title, kind, pages, tokens, chars, empty_pages, opened_at, notes
    )
