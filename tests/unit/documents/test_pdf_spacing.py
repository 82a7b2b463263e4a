"""Words PDFium glues together get their spaces back from the glyph boxes, and only they."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from desktop.documents import extract
from desktop.documents import pdf_spacing as spacing
from desktop.documents.pdf_spacing import looks_glued
from tests.support.pdf_maker import write_content_pdf

# TJ moves of 0.12 em between words: a gap a reader sees, narrower than PDFium's space.
GLUED = [
    b"BT /F1 10 Tf",
    b"1 0 0 1 72 700 Tm [(www.example.org)-120(Thick)-120(lines)] TJ",
    b"1 0 0 1 72 680 Tm [(2)-120(radio)-120(buttons)] TJ",
    b"1 0 0 1 72 660 Tm [(3)-120(4)-120(5)-120(6)-120(7)-120(8)-120(9)] TJ",
    b"0 1 -1 0 300 300 Tm [(Rotated)-120(words)-120(here2)] TJ",
    b"ET",
]
# Glyphs that touch: camel case, kerning, a long number, printed as one word.
TOUCHING = [
    b"BT /F1 10 Tf",
    b"1 0 0 1 72 700 Tm [(iPhone)-20(McDonald)] TJ",
    b"1 0 0 1 72 680 Tm (JavaScript ISBN 9783161484100 x2apple) Tj",
    b"1 0 0 1 72 660 Tm [(Kerned)10(word)] TJ",
    b"ET",
]


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        pytest.param(
            GLUED,
            [
                "www.example.org Thick lines",
                "2 radio buttons",
                "3 4 5 6 7 8 9",
                "Rotated words here2",
            ],
            id="glued words get their spaces",
        ),
        pytest.param(
            TOUCHING,
            ["iPhoneMcDonald", "JavaScript ISBN 9783161484100 x2apple", "Kernedword"],
            id="touching glyphs stay one word",
        ),
    ],
)
def test_words_are_spaced_as_printed(
    tmp_path: Path, content: list[bytes], lines: list[str]
) -> None:
    text = extract(write_content_pdf(tmp_path / "page.pdf", [content])).pages[0].text
    assert text.splitlines() == lines


def test_only_suspicious_words_are_looked_at() -> None:
    assert not looks_glued("An ordinary sentence, with 12 numbers and a date 2024-05-01.")
    for glued in ("orgThick", "2radio", "radio2", "3456789", "a" * 25):
        assert looks_glued(f"text {glued} text"), glued


def test_no_words_lost_or_split_against_pdftotext(tmp_path: Path) -> None:
    """pdftotext (poppler) reads the glued words apart too; ours never split its words.

    poppler-utils is a test dependency (packaging/install-system-deps.sh test)."""
    assert shutil.which("pdftotext"), "pdftotext missing: packaging/install-system-deps.sh test"
    path = write_content_pdf(tmp_path / "glued.pdf", [GLUED[:3] + GLUED[4:]])
    theirs = subprocess.run(
        ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout.split()
    ours = extract(path).pages[0].text.split()
    assert sorted(ours) == sorted(theirs)


def test_looks_glued_agrees_with_the_word_by_word_definition() -> None:
    """looks_glued's combined searches say what the three checks say one by one: a capital
    inside small letters, a digit against letters or starting a long run, a word of 25+
    characters between Unicode white space (as str.split finds words)."""
    rng = random.Random(19)
    alphabet = "aZb1 2Ac\u0663\u00e9\n\x1c\u3000xyzQ9"

    def one_by_one(text: str) -> bool:
        return bool(
            spacing._CAPITAL_INSIDE.search(text)
            or spacing._DIGIT_AGAINST.search(text)
            or max(map(len, text.split()), default=0) >= 25
        )

    texts = ["a" * 25, "a" * 24, " " + "b" * 25, "\x1c" + "c" * 25, "\u3000" + "d" * 24]
    texts += ["ab\n" + "x" * 25 + " cd", "orgThick", "2radio", "3456789", "1234", "abc1"]
    for _ in range(3000):
        weights = [1] * len(alphabet)
        for blank in (4, 10, 11, 12):  # blanks rare: long words occur
            weights[blank] = rng.choice((0, 1))
        texts.append("".join(rng.choices(alphabet, weights, k=rng.randint(0, 80))))
    assert [spacing.looks_glued(t) for t in texts] == [one_by_one(t) for t in texts]
    assert spacing.looks_glued("a" * 25) and not spacing.looks_glued("a" * 24)
