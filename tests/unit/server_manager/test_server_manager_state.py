"""State file, API key, lock, rotating log, status JSON and connections (no runtime needed)."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

import pytest

from desktop.config import Settings
from server_manager import (
    Connection,
    ManagerConfig,
    ServerManager,
    ServerStatus,
    connection_for,
)
from server_manager import state as state_file
from server_manager.gpu import GpuInfo, gpu_report
from server_manager.logs import ServerLog, log_files, read_lines
from server_manager.state import Paths, ServerState
from tests.support.schemas import SERVER_STATUS_KEYS


def test_api_key_generated_once_owner_only(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    key = state_file.api_key(paths)
    assert len(key) >= 40
    assert state_file.api_key(paths) == key
    assert paths.api_key.stat().st_mode & 0o777 == 0o600
    os.chmod(paths.api_key, 0o644)
    assert state_file.api_key(paths) == key
    assert paths.api_key.stat().st_mode & 0o777 == 0o600


def test_state_round_trip_and_unknown_keys(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    assert state_file.read_state(paths) is None
    state = ServerState(
        profile="p",
        kind="container",
        endpoint="http://127.0.0.1:1",
        model="m",
        stages=["starting_container"],
    )
    state_file.write_state(paths, state)
    assert state_file.read_state(paths) == state
    assert paths.state.stat().st_mode & 0o777 == 0o600
    paths.state.write_text(
        '{"profile": "p", "kind": "native", "endpoint": "e", "model": "m", "from_the_future": 1}'
    )
    loaded = state_file.read_state(paths)
    assert loaded is not None and loaded.kind == "native"
    paths.state.write_text("not json")
    assert state_file.read_state(paths) is None
    state_file.clear_state(paths)
    state_file.clear_state(paths)


def test_lock_excludes_other_holders(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    order: list[str] = []
    with state_file.locked(paths):
        thread = threading.Thread(target=lambda: _take(paths, order))
        thread.start()
        thread.join(0.3)
        order.append("first done")
    thread.join(5)
    assert order == ["first done", "second"]


def _take(paths: Paths, order: list[str]) -> None:
    with state_file.locked(paths):
        order.append("second")


def test_server_log_rotates_and_reads_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    log = ServerLog(path, max_bytes=200, backups=3)
    for n in range(40):
        log.write(f"line {n:02d} " + "x" * 20)
    log.close()
    files = log_files(path)
    assert len(files) == 4 and files[-1] == path
    assert sum(f.stat().st_size for f in files) < 4 * 250
    lines = list(read_lines(path))
    assert lines[-1].startswith("line 39")
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == sorted(numbers)


def test_follow_yields_new_lines_across_rotation(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    log = ServerLog(path, max_bytes=100, backups=2)
    log.write("before")
    stop = threading.Event()
    following = threading.Event()
    seen: list[str] = []

    def reader() -> None:
        for line in read_lines(path, follow=True, stop=stop, poll_s=0.01):
            seen.append(line)
            following.set()
            if line == "last":
                stop.set()

    thread = threading.Thread(target=reader)
    thread.start()
    assert following.wait(5)
    for n in range(6):
        log.write(f"new {n} " + "y" * 30)
        time.sleep(0.05)  # a follower keeps up with a server's pace, not a tight loop's
    log.write("last")
    thread.join(10)
    log.close()
    assert not thread.is_alive()
    assert seen == ["before", *[f"new {n} " + "y" * 30 for n in range(6)], "last"]


def test_status_json_has_exactly_the_documented_keys() -> None:
    status = ServerStatus(
        profile="sglang-rocm",
        state="ready",
        stage="ready",
        endpoint="http://127.0.0.1:30000",
        model="Qwen3.5-35B-A3B",
        container="longdoc-sglang-30000",
        restarts=1,
        gpus=[GpuInfo(index=0, utilization_pct=50.0)],
        metrics={"running_requests": 1.0},
    )
    data = status.to_json()
    assert tuple(data) == SERVER_STATUS_KEYS
    assert data["gpus"][0]["utilization_pct"] == 50.0


def test_stopped_status_without_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no amd-smi, rocm-smi or runtime
    manager = ServerManager(tmp_path, ManagerConfig())
    status = manager.status()
    assert status.state == "stopped"
    assert status.gpus == []
    assert status.gpu_note == "no GPU monitoring tool found (amd-smi, rocm-smi)"
    assert gpu_report("amd").tool is None
    assert manager.connection() is None
    assert manager.stop() is False


def test_connection_for_reads_state_and_key(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    key = state_file.api_key(paths)
    endpoint = "http://127.0.0.1:30000"
    server = ServerState(profile="sglang-rocm", kind="container", endpoint=endpoint, model="Q")
    state_file.write_state(paths, dataclasses.replace(server, state="ready"))
    # The managed profile's engine comes along: the client may send it SGLang's own fields.
    assert connection_for(tmp_path, ManagerConfig()) == Connection(endpoint, key, "Q", "sglang")
    assert Connection("http://h:1", "k", "m").v1_url == "http://h:1/v1"
    state_file.write_state(paths, dataclasses.replace(server, state="failed"))
    assert connection_for(tmp_path, ManagerConfig()) is None


def test_connection_for_external_profile_without_start(tmp_path: Path) -> None:
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "external.toml").write_text(
        'url = "http://gpu-box:30000/"\napi_key = "shared"\nserved_model_name = "Q"\n'
    )
    settings = Settings(profile="external")  # the app's settings fit ManagerSettings
    assert connection_for(tmp_path, settings) == Connection("http://gpu-box:30000", "shared", "Q")
    # Its engine is unknown (found out from the server); a stated context comes along.
    with (tmp_path / "profiles" / "external.toml").open("a") as fh:
        fh.write("context_length = 32768\n")
    assert connection_for(tmp_path, settings) == Connection(
        "http://gpu-box:30000", "shared", "Q", context_length=32_768
    )


def test_a_key_an_engine_would_take_for_an_option_is_replaced(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    paths.ensure()
    paths.api_key.write_text("-starts-like-an-option\n")
    key = state_file.api_key(paths)
    assert not key.startswith("-")
    assert len(key) == 64 and set(key) <= set("0123456789abcdef")
    assert state_file.api_key(paths) == key
