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


# --- loading: partial encoders and the cached vocabulary --------------------------------


def test_partial_encoder_equals_the_full_one() -> None:
    """An encoder built from the entries a text contains gives the full vocabulary's ids."""
    from desktop.documents import extract
    from tests.conftest import CORPUS_DIR

    full = tokens.encoding()
    texts = list(MULTILINGUAL)
    for path in sorted(CORPUS_DIR.glob("*/*.pdf"))[:12]:
        try:
            doc = extract(path)
        except Exception:
            continue
        texts.append(document_block(doc.title, doc.pages))
    rng = random.Random(5)
    alphabet = (
        "ab \n\t\r.,;:!?'\"()[]<>|/\\-_éé\u4e2d\u6587\u0627\u0644🎉\x1c\x1f\x85\xa0"
        "\u2028\u3000\u200b0123456789sStTdDmM'’"
    )
    for _ in range(400):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))))
    texts += ["", " ", "\n\n\n", "<|im_start|>user\nHi<|im_end|>\n", "'S'T'RE 'll x" * 50]
    for text in texts:
        text = tokens.normalize(text)
        partial = tokens.partial_encoding([text])
        assert partial.encode_ordinary(text) == full.encode_ordinary(text), repr(text[:80])
        assert partial.encode(text, allowed_special="all", disallowed_special=()) == full.encode(
            text, allowed_special="all", disallowed_special=()
        )


def test_vocabulary_cache_is_written_then_used_and_a_bad_one_ignored(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tokens.cache_path()
    assert not path.exists()
    ranks, longest = tokens._read_vocabulary()
    assert len(ranks) == tokens.VOCAB_SIZE and path.exists()
    assert tokens._read_vocabulary() == (ranks, longest)
    path.write_bytes(b"not marshal data")
    assert tokens._read_vocabulary() == (ranks, longest)  # parsed again and rewritten
    assert tokens._read_vocabulary() == (ranks, longest)


def test_nothing_loads_the_vocabulary_until_something_is_counted(tmp_path: object) -> None:
    """Reopening a stored document (and importing the counting code) builds no tokenizer."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    pdf = ROOT.parent / "shared/corpus/pdf-samples/004-pdflatex-4-pages/pdflatex-4-pages.pdf"
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from desktop.documents import tokens\n"
        "from desktop.library import open_document\n"
        "from desktop.store.db import Store\n"
        "import desktop.answering.prompt\n"
        "store = Store(Path(sys.argv[1]))\n"
        "doc, reused = open_document(Path(sys.argv[2]), store)\n"
        "print(reused, 'tiktoken' in sys.modules, tokens._vocab is not None)\n"
    )
    db = str(tmp_path) + "/db.sqlite"
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, db, str(pdf)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0] == ["False", "True", "True"]  # first time: extracted and counted
    assert runs[1] == ["True", "False", "False"]  # stored: nothing to count
