"""Every exit code of ``longdoc``, declared once, with its meaning.

Here because both sides raise them: the app (``desktop.errors`` re-exports the table and
renders each command's help from it) and ``server_manager`` (codes 10-20), which may not
import ``desktop``. tests/e2e/test_cli.py checks the README's table against it row by row.
"""

from __future__ import annotations

from typing import NamedTuple

EXIT_OK = 0
EXIT_STORAGE = 1
EXIT_USAGE = 2
EXIT_DOCUMENT = 3
EXIT_SERVER_UNAVAILABLE = 4
EXIT_REQUEST_FAILED = 5
EXIT_BATCH_FAILED = 6
EXIT_DOCTOR_PROBLEMS = 7
EXIT_NOT_IN_LIBRARY = 8
EXIT_INTERRUPTED = 130
# `longdoc server ...`: 10-20, so they never collide with the general ones.
EXIT_NO_CONTAINER_RUNTIME = 10
EXIT_RUNTIME_PERMISSION = 11
EXIT_IMAGE_MISSING = 12
EXIT_MODEL_DIR_MISSING = 13
EXIT_PORT_IN_USE = 14
EXIT_NO_GPU_DEVICES = 15
EXIT_PROFILE_INVALID = 16
EXIT_SERVER_FAILED = 17
EXIT_NOT_RUNNING = 18
EXIT_OTHER_SERVER_RUNNING = 19
EXIT_RUNTIME_DOWN = 20


class ExitCode(NamedTuple):
    """One row of the exit-code table."""

    code: int
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(EXIT_OK, "success"),
    ExitCode(
        EXIT_STORAGE,
        "storage problem: the disk is full, the data directory is not writable (or "
        "read-only), the database is damaged, or it is in use by another process (`reset-db`)",
    ),
    ExitCode(
        EXIT_USAGE,
        "usage: bad arguments or settings (also: a question that names a file, the same "
        "document twice in a set or a compare, fewer than two documents for compare, a "
        "--pages letter that names no document of the set)",
    ),
    ExitCode(
        EXIT_DOCUMENT,
        "document problem: unreadable, not a regular file, encrypted, no text, too large "
        "to read (text over 64 MiB, a decompression bomb) or for the context (or a "
        "follow-up thread that no longer fits, or a set of documents too large: the refusal "
        "names each document's tokens)",
    ),
    ExitCode(
        EXIT_SERVER_UNAVAILABLE,
        "server unreachable, still loading, refusing the API key, or answering with a "
        "redirect (never followed); compare prints its changes first",
    ),
    ExitCode(
        EXIT_REQUEST_FAILED,
        "server rejected or broke off the request, sent a malformed stream, missed the "
        "first-token deadline, or reported impossible limits (a context of zero or less)",
    ),
    ExitCode(
        EXIT_BATCH_FAILED,
        "batch (`summarize`, `review`): some documents failed; the report lists each with "
        "its reason",
    ),
    ExitCode(
        EXIT_DOCTOR_PROBLEMS,
        "checks found problems: `longdoc doctor` (each with its fix) or "
        "`longdoc server selftest` (a needle was missed)",
    ),
    ExitCode(
        EXIT_NOT_IN_LIBRARY,
        "not in the library: `search --document` or `remove` named a document that was "
        "never ingested (or was removed)",
    ),
    # The server manager's codes (server_manager/errors.py raises them).
    ExitCode(EXIT_NO_CONTAINER_RUNTIME, "server manager: no container runtime (docker or podman)"),
    ExitCode(EXIT_RUNTIME_PERMISSION, "server manager: no permission to use the container runtime"),
    ExitCode(EXIT_IMAGE_MISSING, "server manager: the profile's image is not present locally"),
    ExitCode(
        EXIT_MODEL_DIR_MISSING,
        "server manager: the model folder is missing, or has no config.json, weights or tokenizer",
    ),
    ExitCode(EXIT_PORT_IN_USE, "server manager: the port is already in use"),
    ExitCode(EXIT_NO_GPU_DEVICES, "server manager: no GPU device nodes (/dev/kfd, /dev/dri)"),
    ExitCode(EXIT_PROFILE_INVALID, "server manager: the profile is invalid"),
    ExitCode(
        EXIT_SERVER_FAILED,
        "server manager: the server failed (its `run` refused, kept dying, or not ready in time)",
    ),
    ExitCode(
        EXIT_NOT_RUNNING, "server manager: no server log yet (`server logs` before any start)"
    ),
    ExitCode(EXIT_OTHER_SERVER_RUNNING, "server manager: a server with another profile is running"),
    ExitCode(
        EXIT_RUNTIME_DOWN,
        "server manager: the container runtime's daemon is down or restarting (`server "
        "status`; the server resumes when it is back)",
    ),
    ExitCode(
        EXIT_INTERRUPTED,
        "interrupted (a partial answer is kept as incomplete, never served from the cache)",
    ),
)

SERVER_MANAGER_EXIT_CODES = tuple(range(EXIT_NO_CONTAINER_RUNTIME, EXIT_RUNTIME_DOWN + 1))
