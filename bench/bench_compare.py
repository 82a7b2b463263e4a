"""``compare`` benchmark: two ~1,000,000-character versions with 200 scattered changes.

Run as ``.venv/bin/python bench/bench_compare.py`` from the project root. The versions are
generated contracts (tests/support/contracts.py): 50 changed amounts, 50 clauses added,
50 removed, 50 moved, and the new version laid out anew (another line width, words
hyphenated at line ends, other page breaks, page-number footers). Prints:

* the deterministic comparison in-process (blocks of both versions, alignment, changes),
  median of 5, and whether all 200 changes were found, each once with its kind;
* the block alignment alone by rapidfuzz's Indel opcodes against difflib's SequenceMatcher
  (autojunk off: with it, repeated blocks are junk and moves are missed), and the moved
  blocks each finds (the quality measure: a move is a block deleted in one place and
  inserted in another, which both alignments leave for the move detection);
* a whole ``longdoc compare --no-explain --json`` process on the two stored text files.
"""

from __future__ import annotations

import difflib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import ROOT  # first: it puts the project on sys.path
from rapidfuzz.distance import Indel

from desktop.compare.align import ChangeKind, compare_documents
from desktop.compare.blocks import blocks
from tests.support.contracts import contract_pair, document, lay_out

GOAL_S = 1.0
GOAL_PROCESS_S = 3.0


def main() -> int:
    old, new, planted = contract_pair(2200, changes=50)
    a_pages = lay_out(old, 90, 50, hyphenate=False, footer=False)
    b_pages = lay_out(new, 72, 42, hyphenate=True, footer=True)
    a, b = document(a_pages, "old"), document(b_pages, "new")
    print(
        f"versions: {a.chars:,} and {b.chars:,} characters, {len(a.pages)} and {len(b.pages)} pages"
    )

    times = []
    for _ in range(5):
        started = time.perf_counter()
        comparison = compare_documents(a, b)
        times.append(time.perf_counter() - started)
    found = Counter(c.kind for c in comparison.changes)
    expected = {
        ChangeKind.CHANGED: len(planted.changed),
        ChangeKind.ADDED: len(planted.added),
        ChangeKind.REMOVED: len(planted.removed),
        ChangeKind.MOVED: len(planted.moved),
    }
    labels = {
        kind: sorted(
            (c.new_text or c.old_text).split(".", 1)[0]
            for c in comparison.changes
            if c.kind is kind
        )
        for kind in ChangeKind
    }
    exact = (
        labels[ChangeKind.CHANGED] == sorted(str(n) for n in planted.changed)
        and labels[ChangeKind.ADDED] == sorted(planted.added)
        and labels[ChangeKind.REMOVED] == sorted(str(n) for n in planted.removed)
        and labels[ChangeKind.MOVED] == sorted(str(n) for n in planted.moved)
    )
    median = statistics.median(times)
    print(
        f"compare in-process: median {median * 1000:.0f} ms (min {min(times) * 1000:.0f}), "
        f"goal <= {GOAL_S * 1000:.0f} ms; {len(comparison.changes)} changes "
        f"{ {k.value: v for k, v in found.items()} }, all 200 planted found once: "
        f"{exact and found == expected}"
    )

    old_blocks, new_blocks = blocks(a), blocks(b)
    ids: dict[str, int] = {}
    x = [ids.setdefault(k.key, len(ids)) for k in old_blocks]
    y = [ids.setdefault(k.key, len(ids)) for k in new_blocks]
    for name, align in (
        (
            "rapidfuzz Indel",
            lambda: [
                (o.tag, o.src_start, o.src_end, o.dest_start, o.dest_end)
                for o in Indel.opcodes(x, y)
            ],
        ),
        (
            "difflib SequenceMatcher",
            lambda: difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes(),
        ),
        ("difflib, autojunk on", lambda: difflib.SequenceMatcher(None, x, y).get_opcodes()),
    ):
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            ops = align()
            runs.append(time.perf_counter() - started)
        deleted = Counter(
            x[i] for tag, i1, i2, _, _ in ops if tag in ("delete", "replace") for i in range(i1, i2)
        )
        inserted = Counter(
            y[j] for tag, _, _, j1, j2 in ops if tag in ("insert", "replace") for j in range(j1, j2)
        )
        moves = sum((deleted & inserted).values())
        print(
            f"  align {len(x):,} x {len(y):,} blocks, {name}: median "
            f"{statistics.median(runs) * 1000:.1f} ms; blocks left for move detection: {moves}"
        )

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        old_file, new_file = Path(tmp) / "old.txt", Path(tmp) / "new.txt"
        old_file.write_text("\f".join(a_pages), encoding="utf-8")
        new_file.write_text("\f".join(b_pages), encoding="utf-8")
        env = {**os.environ, "LONGDOC_HOME": str(home)}
        command = [
            sys.executable,
            "-m",
            "desktop.cli.main",
            "compare",
            str(old_file),
            str(new_file),
            "--no-explain",
            "--json",
        ]
        subprocess.run(
            [sys.executable, "-m", "desktop.cli.main", "ingest", str(old_file), str(new_file)],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
            runs.append(time.perf_counter() - started)
            assert done.returncode == 0, done.stderr
        import json

        count = len(json.loads(done.stdout)["changes"])
        print(
            f"whole `longdoc compare --no-explain --json` process (documents stored): median "
            f"{statistics.median(runs):.2f} s, goal <= {GOAL_PROCESS_S:.0f} s; {count} changes"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
