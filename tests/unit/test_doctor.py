"""``longdoc doctor``: each check's ok and problem states, on real files, sockets and servers."""

from __future__ import annotations

import http.server
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop import doctor
from desktop.doctor import Check, Context, run_checks
from tests.conftest import API_KEY
from tests.support.cli import longdoc
from tests.support.recording_proxy import serving
from tests.support.sglang_server import FakeSGLang


def write_profile(home: Path, name: str, values: dict[str, object]) -> None:
    """``<home>/profiles/<name>.toml`` from plain values (JSON is valid TOML here)."""
    (home / "profiles").mkdir(exist_ok=True)
    lines = [f"{key} = {json.dumps(value)}\n" for key, value in values.items()]
    (home / "profiles" / f"{name}.toml").write_text("".join(lines))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def complete_model(path: Path) -> Path:
    """A model folder with config, two indexed shards and a tokenizer."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text("{}")
    (path / "tokenizer.json").write_text("{}")
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    for shard in shards:
        (path / shard).write_bytes(b"\0" * 16)
    index = {"weight_map": {"a": shards[0], "b": shards[1]}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    return path


def native(home: Path, model_dir: Path, **extra: object) -> Context:
    """A native, GPU-less profile named ``t`` and the context that checks it."""
    values: dict[str, object] = {
        "kind": "native",
        "gpu_vendor": "none",
        "model_dir": str(model_dir),
        "port": free_port(),
    }
    values.update(extra)
    write_profile(home, "t", values)
    return Context(data_dir=home, profile_name="t")


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def checks_for(ctx: Context) -> dict[str, Check]:
    return by_name(run_checks(ctx, probe_qt=False))


def test_model_folder_complete_is_ok(home: Path, tmp_path: Path) -> None:
    result = checks_for(native(home, complete_model(tmp_path / "m")))["Model folder"]
    assert result.status == "ok", result


def test_model_folder_missing_is_a_problem_naming_the_override_file(
    home: Path, tmp_path: Path
) -> None:
    result = checks_for(native(home, tmp_path / "absent"))["Model folder"]
    assert result.status == "problem"
    assert str(tmp_path / "absent") in result.detail
    assert str(home / "profiles" / "t.toml") in result.fix


def test_model_folder_with_a_missing_shard_or_tokenizer_is_a_problem(
    home: Path, tmp_path: Path
) -> None:
    model = complete_model(tmp_path / "m")
    (model / "model-00002-of-00002.safetensors").unlink()
    (model / "tokenizer.json").unlink()
    result = checks_for(native(home, model))["Model folder"]
    assert result.status == "problem"
    assert "model-00002-of-00002.safetensors" in result.detail
    assert "tokenizer" in result.detail


def test_port_held_by_another_program_is_a_problem(home: Path, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = checks_for(native(home, complete_model(tmp_path / "m"), port=port))["Port"]
    assert result.status == "problem"
    assert str(port) in result.detail and "ss -ltnp" in result.fix


def test_port_held_by_our_own_server_is_ok(home: Path, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        ctx = native(home, complete_model(tmp_path / "m"), port=port)
        (home / "server").mkdir(exist_ok=True)
        state = {
            "profile": "t",
            "kind": "native",
            "endpoint": "",
            "model": "",
            "port": port,
            "state": "ready",
        }
        (home / "server" / "state.json").write_text(json.dumps(state))
        result = checks_for(ctx)["Port"]
    assert result.status == "ok" and "Longdoc" in result.detail


def test_no_container_runtime_is_a_problem(home: Path, tmp_path: Path) -> None:
    write_profile(
        home,
        "c",
        {
            "kind": "container",
            "gpu_vendor": "none",
            "runtime": "no-such-runtime-xyz",
            "image": "localhost/x:1",
            "model_dir": str(complete_model(tmp_path / "m")),
            "port": free_port(),
        },
    )
    result = checks_for(Context(data_dir=home, profile_name="c"))
    assert result["Container runtime"].status == "problem"
    assert "podman" in result["Container runtime"].fix
    # The image cannot be checked without a runtime: said, not crashed.
    assert result["Server image"].status == "warning"


def test_missing_gpu_device_nodes_are_a_problem(home: Path, tmp_path: Path) -> None:
    ctx = native(
        home, complete_model(tmp_path / "m"), gpu_vendor="amd", devices=["/dev/no-such-kfd"]
    )
    result = checks_for(ctx)["GPU devices"]
    assert result.status == "problem" and "/dev/no-such-kfd" in result.detail


def test_bad_profile_is_a_problem_and_the_list_still_completes(home: Path) -> None:
    write_profile(home, "bad", {"kind": "spaceship"})
    result = run_checks(Context(data_dir=home, profile_name="bad"), probe_qt=False)
    names = [c.name for c in result]
    assert by_name(result)["Server profile"].status == "problem"
    assert names[-1] == "Server"


def test_server_with_the_right_key_is_ok_and_wrong_key_a_problem(
    home: Path, tmp_path: Path
) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as server:
        good = by_name(
            run_checks(
                Context(home, "external", endpoint=server.url, api_key=API_KEY), probe_qt=False
            )
        )
        bad = by_name(
            run_checks(
                Context(home, "external", endpoint=server.url, api_key="wrong"), probe_qt=False
            )
        )
    assert good["Server"].status == "ok"
    assert good["Context length"].status == "ok" and "262,144" in good["Context length"].detail
    assert bad["Server"].status == "problem" and "key" in bad["Server"].detail


def test_server_smaller_context_than_the_profile_is_a_problem(home: Path, tmp_path: Path) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=32_768) as server:
        write_profile(
            home,
            "ext",
            {"kind": "external", "url": server.url, "api_key": API_KEY, "context_length": 131_072},
        )
        result = by_name(run_checks(Context(home, "ext"), probe_qt=False))
    assert result["Server"].status == "ok"
    assert result["Context length"].status == "problem"
    assert "32,768" in result["Context length"].detail


class _NoContextHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def no_context_server() -> Iterator[str]:
    """An OpenAI-compatible server whose model card has no max_model_len."""
    with serving(_NoContextHandler) as url:
        yield url


def test_server_without_context_length_is_a_warning_naming_the_setting(
    home: Path, no_context_server: str
) -> None:
    result = by_name(
        run_checks(Context(home, "external", endpoint=no_context_server), probe_qt=False)
    )
    assert result["Context length"].status == "warning"
    assert "context_length" in result["Context length"].fix


def test_managed_server_not_running_is_a_warning_but_an_external_one_a_problem(
    home: Path, tmp_path: Path
) -> None:
    managed = checks_for(native(home, complete_model(tmp_path / "m")))["Server"]
    assert managed.status == "warning" and "longdoc server start" in managed.fix
    port = free_port()
    external = by_name(
        run_checks(Context(home, "t", endpoint=f"http://127.0.0.1:{port}"), probe_qt=False)
    )["Server"]
    assert external.status == "problem"


def test_damaged_database_is_a_problem(home: Path) -> None:
    (home / "longdoc.db").write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    result = doctor.check_database(home / "longdoc.db")
    assert result.status == "problem" and "longdoc.db" in result.detail


def test_data_directory_readable_by_others_is_a_warning(home: Path) -> None:
    home.chmod(0o755)
    assert doctor.check_data_dir(home).status == "warning"
    home.chmod(0o700)
    assert doctor.check_data_dir(home).status == "ok"


def test_no_display_is_a_warning() -> None:
    assert doctor.check_display({}).status == "warning"


def test_cli_json_shape_and_exit_code(home: Path, tmp_path: Path) -> None:
    native(home, tmp_path / "absent")
    (home / "longdoc.toml").write_text('profile = "t"\n')
    done = longdoc("doctor", "--json", home=home)
    assert done.returncode == 7, done.stderr
    checks = json.loads(done.stdout)["checks"]
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in checks)
    assert {c["status"] for c in checks} <= {"ok", "warning", "problem"}
    assert any(c["name"] == "Model folder" and c["status"] == "problem" for c in checks)
    assert any(c["name"] == "Qt" and c["status"] == "ok" for c in checks)
