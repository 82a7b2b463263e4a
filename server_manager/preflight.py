"""Checks before a start, each failing with one sentence and its own exit code."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

from server_manager.errors import (
    ImageMissing,
    ModelDirMissing,
    NoGpuDevices,
    PortInUse,
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
            f"`{runtime.name} save -o sglang-image.tar {profile.image}`)."
        )


def check_model_dir(profile: Profile) -> None:
    """The model directory exists and looks like a Hugging Face model (config.json)."""
    model_dir = Path(profile.model_dir)
    if not model_dir.is_dir():
        raise ModelDirMissing(
            f"The model directory {model_dir} does not exist; set model_dir in the "
            f"profile {profile.source}."
        )
    if not (model_dir / "config.json").is_file():
        raise ModelDirMissing(
            f"The model directory {model_dir} has no config.json; point model_dir at the "
            f"folder that holds the model's config.json and weights."
        )


def check_port(port: int, host: str = "127.0.0.1") -> None:
    """Nothing may listen on the port yet (the server would fail to bind later)."""
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
                    f"another port in the profile."
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
            f"loaded (ROCm installed) on this machine?"
        )


def run_checks(profile: Profile, configured_runtime: str = "") -> Runtime | None:
    """All checks for a start, cheapest and most fundamental first; returns the runtime."""
    runtime: Runtime | None = None
    if profile.kind == "container":
        runtime = check_runtime(profile, configured_runtime)
    # Hardware before files: without GPU device nodes no image or model can help.
    check_devices(profile)
    if runtime is not None:
        check_image(runtime, profile)
    check_model_dir(profile)
    check_port(profile.port)
    return runtime
