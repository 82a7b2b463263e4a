"""Start the desktop application: ``longdoc``, ``longdoc gui [FILE...]``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from desktop.config import Settings, data_dir, db_path, load_settings
from desktop.documents import tokens
from desktop.errors import ConfigError, LongdocError
from desktop.session import Store
from desktop.ui.main_window import MainWindow
from desktop.ui.session import Session
from desktop.ui.single_instance import (
    ALREADY_OPEN,
    ALREADY_OPEN_NO_FILES,
    InstanceGuard,
    send_to_running,
    server_name,
)

SWITCH_INTERVAL_S = 0.001


def application() -> QApplication:
    """The QApplication (created once)."""
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    # Workers (the HTTP stream's parsing) hold the GIL between Python's forced switches,
    # 5 ms by default; every Qt call that releases the GIL then waits up to that long to
    # get it back. 1 ms keeps the UI thread's latency low (see bench/bench_ui_stream.py).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app = QApplication(sys.argv[:1])
    app.setApplicationName("Longdoc")
    app.setApplicationDisplayName("Longdoc")
    app.setOrganizationName("Longdoc")
    app.setDesktopFileName("longdoc")
    app.setWindowIcon(app_icon())
    return app


def icons_dir() -> Path:
    """The checkout's ``resources/icons/hicolor``, or the copy installed under the prefix."""
    source = Path(__file__).resolve().parents[2] / "resources" / "icons" / "hicolor"
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "icons" / "hicolor"


def app_icon() -> QIcon:
    """Longdoc's icon: the drawn PNG sizes (crisper than scaling) and the SVG for the rest."""
    icon = QIcon()
    folder = icons_dir()
    for png in sorted(folder.glob("*/apps/longdoc.png")):
        icon.addFile(str(png))
    svg = folder / "scalable" / "apps" / "longdoc.svg"
    if svg.is_file():
        icon.addFile(str(svg))
    return icon


def create_window(settings: Settings, store: Store, poll_ms: int = 2_000) -> MainWindow:
    """A main window over a session (used by ``run``, the tests and the screenshots)."""
    # Loading the tokenizer's vocabulary and building its encoder holds the GIL for
    # 0.1-0.4 s: done here, before the window shows, or the first counts (the budget, a
    # file read) would stall the UI thread from a worker. Once per process.
    tokens.encoding()
    return MainWindow(Session(settings, store), poll_ms=poll_ms)


def run(paths: list[Path]) -> int:
    """Open the window (adding ``paths``) and run until it closes; the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = application()
    try:
        return _run(app, paths)
    except LongdocError as exc:  # no usable data directory or database: say so, not a trace
        QMessageBox.critical(None, "Longdoc", str(exc))
        return exc.exit_code


def _run(app: QApplication, paths: list[Path]) -> int:
    """``run`` once the QApplication exists; a LongdocError is the caller's to show."""
    # One window per data directory: a second start hands its files to the first.
    name = server_name(data_dir())
    if send_to_running(name, paths):
        print(ALREADY_OPEN if paths else ALREADY_OPEN_NO_FILES, file=sys.stderr)
        return 0
    guard = InstanceGuard(name)
    if not guard.listen():  # another start won the race: hand the files over after all
        if send_to_running(name, paths):
            print(ALREADY_OPEN if paths else ALREADY_OPEN_NO_FILES, file=sys.stderr)
            return 0
        print("Longdoc is already open but does not answer; try again.", file=sys.stderr)
        return 1
    try:
        settings = load_settings()
    except ConfigError as exc:
        QMessageBox.warning(None, "Longdoc", f"{exc}\n\nLongdoc starts with default settings.")
        settings = Settings()
    store = Store(db_path())
    window = create_window(settings, store)  # builds the tokenizer first
    guard.files_received.connect(window.receive_paths)
    window.show()
    if paths:
        window.add_paths(paths)
    try:
        return app.exec()
    finally:
        guard.close()
        store.close()
