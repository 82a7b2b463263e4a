"""The server indicator through starting, ready and failure; the settings dialog."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from desktop.config import Settings, load_settings, save_settings
from desktop.store.db import StoredAnswer
from desktop.ui.main_window import MainWindow
from desktop.ui.settings_dialog import SettingsDialog
from tests.conftest import API_KEY
from tests.gui.conftest import FOUR_PAGES, ask, open_document, refused, wait_ready
from tests.support.sglang_server import FakeSGLang


def states_seen(window: MainWindow) -> list[str]:
    """Every state the indicator showed, in order, without repeats."""
    seen: list[str] = []

    def record(status: object) -> None:
        state = status.state  # type: ignore[attr-defined]
        if not seen or seen[-1] != state:
            seen.append(state)

    window.monitor.status_changed.connect(record)
    return seen


def test_indicator_follows_an_external_server_through_start_ready_and_failure(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    server = FakeSGLang(api_key=API_KEY, context_length=262_144, startup_delay=1.0).start()
    try:
        window: MainWindow = make_window(Settings(endpoint=server.url, api_key=API_KEY))  # type: ignore[operator]
        seen = states_seen(window)
        qtbot.waitUntil(lambda: window.indicator.state == "starting", timeout=5_000)
        assert "Server: starting (Loading the model…)" in window.indicator.text()
        qtbot.waitUntil(lambda: window.indicator.state == "ready", timeout=10_000)
        assert window.indicator.toolTip().startswith("Server: ready")
        # The model stops answering /health (e.g. it is reloading): starting again.
        server.behaviour.ready = False
        qtbot.waitUntil(lambda: window.indicator.state == "starting", timeout=5_000)
        server.behaviour.ready = True
        qtbot.waitUntil(lambda: window.indicator.state == "ready", timeout=5_000)
        server.stop()
        qtbot.waitUntil(lambda: window.indicator.state == "stopped", timeout=10_000)
        assert f"Nothing answers at {server.url}" in window.indicator.toolTip()
    finally:
        server.stop()
    assert seen[:3] == ["starting", "ready", "starting"]
    assert seen[-1] == "stopped"


def test_indicator_says_failed_when_the_key_is_refused(
    qtbot: QtBot, make_window: object, sglang: FakeSGLang, home: Path
) -> None:
    window: MainWindow = make_window(Settings(endpoint=sglang.url, api_key="wrong"))  # type: ignore[operator]
    qtbot.waitUntil(lambda: window.indicator.state == "failed", timeout=5_000)
    assert "refused the API key" in window.indicator.toolTip()


def test_managed_mode_uses_the_server_manager_and_its_profile(
    qtbot: QtBot, make_window: object, sglang: FakeSGLang, home: Path
) -> None:
    # A user profile of kind "external": the real ServerManager reports it and the
    # answerer reaches it through connection_for(), with no endpoint in the settings.
    profiles = home / "profiles"
    profiles.mkdir()
    (profiles / "fake.toml").write_text(
        'description = "the fake server"\nkind = "external"\n'
        f'url = "{sglang.url}"\napi_key = "{API_KEY}"\nserved_model_name = ""\n',
        encoding="utf-8",
    )
    settings = Settings(profile="fake")
    save_settings(settings)
    window: MainWindow = make_window(settings)  # type: ignore[operator]
    assert not window.monitor.external
    qtbot.waitUntil(lambda: window.indicator.state == "ready", timeout=10_000)
    window.show_server_panel()
    panel = window.server_panel
    assert panel is not None
    qtbot.waitUntil(lambda: panel.endpoint_label.text() == sglang.url, timeout=5_000)
    assert panel.profile_combo.currentText() == "fake"
    assert panel.mode_label.text().startswith("Longdoc manages this server.")
    assert not panel.start_button.isEnabled()  # it is running already
    assert panel.hit_label.text().endswith("%")
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    result = ask(window, qtbot, "Through the manager?")
    assert isinstance(result, StoredAnswer)
    assert result.status == "complete"


def test_ask_without_any_server_offers_to_start_one(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    window: MainWindow = make_window(Settings(profile="native"))  # type: ignore[operator]
    qtbot.waitUntil(lambda: window.indicator.state == "stopped", timeout=10_000)
    open_document(window, qtbot, FOUR_PAGES)
    notice, button = refused(window, qtbot, "Is anyone there?")
    assert notice.startswith("The server is not ready: No server configured")
    assert button == "Start the server"


def test_server_panel_shows_metrics_of_an_external_endpoint(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    window.show_server_panel()
    panel = window.server_panel
    assert panel is not None
    qtbot.waitUntil(lambda: panel.state_label.text() == "Server: ready", timeout=5_000)
    assert panel.mode_label.text().startswith(f"External server at {sglang.url}")
    assert not panel.start_button.isEnabled()
    assert not panel.stop_button.isEnabled()
    assert panel.kv_label.text().endswith("%")
    assert "running" in panel.requests_label.text()


def test_settings_dialog_validates_inline_and_saves(
    qtbot: QtBot, window: MainWindow, settings: Settings, sglang: FakeSGLang
) -> None:
    dialog: SettingsDialog = window.show_settings()
    qtbot.addWidget(dialog)
    save = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    assert dialog.endpoint_edit.text() == sglang.url
    assert save.isEnabled()
    assert not dialog.error_label.isVisible()

    dialog.endpoint_edit.setText("ftp://example.org")
    assert not save.isEnabled()
    assert dialog.error_label.isVisible()
    assert "must start with http:// or https://" in dialog.error_label.text()

    dialog.endpoint_edit.setText(sglang.url)
    dialog.reserve_spin.setValue(100)
    assert not save.isEnabled()
    assert dialog.error_label.text() == "answer_reserve must be at least 2,048 tokens, not 100"

    dialog.reserve_spin.setValue(8_192)
    dialog.thinking_box.setChecked(False)
    assert save.isEnabled()
    with qtbot.waitSignal(dialog.settings_saved):
        save.click()
    saved = load_settings()
    assert saved.answer_reserve == 8_192
    assert saved.thinking is False
    assert saved.endpoint == sglang.url
    assert window.session.settings.answer_reserve == 8_192
    assert not window.ask_panel.think_box.isChecked()
