"""Filled forms as real producers write them, one structure a page, and what each page's
value words are (what a viewer shows), for tests and bench/bench_form_recall.py."""

from __future__ import annotations

from pathlib import Path

from tests.unit.documents.raw_pdf import RawPdf, draw_text, literal, text_string

WIDGET = b"/Type /Annot /Subtype /Widget /F 4"


def _ap_text(pdf: RawPdf, width: float, height: float, text: str) -> int:
    """An appearance stream showing ``text`` the way Acrobat writes one (/Tx BMC)."""
    ops = b"/Tx BMC q BT /F1 9 Tf 2 3 Td %s Tj ET Q EMC" % literal(text)
    return pdf.appearance(width, height, ops)


def varieties(path: Path) -> tuple[Path, dict[int, list[str]]]:
    """A PDF with one form structure a page; the value words each page must show."""
    pdf = RawPdf()
    expect: dict[int, list[str]] = {}
    fields: list[str] = []

    # 1. A field hierarchy: the value on the parent, widgets (kids) without names.
    pdf.add(b"<< /T (applicant) /Kids [{name_field} 0 R] >>", "applicant")
    pdf.add(
        b"<< /FT /Tx /T (name) /Parent {applicant} 0 R /V %s /Kids [{name_w} 0 R] >>"
        % text_string("Lucía Garzas"),
        "name_field",
    )
    pdf.add(
        b"<< %s /Parent {name_field} 0 R /P {p1} 0 R /Rect [150 697 400 712] >>" % WIDGET, "name_w"
    )
    fields.append("applicant")
    pdf.page("p1", [draw_text(72, 700, "Full name:")], ["name_w"])
    expect[1] = ["Lucía", "Garzas"]

    # 2. A value only in the appearance stream (no /V): what a viewer shows.
    ap = _ap_text(pdf, 200, 15, "Zaragoza")
    pdf.add(
        b"<< %s /FT /Tx /T (city) /P {p2} 0 R /Rect [150 697 350 712] /AP << /N %d 0 R >> >>"
        % (WIDGET, ap),
        "city",
    )
    fields.append("city")
    pdf.page("p2", [draw_text(72, 700, "City:")], ["city"])
    expect[2] = ["Zaragoza"]

    # 3. A choice with [export display] pairs: /V holds the export value.
    pdf.add(
        b"<< %s /FT /Ch /Ff 131072 /T (country) /P {p3} 0 R /Rect [150 697 350 712]"
        b" /Opt [[(FR) (France)] [(ES) (Spain)]] /V (ES) /DA (/Helv 9 Tf 0 g) >>" % WIDGET,
        "country",
    )
    fields.append("country")
    pdf.page("p3", [draw_text(72, 700, "Country:")], ["country"])
    expect[3] = ["Spain"]

    # 4. A radio group whose states are indices into /Opt (Acrobat's export values).
    on = pdf.appearance(10, 10, b"0 g 2 2 6 6 re f")
    off = pdf.appearance(10, 10, b"")
    for i, x in enumerate((150, 250)):
        pdf.add(
            b"<< %s /Parent {payment} 0 R /P {p4} 0 R /Rect [%d 697 %d 709] /AS /%s"
            b" /AP << /N << /%d %d 0 R /Off %d 0 R >> >> >>"
            % (WIDGET, x, x + 12, b"1" if i == 1 else b"Off", i, on, off),
            f"radio{i}",
        )
    pdf.add(
        b"<< /FT /Btn /Ff 49152 /T (payment) /V /1 /Opt [(Yearly) (Monthly)]"
        b" /Kids [{radio0} 0 R {radio1} 0 R] >>",
        "payment",
    )
    fields.append("payment")
    pdf.page("p4", [draw_text(72, 700, "Payment:")], ["radio0", "radio1"])
    expect[4] = ["Monthly"]

    # 5. A check box whose on-state is not "Yes".
    pdf.add(
        b"<< %s /FT /Btn /T (agree) /TU (I agree to the terms) /P {p5} 0 R /Rect [72 697 84 709]"
        b" /V /Ja /AS /Ja /AP << /N << /Ja %d 0 R /Off %d 0 R >> >> >>" % (WIDGET, on, off),
        "agree",
    )
    fields.append("agree")
    pdf.page("p5", [draw_text(92, 700, "Terms")], ["agree"])
    expect[5] = ["☒"]

    # 6. /DA only, no appearance (NeedAppearances): a PDFDocEncoding value with \r lines.
    pdf.add(
        b"<< %s /FT /Tx /Ff 4096 /T (remarks) /P {p6} 0 R /Rect [150 600 500 712]"
        b" /DA (/Helv 9 Tf 0 g)"
        b" /V (Ca\\351 noir\\rSecond line) >>" % WIDGET,
        "remarks",
    )
    fields.append("remarks")
    pdf.page("p6", [draw_text(72, 700, "Remarks:")], ["remarks"])
    expect[6] = ["Caé", "noir", "Second", "line"]

    # 7. A comb field (digits in cells) and a hidden field (a viewer shows nothing).
    pdf.add(
        b"<< %s /FT /Tx /Ff 16777216 /MaxLen 6 /T (zip) /P {p7} 0 R /Rect [150 697 270 712]"
        b" /V (502340) >>" % WIDGET,
        "zip",
    )
    pdf.add(
        b"<< /Type /Annot /Subtype /Widget /F 2 /FT /Tx /T (internal) /P {p7} 0 R"
        b" /Rect [150 600 270 612] /V (secretcode) >>",
        "internal",
    )
    fields += ["zip", "internal"]
    pdf.page("p7", [draw_text(72, 700, "Postcode:")], ["zip", "internal"])
    expect[7] = ["502340"]

    # 8. A page turned a quarter (/Rotate 90), and a widget outside the crop box.
    pdf.add(
        b"<< %s /FT /Tx /T (amount) /P {p8} 0 R /Rect [150 697 300 712] /V (1250 EUR) >>" % WIDGET,
        "amount",
    )
    pdf.add(
        b"<< %s /FT /Tx /T (offpage) /P {p8} 0 R /Rect [700 100 800 112] /V (Beyondcrop) >>"
        % WIDGET,
        "offpage",
    )
    fields += ["amount", "offpage"]
    pdf.page(
        "p8",
        [draw_text(72, 700, "Amount:")],
        ["amount", "offpage"],
        b"/Rotate 90 /CropBox [0 0 612 792]",
    )
    expect[8] = ["1250", "EUR", "Beyondcrop"]

    # 9. Notes: a sticky note, rich text only, a stamp's and a square's comments.
    pdf.add(
        b"<< /Type /Annot /Subtype /Text /Rect [400 690 420 710] /F 4 /T (J. Smith)"
        b" /Contents (Check the liability cap) /Popup {popup} 0 R >>",
        "note",
    )
    pdf.add(
        b"<< /Type /Annot /Subtype /Popup /Rect [420 600 600 700] /Parent {note} 0 R >>", "popup"
    )
    pdf.add(
        b"<< /Type /Annot /Subtype /FreeText /Rect [72 600 300 640] /F 4 /DA (/Helv 10 Tf 0 g)"
        b' /RC (<?xml version="1.0"?><body><p>Approved by <b>legal</b></p></body>) >>',
        "rich",
    )
    pdf.add(
        b"<< /Type /Annot /Subtype /Stamp /Rect [300 500 400 540] /F 4 /Name /Approved"
        b" /Contents (Stamped approved) >>",
        "stamp",
    )
    pdf.add(
        b"<< /Type /Annot /Subtype /Square /Rect [72 400 200 450] /F 4 /Contents %s >>"
        % text_string("Zone à revoir"),
        "square",
    )
    pdf.page(
        "p9",
        [draw_text(72, 700, "Clause 4: the liability cap is two million.")],
        ["note", "popup", "rich", "stamp", "square"],
    )
    expect[9] = [
        "Check",
        "liability",
        "cap",
        "Approved",
        "legal",
        "Stamped",
        "approved",
        "Zone",
        "à",
        "revoir",
    ]

    refs = b" ".join(b"{%s} 0 R" % f.encode() for f in fields)
    pdf.write(path, acroform=b"/Fields [%s] /NeedAppearances true /DA (/Helv 0 Tf 0 g)" % refs)
    return path, expect


def orphan_widgets(path: Path) -> tuple[Path, dict[int, list[str]]]:
    """Widgets with values in a PDF without an AcroForm (some producers leave it out)."""
    pdf = RawPdf()
    pdf.add(
        b"<< %s /FT /Tx /T (insurer) /P {p1} 0 R /Rect [150 697 400 712] /V (Mapfre Seguros) >>"
        % WIDGET,
        "insurer",
    )
    pdf.page("p1", [draw_text(72, 700, "Insurer:")], ["insurer"])
    return pdf.write(path), {1: ["Mapfre", "Seguros"]}


def hostile(path: Path, kids: int = 50_000) -> Path:
    """A form a careless or hostile producer wrote: appearances that are not streams or
    do not parse, parents that point in a circle, a field with ``kids`` kids, values of
    the wrong type, a huge value, options that are not strings, a widget without /Rect."""
    pdf = RawPdf()
    names: list[str] = []

    def widget(name: str, body: bytes) -> None:
        pdf.add(b"<< %s /P {p1} 0 R %s >>" % (WIDGET, body), name)
        names.append(name)

    widget("broken_ap", b"/FT /Tx /T (a) /Rect [100 700 200 712] /AP << /N 12 >>")
    garbage = pdf.stream(
        b"BT /F9 Tf (unterminated Tj ET ] >> [[[",
        b"/Type /XObject /Subtype /Form /BBox [0 0 -5 1e40]",
    )
    widget("garbage_ap", b"/FT /Tx /T (b) /Rect [100 680 200 692] /AP << /N %d 0 R >>" % garbage)
    # Two fields each the other's parent, and a widget under them.
    pdf.add(
        b"<< /FT /Tx /T (loop1) /Parent {loop2} 0 R /Kids [{loop2} 0 R {cyclic} 0 R]"
        b" /V (circle) >>",
        "loop1",
    )
    pdf.add(b"<< /FT /Tx /T (loop2) /Parent {loop1} 0 R /Kids [{loop1} 0 R] >>", "loop2")
    pdf.add(b"<< %s /P {p1} 0 R /Parent {loop1} 0 R /Rect [100 660 200 672] >>" % WIDGET, "cyclic")
    names.append("cyclic")
    # A field with a huge /Kids array (all the same widget, and dangling references).
    refs = b" ".join(b"{many_w} 0 R" if i % 2 else b"99999 0 R" for i in range(kids))
    pdf.add(b"<< /FT /Tx /T (many) /V (crowd) /Kids [%s] >>" % refs, "many")
    pdf.add(b"<< %s /P {p1} 0 R /Parent {many} 0 R /Rect [100 640 200 652] >>" % WIDGET, "many_w")
    names.append("many_w")
    widget(
        "wrong_types",
        b"/FT /Tx /T 42 /TU << /A 1 >> /Rect [100 620 200 632] /V << /X (y) >> /Ff (x)",
    )
    widget(
        "huge_value", b"/FT /Tx /T (huge) /Rect [100 600 200 612] /V (%s)" % (b"word " * 200_000)
    )
    widget(
        "bad_opts",
        b"/FT /Ch /Ff 131072 /T (c) /Rect [100 580 200 592] /Opt [1 [2] [(x)] << >>]"
        b" /V (x) /I [-5 99999]",
    )
    widget(
        "bad_radio",
        b"/FT /Btn /Ff 49152 /T (r) /Rect [100 560 200 572] /AS /99999999999999999999 /Opt [(a)]",
    )
    widget("no_rect", b"/FT /Tx /T (norect) /V (unplaced value)")
    pdf.add(
        b"<< /Type /Annot /Subtype /Text /Rect [1e39 -1e39 nan 5] /Contents <FEFFD800> /T 7 >>",
        "bad_note",
    )
    names.append("bad_note")
    pdf.page("p1", [draw_text(72, 700, "Hostile form")], names)
    field_refs = b" ".join(
        b"{%s} 0 R" % n.encode()
        for n in (
            "broken_ap",
            "garbage_ap",
            "loop1",
            "many",
            "wrong_types",
            "huge_value",
            "bad_opts",
            "bad_radio",
            "no_rect",
        )
    )
    return pdf.write(path, acroform=b"/Fields [%s] /NeedAppearances true" % field_refs)


XFA_DATASETS = (
    b'<xfa:datasets xmlns:xfa="http://www.xfa.org/schema/xfa-data/1.0/"><xfa:data>'
    b"<form1><Applicant><FirstName>Luc\xc3\xada</FirstName><LastName>Garzas</LastName>"
    b"</Applicant><Country>Spain</Country><Empty/></form1></xfa:data>"
    b'<dd:dataDescription xmlns:dd="http://ns.adobe.com/data-description/">x'
    b"</dd:dataDescription></xfa:datasets>"
)


def xfa_only(path: Path, datasets: bytes = XFA_DATASETS) -> Path:
    """A dynamic XFA form as LiveCycle writes one: a "Please wait" page, the values in the
    datasets packet, no AcroForm fields."""
    pdf = RawPdf()
    template = pdf.stream(b'<template xmlns="http://www.xfa.org/schema/xfa-template/3.3/"/>')
    data = pdf.stream(datasets)
    pdf.page("p1", [draw_text(72, 700, "Please wait... this form needs Adobe Reader.")])
    return pdf.write(
        path,
        acroform=b"/Fields [] /XFA [(template) %d 0 R (datasets) %d 0 R]" % (template, data),
        catalog=b"/NeedsRendering true",
    )
