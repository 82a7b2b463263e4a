"""Form-value and comment word recall (issue 19): the share of a PDF's filled-in values
and comment words that reach Longdoc's page text (goals: >= 95% and >= 90%).

The words expected are read with pypdf, independently of PDFium (see
tests/unit/documents/form_recall.py). Three sets:

- the form structures of tests/unit/documents/form_varieties.py (field hierarchies, values
  only in appearances, option pairs, numbered radio states, rotated pages...);
- the corpus PDFs that hold forms or comments, as they are;
- the corpus forms (pdfTeX hyperref, LibreOffice) filled in by pypdf's writer, as a
  filler program would (values set, appearances regenerated).

    .venv/bin/python bench/bench_form_recall.py
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import pypdf
from _common import CORPUS  # first: it puts the project on sys.path

from tests.unit.documents.form_recall import Recall, recall
from tests.unit.documents.form_varieties import orphan_widgets, varieties

VALUE_GOAL, NOTE_GOAL = 0.95, 0.90


def filled_by_pypdf(source: Path, target: Path) -> Path | None:
    """``source`` with every text field and choice filled by pypdf; None without fields."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = pypdf.PdfReader(source)
        fields = reader.get_fields() or {}
        if not fields:
            return None
        writer = pypdf.PdfWriter(clone_from=reader)
        for number, page in enumerate(writer.pages):
            values: dict[str, str] = {}
            for ref in page.get("/Annots") or []:
                annot = ref.get_object()
                name = annot.get("/T") or (annot.get("/Parent") or {}).get("/T")
                kind = annot.get("/FT") or (annot.get("/Parent") or {}).get("/FT")
                if name is None:
                    continue
                if kind == "/Tx":
                    values[str(name)] = f"Filled{number}x{len(values)} Ortega"
                elif kind == "/Ch":
                    options = annot.get("/Opt") or (annot.get("/Parent") or {}).get("/Opt") or []
                    if options:
                        first = options[-1]
                        first = first[0] if isinstance(first, list) else first
                        values[str(name)] = str(first)
            if values:
                writer.update_page_form_field_values(page, values, auto_regenerate=True)
        writer.write(target)
    return target


def show(name: str, result: Recall, seconds: float) -> None:
    print(
        f"  {name[:44]:<44} values {result.values_found:>3}/{result.values:<3}"
        f" notes {result.notes_found:>3}/{result.notes:<3} {seconds * 1000:6.0f} ms"
        + (f"  missing: {', '.join(result.missing[:5])}" if result.missing else "")
    )


def main() -> int:
    total = Recall()
    work = Path(tempfile.mkdtemp(prefix="longdoc-bench-forms-"))
    paths = [varieties(work / "varieties.pdf")[0], orphan_widgets(work / "orphans.pdf")[0]]
    for pdf in sorted(CORPUS.glob("*/*.pdf")):
        paths.append(pdf)
        filled = filled_by_pypdf(pdf, work / f"filled-{pdf.name}") if "form" in pdf.name else None
        if filled is not None:
            paths.append(filled)
    print("Form values and comments reaching the page text:")
    for path in paths:
        started = time.perf_counter()
        try:
            result = recall(path)
        except Exception as exc:  # a file pypdf or Longdoc cannot read: not a form test
            print(f"  {path.name[:44]:<44} skipped ({type(exc).__name__})")
            continue
        if not (result.values or result.notes):
            continue
        show(path.name, result, time.perf_counter() - started)
        total.values += result.values
        total.values_found += result.values_found
        total.notes += result.notes
        total.notes_found += result.notes_found
    values_ok = "ok" if total.value_recall >= VALUE_GOAL else "BELOW GOAL"
    notes_ok = "ok" if total.note_recall >= NOTE_GOAL else "BELOW GOAL"
    print(
        f"value words {total.value_recall:.1%} of {total.values}"
        f" (goal >= {VALUE_GOAL:.0%}: {values_ok}); comment words {total.note_recall:.1%}"
        f" of {total.notes} (goal >= {NOTE_GOAL:.0%}: {notes_ok})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
