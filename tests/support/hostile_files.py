"""Hostile documents, made on the spot (tests and ``bench/bench_hostile.py``): what a
counterparty could send to exhaust memory or crash a reader (issue 20 items 6 and 7)."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from tests.support.documents import contract_docx
from tests.support.pdf_maker import write_objects

GIB = 1 << 30


def sparse_text(path: Path, size: int = GIB, suffix_text: bytes = b"") -> Path:
    """A text file of ``size`` bytes that takes no disk (a hole, then ``suffix_text``)."""
    with open(path, "wb") as fh:
        fh.truncate(size - len(suffix_text))
        fh.seek(size - len(suffix_text))
        fh.write(suffix_text)
    return path


def big_text(path: Path, size: int) -> Path:
    """A real text file of ``size`` bytes (sentences, no NUL bytes)."""
    line = b"The quick brown fox pays the invoice within thirty days of receipt.\n"
    with open(path, "wb") as fh:
        block = line * (1 << 20 // len(line) + 1)
        written = 0
        while written < size:
            piece = block[: size - written]
            fh.write(piece)
            written += len(piece)
    return path


def transcript_with_absurd_hour(path: Path) -> Path:
    """A WebVTT file whose second cue's hour has 400 digits."""
    hour = "9" * 400
    path.write_text(
        "WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Alice>We agree on the fee.\n\n"
        f"{hour}:00:01.000 --> {hour}:00:04.000\n<v Bob>Then we sign.\n\n"
        "00:00:09.000 --> 00:00:12.000\n<v Alice>Good.\n",
        encoding="utf-8",
    )
    return path


def _docx_with(path: Path, replace: Callable[[str, bytes], bytes | None]) -> Path:
    """A real .docx (tests.support.documents) with parts rewritten by ``replace``."""
    source = contract_docx(path.with_name(path.stem + "-base.docx"))
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = replace(info.filename, src.read(info))
            if data is not None:
                out.writestr(info.filename, data)
    source.unlink()
    return path


def docx_deflate_bomb(path: Path, inflated: int = 460 * (1 << 20)) -> Path:
    """A .docx whose word/document.xml inflates to ``inflated`` bytes (~460 KB packed)."""
    head = (
        b'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.'
        b'openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
    )
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    rels = (
        b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        b'package/2006/relationships"><Relationship Id="r1" Type="http://schemas.'
        b"openxmlformats.org/officeDocument/2006/relationships/officeDocument"
        b'" Target="word/document.xml"/></Relationships>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        out.writestr("[Content_Types].xml", b'<?xml version="1.0"?><Types/>')
        out.writestr("_rels/.rels", rels)
        # Streamed: the generator never holds the inflated part either.
        with out.open("word/document.xml", "w", force_zip64=True) as fh:
            fh.write(head)
            filler = b"a" * (1 << 20)
            remaining = inflated - len(head) - len(tail)
            while remaining > 0:
                fh.write(filler[:remaining])
                remaining -= len(filler)
            fh.write(tail)
    return path


_ENTITY_BOMB = (
    '<!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
    + "]>"
)


def docx_doctype_after_comment(path: Path) -> Path:
    """A .docx whose document.xml declares an entity bomb after a 5 KB comment."""
    return _docx_bomb(path, lambda decl: decl + "<!--" + "x" * 5000 + "-->", "utf-8")


def docx_doctype_utf16(path: Path) -> Path:
    """A .docx whose document.xml is UTF-16 and declares an entity bomb at its start."""
    head = '<?xml version="1.0" encoding="UTF-16" standalone="yes"?>'
    return _docx_bomb(path, lambda _decl: head, "utf-16")


def _docx_bomb(path: Path, head: Callable[[str], str], encoding: str) -> Path:
    """A .docx whose document.xml declares ``_ENTITY_BOMB`` after ``head(its XML
    declaration)`` and uses it in its first text run, written in ``encoding``."""

    def replace(name: str, data: bytes) -> bytes:
        if name != "word/document.xml":
            return data
        text = data.decode("utf-8")
        decl_end = text.index("?>") + 2
        body = text[decl_end:].replace("<w:t>", "<w:t>&i;", 1)
        return (head(text[:decl_end]) + _ENTITY_BOMB + body).encode(encoding)

    return _docx_with(path, replace)


def pdf_flate_bomb(path: Path, inflated: int = 1400 * (1 << 20)) -> Path:
    """A one-page PDF whose content stream inflates to ``inflated`` bytes (spaces, then a
    line of text), about 1.4 MB on disk for the default 1.4 GB."""
    packer = zlib.compressobj(9)
    chunks = []
    filler = b" " * (1 << 20)
    remaining = inflated
    while remaining > 0:
        piece = filler[:remaining]
        chunks.append(packer.compress(piece))
        remaining -= len(piece)
    chunks.append(packer.compress(b"\nBT /F1 12 Tf 72 720 Td (Bomb) Tj ET\n"))
    chunks.append(packer.flush())
    stream = b"".join(chunks)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return write_objects(path, objects, root=1)
