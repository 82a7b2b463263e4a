"""What is running, kept in ``<data_dir>/server`` so the CLI and the GUI agree.

``state.json`` is written atomically (rename); ``api_key`` and the engine's key files are
owner-only; ``lock`` serialises start and stop across processes with ``fcntl.flock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from longdoc_net.endpoint import Phase
from server_manager.errors import DataDirUnusable, ServerFailed
from server_manager.processes import ProcessIdentity, identify

STATE_VERSION = 1


@dataclass(frozen=True)
class Paths:
    """Files of the server manager under the data directory."""

    home: Path

    @property
    def dir(self) -> Path:
        """``<data_dir>/server``."""
        return self.home / "server"

    @property
    def state(self) -> Path:
        """The state file shared by every Longdoc process."""
        return self.dir / "state.json"

    @property
    def api_key(self) -> Path:
        """The generated API key (mode 0600)."""
        return self.dir / "api_key"

    @property
    def engine_config(self) -> Path:
        """SGLang's ``--config`` YAML holding the key (mode 0600)."""
        return self.dir / "engine.yaml"

    @property
    def engine_env(self) -> Path:
        """The container's ``--env-file`` (mode 0600; vLLM's key is in it)."""
        return self.dir / "engine.env"

    @property
    def lock(self) -> Path:
        """The start/stop lock file."""
        return self.dir / "lock"

    @property
    def logs(self) -> Path:
        """The directory of the rotating server log."""
        return self.dir / "logs"

    @property
    def log_file(self) -> Path:
        """The current server log (older ones are ``server.log.1`` ...)."""
        return self.logs / "server.log"

    @property
    def supervisor_log(self) -> Path:
        """The supervisor's own messages (what it did and why)."""
        return self.logs / "supervisor.log"

    def ensure(self) -> None:
        """Create the directories, owner-only (tightened if they were not: keys live here)."""
        try:
            for directory in (self.dir, self.logs):
                directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                if directory.stat().st_mode & 0o077:
                    os.chmod(directory, 0o700)
        except OSError as exc:
            raise DataDirUnusable(
                f"{exc.filename or self.dir}: cannot be created or used ({exc.strerror}); "
                f"set LONGDOC_HOME to a writable folder."
            ) from exc


@dataclass
class ServerState:
    """The contents of ``state.json``."""

    profile: str
    kind: str
    endpoint: str
    model: str
    port: int = 0
    state: Phase = Phase.STARTING
    stage: str = "starting_container"
    stages: list[str] = field(default_factory=list)
    runtime: str = ""
    container: str = ""
    pid: int = 0  # the native server process
    supervisor_pid: int = 0
    # Who those pids were (ProcessIdentity.to_json): a pid alone may name a stranger later.
    process: dict[str, Any] | None = None
    supervisor: dict[str, Any] | None = None
    container_id: str = ""
    restarts: int = 0
    error: str = ""
    error_code: int = 0  # the exit code of a failure (the error's type, for the CLI edge)
    # How the last run's process ended (ProcessOutcome.to_json: exit code, signal, OOM).
    outcome: dict[str, Any] | None = None
    max_total_num_tokens: int | None = None
    context_len: int | None = None
    started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    version: int = STATE_VERSION

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the file."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerState:
        """Tolerates unknown keys (a newer Longdoc wrote the file)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        phase = values.get("state", Phase.STARTING)
        values["state"] = Phase(phase) if phase in Phase._value2member_map_ else Phase.FAILED
        return cls(**values)

    @property
    def external(self) -> bool:
        """A server Longdoc only talks to (an external profile's)."""
        return self.kind == "external"

    @property
    def supervisor_identity(self) -> ProcessIdentity | None:
        """The supervisor as recorded, or None (no pid, or one without proof of identity)."""
        return ProcessIdentity.from_json(self.supervisor)

    @property
    def process_identity(self) -> ProcessIdentity | None:
        """The native engine as recorded, or None."""
        return ProcessIdentity.from_json(self.process)


def read_state(paths: Paths) -> ServerState | None:
    """The state file, or None when absent or unreadable."""
    try:
        data = json.loads(paths.state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        state = ServerState.from_json(data)
    except TypeError:
        return None
    if state.supervisor is None and state.supervisor_pid:
        state.supervisor = _legacy_supervisor(paths, state.supervisor_pid)
    return state


def _legacy_supervisor(paths: Paths, pid: int) -> dict[str, Any] | None:
    """The identity of a supervisor recorded by an older Longdoc (pid only), if that pid is
    still a supervisor of this very data directory by its command line; else None (gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return None
    home = str(paths.home).encode()
    is_ours = any(
        argv[i : i + 2] == [b"server_manager", b"supervise"] for i in range(len(argv))
    ) and any(argv[i : i + 2] == [b"--home", home] for i in range(len(argv)))
    identity = identify(pid) if is_ours else None
    return identity.to_json() if identity is not None else None


def write_state(paths: Paths, state: ServerState) -> None:
    """Write atomically so a reader never sees half a file."""
    paths.ensure()
    state.updated_at = time.time()
    tmp = paths.state.with_name(f".state.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(state.to_json(), fh, indent=1)
    os.replace(tmp, paths.state)


def clear_state(paths: Paths) -> None:
    """Forget the server (it is stopped)."""
    with contextlib.suppress(FileNotFoundError):
        paths.state.unlink()


def api_key(paths: Paths) -> str:
    """The server's API key, generated once and stored owner-only."""
    paths.ensure()
    try:
        key = paths.api_key.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        key = ""
    if key.startswith("-"):
        # Engines parse `api-key` with argparse (SGLang's --config becomes `--api-key
        # VALUE` inside it), which takes a leading '-' for an option: such a key (1 in 64
        # of the older urlsafe ones) never worked. Replace it.
        with contextlib.suppress(FileNotFoundError):
            paths.api_key.unlink()
        key = ""
    if key:
        # Tighten permissions a copy or an old umask may have loosened.
        if paths.api_key.stat().st_mode & 0o077:
            os.chmod(paths.api_key, 0o600)
        return key
    key = secrets.token_hex(32)  # [0-9a-f]: safe in argparse, YAML, env files and headers
    tmp = paths.api_key.with_name(f".api_key.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(key + "\n")
    # link() fails if another process won the race; then its key is the key.
    try:
        os.link(tmp, paths.api_key)
    except FileExistsError:
        key = paths.api_key.read_text(encoding="utf-8").strip()
    finally:
        os.unlink(tmp)
    return key


def write_private(path: Path, text: str) -> None:
    """Write ``text`` owner-only (0600 from the start, then renamed into place)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def read_api_key(paths: Paths) -> str:
    """The stored key without creating one; empty when there is none."""
    try:
        return paths.api_key.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


@contextlib.contextmanager
def locked(paths: Paths, timeout_s: float = 120.0) -> Iterator[None]:
    """Hold the cross-process start/stop lock (flock; released if the holder dies)."""
    paths.ensure()
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerFailed(
                        f"Another Longdoc process has been starting or stopping the server "
                        f"for {timeout_s:.0f} s ({paths.lock} is locked); try again later."
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the flock
