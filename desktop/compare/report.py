"""The change list as people read it (a redline) and as ``compare --json`` prints it."""

from __future__ import annotations

import difflib
from typing import Any

from desktop.compare.align import Change, ChangeKind, Comparison

_MARK = {
    ChangeKind.ADDED: "+",
    ChangeKind.REMOVED: "-",
    ChangeKind.CHANGED: "~",
    ChangeKind.MOVED: ">",
}
RED, GREEN, DIM, RESET = "\x1b[31m", "\x1b[32m", "\x1b[2m", "\x1b[0m"


def where(change: Change) -> str:
    """Both anchors: ``A p. 4 ¶ 2 → B p. 5 ¶ 1`` (one for an added or removed block)."""
    return " → ".join(a for a in (change.old_anchor, change.new_anchor) if a)


def inline(change: Change, color: bool = False) -> str:
    """A changed block's new text with its deletions and insertions marked in place:
    ``[-old words-]{+new words+}`` (wdiff's marks), or red and green on a terminal."""
    a, b = change.old_text.split(), change.new_text.split()
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.append(" ".join(a[i1:i2]))
            continue
        if i2 > i1:
            words = " ".join(a[i1:i2])
            out.append(f"{RED}[-{words}-]{RESET}" if color else f"[-{words}-]")
        if j2 > j1:
            words = " ".join(b[j1:j2])
            out.append(f"{GREEN}{{+{words}+}}{RESET}" if color else f"{{+{words}+}}")
    return " ".join(out)


def redline(comparison: Comparison, color: bool = False) -> str:
    """Every change, one paragraph each: its kind and anchors, then its text marked."""
    if not comparison.changes:
        return "No changes: the two versions have the same text.\n"
    lines = [f"{len(comparison.changes)} changes:", ""]
    for n, change in enumerate(comparison.changes, 1):
        head = f"{n}. {_MARK[change.kind]} {change.kind.value} {where(change)}"
        lines.append(f"{DIM}{head}{RESET}" if color else head)
        if change.kind is ChangeKind.CHANGED:
            body = inline(change, color)
        elif change.kind is ChangeKind.REMOVED:
            body = change.old_text
            body = f"{RED}[-{body}-]{RESET}" if color else f"[-{body}-]"
        elif change.kind is ChangeKind.ADDED:
            body = change.new_text
            body = f"{GREEN}{{+{body}+}}{RESET}" if color else f"{{+{body}+}}"
        else:
            body = change.new_text
        lines += [f"   {body}", ""]
    return "\n".join(lines)


def change_json(change: Change) -> dict[str, Any]:
    """One change as ``compare --json`` lists it."""
    return {
        "kind": change.kind.value,
        "old_anchor": change.old_anchor or None,
        "new_anchor": change.new_anchor or None,
        "old_text": change.old_text or None,
        "new_text": change.new_text or None,
        "inserted": list(change.inserted),
        "deleted": list(change.deleted),
    }


def change_list(comparison: Comparison, limit: int = 400) -> str:
    """The changes as the explanation's prompt lists them (long texts shortened)."""

    def short(text: str) -> str:
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

    lines = []
    for n, change in enumerate(comparison.changes, 1):
        line = f"{n}. {change.kind.value} {where(change)}"
        if change.kind is ChangeKind.CHANGED:
            parts = []
            if change.deleted:
                parts.append("deleted " + "; ".join(f'"{w}"' for w in change.deleted))
            if change.inserted:
                parts.append("inserted " + "; ".join(f'"{w}"' for w in change.inserted))
            line += ": " + ", ".join(parts) + f' (now: "{short(change.new_text)}")'
        elif change.kind is ChangeKind.REMOVED:
            line += f': "{short(change.old_text)}"'
        else:
            line += f': "{short(change.new_text)}"'
        lines.append(line)
    return "\n".join(lines)
