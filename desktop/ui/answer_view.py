"""One answer on screen: the question, waiting and prefill progress, live reasoning,
the answer as Markdown (see ``markdown_writer``), its figures and its quote checks."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime

from PySide6.QtCore import Qt, QUrl, Signal, Slot
from PySide6.QtGui import QMouseEvent, QResizeEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from desktop.answering.citations import QuoteCheck
from desktop.answering.events import Sent, Stored
from desktop.answering.format import (
    APP_RAISE_LIMIT,
    answer_figures,
    answer_scope,
    page_label,
    short_quote,
    truncation_note,
)
from desktop.answering.prefill import PrefillGuess
from desktop.answers import StoredAnswer
from desktop.documents.model import Page
from desktop.errors import Remedy
from desktop.ui.answer_footer import AnswerFooter, SavedBadge
from desktop.ui.answer_progress import AnswerProgress
from desktop.ui.answer_reasoning import ReasoningFold
from desktop.ui.markdown_stream import citation_href, parse_citation_href
from desktop.ui.markdown_writer import MarkdownWriter
from desktop.ui.quote_marks import (
    NOT_FOUND_COLOR,
    PlacedMark,
    QuoteMark,
    mark_quotes,
    marks_for,
    status_of,
)
from desktop.ui.wrapping_row import min_height_for_width

# Answer text a little larger than the interface's, as reading apps set body text.
FONT_SCALE = 1.12
MEASURE_CHARS = 80
MIN_LINES = 5


def quote_summary(checks: Sequence[QuoteCheck], pages: Sequence[Page]) -> tuple[str, str]:
    """The line under an answer and its tooltip, both rich text with every quote escaped:
    "Quotes: 2 verified · 1 on another page (p. 14) · 1 not found" (that part red). The
    page a misplaced quote is really on is a ``longdoc-page:`` link; the quotes not found
    are listed in the tooltip. ``("", "")`` when the answer quotes nothing."""
    if not checks:
        return "", ""

    def label(number: int) -> str:
        return page_label(pages, number)

    def cited(check: QuoteCheck) -> str:
        if not check.cited:
            return "no page cited"
        return "cited p. " + ", ".join(html.escape(label(n)) for n in check.cited)

    checks = [c for c in checks if status_of(c) != "unquoted"]
    if not checks:
        return "", ""
    verified = [c for c in checks if status_of(c) == "verified"]
    elsewhere = [c for c in checks if status_of(c) == "other_page" and c.found_on is not None]
    missing = [c for c in checks if c not in verified and c not in elsewhere]
    parts: list[str] = []
    if verified:
        parts.append(f"{len(verified)} verified")
    if elsewhere:
        found = sorted({c.found_on for c in elsewhere if c.found_on is not None})
        links = ", ".join(
            f'<a href="{citation_href(label(n), n)}">p. {html.escape(label(n))}</a>' for n in found
        )
        where = "another page" if len(elsewhere) == 1 else "other pages"
        parts.append(f"{len(elsewhere)} on {where} ({links})")
    if missing:
        # Red and bold: a quote the document does not contain must not be missed.
        red = NOT_FOUND_COLOR.name()
        parts.append(f'<b style="color:{red}">{len(missing)} not found</b>')
    line = "Quotes: " + " · ".join(parts)
    notes: list[str] = []
    if missing:
        items = "".join(
            f"<li>“{html.escape(short_quote(c.quote))}” ({cited(c)})</li>" for c in missing
        )
        notes.append(f"<p><b>Not found in the document:</b></p><ul>{items}</ul>")
    if elsewhere:
        items = "".join(
            f"<li>“{html.escape(short_quote(c.quote))}” ({cited(c)}; it is on "
            f"p. {html.escape(label(c.found_on or 0))})</li>"
            for c in elsewhere
        )
        notes.append(f"<p><b>Not on the page cited:</b></p><ul>{items}</ul>")
    if not notes:
        notes.append("<p>Every quote was found on the page it cites.</p>")
    return line, "".join(notes)


class AnswerBrowser(QTextBrowser):
    """The answer's text: a larger font and a readable measure (at most ~80 characters a
    line, centred) however wide the panel is."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        font = self.font()
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * FONT_SCALE)
        self.setFont(font)
        self.document().setDocumentMargin(12)
        self.pressed_at: int | None = None  # text position of the last click (which quote)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.pressed_at = self.cursorForPosition(event.position().toPoint()).position()
        super().mousePressEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        measure = self.fontMetrics().averageCharWidth() * MEASURE_CHARS
        spare = max(0, self.width() - measure - 2 * self.frameWidth())
        self.setViewportMargins(spare // 2, 0, spare - spare // 2, 0)
        super().resizeEvent(event)


class AnswerView(QWidget):
    """The answer area of the ask panel (the question, waiting, reasoning, answer, figures)."""

    citation_clicked = Signal(object, object)  # label: str | None, number: int | None
    # After citation_clicked, when the click was on a checked quote's citation or mark:
    # the quote and the page it is on (to highlight it there).
    quote_clicked = Signal(str, int)
    ask_again_requested = Signal()
    copy_requested = Signal()
    export_requested = Signal()
    action_requested = Signal(object)  # the notice's Remedy, e.g. Remedy.START_SERVER
    answer_began = Signal()  # the first answer text, or a whole answer, is shown

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("answerView")
        self.question_label = QLabel()
        self.question_label.setTextFormat(Qt.TextFormat.PlainText)
        self.question_label.setWordWrap(True)
        font = self.question_label.font()
        font.setBold(True)
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * FONT_SCALE)
        self.question_label.setFont(font)
        self.scope_label = QLabel()
        self.scope_label.setTextFormat(Qt.TextFormat.PlainText)
        self.scope_label.setWordWrap(True)
        self.saved_badge = SavedBadge()
        self.progress = AnswerProgress()
        self.waiting_label = self.progress.waiting_label
        self.prefill_bar = self.progress.prefill_bar
        self.previous_label = QLabel()
        self.previous_label.setTextFormat(Qt.TextFormat.PlainText)
        self.previous_label.setWordWrap(True)
        self.previous_label.setObjectName("previousAnswerLabel")
        self.notice_label = QLabel()
        self.notice_label.setTextFormat(Qt.TextFormat.PlainText)
        self.notice_label.setWordWrap(True)
        self.notice_button = QPushButton()
        self.notice_button.setObjectName("noticeRemedy")
        self.notice_button.clicked.connect(self._on_notice_button_clicked)
        self._notice_action: Remedy | None = None

        self.thinking = ReasoningFold()
        self.reasoning_toggle = self.thinking.toggle
        self.reasoning = self.thinking.text

        self.browser = AnswerBrowser()
        self.browser.setObjectName("answer")
        # Squeezed (the minimum window), the answer keeps a few lines; the area scrolls.
        self.browser.setMinimumHeight(self.browser.fontMetrics().lineSpacing() * MIN_LINES)
        # Never let Qt follow a link: only our citations act, in _on_browser_anchor_clicked.
        self.browser.setOpenLinks(False)
        self.browser.setOpenExternalLinks(False)
        self.browser.anchorClicked.connect(self._on_browser_anchor_clicked)
        # One short line: Qt draws a placeholder's first line only (a longer one was cut
        # off in a narrow panel); the question box below says how to ask.
        self.browser.setPlaceholderText("The answer appears here.")
        self.writer = MarkdownWriter(
            self.browser.document(), self.palette(), follow=self.browser.verticalScrollBar()
        )

        self.footer = AnswerFooter()
        self.footer.ask_again_requested.connect(self.ask_again_requested)
        self.footer.copy_requested.connect(self.copy_requested)
        self.footer.export_requested.connect(self.export_requested)
        self.figures_label = self.footer.figures_label
        self.quotes_label = self.footer.quotes_label
        self.quotes_label.linkActivated.connect(self._on_quotes_label_link_activated)
        self.ask_again_button = self.footer.ask_again_button
        self.copy_button = self.footer.copy_button
        self.export_button = self.footer.export_button
        self.quote_checks: list[QuoteCheck] | None = None
        self.quote_marks_placed = 0  # how many quotes got a mark in the text (tests)
        self._placed: list[PlacedMark] = []
        self._marked = False
        self._pages: list[Page] = []

        badge = QHBoxLayout()
        badge.addWidget(self.saved_badge)
        badge.addStretch(1)
        notice = QHBoxLayout()
        notice.addWidget(self.notice_label, 1)
        notice.addWidget(self.notice_button, 0, Qt.AlignmentFlag.AlignTop)
        self.box = layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(layout.spacing() // 2)  # one block: the answer and its lines
        layout.addWidget(self.question_label)
        layout.addWidget(self.scope_label)
        layout.addLayout(badge)
        layout.addWidget(self.progress)
        layout.addLayout(notice)
        layout.addWidget(self.thinking)
        layout.addWidget(self.previous_label)
        layout.addWidget(self.browser, 1)
        layout.addWidget(self.footer)

        self._showing_previous = False
        self._first_token = False
        self.answer: StoredAnswer | None = None
        self.reset()

    def heightForWidth(self, width: int) -> int:
        """Its lines at ``width`` with the answer at its smallest: the area around it
        scrolls only below that (the minimum window)."""
        return min_height_for_width(self.box, width)

    # --- states ----------------------------------------------------------------------

    def reset(self, keep_answer: bool = False) -> None:
        """Nothing shown: the empty state (``keep_answer``: the answer text stays, to read
        while the next one is on its way)."""
        self.progress.stop()
        self.answer = None
        self.previous_label.hide()
        self._showing_previous = keep_answer
        self.question_label.hide()
        self.scope_label.hide()
        self.saved_badge.hide()
        self.clear_notice()
        self.thinking.clear()
        if not keep_answer:
            self.writer.clear()
            self._marked = False
        self.footer.clear()
        self.show_quote_checks(None, [])

    def start(self, question: str, scope: str, keep_previous: bool = True) -> None:
        """A question was asked: show it and start the waiting clock. The answer shown so
        far stays readable (marked as the previous one) until the new answer begins,
        unless ``keep_previous`` is False (a follow-up: the thread above shows it)."""
        previous = self.answer.question if self.answer is not None else None
        self.reset(keep_answer=keep_previous and previous is not None and self.writer.has_text)
        if self._showing_previous and previous is not None:
            first_line = short_quote(previous, 80)
            self.previous_label.setText(
                f"Below: the previous answer (“{first_line}”), until this one begins."
            )
            self.previous_label.show()
        self._show_question(question, scope)
        self._first_token = False
        self.progress.start()

    def _drop_previous(self) -> None:
        """The new answer takes the place of the previous one."""
        if self._showing_previous:
            self._showing_previous = False
            self.previous_label.hide()
            self.writer.clear()
            self._marked = False

    def _show_question(self, question: str, scope: str) -> None:
        self.question_label.setText(question)
        self.question_label.show()
        self.scope_label.setText(scope)
        self.scope_label.setVisible(bool(scope))

    def on_sent(self, sent: Sent, guess: PrefillGuess | None) -> None:
        """The request is on its way: the server reads the document now; a progress bar
        shows how far, by the expected uncached tokens and the learned prefill rate."""
        if sent.warnings:
            self.show_notice(" ".join(sent.warnings))
        self.progress.on_sent(sent, guess)

    def append_reasoning(self, text: str) -> None:
        """Live thinking (plain text; appended, never re-rendered)."""
        self._on_first_token()
        self.thinking.append(text)

    def append_answer(self, text: str) -> None:
        """Live answer text (Markdown)."""
        self._on_first_token()
        self._drop_previous()
        if not self.writer.has_text:
            self.thinking.fold()  # the answer begins: it gets the room
            self.answer_began.emit()
        self.writer.append(text)  # drawn now or at the next frame; keeps following the end

    def _on_first_token(self) -> None:
        if not self._first_token:
            self._first_token = True
            self.progress.stop()

    def finish(self, stored: Stored, page_count: int) -> None:
        """The answer is stored (streamed to the end, or found in the cache)."""
        self.progress.stop()
        if stored.from_cache:
            self.show_answer(stored.answer, page_count, from_cache=True)
            return
        self._drop_previous()
        self.writer.finish()
        self.answer = stored.answer
        self.thinking.live = False
        self._show_footer(stored.answer, page_count, from_cache=False)
        self._notice_truncated(stored.answer)
        self.answer_began.emit()

    def fail(self, text: str, remedy: Remedy | None = None) -> None:
        """The answer stopped or could not start: say why, keep what arrived."""
        self.progress.stop()
        self._drop_previous()
        self.writer.finish()
        self.show_notice(text, remedy)

    def show_answer(self, answer: StoredAnswer, page_count: int, from_cache: bool = False) -> None:
        """Show a stored answer at once (history, cache hit: with the saved-answer badge)."""
        self.reset()
        self.answer = answer
        self._show_question(answer.question, answer_scope(answer, self._pages_or(page_count)))
        if answer.reasoning:
            self.thinking.set_text(answer.reasoning)
        self.writer.set_text(answer.answer)
        if answer.truncated:
            self._notice_truncated(answer)
        elif answer.status != "complete":
            why = f" ({answer.error})" if answer.error else ""
            self.show_notice(f"This answer is {answer.status}{why}.")
        self._show_footer(answer, page_count, from_cache)
        self.answer_began.emit()

    def _show_footer(self, answer: StoredAnswer, page_count: int, from_cache: bool) -> None:
        figures = answer_figures(answer)
        when = datetime.fromtimestamp(answer.created_at).strftime("%Y-%m-%d %H:%M")
        if from_cache:
            self.saved_badge.show_for(answer.created_at)
        figures = f"{figures} · {when}" if figures else when
        scope = answer_scope(answer, self._pages_or(page_count))
        self.scope_label.setText(scope)
        self.scope_label.setVisible(bool(scope))
        self.footer.show_figures(figures)
        self.thinking.update_label()

    @property
    def from_cache(self) -> bool:
        """The shown answer is a saved one (no server call): its badge is up."""
        return not self.saved_badge.isHidden()

    def show_quote_checks(self, checks: list[QuoteCheck] | None, pages: Sequence[Page]) -> None:
        """Each quote marked where it stands in the answer, and the line under it (both
        hidden for None or no quotes)."""
        self.quote_checks = checks
        line, tooltip = quote_summary(checks or [], pages)
        self.quotes_label.setText(line)
        self.quotes_label.setToolTip(tooltip)
        self.quotes_label.setVisible(bool(line))
        self.footer.row.arrange()
        if self._marked and self.answer is not None:
            # Marks of an earlier check are in the text: draw the answer again first.
            self.writer.set_text(self.answer.answer)
            self._marked = False
        self._placed = []
        if checks and not self.writer.waiting:
            self._placed = mark_quotes(self.browser.document(), marks_for(checks), pages)
            self.quote_marks_placed = len(self._placed)
            self._marked = True

    def _pages_or(self, page_count: int) -> Sequence[Page] | int:
        """The document's pages (for printed labels) when they are this answer's."""
        return self._pages if len(self._pages) == page_count else page_count

    def set_pages(self, pages: Sequence[Page]) -> None:
        """The document's pages, to name page ranges by their printed labels."""
        self._pages = list(pages)

    def _notice_truncated(self, answer: StoredAnswer) -> None:
        """What came stays; the notice says why it stops short (the CLI's Warning line)."""
        if answer.truncated:
            note = truncation_note(answer, APP_RAISE_LIMIT)
            self.show_notice(f"Cut short: {note}.", Remedy.OPEN_SETTINGS)

    def show_notice(self, text: str, remedy: Remedy | None = None) -> None:
        """A line above the answer (warnings, errors), with the remedy's button if any."""
        self.notice_label.setText(text)
        self.notice_label.show()
        self._notice_action = remedy
        self.notice_button.setText(remedy.label if remedy is not None else "")
        self.notice_button.setVisible(remedy is not None)

    def clear_notice(self) -> None:
        """Hide the notice line."""
        self.notice_label.hide()
        self.notice_button.hide()
        self._notice_action = None

    # --- slots ---------------------------------------------------------------------------

    def toggle_reasoning(self) -> None:
        """Show or fold the reasoning (Ctrl+T); nothing when the answer has none."""
        self.thinking.flip()

    @Slot(QUrl)
    def _on_browser_anchor_clicked(self, url: QUrl) -> None:
        cursor = self.browser.textCursor()  # a link activated by keyboard is selected
        pressed = self.browser.pressed_at
        self.browser.pressed_at = None
        self._follow(url.toString(), pressed if pressed is not None else cursor.selectionStart())
        # Anything else is ignored on purpose: answers may not open files or web pages.

    @Slot(str)
    def _on_quotes_label_link_activated(self, href: str) -> None:
        self._follow(href)

    def _follow(self, href: str, position: int | None = None) -> None:
        label, number = parse_citation_href(href)
        # "A-2", "3-5": the document view resolves labels through the core's label index.
        if label is None and number is None:
            return
        self.citation_clicked.emit(label, number)
        mark = self._clicked_mark(number, position)
        # A verified quote is on the page cited; a misplaced one only on its "on p. N" link.
        if (
            mark is not None
            and mark.found_on is not None
            and (mark.status == "verified" or number == mark.found_on)
        ):
            self.quote_clicked.emit(mark.quote, mark.found_on)

    def _clicked_mark(self, number: int | None, position: int | None) -> QuoteMark | None:
        """The checked quote a clicked link belongs to: the quote whose citation or mark
        was clicked in the answer, or the misplaced quote a summary link points at."""
        if position is not None:
            for placed in self._placed:
                if placed.start <= position <= placed.end:
                    return placed.mark
            return None
        for mark in marks_for(self.quote_checks or []):
            if mark.status == "other_page" and mark.found_on == number:
                return mark
        return None

    @Slot()
    def _on_notice_button_clicked(self) -> None:
        if self._notice_action is not None:
            self.action_requested.emit(self._notice_action)
