"""The server manager against real podman: start, adopt, restart, fail, stop, preflight."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from desktop.config import Settings
from desktop.processes import pid_alive
from server_manager import ServerManager, Stage, connection_for
from server_manager.errors import ServerFailed
from server_manager.runtime import parse_inspect, parse_port_bindings
from tests.conftest import CORPUS_DIR
from tests.e2e.conftest import (
    TEST_MODEL,
    ProfileMaker,
    longdoc_cli,
    podman,
    wait_for,
)

pytestmark = [pytest.mark.container, pytest.mark.slow]

STATUS_KEYS = {
    "profile",
    "state",
    "stage",
    "endpoint",
    "model",
    "container",
    "restarts",
    "gpus",
    "metrics",
    "error",
}


def manager(home: Path, profile: str = "test") -> ServerManager:
    """A manager for ``home`` using ``profile``."""
    return ServerManager(home, Settings(profile=profile))


def labelled(home: Path) -> list[str]:
    """Names of all containers (any state) labelled with this home."""
    out = podman(
        "ps", "--all", "--format", "{{.Names}}", "--filter", f"label=longdoc.home={home}"
    ).stdout
    return out.split()


def http_status(url: str, key: str = "") -> int:
    """Status code of a GET (0 when nothing answers)."""
    request = urllib.request.Request(url)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def outward_ip() -> str | None:
    """This machine's non-loopback address (no packet is sent), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))
        except OSError:
            return None
        ip = str(sock.getsockname()[0])
    return None if ip.startswith("127.") else ip


def container_id(name: str) -> str:
    """The container's id (changes when it is recreated)."""
    return parse_inspect(podman("container", "inspect", name).stdout)[0].id


def test_start_ready_in_order_secure_and_status(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    profile = container_profile(startup_delay=1.5)
    port = int(str(profile["port"]))
    stages: list[Stage] = []

    connection = manager(managed_home).start(on_stage=stages.append)

    assert stages == list(Stage)
    assert connection.url == f"http://127.0.0.1:{port}"
    assert connection.model == TEST_MODEL
    key_file = managed_home / "server" / "api_key"
    assert connection.api_key == key_file.read_text().strip()
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert connection_for(managed_home, Settings(profile="test")) == connection
    # The key is required, and the port is published on loopback only.
    assert http_status(f"{connection.url}/v1/models") == 401
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200
    name = f"longdoc-sglang-{port}"
    assert labelled(managed_home) == [name]
    bindings = parse_port_bindings(podman("container", "inspect", name).stdout)
    assert bindings == [("127.0.0.1", str(port))]
    ip = outward_ip()
    if ip is not None:
        with socket.socket() as sock:
            sock.settimeout(2)
            assert sock.connect_ex((ip, port)) != 0

    # Another process reads the same state.
    result = longdoc_cli(managed_home, "server", "status", "--json", "--profile", "test")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert set(status) == STATUS_KEYS
    assert status["state"] == "ready"
    assert status["stage"] == "ready"
    assert status["endpoint"] == connection.url
    assert status["model"] == TEST_MODEL
    assert status["container"] == name
    assert status["restarts"] == 0
    assert status["error"] is None
    assert status["metrics"]["running_requests"] == 0
    assert status["metrics"]["context_len"] == 262144

    logs = longdoc_cli(managed_home, "server", "logs")
    assert "The server is fired up and ready to roll!" in logs.stdout


def test_second_process_adopts_and_racing_starts_agree(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    container_profile(startup_delay=1.0)
    # Two processes start at once from nothing: the lock makes them agree on one server.
    env = {**os.environ, "LONGDOC_HOME": str(managed_home)}
    argv = [sys.executable, "-m", "desktop.cli.main", "server", "start", "--profile", "test"]
    racers = [
        subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parents[2],
        )
        for _ in range(2)
    ]
    outputs = [r.communicate(timeout=90) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], outputs
    assert all("Ready at http://127.0.0.1:" in err for _, err in outputs)
    names = labelled(managed_home)
    assert len(names) == 1
    first_id = container_id(names[0])

    # A third, later process (the GUI, say) adopts instead of starting another.
    started = time.monotonic()
    connection = manager(managed_home).start()
    assert time.monotonic() - started < 3
    assert labelled(managed_home) == names
    assert container_id(names[0]) == first_id
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200


def test_killed_server_is_restarted_with_backoff(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    profile = container_profile(startup_delay=0.5)
    m = manager(managed_home)
    connection = m.start()
    name = f"longdoc-sglang-{profile['port']}"
    first = parse_inspect(podman("container", "inspect", name).stdout)[0]

    os.kill(first.pid, 9)  # the server process inside the container, as the OOM killer would

    def restarted() -> bool:
        status = m.status(gpus=False)
        return status.restarts == 1 and status.state == "ready"

    wait_for(restarted, 30, "a restart")
    second = parse_inspect(podman("container", "inspect", name).stdout)[0]
    assert second.id != first.id and second.running
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200
    supervisor_log = (managed_home / "server" / "logs" / "supervisor.log").read_text()
    assert "killed by signal 9 (exit code 137); restarting in 0.5 s" in supervisor_log

    # The second crash waits twice as long (exponential backoff).
    os.kill(second.pid, 9)
    wait_for(lambda: m.status(gpus=False).restarts == 2, 30, "a second restart")
    supervisor_log = (managed_home / "server" / "logs" / "supervisor.log").read_text()
    assert "restarting in 1 s" in supervisor_log


def test_server_that_keeps_dying_ends_failed_with_its_last_lines(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    # It dies before it is ever ready, every time.
    container_profile(startup_delay=2.0, server_extra=("--exit-after", "1"))
    m = manager(managed_home)

    with pytest.raises(ServerFailed) as caught:
        m.start()

    message = str(caught.value)
    assert "exited with code 1; gave up after 2 restart(s) within 60 s." in message
    assert "Last log lines:" in message
    assert "fake crash from --exit-after" in message
    status = m.status(gpus=False)
    assert status.state == "failed"
    assert status.restarts == 2
    assert status.error == message
    assert labelled(managed_home) == []  # nothing left behind
    result = longdoc_cli(managed_home, "server", "status", "--json", "--profile", "test")
    assert json.loads(result.stdout)["state"] == "failed"
    # A failed server can be started again (here it fails again, through the CLI).
    again = longdoc_cli(managed_home, "server", "start", "--profile", "test")
    assert again.returncode == 17
    assert again.stderr.splitlines()[-1].startswith("Last log lines:") or "Error: " in again.stderr


def test_stop_leaves_nothing(managed_home: Path, container_profile: ProfileMaker) -> None:
    container_profile(startup_delay=0.2)
    m = manager(managed_home)
    m.start()
    state = json.loads((managed_home / "server" / "state.json").read_text())

    result = longdoc_cli(managed_home, "server", "stop")

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "Server stopped."
    assert labelled(managed_home) == []
    assert not pid_alive(state["supervisor_pid"])
    assert not (managed_home / "server" / "state.json").exists()
    assert m.status(gpus=False).state == "stopped"
    assert connection_for(managed_home, Settings(profile="test")) is None
    again = longdoc_cli(managed_home, "server", "stop")
    assert again.returncode == 0
    assert again.stderr.strip() == "No Longdoc server was running."


def _one_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("overrides", "code", "expected"),
    [
        pytest.param(
            {"runtime": "longdoc-no-such-runtime"},
            10,
            "The container runtime 'longdoc-no-such-runtime' is not installed",
            id="no-runtime",
        ),
        pytest.param(
            {"image": "localhost/longdoc-no-such-image:0"},
            12,
            "load it offline with `podman load -i sglang-image.tar`",
            id="image-missing",
        ),
        pytest.param(
            {"model_dir": "/nonexistent/Qwen3.5"},
            13,
            "The model directory /nonexistent/Qwen3.5 does not exist",
            id="model-dir-missing",
        ),
        pytest.param(
            {"devices": ["/dev/kfd", "/dev/dri"]},
            15,
            "No GPU device nodes: /dev/kfd, /dev/dri missing",
            id="no-gpu-devices",
        ),
        pytest.param({"bogus_key": 1}, 16, "unknown key 'bogus_key'", id="profile-invalid"),
    ],
)
def test_preflight_failures(
    managed_home: Path,
    container_profile: ProfileMaker,
    overrides: dict[str, object],
    code: int,
    expected: str,
) -> None:
    if "devices" in overrides and Path("/dev/kfd").exists():
        pytest.skip("this machine has an AMD GPU")
    container_profile(**overrides)

    result = longdoc_cli(managed_home, "server", "start", "--profile", "test")

    assert result.returncode == code
    assert expected in _one_error(result)
    assert labelled(managed_home) == []


def test_model_dir_without_config_json(
    managed_home: Path, container_profile: ProfileMaker, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    container_profile(model_dir=str(empty))
    result = longdoc_cli(managed_home, "server", "start", "--profile", "test")
    assert result.returncode == 13
    assert f"The model directory {empty} has no config.json" in _one_error(result)


def test_port_in_use(managed_home: Path, container_profile: ProfileMaker) -> None:
    profile = container_profile()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", int(str(profile["port"]))))
        blocker.listen()
        result = longdoc_cli(managed_home, "server", "start", "--profile", "test")
    assert result.returncode == 14
    assert f"Port {profile['port']} is already in use" in _one_error(result)


def test_bundled_rocm_profile_needs_gpu_devices(managed_home: Path, model_dir: Path) -> None:
    if Path("/dev/kfd").exists():
        pytest.skip("this machine has an AMD GPU")
    (managed_home / "profiles").mkdir()
    (managed_home / "profiles" / "sglang-rocm.toml").write_text(
        f'model_dir = "{model_dir}"\nruntime = "podman"\n'
    )
    result = longdoc_cli(managed_home, "server", "start", "--profile", "sglang-rocm")
    assert result.returncode == 15
    assert "No GPU device nodes" in _one_error(result)


def test_native_profile_start_ready_stop(managed_home: Path, native_profile: ProfileMaker) -> None:
    profile = native_profile()
    m = manager(managed_home, "native-test")
    stages: list[Stage] = []

    connection = m.start(on_stage=stages.append)

    assert stages == list(Stage)
    assert connection.url == f"http://127.0.0.1:{profile['port']}"
    assert http_status(f"{connection.url}/v1/models") == 401
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200
    state = json.loads((managed_home / "server" / "state.json").read_text())
    assert pid_alive(state["pid"])
    status = m.status(gpus=False)
    assert status.state == "ready"
    assert status.container is None

    assert m.stop() is True
    assert not pid_alive(state["pid"])
    assert not pid_alive(state["supervisor_pid"])
    with pytest.raises(ProcessLookupError):
        os.killpg(state["pid"], 0)  # no process of its group survives
    assert m.status(gpus=False).state == "stopped"


def test_ask_uses_the_managed_server_without_configuration(
    managed_home: Path, native_profile: ProfileMaker
) -> None:
    """With no endpoint configured, `longdoc ask` finds the managed server and its key."""
    native_profile()
    (managed_home / "longdoc.toml").write_text('profile = "native-test"\n')
    started = longdoc_cli(managed_home, "server", "start")
    assert started.returncode == 0, started.stderr
    four = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    result = longdoc_cli(managed_home, "ask", str(four), "What is it?", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"].startswith("The document has 4 pages")
    assert data["model"] == TEST_MODEL
    stopped = longdoc_cli(managed_home, "server", "stop")
    assert stopped.returncode == 0
    down = longdoc_cli(managed_home, "ask", str(four), "Another?")
    assert down.returncode == 2
    assert "longdoc server start" in down.stderr
