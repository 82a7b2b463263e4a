"""Process identity with real processes: a pid that now names a stranger is never signalled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from server_manager import ManagerConfig, ServerManager
from server_manager.processes import ProcessIdentity, identify, identify_started
from server_manager.state import Paths, ServerState, write_state


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process leading its own session and group (as an engine would)."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    yield process
    process.kill()
    process.wait()


def test_identity_of_a_live_process_and_after_it_ends() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    identity = identify_started(process.pid)
    assert identity is not None
    assert identity.pid == process.pid
    assert identity.alive()
    assert ProcessIdentity.from_json(json.loads(json.dumps(identity.to_json()))) == identity
    process.kill()
    process.wait()
    assert identify(process.pid) is None
    assert not identity.alive()
    assert identity.signal(signal.SIGTERM) is False


def test_a_reused_pid_is_not_the_recorded_process(stranger: subprocess.Popen[bytes]) -> None:
    real = identify_started(stranger.pid)
    assert real is not None
    # The same pid, started at another time (what a reboot or pid reuse looks like) ...
    earlier = replace(real, start_ticks=real.start_ticks - 1)
    # ... or running another program.
    other_program = replace(real, cmdline_sha256="0" * 64)
    for recorded in (earlier, other_program):
        assert not recorded.alive()
        assert recorded.signal(signal.SIGKILL, group=True) is False
        assert recorded.terminate(0.1, group=True) is False
    assert stranger.poll() is None


def test_malformed_identities_are_none() -> None:
    assert ProcessIdentity.from_json(None) is None
    assert ProcessIdentity.from_json({"pid": 1}) is None
    assert ProcessIdentity.from_json({"pid": "x", "start_ticks": 1}) is None
    assert identify(0) is None
    assert identify(-5) is None


def _state_naming(pid: int, identity: dict[str, object] | None, kind: str) -> ServerState:
    return ServerState(
        profile="native",
        kind=kind,
        endpoint="http://127.0.0.1:9",
        model="m",
        state="ready",
        pid=pid,
        supervisor_pid=pid,
        process=identity,
        supervisor=identity,
    )


@pytest.mark.parametrize("kind", ["native", "container"])
@pytest.mark.parametrize("how", ["bare pid (old state file)", "pid with another start time"])
def test_stop_never_signals_a_stranger_named_by_a_stale_state(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stranger: subprocess.Popen[bytes],
    kind: str,
    how: str,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no container runtime to ask
    real = identify_started(stranger.pid)
    assert real is not None
    identity = None if how.startswith("bare") else {**real.to_json(), "start_ticks": 1}
    paths = Paths(tmp_path)
    write_state(paths, _state_naming(stranger.pid, identity, kind))

    manager = ServerManager(tmp_path, ManagerConfig(profile="native"))
    assert manager.status(gpus=False).state == "stopped"  # a stranger is not our server
    assert manager.stop() is False

    assert stranger.poll() is None, "the stranger was signalled"
    os.killpg(stranger.pid, 0)  # its whole group is still there
    assert not paths.state.exists()


def test_status_and_connection_ignore_a_stale_supervisor(
    tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    paths = Paths(tmp_path)
    state = _state_naming(stranger.pid, None, "native")
    state.state = "starting"
    write_state(paths, state)
    manager = ServerManager(tmp_path, ManagerConfig(profile="native"))
    assert manager.connection() is None
    assert stranger.poll() is None


def test_wait_gone_waits_until_the_process_is_really_gone() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        identity = identify_started(process.pid)
        assert identity is not None and identity.exists()
        assert not identity.wait_gone(0.2)
        process.terminate()
        assert identity.wait_gone(10)
        # Unreaped, it is a zombie: gone for every purpose, and never signalled.
        assert not identity.exists() and not identity.alive()
        assert identity.signal(signal.SIGTERM) is False
    finally:
        process.kill()
        process.wait()


def test_an_older_longdocs_state_is_trusted_only_for_its_own_supervisor(tmp_path: Path) -> None:
    from server_manager.state import read_state
    from server_manager.supervisor import supervisor_running

    def fake_supervisor(home: Path) -> subprocess.Popen[bytes]:
        # The command line of a supervisor (python -m server_manager supervise --home H).
        code = "import time; time.sleep(600)"
        argv = [sys.executable, "-c", code, "server_manager", "supervise", "--home", str(home)]
        return subprocess.Popen(argv)

    ours, theirs = fake_supervisor(tmp_path), fake_supervisor(tmp_path / "other")
    try:
        assert identify_started(ours.pid) and identify_started(theirs.pid)  # exec finished
        paths = Paths(tmp_path)
        for process, trusted in ((ours, True), (theirs, False)):
            # What an older Longdoc wrote: pids only.
            state = _state_naming(process.pid, None, "container")
            state.supervisor = None
            write_state(paths, state)
            loaded = read_state(paths)
            assert loaded is not None
            assert supervisor_running(loaded) is trusted
    finally:
        for process in (ours, theirs):
            process.kill()
            process.wait()


def test_a_child_is_identified_by_its_new_program_not_mid_exec() -> None:
    # Popen returns once exec has begun; the argv may not be readable yet. The identity
    # recorded at once must be the one the process keeps.
    for _ in range(30):
        process = subprocess.Popen(["sleep", "60"])
        try:
            recorded = identify_started(process.pid)
            assert recorded is not None
            assert recorded == identify(process.pid)
            assert recorded.alive()
        finally:
            process.kill()
            process.wait()
