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

from server_manager import probe
from server_manager.errors import (
    EXIT_SERVER_FAILED,
    RunRefused,
    RuntimePermission,
    ServerManagerError,
)
from server_manager.logs import ServerLog, redactor
from server_manager.processes import ProcessIdentity, identify, identify_started
from server_manager.profiles import (
    LABEL_HOME,
    Profile,
    container_argv,
    container_env,
    engine_config_text,
    env_file_text,
    load_profile,
    native_argv,
    native_env,
)
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
# Once ready, liveness is checked on /v1/models: cheap, unlike /health, which runs a
# one-token generation on SGLang and can answer a false 503 during a long prefill.
LIVENESS_EVERY_S = 5.0


def supervisor_running(state: ServerState | None) -> bool:
    """True when the state's supervisor is the very process recorded (not a pid reused)."""
    identity = state.supervisor_identity if state is not None else None
    return identity is not None and identity.alive()


@dataclass(frozen=True)
class Outcome:
    """Why the server is down: the sentence, whether restarting could help, the exit code."""

    reason: str
    restartable: bool = True
    exit_code: int = EXIT_SERVER_FAILED


class Supervisor:
    """Runs one profile's server until told to stop or it keeps failing."""

    def __init__(self, paths: Paths, profile: Profile, runtime: str, tp_size: int) -> None:
        self.paths = paths
        self.profile = profile
        self.runtime = Runtime(runtime) if runtime else None
        self.tp_size = tp_size
        self.key = api_key(paths)
        self._redact = redactor(self.key)
        self.stop_requested = threading.Event()
        self._lock = threading.Lock()
        self._state: ServerState | None = None
        self.progress = LoadProgress()
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.server_log = ServerLog(paths.log_file)
        self._process: subprocess.Popen[bytes] | None = None
        self._container_id = ""
        self._follower: subprocess.Popen[bytes] | None = None
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
                    state="starting",
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
        self._update(state="starting", pid=0, process=None, container_id="")
        self._reach(Stage.STARTING_CONTAINER)
        profile = self.profile
        try:
            if profile.engine == "sglang":
                write_private(self.paths.engine_config, engine_config_text(self.key))
            if profile.kind == "container":
                assert self.runtime is not None
                self._remove_own_container()
                write_private(
                    self.paths.engine_env, env_file_text(container_env(profile, self.key))
                )
                argv = container_argv(
                    profile,
                    runtime=self.runtime.executable,
                    tp_size=self.tp_size,
                    home=self.paths.home,
                    env_file=self.paths.engine_env,
                    config_file=self.paths.engine_config,
                )
                log.info("running %s", self._redact(" ".join(argv)))
                self._container_id = self.runtime.run(argv)
                self._update(container_id=self._container_id)
                self._follow_container(tail=None)
            else:
                argv = native_argv(
                    profile, tp_size=self.tp_size, config_file=self.paths.engine_config
                )
                log.info("running %s", self._redact(" ".join(argv)))
                process = subprocess.Popen(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=native_env(profile, os.environ, self.key),
                    cwd=profile.workdir or None,
                    # Its own process group, so stop reaches SGLang's scheduler children too.
                    start_new_session=True,
                )
                self._process = process
                identity = identify_started(process.pid)
                self._update(
                    pid=process.pid, process=identity.to_json() if identity is not None else None
                )
                assert process.stdout is not None
                self._start_reader(process.stdout)
        except (RunRefused, RuntimePermission) as exc:
            # Permanent: the same run would be refused again, so no backoff and no retry.
            return Outcome(str(exc), restartable=False, exit_code=exc.exit_code)
        except ServerManagerError as exc:
            return Outcome(f"The server could not be started: {exc}", exit_code=exc.exit_code)
        except OSError as exc:
            return Outcome(f"The server could not be started: {exc}", restartable=False)
        self.server_log.write(f"--- longdoc: started profile {profile.name} ---")
        return None

    def _remove_own_container(self) -> None:
        """Remove a leftover container of ours by the profile's name; never someone else's."""
        assert self.runtime is not None
        name = self.profile.container_name
        owner = self.runtime.owner(name, LABEL_HOME)
        if owner is None:
            return
        if owner != str(self.paths.home):
            raise RunRefused(
                f"A container named {name} that this Longdoc did not start already exists "
                f"(label {LABEL_HOME}={owner or 'none'}); it is left alone: remove it, or set "
                f"another port in {self.profile.user_file}."
            )
        self.runtime.remove(name)

    def _attach(self) -> Outcome | None:
        """Adopt a container that is already running (its supervisor died)."""
        log.info("adopting running container %s", self.profile.container_name)
        assert self.runtime is not None
        # The run goes on: its stages so far stay recorded, and are not recorded twice.
        self._run_stages = {STAGE_BY_KEY[k] for k in self.state.stages if k in STAGE_BY_KEY}
        inspected = self.runtime.inspect(self.profile.container_name)
        self._container_id = inspected.id if inspected is not None else ""
        self._update(container_id=self._container_id)
        self._follow_container(tail=0)
        return None

    def _follow_container(self, tail: int | None) -> None:
        assert self.runtime is not None
        args = [self.runtime.executable, "logs", "--follow"]
        if tail is not None:
            args += ["--tail", str(tail)]
        follower = subprocess.Popen(
            [*args, self.profile.container_name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self._follower = follower
        assert follower.stdout is not None
        self._start_reader(follower.stdout)

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
            exited = self._exited()
            if exited is not None:
                return Outcome(exited)
            now = time.monotonic()
            base = self.profile.endpoint
            if not ready:
                if probe.health(base) == "ok" and probe.lists_model(
                    base, self.key, self.profile.model_name
                ):
                    ready = True
                    last_live = now
                    self._reach(Stage.READY)
                    self._update(state="ready", error="")
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
            reply = probe.get(f"{base}/v1/models", self.key, timeout=10.0)
            if reply.status != 0:  # any answer, even a timeout (408), means it is alive
                last_live = now
            elif now - last_live > self.profile.ready_timeout_s:
                return Outcome(
                    f"The server stopped answering for {self.profile.ready_timeout_s:g} s"
                )
        return None

    def _exited(self) -> str | None:
        """Why the server process is gone, or None while it runs."""
        if self.profile.kind == "container":
            assert self.runtime is not None
            try:
                st = self.runtime.inspect(self.profile.container_name)
            except ServerManagerError as exc:  # a hung runtime is not a dead server
                log.warning("inspect failed: %s", exc)
                return None
            if st is None or (self._container_id and st.id != self._container_id):
                return "The server container disappeared (removed outside Longdoc)"
            if st.running:
                return None
            return f"The server container {st.describe_exit()}"
        process = self._process
        if process is None:
            return "The server process is gone"
        if not _exited_unreaped(process):
            return None
        # Its group's leftovers (SGLang's schedulers) go while the unreaped leader still
        # holds the pid, so the group id cannot have passed to anyone else.
        _signal_group(process, signal.SIGKILL)
        code = process.wait()
        if code < 0:
            return f"The server process was killed by signal {-code}"
        return f"The server process exited with code {code}"

    # ----- ending -------------------------------------------------------------------------

    def _collect(self) -> None:
        """Let the log reader drain the last lines of a server that ended."""
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._follower is not None:
            with contextlib.suppress(ProcessLookupError):
                self._follower.kill()
            self._follower.wait()
            self._follower = None

    def _remove_server(self) -> None:
        """Make sure nothing of the last run is left (a dead container is removed too)."""
        if self.profile.kind == "container":
            assert self.runtime is not None
            name = self.profile.container_name
            with contextlib.suppress(ServerManagerError):
                # By id when known: the very container this supervisor ran; else by name
                # only if it carries this home's label (a refused run can leave one).
                if self._container_id:
                    self.runtime.remove(self._container_id)
                elif self.runtime.owner(name, LABEL_HOME) == str(self.paths.home):
                    self.runtime.remove(name)
        elif self._process is not None:
            _kill_group(self._process, 0)
            self._process = None

    def _shutdown(self) -> None:
        """Graceful stop (SIGTERM), forceful after the grace period; leaves nothing."""
        self._update(state="stopping")
        grace = self.profile.grace_period_s
        if self.profile.kind == "container":
            assert self.runtime is not None
            if self._container_id:
                with contextlib.suppress(ServerManagerError):
                    self.runtime.stop(self._container_id, grace)
        elif self._process is not None:
            _kill_group(self._process, grace)
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
        self._update(state="failed", error=why, error_code=outcome.exit_code, pid=0, process=None)


def _exited_unreaped(process: subprocess.Popen[bytes]) -> bool:
    """True once the process has exited, leaving it unreaped (its pid stays reserved)."""
    if process.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the process's group, only while its leader is not yet reaped (ours for sure)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)


def _kill_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds, then reap the leader."""
    _signal_group(process, signal.SIGTERM if grace > 0 else signal.SIGKILL)
    deadline = time.monotonic() + (grace if grace > 0 else 10)
    while not _exited_unreaped(process) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Children that outlived the leader (SGLang's schedulers) are in the same group.
    _signal_group(process, signal.SIGKILL)
    process.wait(timeout=10)


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
                state.state, state.error, state.error_code = "failed", str(exc), exc.exit_code
                write_state(paths, state)
        return 1
    return Supervisor(paths, profile, args.runtime, args.tp_size).run(adopt=args.adopt)
