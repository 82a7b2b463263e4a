"""What a new user sees first (issue 21 items 2 and 3), on a real display."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from desktop.config import data_dir
from desktop.ui.main_window import MainWindow
from tests.gui.conftest import FOUR_PAGES, ask, open_document, wait_ready


@pytest.mark.xvfb
def test_the_first_run_view_gets_the_room_the_window_gains(
    qtbot: QtBot, window: MainWindow
) -> None:
    """Regression: the window's width settled after the splitter was laid out, and the
    library took the growth (~1,330 px) while the first-run card kept ~30 px."""
    view = window.first_run
    qtbot.waitUntil(lambda: view.isVisible() and view.width() > 0)
    for size in ((900, 600), (1400, 860), (1800, 1000), (1400, 860)):
        window.resize(*size)
        qtbot.waitUntil(lambda size=size: window.width() == size[0])
        qtbot.waitUntil(lambda: view.width() >= 0.4 * window.width())


@pytest.mark.xvfb
def test_a_follow_up_shows_the_previous_answer_once_and_clears_the_box(
    qtbot: QtBot, window: MainWindow
) -> None:
    """Regression: while a follow-up waited, the previous answer stood in the thread above
    and again in the answer area; the question stayed in the box after asking."""
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel
    ask(window, qtbot, "What is this document about?")
    panel.question_edit.setPlainText("And the second page?")
    assert panel.ask()
    assert panel.question_edit.toPlainText() == ""
    assert panel.thread_view.isVisible()  # the previous answer, once: as the latest turn
    assert not panel.answer_view.previous_label.isVisible()
    assert not panel.answer_view.writer.has_text
    qtbot.waitSignal(panel.answer_finished, timeout=30_000)


def test_a_squeezed_layout_is_not_saved(
    qtbot: QtBot, make_window: object, settings: object
) -> None:
    """Regression: the sliver layout was saved and came back at the next start."""
    window: MainWindow = make_window(settings)  # type: ignore[operator]
    qtbot.waitUntil(lambda: window.first_run.isVisible())
    total = sum(window.splitter.sizes())
    window.splitter.setSizes([total - 30, 0, 0, 30])
    window.close()
    stored = QSettings(str(data_dir() / "ui.ini"), QSettings.Format.IniFormat)
    assert stored.contains("window/geometry")
    assert not stored.contains("splitters/main")


def test_a_message_listing_several_problems_is_one_line_in_the_status_bar(
    window: MainWindow,
) -> None:
    """A list (start-up problems) keeps the status bar one line high; the tooltip and the
    message history hold it whole."""
    from desktop.ui import messages

    text = "3 problems prevent the start:\n  • no GPU\n  • no model folder\n  • port busy"
    messages.warning(text)
    label = window.message_label
    assert "\n" not in label.text()
    assert label.text().startswith("3 problems prevent the start")
    assert label.toolTip() == text
    assert "port busy" in window.message_log[-1][1].text
    messages.warning("One problem.")
    assert label.text() == "One problem."
    assert label.toolTip() == ""
