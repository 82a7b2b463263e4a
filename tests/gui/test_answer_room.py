"""The answer is the centre of the right column (issue 21 items 3-5), on a real display:
its room after a follow-up, the saved-answer badge, no clipped words at the minimum size."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QCheckBox,
    QLabel,
    QPushButton,
    QStyle,
    QWidget,
)
from pytestqt.qtbot import QtBot

from desktop.answers import StoredAnswer
from desktop.errors import Remedy, StorageError
from desktop.ui.answer_footer import SAVED_BADGE_NAME
from desktop.ui.ask_panel import AskPanel
from desktop.ui.main_window import MainWindow
from tests.gui.conftest import FOUR_PAGES, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang

LONG_ANSWER_TOKENS = 900  # many more lines than any panel shows
# Where the tests leave their screenshots to be looked at (none when unset):
#   LONGDOC_SCREENSHOTS=/tmp/shots pytest tests/gui/test_answer_room.py
SHOTS = os.environ.get("LONGDOC_SCREENSHOTS")


def _settle(rounds: int = 10) -> None:
    for _ in range(rounds):
        QApplication.processEvents()


def _shoot(widget: QWidget, name: str) -> None:
    """Save what ``widget`` shows as ``name``.png under LONGDOC_SCREENSHOTS, if set."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        assert widget.grab().save(str(Path(SHOTS) / f"{name}.png"))


def _follow_up(window: MainWindow, qtbot: QtBot, sglang: FakeSGLang) -> AskPanel:
    sglang.behaviour.update(answer_tokens=LONG_ANSWER_TOKENS)
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    assert isinstance(ask(window, qtbot, "What is this document about?"), StoredAnswer)
    assert isinstance(ask(window, qtbot, "And what does the second page say?"), StoredAnswer)
    panel = window.ask_panel
    qtbot.waitUntil(lambda: "2 questions" in panel.thread_label.text())
    return panel


def _answer_room(panel: AskPanel) -> tuple[float, float]:
    """The current answer's share of the panel's height, and its lines in view."""
    browser = panel.answer_view.browser
    lines = browser.viewport().height() / browser.fontMetrics().lineSpacing()
    return browser.height() / panel.height(), lines


@pytest.mark.xvfb
@pytest.mark.parametrize("size", [None, (1400, 860)], ids=["default", "1400x860"])
def test_after_a_follow_up_the_answer_has_the_room(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang, size: tuple[int, int] | None
) -> None:
    """Regression: after a follow-up the answer had ~3 lines and its own scroll bar while
    the question list took 220-300 px, mostly empty."""
    if size is not None:
        window.resize(*size)
        qtbot.waitUntil(lambda: window.width() == size[0])
    panel = _follow_up(window, qtbot, sglang)
    _settle()
    share, lines = _answer_room(panel)
    _shoot(window, f"follow-up-{window.width()}x{window.height()}")
    assert share >= 0.45, f"the answer has {share:.0%} of the panel at {window.size()}"
    assert lines >= 15, f"{lines:.1f} lines of the answer in view at {window.size()}"
    # The earlier turn stays in view above it, once.
    assert panel.thread_view.isVisible()
    assert "What is this document about?" in panel.thread_view.toPlainText()
    assert panel.answer_view.question_label.text() == "And what does the second page say?"
    # The questions are a compact selector: one line, its list dropped down on demand.
    selector = panel.questions
    assert selector.isVisible() and not panel.history_list.isVisible()
    assert selector.height() <= 2 * selector.fontMetrics().height() + 12
    assert panel.history_list.count() == 2
    assert "2 questions" in selector.placeholderText()


@pytest.mark.xvfb
def test_while_a_follow_up_reasons_and_streams_the_previous_answer_shows_once(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    """The previous answer is the thread's latest turn above, never also in the answer
    area; once the new answer begins, it takes the room."""
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel
    first = ask(window, qtbot, "What is this document about?")
    assert isinstance(first, StoredAnswer)
    sglang.behaviour.update(
        token_delay_s=0.01, reasoning_tokens=60, answer_tokens=LONG_ANSWER_TOKENS
    )
    panel.question_edit.setPlainText("And what does the second page say?")
    assert panel.ask()
    view = panel.answer_view
    # The fake server's answers repeat their question: this names the first answer only.
    opening = 'was: "What is this document about?"'
    assert opening in first.answer

    def shown_once() -> None:
        seen = panel.thread_view.toPlainText().count(opening) + view.browser.toPlainText().count(
            opening
        )
        assert seen == 1 and panel.thread_view.isVisible()

    shown_once()  # waiting
    qtbot.waitUntil(lambda: bool(view.reasoning.toPlainText()), timeout=30_000)
    shown_once()  # reasoning
    qtbot.waitUntil(lambda: view.writer.has_text, timeout=30_000)
    _settle()
    shown_once()  # streaming
    # The selector names no question while a new one is asked (the first answer's
    # reload, landing late, chose it again).
    assert panel.questions.currentIndex() == -1
    _shoot(window, "follow-up-streaming")
    share, _lines = _answer_room(panel)
    assert share >= 0.45, f"the streaming answer has {share:.0%} of the panel"
    with qtbot.waitSignal(panel.answer_finished, timeout=60_000):
        pass
    shown_once()


@pytest.mark.xvfb
def test_a_saved_answer_has_its_own_badge_apart_from_the_server_cache_figure(
    qtbot: QtBot, window: MainWindow
) -> None:
    """Regression: "From cache, asked just now" (no server call) sat in the same grey line
    as "... prompt tokens from the server's cache"."""
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel
    view = panel.answer_view
    badge = panel.findChild(QLabel, "savedAnswerBadge")
    assert badge is not None
    ask(window, qtbot, "What is this document about?")
    assert not badge.isVisible() and not view.from_cache  # asked the server
    panel.new_thread()
    ask(window, qtbot, "What is this document about?")
    _settle()
    assert view.from_cache and badge.isVisible()
    _shoot(window, "saved-answer-badge")
    assert badge.accessibleName() == SAVED_BADGE_NAME
    assert "no server call" in badge.text() and "asked just now" in badge.text()
    figures = view.figures_label
    assert figures.isVisible() and "server's cache" in figures.text()
    assert "From cache" not in figures.text() and "saved" not in figures.text().lower()
    # Apart: above the answer, the figures below it; in the selection's colours.
    assert badge.mapTo(view, badge.rect().bottomLeft()).y() < view.browser.y()
    assert figures.mapTo(view, figures.rect().topLeft()).y() > view.browser.y()
    image = badge.grab().toImage()
    centre = image.pixelColor(image.width() // 2, 1)
    assert centre == badge.palette().highlight().color()
    # Asked again, or another answer shown: the badge goes.
    with qtbot.waitSignal(panel.answer_finished, timeout=30_000):
        view.ask_again_button.click()
    assert not badge.isVisible() and not view.from_cache


def _clipped(widget: QWidget) -> str | None:
    """Why ``widget`` shows fewer words than it has (None: it shows them all)."""
    if isinstance(widget, QLabel):
        if widget.wordWrap() or not widget.text():
            return None
        text = widget.text()
        if widget.textFormat() != Qt.TextFormat.PlainText:
            doc = QTextDocument()
            doc.setHtml(text)
            text = doc.toPlainText()
        needed = widget.fontMetrics().horizontalAdvance(text)
        room = widget.contentsRect().width()
    elif isinstance(widget, QAbstractButton):
        text = widget.text().replace("&", "")
        if not text:
            return None
        style = widget.style()
        needed = widget.fontMetrics().horizontalAdvance(text)
        if isinstance(widget, QCheckBox):
            needed += style.pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, widget)
            needed += style.pixelMetric(QStyle.PixelMetric.PM_CheckBoxLabelSpacing, None, widget)
        elif isinstance(widget, QPushButton):
            needed += 2 * style.pixelMetric(QStyle.PixelMetric.PM_ButtonMargin, None, widget)
        room = widget.width()
    else:
        return None
    if needed > room:
        return f"{type(widget).__name__} {text!r}: needs {needed} px, has {room}"
    return None


@pytest.mark.xvfb
def test_no_word_of_the_ask_panel_is_clipped_at_the_minimum_size(
    qtbot: QtBot, window: MainWindow, sglang: FakeSGLang
) -> None:
    """Regression: at the window's minimum size the Think box read "Thinl"."""
    panel = window.ask_panel
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    _check_sizes(window, qtbot, "document")  # nothing asked yet
    _follow_up(window, qtbot, sglang)
    _check_sizes(window, qtbot, "follow-up")
    # The question selector elides the chosen question; its tooltip has it in full.
    assert panel.questions.toolTip() == "And what does the second page say?"


def _check_sizes(window: MainWindow, qtbot: QtBot, state: str) -> None:
    panel = window.ask_panel
    for size in ((1, 1), (900, 600), (1400, 860), (1, 1)):
        window.resize(*size)
        if size == (1, 1):  # the window's minimum size
            qtbot.waitUntil(lambda: window.size() == window.minimumSizeHint())
        else:
            qtbot.waitUntil(lambda size=size: window.width() == size[0])
        _settle()
        _shoot(window, f"{state}-{window.width()}x{window.height()}")
        where = f"{state} at {window.size()}"
        clipped = [
            why
            for widget in panel.findChildren(QWidget)
            if widget.isVisible() and (why := _clipped(widget)) is not None
        ]
        assert not clipped, f"{where}: " + "; ".join(clipped)
        # Every row stays inside the panel, none drawn over the next.
        for widget in (panel.think_box, panel.ask_button, panel.stop_button):
            corner = widget.mapTo(panel, widget.rect().bottomRight())
            assert corner.x() < panel.width() and corner.y() < panel.height(), where
        _assert_stacked(panel, [panel.conversation, panel.form], where)
        view = panel.answer_view
        browser = view.browser
        if browser.isVisible() and not browser.toPlainText():  # its placeholder shows
            needed = browser.fontMetrics().horizontalAdvance(browser.placeholderText())
            assert needed <= browser.viewport().width(), f"{where}: the placeholder is cut"
        rows = [view.question_label, view.thinking, view.browser, view.footer]
        _assert_stacked(view, [w for w in rows if w.isVisible()], where)


def _assert_stacked(parent: QWidget, widgets: list[QWidget], where: str) -> None:
    """Each of ``widgets`` (top to bottom) ends above the next begins."""
    for upper, lower in itertools.pairwise(widgets):
        bottom = upper.mapTo(parent, upper.rect().bottomLeft()).y()
        top = lower.mapTo(parent, lower.rect().topLeft()).y()
        assert bottom < top, f"{where}: {type(upper).__name__} over {type(lower).__name__}"


def test_a_workstation_failure_offers_the_workstation_check(
    qtbot: QtBot, window: MainWindow, monkeypatch: Any
) -> None:
    """Errors carry a typed remedy that the app turns into a button: Check this
    workstation had none in the ask panel."""
    open_document(window, qtbot, FOUR_PAGES)
    wait_ready(window, qtbot)
    panel = window.ask_panel

    class Failing:
        def ask(self, *_args: object) -> object:
            raise StorageError("cannot write the database: disk full")

    monkeypatch.setattr(window.session, "answerer", Failing)
    result = ask(window, qtbot, "What is this document about?")
    assert isinstance(result, StorageError)
    view = panel.answer_view
    assert view.notice_button.isVisible()
    assert view.notice_button.text() == Remedy.CHECK_WORKSTATION.label
    with qtbot.waitSignal(panel.workstation_check_requested):
        view.notice_button.click()
    qtbot.waitUntil(
        lambda: any(type(w).__name__ == "DoctorDialog" for w in window.children()), timeout=5_000
    )
