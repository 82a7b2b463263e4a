"""Fixtures for tests against a real container runtime: a tiny local image, test profiles.

The image is a near-empty rootfs (``podman import``) whose entry point is the host's Python,
bind-mounted read-only with the project and its virtualenv, running the project's own
SGLang-compatible server (``tests/support/sglang_server/``). Nothing is pulled.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from server_manager.profiles import LABEL_HOME
from tests.support import waiting

ROOT = Path(__file__).resolve().parents[2]
TEST_IMAGE = "localhost/longdoc-test-sglang:2"
TEST_MODEL = "Qwen3.5-test"
# What the sandbox (and CI) allows: runc instead of crun, and limits no higher than ours.
NOFILE = min(65536, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
RUNTIME_ARGS = [
    "--runtime",
    "runc",
    "--ulimit",
    f"nofile={NOFILE}:{NOFILE}",
    "--ulimit",
    "nproc=4096:4096",
]


def podman_path() -> str | None:
    """The podman executable, or None."""
    return shutil.which("podman")


def podman(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run podman, capturing text output."""
    path = podman_path()
    assert path is not None
    return subprocess.run(
        [path, *args], capture_output=True, text=True, check=check, timeout=timeout
    )


def run_sleeping_container(name: str, home: str, image: str, seconds: int) -> None:
    """Start a detached container ``name`` of ``image`` that only sleeps, labelled as the
    server of data directory ``home`` (the host's Python runs inside through its mounts)."""
    podman(
        "run",
        "--detach",
        "--name",
        name,
        "--label",
        f"{LABEL_HOME}={home}",
        *RUNTIME_ARGS,
        *[arg for mount in host_mounts() for arg in ("--volume", mount)],
        "--entrypoint",
        os.path.realpath(sys.executable),
        image,
        "-c",
        f"import time; time.sleep({seconds})",
    )


def _rootfs_tar() -> bytes:
    """A rootfs with just the directories, users and library symlinks Python needs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add_dir(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)

        def add_file(name: str, text: str) -> None:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))

        def add_link(name: str, target: str) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)

        for name in ("etc", "proc", "sys", "dev", "root", "usr", "usr/lib", "usr/lib64", "work"):
            add_dir(name)
        add_dir("tmp", 0o1777)
        # Merged /usr as on Debian 12: the loader is found at /lib64 through the symlink.
        add_link("lib", "usr/lib")
        add_link("lib64", "usr/lib64")
        add_file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
        # video: the bundled ROCm profiles run with --group-add video, which the runtime
        # resolves in the image's own group file (as in the real ROCm images).
        add_file("etc/group", "root:x:0:\nvideo:x:44:\n")
    return buf.getvalue()


def host_mounts() -> list[str]:
    """Read-only bind mounts that make the host's venv work inside the container."""
    prefixes = {Path(sys.base_prefix).resolve(), ROOT, Path(sys.prefix)}
    # The venv's python is a symlink into the base installation (pyenv, /usr/...).
    prefixes.add(Path(os.path.realpath(sys.executable)).parents[1])
    mounts = []
    for path in sorted(prefixes):
        if any(path != other and path.is_relative_to(other) for other in prefixes):
            continue
        if path in (Path("/usr"), Path("/")):
            continue
        mounts.append(f"{path}:{path}:ro")
    for lib in ("/usr/lib", "/usr/lib64"):
        if Path(lib).is_dir():
            mounts.append(f"{lib}:{lib}:ro")
    return mounts


@pytest.fixture(scope="session")
def test_image() -> str:
    """The tiny test image, imported once (kept between runs: the tag says its version)."""
    if podman_path() is None:
        if os.environ.get("LONGDOC_REQUIRE_CONTAINERS"):
            # `make test` sets this: there the runtime was installed, so its absence is a failure.
            pytest.fail("podman is not installed but LONGDOC_REQUIRE_CONTAINERS is set")
        pytest.skip("podman is not installed")
    if podman("image", "exists", TEST_IMAGE, check=False).returncode != 0:
        subprocess.run(
            [podman_path() or "podman", "import", "-", TEST_IMAGE],
            input=_rootfs_tar(),
            capture_output=True,
            check=True,
            timeout=120,
        )
    return TEST_IMAGE


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def toml_value(value: object) -> str:
    """TOML for the few value types profiles use (JSON strings and lists are valid TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def write_profile(home: Path, name: str, values: dict[str, object]) -> Path:
    """Write ``<home>/profiles/<name>.toml``."""
    directory = home / "profiles"
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text("".join(f"{k} = {toml_value(v)}\n" for k, v in values.items()))
    return path


def server_args(startup_delay: float = 1.0, extra: tuple[str, ...] = ()) -> list[str]:
    """The test server's own command line (it takes a subset of SGLang's flags).

    No key here: Longdoc adds ``--config FILE`` with it, as for SGLang.
    """
    return [
        "--host",
        "{host}",
        "--port",
        "{port}",
        "--model-name",
        "{served_model_name}",
        "--model-path",
        "{model_path}",
        "--startup-delay",
        str(startup_delay),
        "--log-stages",
        "--log-args",
        *extra,
    ]


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """A model directory that passes the start's checks (config.json, a weight file, the
    tokenizer); the test server reads nothing from it."""
    path = tmp_path / "model"
    path.mkdir()
    (path / "config.json").write_text('{"architectures": ["Qwen3_5MoeForConditionalGeneration"]}')
    (path / "model.safetensors").write_bytes(b"\0" * 16)
    (path / "tokenizer.json").write_text("{}")
    return path


ProfileMaker = Callable[..., dict[str, object]]


@pytest.fixture
def container_profile(home: Path, model_dir: Path, test_image: str) -> ProfileMaker:
    """Write a container profile ``test`` (keyword arguments override keys); returns it."""

    def make(
        name: str = "test",
        startup_delay: float = 1.0,
        server_extra: tuple[str, ...] = (),
        **overrides: object,
    ) -> dict[str, object]:
        values: dict[str, object] = {
            **_test_server(
                model_dir, server_args(startup_delay, server_extra), restarts=2, backoff_max_s=2
            ),
            "kind": "container",
            "runtime": "podman",
            "image": test_image,
            "devices": [],
            "extra_runtime_args": RUNTIME_ARGS,
            "mounts": host_mounts(),
        }
        values.update(overrides)
        write_profile(home, name, values)
        return values

    return make


def _test_server(
    model_dir: Path, engine_args: list[str], *, restarts: int, backoff_max_s: float
) -> dict[str, object]:
    """A profile's keys for the test server (no GPU), in a container or not: it runs the
    venv's interpreter, which works inside because its paths are mounted at the same
    places (host_mounts); ``restarts`` after a crash at most."""
    return {
        "gpu_vendor": "none",
        "command": [sys.executable, "-m", "tests.support.sglang_server"],
        "workdir": str(ROOT),
        "engine_args": engine_args,
        "model_dir": str(model_dir),
        "served_model_name": TEST_MODEL,
        "port": free_port(),
        "ready_timeout_s": 30,
        "grace_period_s": 5,
        "restart": {
            "max_restarts": restarts,
            "window_s": 60,
            "backoff_base_s": 0.5,
            "backoff_max_s": backoff_max_s,
        },
    }


@pytest.fixture
def native_profile(home: Path, model_dir: Path) -> ProfileMaker:
    """Write a native profile running the test server as a host process."""

    def make(name: str = "native-test", **overrides: object) -> dict[str, object]:
        values: dict[str, object] = {
            **_test_server(model_dir, server_args(0.5), restarts=1, backoff_max_s=1),
            "kind": "native",
        }
        values.update(overrides)
        write_profile(home, name, values)
        return values

    return make


def _cleanup(home: Path) -> None:
    """Stop supervisors and remove containers of this home, whatever state the test left."""
    state_file = home / "server" / "state.json"
    with contextlib.suppress(OSError, ValueError):
        state = json.loads(state_file.read_text())
        for pid in (state.get("supervisor_pid", 0),):
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if state.get("pid"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(state["pid"], signal.SIGKILL)
    if podman_path() is not None:
        names = podman(
            "ps",
            "--all",
            "--format",
            "{{.Names}}",
            "--filter",
            f"label=longdoc.home={home}",
            check=False,
        ).stdout.split()
        for name in names:
            podman("rm", "--force", name, check=False)


@pytest.fixture
def managed_home(home: Path) -> Iterator[Path]:
    """``home``, with every server started from it stopped and removed afterwards."""
    yield home
    from desktop.config import Settings
    from server_manager import ServerManager

    with contextlib.suppress(Exception):
        ServerManager(home, Settings()).stop()
    _cleanup(home)


def wait_for(predicate: Callable[[], object], timeout: float = 30, what: str = "") -> object:
    """Poll until ``predicate()`` is truthy (every 0.2 s: it may ask a runtime); its value."""
    return waiting.wait_for(predicate, timeout, what, interval=0.2)
