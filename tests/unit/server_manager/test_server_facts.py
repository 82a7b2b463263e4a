"""Server facts read once (longdoc_net.endpoint), typed outcomes, and `server status` for
an endpoint Longdoc does not manage."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from longdoc_net.endpoint import (
    Failure,
    Phase,
    api_root,
    classify,
    models_url,
    parse_models,
    refused_context,
    v1_url,
)
from server_manager import engines
from server_manager.engines import ProcessOutcome
from server_manager.runtime import parse_inspect
from server_manager.state import Paths, ServerState, read_state, write_state
from server_manager.supervisor import Outcome
from tests.conftest import API_KEY
from tests.support.cli import longdoc
from tests.support.sglang_server import FakeSGLang


def test_urls_are_normalised_once() -> None:
    for url in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"):
        assert api_root(url) == "http://h:1"
        assert v1_url(url) == "http://h:1/v1"
        assert models_url(url) == "http://h:1/v1/models"


def test_model_lists_of_every_shape() -> None:
    cards = parse_models(
        {
            "data": [
                {"id": "a", "max_model_len": 262144, "owned_by": "vllm", "root": "/m"},
                {"id": "b", "context_length": 4096},
                {"id": "c"},
                {"no": "id"},
            ]
        }
    )
    assert cards is not None
    assert [(c.id, c.max_model_len, c.owned_by) for c in cards] == [
        ("a", 262144, "vllm"),
        ("b", 4096, ""),
        ("c", None, ""),
    ]
    assert parse_models({"detail": "Not Found"}) is None


def test_statuses_mean_one_thing_each() -> None:
    assert classify(0) == Failure.UNREACHABLE
    assert classify(401) == classify(403) == Failure.UNAUTHORIZED
    assert classify(503) == Failure.LOADING
    assert classify(307) == Failure.REDIRECT
    assert classify(404) == Failure.NOT_FOUND
    assert classify(400, "maximum context length is 10 tokens") == Failure.TOO_LONG
    assert classify(500, "boom") == Failure.SERVER


def test_the_limit_an_engines_refusal_names() -> None:
    vllm = (
        "This model's maximum context length is 262144 tokens. However, you requested 64 "
        "output tokens and your prompt contains at least 262081 input tokens"
    )
    assert refused_context(vllm) == 262144  # never the "at least" count
    assert (
        refused_context(
            "The input (9 tokens) is longer than the model's context length (8 tokens)."
        )
        == 8
    )
    assert refused_context("exceeds the maximum allowed length (100 tokens).") == 100
    assert refused_context("something else") is None


def test_an_oom_kill_is_told_apart_and_not_restarted() -> None:
    inspected = parse_inspect(
        json.dumps(
            [
                {
                    "Id": "x",
                    "Name": "/c",
                    "State": {"Status": "exited", "ExitCode": 137, "OOMKilled": True},
                }
            ]
        )
    )[0]
    outcome = ProcessOutcome.of_container(inspected)
    assert (outcome.exit_code, outcome.signal, outcome.oom) == (137, 9, True)
    assert "killed for lack of memory (OOM)" in outcome.describe()
    decision = Outcome.ended(outcome)
    assert not decision.restartable and "not restarted" in decision.reason
    plain = ProcessOutcome.of_container(
        parse_inspect(json.dumps([{"State": {"Status": "exited", "ExitCode": 137}}]))[0]
    )
    assert not plain.oom and Outcome.ended(plain).restartable


def test_a_sigkill_counted_by_the_cgroup_is_an_oom_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "oom_kill_count", lambda: 3)
    assert ProcessOutcome.of_returncode(-signal.SIGKILL, oom_kills_before=2).oom
    assert not ProcessOutcome.of_returncode(-signal.SIGKILL, oom_kills_before=3).oom
    assert not ProcessOutcome.of_returncode(-signal.SIGTERM, oom_kills_before=2).oom
    assert (
        ProcessOutcome.of_returncode(1, None).describe() == "The server process exited with code 1"
    )


def test_states_are_typed_in_the_state_file(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    write_state(paths, ServerState("p", "container", "http://x", "m", state=Phase.RUNTIME_DOWN))
    state = read_state(paths)
    assert state is not None and state.state is Phase.RUNTIME_DOWN
    raw = json.loads(paths.state.read_text())
    raw["state"] = "from-a-newer-longdoc"
    paths.state.write_text(json.dumps(raw))
    state = read_state(paths)
    assert state is not None and state.state is Phase.FAILED


def status_of(tmp_path: Path, endpoint: str) -> subprocess.CompletedProcess[str]:
    env = {"LONGDOC_ENDPOINT": endpoint, "LONGDOC_API_KEY": API_KEY}
    return longdoc("server", "status", "--json", home=tmp_path, env=env)


def test_server_status_reports_the_configured_endpoint(tmp_path: Path) -> None:
    with FakeSGLang(api_key=API_KEY, flavor="vllm") as server:
        ready = status_of(tmp_path, server.url + "/v1")
        assert ready.returncode == 0, ready.stderr
        look = json.loads(ready.stdout)
        assert (look["state"], look["endpoint"]) == ("ready", server.url)
        assert look["model"] == server.model_name
        url = server.url
    gone = status_of(tmp_path, url)
    assert gone.returncode == 4
    assert json.loads(gone.stdout)["state"] == "stopped"
