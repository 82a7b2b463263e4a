"""German words in their other spellings: what ``desktop.search`` adds to a query so that
``ueber`` finds "über" and ``Strasse`` finds "Straße" (and back), without a second index.

Imported only for a query that has something to respell (``desktop.search``), so a
``longdoc search`` for English words does not compile it where bytecode is not cached.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any, Literal

from desktop.store import fts

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
#   holding the folded form (``attester``). Unchecked, the folded form is often an
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


def attester(conn: sqlite3.Connection, kind: str) -> Attested:
    """Whether the text behind index ``kind`` holds an umlaut spelling as a word (or as the
    start of one, for a prefix); at most MAX_CHECKS spellings are looked up, a query.

    The index cannot say (it holds "uber" for "über" and for "Uber"): the rows holding the
    folded form, at most CHECK_ROWS of them, are searched for the umlaut spelling itself.
    Stored text is NFC (``desktop.documents.tokens.normalize``), so instr finds it.
    """
    index = fts.word_index(kind)
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
