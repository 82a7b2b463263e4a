"""The one way the GUI runs work off the UI thread (in the manner of Anki's ``QueryOp``).

``run_call`` runs a core callable, ``run_stream`` iterates a core generator; both in the
shared ``QThreadPool``. Workers never touch widgets, nor even their ``Task``: results,
events and errors cross to the UI thread only as queued signals of one relay object that
lives there, naming the task by id, and the callbacks (``success``, ``failure``,
``events``) always run on the UI thread. (A worker holding its Task could drop the last
reference to it, deleting a UI-thread QObject from the pool's thread.)

Every task belongs to a *receiver* (the widget or object that asked). When the receiver's
C++ object is gone by the time a result arrives, the result is dropped: no callback ever
runs against a deleted widget. A failure without a ``failure`` callback is shown to the
user (the safe default), not just logged.

Finished work is let go: the worker is a plain callable (``QThreadPool.start(callable)``),
not a ``QRunnable`` subclass, because PySide keeps the Python wrapper of an auto-deleting
``QRunnable`` alive forever when its ``run()`` returns before ``QThreadPool.start()`` does
(a short job; measured: 11 of 2,000 instant jobs leaked, 0 with callables). A task drops
its callbacks once delivered, and the module forgets it (see bench/bench_ui_tasks.py).

Streams are coalesced: the worker appends events to a locked buffer and posts one signal
only when the buffer was empty, so a server sending thousands of tokens per second costs
the UI thread one wake-up per drain, not one per token (see bench/bench_ui_stream.py).
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QObject, QThreadPool, Signal, Slot

from desktop.ui import messages

log = logging.getLogger("longdoc.ui.tasks")

T = TypeVar("T")

# Every task still running, by id, so Python does not collect a Task whose worker is alive.
_running: dict[int, Task[Any]] = {}
# Every Task object not yet collected (bench and tests check that finished ones go).
_alive: weakref.WeakSet[Task[Any]] = weakref.WeakSet()
_ids = itertools.count(1)


def _show_failure(exc: BaseException) -> None:
    messages.error(exc)


class _Inbox:
    """What a worker shares with its Task: the events not yet taken, behind a lock.

    Plain Python, so whichever thread drops it last may: the worker never holds the Task
    (a QObject of the UI thread), or it could end up deleting it on the wrong thread."""

    def __init__(self, task_id: int) -> None:
        self.task_id = task_id
        self.lock = threading.Lock()
        self.events: list[Any] = []

    def post(self, event: Any) -> bool:
        """Add an event; True when the box was empty (the UI thread must be woken)."""
        with self.lock:
            wake = not self.events
            self.events.append(event)
        return wake

    def take(self) -> list[Any]:
        """Every event posted so far."""
        with self.lock:
            batch, self.events = self.events, []
        return batch


class _Relay(QObject):
    """Lives on the UI thread; carries the workers' news to their Tasks, by task id."""

    result_ready = Signal(int, object)
    error_raised = Signal(int, object)
    events_pending = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.result_ready.connect(self._on_result_ready)
        self.error_raised.connect(self._on_error_raised)
        self.events_pending.connect(self._on_events_pending)

    @Slot(int, object)
    def _on_result_ready(self, task_id: int, result: Any) -> None:
        task = _running.get(task_id)
        if task is not None:
            task._deliver_result(result)

    @Slot(int, object)
    def _on_error_raised(self, task_id: int, exc: BaseException) -> None:
        task = _running.get(task_id)
        if task is not None:
            task._deliver_error(exc)

    @Slot(int)
    def _on_events_pending(self, task_id: int) -> None:
        task = _running.get(task_id)
        if task is not None:
            task._deliver_events()


@cache
def _the_relay() -> _Relay:
    """The relay, made on first use (always on the UI thread: tasks start there)."""
    return _Relay()


class Task(QObject, Generic[T]):
    """A handle on one background job; lives on the UI thread, tied to its receiver."""

    # On the UI thread, after the callbacks ran (or were dropped).
    finished = Signal()

    def __init__(
        self,
        receiver: QObject,
        success: Callable[[T], None] | None,
        failure: Callable[[BaseException], None] | None,
        events: Callable[[list[Any]], None] | None = None,
        name: str = "task",
    ) -> None:
        super().__init__()
        self.name = name
        self.id = next(_ids)
        self.cancel_event = threading.Event()
        self._inbox = _Inbox(self.id)
        # The receiver's C++ side going away is what counts (a Python reference to it may
        # live on in a callback): Qt says so with ``destroyed``, on this thread.
        self._receiver_alive_now = True
        receiver.destroyed.connect(self._on_receiver_destroyed)
        self._success = success
        self._failure: Callable[[BaseException], None] | None = (
            failure if failure is not None else _show_failure
        )
        self._events = events
        self._done = False
        _alive.add(self)

    # --- called by the owner (UI thread) ---------------------------------------------

    def cancel(self) -> None:
        """Ask the core to stop (the generator notices the event and stores what it has)."""
        self.cancel_event.set()

    @property
    def done(self) -> bool:
        """True once the job ended (its result delivered or dropped)."""
        return self._done

    def detach(self) -> None:
        """Drop the callbacks: the caller no longer wants the result; the work still ends."""
        self._success = None
        self._failure = None
        self._events = None

    @Slot()
    def _on_receiver_destroyed(self) -> None:
        self._receiver_alive_now = False

    def _receiver_alive(self) -> bool:
        return self._receiver_alive_now

    # --- UI thread, from the relay ---------------------------------------------------

    def _deliver_events(self) -> None:
        batch = self._inbox.take()
        if batch and self._events is not None and self._receiver_alive():
            self._events(batch)

    def _deliver_result(self, result: Any) -> None:
        self._deliver_events()  # events posted just before the end come first
        success = self._success if self._receiver_alive() else None
        self._finish()
        if success is not None:
            success(result)
        self.finished.emit()

    def _deliver_error(self, exc: BaseException) -> None:
        self._deliver_events()
        failure = self._failure if self._receiver_alive() else None
        self._finish()
        if failure is not None:
            failure(exc)
        else:
            log.info("background %s ended after its receiver was gone: %s", self.name, exc)
        self.finished.emit()

    def _finish(self) -> None:
        self._done = True
        # Let go of whatever the callbacks hold (widgets, documents, answers).
        self.detach()
        _running.pop(self.id, None)


def _work(inbox: _Inbox, job: Callable[[], Any], stream: bool) -> Callable[[], None]:
    """The callable the pool runs; reaches its Task only through the relay, by id."""
    relay = _the_relay()
    task_id = inbox.task_id

    def run() -> None:
        try:
            if stream:
                generator: Iterator[Any] = job()
                try:
                    for event in generator:
                        if inbox.post(event):
                            relay.events_pending.emit(task_id)
                finally:
                    close = getattr(generator, "close", None)
                    if close is not None:
                        close()
                result: Any = None
            else:
                result = job()
        except BaseException as exc:
            relay.error_raised.emit(task_id, exc)
        else:
            relay.result_ready.emit(task_id, result)

    return run


def pool() -> QThreadPool:
    """The pool every task runs in."""
    return QThreadPool.globalInstance()


def run_call(
    job: Callable[[], T],
    *,
    receiver: QObject,
    success: Callable[[T], None] | None = None,
    failure: Callable[[BaseException], None] | None = None,
    name: str = "call",
) -> Task[T]:
    """Run ``job()`` off the UI thread; ``success(result)`` or ``failure(exc)`` on it.

    Nothing is delivered once ``receiver`` is deleted. Without ``failure`` an error is
    shown to the user through ``messages.error``.
    """
    task: Task[T] = Task(receiver, success, failure, name=name)
    _running[task.id] = task
    pool().start(_work(task._inbox, job, stream=False))
    return task


def run_stream(
    start: Callable[[threading.Event], Iterator[Any]],
    *,
    receiver: QObject,
    events: Callable[[list[Any]], None],
    success: Callable[[None], None] | None = None,
    failure: Callable[[BaseException], None] | None = None,
    name: str = "stream",
) -> Task[None]:
    """Iterate ``start(cancel_event)`` off the UI thread, delivering events in batches.

    ``events(batch)`` runs on the UI thread with every event that arrived since the last
    call, in order. ``Task.cancel()`` sets the event the core generator watches.
    """
    task: Task[None] = Task(receiver, success, failure, events, name=name)
    _running[task.id] = task
    cancel = task.cancel_event
    pool().start(_work(task._inbox, lambda: start(cancel), stream=True))
    return task


def running_tasks() -> list[Task[Any]]:
    """Tasks not finished yet (for a clean shutdown)."""
    return list(_running.values())


def live_tasks() -> int:
    """Task objects not collected yet, finished or not (bench and tests)."""
    return len(_alive)


def wait_all(timeout_ms: int = 10_000) -> bool:
    """Block until every worker returned (at shutdown, after cancelling); True if all did."""
    return pool().waitForDone(timeout_ms)
