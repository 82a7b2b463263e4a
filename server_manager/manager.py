"""ServerManager: start, adopt, watch, restart and stop the inference server; no Qt.

The GUI and the CLI are separate processes that must agree on one server: everything they
share lives in ``<data_dir>/server`` (state.json, the API key, a lock), and the server itself
is owned by a detached supervisor process (``server_manager.supervisor``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from longdoc_net.endpoint import Failure, Look, Phase, classify, list_models, look
from server_manager import probe
from server_manager.engines import ENGINES, engine_for
from server_manager.errors import (
    ERRORS_BY_CODE,
    ExternalUnreachable,
    NoContainerRuntime,
    NotRunning,
    OtherServerRunning,
    ServerFailed,
    ServerManagerError,
)
from server_manager.gpu import GpuInfo, count_gpus, gpu_report
from server_manager.logs import read_lines
from server_manager.preflight import run_checks
from server_manager.profiles import (
    DEFAULT_PROFILE,
    LABEL_HOME,
    LABEL_PROFILE,
    Profile,
    load_profile,
)
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
from server_manager.supervisor import spawn, supervisor_running

log = logging.getLogger("longdoc.server")

StageCallback = Callable[[Stage], None]
POLL_S = 0.2


class ManagerSettings(Protocol):
    """What the manager reads from the app's settings (``desktop.config.Settings`` fits)."""

    @property
    def profile(self) -> str:
        """The profile name."""
        ...

    @property
    def container_runtime(self) -> str:
        """docker, podman, or empty for whichever is installed."""
        ...


@dataclass(frozen=True)
class ManagerConfig:
    """Plain settings for callers without the app's (tests, scripts)."""

    profile: str = DEFAULT_PROFILE
    container_runtime: str = ""


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
    state: Phase
    stage: str | None = None
    endpoint: str | None = None
    model: str | None = None
    container: str | None = None
    restarts: int = 0
    gpus: list[GpuInfo] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    gpu_note: str = ""  # e.g. "no GPU monitoring tool found (...)"; not an error
    # How the last run's process ended: exit_code, signal, oom (None while none ended).
    outcome: dict[str, Any] | None = None
    # A server Longdoc does not run (an endpoint, an external profile); not in the JSON.
    external: bool = False

    @classmethod
    def of(cls, found: Look, profile: str = "external") -> ServerStatus:
        """A look at an endpoint Longdoc does not manage, as a status."""
        return cls(
            profile=profile,
            state=found.phase,
            stage=found.stage,
            endpoint=found.url,
            model=found.model,
            metrics=dict(found.metrics),
            error=found.error,
            external=True,
        )

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
            "outcome": self.outcome,
        }


class ServerManager:
    """Manages the one Longdoc server of a data directory."""

    def __init__(self, data_dir: Path, settings: ManagerSettings | None = None) -> None:
        self.home = Path(data_dir)
        self.settings: ManagerSettings = settings if settings is not None else ManagerConfig()
        self.paths = Paths(self.home)

    # ----- profiles -----------------------------------------------------------------------

    def profile(self, name: str | None = None) -> Profile:
        """The profile in the settings (or ``name``), loaded and validated."""
        return load_profile(name or self.settings.profile, self.home)

    # ----- start --------------------------------------------------------------------------

    def start(self, on_stage: StageCallback | None = None, wait: bool = True) -> Connection:
        """Start the server (or adopt the running one); with ``wait``, until it is ready.

        ``on_stage`` is called from this thread with each stage reached from now on (an
        adopted server's earlier progress is not replayed). Raises a ServerManagerError
        subclass naming what is missing, or ServerFailed.
        """
        profile = self.profile()
        if profile.is_external:
            return self._start_external(profile)
        with locked(self.paths):
            adopted = self._adopt_locked(read_state(self.paths), profile.name)
            if not adopted:
                self._launch_locked(profile)
        if not wait:
            connection = self.connection()
            if connection is None:
                raise ServerFailed(self._failure_text())
            return connection
        return self.wait_ready(on_stage, replay=not adopted)

    def _launch_locked(self, profile: Profile) -> None:
        runtime = run_checks(profile, self.settings.container_runtime)
        tp_size = profile.tp_size or count_gpus(profile.gpu_vendor) or 1
        api_key(self.paths)  # generated once, before the supervisor needs it
        engine = engine_for(profile, self.paths, runtime)
        state = ServerState(
            profile=profile.name,
            kind=profile.kind,
            endpoint=profile.endpoint,
            model=profile.model_name,
            port=profile.port,
            runtime=runtime.executable if runtime is not None else "",
            container=engine.container_name() if engine is not None else "",
        )
        write_state(self.paths, state)
        supervisor = spawn(self.paths, profile.name, state.runtime, tp_size)
        # Recorded before the lock is released, so a racing process sees a live supervisor.
        state.supervisor_pid, state.supervisor = supervisor.pid, supervisor.to_json()
        write_state(self.paths, state)
        log.info("started supervisor %d for profile %s", supervisor.pid, profile.name)

    def _start_external(self, profile: Profile) -> Connection:
        connection = _external(profile)
        reply, _ = list_models(connection.url, connection.api_key)
        failure = classify(reply.status) if reply.status != 200 else None
        if failure == Failure.UNREACHABLE:
            raise ExternalUnreachable(
                f"Nothing answers at {connection.url} (profile {profile.name}); check url in "
                f"{profile.user_file}."
            )
        if failure == Failure.UNAUTHORIZED:
            raise ExternalUnreachable(
                f"The server at {connection.url} refused the API key of profile "
                f"{profile.name}; set api_key in {profile.user_file}."
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
                    state=Phase.READY,
                    stage="ready",
                ),
            )
        return connection

    def wait_ready(
        self,
        on_stage: StageCallback | None = None,
        timeout_s: float | None = None,
        replay: bool = True,
    ) -> Connection:
        """Block until the managed server is ready, reporting stages; raise if it fails.

        Each run of the server (a restart is a new run) reports its own stages once; with
        ``replay`` false, stages reached before this call are skipped.
        """
        state = read_state(self.paths)
        run = state.restarts if state is not None else 0
        seen = len(state.stages) if state is not None and not replay else 0
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else 7 * 24 * 3600)
        while True:
            state = read_state(self.paths)
            if state is None:
                raise ServerFailed("The server was stopped before it became ready.")
            if state.restarts != run:
                run, seen = state.restarts, 0
            for key in state.stages[seen:]:
                if on_stage is not None and key in STAGE_BY_KEY:
                    on_stage(STAGE_BY_KEY[key])
            seen = max(seen, len(state.stages))
            if state.state == Phase.READY:
                engine = _engine(state.profile, self.home)
                return Connection(state.endpoint, read_api_key(self.paths), state.model, engine)
            if state.state == Phase.FAILED:
                raise _failure(state)
            if not supervisor_running(state):
                # It may have written "failed" just before exiting.
                state = read_state(self.paths)
                if state is not None and state.state == Phase.FAILED:
                    raise _failure(state)
                raise ServerFailed(
                    f"The server supervisor exited unexpectedly; see {self.paths.supervisor_log}."
                )
            if time.monotonic() > deadline:
                raise ServerFailed("The server did not become ready in time.")
            time.sleep(POLL_S)

    def _failure_text(self) -> str:
        state = read_state(self.paths)
        return (state.error if state is not None else "") or "The server failed to start."

    # ----- adopt --------------------------------------------------------------------------

    def adopt(self) -> bool:
        """Use a server that is already running (started by another Longdoc process, or
        left running by a supervisor that died); True when there is one."""
        with locked(self.paths):
            return self._adopt_locked(read_state(self.paths), None)

    def _adopt_locked(self, state: ServerState | None, wanted: str | None) -> bool:
        if state is not None and state.external:
            clear_state(self.paths)
            return False
        if state is not None and state.state != Phase.FAILED and supervisor_running(state):
            if wanted is not None and state.profile != wanted:
                raise OtherServerRunning(
                    f"A Longdoc server with profile {state.profile!r} is already running; "
                    f"stop it first (longdoc server stop) to use profile {wanted!r}."
                )
            return True
        engine_class = ENGINES.get(state.kind) if state is not None else None
        if state is not None and engine_class is not None and not engine_class.adoptable:
            engine_class.end_orphan(state, self._grace(state))
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
        if not running or (state is not None and state.state == Phase.FAILED):
            for name in running:
                runtime.remove(name)
            if state is not None and state.state != Phase.FAILED:
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
        supervisor = spawn(
            self.paths, profile.name, runtime.executable, profile.tp_size or 1, adopt=True
        )
        new_state.supervisor_pid, new_state.supervisor = supervisor.pid, supervisor.to_json()
        write_state(self.paths, new_state)
        log.info("adopted container %s (supervisor %d)", name, supervisor.pid)
        return True

    def _runtime_for(self, state: ServerState | None) -> Runtime | None:
        """The runtime that ran (or would run) our container; None when there is none."""
        if state is not None and state.runtime:
            return Runtime(state.runtime) if Path(state.runtime).exists() else None
        try:
            profile = self.profile()
        except ServerManagerError:
            return None
        engine_class = ENGINES.get(profile.kind)
        if engine_class is None or not engine_class.uses_runtime:
            return None
        try:
            return Runtime(detect_runtime(profile.runtime or self.settings.container_runtime))
        except NoContainerRuntime:
            return None

    # ----- stop ---------------------------------------------------------------------------

    def stop(self) -> bool:
        """Stop gracefully (forcefully after the grace period); True if something ran.

        Only processes proven to be the recorded ones are signalled (pid, start time and
        command line), and only containers labelled with this data directory are removed.
        """
        with locked(self.paths):
            state = read_state(self.paths)
            stopped = False
            grace = self._grace(state)
            supervisor = state.supervisor_identity if state is not None else None
            if supervisor is not None and supervisor.alive():
                stopped = True
                supervisor.signal(signal.SIGTERM)
                if not supervisor.wait_gone(grace + 60):
                    log.warning("supervisor %d did not stop; killing it", supervisor.pid)
                    supervisor.signal(signal.SIGKILL)
            engine = state.process_identity if state is not None else None
            if engine is not None and engine.terminate(grace, group=True):
                stopped = True
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

    def _grace(self, state: ServerState | None) -> float:
        with contextlib.suppress(ServerManagerError):
            return self.profile(state.profile if state else None).grace_period_s
        return 30.0

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
            state=Phase.STARTING,
            stage=state.stage,
            endpoint=state.endpoint,
            model=state.model,
            container=state.container or None,
            restarts=state.restarts,
            error=state.error or None,
            outcome=state.outcome,
            external=state.external,
        )
        if state.external:
            self._probe_into(status, read_api_key(self.paths))
            return status
        if gpus:
            self._gpus_into(status, state.profile)
        if state.state in (Phase.FAILED, Phase.RUNTIME_DOWN):
            status.state = state.state
            return status
        if not supervisor_running(state):
            if probe.health(state.endpoint) == "unreachable":
                status.state, status.stage = Phase.STOPPED, None
                status.error = "The server is not running (its supervisor ended unexpectedly)."
                return status
            engine = ENGINES.get(state.kind)
            if engine is not None:
                status.error = engine.orphan_note(state)
            self._probe_into(status, read_api_key(self.paths))
            return status
        if state.state == Phase.STOPPING:
            status.state, status.stage = Phase.BUSY, "stopping"
        elif state.state == Phase.READY:
            self._probe_into(status, read_api_key(self.paths))
        return status

    def _status_without_state(self, gpus: bool) -> ServerStatus:
        status = ServerStatus(profile=self.settings.profile, state=Phase.STOPPED)
        with contextlib.suppress(ServerManagerError):
            profile = self.profile()
            if profile.is_external:
                found = look(profile.endpoint, profile.api_key, profile.model_name)
                return ServerStatus.of(found, profile.name)
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
            status.metrics = probe.parse_metrics(reply.text)
            queued = status.metrics.get("running_requests", 0) + status.metrics.get(
                "queued_requests", 0
            )
            status.state = Phase.BUSY if queued > 0 else Phase.READY
            status.stage = "ready"
            return
        if reply.status == 0:
            status.state = Phase.STOPPED if status.state == Phase.STOPPED else Phase.BUSY
            if status.profile and status.error is None:
                status.error = f"Nothing answers at {base}."
            return
        # No metrics (disabled, or a timeout during a long prefill): ask /health instead.
        health = probe.health(base)
        status.state = Phase.READY if health == "ok" else Phase.BUSY
        status.stage = "ready"

    # ----- clients, logs, watching ----------------------------------------------------------

    def connection(self) -> Connection | None:
        """Endpoint, key and model for clients, or None when no server is known."""
        return connection_for(self.home, self.settings)

    def logs(self, follow: bool = False, stop: threading.Event | None = None) -> Iterator[str]:
        """The server's log lines, oldest first; ``follow`` keeps yielding new ones.

        The API key is blanked in every line. Raises NotRunning when there is no log yet.
        """
        if not follow and not self.paths.log_file.exists():
            raise NotRunning(
                f"No server log yet in {self.paths.logs}: the server has not been started "
                f"from this data directory (longdoc server start)."
            )
        secrets = (read_api_key(self.paths),)
        return read_lines(self.paths.log_file, follow=follow, stop=stop, secrets=secrets)


def _failure(state: ServerState) -> ServerManagerError:
    """The typed error a failed state stands for (its exit code says which)."""
    error_type = ERRORS_BY_CODE.get(state.error_code, ServerFailed)
    return error_type(state.error or "The server failed to start.")


def connection_for(data_dir: Path, settings: ManagerSettings) -> Connection | None:
    """The managed server's connection, cheaply (state file and key); None if none runs.

    With an ``external`` profile in the settings, its URL and key even without a start.
    """
    paths = Paths(Path(data_dir))
    state = read_state(paths)
    if state is not None and state.state != Phase.FAILED:
        if state.external:
            with contextlib.suppress(ServerManagerError):
                profile = load_profile(state.profile, Path(data_dir))
                return _external(profile)
        elif state.state == Phase.READY or supervisor_running(state):
            engine = _engine(state.profile, Path(data_dir))
            return Connection(state.endpoint, read_api_key(paths), state.model, engine)
    try:
        profile = load_profile(settings.profile, Path(data_dir))
    except ServerManagerError:
        return None
    if profile.is_external:
        return _external(profile)
    return None


def endpoint_status(url: str, api_key: str, model: str = "") -> ServerStatus:
    """How a server Longdoc does not manage is doing (``LONGDOC_ENDPOINT``, the app's
    external mode): one look at it, as a status."""
    return ServerStatus.of(look(url, api_key, model))


class TargetSettings(ManagerSettings, Protocol):
    """Settings that may name an endpoint instead of the managed server."""

    @property
    def endpoint(self) -> str:
        """The server's URL; empty for the managed one."""
        ...

    @property
    def api_key(self) -> str:
        """The endpoint's key."""
        ...

    @property
    def model(self) -> str:
        """The model to ask; empty for the one the server lists."""
        ...


def server_status(data_dir: Path, settings: TargetSettings, gpus: bool = True) -> ServerStatus:
    """The status of the server the settings use, as ``server status`` and the app show
    it: the endpoint's when one is set (Longdoc does not manage it), else the managed one's."""
    if settings.endpoint:
        return endpoint_status(settings.endpoint, settings.api_key, settings.model)
    return ServerManager(data_dir, settings).status(gpus=gpus)


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
