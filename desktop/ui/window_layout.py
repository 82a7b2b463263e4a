"""The main window's panes: library | document | ask panel, or the first-run view in the
place of the last two; their widths, and the geometry kept between sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings, QTimer
from PySide6.QtWidgets import QSplitter

from desktop.config import data_dir

if TYPE_CHECKING:
    from desktop.ui.main_window import MainWindow

LIBRARY_SHARE = 0.55  # the library at its widest: the first-run view keeps 40% of the window
SQUEEZED = 0.2  # what is right of the library had less of the width: a layout not to keep
DEFAULT_SIZE = (1400, 860)
# Library, document, ask panel: at 1,400 px the library's titles read ~210 px beside its
# three number columns (at 280 px they were cut to "Geo…").
DEFAULT_PANES = [400, 520, 480]


def ui_settings() -> QSettings:
    """Window geometry and splitters, kept beside the rest of Longdoc's state."""
    return QSettings(str(data_dir() / "ui.ini"), QSettings.Format.IniFormat)


class PaneLayout:
    """Which panes show, how wide, and what is saved of them."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.splitter = window.splitter
        self.pane_sizes: list[int] = []  # library, document, ask panel: while hidden
        self._restored = False

    def show_first_run(self, shown: bool) -> None:
        """The first-run view in the place of the document and ask panes (no document);
        the panes get their widths back when a document opens."""
        w = self.window
        sizes = self.splitter.sizes()
        if shown and (sizes[1] or sizes[2]):
            self.pane_sizes = sizes[:3]
        w.first_run.setVisible(shown)
        w.doc_view.setVisible(not shown)
        w.ask_panel.setVisible(not shown)
        total = sum(sizes) or self.splitter.width()
        # The library keeps its width beside the first-run view if that has one (the user's
        # choice, or the saved layout), else the width it had beside the panes.
        library = (
            sizes[0] if sizes[3] else (self.pane_sizes[0] if self.pane_sizes else DEFAULT_PANES[0])
        )
        # Never most of the window: sizes given to hidden panes fall to the library (a
        # fresh start gave it 1,330 px and the first-run card 30).
        library = max(150, min(library, int(total * LIBRARY_SHARE)))
        if shown:
            self.splitter.setSizes([library, 0, 0, max(total - library, 1)])
        elif self.pane_sizes:
            self.splitter.setSizes([*self.pane_sizes, 0])

    def restore_geometry(self) -> None:
        """The window's saved size and place, else the default size."""
        geometry = ui_settings().value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.window.restoreGeometry(geometry)
        else:
            self.window.resize(*DEFAULT_SIZE)

    def window_shown(self) -> None:
        """Restore the splitters once the window has its size (before that, Qt squeezes
        the saved sizes into the unlaid-out splitter and the proportions are lost)."""
        if not self._restored:
            self._restored = True
            # After the platform has settled the window's size (next event-loop turn).
            QTimer.singleShot(0, self.window, self._restore_splitters)

    def _restore_splitters(self) -> None:
        store = ui_settings()
        document = self.window.document
        for name, splitter in self._splitters().items():
            state = store.value(f"splitters/{name}")
            if isinstance(state, QByteArray) and not state.isEmpty():
                splitter.restoreState(state)
            elif name == "main" and document is None:
                # Not through the hidden panes: what they are given falls to the library.
                library = DEFAULT_PANES[0]
                splitter.setSizes([library, 0, 0, max(splitter.width() - library, 1)])
            elif name == "main":
                splitter.setSizes([*DEFAULT_PANES, 0])
        # The saved state also says which panes were shown: the open document decides.
        restored = self.splitter.sizes()[:3]
        self.pane_sizes = restored if restored[1] and restored[2] else list(DEFAULT_PANES)
        self.show_first_run(document is None)

    def _splitters(self) -> dict[str, QSplitter]:
        return {"main": self.splitter, "ask": self.window.ask_panel.splitter}

    def save(self) -> None:
        """Remember geometry and splitters."""
        store = ui_settings()
        store.setValue("window/geometry", self.window.saveGeometry())
        for name, splitter in self._splitters().items():
            sizes = splitter.sizes()
            if name == "main" and sum(sizes[1:]) < SQUEEZED * max(sum(sizes), 1):
                continue  # a squeezed layout is not kept to come back next time
            store.setValue(f"splitters/{name}", splitter.saveState())
        store.sync()
