"""Full-text search over the library: every stored page and every complete answer.

The index is SQLite FTS5 (migration m005; ``desktop/store/fts.py`` fills it for rows stored
before it existed). A query is first given to FTS5 as written, so phrases (``"indemnification
cap"``), prefixes (``indemn*``), ``AND``/``OR``/``NOT`` and ``NEAR(a b, 5)`` work; a query
FTS5 cannot parse (``§ 4.2``, ``O'Brien``, a lone ``"``) is read as plain words instead, each
whitespace-separated piece a phrase of its words. Accents and case never matter
(``unicode61 remove_diacritics 2``), and German words match in their other spellings
(``ueber`` finds "über", ``Strasse`` "Straße" and back: ``desktop.spellings``). A query holding CJK
characters goes to the trigram indexes instead (ideographs are not separated by spaces):
each piece must occur as written.

Hits are ranked by bm25 (``score``: higher is better); a snippet marks each match between
``MARK_START`` and ``MARK_END``. Qt-free: the CLI and the app both call ``search``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from desktop.errors import UsageError
from desktop.store import fts
from desktop.store.db import Store, _translate

MARK_START = "\u27e6"  # ⟦ : rare in documents, unlike [ ] (citations) or « » (French)
MARK_END = "\u27e7"  # ⟧
MAX_QUERY_CHARS = 1_000
DEFAULT_LIMIT = 20
SNIPPET_TOKENS = 16
SCOPES = ("all", "documents", "answers")

Scope = Literal["all", "documents", "answers"]

_WORD = re.compile(r"\w+")
# FTS5's words for a query it cannot read (not a damaged or locked database).
_QUERY_ERRORS = ("fts5:", "no such column", "unterminated string", "unknown special query")


class QueryError(UsageError):
    """A query with nothing to search for, or too long (exit 2)."""


@dataclass(frozen=True)
class DocumentRef:
    """A document a hit belongs to."""

    sha256: str
    path: str
    title: str
    letter: str | None = None  # its letter in the set an answer was about (A, B...)


@dataclass(frozen=True)
class Hit:
    """One match: a page (``page``, ``label``) or a complete answer (``answer_id``...)."""

    kind: Literal["page", "answer"]
    document: DocumentRef
    snippet: str  # matches between MARK_START and MARK_END
    score: float  # -bm25: higher is better
    page: int | None = None
    label: str | None = None
    answer_id: int | None = None
    thread_id: int | None = None
    question: str | None = None
    asked_at: float | None = None
    documents: tuple[DocumentRef, ...] = ()  # an answer's documents (the first is `document`)


@dataclass(frozen=True)
class SearchResult:
    """What a search found, and how the query was read."""

    query: str
    hits: list[Hit] = field(default_factory=list)
    read_as: str | None = None  # the plain-words form when FTS5 could not parse the query


def check_query(query: str) -> str:
    """The query stripped; QueryError when it is empty, too long or has no words."""
    text = query.strip()
    if not text:
        raise QueryError("the search query is empty: give a word or a phrase to look for")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the search query is {len(text):,} characters long; search takes at most"
            f" {MAX_QUERY_CHARS:,}: give the words that matter"
        )
    if not _encodes(text):
        # What Python makes of bytes in argv that are not UTF-8 (``$'\xff'``): SQLite
        # cannot take them, and they are no word anyone could have typed.
        raise QueryError(
            "the search query holds bytes that are not UTF-8 text (a terminal set to another"
            " encoding?): type it again"
        )
    if not _WORD.search(text):
        raise QueryError(
            "the search query has no words, only operators or punctuation: give a word or"
            ' a phrase to look for, e.g. "indemnification cap" or indemn*'
        )
    return text


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def plain_words(query: str) -> str:
    """The query as FTS5 plain words: each piece between spaces a phrase of its words."""
    phrases = []
    for piece in query.split():
        words = _WORD.findall(piece)
        if words:
            phrases.append('"' + " ".join(words) + '"' + ("*" if piece.endswith("*") else ""))
    return " ".join(phrases)


def ensure_index(store: Store, progress: fts.Progress | None = None) -> None:
    """Index what was stored before the index existed (nothing to do, usually: one query)."""
    with store._read() as conn:
        waiting = fts.backlog(conn)
    if waiting:
        try:
            fts.backfill(store.path, progress)
        except sqlite3.Error as exc:
            raise _translate(store.path, exc) from exc


def search(
    store: Store,
    query: str,
    *,
    scope: Scope = "all",
    document: str | None = None,
    limit: int = DEFAULT_LIMIT,
    progress: fts.Progress | None = None,
) -> SearchResult:
    """The best ``limit`` hits for ``query`` over pages and/or answers (of one document)."""
    text = check_query(query)
    ensure_index(store, progress)
    kinds = ["page", "answer"] if scope == "all" else ["page" if scope == "documents" else "answer"]
    read_as: str | None = None
    hits: list[Hit] = []
    with store._read() as conn:
        if fts.has_cjk(text):
            for kind in kinds:
                hits += _cjk_hits(conn, kind, text, document, limit)
        else:
            for kind in kinds:
                found, plain = _words_or_plain_words(conn, kind, text, document, limit)
                hits += found
                read_as = read_as or plain
        _fill_answers(conn, hits)
    hits.sort(key=lambda h: -h.score)
    return SearchResult(text, hits[:limit], read_as)


# --- words (unicode61) ------------------------------------------------------------------


def _words_or_plain_words(
    conn: sqlite3.Connection, kind: str, query: str, document: str | None, limit: int
) -> tuple[list[Hit], str | None]:
    """Hits for ``query`` as FTS5 reads it, else as plain words (and those words), each
    with its German spellings."""
    respelled = _respeller(conn, kind)
    match = respelled(query)
    # Only what FTS5 reads as written is respelled (what it rejects is plain words, as
    # before): respelling leaves out phrases without words, and so what is wrong with one.
    if match == query or _readable(conn, kind, query):
        for text in dict.fromkeys([match, query]):  # as written, should respelling break it
            try:
                return _word_hits(conn, kind, text, document, limit), None
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith(_QUERY_ERRORS):
                    raise
    read_as = plain_words(query)
    return _word_hits(conn, kind, respelled(read_as), document, limit), read_as


def _readable(conn: sqlite3.Connection, kind: str, query: str) -> bool:
    """Whether FTS5 reads ``query`` (parsed, looked up for rowid 0: no row; well under a
    millisecond)."""
    index = fts.word_index(kind)
    try:
        conn.execute(
            f"SELECT 1 FROM {index} WHERE {index} MATCH ? AND rowid = 0", [query]
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if not str(exc).startswith(_QUERY_ERRORS):
            raise
        return False
    return True


def _word_hits(
    conn: sqlite3.Connection, kind: str, match: str, document: str | None, limit: int
) -> list[Hit]:
    """Ranked hits from the word index of ``kind``."""
    index = fts.word_index(kind)
    column = 0 if kind == "page" else -1
    where, args = _document_filter(kind, document)
    # The FTS query alone, ordered by rank: FTS5 then builds snippets for the rows returned
    # only. Rows are looked up afterwards by rowid.
    rows = conn.execute(
        f"SELECT rowid, snippet({index}, {column}, ?, ?, '…', {SNIPPET_TOKENS}), rank"
        f" FROM {index} WHERE {index} MATCH ?{where} ORDER BY rank LIMIT ?",
        [MARK_START, MARK_END, match, *args, limit],
    ).fetchall()
    return _hits(conn, kind, [(r[0], _clean(r[1]), -r[2]) for r in rows])


def _document_filter(kind: str, document: str | None) -> tuple[str, list[Any]]:
    if document is None:
        return "", []
    if kind == "page":
        return " AND rowid IN (SELECT rowid FROM pages WHERE sha256 = ?)", [document]
    # Its own answers, and the answers about a set it was part of.
    return (
        " AND rowid IN (SELECT id FROM answers WHERE document_sha = ? OR id IN (SELECT a.id"
        " FROM answers a, json_each(a.extra, '$.set') m WHERE a.document_sha > 'set:'"
        " AND a.document_sha < 'set;' AND json_extract(m.value, '$.sha256') = ?))",
        [document, document],
    )


# A query that may have another German spelling (an umlaut, ß, ae/oe/ue or ss): only then
# is desktop.spellings imported (~300 lines: ~4 ms a process to compile where bytecode is
# not cached, as here with PYTHONDONTWRITEBYTECODE), and it leaves other queries as written.
_GERMAN_HINT = re.compile(r"[äöüßẞ]|ae|oe|ue|ss", re.IGNORECASE)


def _respeller(conn: sqlite3.Connection, kind: str) -> Callable[[str], str]:
    """The query with its German words' other spellings (``desktop.spellings``)."""
    attested = None

    def respell(query: str) -> str:
        nonlocal attested
        if not _GERMAN_HINT.search(query):
            return query
        from desktop import spellings

        if attested is None:
            attested = spellings.attester(conn, kind)
        return spellings.respelled(query, attested)

    return respell


# --- CJK (trigram) ----------------------------------------------------------------------


def _cjk_hits(
    conn: sqlite3.Connection, kind: str, query: str, document: str | None, limit: int
) -> list[Hit]:
    """Hits from the trigram index: every piece of the query must occur as written.

    Pieces of three characters or more are looked up in the index (and ranked by bm25);
    shorter ones (most Chinese words are two characters) are checked in the rows found,
    or, with no longer piece, in the rows holding CJK text.
    """
    pieces = [p for p in (re.sub(r'["*]', "", w).casefold() for w in query.split()) if p]
    if not pieces:
        return []
    long = [p for p in pieces if len(p) >= 3]
    short = [p for p in pieces if len(p) < 3]
    index = "pages_cjk" if kind == "page" else "answers_cjk"
    body = "text" if kind == "page" else "question || ' ' || answer"
    where, args = _document_filter(kind, document)
    checks = "".join(f" AND instr(lower({body}), ?) > 0" for _ in short)
    if long:
        match = " AND ".join('"' + p.replace('"', "") + '"' for p in long)
        sql = (
            f"SELECT rowid, {body}, rank FROM {index} WHERE {index} MATCH ?{where}{checks}"
            " ORDER BY rank LIMIT ?"
        )
        params: list[Any] = [match, *args, *short, limit]
    else:
        # Without a MATCH the FTS table would read every row of its content table: go
        # through its own list of the rows it holds instead.
        source = "pages" if kind == "page" else "answers"
        key = "rowid" if kind == "page" else "id"
        sql = (
            f"SELECT {key}, {body}, 0 FROM {source} WHERE {key} IN"
            f" (SELECT id FROM {index}_docsize){where.replace('rowid', key, 1)}{checks} LIMIT ?"
        )
        params = [*args, *short, limit]
    rows = conn.execute(sql, params).fetchall()
    found = []
    for rowid, body_text, rank in rows:
        score = -rank if rank else float(sum(body_text.casefold().count(p) for p in pieces))
        found.append((rowid, _marked(body_text, pieces), score))
    return _hits(conn, kind, found)


def _marked(text: str, pieces: list[str], width: int = 60) -> str:
    """A snippet around the first occurrence of a piece, every occurrence marked."""
    folded = text.casefold()
    starts = [i for i in (folded.find(p) for p in pieces) if i >= 0]
    if len(folded) != len(text) or not starts:  # casefold changed lengths: mark nothing
        return _clean(text[: width * 2])
    first = min(starts)
    lo, hi = max(0, first - width), min(len(text), first + width)
    spans: list[tuple[int, int]] = []
    for p in pieces:
        at = folded.find(p, lo)
        while 0 <= at < hi:
            spans.append((at, min(at + len(p), hi)))
            at = folded.find(p, at + len(p))
    out, pos = [], lo
    for a, b in sorted(spans):
        if a < pos:
            continue
        out += [text[pos:a], MARK_START, text[a:b], MARK_END]
        pos = b
    out.append(text[pos:hi])
    return _clean(("…" if lo else "") + "".join(out) + ("…" if hi < len(text) else ""))


# --- rows -------------------------------------------------------------------------------


def _hits(conn: sqlite3.Connection, kind: str, found: list[tuple[int, str, float]]) -> list[Hit]:
    """Hits for (rowid, snippet, score) triples, with their page or answer and document."""
    if not found:
        return []
    ids = [f[0] for f in found]
    if kind == "page":
        rows = _rows_by_id(
            conn,
            "SELECT p.rowid, p.number, p.label, d.sha256, d.path, d.title FROM pages p"
            " JOIN documents d ON d.sha256 = p.sha256 WHERE p.rowid",
            ids,
        )
        return [
            Hit(
                "page",
                DocumentRef(row[2], row[3], row[4]),
                snippet,
                round(score, 4),
                page=row[0],
                label=row[1],
            )
            for rowid, snippet, score in found
            if (row := rows.get(rowid)) is not None
        ]
    answers = _rows_by_id(
        conn,
        "SELECT id, question, created_at, document_sha, json_extract(extra, '$.set')"
        " FROM answers WHERE id",
        ids,
    )
    # A set's answer is stored under the set's key: its documents are in its spec, lettered.
    members = {
        rowid: [(str(m["sha256"]), str(m["letter"])) for m in json.loads(row[3])]
        if row[3]
        else [(row[2], None)]
        for rowid, row in answers.items()
    }
    refs = _documents(conn, {sha for found_in in members.values() for sha, _ in found_in})
    hits = []
    for rowid, snippet, score in found:
        row = answers.get(rowid)
        if row is None:
            continue
        documents = tuple(
            dataclasses.replace(refs[sha], letter=letter)
            for sha, letter in members[rowid]
            if sha in refs
        )
        if not documents:
            continue  # its documents were removed
        hits.append(
            Hit(
                "answer",
                documents[0],
                snippet,
                round(score, 4),
                answer_id=rowid,
                question=row[0],
                asked_at=row[1],
                documents=documents,
            )
        )
    return hits


def _documents(conn: sqlite3.Connection, shas: set[str]) -> dict[str, DocumentRef]:
    """The library's documents among ``shas``, by sha256."""
    marks = ", ".join("?" * len(shas))
    rows = conn.execute(
        f"SELECT sha256, path, title FROM documents WHERE sha256 IN ({marks})", sorted(shas)
    )
    return {r[0]: DocumentRef(r[0], r[1], r[2]) for r in rows}


def _rows_by_id(conn: sqlite3.Connection, select: str, ids: list[int]) -> dict[int, Any]:
    """The rows ``select`` finds for ``ids`` (it ends with the id column, whose value comes
    first in each row), by id: the rest of each row."""
    marks = ", ".join("?" * len(ids))
    return {r[0]: r[1:] for r in conn.execute(f"{select} IN ({marks})", ids)}


def _fill_answers(conn: sqlite3.Connection, hits: list[Hit]) -> None:
    """Each answer hit's thread: the one it was continued in last."""
    for i, hit in enumerate(hits):
        if hit.kind != "answer":
            continue
        row = conn.execute(
            "SELECT t.id FROM thread_turns tt JOIN threads t ON t.id = tt.thread_id"
            " WHERE tt.answer_id = ? ORDER BY t.updated_at DESC, t.id DESC LIMIT 1",
            [hit.answer_id],
        ).fetchone()
        if row is not None:
            hits[i] = _replace(hit, thread_id=row[0])


def _replace(hit: Hit, **changes: Any) -> Hit:
    return dataclasses.replace(hit, **changes)


def _clean(snippet: str) -> str:
    """One line: runs of whitespace (line breaks included) as one space."""
    return " ".join(snippet.split())


# --- output -----------------------------------------------------------------------------


def parts(snippet: str) -> Iterator[tuple[str, bool]]:
    """The snippet as (text, is_match) pieces, markers removed."""
    for i, piece in enumerate(re.split(f"[{MARK_START}{MARK_END}]", snippet)):
        if piece:
            yield piece, i % 2 == 1


def iso(timestamp: float | None) -> str | None:
    """A stored time as ISO 8601 in UTC."""
    if timestamp is None:
        return None
    import datetime

    moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def to_json(result: SearchResult) -> dict[str, Any]:
    """The ``search --json`` object."""

    def ref(d: DocumentRef) -> dict[str, str]:
        return {"path": d.path, "sha256": d.sha256, "title": d.title}

    hits = []
    for h in result.hits:
        item: dict[str, Any] = {
            "kind": h.kind,
            **ref(h.document),
            "page": h.page,
            "label": h.label,
            "answer_id": h.answer_id,
            "thread_id": h.thread_id,
            "question": h.question,
            "asked_at": iso(h.asked_at),
            "snippet": h.snippet,
            "score": h.score,
        }
        if h.kind == "answer":
            item["documents"] = [
                ref(d) | ({"letter": d.letter} if d.letter else {}) for d in h.documents
            ]
        hits.append(item)
    return {"query": result.query, "hits": hits}
