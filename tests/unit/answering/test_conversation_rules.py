"""The conversation rules (Qt-free, shared by the CLI and the app) and errors' remedies."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from desktop.answering import conversation
from desktop.answering.pages import PageRange
from desktop.answers import StoredAnswer, Thread
from desktop.errors import (
    AuthenticationFailed,
    DatabaseDamaged,
    DocumentTooLarge,
    LongdocError,
    ModelNotServed,
    NoServerConfigured,
    OtherPages,
    Remedy,
    ServerUnreachable,
    StorageError,
    ThreadTooLong,
    UsageError,
    remedy_for,
)
from desktop.store.db import AnswerKey, NewTurn, Store
from tests.conftest import make_document
from tests.support.answers import stored_answer

PAGES = [("i", "Preface."), ("1", "Term: 24 months."), ("2", "Cap: EUR 2,000,000.")]


def answer(answer_id: int, question: str = "Q?", first: int = 1, last: int = 3) -> StoredAnswer:
    return stored_answer(answer_id, AnswerKey("sha", question, "m", "1", False, first, last, 100))


THREAD = Thread(7, "sha", 1, 3, [answer(1), answer(2), answer(3)])


def test_a_follow_up_keeps_the_threads_pages_and_refuses_others() -> None:
    assert conversation.covers(THREAD, None)
    assert conversation.covers(THREAD, PageRange(1, 3))
    assert not conversation.covers(THREAD, PageRange(2, 3))
    assert conversation.follow_up_pages(THREAD, None, 3) == PageRange(1, 3)
    with pytest.raises(OtherPages) as refused:
        conversation.follow_up_pages(THREAD, PageRange(2, 3), 3)
    exc = refused.value
    assert exc.remedy is Remedy.NEW_THREAD and exc.exit_code == 2
    assert "--follow-up/--thread" in str(exc)  # the CLI's words
    assert "--" not in exc.in_app and "new thread" in exc.in_app  # the app's


def test_a_follow_up_is_about_the_threads_document() -> None:
    other = make_document(PAGES)
    with pytest.raises(UsageError, match="another document"):
        conversation.check_document(THREAD, other)


def test_the_thread_after_an_answer_and_up_to_a_picked_one() -> None:
    new = answer(4)
    after = conversation.with_turn(THREAD, 9, new)
    assert after.id == 9 and [t.id for t in after.turns] == [1, 2, 3, 4]
    assert [t.id for t in conversation.with_turn(None, 5, new).turns] == [4]
    assert [t.id for t in conversation.up_to(THREAD, 2).turns] == [1, 2]


def test_ask_again_asks_after_the_same_earlier_turns_without_touching_the_thread() -> None:
    middle = THREAD.turns[1]
    again = conversation.ask_again(middle, THREAD, 3)
    assert again.question == middle.question and again.pages is None
    assert again.thread is not None and again.thread.id == THREAD.id
    assert [t.id for t in again.thread.turns] == [1]
    assert [t.id for t in THREAD.turns] == [1, 2, 3]  # the shown thread is as it was
    # An answer that is not a turn of the shown thread: a new thread, its own pages.
    alone = conversation.ask_again(answer(8, first=2, last=3), THREAD, 3)
    assert alone.thread is None and alone.pages == PageRange(2, 3)


def test_ask_again_branches_in_the_store_and_leaves_the_old_thread(store: Store) -> None:
    doc = make_document(PAGES)
    store.save_document(doc)
    ids = []
    thread_id = None
    for n in range(3):
        key = AnswerKey(doc.sha256, f"Q{n}?", "m", "1", False, 1, 3, 100, history=str(n))
        answer_id = store.start_answer(key)
        turn = conversation.turn_ids(store.get_thread(thread_id) if thread_id else None)
        thread_id = store.finish_answer(
            answer_id,
            status="complete",
            answer=f"A{n}",
            reasoning="",
            turn=store_turn(thread_id, doc.sha256, turn),
        )
        ids.append(answer_id)
    assert thread_id is not None
    thread = store.get_thread(thread_id)
    assert thread is not None
    again = conversation.ask_again(thread.turns[1], thread, 3)
    assert again.thread is not None
    key = AnswerKey(doc.sha256, "Q1?", "m", "1", False, 1, 3, 100, history="again")
    new_id = store.start_answer(key)
    branch = store.finish_answer(
        new_id,
        status="complete",
        answer="A1 again",
        reasoning="",
        turn=store_turn(again.thread.id, doc.sha256, conversation.turn_ids(again.thread)),
    )
    assert branch != thread_id
    kept = store.get_thread(thread_id)
    assert kept is not None and [t.id for t in kept.turns] == ids
    new = store.get_thread(branch or 0)
    assert new is not None and [t.id for t in new.turns] == [ids[0], new_id]


def store_turn(thread_id: int | None, sha: str, after: Sequence[int]) -> NewTurn:
    return NewTurn(thread_id, sha, 1, 3, tuple(after))


def test_choose_thread_follows_the_flags(store: Store) -> None:
    doc = make_document(PAGES)
    store.save_document(doc)
    assert conversation.choose_thread(store, doc, None, follow_up=False) is None
    assert conversation.choose_thread(store, doc, None, follow_up=True) is None
    with pytest.raises(UsageError, match="There is no thread 3"):
        conversation.choose_thread(store, doc, 3, follow_up=False)
    key = AnswerKey(doc.sha256, "Q?", "m", "1", False, 1, 3, 100)
    answer_id = store.start_answer(key)
    store.finish_answer(answer_id, status="complete", answer="A", reasoning="")
    made = store.add_turn(None, doc.sha256, 1, 3, answer_id)
    chosen = conversation.choose_thread(store, doc, None, follow_up=True)
    assert chosen is not None and chosen.id == made
    other = make_document([("1", "Another document.")])
    with pytest.raises(UsageError, match=r"another document, not other\.pdf"):
        conversation.choose_thread(store, other, made, False, "other.pdf")


def test_errors_carry_what_the_user_can_do() -> None:
    too_long = ThreadTooLong("r.pdf", 7, 12, 263_410, 260_095, 262_144, 231_988)
    cases: list[tuple[LongdocError, Remedy | None]] = [
        (too_long, Remedy.NEW_THREAD),
        (DocumentTooLarge("r.pdf", 100, 50, 64, 4), Remedy.CHOOSE_PAGES),
        (ServerUnreachable("Cannot reach the server."), Remedy.START_SERVER),
        (NoServerConfigured("No server configured."), Remedy.START_SERVER),
        (AuthenticationFailed("The server refused the API key."), Remedy.OPEN_SETTINGS),
        (ModelNotServed("No model 'x'."), Remedy.OPEN_SETTINGS),
        (StorageError("r.db: the disk is full"), Remedy.CHECK_WORKSTATION),
        (DatabaseDamaged("r.db", "malformed"), Remedy.CHECK_WORKSTATION),
        (UsageError("bad flag"), None),
    ]
    for exc, remedy in cases:
        assert exc.remedy is remedy, type(exc).__name__
    # Starting the server helps only the server Longdoc manages; another is set in Settings.
    unreachable = ServerUnreachable("Cannot reach the server.")
    assert remedy_for(unreachable, managed=True) is Remedy.START_SERVER
    assert remedy_for(unreachable, managed=False) is Remedy.OPEN_SETTINGS
    assert remedy_for(ValueError("bug"), managed=True) is None
    # One place words each: the CLI's sentence names flags, the app's does not.
    assert "--follow-up" in str(too_long) and "--" not in too_long.in_app
    assert "Ctrl+N" in too_long.in_app
    assert unreachable.in_app == "The server is not ready: Cannot reach the server."
    assert {r.label for r in Remedy} >= {"Start the server", "Settings…", "New thread"}
    assert Remedy.CHECK_WORKSTATION.workstation and not Remedy.NEW_THREAD.workstation
