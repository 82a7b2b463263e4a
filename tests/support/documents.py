"""Test documents written on demand (never committed): a meeting as WebVTT and SRT, a contract."""

from __future__ import annotations

from pathlib import Path

from tests.support.pdf_maker import write_pdf

# A short contract as (label, text) pages: a preface and contents labelled i, ii, then 1-3.
CONTRACT_PAGES = [
    ("i", "Preface. This contract is between Alpha Ltd and Beta GmbH."),
    ("ii", "Contents: definitions, term, termination, liability."),
    ("1", "Definitions. Services means the consulting described in Annex A."),
    ("2", "Term. The agreement runs for 24 months from the effective date."),
    ("3", "Liability is capped at EUR 2,000,000 except for gross negligence."),
]

MEETING_VTT = """\
WEBVTT - Budget review

NOTE written by the meeting recorder

00:00:01.000 --> 00:00:04.000
<v Alice>Welcome everyone, thanks for coming.</v>

00:00:08.000 --> 00:00:12.000
<v Bob>I have the numbers for the second quarter.</v>

00:01:00.000 --> 00:01:03.000
<v Bob>Travel is up twelve percent.

00:05:12.000 --> 00:05:15.000
<v Carol>Then we cut the conference budget by half.

00:41:12.000 --> 00:41:16.000
<v Alice>We agree to revisit hiring in March.
"""

MEETING_SRT = """\
1
00:00:02,000 --> 00:00:05,000
Dana Scully: We found the file in the archive.

2
00:06:10,000 --> 00:06:14,000
Fox Mulder: The truth is out there, somewhere.

3
00:41:12,500 --> 00:41:15,000
Dana Scully: Forty-one minutes in, we close the case.
"""


def meeting_vtt(path: Path) -> Path:
    """A WebVTT meeting with voice tags, pages at 00:00:01, 00:05:12 and 00:41:12."""
    path.write_text(MEETING_VTT, encoding="utf-8")
    return path


def meeting_srt(path: Path) -> Path:
    """An SRT with a BOM and CRLF line ends; speakers written "Name: text"."""
    path.write_bytes(b"\xef\xbb\xbf" + MEETING_SRT.replace("\n", "\r\n").encode())
    return path


def contract_docx(path: Path) -> Path:
    """A .docx written by python-docx: title, headings, bullets, a numbered list, a table."""
    import docx  # the test extra; imported here so support code loads without it

    d = docx.Document()
    d.core_properties.title = "Supply agreement"
    d.add_paragraph("Made between ACME and Example Ltd.")
    d.add_heading("Definitions", 1)
    d.add_paragraph("The Buyer means ACME Corp.")
    d.add_paragraph("Goods are widgets", style="List Bullet")
    d.add_paragraph("Services are repairs", style="List Bullet")
    d.add_heading("Payment", 1)
    d.add_heading("4.2 Payment terms", 2)
    d.add_paragraph("Invoices are due within 30 days.")
    d.add_paragraph("Send the invoice", style="List Number")
    d.add_paragraph("Pay the invoice", style="List Number")
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Item", "Price"), ("Widget", "10 EUR"), ("Gadget | XL", "20")]):
        table.cell(r, 0).text = a
        table.cell(r, 1).text = b
    p = d.add_paragraph("Late payments carry interest")
    p.add_run().add_break()
    p.add_run("at 5% a year.")
    d.add_heading("Termination", 1)
    d.add_paragraph("Either party may terminate with notice.")
    d.save(str(path))
    return path


def scanned_pdf(path: Path, corpus: Path) -> Path:
    """A 5-page PDF: the 4 text pages of 004-pdflatex-4-pages, then an image-only page."""
    import pypdfium2 as pdfium

    from desktop.documents.pdf import PDFIUM_LOCK

    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(str(corpus / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"))
        scan = pdfium.PdfDocument(str(corpus / "007-imagemagick-images" / "imagemagick-images.pdf"))
        try:
            pdf.import_pages(scan, [0])
            with open(path, "wb") as out:
                pdf.save(out)
        finally:
            scan.close()
            pdf.close()
    return path


def annual_report_pdf(path: Path) -> Path:
    """A three-page PDF whose pages are labelled i, 1, 2 (a preface, then the report)."""
    return write_pdf(
        path,
        [
            ["Preface. The board met in January."],
            ["Revenue rose to 12 million euros in the year."],
            ["Outlook. Hiring resumes in March."],
        ],
        labels=["i", "1", "2"],
        title="Annual report",
    )


def three_kinds(folder: Path) -> list[Path]:
    """A set of three kinds: the annual report (PDF), a Word contract, a meeting (WebVTT)."""
    return [
        annual_report_pdf(folder / "report.pdf"),
        contract_docx(folder / "contract.docx"),
        meeting_vtt(folder / "meeting.vtt"),
    ]
