"""How many of a PDF's form-value and comment words reach Longdoc's text.

The words expected are read with pypdf, independently of PDFium: the value (/V, inherited
from parent fields) of every visible text or choice widget, and the /Contents of every
visible comment annotation. bench/bench_form_recall.py runs this over PDFs.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pypdf
from pypdf.generic import ArrayObject, DictionaryObject

from desktop.documents import extract

_WORD = re.compile(r"\w+")
_HIDDEN = 2 | 32  # annotation flags Hidden, NoView
_NOTES = {"/Text", "/FreeText", "/Square", "/Circle", "/Line", "/Polygon", "/PolyLine",
          "/Highlight", "/Underline", "/Squiggly", "/StrikeOut", "/Stamp", "/Caret", "/Ink",
          "/FileAttachment", "/Sound", "/Redact"}  # fmt: skip


@dataclass
class Recall:
    """Words expected and found, for form values and for comments."""

    values: int = 0
    values_found: int = 0
    notes: int = 0
    notes_found: int = 0
    missing: list[str] = field(default_factory=list)

    @property
    def value_recall(self) -> float:
        return self.values_found / self.values if self.values else 1.0

    @property
    def note_recall(self) -> float:
        return self.notes_found / self.notes if self.notes else 1.0


def _inherited(annot: DictionaryObject, key: str) -> Any:
    """``key`` of a widget or of its nearest parent field that has it (cycles cut)."""
    node: Any = annot
    seen: set[int] = set()
    while isinstance(node, DictionaryObject) and id(node) not in seen:
        seen.add(id(node))
        if key in node:
            return node[key]
        node = node.get("/Parent")
        node = node.get_object() if node is not None else None
    return None


def _value_text(value: Any) -> str:
    if isinstance(value, ArrayObject):
        return " ".join(str(v) for v in value)
    return "" if value is None else str(value)


def words(text: str) -> list[str]:
    """The words of ``text``, case-folded."""
    return [w.casefold() for w in _WORD.findall(text)]


def expected(path: Path) -> tuple[list[list[str]], list[list[str]]]:
    """Per page (0-based list index): the value words and the comment words."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = pypdf.PdfReader(path)
        values: list[list[str]] = []
        notes: list[list[str]] = []
        for page in reader.pages:
            page_values: list[str] = []
            page_notes: list[str] = []
            for ref in page.get("/Annots") or []:
                annot = ref.get_object()
                if not isinstance(annot, DictionaryObject):
                    continue
                if int(annot.get("/F", 0)) & _HIDDEN:
                    continue
                subtype = annot.get("/Subtype")
                if subtype == "/Widget":
                    if _inherited(annot, "/FT") in ("/Tx", "/Ch"):
                        flags = int(_inherited(annot, "/Ff") or 0)
                        if not flags & (1 << 13):  # password fields are never shown
                            page_values += words(_value_text(_inherited(annot, "/V")))
                elif subtype in _NOTES:
                    page_notes += words(str(annot.get("/Contents", "")))
            values.append(page_values)
            notes.append(page_notes)
    return values, notes


def recall(path: Path) -> Recall:
    """Expected words found in the same page's text (a word counts once per occurrence)."""
    values, notes = expected(path)
    doc = extract(path)
    result = Recall()
    for page, page_values, page_notes in zip(doc.pages, values, notes, strict=False):
        found = set(words(page.text))
        for word in page_values:
            result.values += 1
            result.values_found += word in found
            if word not in found:
                result.missing.append(f"p{page.number} value {word}")
        for word in page_notes:
            result.notes += 1
            result.notes_found += word in found
            if word not in found:
                result.missing.append(f"p{page.number} note {word}")
    return result
