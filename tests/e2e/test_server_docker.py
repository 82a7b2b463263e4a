"""The server manager against a real Docker daemon that goes away and comes back.

Each test starts its own ``dockerd`` (Debian's docker.io; `packaging/install-system-deps.sh
test` installs it) with its own data root, exec root and socket (``DOCKER_HOST``), and
stops it by its pid: the machine's own Docker, if any, is never touched. vfs storage and
host networking: no overlay or iptables needed in a sandbox. Root only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from desktop.config import Settings
from server_manager import ServerManager
from server_manager.errors import EXIT_RUNTIME_DOWN
from tests.e2e.conftest import (
    ROOT,
    TEST_MODEL,
    _rootfs_tar,
    free_port,
    host_mounts,
    server_args,
    wait_for,
    write_profile,
)
from tests.support.cli import longdoc

pytestmark = [pytest.mark.container, pytest.mark.slow]

IMAGE = "longdoc-test-sglang:docker1"


@dataclass
class Daemon:
    """A private dockerd: start it, stop it by its pid, start it again on the same dirs."""

    root: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        return f"unix://{self.root}/docker.sock"

    def docker(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, "DOCKER_HOST": self.host}
        return subprocess.run(  # type: ignore[call-overload,no-any-return]
            ["docker", *args], env=env, capture_output=True, timeout=120, **kwargs
        )

    def start(self) -> None:
        log = open(self.root / "dockerd.log", "ab")  # noqa: SIM115 (kept for the daemon's life)
        self.process = subprocess.Popen(
            [
                "dockerd",
                "--data-root",
                str(self.root / "data"),
                "--exec-root",
                str(self.root / "exec"),
                "--pidfile",
                str(self.root / "dockerd.pid"),
                "--host",
                self.host,
                "--storage-driver",
                "vfs",
                "--iptables=false",
                "--ip6tables=false",
                "--bridge=none",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        wait_for(lambda: self.docker("version").returncode == 0, 60, "dockerd to answer")

    def stop(self) -> None:
        """SIGTERM to this very daemon (it stops its containers), then wait for it."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)
        self.process = None


@pytest.fixture
def dockerd(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemon]:
    if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("docker") is None:
        pytest.skip("needs root and docker.io (packaging/install-system-deps.sh test)")
    # Short: the socket path must fit a sockaddr_un.
    daemon = Daemon(Path(tempfile.mkdtemp(prefix="ld-docker-", dir="/tmp")))
    daemon.start()
    monkeypatch.setenv("DOCKER_HOST", daemon.host)
    imported = daemon.docker("import", "-", IMAGE, input=_rootfs_tar())
    assert imported.returncode == 0, imported.stderr
    try:
        yield daemon
    finally:
        if daemon.process is None:
            with contextlib.suppress(Exception):
                daemon.start()
        with contextlib.suppress(Exception):
            names = daemon.docker("ps", "-aq").stdout.decode().split()
            if names:
                daemon.docker("rm", "-f", *names)
        daemon.stop()
        # dockerd leaves its network namespace mounted under the exec root.
        mounts = Path("/proc/mounts").read_text().split("\n")
        for point in sorted((m.split()[1] for m in mounts if str(daemon.root) in m), reverse=True):
            subprocess.run(["umount", point], capture_output=True, check=False)
        shutil.rmtree(daemon.root, ignore_errors=True)


def docker_profile(
    home: Path, model_dir: Path, *extra: str, runtime_args: tuple[str, ...] = ()
) -> None:
    write_profile(
        home,
        "test",
        {
            "kind": "container",
            "gpu_vendor": "none",
            "runtime": "docker",
            "image": IMAGE,
            "command": [sys.executable, "-m", "tests.support.sglang_server"],
            "workdir": str(ROOT),
            "engine_args": server_args(0.5, extra),
            "model_dir": str(model_dir),
            "served_model_name": TEST_MODEL,
            "port": free_port(),
            "devices": [],
            # No bridge in the private daemon: the server listens on the host's loopback.
            "extra_runtime_args": ["--network", "host", *runtime_args],
            "mounts": host_mounts(),
            "ready_timeout_s": 60,
            "grace_period_s": 5,
            "restart": {"max_restarts": 2, "window_s": 60, "backoff_base_s": 0.5},
        },
    )


def status(home: Path) -> tuple[int, dict[str, object]]:
    result = longdoc("server", "status", "--json", "--profile", "test", home=home)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def followers(home: Path) -> list[int]:
    """Pids of `docker|podman logs --follow` processes for this home's container."""
    name = f"longdoc-sglang-{json.loads((home / 'server' / 'state.json').read_text())['port']}"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if b"--follow" in argv and name.encode() in argv:
                    found.append(int(entry.name))
    return found


def test_daemon_down_is_a_state_of_its_own_and_the_server_resumes(
    dockerd: Daemon, managed_home: Path, model_dir: Path
) -> None:
    docker_profile(managed_home, model_dir)
    manager = ServerManager(managed_home, Settings(profile="test"))
    manager.start()
    code, look = status(managed_home)
    assert (code, look["state"]) == (0, "ready")

    dockerd.stop()
    code, look = wait_for(
        lambda: (s := status(managed_home))[1]["state"] == "runtime_down" and s,
        90,
        "status to say the runtime is down",
    )  # type: ignore[misc]
    assert code == EXIT_RUNTIME_DOWN
    assert "docker daemon" in str(look["error"]) and "systemctl start docker" in str(look["error"])
    assert look["restarts"] == 0
    # doctor names the fix: start the daemon (not "add you to the docker group").
    doctor = longdoc("doctor", "--json", "--profile", "test", home=managed_home)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    runtime = checks["Container runtime"]
    assert runtime["status"] == "problem" and "systemctl start docker" in runtime["fix"]
    assert "group" not in runtime["fix"]

    dockerd.start()
    wait_for(lambda: status(managed_home)[1]["state"] == "ready", 120, "the server to resume")
    code, look = status(managed_home)
    assert code == 0 and look["restarts"] == 0 and look["error"] is None
    log = (managed_home / "server" / "logs" / "supervisor.log").read_text()
    assert "disappeared" not in log and "restarting in" not in log
    assert "the container runtime is back" in log
    manager.stop()


def test_a_killed_supervisor_leaves_no_docker_log_follower(
    dockerd: Daemon, managed_home: Path, model_dir: Path
) -> None:
    docker_profile(managed_home, model_dir)
    ServerManager(managed_home, Settings(profile="test")).start()
    assert followers(managed_home)
    supervisor = json.loads((managed_home / "server" / "state.json").read_text())["supervisor_pid"]
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not followers(managed_home), 30, "the log follower to end")


def test_an_oom_kill_is_reported_as_such_and_not_restarted(
    dockerd: Daemon, managed_home: Path, model_dir: Path
) -> None:
    memory = ("--memory", "300m", "--memory-swap", "300m")
    docker_profile(managed_home, model_dir, "--oom-after", "2", runtime_args=memory)
    ServerManager(managed_home, Settings(profile="test")).start()
    wait_for(lambda: status(managed_home)[1]["state"] == "failed", 120, "the OOM kill")
    _, look = status(managed_home)
    assert "killed for lack of memory (OOM)" in str(look["error"])
    assert "not restarted" in str(look["error"])
    assert look["outcome"] == {"exit_code": 137, "signal": 9, "oom": True}
    assert look["restarts"] == 0
    log = (managed_home / "server" / "logs" / "supervisor.log").read_text()
    assert "restarting in" not in log
