"""Longdoc behind the real SGLang router (``sglang-router``): two test-server workers.

The router's ``/v1/models`` has no ``max_model_len`` and ``/server_info`` answers 404, so
Longdoc needs the stated context length; with ``--policy cache_aware`` two questions about
one document go to the same worker, whose prefix cache serves the second.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import API_KEY, CORPUS_DIR
from tests.support.sglang_server import FakeSGLang

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("sglang_router", reason="sglang-router is a test extra")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def router() -> Iterator[tuple[str, list[FakeSGLang]]]:
    """The router on loopback in front of two workers, cache-aware."""
    workers = [FakeSGLang(api_key=API_KEY).start(), FakeSGLang(api_key=API_KEY).start()]
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
         "--port", str(port), "--worker-urls", *(w.url for w in workers),
         "--policy", "cache_aware", "--api-key", API_KEY, "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None:
                    pytest.fail("the router exited at start-up")
                time.sleep(0.1)
        yield url, workers
    finally:
        process.terminate()
        process.wait(timeout=30)
        for worker in workers:
            worker.stop()


def _ask(home: Path, url: str, question: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for var in ("LONGDOC_ENDPOINT", "LONGDOC_MODEL", "LONGDOC_API_KEY", "LONGDOC_CONTEXT_LENGTH"):
        env.pop(var, None)
    pdf = CORPUS_DIR / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
    return subprocess.run(
        [sys.executable, "-m", "desktop.cli.main", "ask", "--json", "--no-think",
         "--endpoint", url, "--api-key", API_KEY, *extra, str(pdf), question],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def test_router_needs_the_stated_context_and_keeps_a_document_on_one_worker(
    home: Path, router: tuple[str, list[FakeSGLang]]
) -> None:
    url, workers = router
    unknown = _ask(home, url, "What is a topological space?")
    assert unknown.returncode != 0
    assert "context" in unknown.stderr and "--context-length" in unknown.stderr
    first = _ask(home, url, "What is a topological space?", "--context-length", "262144")
    assert first.returncode == 0, first.stderr
    second = _ask(home, url, "What is a Hausdorff space?", "--context-length", "262144")
    assert second.returncode == 0, second.stderr
    usage = json.loads(second.stdout)["usage"]
    assert usage["cached_tokens"] / usage["prompt_tokens"] > 0.99
    chats = [sum(r.path.endswith("/chat/completions") for r in w.requests) for w in workers]
    assert sorted(chats) == [0, 2]  # both questions on the worker that holds the document
