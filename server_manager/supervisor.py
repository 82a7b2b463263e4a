"""The one process that owns a server: launches it, follows its log, restarts it, stops it.

``ServerManager.start`` spawns it detached (``python -m server_manager supervise``), so the
server keeps being watched and restarted after the CLI exits or the GUI closes, and every
Longdoc process sees the same ``state.json``. SIGTERM asks it to stop the server gracefully.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from longdoc_net.endpoint import Phase
from server_manager import probe
from server_manager.engines import Engine, ProcessOutcome, engine_for
from server_manager.errors import (
    EXIT_SERVER_FAILED,
    RunRefused,
    RuntimeDown,
    RuntimePermission,
    ServerManagerError,
)
from server_manager.logs import ServerLog, redactor
from server_manager.processes import ProcessIdentity, identify
from server_manager.profiles import Profile, engine_config_text, load_profile
from server_manager.progress import STAGE_BY_KEY, LoadProgress, Stage
from server_manager.runtime import Runtime
from server_manager.state import (
    Paths,
    ServerState,
    api_key,
    clear_state,
    locked,
    read_state,
    write_private,
    write_state,
)

log = logging.getLogger("longdoc.server")

# Started as `python -m server_manager supervise` (a package __main__, which avoids runpy's
# warning about re-importing a module the package already imported).
COMMAND = ("-m", "server_manager", "supervise")
TAIL_LINES = 20
POLL_STARTING_S = 0.5
POLL_READY_S = 2.0
# Once ready, liveness is checked on the model list: cheap, unlike /health, which runs a
# one-token generation on SGLang and can answer a false 503 during a long prefill.
LIVENESS_EVERY_S = 5.0


# While the runtime's daemon is down, how often to ask whether it is back.
POLL_RUNTIME_S = 2.0


class _Resume(Exception):
    """The runtime came back and the server had ended meanwhile (``ended`` says how)."""

    def __init__(self, ended: ProcessOutcome) -> None:
        super().__init__(ended.describe())
        self.ended = ended


def supervisor_running(state: ServerState | None) -> bool:
    """True when the state's supervisor is the very process recorded (not a pid reused)."""
    identity = state.supervisor_identity if state is not None else None
    return identity is not None and identity.alive()


@dataclass(frozen=True)
class Outcome:
    """Why the server is down: how its process ended (when it did), the sentence, whether
    restarting could help, and the exit code a failure reports."""

    reason: str
    restartable: bool = True
    exit_code: int = EXIT_SERVER_FAILED
    process: ProcessOutcome | None = None
    resume: bool = False  # the runtime is back and the server with it: no failure

    @classmethod
    def ended(cls, process: ProcessOutcome) -> Outcome:
        """The server's process ended: an OOM kill is not restarted (it would recur)."""
        reason = process.describe()
        if process.oom:
            reason += (
                "; not restarted, since the same settings would run out of memory again: "
                "lower context_length or mem_fraction_static in the profile, then start it"
            )
        return cls(reason, process.restartable, process=process)


class Supervisor:
    """Runs one profile's server until told to stop or it keeps failing."""

    def __init__(self, paths: Paths, profile: Profile, runtime: str, tp_size: int) -> None:
        self.paths = paths
        self.profile = profile
        self.runtime = Runtime(runtime) if runtime else None
        engine = engine_for(profile, paths, self.runtime)
        if engine is None:
            raise ServerManagerError(f"Profile {profile.name} names a server Longdoc does not run.")
        self.engine: Engine = engine
        self.tp_size = tp_size
        self.key = api_key(paths)
        self._redact = redactor(self.key)
        self.stop_requested = threading.Event()
        self._lock = threading.Lock()
        self._state: ServerState | None = None
        self.progress = LoadProgress()
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.server_log = ServerLog(paths.log_file)
        self._reader: threading.Thread | None = None
        self._run_stages: set[Stage] = set()  # stages of the current run (reset on restart)

    # ----- state --------------------------------------------------------------------------

    @property
    def state(self) -> ServerState:
        """The state this supervisor owns (set in ``run``)."""
        assert self._state is not None
        return self._state

    def _update(self, **changes: object) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(self.state, key, value)
            write_state(self.paths, self.state)

    def _reach(self, stage: Stage) -> None:
        """Record a stage of the current run (``stages`` restarts empty with every run).

        Stages only move forward and none is skipped: the probe can see the server ready
        before the log reader (``logs --follow`` lags under load) has seen its last lines,
        and being ready means it passed them all.
        """
        with self._lock:
            last = max(self._run_stages, default=None)
            if last is not None and stage <= last:
                return
            for passed in Stage:
                if (last is None or passed > last) and passed <= stage:
                    self._run_stages.add(passed)
                    self.state.stages.append(passed.key)
            self.state.stage = stage.key
            self.state.max_total_num_tokens = self.progress.max_total_num_tokens
            self.state.context_len = self.progress.context_len
            write_state(self.paths, self.state)

    # ----- main loop ----------------------------------------------------------------------

    def run(self, adopt: bool = False) -> int:
        """Supervise until stopped (0) or given up (1)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        # The starter holds the lock until it has recorded our pid; wait for it.
        with locked(self.paths):
            state = read_state(self.paths)
            if state is None:
                state = ServerState(
                    profile=self.profile.name,
                    kind=self.profile.kind,
                    endpoint=self.profile.endpoint,
                    model=self.profile.model_name,
                    port=self.profile.port,
                )
            state.supervisor_pid = os.getpid()
            me = identify(os.getpid())
            state.supervisor = me.to_json() if me is not None else None
            self._state = state
            write_state(self.paths, state)
        log.info("supervising profile %s (pid %d, adopt=%s)", self.profile.name, os.getpid(), adopt)
        restarts_at: list[float] = []
        attach = adopt
        try:
            while True:
                outcome = self._attach() if attach else self._launch()
                attach = False
                if outcome is None:
                    outcome = self._watch()
                if outcome is None:
                    self._shutdown()
                    clear_state(self.paths)
                    log.info("stopped on request")
                    return 0
                self._collect()
                if not self._still_owner():
                    # A `stop` from another process cleared or replaced the state while we
                    # were not looking: the server is theirs to end, not ours to restart.
                    log.info("state no longer names this supervisor; exiting")
                    self._remove_server()
                    return 0
                if outcome.resume:
                    # The runtime's daemon came back without the server: start it again
                    # at once; the server did not fail, so nothing counts as a restart.
                    log.info("%s; starting the server again", outcome.reason)
                    self._remove_server()
                    continue
                delay = (
                    self.profile.restart.next_delay(restarts_at, time.monotonic())
                    if outcome.restartable
                    else None
                )
                if delay is None:
                    self._give_up(outcome, len(restarts_at))
                    return 1
                log.warning("%s; restarting in %s s", outcome.reason, f"{delay:g}")
                self._remove_server()
                # The dead engine's pid and container are forgotten before the wait: a
                # stop during the backoff must find nothing of it to signal.
                self._update(
                    state=Phase.STARTING,
                    restarts=self.state.restarts + 1,
                    error=f"{outcome.reason}; restarting in {delay:g} s.",
                    pid=0,
                    process=None,
                    container_id="",
                )
                if self.stop_requested.wait(delay):
                    self._shutdown()
                    clear_state(self.paths)
                    return 0
                restarts_at.append(time.monotonic())
        except Exception:
            log.exception("supervisor crashed")
            with contextlib.suppress(Exception):
                self._give_up(
                    Outcome("The server supervisor crashed (see supervisor.log)", False),
                    len(restarts_at),
                )
            return 1
        finally:
            self.server_log.close()

    def _still_owner(self) -> bool:
        current = read_state(self.paths)
        return current is not None and current.supervisor_pid == os.getpid()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stop_requested.set()

    # ----- launching ----------------------------------------------------------------------

    def _launch(self) -> Outcome | None:
        self.progress.reset()
        self.tail.clear()
        self._run_stages = set()
        with self._lock:
            self.state.stages = []  # progress is per run: a restart does not replay the last
        self._update(state=Phase.STARTING, pid=0, process=None, container_id="", outcome=None)
        self._reach(Stage.STARTING_CONTAINER)
        profile = self.profile
        try:
            if profile.engine == "sglang":
                write_private(self.paths.engine_config, engine_config_text(self.key))
            self._update(
                **self.engine.launch(self.key, self.tp_size, self._redact, self._start_reader)
            )
        except RuntimeDown as exc:
            if not self._await_runtime(exc):
                return None  # stopped meanwhile: the watch sees the stop request
            return Outcome("The container runtime is back; starting the server", resume=True)
        except (RunRefused, RuntimePermission) as exc:
            # Permanent: the same run would be refused again, so no backoff and no retry.
            return Outcome(str(exc), restartable=False, exit_code=exc.exit_code)
        except ServerManagerError as exc:
            return Outcome(f"The server could not be started: {exc}", exit_code=exc.exit_code)
        except OSError as exc:
            return Outcome(f"The server could not be started: {exc}", restartable=False)
        self.server_log.write(f"--- longdoc: started profile {profile.name} ---")
        return None

    def _attach(self) -> Outcome | None:
        """Adopt a server that is already running (its supervisor died)."""
        # The run goes on: its stages so far stay recorded, and are not recorded twice.
        self._run_stages = {STAGE_BY_KEY[k] for k in self.state.stages if k in STAGE_BY_KEY}
        self._update(**self.engine.attach(self._start_reader))
        return None

    def _start_reader(self, stream: IO[bytes]) -> None:
        reader = threading.Thread(
            target=self._read, args=(stream,), daemon=True, name="longdoc-server-log"
        )
        self._reader = reader
        reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        """Copy output to the rotating log and turn it into stages."""
        for raw in iter(stream.readline, b""):
            # SGLang logs its whole ServerArgs, key included, at start-up: nothing Longdoc
            # stores or shows may carry the key.
            line = self._redact(raw.decode("utf-8", "replace").rstrip("\r\n"))
            self.server_log.write(line)
            self.tail.append(line)
            for event in self.progress.feed(line):
                if event.stage != Stage.READY:
                    self._reach(event.stage)
        stream.close()

    # ----- watching -----------------------------------------------------------------------

    def _watch(self) -> Outcome | None:
        """Wait for readiness, then liveness; None when a stop was requested."""
        started = time.monotonic()
        ready = False
        last_live = time.monotonic()
        next_liveness = 0.0
        while not self.stop_requested.wait(POLL_READY_S if ready else POLL_STARTING_S):
            try:
                ended = self._ended()
            except _Resume as back:
                return Outcome(
                    "The container runtime is back, without the server it had when it "
                    f"went away ({back.ended.describe()})",
                    resume=True,
                    process=back.ended,
                )
            if ended is not None:
                return Outcome.ended(ended)
            now = time.monotonic()
            base = self.profile.endpoint
            if not ready:
                if probe.health(base) == "ok" and probe.lists_model(
                    base, self.key, self.profile.model_name
                ):
                    ready = True
                    last_live = now
                    self._reach(Stage.READY)
                    self._update(state=Phase.READY, error="")
                    log.info("ready at %s", base)
                elif now - started > self.profile.ready_timeout_s:
                    return Outcome(
                        f"The server did not become ready within "
                        f"{self.profile.ready_timeout_s:g} s",
                        restartable=False,
                    )
                continue
            if now < next_liveness:
                continue
            next_liveness = now + LIVENESS_EVERY_S
            if probe.answers(base, self.key, timeout=10.0):
                last_live = now
            elif now - last_live > self.profile.ready_timeout_s:
                return Outcome(
                    f"The server stopped answering for {self.profile.ready_timeout_s:g} s"
                )
        return None

    def _ended(self) -> ProcessOutcome | None:
        """How the server ended, or None while it runs (or while its runtime is not there
        to ask: a daemon that went away is waited for, see ``_wait_for_runtime``)."""
        try:
            return self.engine.ended()
        except RuntimeDown as exc:
            return self._wait_for_runtime(exc)
        except ServerManagerError as exc:  # a hung runtime is not a dead server
            log.warning("inspect failed: %s", exc)
            return None

    def _wait_for_runtime(self, down: RuntimeDown) -> ProcessOutcome | None:
        """The daemon went away while the server ran: wait for it, then follow the server
        again, or start it again if the daemon came back without it (``_Resume``)."""
        was = self.state.state
        if not self._await_runtime(down):
            return None
        try:
            ended = self.engine.ended()
        except ServerManagerError:
            return None  # asked again at the next look
        if ended is None:
            self._update(state=was, error="")
            self.engine.attach(self._start_reader)
            return None
        raise _Resume(ended)

    def _await_runtime(self, down: RuntimeDown) -> bool:
        """Say the runtime's daemon is down (one state, one line) and wait, restarting
        nothing, until it answers again (True) or a stop is requested (False)."""
        log.warning("%s; waiting for it to come back", down)
        self.engine.close_output()  # the log follower ended with the daemon
        self._update(state=Phase.RUNTIME_DOWN, error=f"{down} The server resumes when it is back.")
        assert self.runtime is not None
        while not self.stop_requested.wait(POLL_RUNTIME_S):
            try:
                self.runtime.check_usable()
            except ServerManagerError:
                continue
            log.info("the container runtime is back")
            return True
        return False

    # ----- ending -------------------------------------------------------------------------

    def _collect(self) -> None:
        """Let the log reader drain the last lines of a server that ended."""
        if self._reader is not None:
            self._reader.join(timeout=5)
        self.engine.close_output()

    def _remove_server(self) -> None:
        """Make sure nothing of the last run is left (a dead container is removed too)."""
        self.engine.remove()

    def _shutdown(self) -> None:
        """Graceful stop (SIGTERM), forceful after the grace period; leaves nothing."""
        self._update(state=Phase.STOPPING)
        self.engine.stop(self.profile.grace_period_s)
        self._collect()
        self._remove_server()

    def _give_up(self, outcome: Outcome, restarts: int) -> None:
        if outcome.restartable:
            why = (
                f"{outcome.reason}; gave up after {restarts} restart(s) within "
                f"{self.profile.restart.window_s:g} s."
            )
        else:
            why = outcome.reason if outcome.reason.endswith(".") else f"{outcome.reason}."
        if self.tail:
            why += " Last log lines:\n" + "\n".join(self.tail)
        log.error("%s", why)
        self._remove_server()
        self._update(
            state=Phase.FAILED,
            error=why,
            error_code=outcome.exit_code,
            pid=0,
            process=None,
            outcome=outcome.process.to_json() if outcome.process is not None else None,
        )


def spawn(
    paths: Paths, profile: str, runtime: str, tp_size: int, adopt: bool = False
) -> ProcessIdentity:
    """Start a detached supervisor and return who it is; its output goes to supervisor.log.

    The supervisor double-forks (``--detach``) so it is nobody's child: neither a zombie in
    a long-running GUI nor a process the caller has to wait for.
    """
    paths.ensure()
    argv = [
        sys.executable,
        *COMMAND,
        "--home",
        str(paths.home),
        "--profile",
        profile,
        "--runtime",
        runtime,
        "--tp-size",
        str(tp_size),
        "--detach",
    ]
    if adopt:
        argv.append("--adopt")
    env = dict(os.environ)
    # Importable from a source checkout as well as from an installed package.
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))
    with open(paths.supervisor_log, "ab") as log_file:
        # A new session: no terminal signals reach it when the CLI is interrupted.
        result = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_file,
            start_new_session=True,
            env=env,
            timeout=60,
            check=False,
        )
    try:
        pid = int(result.stdout.decode().strip())
    except ValueError:
        pid = 0
    identity = identify(pid)
    if identity is None:
        raise ServerManagerError(
            f"The server supervisor could not be started; see {paths.supervisor_log}."
        )
    return identity


def _detach(log_path: Path) -> None:
    """Fork; the parent prints the child's pid and exits, the child writes to the log."""
    child = os.fork()
    if child:
        os.write(1, f"{child}\n".encode())
        os._exit(0)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m server_manager supervise``."""
    parser = argparse.ArgumentParser(prog="python -m server_manager supervise")
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--runtime", default="")
    parser.add_argument("--tp-size", type=int, default=1)
    parser.add_argument("--adopt", action="store_true")
    parser.add_argument("--detach", action="store_true")
    args = parser.parse_args(argv)
    paths = Paths(args.home)
    if args.detach:
        _detach(paths.supervisor_log)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s supervisor[%(process)d] %(levelname)s %(message)s",
    )
    try:
        profile = load_profile(args.profile, args.home)
    except ServerManagerError as exc:
        log.error("%s", exc)
        with locked(paths):
            state = read_state(paths)
            if state is not None:
                state.state, state.error, state.error_code = Phase.FAILED, str(exc), exc.exit_code
                write_state(paths, state)
        return 1
    return Supervisor(paths, profile, args.runtime, args.tp_size).run(adopt=args.adopt)
