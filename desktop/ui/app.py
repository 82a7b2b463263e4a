"""Start the desktop application: ``longdoc``, ``longdoc gui [FILE...]``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication, QMessageBox

from desktop.config import Settings, db_path, load_settings
from desktop.documents import tokens
from desktop.errors import ConfigError, LongdocError
from desktop.store.db import Store
from desktop.ui.main_window import MainWindow
from desktop.ui.session import Session

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
    return app


def create_window(settings: Settings, store: Store, poll_ms: int = 2_000) -> MainWindow:
    """A main window over a session (used by ``run``, the tests and the screenshots)."""
    return MainWindow(Session(settings, store), poll_ms=poll_ms)


def run(paths: list[Path]) -> int:
    """Open the window (adding ``paths``) and run until it closes; the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = application()
    try:
        settings = load_settings()
    except ConfigError as exc:
        QMessageBox.warning(None, "Longdoc", f"{exc}\n\nLongdoc starts with default settings.")
        settings = Settings()
    try:
        store = Store(db_path())
    except LongdocError as exc:
        QMessageBox.critical(None, "Longdoc", str(exc))
        return exc.exit_code
    # Loading the tokenizer's vocabulary holds the GIL for ~0.3 s: do it before the window
    # shows, or the first budget count would stall the UI thread from a worker.
    tokens.encoding()
    window = create_window(settings, store)
    window.show()
    if paths:
        window.add_paths(paths)
    try:
        return app.exec()
    finally:
        store.close()
