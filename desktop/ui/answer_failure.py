"""An answer that ended in an error: the error's own words, and its remedy as a button."""

from __future__ import annotations

from collections.abc import Sequence

from desktop.documents.model import Page
from desktop.errors import (
    Cancelled,
    DocumentTooLarge,
    LongdocError,
    Remedy,
    ServerSetupError,
    ServerUnavailable,
    ThreadTooLong,
    remedy_for,
)
from desktop.ui import messages
from desktop.ui.answer_view import AnswerView
from server_manager.errors import ServerManagerError

STOPPED = "Stopped. What arrived is kept in the history as incomplete."


def show_failure(
    view: AnswerView, exc: BaseException, managed: bool, pages: Sequence[Page], first: int
) -> bool:
    """Say in ``view`` why the answer ended (``managed``: Longdoc runs the server, so
    "Start the server" can help; ``pages`` and ``first``: where a too-large question
    began). True when the question was too large (the panel offers the pages box)."""
    if isinstance(exc, Cancelled):
        view.fail(STOPPED)
    elif isinstance(exc, DocumentTooLarge):
        view.fail(messages.too_large(exc, pages, first), Remedy.CHOOSE_PAGES)
        return True
    elif isinstance(exc, LongdocError):
        # The core's words and its typed remedy: a new thread; start the managed server
        # (or, for another server, the settings); a wrong setting; the workstation.
        view.fail(exc.in_app, remedy_for(exc, managed))
        if not isinstance(exc, ThreadTooLong | ServerUnavailable | ServerSetupError):
            messages.error(exc)  # also in the status area and the message log
    elif isinstance(exc, ServerManagerError):
        # The server manager names no remedy (it does not import desktop): its failures
        # are the workstation's (runtime, GPU, disk).
        view.fail(messages.describe(exc), messages.remedy_of(exc))
        messages.error(exc)
    else:
        view.fail(messages.describe(exc))
        messages.error(exc, view.window(), serious=True)
    return False
