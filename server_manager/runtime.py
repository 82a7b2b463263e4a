"""The container runtime (docker or podman) through its command line, with timeouts.

Parsing ``inspect`` output is pure (``parse_inspect``) and tested on captured JSON.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from server_manager.errors import (
    NoContainerRuntime,
    RunRefused,
    RuntimeDown,
    RuntimePermission,
    ServerManagerError,
)

log = logging.getLogger("longdoc.server")

RUNTIMES = ("docker", "podman")
SHORT_TIMEOUT_S = 30.0
# Pulling is impossible offline, but creating a container from a 30 GB image can take a while.
RUN_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ContainerState:
    """What ``inspect`` says about one container."""

    id: str
    name: str
    status: str
    running: bool
    exit_code: int | None
    oom_killed: bool
    pid: int
    labels: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def describe_exit(self) -> str:
        """One phrase for why it ended, e.g. ``was killed for lack of memory (OOM)``."""
        if self.oom_killed:
            return "was killed for lack of memory (OOM)"
        if self.exit_code is None:
            return f"is {self.status}"
        if self.exit_code > 128:
            return f"was killed by signal {self.exit_code - 128} (exit code {self.exit_code})"
        return f"exited with code {self.exit_code}"


def parse_inspect(text: str) -> list[ContainerState]:
    """Parse ``docker|podman inspect`` JSON (a list of objects) into states."""
    data = json.loads(text) if text.strip() else []
    if isinstance(data, dict):
        data = [data]
    return [_state(item) for item in data if isinstance(item, dict)]


def _state(item: dict[str, Any]) -> ContainerState:
    state = item.get("State") or {}
    config = item.get("Config") or {}
    labels = config.get("Labels") or item.get("Labels") or {}
    status = str(state.get("Status", "")).lower()
    running = bool(state.get("Running", status == "running"))
    exit_code = state.get("ExitCode")
    return ContainerState(
        id=str(item.get("Id", "")),
        name=str(item.get("Name", "")).lstrip("/"),
        status=status,
        running=running,
        # A container that never ran reports ExitCode 0; it did not exit "successfully".
        exit_code=int(exit_code) if isinstance(exit_code, int) and status != "created" else None,
        oom_killed=bool(state.get("OOMKilled", False)),
        pid=int(state.get("Pid") or 0),
        labels={str(k): str(v) for k, v in labels.items()},
        error=str(state.get("Error", "") or ""),
    )


def parse_port_bindings(item_text: str) -> list[tuple[str, str]]:
    """``(HostIp, HostPort)`` pairs from ``inspect`` JSON's ``NetworkSettings.Ports``."""
    data = json.loads(item_text)
    item = data[0] if isinstance(data, list) else data
    ports = (item.get("NetworkSettings") or {}).get("Ports") or {}
    pairs: list[tuple[str, str]] = []
    for bindings in ports.values():
        for binding in bindings or []:
            pairs.append((str(binding.get("HostIp", "")), str(binding.get("HostPort", ""))))
    return pairs


def detect_runtime(preferred: str = "") -> str:
    """The runtime's executable path: the preferred one, else docker, else podman."""
    if preferred:
        path = shutil.which(preferred)
        if path is None:
            raise NoContainerRuntime(
                f"The container runtime {preferred!r} is not installed (not found on PATH)."
            )
        return path
    found = [path for name in RUNTIMES if (path := shutil.which(name)) is not None]
    if len(found) > 1:
        # A docker CLI without a running daemon (or a socket we may not use) next to a
        # working podman: take the one that answers.
        for path in found:
            with contextlib.suppress(ServerManagerError):
                Runtime(path).check_usable()
                return path
    if found:
        return found[0]
    raise NoContainerRuntime(
        "No container runtime found: install podman or docker (or choose the native profile)."
    )


class Runtime:
    """Thin wrapper over one runtime executable; every call has a timeout."""

    def __init__(self, executable: str) -> None:
        self.executable = executable

    @property
    def name(self) -> str:
        """``podman`` or ``docker`` (or whatever the executable is called)."""
        return self.executable.rsplit("/", 1)[-1]

    def _run(
        self, args: Sequence[str], timeout: float = SHORT_TIMEOUT_S, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        argv = [self.executable, *args]
        try:
            result = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise RuntimePermission(
                f"{self.name} {args[0]} did not answer within {timeout:.0f} s; "
                f"is the {self.name} service healthy?"
            ) from exc
        except OSError as exc:
            raise NoContainerRuntime(f"Cannot run {self.executable}: {exc.strerror}.") from exc
        if result.returncode != 0 and _is_daemon_down(result.stderr or result.stdout):
            raise self.daemon_down()
        if check and result.returncode != 0:
            raise RuntimePermission(
                f"{self.name} {args[0]} failed: {_summary(result.stderr or result.stdout)}"
            )
        return result

    def daemon_down(self) -> RuntimeDown:
        """The one sentence for a daemon that does not answer, naming how to start it."""
        daemon = "docker daemon (dockerd)" if self.name == "docker" else f"{self.name} service"
        start = (
            "sudo systemctl start docker"
            if self.name == "docker"
            else "systemctl --user start podman.socket"
        )
        return RuntimeDown(f"The {daemon} is not running, or is restarting: start it (`{start}`).")

    def check_usable(self) -> None:
        """Raise RuntimePermission when this user cannot talk to the runtime."""
        result = self._run(["version"])
        if result.returncode != 0:
            raise self._permission_error(_summary(result.stderr or result.stdout))

    def _permission_error(self, detail: str) -> RuntimePermission:
        if _is_permission_problem(detail):
            advice = (
                "add your user to the 'docker' group or use podman"
                if self.name == "docker"
                else f"check that your user may run {self.name}"
            )
            return RuntimePermission(f"No permission to use {self.name}: {advice} ({detail}).")
        return RuntimePermission(f"Cannot use {self.name}: {detail}")

    def image_exists(self, image: str) -> bool:
        """True when the image is present locally (nothing is pulled)."""
        return self._run(["image", "inspect", image]).returncode == 0

    def run(self, argv: Sequence[str]) -> str:
        """Run a full ``<runtime> run ...`` argv (argv[0] is replaced); returns the id.

        A refusal is permanent (a bad argument, a missing image): RunRefused with the
        runtime's own message, or RuntimePermission when this user may not use it.
        """
        result = self._run(list(argv[1:]), timeout=RUN_TIMEOUT_S)
        if result.returncode != 0:
            detail = _summary(result.stderr or result.stdout)
            if _is_permission_problem(detail):
                raise self._permission_error(detail)
            raise RunRefused(f"{self.name} run refused to start the server: {detail}")
        return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""

    def inspect(self, name: str) -> ContainerState | None:
        """The container's state, or None when it does not exist."""
        result = self._run(["container", "inspect", name])
        if result.returncode != 0:
            return None
        states = parse_inspect(result.stdout)
        return states[0] if states else None

    def find(self, labels: dict[str, str], all_states: bool = True) -> list[str]:
        """Names of containers carrying all these labels."""
        args = ["ps", "--format", "{{.Names}}"] + (["--all"] if all_states else [])
        for key, value in labels.items():
            args += ["--filter", f"label={key}={value}"]
        result = self._run(args, check=True)
        return [line.strip() for line in result.stdout.splitlines() if line.strip()]

    def stop(self, name: str, grace_s: float) -> None:
        """Graceful stop (SIGTERM, then SIGKILL after the grace period)."""
        self._run(["stop", "--time", str(int(grace_s)), name], timeout=grace_s + SHORT_TIMEOUT_S)

    def remove(self, name: str) -> None:
        """Remove the container, killing it if it still runs; a missing one is fine.

        Callers pass only names found by this home's label or checked with ``owner``.
        """
        self._run(["rm", "--force", name], timeout=SHORT_TIMEOUT_S * 2)

    def owner(self, name: str, label: str) -> str | None:
        """The value of ``label`` on container ``name``; None when no such container."""
        state = self.inspect(name)
        return None if state is None else state.labels.get(label, "")


# What docker and podman (remote) say when their daemon's socket has nobody behind it.
_DAEMON_DOWN = (
    "cannot connect to the docker daemon",
    "is the docker daemon running",
    "cannot connect to podman",
    "unable to connect to podman socket",
    "error during connect",
)


def _is_daemon_down(detail: str) -> bool:
    """The runtime's words for "my daemon does not answer" (stopped, or restarting)."""
    lowered = detail.lower()
    return any(words in lowered for words in _DAEMON_DOWN) and "permission denied" not in lowered


def _is_permission_problem(detail: str) -> bool:
    """The runtime's words for "this user may not talk to me" (docker socket, rootless)."""
    # e.g. "permission denied while trying to connect to the Docker daemon socket at ...";
    # a "permission denied" about a mounted file is a refused run, not this.
    lowered = detail.lower()
    return "permission denied" in lowered and any(
        word in lowered for word in ("socket", "daemon", ".sock")
    )


def _summary(text: str) -> str:
    """The runtime's own sentence: its last error line (both add a "See '... --help'" hint
    after it), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("See '")] or lines
    errors = [line for line in lines if line.lower().startswith(("error", "docker:"))]
    return (errors or lines or ["no output"])[-1]
