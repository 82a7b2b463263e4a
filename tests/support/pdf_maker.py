"""Write small PDFs with chosen text, page labels and metadata, for tests (no dependencies)."""

from __future__ import annotations

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
    info = add(b"<< /Title %s >>" % pdf_string(title)) if title is not None else None
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
