"""The incremental Markdown renderer: streamed output equals the whole, work stays bounded."""

from __future__ import annotations

import random

import pytest
from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QFont, QGuiApplication, QTextDocument
from pytestqt.qtbot import QtBot

from desktop.ui.markdown_stream import (
    citation_href,
    close_open,
    inline,
    parse_all,
    parse_citation_href,
    safe_cut,
    split_first,
)
from desktop.ui.markdown_writer import COMMIT_AT, FRAME_S, MarkdownWriter

SAMPLE = (
    "# Findings\n\nThe term is **three years** [p. 4], renewable *once* [pp. 4-5].\n"
    "It ends early on breach [p. iv (#4)]; see `clause 9`.\n\n"
    "- Liability is capped [p. 7]\n- Governing law:\n  England [p. 8]\n1. First\n2. Second\n\n"
    "```\ncode <b>not bold</b>\n\nstill code\n```\n"
    "| Clause | Page |\n|---|---|\n| Term | [p. 4] |\n\n> A quote\n\n---\n"
    + " ".join(f"word{i} **b{i}** [p. {i % 9 + 1}]" for i in range(400))
    + "\n\nThe end."
)


def render(chunks: list[str], app: QGuiApplication) -> tuple[str, MarkdownWriter]:
    doc = QTextDocument()
    writer = MarkdownWriter(doc, app.palette(), frame_s=0)  # draw every chunk
    for chunk in chunks:
        writer.append(chunk)
    writer.finish()
    return doc.toPlainText(), writer


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_streamed_rendering_equals_rendering_the_whole(qapp: QGuiApplication, seed: int) -> None:
    whole_doc = QTextDocument()
    MarkdownWriter(whole_doc, qapp.palette()).set_text(SAMPLE)
    rng = random.Random(seed)
    chunks, i = [], 0
    while i < len(SAMPLE):
        n = rng.randint(1, 7)
        chunks.append(SAMPLE[i : i + n])
        i += n
    streamed, _ = render(chunks, qapp)
    # The same text and block structure; a very long streamed paragraph may be laid out
    # in several blocks (SPLIT_AT), so compare with line breaks in paragraphs as spaces.
    assert streamed.split("\n")[:12] == whole_doc.toPlainText().split("\n")[:12]
    assert " ".join(streamed.split()) == " ".join(whole_doc.toPlainText().split())
    assert "•\u2002Governing law: England [p. 8]" in streamed
    assert "code <b>not bold</b>" in streamed


def test_a_long_paragraph_is_committed_in_pieces(qapp: QGuiApplication) -> None:
    # 60,000 characters in one paragraph, 4 at a time: re-rendering the whole tail each
    # time would cost ~450M characters; committing keeps each render under COMMIT_AT.
    text = " ".join(f"token{i} [p. 1]" for i in range(2_000))
    doc = QTextDocument()
    writer = MarkdownWriter(doc, qapp.palette(), frame_s=0)
    longest = 0
    for i in range(0, len(text), 4):
        writer.append(text[i : i + 4])
        longest = max(longest, len(writer._pending) - writer._committed)
    assert writer._committed > 0
    writer.finish()
    # Streamed, a paragraph this long is laid out in blocks of ~SPLIT_AT characters.
    assert " ".join(doc.toPlainText().split()) == text
    assert doc.blockCount() > 10
    assert longest <= COMMIT_AT + 40


def test_blocks_finish_only_when_the_next_line_says_so() -> None:
    assert split_first("Hello wor") is None
    assert split_first("Hello\n\nNext") == ("Hello", "\nNext")
    assert split_first("- a\n-") is None  # "-" may still become "- b" or "---"
    assert split_first("- a\n- b") == ("- a", "- b")
    assert split_first("# Head") is None
    assert split_first("# Head\n") == ("# Head", "")
    assert split_first("```\ncode\n\nmore") is None
    assert [b.kind for b in parse_all(SAMPLE)][:6] == [
        "heading",
        "paragraph",
        "item",
        "item",
        "item",
        "item",
    ]


def test_citations_become_page_links_and_nothing_else_does() -> None:
    spans = inline(
        "See [p. 12], [pp. 3-5, 9], [P. A-2], [page 7] and [p. iv (#4)]; "
        '[x](file:///etc) <a href="y">'
    )
    links = [(s.text, s.href) for s in spans if s.href]
    # Each cited label or range is its own link; the document view resolves it (A-2 is a
    # label, 3-5 a range) through the core's label index.
    assert links == [
        ("[p. 12]", "longdoc-page:l=12"),
        ("[pp. 3-5", "longdoc-page:l=3-5"),
        ("9]", "longdoc-page:l=9"),
        ("[P. A-2]", "longdoc-page:l=A-2"),
        ("[page 7]", "longdoc-page:l=7"),
        ("[p. iv (#4)]", "longdoc-page:l=iv%20%28%234%29"),
    ]
    assert "".join(s.text for s in spans).endswith('x (file:///etc) <a href="y">')
    assert parse_citation_href(citation_href("A 1/2")) == ("A 1/2", None)
    assert parse_citation_href("file:///etc/passwd") == (None, None)


def test_safe_cut_never_splits_markup() -> None:
    text = "plain words **bold words** more [p. 3] tail *open"
    cut = safe_cut(text, 0)
    assert text[:cut] == "plain words **bold words** more [p. 3] tail "
    assert safe_cut("**never closed and long", 0) == 0


def test_streamed_text_is_drawn_at_most_once_per_frame(qtbot: QtBot) -> None:
    doc = QTextDocument()
    writer = MarkdownWriter(doc, QGuiApplication.palette())
    now = [100.0]
    writer.clock = lambda: now[0]
    writer.append("The first words ")  # a frame since the last draw: drawn at once
    assert doc.toPlainText() == "The first words "
    for word in ("arrive ", "in ", "a ", "burst"):
        now[0] += 0.002
        writer.append(word)
    # Within the same frame: nothing more is drawn, one timer waits for the frame's end.
    assert writer.draws == 1
    assert writer.waiting
    assert doc.toPlainText() == "The first words "
    qtbot.waitUntil(lambda: not writer.waiting, timeout=1_000)
    assert writer.draws == 2
    assert doc.toPlainText() == "The first words arrive in a burst"
    now[0] += FRAME_S
    writer.append(" and **more**")
    assert writer.draws == 3 and not writer.waiting
    now[0] += 0.001
    writer.append(" at the end.\n\nA last para")
    assert writer.waiting
    writer.finish()  # the end of the stream draws everything at once
    assert not writer.waiting
    assert doc.toPlainText() == (
        "The first words arrive in a burst and more at the end.\nA last para"
    )
    # No timer is left to redraw the finished text later: the frame timer is stopped and
    # the events already posted change nothing.
    assert not writer._frame_timer.isActive()
    QCoreApplication.processEvents()
    assert writer.draws == 4 and not writer.waiting


def test_a_bold_phrase_never_shows_raw_stars_while_it_streams(qapp: QGuiApplication) -> None:
    text = "The term is **three years** and *renewable once*, see `clause 9`; 2 * 3 = 6.\n"
    doc = QTextDocument()
    writer = MarkdownWriter(doc, qapp.palette(), frame_s=0)
    for ch in text:
        writer.append(ch)
        shown = doc.toPlainText()
        assert "**" not in shown, shown
        assert "`" not in shown, shown
    writer.finish()
    assert (
        doc.toPlainText() == "The term is three years and renewable once, see clause 9; 2 * 3 = 6."
    )
    # While "**three ye" streamed, it was already bold.
    doc2 = QTextDocument()
    partial = MarkdownWriter(doc2, qapp.palette(), frame_s=0)
    partial.append("The term is **three ye")
    cursor = doc2.find("three ye")
    assert cursor.charFormat().fontWeight() == QFont.Weight.Bold


def test_close_open_closes_only_real_openers() -> None:
    assert close_open("The **three ye") == "The **three ye**"
    assert close_open("The **") == "The "
    assert close_open("a `sec") == "a `sec`"
    assert close_open("2 * 3 * 4") == "2 * 3 * 4"
    assert close_open("snake_case_na") == "snake_case_na"
    assert close_open("done **x** y") == "done **x** y"


def test_emphasis_follows_commonmark_for_nesting_and_intraword() -> None:
    def runs(text: str) -> list[tuple[str, bool, bool]]:
        return [(s.text, s.bold, s.italic) for s in inline(text)]

    assert runs("***both***") == [("both", True, True)]
    assert runs("*it **b** it*") == [("it ", False, True), ("b", True, True), (" it", False, True)]
    assert runs("x*y*z") == [("x", False, False), ("y", False, True), ("z", False, False)]
    assert runs("call snake_case_name") == [("call snake_case_name", False, False)]
