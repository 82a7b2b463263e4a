"""Write small PDFs with chosen text, page labels, metadata, form fields and annotations,
for tests and benchmarks (no dependencies)."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path


def pdf_string(text: str) -> bytes:
    """A PDF literal string: parentheses and backslashes escaped, control bytes as octal."""
    out = bytearray(b"(")
    for byte in text.encode("latin-1"):
        if byte in b"()\\":
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte > 0x7E:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b")")


def write_pdf(
    path: Path,
    pages: list[list[str]],
    *,
    labels: list[str] | None = None,
    title: str | None = None,
) -> Path:
    """A PDF with one text line per entry of each page, optional /PageLabels prefixes
    (one per page, used verbatim as the printed label) and an /Info /Title."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    page_ids: list[int] = []
    pages_id = len(pages) * 2 + 2  # reserved: after every page and its content stream
    for lines in pages:
        ops = [b"BT /F1 11 Tf 14 TL 72 740 Td"]
        for line in lines:
            ops.append(pdf_string(line) + b" Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
                % (pages_id, font, content)
            )
        )
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))) == pages_id
    catalog = b"<< /Type /Catalog /Pages %d 0 R" % pages_id
    if labels:
        nums = b" ".join(b"%d << /P %s >>" % (i, pdf_string(lab)) for i, lab in enumerate(labels))
        catalog += b" /PageLabels << /Nums [%s] >>" % nums
    root = add(catalog + b" >>")
    info = add(b"<< /Title %s >>" % pdf_text(title)) if title is not None else None
    return write_objects(path, objects, root, info)


def write_objects(path: Path, objects: list[bytes], root: int, info: int | None = None) -> Path:
    """Write a PDF of these numbered objects (1-based): the cross-reference table, and a
    trailer naming the catalog ``root`` (and the ``info`` dictionary)."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, root)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n%s >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, xref)
    path.write_bytes(bytes(out))
    return path


def pdf_text(text: str) -> bytes:
    """A PDF text string: a literal when it is plain ASCII, else UTF-16BE hex with a BOM."""
    if text.isascii():
        return pdf_string(text)
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


@dataclass(frozen=True)
class Field:
    """A form field with one widget (a radio group: one widget per entry of ``options``).

    ``kind``: ``text``, ``check``, ``radio``, ``combo``, ``list`` or ``signature``;
    ``rect`` is (left, bottom, right, top) in points; ``value`` a text or chosen option
    (for ``list``, ``;``-separated); ``checked`` a check box's state; for a radio group
    ``rects`` hold one box per option and ``value`` names the chosen one.
    """

    kind: str
    name: str
    rect: tuple[float, float, float, float]
    value: str = ""
    tooltip: str = ""
    checked: bool = False
    options: tuple[str, ...] = ()
    rects: tuple[tuple[float, float, float, float], ...] = ()
    hidden: bool = False
    appearance: str = ""  # text drawn in the widget's appearance (signatures)


@dataclass(frozen=True)
class Comment:
    """An annotation with text: ``subtype`` Text (sticky note), FreeText, Highlight..."""

    subtype: str
    rect: tuple[float, float, float, float]
    contents: str
    author: str = ""
    rich: str = ""  # /RC (XHTML rich text)
    appearance: str = ""  # text drawn in its appearance stream


@dataclass(frozen=True)
class TextLine:
    """A line of page text drawn at (x, y) in 11 pt Helvetica."""

    x: float
    y: float
    text: str


@dataclass
class FormPage:
    """One page of a form: text lines, fields and comments."""

    lines: list[TextLine] = dataclass_field(default_factory=list)
    fields: list[Field] = dataclass_field(default_factory=list)
    comments: list[Comment] = dataclass_field(default_factory=list)
    broken: bool = False  # the page object is damaged (PDFium cannot load it)


def _rect(rect: tuple[float, float, float, float]) -> bytes:
    return b"[%s]" % b" ".join(b"%g" % v for v in rect)


def write_form_pdf(path: Path, pages: list[FormPage], *, title: str | None = None) -> Path:
    """A PDF with AcroForm fields, annotations and text lines at chosen places."""
    objects: list[bytes | None] = []

    def reserve() -> int:
        objects.append(None)
        return len(objects)

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def stream(data: bytes, head: bytes = b"") -> int:
        return add(b"<< %s /Length %d >>\nstream\n%s\nendstream" % (head, len(data), data))

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = reserve()
    fields: list[int] = []
    page_ids: list[int] = []
    for page in pages:
        page_id = reserve()
        ops = [b"BT /F1 11 Tf"]
        for line in page.lines:
            ops.append(b"1 0 0 1 %g %g Tm %s Tj" % (line.x, line.y, pdf_string(line.text)))
        ops.append(b"ET")
        content = stream(b"\n".join(ops))
        annots: list[int] = []
        for f in page.fields:
            flags = 2 if f.hidden else 4
            common = b"/Type /Annot /Subtype /Widget /P %d 0 R /F %d" % (page_id, flags)
            tip = b" /TU %s" % pdf_text(f.tooltip) if f.tooltip else b""
            box = b"BT /F1 9 Tf 2 2 Td %s Tj ET" % pdf_string(f.appearance or f.value)
            form_head = (
                b"/Type /XObject /Subtype /Form /BBox [0 0 %g %g] /Resources << /Font << /F1 %d 0 R"
                b" >> >>" % (f.rect[2] - f.rect[0], f.rect[3] - f.rect[1], font)
            )
            if f.kind == "radio":
                parent = reserve()
                kids = []
                for option, rect in zip(f.options, f.rects, strict=True):
                    on = stream(b"0 g 2 2 6 6 re f", b"/Type /XObject /BBox [0 0 10 10]")
                    off = stream(b"", b"/Type /XObject /BBox [0 0 10 10]")
                    state = option.replace(" ", "#20").encode()
                    chosen = state if option == f.value else b"Off"
                    kids.append(
                        add(
                            b"<< %s /Parent %d 0 R /Rect %s /AS /%s /AP << /N << /%s %d 0 R "
                            b"/Off %d 0 R >> >> >>"
                            % (common, parent, _rect(rect), chosen, state, on, off)
                        )
                    )
                value = f.value.replace(" ", "#20").encode() if f.value else b"Off"
                objects[parent - 1] = b"<< /FT /Btn /Ff 49152 /T %s%s /V /%s /Kids [%s] >>" % (
                    pdf_text(f.name),
                    tip,
                    value,
                    b" ".join(b"%d 0 R" % k for k in kids),
                )
                fields.append(parent)
                annots.extend(kids)
                continue
            if f.kind == "check":
                on = stream(b"0 g 2 2 6 6 re f", b"/Type /XObject /BBox [0 0 10 10]")
                off = stream(b"", b"/Type /XObject /BBox [0 0 10 10]")
                state = b"Yes" if f.checked else b"Off"
                specific = b"/FT /Btn /V /%s /AS /%s /AP << /N << /Yes %d 0 R /Off %d 0 R >> >>" % (
                    state,
                    state,
                    on,
                    off,
                )
            elif f.kind in ("combo", "list"):
                opts = b" ".join(pdf_text(o) for o in f.options)
                chosen = [v for v in f.value.split(";") if v]
                if f.kind == "combo":
                    value = pdf_text(f.value)
                    ff = 131072
                else:
                    value = b"[%s]" % b" ".join(pdf_text(v) for v in chosen)
                    ff = 2097152
                    indices = b" ".join(b"%d" % f.options.index(v) for v in chosen)
                    value += b" /I [%s]" % indices
                specific = b"/FT /Ch /Ff %d /Opt [%s] /V %s /DA (/Helv 9 Tf 0 g)" % (
                    ff,
                    opts,
                    value,
                )
            elif f.kind == "signature":
                ap = stream(b"BT /F1 8 Tf 2 12 Td %s Tj ET" % pdf_string(f.appearance), form_head)
                specific = b"/FT /Sig /AP << /N %d 0 R >>" % ap
            else:
                ap = stream(box, form_head)
                specific = b"/FT /Tx /V %s /DA (/Helv 9 Tf 0 g) /AP << /N %d 0 R >>" % (
                    pdf_text(f.value),
                    ap,
                )
            widget = add(
                b"<< %s /T %s%s /Rect %s %s >>"
                % (common, pdf_text(f.name), tip, _rect(f.rect), specific)
            )
            fields.append(widget)
            annots.append(widget)
        for c in page.comments:
            author = b" /T %s" % pdf_text(c.author) if c.author else b""
            extra = b" /DA (/Helv 10 Tf 0 g)" if c.subtype == "FreeText" else b""
            if c.subtype == "Highlight":
                left, bottom, right, top = c.rect
                extra = b" /QuadPoints [%g %g %g %g %g %g %g %g]" % (
                    left,
                    top,
                    right,
                    top,
                    left,
                    bottom,
                    right,
                    bottom,
                )
            if c.rich:
                extra += b" /RC %s" % pdf_text(c.rich)
            if c.appearance:
                ap = stream(
                    b"BT /F1 9 Tf 2 4 Td %s Tj ET" % pdf_string(c.appearance),
                    b"/Type /XObject /Subtype /Form /BBox [0 0 %g %g] /Resources << /Font << "
                    b"/F1 %d 0 R >> >>" % (c.rect[2] - c.rect[0], c.rect[3] - c.rect[1], font),
                )
                extra += b" /AP << /N %d 0 R >>" % ap
            contents = b" /Contents %s" % pdf_text(c.contents) if c.contents else b""
            annots.append(
                add(
                    b"<< /Type /Annot /Subtype /%s /Rect %s%s%s%s /F 4 >>"
                    % (c.subtype.encode(), _rect(c.rect), contents, author, extra)
                )
            )
        annot_list = b" /Annots [%s]" % b" ".join(b"%d 0 R" % a for a in annots) if annots else b""
        if page.broken:
            # A page whose contents and resources are not what PDFium can load.
            objects[page_id - 1] = b"(damaged page)"
        else:
            objects[page_id - 1] = (
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R%s >>"
                % (pages_id, font, content, annot_list)
            )
        page_ids.append(page_id)
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    catalog = b"<< /Type /Catalog /Pages %d 0 R" % pages_id
    if fields:
        helv = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
        catalog += b" /AcroForm << /Fields [%s] /DR << /Font << /Helv %d 0 R >> >> >>" % (
            b" ".join(b"%d 0 R" % f for f in fields),
            helv,
        )
    root = add(catalog + b" >>")
    info = add(b"<< /Title %s >>" % pdf_text(title)) if title is not None else None
    assert all(body is not None for body in objects)
    return write_objects(path, [body for body in objects if body is not None], root, info)


def filled_form(number: int) -> FormPage:
    """A page of a filled application form (label, value) with every kind of field."""
    y = 740.0
    page = FormPage()
    page.lines.append(TextLine(72, y, f"Application form, part {number}"))
    rows = [
        ("First name:", "first_name", "Lucía"),
        ("Last name:", "last_name", "Garzas Ortega"),
        ("Street:", "street", f"Calle Mayor {number}"),
        ("City:", "city", "Zaragoza"),
        ("Policy number:", "policy", f"PX-{number:04d}-77"),
        ("Insured amount:", "amount", f"{number * 1000 + 250} EUR"),
    ]
    for label, name, value in rows:
        y -= 24
        page.lines.append(TextLine(72, y, label))
        page.fields.append(Field("text", f"{name}_{number}", (180, y - 3, 400, y + 10), value))
    y -= 24
    page.lines.append(TextLine(72, y, "Country:"))
    page.fields.append(
        Field("combo", "country", (180, y - 3, 300, y + 10), "Spain", options=("France", "Spain"))
    )
    y -= 24
    page.lines.append(TextLine(92, y, "I accept the terms"))
    page.fields.append(Field("check", "I accept", (72, y - 2, 84, y + 10), checked=True))
    y -= 24
    page.lines.append(TextLine(92, y, "I decline the offer"))
    page.fields.append(Field("check", "I decline", (72, y - 2, 84, y + 10), checked=False))
    y -= 24
    page.lines.append(TextLine(72, y, "Payment:"))
    page.fields.append(
        Field(
            "radio",
            "payment",
            (0, 0, 0, 0),
            "Monthly",
            options=("Yearly", "Monthly"),
            rects=((150, y - 2, 162, y + 10), (250, y - 2, 262, y + 10)),
        )
    )
    # The small print a real form page carries (a page of a form is mostly text).
    for k in range(28):
        y -= 15
        page.lines.append(
            TextLine(
                72,
                y,
                f"Clause {number}.{k + 1}: the insurer pays within thirty days of a claim "
                f"made under section {k + 3}, less the excess agreed above.",
            )
        )
    return page


def write_content_pdf(path: Path, pages: list[list[bytes]]) -> Path:
    """A PDF whose pages are the given content-stream operators (Helvetica as /F1)."""
    objects: list[bytes] = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    page_ids = []
    pages_id = 2 + 2 * len(pages)
    for ops in pages:
        stream = b"\n".join(ops)
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 1 0 R >> >> /Contents %d 0 R >>" % (pages_id, len(objects))
        )
        page_ids.append(len(objects))
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids)))
    objects.append(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    return write_objects(path, objects, root=len(objects))
