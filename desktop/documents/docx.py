"""Word documents (.docx) read straight from the zip's XML: headings, paragraphs, lists, tables.

A direct reader with the standard library rather than python-docx: python-docx has no list
numbering (no "1." or "a)" in front of items, no number of an auto-numbered heading
"4.2"), drops runs inside tracked insertions and content controls, and is slower
(bench/bench_docx.py measures both); this reader needs no dependency at all.

Every block carries the anchor the model cites: ``[§ 4.2]`` before a heading and
``[§ 4.2 ¶ 3]`` before the third paragraph (list item, table) under it; text before the
first heading is ``[¶ 1]``, ``[¶ 2]``... A section number is the heading's own number when
Word numbers it or the text starts with one ("4.2 Payment"), else its position in the
heading tree. Each section is a page labelled by its anchor (``§ 4.2``); a section longer
than ~4,000 characters continues on pages labelled by their first paragraph
(``§ 4.2 ¶ 12``).
"""

from __future__ import annotations

import email
import email.policy
import io
import re
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from xml.etree import ElementTree as ET

from desktop.documents.html_text import html_paragraphs
from desktop.documents.model import Document, OutlineEntry, Page
from desktop.documents.source import BoundedZip, parse_xml
from desktop.documents.titles import TITLE_MAX, choose_title
from desktop.errors import DocumentEmpty, DocumentEncrypted, DocumentUnreadable

DOCX_SUFFIXES = frozenset({".docx", ".docm"})

PAGE_CHARS = 4_000
# A document.xml past this size is a zip bomb, not a Word file (the largest real ones
# are tens of MB).
MAX_PART_BYTES = 512 << 20

ZIP_MAGIC = b"PK\x03\x04"
# Password-protected Office files are OLE compound files holding an "EncryptedPackage".
CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_STREAM = "EncryptedPackage".encode("utf-16-le")

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_DCTERMS = "{http://purl.org/dc/terms/}"

# Word's "Strict Open XML" files use other namespace names for the same elements.
_STRICT_NAMESPACES = (
    (b"http://purl.oclc.org/ooxml/wordprocessingml/main", _W[1:-1].encode()),
    (
        b"http://purl.oclc.org/ooxml/officeDocument/math",
        b"http://schemas.openxmlformats.org/officeDocument/2006/math",
    ),
)
_MATH_T = "{http://schemas.openxmlformats.org/officeDocument/2006/math}t"

_P, _TBL, _TR, _TC, _SDT, _SDT_CONTENT = (
    f"{_W}{n}" for n in ("p", "tbl", "tr", "tc", "sdt", "sdtContent")
)
_T, _TAB, _BR, _CR, _NB_HYPHEN = (f"{_W}{n}" for n in ("t", "tab", "br", "cr", "noBreakHyphen"))
_TXBX = f"{_W}txbxContent"
_ALT_CHUNK = f"{_W}altChunk"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_SYM, _FLD_CHAR, _FF_DATA = f"{_W}sym", f"{_W}fldChar", f"{_W}ffData"
_W14 = "{http://schemas.microsoft.com/office/word/2010/wordml}"
CHECKED, UNCHECKED = "☒", "☐"
# Symbol fonts put their glyphs at U+F020-U+F0FF (or at the byte value); the ones that
# carry meaning in contracts and forms, as Unicode. Other symbols keep their code.
_SYMBOLS = {
    "wingdings": {
        0x6C: "●",
        0x6E: "■",
        0x6F: "□",
        0x71: "❑",
        0x72: "❒",
        0x74: "◆",
        0x75: "◆",
        0x76: "❖",
        0x77: "◆",
        0x9F: "•",
        0xA1: "○",
        0xA7: "▪",
        0xA8: "☐",
        0xD8: "➢",
        0xE0: "→",
        0xE8: "➔",
        0xEF: "⇦",
        0xF0: "⇨",
        0xFB: "☒",
        0xFC: "✓",
        0xFD: "☒",
        0xFE: "☑",
        0x4A: "☺",
        0x4C: "☹",
        0x46: "☞",
        0x3F: "✌",
        0x22: "✂",
        0x28: "☎",
    },
    "wingdings 2": {0x50: "✓", 0x4F: "✗", 0x53: "☒", 0x54: "☒", 0x52: "☑", 0xA3: "☐", 0x2A: "☐"},
    "symbol": {
        **{0x41 + i: c for i, c in enumerate("ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ")},
        **{0x61 + i: c for i, c in enumerate("αβχδεφγηιϕκλμνοπθρστυϖωξψζ")},
        0xA3: "≤",
        0xA5: "∞",
        0xAB: "↔",
        0xAC: "←",
        0xAD: "↑",
        0xAE: "→",
        0xAF: "↓",
        0xB0: "°",
        0xB1: "±",
        0xB2: "″",
        0xB3: "≥",
        0xB4: "×",
        0xB5: "∝",
        0xB6: "∂",
        0xB7: "•",
        0xB8: "÷",
        0xB9: "≠",
        0xBA: "≡",
        0xBB: "≈",
        0xC6: "∅",
        0xC7: "∩",
        0xC8: "∪",
        0xCE: "∈",
        0xD1: "∇",
        0xD5: "∏",
        0xD6: "√",
        0xD7: "⋅",
        0xDB: "⇔",
        0xDE: "⇒",
        0xE5: "∑",
        0xF2: "∫",
        0xA2: "′",
        0xA7: "♣",
        0xA8: "♦",
        0xA9: "♥",
        0xAA: "♠",
    },
}
_VAL = f"{_W}val"
# Parts of a paragraph that are not its visible text: properties, deleted text (tracked
# changes), field instructions, and the second copy of a drawing (mc:Fallback).
_SKIP = frozenset(
    {
        f"{_W}pPr",
        f"{_W}rPr",
        f"{_W}del",
        f"{_W}delText",
        f"{_W}moveFrom",
        f"{_W}instrText",
        f"{_W}sdtPr",
        f"{_W}footnoteRef",
        f"{_W}endnoteRef",
        f"{_MC}Fallback",
    }
)
_NOTE_REFERENCES = {f"{_W}footnoteReference": "", f"{_W}endnoteReference": "e"}
# Notes that are only the separator lines Word draws above footnotes.
_NOTE_SEPARATORS = frozenset({"separator", "continuationSeparator", "continuationNotice"})
NOTES_SECTION = "§ Notes"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_NOTE_MARK = re.compile(r"\[\^e?[\w-]+\]")
_LEADING_NUMBER = re.compile(r"^(?:§\s*)?(\d+(?:\.\d+)*)\.?(?=\s)")
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_ROMAN = [
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
]


@dataclass
class _Style:
    """What a paragraph style contributes: heading level, list numbering, parent."""

    name: str = ""
    based_on: str | None = None
    outline_level: int | None = None
    num_id: str | None = None
    ilvl: int | None = None


@dataclass(frozen=True)
class _Level:
    """One level of a list definition: number format, label template, first number."""

    fmt: str
    text: str
    start: int


@dataclass
class _Num:
    """A w:num: its abstract definition and its own overrides per level."""

    abstract: str
    levels: dict[int, _Level] = field(default_factory=dict)
    starts: dict[int, int] = field(default_factory=dict)


@dataclass
class _Numbering:
    """numbering.xml: list definitions and running counters."""

    abstract: dict[str, dict[int, _Level]] = field(default_factory=dict)
    nums: dict[str, _Num] = field(default_factory=dict)
    counters: dict[str, list[int | None]] = field(default_factory=dict)

    def label(self, num_id: str, ilvl: int) -> tuple[str, bool] | None:
        """The next label of a list item ("3.", "a)", "4.2") and whether it is a bullet."""
        if num_id not in self.nums:
            return None
        num = self.nums[num_id]
        abstract_id = num.abstract
        restart = bool(num.starts)
        # A list's own level definitions (w:lvlOverride/w:lvl) and first numbers
        # (w:startOverride) win over its abstract definition's, as in Word.
        levels = {**self.abstract.get(abstract_id, {}), **num.levels}
        for k, start in num.starts.items():
            if k in levels:
                levels[k] = _Level(levels[k].fmt, levels[k].text, start)
        level = levels.get(ilvl)
        if level is None:
            return None
        if level.fmt == "bullet":
            return "-", True
        # Lists sharing a definition continue each other's numbering unless the list
        # restarts it (w:startOverride), as in Word.
        key = num_id if restart else f"a{abstract_id}"
        counters = self.counters.setdefault(key, [None] * 9)
        for j in range(ilvl):
            if counters[j] is None:
                counters[j] = levels[j].start if j in levels else 1
        current = counters[ilvl]
        counters[ilvl] = level.start if current is None else current + 1
        for j in range(ilvl + 1, 9):
            counters[j] = None
        if level.fmt == "none":
            return "", False

        def number(match: re.Match[str]) -> str:
            k = int(match.group(1)) - 1
            value = counters[k] if 0 <= k < 9 else None
            fmt = levels[k].fmt if k in levels else "decimal"
            return _format_number(value or 1, fmt)

        return re.sub(r"%([1-9])", number, level.text).strip(), False


@dataclass(frozen=True)
class _Block:
    """One anchored block: a heading, paragraph, list item or table."""

    anchor: str
    text: str
    section: str
    heading_level: int | None = None


def extract_docx(path: Path, data: bytes) -> Document:
    """A .docx file's bytes as a Document (``sha256`` and ``tokens`` left unset).

    Raises DocumentEncrypted for a password-protected file, DocumentUnreadable for a
    damaged or non-Word file and DocumentEmpty when it holds no text.
    """
    if data.startswith(CFB_MAGIC):
        if _ENCRYPTED_STREAM in data:
            raise DocumentEncrypted(
                path,
                "the Word document is password-protected; save a copy without a password "
                "and try again",
            )
        raise DocumentUnreadable(
            path, "this is an old Word 97-2003 (.doc) file, not .docx; save it as .docx in Word"
        )
    if not data.startswith(ZIP_MAGIC):
        raise DocumentUnreadable(path, "this is not a Word .docx file (it is not a zip archive)")
    try:
        # Parts unpack within caps (documents.source): a deflate bomb is refused, not inflated.
        with BoundedZip(io.BytesIO(data)) as archive:
            reader = _Reader(path, archive)
            blocks = reader.blocks()
            properties = reader.properties()
    except (zipfile.BadZipFile, EOFError, ValueError, KeyError, zlib.error, OSError) as exc:
        # zlib.error: a part whose compressed data is corrupt (only found when it is read).
        raise DocumentUnreadable(path, f"the Word document is damaged ({_one_line(exc)})") from exc
    except NotImplementedError as exc:  # an unsupported zip compression method
        raise DocumentUnreadable(path, f"the Word document cannot be unpacked ({exc})") from exc

    if not blocks:
        raise DocumentEmpty(path, "no text could be extracted: the Word document is empty")
    pages = _pages(blocks)
    outline = [
        OutlineEntry(b.heading_level, _heading_title(b.text), _page_of(pages, b.anchor))
        for b in blocks
        if b.heading_level is not None
    ]
    title = choose_title(
        [
            properties.pop("Title", ""),
            reader.title,
            *(entry.title for entry in outline),
            *(
                _NOTE_MARK.sub("", _heading_title(b.text))
                for b in blocks
                if b.section != NOTES_SECTION
            ),
        ],
        path.stem,
    )
    metadata = {"Format": "Word (.docx)", **properties}
    return Document(
        sha256="",
        path=str(path),
        kind="docx",
        title=title,
        pages=pages,
        outline=outline,
        metadata=metadata,
        warnings=reader.warnings,
    )


_ANCHOR = re.compile(r"^\[?\s*(?:§\s*(?P<section>[\w.\-]+))?\s*,?\s*(?:¶\s*(?P<para>\d+))?\s*\]?$")


def page_for_anchor(pages: Sequence[Page], anchor: str) -> int | None:
    """The page holding a cited ``§ 4.2 ¶ 3`` (or ``§ 4.2``, ``¶ 7``), from the labels alone.

    A section's pages are labelled ``§ 4.2``, then ``§ 4.2 ¶ 12``...; the paragraph is on
    the last of them that starts at or before it. None when no page has that section.
    """
    wanted = _ANCHOR.match(anchor.strip())
    if not wanted or not (wanted["section"] or wanted["para"]):
        return None
    paragraph = int(wanted["para"] or 0)
    found: int | None = None
    for page in pages:
        label = _ANCHOR.match(page.label)
        if not label or label["section"] != wanted["section"]:
            continue
        if found is None or int(label["para"] or 0) <= paragraph:
            found = page.number
    return found


class _Reader:
    """Walks one .docx: main part, styles, numbering, core properties."""

    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        self.path = path
        self.archive = archive
        self.names = set(archive.namelist())
        self.main = self._main_part()
        self.rels = self._relationships(self.main)
        self.rel_ids = self._relationship_ids(self.main)
        self.styles = self._styles()
        self.numbering = self._numbering()
        self.warnings: list[str] = []
        self.title = ""
        self._types: dict[str, str] | None = None

    # --- parts ------------------------------------------------------------------

    def _xml(self, name: str) -> ET.Element | None:
        """A part parsed, None when absent; refuses DTDs (no entity expansion, ever)."""
        if name not in self.names:
            return None
        if self.archive.getinfo(name).file_size > MAX_PART_BYTES:
            raise ValueError(f"{name} is larger than {MAX_PART_BYTES >> 20} MB")
        data = self.archive.read(name)
        for strict, transitional in _STRICT_NAMESPACES:
            if strict in data:
                data = data.replace(strict, transitional)
        # A DOCTYPE anywhere (after a long comment, in UTF-16) is refused by expat itself.
        return parse_xml(name, data)

    def _main_part(self) -> str:
        """The document part named by the package relationships (word/document.xml)."""
        rels = self._xml("_rels/.rels")
        if rels is not None:
            for rel in rels.iter(f"{_REL}Relationship"):
                if rel.get("Type", "").endswith("/officeDocument"):
                    target = rel.get("Target", "").lstrip("/")
                    if target in self.names:
                        return target
        if "word/document.xml" in self.names:
            return "word/document.xml"
        raise ValueError("no word/document.xml: this is not a Word document")

    def _parts_of(self, kinds: tuple[str, ...]) -> list[str]:
        """Every part of the main part's relationships of these types, in their order."""
        return [
            target
            for kind, target in self.rel_ids.values()
            if kind in kinds and target in self.names
        ]

    def _relationship_ids(self, part: str) -> dict[str, tuple[str, str]]:
        """Relationship id -> (type suffix, part name), for the parts next to ``part``."""
        folder = PurePosixPath(part).parent
        rels = self._xml(str(folder / "_rels" / f"{PurePosixPath(part).name}.rels"))
        found: dict[str, tuple[str, str]] = {}
        if rels is None:
            return found
        for rel in rels.iter(f"{_REL}Relationship"):
            target = rel.get("Target", "")
            if rel.get("TargetMode") == "External" or not target:
                continue
            name = target.lstrip("/") if target.startswith("/") else str(folder / target)
            found[rel.get("Id", "")] = (rel.get("Type", "").rsplit("/", 1)[-1], name)
        return found

    def _relationships(self, part: str) -> dict[str, str]:
        """Relationship type suffix -> part name, for the parts next to ``part``."""
        folder = PurePosixPath(part).parent
        rels = self._xml(str(folder / "_rels" / f"{PurePosixPath(part).name}.rels"))
        found: dict[str, str] = {}
        if rels is None:
            return found
        for rel in rels.iter(f"{_REL}Relationship"):
            kind = rel.get("Type", "").rsplit("/", 1)[-1]
            target = rel.get("Target", "")
            if rel.get("TargetMode") == "External" or not target:
                continue
            name = target.lstrip("/") if target.startswith("/") else str(folder / target)
            found.setdefault(kind, name)
        return found

    def _styles(self) -> dict[str, _Style]:
        """Paragraph styles by id."""
        root = self._xml(self.rels.get("styles", "word/styles.xml"))
        styles: dict[str, _Style] = {}
        if root is None:
            return styles
        for el in root.iter(f"{_W}style"):
            if el.get(f"{_W}type", "paragraph") != "paragraph":
                continue
            style = _Style(name=_val(el.find(f"{_W}name")) or "")
            style.based_on = _val(el.find(f"{_W}basedOn"))
            ppr = el.find(f"{_W}pPr")
            if ppr is not None:
                style.outline_level = _int(_val(ppr.find(f"{_W}outlineLvl")))
                num = ppr.find(f"{_W}numPr")
                if num is not None:
                    style.num_id = _val(num.find(f"{_W}numId"))
                    style.ilvl = _int(_val(num.find(f"{_W}ilvl")))
            styles[el.get(f"{_W}styleId", "")] = style
        return styles

    def _numbering(self) -> _Numbering:
        """List definitions from numbering.xml."""
        numbering = _Numbering()
        root = self._xml(self.rels.get("numbering", "word/numbering.xml"))
        if root is None:
            return numbering
        for el in root.iter(f"{_W}abstractNum"):
            levels: dict[int, _Level] = {}
            for lvl in el.iter(f"{_W}lvl"):
                ilvl = _int(lvl.get(f"{_W}ilvl"))
                if ilvl is not None:
                    levels[ilvl] = _level(lvl)
            numbering.abstract[el.get(f"{_W}abstractNumId", "")] = levels
        for el in root.iter(f"{_W}num"):
            num = _Num(_val(el.find(f"{_W}abstractNumId")) or "")
            for override in el.iter(f"{_W}lvlOverride"):
                ilvl = _int(override.get(f"{_W}ilvl"))
                if ilvl is None:
                    continue
                own = override.find(f"{_W}lvl")
                if own is not None:
                    num.levels[ilvl] = _level(own)
                start = _int(_val(override.find(f"{_W}startOverride")))
                if start is not None:
                    num.starts[ilvl] = start
            numbering.nums[el.get(f"{_W}numId", "")] = num
        return numbering

    def properties(self) -> dict[str, str]:
        """Title, author and dates from docProps/core.xml."""
        root = self._xml("docProps/core.xml")
        found: dict[str, str] = {}
        if root is None:
            return found
        for key, tag in (
            ("Title", f"{_DC}title"),
            ("Author", f"{_DC}creator"),
            ("Created", f"{_DCTERMS}created"),
            ("Modified", f"{_DCTERMS}modified"),
        ):
            el = root.find(tag)
            if el is not None and el.text and el.text.strip():
                found[key] = " ".join(el.text.split())
        return found

    # --- body ---------------------------------------------------------------------

    def blocks(self) -> list[_Block]:
        """Every non-empty block of the body in reading order, with its anchor."""
        root = self._xml(self.main)
        body = root.find(f"{_W}body") if root is not None else None
        if body is None:
            raise ValueError(f"{self.main} has no body")
        builder = _Builder()
        self._walk(body, builder)
        if not builder.blocks:
            # A document whose text is all in its headers and footers (letterheads, forms
            # laid out in a header) would otherwise be refused as empty: read them then.
            for part in self._parts_of(("header", "footer")):
                root_part = self._xml(part)
                if root_part is not None:
                    self._walk(root_part, builder)
            _drop_repeats(builder)
        notes = self._notes("footnotes", "footnote", "") + self._notes("endnotes", "endnote", "e")
        if notes:
            # Footnotes and endnotes close the document as their own section, each behind
            # the mark its reference in the text shows ("[^3]").
            builder.notes_section()
            for mark, text in notes:
                builder.add(f"[^{mark}] {text}")
        return builder.blocks

    def _notes(self, kind: str, tag: str, prefix: str) -> list[tuple[str, str]]:
        """(mark, text) of every footnote or endnote, separators left out."""
        root = self._xml(self.rels.get(kind, f"word/{kind}.xml"))
        found: list[tuple[str, str]] = []
        if root is None:
            return found
        for note in root.iter(f"{_W}{tag}"):
            if note.get(f"{_W}type") in _NOTE_SEPARATORS:
                continue
            boxes: list[ET.Element] = []
            text = " ".join(" ".join(_text(p, boxes).split()) for p in note.iter(_P)).strip()
            if text:
                found.append((f"{prefix}{note.get(f'{_W}id', '')}", text))
        return found

    def _walk(self, container: ET.Element, builder: _Builder) -> None:
        """Paragraphs and tables of a body, content control or text box, in order."""
        for child in container:
            if child.tag == _P:
                self._paragraph(child, builder)
            elif child.tag == _TBL:
                rows = self._table(child)
                if rows:
                    builder.add("Table:\n" + "\n".join(rows))
            elif child.tag in (_SDT, _SDT_CONTENT) or child.tag == f"{_W}customXml":
                self._walk(child if child.tag != _SDT else _content(child), builder)
            elif child.tag == _ALT_CHUNK:
                self._alt_chunk(child, builder)

    def _alt_chunk(self, chunk: ET.Element, builder: _Builder) -> None:
        """An imported part (w:altChunk) read in its place: HTML and plain text; other
        formats (RTF, another .docx) are named in a warning."""
        kind_target = self.rel_ids.get(chunk.get(f"{_R}id", ""))
        if kind_target is None or kind_target[1] not in self.names:
            return
        name = kind_target[1]
        if self.archive.getinfo(name).file_size > MAX_PART_BYTES:
            raise ValueError(f"{name} is larger than {MAX_PART_BYTES >> 20} MB")
        data = self.archive.read(name)
        kind = self._content_type(name)
        if "html" in kind or name.lower().endswith((".htm", ".html", ".xhtml")):
            paragraphs = html_paragraphs(_decode_part(data))
        elif kind.startswith("message/rfc822") or name.lower().endswith((".mht", ".mhtml")):
            paragraphs = html_paragraphs(_mht_html(data))
        elif kind.startswith("text/plain") or name.lower().endswith(".txt"):
            lines = _decode_part(data).splitlines()
            paragraphs = [(None, " ".join(line.split())) for line in lines]
        else:
            what = PurePosixPath(name).suffix.lstrip(".").upper() or kind or "unknown"
            self.warnings.append(
                f"an imported part in {what} format ({name}) is not read; "
                "save the document in Word to include it"
            )
            return
        for heading, text in paragraphs:
            if not text:
                continue
            if heading is not None:
                builder.heading(heading, text)
            else:
                builder.add(text)

    def _content_type(self, name: str) -> str:
        """The part's content type from [Content_Types].xml (lower case), or ''."""
        if self._types is None:
            self._types = {}
            root = self._xml("[Content_Types].xml")
            if root is not None:
                for el in root:
                    tag = el.tag.rsplit("}", 1)[-1]
                    if tag == "Override":
                        self._types[el.get("PartName", "").lstrip("/")] = el.get("ContentType", "")
                    elif tag == "Default":
                        self._types["." + el.get("Extension", "").lower()] = el.get(
                            "ContentType", ""
                        )
        found = self._types.get(name) or self._types.get(PurePosixPath(name).suffix.lower(), "")
        return found.lower()

    def _paragraph(self, p: ET.Element, builder: _Builder) -> None:
        boxes: list[ET.Element] = []
        text = _text(p, boxes).strip()
        ppr = p.find(f"{_W}pPr")
        style_id = _val(ppr.find(f"{_W}pStyle")) if ppr is not None else None
        chain = self._style_chain(style_id)
        level = self._heading_level(ppr, chain)
        label = self._list_label(ppr, chain)
        if text:
            if level == -1:  # the Title style: the document's title, shown as a heading
                if not self.title:
                    self.title = " ".join(text.split())
                builder.add(f"# {text}")
            elif level is not None:
                number = label[0].rstrip(".") if label and not label[1] else ""
                if number and not text.startswith(number):
                    text = f"{number} {text}"
                builder.heading(level, text)
            elif label is not None:
                marker, _bullet = label
                depth = self._ilvl(ppr, chain)
                builder.add(f"{'  ' * depth}{marker} {text}" if marker else text)
            else:
                builder.add(text)
        for box in boxes:
            self._walk(box, builder)

    def _table(self, tbl: ET.Element) -> list[str]:
        """Markdown-like rows: ``| a | b |``, a rule after the first row."""
        rows: list[str] = []
        for tr in _children(tbl, _TR):
            cells: list[str] = []
            for tc in _children(tr, _TC):
                boxes: list[ET.Element] = []
                # Nested tables and text boxes are flattened into the cell's text.
                parts = [_text(p, boxes).strip() for p in tc.iter(_P)]
                cell = " ".join(" ".join(p.split()) for p in parts if p).replace("|", "\\|")
                cells.append(cell)
                tcpr = tc.find(f"{_W}tcPr")
                span = _int(_val(tcpr.find(f"{_W}gridSpan"))) if tcpr is not None else None
                cells.extend([""] * ((span or 1) - 1))
            if any(cells):
                rows.append("| " + " | ".join(cells) + " |")
                if len(rows) == 1:
                    rows.append("|" + " --- |" * len(cells))
        return rows

    # --- styles and numbering -------------------------------------------------------

    def _style_chain(self, style_id: str | None) -> list[_Style]:
        """The style and the styles it is based on, nearest first (cycle-safe)."""
        chain: list[_Style] = []
        seen: set[str] = set()
        while style_id and style_id not in seen and style_id in self.styles:
            seen.add(style_id)
            style = self.styles[style_id]
            chain.append(style)
            style_id = style.based_on
        return chain

    def _heading_level(self, ppr: ET.Element | None, chain: list[_Style]) -> int | None:
        """0-8 for a heading, -1 for the Title style, None for body text."""
        if ppr is not None:
            own = _int(_val(ppr.find(f"{_W}outlineLvl")))
            if own is not None:
                return own if own < 9 else None
        for style in chain:
            name = style.name.strip().lower()
            if name == "title":
                return -1
            match = _HEADING_NAME.match(name)
            if match:
                return int(match.group(1)) - 1
            if style.outline_level is not None:
                return style.outline_level if style.outline_level < 9 else None
        return None

    def _numbering_ref(
        self, ppr: ET.Element | None, chain: list[_Style]
    ) -> tuple[str | None, int | None]:
        """(numId, ilvl) from the paragraph, else from its styles."""
        num = ppr.find(f"{_W}numPr") if ppr is not None else None
        num_id = _val(num.find(f"{_W}numId")) if num is not None else None
        ilvl = _int(_val(num.find(f"{_W}ilvl"))) if num is not None else None
        for style in chain:
            num_id = num_id or style.num_id
            ilvl = ilvl if ilvl is not None else style.ilvl
        return num_id, ilvl

    def _ilvl(self, ppr: ET.Element | None, chain: list[_Style]) -> int:
        return min(self._numbering_ref(ppr, chain)[1] or 0, 8)

    def _list_label(self, ppr: ET.Element | None, chain: list[_Style]) -> tuple[str, bool] | None:
        num_id, ilvl = self._numbering_ref(ppr, chain)
        if not num_id or num_id == "0":
            return None  # numId 0 switches numbering off
        return self.numbering.label(num_id, min(ilvl or 0, 8))


def _level(lvl: ET.Element) -> _Level:
    """A w:lvl's number format, label template and first number."""
    return _Level(
        fmt=_val(lvl.find(f"{_W}numFmt")) or "decimal",
        text=_val(lvl.find(f"{_W}lvlText")) or "",
        start=_int(_val(lvl.find(f"{_W}start"))) or 1,
    )


class _Builder:
    """Numbers sections and paragraphs as the blocks arrive."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.section = ""
        self.paragraph = 0
        self.tree: list[tuple[int, int]] = []  # (heading level, counter) per open level
        self.used: set[str] = set()

    def heading(self, level: int, text: str) -> None:
        popped: tuple[int, int] | None = None
        while self.tree and self.tree[-1][0] > level:
            popped = self.tree.pop()
        if self.tree and self.tree[-1][0] == level:
            self.tree[-1] = (level, self.tree[-1][1] + 1)
        else:
            # After a heading that skipped this level (H1, H3, then H2) the H2 follows the
            # H3 as its sibling, so their numbers differ (1.1, 1.2).
            self.tree.append((level, popped[1] + 1 if popped else 1))
        computed = ".".join(str(count) for _, count in self.tree)
        printed = _LEADING_NUMBER.match(text)
        number = printed.group(1) if printed else computed
        if f"§ {number}" in self.used:
            number = computed
        suffix = 2
        base = number
        while f"§ {number}" in self.used:
            number = f"{base}-{suffix}"
            suffix += 1
        self.section = f"§ {number}"
        self.used.add(self.section)
        self.paragraph = 0
        hashes = "#" * min(level + 2, 6)  # "#" is the document title
        self.blocks.append(
            _Block(self.section, f"[{self.section}] {hashes} {text}", self.section, level)
        )

    def notes_section(self) -> None:
        """Start the closing section of footnotes and endnotes."""
        self.section = NOTES_SECTION
        self.paragraph = 0
        self.blocks.append(
            _Block(self.section, f"[{self.section}] ## Notes", self.section, heading_level=0)
        )

    def add(self, text: str) -> None:
        self.paragraph += 1
        anchor = f"{self.section} ¶ {self.paragraph}" if self.section else f"¶ {self.paragraph}"
        self.blocks.append(_Block(anchor, f"[{anchor}] {text}", self.section))


def _drop_repeats(builder: _Builder) -> None:
    """Blocks whose text repeats an earlier one (the same footer on first and other pages)."""
    seen: set[str] = set()
    kept = []
    for block in builder.blocks:
        body = block.text.split("] ", 1)[-1]
        if body in seen:
            continue
        seen.add(body)
        kept.append(block)
    builder.blocks[:] = kept


def _decode_part(data: bytes) -> str:
    """An imported text or HTML part's bytes as text (BOM, declared charset, else UTF-8)."""
    for bom, codec in (
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    declared = re.search(rb"charset=[\"']?([A-Za-z0-9_\-]+)", data[:2048])
    if declared:
        try:
            return data.decode(declared.group(1).decode("ascii"), errors="replace")
        except LookupError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _mht_html(data: bytes) -> str:
    """The HTML of a MIME HTML (.mht) part, as Word writes altChunks of pasted pages."""
    message = email.message_from_bytes(data, policy=email.policy.default)
    for part in message.walk():
        if part.get_content_type() == "text/html":
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                charset = part.get_content_charset() or "utf-8"
                try:
                    return payload.decode(charset, errors="replace")
                except LookupError:
                    return payload.decode("utf-8", errors="replace")
    return ""


def _pages(blocks: list[_Block]) -> list[Page]:
    """A page per section; long sections continue on pages named by their first paragraph."""
    pages: list[Page] = []
    current: list[_Block] = []
    size = 0
    for block in blocks:
        new_section = bool(current) and block.section != current[0].section
        too_long = bool(current) and size + len(block.text) > PAGE_CHARS
        if new_section or too_long:
            pages.append(_page(len(pages) + 1, current))
            current, size = [], 0
        current.append(block)
        size += len(block.text) + 1
    if current:
        pages.append(_page(len(pages) + 1, current))
    return pages


def _page(number: int, blocks: list[_Block]) -> Page:
    return Page(number, blocks[0].anchor, "\n".join(b.text for b in blocks))


def _page_of(pages: list[Page], anchor: str) -> int | None:
    return next((p.number for p in pages if p.label == anchor), None)


def _heading_title(block_text: str) -> str:
    """``[§ 2] ## 2 Scope`` -> ``2 Scope``."""
    return block_text.split("] ", 1)[-1].lstrip("#").strip()[:TITLE_MAX]


def _text(el: ET.Element, boxes: list[ET.Element]) -> str:
    """The visible text of a paragraph; text boxes met on the way go to ``boxes``."""
    parts: list[str] = []

    def walk(node: ET.Element) -> None:
        for child in node:
            tag = child.tag
            if tag in (_T, _MATH_T):
                parts.append(child.text or "")
            elif tag in _SKIP:
                continue
            elif tag == _TAB:
                parts.append("\t")
            elif tag in (_BR, _CR):
                parts.append("\n" if child.get(f"{_W}type") in (None, "textWrapping") else " ")
            elif tag == _NB_HYPHEN:
                parts.append("-")
            elif tag in _NOTE_REFERENCES:
                parts.append(f"[^{_NOTE_REFERENCES[tag]}{child.get(f'{_W}id', '')}]")
            elif tag == _TXBX:
                boxes.append(child)
            elif tag == _SYM:
                parts.append(_symbol(child.get(f"{_W}font", ""), child.get(f"{_W}char", "")))
            elif tag == _FLD_CHAR:
                parts.append(_form_field(child.find(_FF_DATA)))
            elif tag == _SDT and _checkbox_state(child) is not None:
                # A check box content control: its state, whatever glyph its content draws.
                parts.append(CHECKED if _checkbox_state(child) else UNCHECKED)
            elif tag == _P:  # a paragraph nested in a content control inside this one
                parts.append(" ")
                walk(child)
            else:
                walk(child)

    walk(el)
    return _CONTROL.sub("", "".join(parts))


def _symbol(font: str, code: str) -> str:
    """The character a w:sym shows: its symbol font's glyph as Unicode, else its code."""
    try:
        value = int(code, 16)
    except ValueError:
        return ""
    byte = value - 0xF000 if 0xF000 <= value <= 0xF0FF else value
    mapped = _SYMBOLS.get(font.strip().lower(), {}).get(byte)
    if mapped:
        return mapped
    if 0x20 <= byte <= 0xFF and font.strip().lower() not in _SYMBOLS:
        return chr(byte)  # a text font's character given by code
    return chr(value) if 0x20 <= value < 0xD800 or 0xE000 <= value <= 0xFFFD else ""


def _form_field(data: ET.Element | None) -> str:
    """A legacy form field's state shown where its field begins: FORMCHECKBOX's box,
    FORMDROPDOWN's chosen entry (FORMTEXT's value is its result text, read as text)."""
    if data is None:
        return ""
    box = data.find(f"{_W}checkBox")
    if box is not None:
        checked = box.find(f"{_W}checked")
        if checked is not None:
            on = checked.get(_VAL, "1") not in ("0", "false", "off")
        else:
            on = _val(box.find(f"{_W}default")) in ("1", "true", "on")
        return f"{CHECKED if on else UNCHECKED} "
    choices = data.find(f"{_W}ddList")
    if choices is not None:
        entries = [_val(e) or "" for e in choices.findall(f"{_W}listEntry")]
        chosen = _int(_val(choices.find(f"{_W}result")))
        if chosen is None:
            chosen = _int(_val(choices.find(f"{_W}default"))) or 0
        return entries[chosen] if 0 <= chosen < len(entries) else ""
    return ""


def _checkbox_state(sdt: ET.Element) -> bool | None:
    """A content control's check box state (w14:checkbox), None when it is not one."""
    props = sdt.find(f"{_W}sdtPr")
    box = props.find(f"{_W14}checkbox") if props is not None else None
    if box is None:
        return None
    checked = box.find(f"{_W14}checked")
    return checked is not None and checked.get(f"{_W14}val", "1") in ("1", "true")


def _content(sdt: ET.Element) -> ET.Element:
    """A content control's content element (or an empty one)."""
    found = sdt.find(_SDT_CONTENT)
    return found if found is not None else ET.Element(_SDT_CONTENT)


def _children(parent: ET.Element, tag: str) -> list[ET.Element]:
    """Children with ``tag`` in order, looking through content controls (w:sdt)."""
    found: list[ET.Element] = []
    for child in parent:
        if child.tag == tag:
            found.append(child)
        elif child.tag == _SDT:
            found.extend(_children(_content(child), tag))
    return found


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (zlib's name the stream, not the file)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _val(el: ET.Element | None) -> str | None:
    return el.get(_VAL) if el is not None else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _format_number(value: int, fmt: str) -> str:
    """A list counter in Word's number formats (the common ones; others as decimals)."""
    if fmt in ("lowerLetter", "upperLetter"):
        letters = ""
        n = value
        while n > 0:
            n, rem = divmod(n - 1, 26)
            letters = chr(ord("a") + rem) + letters
        return letters.upper() if fmt == "upperLetter" else letters
    if fmt in ("lowerRoman", "upperRoman"):
        out, n = "", value
        for size, numeral in _ROMAN:
            while n >= size:
                out += numeral
                n -= size
        return out.upper() if fmt == "upperRoman" else out
    if fmt == "decimalZero":
        return f"{value:02d}"
    return str(value)
