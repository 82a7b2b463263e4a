"""Open documents through the store: a file seen before (or a copy) is not extracted again.

Paths follow one rule everywhere: messages and outputs show a path as the user gave it,
and the store keeps it absolute but not symlink-resolved (``storable_path``), so a folder
reached through a symlink reads the same in every message, report and library row.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from desktop.documents.ingest import (
    EXTRACTOR_VERSION,
    extract_source,
    read,
    sha256_file,
    storable_path,
)
from desktop.documents.model import Document
from desktop.store.db import DocumentSummary, Store


def is_current(doc: Document) -> bool:
    """True when the stored extraction was made by this extractor version."""
    return doc.extractor.endswith(f"/{EXTRACTOR_VERSION}")


def open_document(path: Path, store: Store) -> tuple[Document, bool]:
    """The document at ``path`` and whether it came from the store (no re-extraction).

    Anything but a readable regular file (a folder, a FIFO, a device) is refused before a
    byte is read; errors name ``path`` as given.
    """
    path = Path(path).expanduser()
    source = read(path)  # the one read: the stored hash is of the bytes extracted
    sha = source.sha256
    stored = store.load_document(sha)
    if stored is not None and is_current(stored):
        where = storable_path(path)
        if stored.path != where:
            stored.path = where
        store.touch_document(sha, where)
        return stored, True
    doc = extract_source(source)
    store.save_document(doc)
    return doc, False


def find_document(path: Path, store: Store) -> DocumentSummary | None:
    """The stored document ``path`` names: by its stored path, else by the file's content.

    A file moved or copied since it was ingested is found by its hash; a path that is gone
    from disk is found only under the path it was stored with.
    """
    path = Path(path).expanduser()
    found = store.document_at(storable_path(path))
    if found is None and path.is_file():
        found = store.document_summary(sha256_file(path))
    return found


def walk(paths: Sequence[Path]) -> list[Path]:
    """Files as given, and every file inside folders: the one rule for walking folders.

    Recursive and sorted; hidden files and anything inside hidden folders (``.git``,
    ``.cache``, editors' ``.~lock`` files) are left out. A FIFO or device inside a folder is
    listed, so that the caller refuses it by name (before reading a byte).
    """
    result: list[Path] = []
    for path in paths:
        if path.is_dir():
            result.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if not any(part.startswith(".") for part in p.relative_to(path).parts)
                    and not p.is_dir()
                )
            )
        else:
            result.append(path)
    return result


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given, and the supported documents found in folders (see ``walk``)."""
    from desktop.documents.ingest import SUPPORTED_SUFFIXES

    return [
        p
        for given in paths
        for p in walk([given])
        if not given.is_dir() or p.suffix.lower() in SUPPORTED_SUFFIXES
    ]


class LibraryChanges:
    """What other Longdoc processes changed in the library (``longdoc ingest``, ``longdoc
    remove``, a batch into the same data directory), seen through SQLite's
    ``data_version``: one pragma per check, and the list read again only when another
    connection committed and only handed on when the documents differ (answers a batch
    stores move ``data_version`` too). Blocking: call from a background task.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._version: int | None = None
        self._listed: list[DocumentSummary] | None = None

    def list_now(self) -> list[DocumentSummary]:
        """Every document, and the point later checks compare with."""
        version = self.store.data_version()  # first: a commit after it is seen next time
        listed = self.store.list_documents()
        with self._lock:
            self._version, self._listed = version, listed
        return listed

    def check(self, force: bool = False) -> list[DocumentSummary] | None:
        """The documents now, if another process changed them since the last look.

        ``force``: list them whatever ``data_version`` says (this process changed them
        through its own connection, which ``data_version`` does not count: a batch run in
        the app)."""
        version = self.store.data_version()
        with self._lock:
            if version == self._version and not force:
                return None
            self._version = version
            before = self._listed
        listed = self.store.list_documents()
        with self._lock:
            self._listed = listed
        return listed if listed != before else None
