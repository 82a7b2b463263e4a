"""The main window: library | document | ask panel, menus, shortcuts, status bar."""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Slot
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QKeySequence,
    QPalette,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.budget import ContextLimits
from desktop.answers import StoredAnswer
from desktop.config import Settings, data_dir, load_settings, setting_sources
from desktop.documents import SUPPORTED_SUFFIXES
from desktop.documents.model import Document
from desktop.errors import ConfigError
from desktop.library import open_document
from desktop.search import Hit
from desktop.ui import messages, tasks
from desktop.ui.ask_panel import AskPanel
from desktop.ui.batch_window import BatchWindow
from desktop.ui.doctor_dialog import DoctorDialog
from desktop.ui.document_view import DocumentView
from desktop.ui.first_run import FirstRunView
from desktop.ui.help import ABOUT, ShortcutsDialog
from desktop.ui.library_panel import LibraryPanel
from desktop.ui.search_results import first_match
from desktop.ui.server_panel import ServerIndicator, ServerMonitor, ServerPanel
from desktop.ui.session import Session
from desktop.ui.settings_dialog import SettingsDialog
from desktop.ui.several_documents import SeveralDocuments
from server_manager import ServerManager, ServerStatus

log = logging.getLogger("longdoc.ui")

INFO_TIMEOUT_MS = 6_000
LIBRARY_SHARE = 0.55  # the library at its widest: the first-run view keeps 40% of the window
SQUEEZED = 0.2  # what is right of the library had less of the width: a layout not to keep
MESSAGE_LOG_SIZE = 500


def ui_settings() -> QSettings:
    """Window geometry and splitters, kept beside the rest of Longdoc's state."""
    return QSettings(str(data_dir() / "ui.ini"), QSettings.Format.IniFormat)


class MessagesDialog(QDialog):
    """The message history, newest last, as plain text (never interpreted as markup)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Longdoc messages")
        self.setObjectName("messagesDialog")
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setObjectName("messageLog")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)
        layout.addWidget(buttons)
        self.resize(640, 360)

    def show_log(self, log: list[tuple[float, messages.Message]]) -> None:
        """Show these messages."""
        lines = [
            f"{datetime.fromtimestamp(at).strftime('%H:%M:%S')}  "
            f"{message.level.value.upper():7}  {message.text}"
            for at, message in log
        ]
        self.view.setPlainText("\n".join(lines) if lines else "No messages yet.")
        bar = self.view.verticalScrollBar()
        bar.setValue(bar.maximum())

    def text(self) -> str:
        """What the history shows (tests)."""
        return self.view.toPlainText()


class MainWindow(QMainWindow):
    """Longdoc's window."""

    def __init__(self, session: Session, poll_ms: int = 2_000) -> None:
        super().__init__()
        self.session = session
        self.setWindowTitle("Longdoc")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        self.document: Document | None = None
        self._server_state: str | None = None
        self._context_task: tasks.Task[ContextLimits] | None = None
        self.server_panel: ServerPanel | None = None
        self.batch_window: BatchWindow | None = None
        # Error dialogs about the server, runtime, GPUs or disk offer the checklist.
        messages.offer_doctor(self.show_doctor)
        self._splitters_restored = False

        self.library = LibraryPanel(session.store)
        self.doc_view = DocumentView()
        self.ask_panel = AskPanel(session)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.first_run = FirstRunView(session.settings)
        self._pane_sizes: list[int] = []
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

        self.message_label = QLabel()
        self.message_label.setTextFormat(Qt.TextFormat.PlainText)
        self.message_label.setObjectName("messageLabel")
        self.statusBar().addWidget(self.message_label, 1)
        self.indicator = ServerIndicator()
        self.statusBar().addPermanentWidget(self.indicator)
        # Every message stays readable here (the status line shows only the last one).
        self.message_log: list[tuple[float, messages.Message]] = []
        self._unseen = 0  # warnings and errors since the history was last opened
        self.messages_button = QToolButton()
        self.messages_button.setObjectName("messagesButton")
        self.messages_button.setAutoRaise(True)
        self.messages_button.setToolTip("Message history (Ctrl+Shift+M)")
        self.messages_button.clicked.connect(self.show_messages)
        self.statusBar().addPermanentWidget(self.messages_button)
        self.messages_dialog: MessagesDialog | None = None
        self._update_messages_button()
        self._message_timer = QTimer(self)
        self._message_timer.setSingleShot(True)
        self._message_timer.timeout.connect(self.message_label.clear)

        self.monitor = ServerMonitor(session.settings, poll_ms)
        self.monitor.status_changed.connect(self._on_monitor_status_changed)
        self.indicator.clicked.connect(self.show_server_panel)

        self.library.add_button.clicked.connect(self.open_files)
        self.library.document_selected.connect(self._on_library_document_selected)
        self.library.document_opened.connect(self._on_library_document_opened)
        self.library.search_results.hit_activated.connect(self._on_search_hit_activated)
        # Several documents: "Ask about these N documents" and Compare (their own windows).
        self.several = SeveralDocuments(self)
        self.library.set_ask_requested.connect(self.several.ask_about)
        self.library.compare_requested.connect(self.several.compare_stored)
        self.ask_panel.citation_clicked.connect(self._on_ask_panel_citation_clicked)
        self.ask_panel.quote_clicked.connect(self._on_ask_panel_quote_clicked)
        self.ask_panel.server_start_requested.connect(self._on_ask_panel_server_start_requested)
        self.ask_panel.settings_requested.connect(self.show_settings)
        self.ask_panel.answer_finished.connect(self._on_ask_panel_answer_finished)

        self.first_run.open_requested.connect(self.open_files)
        self.first_run.open_folder_requested.connect(self.open_folder)
        self.first_run.start_server_requested.connect(self._on_ask_panel_server_start_requested)
        self.first_run.settings_changed.connect(self._apply_settings)
        self._show_first_run(True)

        self._make_actions()
        self._restore()
        bus = messages.bus()
        bus.message_posted.connect(self._on_bus_message_posted)
        for message in bus.attach():
            self._on_bus_message_posted(message)
        self.library.refresh()
        self.monitor.start()
        tasks.run_call(
            session.recent_answers,
            receiver=self,
            success=session.learn,
            failure=lambda exc: log.info("no prefill rates learnt: %s", exc),
            name="learn rates",
        )

    # --- actions and shortcuts ---------------------------------------------------------

    def _action(
        self,
        text: str,
        shortcut: QKeySequence | QKeySequence.StandardKey | str | None,
        slot: object,
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _make_actions(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self.open_action = self._action("&Open…", QKeySequence.StandardKey.Open, self.open_files)
        file_menu.addAction(self.open_action)
        file_menu.addAction(self._action("Add &folder…", "Ctrl+Shift+O", self.open_folder))
        file_menu.addSeparator()
        file_menu.addAction(
            self._action("E&xport this answer…", "Ctrl+E", lambda: self.ask_panel.export(False))
        )
        file_menu.addAction(
            self._action(
                "&Export all questions…", "Ctrl+Shift+E", lambda: self.ask_panel.export(True)
            )
        )
        file_menu.addSeparator()
        file_menu.addAction(
            self._action("&Compare two versions…", "Ctrl+Shift+D", self.several.compare_files)
        )
        file_menu.addAction(self._action("&Settings…", "Ctrl+,", self.show_settings))
        file_menu.addSeparator()
        file_menu.addAction(self._action("&Quit", QKeySequence.StandardKey.Quit, self.close))

        ask_menu = menu.addMenu("&Ask")
        self.ask_action = self._action("&Ask", "Ctrl+Return", self._on_ask_action_triggered)
        self.stop_action = self._action("&Stop", "Esc", self.ask_panel.stop)
        ask_menu.addAction(self.ask_action)
        ask_menu.addAction(self.stop_action)
        self.new_thread_action = self._action("&New thread", "Ctrl+N", self.ask_panel.new_thread)
        ask_menu.addAction(self.new_thread_action)
        ask_menu.addAction(self._action("&Copy answer", "Ctrl+Shift+C", self.ask_panel.copy_answer))
        ask_menu.addAction(self._action("Ask a&gain", "Ctrl+R", self._on_ask_again_triggered))
        ask_menu.addAction(
            self._action("&Question box", "Ctrl+L", self.ask_panel.question_edit.setFocus)
        )
        ask_menu.addAction(
            self._action("Show &reasoning", "Ctrl+T", self.ask_panel.answer_view.toggle_reasoning)
        )

        view_menu = menu.addMenu("&View")
        view_menu.addAction(
            self._action("&Find…", QKeySequence.StandardKey.Find, self.doc_view.focus_find)
        )
        view_menu.addAction(
            self._action("Find &next", QKeySequence.StandardKey.FindNext, self.doc_view.find_next)
        )
        view_menu.addSeparator()
        view_menu.addAction(self._action("Ne&xt page", "Ctrl+PgDown", self.doc_view.next_page))
        view_menu.addAction(
            self._action("&Previous page", "Ctrl+PgUp", self.doc_view.previous_page)
        )
        view_menu.addAction(self._action("&Go to page…", "Ctrl+G", self._on_go_to_page_triggered))
        view_menu.addSeparator()
        view_menu.addAction(
            self._action("Zoom &in", QKeySequence.StandardKey.ZoomIn, self.doc_view.zoom_in)
        )
        view_menu.addAction(
            self._action("Zoom &out", QKeySequence.StandardKey.ZoomOut, self.doc_view.zoom_out)
        )
        view_menu.addAction(self._action("Fit &width", "Ctrl+0", self.doc_view.fit_width))
        view_menu.addSeparator()
        view_menu.addAction(self._action("&Messages…", "Ctrl+Shift+M", self.show_messages))

        server_menu = menu.addMenu("&Server")
        server_menu.addAction(
            self._action("Server &panel…", "Ctrl+Shift+S", self.show_server_panel)
        )

        tools_menu = menu.addMenu("&Tools")
        tools_menu.addAction(self._action("&Batch…", "Ctrl+B", self.show_batch_window))
        help_menu = menu.addMenu("&Help")
        help_menu.addAction(
            self._action(
                "&Keyboard shortcuts", QKeySequence.StandardKey.HelpContents, self.show_shortcuts
            )
        )
        help_menu.addAction(self._action("&Check this workstation…", None, self.show_doctor))
        help_menu.addAction(self._action("&About Longdoc", None, self._on_about_triggered))

    def show_shortcuts(self) -> None:
        """Help ▸ Keyboard shortcuts: every shortcut, read from the menus' actions."""
        menus = [
            (m.title().replace("&", ""), m.actions())
            for m in self.menuBar().findChildren(QMenu)
            if m.title()
        ]
        self.shortcuts_dialog = ShortcutsDialog(menus, self)
        self.shortcuts_dialog.show()

    @Slot()
    def _on_about_triggered(self) -> None:
        box = QMessageBox(QMessageBox.Icon.NoIcon, "About Longdoc", ABOUT, parent=self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setIconPixmap(self.windowIcon().pixmap(64, 64))
        box.open()

    @Slot()
    def _on_ask_again_triggered(self) -> None:
        button = self.ask_panel.answer_view.ask_again_button
        if button.isVisible() and button.isEnabled():
            button.click()

    @Slot()
    def _on_ask_action_triggered(self) -> None:
        self.ask_panel.ask()

    @Slot()
    def _on_go_to_page_triggered(self) -> None:
        self.doc_view.page_edit.setFocus()
        self.doc_view.page_edit.selectAll()

    # --- messages -------------------------------------------------------------------------

    @Slot(object)
    def _on_bus_message_posted(self, message: messages.Message) -> None:
        self.message_log.append((time.time(), message))
        del self.message_log[:-MESSAGE_LOG_SIZE]
        if message.level is not messages.Level.INFO:
            self._unseen += 1
        self._update_messages_button()
        if self.messages_dialog is not None and self.messages_dialog.isVisible():
            self.messages_dialog.show_log(self.message_log)
        self.message_label.setText(message.text)
        role = (
            QPalette.ColorRole.WindowText
            if message.level is messages.Level.INFO
            else QPalette.ColorRole.Link
        )
        self.message_label.setForegroundRole(role)
        font = self.message_label.font()
        font.setBold(message.level is messages.Level.ERROR)
        self.message_label.setFont(font)
        # Errors stay until the next message; notes fade.
        if message.level is messages.Level.INFO:
            self._message_timer.start(INFO_TIMEOUT_MS)
        else:
            self._message_timer.stop()

    def _update_messages_button(self) -> None:
        unseen = self._unseen
        self.messages_button.setText(f"Messages ({unseen} new)" if unseen else "Messages")

    def show_messages(self) -> MessagesDialog:
        """The message history: every note, warning and error of this session."""
        if self.messages_dialog is None:
            self.messages_dialog = MessagesDialog(self)
        self.messages_dialog.show_log(self.message_log)
        self.messages_dialog.show()
        self.messages_dialog.raise_()
        self._unseen = 0
        self._update_messages_button()
        return self.messages_dialog

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

    @Slot(object)
    def _on_search_hit_activated(self, hit: Hit) -> None:
        """A search hit: its page with the match highlighted, or its answer and thread."""
        if hit.answer_id is not None and len(hit.documents) > 1:  # about a set: its window
            self.several.open_answer([d.sha256 for d in hit.documents], hit.answer_id)
            return
        store = self.session.store
        sha, answer_id = hit.document.sha256, hit.answer_id

        def load() -> tuple[Document | None, StoredAnswer | None]:
            answer = store.get_answer(answer_id) if answer_id is not None else None
            return store.load_document(sha), answer

        def loaded(found: tuple[Document | None, StoredAnswer | None]) -> None:
            doc, answer = found
            if doc is None:
                messages.warning("That document is no longer in the library.")
                self.library.refresh()
                return
            self.show_document(doc)
            self.library.select(doc.sha256)
            if hit.page is not None and not self.doc_view.show_quote(
                hit.page, first_match(hit.snippet)
            ):
                self.doc_view.go_to_page(hit.page)
            if answer is not None:
                self.ask_panel.open_answer(answer)

        tasks.run_call(load, receiver=self, success=loaded, name="open search hit")

    def _show_first_run(self, shown: bool) -> None:
        """The first-run view in the place of the document and ask panes (no document);
        the panes get their widths back when a document opens."""
        sizes = self.splitter.sizes()
        if shown and (sizes[1] or sizes[2]):
            self._pane_sizes = sizes[:3]
        self.first_run.setVisible(shown)
        self.doc_view.setVisible(not shown)
        self.ask_panel.setVisible(not shown)
        total = sum(sizes) or self.splitter.width()
        # The library keeps its width beside the first-run view if that has one (the user's
        # choice, or the saved layout), else the width it had beside the panes.
        library = sizes[0] if sizes[3] else (self._pane_sizes[0] if self._pane_sizes else 280)
        # Never most of the window: sizes given to hidden panes fall to the library (a
        # fresh start gave it 1,330 px and the first-run card 30).
        library = max(150, min(library, int(total * LIBRARY_SHARE)))
        if shown:
            self.splitter.setSizes([library, 0, 0, max(total - library, 1)])
        elif self._pane_sizes:
            self.splitter.setSizes([*self._pane_sizes, 0])

    def show_document(self, doc: Document) -> None:
        """Show a document and ask about it."""
        self._show_first_run(False)
        self.document = doc
        self.setWindowTitle(f"{doc.title} — Longdoc")
        self.doc_view.show_document(doc)
        self.ask_panel.set_document(doc)
        self.ask_panel.question_edit.setFocus()

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

    # --- server ---------------------------------------------------------------------------

    @Slot(object)
    def _on_monitor_status_changed(self, status: ServerStatus) -> None:
        self.indicator.set_status(status)
        self.ask_panel.set_server_state(status.state)
        self.first_run.set_server_status(status, self.monitor.external)
        became_ready = status.state in ("ready", "busy") and self._server_state not in (
            "ready",
            "busy",
        )
        self._server_state = status.state
        if became_ready:
            self._fetch_context()
        elif status.state in ("stopped", "failed"):
            self.library.set_context(None, self.session.settings.answer_reserve)

    def _fetch_context(self) -> None:
        session = self.session

        def known(limits: ContextLimits) -> None:
            settings = session.settings
            self.library.set_context(limits, settings.answer_reserve, settings.thinking)
            self.ask_panel.refresh_budget()

        self._context_task = tasks.run_call(
            session.limits,
            receiver=self,
            success=known,
            failure=lambda exc: log.info("context length unknown: %s", exc),
            name="context length",
        )

    def show_batch_window(self) -> BatchWindow:
        """Tools ▸ Batch: summaries or a review grid over folders."""
        if self.batch_window is None:
            self.batch_window = BatchWindow(self.session, self)
            self.batch_window.citation_opened.connect(self._on_batch_window_citation_opened)
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

    def show_server_panel(self) -> None:
        """The server panel (non-modal)."""
        if self.server_panel is None:
            self.server_panel = ServerPanel(self.monitor, self)
            self.server_panel.settings_changed.connect(self._apply_settings)
        self.server_panel.show()
        self.server_panel.raise_()

    def show_doctor(self) -> DoctorDialog:
        """Help ▸ Check this workstation: the ``longdoc doctor`` checklist."""
        from desktop.doctor import Context

        settings = self.session.settings
        context = Context(
            data_dir=data_dir(),
            profile_name=settings.profile,
            container_runtime=settings.container_runtime,
            endpoint=settings.endpoint,
            api_key=settings.api_key,
        )
        dialog = DoctorDialog(context, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    @Slot()
    def _on_ask_panel_server_start_requested(self) -> None:
        self.show_server_panel()
        assert self.server_panel is not None
        self.server_panel.start_server()

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
        self._apply_settings(settings)
        messages.info("Settings saved.")

    @Slot(object)
    def _apply_settings(self, settings: Settings) -> None:
        self.session.update_settings(settings)
        self.first_run.set_settings(settings)
        self.monitor.set_settings(settings)
        self._server_state = None
        self.ask_panel.think_box.setChecked(settings.thinking)
        self.ask_panel.refresh_budget()

    # --- geometry -------------------------------------------------------------------------

    def _restore(self) -> None:
        store = ui_settings()
        geometry = store.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 860)

    def showEvent(self, event: QShowEvent) -> None:
        """Restore the splitters once the window has its size (before that, Qt squeezes
        the saved sizes into the unlaid-out splitter and the proportions are lost)."""
        super().showEvent(event)
        if not self._splitters_restored:
            self._splitters_restored = True
            # After the platform has settled the window's size (next event-loop turn).
            QTimer.singleShot(0, self._restore_splitters)

    def _restore_splitters(self) -> None:
        store = ui_settings()
        for name, splitter in self._splitters().items():
            state = store.value(f"splitters/{name}")
            if isinstance(state, QByteArray) and not state.isEmpty():
                splitter.restoreState(state)
            elif name == "main" and self.document is None:
                # Not through the hidden panes: what they are given falls to the library.
                splitter.setSizes([280, 0, 0, max(splitter.width() - 280, 1)])
            elif name == "main":
                splitter.setSizes([280, 620, 500, 0])
        # The saved state also says which panes were shown: the open document decides.
        restored = self.splitter.sizes()[:3]
        self._pane_sizes = restored if restored[1] and restored[2] else [280, 620, 500]
        self._show_first_run(self.document is None)

    def _splitters(self) -> dict[str, QSplitter]:
        return {"main": self.splitter, "ask": self.ask_panel.splitter}

    def save_layout(self) -> None:
        """Remember geometry and splitters."""
        store = ui_settings()
        store.setValue("window/geometry", self.saveGeometry())
        for name, splitter in self._splitters().items():
            sizes = splitter.sizes()
            if name == "main" and sum(sizes[1:]) < SQUEEZED * max(sum(sizes), 1):
                continue  # a squeezed layout is not kept to come back next time
            store.setValue(f"splitters/{name}", splitter.saveState())
        store.sync()

    # --- quitting -------------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop a running answer (stored as incomplete); stop the server only if asked to."""
        self.save_layout()
        if self.ask_panel.busy:
            messages.info("Stopping the answer…")
        self.ask_panel.shutdown()
        self.monitor.stop()
        if self.server_panel is not None:
            self.server_panel.close()
        if self.batch_window is not None:
            self.batch_window.shutdown()
        self._maybe_stop_server()
        messages.offer_doctor(None)
        messages.bus().detach()
        with contextlib.suppress(RuntimeError, TypeError):  # already disconnected
            messages.bus().message_posted.disconnect(self._on_bus_message_posted)
        tasks.wait_all(5_000)
        self.session.close()
        event.accept()

    def _maybe_stop_server(self) -> None:
        settings = self.session.settings
        status = self.monitor.status
        if settings.endpoint or settings.keep_server_running or status is None:
            return
        if status.state not in ("starting", "ready", "busy"):
            return
        answer = QMessageBox.question(
            self,
            "Longdoc",
            "Stop the Longdoc server too? It takes a while to load again.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.Yes,
        )
        if answer == QMessageBox.StandardButton.Yes:
            manager = ServerManager(data_dir(), settings)
            tasks.run_call(manager.stop, receiver=self, name="stop server")
