"""The real ``longdoc`` program: ingest the corpus, ask against the loopback server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop.store.db import Store
from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.sglang_server import FakeSGLang

LONGDOC = Path(sys.executable).parent / "longdoc"
GEOTOPO = CORPUS_DIR / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FOUR_PAGES = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"


def longdoc(
    *args: str, home: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "LONGDOC_HOME": str(home), **(env or {})}
    for var in ("LONGDOC_ENDPOINT", "LONGDOC_MODEL", "LONGDOC_API_KEY"):
        if not env or var not in env:
            environment.pop(var, None)
    return subprocess.run(
        [str(LONGDOC), *args], capture_output=True, text=True, timeout=timeout, env=environment
    )


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
    started = time.monotonic()
    result = longdoc("ingest", "--json", *map(str, pdfs), home=home, timeout=300)
    assert time.monotonic() - started < 120
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
    assert assert_one_error_line(result.stderr) == "Error: /nonexistent/contract.pdf: no such file"


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
    assert set(data) == {
        "document",
        "question",
        "answer",
        "reasoning",
        "from_cache",
        "model",
        "finish_reason",
        "usage",
        "timings",
        "citations",
        "thread_id",
    }
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


def test_server_down_exit_4_at_once(home: Path) -> None:
    started = time.monotonic()
    result = longdoc("ask", str(FOUR_PAGES), "Q?", "--endpoint", "http://127.0.0.1:9", home=home)
    assert result.returncode == 4
    assert "Cannot reach the server at http://127.0.0.1:9" in assert_one_error_line(result.stderr)
    assert time.monotonic() - started < 15


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
    environment = {**os.environ, "LONGDOC_HOME": str(home)}
    proc = subprocess.Popen(
        [
            str(LONGDOC),
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
        env=environment,
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

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
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
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["LONGDOC_HOME"] = str(home)
    result = subprocess.run([str(LONGDOC)], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    assert "no display" in assert_one_error_line(result.stderr)
