"""``longdoc server selftest`` against the test server reading all, or only part, of a prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from desktop.selftest import DEPTHS, build_haystack, load_reports, parse_lengths, summary
from tests.conftest import API_KEY
from tests.support.sglang_server import FakeSGLang

ROOT = Path(__file__).resolve().parents[2]


def selftest(home: Path, server: FakeSGLang, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "desktop.cli.main", "server", "selftest", "--json",
         "--endpoint", server.url, "--api-key", API_KEY, *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def test_full_recall_skips_lengths_past_the_context_and_reports_the_cache(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=40_000) as server:
        server.behaviour.update(needle_horizon=1.0)
        done = selftest(home, server, "--lengths", "8k,20k,64k")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_length = {item["length"]: item for item in report["lengths"]}
    assert by_length[8000]["recall_fraction"] == 1.0
    assert by_length[20000]["recall_fraction"] == 1.0
    assert set(by_length[20000]["recall"]) == {"0%", "25%", "50%", "75%", "100%"}
    assert by_length[64000]["status"] == "skipped" and "40,000" in by_length[64000]["detail"]
    assert report["full_recall"] is True
    # The repeated question reused the document from the (emulated) prefix cache.
    assert report["cache_hit_fraction"] > 0.9
    assert by_length[20000]["prompt_tokens"] >= 20_000
    # Stored for the server panel, and nothing entered the user's library.
    assert load_reports(home)[-1]["full_recall"] is True
    assert "full recall" in summary(load_reports(home)[-1])
    assert not (home / "longdoc.db").exists() or "selftest" not in (
        home / "longdoc.db"
    ).read_bytes().decode("latin-1")


def test_a_server_that_misses_late_needles_loses_recall_where_it_should(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as server:
        server.behaviour.update(needle_horizon=0.6)
        done = selftest(home, server, "--lengths", "16k")
    assert done.returncode == 7, done.stderr
    report = json.loads(done.stdout)
    recall = report["lengths"][0]["recall"]
    assert recall["0%"] and recall["25%"] and recall["50%"]
    assert not recall["75%"] and not recall["100%"]
    assert report["full_recall"] is False


def test_bad_lengths_are_a_usage_error(home: Path) -> None:
    with FakeSGLang(api_key=API_KEY) as server:
        done = selftest(home, server, "--lengths", "8k,lots")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("Error: --lengths")


def test_haystack_has_no_repeated_sentence_and_one_needle_per_depth() -> None:
    haystack = build_haystack(12_000, seed=7)
    text = " ".join(page.text for page in haystack.document.pages)
    sentences = [s for s in text.split(". ") if s]
    assert len(sentences) == len(set(sentences))
    assert len(haystack.needles) == len(DEPTHS)
    assert all(code in text for code in haystack.needles.values())
    assert 11_000 <= haystack.document.tokens <= 13_000
    assert parse_lengths("8k, 64K,250000") == [8000, 64000, 250000]
