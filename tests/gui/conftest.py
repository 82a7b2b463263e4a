"""GUI test fixtures: offscreen Qt, a private LONGDOC_HOME, FakeSGLang on loopback."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QWidget

import desktop.ui  # noqa: F401  (applies the PySide6 6.12.0 workaround before Qt runs)
from desktop.config import Settings, save_settings
from desktop.store.db import Store, StoredAnswer
from desktop.ui import messages
from desktop.ui.app import create_window
from desktop.ui.main_window import MainWindow
from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.sglang_server import FakeSGLang

FOUR_PAGES = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
GEOTOPO = CORPUS_DIR / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
ENCRYPTED = CORPUS_DIR / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"

# The offscreen platform says these for shown and raised windows; not our bugs (a regex).
_OFFSCREEN_NOISE = r"This plugin does not support (propagateSizeHints|raise)\(\)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Ignore the offscreen platform's own warning (qt_log_level_fail = WARNING)."""
    for item in items:
        item.add_marker(pytest.mark.qt_log_ignore(_OFFSCREEN_NOISE))


@pytest.fixture(scope="session", autouse=True)
def _warm_tokenizers() -> None:
    """Load both vocabularies once: loading holds the GIL ~0.3 s, which would show as a UI
    stall in whichever test streams first (the fake server runs in this process)."""
    from desktop.documents import tokens
    from tests.support.sglang_server import qwen_encoding

    tokens.encoding()
    qwen_encoding()


@pytest.fixture(autouse=True)
def _fresh_bus() -> Iterator[None]:
    messages.reset_bus()
    yield
    messages.reset_bus()


@pytest.fixture
def settings(home: Path, sglang: FakeSGLang) -> Settings:
    """Settings pointing at the fake server (external-endpoint mode), saved to the home."""
    result = Settings(endpoint=sglang.url, api_key=API_KEY, thinking=True)
    save_settings(result)
    return result


@pytest.fixture
def make_window(qtbot: object, store: Store) -> Iterator[object]:
    """A factory for main windows over ``settings`` (closed at the end of the test)."""
    windows: list[MainWindow] = []

    def make(settings: Settings) -> MainWindow:
        window = create_window(settings, store, poll_ms=150)
        # No background warm-up requests in tests about something else (test_warm_up.py
        # turns it on): they would change what the server receives and aborts.
        window.ask_panel.warm_up_enabled = False
        qtbot.addWidget(window)  # type: ignore[attr-defined]
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.close()


@pytest.fixture
def window(make_window: object, settings: Settings) -> MainWindow:
    """The main window, talking to the fake server."""
    return make_window(settings)  # type: ignore[operator,no-any-return]


def open_document(window: MainWindow, qtbot: object, path: Path) -> None:
    """Add a file and wait until it is shown."""
    window.add_paths([path])
    qtbot.waitUntil(  # type: ignore[attr-defined]
        lambda: window.document is not None and Path(window.document.path) == path.absolute(),
        timeout=30_000,
    )


def open_as_text(window: MainWindow, qtbot: object, path: Path) -> str:
    """Add a file shown as text (not a PDF); the text view's plain text."""
    open_document(window, qtbot, path)
    assert window.doc_view.mode == "text"
    return window.doc_view.text_view.toPlainText()


def activate(window: QWidget, qtbot: object) -> None:
    """Make ``window`` the active window and wait until it is. A window shortcut (Esc to
    stop, Ctrl+N) reaches only the active window: offscreen a shown window is active at
    once, on a real display only once the X server has given it the focus."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)  # type: ignore[attr-defined]


def wait_ready(window: MainWindow, qtbot: object) -> None:
    """Wait until the indicator says the server is ready and the context length is known."""
    qtbot.waitUntil(lambda: window.indicator.state == "ready", timeout=10_000)  # type: ignore[attr-defined]
    qtbot.waitUntil(  # type: ignore[attr-defined]
        lambda: window.ask_panel.budget_bar.view is not None, timeout=20_000
    )


def ask(window: MainWindow, qtbot: object, question: str, timeout: int = 30_000) -> object:
    """Type a question, press Enter, wait for the answer to end; what it ended with."""
    panel = window.ask_panel
    panel.question_edit.setPlainText(question)
    with qtbot.waitSignal(panel.answer_finished, timeout=timeout) as blocker:  # type: ignore[attr-defined]
        assert panel.ask()
    return blocker.args[0]


def refused(window: MainWindow, qtbot: object, question: str) -> tuple[str, str]:
    """Ask a question that gets no answer: the notice shown instead and its button's text."""
    result = ask(window, qtbot, question)
    assert not isinstance(result, StoredAnswer), result
    view = window.ask_panel.answer_view
    assert view.notice_button.isVisible()
    return view.notice_label.text(), view.notice_button.text()


def current_result_page(window: MainWindow) -> int | None:
    """The 1-based page of the view's current (highlighted) search result, if any."""
    from PySide6.QtCore import QModelIndex

    view = window.doc_view
    index = view.pdf_view.currentSearchResultIndex()
    if not 0 <= index < view.search.rowCount(QModelIndex()):
        return None
    return view.search.resultAtIndex(index).page() + 1
