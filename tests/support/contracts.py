"""Generated contract pairs for ``compare``: an original and a copy with planted changes.

The copy is laid out differently on purpose (another line width, words hyphenated at line
ends, other page breaks and page numbers in the footer), so a comparison that reports
anything but the planted changes is reading layout as content.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field

from desktop.documents.model import Document, Page

_SUBJECTS = ["The Supplier", "The Buyer", "Each party", "The Licensee", "The Contractor"]
_VERBS = ["shall deliver", "shall pay", "may terminate", "shall maintain", "shall notify"]
_OBJECTS = [
    "the goods described in the schedule",
    "all invoices issued under this agreement",
    "the confidential information of the other party",
    "insurance against third-party claims",
    "the services at the agreed service levels",
]
_TITLES = ["Delivery", "Payment", "Termination", "Insurance", "Notices", "Warranty", "Audit"]
_MONTHS = ["January", "March", "May", "July", "September", "November"]


def sentence(rng: random.Random, i: int, k: int) -> str:
    """One distinct sentence of clause ``i`` (numbers make every sentence unique)."""
    amount = rng.randrange(1_000, 900_000)
    return (
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} within "
        f"{rng.randrange(5, 90)} days, up to EUR {amount:,} for item {i}.{k}, no later than "
        f"{rng.randrange(1, 28)} {rng.choice(_MONTHS)} {rng.randrange(2026, 2035)}."
    )


def clause(rng: random.Random, i: int, sentences: int = 3) -> str:
    """Clause ``i``: its number, a title, then a few sentences."""
    body = " ".join(sentence(rng, i, k) for k in range(sentences))
    return f"{i}. {rng.choice(_TITLES)}. {body}"


def lay_out(
    clauses: list[str], width: int, lines_per_page: int, *, hyphenate: bool, footer: bool
) -> list[str]:
    """Pages of text: clauses wrapped at ``width`` (optionally hyphenating long words at
    line ends), ``lines_per_page`` lines a page, with a page-number footer if asked."""
    lines: list[str] = []
    for text in clauses:
        wrapped = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
        if hyphenate:
            wrapped = _hyphenated(wrapped, width)
        lines.extend(wrapped)
    pages = []
    for n, start in enumerate(range(0, len(lines), lines_per_page), 1):
        chunk = lines[start : start + lines_per_page]
        if footer:
            chunk = [*chunk, f"- {n} -"]
        pages.append("\n".join(chunk))
    return pages


def _hyphenated(lines: list[str], width: int) -> list[str]:
    """Move the first half of each next line's first long word up, with a hyphen."""
    out = list(lines)
    for i in range(len(out) - 1):
        words = out[i + 1].split(" ")
        first = words[0]
        if len(first) >= 8 and first.isalpha() and len(out[i]) + len(first) // 2 + 2 <= width + 6:
            cut = len(first) // 2
            out[i] = f"{out[i]} {first[:cut]}-"
            out[i + 1] = " ".join([first[cut:], *words[1:]])
    return out


def document(pages: list[str], name: str, kind: str = "pdf") -> Document:
    """A Document from page texts (labels 1, 2, 3...)."""
    from desktop.documents.layout import measure

    doc = Document(
        sha256=f"{name}-{hash(tuple(pages)) & 0xFFFFFFFF:08x}",
        path=f"/docs/{name}.pdf",
        kind=kind,
        title=name,
        pages=[Page(i + 1, str(i + 1), text) for i, text in enumerate(pages)],
        extractor="test/1",
    )
    measure(doc)
    return doc


@dataclass
class Planted:
    """The changes made to the copy, as ``compare`` should report them."""

    changed: list[int] = field(default_factory=list)  # clause numbers with a changed amount
    added: list[str] = field(default_factory=list)  # the numbers of clauses added ("12a")
    removed: list[int] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)


def contract_pair(
    count: int = 40, *, seed: int = 7, changes: int = 4
) -> tuple[list[str], list[str], Planted]:
    """The clauses of an original and of a copy with ``changes`` of each kind planted
    (changed amounts, clauses added, removed, moved), spread over the contract."""
    rng = random.Random(seed)
    old = [clause(rng, i) for i in range(1, count + 1)]
    new = list(old)
    planted = Planted()
    step = count // (changes * 4 + 1)
    spots = [step * (k + 1) for k in range(changes * 4)]
    # Work from the end so earlier indexes stay valid.
    for k, spot in sorted(enumerate(spots), key=lambda p: -p[1]):
        number = spot + 1
        kind = k % 4
        if kind == 0:
            text = new[spot]
            at = text.index("EUR ") + 4
            new[spot] = text[:at] + "1" + text[at:]  # EUR 12,345 -> EUR 112,345
            planted.changed.append(number)
        elif kind == 1:
            new.insert(
                spot + 1,
                clause(random.Random(seed * 1000 + spot), 0).replace("0.", f"{number}a.", 1),
            )
            planted.added.append(f"{number}a")
        elif kind == 2:
            del new[spot]
            planted.removed.append(number)
        else:
            moving = new.pop(spot)
            new.insert(min(len(new), spot + 3), moving)
            planted.moved.append(number)
    return old, new, planted
