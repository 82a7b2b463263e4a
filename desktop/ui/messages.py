"""One channel for messages to the user (in the manner of qutebrowser's ``utils/message``).

Everything the user should read goes through ``info``, ``warning`` or ``error``. Messages
posted before the main window connects are buffered and replayed. Serious errors also get
a dialog. The text is the core error's own sentence: no tracebacks, no re-wording.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from desktop.answering.format import page_span
from desktop.documents.model import Page
from desktop.errors import DocumentTooLarge, LongdocError, Remedy
from server_manager.errors import ServerManagerError

# Expected failures: their own sentence is the message (the server manager's are its own
# type, as server_manager does not import desktop).
_EXPECTED = (LongdocError, ServerManagerError)

log = logging.getLogger("longdoc.ui")

_doctor_offer: Callable[[], object] | None = None


def offer_doctor(show: Callable[[], object] | None) -> None:
    """Register what "Check this workstation…" opens (the main window), or forget it."""
    global _doctor_offer
    _doctor_offer = show


def check_workstation() -> bool:
    """Open "Check this workstation…" (the doctor dialog) where a window registered it;
    False when none did."""
    show = _doctor_offer
    if show is None:
        return False
    show()
    return True


class Level(Enum):
    """How loud a message is."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Message:
    """One message for the user."""

    level: Level
    text: str


class MessageBus(QObject):
    """Carries messages to whatever shows them (the main window's status area)."""

    message_posted = Signal(object)  # Message

    def __init__(self) -> None:
        super().__init__()
        self._buffer: list[Message] = []
        self._connected = False
        self.history: list[Message] = []

    def attach(self) -> list[Message]:
        """Called by the window once it listens: returns the messages posted before."""
        self._connected = True
        buffered, self._buffer = self._buffer, []
        return buffered

    def detach(self) -> None:
        """The window is closing: buffer again."""
        self._connected = False

    def post(self, message: Message) -> None:
        """Deliver, or buffer until a window is attached."""
        self.history.append(message)
        del self.history[:-200]
        log.log(
            {Level.INFO: logging.INFO, Level.WARNING: logging.WARNING}.get(
                message.level, logging.ERROR
            ),
            "%s",
            message.text,
        )
        if self._connected:
            self.message_posted.emit(message)
        else:
            self._buffer.append(message)


@cache
def bus() -> MessageBus:
    """The application's message bus (created on first use, on the UI thread)."""
    return MessageBus()


def reset_bus() -> None:
    """Forget the bus (tests create one application window after another)."""
    bus.cache_clear()


def describe(exc: BaseException) -> str:
    """The user's sentence for an exception: an expected error's own (app) text, else a
    generic one."""
    if isinstance(exc, LongdocError):
        return exc.in_app
    if isinstance(exc, _EXPECTED):
        return str(exc)
    return f"Unexpected error: {type(exc).__name__}: {exc}"


def remedy_of(exc: BaseException) -> Remedy | None:
    """What an error's dialog offers: the core's remedy; the server manager's failures are
    the workstation's (server_manager does not import desktop, so it names none)."""
    if isinstance(exc, ServerManagerError):
        return Remedy.CHECK_WORKSTATION
    return exc.remedy if isinstance(exc, LongdocError) else None


def too_large(exc: DocumentTooLarge, pages: Sequence[Page], first_page: int = 1) -> str:
    """Over budget in the app's words (``DocumentTooLarge.app_text``), with the ranges in
    the document's printed labels."""

    def span(first: int, last: int) -> str:
        return page_span(first, last, pages) if pages else f"pages {first}-{last}"

    return exc.app_text(span, first_page)


def info(text: str) -> None:
    """A passing note (status area)."""
    bus().post(Message(Level.INFO, text))


def warning(text: str) -> None:
    """Something the user should notice (status area, highlighted)."""
    bus().post(Message(Level.WARNING, text))


def error(exc: BaseException | str, parent: QWidget | None = None, serious: bool = False) -> None:
    """Show an error: always in the status area; with a dialog when ``serious``."""
    text = exc if isinstance(exc, str) else describe(exc)
    if not isinstance(exc, (str, *_EXPECTED)):
        log.error("unexpected error", exc_info=exc)
    bus().post(Message(Level.ERROR, text))
    if serious and parent is not None:
        box = QMessageBox(QMessageBox.Icon.Critical, "Longdoc", text, parent=parent)
        box.setTextFormat(Qt.TextFormat.PlainText)  # never interpret the text as HTML
        box.setObjectName("errorBox")
        box.addButton(QMessageBox.StandardButton.Close)
        show = _doctor_offer
        remedy = None if isinstance(exc, str) else remedy_of(exc)
        if show is not None and remedy is not None and remedy.workstation:
            check = box.addButton("Check this workstation…", QMessageBox.ButtonRole.HelpRole)
            check.setObjectName("checkWorkstationButton")
            check.clicked.connect(lambda: show())
        box.open()
