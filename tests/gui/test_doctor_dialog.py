"""Help ▸ Check this workstation shows the doctor's checklist, including the server's state."""

from __future__ import annotations

from desktop.ui.main_window import MainWindow


def test_help_menu_shows_the_checklist_with_the_server_ok(
    window: MainWindow, qtbot: object
) -> None:
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    action = next(a for a in help_menu.actions() if a.text().startswith("&Check this workstation"))
    action.trigger()
    dialogs = [w for w in window.children() if type(w).__name__ == "DoctorDialog"]
    assert len(dialogs) == 1
    dialog = dialogs[0]
    qtbot.waitUntil(lambda: bool(dialog.checks), timeout=120_000)  # type: ignore[attr-defined]
    names = {c.name: c for c in dialog.checks}
    # The window talks to the fake server with the right key: the server line says ok.
    assert names["Server"].status == "ok"
    assert dialog.tree.topLevelItemCount() == len(dialog.checks)
    texts = [dialog.tree.topLevelItem(i).text(1) for i in range(dialog.tree.topLevelItemCount())]
    assert "Server" in texts and "Data directory" in texts
    # It checks what the window uses: the fake server at the endpoint, not the managed
    # profile (sglang-rocm's container on port 30000), as the server panel does.
    profile = names["Server profile"]
    assert profile.detail.startswith(f"external: the endpoint {window.session.settings.endpoint}")
    assert "on port" not in profile.detail and "container" not in profile.detail
    assert window.session.settings.endpoint in names["Server"].detail
    assert dialog.again_button.isEnabled()


def test_a_server_failure_dialog_offers_the_checklist(window: MainWindow, qtbot: object) -> None:
    from PySide6.QtWidgets import QMessageBox, QPushButton

    from desktop.ui import messages
    from server_manager.errors import ModelDirMissing

    messages.error(ModelDirMissing("The model directory /srv/m does not exist."), window, True)
    box = window.findChild(QMessageBox, "errorBox")
    assert box is not None and "/srv/m" in box.text()
    button = box.findChild(QPushButton, "checkWorkstationButton")
    assert button is not None
    button.click()
    qtbot.waitUntil(  # type: ignore[attr-defined]
        lambda: any(type(w).__name__ == "DoctorDialog" for w in window.children()), timeout=5_000
    )
    # A document problem is not the workstation's: no offer there.
    from desktop.errors import DocumentEncrypted

    box.close()
    box.deleteLater()
    messages.error(DocumentEncrypted("a.pdf", "the PDF is encrypted"), window, True)
    boxes = [b for b in window.findChildren(QMessageBox, "errorBox") if b.isVisible()]
    assert boxes and all(b.findChild(QPushButton, "checkWorkstationButton") is None for b in boxes)
