"""Which conversation the next question continues: the last thread of a document shown
as it was left, an answer joining its thread, an answer picked from the history."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from desktop.answering import conversation as rules
from desktop.answering.threads import Thread
from desktop.answers import StoredAnswer
from desktop.documents.model import Document
from desktop.ui import tasks
from desktop.ui.answer_view import AnswerView
from desktop.ui.session import Session
from desktop.ui.thread_selector import ThreadSelector


class ThreadFlow(QObject):
    """Shows threads in the panel's parts: earlier turns in ``selector``, the latest
    turn in ``answer_view``, the thread's pages through ``set_pages``."""

    def __init__(
        self,
        session: Session,
        selector: ThreadSelector,
        answer_view: AnswerView,
        document: Callable[[], Document | None],
        idle: Callable[[], bool],
        shown: Callable[[StoredAnswer], None],
        set_pages: Callable[[str], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self.selector = selector
        self.answer_view = answer_view
        self._document = document
        self._idle = idle  # no answer running, the window not closing
        self._shown = shown  # an answer was put in the answer view (check its quotes)
        self._set_pages = set_pages  # the pages box (its text), and a recount
        self._opening = 0  # the latest open_at: an earlier one's thread arrives stale

    @property
    def current(self) -> Thread | None:
        """The conversation a question continues; None: the next question starts one."""
        return self.selector.current

    def set(self, thread: Thread | None) -> None:
        """Continue ``thread`` from now on (None: the next question starts one)."""
        self.selector.set_thread(thread, not self._idle())

    def show(self, thread: Thread) -> None:
        """A loaded thread: earlier turns above, the latest one as the current answer."""
        doc = self._document()
        self.set(thread)
        if doc is None or not thread.turns:
            self.selector.show_turns([])
            return
        *earlier, latest = thread.turns
        self.selector.show_turns(earlier)
        if self.answer_view.answer is None or self.answer_view.answer.id != latest.id:
            self.answer_view.show_answer(latest, len(doc.pages))
            self._shown(latest)
        self.selector.room_for_answer()
        whole = (thread.first_page, thread.last_page) == (1, len(doc.pages))
        self._set_pages("" if whole else f"{thread.first_page}-{thread.last_page}")

    def load_last(self) -> None:
        """Show the open document's last thread, as it was left (off the UI thread)."""
        doc = self._document()
        if doc is None:
            return
        store = self.session.store

        def loaded(thread: Thread | None) -> None:
            # Still this document, and nothing asked or started meanwhile?
            idle = self._idle() and self.current is None
            if self._document() is doc and idle and thread:
                self.show(thread)

        tasks.run_call(
            lambda: store.last_thread(doc.sha256),
            receiver=self,
            success=loaded,
            name="last thread",
        )

    def join(self, asked: Thread | None, thread_id: int, answer: StoredAnswer) -> None:
        """The answer became the thread's latest turn (as the core stored it, after the
        turns it was ``asked`` after): shown at once, so a question typed next follows up."""
        self.show(rules.with_turn(asked, thread_id, answer))

    def open_at(self, answer: StoredAnswer) -> None:
        """An answer picked from the history: its thread up to it, so the next question
        follows up on what is shown (after later turns, the core starts a branch).

        The thread is looked up off the UI thread, and dropped if by then another answer,
        document or question came."""
        thread = self.current
        if thread is not None and thread.turns and thread.turns[-1].id == answer.id:
            return
        doc = self._document()
        store = self.session.store
        self._opening += 1
        opening = self._opening

        def found(thread: Thread | None) -> None:
            shown = self.answer_view.answer
            still = shown is not None and shown.id == answer.id and self._document() is doc
            if opening != self._opening or not still or not self._idle():
                return  # stale: the user moved on meanwhile
            if thread is not None:  # None: not a turn (stopped or failed): the thread stays
                self.show(rules.up_to(thread, answer.id))

        tasks.run_call(
            lambda: store.thread_with_answer(answer.id),  # one indexed query
            receiver=self,
            success=found,
            name="thread of an answer",
        )

    def asking(self, thread: Thread | None) -> None:
        """A question was asked after ``thread``'s turns: they stay in view, the latest
        (the previous answer) with room to read while the new answer comes."""
        self.selector.show_turns(thread.turns if thread is not None else [])
        if thread is not None and thread.turns:
            self.selector.room_while_waiting()

    def clear(self) -> None:
        """No thread: the next question starts one, no earlier turns shown."""
        self.set(None)
        self.selector.show_turns([])
