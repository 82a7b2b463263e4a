"""`longdoc server status` with an endpoint set: it reports that server, as the app does."""

from __future__ import annotations

import json
from pathlib import Path

from longdoc_net.endpoint import Phase
from server_manager.state import Paths, ServerState, write_state
from tests.conftest import API_KEY
from tests.support.cli import longdoc
from tests.support.sglang_server import FakeSGLang


def _managed_state_stopped(home: Path) -> None:
    """A managed server that ran here once and failed: the endpoint must win over it."""
    write_state(
        Paths(home),
        ServerState(
            profile="sglang-rocm",
            kind="container",
            endpoint="http://127.0.0.1:9",
            model="old",
            state=Phase.FAILED,
            error="The old server died.",
        ),
    )


def test_status_reports_the_endpoint_flag(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    _managed_state_stopped(home)
    with FakeSGLang(api_key=API_KEY, context_length=262_144) as server:
        text = longdoc("server", "status", home=home, server=server, api_key=API_KEY)
        assert text.returncode == 0, text.stderr
        assert "State:    ready" in text.stdout
        assert f"Endpoint: {server.url}" in text.stdout
        assert f"Model:    {server.model_name}" in text.stdout
        assert "old server" not in text.stdout
        as_json = longdoc("server", "status", "--json", home=home, server=server, api_key=API_KEY)
        assert as_json.returncode == 0, as_json.stderr
        look = json.loads(as_json.stdout)
        assert (look["state"], look["endpoint"], look["error"]) == ("ready", server.url, None)
        url = server.url
    gone = longdoc("server", "status", "--endpoint", url, home=home)
    assert gone.returncode == 4, gone.stderr
    assert f"Nothing answers at {url}." in gone.stdout


def test_status_with_the_environment_variable_and_a_wrong_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with FakeSGLang(api_key=API_KEY) as server:
        env = {"LONGDOC_ENDPOINT": server.url, "LONGDOC_API_KEY": API_KEY}
        ready = longdoc("server", "status", home=home, env=env)
        assert ready.returncode == 0, ready.stderr
        assert "State:    ready" in ready.stdout
        # A flag wins over the environment, as for every command that asks the server.
        refused = longdoc("server", "status", "--api-key", "wrong", home=home, env=env)
        assert refused.returncode == 4
        assert "refused the API key" in refused.stdout
