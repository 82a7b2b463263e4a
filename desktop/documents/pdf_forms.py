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
import codecs
import ctypes
import html
import operator
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
_RADIO, _PUSH_BUTTON, _COMBO = 1 << 15, 1 << 16, 1 << 17  # field flags 16, 17, 18
# What PDFium's number and rectangle getters write into (every call is under the lock).
_number = ctypes.c_float()
_rect = pdfium_c.FS_RECTF()
CHECKED, UNCHECKED = "☒", "☐"
# A check box's on-state that says no more than the mark (English, German, French,
# Spanish, Italian and producers' own).
_CHECK_VALUES = frozenset(
    {"yes", "on", "off", "1", "true", "x", "ja", "oui", "si", "sí", "checked", "check", "selected"}
)
# A widget outside the form's fields: its field type from its own /FT.
_OWN_TYPES = {
    "Tx": pdfium_c.FPDF_FORMFIELD_TEXTFIELD,
    "Ch": pdfium_c.FPDF_FORMFIELD_COMBOBOX,
    "Btn": pdfium_c.FPDF_FORMFIELD_CHECKBOX,
    "Sig": pdfium_c.FPDF_FORMFIELD_SIGNATURE,
}
# Operators that show text, in an appearance stream: the widget's words may be there alone.
# A string that is not empty, before Tj, ' or " (or inside the array before TJ).
_STRING = r"(?:\((?:[^()\\]|\\.)+\)|<[0-9A-Fa-f\s]*[0-9A-Fa-f][0-9A-Fa-f\s]*>)"
_SHOWS_TEXT = re.compile(rf"{_STRING}\s*(?:Tj|'|\")|\[[^\]]*{_STRING}[^\]]*\]\s*TJ")
# "[0]" index suffixes of XFA-style names: "form1[0].Page1[0].Country[0]" -> "Country".
_INDEX_SUFFIX = re.compile(r"\[\d+\]")
_LABEL_MAX = 80
_NOTE_MAX = 4_000
# What a field, note or name may not hold: brackets end the marker, controls are noise.
_MARKER_CHARS = str.maketrans({"[": "(", "]": ")"})
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]")


@dataclass(slots=True)
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
_BUFFER_BYTES = 4096
# One reusable buffer for PDFium's string getters: every call into PDFium happens under
# pdf.PDFIUM_LOCK, and allocating a buffer per call cost more than the call itself. Read
# through a memoryview and decoded by the codec's own function: a string costs no copy
# through ctypes and no codec look-up.
_raw = bytearray(_BUFFER_BYTES)
_view = memoryview(_raw)
_buffer = (ctypes.c_ushort * (_BUFFER_BYTES // 2)).from_buffer(_raw)
_decode = codecs.utf_16_le_decode
_SIZE = ctypes.c_ulong(_BUFFER_BYTES)


def _bare(fn: Any) -> Any:
    """``fn`` (one of pypdfium2.raw's functions) called without ctypes' argument conversion.

    ctypes converts every argument through its declared type (argtypes) on every call,
    ~0.2 µs of a ~0.4 µs call; a form page makes ~14 calls a widget and one a line. The
    same C function without argtypes passes ints, bytes, handles and pointers as they
    are, so its callers pass exactly what C expects: pointers (never a structure or a
    float by value) and a ``c_ulong`` for a size.
    """
    address = ctypes.cast(fn, ctypes.c_void_p).value
    if not address:
        return fn
    bare: Any = ctypes.CFUNCTYPE(fn.restype)(address)
    bare.argtypes = None
    return bare


# The calls made for every annotation and line of a form page, without conversion.
_get_annot = _bare(pdfium_c.FPDFPage_GetAnnot)
_close_annot = _bare(pdfium_c.FPDFPage_CloseAnnot)
_get_subtype = _bare(pdfium_c.FPDFAnnot_GetSubtype)
_get_flags = _bare(pdfium_c.FPDFAnnot_GetFlags)
_has_key = _bare(pdfium_c.FPDFAnnot_HasKey)
_get_string = _bare(pdfium_c.FPDFAnnot_GetStringValue)
_get_number = _bare(pdfium_c.FPDFAnnot_GetNumberValue)
_get_rect = _bare(pdfium_c.FPDFAnnot_GetRect)
_loose_box = _bare(pdfium_c.FPDFText_GetLooseCharBox)
_number_pointer = ctypes.pointer(_number)
_rect_pointer = ctypes.pointer(_rect)


def _utf16(fn: Any, *args: Any) -> str:
    """A UTF-16 string from one of PDFium's getters that take (buffer, size in bytes)."""
    size: int = fn(*args, _buffer, _SIZE)
    if size <= 2:
        return ""
    if size > _BUFFER_BYTES:  # longer than the buffer: ask again with room for it
        big = bytearray(size)
        fn(*args, (ctypes.c_ushort * (size // 2)).from_buffer(big), ctypes.c_ulong(size))
        return _decode(memoryview(big)[: size - 2], "replace")[0]
    return _decode(_view[: size - 2], "replace")[0]


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
    if not text:
        return ""
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
        annot = _get_annot(page, index)
        if not annot:
            continue
        try:
            item = _item(annot, form)
        finally:
            _close_annot(annot)
        if item is not None:
            items.append(item)
    return items


def _item(annot: object, form: object | None) -> Item | None:
    """One annotation as an Item, or None when it shows nothing to read."""
    subtype = _get_subtype(annot)
    if subtype == pdfium_c.FPDF_ANNOT_LINK or _get_flags(annot) & _HIDDEN:
        return None  # links (most annotations of most documents) carry no text
    signature = False
    if subtype == pdfium_c.FPDF_ANNOT_WIDGET:
        # The widget's own partial name (/T): the full name's last part when the widget
        # is its field (merged); a kid widget has none.
        own_name = _utf16(_get_string, annot, b"T")
        kind, flags = -1, 0
        if own_name and not _has_key(annot, b"Parent"):
            # A top-level field merged with its widget: its dictionary holds all there is
            # (nothing to inherit), read directly; the form's getters would first find the
            # field by its name, the dearest step of a filled form's page.
            kind, flags = _own_kind(annot)
            if kind in (pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX):
                kind = -1  # its options are read through the form
            else:
                form = None
        if kind < 0:
            kind = pdfium_c.FPDFAnnot_GetFormFieldType(form, annot) if form else -1
            if kind <= pdfium_c.FPDF_FORMFIELD_UNKNOWN:
                # Not in the form's fields (no AcroForm, or not listed in it): a viewer
                # still shows it, so its own dictionary says what it is.
                (kind, flags), form = _own_kind(annot), None
            elif form:
                flags = pdfium_c.FPDFAnnot_GetFormFieldFlags(form, annot)
        signature = kind == pdfium_c.FPDF_FORMFIELD_SIGNATURE
        if signature and not _has_key(annot, b"AP"):
            return None  # an unsigned signature field shows nothing
        inline = not signature  # a signature goes on a line of its own
        if signature:
            text: str | None = "[Signature]"
        else:
            text, signature = _field_text(annot, form, kind, own_name, flags)
    elif subtype in _COMMENT_TYPES:
        text = _comment_text(annot, subtype)
        inline = False
        if text is None and subtype == pdfium_c.FPDF_ANNOT_FREETEXT:
            # A typewriter text box whose words are only in its appearance (no Contents).
            signature = _has_key(annot, b"AP")
            text = "[Text box]" if signature else None
    else:
        return None
    if not text:
        return None
    rect = _rect
    if not _get_rect(annot, _rect_pointer):
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
                if not shown and item.text.startswith("[Field:"):
                    continue  # a field's appearance that shows nothing after all
                item = replace(item, text=f"{item.text} {shown}" if shown else item.text)
            result.append(item)
        return result
    finally:
        if textpage:
            pdfium_c.FPDFText_ClosePage(textpage)
        pdfium_c.FPDF_ClosePage(page)


def _field_label(annot: object, form: object | None, own_name: str) -> str:
    """What a field is called for the reader: its tooltip (TU), else its own name."""
    if form:
        alternate = _utf16(pdfium_c.FPDFAnnot_GetFormFieldAlternateName, form, annot)
    else:
        alternate = _utf16(_get_string, annot, b"TU")
    alternate = _one_line(alternate, 200)
    if alternate and len(alternate) <= _LABEL_MAX:
        return alternate
    name = own_name or (_utf16(pdfium_c.FPDFAnnot_GetFormFieldName, form, annot) if form else "")
    if "[" in name:
        name = _INDEX_SUFFIX.sub("", name)
    last = name.rsplit(".", 1)[-1]
    return _one_line(last.replace("_", " "), _LABEL_MAX) or alternate[:_LABEL_MAX]


def _field_value(annot: object, form: object | None, own_name: str) -> str:
    """A field's value (/V). A widget with a name of its own is its field (merged): its own
    /V is the value, read in a third of the time the form's getter takes to find the field
    by its full name; a kid widget's value is its parent field's."""
    if own_name or not form:
        value = _utf16(_get_string, annot, b"V")
        if value or not form or not _has_key(annot, b"V"):
            return value
    # Inherited, or not a string (a name, an array, a text stream): the form reads it.
    return _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)


def _shows_text(annot: object) -> bool:
    """Whether the widget's normal appearance draws text (a value filled in by a producer
    that left /V out, or a value flattened into the appearance)."""
    if not _has_key(annot, b"AP"):
        return False
    content = _utf16(pdfium_c.FPDFAnnot_GetAP, annot, pdfium_c.FPDF_ANNOT_APPEARANCEMODE_NORMAL)
    return bool(content) and _SHOWS_TEXT.search(content) is not None


def _button_state(annot: object, form: object | None) -> str:
    """A check box's or radio button's state: its appearance state (/AS), else its value."""
    # FPDFAnnot_IsChecked and the export getter need the form's view of the page
    # (FORM_OnAfterLoadPage), which costs more than the rest of a form page.
    state = _utf16(_get_string, annot, b"AS")
    if not state:  # no appearance states: the field's value decides (a check box)
        state = (
            _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
            if form
            else _utf16(_get_string, annot, b"V")
        )
    return state


def _own_kind(annot: object) -> tuple[int, int]:
    """A widget's field type and flags from its own dictionary (/FT, /Ff)."""
    kind = _OWN_TYPES.get(_utf16(_get_string, annot, b"FT"), -1)
    flags = int(_number.value) if _get_number(annot, b"Ff", _number_pointer) else 0
    if kind == pdfium_c.FPDF_FORMFIELD_CHECKBOX:
        if flags & _PUSH_BUTTON:
            kind = pdfium_c.FPDF_FORMFIELD_PUSHBUTTON
        elif flags & _RADIO:
            kind = pdfium_c.FPDF_FORMFIELD_RADIOBUTTON
    elif kind == pdfium_c.FPDF_FORMFIELD_COMBOBOX and not flags & _COMBO:
        kind = pdfium_c.FPDF_FORMFIELD_LISTBOX
    return kind, flags


def _field_text(
    annot: object, form: object | None, kind: int, own_name: str, flags: int
) -> tuple[str | None, bool]:
    """A widget's state or value, marked (``[Field: Country] Spain``, ``☒ I accept``), and
    whether its words are to be read from its appearance (a value shown only there).

    ``form`` is None for a widget read from its own dictionary (a top-level field, or one
    outside the form's fields); ``flags`` are its field flags (/Ff)."""
    if kind in (pdfium_c.FPDF_FORMFIELD_CHECKBOX, pdfium_c.FPDF_FORMFIELD_RADIOBUTTON):
        state = _button_state(annot, form)
        on = bool(state) and state != "Off"
        mark = CHECKED if on else UNCHECKED
        label = _field_label(annot, form, own_name)
        export = _one_line(state, 80) if on else ""
        if export.isdigit() and form:
            # Acrobat names the states of a group by number and lists what they stand
            # for in the field's /Opt.
            count = pdfium_c.FPDFAnnot_GetOptionCount(form, annot)
            if 0 <= int(export) < count:
                shown = _utf16(pdfium_c.FPDFAnnot_GetOptionLabel, form, annot, int(export))
                export = _one_line(shown, 80) or export
        # A radio button's own value names the choice ("Spain"); a check box's is mostly
        # "Yes"/"On", which says nothing the mark does not.
        trivial = kind == pdfium_c.FPDF_FORMFIELD_CHECKBOX and export.lower() in _CHECK_VALUES
        if export and not trivial and export.lower() != label.lower():
            label = f"{label}: {export}" if label else export
        return f"{mark} {label}".rstrip(), False
    if kind in (pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX):
        raw = (
            _utf16(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot)
            if form
            else _field_value(annot, form, own_name)
        )
        value = ""
        if raw and form:
            # The options shown for what is chosen (an option's display text, where /V
            # holds its export value).
            chosen = []
            for i in range(max(0, pdfium_c.FPDFAnnot_GetOptionCount(form, annot))):
                if pdfium_c.FPDFAnnot_IsOptionSelected(form, annot, i):
                    chosen.append(_body(_utf16(pdfium_c.FPDFAnnot_GetOptionLabel, form, annot, i)))
                    if kind == pdfium_c.FPDF_FORMFIELD_COMBOBOX:
                        break  # a combo box holds one choice
            value = "; ".join(c for c in chosen if c)
            raw = _body(raw)
            if value and raw and kind == pdfium_c.FPDF_FORMFIELD_COMBOBOX and raw != value:
                value = f"{value} ({raw})"  # the export value a pair's display stands for
        value = value or _body(raw)
    elif kind == pdfium_c.FPDF_FORMFIELD_TEXTFIELD:
        if flags & _PASSWORD_FIELD:
            return None, False
        value = _body(_field_value(annot, form, own_name))
    else:  # push buttons, signatures (their appearance is read elsewhere), unknown
        return None, False
    marker = f"[Field: {_field_label(annot, form, own_name)}]"
    if value:
        return f"{marker} {value}", False
    if _shows_text(annot):
        return marker, True
    return None, False


def _comment_text(annot: object, subtype: int) -> str | None:
    """A comment's contents behind its marker: ``[Note: J. Smith] Check the cap``."""
    contents = _body(_utf16(_get_string, annot, b"Contents"))
    if not contents:
        # Rich text (RC, XHTML) is the same words with markup: its text will do.
        rich = _utf16(_get_string, annot, b"RC")
        contents = _body(html.unescape(" ".join(_MARKUP.sub(" ", rich).split()))) if rich else ""
    if not contents:
        return None
    author = _one_line(_utf16(_get_string, annot, b"T"), _LABEL_MAX)
    what = "Text box" if subtype == pdfium_c.FPDF_ANNOT_FREETEXT else "Note"
    return f"[{what}: {author}] {contents}" if author else f"[{what}] {contents}"


# --- placement -----------------------------------------------------------------------


class _Boxes:
    """Character boxes of one text page, asked for by text offset.

    Loose boxes (FPDFText_GetLooseCharBox): the font's full height, so a full stop and a
    capital of one line share their middle, and half the cost of the tight box's getter.
    """

    def __init__(self, textpage: object, text_length: int) -> None:
        self.textpage = textpage
        # Text offsets are character indices unless PDFium added or left out characters
        # in its text (then the two counts differ and each offset is translated).
        self.direct = text_length == pdfium_c.FPDFText_CountChars(textpage)
        self.rect = pdfium_c.FS_RECTF()
        self._into = ctypes.pointer(self.rect)

    def box(self, offset: int) -> tuple[float, float, float, float] | None:
        """(left, right, bottom, top) of the character at text ``offset``."""
        index = (
            offset
            if self.direct
            else pdfium_c.FPDFText_GetCharIndexFromTextIndex(self.textpage, offset)
        )
        rect = self.rect
        if index < 0 or not _loose_box(self.textpage, index, self._into):
            return None
        return rect.left, rect.right, min(rect.bottom, rect.top), max(rect.bottom, rect.top)


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


# A line's visible part (group 1): from its first to its last non-blank character.
_VISIBLE_LINE = re.compile(r"[^\S\r\n]*([^\r\n]*[^\s])[^\S\r\n]*")


def _visible_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line's visible part, as _VISIBLE_LINE finds them.

    PDFium ends its lines with CR LF: then split and stripped (str.strip's blanks are the
    regular expression's \\s), twice as fast as the search, which runs on every form page.
    """
    if not text.count("\r") == text.count("\n") == text.count("\r\n"):
        return [match.span(1) for match in _VISIBLE_LINE.finditer(text)]
    spans = []
    start = 0
    for line in text.split("\r\n"):
        stripped = line.lstrip()
        if stripped:
            first = start + len(line) - len(stripped)
            spans.append((first, first + len(stripped.rstrip())))
        start += len(line) + 2
    return spans


class _Lines:
    """The lines of a page's range text, each measured by its first character's box (its
    height and left edge: one call into PDFium a line, where asking for the character at
    a position scans the whole page each time); a line's right end is measured only when
    an item may sit beside or below it."""

    def __init__(self, text: str, boxes: _Boxes) -> None:
        self.text = text
        self.boxes = boxes
        self.starts: list[int] = []  # text offset of each line's first visible character
        self.ends: list[int] = []  # ... and just past its last
        self.lefts: list[float] = []
        self.bottoms: list[float] = []
        self.tops: list[float] = []
        # The loop runs once a line of every page with items: PDFium called directly.
        textpage, rect, get_box = boxes.textpage, boxes.rect, _loose_box
        into = ctypes.pointer(rect)
        to_index = None if boxes.direct else pdfium_c.FPDFText_GetCharIndexFromTextIndex
        for start, end in _visible_spans(text):
            index = start if to_index is None else to_index(textpage, start)
            if index < 0 or not get_box(textpage, index, into):
                continue
            self.starts.append(start)
            self.ends.append(end)
            self.lefts.append(rect.left)
            bottom, top = rect.bottom, rect.top
            self.bottoms.append(bottom if bottom <= top else top)
            self.tops.append(top if bottom <= top else bottom)
        # Sums and differences in C (map), not a Python loop: this runs on every form page.
        self.middles = [total / 2 for total in map(operator.add, self.bottoms, self.tops)]
        self.order = sorted(range(len(self.starts)), key=self.middles.__getitem__)
        self.sorted_middles = list(map(self.middles.__getitem__, self.order))
        # Any line whose box takes in a height has its middle within this of it.
        self.reach = max(map(operator.sub, self.tops, self.bottoms), default=0.0) / 2 + 2
        self._rights: dict[int, float] = {}

    def __bool__(self) -> bool:
        return bool(self.starts)

    def right(self, i: int) -> float:
        """The right edge of line ``i`` (its last visible character's)."""
        right = self._rights.get(i)
        if right is None:
            box = self.boxes.box(self.ends[i] - 1)
            right = max(box[1], self.lefts[i]) if box is not None else self.lefts[i]
            self._rights[i] = right
        return right

    def beside(self, item: Item) -> list[int]:
        """The lines at the height of ``item`` (their vertical middles meet), in text order."""
        middle = (item.bottom + item.top) / 2
        low = bisect.bisect_left(self.sorted_middles, min(item.bottom, middle - self.reach))
        high = bisect.bisect_right(self.sorted_middles, max(item.top, middle + self.reach))
        level = [
            i
            for i in self.order[low:high]
            if self.bottoms[i] - 2 <= middle <= self.tops[i] + 2
            or item.bottom <= self.middles[i] <= item.top
        ]
        level.sort()  # line numbers run in text order
        return level

    def after_left_text(self, i: int, item: Item) -> int:
        """The offset after the last character of line ``i`` that ends left of ``item``."""
        lo, hi = self.starts[i], self.ends[i] - 1  # binary search: characters run left to right
        found = self.starts[i]
        while lo <= hi:
            mid = (lo + hi) // 2
            box = self.boxes.box(mid)
            if box is not None and box[1] <= item.left + 1:
                found = mid + 1
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def position(self, item: Item) -> tuple[int, str]:
        """Where ``item`` goes in the range text, and how: ``after`` the text before that
        offset, ``before`` the text from it on (both inline), or on a ``line`` of its own."""
        if item.inline:
            level = self.beside(item)
            left_of = [i for i in level if self.lefts[i] < item.left]
            if left_of:
                # The text closest on its left (its label): after its last character there.
                i = max(left_of, key=lambda k: min(self.right(k), item.left))
                if self.right(i) <= item.left + 1:
                    return self.ends[i], "after"
                return self.after_left_text(i, item), "after"
            if level:  # a box before its label ("☐ I decline"): before that text
                return self.starts[level[0]], "before"
        middle = (item.bottom + item.top) / 2
        # The nearest line above, preferring one that overlaps it horizontally (its
        # column): lines looked at nearest first, so the right ends measured are few.
        first = bisect.bisect_left(self.sorted_middles, middle - 1)
        nearest = -1
        for i in self.order[first:]:
            if nearest < 0:
                nearest = i
            if self.lefts[i] <= item.right and item.left <= self.right(i):
                nearest = i
                break
        if nearest < 0:
            return 0, "line"
        end = self.text.find("\n", self.ends[nearest])
        return (len(self.text) if end < 0 else end), "line"


def locate(bounded: str, textpage: object, items: list[Item]) -> list[tuple[int, bool]]:
    """Where each item goes in ``bounded`` (the page's text as extracted): an offset, and
    whether it goes inline there (else on a line of its own).

    Offsets are found in PDFium's range text and carried over to ``bounded`` by counting
    the visible characters before them: both hold the same characters in the same order,
    only their line breaks differ.
    """
    text = _range_text(textpage)
    lines = _Lines(text, _Boxes(textpage, len(text)))
    places = [lines.position(item) if lines else (0, "line") for item in items]
    # Visible characters before each offset, counted once along the text (in C).
    counts: dict[int, int] = {}
    position = running = 0
    for offset in sorted({offset for offset, _ in places}):
        running += visible_count(text, offset, position)
        counts[offset] = running
        position = offset
    # Each place in ``bounded``: right after its k-th visible character, or right before
    # the next one; found in one walk along ``bounded``, in rising order.
    wanted = sorted(
        {counts[offset] - 1 if how != "before" else counts[offset] for offset, how in places}
    )
    walker = Walker(bounded)
    found_at = {k: walker.offset_of(k) if k >= 0 else -1 for k in wanted}
    found: list[tuple[int, bool]] = []
    for offset, how in places:
        k = counts[offset]
        if how == "before":
            at = found_at[k]
            target = len(bounded) if at < 0 else at
        else:
            at = found_at[k - 1] if k else 0
            target = 0 if not k else len(bounded) if at < 0 else at + 1
            if how == "line" and k:
                line_end = bounded.find("\n", target)
                target = len(bounded) if line_end < 0 else line_end
        found.append((target, how != "line"))
    return found


_BLANKS = " \t\r\n"


def visible_count(text: str, end: int, start: int = 0) -> int:
    """Characters of ``text[start:end]`` that are not blanks (counted in C, by str.count)."""
    return (
        end
        - start
        - text.count(" ", start, end)
        - text.count("\n", start, end)
        - text.count("\t", start, end)
        - text.count("\r", start, end)
    )


class Walker:
    """Offsets of a text's visible characters by their number, asked for in rising order
    (each step counts the characters between in C, by str.count)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0  # an offset ...
        self.count = 0  # ... and how many visible characters come before it

    def offset_of(self, k: int) -> int:
        """The offset of visible character ``k`` (0-based), or -1 past the end."""
        if k < self.count:
            self.position = self.count = 0
        text = self.text
        while self.count < k:
            end = min(self.position + k - self.count, len(text))
            if end <= self.position:
                return -1
            self.count += visible_count(text, end, self.position)
            self.position = end
        while self.position < len(text) and text[self.position] in _BLANKS:
            self.position += 1
        return self.position if self.position < len(text) else -1


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


# --- XFA ---------------------------------------------------------------------------------

# A dynamic XFA form (Adobe LiveCycle) has no widgets PDFium can read: its pages say
# "Please wait..." and the values live in the XML of its datasets packet.
XFA_MAX_VALUES = 2_000
_XFA_MAX_BYTES = 16 << 20


def _packet(document: object, index: int) -> tuple[str, bytes]:
    """The name and bytes of XFA packet ``index``."""
    size = int(pdfium_c.FPDF_GetXFAPacketName(document, index, None, 0))
    name = ""
    if 0 < size < 256:
        raw = ctypes.create_string_buffer(size)
        pdfium_c.FPDF_GetXFAPacketName(document, index, raw, size)
        name = raw.value.decode("latin-1")
    needed = ctypes.c_ulong(0)
    pdfium_c.FPDF_GetXFAPacketContent(document, index, None, 0, ctypes.byref(needed))
    if not 0 < needed.value <= _XFA_MAX_BYTES:
        return name, b""
    content = ctypes.create_string_buffer(needed.value)
    if not pdfium_c.FPDF_GetXFAPacketContent(
        document, index, content, needed.value, ctypes.byref(needed)
    ):
        return name, b""
    return name, content.raw[: needed.value]


def xfa_values(document: object) -> list[str]:
    """The filled-in values of an XFA form's datasets, marked as fields are
    (``[Field: Country] Spain``), in the data's order; [] when there are none."""
    from desktop.documents.source import parse_xml

    for index in range(max(0, int(pdfium_c.FPDF_GetXFAPacketCount(document)))):
        name, data = _packet(document, index)
        if name != "datasets" or not data:
            continue
        try:
            root = parse_xml("XFA datasets", data)
        except ValueError:  # damaged XML, or a DTD refused: nothing safe to read
            return []
        values: list[str] = []
        for element in root.iter():
            tag = element.tag.rsplit("}", 1)[-1]
            text = _body(element.text or "")
            if len(element) or not text or tag == "dataDescription":
                continue  # a group, an empty leaf, or the schema description
            values.append(f"[Field: {_one_line(tag.replace('_', ' '), _LABEL_MAX)}] {text}")
            if len(values) >= XFA_MAX_VALUES:
                break
        return values
    return []
