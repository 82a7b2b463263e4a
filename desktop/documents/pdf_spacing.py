"""Spaces PDFium's text leaves out between words, put back from its character boxes.

PDFium writes a space where the gap between two glyphs is wide for the font; on rotated
text, plots (axis ticks) and some producers' output it misses gaps a reader sees, and
words come out glued ("orgThick", "2radio", "3456789"). Looking at every glyph's box
would cost more than reading the page, so only the words that look glued are looked at
(a small letter before a capital and small letters, a digit against three letters, a
long run of digits or letters); in them a space goes where the gap between two glyphs'
advance boxes, along the line, is wider than ``GAP_EM`` of the font size. A word whose
glyphs touch (a camel-cased name, a long number) stays as it is.
"""

from __future__ import annotations

import ctypes
import re

import pypdfium2.raw as pdfium_c

from desktop.documents.pdf_forms import Walker, visible_count

# As poppler's pdftotext (minWordBreakSpace): wider than kerning and letter-spacing,
# narrower than the narrowest word space of justified text.
GAP_EM = 0.1
# What a glued word looks like inside, found by its one telling character (a capital
# after small letters, a digit against letters or in a long run of digits): a pattern
# that starts with a character class is searched in C, at little cost per page.
_CAPITAL_TAIL = r"(?<=[a-z]{2}[A-Z])(?=[a-z])"  # orgThick
_DIGIT_TAIL = r"(?:(?<=[^\W\d_]{3}\d)|(?=[^\W\d_]{3})|(?<!\d\d)(?=\d{5}))"  # 2radio, 3456789
_CAPITAL_INSIDE = re.compile(f"[A-Z]{_CAPITAL_TAIL}")
_DIGIT_AGAINST = re.compile(rf"\d{_DIGIT_TAIL}")
# Both in one search (a quarter less than one after the other on a form page).
_EITHER = re.compile(rf"[A-Z\d](?:{_CAPITAL_TAIL}|(?<=\d){_DIGIT_TAIL})")
_LONG_WORD = 25  # characters without a space: a line of words glued together
_LONG = re.compile(rf"\S{{{_LONG_WORD},}}")
# A long word after a blank (a start at each blank, not at every character as _LONG's):
# with _LONG.match at the text's start, what str.split's longest word says (both split
# on Unicode white space), a fifth cheaper.
_LONG_AFTER_BLANK = re.compile(rf"\s\S{{{_LONG_WORD}}}")
_WORD_REACH = 200  # the longest word looked at, each way from what gave it away
_BLANKS = " \t\r\n"


def looks_glued(text: str) -> bool:
    """Whether some word of ``text`` may be two words glued together."""
    return bool(_EITHER.search(text) or _LONG_AFTER_BLANK.search(text) or _LONG.match(text))


def _glued_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text`` that looks glued, in order, each once."""
    hits = sorted(
        m.start()
        for pattern in (_CAPITAL_INSIDE, _DIGIT_AGAINST, _LONG)
        for m in pattern.finditer(text)
    )
    words: list[tuple[int, int]] = []
    for hit in hits:
        if words and hit < words[-1][1]:
            continue  # inside the word found last
        # Bounded look-ups: a page without tabs must not be searched whole for one.
        low, high = max(0, hit - _WORD_REACH), hit + _WORD_REACH
        start = max(max(text.rfind(blank, low, hit) for blank in _BLANKS) + 1, low)
        ends = [e for e in (text.find(blank, hit, high) for blank in _BLANKS) if e >= 0]
        words.append((start, min(ends) if ends else min(high, len(text))))
    return words


def restore_spaces(bounded: str, textpage: object) -> str:
    """``bounded`` (the page's text) with the spaces put back that the boxes show.

    The page's range text (FPDFText_GetText) has one character per PDFium character, so
    its offsets give the boxes; both texts hold the same visible characters in the same
    order, which carries a position from one to the other.
    """
    words = _glued_words(bounded)
    if not words:
        return bounded
    count = pdfium_c.FPDFText_CountChars(textpage)
    if count <= 0:
        return bounded
    buffer = (ctypes.c_ushort * (count + 1))()
    written = int(pdfium_c.FPDFText_GetText(textpage, 0, count, buffer))
    text = ctypes.string_at(buffer, max(0, written - 1) * 2).decode("utf-16-le", "replace")
    direct = len(text) == count
    if visible_count(text, len(text)) != visible_count(bounded, len(bounded)):
        return bounded  # the two texts differ beyond line breaks: nothing safe to carry
    in_text = Walker(text)
    box = pdfium_c.FS_RECTF()
    inserts: list[int] = []

    def char_box(k: int) -> tuple[float, float, float, float, float] | None:
        offset = in_text.offset_of(k)
        if offset < 0:
            return None
        index = offset if direct else pdfium_c.FPDFText_GetCharIndexFromTextIndex(textpage, offset)
        if index < 0 or not pdfium_c.FPDFText_GetLooseCharBox(textpage, index, box):
            return None
        size = float(pdfium_c.FPDFText_GetFontSize(textpage, index))
        return box.left, box.right, box.bottom, box.top, size

    counted = seen = 0  # visible characters before offset ``counted``: words come in order
    for start, end in words:
        seen += visible_count(bounded, start, counted)
        counted = start
        first = seen  # a word holds no blanks
        previous = char_box(first)
        for j in range(1, end - start):
            current = char_box(first + j)
            if previous is not None and current is not None and _gap(previous, current):
                inserts.append(start + j)
            previous = current
    if not inserts:
        return bounded
    pieces, position = [], 0
    for at in inserts:
        pieces.append(bounded[position:at])
        position = at
    pieces.append(bounded[position:])
    return " ".join(pieces)


def _gap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether glyph ``b`` stands apart from glyph ``a`` along their line (any direction)."""
    a_left, a_right, a_bottom, a_top, size = a
    b_left, b_right, b_bottom, b_top, _ = b
    if size <= 0:
        return False
    dx = (b_left + b_right - a_left - a_right) / 2
    dy = (b_bottom + b_top - a_bottom - a_top) / 2
    if abs(dx) >= abs(dy):  # horizontal text, either way
        gap = b_left - a_right if dx >= 0 else a_left - b_right
        overlap = min(a_top, b_top) - max(a_bottom, b_bottom)
    else:  # vertical (rotated) text
        gap = b_bottom - a_top if dy >= 0 else a_bottom - b_top
        overlap = min(a_right, b_right) - max(a_left, b_left)
    # Glyphs on different lines (no overlap across the line) are not a word gap.
    return overlap > 0 and gap > GAP_EM * size
