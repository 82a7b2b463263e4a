"""One budget: the library's "Fits" column and the budget bar show the core's numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtWidgets import QSpinBox
from pytestqt.qtbot import QtBot

from desktop.answering.budget import ContextLimits, document_budget, plan_budget
from desktop.answering.prompt import count_prompt_tokens, full_range
from desktop.config import Settings, setting_sources
from desktop.errors import ContextUnknown
from desktop.store.db import StoredAnswer
from desktop.ui.main_window import MainWindow
from desktop.ui.settings_dialog import SettingsDialog
from tests.conftest import API_KEY
from tests.gui.conftest import FOUR_PAGES, GEOTOPO, ask, open_document, wait_ready
from tests.support.sglang_server import FakeSGLang


def overage(text: str) -> int:
    """The number in "✗ +27,323" or "Over budget by 27,323 tokens"."""
    match = re.search(r"(?:\+|by )([\d,]+)", text)
    assert match is not None, text
    return int(match.group(1).replace(",", ""))


def test_library_and_bar_show_the_same_overage_when_the_kv_pool_binds(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    # A 262,144-token context but a KV pool that takes 20,000 prompt tokens at most: SGLang's
    # max_req_input_len binds, not the context.
    with FakeSGLang(api_key=API_KEY, context_length=262_144, max_total_num_tokens=20_006) as srv:
        assert srv.max_req_input_len == 20_000
        settings = Settings(endpoint=srv.url, api_key=API_KEY, answer_reserve=4_096)
        window: MainWindow = make_window(settings)  # type: ignore[operator]
        open_document(window, qtbot, GEOTOPO)
        wait_ready(window, qtbot)
        doc = window.document
        assert doc is not None and doc.tokens > 20_000
        bar = window.ask_panel.budget_bar
        assert bar.over_budget
        qtbot.waitUntil(lambda: (window.library.fits_text(doc.sha256) or "").startswith("✗"))

        limits = ContextLimits(262_144, max_input=20_000)
        exact = count_prompt_tokens(doc, full_range(doc), "", True)
        core = plan_budget(exact, limits, 4_096)
        assert document_budget(doc.tokens, limits, 4_096) == core
        assert core.overflow == exact - 20_000
        library = overage(window.library.fits_text(doc.sha256) or "")
        shown = overage(bar.label.text())
        assert library == shown == core.overflow
        # The bar names the limit that binds, with its true numbers.
        assert "at most 20,000 prompt tokens" in bar.label.text()
        assert "max_req_input_len" in bar.label.text()
        assert "leaves" not in bar.label.text()
        # Asked anyway, the refusal says the same, in the app's words.
        refused = ask(window, qtbot, "Summarise.")
        notice = window.ask_panel.answer_view.notice_label.text()
        assert refused is not None and notice.startswith("Not sent: the question needs ")
        assert "at most 20,000 prompt tokens" in notice and "would fit" in notice
        assert "--pages" not in notice


def test_a_single_page_over_budget_offers_no_page_range(
    qtbot: QtBot, make_window: object, home: Path, tmp_path: Path
) -> None:
    one_page = tmp_path / "memo.txt"
    one_page.write_text("The supplier shall deliver on time. " * 80, encoding="utf-8")
    with FakeSGLang(api_key=API_KEY, context_length=2_600) as srv:
        settings = Settings(endpoint=srv.url, api_key=API_KEY, answer_reserve=2_048)
        window: MainWindow = make_window(settings)  # type: ignore[operator]
        open_document(window, qtbot, one_page)
        wait_ready(window, qtbot)
        doc = window.document
        assert doc is not None and len(doc.pages) == 1
        panel = window.ask_panel
        assert panel.budget_bar.over_budget
        assert not panel.suggest_button.isVisible()
        text = panel.budget_bar.label.text()
        assert "Choose a page range" not in text
        assert "One page cannot be split" in text
        ask(window, qtbot, "Anything?")
        notice = panel.answer_view.notice_label.text()
        assert notice.startswith("Not sent: ") and "single page cannot be split" in notice
        assert "would fit" not in notice and "1-1" not in notice


def test_an_unknown_context_points_at_the_settings(
    qtbot: QtBot, make_window: object, home: Path
) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="openai", strict=True) as srv:
        window: MainWindow = make_window(Settings(endpoint=srv.url, api_key=API_KEY))  # type: ignore[operator]
        open_document(window, qtbot, FOUR_PAGES)
        qtbot.waitUntil(lambda: window.indicator.state == "ready", timeout=10_000)
        bar = window.ask_panel.budget_bar
        qtbot.waitUntil(lambda: "context_length" in bar.label.text(), timeout=20_000)
        result = ask(window, qtbot, "Anyone?")
        assert isinstance(result, ContextUnknown)
        view = window.ask_panel.answer_view
        assert view.notice_label.text().startswith(f"The server at {srv.url} does not report")
        assert view.notice_button.isVisible() and view.notice_button.text() == "Settings…"

        # Stated in the settings, the same server answers.
        window._apply_settings(Settings(endpoint=srv.url, api_key=API_KEY, context_length=32_768))
        qtbot.waitUntil(lambda: bar.view is not None, timeout=20_000)
        assert bar.view is not None and bar.view.budget.context_length == 32_768
        assert isinstance(ask(window, qtbot, "Now?"), StoredAnswer)


def test_the_settings_dialog_states_a_context_length(
    qtbot: QtBot, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialog = SettingsDialog(Settings(context_length=0))
    qtbot.addWidget(dialog)
    spin = dialog.editors["context_length"]
    assert isinstance(spin, QSpinBox)
    spin.setValue(32_768)
    assert dialog.current().context_length == 32_768
    assert dialog.error() is None
    monkeypatch.setenv("LONGDOC_CONTEXT_LENGTH", "40000")
    assert setting_sources()["context_length"] == "environment (LONGDOC_CONTEXT_LENGTH)"
