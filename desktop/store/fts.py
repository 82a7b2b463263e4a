"""The search index's backfill: rows stored before the index existed, indexed in batches.

Migration m005 creates the FTS5 tables and the triggers that keep them in step with every
write from then on, and records in ``search_backfill`` the rowid range of what was stored
before. ``backfill`` indexes that range in short transactions (a batch of rows each) on a
connection of its own, so no other command waits behind a whole library being indexed and
the Store's connection stays free for the UI. Several processes may backfill at once: each
batch re-reads the range under the write lock, and a row is indexed only when the index
does not hold it yet (a trigger may have, if its rowid was reused).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from functools import cache
from pathlib import Path

BATCH_ROWS = 200  # pages of ~4,000 characters: tens of ms of write lock per batch
Progress = Callable[[int, int], None]  # (rows done, rows in all)

# What each backfill range fills: (content table, its rowid, the rows to index, the index
# tables with the columns they take, the expression their CJK filter reads).
_SOURCES = {
    "pages": ("pages", "rowid", "1", "text", "text"),
    "answers": (
        "answers",
        "id",
        "status = 'complete'",
        "question, answer",
        "question || ' ' || answer",
    ),
}


# Characters that need the trigram tables: CJK symbols and punctuation, kana, Bopomofo,
# CJK ideographs (with extension A), Yi, Hangul syllables; CJK compatibility ideographs;
# full- and half-width forms. unicode61 would keep a run of them as one token.
CJK_RANGES = "\u3000-\ud7ff\uf900-\ufaff\uff00-\uffef"


@cache
def _cjk() -> re.Pattern[str]:
    """Compiled on first use: a class of such ranges takes ~17 ms, which a search for plain
    words (every ``longdoc search`` process) should not pay."""
    return re.compile(f"[{CJK_RANGES}]")


def word_index(kind: str) -> str:
    """The word (unicode61) index of ``kind`` ("page" or "answer")."""
    return "pages_fts" if kind == "page" else "answers_fts"


def has_cjk(text: str | None) -> bool:
    """True when ``text`` holds a CJK character (~25 µs for 4,000 characters)."""
    if text is None or text.isascii():
        return False
    return _cjk().search(text) is not None


def register(conn: sqlite3.Connection) -> None:
    """The SQL function m005's triggers call; on every connection that writes the store."""
    conn.create_function("longdoc_cjk", 1, has_cjk, deterministic=True)


def backlog(conn: sqlite3.Connection) -> int:
    """How many rowids are still to index (0: the index holds every stored row)."""
    try:
        row = conn.execute(
            "SELECT sum(last_rowid - next_rowid + 1) FROM search_backfill"
        ).fetchone()
    except sqlite3.OperationalError:  # before m005
        return 0
    return int(row[0] or 0)


def backfill(path: Path, progress: Progress | None = None, batch: int = BATCH_ROWS) -> int:
    """Index everything stored before the index existed; the rows indexed by this call."""
    conn = sqlite3.connect(str(path), timeout=15, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 15000")
        register(conn)
        total = backlog(conn)
        if not total:
            return 0
        indexed = 0
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                step = conn.execute(
                    "SELECT name, next_rowid, last_rowid FROM search_backfill LIMIT 1"
                ).fetchone()
                if step is None:
                    conn.execute("COMMIT")
                    break
                indexed += _index_range(conn, step[0], step[1], min(step[1] + batch - 1, step[2]))
                if step[1] + batch > step[2]:
                    conn.execute("DELETE FROM search_backfill WHERE name = ?", [step[0]])
                else:
                    conn.execute(
                        "UPDATE search_backfill SET next_rowid = ? WHERE name = ?",
                        [step[1] + batch, step[0]],
                    )
                left = backlog(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if progress is not None:
                progress(total - left, total)
        return indexed
    finally:
        conn.close()


def _index_range(conn: sqlite3.Connection, name: str, first: int, last: int) -> int:
    """Index the rows of ``name`` with rowids ``first..last`` that the index lacks."""
    table, rowid, wanted, columns, cjk_text = _SOURCES[name]
    count = 0
    for index, extra in ((f"{table}_fts", ""), (f"{table}_cjk", f" AND longdoc_cjk({cjk_text})")):
        cursor = conn.execute(
            f"INSERT INTO {index} (rowid, {columns}) SELECT {rowid}, {columns} FROM {table}"
            f" WHERE {rowid} BETWEEN ? AND ? AND {wanted}{extra} AND NOT EXISTS"
            f" (SELECT 1 FROM {index}_docsize WHERE id = {table}.{rowid})",
            [first, last],
        )
        if not extra:
            count = cursor.rowcount
    return count
