"""Hostile documents (issue 20 items 2, 6 and 7): one read per document, readers that never
raise on absurd values, and memory bounded whatever the file."""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from desktop.documents import extract
from desktop.errors import DocumentUnreadable
from desktop.library import open_document
from desktop.store.db import Store
from tests.support import hostile_files as hostile

ROOT = Path(__file__).resolve().parents[3]


def test_a_file_replaced_while_it_is_read_keeps_one_versions_hash_and_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nVersion one of the notes.\n")
    newer = tmp_path / ".notes.md.new"
    newer.write_text("# Notes\n\nVersion two, saved by an editor.\n")
    real_open = os.open
    swapped = []

    def open_then_swap(file: object, flags: int, *args: object, **kwargs: object) -> int:
        fd = real_open(file, flags, *args, **kwargs)  # type: ignore[arg-type]
        if Path(str(file)) == path and not swapped:
            os.replace(newer, path)  # what editors and sync clients do, mid-ingest
            swapped.append(True)
        return fd

    monkeypatch.setattr(os, "open", open_then_swap)
    store = Store(tmp_path / "db.sqlite")
    try:
        doc, _ = open_document(path, store)
    finally:
        store.close()
    assert swapped
    text = "\n".join(p.text for p in doc.pages)
    version = b"# Notes\n\nVersion one of the notes.\n"
    assert "Version one" in text and doc.sha256 == hashlib.sha256(version).hexdigest()


def test_a_transcript_with_a_400_digit_hour_skips_that_cue(tmp_path: Path) -> None:
    doc = extract(hostile.transcript_with_absurd_hour(tmp_path / "meeting.vtt"))
    text = "\n".join(p.text for p in doc.pages)
    assert "We agree on the fee" in text and "Good." in text and "Then we sign" not in text
    assert any("skipped" in w for w in doc.warnings)


def test_any_reader_failure_is_one_document_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import desktop.documents.text as text

    def overflow(path: Path, data: bytes) -> None:
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(text, "extract_text", overflow)
    (tmp_path / "a.txt").write_text("hello")
    with pytest.raises(DocumentUnreadable, match="int too large"):
        extract(tmp_path / "a.txt")


# Children that read hostile files run under this address-space limit, so a regression
# fails the test (MemoryError) instead of taking the shared machine's memory.
CHILD_ADDRESS_SPACE = 4 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))


def run_limited(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh Python under CHILD_ADDRESS_SPACE; its peak RSS printed last."""
    code += "\nimport resource\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_limited,
    )  # fmt: skip


def test_a_huge_questions_file_is_refused(tmp_path: Path) -> None:
    path = hostile.sparse_text(tmp_path / "q.txt", 8 << 30, b"What?\n")
    done = run_limited(
        "from desktop.batch import load_questions\n"
        "from desktop.errors import UsageError\n"
        "try:\n"
        f"    load_questions({str(path)!r})\n"
        "except UsageError as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    assert done.stdout.startswith("REFUSED") and "larger than 64 MiB" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("make", "name", "words"),
    [
        (hostile.docx_deflate_bomb, "bomb.docx", "decompression bomb"),
        (hostile.docx_doctype_after_comment, "dtd.docx", "declares a DTD"),
        (hostile.docx_doctype_utf16, "dtd16.docx", "declares a DTD"),
        (lambda p: hostile.pdf_flate_bomb(p, 300 << 20), "bomb.pdf", "decompression bomb"),
    ],
    ids=["docx-deflate", "docx-dtd-after-comment", "docx-dtd-utf16", "pdf-flate"],
)
def test_bombs_are_refused_in_bounded_memory(
    tmp_path: Path, make: Callable[[Path], Path], name: str, words: str
) -> None:
    path = make(tmp_path / name)
    code = (
        "from desktop.documents import extract\n"
        "from desktop.errors import DocumentUnreadable\n"
        "try:\n"
        f"    extract({str(path)!r})\n"
        "    print('ACCEPTED')\n"
        "except DocumentUnreadable as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    done = run_limited(code)
    assert done.stdout.startswith("REFUSED"), done.stdout + done.stderr
    assert words in done.stdout
    peak_kib = int(done.stdout.rsplit("PEAK", 1)[1])
    assert peak_kib < 1536 * 1024  # under 1.5 GiB (ru_maxrss is in KiB)


def test_text_over_64_mib_is_refused_from_its_size(tmp_path: Path) -> None:
    sparse = hostile.sparse_text(tmp_path / "huge.log", 20 << 30)
    just_over = hostile.big_text(tmp_path / "just.txt", (64 << 20) + 1)
    done = run_limited(
        "from desktop.documents import extract\n"
        "from desktop.errors import DocumentUnreadable\n"
        f"for path in ({str(sparse)!r}, {str(just_over)!r}):\n"
        "    try:\n"
        "        extract(path)\n"
        "    except DocumentUnreadable as exc:\n"
        "        print('REFUSED', exc)\n"
    )
    refused = [ln for ln in done.stdout.splitlines() if ln.startswith("REFUSED")]
    assert len(refused) == 2, done.stdout + done.stderr
    assert all("too large" in ln and "64 MiB" in ln for ln in refused)


def test_a_pdf_with_absurdly_many_pages_is_refused_before_reading_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import desktop.documents.pdf as pdf
    from tests.support.pdf_maker import write_pdf

    monkeypatch.setattr(pdf, "MAX_PAGES", 10)  # the real cap is 100,000 pages
    path = write_pdf(tmp_path / "many.pdf", [[f"page {n}"] for n in range(11)])
    with pytest.raises(DocumentUnreadable, match="11 pages; Longdoc reads at most 10"):
        extract(path)
