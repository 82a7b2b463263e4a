"""A second start of Longdoc for the same data directory hands its files to the first."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtNetwork import QLocalServer
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.config import data_dir
from desktop.ui.main_window import MainWindow
from desktop.ui.single_instance import ALREADY_OPEN, InstanceGuard, send_to_running, server_name
from tests.gui.conftest import FOUR_PAGES

LONGDOC = Path(sys.executable).parent / "longdoc"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def guard(home: Path) -> Iterator[InstanceGuard]:
    """This process as the running instance for the test's data directory."""
    result = InstanceGuard(server_name(data_dir()))
    assert result.listen()
    yield result
    result.close()


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start processes; any still running at the end (a test that failed) is killed."""
    started: list[subprocess.Popen[str]] = []

    def start(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        process = subprocess.Popen(args, text=True, **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)


def test_a_second_start_sends_its_file_to_the_open_window_and_exits(
    qtbot: QtBot,
    guard: InstanceGuard,
    window: MainWindow,
    home: Path,
    tmp_path: Path,
    spawn: Callable[..., subprocess.Popen[str]],
) -> None:
    guard.files_received.connect(window.receive_paths)
    env = {**os.environ, "LONGDOC_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    # A relative path: the second start makes it absolute before sending.
    relative = os.path.relpath(FOUR_PAGES, tmp_path)
    with qtbot.waitSignal(guard.files_received, timeout=30_000) as blocker:
        second = spawn(
            [str(LONGDOC), "gui", relative],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    # The event loop must run while the second start waits for the first one's answer.
    qtbot.waitUntil(lambda: second.poll() is not None, timeout=30_000)
    out, err = second.communicate()
    assert second.returncode == 0, err
    assert blocker.args == [[FOUR_PAGES.absolute()]]
    assert err.strip().splitlines()[-1] == ALREADY_OPEN
    assert out == ""
    # The first instance added the file and shows it.
    qtbot.waitUntil(
        lambda: window.document is not None and Path(window.document.path) == FOUR_PAGES.absolute(),
        timeout=30_000,
    )


def test_a_first_start_removes_nothing_and_says_nothing_about_it(
    qapp: QApplication, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # ``qapp``: the guard's QLocalServer needs the application's event dispatcher, as in
    # the app (where the QApplication comes first). Without it this test passed only after
    # a test that had made one, and alone Qt warned "event dispatcher ... destroyed".
    # The first start, then the next: closed cleanly, it is a first start again.
    for _start in range(2):
        guard = InstanceGuard(server_name(data_dir()))
        try:
            with caplog.at_level(logging.INFO, logger="longdoc.ui.instance"):
                assert guard.listen()
            assert "stale" not in caplog.text
        finally:
            guard.close()


def test_a_stale_socket_from_a_crashed_instance_is_taken_over(
    qtbot: QtBot,
    home: Path,
    spawn: Callable[..., subprocess.Popen[str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = server_name(data_dir())
    # What a crashed instance leaves behind: the socket file, with nobody listening.
    probe = QLocalServer()
    assert probe.listen(name)
    path = probe.fullServerName()
    probe.close()
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(path)
    leftover.close()
    assert Path(path).exists()
    assert not send_to_running(name, [FOUR_PAGES])

    guard = InstanceGuard(name)
    try:
        with caplog.at_level(logging.INFO, logger="longdoc.ui.instance"):
            assert guard.listen()
        assert f"removed a stale instance socket: {name}" in caplog.text
        # A second guard for the same directory now sees a running instance.
        assert not InstanceGuard(name).listen()
        # And a second start reaches it (another process: it blocks until we answer).
        code = (
            "import sys; from pathlib import Path; "
            "from desktop.ui.single_instance import send_to_running; "
            "sys.exit(0 if send_to_running(sys.argv[1], [Path(sys.argv[2])]) else 3)"
        )
        with qtbot.waitSignal(guard.files_received, timeout=30_000) as blocker:
            sender = subprocess.Popen([sys.executable, "-c", code, name, str(FOUR_PAGES)], cwd=ROOT)
        qtbot.waitUntil(lambda: sender.poll() is not None, timeout=30_000)
        assert sender.returncode == 0
        assert blocker.args == [[FOUR_PAGES]]
    finally:
        guard.close()


def test_different_data_directories_have_different_instances(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert server_name(a) != server_name(b)
    assert server_name(a) == server_name(tmp_path / "b" / ".." / "a")
