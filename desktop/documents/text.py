"""Plain text and Markdown: decoding with fallbacks, page-sized sections, Markdown outline.

Text files have no pages, so they are cut into sections of about 4,000 characters (at form
feeds when the file has them, which is how printers and `pr` mark pages). Sections play
the part of pages: the model cites them as ``[Page 3]``.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from desktop.documents.model import Document, OutlineEntry, Page
from desktop.documents.titles import choose_title
from desktop.errors import DocumentEmpty, DocumentUnreadable

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".log"})

SECTION_CHARS = 4_000
# Without a blank line in sight a section is cut between two lines at this size, so a
# log file without paragraphs still gets page-sized sections.
SECTION_HARD_CHARS = 2 * SECTION_CHARS

# C0 controls except tab, newline and form feed (ANSI colour codes in logs, stray bytes).
_CONTROL = re.compile("[\x00-\x08\x0b\x0d-\x1f\x7f]")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Decoded:
    """File text with the encoding it was read with and a warning when that was a guess."""

    text: str
    encoding: str
    warning: str | None = None


def decode_bytes(path: Path, data: bytes, *, nul_is_text: bool = False) -> Decoded:
    """UTF-8 (with or without BOM), UTF-32 or UTF-16 with BOM, else cp1252/latin-1 with a
    warning.

    A NUL byte otherwise means a binary file; with ``nul_is_text`` (captions, which
    browsers read with NULs replaced) each becomes U+FFFD.
    """
    # UTF-32 first: the UTF-32LE BOM starts with the UTF-16LE one.
    for bom, encoding in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32")):
        if data.startswith(bom):
            try:
                return Decoded(data.decode(encoding).lstrip("\ufeff"), encoding)
            except UnicodeDecodeError as exc:
                raise DocumentUnreadable(path, "the file starts like UTF-32 but is not") from exc
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # Checked before the NUL test: UTF-16 text is full of NUL bytes.
        try:
            return Decoded(data.decode("utf-16"), "utf-16")
        except UnicodeDecodeError as exc:
            raise DocumentUnreadable(path, "the file starts like UTF-16 but is not") from exc
    if b"\x00" in data and nul_is_text:
        decoded = decode_bytes(path, data.replace(b"\x00", b""), nul_is_text=False)
        # Decoded without the NULs (so UTF-8 is still recognised), then each put back as
        # U+FFFD where it was: NUL is a single byte in UTF-8, cp1252 and latin-1 alike.
        return Decoded(_with_replacement(data, decoded), decoded.encoding, decoded.warning)
    if b"\x00" in data:
        raise DocumentUnreadable(
            path,
            "this is a binary file, not text; supported are PDF, Word (.docx), "
            "WebVTT/SRT transcripts, plain text and Markdown",
        )
    try:
        return Decoded(data.decode("utf-8-sig"), "utf-8")
    except UnicodeDecodeError:
        pass
    for encoding in ("cp1252", "latin-1"):  # latin-1 maps every byte, so it cannot fail
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        warning = f"not valid UTF-8; read as {encoding}, so some characters may be wrong"
        return Decoded(text, encoding, warning)
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def _with_replacement(data: bytes, decoded: Decoded) -> str:
    """``data`` decoded as ``decoded`` was, with U+FFFD for each NUL byte."""
    codec = "utf-8-sig" if decoded.encoding == "utf-8" else decoded.encoding
    return "\ufffd".join(part.decode(codec) for part in data.split(b"\x00"))


def extract_text(path: Path, data: bytes) -> Document:
    """A text or Markdown file's bytes as a Document (``sha256`` and ``tokens`` left unset)."""
    markdown = path.suffix.lower() in MARKDOWN_SUFFIXES
    decoded = decode_bytes(path, data)
    text = decoded.text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    if not text.strip():
        raise DocumentEmpty(path, "no text could be extracted: the file holds only whitespace")

    page_lines = split_pages(text)
    pages = [
        Page(number=n, label=str(n), text="\n".join(lines).strip("\n"))
        for n, lines in enumerate(page_lines, start=1)
    ]
    outline: list[OutlineEntry] = []
    front_title = None
    body = page_lines
    if markdown:
        body, front_title = _strip_front_matter(page_lines)
        outline = markdown_outline(body)
    return Document(
        sha256="",
        path=str(path),
        kind="markdown" if markdown else "text",
        title=_title(body, outline, front_title, markdown, path),
        pages=pages,
        outline=outline,
        metadata={"Encoding": decoded.encoding},
        warnings=[decoded.warning] if decoded.warning else [],
    )


def split_pages(text: str) -> list[list[str]]:
    """The lines of each page: form-feed pages if there are any, else ~4,000-char sections."""
    if "\f" in text:
        chunks = text.split("\f")
        if len(chunks) > 1 and not chunks[-1].strip():
            chunks.pop()  # the form feed that ends the last page opens no new one
        return [chunk.split("\n") for chunk in chunks]
    return split_sections(text.split("\n"))


def split_sections(
    lines: list[str], target: int = SECTION_CHARS, hard: int = SECTION_HARD_CHARS
) -> list[list[str]]:
    """Group lines into sections of about ``target`` chars, cut at blank lines, never mid-line."""
    sections: list[list[str]] = []
    current: list[str] = []
    size = 0
    for line in lines:
        blank = not line.strip()
        if blank and size >= target:
            sections.append(current)
            current, size = [], 0
            continue
        if current and size + len(line) + 1 > hard and not blank:
            sections.append(current)
            current, size = [], 0
        if blank and not current:
            continue  # a section never starts with blank lines
        current.append(line)
        size += len(line) + 1
    if any(line.strip() for line in current) or not sections:
        sections.append(current)
    return sections


def markdown_outline(page_lines: list[list[str]]) -> list[OutlineEntry]:
    """ATX (``## Title``) and setext (underlined) headings, outside code fences, per page."""
    entries: list[OutlineEntry] = []
    fence: str | None = None
    for number, lines in enumerate(page_lines, start=1):
        previous = ""
        for line in lines:
            opener = _FENCE.match(line)
            if fence is not None:
                if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                    fence = None
                previous = ""
                continue
            if opener:
                fence = opener.group(1)
                previous = ""
                continue
            atx = _ATX.match(line)
            setext = _SETEXT.match(line)
            if atx and atx.group(2):
                entries.append(OutlineEntry(len(atx.group(1)) - 1, atx.group(2).strip(), number))
            elif setext and _is_paragraph_line(previous):
                entries.append(
                    OutlineEntry(0 if setext.group(1)[0] == "=" else 1, previous.strip(), number)
                )
                line = ""
            previous = line
    return entries


def _is_paragraph_line(line: str) -> bool:
    """Whether ``line`` can be the text of a setext heading (not blank, a list or a quote)."""
    stripped = line.strip()
    if not stripped or line.startswith(("    ", "\t")):
        return False
    return not (stripped[0] in "-*+>#|" or _ATX.match(line) or _SETEXT.match(line))


def _strip_front_matter(page_lines: list[list[str]]) -> tuple[list[list[str]], str | None]:
    """Pages without a leading YAML front-matter block, and its ``title:`` if present."""
    first = page_lines[0]
    if not first or first[0].strip() != "---":
        return page_lines, None
    for end in range(1, len(first)):
        if first[end].strip() in ("---", "..."):
            title = None
            for line in first[1:end]:
                match = _FRONT_TITLE.match(line)
                if match:
                    title = match.group(1).strip("\"'") or None
                    break
            # Blank lines keep the page's line count; only the outline reads this copy.
            return [[""] * (end + 1) + first[end + 1 :], *page_lines[1:]], title
    return page_lines, None


def _title(
    page_lines: list[list[str]],
    outline: list[OutlineEntry],
    front_title: str | None,
    markdown: bool,
    path: Path,
) -> str:
    """Front-matter title, first ``# heading``, first non-empty line, else the file stem
    (each only if readable: see titles.choose_title)."""

    def candidates() -> Iterator[str | None]:
        yield front_title
        if markdown:
            yield from (entry.title for entry in outline if entry.level == 0)
        for lines in page_lines:
            for line in lines:
                yield line.lstrip(" #") if markdown else line

    return choose_title(candidates(), path.stem)
