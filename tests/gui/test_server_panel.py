"""The server panel as a user meets it: an external server's facts, Close and Esc, Restart."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.config import Settings
from desktop.ui.main_window import MainWindow
from tests.support.sglang_server import FakeSGLang


def test_an_external_server_shows_its_model_context_and_metrics(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    assert not window.session.settings.model  # the model comes from the server's listing
    window.show_server_panel()
    panel = window.server_panel
    assert panel is not None
    qtbot.waitUntil(lambda: panel.state_label.text() == "Server: ready", timeout=5_000)
    assert panel.model_label.text() == sglang.model_name
    assert panel.context_label.text() == f"{sglang.context_length:,} tokens"
    assert panel.profile_combo.currentText() == "external"
    assert "profile “external”" in panel.mode_label.text()
    assert panel.kv_label.text().endswith("%")
    assert panel.hit_label.text().endswith("%")
    assert not panel.restart_button.isEnabled()  # Longdoc does not run it

    # Close, and Esc, close it.
    qtbot.mouseClick(panel.close_button, Qt.MouseButton.LeftButton)
    assert not panel.isVisible()
    window.show_server_panel()
    qtbot.waitExposed(panel)
    # A user's Esc reaches the window they are in: wait until the panel is that window (on a
    # busy machine it may not be yet, and the main window's own Esc (Stop) would take it).
    panel.activateWindow()
    qtbot.waitUntil(panel.isActiveWindow, timeout=5_000)
    panel.log_view.setFocus()  # Esc works wherever the focus is in the panel
    qtbot.keyClick(panel.log_view, Qt.Key.Key_Escape)
    assert not panel.isVisible()


def test_restart_is_disabled_while_the_managed_server_is_stopped(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    window: MainWindow = make_window(Settings(profile="native"))  # type: ignore[operator]
    qtbot.waitUntil(lambda: window.indicator.state == "stopped", timeout=10_000)
    window.show_server_panel()
    panel = window.server_panel
    assert panel is not None
    qtbot.waitUntil(lambda: panel.state_label.text() == "Server: stopped", timeout=5_000)
    assert panel.start_button.isEnabled()
    assert not panel.stop_button.isEnabled()
    assert not panel.restart_button.isEnabled()


def test_selftest_runs_from_the_panel_and_its_result_stays_shown(
    window: MainWindow, qtbot: QtBot, sglang: FakeSGLang
) -> None:
    sglang.behaviour.update(needle_horizon=0.6)  # a server that misses late needles
    window.show_server_panel()
    panel = window.server_panel
    assert panel is not None
    assert panel.selftest_label.text() == "Not run yet."
    panel.run_selftest((8_000,))
    assert panel.selftest_button.text() == "Stop selftest"
    qtbot.waitUntil(lambda: panel.selftest_button.text() == "Run selftest", timeout=120_000)
    assert "recall lost" in panel.selftest_label.text()
    assert "8k 60%" in panel.selftest_label.text()
    # A new panel (e.g. after a restart of the app) shows the stored result with its date.
    panel.close()
    window.server_panel = None
    window.show_server_panel()
    assert window.server_panel is not None
    assert window.server_panel.selftest_label.text().startswith("Selftest 20")
