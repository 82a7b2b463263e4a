"""PDFs written object by object, for the form structures real producers write (field
hierarchies, values only in appearances, option pairs, rotated pages...) and hostile ones
(cyclic parents, huge kid arrays, broken appearances), which tests/support/pdf_maker's
tidy forms do not make.

``RawPdf`` numbers objects as they are added; ``{name}`` in a body is replaced by the
number of the object added under that name (``{page1} 0 R``), so objects may refer to
ones added after them.
"""

from __future__ import annotations

import re
from pathlib import Path

_REF = re.compile(rb"\{(\w+)\}")


def text_string(text: str) -> bytes:
    """A PDF text string: UTF-16BE hex with a BOM (any text)."""
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


def literal(text: str) -> bytes:
    """A literal string of Latin-1 bytes (PDFDocEncoding for these), escaped."""
    raw = text.encode("latin-1")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def draw_text(x: float, y: float, text: str, size: float = 11) -> bytes:
    """Content-stream operators that draw ``text`` (ASCII) at (x, y) in Helvetica."""
    return b"BT /F1 %g Tf 1 0 0 1 %g %g Tm %s Tj ET" % (size, x, y, literal(text))


class RawPdf:
    """A PDF assembled from object bodies (bytes), with a page tree and a catalog."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.names: dict[str, int] = {}
        self.pages: list[str] = []
        self.font = self.add(
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
            "font",
        )

    def add(self, body: bytes, name: str | None = None) -> int:
        """Add an object; its number (and ``name`` for ``{name}`` references)."""
        self.bodies.append(body)
        number = len(self.bodies)
        if name is not None:
            self.names[name] = number
        return number

    def stream(self, data: bytes, head: bytes = b"", name: str | None = None) -> int:
        """Add a stream object."""
        return self.add(
            b"<< %s /Length %d >>\nstream\n%s\nendstream" % (head, len(data), data), name
        )

    def appearance(self, width: float, height: float, ops: bytes, name: str | None = None) -> int:
        """A form XObject (an appearance stream) drawing ``ops`` with Helvetica as /F1."""
        head = (
            b"/Type /XObject /Subtype /Form /BBox [0 0 %g %g]"
            b" /Resources << /Font << /F1 %d 0 R >> >>"
            % (
                width,
                height,
                self.font,
            )
        )
        return self.stream(ops, head, name)

    def page(
        self,
        name: str,
        content: list[bytes],
        annots: list[str] = (),  # type: ignore[assignment]
        extra: bytes = b"",
    ) -> None:
        """A page drawing ``content``, with the named annotations in /Annots."""
        contents = self.stream(b"\n".join(content))
        refs = b" ".join(b"{%s} 0 R" % a.encode() for a in annots)
        self.add(
            b"<< /Type /Page /Parent {pages} 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R /Annots [%s] %s >>"
            % (self.font, contents, refs, extra),
            name,
        )
        self.pages.append(name)

    def write(
        self, path: Path, acroform: bytes | None = None, info: bytes = b"", catalog: bytes = b""
    ) -> Path:
        """Write the file: ``acroform`` is the AcroForm dictionary's body (None: no form),
        ``catalog`` more of the catalog's entries."""
        kids = b" ".join(b"{%s} 0 R" % p.encode() for p in self.pages)
        self.add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(self.pages)), "pages")
        form = b" /AcroForm << %s >>" % acroform if acroform is not None else b""
        root = self.add(b"<< /Type /Catalog /Pages {pages} 0 R%s %s >>" % (form, catalog))

        def resolve(match: re.Match[bytes]) -> bytes:
            return b"%d" % self.names[match.group(1).decode()]

        out = bytearray(b"%PDF-1.7\n")
        offsets = []
        for number, body in enumerate(self.bodies, start=1):
            offsets.append(len(out))
            out += b"%d 0 obj\n%s\nendobj\n" % (number, _REF.sub(resolve, body))
        xref = len(out)
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(self.bodies) + 1)
        for offset in offsets:
            out += b"%010d 00000 n \n" % offset
        out += b"trailer\n<< /Size %d /Root %d 0 R %s >>\nstartxref\n%d\n%%%%EOF\n" % (
            len(self.bodies) + 1,
            root,
            info,
            xref,
        )
        path.write_bytes(bytes(out))
        return path
