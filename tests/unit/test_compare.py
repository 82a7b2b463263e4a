"""``compare``'s deterministic part: planted changes found once each, layout never a change."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.compare.align import ChangeKind, compare_documents
from desktop.compare.blocks import blocks
from desktop.compare.explain import explain_question
from desktop.compare.report import change_json, redline
from desktop.documents.ingest import extract
from tests.support.contracts import contract_pair, document, lay_out
from tests.support.pdf_maker import write_pdf


def test_every_planted_change_is_found_once_with_its_kind_and_both_anchors() -> None:
    old, new, planted = contract_pair(60, changes=2)
    a = document(lay_out(old, 90, 40, hyphenate=False, footer=False), "old")
    # Another line width, words hyphenated at line ends, other page breaks, page footers.
    b = document(lay_out(new, 70, 31, hyphenate=True, footer=True), "new")
    changes = compare_documents(a, b).changes
    found: dict[ChangeKind, list[str]] = {kind: [] for kind in ChangeKind}
    for change in changes:
        text = change.new_text or change.old_text
        found[change.kind].append(text.split(".", 1)[0])
    assert sorted(found[ChangeKind.CHANGED]) == sorted(str(n) for n in planted.changed)
    assert sorted(found[ChangeKind.ADDED]) == sorted(planted.added)
    assert sorted(found[ChangeKind.REMOVED]) == sorted(str(n) for n in planted.removed)
    assert sorted(found[ChangeKind.MOVED]) == sorted(str(n) for n in planted.moved)
    assert len(changes) == 4 * 2
    for change in changes:
        data = change_json(change)
        if change.kind in (ChangeKind.CHANGED, ChangeKind.MOVED):
            assert data["old_anchor"].startswith("A p. ") and data["new_anchor"].startswith("B p. ")
        if change.kind is ChangeKind.CHANGED:
            # "EUR 12,345" became "EUR 112,345": one word deleted, one inserted.
            assert len(data["inserted"]) == len(data["deleted"]) == 1
            assert data["inserted"][0] == "1" + data["deleted"][0]
    text = redline(compare_documents(a, b))
    assert "[-" in text and "{+" in text and "moved A p." in text


def test_reflow_hyphenation_page_breaks_and_page_numbers_are_not_changes() -> None:
    old, _, _ = contract_pair(50, changes=1)
    a = document(lay_out(old, 95, 45, hyphenate=False, footer=False), "old")
    b = document(lay_out(old, 64, 27, hyphenate=True, footer=True), "new")
    assert len(b.pages) != len(a.pages)
    assert compare_documents(a, b).changes == []
    assert "No changes" in redline(compare_documents(a, b))
    assert "no changes" in explain_question(compare_documents(a, b))


PARAGRAPHS = [
    "Supply agreement",
    "Definitions",
    "The Buyer means ACME Corp. The Supplier means Example Ltd.",
    "Goods are widgets of the kind described in the schedule.",
    "Payment terms",
    "Invoices are due within 30 days of delivery. Late payments carry interest at 5% a year.",
    "Either party may terminate this agreement with ninety days' notice in writing.",
]


@pytest.fixture
def pdf_version(tmp_path: Path) -> Path:
    import textwrap

    lines = [line for p in PARAGRAPHS for line in textwrap.wrap(p, 38)]
    return write_pdf(tmp_path / "same.pdf", [lines[:7], lines[7:]], title="Supply agreement")


def test_pdf_against_docx_and_markdown_of_the_same_text_is_no_change(
    tmp_path: Path, pdf_version: Path
) -> None:
    import docx

    d = docx.Document()
    d.add_heading(PARAGRAPHS[0], 0)
    d.add_heading(PARAGRAPHS[1], 1)
    d.add_paragraph(PARAGRAPHS[2])
    d.add_paragraph(PARAGRAPHS[3], style="List Bullet")
    d.add_heading(PARAGRAPHS[4], 1)
    for p in PARAGRAPHS[5:]:
        d.add_paragraph(p)
    d.save(str(tmp_path / "same.docx"))
    md = tmp_path / "same.md"
    md.write_text(
        f"# {PARAGRAPHS[0]}\n\n## {PARAGRAPHS[1]}\n\n{PARAGRAPHS[2]}\n\n- {PARAGRAPHS[3]}\n\n"
        f"## {PARAGRAPHS[4]}\n\n" + "\n\n".join(PARAGRAPHS[5:]) + "\n",
        encoding="utf-8",
    )
    pdf = extract(pdf_version)
    for other in (extract(tmp_path / "same.docx"), extract(md)):
        assert compare_documents(pdf, other).changes == [], [b.key for b in blocks(other)]
        assert compare_documents(other, pdf).changes == []


def test_a_changed_word_across_kinds_is_one_change(tmp_path: Path, pdf_version: Path) -> None:
    md = tmp_path / "changed.md"
    text = "\n\n".join(PARAGRAPHS).replace("30 days", "45 days")
    md.write_text(text + "\n", encoding="utf-8")
    [change] = compare_documents(extract(pdf_version), extract(md)).changes
    assert change.kind is ChangeKind.CHANGED
    assert (change.deleted, change.inserted) == (("30",), ("45",))


def test_transcript_lines_are_blocks_with_their_times(tmp_path: Path) -> None:
    from tests.support.documents import MEETING_VTT

    (tmp_path / "a.vtt").write_text(MEETING_VTT, encoding="utf-8")
    changed = MEETING_VTT.replace("half.", "a third.")
    (tmp_path / "b.vtt").write_text(changed, encoding="utf-8")
    [change] = compare_documents(extract(tmp_path / "a.vtt"), extract(tmp_path / "b.vtt")).changes
    assert (change.old_anchor, change.new_anchor) == ("A 00:05:12", "B 00:05:12")
    assert change.inserted == ("a third.",) and change.deleted == ("half.",)
