"""The core finishes an answer: one transaction for answer, citations and turn; a cut
answer is truncated; reads write nothing; the ``ask --json`` object comes from one module."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from desktop.answering.ask_json import ask_json, document_json
from desktop.answering.events import Event, Stored
from desktop.answering.service import Question, status_for
from desktop.answers import AnswerStatus, QuoteStatus
from desktop.documents.model import Document
from desktop.errors import StorageError
from desktop.store import db as store_db
from desktop.store.db import AnswerKey, Store
from tests.conftest import API_KEY, make_document
from tests.support.answers import answerer_for
from tests.support.cli import longdoc
from tests.support.schemas import ASK_JSON_KEYS
from tests.support.sglang_server import FakeSGLang

PAGES = [
    ("i", "Preface. This contract is between Alpha Ltd and Beta GmbH."),
    ("1", "Term. The agreement runs for 24 months from the effective date."),
    ("2", "Liability is capped at EUR 2,000,000 except for gross negligence."),
]
QUOTED = 'The cap: "Liability is capped at EUR 2,000,000" [p. 2], and the term [p. 1].'


def chats(server: FakeSGLang) -> int:
    return sum(r.path.endswith("/chat/completions") for r in server.requests)


def final(events: list[Event]) -> Stored:
    last = events[-1]
    assert isinstance(last, Stored)
    return last


def stored_document(store: Store) -> Document:
    doc = make_document(PAGES)
    store.save_document(doc)
    return doc


def test_finish_reasons_map_to_statuses() -> None:
    assert status_for("stop") is AnswerStatus.COMPLETE
    assert status_for("length") is AnswerStatus.TRUNCATED
    assert status_for("abort") is AnswerStatus.INCOMPLETE
    # Stored as the strings the answers table always had.
    assert AnswerStatus.COMPLETE == "complete" and AnswerStatus.TRUNCATED.value == "truncated"


def test_cut_while_reasoning_is_truncated_never_a_turn_nor_a_cache_hit(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = stored_document(store)
    sglang.behaviour.update(reasoning_tokens=400)
    answerer = answerer_for(sglang, store)
    question = Question(doc, "What is the term?", max_tokens=64)
    cut = final(list(answerer.ask(question)))
    assert cut.answer.status is AnswerStatus.TRUNCATED and cut.answer.truncated
    assert cut.answer.finish_reason == "length"
    assert cut.answer.answer == "" and cut.answer.reasoning
    assert cut.thread_id is None
    assert store.last_thread(doc.sha256) is None
    row = store.get_answer(cut.answer.id)
    assert row is not None and row.status is AnswerStatus.TRUNCATED
    # Asking again asks the server again: a truncated answer is never served.
    again = final(list(answerer.ask(Question(doc, "What is the term?", max_tokens=64))))
    assert not again.from_cache
    assert chats(sglang) == 2
    data = ask_json(again, "What is the term?", document_json(doc, doc.path))
    assert data["truncated"] is True and data["thread_id"] is None


def test_answer_citations_and_turn_are_stored_together_and_yielded(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = stored_document(store)
    sglang.behaviour.update(answer_text=QUOTED)
    done = final(list(answerer_for(sglang, store).ask(Question(doc, "Cap?", thinking=False))))
    assert done.answer.status is AnswerStatus.COMPLETE
    assert done.answer.citations is not None
    statuses = [c.status for c in done.answer.citations.items]
    assert statuses == [QuoteStatus.VERIFIED, QuoteStatus.UNQUOTED]
    # What was yielded is what was stored (built, not read back).
    row = store.get_answer(done.answer.id)
    assert row == done.answer
    thread = store.last_thread(doc.sha256)
    assert thread is not None and thread.id == done.thread_id
    assert [t.id for t in thread.turns] == [done.answer.id]
    assert thread.documents == (doc.sha256,)


def test_a_failure_while_finishing_leaves_nothing_half_written(
    sglang: FakeSGLang, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = stored_document(store)
    sglang.behaviour.update(answer_text=QUOTED)

    def disk_full(*_args: object) -> int:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store_db, "_add_turn", disk_full)  # the last write of the three
    with pytest.raises(StorageError, match="disk is full"):
        list(answerer_for(sglang, store).ask(Question(doc, "Cap?", thinking=False)))
    [row] = store.answers_for(doc.sha256)
    # Neither the answer's outcome nor its citations landed without the turn.
    assert row.status is AnswerStatus.RUNNING and row.answer == ""
    assert row.citations is None
    assert store.last_thread(doc.sha256) is None


def test_only_a_complete_answer_may_become_a_turn(store: Store) -> None:
    doc = stored_document(store)
    key = AnswerKey(doc.sha256, "Q?", "m", "1", True, 1, 3, 100)
    answer_id = store.start_answer(key)
    turn = store_db.NewTurn(None, doc.sha256, 1, 3)
    with pytest.raises(ValueError, match="truncated answer is not a turn"):
        store.finish_answer(answer_id, status="truncated", answer="", reasoning="", turn=turn)
    thread_id = store.finish_answer(
        answer_id, status="complete", answer="A", reasoning="", turn=turn
    )
    assert thread_id is not None and store.find_answer(key) is not None


def test_reads_write_nothing_and_the_ask_writes_what_they_found(
    sglang: FakeSGLang, store: Store
) -> None:
    doc = stored_document(store)
    # As if stored by an older layout: no per-page counts.
    store.conn.execute("UPDATE pages SET tokens = NULL")
    old = store.load_document(doc.sha256)
    assert old is not None and old.page_tokens == []
    answerer = answerer_for(sglang, store)
    before = store.conn.total_changes
    question = Question(old, "What is the term?")
    assert answerer.lookup(question) is None  # asks the server its model
    answerer.plan(question)  # counts the pages
    assert store.conn.total_changes == before
    assert store.remembered_model(sglang.url) is None
    final(list(answerer.ask(question)))
    assert store.remembered_model(sglang.url) == sglang.model_name
    again = store.load_document(doc.sha256)
    assert again is not None and again.page_tokens == old.page_tokens


def test_a_single_document_answer_keeps_the_json_it_had(sglang: FakeSGLang, store: Store) -> None:
    doc = stored_document(store)
    done = final(list(answerer_for(sglang, store).ask(Question(doc, "Term?"))))
    data = ask_json(done, "Term?", document_json(doc, "x.pdf"))
    assert tuple(data) == ASK_JSON_KEYS
    assert list(data["document"]) == ["path", "sha256", "title", "pages", "tokens"]
    assert "truncated" not in data and data["thread_id"] == done.thread_id
    # Extension points: present only when given.
    more = document_json(doc, "x.pdf", warnings=["w"], unread_pages=[2])
    assert more["warnings"] == ["w"] and more["unread_pages"] == [2]
    assert "documents" in ask_json(done, "Term?", more, documents=[more, more])


def cli_ask(home: Path, server: FakeSGLang, *args: str) -> subprocess.CompletedProcess[str]:
    return longdoc("ask", *args, home=home, server=server, api_key=API_KEY)


def test_cli_prints_what_came_and_one_warning_for_a_truncated_answer(
    sglang: FakeSGLang, tmp_path: Path
) -> None:
    text = tmp_path / "contract.txt"
    text.write_text("The agreement runs for 24 months.\n" * 20)
    sglang.behaviour.update(answer_tokens=300)
    plain = cli_ask(tmp_path, sglang, str(text), "Term?", "--no-think", "--max-tokens", "40")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip()
    warnings = [ln for ln in plain.stderr.splitlines() if ln.startswith("Warning:")]
    assert len(warnings) == 1 and "--max-tokens" in warnings[0]
    assert "(thread " not in plain.stderr
    sglang.behaviour.update(answer_tokens=None, reasoning_tokens=300)
    cut = cli_ask(tmp_path, sglang, str(text), "Term?", "--think", "--max-tokens", "40", "--json")
    assert cut.returncode == 0, cut.stderr
    data = json.loads(cut.stdout)
    assert data["truncated"] is True and data["thread_id"] is None
    assert data["answer"] == "" and data["finish_reason"] == "length"
    [warning] = [ln for ln in cut.stderr.splitlines() if ln.startswith("Warning:")]
    assert "still reasoning" in warning and "thinking off" in warning


def test_the_answer_model_lives_in_answering_and_an_answer_knows_its_key(
    sglang: FakeSGLang, store: Store
) -> None:
    import desktop.answering as answering
    from desktop import answers

    # The public home re-exports the one definition (the store builds the same classes).
    for name in answering.__all__:
        assert getattr(answering, name) is getattr(answers, name)
    assert answering.StoredAnswer is store_db.StoredAnswer
    doc = stored_document(store)
    [*_, done] = answerer_for(sglang, store).ask(Question(doc, "Cap?", thinking=False))
    assert isinstance(done, Stored)
    read_back = store.find_answer(done.answer.key)
    # Built in the ask and read back from its row: the same answer, under the same key.
    assert read_back == done.answer
    assert read_back is not None and read_back.key.history == done.answer.history
