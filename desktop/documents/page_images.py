"""Pages without a text layer as images for a model that reads them, and what they cost.

A scanned page is rendered with PDFium in grayscale (scans are read, not admired; gray
PNGs are a third of RGB's size) with its long edge at ``LONG_EDGE`` pixels: about 150 dpi
for A4 or Letter, enough for body text. The PNG bytes are deterministic, so the same
page is the same image in every prompt and SGLang's cache can reuse it.

Token cost is Qwen3.5's own rule (its ``preprocessor_config.json``: Qwen2-VL image
processor, ``patch_size`` 16, ``merge_size`` 2, ``size`` 65,536..16,777,216 pixels): the
image is resized to multiples of 32 pixels within those bounds (``smart_resize``) and
each 32x32 square is one token, plus ``<|vision_start|>`` and ``<|vision_end|>``.
"""

from __future__ import annotations

import math
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium

from desktop.documents.pdf import PDFIUM_LOCK
from desktop.errors import DocumentUnreadable

PATCH_SIZE = 16
MERGE_SIZE = 2
FACTOR = PATCH_SIZE * MERGE_SIZE
MIN_PIXELS = 65_536
MAX_PIXELS = 16_777_216
MARKER_TOKENS = 2  # <|vision_start|> and <|vision_end|> around the image's tokens
LONG_EDGE = 1536
_CACHED_IMAGES = 64


@dataclass(frozen=True)
class PageImage:
    """One rendered page: 1-based number, pixel size and PNG bytes."""

    number: int
    width: int
    height: int
    png: bytes

    @property
    def tokens(self) -> int:
        """Prompt tokens this image costs, markers included."""
        return image_tokens(self.width, self.height) + MARKER_TOKENS


def smart_resize(height: int, width: int) -> tuple[int, int]:
    """The size Qwen's image processor resizes an image to (multiples of 32, bounded area)."""
    h_bar = max(FACTOR, round(height / FACTOR) * FACTOR)
    w_bar = max(FACTOR, round(width / FACTOR) * FACTOR)
    if h_bar * w_bar > MAX_PIXELS:
        beta = math.sqrt(height * width / MAX_PIXELS)
        h_bar = max(FACTOR, math.floor(height / beta / FACTOR) * FACTOR)
        w_bar = max(FACTOR, math.floor(width / beta / FACTOR) * FACTOR)
    elif h_bar * w_bar < MIN_PIXELS:
        beta = math.sqrt(MIN_PIXELS / (height * width))
        h_bar = math.ceil(height * beta / FACTOR) * FACTOR
        w_bar = math.ceil(width * beta / FACTOR) * FACTOR
    return h_bar, w_bar


def image_tokens(width: int, height: int) -> int:
    """Tokens of an image of ``width`` x ``height`` pixels (without the two markers)."""
    h_bar, w_bar = smart_resize(height, width)
    return (h_bar // FACTOR) * (w_bar // FACTOR)


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's header, or None if ``data`` is not a PNG."""
    if len(data) < 24 or not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def gray_png(width: int, height: int, stride: int, pixels: bytes) -> bytes:
    """An 8-bit grayscale PNG of raw rows (``stride`` bytes apart), deterministic bytes."""
    rows = b"".join(
        b"\x00" + pixels[y * stride : y * stride + width] for y in range(height)
    )  # filter type 0 on every row: simple, and zlib does the work

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 6))
        + chunk(b"IEND", b"")
    )


_cache: OrderedDict[tuple[str, int], PageImage] = OrderedDict()
_cache_lock = threading.Lock()


def render_pages(path: Path | str, numbers: list[int], key: str = "") -> dict[int, PageImage]:
    """Pages ``numbers`` (1-based) of the PDF at ``path`` as images; ``key`` caches them.

    ``key`` is the document's SHA-256: the same page is rendered once per process.
    """
    found: dict[int, PageImage] = {}
    missing = []
    with _cache_lock:
        for number in numbers:
            cached = _cache.get((key, number)) if key else None
            if cached is not None:
                _cache.move_to_end((key, number))
                found[number] = cached
            else:
                missing.append(number)
    if not missing:
        return found
    with _open_pdf(path, "rendered") as pdf:
        for number in missing:
            found[number] = _render(pdf, number)
    if key:
        with _cache_lock:
            for number in missing:
                _cache[(key, number)] = found[number]
            while len(_cache) > _CACHED_IMAGES:
                _cache.popitem(last=False)
    return found


def image_tokens_before_rendering(path: Path | str, numbers: list[int]) -> int:
    """What pages ``numbers`` will cost as images (markers included), from their sizes
    alone: no page is loaded or rendered, so a 10,000-page scan is priced at once.

    Rounded down where the rendering rounds, so it never exceeds the exact count.
    """
    total = 0
    with _open_pdf(path, "read") as pdf:
        for number in numbers:
            width_pt, height_pt = pdf.get_page_size(number - 1)
            scale = LONG_EDGE / max(width_pt, height_pt, 1.0)
            width, height = max(1, int(width_pt * scale)), max(1, int(height_pt * scale))
            total += image_tokens(width, height) + MARKER_TOKENS
    return total


@contextmanager
def _open_pdf(path: Path | str, doing: str) -> Iterator[pdfium.PdfDocument]:
    """The PDF at ``path``, open with PDFium's lock held; ``doing`` words a failure to open."""
    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except (pdfium.PdfiumError, OSError) as exc:
            raise DocumentUnreadable(path, f"its scanned pages cannot be {doing} ({exc})") from exc
        try:
            yield pdf
        finally:
            pdf.close()


def _render(pdf: pdfium.PdfDocument, number: int) -> PageImage:
    """Render one page in gray with its long edge at LONG_EDGE pixels (caller holds the lock)."""
    page = pdf[number - 1]
    try:
        width_pt, height_pt = page.get_size()
        scale = LONG_EDGE / max(width_pt, height_pt, 1.0)
        bitmap = page.render(scale=scale, grayscale=True, may_draw_forms=False)
        try:
            pixels = bytes(bitmap.buffer)
            image = PageImage(
                number,
                bitmap.width,
                bitmap.height,
                gray_png(bitmap.width, bitmap.height, bitmap.stride, pixels),
            )
        finally:
            bitmap.close()
    finally:
        page.close()
    return image
