"""Server-manager failures, each with one sentence for the user and a distinct exit code."""

from __future__ import annotations

from desktop.errors import LongdocError

# Exit codes of `longdoc server ...`; 10-18 so they never collide with the general ones (0-5).
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


class ServerManagerError(LongdocError):
    """Base of everything the server manager reports."""

    exit_code = EXIT_SERVER_FAILED


class NoContainerRuntime(ServerManagerError):
    """Neither docker nor podman (nor the configured runtime) is installed."""

    exit_code = EXIT_NO_CONTAINER_RUNTIME


class RuntimePermission(ServerManagerError):
    """The runtime is installed but this user may not use it (or its daemon is down)."""

    exit_code = EXIT_RUNTIME_PERMISSION


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


class NotRunning(ServerManagerError):
    """The command needs a running server and there is none."""

    exit_code = EXIT_NOT_RUNNING


class OtherServerRunning(ServerManagerError):
    """A server from another profile is running; it must be stopped before switching."""

    exit_code = EXIT_OTHER_SERVER_RUNNING
