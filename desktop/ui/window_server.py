"""The main window's side of the server: its state shown everywhere, the server's limits
fetched when it becomes ready, the server panel and the workstation checklist."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtWidgets import QMessageBox

from desktop.answering.budget import ContextLimits
from desktop.config import data_dir
from desktop.ui import tasks
from desktop.ui.doctor_dialog import DoctorDialog
from desktop.ui.server_panel import ServerPanel
from desktop.ui.session import image_only
from server_manager import ServerManager, ServerStatus

if TYPE_CHECKING:
    from desktop.ui.main_window import MainWindow

log = logging.getLogger("longdoc.ui")

UP = ("ready", "busy")


class ServerLink(QObject):
    """Follows the server monitor for the window; opens the server's dialogs."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.panel: ServerPanel | None = None
        self._state: str | None = None
        self._context_task: tasks.Task[ContextLimits] | None = None
        window.monitor.status_changed.connect(self._on_monitor_status_changed)

    def forget_state(self) -> None:
        """New settings: the next status is news (the limits are fetched again)."""
        self._state = None

    @Slot(object)
    def _on_monitor_status_changed(self, status: ServerStatus) -> None:
        w = self.window
        w.indicator.set_status(status)
        w.ask_panel.set_server_state(status.state)
        w.first_run.set_server_status(status, w.monitor.external)
        became_ready = status.state in UP and self._state not in UP
        self._state = status.state
        if became_ready:
            self._fetch_context()
        elif status.state in ("stopped", "failed"):
            w.library.set_context(None, w.session.settings.answer_reserve)

    def _fetch_context(self) -> None:
        session = self.window.session

        def known(limits: ContextLimits) -> None:
            settings = session.settings
            w = self.window
            w.library.set_context(
                limits, settings.answer_reserve, settings.thinking, session.reads_images
            )
            doc = w.document
            if (
                doc is not None
                and session.reads_images is False
                and image_only(doc.kind, len(doc.pages), len(doc.empty_pages))
                and not w.ask_panel.busy
            ):
                # Opened before the server said it reads no images (the core would have
                # refused it when asked): now refused at once, with the reason. (The panel
                # takes a document anew only after another one, or none.)
                w.ask_panel.set_document(None)
                w.ask_panel.set_document(doc)
            else:
                w.ask_panel.refresh_budget()

        self._context_task = tasks.run_call(
            session.limits,
            receiver=self,
            success=known,
            failure=lambda exc: log.info("context length unknown: %s", exc),
            name="context length",
        )

    def show_panel(self) -> ServerPanel:
        """The server panel (non-modal)."""
        if self.panel is None:
            self.panel = ServerPanel(self.window.monitor, self.window)
            self.panel.settings_changed.connect(self.window.apply_settings)
        self.panel.show()
        self.panel.raise_()
        return self.panel

    def start_server(self) -> None:
        """Start the local server, in the panel that shows its progress."""
        self.show_panel().start_server()

    def show_doctor(self) -> DoctorDialog:
        """Help ▸ Check this workstation: the ``longdoc doctor`` checklist."""
        from desktop.doctor import Context

        dialog = DoctorDialog(Context.of(self.window.session.settings), self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def close(self) -> None:
        """The window closes: the panel too, and the server if the user says so."""
        if self.panel is not None:
            self.panel.close()
        settings = self.window.session.settings
        status = self.window.monitor.status
        if settings.endpoint or settings.keep_server_running or status is None:
            return
        if status.state not in ("starting", *UP):
            return
        answer = QMessageBox.question(
            self.window,
            "Longdoc",
            "Stop the Longdoc server too? It takes a while to load again.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.Yes,
        )
        if answer == QMessageBox.StandardButton.Yes:
            manager = ServerManager(data_dir(), settings)
            tasks.run_call(manager.stop, receiver=self.window, name="stop server")
