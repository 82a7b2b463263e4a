"""The rules of a conversation about a document, for the CLI and the app alike (no Qt).

A *thread* is the complete answers asked one after another about one document's pages
(or a set's); the next question follows up on the thread shown, after exactly its turns:

- which thread a question joins: ``--thread ID``, the document's last thread
  (``--follow-up``, or the app reopening a document), a thread up to a picked answer, or
  none (a new thread);
- which pages: a follow-up keeps the thread's pages; asking about others is refused
  (:class:`OtherPages`, remedy: a new thread), never mixed into the thread;
- what a follow-up may change: the question and thinking; not the pages or the document;
- *Ask again* on a turn asks after the same earlier turns, so the store branches a new
  thread from them and the old one stays as it was (``Store.add_turn``);
- a thread that no longer fits is refused, never shortened (:func:`refuse_if_too_long`).

Only complete answers are turns (a truncated, stopped or failed answer is not), so a
thread holds exactly what each of its answers saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from desktop.answering.budget import Budget, plan_budget
from desktop.answering.pages import PageRange
from desktop.answers import StoredAnswer, Thread
from desktop.documents.model import Document
from desktop.errors import OtherPages, ThreadTooLong, UsageError
from desktop.store.db import Store


def covers(thread: Thread, pages: PageRange | None) -> bool:
    """Does a follow-up about ``pages`` (None: the thread's own) keep the thread's pages?"""
    return pages is None or (pages.first, pages.last) == (thread.first_page, thread.last_page)


def follow_up_pages(thread: Thread, asked: PageRange | None, page_count: int) -> PageRange:
    """The pages a follow-up is about: the thread's; another range is refused, not mixed."""
    pages = PageRange(thread.first_page, thread.last_page)
    if not covers(thread, asked):
        raise OtherPages(thread.id, pages.describe(page_count))
    return pages


def check_document(thread: Thread, doc: Document) -> None:
    """A follow-up must be about the thread's document (a set: its first document)."""
    if thread.document_sha != doc.sha256:
        raise UsageError(f"Thread {thread.id} is about another document, not {doc.path}.")


def choose_thread(
    store: Store, doc: Document, thread_id: int | None, follow_up: bool, shown: str = ""
) -> Thread | None:
    """The thread a question from the command line continues: ``thread_id``'s, else with
    ``follow_up`` the document's last one (None when there is none yet), else None.
    ``shown`` is the document's name as the user gave it."""
    if thread_id is not None:
        thread = store.get_thread(thread_id)
        if thread is None:
            raise UsageError(
                f"There is no thread {thread_id}; `longdoc ask --json` prints each "
                "answer's thread_id."
            )
        if thread.document_sha != doc.sha256:
            raise UsageError(
                f"Thread {thread_id} is about another document, not {shown or doc.path}; "
                "use --follow-up to continue the last thread on this one."
            )
        return thread
    if follow_up:
        return store.last_thread(doc.sha256)
    return None


def with_turn(asked: Thread | None, thread_id: int, answer: StoredAnswer) -> Thread:
    """The thread after ``answer`` became its latest turn (``thread_id`` as the core stored
    it): the turns the question was asked after, then the answer."""
    earlier = asked.turns if asked is not None else []
    return Thread(
        thread_id,
        answer.document_sha,
        answer.first_page,
        answer.last_page,
        [*earlier, answer],
        more_documents=answer.more_documents,
    )


def up_to(thread: Thread, answer_id: int) -> Thread:
    """``thread`` as it was when ``answer_id`` was its latest turn (a picked answer: the next
    question follows up on it; after later turns, the store branches)."""
    ids = [t.id for t in thread.turns]
    return replace(thread, turns=thread.turns[: ids.index(answer_id) + 1])


@dataclass(frozen=True)
class Repeat:
    """*Ask again*: the same question, pages and thinking, after the same earlier turns
    (``thread``: them, or None for a new thread), never from the cache."""

    question: str
    pages: PageRange | None  # None: the whole document
    thinking: bool
    thread: Thread | None


def ask_again(answer: StoredAnswer, shown: Thread | None, page_count: int) -> Repeat:
    """What asking ``answer`` again asks. In the thread shown: after the turns before it
    (the old thread stays as it was: the store starts a new one from those turns); not a
    turn of it: a new thread."""
    whole = (answer.first_page, answer.last_page) == (1, page_count)
    pages = None if whole else PageRange(answer.first_page, answer.last_page)
    thread = None
    ids = [t.id for t in shown.turns] if shown is not None else []
    if shown is not None and answer.id in ids:
        thread = replace(shown, turns=shown.turns[: ids.index(answer.id)])
    return Repeat(answer.question, pages, answer.thinking, thread)


def refuse_if_too_long(
    path: str, thread: Thread, needed: int, alone: int, budget: Budget, reserve: int
) -> None:
    """Raise ThreadTooLong when only the earlier turns make the prompt too long (``alone``:
    the prompt's tokens without them). Earlier turns are never dropped."""
    if plan_budget(alone, budget.limits, reserve).fits:
        raise ThreadTooLong(
            path,
            thread.id,
            len(thread.turns),
            needed,
            budget.prompt_limit,
            budget.context_length,
            alone,
        )


def turn_ids(thread: Thread | None) -> Sequence[int]:
    """The answer ids of a thread's turns, oldest first (none for a new thread)."""
    return [t.id for t in thread.turns] if thread is not None else []
