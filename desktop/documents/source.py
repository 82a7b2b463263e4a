"""The one read of a document: bounded, hashed, and the bytes every reader gets.

Every reader (PDF, Word, transcript, text) is handed the bytes read here, never the path:
the SHA-256 Longdoc stores is of exactly the bytes that were extracted. Reading the path
twice (once to hash, once to extract) stored one version's hash with the other's text when
an editor or a sync client replaced the file by rename in between.

The limits keep memory bounded whatever the file: a text over 64 MiB is refused from its
size before a byte is read (no context holds a fraction of it); a Word package's parts are
unpacked with a running cap (``BoundedZip``), and its XML is parsed with DTDs refused
(``parse_xml``), so neither a deflate bomb nor an entity bomb can expand.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import xml.etree.ElementTree as ET
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from desktop.errors import DocumentEmpty, DocumentUnreadable, one_line, plural

MIB = 1 << 20
# Far more text than any context can use (256K tokens are about 1 MiB of text).
MAX_TEXT_BYTES = 64 * MIB
# A Word package on disk, and what its parts may unpack to in all.
MAX_DOCX_BYTES = 256 * MIB
MAX_UNPACKED_BYTES = 256 * MIB
# A part that unpacks past this is checked for its compression ratio...
RATIO_CHECK_BYTES = 10 * MIB
# ...which ordinary XML does not exceed (a deflate bomb is 1000:1 and more).
MAX_RATIO = 200
# A PDF is parsed by PDFium from memory: big scanned books are a few hundred MB.
MAX_PDF_BYTES = 1024 * MIB

PDF_MAGIC = b"%PDF-"
# PDF readers accept the header anywhere in the first KiB (some generators prepend junk).
MAGIC_WINDOW = 1024
_CHUNK = MIB

NOT_REGULAR = "this is not a regular file (a pipe, socket or device); give a document file"


@dataclass(frozen=True)
class Source:
    """A document file's bytes as read once, and their SHA-256."""

    path: Path
    data: bytes
    sha256: str

    @property
    def size(self) -> int:
        """Bytes read."""
        return len(self.data)


def _size_text(n: int) -> str:
    return f"{n / MIB:,.0f} MiB" if n >= MIB else plural(n, "byte")


def os_reason(exc: OSError) -> str:
    """One sentence for an OSError, without the path (DocumentError adds it)."""
    if isinstance(exc, PermissionError):
        return "permission denied: the file cannot be read"
    if isinstance(exc, FileNotFoundError):
        return "the file does not exist"
    if isinstance(exc, IsADirectoryError):
        return "this is a folder, not a file"
    return f"the file cannot be read ({exc.strerror or type(exc).__name__})"


def check_file(path: Path) -> int:
    """The size of a readable regular file, or the typed error saying why it is not one.

    Checked before anything is opened: reading a FIFO blocks forever, /dev/zero never ends.
    """
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise DocumentUnreadable(path, "the file does not exist") from exc
    except OSError as exc:
        raise DocumentUnreadable(path, os_reason(exc)) from exc
    if stat.S_ISDIR(info.st_mode):
        raise DocumentUnreadable(path, "this is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise DocumentUnreadable(path, NOT_REGULAR)
    if not os.access(path, os.R_OK):
        raise DocumentUnreadable(path, "permission denied: the file cannot be read")
    if info.st_size == 0:
        raise DocumentEmpty(path, "the file is empty (0 bytes)")
    return info.st_size


def limit_for(suffix: str, head: bytes, named: frozenset[str]) -> tuple[int, str]:
    """The most bytes a file of this kind may have, and the kind's name for messages."""
    from desktop.documents.docx import DOCX_SUFFIXES

    suffix = suffix.lower()
    if suffix == ".pdf" or (suffix not in named and PDF_MAGIC in head):
        return MAX_PDF_BYTES, "a PDF"
    if suffix in DOCX_SUFFIXES:
        return MAX_DOCX_BYTES, "a Word document"
    return MAX_TEXT_BYTES, "a text file"


def read_source(path: Path, named: frozenset[str] = frozenset()) -> Source:
    """Read ``path`` once (within its kind's limit) and hash exactly what was read.

    ``named``: the suffixes whose reader is chosen by name (else a PDF header decides).
    Raises DocumentUnreadable (missing, folder, FIFO or device, no permission, too large)
    or DocumentEmpty; the message names the file as it was given.
    """
    check_file(path)
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the check, open() still
        # returns at once instead of waiting for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise DocumentUnreadable(path, os_reason(exc)) from exc
    with os.fdopen(fd, "rb") as fh:
        try:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise DocumentUnreadable(path, NOT_REGULAR)
            head = fh.read(MAGIC_WINDOW)
            limit, kind = limit_for(path.suffix, head, named)
            if info.st_size > limit:
                raise DocumentUnreadable(path, _too_large(info.st_size, limit, kind))
            # The file may grow after fstat: never read past the limit.
            rest = fh.read(limit + 1 - len(head))
        except OSError as exc:
            raise DocumentUnreadable(path, os_reason(exc)) from exc
    data = head + rest
    if len(data) > limit:
        raise DocumentUnreadable(path, _too_large(len(data), limit, kind))
    if not data:
        raise DocumentEmpty(path, "the file is empty (0 bytes)")
    return Source(path, data, hashlib.sha256(data).hexdigest())


def _too_large(size: int, limit: int, kind: str) -> str:
    return (
        f"the file is too large to read: {_size_text(size)}, and Longdoc reads at most "
        f"{_size_text(limit)} for {kind} (far more than any model's context holds); "
        "split it, or give the part you need"
    )


def read_bounded_text(path: Path, what: str) -> str:
    """A small UTF-8 file the user names (``--questions``), read within MAX_TEXT_BYTES.

    Raises OSError, UnicodeDecodeError or ValueError (too large) for the caller to word.
    """
    # A pipe is fine (``--questions <(grep ...)``); /dev/zero ends at the limit.
    with open(path, "rb") as fh:
        data = fh.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise ValueError(f"the {what} file is larger than {_size_text(MAX_TEXT_BYTES)}")
    return data.decode("utf-8")


# --- Word packages -----------------------------------------------------------------------


class PackageRefused(ValueError):
    """A part of a package that would unpack too far, or declares a DTD."""


class BoundedZip(zipfile.ZipFile):
    """A zip whose ``read()`` stops at MAX_UNPACKED_BYTES in all and at MAX_RATIO:1 above
    RATIO_CHECK_BYTES per part, counting the bytes actually inflated (sizes in the
    directory can lie)."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file)
        self.unpacked = 0

    def read(self, name: str | zipfile.ZipInfo, pwd: bytes | None = None) -> bytes:
        """The part's bytes, refused (PackageRefused) past the caps."""
        info = name if isinstance(name, zipfile.ZipInfo) else self.getinfo(name)
        parts: list[bytes] = []
        size = 0
        with self.open(info, pwd=pwd) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                self.unpacked += len(chunk)
                if self.unpacked > MAX_UNPACKED_BYTES:
                    raise PackageRefused(
                        f"its parts unpack to more than {_size_text(MAX_UNPACKED_BYTES)} "
                        "(a decompression bomb?)"
                    )
                if size > RATIO_CHECK_BYTES and size > MAX_RATIO * max(info.compress_size, 1):
                    raise PackageRefused(
                        f"{one_line(info.filename)} unpacks more than {MAX_RATIO} times its "
                        "packed size (a decompression bomb?)"
                    )
                parts.append(chunk)
        return b"".join(parts)


class _NoDTD(ET.TreeBuilder):
    """A tree builder that refuses the document type declaration as expat reports it."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        """Called at ``<!DOCTYPE``, before any entity of its subset is declared."""
        raise PackageRefused(f"{one_line(self.name)} declares a DTD, which Word never writes")


def parse_xml(name: str, data: bytes) -> ET.Element:
    """An XML part parsed with any DTD refused, wherever it stands and in any encoding.

    Expat reports the DOCTYPE itself, so a declaration after a long comment or in a
    UTF-16 part is caught before a single entity is declared or expanded (a byte search
    of the first KiB missed both).
    """
    parser = ET.XMLParser(target=_NoDTD(name))
    try:
        parser.feed(data)
        root: ET.Element = parser.close()
    except ET.ParseError as exc:
        raise ValueError(f"{one_line(name)}: {exc}") from exc
    return root


# --- PDF streams ---------------------------------------------------------------------------

# PDFium inflates a content stream whole, without a cap of its own: a 1.4 MB flate bomb took
# 5.7 GB. Every zlib stream in the file is inflated here first, in small steps and thrown
# away, to learn what it would become; the same rule as for Word parts refuses a bomb.
MAX_PDF_STREAM_BYTES = 512 * MIB
MAX_PDF_INFLATED_BYTES = 256 * MIB  # in all, when also over MAX_RATIO:1 in all
_STREAM_START = re.compile(rb"stream\r?\n")
_STEP = 16 * 1024
_ZLIB_HEADER = 0x78  # deflate with a zlib wrapper, what /FlateDecode holds


def check_pdf_streams(path: Path, data: bytes) -> None:
    """Raise DocumentUnreadable when a flate stream of the PDF would inflate like a bomb.

    Encrypted streams are opaque here (their zlib header is encrypted too) and pass.
    """
    total_in = total_out = 0
    for match in _STREAM_START.finditer(data):
        start = match.end()
        if start >= len(data) or data[start] != _ZLIB_HEADER:
            continue
        used, made = _inflated_size(data, start)
        total_in, total_out = total_in + used, total_out + made
        if made > MAX_PDF_STREAM_BYTES or (
            made > RATIO_CHECK_BYTES and made > MAX_RATIO * max(used, 1)
        ):
            raise DocumentUnreadable(path, _bomb(f"a stream at byte {start:,}", made, used))
    if total_out > MAX_PDF_INFLATED_BYTES and total_out > MAX_RATIO * max(total_in, 1):
        raise DocumentUnreadable(path, _bomb("its streams", total_out, total_in))


def _bomb(what: str, made: int, used: int) -> str:
    return (
        f"the PDF is refused: {what} would unpack to more than {_size_text(made)} from "
        f"{_size_text(used)} (a decompression bomb?)"
    )


def _inflated_size(data: bytes, start: int) -> tuple[int, int]:
    """(bytes consumed, bytes produced) of the zlib stream at ``start``; stops early past
    the per-stream cap, and at damage (PDFium then judges the stream itself)."""
    inflater = zlib.decompressobj()
    pos, made = start, 0
    view = memoryview(data)  # slices without copying: a PDF has hundreds of streams
    pending: bytes | memoryview = b""
    try:
        while not inflater.eof and made <= MAX_PDF_STREAM_BYTES:
            if not pending:
                if pos >= len(data):
                    break
                pending = view[pos : pos + _STEP]
                pos += len(pending)
            # At most 16 MiB per call: memory stays bounded whatever the ratio.
            made += len(inflater.decompress(pending, 16 * MIB))
            pending = inflater.unconsumed_tail
            used = pos - start - len(pending)
            if made > RATIO_CHECK_BYTES and made > MAX_RATIO * max(used, 1):
                break  # already a bomb by the ratio rule: no need to inflate the rest
    except zlib.error:
        pass
    used = pos - start - len(pending) - len(inflater.unused_data)
    return used, made
