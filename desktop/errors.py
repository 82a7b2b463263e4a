"""Typed errors; each carries one readable sentence and the CLI exit code it maps to.

Core code raises these; the CLI prints ``Error: <message>`` and exits with ``exit_code``,
the GUI shows the same message. Library exceptions (openai, pypdf, sqlite) are wrapped
at the boundary where they occur so nothing above needs to know about them.
"""

from __future__ import annotations

from pathlib import Path

# Exit codes, documented in `longdoc --help` and the README.
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_DOCUMENT = 3
EXIT_SERVER_UNAVAILABLE = 4
EXIT_REQUEST_FAILED = 5
EXIT_BATCH_FAILED = 6
EXIT_INTERRUPTED = 130


class LongdocError(Exception):
    """Base of every expected failure: ``str(err)`` is one sentence for the user."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(LongdocError):
    """The command line or configuration is wrong."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """longdoc.toml or a profile file is invalid."""


# --- documents -------------------------------------------------------------------------


class DocumentError(LongdocError):
    """A document cannot be used; always names the file."""

    exit_code = EXIT_DOCUMENT

    def __init__(self, path: Path | str, reason: str, page: int | None = None) -> None:
        self.path = Path(path)
        self.reason = reason
        self.page = page
        where = f"{self.path}" if page is None else f"{self.path}, page {page}"
        super().__init__(f"{where}: {reason}")


class DocumentUnreadable(DocumentError):
    """The file is missing, corrupt or of an unsupported type."""


class DocumentEncrypted(DocumentError):
    """The PDF needs a password."""


class DocumentEmpty(DocumentError):
    """No text could be extracted (image-only or empty)."""


class DocumentTooLarge(DocumentError):
    """Document plus prompt does not fit the server's context, even with the minimum reserve."""

    def __init__(
        self, path: Path | str, needed: int, available: int, context: int, pages: int
    ) -> None:
        self.needed = needed
        self.available = available
        self.context = context
        self.pages = pages
        reason = (
            f"needs {needed:,} prompt tokens but the server's context of {context:,} tokens "
            f"leaves {available:,} for the prompt; choose a page range, "
            f"e.g. --pages 1-{suggest_page_end(pages, needed, available)}"
        )
        super().__init__(path, reason)


def suggest_page_end(pages: int, needed: int, available: int) -> int:
    """A rough last page for a range that fits, assuming evenly sized pages."""
    if needed <= 0 or pages <= 1:
        return max(pages, 1)
    return max(1, min(pages - 1, int(pages * available / needed * 0.95)))


class StorageError(LongdocError):
    """The data directory or database cannot be written (disk full, permissions)."""

    exit_code = 1


# --- server ------------------------------------------------------------------------------


class ServerUnavailable(LongdocError):
    """The server cannot take requests right now."""

    exit_code = EXIT_SERVER_UNAVAILABLE


class ServerUnreachable(ServerUnavailable):
    """Nothing answers at the endpoint."""


class ServerLoading(ServerUnavailable):
    """The server answers 503: still loading the model (or shutting down)."""


class AuthenticationFailed(ServerUnavailable):
    """The server refused the API key (401/403)."""


class RequestFailed(LongdocError):
    """The server rejected or broke off a request."""

    exit_code = EXIT_REQUEST_FAILED


class ContextTooLong(RequestFailed):
    """The server says the prompt does not fit its context."""


class ServerError(RequestFailed):
    """The server answered with an error status (400 other than length, 5xx)."""


class StreamBroken(RequestFailed):
    """The answer stream stopped early: an error event, or no end marker."""


class Cancelled(LongdocError):
    """The user stopped the answer."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str = "Stopped by the user.") -> None:
        super().__init__(message)


# --- threads (follow-up questions) --------------------------------------------------------


class ThreadTooLong(LongdocError):
    """A follow-up's earlier turns no longer fit the context; the document alone still does."""

    exit_code = EXIT_DOCUMENT

    def __init__(
        self,
        path: Path | str,
        thread_id: int,
        turns: int,
        needed: int,
        available: int,
        context: int,
        without_history: int,
    ) -> None:
        self.path = Path(path)
        self.thread_id = thread_id
        self.turns = turns
        self.needed = needed
        self.available = available
        self.context = context
        self.without_history = without_history
        super().__init__(
            f"{self.path}: thread {thread_id} no longer fits: with its {turns} earlier "
            f"turn{'s' if turns != 1 else ''} the prompt needs {needed:,} tokens, but the "
            f"server's context of {context:,} tokens leaves {available:,} for the prompt "
            f"(the document and this question alone need {without_history:,}); start a new "
            "thread (ask without --follow-up or --thread). Earlier turns are never dropped."
        )
