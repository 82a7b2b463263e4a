"""The wait before an answer's first token: the waiting line and the prefill progress bar."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import QLabel, QProgressBar, QVBoxLayout, QWidget

from desktop.answering.events import Sent
from desktop.answering.format import duration
from desktop.answering.prefill import PrefillGuess


class AnswerProgress(QWidget):
    """ "Checking the answer cache…", then "Reading the document…" over a bar that moves by
    the expected uncached tokens at the learned prefill rate (hidden once text arrives)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.waiting_label = QLabel()
        self.waiting_label.setTextFormat(Qt.TextFormat.PlainText)
        self.waiting_label.setWordWrap(True)
        self.waiting_label.setObjectName("waitingLabel")
        self.prefill_bar = QProgressBar()
        self.prefill_bar.setObjectName("prefillProgress")
        self.prefill_bar.setTextVisible(False)
        self.prefill_bar.setMaximumHeight(self.fontMetrics().height() // 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.waiting_label)
        layout.addWidget(self.prefill_bar)
        self.timer = QTimer(self)
        self.timer.setInterval(250)
        self.timer.timeout.connect(self._on_timer_timeout)
        self._started = 0.0
        self._prompt_tokens: int | None = None
        self._guess: PrefillGuess | None = None
        self._sent_at = 0.0

    def stop(self) -> None:
        """Hide the line and the bar; the clock stops."""
        self.timer.stop()
        self.waiting_label.hide()
        self.prefill_bar.hide()

    def start(self) -> None:
        """A question was asked: the waiting clock starts."""
        self._started = time.monotonic()
        self._prompt_tokens = None
        self._guess = None
        self.waiting_label.setText("Checking the answer cache and counting tokens…")
        self.waiting_label.show()
        self.timer.start()

    def on_sent(self, sent: Sent, guess: PrefillGuess | None) -> None:
        """The request is on its way: the server reads the document now."""
        self._prompt_tokens = sent.prompt_tokens
        self._guess = guess
        self._sent_at = time.monotonic()
        if guess is not None and guess.seconds is not None:
            self.prefill_bar.setRange(0, 1000)
            self.prefill_bar.setValue(0)
        else:
            self.prefill_bar.setRange(0, 0)  # no rate learned yet: a busy bar
        self.prefill_bar.show()
        self._on_timer_timeout()

    @Slot()
    def _on_timer_timeout(self) -> None:
        elapsed = time.monotonic() - self._started
        if self._prompt_tokens is None:
            text = f"Checking the answer cache and counting tokens… {duration(elapsed)}"
            self.waiting_label.setText(text)
            return
        self.waiting_label.setText(self.prefill_text(time.monotonic() - self._sent_at))

    def prefill_text(self, elapsed: float) -> str:
        """The line above the progress bar while the server reads the prompt (and the
        bar's position: the expected uncached tokens at the learned prefill rate)."""
        guess = self._guess
        prompt = self._prompt_tokens or 0
        if guess is None:
            return f"Reading the document ({prompt:,} tokens)… {duration(elapsed)}"
        if guess.cached_tokens > 0:
            what = (
                f"Reading {guess.uncached_tokens:,} new tokens ({guess.cached_tokens:,} of "
                f"{prompt:,} expected from the server's cache)"
            )
        else:
            what = f"Reading the document ({prompt:,} tokens)"
        if guess.seconds is None:
            return f"{what}… {duration(elapsed)} · first question: no estimate yet"
        left = guess.seconds - elapsed
        if left > 1:
            done = min(elapsed / guess.seconds, 0.99) if guess.seconds > 0 else 0.99
            self.prefill_bar.setValue(round(done * 1000))
            return f"{what}… {duration(elapsed)} · about {duration(left)} left"
        self.prefill_bar.setRange(0, 0)  # past the estimate: busy, no false percentage
        return f"{what}… {duration(elapsed)} · longer than expected (a busy server?); still reading"
