"""The server manager against real podman: start, adopt, restart, fail, stop, preflight."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from desktop.config import Settings
from desktop.processes import pid_alive
from server_manager import ServerManager, Stage, connection_for
from server_manager.errors import ServerFailed
from server_manager.processes import identify
from server_manager.profiles import available_profiles, load_profile
from server_manager.runtime import parse_inspect, parse_port_bindings
from tests.conftest import CORPUS_DIR
from tests.e2e.conftest import (
    ROOT,
    RUNTIME_ARGS,
    TEST_MODEL,
    ProfileMaker,
    free_port,
    host_mounts,
    podman,
    run_sleeping_container,
    server_args,
    wait_for,
    write_profile,
)
from tests.support.cli import longdoc
from tests.support.schemas import SERVER_STATUS_KEYS

pytestmark = [pytest.mark.container, pytest.mark.slow]


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


def cmdlines_holding(secret: str) -> list[int]:
    """Pids of every process on the machine whose argv holds ``secret`` (as ps shows it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if secret.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def assert_key_secret(home: Path, key: str) -> None:
    """No argv holds the key; the key files are private; logs and status show it blanked."""
    assert len(key) >= 32
    assert cmdlines_holding(key) == []
    for name in ("api_key", "engine.yaml", "engine.env"):
        path = home / "server" / name
        if path.exists():
            assert path.stat().st_mode & 0o777 == 0o600, name
    server_log = (home / "server" / "logs" / "server.log").read_text()
    supervisor_log = (home / "server" / "logs" / "supervisor.log").read_text()
    assert key not in server_log and key not in supervisor_log
    # The engine logs its arguments, key included, as it starts (as SGLang does).
    assert "api_key='[redacted]'" in server_log
    for args in (("server", "logs"), ("server", "logs", "--json"), ("server", "status")):
        result = longdoc(*args, "--profile", "test", home=home)
        assert result.returncode == 0, result.stderr
        assert key not in result.stdout + result.stderr


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
    result = longdoc("server", "status", "--json", "--profile", "test", home=managed_home)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert set(status) == set(SERVER_STATUS_KEYS)
    assert status["state"] == "ready"
    assert status["stage"] == "ready"
    assert status["endpoint"] == connection.url
    assert status["model"] == TEST_MODEL
    assert status["container"] == name
    assert status["restarts"] == 0
    assert status["error"] is None
    assert status["metrics"]["running_requests"] == 0
    assert status["metrics"]["context_len"] == 262144

    logs = longdoc("server", "logs", home=managed_home)
    assert "The server is fired up and ready to roll!" in logs.stdout

    # The key: never on the runtime's or the engine's argv, only in the read-only config.
    key = connection.api_key
    inspected = json.loads(podman("container", "inspect", name).stdout)[0]
    assert key not in json.dumps(inspected)  # CreateCommand, Args, Env, Labels: none has it
    assert "--config" in inspected["Args"]
    config_mounts = [
        m for m in inspected["Mounts"] if m["Destination"] == "/run/longdoc/engine.yaml"
    ]
    assert len(config_mounts) == 1 and config_mounts[0]["RW"] is False
    assert config_mounts[0]["Source"] == str(managed_home / "server" / "engine.yaml")
    assert key in (managed_home / "server" / "engine.yaml").read_text()
    assert_key_secret(managed_home, key)


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
    connection = manager(managed_home).start()
    assert labelled(managed_home) == names
    assert container_id(names[0]) == first_id
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200

    # Every server subcommand speaks --json.
    started_json = longdoc("server", "start", "--json", "--profile", "test", home=managed_home)
    assert started_json.returncode == 0, started_json.stderr
    assert json.loads(started_json.stdout)["state"] == "ready"
    assert started_json.stderr == ""  # no replayed progress lines either
    restarted = longdoc("server", "restart", "--json", "--profile", "test", home=managed_home)
    assert restarted.returncode == 0, restarted.stderr
    assert json.loads(restarted.stdout)["state"] == "ready"
    assert container_id(names[0]) != first_id
    lines = longdoc("server", "logs", "--json", "--profile", "test", home=managed_home).stdout
    assert all(set(json.loads(line)) == {"line"} for line in lines.splitlines())
    stopped = longdoc("server", "stop", "--json", "--profile", "test", home=managed_home)
    assert json.loads(stopped.stdout) == {"stopped": True}


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

    # Progress is per run: the restart's stages once, and nothing replayed on adoption.
    state = json.loads((managed_home / "server" / "state.json").read_text())
    assert state["stages"] == [stage.key for stage in Stage]
    adopted = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert adopted.returncode == 0, adopted.stderr
    assert adopted.stderr.splitlines() == [f"Ready at {connection.url} (model {TEST_MODEL})"]

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
    result = longdoc("server", "status", "--json", "--profile", "test", home=managed_home)
    assert json.loads(result.stdout)["state"] == "failed"
    # A failed server can be started again (here it fails again, through the CLI).
    again = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert again.returncode == 17
    assert again.stderr.splitlines()[-1].startswith("Last log lines:") or "Error: " in again.stderr


def test_stop_leaves_nothing(managed_home: Path, container_profile: ProfileMaker) -> None:
    container_profile(startup_delay=0.2)
    m = manager(managed_home)
    m.start()
    state = json.loads((managed_home / "server" / "state.json").read_text())

    result = longdoc("server", "stop", home=managed_home)

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "Server stopped."
    assert labelled(managed_home) == []
    assert not pid_alive(state["supervisor_pid"])
    assert not (managed_home / "server" / "state.json").exists()
    assert m.status(gpus=False).state == "stopped"
    assert connection_for(managed_home, Settings(profile="test")) is None
    again = longdoc("server", "stop", home=managed_home)
    assert again.returncode == 0
    assert again.stderr.strip() == "No Longdoc server was running."


def _last_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``Error:`` line, after the progress lines (if any) that came before it."""
    lines = result.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("Error")] == lines[-1:], result.stderr
    assert all(line.endswith(("…", "loaded", "ready", "up")) for line in lines[:-1])
    return lines[-1]


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

    result = longdoc("server", "start", "--profile", "test", home=managed_home)

    assert result.returncode == code
    assert expected in _one_error(result)
    assert labelled(managed_home) == []


def test_model_dir_without_config_json(
    managed_home: Path, container_profile: ProfileMaker, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    container_profile(model_dir=str(empty))
    result = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert result.returncode == 13
    assert f"The model directory {empty} has no config.json" in _one_error(result)


def test_port_in_use(managed_home: Path, container_profile: ProfileMaker) -> None:
    profile = container_profile()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", int(str(profile["port"]))))
        blocker.listen()
        result = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert result.returncode == 14
    assert f"Port {profile['port']} is already in use" in _one_error(result)


def test_bundled_rocm_profile_needs_gpu_devices(managed_home: Path, model_dir: Path) -> None:
    if Path("/dev/kfd").exists():
        pytest.skip("this machine has an AMD GPU")
    (managed_home / "profiles").mkdir()
    (managed_home / "profiles" / "sglang-rocm.toml").write_text(
        f'model_dir = "{model_dir}"\nruntime = "podman"\n'
    )
    result = longdoc("server", "start", "--profile", "sglang-rocm", home=managed_home)
    assert result.returncode == 15
    # Alone, one line; with the image missing too, the problems listed one line each.
    lines = result.stderr.splitlines()
    if len(lines) == 1:
        assert lines[0].startswith("Error: No GPU device nodes")
    else:
        assert lines[:2] == ["Error: 2 problems prevent the start:", lines[1]]
        assert lines[1].startswith("  • No GPU device nodes")


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
    started = longdoc("server", "start", home=managed_home)
    assert started.returncode == 0, started.stderr
    four = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    result = longdoc("ask", str(four), "What is it?", "--json", home=managed_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"].startswith("The document has 4 pages")
    assert data["model"] == TEST_MODEL
    stopped = longdoc("server", "stop", home=managed_home)
    assert stopped.returncode == 0
    down = longdoc("ask", str(four), "Another?", home=managed_home)
    assert down.returncode == 2
    assert "longdoc server start" in down.stderr


def test_vllm_gets_its_key_from_a_private_env_file(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    profile = container_profile(
        engine="vllm", startup_delay=0.3, server_extra=("--api-key-env", "VLLM_API_KEY")
    )
    connection = manager(managed_home).start()
    key = connection.api_key
    assert http_status(f"{connection.url}/v1/models") == 401
    assert http_status(f"{connection.url}/v1/models", key) == 200
    name = f"longdoc-vllm-{profile['port']}"
    inspected = json.loads(podman("container", "inspect", name).stdout)[0]
    create_command = inspected["Config"]["CreateCommand"]
    assert key not in json.dumps([inspected["Path"], inspected["Args"], create_command])
    assert "--env-file" in create_command
    # The runtime keeps the environment in the container's config (visible to whoever may
    # use the runtime, as the README says); vLLM reads VLLM_API_KEY from it.
    assert f"VLLM_API_KEY={key}" in inspected["Config"]["Env"]
    assert not any(m["Destination"] == "/run/longdoc/engine.yaml" for m in inspected["Mounts"])
    assert_key_secret(managed_home, key)


BUNDLED_CONTAINER_PROFILES = [
    name for name in available_profiles(None) if load_profile(name, None).kind == "container"
]


@pytest.mark.parametrize("name", BUNDLED_CONTAINER_PROFILES)
def test_bundled_container_profiles_run_under_podman(
    managed_home: Path, test_image: str, model_dir: Path, name: str
) -> None:
    """The bundled runtime_args as they ship; only GPU devices, image and engine swapped."""
    bundled = load_profile(name, None)
    assert bundled.runtime_args  # the arguments under test
    extra = ("--api-key-env", "VLLM_API_KEY") if bundled.engine == "vllm" else ()
    write_profile(
        managed_home,
        name,
        {
            "runtime": "podman",
            "image": test_image,
            "devices": [],  # no /dev/kfd, /dev/dri here
            "gpu_vendor": "none",
            "command": [sys.executable, "-m", "tests.support.sglang_server"],
            "workdir": str(ROOT),
            "engine_args": server_args(0.2, extra),
            "extra_engine_args": [],
            "model_dir": str(model_dir),
            "served_model_name": TEST_MODEL,
            "port": free_port(),
            "extra_runtime_args": RUNTIME_ARGS,
            "mounts": host_mounts(),
            "ready_timeout_s": 30,
            "restart": {"max_restarts": 0},
        },
    )
    started = longdoc("server", "start", "--profile", name, home=managed_home)
    assert started.returncode == 0, started.stderr
    loaded = load_profile(name, managed_home)
    inspected = json.loads(podman("container", "inspect", loaded.container_name).stdout)[0]
    for arg in bundled.runtime_args:
        assert arg in inspected["Config"]["CreateCommand"]
    # In the host's IPC namespace indeed (podman 4.3's inspect says "shareable" regardless).
    pid = inspected["State"]["Pid"]
    assert os.readlink(f"/proc/{pid}/ns/ipc") == os.readlink("/proc/self/ns/ipc")
    assert longdoc("server", "stop", "--profile", name, home=managed_home).returncode == 0


def test_a_refused_run_fails_at_once_with_the_runtimes_message(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    container_profile(extra_runtime_args=[*RUNTIME_ARGS, "--no-such-flag"])
    result = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert result.returncode == 17
    assert _last_error(result) == (
        "Error: podman run refused to start the server: Error: unknown flag: --no-such-flag."
    )
    state = json.loads((managed_home / "server" / "state.json").read_text())
    assert state["state"] == "failed" and state["restarts"] == 0
    supervisor_log = (managed_home / "server" / "logs" / "supervisor.log").read_text()
    assert "restarting in" not in supervisor_log


def test_a_runtime_permission_error_in_the_supervisor_is_exit_11(
    managed_home: Path, container_profile: ProfileMaker, tmp_path: Path
) -> None:
    # A podman that lets the checks through but refuses `run` as docker does to a user
    # outside its group (the group changed, or the socket's mode, after the checks).
    wrapper = tmp_path / "bin" / "podman"
    wrapper.parent.mkdir()
    real = shutil.which("podman")
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = run ]; then\n'
        "  echo 'permission denied while trying to connect to the Docker daemon socket at "
        "unix:///var/run/docker.sock' >&2\n"
        "  exit 1\n"
        "fi\n"
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    container_profile(runtime=str(wrapper))
    result = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert result.returncode == 11, result.stderr
    assert _last_error(result).startswith("Error: No permission to use podman: ")
    state = json.loads((managed_home / "server" / "state.json").read_text())
    assert state["restarts"] == 0


def test_preflight_reports_every_problem_at_once(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    port = free_port()
    container_profile(
        image="localhost/longdoc-no-such-image:0", model_dir="/nonexistent/Qwen3.5", port=port
    )
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        result = longdoc("server", "start", "--profile", "test", home=managed_home)
    assert result.returncode == 12  # the image: the most fundamental of the three
    lines = result.stderr.splitlines()  # one bulleted line per problem
    assert lines[0] == "Error: 3 problems prevent the start:"
    assert lines[1].startswith("  • The image ")
    assert lines[2].startswith("  • The model directory /nonexistent/Qwen3.5 does not exist")
    assert lines[3].startswith(f"  • Port {port} is already in use")
    mine = managed_home / "profiles" / "test.toml"
    assert all(str(mine) in line for line in lines[1:])  # each says where: the user's file


def _live(pid: int) -> bool:
    return identify(pid) is not None


def test_native_key_stays_off_the_command_line(
    managed_home: Path, native_profile: ProfileMaker
) -> None:
    native_profile()
    connection = manager(managed_home, "native-test").start()
    state = json.loads((managed_home / "server" / "state.json").read_text())
    cmdline = Path(f"/proc/{state['pid']}/cmdline").read_bytes().split(b"\0")
    assert b"--config" in cmdline
    assert str(managed_home / "server" / "engine.yaml").encode() in cmdline
    assert http_status(f"{connection.url}/v1/models") == 401
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200
    result = longdoc("server", "logs", "--profile", "native-test", home=managed_home)
    assert connection.api_key not in result.stdout
    assert cmdlines_holding(connection.api_key) == []


def test_start_and_stop_never_kill_a_process_a_stale_state_names(
    managed_home: Path, native_profile: ProfileMaker
) -> None:
    native_profile()
    (managed_home / "longdoc.toml").write_text('profile = "native-test"\n')
    stranger = subprocess.Popen(["sleep", "600"], start_new_session=True)
    real_state = ""  # the started server's own state, put back for the fixture to stop it
    try:
        (managed_home / "server").mkdir(parents=True, exist_ok=True)
        # What a reboot leaves: the old pids, now some other program's.
        stale = {
            "profile": "native-test",
            "kind": "native",
            "endpoint": "http://127.0.0.1:9",
            "model": TEST_MODEL,
            "state": "ready",
            "pid": stranger.pid,
            "supervisor_pid": stranger.pid,
        }
        (managed_home / "server" / "state.json").write_text(json.dumps(stale))
        status = longdoc("server", "status", "--json", home=managed_home)
        assert json.loads(status.stdout)["state"] == "stopped"
        started = longdoc("server", "start", home=managed_home)
        assert started.returncode == 0, started.stderr
        assert stranger.poll() is None
        real_state = (managed_home / "server" / "state.json").read_text()
        (managed_home / "server" / "state.json").write_text(json.dumps(stale))
        stopped = longdoc("server", "stop", home=managed_home)
        assert stopped.returncode == 0, stopped.stderr
        assert stranger.poll() is None
        os.killpg(stranger.pid, 0)
    finally:
        stranger.kill()
        stranger.wait()
        if real_state:
            (managed_home / "server" / "state.json").write_text(real_state)


def test_backoff_forgets_the_dead_engine(managed_home: Path, native_profile: ProfileMaker) -> None:
    native_profile(
        engine_args=[*server_args(0.2, ("--exit-after", "1"))],
        restart={"max_restarts": 3, "window_s": 600, "backoff_base_s": 300, "backoff_max_s": 300},
    )
    m = manager(managed_home, "native-test")
    first = m.start()
    assert first.url
    state_file = managed_home / "server" / "state.json"
    engine = json.loads(state_file.read_text())["pid"]

    def waiting() -> dict[str, object] | None:
        state = json.loads(state_file.read_text())
        return state if state["restarts"] == 1 else None

    state = wait_for(waiting, 30, "the backoff")
    assert isinstance(state, dict)
    assert "restarting in 300 s" in str(state["error"])
    assert state["pid"] == 0 and state["process"] is None
    assert not _live(engine)
    assert m.stop() is True  # the supervisor only


def test_native_engine_without_its_supervisor_is_replaced_as_status_says(
    managed_home: Path, native_profile: ProfileMaker
) -> None:
    native_profile()
    m = manager(managed_home, "native-test")
    m.start()
    state = json.loads((managed_home / "server" / "state.json").read_text())
    os.kill(state["supervisor_pid"], 9)  # as the OOM killer would
    wait_for(lambda: not _live(state["supervisor_pid"]), 10, "the supervisor to die")
    assert _live(state["pid"])

    status = m.status(gpus=False)
    assert status.error is not None
    assert f"The native server (pid {state['pid']}) runs without its supervisor" in status.error
    assert "`longdoc server start` stops it and starts a fresh one" in status.error

    connection = m.start()
    assert not _live(state["pid"])
    new_state = json.loads((managed_home / "server" / "state.json").read_text())
    assert new_state["pid"] != state["pid"] and _live(new_state["pid"])
    assert http_status(f"{connection.url}/v1/models", connection.api_key) == 200


def test_a_container_of_another_home_with_our_name_is_left_alone(
    managed_home: Path, container_profile: ProfileMaker, test_image: str
) -> None:
    profile = container_profile()
    name = f"longdoc-sglang-{profile['port']}"
    # Another data directory (another user's Longdoc, say) runs a server under this name.
    run_sleeping_container(name, "/somewhere/else", test_image, 600)
    try:
        stranger = container_id(name)
        result = longdoc("server", "start", "--profile", "test", home=managed_home)
        assert result.returncode == 17
        assert f"A container named {name} that this Longdoc did not start" in _last_error(result)
        assert container_id(name) == stranger
        assert parse_inspect(podman("container", "inspect", name).stdout)[0].running
        assert longdoc("server", "stop", home=managed_home).returncode == 0
        assert parse_inspect(podman("container", "inspect", name).stdout)[0].running
    finally:
        podman("rm", "--force", name, check=False)


def test_a_killed_supervisor_leaves_no_podman_log_follower(
    managed_home: Path, container_profile: ProfileMaker
) -> None:
    profile = container_profile(startup_delay=0.5)
    name = f"longdoc-sglang-{profile['port']}"

    def followers() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"--follow" in argv and name.encode() in argv:
                    found.append(int(entry.name))
        return found

    manager(managed_home).start()
    assert followers()
    state = json.loads((managed_home / "server" / "state.json").read_text())
    os.kill(state["supervisor_pid"], 9)
    wait_for(lambda: not followers(), 30, "podman logs --follow to end with its supervisor")
    # A new supervisor adopts the container and follows it again.
    manager(managed_home).start()
    assert len(followers()) == 1
