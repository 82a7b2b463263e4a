"""`longdoc server ...` without a server: --json everywhere, exit codes, typed errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from desktop import errors as app_errors
from server_manager import errors
from tests.support.cli import json_output, longdoc

ROOT = Path(__file__).resolve().parents[3]
SUBCOMMANDS = ("start", "stop", "restart", "status", "logs", "selftest")


def test_server_manager_codes_agree_with_the_apps_table() -> None:
    assert errors.EXIT_USAGE == app_errors.EXIT_USAGE
    assert errors.EXIT_SERVER_UNAVAILABLE == app_errors.EXIT_SERVER_UNAVAILABLE
    assert app_errors.StorageError.exit_code == errors.EXIT_STORAGE
    codes = [cls.exit_code for cls in errors.ERRORS_BY_CODE.values()]
    assert codes == sorted(set(codes)) and all(10 <= c <= 20 for c in codes)
    assert not issubclass(errors.ServerManagerError, app_errors.LongdocError)  # one-way


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_takes_json_and_lists_only_its_codes(tmp_path: Path, command: str) -> None:
    result = longdoc("server", command, "--help", home=tmp_path, env={"PATH": str(tmp_path)})
    assert result.returncode == 0
    assert "--json" in result.stdout
    codes = result.stdout.split("exit codes:", 1)[1]
    listed = {int(m.group(1)) for m in re.finditer(r"^  (\d+) ", codes, re.MULTILINE)}
    expected = {
        "start": {0, 1, 2, 4, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 130},
        "restart": {0, 1, 2, 4, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 130},
        "stop": {0, 1, 2, 11, 17, 130},
        "status": {0, 1, 2, 4, 20, 130},
        "logs": {0, 1, 2, 18, 130},
        "selftest": {0, 1, 2, 4, 5, 7, 130},
    }[command]
    assert listed == expected


def test_json_outputs_without_a_server(tmp_path: Path) -> None:
    def server_json(command: str) -> dict[str, Any]:
        # No runtime on PATH: nothing to find, nothing started.
        args = ("server", command, "--json", "--profile", "native")
        return json_output(longdoc(*args, home=tmp_path, env={"PATH": str(tmp_path)}))

    assert server_json("status")["state"] == "stopped"
    assert server_json("stop") == {"stopped": False}


def test_logs_before_any_start_is_exit_18(tmp_path: Path) -> None:
    result = longdoc(
        "server", "logs", "--profile", "native", home=tmp_path, env={"PATH": str(tmp_path)}
    )
    assert result.returncode == 18
    assert result.stderr.splitlines() == [
        f"Error: No server log yet in {tmp_path / 'server' / 'logs'}: the server has not been "
        "started from this data directory (longdoc server start)."
    ]


def test_a_server_manager_error_is_one_line_with_its_code(tmp_path: Path) -> None:
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "mine.toml").write_text(
        'extends = "sglang-rocm"\nengine_args = ["--api-key", "{api_key}"]\n'
    )
    result = longdoc(
        "server", "start", "--json", "--profile", "mine", home=tmp_path, env={"PATH": str(tmp_path)}
    )
    assert result.returncode == 16
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: {tmp_path / 'profiles' / 'mine.toml'}: engine_args entry")


def test_several_start_problems_are_a_list_one_line_each(tmp_path: Path) -> None:
    import socket

    (tmp_path / "profiles").mkdir()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        (tmp_path / "profiles" / "n.toml").write_text(
            'kind = "native"\ngpu_vendor = "amd"\n'
            f'model_dir = "{tmp_path / "no-model"}"\nport = {port}\n'
            'devices = ["/dev/longdoc-no-such-device"]\n'
        )
        result = longdoc(
            "server", "start", "--profile", "n", home=tmp_path, env={"PATH": str(tmp_path)}
        )
    assert result.returncode == errors.EXIT_NO_GPU_DEVICES  # the most fundamental one's
    lines = result.stderr.splitlines()
    assert lines[0] == "Error: 3 problems prevent the start:"
    assert [line[:4] for line in lines[1:]] == ["  • "] * 3
    assert lines[1].startswith("  • No GPU device nodes: /dev/longdoc-no-such-device missing")
    assert lines[2].startswith(f"  • The model directory {tmp_path / 'no-model'} does not exist")
    assert lines[3].startswith(f"  • Port {port} is already in use")
    assert all(len(line) < 300 for line in lines)
