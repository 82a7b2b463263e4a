"""Two versions' blocks aligned, and every difference as added, removed, changed or moved.

Deterministic and local (no server). The block sequences are aligned on their keys (the
text with the layout undone, see blocks.py) by rapidfuzz's Indel opcodes, a bit-parallel
LCS in C++: on two ~1,000,000-character versions with 200 scattered changes it aligns in
a fraction of difflib's time (bench/bench_compare.py; difflib's SequenceMatcher must also
be run without its autojunk heuristic, which treats repeated blocks as junk). What the
alignment leaves unmatched is then read for what a reader means: a removed block whose
exact text is added elsewhere is *moved*; in a run of replaced blocks, an old block and a
new one that share words around an edit are one *changed* block (with the words inserted
and deleted); the rest are *removed* or *added*, consecutive pieces of one paragraph as one.
A replaced run is read word by word, so the same words cut into other sentences (a
heading run into its paragraph by a PDF's text, a Word heading on its own) are no change.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum

from rapidfuzz.distance import Indel

from desktop.compare.blocks import Block, blocks
from desktop.documents.model import Document

# A moved block has at least this many words ("Yes." twice is not a move).
MIN_MOVED_WORDS = 4
# A changed block keeps at least this share of its words (else: removed + added).
MIN_SIMILARITY = 0.5
# A replaced run longer than this (in words) is not read word by word.
MAX_REGION_WORDS = 40_000


class ChangeKind(StrEnum):
    """What happened to a block between the versions."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    MOVED = "moved"


@dataclass(frozen=True)
class Change:
    """One difference: the old block(s) and the new, and the words inserted and deleted."""

    kind: ChangeKind
    old: tuple[Block, ...]
    new: tuple[Block, ...]
    inserted: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @property
    def old_text(self) -> str:
        """The old version's words (empty for an added block)."""
        return " ".join(b.text for b in self.old)

    @property
    def new_text(self) -> str:
        """The new version's words (empty for a removed block)."""
        return " ".join(b.text for b in self.new)

    @property
    def old_anchor(self) -> str:
        """Where it stands in the old version (A), in the citation grammar: ``A p. 4 ¶ 2``."""
        return f"A {self.old[0].anchor}" if self.old else ""

    @property
    def new_anchor(self) -> str:
        """Where it stands in the new version (B): ``B p. 5 ¶ 1``."""
        return f"B {self.new[0].anchor}" if self.new else ""


@dataclass
class Comparison:
    """The two versions' blocks and the changes between them, in reading order."""

    old_blocks: list[Block]
    new_blocks: list[Block]
    changes: list[Change] = field(default_factory=list)


def compare_documents(old: Document, new: Document) -> Comparison:
    """Every change from ``old`` to ``new`` (see the module's docstring)."""
    return compare_blocks(blocks(old), blocks(new))


def compare_blocks(old: list[Block], new: list[Block]) -> Comparison:
    """The changes between two block sequences."""
    ids: dict[str, int] = {}
    a = [ids.setdefault(b.key, len(ids)) for b in old]
    b = [ids.setdefault(x.key, len(ids)) for x in new]
    regions: list[tuple[list[int], list[int]]] = []
    joined = True  # Indel has no "replace": a delete next to an insert is one region
    for op in Indel.opcodes(a, b):
        if op.tag == "equal":
            joined = False
            continue
        src, dest = range(op.src_start, op.src_end), range(op.dest_start, op.dest_end)
        if regions and joined:
            regions[-1][0].extend(src)
            regions[-1][1].extend(dest)
        else:
            regions.append((list(src), list(dest)))
        joined = True
    moved = _moves(old, new, regions)
    changes: list[tuple[int, int, Change]] = []
    for i, j in moved:
        changes.append((j, 0, Change(ChangeKind.MOVED, (old[i],), (new[j],))))
    moved_old = {i for i, _ in moved}
    moved_new = {j for _, j in moved}
    for region_old, region_new in regions:
        olds = [i for i in region_old if i not in moved_old]
        news = [j for j in region_new if j not in moved_new]
        # The same words cut into other sentences (a heading run into its paragraph in
        # one version) are no change.
        if " ".join(old[i].key for i in olds) == " ".join(new[j].key for j in news):
            continue
        changes.extend(_region(old, new, olds, news))
    changes.sort(key=lambda c: (c[0], c[1]))
    return Comparison(old, new, _merge([c for _, _, c in changes]))


def _moves(
    old: list[Block], new: list[Block], regions: list[tuple[list[int], list[int]]]
) -> list[tuple[int, int]]:
    """Unmatched old blocks whose exact text is unmatched in the new version too."""
    added: dict[str, list[int]] = defaultdict(list)
    for _, news in regions:
        for j in news:
            added[new[j].key].append(j)
    pairs = []
    for olds, news in regions:
        inside = set(news)
        for i in olds:
            key = old[i].key
            if len(key.split()) < MIN_MOVED_WORDS:
                continue
            # Replaced in place (same region) is not a move: the text is where it was.
            candidates = [j for j in added.get(key, []) if j not in inside]
            if candidates:
                j = candidates[0]
                added[key].remove(j)
                pairs.append((i, j))
    return pairs


def _region(
    old: list[Block], new: list[Block], olds: list[int], news: list[int]
) -> list[tuple[int, int, Change]]:
    """A replaced run, read word by word (so the same words cut into other sentences are no
    change): each run of words inserted or deleted is a change of the blocks it touches,
    runs in the same blocks one change. Placed by position in the new version (removed
    blocks just before the new block after them), so the list reads in the new order."""
    a = [(i, w) for i in olds for w in old[i].key.split()]
    b = [(j, w) for j in news for w in new[j].key.split()]
    if len(a) + len(b) > MAX_REGION_WORDS:
        # Too different to read word by word (e.g. two unrelated documents): whole blocks.
        return [
            (_at(new, news, olds, old), -1, Change(ChangeKind.REMOVED, (old[i],), ())) for i in olds
        ] + [(j, 0, Change(ChangeKind.ADDED, (), (new[j],))) for j in news]
    matcher = difflib.SequenceMatcher(None, [w for _, w in a], [w for _, w in b], autojunk=False)
    out: list[tuple[int, int, Change]] = []
    touched: tuple[set[int], set[int]] | None = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_ids = {a[k][0] for k in range(i1, i2)}
        new_ids = {b[k][0] for k in range(j1, j2)}
        if not new_ids and not old_ids:
            continue
        if not old_ids and i1 < len(a) and i1 > 0 and a[i1 - 1][0] == a[i1][0]:
            old_ids = {a[i1][0]}  # words inserted inside an old block change it
        if not new_ids and 0 < j1 < len(b) and b[j1 - 1][0] == b[j1][0]:
            new_ids = {b[j1][0]}  # words deleted inside a block that goes on
        inserted = (" ".join(w for _, w in b[j1:j2]),) if j2 > j1 else ()
        deleted = (" ".join(w for _, w in a[i1:i2]),) if i2 > i1 else ()
        if touched is not None and (touched[0] & old_ids or touched[1] & new_ids):
            place, rank, last = out[-1]
            touched[0].update(old_ids)
            touched[1].update(new_ids)
            out[-1] = (
                place,
                rank,
                _change(old, new, touched, last.inserted + inserted, last.deleted + deleted),
            )
            continue
        touched = (set(old_ids), set(new_ids))
        place = (
            min(new_ids) if new_ids else (b[j1][0] if j1 < len(b) else _at(new, news, olds, old))
        )
        out.append((place, 0 if new_ids else -1, _change(old, new, touched, inserted, deleted)))
    return [piece for entry in out for piece in _unrelated(entry)]


def _unrelated(entry: tuple[int, int, Change]) -> list[tuple[int, int, Change]]:
    """A "changed" block that shares few words with its old text: a clause removed next to
    an unrelated one added, so it is reported as the two."""
    place, _, change = entry
    if change.kind is not ChangeKind.CHANGED:
        return [entry]
    a, b = change.old_text.split(), change.new_text.split()
    if difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= MIN_SIMILARITY:
        return [entry]
    return [
        (place, -1, Change(ChangeKind.REMOVED, change.old, ())),
        (place, 0, Change(ChangeKind.ADDED, (), change.new)),
    ]


def _change(
    old: list[Block],
    new: list[Block],
    touched: tuple[set[int], set[int]],
    inserted: tuple[str, ...],
    deleted: tuple[str, ...],
) -> Change:
    olds, news = sorted(touched[0]), sorted(touched[1])
    if olds and news:
        kind = ChangeKind.CHANGED
    else:
        kind = ChangeKind.ADDED if news else ChangeKind.REMOVED
        inserted = deleted = ()  # the whole block: its text says it
    return Change(kind, tuple(old[i] for i in olds), tuple(new[j] for j in news), inserted, deleted)


def _at(new: list[Block], news: list[int], olds: list[int], old: list[Block]) -> int:
    """Where removed blocks sort among the new version's blocks."""
    if news:
        return news[0]
    return round(olds[0] * len(new) / max(len(old), 1)) if olds else 0


def word_changes(old: str, new: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The runs of words inserted in ``new`` and deleted from ``old``, in order."""
    a, b = old.split(), new.split()
    inserted: list[str] = []
    deleted: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            deleted.append(" ".join(a[i1:i2]))
        if tag in ("insert", "replace"):
            inserted.append(" ".join(b[j1:j2]))
    return tuple(inserted), tuple(deleted)


def _merge(changes: list[Change]) -> list[Change]:
    """Consecutive added, removed or moved pieces of one paragraph as one change."""
    out: list[Change] = []
    for change in changes:
        last = out[-1] if out else None
        if last is not None and change.kind is last.kind and _same_paragraph(last, change):
            out[-1] = Change(change.kind, last.old + change.old, last.new + change.new)
            continue
        out.append(change)
    return out


def _same_paragraph(last: Change, change: Change) -> bool:
    """True when ``change`` continues ``last``'s paragraph on every side it has."""
    if change.kind is ChangeKind.CHANGED:
        return False
    sides = [(last.old, change.old), (last.new, change.new)]
    return all(
        bool(a) == bool(b) and (not a or a[-1].paragraph == b[0].paragraph) for a, b in sides
    )
