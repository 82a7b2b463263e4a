"""Server-manager failures, each with one sentence for the user and a distinct exit code.

``server_manager`` imports nothing from ``desktop``: these errors are its own, and the
edges (``desktop.cli.server``, the GUI's message helper) turn them into words and codes.
"""

from __future__ import annotations

from collections.abc import Sequence

# Exit codes of `longdoc server ...` (10-20) and the general ones it shares, declared with
# their meanings in longdoc_net/exit_codes.py.
from longdoc_net.exit_codes import (
    EXIT_IMAGE_MISSING,
    EXIT_MODEL_DIR_MISSING,
    EXIT_NO_CONTAINER_RUNTIME,
    EXIT_NO_GPU_DEVICES,
    EXIT_NOT_RUNNING,
    EXIT_OTHER_SERVER_RUNNING,
    EXIT_PORT_IN_USE,
    EXIT_PROFILE_INVALID,
    EXIT_RUNTIME_DOWN,
    EXIT_RUNTIME_PERMISSION,
    EXIT_SERVER_FAILED,
    EXIT_SERVER_UNAVAILABLE,
    EXIT_STORAGE,
    EXIT_USAGE,
)

__all__ = [
    "EXIT_IMAGE_MISSING",
    "EXIT_MODEL_DIR_MISSING",
    "EXIT_NOT_RUNNING",
    "EXIT_NO_CONTAINER_RUNTIME",
    "EXIT_NO_GPU_DEVICES",
    "EXIT_OTHER_SERVER_RUNNING",
    "EXIT_PORT_IN_USE",
    "EXIT_PROFILE_INVALID",
    "EXIT_RUNTIME_DOWN",
    "EXIT_RUNTIME_PERMISSION",
    "EXIT_SERVER_FAILED",
    "EXIT_SERVER_UNAVAILABLE",
    "EXIT_STORAGE",
    "EXIT_USAGE",
]


class ServerManagerError(Exception):
    """Base of everything the server manager reports: ``str(err)`` is one sentence, or a
    headline and the problems it lists (``items``), one per line."""

    exit_code = EXIT_SERVER_FAILED

    def __init__(self, message: str, items: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.items = tuple(items)

    def __str__(self) -> str:
        return bulleted(self.message, self.items)


def bulleted(headline: str, items: Sequence[str], indent: str = "") -> str:
    """A headline and the problems it lists, each on a line of its own behind a bullet
    (a list the eye can scan, not one long paragraph)."""
    return headline + "".join(f"\n{indent}• {item}" for item in items)


class NoContainerRuntime(ServerManagerError):
    """Neither docker nor podman (nor the configured runtime) is installed."""

    exit_code = EXIT_NO_CONTAINER_RUNTIME


class RuntimePermission(ServerManagerError):
    """The runtime is installed but this user may not use it (or its daemon is down)."""

    exit_code = EXIT_RUNTIME_PERMISSION


class RuntimeDown(RuntimePermission):
    """The runtime's daemon (dockerd, a podman service) is down or restarting.

    A state of its own, not a permission problem: the fix is to start the daemon, and a
    supervisor waits for it rather than restarting the server.
    """

    exit_code = EXIT_RUNTIME_DOWN


class ImageMissing(ServerManagerError):
    """The profile's image is not present locally (the workstation cannot pull)."""

    exit_code = EXIT_IMAGE_MISSING


class ModelDirMissing(ServerManagerError):
    """The model directory does not exist or has no config.json."""

    exit_code = EXIT_MODEL_DIR_MISSING


class PortInUse(ServerManagerError):
    """Something else already listens on the profile's port."""

    exit_code = EXIT_PORT_IN_USE


class NoGpuDevices(ServerManagerError):
    """A device node the profile passes to the container (/dev/kfd, /dev/dri) is missing."""

    exit_code = EXIT_NO_GPU_DEVICES


class ProfileInvalid(ServerManagerError):
    """A profile file is missing, not TOML, or has a bad key; names the file and the key."""

    exit_code = EXIT_PROFILE_INVALID


class ServerFailed(ServerManagerError):
    """The server kept dying, or did not become ready in time."""

    exit_code = EXIT_SERVER_FAILED


class RunRefused(ServerFailed):
    """The runtime refused to create the container (bad argument, missing image): permanent."""


class NotRunning(ServerManagerError):
    """The command needs a server (or its log) and there is none."""

    exit_code = EXIT_NOT_RUNNING


class OtherServerRunning(ServerManagerError):
    """A server from another profile is running; it must be stopped before switching."""

    exit_code = EXIT_OTHER_SERVER_RUNNING


class ExternalUnreachable(ServerManagerError):
    """The external profile's server does not answer (or refuses its key)."""

    exit_code = EXIT_SERVER_UNAVAILABLE


class DataDirUnusable(ServerManagerError):
    """``<data_dir>/server`` cannot be created or written."""

    exit_code = EXIT_STORAGE


class PreflightFailed(ServerManagerError):
    """Several checks failed at once; the exit code is the most fundamental one's."""

    def __init__(self, problems: Sequence[ServerManagerError]) -> None:
        self.problems = list(problems)
        self.exit_code = self.problems[0].exit_code
        # A list, one problem per line: three at once are unreadable as one paragraph.
        super().__init__(
            f"{len(self.problems)} problems prevent the start:", [p.message for p in self.problems]
        )


def preflight_error(problems: Sequence[ServerManagerError]) -> ServerManagerError:
    """The one error to raise for these problems (the problem itself when there is one)."""
    return problems[0] if len(problems) == 1 else PreflightFailed(problems)


# A failure recorded in state.json by the supervisor keeps its type through its exit code.
ERRORS_BY_CODE: dict[int, type[ServerManagerError]] = {
    cls.exit_code: cls
    for cls in (
        NoContainerRuntime,
        RuntimePermission,
        ImageMissing,
        ModelDirMissing,
        PortInUse,
        NoGpuDevices,
        ProfileInvalid,
        ServerFailed,
        RuntimeDown,
    )
}
