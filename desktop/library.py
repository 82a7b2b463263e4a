"""Open documents through the store: a file seen before (or a copy) is not extracted again.

Paths follow one rule everywhere: messages and outputs show a path as the user gave it,
and the store keeps it absolute but not symlink-resolved (``storable_path``), so a folder
reached through a symlink reads the same in every message, report and library row.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop.documents.ingest import (
    EXTRACTOR_VERSION,
    extract_source,
    read,
    sha256_file,
    storable_path,
)
from desktop.documents.model import Document
from desktop.errors import DocumentError, StorageError
from desktop.store.db import DocumentSummary, Store
from desktop.store.writer import DocumentWriter, WriterGone


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
    stored = _stored(path, source.sha256, store)
    if stored is not None:
        return stored, True
    doc = extract_source(source)
    store.save_document(doc)
    return doc, False


def _stored(path: Path, sha: str, store: Store) -> Document | None:
    """The current stored extraction of ``sha``, now known under ``path``; else None."""
    stored = store.load_document(sha)
    if stored is None or not is_current(stored):
        return None
    where = storable_path(path)
    if stored.path != where:
        stored.path = where
    store.touch_document(sha, where)
    return stored


@dataclass(frozen=True)
class Opened:
    """A file ``open_documents`` opened: its document and whether it came from the store."""

    path: Path
    doc: Document
    reused: bool = False


WRITER_MIN_FILES = 3  # fewer: starting the writing process (~0.2 s) costs more than it saves
WRITER_AHEAD = 2  # documents in the writer's pipe: one being written, one ready
WRITER_BACKLOG_CHARS = 16_000_000  # extracted text waiting to be written, at most (~64 MB)


def open_documents(
    items: Sequence[Path | DocumentError], store: Store
) -> Generator[Opened | DocumentError, None, None]:
    """``open_document`` for each path, in order, each file read while the one before it
    is written to the store by a process of its own (``desktop.store.writer``).

    A document is reported once it is committed. An error item (a folder holding no
    documents, say) is passed through in its place; a file's document error is yielded in
    its place and the others go on; a storage error ends the iteration after the documents
    already written were reported. Stopping early lets the writer finish the (at most two)
    documents it was handed.
    """
    files = sum(not isinstance(item, DocumentError) for item in items)
    saver = _Saver(store, files >= WRITER_MIN_FILES)
    try:
        for item in items:
            try:
                if isinstance(item, DocumentError):
                    raise item
                source = read(item)
                if saver.holds(source.sha256):  # a copy of a file not written yet
                    yield from saver.drain()
                stored = _stored(item, source.sha256, store)
                # Extracted while the writer writes the one before.
                doc = stored if stored is not None else extract_source(source)
            except DocumentError as exc:
                yield from saver.drain()
                yield exc
                continue
            if stored is None:
                yield from saver.put(item, doc)
            else:
                yield from saver.drain()
                yield Opened(item, doc, reused=True)
        yield from saver.drain()
    finally:
        saver.close()


class _Saver:
    """Writes documents in order: through a ``DocumentWriter`` while it works, else (too
    few files, or the writer failed) on the caller's own connection.

    Documents wait here, extracted, until the writer takes them (``WRITER_AHEAD`` in its
    pipe at a time, so handing one over never blocks): a write that merges the index's
    segments can take 50 ms, and the reading goes on meanwhile, up to
    ``WRITER_BACKLOG_CHARS`` of text waiting.
    """

    def __init__(self, store: Store, background: bool) -> None:
        self.store = store
        self.pending: deque[tuple[Path, Document]] = deque()  # not yet confirmed, in order
        self.sent = 0  # how many of the first pending ones the writer has been handed
        self.waiting_chars = 0
        self.failure: StorageError | None = None  # raised after what was written
        self.writer: DocumentWriter | None = None
        self.background = background  # the writer starts with the first document to write

    def holds(self, sha: str) -> bool:
        """True when a document with this hash is not yet written."""
        return any(doc.sha256 == sha for _, doc in self.pending)

    def put(self, path: Path, doc: Document) -> Iterator[Opened]:
        """Write ``doc``; each document known written by now, in order."""
        if self.background:
            self.background = False
            with contextlib.suppress(WriterGone):
                self.writer = DocumentWriter(self.store.path)
        if self.writer is None:
            self.store.save_document(doc)
            yield Opened(path, doc)
            return
        self.pending.append((path, doc))
        self.waiting_chars += doc.chars
        done: list[Opened] = []
        try:
            self._pump(done, block=self.waiting_chars > WRITER_BACKLOG_CHARS)
        except WriterGone:
            done += self._write_here()
        yield from self._report(done)

    def drain(self) -> Iterator[Opened]:
        """Each document not yet written, as soon as it is."""
        while self.pending:
            done: list[Opened] = []
            try:
                self._pump(done, block=True)
            except WriterGone:
                done += self._write_here()
            yield from self._report(done)

    def _report(self, done: list[Opened]) -> Iterator[Opened]:
        """What is written, then the failure that stopped the writing, if one did."""
        yield from done
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    def _pump(self, done: list[Opened], block: bool) -> None:
        """Hand the writer what it has room for and collect what it has written: at least
        one document when ``block``."""
        assert self.writer is not None
        while True:
            while self.sent < min(WRITER_AHEAD, len(self.pending)):
                self.writer.send(self.pending[self.sent][1])
                self.sent += 1
            if not self.sent or not (block or self.writer.ready()):
                return
            self.writer.confirm()
            path, doc = self.pending.popleft()
            self.sent -= 1
            self.waiting_chars -= doc.chars
            done.append(Opened(path, doc))
            block = False

    def _write_here(self) -> list[Opened]:
        """The writer is gone: write what it did not confirm (it may have committed some:
        saving again replaces them whole) on this connection, up to a failure, which is
        raised once what was written is reported."""
        self.close()
        done = []
        try:
            while self.pending:
                path, doc = self.pending[0]
                self.store.save_document(doc)
                self.pending.popleft()
                done.append(Opened(path, doc))
        except StorageError as exc:
            self.failure = exc
            self.pending.clear()
        self.sent = self.waiting_chars = 0
        return done

    def close(self) -> None:
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.close()


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
