"""Transcripts and Word files in the app: speakers and times shown, citations jump to the line."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QFont
from pytestqt.qtbot import QtBot

from desktop.ui.main_window import MainWindow
from tests.gui.conftest import ask, open_as_text, open_document, wait_ready
from tests.support.documents import contract_docx, meeting_srt, meeting_vtt


def visible(view: object) -> bool:
    """Whether the text cursor's line is inside the viewport."""
    rect = view.cursorRect()  # type: ignore[attr-defined]
    return bool(view.viewport().rect().intersects(rect))  # type: ignore[attr-defined]


def test_transcript_shows_speakers_and_times_and_jumps_to_a_moment(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    text = open_as_text(window, qtbot, meeting_vtt(tmp_path / "budget.vtt"))
    view = window.doc_view
    assert "[00:01:00] Bob: Travel is up twelve percent." in text
    assert "── Page 00:41:12 (#3) ──" in text
    # The speaker is painted bold, the timestamp dim (the highlighter's formats).
    number = view.text_view.block_for_anchor("00:01:00")
    assert number is not None
    block = view.text_view.document().findBlockByNumber(number)
    ranges = block.layout().formats()
    painted = {
        (r.start, r.length): (r.format.foreground().color(), r.format.fontWeight()) for r in ranges
    }
    default = view.text_view.palette().text().color()
    assert painted[(0, 11)][0] != default  # "[00:01:00] " dimmed
    assert painted[(11, 4)][1] == QFont.Weight.Bold  # "Bob:"

    # An exact line, then a moment between two lines (the line said just before it).
    assert view.go_to_citation("00:41:12", None)
    assert view.current_page() == 3
    assert view.text_view.selected_text() == (
        "[00:41:12] Alice: We agree to revisit hiring in March."
    )
    assert visible(view.text_view)
    assert view.go_to_citation("00:07:30", None)
    assert view.current_page() == 2
    assert view.text_view.selected_text().startswith("[00:05:12] Carol:")
    assert view.go_to_citation("0:00:09", None)
    assert view.current_page() == 1
    assert view.text_view.selected_text().startswith("[00:00:08] Bob:")
    # A page label still works as before, and nonsense is refused.
    assert view.go_to_citation(None, 2)
    assert view.current_page() == 2
    assert not view.go_to_citation("p. 99", None)


def test_word_document_citation_selects_the_paragraph(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    path = contract_docx(tmp_path / "contract.docx")
    open_document(window, qtbot, path)
    view = window.doc_view
    view.go_to_page(1)
    assert view.go_to_citation("§ 4.2 ¶ 3", None)
    assert view.current_page() == 4
    assert view.text_view.selected_text() == "[§ 4.2 ¶ 3] 2. Pay the invoice"
    assert view.go_to_citation("§3, ¶1", None)
    assert view.text_view.selected_text() == "[§ 3 ¶ 1] Either party may terminate with notice."
    assert view.current_page() == 5
    # A paragraph number past the section's pages lands on the section's last page.
    assert view.go_to_citation("§ 1 ¶ 9", None)
    assert view.current_page() == 2


def test_clicked_timestamp_citation_in_an_answer_jumps_to_the_moment(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    """The answer's citation, as the panel emits it on a click, scrolls the transcript."""
    path = meeting_srt(tmp_path / "episode.srt")
    open_document(window, qtbot, path)
    wait_ready(window, qtbot)
    window.ask_panel.citation_clicked.emit("00:06:12", None)
    assert window.doc_view.current_page() == 2
    assert window.doc_view.text_view.selected_text() == (
        "[00:06:10] Fox Mulder: The truth is out there, somewhere."
    )
    # Asking still works on a transcript: the answer cites its pages.
    assert ask(window, qtbot, "Who speaks?") is not None
