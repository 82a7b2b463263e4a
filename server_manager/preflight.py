"""Checks before a start: every problem is found and reported at once, each with its code."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from pathlib import Path

from server_manager.errors import (
    ImageMissing,
    ModelDirMissing,
    NoGpuDevices,
    PortInUse,
    ServerManagerError,
    preflight_error,
)
from server_manager.profiles import Profile
from server_manager.runtime import Runtime, detect_runtime


def check_runtime(profile: Profile, configured: str = "") -> Runtime:
    """The runtime to use, installed and usable by this user."""
    runtime = Runtime(detect_runtime(profile.runtime or configured))
    runtime.check_usable()
    return runtime


def check_image(runtime: Runtime, profile: Profile) -> None:
    """The image must already be local: the workstation cannot pull."""
    if not runtime.image_exists(profile.image):
        raise ImageMissing(
            f"The image {profile.image} is not present locally; load it offline with "
            f"`{runtime.name} load -i sglang-image.tar` (a tarball made elsewhere with "
            f"`{runtime.name} save -o sglang-image.tar {profile.image}`), or set image in "
            f"{profile.user_file}."
        )


def check_model_dir(profile: Profile) -> None:
    """The model directory exists and looks like a Hugging Face model (config.json)."""
    model_dir = Path(profile.model_dir)
    if not model_dir.is_dir():
        raise ModelDirMissing(
            f"The model directory {model_dir} does not exist; set model_dir in {profile.user_file}."
        )
    if not (model_dir / "config.json").is_file():
        raise ModelDirMissing(
            f"The model directory {model_dir} has no config.json; point model_dir in "
            f"{profile.user_file} at the folder that holds the model's config.json and weights."
        )


def check_port(port: int, host: str = "127.0.0.1", fix_in: Path | None = None) -> None:
    """Nothing may listen on the port yet (the server would fail to bind later).

    ``fix_in`` is the profile file where another port can be set.
    """
    where = f"in {fix_in}" if fix_in is not None else "in the profile"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR ignores TIME_WAIT leftovers of a server that just stopped, but a
        # live listener still makes bind fail.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise PortInUse(
                    f"Port {port} is already in use on {host}; stop what uses it or set "
                    f"another port {where}."
                ) from exc
            raise


def check_devices(profile: Profile) -> None:
    """Every device node the profile passes through exists (/dev/kfd, /dev/dri for ROCm).

    Entries that are not paths (CDI names like ``nvidia.com/gpu=all``) are the runtime's
    business; a profile with ``devices = []`` checks nothing.
    """
    missing = [
        d for d in profile.devices if d.startswith("/") and not Path(d.split(":")[0]).exists()
    ]
    if missing:
        raise NoGpuDevices(
            f"No GPU device nodes: {', '.join(missing)} missing; is the amdgpu driver "
            f"loaded (ROCm installed) on this machine? (devices in {profile.user_file})"
        )


def run_checks(profile: Profile, configured_runtime: str = "") -> Runtime | None:
    """Every check for a start; returns the runtime, or raises once naming every problem.

    The problems are listed most fundamental first (runtime, GPU devices, image, model
    folder, port), and the exit code is the first one's.
    """
    problems: list[ServerManagerError] = []
    runtime: Runtime | None = None

    def attempt(check: Callable[[], object]) -> None:
        try:
            check()
        except ServerManagerError as exc:
            problems.append(exc)

    if profile.kind == "container":
        try:
            runtime = check_runtime(profile, configured_runtime)
        except ServerManagerError as exc:
            problems.append(exc)
    attempt(lambda: check_devices(profile))
    if runtime is not None:
        usable = runtime
        attempt(lambda: check_image(usable, profile))
    attempt(lambda: check_model_dir(profile))
    attempt(lambda: check_port(profile.port, fix_in=profile.user_file))
    if problems:
        raise preflight_error(problems)
    return runtime
