"""Full-text search over the library: every stored page and every complete answer.

The index is SQLite FTS5 (migration m005; ``desktop/store/fts.py`` fills it for rows stored
before it existed). A query is first given to FTS5 as written, so phrases (``"indemnification
cap"``), prefixes (``indemn*``), ``AND``/``OR``/``NOT`` and ``NEAR(a b, 5)`` work; a query
FTS5 cannot parse (``§ 4.2``, ``O'Brien``, a lone ``"``) is read as plain words instead, each
whitespace-separated piece a phrase of its words. Accents and case never matter
(``unicode61 remove_diacritics 2``), and German words match in their other spellings
(``ueber`` finds "über", ``Strasse`` "Straße" and back: ``respelled``). A query holding CJK
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
    attested = _attester(conn, kind)
    match = respelled(query, attested)
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
    return _word_hits(conn, kind, respelled(read_as, attested), document, limit), read_as


def _readable(conn: sqlite3.Connection, kind: str, query: str) -> bool:
    """Whether FTS5 reads ``query`` (parsed, looked up for rowid 0: no row; well under a
    millisecond)."""
    index = "pages_fts" if kind == "page" else "answers_fts"
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
    index = "pages_fts" if kind == "page" else "answers_fts"
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


# --- German spellings -------------------------------------------------------------------
#
# German is written with umlauts and ß, or without them: "über"/"ueber", "Straße"/"Strasse"
# (Swiss German never writes ß), "München"/"Muenchen". The index folds ä, ö, ü to a, o, u
# and keeps ß (the index holds "uber", "straße", "strasse"), so each spelling finds only
# itself. A query's words therefore also look for their other spellings, as an OR group
# (each spelling is one more doclist for FTS5 to read; bm25 ranks the group as usual):
#
# - ä/ö/ü -> ae/oe/ue, ß -> ss and ss -> ß: always. No English word is written with ä, ö,
#   ü or ß, so these alternates only ever match German text ("class" also tries "claß").
# - ae/oe/ue -> ä/ö/ü (which the index holds as a/o/u): only when the library's text holds
#   that umlaut spelling as a word, in at least one in CHECK_SHARE of the rows (sampled)
#   holding the folded form (``_attester``). Unchecked, the folded form is often an
#   English word: "toe" -> "to", "does" -> "dos", "poet" -> "pot", "sue" -> "su". Measured
#   on 69,000 pages of English (the shared PDF samples, the docs, /usr/share/doc): 57
#   common English words with ae/oe/ue or ss matched 164,024 pages as written, 243,386
#   with the alternates unchecked ("toe" 71 -> 55,796, "doe" 27 -> 19,406, "sue" 27 ->
#   991) and 164,024 checked, while the German names in the same text were still found
#   both ways ("Mueller" 149 -> 240 with "Müller", "Joerg" 116 -> 161). The share keeps
#   one "Bär" among 200 pages of "bar" from making "Baer" find every bar (1 in 200: no;
#   "Kraemer": 2 "Krämer" among 30 "Kramer" pages: yes). A check reads at most CHECK_ROWS
#   rows: 0.2-11 ms a word there.
#   "ue" after q, a or e is not an umlaut (queue, blaue, neue) and is left alone.
#
# A phrase cannot hold an OR, so a phrase (or a NEAR group) becomes an OR of its spellings.
# Those multiply across its words (two spellings a word in a ten-word phrase are 1,024
# phrases), hence the caps: a word's alternates, a phrase's spellings and what a whole
# query may add are bounded, and past a bound the rest is searched as written. A prefix
# ("groess*") tries the prefix's spellings ("größ*"); one cut inside "ss" ("gros*") does
# not try "groß*".

MAX_WORD_SPELLINGS = 4  # alternates of one word
MAX_PHRASE_SPELLINGS = 8  # spellings of one phrase or NEAR group, as written included
MAX_QUERY_SPELLINGS = 32  # alternates a whole query may add
MAX_CHECKS = 16  # umlaut spellings looked up in the library, a query and index
CHECK_ROWS = 200  # rows holding the folded form that are read for the umlaut spelling
CHECK_SHARE = 20  # of which one in this many must hold it

# FTS5's bareword characters: any but ASCII other than letters, digits, _ and \x1a (the
# class written as the ASCII it excludes: a class up to U+10FFFF takes ~2 ms to compile).
_BAREWORD = re.compile(r"[^\x00-\x19\x1b-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]+")
_FTS_PUNCT = "(){}:*+^,-"
_OPERATORS = ("AND", "OR", "NOT")
_TERM_WORD = re.compile(r"[^\W_]+")  # a word as unicode61 cuts one (near enough)
_TO_DIGRAPH = {"ä": "ae", "ö": "oe", "ü": "ue"}
_TO_UMLAUT = {"ae": "ä", "oe": "ö", "ue": "ü"}
_DIGRAPH = re.compile(r"ae|oe|(?<![qae])ue")

Attested = Callable[[str, bool], bool]  # (umlaut spelling, a prefix?) -> the library has it
_Piece = str | int  # literal query text, or the index of a word's slot


# Plain classes, not dataclasses: every `longdoc search` process imports this module, and
# a dataclass costs ~0.5 ms to define.
class _Item:
    """A piece of a respelled query: an operator or parenthesis, or a phrase or NEAR group
    (with the column filter before it)."""

    __slots__ = ("empty", "phrase", "respelled", "text")

    def __init__(
        self, text: str, phrase: bool = False, empty: bool = False, respelled: bool = False
    ) -> None:
        self.text = text
        self.phrase = phrase
        self.empty = empty  # without words ("§", ""): an implicit AND leaves it out, AND not
        self.respelled = respelled  # an OR group of its spellings


class _Token:
    __slots__ = ("kind", "raw", "value")

    def __init__(self, kind: Literal["word", "quoted", "punct"], raw: str, value: str) -> None:
        self.kind = kind
        self.raw = raw  # as written in the query
        self.value = value  # the text of a word or a quoted string


def _lex(query: str) -> list[_Token] | None:
    """FTS5's tokens of ``query``; None when FTS5 would not read it."""
    tokens: list[_Token] = []
    i = 0
    while i < len(query):
        c = query[i]
        if c.isspace():
            i += 1
        elif c == '"':
            parts, j = [], i + 1
            while True:
                end = query.find('"', j)
                if end < 0:
                    return None
                parts.append(query[j:end])
                if not query.startswith('"', end + 1):
                    break
                parts.append('"')  # "" is a quote inside the string
                j = end + 2
            tokens.append(_Token("quoted", query[i : end + 1], "".join(parts)))
            i = end + 1
        elif c in _FTS_PUNCT:
            tokens.append(_Token("punct", c, c))
            i += 1
        elif m := _BAREWORD.match(query, i):
            tokens.append(_Token("word", m.group(), m.group()))
            i = m.end()
        else:
            return None
    return tokens


def respelled(query: str, attested: Attested) -> str:
    """``query`` (FTS5 syntax) with each phrase, prefix and NEAR group also in its other
    German spellings; unchanged when it has none or FTS5 would not read it.

    FTS5 joins phrases written side by side (an implicit AND) but not a parenthesised group
    and a phrase (``a (b OR c)`` is a syntax error), and the implicit AND binds tighter than
    NOT (``a b NOT c`` is ``(a b) NOT c``): a run of phrases with a respelled one in it is
    written as ``(a AND (b OR c))``.
    """
    tokens = _lex(query)
    if tokens is None:
        return query
    items: list[_Item] = []
    column = ""  # a column filter, for the item after it
    budget = MAX_QUERY_SPELLINGS
    i = 0
    while i < len(tokens):
        t = tokens[i]
        after = tokens[i + 1].raw if i + 1 < len(tokens) else ""
        if t.raw in ("{", "-") or after == ":":  # up to and with its colon
            end = next((j for j in range(i, len(tokens)) if tokens[j].raw == ":"), -1)
            if end < 0:  # FTS5 says what is wrong
                return query
            column += " ".join(x.raw for x in tokens[i : end + 1]) + " "
            i = end + 1
            continue
        caret = t.raw == "^" and _string(tokens, i + 1)
        if (t.kind == "punct" and not caret) or t.raw in _OPERATORS:
            items.append(_Item(column + t.raw))
            column = ""
            i += 1
            continue
        if t.raw == "NEAR" and after == "(":
            end = next((j for j in range(i, len(tokens)) if tokens[j].raw == ")"), -1)
            if end < 0:
                return query
        else:
            end = i + 1 if t.raw == "^" else i
            while True:  # string [*] [+ string [*]]...
                if end + 1 < len(tokens) and tokens[end + 1].raw == "*":
                    end += 1
                if not (_is(tokens, end + 1, "+") and _string(tokens, end + 2)):
                    break
                end += 2
        unit = tokens[i : end + 1]
        spellings, empty = _unit_spellings(unit, attested, budget)
        budget -= len(spellings) - 1
        text = spellings[0] if len(spellings) == 1 else f"({' OR '.join(spellings)})"
        items.append(_Item(column + text, phrase=True, empty=empty, respelled=len(spellings) > 1))
        column = ""
        i = end + 1
    if budget == MAX_QUERY_SPELLINGS:
        return query
    items.append(_Item(column))  # a column filter with nothing after it, for FTS5 to reject
    out: list[str] = []
    run: list[_Item] = []
    for item in [*items, _Item("")]:
        if item.phrase:
            run.append(item)
            continue
        if len(run) > 1 and any(r.respelled for r in run):
            # A phrase without words ("§", column filter or not) is left out of an implicit
            # AND, but matches nothing as an operand of AND: leave it out.
            kept = [r.text for r in run if not r.respelled and not r.empty]
            groups = [" ".join(kept)] if kept else []
            out.append(f"({' AND '.join(groups + [r.text for r in run if r.respelled])})")
        else:
            out += [r.text for r in run]
        run = []
        out.append(item.text)
    return " ".join(out).strip()


def _string(tokens: list[_Token], i: int) -> bool:
    """Whether ``tokens[i]`` is a string: quoted, or a word that is no operator."""
    return i < len(tokens) and tokens[i].kind != "punct" and tokens[i].raw not in _OPERATORS


def _is(tokens: list[_Token], i: int, punct: str) -> bool:
    return i < len(tokens) and tokens[i].kind == "punct" and tokens[i].raw == punct


def _unit_spellings(unit: list[_Token], attested: Attested, budget: int) -> tuple[list[str], bool]:
    """The spellings of a phrase (``^``, ``*`` and ``+`` included) or a NEAR group, as
    written first: each word's spellings combined, at most MAX_PHRASE_SPELLINGS."""
    template: list[_Piece] = []
    words: list[str] = []
    prefixes: list[bool] = []  # the word ends a string followed by *
    for n, t in enumerate(unit):
        group = t.raw == "NEAR" and _is(unit, n + 1, "(")
        if t.kind == "punct" or group or (n and unit[n - 1].raw == ","):
            template.append(t.raw)
            continue
        prefix = n + 1 < len(unit) and unit[n + 1].raw == "*"
        template.append(' "')
        found = list(_TERM_WORD.finditer(t.value))
        pos = 0
        for k, m in enumerate(found):
            template += [t.value[pos : m.start()].replace('"', '""'), len(words)]
            words.append(m.group())
            prefixes.append(prefix and k == len(found) - 1)
            pos = m.end()
        template.append(t.value[pos:].replace('"', '""') + '"')
    spellings = [tuple(words)]
    limit = min(MAX_PHRASE_SPELLINGS, budget + 1)
    for slot, word in enumerate(words):
        if len(spellings) >= limit:
            break
        alternates = _word_spellings(word, prefixes[slot], attested)
        spellings += [(*s[:slot], alt, *s[slot + 1 :]) for s in spellings for alt in alternates]
        spellings = spellings[:limit]
    if len(spellings) == 1:
        return [" ".join(t.raw for t in unit)], not words
    return [_render(template, s) for s in spellings], not words


def _render(template: list[_Piece], words: tuple[str, ...]) -> str:
    return "".join(words[p] if isinstance(p, int) else p for p in template).strip()


def _word_spellings(word: str, prefix: bool, attested: Attested) -> list[str]:
    """A word's other German spellings (lower case), at most MAX_WORD_SPELLINGS."""
    word = word.lower()
    found: list[str] = []

    def add(spelling: str) -> bool:
        if spelling != word and spelling not in found:
            found.append(spelling)
        return len(found) >= MAX_WORD_SPELLINGS

    unfolded = "".join(_TO_DIGRAPH.get(c, c) for c in word)
    for spelling in (unfolded, word.replace("ß", "ss"), unfolded.replace("ß", "ss")):
        if add(spelling):
            return found
    sharp = [m.start() for m in re.finditer("ss", word)]
    umlauts = [(m.start(), m.group()) for m in _DIGRAPH.finditer(word)]
    for u in _subsets(umlauts):
        for s in _subsets(sharp):
            if not u and not s:
                continue
            spelling = _respell(word, u, s)
            if (not u or attested(spelling, prefix)) and add(spelling):
                return found
    return found


def _subsets(places: list[Any]) -> list[list[Any]]:
    """Which of ``places`` to respell: none first, then every combination (for more than
    two places, only all of them at once)."""
    if len(places) > 2:
        return [[], places]
    subsets: list[list[Any]] = [[]]
    for place in places:
        subsets += [[*s, place] for s in subsets]
    return sorted(subsets, key=len)


def _respell(word: str, umlauts: list[tuple[int, str]], sharp: list[int]) -> str:
    """``word`` with the digraphs at ``umlauts`` as ä/ö/ü and the ss at ``sharp`` as ß."""
    edits = sorted([(at, _TO_UMLAUT[d]) for at, d in umlauts] + [(at, "ß") for at in sharp])
    out, pos = [], 0
    for at, new in edits:
        if at < pos:  # overlaps the edit before it ("uess" cannot, "sss" can)
            continue
        out += [word[pos:at], new]
        pos = at + 2
    out.append(word[pos:])
    return "".join(out)


def _attester(conn: sqlite3.Connection, kind: str) -> Attested:
    """Whether the text behind index ``kind`` holds an umlaut spelling as a word (or as the
    start of one, for a prefix); at most MAX_CHECKS spellings are looked up, a query.

    The index cannot say (it holds "uber" for "über" and for "Uber"): the rows holding the
    folded form, at most CHECK_ROWS of them, are searched for the umlaut spelling itself.
    Stored text is NFC (``desktop.documents.tokens.normalize``), so instr finds it.
    """
    index = "pages_fts" if kind == "page" else "answers_fts"
    source, key = ("pages", "rowid") if kind == "page" else ("answers", "id")
    body = "text" if kind == "page" else "question || ' ' || answer"
    known: dict[tuple[str, bool], bool] = {}

    def attested(spelling: str, prefix: bool) -> bool:
        if (spelling, prefix) not in known:
            known[spelling, prefix] = len(known) < MAX_CHECKS and _holds(spelling, prefix)
        return known[spelling, prefix]

    def _holds(spelling: str, prefix: bool) -> bool:
        forms = sorted({spelling, spelling[:1].upper() + spelling[1:], spelling.upper()})
        found = " OR ".join(f"instr({body}, ?) > 0" for _ in forms)
        rows = conn.execute(
            f"SELECT CASE WHEN {found} THEN {body} END FROM {source} WHERE {key} IN"
            f" (SELECT rowid FROM {index} WHERE {index} MATCH ? LIMIT {CHECK_ROWS})",
            [*forms, '"' + spelling + '"' + "*" * prefix],
        ).fetchall()
        end = "" if prefix else r"(?!\w)"
        word = re.compile(r"(?<!\w)" + re.escape(spelling) + end, re.IGNORECASE)
        spelt = sum(1 for (text,) in rows if text is not None and word.search(text))
        return spelt > 0 and spelt * CHECK_SHARE >= len(rows)

    return attested


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
