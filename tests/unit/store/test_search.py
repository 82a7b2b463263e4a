"""Full-text search (issue 18): the index, queries, removal, the migration, the CLI."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from desktop import search
from desktop.cli.main import main
from desktop.documents.model import Document
from desktop.store import db, fts
from desktop.store.db import AnswerKey, Store
from desktop.store.migrations import MIGRATIONS, Migrations
from tests.conftest import make_document

FILLER = "The parties agree to the terms below and to nothing else in this section."


def contract(n: int, planted: str = "") -> tuple[str, str]:
    """A page of filler with ``planted`` in the middle."""
    return (str(n), f"{FILLER} {planted} {FILLER}")


def one_page(store: Store, planted: str, title: str = "Test document") -> Document:
    """A stored one-page document with ``planted`` in its page."""
    doc = make_document([contract(1, planted)], title=title)
    store.save_document(doc)
    return doc


def answer(store: Store, sha: str, question: str, text: str, status: str = "complete") -> int:
    key = AnswerKey(sha, question, "m", "v1", False, 1, 1, 100)
    answer_id = store.start_answer(key)
    if status != "running":
        store.finish_answer(answer_id, status=status, answer=text, reasoning="")
    return answer_id


def check_indexes(store: Store) -> None:
    """FTS5's own checks: pages_fts against every page; the partial indexes in themselves."""
    store.conn.execute("INSERT INTO pages_fts (pages_fts, rank) VALUES ('integrity-check', 1)")
    for index in ("pages_cjk", "answers_fts", "answers_cjk"):
        store.conn.execute(f"INSERT INTO {index} ({index}) VALUES ('integrity-check')")


def labels(result: search.SearchResult) -> list[str]:
    return [str(h.label) for h in result.hits if h.kind == "page"]


def test_phrase_prefix_boolean_and_accents(store: Store) -> None:
    doc = make_document(
        [
            contract(1, "The indemnification cap is two million euros."),
            contract(2, "Indemnification is unlimited; the cap does not apply."),
            contract(3, "Le préavis de résiliation est de trois mois."),
            contract(4, "Die Kündigungsfrist beträgt drei Monate, sagte Müller."),
            contract(5, "La cláusula de rescisión se aplica en España."),
        ],
        title="Master agreement",
    )
    store.save_document(doc)
    assert labels(search.search(store, '"indemnification cap"')) == ["1"]
    assert sorted(labels(search.search(store, "indemn*"))) == ["1", "2"]
    assert labels(search.search(store, "indemnification NOT unlimited")) == ["1"]
    assert sorted(labels(search.search(store, "préavis OR kündigungsfrist"))) == ["3", "4"]
    assert labels(search.search(store, "NEAR(cap apply, 3)")) == ["2"]
    # Case and accents do not matter, either way round.
    assert labels(search.search(store, "PREAVIS resiliation")) == ["3"]
    assert labels(search.search(store, "kundigungsfrist mueller")) == ["4"]  # ue is ü too
    assert labels(search.search(store, "kundigungsfrist muller")) == ["4"]
    assert labels(search.search(store, "clausula rescision espana")) == ["5"]
    hit = search.search(store, '"indemnification cap"').hits[0]
    assert hit.document.title == "Master agreement" and hit.page == 1
    assert f"{search.MARK_START}indemnification cap{search.MARK_END}" in hit.snippet
    assert hit.score > 0


def test_ranking_puts_the_densest_page_first(store: Store) -> None:
    doc = make_document(
        [contract(1, "warranty"), contract(2, "warranty warranty warranty warranty")]
    )
    store.save_document(doc)
    assert labels(search.search(store, "warranty")) == ["2", "1"]


def test_answers_are_found_by_question_and_text_once_complete(store: Store) -> None:
    doc = one_page(store, "Payment within thirty days.", "Terms")
    done = answer(store, doc.sha256, "When is payment due?", "Within thirty days [p. 1].")
    thread = store.add_turn(None, doc.sha256, 1, 1, done)
    answer(store, doc.sha256, "Running question zebra?", "zebra so far", status="running")
    answer(store, doc.sha256, "Failed question okapi?", "okapi", status="failed")
    hits = search.search(store, "payment due", scope="answers").hits
    assert [(h.answer_id, h.thread_id, h.question) for h in hits] == [
        (done, thread, "When is payment due?")
    ]
    assert hits[0].documents == (hits[0].document,) and hits[0].document.title == "Terms"
    assert search.search(store, "thirty", scope="answers").hits[0].answer_id == done
    assert search.search(store, "zebra").hits == [] and search.search(store, "okapi").hits == []
    # Both kinds by default; pages only with scope="documents".
    assert {h.kind for h in search.search(store, "thirty").hits} == {"page", "answer"}
    assert {h.kind for h in search.search(store, "thirty", scope="documents").hits} == {"page"}


def test_an_answer_about_a_set_lists_every_document_of_the_set(store: Store) -> None:
    a = make_document([contract(1, "alpha")], title="Master agreement")
    b = make_document([contract(1, "beta")], title="Amendment")
    other = make_document([contract(1, "gamma")], title="Unrelated")
    for doc in (a, b, other):
        store.save_document(doc)
    spec = [
        {"letter": "A", "sha256": a.sha256, "first": 1, "last": 1},
        {"letter": "B", "sha256": b.sha256, "first": 1, "last": 1},
    ]
    key = AnswerKey("set:" + "0" * 64, "Do they agree on notice?", "m", "s1", False, 1, 2, 100)
    answer_id = store.start_answer(key, {"set": spec})
    store.finish_answer(answer_id, status="complete", answer="Both say ninety days.", reasoning="")
    answer(store, other.sha256, "Notice?", "Ninety days elsewhere.")

    hits = [
        h for h in search.search(store, "ninety", scope="answers").hits if h.answer_id == answer_id
    ]
    assert [(d.letter, d.title, d.path) for d in hits[0].documents] == [
        ("A", "Master agreement", a.path),
        ("B", "Amendment", b.path),
    ]
    assert hits[0].document == hits[0].documents[0]
    # Found through either of its documents, and not through another one.
    for doc in (a, b):
        found = search.search(store, "ninety", scope="answers", document=doc.sha256).hits
        assert [h.answer_id for h in found] == [answer_id]

    # search --json (to_json builds it): each document with its letter.
    item = search.to_json(search.search(store, "agree notice"))["hits"][0]
    assert item["documents"] == [
        {"path": a.path, "sha256": a.sha256, "title": "Master agreement", "letter": "A"},
        {"path": b.path, "sha256": b.sha256, "title": "Amendment", "letter": "B"},
    ]
    # A one-document answer lists its document as before.
    single = search.to_json(search.search(store, "elsewhere"))["hits"][0]
    assert single["documents"] == [
        {"path": other.path, "sha256": other.sha256, "title": "Unrelated"}
    ]


def test_a_write_is_searchable_inside_its_own_transaction(store: Store) -> None:
    doc = make_document([contract(1, "aardvark")])
    with store._transaction() as conn:
        conn.execute(
            "INSERT INTO documents (sha256, path, kind, title, page_count, tokens, chars,"
            " empty_pages, size_bytes, extractor, metadata, outline, warnings, created_at,"
            " opened_at) VALUES (?, '/a.pdf', 'pdf', 't', 1, 1, 1, 0, 1, 'x', '{}', '[]',"
            " '[]', 0, 0)",
            [doc.sha256],
        )
        conn.execute(
            "INSERT INTO pages (sha256, number, label, text) VALUES (?, 1, '1', 'an aardvark')",
            [doc.sha256],
        )
        row = conn.execute("SELECT rowid FROM pages_fts WHERE pages_fts MATCH 'aardvark'")
        assert row.fetchone() is not None


def test_saving_again_and_token_counts_keep_the_index_exact(store: Store) -> None:
    doc = make_document([contract(1, "quokka"), contract(2, "wombat")])
    store.save_document(doc)
    store.save_document(doc)  # re-ingested: pages deleted and inserted again
    store.save_page_tokens(doc)  # an update of other columns only
    assert labels(search.search(store, "quokka")) == ["1"]
    check_indexes(store)


def segments(store: Store) -> int:
    """How many segments the page index holds (each has a row in its ``_idx`` table)."""
    return int(store.conn.execute("SELECT count(DISTINCT segid) FROM pages_fts_idx").fetchone()[0])


def test_a_documents_pages_go_into_the_index_as_one_segment(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FTS5 writes what it holds as a segment when a statement starts: a statement per page
    # made a segment per page (and four times the merging, m006 merging 64 at a time).
    store.save_document(make_document([contract(n, f"okapi{n}") for n in range(1, 6)]))
    assert segments(store) == 1
    # A document longer than a statement takes: a segment per statement, every page there.
    monkeypatch.setattr(db, "PAGES_PER_STATEMENT", 2)
    doc = make_document([contract(n, f"tapir{n} tapir") for n in range(1, 6)], title="Long")
    store.save_document(doc)
    assert segments(store) == 1 + 3
    assert sorted(labels(search.search(store, "tapir"))) == ["1", "2", "3", "4", "5"]
    loaded = store.load_document(doc.sha256)
    assert loaded is not None and [p.text for p in loaded.pages] == [p.text for p in doc.pages]
    assert loaded.page_tokens == doc.page_tokens
    check_indexes(store)


def test_removal_removes_pages_and_answers_from_the_index(store: Store) -> None:
    one_page(store, "pelican", "Keep")
    gone = one_page(store, "pelican flamingo", "Gone")
    answer(store, gone.sha256, "Which bird?", "A flamingo.")
    assert len(search.search(store, "flamingo").hits) == 2
    store.remove_document(gone.sha256)
    assert search.search(store, "flamingo").hits == []
    assert [h.document.title for h in search.search(store, "pelican").hits] == ["Keep"]
    check_indexes(store)


def test_one_documents_hits_only(store: Store) -> None:
    one_page(store, "heron", "A")
    b = one_page(store, "heron", "B")
    answer(store, b.sha256, "heron?", "heron")
    hits = search.search(store, "heron", document=b.sha256).hits
    assert {h.document.title for h in hits} == {"B"} and len(hits) == 2


def test_cjk_is_matched_inside_runs_of_ideographs(store: Store) -> None:
    doc = make_document(
        [("1", "本契約の解除については、第十条に定める。"), ("2", "甲方与乙方签订合同条款。")]
    )
    store.save_document(doc)
    answer(store, doc.sha256, "合同是什么?", "这是一份买卖合同。")
    assert labels(search.search(store, "契約の解除")) == ["1"]  # three or more: trigram
    assert labels(search.search(store, "合同")) == ["2"]  # two characters
    assert labels(search.search(store, "乙方 合同")) == ["2"]
    assert labels(search.search(store, "解除 合同")) == []
    hit = search.search(store, "买卖合同", scope="answers").hits[0]
    assert f"{search.MARK_START}买卖合同{search.MARK_END}" in hit.snippet
    assert f"{search.MARK_START}合同{search.MARK_END}" in labels_snippet(store, "合同")


def labels_snippet(store: Store, query: str) -> str:
    return search.search(store, query, scope="documents").hits[0].snippet


@pytest.mark.parametrize("query", ["§ 4.2", "O'Brien", "AND", "4.2*", "a:b", "NEAR(", "(x", "-x"])
def test_odd_queries_give_hits_or_a_clean_empty_result(store: Store, query: str) -> None:
    one_page(store, "See § 4.2 and O'Brien's note x b.")
    result = search.search(store, query)
    assert isinstance(result.hits, list)
    if query in ("§ 4.2", "O'Brien"):
        assert labels(result) == ["1"] and result.read_as is not None


@pytest.mark.parametrize(
    "query", ['"', "*", "", "   ", '"" * ()', "x" * 10_000, "lease\udcff", "\udcff"]
)
def test_queries_without_words_or_too_long_are_one_usage_error(store: Store, query: str) -> None:
    with pytest.raises(search.QueryError) as err:
        search.search(store, query)
    assert err.value.exit_code == 2 and "\n" not in str(err.value)


def _old_database(path: Path) -> None:
    """A database as m001..m004 left it, with pages and answers: before the index."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    old = Migrations(MIGRATIONS.name)
    for migration in MIGRATIONS._migrations:
        if migration.name.startswith("m005"):
            break
        old._migrations.append(migration)
    old.apply(conn)
    for d in range(3):
        conn.execute(
            "INSERT INTO documents (sha256, path, kind, title, page_count) VALUES (?, ?, 'pdf',"
            " ?, 5)",
            [f"{d:064x}", f"/old/{d}.pdf", f"Old {d}"],
        )
        for n in range(1, 6):
            conn.execute(
                "INSERT INTO pages (sha256, number, label, text) VALUES (?, ?, ?, ?)",
                [f"{d:064x}", n, str(n), f"old page {n} of document {d}: capybara{d}{n}"],
            )
        conn.execute(
            "INSERT INTO answers (document_sha, question, answer, status, created_at)"
            " VALUES (?, 'old question?', ?, 'complete', 0)",
            [f"{d:064x}", f"old answer tapir{d}"],
        )
    conn.close()


def test_the_migration_indexes_an_existing_database_in_batches(tmp_path: Path) -> None:
    path = tmp_path / "longdoc.db"
    _old_database(path)
    store = Store(path)  # m005: tables and triggers only, under the schema lock
    assert fts.backlog(store.conn) == 15 + 3
    assert store.conn.execute("SELECT count(*) FROM pages_fts_docsize").fetchone()[0] == 0
    # Written meanwhile: indexed at once by the triggers; removed before the backfill: safe.
    one_page(store, "newcomer")
    store.remove_document(f"{1:064x}")
    seen: list[tuple[int, int]] = []
    assert fts.backfill(path, lambda done, total: seen.append((done, total)), batch=4) == 10 + 2
    assert len(seen) > 3 and seen[-1] == (18, 18)  # progress batch by batch
    assert fts.backlog(store.conn) == 0
    assert labels(search.search(store, "capybara23")) == ["3"]
    assert labels(search.search(store, "capybara13")) == []
    assert labels(search.search(store, "newcomer")) == ["1"]
    assert [h.document.title for h in search.search(store, "tapir2").hits] == ["Old 2"]
    check_indexes(store)
    store.close()


def test_an_m005_database_upgrades_to_the_merge_policy_and_stays_searchable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "longdoc.db"
    conn = sqlite3.connect(str(path), isolation_level=None)
    fts.register(conn)
    upto_m005 = Migrations(MIGRATIONS.name)
    for migration in MIGRATIONS._migrations:
        upto_m005._migrations.append(migration)
        if migration.name.startswith("m005"):
            break
    upto_m005.apply(conn)
    conn.execute(
        "INSERT INTO documents (sha256, path, kind, title, page_count) VALUES (?, '/m5.pdf',"
        " 'pdf', 'M5', 1)",
        [f"{5:064x}"],
    )
    conn.execute(
        "INSERT INTO pages (sha256, number, label, text) VALUES (?, 1, '1', 'a narwhal')",
        [f"{5:064x}"],
    )
    conn.close()
    store = Store(path)  # m006 runs
    config = dict(store.conn.execute("SELECT k, v FROM pages_fts_config").fetchall())
    assert config["automerge"] == 0 and config["crisismerge"] == 64
    store.save_document(make_document([contract(1, "a second narwhal")]))
    assert len(search.search(store, "narwhal").hits) == 2
    check_indexes(store)
    store.close()


def test_search_completes_the_backfill_first(tmp_path: Path) -> None:
    path = tmp_path / "longdoc.db"
    _old_database(path)
    store = Store(path)
    assert labels(search.search(store, "capybara05")) == ["5"]
    assert fts.backlog(store.conn) == 0
    store.close()


# --- the CLI ------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_search_json_remove(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc_file = home.parent / "deed.txt"
    doc_file.write_text("The easement runs along the \x1b[31m northern \x1b[0m boundary.\n")
    assert run(capsys, "ingest", str(doc_file))[0] == 0
    code, out, _ = run(capsys, "search", "easement", "--json")
    data = json.loads(out)
    assert code == 0 and data["query"] == "easement"
    (hit,) = data["hits"]
    assert set(hit) == {
        "kind", "path", "sha256", "title", "page", "label", "answer_id", "thread_id",
        "question", "asked_at", "snippet", "score",
    }  # fmt: skip
    assert hit["kind"] == "page" and hit["path"] == str(doc_file) and hit["page"] == 1
    code, out, _ = run(capsys, "search", "northern")
    assert code == 0 and "\x1b" not in out and "⟦northern⟧" in out
    code, out, err = run(capsys, "search", "nothing-like-it", "--json")
    assert code == 0 and json.loads(out)["hits"] == []
    code, out, err = run(capsys, "search", "nothingatall")
    assert code == 0 and out == "" and "No matches" in err
    code, out, err = run(capsys, "search", "easement", "--document", str(home / "nope.pdf"))
    assert code == 8 and err.startswith("Error: ") and err.count("\n") == 1
    code, _, err = run(capsys, "search", '"')
    assert code == 2 and err.startswith("Error: ") and "Traceback" not in err
    code, out, _ = run(capsys, "search", "easement", "--document", str(doc_file), "--json")
    assert len(json.loads(out)["hits"]) == 1
    code, out, _ = run(capsys, "remove", str(doc_file), str(home / "nope.pdf"))
    assert code == 8 and "Removed" in out
    code, out, _ = run(capsys, "search", "easement", "--json")
    assert json.loads(out)["hits"] == []


def test_a_search_process_imports_only_what_it_needs(home: Path) -> None:
    """`longdoc search` stays close to a bare Python: no sqlite-utils, Qt, OpenAI client,
    tokenizer, urllib or the document readers (bench/bench_search.py measures the time)."""
    import subprocess
    import sys

    from desktop.config import db_path

    Store(db_path()).close()  # an existing database: no migrations to run
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "desktop.cli.main", "search", "x", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "LONGDOC_HOME": str(home)},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()}
    for heavy in (
        "sqlite_utils", "PySide6", "openai", "tiktoken", "urllib.request", "pypdfium2",
        "desktop.documents.ingest",
    ):  # fmt: skip
        assert heavy not in imported, f"{heavy} imported by `longdoc search`"


def test_cli_bad_input_is_one_error_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc_file = home.parent / "lease.txt"
    doc_file.write_text("The lease ends in May.\n")
    assert run(capsys, "ingest", str(doc_file))[0] == 0
    # A folder as --document; bytes in argv that are not UTF-8 ($'lease\\xff' in bash).
    for argv in (["lease", "--document", str(home.parent)], ["lease\udcff"]):
        code, out, err = run(capsys, "search", *argv)
        assert (code, out) == (2, "") and err.startswith("Error: ") and err.count("\n") == 1
        assert "Traceback" not in err and "sqlite" not in err.lower()
