"""Form-field values and annotation contents of a PDF page, placed into the page's text.

A filled form keeps its values outside the page's text (AcroForm widgets), and reviewers'
notes live in annotations; PDFium's page text has neither. They are read through
PDFium's form and annotation API (``FPDFAnnot_*`` with the document's form environment),
which costs nothing on pages without annotations. Measured on a 40-page filled form
(bench/bench_ingest.py): pypdf's field reader alone takes ~4x PDFium's whole text
extraction; PDFium's getters read every field in a fraction of it.

Each value is marked so the model and the reader can tell what it is (``[Field: Country]
Spain``, ``☒ I accept``, ``[Note: J. Smith] Check the cap``) and placed where it appears:
after the text on its left on the same line (a label and its box), else on a line of its
own after the nearest line above it. Positions come from PDFium's character boxes, asked
only for the few characters needed (each line's ends, a binary search inside a line).
"""

from __future__ import annotations

import bisect
import ctypes
import html
import re
from dataclasses import dataclass, replace
from typing import Any

import pypdfium2.raw as pdfium_c

# Widgets and comment annotations whose text a viewer shows. Links, popups (their parent
# holds the text), highlights without a comment and the like carry nothing to read.
_COMMENT_TYPES = frozenset(
    {
        pdfium_c.FPDF_ANNOT_TEXT,
        pdfium_c.FPDF_ANNOT_FREETEXT,
        pdfium_c.FPDF_ANNOT_LINE,
        pdfium_c.FPDF_ANNOT_SQUARE,
        pdfium_c.FPDF_ANNOT_CIRCLE,
        pdfium_c.FPDF_ANNOT_POLYGON,
        pdfium_c.FPDF_ANNOT_POLYLINE,
        pdfium_c.FPDF_ANNOT_HIGHLIGHT,
        pdfium_c.FPDF_ANNOT_UNDERLINE,
        pdfium_c.FPDF_ANNOT_SQUIGGLY,
        pdfium_c.FPDF_ANNOT_STRIKEOUT,
        pdfium_c.FPDF_ANNOT_STAMP,
        pdfium_c.FPDF_ANNOT_CARET,
        pdfium_c.FPDF_ANNOT_INK,
        pdfium_c.FPDF_ANNOT_FILEATTACHMENT,
        pdfium_c.FPDF_ANNOT_SOUND,
        pdfium_c.FPDF_ANNOT_REDACT,
    }
)
_HIDDEN = pdfium_c.FPDF_ANNOT_FLAG_HIDDEN | pdfium_c.FPDF_ANNOT_FLAG_NOVIEW
_PASSWORD_FIELD = 1 << 13  # field flag bit 14: the value is never shown
CHECKED, UNCHECKED = "☒", "☐"
_CHECK_VALUES = frozenset({"yes", "on", "off", "1", "true", "x"})
# "[0]" index suffixes of XFA-style names: "form1[0].Page1[0].Country[0]" -> "Country".
_INDEX_SUFFIX = re.compile(r"\[\d+\]")
_LABEL_MAX = 80
_NOTE_MAX = 4_000
# What a field, note or name may not hold: brackets end the marker, controls are noise.
_MARKER_CHARS = str.maketrans({"[": "(", "]": ")"})
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]")


@dataclass(frozen=True)
class Item:
    """A marked text to put into a page, with where it appears (PDF user space)."""

    left: float
    bottom: float
    right: float
    top: float
    text: str
    inline: bool  # a field next to its label; False: a note on a line of its own
    # Its words are in its appearance only (a signature, a text box without contents):
    # read_signatures reads them.
    signature: bool = False


_MARKUP = re.compile(r"<[^>]*>")
_BUFFER_UNITS = 2048
# One reusable buffer for PDFium's string getters: every call into PDFium happens under
# pdf.PDFIUM_LOCK, and allocating a buffer per call cost more than the call itself.
_buffer = (ctypes.c_ushort * _BUFFER_UNITS)()


def _utf16(fn: Any, *args: Any) -> str:
    """A UTF-16 string from one of PDFium's getters that take (buffer, size in bytes)."""
    size = int(fn(*args, _buffer, _BUFFER_UNITS * 2))
    if size <= 2:
        return ""
    if size > _BUFFER_UNITS * 2:  # longer than the buffer: ask again with room for it
        big = (ctypes.c_ushort * (size // 2 + 1))()
        fn(*args, big, size)
        return ctypes.string_at(big, size - 2).decode("utf-16-le", errors="replace")
    return ctypes.string_at(_buffer, size - 2).decode("utf-16-le", errors="replace")


def page_text(page: object, textpage: object) -> str:
    """A page's text in PDFium's reading order, inside its box (media box and crop box).

    FPDFText_GetBoundedText, as pypdfium2's get_text_bounded: it keeps sub- and
    superscripts next to their base ("T2", not "T\\n2").
    """
    rect = pdfium_c.FS_RECTF()
    if not pdfium_c.FPDF_GetPageBoundingBox(page, rect):
        return ""
    return _bounded_text(textpage, (rect.left, rect.top, rect.right, rect.bottom))


def _bounded_text(textpage: object, box: tuple[float, float, float, float]) -> str:
    """The text PDFium reads inside ``box`` (left, top, right, bottom); sizes in characters."""
    count = int(pdfium_c.FPDFText_GetBoundedText(textpage, *box, None, 0))
    if count <= 0:
        return ""
    buffer = (ctypes.c_ushort * (count + 1))()
    written = int(pdfium_c.FPDFText_GetBoundedText(textpage, *box, buffer, count + 1))
    return bytes(buffer)[: max(0, min(written, count)) * 2].decode("utf-16-le", errors="replace")


def _one_line(text: str, limit: int) -> str:
    """``text`` fit for a marker: controls dropped, one line, no brackets, at most ``limit``."""
    if not text.isprintable():
        text = _CONTROL.sub(" ", text)
    cleaned = " ".join(text.split())
    if "[" in cleaned or "]" in cleaned:
        cleaned = cleaned.translate(_MARKER_CHARS)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1].rstrip() + "…"


def _body(text: str) -> str:
    """A value or note's text: controls dropped, lines kept, trimmed."""
    if text.isprintable():  # one line, nothing to drop (most values)
        return " ".join(text.split())[:_NOTE_MAX]
    lines = (
        " ".join(line.split()) for line in _CONTROL.sub(" ", text.replace("\r", "\n")).split("\n")
    )
    body = "\n".join(line for line in lines if line)
    return body[:_NOTE_MAX]


def page_items(page: object, form: object | None) -> list[Item]:
    """The form values and comments on ``page`` (a raw FPDF_PAGE), in annotation order.

    ``form`` is the document's form handle (None when it has no AcroForm).
    """
    items: list[Item] = []
    count = pdfium_c.FPDFPage_GetAnnotCount(page)
    for index in range(count):
        annot = pdfium_c.FPDFPage_GetAnnot(page, index)
        if not annot:
            continue
        try:
            item = _item(annot, form)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
        if item is not None:
            items.append(item)
    return items


def _item(annot: object, form: object | None) -> Item | None:
    """One annotation as an Item, or None when it shows nothing to read."""
    subtype = pdfium_c.FPDFAnnot_GetSubtype(annot)
    if subtype == pdfium_c.FPDF_ANNOT_LINK or pdfium_c.FPDFAnnot_GetFlags(annot) & _HIDDEN:
        return None  # links (most annotations of most documents) carry no text
    signature = False
    if subtype == pdfium_c.FPDF_ANNOT_WIDGET:
        if not form:
            return None
        kind = pdfium_c.FPDFAnnot_GetFormFieldType(form, annot)
        signature = kind == pdfium_c.FPDF_FORMFIELD_SIGNATURE
        if signature and not pdfium_c.FPDFAnnot_HasKey(annot, b"AP"):
            return None  # an unsigned signature field shows nothing
        text = "[Signature]" if signature else _field_text(annot, form, kind)
        inline = not signature
    elif subtype in _COMMENT_TYPES:
        text = _comment_text(annot, subtype)
        inline = False
        if text is None and subtype == pdfium_c.FPDF_ANNOT_FREETEXT:
            # A typewriter text box whose words are only in its appearance (no Contents).
            signature = pdfium_c.FPDFAnnot_HasKey(annot, b"AP")
            text = "[Text box]" if signature else None
    else:
        return None
    if not text:
        return None
    rect = pdfium_c.FS_RECTF()
    if not pdfium_c.FPDFAnnot_GetRect(annot, rect):
        rect.left = rect.right = rect.top = rect.bottom = 0.0
    return Item(
        left=min(rect.left, rect.right),
        bottom=min(rect.bottom, rect.top),
        right=max(rect.left, rect.right),
        top=max(rect.bottom, rect.top),
        text=text,
        inline=inline,
        signature=signature,
    )


def read_signatures(document: object, index: int, items: list[Item]) -> list[Item]:
    """``items`` with each signature's marker followed by the text its appearance shows.

    PDFium's text API reads no appearance streams, and a signature's words ("Digitally
    signed by Ana Ruiz, 2024-05-02") live only there; flattening the page (in memory,
    never saved) draws the appearances into its content, where the text page reads them.
    Only pages with a signature pay for this.
    """
    if not any(item.signature for item in items):
        return items
    page = pdfium_c.FPDF_LoadPage(document, index)
    if not page:
        return items
    try:
        if pdfium_c.FPDFPage_Flatten(page, pdfium_c.FLAT_NORMALDISPLAY) != pdfium_c.FLATTEN_SUCCESS:
            return items
    finally:
        pdfium_c.FPDF_ClosePage(page)
    page = pdfium_c.FPDF_LoadPage(document, index)  # flattening takes effect on reload
    if not page:
        return items
    textpage = pdfium_c.FPDFText_LoadPage(page)
    try:
        result = []
        for item in items:
            if item.signature:
                shown = _body(
                    _bounded_text(textpage, (item.left, item.top, item.right, item.bottom))
                ).replace("\n", " ")
                item = replace(item, text=f"{item.text} {shown}" if shown else item.text)
            result.append(item)
        return result
    finally:
        if textpage:
            pdfium_c.FPDFText_ClosePage(textpage)
        pdfium_c.FPDF_ClosePage(page)


def _field_label(annot: object, form: object) -> str:
    """What a field is called for the reader: its tooltip (TU), else its own name."""
    alternate = _one_line(_utf16(pdfium_c.FPDFAnnot_GetFormFieldAlternateName, form, annot), 200)
    if alternate and len(alternate) <= _LABEL_MAX:
        return alternate
    name = _utf16(pdfium_c.FPDFAnnot_GetFormFieldName, form, annot)
    last = _INDEX_SUFFIX.sub("", name).rsplit(".", 1)[-1]
    return _one_line(last.replace("_", " "), _LABEL_MAX) or alternate[:_LABEL_MAX]


def _field_text(annot: object, form: object, kind: int) -> str | None:
    """A widget's state or value, marked: ``[Field: Country] Spain``, ``☒ I accept``."""
    if kind in (pdfium_c.FPDF_FORMFIELD_CHECKBOX, pdfium_c.FPDF_FORMFIELD_RADIOBUTTON):
        # The widget's appearance state (/AS) is its state and, when on, its export value:
        # FPDFAnnot_IsChecked and the export getter need the form's view of the page
        # (FORM_OnAfterLoadPage), which costs more than the rest of a form page.
        state = _utf16(pdfium_c.FPDFAnnot_GetStringValue, annot, b"AS")
        if not state:  # no appearance states: the field's value decides (a check box)
            state = _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
        on = bool(state) and state != "Off"
        mark = CHECKED if on else UNCHECKED
        label = _field_label(annot, form)
        export = _one_line(state, 80) if on else ""
        # A radio button's own value names the choice ("Spain"); a check box's is mostly
        # "Yes"/"On", which says nothing the mark does not.
        trivial = kind == pdfium_c.FPDF_FORMFIELD_CHECKBOX and export.lower() in _CHECK_VALUES
        if export and not trivial and export.lower() != label.lower():
            label = f"{label}: {export}" if label else export
        return f"{mark} {label}".rstrip()
    if kind in (pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX):
        chosen = [
            _utf16(pdfium_c.FPDFAnnot_GetOptionLabel, form, annot, i)
            for i in range(max(0, pdfium_c.FPDFAnnot_GetOptionCount(form, annot)))
            if pdfium_c.FPDFAnnot_IsOptionSelected(form, annot, i)
        ]
        value = "; ".join(c for c in (_body(c) for c in chosen) if c)
        value = value or _body(_utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot))
    elif kind == pdfium_c.FPDF_FORMFIELD_TEXTFIELD:
        if pdfium_c.FPDFAnnot_GetFormFieldFlags(form, annot) & _PASSWORD_FIELD:
            return None
        value = _body(_utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot))
    else:  # push buttons, signatures (their appearance is read elsewhere), unknown
        return None
    if not value:
        return None
    return f"[Field: {_field_label(annot, form)}] {value}"


def _comment_text(annot: object, subtype: int) -> str | None:
    """A comment's contents behind its marker: ``[Note: J. Smith] Check the cap``."""
    contents = _body(_utf16(pdfium_c.FPDFAnnot_GetStringValue, annot, b"Contents"))
    if not contents:
        # Rich text (RC, XHTML) is the same words with markup: its text will do.
        rich = _utf16(pdfium_c.FPDFAnnot_GetStringValue, annot, b"RC")
        contents = _body(html.unescape(" ".join(_MARKUP.sub(" ", rich).split()))) if rich else ""
    if not contents:
        return None
    author = _one_line(_utf16(pdfium_c.FPDFAnnot_GetStringValue, annot, b"T"), _LABEL_MAX)
    what = "Text box" if subtype == pdfium_c.FPDF_ANNOT_FREETEXT else "Note"
    return f"[{what}: {author}] {contents}" if author else f"[{what}] {contents}"


# --- placement -----------------------------------------------------------------------


@dataclass
class _Line:
    """A line of the page's range text: text offsets and the box of its ends."""

    start: int  # text offset of its first character
    end: int  # text offset just past its last character
    left: float
    right: float
    bottom: float
    top: float


class _Boxes:
    """Character boxes of one text page, asked for by text offset."""

    def __init__(self, textpage: object, text_length: int) -> None:
        self.textpage = textpage
        # Text offsets are character indices unless PDFium added or left out characters
        # in its text (then the two counts differ and each offset is translated).
        self.direct = text_length == pdfium_c.FPDFText_CountChars(textpage)
        self._values = [ctypes.c_double() for _ in range(4)]
        self._refs = [ctypes.byref(v) for v in self._values]

    def box(self, offset: int) -> tuple[float, float, float, float] | None:
        """(left, right, bottom, top) of the character at text ``offset``."""
        index = (
            offset
            if self.direct
            else pdfium_c.FPDFText_GetCharIndexFromTextIndex(self.textpage, offset)
        )
        return self.char_box(index)

    def char_box(self, index: int) -> tuple[float, float, float, float] | None:
        """(left, right, bottom, top) of character ``index``."""
        if index < 0 or not pdfium_c.FPDFText_GetCharBox(self.textpage, index, *self._refs):
            return None
        left, right, bottom, top = self._values
        return left.value, right.value, bottom.value, top.value

    def nearest(self, x: float, y: float, x_tolerance: float, y_tolerance: float) -> int:
        """The index of the character at or nearest to (x, y) within the tolerances, or -1."""
        # PDFium takes the tolerance as the whole width (half on each side).
        return int(
            pdfium_c.FPDFText_GetCharIndexAtPos(
                self.textpage, x, y, 2 * x_tolerance, 2 * y_tolerance
            )
        )

    def offset(self, index: int) -> int:
        """The text offset of character ``index``."""
        if self.direct:
            return index
        return int(pdfium_c.FPDFText_GetTextIndexFromCharIndex(self.textpage, index))


def _range_text(textpage: object) -> str:
    """The page's text in character order (FPDFText_GetText), offsets as PDFium counts them."""
    count = pdfium_c.FPDFText_CountChars(textpage)
    if count <= 0:
        return ""
    buffer = ctypes.create_string_buffer((count + 1) * 2)
    written = pdfium_c.FPDFText_GetText(
        textpage, 0, count, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort))
    )
    size = max(0, int(written) - 1) * 2
    return buffer.raw[:size].decode("utf-16-le", errors="replace")


def _lines(text: str, boxes: _Boxes) -> list[_Line]:
    """Lines of ``text`` with the boxes of their first and last visible characters."""
    lines: list[_Line] = []
    for match in re.finditer(r"[^\r\n]+", text):
        segment = match.group()
        lead = len(segment) - len(segment.lstrip())
        trail = len(segment.rstrip())
        if trail <= lead:
            continue
        first = boxes.box(match.start() + lead)
        last = boxes.box(match.start() + trail - 1)
        if first is None or last is None:
            continue
        lines.append(
            _Line(
                start=match.start() + lead,
                end=match.start() + trail,
                left=min(first[0], last[0]),
                right=max(first[1], last[1]),
                bottom=min(first[2], last[2]),
                top=max(first[3], last[3]),
            )
        )
    return lines


def _same_line(line: _Line, item: Item) -> bool:
    """Whether a line of text sits at the height of ``item`` (their vertical middles meet)."""
    middle = (item.bottom + item.top) / 2
    line_middle = (line.bottom + line.top) / 2
    return line.bottom - 2 <= middle <= line.top + 2 or item.bottom <= line_middle <= item.top


def _offset_after_left_text(line: _Line, item: Item, boxes: _Boxes) -> int:
    """The offset after the last character of ``line`` that ends left of ``item``."""
    lo, hi = line.start, line.end - 1  # binary search: characters run left to right
    found = line.start
    while lo <= hi:
        mid = (lo + hi) // 2
        box = boxes.box(mid)
        if box is not None and box[1] <= item.left + 1:
            found = mid + 1
            lo = mid + 1
        else:
            hi = mid - 1
    return found


# How far to the side of a field its label may be (points: two inches).
_LABEL_REACH = 144.0


def _beside(item: Item, boxes: _Boxes) -> tuple[int, str] | None:
    """The inline place of a field from the one character PDFium finds nearest its left
    edge (its label), else its right edge (a box before its label); None if neither."""
    middle = (item.bottom + item.top) / 2
    reach_y = max((item.top - item.bottom) / 2, 2.0)
    for x, how in ((item.left - 1, "after"), (item.right + 1, "before")):
        index = boxes.nearest(x, middle, _LABEL_REACH, reach_y)
        box = boxes.char_box(index) if index >= 0 else None
        if box is None or not box[2] - 2 <= middle <= box[3] + 2:
            continue
        if how == "after" and box[1] <= item.left + 1:
            return boxes.offset(index) + 1, how
        if how == "before" and box[0] >= item.right - 1:
            return boxes.offset(index), how
    return None


def _position(item: Item, lines: list[_Line], boxes: _Boxes, text: str) -> tuple[int, str]:
    """Where ``item`` goes in the range text, and how: ``after`` the text before that
    offset, ``before`` the text from it on (both inline), or on a ``line`` of its own."""
    if item.inline:
        level = [line for line in lines if _same_line(line, item)]
        left_of = [line for line in level if line.left < item.left]
        if left_of:
            # The text closest on its left (its label): after its last character there.
            line = max(left_of, key=lambda ln: min(ln.right, item.left))
            if line.right <= item.left + 1:
                return line.end, "after"
            return _offset_after_left_text(line, item, boxes), "after"
        if level:  # a box before its label ("☐ I decline"): before that text
            return min(line.start for line in level), "before"
    middle = (item.bottom + item.top) / 2
    above = [line for line in lines if (line.bottom + line.top) / 2 >= middle - 1]
    if above:
        # The nearest line above, preferring one that overlaps it horizontally (its column).
        def distance(line: _Line) -> tuple[bool, float]:
            overlaps = line.left <= item.right and item.left <= line.right
            return (not overlaps, (line.bottom + line.top) / 2 - middle)

        line = min(above, key=distance)
        end = text.find("\n", line.end)
        return (len(text) if end < 0 else end), "line"
    return 0, "line"


def locate(bounded: str, textpage: object, items: list[Item]) -> list[tuple[int, bool]]:
    """Where each item goes in ``bounded`` (the page's text as extracted): an offset, and
    whether it goes inline there (else on a line of its own).

    Offsets are found in PDFium's range text and carried over to ``bounded`` by counting
    the visible characters before them: both hold the same characters in the same order,
    only their line breaks differ.
    """
    text = _range_text(textpage)
    boxes = _Boxes(textpage, len(text))
    lines: list[_Line] | None = None  # measured only when a quick look does not do
    visible = Visible(bounded)
    places: list[tuple[int, str]] = []
    for item in items:
        place = _beside(item, boxes) if item.inline else None
        if place is None:
            if lines is None:
                lines = _lines(text, boxes)
            place = _position(item, lines, boxes, text) if lines else (0, "line")
        places.append(place)
    # Visible characters before each offset, counted once along the text (in C).
    counts: dict[int, int] = {}
    position = running = 0
    for offset in sorted({offset for offset, _ in places}):
        running += visible_count(text[position:offset], offset - position)
        counts[offset] = running
        position = offset
    found: list[tuple[int, bool]] = []
    for offset, how in places:
        k = counts[offset]
        target = visible.before(k) if how == "before" else visible.after(k)
        if how == "line" and k:
            line_end = bounded.find("\n", target)
            target = len(bounded) if line_end < 0 else line_end
        found.append((target, how != "line"))
    return found


_BLANKS = " \t\r\n"


def visible_count(text: str, end: int) -> int:
    """Characters of ``text[:end]`` that are not blanks (counted in C, by str.count)."""
    return end - sum(text.count(blank, 0, end) for blank in _BLANKS)


class Visible:
    """Offsets of a text by how many visible (non-blank) characters come before them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = []  # offset where each line starts
        self.counts: list[int] = []  # visible characters before each line
        position = count = 0
        for line in text.split("\n"):
            self.starts.append(position)
            self.counts.append(count)
            position += len(line) + 1
            count += visible_count(line, len(line))
        self.total = count

    def _offset(self, k: int, after: bool) -> int:
        """The offset just after the ``k``-th visible character, or just before the next."""
        if k <= 0:
            return 0 if after else self._offset(1, True) - 1 if self.total else len(self.text)
        if k > self.total or (not after and k >= self.total):
            return len(self.text)
        target = k if after else k + 1
        row = bisect.bisect_left(self.counts, target) - 1
        seen = self.counts[row]
        for offset in range(self.starts[row], len(self.text)):
            if self.text[offset] not in _BLANKS:
                seen += 1
                if seen == target:
                    return offset + 1 if after else offset
        return len(self.text)

    def after(self, k: int) -> int:
        """The offset right after the ``k``-th visible character (0 for none)."""
        return self._offset(k, True)

    def before(self, k: int) -> int:
        """The offset of the visible character that follows ``k`` of them."""
        return self._offset(k, False)


def insert(bounded: str, items: list[Item], places: list[tuple[int, bool]]) -> str:
    """``bounded`` with each item's text put in at its place (from :func:`locate`)."""
    placed = sorted(zip(places, items, strict=True), key=lambda p: (p[0][0], -p[1].top, p[1].left))
    out: list[str] = []
    position = 0
    last = ""  # the last character written so far
    for (target, inline), item in placed:
        if target > position:
            out.append(bounded[position:target])
            last = bounded[target - 1]
        position = target
        after = bounded[target : target + 1]
        if inline:
            pad = "" if not last or last.isspace() else " "
            out.append(f"{pad}{item.text}{'' if not after or after.isspace() else ' '}")
        else:
            tail = "\n" if after and after != "\n" else ""
            out.append(f"\n{item.text}{tail}" if last else f"{item.text}{tail}")
        last = out[-1][-1]
    out.append(bounded[position:])
    return "".join(out)
