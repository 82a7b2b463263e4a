"""The answer view while waiting: prefill progress, and the previous answer kept readable."""

from __future__ import annotations

import time

from pytestqt.qtbot import QtBot

from desktop.answering.events import Sent
from desktop.answering.prefill import PrefillGuess
from desktop.documents.model import Page
from desktop.errors import DocumentTooLarge
from desktop.ui import messages
from desktop.ui.answer_view import AnswerView
from tests.unit.answering.test_format import ANSWER

SENT = Sent(250_000, 262_144, 8_000, "Qwen3.5", 1, 10, 10)


def test_a_long_prefill_shows_progress_by_the_uncached_tokens(qtbot: QtBot) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    view.show()
    view.start("What are the termination rights?", "")
    assert not view.prefill_bar.isVisible()
    view.on_sent(SENT, PrefillGuess(250_000, 250_000, 100.0))
    assert view.prefill_bar.isVisible()
    view.progress._sent_at = time.monotonic() - 25  # as if 25 s had passed since it was sent
    view.progress._on_timer_timeout()
    text = view.waiting_label.text()
    assert text.startswith("Reading the document (250,000 tokens)… 0:25 · about 1:")
    assert text.endswith(" left")
    assert 240 <= view.prefill_bar.value() <= 260  # a quarter of the estimate
    # Past the estimate the bar stops claiming a percentage.
    view.progress._sent_at = time.monotonic() - 130
    view.progress._on_timer_timeout()
    assert "longer than expected" in view.waiting_label.text()
    assert view.prefill_bar.maximum() == 0
    # The first token ends the wait.
    view.append_answer("The ")
    assert not view.prefill_bar.isVisible()
    assert not view.waiting_label.isVisible()


def test_a_warm_document_reads_only_the_question(qtbot: QtBot) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    view.start("And clause 5?", "")
    view.on_sent(SENT, PrefillGuess(250_000, 300, 0.1))
    view.progress._sent_at = time.monotonic()
    view.progress._on_timer_timeout()
    assert view.waiting_label.text().startswith(
        "Reading 300 new tokens (249,700 of 250,000 expected from the server's cache)… 0:00"
    )
    view.on_sent(SENT, PrefillGuess(250_000, 250_000, None))
    assert view.prefill_bar.maximum() == 0  # no rate learned yet: a busy bar
    assert "no estimate yet" in view.waiting_label.text()


def test_the_previous_answer_stays_readable_until_the_new_one_begins(qtbot: QtBot) -> None:
    view = AnswerView()
    qtbot.addWidget(view)
    view.show()
    view.show_answer(ANSWER, 10)
    view.writer.set_text("The **earlier** answer.")
    view.start("A second question?", "")
    assert view.browser.toPlainText() == "The earlier answer."
    assert view.previous_label.isVisible()
    assert "the previous answer (“q”)" in view.previous_label.text()
    view.on_sent(SENT, None)
    view.append_reasoning("thinking…")
    assert view.browser.toPlainText() == "The earlier answer."  # still there while thinking
    view.append_answer("The new answer.")
    view.writer.finish()
    assert view.browser.toPlainText() == "The new answer."
    assert not view.previous_label.isVisible()
    # Stopped before any answer text: the previous one is not passed off as this one.
    view.show_answer(ANSWER, 10)
    view.start("A third question?", "")
    view.fail("Stopped.")
    assert view.browser.toPlainText() == ""


def test_over_budget_is_said_in_the_apps_words_with_printed_labels() -> None:
    labels = ["i", "ii", "iii", "iv", *(str(n) for n in range(1, 37))]
    pages = [Page(n, label, "") for n, label in enumerate(labels, 1)]
    exc = DocumentTooLarge("contract.pdf", 100_000, 50_000, 65_536, 40)
    assert "--pages" in str(exc)  # the CLI's words...
    text = messages.too_large(exc, pages)
    assert text == (  # ...and the app's
        "Not sent: the question needs 100,000 prompt tokens, 50,000 more than the 50,000 "
        "that the server's context of 65,536 tokens leaves beside the answer. Ask about "
        "fewer pages: pages 1-19 of 40 (printed i to 15) would fit."
    )
