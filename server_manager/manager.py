"""ServerManager: start, adopt, watch, restart and stop the inference server; no Qt.

The GUI and the CLI are separate processes that must agree on one server: everything they
share lives in ``<data_dir>/server`` (state.json, the API key, a lock), and the server itself
is owned by a detached supervisor process (``server_manager.supervisor``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from desktop.config import CONFIG_NAME, Settings, load_settings
from desktop.errors import AuthenticationFailed, ConfigError, ServerUnreachable
from desktop.processes import pid_alive
from server_manager import probe
from server_manager.errors import (
    NoContainerRuntime,
    OtherServerRunning,
    ServerFailed,
    ServerManagerError,
)
from server_manager.gpu import GpuInfo, count_gpus, gpu_report
from server_manager.logs import read_lines
from server_manager.preflight import run_checks
from server_manager.profiles import LABEL_HOME, LABEL_PROFILE, Profile, load_profile
from server_manager.progress import STAGE_BY_KEY, Stage
from server_manager.runtime import Runtime, detect_runtime
from server_manager.state import (
    Paths,
    ServerState,
    api_key,
    clear_state,
    locked,
    read_api_key,
    read_state,
    write_state,
)
from server_manager.supervisor import spawn, supervisor_alive

log = logging.getLogger("longdoc.server")

State = Literal["stopped", "starting", "ready", "busy", "failed"]
StageCallback = Callable[[Stage], None]
StatusCallback = Callable[["ServerStatus"], None]
POLL_S = 0.2


@dataclass(frozen=True)
class Connection:
    """Where clients send requests: ``url`` is the base URL (no ``/v1``)."""

    url: str
    api_key: str
    model: str
    # What a client may assume: the engine of a managed profile ("" = find out), and the
    # external profile's stated context length (0 = none).
    engine: str = ""
    context_length: int = 0

    @property
    def v1_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:30000/v1``."""
        return f"{self.url}/v1"


@dataclass
class ServerStatus:
    """One look at the server, for ``status --json`` and the GUI's status bar."""

    profile: str
    state: State
    stage: str | None = None
    endpoint: str | None = None
    model: str | None = None
    container: str | None = None
    restarts: int = 0
    gpus: list[GpuInfo] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    gpu_note: str = ""  # e.g. "no GPU monitoring tool found (...)"; not an error

    def to_json(self) -> dict[str, Any]:
        """Exactly the documented keys."""
        return {
            "profile": self.profile,
            "state": self.state,
            "stage": self.stage,
            "endpoint": self.endpoint,
            "model": self.model,
            "container": self.container,
            "restarts": self.restarts,
            "gpus": [gpu.to_json() for gpu in self.gpus],
            "metrics": dict(self.metrics),
            "error": self.error,
        }


class StatusWatcher:
    """A plain thread calling back with a fresh status every few seconds until stopped."""

    def __init__(
        self, manager: ServerManager, on_status: StatusCallback, interval_s: float
    ) -> None:
        self._manager = manager
        self._on_status = on_status
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="longdoc-server-watch")

    def start(self) -> StatusWatcher:
        """Begin watching; returns self."""
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current look (the callback is not called again)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # A supervisor that died (OOM-killed, say) leaves a running server behind;
                # adopting it restores restarts and log following.
                self._manager.adopt()
                status = self._manager.status()
            except Exception as exc:  # keep watching: one failed look is not fatal
                log.warning("status check failed: %s", exc)
            else:
                if not self._stop.is_set():
                    self._on_status(status)
            self._stop.wait(self._interval_s)


class ServerManager:
    """Manages the one Longdoc server of a data directory."""

    def __init__(self, data_dir: Path, settings: Settings | None = None) -> None:
        self.home = Path(data_dir)
        self.settings = settings if settings is not None else Settings()
        self.paths = Paths(self.home)

    # ----- profiles -----------------------------------------------------------------------

    def profile(self, name: str | None = None) -> Profile:
        """The profile in the settings (or ``name``), loaded and validated."""
        return load_profile(name or self.settings.profile, self.home)

    # ----- start --------------------------------------------------------------------------

    def start(self, on_stage: StageCallback | None = None, wait: bool = True) -> Connection:
        """Start the server (or adopt the running one); with ``wait``, until it is ready.

        ``on_stage`` is called from this thread with each stage in order. Raises a
        ServerManagerError subclass naming what is missing, or ServerFailed.
        """
        profile = self.profile()
        if profile.kind == "external":
            return self._start_external(profile)
        with locked(self.paths):
            if not self._adopt_locked(read_state(self.paths), profile.name):
                self._launch_locked(profile)
        if not wait:
            connection = self.connection()
            assert connection is not None
            return connection
        return self.wait_ready(on_stage)

    def _launch_locked(self, profile: Profile) -> None:
        runtime = run_checks(profile, self.settings.container_runtime)
        tp_size = profile.tp_size or count_gpus(profile.gpu_vendor) or 1
        api_key(self.paths)  # generated once, before the supervisor needs it
        state = ServerState(
            profile=profile.name,
            kind=profile.kind,
            endpoint=profile.endpoint,
            model=profile.model_name,
            port=profile.port,
            runtime=runtime.executable if runtime is not None else "",
            container=profile.container_name if profile.kind == "container" else "",
        )
        write_state(self.paths, state)
        pid = spawn(self.paths, profile.name, state.runtime, tp_size)
        # Recorded before the lock is released, so a racing process sees a live supervisor.
        state.supervisor_pid = pid
        write_state(self.paths, state)
        log.info("started supervisor %d for profile %s", pid, profile.name)

    def _start_external(self, profile: Profile) -> Connection:
        connection = _external(profile)
        reply = probe.get(f"{connection.url}/v1/models", connection.api_key)
        if reply.status == 0:
            raise ServerUnreachable(
                f"Nothing answers at {connection.url} (profile {profile.name})."
            )
        if reply.status in (401, 403):
            raise AuthenticationFailed(
                f"The server at {connection.url} refused the API key of profile {profile.name}."
            )
        with locked(self.paths):
            write_state(
                self.paths,
                ServerState(
                    profile=profile.name,
                    kind="external",
                    endpoint=connection.url,
                    model=profile.model_name,
                    port=0,
                    state="ready",
                    stage="ready",
                ),
            )
        return connection

    def wait_ready(
        self, on_stage: StageCallback | None = None, timeout_s: float | None = None
    ) -> Connection:
        """Block until the managed server is ready, reporting stages; raise if it fails."""
        seen = 0
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else 7 * 24 * 3600)
        while True:
            state = read_state(self.paths)
            if state is None:
                raise ServerFailed("The server was stopped before it became ready.")
            for key in state.stages[seen:]:
                if on_stage is not None and key in STAGE_BY_KEY:
                    on_stage(STAGE_BY_KEY[key])
            seen = len(state.stages)
            if state.state == "ready":
                engine = _engine(state.profile, self.home)
                return Connection(state.endpoint, read_api_key(self.paths), state.model, engine)
            if state.state == "failed":
                raise ServerFailed(state.error or "The server failed to start.")
            if not supervisor_alive(state.supervisor_pid):
                # It may have written "failed" just before exiting.
                state = read_state(self.paths)
                if state is not None and state.state == "failed":
                    raise ServerFailed(state.error or "The server failed to start.")
                raise ServerFailed(
                    f"The server supervisor exited unexpectedly; see {self.paths.supervisor_log}."
                )
            if time.monotonic() > deadline:
                raise ServerFailed("The server did not become ready in time.")
            time.sleep(POLL_S)

    # ----- adopt --------------------------------------------------------------------------

    def adopt(self) -> bool:
        """Use a server that is already running (started by another Longdoc process, or
        left running by a supervisor that died); True when there is one."""
        with locked(self.paths):
            return self._adopt_locked(read_state(self.paths), None)

    def _adopt_locked(self, state: ServerState | None, wanted: str | None) -> bool:
        if state is not None and state.kind == "external":
            clear_state(self.paths)
            return False
        if state is not None and state.state != "failed" and supervisor_alive(state.supervisor_pid):
            if wanted is not None and state.profile != wanted:
                raise OtherServerRunning(
                    f"A Longdoc server with profile {state.profile!r} is already running; "
                    f"stop it first (longdoc server stop) to use profile {wanted!r}."
                )
            return True
        if state is not None and state.kind == "native":
            # Its output pipe went with the dead supervisor, so it cannot be followed:
            # end it and start afresh rather than run blind.
            if pid_alive(state.pid):
                log.warning("ending unsupervised native server %d", state.pid)
                _kill_group(state.pid, 10.0)
            clear_state(self.paths)
            return False
        runtime = self._runtime_for(state)
        names: list[str] = []
        if runtime is not None:
            # An unusable runtime finds nothing here; the start's checks will say why.
            with contextlib.suppress(ServerManagerError):
                names = runtime.find({LABEL_HOME: str(self.home)}, all_states=True)
        if runtime is None or not names:
            if state is not None:
                clear_state(self.paths)
            return False
        running = [n for n in names if (st := runtime.inspect(n)) is not None and st.running]
        for name in names:
            if name not in running:
                runtime.remove(name)  # dead leftovers of a crashed run
        if not running or (state is not None and state.state == "failed"):
            for name in running:
                runtime.remove(name)
            if state is not None and state.state != "failed":
                clear_state(self.paths)
            return False
        name = running[0]
        inspected = runtime.inspect(name)
        profile_name = inspected.labels.get(LABEL_PROFILE, "") if inspected else ""
        if wanted is not None and profile_name != wanted:
            raise OtherServerRunning(
                f"A Longdoc server with profile {profile_name!r} is already running; "
                f"stop it first (longdoc server stop) to use profile {wanted!r}."
            )
        profile = self.profile(profile_name)
        new_state = ServerState(
            profile=profile.name,
            kind="container",
            endpoint=profile.endpoint,
            model=profile.model_name,
            port=profile.port,
            runtime=runtime.executable,
            container=name,
            stages=list(state.stages) if state else [],
            restarts=state.restarts if state else 0,
        )
        write_state(self.paths, new_state)
        pid = spawn(self.paths, profile.name, runtime.executable, profile.tp_size or 1, adopt=True)
        new_state.supervisor_pid = pid
        write_state(self.paths, new_state)
        log.info("adopted container %s (supervisor %d)", name, pid)
        return True

    def _runtime_for(self, state: ServerState | None) -> Runtime | None:
        """The runtime that ran (or would run) our container; None when there is none."""
        if state is not None and state.runtime:
            return Runtime(state.runtime) if Path(state.runtime).exists() else None
        try:
            profile = self.profile()
        except ServerManagerError:
            return None
        if profile.kind != "container":
            return None
        try:
            return Runtime(detect_runtime(profile.runtime or self.settings.container_runtime))
        except NoContainerRuntime:
            return None

    # ----- stop ---------------------------------------------------------------------------

    def stop(self) -> bool:
        """Stop gracefully (forcefully after the grace period); True if something ran."""
        with locked(self.paths):
            state = read_state(self.paths)
            stopped = False
            grace = 30.0
            with contextlib.suppress(ServerManagerError):
                grace = self.profile(state.profile if state else None).grace_period_s
            if state is not None and supervisor_alive(state.supervisor_pid):
                stopped = True
                os.kill(state.supervisor_pid, signal.SIGTERM)
                if not _wait_gone(state.supervisor_pid, grace + 60):
                    log.warning("supervisor %d did not stop; killing it", state.supervisor_pid)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(state.supervisor_pid, signal.SIGKILL)
            if state is not None and state.kind == "native" and pid_alive(state.pid):
                stopped = True
                _kill_group(state.pid, grace)
            runtime = self._runtime_for(state)
            names: list[str] = []
            if runtime is not None:
                with contextlib.suppress(ServerManagerError):
                    names = runtime.find({LABEL_HOME: str(self.home)}, all_states=True)
            if runtime is not None:
                for name in names:
                    inspected = runtime.inspect(name)
                    if inspected is not None and inspected.running:
                        stopped = True
                        runtime.stop(name, grace)
                    runtime.remove(name)
            clear_state(self.paths)
            return stopped

    def restart(self, on_stage: StageCallback | None = None, wait: bool = True) -> Connection:
        """Stop, then start with the current settings (e.g. a new profile)."""
        self.stop()
        return self.start(on_stage=on_stage, wait=wait)

    # ----- status -------------------------------------------------------------------------

    def status(self, gpus: bool = True) -> ServerStatus:
        """One look: state file, supervisor, HTTP health and metrics, GPU usage."""
        state = read_state(self.paths)
        if state is None:
            return self._status_without_state(gpus)
        status = ServerStatus(
            profile=state.profile,
            state="starting",
            stage=state.stage,
            endpoint=state.endpoint,
            model=state.model,
            container=state.container or None,
            restarts=state.restarts,
            error=state.error or None,
        )
        if state.kind == "external":
            self._probe_into(status, read_api_key(self.paths))
            return status
        if gpus:
            self._gpus_into(status, state.profile)
        if state.state == "failed":
            status.state = "failed"
            return status
        if not supervisor_alive(state.supervisor_pid):
            if probe.health(state.endpoint) == "unreachable":
                status.state, status.stage = "stopped", None
                status.error = "The server is not running (its supervisor ended unexpectedly)."
                return status
            status.error = "The server runs unsupervised; `longdoc server start` adopts it."
            self._probe_into(status, read_api_key(self.paths))
            return status
        if state.state == "stopping":
            status.state, status.stage = "busy", "stopping"
        elif state.state == "ready":
            self._probe_into(status, read_api_key(self.paths))
        return status

    def _status_without_state(self, gpus: bool) -> ServerStatus:
        status = ServerStatus(profile=self.settings.profile, state="stopped")
        with contextlib.suppress(ServerManagerError):
            profile = self.profile()
            if profile.kind == "external":
                status.endpoint, status.model = profile.endpoint, profile.model_name
                self._probe_into(status, profile.api_key)
                return status
        if gpus:
            self._gpus_into(status, self.settings.profile)
        return status

    def _gpus_into(self, status: ServerStatus, profile_name: str) -> None:
        vendor = "amd"
        with contextlib.suppress(ServerManagerError):
            vendor = self.profile(profile_name).gpu_vendor
        if vendor == "none":
            return
        report = gpu_report(vendor)
        status.gpus, status.gpu_note = report.gpus, report.note

    def _probe_into(self, status: ServerStatus, key: str) -> None:
        """Ready or busy from /metrics (no generation, unlike /health); dead if no answer."""
        base = status.endpoint or ""
        reply = probe.get(f"{base}/metrics")
        if reply.status == 200:
            status.metrics = probe.parse_metrics(reply.body.decode("utf-8", "replace"))
            queued = status.metrics.get("running_requests", 0) + status.metrics.get(
                "queued_requests", 0
            )
            status.state = "busy" if queued > 0 else "ready"
            status.stage = "ready"
            return
        if reply.status == 0:
            status.state = "stopped" if status.state == "stopped" else "busy"
            if status.profile and status.error is None:
                status.error = f"Nothing answers at {base}."
            return
        # No metrics (disabled, or a timeout during a long prefill): ask /health instead.
        health = probe.health(base)
        status.state = "ready" if health == "ok" else "busy"
        status.stage = "ready"

    # ----- clients, logs, watching ----------------------------------------------------------

    def connection(self) -> Connection | None:
        """Endpoint, key and model for clients, or None when no server is known."""
        return connection_for(self.home, self.settings)

    def logs(self, follow: bool = False, stop: threading.Event | None = None) -> Iterator[str]:
        """The server's log lines, oldest first; ``follow`` keeps yielding new ones."""
        return read_lines(self.paths.log_file, follow=follow, stop=stop)

    def watch(self, on_status: StatusCallback, interval_s: float = 2.0) -> StatusWatcher:
        """Call ``on_status`` from a background thread every ``interval_s``; ``.stop()`` it."""
        return StatusWatcher(self, on_status, interval_s).start()


def connection_for(data_dir: Path, settings: Settings | None = None) -> Connection | None:
    """The managed server's connection, cheaply (state file and key); None if none runs.

    With an ``external`` profile in the settings, its URL and key even without a start.
    """
    paths = Paths(Path(data_dir))
    state = read_state(paths)
    if state is not None and state.state != "failed":
        if state.kind == "external":
            with contextlib.suppress(ServerManagerError):
                profile = load_profile(state.profile, Path(data_dir))
                return _external(profile)
        elif state.state == "ready" or supervisor_alive(state.supervisor_pid):
            engine = _engine(state.profile, Path(data_dir))
            return Connection(state.endpoint, read_api_key(paths), state.model, engine)
    if settings is None:
        try:
            settings = load_settings(Path(data_dir) / CONFIG_NAME, env=False)
        except ConfigError:
            return None
    try:
        profile = load_profile(settings.profile, Path(data_dir))
    except ServerManagerError:
        return None
    if profile.kind == "external":
        return _external(profile)
    return None


def _engine(profile_name: str, data_dir: Path) -> str:
    """The engine a managed profile runs ("" when the profile cannot be read)."""
    with contextlib.suppress(ServerManagerError):
        return load_profile(profile_name, data_dir).engine
    return ""


def _external(profile: Profile) -> Connection:
    """An external profile's connection; its engine is found out from the server itself."""
    return Connection(
        profile.endpoint, profile.api_key, profile.model_name, context_length=profile.context_length
    )


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def _kill_group(pid: int, grace: float) -> None:
    """SIGTERM the process group of ``pid``, SIGKILL after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    if not _wait_gone(pid, grace):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _wait_gone(pid, 10)
