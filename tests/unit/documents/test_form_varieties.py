"""Form structures as real producers write them, and hostile ones (issue 19): every value
a viewer shows reaches the page text, and no form stops an ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.documents import extract
from tests.support.cli import longdoc
from tests.unit.documents.form_recall import recall, words
from tests.unit.documents.form_varieties import hostile, orphan_widgets, varieties, xfa_only


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[int, list[str]]]:
    path, expect = varieties(tmp_path_factory.mktemp("forms") / "varieties.pdf")
    return [page.text for page in extract(path).pages], expect


@pytest.mark.parametrize("page", range(1, 10))
def test_every_structure_shows_its_values(
    varied: tuple[list[str], dict[int, list[str]]], page: int
) -> None:
    texts, expect = varied
    assert all(word in texts[page - 1] for word in expect[page]), texts[page - 1]


def test_what_each_structure_shows(varied: tuple[list[str], dict[int, list[str]]]) -> None:
    texts, _ = varied
    # The value on the parent field, the widget a nameless kid: the parent's name.
    assert texts[0] == "Full name: [Field: name] Lucía Garzas"
    # A value drawn only in the appearance stream is read from it.
    assert texts[1] == "City: [Field: city] Zaragoza"
    # An option pair shows its display text, with the export value /V holds.
    assert texts[2] == "Country: [Field: country] Spain (ES)"
    # Numbered radio states stand for the field's /Opt entries.
    assert texts[3] == "Payment: ☐ payment ☒ payment: Monthly"
    # A German "Ja" on-state says no more than the mark.
    assert texts[4] == "☒ I agree to the terms Terms"
    # PDFDocEncoding (\351 is é) and \r line breaks.
    assert texts[5] == "Remarks: [Field: remarks] Caé noir\nSecond line"
    # A comb field's digits; a hidden field (/F 2) shows nothing, as in a viewer.
    assert texts[6] == "Postcode: [Field: zip] 502340"
    # A quarter-turned page places its value; a widget outside the crop box is kept.
    assert texts[7] == "Amount: [Field: amount] 1250 EUR\n[Field: offpage] Beyondcrop"
    # Notes: the popup adds nothing of its own, rich text only is read, stamps and shapes.
    assert texts[8].splitlines()[1:] == [
        "[Note: J. Smith] Check the liability cap",
        "[Text box] Approved by legal",
        "[Note] Stamped approved",
        "[Note] Zone à revoir",
    ]


def test_widgets_of_a_pdf_without_an_acroform_are_read(tmp_path: Path) -> None:
    path, _ = orphan_widgets(tmp_path / "orphans.pdf")
    assert extract(path).pages[0].text == "Insurer: [Field: insurer] Mapfre Seguros"


def test_the_recall_harness_finds_every_word(tmp_path: Path) -> None:
    path, _ = varieties(tmp_path / "varieties.pdf")
    result = recall(path)
    assert result.values == 11 and result.notes == 9  # the words pypdf reads there
    assert result.missing == [] and result.value_recall == result.note_recall == 1.0
    assert words("Caé noir\rX") == ["caé", "noir", "x"]


def test_a_hostile_form_is_read_without_a_traceback(tmp_path: Path) -> None:
    text = extract(hostile(tmp_path / "hostile.pdf")).pages[0].text
    assert text.startswith("Hostile form\n")
    assert "[Field: loop1] circle" in text  # a cycle of parents is cut, not followed
    assert "[Field: huge] word word" in text and len(text) < 10_000  # a value is bounded


def test_a_hostile_form_does_not_stop_a_multi_file_ingest(tmp_path: Path) -> None:
    bad = hostile(tmp_path / "hostile.pdf")
    good = tmp_path / "notes.txt"
    good.write_text("The cap is two million.\n")
    result = longdoc("ingest", str(bad), str(good), "--json", home=tmp_path / "home")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.count('"sha256"') == 2


def test_an_xfa_forms_values_are_listed_on_its_first_page(tmp_path: Path) -> None:
    doc = extract(xfa_only(tmp_path / "xfa.pdf"))
    assert doc.pages[0].text.splitlines() == [
        "Please wait... this form needs Adobe Reader.",
        "[Field: FirstName] Lucía",
        "[Field: LastName] Garzas",
        "[Field: Country] Spain",
    ]
    assert doc.warnings == [
        "the PDF is an XFA form: its 3 filled-in values are listed after the first page's"
        " text, not where they appear"
    ]


def test_damaged_or_hostile_xfa_data_is_left_out(tmp_path: Path) -> None:
    bomb = b'<!DOCTYPE x [<!ENTITY a "aaaa">]><xfa:datasets>&a;</xfa:datasets>'
    for n, datasets in enumerate((b"<unclosed><a>1</a>", bomb)):
        doc = extract(xfa_only(tmp_path / f"x{n}.pdf", datasets))
        assert doc.pages[0].text == "Please wait... this form needs Adobe Reader."
        assert doc.warnings == []
