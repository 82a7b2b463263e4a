"""``longdoc ingest FOLDER``: the documents are written by a second process while the next
file is read; what is printed is what is stored, whatever stops the run."""

from __future__ import annotations

import json
import random
import resource
import signal
import sqlite3
import subprocess
from pathlib import Path

from tests.support.cli import LONGDOC, ROOT, environment, longdoc

WORDS = ("clause", "party", "notice", "term", "fee", "liability", "schedule", "annex")


def _folder(tmp_path: Path, count: int, pages: int = 6) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    rng = random.Random(7)
    for n in range(count):
        text = "\n\n".join(
            " ".join(f"{rng.choice(WORDS)}{rng.randint(0, 99_999)}" for _ in range(700))
            for _ in range(pages)
        )
        (folder / f"d{n:02}.txt").write_text(f"Document {n}\n\n{text}\n")
    return folder


def _stored(home: Path) -> tuple[list[str], int, int]:
    """The stored documents' file names, and the pages they say they have against the pages
    the search index holds (equal when no document was written in part)."""
    with sqlite3.connect(home / "longdoc.db") as conn:
        names = sorted(Path(p).name for (p,) in conn.execute("SELECT path FROM documents"))
        pages = conn.execute("SELECT coalesce(sum(page_count), 0) FROM documents").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM pages_fts_docsize").fetchone()[0]
    return names, pages, indexed


def _printed(stdout: str) -> list[str]:
    return sorted(Path(json.loads(line)["path"]).name for line in stdout.splitlines())


def test_a_folder_is_stored_in_order_and_searchable(tmp_path: Path, home: Path) -> None:
    folder = _folder(tmp_path, 8)
    done = longdoc("ingest", "--json", str(folder), home=home)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["path"] for line in done.stdout.splitlines()] == [
        str(folder / f"d{n:02}.txt") for n in range(8)
    ]
    names, pages, indexed = _stored(home)
    assert len(names) == 8 and pages == indexed > 8
    found = longdoc("search", "--json", "Document 5", home=home)
    assert json.loads(found.stdout)["hits"][0]["path"].endswith("d05.txt")
    again = longdoc("ingest", str(folder), home=home)
    assert again.stdout.count("(already stored)") == 8


def test_a_full_disk_midway_prints_only_what_was_stored(tmp_path: Path, home: Path) -> None:
    """The database may not grow past a size (RLIMIT_FSIZE, as a full disk): the files
    printed are the files stored, then one Error line naming the database, exit 1."""
    folder = _folder(tmp_path, 12)
    assert longdoc("ingest", str(folder / "d00.txt"), home=home).returncode == 0
    size = (home / "longdoc.db").stat().st_size

    def limit() -> None:
        cap = size + 600_000  # room for a few more documents, not for twelve
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    done = subprocess.run(
        [*LONGDOC, "ingest", "--json", str(folder)],
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=ROOT,
        preexec_fn=limit,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert str(home / "longdoc.db") in error
    names, pages, indexed = _stored(home)
    assert _printed(done.stdout) == names
    assert 1 < len(names) < 12
    assert pages == indexed


def test_ctrl_c_midway_prints_only_what_was_stored(tmp_path: Path, home: Path) -> None:
    folder = _folder(tmp_path, 60, pages=12)
    proc = subprocess.Popen(
        [*LONGDOC, "ingest", "--json", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(home),
        cwd=ROOT,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first document is stored
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    names, pages, indexed = _stored(home)
    assert _printed(first + rest) == names[: len(_printed(first + rest))]
    # What the writer had been handed when Ctrl+C came is written whole; nothing is half.
    assert pages == indexed
    assert len(names) < 60
