"""First start: the first-run view says what to do; Help lists the shortcuts; the icon."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from pytestqt.qtbot import QtBot

from desktop.config import Settings, load_settings
from desktop.ui.app import app_icon
from desktop.ui.help import shortcut_rows
from desktop.ui.main_window import MainWindow
from tests.conftest import API_KEY
from tests.gui.conftest import FOUR_PAGES
from tests.support.sglang_server import FakeSGLang


def test_first_start_shows_what_to_do_then_the_document(
    qtbot: QtBot, make_window: object, sglang: FakeSGLang, monkeypatch: pytest.MonkeyPatch
) -> None:
    window: MainWindow = make_window(Settings(profile="native"))  # type: ignore[operator]
    view = window.first_run
    assert view.isVisible()
    assert not window.doc_view.isVisible() and not window.ask_panel.isVisible()
    texts = [w.text() for w in view.findChildren(type(view.server_label))]
    assert "1  Add documents" in texts and "2  Connect to a server" in texts
    assert "What Longdoc does differently" in texts and "Checked quotes" in texts
    # The local server is stopped: Start is offered.
    qtbot.waitUntil(lambda: view.server_label.text().startswith("Server: stopped"), timeout=5_000)
    assert view.start_button.isEnabled()

    # Connect to a server elsewhere: a wrong key says so, the right one connects.
    qtbot.keyClicks(view.endpoint_edit, sglang.url)
    qtbot.keyClicks(view.key_edit, "wrong")
    qtbot.mouseClick(view.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.test_label.text().startswith("Not ready"), timeout=5_000)
    assert "refused the API key" in view.test_label.text()
    assert not view.use_button.isEnabled()
    view.key_edit.clear()
    qtbot.keyClicks(view.key_edit, API_KEY)
    qtbot.keyClick(view.endpoint_edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: view.test_label.text().startswith("Connected"), timeout=5_000)
    assert view.test_label.text() == (
        f"Connected: {sglang.model_name}, context {sglang.context_length:,} tokens."
    )
    qtbot.mouseClick(view.use_button, Qt.MouseButton.LeftButton)
    assert load_settings(env=False).endpoint == sglang.url
    assert window.session.settings.endpoint == sglang.url
    qtbot.waitUntil(lambda: window.indicator.state == "ready", timeout=5_000)
    assert not view.start_button.isEnabled()  # an external server is not started here

    # Open a document: the view gives way to the document and the ask panel.
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(FOUR_PAGES)], ""))
    qtbot.mouseClick(view.open_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.document is not None, timeout=30_000)
    assert not view.isVisible()
    assert window.doc_view.isVisible() and window.ask_panel.isVisible()
    qtbot.waitUntil(lambda: min(window.splitter.sizes()[1:3]) > 200)  # room to read and ask


def test_help_lists_every_shortcut_of_the_menus(qtbot: QtBot, window: MainWindow) -> None:
    window.show_shortcuts()
    dialog = window.shortcuts_dialog
    qtbot.waitExposed(dialog)
    rows = [
        tuple(dialog.tree.topLevelItem(i).text(c) for c in range(3))
        for i in range(dialog.tree.topLevelItemCount())
    ]
    does = {row[2] for row in rows}
    for action in ("Open", "Ask", "Stop", "Copy answer", "Ask again", "Find", "Server panel"):
        assert action in does, action
    assert any(r[0] == "Ask" and r[2] == "Ask" and "Return" in r[1] for r in rows)
    assert ("Question box", "Shift+Enter", "New line in the question") in rows
    # Every action of the window that has a shortcut is listed.
    with_keys = [a for a in window.actions() if not a.shortcut().isEmpty()]
    assert len(shortcut_rows([("", with_keys)])) - 3 == len(with_keys)
    assert len(rows) - 3 == len(with_keys)


def test_the_application_has_its_icon() -> None:
    icon = app_icon()
    assert not icon.isNull()
    sizes = {s.width() for s in icon.availableSizes()}
    assert {16, 32, 48, 256} <= sizes
    icons = Path(__file__).resolve().parents[2] / "resources" / "icons" / "hicolor"
    assert (icons / "scalable" / "apps" / "longdoc.svg").is_file()
