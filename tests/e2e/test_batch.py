"""``longdoc summarize`` and ``longdoc review``: concurrent, resumable batches with a report."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from desktop.batch import default_concurrency, report_format, server_concurrency
from desktop.errors import UsageError
from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.cli import longdoc, review_grid
from tests.support.sglang_server import FakeSGLang

ROOT = Path(__file__).resolve().parents[2]
FOUR_PAGES = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
OUTLINE = CORPUS_DIR / "006-pdflatex-outline" / "pdflatex-outline.pdf"
ENCRYPTED = CORPUS_DIR / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"


def run(
    home: Path, server: FakeSGLang, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The real program (this checkout's code) against the test server."""
    return longdoc(*args, home=home, server=server, api_key=API_KEY, timeout=timeout)


def chats(server: FakeSGLang) -> int:
    return sum(r.path.endswith("/chat/completions") for r in server.requests)


def text_docs(folder: Path, count: int, pages: int = 3) -> list[Path]:
    """``count`` small Markdown documents with distinct text."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        body = "\n\n".join(
            f"# Part {p}\n\nDocument {n} part {p}: the fee for service {n * 10 + p} is "
            f"{100 + n + p} EUR, payable within {30 + p} days."
            for p in range(pages)
        )
        path = folder / f"doc-{n:02d}.md"
        path.write_text(body)
        paths.append(path)
    return paths


def test_mixed_folder_reports_failures_and_skips_and_exits_6(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "deal"
    (folder / "annex").mkdir(parents=True)
    shutil.copy(FOUR_PAGES, folder)
    shutil.copy(OUTLINE, folder / "annex")
    shutil.copy(ENCRYPTED, folder)
    (folder / "notes.txt").write_text("The fee is 300 EUR per day.\n")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    out = tmp_path / "report.md"
    done = run(home, sglang, "summarize", str(folder), "--out", str(out))
    assert done.returncode == 6, done.stderr
    report = out.read_text()
    assert report.count("\n## ") == 3 + 2  # three summaries, then Failed and Skipped
    assert (
        "## Failed" in report and "libreoffice-writer-password.pdf`: the PDF is encrypted" in report
    )
    assert "## Skipped" in report and "logo.png`: not a document" in report
    assert "4 pages" in report and "1 page," in report  # "1 page", never "1 pages"
    assert chats(sglang) == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")]  # no temp left


def test_rerun_sends_nothing_for_finished_documents_and_exits_0(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    docs = text_docs(tmp_path / "docs", 5)
    first = run(home, sglang, "summarize", str(docs[0].parent), "--out", str(tmp_path / "a.JSON"))
    assert first.returncode == 0, first.stderr
    data = json.loads((tmp_path / "a.JSON").read_text())  # the suffix's case does not matter
    assert [i["status"] for i in data["items"]] == ["done"] * 5
    asked = chats(sglang)
    assert asked == 5
    again = run(home, sglang, "summarize", str(docs[0].parent), "--out", str(tmp_path / "b.json"))
    assert again.returncode == 0
    assert chats(sglang) == asked
    items = json.loads((tmp_path / "b.json").read_text())["items"]
    assert all(i["from_cache"] for i in items)
    forced = run(home, sglang, "summarize", str(docs[0]), "--force", "--format", "md")
    assert forced.returncode == 0 and chats(sglang) == asked + 1
    assert forced.stdout.startswith("# Summaries")


def test_requests_run_concurrently(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    docs = text_docs(tmp_path / "docs", 8)
    sglang.behaviour.update(token_delay_s=0.01)
    done = run(home, sglang, "summarize", str(docs[0].parent), "--concurrency", "4",
               "--out", str(tmp_path / "r.md"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 2 <= sglang.metrics.peak_running <= 4
    assert "4 at a time" in done.stderr


def test_json_events_and_the_report_must_go_to_a_file(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    docs = text_docs(tmp_path / "docs", 2)
    (tmp_path / "docs" / "data.bin").write_bytes(b"\0\1")
    refused = run(home, sglang, "summarize", str(docs[0].parent), "--json")
    assert refused.returncode == 2 and "--out" in refused.stderr
    done = run(home, sglang, "summarize", str(docs[0].parent), "--json", "--out",
               str(tmp_path / "r.csv"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("started") == 2 and kinds.count("done") == 2
    assert kinds.count("skipped") == 1 and kinds[-1] == "finished"
    assert events[-1]["counts"] == {"done": 2, "skipped": 1}
    assert all("path" in e for e in events[:-1])


def test_review_grid_has_a_cell_per_document_and_question(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    docs = text_docs(tmp_path / "docs", 3)
    questions = "# due diligence\nWhat is the fee?\n\nWhen is payment due?\n"
    rows = review_grid(docs[0].parent, questions, home=home, server=sglang, api_key=API_KEY)
    assert rows[0][-2:] == ["What is the fee?", "When is payment due?"]
    assert len(rows) == 1 + 3
    for row in rows[1:]:
        assert row[2] == "done"
        assert all(cell.strip() for cell in row[-2:])
        assert "Citations:" in row[-1] and "verified" in row[-1]
    assert chats(sglang) == 6


def test_killed_run_resumes_to_a_complete_report_without_duplicates(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    docs = text_docs(tmp_path / "docs", 8)
    sglang.behaviour.update(token_delay_s=0.03)
    env = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "desktop.cli.main", "summarize", str(docs[0].parent), "--json",
         "--concurrency", "2", "--out", str(tmp_path / "r.json"), "--endpoint", sglang.url,
         "--api-key", API_KEY],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    finished = 0
    for line in proc.stdout:
        if json.loads(line)["event"] == "done":
            finished += 1
            if finished == 3:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    assert not (tmp_path / "r.json").exists()
    asked_before = chats(sglang)
    sglang.behaviour.update(token_delay_s=0.0)
    again = run(home, sglang, "summarize", str(docs[0].parent), "--out", str(tmp_path / "r.json"))
    assert again.returncode == 0, again.stderr
    items = json.loads((tmp_path / "r.json").read_text())["items"]
    assert sorted(i["path"] for i in items) == sorted(str(p) for p in docs)
    assert all(i["status"] == "done" for i in items)
    assert sum(i["from_cache"] for i in items) >= 3
    assert chats(sglang) - asked_before <= 5  # nothing finished was asked again
    with sqlite3.connect(home / "longdoc.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        complete = db.execute(
            "SELECT document_sha, COUNT(*) FROM answers WHERE status = 'complete' "
            "GROUP BY document_sha"
        ).fetchall()
    assert len(complete) == 8 and all(n == 1 for _, n in complete)


def test_style_templates_and_bad_styles(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    docs = text_docs(tmp_path / "docs", 1)
    template = tmp_path / "mine.md"
    template.write_text("List every amount in this document with its page.")
    done = run(home, sglang, "summarize", str(docs[0]), "--style", str(template))
    assert done.returncode == 0, done.stderr
    assert "List every amount" in sglang.prompts[-1]
    contract = run(home, sglang, "summarize", str(docs[0]), "--style", "contract")
    assert contract.returncode == 0 and "due-diligence" in sglang.prompts[-1]
    bad = run(home, sglang, "summarize", str(docs[0]), "--style", "limerick")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("Error: --style limerick")


def test_server_down_means_nothing_starts(home: Path, tmp_path: Path) -> None:
    docs = text_docs(tmp_path / "docs", 2)
    url = "http://127.0.0.1:9"  # nothing listens there
    env = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "desktop.cli.main", "summarize", str(docs[0].parent),
         "--endpoint", url, "--api-key", API_KEY],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("Error:")


def test_concurrency_comes_from_the_server() -> None:
    assert server_concurrency({"max_running_requests": 48}) == 48
    info = {"max_running_requests": None, "internal_states": [
        {"effective_max_running_requests_per_dp": 3}, {"effective_max_running_requests_per_dp": 2}
    ]}  # fmt: skip
    assert server_concurrency(info) == 5
    assert default_concurrency({"max_running_requests": 48}) == 8
    assert default_concurrency(info) == 5
    assert default_concurrency({}) == 4


def test_report_format_rules() -> None:
    assert report_format(Path("r.JSON"), None) == "json"
    assert report_format(Path("r.md"), "csv") == "csv"
    assert report_format(None, None) == "md"
    with pytest.raises(UsageError):
        report_format(Path("r.docx"), None)
