"""The two ways Longdoc runs a server, behind one interface: a container or a native process.

The supervisor and the manager ask an :class:`Engine` (``engine_for(profile, ...)``, the one
place that looks at the profile's kind) to launch, attach, tell how the server ended, remove
what is left and stop; neither switches on the kind itself. How a server ended is a
:class:`ProcessOutcome` (exit code, signal, OOM), modelled on qutebrowser's: an OOM kill is
told apart from any other exit, and not restarted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any, ClassVar

from server_manager.errors import RunRefused, ServerManagerError
from server_manager.processes import identify_started
from server_manager.profiles import (
    LABEL_HOME,
    Profile,
    container_argv,
    container_env,
    env_file_text,
    native_argv,
    native_env,
)
from server_manager.runtime import ContainerState, Runtime
from server_manager.state import Paths, ServerState, write_private

log = logging.getLogger("longdoc.server")


@dataclass(frozen=True)
class ProcessOutcome:
    """How the server's process (or container) ended, typed.

    ``exit_code`` for a normal exit, ``signal`` for a kill, ``oom`` when the kernel killed it
    for lack of memory; ``vanished`` when it was removed outside Longdoc.
    """

    what: str  # "The server container", "The server process"
    exit_code: int | None = None
    signal: int | None = None
    oom: bool = False
    vanished: bool = False

    @property
    def restartable(self) -> bool:
        """An OOM kill would happen again with the same settings: not restarted."""
        return not self.oom

    def describe(self) -> str:
        """One sentence without a final stop, e.g. "The server process was killed by
        signal 9"."""
        if self.oom:
            return f"{self.what} was killed for lack of memory (OOM)"
        if self.vanished:
            return f"{self.what} disappeared (removed outside Longdoc)"
        if self.signal is not None:
            code = f" (exit code {self.exit_code})" if self.exit_code is not None else ""
            return f"{self.what} was killed by signal {self.signal}{code}"
        if self.exit_code is not None:
            return f"{self.what} exited with code {self.exit_code}"
        return f"{self.what} is gone"

    def to_json(self) -> dict[str, Any]:
        """For ``state.json`` and ``status --json``."""
        return {"exit_code": self.exit_code, "signal": self.signal, "oom": self.oom}

    @classmethod
    def of_container(cls, st: ContainerState) -> ProcessOutcome:
        """From ``inspect``: 128+N is signal N (how runtimes report a kill)."""
        what = "The server container"
        code = st.exit_code
        if code is not None and code > 128:
            return cls(what, code, code - 128, oom=st.oom_killed)
        return cls(what, code, oom=st.oom_killed)

    @classmethod
    def of_returncode(cls, code: int, oom_kills_before: int | None) -> ProcessOutcome:
        """From ``Popen.returncode``; a SIGKILL is an OOM kill when the cgroup counted one."""
        what = "The server process"
        if code >= 0:
            return cls(what, code)
        oom = (
            -code == signal.SIGKILL
            and oom_kills_before is not None
            and ((oom_kill_count() or 0) > oom_kills_before)
        )
        return cls(what, None, -code, oom=oom)


def oom_kill_count() -> int | None:
    """The kernel's OOM-kill count for this process's cgroup (v2 ``memory.events``)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            rel = next((ln.split(":", 2)[2].strip() for ln in fh if ln.startswith("0::")), None)
        if rel is None:
            return None
        with open(f"/sys/fs/cgroup{rel}/memory.events", encoding="ascii") as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


StartReader = Callable[[IO[bytes]], None]


class Engine(ABC):
    """One way to run a profile's server (supervisor side) and to find or end it (manager)."""

    kind: ClassVar[str]
    uses_runtime: ClassVar[bool] = False  # runs through docker or podman
    adoptable: ClassVar[bool] = False  # a new supervisor can follow it when the last died

    def __init__(self, profile: Profile, paths: Paths, runtime: Runtime | None) -> None:
        self.profile = profile
        self.paths = paths
        self.runtime = runtime

    # ----- supervisor ---------------------------------------------------------------------

    @abstractmethod
    def launch(
        self, key: str, tp_size: int, redact: Callable[[str], str], read: StartReader
    ) -> dict[str, Any]:
        """Start the server; its output goes to ``read``. Returns state fields to record."""

    def attach(self, read: StartReader) -> dict[str, Any]:
        """Follow a server that already runs (its supervisor died); state fields to record."""
        raise ServerManagerError(f"A {self.kind} server cannot be adopted.")

    @abstractmethod
    def ended(self) -> ProcessOutcome | None:
        """How the server ended, or None while it runs."""

    @abstractmethod
    def remove(self) -> None:
        """Make sure nothing of the last run is left."""

    @abstractmethod
    def stop(self, grace_s: float) -> None:
        """Graceful stop (SIGTERM), forceful after ``grace_s``."""

    def close_output(self) -> None:  # noqa: B027 (a native server's pipe needs nothing)
        """Stop following the server's output (a log follower process, if any)."""

    # ----- manager ------------------------------------------------------------------------

    def container_name(self) -> str:
        """What ``state.json`` records as the container ("" for a native server)."""
        return ""

    @classmethod
    @abstractmethod
    def orphan_note(cls, state: ServerState) -> str:
        """What ``status`` says of a server whose supervisor ended while it still answers."""

    @classmethod
    def end_orphan(cls, state: ServerState, grace_s: float) -> None:
        """End a server that cannot be adopted (nothing to do for one that can)."""
        log.debug("a %s server is adopted, not ended", cls.kind)


class ContainerEngine(Engine):
    """The server in a docker or podman container, labelled with this data directory."""

    kind = "container"
    uses_runtime = True
    adoptable = True

    def __init__(self, profile: Profile, paths: Paths, runtime: Runtime | None) -> None:
        super().__init__(profile, paths, runtime)
        self.container_id = ""
        self._follower: subprocess.Popen[bytes] | None = None

    @property
    def _runtime(self) -> Runtime:
        assert self.runtime is not None, "a container engine needs a runtime"
        return self.runtime

    def container_name(self) -> str:
        return self.profile.container_name

    def launch(
        self, key: str, tp_size: int, redact: Callable[[str], str], read: StartReader
    ) -> dict[str, Any]:
        self._remove_own_container()
        write_private(self.paths.engine_env, env_file_text(container_env(self.profile, key)))
        argv = container_argv(
            self.profile,
            runtime=self._runtime.executable,
            tp_size=tp_size,
            home=self.paths.home,
            env_file=self.paths.engine_env,
            config_file=self.paths.engine_config,
        )
        log.info("running %s", redact(" ".join(argv)))
        self.container_id = self._runtime.run(argv)
        self._follow(read, tail=None)
        return {"container_id": self.container_id}

    def attach(self, read: StartReader) -> dict[str, Any]:
        log.info("adopting running container %s", self.profile.container_name)
        inspected = self._runtime.inspect(self.profile.container_name)
        self.container_id = inspected.id if inspected is not None else ""
        self._follow(read, tail=0)
        return {"container_id": self.container_id}

    def _remove_own_container(self) -> None:
        """Remove a leftover container of ours by the profile's name; never someone else's."""
        name = self.profile.container_name
        owner = self._runtime.owner(name, LABEL_HOME)
        if owner is None:
            return
        if owner != str(self.paths.home):
            raise RunRefused(
                f"A container named {name} that this Longdoc did not start already exists "
                f"(label {LABEL_HOME}={owner or 'none'}); it is left alone: remove it, or set "
                f"another port in {self.profile.user_file}."
            )
        self._runtime.remove(name)

    def _follow(self, read: StartReader, tail: int | None) -> None:
        args = [self._runtime.executable, "logs", "--follow"]
        if tail is not None:
            args += ["--tail", str(tail)]
        follower = subprocess.Popen(
            [*args, self.profile.container_name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # Dies with the supervisor, even a SIGKILLed one: a follower left behind would
            # run until `server stop` (or forever if the container is gone).
            preexec_fn=_die_with_parent,
        )
        self._follower = follower
        assert follower.stdout is not None
        read(follower.stdout)

    def ended(self) -> ProcessOutcome | None:
        # A hung or stopped runtime is not a dead server: its errors propagate to the
        # supervisor, which tells a daemon that went away from a container that did.
        st = self._runtime.inspect(self.profile.container_name)
        if st is None or (self.container_id and st.id != self.container_id):
            return ProcessOutcome("The server container", vanished=True)
        if st.running:
            return None
        return ProcessOutcome.of_container(st)

    def close_output(self) -> None:
        if self._follower is not None:
            with contextlib.suppress(ProcessLookupError):
                self._follower.kill()
            self._follower.wait()
            self._follower = None

    def remove(self) -> None:
        name = self.profile.container_name
        with contextlib.suppress(ServerManagerError):
            # By id when known: the very container this supervisor ran; else by name only
            # if it carries this home's label (a refused run can leave one).
            if self.container_id:
                self._runtime.remove(self.container_id)
            elif self._runtime.owner(name, LABEL_HOME) == str(self.paths.home):
                self._runtime.remove(name)

    def stop(self, grace_s: float) -> None:
        if self.container_id:
            with contextlib.suppress(ServerManagerError):
                self._runtime.stop(self.container_id, grace_s)

    @classmethod
    def orphan_note(cls, state: ServerState) -> str:
        return "The server runs without its supervisor; `longdoc server start` adopts it."


class NativeEngine(Engine):
    """The server as a process of this machine (SGLang or vLLM installed here)."""

    kind = "native"

    def __init__(self, profile: Profile, paths: Paths, runtime: Runtime | None) -> None:
        super().__init__(profile, paths, runtime)
        self.process: subprocess.Popen[bytes] | None = None
        self._oom_kills: int | None = None

    def launch(
        self, key: str, tp_size: int, redact: Callable[[str], str], read: StartReader
    ) -> dict[str, Any]:
        argv = native_argv(self.profile, tp_size=tp_size, config_file=self.paths.engine_config)
        log.info("running %s", redact(" ".join(argv)))
        self._oom_kills = oom_kill_count()
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=native_env(self.profile, os.environ, key),
            cwd=self.profile.workdir or None,
            # Its own process group, so stop reaches SGLang's scheduler children too.
            start_new_session=True,
        )
        self.process = process
        identity = identify_started(process.pid)
        assert process.stdout is not None
        read(process.stdout)
        return {"pid": process.pid, "process": identity.to_json() if identity else None}

    def ended(self) -> ProcessOutcome | None:
        process = self.process
        if process is None:
            return ProcessOutcome("The server process")
        if not _exited_unreaped(process):
            return None
        # Its group's leftovers (SGLang's schedulers) go while the unreaped leader still
        # holds the pid, so the group id cannot have passed to anyone else.
        _signal_group(process, signal.SIGKILL)
        return ProcessOutcome.of_returncode(process.wait(), self._oom_kills)

    def remove(self) -> None:
        if self.process is not None:
            _kill_group(self.process, 0)
            self.process = None

    def stop(self, grace_s: float) -> None:
        if self.process is not None:
            _kill_group(self.process, grace_s)

    @classmethod
    def end_orphan(cls, state: ServerState, grace_s: float) -> None:
        # Its output pipe went with the dead supervisor, so it can be neither followed nor
        # restarted: end it (if it is still the very process recorded) and start afresh
        # rather than run blind. `status` says so beforehand.
        engine = state.process_identity
        if engine is not None and engine.alive():
            log.warning(
                "stopping the native server (pid %d) that runs without its supervisor; "
                "a fresh one is started",
                engine.pid,
            )
            engine.terminate(grace_s, group=True)

    @classmethod
    def orphan_note(cls, state: ServerState) -> str:
        engine = state.process_identity
        if engine is not None and engine.alive():
            return (
                f"The native server (pid {engine.pid}) runs without its supervisor, so "
                f"nothing restarts it and its log has stopped; `longdoc server start` "
                f"stops it and starts a fresh one."
            )
        return (
            "Something answers at the server's address, but not the server Longdoc "
            "started; `longdoc server start` will find the port in use."
        )


ENGINES: Mapping[str, type[Engine]] = {"container": ContainerEngine, "native": NativeEngine}


def engine_for(profile: Profile, paths: Paths, runtime: Runtime | None = None) -> Engine | None:
    """The engine that runs ``profile`` (None for an external server: nothing to run)."""
    cls = ENGINES.get(profile.kind)
    return cls(profile, paths, runtime) if cls is not None else None


def _die_with_parent() -> None:
    """In the child: SIGKILL when the parent (the supervisor) dies (Linux prctl)."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


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
