"""Open documents through the store: a file seen before (or a copy) is not extracted again."""

from __future__ import annotations

import logging
from pathlib import Path

from desktop.documents import SUPPORTED_SUFFIXES, extract, sha256_file
from desktop.documents.ingest import EXTRACTOR_VERSION
from desktop.documents.model import Document
from desktop.errors import DocumentUnreadable
from desktop.store.db import Store

log = logging.getLogger("longdoc.library")


def is_current(doc: Document) -> bool:
    """True when the stored extraction was made by this extractor version."""
    return doc.extractor.endswith(f"/{EXTRACTOR_VERSION}")


def open_document(path: Path, store: Store) -> tuple[Document, bool]:
    """The document at ``path`` and whether it came from the store (no re-extraction)."""
    path = Path(path).expanduser()
    try:
        resolved = path.resolve(strict=True)
    except OSError:
        raise DocumentUnreadable(path, "no such file") from None
    if resolved.is_dir():
        raise DocumentUnreadable(path, "is a folder, not a document")
    sha = sha256_file(resolved)
    stored = store.load_document(sha)
    if stored is not None and is_current(stored):
        if stored.path != str(resolved):
            stored.path = str(resolved)
        store.touch_document(sha, str(resolved))
        return stored, True
    doc = extract(resolved, sha256=sha)
    store.save_document(doc)
    return doc, False


def expand_paths(paths: list[Path]) -> list[Path]:
    """Files as given, and the supported documents inside folders (sorted, recursive)."""
    result: list[Path] = []
    for path in paths:
        if path.is_dir():
            result.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES
                )
            )
        else:
            result.append(path)
    return result
