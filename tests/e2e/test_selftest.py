"""``longdoc server selftest`` against the test server reading all, or only part, of a prompt."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from desktop.selftest import DEPTHS, build_haystack, load_reports, parse_lengths, summary
from tests.conftest import API_KEY
from tests.support.cli import longdoc
from tests.support.sglang_server import FakeSGLang


def selftest(home: Path, server: FakeSGLang, *args: str) -> subprocess.CompletedProcess[str]:
    return longdoc("server", "selftest", "--json", *args, home=home, server=server, api_key=API_KEY)


def recall(home: Path, context: int, horizon: float, lengths: str) -> tuple[int, Any]:
    """The exit code and report of a selftest at ``lengths`` against a server of this
    context whose model finds the needles in the first ``horizon`` of the prompt."""
    with FakeSGLang(api_key=API_KEY, context_length=context) as server:
        server.behaviour.update(needle_horizon=horizon)
        done = selftest(home, server, "--lengths", lengths)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_full_recall_skips_lengths_past_the_context_and_reports_the_cache(home: Path) -> None:
    code, report = recall(home, 40_000, 1.0, "8k,20k,64k")
    assert code == 0
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
    code, report = recall(home, 262_144, 0.6, "16k")
    assert code == 7
    found = report["lengths"][0]["recall"]
    assert found["0%"] and found["25%"] and found["50%"]
    assert not found["75%"] and not found["100%"]
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
