"""Registered schema migrations; applied in order when the store opens.

Append new migrations at the end with ``@MIGRATIONS()``; each runs once per database,
inside the same write transaction as the record of it, and receives a
``sqlite_utils.Database``. The record lives in sqlite-utils' ``_sqlite_migrations`` table,
so databases made before this module applied migrations itself keep their history.

Applying is safe with many processes opening a new data directory at once: the pending
list is read without a lock (the usual case: nothing to do, and sqlite-utils is not even
imported), and migrations run under ``BEGIN IMMEDIATE``, which takes the write lock
(waiting up to the busy timeout) before the pending list is read again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite_utils import Database

MigrationFunction = Callable[["Database"], None]


@dataclass(frozen=True)
class Migration:
    """One registered schema change."""

    name: str
    fn: MigrationFunction
    transactional: bool = True


@dataclass(frozen=True)
class AppliedMigration:
    """A row of the record: which migration ran, and when (UTC, as text)."""

    name: str
    applied_at: str


def _connection(db: Any) -> sqlite3.Connection:
    """The sqlite3 connection of a connection or of a ``sqlite_utils.Database``."""
    return db if isinstance(db, sqlite3.Connection) else db.conn


class Migrations:
    """An ordered set of migrations, compatible with ``sqlite_utils.migrations.Migrations``."""

    table = "_sqlite_migrations"

    def __init__(self, name: str) -> None:
        self.name = name
        self._migrations: list[Migration] = []

    def __call__(
        self, *, name: str | None = None, transactional: bool = True
    ) -> Callable[[MigrationFunction], MigrationFunction]:
        """Register the decorated function; ``transactional=False`` for e.g. ``VACUUM``."""

        def register(fn: MigrationFunction) -> MigrationFunction:
            migration_name = name or fn.__name__
            if any(m.name == migration_name for m in self._migrations):
                raise ValueError(f"migration {migration_name!r} is registered twice")
            self._migrations.append(Migration(migration_name, fn, transactional))
            return fn

        return register

    def applied(self, db: Any) -> list[AppliedMigration]:
        """The migrations of this set recorded in the database, in the order they ran."""
        conn = _connection(db)
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [self.table]
        ).fetchone()
        if not exists:
            return []
        rows = conn.execute(
            f"SELECT name, applied_at FROM {self.table} WHERE migration_set = ? ORDER BY rowid",
            [self.name],
        ).fetchall()
        return [AppliedMigration(r[0], r[1]) for r in rows]

    def pending(self, db: Any) -> list[Migration]:
        """Registered migrations not yet recorded (read-only)."""
        done = {m.name for m in self.applied(db)}
        return [m for m in self._migrations if m.name not in done]

    def apply(self, db: Any) -> list[str]:
        """Apply what is pending, each once even with many processes; the names applied.

        ``db`` is a connection in autocommit mode (``isolation_level=None``) or a
        ``sqlite_utils.Database`` around one.
        """
        conn = _connection(db)
        if not self.pending(conn):
            return []
        from sqlite_utils import Database

        wrapped = db if not isinstance(db, sqlite3.Connection) else Database(conn)
        ran: list[str] = []
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._ensure_table(conn)
                todo = self.pending(conn)
                if not todo:
                    conn.execute("COMMIT")
                    return ran
                migration = todo[0]
                if migration.transactional:
                    migration.fn(wrapped)
                    self._record(conn, migration.name)
                    conn.execute("COMMIT")
                else:
                    # e.g. VACUUM refuses to run inside a transaction: run it on its own,
                    # then record it (another process may run it too: such are idempotent).
                    conn.execute("COMMIT")
                    migration.fn(wrapped)
                    conn.execute("BEGIN IMMEDIATE")
                    self._record(conn, migration.name)
                    conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            ran.append(migration.name)

    def _ensure_table(self, conn: sqlite3.Connection) -> None:
        """The record table, with sqlite-utils' schema."""
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS [{self.table}] ("
            "[id] INTEGER PRIMARY KEY, [migration_set] TEXT, [name] TEXT, [applied_at] TEXT)"
        )
        conn.execute(
            f"CREATE UNIQUE INDEX IF NOT EXISTS [idx_{self.table}_migration_set_name] "
            f"ON [{self.table}] ([migration_set], [name])"
        )

    def _record(self, conn: sqlite3.Connection, name: str) -> None:
        import datetime

        conn.execute(
            f"INSERT OR IGNORE INTO {self.table} (migration_set, name, applied_at)"
            " VALUES (?, ?, ?)",
            [self.name, name, str(datetime.datetime.now(datetime.UTC))],
        )

    def __repr__(self) -> str:
        return f"<Migrations {self.name!r}: {[m.name for m in self._migrations]}>"


MIGRATIONS = Migrations("longdoc")


@MIGRATIONS()
def m001_documents_and_answers(db: Database) -> None:
    """Initial schema: documents, their pages, answers."""
    db.table("documents").create(
        {
            "sha256": str,
            "path": str,
            "kind": str,
            "title": str,
            "page_count": int,
            "tokens": int,
            "chars": int,
            "empty_pages": int,
            "size_bytes": int,
            "extractor": str,
            "metadata": str,
            "outline": str,
            "warnings": str,
            "created_at": float,
            "opened_at": float,
        },
        pk="sha256",
    )
    db.table("pages").create(
        {"sha256": str, "number": int, "label": str, "text": str},
        pk=("sha256", "number"),
        foreign_keys=[("sha256", "documents", "sha256")],
    )
    db.table("answers").create(
        {
            "id": int,
            "document_sha": str,
            "question": str,
            "question_norm": str,
            "model": str,
            "prompt_version": str,
            "thinking": int,
            "first_page": int,
            "last_page": int,
            "max_tokens": int,
            "answer": str,
            "reasoning": str,
            "finish_reason": str,
            "status": str,
            "error": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cached_tokens": int,
            "ttft_s": float,
            "total_s": float,
            "created_at": float,
            "extra": str,
        },
        pk="id",
    )
    db.table("answers").create_index(
        ["document_sha", "question_norm", "model", "status"], index_name="answers_lookup"
    )


@MIGRATIONS()
def m002_threads_of_turns(db: Database) -> None:
    """Conversation threads: ordered answers per document; answers keyed on their history."""
    db.table("threads").create(
        {
            "id": int,
            "document_sha": str,
            "first_page": int,
            "last_page": int,
            "created_at": float,
            "updated_at": float,
        },
        pk="id",
    )
    db.table("threads").create_index(["document_sha", "updated_at"], index_name="threads_recent")
    # One answer can stand in several threads: a cache hit joins the thread it is asked in.
    db.table("thread_turns").create(
        {"thread_id": int, "turn": int, "answer_id": int},
        pk=("thread_id", "turn"),
        foreign_keys=[("thread_id", "threads", "id"), ("answer_id", "answers", "id")],
    )
    db.table("thread_turns").create_index(["answer_id"], index_name="thread_turns_answer")
    # The digest of the earlier turns an answer was given after ("" = a first question),
    # so the same question in another conversation is never served from the cache.
    db.table("answers").add_column("history", str, not_null_default="")


@MIGRATIONS()
def m003_page_token_counts(db: Database) -> None:
    """Per-page prompt token counts and the layout they were counted for (issue 9)."""
    db.table("pages").add_column("tokens", int)
    db.table("documents").add_column("layout_version", str)


@MIGRATIONS()
def m004_endpoint_models(db: Database) -> None:
    """The model each endpoint served last: a cache hit then needs no server call."""
    db.table("endpoint_models").create(
        {"url": str, "model": str, "context_length": int, "updated_at": float}, pk="url"
    )


@MIGRATIONS()
def m005_search_index(db: Database) -> None:
    """Full-text search (issue 18): FTS5 indexes over pages and complete answers.

    External-content tables (the text is stored once, in ``pages``/``answers``) kept in
    step by triggers, so a page or answer is searchable in the transaction that writes it.
    Existing rows are not indexed here, under the schema lock: ``search_backfill`` records
    the rowid range still to do, which ``desktop.store.fts.backfill`` works through in small
    transactions. A trigger deletes from an index only rows the index holds (its
    ``_docsize`` table says which), so a row removed before the backfill reached it is safe.
    ``*_cjk`` are trigram indexes over the rows holding CJK text only (unicode61 keeps a
    run of ideographs as one token, so a word inside it could not be found); which rows
    those are, ``longdoc_cjk()`` says: a function every Store connection registers
    (``desktop.store.fts.register``), as a GLOB over the code-point ranges costs ~0.7 ms
    per 4,000-character page against ~0.03 ms.
    """
    words = "tokenize = 'unicode61 remove_diacritics 2'"
    trigram = "tokenize = 'trigram case_sensitive 0'"
    statements = [
        "CREATE VIRTUAL TABLE pages_fts USING fts5(text, content = 'pages',"
        f" content_rowid = 'rowid', {words})",
        "CREATE VIRTUAL TABLE pages_cjk USING fts5(text, content = 'pages',"
        f" content_rowid = 'rowid', {trigram})",
        "CREATE VIRTUAL TABLE answers_fts USING fts5(question, answer, content = 'answers',"
        f" content_rowid = 'id', {words})",
        "CREATE VIRTUAL TABLE answers_cjk USING fts5(question, answer, content = 'answers',"
        f" content_rowid = 'id', {trigram})",
    ]
    # Every document is its own transaction, so each leaves a small segment behind: merge
    # them 8 at a time, not FTS5's default 4 (measured on 4,000 pages written 4 a
    # transaction: 1.4-1.5 s against 1.7-2.0 s, queries as fast; 16 was slower again).
    for index in ("pages_fts", "answers_fts"):
        for key, value in (("automerge", 8), ("crisismerge", 32)):
            statements.append(f"INSERT INTO {index} ({index}, rank) VALUES ('{key}', {value})")
    page_in = (
        "INSERT INTO pages_fts (rowid, text) VALUES (new.rowid, new.text);"
        " INSERT INTO pages_cjk (rowid, text) SELECT new.rowid, new.text"
        " WHERE longdoc_cjk(new.text);"
    )
    page_out = (
        "INSERT INTO pages_fts (pages_fts, rowid, text) SELECT 'delete', old.rowid, old.text"
        " WHERE EXISTS (SELECT 1 FROM pages_fts_docsize WHERE id = old.rowid);"
        " INSERT INTO pages_cjk (pages_cjk, rowid, text) SELECT 'delete', old.rowid, old.text"
        " WHERE EXISTS (SELECT 1 FROM pages_cjk_docsize WHERE id = old.rowid);"
    )
    answer_in = (
        "INSERT INTO answers_fts (rowid, question, answer) SELECT new.id, new.question,"
        " new.answer WHERE new.status = 'complete';"
        " INSERT INTO answers_cjk (rowid, question, answer) SELECT new.id, new.question,"
        " new.answer WHERE new.status = 'complete'"
        " AND longdoc_cjk(new.question || ' ' || new.answer);"
    )
    answer_out = (
        "INSERT INTO answers_fts (answers_fts, rowid, question, answer) SELECT 'delete',"
        " old.id, old.question, old.answer"
        " WHERE EXISTS (SELECT 1 FROM answers_fts_docsize WHERE id = old.id);"
        " INSERT INTO answers_cjk (answers_cjk, rowid, question, answer) SELECT 'delete',"
        " old.id, old.question, old.answer"
        " WHERE EXISTS (SELECT 1 FROM answers_cjk_docsize WHERE id = old.id);"
    )
    statements += [
        f"CREATE TRIGGER pages_search_insert AFTER INSERT ON pages BEGIN {page_in} END",
        f"CREATE TRIGGER pages_search_delete AFTER DELETE ON pages BEGIN {page_out} END",
        # Only the text: saving token counts (UPDATE ... SET tokens) must not re-index.
        "CREATE TRIGGER pages_search_update AFTER UPDATE OF text ON pages"
        f" BEGIN {page_out} {page_in} END",
        f"CREATE TRIGGER answers_search_insert AFTER INSERT ON answers BEGIN {answer_in} END",
        f"CREATE TRIGGER answers_search_delete AFTER DELETE ON answers BEGIN {answer_out} END",
        # Streaming progress and the final status; not the citations merged into `extra`.
        "CREATE TRIGGER answers_search_update AFTER UPDATE OF question, answer, status"
        f" ON answers BEGIN {answer_out} {answer_in} END",
        "CREATE TABLE search_backfill (name TEXT PRIMARY KEY, next_rowid INTEGER,"
        " last_rowid INTEGER)",
        "INSERT INTO search_backfill SELECT 'pages', min(rowid), max(rowid) FROM pages"
        " HAVING count(*) > 0",
        "INSERT INTO search_backfill SELECT 'answers', min(id), max(id) FROM answers"
        " WHERE status = 'complete' HAVING count(*) > 0",
    ]
    for statement in statements:
        db.execute(statement)


@MIGRATIONS()
def m006_search_merge_policy(db: Database) -> None:
    """The page indexes merge their segments 64 at a time once that many pile up
    (crisismerge), not 8 at a time on every write (automerge): each page's index entries
    are rewritten about twice over a 2,000-document library instead of four times.

    Measured on 1,600 generated pages of ~4,400 characters, a document a transaction (CPU
    time, best of 3; the page trigger kept): automerge 8: 446 ms; automerge 16: 429 ms;
    merging 64 at a time: 365 ms; no index: 28 ms. One INSERT ... SELECT a document
    instead of the trigger saved another ~10% (326 ms), but then a page written by any
    other statement would not be searchable: the trigger stays. Searches stay in
    milliseconds with up to 64 segments a level (bench/bench_search.py).
    """
    for index in ("pages_fts", "pages_cjk"):
        for key, value in (("automerge", 0), ("crisismerge", 64)):
            db.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('{key}', {value})")
