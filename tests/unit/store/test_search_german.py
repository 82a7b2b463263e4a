"""German spellings in search (issue 18): ue/ü, ss/ß match each other, English stays exact."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from desktop import search, spellings
from desktop.store.db import AnswerKey, Store
from tests.conftest import make_document

FILLER = "Die Parteien vereinbaren die folgenden Bedingungen und nichts anderes."
GERMAN = {
    "1": "Die Kündigung erfolgt über die Hausverwaltung.",
    "2": "Der Mieter wohnt in der Münchener Straße 12.",
    "3": "Die Strasse wird im Winter gesperrt.",
    "4": "Die Größe der Wohnung beträgt achtzig Quadratmeter.",
    "5": "Die Maße sind in Metern angegeben.",
    "6": "Die Masse des Körpers bleibt gleich.",
    "7": "Adresse: Muenchener Strasse 5, Ueberlingen.",
}


def labels(result: search.SearchResult) -> list[str]:
    return sorted(str(h.label) for h in result.hits if h.kind == "page")


@pytest.fixture
def german(store: Store) -> Store:
    pages = [(label, f"{FILLER} {text} {FILLER}") for label, text in GERMAN.items()]
    store.save_document(make_document(pages, title="Mietvertrag"))
    return store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ueber", ["1"]),
        ("UEBER", ["1"]),
        ("über", ["1"]),
        ("Strasse", ["2", "3", "7"]),
        ("Straße", ["2", "3", "7"]),
        ("STRASSE", ["2", "3", "7"]),
        ('"Muenchener Strasse"', ["2", "7"]),
        ('"Münchener Straße"', ["2", "7"]),
        ('"muenchener strasse 12"', ["2"]),
        ("groess*", ["4"]),
        ("Maße", ["5", "6"]),
        ("Masse", ["5", "6"]),
        ("koerpers", ["6"]),
        # Operators read as before, around respelled words.
        ("strasse NOT gesperrt", ["2", "7"]),
        ("mieter strasse", ["2"]),
        ("gesperrt OR ueber", ["1", "3"]),
        ("NEAR(muenchener strasse, 0)", ["2", "7"]),
        ("text: ueber", ["1"]),
        ("muenchener + strasse", ["2", "7"]),
        ("{text}: (ueber OR groess*)", ["1", "4"]),
        # Plain words (FTS5 cannot read "§"), respelled too.
        ("§ Straße 12", ["2"]),
    ],
)
def test_german_spellings_find_each_other(german: Store, query: str, expected: list[str]) -> None:
    assert labels(search.search(german, query)) == expected


def test_the_other_spelling_is_marked_in_the_snippet(german: Store) -> None:
    (hit,) = search.search(german, "ueber").hits
    assert f"{search.MARK_START}über{search.MARK_END}" in hit.snippet
    (hit,) = search.search(german, '"Muenchener Strasse 12"').hits
    assert f"{search.MARK_START}Münchener Straße 12{search.MARK_END}" in hit.snippet


def test_answers_are_found_in_either_spelling(german: Store) -> None:
    sha = german.conn.execute("SELECT sha256 FROM documents").fetchone()[0]
    key = AnswerKey(sha, "Wo wohnt der Mieter?", "m", "v1", False, 1, 7, 100)
    answer_id = german.start_answer(key)
    german.finish_answer(
        answer_id, status="complete", answer="In der Münchener Straße, gegenüber.", reasoning=""
    )
    for query in ("muenchener", "Strasse", '"Muenchener Strasse"', "gegenueber"):
        hits = search.search(german, query, scope="answers").hits
        assert [h.answer_id for h in hits] == [answer_id], query


def test_umlaut_spellings_are_tried_only_where_the_library_writes_them(store: Store) -> None:
    english = [
        "She walked to the shop and back to work.",
        "The dos and don'ts of leases.",
        "Su casa es su casa.",
        "Jo and Amy signed.",
        "The class action was dismissed.",
    ]
    bars = [f"The bar number {n} serves drinks." for n in range(30)]
    pages = [*english, *bars, "Der Bär schläft über den Winter."]
    store.save_document(make_document([(str(n), t) for n, t in enumerate(pages, 1)]))
    assert labels(search.search(store, "ueber", limit=100)) == [str(len(pages))]
    # The folded forms of these English words are English words too (to, dos, su, jo):
    # no page spells them with an umlaut, so they are not tried.
    for query in ("toe", "does", "sue", "Joe", '"the does"', "doe*"):
        assert search.search(store, query).hits == [], query
    # One page of "Bär" among 30 of "bar": "Baer" does not find every bar.
    assert search.search(store, "baer", limit=100).hits == []
    # ss -> ß is always tried, and finds nothing more in English.
    assert labels(search.search(store, "class dismissed")) == ["5"]


def never(spelling: str, prefix: bool) -> bool:
    return False


def always(spelling: str, prefix: bool) -> bool:
    return True


@pytest.mark.parametrize(
    "query",
    ["indemn* AND NOT cap", '"indemnification cap"', "NEAR(cap apply, 3)", "text: x", "a:b"],
)
def test_queries_without_german_spellings_go_to_fts5_as_written(query: str) -> None:
    assert spellings.respelled(query, always) == query


def test_respelling_is_bounded(store: Store) -> None:
    # Ten words of three spellings each: 3 ** 10 phrases unbounded.
    phrase = '"' + " ".join(["groesse"] * 10) + '"'
    assert spellings.respelled(phrase, always).count(" OR ") == spellings.MAX_PHRASE_SPELLINGS - 1
    words = " ".join(f"strasse{n}" for n in range(100))
    alternates = spellings.respelled(words, never).count("straße")
    assert alternates == spellings.MAX_QUERY_SPELLINGS
    assert len(spellings._word_spellings("aeoeuess", False, always)) <= spellings.MAX_WORD_SPELLINGS
    # Still a query SQLite runs, and finds.
    store.save_document(make_document([("1", "Straße7 und strasse99")]))
    assert labels(search.search(store, "strasse7 strasse99")) == ["1"]
    assert labels(search.search(store, words[:900])) == []
    # 500 different words (one letter each: 999 characters), 495 nested parentheses: FTS5
    # reads them or they are plain words, never an error.
    letters = [chr(c) for c in range(0x100, 0x2000) if unicodedata.category(chr(c)) == "Ll"]
    assert search.search(store, " ".join(letters[:500])).hits == []
    deep = search.search(store, "(" * 495 + "strasse7" + ")" * 495)
    assert deep.read_as == '"strasse7"' and labels(deep) == ["1"]


def test_a_query_fts5_rejects_is_read_as_plain_words_then_respelled(german: Store) -> None:
    # Respelled, it would read (the wordless phrase after the bad column filter is left
    # out), but as written FTS5 rejects it: plain words, as without respelling.
    result = search.search(german, "strasse : § Straße")
    assert result.read_as == '"strasse" "Straße"' and labels(result) == ["2", "3", "7"]


def test_respelling_keeps_every_query_fts5_reads_and_its_hits() -> None:
    """Random mixes of FTS5's syntax: each query FTS5 reads still reads respelled, and
    (without NOT, which may now exclude more) finds at least what it found."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE pages (text TEXT)")
    conn.execute(
        "CREATE VIRTUAL TABLE pages_fts USING fts5(text, content = 'pages',"
        " content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2')"
    )
    texts = [*GERMAN.values(), "the lease is near the Strasse", "§ 4.2 O'Brien lease x"]
    conn.executemany("INSERT INTO pages (text) VALUES (?)", [(t,) for t in texts])
    conn.execute("INSERT INTO pages_fts (pages_fts) VALUES ('rebuild')")
    attested = spellings.attester(conn, "page")
    atoms = [
        "AND", "OR", "NOT", "NEAR", "(", ")", '"', "*", "^", "+", ":", "{", "}", ",", "-",
        "§", "lease", "strasse", "ueber", "über", "Straße", "text", "5", "x", "muenchener*",
        '""', '"die strasse"', '"4.2"', "groess*", "NEAR(lease strasse)", "text:", "{text}:",
    ]  # fmt: skip
    rng = random.Random(18)

    def rows(query: str) -> set[int] | None:
        try:
            found = conn.execute("SELECT rowid FROM pages_fts WHERE pages_fts MATCH ?", [query])
            return {r[0] for r in found}
        except sqlite3.OperationalError:
            return None

    readable = 0
    for _ in range(3_000):
        parts = [rng.choice(atoms) for _ in range(rng.randint(1, 7))]
        query = rng.choice(["", " "]).join(parts)
        before = rows(query)
        if before is None:
            continue
        readable += 1
        after = rows(spellings.respelled(query, attested))
        assert after is not None, query
        assert "NOT" in query or "-" in query or before <= after, query
    assert readable > 300


def test_a_query_with_nothing_to_respell_does_not_load_the_spellings(tmp_path: Path) -> None:
    """``longdoc search indemnification`` compiles none of desktop.spellings (where bytecode
    is not cached, ~4 ms of every search process); a German word does."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from desktop import search\n"
        "from desktop.store.db import Store\n"
        "store = Store(Path(sys.argv[2]) / 'longdoc.db')\n"
        "search.search(store, sys.argv[1])\n"
        "print('desktop.spellings' in sys.modules)\n"
    )
    loaded = {
        query: subprocess.run(
            [sys.executable, "-c", code, query, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for query in ("indemnification cap", '"liquidated damages" OR tiw*', "Strasse", "über")
    }
    assert loaded == {
        "indemnification cap": "False",
        '"liquidated damages" OR tiw*': "False",
        "Strasse": "True",
        "über": "True",
    }
