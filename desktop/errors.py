"""Typed errors; each carries one readable sentence and the CLI exit code it maps to.

Core code raises these; the CLI prints ``Error: <message>`` and exits with ``exit_code``,
the GUI shows the same message. Library exceptions (openai, pypdf, sqlite) are wrapped
at the boundary where they occur so nothing above needs to know about them.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path

# --- the exit-code table ------------------------------------------------------------------
# Declared once, in longdoc_net/exit_codes.py (server_manager raises 10-19 and may not import
# desktop); `longdoc --help` and every command's help are rendered from it here.
from longdoc_net.exit_codes import (
    EXIT_BATCH_FAILED,
    EXIT_CODES,
    EXIT_DOCTOR_PROBLEMS,
    EXIT_DOCUMENT,
    EXIT_INTERRUPTED,
    EXIT_NOT_IN_LIBRARY,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    EXIT_SERVER_UNAVAILABLE,
    EXIT_STORAGE,
    EXIT_USAGE,
    SERVER_MANAGER_EXIT_CODES,
    ExitCode,
)

__all__ = [
    "EXIT_BATCH_FAILED",
    "EXIT_CODES",
    "EXIT_DOCTOR_PROBLEMS",
    "EXIT_DOCUMENT",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_IN_LIBRARY",
    "EXIT_OK",
    "EXIT_REQUEST_FAILED",
    "EXIT_SERVER_UNAVAILABLE",
    "EXIT_STORAGE",
    "EXIT_USAGE",
    "SERVER_MANAGER_EXIT_CODES",
    "ExitCode",
]

# What every command can return whatever it does: a data directory that cannot be
# written, a bad flag or setting, Ctrl-C.
COMMON_EXIT_CODES = (EXIT_OK, EXIT_STORAGE, EXIT_USAGE, EXIT_INTERRUPTED)
# What a command that reads documents and asks the server about them (ask, compare, warm)
# can return besides: a document it cannot read, no server, a request that failed.
ASKING_EXIT_CODES = (
    *COMMON_EXIT_CODES,
    EXIT_DOCUMENT,
    EXIT_SERVER_UNAVAILABLE,
    EXIT_REQUEST_FAILED,
)


def exit_codes_help(codes: Iterable[int] | None = None) -> str:
    """The ``exit codes:`` epilog for a command's help, listing only ``codes`` (all if None)."""
    wanted = None if codes is None else set(codes)
    rows = [e for e in EXIT_CODES if wanted is None or e.code in wanted]
    unknown = (wanted or set()) - {e.code for e in EXIT_CODES}
    if unknown:
        raise ValueError(f"exit codes {sorted(unknown)} are not in desktop.errors.EXIT_CODES")
    lines = ["exit codes:"]
    for e in rows:
        lines += textwrap.wrap(
            e.meaning, 79, initial_indent=f"  {e.code:<5}", subsequent_indent=" " * 7
        )
    return "\n".join(lines) + "\n"


# --- words for the user --------------------------------------------------------------------


def display_path(path: Path | str) -> str:
    """A path as one printable line: undecodable bytes as ``\\xNN``, control characters escaped."""
    text = os.fsencode(os.fspath(path)).decode("utf-8", "backslashreplace")
    return one_line(text)


# What a terminal may act on: C0 controls but tab and newline, DEL, C1 controls (CSI is
# U+009B), the bidirectional overrides that reorder what is shown, and lone surrogates (a
# file name's bytes that were not UTF-8, unprintable as they are).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    """One character as an escape that shows what it was: ``\\x1b``, ``\\r``, ``\\u202e``."""
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        # A lone surrogate: a byte of a file name that was not UTF-8 (surrogateescape).
        return f"\\x{code - 0xDC00:02x}" if code >= 0xDC80 else f"\\u{code:04x}"
    # C0 as \\x1b; the rest (DEL, C1, bidi) as \\u009b, which is also valid inside a JSON
    # string (``--json`` output leaves those characters raw for this to escape).
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """Untrusted text for a terminal or a text report: lines and tabs kept, every other
    control character (ESC, CR, C1, bidi overrides) shown escaped, so it does nothing.

    The one escaping rule; ``one_line`` adds line breaks and anything unprintable.
    """
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: _escaped(m.group()), text)


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped, so it stays one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escaped(ch) for ch in text)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 page``, ``2 pages``, ``1,200 pages``."""
    word = noun if count == 1 else (nouns or noun + "s")
    return f"{count:,} {word}"


class Remedy(Enum):
    """What the user can do about an error, as a value (like Anki's ``help_page``).

    The error's own sentence already says it in the CLI's words (``str(err)``); the app
    turns the value into a button (``label``) next to ``LongdocError.in_app``.
    """

    START_SERVER = "start-server"
    OPEN_SETTINGS = "settings"
    NEW_THREAD = "new-thread"
    CHECK_WORKSTATION = "check-workstation"
    CHOOSE_PAGES = "choose-pages"

    @property
    def label(self) -> str:
        """The app's button for it."""
        return _REMEDY_LABELS[self]

    @property
    def workstation(self) -> bool:
        """Can the workstation checklist (``longdoc doctor``) explain the failure?"""
        return self in (Remedy.START_SERVER, Remedy.OPEN_SETTINGS, Remedy.CHECK_WORKSTATION)


_REMEDY_LABELS = {
    Remedy.START_SERVER: "Start the server",
    Remedy.OPEN_SETTINGS: "Settings…",
    Remedy.NEW_THREAD: "New thread",
    Remedy.CHECK_WORKSTATION: "Check this workstation…",
    Remedy.CHOOSE_PAGES: "Choose pages",
}


# The app's words before a failure that starting (or reaching) the server can cure.
NOT_READY = "The server is not ready: "


class LongdocError(Exception):
    """Base of every expected failure: ``str(err)`` is one sentence for the user.

    ``remedy`` is what the user can do (None: nothing to offer); ``in_app`` is the same
    failure in the app's words (no command-line flags), worded here beside the CLI's.
    """

    exit_code: int = 1
    remedy: Remedy | None = None
    # The problems the sentence stands at the head of (several at once): the CLI prints
    # each on a bulleted line of its own under the ``Error:`` line.
    items: tuple[str, ...] = ()
    in_app_prefix = ""  # what the app says before the CLI's sentence (unless worded apart)

    def __init__(self, message: str, *, in_app: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self._in_app = in_app

    def __str__(self) -> str:
        return self.message

    @property
    def in_app(self) -> str:
        """The sentence the app shows (the CLI's, unless the error words it otherwise)."""
        return self._in_app if self._in_app is not None else self.in_app_prefix + self.message


def remedy_for(exc: BaseException, managed: bool) -> Remedy | None:
    """What to offer for ``exc``; ``managed``: Longdoc manages the server (else starting it
    cannot help and the endpoint is fixed in the settings)."""
    remedy = exc.remedy if isinstance(exc, LongdocError) else None
    if remedy is Remedy.START_SERVER and not managed:
        return Remedy.OPEN_SETTINGS
    return remedy


class UsageError(LongdocError):
    """The command line or configuration is wrong."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """longdoc.toml or a profile file is invalid."""


class NotInLibrary(LongdocError):
    """A command named a document the library does not hold."""

    exit_code = EXIT_NOT_IN_LIBRARY

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        super().__init__(
            f"{display_path(self.path)}: not in the library; ingest it first"
            " (`longdoc ingest PATH`), or see what the library holds in the app"
        )


# --- documents -------------------------------------------------------------------------


class DocumentError(LongdocError):
    """A document cannot be used; always names the file."""

    exit_code = EXIT_DOCUMENT

    def __init__(self, path: Path | str, reason: str, page: int | None = None) -> None:
        self.path = Path(path)
        self.reason = reason
        self.page = page
        shown = display_path(self.path)
        where = shown if page is None else f"{shown}, page {page}"
        super().__init__(f"{where}: {reason}")


class DocumentUnreadable(DocumentError):
    """The file is missing, corrupt or of an unsupported type."""


class DocumentEncrypted(DocumentError):
    """The PDF needs a password."""


class DocumentEmpty(DocumentError):
    """No text could be extracted (image-only or empty)."""


class DocumentTooLarge(DocumentError):
    """Document plus prompt does not fit the server's limits, even with the minimum reserve.

    ``limit`` says which limit binds with its numbers, ``remedy`` what to do and
    ``suggested`` a (first, last) page range that fits, None for a single page (all from
    ``desktop.answering.budget``); without them the context length is assumed to bind.
    """

    remedy = Remedy.CHOOSE_PAGES

    def __init__(
        self,
        path: Path | str,
        needed: int,
        available: int,
        context: int,
        pages: int,
        *,
        limit: str = "",
        remedy: str = "",
        suggested: tuple[int, int] | None = None,
    ) -> None:
        self.needed = needed
        self.available = available
        self.context = context
        self.pages = pages
        self.limit = limit
        self.remedy_text = remedy  # the CLI's words for what to do
        self.suggested = suggested
        limit = limit or (
            f"the server's context of {context:,} tokens leaves {available:,} for the prompt"
        )
        if not remedy:
            remedy = (
                f"choose a page range, e.g. --pages 1-{suggest_page_end(pages, needed, available)}"
                if pages > 1
                else "a single page cannot be split: use a server with a longer context"
            )
        super().__init__(path, f"needs {needed:,} prompt tokens but {limit}; {remedy}")

    def app_text(self, describe: Callable[[int, int], str], first_page: int = 1) -> str:
        """Over budget in the app's words (no command-line flags): by how much, and a range
        of pages that fits; ``describe(first, last)`` names a range in printed labels."""
        over = max(0, self.needed - self.available)
        if self.limit:  # the core said which limit binds (the context or the KV cache)
            text = (
                f"Not sent: the question needs {self.needed:,} prompt tokens, {over:,} too many: "
            )
            if self.suggested is None:  # one page: no range can help
                return f"{text}{self.limit}. {self.remedy_text[:1].upper()}{self.remedy_text[1:]}."
            first, last = self.suggested
            return f"{text}{self.limit}. Ask about fewer pages: {describe(first, last)} would fit."
        end = first_page + suggest_page_end(self.pages, self.needed, self.available) - 1
        return (
            f"Not sent: the question needs {self.needed:,} prompt tokens, {over:,} more than the "
            f"{self.available:,} that the server's context of {self.context:,} tokens leaves "
            f"beside the answer. Ask about fewer pages: {describe(first_page, end)} would fit."
        )


class SetTooLarge(LongdocError):
    """A set of documents does not fit the server's limits: names each document's tokens.

    ``documents`` is (letter, path, tokens) for each document in order; ``remedy`` says
    what would fit (dropping a document, or a range), from ``desktop.answering.service``.
    """

    exit_code = EXIT_DOCUMENT

    remedy = Remedy.CHOOSE_PAGES

    def __init__(
        self,
        documents: list[tuple[str, Path | str, int]],
        needed: int,
        *,
        limit: str,
        remedy: str,
    ) -> None:
        self.documents = documents
        self.needed = needed
        self.limit = limit
        self.remedy_text = remedy  # the CLI's words for what would fit
        each = ", ".join(
            f"{letter} {display_path(path)} {tokens:,}" for letter, path, tokens in documents
        )
        super().__init__(
            f"these {len(documents)} documents ({each} tokens) need {needed:,} prompt "
            f"tokens together but {limit}; {remedy}."
        )


def suggest_page_end(pages: int, needed: int, available: int) -> int:
    """A rough last page for a range that fits, assuming evenly sized pages."""
    if needed <= 0 or pages <= 1:
        return max(pages, 1)
    return max(1, min(pages - 1, int(pages * available / needed * 0.95)))


class StorageError(LongdocError):
    """The data directory or database cannot be written (disk full, permissions)."""

    exit_code = EXIT_STORAGE
    remedy = Remedy.CHECK_WORKSTATION


class DatabaseDamaged(StorageError):
    """SQLite says the database file is not a database or has damaged pages."""

    def __init__(self, path: Path | str, detail: str) -> None:
        self.path = Path(path)
        super().__init__(
            f"{display_path(path)}: the database is damaged ({detail}); run "
            "`longdoc reset-db` to move it aside (it is kept for recovery) and start a "
            "fresh one"
        )


# --- server ------------------------------------------------------------------------------


class ServerUnavailable(LongdocError):
    """The server cannot take requests right now."""

    exit_code = EXIT_SERVER_UNAVAILABLE
    remedy = Remedy.START_SERVER
    in_app_prefix = NOT_READY


class ServerUnreachable(ServerUnavailable):
    """Nothing answers at the endpoint."""


class ServerRedirected(ServerUnavailable):
    """The endpoint answered a redirect, which Longdoc never follows."""


class ServerLoading(ServerUnavailable):
    """The server answers 503: still loading the model (or shutting down)."""


class AuthenticationFailed(ServerUnavailable):
    """The server refused the API key (401/403)."""

    remedy = Remedy.OPEN_SETTINGS


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
    remedy = Remedy.NEW_THREAD

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
            "thread (ask without --follow-up or --thread). Earlier turns are never dropped.",
            in_app=f"Not sent: this thread no longer fits. With its {turns} earlier "
            f"turns the prompt needs {needed:,} tokens; the server's context of "
            f"{context:,} leaves {available:,}. Earlier turns are never "
            "dropped: start a new thread (Ctrl+N) to ask this question on its own.",
        )


class OtherPages(UsageError):
    """A follow-up asked about other pages than its thread's (a thread keeps its pages)."""

    remedy = Remedy.NEW_THREAD

    def __init__(self, thread_id: int, about: str) -> None:
        self.thread_id = thread_id
        self.about = about
        super().__init__(
            f"Thread {thread_id} is about {about}; a follow-up keeps the thread's pages. "
            "Ask without --follow-up/--thread to start a new thread about other pages.",
            in_app=f"This thread is about {about}; start a new thread to ask about other pages.",
        )


# --- server settings (client engineer: typed so the CLI and the UI need not read messages) ---


class ServerSetupError(UsageError):
    """Which server to use, or what it is, is not configured well enough to ask."""

    remedy = Remedy.OPEN_SETTINGS


class NoServerConfigured(ServerSetupError):
    """No endpoint is set and no managed server runs."""

    remedy = Remedy.START_SERVER
    in_app_prefix = NOT_READY


class ModelNotServed(ServerSetupError):
    """The configured model is not among the models the server lists."""


class ContextUnknown(ServerSetupError):
    """The server does not report its context length and no setting states one."""
