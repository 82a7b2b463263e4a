"""The main window's menus, their actions and shortcuts, and the dialogs read from them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMessageBox

from desktop.ui.help import ABOUT, ShortcutsDialog

if TYPE_CHECKING:
    from desktop.ui.main_window import MainWindow

Shortcut = QKeySequence | QKeySequence.StandardKey | str | None


class WindowMenus:
    """File, Ask, View, Server, Tools and Help: every action is also a window shortcut."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.shortcuts_dialog: ShortcutsDialog | None = None
        w = window
        ask, doc = w.ask_panel, w.doc_view
        menu = w.menuBar()
        file_menu = menu.addMenu("&File")
        open_keys = QKeySequence.StandardKey.Open
        self.open_action = self._add(file_menu, "&Open…", open_keys, w.open_files)
        self._add(file_menu, "Add &folder…", "Ctrl+Shift+O", w.open_folder)
        file_menu.addSeparator()
        self._add(file_menu, "E&xport this answer…", "Ctrl+E", lambda: ask.export(False))
        self._add(file_menu, "&Export all questions…", "Ctrl+Shift+E", lambda: ask.export(True))
        file_menu.addSeparator()
        self._add(file_menu, "&Compare two versions…", "Ctrl+Shift+D", w.several.compare_files)
        self._add(file_menu, "&Settings…", "Ctrl+,", w.show_settings)
        file_menu.addSeparator()
        self._add(file_menu, "&Quit", QKeySequence.StandardKey.Quit, w.close)

        ask_menu = menu.addMenu("&Ask")
        self.ask_action = self._add(ask_menu, "&Ask", "Ctrl+Return", lambda: ask.ask())
        self.stop_action = self._add(ask_menu, "&Stop", "Esc", ask.stop)
        self.new_thread_action = self._add(ask_menu, "&New thread", "Ctrl+N", ask.new_thread)
        self._add(ask_menu, "&Copy answer", "Ctrl+Shift+C", ask.copy_answer)
        self._add(ask_menu, "Ask a&gain", "Ctrl+R", self._ask_again)
        self._add(ask_menu, "&Question box", "Ctrl+L", ask.question_edit.setFocus)
        self._add(ask_menu, "Show &reasoning", "Ctrl+T", ask.answer_view.toggle_reasoning)

        view_menu = menu.addMenu("&View")
        self._add(view_menu, "&Find…", QKeySequence.StandardKey.Find, doc.focus_find)
        self._add(view_menu, "Find &next", QKeySequence.StandardKey.FindNext, doc.find_next)
        view_menu.addSeparator()
        self._add(view_menu, "Ne&xt page", "Ctrl+PgDown", doc.next_page)
        self._add(view_menu, "&Previous page", "Ctrl+PgUp", doc.previous_page)
        self._add(view_menu, "&Go to page…", "Ctrl+G", self._go_to_page)
        view_menu.addSeparator()
        self._add(view_menu, "Zoom &in", QKeySequence.StandardKey.ZoomIn, doc.zoom_in)
        self._add(view_menu, "Zoom &out", QKeySequence.StandardKey.ZoomOut, doc.zoom_out)
        self._add(view_menu, "Fit &width", "Ctrl+0", doc.fit_width)
        view_menu.addSeparator()
        self._add(view_menu, "&Messages…", "Ctrl+Shift+M", w.show_messages)

        server_menu = menu.addMenu("&Server")
        self._add(server_menu, "Server &panel…", "Ctrl+Shift+S", w.show_server_panel)

        tools_menu = menu.addMenu("&Tools")
        self._add(tools_menu, "&Batch…", "Ctrl+B", w.show_batch_window)
        help_menu = menu.addMenu("&Help")
        keys = QKeySequence.StandardKey.HelpContents
        self._add(help_menu, "&Keyboard shortcuts", keys, w.show_shortcuts)
        self._add(help_menu, "&Check this workstation…", None, w.show_doctor)
        self._add(help_menu, "&About Longdoc", None, self.show_about)

    def _add(
        self, menu: QMenu, text: str, shortcut: Shortcut, slot: Callable[[], object]
    ) -> QAction:
        """An action in ``menu`` whose shortcut works anywhere in the window."""
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(slot)
        self.window.addAction(action)
        menu.addAction(action)
        return action

    def show_shortcuts(self) -> ShortcutsDialog:
        """Help ▸ Keyboard shortcuts: every shortcut, read from the menus' actions."""
        menus = [
            (m.title().replace("&", ""), m.actions())
            for m in self.window.menuBar().findChildren(QMenu)
            if m.title()
        ]
        self.shortcuts_dialog = ShortcutsDialog(menus, self.window)
        self.shortcuts_dialog.show()
        return self.shortcuts_dialog

    def show_about(self) -> None:
        """Help ▸ About Longdoc."""
        box = QMessageBox(QMessageBox.Icon.NoIcon, "About Longdoc", ABOUT, parent=self.window)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setIconPixmap(self.window.windowIcon().pixmap(64, 64))
        box.open()

    def _ask_again(self) -> None:
        button = self.window.ask_panel.answer_view.ask_again_button
        if button.isVisible() and button.isEnabled():
            button.click()

    def _go_to_page(self) -> None:
        edit = self.window.doc_view.page_edit
        edit.setFocus()
        edit.selectAll()
