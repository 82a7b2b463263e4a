"""Checks before a start: every problem is found and reported at once, each with its code.

:func:`findings` is the one set of rules: a start refuses on its problems (``run_checks``)
and ``longdoc doctor`` shows every finding, ok or not, with its fix.
"""

from __future__ import annotations

import errno
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server_manager.engines import ENGINES
from server_manager.errors import (
    ImageMissing,
    ModelDirMissing,
    NoContainerRuntime,
    NoGpuDevices,
    PortInUse,
    RuntimeDown,
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


def _weights(model_dir: Path) -> tuple[list[Path], list[str]]:
    """Weight files present, and shards an index lists that are missing."""
    present = [
        p
        for pattern in ("*.safetensors", "*.bin", "*.gguf", "*.pt")
        for p in model_dir.glob(pattern)
    ]
    missing: list[str] = []
    for index in model_dir.glob("*.index.json"):
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        except (OSError, ValueError, AttributeError):
            missing.append(f"{index.name} (unreadable)")
            continue
        for shard in sorted(set(weight_map.values()) if isinstance(weight_map, dict) else ()):
            if not (model_dir / str(shard)).is_file():
                missing.append(str(shard))
    return present, missing


def check_model_dir(profile: Profile) -> str:
    """The model folder holds config.json, every weight shard and the tokenizer; returns
    what it holds."""
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
    present, missing = _weights(model_dir)
    lacking = [] if present else ["weights (*.safetensors)"]
    lacking += [f"weight shard {m}" for m in missing[:3]]
    if len(missing) > 3:
        lacking.append(f"{len(missing) - 3} more shards")
    if not any((model_dir / t).is_file() for t in ("tokenizer.json", "tokenizer.model")):
        lacking.append("tokenizer (tokenizer.json)")
    if lacking:
        raise ModelDirMissing(
            f"The model directory {model_dir} is incomplete: no {', '.join(lacking)}; copy "
            "the whole model folder again (config.json, every *.safetensors shard, "
            "tokenizer.json and tokenizer_config.json)."
        )
    size = sum(p.stat().st_size for p in present)
    return f"{model_dir} ({len(present)} weight files, {size / 1024**3:.1f} GiB)."


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


@dataclass(frozen=True)
class Finding:
    """One check's result: ``problem`` is the error a start refuses with (None = fine),
    ``detail`` what was found, ``fix`` what to do; ``skipped`` when it could not be made."""

    name: str
    detail: str
    problem: ServerManagerError | None = None
    fix: str = ""
    skipped: bool = False


def _fix(problem: ServerManagerError, profile: Profile) -> str:
    """What to do about a problem (its own sentence says what is wrong)."""
    fixes: list[tuple[type[ServerManagerError], str]] = [
        (
            NoContainerRuntime,
            "Install podman (`sudo apt install podman`) or docker, or use the native profile.",
        ),
        (RuntimeDown, "Start the daemon (`sudo systemctl start docker`), then try again."),
        (
            ImageMissing,
            "Load it from a tarball made on a networked machine (`podman load -i "
            "sglang-image.tar`, made there with `podman save -o sglang-image.tar IMAGE`).",
        ),
        (
            NoGpuDevices,
            "Install the amdgpu driver and ROCm (see AMD's ROCm install guide) and reboot."
            if profile.gpu_vendor == "amd"
            else "Install the GPU driver and reboot.",
        ),
        (
            ModelDirMissing,
            f"Copy the whole model there, or set model_dir in {profile.user_file} to where it is.",
        ),
        (
            PortInUse,
            f"Stop that program (`ss -ltnp 'sport = :{profile.port}'` names it) or set "
            f"another port in {profile.user_file}.",
        ),
    ]
    return next(
        (fix for cls, fix in fixes if isinstance(problem, cls)),
        "Use rootless podman, or ask your administrator to add you to the docker group.",
    )


def _finding(name: str, profile: Profile, check: Callable[[], str]) -> Finding:
    try:
        return Finding(name, check())
    except ServerManagerError as exc:
        return Finding(name, str(exc), exc, _fix(exc, profile))


def findings(
    profile: Profile, configured_runtime: str = "", held_by_us: Callable[[int], str] | None = None
) -> tuple[list[Finding], Runtime | None]:
    """Every check for a start, most fundamental first (runtime, GPU devices, image, model
    folder, port), and the usable runtime (None when the profile needs none, or it is not
    usable). ``held_by_us`` names Longdoc's own server on a port ("" when not ours)."""
    found: list[Finding] = []
    runtime: Runtime | None = None
    engine_class = ENGINES.get(profile.kind)
    if engine_class is not None and engine_class.uses_runtime:
        chosen: list[Runtime] = []

        def runtime_check() -> str:
            chosen.append(check_runtime(profile, configured_runtime))
            return f"{chosen[0].name} ({chosen[0].executable}) answers."

        found.append(_finding("Container runtime", profile, runtime_check))
        runtime = chosen[0] if chosen else None
    devices = [d for d in profile.devices if d.startswith("/")]

    def devices_check() -> str:
        check_devices(profile)
        return (
            f"{', '.join(devices)} present." if devices else "The profile passes no device nodes."
        )

    found.append(_finding("GPU devices", profile, devices_check))
    if engine_class is not None and engine_class.uses_runtime:
        if runtime is None:
            found.append(
                Finding(
                    "Server image",
                    "Not checked: no usable container runtime.",
                    fix="See above.",
                    skipped=True,
                )
            )
        else:
            usable = runtime

            def image_check() -> str:
                check_image(usable, profile)
                return f"{profile.image} is present."

            found.append(_finding("Server image", profile, image_check))
    found.append(_finding("Model folder", profile, lambda: check_model_dir(profile)))

    def port_check() -> str:
        ours = held_by_us(profile.port) if held_by_us is not None else ""
        if ours:
            return f"Port {profile.port} is held by Longdoc's server ({ours})."
        check_port(profile.port, fix_in=profile.user_file)
        return f"Port {profile.port} is free."

    found.append(_finding("Port", profile, port_check))
    return found, runtime


def run_checks(profile: Profile, configured_runtime: str = "") -> Runtime | None:
    """Every check for a start; returns the runtime, or raises once naming every problem.

    The exit code is the first (most fundamental) problem's.
    """
    found, runtime = findings(profile, configured_runtime)
    problems = [f.problem for f in found if f.problem is not None]
    if problems:
        raise preflight_error(problems)
    return runtime
