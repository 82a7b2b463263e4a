"""DOCX reading: Longdoc's zip+XML reader against python-docx, speed and what each finds.

Run as ``.venv/bin/python bench/bench_docx.py`` from the project root (needs the test
extra, python-docx, to write the document); prints medians and the ratio.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import docx
from _common import (  # first: it puts the project on sys.path
    median_seconds,
)
from docx.table import Table

from desktop.documents.docx import extract_docx

SECTIONS = 200
REPEATS = 5
WORDS = ["the", "parties", "agree", "that", "the", "supplier", "shall", "deliver", "goods"]


def make_document(path: Path) -> None:
    """A contract-like file: 200 sections, each with paragraphs, a numbered list and a table."""
    d = docx.Document()
    d.add_heading("Master supply agreement", 0)
    for s in range(1, SECTIONS + 1):
        d.add_heading(f"Section {s}", 1)
        for k in range(8):
            d.add_paragraph(" ".join(WORDS[(k + i) % len(WORDS)] for i in range(60)))
        for k in range(4):
            d.add_paragraph(f"Obligation {k} of section {s}", style="List Number")
        table = d.add_table(rows=4, cols=3)
        for r in range(4):
            for c in range(3):
                table.cell(r, c).text = f"r{r}c{c} {s}"
    d.save(str(path))


def with_python_docx(path: Path) -> list[str]:
    """What python-docx gives for the same walk: paragraph text and style, table cells."""
    out = []
    for item in docx.Document(str(path)).iter_inner_content():
        if isinstance(item, Table):
            for row in item.rows:
                out.append(" | ".join(cell.text for cell in row.cells))
        else:
            style = item.style.name if item.style is not None else ""
            out.append(f"{style}: {item.text}")
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "contract.docx"
        make_document(path)
        data = path.read_bytes()
        ours = median_seconds(lambda: extract_docx(path, data))
        theirs = median_seconds(lambda: with_python_docx(path))
        opening = median_seconds(lambda: docx.Document(str(path)))
        doc = extract_docx(path, data)
        chars = sum(len(p.text) for p in doc.pages)
        print(f"document: {len(data) / 1e6:.2f} MB, {len(doc.pages)} pages, {chars:,} chars")
        print(f"zip+XML reader (headings, numbering, tables, anchors): {ours * 1000:.0f} ms")
        print(f"python-docx (paragraph text + style name, table cells):  {theirs * 1000:.0f} ms")
        print(f"python-docx, opening the file only:                      {opening * 1000:.0f} ms")
        print(f"ratio ours/python-docx: {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
