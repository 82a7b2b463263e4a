"""Qwen3.5 token counting: known ids, specials as text, round trips, exact parallel counts."""

from __future__ import annotations

import random
import threading
import unicodedata

import pytest

from desktop.documents import tokens
from desktop.documents.layout import document_block
from desktop.documents.model import Page

MULTILINGUAL = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "Größenordnung: Übungsaufgaben für Straßenbahnfahrer, ß ẞ.",
    "委员会审查了报告的第4.2节，发现收入增长了12.5%。",
    "حبيبي، هذا نص عربي مع أرقام ١٢٣ و 456.",
    "नमस्ते दुनिया — हिन्दी पाठ",
    "Emoji 👩‍👩‍👧 and math ∀x∈ℝ: x² ≥ 0, ∫₀¹ f(x) dx",
    "def f(x: int) -> int:\n\treturn x ** 2  # square\r\n\n\n   trailing   \n",
]


def test_vocabulary_size_matches_qwen35() -> None:
    """248,044 BPE ranks plus 33 added tokens, as in the model's tokenizer."""
    assert tokens.encoding().n_vocab == 248_077


@pytest.mark.parametrize(
    ("special", "token_id"),
    [
        ("<|endoftext|>", 248044),
        ("<|im_start|>", 248045),
        ("<|im_end|>", 248046),
        ("<think>", 248068),
        ("</think>", 248069),
    ],
)
def test_specials_in_chat_templates(special: str, token_id: int) -> None:
    """Rendered templates get the real special ids."""
    assert tokens.encode_with_special(special) == [token_id]


def test_chat_template_mixes_specials_and_text() -> None:
    """Specials inside a rendered template are single ids between ordinary tokens."""
    ids = tokens.encode_with_special("<|im_start|>user\nHi<|im_end|>\n")
    assert ids[0] == 248045
    assert 248046 in ids
    assert tokens.decode(ids) == "<|im_start|>user\nHi<|im_end|>\n"


def test_special_lookalikes_in_documents_are_text() -> None:
    """A document quoting "<|im_end|>" does not get the special id (it is data)."""
    text = "The model stops at <|im_end|> and thinks inside <think>...</think>."
    ids = tokens.encode(text)
    assert max(ids) < 248_044
    assert tokens.decode(ids) == text
    assert tokens.count(text) == len(ids) > len(tokens.encode_with_special(text))


@pytest.mark.parametrize("text", MULTILINGUAL)
def test_round_trip(text: str) -> None:
    """decode(encode(text)) gives the (NFC) text back, for many scripts."""
    ids = tokens.encode(text)
    assert ids
    assert tokens.decode(ids) == unicodedata.normalize("NFC", text)
    assert tokens.count(text) == len(ids)


def test_nfc_normalisation() -> None:
    """Decomposed and composed forms count the same, as in Qwen's tokenizer."""
    composed = "café naïve Ångström"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    assert tokens.encode(decomposed) == tokens.encode(composed)


def test_count_many_matches_count() -> None:
    """Batch counting gives the same numbers as counting one by one."""
    assert tokens.count_many(MULTILINGUAL) == [tokens.count(t) for t in MULTILINGUAL]
    assert tokens.count_many([]) == []


def test_encoding_is_built_once_across_threads() -> None:
    """Concurrent first calls all get the one shared encoding."""
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(tokens.encoding())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8
    assert all(enc is seen[0] for enc in seen)


def test_count_equals_encode_on_a_long_document_block() -> None:
    """count() of a whole 200-page block is the length of its encoding."""
    rng = random.Random(7)
    pages = [
        Page(i, str(i), "".join(rng.choice([*MULTILINGUAL, "\n", "\n\n", " "]) for _ in range(30)))
        for i in range(1, 200)
    ]
    block = document_block("A title", pages)
    assert tokens.count(block) == len(tokens.encode(block)) > 10_000
