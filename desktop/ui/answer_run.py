"""One answer on its way: the worker task, Stop, and the end of it (stored or failed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from desktop.answering.service import Question
from desktop.ui import tasks
from desktop.ui.session import Session


class AnswerRun(QObject):
    """Runs ``Answerer.ask`` off the UI thread. A stopped run gives the panel back at once
    and ends behind it (the core stores what arrived); only the current run reports."""

    succeeded = Signal()
    failed = Signal(object)  # the exception that ended the current run
    stale_ended = Signal()  # a run stopped earlier has ended (the history may have changed)

    def __init__(self, session: Session, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.task: tasks.Task[None] | None = None
        # Tasks stopped by the user: the panel is given back at once, they end behind it.
        self._stopped: set[tasks.Task[None]] = set()
        self.question: Question | None = None

    @property
    def busy(self) -> bool:
        """An answer is on its way."""
        return self.task is not None and not self.task.done

    def start(self, question: Question, events: Callable[[list[Any]], None]) -> None:
        """Ask ``question``; ``events`` takes each batch of the current run's events."""
        self.question = question
        session = self.session
        task = tasks.run_stream(
            lambda cancel: session.answerer().ask(question, cancel),
            receiver=self,
            # Once stopped, what still arrives is stored by the core, not shown.
            events=lambda batch: events(batch) if task is self.task else None,
            success=lambda _: self._on_ended(task, None),
            failure=lambda exc: self._on_ended(task, exc),
            name="answer",
        )
        self.task = task

    def stop(self) -> bool:
        """Cancel the request (the connection shut down, the server told to abort); False
        when nothing was running."""
        task = self.task
        if task is None or task.done:
            return False
        task.cancel()
        self.task = None
        self._stopped.add(task)
        task.finished.connect(lambda: self._stopped.discard(task))
        return True

    def _on_ended(self, task: tasks.Task[None], exc: BaseException | None) -> None:
        if task is not self.task:  # stopped by the user, then it ended anyway
            self.stale_ended.emit()
            return
        self.task = None
        if exc is None:
            self.succeeded.emit()
        else:
            self.failed.emit(exc)

    def shutdown(self, timeout_ms: int) -> None:
        """Cancel every run and wait until the core has stored them (window closing)."""
        running = [t for t in (self.task, *self._stopped) if t is not None and not t.done]
        for task in running:
            task.cancel()
            task.detach()
        self.task = None
        if running:
            tasks.wait_all(timeout_ms)
