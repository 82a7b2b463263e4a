"""The main window: library | document | ask panel, menus, shortcuts, status bar."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QShowEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QSplitter,
    QToolButton,
)

from desktop.config import Settings, load_settings, setting_sources
from desktop.documents import SUPPORTED_SUFFIXES
from desktop.documents.model import Document
from desktop.errors import ConfigError
from desktop.library import open_document
from desktop.ui import messages, tasks
from desktop.ui.ask_panel import AskPanel
from desktop.ui.batch_window import BatchWindow
from desktop.ui.doctor_dialog import DoctorDialog
from desktop.ui.document_view import DocumentView
from desktop.ui.first_run import FirstRunView
from desktop.ui.help import ShortcutsDialog
from desktop.ui.library_panel import LibraryPanel
from desktop.ui.message_line import INFO_TIMEOUT_MS, MESSAGE_LOG_SIZE, MessageLine, MessagesDialog
from desktop.ui.server_panel import ServerIndicator, ServerMonitor, ServerPanel
from desktop.ui.session import Session
from desktop.ui.settings_dialog import SettingsDialog
from desktop.ui.several_documents import SeveralDocuments
from desktop.ui.window_layout import LIBRARY_SHARE, SQUEEZED, PaneLayout, ui_settings
from desktop.ui.window_library import LibraryLink
from desktop.ui.window_menus import WindowMenus
from desktop.ui.window_server import ServerLink

# Moved to their own modules; importable from here as before.
__all__ = [
    "INFO_TIMEOUT_MS",
    "LIBRARY_SHARE",
    "MESSAGE_LOG_SIZE",
    "SQUEEZED",
    "MainWindow",
    "MessagesDialog",
    "ui_settings",
]

log = logging.getLogger("longdoc.ui")


class MainWindow(QMainWindow):
    """Longdoc's window."""

    def __init__(self, session: Session, poll_ms: int = 2_000) -> None:
        super().__init__()
        self.session = session
        self.setWindowTitle("Longdoc")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        self.document: Document | None = None
        self.batch_window: BatchWindow | None = None
        # Error dialogs about the server, runtime, GPUs or disk offer the checklist.
        messages.offer_doctor(self.show_doctor)

        self.library = LibraryPanel(session.store)
        self.doc_view = DocumentView()
        self.ask_panel = AskPanel(session)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.first_run = FirstRunView(session.settings)
        self.splitter.addWidget(self.library)
        self.splitter.addWidget(self.doc_view)
        self.splitter.addWidget(self.ask_panel)
        self.splitter.addWidget(self.first_run)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 5)
        self.splitter.setStretchFactor(2, 4)
        # The first-run view takes what the window gains (the platform may settle its
        # size after the splitter was laid out): not the library, which got 1,330 px.
        self.splitter.setStretchFactor(3, 9)
        self.splitter.setChildrenCollapsible(False)
        # Explicit minimums: the toolbars' own hints would add up to more than a small
        # laptop screen (or the 800-pixel offscreen one) and push the window off screen.
        self.library.setMinimumWidth(150)
        self.doc_view.setMinimumWidth(220)
        self.ask_panel.setMinimumWidth(280)
        self.setCentralWidget(self.splitter)
        self.layout_state = PaneLayout(self)

        self.message_line = MessageLine(self.statusBar(), self)
        self.indicator = ServerIndicator()
        self.statusBar().addPermanentWidget(self.indicator)
        self.statusBar().addPermanentWidget(self.message_line.button)

        self.monitor = ServerMonitor(session.settings, poll_ms)
        self.server = ServerLink(self)
        self.indicator.clicked.connect(self.show_server_panel)

        self.library.add_button.clicked.connect(self.open_files)
        self.library.document_selected.connect(self._on_library_document_selected)
        self.library.document_opened.connect(self._on_library_document_opened)
        # Search hits open; the open document closes when it leaves the library.
        self.library_link = LibraryLink(self)
        # Several documents: "Ask about these N documents" and Compare (their own windows).
        self.several = SeveralDocuments(self)
        self.library.set_ask_requested.connect(self.several.ask_about)
        self.library.compare_requested.connect(self.several.compare_stored)
        self.ask_panel.citation_clicked.connect(self._on_ask_panel_citation_clicked)
        self.ask_panel.quote_clicked.connect(self._on_ask_panel_quote_clicked)
        self.ask_panel.server_start_requested.connect(self.server.start_server)
        self.ask_panel.settings_requested.connect(self.show_settings)
        self.ask_panel.answer_finished.connect(self._on_ask_panel_answer_finished)

        self.first_run.open_requested.connect(self.open_files)
        self.first_run.open_folder_requested.connect(self.open_folder)
        self.first_run.start_server_requested.connect(self.server.start_server)
        self.first_run.settings_changed.connect(self.apply_settings)
        self._show_first_run(True)

        self.menus = WindowMenus(self)
        self.open_action = self.menus.open_action
        self.ask_action = self.menus.ask_action
        self.stop_action = self.menus.stop_action
        self.new_thread_action = self.menus.new_thread_action
        self.layout_state.restore_geometry()
        bus = messages.bus()
        bus.message_posted.connect(self.message_line.post)
        for message in bus.attach():
            self.message_line.post(message)
        self.library.refresh()
        self.monitor.start()
        tasks.run_call(
            session.recent_answers,
            receiver=self,
            success=session.learn,
            failure=lambda exc: log.info("no prefill rates learnt: %s", exc),
            name="learn rates",
        )

    # --- menus (desktop/ui/window_menus.py) ----------------------------------------------

    def show_shortcuts(self) -> ShortcutsDialog:
        """Help ▸ Keyboard shortcuts: every shortcut, read from the menus' actions."""
        return self.menus.show_shortcuts()

    @property
    def shortcuts_dialog(self) -> ShortcutsDialog | None:
        """The shortcuts dialog last shown (tests)."""
        return self.menus.shortcuts_dialog

    # --- messages (desktop/ui/message_line.py) ------------------------------------------

    @property
    def message_label(self) -> QLabel:
        """The status bar's last message."""
        return self.message_line.label

    @property
    def messages_button(self) -> QToolButton:
        """Opens the message history; counts the warnings and errors not seen yet."""
        return self.message_line.button

    @property
    def message_log(self) -> list[tuple[float, messages.Message]]:
        """Every message of this session, oldest first (at most 500)."""
        return self.message_line.log

    @property
    def messages_dialog(self) -> MessagesDialog | None:
        """The message history, once opened."""
        return self.message_line.dialog

    @messages_dialog.setter
    def messages_dialog(self, dialog: MessagesDialog | None) -> None:
        self.message_line.dialog = dialog

    def show_messages(self) -> MessagesDialog:
        """The message history: every note, warning and error of this session."""
        return self.message_line.show_history()

    # --- documents ------------------------------------------------------------------------

    def add_paths(self, paths: list[Path]) -> None:
        """Add files and folders (command line, Open dialog, drop)."""
        self.library.add_paths(paths)

    @Slot(list)
    def receive_paths(self, paths: list[Path]) -> None:
        """Another start of Longdoc sent its files: add them and come to the front."""
        if paths:
            self.add_paths(paths)
        if self.isMinimized():
            self.showNormal()
        self.show()
        self.raise_()
        self.activateWindow()

    def open_files(self) -> None:
        """The Open dialog."""
        patterns = " ".join(f"*{s}" for s in sorted(SUPPORTED_SUFFIXES))
        files, _ = QFileDialog.getOpenFileNames(
            self, "Add documents", "", f"Documents ({patterns});;All files (*)"
        )
        self.add_paths([Path(f) for f in files])

    def open_folder(self) -> None:
        """Add every document in a folder."""
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of documents")
        if folder:
            self.add_paths([Path(folder)])

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.add_paths(paths)

    @Slot(str)
    def _on_library_document_selected(self, sha: str) -> None:
        if self.document is not None and self.document.sha256 == sha:
            return
        store = self.session.store

        def loaded(doc: Document | None) -> None:
            if doc is None:
                messages.warning("That document is no longer in the library.")
                self.library.refresh()
                return
            if self.library.selected_sha() == sha:
                self.show_document(doc)

        tasks.run_call(lambda: store.load_document(sha), receiver=self, success=loaded, name="load")

    @Slot(object)
    def _on_library_document_opened(self, doc: Document) -> None:
        self.show_document(doc)
        self.library.select(doc.sha256)

    def show_document(self, doc: Document) -> None:
        """Show a document and ask about it."""
        self._show_first_run(False)
        self.document = doc
        self.library_link.shown()
        self.setWindowTitle(f"{doc.title} — Longdoc")
        self.doc_view.show_document(doc)
        self.ask_panel.set_document(doc)
        self.ask_panel.question_edit.setFocus()

    def close_document(self) -> None:
        """No document open any more (it left the library): the viewer empty, the ask
        panel with nothing to ask about (an answer running is stopped)."""
        if self.ask_panel.busy:
            self.ask_panel.stop()
        self.document = None
        self.setWindowTitle("Longdoc")
        self.doc_view.clear()
        self.ask_panel.set_document(None)

    @Slot(object, object)
    def _on_ask_panel_citation_clicked(self, label: str | None, number: int | None) -> None:
        if not self.doc_view.go_to_citation(label, number):
            cited = label if label is not None else f"#{number}"
            messages.warning(f"The answer cites page {cited}, which this document does not have.")

    @Slot(str, int)
    def _on_ask_panel_quote_clicked(self, quote: str, number: int) -> None:
        self.doc_view.show_quote(number, quote)

    @Slot(object)
    def _on_ask_panel_answer_finished(self, _result: object) -> None:
        self.monitor.poll()

    # --- server (desktop/ui/window_server.py) and batch ----------------------------------

    def show_batch_window(self) -> BatchWindow:
        """Tools ▸ Batch: summaries or a review grid over folders."""
        if self.batch_window is None:
            self.batch_window = BatchWindow(self.session, self)
            self.batch_window.citation_opened.connect(self._on_batch_window_citation_opened)
            # Its documents go through this process's own connection: data_version does
            # not see them, so the library is told.
            self.batch_window.documents_stored.connect(self.library.follower.local_change)
        self.batch_window.show()
        self.batch_window.raise_()
        return self.batch_window

    @Slot(str, str)
    def _on_batch_window_citation_opened(self, path: str, label: str) -> None:
        """Open a batch answer's cited page: the document in the viewer, at that page."""
        store = self.session.store
        wanted = Path(path)

        def opened(doc: Document) -> None:
            self.show_document(doc)
            self.library.select(doc.sha256)
            if not self.doc_view.go_to_citation(label, None):
                messages.warning(f"The answer cites page {label}, which this document lacks.")
            self.raise_()
            self.activateWindow()

        tasks.run_call(
            lambda: open_document(wanted, store)[0],
            receiver=self,
            success=opened,
            name="open cited document",
        )

    @property
    def server_panel(self) -> ServerPanel | None:
        """The server panel, once opened."""
        return self.server.panel

    @server_panel.setter
    def server_panel(self, panel: ServerPanel | None) -> None:
        self.server.panel = panel  # None: the next show_server_panel makes a new one

    def show_server_panel(self) -> ServerPanel:
        """The server panel (non-modal)."""
        return self.server.show_panel()

    def show_doctor(self) -> DoctorDialog:
        """Help ▸ Check this workstation: the ``longdoc doctor`` checklist."""
        return self.server.show_doctor()

    # --- settings -------------------------------------------------------------------------

    def show_settings(self) -> SettingsDialog:
        """The settings dialog (edits the file's values, not environment overrides)."""
        try:
            file_settings = load_settings(env=False)
        except ConfigError as exc:
            messages.error(exc)
            file_settings = Settings()
        dialog = SettingsDialog(
            file_settings, self, effective=self.session.settings, sources=setting_sources()
        )
        dialog.settings_saved.connect(self._on_settings_dialog_saved)
        dialog.open()
        return dialog

    @Slot(object)
    def _on_settings_dialog_saved(self, _saved: Settings) -> None:
        try:
            settings = load_settings()  # the environment's overrides apply again
        except ConfigError as exc:
            messages.error(exc, self, serious=True)
            return
        self.apply_settings(settings)
        messages.info("Settings saved.")

    @Slot(object)
    def apply_settings(self, settings: Settings) -> None:
        """New settings (saved, or made in the first-run view): every part follows."""
        self.session.update_settings(settings)
        self.first_run.set_settings(settings)
        self.monitor.set_settings(settings)
        self.server.forget_state()
        self.ask_panel.think_box.setChecked(settings.thinking)
        self.ask_panel.refresh_budget()

    _apply_settings = apply_settings  # its name before the server panel used it

    # --- geometry (desktop/ui/window_layout.py) -----------------------------------------

    def _show_first_run(self, shown: bool) -> None:
        self.layout_state.show_first_run(shown)

    def showEvent(self, event: QShowEvent) -> None:
        """Restore the splitters once the window has its size."""
        super().showEvent(event)
        self.layout_state.window_shown()

    def save_layout(self) -> None:
        """Remember geometry and splitters."""
        self.layout_state.save()

    # --- quitting -------------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop a running answer (stored as incomplete); stop the server only if asked to."""
        self.save_layout()
        self.library.follower.stop()  # no more checks of a store about to close
        if self.ask_panel.busy:
            messages.info("Stopping the answer…")
        self.ask_panel.shutdown()
        self.monitor.stop()
        if self.batch_window is not None:
            self.batch_window.shutdown()
        self.server.close()
        messages.offer_doctor(None)
        messages.bus().detach()
        with contextlib.suppress(RuntimeError, TypeError):  # already disconnected
            messages.bus().message_posted.disconnect(self.message_line.post)
        tasks.wait_all(5_000)
        self.session.close()
        event.accept()
