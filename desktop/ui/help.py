"""Help: the keyboard shortcuts, read from the window's own actions, and About."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

# Keys that work without a menu action (the question box's own).
EXTRA_KEYS = (
    ("Question box", "Enter", "Ask"),
    ("Question box", "Shift+Enter", "New line in the question"),
    ("Answer", "Click a [p. 12] citation", "Show that page"),
)

ABOUT = (
    "Longdoc asks questions about whole long documents — contracts, manuals, transcripts, "
    "up to 256K tokens — with Qwen3.5 served by SGLang on your own GPUs. The complete text "
    "goes into one prompt; answers cite pages and every quote is checked against the "
    "document. Documents and answers stay on this computer."
)


def shortcut_rows(menus: Sequence[tuple[str, Sequence[QAction]]]) -> list[tuple[str, str, str]]:
    """(menu, keys, what) for every action that has a shortcut, then the extra keys."""
    rows: list[tuple[str, str, str]] = []
    for menu, actions in menus:
        for action in actions:
            keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            if keys and not action.isSeparator():
                rows.append((menu, keys, action.text().replace("&", "").rstrip("…")))
    rows.extend(EXTRA_KEYS)
    return rows


def lay_out_closable(
    dialog: QDialog, body: QWidget, close: Callable[[], object], size: tuple[int, int]
) -> None:
    """Lay a read-only dialog out: ``body`` above a Close button that calls ``close``."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(close)
    layout = QVBoxLayout(dialog)
    layout.addWidget(body)
    layout.addWidget(buttons)
    dialog.resize(*size)


class ShortcutsDialog(QDialog):
    """Every keyboard shortcut, by menu (Help ▸ Keyboard shortcuts, F1)."""

    def __init__(
        self, menus: Sequence[tuple[str, Sequence[QAction]]], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts — Longdoc")
        self.setObjectName("shortcutsDialog")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Where", "Keys", "Does"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        for row in shortcut_rows(menus):
            QTreeWidgetItem(self.tree, list(row))
        for column in range(3):
            self.tree.resizeColumnToContents(column)
        lay_out_closable(self, self.tree, self.reject, (520, 520))
