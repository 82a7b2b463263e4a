"""The one way the GUI runs work off the UI thread (in the manner of Anki's ``QueryOp``).

``run_call`` runs a core callable, ``run_stream`` iterates a core generator; both in the
shared ``QThreadPool``. Workers never touch widgets: results, events and errors cross to
the UI thread only through queued signals on a ``Task`` object that lives there, and the
callbacks (``success``, ``failure``, ``events``) always run on the UI thread.

Streams are coalesced: the worker appends events to a locked buffer and posts one signal
only when the buffer was empty, so a server sending thousands of tokens per second costs
the UI thread one wake-up per drain, not one per token (see bench/bench_ui_stream.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

log = logging.getLogger("longdoc.ui.tasks")

T = TypeVar("T")

# Every task still running, so Python does not collect a Task whose worker is alive.
_running: set[Task[Any]] = set()


class Task(QObject, Generic[T]):
    """A handle on one background job; lives on the UI thread, owned by the caller."""

    # Emitted from the worker thread; received here, on the UI thread (queued).
    _result_ready = Signal(object)
    _error_raised = Signal(object)
    _events_pending = Signal()
    # Public, on the UI thread, after the callbacks ran.
    finished = Signal()

    def __init__(
        self,
        success: Callable[[T], None] | None,
        failure: Callable[[BaseException], None] | None,
        events: Callable[[list[Any]], None] | None = None,
        name: str = "task",
    ) -> None:
        super().__init__()
        self.name = name
        self.cancel_event = threading.Event()
        self._success = success
        self._failure = failure
        self._events = events
        self._buffer: list[Any] = []
        self._lock = threading.Lock()
        self._done = False
        self._result_ready.connect(self._on_result_ready)
        self._error_raised.connect(self._on_error_raised)
        self._events_pending.connect(self._on_events_pending)

    # --- called by the owner (UI thread) ---------------------------------------------

    def cancel(self) -> None:
        """Ask the core to stop (the generator notices the event and stores what it has)."""
        self.cancel_event.set()

    @property
    def done(self) -> bool:
        """True once ``success`` or ``failure`` has been delivered."""
        return self._done

    def detach(self) -> None:
        """Drop the callbacks: the widget that asked is going away; the work still ends."""
        self._success = None
        self._failure = None
        self._events = None

    # --- called by the worker thread ------------------------------------------------

    def _post_event(self, event: Any) -> None:
        with self._lock:
            wake = not self._buffer
            self._buffer.append(event)
        if wake:
            self._events_pending.emit()

    # --- UI thread -----------------------------------------------------------------

    def _take_events(self) -> list[Any]:
        with self._lock:
            batch, self._buffer = self._buffer, []
        return batch

    @Slot()
    def _on_events_pending(self) -> None:
        batch = self._take_events()
        if batch and self._events is not None:
            self._events(batch)

    @Slot(object)
    def _on_result_ready(self, result: Any) -> None:
        self._on_events_pending()  # events posted just before the end come first
        self._finish()
        if self._success is not None:
            self._success(result)
        self.finished.emit()

    @Slot(object)
    def _on_error_raised(self, exc: BaseException) -> None:
        self._on_events_pending()
        self._finish()
        if self._failure is not None:
            self._failure(exc)
        else:
            log.error("background %s failed: %s", self.name, exc, exc_info=exc)
        self.finished.emit()

    def _finish(self) -> None:
        self._done = True
        _running.discard(self)


class _Worker(QRunnable):
    """Runs in the pool; talks to its Task only through signals and the locked buffer."""

    def __init__(self, task: Task[Any], job: Callable[[], Any], stream: bool) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._task = task
        self._job = job
        self._stream = stream

    def run(self) -> None:
        task = self._task
        try:
            if self._stream:
                generator: Iterator[Any] = self._job()
                try:
                    for event in generator:
                        task._post_event(event)
                finally:
                    close = getattr(generator, "close", None)
                    if close is not None:
                        close()
                result: Any = None
            else:
                result = self._job()
        except BaseException as exc:
            task._error_raised.emit(exc)
        else:
            task._result_ready.emit(result)


def pool() -> QThreadPool:
    """The pool every task runs in."""
    return QThreadPool.globalInstance()


def run_call(
    job: Callable[[], T],
    *,
    success: Callable[[T], None] | None = None,
    failure: Callable[[BaseException], None] | None = None,
    name: str = "call",
) -> Task[T]:
    """Run ``job()`` off the UI thread; ``success(result)`` or ``failure(exc)`` on it."""
    task: Task[T] = Task(success, failure, name=name)
    _running.add(task)
    pool().start(_Worker(task, job, stream=False))
    return task


def run_stream(
    start: Callable[[threading.Event], Iterator[Any]],
    *,
    events: Callable[[list[Any]], None],
    success: Callable[[None], None] | None = None,
    failure: Callable[[BaseException], None] | None = None,
    name: str = "stream",
) -> Task[None]:
    """Iterate ``start(cancel_event)`` off the UI thread, delivering events in batches.

    ``events(batch)`` runs on the UI thread with every event that arrived since the last
    call, in order. ``Task.cancel()`` sets the event the core generator watches.
    """
    task: Task[None] = Task(success, failure, events, name=name)
    _running.add(task)
    pool().start(_Worker(task, lambda: start(task.cancel_event), stream=True))
    return task


def running_tasks() -> list[Task[Any]]:
    """Tasks not finished yet (for a clean shutdown)."""
    return list(_running)


def wait_all(timeout_ms: int = 10_000) -> bool:
    """Block until every worker returned (at shutdown, after cancelling); True if all did."""
    return pool().waitForDone(timeout_ms)
